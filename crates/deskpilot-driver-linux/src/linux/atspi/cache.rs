//! One `org.a11y.atspi.Cache.GetItems` call per application.
//!
//! Owns the bulk read and the decoding of its two reply shapes into [`NodeInfo`]s:
//! the current `a((so)(so)(so)iiassusau)` (object, application, parent, index in
//! parent, child count, interfaces, name, role, description, states) and the legacy
//! `a((so)(so)(so)a(so)assusau)` (children listed instead of index and count). It
//! never walks: an application without a cache answers [`CallError::Unsupported`] and
//! the reader falls back to a bounded walk.
//!
//! Measured here (at-spi2-core 2.46, Xvfb, 2 cores): mousepad 322 objects in ~6 ms;
//! LibreOffice Calc 7.4 with an empty sheet 1,850 objects in 78–134 ms. at-spi2-atk
//! only creates the cache once some client has registered for an event (see
//! [`super::connection::REGISTERED_EVENTS`]); it leaves out the children of
//! `MANAGES_DESCENDANTS` containers, so LibreOffice's grid (2³¹−1 children) is not in
//! the reply and the call is safe.

use std::time::Duration;

use zbus::zvariant::OwnedObjectPath;

use super::connection::{Bus, CallError, iface, obj_from_wire};
use super::handle::ObjRef;
use super::info::{Ifaces, NodeInfo};
use super::state_map::RawStates;

/// Path of the cache object on every application's bus name.
pub const CACHE_PATH: &str = "/org/a11y/atspi/cache";

type WireRef = (String, OwnedObjectPath);

/// One item of the current reply shape.
pub type ItemV2 = (
    WireRef,
    WireRef,
    WireRef,
    i32,
    i32,
    Vec<String>,
    String,
    u32,
    String,
    Vec<u32>,
);

/// One item of the legacy reply shape.
pub type ItemLegacy = (
    WireRef,
    WireRef,
    WireRef,
    Vec<WireRef>,
    Vec<String>,
    String,
    u32,
    String,
    Vec<u32>,
);

fn parent_of(r: WireRef) -> Option<ObjRef> {
    let p = obj_from_wire(r);
    (!p.is_null()).then_some(p)
}

/// Decodes a current-shape item.
pub fn from_v2(item: ItemV2) -> NodeInfo {
    let (object, _app, parent, index, children, ifaces, name, role, description, states) = item;
    NodeInfo {
        obj: obj_from_wire(object),
        parent: parent_of(parent),
        index,
        child_count: children,
        listed_children: None,
        role,
        name,
        description,
        states: RawStates::from_words(&states),
        ifaces: Ifaces::from_names(&ifaces),
    }
}

/// Decodes a legacy-shape item; its children list gives both order and count.
pub fn from_legacy(item: ItemLegacy) -> NodeInfo {
    let (object, _app, parent, children, ifaces, name, role, description, states) = item;
    let children: Vec<ObjRef> = children.into_iter().map(obj_from_wire).collect();
    NodeInfo {
        obj: obj_from_wire(object),
        parent: parent_of(parent),
        index: -1,
        child_count: i32::try_from(children.len()).unwrap_or(i32::MAX),
        listed_children: Some(children),
        role,
        name,
        description,
        states: RawStates::from_words(&states),
        ifaces: Ifaces::from_names(&ifaces),
    }
}

/// Reads every cached object of the application on `app_bus`.
///
/// Errors: [`CallError::Unsupported`] when the application has no cache (or a reply
/// shape this driver does not know); [`CallError::Timeout`] after `timeout`.
pub async fn get_items(
    bus: &Bus,
    app_bus: &str,
    timeout: Duration,
) -> Result<Vec<NodeInfo>, CallError> {
    let target = ObjRef::new(app_bus, CACHE_PATH);
    let msg = bus
        .call_message(timeout, &target, iface::CACHE, "GetItems", &())
        .await?;
    let body = msg.body();
    if let Ok(items) = body.deserialize::<Vec<ItemV2>>() {
        return Ok(items.into_iter().map(from_v2).collect());
    }
    if let Ok(items) = body.deserialize::<Vec<ItemLegacy>>() {
        return Ok(items.into_iter().map(from_legacy).collect());
    }
    Err(CallError::Unsupported {
        target: target.to_string(),
        method: "GetItems".to_string(),
        error_name: format!("unknown reply signature {}", body.signature()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(bus: &str, path: &str) -> WireRef {
        (bus.to_string(), OwnedObjectPath::try_from(path).unwrap())
    }

    #[test]
    fn current_shape_decodes() {
        // The sheet grid of LibreOffice Calc, as GetItems reported it.
        let item: ItemV2 = (
            wire(":1.9", "/org/a11y/atspi/accessible/1477"),
            wire(":1.9", "/org/a11y/atspi/accessible/root"),
            wire(":1.9", "/org/a11y/atspi/accessible/1476"),
            -1,
            -1,
            vec![
                "org.a11y.atspi.Accessible".into(),
                "org.a11y.atspi.Component".into(),
                "org.a11y.atspi.Selection".into(),
                "org.a11y.atspi.Table".into(),
            ],
            "Sheet Sheet1".into(),
            55,
            String::new(),
            vec![0xc24c_1980, 0],
        );
        let n = from_v2(item);
        assert_eq!(n.obj.path, "/org/a11y/atspi/accessible/1477");
        assert_eq!(
            n.parent.as_ref().map(|p| p.path.as_str()),
            Some("/org/a11y/atspi/accessible/1476")
        );
        assert_eq!(n.child_count, -1);
        assert_eq!(n.role, 55);
        assert!(n.states.manages_descendants());
        assert!(n.ifaces.has(Ifaces::TABLE));
        assert!(n.listed_children.is_none());
    }

    #[test]
    fn legacy_shape_lists_children_and_null_parent_is_none() {
        let item: ItemLegacy = (
            wire(":1.3", "/org/a11y/atspi/accessible/5"),
            wire(":1.3", "/org/a11y/atspi/accessible/root"),
            wire(":1.3", "/org/a11y/atspi/null"),
            vec![
                wire(":1.3", "/org/a11y/atspi/accessible/7"),
                wire(":1.3", "/org/a11y/atspi/accessible/6"),
            ],
            vec!["org.a11y.atspi.Action".into()],
            "OK".into(),
            43,
            "confirm".into(),
            vec![0, 0],
        );
        let n = from_legacy(item);
        assert_eq!(n.parent, None);
        assert_eq!(n.child_count, 2);
        let kids = n.listed_children.unwrap();
        assert_eq!(kids[0].path, "/org/a11y/atspi/accessible/7");
        assert_eq!(n.description, "confirm");
        assert!(n.ifaces.has(Ifaces::ACTION));
    }
}

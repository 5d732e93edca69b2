//! Reading through AX: the [`AxSource`] of the walk, window records, the application
//! list, and the digest that settling compares.
//!
//! Owns which AX calls a read makes and in which order; the limits and the tree
//! shape are [`crate::walk`]'s, the role and state rules the pure modules'. Blocking:
//! called on a blocking thread, every call bounded by the application element's
//! messaging timeout. It never acts.

use std::collections::BTreeMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use deskpilot_core::Handle;
use deskpilot_protocol::types::{AppInfo, AppStatus, WindowInfo};

use super::ax::{AxErr, Elem, MESSAGING_TIMEOUT_S, Names, PROBE_TIMEOUT_S};
use crate::geometry::{Display, PointsRect, ScreenWindow, scale_for, to_bounds};
use crate::handle::Registry;
use crate::roles::{map_role_subrole, toplevel_role};
use crate::values::{Attrs, AxValue, READ_ATTRS, READ_ATTRS_EXTRA};
use crate::walk::{AxSource, ReadError};

/// The walk's view of one application through AX.
pub struct Reader<'a> {
    pub reg: &'a mut Registry<Elem>,
    pub names: &'a Names,
    pub pid: i32,
}

/// The names of one batched element read: [`READ_ATTRS`] then [`READ_ATTRS_EXTRA`].
pub fn element_names() -> Names {
    let all: Vec<&str> = READ_ATTRS
        .iter()
        .chain(READ_ATTRS_EXTRA.iter())
        .copied()
        .collect();
    Names::new(&all)
}

impl AxSource for Reader<'_> {
    type Elem = Elem;

    fn attrs(&mut self, e: &Elem) -> Result<Attrs, ReadError> {
        let values = e
            .multiple(self.names)
            .map_err(|x| x.to_read("AXUIElementCopyMultipleAttributeValues"))?;
        Ok(Attrs::from_values(&values))
    }

    fn child_count(&mut self, e: &Elem) -> Result<u64, ReadError> {
        e.count("AXChildren")
            .map_err(|x| x.to_read("AXUIElementGetAttributeValueCount(AXChildren)"))
    }

    fn children(&mut self, e: &Elem, start: u64, max: u64) -> Result<Vec<Elem>, ReadError> {
        e.range("AXChildren", start, max)
            .map_err(|x| x.to_read("AXUIElementCopyAttributeValues(AXChildren)"))
    }

    fn actions(&mut self, e: &Elem) -> Result<Vec<String>, ReadError> {
        e.actions()
            .map_err(|x| x.to_read("AXUIElementCopyActionNames"))
    }

    fn handle(&mut self, e: &Elem) -> Handle {
        self.reg.intern(e.clone(), self.pid).to_handle()
    }
}

/// What a window record needs to know of its application.
pub struct AppFacts {
    pub name: String,
    pub pid: i32,
    pub frontmost: bool,
    pub focused_window: Option<Elem>,
}

/// The window record of `win` (reads its attributes in one batched call).
pub fn window_record(
    reg: &mut Registry<Elem>,
    win: &Elem,
    app: &AppFacts,
    displays: &[Display],
) -> Result<WindowInfo, AxErr> {
    let names = Names::new(&[
        "AXRole",
        "AXSubrole",
        "AXTitle",
        "AXPosition",
        "AXSize",
        "AXMain",
        "AXMinimized",
    ]);
    let v = win.multiple(&names)?;
    let text = |i: usize| {
        v.get(i)
            .cloned()
            .flatten()
            .and_then(|x| x.as_text().map(str::to_owned))
    };
    let frame = match (v.get(3).cloned().flatten(), v.get(4).cloned().flatten()) {
        (Some(AxValue::Point { x, y }), Some(AxValue::Size { width, height })) => {
            Some(PointsRect::new(x, y, width, height))
        }
        _ => None,
    };
    let main = v.get(5).cloned().flatten().and_then(|x| x.as_bool()) == Some(true);
    let role = toplevel_role(map_role_subrole(
        &text(0).unwrap_or_default(),
        text(1).as_deref(),
    ));
    let focused = app.focused_window.as_ref() == Some(win);
    let scale = frame.as_ref().map_or(1.0, |f| scale_for(f, displays));
    Ok(WindowInfo {
        handle: reg.intern(win.clone(), app.pid).to_handle(),
        app: app.name.clone(),
        pid: u32::try_from(app.pid).ok(),
        title: text(2).unwrap_or_default(),
        role,
        active: app.frontmost && (focused || (app.focused_window.is_none() && main)),
        bounds: frame
            .as_ref()
            .map(|f| to_bounds(f, 1.0))
            .filter(|b| !b.is_empty()),
        device_bounds: frame
            .as_ref()
            .map(|f| to_bounds(f, scale))
            .filter(|b| !b.is_empty()),
        toolkit_scale: frame.map(|_| scale),
        no_tree: false,
        covered_by: Vec::new(),
        hidden: None,
    })
}

/// The facts of application `pid` named `name`, read through `app`.
pub fn app_facts(app: &Elem, pid: i32, name: &str) -> Result<AppFacts, AxErr> {
    let title = app
        .value("AXTitle")?
        .and_then(|v| v.as_text().map(str::to_owned));
    let frontmost = app.value("AXFrontmost")?.and_then(|v| v.as_bool()) == Some(true);
    let focused_window = app.element("AXFocusedWindow")?;
    Ok(AppFacts {
        name: title
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| name.to_owned()),
        pid,
        frontmost,
        focused_window,
    })
}

/// Every application owning an on-screen application window (layer 0), with its
/// windows (`AXWindows`). An application that does not answer its first probe within
/// [`PROBE_TIMEOUT_S`] is listed `not_responding` with no windows; one that shows
/// windows but lists none through AX is `accessibility_disabled`.
pub fn list_apps(
    reg: &mut Registry<Elem>,
    screen: &[ScreenWindow],
    displays: &[Display],
) -> Vec<AppInfo> {
    let mut owners: BTreeMap<i32, String> = BTreeMap::new();
    for w in screen.iter().filter(|w| w.layer == 0) {
        owners.entry(w.pid).or_insert_with(|| w.owner.clone());
    }
    let mut out = Vec::new();
    for (pid, owner) in owners {
        let app = Elem::application(pid, PROBE_TIMEOUT_S);
        let probe = app_facts(&app, pid, &owner);
        let handle = reg.intern(app.clone(), pid).to_handle();
        let mut info = AppInfo {
            handle,
            name: owner.clone(),
            pid: u32::try_from(pid).ok(),
            uid: None,
            exe: None,
            pty_master: None,
            toolkit: None,
            status: AppStatus::Ok,
            windows: Vec::new(),
        };
        let facts = match probe {
            Ok(f) => f,
            Err(e) if e.is_not_responding() => {
                info.status = AppStatus::NotResponding;
                out.push(info);
                continue;
            }
            Err(e) => {
                tracing::debug!(pid, error = e.0, "application unreadable through AX");
                info.status = AppStatus::AccessibilityDisabled;
                out.push(info);
                continue;
            }
        };
        app.set_timeout(MESSAGING_TIMEOUT_S);
        info.name = facts.name.clone();
        match app.elements("AXWindows") {
            Ok(wins) => {
                for w in wins {
                    match window_record(reg, &w, &facts, displays) {
                        Ok(r) => info.windows.push(r),
                        Err(e) if e.is_gone() => {}
                        Err(e) if e.is_not_responding() => {
                            info.status = AppStatus::NotResponding;
                            break;
                        }
                        Err(e) => tracing::debug!(pid, error = e.0, "window unreadable"),
                    }
                }
            }
            Err(e) if e.is_not_responding() => info.status = AppStatus::NotResponding,
            Err(e) => tracing::debug!(pid, error = e.0, "AXWindows unreadable"),
        }
        if info.status == AppStatus::Ok && info.windows.is_empty() {
            info.status = AppStatus::AccessibilityDisabled;
        }
        out.push(info);
    }
    out
}

/// A digest of what an action may change in a window: its title, the focused
/// element, the target's value, selection and expansion, and the window's child
/// count. `None` when the window cannot be read (gone, not answering).
pub fn digest(app: &Elem, window: &Elem, target: &Elem) -> Option<u64> {
    let mut h = DefaultHasher::new();
    let title = window.value("AXTitle").ok()?;
    format!("{title:?}").hash(&mut h);
    window.count("AXChildren").ok()?.hash(&mut h);
    if let Ok(Some(f)) = app.element("AXFocusedUIElement") {
        f.hash(&mut h);
    }
    for attr in [
        "AXValue",
        "AXSelected",
        "AXExpanded",
        "AXDisclosing",
        "AXTitle",
    ] {
        format!("{:?}", target.value(attr).ok().flatten()).hash(&mut h);
    }
    Some(h.finish())
}

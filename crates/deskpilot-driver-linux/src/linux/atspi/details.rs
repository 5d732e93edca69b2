//! Details of the nodes that will likely be rendered: extents, text, values, actions.
//!
//! Owns [`plan`] (pure: which details a node needs) and [`read_details`] (the calls,
//! at most `concurrency` in flight). Only nodes on screen are read, and of those only
//! what the render or `act` can use: extents for every on-screen node with
//! `Component` (pruning needs them), action names where `Action` exists, the head of
//! the text of editable, unnamed or cell text, the numeric value where there is no
//! text, and `AccessibleId` for interactive nodes. It never reads hidden nodes and
//! never reads more than the text cap of any text.

use deskpilot_core::{Bounds, Role};
use futures_util::future::join_all;
use futures_util::{StreamExt, stream};

use super::connection::{Bus, CallError, iface, obj_from_wire};
use super::handle::ObjRef;
use super::info::{Ifaces, NodeInfo};
use super::role_map::{code, map_role_code};
use super::tree::{Details, Parts};
use deskpilot_protocol::Result;

/// Which details one node needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    pub extents: bool,
    pub text: bool,
    pub number: bool,
    pub actions: bool,
    pub automation_id: bool,
    /// The name of the label that labels an unnamed form field (AT-SPI relation
    /// `LABELLED_BY`), shown as the field's name.
    pub label: bool,
    /// `Value.MinimumValue`/`MaximumValue` of a range control.
    pub range: bool,
    /// The selected item of a combo box's popup (its first child's `Selection`),
    /// the choice a web `<select>` shows but does not say in its name or text.
    pub choice: bool,
}

impl Needs {
    #[cfg(test)]
    /// True when at least one detail is needed.
    pub fn any(&self) -> bool {
        self.extents
            || self.text
            || self.number
            || self.actions
            || self.automation_id
            || self.label
            || self.range
            || self.choice
    }
}

/// AT-SPI `RelationType::LabelledBy` (`ATSPI_RELATION_LABELLED_BY`).
const RELATION_LABELLED_BY: u32 = 2;

/// Decides which details to read for a node (pure). The walk root is always read.
pub fn plan(info: &NodeInfo, is_root: bool) -> Needs {
    if !is_root && !info.states.on_screen() {
        return Needs::default();
    }
    needs(info)
}

/// The details a search needs of a node that is not on screen (pure): what its
/// text is — its text, number and label — and nothing about acting on it.
pub fn plan_hidden(info: &NodeInfo) -> Needs {
    let n = needs(info);
    Needs {
        text: n.text,
        number: n.number,
        label: n.label,
        ..Needs::default()
    }
}

fn needs(info: &NodeInfo) -> Needs {
    let role = map_role_code(info.role);
    let editable = info.states.has(atspi::State::Editable);
    let text_worthy = editable || info.name.trim().is_empty() || info.role == code::TABLE_CELL;
    let text = info.ifaces.has(Ifaces::TEXT) && text_worthy;
    let number = info.ifaces.has(Ifaces::VALUE)
        && (!text
            || matches!(
                role,
                Role::Slider | Role::Spinbutton | Role::Progressbar | Role::Scrollbar
            ));
    Needs {
        extents: info.ifaces.has(Ifaces::COMPONENT),
        text,
        number,
        actions: info.ifaces.has(Ifaces::ACTION),
        automation_id: role.is_interactive(),
        range: info.ifaces.has(Ifaces::VALUE)
            && matches!(
                role,
                Role::Slider | Role::Spinbutton | Role::Progressbar | Role::Scrollbar
            ),
        label: info.name.trim().is_empty()
            && matches!(
                role,
                Role::Textbox | Role::Combobox | Role::Spinbutton | Role::Slider
            ),
        choice: role == Role::Combobox && !editable && info.child_count > 0,
    }
}

/// The name of the first labelling object of `obj` (`Accessible.GetRelationSet`,
/// relation `LABELLED_BY`) that has one, trimmed, without a trailing colon
/// (`"Name:"` → `"Name"`). `None` when nothing labels it.
async fn labelled_by(bus: &Bus, obj: &ObjRef) -> Result<Option<String>, CallError> {
    use zbus::zvariant::OwnedObjectPath;
    let relations: Vec<(u32, Vec<(String, OwnedObjectPath)>)> = bus
        .call(obj, iface::ACCESSIBLE, "GetRelationSet", &())
        .await?;
    for (kind, targets) in relations {
        if kind != RELATION_LABELLED_BY {
            continue;
        }
        for (name, path) in targets {
            let target = ObjRef::new(name, path.as_str());
            let Ok(label) = bus.prop::<String>(&target, iface::ACCESSIBLE, "Name").await else {
                continue;
            };
            let label = label.trim().trim_end_matches(':').trim_end();
            if !label.is_empty() {
                return Ok(Some(label.to_owned()));
            }
        }
    }
    Ok(None)
}

/// One detail read.
enum Piece {
    Bounds(Bounds),
    Text(String, Option<u64>),
    Number(f64),
    Actions(Vec<String>),
    Id(String),
    Label(String),
    Range(f64, f64),
    Choice(String),
}

/// The name of the selected item of `combo`'s popup: `Selection.GetSelectedChild(0)`
/// of its first child (Chromium's `<select>` keeps its options in a menu child),
/// trimmed. `None` when the child selects nothing or has no `Selection`.
async fn chosen_item(bus: &Bus, combo: &ObjRef) -> Result<Option<String>, CallError> {
    type Wire = (String, zbus::zvariant::OwnedObjectPath);
    // Only a timeout is an error: anything else about the popup or its item (gone,
    // unsupported) is no choice, never a sign that the combo box itself is gone.
    let popup = match bus
        .call::<_, Wire>(combo, iface::ACCESSIBLE, "GetChildAtIndex", &(0i32,))
        .await
    {
        Ok(w) => obj_from_wire(w),
        Err(e) if e.is_timeout() => return Err(e),
        Err(_) => return Ok(None),
    };
    if popup.is_null() {
        return Ok(None);
    }
    let item = match bus
        .call::<_, Wire>(&popup, iface::SELECTION, "GetSelectedChild", &(0i32,))
        .await
    {
        Ok(w) => obj_from_wire(w),
        Err(e) if e.is_timeout() => return Err(e),
        Err(_) => return Ok(None),
    };
    if item.is_null() {
        return Ok(None);
    }
    let name: String = match bus.prop(&item, iface::ACCESSIBLE, "Name").await {
        Ok(n) => n,
        Err(e) if e.is_timeout() => return Err(e),
        Err(_) => return Ok(None),
    };
    Ok(Some(name.trim().to_owned()).filter(|n| !n.is_empty()))
}

/// `Component.GetExtents` in screen coordinates (coordinate type 0).
pub async fn extents(bus: &Bus, obj: &ObjRef) -> Result<Bounds, CallError> {
    let (x, y, w, h) = raw_extents(bus, obj).await?;
    Ok(Bounds::new(x, y, w.max(0), h.max(0)))
}

/// `Component.GetExtents` as `(x, y, width, height)` in screen pixels, unclamped.
async fn raw_extents(bus: &Bus, obj: &ObjRef) -> Result<(i32, i32, i32, i32), CallError> {
    bus.call(obj, iface::COMPONENT, "GetExtents", &(0u32,))
        .await
}

/// Extents of a node to be rendered; `None` when the toolkit says it has none.
///
/// ATK answers `(-1, -1, -1, -1)` for an object without geometry of its own: GTK 3's
/// notebook page tab when the tab strip is hidden (mousepad with one document) is
/// `SHOWING` and `VISIBLE` yet reports exactly that, while the page under it (the
/// editor) has real extents. Clamped to a zero-size box it would be pruned with its
/// whole subtree, so a negative width or height reads as "no bounds" instead.
fn known_extents((x, y, w, h): (i32, i32, i32, i32)) -> Option<Bounds> {
    (w >= 0 && h >= 0).then(|| Bounds::new(x, y, w, h))
}

/// The first `cap` characters of a text and its total length in characters (the
/// length only when larger than what was read).
pub async fn text_head(
    bus: &Bus,
    obj: &ObjRef,
    cap: usize,
) -> Result<(String, Option<u64>), CallError> {
    let count: i32 = bus.prop(obj, iface::TEXT, "CharacterCount").await?;
    if count <= 0 {
        return Ok((String::new(), None));
    }
    let end = count.min(i32::try_from(cap).unwrap_or(i32::MAX));
    let text: String = bus.call(obj, iface::TEXT, "GetText", &(0i32, end)).await?;
    let total = u64::try_from(count).unwrap_or(0);
    let read = text.chars().count() as u64;
    Ok((text, (total > read).then_some(total)))
}

/// Action names, in index order: field 0 of each `(sss)` of `Action.GetActions`,
/// and `Action.GetName(i)` for every entry where that field is empty.
///
/// at-spi2-atk fills field 0 from the toolkit's *localised* action name. GTK gives
/// both; Chromium gives no localised names, so its whole list arrives as empty
/// strings (measured, Chromium 156: `GetActions` → `[("","",""), ("","","")]`,
/// `GetName(0)` → `"press"`, `GetName(1)` → `"showContextMenu"`). Without the
/// second call no Chromium action could be chosen by name. Apps that name their
/// actions cost no extra call.
pub async fn action_names(bus: &Bus, obj: &ObjRef) -> Result<Vec<String>, CallError> {
    let v: Vec<(String, String, String)> = bus.call(obj, iface::ACTION, "GetActions", &()).await?;
    let mut names: Vec<String> = v.into_iter().map(|(n, _, _)| n).collect();
    let unnamed: Vec<usize> = (0..names.len()).filter(|&i| names[i].is_empty()).collect();
    let read = join_all(unnamed.iter().map(|&i| async move {
        let index = i32::try_from(i).unwrap_or(i32::MAX);
        bus.call::<_, String>(obj, iface::ACTION, "GetName", &(index,))
            .await
    }))
    .await;
    for (i, r) in unnamed.into_iter().zip(read) {
        match r {
            Ok(n) => names[i] = n,
            Err(e) if e.is_timeout() || e.is_gone() => return Err(e),
            Err(e) => tracing::debug!(%obj, index = i, error = %e, "action name unread"),
        }
    }
    Ok(names)
}

async fn read_piece(
    bus: &Bus,
    obj: &ObjRef,
    which: u8,
    text_cap: usize,
) -> Result<Option<Piece>, CallError> {
    Ok(Some(match which {
        0 => match known_extents(raw_extents(bus, obj).await?) {
            Some(b) => Piece::Bounds(b),
            None => return Ok(None),
        },
        1 => {
            let (t, len) = text_head(bus, obj, text_cap).await?;
            Piece::Text(t, len)
        }
        2 => Piece::Number(bus.prop::<f64>(obj, iface::VALUE, "CurrentValue").await?),
        3 => Piece::Actions(action_names(bus, obj).await?),
        6 => {
            let (min, max) = tokio::try_join!(
                bus.prop::<f64>(obj, iface::VALUE, "MinimumValue"),
                bus.prop::<f64>(obj, iface::VALUE, "MaximumValue"),
            )?;
            Piece::Range(min, max)
        }
        7 => match chosen_item(bus, obj).await? {
            Some(name) => Piece::Choice(name),
            None => return Ok(None),
        },
        5 => match labelled_by(bus, obj).await? {
            Some(name) => Piece::Label(name),
            None => return Ok(None),
        },
        _ => {
            let id: String = bus.prop(obj, iface::ACCESSIBLE, "AccessibleId").await?;
            if id.is_empty() {
                return Ok(None);
            }
            Piece::Id(id)
        }
    }))
}

/// Reads the details of every node in `parts` that [`plan`] selects, into
/// `parts.details`. Objects that vanish are added to `parts.vanished`; a call that
/// is not supported leaves that detail empty.
///
/// Errors: `COMPUTER_NOT_RESPONDING` when a call times out.
pub async fn read_details(
    bus: &Bus,
    parts: &mut Parts,
    root: &ObjRef,
    concurrency: usize,
    text_cap: usize,
    hidden: bool,
) -> Result<()> {
    let mut jobs: Vec<(ObjRef, u8)> = Vec::new();
    for (obj, info) in &parts.infos {
        let n = if hidden && obj != root && !info.states.on_screen() {
            plan_hidden(info)
        } else {
            plan(info, obj == root)
        };
        for (flag, which) in [
            (n.extents, 0u8),
            (n.text, 1),
            (n.number, 2),
            (n.actions, 3),
            (n.automation_id, 4),
            (n.label, 5),
            (n.range, 6),
            (n.choice, 7),
        ] {
            if flag {
                jobs.push((obj.clone(), which));
            }
        }
    }
    let results: Vec<(ObjRef, Result<Option<Piece>, CallError>)> = stream::iter(jobs)
        .map(|(o, which)| async move {
            let r = read_piece(bus, &o, which, text_cap).await;
            (o, r)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for (o, r) in results {
        match r {
            Ok(Some(piece)) => {
                let d: &mut Details = parts.details.entry(o).or_default();
                match piece {
                    Piece::Bounds(b) => d.bounds = Some(b),
                    Piece::Text(t, len) => {
                        d.text = Some(t);
                        d.text_length = len;
                    }
                    Piece::Number(v) => d.number = Some(v),
                    Piece::Actions(a) => d.actions = a,
                    Piece::Id(id) => d.automation_id = Some(id),
                    Piece::Label(name) => d.label = Some(name),
                    Piece::Range(min, max) => d.range = Some((min, max)),
                    Piece::Choice(name) => d.choice = Some(name),
                }
            }
            Ok(None) => {}
            Err(e) if e.is_timeout() => return Err(e.to_driver()),
            Err(e) if e.is_gone() => {
                tracing::debug!(obj = %o, "vanished while reading details");
                parts.vanished.insert(o);
            }
            Err(e) => tracing::debug!(obj = %o, error = %e, "detail not read"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::atspi::state_map::RawStates;
    use atspi::State as S;

    const SHOWN: u64 = S::Showing as u64 | S::Visible as u64;

    fn info(role: u32, name: &str, states: u64, ifaces: &[&str]) -> NodeInfo {
        NodeInfo {
            obj: ObjRef::new(":1.1", "/org/a11y/atspi/accessible/1"),
            parent: None,
            index: -1,
            child_count: 0,
            listed_children: None,
            role,
            name: name.into(),
            description: String::new(),
            states: RawStates(states),
            ifaces: Ifaces::from_names(ifaces.iter().map(|s| format!("org.a11y.atspi.{s}"))),
        }
    }

    #[test]
    fn negative_extents_mean_no_bounds() {
        assert_eq!(known_extents((-1, -1, -1, -1)), None);
        assert_eq!(known_extents((10, 20, -1, 5)), None);
        assert_eq!(
            known_extents((320, 218, 640, 427)),
            Some(Bounds::new(320, 218, 640, 427))
        );
        assert_eq!(
            known_extents((-5, 0, 0, 0)),
            Some(Bounds::new(-5, 0, 0, 0)),
            "a real zero-size box stays one (pruned as zero-size)"
        );
    }

    #[test]
    fn hidden_nodes_need_nothing_but_the_root_is_always_read() {
        let hidden = info(43, "OK", S::Visible as u64, &["Component", "Action"]);
        assert!(!plan(&hidden, false).any());
        // A search reads the text of an off-screen list item, and nothing else.
        assert!(!plan_hidden(&hidden).any());
        let item = info(56, "", S::Visible as u64, &["Component", "Action", "Text"]);
        let n = plan_hidden(&item);
        assert!(n.text && !n.extents && !n.actions, "{n:?}");
        assert!(plan(&hidden, true).extents);
    }

    #[test]
    fn editable_text_reads_text_and_sliders_read_numbers() {
        let textbox = info(
            61,
            "",
            SHOWN | S::Editable as u64,
            &["Component", "Text", "EditableText"],
        );
        let n = plan(&textbox, false);
        assert!(n.text && n.extents && !n.number && n.automation_id);

        let slider = info(51, "Volume", SHOWN, &["Component", "Value"]);
        let n = plan(&slider, false);
        assert!(n.number && !n.text);

        // A LibreOffice cell: named "A1", text and value; the text wins.
        let cell = info(
            code::TABLE_CELL,
            "A1",
            SHOWN,
            &["Component", "Text", "Value"],
        );
        let n = plan(&cell, false);
        assert!(n.text && !n.number);

        // A named label: its name is its text, no text call.
        let label = info(29, "Ready", SHOWN, &["Component", "Text"]);
        let n = plan(&label, false);
        assert!(!n.text && !n.automation_id && n.extents);

        let button = info(43, "OK", SHOWN, &["Component", "Action"]);
        assert!(plan(&button, false).actions);
    }
}

//! `node.act`: one operation on one element, semantic first.
//!
//! Owns [`choose`] (pure: which AT-SPI method serves an [`Op`] on an element with
//! these interfaces, states and actions) and [`perform`] (the call, under the
//! timeout, and its [`ActStatus`]). Semantic paths, in order: `Action.DoAction` by
//! preferred name, `EditableText`, `Value`, the parent's `Selection`,
//! `Component.GrabFocus` / `ScrollTo`. A method that returns `false` is `rejected`; one
//! that does not answer is `timed_out` and is never retried (the caller decides).
//! When no semantic path exists the answer is `COMPUTER_ELEMENT_NOT_ACTIONABLE` naming
//! the keyboard or pointer fallback; only `type` and `set_value` fall back to the
//! keyboard here, and only into a focusable element of a window that already has focus
//! (see [`super::focus`]).

use std::time::{Duration, Instant};

use deskpilot_core::{Op, Role};
use deskpilot_protocol::types::{ActResult, ActStatus, Channel};
use deskpilot_protocol::{ComputerError, ErrorCode};
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::connection::{Bus, CallError, iface, obj_from_wire};
use super::details::action_names;
use super::handle::ObjRef;
use super::info::Ifaces;
use super::role_map::{code, map_role_code};
use super::state_map::RawStates;
use deskpilot_protocol::Result;

mod insert;

/// Action names a click prefers, in order (GTK: `click`; GTK 3 buttons also `press`,
/// `activate`; links `jump`; LibreOffice and Qt `press`/`click`).
pub const CLICK: [&str; 5] = ["click", "press", "activate", "jump", "open"];
/// Action names a toggle prefers. Chromium names a check box's action after what it
/// will do: `check` when unchecked, `uncheck` when checked.
pub const TOGGLE: [&str; 6] = ["toggle", "click", "press", "activate", "check", "uncheck"];
/// Action names that open an expandable element (GTK tree rows: `expand or contract`;
/// combo boxes: `press`).
pub const EXPAND: [&str; 5] = ["expand", "expand or contract", "open", "press", "click"];
/// Action names that close one.
pub const COLLAPSE: [&str; 5] = ["collapse", "expand or contract", "close", "press", "click"];
/// Action names a select falls back to when the parent has no `Selection`.
pub const SELECT: [&str; 4] = ["select", "click", "press", "activate"];
/// Action names standing for a double click (GTK tree rows activate on double click).
pub const DOUBLE: [&str; 2] = ["activate", "open"];
/// Action names standing for a right click (Chromium: `showContextMenu`, on every
/// element).
pub const MENU: [&str; 5] = ["showmenu", "show menu", "menu", "popup", "showcontextmenu"];

/// What [`choose`] needs to know about an element.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub role: u32,
    pub states: RawStates,
    pub ifaces: Ifaces,
    pub actions: Vec<String>,
    /// The parent implements `Selection` (read for `select` and `click` only).
    pub parent_selects: bool,
}

/// The method chosen for an operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    DoAction {
        index: i32,
        name: String,
    },
    GrabFocus,
    /// A click or double click on a text field: focus it and put the caret at the end
    /// of its text, as a click in it would. A field's own action (`activate`) is
    /// Enter, which submits its dialog or form, so it is never what a click runs.
    FocusField,
    SetText(String),
    InsertText(String),
    SetNumber(f64),
    SelectInParent,
    /// A double click on a row or a list's cell: select its row first (as the first
    /// click of a double click does), then run its `activate` action. GTK's
    /// `activate` on a tree view's cell is the view's `row-activated`, and apps answer
    /// it with their selection (a file chooser's file, zenity's printed row), so the
    /// row must be the selected one before it runs (docs/ARCHITECTURE.md §6
    /// "Acting").
    SelectThenAction {
        index: i32,
        name: String,
    },
    /// A menu item in an open menu: select it in the menu, then press Return.
    ///
    /// GTK 3 runs a menu item's action inside the accessibility call itself, so an
    /// item that opens a modal dialog (Save As…) keeps that call, and with it the
    /// whole app's accessibility, blocked until the dialog closes; the app then
    /// answers no call and the dialog cannot be read. Activated from the keyboard,
    /// the item runs from the toolkit's own event loop and the dialog stays readable.
    MenuKeyboard,
    ScrollIntoView,
    /// Scroll a page up, down, left or right: the `Value` of the scroll bar that
    /// scrolls the element (its own, its parent's or its grandparent's), moved by the
    /// element's visible height or width.
    ScrollBy(Direction),
    /// Already in the asked state: nothing to send.
    Nothing(&'static str),
    /// No semantic path: type through the keyboard into the focused element.
    /// `replace` selects all first.
    Keyboard {
        text: String,
        replace: bool,
    },
}

impl Method {
    /// The change is complete when the call returns: the text, value or nothing
    /// was set through an interface the toolkit applies inside the call (the
    /// signals arrive while it runs; measured on mousepad: every `TextChanged` of
    /// a `SetTextContents` within 1 ms of its return). The settle after it then
    /// waits only for a reaction gap ([`super::settle::REACTION_GAP`]), not for the
    /// app to start reacting: an action (`DoAction`, whose handler GTK 4 runs 250 ms
    /// later), a selection or synthetic input may take that long.
    pub fn applied_in_call(&self) -> bool {
        matches!(
            self,
            Method::SetText(_) | Method::InsertText(_) | Method::SetNumber(_) | Method::Nothing(_)
        )
    }

    /// `(channel, method text)` for the result.
    pub fn describe(&self) -> (Channel, String) {
        match self {
            Method::DoAction { name, .. } => (Channel::Action, format!("DoAction({name:?})")),
            Method::GrabFocus => (Channel::Action, "Component.GrabFocus".into()),
            Method::FocusField => (
                Channel::Action,
                "Component.GrabFocus + Text.SetCaretOffset".into(),
            ),
            Method::SetText(_) => (Channel::Text, "EditableText.SetTextContents".into()),
            Method::InsertText(_) => (Channel::Text, "EditableText.InsertText".into()),
            Method::SetNumber(_) => (Channel::Value, "Value.CurrentValue".into()),
            Method::SelectInParent => (Channel::Action, "Selection.SelectChild".into()),
            Method::SelectThenAction { name, .. } => (
                Channel::Action,
                format!(
                    "row selected (Component.GrabFocus, else Selection.SelectChild), then DoAction({name:?})"
                ),
            ),
            Method::MenuKeyboard => (Channel::Keyboard, "Selection.SelectChild + Return".into()),
            Method::ScrollIntoView => (Channel::Action, "Component.ScrollTo".into()),
            Method::ScrollBy(d) => (
                Channel::Value,
                format!(
                    "scroll bar Value.CurrentValue, else its page action ({})",
                    d.as_str()
                ),
            ),
            Method::Nothing(_) => (Channel::Action, "none".into()),
            Method::Keyboard { replace: true, .. } => (
                Channel::Keyboard,
                "keyboard: ctrl+a, then typed text".into(),
            ),
            Method::Keyboard { .. } => (Channel::Keyboard, "keyboard: typed text".into()),
        }
    }
}

/// The first action whose name matches a preference (case-insensitive), in
/// preference order.
pub fn pick_action(actions: &[String], prefs: &[&str]) -> Option<(i32, String)> {
    prefs.iter().find_map(|p| {
        actions
            .iter()
            .position(|a| a.eq_ignore_ascii_case(p))
            .map(|i| (i as i32, actions[i].clone()))
    })
}

/// An action that only moves keyboard focus to the element (Qt's `SetFocus`, ATK's
/// `grab focus`): never taken for a click.
fn is_focus_action(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    matches!(n.as_str(), "setfocus" | "focus" | "grabfocus")
}

fn not_actionable(op: Op, why: &str, fallback: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotActionable,
        format!("{op} has no accessibility method on this element: {why}. Fallback: {fallback}"),
    )
    .with_detail(serde_json::json!({ "op": op.as_str(), "fallback": fallback }))
}

fn need_value(op: Op, value: Option<&str>) -> Result<&str> {
    value.ok_or_else(|| {
        ComputerError::new(ErrorCode::InvalidArgument, format!("{op} needs a value"))
    })
}

const KEYS_FALLBACK: &str = "input.keys into the focused window (the element must be focusable)";
const POINTER_FALLBACK: &str = "input.pointer at the element's bounds (moves the user's pointer)";

fn by_action(facts: &Facts, op: Op, prefs: &[&str], fallback: &str) -> Result<Method> {
    match pick_action(&facts.actions, prefs) {
        Some((index, name)) => Ok(Method::DoAction { index, name }),
        None => Err(not_actionable(
            op,
            &format!(
                "none of its actions ({}) is one of {}",
                if facts.actions.is_empty() {
                    "none".to_string()
                } else {
                    facts.actions.join(", ")
                },
                prefs.join("/")
            ),
            fallback,
        )),
    }
}

fn keyboard_or(facts: &Facts, op: Op, text: &str, replace: bool, why: &str) -> Result<Method> {
    if facts.states.has(atspi::State::Focusable) {
        Ok(Method::Keyboard {
            text: text.to_string(),
            replace,
        })
    } else {
        Err(not_actionable(op, why, KEYS_FALLBACK))
    }
}

/// Chooses the method for `op` (pure). Errors: `COMPUTER_INVALID_ARGUMENT` for a
/// missing or malformed value, `COMPUTER_ELEMENT_NOT_ACTIONABLE` when no path
/// exists (naming the fallback), `COMPUTER_PLATFORM_UNSUPPORTED` for Android's
/// navigation keys.
pub fn choose(op: Op, facts: &Facts, value: Option<&str>) -> Result<Method> {
    let role = map_role_code(facts.role);
    let has = |i| facts.ifaces.has(i);
    let expanded = facts.states.has(atspi::State::Expanded);
    let changes_state = !matches!(op, Op::Focus | Op::Scroll);
    if changes_state
        && !facts.states.has(atspi::State::Enabled)
        && !facts.states.has(atspi::State::Sensitive)
    {
        return Err(ComputerError::new(
            ErrorCode::ElementNotActionable,
            format!(
                "cannot {op}: the element is disabled; observe again to see when it becomes enabled"
            ),
        ));
    }
    let togglable = facts.states.has(atspi::State::Checkable)
        || matches!(role, Role::Checkbox | Role::Radio)
        || matches!(
            facts.role,
            code::TOGGLE_BUTTON | code::CHECK_MENU_ITEM | code::RADIO_MENU_ITEM
        )
        || pick_action(&facts.actions, &["toggle", "check", "uncheck"]).is_some();
    let expandable = facts.states.has(atspi::State::Expandable)
        || expanded
        || matches!(role, Role::Combobox | Role::Treeitem)
        || pick_action(
            &facts.actions,
            &["expand", "collapse", "expand or contract"],
        )
        .is_some();
    let selectable = facts.parent_selects
        || facts.states.has(atspi::State::Selectable)
        || pick_action(&facts.actions, &["select"]).is_some();
    let kind_error = |what: &str| {
        Err(ComputerError::new(
            ErrorCode::ElementNotActionable,
            format!("cannot {op}: the element is not {what}; use click for a plain button"),
        ))
    };
    match op {
        Op::Toggle if !togglable => return kind_error("a check box, radio or toggle"),
        Op::Expand | Op::Collapse if !expandable => return kind_error("expandable"),
        Op::Select if !selectable => return kind_error("selectable"),
        _ => {}
    }
    let menu_item = matches!(
        facts.role,
        code::MENU_ITEM | code::CHECK_MENU_ITEM | code::RADIO_MENU_ITEM
    );
    // A text field (an entry, a password field, a spin button's entry, a text
    // area): its `activate` action is Enter.
    let field = (has(Ifaces::EDITABLE_TEXT) || facts.states.has(atspi::State::Editable))
        && (matches!(role, Role::Textbox | Role::Spinbutton | Role::Document)
            || facts.role == code::PASSWORD_TEXT);
    match op {
        Op::Click | Op::DoubleClick if field && has(Ifaces::COMPONENT) => Ok(Method::FocusField),
        Op::Click | Op::DoubleClick if field => Err(not_actionable(
            op,
            "a text field without a Component interface cannot be focused, and its own action would submit it",
            POINTER_FALLBACK,
        )),
        // An option of a web `<select>` popup (Chromium: a menu item whose action is
        // `select`) is chosen by that action; its menu refuses `SelectChild`.
        Op::Click | Op::Select if pick_action(&facts.actions, &["select"]).is_some() => {
            by_action(facts, op, &["select"], POINTER_FALLBACK)
        }
        Op::Click if menu_item && facts.parent_selects && facts.states.on_screen() => {
            Ok(Method::MenuKeyboard)
        }
        // A GTK tree view's cell offers only `activate`, which is the row's double
        // click (`row-activated`), not a click: an app that answers it with its
        // selection (a file chooser's OK) would take the row selected before. A
        // click selects the row and puts the cursor on it, which the cell's
        // `GrabFocus` does (the view sets its cursor on the cell).
        Op::Click
            if facts.role == code::TABLE_CELL
                && selectable
                && has(Ifaces::COMPONENT)
                && pick_action(&facts.actions, &["click", "press"]).is_none()
                && pick_action(&facts.actions, &["activate"]).is_some() =>
        {
            Ok(Method::GrabFocus)
        }
        // Without a click-like action, the first action is the element's default
        // (AT-SPI's convention), unless it is a GTK 4 widget action (`menu.popup`,
        // `clipboard.paste`, `selection.delete`), which does one named thing, or a
        // focus action (Qt's `SetFocus`, the only action of a Qt Quick item that is
        // focusable and handles no press): neither is what a click on it does.
        Op::Click => match pick_action(&facts.actions, &CLICK) {
            Some((index, name)) => Ok(Method::DoAction { index, name }),
            None if facts
                .actions
                .first()
                .is_some_and(|a| !a.contains('.') && !is_focus_action(a)) =>
            {
                Ok(Method::DoAction {
                    index: 0,
                    name: facts.actions[0].clone(),
                })
            }
            None if facts.parent_selects => Ok(Method::SelectInParent),
            None if facts.actions.iter().any(|a| is_focus_action(a)) => Err(not_actionable(
                op,
                "its only action focuses it, which is not a click",
                POINTER_FALLBACK,
            )),
            None => Err(not_actionable(op, "it offers no action", POINTER_FALLBACK)),
        },
        // A row, or a cell of a list or tree (whose action is its row's), that can
        // be selected: selected first, then activated.
        Op::DoubleClick
            if (facts.role == code::TABLE_CELL || facts.states.has(atspi::State::Selectable))
                && (facts.parent_selects || has(Ifaces::COMPONENT)) =>
        {
            match pick_action(&facts.actions, &DOUBLE) {
                Some((index, name)) => Ok(Method::SelectThenAction { index, name }),
                None => by_action(facts, op, &DOUBLE, POINTER_FALLBACK),
            }
        }
        Op::DoubleClick => by_action(facts, op, &DOUBLE, POINTER_FALLBACK),
        Op::RightClick => by_action(facts, op, &MENU, POINTER_FALLBACK),
        Op::Toggle => by_action(facts, op, &TOGGLE, POINTER_FALLBACK),
        Op::Focus if has(Ifaces::COMPONENT) => Ok(Method::GrabFocus),
        Op::Focus => Err(not_actionable(
            op,
            "it has no Component interface",
            POINTER_FALLBACK,
        )),
        Op::SetValue => {
            let v = need_value(op, value)?;
            let number = v.trim().parse::<f64>().ok().filter(|n| n.is_finite());
            let numeric_role = matches!(
                role,
                Role::Slider | Role::Spinbutton | Role::Scrollbar | Role::Progressbar
            ) || facts.role == code::TABLE_CELL;
            match (number, has(Ifaces::VALUE), has(Ifaces::EDITABLE_TEXT)) {
                (Some(n), true, _) if numeric_role => Ok(Method::SetNumber(n)),
                (_, _, true) => Ok(Method::SetText(v.to_string())),
                (Some(n), true, false) => Ok(Method::SetNumber(n)),
                _ => keyboard_or(
                    facts,
                    op,
                    v,
                    true,
                    "it has neither EditableText nor a numeric Value for this value",
                ),
            }
        }
        Op::Type => {
            let v = need_value(op, value)?;
            if has(Ifaces::EDITABLE_TEXT) {
                Ok(Method::InsertText(v.to_string()))
            } else {
                keyboard_or(facts, op, v, false, "it has no EditableText interface")
            }
        }
        Op::Clear if has(Ifaces::EDITABLE_TEXT) => Ok(Method::SetText(String::new())),
        Op::Clear => Err(not_actionable(
            op,
            "it has no EditableText interface",
            "input.keys ctrl+a then Delete into the focused element",
        )),
        Op::Select if facts.parent_selects => Ok(Method::SelectInParent),
        Op::Select => by_action(facts, op, &SELECT, POINTER_FALLBACK),
        Op::Expand if expanded => Ok(Method::Nothing("already expanded")),
        Op::Expand => by_action(facts, op, &EXPAND, POINTER_FALLBACK),
        Op::Collapse if !expanded && facts.states.has(atspi::State::Expandable) => {
            Ok(Method::Nothing("already collapsed"))
        }
        Op::Collapse => by_action(facts, op, &COLLAPSE, POINTER_FALLBACK),
        Op::Scroll => match need_value(op, value)?.trim() {
            "into_view" if has(Ifaces::COMPONENT) => Ok(Method::ScrollIntoView),
            "into_view" => Err(not_actionable(
                op,
                "it has no Component interface",
                POINTER_FALLBACK,
            )),
            "up" => Ok(Method::ScrollBy(Direction::Up)),
            "down" => Ok(Method::ScrollBy(Direction::Down)),
            "left" => Ok(Method::ScrollBy(Direction::Left)),
            "right" => Ok(Method::ScrollBy(Direction::Right)),
            other => Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                format!("scroll value {other:?} is not one of up, down, left, right, into_view"),
            )),
        },
        Op::DragTo => Err(not_actionable(
            op,
            "AT-SPI has no drag method",
            "input.pointer drag",
        )),
        Op::Back | Op::Home | Op::Recents => Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!(
                "{op} is an Android navigation key; desktop windows have no such key. Use keys instead (a browser goes back with alt+Left, a dialog closes with Escape)"
            ),
        )),
        _ => Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!("{op} is not supported by the Linux driver"),
        )),
    }
}

/// Reads the facts [`choose`] needs.
///
/// Errors: `COMPUTER_ELEMENT_NOT_FOUND` when the element is gone;
/// `COMPUTER_NOT_RESPONDING` on a timeout.
pub async fn facts(bus: &Bus, obj: &ObjRef, op: Op) -> Result<Facts> {
    let a = iface::ACCESSIBLE;
    let base = tokio::try_join!(
        bus.call::<_, u32>(obj, a, "GetRole", &()),
        bus.call::<_, Vec<u32>>(obj, a, "GetState", &()),
        bus.call::<_, Vec<String>>(obj, a, "GetInterfaces", &()),
    );
    let (role, states, ifaces) = base.map_err(|e| gone_as_not_found(e, obj))?;
    let ifaces = Ifaces::from_names(&ifaces);
    let states = RawStates::from_words(&states);
    if states.defunct() {
        return Err(gone_as_not_found(
            CallError::Gone {
                target: obj.to_string(),
                error_name: "DEFUNCT state".into(),
            },
            obj,
        ));
    }
    let actions = if ifaces.has(Ifaces::ACTION) {
        match action_names(bus, obj).await {
            Ok(a) => a,
            Err(e) if e.is_unsupported() => Vec::new(),
            Err(e) => return Err(gone_as_not_found(e, obj)),
        }
    } else {
        Vec::new()
    };
    let parent_selects = if matches!(op, Op::Select | Op::Click | Op::DoubleClick) {
        match parent_of(bus, obj).await {
            Some(p) => bus
                .call::<_, Vec<String>>(&p, a, "GetInterfaces", &())
                .await
                .map(|v| Ifaces::from_names(&v).has(Ifaces::SELECTION))
                .unwrap_or(false),
            None => false,
        }
    } else {
        false
    };
    Ok(Facts {
        role,
        states,
        ifaces,
        actions,
        parent_selects,
    })
}

fn gone_as_not_found(e: CallError, obj: &ObjRef) -> ComputerError {
    if e.is_gone() {
        ComputerError::new(
            ErrorCode::ElementNotFound,
            format!("element {obj} no longer exists; observe again to get current refs"),
        )
        .with_detail(serde_json::json!({ "handle": obj.to_string() }))
    } else {
        e.to_driver()
    }
}

/// The `Parent` property.
pub async fn parent_of(bus: &Bus, obj: &ObjRef) -> Option<ObjRef> {
    let v: OwnedValue = bus
        .prop_value(obj, iface::ACCESSIBLE, "Parent")
        .await
        .ok()?;
    let pair = <(String, OwnedObjectPath)>::try_from(v).ok()?;
    let p = obj_from_wire(pair);
    (!p.is_null()).then_some(p)
}

/// The outcome of one semantic call.
pub struct Outcome {
    pub status: ActStatus,
    pub note: Option<String>,
}

fn from_bool(ok: bool, what: &str) -> Outcome {
    if ok {
        Outcome {
            status: ActStatus::Executed,
            note: None,
        }
    } else {
        Outcome {
            status: ActStatus::Rejected,
            note: Some(format!(
                "the application answered false to {what}; nothing happened"
            )),
        }
    }
}

/// A direction to scroll by a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
    Left,
    Right,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
            Direction::Left => "left",
            Direction::Right => "right",
        }
    }

    fn vertical(self) -> bool {
        matches!(self, Direction::Up | Direction::Down)
    }
}

/// Children looked at per level when looking for a scroll bar: 64.
const SCROLLBAR_SEARCH_CHILDREN: usize = 64;

/// The scroll bar of orientation `vertical` among the children of `obj`, its parent
/// and its grandparent (a GTK tree view's scroll bars are its siblings in a scrolled
/// window). A scroll bar that states neither orientation is taken for either.
pub(super) async fn scrollbar_for(bus: &Bus, obj: &ObjRef, vertical: bool) -> Option<ObjRef> {
    let mut level = Some(obj.clone());
    for _ in 0..3 {
        let here = level?;
        let kids = super::walk::get_children(bus, &here)
            .await
            .unwrap_or_default();
        for k in kids.into_iter().take(SCROLLBAR_SEARCH_CHILDREN) {
            let Ok(role) = bus
                .call::<_, u32>(&k, iface::ACCESSIBLE, "GetRole", &())
                .await
            else {
                continue;
            };
            if map_role_code(role) != Role::Scrollbar {
                continue;
            }
            let states: Vec<u32> = bus
                .call(&k, iface::ACCESSIBLE, "GetState", &())
                .await
                .unwrap_or_default();
            let st = RawStates::from_words(&states);
            let (v, h) = (
                st.has(atspi::State::Vertical),
                st.has(atspi::State::Horizontal),
            );
            if (v == h) || v == vertical {
                return Some(k);
            }
        }
        level = parent_of(bus, &here).await;
    }
    None
}

/// Scrolls the table holding the cell `cell` until the cell's row is in view,
/// through the table's vertical scroll bar `Value` (no focus or selection moves):
/// the bar is set to the row's share of the content (rows of equal height), then
/// corrected once by how far the cell's extents still lie from the table's middle.
/// `Executed` only when the cell's extents end inside the table's; else `Rejected`
/// saying where it stopped.
async fn scroll_cell_into_view(bus: &Bus, cell: &ObjRef) -> Result<Outcome, CallError> {
    let rejected = |note: String| Outcome {
        status: ActStatus::Rejected,
        note: Some(note),
    };
    let Some(table) = parent_of(bus, cell).await else {
        return Ok(rejected(
            "the cell has no table above it; nothing happened".into(),
        ));
    };
    let Some((row, _)) = super::table::cell_position(bus, &table, cell).await else {
        return Ok(rejected(
            "the cell's row is unknown; nothing happened".into(),
        ));
    };
    let rows: i32 = bus.prop(&table, iface::TABLE, "NRows").await?;
    let Some(bar) = scrollbar_for(bus, &table, true).await else {
        return Ok(rejected(
            "Component.ScrollTo answered false and no vertical scroll bar scrolls the table; nothing happened".into(),
        ));
    };
    let min: f64 = bus.prop(&bar, iface::VALUE, "MinimumValue").await?;
    let max: f64 = bus.prop(&bar, iface::VALUE, "MaximumValue").await?;
    let view = super::details::extents(bus, &table).await?;
    let page = f64::from(view.height.max(1));
    // GTK's scroll bar value runs to the content's height less one page.
    let content = (max - min).max(0.0) + page;
    let row_height = content / f64::from(rows.max(1));
    let inside =
        |b: deskpilot_core::Bounds| b.y >= view.y && b.y + b.height <= view.y + view.height;
    let mut target = (min + row_height * (row as f64 + 0.5) - page / 2.0).clamp(min, max);
    for _ in 0..2 {
        bus.set_prop(&bar, iface::VALUE, "CurrentValue", Value::F64(target))
            .await?;
        let b = super::details::extents(bus, cell).await?;
        if inside(b) {
            return Ok(Outcome {
                status: ActStatus::Executed,
                note: Some(format!(
                    "Component.ScrollTo answered false; the table's scroll bar was set to {target:.0} (range {min}–{max}), and row {} is in view",
                    row + 1
                )),
            });
        }
        // Off by the distance between the cell's middle and the view's.
        let off = f64::from(b.y + b.height / 2) - f64::from(view.y + view.height / 2);
        target = (target + off).clamp(min, max);
    }
    Ok(rejected(format!(
        "Component.ScrollTo answered false and the table's scroll bar, set to {target:.0} (range {min}–{max}), did not bring row {} into view",
        row + 1
    )))
}

/// Scrolls `obj` a page in `d` through its scroll bar's `Value` (docs/ARCHITECTURE.md
/// §6): the page is 90% of the element's visible height (width) when the bar counts
/// pixels (its range is larger than that), else a tenth of the range. `Rejected`
/// when no scroll bar is found; `Executed` with a note when already at the end.
async fn scroll_by(bus: &Bus, obj: &ObjRef, d: Direction) -> Result<Outcome, CallError> {
    let Some(bar) = scrollbar_for(bus, obj, d.vertical()).await else {
        return Ok(Outcome {
            status: ActStatus::Rejected,
            note: Some(format!(
                "no {} scroll bar scrolls this element; nothing happened. Fallback: keys Page_Up/Page_Down with it focused",
                if d.vertical() {
                    "vertical"
                } else {
                    "horizontal"
                }
            )),
        });
    };
    let cur: f64 = bus.prop(&bar, iface::VALUE, "CurrentValue").await?;
    let min: f64 = bus.prop(&bar, iface::VALUE, "MinimumValue").await?;
    let max: f64 = bus.prop(&bar, iface::VALUE, "MaximumValue").await?;
    let extent = super::details::extents(bus, obj)
        .await
        .ok()
        .map(|b| f64::from(if d.vertical() { b.height } else { b.width }));
    let range = (max - min).max(0.0);
    let page = match extent {
        Some(e) if e > 0.0 && range > e => e * 0.9,
        _ => (range / 10.0).max(1.0),
    };
    let target = match d {
        Direction::Up | Direction::Left => (cur - page).max(min),
        Direction::Down | Direction::Right => (cur + page).min(max),
    };
    if (target - cur).abs() < f64::EPSILON {
        return Ok(Outcome {
            status: ActStatus::Executed,
            note: Some(format!(
                "already scrolled to the {}; nothing moved",
                match d {
                    Direction::Up => "top",
                    Direction::Down => "bottom",
                    Direction::Left => "left end",
                    Direction::Right => "right end",
                }
            )),
        });
    }
    bus.set_prop(&bar, iface::VALUE, "CurrentValue", Value::F64(target))
        .await?;
    let now: f64 = bus.prop(&bar, iface::VALUE, "CurrentValue").await?;
    if (now - cur).abs() < f64::EPSILON {
        // LibreOffice's scroll bars ignore a new Value but page with their own
        // actions (`incrementBlock`, `decrementBlock`): one view, the caret stays.
        return page_by_action(bus, &bar, d, cur, target).await;
    }
    Ok(Outcome {
        status: ActStatus::Executed,
        note: Some(format!("scroll bar {cur} → {now} (range {min}–{max})")),
    })
}

/// Scrolls a page in `d` with the scroll bar's own page action (`incrementBlock` /
/// `decrementBlock`, LibreOffice's VCL scroll bars), after its `Value` stayed at
/// `cur` when set to `target`. `Rejected` when the bar offers no such action or did
/// not move.
async fn page_by_action(
    bus: &Bus,
    bar: &ObjRef,
    d: Direction,
    cur: f64,
    target: f64,
) -> Result<Outcome, CallError> {
    let stayed = format!("the scroll bar stayed at {cur} when set to {target}");
    let wanted = match d {
        Direction::Up | Direction::Left => "decrementBlock",
        Direction::Down | Direction::Right => "incrementBlock",
    };
    let names = action_names(bus, bar).await.unwrap_or_default();
    let Some(index) = names
        .iter()
        .position(|n| n.eq_ignore_ascii_case(wanted))
        .and_then(|i| i32::try_from(i).ok())
    else {
        return Ok(Outcome {
            status: ActStatus::Rejected,
            note: Some(format!("{stayed}; nothing moved")),
        });
    };
    let _: bool = bus.call(bar, iface::ACTION, "DoAction", &(index,)).await?;
    let now: f64 = bus.prop(bar, iface::VALUE, "CurrentValue").await?;
    if (now - cur).abs() < f64::EPSILON {
        return Ok(Outcome {
            status: ActStatus::Rejected,
            note: Some(format!(
                "{stayed}, and its action {wanted} did not move it either; nothing moved"
            )),
        });
    }
    Ok(Outcome {
        status: ActStatus::Executed,
        note: Some(format!(
            "{stayed}; its action {wanted} (DoAction) scrolled one view instead: {cur} → {now}"
        )),
    })
}

/// Turns a failed dispatch into a status (timeouts) or an error (gone, unsupported).
fn dispatch_error(e: CallError, obj: &ObjRef, what: &str) -> Result<Outcome> {
    match e {
        CallError::Timeout { timeout_ms, .. } => Ok(Outcome {
            status: ActStatus::TimedOut,
            note: Some(format!(
                "{what} got no answer within {timeout_ms} ms; it may or may not have happened. \
                 Not retried: observe before trying again"
            )),
        }),
        // An error reply comes from the application: it refused.
        CallError::Failed { source, .. } if matches!(source, zbus::Error::MethodError(..)) => {
            Ok(Outcome {
                status: ActStatus::Rejected,
                note: Some(format!("the application refused {what}: {source}")),
            })
        }
        // Sent, but the answer was lost or unreadable: it may have happened.
        CallError::Failed { source, .. } => Ok(Outcome {
            status: ActStatus::OutcomeUnknown,
            note: Some(format!(
                "{what} was sent but its answer could not be read ({source}); it may or may \
                 not have happened. Not retried: observe before trying again"
            )),
        }),
        other => Err(gone_as_not_found(other, obj)),
    }
}

/// Performs a semantic method (not [`Method::Keyboard`]) on `obj`.
pub async fn perform(bus: &Bus, obj: &ObjRef, method: &Method) -> Result<Outcome> {
    let what = method.describe().1;
    let r: Result<Outcome, CallError> = async {
        Ok(match method {
            Method::DoAction { index, .. } => from_bool(
                bus.call(obj, iface::ACTION, "DoAction", &(*index,)).await?,
                &what,
            ),
            Method::GrabFocus => from_bool(
                bus.call(obj, iface::COMPONENT, "GrabFocus", &()).await?,
                &what,
            ),
            Method::FocusField => {
                let focused: bool = bus.call(obj, iface::COMPONENT, "GrabFocus", &()).await?;
                if !focused {
                    from_bool(false, "Component.GrabFocus")
                } else {
                    caret_to_end(bus, obj).await
                }
            }
            Method::SetText(t) => from_bool(
                bus.call(obj, iface::EDITABLE_TEXT, "SetTextContents", &(t.as_str(),))
                    .await?,
                &what,
            ),
            Method::InsertText(t) => insert::insert_text(bus, obj, t).await?,
            Method::SetNumber(n) => {
                bus.set_prop(obj, iface::VALUE, "CurrentValue", Value::F64(*n))
                    .await?;
                let now: Option<f64> = bus.prop(obj, iface::VALUE, "CurrentValue").await.ok();
                match now {
                    Some(v) if (v - n).abs() > 1e-9 => Outcome {
                        status: ActStatus::Executed,
                        note: Some(format!("asked for {n}, the element now reports {v}")),
                    },
                    _ => Outcome {
                        status: ActStatus::Executed,
                        note: None,
                    },
                }
            }
            Method::SelectInParent => {
                let parent = parent_of(bus, obj).await.ok_or_else(|| CallError::Gone {
                    target: obj.to_string(),
                    error_name: "no parent".into(),
                })?;
                let index: i32 = bus
                    .call(obj, iface::ACCESSIBLE, "GetIndexInParent", &())
                    .await?;
                from_bool(
                    bus.call(&parent, iface::SELECTION, "SelectChild", &(index,))
                        .await?,
                    &what,
                )
            }
            Method::SelectThenAction { index, name } => match select_row(bus, obj).await? {
                Some(via) => {
                    let done: bool = bus.call(obj, iface::ACTION, "DoAction", &(*index,)).await?;
                    let mut o = from_bool(done, &format!("DoAction({name:?})"));
                    if done {
                        o.note = Some(format!("the row was selected first ({via}), then activated"));
                    }
                    o
                }
                None => Outcome {
                    status: ActStatus::Rejected,
                    note: Some(
                        "the row could not be selected first (neither Component.GrabFocus nor the parent's Selection.SelectChild left it selected), so it was not activated: activating would act on the row selected before (focus may have moved to it; nothing was activated). Fallback: click it, then the dialog's button"
                            .into(),
                    ),
                },
            },
            Method::ScrollBy(d) => scroll_by(bus, obj, *d).await?,
            Method::ScrollIntoView => {
                // ScrollType ANYWHERE = 6.
                let scrolled: bool = bus
                    .call(obj, iface::COMPONENT, "ScrollTo", &(6u32,))
                    .await?;
                let role: u32 = if scrolled {
                    0
                } else {
                    bus.call(obj, iface::ACCESSIBLE, "GetRole", &()).await?
                };
                if !scrolled && role == code::TABLE_CELL {
                    // GTK 3 tree views answer false to ScrollTo on a cell: the
                    // view's scroll bar brings the row in, with nothing else moved.
                    scroll_cell_into_view(bus, obj).await?
                } else {
                    from_bool(scrolled, &what)
                }
            }
            Method::Nothing(why) => Outcome {
                status: ActStatus::Executed,
                note: Some(format!("{why}; nothing sent")),
            },
            Method::Keyboard { .. } | Method::MenuKeyboard => Outcome {
                status: ActStatus::Rejected,
                note: Some("keyboard input is sent by the driver, not here".into()),
            },
        })
    }
    .await;
    match r {
        Ok(o) => Ok(o),
        Err(e) => dispatch_error(e, obj, &what),
    }
}

/// How long [`select_row`] waits for a row to say it is selected: 300 ms (GTK
/// selects within the call; the state is read back in 30 ms steps).
const SELECTED_WAIT: Duration = Duration::from_millis(300);

/// True once `obj` states `SELECTED`, read until [`SELECTED_WAIT`] has passed.
async fn becomes_selected(bus: &Bus, obj: &ObjRef) -> Result<bool, CallError> {
    let until = Instant::now() + SELECTED_WAIT;
    loop {
        let s: Vec<u32> = bus.call(obj, iface::ACCESSIBLE, "GetState", &()).await?;
        if RawStates::from_words(&s).has(atspi::State::Selected) {
            return Ok(true);
        }
        if Instant::now() >= until {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// Selects the row of `obj` as a click would, and says how: already selected,
/// `Component.GrabFocus` (a GTK tree view puts its cursor, and with it the
/// selection, on the cell's row), else the parent's `Selection.SelectChild`. Each
/// counts only once the element states `SELECTED`. `None` when neither left it
/// selected.
async fn select_row(bus: &Bus, obj: &ObjRef) -> Result<Option<&'static str>, CallError> {
    let s: Vec<u32> = bus.call(obj, iface::ACCESSIBLE, "GetState", &()).await?;
    if RawStates::from_words(&s).has(atspi::State::Selected) {
        return Ok(Some("it was already selected"));
    }
    let focused = bus
        .call::<_, bool>(obj, iface::COMPONENT, "GrabFocus", &())
        .await
        .unwrap_or(false);
    if focused && becomes_selected(bus, obj).await? {
        return Ok(Some("Component.GrabFocus"));
    }
    let Some(parent) = parent_of(bus, obj).await else {
        return Ok(None);
    };
    let index: i32 = bus
        .call(obj, iface::ACCESSIBLE, "GetIndexInParent", &())
        .await?;
    let selected = bus
        .call::<_, bool>(&parent, iface::SELECTION, "SelectChild", &(index,))
        .await
        .unwrap_or(false);
    if selected && becomes_selected(bus, obj).await? {
        return Ok(Some("Selection.SelectChild"));
    }
    Ok(None)
}

/// Puts the caret of the focused text `obj` at the end of its text (`Text.
/// SetCaretOffset`, an offset in characters). Focus has already moved: a field
/// without `Text`, or one that refuses the caret, is still `executed`, saying so.
async fn caret_to_end(bus: &Bus, obj: &ObjRef) -> Outcome {
    let done = |note: Option<String>| Outcome {
        status: ActStatus::Executed,
        note,
    };
    let Ok(count) = bus.prop::<i32>(obj, iface::TEXT, "CharacterCount").await else {
        return done(Some(
            "focused; the field has no Text interface, so the caret was not placed".into(),
        ));
    };
    match bus
        .call::<_, bool>(obj, iface::TEXT, "SetCaretOffset", &(count.max(0),))
        .await
    {
        Ok(true) => done(Some(format!("focused, caret at the end (offset {count})"))),
        _ => done(Some(
            "focused; the field did not take the caret offset".into(),
        )),
    }
}

/// Children looked at for [`delegate`]: the first 16 (a composite control has one
/// or two), each asked for by index, never the whole list.
const DELEGATE_CHILDREN: i32 = 16;

/// The child that carries the action of an interactive composite control that offers
/// none itself
/// (GTK 4's `GtkMenuButton` holds the `GtkToggleButton` that opens its popover): the
/// one visible, interactive child among the first [`DELEGATE_CHILDREN`] that offers
/// an action other than the incidental ones and takes a click, with its facts and the
/// method for `op` on it (visible: GTK 4 sets no `SHOWING`) — a click, or for expand and collapse a click unless the
/// child is already pressed (expanded) or not. `None` when no child or several
/// qualify, when the element manages its descendants, or on the first timeout. The
/// host judges every interactive child of an element without actions, and asks when
/// it could not read them (docs/ARCHITECTURE.md §7.6), so what is activated here was
/// judged.
pub async fn delegate(
    bus: &Bus,
    obj: &ObjRef,
    parent: &Facts,
    op: Op,
) -> Option<(ObjRef, Facts, Method)> {
    if !matches!(op, Op::Click | Op::Expand | Op::Collapse | Op::Toggle)
        || parent.states.manages_descendants()
        || !map_role_code(parent.role).is_interactive()
    {
        return None;
    }
    let count: i32 = bus.prop(obj, iface::ACCESSIBLE, "ChildCount").await.ok()?;
    let mut found = Vec::new();
    for i in 0..count.clamp(0, DELEGATE_CHILDREN) {
        type Wire = (String, OwnedObjectPath);
        let k = match bus
            .call::<_, Wire>(obj, iface::ACCESSIBLE, "GetChildAtIndex", &(i,))
            .await
        {
            Ok(w) => obj_from_wire(w),
            Err(_) => return None,
        };
        if k.is_null() {
            continue;
        }
        let f = match facts(bus, &k, Op::Click).await {
            Ok(f) => f,
            Err(e) if e.code == ErrorCode::ElementNotFound => continue,
            Err(_) => return None,
        };
        let acts = f
            .actions
            .iter()
            .any(|a| !super::tree::is_incidental_action(a));
        if !acts || !f.states.has(atspi::State::Visible) || !map_role_code(f.role).is_interactive()
        {
            continue;
        }
        if let Ok(m) = choose(Op::Click, &f, None) {
            found.push((k, f, m));
        }
    }
    if found.len() != 1 {
        return None;
    }
    let (k, f, click) = found.pop()?;
    let pressed = f.states.has(atspi::State::Checked)
        || f.states.has(atspi::State::Pressed)
        || f.states.has(atspi::State::Expanded);
    let method = match op {
        Op::Expand if pressed => Method::Nothing("already expanded"),
        Op::Collapse if !pressed => Method::Nothing("already collapsed"),
        Op::Toggle => choose(Op::Toggle, &f, None).unwrap_or(click),
        _ => click,
    };
    Some((k, f, method))
}

/// Builds the result of a dispatch.
pub fn result(method: &Method, outcome: Outcome, started: Instant) -> ActResult {
    let (channel, text) = method.describe();
    ActResult {
        status: outcome.status,
        channel,
        method: text,
        elapsed_ms: started.elapsed().as_millis() as u64,
        settle: None,
        note: outcome.note,
        after: None,
    }
}

/// Time the keyboard fallback allows focus to move into the element after
/// `GrabFocus`: 50 ms (GTK moves focus within one main-loop iteration).
pub const FOCUS_SETTLE: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests;

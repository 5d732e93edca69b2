//! How the fixture applies `node.act`: believable changes to its in-memory tree.

use deskpilot_core::{Handle, Node, Op, Role, State};

use super::{element_not_found, not_actionable};
use crate::ComputerError;
use crate::Result;
use crate::types::*;

pub(super) fn find_mut<'a>(node: &'a mut Node, handle: &Handle) -> Option<&'a mut Node> {
    if &node.handle == handle {
        return Some(node);
    }
    node.children.iter_mut().find_map(|c| find_mut(c, handle))
}

/// The parent of `handle` within `root`.
fn parent_mut<'a>(node: &'a mut Node, handle: &Handle) -> Option<&'a mut Node> {
    if node.children.iter().any(|c| &c.handle == handle) {
        return Some(node);
    }
    node.children.iter_mut().find_map(|c| parent_mut(c, handle))
}

fn clear_state(node: &mut Node, s: State) {
    node.states.remove(s);
    for c in &mut node.children {
        clear_state(c, s);
    }
}

fn can_click(n: &Node) -> bool {
    !n.actions.is_empty() || n.role.is_interactive()
}

fn can_focus(n: &Node) -> bool {
    n.has(State::Focusable) || n.has(State::Editable) || n.role.is_interactive()
}

fn is_toggle(n: &Node) -> bool {
    n.role == Role::Checkbox || n.actions.iter().any(|a| a == "toggle")
}

fn is_selectable(n: &Node) -> bool {
    matches!(
        n.role,
        Role::Listitem | Role::Treeitem | Role::Tab | Role::Row | Role::Cell | Role::Menuitem
    )
}

fn is_expandable(n: &Node) -> bool {
    n.has(State::Expanded)
        || n.has(State::Collapsed)
        || matches!(n.role, Role::Treeitem | Role::Combobox)
}

fn has_area(n: &Node) -> bool {
    n.bounds.is_some_and(|b| !b.is_empty())
}

pub(super) fn event(kind: EventKind, handle: &Handle, app: &str, detail: Option<&str>) -> Event {
    Event {
        kind,
        handle: handle.clone(),
        app: Some(app.to_owned()),
        detail: detail.map(str::to_owned),
    }
}

/// What an op did: how, and the events it caused.
pub(super) struct Done {
    pub(super) channel: Channel,
    pub(super) method: String,
    pub(super) note: Option<String>,
    pub(super) events: Vec<Event>,
}

impl Done {
    fn new(channel: Channel, method: impl Into<String>) -> Self {
        Done {
            channel,
            method: method.into(),
            note: None,
            events: Vec::new(),
        }
    }
}

/// Applies `p` to the tree `root` of app `app`.
pub(super) fn apply(root: &mut Node, app: &str, p: &ActParams) -> Result<Done> {
    let window = root.handle.clone();
    if root.walk().all(|n| n.handle != p.handle) {
        return Err(element_not_found(&p.handle, &window));
    }
    if p.op.needs_value() && p.value.is_none() {
        return Err(ComputerError::invalid(format!("op {} needs a value", p.op)));
    }
    // Checks on a snapshot of the target before mutating anything.
    let target = root
        .walk()
        .find(|n| n.handle == p.handle)
        .cloned()
        .ok_or_else(|| element_not_found(&p.handle, &window))?;
    if target.has(State::Disabled) {
        return Err(not_actionable(&target, "is disabled"));
    }
    let value = p.value.clone().unwrap_or_default();
    let h = &p.handle;
    let mut done;
    match p.op {
        Op::Click => {
            if !can_click(&target) {
                return Err(not_actionable(&target, "offers no click action"));
            }
            let action = target.actions.first().map_or("click", String::as_str);
            done = Done::new(Channel::Action, format!("DoAction(\"{action}\")"));
            if target.role == Role::Checkbox {
                let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
                flip(node, State::Checked);
                done.events
                    .push(event(EventKind::StateChanged, h, app, Some("checked")));
            } else if can_focus(&target) && !target.has(State::Focused) {
                // A press moves focus to what was pressed, as a toolkit's button
                // does: the click leaves a trace the host's check of its outcome
                // can see (a real app's click changes its window).
                clear_state(root, State::Focused);
                let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
                node.states.insert(State::Focused);
                done.events
                    .push(event(EventKind::FocusChanged, h, app, None));
            }
        }
        Op::DoubleClick | Op::RightClick => {
            if !has_area(&target) {
                return Err(not_actionable(&target, "has no on-screen extents to click"));
            }
            let what = if p.op == Op::DoubleClick {
                "double click"
            } else {
                "right click"
            };
            done = Done::new(
                Channel::Pointer,
                format!("XTest {what} at the element's centre"),
            );
            done.note = Some(format!(
                "no accessibility action for {what}; moved the pointer"
            ));
        }
        Op::Focus => {
            if !can_focus(&target) {
                return Err(not_actionable(&target, "cannot take focus"));
            }
            clear_state(root, State::Focused);
            let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
            node.states.insert(State::Focused);
            done = Done::new(Channel::Action, "Component.GrabFocus");
            done.events
                .push(event(EventKind::FocusChanged, h, app, None));
        }
        Op::SetValue => {
            let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
            if node.has(State::Editable) {
                node.value = Some(value);
                done = Done::new(Channel::Text, "EditableText.SetTextContents");
                done.events
                    .push(event(EventKind::TextChanged, h, app, None));
            } else if matches!(
                node.role,
                Role::Slider | Role::Spinbutton | Role::Scrollbar | Role::Progressbar
            ) {
                let v: f64 = value.trim().parse().map_err(|_| {
                    ComputerError::invalid(format!(
                        "{:?} is not a number for {} {:?}",
                        value, node.role, node.name
                    ))
                })?;
                node.value = Some(v.to_string());
                done = Done::new(Channel::Value, "Value.CurrentValue");
                done.events
                    .push(event(EventKind::ValueChanged, h, app, None));
            } else if node.role == Role::Combobox {
                let choice = node
                    .walk()
                    .skip(1)
                    .find(|c| c.name.eq_ignore_ascii_case(&value))
                    .map(|c| c.name.clone())
                    .ok_or_else(|| {
                        ComputerError::invalid(format!(
                            "combobox {:?} has no option {value:?}",
                            node.name
                        ))
                    })?;
                node.value = Some(choice);
                done = Done::new(Channel::Action, "Selection.SelectChild");
                done.events
                    .push(event(EventKind::ValueChanged, h, app, None));
            } else {
                return Err(not_actionable(&target, "has no settable value"));
            }
        }
        Op::Type | Op::Clear => {
            let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
            if !node.has(State::Editable) {
                return Err(not_actionable(&target, "is not editable"));
            }
            if p.op == Op::Type {
                node.value.get_or_insert_with(String::new).push_str(&value);
                done = Done::new(Channel::Text, "EditableText.InsertText");
            } else {
                node.value = Some(String::new());
                done = Done::new(Channel::Text, "EditableText.DeleteText");
            }
            done.events
                .push(event(EventKind::TextChanged, h, app, None));
        }
        Op::Toggle => {
            if !is_toggle(&target) {
                return Err(not_actionable(&target, "cannot be toggled"));
            }
            let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
            flip(node, State::Checked);
            done = Done::new(Channel::Action, "DoAction(\"toggle\")");
            done.events
                .push(event(EventKind::StateChanged, h, app, Some("checked")));
        }
        Op::Select => {
            if !is_selectable(&target) {
                return Err(not_actionable(&target, "cannot be selected"));
            }
            if let Some(parent) = parent_mut(root, h)
                && !parent.has(State::Multiselectable)
            {
                for sib in &mut parent.children {
                    sib.states.remove(State::Selected);
                }
            }
            let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
            node.states.insert(State::Selected);
            done = Done::new(Channel::Action, "Selection.SelectChild");
            done.events
                .push(event(EventKind::StateChanged, h, app, Some("selected")));
        }
        Op::Expand | Op::Collapse => {
            if !is_expandable(&target) {
                return Err(not_actionable(&target, "cannot expand or collapse"));
            }
            let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
            let (on, off, name) = if p.op == Op::Expand {
                (State::Expanded, State::Collapsed, "expand")
            } else {
                (State::Collapsed, State::Expanded, "collapse")
            };
            node.states.insert(on);
            node.states.remove(off);
            done = Done::new(Channel::Action, format!("DoAction(\"{name}\")"));
            done.events
                .push(event(EventKind::StateChanged, h, app, Some(on.as_str())));
        }
        Op::Scroll => {
            let dir = value.trim();
            if !matches!(dir, "up" | "down" | "left" | "right" | "into_view") {
                return Err(ComputerError::invalid(format!(
                    "scroll value must be up, down, left, right or into_view, not {dir:?}"
                )));
            }
            let node = find_mut(root, h).ok_or_else(|| element_not_found(h, &window))?;
            if dir == "into_view" {
                node.states.remove(State::Offscreen);
                done = Done::new(Channel::Action, "Component.ScrollTo");
            } else {
                done = Done::new(Channel::Action, format!("DoAction(\"scroll {dir}\")"));
            }
        }
        Op::DragTo => {
            let to = Handle::new(value.trim());
            let Some(dest) = root.walk().find(|n| n.handle == to) else {
                return Err(element_not_found(&to, &window));
            };
            if !has_area(&target) || !has_area(dest) {
                return Err(not_actionable(
                    &target,
                    "cannot be dragged without on-screen extents",
                ));
            }
            done = Done::new(Channel::Pointer, "XTest drag between element centres");
            done.note = Some("no accessibility action for drag; moved the pointer".to_owned());
        }
        // Android navigation keys: no desktop counterpart.
        Op::Back | Op::Home | Op::Recents => {
            return Err(ComputerError::platform_unsupported(&format!("op {}", p.op)));
        }
        other => {
            return Err(not_actionable(
                &target,
                &format!("does not support {other}"),
            ));
        }
    }
    Ok(done)
}

fn flip(node: &mut Node, s: State) {
    if node.has(s) {
        node.states.remove(s);
    } else {
        node.states.insert(s);
    }
}

//! Rules about where input lands and what it activates, judged on the window's tree
//! as the host read it just before dispatch (docs/ARCHITECTURE.md §7).
//!
//! - [`input_may_reach_password`]: synthesized input is refused while it could reach a
//!   password field (`COMPUTER_SECURE_INPUT`, through
//!   [`crate::refusal::Refusals::check_input`]).
//! - [`offscreen_refuses`]: an element that is not on screen is not activated.
//! - [`keys_irreversible`]: which keys count as an irreversible action — Enter on a
//!   send-like control outside chat apps, and any key that activates the focused
//!   control (space, Return) when the control itself is irreversible.

use deskpilot_core::{Node, Op, Role, State};

use crate::irreversible::{Irreversible, classify_act, classify_keys};

/// The element of `root`'s tree that reports keyboard focus, if any.
pub fn focused(root: &Node) -> Option<&Node> {
    root.walk().find(|n| n.has(State::Focused))
}

/// Whether `n` is a password field (AT-SPI `password text` role or the ARIA
/// `password` state, both mapped to [`State::Password`]).
pub fn is_password(n: &Node) -> bool {
    n.has(State::Password)
}

/// Whether synthesized input into the window could reach a password field: the
/// focused element is one, or no element reports focus (an inactive window's focus
/// widget does not) while the window has a password field, which may be the widget
/// the input lands in once the window is raised.
pub fn input_may_reach_password(root: &Node) -> bool {
    match focused(root) {
        Some(n) => is_password(n),
        None => root.walk().any(is_password),
    }
}

/// Whether `op` on `element` must be refused because the element is not on screen
/// (an item of a closed menu, a row scrolled away, a window behind a dialog): an
/// activating or focusing op would act out of the model's sight. Editing ops
/// (set_value, type, clear) and `scroll` (which brings it into view) are not refused.
pub fn offscreen_refuses(op: Op, element: &Node) -> bool {
    element.has(State::Offscreen)
        && matches!(
            op,
            Op::Click
                | Op::DoubleClick
                | Op::RightClick
                | Op::Toggle
                | Op::Select
                | Op::Expand
                | Op::Collapse
                | Op::Focus
        )
}

/// Whether keyboard input activates the focused control: a chord whose key (the part
/// after the last `+`) is space or Return/Enter (ASCII case ignored), or text with a
/// space or a line break.
pub fn keys_activate(chord: Option<&str>, text: Option<&str>) -> bool {
    chord.is_some_and(|c| {
        c.split_whitespace().any(|k| {
            matches!(
                k.rsplit('+').next().map(str::to_lowercase).as_deref(),
                Some("space" | "return" | "enter" | "kp_enter" | "kp_space")
            )
        })
    }) || text.is_some_and(|t| t.contains([' ', '\n', '\r']))
}

/// Roles whose activation by a key counts as a click for [`classify_act`].
fn key_activatable(role: Role) -> bool {
    matches!(
        role,
        Role::Button
            | Role::Link
            | Role::Menuitem
            | Role::Checkbox
            | Role::Radio
            | Role::Listitem
            | Role::Treeitem
            | Role::Tab
    )
}

/// Whether keyboard input (`chord` or `text`) into a window of `app` whose focused
/// element is `focused` is irreversible: Enter on a send-like control outside chat
/// apps ([`classify_keys`]); and any key that activates ([`keys_activate`]) the
/// focused control when the control itself is irreversible ("Delete", "Pay"), in any
/// app.
pub fn keys_irreversible(
    chord: Option<&str>,
    text: Option<&str>,
    app: &str,
    focused: Option<&Node>,
) -> Option<Irreversible> {
    let label = focused.map(|n| n.name.as_str()).unwrap_or_default();
    chord
        .and_then(|c| classify_keys(c, app, label))
        .or_else(|| {
            focused
                .filter(|n| keys_activate(chord, text) && key_activatable(n.role))
                .and_then(|n| classify_act(Op::Click, n.role, &n.name))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(role: Role, name: &str, states: &[State]) -> Node {
        states
            .iter()
            .fold(Node::new(format!("h:{name}"), role, name), |n, s| {
                n.state(*s)
            })
    }

    #[test]
    fn input_may_reach_a_password_field_when_focused_or_when_nothing_has_focus() {
        let pw = node(Role::Textbox, "pw", &[State::Password]);
        let root = node(Role::Window, "w", &[]).children(vec![pw.clone()]);
        assert!(
            input_may_reach_password(&root),
            "no focus, a password field"
        );
        let plain = node(Role::Textbox, "name", &[State::Focused]);
        let root = node(Role::Window, "w", &[]).children(vec![pw.clone(), plain.clone()]);
        assert!(!input_may_reach_password(&root), "focus on a plain field");
        let root = node(Role::Window, "w", &[]).children(vec![pw.state(State::Focused)]);
        assert!(
            input_may_reach_password(&root),
            "the password field has focus"
        );
    }

    #[test]
    fn off_screen_elements_are_not_activated_but_may_be_edited_or_scrolled() {
        let off = node(Role::Menuitem, "Quit", &[State::Offscreen]);
        assert!(offscreen_refuses(Op::Click, &off));
        assert!(offscreen_refuses(Op::Focus, &off));
        assert!(!offscreen_refuses(Op::Scroll, &off));
        assert!(!offscreen_refuses(Op::SetValue, &off));
        let on = node(Role::Menuitem, "Quit", &[]);
        assert!(!offscreen_refuses(Op::Click, &on));
    }

    #[test]
    fn a_key_that_activates_an_irreversible_control_is_irreversible() {
        let delete = node(Role::Button, "Delete", &[State::Focused]);
        assert!(keys_irreversible(Some("space"), None, "mousepad", Some(&delete)).is_some());
        assert!(keys_irreversible(Some("ctrl+Return"), None, "mousepad", Some(&delete)).is_some());
        assert!(keys_irreversible(None, Some("a b"), "mousepad", Some(&delete)).is_some());
        assert!(keys_irreversible(Some("Tab"), None, "mousepad", Some(&delete)).is_none());
        let save = node(Role::Button, "Save", &[State::Focused]);
        assert!(keys_irreversible(Some("Return"), None, "mousepad", Some(&save)).is_none());
        let field = node(Role::Textbox, "Delete", &[State::Focused]);
        assert!(keys_irreversible(Some("space"), None, "mousepad", Some(&field)).is_none());
        assert!(keys_irreversible(Some("Return"), None, "slack", Some(&field)).is_none());
        assert!(keys_irreversible(Some("Return"), None, "thunderbird", None).is_none());
    }
}

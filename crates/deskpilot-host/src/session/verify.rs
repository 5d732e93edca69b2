//! Whether an action the platform accepted did anything (docs/ARCHITECTURE.md §1.6,
//! "Verified outcomes"): the window read just before the dispatch is compared with
//! the window read once the action settled. A toolkit answers `DoAction` with `true`
//! for an element that ignores it (a Qt Quick `Rectangle` given a button role over a
//! `MouseArea`), so "the platform accepted it" is not "it happened".
//!
//! Pure: the trees come in, a reason comes out. Which op expects which change:
//!
//! | op | confirmed by |
//! |---|---|
//! | `toggle` | the element's `checked` state differs (a radio already checked stays so) |
//! | `select` | the element is `selected` after it (or was before) |
//! | `click`, `double_click` | anything in the window differs, or a window opened or closed |
//!
//! Other ops are confirmed where they run (typed text compared character by
//! character, a value read back, the expanded state, the scroll bar's value), or
//! not at all: a right click's menu can be a popup no listing shows, and focus is
//! answered by the toolkit's own `GrabFocus` result.

use deskpilot_core::diff::{DiffOptions, diff};
use deskpilot_core::{Bounds, Handle, Node, Op, Role, State};

/// The marker that starts the note of an action found to have done nothing, so
/// scripts can tell it from other `outcome_unknown` notes.
pub const NO_EFFECT: &str = "no_effect";

/// Why the action `op` on element `h` looks like it did nothing, comparing `before`
/// (the window read just before the dispatch) with `after` (read once it settled;
/// `None` when it was not read). `windows_changed`: a window opened or closed during
/// the action. `None` when the change expected of `op` was seen, or `op` is not one
/// this checks. `toggle` counts the checked state of the element and of anything
/// inside it (a row holding its switch). The reason starts with [`NO_EFFECT`] and
/// ends with the next rung (the pointer at the element's centre, in pixels from
/// `origin`, the window's device extents a pointer basis is relative to) when both
/// are known.
pub fn no_effect(
    op: Op,
    before: &Node,
    after: Option<&Node>,
    h: &Handle,
    windows_changed: bool,
    origin: Option<Bounds>,
) -> Option<String> {
    let after = after?;
    if windows_changed {
        return None;
    }
    let b = before.walk().find(|n| &n.handle == h)?;
    // The element is gone (its window redrew it as another, or removed it): a change.
    let a = after.walk().find(|n| &n.handle == h)?;
    let what = match op {
        Op::Toggle => {
            let (was, now) = (b.has(State::Checked), a.has(State::Checked));
            // A row that holds its switch (Android's settings rows): the checked
            // state of anything inside it counts.
            let checks = |n: &Node| n.walk().map(|c| c.has(State::Checked)).collect::<Vec<_>>();
            if was != now || checks(b) != checks(a) || (b.role == Role::Radio && was) {
                return None;
            }
            format!(
                "its checked state stayed {}",
                if now { "checked" } else { "unchecked" }
            )
        }
        Op::Select => {
            if a.has(State::Selected) || b.has(State::Selected) {
                return None;
            }
            "it is not selected after it".to_string()
        }
        Op::Click | Op::DoubleClick => {
            // Already in the state a click puts it in: a focused field, a selected
            // tab or row, a checked radio. Nothing was left to change.
            if (a.has(State::Focused) && b.has(State::Editable))
                || (a.has(State::Selected) && b.has(State::Selected))
                || (b.role == Role::Radio && b.has(State::Checked) && a.has(State::Checked))
            {
                return None;
            }
            let d = diff(before, after, &DiffOptions::default());
            if !d.text.trim().is_empty() {
                return None;
            }
            "nothing in the window changed (no state, value, text, element or window)".to_string()
        }
        _ => return None,
    };
    let rung = match (b.bounds, origin) {
        (Some(e), Some(w)) if e.width > 0 && e.height > 0 => format!(
            "; next rung: a pointer {} at ({}, {}) in the window (`deskpilot click-at` with the basis `observe --basis` prints, or computer_pointer)",
            if op == Op::DoubleClick {
                "double click"
            } else {
                "click"
            },
            e.x - w.x + e.width / 2,
            e.y - w.y + e.height / 2,
        ),
        _ => String::new(),
    };
    Some(format!(
        "{NO_EFFECT}: the app accepted the {op} but {what}; it may have done something the tree does not show, so check before trying again{rung}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: Option<Bounds> = Some(Bounds::new(100, 200, 400, 300));

    fn node(h: &str, role: Role, name: &str) -> Node {
        // Refs as the session's registry assigns them: a diff matches by ref.
        let mut n = Node::new(h, role, name);
        n.ref_ = Some(format!("e_{h}"));
        n.bounds = Some(Bounds::new(110, 220, 40, 20));
        n
    }

    fn window(children: Vec<Node>) -> Node {
        let mut w = Node::new("w", Role::Window, "W");
        w.ref_ = Some("e0".into());
        w.bounds = Some(Bounds::new(100, 200, 400, 300));
        w.child_count = children.len() as u64;
        w.children = children;
        w
    }

    #[test]
    fn a_click_that_changed_nothing_names_the_pointer_rung() {
        let before = window(vec![node("b", Role::Button, "Press")]);
        let after = before.clone();
        let why = no_effect(
            Op::Click,
            &before,
            Some(&after),
            &Handle("b".into()),
            false,
            ORIGIN,
        )
        .expect("no change is no effect");
        assert!(
            why.starts_with("no_effect: the app accepted the click"),
            "{why}"
        );
        assert!(why.contains("at (30, 30) in the window"), "{why}");
    }

    #[test]
    fn a_click_that_changed_text_or_a_window_is_confirmed() {
        let before = window(vec![
            node("b", Role::Button, "Add"),
            node("l", Role::Label, "0"),
        ]);
        let mut after = before.clone();
        after.children[1].name = "1".into();
        assert_eq!(
            no_effect(
                Op::Click,
                &before,
                Some(&after),
                &Handle("b".into()),
                false,
                ORIGIN
            ),
            None
        );
        assert_eq!(
            no_effect(
                Op::Click,
                &before,
                Some(&before),
                &Handle("b".into()),
                true,
                ORIGIN
            ),
            None,
            "a window opened or closed"
        );
        assert_eq!(
            no_effect(Op::Click, &before, None, &Handle("b".into()), false, ORIGIN),
            None,
            "not read after: not judged here"
        );
    }

    #[test]
    fn a_toggle_must_flip_checked_and_a_select_must_leave_it_selected() {
        let before = window(vec![node("c", Role::Checkbox, "Bold")]);
        let mut after = before.clone();
        let c = Handle("c".into());
        assert!(
            no_effect(Op::Toggle, &before, Some(&after), &c, false, ORIGIN)
                .unwrap()
                .contains("stayed unchecked")
        );
        after.children[0].states.insert(State::Checked);
        assert_eq!(
            no_effect(Op::Toggle, &before, Some(&after), &c, false, ORIGIN),
            None
        );

        // A row holding its switch: the switch inside it flipped.
        let mut row = node("row", Role::Listitem, "Airplane mode");
        row.children = vec![node("sw", Role::Checkbox, "")];
        let rows = window(vec![row]);
        let mut flipped = rows.clone();
        flipped.children[0].children[0]
            .states
            .insert(State::Checked);
        let h = Handle("row".into());
        assert_eq!(
            no_effect(Op::Toggle, &rows, Some(&flipped), &h, false, ORIGIN),
            None
        );
        assert!(no_effect(Op::Toggle, &rows, Some(&rows), &h, false, ORIGIN).is_some());

        let mut radio = window(vec![node("r", Role::Radio, "A")]);
        radio.children[0].states.insert(State::Checked);
        let r = Handle("r".into());
        assert_eq!(
            no_effect(Op::Toggle, &radio, Some(&radio), &r, false, ORIGIN),
            None,
            "a radio already checked stays checked"
        );

        let list = window(vec![node("i", Role::Listitem, "Two")]);
        let i = Handle("i".into());
        assert!(
            no_effect(Op::Select, &list, Some(&list), &i, false, ORIGIN)
                .unwrap()
                .contains("not selected")
        );
        let mut selected = list.clone();
        selected.children[0].states.insert(State::Selected);
        assert_eq!(
            no_effect(Op::Select, &list, Some(&selected), &i, false, ORIGIN),
            None
        );
    }

    #[test]
    fn ops_confirmed_elsewhere_are_not_judged_here() {
        let w = window(vec![node("b", Role::Button, "Menu")]);
        let b = Handle("b".into());
        for op in [Op::RightClick, Op::Focus, Op::SetValue, Op::Scroll] {
            assert_eq!(no_effect(op, &w, Some(&w), &b, false, ORIGIN), None, "{op}");
        }
    }
}

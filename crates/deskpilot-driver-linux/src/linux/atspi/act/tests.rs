//! Unit tests of the op → method choice and its outcomes (no bus).

use super::*;
use atspi::State as S;

fn facts(role: u32, states: &[S], ifaces: &[&str], actions: &[&str]) -> Facts {
    Facts {
        role,
        // Enabled unless a test says otherwise (see `disabled`).
        states: RawStates(
            states
                .iter()
                .chain(&[S::Enabled, S::Sensitive])
                .fold(0, |a, s| a | *s as u64),
        ),
        ifaces: Ifaces::from_names(ifaces.iter().map(|i| format!("org.a11y.atspi.{i}"))),
        actions: actions.iter().map(|s| s.to_string()).collect(),
        parent_selects: false,
    }
}

fn disabled(mut f: Facts) -> Facts {
    f.states = RawStates(f.states.0 & !(S::Enabled as u64) & !(S::Sensitive as u64));
    f
}

#[test]
fn ops_an_element_cannot_take_are_refused_not_turned_into_clicks() {
    let button = facts(43, &[], &["Action"], &["click"]);
    for op in [Op::Toggle, Op::Expand, Op::Collapse, Op::Select] {
        let e = choose(op, &button, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotActionable, "{op}");
        assert!(e.message.contains("use click"), "{}", e.message);
    }
    let e = choose(Op::Click, &disabled(button.clone()), None).unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotActionable);
    assert!(e.message.contains("disabled"));
}

#[test]
fn a_showing_menu_item_is_activated_from_the_keyboard() {
    let mut item = facts(
        code::MENU_ITEM,
        &[S::Showing, S::Visible],
        &["Action"],
        &["click"],
    );
    item.parent_selects = true;
    assert_eq!(
        choose(Op::Click, &item, None).unwrap(),
        Method::MenuKeyboard
    );
    assert_eq!(Method::MenuKeyboard.describe().0, Channel::Keyboard);
    // A hidden one (its menu is closed) keeps the semantic action.
    let mut hidden = facts(code::MENU_ITEM, &[], &["Action"], &["click"]);
    hidden.parent_selects = true;
    assert!(matches!(
        choose(Op::Click, &hidden, None).unwrap(),
        Method::DoAction { .. }
    ));
}

#[test]
fn click_prefers_click_then_press_then_default_action() {
    let f = facts(43, &[], &["Action"], &["activate", "press", "click"]);
    assert_eq!(
        choose(Op::Click, &f, None).unwrap(),
        Method::DoAction {
            index: 2,
            name: "click".into()
        }
    );
    let f = facts(43, &[], &["Action"], &["Press", "activate"]);
    assert_eq!(
        choose(Op::Click, &f, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "Press".into()
        }
    );
    let f = facts(91, &[], &["Action"], &["expand or contract"]);
    assert_eq!(
        choose(Op::Click, &f, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "expand or contract".into()
        }
    );
    let mut f = facts(32, &[], &[], &[]);
    f.parent_selects = true;
    assert_eq!(choose(Op::Click, &f, None).unwrap(), Method::SelectInParent);
    let err = choose(Op::Click, &facts(29, &[], &[], &[]), None).unwrap_err();
    assert_eq!(err.code, ErrorCode::ElementNotActionable);
    assert!(err.message.contains("input.pointer"));
}

#[test]
fn set_value_prefers_text_but_numbers_for_ranges_and_cells() {
    let entry = facts(61, &[S::Focusable], &["Text", "EditableText"], &[]);
    assert_eq!(
        choose(Op::SetValue, &entry, Some("42")).unwrap(),
        Method::SetText("42".into())
    );
    let spin = facts(52, &[], &["Text", "EditableText", "Value"], &[]);
    assert_eq!(
        choose(Op::SetValue, &spin, Some("7")).unwrap(),
        Method::SetNumber(7.0)
    );
    assert_eq!(
        choose(Op::SetValue, &spin, Some("seven")).unwrap(),
        Method::SetText("seven".into())
    );
    let cell = facts(code::TABLE_CELL, &[S::Focusable], &["Text", "Value"], &[]);
    assert_eq!(
        choose(Op::SetValue, &cell, Some("42")).unwrap(),
        Method::SetNumber(42.0)
    );
    assert_eq!(
        choose(Op::SetValue, &cell, Some("hello")).unwrap(),
        Method::Keyboard {
            text: "hello".into(),
            replace: true
        }
    );
    let label = facts(29, &[], &["Text"], &[]);
    let err = choose(Op::SetValue, &label, Some("x")).unwrap_err();
    assert_eq!(err.code, ErrorCode::ElementNotActionable);
    assert!(err.message.contains("input.keys"));
    assert_eq!(
        choose(Op::SetValue, &entry, None).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn a_click_on_a_tree_view_cell_selects_its_row_and_never_activates_it() {
    // GTK 3 tree view cells: `expand or contract`, `edit`, `activate`.
    let cell = facts(
        code::TABLE_CELL,
        &[S::Selectable, S::Focusable],
        &["Component", "Action"],
        &["expand or contract", "edit", "activate"],
    );
    assert_eq!(choose(Op::Click, &cell, None).unwrap(), Method::GrabFocus);
    // A double click selects the row first, then activates it (the app answers
    // the activation with its selection).
    assert_eq!(
        choose(Op::DoubleClick, &cell, None).unwrap(),
        Method::SelectThenAction {
            index: 2,
            name: "activate".into()
        }
    );
    // A cell with a click of its own (Chromium) keeps it.
    let web = facts(
        code::TABLE_CELL,
        &[S::Selectable],
        &["Component", "Action"],
        &["click"],
    );
    assert_eq!(
        choose(Op::Click, &web, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "click".into()
        }
    );
}

#[test]
fn a_click_on_a_text_field_focuses_it_and_never_activates_it() {
    // GTK 3 entries offer `activate`, which is Enter: it submits the dialog.
    let entry = facts(
        61,
        &[S::Editable],
        &["Text", "EditableText", "Component", "Action"],
        &["activate"],
    );
    let password = facts(
        code::PASSWORD_TEXT,
        &[S::Editable],
        &["Text", "EditableText", "Component", "Action"],
        &["activate"],
    );
    // Chromium inputs: editable, no EditableText.
    let web = facts(
        61,
        &[S::Editable, S::Focusable],
        &["Text", "Component", "Action"],
        &["activate"],
    );
    for f in [&entry, &password, &web] {
        for op in [Op::Click, Op::DoubleClick] {
            assert_eq!(
                choose(op, f, None).unwrap(),
                Method::FocusField,
                "{op} on {f:?}"
            );
        }
    }
    let no_component = facts(
        61,
        &[S::Editable],
        &["Text", "EditableText", "Action"],
        &["activate"],
    );
    assert_eq!(
        choose(Op::Click, &no_component, None).unwrap_err().code,
        ErrorCode::ElementNotActionable
    );
    // A GTK 4 label's widget actions are not a click.
    let label = facts(
        29,
        &[],
        &["Action"],
        &["clipboard.copy", "menu.popup", "selection.delete"],
    );
    assert_eq!(
        choose(Op::Click, &label, None).unwrap_err().code,
        ErrorCode::ElementNotActionable
    );
    // A read-only label text and a button keep their own actions.
    let button = facts(43, &[], &["Component", "Action"], &["activate"]);
    assert_eq!(
        choose(Op::Click, &button, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "activate".into()
        }
    );
}

#[test]
fn type_clear_focus_scroll() {
    let entry = facts(61, &[], &["Text", "EditableText", "Component"], &[]);
    assert_eq!(
        choose(Op::Type, &entry, Some("abc")).unwrap(),
        Method::InsertText("abc".into())
    );
    assert_eq!(
        choose(Op::Clear, &entry, None).unwrap(),
        Method::SetText(String::new())
    );
    assert_eq!(choose(Op::Focus, &entry, None).unwrap(), Method::GrabFocus);
    assert_eq!(
        choose(Op::Scroll, &entry, Some("into_view")).unwrap(),
        Method::ScrollIntoView
    );
    assert_eq!(
        choose(Op::Scroll, &entry, Some("down")).unwrap(),
        Method::ScrollBy(Direction::Down)
    );
    assert_eq!(
        choose(Op::Scroll, &entry, Some("sideways"))
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        choose(Op::Back, &entry, None).unwrap_err().code,
        ErrorCode::PlatformUnsupported
    );
}

#[test]
fn toggle_expand_collapse_select() {
    let check = facts(code::CHECK_BOX, &[], &["Action"], &["click"]);
    assert_eq!(
        choose(Op::Toggle, &check, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "click".into()
        }
    );
    let row = facts(
        91,
        &[S::Expandable],
        &["Action"],
        &["activate", "expand or contract"],
    );
    assert_eq!(
        choose(Op::Expand, &row, None).unwrap(),
        Method::DoAction {
            index: 1,
            name: "expand or contract".into()
        }
    );
    assert_eq!(
        choose(Op::Collapse, &row, None).unwrap(),
        Method::Nothing("already collapsed")
    );
    let open = facts(
        91,
        &[S::Expandable, S::Expanded],
        &["Action"],
        &["expand or contract"],
    );
    assert_eq!(
        choose(Op::Expand, &open, None).unwrap(),
        Method::Nothing("already expanded")
    );
    assert_eq!(
        choose(Op::DoubleClick, &row, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "activate".into()
        }
    );
    let mut item = facts(32, &[S::Selectable], &["Action"], &["click"]);
    assert_eq!(
        choose(Op::Select, &item, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "click".into()
        }
    );
    item.parent_selects = true;
    assert_eq!(
        choose(Op::Select, &item, None).unwrap(),
        Method::SelectInParent
    );
}

#[test]
fn dispatch_failures_become_statuses_or_errors() {
    let obj = ObjRef::new(":1.2", "/org/a11y/atspi/accessible/5");
    let t = dispatch_error(
        CallError::Timeout {
            target: obj.to_string(),
            method: "DoAction".into(),
            timeout_ms: 1500,
        },
        &obj,
        "DoAction(\"click\")",
    )
    .unwrap();
    assert_eq!(t.status, ActStatus::TimedOut);
    assert!(t.note.unwrap().contains("Not retried"));
    let lost = dispatch_error(
        CallError::Failed {
            target: obj.to_string(),
            method: "DoAction".into(),
            source: zbus::Error::InvalidReply,
        },
        &obj,
        "DoAction",
    )
    .unwrap();
    assert_eq!(lost.status, ActStatus::OutcomeUnknown);
    let gone = dispatch_error(
        CallError::Gone {
            target: obj.to_string(),
            error_name: "org.freedesktop.DBus.Error.UnknownObject".into(),
        },
        &obj,
        "DoAction",
    );
    assert_eq!(gone.err().unwrap().code, ErrorCode::ElementNotFound);
}

#[test]
fn channels_are_described() {
    assert_eq!(Method::SetNumber(1.0).describe().0, Channel::Value);
    assert_eq!(Method::SetText("a".into()).describe().0, Channel::Text);
    assert_eq!(
        Method::DoAction {
            index: 0,
            name: "click".into()
        }
        .describe(),
        (Channel::Action, "DoAction(\"click\")".to_string())
    );
    assert_eq!(
        Method::Keyboard {
            text: "a".into(),
            replace: false
        }
        .describe()
        .0,
        Channel::Keyboard
    );
}

/// Chromium's action lists, as `GetName` reports them (Chromium 156): a verb
/// naming the default action, then `showContextMenu` on every element.
#[test]
fn chromium_verbs_are_chosen_by_name() {
    let button = facts(43, &[], &["Action"], &["press", "showContextMenu"]);
    assert_eq!(
        choose(Op::Click, &button, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "press".into()
        }
    );
    assert_eq!(
        choose(Op::RightClick, &button, None).unwrap(),
        Method::DoAction {
            index: 1,
            name: "showContextMenu".into()
        }
    );
    let checked = facts(
        7,
        &[S::Checked],
        &["Action"],
        &["uncheck", "showContextMenu"],
    );
    assert_eq!(
        choose(Op::Toggle, &checked, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "uncheck".into()
        }
    );
    let link = facts(88, &[], &["Action"], &["jump", "showContextMenu"]);
    assert_eq!(
        choose(Op::Click, &link, None).unwrap(),
        Method::DoAction {
            index: 0,
            name: "jump".into()
        }
    );
}

#[test]
fn a_focus_action_is_never_taken_for_a_click() {
    // A Qt Quick tab that handles no press offers only `SetFocus`.
    let tab = facts(37, &[S::Focusable], &["Action", "Component"], &["SetFocus"]);
    let e = choose(Op::Click, &tab, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotActionable);
    assert!(
        e.message.contains("only action focuses it"),
        "{}",
        e.message
    );
    // Its parent's selection is the click when the tab list offers one.
    let mut selectable = tab.clone();
    selectable.parent_selects = true;
    assert!(matches!(
        choose(Op::Click, &selectable, None),
        Ok(Method::SelectInParent)
    ));
    // A press among its actions is still the click.
    let pressable = facts(37, &[], &["Action"], &["SetFocus", "Press"]);
    assert!(matches!(
        choose(Op::Click, &pressable, None),
        Ok(Method::DoAction { ref name, .. }) if name == "Press"
    ));
}

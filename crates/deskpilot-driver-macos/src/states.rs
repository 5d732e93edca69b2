//! AX attributes → deskpilot [`StateSet`] (docs/ARCHITECTURE.md §3, §6c).
//!
//! Owns the single mapping of an element's attributes onto the unified states. AX has
//! no state set: each state is an attribute (`AXEnabled`, `AXFocused`, …), the value
//! of a check box, or a subrole. A state with no AX counterpart (`focusable`,
//! `multiselectable`, `manages_descendants`) is never set, and a mixed check box is
//! neither checked nor unchecked: nothing is guessed. Pure: it never calls the
//! Accessibility API.

use deskpilot_core::{State, StateSet};

use crate::values::{Attrs, CheckState, check_state, is_check_role};

/// Maps an element's attributes to unified states. `on_screen` comes from the walk
/// (the element's frame against its window's, [`crate::geometry::on_screen`]).
///
/// - `disabled` when `AXEnabled` is false (absent counts as enabled: static text and
///   groups do not carry it);
/// - `focused`, `selected`, `busy` (`AXElementBusy`), `modal` (`AXModal`) one to one;
/// - `expanded` / `collapsed` from `AXExpanded`, or from `AXDisclosing` of an
///   outline row;
/// - `checked` when a check box, radio button or toggle (`AXButton` + `AXToggle`) has
///   the value 1;
/// - `editable` for text fields, text areas, combo boxes, date and time fields that
///   are not disabled;
/// - `password` for the `AXSecureTextField` subrole;
/// - `multiline` for `AXTextArea`;
/// - `horizontal` / `vertical` from `AXOrientation` on range controls (slider, scroll
///   bar, level indicator, stepper);
/// - `offscreen` when `on_screen` is false.
pub fn map_states(a: &Attrs, on_screen: bool) -> StateSet {
    let mut out = StateSet::empty();
    let mut put = |cond: bool, s: State| {
        if cond {
            out.insert(s);
        }
    };
    let disabled = a.enabled == Some(false);
    put(!on_screen, State::Offscreen);
    put(disabled, State::Disabled);
    put(a.focused == Some(true), State::Focused);
    put(a.selected == Some(true), State::Selected);
    put(a.busy == Some(true), State::Busy);
    put(a.modal == Some(true), State::Modal);
    let open = a.expanded.or(a.disclosing);
    put(open == Some(true), State::Expanded);
    put(open == Some(false), State::Collapsed);
    let checked = is_check_role(&a.role, a.subrole())
        && a.value.as_ref().and_then(check_state) == Some(CheckState::On);
    put(checked, State::Checked);
    let text_entry = matches!(
        a.role.as_str(),
        "AXTextField" | "AXTextArea" | "AXComboBox" | "AXDateField" | "AXTimeField"
    );
    put(text_entry && !disabled, State::Editable);
    put(a.is_password(), State::Password);
    put(a.role == "AXTextArea", State::Multiline);
    let range = matches!(
        a.role.as_str(),
        "AXSlider" | "AXScrollBar" | "AXLevelIndicator" | "AXIncrementor"
    );
    let orientation = a.orientation.as_deref();
    put(
        range && orientation == Some("AXHorizontalOrientation"),
        State::Horizontal,
    );
    put(
        range && orientation == Some("AXVerticalOrientation"),
        State::Vertical,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::AxValue;

    fn attrs(role: &str) -> Attrs {
        Attrs {
            role: role.into(),
            enabled: Some(true),
            ..Attrs::default()
        }
    }

    #[test]
    fn an_enabled_plain_button_on_screen_has_no_state() {
        assert!(map_states(&attrs("AXButton"), true).is_empty());
    }

    #[test]
    fn each_rule_maps_as_documented() {
        let with = |role: &str, f: &dyn Fn(&mut Attrs)| {
            let mut a = attrs(role);
            f(&mut a);
            a
        };
        let cases: Vec<(Attrs, bool, State)> = vec![
            (attrs("AXButton"), false, State::Offscreen),
            (
                with("AXButton", &|a| a.enabled = Some(false)),
                true,
                State::Disabled,
            ),
            (
                with("AXTextField", &|a| a.focused = Some(true)),
                true,
                State::Focused,
            ),
            (
                with("AXRow", &|a| a.selected = Some(true)),
                true,
                State::Selected,
            ),
            (with("AXGroup", &|a| a.busy = Some(true)), true, State::Busy),
            (
                with("AXWindow", &|a| a.modal = Some(true)),
                true,
                State::Modal,
            ),
            (
                with("AXPopUpButton", &|a| a.expanded = Some(true)),
                true,
                State::Expanded,
            ),
            (
                with("AXComboBox", &|a| a.expanded = Some(false)),
                true,
                State::Collapsed,
            ),
            (
                with("AXRow", &|a| a.disclosing = Some(true)),
                true,
                State::Expanded,
            ),
            (
                with("AXRow", &|a| a.disclosing = Some(false)),
                true,
                State::Collapsed,
            ),
            (
                with("AXCheckBox", &|a| a.value = Some(AxValue::Int(1))),
                true,
                State::Checked,
            ),
            (
                with("AXRadioButton", &|a| a.value = Some(AxValue::Bool(true))),
                true,
                State::Checked,
            ),
            (
                with("AXButton", &|a| {
                    a.subrole = Some("AXToggle".into());
                    a.value = Some(AxValue::Int(1));
                }),
                true,
                State::Checked,
            ),
            (attrs("AXTextField"), true, State::Editable),
            (attrs("AXTextArea"), true, State::Editable),
            (attrs("AXTextArea"), true, State::Multiline),
            (
                with("AXTextField", &|a| {
                    a.subrole = Some("AXSecureTextField".into())
                }),
                true,
                State::Password,
            ),
            (
                with("AXSlider", &|a| {
                    a.orientation = Some("AXHorizontalOrientation".into())
                }),
                true,
                State::Horizontal,
            ),
            (
                with("AXScrollBar", &|a| {
                    a.orientation = Some("AXVerticalOrientation".into())
                }),
                true,
                State::Vertical,
            ),
        ];
        for (a, on_screen, want) in cases {
            assert!(
                map_states(&a, on_screen).contains(want),
                "{want:?} from {a:?}"
            );
        }
    }

    #[test]
    fn the_negative_cases_of_the_same_rules() {
        let mut mixed = attrs("AXCheckBox");
        mixed.value = Some(AxValue::Int(2));
        assert!(!map_states(&mixed, true).contains(State::Checked));
        let mut value_one_button = attrs("AXButton");
        value_one_button.value = Some(AxValue::Int(1));
        assert!(!map_states(&value_one_button, true).contains(State::Checked));
        let mut no_enabled = attrs("AXStaticText");
        no_enabled.enabled = None;
        assert!(!map_states(&no_enabled, true).contains(State::Disabled));
        let mut disabled_field = attrs("AXTextField");
        disabled_field.enabled = Some(false);
        assert!(!map_states(&disabled_field, true).contains(State::Editable));
        let mut group = attrs("AXGroup");
        group.orientation = Some("AXVerticalOrientation".into());
        assert!(!map_states(&group, true).contains(State::Vertical));
        assert!(!map_states(&attrs("AXStaticText"), true).contains(State::Editable));
        let unknown_open = attrs("AXPopUpButton");
        let s = map_states(&unknown_open, true);
        assert!(!s.contains(State::Expanded) && !s.contains(State::Collapsed));
    }
}

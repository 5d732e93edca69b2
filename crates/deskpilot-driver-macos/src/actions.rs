//! `node.act` on macOS: which AX method serves an [`Op`] on an element (pure).
//!
//! Owns [`choose`]: from the element's attributes, its action names
//! (`AXUIElementCopyActionNames`) and which attributes it lets set
//! (`AXUIElementIsAttributeSettable`), the semantic method for an op — an AX action
//! (`AXPress`, `AXShowMenu`, `AXIncrement`, `AXDecrement`, `AXScrollToVisible`,
//! `AXOpen`), or setting an attribute (`AXValue`, `AXSelectedText`, `AXFocused`,
//! `AXSelected`, `AXExpanded`, `AXDisclosing`). When none exists the answer is
//! `COMPUTER_ELEMENT_NOT_ACTIONABLE` naming the fallback; only `type` and `set_value`
//! fall back to the keyboard here (CGEvent, channel `keyboard`), and only into an
//! element that can take focus. It never calls the Accessibility API.

use deskpilot_core::Op;
use deskpilot_protocol::types::Channel;
use deskpilot_protocol::{ComputerError, ErrorCode};

use crate::values::{Attrs, CheckState, NewValue, check_state, is_check_role, new_value};
use deskpilot_protocol::Result;

/// `kAXPressAction`.
pub const PRESS: &str = "AXPress";
/// `kAXShowMenuAction`: the element's context menu (a right click).
pub const SHOW_MENU: &str = "AXShowMenu";
/// `kAXIncrementAction`.
pub const INCREMENT: &str = "AXIncrement";
/// `kAXDecrementAction`.
pub const DECREMENT: &str = "AXDecrement";
/// `kAXConfirmAction`.
pub const CONFIRM: &str = "AXConfirm";
/// `kAXPickAction`: chooses a menu item.
pub const PICK: &str = "AXPick";
/// `kAXRaiseAction`: brings a window to the front.
pub const RAISE: &str = "AXRaise";
/// AppKit's `NSAccessibilityScrollToVisibleAction` (10.9+).
pub const SCROLL_TO_VISIBLE: &str = "AXScrollToVisible";
/// Finder's and AppKit's `AXOpen` (a double click on an item).
pub const OPEN: &str = "AXOpen";

/// Steps at most taken by `AXIncrement`/`AXDecrement` to reach a value: 200 (a stepper
/// from 0 to 100 by 0.5), bounding the calls of one `set_value`.
pub const MAX_STEPS: u32 = 200;

/// Which attributes of the element may be set, as `AXUIElementIsAttributeSettable`
/// answered (false when unsupported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Settable {
    pub value: bool,
    pub selected_text: bool,
    pub focused: bool,
    pub selected: bool,
    pub expanded: bool,
    pub disclosing: bool,
}

/// What [`choose`] needs to know about an element.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facts {
    pub attrs: Attrs,
    /// `AXUIElementCopyActionNames`.
    pub actions: Vec<String>,
    pub settable: Settable,
}

impl Facts {
    fn offers(&self, action: &str) -> bool {
        self.actions.iter().any(|a| a == action)
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

    /// Up and down move the vertical scroll bar.
    pub fn vertical(self) -> bool {
        matches!(self, Direction::Up | Direction::Down)
    }
}

/// The method chosen for an operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// `AXUIElementPerformAction` with this action.
    Perform(&'static str),
    /// `AXUIElementSetAttributeValue(attr, kCFBooleanTrue/False)`.
    SetBool { attr: &'static str, value: bool },
    /// `AXValue` set to a string.
    SetText(String),
    /// `AXValue` set to a number.
    SetNumber(f64),
    /// `AXSelectedText` set to the text: AppKit replaces the selection (or inserts at
    /// the caret when nothing is selected).
    InsertText(String),
    /// `AXIncrement` / `AXDecrement` until `AXValue` reaches the target (at most
    /// [`MAX_STEPS`]).
    StepTo(f64),
    /// The `AXValue` (0–1) of the scroll bar of the element's scroll area.
    ScrollBy(Direction),
    /// Already in the asked state: nothing to send.
    Nothing(&'static str),
    /// No semantic path: focus the element (`AXFocused`), then type through CGEvent
    /// into the focused window; `replace` selects all (command+A) first.
    Keyboard { text: String, replace: bool },
}

impl Method {
    /// `(channel, method text)` for the result.
    pub fn describe(&self) -> (Channel, String) {
        match self {
            Method::Perform(a) => (Channel::Action, (*a).to_owned()),
            Method::SetBool { attr, value } => (Channel::Action, format!("set {attr} = {value}")),
            Method::SetText(_) => (Channel::Value, "set AXValue (text)".into()),
            Method::SetNumber(_) => (Channel::Value, "set AXValue (number)".into()),
            Method::InsertText(_) => (Channel::Text, "set AXSelectedText".into()),
            Method::StepTo(_) => (Channel::Action, "AXIncrement/AXDecrement".into()),
            Method::ScrollBy(d) => (
                Channel::Value,
                format!("scroll bar AXValue ({})", d.as_str()),
            ),
            Method::Nothing(_) => (Channel::Action, "none".into()),
            Method::Keyboard { replace: true, .. } => (
                Channel::Keyboard,
                "keyboard: set AXFocused, command+A, then typed text (CGEvent)".into(),
            ),
            Method::Keyboard { .. } => (
                Channel::Keyboard,
                "keyboard: set AXFocused, then typed text (CGEvent)".into(),
            ),
        }
    }

    /// The change is complete when the call returns (an attribute set, nothing to
    /// do): settling then polls only briefly.
    pub fn applied_in_call(&self) -> bool {
        matches!(
            self,
            Method::SetText(_) | Method::SetNumber(_) | Method::InsertText(_) | Method::Nothing(_)
        )
    }
}

const KEYS_FALLBACK: &str = "input.keys into the focused window (the element must take focus)";
const POINTER_FALLBACK: &str = "input.pointer at the element's bounds (moves the user's pointer)";

fn not_actionable(op: Op, why: &str, fallback: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotActionable,
        format!("{op} has no accessibility method on this element: {why}. Fallback: {fallback}"),
    )
    .with_detail(serde_json::json!({ "op": op.as_str(), "fallback": fallback }))
}

fn need_value(op: Op, value: Option<&str>) -> Result<&str> {
    value.ok_or_else(|| ComputerError::invalid(format!("{op} needs a value")))
}

fn offered(f: &Facts) -> String {
    if f.actions.is_empty() {
        "none".into()
    } else {
        f.actions.join(", ")
    }
}

/// Chooses the method for `op` (pure).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a missing or malformed value;
/// `COMPUTER_ELEMENT_NOT_ACTIONABLE` for a disabled element (every op but focus and
/// scroll) or when no path exists (naming the fallback);
/// `COMPUTER_PLATFORM_UNSUPPORTED` for Android's navigation keys.
pub fn choose(op: Op, f: &Facts, value: Option<&str>) -> Result<Method> {
    let a = &f.attrs;
    let role = a.role.as_str();
    if !matches!(op, Op::Focus | Op::Scroll) && a.enabled == Some(false) {
        return Err(ComputerError::new(
            ErrorCode::ElementNotActionable,
            format!(
                "cannot {op}: the element is disabled; observe again to see when it becomes enabled"
            ),
        ));
    }
    let text_field = matches!(
        role,
        "AXTextField" | "AXTextArea" | "AXComboBox" | "AXDateField" | "AXTimeField"
    );
    match op {
        // A click in a text field focuses it; its AXConfirm would be Enter.
        Op::Click if text_field && f.settable.focused => Ok(Method::SetBool {
            attr: "AXFocused",
            value: true,
        }),
        Op::Click if f.offers(PRESS) => Ok(Method::Perform(PRESS)),
        Op::Click if role == "AXMenuItem" && f.offers(PICK) => Ok(Method::Perform(PICK)),
        Op::Click if f.settable.selected => Ok(Method::SetBool {
            attr: "AXSelected",
            value: true,
        }),
        Op::Click => Err(not_actionable(
            op,
            &format!("it offers no AXPress (actions: {})", offered(f)),
            POINTER_FALLBACK,
        )),
        Op::DoubleClick if f.offers(OPEN) => Ok(Method::Perform(OPEN)),
        Op::DoubleClick => Err(not_actionable(
            op,
            "AX has no double-click action and the element offers no AXOpen",
            "input.pointer double_click at the element's bounds (moves the user's pointer)",
        )),
        Op::RightClick if f.offers(SHOW_MENU) => Ok(Method::Perform(SHOW_MENU)),
        Op::RightClick => Err(not_actionable(
            op,
            &format!("it offers no AXShowMenu (actions: {})", offered(f)),
            "input.pointer right_click at the element's bounds (moves the user's pointer)",
        )),
        Op::Focus if f.settable.focused => Ok(Method::SetBool {
            attr: "AXFocused",
            value: true,
        }),
        Op::Focus => Err(not_actionable(
            op,
            "its AXFocused cannot be set",
            POINTER_FALLBACK,
        )),
        Op::Toggle if !is_check_role(role, a.subrole()) => Err(ComputerError::new(
            ErrorCode::ElementNotActionable,
            format!(
                "cannot {op}: the element is not a check box, radio or toggle; use click for a plain button"
            ),
        )),
        Op::Toggle if f.offers(PRESS) => Ok(Method::Perform(PRESS)),
        Op::Toggle => Err(not_actionable(
            op,
            &format!("it offers no AXPress (actions: {})", offered(f)),
            POINTER_FALLBACK,
        )),
        Op::Expand | Op::Collapse => {
            let want = op == Op::Expand;
            let now = a.expanded.or(a.disclosing);
            if now == Some(want) {
                return Ok(Method::Nothing(if want {
                    "already expanded"
                } else {
                    "already collapsed"
                }));
            }
            if f.settable.disclosing {
                Ok(Method::SetBool {
                    attr: "AXDisclosing",
                    value: want,
                })
            } else if f.settable.expanded {
                Ok(Method::SetBool {
                    attr: "AXExpanded",
                    value: want,
                })
            } else if now.is_some() && f.offers(PRESS) {
                // A pop-up button or disclosure triangle opens and closes on press.
                Ok(Method::Perform(PRESS))
            } else if want && role == "AXPopUpButton" && f.offers(SHOW_MENU) {
                Ok(Method::Perform(SHOW_MENU))
            } else if now.is_none() && role != "AXDisclosureTriangle" {
                Err(ComputerError::new(
                    ErrorCode::ElementNotActionable,
                    format!(
                        "cannot {op}: the element is not expandable (it has neither AXExpanded nor AXDisclosing); use click for a plain button"
                    ),
                ))
            } else if f.offers(PRESS) {
                Ok(Method::Perform(PRESS))
            } else {
                Err(not_actionable(
                    op,
                    "neither AXExpanded nor AXDisclosing can be set and it offers no AXPress",
                    POINTER_FALLBACK,
                ))
            }
        }
        Op::Select if a.selected == Some(true) => Ok(Method::Nothing("already selected")),
        Op::Select if f.settable.selected => Ok(Method::SetBool {
            attr: "AXSelected",
            value: true,
        }),
        // A tab, radio button or menu item is selected by pressing it.
        Op::Select
            if matches!(role, "AXRadioButton" | "AXMenuItem" | "AXCell") && f.offers(PRESS) =>
        {
            Ok(Method::Perform(PRESS))
        }
        Op::Select => Err(not_actionable(
            op,
            "its AXSelected cannot be set and it is no tab, radio or menu item",
            POINTER_FALLBACK,
        )),
        Op::SetValue => {
            let v = need_value(op, value)?;
            match new_value(role, v) {
                NewValue::Number(n) if f.settable.value => Ok(Method::SetNumber(n)),
                NewValue::Number(n) if f.offers(INCREMENT) && f.offers(DECREMENT) => {
                    Ok(Method::StepTo(n))
                }
                NewValue::Text(t) if f.settable.value && !is_check_role(role, a.subrole()) => {
                    Ok(Method::SetText(t))
                }
                _ if f.settable.focused => Ok(Method::Keyboard {
                    text: v.to_owned(),
                    replace: true,
                }),
                _ => Err(not_actionable(
                    op,
                    "its AXValue cannot be set and it cannot take focus for typing",
                    KEYS_FALLBACK,
                )),
            }
        }
        Op::Type => {
            let v = need_value(op, value)?;
            if f.settable.selected_text {
                Ok(Method::InsertText(v.to_owned()))
            } else if f.settable.focused {
                Ok(Method::Keyboard {
                    text: v.to_owned(),
                    replace: false,
                })
            } else {
                Err(not_actionable(
                    op,
                    "its AXSelectedText cannot be set and it cannot take focus for typing",
                    KEYS_FALLBACK,
                ))
            }
        }
        Op::Clear if f.settable.value && text_field => Ok(Method::SetText(String::new())),
        Op::Clear => Err(not_actionable(
            op,
            "it is no text field whose AXValue can be set",
            "input.keys command+a then Delete into the focused element",
        )),
        Op::Scroll => match need_value(op, value)?.trim() {
            "into_view" if f.offers(SCROLL_TO_VISIBLE) => Ok(Method::Perform(SCROLL_TO_VISIBLE)),
            "into_view" => Err(not_actionable(
                op,
                "it offers no AXScrollToVisible",
                "scroll up/down on its scroll area",
            )),
            "up" => Ok(Method::ScrollBy(Direction::Up)),
            "down" => Ok(Method::ScrollBy(Direction::Down)),
            "left" => Ok(Method::ScrollBy(Direction::Left)),
            "right" => Ok(Method::ScrollBy(Direction::Right)),
            other => Err(ComputerError::invalid(format!(
                "scroll value {other:?} is not one of up, down, left, right, into_view"
            ))),
        },
        Op::DragTo => Err(not_actionable(
            op,
            "AX has no drag method",
            "input.pointer drag",
        )),
        Op::Back | Op::Home | Op::Recents => Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!(
                "{op} is an Android navigation key; desktop windows have no such key. Use keys instead (a browser goes back with command+[, a dialog closes with Escape)"
            ),
        )),
        _ => Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!("{op} is not supported by the macOS driver"),
        )),
    }
}

/// Whether a toggle reached the other state: the check state before and after the
/// press (pure). `None` when either value is no check state.
pub fn toggled(before: Option<CheckState>, after: Option<CheckState>) -> Option<bool> {
    Some(before? != after?)
}

/// The check state of an element's `AXValue`, for [`toggled`].
pub fn check_of(a: &Attrs) -> Option<CheckState> {
    a.value.as_ref().and_then(check_state)
}

/// The next step toward `target` from `current` for `AXIncrement`/`AXDecrement`:
/// `Some(INCREMENT)` below it, `Some(DECREMENT)` above it, `None` when reached
/// (within a thousandth of the value's magnitude, at least 1e-9).
pub fn step_toward(current: f64, target: f64) -> Option<&'static str> {
    let tolerance = (target.abs() * 1e-3).max(1e-9);
    if (current - target).abs() <= tolerance {
        None
    } else if current < target {
        Some(INCREMENT)
    } else {
        Some(DECREMENT)
    }
}

/// The scroll bar value after a page in direction `d` (pure). AX scroll bars hold a
/// fraction 0–1 of the scrolled distance; a page is 90 % of the visible length
/// `visible` over the scrollable length (`content` − `visible`), or a tenth of the
/// range when the lengths are unknown. The result stays in 0–1.
pub fn scroll_target(
    current: f64,
    d: Direction,
    visible: Option<f64>,
    content: Option<f64>,
) -> f64 {
    let page = match (visible, content) {
        (Some(v), Some(c)) if c > v && v > 0.0 => (0.9 * v / (c - v)).min(1.0),
        _ => 0.1,
    };
    let next = match d {
        Direction::Up | Direction::Left => current - page,
        Direction::Down | Direction::Right => current + page,
    };
    next.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::AxValue;

    fn facts(role: &str, actions: &[&str]) -> Facts {
        Facts {
            attrs: Attrs {
                role: role.into(),
                enabled: Some(true),
                ..Attrs::default()
            },
            actions: actions.iter().map(|s| s.to_string()).collect(),
            settable: Settable::default(),
        }
    }

    #[test]
    fn each_op_picks_its_ax_method() {
        let button = facts("AXButton", &[PRESS, SHOW_MENU]);
        assert_eq!(choose(Op::Click, &button, None), Ok(Method::Perform(PRESS)));
        assert_eq!(
            choose(Op::RightClick, &button, None),
            Ok(Method::Perform(SHOW_MENU))
        );
        let mut field = facts("AXTextField", &[CONFIRM]);
        field.settable = Settable {
            value: true,
            selected_text: true,
            focused: true,
            ..Settable::default()
        };
        assert_eq!(
            choose(Op::Click, &field, None),
            Ok(Method::SetBool {
                attr: "AXFocused",
                value: true
            })
        );
        assert_eq!(
            choose(Op::SetValue, &field, Some("hi")),
            Ok(Method::SetText("hi".into()))
        );
        assert_eq!(
            choose(Op::Type, &field, Some("hi")),
            Ok(Method::InsertText("hi".into()))
        );
        assert_eq!(
            choose(Op::Clear, &field, None),
            Ok(Method::SetText(String::new()))
        );
        let mut slider = facts("AXSlider", &[INCREMENT, DECREMENT]);
        assert_eq!(
            choose(Op::SetValue, &slider, Some("40")),
            Ok(Method::StepTo(40.0))
        );
        slider.settable.value = true;
        assert_eq!(
            choose(Op::SetValue, &slider, Some("40")),
            Ok(Method::SetNumber(40.0))
        );
        let check = facts("AXCheckBox", &[PRESS]);
        assert_eq!(choose(Op::Toggle, &check, None), Ok(Method::Perform(PRESS)));
        let mut row = facts("AXRow", &[]);
        row.attrs.disclosing = Some(false);
        row.settable.disclosing = true;
        row.settable.selected = true;
        assert_eq!(
            choose(Op::Expand, &row, None),
            Ok(Method::SetBool {
                attr: "AXDisclosing",
                value: true
            })
        );
        assert_eq!(
            choose(Op::Collapse, &row, None),
            Ok(Method::Nothing("already collapsed"))
        );
        assert_eq!(
            choose(Op::Select, &row, None),
            Ok(Method::SetBool {
                attr: "AXSelected",
                value: true
            })
        );
        let mut popup = facts("AXPopUpButton", &[PRESS, SHOW_MENU]);
        popup.attrs.expanded = Some(false);
        assert_eq!(choose(Op::Expand, &popup, None), Ok(Method::Perform(PRESS)));
        let item = facts("Finder item", &[OPEN]);
        assert_eq!(
            choose(Op::DoubleClick, &item, None),
            Ok(Method::Perform(OPEN))
        );
        let scrolled = facts("AXGroup", &[SCROLL_TO_VISIBLE]);
        assert_eq!(
            choose(Op::Scroll, &scrolled, Some("into_view")),
            Ok(Method::Perform(SCROLL_TO_VISIBLE))
        );
        assert_eq!(
            choose(Op::Scroll, &scrolled, Some(" down ")),
            Ok(Method::ScrollBy(Direction::Down))
        );
        let tab = facts("AXRadioButton", &[PRESS]);
        assert_eq!(choose(Op::Select, &tab, None), Ok(Method::Perform(PRESS)));
    }

    #[test]
    fn the_keyboard_is_the_declared_fallback_only_for_text() {
        let mut web_input = facts("AXTextField", &[]);
        web_input.settable.focused = true;
        let m = choose(Op::SetValue, &web_input, Some("x")).unwrap();
        assert_eq!(
            m,
            Method::Keyboard {
                text: "x".into(),
                replace: true
            }
        );
        assert_eq!(m.describe().0, Channel::Keyboard);
        let m = choose(Op::Type, &web_input, Some("x")).unwrap();
        assert_eq!(
            m,
            Method::Keyboard {
                text: "x".into(),
                replace: false
            }
        );
        let plain = facts("AXStaticText", &[]);
        let e = choose(Op::Type, &plain, Some("x")).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotActionable);
        assert!(e.message.contains("Fallback: input.keys"), "{}", e.message);
    }

    #[test]
    fn refusals_name_the_reason_and_fallback() {
        let mut disabled = facts("AXButton", &[PRESS]);
        disabled.attrs.enabled = Some(false);
        let e = choose(Op::Click, &disabled, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotActionable);
        assert!(e.message.contains("disabled"));
        // Focus and scroll still go to a disabled element.
        disabled.settable.focused = true;
        assert!(choose(Op::Focus, &disabled, None).is_ok());
        let text = facts("AXStaticText", &[]);
        let e = choose(Op::Click, &text, None).unwrap_err();
        assert!(e.message.contains("input.pointer"), "{}", e.message);
        let e = choose(Op::DoubleClick, &facts("AXButton", &[PRESS]), None).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotActionable);
        let e = choose(Op::Toggle, &facts("AXButton", &[PRESS]), None).unwrap_err();
        assert!(e.message.contains("not a check box"), "{}", e.message);
        let e = choose(Op::Expand, &facts("AXButton", &[PRESS]), None).unwrap_err();
        assert!(e.message.contains("not expandable"), "{}", e.message);
        let e = choose(Op::SetValue, &facts("AXTextField", &[]), None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = choose(Op::Scroll, &facts("AXGroup", &[]), Some("sideways")).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = choose(Op::Back, &facts("AXGroup", &[]), None).unwrap_err();
        assert_eq!(e.code, ErrorCode::PlatformUnsupported);
        let e = choose(Op::DragTo, &facts("AXGroup", &[]), Some("e3")).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotActionable);
        // A check box's value is its state: set_value never writes text into it.
        let mut check = facts("AXCheckBox", &[PRESS]);
        check.settable.value = true;
        assert!(choose(Op::SetValue, &check, Some("on")).is_err());
    }

    #[test]
    fn toggles_and_steps_are_judged_from_values() {
        let mut a = Attrs {
            value: Some(AxValue::Int(0)),
            ..Attrs::default()
        };
        let before = check_of(&a);
        a.value = Some(AxValue::Int(1));
        assert_eq!(toggled(before, check_of(&a)), Some(true));
        assert_eq!(toggled(before, before), Some(false));
        assert_eq!(toggled(None, before), None);
        assert_eq!(step_toward(3.0, 5.0), Some(INCREMENT));
        assert_eq!(step_toward(7.0, 5.0), Some(DECREMENT));
        assert_eq!(step_toward(5.0004, 5.0), None);
        assert_eq!(step_toward(0.0, 0.0), None);
    }

    #[test]
    fn a_scroll_page_is_ninety_percent_of_the_view() {
        // 400 visible of 2,400: the bar's 0–1 spans 2,000; a page is 360 / 2,000.
        let t = scroll_target(0.5, Direction::Down, Some(400.0), Some(2400.0));
        assert!((t - 0.68).abs() < 1e-9, "{t}");
        let t = scroll_target(0.5, Direction::Up, None, None);
        assert!((t - 0.4).abs() < 1e-9, "{t}");
        assert_eq!(scroll_target(0.95, Direction::Down, None, None), 1.0);
        assert_eq!(
            scroll_target(0.0, Direction::Left, Some(10.0), Some(11.0)),
            0.0
        );
        // Content no longer than the view: a tenth.
        assert!(
            (scroll_target(0.2, Direction::Right, Some(500.0), Some(400.0)) - 0.3).abs() < 1e-9
        );
    }
}

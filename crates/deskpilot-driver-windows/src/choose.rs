//! Which method serves an op on a Windows element (docs/ARCHITECTURE.md §6b, "Acting").
//!
//! Pure: given what is known of the element ([`Facts`]), [`choose`] names the
//! method; `win::act` performs it, trying MSAA before a control's own USER32
//! message where both exist, and reports the one that worked. A pointer or
//! keyboard method is a declared fallback, named as such in the result. It never
//! calls the system.

use deskpilot_core::Op;
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// What kind of element a handle names, as far as acting on it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A top-level window.
    Window,
    /// A push button.
    Button,
    /// A check box or radio button (`BS_*CHECKBOX`, `BS_*RADIOBUTTON`).
    CheckButton,
    /// An edit control.
    Edit {
        read_only: bool,
    },
    ListBox,
    ComboBox,
    /// Item `index` of a list box or combo box.
    Item {
        in_combo: bool,
        index: u32,
    },
    MenuBar,
    /// A menu item: `on_bar` for one of the menu bar, `submenu` when it opens one,
    /// `mnemonic` of a menu bar item (`&File` → `f`), `id` its command.
    MenuItem {
        on_bar: bool,
        submenu: bool,
        mnemonic: Option<char>,
        id: u32,
    },
    /// Any other control.
    Other,
}

/// The facts [`choose`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub kind: Kind,
    pub disabled: bool,
    /// MSAA's default action name, when it offers one (`Press`, `Check`).
    pub default_action: Option<String>,
    /// The menu item's submenu is open now.
    pub expanded: bool,
}

/// Scroll directions of `scroll`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
    Left,
    Right,
    IntoView,
}

/// Pointer gestures of the pointer fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gesture {
    DoubleClick,
    RightClick,
}

/// How an op is performed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// MSAA `accDoDefaultAction`, else the control's own click (`BM_CLICK`) for a
    /// button whose MSAA object has no default action.
    Press,
    /// MSAA `put_accValue`, else `WM_SETTEXT`; read back with `WM_GETTEXT`.
    SetText(String),
    /// `EM_SETSEL` to the end + `EM_REPLACESEL`; read back.
    InsertText(String),
    /// `LB_SETCURSEL`/`CB_SETCURSEL` and the `LBN_SELCHANGE`/`CBN_SELCHANGE`
    /// notification the parent would get from a user's choice.
    SelectItem { in_combo: bool, index: u32 },
    /// `WM_COMMAND` with the item's id, posted to the window (a command that opens
    /// a modal dialog must not block the driver), after closing an open menu.
    MenuCommand(u32),
    /// `WM_SYSCOMMAND(SC_KEYMENU, mnemonic)`: opens a menu bar item's menu, as
    /// Alt+mnemonic does.
    OpenMenu(char),
    /// `WM_CANCELMODE`: closes the open menu.
    CloseMenu,
    /// `CB_SHOWDROPDOWN`.
    DropDown(bool),
    /// Keyboard focus to the control (`SetFocus` in its thread).
    Focus,
    /// `WM_VSCROLL`/`WM_HSCROLL` page steps; into view: `LB_SETTOPINDEX` for an item.
    Scroll(Direction),
    /// Declared fallback: a pointer gesture at the element's centre (moves the
    /// user's pointer; the window is brought to the front first).
    Pointer(Gesture),
    /// Declared fallback: typed through the keyboard into the focused control.
    Keyboard { text: String, replace: bool },
    /// Already so: nothing to do (an expand of an open menu).
    Nothing(&'static str),
}

fn not_actionable(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::ElementNotActionable, msg)
}

/// Picks the method for `op` on an element with `facts`; `value` is the op's value.
///
/// Errors: `COMPUTER_ELEMENT_NOT_ACTIONABLE` for a disabled element (except focus
/// and scroll) or an op the element has no way to do, naming what would work;
/// `COMPUTER_INVALID_ARGUMENT` for a missing or malformed value.
pub fn choose(op: Op, f: &Facts, value: Option<&str>) -> Result<Method> {
    if f.disabled && !matches!(op, Op::Focus | Op::Scroll) {
        return Err(not_actionable(
            "the element is disabled; nothing would happen",
        ));
    }
    let text = || {
        value
            .map(str::to_owned)
            .ok_or_else(|| ComputerError::invalid(format!("{op} needs a value")))
    };
    use Kind::*;
    Ok(match (op, &f.kind) {
        (Op::Click, Button | CheckButton | Other) => Method::Press,
        (Op::Toggle, CheckButton) => Method::Press,
        (Op::Click | Op::Select, Item { in_combo, index }) => Method::SelectItem {
            in_combo: *in_combo,
            index: *index,
        },
        (
            Op::Click | Op::Expand,
            MenuItem {
                on_bar: true,
                submenu: true,
                mnemonic,
                ..
            },
        ) => {
            if f.expanded {
                Method::Nothing("the menu is already open")
            } else {
                Method::OpenMenu(mnemonic.ok_or_else(|| {
                    not_actionable("the menu bar item has no mnemonic to open it with")
                })?)
            }
        }
        (Op::Collapse, MenuItem { submenu: true, .. }) => {
            if f.expanded {
                Method::CloseMenu
            } else {
                Method::Nothing("the menu is already closed")
            }
        }
        (
            Op::Click,
            MenuItem {
                submenu: false, id, ..
            },
        ) if *id != 0 => Method::MenuCommand(*id),
        (
            Op::Click | Op::Expand,
            MenuItem {
                on_bar: false,
                submenu: true,
                ..
            },
        ) => {
            return Err(not_actionable(
                "a submenu of a submenu opens only with the pointer or the keyboard; open its menu, then use keys (Right)",
            ));
        }
        (Op::Click | Op::Focus, Edit { .. } | ListBox | ComboBox) => Method::Focus,
        (Op::Focus, Button | CheckButton | Other) => Method::Focus,
        (Op::SetValue, Edit { read_only: false }) => Method::SetText(text()?),
        (Op::Clear, Edit { read_only: false }) => Method::SetText(String::new()),
        (Op::Type, Edit { read_only: false }) => Method::InsertText(text()?),
        (Op::SetValue | Op::Type | Op::Clear, Edit { read_only: true }) => {
            return Err(not_actionable("the edit is read-only"));
        }
        (Op::Expand, ComboBox) => Method::DropDown(true),
        (Op::Collapse, ComboBox) => Method::DropDown(false),
        (Op::Scroll, _) => Method::Scroll(match value.unwrap_or("") {
            "up" => Direction::Up,
            "down" => Direction::Down,
            "left" => Direction::Left,
            "right" => Direction::Right,
            "into_view" => Direction::IntoView,
            v => {
                return Err(ComputerError::invalid(format!(
                    "scroll takes up, down, left, right or into_view, not {v:?}"
                )));
            }
        }),
        (Op::DoubleClick, Window | MenuBar | MenuItem { .. })
        | (Op::RightClick, Window | MenuBar | MenuItem { .. }) => {
            return Err(not_actionable(format!(
                "{op} is not offered on a window or menu"
            )));
        }
        (Op::DoubleClick, _) => Method::Pointer(Gesture::DoubleClick),
        (Op::RightClick, _) => Method::Pointer(Gesture::RightClick),
        (Op::SetValue | Op::Type, Button | CheckButton | ListBox | Other) => Method::Keyboard {
            text: text()?,
            replace: op == Op::SetValue,
        },
        (Op::Back | Op::Home | Op::Recents, _) => {
            return Err(ComputerError::platform_unsupported(&format!(
                "the {op} op (Android navigation)"
            )));
        }
        (Op::DragTo, _) => {
            return Err(not_actionable(
                "drag_to is not offered by the Windows driver; use input.pointer drag with coordinates from a capture",
            ));
        }
        (op, kind) => {
            return Err(not_actionable(format!(
                "{op} does not apply to this element ({kind:?})"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(kind: Kind) -> Facts {
        Facts {
            kind,
            disabled: false,
            default_action: None,
            expanded: false,
        }
    }

    #[test]
    fn each_control_gets_its_method() {
        assert_eq!(
            choose(Op::Click, &facts(Kind::Button), None).unwrap(),
            Method::Press
        );
        assert_eq!(
            choose(Op::Toggle, &facts(Kind::CheckButton), None).unwrap(),
            Method::Press
        );
        assert_eq!(
            choose(
                Op::SetValue,
                &facts(Kind::Edit { read_only: false }),
                Some("hi")
            )
            .unwrap(),
            Method::SetText("hi".into())
        );
        assert_eq!(
            choose(Op::Clear, &facts(Kind::Edit { read_only: false }), None).unwrap(),
            Method::SetText(String::new())
        );
        assert_eq!(
            choose(Op::Type, &facts(Kind::Edit { read_only: false }), Some("x")).unwrap(),
            Method::InsertText("x".into())
        );
        assert_eq!(
            choose(
                Op::Select,
                &facts(Kind::Item {
                    in_combo: true,
                    index: 2
                }),
                None
            )
            .unwrap(),
            Method::SelectItem {
                in_combo: true,
                index: 2
            }
        );
        let file = Kind::MenuItem {
            on_bar: true,
            submenu: true,
            mnemonic: Some('f'),
            id: 0,
        };
        assert_eq!(
            choose(Op::Expand, &facts(file.clone()), None).unwrap(),
            Method::OpenMenu('f')
        );
        let mut open = facts(file);
        open.expanded = true;
        assert!(matches!(
            choose(Op::Expand, &open, None).unwrap(),
            Method::Nothing(_)
        ));
        assert_eq!(
            choose(Op::Collapse, &open, None).unwrap(),
            Method::CloseMenu
        );
        let save = Kind::MenuItem {
            on_bar: false,
            submenu: false,
            mnemonic: None,
            id: 0x102,
        };
        assert_eq!(
            choose(Op::Click, &facts(save), None).unwrap(),
            Method::MenuCommand(0x102)
        );
        assert_eq!(
            choose(Op::Scroll, &facts(Kind::ListBox), Some("down")).unwrap(),
            Method::Scroll(Direction::Down)
        );
        assert_eq!(
            choose(Op::RightClick, &facts(Kind::Button), None).unwrap(),
            Method::Pointer(Gesture::RightClick)
        );
        assert_eq!(
            choose(Op::Type, &facts(Kind::Other), Some("ab")).unwrap(),
            Method::Keyboard {
                text: "ab".into(),
                replace: false
            }
        );
    }

    #[test]
    fn refusals_say_why() {
        let mut off = facts(Kind::Button);
        off.disabled = true;
        assert_eq!(
            choose(Op::Click, &off, None).unwrap_err().code,
            ErrorCode::ElementNotActionable
        );
        assert_eq!(choose(Op::Focus, &off, None).unwrap(), Method::Focus);
        assert_eq!(
            choose(Op::SetValue, &facts(Kind::Edit { read_only: false }), None)
                .unwrap_err()
                .code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            choose(
                Op::SetValue,
                &facts(Kind::Edit { read_only: true }),
                Some("x")
            )
            .unwrap_err()
            .code,
            ErrorCode::ElementNotActionable
        );
        assert_eq!(
            choose(Op::Scroll, &facts(Kind::ListBox), Some("sideways"))
                .unwrap_err()
                .code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            choose(Op::Back, &facts(Kind::Window), None)
                .unwrap_err()
                .code,
            ErrorCode::PlatformUnsupported
        );
        assert_eq!(
            choose(Op::Toggle, &facts(Kind::Button), None)
                .unwrap_err()
                .code,
            ErrorCode::ElementNotActionable
        );
        assert_eq!(
            choose(Op::DragTo, &facts(Kind::Button), Some("e2"))
                .unwrap_err()
                .code,
            ErrorCode::ElementNotActionable
        );
    }
}

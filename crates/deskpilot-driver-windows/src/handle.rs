//! Handles of the Windows driver (docs/ARCHITECTURE.md §6b): how a window, a control,
//! a list item or a menu item is named in a [`Handle`], and parsed back.
//!
//! Forms (window handles in hexadecimal, as `HWND` values):
//! - `hwnd:0x1a2b` — a top-level window (also the root node of its tree);
//! - `w32:0x1a2b/0x3c4d` — a control: a child window of that top-level;
//! - `w32:0x1a2b/0x3c4d#2` — item 2 (0-based) of a list box or combo box control;
//! - `w32:0x1a2b/menu` — the window's menu bar; `w32:0x1a2b/menu/0.3` — item 3 of
//!   the submenu of menu bar item 0.
//!
//! A handle lives as long as its window (an `HWND` is never reused while the window
//! exists); an item index or menu path names whatever is at that place now, which the
//! host's fingerprint check guards. Pure: it never calls the system.

use deskpilot_core::Handle;
use deskpilot_protocol::ComputerError;
use deskpilot_protocol::Result;

/// What a handle names inside its top-level window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The top-level window itself.
    Window,
    /// A child window (control).
    Control(usize),
    /// Item `index` of a list box or combo box control.
    Item(usize, u32),
    /// The menu bar.
    MenuBar,
    /// A menu item by its path of 0-based positions from the menu bar.
    MenuItem(Vec<u32>),
}

/// A parsed element handle: the top-level window and the target inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementRef {
    /// The top-level window's `HWND` value.
    pub top: usize,
    pub target: Target,
}

impl ElementRef {
    /// The handle naming this element.
    pub fn to_handle(&self) -> Handle {
        let top = self.top;
        Handle::new(match &self.target {
            Target::Window => format!("hwnd:{top:#x}"),
            Target::Control(h) => format!("w32:{top:#x}/{h:#x}"),
            Target::Item(h, i) => format!("w32:{top:#x}/{h:#x}#{i}"),
            Target::MenuBar => format!("w32:{top:#x}/menu"),
            Target::MenuItem(path) => {
                let p: Vec<String> = path.iter().map(u32::to_string).collect();
                format!("w32:{top:#x}/menu/{}", p.join("."))
            }
        })
    }

    /// Parses any handle this driver issues.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` for anything else (another driver's
    /// handle, a typo), saying which forms exist.
    pub fn parse(h: &Handle) -> Result<ElementRef> {
        parse(h.as_str()).ok_or_else(|| {
            ComputerError::invalid(format!(
                "{:?} is not a handle of the Windows driver (hwnd:0x…, w32:0x…/0x…, w32:0x…/0x…#N, w32:0x…/menu/N.N); list the windows or read the tree again",
                deskpilot_core::sanitize::one_line(h.as_str())
            ))
        })
    }
}

/// The handle of a top-level window.
pub fn window_handle(hwnd: usize) -> Handle {
    ElementRef {
        top: hwnd,
        target: Target::Window,
    }
    .to_handle()
}

fn hex(s: &str) -> Option<usize> {
    let digits = s.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    usize::from_str_radix(digits, 16).ok().filter(|v| *v != 0)
}

fn parse(s: &str) -> Option<ElementRef> {
    if let Some(rest) = s.strip_prefix("hwnd:") {
        return Some(ElementRef {
            top: hex(rest)?,
            target: Target::Window,
        });
    }
    let rest = s.strip_prefix("w32:")?;
    let (top, inner) = rest.split_once('/')?;
    let top = hex(top)?;
    let target = if inner == "menu" {
        Target::MenuBar
    } else if let Some(path) = inner.strip_prefix("menu/") {
        let path: Option<Vec<u32>> = path.split('.').map(|p| p.parse().ok()).collect();
        let path = path?;
        if path.is_empty() || path.len() > 8 {
            return None;
        }
        Target::MenuItem(path)
    } else if let Some((h, i)) = inner.split_once('#') {
        Target::Item(hex(h)?, i.parse().ok()?)
    } else {
        Target::Control(hex(inner)?)
    };
    Some(ElementRef { top, target })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_round_trips() {
        let cases = [
            ElementRef {
                top: 0x10110,
                target: Target::Window,
            },
            ElementRef {
                top: 0x10110,
                target: Target::Control(0x1011a),
            },
            ElementRef {
                top: 0x10110,
                target: Target::Item(0x10122, 2),
            },
            ElementRef {
                top: 0x10110,
                target: Target::MenuBar,
            },
            ElementRef {
                top: 0x10110,
                target: Target::MenuItem(vec![0, 3]),
            },
        ];
        for c in cases {
            let h = c.to_handle();
            assert_eq!(ElementRef::parse(&h).unwrap(), c, "{h}");
        }
        assert_eq!(window_handle(0x2a).as_str(), "hwnd:0x2a");
        assert_eq!(
            ElementRef {
                top: 0x2a,
                target: Target::MenuItem(vec![1, 0])
            }
            .to_handle()
            .as_str(),
            "w32:0x2a/menu/1.0"
        );
    }

    #[test]
    fn foreign_and_broken_handles_are_refused() {
        for bad in [
            "",
            ":1.2|/org/a11y",
            "hwnd:",
            "hwnd:0x",
            "hwnd:12",
            "hwnd:0x0",
            "w32:0x1",
            "w32:0x1/",
            "w32:0x1/0xg",
            "w32:0x1/0x2#",
            "w32:0x1/0x2#-1",
            "w32:0x1/menu/",
            "w32:0x1/menu/1..2",
            "w32:0x1/menu/0.1.2.3.4.5.6.7.8",
        ] {
            let e = ElementRef::parse(&Handle::new(bad)).unwrap_err();
            assert_eq!(
                e.code,
                deskpilot_protocol::ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
    }
}

//! Performing a [`Method`] on a control, and synthetic input (docs/ARCHITECTURE.md
//! §6b, "Acting", "Fallback input").
//!
//! Runs on the worker thread. The ladder for each method: MSAA first where it has a
//! call for it (`accDoDefaultAction`, `put_accValue`), then the standard control's
//! own message (`BM_CLICK`, `WM_SETTEXT`, `LB_SETCURSEL` + `LBN_SELCHANGE`, posted
//! `WM_COMMAND`), each named in the result; `SendInput` keyboard and pointer input
//! only as the declared fallback, into a window verified to be in the foreground.
//! Texts are read back (`WM_GETTEXT`) and a mismatch is `outcome_unknown`.

use std::time::{Duration, Instant};

use deskpilot_core::Bounds;
use deskpilot_protocol::keys::parse_chords;
use deskpilot_protocol::types::{ActStatus, Channel};
use deskpilot_protocol::{ComputerError, ErrorCode};
use windows::Win32::Foundation::HWND;
use windows::Win32::UI::Input::KeyboardAndMouse::*;
use windows::Win32::UI::WindowsAndMessaging::*;

use super::sys;
use crate::choose::{Direction, Facts, Gesture, Kind, Method};
use crate::facts::{centre, mnemonic};
use crate::handle::{ElementRef, Target};
use crate::keymap::{Key, key_of};
use deskpilot_protocol::Result;

/// What an action did: status, channel, the concrete method, a note.
#[derive(Debug, Clone)]
pub struct Done {
    pub status: ActStatus,
    pub channel: Channel,
    pub method: String,
    pub note: Option<String>,
}

/// `EM_SETSEL` and `EM_REPLACESEL` (`winuser.h`; the `windows` crate files them
/// under the Controls feature this crate does not need otherwise).
const EM_SETSEL: u32 = 0x00b1;
const EM_REPLACESEL: u32 = 0x00c2;

fn done(channel: Channel, method: &str) -> Done {
    Done {
        status: ActStatus::Executed,
        channel,
        method: method.into(),
        note: None,
    }
}

fn gone() -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotFound,
        "the element's window is gone; read the window again",
    )
}

/// The top-level window and the control a handle names, checked alive and related.
pub fn resolve(e: &ElementRef) -> Result<(HWND, Option<HWND>), ComputerError> {
    let top = sys::hwnd(e.top);
    if !sys::alive(top) {
        return Err(gone());
    }
    let control = match &e.target {
        Target::Control(h) | Target::Item(h, _) => {
            let h = sys::hwnd(*h);
            if !sys::alive(h) || unsafe { GetAncestor(h, GA_ROOT) } != top {
                return Err(gone());
            }
            Some(h)
        }
        _ => None,
    };
    Ok((top, control))
}

/// The facts `choose` needs about the element.
pub fn facts(e: &ElementRef) -> Result<Facts> {
    let (top, control) = resolve(e)?;
    let disabled = |h: HWND| sys::style(h) & 0x0800_0000 != 0;
    let f = |kind, disabled| Facts {
        kind,
        disabled,
        default_action: None,
        expanded: false,
    };
    Ok(match (&e.target, control) {
        (Target::Window, _) => f(Kind::Window, false),
        (Target::MenuBar, _) => f(Kind::MenuBar, false),
        (Target::Item(_, i), Some(h)) => f(
            Kind::Item {
                in_combo: sys::class_name(h).eq_ignore_ascii_case("combobox"),
                index: *i,
            },
            disabled(h),
        ),
        (Target::Control(_), Some(h)) => {
            let class = sys::class_name(h).to_ascii_lowercase();
            let style = sys::style(h);
            let kind = match class.as_str() {
                "button" if matches!(style & 0x0f, 2..=6 | 9) => Kind::CheckButton,
                "button" => Kind::Button,
                "edit" => Kind::Edit {
                    read_only: style & 0x800 != 0,
                },
                "listbox" => Kind::ListBox,
                "combobox" => Kind::ComboBox,
                _ => Kind::Other,
            };
            let mut facts = f(kind, disabled(h));
            facts.default_action = sys::accessible(h)
                .and_then(|a| sys::msaa_facts(&a).default_action)
                .filter(|a| !a.is_empty());
            facts
        }
        (Target::MenuItem(path), _) => {
            let (item, raw, open, readable) = menu_item(top, path);
            if !readable {
                return Err(ComputerError::new(
                    ErrorCode::ElementNotActionable,
                    crate::facts::UNREADABLE_MENU,
                ));
            }
            let (id, submenu, disabled) = item.ok_or_else(gone)?;
            let mut facts = f(
                Kind::MenuItem {
                    on_bar: path.len() == 1,
                    submenu,
                    mnemonic: mnemonic(&raw),
                    id,
                },
                disabled,
            );
            facts.expanded = open;
            facts
        }
        _ => return Err(gone()),
    })
}

/// A menu item by path: `(id, has submenu, disabled)`, its raw text, whether its
/// submenu is open, whether the menu could be read at all.
#[allow(clippy::type_complexity)]
fn menu_item(top: HWND, path: &[u32]) -> (Option<(u32, bool, bool)>, String, bool, bool) {
    let mut m = unsafe { GetMenu(top) };
    if unsafe { GetMenuItemCount(Some(m)) } < 0 {
        return (None, String::new(), false, false);
    }
    for (depth, &i) in path.iter().enumerate() {
        if depth + 1 == path.len() {
            let mut buf = [0u16; 256];
            let len =
                unsafe { GetMenuStringW(m, i, Some(&mut buf), MF_BYPOSITION) }.max(0) as usize;
            let state = unsafe { GetMenuState(m, i, MF_BYPOSITION) };
            if state == u32::MAX {
                return (None, String::new(), false, true);
            }
            let sub = unsafe { GetSubMenu(m, i as i32) };
            let (_, tid) = sys::process_thread(top);
            let open = state & MF_HILITE.0 != 0 && sys::thread_focus(tid).1;
            return (
                Some((
                    unsafe { GetMenuItemID(m, i as i32) },
                    !sub.is_invalid(),
                    state & (MF_GRAYED.0 | MF_DISABLED.0) != 0,
                )),
                String::from_utf16_lossy(&buf[..len]),
                open,
                true,
            );
        }
        m = unsafe { GetSubMenu(m, i as i32) };
        if m.is_invalid() {
            return (None, String::new(), false, true);
        }
    }
    (None, String::new(), false, true)
}

/// Performs `m` on the element `e`.
pub fn perform(e: &ElementRef, m: &Method) -> Result<Done> {
    let (top, control) = resolve(e)?;
    let target = control.unwrap_or(top);
    Ok(match m {
        Method::Nothing(why) => Done {
            note: Some((*why).into()),
            ..done(Channel::Action, "nothing")
        },
        Method::Press => press(target)?,
        Method::SetText(text) => set_text(target, text)?,
        Method::InsertText(text) => {
            let len = sys::send_or_fail(target, WM_GETTEXTLENGTH, 0, 0, "WM_GETTEXTLENGTH")?;
            let (before, _) =
                sys::text(target, 1 << 20).ok_or_else(|| sys::not_responding("WM_GETTEXT"))?;
            sys::send_or_fail(target, EM_SETSEL, len as usize, len, "EM_SETSEL")?;
            let w: Vec<u16> = text.encode_utf16().chain([0]).collect();
            sys::send_or_fail(
                target,
                EM_REPLACESEL,
                1,
                w.as_ptr() as isize,
                "EM_REPLACESEL",
            )?;
            verify_text(
                target,
                &format!("{before}{text}"),
                done(Channel::Text, "win32:EM_REPLACESEL"),
            )
        }
        Method::SelectItem { in_combo, index } => {
            let (set, code) = if *in_combo {
                (CB_SETCURSEL, CBN_SELCHANGE)
            } else {
                (LB_SETCURSEL, LBN_SELCHANGE)
            };
            let r = sys::send_or_fail(target, set, *index as usize, 0, "the selection message")?;
            if r < 0 && !*in_combo || r == -1 && *in_combo {
                return Ok(Done {
                    status: ActStatus::Rejected,
                    note: Some(format!("the control refused item {index}")),
                    ..done(Channel::Action, "win32:SETCURSEL")
                });
            }
            // The parent learns of a user's choice through this notification; the
            // message alone changes the control silently.
            let parent = unsafe { GetParent(target) }.unwrap_or(top);
            let id = sys::control_id(target) as usize & 0xffff;
            sys::post(
                parent,
                WM_COMMAND,
                id | ((code as usize) << 16),
                sys::val(target) as isize,
            )?;
            let method = if *in_combo {
                "win32:CB_SETCURSEL+CBN_SELCHANGE"
            } else {
                "win32:LB_SETCURSEL+LBN_SELCHANGE"
            };
            Done {
                note: Some("MSAA has no selection for this control here; selected through the control's own message and the notification its parent gets from a user's choice".into()),
                ..done(Channel::Action, method)
            }
        }
        Method::MenuCommand(id) => {
            let (_, tid) = sys::process_thread(top);
            if sys::thread_focus(tid).1 {
                let _ = sys::send(top, WM_CANCELMODE, 0, 0);
            }
            // Posted: a command that opens a modal dialog (Save As) runs its own
            // message loop and would hold a sent message until the dialog closes.
            sys::post(top, WM_COMMAND, *id as usize & 0xffff, 0)?;
            Done {
                note: Some("posted to the window; its effect shows in the next read".into()),
                ..done(Channel::Action, "win32:WM_COMMAND")
            }
        }
        Method::OpenMenu(c) => {
            sys::post(top, WM_SYSCOMMAND, SC_KEYMENU as usize, *c as isize)?;
            done(Channel::Action, "win32:WM_SYSCOMMAND(SC_KEYMENU)")
        }
        Method::CloseMenu => {
            sys::send_or_fail(top, WM_CANCELMODE, 0, 0, "WM_CANCELMODE")?;
            done(Channel::Action, "win32:WM_CANCELMODE")
        }
        Method::DropDown(open) => {
            sys::send_or_fail(
                target,
                CB_SHOWDROPDOWN,
                usize::from(*open),
                0,
                "CB_SHOWDROPDOWN",
            )?;
            done(Channel::Action, "win32:CB_SHOWDROPDOWN")
        }
        Method::Focus => focus(top, target)?,
        Method::Scroll(d) => scroll(target, e, *d)?,
        Method::Pointer(g) => {
            let b = sys::rect(target);
            foreground(top)?;
            let (x, y) = centre(&b);
            let n = pointer(
                match g {
                    Gesture::DoubleClick => PointerKind::Double,
                    Gesture::RightClick => PointerKind::Right,
                },
                x,
                y,
                None,
            )?;
            Done {
                note: Some(format!(
                    "no semantic method; {n} pointer events at the element's centre (moves the pointer)"
                )),
                ..done(Channel::Pointer, "SendInput(mouse)")
            }
        }
        Method::Keyboard { text, replace } => {
            if text.contains(['\t', '\n', '\r']) {
                return Err(ComputerError::invalid(
                    "a value typed through the keyboard cannot hold a Tab or a line break (they move focus or submit); send them with keys",
                ));
            }
            foreground(top)?;
            focus(top, target)?;
            let mut n = 0;
            if *replace {
                n += chords("ctrl+a")?;
            }
            n += type_text(text)?;
            Done {
                note: Some(format!(
                    "no text method on this element; typed through the keyboard ({n} key events), not read back"
                )),
                ..done(Channel::Keyboard, "SendInput(keyboard)")
            }
        }
    })
}

/// Click: MSAA's default action when it offers one, else `BM_CLICK` for a button.
fn press(h: HWND) -> Result<Done> {
    let mut tried = None;
    if let Some(acc) = sys::accessible(h) {
        let has_action = sys::msaa_facts(&acc)
            .default_action
            .is_some_and(|a| !a.is_empty());
        if has_action {
            match sys::msaa_default_action(&acc) {
                Ok(()) => return Ok(done(Channel::Action, "msaa:accDoDefaultAction")),
                Err(e) => tried = Some(format!("MSAA accDoDefaultAction failed ({})", sys::hr(&e))),
            }
        } else {
            tried = Some("MSAA offers no default action for it".into());
        }
    }
    if !sys::class_name(h).eq_ignore_ascii_case("button") {
        return Err(ComputerError::new(
            ErrorCode::ElementNotActionable,
            format!(
                "the element has no click method ({}); use the pointer through a capture",
                tried.unwrap_or_default()
            ),
        ));
    }
    // A button's own click: it sends the same BN_CLICKED a user's click does.
    sys::post(h, BM_CLICK, 0, 0)?;
    Ok(Done {
        note: tried.map(|t| format!("{t}; clicked through the button's own BM_CLICK")),
        ..done(Channel::Action, "win32:BM_CLICK")
    })
}

/// Set text: MSAA `put_accValue`, else `WM_SETTEXT`; read back either way.
fn set_text(h: HWND, text: &str) -> Result<Done> {
    let mut note = None;
    if let Some(acc) = sys::accessible(h) {
        match sys::msaa_set_value(&acc, text) {
            Ok(()) => {
                return Ok(verify_text(
                    h,
                    text,
                    done(Channel::Value, "msaa:put_accValue"),
                ));
            }
            Err(e) => note = Some(format!("MSAA put_accValue failed ({})", sys::hr(&e))),
        }
    }
    let w: Vec<u16> = text.encode_utf16().chain([0]).collect();
    let ok = sys::send_or_fail(h, WM_SETTEXT, 0, w.as_ptr() as isize, "WM_SETTEXT")?;
    if ok == 0 {
        return Ok(Done {
            status: ActStatus::Rejected,
            note: Some("the control refused WM_SETTEXT".into()),
            ..done(Channel::Text, "win32:WM_SETTEXT")
        });
    }
    let mut d = verify_text(h, text, done(Channel::Text, "win32:WM_SETTEXT"));
    d.note = Some(match (note, d.note.take()) {
        (Some(a), Some(b)) => format!("{a}; set through WM_SETTEXT; {b}"),
        (Some(a), None) => format!("{a}; set through the control's own WM_SETTEXT and read back"),
        (None, b) => b.unwrap_or_default(),
    });
    Ok(d)
}

/// Reads the text back: a mismatch makes the result `outcome_unknown`.
fn verify_text(h: HWND, want: &str, mut d: Done) -> Done {
    match sys::text(h, want.len() + 16) {
        Some((got, _)) if got == want => d,
        Some((got, len)) => {
            d.status = ActStatus::OutcomeUnknown;
            d.note = Some(format!(
                "read back {len} characters that differ from the {} set (the control may filter or limit its text): {:?}",
                want.chars().count(),
                deskpilot_core::sanitize::one_line(&got)
            ));
            d
        }
        None => {
            d.status = ActStatus::OutcomeUnknown;
            d.note = Some("the text could not be read back".into());
            d
        }
    }
}

/// Keyboard focus to `h`: the window to the front, then `SetFocus` from inside its
/// thread's input state (`AttachThreadInput`).
fn focus(top: HWND, h: HWND) -> Result<Done> {
    use windows::Win32::System::Threading::{AttachThreadInput, GetCurrentThreadId};
    foreground(top)?;
    let (_, tid) = sys::process_thread(h);
    let me = unsafe { GetCurrentThreadId() };
    unsafe {
        let _ = AttachThreadInput(me, tid, true);
        let _ = SetFocus(Some(h));
        let _ = AttachThreadInput(me, tid, false);
    }
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        if sys::thread_focus(tid).0 == Some(h) {
            return Ok(done(Channel::Action, "win32:SetFocus"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Done {
        status: ActStatus::OutcomeUnknown,
        note: Some("focus did not arrive within 500 ms".into()),
        ..done(Channel::Action, "win32:SetFocus")
    })
}

fn scroll(h: HWND, e: &ElementRef, d: Direction) -> Result<Done> {
    if let (Direction::IntoView, Target::Item(_, i)) = (d, &e.target) {
        sys::send_or_fail(h, LB_SETTOPINDEX, *i as usize, 0, "LB_SETTOPINDEX")?;
        return Ok(done(Channel::Action, "win32:LB_SETTOPINDEX"));
    }
    let (msg, code, name) = match d {
        Direction::Up => (WM_VSCROLL, SB_PAGEUP, "win32:WM_VSCROLL(SB_PAGEUP)"),
        Direction::Down => (WM_VSCROLL, SB_PAGEDOWN, "win32:WM_VSCROLL(SB_PAGEDOWN)"),
        Direction::Left => (WM_HSCROLL, SB_PAGELEFT, "win32:WM_HSCROLL(SB_PAGELEFT)"),
        Direction::Right => (WM_HSCROLL, SB_PAGERIGHT, "win32:WM_HSCROLL(SB_PAGERIGHT)"),
        Direction::IntoView => {
            return Err(ComputerError::new(
                ErrorCode::ElementNotActionable,
                "scroll into_view applies to list items here",
            ));
        }
    };
    sys::send_or_fail(h, msg, code.0 as usize, 0, name)?;
    Ok(done(Channel::Action, name))
}

/// Brings `top` to the foreground and checks it got there.
///
/// Errors: `COMPUTER_INPUT_UNAVAILABLE` when the system kept another window in front
/// (synthetic input would land there).
pub fn foreground(top: HWND) -> Result<()> {
    unsafe {
        if GetForegroundWindow() == top {
            return Ok(());
        }
        let _ = ShowWindow(top, SW_RESTORE);
        let _ = SetForegroundWindow(top);
    }
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        if unsafe { GetForegroundWindow() } == top {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(ComputerError::new(
        ErrorCode::InputUnavailable,
        "the window could not be brought to the foreground, so synthetic input would reach another window; activate it, then retry",
    ))
}

fn send_inputs(inputs: &[INPUT]) -> Result<u64> {
    if inputs.is_empty() {
        return Ok(0);
    }
    let n = unsafe { SendInput(inputs, size_of::<INPUT>() as i32) };
    if n as usize != inputs.len() {
        return Err(ComputerError::new(
            ErrorCode::InputUnavailable,
            format!(
                "SendInput took {n} of {} events (input blocked by a higher-integrity window?)",
                inputs.len()
            ),
        ));
    }
    Ok(n as u64)
}

fn key_input(vk: u16, scan: u16, flags: KEYBD_EVENT_FLAGS) -> INPUT {
    INPUT {
        r#type: INPUT_KEYBOARD,
        Anonymous: INPUT_0 {
            ki: KEYBDINPUT {
                wVk: VIRTUAL_KEY(vk),
                wScan: scan,
                dwFlags: flags,
                time: 0,
                dwExtraInfo: 0,
            },
        },
    }
}

/// Presses chords (`ctrl+s Return`), each released in reverse order.
pub fn chords(spec: &str) -> Result<u64> {
    let parsed = parse_chords(spec)?;
    let mut sent = 0;
    for c in parsed {
        let keys: Vec<Key> = c
            .keys
            .iter()
            .map(|k| {
                key_of(*k).ok_or_else(|| {
                    ComputerError::invalid(format!("no Windows key for {:?}", c.text))
                })
            })
            .collect::<Result<_, _>>()?;
        if keys.len() > 1 && keys.iter().any(|k| matches!(k, Key::Char(_))) {
            return Err(ComputerError::invalid(format!(
                "{:?}: a character without its own key cannot be held with a modifier",
                c.text
            )));
        }
        let mut down = Vec::new();
        let mut up = Vec::new();
        for k in &keys {
            match *k {
                Key::Vk { vk, extended } => {
                    let ext = if extended {
                        KEYEVENTF_EXTENDEDKEY
                    } else {
                        KEYBD_EVENT_FLAGS(0)
                    };
                    down.push(key_input(vk, 0, ext));
                    up.insert(0, key_input(vk, 0, ext | KEYEVENTF_KEYUP));
                }
                Key::Char(ch) => {
                    let mut buf = [0u16; 2];
                    for u in ch.encode_utf16(&mut buf) {
                        down.push(key_input(0, *u, KEYEVENTF_UNICODE));
                        up.insert(0, key_input(0, *u, KEYEVENTF_UNICODE | KEYEVENTF_KEYUP));
                    }
                }
            }
        }
        down.extend(up);
        sent += send_inputs(&down)?;
    }
    Ok(sent)
}

/// Types text as Unicode key events (any character; line breaks as Return).
pub fn type_text(text: &str) -> Result<u64> {
    let mut events = Vec::new();
    for ch in text.chars() {
        if ch == '\n' {
            events.push(key_input(0x0d, 0, KEYBD_EVENT_FLAGS(0)));
            events.push(key_input(0x0d, 0, KEYEVENTF_KEYUP));
            continue;
        }
        if ch == '\r' {
            continue;
        }
        let mut buf = [0u16; 2];
        for u in ch.encode_utf16(&mut buf) {
            events.push(key_input(0, *u, KEYEVENTF_UNICODE));
            events.push(key_input(0, *u, KEYEVENTF_UNICODE | KEYEVENTF_KEYUP));
        }
    }
    let mut sent = 0;
    for chunk in events.chunks(64) {
        sent += send_inputs(chunk)?;
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(sent)
}

/// Pointer gestures of `input.pointer` and the pointer fallback.
#[derive(Debug, Clone, Copy)]
pub enum PointerKind {
    Move,
    Click,
    Double,
    Right,
    Drag,
    WheelUp,
    WheelDown,
}

/// Sends a pointer gesture at (x, y), screen pixels (to (x2, y2) for a drag).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a point off every screen (never clamped).
pub fn pointer(kind: PointerKind, x: i32, y: i32, to: Option<(i32, i32)>) -> Result<u64> {
    let screen = unsafe {
        Bounds::new(
            GetSystemMetrics(SM_XVIRTUALSCREEN),
            GetSystemMetrics(SM_YVIRTUALSCREEN),
            GetSystemMetrics(SM_CXVIRTUALSCREEN),
            GetSystemMetrics(SM_CYVIRTUALSCREEN),
        )
    };
    let norm = |x: i32, y: i32| -> Result<(i32, i32), ComputerError> {
        if !screen.contains_point(x, y) {
            return Err(ComputerError::invalid(format!(
                "the point ({x}, {y}) is off the screen {screen:?}"
            )));
        }
        let nx = ((i64::from(x - screen.x) * 65_535) / i64::from((screen.width - 1).max(1))) as i32;
        let ny =
            ((i64::from(y - screen.y) * 65_535) / i64::from((screen.height - 1).max(1))) as i32;
        Ok((nx, ny))
    };
    let mouse = |(nx, ny): (i32, i32), flags: MOUSE_EVENT_FLAGS, data: i32| INPUT {
        r#type: INPUT_MOUSE,
        Anonymous: INPUT_0 {
            mi: MOUSEINPUT {
                dx: nx,
                dy: ny,
                mouseData: data as u32,
                dwFlags: flags | MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK,
                time: 0,
                dwExtraInfo: 0,
            },
        },
    };
    let at = norm(x, y)?;
    let mv = MOUSEEVENTF_MOVE;
    let mut ev = vec![mouse(at, mv, 0)];
    match kind {
        PointerKind::Move => {}
        PointerKind::Click => ev.extend([
            mouse(at, MOUSEEVENTF_LEFTDOWN, 0),
            mouse(at, MOUSEEVENTF_LEFTUP, 0),
        ]),
        PointerKind::Double => ev.extend([
            mouse(at, MOUSEEVENTF_LEFTDOWN, 0),
            mouse(at, MOUSEEVENTF_LEFTUP, 0),
            mouse(at, MOUSEEVENTF_LEFTDOWN, 0),
            mouse(at, MOUSEEVENTF_LEFTUP, 0),
        ]),
        PointerKind::Right => ev.extend([
            mouse(at, MOUSEEVENTF_RIGHTDOWN, 0),
            mouse(at, MOUSEEVENTF_RIGHTUP, 0),
        ]),
        PointerKind::WheelUp => ev.push(mouse(at, MOUSEEVENTF_WHEEL, 120)),
        PointerKind::WheelDown => ev.push(mouse(at, MOUSEEVENTF_WHEEL, -120)),
        PointerKind::Drag => {
            let (x2, y2) = to.ok_or_else(|| ComputerError::invalid("a drag needs an end point"))?;
            let end = norm(x2, y2)?;
            ev.extend([
                mouse(at, MOUSEEVENTF_LEFTDOWN, 0),
                mouse(end, mv, 0),
                mouse(end, MOUSEEVENTF_LEFTUP, 0),
            ]);
        }
    }
    send_inputs(&ev)
}

//! USER32 and MSAA calls (docs/ARCHITECTURE.md §6b): one place for the `unsafe`.
//!
//! Every message to another process's window goes through [`send`], which waits at
//! most [`MESSAGE_TIMEOUT`] and gives up on a hung window (`SMTO_ABORTIFHUNG`); COM
//! calls are bounded by the worker's limit around the whole job. Rectangles are in
//! physical screen pixels (the process is per-monitor DPI aware, see
//! [`make_dpi_aware`]). Nothing here decides anything.

use std::time::Duration;

use deskpilot_core::Bounds;
use deskpilot_protocol::{ComputerError, ErrorCode};
use windows::Win32::Foundation::{HWND, LPARAM, POINT, RECT, WPARAM};
use windows::Win32::Graphics::Gdi::ClientToScreen;
use windows::Win32::System::Variant::{VARIANT, VT_I4};
use windows::Win32::UI::Accessibility::{AccessibleObjectFromWindow, IAccessible};
use windows::Win32::UI::WindowsAndMessaging::*;
use windows::core::{BSTR, Interface};

use crate::facts::MsaaFacts;
use deskpilot_protocol::Result;

/// How long one message to another process's window may take: 1,000 ms (a
/// responsive window answers `WM_GETTEXT` in well under a millisecond).
pub const MESSAGE_TIMEOUT: Duration = Duration::from_millis(1_000);

/// An `HWND` from its value.
pub fn hwnd(v: usize) -> HWND {
    HWND(v as *mut core::ffi::c_void)
}

/// The value of an `HWND`.
pub fn val(h: HWND) -> usize {
    h.0 as usize
}

/// Asks for per-monitor DPI awareness (v2, else the system-wide kind), so that
/// window rectangles and input coordinates are physical pixels. Once per process;
/// failure (already set, or an older system) is harmless and ignored.
pub fn make_dpi_aware() {
    use windows::Win32::UI::HiDpi::{
        DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2, SetProcessDpiAwarenessContext,
    };
    unsafe {
        if SetProcessDpiAwarenessContext(DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2).is_err() {
            let _ = SetProcessDPIAware();
        }
    }
}

/// Sends a message with a timeout. `None` when the window did not answer in time
/// or is gone.
pub fn send(h: HWND, msg: u32, wp: usize, lp: isize) -> Option<isize> {
    let mut result = 0usize;
    let ok = unsafe {
        SendMessageTimeoutW(
            h,
            msg,
            WPARAM(wp),
            LPARAM(lp),
            SMTO_ABORTIFHUNG | SMTO_BLOCK,
            MESSAGE_TIMEOUT.as_millis() as u32,
            Some(&mut result),
        )
    };
    (ok.0 != 0).then_some(result as isize)
}

/// [`send`], or `COMPUTER_NOT_RESPONDING` naming the message.
pub fn send_or_fail(h: HWND, msg: u32, wp: usize, lp: isize, what: &str) -> Result<isize> {
    send(h, msg, wp, lp).ok_or_else(|| not_responding(what))
}

/// `COMPUTER_NOT_RESPONDING` for a message the window did not answer.
pub fn not_responding(what: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::NotResponding,
        format!(
            "the window did not answer {what} within {} ms (hung, or gone); wait and try again",
            MESSAGE_TIMEOUT.as_millis()
        ),
    )
}

/// Posts a message (no wait). Errors: `COMPUTER_ELEMENT_NOT_FOUND` when the window is gone.
pub fn post(h: HWND, msg: u32, wp: usize, lp: isize) -> Result<()> {
    unsafe { PostMessageW(Some(h), msg, WPARAM(wp), LPARAM(lp)) }.map_err(|e| {
        ComputerError::new(
            ErrorCode::ElementNotFound,
            format!("the window is gone ({e})"),
        )
    })
}

/// The window exists.
pub fn alive(h: HWND) -> bool {
    unsafe { IsWindow(Some(h)) }.as_bool()
}

/// The window's class name.
pub fn class_name(h: HWND) -> String {
    let mut buf = [0u16; 256];
    let n = unsafe { GetClassNameW(h, &mut buf) };
    String::from_utf16_lossy(&buf[..n.max(0) as usize])
}

/// `GWL_STYLE` of the window.
pub fn style(h: HWND) -> u32 {
    unsafe { GetWindowLongW(h, GWL_STYLE) as u32 }
}

/// The control id (`GWLP_ID`).
pub fn control_id(h: HWND) -> i32 {
    unsafe { GetWindowLongW(h, GWL_ID) }
}

/// `GetWindowRect`, screen pixels.
pub fn rect(h: HWND) -> Bounds {
    let mut r = RECT::default();
    let _ = unsafe { GetWindowRect(h, &mut r) };
    to_bounds(&r)
}

/// A `RECT` (left, top, right, bottom) as [`Bounds`] (x, y, width, height).
pub fn to_bounds(r: &RECT) -> Bounds {
    Bounds::new(
        r.left,
        r.top,
        (r.right - r.left).max(0),
        (r.bottom - r.top).max(0),
    )
}

/// A client-area rectangle of `h` as screen pixels.
pub fn client_to_screen(h: HWND, r: &RECT) -> Bounds {
    let mut p = POINT {
        x: r.left,
        y: r.top,
    };
    let _ = unsafe { ClientToScreen(h, &mut p) };
    Bounds::new(
        p.x,
        p.y,
        (r.right - r.left).max(0),
        (r.bottom - r.top).max(0),
    )
}

/// The window's text through `WM_GETTEXT` (works across processes), at most `cap`
/// UTF-16 units; with its whole length. `None` when the window did not answer.
pub fn text(h: HWND, cap: usize) -> Option<(String, usize)> {
    let len = send(h, WM_GETTEXTLENGTH, 0, 0)?.max(0) as usize;
    if len == 0 {
        return Some((String::new(), 0));
    }
    let n = len.min(cap) + 1;
    let mut buf = vec![0u16; n];
    let got = send(h, WM_GETTEXT, n, buf.as_mut_ptr() as isize)?.max(0) as usize;
    Some((String::from_utf16_lossy(&buf[..got.min(n)]), len))
}

/// Owning process id and thread id.
pub fn process_thread(h: HWND) -> (u32, u32) {
    let mut pid = 0;
    let tid = unsafe { GetWindowThreadProcessId(h, Some(&mut pid)) };
    (pid, tid)
}

/// The thread's focus window and whether it is in a menu loop.
pub fn thread_focus(tid: u32) -> (Option<HWND>, bool) {
    let mut info = GUITHREADINFO {
        cbSize: size_of::<GUITHREADINFO>() as u32,
        ..Default::default()
    };
    if unsafe { GetGUIThreadInfo(tid, &mut info) }.is_err() {
        return (None, false);
    }
    let focus = (!info.hwndFocus.is_invalid()).then_some(info.hwndFocus);
    (focus, info.flags.0 & GUI_INMENUMODE.0 != 0)
}

/// The direct child windows of `h` in Z order: at most `cap`, and how many exist.
pub fn children(h: HWND, cap: usize) -> (Vec<HWND>, u64) {
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut c = unsafe { GetWindow(h, GW_CHILD) }.ok();
    while let Some(ch) = c {
        total += 1;
        if out.len() < cap {
            out.push(ch);
        }
        if total > 100_000 {
            break;
        }
        c = unsafe { GetWindow(ch, GW_HWNDNEXT) }.ok();
    }
    (out, total)
}

/// The executable file name of a process (`notepad.exe`), when it can be opened.
pub fn process_name(pid: u32) -> Option<String> {
    use windows::Win32::Foundation::CloseHandle;
    use windows::Win32::System::Threading::{
        OpenProcess, PROCESS_NAME_WIN32, PROCESS_QUERY_LIMITED_INFORMATION,
        QueryFullProcessImageNameW,
    };
    unsafe {
        let p = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, false, pid).ok()?;
        let mut buf = [0u16; 1024];
        let mut len = buf.len() as u32;
        let r = QueryFullProcessImageNameW(
            p,
            PROCESS_NAME_WIN32,
            windows::core::PWSTR(buf.as_mut_ptr()),
            &mut len,
        );
        let _ = CloseHandle(p);
        r.ok()?;
        let path = String::from_utf16_lossy(&buf[..len as usize]);
        path.rsplit(['\\', '/']).next().map(str::to_owned)
    }
}

/// A `VT_I4` variant (an MSAA child id).
pub fn variant_i4(v: i32) -> VARIANT {
    let mut var = VARIANT::default();
    unsafe {
        (*var.Anonymous.Anonymous).vt = VT_I4;
        (*var.Anonymous.Anonymous).Anonymous.lVal = v;
    }
    var
}

fn variant_int(v: &VARIANT) -> Option<i32> {
    unsafe {
        let inner = &v.Anonymous.Anonymous;
        (inner.vt == VT_I4).then_some(inner.Anonymous.lVal)
    }
}

/// The MSAA object of a window's client area (`OBJID_CLIENT`).
pub fn accessible(h: HWND) -> Option<IAccessible> {
    let mut p: *mut core::ffi::c_void = std::ptr::null_mut();
    unsafe { AccessibleObjectFromWindow(h, OBJID_CLIENT.0 as u32, &IAccessible::IID, &mut p) }
        .ok()?;
    (!p.is_null()).then(|| unsafe { IAccessible::from_raw(p) })
}

/// Reads name, role, state, value, default action and location of the object
/// itself (`CHILDID_SELF`); each call that fails leaves its field `None`.
pub fn msaa_facts(acc: &IAccessible) -> MsaaFacts {
    let me = variant_i4(0);
    unsafe {
        let (mut l, mut t, mut w, mut hh) = (0, 0, 0, 0);
        MsaaFacts {
            name: acc.get_accName(&me).ok().map(|b| b.to_string()),
            role: acc.get_accRole(&me).ok().as_ref().and_then(variant_int),
            state: acc
                .get_accState(&me)
                .ok()
                .as_ref()
                .and_then(variant_int)
                .map(|s| s as u32),
            value: acc.get_accValue(&me).ok().map(|b| b.to_string()),
            default_action: acc.get_accDefaultAction(&me).ok().map(|b| b.to_string()),
            location: acc
                .accLocation(&mut l, &mut t, &mut w, &mut hh, &me)
                .ok()
                .map(|_| Bounds::new(l, t, w, hh)),
        }
    }
}

/// `accDoDefaultAction` on the object itself.
pub fn msaa_default_action(acc: &IAccessible) -> windows::core::Result<()> {
    unsafe { acc.accDoDefaultAction(&variant_i4(0)) }
}

/// `put_accValue` on the object itself.
pub fn msaa_set_value(acc: &IAccessible, v: &str) -> windows::core::Result<()> {
    unsafe { acc.put_accValue(&variant_i4(0), &BSTR::from(v)) }
}

/// An HRESULT in the form messages show (`0x80004001`).
pub fn hr(e: &windows::core::Error) -> String {
    format!("{:#010x}", e.code().0 as u32)
}

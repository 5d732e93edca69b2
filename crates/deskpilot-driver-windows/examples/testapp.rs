//! The Win32 test application the Windows driver's tests drive (docs/ARCHITECTURE.md
//! §6b): one window with a menu bar (File: New, Open…, Exit; Help: About), a push
//! button, a check box, a labelled edit, a list box and a drop-down combo box, all
//! standard USER32 controls.
//!
//! It is the tests' oracle: every effect a user could cause is printed to stdout as
//! one line, flushed at once — `button: Press me`, `checkbox: checked`,
//! `edit: <text>`, `list: Banana`, `combo: Green`, `menu: New`. It never reads
//! anything from its input. Off Windows it only says that it runs on Windows.

#[cfg(not(windows))]
fn main() {
    eprintln!("testapp is a Win32 program: run it on Windows or under Wine");
}

#[cfg(windows)]
fn main() {
    app::main();
}

#[cfg(windows)]
mod app {
    use std::io::Write;

    use windows::Win32::Foundation::{HWND, LPARAM, LRESULT, WPARAM};
    use windows::Win32::Graphics::Gdi::{COLOR_BTNFACE, HBRUSH};
    use windows::Win32::System::LibraryLoader::GetModuleHandleW;
    use windows::Win32::UI::WindowsAndMessaging::*;
    use windows::core::{PCWSTR, w};

    const ID_BUTTON: i32 = 1001;
    const ID_CHECK: i32 = 1002;
    const ID_EDIT: i32 = 1003;
    const ID_LIST: i32 = 1004;
    const ID_COMBO: i32 = 1005;
    const ID_NEW: usize = 101;
    const ID_OPEN: usize = 102;
    const ID_EXIT: usize = 103;
    const ID_ABOUT: usize = 201;

    /// The list box's and the combo box's items, in order.
    const FRUITS: [&str; 3] = ["Apple", "Banana", "Cherry"];
    const COLOURS: [&str; 3] = ["Red", "Green", "Blue"];

    fn say(line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn wide(s: &str) -> Vec<u16> {
        s.encode_utf16().chain(std::iter::once(0)).collect()
    }

    fn control(
        parent: HWND,
        class: PCWSTR,
        text: &str,
        style: u32,
        rect: (i32, i32, i32, i32),
        id: i32,
    ) -> HWND {
        let text = wide(text);
        unsafe {
            CreateWindowExW(
                WINDOW_EX_STYLE(0),
                class,
                PCWSTR(text.as_ptr()),
                WINDOW_STYLE(style) | WS_CHILD | WS_VISIBLE | WS_TABSTOP,
                rect.0,
                rect.1,
                rect.2,
                rect.3,
                Some(parent),
                Some(HMENU(id as isize as *mut _)),
                None,
                None,
            )
            .expect("CreateWindowExW of a control")
        }
    }

    fn text_of(h: HWND) -> String {
        let mut buf = [0u16; 512];
        let n = unsafe { GetWindowTextW(h, &mut buf) };
        String::from_utf16_lossy(&buf[..n.max(0) as usize])
    }

    fn item_text(h: HWND, get: u32, index: usize) -> String {
        let mut buf = [0u16; 256];
        let n = unsafe {
            SendMessageW(
                h,
                get,
                Some(WPARAM(index)),
                Some(LPARAM(buf.as_mut_ptr() as isize)),
            )
        };
        String::from_utf16_lossy(&buf[..(n.0.max(0) as usize).min(buf.len())])
    }

    extern "system" fn wndproc(hwnd: HWND, msg: u32, wp: WPARAM, lp: LPARAM) -> LRESULT {
        match msg {
            WM_CREATE => {
                build(hwnd);
                LRESULT(0)
            }
            WM_COMMAND => {
                let id = wp.0 & 0xffff;
                let code = (wp.0 >> 16) as u32;
                let from = HWND(lp.0 as *mut _);
                match (id as i32, code) {
                    (ID_BUTTON, BN_CLICKED) => say("button: Press me"),
                    (ID_CHECK, BN_CLICKED) => {
                        let on = unsafe { SendMessageW(from, BM_GETCHECK, None, None) }.0 == 1;
                        say(if on {
                            "checkbox: checked"
                        } else {
                            "checkbox: unchecked"
                        });
                    }
                    (ID_EDIT, EN_CHANGE) => say(&format!("edit: {}", text_of(from))),
                    (ID_LIST, LBN_SELCHANGE) => {
                        let i = unsafe { SendMessageW(from, LB_GETCURSEL, None, None) }.0;
                        if i >= 0 {
                            say(&format!(
                                "list: {}",
                                item_text(from, LB_GETTEXT, i as usize)
                            ));
                        }
                    }
                    (ID_COMBO, CBN_SELCHANGE) => {
                        let i = unsafe { SendMessageW(from, CB_GETCURSEL, None, None) }.0;
                        if i >= 0 {
                            say(&format!(
                                "combo: {}",
                                item_text(from, CB_GETLBTEXT, i as usize)
                            ));
                        }
                    }
                    _ if lp.0 == 0 => match id {
                        ID_NEW => say("menu: New"),
                        ID_OPEN => say("menu: Open"),
                        ID_ABOUT => say("menu: About"),
                        ID_EXIT => {
                            say("menu: Exit");
                            unsafe {
                                let _ = DestroyWindow(hwnd);
                            }
                        }
                        _ => {}
                    },
                    _ => {}
                }
                LRESULT(0)
            }
            WM_DESTROY => {
                unsafe { PostQuitMessage(0) };
                LRESULT(0)
            }
            _ => unsafe { DefWindowProcW(hwnd, msg, wp, lp) },
        }
    }

    fn build(hwnd: HWND) {
        const BS_PUSHBUTTON: u32 = 0;
        const BS_AUTOCHECKBOX: u32 = 3;
        const ES_AUTOHSCROLL: u32 = 0x80;
        const LBS_NOTIFY: u32 = 1;
        const CBS_DROPDOWNLIST: u32 = 3;
        control(
            hwnd,
            w!("BUTTON"),
            "Press me",
            BS_PUSHBUTTON,
            (12, 12, 110, 28),
            ID_BUTTON,
        );
        control(
            hwnd,
            w!("BUTTON"),
            "Remember me",
            BS_AUTOCHECKBOX,
            (140, 12, 140, 28),
            ID_CHECK,
        );
        control(hwnd, w!("STATIC"), "Name:", 0, (12, 56, 60, 22), 0);
        control(
            hwnd,
            w!("EDIT"),
            "",
            WS_BORDER.0 | ES_AUTOHSCROLL,
            (76, 54, 220, 24),
            ID_EDIT,
        );
        let list = control(
            hwnd,
            w!("LISTBOX"),
            "",
            WS_BORDER.0 | LBS_NOTIFY,
            (12, 92, 140, 90),
            ID_LIST,
        );
        for f in FRUITS {
            let t = wide(f);
            unsafe { SendMessageW(list, LB_ADDSTRING, None, Some(LPARAM(t.as_ptr() as isize))) };
        }
        let combo = control(
            hwnd,
            w!("COMBOBOX"),
            "",
            CBS_DROPDOWNLIST | WS_VSCROLL.0,
            (170, 92, 140, 120),
            ID_COMBO,
        );
        for c in COLOURS {
            let t = wide(c);
            unsafe { SendMessageW(combo, CB_ADDSTRING, None, Some(LPARAM(t.as_ptr() as isize))) };
        }
    }

    fn menu() -> HMENU {
        unsafe {
            let bar = CreateMenu().expect("CreateMenu");
            let file = CreatePopupMenu().expect("CreatePopupMenu");
            let _ = AppendMenuW(file, MF_STRING, ID_NEW, w!("&New"));
            let _ = AppendMenuW(file, MF_STRING, ID_OPEN, w!("&Open..."));
            let _ = AppendMenuW(file, MF_SEPARATOR, 0, None);
            let _ = AppendMenuW(file, MF_STRING, ID_EXIT, w!("E&xit"));
            let help = CreatePopupMenu().expect("CreatePopupMenu");
            let _ = AppendMenuW(help, MF_STRING, ID_ABOUT, w!("&About"));
            let _ = AppendMenuW(bar, MF_POPUP, file.0 as usize, w!("&File"));
            let _ = AppendMenuW(bar, MF_POPUP, help.0 as usize, w!("&Help"));
            bar
        }
    }

    pub fn main() {
        unsafe {
            let instance = GetModuleHandleW(None).expect("GetModuleHandleW");
            let class = w!("DeskpilotTestApp");
            let wc = WNDCLASSW {
                lpfnWndProc: Some(wndproc),
                hInstance: instance.into(),
                lpszClassName: class,
                hbrBackground: HBRUSH((COLOR_BTNFACE.0 + 1) as isize as *mut _),
                hCursor: LoadCursorW(None, IDC_ARROW).unwrap_or_default(),
                ..Default::default()
            };
            RegisterClassW(&wc);
            let hwnd = CreateWindowExW(
                WINDOW_EX_STYLE(0),
                class,
                w!("deskpilot test app"),
                WS_OVERLAPPEDWINDOW | WS_VISIBLE,
                100,
                100,
                360,
                280,
                None,
                Some(menu()),
                Some(instance.into()),
                None,
            )
            .expect("CreateWindowExW of the main window");
            let _ = ShowWindow(hwnd, SW_SHOW);
            say("ready");
            let mut msg = MSG::default();
            while GetMessageW(&mut msg, None, 0, 0).as_bool() {
                if !IsDialogMessageW(hwnd, &msg).as_bool() {
                    let _ = TranslateMessage(&msg);
                    DispatchMessageW(&msg);
                }
            }
        }
    }
}

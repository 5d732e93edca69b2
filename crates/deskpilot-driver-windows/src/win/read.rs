//! Reading top-level windows and their controls (docs/ARCHITECTURE.md §6b, "Reading").
//!
//! Runs on the worker thread. A window is read as its child windows in Z order
//! (USER32), each with its MSAA client object's name, role, state, value and default
//! action, plus what MSAA leaves out under Wine: the items of list boxes and combo
//! boxes (`LB_GETTEXT`, `CB_GETLBTEXT`) and the menu bar (`GetMenu`; Wine 8.0 cannot
//! read another process's menu, which the tree says). Bounded: children per node,
//! nodes per read, characters per text, each message by its timeout. It never acts.

use deskpilot_core::Bounds;
use windows::Win32::Foundation::{HWND, LPARAM, RECT};
use windows::Win32::UI::WindowsAndMessaging::*;
use windows::core::BOOL;

use super::sys;
use crate::facts::{ControlFacts, ItemFacts, ItemList, MenuItemFacts, WindowFacts, menu_text};

/// Limits of one read (the Linux driver's defaults, docs/ARCHITECTURE.md §1.5).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Children taken per window, and items per list: 500.
    pub child_cap: usize,
    /// Windows and items read in all: 5,000.
    pub max_nodes: usize,
    /// UTF-16 units of text per control: 2,000.
    pub text_cap: usize,
    /// Levels of child windows below the top-level: 32.
    pub depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            child_cap: 500,
            max_nodes: 5_000,
            text_cap: 2_000,
            depth: 32,
        }
    }
}

/// One top-level window as `windows.list` shows it.
#[derive(Debug, Clone)]
pub struct TopLevel {
    pub hwnd: usize,
    pub pid: u32,
    pub class: String,
    pub title: String,
    pub rect: Bounds,
    pub active: bool,
    /// `IsHungAppWindow`: the window's thread has not taken messages for 5 s.
    pub hung: bool,
}

/// Every visible top-level window with an area, in Z order (front first), except
/// those of this process and Wine's desktop shell.
pub fn top_levels() -> Vec<TopLevel> {
    let mut all: Vec<HWND> = Vec::new();
    unsafe extern "system" fn each(h: HWND, l: LPARAM) -> BOOL {
        let v = unsafe { &mut *(l.0 as *mut Vec<HWND>) };
        if v.len() < 10_000 {
            v.push(h);
        }
        BOOL(1)
    }
    unsafe {
        let _ = EnumWindows(Some(each), LPARAM(&mut all as *mut _ as isize));
    }
    let me = std::process::id();
    let fg = unsafe { GetForegroundWindow() };
    all.into_iter()
        .filter(|h| unsafe { IsWindowVisible(*h) }.as_bool())
        .filter_map(|h| {
            let (pid, _) = sys::process_thread(h);
            let rect = sys::rect(h);
            let class = sys::class_name(h);
            if pid == me
                || rect.is_empty()
                || class == "Shell_TrayWnd"
                || class == "Progman"
                || class == "#32768"
            {
                return None;
            }
            let title = sys::text(h, 512).map(|t| t.0).unwrap_or_default();
            Some(TopLevel {
                hwnd: sys::val(h),
                pid,
                class,
                title,
                rect,
                active: h == fg,
                hung: unsafe { IsHungAppWindow(h) }.as_bool(),
            })
        })
        .collect()
}

/// Reads the window `top` whole.
pub fn read_window(top: HWND, limits: Limits) -> WindowFacts {
    let (_, tid) = sys::process_thread(top);
    let (focus, in_menu) = sys::thread_focus(tid);
    let mut budget = limits.max_nodes;
    let (kids, total) = sys::children(top, limits.child_cap);
    let class = sys::class_name(top);
    let (menu, menu_unreadable) = read_menu(top);
    let children = kids
        .into_iter()
        .filter_map(|k| read_control(k, focus, limits, 1, &mut budget))
        .collect();
    WindowFacts {
        hwnd: sys::val(top),
        title: sys::text(top, 512).map(|t| t.0).unwrap_or_default(),
        style: sys::style(top),
        rect: sys::rect(top),
        active: unsafe { GetForegroundWindow() } == top,
        in_menu,
        msaa: sys::accessible(top).map(|a| sys::msaa_facts(&a)),
        menu,
        menu_unreadable,
        children,
        children_total: total,
        class,
    }
}

/// One control and, within the limits, what is inside it. `None` once the node
/// budget is spent (the caller's count of children says what was left).
pub fn read_control(
    h: HWND,
    focus: Option<HWND>,
    limits: Limits,
    depth: usize,
    budget: &mut usize,
) -> Option<ControlFacts> {
    if *budget == 0 {
        return None;
    }
    *budget -= 1;
    let class = sys::class_name(h);
    let style = sys::style(h);
    let (text, len) = sys::text(h, limits.text_cap).unwrap_or_default();
    let lower = class.to_ascii_lowercase();
    let checked = (lower == "button" && matches!(style & 0x0f, 2..=6 | 9))
        .then(|| sys::send(h, BM_GETCHECK, 0, 0).unwrap_or(0) as u32);
    let items = match lower.as_str() {
        "listbox" => Some(read_items(h, false, limits.child_cap.min(*budget))),
        "combobox" => Some(read_items(h, true, limits.child_cap.min(*budget))),
        _ => None,
    };
    if let Some(l) = &items {
        *budget = budget.saturating_sub(l.items.len());
    }
    let (kids, total) = if depth < limits.depth {
        sys::children(h, limits.child_cap)
    } else {
        (Vec::new(), sys::children(h, 0).1)
    };
    let children = kids
        .into_iter()
        .filter_map(|k| read_control(k, focus, limits, depth + 1, budget))
        .collect();
    Some(ControlFacts {
        hwnd: sys::val(h),
        text_length: (len > text.encode_utf16().count()).then_some(len as u64),
        text,
        style,
        rect: sys::rect(h),
        focused: focus == Some(h),
        checked,
        msaa: sys::accessible(h).map(|a| sys::msaa_facts(&a)),
        items,
        children,
        children_total: total,
        class,
    })
}

/// The items of a list box (`LB_*`) or combo box (`CB_*`), at most `cap`.
fn read_items(h: HWND, combo: bool, cap: usize) -> ItemList {
    let (count, get_len, get_text, cur) = if combo {
        (CB_GETCOUNT, CB_GETLBTEXTLEN, CB_GETLBTEXT, CB_GETCURSEL)
    } else {
        (LB_GETCOUNT, LB_GETTEXTLEN, LB_GETTEXT, LB_GETCURSEL)
    };
    let total = sys::send(h, count, 0, 0).unwrap_or(0).max(0) as u64;
    let current = sys::send(h, cur, 0, 0).unwrap_or(-1);
    let dropped = combo && sys::send(h, CB_GETDROPPEDSTATE, 0, 0).unwrap_or(0) != 0;
    let mut items = Vec::new();
    for i in 0..(total as usize).min(cap) {
        let len = sys::send(h, get_len, i, 0).unwrap_or(0).clamp(0, 4_096) as usize;
        let mut buf = vec![0u16; len + 1];
        let got = sys::send(h, get_text, i, buf.as_mut_ptr() as isize)
            .unwrap_or(0)
            .max(0) as usize;
        let selected = if combo || (sys::style(h) & 0x808) == 0 {
            current == i as isize
        } else {
            sys::send(h, LB_GETSEL, i, 0).unwrap_or(0) > 0
        };
        let bounds = (!combo)
            .then(|| {
                let mut r = RECT::default();
                let ok = sys::send(h, LB_GETITEMRECT, i, &mut r as *mut RECT as isize)
                    .unwrap_or(-1)
                    != -1;
                let mut client = RECT::default();
                let _ = unsafe { GetClientRect(h, &mut client) };
                (ok && r.bottom > 0 && r.top < client.bottom).then(|| sys::client_to_screen(h, &r))
            })
            .flatten();
        items.push(ItemFacts {
            index: i as u32,
            text: String::from_utf16_lossy(&buf[..got.min(len)]),
            selected,
            bounds,
        });
    }
    ItemList {
        total,
        items,
        hidden: combo && !dropped,
    }
}

/// The menu bar's items with their submenus; `(None, true)` when the window has a
/// menu this process cannot read (another process's menu under Wine 8.0).
fn read_menu(top: HWND) -> (Option<Vec<MenuItemFacts>>, bool) {
    let m = unsafe { GetMenu(top) };
    if m.is_invalid() {
        return (None, false);
    }
    match read_menu_items(top, m, &[], 0) {
        Some(items) => (Some(items), false),
        None => (None, true),
    }
}

fn read_menu_items(top: HWND, m: HMENU, path: &[u32], depth: usize) -> Option<Vec<MenuItemFacts>> {
    let n = unsafe { GetMenuItemCount(Some(m)) };
    if n < 0 {
        return None;
    }
    let mut out = Vec::new();
    for i in 0..n.min(200) {
        let mut p = path.to_vec();
        p.push(i as u32);
        let mut buf = [0u16; 256];
        let len =
            unsafe { GetMenuStringW(m, i as u32, Some(&mut buf), MF_BYPOSITION) }.max(0) as usize;
        let raw = String::from_utf16_lossy(&buf[..len]);
        let state = unsafe { GetMenuState(m, i as u32, MF_BYPOSITION) };
        let sub = unsafe { GetSubMenu(m, i) };
        let mut r = RECT::default();
        let shown =
            unsafe { GetMenuItemRect(Some(top), m, i as u32, &mut r) }.is_ok() && r.right > r.left;
        out.push(MenuItemFacts {
            path: p.clone(),
            text: menu_text(&raw),
            raw_text: raw,
            id: unsafe { GetMenuItemID(m, i) },
            separator: state & MF_SEPARATOR.0 != 0,
            disabled: state & (MF_GRAYED.0 | MF_DISABLED.0) != 0,
            checked: state & MF_CHECKED.0 != 0,
            hilite: state & MF_HILITE.0 != 0,
            bounds: shown.then(|| sys::to_bounds(&r)),
            submenu: (!sub.is_invalid() && depth < 4)
                .then(|| read_menu_items(top, sub, &p, depth + 1))
                .flatten(),
        });
    }
    Some(out)
}

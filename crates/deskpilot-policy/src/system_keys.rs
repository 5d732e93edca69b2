//! Desktop shortcuts: chords the window manager, the X server or the session take
//! instead of the app with the focus (docs/ARCHITECTURE.md §7.18). Pressed through
//! deskpilot they would act outside the bound window — switch to a text console,
//! end the session, open a run dialog or a terminal, move the focus to another
//! window — so the host refuses them unless the user turned `system_keys` on.
//!
//! The rules, on keysyms as the driver presses them (every spelling folded by
//! [`deskpilot_protocol::keys`]):
//! - any chord with Super, Meta or Hyper (alone or with other keys: the desktop's
//!   own shortcuts);
//! - power, session, media and launcher keys (the `XF86…` keysyms), `Print`,
//!   `Sys_Req`, `Terminate_Server`;
//! - Ctrl+Alt with Delete, BackSpace, a function key, an arrow, Home/End/Page keys,
//!   Tab, Escape, `t` (a terminal in GNOME, Xfce, Cinnamon), `l` (lock), `d` (show
//!   the desktop); Ctrl+Alt+Shift+R (GNOME's screen recording);
//! - Alt with Tab, Escape or grave (switch windows), F1, F2, F3 (menus and run
//!   dialogs), F7, F8, F10 (move, resize, maximize) or space (the window menu);
//!   Shift+Alt with an arrow, Home/End/Page key (Openbox and others send the window
//!   to another workspace);
//! - Ctrl+Escape (the applications menu).
//!
//! Ordinary app shortcuts stay ordinary keys: `ctrl+c`, `ctrl+v`, `ctrl+s`,
//! `alt+f`, `alt+F4` (keys go to the bound window, so it closes that window).

use deskpilot_protocol::keys::{Keysym, keysym, parse_chords};

const CONTROL: [Keysym; 2] = [0xffe3, 0xffe4];
const ALT: [Keysym; 2] = [0xffe9, 0xffea];
const SHIFT: [Keysym; 2] = [0xffe1, 0xffe2];
/// Meta_L, Meta_R, Super_L, Super_R, Hyper_L, Hyper_R.
const SUPER: [Keysym; 6] = [0xffe7, 0xffe8, 0xffeb, 0xffec, 0xffed, 0xffee];

const DELETE: Keysym = 0xffff;
const KP_DELETE: Keysym = 0xff9f;
const BACKSPACE: Keysym = 0xff08;
const TAB: Keysym = 0xff09;
const ISO_LEFT_TAB: Keysym = 0xfe20;
const ESCAPE: Keysym = 0xff1b;
const SPACE: Keysym = 0x20;
const GRAVE: Keysym = 0x60;
const PRINT: Keysym = 0xff61;
const SYS_REQ: Keysym = 0xff15;
const TERMINATE_SERVER: Keysym = 0xfed5;
/// F1 (0xffbe) through F35 (0xffe0).
const F1: Keysym = 0xffbe;
const F35: Keysym = 0xffe0;
/// Home, Left, Up, Right, Down, Page_Up, Page_Down, End (0xff50–0xff57) and their
/// keypad forms (0xff95–0xff9c).
fn navigation(k: Keysym) -> bool {
    (0xff50..=0xff57).contains(&k) || (0xff95..=0xff9c).contains(&k)
}
/// The vendor keysyms (`XF86PowerOff`, `XF86Switch_VT_1`, `XF86Terminal`, …).
fn xf86(k: Keysym) -> bool {
    (0x1008_fe00..=0x1008_ffff).contains(&k)
}
fn function(k: Keysym) -> Option<u32> {
    (F1..=F35).contains(&k).then(|| k - F1 + 1)
}
fn letter(k: Keysym, c: char) -> bool {
    k == c as Keysym || k == c.to_ascii_uppercase() as Keysym
}

/// Why the chords of `chords` (space-separated, as `deskpilot keys` takes them) hold
/// a desktop shortcut, naming the first one (`"ctrl+alt+F1 switches to a text
/// console"`); `None` when every chord is an ordinary key for the app. A string that
/// does not parse is `None`: the driver refuses it before any key is pressed.
pub fn system_chord(chords: &str) -> Option<String> {
    let parsed = parse_chords(chords).ok()?;
    parsed.iter().find_map(|c| {
        let keys: Vec<Keysym> = c.keys.iter().copied().map(keysym::canonical).collect();
        judge(&keys).map(|why| format!("{} {why}", c.text))
    })
}

fn judge(keys: &[Keysym]) -> Option<&'static str> {
    let has = |set: &[Keysym]| keys.iter().any(|k| set.contains(k));
    if has(&SUPER) {
        return Some("is a desktop shortcut (Super, Meta and Hyper belong to the desktop)");
    }
    if keys.iter().any(|&k| xf86(k)) {
        return Some("is a power, session, media or launcher key");
    }
    if keys
        .iter()
        .any(|&k| k == PRINT || k == SYS_REQ || k == TERMINATE_SERVER)
    {
        return Some(
            "is taken by the desktop or the X server (screenshots, SysRq, ending the server)",
        );
    }
    let (ctrl, alt, shift) = (has(&CONTROL), has(&ALT), has(&SHIFT));
    let others: Vec<Keysym> = keys
        .iter()
        .copied()
        .filter(|k| !CONTROL.contains(k) && !ALT.contains(k) && !SHIFT.contains(k))
        .collect();
    let any = |f: &dyn Fn(Keysym) -> bool| others.iter().any(|&k| f(k));
    if ctrl && alt {
        if any(&|k| k == DELETE || k == KP_DELETE) {
            return Some("opens the session's log-out or restart dialog");
        }
        if any(&|k| k == BACKSPACE) {
            return Some("may end the X server and every app on it");
        }
        if any(&|k| function(k).is_some()) {
            return Some("switches to a text console");
        }
        if any(&|k| navigation(k) || k == TAB || k == ISO_LEFT_TAB) {
            return Some("switches workspaces or windows");
        }
        if any(&|k| k == ESCAPE) {
            return Some("is the desktop's kill-a-window or switch shortcut");
        }
        if any(&|k| letter(k, 't')) {
            return Some("opens a terminal on most desktops");
        }
        if any(&|k| letter(k, 'l')) {
            return Some("locks the screen");
        }
        if any(&|k| letter(k, 'd')) {
            return Some("shows the desktop");
        }
        if shift && any(&|k| letter(k, 'r')) {
            return Some("starts or stops the desktop's screen recording");
        }
        return None;
    }
    if alt && !ctrl {
        if any(&|k| k == TAB || k == ISO_LEFT_TAB || k == ESCAPE || k == GRAVE) {
            return Some("switches to another window");
        }
        if any(&|k| matches!(function(k), Some(1..=3))) {
            return Some("opens the desktop's menu or run dialog");
        }
        if any(&|k| matches!(function(k), Some(7 | 8 | 10))) {
            return Some("moves, resizes or maximizes the window through the window manager");
        }
        if any(&|k| k == SPACE) {
            return Some("opens the window manager's window menu");
        }
        if shift && any(&|k| navigation(k)) {
            return Some("sends the window to another workspace through the window manager");
        }
        return None;
    }
    if ctrl && any(&|k| k == ESCAPE) {
        return Some("opens the desktop's applications menu");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desktop_shortcuts_are_named_in_every_spelling() {
        for (chord, says) in [
            ("ctrl+alt+Delete", "log-out"),
            ("control+alt+KP_Delete", "log-out"),
            ("ctrl+alt+BackSpace", "X server"),
            ("ctrl+alt+F1", "text console"),
            ("alt+ctrl+F12", "text console"),
            ("ctrl+alt+0xffbe", "text console"),
            ("ctrl+alt+Left", "workspaces"),
            ("ctrl+alt+Tab", "workspaces"),
            ("ctrl+alt+t", "terminal"),
            ("ctrl+alt+T", "terminal"),
            ("ctrl+alt+l", "locks"),
            ("ctrl+alt+Escape", "kill-a-window"),
            ("super", "desktop shortcut"),
            ("Super_L", "desktop shortcut"),
            ("super+e", "desktop shortcut"),
            ("meta", "desktop shortcut"),
            ("Hyper_R", "desktop shortcut"),
            ("alt+Tab", "another window"),
            ("alt+shift+Tab", "another window"),
            ("alt+Escape", "another window"),
            ("alt+grave", "another window"),
            ("alt+F2", "run dialog"),
            ("alt+F1", "menu"),
            ("alt+F8", "resizes"),
            ("alt+space", "window menu"),
            ("ctrl+Escape", "applications menu"),
            ("Print", "screenshots"),
            ("alt+Print", "screenshots"),
            ("0xfed5", "X server"),
            ("0x1008ff2a", "power"),
            ("ctrl+alt+0x1008fe02", "power"),
            ("ctrl+alt+shift+r", "screen recording"),
            ("shift+ctrl+alt+R", "screen recording"),
            ("ctrl+alt+shift+Left", "workspaces"),
            ("ctrl+alt+F5", "text console"),
            ("shift+alt+Left", "another workspace"),
            ("alt+shift+KP_Up", "another workspace"),
            ("alt+shift+End", "another workspace"),
            ("super+shift+a", "desktop shortcut"),
            ("super+Left", "desktop shortcut"),
        ] {
            let why = system_chord(chord).unwrap_or_else(|| panic!("{chord} is let through"));
            assert!(why.contains(says), "{chord}: {why}");
        }
    }

    #[test]
    fn app_shortcuts_stay_ordinary_keys() {
        for chord in [
            "ctrl+c",
            "ctrl+v",
            "ctrl+s",
            "ctrl+shift+s",
            "alt+f",
            "alt+F4",
            "F1",
            "F10",
            "Return",
            "Tab",
            "shift+Tab",
            "Escape",
            "ctrl+alt+shift+v",
            "Delete",
            "ctrl+Delete",
            "ctrl+Left",
            "alt+Left",
            "shift+Left",
            "ctrl+shift+r",
            "alt+shift+r",
            "a b c",
        ] {
            assert_eq!(system_chord(chord), None, "{chord}");
        }
    }

    #[test]
    fn one_shortcut_in_a_sequence_is_named() {
        let why = system_chord("ctrl+a ctrl+c alt+Tab ctrl+v").expect("refused");
        assert!(why.starts_with("alt+Tab "), "{why}");
        assert_eq!(system_chord("not+a+key+at+all"), None);
    }
}

//! XTest input against a real X server: each test starts its own Xvfb (and, where
//! needed, openbox and a real GTK app, `zenity --entry`). Requires `Xvfb`, `zenity`
//! and `openbox` on PATH; a missing tool fails the test, it never skips.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

use std::io::Read;
use std::process::{Child, Command, Stdio};

use std::time::{Duration, Instant};

use deskpilot_core::Handle;
use deskpilot_driver_linux::input::{SCROLL_NOTCHES, TopLevel, XInput};
use deskpilot_protocol::ErrorCode;
use deskpilot_protocol::types::{PointerAction, PointerParams};
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, PropMode, Window, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

// ---------------------------------------------------------------- helpers

mod xvfb;
use xvfb::{Xvfb, wait_until};

/// A child process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts openbox on `x` and waits until it announces itself (EWMH WM check).
fn start_openbox(x: &Xvfb) -> Proc {
    let child = Command::new("openbox")
        .env("DISPLAY", &x.display)
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/deskpilot-test",
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("openbox must be installed (apt-get install openbox) for these tests");
    let proc_ = Proc(child);
    let conn = x.conn();
    let root = conn.setup().roots[0].root;
    let check = conn
        .intern_atom(false, b"_NET_SUPPORTING_WM_CHECK")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    wait_until(Duration::from_secs(15), "openbox to start", || {
        let p = conn
            .get_property(false, root, check, AtomEnum::WINDOW, 0, 1)
            .unwrap()
            .reply()
            .unwrap();
        p.value32()
            .and_then(|mut v| v.next())
            .is_some_and(|w| w != 0)
    });
    proc_
}

const ENTRY_TITLE: &str = "deskpilot entry test";

/// Starts `zenity --entry` on `x`, stdout piped (zenity prints the entry text on OK).
fn start_zenity(x: &Xvfb) -> Proc {
    let child = Command::new("zenity")
        .args(["--entry", "--title", ENTRY_TITLE, "--text", "Type here"])
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .env("GDK_BACKEND", "x11")
        .env("NO_AT_BRIDGE", "1")
        .env("GTK_IM_MODULE", "gtk-im-context-simple")
        .env("GSETTINGS_BACKEND", "memory")
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/deskpilot-test",
        )
        .env("LC_ALL", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zenity must be installed (apt-get install zenity) for these tests");
    Proc(child)
}

fn find_window(x: &XInput, pid: u32, title: &str) -> TopLevel {
    let mut found = None;
    wait_until(Duration::from_secs(30), "the app window to map", || {
        found = x
            .toplevels()
            .unwrap()
            .into_iter()
            .find(|t| t.pid == Some(pid) && t.title == title);
        found.is_some()
    });
    found.unwrap()
}

/// The whole core keyboard map, for before/after comparison.
fn keyboard_map(conn: &RustConnection) -> (u8, Vec<u32>) {
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let r = conn
        .get_keyboard_mapping(min, max - min + 1)
        .unwrap()
        .reply()
        .unwrap();
    (r.keysyms_per_keycode, r.keysyms)
}

/// The keycode whose first column is `keysym`.
fn keycode_of(conn: &RustConnection, keysym: u32) -> u8 {
    let (per, syms) = keyboard_map(conn);
    let min = conn.setup().min_keycode;
    let i = syms
        .chunks(usize::from(per))
        .position(|row| row[0] == keysym)
        .unwrap_or_else(|| panic!("no keycode for keysym 0x{keysym:x}"));
    min + u8::try_from(i).unwrap()
}

/// A plain top-level window made by the test's own connection, listening for key and
/// pointer events.
fn test_window(
    conn: &RustConnection,
    x: i16,
    y: i16,
    title: &str,
    override_redirect: bool,
) -> Window {
    let screen = &conn.setup().roots[0];
    let win = conn.generate_id().unwrap();
    let aux = CreateWindowAux::new()
        .background_pixel(screen.white_pixel)
        .override_redirect(u32::from(override_redirect))
        .event_mask(
            EventMask::KEY_PRESS
                | EventMask::KEY_RELEASE
                | EventMask::BUTTON_PRESS
                | EventMask::BUTTON_RELEASE
                | EventMask::POINTER_MOTION
                | EventMask::FOCUS_CHANGE,
        );
    conn.create_window(
        screen.root_depth,
        win,
        screen.root,
        x,
        y,
        400,
        300,
        0,
        WindowClass::INPUT_OUTPUT,
        screen.root_visual,
        &aux,
    )
    .unwrap();
    // WM_NAME of type STRING is Latin-1.
    let latin1: Vec<u8> = title
        .chars()
        .map(|c| u8::try_from(u32::from(c)).unwrap())
        .collect();
    conn.change_property8(
        PropMode::REPLACE,
        win,
        AtomEnum::WM_NAME,
        AtomEnum::STRING,
        &latin1,
    )
    .unwrap();
    conn.map_window(win).unwrap();
    conn.sync().unwrap();
    win
}

/// Events on `conn` until `want` of them match `keep`, or 5 s pass.
fn collect_events(conn: &RustConnection, want: usize, keep: impl Fn(&Event) -> bool) -> Vec<Event> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut out = Vec::new();
    while out.len() < want && Instant::now() < deadline {
        match conn.poll_for_event().unwrap() {
            Some(e) if keep(&e) => out.push(e),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    out
}

fn key_events(conn: &RustConnection, want: usize) -> Vec<(bool, u8, u16)> {
    collect_events(conn, want, |e| {
        matches!(e, Event::KeyPress(_) | Event::KeyRelease(_))
    })
    .into_iter()
    .map(|e| match e {
        Event::KeyPress(k) => (true, k.detail, u16::from(k.state)),
        Event::KeyRelease(k) => (false, k.detail, u16::from(k.state)),
        _ => unreachable!(),
    })
    .collect()
}

fn drain(conn: &RustConnection) {
    conn.sync().unwrap();
    while conn.poll_for_event().unwrap().is_some() {}
}

fn pointer_params(action: PointerAction, x: i32, y: i32, to: Option<(i32, i32)>) -> PointerParams {
    PointerParams {
        window: Handle::new("x11:test"),
        action,
        x,
        y,
        to,
    }
}

/// `QueryKeymap` on the test's own connection reports no key down.
fn keys_all_up(conn: &RustConnection) -> bool {
    conn.query_keymap()
        .unwrap()
        .reply()
        .unwrap()
        .keys
        .iter()
        .all(|&b| b == 0)
}

fn no_button_down(conn: &RustConnection) -> bool {
    let root = conn.setup().roots[0].root;
    let mask = u16::from(conn.query_pointer(root).unwrap().reply().unwrap().mask);
    // Button1Mask..Button5Mask are bits 8..12.
    mask & 0x1f00 == 0
}

// ---------------------------------------------------------------- tests

const SHIFT_MASK: u16 = 1;
const CONTROL_MASK: u16 = 4;

#[test]
fn chords_press_the_right_keycodes_in_order() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let win = test_window(&conn, 50, 50, "chords", false);
    x.activate(win).unwrap();
    drain(&conn);

    let ctrl = keycode_of(&conn, 0xffe3);
    let shift = keycode_of(&conn, 0xffe1);
    let s = keycode_of(&conn, 0x73);
    let tab = keycode_of(&conn, 0xff09);
    let left = keycode_of(&conn, 0xff51);
    let ret = keycode_of(&conn, 0xff0d);
    let equal = keycode_of(&conn, 0x3d);

    let sent = x
        .send_chords("ctrl+s shift+Tab ctrl+shift+Left Return ctrl+plus")
        .unwrap();
    assert_eq!(sent, 4 + 4 + 6 + 2 + 6);
    let got = key_events(&conn, 22);
    let expected = vec![
        (true, ctrl, 0),
        (true, s, CONTROL_MASK),
        (false, s, CONTROL_MASK),
        (false, ctrl, CONTROL_MASK),
        (true, shift, 0),
        (true, tab, SHIFT_MASK),
        (false, tab, SHIFT_MASK),
        (false, shift, SHIFT_MASK),
        (true, ctrl, 0),
        (true, shift, CONTROL_MASK),
        (true, left, CONTROL_MASK | SHIFT_MASK),
        (false, left, CONTROL_MASK | SHIFT_MASK),
        (false, shift, CONTROL_MASK | SHIFT_MASK),
        (false, ctrl, CONTROL_MASK),
        (true, ret, 0),
        (false, ret, 0),
        // '+' sits at the Shift level of '=' on the US map: Shift is added.
        (true, ctrl, 0),
        (true, shift, CONTROL_MASK),
        (true, equal, CONTROL_MASK | SHIFT_MASK),
        (false, equal, CONTROL_MASK | SHIFT_MASK),
        (false, shift, CONTROL_MASK | SHIFT_MASK),
        (false, ctrl, CONTROL_MASK),
    ];
    // Compare without the lock/num-lock bits the server may add.
    let got: Vec<_> = got
        .into_iter()
        .map(|(p, k, st)| (p, k, st & 0x0d))
        .collect();
    assert_eq!(got, expected);
    assert!(x.keys_down().unwrap().is_empty());
}

#[test]
fn unknown_key_names_send_nothing() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let win = test_window(&conn, 50, 50, "bad chords", false);
    x.activate(win).unwrap();
    drain(&conn);

    let err = x.send_chords("ctrl+s ctrl+frobnicate").unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("frobnicate"), "{}", err.message);
    let err = x.send_chords("   ").unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    std::thread::sleep(Duration::from_millis(200));
    conn.sync().unwrap();
    let mut events = 0;
    while let Some(e) = conn.poll_for_event().unwrap() {
        if matches!(e, Event::KeyPress(_) | Event::KeyRelease(_)) {
            events += 1;
        }
    }
    assert_eq!(events, 0, "a refused chord list must send no key event");
}

#[test]
fn borrowed_keycode_types_and_is_restored() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let win = test_window(&conn, 50, 50, "borrow", false);
    x.activate(win).unwrap();
    drain(&conn);

    let before = keyboard_map(&conn);
    let (per, syms) = &before;
    let min = conn.setup().min_keycode;
    let spare: Vec<u8> = syms
        .chunks(usize::from(*per))
        .enumerate()
        .filter(|(_, row)| row.iter().all(|&k| k == 0))
        .map(|(i, _)| min + u8::try_from(i).unwrap())
        .collect();
    assert!(
        !spare.is_empty(),
        "Xvfb's default map should have unused keycodes"
    );

    assert_eq!(x.type_text("你").unwrap(), 2);
    let got = key_events(&conn, 2);
    assert_eq!(got.len(), 2);
    assert!(got[0].0 && !got[1].0);
    assert_eq!(got[0].1, got[1].1);
    assert!(
        spare.contains(&got[0].1),
        "typed with keycode {} (spares {spare:?})",
        got[0].1
    );
    assert_eq!(
        keyboard_map(&conn),
        before,
        "borrowed keycode must be restored"
    );
    assert!(x.keys_down().unwrap().is_empty());

    // A control character is refused before anything is sent or remapped.
    let err = x.type_text("ok\u{7}").unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert_eq!(keyboard_map(&conn), before);
    std::thread::sleep(Duration::from_millis(100));
    assert!(key_events(&conn, 1).is_empty());
}

#[test]
fn focus_and_toplevels_of_plain_windows() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    assert_eq!(x.screen_size(), (1280, 800));
    assert_eq!(
        x.focused_toplevel().unwrap(),
        None,
        "fresh Xvfb focuses nothing"
    );

    let a = test_window(&conn, 10, 20, "window A", false);
    let b = test_window(&conn, 500, 300, "window B é", false);
    let _menu = test_window(&conn, 700, 100, "popup", true);
    let hidden = test_window(&conn, 0, 0, "hidden", false);
    conn.unmap_window(hidden).unwrap();
    conn.sync().unwrap();

    let tops = x.toplevels().unwrap();
    let titles: Vec<&str> = tops.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(
        titles,
        vec!["window A", "window B é"],
        "bottom-to-top, no popup, no unmapped"
    );
    let me = std::process::id();
    assert!(
        tops.iter().all(|t| t.pid == Some(me)),
        "pid via X-Resource: {tops:?}"
    );
    assert_eq!(tops[0].xid, a);
    assert_eq!(
        tops[0].bounds,
        deskpilot_core::Bounds::new(10, 20, 400, 300)
    );

    x.activate(b).unwrap();
    let f = x.focused_toplevel().unwrap().unwrap();
    assert_eq!(
        (f.xid, f.title.as_str(), f.pid),
        (b, "window B é", Some(me))
    );
    assert_eq!(f.bounds, deskpilot_core::Bounds::new(500, 300, 400, 300));
    x.activate(a).unwrap();
    assert_eq!(x.focused_toplevel().unwrap().unwrap().xid, a);

    let err = x.activate(hidden).unwrap_err();
    assert_eq!(err.code, ErrorCode::ElementNotActionable);
    let err = x.activate(0x7ff_fff0).unwrap_err();
    assert_eq!(err.code, ErrorCode::ElementNotFound);
}

#[test]
fn pointer_gestures_reach_the_window() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let _win = test_window(&conn, 100, 100, "pointer", false);
    drain(&conn);

    let buttons = |want: usize| -> Vec<(bool, u8, i16, i16)> {
        collect_events(&conn, want, |e| {
            matches!(e, Event::ButtonPress(_) | Event::ButtonRelease(_))
        })
        .into_iter()
        .map(|e| match e {
            Event::ButtonPress(b) => (true, b.detail, b.event_x, b.event_y),
            Event::ButtonRelease(b) => (false, b.detail, b.event_x, b.event_y),
            _ => unreachable!(),
        })
        .collect()
    };

    assert_eq!(
        x.pointer(&pointer_params(PointerAction::Click, 150, 160, None))
            .unwrap(),
        3
    );
    assert_eq!(buttons(2), vec![(true, 1, 50, 60), (false, 1, 50, 60)]);

    assert_eq!(
        x.pointer(&pointer_params(PointerAction::RightClick, 110, 120, None))
            .unwrap(),
        3
    );
    assert_eq!(buttons(2), vec![(true, 3, 10, 20), (false, 3, 10, 20)]);

    assert_eq!(
        x.pointer(&pointer_params(PointerAction::DoubleClick, 200, 200, None))
            .unwrap(),
        5
    );
    assert_eq!(
        buttons(4),
        vec![
            (true, 1, 100, 100),
            (false, 1, 100, 100),
            (true, 1, 100, 100),
            (false, 1, 100, 100)
        ]
    );

    let notches = usize::try_from(SCROLL_NOTCHES).unwrap();
    x.pointer(&pointer_params(PointerAction::ScrollDown, 200, 200, None))
        .unwrap();
    let got = buttons(2 * notches);
    assert_eq!(got.len(), 2 * notches);
    assert!(got.iter().all(|&(_, b, _, _)| b == 5), "{got:?}");
    x.pointer(&pointer_params(PointerAction::ScrollUp, 200, 200, None))
        .unwrap();
    assert!(buttons(2 * notches).iter().all(|&(_, b, _, _)| b == 4));

    drain(&conn);
    x.pointer(&pointer_params(
        PointerAction::Drag,
        120,
        120,
        Some((300, 250)),
    ))
    .unwrap();
    let got = collect_events(&conn, 100, |e| {
        matches!(
            e,
            Event::ButtonPress(_) | Event::ButtonRelease(_) | Event::MotionNotify(_)
        )
    });
    let press = got
        .iter()
        .position(|e| matches!(e, Event::ButtonPress(_)))
        .unwrap();
    let release = got
        .iter()
        .position(|e| matches!(e, Event::ButtonRelease(_)))
        .unwrap();
    assert!(press < release);
    match (&got[press], &got[release]) {
        (Event::ButtonPress(p), Event::ButtonRelease(r)) => {
            assert_eq!((p.detail, p.event_x, p.event_y), (1, 20, 20));
            assert_eq!((r.detail, r.event_x, r.event_y), (1, 200, 150));
        }
        other => panic!("unexpected {other:?}"),
    }
    let motions_while_down = got[press..release]
        .iter()
        .filter(|e| matches!(e, Event::MotionNotify(_)))
        .count();
    assert!(
        motions_while_down >= 2,
        "a drag moves in steps: {motions_while_down}"
    );

    assert_eq!(
        x.pointer(&pointer_params(PointerAction::Move, 0, 0, None))
            .unwrap(),
        1
    );
    assert!(no_button_down(&conn));
    assert!(x.keys_down().unwrap().is_empty());

    for p in [
        pointer_params(PointerAction::Click, 1280, 10, None),
        pointer_params(PointerAction::Click, -1, 10, None),
        pointer_params(PointerAction::Click, 10, 800, None),
        pointer_params(PointerAction::Drag, 10, 10, None),
        pointer_params(PointerAction::Drag, 10, 10, Some((5000, 10))),
    ] {
        assert_eq!(
            x.pointer(&p).unwrap_err().code,
            ErrorCode::InvalidArgument,
            "{p:?}"
        );
    }
}

/// The text typed into zenity: ASCII with every shifted US symbol, then characters
/// the US map lacks (em dash, CJK, é and É).
const TEXT: &str = "Hello, World! 0123 ~`@#$%^&*()_+{}|:\"<>? [x]=-\\/;' — 你好, café É";

fn type_into_zenity(with_wm: bool) {
    let xvfb = Xvfb::start();
    let _wm = with_wm.then(|| start_openbox(&xvfb));
    let conn = xvfb.conn();
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let mut zenity = start_zenity(&xvfb);
    let pid = zenity.0.id();

    let window = find_window(&x, pid, ENTRY_TITLE);
    x.activate(window.xid).unwrap();
    let focused = x.focused_toplevel().unwrap().expect("zenity has focus");
    assert_eq!(focused.pid, Some(pid));
    assert_eq!(focused.title, ENTRY_TITLE);
    assert_eq!(focused.xid, window.xid);
    assert!(!focused.bounds.is_empty(), "{:?}", focused.bounds);

    let before = keyboard_map(&conn);
    let sent = x.type_text(TEXT).unwrap();
    assert!(sent >= 2 * TEXT.chars().count() as u64, "{sent} events");
    assert_eq!(keyboard_map(&conn), before, "keyboard map must be restored");
    assert!(x.keys_down().unwrap().is_empty(), "no key may stay down");
    assert!(keys_all_up(&conn), "QueryKeymap must be all zero");

    assert_eq!(x.send_chords("Return").unwrap(), 2);
    let mut status = None;
    wait_until(
        Duration::from_secs(15),
        "zenity to exit after Return",
        || {
            status = zenity.0.try_wait().unwrap();
            status.is_some()
        },
    );
    let mut out = String::new();
    zenity
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    zenity
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.unwrap().success(), "zenity failed: {err}");
    assert_eq!(out, format!("{TEXT}\n"), "zenity stderr: {err}");
    assert!(x.keys_down().unwrap().is_empty());
}

#[test]
fn types_unicode_text_into_zenity_without_window_manager() {
    type_into_zenity(false);
}

#[test]
fn types_unicode_text_into_zenity_under_openbox() {
    type_into_zenity(true);
}

#[test]
fn types_more_distinct_characters_than_spare_keycodes() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let before = keyboard_map(&conn);
    let (per, syms) = &before;
    let spares = syms
        .chunks(usize::from(*per))
        .filter(|r| r.iter().all(|&k| k == 0))
        .count();
    assert!(spares > 0, "Xvfb's default map should have unused keycodes");
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let mut zenity = start_zenity(&xvfb);
    let window = find_window(&x, zenity.0.id(), ENTRY_TITLE);
    x.activate(window.xid).unwrap();

    // Enough distinct CJK characters for at least three batches of borrowed keycodes,
    // so keycodes are re-borrowed for new characters within one call.
    let count = u32::try_from(2 * spares + 5).unwrap();
    let text: String = (0x4e00..0x4e00 + count)
        .map(|c| char::from_u32(c).unwrap())
        .collect();
    x.type_text(&text).unwrap();
    assert_eq!(keyboard_map(&conn), before, "keyboard map must be restored");
    assert!(keys_all_up(&conn));
    x.send_chords("Return").unwrap();
    wait_until(
        Duration::from_secs(15),
        "zenity to exit after Return",
        || zenity.0.try_wait().unwrap().is_some(),
    );
    let mut out = String::new();
    zenity
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(out, format!("{text}\n"));
}

fn caps_lock_on(conn: &RustConnection) -> bool {
    let root = conn.setup().roots[0].root;
    let mask = u16::from(conn.query_pointer(root).unwrap().reply().unwrap().mask);
    mask & 0x2 != 0 // LockMask
}

#[test]
fn types_in_written_case_while_caps_lock_is_on() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let mut zenity = start_zenity(&xvfb);
    let window = find_window(&x, zenity.0.id(), ENTRY_TITLE);
    x.activate(window.xid).unwrap();

    x.send_chords("Caps_Lock").unwrap();
    assert!(caps_lock_on(&conn), "Caps_Lock should lock");
    let text = "Hello World, Ünïcode é 你 ABC xyz 123!";
    x.type_text(text).unwrap();
    assert!(caps_lock_on(&conn), "Caps Lock state is left as found");
    x.send_chords("Caps_Lock").unwrap();
    assert!(!caps_lock_on(&conn));

    x.send_chords("Return").unwrap();
    wait_until(
        Duration::from_secs(15),
        "zenity to exit after Return",
        || zenity.0.try_wait().unwrap().is_some(),
    );
    let mut out = String::new();
    zenity
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(out, format!("{text}\n"));
}

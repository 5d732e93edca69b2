//! The agent's presence (docs/ARCHITECTURE.md §7.19) against a real X server: each
//! test starts its own Xvfb (no window manager) and clicks with `xdotool`. Requires
//! `Xvfb` and `xdotool` on PATH; a missing tool fails the test, it never skips.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use deskpilot_core::Bounds;
use deskpilot_driver_linux::input::XInput;
use deskpilot_driver_linux::presence::{
    CURSOR_HIDE_MS, FRAME_WIDTH, INDICATOR_MARGIN, INDICATOR_MAX_WIDTH, OverlayWindow, Presence,
    TeachAnswer, overlay_windows, stop_button_at, teach_buttons_at,
};
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, PropMode, Window, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

// ---------------------------------------------------------------- helpers

const SCREEN: (i32, i32) = (1280, 800);

mod xvfb;
use xvfb::{Xvfb, wait_until};

/// Moves the real pointer to (`x`, `y`) and clicks button 1 there (XTest, by
/// xdotool).
fn click(xvfb: &Xvfb, x: i32, y: i32) {
    let status = Command::new("xdotool")
        .args(["mousemove", &x.to_string(), &y.to_string(), "click", "1"])
        .env("DISPLAY", &xvfb.display)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("xdotool must be installed (apt-get install xdotool) for these tests");
    assert!(status.success(), "xdotool click at ({x}, {y}): {status}");
}

/// The overlay windows named `name` once `ready` holds for them (5 s at most).
fn overlays_when(
    x: &Xvfb,
    name: &str,
    what: &str,
    ready: impl Fn(&[OverlayWindow]) -> bool,
) -> Vec<OverlayWindow> {
    let mut found = Vec::new();
    wait_until(Duration::from_secs(5), what, || {
        found = overlay_windows(&x.display)
            .unwrap()
            .into_iter()
            .filter(|w| w.name == name)
            .collect();
        ready(&found)
    });
    found
}

/// The one mapped overlay window named `name`.
fn shown(x: &Xvfb, name: &str) -> OverlayWindow {
    overlays_when(x, name, &format!("{name} to be shown"), |w| {
        w.len() == 1 && w[0].mapped
    })
    .remove(0)
}

/// Waits until no overlay window named `name` is mapped.
fn hidden(x: &Xvfb, name: &str) {
    overlays_when(x, name, &format!("{name} to be hidden"), |w| {
        w.iter().all(|w| !w.mapped)
    });
}

/// A presence on `x` counting its Stop clicks.
fn presence(x: &Xvfb) -> (Presence, Arc<AtomicUsize>) {
    let stops = Arc::new(AtomicUsize::new(0));
    let counter = stops.clone();
    let p = Presence::open(
        &x.display,
        Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }),
    )
    .expect("open the presence");
    (p, stops)
}

/// A plain 400×300 top-level window of the test's own at (`x`, `y`), listening for
/// button presses.
fn test_window(conn: &RustConnection, x: i16, y: i16) -> Window {
    let screen = &conn.setup().roots[0];
    let win = conn.generate_id().unwrap();
    let aux = CreateWindowAux::new()
        .background_pixel(screen.white_pixel)
        .event_mask(EventMask::BUTTON_PRESS | EventMask::BUTTON_RELEASE);
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
    conn.change_property8(
        PropMode::REPLACE,
        win,
        AtomEnum::WM_NAME,
        AtomEnum::STRING,
        b"presence test window",
    )
    .unwrap();
    conn.map_window(win).unwrap();
    conn.sync().unwrap();
    win
}

/// Button presses on `conn` until one arrives or 3 s pass.
fn button_press(conn: &RustConnection) -> Option<(Window, i16, i16)> {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        match conn.poll_for_event().unwrap() {
            Some(Event::ButtonPress(b)) => return Some((b.event, b.event_x, b.event_y)),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    None
}

fn drain(conn: &RustConnection) {
    conn.sync().unwrap();
    while conn.poll_for_event().unwrap().is_some() {}
}

fn on_screen(b: &Bounds) -> bool {
    b.x >= 0 && b.y >= 0 && b.x + b.width <= SCREEN.0 && b.y + b.height <= SCREEN.1
}

// ---------------------------------------------------------------- tests

#[test]
fn the_cursor_and_frame_are_drawn_and_clicks_go_through_them() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let win = test_window(&conn, 100, 100);
    let bounds = Bounds::new(100, 100, 400, 300);
    let (p, _) = presence(&xvfb);
    p.frame(Some(bounds));
    p.aim(150, 130);
    // It glides from where it was to the next point.
    shown(&xvfb, "deskpilot-cursor");
    p.aim(300, 250);
    let cursor = overlays_when(&xvfb, "deskpilot-cursor", "the cursor's glide", |w| {
        w.len() == 1 && w[0].mapped && (w[0].bounds.x, w[0].bounds.y) == (300, 250)
    })
    .remove(0);
    assert!(cursor.input_rects.is_empty(), "{cursor:?}");
    assert!(cursor.override_redirect);
    assert_eq!((cursor.bounds.width, cursor.bounds.height), (12, 20));

    let frames = overlays_when(&xvfb, "deskpilot-frame", "the frame", |w| {
        w.len() == 4 && w.iter().all(|w| w.mapped)
    });
    for f in &frames {
        assert!(!f.bounds.intersects(&bounds), "{f:?} covers the window");
        assert!(f.input_rects.is_empty(), "{f:?}");
        assert!(f.override_redirect);
        assert!(f.bounds.width == FRAME_WIDTH || f.bounds.height == FRAME_WIDTH);
    }
    let top = frames.iter().map(|f| f.bounds.y).min().unwrap();
    let left = frames.iter().map(|f| f.bounds.x).min().unwrap();
    let right = frames.iter().map(|f| f.bounds.x + f.bounds.width).max();
    let bottom = frames.iter().map(|f| f.bounds.y + f.bounds.height).max();
    assert_eq!((left, top), (97, 97));
    assert_eq!((right, bottom), (Some(503), Some(403)));

    // The stacking checks: this process's click-through cursor neither takes the
    // pointer at its point nor covers the window.
    let x = XInput::connect(Some(&xvfb.display)).unwrap();
    let stack = x.stacking().unwrap();
    let ours = stack.iter().find(|s| s.xid == cursor.xid).unwrap();
    assert!(ours.click_through && ours.pid == Some(std::process::id()));
    assert!(!stack.iter().find(|s| s.xid == win).unwrap().click_through);
    x.ensure_on_top_at(win, 300, 250).unwrap();
    assert_eq!(x.covering(win).unwrap(), Vec::<Bounds>::new());

    // A real click at the cursor's point reaches the window under it.
    drain(&conn);
    p.aim(300, 250);
    shown(&xvfb, "deskpilot-cursor");
    click(&xvfb, 300, 250);
    assert_eq!(button_press(&conn), Some((win, 200, 150)));
    p.press();

    // Idle, it hides; the frame stays.
    std::thread::sleep(Duration::from_millis(CURSOR_HIDE_MS));
    hidden(&xvfb, "deskpilot-cursor");
    let frames = overlay_windows(&xvfb.display).unwrap();
    assert_eq!(
        frames
            .iter()
            .filter(|w| w.name == "deskpilot-frame" && w.mapped)
            .count(),
        4
    );
    p.frame(None);
    hidden(&xvfb, "deskpilot-frame");
}

#[test]
fn the_indicators_stop_button_calls_on_stop() {
    let xvfb = Xvfb::start();
    let (p, stops) = presence(&xvfb);
    p.indicator(Some("mousepad · 9 actions left · capture tree".into()));
    let ind = shown(&xvfb, "deskpilot-indicator");
    assert!(!ind.input_rects.is_empty(), "{ind:?}");
    assert!(ind.override_redirect);
    let b = ind.bounds;
    assert_eq!(
        (b.x + b.width, b.y),
        (SCREEN.0 - INDICATOR_MARGIN, INDICATOR_MARGIN),
        "top-right: {b:?}"
    );
    assert!(b.width <= INDICATOR_MAX_WIDTH && b.height <= 40, "{b:?}");

    // A click on the text is not Stop.
    click(&xvfb, b.x + 20, b.y + b.height / 2);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(stops.load(Ordering::SeqCst), 0);

    let (sx, sy) = stop_button_at(b);
    click(&xvfb, sx, sy);
    wait_until(Duration::from_secs(2), "on_stop", || {
        stops.load(Ordering::SeqCst) == 1
    });

    // A long text is cut to the widest indicator; it stays at the corner.
    p.indicator(Some("many words ".repeat(80)));
    let ind = overlays_when(&xvfb, "deskpilot-indicator", "a wider indicator", |w| {
        w.len() == 1 && w[0].bounds.width > b.width
    })
    .remove(0);
    assert!(ind.bounds.width <= INDICATOR_MAX_WIDTH, "{:?}", ind.bounds);
    assert_eq!(ind.bounds.x + ind.bounds.width, SCREEN.0 - INDICATOR_MARGIN);
    let (sx, sy) = stop_button_at(ind.bounds);
    click(&xvfb, sx, sy);
    wait_until(Duration::from_secs(2), "on_stop again", || {
        stops.load(Ordering::SeqCst) == 2
    });

    p.indicator(None);
    hidden(&xvfb, "deskpilot-indicator");
}

#[test]
fn the_teach_bubble_answers_next_exit_or_closed() {
    let xvfb = Xvfb::start();
    let (p, _) = presence(&xvfb);
    let recv = |rx: &std::sync::mpsc::Receiver<TeachAnswer>| {
        rx.recv_timeout(Duration::from_secs(2))
            .expect("a teach answer within 2 s")
    };

    let target = Bounds::new(100, 100, 120, 30);
    let rx = p.teach(target, "Click Save to keep your file");
    let bubble = shown(&xvfb, "deskpilot-teach");
    assert!(!bubble.bounds.intersects(&target), "{bubble:?}");
    assert!(on_screen(&bubble.bounds), "{bubble:?}");
    assert!(bubble.bounds.y > target.y, "below the target: {bubble:?}");
    assert!(!bubble.input_rects.is_empty() && bubble.override_redirect);
    let (next, _) = teach_buttons_at(bubble.bounds);
    // A click the moment the bubble appears is no answer (it was meant for what
    // was there), and neither is a click another client sends (XSendEvent).
    click(&xvfb, next.0, next.1);
    let conn = xvfb.conn();
    std::thread::sleep(Duration::from_millis(600));
    let fake = x11rb::protocol::xproto::ButtonPressEvent {
        response_type: x11rb::protocol::xproto::BUTTON_PRESS_EVENT,
        detail: 1,
        sequence: 0,
        time: x11rb::CURRENT_TIME,
        root: conn.setup().roots[0].root,
        event: bubble.xid,
        child: x11rb::NONE,
        root_x: next.0 as i16,
        root_y: next.1 as i16,
        event_x: (next.0 - bubble.bounds.x) as i16,
        event_y: (next.1 - bubble.bounds.y) as i16,
        state: 0u16.into(),
        same_screen: true,
    };
    conn.send_event(false, bubble.xid, EventMask::BUTTON_PRESS, fake)
        .unwrap();
    conn.flush().unwrap();
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "an early or synthetic click answered the bubble"
    );
    click(&xvfb, next.0, next.1);
    assert_eq!(recv(&rx), TeachAnswer::Next);
    hidden(&xvfb, "deskpilot-teach");

    // No room below: above it. A long text wraps over a few lines.
    let target = Bounds::new(1180, 760, 90, 30);
    let rx = p.teach(target, &"Type the name of the file here. ".repeat(20));
    let bubble = shown(&xvfb, "deskpilot-teach");
    assert!(!bubble.bounds.intersects(&target), "{bubble:?}");
    assert!(on_screen(&bubble.bounds), "{bubble:?}");
    assert!(
        bubble.bounds.y + bubble.bounds.height <= target.y,
        "{bubble:?}"
    );
    assert!(bubble.bounds.height > 80, "several lines: {bubble:?}");
    let (_, exit) = teach_buttons_at(bubble.bounds);
    std::thread::sleep(Duration::from_millis(600));
    click(&xvfb, exit.0, exit.1);
    assert_eq!(recv(&rx), TeachAnswer::Exit);
    hidden(&xvfb, "deskpilot-teach");

    // Ended by the agent.
    let rx = p.teach(target, "Wait");
    shown(&xvfb, "deskpilot-teach");
    p.end_teach();
    assert_eq!(recv(&rx), TeachAnswer::Closed);
    hidden(&xvfb, "deskpilot-teach");

    // Replaced by another, which clear() closes.
    let first = p.teach(target, "one");
    let second = p.teach(Bounds::new(300, 300, 50, 20), "two");
    assert_eq!(recv(&first), TeachAnswer::Closed);
    shown(&xvfb, "deskpilot-teach");
    p.clear();
    assert_eq!(recv(&second), TeachAnswer::Closed);
    hidden(&xvfb, "deskpilot-teach");
}

#[test]
fn clear_hides_everything_and_drop_removes_the_windows() {
    let xvfb = Xvfb::start();
    let (p, _) = presence(&xvfb);
    p.frame(Some(Bounds::new(200, 200, 300, 200)));
    p.aim(250, 250);
    p.press();
    p.indicator(Some("gedit · 3 actions left".into()));
    let rx = p.teach(Bounds::new(200, 200, 60, 20), "Pick a colour");
    for name in ["deskpilot-cursor", "deskpilot-indicator", "deskpilot-teach"] {
        shown(&xvfb, name);
    }
    overlays_when(&xvfb, "deskpilot-frame", "the frame", |w| {
        w.len() == 4 && w.iter().all(|w| w.mapped)
    });
    let all = overlay_windows(&xvfb.display).unwrap();
    assert_eq!(all.len(), 7, "{all:?}");
    assert!(all.iter().all(|w| w.override_redirect));

    p.clear();
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(2)).unwrap(),
        TeachAnswer::Closed
    );
    wait_until(Duration::from_secs(5), "every overlay to hide", || {
        overlay_windows(&xvfb.display)
            .unwrap()
            .iter()
            .all(|w| !w.mapped)
    });

    drop(p);
    wait_until(Duration::from_secs(5), "the overlay windows to go", || {
        overlay_windows(&xvfb.display).unwrap().is_empty()
    });
}

/// The frame's outer box, once all four sides are mapped and `ready` holds for it.
fn frame_box(x: &Xvfb, what: &str, ready: impl Fn(Bounds) -> bool) -> Bounds {
    let outer = std::cell::Cell::new(Bounds::new(0, 0, 0, 0));
    overlays_when(x, "deskpilot-frame", what, |w| {
        if w.len() != 4 || !w.iter().all(|w| w.mapped) {
            return false;
        }
        let left = w.iter().map(|f| f.bounds.x).min().unwrap();
        let top = w.iter().map(|f| f.bounds.y).min().unwrap();
        let right = w.iter().map(|f| f.bounds.x + f.bounds.width).max().unwrap();
        let bottom = w
            .iter()
            .map(|f| f.bounds.y + f.bounds.height)
            .max()
            .unwrap();
        outer.set(Bounds::new(left, top, right - left, bottom - top));
        ready(outer.get())
    });
    outer.get()
}

/// The frame stayed where the host last measured the bound window: made
/// fullscreen (here by the test, which plays the window manager: it lists the
/// window in `_NET_CLIENT_LIST` and resizes it) between two calls, the window was
/// outlined at its old place, and a minimised window kept its frame. The frame
/// follows the window it was drawn around, in sight on a fullscreen one, and goes
/// when the window is unmapped.
#[test]
fn the_frame_follows_the_bound_window_between_calls() {
    let xvfb = Xvfb::start();
    let conn = xvfb.conn();
    let root = conn.setup().roots[0].root;
    let win = test_window(&conn, 100, 100);
    let list = conn
        .intern_atom(false, b"_NET_CLIENT_LIST")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    conn.change_property32(PropMode::REPLACE, root, list, AtomEnum::WINDOW, &[win])
        .unwrap();
    conn.sync().unwrap();
    let (p, _) = presence(&xvfb);
    p.frame(Some(Bounds::new(100, 100, 400, 300)));
    frame_box(&xvfb, "the frame around the window", |b| {
        b == Bounds::new(97, 97, 406, 306)
    });

    // Fullscreen: no call from the host, the frame moves, inside the screen.
    conn.configure_window(
        win,
        &x11rb::protocol::xproto::ConfigureWindowAux::new()
            .x(0)
            .y(0)
            .width(SCREEN.0 as u32)
            .height(SCREEN.1 as u32),
    )
    .unwrap();
    conn.sync().unwrap();
    let full = frame_box(&xvfb, "the frame around the fullscreen window", |b| {
        b == Bounds::new(0, 0, SCREEN.0, SCREEN.1)
    });
    assert!(on_screen(&full), "{full:?}");

    // Minimised (unmapped by the window manager): no frame.
    conn.unmap_window(win).unwrap();
    conn.sync().unwrap();
    hidden(&xvfb, "deskpilot-frame");
}

#[test]
fn opening_without_a_display_fails_with_a_sentence() {
    let err = Presence::open("", Box::new(|| {})).err().unwrap();
    assert!(err.contains("no agent presence"), "{err}");
    let err = Presence::open(":1999", Box::new(|| {})).err().unwrap();
    assert!(err.contains(":1999"), "{err}");
}

//! The user's presence on the desktop the agent works on, on a real sandbox desktop
//! with mousepad: desktop shortcuts behind their own switch (`system_keys`,
//! docs/ARCHITECTURE.md §7.18), the global stop hotkey (§7.8), the overlay, the
//! indicator's Stop and teach mode (§7.19), and the clipboard's own switch (§7.20).
//! The overlay is queried with x11rb (`overlay_windows`) and clicked through XTest
//! (`xdotool`); `xclip` is the clipboard's oracle.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::own::{Desk, TempDir};
use common::stdio_mcp::Mcp;
use deskpilot_driver_linux::presence::{
    OverlayWindow, overlay_windows, stop_button_at, teach_buttons_at,
};
use serde_json::{Value, json};

/// With `system_keys` off (the default) a desktop shortcut is refused in every
/// spelling and audited as a refusal, ordinary shortcuts go through; the user's
/// switch lets shortcuts through.
#[test]
fn desktop_shortcuts_need_the_system_keys_switch() {
    let dir = TempDir::new("system-keys");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.wait_for("mousepad", "menuitem", "File", 60000);
    desk.ok(&["observe", "--app", "mousepad"]);
    for chord in [
        "ctrl+alt+F1",
        "alt+ctrl+0xffbe",
        "super",
        "alt+Tab",
        "ctrl+a alt+F2",
    ] {
        let v = desk.fails_with(
            &["keys", chord, "--app", "mousepad"],
            "COMPUTER_SCOPE_VIOLATION",
        );
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("config set system_keys true"),
            "{chord}: the message names the switch: {msg}"
        );
    }
    let v = desk.ok(&["keys", "ctrl+End", "--app", "mousepad"]);
    assert_eq!(v["ok"], true, "{v}");
    let audit = desk.ok(&["audit", "--tail", "50"]);
    let refused = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "refusal" && r["code"] == "COMPUTER_SCOPE_VIOLATION")
        .count();
    assert_eq!(refused, 5, "every refusal is audited: {audit}");

    std::fs::write(
        desk.config(),
        "[sandbox]\nmode = \"accept-edits\"\nsystem_keys = true\n",
    )
    .unwrap();
    // Openbox binds nothing to Super+F12: the app gets it, and nothing is refused.
    desk.ok(&["keys", "super+F12", "--app", "mousepad"]);
}

/// The MCP server grabs Ctrl+Shift+Escape on its desktop and says so; the chord
/// pressed on that desktop (XTest, through xdotool in the sandbox) stops it like
/// `deskpilot stop`, even while the app holds the keyboard grabbed (a menu open):
/// the next call fails `COMPUTER_STOPPED_BY_USER`. The time from the press to the
/// first refused call is printed, not asserted.
#[test]
fn the_stop_hotkey_stops_the_server_like_deskpilot_stop() {
    let dir = TempDir::new("hotkey");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.wait_for("mousepad", "menuitem", "File", 60000);
    let log = dir.path().join("mcp.err");
    let mut c = desk.command();
    c.arg("mcp");
    let mut mcp = Mcp::start(c, Stdio::from(std::fs::File::create(&log).unwrap()));
    let obs = mcp.tool("computer_observe", json!({"app": "mousepad"}));
    assert_ne!(obs["isError"], true, "{obs}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains(&format!(
            "stop hotkey ctrl+shift+Escape on :{}",
            desk.display
        )),
        "the server says the hotkey is armed: {said}"
    );

    open_a_menu(&mut mcp);
    let pressed = Instant::now();
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "xdotool",
        "key",
        "ctrl+shift+Escape",
    ]);
    let stopped = loop {
        let r = mcp.tool("computer_observe", json!({"app": "mousepad"}));
        if r["structuredContent"]["code"] == "COMPUTER_STOPPED_BY_USER" {
            break pressed.elapsed();
        }
        assert!(
            pressed.elapsed() < Duration::from_secs(10),
            "the hotkey did not stop the server: {r}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("stop hotkey: press (xdotool started) to the first refused call: {stopped:?}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("stop hotkey pressed"), "{said}");
    // The stop record is the one `deskpilot stop` writes: another agent's grant is
    // refused as well, for the cooldown.
    let v = desk.fails_with(
        &["observe", "--app", "mousepad"],
        "COMPUTER_STOPPED_BY_USER",
    );
    assert!(v["error"]["message"].as_str().is_some(), "{v}");
}

// ------------------------------------------------------------------ on screen

/// The sandbox config these tests run under: on-screen presence on (a sandbox's
/// default is off), acting without first-use confirmations.
const SHOWN: &str = "[sandbox]\nmode = \"accept-edits\"\npresence = true\n";

/// mousepad in a sandbox with `config`, and an MCP server (`extra` flags) on it
/// whose stderr goes to `dir/mcp.err`, with the window observed.
fn served<'a>(dir: &'a TempDir, config: &str, extra: &[&str]) -> (Desk<'a>, Mcp) {
    let desk = Desk::start_with_config(dir.path(), config);
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.wait_for("mousepad", "menuitem", "File", 60000);
    let log = dir.path().join("mcp.err");
    let mut c = desk.command();
    c.arg("mcp").args(extra);
    let mut mcp = Mcp::start(c, Stdio::from(std::fs::File::create(&log).unwrap()));
    let obs = mcp.tool("computer_observe", json!({"app": "mousepad"}));
    assert_ne!(obs["isError"], true, "{obs}");
    (desk, mcp)
}

/// The overlay windows of `desk`'s display, polled until `pred` holds (5 s).
fn overlay_until(
    desk: &Desk<'_>,
    what: &str,
    pred: impl Fn(&[OverlayWindow]) -> bool,
) -> Vec<OverlayWindow> {
    let display = format!(":{}", desk.display);
    let start = Instant::now();
    loop {
        let ws = overlay_windows(&display).expect("the display answers");
        if pred(&ws) {
            return ws;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what}: the overlay windows are {ws:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn shown<'w>(ws: &'w [OverlayWindow], name: &str) -> Option<&'w OverlayWindow> {
    ws.iter().find(|w| w.name == name && w.mapped)
}

/// The ref of the first element of `role` in an observe of the window the server
/// works in (`[e17] textbox editable focused`).
fn find_ref(mcp: &mut Mcp, role: &str) -> (String, Value) {
    let v = mcp.tool("computer_observe", json!({"app": "mousepad"}));
    let text = v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.split_whitespace().nth(1) == Some(role))
        .unwrap_or_else(|| panic!("no {role}: {v}"));
    let r = line[1..line.find(']').unwrap()].to_owned();
    (r, Value::String(line.to_owned()))
}

/// `xdotool ARGS` on the desk's display (XTest: the real pointer).
fn xdotool(desk: &Desk<'_>, args: &[&str]) -> String {
    let out = std::process::Command::new("xdotool")
        .args(args)
        .env("DISPLAY", format!(":{}", desk.display))
        .output()
        .expect("xdotool runs");
    assert!(out.status.success(), "xdotool {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Moves the real pointer to (`x`, `y`) of the desk's display and clicks button 1
/// there (XTest, by xdotool), as a person would.
fn click_at(desk: &Desk<'_>, x: i32, y: i32) {
    xdotool(
        desk,
        &["mousemove", &x.to_string(), &y.to_string(), "click", "1"],
    );
}

/// While the server holds a grant, a frame surrounds the bound window and an
/// indicator names the app and the budget; during an act the drawn cursor goes to
/// the element. All of them are override-redirect; the cursor and the frame have an
/// empty input shape, so the X server hands a click at the cursor to mousepad below
/// (the window under the pointer there is mousepad's, not the overlay's).
#[test]
fn the_overlay_shows_the_agent_and_lets_clicks_through() {
    let dir = TempDir::new("overlay");
    let (desk, mut mcp) = served(&dir, SHOWN, &[]);
    let said = std::fs::read_to_string(dir.path().join("mcp.err")).unwrap();
    assert!(said.contains("indicator with Stop are drawn"), "{said}");
    let ws = overlay_until(&desk, "frame and indicator", |ws| {
        shown(ws, "deskpilot-frame").is_some() && shown(ws, "deskpilot-indicator").is_some()
    });
    let apps = mcp.tool("computer_apps", json!({}));
    let win = apps["structuredContent"]["apps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["windows"].as_array().unwrap().iter())
        .find(|w| w["bound"] == true)
        .unwrap_or_else(|| panic!("a bound window: {apps}"))
        .clone();
    let b = &win["device_bounds"];
    let (wx, wy, ww, wh) = (
        b["x"].as_i64().unwrap() as i32,
        b["y"].as_i64().unwrap() as i32,
        b["width"].as_i64().unwrap() as i32,
        b["height"].as_i64().unwrap() as i32,
    );
    for f in ws
        .iter()
        .filter(|w| w.name == "deskpilot-frame" && w.mapped)
    {
        assert!(f.override_redirect && f.input_rects.is_empty(), "{f:?}");
        let inside = f.bounds.x >= wx
            && f.bounds.y >= wy
            && f.bounds.x + f.bounds.width <= wx + ww
            && f.bounds.y + f.bounds.height <= wy + wh;
        assert!(!inside, "the frame lies outside the window {b}: {f:?}");
        assert!(
            f.bounds.x <= wx + ww + 4 && f.bounds.y <= wy + wh + 4,
            "the frame hugs the window {b}: {f:?}"
        );
    }
    let ind = shown(&ws, "deskpilot-indicator").unwrap();
    assert!(
        ind.override_redirect && !ind.input_rects.is_empty(),
        "{ind:?}"
    );

    let (text, hit) = find_ref(&mut mcp, "textbox");
    let act = mcp.tool(
        "computer_act",
        json!({"actions": [{"ref": text, "op": "set_value", "value": "0123456789"}]}),
    );
    assert_ne!(act["isError"], true, "{act}");
    let ws = overlay_until(&desk, "the cursor at the element", |ws| {
        shown(ws, "deskpilot-cursor").is_some()
    });
    let cursor = shown(&ws, "deskpilot-cursor").unwrap().clone();
    assert!(
        cursor.override_redirect && cursor.input_rects.is_empty(),
        "{cursor:?}"
    );
    let (x, y) = (cursor.bounds.x, cursor.bounds.y);
    assert!(
        x >= wx && y >= wy && x < wx + ww && y < wy + wh,
        "the cursor points into the bound window {b}: {cursor:?} (element {hit})"
    );
    // The real pointer was never moved there by the overlay: put it there now (the
    // caret first to the text's start) and ask the X server which window is under
    // it while the drawn cursor is still shown.
    xdotool(&desk, &["key", "ctrl+Home"]);
    xdotool(&desk, &["mousemove", &x.to_string(), &y.to_string()]);
    let under = xdotool(&desk, &["getmouselocation", "--shell"]);
    let window: u32 = under
        .lines()
        .find_map(|l| l.strip_prefix("WINDOW="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{under}"));
    let ws = overlay_windows(&format!(":{}", desk.display)).unwrap();
    assert!(
        shown(&ws, "deskpilot-cursor").is_some_and(|c| c.bounds == cursor.bounds),
        "the drawn cursor is still there: {ws:#?}"
    );
    assert!(
        !ws.iter().any(|w| w.xid == window),
        "the pointer at the drawn cursor is over the overlay window {window}: {under}"
    );
    // A click there lands in the text view below the one line of text: the caret
    // goes to its end, where the next key types.
    xdotool(&desk, &["click", "1"]);
    xdotool(&desk, &["type", "X"]);
    let v = mcp.tool("computer_find", json!({"text": "0123456789X"}));
    assert_eq!(
        v["structuredContent"]["matches"].as_array().map(Vec::len),
        Some(1),
        "the click went through the drawn cursor to mousepad: {v}"
    );

    // A bound window that leaves the screen takes its frame with it: unmapped from
    // outside, the next listing draws no frame where it was (before, the frame
    // stayed around the empty place).
    xdotool(
        &desk,
        &[
            "search",
            "--onlyvisible",
            "--name",
            "Mousepad",
            "windowunmap",
            "--sync",
        ],
    );
    let apps = mcp.tool("computer_apps", json!({}));
    assert!(
        apps["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("not viewable (unmapped)")),
        "{apps}"
    );
    overlay_until(&desk, "no frame around an unmapped window", |ws| {
        shown(ws, "deskpilot-frame").is_none() && shown(ws, "deskpilot-indicator").is_some()
    });

    // The grant ends with the server: the overlay goes with it.
    drop(mcp);
    overlay_until(&desk, "nothing left after the server", |ws| {
        ws.iter().all(|w| !w.mapped)
    });
}

/// Opens mousepad's File menu through the server: GTK grabs the pointer and the
/// keyboard while a menu is open, as an app that wants to keep the person out
/// would.
fn open_a_menu(mcp: &mut Mcp) {
    let v = mcp.tool("computer_observe", json!({"app": "mousepad"}));
    let text = v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.contains("menuitem \"File\""))
        .unwrap_or_else(|| panic!("no File menu: {v}"));
    let r = &line[1..line.find(']').unwrap()];
    let act = mcp.tool(
        "computer_act",
        json!({"actions": [{"ref": r, "op": "click"}]}),
    );
    assert_ne!(act["isError"], true, "{act}");
}

/// The indicator's Stop, clicked through XTest, does what `deskpilot stop` does,
/// even while the app holds the pointer grabbed (a menu open): the next call fails
/// `COMPUTER_STOPPED_BY_USER` and the overlay disappears. The time from the click
/// to the refusal is printed, not asserted.
#[test]
fn the_indicators_stop_button_stops_the_server() {
    let dir = TempDir::new("indicator");
    let (desk, mut mcp) = served(&dir, SHOWN, &[]);
    open_a_menu(&mut mcp);
    let ws = overlay_until(&desk, "the indicator", |ws| {
        shown(ws, "deskpilot-indicator").is_some()
    });
    let ind = shown(&ws, "deskpilot-indicator").unwrap();
    let (x, y) = stop_button_at(ind.bounds);
    let clicked = Instant::now();
    click_at(&desk, x, y);
    let stopped = loop {
        let r = mcp.tool("computer_observe", json!({"app": "mousepad"}));
        if r["structuredContent"]["code"] == "COMPUTER_STOPPED_BY_USER" {
            break clicked.elapsed();
        }
        assert!(
            clicked.elapsed() < Duration::from_secs(10),
            "Stop did not stop the server: {r}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("indicator Stop: click (xdotool started) to the first refused call: {stopped:?}");
    overlay_until(&desk, "the indicator gone after Stop", |ws| {
        shown(ws, "deskpilot-indicator").is_none()
    });
    let said = std::fs::read_to_string(dir.path().join("mcp.err")).unwrap();
    assert!(said.contains("Stop pressed on the indicator"), "{said}");
}

/// Teach mode: a step's bubble shows beside its element; Next (clicked through
/// XTest) runs the action and returns its diff; Exit refuses that step and every
/// later one. Without `--teach` the tools are not listed.
#[test]
fn teach_steps_run_on_next_and_exit_ends_teaching() {
    let dir = TempDir::new("teach");
    let (desk, mut mcp) = served(&dir, SHOWN, &["--teach"]);
    mcp.send("tools/list", json!({}));
    let list = mcp.answer();
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"computer_teach_step") && names.contains(&"computer_teach_batch"),
        "{names:?}"
    );
    let (text, _) = find_ref(&mut mcp, "textbox");
    let step = |mcp: &mut Mcp, value: &str| {
        mcp.send(
            "tools/call",
            json!({"name": "computer_teach_step", "arguments": {
                "ref": text, "text": "This is the document: I type here.", "op": "set_value", "value": value}}),
        );
    };
    let bubble = |desk: &Desk<'_>| {
        let ws = overlay_until(desk, "the teach bubble", |ws| {
            shown(ws, "deskpilot-teach").is_some()
        });
        shown(&ws, "deskpilot-teach").unwrap().bounds
    };

    step(&mut mcp, "taught by Next");
    let (next, _) = teach_buttons_at(bubble(&desk));
    // The bubble takes no click for its first 500 ms.
    std::thread::sleep(Duration::from_millis(600));
    click_at(&desk, next.0, next.1);
    let done = mcp.answer();
    assert_ne!(done["isError"], true, "{done}");
    assert_eq!(
        done["structuredContent"]["steps"][0]["status"], "executed",
        "{done}"
    );
    overlay_until(&desk, "the bubble gone after Next", |ws| {
        shown(ws, "deskpilot-teach").is_none()
    });
    let v = mcp.tool("computer_find", json!({"text": "taught by Next"}));
    assert_eq!(
        v["structuredContent"]["matches"].as_array().map(Vec::len),
        Some(1),
        "Next ran the step: {v}"
    );

    step(&mut mcp, "never typed");
    let (_, exit) = teach_buttons_at(bubble(&desk));
    std::thread::sleep(Duration::from_millis(600));
    click_at(&desk, exit.0, exit.1);
    let ended = mcp.answer();
    assert_eq!(
        ended["structuredContent"]["code"], "COMPUTER_CONFIRMATION_REQUIRED",
        "{ended}"
    );
    let v = mcp.tool("computer_find", json!({"text": "never typed"}));
    assert_eq!(
        v["structuredContent"]["matches"].as_array().map(Vec::len),
        Some(0),
        "Exit ran nothing: {v}"
    );
    let later = mcp.tool(
        "computer_teach_step",
        json!({"ref": text, "text": "again", "op": "set_value", "value": "x"}),
    );
    assert_eq!(
        later["structuredContent"]["code"], "COMPUTER_SCOPE_VIOLATION",
        "{later}"
    );
}

/// Without `--teach` the server lists no teach tool and refuses a call to one.
#[test]
fn teach_tools_need_the_teach_flag() {
    let dir = TempDir::new("no-teach");
    let desk = Desk::start_with_config(dir.path(), SHOWN);
    let mut c = desk.command();
    c.arg("mcp");
    let mut mcp = Mcp::start(c, Stdio::null());
    mcp.send("tools/list", json!({}));
    let list = mcp.answer();
    let listed = list["tools"].to_string();
    assert!(!listed.contains("computer_teach"), "{list}");
    let v = mcp.tool("computer_teach_step", json!({"ref": "e1", "text": "x"}));
    assert_eq!(
        v["structuredContent"]["code"], "COMPUTER_FEATURE_DISABLED",
        "{v}"
    );
}

/// `xclip` on the desk's display, stdin `input`.
fn xclip(desk: &Desk<'_>, args: &[&str], input: Option<&str>) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new("xclip")
        .args(["-selection", "clipboard"])
        .args(args)
        .env("DISPLAY", format!(":{}", desk.display))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("xclip runs");
    if let Some(t) = input {
        child.stdin.take().unwrap().write_all(t.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    if input.is_some() {
        // xclip -i forks a holder and exits.
        let status = child.wait().unwrap();
        assert!(status.success());
        return String::new();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The clipboard is a grant of its own: refused (and audited) while the user's
/// switch is off; with it on, a write is read back by `xclip` (the oracle) after
/// the CLI has exited, a text `xclip` put there is read, a secret on it is masked,
/// and the MCP tool does the same.
#[test]
fn the_clipboard_needs_its_switch_and_round_trips_with_xclip() {
    let dir = TempDir::new("clipboard");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.wait_for("mousepad", "menuitem", "File", 60000);
    xclip(&desk, &["-i"], Some("left by the user"));
    let v = desk.fails_with(&["clipboard", "read"], "COMPUTER_SCOPE_VIOLATION");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("config set clipboard true"),
        "{v}"
    );
    desk.fails_with(&["clipboard", "write", "x"], "COMPUTER_SCOPE_VIOLATION");
    assert_eq!(xclip(&desk, &["-o"], None), "left by the user");
    let audit = desk.ok(&["audit", "--tail", "20"]);
    let refused: Vec<&Value> = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "refusal")
        .collect();
    assert!(
        refused.iter().any(|r| r["op"] == "clipboard_read")
            && refused.iter().any(|r| r["op"] == "clipboard_write"),
        "{audit}"
    );

    std::fs::write(
        desk.config(),
        "[sandbox]\nmode = \"accept-edits\"\nclipboard = true\n",
    )
    .unwrap();
    let v = desk.ok(&["clipboard", "read"]);
    assert_eq!(v["text"], "left by the user", "{v}");
    let v = desk.ok(&["clipboard", "write", "héllo, 世界"]);
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(xclip(&desk, &["-o"], None), "héllo, 世界");
    // A write passes the host's one pipeline: judged on the bound window, audited
    // as an action with its length only.
    let audit = desk.ok(&["audit", "--tail", "5"]);
    let write = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|r| r["op"] == "clipboard_write")
        .unwrap_or_else(|| panic!("no clipboard_write record: {audit}"));
    assert_eq!(write["event"], "action", "{write}");
    assert_eq!(write["status"], "executed", "{write}");
    assert_eq!(write["channel"], "clipboard", "{write}");
    assert_eq!(write["text_len"], 9, "{write}");
    assert_eq!(write["app"], "mousepad", "{write}");
    // The judge reads what is written: a path into deskpilot's own files, ready
    // to be pasted into a Save As field, is refused and nothing is written.
    let config = desk.config().display().to_string();
    desk.fails_with(&["clipboard", "write", &config], "COMPUTER_SCOPE_VIOLATION");
    assert_eq!(xclip(&desk, &["-o"], None), "héllo, 世界");
    xclip(
        &desk,
        &["-i"],
        Some("key: sk-proj-Q8vT3mZx9LkP2wRb7NcY4hJd"),
    );
    let v = desk.ok(&["clipboard", "read"]);
    let read = v["text"].as_str().unwrap();
    assert!(
        read.starts_with("key: ") && !read.contains("Q8vT3mZx9LkP2wRb7NcY4hJd"),
        "a secret on the clipboard is masked: {v}"
    );
    // Pasting is an ordinary key chord in the bound window.
    desk.ok(&["clipboard", "write", "pasted text"]);
    desk.ok(&["observe", "--app", "mousepad"]);
    desk.ok(&["keys", "ctrl+v", "--app", "mousepad"]);
    desk.ok(&[
        "wait",
        "--app",
        "mousepad",
        "--text",
        "pasted text",
        "--timeout-ms",
        "5000",
    ]);

    let mut c = desk.command();
    c.arg("mcp");
    let mut mcp = Mcp::start(c, Stdio::null());
    // A write is an action: it needs the grant bound to a window.
    let obs = mcp.tool("computer_observe", json!({"app": "mousepad"}));
    assert_ne!(obs["isError"], true, "{obs}");
    let w = mcp.tool(
        "computer_clipboard",
        json!({"op": "write", "text": "from mcp"}),
    );
    assert_eq!(w["structuredContent"]["verified"], true, "{w}");
    assert_eq!(xclip(&desk, &["-o"], None), "from mcp");
    let r = mcp.tool("computer_clipboard", json!({"op": "read"}));
    assert_eq!(r["structuredContent"]["text"], "from mcp", "{r}");
    drop(mcp);
    // Plan mode reads, never writes.
    std::fs::write(
        desk.config(),
        "[sandbox]\nmode = \"plan\"\nclipboard = true\n",
    )
    .unwrap();
    desk.ok(&["clipboard", "read"]);
    desk.fails_with(&["clipboard", "write", "y"], "COMPUTER_SCOPE_VIOLATION");
    assert_eq!(xclip(&desk, &["-o"], None), "from mcp");
    let mut c = desk.command();
    c.arg("mcp");
    let mut mcp = Mcp::start(c, Stdio::null());
    let bad = mcp.tool("computer_clipboard", json!({"op": "write"}));
    assert_eq!(
        bad["structuredContent"]["code"], "COMPUTER_INVALID_ARGUMENT",
        "{bad}"
    );
}

/// The clipboard holder cannot be started by hand to set the clipboard past the
/// switch.
#[test]
fn the_clipboard_holder_refuses_to_be_run_by_hand() {
    let dir = TempDir::new("holder");
    let desk = Desk::start(dir.path());
    let (out, v) = desk.run(&["clipboard-hold", &format!(":{}", desk.display)]);
    assert!(!out.status.success(), "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_INVALID_ARGUMENT", "{v}");
}

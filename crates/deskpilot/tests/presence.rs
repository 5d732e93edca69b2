//! The user's presence on the desktop the agent works on, on a real sandbox desktop
//! with mousepad: desktop shortcuts behind their own switch (`system_keys`,
//! docs/ARCHITECTURE.md §7.18) and the global stop hotkey (§7.8).

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::own::{Desk, TempDir};
use common::stdio_mcp::Mcp;
use serde_json::json;

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
/// `deskpilot stop`: the next call fails `COMPUTER_STOPPED_BY_USER`. The time from
/// the press to the first refused call is printed, not asserted.
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

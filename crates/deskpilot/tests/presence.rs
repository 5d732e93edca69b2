//! What the agent may do beyond its window, each behind a switch of its own
//! (docs/ARCHITECTURE.md §7.18): desktop shortcuts (`system_keys`) on a real
//! sandbox desktop with mousepad.

mod common;

use common::own::{Desk, TempDir};

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

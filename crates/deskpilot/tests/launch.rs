//! Launch returns once the app can be read: `launch` (CLI) and `computer_launch`
//! (MCP) answer when the app's first window is readable through its accessibility
//! tree, under the name its command line gives it, so the next `observe` by that
//! name reads it at once; an app without a tree is named the same way and told the
//! remedy for its toolkit (docs/ARCHITECTURE.md §7.10, §6 "Launch").

mod common;

use std::process::Stdio;

use common::own::{Desk, TempDir};
use common::stdio_mcp::Mcp;
use serde_json::json;

/// The config these tests run under: launching and acting without first-use
/// confirmations.
const ACCEPT_EDITS: &str = "[sandbox]\nmode = \"accept-edits\"\n";

/// gnome-calculator's window as `observe` prints it has its keypad.
fn is_calculator(text: &str) -> bool {
    text.contains("button \"=\"") || text.contains("button \"Equals\"")
}

/// `deskpilot launch gnome-calculator` returns once the window is readable and names
/// the app `gnome-calculator` (its command line), and `observe --app
/// gnome-calculator` right after it reads the keypad.
#[test]
fn a_cli_launch_is_observed_at_once_by_its_program_name() {
    let dir = TempDir::new("launch-cli");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let v = desk.ok(&["launch", "--wait-ms", "60000", "gnome-calculator"]);
    assert_eq!(v["app"], "gnome-calculator", "{v}");
    assert_ne!(v["window"]["no_tree"], true, "{v}");
    let obs = desk.ok(&["observe", "--app", "gnome-calculator"]);
    let text = obs["text"].as_str().unwrap();
    assert!(is_calculator(text), "{text}");
}

/// `computer_launch ["gnome-calculator"]` then `computer_observe
/// {app: "gnome-calculator"}` at once: the launch waited for the tree, and the app
/// is named from its command line, not the 15-byte `comm` (`gnome-calculato`).
#[test]
fn an_mcp_launch_is_observed_at_once_by_its_program_name() {
    let dir = TempDir::new("launch-mcp");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let log = dir.path().join("mcp.err");
    let mut c = desk.command();
    c.arg("mcp");
    let mut mcp = Mcp::start(c, Stdio::from(std::fs::File::create(&log).unwrap()));
    let launched = mcp.tool(
        "computer_launch",
        json!({"command": ["gnome-calculator"], "wait_ms": 60000}),
    );
    assert_ne!(launched["isError"], true, "{launched}");
    assert_eq!(
        launched["structuredContent"]["window"]["app"], "gnome-calculator",
        "{launched}"
    );
    let obs = mcp.tool("computer_observe", json!({"app": "gnome-calculator"}));
    assert_ne!(obs["isError"], true, "{obs}");
    let text = obs["content"][0]["text"].as_str().unwrap_or_default();
    assert!(is_calculator(text), "{obs}");
}

/// gnome-calculator started with `NO_AT_BRIDGE=1 GTK_A11Y=none` publishes no tree: `apps` lists
/// it as `gnome-calculator` (not `gnome-calculato`) with its toolkit, and `observe`
/// by that name fails `COMPUTER_ACCESSIBILITY_DISABLED` naming the GTK remedy.
#[test]
fn an_app_without_a_tree_is_named_from_its_command_line_with_its_remedy() {
    let dir = TempDir::new("launch-no-tree");
    let desk = Desk::start(dir.path());
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "env",
        "NO_AT_BRIDGE=1",
        // GTK 4's own switch too: gnome-calculator 43 is a GTK 4 app.
        "GTK_A11Y=none",
        "gnome-calculator",
    ]);
    let app = desk.listed_app("gnome-calculator", |n| n.starts_with("gnome-calcul"));
    assert_eq!(app["name"], "gnome-calculator", "{app}");
    assert_eq!(app["status"], "accessibility_disabled", "{app}");
    assert_eq!(app["toolkit"], "GTK", "{app}");
    let v = desk.fails_with(
        &["observe", "--app", "gnome-calculator"],
        "COMPUTER_ACCESSIBILITY_DISABLED",
    );
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("NO_AT_BRIDGE"), "{msg}");
    assert!(!msg.contains("QT_LINUX"), "only GTK's remedy: {msg}");
}

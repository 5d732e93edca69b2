//! Reads that tell the truth about what they could not see: real apps in a sandbox
//! desktop of their own (docs/ARCHITECTURE.md §5, §9).

mod common;

use common::own::{Desk, TempDir};

/// `wait` waits for the app too: started a moment before, gnome-calculator is not on
/// the accessibility bus yet when `wait` begins, and its "7" button is found once it
/// registers. An app that never comes is a timeout that says the tree never came,
/// not "no app named".
#[test]
fn wait_waits_for_the_app_to_publish_its_tree() {
    let dir = TempDir::new("wait-app");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    let v = desk.ok(&[
        "wait",
        "--app",
        "gnome-calculator",
        "--role",
        "button",
        "--name",
        "7",
        "--timeout-ms",
        "60000",
    ]);
    assert_eq!(v["met"], true, "{v}");
    assert_eq!(v["hits"][0]["name"], "7", "the 7 button, named once: {v}");

    let v = desk.fails_with(
        &[
            "wait",
            "--app",
            "no-such-app-xyz",
            "--text",
            "x",
            "--timeout-ms",
            "1000",
        ],
        "COMPUTER_TIMEOUT",
    );
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("never published"), "{v}");
    assert!(msg.contains("no-such-app-xyz"), "{v}");

    let v = desk.fails_with(
        &[
            "wait",
            "--app",
            "gnome-calculator",
            "--role",
            "button",
            "--name",
            "no-such-button",
            "--timeout-ms",
            "1000",
        ],
        "COMPUTER_TIMEOUT",
    );
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("no button named"), "{v}");
}

/// GTK 4 names: gnome-calculator's buttons are named after their label once
/// (`button "7"`, not `"7 7"`), and no element is named after its widget class
/// (`GtkMenuButton`, `AdwGizmo`, `HistoryView`).
#[test]
fn gtk4_names_are_names() {
    let dir = TempDir::new("gtk4-names");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    desk.ok(&[
        "wait",
        "--app",
        "gnome-calculator",
        "--role",
        "button",
        "--name",
        "7",
        "--timeout-ms",
        "60000",
    ]);
    let obs = desk.ok(&["observe", "--app", "gnome-calculator"]);
    let text = obs["text"].as_str().unwrap();
    for name in ["\"7\"", "\"mod\"", "\"÷\""] {
        assert!(
            text.contains(&format!("button {name}")),
            "button {name}:\n{text}"
        );
    }
    for class in [
        "\"7 7\"",
        "GtkMenuButton",
        "AdwGizmo",
        "HistoryView",
        "GtkBuiltinIcon",
    ] {
        assert!(!text.contains(class), "{class} shown:\n{text}");
    }
    let found = desk.ok(&["find", "GtkMenuButton", "--app", "gnome-calculator"]);
    assert_eq!(found["matches"], serde_json::json!([]), "{found}");
}

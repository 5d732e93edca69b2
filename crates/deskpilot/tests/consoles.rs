//! Consoles that hold no pseudo-terminal (docs/ARCHITECTURE.md §7.22): gedit's
//! Python Console runs what is typed into it inside gedit's own process, so the pty
//! test never sees it. Real gedit in a sandbox with its console plugin on; the
//! oracle is a file the console's Python would create, which deskpilot never
//! writes.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::own::{Desk, TempDir, error_message as message};

/// gedit's settings with the Python Console plugin active and the bottom panel
/// (where the console lives) shown, as a keyfile its `GSETTINGS_BACKEND=keyfile`
/// reads from `XDG_CONFIG_HOME/glib-2.0/settings/keyfile`.
const GEDIT_KEYFILE: &str = "[org/gnome/gedit/plugins]\nactive-plugins=['pythonconsole']\n\n[org/gnome/gedit/preferences/ui]\nbottom-panel-visible=true\n";

/// Starts gedit in `desk` with its console shown; returns the console's ref.
fn gedit_with_console(desk: &Desk<'_>, dir: &Path) -> String {
    let settings = dir.join("gedit-config").join("glib-2.0").join("settings");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(settings.join("keyfile"), GEDIT_KEYFILE).unwrap();
    let config_home = format!("XDG_CONFIG_HOME={}", dir.join("gedit-config").display());
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "env",
        "GSETTINGS_BACKEND=keyfile",
        &config_home,
        "gedit",
    ]);
    let start = Instant::now();
    loop {
        let (_, v) = desk.run(&["find", ">>>", "--app", "gedit"]);
        let hit = v["matches"].as_array().and_then(|m| {
            m.iter()
                .find(|h| h["role"] == "textbox")
                .and_then(|h| h["ref"].as_str())
        });
        if let Some(r) = hit {
            return r.to_owned();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "gedit's Python Console never showed: {v}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Typing `open(PATH, 'w')` and Return into gedit's Python Console created the
/// file: the console is a `code` surface without a pty, and gedit had the `type`
/// tier. Every way of writing into it is refused (keys with focus there, an act
/// that types or sets its text, a key sequence that moves focus into it and types
/// on); keys that leave it pass, and the document beside it still takes text.
/// With `gedit=code` granted at a terminal, the console runs what is typed.
#[test]
fn an_editors_python_console_is_code_without_a_pty() {
    let dir = TempDir::new("console-gedit");
    let desk = Desk::start_with_config(
        dir.path(),
        "[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"gedit\"]\n",
    );
    let console = gedit_with_console(&desk, dir.path());
    let fired = dir.path().join("fired");
    let code = format!("open({:?}, 'w')", fired.display().to_string());

    desk.ok(&["act", &console, "focus"]);
    let v = desk.fails_with(
        &["keys", "--text", &code, "--app", "gedit"],
        "COMPUTER_DENYLISTED",
    );
    assert!(message(&v).contains("console of Python"), "{v}");
    assert!(message(&v).contains("app_tiers gedit=code"), "{v}");
    desk.fails_with(&["keys", "Return", "--app", "gedit"], "COMPUTER_DENYLISTED");
    desk.fails_with(&["keys", "ctrl+j", "--app", "gedit"], "COMPUTER_DENYLISTED");
    desk.fails_with(
        &["act", &console, "type", &format!("{code}\n")],
        "COMPUTER_DENYLISTED",
    );
    desk.fails_with(
        &["act", &console, "set_value", &code],
        "COMPUTER_DENYLISTED",
    );

    // Another window made active: gedit's console, still its focus widget, shows
    // no focus, and keys sent to gedit (which the driver activates first) would
    // land in it. Before, they did and the console ran them.
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "zenity",
        "--info",
        "--text",
        "elsewhere",
    ]);
    desk.wait_for("zenity", "label", "elsewhere", 60_000);
    desk.ok(&["observe", "--app", "gedit"]);
    let v = desk.fails_with(
        &["keys", "--app", "gedit", "--text", &format!("{code}\n")],
        "COMPUTER_DENYLISTED",
    );
    assert!(message(&v).contains("shows the keyboard focus"), "{v}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!fired.exists(), "the console ran code");
    desk.ok(&["act", &console, "focus"]);

    // ctrl+Tab leaves the console (a text view keeps plain Tab); from there a
    // sequence that comes back and types is stopped at the key after it came back.
    desk.ok(&["keys", "ctrl+Tab", "--app", "gedit"]);
    let v = desk.fails_with(
        &["keys", "shift+ctrl+Tab o p e n Return", "--app", "gedit"],
        "COMPUTER_DENYLISTED",
    );
    assert!(message(&v).contains("stopped before"), "{v}");

    // The document is no console: it takes text.
    let (_, doc) = desk.run(&["find", "", "--role", "textbox", "--app", "gedit"]);
    let doc_ref = doc["matches"]
        .as_array()
        .and_then(|m| m.iter().find(|h| h["ref"] != console.as_str()))
        .and_then(|h| h["ref"].as_str())
        .unwrap_or_else(|| panic!("no document textbox: {doc}"))
        .to_owned();
    desk.ok(&["act", &doc_ref, "set_value", "print('just text')"]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!fired.exists(), "the console ran code");
    let read = desk.ok(&["read", &console]);
    assert!(
        !read["text"].as_str().unwrap_or_default().contains("open("),
        "nothing reached the console: {read}"
    );

    // Granted at a terminal (here a provisioning `--yes`): the console runs code.
    desk.ok(&["config", "set", "app_tiers", "gedit=code", "--yes"]);
    desk.ok(&["act", &console, "focus"]);
    desk.ok(&["keys", "--text", &code, "--app", "gedit"]);
    desk.ok(&["keys", "Return", "--app", "gedit"]);
    let start = Instant::now();
    while !fired.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the granted console ran nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

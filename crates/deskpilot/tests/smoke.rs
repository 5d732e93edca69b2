//! The fast tier's real-app smoke test (`scripts/test-fast`): one sandbox desktop
//! shared by every check, so the tier stays short. Each check reads its outcome
//! from an oracle deskpilot did not write where one exists (the text read back is
//! the app's own, the calculator's display, the audit log the host wrote). The
//! full gate's test binaries cover each area in depth.

mod common;

use common::own::{Desk, TempDir};
use serde_json::Value;

/// The ref of the first element of `obs` (an `observe --json` document) with this
/// role whose states include `state`.
fn element(obs: &Value, role: &str, state: &str) -> String {
    obs["elements"]
        .as_array()
        .expect("observe --json lists its elements")
        .iter()
        .find(|e| {
            e["role"] == role
                && e["states"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|x| x == state))
        })
        .and_then(|e| e["ref"].as_str())
        .unwrap_or_else(|| panic!("no {role} that is {state}: {obs}"))
        .to_owned()
}

#[test]
fn one_desktop_reads_acts_types_and_refuses() {
    let dir = TempDir::new("smoke");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");

    // Read, act, read back: mousepad's text view.
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.wait_for("mousepad", "menuitem", "File", 60000);
    let obs = desk.ok(&["observe", "--app", "mousepad"]);
    let text = element(&obs, "textbox", "editable");
    let written = "smoke test — 你好, café";
    let act = desk.ok(&["act", &text, "set_value", written]);
    assert_eq!(act["result"]["status"], "executed", "{act}");
    assert_eq!(desk.ok(&["read", &text])["text"], written);

    // find says where the text was: in the field's value.
    let found = desk.ok(&["find", "café", "--app", "mousepad"]);
    assert_eq!(found["matches"][0]["ref"], text.as_str(), "{found}");
    assert_eq!(found["matches"][0]["matched"], "value", "{found}");

    // The keyboard fallback, read back from the field.
    desk.ok(&["keys", "ctrl+End", "--app", "mousepad"]);
    let typed = desk.ok(&["keys", "--text", " tail", "--app", "mousepad"]);
    assert_eq!(typed["result"]["verified_chars"], 5, "{typed}");
    assert_eq!(desk.ok(&["read", &text])["text"], format!("{written} tail"));

    // Every effect went through the host's pipeline and is in its audit log.
    let audit = desk.ok(&["audit", "--tail", "10"]);
    let ops: Vec<&str> = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "executed")
        .filter_map(|r| r["op"].as_str())
        .collect();
    assert_eq!(ops, ["sandbox_run", "set_value", "keys", "keys"], "{audit}");

    // A GTK 4 app: 7 + 2 = on gnome-calculator's buttons, its display the oracle.
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    desk.wait_for("gnome-calculator", "button", "7", 60000);
    desk.ok(&["observe", "--app", "gnome-calculator"]);
    for label in ["7", "+", "2", "="] {
        let hit = desk.ok(&[
            "find",
            label,
            "--role",
            "button",
            "--app",
            "gnome-calculator",
        ]);
        let r = hit["matches"]
            .as_array()
            .and_then(|h| h.iter().find(|h| h["name"] == label))
            .and_then(|h| h["ref"].as_str())
            .unwrap_or_else(|| panic!("no button {label:?}: {hit}"))
            .to_owned();
        desk.ok(&["act", &r, "click"]);
    }
    desk.ok(&[
        "wait",
        "--app",
        "gnome-calculator",
        "--text",
        "9",
        "--timeout-ms",
        "5000",
    ]);

    // From inside the sandbox, where an agent's apps run, the scripted config route
    // is refused and the file stays as it was.
    let out = dir.path().join("inside.json");
    let script = format!(
        // Even with the sandbox's marker taken out of its own environment, its
        // ancestors carry it.
        "env -u DESKPILOT_SANDBOX DESKPILOT_CONFIG='{cfg}' '{exe}' --json config set enabled false --yes > '{out}'",
        cfg = desk.config().display(),
        exe = env!("CARGO_BIN_EXE_deskpilot"),
        out = out.display()
    );
    let before = std::fs::read(desk.config()).unwrap();
    desk.ok(&["sandbox", "run", "--", "sh", "-c", &script]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let answer = loop {
        if let Ok(t) = std::fs::read_to_string(&out)
            && t.trim_end().ends_with('}')
        {
            break t;
        }
        assert!(std::time::Instant::now() < deadline, "no answer in {out:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let v: Value = serde_json::from_str(&answer).expect("one JSON document");
    assert_eq!(v["error"]["code"], "COMPUTER_SCOPE_VIOLATION", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("inside a deskpilot sandbox"),
        "{v}"
    );
    assert_eq!(std::fs::read(desk.config()).unwrap(), before);
}

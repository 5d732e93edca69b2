//! The command line without a desktop: shell completions and the manual page made
//! from the same definitions, exit statuses, and the provisioning route of `config`
//! (`set --yes` from a script that no deskpilot process started).

use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn deskpilot(config: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deskpilot"))
        .args(args)
        .env("DESKPILOT_CONFIG", config)
        .env_remove("DESKPILOT_SANDBOX")
        .env_remove("DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        // A provisioning script: no terminal on stdin.
        .stdin(Stdio::null())
        .output()
        .expect("deskpilot runs")
}

fn doc(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "one JSON document ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn completions_and_the_manual_come_from_the_command_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    for (shell, marker) in [
        ("bash", "complete -F _deskpilot"),
        ("zsh", "#compdef deskpilot"),
        ("fish", "complete -c deskpilot"),
    ] {
        let out = deskpilot(&cfg, &["completions", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..200.min(text.len())]
        );
        // Every user command completes.
        for cmd in ["observe", "act", "config", "mcp", "completions"] {
            assert!(text.contains(cmd), "{shell} lacks {cmd}");
        }
    }
    let out = deskpilot(&cfg, &["man"]);
    assert!(out.status.success(), "{out:?}");
    let man = String::from_utf8(out.stdout).unwrap();
    assert!(
        man.starts_with(".ie") || man.contains(".TH deskpilot 1"),
        "{man:.200}"
    );
    for section in [
        ".TH deskpilot-observe 1",
        ".TH deskpilot-config 1",
        r"\-\-max\-tokens",
    ] {
        assert!(man.contains(section), "the manual lacks {section}");
    }
}

#[test]
fn bad_usage_exits_2_and_says_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    for args in [
        &["--json", "act", "e1", "frobnicate"][..],
        &["--json", "completions", "tcsh"][..],
        &["--json", "--session", "bad name!", "apps"][..],
        &["--json", "--device", "ssh:-oProxyCommand=x", "apps"][..],
    ] {
        let out = deskpilot(&cfg, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert_eq!(
            doc(&out)["error"]["code"],
            "COMPUTER_INVALID_ARGUMENT",
            "{args:?}"
        );
    }
}

/// A provisioning script sets keys with `--yes` (no terminal, no question); the
/// file is sealed as `config set` seals it, and a key set without `--yes` still
/// needs a terminal.
#[test]
fn a_provisioning_script_configures_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("deskpilot").join("config.toml");
    let out = deskpilot(
        &cfg,
        &["--json", "config", "set", "capture", "a11y-and-pixels"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(doc(&out)["error"]["code"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(
        doc(&out)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--yes"),
        "the refusal names the scripted route: {}",
        doc(&out)
    );
    assert!(!cfg.exists());

    for (k, v) in [("capture", "a11y-and-pixels"), ("enabled", "true")] {
        let out = deskpilot(&cfg, &["--json", "config", "set", k, v, "--yes"]);
        assert!(out.status.success(), "{k}: {out:?}");
    }
    let out = deskpilot(&cfg, &["--json", "config"]);
    let shown = doc(&out);
    assert_eq!(shown["effective"]["capture"], "a11y-and-pixels", "{shown}");
    assert_eq!(shown["effective"]["enabled"], true, "{shown}");
    assert_eq!(shown["changed_outside"], false, "{shown}");

    let out = deskpilot(&cfg, &["--json", "config", "unset", "capture", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        doc(&deskpilot(&cfg, &["--json", "config"]))["effective"]["capture"],
        "a11y-only"
    );
}

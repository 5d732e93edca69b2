//! The CLI against real apps in sandbox desktops: the demo, errors with codes, secrets
//! that never leak. Each test starts its own sandbox, so they run in parallel. A
//! missing Xvfb or app fails the test; nothing here is skipped.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::time::Duration;

use common::{bin, run, sandbox_with};
use deskpilot_driver_linux::sandbox::Sandbox;
use serde_json::Value;

fn ok(sb: &Sandbox, args: &[&str]) -> Value {
    let (out, v) = run(sb, args);
    assert!(
        out.status.success() && v["ok"] == true,
        "{args:?} failed: {v}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

fn fails_with(sb: &Sandbox, args: &[&str], code: &str) -> Value {
    let (out, v) = run(sb, args);
    assert_eq!(out.status.code(), Some(1), "{args:?} should fail: {v}");
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["code"], code, "{args:?}: {v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.len() > 20, "the message should say what to do: {msg:?}");
    v
}

/// Bad usage (a value the command line itself gets wrong): exit 2, still one JSON
/// document with `COMPUTER_INVALID_ARGUMENT`, before anything touches the desktop.
fn usage_error(sb: &Sandbox, args: &[&str]) -> Value {
    let (out, v) = run(sb, args);
    assert_eq!(out.status.code(), Some(2), "{args:?} is bad usage: {v}");
    assert_eq!(v["ok"], false);
    assert_eq!(
        v["error"]["code"], "COMPUTER_INVALID_ARGUMENT",
        "{args:?}: {v}"
    );
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.len() > 20, "the message should say what to do: {msg:?}");
    v
}

fn find_ref(sb: &Sandbox, args: &[&str], pred: impl Fn(&Value) -> bool) -> String {
    let v = ok(sb, args);
    let hit = v["matches"]
        .as_array()
        .and_then(|m| m.iter().find(|h| pred(h)).cloned())
        .unwrap_or_else(|| panic!("no match for {args:?}: {v}"));
    hit["ref"].as_str().unwrap().to_string()
}

#[test]
fn demo_writes_saves_and_verifies_the_file() {
    let saved =
        std::env::temp_dir().join(format!("deskpilot-demo-test-{}.txt", std::process::id()));
    let out = bin()
        .args(["demo", "--json", "--out"])
        .arg(&saved)
        .output()
        .expect("demo runs");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "demo stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success(),
        "demo failed: {v}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["verified"], true);
    assert_eq!(v["screenshots"], 0);
    let file = v["file"].as_str().unwrap();
    assert_eq!(file, saved.display().to_string());
    let bytes = std::fs::read(file).expect("the saved file exists");
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        "Hello from deskpilot — 你好, café"
    );
    let steps = v["steps"].as_array().unwrap();
    let channels: Vec<&str> = steps.iter().filter_map(|s| s["channel"].as_str()).collect();
    assert!(
        channels.iter().any(|c| c.starts_with("text:")),
        "the text goes in through the text interface: {channels:?}"
    );
    assert!(
        !channels.iter().any(|c| c.starts_with("pointer")),
        "the demo never moves the pointer: {channels:?}"
    );
    let _ = std::fs::remove_file(file);
}

#[test]
fn bad_refs_ops_and_vanished_windows_fail_with_codes() {
    let sb = sandbox_with(&["mousepad"], "mousepad");
    let obs = ok(&sb, &["observe", "--app", "mousepad"]);
    assert!(obs["text"].as_str().unwrap().contains("menubar"), "{obs}");

    fails_with(
        &sb,
        &["act", "e99999", "click"],
        "COMPUTER_ELEMENT_NOT_FOUND",
    );
    // What is wrong before the desktop is asked is bad usage (exit 2).
    usage_error(&sb, &["act", "banana", "click"]);
    usage_error(&sb, &["act", "e1", "fly"]);
    usage_error(&sb, &["act", "e1", "set_value"]);
    usage_error(&sb, &["act", "e1", "click", "extra"]);
    usage_error(&sb, &["keys", "ctrl+nosuchkey"]);
    fails_with(
        &sb,
        &["observe", "--window", "w999"],
        "COMPUTER_ELEMENT_NOT_FOUND",
    );
    fails_with(
        &sb,
        &["observe", "--app", "no-such-app"],
        "COMPUTER_ELEMENT_NOT_FOUND",
    );
    usage_error(&sb, &["find", "x", "--role", "spaceship"]);
    fails_with(
        &sb,
        &[
            "wait",
            "--app",
            "mousepad",
            "--text",
            "never-there-xyz",
            "--timeout-ms",
            "500",
        ],
        "COMPUTER_TIMEOUT",
    );
    // Malformed arguments are usage errors (exit 2), not crashes, and name their
    // code for humans too.
    let out = bin().args(["act"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    for args in [
        &["act"][..],
        &["act", "e5", "frobnicate"],
        &["act", "e50x", "click"],
    ] {
        let out = bin().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("error[COMPUTER_INVALID_ARGUMENT]: "),
            "{args:?}: {err}"
        );
        let malformed_ref = args.get(1) == Some(&"e50x");
        assert_eq!(
            err.matches("is not a ref").count(),
            usize::from(malformed_ref),
            "said once, for the malformed ref only: {err}"
        );
    }

    // The app goes away: the grant loses its window, and acting on the old refs is
    // refused as stale (the action was in flight against a binding that ended).
    let file_menu = find_ref(&sb, &["find", "File", "--role", "menuitem"], |_| true);
    for pid in sb.state().pids.iter().skip(1) {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "mousepad" {
            // SAFETY: sending a signal to a process this test started.
            unsafe { libc_kill(*pid as i32) };
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let e = fails_with(
        &sb,
        &["act", &file_menu, "click"],
        "COMPUTER_STALE_REVISION",
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is gone (closed, or its app ended)")),
        "{e}"
    );
    // Everything else still answers.
    ok(&sb, &["apps"]);
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

unsafe fn libc_kill(pid: i32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        kill(pid, 9);
    }
}

#[test]
fn a_password_never_appears_in_any_output() {
    const SECRET: &str = "Tr0ub4dor-zq81-SECRET";
    let sb = sandbox_with(&["zenity", "--password", "--title", "Unlock"], "zenity");
    let field = find_ref(
        &sb,
        &["find", "", "--app", "zenity", "--role", "textbox"],
        |h| {
            h["states"]
                .as_array()
                .is_some_and(|s| s.iter().any(|x| x == "password"))
        },
    );
    // The host refuses to put text into a password field at all.
    let (out, v) = run(&sb, &["act", &field, "set_value", SECRET]);
    assert_eq!(v["error"]["code"], "COMPUTER_SECURE_INPUT", "{v}");
    let (kout, kv) = run(&sb, &["keys", "--text", SECRET, "--app", "zenity"]);
    assert_eq!(kv["error"]["code"], "COMPUTER_SECURE_INPUT", "{kv}");
    let mut everything = format!(
        "{v}{}{kv}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&kout.stderr)
    );
    for args in [
        vec!["observe", "--app", "zenity"],
        vec!["find", "Tr0ub", "--app", "zenity"],
        vec!["find", "", "--app", "zenity"],
    ] {
        let (o, j) = run(&sb, &args);
        everything.push_str(&j.to_string());
        everything.push_str(&String::from_utf8_lossy(&o.stderr));
        // Human output too.
        let h = bin()
            .arg("--sandbox")
            .arg(sb.state().display.to_string())
            .args(&args)
            .output()
            .unwrap();
        everything.push_str(&String::from_utf8_lossy(&h.stdout));
        everything.push_str(&String::from_utf8_lossy(&h.stderr));
    }
    assert!(!everything.contains(SECRET), "the secret leaked");
    assert!(
        !everything.contains("Tr0ub4dor"),
        "part of the secret leaked"
    );
    let obs = ok(&sb, &["observe", "--app", "zenity"]);
    assert!(
        obs["text"]
            .as_str()
            .unwrap()
            .lines()
            .any(|l| l.contains(&format!("[{field}]")) && l.contains("password")),
        "{obs}"
    );
}

//! Helpers shared by the CLI's real-app tests: the binary with the caller's desktop
//! removed from its environment, one-JSON-document parsing, and a sandbox with one
//! app whose window is listed.
#![allow(dead_code)] // Each test file uses a different subset.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};
use serde_json::Value;

/// How long an app may take to show its first window: 60 s covers a cold start on
/// a 2-core machine busy with other tests.
pub const APP_WINDOW_TIMEOUT: Duration = Duration::from_secs(60);

/// The `deskpilot` binary, never talking to the caller's own desktop.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_deskpilot"));
    c.env_remove("DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("DESKPILOT_SANDBOX")
        .env_remove("AT_SPI_BUS_ADDRESS")
        .env_remove("WAYLAND_DISPLAY");
    c
}

/// Parses stdout as exactly one JSON document.
pub fn one_document(args: &[&str], out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout of {args:?} is not one JSON document ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Runs `deskpilot --sandbox N --json ARGS`.
pub fn run(sb: &Sandbox, args: &[&str]) -> (Output, Value) {
    let out = bin()
        .arg("--sandbox")
        .arg(sb.state().display.to_string())
        .arg("--json")
        .args(args)
        .output()
        .expect("deskpilot runs");
    let v = one_document(args, &out);
    (out, v)
}

/// Starts a sandbox running `argv` and waits until the app named `app_name`
/// (case-insensitive) lists a window.
pub fn sandbox_with(argv: &[&str], app_name: &str) -> Sandbox {
    let mut sb = Sandbox::start(SandboxOptions::default()).expect("sandbox starts");
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let child = sb.spawn(&argv).expect("app starts");
    // The app belongs to the sandbox, which stops it on drop.
    std::mem::forget(child);
    let start = Instant::now();
    loop {
        let (out, v) = run(&sb, &["apps"]);
        let ready = out.status.success()
            && v["apps"].as_array().is_some_and(|apps| {
                apps.iter().any(|a| {
                    a["name"]
                        .as_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case(app_name))
                        && a["windows"].as_array().is_some_and(|w| !w.is_empty())
                })
            });
        if ready {
            return sb;
        }
        assert!(
            start.elapsed() < APP_WINDOW_TIMEOUT,
            "{app_name} never showed a window: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

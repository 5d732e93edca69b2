//! Helpers shared by the host's fixture-desktop tests.
#![allow(dead_code)] // Each test file uses a different subset.

use deskpilot_host::config::{Config, Effective};
use deskpilot_host::host::Host;
use deskpilot_host::{Observation, ObserveOptions, Target};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// A single-threaded runtime for one test.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The fixture's editor app.
pub fn editor() -> Target {
    Target::App("editor".into())
}

/// Observes `t`, which must succeed.
pub async fn observe(h: &mut Host, t: &Target) -> Observation {
    h.observe(t, &ObserveOptions::default())
        .await
        .unwrap_or_else(|e| panic!("observe {t:?}: {} {}", e.code.as_str(), e.message))
}

/// The error of a call that must fail.
pub fn failed<T>(r: Result<T>) -> ComputerError {
    match r {
        Ok(_) => panic!("the call succeeded but must fail"),
        Err(e) => e,
    }
}

/// Asserts the error's code, printing its message when it differs.
#[track_caller]
pub fn assert_code(e: &ComputerError, code: ErrorCode) {
    assert_eq!(e.code, code, "{}: {}", e.code.as_str(), e.message);
}

/// The ref on the first line of `text` that contains all of `parts`.
pub fn ref_of(text: &str, parts: &[&str]) -> String {
    let line = text
        .lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{text}"));
    line[line.find('[').unwrap() + 1..line.find(']').unwrap()].to_string()
}

/// Settings of an enabled desktop in `mode`, no lists, a large budget, 10 min expiry.
pub fn settings(mode: Mode) -> Effective {
    let mut s = Config::default().effective(true);
    s.enabled = true;
    s.mode = mode;
    s.allow_apps = Vec::new();
    s.allow_all_apps = false;
    s.deny_apps = Vec::new();
    s.self_apps = Vec::new();
    s.action_budget = 200;
    s.idle_expiry_ms = 600_000;
    s
}

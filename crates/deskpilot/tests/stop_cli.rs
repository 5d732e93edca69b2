//! `deskpilot stop` against a real app in a sandbox: it aborts a running host,
//! refuses agent grants for the cooldown, and a user grant at a terminal lifts it.
//!
//! A stop reaches every deskpilot that shares its runtime directory, so this binary
//! holds exactly one test and gives itself a private runtime directory (sandbox,
//! state, grant lock, stop record and host sockets) before anything else runs.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Isolated, run_env, run_tty, sandbox_with_apps};
use serde_json::Value;

#[test]
fn stop_aborts_the_run_refuses_agent_grants_and_a_user_grant_lifts_it() {
    let runtime = std::env::temp_dir().join(format!(
        "deskpilot-stop-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&runtime).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    // SAFETY: this binary holds a single test, and this runs before it starts any
    // thread or child process, so nothing reads the environment concurrently.
    unsafe { std::env::set_var("DESKPILOT_RUNTIME_DIR", &runtime) };

    let iso = Isolated::new("stop", "");
    let (sb, _) = sandbox_with_apps(&iso, &[(&["mousepad"], "mousepad")]);
    let ok = |args: &[&str]| -> Value {
        let (out, v) = run_env(&sb, &iso, args);
        assert!(
            out.status.success() && v["ok"] == true,
            "{args:?} failed: {v}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        v
    };
    let fails_with = |args: &[&str], code: &str| -> Value {
        let (out, v) = run_env(&sb, &iso, args);
        assert_eq!(out.status.code(), Some(1), "{args:?} should fail: {v}");
        assert_eq!(v["error"]["code"], code, "{args:?}: {v}");
        v
    };

    let obs = ok(&["observe", "--app", "mousepad"]);
    assert_eq!(obs["grant"]["issuer"], "agent", "{obs}");

    // A long wait: a running host that stop must reach.
    let mut waiter = iso
        .command(&sb)
        .args([
            "--json",
            "wait",
            "--app",
            "mousepad",
            "--text",
            "never-xyz",
            "--timeout-ms",
            "30000",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wait starts");
    let wait_pid = waiter.id();
    let socket = runtime.join("hosts").join(format!("host-{wait_pid}.sock"));
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the wait never listened at {}",
            socket.display()
        );
        assert!(waiter.try_wait().unwrap().is_none(), "the wait ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let the wait get past its first read.
    std::thread::sleep(Duration::from_millis(1500));

    let stop = ok(&["stop"]);
    let stopped_at = Instant::now();
    let rec = &stop["stop"];
    assert_eq!(
        rec["until_ms"].as_u64().unwrap() - rec["at_ms"].as_u64().unwrap(),
        30_000,
        "{stop}"
    );
    assert!(
        stop["hosts"]
            .as_array()
            .is_some_and(|h| h.iter().any(|r| r["host"]["pid"] == wait_pid)),
        "stop did not report the aborted wait (pid {wait_pid}): {stop}"
    );
    let status = loop {
        if let Some(st) = waiter.try_wait().unwrap() {
            break st;
        }
        if stopped_at.elapsed() > Duration::from_secs(10) {
            let _ = waiter.kill();
            let _ = waiter.wait();
            panic!("the wait was not aborted by stop");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        stopped_at.elapsed() < Duration::from_secs(5),
        "the wait took {:?} to end",
        stopped_at.elapsed()
    );
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "wait's stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(v["error"]["code"], "COMPUTER_STOPPED_BY_USER", "{v}");

    // The cooldown: agent grants are refused, and the message says how to lift it.
    let v = fails_with(
        &["observe", "--app", "mousepad"],
        "COMPUTER_STOPPED_BY_USER",
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("grant --user")),
        "{v}"
    );
    // Lifting it is the user's, at a terminal.
    let v = fails_with(&["grant", "--user"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("terminal")),
        "{v}"
    );
    let (st, doc, text) = run_tty(&sb, &iso, &["grant", "--user"], "n\n");
    assert!(!st.success(), "a declined user grant succeeded: {text}");
    assert_eq!(
        doc["error"]["code"], "COMPUTER_CONFIRMATION_REQUIRED",
        "{text}"
    );
    fails_with(
        &["observe", "--app", "mousepad"],
        "COMPUTER_STOPPED_BY_USER",
    );
    let (st, doc, text) = run_tty(&sb, &iso, &["grant", "--user"], "y\n");
    assert!(st.success(), "grant --user failed: {text}");
    assert_eq!(doc["grant"]["issuer"], "user", "{text}");
    let obs = ok(&["observe", "--app", "mousepad"]);
    assert_eq!(obs["grant"]["issuer"], "user", "{obs}");
    assert_eq!(obs["grant"]["grant_id"], doc["grant"]["grant_id"], "{obs}");

    let audit = ok(&["audit", "--tail", "50"]);
    let records = audit["records"].as_array().unwrap();
    assert!(
        records.iter().any(|r| r["event"] == "grant.stopped"),
        "{audit}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "grant.issued" && r["issuer"] == "user"),
        "{audit}"
    );

    // A lock record naming a live process that is not a deskpilot host (pid 1, its
    // real start time) blocks other sessions until the user's stop clears it.
    // The sandbox keeps its desktop's lock in its own directory.
    let lock = std::fs::read_dir(&sb.state().dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with("grant-") && n.to_string_lossy().ends_with(".lock")
            })
        })
        .expect("the desktop's grant lock record");
    let stat = std::fs::read_to_string("/proc/1/stat").unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    std::fs::write(
        &lock,
        serde_json::json!({"pid": 1, "session": "planted", "grant_id": "g-x", "since_ms": 1, "start": start})
            .to_string(),
    )
    .unwrap();
    let v = fails_with(
        &["--session", "other", "observe", "--app", "mousepad"],
        "COMPUTER_NO_GRANT",
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("planted"),
        "{v}"
    );
    let stopped = ok(&["stop"]);
    assert!(stopped["locks_cleared"].as_u64().unwrap() >= 1, "{stopped}");
    assert!(!lock.exists(), "stop removed the planted lock");

    drop(sb);
    let _ = std::fs::remove_dir_all(&runtime);
}

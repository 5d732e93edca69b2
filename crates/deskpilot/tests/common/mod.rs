//! Helpers shared by the CLI's real-app tests: the binary with the caller's desktop
//! removed from its environment, one-JSON-document parsing, and a sandbox with one
//! app whose window is listed.
#![allow(dead_code)] // Each test file uses a different subset.

pub mod own;
pub mod stdio_mcp;

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
                        && a["status"] != "accessibility_disabled"
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

/// A private audit log and config file for one test's deskpilot calls, under a
/// directory of its own that is removed on drop. Every call made through
/// [`run_env`] or [`run_tty`] gets `XDG_STATE_HOME` (the audit log is at
/// `$XDG_STATE_HOME/deskpilot/audit.jsonl`) and `DESKPILOT_CONFIG` from here.
pub struct Isolated {
    pub root: std::path::PathBuf,
    /// `XDG_STATE_HOME` of the calls; [`Isolated::fresh_audit`] moves it.
    pub state_home: std::path::PathBuf,
    /// `DESKPILOT_CONFIG` of the calls.
    pub config: std::path::PathBuf,
}

impl Isolated {
    /// A fresh directory named after `tag`, with `config` written as the config file.
    pub fn new(tag: &str, config: &str) -> Isolated {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let root = std::env::temp_dir().join(format!(
            "deskpilot-test-{tag}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&root).expect("test directory");
        let iso = Isolated {
            state_home: root.join("state"),
            config: root.join("config.toml"),
            root,
        };
        iso.write_config(config);
        iso
    }

    /// Replaces the config file's text.
    pub fn write_config(&self, text: &str) {
        std::fs::write(&self.config, text).expect("config written");
    }

    /// The audit log the calls write.
    pub fn audit_path(&self) -> std::path::PathBuf {
        self.state_home.join("deskpilot").join("audit.jsonl")
    }

    /// Points later calls at a new, empty audit log named `name`.
    pub fn fresh_audit(&mut self, name: &str) {
        self.state_home = self.root.join(name);
    }

    /// `deskpilot --sandbox N` with this directory's audit log and config.
    pub fn command(&self, sb: &Sandbox) -> Command {
        let mut c = bin();
        c.env("XDG_STATE_HOME", &self.state_home)
            .env("DESKPILOT_CONFIG", &self.config)
            .arg("--sandbox")
            .arg(sb.state().display.to_string());
        c
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Runs `deskpilot --sandbox N --json ARGS` with `iso`'s audit log and config.
pub fn run_env(sb: &Sandbox, iso: &Isolated, args: &[&str]) -> (Output, Value) {
    let out = iso
        .command(sb)
        .arg("--json")
        .args(args)
        .output()
        .expect("deskpilot runs");
    let v = one_document(args, &out);
    (out, v)
}

/// Runs `deskpilot --sandbox N --json ARGS` with `iso`'s environment on a
/// pseudo-terminal (`script -qec`), typing `answer` (e.g. `"y\n"`) into it. Returns
/// the exit status and the JSON document found in the terminal's output (`Null`
/// when there is none), with the whole output for messages.
pub fn run_tty(
    sb: &Sandbox,
    iso: &Isolated,
    args: &[&str],
    answer: &str,
) -> (std::process::ExitStatus, Value, String) {
    use std::io::Write;
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut line = vec![
        quote(env!("CARGO_BIN_EXE_deskpilot")),
        "--sandbox".into(),
        sb.state().display.to_string(),
        "--json".into(),
    ];
    line.extend(args.iter().map(|a| quote(a)));
    let mut child = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env_remove("DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("DESKPILOT_SANDBOX")
        .env_remove("AT_SPI_BUS_ADDRESS")
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_STATE_HOME", &iso.state_home)
        .env("DESKPILOT_CONFIG", &iso.config)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(answer.as_bytes())
        .expect("answer written");
    let out = child.wait_with_output().expect("script finishes");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    // The document may follow a prompt on the same line: take the first `{` from
    // which the rest of the output parses as one JSON object.
    let doc = text
        .match_indices('{')
        .find_map(|(i, _)| serde_json::from_str::<Value>(text[i..].trim()).ok())
        .filter(Value::is_object)
        .unwrap_or(Value::Null);
    (out.status, doc, text)
}

/// Starts a sandbox and launches each `(argv, app name)` in turn, waiting until the
/// app lists a window before launching the next (so the last one is frontmost).
/// Every call goes through `iso`. Returns the sandbox and the apps' pids, in order.
pub fn sandbox_with_apps(iso: &Isolated, apps: &[(&[&str], &str)]) -> (Sandbox, Vec<u32>) {
    let mut sb = Sandbox::start(SandboxOptions::default()).expect("sandbox starts");
    let mut pids = Vec::new();
    for (argv, app_name) in apps {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let child = sb.spawn(&argv).expect("app starts");
        pids.push(child.id());
        // The app belongs to the sandbox, which stops it on drop.
        std::mem::forget(child);
        let start = Instant::now();
        loop {
            let (out, v) = run_env(&sb, iso, &["apps"]);
            let ready = out.status.success()
                && v["apps"].as_array().is_some_and(|apps| {
                    apps.iter().any(|a| {
                        a["name"]
                            .as_str()
                            .is_some_and(|n| n.eq_ignore_ascii_case(app_name))
                            && a["windows"].as_array().is_some_and(|w| !w.is_empty())
                            // Listed by its program name before its tree is
                            // registered; ready once it is.
                            && a["status"] != "accessibility_disabled"
                    })
                });
            if ready {
                break;
            }
            assert!(
                start.elapsed() < APP_WINDOW_TIMEOUT,
                "{app_name} never showed a window: {v}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    (sb, pids)
}

/// Runs `args`, which must succeed with one JSON document saying `ok: true`.
pub fn ok(sb: &Sandbox, iso: &Isolated, args: &[&str]) -> Value {
    let (out, v) = run_env(sb, iso, args);
    assert!(
        out.status.success() && v["ok"] == true,
        "{args:?} failed: {v}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

/// Runs `args`, which must fail with `code` and a message that says what to do.
pub fn fails_with(sb: &Sandbox, iso: &Isolated, args: &[&str], code: &str) -> Value {
    let (out, v) = run_env(sb, iso, args);
    // Bad usage exits 2, every other failure 1.
    let status = if code == "COMPUTER_INVALID_ARGUMENT" {
        2
    } else {
        1
    };
    assert_eq!(out.status.code(), Some(status), "{args:?} should fail: {v}");
    assert_eq!(v["ok"], false, "{args:?}: {v}");
    assert_eq!(v["error"]["code"], code, "{args:?}: {v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.len() > 20, "the message should say what to do: {msg:?}");
    v
}

/// The error message of a failed call's document.
pub fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}

/// 2,000 characters of mixed scripts (Latin, accents, Greek, CJK, dashes), the same
/// every run: most of them are not on the keymap and go through borrowed keycodes.
#[allow(dead_code)]
pub fn mixed_text() -> String {
    const PARTS: [&str; 10] = [
        "abc",
        "你好世界",
        "café",
        "ÄÖÜß",
        "Ωβγ",
        "—",
        "日本語",
        "éè",
        "xyz ",
        "123",
    ];
    let mut s = String::new();
    let mut seed = 7u64;
    while s.chars().count() < 2000 {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        s.push_str(PARTS[(seed >> 33) as usize % PARTS.len()]);
    }
    s.chars().take(2000).collect()
}

/// Reads one HTTP/1.1 request from `s` (10 s read timeout) and returns its body, as
/// long as its `Content-Length` says; `None` for a connection closed before the
/// head ended. For the fake model servers of the tests.
pub fn read_http_body(s: &mut std::net::TcpStream) -> Option<Vec<u8>> {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf[head_end..].to_vec())
}

/// The titles of the sandbox's top-level X windows (`xprop`, an oracle deskpilot did
/// not write).
pub fn x_titles(display: u32) -> Vec<String> {
    let xprop = |args: &[&str]| {
        let out = Command::new("xprop")
            .env("DISPLAY", format!(":{display}"))
            .args(args)
            .output()
            .expect("xprop runs (Debian x11-utils)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let list = xprop(&["-root", "_NET_CLIENT_LIST"]);
    let ids = list.split('#').nth(1).unwrap_or_default();
    ids.split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| xprop(&["-id", id, "_NET_WM_NAME"]))
        .collect()
}

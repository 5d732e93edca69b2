//! The CLI's tool commands against real processes: `doctor` on a ready sandbox and
//! with no desktop at all, `driver` speaking JSON-RPC 2.0 on stdio, and the `sandbox`
//! start / list / env / stop round trip. Each test starts its own sandbox (or its own
//! runtime directory), so they run in parallel with each other and with other test
//! files. A missing Xvfb or app fails the test; nothing here is skipped.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

mod common;

use common::{bin, one_document, run, sandbox_with};
use deskpilot_driver_linux::sandbox::Sandbox;
use serde_json::{Value, json};

/// How long one driver request may take to be answered. A snapshot of mousepad
/// takes ~20 ms here; the ceiling covers a machine busy with other builds.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// A private directory removed when dropped. Kept short: sandboxes put Unix socket
/// paths (at most 107 bytes) under it.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let p = PathBuf::from(format!("/tmp/dp-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A check of `doctor`'s report, by name.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check {name:?} in {report}"))
}

#[test]
fn doctor_reports_a_fresh_sandbox_healthy() {
    let sb = sandbox_with(&["mousepad"], "mousepad");
    let n = sb.state().display;
    let (out, v) = run(&sb, &["doctor"]);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["healthy"], true, "{v}");
    let desktop = check(&v, "desktop");
    assert_eq!(desktop["ok"], true);
    assert_eq!(
        desktop["detail"],
        format!("display :{n} · deskpilot sandbox :{n}")
    );
    let a11y = check(&v, "accessibility enabled");
    assert_eq!(a11y["ok"], true);
    assert_eq!(a11y["detail"], "org.a11y.Status.IsEnabled = true");
    let input = check(&v, "synthetic input");
    assert_eq!(input["ok"], true);
    assert_eq!(
        input["detail"],
        "X11 with XTest: keyboard/pointer fallback available"
    );
    assert_eq!(check(&v, "accessibility bus")["ok"], true);
    assert_eq!(check(&v, "apps")["ok"], true, "mousepad exposes a tree");
    let names: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] != true)
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(names.is_empty(), "failing checks: {names:?}");
}

#[test]
fn doctor_without_any_desktop_fails_and_says_how_to_start_one() {
    // No DISPLAY, no session bus, and a runtime directory holding no sandbox.
    let empty = TempDir::new("doctor");
    let args = ["doctor", "--json"];
    let out = bin()
        .env("DESKPILOT_RUNTIME_DIR", empty.path())
        .args(args)
        .output()
        .expect("deskpilot runs");
    let v = one_document(&args, &out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_ACCESSIBILITY_DISABLED", "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("deskpilot sandbox start"),
        "the message says how to get a desktop: {msg:?}"
    );
    // The checks travel with the error: the first one failed, on the desktop.
    let report = &v["error"]["detail"];
    assert_eq!(report["healthy"], false, "{v}");
    let desktop = check(report, "desktop");
    assert_eq!(desktop["ok"], false);
    assert_eq!(desktop["fix"], "deskpilot sandbox start");

    // Human output: the code on stderr, naming the same command.
    let out = bin()
        .env("DESKPILOT_RUNTIME_DIR", empty.path())
        .arg("doctor")
        .output()
        .expect("deskpilot runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error[COMPUTER_ACCESSIBILITY_DISABLED]: "))
        .unwrap_or_else(|| panic!("no error line on stderr:\n{stderr}"));
    assert!(line.contains("deskpilot sandbox start"), "{line}");
}

/// A `deskpilot driver` child and its stdout, read line by line on a thread.
struct DriverProc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl DriverProc {
    fn spawn(sb: &Sandbox) -> DriverProc {
        // A config of its own in which this machine's user lets the driver serve.
        let config = std::env::temp_dir().join(format!(
            "deskpilot-driverproc-{}-{}.toml",
            std::process::id(),
            sb.state().display
        ));
        std::fs::write(&config, "serve = true\n").expect("config written");
        let mut child = bin()
            .env("DESKPILOT_CONFIG", &config)
            .arg("--sandbox")
            .arg(sb.state().display.to_string())
            .arg("driver")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("deskpilot driver starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        DriverProc {
            child,
            stdin,
            lines: rx,
            next_id: 1,
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write request");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    /// The next stdout line, which must be one JSON-RPC 2.0 response.
    fn response(&self) -> Value {
        let line = match self.lines.recv_timeout(ANSWER_TIMEOUT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("no answer within {ANSWER_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the driver closed stdout"),
        };
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        let obj = v.as_object().expect("a response is an object");
        assert!(obj.contains_key("id"), "a response has an id: {line}");
        assert!(
            obj.contains_key("result") != obj.contains_key("error"),
            "exactly one of result and error: {line}"
        );
        v
    }

    /// Sends a request and returns its result; panics on an error response.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let req = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send_line(&req.to_string());
        let v = self.response();
        assert_eq!(v["id"], id, "answers come in order here: {v}");
        assert!(v.get("error").is_none(), "{method} failed: {v}");
        v["result"].clone()
    }
}

impl Drop for DriverProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn driver_speaks_json_rpc_on_stdio_and_survives_bad_lines() {
    let sb = sandbox_with(&["mousepad"], "mousepad");
    let mut d = DriverProc::spawn(&sb);

    let hello = d.call("hello", Value::Null);
    assert_eq!(hello["platform"], "linux");
    assert_eq!(hello["driver"], "deskpilot-driver-linux");
    assert_eq!(hello["permissions"]["accessibility"], true);
    assert_eq!(hello["capabilities"]["tree"], true);

    let apps = d.call("apps.list", Value::Null);
    let mousepad = apps
        .as_array()
        .expect("apps.list answers a list")
        .iter()
        .find(|a| a["name"] == "mousepad")
        .unwrap_or_else(|| panic!("mousepad is listed: {apps}"))
        .clone();
    assert_eq!(mousepad["status"], "ok");
    assert_eq!(mousepad["toolkit"], "gtk");
    let window = &mousepad["windows"][0];
    let handle = window["handle"]
        .as_str()
        .expect("window handle")
        .to_string();
    let title = window["title"].as_str().expect("window title").to_string();
    assert_eq!(title, "Untitled 1 - Mousepad");

    // A line that is not JSON: -32700, id null, and the server goes on.
    d.send_line(r#"{"jsonrpc":"2.0","id":900,"method":"#);
    let v = d.response();
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert_eq!(v["id"], Value::Null);

    // An unknown method: -32601 with the request's id.
    d.send_line(r#"{"jsonrpc":"2.0","id":901,"method":"no.such.method"}"#);
    let v = d.response();
    assert_eq!(v["error"]["code"], -32601, "{v}");
    assert_eq!(v["id"], 901);

    // Still answering: a snapshot of mousepad's window.
    let snap = d.call("tree.snapshot", json!({ "window": handle }));
    assert_eq!(snap["window"]["handle"], handle.as_str());
    assert_eq!(snap["window"]["app"], "mousepad");
    assert_eq!(snap["window"]["title"], title.as_str());
    assert_eq!(snap["root"]["role"], "window");
    assert_eq!(snap["root"]["name"], title.as_str());
    let mut roles = Vec::new();
    let mut stack = vec![&snap["root"]];
    while let Some(n) = stack.pop() {
        if let Some(r) = n["role"].as_str() {
            roles.push(r.to_string());
        }
        stack.extend(n["children"].as_array().into_iter().flatten());
    }
    for want in ["menubar", "textbox"] {
        assert!(roles.iter().any(|r| r == want), "no {want} in {roles:?}");
    }
    assert!(
        snap["stats"]["objects"].as_u64().unwrap() > 10,
        "{}",
        snap["stats"]
    );

    // Closing stdin ends the server cleanly, with nothing more on stdout.
    drop(d.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = d.child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the driver did not exit after EOF"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    let rest: Vec<String> = d.lines.try_iter().collect();
    assert!(rest.is_empty(), "stray stdout lines: {rest:?}");
}

/// Runs `deskpilot ARGS` with its sandboxes under `root` only.
fn in_root(root: &Path, args: &[&str]) -> Output {
    bin()
        .env("DESKPILOT_RUNTIME_DIR", root)
        .args(args)
        .output()
        .expect("deskpilot runs")
}

/// Stops every sandbox under a runtime directory when dropped, so a failing test
/// leaves nothing running.
struct StopAll<'a>(&'a Path);

impl Drop for StopAll<'_> {
    fn drop(&mut self) {
        let _ = in_root(self.0, &["sandbox", "stop", "--all"]);
    }
}

/// Pids of live Xvfb processes serving display `:n` (zombies have no command line).
fn xvfb_pids(n: u32) -> Vec<u32> {
    let want = format!(":{n}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let argv: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        let is_xvfb = argv.first().is_some_and(|a| a.ends_with(b"Xvfb"));
        if is_xvfb && argv.get(1).is_some_and(|a| *a == want.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn sandbox_start_list_env_stop_round_trip() {
    let root = TempDir::new("sbx");
    let _cleanup = StopAll(root.path());

    let args = ["sandbox", "start", "--json"];
    let out = in_root(root.path(), &args);
    let started = one_document(&args, &out);
    assert_eq!(out.status.code(), Some(0), "{started}");
    assert_eq!(started["ok"], true);
    let n = started["sandbox"]["display"]
        .as_u64()
        .expect("a display number") as u32;
    let dir = root.path().join(format!("sandbox-{n}"));
    let bus = format!("unix:path={}", dir.join("bus").display());
    assert_eq!(started["sandbox"]["dir"], dir.display().to_string());
    assert_eq!(started["sandbox"]["bus_address"], bus.as_str());
    assert_eq!(started["env"]["DISPLAY"], format!(":{n}"));
    assert_eq!(started["env"]["DBUS_SESSION_BUS_ADDRESS"], bus.as_str());
    let xvfb = xvfb_pids(n);
    assert_eq!(xvfb.len(), 1, "one Xvfb on :{n}: {xvfb:?}");
    assert_eq!(
        started["sandbox"]["pids"][0].as_u64(),
        Some(u64::from(xvfb[0])),
        "the first recorded process is the display's Xvfb"
    );

    // Listed, and running; only this one (the runtime directory is private).
    let args = ["sandbox", "list", "--json"];
    let out = in_root(root.path(), &args);
    let list = one_document(&args, &out);
    assert_eq!(out.status.code(), Some(0), "{list}");
    let rows = list["sandboxes"].as_array().expect("sandboxes");
    assert_eq!(rows.len(), 1, "{list}");
    assert_eq!(rows[0]["sandbox"]["display"], n);
    assert_eq!(rows[0]["running"], true);

    // `sandbox env` picks the only sandbox and prints lines a shell can eval.
    let out = in_root(root.path(), &["sandbox", "env"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.iter().all(|l| l.starts_with("export ")),
        "only export lines:\n{text}"
    );
    assert!(
        lines.contains(&format!("export DISPLAY=':{n}'").as_str()),
        "{text}"
    );
    assert!(
        lines.contains(&format!("export DBUS_SESSION_BUS_ADDRESS='{bus}'").as_str()),
        "{text}"
    );
    assert!(
        !text.contains("DESKPILOT_SANDBOX"),
        "the cleanup marker is not exported:\n{text}"
    );

    // The display answers: an app can be run in it by number.
    let args = ["--sandbox", &n.to_string(), "doctor", "--json"];
    let out = in_root(root.path(), &args);
    let doctor = one_document(&args, &out);
    assert_eq!(doctor["healthy"], true, "{doctor}");

    // Stop: nothing of the display is left.
    let args = ["sandbox", "stop", "--json"];
    let out = in_root(root.path(), &args);
    let stopped = one_document(&args, &out);
    assert_eq!(out.status.code(), Some(0), "{stopped}");
    assert_eq!(stopped["stopped"], json!([n]));
    assert_eq!(xvfb_pids(n), Vec::<u32>::new(), "Xvfb on :{n} still runs");
    assert!(!Path::new(&format!("/tmp/.X{n}-lock")).exists());
    assert!(!dir.exists(), "the sandbox directory is removed");
    let args = ["sandbox", "list", "--json"];
    let out = in_root(root.path(), &args);
    let list = one_document(&args, &out);
    assert_eq!(list["sandboxes"], json!([]), "{list}");
}

#[test]
fn a_runtime_directory_owned_by_another_user_is_refused() {
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc_getuid() };
    // As root: a fresh directory given to `nobody`; otherwise `/`, which root owns.
    let root = if me == 0 {
        let d = std::env::temp_dir().join(format!("deskpilot-foreign-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(65_534), Some(65_534)).unwrap();
        d
    } else {
        PathBuf::from("/")
    };
    let out = in_root(&root, &["--json", "sandbox", "start"]);
    let v = one_document(&["sandbox", "start"], &out);
    if me == 0 {
        let _ = std::fs::remove_dir_all(&root);
    }
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_OS_PERMISSION_MISSING", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("DESKPILOT_RUNTIME_DIR")),
        "the message says what to do: {v}"
    );
}

unsafe extern "C" {
    #[link_name = "getuid"]
    fn libc_getuid() -> u32;
}

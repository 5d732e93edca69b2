//! `deskpilot mcp --sandbox` against real mousepad in a sandbox desktop, driven by a
//! client deskpilot did not write: the official MCP Python SDK (`mcp` from PyPI),
//! through tests/mcp_client.py; plus protocol robustness over raw stdio.
//!
//! The Python client runs with `$DESKPILOT_MCP_PYTHON`, by default the venv that
//! `scripts/mcp-venv` creates at `target/mcp-venv/bin/python`. Every server gets its
//! own temporary `XDG_STATE_HOME` and `DESKPILOT_CONFIG`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a server may take to start its sandbox and answer `initialize`.
const START_TIMEOUT: Duration = Duration::from_secs(90);

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let p = std::env::var_os("DESKPILOT_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/mcp-venv/bin/python"));
    assert!(
        p.exists(),
        "{} is missing: run `scripts/mcp-venv` (creates target/mcp-venv with the MCP Python SDK) or set DESKPILOT_MCP_PYTHON",
        p.display()
    );
    p
}

/// A temporary state directory and config file for one server.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str, config: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("deskpilot-mcp-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::write(dir.join("config.toml"), config).unwrap();
        Scratch { dir }
    }

    fn apply(&self, c: &mut Command) {
        c.env("XDG_STATE_HOME", self.dir.join("state"))
            .env("DESKPILOT_CONFIG", self.dir.join("config.toml"))
            .env_remove("DISPLAY")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env_remove("DESKPILOT_SANDBOX")
            .env_remove("AT_SPI_BUS_ADDRESS")
            .env_remove("WAYLAND_DISPLAY");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run_client(phase: &str, scratch: &Scratch) {
    let mut c = Command::new(python());
    c.arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_deskpilot"))
        .arg(phase);
    scratch.apply(&mut c);
    let out = c.output().expect("the python client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.lines().last() == Some(&format!("ok {phase}")),
        "MCP client phase {phase} failed ({}):\n--- stdout\n{stdout}\n--- stderr (last 6000 bytes)\n{}",
        out.status,
        &stderr[stderr.len().saturating_sub(6000)..]
    );
}

#[test]
fn the_python_sdk_client_works_mousepad_through_the_server() {
    let scratch = Scratch::new("main", "");
    run_client("main", &scratch);
}

#[test]
fn plan_mode_refusals_reach_the_python_sdk_client_as_tool_errors() {
    let scratch = Scratch::new("plan", "[sandbox]\nmode = \"plan\"\n");
    run_client("plan", &scratch);
}

#[test]
fn a_screenshot_reaches_the_python_sdk_client_as_image_content() {
    let scratch = Scratch::new("pixels", "capture = \"a11y-and-pixels\"\n");
    run_client("pixels", &scratch);
}

/// `deskpilot mcp --sandbox` with raw stdio: lines in, parsed lines out.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next: u64,
}

impl Raw {
    fn start(scratch: &Scratch) -> Raw {
        let mut c = Command::new(env!("CARGO_BIN_EXE_deskpilot"));
        c.args(["mcp", "--sandbox"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        scratch.apply(&mut c);
        let mut child = c.spawn().expect("deskpilot mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Raw {
            child,
            stdin: Some(stdin),
            lines,
            next: 1,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(bytes).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    /// Waits for the error answer to an input line that could not be read as a
    /// request: `"id": null` and `code` (JSON-RPC 2.0 §5.1).
    fn expect_null_id_error(&mut self, code: i64, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no {code} error within {within:?}: {e}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
            if v["id"].is_null() && v.get("error").is_some() {
                assert_eq!(v["error"]["code"], json!(code), "{v}");
                return v;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value, within: Duration) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send_raw(msg.to_string().as_bytes());
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|e| {
                panic!("no answer to {method} (id {id}) within {within:?}: {e}")
            });
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // Closing stdin ends the session; the server stops its sandbox on exit.
        let pid = self.child.id();
        drop(self.stdin.take());
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("deskpilot mcp (pid {pid}) did not exit after stdin closed; killing it");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn malformed_input_gets_clean_errors_and_the_server_keeps_serving() {
    let scratch = Scratch::new("raw", "");
    let mut s = Raw::start(&scratch);
    let init = s.request(
        "initialize",
        json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }),
        START_TIMEOUT,
    );
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("deskpilot"),
        "{init}"
    );
    s.send_raw(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let short = Duration::from_secs(30);

    // Not JSON at all: a parse error each (id null), and the server goes on.
    s.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 77, \"method\": ");
    s.expect_null_id_error(-32700, short);
    s.send_raw(b"\x00\x01 not json \xff");
    s.expect_null_id_error(-32700, short);
    // A batch: MCP has none; an invalid-request error.
    s.send_raw(br#"[{"jsonrpc":"2.0","id":5,"method":"ping"}]"#);
    s.expect_null_id_error(-32600, short);
    let list = s.request("tools/list", json!({}), short);
    assert_eq!(
        list["result"]["tools"].as_array().map(Vec::len),
        Some(11),
        "{list}"
    );

    // An unknown tool: a JSON-RPC invalid-params error.
    let r = s.request(
        "tools/call",
        json!({ "name": "computer_teleport", "arguments": {} }),
        short,
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("computer_teleport"),
        "{r}"
    );

    // Wrong argument types: a tool result with isError and COMPUTER_INVALID_ARGUMENT.
    for args in [
        json!({ "actions": "click e5" }),
        json!({ "actions": [{ "ref": 5, "op": "click" }] }),
        json!({ "actions": [{ "ref": "e5", "op": "smash" }] }),
    ] {
        let r = s.request(
            "tools/call",
            json!({ "name": "computer_act", "arguments": args }),
            short,
        );
        assert_eq!(r["result"]["isError"], json!(true), "{r}");
        assert_eq!(
            r["result"]["structuredContent"]["code"],
            json!("COMPUTER_INVALID_ARGUMENT"),
            "{r}"
        );
    }
    let r = s.request(
        "tools/call",
        json!({ "name": "computer_wait", "arguments": { "timeout_ms": "soon", "text": "x" } }),
        short,
    );
    assert_eq!(
        r["result"]["structuredContent"]["code"],
        json!("COMPUTER_INVALID_ARGUMENT"),
        "{r}"
    );

    // Well-formed JSON that is not a JSON-RPC message: an Invalid Request error.
    s.send_raw(br#"{"hello":"world"}"#);
    s.expect_null_id_error(-32600, short);

    // A 10 MB line: over the 4 MiB line limit, never buffered whole; an
    // invalid-request error naming its size, and the server goes on.
    let mut big = br#"{"jsonrpc":"2.0","id":424242,"method":"tools/call","params":{"name":"computer_find","arguments":{"text":""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 10 * 1024 * 1024));
    big.extend(br#""}}}"#);
    s.send_raw(&big);
    let e = s.expect_null_id_error(-32600, short);
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("bytes") && m.contains("limit")),
        "{e}"
    );
    let list = s.request("tools/list", json!({}), short);
    assert_eq!(
        list["result"]["tools"].as_array().map(Vec::len),
        Some(11),
        "{list}"
    );
    let apps = s.request(
        "tools/call",
        json!({ "name": "computer_apps", "arguments": {} }),
        short,
    );
    assert_eq!(apps["result"]["isError"], json!(false), "{apps}");
}

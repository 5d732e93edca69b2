//! `computer_task` of `deskpilot mcp --sandbox` against real mousepad, driven by the
//! official MCP Python SDK (tests/mcp_task_client.py), with the model bound to a fake
//! OpenAI-compatible server on 127.0.0.1 run by this test; and the same tool
//! refused with `COMPUTER_NO_MODEL_BINDING` by a server whose config binds none.
//!
//! The Python client runs with `$DESKPILOT_MCP_PYTHON`, by default the venv that
//! `scripts/mcp-venv` creates at `target/mcp-venv/bin/python`. Every server gets its
//! own temporary `XDG_STATE_HOME`, `DESKPILOT_CONFIG` and `DESKPILOT_RUNTIME_DIR`.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

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
            std::env::temp_dir().join(format!("deskpilot-mcp-task-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::create_dir_all(dir.join("rt")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join("rt"), std::fs::Permissions::from_mode(0o700))
                .unwrap();
        }
        std::fs::write(dir.join("config.toml"), config).unwrap();
        Scratch { dir }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run_client(phase: &str, scratch: &Scratch) {
    let out = Command::new(python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_task_client.py"))
        .arg(env!("CARGO_BIN_EXE_deskpilot"))
        .arg(phase)
        .env("XDG_STATE_HOME", scratch.dir.join("state"))
        .env("DESKPILOT_CONFIG", scratch.dir.join("config.toml"))
        // A private runtime directory: the server's sandbox, grant lock and budget
        // records are its own, never those a test on the same display left behind.
        .env("DESKPILOT_RUNTIME_DIR", scratch.dir.join("rt"))
        .env_remove("DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("DESKPILOT_SANDBOX")
        .env_remove("AT_SPI_BUS_ADDRESS")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("the python client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.lines().last() == Some(&format!("ok {phase}")),
        "MCP client phase {phase} failed ({}):\n--- stdout\n{stdout}\n--- stderr (last 6000 bytes)\n{}",
        out.status,
        &stderr[stderr.len().saturating_sub(6000)..]
    );
}

/// A fake OpenAI-compatible endpoint with a two-step script: `set_value` "Hi" on the
/// first editable textbox the prompt shows, then `done`. Returns its base URL and
/// the user messages it received.
fn fake_model() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let Some(body) = common::read_http_body(&mut s) else {
                continue;
            };
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let user = body["messages"][1]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let textbox = user
                .lines()
                .map(str::trim_start)
                .find(|l| l.starts_with("[e") && l.contains("] textbox") && l.contains("editable"))
                .and_then(|l| Some(l[1..l.find(']')?].to_string()));
            let decision = if user.contains("\nEarlier steps:\n") {
                json!({ "kind": "done", "summary": "typed Hi, all good" })
            } else {
                json!({ "kind": "action", "ref": textbox.unwrap_or_else(|| "e1".into()),
                        "op": "set_value", "value": "Hi" })
            };
            log.lock().unwrap().push(user);
            let reply = json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "fake",
                "choices": [{ "index": 0, "finish_reason": "stop",
                    "message": { "role": "assistant", "content": json!({ "decision": decision }).to_string() } }],
                "usage": { "prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930 }
            })
            .to_string();
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                )
                .as_bytes(),
            );
        }
    });
    (base, seen)
}

#[test]
fn computer_task_runs_the_bound_model_on_mousepad() {
    let (base, seen) = fake_model();
    let scratch = Scratch::new(
        "bound",
        &format!(
            "[model]\nprovider = \"openai\"\nmodel = \"fake\"\nendpoint = \"{base}\"\ntimeout_ms = 5000\n"
        ),
    );
    run_client("task", &scratch);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "one model call per step");
    assert!(
        seen[0].contains("type Hi into the editor") && seen[0].contains("mousepad"),
        "{}",
        seen[0]
    );
}

#[test]
fn computer_task_without_a_binding_is_refused() {
    let scratch = Scratch::new("unbound", "");
    run_client("no-binding", &scratch);
}

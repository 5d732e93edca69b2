//! A minimal MCP client over stdio, for the bench: deskpilot's own server and a
//! peer's are driven by the same client code, so warm figures compare like with
//! like.
//!
//! Owns spawning the server, the `initialize` handshake, `tools/call` requests
//! (one JSON-RPC message per line, as the MCP stdio transport frames them), and
//! reading the server's memory from `/proc`. Notifications the server sends are
//! skipped; a server that exits or answers with a JSON-RPC error is an error.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde_json::{Value, json};

/// One answered tool call.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Request written to response read, ms.
    pub ms: f64,
    /// The text of the result's content blocks, joined.
    pub text: String,
    /// The result's `isError`.
    pub is_error: bool,
    /// The `result` object itself.
    pub result: Value,
}

/// A running MCP server on stdio.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    /// The server's stdout, line by line, from a reader thread (so a call can
    /// give up on a server that never answers).
    lines: Receiver<String>,
    next_id: u64,
    what: String,
    /// Longest a request may wait for its response.
    limit: Duration,
}

fn fail(what: &str, msg: impl std::fmt::Display) -> ComputerError {
    ComputerError::new(ErrorCode::Internal, format!("{what}: {msg}"))
}

impl Client {
    /// Starts `argv` with exactly `env` (stderr discarded: servers log there) and
    /// completes the `initialize` handshake; every request may wait `limit` for its
    /// response.
    ///
    /// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when it cannot be started;
    /// `COMPUTER_INTERNAL` when the handshake fails.
    pub fn start(
        argv: &[String],
        env: &BTreeMap<String, String>,
        limit: Duration,
    ) -> Result<Client> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| ComputerError::new(ErrorCode::InvalidArgument, "an empty command"))?;
        let mut cmd = Command::new(program);
        cmd.args(args);
        let mut child = super::process::spawn(cmd, env, Stdio::piped(), Stdio::null(), program)?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut c = Client {
            child,
            stdin,
            lines,
            next_id: 1,
            what: argv.join(" "),
            limit,
        };
        c.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "deskpilot-bench", "version": env!("CARGO_PKG_VERSION") },
            }),
        )?;
        c.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;
        Ok(c)
    }

    fn send(&mut self, msg: &Value) -> Result<()> {
        let mut line = msg.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|_| self.stdin.flush())
            .map_err(|e| fail(&self.what, format!("cannot write to the server: {e}")))
    }

    /// Sends a request; returns its `result`.
    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        let deadline = Instant::now() + self.limit;
        loop {
            let line = match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ComputerError::new(
                        ErrorCode::Timeout,
                        format!(
                            "{}: {method} got no response within {} s",
                            self.what,
                            self.limit.as_secs()
                        ),
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(fail(
                        &self.what,
                        format!("the server exited during {method}"),
                    ));
                }
            };
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v.get("id") != Some(&json!(id)) {
                continue; // a notification or a request of the server's own
            }
            if let Some(e) = v.get("error") {
                return Err(fail(&self.what, format!("{method} failed: {e}")));
            }
            return Ok(v.get("result").cloned().unwrap_or(Value::Null));
        }
    }

    /// Calls tool `name` with `arguments`.
    pub fn call(&mut self, name: &str, arguments: Value) -> Result<Answer> {
        let t = Instant::now();
        let result = self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let text = result["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        Ok(Answer {
            ms,
            text,
            is_error: result["isError"] == true,
            result,
        })
    }

    /// The server's resident memory now and at its peak, MiB (`VmRSS`, `VmHWM`).
    pub fn memory_mib(&self) -> Result<(f64, f64), ComputerError> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .map_err(|e| fail(&self.what, format!("cannot read its /proc status: {e}")))?;
        let kib = |key: &str| -> Option<f64> {
            let line = status.lines().find(|l| l.starts_with(key))?;
            line[key.len()..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()
        };
        match (kib("VmRSS:"), kib("VmHWM:")) {
            (Some(rss), Some(hwm)) => Ok((rss / 1024.0, hwm / 1024.0)),
            _ => Err(fail(&self.what, "its /proc status has no VmRSS or VmHWM")),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // End of stdin ends an MCP stdio server; a server that ignores it is killed.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

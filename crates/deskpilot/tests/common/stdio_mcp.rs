//! `deskpilot … mcp` spoken to over stdio, one request at a time, by a test.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A running `deskpilot mcp`, initialized; killed when dropped.
pub struct Mcp {
    pub child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: u64,
}

impl Mcp {
    /// Starts `command` (a `deskpilot … mcp` command line) with piped stdio, the
    /// server's stderr kept in `stderr` (a file), and initializes the session.
    pub fn start(mut command: Command, stderr: Stdio) -> Mcp {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut m = Mcp {
            child,
            stdin,
            stdout,
            id: 0,
        };
        m.send(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "deskpilot-test", "version": "1"}}),
        );
        m.answer();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        writeln!(m.stdin, "{note}").unwrap();
        m
    }

    /// Sends a request without reading its answer.
    pub fn send(&mut self, method: &str, params: Value) {
        self.id += 1;
        let req = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.stdin, "{req}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next answer's `result` (a JSON-RPC error fails the test).
    pub fn answer(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert!(v.get("error").is_none(), "a JSON-RPC error: {v}");
        v["result"].clone()
    }

    /// A `tools/call` and its result (`isError` results included).
    pub fn tool(&mut self, name: &str, arguments: Value) -> Value {
        self.send("tools/call", json!({"name": name, "arguments": arguments}));
        self.answer()
    }

    /// The pids of the server's child processes.
    pub fn children(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(c) = std::fs::read_to_string(task.path().join("children")) {
                out.extend(c.split_whitespace().filter_map(|s| s.parse::<u32>().ok()));
            }
        }
        out
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

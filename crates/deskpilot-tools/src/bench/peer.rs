//! The peer the bench compares against: a pyatspi full-tree walk, the way OSWorld
//! collects a tree, run by Debian's `/usr/bin/python3` as one persistent child
//! process that is asked once per run.
//!
//! Owns starting that process (with the sandbox's environment), the line protocol
//! spoken with `pyatspi_walk.py` (one JSON request per line on its stdin, one JSON
//! reply per line on its stdout) and stopping it. It never measures the walk itself:
//! the script times the walk inside Python with `time.perf_counter`, so neither
//! interpreter start-up nor the pipe is counted. The script only reads the tree, and
//! reads less per object than OSWorld does (no Image, Selection, Value or Action
//! queries), so ratios against it are lower bounds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The walk script, compiled into the binary.
const SCRIPT: &str = include_str!("pyatspi_walk.py");

/// Debian's interpreter, which is the one python3-pyatspi installs into. A `python3`
/// found on `PATH` may be another build (pyenv, conda) without the bindings.
pub const PYTHON: &str = "/usr/bin/python3";

/// Longest a single walk may take before the peer is declared hung. Measured here:
/// Chromium with the bench page (~5,800 objects) 4–5 s, LibreOffice Calc 2–3 s.
const WALK_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest the interpreter may take to import pyatspi and answer "ready".
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One walk as the script reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct Walk {
    /// Wall time of the walk alone, inside Python, ms.
    pub ms: f64,
    /// Objects visited.
    pub objects: u64,
    /// OSWorld's flat TSV linearization of the walked tree (header included), when
    /// asked for.
    #[serde(default)]
    pub tsv: Option<String>,
    /// Data rows of `tsv` (nodes OSWorld's filter kept).
    #[serde(default)]
    pub tsv_rows: u64,
    /// The toolkit sets `SHOWING` on top-level windows only (GTK 4), so `VISIBLE`
    /// was read as on screen, as deskpilot's driver does for such toolkits.
    #[serde(default)]
    pub visible_as_showing: bool,
    /// The on-screen objects of an interactive role inside the asked rectangle,
    /// when asked for ([`Peer::interactive`]).
    #[serde(default)]
    pub interactive: Vec<Operable>,
}

/// One object a user could operate, as the pyatspi walk found it on screen.
#[derive(Debug, Clone, Deserialize)]
pub struct Operable {
    /// Its D-Bus object path on the application's bus.
    pub path: String,
    /// Its AT-SPI role name (`push button`).
    pub role: String,
    /// Its accessible name.
    pub name: String,
    /// The D-Bus path of the nearest combo box above it, if any: a closed combo
    /// box stands for its options by printing the selected one as its value.
    #[serde(default)]
    pub combo: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Reply {
    ok: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

/// The running walker process.
pub struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    stderr_log: PathBuf,
}

fn failed(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::Internal, msg)
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with:\n{tail}")
    }
}

impl Peer {
    /// Starts the walker under `/usr/bin/python3` with `env` (the sandbox's display
    /// and buses), writing the script into `dir` and the interpreter's stderr to
    /// `dir/pyatspi_walk.log`. Waits for its "ready" line.
    ///
    /// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when `/usr/bin/python3` is missing or
    /// cannot import pyatspi (the message names the Debian package);
    /// `COMPUTER_INTERNAL` when the process cannot be started or does not answer.
    pub async fn start(dir: &Path, env: &BTreeMap<String, String>) -> Result<Peer> {
        if !Path::new(PYTHON).is_file() {
            return Err(ComputerError::new(
                ErrorCode::PlatformUnsupported,
                format!(
                    "{PYTHON} is missing; the bench compares against a pyatspi walk run by Debian's python3: install python3 and python3-pyatspi (scripts/install-deps does)"
                ),
            ));
        }
        let script = dir.join("pyatspi_walk.py");
        std::fs::write(&script, SCRIPT)
            .map_err(|e| failed(format!("cannot write {}: {e}", script.display())))?;
        let stderr_log = dir.join("pyatspi_walk.log");
        let log = std::fs::File::create(&stderr_log)
            .map_err(|e| failed(format!("cannot create {}: {e}", stderr_log.display())))?;
        let mut child = Command::new(PYTHON)
            .arg("-u")
            .arg(&script)
            .env_clear()
            .envs(env)
            .env("PATH", "/usr/bin:/bin")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| failed(format!("cannot start {PYTHON}: {e}")))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| failed("the walker's stdin is not a pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| failed("the walker's stdout is not a pipe"))?;
        let mut peer = Peer {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            stderr_log,
        };
        let ready = peer.read_reply(START_TIMEOUT).await;
        match ready {
            Ok(_) => Ok(peer),
            Err(mut e) => {
                if e.message.contains("pyatspi") {
                    e.code = ErrorCode::PlatformUnsupported;
                }
                peer.stop().await;
                Err(e)
            }
        }
    }

    async fn read_reply(&mut self, timeout: Duration) -> Result<Reply> {
        let line = match tokio::time::timeout(timeout, self.lines.next_line()).await {
            Err(_) => {
                return Err(failed(format!(
                    "the pyatspi walker did not answer within {} s{}",
                    timeout.as_secs(),
                    log_tail(&self.stderr_log)
                )));
            }
            Ok(Err(e)) => return Err(failed(format!("cannot read from the pyatspi walker: {e}"))),
            Ok(Ok(None)) => {
                return Err(failed(format!(
                    "the pyatspi walker exited{}",
                    log_tail(&self.stderr_log)
                )));
            }
            Ok(Ok(Some(line))) => line,
        };
        let reply: Reply = serde_json::from_str(&line).map_err(|e| {
            failed(format!(
                "the pyatspi walker answered something that is not its protocol ({e}): {}",
                line.chars().take(200).collect::<String>()
            ))
        })?;
        if !reply.ok {
            return Err(failed(format!(
                "the pyatspi walker failed: {}",
                reply.error.as_deref().unwrap_or("no reason given")
            )));
        }
        Ok(reply)
    }

    /// Walks every object of the application on accessibility bus name `bus` (e.g.
    /// `:1.4`), with OSWorld's TSV of the tree when `tsv` is true.
    ///
    /// Errors: `COMPUTER_INTERNAL` when the walker fails, exits or takes longer than
    /// two minutes.
    pub async fn walk(&mut self, bus: &str, tsv: bool) -> Result<Walk> {
        self.ask(serde_json::json!({ "bus": bus, "tsv": tsv }))
            .await
    }

    /// A walk of the application on `bus` that also lists the objects of an
    /// interactive role SHOWING and VISIBLE inside `rect` (x, y, width, height in
    /// screen pixels), in [`Walk::interactive`]. Slower than [`Peer::walk`] (it reads
    /// every object's path): never timed.
    ///
    /// Errors: as [`Peer::walk`].
    pub async fn interactive(&mut self, bus: &str, rect: [i64; 4]) -> Result<Walk> {
        self.ask(serde_json::json!({ "bus": bus, "interactive": rect }))
            .await
    }

    async fn ask(&mut self, request: serde_json::Value) -> Result<Walk> {
        let mut req = serde_json::to_string(&request)
            .map_err(|e| failed(format!("cannot encode a walk request: {e}")))?;
        req.push('\n');
        self.stdin
            .write_all(req.as_bytes())
            .await
            .map_err(|e| failed(format!("cannot write to the pyatspi walker: {e}")))?;
        self.stdin
            .flush()
            .await
            .map_err(|e| failed(format!("cannot write to the pyatspi walker: {e}")))?;
        let reply = self.read_reply(WALK_TIMEOUT).await?;
        serde_json::from_value(serde_json::Value::Object(reply.rest))
            .map_err(|e| failed(format!("the pyatspi walker's reply lacks a field: {e}")))
    }

    /// Closes the walker's stdin (it exits at end of input) and reaps it; kills it
    /// after a second.
    pub async fn stop(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(Duration::from_secs(1), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

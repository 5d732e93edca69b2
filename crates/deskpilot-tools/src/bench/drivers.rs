//! The peer drivers, measured on the same apps in the same run: xa11y (crates.io,
//! its CLI and its MCP server) and cua-driver (PyPI, its bundled Linux binary: the
//! CLI against its warm daemon, and its MCP server), against deskpilot's own CLI
//! and MCP server measured the same way, run by run in turn.
//!
//! Owns installing them (`scripts/bench-peers`, pinned versions into
//! `target/peers/`), their environment (the sandbox's display and buses, a home
//! directory of the bench's own; cua-driver with its telemetry disabled first and
//! every one of its processes in a network namespace of its own, `bwrap
//! --unshare-net`, so it can neither report nor check for updates), and the
//! figures: `whole_process_ms`, `warm_mcp_ms` and `output_tokens`, each with the
//! peers beside deskpilot. All three read the tree only: cua-driver with
//! `include_screenshot: false`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use deskpilot_protocol::types::WindowInfo;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;
use serde_json::{Value, json};

use super::cli;
use super::mcp;
use super::process::{self, Run};
use super::report::Figure;
use super::stats::Summary;
use deskpilot_protocol::Result;

/// The installed peers (the script's pinned versions).
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub xa11y: PathBuf,
    pub xa11y_version: String,
    pub cua_driver: PathBuf,
    pub cua_driver_version: String,
}

fn err(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::Internal, msg)
}

/// Runs `scripts/bench-peers` (from the source tree this binary was built from)
/// and reads what it installed.
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when the script is missing (an
/// installed binary without its source tree) or fails (no registry reachable).
pub fn install() -> Result<Installed> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/bench-peers");
    if !script.exists() {
        return Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!(
                "--peers needs the source tree's scripts/bench-peers ({} is missing); run the bench from a checkout",
                script.display()
            ),
        ));
    }
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| err(format!("cannot run {}: {e}", script.display())))?;
    if !out.status.success() {
        return Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!(
                "{} failed ({}); its messages are above",
                script.display(),
                out.status
            ),
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let (Some(xa11y), Some(cua)) = (lines.next(), lines.next()) else {
        return Err(err("scripts/bench-peers printed no paths"));
    };
    let version = |bin: &str| {
        std::fs::read_to_string(
            Path::new(bin)
                .parent()
                .unwrap_or(Path::new("/"))
                .join("VERSION"),
        )
        .or_else(|_| {
            std::fs::read_to_string(
                Path::new(bin)
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new("/"))
                    .join("VERSION"),
            )
        })
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
    };
    Ok(Installed {
        xa11y: PathBuf::from(xa11y),
        xa11y_version: version(xa11y),
        cua_driver: PathBuf::from(cua),
        cua_driver_version: version(cua),
    })
}

/// The environment of a peer: the sandbox's variables, `PATH`, and a home of its
/// own under the bench's directory (where cua-driver keeps its config and socket).
fn peer_env(sandbox: &BTreeMap<String, String>, home: &Path) -> BTreeMap<String, String> {
    let mut env = sandbox.clone();
    env.insert("HOME".into(), home.display().to_string());
    env.insert(
        "PATH".into(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
    );
    env
}

/// `bwrap --unshare-net --dev-bind / /` before `argv`: the same filesystem, no
/// network (the sandbox's buses and display are Unix sockets with paths).
fn offline(argv: Vec<String>) -> Vec<String> {
    let mut v: Vec<String> = ["bwrap", "--unshare-net", "--dev-bind", "/", "/", "--"]
        .map(String::from)
        .to_vec();
    v.extend(argv);
    v
}

/// cua-driver's daemon, stopped when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn summary(v: &[f64], what: &str) -> Result<Summary> {
    Summary::of(v).ok_or_else(|| err(format!("no sample of {what}")))
}

fn tokens(text: &str) -> f64 {
    deskpilot_core::tokens::count(text) as f64
}

fn ok(r: Run, what: &str) -> Result<Run> {
    if r.ok() { Ok(r) } else { Err(r.failure(what)) }
}

/// The X11 window id cua-driver knows the window of `pid` by (its `list_windows`).
fn cua_window_id(listing: &Value, pid: u32, title: &str) -> Option<u64> {
    let windows = listing["windows"].as_array()?;
    let of_pid: Vec<&Value> = windows.iter().filter(|w| w["pid"] == json!(pid)).collect();
    of_pid
        .iter()
        .find(|w| w["title"].as_str().is_some_and(|t| t == title))
        .or_else(|| of_pid.first())
        .and_then(|w| w["window_id"].as_u64())
}

/// The peers' figures on one app (see the module documentation).
#[allow(clippy::too_many_arguments)]
pub fn measure(
    p: &Installed,
    key: &str,
    bus_name: &str,
    window: &WindowInfo,
    display: u32,
    ours_env: &BTreeMap<String, String>,
    sandbox_env: &BTreeMap<String, String>,
    runs: usize,
    dir: &Path,
) -> Result<Vec<Figure>> {
    let pid = window
        .pid
        .ok_or_else(|| err(format!("the {key} window has no pid")))?;
    let home = dir.join("peer-home");
    std::fs::create_dir_all(&home)
        .map_err(|e| err(format!("cannot create {}: {e}", home.display())))?;
    let env = peer_env(sandbox_env, &home);
    let cua = p.cua_driver.display().to_string();
    let xa11y = p.xa11y.display().to_string();
    let socket = home.join("cua.sock").display().to_string();
    ok(
        process::run(
            &offline(vec![cua.clone(), "telemetry".into(), "disable".into()]),
            &env,
        )?,
        "cua-driver telemetry disable",
    )?;
    let _daemon = Daemon(
        Command::new("bwrap")
            .args(["--unshare-net", "--dev-bind", "/", "/", "--"])
            .arg(&cua)
            .args(["serve", "--socket", &socket, "--no-overlay"])
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| err(format!("cannot start cua-driver serve: {e}")))?,
    );
    let call = |tool: &str, args: &Value| {
        offline(vec![
            cua.clone(),
            "call".into(),
            tool.into(),
            args.to_string(),
            "--socket".into(),
            socket.clone(),
        ])
    };
    // The daemon answers once it listens.
    let started = Instant::now();
    let listing = loop {
        let r = process::run(&call("list_windows", &json!({})), &env)?;
        if r.ok() {
            break serde_json::from_str::<Value>(&r.stdout).unwrap_or(Value::Null);
        }
        if started.elapsed() > Duration::from_secs(20) {
            return Err(r.failure("cua-driver call list_windows"));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let window_id = cua_window_id(&listing, pid, &window.title)
        .ok_or_else(|| err(format!("cua-driver lists no window of pid {pid} ({key})")))?;
    let cua_args = json!({ "pid": pid, "window_id": window_id, "include_screenshot": false });

    // Whole process, in turn: deskpilot's CLI and cua-driver's CLI, then xa11y's
    // (below). xa11y goes last on every app: a read of a large tree that it does not
    // finish within the limit leaves the app working through its queued requests
    // for minutes, and nothing read after it would be a fair figure.
    let ours_argv = cli::argv(display, &["observe", "--app", bus_name])?;
    let xa11y_argv = vec![
        xa11y.clone(),
        "tree".into(),
        "--pid".into(),
        pid.to_string(),
    ];
    let cua_argv = call("get_window_state", &cua_args);
    let mut ours = Timed::default();
    let (mut tx, mut tc) = (Timed::default(), Timed::default());
    for i in 0..=runs {
        ours.take(
            i,
            Some(ok(
                process::run(&ours_argv, ours_env)?,
                "deskpilot observe",
            )?),
        );
        if !tc.timed_out {
            let r = checked(
                process::run_within(&cua_argv, &env, PEER_LIMIT)?,
                "cua-driver call",
            )?;
            if r.is_none() {
                recover(&ours_argv, ours_env, key)?;
            }
            tc.take(i, r);
        }
    }

    // Warm, through one MCP client: each server started once, then called in turn.
    let mut d = mcp::Client::start(&cli::argv(display, &["mcp"])?, ours_env, process::OWN_LIMIT)?;
    let mut c = Some(mcp::Client::start(
        &offline(vec![cua.clone(), "mcp".into()]),
        &env,
        PEER_LIMIT,
    )?);
    let ours_args = json!({ "app": bus_name });
    let (mut wo, mut wx, mut wc) = (Timed::default(), Timed::default(), Timed::default());
    for i in 0..=runs {
        let a = answered(
            d.call("computer_observe", ours_args.clone()),
            "computer_observe",
            key,
        )?
        .ok_or_else(|| err(format!("deskpilot's computer_observe on {key} timed out")))?;
        wo.take_answer(i, Some(a));
        if let Some(client) = &mut c {
            let e = answered(
                client.call("get_window_state", cua_args.clone()),
                "cua-driver get_window_state",
                key,
            )?;
            if e.is_none() {
                c = None;
                recover(&ours_argv, ours_env, key)?;
            }
            wc.take_answer(i, e);
        }
    }
    drop(d);
    drop(c);

    // xa11y: its CLI, then (if that finished) its MCP server, each run after one
    // warm-up. After a read killed at the limit the app is given time to answer
    // again; if it does not, the figures so far stand and say so.
    let mut stuck = None;
    for i in 0..=runs {
        let r = checked(
            process::run_within(&xa11y_argv, &env, PEER_LIMIT)?,
            "xa11y tree",
        )?;
        let killed = r.is_none();
        tx.take(i, r);
        if killed {
            stuck = recover(&ours_argv, ours_env, key).err();
            break;
        }
    }
    if !tx.timed_out {
        let mut x = mcp::Client::start(&[xa11y.clone(), "mcp".into()], &env, PEER_LIMIT)?;
        let x_args = json!({ "pid": pid });
        for i in 0..=runs {
            let b = answered(x.call("tree", x_args.clone()), "xa11y tree", key)?;
            let killed = b.is_none();
            wx.take_answer(i, b);
            if killed {
                drop(x);
                stuck = recover(&ours_argv, ours_env, key).err();
                break;
            }
        }
    }
    let after = stuck.map_or(String::new(), |e| format!("; afterwards {}", e.message));

    let bwrap_ms = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(process::run(&offline(vec!["/bin/true".into()]), &env)?.ms);
        }
        Summary::of(&v).map_or(0.0, |s| s.median)
    };
    let whole = Figure::new(key, "whole_process_ms", "ms", summary(&ours.ms, "deskpilot observe")?)
        .with_peer(
            "xa11y_cli",
            &format!(
                "{}{after}",
                tx.method(&format!("xa11y {} `tree --pid {pid}`, fork to reap, run after the others", p.xa11y_version))
            ),
            tx.summary()?,
        )
        .with_peer(
            "cua_driver_cli",
            &tc.method(&format!(
                "cua-driver {} `call get_window_state` (tree only) to its warm daemon, fork to reap, under bwrap --unshare-net (which alone takes {bwrap_ms:.1} ms)",
                p.cua_driver_version
            )),
            tc.summary()?,
        )
        .detail(format!(
            "`deskpilot observe --app {bus_name}`, fork to reap; {} bytes; deskpilot and cua-driver in turn, then xa11y; {runs} runs after one warm-up",
            ours.out.len()
        ));
    let mut warm = Figure::new(
        key,
        "warm_mcp_ms",
        "ms",
        summary(&wo.ms, "computer_observe")?,
    );
    let warm_detail = if tx.timed_out && wx.ms.is_empty() {
        format!(
            "deskpilot MCP `computer_observe {{app}}`, request to response; deskpilot's and cua-driver's servers started once and called in turn; xa11y's MCP server was not run: its CLI read of {key} did not finish within {} s{after}",
            PEER_LIMIT.as_secs()
        )
    } else {
        warm = warm.with_peer(
            "xa11y_mcp",
            &format!(
                "{}{after}",
                wx.method(&format!(
                    "xa11y {} MCP `tree {{pid}}`, request to response, run after the others",
                    p.xa11y_version
                ))
            ),
            wx.summary()?,
        );
        "deskpilot MCP `computer_observe {app}`, request to response; deskpilot's and cua-driver's servers started once and called in turn, then xa11y's".to_string()
    };
    let warm = warm
        .with_peer(
            "cua_driver_mcp",
            &wc.method(&format!(
                "cua-driver {} MCP `get_window_state {{pid, window_id, include_screenshot: false}}`, request to response",
                p.cua_driver_version
            )),
            wc.summary()?,
        )
        .detail(warm_detail);
    let mut size = Figure::new(
        key,
        "output_tokens",
        "tokens",
        Summary::once(tokens(&wo.out)),
    );
    for (name, t, what) in [
        ("xa11y_mcp", &wx, "xa11y's MCP tree result"),
        (
            "cua_driver_mcp",
            &wc,
            "cua-driver's MCP get_window_state result (tree only)",
        ),
    ] {
        if !t.out.is_empty() {
            size = size.with_peer(
                name,
                &format!("o200k tokens of {what}"),
                Summary::once(tokens(&t.out)),
            );
        }
    }
    let size = size.detail(
        "o200k tokens of the text each MCP server returns for one read of the window (a peer that timed out is left out)",
    );
    Ok(vec![whole, warm, size])
}

/// Longest one read of a peer may take before it is killed and the figure says so.
pub const PEER_LIMIT: Duration = Duration::from_secs(30);

/// One side's samples: counted times, its last output, and whether it hit
/// [`PEER_LIMIT`] (then its one sample is the limit: a lower bound).
#[derive(Default)]
struct Timed {
    ms: Vec<f64>,
    out: String,
    timed_out: bool,
}

impl Timed {
    /// Run `i` (0 is the warm-up): its time, or the limit when it was killed.
    fn take(&mut self, i: usize, run: Option<Run>) {
        match run {
            Some(r) => {
                if i > 0 {
                    self.ms.push(r.ms);
                }
                self.out = r.stdout;
            }
            None => self.time_out(),
        }
    }

    fn take_answer(&mut self, i: usize, a: Option<mcp::Answer>) {
        match a {
            Some(a) => {
                if i > 0 {
                    self.ms.push(a.ms);
                }
                // What a model is given: the text content, else the structured result.
                self.out = if a.text.is_empty() {
                    a.result
                        .get("structuredContent")
                        .map(Value::to_string)
                        .unwrap_or_default()
                } else {
                    a.text
                };
            }
            None => self.time_out(),
        }
    }

    fn time_out(&mut self) {
        self.timed_out = true;
        self.ms = vec![PEER_LIMIT.as_secs_f64() * 1000.0];
        self.out.clear();
    }

    fn method(&self, base: &str) -> String {
        if self.timed_out {
            format!(
                "{base}; did not finish within {} s and was killed: the figure is that limit, a lower bound",
                PEER_LIMIT.as_secs()
            )
        } else {
            format!("{base}; {} bytes", self.out.len())
        }
    }

    fn summary(&self) -> Result<Summary> {
        summary(&self.ms, "a peer")
    }
}

/// After a peer was killed mid-read, waits (up to [`RECOVER_LIMIT`], not counted)
/// until the app answers a read again: it may still be working through the
/// thousands of requests the peer queued.
fn recover(observe: &[String], env: &BTreeMap<String, String>, key: &str) -> Result<()> {
    let started = Instant::now();
    loop {
        if process::run(observe, env)?.ok() {
            return Ok(());
        }
        if started.elapsed() > RECOVER_LIMIT {
            return Err(err(format!(
                "{key} still did not answer {} s after a peer was stopped mid-read",
                RECOVER_LIMIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Longest [`recover`] waits for the app.
const RECOVER_LIMIT: Duration = Duration::from_secs(180);

/// A finished run that must have succeeded; `None` (killed at its limit) passes.
fn checked(run: Option<Run>, what: &str) -> Result<Option<Run>> {
    run.map(|r| ok(r, what)).transpose()
}

/// A tool call's answer: `None` when it timed out, an error when it failed.
fn answered(a: Result<mcp::Answer>, name: &str, key: &str) -> Result<Option<mcp::Answer>> {
    match a {
        Ok(a) if a.is_error => Err(err(format!(
            "{name} on {key} failed: {}",
            deskpilot_core::sanitize::one_line(&a.text)
        ))),
        Ok(a) => Ok(Some(a)),
        Err(e) if e.code == ErrorCode::Timeout => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cua_window_is_the_one_of_the_pid_and_title() {
        let listing = json!({ "windows": [
            { "pid": 7, "title": "Other", "window_id": 1 },
            { "pid": 9, "title": "Dialog", "window_id": 2 },
            { "pid": 9, "title": "Main", "window_id": 3 },
        ]});
        assert_eq!(cua_window_id(&listing, 9, "Main"), Some(3));
        assert_eq!(cua_window_id(&listing, 9, "Gone"), Some(2));
        assert_eq!(cua_window_id(&listing, 8, "Main"), None);
    }

    #[test]
    fn cua_driver_runs_without_network() {
        let v = offline(vec!["cua-driver".into(), "mcp".into()]);
        assert_eq!(
            v[..6],
            ["bwrap", "--unshare-net", "--dev-bind", "/", "/", "--"]
        );
        assert_eq!(v[6..], ["cua-driver", "mcp"]);
    }
}

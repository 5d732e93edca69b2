//! deskpilot as a user meets it: whole CLI processes (start-up included) and the
//! MCP server's memory over a long session, on the bench's sandbox.
//!
//! Owns the environment those processes get (this process's own, with a config of
//! the bench's: the sandbox in `accept-edits` mode and a budget large enough for
//! 1,000 calls, and state under the bench's directory), the commands timed, and
//! the MCP session of [`MCP_CALLS`] calls. Every process is reaped before a figure
//! is made.

use std::collections::BTreeMap;
use std::path::Path;

use deskpilot_protocol::{ComputerError, ErrorCode};
use serde_json::json;

use super::mcp;
use super::process::{self, Run};
use super::report::Figure;
use super::stats::Summary;
use deskpilot_protocol::Result;

/// Calls the MCP session makes (half observes, half `set_value`s), as the
/// memory target asks.
pub const MCP_CALLS: usize = 1_000;
/// The call after which the server's memory is first sampled: growth is what it
/// gains from here to the last call.
pub const MCP_FIRST_SAMPLE: usize = 100;

/// The environment of deskpilot processes the bench starts: this process's, with
/// the bench's config and state directory.
pub fn env(dir: &Path) -> Result<BTreeMap<String, String>> {
    // A directory of its own: deskpilot refuses to touch the directory its config
    // is in, and the apps' fixtures are in `dir`.
    let own = dir.join("cli");
    let config = own.join("config.toml");
    std::fs::create_dir_all(&own)
        .and_then(|_| {
            std::fs::write(
                &config,
                "[sandbox]\nmode = \"accept-edits\"\naction_budget = 10000\n",
            )
        })
        .map_err(|e| {
            ComputerError::new(
                ErrorCode::Internal,
                format!("cannot write {}: {e}", config.display()),
            )
        })?;
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.insert("DESKPILOT_CONFIG".into(), config.display().to_string());
    env.insert(
        "XDG_STATE_HOME".into(),
        own.join("state").display().to_string(),
    );
    env.remove("RUST_LOG");
    Ok(env)
}

/// `deskpilot --sandbox N ARGS` as an argv.
pub fn argv(display: u32, args: &[&str]) -> Result<Vec<String>> {
    let exe = std::env::current_exe().map_err(|e| {
        ComputerError::new(
            ErrorCode::Internal,
            format!("cannot find this executable: {e}"),
        )
    })?;
    let mut v = vec![
        exe.display().to_string(),
        "--sandbox".into(),
        display.to_string(),
    ];
    v.extend(args.iter().map(|a| a.to_string()));
    Ok(v)
}

/// Runs `argv` once to warm the page cache, then `runs` times; every run must
/// succeed.
pub fn repeat(argv: &[String], env: &BTreeMap<String, String>, runs: usize) -> Result<Vec<Run>> {
    let mut out = Vec::new();
    for i in 0..=runs {
        let r = process::run(argv, env)?;
        if !r.ok() {
            return Err(r.failure(&argv[3..].join(" ")));
        }
        if i > 0 {
            out.push(r);
        }
    }
    Ok(out)
}

/// The figures of one CLI command: its wall time (`cli_ms`) and its peak memory
/// (`cli_rss_mb`), both whole process.
pub fn figures(app: &str, label: &str, runs: &[Run]) -> Result<Vec<Figure>> {
    let ms: Vec<f64> = runs.iter().map(|r| r.ms).collect();
    let rss: Vec<f64> = runs.iter().map(|r| r.peak_rss_mib).collect();
    let bytes = runs.last().map_or(0, |r| r.stdout.len());
    let none = || ComputerError::new(ErrorCode::Internal, format!("no run of {label}"));
    Ok(vec![
        Figure::new(app, "cli_ms", "ms", Summary::of(&ms).ok_or_else(none)?)
            .subject(label)
            .detail(format!(
                "whole process, fork to reap (start-up, connect, work, exit): `deskpilot {label}`; {bytes} bytes on stdout"
            )),
        Figure::new(app, "cli_rss_mb", "MB", Summary::of(&rss).ok_or_else(none)?)
            .subject(label)
            .detail("peak resident set of the process (wait4 ru_maxrss), MiB"),
    ])
}

/// The ref of the first editable textbox in snapshot `text`.
pub fn editable_textbox(text: &str) -> Option<String> {
    text.lines()
        .find(|l| l.contains("] textbox") && l.contains(" editable"))
        .and_then(|l| {
            let l = l.trim_start();
            let end = l.find(']')?;
            Some(l.get(1..end)?.to_string())
        })
}

/// The MCP server's memory over [`MCP_CALLS`] calls on mousepad: `computer_observe`
/// and `computer_act` `set_value` in turn. Returns the figure `mcp_rss_mb` (resident
/// memory after the last call, with the first sample and the peak in the detail)
/// and the median call times.
pub fn mcp_memory(display: u32, env: &BTreeMap<String, String>) -> Result<Figure> {
    let mut client = mcp::Client::start(&argv(display, &["mcp"])?, env, process::OWN_LIMIT)?;
    let observe = json!({ "app": "mousepad" });
    let first = client.call("computer_observe", observe.clone())?;
    if first.is_error {
        return Err(ComputerError::new(
            ErrorCode::Internal,
            format!("computer_observe failed: {}", first.text),
        ));
    }
    let textbox = editable_textbox(&first.text).ok_or_else(|| {
        ComputerError::new(
            ErrorCode::ElementNotFound,
            "mousepad's snapshot through MCP shows no editable textbox",
        )
    })?;
    let (mut sampled, mut errors) = (None, 0usize);
    let (mut observe_ms, mut act_ms) = (Vec::new(), Vec::new());
    for i in 1..=MCP_CALLS {
        let a = if i % 2 == 1 {
            let a = client.call("computer_observe", observe.clone())?;
            observe_ms.push(a.ms);
            a
        } else {
            let a = client.call(
                "computer_act",
                json!({ "actions": [{ "ref": textbox, "op": "set_value", "value": format!("mcp call {i}") }] }),
            )?;
            act_ms.push(a.ms);
            a
        };
        errors += usize::from(a.is_error);
        if i == MCP_FIRST_SAMPLE {
            sampled = Some(client.memory_mib()?);
        }
    }
    let (rss, peak) = client.memory_mib()?;
    let (rss_first, _) = sampled.unwrap_or((rss, peak));
    let med = |v: &[f64]| Summary::of(v).map_or(0.0, |s| s.median);
    Ok(
        Figure::new("mousepad", "mcp_rss_mb", "MB", Summary::once(rss))
            .subject(format!("after {MCP_CALLS} calls"))
            .detail(format!(
                "`deskpilot mcp` resident memory (VmRSS) after {MCP_CALLS} calls (computer_observe and computer_act set_value in turn): {rss:.1} MiB; after call {MCP_FIRST_SAMPLE}: {rss_first:.1} MiB (growth {:+.1} MiB); peak (VmHWM) {peak:.1} MiB; medians observe {:.1} ms, act {:.1} ms; {errors} calls answered with isError",
                rss - rss_first,
                med(&observe_ms),
                med(&act_ms)
            )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editable_textbox_is_found_by_its_line() {
        let text = "[w1] window \"x\"\n  [e3] textbox \"Find\"\n    [e17] textbox value=\"a\" editable focused\n";
        assert_eq!(editable_textbox(text).as_deref(), Some("e17"));
        assert_eq!(editable_textbox("[e1] button \"OK\"\n"), None);
    }
}

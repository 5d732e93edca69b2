//! `deskpilot run "INSTRUCTION"`: the bounded inner loop with the model bound in the
//! config (`[model]`), on the host's policy, with a progress line per step on stderr.
//!
//! The run is a long-lived host under its own session (`run-PID`): it listens on a
//! control socket so `deskpilot stop` aborts it within one step, and revokes its
//! grant when it ends. The result is assembled from what the host did; the model's
//! own words appear only as its labelled claim or question.

use std::sync::{Arc, Mutex};

use deskpilot_agent::{RunOptions, RunReport, RunStatus};
use deskpilot_host::config::Config;
use deskpilot_host::control::{ControlServer, HostInfo};
use deskpilot_host::store::desktop_key;
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::session::{Ctx, open_host};
use crate::output::print_ok;
use deskpilot_protocol::Result;

/// Runs one instruction to its end and prints the report. Exits non-zero (with the
/// report's error code, or `COMPUTER_OUTCOME_UNKNOWN` when the run simply did not
/// finish) unless the run reached `done` or was observe-only.
pub async fn run(
    ctx: &Ctx,
    instruction: String,
    max_steps: usize,
    observe_only: bool,
) -> Result<()> {
    if instruction.trim().is_empty() {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "say what to do, e.g. deskpilot run \"type Hello into the editor\"",
        ));
    }
    if max_steps == 0 {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "--max-steps must be at least 1",
        ));
    }
    // The binding is checked before anything touches the desktop.
    let config = Config::load()?;
    let model = if observe_only {
        None
    } else {
        Some(deskpilot_agent::model_from_binding(
            deskpilot_agent::require_binding(&config)?,
        )?)
    };
    let mut ctx = ctx.clone();
    if ctx.session == "cli" {
        ctx.session = format!("run-{}", std::process::id());
    }
    let (mut host, desktop) = open_host(&ctx, "run", false).await?;
    let info = Arc::new(Mutex::new(HostInfo {
        pid: std::process::id(),
        session: ctx.session.clone(),
        desktop: desktop_key(&desktop.display, &desktop.bus_address),
        grant_id: None,
        kind: "run".into(),
    }));
    let _control = ControlServer::listen(info, host.options().stop.clone())?;
    let display = super::policy::hotkey_display(&ctx, &desktop);
    let _hotkey = super::policy::arm_stop_hotkey(
        "run",
        display.as_deref(),
        &host.options().settings.stop_hotkey,
    );
    if !ctx.device.is_remote() {
        let p = super::presence::open(
            "run",
            display.as_deref(),
            host.options().settings.presence,
            &host.options().stop,
        );
        host.set_presence(p);
    }
    let mut opts = RunOptions::new(instruction);
    opts.max_steps = max_steps;
    opts.observe_only = observe_only;
    let result = match &model {
        None => deskpilot_agent::describe_scope(&mut host, &opts).await,
        Some(m) => {
            deskpilot_agent::run(&mut host, m.as_ref(), &opts, &mut |s| {
                eprintln!("{}", s.line());
            })
            .await
        }
    };
    // The run's own session ends with it.
    let _ = host.revoke();
    let state_file = host.session().state_path().to_path_buf();
    drop(host);
    let _ = std::fs::remove_file(state_file);
    let report = result?;
    let record = report.write_record(&deskpilot_agent::runs_dir());
    if let Err(e) = &record {
        eprintln!("warning: the run record was not written: {}", e.message);
    }
    let text = text_of(&report, record.as_ref().ok());
    if matches!(report.status, RunStatus::Done | RunStatus::ObserveOnly) {
        print_ok(ctx.json, &report, &text);
        return Ok(());
    }
    // A run that did not finish fails with its code; the report rides along in
    // the error's detail, so `--json` still prints exactly one document.
    let mut e = report.error.clone().unwrap_or_else(|| {
        ComputerError::new(
            ErrorCode::OutcomeUnknown,
            format!(
                "the run ended without finishing ({}); see the report",
                report.status.as_str()
            ),
        )
    });
    e.detail = Some(serde_json::json!({ "report": report }));
    if !ctx.json {
        print_ok(false, &report, &text);
    }
    Err(e)
}

fn text_of(r: &RunReport, record: Option<&std::path::PathBuf>) -> String {
    let mut t = format!("{}: {}", r.status.as_str(), r.summary);
    if let Some(q) = &r.question {
        let who = if q.from == "host" {
            "deskpilot asks"
        } else {
            "the model asks"
        };
        t.push_str(&format!("\n{who}: {}", q.text));
    }
    if let Some(c) = &r.model_claim {
        t.push_str(&format!("\nthe model says (unverified): {c}"));
    }
    t.push_str(&format!(
        "\n{} steps · {} tokens in · {} tokens out · {} ms",
        r.steps.len(),
        r.tokens_in,
        r.tokens_out,
        r.wall_ms
    ));
    if let Some(p) = record {
        t.push_str(&format!("\nrun record: {}", p.display()));
    }
    t
}

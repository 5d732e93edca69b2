//! The observe-only description of what a run could touch.

use std::time::Instant;

use deskpilot_core::sanitize::one_line;
use deskpilot_host::{Host, ObserveOptions, Target};

use super::report::{RunOptions, RunReport, RunStatus, ScopeView, ScopeWindow};
use super::text::{bounded_text, window_label};
use deskpilot_protocol::Result;

/// Describes what a run could touch, without calling a model or acting: the bound
/// window (binding the frontmost permitted one if none is), every window with its
/// refusal, the grant, and the bound window's snapshot. Allowed in plan mode.
///
/// Errors: the host's ([`Host::observe`], [`Host::apps`]), e.g.
/// `COMPUTER_FEATURE_DISABLED`, `COMPUTER_STOPPED_BY_USER`, `COMPUTER_SCOPE_VIOLATION`
/// when no window is permitted.
pub async fn describe_scope(host: &mut Host, opts: &RunOptions) -> Result<RunReport> {
    let started = Instant::now();
    let oo = ObserveOptions {
        max_tokens: opts.max_tokens_per_observation,
        ..ObserveOptions::default()
    };
    let obs = host.observe(&Target::Current, &oo).await?;
    let apps = host.apps().await?;
    let mut windows = Vec::new();
    for app in &apps {
        for w in &app.windows {
            windows.push(ScopeWindow {
                ref_: w.ref_.clone(),
                app: one_line(&app.name),
                title: bounded_text(&w.window.title, 120),
                bound: w.bound,
                refused: w.refused.as_ref().map(|r| r.code.as_str().to_string()),
                refused_reason: w.refused.as_ref().map(|r| bounded_text(&r.reason, 300)),
            });
        }
    }
    let grant = host.grant_view();
    let refused: Vec<String> = windows
        .iter()
        .filter_map(|w| {
            w.refused
                .as_ref()
                .map(|c| format!("[{}] {}: {c}", w.ref_, w.app))
        })
        .collect();
    let mut summary = format!(
        "observe only, nothing was done: bound to {}",
        window_label(&obs)
    );
    if let Some(g) = &grant {
        summary.push_str(&format!(
            " (revision {}, {} actions left, mode {})",
            g.revision,
            g.actions_left,
            g.mode.as_str()
        ));
    }
    summary.push_str(&format!(
        "; {} window{} listed, {} refused",
        windows.len(),
        if windows.len() == 1 { "" } else { "s" },
        refused.len()
    ));
    if !refused.is_empty() {
        let shown: Vec<&str> = refused.iter().take(8).map(String::as_str).collect();
        summary.push_str(&format!(" ({})", shown.join("; ")));
        if refused.len() > shown.len() {
            summary.push_str(&format!(" and {} more", refused.len() - shown.len()));
        }
    }
    let mut report = RunReport::new(None, 0);
    report.status = RunStatus::ObserveOnly;
    report.summary = summary;
    report.scope = Some(ScopeView {
        grant: grant.clone(),
        bound_window: window_label(&obs),
        windows,
        observation: obs.text.clone(),
        observation_tokens: obs.tokens,
    });
    report.grant = grant;
    report.wall_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

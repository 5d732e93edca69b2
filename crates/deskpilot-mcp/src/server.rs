//! The MCP server handler: each `computer_*` call is parsed into its argument type,
//! run through the policy host (grants, refusals, modes, budgets, stop, audit), and
//! answered with the text a model reads plus structured content.
//!
//! Failures of the host or the driver are tool results with `isError: true` and
//! structured `{code, message, detail}`, never JSON-RPC errors; so are arguments that
//! do not fit a tool's schema. Only an unknown tool name is a protocol error
//! (invalid params), as in rmcp's own router.
//!
//! One call uses the host at a time (a mutex). A `notifications/cancelled` aborts a
//! wait, a launch's wait for its window, or waiting for the host, at once; an action
//! or key sequence already dispatched runs to its end (dropping it half-way could
//! leave a key pressed), and a batch checks for cancellation and stop between
//! actions. This module never approves anything itself: an approval comes from the
//! user through the client's elicitation prompt or `deskpilot approve ID`.

use std::future::Future;

use std::sync::Arc;

use std::time::{Duration, Instant};

use deskpilot_core::Role;

use deskpilot_host::control::StopSignal;

use deskpilot_host::Host;

use deskpilot_protocol::{ComputerError, ErrorCode};

use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ProtocolVersion, Tool};

use rmcp::service::{ElicitationMode, RequestContext};

use rmcp::RoleServer;

use schemars::JsonSchema;

use serde::{Deserialize, Serialize};

use tokio::sync::{Mutex, MutexGuard};

use crate::args::*;

use crate::output::*;
use deskpilot_protocol::Result;

/// How long a confirmation asked through elicitation may wait for the user: 5 min,
/// the lifetime of an approval (`deskpilot_policy::approval`).
pub(crate) const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// Interval of progress notifications on long calls.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// deskpilot's MCP server: the `computer_*` tools over one policy host.
///
/// Cheap to clone: clones share the host (one grant, one audit log) and the stop
/// signal, so every session of an HTTP server works under the same policy state.
#[derive(Clone)]
pub struct Server {
    pub(crate) host: Arc<Mutex<Host>>,
    pub(crate) stop: StopSignal,
    pub(crate) tools: Arc<Vec<Tool>>,
    /// Started with teaching enabled: the teach tools are served.
    pub(crate) teach: bool,
}

impl Server {
    /// The host every call goes through (e.g. to read the grant for a control socket).
    pub fn host(&self) -> &Arc<Mutex<Host>> {
        &self.host
    }

    /// The stop signal of the host (`host.options().stop`): raise it to stop.
    pub fn stop_signal(&self) -> &StopSignal {
        &self.stop
    }

    /// Applies every stop raised on the signal (by `deskpilot stop` through the
    /// control socket) as soon as the host is free: the grant is revoked and the
    /// cooldown starts. A wait in progress applies it itself. Runs until aborted.
    pub fn watch_stop(&self) -> tokio::task::JoinHandle<()> {
        let host = self.host.clone();
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                stop.stopped().await;
                let mut h = host.lock().await;
                if stop.is_stopped() {
                    h.apply_stop();
                    tracing::info!("stop applied: the grant is revoked");
                }
            }
        })
    }

    /// The host, unless the call is cancelled while it waits for another call.
    pub(crate) async fn lock(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<MutexGuard<'_, Host>> {
        tokio::select! {
            g = self.host.lock() => Some(g),
            () = ctx.ct.cancelled() => None,
        }
    }
}

// ---------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------

/// The refusal of a batch of `n` `what` (actions, steps) outside 1 to
/// [`MAX_ACTIONS`]; `None` when it fits.
pub(crate) fn batch_size(n: usize, what: &str) -> Option<CallToolResult> {
    (n == 0 || n > MAX_ACTIONS).then(|| {
        failure(
            &ComputerError::invalid(format!("give 1 to {MAX_ACTIONS} {what} (got {n})")),
            "",
        )
    })
}

/// A successful result: `text` for the model, `data` as structured content.
pub(crate) fn success<T: Serialize>(text: String, data: &T) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(serde_json::to_value(data).unwrap_or(serde_json::Value::Null));
    r
}

/// A failed call as a tool result: `isError: true`, structured `{code, message,
/// detail}`, and the text `error[COMPUTER_…]: message` after `before` (what ran
/// before the failure, if anything). A fresh snapshot in `detail.snapshot` (a stale
/// ref) is shown too.
pub(crate) fn failure(e: &ComputerError, before: &str) -> CallToolResult {
    let mut text = String::new();
    if !before.is_empty() {
        text.push_str(before.trim_end());
        text.push('\n');
    }
    text.push_str(&format!("error[{}]: {}", e.code.as_str(), e.message));
    if let Some(snap) = e
        .detail
        .as_ref()
        .and_then(|d| d.get("snapshot"))
        .and_then(|s| s.as_str())
    {
        text.push_str("\nthe window now:\n");
        text.push_str(snap.trim_end());
    }
    let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
    r.structured_content =
        Some(serde_json::to_value(ErrorOutput::from(e)).unwrap_or(serde_json::Value::Null));
    r
}

pub(crate) fn cancelled() -> CallToolResult {
    // The client abandoned the call; rmcp does not deliver this answer, but a result
    // is still well-formed if a transport does.
    failure(
        &ComputerError::new(ErrorCode::Timeout, "the call was cancelled by the client"),
        "",
    )
}

/// Parses a call's arguments; arguments that do not fit the schema are an
/// `isError` result with `COMPUTER_INVALID_ARGUMENT`, so the model can correct them.
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(
    tool: &str,
    args: Option<rmcp::model::JsonObject>,
) -> Result<T, CallToolResult> {
    serde_json::from_value(serde_json::Value::Object(args.unwrap_or_default())).map_err(|e| {
        failure(
            &ComputerError::invalid(format!(
                "arguments of {tool} do not fit its input schema: {e}"
            )),
            "",
        )
    })
}

pub(crate) fn with_warnings(mut text: String, host: &Host) -> String {
    for w in host.warnings() {
        text.push_str(&format!("\nwarning: {w}"));
    }
    text
}

pub(crate) fn parse_role(s: &str) -> Result<Role> {
    s.parse::<Role>()
        .map_err(|e| ComputerError::invalid(e.to_string()))
}

/// Lines of a list, as many as fit in `budget` tokens with the footer; the rest is
/// counted in a closing line that names how to reach it.
pub(crate) fn fit_lines(
    lines: &[String],
    budget: usize,
    more: impl Fn(usize) -> String,
) -> (String, usize) {
    let mut text = String::new();
    let mut used = 0;
    for (i, l) in lines.iter().enumerate() {
        let n = deskpilot_core::tokens::count(l) + 1;
        // Keep room for the closing line (under 60 tokens).
        if used + n + 60 > budget && i > 0 {
            let rest = lines.len() - i;
            text.push_str(&more(rest));
            return (text, rest);
        }
        used += n;
        text.push_str(l);
        text.push('\n');
    }
    (text, 0)
}

// ---------------------------------------------------------------------------------
// Long calls: progress and cancellation
// ---------------------------------------------------------------------------------

/// Runs `fut`, sending a progress notification every second when the client gave a
/// progress token (progress = seconds elapsed, total = `total_ms` in seconds).
/// Returns `None` when the call is cancelled: `fut` is dropped at once.
pub(crate) async fn drive<F: Future>(
    fut: F,
    ctx: &RequestContext<RoleServer>,
    total_ms: u64,
    what: &str,
) -> Option<F::Output> {
    let token = ctx.meta.get_progress_token();
    let started = Instant::now();
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    tokio::pin!(fut);
    loop {
        tokio::select! {
            out = &mut fut => return Some(out),
            () = ctx.ct.cancelled() => {
                tracing::info!(what, "call cancelled by the client");
                return None;
            }
            _ = tick.tick() => {
                if let Some(t) = &token {
                    let secs = started.elapsed().as_secs_f64();
                    let p = ProgressNotificationParam::new(t.clone(), secs.floor())
                        .with_total((total_ms as f64 / 1000.0).ceil())
                        .with_message(format!("{what}: {} s", secs.floor()));
                    if let Err(e) = ctx.peer.notify_progress(p).await {
                        tracing::debug!(error = %e, "progress notification not sent");
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Confirmation through elicitation
// ---------------------------------------------------------------------------------

/// The form a confirmation asks the user to fill.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(crate) struct Confirmation {
    /// Allow this action?
    allow: bool,
}

rmcp::elicit_safe!(Confirmation);

/// What asking the user produced.
pub(crate) enum Asked {
    /// The client cannot ask (no form elicitation, or a protocol version that has no
    /// server-to-client requests): return the refusal with its approval id.
    CannotAsk,
    /// The user approved; the approval is recorded.
    Approved,
    /// The user declined, dismissed or did not answer.
    Declined(ComputerError),
}

/// For a `COMPUTER_CONFIRMATION_REQUIRED` refusal with an approval id: asks the user
/// through the client (MCP elicitation) and, on "allow", records the approval the
/// way `deskpilot approve ID` does. The model has no part in this exchange.
pub(crate) async fn ask_user(
    host: &Host,
    ctx: &RequestContext<RoleServer>,
    stop: &StopSignal,
    e: &ComputerError,
) -> Asked {
    if e.code != ErrorCode::ConfirmationRequired {
        return Asked::CannotAsk;
    }
    let Some(id) = e
        .detail
        .as_ref()
        .and_then(|d| d.get("approval_id"))
        .and_then(|v| v.as_str())
    else {
        return Asked::CannotAsk;
    };
    let modern = ctx
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    let can = ctx
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form);
    if modern || !can {
        return Asked::CannotAsk;
    }
    let action = e
        .detail
        .as_ref()
        .and_then(|d| d.get("action"))
        .and_then(|v| v.as_str())
        .unwrap_or("this action");
    let message =
        format!("deskpilot asks: allow {action}? The AI model cannot answer this for you.");
    let asked = ctx
        .peer
        .elicit_with_timeout::<Confirmation>(message, Some(ELICITATION_TIMEOUT));
    let answer = tokio::select! {
        a = asked => a,
        () = ctx.ct.cancelled() => return Asked::Declined(ComputerError::new(ErrorCode::ConfirmationRequired, "the call was cancelled while the user was asked; nothing was done")),
        () = stop.stopped() => return Asked::Declined(ComputerError::new(ErrorCode::StoppedByUser, "the user pressed stop while being asked; nothing was done")),
    };
    match answer {
        Ok(Some(Confirmation { allow: true })) => {
            match deskpilot_host::host::approve(&host.options().approvals_path, id) {
                Ok(summary) => {
                    tracing::info!(approval = id, %summary, "approved through elicitation");
                    Asked::Approved
                }
                Err(err) => Asked::Declined(err),
            }
        }
        Ok(_) => Asked::Declined(ComputerError::new(
            ErrorCode::ConfirmationRequired,
            "the user did not allow this action; nothing was done. Do not retry it unless the user asks you to",
        )),
        Err(err) => {
            tracing::debug!(error = %err, "elicitation ended without an answer");
            let mut d = ComputerError::new(
                ErrorCode::ConfirmationRequired,
                format!(
                    "the user did not confirm this action ({err}); nothing was done. They can still approve it with `deskpilot approve {id}`, then retry exactly the same action"
                ),
            );
            d.detail = e.detail.clone();
            Asked::Declined(d)
        }
    }
}

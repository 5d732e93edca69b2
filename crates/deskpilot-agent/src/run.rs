//! The bounded observe → decide → validate → act loop (ARCHITECTURE.md §10).
//!
//! Each step: list the windows (with refusal reasons) and the grant through the host,
//! show the model the bound window's snapshot and the previous step's outcome, ask for
//! one decision, validate it, then act through [`Host::act`] or rebind through
//! [`Host::observe`] for a `switch`. After an action the next step re-observes the
//! window (the action's diff is the previous step's outcome).
//!
//! Validation before anything reaches the host: the answer's schema
//! ([`crate::decision::parse`]); the ref is in the bound window's current tree (a ref
//! seen only under an earlier revision or in another window is
//! `COMPUTER_STALE_REVISION`, an unknown one `COMPUTER_ELEMENT_NOT_FOUND`); the grant's
//! revision is the one the observation was made under; budget is left. A refused
//! step is told to the model as that step's outcome and is never retried by the loop.
//!
//! The run stops on `done`, `ask`, the step cap (`max_steps`, clamped to the grant's
//! actions left), a stop (the host's stop signal, checked before each step and while
//! the model thinks, or a stop record the host reports), revocation, expiry, an
//! exhausted budget, a confirmation only the user can give, a model error, or the same
//! step failing [`REPEAT_LIMIT`] times in a row. The [`RunReport`] and its summary are
//! built from what the host reported; the model's `done` summary appears only as
//! `model_claim`. Switching windows is never counted as work done.

use std::collections::HashSet;
use std::time::Instant;

use deskpilot_core::Op;
use deskpilot_core::redact::display_name_of;
use deskpilot_core::sanitize::one_line;
use deskpilot_host::host::GrantView;
use deskpilot_host::{Host, Observation, ObserveOptions, Target};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::types::ActStatus;
use deskpilot_protocol::{DriverError, ErrorCode};
use serde::Serialize;

use crate::decision::{self, Decision};
use crate::model::{DecideRequest, Model};
use crate::prompt;

/// Default step cap of a run.
pub const DEFAULT_MAX_STEPS: usize = 20;
/// Highest step cap accepted (larger values are clamped).
pub const MAX_STEPS_LIMIT: usize = 500;
/// Identical failing steps in a row that end a run.
pub const REPEAT_LIMIT: usize = 3;
/// Earlier steps listed in each prompt (most recent last).
pub const HISTORY_LINES: usize = 12;
/// Default cap on one answer, tokens (a decision is well under 200).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 1_024;
/// Chars of the model's own text (`done` summary, `ask` question) kept in a report.
pub const MAX_MODEL_TEXT_CHARS: usize = 500;
/// Actions named one by one in a summary; the rest are counted.
const SUMMARY_ACTIONS: usize = 8;
/// Observations whose refs are remembered to tell a stale ref from an unknown one.
const SEEN_OBSERVATIONS: usize = 32;

/// What a run is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// The user's instruction, passed to the model as is.
    pub instruction: String,
    /// Step cap (default [`DEFAULT_MAX_STEPS`]); clamped to the grant's actions left
    /// and to [`MAX_STEPS_LIMIT`].
    pub max_steps: usize,
    /// Describe the scope (bound window, windows and refusals, grant) without calling
    /// the model or acting.
    pub observe_only: bool,
    /// Token budget of each snapshot shown to the model (default 2,000).
    pub max_tokens_per_observation: usize,
    /// Cap on each answer, tokens (default [`DEFAULT_MAX_OUTPUT_TOKENS`]).
    pub max_output_tokens: u32,
}

impl RunOptions {
    /// Options with every default for `instruction`.
    pub fn new(instruction: impl Into<String>) -> RunOptions {
        RunOptions {
            instruction: instruction.into(),
            max_steps: DEFAULT_MAX_STEPS,
            observe_only: false,
            max_tokens_per_observation: deskpilot_host::session::DEFAULT_MAX_TOKENS,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model answered `done` (its claim; see the actions for what happened).
    Done,
    /// The step cap was reached.
    StepCap,
    /// The user pressed stop; the grant was revoked.
    Stopped,
    /// The grant idled out.
    Expired,
    /// The grant's action budget is spent.
    Budget,
    /// The same step failed [`REPEAT_LIMIT`] times in a row.
    RepeatedFailure,
    /// The model asked a question, or the host needs the user's confirmation.
    NeedsUser,
    /// The host refused to continue (no grant, feature off).
    Refused,
    /// The model could not be asked (timeout, endpoint error).
    ModelError,
    /// Another host error ended the run.
    Failed,
    /// `observe_only`: the scope was described, nothing was done.
    ObserveOnly,
}

impl RunStatus {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Done => "done",
            RunStatus::StepCap => "step_cap",
            RunStatus::Stopped => "stopped",
            RunStatus::Expired => "expired",
            RunStatus::Budget => "budget",
            RunStatus::RepeatedFailure => "repeated_failure",
            RunStatus::NeedsUser => "needs_user",
            RunStatus::Refused => "refused",
            RunStatus::ModelError => "model_error",
            RunStatus::Failed => "failed",
            RunStatus::ObserveOnly => "observe_only",
        }
    }
}

/// One step as recorded (never the typed text: its length only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// 1-based.
    pub n: usize,
    /// `action`, `switch`, `done`, `ask`, or `invalid` (the answer broke the schema).
    pub kind: String,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub ref_: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Chars of the action's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_len: Option<usize>,
    /// `wN` a switch asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// `executed`, `switched`, `done`, `asked`, an action status other than executed
    /// (`rejected`, `timed_out`, `outcome_unknown`), or the `COMPUTER_*` code that
    /// refused the step.
    pub outcome: String,
    /// Why a step was refused (host or validation text, one line, ≤ 300 chars).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The channel an action went through (`action`, `text`, `value`, `keyboard`,
    /// `pointer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Prompt tokens of this step's model call.
    pub tokens_in: u64,
    /// Answer tokens of this step's model call.
    pub tokens_out: u64,
    /// Whether the provider reported the tokens (else `o200k_base` estimates).
    pub usage_reported: bool,
    /// Wall time of the step (model call and action), ms.
    pub ms: u64,
}

impl StepRecord {
    /// Whether the step did what it asked for.
    pub fn succeeded(&self) -> bool {
        matches!(
            self.outcome.as_str(),
            "executed" | "switched" | "done" | "asked"
        )
    }

    /// One progress line: `step 2 · action set_value e5 (5 chars) · executed via text ·
    /// 812 in / 34 out tokens · 1.2 s`.
    pub fn line(&self) -> String {
        let mut what = self.kind.clone();
        if let Some(op) = &self.op {
            what.push(' ');
            what.push_str(op);
        }
        if let Some(r) = &self.ref_ {
            what.push(' ');
            what.push_str(r);
        }
        if let Some(n) = self.value_len {
            what.push_str(&format!(" ({n} chars)"));
        }
        if let Some(w) = &self.window {
            what.push(' ');
            what.push_str(w);
        }
        let mut outcome = self.outcome.clone();
        if let Some(c) = &self.channel {
            outcome.push_str(&format!(" via {c}"));
        }
        if let (Some(m), false) = (&self.message, self.succeeded()) {
            let short: String = m.chars().take(120).collect();
            outcome.push_str(&format!(": {short}"));
        }
        format!(
            "step {} · {what} · {outcome} · {} in / {} out tokens{} · {:.1} s",
            self.n,
            self.tokens_in,
            self.tokens_out,
            if self.usage_reported { "" } else { " (est.)" },
            self.ms as f64 / 1000.0
        )
    }
}

/// An action the host dispatched, as the host reported it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutedAction {
    /// The step it was dispatched in.
    pub step: usize,
    pub op: String,
    /// The element's role, from the host's tree.
    pub role: String,
    /// The element's name from the host's tree: secrets masked, one line, ≤ 60 chars.
    pub name: String,
    pub channel: String,
    /// `executed`, or `timed_out` / `outcome_unknown` when it may or may not have
    /// happened (never retried).
    pub status: String,
    /// `[wN] app "title"` of the window acted in.
    pub window: String,
}

/// A question the run stops on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    /// `model` (an `ask` decision: the model's words) or `host` (a confirmation only
    /// the user can give, e.g. `deskpilot approve ID`).
    pub from: String,
    /// One line, ≤ 500 chars.
    pub text: String,
}

/// A window as an observe-only run lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScopeWindow {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub app: String,
    pub title: String,
    pub bound: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_reason: Option<String>,
}

/// The scope of an observe-only run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScopeView {
    pub grant: Option<GrantView>,
    /// `[wN] app "title"` of the bound window.
    pub bound_window: String,
    pub windows: Vec<ScopeWindow>,
    /// The bound window's snapshot (application data, budgeted).
    pub observation: String,
    /// Tokens of `observation` (o200k).
    pub observation_tokens: usize,
}

/// The result of a run: facts the host reported, plus the model's claims labelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub status: RunStatus,
    /// Assembled from `actions_executed`, the steps and `status`; never the model's
    /// text. Bounded (≤ 8 actions named, the rest counted).
    pub summary: String,
    /// `provider:model`; `None` when the model was not called (observe only).
    pub model: Option<String>,
    pub steps: Vec<StepRecord>,
    /// The step cap in force (`max_steps` clamped to the actions left).
    pub step_cap: usize,
    pub actions_executed: Vec<ExecutedAction>,
    /// `[wN] app "title"` of each window an action was dispatched in.
    pub windows_touched: Vec<String>,
    /// Windows the run switched to (not work done).
    pub windows_visited: Vec<String>,
    /// Sum of the steps' prompt tokens.
    pub tokens_in: u64,
    /// Sum of the steps' answer tokens.
    pub tokens_out: u64,
    /// Whether every step's tokens came from the provider.
    pub usage_reported: bool,
    /// Whole run, ms.
    pub wall_ms: u64,
    /// The model's `done` summary: its claim, not a fact (one line, ≤ 500 chars).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_claim: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<Question>,
    /// The error that ended the run, for `refused`, `expired`, `budget`, `stopped`,
    /// `model_error`, `failed` and host confirmations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DriverError>,
    /// Observe-only runs: what is in scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeView>,
    /// The grant when the run ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantView>,
}

/// Where run records go by default: `runs/` under the host's state directory
/// ([`deskpilot_host::store::state_dir`]).
pub fn runs_dir() -> std::path::PathBuf {
    deskpilot_host::store::state_dir().join("runs")
}

impl RunReport {
    /// Writes the report as pretty JSON to `dir/run-<unix ms>-<pid>.json` (directory
    /// mode 0700, file 0600) and returns the path. The report holds no typed text
    /// (lengths only) and no window content except an observe-only scope.
    ///
    /// Errors: `COMPUTER_INTERNAL` when the directory or file cannot be written.
    pub fn write_record(&self, dir: &std::path::Path) -> Result<std::path::PathBuf, DriverError> {
        use std::io::Write;
        let internal = |m: String| DriverError::new(ErrorCode::Internal, m);
        std::fs::create_dir_all(dir)
            .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            opts.mode(0o600);
        }
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let path = dir.join(format!("run-{ms}-{}.json", std::process::id()));
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| internal(format!("cannot encode the run record: {e}")))?;
        opts.open(&path)
            .and_then(|mut f| f.write_all(&text))
            .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }

    fn new(model: Option<String>, step_cap: usize) -> RunReport {
        RunReport {
            status: RunStatus::StepCap,
            summary: String::new(),
            model,
            steps: Vec::new(),
            step_cap,
            actions_executed: Vec::new(),
            windows_touched: Vec::new(),
            windows_visited: Vec::new(),
            tokens_in: 0,
            tokens_out: 0,
            usage_reported: true,
            wall_ms: 0,
            model_claim: None,
            question: None,
            error: None,
            scope: None,
            grant: None,
        }
    }
}

/// `s` escaped for use between quotes (see [`one_line`]), cut to `max` chars.
fn bounded_line(s: &str, max: usize) -> String {
    cut(one_line(s), max)
}

/// Free text (a message, a claim, a question) on one line, cut to `max` chars.
fn bounded_text(s: &str, max: usize) -> String {
    cut(deskpilot_core::sanitize::plain_line(s), max)
}

fn cut(line: String, max: usize) -> String {
    let n = line.chars().count();
    if n <= max {
        return line;
    }
    let mut out: String = line.chars().take(max).collect();
    out.push('…');
    out
}

/// The status a host error ends a run with; `None` when it only fails the step.
fn ending(code: ErrorCode) -> Option<RunStatus> {
    match code {
        ErrorCode::StoppedByUser => Some(RunStatus::Stopped),
        ErrorCode::GrantExpired => Some(RunStatus::Expired),
        ErrorCode::BudgetExhausted => Some(RunStatus::Budget),
        ErrorCode::NoGrant | ErrorCode::FeatureDisabled => Some(RunStatus::Refused),
        ErrorCode::ConfirmationRequired => Some(RunStatus::NeedsUser),
        _ => None,
    }
}

fn window_label(obs: &Observation) -> String {
    format!(
        "[{}] {} \"{}\"",
        obs.window_ref,
        one_line(&obs.window.app),
        bounded_line(&obs.window.title, 80)
    )
}

fn plan_refusal() -> DriverError {
    DriverError::new(
        ErrorCode::ScopeViolation,
        "plan mode is read-only and a run acts on the desktop. Describe the scope instead with --observe-only (computer_task observe_only=true), or change the mode with `deskpilot config set mode default`",
    )
}

/// Describes what a run could touch, without calling a model or acting: the bound
/// window (binding the frontmost permitted one if none is), every window with its
/// refusal, the grant, and the bound window's snapshot. Allowed in plan mode.
///
/// Errors: the host's ([`Host::observe`], [`Host::apps`]), e.g.
/// `COMPUTER_FEATURE_DISABLED`, `COMPUTER_STOPPED_BY_USER`, `COMPUTER_SCOPE_VIOLATION`
/// when no window is permitted.
pub async fn describe_scope(host: &mut Host, opts: &RunOptions) -> Result<RunReport, DriverError> {
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

/// Runs `opts.instruction` with `model` through `host`, calling `progress` after each
/// step. With `opts.observe_only` it is [`describe_scope`] and the model is not called.
///
/// The run never ends the grant: a caller that owns it (`deskpilot run`) revokes it
/// afterwards; a long-lived host (the MCP server) keeps it.
///
/// Errors (nothing was done): `COMPUTER_SCOPE_VIOLATION` in plan mode unless observe
/// only; `COMPUTER_STOPPED_BY_USER` when the stop signal is already raised; the
/// host's errors on the first observation (`COMPUTER_FEATURE_DISABLED`,
/// `COMPUTER_NO_GRANT`, …). Once the first observation succeeded every ending is a
/// [`RunReport`], errors included (`status` and `error`).
pub async fn run(
    host: &mut Host,
    model: &dyn Model,
    opts: &RunOptions,
    progress: &mut (dyn FnMut(&StepRecord) + Send),
) -> Result<RunReport, DriverError> {
    if opts.observe_only {
        return describe_scope(host, opts).await;
    }
    if host.options().settings.mode == Mode::Plan {
        return Err(plan_refusal());
    }
    let stop = host.options().stop.clone();
    if stop.is_stopped() {
        host.apply_stop();
        return Err(DriverError::new(
            ErrorCode::StoppedByUser,
            "the user pressed stop before the run began; nothing was done",
        ));
    }
    let started = Instant::now();
    let oo = ObserveOptions {
        max_tokens: opts.max_tokens_per_observation,
        ..ObserveOptions::default()
    };
    let obs = host.observe(&Target::Current, &oo).await?;
    let actions_left = host.grant_view().map_or(0, |g| g.actions_left as usize);
    let cap = opts.max_steps.min(MAX_STEPS_LIMIT).min(actions_left);
    let mut lp = Loop {
        host,
        model,
        opts,
        oo,
        report: RunReport::new(Some(model.name()), cap),
        obs,
        needs_observe: false,
        seen: Vec::new(),
        last_outcome: None,
        history: Vec::new(),
        streak: (String::new(), 0),
    };
    lp.remember_refs();
    let status = if cap == 0 {
        if actions_left == 0 {
            lp.report.error = Some(DriverError::new(
                ErrorCode::BudgetExhausted,
                "the grant has no actions left; nothing was asked of the model",
            ));
            RunStatus::Budget
        } else {
            RunStatus::StepCap
        }
    } else {
        lp.steps(cap, &stop, progress).await
    };
    let mut report = lp.report;
    report.status = status;
    report.grant = lp.host.grant_view();
    report.wall_ms = started.elapsed().as_millis() as u64;
    report.summary = summarize(&report);
    Ok(report)
}

/// What one step led to.
enum Next {
    Continue,
    End(RunStatus),
}

struct Loop<'a> {
    host: &'a mut Host,
    model: &'a dyn Model,
    opts: &'a RunOptions,
    oo: ObserveOptions,
    report: RunReport,
    /// The bound window as last shown to the model.
    obs: Observation,
    /// An action ran since `obs` was taken.
    needs_observe: bool,
    /// Refs present in recent observations: (revision, window handle, refs).
    seen: Vec<(u64, String, HashSet<String>)>,
    last_outcome: Option<String>,
    history: Vec<String>,
    /// Signature of the last failing step and how many times in a row it failed.
    streak: (String, usize),
}

impl Loop<'_> {
    fn revision(&self) -> u64 {
        self.host.grant_view().map_or(0, |g| g.revision)
    }

    fn obs_revision(&self) -> u64 {
        self.obs.grant.as_ref().map_or(0, |g| g.revision)
    }

    /// Records the refs of the current observation's tree.
    fn remember_refs(&mut self) {
        let handle = self.obs.window.handle.as_str().to_string();
        let refs: HashSet<String> = self
            .host
            .session()
            .state()
            .per_window
            .get(&handle)
            .and_then(|ws| ws.last.as_ref())
            .map(|t| t.walk().filter_map(|n| n.ref_.clone()).collect())
            .unwrap_or_default();
        let rev = self.obs_revision();
        self.seen.retain(|(r, h, _)| !(*r == rev && *h == handle));
        self.seen.push((rev, handle, refs));
        if self.seen.len() > SEEN_OBSERVATIONS {
            self.seen.remove(0);
        }
    }

    /// The role and display name of `r` in the bound window's current tree.
    fn element(&self, r: &str) -> Option<(String, String)> {
        let ws = self
            .host
            .session()
            .state()
            .per_window
            .get(self.obs.window.handle.as_str())?;
        let tree = ws.last.as_ref()?;
        tree.walk()
            .find(|n| n.ref_.as_deref() == Some(r))
            .map(|n| (n.role.to_string(), display_name_of(n, 60)))
    }

    /// Why `r` is not usable: shown under another revision or window, or unknown.
    fn missing_ref(&self, r: &str) -> DriverError {
        let rev = self.obs_revision();
        let handle = self.obs.window.handle.as_str();
        let earlier = self
            .seen
            .iter()
            .rev()
            .find(|(rv, h, refs)| (*rv != rev || h != handle) && refs.contains(r));
        match earlier {
            Some((rv, _, _)) => DriverError::new(
                ErrorCode::StaleRevision,
                format!(
                    "{r} was shown under revision {rv}, but the grant is now at revision {rev} on {}; refs from before a switch are void, use a ref from the current window text",
                    window_label(&self.obs)
                ),
            ),
            None => DriverError::new(
                ErrorCode::ElementNotFound,
                format!(
                    "there is no element {r} in the current window {}; use a ref from its text",
                    window_label(&self.obs)
                ),
            ),
        }
    }

    async fn steps(
        &mut self,
        cap: usize,
        stop: &deskpilot_host::control::StopSignal,
        progress: &mut (dyn FnMut(&StepRecord) + Send),
    ) -> RunStatus {
        let schema = decision::schema();
        let system = prompt::system(&schema.to_string());
        let system_tokens = deskpilot_core::tokens::count(&system) as u64;
        for n in 1..=cap {
            let t0 = Instant::now();
            if stop.is_stopped() {
                self.host.apply_stop();
                return self.stopped_by_signal();
            }
            if self.needs_observe {
                match self.host.observe(&Target::Current, &self.oo).await {
                    Ok(o) => {
                        self.obs = o;
                        self.needs_observe = false;
                        self.remember_refs();
                    }
                    Err(e) => return self.host_ended(e),
                }
            }
            let apps = match self.host.apps().await {
                Ok(a) => a,
                Err(e) => return self.host_ended(e),
            };
            let windows = prompt::window_lines(&apps);
            let grant = self.host.grant_view();
            let user = prompt::user(&prompt::StepView {
                instruction: &self.opts.instruction,
                grant: grant.as_ref(),
                windows: &windows,
                observation: &self.obs.text,
                last_outcome: self.last_outcome.as_deref(),
                history: &self.history,
                step: n,
                cap,
            });
            let req = DecideRequest {
                system: system.clone(),
                user,
                schema: schema.clone(),
                max_output_tokens: self.opts.max_output_tokens,
            };
            let answer = tokio::select! {
                r = self.model.decide(&req) => Some(r),
                () = stop.stopped() => None,
            };
            let Some(answer) = answer else {
                self.host.apply_stop();
                return self.stopped_by_signal();
            };
            let reply = match answer {
                Ok(r) => r,
                Err(e) => {
                    self.report.error = Some(e);
                    return RunStatus::ModelError;
                }
            };
            let mut usage = reply.usage;
            if !usage.reported {
                usage.input_tokens =
                    system_tokens + deskpilot_core::tokens::count(&req.user) as u64;
                usage.output_tokens = deskpilot_core::tokens::count(&reply.raw) as u64;
            }
            let mut rec = StepRecord {
                n,
                kind: "invalid".into(),
                ref_: None,
                op: None,
                value_len: None,
                window: None,
                outcome: String::new(),
                message: None,
                channel: None,
                tokens_in: usage.input_tokens,
                tokens_out: usage.output_tokens,
                usage_reported: usage.reported,
                ms: 0,
            };
            self.report.tokens_in += usage.input_tokens;
            self.report.tokens_out += usage.output_tokens;
            self.report.usage_reported &= usage.reported;

            let next = match decision::parse(&reply.raw) {
                Err(e) => {
                    let sig = format!("invalid:{}", e.message);
                    self.refused_step(&mut rec, &e, &sig)
                }
                Ok(d) => {
                    rec.kind = d.kind().into();
                    self.decided(n, d, &apps, &mut rec).await
                }
            };
            rec.ms = t0.elapsed().as_millis() as u64;
            self.history.push(history_line(&rec));
            if self.history.len() > HISTORY_LINES {
                self.history.remove(0);
            }
            progress(&rec);
            self.report.steps.push(rec);
            if let Next::End(s) = next {
                return s;
            }
        }
        if self.host.grant_view().is_some_and(|g| g.actions_left == 0) {
            RunStatus::Budget
        } else {
            RunStatus::StepCap
        }
    }

    fn stopped_by_signal(&mut self) -> RunStatus {
        self.report.error = Some(DriverError::new(
            ErrorCode::StoppedByUser,
            "the user pressed stop: the run was aborted and the grant revoked",
        ));
        RunStatus::Stopped
    }

    /// Ends the run on a host error outside a step's action.
    fn host_ended(&mut self, e: DriverError) -> RunStatus {
        let status = match ending(e.code) {
            Some(RunStatus::NeedsUser) | None => RunStatus::Failed,
            Some(s) => s,
        };
        self.report.error = Some(e);
        status
    }

    /// Records a refused step and tells the model; ends the run on the third identical
    /// failure in a row.
    fn refused_step(&mut self, rec: &mut StepRecord, e: &DriverError, sig: &str) -> Next {
        rec.outcome = e.code.as_str().to_string();
        rec.message = Some(bounded_text(&e.message, 300));
        self.last_outcome = Some(format!(
            "step {} was refused before or by the host, nothing was done: {}: {}",
            rec.n,
            e.code.as_str(),
            bounded_text(&e.message, 600)
        ));
        self.fail(sig)
    }

    fn fail(&mut self, sig: &str) -> Next {
        if self.streak.0 == sig {
            self.streak.1 += 1;
        } else {
            self.streak = (sig.to_string(), 1);
        }
        if self.streak.1 >= REPEAT_LIMIT {
            Next::End(RunStatus::RepeatedFailure)
        } else {
            Next::Continue
        }
    }

    fn succeed(&mut self) {
        self.streak = (String::new(), 0);
    }

    async fn decided(
        &mut self,
        n: usize,
        d: Decision,
        apps: &[deskpilot_host::host::ListedApp],
        rec: &mut StepRecord,
    ) -> Next {
        match d {
            Decision::Done { summary } => {
                rec.outcome = "done".into();
                self.report.model_claim = Some(bounded_text(&summary, MAX_MODEL_TEXT_CHARS));
                Next::End(RunStatus::Done)
            }
            Decision::Ask { question } => {
                rec.outcome = "asked".into();
                self.report.question = Some(Question {
                    from: "model".into(),
                    text: bounded_text(&question, MAX_MODEL_TEXT_CHARS),
                });
                Next::End(RunStatus::NeedsUser)
            }
            Decision::Switch { window } => {
                rec.window = Some(window.clone());
                self.switch(&window, apps, rec).await
            }
            Decision::Action { ref_, op, value } => {
                rec.ref_ = Some(ref_.clone());
                rec.op = Some(op.as_str().into());
                rec.value_len = match op {
                    Op::SetValue | Op::Type => value.as_ref().map(|v| v.chars().count()),
                    _ => None,
                };
                self.action(n, &ref_, op, value, rec).await
            }
        }
    }

    async fn switch(
        &mut self,
        window: &str,
        apps: &[deskpilot_host::host::ListedApp],
        rec: &mut StepRecord,
    ) -> Next {
        let sig = format!("switch:{window}");
        let listed = apps
            .iter()
            .flat_map(|a| a.windows.iter())
            .find(|w| w.ref_ == window);
        let Some(listed) = listed else {
            let e = DriverError::new(
                ErrorCode::ElementNotFound,
                format!("{window} is not in the window list; switch only to a listed window"),
            );
            return self.refused_step(rec, &e, &sig);
        };
        if listed.bound {
            let e = DriverError::new(
                ErrorCode::InvalidArgument,
                format!("{window} is already the bound window; act in it or finish"),
            );
            return self.refused_step(rec, &e, &sig);
        }
        // The host decides (and audits) whether the window may be bound; a refusal
        // is this step's outcome.
        match self
            .host
            .observe(&Target::Window(window.to_string()), &self.oo)
            .await
        {
            Ok(o) => {
                self.obs = o;
                self.needs_observe = false;
                self.remember_refs();
                let label = window_label(&self.obs);
                if !self.report.windows_visited.contains(&label) {
                    self.report.windows_visited.push(label.clone());
                }
                rec.outcome = "switched".into();
                self.last_outcome = Some(format!(
                    "switched to {label} (revision {}); refs shown before the switch are void, its tree is above",
                    self.obs_revision()
                ));
                self.succeed();
                Next::Continue
            }
            Err(e) => match ending(e.code) {
                Some(s) if s != RunStatus::NeedsUser => {
                    rec.outcome = e.code.as_str().to_string();
                    rec.message = Some(bounded_text(&e.message, 300));
                    self.report.error = Some(e);
                    Next::End(s)
                }
                _ => {
                    let e = DriverError {
                        message: format!(
                            "the host refused to bind {window}: {} — the grant stays on {}",
                            e.message,
                            window_label(&self.obs)
                        ),
                        ..e
                    };
                    self.refused_step(rec, &e, &format!("{sig}:{}", e.code.as_str()))
                }
            },
        }
    }

    async fn action(
        &mut self,
        n: usize,
        r: &str,
        op: Op,
        value: Option<String>,
        rec: &mut StepRecord,
    ) -> Next {
        let sig_base = format!(
            "action:{r}:{op}:{}",
            value
                .as_deref()
                .map_or(0, deskpilot_policy::approval::stable_hash)
        );
        // Revision: the grant must still be where the observation was made.
        let rev = self.revision();
        let bound_ref = self.host.grant_view().and_then(|g| g.window_ref);
        if rev != self.obs_revision() || bound_ref.as_deref() != Some(self.obs.window_ref.as_str())
        {
            self.needs_observe = true;
            let e = DriverError::new(
                ErrorCode::StaleRevision,
                format!(
                    "the grant moved to revision {rev} since the window was observed (revision {}); observe again",
                    self.obs_revision()
                ),
            );
            return self.refused_step(rec, &e, &format!("{sig_base}:stale"));
        }
        let Some((role, name)) = self.element(r) else {
            let e = self.missing_ref(r);
            return self.refused_step(rec, &e, &format!("{sig_base}:{}", e.code.as_str()));
        };
        if op == Op::DragTo
            && let Some(target) = value.as_deref()
            && self.element(target).is_none()
        {
            let e = self.missing_ref(target);
            return self.refused_step(rec, &e, &format!("{sig_base}:{}", e.code.as_str()));
        }
        if self.host.grant_view().is_some_and(|g| g.actions_left == 0) {
            let e = DriverError::new(
                ErrorCode::BudgetExhausted,
                "the grant's action budget is spent; nothing was dispatched",
            );
            rec.outcome = e.code.as_str().to_string();
            rec.message = Some(e.message.clone());
            self.report.error = Some(e);
            return Next::End(RunStatus::Budget);
        }
        let label = window_label(&self.obs);
        let result = self.host.act(r, op, value).await;
        self.needs_observe = true;
        match result {
            Ok(out) => {
                let status = out.result.status;
                rec.outcome = status.as_str().to_string();
                rec.channel = Some(out.result.channel.as_str().to_string());
                if status != ActStatus::Rejected {
                    self.report.actions_executed.push(ExecutedAction {
                        step: n,
                        op: op.as_str().into(),
                        role,
                        name,
                        channel: out.result.channel.as_str().into(),
                        status: status.as_str().into(),
                        window: label.clone(),
                    });
                    // One entry per window (`[wN] …`), whatever its title became.
                    let wref = label.split(']').next().unwrap_or_default().to_string();
                    if !self
                        .report
                        .windows_touched
                        .iter()
                        .any(|w| w.split(']').next() == Some(wref.as_str()))
                    {
                        self.report.windows_touched.push(label);
                    }
                }
                let mut told = out.text.trim_end().to_string();
                if status != ActStatus::Executed {
                    if let Some(note) = &out.result.note {
                        rec.message = Some(bounded_text(note, 300));
                    }
                    told.push_str(&format!(
                        "\n(the action's outcome is {}: it was not retried; check the window before repeating it)",
                        status.as_str()
                    ));
                }
                self.last_outcome = Some(told);
                if status == ActStatus::Executed {
                    self.succeed();
                    Next::Continue
                } else {
                    self.fail(&format!("{sig_base}:{}", status.as_str()))
                }
            }
            Err(e) => match ending(e.code) {
                Some(RunStatus::NeedsUser) => {
                    rec.outcome = e.code.as_str().to_string();
                    rec.message = Some(bounded_text(&e.message, 300));
                    self.report.question = Some(Question {
                        from: "host".into(),
                        text: bounded_text(&e.message, MAX_MODEL_TEXT_CHARS),
                    });
                    self.report.error = Some(e);
                    Next::End(RunStatus::NeedsUser)
                }
                Some(s) => {
                    rec.outcome = e.code.as_str().to_string();
                    rec.message = Some(bounded_text(&e.message, 300));
                    self.report.error = Some(e);
                    Next::End(s)
                }
                None => {
                    let sig = format!("{sig_base}:{}", e.code.as_str());
                    self.refused_step(rec, &e, &sig)
                }
            },
        }
    }
}

fn history_line(rec: &StepRecord) -> String {
    let mut s = format!("step {}: {}", rec.n, rec.kind);
    if let Some(op) = &rec.op {
        s.push_str(&format!(" {op}"));
    }
    if let Some(r) = &rec.ref_ {
        s.push_str(&format!(" {r}"));
    }
    if let Some(n) = rec.value_len {
        s.push_str(&format!(" ({n} chars)"));
    }
    if let Some(w) = &rec.window {
        s.push_str(&format!(" {w}"));
    }
    s.push_str(&format!(" → {}", rec.outcome));
    if let Some(c) = &rec.channel {
        s.push_str(&format!(" via {c}"));
    }
    s
}

/// The summary: what the host did, then why the run stopped. Never the model's text.
fn summarize(r: &RunReport) -> String {
    let done: Vec<&ExecutedAction> = r
        .actions_executed
        .iter()
        .filter(|a| a.status == ActStatus::Executed.as_str())
        .collect();
    let unsure: Vec<&ExecutedAction> = r
        .actions_executed
        .iter()
        .filter(|a| a.status != ActStatus::Executed.as_str())
        .collect();
    let describe = |list: &[&ExecutedAction]| -> String {
        let mut parts: Vec<String> = list
            .iter()
            .take(SUMMARY_ACTIONS)
            .map(|a| {
                if a.name.is_empty() {
                    format!("{} {} via {}", a.op, a.role, a.channel)
                } else {
                    format!("{} {} \"{}\" via {}", a.op, a.role, a.name, a.channel)
                }
            })
            .collect();
        if list.len() > SUMMARY_ACTIONS {
            parts.push(format!("and {} more", list.len() - SUMMARY_ACTIONS));
        }
        parts.join("; ")
    };
    let mut s = if done.is_empty() {
        "no action was executed".to_string()
    } else {
        // One entry per window (`[wN] …`, named as first seen), whatever its title
        // became.
        let mut apps: Vec<&str> = Vec::new();
        for a in &done {
            let wref = a.window.split(']').next();
            if !apps.iter().any(|w| w.split(']').next() == wref) {
                apps.push(&a.window);
            }
        }
        format!(
            "{} action{} executed in {} ({})",
            done.len(),
            if done.len() == 1 { "" } else { "s" },
            apps.join(", "),
            describe(&done)
        )
    };
    if !unsure.is_empty() {
        s.push_str(&format!(
            "; {} action{} with unknown outcome ({})",
            unsure.len(),
            if unsure.len() == 1 { "" } else { "s" },
            describe(&unsure)
        ));
    }
    let mut refused: Vec<(String, usize)> = Vec::new();
    for st in r.steps.iter().filter(|st| !st.succeeded()) {
        if !st.outcome.starts_with("COMPUTER_") && st.outcome != "rejected" {
            continue;
        }
        match refused.iter_mut().find(|(c, _)| *c == st.outcome) {
            Some((_, k)) => *k += 1,
            None => refused.push((st.outcome.clone(), 1)),
        }
    }
    if !refused.is_empty() {
        let total: usize = refused.iter().map(|(_, k)| k).sum();
        let codes: Vec<String> = refused
            .iter()
            .map(|(c, k)| {
                if *k == 1 {
                    c.clone()
                } else {
                    format!("{c} ×{k}")
                }
            })
            .collect();
        s.push_str(&format!(
            "; {total} step{} refused ({})",
            if total == 1 { "" } else { "s" },
            codes.join(", ")
        ));
    }
    if !r.windows_visited.is_empty() {
        s.push_str(&format!(
            "; switched to {} (not work done)",
            r.windows_visited.join(", ")
        ));
    }
    let steps = r.steps.len();
    let why = match r.status {
        RunStatus::Done => "the model said done".to_string(),
        RunStatus::StepCap => format!("step cap of {} reached", r.step_cap),
        RunStatus::Stopped => "stopped by the user".to_string(),
        RunStatus::Expired => "the grant expired".to_string(),
        RunStatus::Budget => "the action budget is spent".to_string(),
        RunStatus::RepeatedFailure => format!("the same step failed {REPEAT_LIMIT} times"),
        RunStatus::NeedsUser => match r.question.as_ref().map(|q| q.from.as_str()) {
            Some("host") => "the host needs the user's confirmation (see question)".to_string(),
            _ => "the model asked the user a question (see question)".to_string(),
        },
        RunStatus::Refused | RunStatus::ModelError | RunStatus::Failed => format!(
            "{} ({})",
            match r.status {
                RunStatus::Refused => "refused by the host",
                RunStatus::ModelError => "the model could not be asked",
                _ => "host error",
            },
            r.error.as_ref().map_or("unknown", |e| e.code.as_str())
        ),
        RunStatus::ObserveOnly => "observe only".to_string(),
    };
    s.push_str(&format!(
        "; stopped: {} after {steps} step{}",
        why,
        if steps == 1 { "" } else { "s" }
    ));
    s
}

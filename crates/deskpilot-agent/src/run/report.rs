//! What a run is asked to do and what it reports: options, status, step records,
//! executed actions, the observe-only scope and the [`RunReport`] with its summary.

use deskpilot_host::host::GrantView;
use deskpilot_protocol::Result;
use deskpilot_protocol::types::ActStatus;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

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
pub(super) const SUMMARY_ACTIONS: usize = 8;

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
    /// How the bound window is shown to the model each step (default the tree).
    pub observation: ObservationMode,
}

/// How the bound window is shown to the model each step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ObservationMode {
    /// The accessibility tree as indented text with refs.
    #[default]
    Tree,
    /// A marked screenshot only (boxes labelled with refs, no text): a screenshot
    /// agent's view, acting on the marks. Needs pixels allowed
    /// (`capture = "a11y-and-pixels"`).
    Pixels,
    /// The tree text and the marked screenshot.
    Hybrid,
}

impl ObservationMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ObservationMode::Tree => "tree",
            ObservationMode::Pixels => "pixels",
            ObservationMode::Hybrid => "hybrid",
        }
    }

    /// `tree`, `pixels` or `hybrid`.
    pub fn from_name(s: &str) -> Option<ObservationMode> {
        [
            ObservationMode::Tree,
            ObservationMode::Pixels,
            ObservationMode::Hybrid,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }

    /// Whether a screenshot goes with each step.
    pub fn shows_image(self) -> bool {
        self != ObservationMode::Tree
    }
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
            observation: ObservationMode::Tree,
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// o200k tokens of what deskpilot showed of the desktop in this step's prompt
    /// (the window text, the window list, the previous step's outcome).
    pub shown_tokens: u64,
    /// Estimated vision tokens of the screenshot sent with this step (0 in the tree
    /// observation).
    pub image_tokens: u64,
    /// What one screenshot of the bound window would cost at the default downscale
    /// (width × height / 750 after the long side is cut to 1,280 px): a screenshot
    /// agent's price for this step.
    pub screenshot_tokens: u64,
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Question {
    /// `model` (an `ask` decision: the model's words) or `host` (a confirmation only
    /// the user can give, e.g. `deskpilot approve ID`).
    pub from: String,
    /// One line, ≤ 500 chars.
    pub text: String,
}

/// A window as an observe-only run lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    pub error: Option<ComputerError>,
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
    pub fn write_record(&self, dir: &std::path::Path) -> Result<std::path::PathBuf> {
        use std::io::Write;
        let internal = |m: String| ComputerError::new(ErrorCode::Internal, m);
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

    pub(super) fn new(model: Option<String>, step_cap: usize) -> RunReport {
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

/// The summary: what the host did, then why the run stopped. Never the model's text.
pub(super) fn summarize(r: &RunReport) -> String {
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

//! What one attempt records: the line of `results.jsonl` ([`AttemptRecord`]), and the
//! transcript a policy's calls leave while it runs ([`Transcript`]).

use deskpilot_protocol::types::WindowInfo;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::{Deserialize, Serialize};

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every check held.
    Success,
    /// A check failed (the policy ran to its end).
    Failure,
    /// The attempt hit its wall limit and was killed.
    TimedOut,
    /// The harness could not set the task up (a sandbox or app that never started,
    /// a setup file that could not be written): not the policy's failure, and kept
    /// out of the success rate.
    Infra,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::TimedOut => "timed_out",
            Outcome::Infra => "infra",
        }
    }
}

/// One check's verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check as one line (`file out.txt equals "42"`).
    pub check: String,
    pub ok: bool,
    /// What was found, when it did not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One attempt: a line of `results.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub task: String,
    pub app: String,
    #[serde(default)]
    pub skills: Vec<String>,
    /// `oracle` or `model`.
    pub policy: String,
    /// `tree`, `pixels` or `hybrid`.
    pub observation: String,
    /// 1-based run number (`--runs K`).
    pub run: usize,
    pub outcome: Outcome,
    /// Why it was not a success (the failed check, the oracle step, the setup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Actions that reached the host's pipeline (act, keys; a model's action steps).
    pub steps: u64,
    /// Tool calls of every kind (observe, find, read, wait, act, keys), or a model's
    /// loop steps.
    pub calls: u64,
    /// Requests to the model (0 for the oracle).
    pub model_calls: u64,
    /// Model tokens in and out (reported by the provider, or counted with o200k).
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// o200k tokens of every text deskpilot returned to the policy (snapshots,
    /// diffs, find hits, reads; for a model, what its prompts showed of the desktop,
    /// plus the estimated vision tokens of the screenshots it was sent).
    pub deskpilot_tokens: u64,
    /// What a screenshot agent would have spent on the same steps: for each step, one
    /// screenshot of the bound window at the default downscale (long side 1,280 px),
    /// width × height / 750 (an estimate, as `deskpilot screenshot` states it).
    pub screenshot_tokens: u64,
    pub wall_ms: u64,
    /// Answers that refused: the policy's refusal codes (a denylisted window, secure
    /// input, a scope violation…), not failures such as an element not found.
    pub refusals: u64,
    /// `COMPUTER_CONFIRMATION_REQUIRED` answers.
    pub confirmations: u64,
    /// Every `COMPUTER_*` code answered, in order.
    #[serde(default)]
    pub codes: Vec<String>,
    /// The channel of each action, in order (`action`, `text`, `keyboard`…).
    #[serde(default)]
    pub channels: Vec<String>,
    #[serde(default)]
    pub checks: Vec<CheckResult>,
    /// How the loop ended (`done`, `step_cap`…, or `decided_by_host`), for model
    /// runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_status: Option<String>,
    /// `provider:model` of a model run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The host answered the task before the model was asked (a refused window to
    /// start in, plan mode): the outcome says nothing about the model.
    #[serde(default)]
    pub host_decided: bool,
    /// Screenshots sent to the model (pixels and hybrid observations). A
    /// `never_shown` check searches text only, not these images.
    #[serde(default)]
    pub images: u64,
}

/// The refusal codes (docs/ARCHITECTURE.md §11) other than a confirmation.
const REFUSALS: [ErrorCode; 13] = [
    ErrorCode::FeatureDisabled,
    ErrorCode::NoModelBinding,
    ErrorCode::NoGrant,
    ErrorCode::StoppedByUser,
    ErrorCode::ScopeViolation,
    ErrorCode::StaleBasis,
    ErrorCode::StaleRevision,
    ErrorCode::BudgetExhausted,
    ErrorCode::GrantExpired,
    ErrorCode::SelfTarget,
    ErrorCode::SecureInput,
    ErrorCode::Denylisted,
    ErrorCode::TargetElevated,
];

/// What a policy's calls returned, as they happen.
#[derive(Debug, Default)]
pub struct Transcript {
    /// Every text deskpilot returned, with the call's name.
    pub texts: Vec<(String, String)>,
    pub calls: u64,
    pub steps: u64,
    pub deskpilot_tokens: u64,
    pub screenshot_tokens: u64,
    pub codes: Vec<String>,
    pub channels: Vec<String>,
    /// Screenshots shown to the policy (their pixels are not in `texts`).
    pub images: u64,
}

impl Transcript {
    /// A call returned `text`.
    pub fn returned(&mut self, call: &str, text: &str) {
        self.calls += 1;
        self.deskpilot_tokens += deskpilot_core::tokens::count(text) as u64;
        self.texts.push((call.to_string(), text.to_string()));
    }

    /// An action is about to be sent with `window` bound: one step, and one
    /// screenshot for a screenshot agent.
    pub fn step(&mut self, window: Option<&WindowInfo>) {
        self.steps += 1;
        self.screenshot_tokens +=
            window.map_or(0, deskpilot_host::host::pixels::window_screenshot_tokens);
    }

    pub fn channel(&mut self, channel: &str) {
        self.channels.push(channel.to_string());
    }

    /// A call was answered with an error.
    pub fn answered(&mut self, e: &ComputerError) {
        self.calls += 1;
        let text = format!("{}: {}", e.code.as_str(), e.message);
        self.deskpilot_tokens += deskpilot_core::tokens::count(&text) as u64;
        self.texts.push(("error".into(), text));
        self.codes.push(e.code.as_str().to_string());
    }

    /// (refusals, confirmations) among the codes: a refusal is a code the policy
    /// answers with (docs/ARCHITECTURE.md §11, kind "refusal"), not a failure such
    /// as an element not found or a timeout.
    pub fn counts(codes: &[String]) -> (u64, u64) {
        let confirm = ErrorCode::ConfirmationRequired.as_str();
        let c = codes.iter().filter(|c| *c == confirm).count() as u64;
        let r = codes
            .iter()
            .filter(|c| *c != confirm && REFUSALS.iter().any(|k| k.as_str() == c.as_str()))
            .count() as u64;
        (r, c)
    }
}

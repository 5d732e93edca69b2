//! The structured content of each `computer_*` tool result, as Rust types. The
//! published output schemas are generated from these types (for what they
//! serialize), so a client can validate every successful result; a failed call
//! carries an [`ErrorOutput`] instead, with `isError: true`.
//!
//! These are views of the host's results: built from them, never from anything a
//! caller sent.

use deskpilot_host::host::{GrantView, ListedApp};
use deskpilot_host::session::{Change, FindHit, Observation};
use deskpilot_protocol::DriverError;
use schemars::JsonSchema;
use serde::Serialize;

/// A failed call: `{code, message, detail}`. `code` is a `COMPUTER_*` code naming the
/// refusal or failure; `message` says what happened and what to do; `detail` carries
/// structured facts (an approval id, a fresh snapshot, the actions that ran) or null.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ErrorOutput {
    pub code: String,
    pub message: String,
    pub detail: serde_json::Value,
}

impl From<&DriverError> for ErrorOutput {
    fn from(e: &DriverError) -> Self {
        ErrorOutput {
            code: e.code.as_str().to_string(),
            message: e.message.clone(),
            detail: e.detail.clone().unwrap_or(serde_json::Value::Null),
        }
    }
}

/// The grant the call ran under.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GrantOut {
    pub grant_id: String,
    /// `desktop` or `window`.
    pub scope: String,
    /// `agent` or `user`.
    pub issuer: String,
    /// Ref (`wN`) of the window the grant is bound to.
    pub window_ref: Option<String>,
    pub app: Option<String>,
    /// Bumped on every rebind; refs from another revision are stale.
    pub revision: u64,
    pub actions_left: u32,
    /// Permission mode: plan, default, accept-edits, bypass or unattended.
    pub mode: String,
    /// The grant in one line, as the text shows it.
    pub line: String,
}

fn enum_str<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

impl From<&GrantView> for GrantOut {
    fn from(g: &GrantView) -> Self {
        GrantOut {
            grant_id: g.grant_id.clone(),
            scope: enum_str(&g.scope),
            issuer: enum_str(&g.issuer),
            window_ref: g.window_ref.clone(),
            app: g.app.clone(),
            revision: g.revision,
            actions_left: g.actions_left,
            mode: g.mode.as_str().to_string(),
            line: g.line(),
        }
    }
}

/// A refusal that covers a window.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RefusalOut {
    pub code: String,
    pub reason: String,
}

/// A window in the listing.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WindowOut {
    /// Window ref, e.g. `w1`.
    #[serde(rename = "ref")]
    pub ref_: String,
    pub title: String,
    pub role: String,
    /// The desktop's active window.
    pub active: bool,
    /// The grant is bound to this window (the window you work in).
    pub bound: bool,
    /// Why deskpilot will not touch this window, if a refusal covers it.
    pub refused: Option<RefusalOut>,
}

/// An application in the listing.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AppOut {
    pub name: String,
    pub pid: Option<u32>,
    /// `ok`, `not_responding` or `accessibility_disabled`.
    pub status: String,
    pub windows: Vec<WindowOut>,
}

/// Result of `computer_apps`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AppsOutput {
    /// Applications listed in the text (all of them unless `omitted` > 0).
    pub apps: Vec<AppOut>,
    /// Applications left out to stay within the token budget.
    pub omitted: usize,
    pub grant: Option<GrantOut>,
}

impl AppsOutput {
    /// The listing of `apps`, keeping the first `keep`.
    pub fn new(apps: &[ListedApp], keep: usize, grant: Option<&GrantView>) -> Self {
        AppsOutput {
            apps: apps
                .iter()
                .take(keep)
                .map(|a| AppOut {
                    name: a.name.clone(),
                    pid: a.pid,
                    status: enum_str(&a.status),
                    windows: a
                        .windows
                        .iter()
                        .map(|w| WindowOut {
                            ref_: w.ref_.clone(),
                            title: w.window.title.clone(),
                            role: w.window.role.to_string(),
                            active: w.window.active,
                            bound: w.bound,
                            refused: w.refused.as_ref().map(|r| RefusalOut {
                                code: r.code.as_str().to_string(),
                                reason: r.reason.clone(),
                            }),
                        })
                        .collect(),
                })
                .collect(),
            omitted: apps.len().saturating_sub(keep),
            grant: grant.map(GrantOut::from),
        }
    }
}

/// Result of `computer_observe`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ObserveOutput {
    /// Ref of the observed window, e.g. `w1`.
    pub window_ref: String,
    pub app: String,
    pub title: String,
    /// The snapshot as indented text, one element per line (the same as the text
    /// content, without the footer).
    pub snapshot: String,
    /// Element refs the snapshot shows, in order (e.g. `e5`): the refs you can act on.
    pub refs: Vec<String>,
    /// Tokens of the snapshot (o200k).
    pub tokens: usize,
    /// The budget the snapshot was rendered within.
    pub max_tokens: usize,
    /// Elements shown and left out by the budget, scope or query.
    pub shown: usize,
    pub omitted: usize,
    /// Accessibility objects read, and the read + render wall time in ms.
    pub objects_read: u64,
    pub elapsed_ms: u64,
    pub grant: Option<GrantOut>,
    /// Coordinate basis of this window (`rREV:X,Y,WxH@SCALE`).
    pub basis: Option<String>,
}

/// The element refs a snapshot text shows, in order: the leading `[eN]` of each line.
pub fn refs_in(snapshot: &str) -> Vec<String> {
    snapshot
        .lines()
        .filter_map(|l| {
            let t = l.trim_start().strip_prefix('[')?;
            let (r, _) = t.split_once(']')?;
            let digits = r.strip_prefix('e')?;
            (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
                .then(|| r.to_string())
        })
        .collect()
}

impl ObserveOutput {
    pub fn new(obs: &Observation, max_tokens: usize) -> Self {
        ObserveOutput {
            window_ref: obs.window_ref.clone(),
            app: obs.window.app.clone(),
            title: obs.window.title.clone(),
            snapshot: obs.text.clone(),
            refs: refs_in(&obs.text),
            tokens: obs.tokens,
            max_tokens,
            shown: obs.shown,
            omitted: obs.omitted,
            objects_read: obs.stats.objects,
            elapsed_ms: obs.elapsed_ms,
            grant: obs.grant.as_ref().map(GrantOut::from),
            basis: obs.basis.clone(),
        }
    }
}

/// An element found by `computer_find` or met by `computer_wait`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MatchOut {
    /// Element ref, e.g. `e5`.
    #[serde(rename = "ref")]
    pub ref_: String,
    pub role: String,
    /// Accessible name (secrets masked).
    pub name: String,
    /// The element's line as a snapshot shows it.
    pub line: String,
    pub window_ref: String,
    pub window_title: String,
}

impl From<&FindHit> for MatchOut {
    fn from(h: &FindHit) -> Self {
        MatchOut {
            ref_: h.ref_.clone(),
            role: h.role.to_string(),
            name: h.name.clone(),
            line: h.line.clone(),
            window_ref: h.window_ref.clone(),
            window_title: h.window_title.clone(),
        }
    }
}

/// Result of `computer_find`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FindOutput {
    /// Matches shown in the text.
    pub matches: Vec<MatchOut>,
    /// Matches found but left out to stay within the token budget.
    pub omitted: usize,
}

/// Result of `computer_wait`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WaitOutput {
    /// Always true: a wait that is not met ends in COMPUTER_TIMEOUT.
    pub met: bool,
    pub elapsed_ms: u64,
    /// Elements that met a text or role condition.
    pub matches: Vec<MatchOut>,
    /// Matches left out to stay within the token budget.
    pub omitted: usize,
}

/// A window that appeared during an action.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NewWindowOut {
    pub window_ref: String,
    pub app: String,
    pub role: String,
    pub title: String,
    /// Why deskpilot will not touch it, when a refusal covers it.
    pub refused: Option<String>,
}

/// What an action or keys changed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ChangeOut {
    /// The diff of the window (`+`, `-`, `~`, `focus:` lines); empty when nothing
    /// changed or when it was left out (see `diff_omitted`).
    pub diff: String,
    /// The diff did not fit the token budget and is not shown; observe to read the
    /// window.
    pub diff_omitted: bool,
    pub new_windows: Vec<NewWindowOut>,
    /// Refs of windows that closed.
    pub closed_windows: Vec<String>,
}

impl ChangeOut {
    pub fn new(c: &Change, diff_omitted: bool) -> Self {
        ChangeOut {
            diff: if diff_omitted {
                String::new()
            } else {
                c.diff.clone()
            },
            diff_omitted,
            new_windows: c
                .new_windows
                .iter()
                .map(|w| NewWindowOut {
                    window_ref: w.window_ref.clone(),
                    app: w.app.clone(),
                    role: w.role.to_string(),
                    title: w.title.clone(),
                    refused: w.refused.clone(),
                })
                .collect(),
            closed_windows: c.closed_windows.clone(),
        }
    }
}

/// One action of a batch that ran.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ActItemOut {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub op: String,
    /// `executed`, `rejected`, `timed_out` or `outcome_unknown`.
    pub status: String,
    /// How it was done: action, text, value, keyboard or pointer.
    pub channel: String,
    /// The concrete mechanism, e.g. `DoAction("click")`.
    pub method: String,
    pub note: Option<String>,
    pub elapsed_ms: u64,
    pub change: ChangeOut,
}

/// Why a batch stopped before its last action.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StopOut {
    /// `not_executed`, `windows_changed`, `token_budget`, `stopped_by_user` or
    /// `cancelled`.
    pub reason: String,
    /// One sentence for the model.
    pub message: String,
    /// Refs of the actions not run, in order.
    pub not_run: Vec<String>,
}

/// Result of `computer_act`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ActOutput {
    /// The actions that ran, in order.
    pub actions: Vec<ActItemOut>,
    /// Actions asked for.
    pub requested: usize,
    /// Set when the batch stopped before its last action.
    pub stopped: Option<StopOut>,
}

/// Result of `computer_keys`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct KeysOutput {
    /// The window the keys went to.
    pub window_ref: String,
    /// Always `keyboard` (synthetic input).
    pub channel: String,
    pub events_sent: u64,
    pub elapsed_ms: u64,
    pub change: ChangeOut,
}

/// The first window of a launched app.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LaunchedWindow {
    /// Window ref, when the window was listed.
    pub window_ref: Option<String>,
    pub app: String,
    pub title: String,
    pub role: String,
}

/// Result of `computer_launch`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LaunchOutput {
    pub pid: u32,
    /// The app's first window, or null when none appeared within `wait_ms`.
    pub window: Option<LaunchedWindow>,
    pub elapsed_ms: u64,
}

/// An action a `computer_task` run dispatched, as the host reported it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskActionOut {
    /// The step (1-based) it was dispatched in.
    pub step: usize,
    pub op: String,
    /// The element's role, from the host's tree.
    pub role: String,
    /// The element's name from the host's tree (secrets masked, one line, ≤ 60 chars).
    pub name: String,
    /// How it was done: action, text, value, keyboard or pointer.
    pub channel: String,
    /// `executed`, or `timed_out` / `outcome_unknown` (it may or may not have
    /// happened; never retried).
    pub status: String,
    /// `[wN] app "title"` of the window acted in.
    pub window: String,
}

impl From<&deskpilot_agent::ExecutedAction> for TaskActionOut {
    fn from(a: &deskpilot_agent::ExecutedAction) -> Self {
        TaskActionOut {
            step: a.step,
            op: a.op.clone(),
            role: a.role.clone(),
            name: a.name.clone(),
            channel: a.channel.clone(),
            status: a.status.clone(),
            window: a.window.clone(),
        }
    }
}

/// The question a `computer_task` run stopped on.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskQuestionOut {
    /// `model` (the bound model asks; its words) or `host` (a confirmation only the
    /// user can give, e.g. `deskpilot approve ID`).
    pub from: String,
    /// One line, ≤ 500 chars.
    pub text: String,
}

/// A window as an observe-only task lists it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskWindowOut {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub app: String,
    pub title: String,
    /// The grant is bound to it.
    pub bound: bool,
    /// The `COMPUTER_*` code of a refusal covering it.
    pub refused: Option<String>,
    pub refused_reason: Option<String>,
}

/// What an observe-only task could reach.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskScopeOut {
    /// `[wN] app "title"` of the bound window.
    pub bound_window: String,
    pub windows: Vec<TaskWindowOut>,
    /// The bound window's snapshot (application data, within the default budget).
    pub observation: String,
    /// Tokens of `observation` (o200k).
    pub observation_tokens: usize,
}

/// Result of `computer_task`: what the host did during the run, and the model's own
/// words only where labelled (`model_claim`, a question from the model).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskOutput {
    /// Why the run ended: `done` (the model said so), `observe_only`, `step_cap`,
    /// `stopped`, `expired`, `budget`, `repeated_failure`, `needs_user`, `refused`,
    /// `model_error` or `failed`.
    pub status: String,
    /// Assembled from the actions the host executed and why the run stopped; never
    /// the model's text.
    pub summary: String,
    /// `provider:model` of the bound model; null when it was not called.
    pub model: Option<String>,
    /// The actions dispatched, in order.
    pub actions_executed: Vec<TaskActionOut>,
    /// `[wN] app "title"` of each window an action was dispatched in.
    pub windows_touched: Vec<String>,
    /// Prompt tokens of every model call, summed.
    pub tokens_in: u64,
    /// Answer tokens of every model call, summed.
    pub tokens_out: u64,
    /// Whether the provider reported every step's tokens (else some are o200k
    /// estimates).
    pub usage_reported: bool,
    /// Wall time of the run, ms.
    pub wall_ms: u64,
    /// Steps taken (one model decision each).
    pub steps: usize,
    /// The step cap in force (`max_steps` clamped to the grant's actions left).
    pub step_cap: usize,
    /// Set when the run stopped on a question (status `needs_user`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<TaskQuestionOut>,
    /// The model's `done` summary: its claim, not a verified fact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_claim: Option<String>,
    /// The error that ended the run (`model_error`, `stopped`, `refused`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorOutput>,
    /// Observe-only tasks: what is in scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<TaskScopeOut>,
    /// Path of the run record written under the state directory, when it was written.
    pub record: Option<String>,
}

impl TaskOutput {
    /// The view of `r`, with the path of its run record.
    pub fn new(r: &deskpilot_agent::RunReport, record: Option<&std::path::Path>) -> Self {
        TaskOutput {
            status: r.status.as_str().to_string(),
            summary: r.summary.clone(),
            model: r.model.clone(),
            actions_executed: r.actions_executed.iter().map(TaskActionOut::from).collect(),
            windows_touched: r.windows_touched.clone(),
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
            usage_reported: r.usage_reported,
            wall_ms: r.wall_ms,
            steps: r.steps.len(),
            step_cap: r.step_cap,
            question: r.question.as_ref().map(|q| TaskQuestionOut {
                from: q.from.clone(),
                text: q.text.clone(),
            }),
            model_claim: r.model_claim.clone(),
            error: r.error.as_ref().map(ErrorOutput::from),
            scope: r.scope.as_ref().map(|s| TaskScopeOut {
                bound_window: s.bound_window.clone(),
                windows: s
                    .windows
                    .iter()
                    .map(|w| TaskWindowOut {
                        ref_: w.ref_.clone(),
                        app: w.app.clone(),
                        title: w.title.clone(),
                        bound: w.bound,
                        refused: w.refused.clone(),
                        refused_reason: w.refused_reason.clone(),
                    })
                    .collect(),
                observation: s.observation.clone(),
                observation_tokens: s.observation_tokens,
            }),
            record: record.map(|p| p.display().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_read_from_line_heads_only() {
        let text = "app mousepad pid=1 · window \"x [e9] y\" [active]\n[w1] window \"Untitled\"\n  [e2] menubar\n    [e3] menuitem \"File [e77]\" ▸\n  [e15] textbox value=\"[e4]\" editable\n(folded 3 unnamed containers)";
        assert_eq!(refs_in(text), vec!["e2", "e3", "e15"]);
    }

    #[test]
    fn an_error_keeps_its_code_message_and_detail() {
        let e = DriverError::new(deskpilot_protocol::ErrorCode::StaleRef, "e3 is stale")
            .with_detail(serde_json::json!({ "ref": "e3" }));
        let o = ErrorOutput::from(&e);
        assert_eq!(o.code, "COMPUTER_STALE_REF");
        assert_eq!(o.message, "e3 is stale");
        assert_eq!(o.detail, serde_json::json!({ "ref": "e3" }));
        let o = ErrorOutput::from(&DriverError::new(
            deskpilot_protocol::ErrorCode::Timeout,
            "late",
        ));
        assert_eq!(o.detail, serde_json::Value::Null);
    }
}

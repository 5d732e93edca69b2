//! The structured content of each `computer_*` tool result. The published output
//! schemas are generated from these types (for what they serialize, see
//! [`crate::tools::output_schema`]): a successful call carries the tool's type here, a
//! failed one an [`ErrorOutput`] with `isError: true`, and each schema admits both.
//!
//! A result is made of the host's own result types — [`ListedApp`], [`GrantView`],
//! [`FindHit`], [`Change`], the run's [`ExecutedAction`] and [`ScopeView`] — serialized
//! as the host serializes them (its CLI `--json` form), with two MCP-side adjustments:
//! optional fields the host leaves out when empty are present as `null` ([`Nulls`]),
//! as the published results carry them; and where the host's shape is not the
//! one published here (an observation's text is `snapshot`, an action's status sits
//! next to its change, a run counts its steps), a view is built from the host's
//! result. What only MCP has is here too: the token budget (`omitted`), the batch
//! (`requested`, `stopped`), the grant's line, the refs a snapshot shows, the launch,
//! the run record's path.
//!
//! These are views of the host's results: built from them, never from anything a
//! caller sent.

use std::borrow::Cow;

use deskpilot_agent::run::ScopeWindow;
use deskpilot_agent::{ExecutedAction, Question, RunStatus, ScopeView};
use deskpilot_core::{Op, Role};
use deskpilot_host::host::{GrantView, ListedApp, ListedWindow};
pub use deskpilot_host::session::TextRead;
use deskpilot_host::session::{Change, FindHit, NewWindow, Observation, Unsearched};
use deskpilot_host::{ActOutcome, KeysOutcome};
use deskpilot_protocol::types::{ActStatus, Channel};
use deskpilot_protocol::{ComputerError, ErrorCode};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// A failed call: `{code, message, detail}`, with `isError: true`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ErrorOutput {
    /// The `COMPUTER_*` code naming the refusal or failure.
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
    /// Structured facts (an approval id, a fresh snapshot, the actions that ran), or
    /// null.
    pub detail: Value,
}

impl From<&ComputerError> for ErrorOutput {
    fn from(e: &ComputerError) -> Self {
        ErrorOutput {
            code: e.code,
            message: e.message.clone(),
            detail: e.detail.clone().unwrap_or(Value::Null),
        }
    }
}

// ---------------------------------------------------------------------------------
// Host results with their optional fields present
// ---------------------------------------------------------------------------------

/// A host result whose serialization leaves optional fields out when they are empty,
/// where MCP structured content carries them as `null`.
pub trait NullFields {
    /// Puts the optional fields left out of `v` (this type, serialized) back as null.
    fn fill(v: &mut Map<String, Value>);
}

/// A host result as MCP structured content: the host's own serialization with the
/// optional fields it leaves out present as `null` ([`NullFields`]). Its schema is the
/// host type's, which admits null for those fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Nulls<T>(pub T);

impl<T: Serialize + NullFields> Serialize for Nulls<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v = serde_json::to_value(&self.0).map_err(serde::ser::Error::custom)?;
        if let Value::Object(m) = &mut v {
            T::fill(m);
        }
        v.serialize(s)
    }
}

impl<T: JsonSchema> JsonSchema for Nulls<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

fn null_keys(v: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        v.entry(*k).or_insert(Value::Null);
    }
}

/// [`NullFields::fill`] of `T` on every object of the array `key`.
fn fill_each<T: NullFields>(v: &mut Map<String, Value>, key: &str) {
    if let Some(Value::Array(items)) = v.get_mut(key) {
        for item in items {
            if let Value::Object(m) = item {
                T::fill(m);
            }
        }
    }
}

impl NullFields for GrantView {
    fn fill(v: &mut Map<String, Value>) {
        null_keys(v, &["window_ref", "app", "device"]);
    }
}

impl NullFields for ListedWindow {
    fn fill(v: &mut Map<String, Value>) {
        null_keys(v, &["refused"]);
    }
}

impl NullFields for ListedApp {
    fn fill(v: &mut Map<String, Value>) {
        null_keys(v, &["toolkit"]);
        fill_each::<ListedWindow>(v, "windows");
    }
}

impl NullFields for NewWindow {
    fn fill(v: &mut Map<String, Value>) {
        null_keys(v, &["refused"]);
    }
}

impl NullFields for Change {
    fn fill(v: &mut Map<String, Value>) {
        null_keys(v, &["unread"]);
        fill_each::<NewWindow>(v, "new_windows");
    }
}

impl NullFields for ScopeWindow {
    fn fill(v: &mut Map<String, Value>) {
        null_keys(v, &["refused", "refused_reason"]);
    }
}

impl NullFields for ScopeView {
    fn fill(v: &mut Map<String, Value>) {
        fill_each::<ScopeWindow>(v, "windows");
        if let Some(Value::Object(g)) = v.get_mut("grant") {
            GrantView::fill(g);
        }
    }
}

// ---------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------

/// The grant the call ran under: the host's grant view and its line.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GrantOut {
    #[serde(flatten)]
    pub view: Nulls<GrantView>,
    /// The grant in one line, as the text shows it.
    pub line: String,
}

impl From<&GrantView> for GrantOut {
    fn from(g: &GrantView) -> Self {
        GrantOut {
            view: Nulls(g.clone()),
            line: g.line(),
        }
    }
}

/// Result of `computer_apps`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AppsOutput {
    /// Applications listed in the text (all of them unless `omitted` > 0), with their
    /// windows: window refs (`w1`), which window is active, which one the grant is
    /// bound to (the window you work in), and why deskpilot will not touch a window.
    pub apps: Vec<Nulls<ListedApp>>,
    /// Applications left out to stay within the token budget.
    pub omitted: usize,
    pub grant: Option<GrantOut>,
}

impl AppsOutput {
    /// The listing of `apps`, keeping the first `keep`.
    pub fn new(apps: &[ListedApp], keep: usize, grant: Option<&GrantView>) -> Self {
        AppsOutput {
            apps: apps.iter().take(keep).cloned().map(Nulls).collect(),
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

/// Result of `computer_find`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindOutput {
    /// Matches shown in the text, with their refs.
    pub matches: Vec<FindHit>,
    /// Matches found but left out to stay within the token budget.
    pub omitted: usize,
    /// What the search did not look at (off-screen matches, elements the read did
    /// not reach, the rest of long texts): all zero when it looked at everything.
    pub unsearched: Unsearched,
}

/// Result of `computer_wait`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WaitOutput {
    /// Always true: a wait that is not met ends in COMPUTER_TIMEOUT.
    pub met: bool,
    pub elapsed_ms: u64,
    /// Elements that met a text or role condition.
    pub matches: Vec<FindHit>,
    /// Matches left out to stay within the token budget.
    pub omitted: usize,
}

/// What an action or keys changed, as the host reports it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeOut {
    #[serde(flatten)]
    pub change: Nulls<Change>,
    /// The diff did not fit the token budget and is not shown (`diff` is empty);
    /// observe to read the window.
    pub diff_omitted: bool,
}

impl ChangeOut {
    pub fn new(c: &Change, diff_omitted: bool) -> Self {
        let mut change = c.clone();
        if diff_omitted {
            change.diff.clear();
        }
        ChangeOut {
            change: Nulls(change),
            diff_omitted,
        }
    }
}

/// One action of a batch that ran.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ActItemOut {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub op: Op,
    /// What is known of the action's effect: anything but `executed` stops the batch.
    pub status: ActStatus,
    /// How it was done.
    pub channel: Channel,
    /// The concrete mechanism, e.g. `DoAction("click")`.
    pub method: String,
    pub note: Option<String>,
    /// Dispatch to diff, ms.
    pub elapsed_ms: u64,
    pub change: ChangeOut,
}

impl ActItemOut {
    /// The item of `out`, its diff left out when `diff_omitted`.
    pub fn new(out: &ActOutcome, diff_omitted: bool) -> Self {
        ActItemOut {
            ref_: out.ref_.clone(),
            op: out.op,
            status: out.result.status,
            channel: out.result.channel,
            method: out.result.method.clone(),
            note: out.result.note.clone(),
            elapsed_ms: out.elapsed_ms,
            change: ChangeOut::new(&out.change, diff_omitted),
        }
    }
}

/// Why a batch stopped before its last action.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StopOut {
    /// `not_executed`, `windows_changed`, `unread`, `token_budget`, `stopped_by_user` or
    /// `cancelled`.
    pub reason: String,
    /// One sentence for the model.
    pub message: String,
    /// Refs of the actions not run, in order.
    pub not_run: Vec<String>,
}

/// Result of `computer_act`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ActOutput {
    /// The actions that ran, in order.
    pub actions: Vec<ActItemOut>,
    /// Actions asked for.
    pub requested: usize,
    /// Set when the batch stopped before its last action.
    pub stopped: Option<StopOut>,
}

/// Result of `computer_keys`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct KeysOutput {
    /// The window the keys went to.
    pub window_ref: String,
    /// Always `keyboard` (synthetic input).
    pub channel: Channel,
    pub events_sent: u64,
    pub elapsed_ms: u64,
    pub change: ChangeOut,
}

impl KeysOutput {
    /// The result of `out`, its diff left out when `diff_omitted`.
    pub fn new(out: &KeysOutcome, diff_omitted: bool) -> Self {
        KeysOutput {
            window_ref: out.window_ref.clone(),
            channel: out.result.channel,
            events_sent: out.result.events_sent,
            elapsed_ms: out.elapsed_ms,
            change: ChangeOut::new(&out.change, diff_omitted),
        }
    }
}

/// The first window of a launched app.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LaunchedWindow {
    /// Window ref, when the window was listed.
    pub window_ref: Option<String>,
    pub app: String,
    pub title: String,
    pub role: Role,
}

/// Result of `computer_launch`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LaunchOutput {
    pub pid: u32,
    /// The app's first window, readable through its tree (a launch whose window
    /// cannot be read within `wait_ms` fails `COMPUTER_TIMEOUT` instead).
    pub window: Option<LaunchedWindow>,
    pub elapsed_ms: u64,
}

/// Result of `computer_task`: what the host did during the run, and the model's own
/// words only where labelled (`model_claim`, a question from the model).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskOutput {
    /// Why the run ended: `done` is the model's claim; see the actions for what
    /// happened.
    pub status: RunStatus,
    /// Assembled from the actions the host executed and why the run stopped; never
    /// the model's text.
    pub summary: String,
    /// `provider:model` of the bound model; null when it was not called.
    pub model: Option<String>,
    /// The actions dispatched, in order, as the host reported them.
    pub actions_executed: Vec<ExecutedAction>,
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
    pub question: Option<Question>,
    /// The model's `done` summary: its claim, not a verified fact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_claim: Option<String>,
    /// The error that ended the run (`model_error`, `stopped`, `refused`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorOutput>,
    /// Observe-only tasks: what is in scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Nulls<ScopeView>>,
    /// Path of the run record written under the state directory, when it was written.
    pub record: Option<String>,
}

impl TaskOutput {
    /// The view of `r`, with the path of its run record.
    pub fn new(r: &deskpilot_agent::RunReport, record: Option<&std::path::Path>) -> Self {
        TaskOutput {
            status: r.status,
            summary: r.summary.clone(),
            model: r.model.clone(),
            actions_executed: r.actions_executed.clone(),
            windows_touched: r.windows_touched.clone(),
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
            usage_reported: r.usage_reported,
            wall_ms: r.wall_ms,
            steps: r.steps.len(),
            step_cap: r.step_cap,
            question: r.question.clone(),
            model_claim: r.model_claim.clone(),
            error: r.error.as_ref().map(ErrorOutput::from),
            scope: r.scope.clone().map(Nulls),
            record: record.map(|p| p.display().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use deskpilot_core::Handle;
    use deskpilot_policy::grant::{Capture, InputPolicy, Issuer, Scope};
    use deskpilot_policy::mode::Mode;
    use deskpilot_policy::refusal::Refusal;
    use deskpilot_protocol::types::{AppStatus, WindowInfo};
    use serde_json::json;

    use super::*;

    #[test]
    fn refs_are_read_from_line_heads_only() {
        let text = "app mousepad pid=1 · window \"x [e9] y\" [active]\n[w1] window \"Untitled\"\n  [e2] menubar\n    [e3] menuitem \"File [e77]\" ▸\n  [e15] textbox value=\"[e4]\" editable\n(folded 3 unnamed containers)";
        assert_eq!(refs_in(text), vec!["e2", "e3", "e15"]);
    }

    #[test]
    fn an_error_keeps_its_code_message_and_detail() {
        let e = ComputerError::new(ErrorCode::StaleRef, "e3 is stale")
            .with_detail(json!({ "ref": "e3" }));
        let o = ErrorOutput::from(&e);
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({ "code": "COMPUTER_STALE_REF", "message": "e3 is stale", "detail": { "ref": "e3" } })
        );
        let o = ErrorOutput::from(&ComputerError::new(ErrorCode::Timeout, "late"));
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({ "code": "COMPUTER_TIMEOUT", "message": "late", "detail": null })
        );
    }

    fn grant(bound: bool) -> GrantView {
        GrantView {
            grant_id: "g-1a2b3c4d".into(),
            scope: Scope::Desktop,
            issuer: Issuer::Agent,
            window_ref: bound.then(|| "w1".into()),
            app: bound.then(|| "mousepad".into()),
            revision: 3,
            actions_left: 198,
            idle_expiry_ms: 600_000,
            mode: Mode::AcceptEdits,
            capture: Capture::A11yOnly,
            input_policy: InputPolicy::AutonomousInScope,
            device: None,
        }
    }

    #[test]
    fn a_grant_is_the_host_view_with_its_line_and_nulls_when_unbound() {
        let v = serde_json::to_value(GrantOut::from(&grant(true))).unwrap();
        assert_eq!(
            v,
            json!({
                "grant_id": "g-1a2b3c4d", "scope": "desktop", "issuer": "agent",
                "window_ref": "w1", "app": "mousepad", "revision": 3, "actions_left": 198,
                "idle_expiry_ms": 600000, "mode": "accept-edits", "capture": "a11y-only",
                "input_policy": "autonomous-in-scope", "device": null,
                "line": "grant g-1a2b3c4d · desktop · [w1] mousepad · revision 3 · 198 actions left · mode accept-edits"
            })
        );
        let v = serde_json::to_value(GrantOut::from(&grant(false))).unwrap();
        assert_eq!(v["window_ref"], Value::Null);
        assert_eq!(v["app"], Value::Null);
        assert!(v.as_object().unwrap().contains_key("window_ref"), "{v}");
        assert!(v.as_object().unwrap().contains_key("app"), "{v}");
        // Another device's grant names it, in the fields and at the end of the line.
        let remote = GrantView {
            device: Some("ssh:lab".into()),
            ..grant(true)
        };
        let v = serde_json::to_value(GrantOut::from(&remote)).unwrap();
        assert_eq!(v["device"], "ssh:lab");
        assert!(
            v["line"]
                .as_str()
                .unwrap()
                .ends_with("mode accept-edits · device ssh:lab"),
            "{v}"
        );
    }

    #[test]
    fn listed_windows_keep_a_null_refusal() {
        let window = |ref_: &str, refused: Option<Refusal>| ListedWindow {
            ref_: ref_.into(),
            window: WindowInfo {
                device_bounds: None,
                toolkit_scale: None,
                no_tree: false,
                covered_by: Vec::new(),
                hidden: None,
                handle: Handle::new(format!(":1.5|/{ref_}")),
                app: "mousepad".into(),
                pid: Some(42),
                title: "Untitled".into(),
                role: Role::Window,
                active: ref_ == "w1",
                bounds: None,
            },
            bound: ref_ == "w1",
            refused,
            not_viewable: None,
        };
        let apps = [ListedApp {
            name: "mousepad".into(),
            pid: Some(42),
            status: AppStatus::Ok,
            toolkit: None,
            tier: deskpilot_policy::tier::Tier::Type,
            code: false,
            exe: None,
            windows: vec![
                window("w1", None),
                window(
                    "w2",
                    Some(Refusal {
                        code: ErrorCode::SecureInput,
                        reason: "a password field".into(),
                    }),
                ),
            ],
        }];
        let v = serde_json::to_value(AppsOutput::new(&apps, 1, None)).unwrap();
        assert_eq!(v["omitted"], json!(0));
        assert_eq!(v["grant"], Value::Null);
        let w = &v["apps"][0]["windows"];
        assert_eq!(w[0]["ref"], json!("w1"));
        assert_eq!(w[0]["title"], json!("Untitled"));
        assert_eq!(w[0]["role"], json!("window"));
        assert_eq!(w[0]["active"], json!(true));
        assert_eq!(w[0]["bound"], json!(true));
        assert!(w[0].as_object().unwrap().contains_key("refused"), "{v}");
        assert_eq!(w[0]["refused"], Value::Null);
        assert_eq!(
            w[1]["refused"],
            json!({ "code": "COMPUTER_SECURE_INPUT", "reason": "a password field" })
        );
        assert_eq!(v["apps"][0]["status"], json!("ok"));
    }

    #[test]
    fn an_omitted_diff_is_emptied_and_new_windows_keep_a_null_refusal() {
        let c = Change {
            diff: "~ [e5] textbox value=\"a\" → value=\"b\"".into(),
            diff_tokens: 12,
            new_windows: vec![NewWindow {
                window_ref: "w2".into(),
                app: "mousepad".into(),
                role: Role::Dialog,
                title: "Save As".into(),
                refused: None,
            }],
            closed_windows: vec!["w3".into()],
            unread: None,
        };
        let v = serde_json::to_value(ChangeOut::new(&c, true)).unwrap();
        assert_eq!(
            v,
            json!({
                "diff": "", "diff_tokens": 12, "diff_omitted": true, "closed_windows": ["w3"], "unread": null,
                "new_windows": [{ "window_ref": "w2", "app": "mousepad", "role": "dialog", "title": "Save As", "refused": null }]
            })
        );
        let v = serde_json::to_value(ChangeOut::new(&c, false)).unwrap();
        assert_eq!(v["diff"], json!(c.diff));
        assert_eq!(v["diff_omitted"], json!(false));
    }
}

/// Result of `computer_clipboard`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ClipboardOutput {
    /// `read` or `write`.
    pub op: String,
    /// read: the clipboard's text, masked where it looks like a secret; `null` when
    /// the clipboard holds no text.
    pub text: Option<String>,
    /// read: the text was longer than 256 KiB and was cut.
    pub truncated: bool,
    /// write: the clipboard read back exactly the text written.
    pub verified: Option<bool>,
    /// write: the text's length in UTF-8 bytes.
    pub bytes: Option<usize>,
}

/// Result of `computer_teach_step` and `computer_teach_batch`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TeachOutput {
    /// The steps the person let run (Next), in order, each with its diff.
    pub steps: Vec<ActItemOut>,
    /// Steps asked for.
    pub requested: usize,
}

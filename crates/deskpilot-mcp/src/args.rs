//! The arguments of each `computer_*` tool, as Rust types. The published input
//! schemas are generated from these types (their doc comments become the
//! descriptions), and a call's arguments are parsed into them; nothing here talks to
//! the host.

use deskpilot_core::Op;
use schemars::JsonSchema;
use serde::Deserialize;

/// Default token budget of a tool result's text (docs/ARCHITECTURE.md §4).
pub const DEFAULT_MAX_TOKENS: u32 = 2_000;

/// Highest `max_tokens` a call may ask for. A result carries its text twice (as text
/// content and inside the structured content), so 8,000 keeps a whole result near
/// 16,000 tokens: well below the 25,000-token tool-result limit of Claude Code, with
/// room for the rest of the result.
pub const MAX_TOKENS_CAP: u32 = 8_000;

/// Lowest `max_tokens`: a snapshot must have room to say what it cut.
pub const MIN_TOKENS: u32 = 50;

/// Most actions in one `computer_act` batch.
pub const MAX_ACTIONS: usize = 20;

/// Default and highest `timeout_ms` of `computer_wait`: 10 s and 120 s.
pub const DEFAULT_WAIT_MS: u64 = 10_000;
pub const MAX_WAIT_MS: u64 = 120_000;

/// Default and highest `wait_ms` of `computer_launch`: 15 s (the driver's default)
/// and 60 s.
pub const DEFAULT_LAUNCH_WAIT_MS: u64 = 15_000;
pub const MAX_LAUNCH_WAIT_MS: u64 = 60_000;

/// Default and highest `limit` of `computer_find`.
pub const DEFAULT_FIND_LIMIT: u32 = 20;
pub const MAX_FIND_LIMIT: u32 = 100;

/// `computer_apps` takes no arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppsArgs {}

/// Arguments of `computer_observe`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObserveArgs {
    /// Application to observe, by name (e.g. "mousepad"): its active window. Moving to
    /// another window makes the refs shown before stale. Omit app and window to
    /// observe the window you are working in.
    #[serde(default)]
    pub app: Option<String>,
    /// Window to observe: a window ref from computer_apps (e.g. "w2") or part of its
    /// title.
    #[serde(default)]
    pub window: Option<String>,
    /// Show only the subtree of this element ref (e.g. "e9"): how to read what a
    /// snapshot folded or listed as "K more".
    #[serde(default)]
    pub scope: Option<String>,
    /// With scope: start at this child of the scope (0-based), for the next page of
    /// a container with more children than one read takes ("use observe scope=e9
    /// from=500").
    #[serde(default)]
    pub from: Option<u32>,
    /// Show only elements whose name, value or description contains this text
    /// (case-insensitive), with their ancestors.
    #[serde(default)]
    pub query: Option<String>,
    /// Token budget of the snapshot text: default 2000, at least 50, at most 8000
    /// (results stay well under a client's tool-result limit). What does not fit is
    /// named, never dropped silently; reach it with scope or query.
    #[serde(default)]
    #[schemars(range(min = 50, max = 8000))]
    pub max_tokens: Option<u32>,
}

/// Arguments of `computer_find`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// Text to look for in element names, values and descriptions (case-insensitive).
    pub text: String,
    /// Only elements of this role (e.g. "button", "textbox", "menuitem").
    #[serde(default)]
    pub role: Option<String>,
    /// Search the active window of this application (moves there, like observe).
    #[serde(default)]
    pub app: Option<String>,
    /// Search this window: a window ref ("w2") or part of its title.
    #[serde(default)]
    pub window: Option<String>,
    /// Most matches to return: default 20, at most 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// Arguments of `computer_read`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Element ref from the last observe (e.g. "e19"): a text field or a document.
    #[serde(rename = "ref")]
    pub ref_: String,
    /// First character to return (Unicode characters from 0; default 0).
    #[serde(default)]
    pub from: Option<u64>,
    /// One past the last character to return (default: the end).
    #[serde(default)]
    pub to: Option<u64>,
    /// Return only the last N characters (instead of from/to).
    #[serde(default)]
    pub tail: Option<u64>,
}

/// One action of a batch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActAction {
    /// Element ref from the latest snapshot or diff of the window you work in (e.g.
    /// "e5").
    #[serde(rename = "ref")]
    pub ref_: String,
    /// What to do with the element. `set_value` replaces a field's text or value,
    /// `type` inserts at the caret, `scroll` takes value up|down|left|right|into_view,
    /// `drag_to` takes the target ref as value; back/home/recents are Android
    /// navigation.
    pub op: Op,
    /// Text for set_value/type, direction for scroll, target ref for drag_to.
    #[serde(default)]
    pub value: Option<String>,
}

/// Arguments of `computer_act`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActArgs {
    /// Actions to perform in order, 1 to 20. The batch stops at the first side-effect
    /// boundary: an action that fails, is not confirmed executed, or opens or closes
    /// a window; the result says which actions ran and why it stopped.
    #[schemars(length(min = 1, max = 20))]
    pub actions: Vec<ActAction>,
    /// Token budget of the result text (the diffs): default 2000, at least 50, at
    /// most 8000. When the diffs outgrow it the batch stops there and says so.
    #[serde(default)]
    #[schemars(range(min = 50, max = 8000))]
    pub max_tokens: Option<u32>,
}

/// Arguments of `computer_wait`. Give exactly one condition: text, gone,
/// role with name, or window_title.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// Wait until some element's name, value or description contains this text.
    #[serde(default)]
    pub text: Option<String>,
    /// Wait until no element contains this text any more.
    #[serde(default)]
    pub gone: Option<String>,
    /// With name: wait for an element of this role (e.g. "dialog", "button").
    #[serde(default)]
    pub role: Option<String>,
    /// With role: the element's name contains this text.
    #[serde(default)]
    pub name: Option<String>,
    /// Wait until a window whose title contains this text exists (any app).
    #[serde(default)]
    pub window_title: Option<String>,
    /// Watch the active window of this application.
    #[serde(default)]
    pub app: Option<String>,
    /// Watch this window: a window ref ("w2") or part of its title.
    #[serde(default)]
    pub window: Option<String>,
    /// Give up after this many milliseconds (COMPUTER_TIMEOUT): default 10000, at
    /// most 120000.
    #[serde(default)]
    #[schemars(range(min = 0, max = 120000))]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `computer_keys`: synthetic keyboard input to the window you work in,
/// a fallback for when no element action fits.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeysArgs {
    /// Chords separated by spaces, like "ctrl+s" or "shift+Tab Return"; with
    /// text=true, literal text to type.
    pub keys: String,
    /// Type `keys` as literal text instead of chords.
    #[serde(default)]
    pub text: Option<bool>,
    /// The application the keys are meant for (must be the window you work in).
    #[serde(default)]
    pub app: Option<String>,
    /// The window the keys are meant for: a window ref or part of its title (must
    /// be the window you work in).
    #[serde(default)]
    pub window: Option<String>,
}

/// Arguments of `computer_launch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchArgs {
    /// Program and arguments, no shell: e.g. ["mousepad", "/tmp/notes.txt"].
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// How long to wait for the app's first window to be readable, ms: default
    /// 15000, at most 60000.
    #[serde(default)]
    #[schemars(range(min = 0, max = 60000))]
    pub wait_ms: Option<u64>,
}

/// Default and highest `max_steps` of `computer_task`: 20 (the loop's default,
/// `deskpilot_agent::run::DEFAULT_MAX_STEPS`) and 50 (a task longer than that is
/// better split by the caller).
pub const DEFAULT_TASK_STEPS: usize = 20;
pub const MAX_TASK_STEPS: usize = 50;

/// Arguments of `computer_task`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    /// What to do, in plain words, e.g. "type Hello into the editor and save it".
    /// Passed to the model bound in deskpilot's config as the user's instruction.
    #[schemars(length(min = 1))]
    pub instruction: String,
    /// Step cap of the run (one model decision per step): default 20, at most 50;
    /// also capped by the grant's actions left.
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub max_steps: Option<usize>,
    /// Only describe what the task could reach (the bound window, every window and
    /// why one is refused, the grant), without calling the model or acting; needs no
    /// model binding.
    #[serde(default)]
    pub observe_only: Option<bool>,
}

/// What a screenshot should produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScreenshotMode {
    Ocr,
    #[default]
    Image,
    Marks,
}

/// Arguments of `computer_screenshot`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotArgs {
    /// Application whose window to capture.
    #[serde(default)]
    pub app: Option<String>,
    /// Window to capture: a window ref or part of its title.
    #[serde(default)]
    pub window: Option<String>,
    /// ocr (text read from pixels), image (a PNG, the default), or marks (an image
    /// with element refs drawn on it).
    #[serde(default)]
    pub mode: ScreenshotMode,
    /// Longest side of the image in pixels (default 1280); a larger window is
    /// downscaled, and the basis records the scale.
    #[serde(default)]
    pub max_side: Option<u32>,
}

/// The window a call names: app first, then window, else the current one.
pub fn target(app: &Option<String>, window: &Option<String>) -> deskpilot_host::Target {
    use deskpilot_host::Target;
    match (app, window) {
        (Some(a), _) if !a.is_empty() => Target::App(a.clone()),
        (_, Some(w)) if !w.is_empty() => Target::Window(w.clone()),
        _ => Target::Current,
    }
}

/// A requested token budget: the default when absent, within
/// [`MIN_TOKENS`]..=[`MAX_TOKENS_CAP`]; whether it was lowered to the cap.
pub fn budget(requested: Option<u32>) -> (usize, bool) {
    match requested {
        None => (DEFAULT_MAX_TOKENS as usize, false),
        Some(n) if n > MAX_TOKENS_CAP => (MAX_TOKENS_CAP as usize, true),
        Some(n) => (n.max(MIN_TOKENS) as usize, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_default_clamp_and_floor() {
        assert_eq!(budget(None), (2_000, false));
        assert_eq!(budget(Some(500)), (500, false));
        assert_eq!(budget(Some(10)), (50, false));
        assert_eq!(budget(Some(8_000)), (8_000, false));
        assert_eq!(budget(Some(30_000)), (8_000, true));
    }

    #[test]
    fn targets_prefer_app_then_window() {
        use deskpilot_host::Target;
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            target(&s("mousepad"), &s("w2")),
            Target::App("mousepad".into())
        );
        assert_eq!(target(&None, &s("w2")), Target::Window("w2".into()));
        assert_eq!(target(&s(""), &None), Target::Current);
        assert_eq!(target(&None, &None), Target::Current);
    }

    #[test]
    fn unknown_and_mistyped_arguments_are_rejected() {
        let bad = serde_json::json!({ "actions": [{ "ref": "e1", "op": "click", "extra": 1 }] });
        assert!(serde_json::from_value::<ActArgs>(bad).is_err());
        let bad = serde_json::json!({ "actions": [{ "ref": 5, "op": "click" }] });
        assert!(serde_json::from_value::<ActArgs>(bad).is_err());
        let bad = serde_json::json!({ "actions": [{ "ref": "e1", "op": "smash" }] });
        assert!(serde_json::from_value::<ActArgs>(bad).is_err());
        let ok =
            serde_json::json!({ "actions": [{ "ref": "e1", "op": "set_value", "value": "x" }] });
        let a: ActArgs = serde_json::from_value(ok).unwrap();
        assert_eq!(a.actions[0].op, Op::SetValue);
        assert_eq!(a.actions[0].value.as_deref(), Some("x"));
    }
}

/// Arguments of `computer_clipboard`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClipboardArgs {
    /// `read` returns the clipboard's text; `write` puts `text` on it.
    pub op: ClipboardOp,
    /// The text to write (write only; at most 256 KiB of UTF-8).
    #[serde(default)]
    pub text: Option<String>,
}

/// What `computer_clipboard` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClipboardOp {
    Read,
    Write,
}

/// One step of teach mode: an action on an element, explained to the person first.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeachStepArgs {
    /// Element ref from the latest snapshot or diff of the window you work in.
    #[serde(rename = "ref")]
    pub ref_: String,
    /// What the step does and why, shown to the person beside the element (one
    /// short paragraph).
    pub text: String,
    /// The action Next runs (default click).
    #[serde(default)]
    pub op: Option<Op>,
    /// Text for set_value/type, direction for scroll.
    #[serde(default)]
    pub value: Option<String>,
}

/// Arguments of `computer_teach_batch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeachBatchArgs {
    /// Steps shown and run one after another, 1 to 20; the batch ends at the first
    /// Exit or failure.
    #[schemars(length(min = 1, max = 20))]
    pub steps: Vec<TeachStepArgs>,
}

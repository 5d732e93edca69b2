//! What an effect on the desktop is, as the pipeline sees it (docs/ARCHITECTURE.md
//! §7.11): an element action, keys, a pointer gesture or a clipboard write, with the
//! op name, audit event and written length every step records. Describes; never
//! dispatches.

use deskpilot_core::Op;
use deskpilot_policy::audit::AuditEvent;
use deskpilot_policy::tier::Tier;
use deskpilot_protocol::types::{PointerAction, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::Basis;
use crate::session::Target;

/// `COMPUTER_INTERNAL` for a pipeline state that cannot happen, before dispatch.
pub(super) fn not_dispatched(what: &str) -> ComputerError {
    ComputerError::internal(format!(
        "deskpilot's action pipeline failed ({what}); nothing was dispatched. Report this; observe and retry meanwhile"
    ))
}

/// `COMPUTER_INTERNAL` for an outcome of the wrong kind, after dispatch.
pub(super) fn mismatched(entry: &str) -> ComputerError {
    ComputerError::internal(format!(
        "deskpilot's action pipeline returned the wrong kind of result for {entry}; the effect was dispatched and audited. Observe to see what changed, and report this"
    ))
}

/// One effect on the desktop, as the pipeline sees it.
#[derive(Debug, Clone)]
pub(super) enum Effect {
    /// `op` on the element with ref `r` of the bound window; `value` for the ops that
    /// take one (set_value, type, select, scroll).
    Act {
        r: String,
        op: Op,
        value: Option<String>,
    },
    /// A key chord (`ctrl+s`) or Unicode text typed into the bound window; `target`
    /// must name the bound window (or be [`Target::Current`]).
    Keys {
        target: Target,
        chord: Option<String>,
        text: Option<String>,
    },
    /// A pointer gesture at (`x`, `y`) capture pixels, relative to the window of
    /// `basis`.
    Pointer {
        basis: Basis,
        x: f64,
        y: f64,
        action: PointerAction,
        /// The text OCR read at the point (an `o` element), judged as a control of
        /// that name would be.
        seen: Option<String>,
    },
    /// `text` put on the clipboard (X11: the CLIPBOARD selection), for pasting into
    /// the bound window (docs/ARCHITECTURE.md §7.20).
    Clipboard { text: String },
}

impl Effect {
    /// The op name of the audit and of refusals: the act's op, `keys`, or
    /// `pointer_<action>`.
    pub(super) fn op(&self) -> String {
        match self {
            Effect::Act { op, .. } => op.as_str().into(),
            Effect::Keys { .. } => "keys".into(),
            Effect::Pointer { action, .. } => format!("pointer_{action:?}").to_lowercase(),
            Effect::Clipboard { .. } => "clipboard_write".into(),
        }
    }

    /// The capability tier the effect needs (docs/ARCHITECTURE.md §7.22): an
    /// element action's own ([`Tier::of_op`]), `click` for a pointer gesture, and
    /// `type` for keys and a clipboard write.
    pub(super) fn tier(&self) -> Tier {
        match self {
            Effect::Act { op, .. } => Tier::of_op(*op),
            Effect::Pointer { .. } => Tier::Click,
            Effect::Keys { .. } | Effect::Clipboard { .. } => Tier::Type,
        }
    }

    /// What the effect is, for a refusal naming the tier it needs.
    pub(super) fn describe(&self) -> String {
        match self {
            Effect::Act { op, .. } => format!("the act `{}`", op.as_str()),
            Effect::Pointer { .. } => "a pointer gesture".into(),
            Effect::Keys { .. } => "pressing keys".into(),
            Effect::Clipboard { .. } => "writing the clipboard".into(),
        }
    }

    /// The refusal of an effect on `window` when the window is not on screen
    /// (docs/ARCHITECTURE.md §7.11 "Viewability"): an act, keys or a pointer
    /// gesture on a window that is unmapped, minimised or on another workspace
    /// would go unseen (an accessible action may still run on it, with nothing to
    /// confirm it by), and a pointer gesture on a window wholly under others would
    /// land on them. `COMPUTER_ELEMENT_NOT_ACTIONABLE` with `detail.reason`
    /// `not_viewable` and `detail.not_viewable` the cause. A clipboard write
    /// reaches no window and is never refused here.
    pub(super) fn not_viewable(&self, window: &WindowInfo) -> Option<ComputerError> {
        let why = match (self, window.hidden) {
            (Effect::Clipboard { .. }, _) => return None,
            (_, Some(h)) => h.as_str(),
            (Effect::Pointer { .. }, None) if window.fully_covered() => "covered",
            _ => return None,
        };
        let remedy = match why {
            "covered" => {
                "windows of other apps cover all of it and raising it did not bring it to the front, so a pointer gesture would land on them; work through its accessible elements (act)"
            }
            "minimized" => {
                "deskpilot does not restore minimised windows: ask the user to restore it"
            }
            "other_workspace" => "it is on another workspace; switch to that workspace first",
            _ => "its window is not mapped (hidden by its app or another program); show it first",
        };
        Some(
            ComputerError::new(
                ErrorCode::ElementNotActionable,
                format!(
                    "{} on window {:?} was not sent: the window is not viewable ({why}) — {remedy}, then observe it again",
                    self.describe(),
                    deskpilot_core::sanitize::one_line(&window.title),
                ),
            )
            .with_detail(serde_json::json!({ "reason": "not_viewable", "not_viewable": why })),
        )
    }

    /// The audit event of an effect that was dispatched.
    pub(super) fn event(&self) -> AuditEvent {
        match self {
            Effect::Keys { .. } => AuditEvent::Keys,
            _ => AuditEvent::Action,
        }
    }

    /// The length of the text it writes, in Unicode scalar values (the audit keeps
    /// lengths, never text): the value of set_value/type, the chord or text of keys.
    pub(super) fn text_len(&self) -> Option<usize> {
        match self {
            Effect::Act {
                op: Op::SetValue | Op::Type,
                value,
                ..
            } => value.as_ref().map(|v| v.chars().count()),
            Effect::Act { .. } | Effect::Pointer { .. } => None,
            Effect::Clipboard { text } => Some(text.chars().count()),
            Effect::Keys { chord, text, .. } => {
                Some(keys_text_len(chord.as_deref(), text.as_deref()))
            }
        }
    }
}

/// The characters keys type, for the audit's `text_len`: the text, else the
/// printable keys of the chords up to the first Enter
/// ([`deskpilot_policy::input::chord_text`]), not the length of their spelling
/// (`ctrl+a` types nothing).
pub(crate) fn keys_text_len(chord: Option<&str>, text: Option<&str>) -> usize {
    match (text, chord) {
        (Some(t), _) => t.chars().count(),
        (None, Some(c)) => deskpilot_policy::input::chord_text(c).chars().count(),
        (None, None) => 0,
    }
}

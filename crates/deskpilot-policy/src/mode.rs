//! Permission modes (docs/ARCHITECTURE.md §7): how much the host asks before acting.
//!
//! | mode          | read tools | first action on an app | irreversible action | app not allow-listed |
//! |---------------|------------|------------------------|---------------------|----------------------|
//! | `plan`        | allowed    | refused                | refused             | refused              |
//! | `default`     | allowed    | confirm                | confirm             | (first use confirms) |
//! | `accept-edits`| allowed    | allowed if allow-listed, else confirm | confirm | confirm        |
//! | `bypass`      | allowed    | allowed                | allowed             | allowed              |
//! | `unattended`  | allowed    | allowed if allow-listed | refused            | refused              |
//!
//! Refusals ([`crate::refusal`]) apply in every mode, `bypass` included.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

/// A permission mode. Serialized kebab-case (`accept-edits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read-only: observe, find, wait, apps. Every action is refused.
    Plan,
    /// Confirm the first action on each app and every irreversible action.
    #[default]
    Default,
    /// Allow-listed apps act without asking; irreversible actions still confirm.
    AcceptEdits,
    /// Everything the refusals permit, without asking.
    Bypass,
    /// Never asks: allow-listed apps only, irreversible actions refused.
    Unattended,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::Default => "default",
            Mode::AcceptEdits => "accept-edits",
            Mode::Bypass => "bypass",
            Mode::Unattended => "unattended",
        }
    }

    pub fn from_name(s: &str) -> Option<Mode> {
        [
            Mode::Plan,
            Mode::Default,
            Mode::AcceptEdits,
            Mode::Bypass,
            Mode::Unattended,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }
}

/// The facts a decision needs about one proposed action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionFacts {
    /// The app is on the user's allow-list.
    pub allow_listed: bool,
    /// The user already approved acting on this app in this session.
    pub app_approved: bool,
    /// An irreversible rule matched.
    pub irreversible: bool,
}

/// What the host does with a proposed action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Ask the user; `reason` says what is being confirmed.
    Confirm {
        reason: String,
    },
    Refuse {
        code: ErrorCode,
        reason: String,
    },
}

/// Decides an action (not a read) in `mode`.
pub fn decide(mode: Mode, f: ActionFacts) -> Decision {
    let refuse = |code, reason: &str| Decision::Refuse {
        code,
        reason: reason.to_string(),
    };
    match mode {
        Mode::Plan => refuse(
            ErrorCode::ScopeViolation,
            "plan mode is read-only: observe, find and wait work; switch the mode to act",
        ),
        Mode::Bypass => Decision::Allow,
        Mode::Unattended => {
            if f.irreversible {
                refuse(
                    ErrorCode::ConfirmationRequired,
                    "unattended mode never performs irreversible actions (send, pay, delete, submit…)",
                )
            } else if !f.allow_listed {
                refuse(
                    ErrorCode::ScopeViolation,
                    "unattended mode acts only on allow-listed apps; add the app to `allow_apps` in the config",
                )
            } else {
                Decision::Allow
            }
        }
        Mode::AcceptEdits => {
            if f.irreversible {
                Decision::Confirm {
                    reason: "this action looks irreversible".into(),
                }
            } else if f.allow_listed || f.app_approved {
                Decision::Allow
            } else {
                Decision::Confirm {
                    reason: "first action on an app that is not allow-listed".into(),
                }
            }
        }
        Mode::Default => {
            if f.irreversible {
                Decision::Confirm {
                    reason: "this action looks irreversible".into(),
                }
            } else if f.app_approved {
                Decision::Allow
            } else {
                Decision::Confirm {
                    reason: "first action on this app in this session".into(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(allow_listed: bool, app_approved: bool, irreversible: bool) -> ActionFacts {
        ActionFacts {
            allow_listed,
            app_approved,
            irreversible,
        }
    }

    #[test]
    fn the_mode_table() {
        use Decision::*;
        let is = |d: Decision| match d {
            Allow => "allow",
            Confirm { .. } => "confirm",
            Refuse { .. } => "refuse",
        };
        let rows = [
            // mode, allow-listed, approved, irreversible → expected
            (Mode::Plan, true, true, false, "refuse"),
            (Mode::Default, false, false, false, "confirm"),
            (Mode::Default, false, true, false, "allow"),
            (Mode::Default, true, true, true, "confirm"),
            (Mode::AcceptEdits, true, false, false, "allow"),
            (Mode::AcceptEdits, false, false, false, "confirm"),
            (Mode::AcceptEdits, true, true, true, "confirm"),
            (Mode::Bypass, false, false, true, "allow"),
            (Mode::Unattended, true, false, false, "allow"),
            (Mode::Unattended, false, false, false, "refuse"),
            (Mode::Unattended, true, true, true, "refuse"),
        ];
        for (mode, a, p, i, want) in rows {
            assert_eq!(
                is(decide(mode, facts(a, p, i))),
                want,
                "{mode:?} {a} {p} {i}"
            );
        }
    }

    #[test]
    fn names_round_trip() {
        for m in [
            Mode::Plan,
            Mode::Default,
            Mode::AcceptEdits,
            Mode::Bypass,
            Mode::Unattended,
        ] {
            assert_eq!(Mode::from_name(m.as_str()), Some(m));
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.as_str())
            );
        }
    }
}

//! What the refusals and tiers judge a window on ([`TargetFacts`], measured by the
//! host) and what they answer ([`Refusal`]) (docs/ARCHITECTURE.md §7.4, §7.22).

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

/// Facts the host measured about a window (never text the window asked us to believe:
/// the app name and title are matched only against deny-lists, which can only refuse).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetFacts {
    /// Accessible application name (`mousepad`, `seahorse`).
    pub app: String,
    /// Window title.
    pub title: String,
    pub pid: Option<u32>,
    /// Owner uid of the process.
    pub uid: Option<u32>,
    /// The process's executable file name (`/proc/PID/exe`, else `/proc/PID/comm`),
    /// when known.
    pub exe: Option<String>,
    /// The focused element of the window is a password field.
    pub focused_password: bool,
    /// The process (or a direct child) holds a pseudo-terminal's master end
    /// (`/proc/PID/fd` → `/dev/ptmx`): a terminal, whatever it is called.
    #[serde(default)]
    pub pty_master: bool,
    /// Whether it holds one could not be read (its `/proc/PID/fd`, or a
    /// descendant's, is unreadable): judged as a terminal, fail closed.
    #[serde(default)]
    pub pty_unknown: bool,
    /// The toolkit the app reports (`Chromium`, `GTK`, `Qt`), when known: chosen by
    /// the app, so it only ever adds a refusal (a web engine's developer tools).
    #[serde(default)]
    pub toolkit: Option<String>,
}

/// Why a window is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Refusal {
    pub code: ErrorCode,
    /// One sentence a user understands, naming the rule.
    pub reason: String,
}

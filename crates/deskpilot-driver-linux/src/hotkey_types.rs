//! What the stop hotkey's grab answers, on every OS (`hotkey`).

/// The chord deskpilot grabs unless the config names another one: Ctrl+Shift+Escape
/// (the specification's default on Linux and Windows).
pub const DEFAULT_STOP_HOTKEY: &str = "ctrl+shift+Escape";

/// Why a hotkey could not be grabbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HotkeyError {
    /// The chord is not one modifier set plus one key (`message` says why).
    Invalid(String),
    /// No X display to grab on (a Wayland-only session, or no `DISPLAY`).
    NoDisplay(String),
    /// Another X client already grabs this chord (`BadAccess`).
    Taken(String),
    /// The display refused or dropped the connection.
    Failed(String),
}

impl std::fmt::Display for HotkeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HotkeyError::Invalid(m)
            | HotkeyError::NoDisplay(m)
            | HotkeyError::Taken(m)
            | HotkeyError::Failed(m) => f.write_str(m),
        }
    }
}

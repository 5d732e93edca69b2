//! The agent on screen (docs/ARCHITECTURE.md §7.19): what a long-lived host shows
//! the person at the desktop while it holds a grant.
//!
//! The host tells a [`Presence`] what it does; the platform draws it (X11:
//! `deskpilot_driver_linux::presence`). The host follows its own measurements, never
//! the other way round: the frame goes around the bound window's bounds as the last
//! enumeration measured them, the cursor glides to the element (or point) an action
//! is about to reach once every check passed, and everything is cleared with the
//! grant. Drawing is fire-and-forget: a [`Presence`] never blocks or fails an action.
//!
//! Teach mode uses the same surface: a bubble that points at the element of the next
//! step and waits for the person's Next or Exit.

use std::sync::Arc;
use std::sync::mpsc::Receiver;

use deskpilot_core::Bounds;

/// The answer to a teach bubble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeachAnswer {
    /// The person pressed Next: the step's action runs.
    Next,
    /// The person pressed Exit: teaching ends.
    Exit,
    /// The bubble went away without an answer (a stop, the display closed).
    Closed,
}

/// What the host shows on screen. Every method returns at once; bounds and points
/// are device (X root-window) pixels.
pub trait Presence: Send + Sync {
    /// A thin frame just outside `bounds` (the bound window), or none.
    fn frame(&self, bounds: Option<Bounds>);
    /// The indicator's status line (it carries a Stop button), or none.
    fn indicator(&self, text: Option<String>);
    /// The drawn cursor glides to (`x`, `y`); the real pointer never moves.
    fn aim(&self, x: i32, y: i32);
    /// A brief press where the drawn cursor is.
    fn press(&self);
    /// Hides everything: the grant ended.
    fn clear(&self);
    /// Shows a teach bubble beside `target` with `text` and Next / Exit; the
    /// receiver gets the person's answer.
    fn teach(&self, target: Bounds, text: &str) -> Receiver<TeachAnswer>;
    /// Hides the teach bubble; a pending one answers [`TeachAnswer::Closed`].
    fn end_teach(&self);
    /// When the grant shown idles out if no action comes first (Unix ms): a host
    /// learns of it only at its next call, so the presence hides itself then.
    fn expires_at(&self, at_ms: u64) {
        let _ = at_ms;
    }
}

/// A presence shared by a host and whoever else must clear it (the stop hotkey).
pub type SharedPresence = Arc<dyn Presence>;

/// The indicator's status line for a grant on `app` with `actions_left`, in
/// capture mode `capture`, on `device` when it is not this machine.
pub fn indicator_text(
    app: Option<&str>,
    actions_left: u32,
    capture: &str,
    device: Option<&str>,
) -> String {
    // The budget, the capture mode and the device first: an app's name (which
    // its author chose) is cut, never what deskpilot says.
    let app = app
        .map(|a| {
            let a = deskpilot_core::sanitize::one_line(a);
            if a.chars().count() > APP_CHARS {
                format!("{}...", a.chars().take(APP_CHARS - 3).collect::<String>())
            } else {
                a
            }
        })
        .unwrap_or_else(|| "no window yet".into());
    let mut s = format!("deskpilot · {actions_left} actions left · {capture}");
    if let Some(d) = device {
        s.push_str(&format!(" · {d}"));
    }
    s.push_str(&format!(" · {app}"));
    s
}

/// The most characters of an app's name the indicator shows.
pub const APP_CHARS: usize = 24;

/// The centre of `b`.
pub fn centre(b: &Bounds) -> (i32, i32) {
    (b.x + b.width / 2, b.y + b.height / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_indicator_names_app_budget_capture_and_device() {
        assert_eq!(
            indicator_text(Some("mousepad"), 9, "capture tree", None),
            "deskpilot · 9 actions left · capture tree · mousepad"
        );
        assert_eq!(
            indicator_text(None, 200, "capture tree + pixels", Some("ssh:lab")),
            "deskpilot · 200 actions left · capture tree + pixels · ssh:lab · no window yet"
        );
        // A long name is cut; what deskpilot says is not.
        let long = "a".repeat(60);
        let t = indicator_text(Some(&long), 3, "capture tree", None);
        let head = "deskpilot · 3 actions left · capture tree · ";
        assert!(t.starts_with(head), "{t}");
        assert_eq!(t.chars().count(), head.chars().count() + APP_CHARS, "{t}");
        // A window's hostile name cannot spread over lines.
        assert!(!indicator_text(Some("a\nb"), 1, "x", None).contains('\n'));
    }

    #[test]
    fn the_centre_is_inside() {
        assert_eq!(centre(&Bounds::new(10, 20, 100, 50)), (60, 45));
    }
}

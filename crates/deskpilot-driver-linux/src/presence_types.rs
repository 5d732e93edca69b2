//! What the presence overlay (docs/ARCHITECTURE.md §7.19) looks like and answers,
//! shared by the X11 implementation (`linux::presence`) and the stand-in of other
//! platforms: sizes, the teach answer, the window description, and where the buttons
//! are (pure).

use deskpilot_core::Bounds;

/// The `WM_CLASS` class of every presence window (its instance names the kind:
/// `deskpilot-cursor`, `deskpilot-frame`, `deskpilot-indicator`, `deskpilot-teach`).
pub const OVERLAY_CLASS: &str = "DeskpilotOverlay";

/// Thickness of the frame drawn just outside the bound window's bounds, pixels.
pub const FRAME_WIDTH: i32 = 3;

/// How long the drawn cursor glides from where it was to an aimed point, ms.
pub const GLIDE_MS: u64 = 150;

/// How long a press flashes the cursor's colour, ms.
pub const PRESS_FLASH_MS: u64 = 150;

/// The cursor hides this long after the last aim (once it arrived) or press, ms.
pub const CURSOR_HIDE_MS: u64 = 1_500;

/// The indicator's Stop button: its width, pixels (its height is the indicator's
/// less [`BUTTON_INSET`] above and below).
pub const STOP_BUTTON_WIDTH: i32 = 48;

/// Space between the indicator's edges and its Stop button, pixels.
pub const BUTTON_INSET: i32 = 3;

/// The widest the indicator gets, pixels; longer text is cut with `...`.
pub const INDICATOR_MAX_WIDTH: i32 = 480;

/// Distance of the indicator from the screen's top and right edges, pixels.
pub const INDICATOR_MARGIN: i32 = 8;

/// The teach bubble's Next and Exit buttons: width and height, pixels.
pub const TEACH_BUTTON_WIDTH: i32 = 56;
pub const TEACH_BUTTON_HEIGHT: i32 = 22;

/// Inner padding of the teach bubble, pixels (also the space between its two
/// buttons is [`TEACH_BUTTON_GAP`]).
pub const TEACH_PAD: i32 = 10;
pub const TEACH_BUTTON_GAP: i32 = 8;

/// The bubble's text is wrapped to this many columns, over at most
/// [`TEACH_MAX_LINES`] lines (the last ends in `...` when more would follow).
pub const TEACH_COLUMNS: usize = 48;
pub const TEACH_MAX_LINES: usize = 6;

/// What a teach bubble was answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeachAnswer {
    /// The person clicked Next.
    Next,
    /// The person clicked Exit.
    Exit,
    /// The bubble went away unanswered: `Presence::end_teach`, `Presence::clear`,
    /// another teach, the presence dropped, or the display gone.
    Closed,
}

/// One presence window as the X server has it (any process's), from
/// `overlay_windows`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayWindow {
    /// The `WM_CLASS` instance: `deskpilot-cursor`, `deskpilot-frame`,
    /// `deskpilot-indicator` or `deskpilot-teach`.
    pub name: String,
    /// The X window id.
    pub xid: u32,
    /// Its area (border excluded), root-window pixels.
    pub bounds: Bounds,
    /// Whether it is mapped (viewable) now.
    pub mapped: bool,
    /// Its input shape (XShape `SK::INPUT`), pixels relative to the window's
    /// origin: empty for a click-through window, the whole window for an unshaped
    /// one.
    pub input_rects: Vec<Bounds>,
    /// Whether it is override-redirect (not managed by a window manager).
    pub override_redirect: bool,
}

/// The root point at the centre of the Stop button of an indicator whose window has
/// `indicator_bounds` (root pixels, as `overlay_windows` gives them).
pub fn stop_button_at(indicator_bounds: Bounds) -> (i32, i32) {
    let r = stop_rect(indicator_bounds.width, indicator_bounds.height);
    (
        indicator_bounds.x + r.x + r.width / 2,
        indicator_bounds.y + r.y + r.height / 2,
    )
}

/// The root points at the centres of the Next and Exit buttons of a teach bubble
/// whose window has `bubble_bounds` (root pixels): `(next, exit)`.
pub fn teach_buttons_at(bubble_bounds: Bounds) -> ((i32, i32), (i32, i32)) {
    let (next, exit) = teach_rects(bubble_bounds.width, bubble_bounds.height);
    let centre = |r: Bounds| {
        (
            bubble_bounds.x + r.x + r.width / 2,
            bubble_bounds.y + r.y + r.height / 2,
        )
    };
    (centre(next), centre(exit))
}

/// The Stop button inside an indicator of `width`×`height`, window pixels.
pub(crate) fn stop_rect(width: i32, height: i32) -> Bounds {
    Bounds::new(
        width - BUTTON_INSET - STOP_BUTTON_WIDTH,
        BUTTON_INSET,
        STOP_BUTTON_WIDTH,
        (height - 2 * BUTTON_INSET).max(1),
    )
}

/// The Next and Exit buttons inside a bubble of `width`×`height`, window pixels:
/// bottom right, Exit rightmost.
pub(crate) fn teach_rects(width: i32, height: i32) -> (Bounds, Bounds) {
    let y = height - TEACH_PAD - TEACH_BUTTON_HEIGHT;
    let exit_x = width - TEACH_PAD - TEACH_BUTTON_WIDTH;
    let next_x = exit_x - TEACH_BUTTON_GAP - TEACH_BUTTON_WIDTH;
    (
        Bounds::new(next_x, y, TEACH_BUTTON_WIDTH, TEACH_BUTTON_HEIGHT),
        Bounds::new(exit_x, y, TEACH_BUTTON_WIDTH, TEACH_BUTTON_HEIGHT),
    )
}

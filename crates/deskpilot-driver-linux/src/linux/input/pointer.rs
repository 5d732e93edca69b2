//! Pointer gestures through XTest: move, click, double click, right click, drag and
//! wheel scroll, in root-window (screen) pixels.
//!
//! Owns the event sequence of each gesture. It moves the real pointer (the caller
//! says so in its result) and never leaves a button pressed. Coordinates outside the
//! screen are refused, never clamped (docs/ARCHITECTURE.md §8).

use std::time::Duration;

use deskpilot_protocol::types::{PointerAction, PointerParams};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::XInput;
use super::xtest::Held;
use deskpilot_protocol::Result;

/// Wheel notches per scroll gesture (button 4 up, 5 down). GTK and Qt scroll about
/// three lines per notch, so one gesture moves a list by roughly a screenful of a
/// small widget, comparable to one flick of a real wheel.
pub const SCROLL_NOTCHES: u32 = 3;

/// Intermediate motions of a drag. Toolkits start a drag only after the pointer
/// crosses a threshold (GTK: 8 px) with the button down, and track drop targets from
/// motion events, so a drag is sent as several moves rather than one jump.
const DRAG_STEPS: i32 = 8;

/// Pause after each drag step, ms, so the target toolkit processes each motion (drag
/// start, drop-target enter) before the next; 8 steps keep a drag under ~0.2 s.
const DRAG_STEP_PAUSE_MS: u64 = 15;

const BUTTON_LEFT: u8 = 1;
const BUTTON_RIGHT: u8 = 3;
const BUTTON_WHEEL_UP: u8 = 4;
const BUTTON_WHEEL_DOWN: u8 = 5;

impl XInput {
    /// Performs one pointer gesture at `(p.x, p.y)` (and `p.to` for a drag), screen
    /// pixels with the origin at the top-left of the X screen. `p.window` is not used
    /// here: the caller has already checked the coordinates against that window.
    ///
    /// Returns the number of XTest events sent (motions, presses, releases).
    ///
    /// Errors: `InvalidArgument` for a point outside the screen or a drag without
    /// `to`; `InputUnavailable`/`Internal` on connection or X errors.
    pub fn pointer(&self, p: &PointerParams) -> Result<u64> {
        let (x, y) = self.on_screen(p.x, p.y)?;
        let to = match (p.action, p.to) {
            (PointerAction::Drag, Some((tx, ty))) => Some(self.on_screen(tx, ty)?),
            (PointerAction::Drag, None) => {
                return Err(ComputerError::new(
                    ErrorCode::InvalidArgument,
                    "a drag needs a destination: give `to` as [x, y] in screen pixels",
                ));
            }
            _ => None,
        };
        let _serial = self.lock();
        let mut held = Held::new(&self.conn, self.root);
        held.motion(x, y)?;
        match p.action {
            PointerAction::Move => {}
            PointerAction::Click => click(&mut held, BUTTON_LEFT)?,
            PointerAction::DoubleClick => {
                click(&mut held, BUTTON_LEFT)?;
                click(&mut held, BUTTON_LEFT)?;
            }
            PointerAction::RightClick => click(&mut held, BUTTON_RIGHT)?,
            PointerAction::ScrollUp | PointerAction::ScrollDown => {
                let button = if p.action == PointerAction::ScrollUp {
                    BUTTON_WHEEL_UP
                } else {
                    BUTTON_WHEEL_DOWN
                };
                for _ in 0..SCROLL_NOTCHES {
                    click(&mut held, button)?;
                }
            }
            PointerAction::Drag => {
                let (tx, ty) = to.unwrap_or((x, y));
                self.sync()?;
                held.button_down(BUTTON_LEFT)?;
                self.sync()?;
                std::thread::sleep(Duration::from_millis(DRAG_STEP_PAUSE_MS));
                for step in 1..=DRAG_STEPS {
                    let (sx, sy) = lerp((x, y), (tx, ty), step, DRAG_STEPS);
                    held.motion(sx, sy)?;
                    self.sync()?;
                    std::thread::sleep(Duration::from_millis(DRAG_STEP_PAUSE_MS));
                }
                held.release_all()?;
            }
        }
        self.sync()?;
        Ok(held.events())
    }

    /// Checks that `(x, y)` lies on the screen and narrows it to the wire type.
    fn on_screen(&self, x: i32, y: i32) -> Result<(i16, i16), ComputerError> {
        let (w, h) = (i32::from(self.screen_width), i32::from(self.screen_height));
        if !(0..w).contains(&x) || !(0..h).contains(&y) {
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                format!("point ({x}, {y}) is outside the {w}x{h} screen; it is not clamped"),
            )
            .with_detail(serde_json::json!({ "x": x, "y": y, "width": w, "height": h })));
        }
        // Screen sizes are u16 and the point is inside, so both fit in i16 unless the
        // screen is wider than 32767 px, which X coordinates cannot address anyway.
        let narrow = |v: i32| {
            i16::try_from(v).map_err(|_| {
                ComputerError::new(
                    ErrorCode::InvalidArgument,
                    format!("coordinate {v} exceeds the X protocol's 16-bit range"),
                )
            })
        };
        Ok((narrow(x)?, narrow(y)?))
    }
}

fn click(held: &mut Held<'_>, button: u8) -> Result<()> {
    held.button_down(button)?;
    held.release_all()
}

/// Point `step` of `steps` on the segment from `a` to `b` (step `steps` is `b`).
fn lerp(a: (i16, i16), b: (i16, i16), step: i32, steps: i32) -> (i16, i16) {
    let along = |p: i16, q: i16| {
        let (p, q) = (i32::from(p), i32::from(q));
        let v = p + (q - p) * step / steps;
        i16::try_from(v).unwrap_or(if v < 0 { i16::MIN } else { i16::MAX })
    };
    (along(a.0, b.0), along(a.1, b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lerp_ends_at_destination() {
        assert_eq!(lerp((0, 0), (100, 50), 0, 8), (0, 0));
        assert_eq!(lerp((0, 0), (100, 50), 4, 8), (50, 25));
        assert_eq!(lerp((0, 0), (100, 50), 8, 8), (100, 50));
        assert_eq!(lerp((100, 50), (0, 0), 8, 8), (0, 0));
        assert_eq!(lerp((10, 10), (10, 10), 3, 8), (10, 10));
    }
}

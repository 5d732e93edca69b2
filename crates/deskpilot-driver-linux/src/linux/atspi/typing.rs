//! Typed text that is verified: paced by what the application has taken, and read
//! back from the element it went into (docs/ARCHITECTURE.md §6 "Fallback input").
//!
//! Owns finding the focused text element of a window ([`focused_text`]), the pace
//! that holds a borrowed keycode until the application has taken the characters
//! typed with it ([`Watch::wait_for`]), and the read-back ([`Watch::verify`]). It
//! sends no input itself: the keyboard module types, this module watches.
//!
//! Why: an application reads its key events later than they are sent, and
//! translates each with the keymap it holds when it reads it. A spare keycode that
//! gets the next character while earlier events for it are still queued is read as
//! the new character, and a call that returns at once says `ok` for text that is
//! still arriving (seen with Chromium under load: 1,265 of 2,032 characters there
//! when the call returned). Watching the element's character count solves both.

use std::time::{Duration, Instant};

use deskpilot_protocol::{ComputerError, ErrorCode};

use super::connection::{Bus, iface, obj_from_wire};
use super::handle::ObjRef;
use super::info::Ifaces;
use super::state_map::RawStates;

/// Longest wait for the application to take one more character before typing stops:
/// 5 s (Chromium under load took up to a second per step of 48 here).
pub const STALL: Duration = Duration::from_secs(5);
/// Interval between character-count reads while waiting: 15 ms.
const POLL: Duration = Duration::from_millis(15);
/// Characters shown around the first difference in a failed read-back: 24.
const CONTEXT: usize = 24;

/// The `org.a11y.atspi.Collection` interface.
const COLLECTION: &str = "org.a11y.atspi.Collection";

/// AT-SPI `FOCUSED` state bit (`AtspiStateType` 12) in the first word of a set.
const FOCUSED_BIT: i32 = 1 << 12;

/// The focused element of `window` that exposes `Text`: `Collection.GetMatches`
/// for the `FOCUSED` state, the last (deepest) match with `Text`. `None` when the
/// window has no such element or no `Collection`.
pub async fn focused_text(bus: &Bus, window: &ObjRef) -> Option<ObjRef> {
    type Rule = (
        Vec<i32>,
        i32,
        std::collections::HashMap<String, String>,
        i32,
        Vec<i32>,
        i32,
        Vec<String>,
        i32,
        bool,
    );
    // States: all of {FOCUSED}; attributes, roles, interfaces: all of none (match
    // type ALL = 1 over an empty set is no condition; INVALID matches nothing in
    // some implementations).
    let rule: Rule = (
        vec![FOCUSED_BIT, 0],
        1,
        Default::default(),
        1,
        Vec::new(),
        1,
        Vec::new(),
        1,
        false,
    );
    // Sort order canonical (1), no count limit (0), traverse the subtree.
    let found: Vec<(String, zbus::zvariant::OwnedObjectPath)> = bus
        .call(window, COLLECTION, "GetMatches", &(rule, 1u32, 0i32, true))
        .await
        .ok()?;
    for wire in found.into_iter().rev() {
        let obj = obj_from_wire(wire);
        if obj.is_null() {
            continue;
        }
        let ifaces: Vec<String> = bus
            .call(&obj, iface::ACCESSIBLE, "GetInterfaces", &())
            .await
            .ok()?;
        if Ifaces::from_names(&ifaces).has(Ifaces::TEXT) {
            return Some(obj);
        }
    }
    None
}

/// How long the character count may stand still before the focused element is
/// looked up again: 500 ms. Chromium may replace a text field's accessible object
/// while text arrives, leaving the old one reporting its old count.
const RELOOK: Duration = Duration::from_millis(500);

/// One text element watched while text is typed into it.
pub struct Watch {
    /// The window, to look the focused element up again.
    window: ObjRef,
    obj: std::sync::Mutex<ObjRef>,
    /// Characters before typing.
    base: i32,
    /// Where the typed text starts (the caret before typing), in characters.
    start: i32,
}

impl Watch {
    /// Starts watching `obj`: its character count and caret now. `None` when they
    /// cannot be read (then nothing is verified, and the result says so).
    pub async fn start(bus: &Bus, window: ObjRef, obj: ObjRef) -> Option<Watch> {
        let base: i32 = bus.prop(&obj, iface::TEXT, "CharacterCount").await.ok()?;
        let caret: i32 = bus.prop(&obj, iface::TEXT, "CaretOffset").await.ok()?;
        let start = if (0..=base).contains(&caret) {
            caret
        } else {
            base
        };
        Some(Watch {
            window,
            obj: std::sync::Mutex::new(obj),
            base: base.max(0),
            start,
        })
    }

    fn obj(&self) -> ObjRef {
        self.obj.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until the element holds at least `typed` more characters than before,
    /// while it keeps taking them: each wait ends [`STALL`] after the count last
    /// grew.
    ///
    /// Errors: `COMPUTER_OUTCOME_UNKNOWN` when the count stops growing short of it
    /// (saying how many arrived), `COMPUTER_NOT_RESPONDING` when the element stops
    /// answering.
    pub async fn wait_for(&self, bus: &Bus, typed: usize) -> Result<(), ComputerError> {
        let want = self
            .base
            .saturating_add(i32::try_from(typed).unwrap_or(i32::MAX));
        let mut last = -1;
        let mut grew = Instant::now();
        let mut relooked = false;
        loop {
            let now: i32 = match bus.prop(&self.obj(), iface::TEXT, "CharacterCount").await {
                Ok(n) => n,
                // The object went away: the next look-up finds its successor.
                Err(e) if e.is_gone() => -1,
                Err(e) => return Err(e.to_driver()),
            };
            if now >= want {
                return Ok(());
            }
            if now != last {
                last = now;
                grew = Instant::now();
                relooked = false;
            } else if !relooked && grew.elapsed() >= RELOOK {
                relooked = true;
                if let Some(o) = focused_text(bus, &self.window).await
                    && o != self.obj()
                {
                    *self.obj.lock().unwrap_or_else(|e| e.into_inner()) = o;
                    last = -1;
                    continue;
                }
            } else if grew.elapsed() >= STALL {
                return Err(ComputerError::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "the application took {} of the {typed} characters typed so far and then nothing for {} s, so typing stopped there; observe before typing the rest",
                        (now - self.base).max(0),
                        STALL.as_secs()
                    ),
                )
                .with_detail(serde_json::json!({ "typed": typed, "arrived": (now - self.base).max(0) })));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Reads back what was typed: the element's text from where the caret was,
    /// as long as `expected`, must equal it. Returns the characters verified.
    ///
    /// Errors: `COMPUTER_OUTCOME_UNKNOWN` naming the first character that did not
    /// land and what the element holds there.
    pub async fn verify(&self, bus: &Bus, expected: &str) -> Result<u64, ComputerError> {
        let want: Vec<char> = expected.replace("\r\n", "\n").chars().collect();
        let n = i32::try_from(want.len()).unwrap_or(i32::MAX);
        let got: String = bus
            .call(
                &self.obj(),
                iface::TEXT,
                "GetText",
                &(self.start, self.start.saturating_add(n)),
            )
            .await
            .map_err(|e| e.to_driver())?;
        let got: Vec<char> = got.chars().collect();
        match want.iter().zip(&got).position(|(a, b)| a != b) {
            None if got.len() >= want.len() => Ok(want.len() as u64),
            at => {
                let i = at.unwrap_or(got.len());
                let around = |v: &[char]| -> String {
                    v[i.saturating_sub(CONTEXT / 2)..v.len().min(i + CONTEXT / 2)]
                        .iter()
                        .collect()
                };
                Err(ComputerError::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "typed text did not land exactly: character {} of {} ({:?}) is missing or wrong; the field holds {:?} there, where {:?} was typed",
                        i + 1,
                        want.len(),
                        want[i],
                        around(&got),
                        around(&want)
                    ),
                )
                .with_detail(serde_json::json!({
                    "verified_chars": i,
                    "expected_chars": want.len(),
                })))
            }
        }
    }

    /// True when the element still claims focus.
    pub async fn focused(&self, bus: &Bus) -> bool {
        bus.call::<_, Vec<u32>>(&self.obj(), iface::ACCESSIBLE, "GetState", &())
            .await
            .is_ok_and(|s| RawStates::from_words(&s).has(atspi::State::Focused))
    }
}

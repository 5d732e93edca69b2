//! Keyboard input: chords and literal text, planned against the live keyboard map and
//! sent through XTest.
//!
//! Owns the order of operations of one keyboard call: read the map, plan (refusing
//! what cannot be typed before any event), borrow spare keycodes, press each group and
//! release it, sync, restore. It never sends to a particular window: events go to the
//! X input focus, which the caller verifies first (`focused_toplevel`).

use std::time::Duration;

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, KeyButMask};

use super::chord::parse_chords;
use super::keymap::Keymap;
use super::plan::{Plan, plan_chords, plan_text};
use super::remap::{BORROW_HOLD_MS, Borrowed};
use super::xtest::Held;
use super::{X11Context, XInput};
use deskpilot_protocol::Result;

/// Characters paced typing sends before it waits for the application to take them:
/// 48. Measured with Chromium 156 on 2 busy cores: unpaced, 2,000 characters queued
/// up and the page's accessibility text fell seconds behind; in steps of 48 it
/// keeps up, and the wait per step is a few tens of ms.
pub const PACE_CHUNK: usize = 48;

impl XInput {
    /// Sends space-separated chords (`"ctrl+s"`, `"shift+Tab"`, `"Return"`,
    /// `"ctrl+shift+Left alt+F4"`, `"a"`): each chord's keys are pressed in order and
    /// released in reverse. Names are X keysym names or aliases (see
    /// [`keysym_from_name`](super::keysym_from_name)); a key that sits at a Shift or
    /// AltGr level gets that modifier added; a key the map lacks is typed through a
    /// borrowed spare keycode.
    ///
    /// Returns the number of key events sent (a press and a release per key).
    ///
    /// Errors: `InvalidArgument` for an unknown name or malformed chord (nothing is
    /// sent); `InputUnavailable` for a modifier the map lacks, a missing key with no
    /// spare keycode, or a lost connection.
    pub fn send_chords(&self, chords: &str) -> Result<u64> {
        let chords = parse_chords(chords)?;
        let _serial = self.lock();
        let keymap = self.keymap()?;
        let plan = plan_chords(&keymap, &chords)?;
        self.run(&keymap, &plan)
    }

    /// Types `text` literally into the focused window. Characters on the current map
    /// are typed with their keycode (plus Shift/AltGr as their level needs); others
    /// (CJK, accents, emoji) through spare keycodes borrowed for the call and restored
    /// afterwards, also on error. `\n`/`\r\n` → Return, `\t` → Tab. Letters come out
    /// in the case written even while Caps Lock is on (its state is left as found).
    ///
    /// Returns the number of key events sent; `0` for empty text.
    ///
    /// Errors: `InvalidArgument` for other control characters or more than
    /// [`MAX_TEXT_CHARS`](super::MAX_TEXT_CHARS) characters; `InputUnavailable` when a
    /// character is missing and no spare keycode exists, or the connection is lost.
    /// Nothing is typed when planning fails.
    pub fn type_text(&self, text: &str) -> Result<u64> {
        self.type_text_paced(text, None)
    }

    /// [`XInput::type_text`], paced by the application: before a borrowed keycode is
    /// given another character, and once at the end, `pace(n)` is called with the
    /// number of characters typed so far and returns once the application has taken
    /// them (the caller watches the focused element's text), or fails, which stops
    /// the typing there (borrowed keycodes are still restored). Without `pace`, a
    /// fixed hold ([`BORROW_HOLD_MS`]) stands in for it.
    ///
    /// Errors: [`XInput::type_text`]'s, and whatever `pace` returns.
    pub fn type_text_paced(
        &self,
        text: &str,
        pace: Option<&mut dyn FnMut(usize) -> Result<()>>,
    ) -> Result<u64> {
        if text.is_empty() {
            return Ok(0);
        }
        let _serial = self.lock();
        let keymap = self.keymap()?;
        let plan = plan_text(&keymap, text, self.caps_lock_on()?)?;
        self.run_paced(&keymap, &plan, pace)
    }

    /// True when the server's Lock modifier (Caps Lock) is on.
    fn caps_lock_on(&self) -> Result<bool> {
        let mask = self
            .conn
            .query_pointer(self.root)
            .x11("QueryPointer")?
            .reply()
            .x11("QueryPointer")?
            .mask;
        Ok(mask.contains(KeyButMask::LOCK))
    }

    /// The server's current core keyboard map and modifier keycodes.
    pub(crate) fn keymap(&self) -> Result<Keymap> {
        let setup = self.conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let map = self
            .conn
            .get_keyboard_mapping(min, max - min + 1)
            .x11("GetKeyboardMapping")?
            .reply()
            .x11("GetKeyboardMapping")?;
        let mods = self
            .conn
            .get_modifier_mapping()
            .x11("GetModifierMapping")?
            .reply()
            .x11("GetModifierMapping")?;
        Ok(Keymap::new(
            min,
            map.keysyms_per_keycode,
            map.keysyms,
            mods.keycodes,
        ))
    }

    fn run(&self, keymap: &Keymap, plan: &Plan) -> Result<u64> {
        self.run_paced(keymap, plan, None)
    }

    fn run_paced(
        &self,
        keymap: &Keymap,
        plan: &Plan,
        mut pace: Option<&mut dyn FnMut(usize) -> Result<()>>,
    ) -> Result<u64> {
        let pace_given = pace.is_some();
        // The previous batch's borrowed keys must be read before their keycodes
        // change meaning: the application says so, or a fixed hold stands in.
        let mut wait_read = |typed: usize| -> Result<()> {
            match pace.as_mut() {
                Some(p) => p(typed),
                None => {
                    std::thread::sleep(Duration::from_millis(BORROW_HOLD_MS));
                    Ok(())
                }
            }
        };
        let mut typed = 0usize;
        let paced = pace_given;
        let already_down = self.keys_down()?;
        if !already_down.is_empty() {
            tracing::warn!(
                keycodes = ?already_down,
                "keys are already held on the X server; their modifiers combine with synthetic input"
            );
        }
        let mut borrowed = Borrowed::new(&self.conn, keymap, &self.display);
        let mut events = 0;
        for batch in &plan.batches {
            if !batch.borrow.is_empty() {
                if borrowed.is_active() {
                    wait_read(typed)?;
                }
                borrowed.install(keymap, &batch.borrow)?;
            }
            for group in &batch.groups {
                let mut held = Held::new(&self.conn, self.root);
                for &keycode in &group.keycodes {
                    held.key_down(keycode)?;
                }
                held.release_all()?;
                events += held.events();
                typed += 1;
                self.sync()?;
                // Paced typing keeps at most PACE_CHUNK characters ahead of what the
                // application has taken: a busy application (Chromium under load)
                // then never holds a long queue of events for keycodes about to
                // change meaning, and its accessibility updates keep up.
                if paced && typed.is_multiple_of(PACE_CHUNK) {
                    wait_read(typed)?;
                }
            }
        }
        if borrowed.is_active() {
            let read = wait_read(typed);
            borrowed.restore()?;
            read?;
        }
        debug_assert_eq!(events, plan.event_count());
        tracing::debug!(
            events,
            batches = plan.batches.len(),
            borrowed_keycodes = plan.borrows(),
            "keyboard input sent"
        );
        Ok(events)
    }
}

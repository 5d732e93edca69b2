//! Keyboard input: chords and literal text, planned against the live keyboard map and
//! sent through XTest.
//!
//! Owns the order of operations of one keyboard call: read the map, plan (refusing
//! what cannot be typed before any event), borrow spare keycodes, press each group and
//! release it, sync, restore. It never sends to a particular window: events go to the
//! X input focus, which the caller verifies first (`focused_toplevel`).

use std::time::Duration;

use deskpilot_protocol::ComputerError;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, KeyButMask};

use super::chord::parse_chords;
use super::keymap::Keymap;
use super::plan::{Plan, plan_chords, plan_text};
use super::remap::{BORROW_HOLD_MS, Borrowed};
use super::xtest::Held;
use super::{X11Context, XInput};

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
    pub fn send_chords(&self, chords: &str) -> Result<u64, ComputerError> {
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
    pub fn type_text(&self, text: &str) -> Result<u64, ComputerError> {
        if text.is_empty() {
            return Ok(0);
        }
        let _serial = self.lock();
        let keymap = self.keymap()?;
        let plan = plan_text(&keymap, text, self.caps_lock_on()?)?;
        self.run(&keymap, &plan)
    }

    /// True when the server's Lock modifier (Caps Lock) is on.
    fn caps_lock_on(&self) -> Result<bool, ComputerError> {
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
    pub(crate) fn keymap(&self) -> Result<Keymap, ComputerError> {
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

    fn run(&self, keymap: &Keymap, plan: &Plan) -> Result<u64, ComputerError> {
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
                    // The previous batch's borrowed keys must be read before their
                    // keycodes change meaning.
                    std::thread::sleep(Duration::from_millis(BORROW_HOLD_MS));
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
                self.sync()?;
            }
        }
        if borrowed.is_active() {
            std::thread::sleep(Duration::from_millis(BORROW_HOLD_MS));
            borrowed.restore()?;
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

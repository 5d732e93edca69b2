//! XTest `FakeInput` requests and the guard that owns every press.
//!
//! Owns the only code that sends key, button and motion events. It must never return
//! (or unwind) with a key or button it pressed still down: [`Held`] records each press
//! before sending it and releases whatever is still down, in reverse order, on drop.

use x11rb::protocol::xproto::{
    BUTTON_PRESS_EVENT, BUTTON_RELEASE_EVENT, KEY_PRESS_EVENT, KEY_RELEASE_EVENT,
    MOTION_NOTIFY_EVENT, Window,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use super::{X11Context, sync_conn};
use deskpilot_protocol::Result;

/// A key or pointer button this guard pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Down {
    Key(u8),
    Button(u8),
}

/// Presses made through XTest that are released when the guard is dropped.
pub(crate) struct Held<'c> {
    conn: &'c RustConnection,
    root: Window,
    down: Vec<Down>,
    events: u64,
}

impl<'c> Held<'c> {
    pub(crate) fn new(conn: &'c RustConnection, root: Window) -> Self {
        Held {
            conn,
            root,
            down: Vec::new(),
            events: 0,
        }
    }

    /// Events sent so far (presses, releases and motions).
    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// Presses `keycode`. Recorded before sending, so a failed send is still released.
    pub(crate) fn key_down(&mut self, keycode: u8) -> Result<()> {
        self.down.push(Down::Key(keycode));
        self.fake(KEY_PRESS_EVENT, keycode, 0, 0)
    }

    /// Presses pointer button `button` (1 left, 2 middle, 3 right, 4/5 wheel).
    pub(crate) fn button_down(&mut self, button: u8) -> Result<()> {
        self.down.push(Down::Button(button));
        self.fake(BUTTON_PRESS_EVENT, button, 0, 0)
    }

    /// Moves the pointer to `(x, y)` in root-window pixels.
    pub(crate) fn motion(&mut self, x: i16, y: i16) -> Result<()> {
        // detail 0 = absolute coordinates relative to `root`.
        self.fake(MOTION_NOTIFY_EVENT, 0, x, y)
    }

    /// Releases everything still down, last pressed first.
    pub(crate) fn release_all(&mut self) -> Result<()> {
        while let Some(down) = self.down.pop() {
            self.release(down)?;
        }
        Ok(())
    }

    fn release(&mut self, down: Down) -> Result<()> {
        match down {
            Down::Key(k) => self.fake(KEY_RELEASE_EVENT, k, 0, 0),
            Down::Button(b) => self.fake(BUTTON_RELEASE_EVENT, b, 0, 0),
        }
    }

    fn fake(&mut self, kind: u8, detail: u8, x: i16, y: i16) -> Result<()> {
        // time 0 = CurrentTime (no delay); deviceid 0 = the core devices.
        self.conn
            .xtest_fake_input(kind, detail, 0, self.root, x, y, 0)
            .x11("XTestFakeInput")?;
        self.events += 1;
        Ok(())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.down.is_empty() {
            return;
        }
        tracing::warn!(
            still_down = ?self.down,
            "releasing keys/buttons left down by an interrupted input call"
        );
        while let Some(down) = self.down.pop() {
            if let Err(e) = self.release(down) {
                tracing::error!(error = %e, ?down, "could not release a synthetic press");
            }
        }
        if let Err(e) = sync_conn(self.conn) {
            tracing::error!(error = %e, "could not sync after releasing synthetic presses");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;

    use x11rb::protocol::xproto::ConnectionExt as _;

    use super::super::XInput;
    use super::super::keysym::{XK_CONTROL_L, XK_SHIFT_L};
    use super::super::test_xvfb::Xvfb;
    use super::*;

    #[test]
    fn presses_are_released_on_panic() {
        let xvfb = Xvfb::start();
        let x = XInput::connect(Some(&xvfb.display)).unwrap();
        let keymap = x.keymap().unwrap();
        let ctrl = keymap.modifier_key(XK_CONTROL_L).unwrap();
        let shift = keymap.modifier_key(XK_SHIFT_L).unwrap();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let mut held = Held::new(&x.conn, x.root);
            held.key_down(ctrl).unwrap();
            held.key_down(shift).unwrap();
            held.button_down(1).unwrap();
            sync_conn(&x.conn).unwrap();
            let mut down = vec![ctrl, shift];
            down.sort_unstable();
            assert_eq!(x.keys_down().unwrap(), down);
            panic!("interrupted mid-chord");
        }));
        assert!(outcome.is_err());
        assert!(
            x.keys_down().unwrap().is_empty(),
            "keys left down after a panic"
        );
        let mask = u16::from(x.conn.query_pointer(x.root).unwrap().reply().unwrap().mask);
        assert_eq!(
            mask & 0x1f00,
            0,
            "button left down after a panic (mask {mask:#x})"
        );
    }

    #[test]
    fn release_all_counts_events() {
        let xvfb = Xvfb::start();
        let x = XInput::connect(Some(&xvfb.display)).unwrap();
        let keymap = x.keymap().unwrap();
        let ctrl = keymap.modifier_key(XK_CONTROL_L).unwrap();
        let mut held = Held::new(&x.conn, x.root);
        held.motion(10, 10).unwrap();
        held.key_down(ctrl).unwrap();
        held.release_all().unwrap();
        assert_eq!(held.events(), 3);
        drop(held);
        sync_conn(&x.conn).unwrap();
        assert!(x.keys_down().unwrap().is_empty());
    }
}

//! X11 XTest input: the declared fallback channel for keyboard and pointer input
//! (docs/ARCHITECTURE.md §1, §6 "Fallback input").
//!
//! Owns the X connection used for synthetic input, window focus queries and
//! activation, reading a window's pixels, key-name parsing, keyboard-map lookups and the temporary borrowing of
//! spare keycodes for characters the keymap lacks.
//!
//! It must never leave a key, modifier or button pressed (every press is owned by a
//! guard that releases in reverse order on drop, also on error or panic), never leave
//! a borrowed keycode mapped (restored on drop), and never print to stdout. Under a
//! Wayland session without an X display it answers `COMPUTER_INPUT_UNAVAILABLE`.
//!
//! Every method blocks (X round trips, and bounded waits of at most a few hundred ms);
//! call it from a blocking thread (`tokio::task::spawn_blocking`) in async code. Calls
//! on one [`XInput`] are serialized, so input from two callers never interleaves.

mod focus;
mod image;
mod keyboard;
pub(crate) mod keymap;
mod plan;
mod pointer;
mod remap;
#[cfg(test)]
mod test_xvfb;
mod xtest;

use std::sync::{Mutex, MutexGuard};

use deskpilot_protocol::{ComputerError, ErrorCode};
use x11rb::connection::{Connection, RequestConnection};
use x11rb::errors::{ConnectionError, ReplyError};
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{ConnectionExt as _, Window};
use x11rb::rust_connection::RustConnection;

use deskpilot_protocol::Result;
use deskpilot_protocol::keys::{chord, keysym};
pub(crate) use focus::Stacked;
pub use focus::TopLevel;
pub(crate) use image::WindowPixels;
pub use pointer::SCROLL_NOTCHES;

x11rb::atom_manager! {
    /// Atoms interned once per connection.
    pub(crate) Atoms: AtomsCookie {
        _NET_ACTIVE_WINDOW,
        _NET_SUPPORTED,
        _NET_SUPPORTING_WM_CHECK,
        _NET_WM_PID,
        _NET_WM_NAME,
        UTF8_STRING,
        WM_STATE,
        _NET_WM_DESKTOP,
        _NET_CURRENT_DESKTOP,
    }
}

/// A connection to one X display for synthetic input (XTest) and window focus.
///
/// `Send + Sync`; share it behind an `Arc`. Methods serialize on an internal lock.
pub struct XInput {
    conn: RustConnection,
    display: String,
    root: Window,
    screen_width: u16,
    screen_height: u16,
    atoms: Atoms,
    /// The X-Resource extension is present (used for a window's pid when it has no
    /// `_NET_WM_PID`).
    has_res: bool,
    lock: Mutex<()>,
}

impl std::fmt::Debug for XInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XInput")
            .field("display", &self.display)
            .field("root", &self.root)
            .field("screen", &(self.screen_width, self.screen_height))
            .finish_non_exhaustive()
    }
}

impl XInput {
    /// Connects to the X display `display` (like `":91"`; `None` = `$DISPLAY`) and
    /// checks that it has the XTEST extension.
    ///
    /// Errors: `InputUnavailable` when no display is named and `$DISPLAY` is unset (a
    /// Wayland-only session says so: synthetic input needs X11), when the display
    /// cannot be reached, or when it lacks XTEST.
    pub fn connect(display: Option<&str>) -> Result<XInput> {
        let env = |name: &str| std::env::var(name).ok();
        let display = resolve_display(display, env("DISPLAY"), env("WAYLAND_DISPLAY"))?;
        let (conn, screen_num) = RustConnection::connect(Some(&display)).map_err(|e| {
            ComputerError::new(
                ErrorCode::InputUnavailable,
                format!("cannot connect to the X display {display}: {e}"),
            )
            .with_detail(serde_json::json!({ "display": display }))
        })?;
        let ext = conn
            .extension_information(x11rb::protocol::xtest::X11_EXTENSION_NAME)
            .x11("QueryExtension XTEST")?;
        if ext.is_none() {
            return Err(ComputerError::new(
                ErrorCode::InputUnavailable,
                format!(
                    "the X display {display} has no XTEST extension, which synthetic keyboard and pointer input needs"
                ),
            ));
        }
        x11rb::protocol::xtest::get_version(&conn, 2, 2)
            .x11("XTestGetVersion")?
            .reply()
            .x11("XTestGetVersion")?;
        let has_res = conn
            .extension_information(x11rb::protocol::res::X11_EXTENSION_NAME)
            .x11("QueryExtension X-Resource")?
            .is_some();
        let atoms = Atoms::new(&conn)
            .x11("InternAtom")?
            .reply()
            .x11("InternAtom")?;
        let screen = conn.setup().roots.get(screen_num).ok_or_else(|| {
            ComputerError::new(
                ErrorCode::InputUnavailable,
                format!("the X display {display} has no screen {screen_num}"),
            )
        })?;
        let (root, screen_width, screen_height) =
            (screen.root, screen.width_in_pixels, screen.height_in_pixels);
        if std::env::var_os("WAYLAND_DISPLAY").is_some() {
            let x_display = display.as_str();
            tracing::warn!(
                x_display,
                "connected to an X display inside a Wayland session: synthetic input reaches only X11 (XWayland) clients"
            );
        }
        let x = XInput {
            conn,
            display,
            root,
            screen_width,
            screen_height,
            atoms,
            has_res,
            lock: Mutex::new(()),
        };
        if remap::read_record(&x.display).is_some()
            && let Err(e) = x.restore_left_keymap()
        {
            tracing::warn!(error = %e.message, "could not restore a keymap left changed");
        }
        Ok(x)
    }

    /// The display name this connection uses (`":91"`).
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Puts back the keycodes a deskpilot process killed mid-call left borrowed on
    /// this display (`remap::restore_left`); the keycodes restored.
    pub fn restore_left_keymap(&self) -> Result<Vec<u8>> {
        let _g = self.lock();
        let keymap = self.keymap()?;
        remap::restore_left(&self.conn, &keymap, &self.display)
    }

    /// The root window's size in pixels `(width, height)`: the space of every screen
    /// coordinate this type accepts or reports.
    pub fn screen_size(&self) -> (u16, u16) {
        (self.screen_width, self.screen_height)
    }

    /// Keycodes the server currently considers pressed (`QueryKeymap`), ascending.
    /// Empty after every method of this type returns, unless a real keyboard is held.
    pub fn keys_down(&self) -> Result<Vec<u8>> {
        let reply = self
            .conn
            .query_keymap()
            .x11("QueryKeymap")?
            .reply()
            .x11("QueryKeymap")?;
        Ok(pressed_keycodes(&reply.keys))
    }

    /// Serializes input from concurrent callers; a poisoned lock is still usable
    /// because every guard restores the server state on unwind.
    fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Round trip that guarantees the server processed every request sent so far.
    fn sync(&self) -> Result<()> {
        sync_conn(&self.conn)
    }
}

/// Restores, on X display `display`, the keycodes a killed deskpilot call left
/// borrowed (see [`remap::Record`]); connects only when such a record exists. The
/// keycodes restored; empty when there was nothing to do.
///
/// Errors: as [`XInput::connect`], and an X server that refused the change.
pub fn restore_left_keymap(display: &str) -> Result<Vec<u8>> {
    match remap::read_record(display) {
        Some(r) if !remap::record_in_use(&r) => {
            XInput::connect(Some(display))?.restore_left_keymap()
        }
        _ => Ok(Vec::new()),
    }
}

/// A record of keycodes left borrowed on `display` by a process that is no longer
/// running, for `doctor`: `(pid, keycodes)`.
pub fn keymap_left_changed(display: &str) -> Option<(u32, Vec<u8>)> {
    let r = remap::read_record(display)?;
    (!remap::record_in_use(&r)).then(|| (r.pid, r.installed.iter().map(|(k, _)| *k).collect()))
}

/// `GetInputFocus` round trip, then drains queued events (this connection selects
/// none, but receives `MappingNotify` and errors of unchecked requests, which would
/// otherwise pile up). Errors: the first X error found, as `Internal`.
pub(crate) fn sync_conn(conn: &RustConnection) -> Result<()> {
    conn.get_input_focus()
        .x11("GetInputFocus")?
        .reply()
        .x11("GetInputFocus")?;
    let mut first_error = None;
    while let Some(event) = conn.poll_for_event().x11("reading X events")? {
        if let Event::Error(e) = event {
            tracing::warn!(error = ?e, "X server refused an input request");
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        None => Ok(()),
        Some(e) => Err(ComputerError::new(
            ErrorCode::Internal,
            format!(
                "the X server refused a request ({:?}, major opcode {})",
                e.error_kind, e.major_opcode
            ),
        )),
    }
}

/// Which X display to use: an explicit name, else `$DISPLAY`. Pure for testing.
fn resolve_display(
    explicit: Option<&str>,
    env_display: Option<String>,
    env_wayland: Option<String>,
) -> Result<String> {
    if let Some(d) = explicit.filter(|d| !d.trim().is_empty()) {
        return Ok(d.to_owned());
    }
    if let Some(d) = env_display.filter(|d| !d.trim().is_empty()) {
        return Ok(d);
    }
    match env_wayland.filter(|w| !w.trim().is_empty()) {
        Some(wayland) => Err(ComputerError::new(
            ErrorCode::InputUnavailable,
            format!(
                "synthetic keyboard and pointer input needs X11 (XTest), but this is a \
                 Wayland-only session (WAYLAND_DISPLAY={wayland}, no DISPLAY); use \
                 semantic actions, or run the app under XWayland or a sandbox X display"
            ),
        )
        .with_detail(serde_json::json!({ "wayland_display": wayland }))),
        None => Err(ComputerError::new(
            ErrorCode::InputUnavailable,
            "synthetic keyboard and pointer input needs an X11 display, and none is set \
             (DISPLAY is empty); start a sandbox desktop or set DISPLAY",
        )),
    }
}

/// Keycodes whose bit is set in a 32-byte `QueryKeymap` vector.
fn pressed_keycodes(keys: &[u8]) -> Vec<u8> {
    keys.iter()
        .enumerate()
        .flat_map(|(byte, &bits)| {
            (0..8u8).filter_map(move |bit| {
                (bits & (1 << bit) != 0).then(|| u8::try_from(byte * 8 + usize::from(bit)).ok())?
            })
        })
        .collect()
}

/// Maps x11rb errors to driver errors: a lost connection is `InputUnavailable`, an X
/// protocol error is `Internal`; both name the request.
pub(crate) trait X11Context<T> {
    fn x11(self, what: &str) -> Result<T>;
}

impl<T> X11Context<T> for Result<T, ConnectionError> {
    fn x11(self, what: &str) -> Result<T> {
        self.map_err(|e| connection_lost(what, &e))
    }
}

impl<T> X11Context<T> for Result<T, ReplyError> {
    fn x11(self, what: &str) -> Result<T> {
        self.map_err(|e| match e {
            ReplyError::ConnectionError(e) => connection_lost(what, &e),
            ReplyError::X11Error(e) => ComputerError::new(
                ErrorCode::Internal,
                format!("X request {what} failed: {:?}", e.error_kind),
            ),
        })
    }
}

fn connection_lost(what: &str, e: &ConnectionError) -> ComputerError {
    ComputerError::new(
        ErrorCode::InputUnavailable,
        format!("lost the X connection during {what}: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_display_wins() {
        assert_eq!(
            resolve_display(Some(":91"), Some(":0".into()), None).unwrap(),
            ":91"
        );
        assert_eq!(
            resolve_display(None, Some(":0".into()), None).unwrap(),
            ":0"
        );
        assert_eq!(
            resolve_display(Some(""), Some(":3".into()), Some("wayland-0".into())).unwrap(),
            ":3"
        );
    }

    #[test]
    fn wayland_only_is_input_unavailable() {
        let err = resolve_display(None, None, Some("wayland-0".into())).unwrap_err();
        assert_eq!(err.code, ErrorCode::InputUnavailable);
        assert!(err.message.contains("needs X11"), "{}", err.message);
        assert!(err.message.contains("wayland-0"), "{}", err.message);
        let err = resolve_display(None, Some(" ".into()), Some("wayland-1".into())).unwrap_err();
        assert!(err.message.contains("Wayland-only"), "{}", err.message);
    }

    #[test]
    fn no_display_at_all_is_input_unavailable() {
        let err = resolve_display(None, None, None).unwrap_err();
        assert_eq!(err.code, ErrorCode::InputUnavailable);
        assert!(err.message.contains("DISPLAY"), "{}", err.message);
    }

    #[test]
    fn keymap_bits_to_keycodes() {
        let mut keys = [0u8; 32];
        assert!(pressed_keycodes(&keys).is_empty());
        keys[4] = 0b0010_0000; // keycode 37
        keys[31] = 0b1000_0000; // keycode 255
        assert_eq!(pressed_keycodes(&keys), vec![37, 255]);
    }
}

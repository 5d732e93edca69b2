//! The global stop hotkey (docs/ARCHITECTURE.md §7.8): a passive key grab on the
//! root window of an X display, on a connection of its own, watched by a thread of
//! its own.
//!
//! [`StopHotkey::grab`] parses the chord (`ctrl+shift+Escape` by default, every
//! spelling `deskpilot keys` takes), finds the keycode of its one non-modifier key
//! in the server's current map, and grabs it (`GrabKey`, asynchronous keyboard and
//! pointer) with its modifiers — four times, also with Caps Lock and with Num Lock
//! (`Mod2`) on, so a lit lock key does not disarm it. Another client holding the
//! same grab answers `BadAccess`: reported as [`HotkeyError::Taken`]. Each press
//! calls the callback on the watcher thread; the thread ends when the connection
//! does (the display closed) and the grab ends with the process.

use std::thread::JoinHandle;

use deskpilot_protocol::keys::{Keysym, keysym, parse_chords};
use x11rb::connection::Connection as _;
use x11rb::protocol::Event;
use x11rb::protocol::xinput;
use x11rb::protocol::xproto::{ConnectionExt as _, GrabMode, ModMask};
use x11rb::rust_connection::RustConnection;

use super::input::keymap::Keymap;

pub use crate::hotkey_types::{DEFAULT_STOP_HOTKEY, HotkeyError};

/// A grabbed stop hotkey; the grab lasts as long as the process (or the display).
pub struct StopHotkey {
    chord: String,
    display: String,
    _watcher: JoinHandle<()>,
}

const XK_SHIFT: [Keysym; 2] = [0xffe1, 0xffe2];
const XK_CONTROL: [Keysym; 2] = [0xffe3, 0xffe4];
const XK_ALT: [Keysym; 4] = [0xffe9, 0xffea, 0xffe7, 0xffe8];
const XK_SUPER: [Keysym; 4] = [0xffeb, 0xffec, 0xffed, 0xffee];

/// The modifier mask and the one other keysym of `chord`.
fn split(chord: &str) -> Result<(ModMask, Keysym), HotkeyError> {
    let parsed = parse_chords(chord).map_err(|e| HotkeyError::Invalid(e.message))?;
    let [one] = parsed.as_slice() else {
        return Err(HotkeyError::Invalid(format!(
            "the stop hotkey {chord:?} is several chords; give one, such as {DEFAULT_STOP_HOTKEY}"
        )));
    };
    let mut mask = ModMask::from(0u16);
    let mut key = None;
    for k in one.keys.iter().copied().map(keysym::canonical) {
        if XK_SHIFT.contains(&k) {
            mask |= ModMask::SHIFT;
        } else if XK_CONTROL.contains(&k) {
            mask |= ModMask::CONTROL;
        } else if XK_ALT.contains(&k) {
            mask |= ModMask::M1;
        } else if XK_SUPER.contains(&k) {
            mask |= ModMask::M4;
        } else if key.replace(k).is_some() {
            return Err(HotkeyError::Invalid(format!(
                "the stop hotkey {chord:?} has two keys besides its modifiers; give one"
            )));
        }
    }
    let key = key.ok_or_else(|| {
        HotkeyError::Invalid(format!(
            "the stop hotkey {chord:?} is only modifiers; add a key, as in {DEFAULT_STOP_HOTKEY}"
        ))
    })?;
    if u16::from(mask) == 0 {
        return Err(HotkeyError::Invalid(format!(
            "the stop hotkey {chord:?} has no modifier, so it would take that key from every app; add ctrl, shift or alt"
        )));
    }
    Ok((mask, key))
}

impl StopHotkey {
    /// Grabs `chord` on the X display `display` (`":91"`; `None`: `$DISPLAY`) and
    /// calls `on_press` on every press, from a thread of its own.
    ///
    /// Errors: [`HotkeyError`] — an invalid chord, no display, a chord another
    /// client grabs, a display that cannot be reached.
    pub fn grab(
        display: Option<&str>,
        chord: &str,
        on_press: impl Fn() + Send + 'static,
    ) -> Result<StopHotkey, HotkeyError> {
        let (conn, keycode, display) = open_and_grab(display, chord)?;
        let (mods, _) = split(chord)?;
        // While another client holds the keyboard grabbed (an open menu), the
        // passive grab never fires: XI 2.1 raw key events still arrive, and the
        // chord is recognised from them, modifiers tracked by keycode.
        let root = conn.setup().roots.first().map(|s| s.root).unwrap_or(0);
        super::presence::select_raw(
            &conn,
            root,
            xinput::XIEventMask::RAW_KEY_PRESS | xinput::XIEventMask::RAW_KEY_RELEASE,
        );
        let modmap = conn
            .get_modifier_mapping()
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|m| (usize::from(m.keycodes_per_modifier()), m.keycodes))
            .unwrap_or((0, Vec::new()));
        let watcher = std::thread::Builder::new()
            .name("stop-hotkey".into())
            .spawn(move || {
                let mut held = std::collections::BTreeSet::new();
                let mut last: Option<u32> = None;
                let mut fire = |time: u32| {
                    // One press arrives twice (the grab's and the raw event), with
                    // one server time.
                    if last == Some(time) {
                        return;
                    }
                    last = Some(time);
                    on_press();
                };
                while let Ok(ev) = conn.wait_for_event() {
                    match ev {
                        Event::KeyPress(k) if k.detail == keycode => fire(k.time),
                        Event::XinputRawKeyPress(r) => {
                            let kc = u8::try_from(r.detail).unwrap_or(0);
                            if kc == keycode && modifiers_held(mods, &held, &modmap) {
                                fire(r.time);
                            }
                            held.insert(kc);
                        }
                        Event::XinputRawKeyRelease(r) => {
                            held.remove(&u8::try_from(r.detail).unwrap_or(0));
                        }
                        _ => {}
                    }
                }
            })
            .map_err(|e| HotkeyError::Failed(format!("stop hotkey on {display}: thread: {e}")))?;
        Ok(StopHotkey {
            chord: chord.to_owned(),
            display,
            _watcher: watcher,
        })
    }

    /// The chord as configured.
    pub fn chord(&self) -> &str {
        &self.chord
    }

    /// The display the grab is on.
    pub fn display(&self) -> &str {
        &self.display
    }
}

/// Whether every modifier of `mods` has one of its keys in `held` (keycodes), by the
/// server's modifier map (`keycodes_per_modifier`, then 8 rows of keycodes: Shift,
/// Lock, Control, Mod1…Mod5).
fn modifiers_held(
    mods: ModMask,
    held: &std::collections::BTreeSet<u8>,
    (per, keycodes): &(usize, Vec<u8>),
) -> bool {
    let rows = [
        (ModMask::SHIFT, 0),
        (ModMask::CONTROL, 2),
        (ModMask::M1, 3),
        (ModMask::M4, 6),
    ];
    rows.iter().all(|&(m, row)| {
        u16::from(mods) & u16::from(m) == 0
            || keycodes
                .iter()
                .skip(row * per)
                .take(*per)
                .any(|k| *k != 0 && held.contains(k))
    })
}

/// Connects to the display and grabs `chord` on its root window: the connection,
/// the grabbed keycode and the display's name.
fn open_and_grab(
    display: Option<&str>,
    chord: &str,
) -> Result<(RustConnection, u8, String), HotkeyError> {
    let (mods, key) = split(chord)?;
    let display = display
        .map(str::to_owned)
        .or_else(|| std::env::var("DISPLAY").ok())
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| {
            HotkeyError::NoDisplay(match std::env::var("WAYLAND_DISPLAY") {
                Ok(w) if !w.is_empty() => format!(
                    "no stop hotkey: this is a Wayland-only session (WAYLAND_DISPLAY={w}) and a global key grab needs X11; use `deskpilot stop`"
                ),
                _ => "no stop hotkey: no X display (DISPLAY is empty); use `deskpilot stop`"
                    .into(),
            })
        })?;
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        HotkeyError::Failed(format!("stop hotkey on {display}: {what}: {e}"))
    };
    let (conn, screen) =
        RustConnection::connect(Some(&display)).map_err(|e| failed("connect", &e))?;
    let root = conn
        .setup()
        .roots
        .get(screen)
        .map(|s| s.root)
        .ok_or_else(|| failed("screen", &screen))?;
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .map_err(|e| failed("GetKeyboardMapping", &e))?
        .reply()
        .map_err(|e| failed("GetKeyboardMapping", &e))?;
    let keymap = Keymap::new(min, map.keysyms_per_keycode, map.keysyms, Vec::new());
    let (keycode, _) = keymap.find(key).ok_or_else(|| {
        HotkeyError::Invalid(format!(
            "the stop hotkey {chord:?}: no key of this keyboard types keysym {key:#x}"
        ))
    })?;
    for extra in [
        ModMask::from(0u16),
        ModMask::LOCK,
        ModMask::M2,
        ModMask::LOCK | ModMask::M2,
    ] {
        let r = conn
            .grab_key(
                false,
                root,
                mods | extra,
                keycode,
                GrabMode::ASYNC,
                GrabMode::ASYNC,
            )
            .map_err(|e| failed("GrabKey", &e))?
            .check();
        match r {
            Ok(()) => {}
            Err(x11rb::errors::ReplyError::X11Error(e))
                if e.error_kind == x11rb::protocol::ErrorKind::Access =>
            {
                return Err(HotkeyError::Taken(format!(
                    "the stop hotkey {chord} is already grabbed by another program on {display}; choose another with `deskpilot config set stop_hotkey CHORD`, or use `deskpilot stop`"
                )));
            }
            Err(e) => return Err(failed("GrabKey", &e)),
        }
    }
    conn.flush().map_err(|e| failed("flush", &e))?;
    Ok((conn, keycode, display))
}

/// Whether `chord` could be grabbed on `display` now: grabs it on a connection that
/// is closed at once (releasing the grab). For `doctor`.
pub fn probe(display: Option<&str>, chord: &str) -> Result<(), HotkeyError> {
    open_and_grab(display, chord).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modifiers_are_held_by_any_of_their_keys() {
        // Two keycodes per modifier: Shift 50/62, Lock 66, Control 37/105, Mod1 64.
        let map = (
            2,
            vec![50, 62, 66, 0, 37, 105, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        let mods = ModMask::CONTROL | ModMask::SHIFT;
        let held = |ks: &[u8]| {
            ks.iter()
                .copied()
                .collect::<std::collections::BTreeSet<u8>>()
        };
        assert!(modifiers_held(mods, &held(&[105, 50]), &map));
        assert!(!modifiers_held(mods, &held(&[105]), &map));
        assert!(!modifiers_held(mods, &held(&[50, 64]), &map));
        assert!(!modifiers_held(ModMask::M1, &held(&[]), &map));
    }

    #[test]
    fn a_hotkey_is_modifiers_and_one_key() {
        let (m, k) = split("ctrl+shift+Escape").unwrap();
        assert_eq!(m, ModMask::CONTROL | ModMask::SHIFT);
        assert_eq!(k, 0xff1b);
        let (m, k) = split("alt+super+F12").unwrap();
        assert_eq!(m, ModMask::M1 | ModMask::M4);
        assert_eq!(k, 0xffc9);
        for bad in [
            "Escape",
            "ctrl+shift",
            "ctrl+a ctrl+b",
            "ctrl+a+b",
            "ctrl+nosuchkey",
        ] {
            assert!(matches!(split(bad), Err(HotkeyError::Invalid(_))), "{bad}");
        }
    }
}

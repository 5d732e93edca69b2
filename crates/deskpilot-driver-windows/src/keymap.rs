//! X keysyms (the `keys` request's vocabulary, `deskpilot_protocol::keys`) →
//! Windows virtual-key codes (docs/ARCHITECTURE.md §6b, "Fallback input").
//!
//! Pure: one table, tested on every OS. A key this table lacks is sent as the
//! character it types (`KEYEVENTF_UNICODE`) when it is alone in its chord, and
//! refused in a chord with modifiers (a Unicode key cannot be held with Ctrl).

use deskpilot_protocol::keys::{Keysym, keysym_to_char};

/// What to send for one keysym.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A virtual-key code (`VK_*`), `extended` for keys on the extended part of the
    /// keyboard (arrows, Home, End, Insert, Delete, Page Up/Down).
    Vk { vk: u16, extended: bool },
    /// A character typed as Unicode.
    Char(char),
}

/// Modifier virtual keys: Shift, Ctrl, Alt, left Windows key.
pub const MODIFIERS: [u16; 4] = [0x10, 0x11, 0x12, 0x5b];

/// Maps a keysym. Letters map to their key (`a` and `A` alike: case comes from
/// Shift), digits and space to theirs, named keys by the table; other characters
/// to [`Key::Char`]; `None` for a keysym that is neither.
pub fn key_of(k: Keysym) -> Option<Key> {
    let vk = |vk: u16| {
        Some(Key::Vk {
            vk,
            extended: false,
        })
    };
    let ext = |vk: u16| Some(Key::Vk { vk, extended: true });
    match k {
        0x61..=0x7a => vk((k - 0x20) as u16),
        0x41..=0x5a | 0x30..=0x39 => vk(k as u16),
        0x20 => vk(0x20),
        0xff08 => vk(0x08),                                // BackSpace
        0xff09 | 0xfe20 => vk(0x09),                       // Tab, ISO_Left_Tab
        0xff0d | 0xff8d => vk(0x0d),                       // Return, KP_Enter
        0xff1b => vk(0x1b),                                // Escape
        0xff13 => vk(0x13),                                // Pause
        0xff50 => ext(0x24),                               // Home
        0xff51 => ext(0x25),                               // Left
        0xff52 => ext(0x26),                               // Up
        0xff53 => ext(0x27),                               // Right
        0xff54 => ext(0x28),                               // Down
        0xff55 => ext(0x21),                               // Prior (Page Up)
        0xff56 => ext(0x22),                               // Next (Page Down)
        0xff57 => ext(0x23),                               // End
        0xff63 => ext(0x2d),                               // Insert
        0xffff => ext(0x2e),                               // Delete
        0xff67 => ext(0x5d),                               // Menu
        0xffe1 | 0xffe2 => vk(0x10),                       // Shift
        0xffe3 | 0xffe4 => vk(0x11),                       // Control
        0xffe9 | 0xffea | 0xff7e => vk(0x12),              // Alt, Mode_switch
        0xffeb | 0xffec => ext(0x5b),                      // Super
        0xffbe..=0xffd5 => vk(0x70 + (k - 0xffbe) as u16), // F1–F24
        _ => keysym_to_char(k).map(Key::Char),
    }
}

/// Whether the virtual key is a modifier.
pub fn is_modifier(vk: u16) -> bool {
    MODIFIERS.contains(&vk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_keys_letters_and_characters_map() {
        assert_eq!(
            key_of(0x73),
            Some(Key::Vk {
                vk: 0x53,
                extended: false
            }),
            "s"
        );
        assert_eq!(
            key_of(0x53),
            Some(Key::Vk {
                vk: 0x53,
                extended: false
            }),
            "S"
        );
        assert_eq!(
            key_of(0x35),
            Some(Key::Vk {
                vk: 0x35,
                extended: false
            }),
            "5"
        );
        assert_eq!(
            key_of(0xff0d),
            Some(Key::Vk {
                vk: 0x0d,
                extended: false
            }),
            "Return"
        );
        assert_eq!(
            key_of(0xff51),
            Some(Key::Vk {
                vk: 0x25,
                extended: true
            }),
            "Left"
        );
        assert_eq!(
            key_of(0xffbe),
            Some(Key::Vk {
                vk: 0x70,
                extended: false
            }),
            "F1"
        );
        assert_eq!(
            key_of(0xffd5),
            Some(Key::Vk {
                vk: 0x87,
                extended: false
            }),
            "F24"
        );
        assert_eq!(
            key_of(0xffe3),
            Some(Key::Vk {
                vk: 0x11,
                extended: false
            }),
            "Control_L"
        );
        assert_eq!(key_of(0x00e9), Some(Key::Char('é')));
        assert_eq!(key_of(0x2f), Some(Key::Char('/')));
        assert!(is_modifier(0x10) && is_modifier(0x12) && !is_modifier(0x41));
        // Every chord the protocol parses for common shortcuts maps.
        for chord in [
            "ctrl+s",
            "alt+F4",
            "shift+Tab",
            "Return",
            "ctrl+shift+Left",
            "Escape",
            "Delete",
        ] {
            for c in deskpilot_protocol::keys::parse_chords(chord).unwrap() {
                for k in c.keys {
                    assert!(matches!(key_of(k), Some(Key::Vk { .. })), "{chord}: {k:#x}");
                }
            }
        }
    }
}

//! Synthetic input plans for CGEvent (pure): chords to virtual key codes, text to
//! UTF-16 chunks, pointer gestures to mouse events.
//!
//! Owns the X keysym → macOS virtual key code table (`kVK_*` of Carbon's `Events.h`,
//! ANSI layout positions) and the modifier flags (`kCGEventFlagMask*`). Chords come
//! from the shared parser (`deskpilot_protocol::keys`), so `ctrl`, `shift`, `alt`/
//! `option` and `super`/`meta` (Command here) name the same keys as on Linux. Text is
//! typed layout-independently with `CGEventKeyboardSetUnicodeString`, at most
//! [`UNICODE_CHUNK`] UTF-16 units per event. It never posts an event.

use deskpilot_protocol::Result;
use deskpilot_protocol::keys::{Chord, Keysym};
use deskpilot_protocol::types::PointerAction;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// `kCGEventFlagMaskShift`.
pub const FLAG_SHIFT: u64 = 0x0002_0000;
/// `kCGEventFlagMaskControl`.
pub const FLAG_CONTROL: u64 = 0x0004_0000;
/// `kCGEventFlagMaskAlternate` (Option).
pub const FLAG_OPTION: u64 = 0x0008_0000;
/// `kCGEventFlagMaskCommand`.
pub const FLAG_COMMAND: u64 = 0x0010_0000;

/// `kVK_Return`.
pub const KVK_RETURN: u16 = 0x24;
/// `kVK_Tab`.
pub const KVK_TAB: u16 = 0x30;
/// `kVK_Command`.
pub const KVK_COMMAND: u16 = 0x37;
/// `kVK_ANSI_A`.
pub const KVK_ANSI_A: u16 = 0x00;

/// UTF-16 units per keyboard event at most: 20, the length up to which
/// `CGEventKeyboardSetUnicodeString` is delivered whole (longer strings are cut by
/// the event system).
pub const UNICODE_CHUNK: usize = 20;

/// A modifier key: its key code and its flag.
fn modifier(keysym: Keysym) -> Option<(u16, u64)> {
    Some(match keysym {
        0xffe1 => (0x38, FLAG_SHIFT),                   // Shift_L → kVK_Shift
        0xffe2 => (0x3c, FLAG_SHIFT),                   // Shift_R → kVK_RightShift
        0xffe3 => (0x3b, FLAG_CONTROL),                 // Control_L → kVK_Control
        0xffe4 => (0x3e, FLAG_CONTROL),                 // Control_R → kVK_RightControl
        0xffe9 | 0xfe03 => (0x3a, FLAG_OPTION),         // Alt_L, ISO_Level3_Shift → kVK_Option
        0xffea => (0x3d, FLAG_OPTION),                  // Alt_R → kVK_RightOption
        0xffeb | 0xffe7 => (KVK_COMMAND, FLAG_COMMAND), // Super_L, Meta_L → kVK_Command
        0xffec | 0xffe8 => (0x36, FLAG_COMMAND),        // Super_R, Meta_R → kVK_RightCommand
        _ => return None,
    })
}

/// The virtual key code of a non-modifier keysym (ANSI US positions for characters).
pub fn key_code(keysym: Keysym) -> Option<u16> {
    let lower = match keysym {
        0x41..=0x5a => keysym + 0x20, // A–Z name the same keys as a–z
        k => k,
    };
    Some(match lower {
        0x61 => 0x00,                  // a
        0x73 => 0x01,                  // s
        0x64 => 0x02,                  // d
        0x66 => 0x03,                  // f
        0x68 => 0x04,                  // h
        0x67 => 0x05,                  // g
        0x7a => 0x06,                  // z
        0x78 => 0x07,                  // x
        0x63 => 0x08,                  // c
        0x76 => 0x09,                  // v
        0x62 => 0x0b,                  // b
        0x71 => 0x0c,                  // q
        0x77 => 0x0d,                  // w
        0x65 => 0x0e,                  // e
        0x72 => 0x0f,                  // r
        0x79 => 0x10,                  // y
        0x74 => 0x11,                  // t
        0x31 => 0x12,                  // 1
        0x32 => 0x13,                  // 2
        0x33 => 0x14,                  // 3
        0x34 => 0x15,                  // 4
        0x36 => 0x16,                  // 6
        0x35 => 0x17,                  // 5
        0x3d => 0x18,                  // =
        0x39 => 0x19,                  // 9
        0x37 => 0x1a,                  // 7
        0x2d => 0x1b,                  // -
        0x38 => 0x1c,                  // 8
        0x30 => 0x1d,                  // 0
        0x5d => 0x1e,                  // ]
        0x6f => 0x1f,                  // o
        0x75 => 0x20,                  // u
        0x5b => 0x21,                  // [
        0x69 => 0x22,                  // i
        0x70 => 0x23,                  // p
        0x6c => 0x25,                  // l
        0x6a => 0x26,                  // j
        0x27 => 0x27,                  // '
        0x6b => 0x28,                  // k
        0x3b => 0x29,                  // ;
        0x5c => 0x2a,                  // backslash
        0x2c => 0x2b,                  // ,
        0x2f => 0x2c,                  // /
        0x6e => 0x2d,                  // n
        0x6d => 0x2e,                  // m
        0x2e => 0x2f,                  // .
        0x60 => 0x32,                  // `
        0x20 => 0x31,                  // space
        0xff0d | 0xff8d => KVK_RETURN, // Return, KP_Enter
        0xff09 | 0xfe20 => KVK_TAB,    // Tab, ISO_Left_Tab
        0xff08 => 0x33,                // BackSpace → kVK_Delete
        0xff1b => 0x35,                // Escape
        0xffff => 0x75,                // Delete → kVK_ForwardDelete
        0xff50 => 0x73,                // Home
        0xff57 => 0x77,                // End
        0xff55 => 0x74,                // Prior (Page_Up)
        0xff56 => 0x79,                // Next (Page_Down)
        0xff51 => 0x7b,                // Left
        0xff53 => 0x7c,                // Right
        0xff54 => 0x7d,                // Down
        0xff52 => 0x7e,                // Up
        0xffbe => 0x7a,                // F1
        0xffbf => 0x78,                // F2
        0xffc0 => 0x63,                // F3
        0xffc1 => 0x76,                // F4
        0xffc2 => 0x60,                // F5
        0xffc3 => 0x61,                // F6
        0xffc4 => 0x62,                // F7
        0xffc5 => 0x64,                // F8
        0xffc6 => 0x65,                // F9
        0xffc7 => 0x6d,                // F10
        0xffc8 => 0x67,                // F11
        0xffc9 => 0x6f,                // F12
        _ => return None,
    })
}

/// One key event: key code, down or up, and the modifier flags it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyEvent {
    pub code: u16,
    pub down: bool,
    pub flags: u64,
}

/// The key events of one chord: modifiers down in order, the keys down and up, the
/// modifiers up in reverse order; every event carries the modifiers held at that
/// moment.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` naming a key with no macOS key code (a key of
/// another layout, a media key).
pub fn plan_chord(chord: &Chord) -> Result<Vec<KeyEvent>> {
    let mut mods: Vec<(u16, u64)> = Vec::new();
    let mut keys: Vec<u16> = Vec::new();
    for &k in &chord.keys {
        if let Some(m) = modifier(k) {
            mods.push(m);
        } else if let Some(c) = key_code(k) {
            keys.push(c);
        } else {
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{:?}: key 0x{k:x} has no key code on macOS; type characters as text instead",
                    chord.text
                ),
            ));
        }
    }
    let mut out = Vec::new();
    let mut flags = 0u64;
    for &(code, flag) in &mods {
        flags |= flag;
        out.push(KeyEvent {
            code,
            down: true,
            flags,
        });
    }
    for &code in &keys {
        out.push(KeyEvent {
            code,
            down: true,
            flags,
        });
    }
    for &code in keys.iter().rev() {
        out.push(KeyEvent {
            code,
            down: false,
            flags,
        });
    }
    for &(code, flag) in mods.iter().rev() {
        flags &= !flag;
        out.push(KeyEvent {
            code,
            down: false,
            flags,
        });
    }
    Ok(out)
}

/// One step of typing text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextStep {
    /// A key-down/key-up pair carrying these UTF-16 units.
    Unicode(Vec<u16>),
    /// A key pressed by code (Return for a line break, Tab for a tab).
    Key(u16),
}

/// Splits text into typing steps: runs of at most [`UNICODE_CHUNK`] UTF-16 units,
/// never splitting a surrogate pair; `\n`, `\r\n` and `\r` become Return, `\t` Tab.
pub fn plan_text(text: &str) -> Vec<TextStep> {
    let mut out = Vec::new();
    let mut run: Vec<u16> = Vec::new();
    let flush = |run: &mut Vec<u16>, out: &mut Vec<TextStep>| {
        if !run.is_empty() {
            out.push(TextStep::Unicode(std::mem::take(run)));
        }
    };
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    for c in normalized.chars() {
        match c {
            '\n' => {
                flush(&mut run, &mut out);
                out.push(TextStep::Key(KVK_RETURN));
            }
            '\t' => {
                flush(&mut run, &mut out);
                out.push(TextStep::Key(KVK_TAB));
            }
            _ => {
                let mut buf = [0u16; 2];
                let units = c.encode_utf16(&mut buf);
                if run.len() + units.len() > UNICODE_CHUNK {
                    flush(&mut run, &mut out);
                }
                run.extend_from_slice(units);
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Kinds of mouse events (the `kCGEvent…` types the FFI layer maps them to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseKind {
    Move,
    LeftDown,
    LeftUp,
    LeftDragged,
    RightDown,
    RightUp,
    /// A scroll of this many lines (positive up, as `CGEventCreateScrollWheelEvent2`).
    Scroll(i32),
}

/// One mouse event at a point in global display points; `clicks` is the click count
/// (`kCGMouseEventClickState`: 2 on the second press of a double click).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MouseEvent {
    pub kind: MouseKind,
    pub x: f64,
    pub y: f64,
    pub clicks: i64,
}

/// Lines scrolled by one wheel gesture: 5.
pub const SCROLL_LINES: i32 = 5;

/// The mouse events of a gesture at `at` (points), a drag ending at `to` (points).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a drag without an end point.
pub fn plan_pointer(
    action: PointerAction,
    at: (f64, f64),
    to: Option<(f64, f64)>,
) -> Result<Vec<MouseEvent>> {
    let ev = |kind, (x, y): (f64, f64), clicks| MouseEvent { kind, x, y, clicks };
    use MouseKind::*;
    Ok(match action {
        PointerAction::Move => vec![ev(Move, at, 0)],
        PointerAction::Click => vec![ev(Move, at, 0), ev(LeftDown, at, 1), ev(LeftUp, at, 1)],
        PointerAction::DoubleClick => vec![
            ev(Move, at, 0),
            ev(LeftDown, at, 1),
            ev(LeftUp, at, 1),
            ev(LeftDown, at, 2),
            ev(LeftUp, at, 2),
        ],
        PointerAction::RightClick => {
            vec![ev(Move, at, 0), ev(RightDown, at, 1), ev(RightUp, at, 1)]
        }
        PointerAction::Drag => {
            let end =
                to.ok_or_else(|| ComputerError::invalid("a drag needs its end point (to)"))?;
            let mid = ((at.0 + end.0) / 2.0, (at.1 + end.1) / 2.0);
            vec![
                ev(Move, at, 0),
                ev(LeftDown, at, 1),
                ev(LeftDragged, mid, 1),
                ev(LeftDragged, end, 1),
                ev(LeftUp, end, 1),
            ]
        }
        PointerAction::ScrollUp => vec![ev(Move, at, 0), ev(Scroll(SCROLL_LINES), at, 0)],
        PointerAction::ScrollDown => vec![ev(Move, at, 0), ev(Scroll(-SCROLL_LINES), at, 0)],
    })
}

#[cfg(test)]
mod tests {
    use deskpilot_protocol::keys::parse_chords;

    use super::*;

    fn plan(s: &str) -> Vec<KeyEvent> {
        let chords = parse_chords(s).unwrap();
        plan_chord(&chords[0]).unwrap()
    }

    #[test]
    fn a_chord_holds_its_modifiers_around_the_key() {
        let p = plan("super+shift+s");
        let codes: Vec<(u16, bool, u64)> = p.iter().map(|e| (e.code, e.down, e.flags)).collect();
        let both = FLAG_COMMAND | FLAG_SHIFT;
        assert_eq!(
            codes,
            [
                (KVK_COMMAND, true, FLAG_COMMAND),
                (0x38, true, both),
                (0x01, true, both),
                (0x01, false, both),
                (0x38, false, FLAG_COMMAND),
                (KVK_COMMAND, false, 0),
            ]
        );
        let p = plan("ctrl+a");
        assert_eq!(p[0].code, 0x3b);
        assert_eq!(
            p[1],
            KeyEvent {
                code: KVK_ANSI_A,
                down: true,
                flags: FLAG_CONTROL
            }
        );
        let p = plan("Return");
        assert_eq!(
            p,
            [
                KeyEvent {
                    code: KVK_RETURN,
                    down: true,
                    flags: 0
                },
                KeyEvent {
                    code: KVK_RETURN,
                    down: false,
                    flags: 0
                },
            ]
        );
        assert_eq!(plan("alt+Left")[1].code, 0x7b);
        assert_eq!(plan("F5")[0].code, 0x60);
        assert_eq!(plan("shift+Tab")[1].code, KVK_TAB);
    }

    #[test]
    fn every_letter_and_digit_has_its_own_key_code() {
        let mut seen = std::collections::HashSet::new();
        for c in ('a'..='z').chain('0'..='9') {
            let code = key_code(c as u32).unwrap_or_else(|| panic!("{c}"));
            assert!(seen.insert(code), "{c} shares key code {code}");
            if c.is_ascii_lowercase() {
                assert_eq!(key_code(c.to_ascii_uppercase() as u32), Some(code));
            }
        }
        assert_eq!(key_code(0x1008_ff11), None);
    }

    #[test]
    fn a_key_without_a_code_is_refused_before_any_event() {
        let chords = parse_chords("ctrl+XF86AudioMute").unwrap();
        let e = plan_chord(&chords[0]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn text_is_cut_into_chunks_without_splitting_pairs() {
        assert_eq!(plan_text(""), []);
        let steps = plan_text("ab\ncd\te\r\nf");
        assert_eq!(
            steps,
            [
                TextStep::Unicode("ab".encode_utf16().collect()),
                TextStep::Key(KVK_RETURN),
                TextStep::Unicode("cd".encode_utf16().collect()),
                TextStep::Key(KVK_TAB),
                TextStep::Unicode("e".encode_utf16().collect()),
                TextStep::Key(KVK_RETURN),
                TextStep::Unicode("f".encode_utf16().collect()),
            ]
        );
        // 19 letters then an emoji (2 units): the emoji starts the next chunk.
        let text = format!("{}😀x", "a".repeat(19));
        let steps = plan_text(&text);
        assert_eq!(steps.len(), 2);
        assert_eq!(
            steps[0],
            TextStep::Unicode("a".repeat(19).encode_utf16().collect())
        );
        assert_eq!(steps[1], TextStep::Unicode("😀x".encode_utf16().collect()));
        let long = "é".repeat(45);
        let sizes: Vec<usize> = plan_text(&long)
            .iter()
            .map(|s| match s {
                TextStep::Unicode(u) => u.len(),
                TextStep::Key(_) => 0,
            })
            .collect();
        assert_eq!(sizes, [20, 20, 5]);
    }

    #[test]
    fn gestures_become_mouse_events() {
        let p = plan_pointer(PointerAction::DoubleClick, (10.0, 20.0), None).unwrap();
        let clicks: Vec<i64> = p.iter().map(|e| e.clicks).collect();
        assert_eq!(clicks, [0, 1, 1, 2, 2]);
        let p = plan_pointer(PointerAction::Drag, (0.0, 0.0), Some((100.0, 50.0))).unwrap();
        assert_eq!(p[2].kind, MouseKind::LeftDragged);
        assert_eq!((p[2].x, p[2].y), (50.0, 25.0));
        assert_eq!(
            (p[4].kind, p[4].x, p[4].y),
            (MouseKind::LeftUp, 100.0, 50.0)
        );
        let e = plan_pointer(PointerAction::Drag, (0.0, 0.0), None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let p = plan_pointer(PointerAction::ScrollDown, (1.0, 1.0), None).unwrap();
        assert_eq!(p[1].kind, MouseKind::Scroll(-SCROLL_LINES));
        let p = plan_pointer(PointerAction::RightClick, (1.0, 1.0), None).unwrap();
        assert_eq!(p[1].kind, MouseKind::RightDown);
    }
}

//! Turns text or chords into key presses against a [`Keymap`], before any event is
//! sent, so a character or key that cannot be typed is refused up front.
//!
//! Pure: owns the choice of keycodes, implicit Shift/AltGr, and which spare keycodes
//! to borrow for keysyms the map lacks. It never talks to the X server.
//!
//! A plan is a list of batches. Each batch first borrows spare keycodes for the
//! keysyms it needs (one keycode per character, or per case pair such as `é`/`É`;
//! at most all spares), then presses its groups. A new batch starts only when a
//! group needs more borrowed keysyms than spares remain, so a text with fewer
//! distinct missing characters than spare keycodes needs one borrow and one restore.

use deskpilot_protocol::{ComputerError, ErrorCode};

use super::chord::Chord;
use super::keymap::{Keymap, Level};
use super::keysym::{
    Keysym, XK_ISO_LEVEL3_SHIFT, XK_RETURN, XK_SHIFT_L, canonical, case_pair, char_to_keysym,
    is_modifier, keysym_to_char,
};
use deskpilot_protocol::Result;

/// Upper bound on characters in one `type_text` call (at most a few events each), so
/// one call is a bounded burst of input.
pub const MAX_TEXT_CHARS: usize = 10_000;

/// Keys pressed in order, then released in reverse order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PressGroup {
    pub keycodes: Vec<u8>,
}

/// A spare keycode borrowed for the call, and the row it gets: `lower` without Shift,
/// `upper` with Shift. For a character with case (`é`/`É`) the row is the case pair,
/// like a letter key, so Caps Lock and Shift act on it as on any letter; for one
/// without (`你`, `—`) both are the character itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Borrow {
    pub keycode: u8,
    pub lower: Keysym,
    pub upper: Keysym,
}

impl Borrow {
    /// True when the row is a case pair.
    pub fn is_cased(&self) -> bool {
        self.lower != self.upper
    }

    /// The level at which this row types `keysym`, if it does.
    fn level_of(&self, keysym: Keysym) -> Option<Level> {
        let target = canonical(keysym);
        if canonical(self.lower) == target {
            Some(Level::Base)
        } else if canonical(self.upper) == target {
            Some(Level::Shift)
        } else {
            None
        }
    }
}

/// Borrowed keycodes and the groups typed while they are borrowed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Batch {
    /// Rows to install on spare keycodes before pressing `groups`.
    pub borrow: Vec<Borrow>,
    pub groups: Vec<PressGroup>,
}

/// Everything one call will press.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub batches: Vec<Batch>,
}

impl Plan {
    /// Key events the plan sends: one press and one release per key.
    pub fn event_count(&self) -> u64 {
        self.batches
            .iter()
            .flat_map(|b| &b.groups)
            .map(|g| 2 * g.keycodes.len() as u64)
            .sum()
    }

    /// True when some batch borrows a keycode.
    pub fn borrows(&self) -> bool {
        self.batches.iter().any(|b| !b.borrow.is_empty())
    }
}

/// One key of a group: its keysym and whether it is held as a modifier.
#[derive(Debug, Clone, Copy)]
struct Key {
    keysym: Keysym,
    modifier: bool,
}

struct Planner<'a> {
    keymap: &'a Keymap,
    spares: Vec<u8>,
    shift: Option<u8>,
    level3: Option<u8>,
    plan: Plan,
    current: Batch,
    /// Caps Lock is on: letters need the opposite Shift state (text only).
    caps_lock: bool,
}

impl<'a> Planner<'a> {
    fn new(keymap: &'a Keymap) -> Self {
        Planner {
            keymap,
            spares: keymap.spare_keycodes(),
            shift: keymap.modifier_key(XK_SHIFT_L),
            level3: keymap.modifier_key(XK_ISO_LEVEL3_SHIFT),
            plan: Plan::default(),
            current: Batch::default(),
            caps_lock: false,
        }
    }

    /// The borrowed keycode (in the current batch) and level that type `keysym`.
    fn borrowed(&self, keysym: Keysym) -> Option<(&Borrow, Level)> {
        self.current
            .borrow
            .iter()
            .find_map(|b| b.level_of(keysym).map(|level| (b, level)))
    }

    /// The row to borrow for `keysym`: its case pair when it has one and a Shift key
    /// exists to reach the upper case, else the keysym on both levels.
    fn row_for(&self, keysym: Keysym) -> (Keysym, Keysym) {
        let (lower, upper) = case_pair(keysym);
        let is_pair_member = keysym == lower || keysym == upper;
        if lower != upper && is_pair_member && self.shift.is_some() {
            (lower, upper)
        } else {
            (keysym, keysym)
        }
    }

    fn add_group(&mut self, keys: &[Key]) -> Result<()> {
        // Rows this group needs to borrow that the current batch has not borrowed.
        let mut missing: Vec<(Keysym, Keysym)> = Vec::new();
        for key in keys {
            if key.modifier {
                if self.keymap.modifier_key(key.keysym).is_none() {
                    return Err(no_modifier(key.keysym));
                }
                continue;
            }
            if self.keymap.find(key.keysym).is_some() || self.borrowed(key.keysym).is_some() {
                continue;
            }
            let row = self.row_for(key.keysym);
            if !missing.contains(&row) {
                missing.push(row);
            }
        }
        if let Some(&(first, _)) = missing.first() {
            if self.spares.is_empty() {
                return Err(no_spare(first));
            }
            if missing.len() > self.spares.len() {
                return Err(ComputerError::new(
                    ErrorCode::InvalidArgument,
                    format!(
                        "one chord needs {} keys the keyboard map lacks but only {} spare keycodes exist",
                        missing.len(),
                        self.spares.len()
                    ),
                ));
            }
            if self.current.borrow.len() + missing.len() > self.spares.len() {
                self.plan.batches.push(std::mem::take(&mut self.current));
            }
            for (lower, upper) in missing {
                let keycode = self.spares[self.current.borrow.len()];
                self.current.borrow.push(Borrow {
                    keycode,
                    lower,
                    upper,
                });
            }
        }

        let mut keycodes: Vec<u8> = Vec::with_capacity(keys.len() + 2);
        let mut push = |kc: u8| {
            if !keycodes.contains(&kc) {
                keycodes.push(kc);
            }
        };
        for key in keys {
            if key.modifier {
                if let Some(kc) = self.keymap.modifier_key(key.keysym) {
                    push(kc);
                }
                continue;
            }
            let (kc, level, cased) = if let Some((kc, level)) = self.keymap.find(key.keysym) {
                (kc, level, self.keymap.is_cased(kc))
            } else if let Some((b, level)) = self.borrowed(key.keysym) {
                (b.keycode, level, b.is_cased())
            } else {
                continue; // unreachable: every missing keysym was borrowed above
            };
            // Caps Lock inverts the case of letter keys; Shift inverts it back.
            let inverted = self.caps_lock && cased && matches!(level, Level::Base | Level::Shift);
            // Shift/AltGr levels are only chosen when those keys exist.
            if let (true, Some(shift)) = (level.needs_shift() != inverted, self.shift) {
                push(shift);
            }
            if let (true, Some(level3)) = (level.needs_level3(), self.level3) {
                push(level3);
            }
            push(kc);
        }
        self.current.groups.push(PressGroup { keycodes });
        Ok(())
    }

    fn finish(mut self) -> Plan {
        if !self.current.groups.is_empty() {
            self.plan.batches.push(self.current);
        }
        self.plan
    }
}

/// Plans typing `text` literally: each character is one group (its key plus Shift or
/// AltGr when its level needs them); `\n`, `\r\n` and `\r` are one Return each, `\t`
/// is Tab. With `caps_lock` on (the server's Lock modifier), letters get the opposite
/// Shift state so they come out in the case written.
///
/// Errors: `InvalidArgument` for other control characters or more than
/// [`MAX_TEXT_CHARS`] characters; `InputUnavailable` when a character is missing from
/// the map and no spare keycode exists to borrow.
pub fn plan_text(keymap: &Keymap, text: &str, caps_lock: bool) -> Result<Plan> {
    let count = text.chars().count();
    if count > MAX_TEXT_CHARS {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!(
                "text has {count} characters; at most {MAX_TEXT_CHARS} are typed per call, split it"
            ),
        ));
    }
    let mut planner = Planner::new(keymap);
    planner.caps_lock = caps_lock && planner.shift.is_some();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            chars.next();
        }
        let keysym = char_to_keysym(c).ok_or_else(|| {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "text contains the control character U+{:04X}, which no key types; only \
                     newlines (typed as Return) and tabs (Tab) are allowed",
                    c as u32
                ),
            )
            .with_detail(serde_json::json!({ "codepoint": c as u32 }))
        })?;
        planner.add_group(&[Key {
            keysym,
            modifier: false,
        }])?;
    }
    Ok(planner.finish())
}

/// Plans chords: each chord is one group, modifiers first as written, then each key
/// with any Shift/AltGr its level needs (a keycode is pressed once per group).
///
/// Errors: `InputUnavailable` when a modifier has no key in the map, or a key is
/// missing and no spare keycode exists.
pub fn plan_chords(keymap: &Keymap, chords: &[Chord]) -> Result<Plan> {
    let mut planner = Planner::new(keymap);
    for chord in chords {
        let keys: Vec<Key> = chord
            .keys
            .iter()
            .map(|&keysym| Key {
                keysym,
                modifier: is_modifier(keysym),
            })
            .collect();
        planner.add_group(&keys).map_err(|e| {
            let message = format!("chord \"{}\": {}", chord.text, e.message);
            ComputerError { message, ..e }
        })?;
    }
    Ok(planner.finish())
}

/// `'é' (U+00E9)` for a character, `keysym 0xff0d` otherwise.
pub fn describe_keysym(keysym: Keysym) -> String {
    match keysym_to_char(keysym) {
        Some(c) => format!("'{c}' (U+{:04X})", c as u32),
        None if keysym == XK_RETURN => "Return".to_owned(),
        None => format!("keysym 0x{keysym:x}"),
    }
}

fn no_spare(keysym: Keysym) -> ComputerError {
    ComputerError::new(
        ErrorCode::InputUnavailable,
        format!(
            "cannot type {}: the keyboard map has no key for it and no spare keycode is free to borrow",
            describe_keysym(keysym)
        ),
    )
    .with_detail(serde_json::json!({ "keysym": keysym }))
}

fn no_modifier(keysym: Keysym) -> ComputerError {
    ComputerError::new(
        ErrorCode::InputUnavailable,
        format!(
            "the keyboard map has no modifier key for {}; it cannot be pressed",
            describe_keysym(keysym)
        ),
    )
    .with_detail(serde_json::json!({ "keysym": keysym }))
}

#[cfg(test)]
mod tests {
    use super::super::chord::parse_chords;
    use super::super::keymap::tests::sample;
    use super::super::keysym::XK_SUPER_L;
    use super::*;

    fn groups(plan: &Plan) -> Vec<Vec<u8>> {
        plan.batches
            .iter()
            .flat_map(|b| &b.groups)
            .map(|g| g.keycodes.clone())
            .collect()
    }

    fn b(keycode: u8, lower: Keysym, upper: Keysym) -> Borrow {
        Borrow {
            keycode,
            lower,
            upper,
        }
    }

    #[test]
    fn titlecase_and_uncased_characters_borrow_a_single_keysym_row() {
        let m = sample();
        // ǅ (U+01C5) is title case: neither its lower nor its upper form.
        let plan = plan_text(&m, "ǅß", false).unwrap();
        assert_eq!(
            plan.batches[0].borrow,
            vec![b(8, 0x0100_01c5, 0x0100_01c5), b(18, 0xdf, 0xdf)]
        );
        // Without a Shift key the upper case is unreachable: single-keysym rows.
        let no_shift = Keymap::new(8, 2, vec![0, 0, 0, 0], vec![]);
        let plan = plan_text(&no_shift, "éÉ", false).unwrap();
        assert_eq!(
            plan.batches[0].borrow,
            vec![b(8, 0xe9, 0xe9), b(9, 0xc9, 0xc9)]
        );
        assert_eq!(groups(&plan), vec![vec![8], vec![9]]);
    }

    #[test]
    fn mapped_text_needs_no_borrow() {
        let m = sample();
        let plan = plan_text(&m, "aS!\n", false).unwrap();
        assert!(!plan.borrows());
        assert_eq!(
            groups(&plan),
            vec![vec![11], vec![9, 12], vec![9, 14], vec![15]]
        );
        assert_eq!(plan.event_count(), 2 * 6);
    }

    #[test]
    fn crlf_is_one_return() {
        let m = sample();
        assert_eq!(
            groups(&plan_text(&m, "a\r\na\rx", false).unwrap()),
            vec![vec![11], vec![15], vec![11], vec![15], vec![16]]
        );
    }

    #[test]
    fn caps_lock_inverts_shift_for_letters_only() {
        let m = sample();
        // a → without Shift normally; with Caps Lock, Shift makes it lower case.
        assert_eq!(
            groups(&plan_text(&m, "aS!x", true).unwrap()),
            vec![vec![9, 11], vec![12], vec![9, 14], vec![9, 16]]
        );
        // A borrowed cased character gets a case-pair row: treated like a letter key.
        assert_eq!(
            groups(&plan_text(&m, "éÉ", true).unwrap()),
            vec![vec![9, 8], vec![8]]
        );
        // Uncased characters are unaffected.
        assert_eq!(groups(&plan_text(&m, "你", true).unwrap()), vec![vec![8]]);
    }

    #[test]
    fn altgr_level_uses_level3_key() {
        let m = sample();
        assert_eq!(
            groups(&plan_text(&m, "€", false).unwrap()),
            vec![vec![19, 13]]
        );
    }

    #[test]
    fn missing_chars_borrow_spares_once_per_keysym() {
        let m = sample();
        let plan = plan_text(&m, "é你éÉ", false).unwrap();
        assert_eq!(plan.batches.len(), 1);
        assert_eq!(
            plan.batches[0].borrow,
            vec![b(8, 0xe9, 0xc9), b(18, 0x0100_4f60, 0x0100_4f60)]
        );
        assert_eq!(groups(&plan), vec![vec![8], vec![18], vec![8], vec![9, 8]]);
    }

    #[test]
    fn more_missing_chars_than_spares_start_new_batches() {
        let m = sample(); // 3 spares: 8, 18, 20
        let plan = plan_text(&m, "你好世界a", false).unwrap();
        assert_eq!(plan.batches.len(), 2);
        assert_eq!(
            plan.batches[0].borrow,
            vec![
                b(8, 0x0100_4f60, 0x0100_4f60),
                b(18, 0x0100_597d, 0x0100_597d),
                b(20, 0x0100_4e16, 0x0100_4e16)
            ]
        );
        assert_eq!(plan.batches[1].borrow, vec![b(8, 0x0100_754c, 0x0100_754c)]);
        assert_eq!(
            groups(&plan),
            vec![vec![8], vec![18], vec![20], vec![8], vec![11]]
        );
    }

    #[test]
    fn no_spare_is_input_unavailable() {
        let m = Keymap::new(8, 2, vec![0x61, 0x41], vec![]);
        let err = plan_text(&m, "aé", false).unwrap_err();
        assert_eq!(err.code, ErrorCode::InputUnavailable);
        assert!(err.message.contains("'é' (U+00E9)"), "{}", err.message);
    }

    #[test]
    fn control_characters_are_refused() {
        let m = sample();
        let err = plan_text(&m, "a\u{7}", false).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains("U+0007"), "{}", err.message);
    }

    #[test]
    fn overlong_text_is_refused() {
        let m = sample();
        let text = "a".repeat(MAX_TEXT_CHARS + 1);
        assert_eq!(
            plan_text(&m, &text, false).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert!(plan_text(&m, &"a".repeat(MAX_TEXT_CHARS), false).is_ok());
    }

    #[test]
    fn chords_press_modifiers_then_key() {
        let m = sample();
        let chords = parse_chords("ctrl+s ctrl+shift+a shift+1 ctrl+A ctrl+! Return").unwrap();
        let plan = plan_chords(&m, &chords).unwrap();
        assert_eq!(
            groups(&plan),
            vec![
                vec![10, 12],
                vec![10, 9, 11],
                vec![9, 14],
                vec![10, 11],
                vec![10, 9, 14],
                vec![15],
            ]
        );
    }

    #[test]
    fn chord_with_missing_key_borrows() {
        let m = sample();
        let plan = plan_chords(&m, &parse_chords("ctrl+é").unwrap()).unwrap();
        assert_eq!(plan.batches[0].borrow, vec![b(8, 0xe9, 0xc9)]);
        assert_eq!(groups(&plan), vec![vec![10, 8]]);
    }

    #[test]
    fn chord_with_missing_modifier_is_refused() {
        let m = sample();
        let err = plan_chords(&m, &parse_chords("super+a").unwrap()).unwrap_err();
        assert_eq!(err.code, ErrorCode::InputUnavailable);
        assert!(err.message.contains("super+a"), "{}", err.message);
        assert!(
            err.message.contains(&format!("0x{XK_SUPER_L:x}")),
            "{}",
            err.message
        );
    }

    #[test]
    fn describes_keysyms() {
        assert_eq!(describe_keysym(0xe9), "'é' (U+00E9)");
        assert_eq!(describe_keysym(0x0100_4f60), "'你' (U+4F60)");
        assert_eq!(describe_keysym(XK_RETURN), "Return");
        assert_eq!(describe_keysym(0xffbe), "keysym 0xffbe");
    }
}

//! The core keyboard mapping as data: which keycode (and Shift/AltGr level) types a
//! keysym, which keycodes are modifiers, and which keycodes are spare.
//!
//! Built from one `GetKeyboardMapping` and one `GetModifierMapping` reply; pure after
//! that, so lookups are tested on hand-made maps. It never changes the server's map
//! (see `remap.rs` for that).
//!
//! Column layout (X11 protocol §5 "Keyboards", and XKB's core-map export): column 0
//! is group 1 level 1, column 1 group 1 level 2 (Shift), columns 2–3 group 2 (not
//! used here: reaching them needs a group switch), columns 4–5 group 1 levels 3–4
//! (AltGr, i.e. `ISO_Level3_Shift`, without and with Shift).

use super::keysym::{
    Keysym, NO_SYMBOL, XK_ALT_L, XK_ALT_R, XK_CONTROL_L, XK_CONTROL_R, XK_HYPER_L, XK_HYPER_R,
    XK_ISO_LEVEL3_SHIFT, XK_META_L, XK_META_R, XK_SHIFT_L, XK_SHIFT_R, XK_SUPER_L, XK_SUPER_R,
    canonical, case_pair,
};

/// The shift level a keysym sits at on its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// No modifier.
    Base,
    /// With Shift.
    Shift,
    /// With AltGr (`ISO_Level3_Shift`).
    AltGr,
    /// With AltGr and Shift.
    AltGrShift,
}

impl Level {
    const ALL: [Level; 4] = [Level::Base, Level::Shift, Level::AltGr, Level::AltGrShift];

    pub fn needs_shift(self) -> bool {
        matches!(self, Level::Shift | Level::AltGrShift)
    }

    pub fn needs_level3(self) -> bool {
        matches!(self, Level::AltGr | Level::AltGrShift)
    }
}

/// A snapshot of the server's core keyboard mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keymap {
    min_keycode: u8,
    per_keycode: usize,
    keysyms: Vec<Keysym>,
    modifier_keycodes: Vec<u8>,
}

impl Keymap {
    /// `keysyms` is the `GetKeyboardMapping` reply for `min_keycode..` with
    /// `per_keycode` keysyms per keycode; `modifier_keycodes` the non-zero keycodes of
    /// the `GetModifierMapping` reply.
    pub fn new(
        min_keycode: u8,
        per_keycode: u8,
        keysyms: Vec<Keysym>,
        modifier_keycodes: Vec<u8>,
    ) -> Keymap {
        let per_keycode = usize::from(per_keycode.max(1));
        let mut modifier_keycodes: Vec<u8> =
            modifier_keycodes.into_iter().filter(|&k| k != 0).collect();
        modifier_keycodes.sort_unstable();
        modifier_keycodes.dedup();
        Keymap {
            min_keycode,
            per_keycode,
            keysyms,
            modifier_keycodes,
        }
    }

    /// Keysyms per keycode (the width of every row).
    pub fn per_keycode(&self) -> usize {
        self.per_keycode
    }

    /// All keycodes the mapping covers, ascending.
    pub fn keycodes(&self) -> impl Iterator<Item = u8> + '_ {
        let rows = self.keysyms.len() / self.per_keycode;
        (0..rows).filter_map(|i| u8::try_from(usize::from(self.min_keycode) + i).ok())
    }

    /// The keysyms of one keycode (empty when out of range).
    pub fn row(&self, keycode: u8) -> &[Keysym] {
        let Some(i) = usize::from(keycode).checked_sub(usize::from(self.min_keycode)) else {
            return &[];
        };
        let start = i * self.per_keycode;
        self.keysyms
            .get(start..start + self.per_keycode)
            .unwrap_or(&[])
    }

    fn column(&self, keycode: u8, col: usize) -> Keysym {
        self.row(keycode).get(col).copied().unwrap_or(NO_SYMBOL)
    }

    /// The keysym `keycode` types at `level`, with the core protocol's rule for a
    /// group whose second element is `NoSymbol`: an alphabetic `K` acts as
    /// `(lower(K), upper(K))`, anything else as `(K, K)`.
    pub fn keysym_at(&self, keycode: u8, level: Level) -> Keysym {
        match level {
            Level::Base | Level::Shift => {
                let (c0, c1) = (self.column(keycode, 0), self.column(keycode, 1));
                let (base, shifted) = if c1 == NO_SYMBOL {
                    let (lower, upper) = case_pair(c0);
                    if lower != upper {
                        (lower, upper)
                    } else {
                        (c0, c0)
                    }
                } else {
                    (c0, c1)
                };
                if level == Level::Base { base } else { shifted }
            }
            Level::AltGr => self.column(keycode, 4),
            Level::AltGrShift => self.column(keycode, 5),
        }
    }

    /// True when `keycode` types a letter pair, lower case without Shift and its
    /// upper case with Shift: the keys whose case Caps Lock inverts.
    pub fn is_cased(&self, keycode: u8) -> bool {
        let base = self.keysym_at(keycode, Level::Base);
        let shifted = self.keysym_at(keycode, Level::Shift);
        base != shifted && case_pair(base) == (base, shifted)
    }

    /// True when `keycode` is bound to a modifier (`GetModifierMapping`).
    pub fn is_modifier_keycode(&self, keycode: u8) -> bool {
        self.modifier_keycodes.binary_search(&keycode).is_ok()
    }

    /// The keycode and level that type `keysym`, preferring fewer modifiers, then the
    /// lowest keycode. Levels needing Shift or AltGr are considered only when the map
    /// has a Shift or AltGr modifier key.
    pub fn find(&self, keysym: Keysym) -> Option<(u8, Level)> {
        if keysym == NO_SYMBOL {
            return None;
        }
        let target = canonical(keysym);
        let has_shift = self.modifier_key(XK_SHIFT_L).is_some();
        let has_level3 = self.modifier_key(XK_ISO_LEVEL3_SHIFT).is_some();
        Level::ALL
            .into_iter()
            .filter(|l| (!l.needs_shift() || has_shift) && (!l.needs_level3() || has_level3))
            .find_map(|level| {
                self.keycodes()
                    .find(|&kc| {
                        let ks = self.keysym_at(kc, level);
                        ks != NO_SYMBOL && canonical(ks) == target
                    })
                    .map(|kc| (kc, level))
            })
    }

    /// The keycode of a modifier keysym (or its left/right twin), bound in the
    /// modifier map; `None` when the map has no such key.
    pub fn modifier_key(&self, keysym: Keysym) -> Option<u8> {
        twins(keysym).iter().find_map(|&ks| {
            self.keycodes()
                .find(|&kc| self.is_modifier_keycode(kc) && self.row(kc).contains(&ks))
        })
    }

    /// Keycodes that type nothing and are no modifier: free to borrow for a keysym the
    /// map lacks. Ascending.
    pub fn spare_keycodes(&self) -> Vec<u8> {
        self.keycodes()
            .filter(|&kc| {
                !self.is_modifier_keycode(kc) && self.row(kc).iter().all(|&k| k == NO_SYMBOL)
            })
            .collect()
    }

    /// The row to install on a borrowed keycode: `lower` without Shift, `upper` with
    /// it, the rest `NoSymbol`. Pass the same keysym twice for a character without
    /// case: both columns must be filled, because a lone upper-case `É` would act as
    /// `(é, É)` and type `é` without Shift.
    pub fn borrowed_row(&self, lower: Keysym, upper: Keysym) -> Vec<Keysym> {
        let mut row = vec![NO_SYMBOL; self.per_keycode];
        row[0] = lower;
        if let Some(slot) = row.get_mut(1) {
            *slot = upper;
        }
        row
    }
}

/// A modifier keysym followed by the equivalent keys to try when it is missing.
fn twins(keysym: Keysym) -> Vec<Keysym> {
    let alternates: &[Keysym] = match keysym {
        XK_SHIFT_L => &[XK_SHIFT_R],
        XK_SHIFT_R => &[XK_SHIFT_L],
        XK_CONTROL_L => &[XK_CONTROL_R],
        XK_CONTROL_R => &[XK_CONTROL_L],
        XK_ALT_L => &[XK_ALT_R, XK_META_L],
        XK_ALT_R => &[XK_ALT_L],
        XK_META_L => &[XK_META_R],
        XK_META_R => &[XK_META_L],
        XK_SUPER_L => &[XK_SUPER_R],
        XK_SUPER_R => &[XK_SUPER_L],
        XK_HYPER_L => &[XK_HYPER_R],
        XK_HYPER_R => &[XK_HYPER_L],
        _ => &[],
    };
    std::iter::once(keysym)
        .chain(alternates.iter().copied())
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small US-like map, 6 keysyms per keycode, keycodes 8..=20:
    ///
    /// ```text
    ///  8  (spare)          13  e E  €(level3)       18 (spare)
    ///  9  Shift_L [mod]    14  1 exclam             19 ISO_Level3_Shift [mod]
    /// 10  Control_L [mod]  15  Return               20 (spare)
    /// 11  a A              16  x (lone, acts x X)
    /// 12  s S              17  space
    /// ```
    pub(crate) fn sample() -> Keymap {
        let per = 6;
        let rows: Vec<[Keysym; 6]> = vec![
            [0; 6],
            [XK_SHIFT_L, 0, 0, 0, 0, 0],
            [XK_CONTROL_L, 0, 0, 0, 0, 0],
            [0x61, 0x41, 0, 0, 0, 0],
            [0x73, 0x53, 0, 0, 0, 0],
            [0x65, 0x45, 0, 0, 0x20ac, 0],
            [0x31, 0x21, 0, 0, 0, 0],
            [0xff0d, 0, 0, 0, 0, 0],
            [0x78, 0, 0, 0, 0, 0],
            [0x20, 0, 0, 0, 0, 0],
            [0; 6],
            [XK_ISO_LEVEL3_SHIFT, 0, 0, 0, 0, 0],
            [0; 6],
        ];
        Keymap::new(8, per, rows.concat(), vec![9, 10, 19, 0, 0])
    }

    #[test]
    fn finds_levels() {
        let m = sample();
        assert_eq!(m.find(0x61), Some((11, Level::Base)));
        assert_eq!(m.find(0x41), Some((11, Level::Shift)));
        assert_eq!(m.find(0x21), Some((14, Level::Shift)));
        assert_eq!(m.find(0xff0d), Some((15, Level::Base)));
        assert_eq!(m.find(0x0100_20ac), Some((13, Level::AltGr)));
        assert_eq!(m.find(0xe9), None);
        assert_eq!(m.find(NO_SYMBOL), None);
    }

    #[test]
    fn lone_letter_acts_as_case_pair() {
        let m = sample();
        assert_eq!(m.keysym_at(16, Level::Base), 0x78);
        assert_eq!(m.keysym_at(16, Level::Shift), 0x58);
        assert_eq!(m.find(0x58), Some((16, Level::Shift)));
        // Non-letters listed alone stay themselves at the Shift level.
        assert_eq!(m.keysym_at(15, Level::Shift), 0xff0d);
    }

    #[test]
    fn cased_keys_are_letter_pairs() {
        let m = sample();
        assert!(m.is_cased(11)); // a A
        assert!(m.is_cased(16)); // lone x acts as x X
        assert!(!m.is_cased(14)); // 1 !
        assert!(!m.is_cased(15)); // Return
        assert!(!m.is_cased(8)); // spare
    }

    #[test]
    fn unicode_spelling_of_latin1_matches() {
        let m = sample();
        assert_eq!(m.find(0x0100_0061), Some((11, Level::Base)));
    }

    #[test]
    fn modifiers_and_spares() {
        let m = sample();
        assert_eq!(m.modifier_key(XK_SHIFT_L), Some(9));
        assert_eq!(m.modifier_key(XK_SHIFT_R), Some(9));
        assert_eq!(m.modifier_key(XK_CONTROL_L), Some(10));
        assert_eq!(m.modifier_key(XK_ISO_LEVEL3_SHIFT), Some(19));
        assert_eq!(m.modifier_key(XK_SUPER_L), None);
        assert_eq!(m.spare_keycodes(), vec![8, 18, 20]);
        assert_eq!(m.keycodes().count(), 13);
        assert_eq!(m.row(7), &[] as &[Keysym]);
        assert_eq!(m.row(21), &[] as &[Keysym]);
    }

    #[test]
    fn without_shift_key_shift_levels_are_unreachable() {
        let rows: Vec<Keysym> = [[0x61, 0x41], [0, 0]].concat();
        let m = Keymap::new(8, 2, rows, vec![]);
        assert_eq!(m.find(0x61), Some((8, Level::Base)));
        assert_eq!(m.find(0x41), None);
        assert_eq!(m.spare_keycodes(), vec![9]);
    }

    #[test]
    fn borrowed_rows_fill_both_levels() {
        let m = sample();
        assert_eq!(m.borrowed_row(0xc9, 0xc9), vec![0xc9, 0xc9, 0, 0, 0, 0]);
        assert_eq!(m.borrowed_row(0xe9, 0xc9), vec![0xe9, 0xc9, 0, 0, 0, 0]);
        let narrow = Keymap::new(8, 1, vec![0], vec![]);
        assert_eq!(narrow.borrowed_row(0xc9, 0xc9), vec![0xc9]);
    }
}

//! X keysyms: key names to keysyms and characters to and from keysyms.
//!
//! Owns the name table (a curated subset of `keysymdef.h` / `XF86keysym.h` plus
//! friendly aliases) and the Unicode ↔ keysym rules of the X protocol (Appendix A of
//! the X11 protocol spec, "KEYSYM Encoding"). Pure: it never talks to an X server.

/// An X keysym (a 29-bit value in a `u32`).
pub type Keysym = u32;

/// `NoSymbol`: an empty slot in the keyboard mapping.
pub const NO_SYMBOL: Keysym = 0;

pub const XK_BACKSPACE: Keysym = 0xff08;
pub const XK_TAB: Keysym = 0xff09;
pub const XK_RETURN: Keysym = 0xff0d;
pub const XK_ESCAPE: Keysym = 0xff1b;
pub const XK_DELETE: Keysym = 0xffff;
pub const XK_F1: Keysym = 0xffbe;
pub const XK_SHIFT_L: Keysym = 0xffe1;
pub const XK_SHIFT_R: Keysym = 0xffe2;
pub const XK_CONTROL_L: Keysym = 0xffe3;
pub const XK_CONTROL_R: Keysym = 0xffe4;
pub const XK_CAPS_LOCK: Keysym = 0xffe5;
pub const XK_SHIFT_LOCK: Keysym = 0xffe6;
pub const XK_META_L: Keysym = 0xffe7;
pub const XK_META_R: Keysym = 0xffe8;
pub const XK_ALT_L: Keysym = 0xffe9;
pub const XK_ALT_R: Keysym = 0xffea;
pub const XK_SUPER_L: Keysym = 0xffeb;
pub const XK_SUPER_R: Keysym = 0xffec;
pub const XK_HYPER_L: Keysym = 0xffed;
pub const XK_HYPER_R: Keysym = 0xffee;
pub const XK_ISO_LEVEL3_SHIFT: Keysym = 0xfe03;
pub const XK_MODE_SWITCH: Keysym = 0xff7e;
pub const XK_NUM_LOCK: Keysym = 0xff7f;

/// Offset of the Unicode keysym block: keysym = `0x0100_0000 + codepoint`.
const UNICODE_KEYSYM_BASE: u32 = 0x0100_0000;

/// Key names as in `keysymdef.h` and `XF86keysym.h` (without the `XK_` prefix),
/// matched case-insensitively. Single characters are not listed: they go through
/// [`char_to_keysym`].
const KEYSYM_NAMES: &[(&str, Keysym)] = &[
    ("BackSpace", XK_BACKSPACE),
    ("Tab", XK_TAB),
    ("ISO_Left_Tab", 0xfe20),
    ("Linefeed", 0xff0a),
    ("Clear", 0xff0b),
    ("Return", XK_RETURN),
    ("Pause", 0xff13),
    ("Scroll_Lock", 0xff14),
    ("Sys_Req", 0xff15),
    ("Escape", XK_ESCAPE),
    ("Delete", XK_DELETE),
    ("Home", 0xff50),
    ("Left", 0xff51),
    ("Up", 0xff52),
    ("Right", 0xff53),
    ("Down", 0xff54),
    ("Prior", 0xff55),
    ("Page_Up", 0xff55),
    ("Next", 0xff56),
    ("Page_Down", 0xff56),
    ("End", 0xff57),
    ("Begin", 0xff58),
    ("Select", 0xff60),
    ("Print", 0xff61),
    ("Execute", 0xff62),
    ("Insert", 0xff63),
    ("Undo", 0xff65),
    ("Redo", 0xff66),
    ("Menu", 0xff67),
    ("Find", 0xff68),
    ("Cancel", 0xff69),
    ("Help", 0xff6a),
    ("Break", 0xff6b),
    ("Mode_switch", XK_MODE_SWITCH),
    ("Num_Lock", XK_NUM_LOCK),
    ("KP_Space", 0xff80),
    ("KP_Tab", 0xff89),
    ("KP_Enter", 0xff8d),
    ("KP_F1", 0xff91),
    ("KP_F2", 0xff92),
    ("KP_F3", 0xff93),
    ("KP_F4", 0xff94),
    ("KP_Home", 0xff95),
    ("KP_Left", 0xff96),
    ("KP_Up", 0xff97),
    ("KP_Right", 0xff98),
    ("KP_Down", 0xff99),
    ("KP_Prior", 0xff9a),
    ("KP_Page_Up", 0xff9a),
    ("KP_Next", 0xff9b),
    ("KP_Page_Down", 0xff9b),
    ("KP_End", 0xff9c),
    ("KP_Begin", 0xff9d),
    ("KP_Insert", 0xff9e),
    ("KP_Delete", 0xff9f),
    ("KP_Equal", 0xffbd),
    ("KP_Multiply", 0xffaa),
    ("KP_Add", 0xffab),
    ("KP_Separator", 0xffac),
    ("KP_Subtract", 0xffad),
    ("KP_Decimal", 0xffae),
    ("KP_Divide", 0xffaf),
    ("KP_0", 0xffb0),
    ("KP_1", 0xffb1),
    ("KP_2", 0xffb2),
    ("KP_3", 0xffb3),
    ("KP_4", 0xffb4),
    ("KP_5", 0xffb5),
    ("KP_6", 0xffb6),
    ("KP_7", 0xffb7),
    ("KP_8", 0xffb8),
    ("KP_9", 0xffb9),
    ("Shift_L", XK_SHIFT_L),
    ("Shift_R", XK_SHIFT_R),
    ("Control_L", XK_CONTROL_L),
    ("Control_R", XK_CONTROL_R),
    ("Caps_Lock", XK_CAPS_LOCK),
    ("Shift_Lock", XK_SHIFT_LOCK),
    ("Meta_L", XK_META_L),
    ("Meta_R", XK_META_R),
    ("Alt_L", XK_ALT_L),
    ("Alt_R", XK_ALT_R),
    ("Super_L", XK_SUPER_L),
    ("Super_R", XK_SUPER_R),
    ("Hyper_L", XK_HYPER_L),
    ("Hyper_R", XK_HYPER_R),
    ("ISO_Level3_Shift", XK_ISO_LEVEL3_SHIFT),
    // Printable ASCII by name (the keysym equals the code point).
    ("space", 0x20),
    ("exclam", 0x21),
    ("quotedbl", 0x22),
    ("numbersign", 0x23),
    ("dollar", 0x24),
    ("percent", 0x25),
    ("ampersand", 0x26),
    ("apostrophe", 0x27),
    ("parenleft", 0x28),
    ("parenright", 0x29),
    ("asterisk", 0x2a),
    ("plus", 0x2b),
    ("comma", 0x2c),
    ("minus", 0x2d),
    ("period", 0x2e),
    ("slash", 0x2f),
    ("colon", 0x3a),
    ("semicolon", 0x3b),
    ("less", 0x3c),
    ("equal", 0x3d),
    ("greater", 0x3e),
    ("question", 0x3f),
    ("at", 0x40),
    ("bracketleft", 0x5b),
    ("backslash", 0x5c),
    ("bracketright", 0x5d),
    ("asciicircum", 0x5e),
    ("underscore", 0x5f),
    ("grave", 0x60),
    ("braceleft", 0x7b),
    ("bar", 0x7c),
    ("braceright", 0x7d),
    ("asciitilde", 0x7e),
    // Multimedia and browser keys from XF86keysym.h.
    ("XF86AudioLowerVolume", 0x1008_ff11),
    ("XF86AudioMute", 0x1008_ff12),
    ("XF86AudioRaiseVolume", 0x1008_ff13),
    ("XF86AudioPlay", 0x1008_ff14),
    ("XF86AudioStop", 0x1008_ff15),
    ("XF86AudioPrev", 0x1008_ff16),
    ("XF86AudioNext", 0x1008_ff17),
    ("XF86HomePage", 0x1008_ff18),
    ("XF86Mail", 0x1008_ff19),
    ("XF86Search", 0x1008_ff1b),
    ("XF86Calculator", 0x1008_ff1d),
    ("XF86Back", 0x1008_ff26),
    ("XF86Forward", 0x1008_ff27),
    ("XF86Refresh", 0x1008_ff29),
    ("XF86WWW", 0x1008_ff2e),
    ("XF86Copy", 0x1008_ff57),
    ("XF86Cut", 0x1008_ff58),
    ("XF86Paste", 0x1008_ff6d),
];

/// Friendly names (case-insensitive) for keys whose X names are unusual or that other
/// tools spell differently. `cmd`/`command` mean Control: shortcuts written for macOS
/// (`cmd+s`) are Control shortcuts on Linux desktops. `win`, `super` and `meta` all
/// mean the Super ("Windows") key, as in browsers' `Meta`.
const ALIASES: &[(&str, Keysym)] = &[
    ("ctrl", XK_CONTROL_L),
    ("control", XK_CONTROL_L),
    ("ctl", XK_CONTROL_L),
    ("cmd", XK_CONTROL_L),
    ("command", XK_CONTROL_L),
    ("shift", XK_SHIFT_L),
    ("alt", XK_ALT_L),
    ("option", XK_ALT_L),
    ("altgr", XK_ISO_LEVEL3_SHIFT),
    ("super", XK_SUPER_L),
    ("win", XK_SUPER_L),
    ("windows", XK_SUPER_L),
    ("meta", XK_SUPER_L),
    ("hyper", XK_HYPER_L),
    ("enter", XK_RETURN),
    ("ret", XK_RETURN),
    ("esc", XK_ESCAPE),
    ("del", XK_DELETE),
    ("ins", 0xff63),
    ("bksp", XK_BACKSPACE),
    ("backspace", XK_BACKSPACE),
    ("pgup", 0xff55),
    ("pageup", 0xff55),
    ("pgdn", 0xff56),
    ("pgdown", 0xff56),
    ("pagedown", 0xff56),
    ("arrowleft", 0xff51),
    ("arrowup", 0xff52),
    ("arrowright", 0xff53),
    ("arrowdown", 0xff54),
    ("capslock", XK_CAPS_LOCK),
    ("numlock", XK_NUM_LOCK),
    ("scrolllock", 0xff14),
    ("printscreen", 0xff61),
    ("prtsc", 0xff61),
    ("apps", 0xff67),
    ("contextmenu", 0xff67),
];

/// Keysyms that act as modifiers: held while the rest of a chord is pressed and never
/// given an implicit Shift or AltGr level themselves.
pub fn is_modifier(keysym: Keysym) -> bool {
    matches!(
        keysym,
        XK_SHIFT_L
            | XK_SHIFT_R
            | XK_CONTROL_L
            | XK_CONTROL_R
            | XK_CAPS_LOCK
            | XK_SHIFT_LOCK
            | XK_META_L
            | XK_META_R
            | XK_ALT_L
            | XK_ALT_R
            | XK_SUPER_L
            | XK_SUPER_R
            | XK_HYPER_L
            | XK_HYPER_R
            | XK_ISO_LEVEL3_SHIFT
            | XK_MODE_SWITCH
            | XK_NUM_LOCK
    )
}

/// The keysym of one key name: a single character (`a`, `A`, `;`, `é`), an X keysym
/// name (`Return`, `Page_Up`, `F5`, `KP_Enter`, `XF86AudioMute`), an alias (`enter`,
/// `esc`, `del`, `pgup`, `ctrl`, `win`, …), `U+20AC`/`U20AC` for a code point, or
/// `0xff0d` for a raw keysym. Names of more than one character are case-insensitive.
/// `None` when the name is unknown.
pub fn keysym_from_name(name: &str) -> Option<Keysym> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.clone().next()) {
        return char_to_keysym(c);
    }
    if let Some(ks) = ALIASES
        .iter()
        .chain(KEYSYM_NAMES)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, ks)| ks)
    {
        return Some(ks);
    }
    if let Some(ks) = function_key(name) {
        return Some(ks);
    }
    let lower = name.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("u+").or_else(|| lower.strip_prefix('u')) {
        let cp = u32::from_str_radix(hex, 16).ok()?;
        return char::from_u32(cp).and_then(char_to_keysym);
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        let ks = u32::from_str_radix(hex, 16).ok()?;
        return (ks != NO_SYMBOL && ks <= 0x1fff_ffff).then_some(ks);
    }
    None
}

/// `F1` … `F35` (case-insensitive) → `XK_F1 + n - 1`.
fn function_key(name: &str) -> Option<Keysym> {
    let digits = name.strip_prefix('F').or_else(|| name.strip_prefix('f'))?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    (1..=35).contains(&n).then(|| XK_F1 + n - 1)
}

/// The keysym that types `c`: `\n` and `\r` → Return, `\t` → Tab, Latin-1 printable
/// characters → their code point, everything else → `0x0100_0000 + codepoint` (the
/// Unicode keysym block). `None` for other control characters (C0, DEL, C1), which no
/// key types.
pub fn char_to_keysym(c: char) -> Option<Keysym> {
    let cp = c as u32;
    match c {
        '\n' | '\r' => Some(XK_RETURN),
        '\t' => Some(XK_TAB),
        _ if c.is_control() => None,
        _ if cp <= 0xff => Some(cp),
        _ => Some(UNICODE_KEYSYM_BASE + cp),
    }
}

/// Legacy keysyms for common typographic characters that keyboard layouts carry under
/// their old names (`keysymdef.h` comments give the code points).
const LEGACY_KEYSYMS: &[(Keysym, u32)] = &[
    (0x0aa9, 0x2014), // emdash
    (0x0aaa, 0x2013), // endash
    (0x0aae, 0x2026), // ellipsis
    (0x0ad0, 0x2018), // leftsinglequotemark
    (0x0ad1, 0x2019), // rightsinglequotemark
    (0x0ad2, 0x201c), // leftdoublequotemark
    (0x0ad3, 0x201d), // rightdoublequotemark
    (0x20ac, 0x20ac), // EuroSign
];

/// The character a keysym types, for printable Latin-1, the Unicode block and the
/// legacy typographic keysyms (`emdash`, `EuroSign`, quotes…); `None` for function
/// keys, modifiers and keysyms this table does not know.
pub fn keysym_to_char(keysym: Keysym) -> Option<char> {
    let cp = match keysym {
        0x20..=0x7e | 0xa0..=0xff => keysym,
        0x0100_0100..=0x0110_ffff => keysym - UNICODE_KEYSYM_BASE,
        _ => LEGACY_KEYSYMS
            .iter()
            .find(|&&(ks, _)| ks == keysym)
            .map(|&(_, cp)| cp)?,
    };
    char::from_u32(cp)
}

/// One canonical keysym per symbol, so that `0x0100_00e9` and `0xe9` (both `é`), or
/// `emdash` and `U+2014`, compare equal.
pub fn canonical(keysym: Keysym) -> Keysym {
    match keysym {
        0x0100_0020..=0x0100_007e | 0x0100_00a0..=0x0100_00ff => keysym - UNICODE_KEYSYM_BASE,
        _ => match keysym_to_char(keysym) {
            Some(c) => char_to_keysym(c).unwrap_or(keysym),
            None => keysym,
        },
    }
}

/// Lower- and upper-case forms of a keysym, for the core protocol rule that a key
/// listing only `K` types `lower(K)` and, with Shift, `upper(K)`. Keysyms without case
/// return themselves twice.
pub fn case_pair(keysym: Keysym) -> (Keysym, Keysym) {
    let Some(c) = keysym_to_char(keysym) else {
        return (keysym, keysym);
    };
    let lower = one_char(c.to_lowercase()).unwrap_or(c);
    let upper = one_char(c.to_uppercase()).unwrap_or(c);
    let to_ks = |x: char| char_to_keysym(x).unwrap_or(keysym);
    (to_ks(lower), to_ks(upper))
}

/// The only character of a case mapping, or `None` when it expands (`ß` → `SS`).
fn one_char(mut it: impl Iterator<Item = char>) -> Option<char> {
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive_and_aliased() {
        assert_eq!(keysym_from_name("Return"), Some(0xff0d));
        assert_eq!(keysym_from_name("return"), Some(0xff0d));
        assert_eq!(keysym_from_name("enter"), Some(0xff0d));
        assert_eq!(keysym_from_name("ESC"), Some(0xff1b));
        assert_eq!(keysym_from_name("del"), Some(0xffff));
        assert_eq!(keysym_from_name("pgup"), Some(0xff55));
        assert_eq!(keysym_from_name("Page_Down"), Some(0xff56));
        assert_eq!(keysym_from_name("ctrl"), Some(XK_CONTROL_L));
        assert_eq!(keysym_from_name("cmd"), Some(XK_CONTROL_L));
        assert_eq!(keysym_from_name("win"), Some(XK_SUPER_L));
        assert_eq!(keysym_from_name("super"), Some(XK_SUPER_L));
        assert_eq!(keysym_from_name("meta"), Some(XK_SUPER_L));
        assert_eq!(keysym_from_name("altgr"), Some(XK_ISO_LEVEL3_SHIFT));
        assert_eq!(keysym_from_name("kp_enter"), Some(0xff8d));
        assert_eq!(keysym_from_name("xf86audiomute"), Some(0x1008_ff12));
        assert_eq!(keysym_from_name("plus"), Some(0x2b));
    }

    #[test]
    fn function_keys_cover_f1_to_f35_only() {
        assert_eq!(keysym_from_name("F1"), Some(0xffbe));
        assert_eq!(keysym_from_name("f4"), Some(0xffc1));
        assert_eq!(keysym_from_name("F12"), Some(0xffc9));
        assert_eq!(keysym_from_name("F35"), Some(0xffe0));
        assert_eq!(keysym_from_name("F36"), None);
        assert_eq!(keysym_from_name("F0"), None);
        assert_eq!(keysym_from_name("F01"), None);
    }

    #[test]
    fn single_characters_are_case_sensitive() {
        assert_eq!(keysym_from_name("a"), Some(0x61));
        assert_eq!(keysym_from_name("A"), Some(0x41));
        assert_eq!(keysym_from_name(";"), Some(0x3b));
        assert_eq!(keysym_from_name("é"), Some(0xe9));
        assert_eq!(keysym_from_name("你"), Some(0x0100_4f60));
    }

    #[test]
    fn code_points_and_raw_keysyms() {
        assert_eq!(keysym_from_name("U+20AC"), Some(0x0100_20ac));
        assert_eq!(keysym_from_name("u20ac"), Some(0x0100_20ac));
        assert_eq!(keysym_from_name("U+0041"), Some(0x41));
        assert_eq!(keysym_from_name("0xff0d"), Some(0xff0d));
        assert_eq!(keysym_from_name("0x0"), None);
        assert_eq!(keysym_from_name("U+D800"), None);
    }

    #[test]
    fn unknown_names_are_none() {
        assert_eq!(keysym_from_name("frobnicate"), None);
        assert_eq!(keysym_from_name(""), None);
        assert_eq!(keysym_from_name("Ctrl_X"), None);
    }

    #[test]
    fn chars_map_to_keysyms() {
        assert_eq!(char_to_keysym('a'), Some(0x61));
        assert_eq!(char_to_keysym('~'), Some(0x7e));
        assert_eq!(char_to_keysym(' '), Some(0x20));
        assert_eq!(char_to_keysym('é'), Some(0xe9));
        assert_eq!(char_to_keysym('\u{a0}'), Some(0xa0));
        assert_eq!(char_to_keysym('—'), Some(0x0100_2014));
        assert_eq!(char_to_keysym('好'), Some(0x0100_597d));
        assert_eq!(char_to_keysym('😀'), Some(0x0101_f600));
        assert_eq!(char_to_keysym('\n'), Some(XK_RETURN));
        assert_eq!(char_to_keysym('\r'), Some(XK_RETURN));
        assert_eq!(char_to_keysym('\t'), Some(XK_TAB));
        assert_eq!(char_to_keysym('\u{7}'), None);
        assert_eq!(char_to_keysym('\u{7f}'), None);
        assert_eq!(char_to_keysym('\u{85}'), None);
    }

    #[test]
    fn keysyms_map_back_to_chars() {
        for c in ['a', 'Z', '~', 'é', 'ÿ', '—', '你', '😀'] {
            assert_eq!(keysym_to_char(char_to_keysym(c).unwrap()), Some(c), "{c}");
        }
        assert_eq!(keysym_to_char(0x0aa9), Some('—'));
        assert_eq!(keysym_to_char(0x20ac), Some('€'));
        assert_eq!(keysym_to_char(XK_RETURN), None);
        assert_eq!(keysym_to_char(XK_SHIFT_L), None);
    }

    #[test]
    fn canonical_unifies_spellings() {
        assert_eq!(canonical(0x0100_00e9), 0xe9);
        assert_eq!(canonical(0x0100_0041), 0x41);
        assert_eq!(canonical(0x0aa9), 0x0100_2014);
        assert_eq!(canonical(0x20ac), 0x0100_20ac);
        assert_eq!(canonical(XK_RETURN), XK_RETURN);
    }

    #[test]
    fn case_pairs() {
        assert_eq!(case_pair(0x61), (0x61, 0x41));
        assert_eq!(case_pair(0x41), (0x61, 0x41));
        assert_eq!(case_pair(0xe9), (0xe9, 0xc9));
        assert_eq!(case_pair(0x31), (0x31, 0x31));
        assert_eq!(case_pair(XK_RETURN), (XK_RETURN, XK_RETURN));
        // ß upper-cases to "SS": no single-keysym upper case, so it stays itself.
        assert_eq!(case_pair(0xdf), (0xdf, 0xdf));
        // Cyrillic in the Unicode block.
        assert_eq!(case_pair(0x0100_0436), (0x0100_0436, 0x0100_0416));
    }

    #[test]
    fn modifiers_are_recognised() {
        assert!(is_modifier(XK_CONTROL_L));
        assert!(is_modifier(XK_ISO_LEVEL3_SHIFT));
        assert!(!is_modifier(XK_RETURN));
        assert!(!is_modifier(0x61));
    }
}

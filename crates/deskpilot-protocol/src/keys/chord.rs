//! Chord syntax: `"ctrl+s shift+Tab Return ctrl+shift+Left alt+F4"` → keysyms.
//!
//! Owns parsing only; it never looks at a keyboard mapping or an X server. Chords are
//! separated by whitespace; the keys of one chord by `+`. A literal plus is written
//! `plus`, or as the last key (`ctrl++`, or `+` alone).

use crate::ComputerError;

use super::keysym::{Keysym, keysym_from_name};
use crate::Result;

/// Upper bound on keys in one chord. Real shortcuts use at most four (three modifiers
/// and a key); eight leaves room while refusing nonsense before any key is pressed.
pub const MAX_KEYS_PER_CHORD: usize = 8;

/// Upper bound on chords in one `send_chords` call, so one call stays a bounded burst
/// of input (each chord is a few X requests).
pub const MAX_CHORDS: usize = 256;

/// One chord: keys pressed in order, then released in reverse order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chord {
    /// The chord as written (`"ctrl+shift+Left"`), for messages.
    pub text: String,
    /// Keysyms in press order.
    pub keys: Vec<Keysym>,
}

/// Parses space-separated chords.
///
/// In a chord of several keys a single Latin letter names the key, not the case:
/// `ctrl+A` is `ctrl+a`; write `ctrl+shift+a` for Shift. A single letter on its own
/// (`A`) types that character, with Shift if needed.
///
/// Errors: `InvalidArgument` for an empty string, an empty key (`ctrl+`), an unknown
/// name (the message lists accepted forms), or more than [`MAX_KEYS_PER_CHORD`] keys
/// or [`MAX_CHORDS`] chords.
pub fn parse_chords(chords: &str) -> Result<Vec<Chord>> {
    let tokens: Vec<&str> = chords.split_whitespace().collect();
    if tokens.is_empty() {
        return Err(ComputerError::invalid(
            "no keys given; send chords such as \"ctrl+s\", \"shift+Tab\" or \"Return\"",
        ));
    }
    if tokens.len() > MAX_CHORDS {
        return Err(ComputerError::invalid(format!(
            "{} chords in one call; at most {MAX_CHORDS} are accepted",
            tokens.len()
        )));
    }
    tokens.into_iter().map(parse_chord).collect()
}

fn parse_chord(token: &str) -> Result<Chord> {
    let names: Vec<String> = if token == "+" {
        vec!["+".to_owned()]
    } else if let Some(head) = token.strip_suffix("++") {
        let mut v = join_code_points(head.split('+').collect());
        v.push("+".to_owned());
        v
    } else {
        join_code_points(token.split('+').collect())
    };
    if names.iter().any(|n| n.is_empty()) {
        return Err(ComputerError::invalid(format!(
            "chord \"{token}\" has an empty key; join keys with '+' (\"ctrl+s\") and write a plus key as \"plus\""
        )));
    }
    if names.len() > MAX_KEYS_PER_CHORD {
        return Err(ComputerError::invalid(format!(
            "chord \"{token}\" has {} keys; at most {MAX_KEYS_PER_CHORD} are accepted",
            names.len()
        )));
    }
    let fold_letters = names.len() > 1;
    let keys = names
        .iter()
        .map(|name| {
            let name = if fold_letters {
                fold_letter(name)
            } else {
                name.clone()
            };
            keysym_from_name(&name).ok_or_else(|| unknown_key(&name, token))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Chord {
        text: token.to_owned(),
        keys,
    })
}

/// Joins a `U` key and the hex digits after its `+` back into one code-point name:
/// `"ctrl+U+20AC"` splits into `ctrl`, `U`, `20AC`, which name `ctrl` and `U+20AC`.
/// Four to six hex digits are a code point; `ctrl+u+a` stays three keys.
fn join_code_points(names: Vec<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    let mut it = names.into_iter().peekable();
    while let Some(n) = it.next() {
        let hex = |s: &str| (4..=6).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
        if n.eq_ignore_ascii_case("u") && it.peek().is_some_and(|next| hex(next)) {
            let digits = it.next().unwrap_or_default();
            out.push(format!("U+{digits}"));
        } else {
            out.push(n.to_owned());
        }
    }
    out
}

/// `"A"` → `"a"` for a single alphabetic character with a one-character lower case.
fn fold_letter(name: &str) -> String {
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_alphabetic() => {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => l.to_string(),
                _ => name.to_owned(),
            }
        }
        _ => name.to_owned(),
    }
}

fn unknown_key(name: &str, chord: &str) -> ComputerError {
    ComputerError::invalid(format!(
        "unknown key name \"{name}\" in chord \"{chord}\"; use X keysym names or aliases \
         such as ctrl, shift, alt, super, Return (enter), Tab, Escape (esc), BackSpace, \
         Delete (del), Home, End, Left, Page_Up (pgup), F1..F35, a single character \
         (a, 7, ;, é) or a code point (U+20AC)"
    ))
    .with_detail(serde_json::json!({ "key": name, "chord": chord }))
}

#[cfg(test)]
mod tests {
    use super::super::keysym::{XK_ALT_L, XK_CONTROL_L, XK_RETURN, XK_SHIFT_L, XK_TAB};
    use super::*;
    use crate::ErrorCode;

    fn keys(s: &str) -> Vec<Vec<Keysym>> {
        parse_chords(s)
            .unwrap()
            .into_iter()
            .map(|c| c.keys)
            .collect()
    }

    #[test]
    fn a_code_point_with_a_plus_is_one_key() {
        assert_eq!(keys("U+0020"), vec![vec![0x20]]);
        assert_eq!(keys("ctrl+U+20AC"), vec![vec![XK_CONTROL_L, 0x0100_20ac]]);
        assert_eq!(keys("ctrl+u+a").len(), 1);
        assert_eq!(keys("ctrl+u+a")[0].len(), 3);
    }

    #[test]
    fn parses_a_sequence_of_chords() {
        assert_eq!(
            keys("ctrl+s shift+Tab Return ctrl+shift+Left alt+F4"),
            vec![
                vec![XK_CONTROL_L, 0x73],
                vec![XK_SHIFT_L, XK_TAB],
                vec![XK_RETURN],
                vec![XK_CONTROL_L, XK_SHIFT_L, 0xff51],
                vec![XK_ALT_L, 0xffc1],
            ]
        );
        let chords = parse_chords("  ctrl+s\tReturn ").unwrap();
        assert_eq!(chords[0].text, "ctrl+s");
        assert_eq!(chords.len(), 2);
    }

    #[test]
    fn letters_fold_only_inside_chords() {
        assert_eq!(keys("ctrl+A"), vec![vec![XK_CONTROL_L, 0x61]]);
        assert_eq!(keys("A"), vec![vec![0x41]]);
        assert_eq!(keys("ctrl+É"), vec![vec![XK_CONTROL_L, 0xe9]]);
    }

    #[test]
    fn literal_plus() {
        assert_eq!(keys("+"), vec![vec![0x2b]]);
        assert_eq!(keys("ctrl++"), vec![vec![XK_CONTROL_L, 0x2b]]);
        assert_eq!(keys("ctrl+plus"), vec![vec![XK_CONTROL_L, 0x2b]]);
        assert_eq!(keys("ctrl+minus"), vec![vec![XK_CONTROL_L, 0x2d]]);
    }

    #[test]
    fn rejects_bad_input_with_invalid_argument() {
        for bad in [
            "",
            "   ",
            "ctrl+",
            "+ctrl",
            "ctrl++s",
            "ctrl+frob",
            "Enterr",
        ] {
            let err = parse_chords(bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad:?}");
        }
        let err = parse_chords("ctrl+frob").unwrap_err();
        assert!(err.message.contains("\"frob\""), "{}", err.message);
        assert!(err.message.contains("Return"), "{}", err.message);
    }

    #[test]
    fn bounds_are_enforced() {
        let long = vec!["a"; MAX_CHORDS + 1].join(" ");
        assert_eq!(
            parse_chords(&long).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            parse_chords(&vec!["a"; MAX_CHORDS].join(" "))
                .unwrap()
                .len(),
            MAX_CHORDS
        );
        let many = ["ctrl"; MAX_KEYS_PER_CHORD + 1].join("+");
        assert_eq!(
            parse_chords(&many).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }
}

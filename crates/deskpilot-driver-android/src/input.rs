//! Text and keys as `adb shell input` takes them.
//!
//! - `input text ARG` types printable ASCII only and turns `%s` into a space (there is
//!   no way to type a literal `%` followed by `s` in one call), so text is cut into
//!   [`input_text_args`]: spaces spelled `%s`, a new call wherever a `%` is followed
//!   by an `s`. The device shell's quoting is [`crate::sh_quote`]'s.
//! - Other characters go through the ADB Keyboard IME's `ADB_INPUT_B64` broadcast,
//!   when that keyboard is the current one; [`untypable`] names them otherwise.
//! - Keys are parsed by [`deskpilot_protocol::keys::parse_chords`] — the same keysyms
//!   the host's policy judged — and mapped to Android keycodes by [`keycode`].

use deskpilot_protocol::Result;
use deskpilot_protocol::keys::{Keysym, parse_chords};
use deskpilot_protocol::{ComputerError, ErrorCode};

/// The longest text one `input text` call is given, characters: a longer text is
/// sent in several calls (each a bounded burst of key events on the device).
pub const MAX_TEXT_ARG: usize = 200;

/// Whether `input text` can type `c`: printable ASCII (U+0020–U+007E).
pub fn typable(c: char) -> bool {
    (' '..='~').contains(&c)
}

/// The `input text` arguments that type `text` exactly (before the device shell's
/// quoting): spaces as `%s`, a new argument where a `%` is followed by an `s` and
/// every [`MAX_TEXT_ARG`] characters. `None` when a character is not
/// [`typable`]. The empty text is no argument.
pub fn input_text_args(text: &str) -> Option<Vec<String>> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut chars = 0usize;
    let mut after_percent = false;
    for c in text.chars() {
        if !typable(c) {
            return None;
        }
        if (c == 's' && after_percent) || chars >= MAX_TEXT_ARG {
            args.push(std::mem::take(&mut cur));
            chars = 0;
        }
        if c == ' ' {
            cur.push_str("%s");
        } else {
            cur.push(c);
        }
        chars += 1;
        after_percent = c == '%';
    }
    if !cur.is_empty() {
        args.push(cur);
    }
    Some(args)
}

/// The characters of `text` that `input text` cannot type, in order, each once.
pub fn untypable(text: &str) -> Vec<char> {
    let mut v = Vec::new();
    for c in text.chars() {
        if !typable(c) && !v.contains(&c) {
            v.push(c);
        }
    }
    v
}

/// `chars` for a message: each quoted, control characters escaped (`'é', '\n'`).
pub fn name_chars(chars: &[char]) -> String {
    chars
        .iter()
        .map(|c| format!("{:?}", c))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Android keycodes of X keysyms (`KeyEvent.KEYCODE_*`): editing and navigation
/// keys, function keys, media and volume keys, Back and Forward.
const KEYCODES: &[(Keysym, u32)] = &[
    (0xff0d, 66),       // Return → ENTER
    (0xff8d, 66),       // KP_Enter → ENTER
    (0xfe34, 66),       // ISO_Enter → ENTER
    (0xff0a, 66),       // Linefeed → ENTER
    (0xff08, 67),       // BackSpace → DEL
    (0xffff, 112),      // Delete → FORWARD_DEL
    (0xff09, 61),       // Tab → TAB
    (0xff1b, 111),      // Escape → ESCAPE
    (0xff50, 122),      // Home → MOVE_HOME (the start of the line, not the home screen)
    (0xff57, 123),      // End → MOVE_END
    (0xff51, 21),       // Left → DPAD_LEFT
    (0xff52, 19),       // Up → DPAD_UP
    (0xff53, 22),       // Right → DPAD_RIGHT
    (0xff54, 20),       // Down → DPAD_DOWN
    (0xff55, 92),       // Page_Up → PAGE_UP
    (0xff56, 93),       // Page_Down → PAGE_DOWN
    (0xff63, 124),      // Insert → INSERT
    (0xff67, 82),       // Menu → MENU
    (0x0020, 62),       // space → SPACE
    (0x1008_ff26, 4),   // XF86Back → BACK
    (0x1008_ff27, 125), // XF86Forward → FORWARD
    (0x1008_ff1b, 84),  // XF86Search → SEARCH
    (0x1008_ff11, 25),  // XF86AudioLowerVolume → VOLUME_DOWN
    (0x1008_ff13, 24),  // XF86AudioRaiseVolume → VOLUME_UP
    (0x1008_ff12, 164), // XF86AudioMute → VOLUME_MUTE
    (0x1008_ff14, 85),  // XF86AudioPlay → MEDIA_PLAY_PAUSE
    (0x1008_ff15, 86),  // XF86AudioStop → MEDIA_STOP
    (0x1008_ff16, 88),  // XF86AudioPrev → MEDIA_PREVIOUS
    (0x1008_ff17, 87),  // XF86AudioNext → MEDIA_NEXT
];

/// The Android keycode of a keysym: [`KEYCODES`], then F1–F12 (131–142). `None`
/// for modifiers, characters and keys Android has no code for.
pub fn keycode(keysym: Keysym) -> Option<u32> {
    if let Some(&(_, code)) = KEYCODES.iter().find(|(k, _)| *k == keysym) {
        return Some(code);
    }
    // F1 (0xffbe) … F12 (0xffc9) → KEYCODE_F1 (131) … KEYCODE_F12 (142).
    (0xffbe..=0xffc9)
        .contains(&keysym)
        .then(|| 131 + (keysym - 0xffbe))
}

/// One thing `keys` sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Press {
    /// `input keyevent CODE`.
    Key(u32),
    /// Text typed with `input text` (printable ASCII) or the IME.
    Text(String),
}

/// The presses of `chords` (`"Return"`, `"BackSpace BackSpace"`, `"a"`): a key with
/// an Android keycode is `input keyevent`, a one-character chord is typed as text.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for what does not parse;
/// `COMPUTER_INPUT_UNAVAILABLE` for a chord with modifiers (`input keyevent` sends
/// one key at a time) or a key Android has no code for, naming it.
pub fn plan_chords(chords: &str) -> Result<Vec<Press>> {
    let mut out = Vec::new();
    for chord in parse_chords(chords)? {
        let [ks] = chord.keys[..] else {
            return Err(ComputerError::new(
                ErrorCode::InputUnavailable,
                format!(
                    "chord {:?} holds keys together; `adb shell input keyevent` sends one key at a time, so chords with modifiers cannot be sent to an Android device (use the back, home and recents ops for navigation)",
                    chord.text
                ),
            ));
        };
        if let Some(code) = keycode(ks) {
            out.push(Press::Key(code));
            continue;
        }
        match deskpilot_protocol::keys::keysym_to_char(ks) {
            Some(c) => out.push(Press::Text(c.to_string())),
            None => {
                return Err(ComputerError::new(
                    ErrorCode::InputUnavailable,
                    format!(
                        "key {:?} has no Android keycode this driver sends; keys it sends: Return, BackSpace, Delete, Tab, Escape, Home, End, arrows, Page_Up, Page_Down, Insert, Menu, space, F1–F12, XF86Back, volume and media keys, and single characters",
                        chord.text
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// The presses that type `text` for `keys`: runs of text, with Tab, line feed and
/// carriage return as their keys (TAB, ENTER).
pub fn plan_text(text: &str) -> Vec<Press> {
    let mut out = Vec::new();
    let mut run = String::new();
    for c in text.chars() {
        let code = match c {
            '\t' => Some(61),
            '\n' | '\r' => Some(66),
            _ => None,
        };
        match code {
            Some(k) => {
                if !run.is_empty() {
                    out.push(Press::Text(std::mem::take(&mut run)));
                }
                out.push(Press::Key(k));
            }
            None => run.push(c),
        }
    }
    if !run.is_empty() {
        out.push(Press::Text(run));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Android's `input text ARG` types (`InputShellCommand.sendText`).
    fn android_types(arg: &str) -> String {
        let mut b: Vec<char> = arg.chars().collect();
        let mut escape = false;
        let mut i = 0;
        while i < b.len() {
            if escape {
                escape = false;
                if b[i] == 's' {
                    b[i] = ' ';
                    i -= 1;
                    b.remove(i);
                }
            }
            if b[i] == '%' {
                escape = true;
            }
            i += 1;
        }
        b.into_iter().collect()
    }

    #[test]
    fn every_printable_text_arrives_as_written() {
        for t in [
            "hello world",
            "a b&c;d$e%f'g\"h",
            "100%",
            "50%sale",
            "%s",
            "%%s",
            "% s",
            "%",
            "%%",
            "s%",
            "  two  spaces ",
            "$(rm -rf /); `id` | cat > x < y * ? [a] {b} ~ # ! \\",
        ] {
            let args = input_text_args(t).unwrap();
            let typed: String = args.iter().map(|a| android_types(a)).collect();
            assert_eq!(typed, t, "{args:?}");
            assert!(args.iter().all(|a| !a.is_empty()));
        }
        assert_eq!(input_text_args("a b").unwrap(), ["a%sb"]);
        assert_eq!(input_text_args("50%sale").unwrap(), ["50%", "sale"]);
        assert_eq!(input_text_args("").unwrap(), Vec::<String>::new());
        let long = "x".repeat(MAX_TEXT_ARG * 2 + 1);
        assert_eq!(input_text_args(&long).unwrap().len(), 3);
    }

    #[test]
    fn what_input_text_cannot_type_is_named() {
        assert_eq!(input_text_args("héllo"), None);
        assert_eq!(input_text_args("a\tb"), None);
        assert_eq!(untypable("héllo 日本 é\n"), vec!['é', '日', '本', '\n']);
        assert_eq!(name_chars(&['é', '\n']), "'é', '\\n'");
    }

    #[test]
    fn keys_map_to_android_keycodes() {
        assert_eq!(
            plan_chords("Return BackSpace Delete Tab Escape").unwrap(),
            [66, 67, 112, 61, 111].map(Press::Key)
        );
        assert_eq!(
            plan_chords("Home End Up Down Left Right").unwrap(),
            [122, 123, 19, 20, 21, 22].map(Press::Key)
        );
        assert_eq!(
            plan_chords("F1 F12 XF86Back space").unwrap(),
            [131, 142, 4, 62].map(Press::Key)
        );
        assert_eq!(
            plan_chords("a A ;").unwrap(),
            ["a", "A", ";"].map(|s| Press::Text(s.into()))
        );
        let e = plan_chords("ctrl+a").unwrap_err();
        assert_eq!(e.code, ErrorCode::InputUnavailable);
        assert!(e.message.contains("ctrl+a"), "{}", e.message);
        let e = plan_chords("Pause").unwrap_err();
        assert_eq!(e.code, ErrorCode::InputUnavailable);
        assert_eq!(
            plan_chords("nonsense-key").unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn text_for_keys_keeps_tab_and_line_breaks_as_keys() {
        assert_eq!(
            plan_text("ab\tc\n"),
            vec![
                Press::Text("ab".into()),
                Press::Key(61),
                Press::Text("c".into()),
                Press::Key(66)
            ]
        );
        assert_eq!(plan_text(""), vec![]);
    }
}

//! What an effect reaches, whatever it is spelled as (docs/ARCHITECTURE.md §7.6, §13):
//! the keys of one chord that land after focus moved, the other spellings of Enter,
//! a mnemonic that presses a button, a paste, and a toggle that reveals a password.
//! Pure rules over keysyms and the window's tree as read just before dispatch.

use deskpilot_core::{Node, Role, State};
use deskpilot_protocol::keys::{Keysym, keysym, parse_chords};
use deskpilot_protocol::types::Selection;

use crate::irreversible::{Irreversible, classify_act, fold};
use deskpilot_core::redact::is_password_field as is_password;

/// Keys that move keyboard focus to another control: Tab, ISO_Left_Tab (what
/// Shift+Tab sends) and KP_Tab (`keysymdef.h`).
const FOCUS_MOVERS: [Keysym; 3] = [0xff09, 0xfe20, 0xff89];

/// The chord of `chords` in which a key is pressed after a key that may move the
/// focus or open something: the keys after it land where nobody judged (the next
/// field may be a password, the opened dialog may hold a Delete). A key may move
/// the focus unless it is a printable character other than space typed with at
/// most Shift: Tab, F6, Escape, Return, space, arrows, and any key of a chord
/// holding Ctrl, Alt or Super (`ctrl+l` focuses an address bar, `alt+p` a field
/// by its mnemonic) all may. So `Tab+x`, `F6+x`, `ctrl+l+x`, `alt+p+1` and
/// `Return+y` are named, `x+y`, `shift+a+b` and `o+Return` are not (their last key
/// is judged with the chord). `None` when no chord does it; an unreadable string is
/// the driver's to refuse.
pub fn lands_after_focus_move(chords: &str) -> Option<String> {
    let parsed = parse_chords(chords).ok()?;
    parsed.into_iter().find_map(|c| {
        let keys: Vec<Keysym> = c.keys.iter().copied().map(keysym::canonical).collect();
        let (ctrl, alt, _, sup) = held(&keys);
        let pressed: Vec<Keysym> = keys
            .iter()
            .copied()
            .filter(|k| !keysym::is_modifier(*k))
            .collect();
        let (_, before_last) = pressed.split_last()?;
        let may_move = |k: &Keysym| {
            ctrl || alt
                || sup
                || FOCUS_MOVERS.contains(k)
                || keysym::keysym_to_char(*k).is_none_or(char::is_whitespace)
        };
        before_last.iter().any(may_move).then_some(c.text)
    })
}

/// The modifiers of a chord, as the keys it holds.
fn held(keys: &[Keysym]) -> (bool, bool, bool, bool) {
    let has = |a: Keysym, b: Keysym| keys.iter().any(|k| *k == a || *k == b);
    (
        has(keysym::XK_CONTROL_L, keysym::XK_CONTROL_R),
        has(keysym::XK_ALT_L, keysym::XK_ALT_R) || has(keysym::XK_META_L, keysym::XK_META_R),
        has(keysym::XK_SHIFT_L, keysym::XK_SHIFT_R),
        has(keysym::XK_SUPER_L, keysym::XK_SUPER_R),
    )
}

/// Whether a chord of `chords` is an Enter by another name: Ctrl+M (carriage return)
/// and Ctrl+J (line feed), which terminals, readline and many text widgets take as
/// Enter. Judged as Enter everywhere: an unreadable string counts.
pub fn control_enter(chords: &str) -> bool {
    let Ok(parsed) = parse_chords(chords) else {
        return true;
    };
    parsed.iter().any(|c| {
        let keys: Vec<Keysym> = c.keys.iter().copied().map(keysym::canonical).collect();
        let (ctrl, _, _, _) = held(&keys);
        ctrl && keys.iter().any(|k| matches!(*k, 0x6d | 0x4d | 0x6a | 0x4a))
    })
}

/// Whether a chord of `chords` pastes: Ctrl+V, Ctrl+Shift+V, Shift+Insert and the
/// Paste keys (`XF86Paste`, `F18`/`L8` and `SunPaste`, which X11 apps bind to
/// Paste); an unreadable string counts.
pub fn pastes(chords: &str) -> bool {
    let Ok(parsed) = parse_chords(chords) else {
        return true;
    };
    parsed.iter().any(|c| {
        let keys: Vec<Keysym> = c.keys.iter().copied().map(keysym::canonical).collect();
        let (ctrl, _, shift, _) = held(&keys);
        keys.iter().any(|k| {
            (ctrl && matches!(*k, 0x76 | 0x56))
                || (shift && matches!(*k, 0xff63 | 0xff9e))
                // XF86Paste; F18, Sun's L8 (Paste), which Qt on X11 binds to
                // Paste; SunPaste.
                || matches!(*k, 0x1008ff6d | 0xffcf | 0x1005ff72)
        })
    })
}

/// The selections a paste in `chords` may take its text from: `CLIPBOARD` for
/// every paste chord, and `PRIMARY` too for Shift+Insert, which some apps (xterm,
/// other X11 clients) paste from there. Empty when no chord pastes; an unreadable
/// string may paste from either.
pub fn pasted_selections(chords: &str) -> Vec<Selection> {
    let Ok(parsed) = parse_chords(chords) else {
        return vec![Selection::Clipboard, Selection::Primary];
    };
    let mut out = Vec::new();
    if pastes(chords) {
        out.push(Selection::Clipboard);
    }
    let primary = parsed.iter().any(|c| {
        let keys: Vec<Keysym> = c.keys.iter().copied().map(keysym::canonical).collect();
        let (_, _, shift, _) = held(&keys);
        shift && keys.iter().any(|k| matches!(*k, 0xff63 | 0xff9e))
    });
    if primary {
        out.push(Selection::Primary);
    }
    out
}

/// The letter or digit of each chord of `chords` that is a mnemonic: Alt (or Meta)
/// with one letter or digit, no Ctrl or Super (`alt+d` presses a dialog's `_Delete`).
fn mnemonic_keys(chords: &str) -> Vec<char> {
    let Ok(parsed) = parse_chords(chords) else {
        return Vec::new();
    };
    parsed
        .iter()
        .filter_map(|c| {
            let keys: Vec<Keysym> = c.keys.iter().copied().map(keysym::canonical).collect();
            let (ctrl, alt, _, sup) = held(&keys);
            if !alt || ctrl || sup {
                return None;
            }
            let rest: Vec<Keysym> = keys
                .iter()
                .copied()
                .filter(|k| !keysym::is_modifier(*k))
                .collect();
            match rest.as_slice() {
                [k] => keysym::keysym_to_char(*k)
                    .filter(char::is_ascii_alphanumeric)
                    .map(|c| c.to_ascii_lowercase()),
                _ => None,
            }
        })
        .collect()
}

/// Whether an Alt mnemonic in `chords` may press `n`: its label holds the letter
/// (the tree does not say which letter is underlined).
pub fn mnemonic_may_press(chords: &str, n: &Node) -> bool {
    let label = fold(&n.name);
    mnemonic_keys(chords).iter().any(|l| label.contains(*l))
}

/// What an Alt mnemonic in `chords` presses in window `root`: a mnemonic activates
/// the control whose label has that letter underlined, and the tree does not say
/// which letter that is, so every enabled, on-screen control a click activates whose
/// label holds the letter is judged as clicked; the first irreversible one is the
/// answer (the mnemonic may press it). Adds caution only: `alt+f` in a window whose
/// "Forward" button is irreversible asks too.
pub fn mnemonic_irreversible(chords: &str, root: &Node) -> Option<Irreversible> {
    let letters = mnemonic_keys(chords);
    if letters.is_empty() {
        return None;
    }
    root.walk()
        .filter(|n| {
            matches!(
                n.role,
                Role::Button
                    | Role::Checkbox
                    | Role::Radio
                    | Role::Menuitem
                    | Role::Link
                    | Role::Tab
            ) && !n.has(State::Disabled)
                && !n.has(State::Offscreen)
        })
        .filter(|n| {
            let label = fold(&n.name);
            letters.iter().any(|l| label.contains(*l))
        })
        .find_map(|n| classify_act(deskpilot_core::Op::Click, n, Some(root)))
        .map(|m| Irreversible {
            kind: m.kind,
            matched: format!("a mnemonic (Alt+letter) may press {:?}", m.matched),
        })
}

/// Words of a control that shows a password's text (English, German, French,
/// Spanish, Portuguese, Italian, Chinese, Japanese), and the eye glyphs.
const REVEAL: &[&str] = &[
    "show",
    "reveal",
    "unhide",
    "unmask",
    "view",
    "display",
    "peek",
    "anzeigen",
    "zeigen",
    "einblenden",
    "afficher",
    "montrer",
    "mostrar",
    "ver",
    "exibir",
    "visualizza",
    "mostra",
    "显示",
    "顯示",
    "表示",
    "👁",
    "👀",
];

/// Whether activating `el` in window `root` would show a password in clear: a
/// control (button, toggle, checkbox, image, unnamed or not) whose name or
/// description is a reveal word or an eye, or that has no name at all, beside a
/// password field (under the same parent or grandparent). Such a click is secure
/// input: refused as typing into the field would be.
pub fn reveals_password(el: &Node, root: &Node) -> bool {
    let control = el.role.is_interactive() || matches!(el.role, Role::Image | Role::Unknown);
    if !control || is_password(el) {
        return false;
    }
    let text = format!(
        "{} {}",
        el.name,
        el.description.as_deref().unwrap_or_default()
    );
    let folded = fold(&text);
    let words: Vec<&str> = folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let reveals = text.trim().is_empty()
        || REVEAL.iter().any(|r| {
            if r.chars().all(|c| c.is_ascii_alphabetic()) {
                words.contains(r)
            } else {
                folded.contains(&fold(r)) || text.contains(r)
            }
        });
    if !reveals {
        return false;
    }
    near_password(el, root)
}

/// Whether a password field shares `el`'s parent or grandparent.
fn near_password(el: &Node, root: &Node) -> bool {
    let chain = ancestors(root, el);
    chain
        .iter()
        .take(2)
        .any(|a| a.walk().any(|n| !std::ptr::eq(n, el) && is_password(n)))
}

/// The ancestors of `target` in `root`, nearest first (by handle).
fn ancestors<'a>(root: &'a Node, target: &Node) -> Vec<&'a Node> {
    fn find<'a>(n: &'a Node, target: &Node, path: &mut Vec<&'a Node>) -> bool {
        if n.handle == target.handle {
            return true;
        }
        path.push(n);
        for c in &n.children {
            if find(c, target, path) {
                return true;
            }
        }
        path.pop();
        false
    }
    let mut path = Vec::new();
    find(root, target, &mut path);
    path.reverse();
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskpilot_core::{Node, Role, State};

    fn node(h: &str, role: Role, name: &str) -> Node {
        Node::new(h, role, name)
    }

    #[test]
    fn keys_after_a_focus_move_in_one_chord_are_named() {
        assert_eq!(lands_after_focus_move("Tab+x"), Some("Tab+x".into()));
        assert_eq!(
            lands_after_focus_move("a Tab+End+x+y+z"),
            Some("Tab+End+x+y+z".into())
        );
        assert_eq!(
            lands_after_focus_move("shift+Tab+a"),
            Some("shift+Tab+a".into())
        );
        assert_eq!(lands_after_focus_move("Tab x"), None);
        assert_eq!(lands_after_focus_move("shift+Tab"), None);
        assert_eq!(lands_after_focus_move("ctrl+Tab"), None);
        assert_eq!(lands_after_focus_move("0xff09+x"), Some("0xff09+x".into()));
        // Other keys that move the focus or open something.
        for c in [
            "F6+x",
            "ctrl+l+x",
            "alt+p+1",
            "Return+y",
            "space+x",
            "Escape+Delete",
            "Down+x",
        ] {
            assert_eq!(lands_after_focus_move(c), Some(c.into()), "{c}");
        }
        // Characters typed in place, the last key judged with the chord.
        for c in ["x+y", "shift+a+b", "o+Return", "ctrl+l", "alt+p"] {
            assert_eq!(lands_after_focus_move(c), None, "{c}");
        }
    }

    #[test]
    fn control_m_and_j_are_enter() {
        for c in ["ctrl+m", "ctrl+M", "ctrl+j", "a ctrl+shift+m"] {
            assert!(control_enter(c), "{c}");
        }
        for c in ["m", "alt+m", "ctrl+k", "Return"] {
            assert!(!control_enter(c), "{c}");
        }
    }

    #[test]
    fn every_paste_chord_is_a_paste() {
        for c in [
            "ctrl+v",
            "ctrl+V",
            "ctrl+shift+v",
            "shift+Insert",
            "XF86Paste",
            "F18",
            "0x1005ff72",
        ] {
            assert!(pastes(c), "{c}");
        }
        for c in ["v", "ctrl+c", "Insert", "alt+v"] {
            assert!(!pastes(c), "{c}");
            assert!(pasted_selections(c).is_empty(), "{c}");
        }
        use Selection::{Clipboard, Primary};
        assert_eq!(pasted_selections("ctrl+v"), [Clipboard]);
        assert_eq!(pasted_selections("ctrl+a ctrl+shift+v"), [Clipboard]);
        assert_eq!(pasted_selections("shift+Insert"), [Clipboard, Primary]);
        assert_eq!(pasted_selections("shift+KP_Insert"), [Clipboard, Primary]);
    }

    fn dialog() -> Node {
        let mut root = node("w", Role::Dialog, "Question");
        root.children = vec![
            node("l", Role::Label, "Delete the file?"),
            node("c", Role::Button, "Cancel"),
            node("d", Role::Button, "Delete"),
        ];
        root
    }

    #[test]
    fn a_mnemonic_is_judged_as_the_clicks_it_may_cause() {
        let root = dialog();
        let m = mnemonic_irreversible("alt+d", &root).expect("alt+d may press Delete");
        assert!(m.matched.contains("delete"), "{m:?}");
        assert!(
            mnemonic_irreversible("alt+c", &root).is_none(),
            "Cancel only"
        );
        assert!(mnemonic_irreversible("ctrl+alt+d", &root).is_none());
        assert!(mnemonic_irreversible("d", &root).is_none());
        let mut off = dialog();
        off.children[2].states.insert(State::Disabled);
        assert!(mnemonic_irreversible("alt+d", &off).is_none());
    }

    #[test]
    fn a_reveal_toggle_beside_a_password_is_secure_input() {
        let mut root = node("w", Role::Window, "Sign in");
        let mut row = node("row", Role::Group, "");
        let mut pw = node("pw", Role::Textbox, "");
        pw.states.insert(State::Password);
        row.children = vec![
            pw,
            node("eye", Role::Button, "👁"),
            node("show", Role::Checkbox, "Passwort anzeigen"),
            node("bare", Role::Button, ""),
        ];
        root.children = vec![row, node("ok", Role::Button, "Show more")];
        let row = &root.children[0];
        for i in 1..4 {
            assert!(
                reveals_password(&row.children[i], &root),
                "{}",
                row.children[i].name
            );
        }
        // A "Show more" elsewhere reveals no password.
        let far = node("far", Role::Button, "Show more");
        let mut other = node("w2", Role::Window, "x");
        other.children = vec![far.clone()];
        assert!(!reveals_password(&other.children[0], &other));
        // A field labelled Kennwort is a password field too.
        let mut k = node("w3", Role::Window, "Anmelden");
        let mut g = node("g", Role::Group, "");
        g.children = vec![
            node("k", Role::Textbox, "Kennwort"),
            node("s", Role::Button, "anzeigen"),
        ];
        k.children = vec![g];
        assert!(reveals_password(&k.children[0].children[1], &k));
    }
}

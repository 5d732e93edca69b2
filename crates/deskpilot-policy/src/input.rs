//! Rules about where input lands and what it activates, judged on the window's tree
//! as the host read it just before dispatch (docs/ARCHITECTURE.md §7).
//!
//! - [`input_may_reach_password`]: synthesized input is refused while it could reach a
//!   password field (`COMPUTER_SECURE_INPUT`, through
//!   [`crate::refusal::Refusals::check_input`]).
//! - [`offscreen_refuses`]: an element that is not on screen is not activated.
//! - [`keys_irreversible`]: which keys count as an irreversible action — Enter on a
//!   send-like control outside chat apps, and any key that activates the focused
//!   control (space, Return) when the control itself is irreversible.

use deskpilot_core::{Node, Op, Role, State};
use deskpilot_protocol::keys::{Keysym, char_to_keysym, keysym, parse_chords};

use crate::irreversible::{Irreversible, classify_act, enter_submits_forms, fold};

/// The element of `root`'s tree that reports keyboard focus, if any: the deepest
/// focused element under the first one (LibreOffice reports both a sheet and its
/// active cell focused; the cell is where keys land).
pub fn focused(root: &Node) -> Option<&Node> {
    let is = |n: &&Node| n.has(State::Focused);
    let mut f = root.walk().find(is)?;
    while let Some(d) = f.children.iter().find_map(|c| c.walk().find(is)) {
        f = d;
    }
    Some(f)
}

/// Whether `n` is a password field: AT-SPI `password text` role or the ARIA
/// `password` state (both mapped to [`State::Password`]), or a text field labelled as
/// one in any language the redaction reads (`Kennwort`, `PIN`, 密码;
/// [`deskpilot_core::redact::is_password_field`]).
pub fn is_password(n: &Node) -> bool {
    deskpilot_core::redact::is_password_field(n)
}

/// Whether synthesized input into the window could reach a password field: an
/// element that reports focus is one, or no element reports focus (an inactive window's focus
/// widget does not) while the window has a password field, which may be the widget
/// the input lands in once the window is raised.
pub fn input_may_reach_password(root: &Node) -> bool {
    let mut focus = root.walk().filter(|n| n.has(State::Focused)).peekable();
    if focus.peek().is_none() {
        return root.walk().any(is_password);
    }
    // Every element claiming focus counts: an app may leave a stale claim on one.
    focus.any(is_password)
}

/// Whether `op` on `element` must be refused because the element is not on screen
/// (an item of a closed menu, a row scrolled away, a window behind a dialog): an
/// activating or focusing op would act out of the model's sight. Editing ops
/// (set_value, type, clear) and `scroll` (which brings it into view) are not refused.
pub fn offscreen_refuses(op: Op, element: &Node) -> bool {
    element.has(State::Offscreen)
        && matches!(
            op,
            Op::Click
                | Op::DoubleClick
                | Op::RightClick
                | Op::Toggle
                | Op::Select
                | Op::Expand
                | Op::Collapse
                | Op::Focus
        )
}

/// The Enter family: Return, KP_Enter, ISO_Enter, Linefeed, 3270_Enter and the
/// Unicode-block spellings of CR and LF (`keysymdef.h` values). They activate the
/// focused control, and also a window's default button or a form's submit from a
/// field.
const ENTER: [Keysym; 7] = [
    0xff0d,
    0xff8d,
    0xfe34,
    0xff0a,
    0xfd1e,
    0x0100_000d,
    0x0100_000a,
];

/// The text a key sequence types, as a field receives it: the character of each
/// printable key, chord by chord and key by key in pressing order, up to the first
/// Enter of any spelling (what follows lands in what Enter opened). A chord holding
/// Ctrl, Alt or Super types nothing (it is a shortcut); Shift gives a letter its
/// upper case. So `t+o Return` and `o+Return` type `to` and `o`: a path typed in
/// pieces, its last letter sent with Enter in one chord, is judged whole with the
/// field's text. An unreadable string types nothing (the driver refuses it).
pub fn chord_text(chords: &str) -> String {
    chord_edits(chords)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| match e {
            Edit::Insert(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// One edit a key makes to a one-line field, for [`field_after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Insert(char),
    /// BackSpace (`word`: with Ctrl, back to the start of the word).
    Back {
        word: bool,
    },
    /// Delete (`word`: with Ctrl, up to the end of the word).
    Forward {
        word: bool,
    },
    Home,
    End,
}

/// The edits keys make to the field that has focus, in pressing order, up to the
/// first Enter (as [`chord_text`] reads them; Home, End, BackSpace and Delete
/// too). `None` for a string that does not parse.
fn chord_edits(chords: &str) -> Option<Vec<Edit>> {
    let parsed = parse_chords(chords).ok()?;
    let mut out = Vec::new();
    for c in &parsed {
        let keys: Vec<Keysym> = c.keys.iter().copied().map(keysym::canonical).collect();
        let has = |a: Keysym, b: Keysym| keys.iter().any(|k| *k == a || *k == b);
        let ctrl = has(keysym::XK_CONTROL_L, keysym::XK_CONTROL_R);
        let shortcut = ctrl
            || has(keysym::XK_ALT_L, keysym::XK_ALT_R)
            || has(keysym::XK_META_L, keysym::XK_META_R)
            || has(keysym::XK_SUPER_L, keysym::XK_SUPER_R);
        if ctrl && keys.iter().any(|k| matches!(*k, 0x6d | 0x4d | 0x6a | 0x4a)) {
            return Some(out); // Ctrl+M, Ctrl+J: Enter.
        }
        let shift = has(keysym::XK_SHIFT_L, keysym::XK_SHIFT_R);
        for k in keys.iter().filter(|k| !keysym::is_modifier(**k)) {
            if ENTER.contains(k) {
                return Some(out);
            }
            let edit = match *k {
                0xff08 => Some(Edit::Back { word: ctrl }),
                0xffff | 0xff9f => Some(Edit::Forward { word: ctrl }),
                0xff50 | 0xff95 => Some(Edit::Home),
                0xff57 | 0xff9c => Some(Edit::End),
                _ if shortcut => None,
                k => keysym::keysym_to_char(k).map(|ch| {
                    Edit::Insert(if shift {
                        ch.to_uppercase().next().unwrap_or(ch)
                    } else {
                        ch
                    })
                }),
            };
            out.extend(edit);
        }
    }
    Some(out)
}

/// The most caret positions [`field_after`] tries; a longer field is tried with
/// the caret at its start and at its end only.
pub const FIELD_CARETS_MAX: usize = 512;

/// Every text a one-line field holding `value` may hold after keys `chords` (or
/// text `typed`, up to its first line break) — one for each place the caret may be
/// in, since the tree does not say where it is, and one for the whole text
/// selected (the first key replaces it): printable keys insert, BackSpace and
/// Delete remove (Ctrl: a word), Home and End move, up to the first Enter. A path
/// finished inside the field (typed before what it holds, a stray letter deleted)
/// is judged whole so. Distinct results: the caret at the end first, then the
/// selected text replaced, then the caret at each other place from the start.
pub fn field_after(value: &str, chords: Option<&str>, typed: Option<&str>) -> Vec<String> {
    let edits: Vec<Edit> = match (typed, chords) {
        (Some(t), _) => t
            .chars()
            .take_while(|c| !matches!(c, '\n' | '\r'))
            .map(Edit::Insert)
            .collect(),
        (None, Some(c)) => chord_edits(c).unwrap_or_default(),
        (None, None) => Vec::new(),
    };
    let start: Vec<char> = value.chars().collect();
    let n = start.len();
    // The caret at the end first (where it is after typing or a set value), then
    // the other places.
    let carets: Vec<usize> = if n <= FIELD_CARETS_MAX {
        std::iter::once(n).chain(0..n).collect()
    } else {
        vec![n, 0]
    };
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out: Vec<String> = Vec::new();
    // `None`: the field's text selected (a save dialog selects the name), so the
    // first key that edits replaces it (a character) or removes it (BackSpace,
    // Delete); Home and End only drop the selection.
    let selected = match edits.first() {
        Some(Edit::Insert(_)) => Some(&edits[..]),
        Some(Edit::Back { .. } | Edit::Forward { .. }) => Some(&edits[1..]),
        _ => None,
    };
    let mut runs: Vec<(Vec<char>, usize, &[Edit])> = carets
        .into_iter()
        .map(|at| (start.clone(), at, &edits[..]))
        .collect();
    // The selected text replaced comes second.
    if let Some(rest) = selected {
        runs.insert(1.min(runs.len()), (Vec::new(), 0, rest));
    }
    for (mut text, mut caret, edits) in runs {
        for e in edits {
            match *e {
                Edit::Insert(ch) => {
                    text.insert(caret, ch);
                    caret += 1;
                }
                Edit::Back { word: w } => {
                    let mut from = caret.saturating_sub(1);
                    if w {
                        while from > 0 && !word(text[from]) {
                            from -= 1;
                        }
                        while from > 0 && word(text[from - 1]) {
                            from -= 1;
                        }
                    }
                    if caret > 0 {
                        text.drain(from..caret);
                        caret = from;
                    }
                }
                Edit::Forward { word: w } => {
                    let mut to = (caret + 1).min(text.len());
                    if w {
                        while to < text.len() && word(text[to]) {
                            to += 1;
                        }
                    }
                    if caret < text.len() {
                        text.drain(caret..to);
                    }
                }
                Edit::Home => caret = 0,
                Edit::End => caret = text.len(),
            }
        }
        let t: String = text.into_iter().collect();
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The other keys that activate the focused control in GTK, Qt and browsers: space,
/// KP_Space and Select.
const PRESS: [Keysym; 3] = [0x20, 0xff80, 0xff60];

/// Every keysym a chord string presses, in order, folded to one keysym per symbol
/// (`0x0100_0020` and `U0020` are space). `None` when the string does not parse;
/// the driver refuses such a chord, and the policy judges it as if it activated.
pub fn chord_keysyms(chord: &str) -> Option<Vec<Keysym>> {
    let chords = parse_chords(chord).ok()?;
    Some(
        chords
            .into_iter()
            .flat_map(|c| c.keys)
            .map(keysym::canonical)
            .collect(),
    )
}

/// The keysyms typing `text` presses (line breaks are Return).
fn text_keysyms(text: &str) -> impl Iterator<Item = Keysym> + '_ {
    text.chars()
        .filter_map(char_to_keysym)
        .map(keysym::canonical)
}

/// Whether any key of `chord` or `text` is one of `set`; an unreadable chord counts.
fn presses_any(chord: Option<&str>, text: Option<&str>, set: &[Keysym]) -> bool {
    let chord_hits = chord
        .is_some_and(|c| chord_keysyms(c).is_none_or(|keys| keys.iter().any(|k| set.contains(k))));
    chord_hits || text.is_some_and(|t| text_keysyms(t).any(|k| set.contains(&k)))
}

/// Whether keyboard input activates the focused control: any key of it, however
/// spelled (`Return`, `ret`, `0xff0d`, `KP_Enter`, `space`, `U0020`, `0x20`, a
/// space or line break in text), is one of the activating keysyms.
pub fn keys_activate(chord: Option<&str>, text: Option<&str>) -> bool {
    keys_enter(chord, text) || presses_any(chord, text, &PRESS)
}

/// Whether keys would activate a control that shows a password in clear
/// ([`crate::reach::reveals_password`]): an activating key (Enter of any spelling, space,
/// [`keys_activate`]) while such a control has the focus, or an Alt
/// mnemonic that may press one ([`crate::reach::mnemonic_may_press`]). Such keys are secure input,
/// as the click on the control is.
pub fn keys_reveal_password(chord: Option<&str>, text: Option<&str>, root: &Node) -> bool {
    let focused = keys_activate(chord, text)
        && root
            .walk()
            .any(|n| n.has(State::Focused) && crate::reach::reveals_password(n, root));
    focused
        || chord.is_some_and(|c| {
            root.walk().any(|n| {
                crate::reach::mnemonic_may_press(c, n) && crate::reach::reveals_password(n, root)
            })
        })
}

/// Whether keyboard input presses a key of the Enter family, any spelling — Ctrl+M
/// and Ctrl+J included ([`crate::reach::control_enter`]): one rule for every Enter.
pub fn keys_enter(chord: Option<&str>, text: Option<&str>) -> bool {
    presses_any(chord, text, &ENTER) || chord.is_some_and(crate::reach::control_enter)
}

/// Roles whose activation by a key counts as a click for [`classify_act`].
fn key_activatable(role: Role) -> bool {
    matches!(
        role,
        Role::Button
            | Role::Link
            | Role::Menuitem
            | Role::Checkbox
            | Role::Radio
            | Role::Listitem
            | Role::Treeitem
            | Role::Tab
    )
}

/// What Enter activates in window `root` when the focus is not a control a key
/// activates (a field, or nothing): the window's default button, or the form's
/// submit button — read as the first enabled button irreversible by its label, on
/// screen or scrolled away. GTK dialogs and web forms both submit this way.
pub fn enter_submits(root: &Node) -> Option<Irreversible> {
    // Scrolled-away buttons count: Enter submits a long form whose "Pay" is out of
    // view as well.
    root.walk()
        .filter(|n| n.role == Role::Button && !n.has(State::Disabled))
        .find_map(|n| classify_act(Op::Click, n, Some(root)))
        .map(|m| Irreversible {
            kind: m.kind,
            matched: format!("Enter submits {:?}", m.matched),
        })
}

/// Whether keyboard input (`chord` or `text`) into the window `root` of `app` is
/// irreversible, judged by what it activates:
/// - a key that activates ([`keys_activate`]) a focused control that is itself
///   irreversible ("Delete", "Pay", any spelling of its label), in any app;
/// - Enter (any spelling, Ctrl+M and Ctrl+J, or a line break in text) while the
///   focus is a field or nothing: what Enter submits there ([`enter_submits`]),
///   outside chat apps;
/// - an Alt mnemonic, judged as the clicks it may cause
///   ([`crate::reach::mnemonic_irreversible`]).
pub fn keys_irreversible(
    chord: Option<&str>,
    text: Option<&str>,
    app: &str,
    root: &Node,
) -> Option<Irreversible> {
    keys_irreversible_by_focus(chord, text, app, root)
        .or_else(|| chord.and_then(|c| crate::reach::mnemonic_irreversible(c, root)))
}

fn keys_irreversible_by_focus(
    chord: Option<&str>,
    text: Option<&str>,
    app: &str,
    root: &Node,
) -> Option<Irreversible> {
    let focus = focused(root);
    let enter = keys_enter(chord, text) && enter_submits_forms(app);
    if let Some(n) = focus.filter(|n| key_activatable(n.role)) {
        let own = keys_activate(chord, text)
            .then(|| classify_act(Op::Click, n, Some(root)))
            .flatten();
        // Enter on a checkbox or radio button of a web form submits the form.
        let form = (enter && matches!(n.role, Role::Checkbox | Role::Radio))
            .then(|| enter_submits(root))
            .flatten();
        return own.or(form);
    }
    // A bare Enter stays in a text area or a sheet; Ctrl+Enter and the like send a
    // message or a form from there (mail, comment boxes), so they are judged.
    if focus.is_some_and(enter_stays_in) && !enter_with_modifiers(chord) {
        return None;
    }
    enter.then(|| enter_submits(root)).flatten()
}

/// Whether a chord of `chord` presses a key of the Enter family together with another
/// key (a modifier: `ctrl+Return`, `alt+KP_Enter`); an unreadable chord counts.
fn enter_with_modifiers(chord: Option<&str>) -> bool {
    let Some(c) = chord else {
        return false;
    };
    let Ok(chords) = parse_chords(c) else {
        return true;
    };
    chords.iter().any(|ch| {
        let keys: Vec<Keysym> = ch.keys.iter().copied().map(keysym::canonical).collect();
        keys.len() > 1 && keys.iter().any(|k| ENTER.contains(k))
    })
}

/// Whether Enter in the focused element `n` stays in it, activating nothing else: a
/// multi-line text (a document, a text area: AT-SPI `MULTI_LINE`) writes a line
/// break, and in an editable table, cell or paragraph of a document (a spreadsheet,
/// a word processor) it moves to the next cell or starts a paragraph.
fn enter_stays_in(n: &Node) -> bool {
    n.role == Role::Document
        || n.has(State::Multiline)
        || (n.has(State::Editable) && matches!(n.role, Role::Cell | Role::Paragraph | Role::Table))
}

/// What an activating `op` on `el` activates through its children: an interactive
/// element that offers no action of its own (a GTK 4 menu button) is acted on
/// through the child
/// that carries one, so every interactive child is judged as clicked — whatever
/// actions the read saw, on screen or not — and the first irreversible one is the
/// answer. Children the read did not reach (of an element that does not manage its
/// descendants, whose children the driver never delegates to) cannot be judged, so
/// they count as irreversible.
pub fn acts_through(op: Op, el: &Node, root: &Node) -> Option<Irreversible> {
    if !el.actions.is_empty()
        || !el.role.is_interactive()
        || !matches!(op, Op::Click | Op::Expand | Op::Collapse | Op::Toggle)
    {
        return None;
    }
    let unread = !el.has(State::ManagesDescendants)
        && el.table.is_none()
        && el.child_count > el.children.len() as u64 + el.first_child;
    if unread {
        return Some(Irreversible {
            kind: "other".into(),
            matched: "a click passed on to children that were not read".into(),
        });
    }
    el.children
        .iter()
        .filter(|c| c.role.is_interactive())
        .find_map(|c| classify_act(Op::Click, c, Some(root)))
}

/// Whether a value written into `el` presses Enter in it: a line break in the value
/// of a field that is not a multi-line text area (a keyboard fallback types it as
/// Return). Judged like the key ([`enter_submits`]).
pub fn value_submits(value: &str, el: &Node, app: &str, root: &Node) -> Option<Irreversible> {
    let breaks = value.contains(['\n', '\r']);
    (breaks && !enter_stays_in(el) && enter_submits_forms(app))
        .then(|| enter_submits(root))
        .flatten()
}

/// The elements under the screen point (`x`, `y`) pixels, from the deepest up: the
/// chain of on-screen elements whose bounds contain the point, later siblings first
/// (they are drawn on top). Elements without bounds are passed through.
pub fn elements_at(root: &Node, x: i32, y: i32) -> Vec<&Node> {
    fn contains(n: &Node, x: i32, y: i32) -> Option<bool> {
        let b = n.bounds.filter(|b| b.width > 0 && b.height > 0)?;
        // Extents come from the app: i64, so no value overflows.
        let (x, y) = (i64::from(x), i64::from(y));
        let (bx, by) = (i64::from(b.x), i64::from(b.y));
        Some(x >= bx && y >= by && x < bx + i64::from(b.width) && y < by + i64::from(b.height))
    }
    fn walk<'a>(n: &'a Node, x: i32, y: i32, path: &mut Vec<&'a Node>) -> bool {
        if n.has(State::Offscreen) {
            return false;
        }
        let here = contains(n, x, y);
        if here == Some(false) {
            return false;
        }
        let pushed = here == Some(true);
        if pushed {
            path.push(n);
        }
        let mut found = false;
        for c in n.children.iter().rev() {
            if walk(c, x, y, path) {
                found = true;
                break;
            }
        }
        if !found && !pushed {
            return false;
        }
        true
    }
    let mut path = Vec::new();
    walk(root, x, y, &mut path);
    path.reverse();
    path
}

/// Whether a click at the screen point (`x`, `y`) lands on a drawing: an image
/// (AT-SPI image, icon, canvas, drawing area, chart) under the point below every
/// control that names its own press (button, link, menu item, check box…; a page,
/// a list item or a cell does not), whose pixels may show a word ("Send") its name
/// does not (docs/ARCHITECTURE.md §8a).
pub fn drawing_at(root: &Node, x: i32, y: i32) -> bool {
    elements_at(root, x, y)
        .into_iter()
        .take_while(|n| !names_its_press(n.role))
        .any(|n| n.role == Role::Image)
}

/// Controls whose name says what a press on them does.
fn names_its_press(role: Role) -> bool {
    matches!(
        role,
        Role::Button
            | Role::Link
            | Role::Menuitem
            | Role::Checkbox
            | Role::Radio
            | Role::Combobox
            | Role::Tab
            | Role::Slider
            | Role::Spinbutton
            | Role::Scrollbar
            | Role::Textbox
            | Role::Columnheader
    )
}

/// What a click at the screen point (`x`, `y`) activates in `root`: the first
/// irreversible element of [`elements_at`], deepest first (a button's label, then the
/// button).
pub fn click_irreversible(root: &Node, x: i32, y: i32) -> Option<Irreversible> {
    elements_at(root, x, y)
        .into_iter()
        .find_map(|n| classify_act(Op::Click, n, Some(root)))
}

/// Whether text written into `el` would load a script or an inline document: `el` is
/// an address bar (a text field whose name, folded, mentions an address, a URL or a
/// location: Chromium's "Address and search bar", Firefox's "Search or enter
/// address") and the text, trimmed and folded, starts with `javascript:`,
/// `vbscript:` or `data:`. Such a URL runs code in the page, which can read or post
/// anything the page holds, outside every rule here.
pub fn script_url_into_address_bar(text: &str, el: &Node) -> bool {
    let name = fold(&el.name);
    let bar = matches!(el.role, Role::Textbox | Role::Combobox)
        && ["address", "url", "location", "地址", "网址"]
            .iter()
            .any(|w| name.contains(&fold(w)));
    let t: String = fold(text.trim_start())
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    bar && ["javascript:", "vbscript:", "data:"]
        .iter()
        .any(|p| t.starts_with(&fold(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(role: Role, name: &str, states: &[State]) -> Node {
        states
            .iter()
            .fold(Node::new(format!("h:{name}"), role, name), |n, s| {
                n.state(*s)
            })
    }

    #[test]
    fn keys_type_their_printable_characters_up_to_enter() {
        assert_eq!(chord_text("t+o Return x"), "to");
        assert_eq!(chord_text("o+Return"), "o");
        assert_eq!(chord_text("Return+o"), "");
        assert_eq!(chord_text("slash c o n f i g ctrl+m x"), "/config");
        assert_eq!(chord_text("shift+d e s k"), "Desk");
        assert_eq!(chord_text("ctrl+a alt+d super+e x"), "x");
        assert_eq!(chord_text("U+0070 KP_Enter q"), "p");
        assert_eq!(chord_text("not a key name"), "");
    }

    #[test]
    fn a_field_is_judged_with_the_caret_anywhere() {
        let has = |v: &str, c: Option<&str>, t: Option<&str>, want: &str| {
            let got = field_after(v, c, t);
            assert!(got.iter().any(|g| g == want), "{v:?} {c:?} {t:?}: {got:?}");
        };
        // A folder typed before the name the field holds.
        has("onfig", Some("Home+period+c+Return"), None, ".config");
        has("onfig", None, Some(".c"), ".config");
        // A stray letter deleted with the Enter that loads the path.
        has(
            "~/.config/deskpilotX",
            Some("BackSpace+Return"),
            None,
            "~/.config/deskpilot",
        );
        has(
            "X~/.config/deskpilot",
            Some("Home+Delete"),
            None,
            "~/.config/deskpilot",
        );
        has(
            "~/.config/deskpilot/evil",
            Some("ctrl+BackSpace"),
            None,
            "~/.config/deskpilot/",
        );
        // The selected name replaced by the first key.
        has("Untitled 1", None, Some("~/x"), "~/x");
        // Enter alone leaves the field as it is; Home drops a selection.
        assert_eq!(field_after("abc", Some("Return"), None), ["abc"]);
        assert_eq!(field_after("ab", Some("Home"), None), ["ab"]);
        // Nothing past Enter; the field's ends only, when it is long.
        assert_eq!(field_after("", Some("a+Return+b"), None), ["a"]);
        assert_eq!(field_after("", None, Some("a\nb")), ["a"]);
        let long = "y".repeat(FIELD_CARETS_MAX + 1);
        assert_eq!(field_after(&long, None, Some("x")).len(), 3);
    }
    #[test]
    fn keys_that_press_a_reveal_toggle_are_secure_input() {
        let mut root = Node::new("w", Role::Window, "Sign in");
        let mut row = Node::new("row", Role::Group, "");
        let mut pw = Node::new("pw", Role::Textbox, "");
        pw.states.insert(State::Password);
        let mut show = Node::new("show", Role::Checkbox, "_Show password");
        show.name = "Show password".into();
        row.children = vec![pw, show, Node::new("ok", Role::Button, "Log in")];
        root.children = vec![row];
        // Nothing focused: space presses nothing that reveals; Alt+S may.
        assert!(!keys_reveal_password(Some("space"), None, &root));
        assert!(keys_reveal_password(Some("alt+s"), None, &root));
        assert!(!keys_reveal_password(Some("alt+l"), None, &root));
        // The toggle focused: space, Return and Ctrl+M press it; a letter does not.
        root.children[0].children[1].states.insert(State::Focused);
        for chord in ["space", "Return", "ctrl+m", "KP_Enter"] {
            assert!(keys_reveal_password(Some(chord), None, &root), "{chord}");
        }
        assert!(keys_reveal_password(None, Some(" "), &root));
        assert!(!keys_reveal_password(Some("x"), None, &root));
    }

    #[test]
    fn input_may_reach_a_password_field_when_focused_or_when_nothing_has_focus() {
        let pw = node(Role::Textbox, "pw", &[State::Password]);
        let root = node(Role::Window, "w", &[]).children(vec![pw.clone()]);
        assert!(
            input_may_reach_password(&root),
            "no focus, a password field"
        );
        let plain = node(Role::Textbox, "name", &[State::Focused]);
        let root = node(Role::Window, "w", &[]).children(vec![pw.clone(), plain.clone()]);
        assert!(!input_may_reach_password(&root), "focus on a plain field");
        let root = node(Role::Window, "w", &[]).children(vec![pw.state(State::Focused)]);
        assert!(
            input_may_reach_password(&root),
            "the password field has focus"
        );
    }

    #[test]
    fn off_screen_elements_are_not_activated_but_may_be_edited_or_scrolled() {
        let off = node(Role::Menuitem, "Quit", &[State::Offscreen]);
        assert!(offscreen_refuses(Op::Click, &off));
        assert!(offscreen_refuses(Op::Focus, &off));
        assert!(!offscreen_refuses(Op::Scroll, &off));
        assert!(!offscreen_refuses(Op::SetValue, &off));
        let on = node(Role::Menuitem, "Quit", &[]);
        assert!(!offscreen_refuses(Op::Click, &on));
    }

    fn window(children: Vec<Node>) -> Node {
        node(Role::Window, "w", &[]).children(children)
    }

    #[test]
    fn a_key_that_activates_an_irreversible_control_is_irreversible() {
        let delete = window(vec![node(Role::Button, "Delete", &[State::Focused])]);
        for chord in [
            "space",
            "ctrl+Return",
            "ret",
            "enter",
            "0xff0d",
            "0x20",
            "U0020",
            "U+0020",
            "KP_Enter",
            "KP_Space",
            "Tab space",
        ] {
            assert!(
                keys_irreversible(Some(chord), None, "mousepad", &delete).is_some(),
                "{chord}"
            );
        }
        assert!(keys_irreversible(None, Some("a b"), "mousepad", &delete).is_some());
        assert!(keys_irreversible(None, Some("a\n"), "mousepad", &delete).is_some());
        assert!(keys_irreversible(Some("Tab"), None, "mousepad", &delete).is_none());
        assert!(keys_irreversible(Some("0xff09"), None, "mousepad", &delete).is_none());
        let cyrillic = window(vec![node(Role::Button, "\u{405}end", &[State::Focused])]);
        assert!(keys_irreversible(Some("ret"), None, "mousepad", &cyrillic).is_some());
        let save = window(vec![node(Role::Button, "Save", &[State::Focused])]);
        assert!(keys_irreversible(Some("Return"), None, "mousepad", &save).is_none());
    }

    #[test]
    fn enter_in_a_field_is_judged_by_the_button_it_submits() {
        let form = window(vec![
            node(Role::Textbox, "Name", &[State::Focused]),
            node(Role::Button, "Submit", &[]),
        ]);
        for chord in ["Return", "ret", "0xff0d", "KP_Enter", "shift+Return"] {
            assert!(
                keys_irreversible(Some(chord), None, "firefox", &form).is_some(),
                "{chord}"
            );
        }
        assert!(keys_irreversible(None, Some("Bob\n"), "firefox", &form).is_some());
        assert!(keys_irreversible(Some("space"), None, "firefox", &form).is_none());
        assert!(keys_irreversible(Some("Return"), None, "slack", &form).is_none());
        let field = node(Role::Textbox, "Name", &[]);
        assert!(value_submits("999\n", &field, "chromium", &form).is_some());
        assert!(value_submits("999", &field, "chromium", &form).is_none());
        let plain = window(vec![
            node(Role::Textbox, "Name", &[State::Focused]),
            node(Role::Button, "Submit", &[State::Disabled]),
            node(Role::Button, "Cancel", &[]),
        ]);
        assert!(keys_irreversible(Some("Return"), None, "firefox", &plain).is_none());
        assert!(keys_irreversible(Some("Return"), None, "thunderbird", &window(vec![])).is_none());
    }

    #[test]
    fn a_control_without_actions_is_judged_by_the_children_that_carry_them() {
        let mut inner = node(Role::Button, "Delete all", &[]);
        inner.actions = vec!["click".into()];
        let outer = node(Role::Button, "", &[]).children(vec![inner.clone()]);
        let root = window(vec![outer.clone()]);
        for op in [Op::Click, Op::Expand, Op::Toggle] {
            assert!(acts_through(op, &outer, &root).is_some(), "{op}");
        }
        assert!(acts_through(Op::Focus, &outer, &root).is_none());
        let mut own = outer.clone();
        own.actions = vec!["click".into()];
        assert!(
            acts_through(Op::Click, &own, &root).is_none(),
            "its own action is judged as itself"
        );
        inner.name = "Basic".into();
        let plain = node(Role::Button, "", &[]).children(vec![inner.clone()]);
        assert!(acts_through(Op::Click, &plain, &window(vec![plain.clone()])).is_none());
        // A child off screen, or whose actions were not read, is judged all the same.
        let mut hidden = node(Role::Button, "Delete account", &[State::Offscreen]);
        hidden.actions.clear();
        let wrap = node(Role::Button, "", &[]).children(vec![hidden]);
        assert!(acts_through(Op::Click, &wrap, &window(vec![wrap.clone()])).is_some());
        // The driver passes on only what an interactive control receives.
        let div = node(Role::Section, "", &[]).children(vec![node(Role::Button, "Delete", &[])]);
        assert!(acts_through(Op::Click, &div, &window(vec![div.clone()])).is_none());
        // Children the read did not reach cannot be judged: they count.
        let mut unread = node(Role::Button, "", &[]).children(vec![inner]);
        unread.child_count = 3;
        assert!(acts_through(Op::Click, &unread, &window(vec![unread.clone()])).is_some());
    }

    #[test]
    fn enter_in_a_text_area_or_a_spreadsheet_cell_submits_nothing() {
        let with_focus = |el: Node| {
            window(vec![
                el.state(State::Focused),
                node(Role::Button, "Find & Replace", &[]),
                node(Role::Button, "Submit", &[]),
            ])
        };
        let area = node(
            Role::Textbox,
            "Comment",
            &[State::Editable, State::Multiline],
        );
        let cell = node(Role::Cell, "A1", &[State::Editable]);
        let para = node(Role::Paragraph, "", &[State::Editable]);
        for el in [area.clone(), cell, para] {
            let root = with_focus(el.clone());
            assert!(
                keys_irreversible(Some("Return"), None, "soffice", &root).is_none(),
                "{:?}",
                el.role
            );
            // Ctrl+Enter sends from a mail or comment box: judged as a submit.
            for chord in ["ctrl+Return", "alt+KP_Enter", "shift+0xff0d"] {
                assert!(
                    keys_irreversible(Some(chord), None, "soffice", &root).is_some(),
                    "{chord} on {:?}",
                    el.role
                );
            }
            assert!(value_submits("1\n2", &el, "soffice", &root).is_none());
        }
        // The same field without the multi-line state submits the form, and a cell
        // that cannot be edited (a row of a list) is judged like a field.
        let line = node(Role::Textbox, "Comment", &[State::Editable]);
        assert!(keys_irreversible(Some("Return"), None, "chromium", &with_focus(line)).is_some());
        let row = node(Role::Cell, "report.txt", &[]);
        assert!(keys_irreversible(Some("Return"), None, "zenity", &with_focus(row)).is_some());
    }

    #[test]
    fn script_urls_into_an_address_bar_are_recognised_however_written() {
        let bar = node(Role::Textbox, "Address and search bar", &[]);
        for t in [
            "javascript:alert(1)",
            "  JavaScript:x",
            "java\tscript:x",
            "data:text/html,<b>",
            "ｊａｖａｓｃｒｉｐｔ:x",
        ] {
            assert!(script_url_into_address_bar(t, &bar), "{t:?}");
        }
        assert!(!script_url_into_address_bar("https://example.com", &bar));
        let field = node(Role::Textbox, "Comment", &[]);
        assert!(!script_url_into_address_bar("javascript:alert(1)", &field));
    }

    #[test]
    fn a_click_is_judged_by_the_element_under_the_point() {
        use deskpilot_core::Bounds;
        let mut label = node(Role::Label, "Pay", &[]);
        label.bounds = Some(Bounds::new(110, 110, 20, 10));
        let mut pay = node(Role::Button, "Pay", &[]).children(vec![label]);
        pay.bounds = Some(Bounds::new(100, 100, 50, 30));
        let mut cancel = node(Role::Button, "Cancel", &[]);
        cancel.bounds = Some(Bounds::new(200, 100, 50, 30));
        let mut root = window(vec![node(Role::Group, "", &[]).children(vec![pay, cancel])]);
        root.bounds = Some(Bounds::new(0, 0, 400, 300));
        assert!(click_irreversible(&root, 101, 101).is_some());
        assert!(click_irreversible(&root, 115, 112).is_some());
        assert!(click_irreversible(&root, 210, 110).is_none());
        assert!(click_irreversible(&root, 10, 10).is_none());
        assert_eq!(elements_at(&root, 210, 110)[0].name, "Cancel");
    }
}

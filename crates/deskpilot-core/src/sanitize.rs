//! Making untrusted UI text safe to print on one line.
//!
//! Owns the escaping applied to every name, value and title before it reaches snapshot
//! or diff text, and the truncation of long values. UI text is untrusted: a window
//! title or label can carry newlines (forging extra snapshot lines), bidi overrides
//! (making `exe.txt` read as `txt.exe`), zero-width or tag characters (hiding text
//! from a human reviewer or from a rule that matches words) and U+FFFC (an
//! embedded-object placeholder). After [`one_line`] none of these survives as itself:
//! each is shown escaped (`S\u{200b}end`), so the reader sees exactly what a label
//! holds, and a `"…"` around the result is unambiguous. This module never redacts secrets; that is [`crate::redact`].

/// What [`one_line`] does with one character.
enum Treat {
    Keep,
    Drop,
    Invisible,
    Escape(&'static str),
    Hex,
}

fn treat(c: char) -> Treat {
    match c {
        '\\' => Treat::Escape("\\\\"),
        '"' => Treat::Escape("\\\""),
        '\n' => Treat::Escape("\\n"),
        '\r' => Treat::Escape("\\r"),
        '\t' => Treat::Escape("\\t"),
        '\u{2028}' => Treat::Escape("\\u{2028}"),
        '\u{2029}' => Treat::Escape("\\u{2029}"),
        // C0 controls, DEL and C1 controls (including U+0085 NEXT LINE).
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => Treat::Hex,
        c if is_direction_mark(c) => Treat::Drop,
        c if is_invisible(c) => Treat::Invisible,
        _ => Treat::Keep,
    }
}

/// True for a bidirectional formatting character: the embeddings and overrides
/// U+202A–U+202E, the isolates U+2066–U+2069, the marks U+200E/U+200F and the Arabic
/// letter mark U+061C.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// True for a directional mark — LEFT-TO-RIGHT MARK U+200E, RIGHT-TO-LEFT MARK U+200F,
/// ARABIC LETTER MARK U+061C — which [`one_line`] drops: toolkits put them into
/// ordinary text (GTK's file chooser writes times as `13`+U+200E+`:41`), they only
/// set the direction of neutral characters next to them, and they hide no letter
/// from the rules that match words (those ignore every invisible character).
pub fn is_direction_mark(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// True for a character [`one_line`] shows escaped because it renders as nothing (or as a
/// placeholder) while still being text: every Unicode `Default_Ignorable_Code_Point`
/// (bidi controls, zero-width space/joiners, word joiner and invisible operators, the
/// deprecated shaping controls U+206A–U+206F, combining grapheme joiner, byte-order
/// mark, soft hyphen, Khmer inherent vowels, Mongolian selectors, Hangul fillers,
/// variation selectors, shorthand format controls, musical formatting controls,
/// Unicode tag characters used to smuggle invisible instructions, unassigned
/// U+FFF0–U+FFF8 and U+E0000–U+E0FFF), plus the interlinear annotation marks
/// U+FFF9–U+FFFB and U+FFFC OBJECT REPLACEMENT CHARACTER.
pub fn is_invisible(c: char) -> bool {
    is_bidi_control(c)
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200d}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffc}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

/// Escapes `s` so it prints on one line and can sit between double quotes.
///
/// - `\` → `\\`, `"` → `\"`, newline → `\n`, carriage return → `\r`, tab → `\t`,
///   U+2028/U+2029 → `\u{2028}`/`\u{2029}`;
/// - any other C0/C1 control or DEL → `\xNN` (two hex digits);
/// - directional marks ([`is_direction_mark`]) are dropped;
/// - other invisible characters ([`is_invisible`]: bidi controls, zero-width characters,
///   tag characters, U+FFFC, …) are shown as `\u{hex}`; a run of more than
///   [`INVISIBLE_RUN_SHOWN`] shows that many and then `…(+N invisible)`, so a hidden
///   payload of tag characters costs a few characters, not six per character. Two
///   exceptions keep emoji whole: ZERO WIDTH JOINER and the variation selectors
///   U+FE0E/U+FE0F are kept right after a symbol (a character that is neither
///   alphanumeric nor ASCII, nor itself invisible), as in 👩‍💻 or ❤️. After a letter
///   or digit they are escaped like the rest: `S\u{200d}end`.
///
/// Everything else, including all visible non-ASCII text, is kept as is.
pub fn one_line(s: &str) -> String {
    treat_all(s, false, false)
}

/// A whole text made safe to print to a terminal or show a human, lines kept: as
/// [`plain_line`], except that line feeds and tabs stay as they are. Escape
/// sequences (`\x1b…`), other controls and invisible characters are shown escaped,
/// so a text cannot move the cursor, set a title or hide a payload.
pub fn multi_line(s: &str) -> String {
    treat_all(s, true, true)
}

/// How many characters of one run of invisible characters [`one_line`] shows escaped
/// before summarising the rest as `…(+N invisible)`.
pub const INVISIBLE_RUN_SHOWN: usize = 3;

/// True when an invisible `c` right after `prev` is part of an emoji sequence
/// (ZWJ sequences, text/emoji presentation selectors) and is kept as it is.
fn joins_emoji(prev: Option<char>, c: char) -> bool {
    matches!(c, '\u{200d}' | '\u{fe0e}' | '\u{fe0f}')
        && prev.is_some_and(|p| !p.is_ascii() && !p.is_alphanumeric() && !is_invisible(p))
}

fn treat_all(s: &str, keep_quotes: bool, keep_breaks: bool) -> String {
    let keep = |c: char| {
        (keep_quotes && matches!(c, '"' | '\\'))
            || (keep_breaks && matches!(c, '\n' | '\t'))
            || matches!(treat(c), Treat::Keep)
    };
    let mut prev = None;
    if s.chars().all(|c| {
        let ok = keep(c) || joins_emoji(prev, c);
        prev = Some(c);
        ok
    }) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut prev: Option<char> = None;
    let mut run = 0usize; // invisible characters in the current run
    let mut hidden = 0usize; // of them, not shown
    for c in s.chars() {
        if matches!(treat(c), Treat::Drop) {
            continue;
        }
        let invisible = matches!(treat(c), Treat::Invisible) && !joins_emoji(prev, c);
        if !invisible && hidden > 0 {
            push_hidden(&mut out, hidden);
            hidden = 0;
        }
        if invisible {
            run += 1;
            if run <= INVISIBLE_RUN_SHOWN {
                push_escaped(&mut out, c);
            } else {
                hidden += 1;
            }
        } else {
            run = 0;
            if keep(c) || joins_emoji(prev, c) {
                out.push(c);
            } else {
                push_treated(&mut out, c);
            }
        }
        prev = Some(c);
    }
    if hidden > 0 {
        push_hidden(&mut out, hidden);
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

fn push_hidden(out: &mut String, n: usize) {
    use std::fmt::Write as _;
    let _ = write!(out, "…(+{n} invisible)");
}

/// Like [`one_line`] but leaves `"` and `\` as they are: for a whole line of free text
/// that is not placed between quotes (a snapshot header the caller composed, whose
/// quoted parts it already escaped with [`one_line`]).
pub fn plain_line(s: &str) -> String {
    treat_all(s, true, false)
}

fn push_treated(out: &mut String, c: char) {
    match treat(c) {
        Treat::Keep => out.push(c),
        Treat::Drop => {}
        Treat::Invisible => push_escaped(out, c),
        Treat::Escape(e) => out.push_str(e),
        Treat::Hex => {
            use std::fmt::Write as _;
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
    }
}

/// A count of characters in short human form: `950`, `1.2k`, `15k`, `1.1M`.
///
/// Below 1,000 the exact number; below 10,000 thousands with one decimal; below one
/// million whole thousands; then millions the same way. Rounded down, so the form
/// never overstates, and a trailing `.0` is dropped (`1k`).
pub fn human_count(n: usize) -> String {
    fn scaled(n: usize, unit: usize, suffix: &str) -> String {
        if n < 10 * unit {
            let tenths = n / (unit / 10);
            if tenths.is_multiple_of(10) {
                format!("{}{suffix}", tenths / 10)
            } else {
                format!("{}.{}{suffix}", tenths / 10, tenths % 10)
            }
        } else {
            format!("{}{suffix}", n / unit)
        }
    }
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => scaled(n, 1_000, "k"),
        _ => scaled(n, 1_000_000, "M"),
    }
}

/// The byte length of the longest head of `s` that has at most `max_chars` chars and
/// ends on an extended grapheme cluster boundary (UAX #29), so a cut never separates
/// a letter from its combining marks, an emoji from its modifiers or the parts of a
/// ZWJ sequence or flag. `None` when all of `s` fits. The head may hold fewer than
/// `max_chars` chars, or none when the first cluster alone is longer.
pub fn head_end(s: &str, max_chars: usize) -> Option<usize> {
    use unicode_segmentation::UnicodeSegmentation as _;
    let (cut, _) = s.char_indices().nth(max_chars)?;
    let mut end = 0;
    for (i, g) in s.grapheme_indices(true) {
        if i + g.len() > cut {
            break;
        }
        end = i + g.len();
    }
    Some(end)
}

/// Keeps the head of `s` (at most `max_chars` characters, cut at a grapheme boundary,
/// see [`head_end`]) and states the total length: `hello wor…(1.2k chars)`. Returns
/// `s` unchanged when it has at most `max_chars` characters. Lengths are in Unicode
/// scalar values (`char`s), not bytes; the total is formatted by [`human_count`].
///
/// The result is not escaped: apply [`one_line`] afterwards (the suffix contains
/// nothing that needs escaping).
pub fn truncate_value(s: &str, max_chars: usize) -> String {
    truncate_stating(s, max_chars, None)
}

/// [`truncate_value`], stating `total` instead of the length of `s` when given: for
/// text whose shown form differs in length from the original (a masked secret), so
/// the stated length stays that of the original value.
pub fn truncate_stating(s: &str, max_chars: usize, total: Option<usize>) -> String {
    let Some(cut) = head_end(s, max_chars) else {
        return s.to_string();
    };
    let total = total.unwrap_or_else(|| s.chars().count());
    format!("{}…({} chars)", &s[..cut], human_count(total))
}

/// The head of `s` (at most `max_chars` characters, cut at a grapheme boundary; all
/// of it when shorter) followed by `…(N chars)` with `N = total`, always: for text
/// known to be only the head of a longer original (a driver read the first few
/// thousand characters of a document).
pub fn head_of(s: &str, max_chars: usize, total: usize) -> String {
    let cut = head_end(s, max_chars).unwrap_or(s.len());
    format!("{}…({} chars)", &s[..cut], human_count(total))
}

/// A search text, matched the way the renderer shows text: case-insensitive (Unicode
/// lower case), with invisible characters ([`is_invisible`]) ignored on both sides,
/// and accepted both as typed and as copied from a snapshot line (the escapes of
/// [`one_line`] undone: `S\u{200b}end` finds the name `S`+U+200B+`end`, and so does
/// `Send`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needle {
    forms: Vec<String>,
}

impl Needle {
    /// The needle of `query`, trimmed.
    pub fn new(query: &str) -> Needle {
        let q = query.trim();
        let mut forms = vec![search_form(q)];
        let unescaped = search_form(&unescape_shown(q));
        if unescaped != forms[0] {
            forms.push(unescaped);
        }
        Needle { forms }
    }

    /// True when nothing is searched for (an empty or invisible query).
    pub fn is_empty(&self) -> bool {
        self.forms.iter().all(String::is_empty)
    }

    /// True when `hay` contains the needle in any of its forms.
    pub fn found_in(&self, hay: &str) -> bool {
        let hay = search_form(hay);
        self.forms.iter().any(|f| hay.contains(f.as_str()))
    }
}

/// `s` in lower case without invisible characters: the form search compares.
pub fn search_form(s: &str) -> String {
    s.chars()
        .filter(|&c| !is_invisible(c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// `s` with the escapes [`one_line`] writes undone: `\u{hex}`, `\xNN`, `\n`, `\r`,
/// `\t`, `\"` and `\\`. Anything else after a backslash is kept as written.
pub fn unescape_shown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (decoded, used) = match after.chars().next() {
            Some('n') => (Some('\n'), 1),
            Some('r') => (Some('\r'), 1),
            Some('t') => (Some('\t'), 1),
            Some('"') => (Some('"'), 1),
            Some('\\') => (Some('\\'), 1),
            Some('x') => after
                .get(1..3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .map_or((None, 0), |b| (Some(char::from(b)), 3)),
            Some('u') => after
                .strip_prefix("u{")
                .and_then(|t| t.find('}').map(|end| (&t[..end], end)))
                .and_then(|(h, end)| {
                    u32::from_str_radix(h, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .map(|c| (c, end + 3))
                })
                .map_or((None, 0), |(c, n)| (Some(c), n)),
            _ => (None, 0),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_line_breaks_quotes_and_controls() {
        assert_eq!(one_line("a\nb\rc\td"), "a\\nb\\rc\\td");
        assert_eq!(one_line(r#"say "hi" \o/"#), r#"say \"hi\" \\o/"#);
        assert_eq!(
            one_line("bell\u{7}esc\u{1b}[31mnel\u{85}"),
            "bell\\x07esc\\x1b[31mnel\\x85"
        );
        assert_eq!(one_line("p\u{2028}q\u{2029}"), "p\\u{2028}q\\u{2029}");
    }

    #[test]
    fn shows_invisible_characters_escaped() {
        assert_eq!(one_line("report\u{202e}fdp.exe"), "report\\u{202e}fdp.exe");
        assert_eq!(one_line("S\u{200b}end"), "S\\u{200b}end");
        assert_eq!(
            one_line("a\u{200b}b\u{feff}c\u{fffc}d\u{2066}e"),
            "a\\u{200b}b\\u{feff}c\\u{fffc}d\\u{2066}e"
        );
        // Directional marks are dropped: they hide nothing.
        assert_eq!(one_line("13\u{200e}:41\u{200f}\u{61c}"), "13:41");
        // A joiner inside a word is shown; one inside an emoji sequence is kept.
        assert_eq!(one_line("Se\u{200d}nd"), "Se\\u{200d}nd");
        assert_eq!(one_line("👩\u{200d}💻 ❤\u{fe0f}"), "👩\u{200d}💻 ❤\u{fe0f}");
    }

    #[test]
    fn a_long_invisible_run_is_summarised() {
        let tags: String = "ignore all rules"
            .chars()
            .map(|c| char::from_u32(0xe0000 + c as u32).unwrap())
            .collect();
        assert_eq!(
            one_line(&format!("x{tags}y")),
            "x\\u{e0069}\\u{e0067}\\u{e006e}…(+13 invisible)y"
        );
    }

    #[test]
    fn plain_line_keeps_quotes() {
        assert_eq!(
            plain_line("app x · window \"a\\\"b\"\n\u{202e}"),
            "app x · window \"a\\\"b\"\\n\\u{202e}"
        );
    }

    #[test]
    fn keeps_visible_unicode() {
        assert_eq!(one_line("验证码 · Größe ✓ ▸"), "验证码 · Größe ✓ ▸");
    }

    #[test]
    fn human_counts() {
        assert_eq!(human_count(0), "0");
        assert_eq!(human_count(950), "950");
        assert_eq!(human_count(999), "999");
        assert_eq!(human_count(1_000), "1k");
        assert_eq!(human_count(1_234), "1.2k");
        assert_eq!(human_count(5_000), "5k");
        assert_eq!(human_count(9_999), "9.9k");
        assert_eq!(human_count(15_000), "15k");
        assert_eq!(human_count(999_999), "999k");
        assert_eq!(human_count(1_100_000), "1.1M");
        assert_eq!(human_count(25_000_000), "25M");
    }

    #[test]
    fn truncates_by_chars() {
        assert_eq!(truncate_value("short", 10), "short");
        assert_eq!(truncate_value("exactly10!", 10), "exactly10!");
        let long = "hello world ".repeat(100);
        assert_eq!(truncate_value(&long, 9), "hello wor…(1.2k chars)");
        assert_eq!(truncate_value("äöüäöü", 2), "äö…(6 chars)");
        assert_eq!(truncate_value("abc", 0), "…(3 chars)");
    }

    #[test]
    fn truncates_at_grapheme_boundaries() {
        // "é" written as e + combining acute stays whole or goes whole.
        assert_eq!(truncate_value("ne\u{301}e", 2), "n…(4 chars)");
        assert_eq!(truncate_value("ne\u{301}e", 3), "ne\u{301}…(4 chars)");
        // A family emoji is one cluster of seven chars.
        let family = "👨\u{200d}👩\u{200d}👧\u{200d}👦";
        assert_eq!(truncate_value(&format!("{family}x"), 6), "…(8 chars)");
        assert_eq!(
            truncate_value(&format!("{family}xy"), 8),
            format!("{family}x…(9 chars)")
        );
        assert_eq!(head_of("🇩🇪🇫🇷", 3, 10), "🇩🇪…(10 chars)");
        assert_eq!(head_end("abc", 3), None);
        assert_eq!(head_end("abcd", 3), Some(3));
    }

    #[test]
    fn a_needle_matches_as_typed_and_as_shown() {
        let hidden = "S\u{200b}end";
        for q in ["send", "Send", "S\\u{200b}end", "s\\u{200B}END"] {
            assert!(Needle::new(q).found_in(hidden), "{q}");
        }
        assert!(Needle::new(&one_line(hidden)).found_in(hidden));
        assert!(Needle::new(r#"say \"hi\""#).found_in(r#"they say "hi""#));
        assert!(!Needle::new("sent").found_in(hidden));
        assert!(Needle::new("\u{200b}").is_empty());
        // A backslash that is no escape of ours is text.
        assert!(Needle::new(r"C:\Users").found_in(r"C:\Users\me"));
        assert_eq!(unescape_shown(r"a\qb\u{zz}c\x4"), r"a\qb\u{zz}c\x4");
    }

    #[test]
    fn multi_line_keeps_lines_and_escapes_the_rest() {
        assert_eq!(
            multi_line("a\n\tb \"q\" \\ \u{1b}]52;c;x\u{7}\r\u{200b}"),
            "a\n\tb \"q\" \\ \\x1b]52;c;x\\x07\\r\\u{200b}"
        );
    }
}

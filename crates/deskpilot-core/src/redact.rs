//! Redaction of secrets in UI text.
//!
//! Owns the rules that decide which names and values may be shown. Render, diff and
//! the ref fingerprints all take text through this module, so no path can show a
//! secret another path hides:
//!
//! - a password field ([`State::Password`]) shows [`PASSWORD_MASK`] (`••••`) when it
//!   holds anything, whatever the length, and never its text;
//! - a 6–8 digit value next to words like "code", "OTP", "verification" or "验证码"
//!   (in the element's own name or description, its parent's name, or a sibling's
//!   name) is a one-time code: `[masked code, 6 digits]`;
//! - tokens that look like credentials are replaced wherever they occur in a name or
//!   value: `[masked secret, 40 chars]` (see [`mask_secrets`] for the rules).
//!
//! The masked forms state the length so a caller can tell a field is filled, and
//! nothing else. This module must never log, store or return the original text of
//! anything it masks.

use std::borrow::Cow;

use crate::node::Node;
use crate::sanitize;
use crate::state::State;

/// What a non-empty password field's value renders as, regardless of its length.
pub const PASSWORD_MASK: &str = "••••";

/// Minimum length (chars) of a prefix-less token before the entropy rule looks at it;
/// shorter random strings are too often ordinary identifiers.
const GENERIC_MIN_CHARS: usize = 20;
/// From this length a token needs no mixed case to count as random (hex and base32
/// keys are single-case).
const GENERIC_SINGLE_CASE_MIN_CHARS: usize = 32;
/// Shannon entropy (bits per char) a prefix-less token needs. Random base62 of 20
/// chars measures about 4.0; English words and file names mostly stay below 3.5.
const GENERIC_MIN_ENTROPY: f64 = 3.5;
/// A run of more digits than this is a date or a counter (`20240101`), not
/// randomness: random base62 of 40 chars has a 6-digit run less than 0.1 % of the time.
const GENERIC_MAX_DIGIT_RUN: usize = 5;

/// Known credential prefixes and the least number of characters that must follow.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-", 16),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("ghr_", 20),
    ("github_pat_", 20),
    ("glpat-", 16),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("AIza", 30),
    ("hf_", 30),
    ("npm_", 30),
];

/// AWS access key id prefixes; followed by exactly 16 of `[A-Z0-9]`.
const AWS_PREFIXES: &[&str] = &[
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA",
];

fn is_run_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '=' | '.' | '/' | '~' | '-')
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-')
}

fn is_known_token(run: &str) -> bool {
    for (prefix, min_rest) in PREFIXES {
        if let Some(rest) = run.strip_prefix(prefix)
            && rest.len() >= *min_rest
            && rest.chars().all(is_token_char)
        {
            return true;
        }
    }
    if run.len() == 20
        && AWS_PREFIXES.iter().any(|p| run.starts_with(p))
        && run
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return true;
    }
    // JSON Web Token: base64url header starting `{"` (`eyJ`), payload, signature.
    if run.starts_with("eyJ") && run.len() >= 30 {
        let parts: Vec<&str> = run.split('.').collect();
        if parts.len() == 3
            && !parts[0].is_empty()
            && !parts[1].is_empty()
            && parts.iter().all(|p| p.chars().all(is_token_char))
        {
            return true;
        }
    }
    false
}

fn entropy_bits_per_char(s: &str) -> f64 {
    let mut counts = [0u32; 128];
    let mut n = 0u32;
    for b in s.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
        n += 1;
    }
    let n = f64::from(n);
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// The prefix-less rule for one segment of a run (runs are split at `.`, `/`, `~`).
fn is_random_segment(seg: &str) -> bool {
    let len = seg.len();
    if len < GENERIC_MIN_CHARS
        || !seg
            .chars()
            .all(|c| is_token_char(c) || c == '+' || c == '=')
    {
        return false;
    }
    let (mut digits, mut upper, mut lower, mut run, mut max_run) = (0, 0, 0, 0, 0);
    for c in seg.chars() {
        if c.is_ascii_digit() {
            digits += 1;
            run += 1;
            max_run = max_run.max(run);
        } else {
            run = 0;
            if c.is_ascii_uppercase() {
                upper += 1;
            } else if c.is_ascii_lowercase() {
                lower += 1;
            }
        }
    }
    let mixed_case = upper > 0 && lower > 0;
    // Git object ids (SHA-1 / SHA-256 in lowercase hex) are identifiers, not secrets.
    let git_id = (len == 40 || len == 64)
        && seg
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    digits >= 2
        && upper + lower >= 4
        && (mixed_case || len >= GENERIC_SINGLE_CASE_MIN_CHARS)
        && max_run <= GENERIC_MAX_DIGIT_RUN
        && !git_id
        && entropy_bits_per_char(seg) >= GENERIC_MIN_ENTROPY
}

fn secret_mask(chars: usize) -> String {
    format!("[masked secret, {chars} chars]")
}

/// Replaces every credential-looking token in `text` by `[masked secret, N chars]`
/// (N = the token's length in chars). Borrowed when nothing was masked.
///
/// A token is a maximal run of `[A-Za-z0-9_+=./~-]` (leading/trailing `.`, `/`, `~`,
/// `-` excluded). It is masked whole when it starts with a known credential prefix
/// (`sk-`, `sk_live_`, `ghp_`, `github_pat_`, `glpat-`, `xoxb-`, `AIza`, `hf_`,
/// `npm_`, …) followed by enough token characters, is an AWS access key id
/// (`AKIA` + 16), or is a JSON Web Token (`eyJ….….…`). Otherwise each part between
/// `.`, `/` or `~` is masked when it looks random: at least 20 chars of
/// `[A-Za-z0-9_+=-]` with ≥ 2 digits, ≥ 4 letters, mixed case (or ≥ 32 chars), no run
/// of more than 5 digits, Shannon entropy ≥ 3.5 bits/char, and not a lowercase-hex
/// git object id (40 or 64 chars).
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already accounted for in `out`
    let bytes_len = text.len();
    let mut i = 0;
    while i < bytes_len {
        let c = text[i..].chars().next().expect("i is on a char boundary");
        if !is_run_char(c) {
            i += c.len_utf8();
            continue;
        }
        let start = i;
        let end = text[start..]
            .find(|c: char| !is_run_char(c))
            .map_or(bytes_len, |off| start + off);
        i = end;
        let run = &text[start..end];
        let trim = |c: char| matches!(c, '.' | '/' | '~' | '-');
        let core = run.trim_matches(trim);
        if core.len() < 10 {
            continue;
        }
        let core_start = start + (run.len() - run.trim_start_matches(trim).len());
        let mut pieces: Vec<(usize, usize)> = Vec::new(); // byte ranges to mask
        let assigned = core.rfind('=').map(|eq| eq + 1); // `KEY=sk-…`
        if is_known_token(core) {
            pieces.push((core_start, core_start + core.len()));
        } else if let Some(v) = assigned.filter(|&v| is_known_token(&core[v..])) {
            pieces.push((core_start + v, core_start + core.len()));
        } else {
            let mut seg_start = core_start;
            for (off, ch) in core.char_indices().chain([(core.len(), '/')]) {
                if matches!(ch, '.' | '/' | '~') {
                    let seg_end = core_start + off;
                    if is_random_segment(&text[seg_start..seg_end]) {
                        pieces.push((seg_start, seg_end));
                    }
                    seg_start = seg_end + 1;
                }
            }
        }
        for (a, b) in pieces {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..a]);
            o.push_str(&secret_mask(text[a..b].chars().count()));
            copied = b;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
    }
}

/// True when `text` talks about a one-time or verification code: the words `code`,
/// `codes`, `otp`, `totp`, `pin`, `2fa`, `mfa`, `verification`, `verify`, `passcode`,
/// `authenticator`, the phrases `one-time` / `two-factor`, or 验证码, 驗證碼, 校验码,
/// 动态码, 认证码, 確認コード, 인증. ASCII words match whole (case-insensitive), so
/// `footprint` does not match `otp`. Postal and ZIP codes are excluded.
pub fn mentions_code(text: &str) -> bool {
    const CJK: &[&str] = &[
        "验证码",
        "驗證碼",
        "校验码",
        "动态码",
        "认证码",
        "確認コード",
        "인증",
    ];
    const WORDS: &[&str] = &[
        "code",
        "codes",
        "otp",
        "totp",
        "pin",
        "2fa",
        "mfa",
        "verification",
        "verify",
        "passcode",
        "authenticator",
    ];
    if CJK.iter().any(|w| text.contains(w)) {
        return true;
    }
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words
        .iter()
        .any(|w| matches!(*w, "postal" | "zip" | "postcode"))
    {
        return false;
    }
    words.iter().any(|w| WORDS.contains(w))
        || words
            .windows(2)
            .any(|p| matches!(p, ["one", "time"] | ["two", "factor"]))
}

/// The number of digits when `value` has the shape of a one-time code: 6 to 8 ASCII
/// digits, optionally split once by a space or `-` (`493 817`), surrounding
/// whitespace ignored.
pub fn otp_digits(value: &str) -> Option<usize> {
    let v = value.trim();
    let mut digits = 0;
    let mut separators = 0;
    for c in v.chars() {
        match c {
            '0'..='9' => digits += 1,
            ' ' | '-' => separators += 1,
            _ => return None,
        }
    }
    let starts_and_ends_with_digit =
        v.starts_with(|c: char| c.is_ascii_digit()) && v.ends_with(|c: char| c.is_ascii_digit());
    ((6..=8).contains(&digits) && separators <= 1 && starts_and_ends_with_digit).then_some(digits)
}

/// True when the words around `node` mark its value as a one-time code: its own name
/// or description, its parent's name, or any sibling's name (labels sit next to the
/// field they describe) [`mentions_code`].
pub fn otp_context(node: &Node, parent: Option<&Node>) -> bool {
    if mentions_code(&node.name) || node.description.as_deref().is_some_and(mentions_code) {
        return true;
    }
    let Some(p) = parent else {
        return false;
    };
    mentions_code(&p.name)
        || p.children
            .iter()
            .filter(|s| !std::ptr::eq(*s, node))
            .any(|s| mentions_code(&s.name))
}

/// The value of `node` as it may be shown, before truncation and escaping; `None`
/// when the node has no value. `parent` is the node's parent in the tree it was read
/// in (for the one-time-code rule); pass `None` for a root.
///
/// Password fields give [`PASSWORD_MASK`] (or `""` when empty); one-time codes give
/// `[masked code, N digits]`; everything else goes through [`mask_secrets`].
pub fn redacted_value<'a>(node: &'a Node, parent: Option<&Node>) -> Option<Cow<'a, str>> {
    let v = node.value.as_deref()?;
    if node.has(State::Password) {
        return Some(Cow::Borrowed(if v.is_empty() { "" } else { PASSWORD_MASK }));
    }
    if let Some(n) = otp_digits(v)
        && otp_context(node, parent)
    {
        return Some(Cow::Owned(format!("[masked code, {n} digits]")));
    }
    Some(mask_secrets(v))
}

/// A name as it may be shown inside `"…"`: secrets masked, cut to `max_chars` chars
/// with the total length stated ([`sanitize::truncate_value`]), then escaped to one
/// line ([`sanitize::one_line`]).
pub fn display_name(name: &str, max_chars: usize) -> String {
    let masked = mask_secrets(name);
    let total = matches!(masked, Cow::Owned(_)).then(|| name.chars().count());
    sanitize::one_line(&sanitize::truncate_stating(&masked, max_chars, total))
}

/// A value as it may be shown inside `value="…"`: [`redacted_value`], cut to
/// `max_chars` chars with the total stated, escaped to one line. `None` when the node
/// has no value. This is the only way render and diff turn a value into text.
pub fn display_value(node: &Node, parent: Option<&Node>, max_chars: usize) -> Option<String> {
    let v = redacted_value(node, parent)?;
    Some(cut_redacted(node, &v, max_chars))
}

/// Cuts and escapes an already redacted value of `node`. A cut states the original
/// length, except for password fields, whose length is never revealed.
pub(crate) fn cut_redacted(node: &Node, redacted: &str, max_chars: usize) -> String {
    let cut = match (&node.value, node.has(State::Password)) {
        (Some(raw), false) => match partial_length(node) {
            Some(total) => sanitize::head_of(redacted, max_chars, total),
            None => {
                let total = (raw != redacted).then(|| raw.chars().count());
                sanitize::truncate_stating(redacted, max_chars, total)
            }
        },
        _ => sanitize::truncate_value(redacted, max_chars),
    };
    sanitize::one_line(&cut)
}

/// The full length (chars) of a value the driver read only the head of
/// ([`Node::value_length`] above the chars in `value`); `None` when `value` is whole.
pub(crate) fn partial_length(node: &Node) -> Option<usize> {
    let have = node.value.as_deref().map_or(0, |v| v.chars().count());
    node.value_length
        .and_then(|t| usize::try_from(t).ok())
        .filter(|&t| t > have)
}

/// The length (chars) of a node's whole value: [`Node::value_length`] when the driver
/// read only a head, else the chars in `value`.
pub(crate) fn full_length(node: &Node) -> usize {
    partial_length(node).unwrap_or_else(|| node.value.as_deref().map_or(0, |v| v.chars().count()))
}

/// Replaces, in place, every name and value under `root` by what may be shown
/// (secrets masked, a password field's value reduced to [`PASSWORD_MASK`], one-time
/// codes masked) and drops whatever a password field contains, so the tree can be
/// stored (a state file, an audit record) without keeping a secret. Render and diff
/// of a scrubbed tree print the same as of the original, except that the length
/// stated for a cut value that held a masked secret then counts the mask.
pub fn scrub(root: &mut Node) {
    root.value = redacted_value(root, None).map(Cow::into_owned);
    if root.has(State::Password) {
        root.value_length = None;
    }
    root.name = mask_secrets(&root.name).into_owned();
    root.description = root
        .description
        .as_deref()
        .map(|d| mask_secrets(d).into_owned());
    scrub_children(root);
}

fn scrub_children(parent: &mut Node) {
    if parent.has(State::Password) {
        parent.children.clear();
        return;
    }
    let values: Vec<Option<String>> = parent
        .children
        .iter()
        .map(|c| redacted_value(c, Some(parent)).map(Cow::into_owned))
        .collect();
    for (c, v) in parent.children.iter_mut().zip(values) {
        c.value = v;
        if c.has(State::Password) {
            c.value_length = None;
        }
        c.name = mask_secrets(&c.name).into_owned();
        c.description = c
            .description
            .as_deref()
            .map(|d| mask_secrets(d).into_owned());
        scrub_children(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::role::Role;

    #[test]
    fn masks_known_tokens() {
        let t = "key sk-proj-Xq7Lm2Np9Rs4Tv8Wz1Yb6Cd3Ef5Gh0Jk end";
        assert_eq!(mask_secrets(t), "key [masked secret, 40 chars] end");
        assert_eq!(
            mask_secrets("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
            "[masked secret, 40 chars]"
        );
        assert_eq!(
            mask_secrets("id AKIAIOSFODNN7EXAMPLE."),
            "id [masked secret, 20 chars]."
        );
        let jwt =
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(mask_secrets(jwt), "[masked secret, 83 chars]");
    }

    #[test]
    fn masks_random_segments_only() {
        assert_eq!(
            mask_secrets("https://x.io/reset?token=Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh"),
            "https://x.io/reset?[masked secret, 32 chars]"
        );
        assert_eq!(
            mask_secrets("/api/v2/Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh/items"),
            "/api/v2/[masked secret, 26 chars]/items"
        );
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        for t in [
            "Screenshot_20240101-123456.png",
            "/home/user/projects/deskpilot-core/src/render.rs",
            "getElementsByTagName",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "Hello, world! This is a sentence with words.",
            "123e4567",
            "sk-learn",
        ] {
            assert_eq!(mask_secrets(t), t, "{t}");
            assert!(matches!(mask_secrets(t), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn code_words() {
        assert!(mentions_code("Verification code"));
        assert!(mentions_code("Enter the OTP"));
        assert!(mentions_code("请输入验证码"));
        assert!(mentions_code("One-time passcode"));
        assert!(!mentions_code("Footprint"));
        assert!(!mentions_code("Postal code"));
        assert!(!mentions_code("Barcode scanner"));
    }

    #[test]
    fn otp_shapes() {
        assert_eq!(otp_digits("493817"), Some(6));
        assert_eq!(otp_digits(" 493 817 "), Some(6));
        assert_eq!(otp_digits("12345678"), Some(8));
        assert_eq!(otp_digits("12345"), None);
        assert_eq!(otp_digits("123456789"), None);
        assert_eq!(otp_digits("12-34-56"), None);
        assert_eq!(otp_digits("-123456"), None);
        assert_eq!(otp_digits("12a456"), None);
    }

    #[test]
    fn values_by_context() {
        let label = Node::new("h:1", Role::Label, "Verification code");
        let field = Node::new("h:2", Role::Textbox, "").value("493817");
        let parent = Node::new("h:0", Role::Group, "").children(vec![label, field]);
        let field = &parent.children[1];
        assert_eq!(
            redacted_value(field, Some(&parent)).as_deref(),
            Some("[masked code, 6 digits]")
        );
        assert_eq!(redacted_value(field, None).as_deref(), Some("493817"));

        let pw = Node::new("h:3", Role::Textbox, "Password")
            .state(State::Password)
            .value("hunter2-SECRET");
        assert_eq!(redacted_value(&pw, None).as_deref(), Some("••••"));
        let empty = Node::new("h:4", Role::Textbox, "Password")
            .state(State::Password)
            .value("");
        assert_eq!(redacted_value(&empty, None).as_deref(), Some(""));
        assert_eq!(
            redacted_value(&Node::new("h:5", Role::Button, "x"), None),
            None
        );
    }

    #[test]
    fn display_forms() {
        let n = Node::new("h:1", Role::Textbox, "").value("line1\nline2 sk-abcdefghijklmnop1234");
        assert_eq!(
            display_value(&n, None, 120).as_deref(),
            Some("line1\\nline2 [masked secret, 23 chars]")
        );
        assert_eq!(
            display_value(&n, None, 5).as_deref(),
            Some("line1…(35 chars)")
        );
        assert_eq!(display_name("say \"hi\"", 120), "say \\\"hi\\\"");
    }
}

//! Redaction of secrets in UI text.
//!
//! Owns the rules that decide which names and values may be shown. Render, diff and
//! the ref fingerprints all take text through this module, so no path can show a
//! secret another path hides:
//!
//! - a secret field ([`is_secret_field`]: [`State::Password`], or a textbox whose own
//!   name says "password", which is what a "show password" toggle leaves behind)
//!   shows [`PASSWORD_MASK`] (`••••`) when it holds anything, whatever the length, and
//!   never its text; its name, when it is (or contains) the typed text, shows as
//!   `••••` too, and whatever it contains (text runs, a caret object) is never shown;
//! - a 6–8 digit value next to words like "code", "OTP", "verification" or "验证码"
//!   (in the element's own name or description, its parent's name, or the name of a
//!   sibling up to [`OTP_SIBLING_REACH`] places away) is a one-time code:
//!   `[masked code, 6 digits]`; the same goes for a 6–8 digit number inside running
//!   text that mentions such a word close by ("Your code is 493817");
//! - credentials are replaced wherever they occur in a name or value:
//!   `[masked secret, 40 chars]`, `[masked private key, 1700 chars]` (see
//!   [`mask_secrets`] for the rules and what is deliberately left alone).
//!
//! The masked forms state the length so a caller can tell a field is filled, and
//! nothing else. This module must never log, store or return the original text of
//! anything it masks.

use std::borrow::Cow;

use crate::node::Node;
use crate::role::Role;
use crate::sanitize;
use crate::state::State;

/// What a non-empty password field's value renders as, regardless of its length.
pub const PASSWORD_MASK: &str = "••••";

/// How many places before or after a field a sibling label may sit and still mark
/// the field's value as a one-time code. Labels sit next to what they describe; a
/// bounded reach also keeps the check O(1) per element in a container of thousands.
pub const OTP_SIBLING_REACH: usize = 3;

/// Characters of a label examined for code words: labels are short, and a bound keeps
/// a pathological name from costing more than a label's worth of work per element.
const LABEL_CHARS: usize = 256;

/// Characters before (and after) a number in running text searched for a code word.
const CODE_WORD_REACH_BEFORE: usize = 60;
const CODE_WORD_REACH_AFTER: usize = 40;

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
/// Hex keys (API keys, session secrets) are at least this long: 128 bits.
const HEX_KEY_MIN_CHARS: usize = 32;
/// Mean length of the letter words in a camel-case or slug identifier, at or above
/// which a token reads as words (`Base64EncodedSha256Digest`, `how-to-install-22-04`)
/// rather than randomness (random base62 averages about 2 letters per word).
const WORDLIKE_MEAN_LETTERS: usize = 3;
/// Longest all-capitals run a word-like identifier holds (`HTTP`, `UUID`); random
/// upper-case keys have longer ones.
const WORDLIKE_MAX_ACRONYM: usize = 4;
/// Minimum length of a base64 blob (`[A-Za-z0-9+/=]` with `/` or `+`) masked whole:
/// an AWS secret access key is 40.
const BASE64_BLOB_MIN_CHARS: usize = 30;

/// Known credential prefixes and the least number of characters that must follow.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-", 16),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("rk_test_", 16),
    ("whsec_", 16),
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
    ("xoxe-", 10),
    ("xoxe.", 10),
    ("xapp-", 10),
    ("AIza", 30),
    ("hf_", 30),
    ("npm_", 30),
    ("pypi-", 30),
    ("shpat_", 20),
    ("shpss_", 20),
];

/// AWS access key id prefixes; followed by exactly 16 of `[A-Z0-9]`.
const AWS_PREFIXES: &[&str] = &[
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA",
];

/// Key names whose value is a secret in `KEY=value` and `"key": "value"`, compared
/// against the key lowercased with everything but letters and digits removed, as a
/// suffix (`DB_PASSWORD`, `github-token`, `AWS_SECRET_ACCESS_KEY`, `client_secret`).
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "authkey",
    "credential",
    "credentials",
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
    // JSON Web Token: base64url header starting `{"` (`eyJ`), payload, and a
    // signature (absent for `alg: none`, whose payload then also starts `eyJ`).
    if run.starts_with("eyJ") && run.len() >= 30 {
        let parts: Vec<&str> = run.split('.').collect();
        let base64url = parts.iter().all(|p| p.chars().all(is_token_char));
        let signed = parts.len() == 3 && !parts[0].is_empty() && !parts[1].is_empty();
        let unsigned = parts.len() == 2 && parts[1].starts_with("eyJ");
        if base64url && (signed || unsigned) {
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

/// True when `s` reads as words: split at `-`, `_`, `+`, `/`, digits and camel-case
/// humps (`HTTPServer` → `HTTP`, `Server`), no capital run is longer than
/// [`WORDLIKE_MAX_ACRONYM`] and the lower-case words average at least
/// [`WORDLIKE_MEAN_LETTERS`] letters. Identifiers, slugs and paths do; random tokens
/// do not.
fn is_wordlike(s: &str) -> bool {
    let cs: Vec<char> = s.chars().collect();
    let (mut words, mut letters) = (0usize, 0usize);
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_ascii_uppercase() {
            let start = i;
            while i < cs.len() && cs[i].is_ascii_uppercase() {
                i += 1;
            }
            let caps = i - start;
            let lower_start = i;
            while i < cs.len() && cs[i].is_ascii_lowercase() {
                i += 1;
            }
            let lower = i - lower_start;
            // `HTTPServer`: the last capital starts the word `Server`.
            let acronym = if lower > 0 { caps - 1 } else { caps };
            if acronym > WORDLIKE_MAX_ACRONYM {
                return false;
            }
            if lower > 0 {
                words += 1;
                letters += lower + 1;
            }
        } else if c.is_ascii_lowercase() {
            let start = i;
            while i < cs.len() && cs[i].is_ascii_lowercase() {
                i += 1;
            }
            words += 1;
            letters += i - start;
        } else {
            i += 1;
        }
    }
    words > 0 && letters >= WORDLIKE_MEAN_LETTERS * words
}

/// A UUID (`8-4-4-4-12` hex digits): an identifier, not a credential.
fn is_uuid(seg: &str) -> bool {
    let parts: Vec<&str> = seg.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A hex key: at least [`HEX_KEY_MIN_CHARS`] hex digits in one case, with at least
/// four letters and four digits, and not a lower-case git object id or SHA-1/SHA-256
/// digest (40 or 64 chars), which name things rather than unlock them.
fn is_hex_key(seg: &str) -> bool {
    let len = seg.len();
    if len < HEX_KEY_MIN_CHARS || !seg.chars().all(|c| c.is_ascii_hexdigit()) {
        return false;
    }
    let digits = seg.chars().filter(char::is_ascii_digit).count();
    let lower = seg.chars().filter(char::is_ascii_lowercase).count();
    let upper = seg.chars().filter(char::is_ascii_uppercase).count();
    let digest = (len == 40 || len == 64) && upper == 0;
    digits >= 4 && lower + upper >= 4 && (lower == 0 || upper == 0) && !digest
}

/// The prefix-less rule for one segment of a run (runs are split at `.`, `/`, `~`).
fn is_random_segment(seg: &str) -> bool {
    if is_hex_key(seg) {
        return true;
    }
    let len = seg.len();
    if len < GENERIC_MIN_CHARS
        || !seg
            .chars()
            .all(|c| is_token_char(c) || c == '+' || c == '=')
        || is_uuid(seg)
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
        && !is_wordlike(seg)
        && entropy_bits_per_char(seg) >= GENERIC_MIN_ENTROPY
}

/// A base64 blob split by `/` or `+` (an AWS secret access key,
/// `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`), which the per-segment rule would see
/// as short pieces: at least [`BASE64_BLOB_MIN_CHARS`] of `[A-Za-z0-9+/=]`, upper and
/// lower case letters (four of each) and a digit, and no piece that reads as words
/// (paths like `Users/John/Documents2024` or `api/v2/…/items` do; those are left to
/// the per-segment rule).
fn is_base64_blob(core: &str) -> bool {
    if core.len() < BASE64_BLOB_MIN_CHARS
        || !core
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
        || !core.contains(['/', '+'])
    {
        return false;
    }
    let count = |f: fn(&char) -> bool| core.chars().filter(f).count();
    count(char::is_ascii_uppercase) >= 4
        && count(char::is_ascii_lowercase) >= 4
        && count(char::is_ascii_digit) >= 1
        && core
            .split(['/', '+'])
            .all(|p| !p.is_empty() && !is_wordlike(p))
        && entropy_bits_per_char(core) >= GENERIC_MIN_ENTROPY
}

fn secret_mask(chars: usize) -> String {
    format!("[masked secret, {chars} chars]")
}

/// Applies `f` to the text in `c`, keeping the borrow when nothing changed.
fn then<'a>(c: Cow<'a, str>, f: impl Fn(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    match c {
        Cow::Borrowed(s) => f(s),
        Cow::Owned(s) => match f(&s) {
            Cow::Borrowed(_) => Cow::Owned(s),
            Cow::Owned(o) => Cow::Owned(o),
        },
    }
}

/// Replaces byte ranges (sorted, disjoint) of `text` by what `mask` makes of them.
fn replace_ranges<'a>(
    text: &'a str,
    ranges: &[(usize, usize)],
    mask: impl Fn(&str) -> String,
) -> Cow<'a, str> {
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for &(a, b) in ranges {
        out.push_str(&text[copied..a]);
        out.push_str(&mask(&text[a..b]));
        copied = b;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// `-----BEGIN … PRIVATE KEY-----` through the matching `-----END …-----` (or the
/// end of the text, when only the head of a document was read).
fn mask_private_keys(text: &str) -> Cow<'_, str> {
    const BEGIN: &str = "-----BEGIN ";
    const DASHES: &str = "-----";
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(off) = text[from..].find(BEGIN) {
        let start = from + off;
        let label_start = start + BEGIN.len();
        let Some(label_len) = text[label_start..].find(DASHES) else {
            break;
        };
        let label = &text[label_start..label_start + label_len];
        let is_key = label.contains("PRIVATE KEY")
            && label.len() <= 64
            && label
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == ' ');
        let after_header = label_start + label_len + DASHES.len();
        if !is_key {
            from = after_header;
            continue;
        }
        let end = text[after_header..]
            .find("-----END ")
            .map(|e| after_header + e + "-----END ".len())
            .and_then(|e| text[e..].find(DASHES).map(|d| e + d + DASHES.len()))
            .unwrap_or(text.len());
        ranges.push((start, end));
        from = end;
    }
    replace_ranges(text, &ranges, |k| {
        format!("[masked private key, {} chars]", k.chars().count())
    })
}

/// A key name lowercased, letters and digits only (`DB_PASSWORD` → `dbpassword`).
fn normalized_key(key: &str) -> String {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn is_secret_key_name(key: &str) -> bool {
    let norm = normalized_key(key);
    SECRET_KEYS.iter().any(|k| norm.ends_with(k))
}

/// Short parameter names that hold a secret in a URL query (`?pw=…`, `&otp=…`,
/// `&key=…`): compared with the whole name, lowercased, letters and digits only.
const QUERY_SECRET_KEYS: &[&str] = &[
    "pw",
    "pwd",
    "pass",
    "passwd",
    "key",
    "otp",
    "code",
    "pin",
    "auth",
    "sig",
    "signature",
    "session",
    "sessionid",
    "sid",
    "jwt",
    "credential",
];

/// Whether a URL query parameter named `key` holds a secret ([`is_secret_key_name`]
/// or [`QUERY_SECRET_KEYS`]).
fn is_query_secret_key(key: &str) -> bool {
    QUERY_SECRET_KEYS.contains(&normalized_key(key).as_str())
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// `KEY=value`, `KEY = "value"`, `?password=value&…` and JSON `"key": "value"` where
/// the key names a secret ([`SECRET_KEYS`]): the value is masked. A label followed by
/// a colon in prose ("Password: at least 8 characters") is not an assignment.
fn mask_assignments(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for (p, sep) in text.match_indices(['=', ':']) {
        if ranges.last().is_some_and(|&(_, e)| p < e) {
            continue;
        }
        let prev = p.checked_sub(1).map(|i| bytes[i]);
        let next = bytes.get(p + 1).copied();
        if sep == "=" && (matches!(prev, Some(b'=' | b'!' | b'<' | b'>')) || next == Some(b'=')) {
            continue;
        }
        // The key, right before the separator (spaces and a closing quote allowed).
        let mut k_end = p;
        while k_end > 0 && bytes[k_end - 1] == b' ' {
            k_end -= 1;
        }
        let quoted_key = k_end > 0 && matches!(bytes[k_end - 1], b'"' | b'\'');
        if quoted_key {
            k_end -= 1;
        }
        let k_start = text[..k_end]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| is_key_char(c))
            .last()
            .map_or(k_end, |(i, _)| i);
        let key = &text[k_start..k_end];
        let in_query = sep == "="
            && !quoted_key
            && k_start > 0
            && matches!(bytes[k_start - 1], b'?' | b'&' | b';');
        if key.is_empty() || !(is_secret_key_name(key) || in_query && is_query_secret_key(key)) {
            continue;
        }
        // The value: quoted up to the closing quote, else up to a delimiter.
        let mut v_start = p + 1;
        while bytes.get(v_start) == Some(&b' ') {
            v_start += 1;
        }
        let quote = bytes
            .get(v_start)
            .copied()
            .filter(|b| matches!(b, b'"' | b'\''));
        if sep == ":" && !(quoted_key && quote.is_some()) {
            continue;
        }
        let (v_start, v_end) = match quote {
            Some(q) => {
                let s = v_start + 1;
                let e = text[s..]
                    .find(|c: char| c == char::from(q) || c == '\n')
                    .map_or(text.len(), |e| s + e);
                (s, e)
            }
            None => {
                let e = text[v_start..]
                    .find(|c: char| {
                        c.is_whitespace()
                            || matches!(c, '&' | ';' | ',' | '"' | '\'' | ')' | '}' | ']')
                    })
                    .map_or(text.len(), |e| v_start + e);
                (v_start, e)
            }
        };
        let value = &text[v_start..v_end];
        if !value.is_empty() && !value.starts_with("[masked ") && value != PASSWORD_MASK {
            ranges.push((v_start, v_end));
        }
    }
    replace_ranges(text, &ranges, |v| secret_mask(v.chars().count()))
}

/// Credential-looking tokens: known prefixes, AWS key ids, JWTs, base64 blobs, hex
/// keys and random-looking segments (the token rules of [`mask_secrets`]).
fn mask_tokens(text: &str) -> Cow<'_, str> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
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
        let assigned = core.rfind('=').map(|eq| eq + 1); // `KEY=sk-…`
        if is_known_token(core) || is_base64_blob(core) {
            ranges.push((core_start, core_start + core.len()));
        } else if let Some(v) = assigned.filter(|&v| is_known_token(&core[v..])) {
            ranges.push((core_start + v, core_start + core.len()));
        } else {
            let mut seg_start = core_start;
            for (off, ch) in core.char_indices().chain([(core.len(), '/')]) {
                if matches!(ch, '.' | '/' | '~') {
                    let seg_end = core_start + off;
                    let seg = &text[seg_start..seg_end];
                    // `KEY=<random>`: the part after the last `=` on its own.
                    let value_start = seg
                        .trim_end_matches('=')
                        .rfind('=')
                        .map(|eq| seg_start + eq + 1);
                    match value_start {
                        Some(v) if is_random_segment(&text[v..seg_end]) => {
                            ranges.push((v, seg_end));
                        }
                        _ if is_random_segment(seg) => ranges.push((seg_start, seg_end)),
                        _ => {}
                    }
                    seg_start = seg_end + 1;
                }
            }
        }
    }
    replace_ranges(text, &ranges, |t| secret_mask(t.chars().count()))
}

/// The byte index `max_chars` chars before (negative) or after `at`, clamped.
fn char_offset(text: &str, at: usize, chars: usize, forward: bool) -> usize {
    if forward {
        text[at..]
            .char_indices()
            .nth(chars)
            .map_or(text.len(), |(i, _)| at + i)
    } else {
        text[..at]
            .char_indices()
            .rev()
            .nth(chars.saturating_sub(1))
            .map_or(0, |(i, _)| i)
    }
}

/// Numbers shaped like one-time codes ([`otp_digits`]: 6–8 digits, at most one space
/// or `-` inside) standing alone (no ASCII letter or digit touching either end; a
/// prefix such as `G-` is allowed), masked as `[masked code, N digits]` when `always`
/// or when a code word ([`mentions_code`]) is close by.
fn mask_codes(text: &str, always: bool) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || (i > 0 && bytes[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        // Digits joined by single spaces or hyphens.
        let start = i;
        let mut end = i;
        let mut j = i;
        while j < bytes.len() {
            if bytes[j].is_ascii_digit() {
                j += 1;
                end = j;
            } else if matches!(bytes[j], b' ' | b'-')
                && bytes.get(j + 1).is_some_and(u8::is_ascii_digit)
            {
                j += 1;
            } else {
                break;
            }
        }
        i = end;
        if bytes.get(end).is_some_and(u8::is_ascii_alphanumeric) {
            continue;
        }
        let Some(n) = otp_digits(&text[start..end]) else {
            continue;
        };
        let near = || {
            let a = char_offset(text, start, CODE_WORD_REACH_BEFORE, false);
            let b = char_offset(text, end, CODE_WORD_REACH_AFTER, true);
            mentions_code(&text[a..b])
        };
        if always || near() {
            ranges.push((start, end, n));
        }
    }
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (a, b, n) in ranges {
        out.push_str(&text[copied..a]);
        out.push_str(&format!("[masked code, {n} digits]"));
        copied = b;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// A cheap first look for [`mask_secrets`]: every rule needs a run of ten token
/// characters (a token, a PEM header), an `=` or `:` (an assignment) or six digits (a
/// code). Most UI labels have none of these.
fn may_hold_secret(text: &str) -> bool {
    let (mut run, mut digits) = (0, 0);
    for b in text.bytes() {
        if b.is_ascii_digit() {
            digits += 1;
        }
        if b == b'=' || b == b':' || digits >= 6 {
            return true;
        }
        if b.is_ascii() && is_run_char(char::from(b)) {
            run += 1;
            if run >= 10 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// Replaces every credential in `text` by `[masked secret, N chars]` (N = its length
/// in chars) and every one-time code in running text by `[masked code, N digits]`.
/// Borrowed when nothing was masked.
///
/// In this order:
///
/// 1. A PEM private key, `-----BEGIN … PRIVATE KEY-----` through its `-----END …-----`
///    (or the end of the text), becomes `[masked private key, N chars]`. Certificates
///    and public keys are left alone.
/// 2. The value of an assignment to a secret-named key (`DB_PASSWORD=…`,
///    `api_key = "…"`, `?token=…&`, JSON `"password": "…"`: a key that, lowercased
///    and stripped to letters and digits, ends in `password`, `passwd`, `passphrase`,
///    `secret`, `token`, `apikey`, `accesskey`, `secretkey`, `privatekey`, `authkey`
///    or `credential(s)`) is masked whatever it looks like. `Password: …` in prose is
///    not, nor are `max_tokens=…`, `tokenizer=…` or `PWD=…`.
/// 3. Tokens: a maximal run of `[A-Za-z0-9_+=./~-]` (leading/trailing `.`, `/`, `~`,
///    `-` excluded) is masked whole when it starts with a known credential prefix
///    (`sk-`, `sk_live_`, `whsec_`, `ghp_`, `github_pat_`, `glpat-`, `xoxb-`,
///    `xoxe.`, `AIza`, `hf_`, `npm_`, …) followed by enough token characters, is an
///    AWS access key id (`AKIA` + 16), a JSON Web Token (`eyJ….…[.…]`), or a base64
///    blob split by `/` or `+` (an AWS secret key; see `is_base64_blob`). Otherwise
///    each part between `.`, `/` or `~` is masked when it is a hex key (≥ 32 hex
///    digits in one case with ≥ 4 letters and ≥ 4 digits, except 40- or 64-char
///    lower-case digests such as git ids) or looks random: ≥ 20 chars of
///    `[A-Za-z0-9_+=-]` with ≥ 2 digits, ≥ 4 letters, mixed case (or ≥ 32 chars), no
///    run of more than 5 digits, Shannon entropy ≥ 3.5 bits/char, not a UUID, not a
///    lower-case git id, and not word-like (identifiers such as
///    `Base64EncodedSha256Digest` and slugs such as `ubuntu-22-04-on-a-raspberry-pi`
///    read as words).
/// 4. A 6–8 digit number (at most one space or `-` inside, alone between non-letters)
///    within 60 chars after or 40 chars before a code word ([`mentions_code`]) becomes
///    `[masked code, N digits]`.
///
/// Left alone on purpose: sentences, file paths, URLs without a secret part, version
/// strings, dates, phone numbers (more than one separator, or no code word near),
/// UUIDs, git ids and SHA digests, e-mail addresses.
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    if !may_hold_secret(text) {
        return Cow::Borrowed(text);
    }
    let masked = mask_private_keys(text);
    let masked = then(masked, mask_assignments);
    let masked = then(masked, mask_tokens);
    then(masked, |t| mask_codes(t, false))
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
    // Word by word, without allocating: this runs for every label near a number.
    // ASCII words are lowercased into a small buffer; a word with a non-ASCII letter
    // or longer than the buffer cannot be one of the words and is left empty.
    const MAX_WORD: usize = 16;
    let (mut hit, mut postal) = (false, false);
    let (mut word, mut len, mut other) = ([0u8; MAX_WORD], 0, false);
    let (mut prev, mut prev_len) = ([0u8; MAX_WORD], 0);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i <= bytes.len() {
        // One char per step: ASCII directly, anything else decoded.
        let (alnum, ascii) = match bytes.get(i) {
            None => (false, None),
            Some(&b) if b.is_ascii() => (b.is_ascii_alphanumeric(), Some(b)),
            Some(_) => {
                let c = text[i..].chars().next().expect("i is on a char boundary");
                i += c.len_utf8() - 1;
                (c.is_alphanumeric(), None)
            }
        };
        i += 1;
        if alnum {
            match ascii {
                Some(b) if len < MAX_WORD => {
                    word[len] = b.to_ascii_lowercase();
                    len += 1;
                }
                _ => other = true,
            }
            continue;
        }
        if len == 0 && !other {
            continue;
        }
        let w: &[u8] = if other { &[] } else { &word[..len] };
        let p = &prev[..prev_len];
        postal |= matches!(w, b"postal" | b"zip" | b"postcode");
        hit |= WORDS.iter().any(|x| x.as_bytes() == w)
            || (p == b"one" && w == b"time")
            || (p == b"two" && w == b"factor");
        prev = word;
        prev_len = if other { 0 } else { len };
        len = 0;
        other = false;
    }
    hit && !postal
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

/// The first [`LABEL_CHARS`] chars of a label.
fn label_head(s: &str) -> &str {
    if s.len() <= LABEL_CHARS {
        return s; // no more bytes than chars allowed: nothing to cut
    }
    s.char_indices()
        .nth(LABEL_CHARS)
        .map_or(s, |(i, _)| &s[..i])
}

/// The position of `node` among `parent.children`, found by address (O(1)); `None`
/// when `node` is not one of them.
fn index_in(node: &Node, parent: &Node) -> Option<usize> {
    let size = size_of::<Node>();
    let base = parent.children.as_ptr() as usize;
    let at = std::ptr::from_ref(node) as usize;
    let off = at.checked_sub(base)?;
    (off % size == 0 && off / size < parent.children.len()).then_some(off / size)
}

/// True when the words around `node` mark its value as a one-time code: its own name
/// or description, its parent's name, or the name of a sibling at most
/// [`OTP_SIBLING_REACH`] places away (labels sit next to the field they describe)
/// [`mentions_code`]. Only the first 256 chars of each label are read.
pub fn otp_context(node: &Node, parent: Option<&Node>) -> bool {
    let says = |s: &str| mentions_code(label_head(s));
    if says(&node.name) || node.description.as_deref().is_some_and(says) {
        return true;
    }
    let Some(p) = parent else {
        return false;
    };
    if says(&p.name) {
        return true;
    }
    let Some(i) = index_in(node, p) else {
        return false;
    };
    let lo = i.saturating_sub(OTP_SIBLING_REACH);
    let hi = (i + OTP_SIBLING_REACH + 1).min(p.children.len());
    (lo..hi).any(|j| j != i && says(&p.children[j].name))
}

/// Longest name (bytes) read as a label by [`is_secret_field`]: field labels are short;
/// a text area named by its contents could mention passwords anywhere.
const PASSWORD_LABEL_MAX_BYTES: usize = 64;

/// True when the name says the field holds a password or another secret
/// (`Password`, `New password`, `Passphrase`, `Passwort`, `Mot de passe`,
/// `Contraseña`, 密码, パスワード, 비밀번호; `API key`, `Access key`, `Token`, `Secret`,
/// `OTP`, `Verification code`, `Recovery code`, 密钥, 令牌, 验证码) and is not about one
/// (`Password hint`, `Password strength`).
fn names_a_password(name: &str) -> bool {
    const ABOUT: &[&str] = &[
        "hint", "strength", "reminder", "question", "policy", "forgot",
    ];
    const CJK: &[&str] = &["密码", "密碼", "パスワード", "비밀번호"];
    if name.len() > PASSWORD_LABEL_MAX_BYTES {
        return false; // a field named by its contents, not by a label
    }
    let lower = name.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words.iter().any(|w| ABOUT.contains(w)) {
        return false;
    }
    CJK.iter().any(|w| lower.contains(w))
        || SECRET_LABELS_CJK.iter().any(|w| lower.contains(w))
        || words.iter().any(|w| {
            matches!(
                *w,
                "password"
                    | "passphrase"
                    | "passwort"
                    | "contraseña"
                    | "senha"
                    | "пароль"
                    | "passcode"
                    | "apikey"
                    | "token"
                    | "secret"
                    | "otp"
                    | "totp"
            )
        })
        || words.windows(3).any(|p| p == ["mot", "de", "passe"])
        || words.windows(2).any(|p| {
            matches!(
                p,
                ["api", "key"]
                    | ["access", "key"]
                    | ["secret", "key"]
                    | ["private", "key"]
                    | ["recovery", "code"]
                    | ["backup", "code"]
                    | ["security", "code"]
                    | ["verification", "code"]
                    | ["one", "time"]
            )
        })
}

/// Chinese and Japanese labels of fields that hold a secret other than a password:
/// keys, tokens, verification codes.
const SECRET_LABELS_CJK: &[&str] = &[
    "密钥",
    "密鑰",
    "令牌",
    "验证码",
    "驗證碼",
    "口令",
    "認証コード",
];

/// True when `node` is a secret-entry field whose value is never shown: it has
/// [`State::Password`], or it is a textbox whose own name says it holds a password
/// (what a "show password" toggle leaves: the same field without the state).
pub fn is_secret_field(node: &Node) -> bool {
    node.has(State::Password) || (node.role == Role::Textbox && names_a_password(&node.name))
}

/// The name of `node` as it may be shown, before truncation and escaping: secrets
/// masked ([`mask_secrets`]); for a secret field whose name contains its non-empty
/// value (some toolkits name the field by its text), [`PASSWORD_MASK`].
pub fn redacted_name(node: &Node) -> Cow<'_, str> {
    if is_secret_field(node) && name_holds_secret(&node.name, node.value.as_deref()) {
        return Cow::Borrowed(PASSWORD_MASK);
    }
    mask_secrets(&node.name)
}

/// Shortest secret looked for inside a longer text (a name, a description): shorter
/// ones match ordinary words too often ("Password" contains "word"), and masking the
/// label would then say more about the secret than showing it.
const SECRET_IN_TEXT_MIN_CHARS: usize = 6;

/// True when `text` (a secret field's name or description) is the field's non-empty
/// value, or contains it when the value has at least [`SECRET_IN_TEXT_MIN_CHARS`]
/// chars.
fn name_holds_secret(text: &str, value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        !v.is_empty()
            && (text == v || (v.chars().count() >= SECRET_IN_TEXT_MIN_CHARS && text.contains(v)))
    })
}

/// The value of `node` as it may be shown, before truncation and escaping; `None`
/// when the node has no value. `parent` is the node's parent in the tree it was read
/// in (for the one-time-code rule); pass `None` for a root.
///
/// Secret fields ([`is_secret_field`]) give [`PASSWORD_MASK`] (or `""` when empty); a
/// value in one-time-code context ([`otp_context`]) gives `[masked code, N digits]`
/// for the code (the whole value, or a code inside it such as `G-493817`); everything
/// else goes through [`mask_secrets`].
pub fn redacted_value<'a>(node: &'a Node, parent: Option<&Node>) -> Option<Cow<'a, str>> {
    let v = node.value.as_deref()?;
    if is_secret_field(node) {
        return Some(Cow::Borrowed(if v.is_empty() { "" } else { PASSWORD_MASK }));
    }
    // Only a value with six digits can hold a code; the context check reads labels.
    if v.bytes().filter(u8::is_ascii_digit).nth(5).is_some() && otp_context(node, parent) {
        if let Some(n) = otp_digits(v) {
            return Some(Cow::Owned(format!("[masked code, {n} digits]")));
        }
        return Some(then(mask_secrets(v), |t| mask_codes(t, true)));
    }
    Some(mask_secrets(v))
}

/// A name as it may be shown inside `"…"`: secrets masked, cut to `max_chars` chars
/// with the total length stated ([`sanitize::truncate_value`]), then escaped to one
/// line ([`sanitize::one_line`]). Render and diff use [`display_name_of`], which also
/// applies the secret-field rule of [`redacted_name`].
pub fn display_name(name: &str, max_chars: usize) -> String {
    cut_name(name, &mask_secrets(name), max_chars)
}

/// The name of `node` as it may be shown inside `"…"`: [`redacted_name`], cut to
/// `max_chars` chars with the total length stated, escaped to one line.
pub fn display_name_of(node: &Node, max_chars: usize) -> String {
    cut_name(&node.name, &redacted_name(node), max_chars)
}

fn cut_name(raw: &str, masked: &str, max_chars: usize) -> String {
    let total = (masked != raw && masked != PASSWORD_MASK).then(|| raw.chars().count());
    sanitize::one_line(&sanitize::truncate_stating(masked, max_chars, total))
}

/// A value as it may be shown inside `value="…"`: [`redacted_value`], cut to
/// `max_chars` chars with the total stated, escaped to one line. `None` when the node
/// has no value. This is the only way render and diff turn a value into text.
pub fn display_value(node: &Node, parent: Option<&Node>, max_chars: usize) -> Option<String> {
    let v = redacted_value(node, parent)?;
    Some(cut_redacted(node, &v, max_chars))
}

/// Cuts and escapes an already redacted value of `node`. A cut states the original
/// length, except for secret fields, whose length is never revealed.
pub(crate) fn cut_redacted(node: &Node, redacted: &str, max_chars: usize) -> String {
    let cut = match (&node.value, is_secret_field(node)) {
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

/// Replaces, in place, every name, value and description under `root` by what may be
/// shown (secrets masked, a secret field's value reduced to [`PASSWORD_MASK`] and its
/// name too when it holds the value, one-time codes masked) and drops whatever a
/// secret field contains, so the tree can be stored (a state file, an audit record)
/// without keeping a secret. Render and diff of a scrubbed tree print the same as of
/// the original, except that the length stated for a cut value that held a masked
/// secret then counts the mask. Iterative: any depth is safe.
pub fn scrub(root: &mut Node) {
    let value = redacted_value(root, None).map(Cow::into_owned);
    scrub_one(root, value);
    let mut stack: Vec<&mut Node> = vec![root];
    while let Some(parent) = stack.pop() {
        if is_secret_field(parent) {
            parent.children.clear();
            continue;
        }
        let values: Vec<Option<String>> = parent
            .children
            .iter()
            .map(|c| redacted_value(c, Some(parent)).map(Cow::into_owned))
            .collect();
        for (c, v) in parent.children.iter_mut().zip(values) {
            scrub_one(c, v);
            stack.push(c);
        }
    }
}

/// Scrubs one node's own text, given its redacted value.
fn scrub_one(n: &mut Node, value: Option<String>) {
    let secret = is_secret_field(n);
    let raw = n.value.take().filter(|v| secret && !v.is_empty());
    let hides = |s: &str| name_holds_secret(s, raw.as_deref());
    n.name = if hides(&n.name) {
        PASSWORD_MASK.to_string()
    } else {
        mask_secrets(&n.name).into_owned()
    };
    n.description = match n.description.as_deref() {
        Some(d) if hides(d) => Some(PASSWORD_MASK.to_string()),
        Some(d) => Some(mask_secrets(d).into_owned()),
        None => None,
    };
    n.value = value;
    if secret {
        n.value_length = None;
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
            "https://x.io/reset?token=[masked secret, 26 chars]"
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

#[cfg(test)]
mod query_and_label_tests {
    use super::*;

    #[test]
    fn secret_query_values_are_masked() {
        let url = "https://shop.example/login?user=bob&pw=Hunter2secret&next=/home";
        let m = mask_secrets(url);
        assert!(!m.contains("Hunter2secret"), "{m}");
        assert!(m.contains("user=bob") && m.contains("next=/home"), "{m}");
        for q in ["?otp=493817", "?key=abc123", "&pass=x9", "?code=77aa"] {
            let t = format!("http://h/p{q}");
            let m = mask_secrets(&t);
            assert!(m.contains("[masked"), "{t} -> {m}");
        }
        assert_eq!(
            mask_secrets("see keyboard=us and monkey=1"),
            "see keyboard=us and monkey=1"
        );
    }

    #[test]
    fn fields_labelled_like_secrets_are_secret_fields() {
        for name in [
            "API key",
            "Access key",
            "Token",
            "OTP",
            "验证码",
            "密钥",
            "Recovery code",
        ] {
            let n = Node::new("h:1", Role::Textbox, name);
            assert!(is_secret_field(&n), "{name}");
        }
        for name in ["Name", "Search", "Keyboard layout", "Password hint"] {
            let n = Node::new("h:1", Role::Textbox, name);
            assert!(!is_secret_field(&n), "{name}");
        }
    }
}

//! Secrets in running text: credentials with known prefixes, random-looking tokens,
//! private keys, `key = value` assignments and URL query values under secret keys,
//! and one-time codes next to the words that announce them. Pure string rules: what
//! a node's role or neighbours say is `super`'s part.

use std::borrow::Cow;

/// Characters of a label examined for code words: labels are short, and a bound keeps
/// a pathological name from costing more than a label's worth of work per element.
pub(super) const LABEL_CHARS: usize = 256;

/// Characters before (and after) a number in running text searched for a code word.
pub(super) const CODE_WORD_REACH_BEFORE: usize = 60;
pub(super) const CODE_WORD_REACH_AFTER: usize = 40;

/// Minimum length (chars) of a prefix-less token before the entropy rule looks at it;
/// shorter random strings are too often ordinary identifiers.
pub(super) const GENERIC_MIN_CHARS: usize = 20;
/// From this length a token needs no mixed case to count as random (hex and base32
/// keys are single-case).
pub(super) const GENERIC_SINGLE_CASE_MIN_CHARS: usize = 32;
/// Shannon entropy (bits per char) a prefix-less token needs. Random base62 of 20
/// chars measures about 4.0; English words and file names mostly stay below 3.5.
pub(super) const GENERIC_MIN_ENTROPY: f64 = 3.5;
/// A run of more digits than this is a date or a counter (`20240101`), not
/// randomness: random base62 of 40 chars has a 6-digit run less than 0.1 % of the time.
pub(super) const GENERIC_MAX_DIGIT_RUN: usize = 5;
/// Hex keys (API keys, session secrets) are at least this long: 128 bits.
pub(super) const HEX_KEY_MIN_CHARS: usize = 32;
/// Mean length of the letter words in a camel-case or slug identifier, at or above
/// which a token reads as words (`Base64EncodedSha256Digest`, `how-to-install-22-04`)
/// rather than randomness (random base62 averages about 2 letters per word).
pub(super) const WORDLIKE_MEAN_LETTERS: usize = 3;
/// Longest all-capitals run a word-like identifier holds (`HTTP`, `UUID`); random
/// upper-case keys have longer ones.
pub(super) const WORDLIKE_MAX_ACRONYM: usize = 4;
/// Minimum length of a base64 blob (`[A-Za-z0-9+/=]` with `/` or `+`) masked whole:
/// an AWS secret access key is 40.
pub(super) const BASE64_BLOB_MIN_CHARS: usize = 30;

/// Known credential prefixes and the least number of characters that must follow.
pub(super) const PREFIXES: &[(&str, usize)] = &[
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
pub(super) const AWS_PREFIXES: &[&str] = &[
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA",
];

/// Key names whose value is a secret in `KEY=value` and `"key": "value"`, compared
/// against the key lowercased with everything but letters and digits removed, as a
/// suffix (`DB_PASSWORD`, `github-token`, `AWS_SECRET_ACCESS_KEY`, `client_secret`).
pub(super) const SECRET_KEYS: &[&str] = &[
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

pub(super) fn is_run_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '=' | '.' | '/' | '~' | '-')
}

pub(super) fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-')
}

pub(super) fn is_known_token(run: &str) -> bool {
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

pub(super) fn entropy_bits_per_char(s: &str) -> f64 {
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
pub(super) fn is_wordlike(s: &str) -> bool {
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
pub(super) fn is_uuid(seg: &str) -> bool {
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
pub(super) fn is_hex_key(seg: &str) -> bool {
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
pub(super) fn is_random_segment(seg: &str) -> bool {
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
pub(super) fn is_base64_blob(core: &str) -> bool {
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

pub(super) fn secret_mask(chars: usize) -> String {
    format!("[masked secret, {chars} chars]")
}

/// Applies `f` to the text in `c`, keeping the borrow when nothing changed.
pub(super) fn then<'a>(c: Cow<'a, str>, f: impl Fn(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    match c {
        Cow::Borrowed(s) => f(s),
        Cow::Owned(s) => match f(&s) {
            Cow::Borrowed(_) => Cow::Owned(s),
            Cow::Owned(o) => Cow::Owned(o),
        },
    }
}

/// Replaces byte ranges (sorted, disjoint) of `text` by what `mask` makes of them.
pub(super) fn replace_ranges<'a>(
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
pub(super) fn mask_private_keys(text: &str) -> Cow<'_, str> {
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
pub(super) fn normalized_key(key: &str) -> String {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

pub(super) fn is_secret_key_name(key: &str) -> bool {
    let norm = normalized_key(key);
    SECRET_KEYS.iter().any(|k| norm.ends_with(k))
}

/// Short parameter names that hold a secret in a URL query (`?pw=…`, `&otp=…`,
/// `&key=…`): compared with the whole name, lowercased, letters and digits only.
pub(super) const QUERY_SECRET_KEYS: &[&str] = &[
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
pub(super) fn is_query_secret_key(key: &str) -> bool {
    QUERY_SECRET_KEYS.contains(&normalized_key(key).as_str())
}

pub(super) fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// `KEY=value`, `KEY = "value"`, `?password=value&…` and JSON `"key": "value"` where
/// the key names a secret ([`SECRET_KEYS`]): the value is masked. A label followed by
/// a colon in prose ("Password: at least 8 characters") is not an assignment.
pub(super) fn mask_assignments(text: &str) -> Cow<'_, str> {
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
        // A value masked already (a scrubbed tree is rendered through these rules
        // again): its mask holds spaces, so the delimiter rule below would take its
        // first word for the value and mask inside the mask.
        if text[v_start..].starts_with("[masked ") {
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
pub(super) fn mask_tokens(text: &str) -> Cow<'_, str> {
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
pub(super) fn char_offset(text: &str, at: usize, chars: usize, forward: bool) -> usize {
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
pub(super) fn mask_codes(text: &str, always: bool) -> Cow<'_, str> {
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
pub(super) fn may_hold_secret(text: &str) -> bool {
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

/// What a non-empty password field's value renders as, regardless of its length.
pub const PASSWORD_MASK: &str = "••••";

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

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

mod text;

use text::{LABEL_CHARS, mask_codes, then};
pub use text::{PASSWORD_MASK, mask_secrets, mentions_code, otp_digits};

/// How many places before or after a field a sibling label may sit and still mark
/// the field's value as a one-time code. Labels sit next to what they describe; a
/// bounded reach also keeps the check O(1) per element in a container of thousands.
pub const OTP_SIBLING_REACH: usize = 3;

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
    label_kind(name).is_some()
}

/// What a field's label says it holds: a password (one a person types to sign in or
/// unlock) or another secret (a key, a token, a code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LabelKind {
    Password,
    Secret,
}

fn label_kind(name: &str) -> Option<LabelKind> {
    const ABOUT: &[&str] = &[
        "hint", "strength", "reminder", "question", "policy", "forgot",
    ];
    const CJK: &[&str] = &["密码", "密碼", "パスワード", "비밀번호", "暗証番号"];
    if name.len() > PASSWORD_LABEL_MAX_BYTES {
        return None; // a field named by its contents, not by a label
    }
    let lower = name.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words.iter().any(|w| ABOUT.contains(w)) {
        return None;
    }
    let password = CJK.iter().any(|w| lower.contains(w))
        || words.iter().any(|w| {
            matches!(
                *w,
                "password"
                    | "passphrase"
                    | "passwort"
                    | "kennwort"
                    | "passwd"
                    | "pwd"
                    | "pin"
                    | "wachtwoord"
                    | "lösenord"
                    | "salasana"
                    | "hasło"
                    | "heslo"
                    | "parola"
                    | "jelszó"
                    | "passord"
                    | "adgangskode"
                    | "contraseña"
                    | "senha"
                    | "пароль"
                    | "passcode"
            )
        })
        || words.windows(3).any(|p| p == ["mot", "de", "passe"]);
    if password {
        return Some(LabelKind::Password);
    }
    let secret = SECRET_LABELS_CJK.iter().any(|w| lower.contains(w))
        || words
            .iter()
            .any(|w| matches!(*w, "apikey" | "token" | "secret" | "otp" | "totp"))
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
        });
    secret.then_some(LabelKind::Secret)
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

/// True when `node` is a field a password is typed into: the toolkit says so
/// ([`State::Password`]), or a text field's own label names a password in any of the
/// languages [`is_secret_field`] reads (`Kennwort`, `PIN`, 暗証番号…). Keys, tokens
/// and codes are secret to show but not passwords to type: see [`is_secret_field`].
pub fn is_password_field(node: &Node) -> bool {
    node.has(State::Password)
        || (node.role == Role::Textbox && label_kind(&node.name) == Some(LabelKind::Password))
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

/// Marks [`State::Password`] on each nameless text field whose own label, one its
/// app never linked, names a password (`PIN`, `Kennwort:`, 暗証番号; not a key or a
/// code, which a person may type), as a screen reader pairs a field with the label
/// beside it: the field is then a password field everywhere (masked, typed into by
/// nobody). A field's label is the label or text sibling ([`field_label`]) nearest
/// to its left on its row, else nearest above it; without extents, the sibling just
/// before it. Iterative: any depth is safe.
pub fn pair_unlinked_labels(root: &mut Node) {
    let mut stack: Vec<&mut Node> = vec![root];
    while let Some(parent) = stack.pop() {
        let secret: Vec<usize> = (0..parent.children.len())
            .filter(|&i| {
                let f = &parent.children[i];
                f.role == Role::Textbox && f.name.trim().is_empty() && !f.has(State::Password)
            })
            .filter(|&i| {
                field_label(&parent.children, i).is_some_and(|l| {
                    label_kind(l.name.trim().trim_end_matches(':')) == Some(LabelKind::Password)
                })
            })
            .collect();
        for i in secret {
            parent.children[i].states.insert(State::Password);
        }
        stack.extend(parent.children.iter_mut());
    }
}

/// The label of field `siblings[i]` among its siblings (label or text elements
/// with a name): with extents, the nearest whose middle lies on the field's row and
/// whose right edge is at most 8 pixels past the field's left and 200 before it,
/// else the nearest
/// above it (overlapping it horizontally, at most 48 pixels up); without them, the
/// sibling just before it.
fn field_label(siblings: &[Node], i: usize) -> Option<&Node> {
    let is_label =
        |n: &Node| matches!(n.role, Role::Label | Role::Text) && !n.name.trim().is_empty();
    let Some(f) = siblings[i].bounds else {
        return i
            .checked_sub(1)
            .map(|j| &siblings[j])
            .filter(|n| is_label(n));
    };
    let labels = || {
        siblings
            .iter()
            .filter(|n| is_label(n))
            .filter_map(|n| Some((n, n.bounds?)))
    };
    // Extents come from the app: i64, so no value overflows.
    let wide = |b: &crate::Bounds| {
        let (x, y) = (i64::from(b.x), i64::from(b.y));
        (x, y, x + i64::from(b.width), y + i64::from(b.height))
    };
    let (fl, ft, fr, _) = wide(&f);
    let fb = ft + i64::from(f.height);
    let left = labels()
        .filter(|(_, b)| {
            let (_, t, r, bot) = wide(b);
            let mid = t + (bot - t) / 2;
            mid >= ft && mid < fb && r <= fl + 8 && fl - r <= 200
        })
        .max_by_key(|(_, b)| wide(b).2);
    let above = || {
        labels()
            .filter(|(_, b)| {
                let (l, _, r, bot) = wide(b);
                l < fr && fl < r && bot <= ft + 4 && ft - bot <= 48
            })
            .max_by_key(|(_, b)| wide(b).3)
    };
    left.or_else(above).map(|(n, _)| n)
}

/// Replaces, in place, every name, value and description under `root` by what may be
/// shown (secrets masked, a secret field's value reduced to [`PASSWORD_MASK`] and its
/// name too when it holds the value, one-time codes masked) and drops whatever a
/// secret field contains, so the tree can be stored (a state file, an audit record)
/// (a nameless field after a password's label is one: [`pair_unlinked_labels`])
/// without keeping a secret. Render and diff of a scrubbed tree print the same as of
/// the original, except that the length stated for a cut value that held a masked
/// secret then counts the mask. Iterative: any depth is safe.
pub fn scrub(root: &mut Node) {
    pair_unlinked_labels(root);
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
mod tests;

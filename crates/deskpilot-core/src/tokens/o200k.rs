//! The `o200k_base` encoding, counted without building it (docs/ARCHITECTURE.md §4.1).
//!
//! Owns the two halves of a byte-pair count: the pre-tokenizer (the encoding's
//! published split pattern, run by the `regex` crate, with the one lookahead the
//! crate lacks done by hand in [`pieces`]) and the merge loop over each piece
//! ([`piece_tokens`]), which looks ranks up in the table the build script wrote
//! (`build.rs`). The table is static data inside the binary and is read in place:
//! nothing is parsed or allocated to load it, and only the pages a count touches are
//! ever read from disk.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::LazyLock;

use regex_automata::{Anchored, Input, meta};

use crate::hash::slot_hash;

/// The table `build.rs` writes; its layout is documented there.
static TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k.bin"));

/// `o200k_base`'s split pattern (tiktoken's `O200K_BASE_PAT_STR`) with its last two
/// alternatives, `\s+(?!\S)|\s+`, merged into `\s+`: the lookahead is applied by
/// [`pieces`].
const SPLIT: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+",
);

/// Compiled on first use, for the pieces [`ascii_end`] leaves to it: about 1 ms,
/// as a Pike VM without the lazy DFA, whose state-by-state construction cost more
/// per process than the few pieces it matches (measured with `perf` on
/// `deskpilot observe`).
static SPLITTER: LazyLock<meta::Regex> = LazyLock::new(|| {
    meta::Regex::builder()
        .configure(meta::Config::new().hybrid(false).dfa(false).onepass(false))
        .build(SPLIT)
        .expect("the o200k split pattern compiles")
});

fn word(at: usize) -> u32 {
    u32::from_le_bytes(TABLE[at..at + 4].try_into().expect("4 bytes"))
}

/// Number of ordinary tokens (ranks 0..N).
fn ranks() -> usize {
    word(0) as usize
}

/// The bytes of the token of `rank`.
fn token(rank: usize) -> &'static [u8] {
    let n = ranks();
    let slots = word(4) as usize;
    let blob = 8 + 4 * (n + slots);
    let start = if rank == 0 {
        0
    } else {
        word(8 + 4 * (rank - 1)) as usize
    };
    let end = word(8 + 4 * rank) as usize;
    &TABLE[blob + start..blob + end]
}

/// The rank of the token whose bytes are `bytes`, if there is one.
pub fn rank(bytes: &[u8]) -> Option<u32> {
    let n = ranks();
    let slots = word(4) as usize;
    let table = 8 + 4 * n;
    let mut i = slot_hash(bytes) as usize & (slots - 1);
    loop {
        let entry = word(table + 4 * i);
        if entry == 0 {
            return None;
        }
        let r = entry - 1;
        if token(r as usize) == bytes {
            return Some(r);
        }
        i = (i + 1) & (slots - 1);
    }
}

/// The pieces of `text` as `o200k_base` splits it before merging, in order; they
/// concatenate to `text`.
pub fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let end = ascii_end(text.as_bytes(), pos).unwrap_or_else(|| pattern_end(text, pos));
        let piece = &text[pos..end];
        pos = end;
        Some(piece)
    })
}

/// Where the piece starting at `pos` ends, by the split pattern itself.
fn pattern_end(text: &str, pos: usize) -> usize {
    let input = Input::new(text).range(pos..).anchored(Anchored::Yes);
    // Every character starts a match of some alternative (it is a letter, a
    // number, white space or none of these), so an anchored search always finds one.
    let Some(m) = SPLITTER.search(&input) else {
        return text[pos..]
            .chars()
            .next()
            .map_or(text.len(), |c| pos + c.len_utf8());
    };
    let s = &text[pos..m.end()];
    // Only the merged `\s+` alternative yields a match that is all white space and
    // does not end in a line break (`\s*[\r\n]+` ends in one, every other
    // alternative holds a non-space). tiktoken's `\s+(?!\S)` gives a run followed by
    // a non-space all but its last character, which then starts the next piece; a
    // run of one character falls through to `\s+` whole.
    if m.end() < text.len()
        && !s.ends_with(['\r', '\n'])
        && s.chars().all(char::is_whitespace)
        && let Some((last, _)) = s.char_indices().next_back()
        && last > 0
    {
        return pos + last;
    }
    m.end()
}

/// How a byte takes part in the split pattern, for [`ascii_end`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    End,
    /// A byte of a non-ASCII character: its class needs Unicode tables.
    Wide,
    Upper,
    Lower,
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// The rest of `\s` in ASCII: tab, vertical tab, form feed, space.
    Space,
    /// Neither letter, digit nor white space: punctuation, symbols, controls.
    Other,
}

fn class(b: &[u8], i: usize) -> Class {
    match b.get(i) {
        None => Class::End,
        Some(&c) if c >= 0x80 => Class::Wide,
        Some(c) if c.is_ascii_uppercase() => Class::Upper,
        Some(c) if c.is_ascii_lowercase() => Class::Lower,
        Some(c) if c.is_ascii_digit() => Class::Digit,
        Some(b'\r' | b'\n') => Class::Newline,
        // Unicode White_Space in ASCII: U+0009–U+000D and U+0020.
        Some(b'\t' | 0x0b | 0x0c | b' ') => Class::Space,
        Some(_) => Class::Other,
    }
}

/// The end of the piece starting at `pos`, found without the pattern when every
/// byte that decides it is ASCII (the pattern's classes are then plain byte
/// ranges); `None` when a non-ASCII character could change the answer, which
/// [`pattern_end`] then gives. The alternatives are tried in the pattern's order.
fn ascii_end(b: &[u8], pos: usize) -> Option<usize> {
    use Class::*;
    let run = |mut i: usize, want: Class| {
        while class(b, i) == want {
            i += 1;
        }
        i
    };
    let c0 = class(b, pos);
    if c0 == Wide {
        return None;
    }
    // 1, 2: `[^\r\n\p{L}\p{N}]?` then upper case and lower case letters.
    let s = if matches!(c0, Space | Other) {
        pos + 1
    } else {
        pos
    };
    let upper_end = run(s, Upper);
    if class(b, upper_end) == Wide {
        return None;
    }
    let lower_end = run(upper_end, Lower);
    if lower_end > upper_end || upper_end > s {
        if class(b, lower_end) == Wide {
            return None;
        }
        return contraction(b, lower_end);
    }
    // 3: `\p{N}{1,3}`.
    if c0 == Digit {
        let mut i = pos;
        while i < pos + 3 && class(b, i) == Digit {
            i += 1;
        }
        return (i == pos + 3 || class(b, i) != Wide).then_some(i);
    }
    // 4: ` ?[^\s\p{L}\p{N}]+[\r\n/]*`.
    let s = if b[pos] == b' ' { pos + 1 } else { pos };
    match class(b, s) {
        Other => {
            let i = run(s, Other);
            if class(b, i) == Wide {
                return None;
            }
            let mut i = i;
            while matches!(b.get(i), Some(b'\r' | b'\n' | b'/')) {
                i += 1;
            }
            return Some(i);
        }
        Wide => return None,
        _ => {}
    }
    // 5: `\s*[\r\n]+`, then `\s+(?!\S)` and `\s+`.
    let mut end = pos;
    while matches!(class(b, end), Space | Newline) {
        end += 1;
    }
    if end == pos {
        // Not reached: every ASCII byte is a letter, digit, space or other.
        return None;
    }
    if class(b, end) == Wide {
        return None;
    }
    if let Some(last) = (pos..end).rev().find(|&i| class(b, i) == Newline) {
        return Some(last + 1);
    }
    Some(if end == b.len() || end - pos == 1 {
        end
    } else {
        end - 1
    })
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`: where the letters' piece ends.
fn contraction(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'\'') {
        return Some(i);
    }
    let at = |k: usize| b.get(i + k).map(u8::to_ascii_lowercase);
    // Under (?i), `s` also matches U+017F (ſ): a non-ASCII letter after the
    // apostrophe is left to the pattern.
    if matches!(b.get(i + 1), Some(&c) if c >= 0x80) {
        return None;
    }
    Some(match (at(1), at(2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => i + 2,
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => i + 3,
        _ => i,
    })
}

/// Tokens `o200k_base` encodes one piece into: the piece itself when it is a token,
/// else what byte-pair merging leaves, merging the lowest-ranked adjacent pair first
/// and the leftmost of equal ranks (tiktoken's order).
pub fn piece_tokens(piece: &[u8]) -> usize {
    if piece.len() <= 1 || rank(piece).is_some() {
        return piece.len().min(1);
    }
    merge(piece).len()
}

/// The start offsets of the parts byte-pair merging leaves of `piece` (at least two
/// bytes long), in order.
fn merge(piece: &[u8]) -> Vec<usize> {
    // Parts are byte ranges start..next[start]; a heap of (rank of a part merged with
    // its successor, part start, merged end) finds the next merge, and entries made
    // stale by an earlier merge are skipped when popped. Ordering by start offset is
    // tiktoken's leftmost-first among equal ranks.
    let n = piece.len();
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut alive = vec![true; n];
    let pair = |start: usize, next: &[usize]| -> Option<(u32, usize)> {
        let mid = next[start];
        if mid >= n {
            return None;
        }
        let end = next[mid];
        rank(&piece[start..end]).map(|r| (r, end))
    };
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        if let Some(r) = rank(&piece[i..i + 2]) {
            heap.push(Reverse((r, i, i + 2)));
        }
    }
    while let Some(Reverse((_, start, end))) = heap.pop() {
        if !alive[start] || next[start] >= n || next[next[start]] != end {
            continue;
        }
        alive[next[start]] = false;
        next[start] = end;
        if end < n {
            prev[end] = start;
        }
        if let Some((r, e)) = pair(start, &next) {
            heap.push(Reverse((r, start, e)));
        }
        let p = prev[start];
        if p < n
            && let Some((r, e)) = pair(p, &next)
        {
            heap.push(Reverse((r, p, e)));
        }
    }
    let mut starts = Vec::new();
    let mut at = 0;
    while at < n {
        starts.push(at);
        at = next[at];
    }
    starts
}

/// The token ids (ranks) of `text`: tiktoken's `encode_ordinary(text)`.
pub fn encode(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for piece in pieces(text).map(str::as_bytes) {
        if let Some(r) = rank(piece) {
            out.push(r);
            continue;
        }
        let starts = merge(piece);
        for (i, &s) in starts.iter().enumerate() {
            let e = starts.get(i + 1).copied().unwrap_or(piece.len());
            out.push(rank(&piece[s..e]).expect("every merged part is a token"));
        }
    }
    out
}

/// Tokens of `text` (special-token spellings counted as ordinary text).
pub fn count(text: &str) -> usize {
    pieces(text).map(|p| piece_tokens(p.as_bytes())).sum()
}

//! FNV-1a, 64-bit (the published offset basis and prime; the `fnv` crate):
//! deskpilot's one stable, non-cryptographic hash. Stable across runs, processes and
//! Rust versions, unlike `DefaultHasher`, so what it keys can be persisted: ref
//! fingerprints (`crate::refs`), approval keys and screen hashes, desktop keys, and
//! the slots of the o200k rank table (shared with `build.rs` through `#[path]`). Not
//! a MAC and never used to protect anything.

use std::hash::Hasher;

use fnv::FnvHasher;

/// FNV-1a of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(FnvHasher::default().finish(), bytes)
}

/// FNV-1a of `bytes` continued from the state `seed` (a previous [`fnv1a`] value, or
/// [`FnvHasher`]'s offset basis): hashing `a` then `b` this way equals [`fnv1a`] of
/// their concatenation.
pub fn fnv1a_from(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = FnvHasher::with_key(seed);
    h.write(bytes);
    h.finish()
}

/// FNV-1a of `bytes`, folded to 32 bits: the slot of a token in the o200k table.
pub fn slot_hash(bytes: &[u8]) -> u32 {
    let h = fnv1a(bytes);
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_vectors_and_continuation() {
        // The offset basis, and FNV-1a 64 of "a" and "foobar" from the reference tables.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a_from(fnv1a(b"foo"), b"bar"), fnv1a(b"foobar"));
    }
}

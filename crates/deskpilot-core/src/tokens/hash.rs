// The hash of the o200k rank table, shared by the build script that writes the table
// (`build.rs`, through `#[path]`) and the lookup that reads it (`super::o200k`), so
// both place every token in the same slot. FNV-1a, 64-bit (the published offset basis
// and prime), folded to 32 bits.

/// FNV-1a of `bytes`, folded to 32 bits.
pub fn slot_hash(bytes: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

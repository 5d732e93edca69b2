//! Writes `$OUT_DIR/o200k.bin`, the compact rank table the token counter reads in
//! place (docs/ARCHITECTURE.md §4.1), from the `o200k_base` table that `tiktoken-rs`
//! bundles. Layout, every number a little-endian u32:
//!
//! ```text
//! ranks N · slots S (a power of two)
//! ends[N]    byte offset in the blob where token r ends (it starts at ends[r-1], or 0)
//! table[S]   rank + 1 of the token whose hash lands here by linear probing, 0 = empty
//! blob       every token's bytes, in rank order
//! ```

#[path = "src/hash.rs"]
#[allow(dead_code)]
mod hash;

use std::io::Write;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/hash.rs");
    let bpe = tiktoken_rs::o200k_base().expect("tiktoken-rs ships a valid o200k_base table");
    // Ordinary tokens have the dense ranks 0..N; decoding stops at the first gap
    // (o200k_base: N = 199,998; its two special tokens sit above).
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    while let Ok(bytes) = bpe.decode_bytes(&[tokens.len() as u32]) {
        tokens.push(bytes);
    }
    assert!(
        tokens.len() > 100_000,
        "o200k_base decoded to {} tokens",
        tokens.len()
    );
    let n = tokens.len();
    // Load factor under 0.4 keeps linear probes short.
    let slots = (n * 5 / 2).next_power_of_two();
    let mut table = vec![0u32; slots];
    for (rank, bytes) in tokens.iter().enumerate() {
        let mut i = hash::slot_hash(bytes) as usize & (slots - 1);
        while table[i] != 0 {
            i = (i + 1) & (slots - 1);
        }
        table[i] = rank as u32 + 1;
    }
    let mut out = Vec::with_capacity(8 + 4 * (n + slots) + n * 8);
    out.extend((n as u32).to_le_bytes());
    out.extend((slots as u32).to_le_bytes());
    let mut end = 0u32;
    for bytes in &tokens {
        end += bytes.len() as u32;
        out.extend(end.to_le_bytes());
    }
    for slot in &table {
        out.extend(slot.to_le_bytes());
    }
    for bytes in &tokens {
        out.extend(bytes);
    }
    let path = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("o200k.bin");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&out))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

//! Token counting for snapshot budgets.
//!
//! Owns the one tokenizer the engine measures with: OpenAI's `o200k_base` byte-pair
//! encoding ([`o200k`], checked token for token against `tiktoken-rs` by this
//! crate's tests). The count is exact for models that use
//! `o200k_base` (GPT-4o, GPT-4.1, o-series, GPT-5) and an approximation for every
//! other model family (Claude, Llama, Qwen, …), whose tokenizers split the same text
//! into a somewhat different number of tokens. Budgets (`max_tokens`) are enforced
//! against this count, never against a guess.
//!
//! The rank table is written at build time into a form that is read in place, so
//! nothing is parsed or built when a process starts: the first count compiles the
//! split pattern (about 4 ms in a release build) and touches only the table pages it
//! looks up. Counting never performs I/O.

pub mod o200k;

/// The estimated vision-token cost of an image of `width` × `height` pixels as a
/// Claude-style model bills it: ⌈width × height / 750⌉ (Anthropic's vision
/// documentation gives tokens ≈ width × height / 750). An estimate, stated as one
/// wherever it is shown; other vendors tile images differently.
pub fn image_tokens(width: u32, height: u32) -> u64 {
    (u64::from(width) * u64::from(height)).div_ceil(750)
}

/// [`image_tokens`] of a screenshot of a `width` × `height` pixel window after it is
/// downscaled so its long side is at most `max_side` pixels (sides rounded to the
/// nearest pixel, as the capture path downscales): what a screenshot agent pays
/// per look at that window. `max_side` 0 means no downscale.
pub fn screenshot_tokens(width: u32, height: u32, max_side: u32) -> u64 {
    let long_side = width.max(height);
    if max_side == 0 || long_side <= max_side {
        return image_tokens(width, height);
    }
    let scale = f64::from(max_side) / f64::from(long_side);
    let shrink = |side: u32| ((f64::from(side) * scale).round() as u32).clamp(1, max_side);
    image_tokens(shrink(width), shrink(height))
}

/// Number of `o200k_base` tokens in `text`: the length of tiktoken's
/// `encode_ordinary(text)`.
///
/// Special-token spellings such as `<|endoftext|>` are counted as ordinary text, as
/// they would be when the text reaches a model inside a message. Counts of lines that
/// each end in `\n` add up to the count of the joined text unless a line starts with
/// `/` (only a punctuation run followed by a line break and slashes spans two lines),
/// which is what lets the render measure each line once; it still measures the final
/// text to hold its ceiling exactly.
///
pub fn count(text: &str) -> usize {
    o200k::count(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn screenshot_tokens_downscale_the_long_side() {
        // 2560×1600 → 1280×800: 1,024,000 px / 750 = 1365.33 → 1366.
        assert_eq!(screenshot_tokens(2560, 1600, 1280), 1366);
        // Small windows are not scaled: 600×400 / 750 = 320.
        assert_eq!(screenshot_tokens(600, 400, 1280), 320);
        assert_eq!(screenshot_tokens(600, 400, 0), 320);
    }

    use super::*;

    #[test]
    fn counts_known_strings() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello"), 1);
        assert_eq!(count("••••"), 2);
        assert_eq!(count("  [e3] menuitem \"File\" ▸\n"), 13);
    }

    #[test]
    fn lines_add_up() {
        let lines = [
            "[w1] window \"notes.txt - Editor\"\n",
            "  [e2] menubar\n",
            "    [e3] menuitem \"File\" ▸\n",
            "  [e5] textbox value=\"hello wor…(1.2k chars)\" editable focused\n",
        ];
        let sum: usize = lines.iter().map(|l| count(l)).sum();
        assert_eq!(count(&lines.concat()), sum);
    }
}

//! The token counter against the reference: `deskpilot_core::tokens` must give
//! exactly tiktoken's `o200k_base` encoding, token for token, on real text and on
//! generated text that exercises every alternative of the split pattern.

use deskpilot_core::tokens::{count, o200k};
use proptest::prelude::*;
use std::sync::LazyLock;

static REFERENCE: LazyLock<tiktoken_rs::CoreBPE> =
    LazyLock::new(|| tiktoken_rs::o200k_base().expect("tiktoken-rs ships o200k_base"));

fn same(text: &str) {
    let want = REFERENCE.encode_ordinary(text);
    assert_eq!(o200k::encode(text), want, "token ids of {text:?}");
    assert_eq!(count(text), want.len(), "count of {text:?}");
}

#[test]
fn every_alternative_of_the_split_pattern() {
    for text in [
        "",
        "a",
        " ",
        "hello world",
        "Hello World HELLO wORLD",
        "don't DON'T you'LL we've they'RE I'm she'd it's IT'S",
        "ſ 'ſ it'ſ", // U+017F folds to s under (?i)
        "12 123 1234 1234567 ١٢٣٤ ½",
        "a  b   c    d",
        "trailing   ",
        "   leading",
        "tab\tand\t\ttabs",
        "line\nbreaks\n\n\nmany\r\nCRLF\r\n",
        "  \n  \n  x",
        "nbsp\u{a0}\u{a0}x ideographic\u{3000}\u{3000}x",
        "!!! ??? ... --- /// \\\\ a/b/c //\n/ //\n//x",
        "  [e3] menuitem \"File\" ▸\n",
        "  [e5] textbox value=\"hello wor…(1.2k chars)\" editable focused\n",
        "東京都 日本語のテキスト 中文文本测试 한국어 텍스트",
        "naïve café résumé e\u{301}\u{301} \u{301}x 1\u{301}",
        "Ǆemo ǅemo ǆemo ᾈbc",
        "emoji 👍🏽 👨‍👩‍👧 🇯🇵 ✓ ✗ •••• ●●●",
        "مرحبا بالعالم שלום עולם",
        "x<|endoftext|>y <|fim_prefix|>",
        "CamelCaseWords XMLHttpRequest iPhone McDonald's",
        "ABCé ABCÉ abcé 12é 123é 1é (é ( é !é !!é x'é x'ſ x'Ré x're's",
        "\u{b}\u{c} \u{1c}\u{1f}\u{0}x \u{85}x \u{a0}\u{a0}é  é\n\u{a0}",
        " 12  !!  \t!! \t\tx (hello [e12] \"Save\"\n",
    ] {
        same(text);
    }
}

#[test]
fn pieces_longer_than_one_hundred_bytes() {
    same(&"東京".repeat(200));
    same(&"!@#$%^&*()".repeat(50));
    same(&"aGVsbG8gd29ybGQ".repeat(40));
    same(&"x".repeat(5_000));
    same(&" ".repeat(300));
    same(&format!("{}z", " ".repeat(300)));
    same(&"\n".repeat(300));
}

#[test]
fn the_projects_own_documents() {
    same(include_str!("../../../README.md"));
    same(include_str!("../../../docs/ARCHITECTURE.md"));
}

#[test]
fn pieces_join_back_into_the_text() {
    let text = "  [e5] textbox value=\"a  b\" editable\n\n  x   \n";
    assert_eq!(o200k::pieces(text).collect::<String>(), text);
    assert_eq!(
        o200k::pieces("a  b").collect::<Vec<_>>(),
        ["a", " ", " b"],
        "a run of spaces before a word leaves its last space to the word"
    );
}

/// Characters from every class the split pattern distinguishes.
fn pool() -> impl Strategy<Value = char> {
    prop::sample::select(vec![
        'a',
        'z',
        'A',
        'Z',
        'é',
        'É',
        'ß',
        'ǅ',
        'ʰ',
        '東',
        'ア',
        '한',
        'ا',
        '\u{301}',
        '\u{64b}',
        '0',
        '7',
        '٣',
        '½',
        'Ⅻ',
        ' ',
        ' ',
        '\t',
        '\n',
        '\r',
        '\u{a0}',
        '\u{3000}',
        '\u{2028}',
        '\'',
        '\'',
        's',
        'S',
        't',
        'l',
        'L',
        'v',
        'e',
        'r',
        'm',
        'd',
        'D',
        'ſ',
        '/',
        '/',
        '!',
        '.',
        ',',
        '"',
        '[',
        ']',
        '…',
        '▸',
        '•',
        '€',
        '😀',
        '\u{200d}',
        '\u{fe0f}',
        '\u{1f3fd}',
        '_',
        '-',
        '=',
        '#',
        '\u{b}',
        '\u{c}',
        '\u{1c}',
        '\u{0}',
        '\u{7f}',
        '\u{85}',
        'K',
        'k',
        '\u{212a}',
        '(',
        '3',
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn generated_text_from_every_class(chars in prop::collection::vec(pool(), 0..80)) {
        same(&chars.into_iter().collect::<String>());
    }

    #[test]
    fn ascii_text_takes_the_fast_path(text in "[\\x00-\\x7f]{0,80}") {
        same(&text);
    }

    #[test]
    fn arbitrary_unicode(text in any::<String>()) {
        same(&text);
    }
}

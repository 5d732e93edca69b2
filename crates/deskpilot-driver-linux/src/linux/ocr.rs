//! Reading tesseract's output: parsing the TSV that tesseract 5 writes for
//! `tesseract IMAGE stdout -l LANGS tsv` into word boxes, grouping the words into
//! text elements (one per run of words on a line), and choosing the `-l` languages
//! from `tesseract --list-langs`.
//!
//! All boxes are in the pixels of the image given to tesseract (image pixels); the
//! caller converts them to device pixels with the scale it captured at. Confidences
//! are tesseract's, from 0 to 100.

use std::collections::BTreeMap;

/// The line a word belongs to in tesseract's layout: (block number, paragraph number,
/// line number), the TSV's `block_num`, `par_num` and `line_num` columns. Unique
/// within one page.
pub type LineKey = (u32, u32, u32);

/// TSV `level` of a word row (1 page, 2 block, 3 paragraph, 4 line, 5 word).
pub const WORD_LEVEL: u32 = 5;

/// How far apart two words of one line may be and still belong to one element: a
/// horizontal gap larger than `GAP_FACTOR` × the line's median word height starts a
/// new element.
///
/// Inter-word spacing in rendered UI text is about 0.25–0.5 em, and a word box's
/// height is close to one em for most words, so words of one phrase sit well under
/// half a line height apart. Separate controls on one row (two buttons, a label and
/// its value in another column) are laid out with padding and margins on both sides,
/// which puts their text over 1.5 line heights apart. 1.5 sits between the two with
/// margin either way.
pub const GAP_FACTOR: f32 = 1.5;

/// One recognised word from tesseract's TSV, in image pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrWordBox {
    /// The word's text, trimmed of surrounding whitespace; never empty.
    pub text: String,
    /// Left edge, in image pixels.
    pub left: i32,
    /// Top edge, in image pixels.
    pub top: i32,
    /// Width, in image pixels.
    pub width: i32,
    /// Height, in image pixels.
    pub height: i32,
    /// tesseract's confidence in the word, from 0 to 100.
    pub conf: f32,
}

/// One text element: a run of words on one line, close enough together to be read as
/// one piece of text (a button's caption, a label, a menu item), in image pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrElement {
    /// The words' texts joined by single spaces, left to right.
    pub text: String,
    /// Left edge of the union of the words' boxes, in image pixels.
    pub left: i32,
    /// Top edge of the union of the words' boxes, in image pixels.
    pub top: i32,
    /// Width of the union of the words' boxes, in image pixels.
    pub width: i32,
    /// Height of the union of the words' boxes, in image pixels.
    pub height: i32,
    /// Mean of the words' confidences, from 0 to 100.
    pub confidence: f32,
}

/// Parses tesseract 5's TSV output into word boxes, each with the line it is on.
///
/// The TSV has a header line and then one row per layout item, with the columns
/// `level page_num block_num par_num line_num word_num left top width height conf
/// text`. Only word rows (level 5) with a confidence of 0 or more and non-blank text
/// are kept; the header, rows of other levels (whose confidence is -1), rows whose
/// numeric columns do not parse, and rows with empty or whitespace-only text are
/// skipped. The text is everything after the eleventh tab, so a text that itself
/// holds a tab is kept whole. Rows keep their order in the output.
pub fn parse_tsv(tsv: &str) -> Vec<(LineKey, OcrWordBox)> {
    tsv.lines().filter_map(parse_row).collect()
}

/// One TSV row as a word, or `None` when it is not a usable word row.
fn parse_row(row: &str) -> Option<(LineKey, OcrWordBox)> {
    let fields: Vec<&str> = row.split('\t').collect();
    let [
        level,
        _page,
        block,
        par,
        line,
        _word,
        left,
        top,
        width,
        height,
        conf,
        text @ ..,
    ] = fields.as_slice()
    else {
        return None;
    };
    let number = |field: &str| field.trim().parse::<u32>().ok();
    let coordinate = |field: &str| field.trim().parse::<i32>().ok();
    if number(level)? != WORD_LEVEL {
        return None;
    }
    let conf = conf.trim().parse::<f32>().ok()?;
    if !conf.is_finite() || conf < 0.0 {
        return None;
    }
    let text = text.join("\t");
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let key = (number(block)?, number(par)?, number(line)?);
    Some((
        key,
        OcrWordBox {
            text: text.to_owned(),
            left: coordinate(left)?,
            top: coordinate(top)?,
            width: coordinate(width)?,
            height: coordinate(height)?,
            conf,
        },
    ))
}

/// Groups words into text elements and drops the unsure ones.
///
/// The words of each line (same [`LineKey`]) are taken left to right; each word joins
/// the element being built unless the horizontal gap between the element's right edge
/// so far and the word's left edge is larger than [`GAP_FACTOR`] × the line's median
/// word height, in which case it starts a new element. So "pick one" stays one
/// element, while two buttons "Alpha" and "Beta" far apart on one row become two.
///
/// An element's text is its words joined by single spaces, its box the union of their
/// boxes, and its confidence the mean of theirs. Elements whose confidence is below
/// `min_confidence` (0 to 100, tesseract's scale) are dropped. The result is ordered
/// top to bottom, then left to right (by top edge, then left edge).
/// A word also starts a new element when it lies in another of `frames` (the
/// outlines of buttons and boxes, `(left, top, width, height)` in the words'
/// pixels) than the element being built: two framed buttons side by side are two
/// elements however close. A word lies in the smallest frame holding its centre.
pub fn group(
    words: Vec<(LineKey, OcrWordBox)>,
    min_confidence: f32,
    frames: &[(i32, i32, i32, i32)],
) -> Vec<OcrElement> {
    let frame_of = |w: &OcrWordBox| -> Option<usize> {
        let (cx, cy) = (
            i64::from(w.left) + i64::from(w.width) / 2,
            i64::from(w.top) + i64::from(w.height) / 2,
        );
        frames
            .iter()
            .enumerate()
            .filter(|(_, (x, y, fw, fh))| {
                let (x, y) = (i64::from(*x), i64::from(*y));
                cx >= x && cy >= y && cx < x + i64::from(*fw) && cy < y + i64::from(*fh)
            })
            .min_by_key(|(_, (_, _, fw, fh))| i64::from(*fw) * i64::from(*fh))
            .map(|(i, _)| i)
    };
    let mut lines: BTreeMap<LineKey, Vec<OcrWordBox>> = BTreeMap::new();
    for (key, word) in words {
        lines.entry(key).or_default().push(word);
    }

    let mut elements = Vec::new();
    for mut line in lines.into_values() {
        line.sort_by_key(|word| word.left);
        let max_gap = GAP_FACTOR * median_height(&line);
        let mut run: Vec<OcrWordBox> = Vec::new();
        // Right edge of the run's union so far, in image pixels.
        let mut run_right = 0_i64;
        let mut run_frame = None;
        for word in line {
            let left = i64::from(word.left);
            let right = left + i64::from(word.width);
            let frame = frame_of(&word);
            if run.is_empty() {
                run_right = right;
                run_frame = frame;
            } else if (left - run_right) as f32 > max_gap || frame != run_frame {
                run_frame = frame;
                elements.push(element(&run));
                run.clear();
                run_right = right;
            } else {
                run_right = run_right.max(right);
            }
            run.push(word);
        }
        if !run.is_empty() {
            elements.push(element(&run));
        }
    }

    elements.retain(|element| element.confidence >= min_confidence);
    elements.sort_by_key(|element| (element.top, element.left));
    elements
}

/// The median of the words' heights, in image pixels (the mean of the middle two for
/// an even count); 0 for no words.
fn median_height(words: &[OcrWordBox]) -> f32 {
    let mut heights: Vec<i32> = words.iter().map(|word| word.height).collect();
    heights.sort_unstable();
    let middle = heights.len() / 2;
    match heights.len() {
        0 => 0.0,
        n if n % 2 == 1 => heights[middle] as f32,
        _ => (heights[middle - 1] as f32 + heights[middle] as f32) / 2.0,
    }
}

/// One element from a non-empty run of words of one line, left to right.
fn element(run: &[OcrWordBox]) -> OcrElement {
    let text = run
        .iter()
        .map(|word| word.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let left = run.iter().map(|word| i64::from(word.left)).min();
    let top = run.iter().map(|word| i64::from(word.top)).min();
    let right = run
        .iter()
        .map(|word| i64::from(word.left) + i64::from(word.width))
        .max();
    let bottom = run
        .iter()
        .map(|word| i64::from(word.top) + i64::from(word.height))
        .max();
    let (left, top, right, bottom) = (
        left.unwrap_or(0),
        top.unwrap_or(0),
        right.unwrap_or(0),
        bottom.unwrap_or(0),
    );
    let clamp = |value: i64| -> i32 {
        i32::try_from(value).unwrap_or(if value < 0 { i32::MIN } else { i32::MAX })
    };
    let confidence = if run.is_empty() {
        0.0
    } else {
        run.iter().map(|word| word.conf).sum::<f32>() / run.len() as f32
    };
    OcrElement {
        text,
        left: clamp(left),
        top: clamp(top),
        width: clamp(right - left),
        height: clamp(bottom - top),
        confidence,
    }
}

/// The `-l` argument for tesseract given the lines `tesseract --list-langs` printed.
///
/// "eng+chi_sim" when both English and Simplified Chinese are installed, "eng" when
/// English is and Chinese is not, otherwise the first language listed, and "eng"
/// when none is (tesseract then reports the missing language itself). The header
/// line (`List of available languages in "…" (3):`) and any other line holding
/// whitespace or ending with ':' are not language names and are ignored, as is
/// `osd`, which is tesseract's orientation and script detection data rather than a
/// language text can be read in.
pub fn languages(installed: &[String]) -> String {
    let names: Vec<&str> = installed
        .iter()
        .map(|line| line.trim())
        .filter(|line| {
            !line.is_empty()
                && !line.contains(char::is_whitespace)
                && !line.ends_with(':')
                && *line != "osd"
        })
        .collect();
    let has = |name: &str| names.contains(&name);
    if has("eng") && has("chi_sim") {
        "eng+chi_sim".to_owned()
    } else if has("eng") {
        "eng".to_owned()
    } else {
        names.first().copied().unwrap_or("eng").to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tesseract 5 TSV for a 640×200 capture: a header, page/block/paragraph/line rows
    /// with conf -1 and empty text, "pick one" on one line, "Alpha" and "Beta" far
    /// apart on the next, a menu entry in a second block higher up, a blank word, a
    /// low-confidence word on its own line, and a malformed row.
    const TSV: &str = "\
level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext
1\t1\t0\t0\t0\t0\t0\t0\t640\t200\t-1\t
2\t1\t1\t0\t0\t0\t20\t30\t290\t60\t-1\t
3\t1\t1\t1\t0\t0\t20\t30\t290\t60\t-1\t
4\t1\t1\t1\t1\t0\t20\t30\t86\t18\t-1\t
5\t1\t1\t1\t1\t1\t20\t30\t40\t18\t96.500000\tpick
5\t1\t1\t1\t1\t2\t66\t34\t40\t14\t93.500000\tone
4\t1\t1\t1\t2\t0\t20\t70\t290\t20\t-1\t
5\t1\t1\t1\t2\t1\t260\t70\t50\t20\t89.000000\tBeta
5\t1\t1\t1\t2\t2\t20\t70\t60\t20\t91.000000\tAlpha
5\t1\t1\t1\t2\t3\t400\t70\t10\t20\t95.000000\t \t
2\t1\t2\t0\t0\t0\t500\t5\t60\t16\t-1\t
3\t1\t2\t1\t0\t0\t500\t5\t60\t16\t-1\t
4\t1\t2\t1\t1\t0\t500\t5\t60\t16\t-1\t
5\t1\t2\t1\t1\t1\t500\t5\t60\t16\t88.250000\tSettings
5\t1\t3\t1\t1\t1\t30\t150\t20\t12\t12.000000\tzz
5\t1\t3\t1\t1\t2\t-1\tfoo
garbage
";

    fn word(text: &str, left: i32, top: i32, width: i32, height: i32, conf: f32) -> OcrWordBox {
        OcrWordBox {
            text: text.to_owned(),
            left,
            top,
            width,
            height,
            conf,
        }
    }

    #[test]
    fn parse_tsv_keeps_only_word_rows() {
        let words = parse_tsv(TSV);
        assert_eq!(
            words,
            vec![
                ((1, 1, 1), word("pick", 20, 30, 40, 18, 96.5)),
                ((1, 1, 1), word("one", 66, 34, 40, 14, 93.5)),
                ((1, 1, 2), word("Beta", 260, 70, 50, 20, 89.0)),
                ((1, 1, 2), word("Alpha", 20, 70, 60, 20, 91.0)),
                ((2, 1, 1), word("Settings", 500, 5, 60, 16, 88.25)),
                ((3, 1, 1), word("zz", 30, 150, 20, 12, 12.0)),
            ]
        );
    }

    #[test]
    fn parse_tsv_skips_negative_confidence_and_tolerates_crlf_and_tabs_in_text() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\r\n\
                   5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t-1\tghost\r\n\
                   5\t1\t1\t1\t1\t2\t12\t0\t10\t10\t70\ta\tb\r\n";
        assert_eq!(
            parse_tsv(tsv),
            vec![((1, 1, 1), word("a\tb", 12, 0, 10, 10, 70.0))]
        );
        assert!(parse_tsv("").is_empty());
    }

    #[test]
    fn group_splits_far_apart_words_and_orders_elements() {
        let elements = group(parse_tsv(TSV), 50.0, &[]);
        assert_eq!(
            elements,
            vec![
                OcrElement {
                    text: "Settings".to_owned(),
                    left: 500,
                    top: 5,
                    width: 60,
                    height: 16,
                    confidence: 88.25,
                },
                OcrElement {
                    text: "pick one".to_owned(),
                    left: 20,
                    top: 30,
                    width: 86,
                    height: 18,
                    confidence: 95.0,
                },
                OcrElement {
                    text: "Alpha".to_owned(),
                    left: 20,
                    top: 70,
                    width: 60,
                    height: 20,
                    confidence: 91.0,
                },
                OcrElement {
                    text: "Beta".to_owned(),
                    left: 260,
                    top: 70,
                    width: 50,
                    height: 20,
                    confidence: 89.0,
                },
            ]
        );
    }

    #[test]
    fn group_keeps_low_confidence_elements_above_the_threshold() {
        let elements = group(parse_tsv(TSV), 0.0, &[]);
        assert_eq!(elements.len(), 5);
        let last = elements.last().expect("five elements");
        assert_eq!(last.text, "zz");
        assert_eq!(
            (last.left, last.top, last.width, last.height),
            (30, 150, 20, 12)
        );
    }

    #[test]
    fn group_gap_threshold_is_strict() {
        // Median height 10, so gaps up to 15 pixels join and 16 splits.
        let line = |gap: i32| {
            vec![
                ((0, 0, 0), word("a", 0, 0, 10, 10, 90.0)),
                ((0, 0, 0), word("b", 10 + gap, 0, 10, 10, 80.0)),
            ]
        };
        let joined = group(line(15), 0.0, &[]);
        assert_eq!(joined.len(), 1);
        assert_eq!(joined[0].text, "a b");
        assert_eq!(joined[0].width, 35);
        assert_eq!(joined[0].confidence, 85.0);
        let split = group(line(16), 0.0, &[]);
        assert_eq!(
            split.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn group_measures_the_gap_from_the_run_so_far() {
        // "wide" reaches past "in"; "x" is close to "wide"'s right edge though far
        // from "in"'s.
        let words = vec![
            ((0, 0, 0), word("wide", 0, 0, 100, 10, 90.0)),
            ((0, 0, 0), word("in", 20, 0, 10, 10, 90.0)),
            ((0, 0, 0), word("x", 105, 0, 10, 10, 90.0)),
        ];
        let elements = group(words, 0.0, &[]);
        assert_eq!(elements.len(), 1);
        assert_eq!(elements[0].text, "wide in x");
        assert_eq!(elements[0].width, 115);
    }

    #[test]
    fn group_of_nothing_is_empty() {
        assert!(group(Vec::new(), 0.0, &[]).is_empty());
    }

    #[test]
    fn languages_prefers_eng_and_chi_sim() {
        let lines = |names: &[&str]| -> Vec<String> {
            names.iter().map(|name| (*name).to_owned()).collect()
        };
        let header = "List of available languages in \"/usr/share/tesseract-ocr/5/tessdata/\" (3):";
        assert_eq!(
            languages(&lines(&[header, "chi_sim", "eng", "osd"])),
            "eng+chi_sim"
        );
        assert_eq!(languages(&lines(&[header, "eng", "osd"])), "eng");
        assert_eq!(languages(&lines(&[header, "deu", "fra"])), "deu");
        assert_eq!(languages(&lines(&[header, "osd", "fra"])), "fra");
        assert_eq!(languages(&lines(&["tessdata:", "", "jpn"])), "jpn");
        assert_eq!(languages(&lines(&[header])), "eng");
        assert_eq!(languages(&[]), "eng");
    }

    #[test]
    fn words_in_two_frames_are_two_elements_however_close() {
        let w = |text: &str, left: i32| {
            (
                (1, 1, 1),
                OcrWordBox {
                    text: text.into(),
                    left,
                    top: 10,
                    width: 30,
                    height: 10,
                    conf: 90.0,
                },
            )
        };
        let words = vec![w("Alpha", 0), w("Beta", 34)];
        assert_eq!(group(words.clone(), 0.0, &[]).len(), 1, "close words join");
        let frames = [(-4, 5, 38, 20), (30, 5, 38, 20)];
        let two = group(words, 0.0, &frames);
        assert_eq!(two.len(), 2, "{two:?}");
        assert_eq!(
            (two[0].text.as_str(), two[1].text.as_str()),
            ("Alpha", "Beta")
        );
    }
}

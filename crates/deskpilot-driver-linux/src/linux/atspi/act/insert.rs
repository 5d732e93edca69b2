//! `type` through `EditableText.InsertText`, counted in the unit the toolkit reads
//! and checked against the text the field holds afterwards.
//!
//! Owns the length `InsertText` is given and the read-back that decides whether the
//! insertion is `executed`. `InsertText(position, text, length)` takes `length` in the
//! toolkit's own unit, and a wrong one is not refused: the toolkit inserts what it
//! made of it. Measured under Xvfb with `é😀中` (3 characters, 4 UTF-16 code units,
//! 9 UTF-8 bytes) into a field holding `abc`:
//!
//! - ATK (GTK 3 through `atk-bridge` 2.46, and every toolkit that answers through
//!   ATK): UTF-8 bytes. Length 9 inserts the text; length 3 inserts `é` and
//!   drops the rest.
//! - Qt 5.15 (toolkit `Qt`): UTF-16 code units. Length 4 inserts the text; length
//!   9 leaves `abcé😀中\0retO` (memory past the string); length 3 drops `中`.
//!
//! Text offsets (`CaretOffset`, `CharacterCount`, `GetText`) follow the same split:
//! characters for ATK, UTF-16 code units for Qt. The read-back never trusts the
//! answer `true`: the field's character count must grow by exactly the text's
//! length and the text at the insertion point must equal what was asked, character
//! by character; anything else is `outcome_unknown` saying what the field holds.
//! It never retries and never types through the keyboard.

use deskpilot_protocol::types::ActStatus;

use super::super::connection::{Bus, CallError, iface};
use super::super::handle::{ObjRef, ROOT_PATH};
use super::Outcome;

/// The unit a toolkit counts text in, for `InsertText`'s length and text offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextUnits {
    /// ATK: `InsertText` lengths in UTF-8 bytes, offsets in characters.
    Atk,
    /// Qt: both in UTF-16 code units.
    Qt,
}

impl TextUnits {
    /// The units of the toolkit an application names in `Application.ToolkitName`
    /// (pure): `Qt` (any case) is Qt, everything else answers through ATK.
    pub fn of_toolkit(toolkit: Option<&str>) -> TextUnits {
        match toolkit {
            Some(t) if t.trim().eq_ignore_ascii_case("qt") => TextUnits::Qt,
            _ => TextUnits::Atk,
        }
    }

    /// The `length` argument of `InsertText` for `text` (pure), saturating at
    /// `i32::MAX`.
    pub fn insert_length(self, text: &str) -> i32 {
        let n = match self {
            TextUnits::Atk => text.len(),
            TextUnits::Qt => text.encode_utf16().count(),
        };
        i32::try_from(n).unwrap_or(i32::MAX)
    }

    /// How far `text` moves a text offset (pure): characters for ATK, UTF-16 code
    /// units for Qt; saturating at `i32::MAX`.
    pub fn offset_length(self, text: &str) -> i32 {
        let n = match self {
            TextUnits::Atk => text.chars().count(),
            TextUnits::Qt => text.encode_utf16().count(),
        };
        i32::try_from(n).unwrap_or(i32::MAX)
    }
}

/// What a field holds after an insertion, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBack {
    /// `CharacterCount` before the call, in the toolkit's offset unit.
    pub count_before: i32,
    /// `CharacterCount` after it.
    pub count_after: i32,
    /// `GetText(position, position + offset_length(asked))` after it.
    pub at_position: String,
}

/// `None` when the read-back shows exactly `asked` inserted (pure), else a note
/// saying what the field holds instead, with the characters escaped so that a NUL
/// or a lone surrogate is visible.
pub fn mismatch(asked: &str, units: TextUnits, r: &ReadBack) -> Option<String> {
    let want = units.offset_length(asked);
    let grew = r.count_after.saturating_sub(r.count_before);
    if grew == want && r.at_position == asked {
        return None;
    }
    let shown = |s: &str| s.escape_debug().to_string();
    let first_diff = asked
        .chars()
        .zip(r.at_position.chars())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| asked.chars().count().min(r.at_position.chars().count()));
    Some(format!(
        "the application answered true to EditableText.InsertText, but the field does not hold what was asked: \
         \"{}\" was asked and \"{}\" is there (they differ from character {first_diff}); its length grew by \
         {grew} where {want} was expected. Observe the field, then set_value the text you want",
        shown(asked),
        shown(&r.at_position),
    ))
}

/// Inserts `text` at the caret of `obj` (at the end when it has no caret), with the
/// length in the toolkit's unit, and reads the field back.
///
/// Returns `executed` when the field holds exactly `text` at that point and grew by
/// its length, `rejected` when the application answered false, `outcome_unknown`
/// when the read-back differs or could not be made. Errors: the call's own
/// ([`CallError`]), for the caller to turn into a status.
pub async fn insert_text(bus: &Bus, obj: &ObjRef, text: &str) -> Result<Outcome, CallError> {
    let root = ObjRef::new(obj.bus.clone(), ROOT_PATH);
    let toolkit = bus
        .prop::<String>(&root, iface::APPLICATION, "ToolkitName")
        .await
        .ok();
    let units = TextUnits::of_toolkit(toolkit.as_deref());
    let count_before = bus
        .prop::<i32>(obj, iface::TEXT, "CharacterCount")
        .await
        .unwrap_or(0)
        .max(0);
    let position: i32 = match bus.prop::<i32>(obj, iface::TEXT, "CaretOffset").await {
        Ok(c) if c >= 0 => c.min(count_before),
        _ => count_before,
    };
    let accepted: bool = bus
        .call(
            obj,
            iface::EDITABLE_TEXT,
            "InsertText",
            &(position, text, units.insert_length(text)),
        )
        .await?;
    if !accepted {
        return Ok(Outcome {
            status: ActStatus::Rejected,
            note: Some(
                "the application answered false to EditableText.InsertText; nothing happened"
                    .into(),
            ),
        });
    }
    let end = position.saturating_add(units.offset_length(text));
    let range = (position, end);
    let (count_after, at_position) = tokio::join!(
        bus.prop::<i32>(obj, iface::TEXT, "CharacterCount"),
        bus.call::<_, String>(obj, iface::TEXT, "GetText", &range),
    );
    let (Ok(count_after), Ok(at_position)) = (count_after, at_position) else {
        return Ok(Outcome {
            status: ActStatus::OutcomeUnknown,
            note: Some(
                "EditableText.InsertText was accepted but the field's text could not be read back; \
                 observe it before typing again"
                    .into(),
            ),
        });
    };
    let read = ReadBack {
        count_before,
        count_after,
        at_position,
    };
    Ok(match mismatch(text, units, &read) {
        None => Outcome {
            status: ActStatus::Executed,
            note: None,
        },
        Some(why) => Outcome {
            status: ActStatus::OutcomeUnknown,
            note: Some(why),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASKED: &str = "é😀中";

    #[test]
    fn lengths_are_counted_in_each_toolkits_unit() {
        let qt = TextUnits::of_toolkit(Some("Qt"));
        let gtk = TextUnits::of_toolkit(Some("GTK"));
        assert_eq!(qt, TextUnits::Qt);
        assert_eq!(gtk, TextUnits::Atk);
        assert_eq!(TextUnits::of_toolkit(None), TextUnits::Atk);
        assert_eq!(qt.insert_length(ASKED), 4);
        assert_eq!(gtk.insert_length(ASKED), 9);
        assert_eq!(qt.offset_length(ASKED), 4);
        assert_eq!(gtk.offset_length(ASKED), 3);
    }

    #[test]
    fn only_the_exact_text_with_the_exact_growth_is_executed() {
        let ok = ReadBack {
            count_before: 3,
            count_after: 7,
            at_position: ASKED.into(),
        };
        assert_eq!(mismatch(ASKED, TextUnits::Qt, &ok), None);
        // Qt given the byte length: the text is there, then a NUL and garbage that a
        // D-Bus string cuts off; only the count shows it.
        let garbage = ReadBack {
            count_after: 12,
            ..ok.clone()
        };
        let note = mismatch(ASKED, TextUnits::Qt, &garbage).expect("a mismatch");
        assert!(note.contains("grew by 9 where 4"), "{note}");
        // Qt given the character count: the last character is missing.
        let short = ReadBack {
            count_before: 3,
            count_after: 6,
            at_position: "é😀".into(),
        };
        let note = mismatch(ASKED, TextUnits::Qt, &short).expect("a mismatch");
        assert!(note.contains("\"é😀\" is there"), "{note}");
        assert!(note.contains("from character 2"), "{note}");
        // ATK counts characters in offsets.
        let gtk = ReadBack {
            count_before: 3,
            count_after: 6,
            at_position: ASKED.into(),
        };
        assert_eq!(mismatch(ASKED, TextUnits::Atk, &gtk), None);
    }
}

//! The whole text of one element (`read`), by character offsets, redacted in the
//! context of its parent as a window read is. Never acts.

use deskpilot_core::{Handle, Node, Role};
use deskpilot_protocol::ErrorCode;
use deskpilot_protocol::types::*;
use serde::Serialize;

use super::read::element_of;
use super::{Session, err};
use deskpilot_protocol::Result;

/// A part of an element's whole text ([`Session::read_text`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TextRead {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub role: Role,
    /// Accessible name (secrets masked).
    pub name: String,
    /// The characters `from..to` of the text, exactly (secrets masked, as in every
    /// read); never cut inside a character.
    pub text: String,
    /// First character returned, in Unicode scalar values from the start.
    pub from: u64,
    /// One past the last character returned.
    pub to: u64,
    /// Characters in the whole text.
    pub total_chars: u64,
    /// False when the text is longer than one read takes (`MAX_TEXT_CAP`
    /// characters): `to` then stops there; or when a document built in view was
    /// read only in part (`note` says why).
    pub complete: bool,
    /// How a document whose application builds only the part in view was read
    /// whole (paged through with its scroll bar and put back), and what was not
    /// read (docs/ARCHITECTURE.md §6); `None` for any other element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Characters `from..to` of `text` (Unicode scalar values; `to` past the end means
/// the end), or the last `tail` characters when `tail` is given. Returns the part and
/// its bounds.
pub fn char_slice(
    text: &str,
    from: Option<u64>,
    to: Option<u64>,
    tail: Option<u64>,
) -> (String, u64, u64) {
    let n = text.chars().count() as u64;
    let (a, b) = match tail {
        Some(t) => (n.saturating_sub(t), n),
        None => {
            let a = from.unwrap_or(0).min(n);
            (a, to.unwrap_or(n).clamp(a, n))
        }
    };
    let part: String = text
        .chars()
        .skip(usize::try_from(a).unwrap_or(usize::MAX))
        .take(usize::try_from(b - a).unwrap_or(usize::MAX))
        .collect();
    (part, a, b)
}

/// The value of `one` (a one-node read of the element `handle`, redacted alone)
/// redacted again with the element's parent in `tree` (the window's read), as the
/// window read redacts it: a one-time code whose label sits beside it stays masked.
/// Empty when it has no value.
pub(super) fn in_context(one: &Node, tree: &Node, handle: &Handle) -> String {
    let mut alone = one.clone();
    alone.children.clear();
    let Some(parent) = parent_in(tree, handle) else {
        return deskpilot_core::redact::redacted_value(&alone, None)
            .map(|v| v.into_owned())
            .unwrap_or_default();
    };
    // The rules find a node's neighbours by its place among its parent's children:
    // a copy of the parent (one level) with the whole-text node in that place.
    let mut around = parent.clone();
    around.children = parent
        .children
        .iter()
        .map(|c| {
            if &c.handle == handle {
                alone.clone()
            } else {
                Node {
                    children: Vec::new(),
                    ..c.clone()
                }
            }
        })
        .collect();
    let at = around.children.iter().position(|c| &c.handle == handle);
    at.and_then(|i| deskpilot_core::redact::redacted_value(&around.children[i], Some(&around)))
        .map(|v| v.into_owned())
        .unwrap_or_default()
}

/// The parent in `root` of the node whose handle is `handle`.
pub(super) fn parent_in<'a>(root: &'a Node, handle: &Handle) -> Option<&'a Node> {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.children.iter().any(|c| &c.handle == handle) {
            return Some(n);
        }
        stack.extend(n.children.iter());
    }
    None
}

impl Session {
    /// Element `h` of `window` alone, its text read whole (up to `MAX_TEXT_CAP`
    /// characters); redacted alone by the driver boundary — callers redact it again
    /// in context ([`in_context`]).
    pub(super) async fn whole_text(&self, window: &WindowInfo, h: &Handle) -> Result<TreeSnapshot> {
        self.driver
            .snapshot(SnapshotParams {
                scope: Some(h.clone()),
                depth: Some(0),
                max_nodes: Some(1),
                text_cap: Some(MAX_TEXT_CAP),
                whole_text: true,
                ..SnapshotParams::whole(window.handle.clone())
            })
            .await
    }

    /// The text of element `r` of the current window, whole (up to `MAX_TEXT_CAP`
    /// characters, through a one-node scoped read, redacted as every read is), or
    /// the part `from..to` / the last `tail` characters of it ([`char_slice`]).
    ///
    /// Errors: as for acting on a ref — unknown or stale refs, a vanished window.
    pub async fn read_text(
        &mut self,
        r: &str,
        from: Option<u64>,
        to: Option<u64>,
        tail: Option<u64>,
    ) -> Result<TextRead> {
        let (_, window) = self.window_of_ref(r)?;
        let (h, _, fresh) = self.fresh_handle(&window, r).await?;
        let node = element_of(&fresh, &h, r)?.clone();
        let whole = self.whole_text(&window, &h).await?;
        // The one-node read was redacted alone; redact it again with its parent, as
        // the window read did (a code field's label lives beside it).
        let mut value = in_context(&whole.root, &fresh, &h);
        if whole.root.value.is_none() {
            // A label or a paragraph is its name; anything else has no text.
            if matches!(
                node.role,
                Role::Label | Role::Text | Role::Paragraph | Role::Heading
            ) && !node.name.is_empty()
            {
                value = node.name.clone();
            } else {
                return Err(err(
                    ErrorCode::InvalidArgument,
                    format!(
                        "{r} ({}) has no text to read; read a text field, a document or a label, or observe the window",
                        node.role
                    ),
                ));
            }
        }
        let read = value.chars().count() as u64;
        let total = whole.root.value_length.unwrap_or(read);
        let paged = whole.root.document.as_ref().and_then(|d| d.paged.as_ref());
        if let (Some(a), Some(b)) = (from, to)
            && a > b
        {
            return Err(err(
                ErrorCode::InvalidArgument,
                format!("--from {a} is after --to {b}; give from ≤ to"),
            ));
        }
        if let Some(a) = from.filter(|&a| a > read) {
            return Err(err(
                ErrorCode::InvalidArgument,
                format!("--from {a} is past the end of the text ({read} characters read)"),
            ));
        }
        let (text, from, to) = char_slice(&value, from, to, tail);
        Ok(TextRead {
            ref_: r.to_owned(),
            role: node.role,
            name: node.name,
            text,
            from,
            to,
            total_chars: total,
            complete: whole.root.value_length.is_none()
                && paged.is_none_or(|p| p.stopped.is_none()),
            note: paged.map(deskpilot_core::PagedText::describe),
        })
    }
}

#[cfg(test)]
mod char_slice_tests {
    use super::char_slice;

    #[test]
    fn parts_are_cut_by_characters_never_inside_one() {
        let t = "héllo 你好 Ωβγ";
        assert_eq!(char_slice(t, None, None, None), (t.to_owned(), 0, 12));
        assert_eq!(
            char_slice(t, Some(1), Some(5), None),
            ("éllo".to_owned(), 1, 5)
        );
        assert_eq!(
            char_slice(t, None, None, Some(3)),
            ("Ωβγ".to_owned(), 9, 12)
        );
        assert_eq!(
            char_slice(t, Some(6), Some(8), None),
            ("你好".to_owned(), 6, 8)
        );
        // Out of range asks clamp to the text.
        assert_eq!(
            char_slice(t, Some(20), Some(30), None),
            (String::new(), 12, 12)
        );
        assert_eq!(char_slice(t, Some(5), Some(2), None), (String::new(), 5, 5));
        assert_eq!(char_slice(t, None, None, Some(99)), (t.to_owned(), 0, 12));
    }
}

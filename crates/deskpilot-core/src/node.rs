//! The node model: one accessible element and its subtree (docs/ARCHITECTURE.md §3).
//!
//! A driver produces a tree of [`Node`]s with [`Handle`]s it understands; the ref
//! registry ([`crate::refs`]) assigns the short refs (`e5`) the model sees. A node's
//! [`Bounds`] are in screen pixels and are never shown to the model in text.

use serde::{Deserialize, Serialize};

use crate::role::Role;
use crate::state::{State, StateSet};

/// An opaque, driver-defined handle to a native accessible object.
///
/// For AT-SPI it is `"<bus name>|<object path>"`; for Android a uiautomator index path.
/// Only the driver that issued it interprets it; a handle can die when its element
/// goes away, which is why the host also keeps a fingerprint (see [`crate::refs`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Handle(pub String);

impl Handle {
    pub fn new(s: impl Into<String>) -> Self {
        Handle(s.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A rectangle in screen pixels: origin at the top-left corner of the X screen (or the
/// device screen on Android), x growing right, y growing down. `width`/`height` are
/// never negative; a zero-size rectangle means "not laid out".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Bounds {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

impl Bounds {
    pub const fn new(x: i32, y: i32, width: i32, height: i32) -> Self {
        Bounds {
            x,
            y,
            width,
            height,
        }
    }

    /// True when the rectangle covers no pixel.
    pub fn is_empty(&self) -> bool {
        self.width <= 0 || self.height <= 0
    }

    /// The exclusive right and bottom edges, computed in 64 bits so that extents
    /// near `i32::MAX` (a driver reporting garbage) cannot overflow.
    fn far_edges(&self) -> (i64, i64) {
        (
            i64::from(self.x) + i64::from(self.width),
            i64::from(self.y) + i64::from(self.height),
        )
    }

    /// True when the two rectangles share at least one pixel.
    pub fn intersects(&self, other: &Bounds) -> bool {
        let (right, bottom) = self.far_edges();
        let (other_right, other_bottom) = other.far_edges();
        !self.is_empty()
            && !other.is_empty()
            && i64::from(self.x) < other_right
            && i64::from(other.x) < right
            && i64::from(self.y) < other_bottom
            && i64::from(other.y) < bottom
    }

    /// True when the point (screen pixels) lies inside.
    pub fn contains_point(&self, x: i32, y: i32) -> bool {
        let (right, bottom) = self.far_edges();
        x >= self.x && y >= self.y && i64::from(x) < right && i64::from(y) < bottom
    }

    /// True when the union of `covers` holds every pixel of this rectangle (and it
    /// has one). Exact: the plane is cut at every rectangle's edges and each cell
    /// inside this one must lie in some cover; O(n³) in the number of covers,
    /// which are the few windows stacked above one window.
    pub fn covered_by(&self, covers: &[Bounds]) -> bool {
        if self.is_empty() {
            return false;
        }
        let (right, bottom) = self.far_edges();
        let (x0, y0) = (i64::from(self.x), i64::from(self.y));
        let clip = |v: i64, lo: i64, hi: i64| v.clamp(lo, hi);
        let mut xs = vec![x0, right];
        let mut ys = vec![y0, bottom];
        let rects: Vec<(i64, i64, i64, i64)> = covers
            .iter()
            .filter(|c| c.intersects(self))
            .map(|c| {
                let (r, b) = c.far_edges();
                (i64::from(c.x), i64::from(c.y), r, b)
            })
            .collect();
        for &(l, t, r, b) in &rects {
            xs.extend([clip(l, x0, right), clip(r, x0, right)]);
            ys.extend([clip(t, y0, bottom), clip(b, y0, bottom)]);
        }
        xs.sort_unstable();
        xs.dedup();
        ys.sort_unstable();
        ys.dedup();
        xs.windows(2).all(|xw| {
            ys.windows(2).all(|yw| {
                let (cx, cy) = (xw[0], yw[0]);
                rects
                    .iter()
                    .any(|&(l, t, r, b)| l <= cx && cx < r && t <= cy && cy < b)
            })
        })
    }
}

#[cfg(test)]
mod bounds_tests {
    use super::Bounds;

    #[test]
    fn covered_only_when_every_pixel_is_under_some_cover() {
        let w = Bounds::new(100, 100, 200, 100);
        assert!(w.covered_by(&[Bounds::new(0, 0, 1000, 1000)]));
        // Two halves that meet exactly.
        assert!(w.covered_by(&[
            Bounds::new(90, 90, 110, 200),
            Bounds::new(200, 50, 150, 300)
        ]));
        // A one-pixel gap between them.
        assert!(!w.covered_by(&[
            Bounds::new(90, 90, 110, 200),
            Bounds::new(201, 50, 150, 300)
        ]));
        // A corner left out.
        assert!(!w.covered_by(&[Bounds::new(100, 100, 200, 99)]));
        assert!(!w.covered_by(&[]));
        assert!(!Bounds::new(0, 0, 0, 0).covered_by(&[Bounds::new(0, 0, 10, 10)]));
    }
}

/// The shape of a table-like container whose cells are created on demand (a
/// spreadsheet grid), and the part of it that is on screen. Rows and columns are
/// 0-based indices; ranges are inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TableInfo {
    /// Total rows the container reports (LibreOffice Calc: 1,048,576).
    pub rows: u64,
    /// Total columns the container reports (LibreOffice Calc: 16,384).
    pub columns: u64,
    /// First and last visible row, if known.
    pub visible_rows: Option<(u64, u64)>,
    /// First and last visible column, if known.
    pub visible_columns: Option<(u64, u64)>,
    /// Name the visible range in spreadsheet A1 notation (`A1:K40`) rather than by
    /// row and column numbers.
    pub a1: bool,
    /// The cells read, as `(rows, columns)`, when fewer than the visible ones (a
    /// read takes at most a bounded block: the Linux driver's is 40 rows × 16
    /// columns); `None` when every visible cell was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<((u64, u64), (u64, u64))>,
}

/// The part of a document that a read saw, for a document whose application builds
/// its content only where it is in view: LibreOffice Writer gives the paragraphs on
/// screen as the document's children and no object at all for the rest, so the
/// children read are a window onto a longer text (docs/ARCHITECTURE.md §6).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct DocumentView {
    /// Content lies before the first child read (above the view): the view is
    /// scrolled down, or the first child is cut by its top edge.
    pub before: bool,
    /// Content lies after the last child read (below the view): the last child
    /// reaches the view's bottom edge.
    pub after: bool,
    /// How a whole-text read put the document's text in `value`, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paged: Option<PagedText>,
}

impl DocumentView {
    /// True when content lies outside the children read.
    pub fn beyond(&self) -> bool {
        self.before || self.after
    }
}

/// How the whole text of a [`DocumentView`] document was read: by scrolling its view
/// through the document with its scroll bar's own page action (the view only: the
/// caret and the selection stay), reading the children in view at each stop, and
/// scrolling back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct PagedText {
    /// Parts whose text was read (paragraphs; a paragraph that a page break splits
    /// is two parts, each on its own line of the text).
    pub parts: u64,
    /// Children in view with no text of their own (a table, an image, a frame):
    /// left out of the text.
    pub skipped: u64,
    /// Scroll-bar steps taken (pages, and lines to meet the view's first place),
    /// there and back.
    pub steps: u64,
    /// The scroll bar is back at the value it had before the read.
    pub restored: bool,
    /// Why the read stopped before the end of the document, when it did (the time,
    /// character or part bound it met, or a view that would not move); `None` when
    /// the text runs from the start to the end of the document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Wall time of the read, ms.
    pub elapsed_ms: u64,
}

impl PagedText {
    /// One sentence saying how the text was read and what was not, e.g. `read 628
    /// parts by paging the view 216 steps (put back where it was); 1 child without
    /// text (a table, an image) left out`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "read {} part(s) by paging the view with its scroll bar, {} step(s) there and back",
            self.parts, self.steps
        );
        s.push_str(if self.restored {
            " (put back where it was)"
        } else {
            " (put back near where it was, not exactly: observe to see the view)"
        });
        if self.skipped > 0 {
            s.push_str(&format!(
                "; {} child(ren) without text of their own (a table, an image, a frame) left out",
                self.skipped
            ));
        }
        if let Some(why) = &self.stopped {
            s.push_str(&format!("; stopped before the end: {why}"));
        }
        s
    }
}

/// One accessible element and the children that were read.
///
/// Text fields (`name`, `value`, `description`) are raw UI text: untrusted, possibly
/// containing control characters or secrets; the render sanitizes and redacts them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Node {
    /// The driver's handle for this element.
    pub handle: Handle,
    /// The ref (`e5`, `w1`) assigned by the host's ref registry; `None` straight out
    /// of a driver.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub ref_: Option<String>,
    pub role: Role,
    /// Accessible name; empty when the element has none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Current text or numeric value, as text (a textbox's contents, a slider's "42").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "StateSet::is_empty")]
    pub states: StateSet,
    /// Platform action names the element offers (`click`, `press`, `activate`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// Screen-pixel extents; `None` when the platform did not report them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
    /// A developer-assigned id (AT-SPI `AccessibleId`, UIA `AutomationId`, Android
    /// `resource-id`), the strongest part of a fingerprint when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
    /// The number of children the platform reports. Larger than `children.len()` when
    /// the walk stopped early (child cap, managed descendants); the render states the
    /// difference as "K more".
    #[serde(default)]
    pub child_count: u64,
    /// Shape and visible range of an on-demand table (see [`TableInfo`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<TableInfo>,
    /// Total length of the value in characters (Unicode scalar values) when `value`
    /// holds only its head (a driver reads at most a few thousand characters of a
    /// long text); `None` when `value` is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_length: Option<u64>,
    /// The bounds of a range control's value (AT-SPI `Value.MinimumValue` /
    /// `MaximumValue`), formatted like `value`: slider, scroll bar, progress bar,
    /// spin button.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<ValueRange>,
    /// The index of `children[0]` among all `child_count` children: above 0 when a
    /// read started further in (a page of a long list, `from=`). The children
    /// before it are counted in `child_count`, not read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_child: u64,
    /// Set on a document whose children are only the part of it in view (see
    /// [`DocumentView`]); `None` for every other element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<DocumentView>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The least and greatest value of a range control, each formatted as the driver
/// formats `value` (`0`, `100`, `4512.5`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ValueRange {
    pub min: String,
    pub max: String,
}

impl Node {
    /// A node with a role and a name and nothing else (for drivers and fixtures).
    pub fn new(handle: impl Into<String>, role: Role, name: impl Into<String>) -> Self {
        Node {
            handle: Handle::new(handle),
            role,
            name: name.into(),
            ..Node::default()
        }
    }

    /// Builder: adds a state.
    #[must_use]
    pub fn state(mut self, s: State) -> Self {
        self.states.insert(s);
        self
    }

    /// Builder: sets the value.
    #[must_use]
    pub fn value(mut self, v: impl Into<String>) -> Self {
        self.value = Some(v.into());
        self
    }

    /// Builder: sets the bounds.
    #[must_use]
    pub fn bounds(mut self, b: Bounds) -> Self {
        self.bounds = Some(b);
        self
    }

    /// Builder: sets the platform actions.
    #[must_use]
    pub fn actions(mut self, a: &[&str]) -> Self {
        self.actions = a.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Builder: appends children and keeps `child_count` at least their number.
    #[must_use]
    pub fn children(mut self, c: Vec<Node>) -> Self {
        self.children.extend(c);
        self.child_count = self.child_count.max(self.children.len() as u64);
        self
    }

    pub fn has(&self, s: State) -> bool {
        self.states.contains(s)
    }

    /// Depth-first pre-order walk over this node and all descendants.
    pub fn walk(&self) -> impl Iterator<Item = &Node> {
        let mut stack = vec![self];
        std::iter::from_fn(move || {
            let n = stack.pop()?;
            stack.extend(n.children.iter().rev());
            Some(n)
        })
    }

    /// Finds a descendant (or self) by ref.
    pub fn find_ref(&self, r: &str) -> Option<&Node> {
        self.walk().find(|n| n.ref_.as_deref() == Some(r))
    }

    /// Total number of nodes in this subtree, including self.
    pub fn count(&self) -> usize {
        self.walk().count()
    }
}

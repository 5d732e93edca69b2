//! Documents whose children are only the part in view.
//!
//! LibreOffice Writer's document (`MANAGES_DESCENDANTS`, no `Table`, no `Text` of
//! its own) gives as children the paragraphs on screen, and no object at all for
//! the rest: the children a read takes are a window onto a longer text. This module
//! owns two things about such documents (docs/ARCHITECTURE.md §6, "Documents built
//! in view"):
//!
//! - [`view_in`] (pure): whether content lies above and below the paragraphs read,
//!   from what the read already holds — the vertical scroll bar beside the document
//!   (scrolled down: content above) and the extents of the first and last paragraph
//!   against the document's (cut by the view's edge: more beyond it).
//! - [`read_whole_text`]: the whole text, by paging the view through the document
//!   with its scroll bar's own page actions (`incrementBlock`/`decrementBlock`: the
//!   view moves, the caret and the selection stay), reading the paragraphs in view
//!   at each stop, then paging back to where the view was.
//!
//! It must never ask for an object out of view: not its text, and not even the
//! object (no `FLOWS_TO`/`FLOWS_FROM` relation is followed). Writer answers the text
//! of a paragraph from its formatted lines; a paragraph out of view whose lines its
//! cache let go reads as empty, and its accessible object keeps that empty text even
//! once scrolled into view (measured on LibreOffice 7.4: of 628 paragraphs read
//! through `FLOWS_TO`, 178 read empty and stayed so on screen). Even an object
//! merely created through a relation right after the document opened was emptied
//! that way by Writer's own layout, and read empty when paged to. Setting the scroll
//! bar's `Value` does not move Writer's view (it stays at 0), hence the actions.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use deskpilot_core::{DocumentView, PagedText, Role};
use deskpilot_protocol::ComputerError;
use futures_util::{StreamExt, stream};

use super::connection::{Bus, CallError, iface};
use super::handle::ObjRef;
use super::info::{Ifaces, NodeInfo};
use super::role_map::map_role_code;
use super::tree::Parts;

/// Wall time a whole-text read may spend reading: 12 s, leaving room under the
/// protocol's 30 s call timeout for paging back. Measured on LibreOffice 7.4 here: a
/// 46-page document (600 paragraphs, 191,000 characters) paged through in ~2 s.
pub const WHOLE_TEXT_BUDGET: Duration = Duration::from_secs(12);

/// Page steps a whole-text read takes at most in one direction: 5,000 (a view is
/// about half a page of A4 at 100 % on a 1280×800 screen: some 2,500 pages).
pub const MAX_PAGE_STEPS: u64 = 5_000;

/// Line steps taken at most to put the view back after the page steps: 200.
const MAX_LINE_STEPS: u64 = 200;

/// Parts (paragraphs) a whole-text read takes at most: 50,000, as many elements as
/// any one read ([`deskpilot_protocol::types::MAX_READ_NODES`]).
pub const MAX_PARTS: u64 = deskpilot_protocol::types::MAX_READ_NODES as u64;

/// Children of one view read at most: 500, the driver's child cap.
const MAX_IN_VIEW: u32 = super::options::DEFAULT_CHILD_CAP;

/// Calls in flight while reading the parts of one view.
const IN_FLIGHT: usize = 16;

/// True for a document whose children are only the part in view (pure): a
/// document role that builds its children on demand (`MANAGES_DESCENDANTS`) and is
/// neither a grid read through `Table` nor a text of its own. Other containers that
/// manage their descendants (GTK 3's places list in a file chooser) are lists, not
/// documents.
pub fn builds_in_view(info: &NodeInfo) -> bool {
    map_role_code(info.role) == Role::Document
        && info.states.manages_descendants()
        && !info.ifaces.has(Ifaces::TABLE)
        && !info.ifaces.has(Ifaces::TEXT)
}

/// Where content lies around the children read of the document `doc` (pure), from
/// the read's records, children and details: content above when the vertical scroll
/// bar beside the document (a sibling, or a sibling's child) stands above its
/// least value, or the first child's top is cut by the view's; content below when
/// the last child reaches the view's bottom edge (within 2 px: Writer clips a
/// paragraph's extents to the view). `None` when `doc` is not one of
/// [`builds_in_view`], had no children read, or its extents are unknown.
///
/// What it cannot see: a view whose last paragraph ends above its bottom edge with
/// more text on a later page (after a page break) says nothing below; `read` still
/// reads it.
pub fn view_in(parts: &Parts, doc: &ObjRef) -> Option<DocumentView> {
    if !parts.infos.get(doc).is_some_and(builds_in_view) {
        return None;
    }
    let kids = parts.kids.get(doc)?;
    let bounds = |o: &ObjRef| parts.details.get(o).and_then(|d| d.bounds);
    let view = bounds(doc).filter(|b| !b.is_empty())?;
    let first = kids.first().and_then(bounds)?;
    let last = kids.last().and_then(bounds)?;
    let scrolled = scroll_bar_beside(parts, doc)
        .and_then(|bar| parts.details.get(&bar))
        .and_then(|d| Some((d.number?, d.range?.0)))
        .is_some_and(|(value, min)| value > min);
    let bottom = i64::from(view.y) + i64::from(view.height);
    let last_bottom = i64::from(last.y) + i64::from(last.height);
    Some(DocumentView {
        before: scrolled || first.y < view.y,
        after: last_bottom + 2 >= bottom,
        paged: None,
    })
}

/// The vertical scroll bar read beside `doc`: among its siblings, or their children
/// (pure).
fn scroll_bar_beside(parts: &Parts, doc: &ObjRef) -> Option<ObjRef> {
    let parent = parts
        .kids
        .iter()
        .find(|(_, ks)| ks.contains(doc))
        .map(|(p, _)| p)?;
    let is_bar = |o: &&ObjRef| {
        parts.infos.get(*o).is_some_and(|i| {
            map_role_code(i.role) == Role::Scrollbar && i.states.has(atspi::State::Vertical)
        })
    };
    let siblings = parts.kids.get(parent)?;
    siblings.iter().find(is_bar).cloned().or_else(|| {
        siblings
            .iter()
            .filter_map(|s| parts.kids.get(s))
            .flatten()
            .find(is_bar)
            .cloned()
    })
}

/// The document's vertical scroll bar and the indices of its page and line
/// actions, when it offers the page ones.
struct Pager {
    bar: ObjRef,
    page_up: i32,
    page_down: i32,
    line_up: Option<i32>,
    line_down: Option<i32>,
}

impl Pager {
    async fn find(bus: &Bus, doc: &ObjRef) -> Option<Pager> {
        let bar = super::act::scrollbar_for(bus, doc, true).await?;
        let names = super::details::action_names(bus, &bar).await.ok()?;
        let at = |n: &str| {
            names
                .iter()
                .position(|a| a.eq_ignore_ascii_case(n))
                .and_then(|i| i32::try_from(i).ok())
        };
        Some(Pager {
            page_up: at("decrementBlock")?,
            page_down: at("incrementBlock")?,
            line_up: at("decrementLine"),
            line_down: at("incrementLine"),
            bar,
        })
    }

    async fn value(&self, bus: &Bus) -> Result<f64, CallError> {
        bus.prop(&self.bar, iface::VALUE, "CurrentValue").await
    }

    /// Does action `index` and returns the value before and after it.
    async fn step(&self, bus: &Bus, index: i32) -> Result<(f64, f64), CallError> {
        let before = self.value(bus).await?;
        let _: bool = bus
            .call(&self.bar, iface::ACTION, "DoAction", &(index,))
            .await?;
        Ok((before, self.value(bus).await?))
    }
}

/// The text of one child in view: its own `Text` (at most `cap` characters), or
/// `None` when it has none (a table, an image, a frame).
async fn part_text(bus: &Bus, obj: &ObjRef, cap: usize) -> Result<Option<String>, CallError> {
    let names: Vec<String> = bus
        .call(obj, iface::ACCESSIBLE, "GetInterfaces", &())
        .await?;
    if !Ifaces::from_names(&names).has(Ifaces::TEXT) {
        return Ok(None);
    }
    let (text, _) = super::details::text_head(bus, obj, cap).await?;
    Ok(Some(text))
}

/// What one pass over the document collected.
#[derive(Default)]
struct Collected {
    text: String,
    chars: u64,
    parts: u64,
    skipped: u64,
    seen: HashSet<ObjRef>,
}

/// Reads the children in view that were not read before, in order, appending their
/// text (one line each). Returns why to stop, when a bound was met.
async fn read_view(
    bus: &Bus,
    doc: &ObjRef,
    cap: usize,
    got: &mut Collected,
) -> Result<Option<String>, CallError> {
    let n: i32 = bus.prop(doc, iface::ACCESSIBLE, "ChildCount").await?;
    let n = u32::try_from(n.max(0)).unwrap_or(0);
    let kids = super::walk::children_by_index(bus, doc, 0, n.min(MAX_IN_VIEW)).await?;
    let new: Vec<ObjRef> = kids.into_iter().filter(|k| !got.seen.contains(k)).collect();
    let left = cap.saturating_sub(usize::try_from(got.chars).unwrap_or(usize::MAX));
    let texts: Vec<(ObjRef, Result<Option<String>, CallError>)> = stream::iter(new)
        .map(|k| async move {
            let t = part_text(bus, &k, left.max(1)).await;
            (k, t)
        })
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    for (k, t) in texts {
        got.seen.insert(k.clone());
        let t = match t {
            Ok(t) => t,
            Err(e) if e.is_timeout() => return Err(e),
            Err(e) => {
                // Scrolled away or rebuilt between the count and the read.
                tracing::debug!(obj = %k, error = %e, "part unread");
                got.skipped += 1;
                continue;
            }
        };
        let Some(t) = t else {
            got.skipped += 1;
            continue;
        };
        let len = t.chars().count() as u64;
        if len == 0 {
            tracing::debug!(obj = %k, part = got.parts, "empty part");
        }
        if got.chars + len + u64::from(got.parts > 0) > cap as u64 {
            return Ok(Some(format!(
                "the text reached the {cap}-character bound of one read"
            )));
        }
        if got.parts > 0 {
            got.text.push('\n');
            got.chars += 1;
        }
        got.text.push_str(&t);
        got.chars += len;
        got.parts += 1;
        if got.parts >= MAX_PARTS {
            return Ok(Some(format!("{MAX_PARTS} parts, the bound of one read")));
        }
    }
    Ok(None)
}

/// The whole text of the document `doc` (one of [`builds_in_view`]), at most `cap`
/// characters, its parts in document order, one per line, and how it was read.
///
/// Pages the view to the top with the scroll bar's `decrementBlock`, reads the parts
/// in view, pages down with `incrementBlock` until the bar stops moving, reading the
/// parts that came into view at each stop, then pages (and steps by lines) back to
/// the value the bar had. The view moves; nothing in the document, the caret or the
/// selection does. Without such a scroll bar only the parts in view are read, and
/// [`PagedText::stopped`] says so.
///
/// Errors: `COMPUTER_NOT_RESPONDING` when a call times out; `COMPUTER_ELEMENT_NOT_
/// FOUND` when the document goes away.
pub async fn read_whole_text(
    bus: &Bus,
    doc: &ObjRef,
    cap: usize,
) -> Result<(String, PagedText), ComputerError> {
    let started = Instant::now();
    let mut got = Collected::default();
    let fail = |e: CallError| e.to_driver();
    let Some(pager) = Pager::find(bus, doc).await else {
        let stopped = read_view(bus, doc, cap, &mut got).await.map_err(fail)?;
        let paged = PagedText {
            parts: got.parts,
            skipped: got.skipped,
            steps: 0,
            restored: true,
            stopped: Some(stopped.unwrap_or_else(|| {
                "no scroll bar with page actions moves this document, so only the part in view was read".into()
            })),
            elapsed_ms: started.elapsed().as_millis() as u64,
        };
        return Ok((got.text, paged));
    };
    let home = pager.value(bus).await.map_err(fail)?;
    let mut steps = 0u64;
    let mut ups = 0u64;
    // Paging there and reading; a call that fails on the way still pages back.
    let went = page_through(
        bus, doc, cap, &pager, &mut got, &mut steps, &mut ups, started,
    )
    .await;
    // Back to where the view was.
    let (back, restored) = match restore(bus, &pager, home, ups).await {
        Ok(r) => r,
        Err(e) => {
            went.map_err(fail)?;
            return Err(fail(e));
        }
    };
    let stopped = went.map_err(fail)?;
    steps += back;
    let paged = PagedText {
        parts: got.parts,
        skipped: got.skipped,
        steps,
        restored,
        stopped,
        elapsed_ms: started.elapsed().as_millis() as u64,
    };
    tracing::debug!(
        %doc,
        parts = paged.parts,
        chars = got.chars,
        steps,
        restored,
        ms = paged.elapsed_ms,
        "document read whole"
    );
    Ok((got.text, paged))
}

/// Pages the view of `doc` to the top (counting in `ups` the page steps that moved:
/// as many down from the top bring it back), then down to the end, reading the
/// parts that come into view into `got`; `steps` counts every page step. Returns
/// why it stopped before the end, when a bound was met.
#[allow(clippy::too_many_arguments)]
async fn page_through(
    bus: &Bus,
    doc: &ObjRef,
    cap: usize,
    pager: &Pager,
    got: &mut Collected,
    steps: &mut u64,
    ups: &mut u64,
    started: Instant,
) -> Result<Option<String>, CallError> {
    loop {
        if *steps >= MAX_PAGE_STEPS || started.elapsed() >= WHOLE_TEXT_BUDGET {
            return Ok(Some(
                "the view could not be paged to the top within the read's bounds".into(),
            ));
        }
        let (before, after) = pager.step(bus, pager.page_up).await?;
        *steps += 1;
        if after >= before {
            break;
        }
        *ups += 1;
    }
    let mut down = 0u64;
    loop {
        if let Some(why) = read_view(bus, doc, cap, got).await? {
            return Ok(Some(why));
        }
        if started.elapsed() >= WHOLE_TEXT_BUDGET {
            return Ok(Some(format!(
                "the read's {} s bound",
                WHOLE_TEXT_BUDGET.as_secs()
            )));
        }
        if down >= MAX_PAGE_STEPS {
            return Ok(Some(format!(
                "{MAX_PAGE_STEPS} page steps, the bound of one read"
            )));
        }
        let (before, after) = pager.step(bus, pager.page_down).await?;
        *steps += 1;
        down += 1;
        if after <= before {
            return Ok(None);
        }
    }
}

/// Pages the bar back to `home`, which lay `ups` page steps below the top: page
/// steps up to the top, `ups` page steps down, then line steps to meet `home` (down
/// while below it, up while above), each bounded. Block steps from the
/// top land where they landed before, so a view the user paged to is met exactly;
/// one scrolled by other means is met within a line. Returns the steps taken and
/// whether the bar stands at `home`.
async fn restore(bus: &Bus, pager: &Pager, home: f64, ups: u64) -> Result<(u64, bool), CallError> {
    let mut steps = 0u64;
    let mut now = pager.value(bus).await?;
    if (now - home).abs() < 0.5 {
        return Ok((0, true));
    }
    // Up to the top.
    while steps < MAX_PAGE_STEPS {
        let (before, after) = pager.step(bus, pager.page_up).await?;
        steps += 1;
        now = after;
        if after >= before {
            break;
        }
    }
    // Down as many pages as it took to go up.
    for _ in 0..ups.min(MAX_PAGE_STEPS) {
        if now >= home {
            break;
        }
        let (_, after) = pager.step(bus, pager.page_down).await?;
        steps += 1;
        now = after;
    }
    let mut lines = 0u64;
    if let Some(down) = pager.line_down {
        while now < home && lines < MAX_LINE_STEPS {
            let (before, after) = pager.step(bus, down).await?;
            lines += 1;
            now = after;
            if after <= before {
                break;
            }
        }
    }
    if let Some(up) = pager.line_up {
        while now > home && lines < MAX_LINE_STEPS {
            let (before, after) = pager.step(bus, up).await?;
            lines += 1;
            now = after;
            if after >= before {
                break;
            }
        }
    }
    Ok((steps + lines, (now - home).abs() < 0.5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::atspi::tree::Details;
    use deskpilot_core::Bounds;

    fn info(role: u32, states: u64, ifaces: &[&str]) -> NodeInfo {
        NodeInfo {
            obj: ObjRef::new(":1.3", "/org/a11y/atspi/accessible/12"),
            parent: None,
            index: 0,
            child_count: -1,
            listed_children: None,
            role,
            name: String::new(),
            description: String::new(),
            states: super::super::state_map::RawStates(states),
            ifaces: Ifaces::from_names(ifaces.iter().map(|s| format!("org.a11y.atspi.{s}"))),
        }
    }

    #[test]
    fn only_documents_that_manage_their_paragraphs_are_built_in_view() {
        use atspi::State as S;
        let manages = S::ManagesDescendants as u64 | S::Showing as u64;
        // LibreOffice Writer's document: `document text`, as cached.
        let writer = info(
            94,
            manages,
            &["Accessible", "Collection", "Component", "Selection"],
        );
        assert!(builds_in_view(&writer));
        // A GTK list that manages its rows is a list.
        assert!(!builds_in_view(&info(
            31,
            manages,
            &["Accessible", "Selection"]
        )));
        // Calc's grid has `Table`; a document with its own text is read as text.
        assert!(!builds_in_view(&info(94, manages, &["Table"])));
        assert!(!builds_in_view(&info(94, manages, &["Text"])));
        assert!(!builds_in_view(&info(94, S::Showing as u64, &[])));
    }

    /// A Writer window's document area as a read holds it:
    ///
    /// ```text
    /// 1 [panel]
    /// ├── 12 [document text] 0,100 800×600, manages descendants
    /// │   ├── 20 [paragraph] first
    /// │   └── 21 [paragraph] last
    /// └── 13 [scroll bar] vertical, value `scroll`, range 0–787896
    /// ```
    fn writer(first: Bounds, last: Bounds, scroll: f64) -> Parts {
        use atspi::State as S;
        let shown = S::Showing as u64 | S::Visible as u64;
        let o = |n: u32| ObjRef::new(":1.3", format!("/org/a11y/atspi/accessible/{n}"));
        let mut p = Parts::default();
        for (n, role, states, ifaces) in [
            (1, 39, shown, &[][..]),
            (12, 94, shown | S::ManagesDescendants as u64, &[][..]),
            (20, 73, shown, &["Text"][..]),
            (21, 73, shown, &["Text"][..]),
            (13, 48, shown | S::Vertical as u64, &["Value"][..]),
        ] {
            let mut i = info(role, states, ifaces);
            i.obj = o(n);
            p.infos.insert(o(n), i);
        }
        p.kids.insert(o(1), vec![o(12), o(13)]);
        p.kids.insert(o(12), vec![o(20), o(21)]);
        let b = |bounds| Details {
            bounds: Some(bounds),
            ..Details::default()
        };
        p.details.insert(o(12), b(Bounds::new(0, 100, 800, 600)));
        p.details.insert(o(20), b(first));
        p.details.insert(o(21), b(last));
        p.details.insert(
            o(13),
            Details {
                number: Some(scroll),
                range: Some((0.0, 787_896.0)),
                ..Details::default()
            },
        );
        p
    }

    #[test]
    fn the_view_says_where_more_lies() {
        let doc = ObjRef::new(":1.3", "/org/a11y/atspi/accessible/12");
        // At the top, the last paragraph cut by the bottom edge: more below only.
        let top = writer(
            Bounds::new(200, 122, 600, 47),
            Bounds::new(200, 640, 600, 60),
            0.0,
        );
        let v = view_in(&top, &doc).unwrap();
        assert!(!v.before && v.after, "{v:?}");
        // Scrolled down: more above too.
        let mid = writer(
            Bounds::new(200, 100, 600, 40),
            Bounds::new(200, 650, 600, 50),
            7277.0,
        );
        let v = view_in(&mid, &doc).unwrap();
        assert!(v.before && v.after, "{v:?}");
        // A one-page document: its last paragraph ends well above the bottom.
        let all = writer(
            Bounds::new(200, 122, 600, 17),
            Bounds::new(200, 156, 600, 17),
            0.0,
        );
        assert!(!view_in(&all, &doc).unwrap().beyond());
        // Not a document built in view: nothing said.
        let para = ObjRef::new(":1.3", "/org/a11y/atspi/accessible/20");
        assert_eq!(view_in(&all, &para), None);
    }
}

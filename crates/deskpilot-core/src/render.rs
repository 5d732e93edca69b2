//! The budgeted text snapshot of a window (docs/ARCHITECTURE.md §4).
//!
//! Owns turning a [`Node`] tree into the indented text a model reads: one element per
//! line, two spaces of indent per depth, `[e5] role "name" value="…" states`, an
//! optional header line first and a note of what was left out last. Offscreen,
//! zero-size and decorative elements are pruned, unnamed single-child containers
//! folded, long values and lists cut with the rest stated, and the whole text held
//! under a hard token ceiling by priority (focus path > interactive > named text >
//! containers). Never prints a value that did not go through [`crate::redact`], never
//! prints a raw line break or bidi control from UI text, never exceeds `max_tokens`.
//!
//! ```text
//! app mousepad pid=812 · window "Untitled 1 - Mousepad" [focused]
//! [w1] window "Untitled 1 - Mousepad"
//!   [e2] menubar
//!     [e3] menuitem "File" ▸
//!   [e5] textbox value="hello wor…(1.2k chars)" editable focused
//!   [e7] button "Close"
//! (folded 23 unnamed containers)
//! ```

use crate::budget::{self, FooterLevel, Line};
use crate::node::Node;
use crate::redact;
use crate::sanitize;
use crate::view::{self, View, ViewOptions, ViewStats};

/// Default token ceiling of a snapshot (docs/ARCHITECTURE.md §4: 2,000 tokens).
pub const DEFAULT_MAX_TOKENS: usize = 2_000;
/// Default characters kept of a long name or value before `…(N chars)`.
pub const DEFAULT_MAX_VALUE_CHARS: usize = 120;
/// Default children shown of a list-like element before `… K more items`.
pub const DEFAULT_MAX_LIST_ITEMS: usize = 20;
/// Levels below the rendered element that are read; deeper elements are stated as
/// `… K more items, use observe scope=eN` under the deepest shown one. Matches the
/// deepest level the Linux driver reads.
pub const MAX_DEPTH: usize = view::MAX_DEPTH;
/// Characters of the header kept before it is measured at all; a header is one line
/// naming the application and window, and a window title can be arbitrarily long.
pub const HEADER_MAX_CHARS: usize = 1_000;
/// The header gets at most this share of `max_tokens` (but never less than
/// [`HEADER_MIN_TOKENS`]) and is shortened with `…` beyond it, so a long title cannot
/// crowd the window out of its own snapshot.
pub const HEADER_BUDGET_DIVISOR: usize = 4;
/// Tokens a header may always use, whatever the budget's share (a typical header is
/// 15–30 tokens).
pub const HEADER_MIN_TOKENS: usize = 64;

/// What to render and how much of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// Hard ceiling on the whole text (header and footer included), in
    /// [`crate::tokens::count`] tokens. Default [`DEFAULT_MAX_TOKENS`].
    pub max_tokens: usize,
    /// Characters (Unicode scalar values) kept of a long value or name; the rest is
    /// stated as `…(1.2k chars)`. Default [`DEFAULT_MAX_VALUE_CHARS`].
    pub max_value_chars: usize,
    /// Children shown of a list-like element (list, tree, table, menu, tablist,
    /// combobox); then `… K more items, use observe scope=eN`. The children of the
    /// `scope` element itself are never capped. Default [`DEFAULT_MAX_LIST_ITEMS`].
    pub max_list_items: usize,
    /// A ref (`e9`): render only that element's subtree, at depth 0.
    pub scope: Option<String>,
    /// Case-insensitive text filter: keep elements whose (redacted) name or value
    /// contains it, or whose role name equals it, plus their ancestors.
    pub query: Option<String>,
    /// The first line, printed as given (secrets masked, made one-line safe), e.g.
    /// `app mousepad pid=812 · window "Untitled 1" [focused]`. Shortened with `…` to
    /// at most [`HEADER_MAX_CHARS`] chars and a quarter of `max_tokens` (at least
    /// [`HEADER_MIN_TOKENS`]), and further when the budget is tiny.
    pub header: Option<String>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            max_tokens: DEFAULT_MAX_TOKENS,
            max_value_chars: DEFAULT_MAX_VALUE_CHARS,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            scope: None,
            query: None,
            header: None,
        }
    }
}

/// A rendered snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The snapshot text, lines joined by `\n`, no trailing line break.
    pub text: String,
    /// `tokens::count(&text)`; never above `max_tokens`.
    pub tokens: usize,
    /// Element lines printed.
    pub shown: usize,
    /// Elements not printed that a larger budget or `scope=` would show: cut to fit
    /// the budget, beyond a list cap, or reported by the platform but not read.
    /// Pruned (offscreen, zero-size, decorative) and folded elements are not counted.
    pub omitted: usize,
    /// Human notes of what was left out, as in the footer (which may be shortened
    /// when the budget is tiny), e.g. `folded 3 unnamed containers`,
    /// `cut 140 elements to fit 2000 tokens, use observe scope=e9 or query=`.
    pub cut: Vec<String>,
}

/// Renders `root` (normally a window whose refs were assigned by
/// [`crate::refs::RefRegistry`]) as snapshot text within `opts.max_tokens`.
///
/// When `opts.scope` names no element of the tree the text is a single note saying
/// so and nothing is shown.
pub fn render(root: &Node, opts: &RenderOptions) -> Rendered {
    let header = opts
        .header
        .as_deref()
        .map(|h| header_line(h, opts.max_tokens))
        .filter(|h| !h.trim().is_empty());
    let (top, top_parent) = match &opts.scope {
        None => (root, None),
        Some(r) => match view::find_with_parent(root, r) {
            Some(found) => found,
            None => return scope_missing(r, header.as_deref(), opts),
        },
    };
    let query = opts
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_lowercase);
    let mut stats = ViewStats::default();
    let tree = view::build(
        top,
        top_parent,
        &ViewOptions {
            max_list_items: opts.max_list_items,
            query: query.as_deref(),
        },
        &mut stats,
    );

    let mut lines = Vec::new();
    flatten(&tree, None, 0, true, opts, &mut lines);

    let mut notes = Vec::new();
    if let Some(q) = &opts
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        let q = sanitize::one_line(&sanitize::truncate_value(q, opts.max_value_chars));
        notes.push(match stats.matches {
            0 => format!("no element matches \"{q}\""),
            1 => format!("1 element matches \"{q}\""),
            n => format!("{n} elements match \"{q}\""),
        });
    }
    if top.first_child > 0 {
        let first = top.first_child;
        let last = first + top.children.len() as u64;
        let r = top
            .ref_
            .as_deref()
            .map(sanitize::one_line)
            .unwrap_or_default();
        notes.push(format!(
            "children {}–{last} of {}; the first ones: observe scope={r}",
            first + 1,
            top.child_count
        ));
    }
    if stats.folded > 0 {
        notes.push(match stats.folded {
            1 => "folded 1 unnamed container".to_string(),
            n => format!("folded {n} unnamed containers"),
        });
    }
    let budget_tokens = opts.max_tokens;
    let cut_note = |cut: usize, hint: Option<&str>| {
        let what = if cut == 1 { "element" } else { "elements" };
        match hint {
            Some(h) => format!(
                "cut {cut} {what} to fit {budget_tokens} tokens, use observe scope={h} or query="
            ),
            None => format!("cut {cut} {what} to fit {budget_tokens} tokens, use observe query="),
        }
    };
    let footer = |cut: usize, hint: Option<&str>, level: FooterLevel| -> Option<String> {
        match (cut, level) {
            (_, FooterLevel::Off) => None,
            (0, FooterLevel::Full) if !notes.is_empty() => Some(format!("({})", notes.join(" · "))),
            (0, _) => None,
            (_, FooterLevel::Full) => {
                let mut all = notes.clone();
                all.push(cut_note(cut, hint));
                Some(format!("({})", all.join(" · ")))
            }
            (_, FooterLevel::Short) => Some(format!(
                "(cut {cut} {} to fit {budget_tokens} tokens)",
                if cut == 1 { "element" } else { "elements" }
            )),
            (_, FooterLevel::Tiny) => Some(format!("(cut {cut})")),
        }
    };
    let fitted = budget::fit(&lines, header.as_deref(), None, &footer, budget_tokens);
    if fitted.cut > 0 {
        notes.push(cut_note(fitted.cut, fitted.hint.as_deref()));
    }
    let shown = fitted.kept.iter().filter(|&&k| k).count();
    Rendered {
        text: fitted.text,
        tokens: fitted.tokens,
        shown,
        omitted: fitted
            .cut
            .saturating_add(usize::try_from(stats.more).unwrap_or(usize::MAX)),
        cut: notes,
    }
}

fn flatten(
    v: &View<'_>,
    parent: Option<usize>,
    depth: usize,
    is_top: bool,
    opts: &RenderOptions,
    out: &mut Vec<Line>,
) {
    let indent = "  ".repeat(depth);
    let text = format!(
        "{indent}{}",
        view::element_line(
            v.node,
            v.parent,
            !v.children.is_empty(),
            opts.max_value_chars
        )
    );
    let element_ref = v.node.ref_.as_deref().filter(|r| r.starts_with('e'));
    let off = (v.offscreen > 0).then(|| {
        let items = if v.offscreen == 1 { "item" } else { "items" };
        match element_ref {
            Some(r) => format!(
                "… {} {items} off screen, act {} scroll down (or up) to bring them into view",
                v.offscreen,
                sanitize::one_line(r)
            ),
            None => format!("… {} {items} off screen", v.offscreen),
        }
    });
    let glued = (v.more > 0).then(|| {
        let items = if v.more == 1 { "item" } else { "items" };
        match element_ref {
            // The scope itself shows every child read: the rest is the next page.
            Some(r) if is_top => format!(
                "{indent}  … {} more {items}, use observe scope={} from={}",
                v.more,
                sanitize::one_line(r),
                v.node.first_child + v.node.children.len() as u64
            ),
            Some(r) => format!(
                "{indent}  … {} more {items}, use observe scope={}",
                v.more,
                sanitize::one_line(r)
            ),
            None => format!("{indent}  … {} more {items}", v.more),
        }
    });
    let off = match (off, document_note(v.node, element_ref)) {
        (Some(o), Some(d)) => Some(format!("{o}; {d}")),
        (o, d) => o.or(d),
    };
    let glued = match (glued, off) {
        (Some(g), Some(o)) => Some(format!("{g}; {o}")),
        (None, Some(o)) => Some(format!("{indent}  {o}")),
        (g, None) => g,
    };
    let mut quiet = v.children.iter().filter(|c| c.quiet);
    let glued = match (quiet.next(), glued) {
        (None, g) => g,
        (Some(first), g) => {
            let n = 1 + quiet.count();
            let example = sanitize::one_line(&sanitize::truncate_value(
                first.node.name.trim(),
                opts.max_value_chars,
            ));
            let cells = if n == 1 { "cell" } else { "cells" };
            let note = format!(
                "… {n} empty {cells} not listed; find one by its name (\"{example}\") for its ref"
            );
            Some(match g {
                Some(g) => format!("{g}; {note}"),
                None => format!("{indent}  {note}"),
            })
        }
    };
    let me = out.len();
    out.push(Line {
        text,
        glued,
        parent,
        class: view::priority(v, is_top),
        hint: element_ref.filter(|_| !is_top).map(sanitize::one_line),
    });
    for c in v.children.iter().filter(|c| !c.quiet) {
        flatten(c, Some(me), depth + 1, false, opts, out);
    }
}

/// The note under a document whose children are only the part in view
/// ([`crate::node::DocumentView`]): where the rest lies and the two ways to it.
fn document_note(n: &Node, element_ref: Option<&str>) -> Option<String> {
    let d = n.document.as_ref().filter(|d| d.beyond())?;
    let place = match (d.before, d.after) {
        (true, true) => "above and below",
        (true, false) => "above",
        _ => "below",
    };
    Some(match element_ref {
        Some(r) => {
            let r = sanitize::one_line(r);
            let way = if d.after { "down" } else { "up" };
            format!(
                "… more of the document {place} the view, not read: act {r} scroll {way} to bring it into view, or read {r} for the whole text"
            )
        }
        None => format!("… more of the document {place} the view, not read"),
    })
}

/// The header as printed: one line, at most [`HEADER_MAX_CHARS`] chars and its share
/// of the budget.
fn header_line(h: &str, max_tokens: usize) -> String {
    let capped = match sanitize::head_end(h, HEADER_MAX_CHARS) {
        Some(end) => format!("{}…", &h[..end]),
        None => h.to_string(),
    };
    // Window titles are UI text too ("Your code is 493817 - Mail").
    let line = sanitize::plain_line(&redact::mask_secrets(&capped));
    let share = (max_tokens / HEADER_BUDGET_DIVISOR).max(HEADER_MIN_TOKENS);
    budget::shorten_line(&line, share).unwrap_or(line)
}

fn scope_missing(r: &str, header: Option<&str>, opts: &RenderOptions) -> Rendered {
    let budget = opts.max_tokens;
    let note = format!(
        "no element {} in this window; observe without scope to get current refs",
        sanitize::one_line(&sanitize::truncate_value(r, opts.max_value_chars))
    );
    let footer = |_: usize, _: Option<&str>, level: FooterLevel| {
        (level == FooterLevel::Full).then(|| format!("({note})"))
    };
    let fitted = budget::fit(&[], header, None, &footer, budget);
    Rendered {
        text: fitted.text,
        tokens: fitted.tokens,
        shown: 0,
        omitted: 0,
        cut: vec![note],
    }
}

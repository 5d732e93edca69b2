//! What changed in a window between two snapshots (docs/ARCHITECTURE.md §4).
//!
//! Owns the text returned after an action, the main token saver: elements are matched
//! by ref (both trees must have had their refs assigned by the same
//! [`crate::refs::RefRegistry`]), and only elements a snapshot would show are
//! compared, printed exactly as a snapshot prints them:
//!
//! ```text
//! + [e40] menu "File" focused
//! +   [e42] menuitem "Save As…  Shift+Ctrl+S"
//! - [e7] dialog "Save changes?" modal (and 4 inside)
//! ~ [e5] textbox "Body" value "hel" → "hello" · focused → (unfocused)
//! focus: e40
//! ```
//!
//! `+` is an added subtree (indented two spaces per depth below its first line), `-` a
//! removed subtree in one line, `~` a changed element (name, value, states, table
//! range; states in arrow form, a lost state shown as its opposite in parentheses;
//! `moved under e9` when its parent changed).
//! `focus:` closes the text when focus moved. Values go through [`crate::redact`] like
//! in a snapshot; the text never exceeds `max_tokens` and says what it cut.

use std::borrow::Cow;
use std::collections::HashMap;

use unicode_segmentation::UnicodeSegmentation as _;

use crate::budget::{self, FooterLevel, Line};
use crate::node::Node;
use crate::redact;
use crate::render::{DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_TOKENS, DEFAULT_MAX_VALUE_CHARS};
use crate::sanitize;
use crate::state::State;
use crate::view::{self, View, ViewOptions, ViewStats};

/// Characters of unchanged text shown before an edit inside a long value.
const EDIT_CONTEXT_CHARS: usize = 20;

/// How much diff to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffOptions {
    /// Hard ceiling on the text, in [`crate::tokens::count`] tokens. Default 2,000.
    pub max_tokens: usize,
    /// Characters kept of a long name or value. Default 120.
    pub max_value_chars: usize,
    /// Children listed of a list-like element inside an added subtree. Default 20.
    pub max_list_items: usize,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            max_tokens: DEFAULT_MAX_TOKENS,
            max_value_chars: DEFAULT_MAX_VALUE_CHARS,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
        }
    }
}

/// The changes between two snapshots of one window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    /// Change lines joined by `\n`; empty when nothing changed.
    pub text: String,
    /// `tokens::count(&text)`, never above `max_tokens`.
    pub tokens: usize,
    /// Shown elements that are new (whether printed or cut for the budget).
    pub added: usize,
    /// Shown elements that are gone.
    pub removed: usize,
    /// Elements in both whose shown name, value, states or table range differ, or
    /// whose parent changed.
    pub changed: usize,
    /// The ref of the newly focused element, when focus moved to one.
    pub focus: Option<String>,
}

impl Diff {
    /// True when nothing a snapshot shows changed.
    pub fn is_empty(&self) -> bool {
        self.added == 0 && self.removed == 0 && self.changed == 0 && self.text.is_empty()
    }
}

/// One shown element in pre-order.
struct Flat<'v, 'a> {
    v: &'v View<'a>,
    parent: Option<usize>,
    /// Its ref and how many earlier elements of the same tree carry the same ref
    /// (0 normally; refs repeat only in trees not assigned by one registry).
    key: Option<Key<'a>>,
}

/// What matches an element across the two trees.
type Key<'a> = (&'a str, usize);

fn flatten<'v, 'a>(v: &'v View<'a>, parent: Option<usize>, out: &mut Vec<Flat<'v, 'a>>) {
    out.push(Flat {
        v,
        parent,
        key: None,
    });
    let me = out.len() - 1;
    for c in &v.children {
        flatten(c, Some(me), out);
    }
}

/// Numbers repeated refs by occurrence and maps each key to its element.
fn index_keys<'a>(flat: &mut [Flat<'_, 'a>]) -> HashMap<Key<'a>, usize> {
    let mut seen: HashMap<&'a str, usize> = HashMap::new();
    let mut m = HashMap::with_capacity(flat.len());
    for (i, f) in flat.iter_mut().enumerate() {
        if let Some(r) = f.v.node.ref_.as_deref() {
            let n = seen.entry(r).or_default();
            f.key = Some((r, *n));
            *n += 1;
            m.insert((r, f.key.expect("just set").1), i);
        }
    }
    m
}

/// Keys of the shown elements by the address of their view, for walking subtrees.
fn keys_by_view<'a>(flat: &[Flat<'_, 'a>]) -> HashMap<usize, Key<'a>> {
    flat.iter()
        .filter_map(|f| f.key.map(|k| (std::ptr::from_ref(f.v) as usize, k)))
        .collect()
}

/// The ref of the last focused element in pre-order.
fn focused_ref<'a>(flat: &[Flat<'_, 'a>]) -> Option<&'a str> {
    flat.iter()
        .rev()
        .find(|f| f.v.node.has(State::Focused))
        .and_then(|f| f.v.node.ref_.as_deref())
}

/// The opposite of a state word, for a state that was lost.
fn opposite(word: &str) -> &'static str {
    match word {
        "focused" => "unfocused",
        "checked" => "unchecked",
        "selected" => "unselected",
        "disabled" => "enabled",
        "editable" => "read-only",
        "modal" => "not modal",
        "busy" => "idle",
        "password" => "not password",
        "multiselectable" => "single-select",
        "▾" => "not expanded",
        "▸" => "not collapsed",
        _ => "changed",
    }
}

fn states_clause(before: &[&str], after: &[&str]) -> Option<String> {
    let lost: Vec<&str> = before
        .iter()
        .copied()
        .filter(|w| !after.contains(w))
        .collect();
    let gained: Vec<&str> = after
        .iter()
        .copied()
        .filter(|w| !before.contains(w))
        .collect();
    let side = |mine: &[&str], other: &[&str]| {
        if mine.is_empty() {
            other
                .iter()
                .map(|w| format!("({})", opposite(w)))
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            mine.join(" ")
        }
    };
    match (lost.is_empty(), gained.is_empty()) {
        (true, true) => None,
        _ => Some(format!(
            "{} → {}",
            side(&lost, &gained),
            side(&gained, &lost)
        )),
    }
}

/// Cells of one table selected or unselected together from this many on are said as
/// one line with their range (a spreadsheet's select-all changes hundreds).
pub const SELECTION_SUMMARY_MIN: usize = 3;

/// A cell before and after a change.
type CellChange<'v, 'a> = (&'v View<'a>, &'v View<'a>);

/// `Some(now selected)` when the only change from `b` to `a` that their lines
/// show is the selected state (a cell's `editable` that its table also lost is not
/// on its line, so it is not a change of the cell's).
fn selection_only(bv: &View<'_>, av: &View<'_>) -> Option<bool> {
    let (b, a) = (bv.node, av.node);
    let (was, now) = (b.has(State::Selected), a.has(State::Selected));
    let words = |v: &View<'_>| -> Vec<&'static str> {
        view::state_words(v.node, v.parent, !v.children.is_empty())
            .into_iter()
            .filter(|w| *w != "selected")
            .collect()
    };
    (was != now
        && words(bv) == words(av)
        && b.role == a.role
        && b.name == a.name
        && b.value == a.value
        && b.value_length == a.value_length
        && b.children.len() == a.children.len())
    .then_some(now)
}

/// One line for many cells of `table` selected (`now`) or unselected together:
/// `~ [e5] table "Sheet1" 480 cells (unselected) → selected: A1:L40`, with the
/// bounding range when every cell has an A1 name (and `N cells in` when they do not
/// fill it).
fn selection_line(table: &Node, now: bool, cells: &[CellChange<'_, '_>]) -> String {
    let mut line = String::from("~ ");
    if let Some(r) = &table.ref_ {
        line.push_str(&format!("[{}] ", sanitize::one_line(r)));
    }
    line.push_str(table.role.as_str());
    if let Some(n) = view::shown_name(table, DEFAULT_MAX_VALUE_CHARS) {
        line.push_str(&format!(" \"{n}\""));
    }
    let n = cells.len();
    let change = if now {
        "(unselected) → selected"
    } else {
        "selected → (unselected)"
    };
    line.push_str(&format!(" {n} cells {change}"));
    if let Some(span) = view::cell_span(cells.iter().map(|(_, a)| a.node.name.as_str())) {
        line.push_str(&format!(": {span}"));
    }
    line
}

/// `value "old" → "new"`, or for an edit inside a long value an excerpt from a little
/// (20 grapheme clusters) before the first difference, with exact lengths:
/// `value "…lazy dog. " → "…lazy dog. Hello" (5000 → 5005 chars)`.
fn value_clause(
    before: (&Node, Option<&Node>),
    after: (&Node, Option<&Node>),
    max_chars: usize,
) -> Option<String> {
    let b = redact::redacted_value(before.0, before.1);
    let a = redact::redacted_value(after.0, after.1);
    let protected = redact::is_secret_field(before.0) || redact::is_secret_field(after.0);
    let (lb, la) = (redact::full_length(before.0), redact::full_length(after.0));
    if b == a {
        // Same text read; a longer original beyond the head read can still differ.
        return (!protected && lb != la).then(|| format!("value length {lb} → {la} chars"));
    }
    let b = b.unwrap_or(Cow::Borrowed(""));
    let a = a.unwrap_or(Cow::Borrowed(""));
    if b == a {
        // No value and an empty one render alike: no change to report.
        return (!protected && lb != la).then(|| format!("value length {lb} → {la} chars"));
    }
    let bd = redact::cut_redacted(before.0, &b, max_chars);
    let ad = redact::cut_redacted(after.0, &a, max_chars);
    if bd != ad {
        return Some(format!("value \"{bd}\" → \"{ad}\""));
    }
    // Same head: show where they differ, in whole grapheme clusters.
    let bc: Vec<&str> = b.graphemes(true).collect();
    let ac: Vec<&str> = a.graphemes(true).collect();
    let prefix = bc.iter().zip(&ac).take_while(|(x, y)| x == y).count();
    let max_suffix = bc.len().min(ac.len()) - prefix;
    let suffix = bc
        .iter()
        .rev()
        .zip(ac.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let start = prefix.saturating_sub(EDIT_CONTEXT_CHARS);
    let excerpt = |gs: &[&str]| {
        let mid: String = gs[start..gs.len() - suffix].concat();
        let lead = if start > 0 { "…" } else { "" };
        let tail = if suffix > 0 { "…" } else { "" };
        format!(
            "{lead}{}{tail}",
            sanitize::one_line(&sanitize::truncate_value(&mid, max_chars))
        )
    };
    let (eb, ea) = (excerpt(&bc), excerpt(&ac));
    if eb == ea && lb == la {
        // The difference does not show once escaped and cut: not a rendered change.
        return None;
    }
    Some(format!("value \"{eb}\" → \"{ea}\" ({lb} → {la} chars)"))
}

/// The `~` line for an element present in both trees, if anything shown changed.
/// `moved_under` is the ref of the element's new parent when its parent changed.
fn change_line(
    b: &View<'_>,
    a: &View<'_>,
    moved_under: Option<&str>,
    max_chars: usize,
) -> Option<String> {
    let (bn, an) = (b.node, a.node);
    let untouched = bn.role == an.role
        && bn.name == an.name
        && bn.value == an.value
        && bn.value_length == an.value_length
        && bn.states == an.states
        && bn.table == an.table
        && bn.child_count == an.child_count
        && b.children.is_empty() == a.children.is_empty();
    if untouched && moved_under.is_none() {
        // Nothing the line is made of changed (the common case): skip the redaction.
        // A value whose masking changed only because a label near it did is the same
        // value, and the snapshot shows it masked.
        return None;
    }
    let mut clauses = Vec::new();
    if b.node.role != a.node.role {
        clauses.push(format!("role {} → {}", b.node.role, a.node.role));
    }
    let bn = view::shown_name(b.node, max_chars);
    let an = view::shown_name(a.node, max_chars);
    if bn != an {
        clauses.push(format!(
            "name \"{}\" → \"{}\"",
            bn.as_deref().unwrap_or(""),
            an.as_deref().unwrap_or("")
        ));
    }
    if let Some(c) = value_clause((b.node, b.parent), (a.node, a.parent), max_chars) {
        clauses.push(c);
    }
    if b.node.table != a.node.table {
        let marker = |v: &View<'_>| {
            v.node
                .table
                .as_ref()
                .map_or_else(|| "(no table)".to_string(), view::table_marker)
        };
        clauses.push(format!("{} → {}", marker(b), marker(a)));
    }
    let bs = view::state_words(b.node, b.parent, !b.children.is_empty());
    let as_ = view::state_words(a.node, a.parent, !a.children.is_empty());
    if let Some(c) = states_clause(&bs, &as_) {
        clauses.push(c);
    }
    if let Some(p) = moved_under {
        clauses.push(format!("moved under {}", sanitize::one_line(p)));
    }
    if clauses.is_empty() {
        return None;
    }
    let mut line = String::from("~ ");
    if let Some(r) = &a.node.ref_ {
        line.push_str(&format!("[{}] ", sanitize::one_line(r)));
    }
    line.push_str(a.node.role.as_str());
    if bn == an
        && let Some(n) = an
    {
        line.push_str(&format!(" \"{n}\""));
    }
    line.push(' ');
    line.push_str(&clauses.join(" · "));
    Some(line)
}

/// Context for emitting added subtrees.
struct Adds<'m, 'a> {
    before: &'m HashMap<Key<'a>, usize>,
    keys: &'m HashMap<usize, Key<'a>>,
    opts: &'m DiffOptions,
}

impl Adds<'_, '_> {
    /// True for an element new in this tree. An empty spreadsheet cell
    /// ([`View::quiet`]) is never: a snapshot does not list it, and scrolling a sheet
    /// brings in hundreds.
    fn is_added(&self, v: &View<'_>) -> bool {
        !v.quiet
            && self
                .keys
                .get(&(std::ptr::from_ref(v) as usize))
                .is_some_and(|k| !self.before.contains_key(k))
    }

    /// Emits `v` (added) and its added descendants; returns how many elements.
    fn emit(
        &self,
        v: &View<'_>,
        depth: usize,
        parent: Option<usize>,
        lines: &mut Vec<Line>,
    ) -> usize {
        let indent = "  ".repeat(depth);
        let me = lines.len();
        lines.push(Line {
            text: format!(
                "+ {indent}{}",
                view::element_line(
                    v.node,
                    v.parent,
                    !v.children.is_empty(),
                    self.opts.max_value_chars
                )
            ),
            glued: None,
            parent,
            class: if depth == 0 {
                0
            } else {
                view::priority(v, false)
            },
            hint: None,
        });
        let mut count = 1;
        let cap = if v.node.role.is_list_like() {
            self.opts.max_list_items
        } else {
            usize::MAX
        };
        let mut listed = 0;
        let mut more = v.more;
        for c in v.children.iter().filter(|c| self.is_added(c)) {
            if listed < cap || c.focus {
                listed += 1;
                count += self.emit(c, depth + 1, Some(me), lines);
            } else {
                more += 1;
                count += count_added(c, self);
            }
        }
        if more > 0 {
            let items = if more == 1 { "item" } else { "items" };
            lines[me].glued = Some(match v.node.ref_.as_deref() {
                Some(r) => format!(
                    "+ {indent}  … {more} more {items}, use observe scope={}",
                    sanitize::one_line(r)
                ),
                None => format!("+ {indent}  … {more} more {items}"),
            });
        }
        count
    }
}

fn count_added(v: &View<'_>, adds: &Adds<'_, '_>) -> usize {
    1 + v
        .children
        .iter()
        .filter(|c| adds.is_added(c))
        .map(|c| count_added(c, adds))
        .sum::<usize>()
}

fn count_removed(v: &View<'_>, adds: &Adds<'_, '_>) -> usize {
    v.children
        .iter()
        .filter(|c| adds.is_added(c))
        .map(|c| 1 + count_removed(c, adds))
        .sum()
}

/// Compares two snapshots of one window whose refs come from the same registry.
///
/// Elements are matched by ref; elements without a ref are not compared (they are
/// neither added, removed nor changed). Trees whose refs come from different
/// registries (or were set by hand) are compared the same way, so elements that
/// happen to share a ref string are taken for one element: the result does not
/// panic and stays within the budget, but says little. A ref that occurs several
/// times in one tree is matched by occurrence. `diff(a, a)` is empty.
pub fn diff(before: &Node, after: &Node, opts: &DiffOptions) -> Diff {
    let vopts = ViewOptions {
        max_list_items: usize::MAX,
        query: None,
    };
    let vb = view::build(before, None, &vopts, &mut ViewStats::default());
    let va = view::build(after, None, &vopts, &mut ViewStats::default());
    let mut fb = Vec::new();
    flatten(&vb, None, &mut fb);
    let mut fa = Vec::new();
    flatten(&va, None, &mut fa);
    let mb = index_keys(&mut fb);
    let ma = index_keys(&mut fa);
    let keys_a = keys_by_view(&fa);
    let keys_b = keys_by_view(&fb);

    let adds = Adds {
        before: &mb,
        keys: &keys_a,
        opts,
    };
    // The same question the other way round: elements of `before` gone from `after`.
    let gone = Adds {
        before: &ma,
        keys: &keys_b,
        opts,
    };
    let mut lines: Vec<Line> = Vec::new();
    let mut added = 0;
    for f in &fa {
        let root_of_added = adds.is_added(f.v) && f.parent.is_none_or(|p| !adds.is_added(fa[p].v));
        if root_of_added {
            added += adds.emit(f.v, 0, None, &mut lines);
        }
    }

    let mut removed = 0;
    for f in &fb {
        if gone.is_added(f.v) && f.parent.is_none_or(|p| !gone.is_added(fb[p].v)) {
            let inside = count_removed(f.v, &gone);
            removed += 1 + inside;
            let mut text = format!(
                "- {}",
                view::element_line(
                    f.v.node,
                    f.v.parent,
                    !f.v.children.is_empty(),
                    opts.max_value_chars
                )
            );
            if inside > 0 {
                text.push_str(&format!(" (and {inside} inside)"));
            }
            lines.push(Line {
                text,
                glued: None,
                parent: None,
                class: 0,
                hint: None,
            });
        }
    }

    let mut changed = 0;
    // Cells of one table whose only change is being selected (or unselected), kept
    // aside to be said as one range: `(table index in fa, now selected)` → cells.
    let mut selections: Vec<((usize, bool), Vec<CellChange<'_, '_>>)> = Vec::new();
    for f in &fa {
        let Some(k) = f.key else { continue };
        let Some(&bi) = mb.get(&k) else { continue };
        let pb = fb[bi].parent.and_then(|p| fb[p].key);
        let pa = f.parent.and_then(|p| fa[p].key);
        let moved_under = match (pb, pa) {
            (Some(pb), Some(pa)) if pb != pa => Some(pa.0),
            _ => None,
        };
        if moved_under.is_none()
            && let Some(p) = f
                .parent
                .filter(|&p| fa[p].v.node.role == crate::Role::Table)
            && let Some(now) = selection_only(fb[bi].v, f.v)
        {
            match selections.iter_mut().find(|(key, _)| *key == (p, now)) {
                Some((_, cells)) => cells.push((fb[bi].v, f.v)),
                None => selections.push(((p, now), vec![(fb[bi].v, f.v)])),
            }
            continue;
        }
        // An empty cell that stays empty changes nothing a snapshot lists: its
        // states follow its table's (a sheet leaving edit mode changes hundreds).
        if fb[bi].v.quiet && f.v.quiet && moved_under.is_none() {
            continue;
        }
        if let Some(text) = change_line(fb[bi].v, f.v, moved_under, opts.max_value_chars) {
            changed += 1;
            lines.push(Line {
                text,
                glued: None,
                parent: None,
                class: 0,
                hint: None,
            });
        }
    }
    for ((table, now), cells) in selections {
        let texts: Vec<String> = if cells.len() >= SELECTION_SUMMARY_MIN {
            vec![selection_line(fa[table].v.node, now, &cells)]
        } else {
            cells
                .iter()
                .filter_map(|(b, a)| change_line(b, a, None, opts.max_value_chars))
                .collect()
        };
        for text in texts {
            changed += 1;
            lines.push(Line {
                text,
                glued: None,
                parent: None,
                class: 0,
                hint: None,
            });
        }
    }

    let focus_before = focused_ref(&fb);
    let focus_after = focused_ref(&fa);
    let moved = focus_before != focus_after;
    let tail = moved.then(|| match focus_after {
        Some(r) => format!("focus: {}", sanitize::one_line(r)),
        None => "focus: (none)".to_string(),
    });

    let budget_tokens = opts.max_tokens;
    let footer = |cut: usize, _: Option<&str>, level: FooterLevel| -> Option<String> {
        let what = if cut == 1 { "line" } else { "lines" };
        match (cut, level) {
            (0, _) | (_, FooterLevel::Off) => None,
            (_, FooterLevel::Full) => Some(format!(
                "(cut {cut} {what} to fit {budget_tokens} tokens, use observe)"
            )),
            (_, FooterLevel::Short) => Some(format!("(cut {cut} {what})")),
            (_, FooterLevel::Tiny) => Some("(cut)".to_string()),
        }
    };
    let fitted = budget::fit(&lines, None, tail.as_deref(), &footer, budget_tokens);
    Diff {
        text: fitted.text,
        tokens: fitted.tokens,
        added,
        removed,
        changed,
        focus: if moved {
            focus_after.map(str::to_string)
        } else {
            None
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_clauses() {
        assert_eq!(
            states_clause(&["editable", "focused"], &["editable"]).as_deref(),
            Some("focused → (unfocused)")
        );
        assert_eq!(
            states_clause(&[], &["checked"]).as_deref(),
            Some("(unchecked) → checked")
        );
        assert_eq!(states_clause(&["▸"], &["▾"]).as_deref(), Some("▸ → ▾"));
        assert_eq!(states_clause(&["focused"], &["focused"]), None);
    }

    #[test]
    fn no_value_and_an_empty_value_are_no_change() {
        let before = Node::new("h:t", crate::Role::Textbox, "Name");
        let mut after = before.clone();
        after.value = Some(String::new());
        assert_eq!(value_clause((&before, None), (&after, None), 80), None);
        assert_eq!(value_clause((&after, None), (&before, None), 80), None);
        after.value = Some("x".into());
        assert_eq!(
            value_clause((&before, None), (&after, None), 80).as_deref(),
            Some("value \"\" → \"x\"")
        );
    }

    #[test]
    fn cells_selected_together_are_one_range() {
        use crate::refs::RefRegistry;
        let cell = |name: &str, selected: bool| {
            let mut c = Node::new(format!("h:{name}"), crate::Role::Cell, name);
            if selected {
                c.states.insert(State::Selected);
            }
            c
        };
        let sheet = |selected: bool| {
            let mut cells = Vec::new();
            for r in 1..=3 {
                for c in ["A", "B"] {
                    cells.push(cell(&format!("{c}{r}"), selected));
                }
            }
            Node::new("h:w", crate::Role::Window, "Calc").children(vec![
                Node::new("h:t", crate::Role::Table, "Sheet1").children(cells),
            ])
        };
        let mut refs = RefRegistry::default();
        let mut before = sheet(false);
        refs.assign(&mut before);
        let mut after = sheet(true);
        refs.assign(&mut after);
        let d = diff(&before, &after, &DiffOptions::default());
        assert_eq!(
            d.text,
            "~ [e1] table \"Sheet1\" 6 cells (unselected) → selected: A1:B3"
        );
        assert_eq!(d.changed, 1);
    }
}

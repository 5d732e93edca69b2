//! The visible tree and the text of one element line, shared by render and diff.
//!
//! Owns the prune rules (offscreen, zero-size, decorative, password-field internals),
//! the folding of unnamed single-child containers, list capping, the query filter and
//! the `[e5] role "name" value="…" states` line format. Render and diff both go
//! through here, so a diff never mentions an element a snapshot would not show, and
//! both print an element the same way. Never shows a value except through
//! [`crate::redact`].

use std::fmt::Write as _;

use crate::node::{Node, TableInfo};
use crate::redact;
use crate::role::Role;
use crate::sanitize;
use crate::state::State;

/// One element that survives pruning, with the children that survive under it.
#[derive(Debug)]
pub(crate) struct View<'a> {
    pub node: &'a Node,
    /// The node's parent in the tree it was read in (context for redaction); `None`
    /// for the tree's root.
    pub parent: Option<&'a Node>,
    pub children: Vec<View<'a>>,
    /// Children not shown: beyond the list cap, or reported but never read.
    pub more: u64,
    /// This element is focused or has a focused descendant.
    pub focus: bool,
}

/// How to build a [`View`].
pub(crate) struct ViewOptions<'q> {
    /// Children of a list-like element beyond this many are counted, not shown.
    /// `usize::MAX` disables capping.
    pub max_list_items: usize,
    /// Lowercased query; keeps matching elements and their ancestors only.
    pub query: Option<&'q str>,
}

/// What building a view left out.
#[derive(Debug, Default)]
pub(crate) struct ViewStats {
    /// Unnamed single-child containers replaced by their child.
    pub folded: usize,
    /// Children hidden by list caps plus children reported but never read.
    pub more: u64,
    /// Elements that matched the query.
    pub matches: usize,
}

/// True when the element is not on screen: offscreen, or laid out with no area.
pub(crate) fn is_hidden(n: &Node) -> bool {
    n.has(State::Offscreen) || n.bounds.is_some_and(|b| b.is_empty())
}

/// A name that shows nothing once invisible characters are dropped.
pub(crate) fn is_unnamed(n: &Node) -> bool {
    n.name
        .chars()
        .all(|c| c.is_whitespace() || sanitize::is_invisible(c))
}

fn has_value(n: &Node) -> bool {
    n.value.as_deref().is_some_and(|v| !v.is_empty())
}

/// States that make an element worth a line even with no name and no children.
fn has_meaningful_state(n: &Node) -> bool {
    [
        State::Focused,
        State::Checked,
        State::Selected,
        State::Expanded,
        State::Collapsed,
        State::Editable,
        State::Modal,
        State::Busy,
    ]
    .into_iter()
    .any(|s| n.has(s))
}

/// Roles and actions a user operates directly.
pub(crate) fn is_interactive(n: &Node) -> bool {
    n.role.is_interactive() || !n.actions.is_empty()
}

/// A childless element that carries nothing: a separator, or an unnamed,
/// value-less, non-interactive element with no notable state.
fn is_decorative_leaf(n: &Node) -> bool {
    n.role == Role::Separator
        || (is_unnamed(n)
            && !has_value(n)
            && !is_interactive(n)
            && n.table.is_none()
            && !has_meaningful_state(n))
}

/// An unnamed, value-less, non-interactive container (group, section, paragraph,
/// unknown, application) that may be replaced by its only child.
fn is_foldable(n: &Node) -> bool {
    n.role.is_container()
        && is_unnamed(n)
        && !has_value(n)
        && !is_interactive(n)
        && n.table.is_none()
        && !has_meaningful_state(n)
        && n.child_count <= n.children.len() as u64
}

fn matches_query(n: &Node, parent: Option<&Node>, q: &str) -> bool {
    if n.role.as_str() == q {
        return true;
    }
    if redact::mask_secrets(&n.name).to_lowercase().contains(q) {
        return true;
    }
    redact::redacted_value(n, parent).is_some_and(|v| v.to_lowercase().contains(q))
}

/// Builds the visible tree under `root`. The root itself is always kept (never
/// pruned or folded) and its own children are never capped: it is what the caller
/// asked to see.
pub(crate) fn build<'a>(
    root: &'a Node,
    root_parent: Option<&'a Node>,
    opts: &ViewOptions<'_>,
    stats: &mut ViewStats,
) -> View<'a> {
    let children = build_children(root, opts, stats);
    let focus = root.has(State::Focused) || children.iter().any(|c| c.focus);
    if let Some(q) = opts.query
        && matches_query(root, root_parent, q)
    {
        stats.matches += 1;
    }
    let more = unread(root);
    stats.more += more;
    View {
        node: root,
        parent: root_parent,
        children,
        more,
        focus,
    }
}

fn unread(n: &Node) -> u64 {
    if n.table.is_some() || n.has(State::Password) {
        0
    } else {
        n.child_count.saturating_sub(n.children.len() as u64)
    }
}

fn build_children<'a>(n: &'a Node, opts: &ViewOptions<'_>, stats: &mut ViewStats) -> Vec<View<'a>> {
    if n.has(State::Password) {
        // Whatever a password field contains (text runs, a caret object) is its secret.
        return Vec::new();
    }
    n.children
        .iter()
        .filter_map(|c| build_node(c, n, opts, stats))
        .collect()
}

fn build_node<'a>(
    n: &'a Node,
    parent: &'a Node,
    opts: &ViewOptions<'_>,
    stats: &mut ViewStats,
) -> Option<View<'a>> {
    if is_hidden(n) && !n.walk().any(|d| d.has(State::Focused)) {
        return None;
    }
    let mut children = build_children(n, opts, stats);
    let focused = n.has(State::Focused);
    let focus = focused || children.iter().any(|c| c.focus);
    let matched = opts
        .query
        .is_some_and(|q| matches_query(n, Some(parent), q));
    if matched {
        stats.matches += 1;
    }
    if opts.query.is_some() && !matched && children.is_empty() {
        return None;
    }
    if children.is_empty() && !focus && unread(n) == 0 && is_decorative_leaf(n) {
        return None;
    }
    if children.len() == 1 && !focused && !matched && is_foldable(n) {
        stats.folded += 1;
        // The child stands where the container stood; its redaction context stays
        // its real parent.
        return children.pop();
    }
    let mut more = unread(n);
    if n.role.is_list_like() && children.len() > opts.max_list_items {
        let mut kept = Vec::with_capacity(opts.max_list_items + 1);
        for (i, c) in children.into_iter().enumerate() {
            if i < opts.max_list_items || c.focus {
                kept.push(c);
            } else {
                more += 1;
            }
        }
        children = kept;
    }
    stats.more += more;
    Some(View {
        node: n,
        parent: Some(parent),
        children,
        more,
        focus,
    })
}

/// Budget priority of an element's line (0 is kept first): 0 the focus path and the
/// top element, 1 interactive, 2 named text (or a value), 3 containers and the rest.
pub(crate) fn priority(v: &View<'_>, is_top: bool) -> u8 {
    if is_top || v.focus {
        0
    } else if is_interactive(v.node) {
        1
    } else if !is_unnamed(v.node) || has_value(v.node) {
        2
    } else {
        3
    }
}

/// Spreadsheet column name of a 0-based index: 0 → `A`, 25 → `Z`, 26 → `AA`.
fn column_name(mut i: u64) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'A' + (i % 26) as u8);
        if i < 26 {
            break;
        }
        i = i / 26 - 1;
    }
    s.reverse();
    String::from_utf8(s).expect("ASCII letters")
}

/// `1048576×16384, showing A1:K40` (or `showing rows 1-40, columns 1-11`).
pub(crate) fn table_marker(t: &TableInfo) -> String {
    let mut s = format!("{}×{}", t.rows, t.columns);
    match (t.visible_rows, t.visible_columns, t.a1) {
        (Some((r0, r1)), Some((c0, c1)), true) => {
            let _ = write!(
                s,
                ", showing {}{}:{}{}",
                column_name(c0),
                r0 + 1,
                column_name(c1),
                r1 + 1
            );
        }
        (rows, cols, _) => {
            let mut parts = Vec::new();
            if let Some((r0, r1)) = rows {
                parts.push(format!("rows {}-{}", r0 + 1, r1 + 1));
            }
            if let Some((c0, c1)) = cols {
                parts.push(format!("columns {}-{}", c0 + 1, c1 + 1));
            }
            if !parts.is_empty() {
                let _ = write!(s, ", showing {}", parts.join(", "));
            }
        }
    }
    s
}

/// The state words of a line, in display order. `shows_children` tells whether any
/// child of the element is on display: a menu item with a hidden submenu gets `▸`.
/// Offscreen, focusable and manages-descendants are never shown.
pub(crate) fn state_words(n: &Node, shows_children: bool) -> Vec<&'static str> {
    const ORDER: [(State, &str); 9] = [
        (State::Modal, "modal"),
        (State::Disabled, "disabled"),
        (State::Checked, "checked"),
        (State::Selected, "selected"),
        (State::Editable, "editable"),
        (State::Password, "password"),
        (State::Busy, "busy"),
        (State::Multiselectable, "multiselectable"),
        (State::Focused, "focused"),
    ];
    let mut words: Vec<&'static str> = ORDER
        .iter()
        .filter(|(s, _)| n.has(*s))
        .map(|(_, w)| *w)
        .collect();
    let hidden_submenu = matches!(n.role, Role::Menuitem | Role::Menu)
        && n.child_count > 0
        && !shows_children
        && !n.has(State::Password);
    if n.has(State::Expanded) {
        words.push("▾");
    } else if n.has(State::Collapsed) || hidden_submenu {
        words.push("▸");
    }
    words
}

/// The shown name and value of an element (each already redacted, cut and escaped).
pub(crate) fn shown_name(n: &Node, max_chars: usize) -> Option<String> {
    (!is_unnamed(n))
        .then(|| redact::display_name(&n.name, max_chars))
        .filter(|s| !s.is_empty())
}

pub(crate) fn shown_value(n: &Node, parent: Option<&Node>, max_chars: usize) -> Option<String> {
    let v = redact::display_value(n, parent, max_chars)?;
    // A value equal to the name (list items often repeat it) says nothing new.
    if v.is_empty() || (n.value.as_deref() == Some(n.name.as_str()) && !n.has(State::Password)) {
        return None;
    }
    Some(v)
}

/// The text of one element line without indentation:
/// `[e5] textbox "Body" value="hello wor…(1.2k chars)" editable focused`.
pub(crate) fn element_line(
    n: &Node,
    parent: Option<&Node>,
    shows_children: bool,
    max_chars: usize,
) -> String {
    let mut s = String::with_capacity(48);
    if let Some(r) = &n.ref_ {
        let _ = write!(s, "[{}] ", sanitize::one_line(r));
    }
    s.push_str(n.role.as_str());
    if let Some(name) = shown_name(n, max_chars) {
        let _ = write!(s, " \"{name}\"");
    }
    if let Some(t) = &n.table {
        s.push(' ');
        s.push_str(&table_marker(t));
    }
    if let Some(v) = shown_value(n, parent, max_chars) {
        let _ = write!(s, " value=\"{v}\"");
    }
    for w in state_words(n, shows_children) {
        s.push(' ');
        s.push_str(w);
    }
    s
}

/// Finds the element with ref `r` under `root`, with its parent. The inside of a
/// password field is never searched: nothing there may be shown.
pub(crate) fn find_with_parent<'a>(
    root: &'a Node,
    r: &str,
) -> Option<(&'a Node, Option<&'a Node>)> {
    let mut stack: Vec<(&Node, Option<&Node>)> = vec![(root, None)];
    while let Some((n, p)) = stack.pop() {
        if n.ref_.as_deref() == Some(r) {
            return Some((n, p));
        }
        if !n.has(State::Password) {
            stack.extend(n.children.iter().rev().map(|c| (c, Some(n))));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(10), "K");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(701), "ZZ");
        assert_eq!(column_name(702), "AAA");
        assert_eq!(column_name(16_383), "XFD");
    }

    #[test]
    fn table_markers() {
        let t = TableInfo {
            rows: 1_048_576,
            columns: 16_384,
            visible_rows: Some((0, 39)),
            visible_columns: Some((0, 10)),
            a1: true,
        };
        assert_eq!(table_marker(&t), "1048576×16384, showing A1:K40");
        let t = TableInfo { a1: false, ..t };
        assert_eq!(
            table_marker(&t),
            "1048576×16384, showing rows 1-40, columns 1-11"
        );
        let t = TableInfo {
            visible_rows: None,
            visible_columns: None,
            ..t
        };
        assert_eq!(table_marker(&t), "1048576×16384");
    }
}

//! The visible tree and the text of one element line, shared by render and diff.
//!
//! Owns the prune rules (offscreen, zero-size, decorative, secret-field internals),
//! the depth limit ([`MAX_DEPTH`], which also bounds the recursion here and in the
//! render and diff walks over a view), the folding of unnamed single-child containers,
//! list capping, the query filter and the `[e5] role "name" value="…" states` line
//! format. Render and diff both go through here, so a diff never mentions an element a
//! snapshot would not show, and both print an element the same way. Never shows a
//! name or value except through [`crate::redact`]. Work is linear in the number of
//! elements read.

use std::collections::{HashMap, HashSet};
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
    /// Children of a list-like element read but off screen (left out as every
    /// hidden element is, and counted here so the list says so).
    pub offscreen: u64,
    /// This element is focused or has a focused descendant.
    pub focus: bool,
    /// An empty cell of a spreadsheet ([`is_empty_cell`]): in the view, so a diff
    /// sees it change, but not printed; its table's line counts such cells.
    pub quiet: bool,
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
    n.value.as_deref().is_some_and(|v| !v.is_empty()) && !value_is_noise(n)
}

/// A value that is not the element's content: a number that parses to zero on a
/// role whose content is its name or state. LibreOffice gives every toolbar item and
/// toolbar group an AT-SPI Value of 0 (measured on Calc 7.4: 80 of its 85 toolbar
/// lines said `value="0"`); a toggle's state is its `checked` word. Such a value is
/// never printed on a line; a diff still reports it changing.
fn value_is_noise(n: &Node) -> bool {
    matches!(
        n.role,
        Role::Button
            | Role::Menuitem
            | Role::Group
            | Role::Toolbar
            | Role::Tab
            | Role::Link
            | Role::Checkbox
            | Role::Radio
    ) && n
        .value
        .as_deref()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .is_some_and(|x| x == 0.0)
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

/// A plain label or text leaf that says exactly its parent's name (`button "7"`
/// over `label "7"`, possibly through unnamed containers that fold away): the
/// parent's line already says it, so it is not printed. It still exists for find
/// and refs.
fn echoes_parent(n: &Node, parent: &Node) -> bool {
    // Its own actions do not count: GTK 4 gives every label clipboard and
    // selection actions.
    if !matches!(n.role, Role::Label | Role::Text) || has_meaningful_state(n) {
        return false;
    }
    let parent_name = parent.name.trim();
    if is_unnamed(n) {
        // A fieldset's legend, which Chromium exposes as an unnamed label whose
        // value is the group's name.
        !parent_name.is_empty()
            && !redact::is_secret_field(n)
            && n.value.as_deref().map(str::trim) == Some(parent_name)
    } else {
        !has_value(n) && n.name.trim() == parent_name
    }
}

/// A plain label or text leaf that says exactly the name of the interactive
/// element beside it: the text a field was named from (`<label>Email <input>`
/// gives `text "Email"` then `textbox "Email"`). The field's line says it.
fn echoes_sibling(n: &Node, sibling: Option<&Node>) -> bool {
    matches!(n.role, Role::Label | Role::Text)
        && !has_value(n)
        && !has_meaningful_state(n)
        && !is_unnamed(n)
        && sibling.is_some_and(|s| is_interactive(s) && s.name.trim() == n.name.trim())
}

/// A container that only repeats the name of the one interactive element it holds
/// (Chromium's `cell "Order #8"` around `link "Order #8"`): it stands aside for
/// the element, as an unnamed container does. It has no action, value or notable
/// state of its own.
fn echoed_by_child(n: &Node, child: &Node) -> bool {
    matches!(
        n.role,
        Role::Cell
            | Role::Label
            | Role::Group
            | Role::Section
            | Role::Paragraph
            | Role::Unknown
            | Role::Listitem
    ) && n.actions.is_empty()
        && !has_value(n)
        && !has_meaningful_state(n)
        && n.table.is_none()
        && n.child_count <= n.children.len() as u64
        && !is_unnamed(n)
        && is_interactive(child)
        && child.name.trim() == n.name.trim()
}

/// An empty cell of a spreadsheet (a table whose cells are named in A1 notation):
/// named by its own address, with no text (a space is text) and no description
/// (the driver puts a formula or a comment there), no children on display, and
/// nothing of note — not focused, not checked or expanded, and selected only as part of a
/// selection its table's line states. LibreOffice Calc shows about 400 cells on a
/// 1280×800 screen, nearly all empty on a new sheet: listed, they crowded out the
/// cells that hold something. Its table's line counts them; each still exists for
/// find, refs and the diff.
fn is_empty_cell(c: &View<'_>, selection_summarised: bool) -> bool {
    let n = c.node;
    n.role == Role::Cell
        && c.children.is_empty()
        && !c.focus
        && c.more == 0
        && a1(n.name.trim()).is_some()
        && n.value.as_deref().is_none_or(str::is_empty)
        && n.description.as_deref().is_none_or(str::is_empty)
        && n.value_length.is_none_or(|l| l == 0)
        && !redact::is_secret_field(n)
        && [
            State::Checked,
            State::Expanded,
            State::Collapsed,
            State::Busy,
            State::Modal,
        ]
        .into_iter()
        .all(|s| !n.has(s))
        && (!n.has(State::Selected) || selection_summarised)
}

/// Marks the empty cells among the children of a spreadsheet `n` as quiet (not
/// with a query: a search for `B2` shows the cell).
fn mark_empty_cells(n: &Node, children: &mut [View<'_>], opts: &ViewOptions<'_>) {
    if opts.query.is_none() && n.table.as_ref().is_some_and(|t| t.a1) {
        let summarised = table_selection(n).is_some();
        for c in children {
            c.quiet = is_empty_cell(c, summarised);
        }
    }
}

/// An unnamed, value-less, non-interactive container (group, section, paragraph,
/// unknown, application) that may be replaced by its only child.
fn is_foldable(n: &Node) -> bool {
    // An unnamed label is a wrapper too (`<label>Email <input></label>`).
    (n.role.is_container() || n.role == Role::Label)
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
    if redact::redacted_name(n).to_lowercase().contains(q) {
        return true;
    }
    redact::redacted_value(n, parent).is_some_and(|v| v.to_lowercase().contains(q))
}

/// Children of a list-like `n` that are read but hidden (off screen or with no
/// area) and not on the focus path: the render leaves them out and says how many.
fn offscreen_items(n: &Node, focus_path: &HashSet<usize>) -> u64 {
    // A closed combo box's popup is off screen because it is closed, not scrolled
    // away: its line says `▸` instead (see [`state_words`]).
    if !n.role.is_list_like() || n.role == Role::Combobox || n.table.is_some() {
        return 0;
    }
    n.children
        .iter()
        .filter(|c| is_hidden(c) && !focus_path.contains(&key(c)))
        .count() as u64
}

/// Levels below the top element that are read; the children of an element at this
/// depth are counted as "K more" (reachable with `scope=`). It bounds the recursion
/// (stack use grows with depth) and matches the deepest level the Linux driver reads
/// (256).
pub(crate) const MAX_DEPTH: usize = 256;

/// The address of a node, to key sets of nodes without borrowing them.
fn key(n: &Node) -> usize {
    std::ptr::from_ref(n) as usize
}

/// The nodes under (and including) `root` that are focused or have a focused
/// descendant, computed in one iterative pass so that deciding whether a hidden
/// element must stay for the focus path costs O(1) instead of a walk of its subtree.
fn focus_path(root: &Node) -> HashSet<usize> {
    let mut parents: HashMap<usize, usize> = HashMap::new();
    let mut on_path = HashSet::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        for c in &n.children {
            parents.insert(key(c), key(n));
            stack.push(c);
        }
        if n.has(State::Focused) {
            let mut k = key(n);
            while on_path.insert(k) {
                match parents.get(&k) {
                    Some(&p) => k = p,
                    None => break,
                }
            }
        }
    }
    on_path
}

/// State shared by one build.
struct Walk<'o, 'q, 's> {
    opts: &'o ViewOptions<'q>,
    stats: &'s mut ViewStats,
    focus_path: HashSet<usize>,
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
    let mut walk = Walk {
        opts,
        stats,
        focus_path: focus_path(root),
    };
    let mut children = build_children(root, 0, &mut walk);
    mark_empty_cells(root, &mut children, opts);
    let focus = root.has(State::Focused) || children.iter().any(|c| c.focus);
    if let Some(q) = opts.query
        && matches_query(root, root_parent, q)
    {
        walk.stats.matches += 1;
    }
    let more = unread(root, 0);
    walk.stats.more = walk.stats.more.saturating_add(more);
    let offscreen = offscreen_items(root, &walk.focus_path);
    View {
        node: root,
        parent: root_parent,
        children,
        more,
        offscreen,
        focus,
        quiet: false,
    }
}

/// Children of `n` (at `depth`) reported but not shown: never read by the driver,
/// or below [`MAX_DEPTH`]. A table's cells are read by visible range and a secret
/// field's insides are never shown, so neither counts.
fn unread(n: &Node, depth: usize) -> u64 {
    if redact::is_secret_field(n) {
        0
    } else if depth >= MAX_DEPTH {
        let read = n.children.len() as u64;
        if n.table.is_some() {
            read
        } else {
            n.child_count.max(read)
        }
    } else if n.table.is_some() {
        0
    } else {
        // A page that starts further in (`first_child`) leaves out the ones before
        // it too; those are said by the render's note, these come after the page.
        n.child_count
            .saturating_sub(n.first_child + n.children.len() as u64)
    }
}

fn build_children<'a>(n: &'a Node, depth: usize, walk: &mut Walk<'_, '_, '_>) -> Vec<View<'a>> {
    if redact::is_secret_field(n) || depth >= MAX_DEPTH {
        // Whatever a password field contains (text runs, a caret object) is its secret.
        return Vec::new();
    }
    n.children
        .iter()
        .filter_map(|c| build_node(c, n, depth + 1, walk))
        .collect()
}

fn build_node<'a>(
    n: &'a Node,
    parent: &'a Node,
    depth: usize,
    walk: &mut Walk<'_, '_, '_>,
) -> Option<View<'a>> {
    if is_hidden(n) && !walk.focus_path.contains(&key(n)) {
        return None;
    }
    let mut children = build_children(n, depth, walk);
    if walk.opts.query.is_none() {
        // A label that only repeats this element's name (directly or through
        // folded containers) says nothing the element's line does not.
        // So does a label beside the field it names.
        let before = children.len();
        let leaf = |c: &View<'_>| c.children.is_empty() && !c.focus && c.more == 0;
        let echoes: Vec<bool> = (0..children.len())
            .map(|i| {
                let c = &children[i];
                leaf(c)
                    && (echoes_parent(c.node, n)
                        || echoes_sibling(c.node, i.checked_sub(1).map(|j| children[j].node))
                        || echoes_sibling(c.node, children.get(i + 1).map(|s| s.node)))
            })
            .collect();
        let mut echo = echoes.into_iter();
        children.retain(|_| !echo.next().unwrap_or(false));
        walk.stats.folded += before - children.len();
    }
    let focused = n.has(State::Focused);
    let focus = focused
        || children.iter().any(|c| c.focus)
        || (depth >= MAX_DEPTH && walk.focus_path.contains(&key(n)));
    let matched = walk
        .opts
        .query
        .is_some_and(|q| matches_query(n, Some(parent), q));
    if matched {
        walk.stats.matches += 1;
    }
    let more = unread(n, depth);
    if walk.opts.query.is_some() && !matched && children.is_empty() {
        return None;
    }
    if children.is_empty() && !focus && more == 0 && is_decorative_leaf(n) {
        return None;
    }
    if children.len() == 1
        && !focused
        && !matched
        && (is_foldable(n) || echoed_by_child(n, children[0].node))
    {
        walk.stats.folded += 1;
        // The child stands where the container stood; its redaction context stays
        // its real parent.
        return children.pop();
    }
    mark_empty_cells(n, &mut children, walk.opts);
    let mut more = more;
    let cap = walk.opts.max_list_items;
    // Empty cells are not listed, so they do not count towards the cap either.
    let listed = children.iter().filter(|c| !c.quiet).count();
    if n.role.is_list_like() && listed > cap {
        let mut kept = Vec::with_capacity(children.len());
        let mut i = 0;
        for c in children {
            if c.quiet {
                kept.push(c);
                continue;
            }
            if i < cap || c.focus {
                kept.push(c);
            } else {
                more = more.saturating_add(1);
            }
            i += 1;
        }
        children = kept;
    }
    walk.stats.more = walk.stats.more.saturating_add(more);
    let offscreen = offscreen_items(n, &walk.focus_path);
    Some(View {
        node: n,
        parent: Some(parent),
        children,
        more,
        offscreen,
        focus,
        quiet: false,
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
pub(crate) fn column_name(mut i: u64) -> String {
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

/// `1048576×16384, showing A1:K40` (or `showing rows 1-40, columns 1-11`), then
/// `, cells read A1:P40` when a read took fewer cells than are on screen.
pub(crate) fn table_marker(t: &TableInfo) -> String {
    let range = |rows: Option<(u64, u64)>, cols: Option<(u64, u64)>| match (rows, cols, t.a1) {
        (Some((r0, r1)), Some((c0, c1)), true) => Some(format!(
            "{}{}:{}{}",
            column_name(c0),
            u128::from(r0) + 1,
            column_name(c1),
            u128::from(r1) + 1
        )),
        (rows, cols, _) => {
            let mut parts = Vec::new();
            if let Some((r0, r1)) = rows {
                parts.push(format!(
                    "rows {}-{}",
                    u128::from(r0) + 1,
                    u128::from(r1) + 1
                ));
            }
            if let Some((c0, c1)) = cols {
                parts.push(format!(
                    "columns {}-{}",
                    u128::from(c0) + 1,
                    u128::from(c1) + 1
                ));
            }
            (!parts.is_empty()).then(|| parts.join(", "))
        }
    };
    let mut s = format!("{}×{}", t.rows, t.columns);
    if let Some(shown) = range(t.visible_rows, t.visible_columns) {
        let _ = write!(s, ", showing {shown}");
    }
    if let Some((rows, cols)) = t.read
        && let Some(read) = range(Some(rows), Some(cols))
    {
        let _ = write!(s, ", cells read {read}");
    }
    s
}

/// `(row, column)` of an A1 cell name, 0-based.
pub(crate) fn a1(name: &str) -> Option<(u64, u64)> {
    let split = name.find(|c: char| c.is_ascii_digit())?;
    let (letters, digits) = name.split_at(split);
    if letters.is_empty()
        || letters.len() > 4
        || !letters.chars().all(|c| c.is_ascii_uppercase())
        || !digits.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let col = letters
        .bytes()
        .fold(0u64, |acc, b| acc * 26 + u64::from(b - b'A') + 1);
    let row: u64 = digits.parse().ok()?;
    (row >= 1).then(|| (row - 1, col - 1))
}

/// The range covering cells named in A1 style: `A1:L40`, or `within A1:L40` when
/// they do not fill it; `None` when there are none or one is not an A1 name.
pub(crate) fn cell_span<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut n = 0u64;
    let mut span: Option<(u64, u64, u64, u64)> = None;
    for name in names {
        let (r, c) = a1(name.trim())?;
        n += 1;
        span = Some(match span {
            None => (r, r, c, c),
            Some((r0, r1, c0, c1)) => (r0.min(r), r1.max(r), c0.min(c), c1.max(c)),
        });
    }
    let (r0, r1, c0, c1) = span?;
    let name = |r: u64, c: u64| format!("{}{}", column_name(c), u128::from(r) + 1);
    let whole = (r1 - r0 + 1).saturating_mul(c1 - c0 + 1) == n;
    Some(format!(
        "{}{}:{}",
        if whole { "" } else { "within " },
        name(r0, c0),
        name(r1, c1)
    ))
}

/// Cells of a table at least this many of which are selected are summarised on
/// the table's line (`selected A1:L40`) instead of each saying `selected`: 2.
pub(crate) const SELECTION_SUMMARY_CELLS: usize = 2;

/// The selected cells of `table` as one range, when they are at least
/// [`SELECTION_SUMMARY_CELLS`] and all have A1 names (a spreadsheet).
pub(crate) fn table_selection(table: &Node) -> Option<String> {
    table.table.as_ref()?;
    let selected: Vec<&str> = table
        .children
        .iter()
        .filter(|c| c.role == Role::Cell && c.has(State::Selected))
        .map(|c| c.name.as_str())
        .collect();
    if selected.len() < SELECTION_SUMMARY_CELLS {
        return None;
    }
    cell_span(selected.into_iter())
}

/// True for the roles whose value lies in a range: slider, scroll bar, progress bar,
/// spin button. Only they show an orientation.
pub(crate) fn is_range(role: Role) -> bool {
    matches!(
        role,
        Role::Slider | Role::Scrollbar | Role::Progressbar | Role::Spinbutton
    )
}

/// The state words of a line, in display order. `shows_children` tells whether any
/// child of the element is on display: a menu item with a hidden submenu gets `▸`.
/// Offscreen, focusable and manages-descendants are never shown.
pub(crate) fn state_words(
    n: &Node,
    parent: Option<&Node>,
    shows_children: bool,
) -> Vec<&'static str> {
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
    // A cell says only what its table does not: LibreOffice marks each of a sheet's
    // cells editable and multiselectable, as the sheet is.
    let inherited = |s: State| {
        n.role == Role::Cell
            && (s == State::Multiselectable
                || (s == State::Editable && parent.is_some_and(|p| p.has(State::Editable))))
    };
    let mut words: Vec<&'static str> = ORDER
        .iter()
        .filter(|(s, _)| n.has(*s) && !inherited(*s))
        .map(|(_, w)| *w)
        .collect();
    let hidden_submenu = matches!(n.role, Role::Menuitem | Role::Menu | Role::Combobox)
        && n.child_count > 0
        && !shows_children
        && !redact::is_secret_field(n);
    // A progress bar's orientation changes nothing a user does.
    if is_range(n.role) && n.role != Role::Progressbar {
        if n.has(State::Horizontal) {
            words.push("horizontal");
        } else if n.has(State::Vertical) {
            words.push("vertical");
        }
    }
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
        .then(|| redact::display_name_of(n, max_chars))
        .filter(|s| !s.is_empty())
}

pub(crate) fn shown_value(n: &Node, parent: Option<&Node>, max_chars: usize) -> Option<String> {
    if value_is_noise(n) {
        return None;
    }
    let v = redact::display_value(n, parent, max_chars)?;
    // A value equal to the name (list items often repeat it) says nothing new.
    if v.is_empty() || (n.value.as_deref() == Some(n.name.as_str()) && !redact::is_secret_field(n))
    {
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
        if let Some(span) = table_selection(n) {
            let _ = write!(s, ", selected {span} (of the cells read)");
        }
    }
    let value = shown_value(n, parent, max_chars);
    if let Some(v) = &value {
        let _ = write!(s, " value=\"{v}\"");
    }
    // A cell with no text can still hold something: the driver describes its
    // formula or comment (a sheet's `=""`, a comment on an empty cell). A document
    // with nothing read inside says why (an Android web view the dump left empty).
    if (n.role == Role::Cell || (n.role == Role::Document && n.children.is_empty()))
        && value.is_none()
        && let Some(d) = n
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
    {
        let d = sanitize::one_line(&sanitize::truncate_value(
            &redact::mask_secrets(d),
            max_chars,
        ));
        let _ = write!(s, " ({d})");
    }
    if let Some(r) = &n.range {
        let _ = write!(
            s,
            " range={}–{}",
            sanitize::one_line(&r.min),
            sanitize::one_line(&r.max)
        );
    }
    // A cell of a selection summarised on its table's line does not repeat it.
    let summarised = n.role == Role::Cell && parent.is_some_and(|p| table_selection(p).is_some());
    for w in state_words(n, parent, shows_children) {
        if summarised && w == "selected" {
            continue;
        }
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
        if !redact::is_secret_field(n) {
            stack.extend(n.children.iter().rev().map(|c| (c, Some(n))));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_of_cells_is_one_range_on_its_table_line() {
        let cell = |name: &str, selected: bool| {
            let mut c = Node::new(format!("h:{name}"), Role::Cell, name);
            if selected {
                c.states.insert(State::Selected);
            }
            c
        };
        let table = |selected: &[&str]| {
            let cells = ["A1", "B1", "A2", "B2"]
                .iter()
                .map(|n| cell(n, selected.contains(n)))
                .collect();
            let mut t = Node::new("h:t", Role::Table, "Sheet1").children(cells);
            t.table = Some(TableInfo {
                rows: 1_048_576,
                columns: 16_384,
                visible_rows: Some((0, 1)),
                visible_columns: Some((0, 1)),
                a1: true,
                read: None,
            });
            t
        };
        let all = table(&["A1", "B1", "A2", "B2"]);
        let line = element_line(&all, None, true, 80);
        assert!(
            line.ends_with(", selected A1:B2 (of the cells read)"),
            "{line}"
        );
        let a1 = element_line(&all.children[0], Some(&all), false, 80);
        assert_eq!(a1, "cell \"A1\"", "the table line says it once");
        let part = table(&["A1", "B2"]);
        assert!(element_line(&part, None, true, 80).contains("selected within A1:B2"));
        // One selected cell is the cursor's: it says so itself.
        let one = table(&["B2"]);
        assert!(!element_line(&one, None, true, 80).contains("selected"));
        assert!(element_line(&one.children[3], Some(&one), false, 80).ends_with("selected"));
    }

    /// The lines of `root`'s visible tree, refs left out, two spaces per depth.
    fn lines(root: &Node) -> Vec<String> {
        fn walk(v: &View<'_>, depth: usize, out: &mut Vec<String>) {
            out.push(format!(
                "{}{}",
                "  ".repeat(depth),
                element_line(v.node, v.parent, !v.children.is_empty(), 80)
            ));
            for c in &v.children {
                walk(c, depth + 1, out);
            }
        }
        let opts = ViewOptions {
            max_list_items: 20,
            query: None,
        };
        let mut stats = ViewStats::default();
        let v = build(root, None, &opts, &mut stats);
        let mut out = Vec::new();
        walk(&v, 0, &mut out);
        out
    }

    #[test]
    fn a_zero_value_on_a_toolbar_button_is_not_printed_but_a_textbox_zero_is() {
        let w = Node::new("h:w", Role::Window, "w").children(vec![
            Node::new("h:t", Role::Toolbar, "Standard").children(vec![
                Node::new("h:b", Role::Button, "Save").value("0"),
                Node::new("h:g", Role::Group, "Font")
                    .value("0.0")
                    .children(vec![
                        Node::new("h:e", Role::Textbox, "")
                            .value("0")
                            .state(State::Editable),
                    ]),
                Node::new("h:c", Role::Group, "").value("Unsupported flag"),
            ]),
        ]);
        assert_eq!(
            lines(&w),
            [
                "window \"w\"",
                "  toolbar \"Standard\"",
                "    button \"Save\"",
                "    group \"Font\"",
                "      textbox value=\"0\" editable",
                "    group value=\"Unsupported flag\"",
            ]
        );
    }

    #[test]
    fn a_cell_does_not_repeat_its_tables_states() {
        let cell = |h: &str, name: &str| {
            Node::new(h, Role::Cell, name)
                .state(State::Editable)
                .state(State::Multiselectable)
        };
        let mut sheet = Node::new("h:t", Role::Table, "Sheet1")
            .state(State::Editable)
            .state(State::Multiselectable)
            .children(vec![
                cell("h:a", "A1").state(State::Focused),
                cell("h:b", "B1"),
            ]);
        sheet.table = Some(TableInfo {
            rows: 1,
            columns: 2,
            visible_rows: Some((0, 0)),
            visible_columns: Some((0, 1)),
            a1: true,
            read: None,
        });
        let l = lines(&sheet);
        assert_eq!(l[1], "  cell \"A1\" focused");
        assert_eq!(l[2], "  cell \"B1\"");
        // Outside an editable table a cell's editable state is its own.
        let alone = Node::new("h:x", Role::Row, "").children(vec![cell("h:c", "C1")]);
        assert_eq!(lines(&alone)[1], "  cell \"C1\" editable");
    }

    #[test]
    fn labels_and_cells_that_repeat_a_fields_name_stand_aside() {
        let w = Node::new("h:w", Role::Window, "w").children(vec![
            Node::new("h:g", Role::Group, "New order").children(vec![
                // The legend: an unnamed label whose value is the group's name.
                Node::new("h:l", Role::Label, "").value("New order"),
                Node::new("h:wrap", Role::Label, "").children(vec![
                    Node::new("h:t", Role::Text, "Email"),
                    Node::new("h:e", Role::Textbox, "Email").state(State::Editable),
                ]),
                // A label naming something else stays.
                Node::new("h:n", Role::Label, "Notes"),
                Node::new("h:e2", Role::Textbox, "Comments").state(State::Editable),
            ]),
            Node::new("h:row", Role::Row, "").children(vec![
                Node::new("h:c1", Role::Cell, "Order #8").children(vec![
                    Node::new("h:a", Role::Link, "Order #8").actions(&["jump"]),
                ]),
                // A cell whose link says something else is kept.
                Node::new("h:c2", Role::Cell, "Edit order").children(vec![
                    Node::new("h:b", Role::Link, "Edit").actions(&["jump"]),
                ]),
            ]),
        ]);
        assert_eq!(
            lines(&w),
            [
                "window \"w\"",
                "  group \"New order\"",
                "    textbox \"Email\" editable",
                "    label \"Notes\"",
                "    textbox \"Comments\" editable",
                "  row",
                "    link \"Order #8\"",
                "    cell \"Edit order\"",
                "      link \"Edit\"",
            ]
        );
    }

    #[test]
    fn a_closed_combo_box_says_it_has_a_popup_not_that_items_are_off_screen() {
        let popup = Node::new("h:m", Role::Menu, "")
            .state(State::Offscreen)
            .children(vec![Node::new("h:i", Role::Menuitem, "Left")]);
        let mut combo = Node::new("h:c", Role::Combobox, "Left").children(vec![popup]);
        combo.child_count = 1;
        let w = Node::new("h:w", Role::Window, "w").children(vec![combo]);
        let mut stats = ViewStats::default();
        let opts = ViewOptions {
            max_list_items: 20,
            query: None,
        };
        let v = build(&w, None, &opts, &mut stats);
        assert_eq!(v.children[0].offscreen, 0);
        assert_eq!(lines(&w), ["window \"w\"", "  combobox \"Left\" ▸"]);
    }

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
            read: None,
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
        // A view wider than a read says which cells were read.
        let wide = TableInfo {
            visible_rows: Some((0, 49)),
            visible_columns: Some((0, 25)),
            a1: true,
            read: Some(((0, 39), (0, 15))),
            ..t
        };
        assert_eq!(
            table_marker(&wide),
            "1048576×16384, showing A1:Z50, cells read A1:P40"
        );
    }
}

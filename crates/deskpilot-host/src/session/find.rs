//! Find: elements whose name, value or description holds a text, searched in a read
//! deep enough to reach rows past the plain read's limits, and an honest account of
//! what was not searched. Never acts.

use deskpilot_core::render::{RenderOptions, render};
use deskpilot_core::sanitize::Needle;
use deskpilot_core::{Node, Role, State, StateSet};
use deskpilot_protocol::types::*;
use serde::Serialize;

use super::text::in_context;
use super::{Session, Target};
use deskpilot_protocol::Result;

/// One element found by [`Session::find`].
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FindHit {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub role: Role,
    /// Accessible name (secrets masked).
    pub name: String,
    pub states: StateSet,
    /// Sanitized, redacted one-line form, as a snapshot shows it.
    pub line: String,
    /// Extents in screen pixels (AT-SPI `Component`), when the element has them: for
    /// a pointer fallback, relative to the window's basis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<deskpilot_core::Bounds>,
    pub window_ref: String,
    pub window_title: String,
    /// The field that holds the text searched for.
    pub matched: MatchedField,
    /// The documents the element lies in, outermost first, by name: a web page
    /// (`["Shop"]`), a frame inside it (`["Shop", "Checkout"]`). Empty outside any
    /// document (a browser's own toolbar, a native dialog). The text line names the
    /// inner ones when there is more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frame: Vec<String>,
}

/// The names of the documents on the path from `root` to the element `target`,
/// outermost first (`target` itself excluded); empty when it is in none or not
/// found (pure).
pub(super) fn frame_path(root: &Node, target: &deskpilot_core::Handle) -> Vec<String> {
    fn walk(n: &Node, target: &deskpilot_core::Handle, path: &mut Vec<String>) -> bool {
        if &n.handle == target {
            return true;
        }
        let doc = n.role == Role::Document;
        if doc {
            path.push(deskpilot_core::sanitize::one_line(&n.name));
        }
        if n.children.iter().any(|c| walk(c, target, path)) {
            return true;
        }
        if doc {
            path.pop();
        }
        false
    }
    let mut path = Vec::new();
    if walk(root, target, &mut path) {
        path
    } else {
        Vec::new()
    }
}

/// Long text fields whose whole text one `find` reads to search it: 8.
pub const FULL_TEXT_FIELDS: usize = 8;

/// What a search did not look at, so that "no match" is never read as "not there"
/// (docs/ARCHITECTURE.md §9). All counts are of elements of the searched window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Unsearched {
    /// Children the read never reached (past the child cap or the node cap, below
    /// the depth limit, or in a container that creates its children on demand):
    /// counted, not searched.
    pub unread_children: u64,
    /// Long text values read only in part (the head of each): the rest of their
    /// text was not searched.
    pub values_cut: u64,
    /// Documents whose application builds only the part in view (LibreOffice
    /// Writer): their text above or below the view was not searched.
    #[serde(default)]
    pub documents_in_view: u64,
}

impl Unsearched {
    /// True when the search looked at everything.
    pub fn is_empty(&self) -> bool {
        *self == Unsearched::default()
    }

    /// One sentence naming what was not searched, e.g. `not searched: 480 children
    /// past the read's limits, 1 long text beyond its first 2,000 characters`; empty
    /// when everything was.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.unread_children > 0 {
            parts.push(format!(
                "{} element(s) the read did not reach (scroll to them, or observe scope=REF)",
                self.unread_children
            ));
        }
        if self.values_cut > 0 {
            parts.push(format!(
                "the rest of {} long text value(s) beyond what was read",
                self.values_cut
            ));
        }
        if self.documents_in_view > 0 {
            parts.push(format!(
                "the text of {} document(s) above or below the view (read REF for a document's whole text, or scroll)",
                self.documents_in_view
            ));
        }
        if parts.is_empty() {
            return String::new();
        }
        format!("not searched: {}", parts.join("; "))
    }
}

/// The result of a search: the matches on screen, and what was not searched.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Found {
    pub hits: Vec<FindHit>,
    pub unsearched: Unsearched,
}

/// Which text of an element a search matched, the first of name, value and
/// description that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MatchedField {
    Name,
    Value,
    Description,
}

impl MatchedField {
    /// What a hit's line adds: nothing for the name (the line shows it), else
    /// ` (matched its value)` / ` (matched its description)`, since the line may
    /// not show that text.
    fn note(self) -> &'static str {
        match self {
            MatchedField::Name => "",
            MatchedField::Value => " (matched its value)",
            MatchedField::Description => " (matched its description)",
        }
    }
}

/// The field of `n` that holds `needle`, if any.
pub(super) fn matched_field(n: &Node, needle: &Needle) -> Option<MatchedField> {
    if needle.found_in(&n.name) {
        return Some(MatchedField::Name);
    }
    if n.has(State::Password) {
        // A password field is found by its name only, never by its value.
        return None;
    }
    if n.value.as_deref().is_some_and(|v| needle.found_in(v)) {
        return Some(MatchedField::Value);
    }
    n.description
        .as_deref()
        .is_some_and(|v| needle.found_in(v))
        .then_some(MatchedField::Description)
}

pub(super) fn matches_text(n: &Node, needle: &Needle) -> bool {
    matched_field(n, needle).is_some()
}

impl Session {
    pub(super) fn hit_line(n: &Node) -> String {
        let mut single = n.clone();
        single.children.clear();
        single.child_count = 0;
        // Render the element alone so the line is sanitized and redacted exactly as
        // a snapshot line is.
        let r = render(
            &single,
            &RenderOptions {
                max_tokens: 400,
                header: None,
                ..RenderOptions::default()
            },
        );
        r.text.lines().next().unwrap_or_default().trim().to_string()
    }

    /// Elements of the target window whose name, value or description contains
    /// `text` (case-insensitive), optionally of one role; at most `limit`.
    pub async fn find(
        &mut self,
        target: &Target,
        text: &str,
        role: Option<Role>,
        limit: usize,
    ) -> Result<Found> {
        let window = self.resolve_window(target).await?;
        self.find_in_window(&window, text, role, limit).await
    }

    /// [`Session::find`] in a window the caller has just resolved (from an
    /// enumeration of this call).
    pub async fn find_in_window(
        &mut self,
        window: &WindowInfo,
        text: &str,
        role: Option<Role>,
        limit: usize,
    ) -> Result<Found> {
        let window = window.clone();
        // The plain read is what is remembered (the next diff compares like with
        // like); the deep read, refs assigned in the same registry, is searched.
        let (plain, _) = self.read(&window).await?;
        // The deep read only adds what the plain one left out: children it did not
        // reach, and what lies off screen (read without its text).
        let complete = !plain.walk().any(|n| {
            n.has(State::Offscreen) || n.child_count > n.first_child + n.children.len() as u64
        });
        let deep = if complete || Self::search(&plain, &window, text, role, limit).len() >= limit {
            None
        } else {
            // A deep read that fails leaves the plain read searched, its gaps counted.
            self.read_deep(&window).await.ok()
        };
        let root = deep.as_ref().unwrap_or(&plain);
        let mut hits = Self::search(root, &window, text, role, limit);
        let mut unsearched = Self::unsearched(root, role);
        self.search_long_texts(root, &window, text, role, limit, &mut hits, &mut unsearched)
            .await;
        // Refs of elements only the deep read reached stay known to the registry:
        // `act` reads deep again to reach one.
        self.remember(&window, plain);
        self.state.current = Some(window.handle.0.clone());
        self.save()?;
        Ok(Found { hits, unsearched })
    }

    /// Searches the whole text of long values that the read took only the head of
    /// (at most [`FULL_TEXT_FIELDS`] fields on screen, each read whole up to
    /// `MAX_TEXT_CAP` characters through a one-node scoped read), adding a hit for
    /// each that holds the text and taking it off `unsearched.values_cut` when its
    /// whole text was read. A read that fails leaves the field counted as unsearched.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn search_long_texts(
        &self,
        root: &Node,
        window: &WindowInfo,
        text: &str,
        role: Option<Role>,
        limit: usize,
        hits: &mut Vec<FindHit>,
        unsearched: &mut Unsearched,
    ) {
        let needle = Needle::new(text);
        if needle.is_empty() || hits.len() >= limit {
            return;
        }
        let long: Vec<&Node> = root
            .walk()
            .filter(|n| n.ref_.as_deref().is_some_and(|r| r.starts_with('e')))
            .filter(|n| n.value_length.is_some() && !n.has(State::Password))
            .filter(|n| !n.has(State::Offscreen))
            .filter(|n| role.is_none_or(|r| n.role == r))
            .filter(|n| !matches_text(n, &needle))
            .take(FULL_TEXT_FIELDS)
            .collect();
        for n in long {
            let whole = self.whole_text(window, &n.handle).await;
            let Ok(whole) = whole else { continue };
            if whole.root.value.is_none() {
                continue;
            }
            let value = in_context(&whole.root, root, &n.handle);
            if whole.root.value_length.is_none() {
                unsearched.values_cut = unsearched.values_cut.saturating_sub(1);
            }
            if needle.found_in(&value) && hits.len() < limit {
                hits.push(Self::hit(n, root, window, MatchedField::Value));
            }
        }
    }

    /// What [`Session::search`] over `root` could not look at.
    pub(super) fn unsearched(root: &Node, role: Option<Role>) -> Unsearched {
        let mut u = Unsearched::default();
        for n in root.walk() {
            u.unread_children += n
                .child_count
                .saturating_sub(n.first_child + n.children.len() as u64);
            if n.value_length.is_some()
                && !n.has(State::Password)
                && role.is_none_or(|r| n.role == r)
            {
                u.values_cut += 1;
            }
            if n.document.as_ref().is_some_and(|d| d.beyond()) {
                u.documents_in_view += 1;
            }
        }
        u
    }

    pub(super) fn search(
        root: &Node,
        window: &WindowInfo,
        text: &str,
        role: Option<Role>,
        limit: usize,
    ) -> Vec<FindHit> {
        let needle = Needle::new(text);
        let matching = || {
            root.walk()
                .filter(|n| n.ref_.as_deref().is_some_and(|r| r.starts_with('e')))
                .filter(|n| role.is_none_or(|r| n.role == r))
                .filter(|n| matches_text(n, &needle))
        };
        // What is on screen first: it can be acted on at once.
        matching()
            .filter(|n| !n.has(State::Offscreen))
            .chain(matching().filter(|n| n.has(State::Offscreen)))
            .take(limit)
            .map(|n| {
                let field = matched_field(n, &needle).unwrap_or(MatchedField::Name);
                Self::hit(n, root, window, field)
            })
            .collect()
    }

    /// The hit of element `n` of the window `root`.
    pub(super) fn hit(
        n: &Node,
        root: &Node,
        window: &WindowInfo,
        matched: MatchedField,
    ) -> FindHit {
        let mut line = Self::hit_line(n);
        line.push_str(matched.note());
        if n.has(State::Offscreen) {
            line.push_str(&format!(
                " [off screen: `act {} scroll into_view` first, or open its menu]",
                n.ref_.as_deref().unwrap_or_default()
            ));
        }
        let frame = frame_path(root, &n.handle);
        if frame.len() > 1 {
            let inner: Vec<String> = frame[1..].iter().map(|f| format!("{f:?}")).collect();
            line.push_str(&format!(" (in frame {})", inner.join(" › ")));
        }
        FindHit {
            frame,
            ref_: n.ref_.clone().unwrap_or_default(),
            role: n.role,
            name: n.name.clone(),
            states: n.states,
            line,
            bounds: n.bounds,
            window_ref: root.ref_.clone().unwrap_or_default(),
            window_title: window.title.clone(),
            matched,
        }
    }
}

#[cfg(test)]
mod frame_tests {
    use super::*;
    use deskpilot_core::Handle;

    #[test]
    fn a_match_names_the_documents_it_lies_in() {
        let mut pay = Node::new("pay", Role::Button, "Pay");
        pay.child_count = 0;
        let mut inner = Node::new("inner", Role::Document, "Checkout");
        inner.children = vec![pay];
        let mut frame = Node::new("frame", Role::Window, "");
        frame.children = vec![inner];
        let mut top_pay = Node::new("top-pay", Role::Button, "Pay");
        top_pay.child_count = 0;
        let mut page = Node::new("page", Role::Document, "Shop");
        page.children = vec![top_pay, frame];
        let mut toolbar = Node::new("back", Role::Button, "Back");
        toolbar.child_count = 0;
        let mut root = Node::new("w", Role::Window, "Shop - Chromium");
        root.children = vec![toolbar, page];
        assert_eq!(frame_path(&root, &Handle::new("pay")), ["Shop", "Checkout"]);
        assert_eq!(frame_path(&root, &Handle::new("top-pay")), ["Shop"]);
        assert!(frame_path(&root, &Handle::new("back")).is_empty());
        assert!(frame_path(&root, &Handle::new("gone")).is_empty());
    }
}

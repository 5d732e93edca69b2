//! Pure translation from what was read over AT-SPI into a deskpilot [`Node`] tree.
//!
//! Owns [`assemble`]: given the object records ([`NodeInfo`]), the decided children
//! lists, and the details read for the nodes that will be rendered ([`Details`]), it
//! builds the tree with unified roles and states. It makes no D-Bus call, reads no
//! clock and decides nothing about what to read: the reader ([`super::read`]) does
//! that. Two context rules live here because they need the parent: an AT-SPI `menu`
//! inside a `menu bar` or `menu` is the item that opens a submenu and becomes
//! `menuitem` (it keeps the submenu's items as children); everything else comes from
//! the role table.
//!
//! Two rules keep web content (Chromium) as compact as native widgets:
//!
//! - Text said twice is said once. Chromium exposes the text of a block both on the
//!   block (its name, or its `Text`) and as `static` leaves under it, so a heading
//!   read `heading "Done"` › `text "Done"` and a paragraph its text as a value and
//!   again as a child. When every child of a non-editable node is such a leaf and
//!   the leaves, joined, say exactly the node's name or value (whitespace aside),
//!   the leaves are left out ([`folds_static_text`]). A non-editable node's `Text`
//!   holding U+FFFC (an embedded child's placeholder) is hypertext built from its
//!   children, so it is not shown as a value either.
//! - Actions every element has are not actions. Chromium gives every element
//!   `showContextMenu`, elements without a default action `doDefault`, and the text
//!   inside a link `clickAncestor`; kept, they would make every section and text
//!   run count as operable (and never fold). They are left out of the node
//!   ([`INCIDENTAL_ACTIONS`]); `act` reads an element's actions afresh and can still
//!   use them.

use std::collections::{HashMap, HashSet};

use deskpilot_core::{Bounds, Node, Role, TableInfo};

use super::handle::ObjRef;
use super::info::NodeInfo;
use super::role_map::{code, map_role_code};
use super::state_map::map_states;

/// Details read for one node that will likely be rendered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Details {
    /// `Component.GetExtents` in screen pixels.
    pub bounds: Option<Bounds>,
    /// The head of `Text.GetText` (at most the reader's text cap).
    pub text: Option<String>,
    /// `Text.CharacterCount`, when larger than the head read.
    pub text_length: Option<u64>,
    /// `Value.CurrentValue`.
    pub number: Option<f64>,
    /// Action names from `Action.GetActions`, in index order.
    pub actions: Vec<String>,
    /// `Accessible.AccessibleId`, when non-empty.
    pub automation_id: Option<String>,
    /// Shape and visible range of a table read through `Table`.
    pub table: Option<TableInfo>,
    /// The name of the label of an unnamed form field (relation `LABELLED_BY`).
    pub label: Option<String>,
    /// `Value.MinimumValue` and `MaximumValue` of a range control.
    pub range: Option<(f64, f64)>,
    /// The name of the item selected in a combo box's popup.
    pub choice: Option<String>,
    /// Where content lies around the children read of a document built in view
    /// ([`super::document`]), and how a whole-text read got its text.
    pub document: Option<deskpilot_core::DocumentView>,
    /// The size of the set a list's items say they belong to (ARIA `aria-setsize`,
    /// the `setsize` object attribute of its first item), when larger than the
    /// children it has: a virtualised list that renders only some of its rows.
    pub set_size: Option<u64>,
}

/// Everything [`assemble`] needs.
#[derive(Debug, Default)]
pub struct Parts {
    pub infos: HashMap<ObjRef, NodeInfo>,
    /// Children in order, for every node whose children were read. A node missing
    /// here had its children left unread (managed descendants, cap, depth, hidden).
    pub kids: HashMap<ObjRef, Vec<ObjRef>>,
    pub details: HashMap<ObjRef, Details>,
    /// Objects that disappeared while being read; left out of the tree.
    pub vanished: HashSet<ObjRef>,
}

/// Formats a numeric value the way a user reads it: integers without a fraction.
pub fn format_number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// Action names that do not make an element operable, compared case-insensitively
/// (Chromium 156 reports `showContextMenu` on every element, `doDefault` where the
/// element has no default action verb, `clickAncestor` on text inside a link or
/// button).
pub const INCIDENTAL_ACTIONS: [&str; 3] = ["showContextMenu", "doDefault", "clickAncestor"];

/// True for an action name in [`INCIDENTAL_ACTIONS`].
pub fn is_incidental_action(name: &str) -> bool {
    INCIDENTAL_ACTIONS
        .iter()
        .any(|a| a.eq_ignore_ascii_case(name.trim()))
}

/// The U+FFFC OBJECT REPLACEMENT CHARACTER that stands for an embedded child in
/// hypertext.
const EMBEDDED_OBJECT: char = '\u{FFFC}';

/// `s` without any whitespace: names are trimmed when read, so the spaces between
/// text runs (`"Nothing has "`, `"happened yet."`) are lost and cannot be compared.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// True when `kids` (AT-SPI role code and built node of every child, all of them
/// read) are static text leaves that, joined, say exactly `name` or `value`
/// (whitespace ignored): they repeat their parent and are left out (pure).
pub fn folds_static_text(name: &str, value: Option<&str>, kids: &[(u32, Node)]) -> bool {
    if kids.is_empty()
        || !kids
            .iter()
            .all(|(c, n)| *c == code::STATIC && n.children.is_empty())
    {
        return false;
    }
    let joined = squeeze(
        &kids
            .iter()
            .map(|(_, n)| n.name.as_str())
            .collect::<String>(),
    );
    !joined.is_empty() && (squeeze(name) == joined || value.is_some_and(|v| squeeze(v) == joined))
}

/// Builds the tree under `root`. Returns `None` when the root itself is unknown or
/// vanished.
pub fn assemble(root: &ObjRef, parts: &Parts) -> Option<Node> {
    build(root, None, parts, 0)
}

/// Levels read below a window: 56. A tree travels as JSON (the driver protocol, the
/// host's state file), where every node level is two nesting levels (an object and
/// its `children` array) and serde_json refuses documents nested deeper than 128;
/// 56 levels leave room for the envelope. Real windows are far shallower (GTK and
/// LibreOffice ~25, Chromium pages ~40); what lies deeper is counted in the parent's
/// `child_count` and shown as "K more".
pub const MAX_DEPTH: u32 = 56;

fn build(obj: &ObjRef, parent_role: Option<u32>, parts: &Parts, depth: u32) -> Option<Node> {
    if parts.vanished.contains(obj) || depth > MAX_DEPTH {
        return None;
    }
    let info = parts.infos.get(obj)?;
    let details = parts.details.get(obj);
    let mut role = map_role_code(info.role);
    if info.role == code::MENU && matches!(parent_role, Some(code::MENU_BAR | code::MENU)) {
        role = Role::Menuitem;
    }
    let states = map_states(info.states, info.role);
    let mut name = info.name.trim().to_string();
    if name.is_empty()
        && let Some(label) = details.and_then(|d| d.label.as_ref())
    {
        name = label.clone();
    }

    let editable = states.contains(deskpilot_core::State::Editable);
    let listed = parts.kids.get(obj);
    let mut value = None;
    let mut value_length = None;
    if let Some(d) = details {
        if let Some(t) = &d.text {
            let hypertext =
                !editable && listed.is_some_and(|ks| !ks.is_empty()) && t.contains(EMBEDDED_OBJECT);
            if editable || (!t.is_empty() && t.trim() != name && !hypertext) {
                value = Some(t.clone());
                value_length = d.text_length;
            }
        }
        if value.is_none() {
            value = d.number.map(format_number);
        }
    }

    let kids: Vec<(u32, Node)> = listed
        .map(|ks| {
            ks.iter()
                .filter_map(|k| {
                    let child = build(k, Some(info.role), parts, depth + 1)?;
                    Some((parts.infos.get(k)?.role, child))
                })
                .collect()
        })
        .unwrap_or_default();
    let table = details.and_then(|d| d.table);
    let reported = u64::try_from(info.child_count).unwrap_or(0);
    let all_read = listed.is_some_and(|ks| ks.len() as u64 >= reported);
    let folded = !editable
        && all_read
        && value_length.is_none()
        && folds_static_text(&name, value.as_deref(), &kids);
    let children: Vec<Node> = if folded {
        Vec::new()
    } else {
        kids.into_iter().map(|(_, n)| n).collect()
    };
    if role == Role::Combobox && value.is_none() {
        value = details
            .and_then(|d| d.choice.clone())
            .filter(|c| *c != name)
            .or_else(|| chosen_option(&children, &name));
    }
    let child_count = match &table {
        Some(t) => t.rows.saturating_mul(t.columns),
        None if folded => 0,
        None => reported
            .max(children.len() as u64)
            .max(details.and_then(|d| d.set_size).unwrap_or(0)),
    };

    Some(Node {
        handle: obj.to_handle(),
        ref_: None,
        role,
        name,
        value,
        description: Some(info.description.trim().to_string()).filter(|d| !d.is_empty()),
        states,
        actions: details
            .map(|d| {
                d.actions
                    .iter()
                    .filter(|a| !is_incidental_action(a))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        bounds: details.and_then(|d| d.bounds),
        automation_id: details.and_then(|d| d.automation_id.clone()),
        children,
        child_count,
        table,
        value_length,
        range: details
            .and_then(|d| d.range)
            .map(|(min, max)| deskpilot_core::ValueRange {
                min: format_number(min),
                max: format_number(max),
            }),
        first_child: 0,
        document: details.and_then(|d| d.document.clone()),
    })
}

/// The current choice of a combo box that does not say it as its text or name (a web
/// `<select>`: Chromium names it by its label and keeps the choice on the selected
/// item of its popup menu, read even while the popup is closed): the name of the
/// first selected item among its children and theirs, unless it is the box's name.
fn chosen_option(children: &[Node], name: &str) -> Option<String> {
    let item = |n: &&Node| {
        matches!(n.role, Role::Menuitem | Role::Listitem)
            && n.has(deskpilot_core::State::Selected)
            && !n.name.is_empty()
    };
    children
        .iter()
        .chain(children.iter().flat_map(|c| c.children.iter()))
        .find(item)
        .map(|n| n.name.clone())
        .filter(|chosen| chosen != name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::atspi::info::Ifaces;
    use crate::linux::atspi::state_map::RawStates;
    use atspi::State as S;
    use deskpilot_core::State;

    const SHOWN: u64 =
        S::Showing as u64 | S::Visible as u64 | S::Enabled as u64 | S::Sensitive as u64;

    fn obj(n: u32) -> ObjRef {
        ObjRef::new(":1.5", format!("/org/a11y/atspi/accessible/{n}"))
    }

    fn info(n: u32, role: u32, name: &str, states: u64, kids: i32) -> NodeInfo {
        NodeInfo {
            obj: obj(n),
            parent: None,
            index: -1,
            child_count: kids,
            listed_children: None,
            role,
            name: name.into(),
            description: String::new(),
            states: RawStates(states),
            ifaces: Ifaces::default(),
        }
    }

    /// The fixture, drawn (AT-SPI role in brackets):
    ///
    /// ```text
    /// 1 [frame] "Untitled 1 - Mousepad"
    /// ├── 2 [menu bar]
    /// │   └── 3 [menu] "File"            → menuitem (opens a submenu)
    /// │       └── 4 [menu item] "Save"   (hidden: the menu is closed)
    /// ├── 5 [text] editable, text "hello"
    /// ├── 6 [label] "Ready", text "Ready" (same as name: no value)
    /// ├── 7 [table] manages descendants, read through Table: 1048576×16384
    /// └── 8 [push button] "Gone"          (vanished mid-read)
    /// ```
    fn fixture() -> Parts {
        let mut p = Parts::default();
        for i in [
            info(
                1,
                code::FRAME,
                "Untitled 1 - Mousepad",
                SHOWN | S::Active as u64,
                5,
            ),
            info(2, code::MENU_BAR, "", SHOWN, 1),
            info(3, code::MENU, "File", SHOWN, -1),
            info(4, 35, "Save  ", S::Visible as u64, 0),
            info(5, 61, "", SHOWN | S::Editable as u64 | S::Focused as u64, 0),
            info(6, 29, "Ready", SHOWN, 0),
            info(
                7,
                code::TABLE,
                "Sheet Sheet1",
                SHOWN | S::ManagesDescendants as u64,
                -1,
            ),
            info(8, 43, "Gone", SHOWN, 0),
        ] {
            p.infos.insert(i.obj.clone(), i);
        }
        p.kids
            .insert(obj(1), vec![obj(2), obj(5), obj(6), obj(7), obj(8)]);
        p.kids.insert(obj(2), vec![obj(3)]);
        p.kids.insert(obj(3), vec![obj(4)]);
        p.details.insert(
            obj(5),
            Details {
                text: Some("hello".into()),
                text_length: Some(5_000),
                bounds: Some(Bounds::new(10, 60, 600, 400)),
                actions: vec![],
                ..Details::default()
            },
        );
        p.details.insert(
            obj(6),
            Details {
                text: Some("Ready".into()),
                ..Details::default()
            },
        );
        p.details.insert(
            obj(3),
            Details {
                actions: vec!["click".into()],
                ..Details::default()
            },
        );
        p.details.insert(
            obj(7),
            Details {
                table: Some(TableInfo {
                    rows: 1_048_576,
                    columns: 16_384,
                    visible_rows: Some((0, 32)),
                    visible_columns: Some((0, 14)),
                    a1: true,
                    read: None,
                }),
                ..Details::default()
            },
        );
        p.vanished.insert(obj(8));
        p
    }

    #[test]
    fn assembles_roles_states_values_and_context_rules() {
        let root = assemble(&obj(1), &fixture()).expect("root known");
        assert_eq!(root.role, Role::Window);
        assert_eq!(root.name, "Untitled 1 - Mousepad");
        assert_eq!(root.handle.as_str(), ":1.5|/org/a11y/atspi/accessible/1");
        let roles: Vec<Role> = root.children.iter().map(|c| c.role).collect();
        assert_eq!(
            roles,
            vec![Role::Menubar, Role::Textbox, Role::Label, Role::Table],
            "vanished button left out"
        );

        let file = &root.children[0].children[0];
        assert_eq!(
            file.role,
            Role::Menuitem,
            "menu inside a menu bar opens a submenu"
        );
        assert_eq!(file.actions, vec!["click".to_string()]);
        assert_eq!(file.child_count, 1);
        let save = &file.children[0];
        assert_eq!(save.role, Role::Menuitem);
        assert_eq!(save.name, "Save", "names are trimmed");
        assert!(save.has(State::Offscreen));

        let text = &root.children[1];
        assert_eq!(text.value.as_deref(), Some("hello"));
        assert_eq!(text.value_length, Some(5_000));
        assert!(text.has(State::Editable) && text.has(State::Focused));
        assert_eq!(text.bounds, Some(Bounds::new(10, 60, 600, 400)));

        let label = &root.children[2];
        assert_eq!(label.value, None, "text equal to the name is not repeated");

        let grid = &root.children[3];
        assert!(grid.has(State::ManagesDescendants));
        assert!(grid.children.is_empty());
        assert_eq!(grid.child_count, 1_048_576 * 16_384);
        assert!(grid.table.unwrap().a1);
    }

    #[test]
    fn a_top_level_menu_stays_a_menu() {
        let mut p = Parts::default();
        let i = info(1, code::MENU, "Context", SHOWN, 0);
        p.infos.insert(i.obj.clone(), i);
        assert_eq!(assemble(&obj(1), &p).unwrap().role, Role::Menu);
    }

    #[test]
    fn unknown_or_vanished_root_gives_none() {
        let p = fixture();
        assert!(assemble(&obj(99), &p).is_none());
        assert!(assemble(&obj(8), &p).is_none());
    }

    #[test]
    fn numbers_format_like_a_user_reads_them() {
        assert_eq!(format_number(42.0), "42");
        assert_eq!(format_number(-3.0), "-3");
        assert_eq!(format_number(0.25), "0.25");
        assert_eq!(format_number(f64::MAX), format!("{}", f64::MAX));
    }

    #[test]
    fn numeric_value_used_when_there_is_no_text() {
        let mut p = Parts::default();
        let i = info(1, 51, "Volume", SHOWN, 0);
        p.infos.insert(i.obj.clone(), i);
        p.details.insert(
            obj(1),
            Details {
                number: Some(30.0),
                ..Details::default()
            },
        );
        let n = assemble(&obj(1), &p).unwrap();
        assert_eq!(n.role, Role::Slider);
        assert_eq!(n.value.as_deref(), Some("30"));
    }

    /// A page as Chromium 156 exposes it (AT-SPI role in brackets; text is what
    /// `Text` returned for the unnamed nodes; actions as `GetName` gives them):
    ///
    /// ```text
    /// 1 [document web] "Before"                     doDefault, showContextMenu
    /// ├── 2 [heading] "Waiting"                      doDefault, showContextMenu
    /// │   └── 3 [static] "Waiting"
    /// ├── 4 [paragraph] text "Nothing has  happened yet."
    /// │   ├── 5 [static] "Nothing has "
    /// │   └── 6 [static] "happened yet."
    /// ├── 7 [paragraph] text "Click ￼ now."
    /// │   ├── 8 [static] "Click "
    /// │   ├── 9 [link] "here"                        jump, showContextMenu
    /// │   │   └── 10 [static] "here"                 clickAncestor, showContextMenu
    /// │   └── 11 [static] " now."
    /// ├── 12 [heading] "Status" (aria-label)
    /// │   └── 13 [static] "Done"
    /// └── 14 [push button] "Make it so"              press, showContextMenu
    /// ```
    fn chromium_page() -> Parts {
        const DOC: u32 = 95;
        const HEADING: u32 = 83;
        const PARAGRAPH: u32 = 73;
        const LINK: u32 = 88;
        const BUTTON: u32 = 43;
        let mut p = Parts::default();
        let nodes: [(u32, u32, &str, i32); 14] = [
            (1, DOC, "Before", 5),
            (2, HEADING, "Waiting", 1),
            (3, code::STATIC, "Waiting", 0),
            (4, PARAGRAPH, "", 2),
            (5, code::STATIC, "Nothing has ", 0),
            (6, code::STATIC, "happened yet.", 0),
            (7, PARAGRAPH, "", 3),
            (8, code::STATIC, "Click ", 0),
            (9, LINK, "here", 1),
            (10, code::STATIC, "here", 0),
            (11, code::STATIC, " now.", 0),
            (12, HEADING, "Status", 1),
            (13, code::STATIC, "Done", 0),
            (14, BUTTON, "Make it so", 0),
        ];
        for (n, role, name, kids) in nodes {
            let i = info(n, role, name, SHOWN, kids);
            p.infos.insert(i.obj.clone(), i);
            let actions = match n {
                9 => vec!["jump", "showContextMenu"],
                10 => vec!["clickAncestor", "showContextMenu"],
                14 => vec!["press", "showContextMenu"],
                _ => vec!["doDefault", "showContextMenu"],
            };
            let text = match n {
                4 => Some("Nothing has  happened yet.".to_string()),
                7 => Some("Click \u{FFFC} now.".to_string()),
                _ => None,
            };
            p.details.insert(
                obj(n),
                Details {
                    actions: actions.into_iter().map(String::from).collect(),
                    text,
                    ..Details::default()
                },
            );
        }
        p.kids
            .insert(obj(1), vec![obj(2), obj(4), obj(7), obj(12), obj(14)]);
        p.kids.insert(obj(2), vec![obj(3)]);
        p.kids.insert(obj(4), vec![obj(5), obj(6)]);
        p.kids.insert(obj(7), vec![obj(8), obj(9), obj(11)]);
        p.kids.insert(obj(9), vec![obj(10)]);
        p.kids.insert(obj(12), vec![obj(13)]);
        for leaf in [3, 5, 6, 8, 10, 11, 13, 14] {
            p.kids.insert(obj(leaf), vec![]);
        }
        p
    }

    #[test]
    fn a_web_select_shows_its_chosen_option_as_its_value() {
        const COMBO: u32 = 11;
        const MENU: u32 = code::MENU;
        const ITEM: u32 = code::MENU_ITEM;
        let mut p = Parts::default();
        let hidden = S::Visible as u64 | S::Enabled as u64 | S::Sensitive as u64;
        let nodes = [
            (1, COMBO, "Country", SHOWN, 1),
            (2, MENU, "", hidden, 2),
            (3, ITEM, "Germany", hidden, 0),
            (4, ITEM, "France", hidden | S::Selected as u64, 0),
        ];
        for (n, role, name, states, kids) in nodes {
            let i = info(n, role, name, states, kids);
            p.infos.insert(i.obj.clone(), i);
        }
        p.details.insert(
            obj(1),
            Details {
                text: Some("\u{FFFC}".into()),
                ..Details::default()
            },
        );
        p.kids.insert(obj(1), vec![obj(2)]);
        p.kids.insert(obj(2), vec![obj(3), obj(4)]);
        let combo = assemble(&obj(1), &p).unwrap();
        assert_eq!(combo.role, Role::Combobox);
        assert_eq!(combo.value.as_deref(), Some("France"));
        // Nothing selected: no value is made up.
        p.infos.get_mut(&obj(4)).unwrap().states = RawStates(hidden);
        assert_eq!(assemble(&obj(1), &p).unwrap().value, None);
    }

    #[test]
    fn web_text_said_twice_is_said_once() {
        let doc = assemble(&obj(1), &chromium_page()).unwrap();
        assert_eq!(doc.role, Role::Document);
        assert_eq!(doc.children.len(), 5);

        let heading = &doc.children[0];
        assert_eq!(
            (heading.role, heading.name.as_str()),
            (Role::Heading, "Waiting")
        );
        assert!(
            heading.children.is_empty(),
            "the repeated text run is left out"
        );
        assert_eq!(heading.child_count, 0, "nothing is reported as unread");
        assert_eq!(heading.value, None);

        let para = &doc.children[1];
        assert_eq!(para.role, Role::Paragraph);
        assert_eq!(para.value.as_deref(), Some("Nothing has  happened yet."));
        assert!(para.children.is_empty());
        assert_eq!(para.child_count, 0);

        let mixed = &doc.children[2];
        assert_eq!(mixed.value, None, "hypertext with U+FFFC is its children");
        let kids: Vec<(Role, &str)> = mixed
            .children
            .iter()
            .map(|c| (c.role, c.name.as_str()))
            .collect();
        assert_eq!(
            kids,
            vec![
                (Role::Text, "Click"),
                (Role::Link, "here"),
                (Role::Text, "now.")
            ]
        );
        assert!(mixed.children[1].children.is_empty(), "link text folded");

        let labelled = &doc.children[3];
        assert_eq!(labelled.name, "Status");
        assert_eq!(
            labelled.children.len(),
            1,
            "text that differs from the name is kept"
        );
        assert_eq!(labelled.children[0].name, "Done");
    }

    #[test]
    fn incidental_actions_are_left_out() {
        let doc = assemble(&obj(1), &chromium_page()).unwrap();
        assert!(doc.actions.is_empty());
        assert!(
            doc.children[0].actions.is_empty(),
            "heading: doDefault only"
        );
        assert_eq!(
            doc.children[2].children[1].actions,
            vec!["jump".to_string()]
        );
        assert_eq!(doc.children[4].actions, vec!["press".to_string()]);
        assert!(doc.children[3].children[0].actions.is_empty());
        assert!(is_incidental_action("ShowContextMenu"));
        assert!(!is_incidental_action("click"));
    }

    #[test]
    fn static_text_folds_only_when_it_repeats_exactly() {
        let leaf = |name: &str| (code::STATIC, Node::new("s", Role::Text, name));
        assert!(folds_static_text("Done", None, &[leaf("Done")]));
        assert!(folds_static_text(
            "",
            Some("a  b"),
            &[leaf("a "), leaf(" b")]
        ));
        assert!(!folds_static_text("Done", None, &[leaf("Don")]));
        assert!(!folds_static_text("", None, &[leaf("x")]));
        assert!(!folds_static_text("", Some(""), &[leaf("")]));
        assert!(!folds_static_text("x", None, &[]));
        // A label (29) with the same text is a widget, not a text run.
        assert!(!folds_static_text(
            "Done",
            None,
            &[(29, Node::new("l", Role::Label, "Done"))]
        ));
        let nested =
            Node::new("s", Role::Text, "Done").children(vec![Node::new("t", Role::Text, "Done")]);
        assert!(!folds_static_text("Done", None, &[(code::STATIC, nested)]));
    }
}

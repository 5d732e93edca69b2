//! Names as toolkits should have reported them.
//!
//! Some toolkits fill the accessible name with something that is not a name: GTK 4
//! and libadwaita give unlabelled widgets their class name (`GtkMenuButton`,
//! `AdwGizmo`, an app's own `HistoryView`), and GTK 4.8 names a button after its
//! label twice (`"7 7"` over a label `"7"`). [`tidy_names`] undoes both on a whole
//! tree, once, where the driver assembles it, so observe, find and diff all see the
//! same names.

use crate::node::Node;

/// Toolkit prefixes of class names: `Gtk`, `Adw` (libadwaita), `Hdy` (libhandy),
/// `Gdk`, `Gsk`, `Vte`, `WebKit`, each followed by an upper-case letter.
const CLASS_PREFIXES: &[&str] = &["Gtk", "Adw", "Hdy", "Gdk", "Gsk", "Vte", "WebKit"];

/// Endings of widget class names that are not words of a label (`HistoryView`,
/// `AdwLeaflet`, `MathDisplayStack`).
const CLASS_SUFFIXES: &[&str] = &[
    "View", "Widget", "Gizmo", "Leaflet", "Bin", "Stack", "Grid", "Paned", "Revealer", "Overlay",
    "Popover", "Switcher", "Flap", "Squeezer",
];

/// True when `name` is a widget class name rather than a label: one ASCII word in
/// CamelCase with at least two capitals that starts with a toolkit prefix
/// ([`CLASS_PREFIXES`]) or ends with a widget ending ([`CLASS_SUFFIXES`]).
/// Ordinary brand words (`YouTube`, `LibreOffice`, `PayPal`) match neither.
pub fn is_class_name(name: &str) -> bool {
    let s = name.trim();
    if s.len() < 4 || s.len() > 64 || !s.chars().all(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    let capitals = s.chars().filter(char::is_ascii_uppercase).count();
    if capitals < 2 || !s.starts_with(|c: char| c.is_ascii_uppercase()) {
        return false;
    }
    let prefixed = CLASS_PREFIXES.iter().any(|p| {
        s.strip_prefix(p)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
    });
    let suffixed = CLASS_SUFFIXES
        .iter()
        .any(|x| s.len() > x.len() && s.ends_with(x));
    prefixed || suffixed
}

/// The one name that `name` repeats two or three times, separated by single spaces,
/// when that one name is `label`: `("7 7", "7")` → `"7"`. `None` otherwise.
fn repeated(name: &str, label: &str) -> Option<usize> {
    let label = label.trim();
    if label.is_empty() {
        return None;
    }
    (2..=3).find(|&k| name.trim() == vec![label; k].join(" "))
}

/// Tidies every name in `root`: a class name ([`is_class_name`]) becomes no name,
/// and a name that repeats the name of one of the node's descendants two or three
/// times (`button "7 7"` over `label "7"`) is said once. Values, descriptions and
/// everything else are left alone.
pub fn tidy_names(root: &mut Node) {
    for c in &mut root.children {
        tidy_names(c);
    }
    if is_class_name(&root.name) {
        root.name.clear();
        return;
    }
    if root.name.contains(' ')
        && let Some(label) = find_label(root, &root.name)
    {
        root.name = label;
    }
}

/// The name of a descendant of `n` that `name` repeats, if any.
fn find_label(n: &Node, name: &str) -> Option<String> {
    n.children.iter().find_map(|c| {
        if repeated(name, &c.name).is_some() {
            return Some(c.name.trim().to_owned());
        }
        find_label(c, name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::role::Role;

    #[test]
    fn class_names_are_not_names() {
        for n in [
            "GtkMenuButton",
            "AdwGizmo",
            "GtkBuiltinIcon",
            "GtkSourceView",
            "HistoryView",
            "AdwLeaflet",
        ] {
            assert!(is_class_name(n), "{n}");
        }
        for n in [
            "YouTube",
            "LibreOffice",
            "PayPal",
            "Save",
            "Gtk",
            "Gtkfoo",
            "View",
            "Preview",
            "Open View",
            "GitHub",
        ] {
            assert!(!is_class_name(n), "{n}");
        }
    }

    #[test]
    fn a_name_that_repeats_its_label_is_said_once() {
        let mut b = Node::new("h:b", Role::Button, "7 7").children(vec![Node::new(
            "h:l",
            Role::Label,
            "7",
        )]);
        tidy_names(&mut b);
        assert_eq!(b.name, "7");
        let mut b = Node::new("h:b", Role::Button, "mod mod").children(vec![
            Node::new("h:g", Role::Group, "").children(vec![Node::new("h:l", Role::Label, "mod")]),
        ]);
        tidy_names(&mut b);
        assert_eq!(b.name, "mod");
        // A name that is two different words, or a repetition no child says, stays.
        let mut b = Node::new("h:b", Role::Button, "Save As").children(vec![Node::new(
            "h:l",
            Role::Label,
            "Save",
        )]);
        tidy_names(&mut b);
        assert_eq!(b.name, "Save As");
        let mut b = Node::new("h:b", Role::Button, "go go");
        tidy_names(&mut b);
        assert_eq!(b.name, "go go");
    }

    #[test]
    fn class_names_are_cleared_in_the_whole_tree() {
        let mut w = Node::new("h:w", Role::Window, "Calculator").children(vec![
            Node::new("h:g", Role::Group, "AdwGizmo").children(vec![Node::new(
                "h:b",
                Role::Button,
                "GtkMenuButton",
            )]),
        ]);
        tidy_names(&mut w);
        assert_eq!(w.name, "Calculator");
        assert_eq!(w.children[0].name, "");
        assert_eq!(w.children[0].children[0].name, "");
    }
}

//! What a password manager marked on the clipboard (docs/ARCHITECTURE.md §7.20):
//! never pasted, never read, whatever the clipboard grant says. Pure: the host asks
//! the driver which targets a selection's owner offers and passes them here.

use deskpilot_protocol::types::{Selection, password_mark};
use deskpilot_protocol::{ComputerError, ErrorCode};

/// `COMPUTER_SECURE_INPUT` when `targets`, offered by the owner of `selection`,
/// mark its content as a password; `what` is the refused call ("pasting",
/// "reading the clipboard").
pub fn marked_refused(
    what: &str,
    selection: Selection,
    targets: &[String],
) -> Option<ComputerError> {
    let mark = password_mark(targets)?;
    let name = match selection {
        Selection::Clipboard => "the clipboard",
        Selection::Primary => "the primary selection (what a middle click or Shift+Insert pastes)",
    };
    Some(ComputerError::new(
        ErrorCode::SecureInput,
        format!(
            "{what} is refused: {name} holds a password — its owner marks it `{}`, as password managers do — and deskpilot never pastes or reads one, whatever the clipboard grant says. Let the user paste it, or copy something else first",
            deskpilot_core::sanitize::one_line(mark)
        ),
    ))
}

/// Labels of an app's own Paste control (menu item, button), folded
/// ([`crate::irreversible::fold`]): "Paste", "Paste Special…", "Paste as Plain Text",
/// and the same word in the languages deskpilot's other rules know.
const PASTE_WORDS: [&str; 8] = [
    "paste",
    "粘贴",
    "貼上",
    "einfügen",
    "coller",
    "pegar",
    "incolla",
    "вставить",
];

/// Whether activating `n` pastes: a menu item or button whose label is a Paste
/// word, alone or followed by a non-letter, however spelled (mnemonics, confusables, full-width forms). Such a
/// click is a paste, judged as `ctrl+v` is: the clipboard grant, and never a
/// password a password manager marked.
pub fn pastes_through(n: &deskpilot_core::Node) -> bool {
    use deskpilot_core::Role;
    // Commands only: a list row or a file named `paste.txt` is not one.
    if !matches!(n.role, Role::Menuitem | Role::Button) {
        return false;
    }
    let label = crate::irreversible::fold(&n.name);
    let label = label.trim();
    // The word itself, then nothing or a non-letter ("Paste Special", "粘贴(P)"),
    // never a longer word ("Pastel").
    PASTE_WORDS.iter().any(|w| {
        label
            .strip_prefix(crate::irreversible::fold(w).as_str())
            .is_some_and(|rest| rest.chars().next().is_none_or(|c| !c.is_alphabetic()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apps_own_paste_control_is_a_paste() {
        use deskpilot_core::{Node, Role};
        for (role, name) in [
            (Role::Menuitem, "_Paste"),
            (Role::Menuitem, "Paste Special…"),
            (Role::Button, "Ｐａｓｔｅ"),
            (Role::Menuitem, "粘贴(_P)"),
            (Role::Menuitem, "E_infügen"),
        ] {
            assert!(pastes_through(&Node::new("h", role, name)), "{name}");
        }
        for (role, name) in [
            (Role::Menuitem, "Copy"),
            (Role::Label, "Paste"),
            (Role::Menuitem, "Pastel colours"),
            (Role::Listitem, "paste.txt"),
            (Role::Checkbox, "Paste"),
        ] {
            assert!(!pastes_through(&Node::new("h", role, name)), "{name}");
        }
    }

    fn t(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_password_managers_mark_is_refused() {
        for mark in [
            "x-kde-passwordManagerHint",
            "X-KDE-PASSWORDMANAGERHINT",
            "application/x-nspasteboard-concealed-type",
            "org.nspasteboard.ConcealedType",
            "ExcludeClipboardContentFromMonitorProcessing",
        ] {
            let e = marked_refused(
                "pasting",
                Selection::Clipboard,
                &t(&["TARGETS", "UTF8_STRING", mark, "text/plain"]),
            )
            .unwrap_or_else(|| panic!("{mark} not refused"));
            assert_eq!(e.code, ErrorCode::SecureInput);
            assert!(e.message.contains("password"), "{}", e.message);
        }
    }

    #[test]
    fn an_unmarked_clipboard_is_not_refused() {
        for targets in [
            t(&[]),
            t(&["TARGETS", "UTF8_STRING", "TEXT", "STRING"]),
            t(&["text/plain", "x-kde-passwordManagerHintless"]),
        ] {
            assert!(marked_refused("pasting", Selection::Primary, &targets).is_none());
        }
    }
}

//! The unified role vocabulary (docs/ARCHITECTURE.md §3).
//!
//! Every platform keeps exactly one mapping table, platform code → [`Role`], in its
//! driver; anything the table does not know becomes [`Role::Unknown`]. Names follow
//! ARIA where ARIA has a word for the concept.

use serde::{Deserialize, Serialize};

/// A unified accessibility role. Serialized as its lowercase name (`"button"`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    Application,
    Window,
    Dialog,
    Alert,
    Button,
    Link,
    Textbox,
    Document,
    Checkbox,
    Radio,
    Combobox,
    List,
    Listitem,
    Tree,
    Treeitem,
    Table,
    Row,
    Cell,
    Columnheader,
    Tab,
    Tablist,
    Menu,
    Menuitem,
    Menubar,
    Toolbar,
    Slider,
    Spinbutton,
    Progressbar,
    Scrollbar,
    Image,
    Text,
    Heading,
    Label,
    Group,
    Statusbar,
    Tooltip,
    Separator,
    Paragraph,
    Section,
    #[default]
    Unknown,
}

impl Role {
    /// Every role, in declaration order. Used by tests and by schema generation.
    pub const ALL: [Role; 40] = [
        Role::Application,
        Role::Window,
        Role::Dialog,
        Role::Alert,
        Role::Button,
        Role::Link,
        Role::Textbox,
        Role::Document,
        Role::Checkbox,
        Role::Radio,
        Role::Combobox,
        Role::List,
        Role::Listitem,
        Role::Tree,
        Role::Treeitem,
        Role::Table,
        Role::Row,
        Role::Cell,
        Role::Columnheader,
        Role::Tab,
        Role::Tablist,
        Role::Menu,
        Role::Menuitem,
        Role::Menubar,
        Role::Toolbar,
        Role::Slider,
        Role::Spinbutton,
        Role::Progressbar,
        Role::Scrollbar,
        Role::Image,
        Role::Text,
        Role::Heading,
        Role::Label,
        Role::Group,
        Role::Statusbar,
        Role::Tooltip,
        Role::Separator,
        Role::Paragraph,
        Role::Section,
        Role::Unknown,
    ];

    /// The lowercase name used in snapshot text and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Application => "application",
            Role::Window => "window",
            Role::Dialog => "dialog",
            Role::Alert => "alert",
            Role::Button => "button",
            Role::Link => "link",
            Role::Textbox => "textbox",
            Role::Document => "document",
            Role::Checkbox => "checkbox",
            Role::Radio => "radio",
            Role::Combobox => "combobox",
            Role::List => "list",
            Role::Listitem => "listitem",
            Role::Tree => "tree",
            Role::Treeitem => "treeitem",
            Role::Table => "table",
            Role::Row => "row",
            Role::Cell => "cell",
            Role::Columnheader => "columnheader",
            Role::Tab => "tab",
            Role::Tablist => "tablist",
            Role::Menu => "menu",
            Role::Menuitem => "menuitem",
            Role::Menubar => "menubar",
            Role::Toolbar => "toolbar",
            Role::Slider => "slider",
            Role::Spinbutton => "spinbutton",
            Role::Progressbar => "progressbar",
            Role::Scrollbar => "scrollbar",
            Role::Image => "image",
            Role::Text => "text",
            Role::Heading => "heading",
            Role::Label => "label",
            Role::Group => "group",
            Role::Statusbar => "statusbar",
            Role::Tooltip => "tooltip",
            Role::Separator => "separator",
            Role::Paragraph => "paragraph",
            Role::Section => "section",
            Role::Unknown => "unknown",
        }
    }

    /// Parses the lowercase name ([`Role::as_str`]); `None` for anything else.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// Roles a user operates directly (click, type, toggle, select). The render budget
    /// keeps these before plain text and containers.
    pub fn is_interactive(self) -> bool {
        matches!(
            self,
            Role::Button
                | Role::Link
                | Role::Textbox
                | Role::Document
                | Role::Checkbox
                | Role::Radio
                | Role::Combobox
                | Role::Listitem
                | Role::Treeitem
                | Role::Cell
                | Role::Columnheader
                | Role::Tab
                | Role::Menuitem
                | Role::Slider
                | Role::Spinbutton
                | Role::Scrollbar
        )
    }

    /// Roles that exist to hold other elements; unnamed single-child ones are flattened.
    pub fn is_container(self) -> bool {
        matches!(
            self,
            Role::Group | Role::Section | Role::Unknown | Role::Paragraph | Role::Application
        )
    }

    /// Roles whose children form a list that the render truncates to the first N.
    pub fn is_list_like(self) -> bool {
        matches!(
            self,
            Role::List | Role::Tree | Role::Table | Role::Menu | Role::Tablist | Role::Combobox
        )
    }

    /// Top-level surfaces: a new one appearing after an action is snapshotted in full.
    pub fn is_window_like(self) -> bool {
        matches!(self, Role::Window | Role::Dialog | Role::Alert)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name in any case (`Button`, `textbox`): how the CLI's `--role` and the MCP
/// tools' `role` argument read one.
impl std::str::FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Role, UnknownRole> {
        Role::from_name(&s.to_lowercase()).ok_or_else(|| UnknownRole(s.to_string()))
    }
}

/// A name that is no role; its message lists the roles there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRole(pub String);

impl std::fmt::Display for UnknownRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} is not a role; roles: ", self.0)?;
        for (i, r) in Role::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(r.as_str())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownRole {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for r in Role::ALL {
            assert_eq!(Role::from_name(r.as_str()), Some(r));
            assert!(seen.insert(r.as_str()), "duplicate name {r}");
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
        assert_eq!(Role::from_name("Button"), None);
    }

    #[test]
    fn names_parse_in_any_case_and_an_unknown_one_lists_the_roles() {
        assert_eq!("Button".parse::<Role>(), Ok(Role::Button));
        assert_eq!("TEXTBOX".parse::<Role>(), Ok(Role::Textbox));
        let e = "spaceship".parse::<Role>().unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("\"spaceship\" is not a role; roles: application, window, "),
            "{msg}"
        );
        assert!(msg.ends_with(", section, unknown"), "{msg}");
    }
}

//! The Windows role tables (docs/ARCHITECTURE.md §3, §6b): UI Automation control
//! type ids, MSAA `ROLE_SYSTEM_*` codes and USER32 window classes → [`Role`].
//!
//! Owns every mapping of a Windows role vocabulary onto the unified one. A code a
//! table does not know becomes [`Role::Unknown`]; nothing is guessed from names. It
//! never calls the system: the tables are tested on every OS.

use deskpilot_core::Role;

/// The first UI Automation control type id (`UIA_ButtonControlTypeId`).
pub const UIA_FIRST_CONTROL_TYPE: i32 = 50_000;

/// Every UI Automation control type id from 50000 (`Button`) to 50040 (`AppBar`),
/// the ids `UIAutomationClient.h` defines (Windows 10 SDK), indexed by `id - 50000`,
/// with the unified role each maps to.
///
/// Choices worth a word: `Custom` (50025), `Pane` (50033), `Thumb` (50027),
/// `SemanticZoom` (50039) and `AppBar` (50040) are containers with no finer meaning,
/// so `group`; `DataGrid` (50028) is `table` and its `DataItem` (50029) a `row`;
/// `SplitButton` (50031) is a `button`; `TitleBar` (50037) is a `group` (its
/// buttons are listed inside it).
pub const CONTROL_TYPE_TABLE: [(&str, Role); 41] = [
    ("Button", Role::Button),           // 50000
    ("Calendar", Role::Table),          // 50001
    ("CheckBox", Role::Checkbox),       // 50002
    ("ComboBox", Role::Combobox),       // 50003
    ("Edit", Role::Textbox),            // 50004
    ("Hyperlink", Role::Link),          // 50005
    ("Image", Role::Image),             // 50006
    ("ListItem", Role::Listitem),       // 50007
    ("List", Role::List),               // 50008
    ("Menu", Role::Menu),               // 50009
    ("MenuBar", Role::Menubar),         // 50010
    ("MenuItem", Role::Menuitem),       // 50011
    ("ProgressBar", Role::Progressbar), // 50012
    ("RadioButton", Role::Radio),       // 50013
    ("ScrollBar", Role::Scrollbar),     // 50014
    ("Slider", Role::Slider),           // 50015
    ("Spinner", Role::Spinbutton),      // 50016
    ("StatusBar", Role::Statusbar),     // 50017
    ("Tab", Role::Tablist),             // 50018
    ("TabItem", Role::Tab),             // 50019
    ("Text", Role::Text),               // 50020
    ("ToolBar", Role::Toolbar),         // 50021
    ("ToolTip", Role::Tooltip),         // 50022
    ("Tree", Role::Tree),               // 50023
    ("TreeItem", Role::Treeitem),       // 50024
    ("Custom", Role::Group),            // 50025
    ("Group", Role::Group),             // 50026
    ("Thumb", Role::Group),             // 50027
    ("DataGrid", Role::Table),          // 50028
    ("DataItem", Role::Row),            // 50029
    ("Document", Role::Document),       // 50030
    ("SplitButton", Role::Button),      // 50031
    ("Window", Role::Window),           // 50032
    ("Pane", Role::Group),              // 50033
    ("Header", Role::Row),              // 50034
    ("HeaderItem", Role::Columnheader), // 50035
    ("Table", Role::Table),             // 50036
    ("TitleBar", Role::Group),          // 50037
    ("Separator", Role::Separator),     // 50038
    ("SemanticZoom", Role::Group),      // 50039
    ("AppBar", Role::Toolbar),          // 50040
];

/// Maps a UI Automation control type id; ids outside 50000–50040 are `Unknown`.
pub fn map_control_type(id: i32) -> Role {
    id.checked_sub(UIA_FIRST_CONTROL_TYPE)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| CONTROL_TYPE_TABLE.get(i))
        .map_or(Role::Unknown, |(_, r)| *r)
}

/// MSAA `ROLE_SYSTEM_CLIENT` (10): the generic client area of a window, which says
/// nothing about what the window is (Wine 8.0 gives it to every control but edits).
pub const MSAA_ROLE_CLIENT: i32 = 10;
/// MSAA `ROLE_SYSTEM_WINDOW` (9): a window frame, as generic as the client.
pub const MSAA_ROLE_WINDOW: i32 = 9;

/// Every MSAA role code from 1 (`ROLE_SYSTEM_TITLEBAR`) to 64
/// (`ROLE_SYSTEM_OUTLINEBUTTON`), as `oleacc.h` defines them, indexed by `code - 1`.
///
/// `client` (10), `window` (9), `pane` (16) and `grouping` (20) are containers, so
/// `group` and `window`; `text` (42) is an editable text, so `textbox`, and
/// `statictext` (41) is `text`; `outline` (35) is a tree; `droplist` (47) a combo box.
pub const MSAA_ROLE_TABLE: [(&str, Role); 64] = [
    ("titlebar", Role::Group),            // 1
    ("menubar", Role::Menubar),           // 2
    ("scrollbar", Role::Scrollbar),       // 3
    ("grip", Role::Unknown),              // 4
    ("sound", Role::Unknown),             // 5
    ("cursor", Role::Unknown),            // 6
    ("caret", Role::Unknown),             // 7
    ("alert", Role::Alert),               // 8
    ("window", Role::Window),             // 9
    ("client", Role::Group),              // 10
    ("menupopup", Role::Menu),            // 11
    ("menuitem", Role::Menuitem),         // 12
    ("tooltip", Role::Tooltip),           // 13
    ("application", Role::Application),   // 14
    ("document", Role::Document),         // 15
    ("pane", Role::Group),                // 16
    ("chart", Role::Image),               // 17
    ("dialog", Role::Dialog),             // 18
    ("border", Role::Unknown),            // 19
    ("grouping", Role::Group),            // 20
    ("separator", Role::Separator),       // 21
    ("toolbar", Role::Toolbar),           // 22
    ("statusbar", Role::Statusbar),       // 23
    ("table", Role::Table),               // 24
    ("columnheader", Role::Columnheader), // 25
    ("rowheader", Role::Cell),            // 26
    ("column", Role::Group),              // 27
    ("row", Role::Row),                   // 28
    ("cell", Role::Cell),                 // 29
    ("link", Role::Link),                 // 30
    ("helpballoon", Role::Tooltip),       // 31
    ("character", Role::Image),           // 32
    ("list", Role::List),                 // 33
    ("listitem", Role::Listitem),         // 34
    ("outline", Role::Tree),              // 35
    ("outlineitem", Role::Treeitem),      // 36
    ("pagetab", Role::Tab),               // 37
    ("propertypage", Role::Group),        // 38
    ("indicator", Role::Image),           // 39
    ("graphic", Role::Image),             // 40
    ("statictext", Role::Text),           // 41
    ("text", Role::Textbox),              // 42
    ("pushbutton", Role::Button),         // 43
    ("checkbutton", Role::Checkbox),      // 44
    ("radiobutton", Role::Radio),         // 45
    ("combobox", Role::Combobox),         // 46
    ("droplist", Role::Combobox),         // 47
    ("progressbar", Role::Progressbar),   // 48
    ("dial", Role::Slider),               // 49
    ("hotkeyfield", Role::Textbox),       // 50
    ("slider", Role::Slider),             // 51
    ("spinbutton", Role::Spinbutton),     // 52
    ("diagram", Role::Image),             // 53
    ("animation", Role::Image),           // 54
    ("equation", Role::Image),            // 55
    ("buttondropdown", Role::Button),     // 56
    ("buttonmenu", Role::Button),         // 57
    ("buttondropdowngrid", Role::Button), // 58
    ("whitespace", Role::Unknown),        // 59
    ("pagetablist", Role::Tablist),       // 60
    ("clock", Role::Text),                // 61
    ("splitbutton", Role::Button),        // 62
    ("ipaddress", Role::Textbox),         // 63
    ("outlinebutton", Role::Button),      // 64
];

/// Maps an MSAA role code; codes outside 1–64 are `Unknown`.
pub fn map_msaa_role(code: i32) -> Role {
    usize::try_from(code)
        .ok()
        .and_then(|c| c.checked_sub(1))
        .and_then(|i| MSAA_ROLE_TABLE.get(i))
        .map_or(Role::Unknown, |(_, r)| *r)
}

/// `BS_TYPEMASK` of a button's style: the kind of button.
const BS_TYPEMASK: u32 = 0x0f;

/// The role a standard USER32/comctl32 window class has, from its class name
/// (compared without case) and style; `None` for a class this table does not know.
///
/// Buttons by `BS_*` type: 2, 3, 5, 6 (check box, auto check box, three-state, auto
/// three-state) are check boxes, 4 and 9 (radio, auto radio) radios, 7 (group box)
/// a group, the rest push buttons.
pub fn class_role(class: &str, style: u32) -> Option<Role> {
    let c = class.to_ascii_lowercase();
    Some(match c.as_str() {
        "button" => match style & BS_TYPEMASK {
            2 | 3 | 5 | 6 => Role::Checkbox,
            4 | 9 => Role::Radio,
            7 => Role::Group,
            _ => Role::Button,
        },
        "edit" | "richedit20w" | "richedit50w" | "richedit20a" => Role::Textbox,
        "static" => Role::Label,
        "listbox" | "combolbox" => Role::List,
        "combobox" | "comboboxex32" => Role::Combobox,
        "scrollbar" => Role::Scrollbar,
        "msctls_statusbar32" => Role::Statusbar,
        "msctls_progress32" => Role::Progressbar,
        "msctls_trackbar32" => Role::Slider,
        "msctls_updown32" => Role::Spinbutton,
        "systreeview32" => Role::Tree,
        "syslistview32" => Role::List,
        "sysheader32" => Role::Row,
        "systabcontrol32" => Role::Tablist,
        "toolbarwindow32" => Role::Toolbar,
        "tooltips_class32" => Role::Tooltip,
        "syslink" => Role::Link,
        "#32770" => Role::Dialog,
        "#32768" => Role::Menu,
        _ => return None,
    })
}

/// The role of one window: the MSAA role when it says more than "a client area"
/// or "a window", else the window class's, else `group` for an unknown class that
/// holds other controls and `unknown` for one that does not.
pub fn control_role(class: &str, style: u32, msaa_role: Option<i32>, has_children: bool) -> Role {
    if let Some(code) = msaa_role.filter(|c| *c != MSAA_ROLE_CLIENT && *c != MSAA_ROLE_WINDOW) {
        let r = map_msaa_role(code);
        if r != Role::Unknown {
            return r;
        }
    }
    class_role(class, style).unwrap_or(if has_children {
        Role::Group
    } else {
        Role::Unknown
    })
}

/// A top-level window's role: `dialog` for the dialog class (`#32770`), else `window`.
pub fn toplevel_role(class: &str) -> Role {
    if class == "#32770" {
        Role::Dialog
    } else {
        Role::Window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks every UI Automation control type id 50000–50040 and one past each end.
    #[test]
    fn every_uia_control_type_maps() {
        let known = [
            (50000, Role::Button),
            (50002, Role::Checkbox),
            (50003, Role::Combobox),
            (50004, Role::Textbox),
            (50007, Role::Listitem),
            (50008, Role::List),
            (50009, Role::Menu),
            (50010, Role::Menubar),
            (50011, Role::Menuitem),
            (50013, Role::Radio),
            (50020, Role::Text),
            (50032, Role::Window),
            (50033, Role::Group),
            (50040, Role::Toolbar),
        ];
        for id in 50_000..=50_040 {
            let role = map_control_type(id);
            let (name, want) = CONTROL_TYPE_TABLE[(id - 50_000) as usize];
            assert_eq!(role, want, "{id} {name}");
            assert!(!name.is_empty());
            if let Some((_, r)) = known.iter().find(|(k, _)| *k == id) {
                assert_eq!(role, *r, "{id} {name}");
            }
        }
        assert_eq!(map_control_type(49_999), Role::Unknown);
        assert_eq!(map_control_type(50_041), Role::Unknown);
        assert_eq!(map_control_type(i32::MIN), Role::Unknown);
        assert_eq!(map_control_type(i32::MAX), Role::Unknown);
    }

    #[test]
    fn every_msaa_role_maps() {
        for code in 1..=64 {
            let (name, want) = MSAA_ROLE_TABLE[(code - 1) as usize];
            assert_eq!(map_msaa_role(code), want, "{code} {name}");
        }
        assert_eq!(map_msaa_role(42), Role::Textbox);
        assert_eq!(map_msaa_role(43), Role::Button);
        assert_eq!(map_msaa_role(0), Role::Unknown);
        assert_eq!(map_msaa_role(65), Role::Unknown);
        assert_eq!(map_msaa_role(-1), Role::Unknown);
    }

    #[test]
    fn classes_refine_a_generic_client_role() {
        // Wine 8.0's MSAA says `client` for a button; the class and style decide.
        assert_eq!(control_role("Button", 0, Some(10), false), Role::Button);
        assert_eq!(control_role("Button", 3, Some(10), false), Role::Checkbox);
        assert_eq!(control_role("Button", 9, Some(10), false), Role::Radio);
        assert_eq!(control_role("Button", 7, Some(10), false), Role::Group);
        assert_eq!(control_role("Edit", 0, Some(42), false), Role::Textbox);
        assert_eq!(control_role("ListBox", 0, Some(10), false), Role::List);
        assert_eq!(control_role("ComboBox", 3, Some(10), false), Role::Combobox);
        assert_eq!(control_role("Static", 0, Some(10), false), Role::Label);
        assert_eq!(
            control_role("msctls_statusbar32", 0, Some(10), false),
            Role::Statusbar
        );
        // A specific MSAA role wins over the class (a real Windows proxy).
        assert_eq!(control_role("Button", 0, Some(44), false), Role::Checkbox);
        assert_eq!(control_role("MyWidget", 0, Some(10), true), Role::Group);
        assert_eq!(control_role("MyWidget", 0, None, false), Role::Unknown);
        assert_eq!(toplevel_role("#32770"), Role::Dialog);
        assert_eq!(toplevel_role("Notepad"), Role::Window);
    }
}

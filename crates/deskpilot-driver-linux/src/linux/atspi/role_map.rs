//! The one AT-SPI role → deskpilot [`Role`] table (docs/ARCHITECTURE.md §3).
//!
//! Owns the mapping of every AT-SPI role code (0 ..= 129 in at-spi2-core 2.46, the
//! codes of `atspi::Role`) onto the unified vocabulary. A code this table does not
//! know (a newer at-spi2-core) becomes [`Role::Unknown`]; nothing is ever guessed from
//! names. It must never look at states or context: the two context rules (a submenu
//! opener shown as `menuitem`, a password field's state) live in the tree assembly
//! and the state map.

use atspi::Role as A;
use deskpilot_core::Role;

/// Every AT-SPI role, indexed by its wire code, with the unified role it maps to.
///
/// Choices worth a word: `text` (61) is GTK's text view and entry, so `textbox`;
/// `static` (116) is Chromium's plain text, so `text`; `editbar` (77) is the formula
/// input line of LibreOffice, so `textbox`; `tree table` (66) is GTK's list and tree
/// view with columns, read through `Table`, so `table`; row headers become `cell`
/// (the vocabulary has no row header); `toggle button` stays `button` with `checked`.
pub const ROLE_TABLE: [(A, Role); 130] = [
    (A::Invalid, Role::Unknown),                // 0
    (A::AcceleratorLabel, Role::Label),         // 1
    (A::Alert, Role::Alert),                    // 2
    (A::Animation, Role::Image),                // 3
    (A::Arrow, Role::Image),                    // 4
    (A::Calendar, Role::Table),                 // 5
    (A::Canvas, Role::Image),                   // 6
    (A::CheckBox, Role::Checkbox),              // 7
    (A::CheckMenuItem, Role::Menuitem),         // 8
    (A::ColorChooser, Role::Group),             // 9
    (A::ColumnHeader, Role::Columnheader),      // 10
    (A::ComboBox, Role::Combobox),              // 11
    (A::DateEditor, Role::Textbox),             // 12
    (A::DesktopIcon, Role::Button),             // 13
    (A::DesktopFrame, Role::Window),            // 14
    (A::Dial, Role::Slider),                    // 15
    (A::Dialog, Role::Dialog),                  // 16
    (A::DirectoryPane, Role::Group),            // 17
    (A::DrawingArea, Role::Image),              // 18
    (A::FileChooser, Role::Group),              // 19
    (A::Filler, Role::Group),                   // 20
    (A::FocusTraversable, Role::Group),         // 21
    (A::FontChooser, Role::Group),              // 22
    (A::Frame, Role::Window),                   // 23
    (A::GlassPane, Role::Group),                // 24
    (A::HTMLContainer, Role::Document),         // 25
    (A::Icon, Role::Image),                     // 26
    (A::Image, Role::Image),                    // 27
    (A::InternalFrame, Role::Window),           // 28
    (A::Label, Role::Label),                    // 29
    (A::LayeredPane, Role::Group),              // 30
    (A::List, Role::List),                      // 31
    (A::ListItem, Role::Listitem),              // 32
    (A::Menu, Role::Menu),                      // 33
    (A::MenuBar, Role::Menubar),                // 34
    (A::MenuItem, Role::Menuitem),              // 35
    (A::OptionPane, Role::Group),               // 36
    (A::PageTab, Role::Tab),                    // 37
    (A::PageTabList, Role::Tablist),            // 38
    (A::Panel, Role::Group),                    // 39
    (A::PasswordText, Role::Textbox),           // 40
    (A::PopupMenu, Role::Menu),                 // 41
    (A::ProgressBar, Role::Progressbar),        // 42
    (A::Button, Role::Button),                  // 43
    (A::RadioButton, Role::Radio),              // 44
    (A::RadioMenuItem, Role::Menuitem),         // 45
    (A::RootPane, Role::Group),                 // 46
    (A::RowHeader, Role::Cell),                 // 47
    (A::ScrollBar, Role::Scrollbar),            // 48
    (A::ScrollPane, Role::Group),               // 49
    (A::Separator, Role::Separator),            // 50
    (A::Slider, Role::Slider),                  // 51
    (A::SpinButton, Role::Spinbutton),          // 52
    (A::SplitPane, Role::Group),                // 53
    (A::StatusBar, Role::Statusbar),            // 54
    (A::Table, Role::Table),                    // 55
    (A::TableCell, Role::Cell),                 // 56
    (A::TableColumnHeader, Role::Columnheader), // 57
    (A::TableRowHeader, Role::Cell),            // 58
    (A::TearoffMenuItem, Role::Menuitem),       // 59
    (A::Terminal, Role::Textbox),               // 60
    (A::Text, Role::Textbox),                   // 61
    (A::ToggleButton, Role::Button),            // 62
    (A::ToolBar, Role::Toolbar),                // 63
    (A::ToolTip, Role::Tooltip),                // 64
    (A::Tree, Role::Tree),                      // 65
    (A::TreeTable, Role::Table),                // 66
    (A::Unknown, Role::Unknown),                // 67
    (A::Viewport, Role::Group),                 // 68
    (A::Window, Role::Window),                  // 69
    (A::Extended, Role::Unknown),               // 70
    (A::Header, Role::Section),                 // 71
    (A::Footer, Role::Section),                 // 72
    (A::Paragraph, Role::Paragraph),            // 73
    (A::Ruler, Role::Unknown),                  // 74
    (A::Application, Role::Application),        // 75
    (A::Autocomplete, Role::Combobox),          // 76
    (A::Editbar, Role::Textbox),                // 77
    (A::Embedded, Role::Group),                 // 78
    (A::Entry, Role::Textbox),                  // 79
    (A::CHART, Role::Image),                    // 80
    (A::Caption, Role::Label),                  // 81
    (A::DocumentFrame, Role::Document),         // 82
    (A::Heading, Role::Heading),                // 83
    (A::Page, Role::Section),                   // 84
    (A::Section, Role::Section),                // 85
    (A::RedundantObject, Role::Unknown),        // 86
    (A::Form, Role::Section),                   // 87
    (A::Link, Role::Link),                      // 88
    (A::InputMethodWindow, Role::Window),       // 89
    (A::TableRow, Role::Row),                   // 90
    (A::TreeItem, Role::Treeitem),              // 91
    (A::DocumentSpreadsheet, Role::Document),   // 92
    (A::DocumentPresentation, Role::Document),  // 93
    (A::DocumentText, Role::Document),          // 94
    (A::DocumentWeb, Role::Document),           // 95
    (A::DocumentEmail, Role::Document),         // 96
    (A::Comment, Role::Section),                // 97
    (A::ListBox, Role::List),                   // 98
    (A::Grouping, Role::Group),                 // 99
    (A::ImageMap, Role::Image),                 // 100
    (A::Notification, Role::Alert),             // 101
    (A::InfoBar, Role::Alert),                  // 102
    (A::LevelBar, Role::Progressbar),           // 103
    (A::TitleBar, Role::Group),                 // 104
    (A::BlockQuote, Role::Section),             // 105
    (A::Audio, Role::Group),                    // 106
    (A::Video, Role::Group),                    // 107
    (A::Definition, Role::Paragraph),           // 108
    (A::Article, Role::Section),                // 109
    (A::Landmark, Role::Section),               // 110
    (A::Log, Role::Section),                    // 111
    (A::Marquee, Role::Section),                // 112
    (A::Math, Role::Text),                      // 113
    (A::Rating, Role::Slider),                  // 114
    (A::Timer, Role::Text),                     // 115
    (A::Static, Role::Text),                    // 116
    (A::MathFraction, Role::Text),              // 117
    (A::MathRoot, Role::Text),                  // 118
    (A::Subscript, Role::Text),                 // 119
    (A::Superscript, Role::Text),               // 120
    (A::DescriptionList, Role::List),           // 121
    (A::DescriptionTerm, Role::Listitem),       // 122
    (A::DescriptionValue, Role::Paragraph),     // 123
    (A::Footnote, Role::Paragraph),             // 124
    (A::ContentDeletion, Role::Text),           // 125
    (A::ContentInsertion, Role::Text),          // 126
    (A::Mark, Role::Text),                      // 127
    (A::Suggestion, Role::Group),               // 128
    (A::PushButtonMenu, Role::Button),          // 129
];

/// The role reported for a top-level accessible (a child of the application root).
///
/// A top-level is always a window-like surface: toolkits give self-contained dialogs
/// the role of their content (GTK 3's Save As dialog is a `file chooser`, mapped to
/// [`Role::Group`] inside a window), so a top-level whose unified role is not
/// window-like is reported as a [`Role::Dialog`]. Tooltips and alerts keep their role.
pub fn toplevel_role(role: Role) -> Role {
    if role.is_window_like() || role == Role::Tooltip {
        role
    } else {
        Role::Dialog
    }
}

/// Maps an AT-SPI role code as it arrives on the wire (`u` in `GetRole` and
/// `Cache.GetItems`). Unknown codes map to [`Role::Unknown`].
pub fn map_role_code(code: u32) -> Role {
    ROLE_TABLE
        .get(code as usize)
        .map(|(_, r)| *r)
        .unwrap_or(Role::Unknown)
}

#[cfg(test)]
/// Maps a typed AT-SPI role.
pub fn map_role(role: A) -> Role {
    map_role_code(role as u32)
}

/// AT-SPI role codes the driver tests for directly.
pub mod code {
    #[cfg(test)]
    pub const CHECK_BOX: u32 = 7;
    pub const CHECK_MENU_ITEM: u32 = 8;
    pub const FRAME: u32 = 23;
    pub const MENU: u32 = 33;
    pub const MENU_ITEM: u32 = 35;
    pub const MENU_BAR: u32 = 34;
    pub const PASSWORD_TEXT: u32 = 40;
    #[cfg(test)]
    pub const RADIO_BUTTON: u32 = 44;
    pub const RADIO_MENU_ITEM: u32 = 45;
    pub const LIST: u32 = 31;
    pub const LIST_ITEM: u32 = 32;
    pub const TREE: u32 = 65;
    pub const TREE_ITEM: u32 = 91;
    pub const LIST_BOX: u32 = 98;
    #[cfg(test)]
    pub const TABLE: u32 = 55;
    pub const TABLE_CELL: u32 = 56;
    pub const TOGGLE_BUTTON: u32 = 62;
    #[cfg(test)]
    pub const TREE_TABLE: u32 = 66;
    pub const APPLICATION: u32 = 75;
    #[cfg(test)]
    pub const DOCUMENT_SPREADSHEET: u32 = 92;
    /// Chromium's run of plain text inside a block (a heading, a paragraph, a link).
    pub const STATIC: u32 = 116;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks every code `atspi::Role` knows, in wire order, and one past the end:
    /// the table must cover each exactly once, at its own index.
    #[test]
    fn table_covers_every_atspi_role_in_order() {
        for (i, (atspi_role, _)) in ROLE_TABLE.iter().enumerate() {
            let code = i as u32;
            let parsed = A::try_from(code).expect("atspi knows every code in the table");
            assert_eq!(parsed, *atspi_role, "table row {i} is out of order");
            assert_eq!(*atspi_role as u32, code);
            assert_eq!(map_role(parsed), map_role_code(code));
        }
        let past_end = ROLE_TABLE.len() as u32;
        assert!(
            A::try_from(past_end).is_err(),
            "atspi::Role gained code {past_end}: add it to ROLE_TABLE"
        );
        assert_eq!(map_role_code(past_end), Role::Unknown);
        assert_eq!(map_role_code(u32::MAX), Role::Unknown);
    }

    #[test]
    fn common_widgets_map_to_their_unified_role() {
        let cases = [
            (A::Frame, Role::Window),
            (A::Dialog, Role::Dialog),
            (A::Button, Role::Button),
            (A::ToggleButton, Role::Button),
            (A::CheckBox, Role::Checkbox),
            (A::RadioButton, Role::Radio),
            (A::Text, Role::Textbox),
            (A::Entry, Role::Textbox),
            (A::PasswordText, Role::Textbox),
            (A::MenuBar, Role::Menubar),
            (A::Menu, Role::Menu),
            (A::MenuItem, Role::Menuitem),
            (A::CheckMenuItem, Role::Menuitem),
            (A::Table, Role::Table),
            (A::TreeTable, Role::Table),
            (A::TableCell, Role::Cell),
            (A::DocumentSpreadsheet, Role::Document),
            (A::Static, Role::Text),
            (A::Label, Role::Label),
            (A::Application, Role::Application),
            (A::Invalid, Role::Unknown),
        ];
        for (a, want) in cases {
            assert_eq!(map_role(a), want, "{a:?}");
        }
    }

    #[test]
    fn named_codes_match_atspi() {
        use code::*;
        let pairs = [
            (CHECK_BOX, A::CheckBox),
            (CHECK_MENU_ITEM, A::CheckMenuItem),
            (FRAME, A::Frame),
            (MENU, A::Menu),
            (MENU_BAR, A::MenuBar),
            (PASSWORD_TEXT, A::PasswordText),
            (RADIO_BUTTON, A::RadioButton),
            (RADIO_MENU_ITEM, A::RadioMenuItem),
            (TABLE, A::Table),
            (TABLE_CELL, A::TableCell),
            (TOGGLE_BUTTON, A::ToggleButton),
            (TREE_TABLE, A::TreeTable),
            (APPLICATION, A::Application),
            (DOCUMENT_SPREADSHEET, A::DocumentSpreadsheet),
        ];
        for (c, a) in pairs {
            assert_eq!(c, a as u32, "{a:?}");
        }
    }
}

#[cfg(test)]
mod toplevel_tests {
    use super::*;

    #[test]
    fn a_top_level_file_chooser_is_a_dialog() {
        assert_eq!(toplevel_role(map_role(A::FileChooser)), Role::Dialog);
        assert_eq!(toplevel_role(map_role(A::Frame)), Role::Window);
        assert_eq!(toplevel_role(map_role(A::Dialog)), Role::Dialog);
        assert_eq!(toplevel_role(map_role(A::Alert)), Role::Alert);
        assert_eq!(toplevel_role(map_role(A::ToolTip)), Role::Tooltip);
    }
}

//! The one AX role (+ subrole) → deskpilot [`Role`] table (docs/ARCHITECTURE.md §3, §6c).
//!
//! Owns the mapping of every role string Apple documents — the `kAX…Role` defines of
//! HIServices' `AXRoleConstants.h` (macOS 12 SDK) and the two roles AppKit adds in
//! `NSAccessibilityConstants.h` (`AXLink`, `AXPage`) — plus WebKit's `AXWebArea`, onto
//! the unified vocabulary, and the few subroles that change the unified role. A role
//! string this table does not know becomes [`Role::Unknown`]; nothing is guessed from
//! names. Pure: it never calls the Accessibility API.

use deskpilot_core::Role;

/// Every AX role string Apple documents, in the order of `AXRoleConstants.h`, then
/// AppKit's additions, then WebKit's web area. The role test walks this list.
pub const APPLE_ROLES: [&str; 61] = [
    // AXRoleConstants.h, "Standard Roles".
    "AXApplication",
    "AXSystemWide",
    "AXWindow",
    "AXSheet",
    "AXDrawer",
    "AXGrowArea",
    "AXImage",
    "AXUnknown",
    "AXButton",
    "AXRadioButton",
    "AXCheckBox",
    "AXPopUpButton",
    "AXMenuButton",
    "AXTabGroup",
    "AXTable",
    "AXColumn",
    "AXRow",
    "AXOutline",
    "AXBrowser",
    "AXScrollArea",
    "AXScrollBar",
    "AXRadioGroup",
    "AXList",
    "AXGroup",
    "AXValueIndicator",
    "AXComboBox",
    "AXSlider",
    "AXIncrementor",
    "AXBusyIndicator",
    "AXProgressIndicator",
    "AXRelevanceIndicator",
    "AXToolbar",
    "AXDisclosureTriangle",
    "AXTextField",
    "AXTextArea",
    "AXStaticText",
    "AXHeading",
    "AXMenuBar",
    "AXMenuBarItem",
    "AXMenu",
    "AXMenuItem",
    "AXSplitGroup",
    "AXSplitter",
    "AXColorWell",
    "AXTimeField",
    "AXDateField",
    "AXHelpTag",
    "AXMatte",
    "AXDockItem",
    "AXRuler",
    "AXRulerMarker",
    "AXGrid",
    "AXLevelIndicator",
    "AXCell",
    "AXLayoutArea",
    "AXLayoutItem",
    "AXHandle",
    "AXPopover",
    // NSAccessibilityConstants.h (AppKit): NSAccessibilityLinkRole, NSAccessibilityPageRole.
    "AXLink",
    "AXPage",
    // WebKit's document role (Safari, WKWebView, and Chromium, which copies it).
    "AXWebArea",
];

/// The role table: AX role string → unified role, ignoring subroles.
///
/// Choices worth a word: `AXPopUpButton` is a `combobox` (it shows one choice of a
/// list, as a GTK combo box does); `AXIncrementor` (a stepper) is a `spinbutton`;
/// `AXRow` is a `row` and becomes `treeitem` under the `AXOutlineRow` subrole;
/// `AXOutline` and `AXBrowser` (column view) are `tree`; `AXSheet` and `AXPopover`
/// are `dialog`; `AXColumn` is a `group` (its cells are read through the rows; the
/// walk does not descend into columns); `AXValueIndicator` (a scroll bar's or
/// slider's thumb), `AXGrowArea`, `AXHandle`, `AXRuler` and `AXRulerMarker` have no
/// unified counterpart and stay `unknown`.
pub fn map_role(role: &str) -> Role {
    match role {
        "AXApplication" => Role::Application,
        "AXWindow" => Role::Window,
        "AXSheet" | "AXPopover" => Role::Dialog,
        "AXDrawer" | "AXScrollArea" | "AXRadioGroup" | "AXGroup" | "AXSplitGroup" | "AXMatte"
        | "AXLayoutArea" | "AXLayoutItem" | "AXColumn" => Role::Group,
        "AXImage" => Role::Image,
        "AXButton" | "AXMenuButton" | "AXDisclosureTriangle" | "AXColorWell" | "AXDockItem" => {
            Role::Button
        }
        "AXRadioButton" => Role::Radio,
        "AXCheckBox" => Role::Checkbox,
        "AXPopUpButton" | "AXComboBox" => Role::Combobox,
        "AXTabGroup" => Role::Tablist,
        "AXTable" | "AXGrid" => Role::Table,
        "AXRow" => Role::Row,
        "AXOutline" | "AXBrowser" => Role::Tree,
        "AXScrollBar" => Role::Scrollbar,
        "AXList" => Role::List,
        "AXSlider" => Role::Slider,
        "AXIncrementor" => Role::Spinbutton,
        "AXBusyIndicator" | "AXProgressIndicator" | "AXRelevanceIndicator" | "AXLevelIndicator" => {
            Role::Progressbar
        }
        "AXToolbar" => Role::Toolbar,
        "AXTextField" | "AXTextArea" | "AXTimeField" | "AXDateField" => Role::Textbox,
        "AXStaticText" => Role::Text,
        "AXHeading" => Role::Heading,
        "AXMenuBar" => Role::Menubar,
        "AXMenuBarItem" | "AXMenuItem" => Role::Menuitem,
        "AXMenu" => Role::Menu,
        "AXSplitter" => Role::Separator,
        "AXHelpTag" => Role::Tooltip,
        "AXCell" => Role::Cell,
        "AXLink" => Role::Link,
        "AXPage" => Role::Section,
        "AXWebArea" => Role::Document,
        // AXSystemWide, AXUnknown, AXGrowArea, AXValueIndicator, AXRuler,
        // AXRulerMarker, AXHandle, and any role a later macOS adds.
        _ => Role::Unknown,
    }
}

/// The unified role of an element from its AX role and subrole: [`map_role`], refined
/// by the subroles that say more than the role (from `AXRoleConstants.h`, and the web
/// subroles WebKit gives `AXGroup`):
///
/// - `AXWindow` + `AXDialog` / `AXSystemDialog` → `dialog`;
/// - `AXRadioButton` + `AXTabButton` → `tab` (AppKit's tab view and window tab bar);
/// - `AXButton` + `AXToggle` stays `button` (its value says `checked`), `AXCheckBox` +
///   `AXSwitch` stays `checkbox`;
/// - `AXRow` + `AXOutlineRow` → `treeitem`;
/// - `AXLevelIndicator` + `AXRatingIndicator` → `slider`;
/// - `AXGroup` + `AXApplicationAlert` / `AXApplicationAlertDialog` → `alert`,
///   `AXApplicationDialog` → `dialog`, `AXApplicationStatus` → `statusbar`,
///   `AXDocumentArticle` and every `AXLandmark…` → `section`, `AXTabPanel` stays
///   `group`.
pub fn map_role_subrole(role: &str, subrole: Option<&str>) -> Role {
    let base = map_role(role);
    let Some(sub) = subrole else {
        return base;
    };
    match (role, sub) {
        ("AXWindow", "AXDialog" | "AXSystemDialog") => Role::Dialog,
        ("AXRadioButton", "AXTabButton") => Role::Tab,
        ("AXRow", "AXOutlineRow") => Role::Treeitem,
        ("AXLevelIndicator", "AXRatingIndicator") => Role::Slider,
        ("AXGroup", "AXApplicationAlert" | "AXApplicationAlertDialog") => Role::Alert,
        ("AXGroup", "AXApplicationDialog") => Role::Dialog,
        ("AXGroup", "AXApplicationStatus") => Role::Statusbar,
        ("AXGroup", "AXDocumentArticle") => Role::Section,
        ("AXGroup", s) if s.starts_with("AXLandmark") => Role::Section,
        _ => base,
    }
}

/// The role reported for a window of an application (an element of its `AXWindows`):
/// always window-like. A window whose AX role is not `AXWindow` (a floating panel
/// reporting its content's role) is reported as a [`Role::Dialog`]; help tags keep
/// [`Role::Tooltip`].
pub fn toplevel_role(role: Role) -> Role {
    if role.is_window_like() || role == Role::Tooltip {
        role
    } else {
        Role::Dialog
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Walks every role Apple documents: each maps to the role the table states, the
    /// list has no duplicate, and only the roles with no counterpart are `unknown`.
    #[test]
    fn every_documented_role_maps_to_its_stated_role() {
        let expected: [(&str, Role); 61] = [
            ("AXApplication", Role::Application),
            ("AXSystemWide", Role::Unknown),
            ("AXWindow", Role::Window),
            ("AXSheet", Role::Dialog),
            ("AXDrawer", Role::Group),
            ("AXGrowArea", Role::Unknown),
            ("AXImage", Role::Image),
            ("AXUnknown", Role::Unknown),
            ("AXButton", Role::Button),
            ("AXRadioButton", Role::Radio),
            ("AXCheckBox", Role::Checkbox),
            ("AXPopUpButton", Role::Combobox),
            ("AXMenuButton", Role::Button),
            ("AXTabGroup", Role::Tablist),
            ("AXTable", Role::Table),
            ("AXColumn", Role::Group),
            ("AXRow", Role::Row),
            ("AXOutline", Role::Tree),
            ("AXBrowser", Role::Tree),
            ("AXScrollArea", Role::Group),
            ("AXScrollBar", Role::Scrollbar),
            ("AXRadioGroup", Role::Group),
            ("AXList", Role::List),
            ("AXGroup", Role::Group),
            ("AXValueIndicator", Role::Unknown),
            ("AXComboBox", Role::Combobox),
            ("AXSlider", Role::Slider),
            ("AXIncrementor", Role::Spinbutton),
            ("AXBusyIndicator", Role::Progressbar),
            ("AXProgressIndicator", Role::Progressbar),
            ("AXRelevanceIndicator", Role::Progressbar),
            ("AXToolbar", Role::Toolbar),
            ("AXDisclosureTriangle", Role::Button),
            ("AXTextField", Role::Textbox),
            ("AXTextArea", Role::Textbox),
            ("AXStaticText", Role::Text),
            ("AXHeading", Role::Heading),
            ("AXMenuBar", Role::Menubar),
            ("AXMenuBarItem", Role::Menuitem),
            ("AXMenu", Role::Menu),
            ("AXMenuItem", Role::Menuitem),
            ("AXSplitGroup", Role::Group),
            ("AXSplitter", Role::Separator),
            ("AXColorWell", Role::Button),
            ("AXTimeField", Role::Textbox),
            ("AXDateField", Role::Textbox),
            ("AXHelpTag", Role::Tooltip),
            ("AXMatte", Role::Group),
            ("AXDockItem", Role::Button),
            ("AXRuler", Role::Unknown),
            ("AXRulerMarker", Role::Unknown),
            ("AXGrid", Role::Table),
            ("AXLevelIndicator", Role::Progressbar),
            ("AXCell", Role::Cell),
            ("AXLayoutArea", Role::Group),
            ("AXLayoutItem", Role::Group),
            ("AXHandle", Role::Unknown),
            ("AXPopover", Role::Dialog),
            ("AXLink", Role::Link),
            ("AXPage", Role::Section),
            ("AXWebArea", Role::Document),
        ];
        let mut seen = HashSet::new();
        for (i, role) in APPLE_ROLES.iter().enumerate() {
            assert!(seen.insert(*role), "{role} is listed twice");
            assert_eq!(
                expected[i].0, *role,
                "the expectations are out of order at {i}"
            );
            assert_eq!(map_role(role), expected[i].1, "{role}");
            assert_eq!(map_role_subrole(role, None), expected[i].1, "{role}");
        }
        let unknown: Vec<&str> = APPLE_ROLES
            .iter()
            .copied()
            .filter(|r| map_role(r) == Role::Unknown)
            .collect();
        assert_eq!(
            unknown,
            [
                "AXSystemWide",
                "AXGrowArea",
                "AXUnknown",
                "AXValueIndicator",
                "AXRuler",
                "AXRulerMarker",
                "AXHandle"
            ]
        );
    }

    #[test]
    fn a_role_string_the_table_does_not_know_is_unknown() {
        for r in ["", "AXSpaceship", "axbutton", "Button", "AXButton "] {
            assert_eq!(map_role(r), Role::Unknown, "{r:?}");
        }
    }

    #[test]
    fn subroles_refine_only_where_stated() {
        let cases = [
            ("AXWindow", "AXStandardWindow", Role::Window),
            ("AXWindow", "AXDialog", Role::Dialog),
            ("AXWindow", "AXSystemDialog", Role::Dialog),
            ("AXWindow", "AXFloatingWindow", Role::Window),
            ("AXRadioButton", "AXTabButton", Role::Tab),
            ("AXButton", "AXToggle", Role::Button),
            ("AXButton", "AXCloseButton", Role::Button),
            ("AXCheckBox", "AXSwitch", Role::Checkbox),
            ("AXRow", "AXOutlineRow", Role::Treeitem),
            ("AXRow", "AXTableRow", Role::Row),
            ("AXTextField", "AXSecureTextField", Role::Textbox),
            ("AXTextField", "AXSearchField", Role::Textbox),
            ("AXLevelIndicator", "AXRatingIndicator", Role::Slider),
            ("AXGroup", "AXApplicationAlert", Role::Alert),
            ("AXGroup", "AXApplicationDialog", Role::Dialog),
            ("AXGroup", "AXApplicationStatus", Role::Statusbar),
            ("AXGroup", "AXLandmarkNavigation", Role::Section),
            ("AXGroup", "AXDocumentArticle", Role::Section),
            ("AXGroup", "AXTabPanel", Role::Group),
            // A subrole on a role it does not belong to changes nothing.
            ("AXButton", "AXOutlineRow", Role::Button),
            ("AXSpaceship", "AXDialog", Role::Unknown),
        ];
        for (role, sub, want) in cases {
            assert_eq!(map_role_subrole(role, Some(sub)), want, "{role} + {sub}");
        }
    }

    #[test]
    fn a_top_level_is_always_window_like() {
        assert_eq!(toplevel_role(Role::Window), Role::Window);
        assert_eq!(toplevel_role(Role::Dialog), Role::Dialog);
        assert_eq!(toplevel_role(Role::Tooltip), Role::Tooltip);
        assert_eq!(toplevel_role(Role::Group), Role::Dialog);
        assert_eq!(toplevel_role(Role::Unknown), Role::Dialog);
    }
}

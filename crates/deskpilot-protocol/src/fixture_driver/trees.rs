//! The recorded windows of [`super::FixtureDriver::desktop`], drawn in their docs.
//! The editor's main window is the engine's shared fixture,
//! `deskpilot_core::fixture::editor_window()`.

use deskpilot_core::{Bounds, Node, Role, State};

/// The editor's second window in [`super::FixtureDriver::desktop`], a preferences
/// dialog with the controls the shared editor tree lacks:
///
/// ```text
/// dialog "Preferences"                            prefs/w1   (200,150 400×300)
/// ├─ checkbox "Word wrap" (toggle) [focusable]    prefs/wrap
/// ├─ slider "Zoom" value="100" [focusable]        prefs/zoom
/// ├─ list "Theme"                                 prefs/theme
/// │  ├─ listitem "Light" [selected]               prefs/theme/0
/// │  └─ listitem "Dark"                           prefs/theme/1
/// ├─ treeitem "Advanced" [collapsed]              prefs/advanced
/// ├─ button "Apply" (click) [disabled]            prefs/apply
/// └─ button "Close" (click)                       prefs/close
/// ```
pub fn preferences_window() -> Node {
    let b = |x, y, w, h| Bounds::new(x, y, w, h);
    Node::new("prefs/w1", Role::Dialog, "Preferences")
        .bounds(b(200, 150, 400, 300))
        .children(vec![
            Node::new("prefs/wrap", Role::Checkbox, "Word wrap")
                .state(State::Focusable)
                .actions(&["toggle"])
                .bounds(b(210, 160, 120, 20)),
            Node::new("prefs/zoom", Role::Slider, "Zoom")
                .value("100")
                .state(State::Focusable)
                .bounds(b(210, 190, 200, 20)),
            Node::new("prefs/theme", Role::List, "Theme")
                .bounds(b(210, 220, 200, 40))
                .children(vec![
                    Node::new("prefs/theme/0", Role::Listitem, "Light")
                        .state(State::Selected)
                        .bounds(b(210, 220, 200, 20)),
                    Node::new("prefs/theme/1", Role::Listitem, "Dark").bounds(b(210, 240, 200, 20)),
                ]),
            Node::new("prefs/advanced", Role::Treeitem, "Advanced")
                .state(State::Collapsed)
                .bounds(b(210, 270, 200, 20)),
            Node::new("prefs/apply", Role::Button, "Apply")
                .actions(&["click"])
                .state(State::Disabled)
                .bounds(b(420, 410, 80, 24)),
            Node::new("prefs/close", Role::Button, "Close")
                .actions(&["click"])
                .bounds(b(510, 410, 80, 24)),
        ])
}

/// The calculator window of [`super::FixtureDriver::desktop`]:
///
/// ```text
/// window "Calculator"                 gnome-calculator/w1   (900,100 300×400)
/// ├─ text "Result" value="0"          gnome-calculator/display
/// ├─ button "7" (click)               gnome-calculator/7
/// ├─ button "Add" (click)             gnome-calculator/add
/// └─ button "Equals" (click)          gnome-calculator/equals
/// ```
pub fn calculator_window() -> Node {
    let b = |x, y, w, h| Bounds::new(x, y, w, h);
    Node::new("gnome-calculator/w1", Role::Window, "Calculator")
        .bounds(b(900, 100, 300, 400))
        .children(vec![
            Node::new("gnome-calculator/display", Role::Text, "Result")
                .value("0")
                .bounds(b(900, 100, 300, 60)),
            Node::new("gnome-calculator/7", Role::Button, "7")
                .actions(&["click"])
                .bounds(b(900, 170, 60, 60)),
            Node::new("gnome-calculator/add", Role::Button, "Add")
                .actions(&["click"])
                .bounds(b(970, 170, 60, 60)),
            Node::new("gnome-calculator/equals", Role::Button, "Equals")
                .actions(&["click"])
                .bounds(b(1040, 170, 60, 60)),
        ])
}

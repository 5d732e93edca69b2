//! What the Windows driver reads about a window, before it becomes a [`Node`] tree
//! (docs/ARCHITECTURE.md §6b), and the pure assembly of that tree.
//!
//! The reading side (`win::read`, Windows only) fills these records from USER32
//! (window classes, texts, styles, rectangles, list and menu contents) and MSAA
//! (`IAccessible` of each window's client); [`assemble`] turns them into nodes with
//! unified roles and states. Assembly makes no system call, so it is tested on every
//! OS. Geometry: every rectangle is in physical screen pixels (the driver's process
//! is per-monitor DPI aware), origin top-left of the primary screen.

use deskpilot_core::{Bounds, Node, Role, State, StateSet};

use crate::handle::{ElementRef, Target};
use crate::role_map::{control_role, toplevel_role};
use crate::state_map::{msaa_states, style_states};

/// What MSAA (`IAccessible` of a window's `OBJID_CLIENT`, child `CHILDID_SELF`)
/// answered; `None` for each call that failed (Wine 8.0 answers every control).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MsaaFacts {
    pub name: Option<String>,
    pub role: Option<i32>,
    pub state: Option<u32>,
    pub value: Option<String>,
    pub default_action: Option<String>,
    /// `accLocation`, screen pixels.
    pub location: Option<Bounds>,
}

/// One item of a list box or combo box (`LB_GETTEXT` / `CB_GETLBTEXT`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemFacts {
    pub index: u32,
    pub text: String,
    pub selected: bool,
    /// `LB_GETITEMRECT` mapped to the screen; `None` for an item not shown.
    pub bounds: Option<Bounds>,
}

/// The items of a list box or combo box: the first ones read and how many exist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemList {
    pub total: u64,
    pub items: Vec<ItemFacts>,
    /// A combo box whose list is not dropped down: its items are not on screen.
    pub hidden: bool,
}

/// One child window (a control) and the controls inside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControlFacts {
    pub hwnd: usize,
    pub class: String,
    /// `WM_GETTEXT`, at most the driver's text cap.
    pub text: String,
    /// The text's whole length in characters when `text` holds only its head.
    pub text_length: Option<u64>,
    pub style: u32,
    /// `GetWindowRect`, screen pixels.
    pub rect: Bounds,
    /// The control has keyboard focus in its thread (`GetGUIThreadInfo`).
    pub focused: bool,
    /// `BM_GETCHECK` of a check box or radio: 1 checked, 2 indeterminate.
    pub checked: Option<u32>,
    pub msaa: Option<MsaaFacts>,
    pub items: Option<ItemList>,
    pub children: Vec<ControlFacts>,
    /// Child windows that exist, read or not (more than `children.len()` when capped).
    pub children_total: u64,
}

/// One menu item (`GetMenuItemInfoW`, `GetMenuStringW`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MenuItemFacts {
    /// 0-based positions from the menu bar.
    pub path: Vec<u32>,
    /// The item's text with its `&` mnemonic marks removed and its accelerator
    /// (after a Tab) kept, as `Save &As...\tCtrl+S` reads `Save As...  Ctrl+S`.
    pub text: String,
    /// The text as the menu holds it, `&` marks included (for the mnemonic).
    pub raw_text: String,
    /// The command id `WM_COMMAND` carries (0 for a submenu opener).
    pub id: u32,
    pub separator: bool,
    pub disabled: bool,
    pub checked: bool,
    /// The item is highlighted (`MFS_HILITE`): on the menu bar, its menu is open.
    pub hilite: bool,
    /// `GetMenuItemRect`, screen pixels; `None` when its menu is not shown.
    pub bounds: Option<Bounds>,
    /// The items of its submenu, when it opens one.
    pub submenu: Option<Vec<MenuItemFacts>>,
}

/// One top-level window as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowFacts {
    pub hwnd: usize,
    pub class: String,
    pub title: String,
    pub style: u32,
    pub rect: Bounds,
    /// It is the foreground window.
    pub active: bool,
    /// The window's thread is in a menu loop (`GUI_INMENUMODE`).
    pub in_menu: bool,
    pub msaa: Option<MsaaFacts>,
    pub menu: Option<Vec<MenuItemFacts>>,
    /// The window has a menu bar whose items this process cannot read (Wine 8.0
    /// answers `GetMenuItemCount` of another process's menu with -1).
    pub menu_unreadable: bool,
    pub children: Vec<ControlFacts>,
    pub children_total: u64,
}

/// What a menu bar that cannot be read says of itself.
pub const UNREADABLE_MENU: &str = "menu items not readable from another process on this system (Wine 8.0); open a menu with keys, e.g. alt+f";

/// Counts of a read for `WalkStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub objects: u64,
    pub capped: u64,
}

/// Builds the window's node tree: the window, its menu bar (first), then its
/// controls in Z order. Items of list boxes and combo boxes become `listitem`
/// children; menu items `menuitem` children of their opener.
pub fn assemble(w: &WindowFacts) -> (Node, Counts) {
    let mut counts = Counts::default();
    let top = w.hwnd;
    let mut root = Node {
        handle: ElementRef {
            top,
            target: Target::Window,
        }
        .to_handle(),
        role: toplevel_role(&w.class),
        name: w.title.clone(),
        bounds: Some(w.rect),
        ..Node::default()
    };
    let mut st = style_states(&w.class, w.style);
    st.remove(State::Focusable);
    if w.active {
        st.insert(State::Focused);
    }
    root.states = st;
    counts.objects += 1;
    if let Some(menu) = &w.menu {
        let mut bar = Node {
            handle: ElementRef {
                top,
                target: Target::MenuBar,
            }
            .to_handle(),
            role: Role::Menubar,
            bounds: menu_bar_bounds(menu),
            ..Node::default()
        };
        bar.children = menu
            .iter()
            .filter_map(|m| menu_node(top, m, true, &mut counts))
            .collect();
        bar.child_count = bar.children.len() as u64;
        counts.objects += 1;
        root.children.push(bar);
    }
    if w.menu_unreadable {
        counts.objects += 1;
        root.children.push(Node {
            handle: ElementRef {
                top,
                target: Target::MenuBar,
            }
            .to_handle(),
            role: Role::Menubar,
            description: Some(UNREADABLE_MENU.into()),
            ..Node::default()
        });
    }
    for c in &w.children {
        root.children
            .push(control_node(top, c, w.rect, &mut counts));
    }
    root.child_count =
        root.children.len() as u64 + w.children_total.saturating_sub(w.children.len() as u64);
    counts.capped += w.children_total.saturating_sub(w.children.len() as u64);
    (root, counts)
}

fn menu_bar_bounds(items: &[MenuItemFacts]) -> Option<Bounds> {
    let rects: Vec<Bounds> = items.iter().filter_map(|m| m.bounds).collect();
    let first = rects.first()?;
    let (mut x0, mut y0, mut x1, mut y1) = (
        first.x,
        first.y,
        first.x + first.width,
        first.y + first.height,
    );
    for r in &rects {
        x0 = x0.min(r.x);
        y0 = y0.min(r.y);
        x1 = x1.max(r.x + r.width);
        y1 = y1.max(r.y + r.height);
    }
    Some(Bounds::new(x0, y0, x1 - x0, y1 - y0))
}

/// A menu item's node; separators are left out. `shown`: its menu is on screen.
fn menu_node(top: usize, m: &MenuItemFacts, shown: bool, counts: &mut Counts) -> Option<Node> {
    if m.separator {
        return None;
    }
    counts.objects += 1;
    let mut n = Node {
        handle: ElementRef {
            top,
            target: Target::MenuItem(m.path.clone()),
        }
        .to_handle(),
        role: Role::Menuitem,
        name: m.text.clone(),
        bounds: m.bounds.filter(|_| shown),
        ..Node::default()
    };
    let mut st = StateSet::empty();
    if !shown {
        st.insert(State::Offscreen);
    }
    if m.disabled {
        st.insert(State::Disabled);
    }
    if m.checked {
        st.insert(State::Checked);
    }
    n.actions.push("click".into());
    if let Some(sub) = &m.submenu {
        let open = m.hilite && sub.iter().any(|s| s.bounds.is_some());
        st.insert(if open {
            State::Expanded
        } else {
            State::Collapsed
        });
        n.actions.push("expand".into());
        n.children = sub
            .iter()
            .filter_map(|s| menu_node(top, s, shown && open, counts))
            .collect();
        n.child_count = n.children.len() as u64;
    }
    n.states = st;
    Some(n)
}

fn control_node(top: usize, c: &ControlFacts, window: Bounds, counts: &mut Counts) -> Node {
    counts.objects += 1;
    let msaa = c.msaa.clone().unwrap_or_default();
    let role = control_role(&c.class, c.style, msaa.role, !c.children.is_empty());
    let mut states = style_states(&c.class, c.style);
    if let Some(bits) = msaa.state {
        let m = msaa_states(bits);
        for s in m.iter() {
            // The style is the truth for visibility and enabling; MSAA adds the rest.
            if !matches!(s, State::Offscreen | State::Disabled) {
                states.insert(s);
            }
        }
    }
    if c.focused {
        states.insert(State::Focused);
    }
    match c.checked {
        Some(1) => states.insert(State::Checked),
        Some(_) => states.remove(State::Checked),
        None => {}
    }
    if c.rect.is_empty() || !c.rect.intersects(&window) {
        states.insert(State::Offscreen);
    }
    let is_edit = c.class.eq_ignore_ascii_case("edit");
    let is_combo = role == Role::Combobox;
    // A name: MSAA's (an edit's comes from the label before it), else the text of a
    // control whose text is its caption (not an edit's contents).
    let name = match msaa.name.filter(|n| !n.is_empty()) {
        Some(n) if !(is_edit && n == c.text) => n,
        _ if is_edit || is_combo => String::new(),
        _ => c.text.clone(),
    };
    let value = if is_edit {
        Some(c.text.clone())
    } else if is_combo {
        Some(c.text.clone()).filter(|t| !t.is_empty()).or_else(|| {
            c.items
                .as_ref()
                .and_then(|l| l.items.iter().find(|i| i.selected))
                .map(|i| i.text.clone())
        })
    } else {
        msaa.value.filter(|v| !v.is_empty())
    };
    let mut actions = Vec::new();
    if let Some(a) = msaa.default_action.filter(|a| !a.is_empty()) {
        actions.push(a);
    } else if matches!(role, Role::Button | Role::Checkbox | Role::Radio) {
        actions.push("click".into());
    }
    let mut n = Node {
        handle: ElementRef {
            top,
            target: Target::Control(c.hwnd),
        }
        .to_handle(),
        role,
        name,
        value,
        states,
        actions,
        bounds: Some(c.rect),
        value_length: if is_edit { c.text_length } else { None },
        ..Node::default()
    };
    if let Some(list) = &c.items {
        for it in &list.items {
            counts.objects += 1;
            let mut st = StateSet::empty();
            if it.selected {
                st.insert(State::Selected);
            }
            if list.hidden || it.bounds.is_none() {
                st.insert(State::Offscreen);
            }
            n.children.push(Node {
                handle: ElementRef {
                    top,
                    target: Target::Item(c.hwnd, it.index),
                }
                .to_handle(),
                role: Role::Listitem,
                name: it.text.clone(),
                states: st,
                actions: vec!["select".into()],
                bounds: it.bounds,
                ..Node::default()
            });
        }
        n.child_count = list.total;
        counts.capped += list.total.saturating_sub(list.items.len() as u64);
    }
    for child in &c.children {
        n.children.push(control_node(top, child, window, counts));
    }
    if c.items.is_none() {
        n.child_count = c.children_total.max(c.children.len() as u64);
        counts.capped += c.children_total.saturating_sub(c.children.len() as u64);
    }
    n
}

/// Strips a menu text's `&` mnemonic marks (`&&` is a literal `&`) and shows a
/// Tab before an accelerator as two spaces.
pub fn menu_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' if chars.peek() == Some(&'&') => {
                out.push('&');
                chars.next();
            }
            '&' => {}
            '\t' => out.push_str("  "),
            c => out.push(c),
        }
    }
    out
}

/// The mnemonic character of a menu text (`&File` → `f`), lowercased.
pub fn mnemonic(raw: &str) -> Option<char> {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '&' {
            match chars.next() {
                Some('&') => continue,
                Some(m) => return m.to_lowercase().next(),
                None => return None,
            }
        }
    }
    None
}

/// The centre of a rectangle, screen pixels.
pub fn centre(b: &Bounds) -> (i32, i32) {
    (b.x + b.width / 2, b.y + b.height / 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_map::style::{WS_TABSTOP, WS_VISIBLE};

    /// The test app as Wine 8.0 shows it: a window with a menu bar, a button, a
    /// check box, a label, an edit named by that label, and a list box.
    ///
    /// ```text
    /// window "deskpilot test app"
    ///   menubar
    ///     menuitem "File" (collapsed) > New, Open..., Exit
    ///   button "Press me"
    ///   checkbox "Remember me" (checked)
    ///   label "Name:"
    ///   textbox "Name:" value "hi"
    ///   list > listitem "Apple", listitem "Banana" (selected), 1 more
    /// ```
    fn fixture() -> WindowFacts {
        let vis = WS_VISIBLE | WS_TABSTOP;
        let r = |x, y| Bounds::new(x, y, 100, 20);
        let client = |role: i32, name: &str| MsaaFacts {
            name: Some(name.into()),
            role: Some(role),
            state: Some(0x100000),
            ..MsaaFacts::default()
        };
        let item = |path: Vec<u32>, text: &str, id| MenuItemFacts {
            path,
            text: text.into(),
            id,
            ..MenuItemFacts::default()
        };
        WindowFacts {
            hwnd: 0x100,
            class: "DeskpilotTestApp".into(),
            title: "deskpilot test app".into(),
            style: WS_VISIBLE,
            rect: Bounds::new(0, 0, 400, 300),
            active: true,
            menu: Some(vec![MenuItemFacts {
                path: vec![0],
                text: "File".into(),
                bounds: Some(Bounds::new(4, 22, 30, 18)),
                submenu: Some(vec![
                    item(vec![0, 0], "New", 101),
                    item(vec![0, 1], "Open...", 102),
                    MenuItemFacts {
                        path: vec![0, 2],
                        separator: true,
                        ..MenuItemFacts::default()
                    },
                    item(vec![0, 3], "Exit", 103),
                ]),
                ..MenuItemFacts::default()
            }]),
            children: vec![
                ControlFacts {
                    hwnd: 0x101,
                    class: "Button".into(),
                    text: "Press me".into(),
                    style: vis,
                    rect: r(10, 50),
                    msaa: Some(client(10, "Press me")),
                    ..ControlFacts::default()
                },
                ControlFacts {
                    hwnd: 0x102,
                    class: "Button".into(),
                    text: "Remember me".into(),
                    style: vis | 3,
                    rect: r(120, 50),
                    checked: Some(1),
                    msaa: Some(client(10, "Remember me")),
                    ..ControlFacts::default()
                },
                ControlFacts {
                    hwnd: 0x103,
                    class: "Static".into(),
                    text: "Name:".into(),
                    style: WS_VISIBLE,
                    rect: r(10, 80),
                    msaa: Some(client(10, "Name:")),
                    ..ControlFacts::default()
                },
                ControlFacts {
                    hwnd: 0x104,
                    class: "Edit".into(),
                    text: "hi".into(),
                    style: vis,
                    rect: r(80, 80),
                    focused: true,
                    msaa: Some(client(42, "Name:")),
                    ..ControlFacts::default()
                },
                ControlFacts {
                    hwnd: 0x105,
                    class: "ListBox".into(),
                    style: vis,
                    rect: r(10, 110),
                    msaa: Some(client(10, "")),
                    items: Some(ItemList {
                        total: 3,
                        items: vec![
                            ItemFacts {
                                index: 0,
                                text: "Apple".into(),
                                selected: false,
                                bounds: Some(r(10, 110)),
                            },
                            ItemFacts {
                                index: 1,
                                text: "Banana".into(),
                                selected: true,
                                bounds: Some(r(10, 130)),
                            },
                        ],
                        hidden: false,
                    }),
                    ..ControlFacts::default()
                },
            ],
            children_total: 5,
            ..WindowFacts::default()
        }
    }

    #[test]
    fn the_test_app_assembles_with_roles_states_and_handles() {
        let (root, counts) = assemble(&fixture());
        assert_eq!(root.handle.as_str(), "hwnd:0x100");
        assert_eq!(root.role, Role::Window);
        assert!(root.states.contains(State::Focused));
        let kinds: Vec<(Role, &str)> = root
            .children
            .iter()
            .map(|n| (n.role, n.name.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (Role::Menubar, ""),
                (Role::Button, "Press me"),
                (Role::Checkbox, "Remember me"),
                (Role::Label, "Name:"),
                (Role::Textbox, "Name:"),
                (Role::List, ""),
            ]
        );
        let file = &root.children[0].children[0];
        assert_eq!((file.role, file.name.as_str()), (Role::Menuitem, "File"));
        assert!(file.states.contains(State::Collapsed));
        assert_eq!(file.children.len(), 3, "the separator is left out");
        assert!(
            file.children
                .iter()
                .all(|c| c.states.contains(State::Offscreen))
        );
        assert_eq!(file.children[2].handle.as_str(), "w32:0x100/menu/0.3");
        assert!(root.children[2].states.contains(State::Checked));
        let edit = &root.children[4];
        assert_eq!(edit.value.as_deref(), Some("hi"));
        assert!(edit.states.contains(State::Editable) && edit.states.contains(State::Focused));
        assert_eq!(edit.handle.as_str(), "w32:0x100/0x104");
        let list = &root.children[5];
        assert_eq!(list.child_count, 3);
        assert_eq!(list.children.len(), 2);
        assert_eq!(list.children[1].handle.as_str(), "w32:0x100/0x105#1");
        assert!(list.children[1].states.contains(State::Selected));
        assert_eq!(counts.capped, 1, "the list's third item was not read");
        assert_eq!(counts.objects, 1 + 1 + 4 + 5 + 2);
    }

    #[test]
    fn an_open_menu_shows_its_items() {
        let mut w = fixture();
        let file = &mut w.menu.as_mut().unwrap()[0];
        file.hilite = true;
        for (i, s) in file.submenu.as_mut().unwrap().iter_mut().enumerate() {
            s.bounds = Some(Bounds::new(4, 40 + 20 * i as i32, 80, 20));
        }
        let (root, _) = assemble(&w);
        let file = &root.children[0].children[0];
        assert!(file.states.contains(State::Expanded));
        assert!(
            file.children
                .iter()
                .all(|c| !c.states.contains(State::Offscreen))
        );
    }

    #[test]
    fn menu_texts_lose_their_marks() {
        assert_eq!(menu_text("Save &As...\tCtrl+S"), "Save As...  Ctrl+S");
        assert_eq!(menu_text("Fish && &Chips"), "Fish & Chips");
        assert_eq!(mnemonic("&File"), Some('f'));
        assert_eq!(mnemonic("Fish && &Chips"), Some('c'));
        assert_eq!(mnemonic("Plain"), None);
        assert_eq!(centre(&Bounds::new(10, 20, 100, 40)), (60, 40));
    }
}

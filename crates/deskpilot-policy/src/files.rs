//! Where an app may be made to write a file (docs/ARCHITECTURE.md §7.21): a save
//! dialog recognised by what it shows, the path its Save would write, and whether
//! that path lies in a place the user allowed.
//!
//! Owns the rules only: the host reads the dialog's tree, measures where symbolic
//! links lead (the one I/O of this rule, [`FilePlaces::judge`] takes it as a fact)
//! and refuses. Nothing here reads the file system or the environment.
//!
//! - [`save_dialog`]: a window is a save dialog when it shows a "Save" button, a
//!   single-line name field and a path bar (GTK's file chooser; any app).
//! - [`SaveDialog::target`]: the path a Save writes — the name field's text when it
//!   is a full path (`/…`, `~/…`), else the dialog's current folder joined with it.
//! - [`FilePlaces::judge`]: refused always — autostart directories, shell start-up
//!   files, any dot file or dot directory under the home directory, deskpilot's own
//!   directories; refused unless inside an allowed root — everything else, judged on
//!   the path as written and on where its links lead.
//! - [`only_escape`], [`cancels`]: backing out of a dialog, never refused for what
//!   the dialog shows.

use deskpilot_core::{Node, Role, State};

use crate::irreversible::fold;

/// Shell start-up files, refused wherever they are (a file of that name in an
/// allowed folder is still one a shell may be pointed at).
pub const SHELL_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    "config.fish",
];

/// Directories whose files the desktop runs at log-in or on a schedule, outside the
/// home directory's dot directories: the system's autostart directory.
pub const SYSTEM_AUTOSTART: &[&str] = &["/etc/xdg/autostart"];

/// The places apps may be made to write files, and the ones never written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilePlaces {
    /// Allowed roots, absolute (the config's `allow_files`, the documents folder, the
    /// temporary directory, a task's work folder) as written and as their links
    /// resolve: a path must lie under one of them.
    pub allowed: Vec<String>,
    /// The user's home directory, absolute: dot files and dot directories under it
    /// are refused, and `~/` in a name means it.
    pub home: Option<String>,
    /// The home directory as its links resolve, when that differs (`/home` a link
    /// to `/usr/home`): a path resolved through a link is judged against it.
    pub home_resolved: Option<String>,
    /// Further directories never written (deskpilot's own, `$XDG_CONFIG_HOME`'s
    /// `autostart`), absolute.
    pub refused: Vec<String>,
}

/// Why a path may not be written, as a sentence naming the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceRefusal {
    /// The path judged (as resolved when its links lead elsewhere).
    pub path: String,
    /// What rule it breaks.
    pub why: String,
}

/// `path` made absolute-looking and lexically clean: `.` dropped, `a/..` resolved,
/// repeated `/` collapsed, no trailing `/`. `/` stays `/`.
pub fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `path` is `root` or lies under it (whole components; both clean).
pub fn under(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    root.is_empty() || path == root || path.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
}

impl FilePlaces {
    /// Why the file at `written` (absolute, as the dialog would write it) may not be
    /// written, or `None` when it may. `resolved` is the same path with every
    /// symbolic link of it resolved (measured by the caller: the deepest existing
    /// part canonicalised, the rest appended); both must pass.
    pub fn judge(&self, written: &str, resolved: &str) -> Option<PlaceRefusal> {
        self.judge_both(written, resolved, true)
    }

    /// [`FilePlaces::judge`] for a name still being typed (`~/Doc` on the way to
    /// `~/Documents/a.txt`): only the places never written are refused, since the
    /// path is not yet where it will end; the Save is judged in full.
    pub fn judge_typing(&self, written: &str, resolved: &str) -> Option<PlaceRefusal> {
        self.judge_both(written, resolved, false)
    }

    fn judge_both(&self, written: &str, resolved: &str, complete: bool) -> Option<PlaceRefusal> {
        let written = clean(written);
        let resolved = clean(resolved);
        self.judge_one(&written, false, complete)
            .or_else(|| (resolved != written).then(|| self.judge_one(&resolved, true, complete))?)
    }

    fn judge_one(&self, path: &str, through_link: bool, complete: bool) -> Option<PlaceRefusal> {
        let refuse = |why: String| {
            let why = if through_link {
                format!("a symbolic link on the way leads there: {why}")
            } else {
                why
            };
            Some(PlaceRefusal {
                path: path.to_owned(),
                why,
            })
        };
        let file = path.rsplit('/').next().unwrap_or_default();
        if SHELL_FILES.contains(&file) {
            return refuse(format!(
                "{file} is a shell start-up file: what it holds runs in every shell"
            ));
        }
        let homes = [self.home.as_deref(), self.home_resolved.as_deref()];
        let in_dot = homes
            .into_iter()
            .flatten()
            .map(clean)
            .filter(|h| h != "/")
            .filter_map(|h| {
                path.strip_prefix(h.as_str())
                    .filter(|r| r.starts_with('/'))
                    .map(str::to_owned)
            })
            .any(|rest| rest.split('/').any(|c| c.starts_with('.')));
        if in_dot {
            return refuse(
                "dot files and dot directories in the home directory hold programs' settings and start-up files (autostart entries, shell profiles)".into(),
            );
        }
        let autostart = SYSTEM_AUTOSTART.iter().map(|s| (*s).to_owned());
        if let Some(d) = self
            .refused
            .iter()
            .map(|d| clean(d))
            .chain(autostart)
            .find(|d| under(path, d))
        {
            return refuse(format!(
                "{d} is never written by an app deskpilot drives (deskpilot's own files or an autostart directory)"
            ));
        }
        if complete && !self.allowed.iter().any(|r| under(path, &clean(r))) {
            return refuse("it is outside every folder apps may be made to write files in".into());
        }
        None
    }
}

/// A save dialog as read from its window's tree.
#[derive(Debug, Clone, Copy)]
pub struct SaveDialog<'a> {
    /// The button that saves ("Save", or the one beside Cancel).
    pub save: &'a Node,
    /// The single-line field holding the file's name.
    pub name: &'a Node,
    /// The path bar: the buttons naming the current folder and its parents.
    pub bar: &'a Node,
}

/// Whether `n` is a single-line text field that takes text and is on screen.
fn name_field(n: &Node) -> bool {
    matches!(n.role, Role::Textbox | Role::Combobox)
        && n.has(State::Editable)
        && !n.has(State::Multiline)
        && !n.has(State::Offscreen)
        && !n.has(State::Password)
}

/// Whether `n` is a button whose label is Save (any spelling [`fold`] meets),
/// enabled or not (GTK disables it while the name is empty).
fn save_button(n: &Node) -> bool {
    n.role == Role::Button && label_is(&n.name, &["save", "保存", "儲存"])
}

/// The button that accepts dialog `root`: one labelled Save, else the named
/// button beside its Cancel button (the action area of GTK's, Qt's and Windows'
/// dialogs holds the two), whatever it is called ("OK", "Select", "Export").
fn accept_button(root: &Node) -> Option<&Node> {
    root.walk().find(|n| save_button(n)).or_else(|| {
        root.walk().find_map(|p| {
            if !p.children.iter().any(cancels) {
                return None;
            }
            p.children
                .iter()
                .find(|c| c.role == Role::Button && !cancels(c) && !c.name.trim().is_empty())
        })
    })
}

/// Whether `label`, folded ([`fold`]), is one of `words` folded the same way.
fn label_is(label: &str, words: &[&str]) -> bool {
    let l = fold(label);
    words.iter().any(|w| fold(w) == l.trim())
}

/// GTK's path bar sliders, which scroll the bar and name no folder.
const BAR_SLIDERS: [&str; 2] = ["Up Path", "Down Path"];

/// The path bar's folder buttons, in the tree's order.
fn folder_buttons(bar: &Node) -> impl Iterator<Item = &Node> {
    bar.children.iter().filter(|c| {
        matches!(c.role, Role::Button | Role::Checkbox) && !BAR_SLIDERS.contains(&c.name.as_str())
    })
}

/// The path bar of a file chooser: a group of two or more buttons, one of which is
/// checked (the current folder) — GTK's `GtkPathBar`.
fn path_bar(n: &Node) -> bool {
    folder_buttons(n).any(|c| c.has(State::Checked))
}

/// The save dialog `root` is, if it is one: a single-line name field, a path bar
/// and the button that accepts it ([`accept_button`]: "Save", or whatever the
/// button beside Cancel is called — zenity's "OK"), wherever they are in the tree
/// (recognised by what the window shows, never by the app's name).
pub fn save_dialog(root: &Node) -> Option<SaveDialog<'_>> {
    // A dialog window: an app's main window with a Save button on its toolbar, a
    // one-line field and a group of toggle buttons (LibreOffice) is not one.
    if root.role != Role::Dialog {
        return None;
    }
    let save = accept_button(root)?;
    let name = root
        .walk()
        .filter(|n| name_field(n))
        .max_by_key(|n| n.has(State::Focused))?;
    let bar = root.walk().find(|n| path_bar(n))?;
    Some(SaveDialog { save, name, bar })
}

impl SaveDialog<'_> {
    /// The dialog's current folder, absolute, from its path bar: the checked
    /// button and the buttons on its root side, joined. The root-most button is
    /// `/` when it names the file system, the home directory when it names it (GTK
    /// starts the bar there for folders under it). `None` when the bar cannot be
    /// read as a path.
    pub fn folder(&self, home: Option<&str>) -> Option<String> {
        bar_folder(self.bar, home)
    }

    /// The path a Save would write with `text` in the name field: `text` itself when
    /// it is a full path (`/…`; `~` and `~/…` mean `home`), else the current folder
    /// ([`SaveDialog::folder`]) joined with it. `None` when `text` is blank, or the
    /// folder is needed and cannot be read.
    pub fn target(&self, text: &str, home: Option<&str>) -> Option<String> {
        let text = text.trim_matches(['\n', '\r']);
        if text.trim().is_empty() {
            return None;
        }
        // A URI (`file:///…`) or a %-escaped name may name any place once the
        // toolkit decodes it: its path is not judged as written, so it is unknown.
        let escaped = text
            .as_bytes()
            .windows(3)
            .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit());
        if escaped || text.contains("://") || text.to_ascii_lowercase().starts_with("file:") {
            return None;
        }
        if text.starts_with('/') {
            return Some(clean(text));
        }
        if text == "~" || text.starts_with("~/") {
            return Some(clean(&format!("{}/{}", home?, &text[1..])));
        }
        Some(clean(&format!("{}/{text}", self.folder(home)?)))
    }
}

/// Whether a path bar button names the file system's root (`/`): GTK 3 names it
/// "File System Root"; others show "File System" or `/`.
fn is_file_system(name: &str) -> bool {
    label_is(
        name,
        &[
            "/",
            "file system root",
            "file system",
            "filesystem",
            "文件系统",
        ],
    )
}

/// Whether a `keys` chord only backs out: every key it presses is Escape, with no
/// modifier. Backing out of a dialog writes nothing, so it is never refused for what
/// the dialog shows (a protected path in its name field).
pub fn only_escape(chord: &str) -> bool {
    deskpilot_protocol::keys::parse_chords(chord).is_ok_and(|chords| {
        !chords.is_empty()
            && chords.iter().all(|c| {
                c.keys
                    .iter()
                    .all(|k| deskpilot_protocol::keys::keysym::canonical(*k) == 0xff1b)
            })
    })
}

/// The folder a path bar shows, absolute (see [`SaveDialog::folder`]).
fn bar_folder(bar: &Node, home: Option<&str>) -> Option<String> {
    let mut buttons: Vec<&Node> = folder_buttons(bar).collect();
    // GTK lists the deepest first; other toolkits root first. The root-most
    // button names `/` or the home folder.
    let home = home.map(clean);
    let home_name = home
        .as_deref()
        .and_then(|h| h.rsplit('/').next())
        .unwrap_or_default()
        .to_owned();
    let is_root =
        |n: &Node| is_file_system(&n.name) || (!home_name.is_empty() && n.name == home_name);
    if buttons.first().is_some_and(|b| !is_root(b)) && buttons.last().is_some_and(|b| is_root(b)) {
        buttons.reverse();
    }
    // A bar that starts at the file system names every folder from `/` (GTK keeps
    // the buttons above the home folder, hidden): the home folder's button is then
    // one folder among others. Otherwise two buttons that could each be the root
    // (a folder named like the home folder) leave the order, and so the folder,
    // unknown.
    let from_fs = buttons.first().is_some_and(|b| is_file_system(&b.name))
        && buttons.iter().filter(|b| is_file_system(&b.name)).count() == 1;
    if !from_fs && buttons.iter().filter(|b| is_root(b)).count() != 1 {
        return None;
    }
    let current = buttons.iter().position(|b| b.has(State::Checked))?;
    let first = buttons.first()?;
    let mut path = if is_file_system(&first.name) {
        String::new()
    } else if first.name == home_name {
        home.clone()?
    } else {
        return None;
    };
    for b in &buttons[1..=current] {
        if b.name.is_empty() || b.name.contains('/') || b.name == ".." {
            return None;
        }
        path.push('/');
        path.push_str(&b.name);
    }
    Some(if path.is_empty() { "/".into() } else { path })
}

/// The folder a file chooser shows — any dialog with a path bar, open or save —
/// absolute, read from its path bar as [`SaveDialog::folder`] reads it; `None` for
/// another window or a bar that cannot be read as a path.
pub fn chooser_folder(root: &Node, home: Option<&str>) -> Option<String> {
    if root.role != Role::Dialog {
        return None;
    }
    bar_folder(root.walk().find(|n| path_bar(n))?, home)
}

/// Whether clicking `n` backs out of a dialog: a button labelled Cancel or Close.
pub fn cancels(n: &Node) -> bool {
    n.role == Role::Button && label_is(&n.name, &["cancel", "close", "取消", "关闭"])
}

/// Whether a name typed or set into a save dialog's name field is a full path, to be
/// judged at once rather than at Save: it starts with `/` or `~`, or names a
/// folder (`a/b`).
pub fn names_a_path(text: &str) -> bool {
    let t = text.trim();
    t.starts_with('/') || t.starts_with('~') || t.contains('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> FilePlaces {
        FilePlaces {
            allowed: vec!["/home/u/Documents".into(), "/tmp".into()],
            home: Some("/home/u".into()),
            home_resolved: Some("/usr/home/u".into()),
            refused: vec![
                "/tmp/deskpilot-1000".into(),
                "/home/u/.config/autostart".into(),
            ],
        }
    }

    #[test]
    fn only_allowed_places_outside_dot_files_and_own_files_are_written() {
        let p = places();
        for ok in [
            "/home/u/Documents/a.txt",
            "/tmp/x/y.txt",
            "/home/u/Documents/sub/b.md",
        ] {
            assert_eq!(p.judge(ok, ok), None, "{ok}");
        }
        for (bad, why) in [
            ("/home/u/.config/autostart/evil.desktop", "dot"),
            ("/home/u/.bashrc", "shell"),
            ("/home/u/Documents/.bashrc", "shell"),
            ("/home/u/Documents/../.profile", "shell"),
            ("/home/u/Documents/../.local/share/x", "dot"),
            ("/tmp/deskpilot-1000/approvals.json", "deskpilot"),
            ("/etc/xdg/autostart/x.desktop", "autostart"),
            ("/home/u/Music/a.txt", "outside"),
            ("/var/tmp/x", "outside"),
        ] {
            let r = p.judge(bad, bad).unwrap_or_else(|| panic!("{bad} passed"));
            assert!(r.why.contains(why), "{bad}: {r:?}");
        }
        // A name being typed passes through places it will not end in.
        assert_eq!(p.judge_typing("/home/u/Doc", "/home/u/Doc"), None);
        assert!(p.judge_typing("/home/u/.c", "/home/u/.c").is_some());
        // Through a link in an allowed folder that leads to a dot directory.
        let r = p
            .judge(
                "/home/u/Documents/notes/evil.desktop",
                "/home/u/.config/autostart/evil.desktop",
            )
            .expect("refused");
        assert_eq!(r.path, "/home/u/.config/autostart/evil.desktop");
        assert!(r.why.contains("symbolic link"), "{r:?}");
        // A link that leads into the home directory by its resolved path.
        let r = p.judge("/tmp/notes/x", "/usr/home/u/.config/autostart/x");
        assert!(r.expect("refused").why.contains("dot"));
        // A root without a home: `/tmp` is not `/tmpfoo`.
        assert!(p.judge("/tmpfoo/a", "/tmpfoo/a").is_some());
    }

    /// GTK 3's Save As as mousepad shows it: the path bar deepest first, the current
    /// folder's button checked.
    fn dialog(name: &str, bar: &[(&str, bool)]) -> Node {
        let bar: Vec<Node> = bar
            .iter()
            .enumerate()
            .map(|(i, (n, on))| {
                let b = Node::new(format!("h:b{i}"), Role::Button, *n);
                if *on { b.state(State::Checked) } else { b }
            })
            .collect();
        Node::new("h:1", Role::Dialog, "Save As").children(vec![
            Node::new("h:2", Role::Textbox, "")
                .value(name)
                .state(State::Editable)
                .state(State::Focused),
            Node::new("h:3", Role::Group, "").children(bar),
            Node::new("h:4", Role::Button, "_Cancel"),
            Node::new("h:5", Role::Button, "_Save"),
        ])
    }

    #[test]
    fn the_path_a_save_writes_is_the_folder_and_the_name() {
        let home = Some("/home/u");
        let d = dialog("a.txt", &[("Documents", true), ("u", false)]);
        let s = save_dialog(&d).expect("a save dialog");
        assert_eq!(s.folder(home).as_deref(), Some("/home/u/Documents"));
        assert_eq!(
            s.target("a.txt", home).as_deref(),
            Some("/home/u/Documents/a.txt")
        );
        assert_eq!(
            s.target("~/.bashrc", home).as_deref(),
            Some("/home/u/.bashrc")
        );
        assert_eq!(s.target("/etc/x", home).as_deref(), Some("/etc/x"));
        assert_eq!(
            s.target("../.profile", home).as_deref(),
            Some("/home/u/.profile")
        );
        assert_eq!(s.target("  ", home), None);
        // The bar also shows deeper folders after going up; the checked one counts.
        let d = dialog("b", &[("sub", false), ("Documents", true), ("u", false)]);
        let s = save_dialog(&d).expect("a save dialog");
        assert_eq!(s.target("b", home).as_deref(), Some("/home/u/Documents/b"));
        // Outside the home folder the bar starts at the file system.
        let d = dialog("c", &[("tmp", true), ("File System", false)]);
        let s = save_dialog(&d).expect("a save dialog");
        assert_eq!(s.target("c", home).as_deref(), Some("/tmp/c"));
        // A URI or a %-escaped name is not judged as written: its place is unknown.
        assert_eq!(
            s.target("file:///home/u/.config/autostart/x.desktop", home),
            None
        );
        assert_eq!(s.target("%2Econfig/autostart/x", home), None);
        // Two buttons that could be the root (a folder named like the home folder
        // under another): the bar's order, and so the folder, is unknown.
        let d = dialog(
            "e",
            &[
                ("u", false),
                ("Documents", false),
                ("autostart", true),
                (".config", false),
                ("u", false),
            ],
        );
        assert_eq!(save_dialog(&d).expect("a save dialog").folder(home), None);
        // An app's main window with a Save button, a field and toggles is no dialog.
        let mut w = dialog("c", &[("Documents", true), ("u", false)]);
        w.role = Role::Window;
        assert!(save_dialog(&w).is_none());
        // A bar that cannot be read as a path gives no folder.
        let d = dialog("c", &[("x", true), ("y", false)]);
        assert_eq!(
            save_dialog(&d).expect("a save dialog").target("c", home),
            None
        );
        // Under the home folder GTK keeps the buttons above it (hidden): the bar
        // then starts at the file system, and the home folder is one folder.
        let d = dialog(
            "c",
            &[
                ("reports", true),
                ("links", false),
                ("u", false),
                ("home", false),
                ("File System Root", false),
            ],
        );
        let s = save_dialog(&d).expect("a save dialog");
        assert_eq!(s.folder(home).as_deref(), Some("/home/u/links/reports"));
        // GTK 3's own names: the root button and the sliders.
        let d = dialog(
            "c",
            &[
                ("Up Path", false),
                ("tmp", true),
                ("File System Root", false),
            ],
        );
        let s = save_dialog(&d).expect("a save dialog");
        assert_eq!(s.target("c", home).as_deref(), Some("/tmp/c"));
        // Not a save dialog: no button accepts it.
        let mut open = dialog("c", &[("tmp", true)]);
        open.children.pop();
        assert!(save_dialog(&open).is_none());
        // zenity's save chooser accepts with "OK", beside Cancel: a save dialog.
        let mut zenity = dialog("c", &[("tmp", true), ("File System Root", false)]);
        zenity.children[3] = Node::new("h:5", Role::Button, "OK").state(State::Disabled);
        let s = save_dialog(&zenity).expect("a save dialog");
        assert_eq!(s.save.name, "OK");
        assert_eq!(s.target("c", home).as_deref(), Some("/tmp/c"));
        assert!(names_a_path("~/x") && names_a_path("a/b") && !names_a_path("notes.txt"));
        assert!(only_escape("Escape") && only_escape("Escape Escape") && only_escape("0xff1b"));
        assert!(!only_escape("ctrl+Escape") && !only_escape("Escape Return") && !only_escape("x"));
        assert!(cancels(&Node::new("h:9", Role::Button, "_Cancel")));
    }
}

//! Part of step 8 of the pipeline (docs/ARCHITECTURE.md §7.11, §7.21): where a save
//! dialog would write. Measures the facts the rule in `deskpilot_policy::files`
//! needs — the allowed folders, the home directory, where a path's symbolic links
//! lead — and refuses an effect that would save outside the allowed places. Reads the
//! file system (`canonicalize`, `read_link`, `user-dirs.dirs`); never writes, never
//! dispatches.

use std::path::{Path, PathBuf};

use deskpilot_core::{Node, Op, Role};
use deskpilot_policy::files::{
    FilePlaces, PlaceRefusal, SaveDialog, clean, names_a_path, save_dialog,
};
use deskpilot_policy::input::{elements_at, focused, keys_activate, keys_enter};
use deskpilot_policy::reach::mnemonic_may_press;
use deskpilot_protocol::types::PointerAction;
use deskpilot_protocol::{ComputerError, ErrorCode, Result};

use super::effect::Effect;
use super::fail;
use crate::config::Effective;

/// Most links followed by hand while resolving one path (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// The places apps may be made to write files on this machine: the config's
/// `allow_files` (with `~/` meaning the home directory), the documents folder
/// ([`documents_dir`]) and the temporary directory (`/tmp` and `$TMPDIR`), each
/// as written and as its links resolve; refused always: deskpilot's own
/// directories ([`super::protected_dirs`]) and `$XDG_CONFIG_HOME/autostart`.
pub(super) fn file_places(settings: &Effective) -> FilePlaces {
    let home = std::env::var("HOME")
        .ok()
        .filter(|h| h.starts_with('/') && h.len() > 1);
    let mut roots: Vec<String> = Vec::new();
    for f in &settings.allow_files {
        match (f.strip_prefix('~'), home.as_deref()) {
            (Some(rest), Some(h)) => roots.push(format!("{h}{rest}")),
            (Some(_), None) => {}
            (None, _) => roots.push(f.clone()),
        }
    }
    roots.extend(documents_dir(home.as_deref()).map(|d| d.display().to_string()));
    roots.push("/tmp".into());
    roots.push(std::env::temp_dir().display().to_string());
    let mut allowed: Vec<String> = Vec::new();
    for r in roots.into_iter().filter(|r| r.starts_with('/')) {
        let resolved = resolve_links(&clean(&r));
        for p in [clean(&r), resolved] {
            if !allowed.contains(&p) {
                allowed.push(p);
            }
        }
    }
    let mut refused = super::protected_dirs();
    let config_home = std::env::var("XDG_CONFIG_HOME")
        .ok()
        .filter(|c| c.starts_with('/'));
    refused.extend(config_home.map(|c| format!("{c}/autostart")));
    let resolved: Vec<String> = refused.iter().map(|r| resolve_links(&clean(r))).collect();
    refused.extend(resolved);
    let home_resolved = home.as_deref().map(resolve_links);
    FilePlaces {
        allowed,
        home,
        home_resolved,
        refused,
    }
}

/// The user's documents folder: `$XDG_DOCUMENTS_DIR`, else its line in
/// `$XDG_CONFIG_HOME/user-dirs.dirs` (or `~/.config/user-dirs.dirs`), else
/// `~/Documents`. A folder that is the home directory itself is no documents folder.
pub(super) fn documents_dir(home: Option<&str>) -> Option<PathBuf> {
    let home = home?;
    let expand = |v: &str| -> Option<PathBuf> {
        let v = v.trim().trim_matches('"');
        let p = if let Some(rest) = v.strip_prefix("$HOME") {
            format!("{home}{rest}")
        } else {
            v.to_owned()
        };
        (p.starts_with('/') && clean(&p) != clean(home)).then(|| PathBuf::from(clean(&p)))
    };
    if let Some(d) = std::env::var("XDG_DOCUMENTS_DIR")
        .ok()
        .and_then(|v| expand(&v))
    {
        return Some(d);
    }
    let config = std::env::var("XDG_CONFIG_HOME")
        .ok()
        .filter(|c| c.starts_with('/'))
        .unwrap_or_else(|| format!("{home}/.config"));
    let dirs =
        std::fs::read_to_string(Path::new(&config).join("user-dirs.dirs")).unwrap_or_default();
    dirs.lines()
        .filter_map(|l| l.trim().strip_prefix("XDG_DOCUMENTS_DIR="))
        .find_map(expand)
        .or_else(|| Some(PathBuf::from(format!("{home}/Documents"))))
}

/// `path` (absolute, clean) with every symbolic link on it resolved: the deepest part
/// that exists canonicalised and the rest appended; a link whose target does not
/// exist yet (a save would create it) is followed by hand. After [`MAX_LINKS`] links
/// the path is returned as far as resolved.
pub(super) fn resolve_links(path: &str) -> String {
    let mut p = PathBuf::from(clean(path));
    'links: for _ in 0..MAX_LINKS {
        let mut rest: Vec<std::ffi::OsString> = Vec::new();
        let mut cur = p.clone();
        loop {
            let is_link = std::fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink());
            if let Ok(c) = std::fs::canonicalize(&cur) {
                let mut out = c;
                out.extend(rest.iter().rev());
                return clean(&out.to_string_lossy());
            }
            if is_link && let (Ok(target), Some(parent)) = (std::fs::read_link(&cur), cur.parent())
            {
                let mut next = parent.join(target);
                next.extend(rest.iter().rev());
                p = PathBuf::from(clean(&next.to_string_lossy()));
                continue 'links;
            }
            match (cur.file_name(), cur.parent()) {
                (Some(n), Some(parent)) => {
                    rest.push(n.to_owned());
                    cur = parent.to_path_buf();
                }
                _ => return clean(&p.to_string_lossy()),
            }
        }
    }
    clean(&p.to_string_lossy())
}

/// `COMPUTER_SCOPE_VIOLATION` for a save outside the allowed places: the path, the
/// rule, and how the user allows a folder.
pub(super) fn save_refused(r: &PlaceRefusal, places: &FilePlaces) -> ComputerError {
    let shown: Vec<String> = places
        .allowed
        .iter()
        .map(|a| deskpilot_core::sanitize::one_line(a))
        .collect();
    fail(
        ErrorCode::ScopeViolation,
        format!(
            "this save dialog would write {:?}: {}. Nothing was saved; save into an allowed folder ({}), or the user adds one from a terminal with `deskpilot config set allow_files ~/Projects` (Escape or Cancel backs out)",
            deskpilot_core::sanitize::one_line(&r.path),
            r.why,
            shown.join(", ")
        ),
    )
    .with_detail(serde_json::json!({ "path": r.path }))
}

/// What an effect does in a save dialog: the texts the name field may hold after
/// it (one for each place the caret may be in when keys or typed text edit it,
/// [`deskpilot_policy::input::field_after`]; empty when it leaves the field as it
/// is), and whether it saves.
fn in_dialog(
    effect: &Effect,
    d: &SaveDialog<'_>,
    root: &Node,
    element: Option<&Node>,
    point: Option<(i32, i32)>,
) -> (Vec<String>, bool) {
    let now = d.name.value.as_deref().unwrap_or_default();
    // Up to the first line break: what is typed after Enter lands in what Enter
    // opened.
    let before_break = |t: &str| t.split(['\n', '\r']).next().unwrap_or_default().to_owned();
    let is = |n: &Node, of: &Node| n.handle == of.handle;
    match effect {
        Effect::Act { op, value, .. } => {
            let Some(el) = element else {
                return (Vec::new(), false);
            };
            match op {
                Op::SetValue | Op::Type if is(el, d.name) => {
                    let v = value.as_deref().unwrap_or_default();
                    let texts = if *op == Op::SetValue {
                        vec![before_break(v)]
                    } else {
                        deskpilot_policy::input::field_after(now, None, Some(v))
                    };
                    (texts, v.contains(['\n', '\r']))
                }
                Op::Click | Op::DoubleClick | Op::Toggle if is(el, d.save) => (Vec::new(), true),
                _ => (Vec::new(), false),
            }
        }
        Effect::Keys { chord, text, .. } => {
            let focus = focused(root);
            let in_name = focus.is_some_and(|f| is(f, d.name));
            // Typed text, or the edits the keys make (a name's last letter sent
            // with Enter in one chord, a folder typed before the name), applied
            // to the field's text with the caret anywhere.
            let typed: Vec<String> = if in_name {
                deskpilot_policy::input::field_after(now, chord.as_deref(), text.as_deref())
                    .into_iter()
                    .filter(|t| t != now)
                    .collect()
            } else {
                Vec::new()
            };
            // Enter activates the focused button when one has focus, else the
            // dialog's default button, Save.
            let on_other_button = focus.is_some_and(|f| f.role == Role::Button && !is(f, d.save));
            let enter = keys_enter(chord.as_deref(), text.as_deref()) && !on_other_button;
            // Space (or any activating key) on a focused Save button presses it.
            let pressed = focus.is_some_and(|f| is(f, d.save))
                && keys_activate(chord.as_deref(), text.as_deref());
            let mnemonic = chord
                .as_deref()
                .is_some_and(|c| mnemonic_may_press(c, d.save));
            (typed, enter || pressed || mnemonic)
        }
        Effect::Pointer { action, .. } => {
            // A drag pressed on Save releases on it as readily as a click.
            let clicks = matches!(
                action,
                PointerAction::Click | PointerAction::DoubleClick | PointerAction::Drag
            );
            let on_save = point
                .is_some_and(|(x, y)| elements_at(root, x, y).into_iter().any(|n| is(n, d.save)));
            (Vec::new(), clicks && on_save)
        }
        Effect::Clipboard { .. } => (Vec::new(), false),
    }
}

/// Refuses `effect` when, in a save dialog, it would save a file outside the allowed
/// places, set the name field to a full path outside them, or type a path into it
/// that is on its way into a place never written (docs/ARCHITECTURE.md §7.21). `element` is the act's element, `point` a pointer gesture's screen point.
///
/// Errors: `COMPUTER_SCOPE_VIOLATION` naming the path and the rule
/// ([`save_refused`]), or saying that the dialog's folder cannot be read and a full
/// path must be typed.
pub(super) fn check_save(
    places: impl FnOnce() -> FilePlaces,
    effect: &Effect,
    root: &Node,
    element: Option<&Node>,
    point: Option<(i32, i32)>,
) -> Result<()> {
    let Some(d) = save_dialog(root) else {
        return Ok(());
    };
    // Measured only in a save dialog: the file system is read for nothing else.
    let places = &places();
    let (texts, saves) = in_dialog(effect, &d, root, element, point);
    // A value set is the name as it will be; typed text may be on its way.
    let complete = saves
        || matches!(
            effect,
            Effect::Act {
                op: Op::SetValue,
                ..
            }
        );
    if texts.is_empty() {
        if !saves {
            return Ok(());
        }
        let field = d.name.value.clone().unwrap_or_default();
        return judge_name(&d, places, &field, complete);
    }
    for field in &texts {
        if saves || names_a_path(field) {
            judge_name(&d, places, field, complete)?;
        }
    }
    Ok(())
}

/// Judges the name field of save dialog `d` holding `field`: where the file would
/// be written once saved (`complete`), or the path typed so far.
fn judge_name(d: &SaveDialog<'_>, places: &FilePlaces, field: &str, complete: bool) -> Result<()> {
    if field.trim().is_empty() {
        return Ok(());
    }
    let Some(path) = d.target(field, places.home.as_deref()) else {
        if !complete {
            return Ok(());
        }
        return Err(fail(
            ErrorCode::ScopeViolation,
            format!(
                "this save dialog's current folder cannot be read from its path bar, so where {:?} would be written is unknown; nothing was saved. Type the full path into the name field (such as ~/Documents/{}), or back out with Escape",
                deskpilot_core::sanitize::one_line(field),
                deskpilot_core::sanitize::one_line(field.rsplit('/').next().unwrap_or_default())
            ),
        ));
    };
    let resolved = resolve_links(&path);
    let verdict = if complete {
        places.judge(&path, &resolved)
    } else {
        places.judge_typing(&path, &resolved)
    };
    match verdict {
        Some(r) => Err(save_refused(&r, places)),
        None => Ok(()),
    }
}

/// The deskpilot directory (docs/ARCHITECTURE.md §7.17) a file chooser — any
/// dialog with a path bar, open or save — reaches: the folder it shows, or a row
/// of its file list the effect opens (a click or double click on it, by ref or at
/// a point; Enter while it is selected), each with its symbolic links resolved, so
/// a link named anything does not walk into one. `None` for another window.
pub(super) fn chooser_reaches(
    rules: &deskpilot_policy::refusal::Refusals,
    effect: &Effect,
    root: &Node,
    element: Option<&Node>,
    point: Option<(i32, i32)>,
) -> Option<String> {
    let home = std::env::var("HOME").ok();
    let folder = deskpilot_policy::files::chooser_folder(root, home.as_deref())?;
    let hit = |p: &str| {
        rules
            .protected_in(p)
            .or_else(|| rules.protected_in(&resolve_links(p)))
    };
    if let Some(p) = hit(&folder) {
        return Some(p);
    }
    let row = |n: &&Node| {
        matches!(
            n.role,
            Role::Cell | Role::Row | Role::Listitem | Role::Treeitem
        ) && !n.name.trim().is_empty()
            && !n.name.contains('/')
    };
    let opened: Vec<&Node> = match effect {
        Effect::Act {
            op: Op::Click | Op::DoubleClick,
            ..
        } => element.filter(row).into_iter().collect(),
        Effect::Pointer {
            action: PointerAction::Click | PointerAction::DoubleClick,
            ..
        } => point
            .map(|(x, y)| elements_at(root, x, y).into_iter().filter(row).collect())
            .unwrap_or_default(),
        Effect::Keys { chord, text, .. } if keys_enter(chord.as_deref(), text.as_deref()) => root
            .walk()
            .filter(|n| row(n) && n.has(deskpilot_core::State::Selected))
            .collect(),
        _ => Vec::new(),
    };
    let base = folder.trim_end_matches('/');
    opened
        .into_iter()
        .find_map(|n| hit(&format!("{base}/{}", n.name)))
}

/// What the served driver is asked to do, for [`check_served`].
#[derive(Clone, Copy)]
pub(crate) enum Served<'a> {
    /// `node.act`: the op, its value and the element's handle.
    Act(Op, Option<&'a str>, &'a deskpilot_core::Handle),
    /// `input.keys`: the chord or the text.
    Keys(Option<&'a str>, Option<&'a str>),
    /// `input.pointer`: the gesture at a point in the tree's pixels.
    Pointer(PointerAction, (i32, i32)),
}

/// [`check_save`] for the served driver (docs/ARCHITECTURE.md §7.16), on its own
/// machine's places (`settings`) and the window's tree `root` as read just before.
pub(crate) fn check_served(settings: &Effective, what: Served<'_>, root: &Node) -> Result<()> {
    let places = || file_places(settings);
    match what {
        Served::Act(op, value, handle) => {
            let effect = Effect::Act {
                r: String::new(),
                op,
                value: value.map(str::to_owned),
            };
            let element = root.walk().find(|n| &n.handle == handle);
            check_save(places, &effect, root, element, None)
        }
        Served::Keys(chord, text) => {
            let effect = Effect::Keys {
                target: crate::session::Target::Current,
                chord: chord.map(str::to_owned),
                text: text.map(str::to_owned),
            };
            check_save(places, &effect, root, None, None)
        }
        Served::Pointer(action, (x, y)) => {
            // The basis was checked by the host that aimed it; only the point is
            // judged here.
            let effect = Effect::Pointer {
                basis: deskpilot_policy::view::Basis::parse("r0:0,0,1x1@1")
                    .map_err(|_| super::effect::not_dispatched("a served pointer's basis"))?,
                x: f64::from(x),
                y: f64::from(y),
                action,
                seen: None,
            };
            check_save(places, &effect, root, None, Some((x, y)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Target;
    use deskpilot_core::{Bounds, State};

    /// GTK 3's Save As in `/home/u/Documents` with `name` in its name field;
    /// `focus` is the handle that has focus.
    fn dialog(name: &str, focus: &str) -> Node {
        let f = |n: Node| {
            if n.handle.as_str() == focus {
                n.state(State::Focused)
            } else {
                n
            }
        };
        Node::new("h:1", Role::Dialog, "Save As").children(vec![
            f(Node::new("h:name", Role::Textbox, "Name")
                .value(name)
                .state(State::Editable)),
            Node::new("h:bar", Role::Group, "").children(vec![
                Node::new("h:b1", Role::Button, "Documents").state(State::Checked),
                Node::new("h:b2", Role::Button, "u"),
                Node::new("h:b3", Role::Button, "Up Path"),
            ]),
            f(Node::new("h:cancel", Role::Button, "Cancel")),
            f(Node::new("h:save", Role::Button, "Save").bounds(Bounds::new(500, 400, 80, 30))),
        ])
    }

    fn places() -> FilePlaces {
        FilePlaces {
            allowed: vec!["/home/u/Documents".into()],
            home: Some("/home/u".into()),
            home_resolved: None,
            refused: vec![],
        }
    }

    fn keys(chord: Option<&str>, text: Option<&str>) -> Effect {
        Effect::Keys {
            target: Target::Current,
            chord: chord.map(str::to_owned),
            text: text.map(str::to_owned),
        }
    }

    fn act(op: Op, value: Option<&str>) -> Effect {
        Effect::Act {
            r: "e1".into(),
            op,
            value: value.map(str::to_owned),
        }
    }

    fn code(r: Result<()>) -> Option<ErrorCode> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn a_save_is_judged_by_the_path_it_writes_however_it_is_pressed() {
        let bad = dialog("../.bashrc", "h:name");
        let name = bad.children[0].clone();
        let save = bad.children[3].clone();
        let refused = Some(ErrorCode::ScopeViolation);
        for e in [
            keys(Some("Return"), None),
            keys(Some("ctrl+m"), None),
            keys(Some("alt+s"), None),
            keys(None, Some("\n")),
        ] {
            assert_eq!(
                code(check_save(places, &e, &bad, None, None)),
                refused,
                "{e:?}"
            );
        }
        let click = act(Op::Click, None);
        assert_eq!(
            code(check_save(places, &click, &bad, Some(&save), None)),
            refused
        );
        let at = Effect::Pointer {
            basis: deskpilot_policy::view::Basis::parse("r1:0,0,800x600@1").unwrap(),
            x: 0.0,
            y: 0.0,
            action: PointerAction::Click,
            seen: None,
        };
        assert_eq!(
            code(check_save(places, &at, &bad, None, Some((510, 410)))),
            refused
        );
        // Space on a focused Save presses it too.
        let on_save = dialog("../.bashrc", "h:save");
        for e in [keys(Some("space"), None), keys(None, Some(" "))] {
            assert_eq!(
                code(check_save(places, &e, &on_save, None, None)),
                refused,
                "{e:?}"
            );
        }
        // Enter on Cancel presses Cancel; Escape saves nothing.
        let on_cancel = dialog("../.bashrc", "h:cancel");
        assert_eq!(
            code(check_save(
                places,
                &keys(Some("Return"), None),
                &on_cancel,
                None,
                None
            )),
            None
        );
        assert_eq!(
            code(check_save(
                places,
                &keys(Some("Escape"), None),
                &bad,
                None,
                None
            )),
            None
        );
        // Typing on into a path that leads to a dot file goes on leading there.
        assert_eq!(
            code(check_save(places, &keys(None, Some("x")), &bad, None, None)),
            refused
        );
        // The same Save in the allowed folder passes.
        let good = dialog("a.txt", "h:name");
        assert_eq!(
            code(check_save(
                places,
                &keys(Some("Return"), None),
                &good,
                None,
                None
            )),
            None
        );
        // A value set to a full path is judged at once; a plain name at Save.
        let set = |v: &str| act(Op::SetValue, Some(v));
        assert_eq!(
            code(check_save(
                places,
                &set("~/.profile"),
                &good,
                Some(&name),
                None
            )),
            refused
        );
        assert_eq!(
            code(check_save(places, &set("/etc/x"), &good, Some(&name), None)),
            refused
        );
        assert_eq!(
            code(check_save(places, &set("b.txt"), &good, Some(&name), None)),
            None
        );
        // Typing on the way to an allowed path passes; into a dot directory it stops.
        let typing = dialog("~/Doc", "h:name");
        assert_eq!(
            code(check_save(
                places,
                &keys(None, Some("u")),
                &typing,
                None,
                None
            )),
            None
        );
        let typing = dialog("~/", "h:name");
        assert_eq!(
            code(check_save(
                places,
                &keys(None, Some(".c")),
                &typing,
                None,
                None
            )),
            refused
        );
    }

    #[test]
    fn links_are_resolved_even_when_their_target_does_not_exist_yet() {
        let dir = std::env::temp_dir().join(format!("dp-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("docs")).unwrap();
        std::fs::create_dir_all(dir.join(".config/autostart")).unwrap();
        let base = resolve_links(&dir.display().to_string());
        std::os::unix::fs::symlink(dir.join(".config/autostart"), dir.join("docs/notes")).unwrap();
        std::os::unix::fs::symlink(dir.join(".bashrc"), dir.join("docs/rc")).unwrap();
        let d = dir.display().to_string();
        assert_eq!(
            resolve_links(&format!("{d}/docs/notes/evil.desktop")),
            format!("{base}/.config/autostart/evil.desktop")
        );
        assert_eq!(
            resolve_links(&format!("{d}/docs/rc")),
            format!("{base}/.bashrc")
        );
        assert_eq!(
            resolve_links(&format!("{d}/docs/new/a.txt")),
            format!("{base}/docs/new/a.txt")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

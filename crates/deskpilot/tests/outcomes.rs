//! Acts whose result says what the app now holds: a double click on a list row
//! activates that row, a value typed over one as long is confirmed by its text, and
//! an act whose effect closed its window says first that it ran, whatever reading
//! the desktop after it met (docs/ARCHITECTURE.md §1.6, §6 "Acting", §7.12). Each
//! outcome is read by an oracle deskpilot did not write: zenity's stdout, the page
//! title through `xprop`, the audit log's status.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::own::{Desk, TempDir};

/// `sh -c SCRIPT` started in an accept-edits sandbox of `dir`, once `ready` (role,
/// name) of `app` is on the bus.
fn desk_running<'a>(dir: &'a TempDir, script: &str, app: &str, ready: (&str, &str)) -> Desk<'a> {
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "sh", "-c", script]);
    desk.wait_for(app, ready.0, ready.1, 90_000);
    desk
}

/// What zenity printed once it exited (it writes `OUT.status` after it), waiting up
/// to 20 s.
fn zenity_printed(out: &Path) -> String {
    let status = out.with_extension("status");
    let start = Instant::now();
    while std::fs::read_to_string(&status)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "zenity did not answer"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::read_to_string(out).unwrap().trim().to_owned()
}

/// The one match of `name` with `role` in the bound window.
fn only_ref(desk: &Desk<'_>, role: &str, name: &str) -> String {
    let v = desk.ok(&["find", name, "--role", role]);
    let m = v["matches"].as_array().expect("matches");
    let hits: Vec<_> = m.iter().filter(|x| x["name"] == name).collect();
    assert_eq!(hits.len(), 1, "{v}");
    hits[0]["ref"].as_str().unwrap().to_owned()
}

/// zenity's command line writing its stdout to `out` and then `out.status`.
fn zenity_script(args: &str, out: &Path) -> String {
    format!(
        "zenity {args} > '{o}'; echo $? > '{s}'",
        o = out.display(),
        s = out.with_extension("status").display()
    )
}

/// A double click on a file chooser's row chooses that row, not the row the view's
/// cursor is on (the first, `a.txt`): zenity prints `b.txt`'s path.
#[test]
fn a_double_click_on_a_file_row_chooses_that_file() {
    let dir = TempDir::new("dbl-file");
    let folder = dir.path().join("files");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("a.txt"), "a").unwrap();
    std::fs::write(folder.join("b.txt"), "b").unwrap();
    let out: PathBuf = dir.path().join("chooser.out");
    let script = zenity_script(
        &format!("--file-selection --filename='{}/'", folder.display()),
        &out,
    );
    let desk = desk_running(&dir, &script, "zenity", ("cell", "b.txt"));
    desk.ok(&["observe", "--app", "zenity"]);
    let b = only_ref(&desk, "cell", "b.txt");
    let v = desk.ok(&["act", &b, "double_click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert_eq!(
        zenity_printed(&out),
        folder.join("b.txt").display().to_string()
    );
}

/// A double click on the third row of a list with nothing selected answers with
/// that row: zenity prints `item 3`.
#[test]
fn a_double_click_on_a_list_row_answers_with_that_row() {
    let dir = TempDir::new("dbl-list");
    let out: PathBuf = dir.path().join("list.out");
    let script = zenity_script(
        "--list --title Pick --column=Item 'item 1' 'item 2' 'item 3' 'item 4' 'item 5'",
        &out,
    );
    let desk = desk_running(&dir, &script, "zenity", ("cell", "item 3"));
    desk.ok(&["observe", "--app", "zenity"]);
    let third = only_ref(&desk, "cell", "item 3");
    let v = desk.ok(&["act", &third, "double_click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert_eq!(zenity_printed(&out), "item 3");
}

/// A value typed through the keyboard over one of the same length is confirmed by
/// the field's text, at once: `Ada` → `Bob` and `Alan` → `Ruth` in a Chromium input
/// (which has no EditableText) are `executed`, well inside the 5 s a count that
/// never moves would wait, and the page's `oninput` shows the new value in the
/// title.
#[test]
fn a_same_length_value_typed_into_chromium_is_confirmed_by_its_text() {
    let dir = TempDir::new("same-len");
    let page = dir.path().join("name.html");
    std::fs::write(
        &page,
        "<html><head><title>v:Ada</title></head><body><label for=n>Name</label> \
         <input id=n value=Ada oninput=\"document.title='v:'+this.value\"></body></html>",
    )
    .unwrap();
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "chromium",
        &format!("file://{}", page.display()),
    ]);
    desk.wait_for("chromium", "textbox", "Name", 90_000);
    desk.ok(&["observe", "--app", "chromium"]);
    for (value, title) in [("Bob", "v:Bob"), ("Ruth", "v:Ruth"), ("Alan", "v:Alan")] {
        let field = only_ref(&desk, "textbox", "Name");
        let started = Instant::now();
        let (out, v) = desk.run(&["act", &field, "set_value", value]);
        let took = started.elapsed();
        assert!(out.status.success(), "{value}: {v}");
        assert_eq!(v["result"]["status"], "executed", "{v}");
        assert_eq!(v["result"]["channel"], "keyboard", "{v}");
        assert!(took < Duration::from_secs(4), "{value} took {took:?}: {v}");
        assert!(
            common::x_titles(desk.display)
                .iter()
                .any(|t| t.contains(title)),
            "{title}: {:?}",
            common::x_titles(desk.display)
        );
        eprintln!("set_value {value}: {} ms", took.as_millis());
    }
}

/// A GTK window whose button opens a window that publishes no tree (`xmessage`,
/// like a splash screen) and then exits: the window in front after the click
/// cannot be read. The click ran, so the act says it ran (exit 0, `executed`, the
/// window closed, the failed read named after it) and the audit says `executed`.
const QUIT_APP: &str = r#"
import subprocess, sys, time, gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk

def finish(_button):
    subprocess.Popen(["xmessage", "-center", "Starting"])
    time.sleep(0.5)
    sys.exit(0)

w = Gtk.Window(title="Recovery")
b = Gtk.Button(label="Finish")
b.connect("clicked", finish)
w.add(b)
w.connect("destroy", Gtk.main_quit)
w.show_all()
Gtk.main()
"#;

#[test]
fn an_act_whose_effect_closed_its_window_says_it_ran() {
    let dir = TempDir::new("ran-then");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.run_python(dir.path(), "recovery.py", QUIT_APP);
    desk.wait_for("recovery.py", "button", "Finish", 60_000);
    desk.ok(&["observe", "--app", "recovery.py"]);
    let finish = only_ref(&desk, "button", "Finish");
    let (out, v) = desk.run(&["act", &finish, "click"]);
    assert!(out.status.success(), "{v}");
    assert_eq!(v["result"]["status"], "executed", "{v}");
    let text = v["text"].as_str().unwrap();
    eprintln!("{text}");
    assert!(text.starts_with("ok click"), "{text}");
    assert!(
        text.contains("\nafter: the effect ran, but reading"),
        "{text}"
    );
    assert!(text.contains("window w1 closed"), "{text}");
    // The audit says the click was done, not that it failed.
    let audit = desk.ok(&["audit", "--tail", "50"]);
    let records = audit["records"].as_array().expect("records");
    let click = records
        .iter()
        .rev()
        .find(|r| r["op"] == "click")
        .unwrap_or_else(|| panic!("no click audited: {audit}"));
    assert_eq!(click["status"], "executed", "{click}");
}

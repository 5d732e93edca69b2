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

/// A Qt Quick rectangle that calls itself a button over a `MouseArea` accepts
/// AT-SPI's `Press` and does nothing. The act says `outcome_unknown` with a
/// `no_effect` note naming the pointer rung at the element's centre, and that rung
/// does reach it; a rectangle that answers `Press` is `executed`; a tab whose only
/// action is `SetFocus` is not "clicked" by focusing it. The oracle is the
/// window's own status text, which each element's handler writes
/// (docs/ARCHITECTURE.md §1.6 "Verified outcomes").
#[test]
fn a_button_that_ignores_its_action_is_no_effect_and_the_pointer_rung_reaches_it() {
    let dir = TempDir::new("quick");
    let qml = dir.path().join("quick_buttons.qml");
    std::fs::write(&qml, include_str!("fixtures/quick_buttons.qml")).unwrap();
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "qmlscene", qml.to_str().unwrap()]);
    desk.wait_for("QtQmlViewer", "button", "Dead", 90_000);
    let obs = desk.ok(&["observe", "--app", "QtQmlViewer"]);
    let basis = obs["basis"].as_str().expect("basis").to_owned();

    let live = only_ref(&desk, "button", "Live");
    let v = desk.ok(&["act", &live, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert!(v["text"].as_str().unwrap().contains("live pressed"), "{v}");

    let dead = only_ref(&desk, "button", "Dead");
    let v = desk.fails_with(&["act", &dead, "click"], "COMPUTER_OUTCOME_UNKNOWN");
    let detail = &v["error"]["detail"];
    assert_eq!(detail["result"]["status"], "outcome_unknown", "{v}");
    let note = detail["result"]["note"].as_str().expect("a note");
    assert!(note.starts_with("no_effect: "), "{note}");
    assert!(
        !detail["text"].as_str().unwrap().contains("dead clicked"),
        "{v}"
    );
    // The rung the note names: `(X, Y) in the window`.
    let at = note.split("at (").nth(1).expect("the rung's point");
    let (x, rest) = at.split_once(", ").unwrap();
    let y = rest.split_once(')').unwrap().0;
    let v = desk.ok(&["click-at", x, y, "--basis", &basis]);
    let found = desk.ok(&["find", "dead clicked"]);
    assert_eq!(
        found["matches"].as_array().map(Vec::len),
        Some(1),
        "the pointer rung reached the MouseArea: {v}\n{found}"
    );
    // A tab whose only action is SetFocus is not clicked by focusing it: the act
    // is refused before anything is sent, naming the pointer.
    let tab = only_ref(&desk, "tab", "Settings");
    let v = desk.fails_with(&["act", &tab, "click"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("only action focuses it"), "{v}");
    assert!(message.contains("input.pointer"), "{v}");
    // The audit says what the act's answer said.
    let audit = desk.ok(&["audit", "--tail", "50"]);
    let records = audit["records"].as_array().expect("records");
    let click = records
        .iter()
        .rev()
        .find(|r| r["op"] == "click" && r["role"] == "button")
        .unwrap_or_else(|| panic!("no click audited: {audit}"));
    assert_eq!(click["status"], "outcome_unknown", "{click}");
}

/// After a result, gnome-calculator's display takes the next key as a new entry and
/// drops the result. `keys --text "5+3"` there is confirmed by the display holding
/// exactly "5+3" (before: it failed `COMPUTER_OUTCOME_UNKNOWN` after a 5 s stall,
/// `{"arrived":1,"typed":3}`, counting the result as still there). The oracle is
/// the display's own text, read with pyatspi.
#[test]
fn typing_over_a_calculators_result_is_confirmed_by_its_display() {
    let dir = TempDir::new("calc-retype");
    let desk = desk_running(
        &dir,
        "exec gnome-calculator",
        "gnome-calculator",
        ("button", "7"),
    );
    desk.ok(&["observe", "--app", "gnome-calculator"]);
    // `+` (the display shows `*` as `×`, which a character-by-character check
    // rightly counts as another character).
    desk.ok(&["keys", "--text", "6+7"]);
    desk.ok(&["keys", "Return"]);
    desk.ok(&["wait", "--text", "13", "--timeout-ms", "20000"]);
    let started = Instant::now();
    let v = desk.ok(&["keys", "--text", "5+3"]);
    let took = started.elapsed();
    let display = desk.python_output(
        r#"
import pyatspi
for app in pyatspi.Registry.getDesktop(0):
    if app is None or app.name != "gnome-calculator":
        continue
    def walk(n):
        if n.getState().contains(pyatspi.STATE_EDITABLE):
            t = n.queryText()
            print(t.getText(0, -1))
        for c in n:
            walk(c)
    walk(app)
"#,
        &[],
    );
    assert!(
        display.lines().any(|l| l == "5+3"),
        "the display holds what was typed: {display:?} ({v})"
    );
    eprintln!("keys --text 5+3 took {} ms", took.as_millis());
}

/// `apps` until the window titled `title` of `two-windows` is listed with
/// `not_viewable` equal to `want` (`None`: listed and on screen), for up to 20 s.
fn listed_as(desk: &Desk<'_>, title: &str, want: Option<&str>) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let apps = desk.ok(&["apps"]);
        let window = apps["apps"].as_array().unwrap().iter().find_map(|a| {
            a["windows"]
                .as_array()?
                .iter()
                .find(|w| w["title"] == title)
                .cloned()
        });
        if let Some(w) = &window
            && w["not_viewable"].as_str() == want
        {
            return apps;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{title} never listed as {want:?}: {apps}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `xdotool search --name '^TITLE$' ACTION…` on the desk's display.
fn xdotool(desk: &Desk<'_>, title: &str, action: &str) {
    let out = std::process::Command::new("xdotool")
        .env("DISPLAY", format!(":{}", desk.display))
        .args(["search", "--name", &format!("^{title}$")])
        .args(action.split(' '))
        .output()
        .expect("xdotool runs (Debian xdotool)");
    assert!(out.status.success(), "xdotool {action}: {out:?}");
}

/// The presses the two-window fixture logged, one window name a line.
fn presses(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("presses.log")).unwrap_or_default()
}

/// A window that is not on screen is marked where it is listed and observed, and
/// takes no act, keys or pointer gesture (`COMPUTER_ELEMENT_NOT_ACTIONABLE`,
/// `detail.reason` `not_viewable`) and no screenshot: unmapped from outside as one
/// of a browser's two app windows was (before: the act answered `ok` and the app
/// took the press), then minimised. Wholly under another window, it still takes an
/// accessible act (in the background), but a screenshot fails `occluded` and a
/// pointer gesture is refused. The oracle is the fixture's own press log.
#[test]
fn a_window_that_is_not_on_screen_is_marked_and_takes_nothing_it_could_not_show() {
    let dir = TempDir::new("viewable");
    let desk = Desk::start_with_config(
        dir.path(),
        "capture = \"a11y-and-pixels\"\n[sandbox]\nmode = \"accept-edits\"\n",
    );
    desk.run_python(
        dir.path(),
        "two_windows.py",
        include_str!("fixtures/two_windows.py"),
    );
    desk.wait_for("two-windows", "button", "Press Beta", 60_000);
    listed_as(&desk, "Beta", None);
    desk.ok(&["observe", "--window", "Beta"]);
    let beta = only_ref(&desk, "button", "Press Beta");

    // Unmapped by another program.
    xdotool(&desk, "Beta", "windowunmap --sync");
    let apps = listed_as(&desk, "Beta", Some("unmapped"));
    let v = desk.fails_with(&["act", &beta, "click"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    assert_eq!(v["error"]["detail"]["reason"], "not_viewable", "{v}");
    assert_eq!(v["error"]["detail"]["not_viewable"], "unmapped", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not viewable (unmapped)"),
        "{v}"
    );
    desk.fails_with(&["keys", "space"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    let v = desk.fails_with(&["screenshot"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    assert_eq!(v["error"]["detail"]["reason"], "not_viewable", "{v}");
    let obs = desk.ok(&["observe", "--window", "Beta"]);
    assert!(
        obs["text"]
            .as_str()
            .unwrap()
            .contains("[not viewable: unmapped]"),
        "{obs}"
    );
    assert_eq!(presses(dir.path()), "", "nothing reached the app: {apps}");

    // Shown again: the same act runs.
    xdotool(&desk, "Beta", "windowmap --sync");
    listed_as(&desk, "Beta", None);
    desk.ok(&["observe", "--window", "Beta"]);
    let beta = only_ref(&desk, "button", "Press Beta");
    let v = desk.ok(&["act", &beta, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert_eq!(presses(dir.path()), "beta\n");

    // Minimised.
    xdotool(&desk, "Beta", "windowminimize --sync");
    listed_as(&desk, "Beta", Some("minimized"));
    let v = desk.fails_with(&["act", &beta, "click"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    assert_eq!(v["error"]["detail"]["not_viewable"], "minimized", "{v}");
    assert_eq!(presses(dir.path()), "beta\n");

    // Restored, then wholly under Alpha.
    xdotool(&desk, "Beta", "windowactivate --sync");
    listed_as(&desk, "Beta", None);
    xdotool(&desk, "Alpha", "windowmove --sync 0 0");
    xdotool(&desk, "Alpha", "windowsize --sync 100% 100%");
    xdotool(&desk, "Alpha", "windowactivate --sync");
    listed_as(&desk, "Beta", Some("covered"));
    let obs = desk.ok(&["observe", "--window", "Beta"]);
    assert!(
        obs["text"]
            .as_str()
            .unwrap()
            .contains("[not viewable: covered]"),
        "{obs}"
    );
    let basis = obs["basis"].as_str().unwrap().to_owned();
    let v = desk.fails_with(&["screenshot"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    assert_eq!(v["error"]["detail"]["reason"], "occluded", "{v}");
    // An accessible act needs no pixels: it runs in the background.
    let beta = only_ref(&desk, "button", "Press Beta");
    let v = desk.ok(&["act", &beta, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert_eq!(presses(dir.path()), "beta\nbeta\n");
    listed_as(&desk, "Beta", Some("covered"));
    // A pointer gesture raises it first and says so (before: refused, with a
    // remedy the agent had no tool for).
    let found = desk.ok(&["find", "Press Beta", "--window", "Beta"]);
    let b = &found["matches"][0]["bounds"];
    let origin: Vec<i64> = basis
        .split_once(':')
        .and_then(|(_, g)| g.split_once(','))
        .map(|(x, rest)| {
            vec![
                x.parse().unwrap(),
                rest.split(',').next().unwrap().parse().unwrap(),
            ]
        })
        .unwrap_or_else(|| panic!("basis {basis}"));
    let cx = b["x"].as_i64().unwrap() + b["width"].as_i64().unwrap() / 2 - origin[0];
    let cy = b["y"].as_i64().unwrap() + b["height"].as_i64().unwrap() / 2 - origin[1];
    let v = desk.ok(&[
        "click-at",
        &cx.to_string(),
        &cy.to_string(),
        "--basis",
        &basis,
    ]);
    assert!(
        v["text"]
            .as_str()
            .unwrap()
            .contains("raised window \"Beta\" to the front"),
        "{v}"
    );
    assert_eq!(presses(dir.path()), "beta\nbeta\nbeta\n", "{v}");
    listed_as(&desk, "Beta", None);
}

/// A process whose GTK side registered on the accessibility bus and whose Qt side
/// did not shows its Qt window in `apps` (` · no tree`), and reading it says why
/// and names Qt's remedy; the app's readable window is still the one its name
/// picks. Before, the Qt window was listed nowhere and `observe --window` answered
/// "no window title contains".
#[test]
fn a_window_of_a_toolkit_that_never_registered_is_listed_and_says_why() {
    let dir = TempDir::new("two-toolkits");
    let desk = Desk::start(dir.path());
    desk.run_python(
        dir.path(),
        "two_toolkits.py",
        include_str!("fixtures/two_toolkits.py"),
    );
    desk.wait_for("two_toolkits.py", "button", "GTK button", 60_000);
    let start = Instant::now();
    let listed = loop {
        let apps = desk.ok(&["apps"]);
        let qt = apps["apps"].as_array().unwrap().iter().find_map(|a| {
            a["windows"]
                .as_array()?
                .iter()
                .find(|w| w["title"] == "Mixed Qt side")
                .map(|w| (a["name"].clone(), a["status"].clone(), w.clone()))
        });
        if let Some(found) = qt {
            break found;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the Qt window was never listed: {apps}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (app, status, window) = listed;
    assert_eq!(app, "two_toolkits.py", "{window}");
    assert_eq!(status, "ok", "{window}");
    assert_eq!(window["no_tree"], true, "{window}");
    let v = desk.fails_with(
        &["observe", "--window", "Mixed Qt"],
        "COMPUTER_ACCESSIBILITY_DISABLED",
    );
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("toolkit Qt") && msg.contains("QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1"),
        "{msg}"
    );
    let obs = desk.ok(&["observe", "--app", "two_toolkits.py"]);
    assert!(
        obs["text"]
            .as_str()
            .unwrap()
            .contains("button \"GTK button\""),
        "{obs}"
    );
}

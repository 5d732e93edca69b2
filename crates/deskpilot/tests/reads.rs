//! Reads that tell the truth about what they could not see: real apps in a sandbox
//! desktop of their own (docs/ARCHITECTURE.md §5, §9).

mod common;

use common::own::{Desk, TempDir};

/// `wait` waits for the app too: started a moment before, gnome-calculator is not on
/// the accessibility bus yet when `wait` begins, and its "7" button is found once it
/// registers. An app that never comes is a timeout that says the tree never came,
/// not "no app named".
#[test]
fn wait_waits_for_the_app_to_publish_its_tree() {
    let dir = TempDir::new("wait-app");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    let v = desk.wait_for("gnome-calculator", "button", "7", 60000);
    assert_eq!(v["met"], true, "{v}");
    assert_eq!(v["hits"][0]["name"], "7", "the 7 button, named once: {v}");

    let v = desk.fails_with(
        &[
            "wait",
            "--app",
            "no-such-app-xyz",
            "--text",
            "x",
            "--timeout-ms",
            "1000",
        ],
        "COMPUTER_TIMEOUT",
    );
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("never published"), "{v}");
    assert!(msg.contains("no-such-app-xyz"), "{v}");

    let v = desk.fails_with(
        &[
            "wait",
            "--app",
            "gnome-calculator",
            "--role",
            "button",
            "--name",
            "no-such-button",
            "--timeout-ms",
            "1000",
        ],
        "COMPUTER_TIMEOUT",
    );
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("no button named"), "{v}");
}

/// GTK 4 names: gnome-calculator's buttons are named after their label once
/// (`button "7"`, not `"7 7"`), and no element is named after its widget class
/// (`GtkMenuButton`, `AdwGizmo`, `HistoryView`).
#[test]
fn gtk4_names_are_names() {
    let dir = TempDir::new("gtk4-names");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    desk.wait_for("gnome-calculator", "button", "7", 60000);
    let obs = desk.ok(&["observe", "--app", "gnome-calculator"]);
    let text = obs["text"].as_str().unwrap();
    for name in ["\"7\"", "\"mod\"", "\"÷\""] {
        assert!(
            text.contains(&format!("button {name}")),
            "button {name}:\n{text}"
        );
    }
    for class in [
        "label \"7\"",
        "\"7 7\"",
        "GtkMenuButton",
        "AdwGizmo",
        "HistoryView",
        "GtkBuiltinIcon",
    ] {
        assert!(!text.contains(class), "{class} shown:\n{text}");
    }
    let found = desk.ok(&["find", "GtkMenuButton", "--app", "gnome-calculator"]);
    assert_eq!(found["matches"], serde_json::json!([]), "{found}");
}

/// find matches what observe shows: a button whose label hides a zero-width space
/// is shown as `S\u{200b}end`, and both that text, copied from the snapshot, and the
/// plain word find it.
#[test]
fn find_matches_the_text_observe_shows() {
    let dir = TempDir::new("find-shown");
    let desk = Desk::start(dir.path());
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "zenity",
        "--question",
        "--title",
        "Shown",
        "--ok-label",
        "S\u{200b}end",
        "--cancel-label",
        "Keep",
    ]);
    desk.wait_for("zenity", "button", "Keep", 60000);
    let obs = desk.ok(&["observe", "--app", "zenity"]);
    let text = obs["text"].as_str().unwrap();
    let shown = r"S\u{200b}end";
    assert!(text.contains(&format!("button \"{shown}\"")), "{text}");
    for query in [shown, "Send", "send"] {
        let found = desk.ok(&["find", query, "--app", "zenity", "--role", "button"]);
        assert_eq!(
            found["matches"].as_array().map(Vec::len),
            Some(1),
            "{query:?}: {found}"
        );
        assert_eq!(found["matches"][0]["name"], "S\u{200b}end", "{found}");
    }
}

/// find searches long texts whole: in a 128k-character file whose last line holds
/// the marker (far past the 2,000 characters every read takes of a field), `find`
/// finds the text field, and says nothing was left unsearched.
#[test]
fn find_searches_long_texts_whole() {
    let dir = TempDir::new("find-partial");
    let file = dir.path().join("long.txt");
    let mut body = String::new();
    while body.len() < 128 * 1024 {
        body.push_str("lorem ipsum dolor sit amet, consectetur adipiscing elit\n");
    }
    body.push_str("TAIL_MARKER_Ωβγ\n");
    std::fs::write(&file, &body).unwrap();
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "mousepad", file.to_str().unwrap()]);
    desk.ok(&[
        "wait",
        "--app",
        "mousepad",
        "--text",
        "lorem ipsum",
        "--timeout-ms",
        "60000",
    ]);
    // The marker lies past the head every read takes: find reads that one long
    // text whole and finds it, and nothing is left unsearched.
    let found = desk.ok(&["find", "TAIL_MARKER", "--app", "mousepad"]);
    assert_eq!(found["matches"][0]["role"], "textbox", "{found}");
    assert_eq!(found["unsearched"]["values_cut"], 0, "{found}");
    // `read` returns the text exactly, whole or in parts by character offsets,
    // checked against the file itself.
    let field = found["matches"][0]["ref"].as_str().unwrap().to_owned();
    let whole = desk.ok(&["read", &field]);
    assert_eq!(whole["complete"], true, "{}", whole["total_chars"]);
    assert_eq!(
        whole["text"].as_str().unwrap().trim_end(),
        body.trim_end(),
        "the whole text as in the file"
    );
    let tail = desk.ok(&["read", &field, "--tail", "16"]);
    assert_eq!(tail["text"].as_str().unwrap().trim_end(), "TAIL_MARKER_Ωβγ");
    let part = desk.ok(&["read", &field, "--from", "6", "--to", "11"]);
    assert_eq!(part["text"], "ipsum", "{part}");
    assert_eq!(
        (part["from"].as_u64(), part["to"].as_u64()),
        (Some(6), Some(11))
    );
    // Offsets it cannot use, and an element with no text, are errors that say so.
    let total = whole["total_chars"].as_u64().unwrap();
    let past = (total + 10).to_string();
    desk.fails_with(
        &["read", &field, "--from", &past],
        "COMPUTER_INVALID_ARGUMENT",
    );
    desk.fails_with(
        &["read", &field, "--from", "10", "--to", "5"],
        "COMPUTER_INVALID_ARGUMENT",
    );
    let menu = desk.ok(&["find", "File", "--app", "mousepad", "--role", "menuitem"])["matches"][0]
        ["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    desk.fails_with(&["read", &menu], "COMPUTER_INVALID_ARGUMENT");
    // A text in no field: "no element matches", and nothing unsearched to add.
    let out = desk
        .command()
        .args(["find", "NOT_IN_THE_FILE_xyz", "--app", "mousepad"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.trim(),
        "no element matches \"NOT_IN_THE_FILE_xyz\"",
        "{out}"
    );
    // What was read is still found.
    let found = desk.ok(&["find", "lorem ipsum", "--app", "mousepad"]);
    assert!(!found["matches"].as_array().unwrap().is_empty(), "{found}");
}

/// A text field with no name of its own is named by its label (relation
/// `LABELLED_BY`): the file name field of a GTK Save dialog is "Name", found by it.
#[test]
fn text_fields_are_named_by_their_label() {
    let dir = TempDir::new("labelled");
    let desk = Desk::start(dir.path());
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "zenity",
        "--file-selection",
        "--save",
        "--title",
        "Labelled",
    ]);
    desk.wait_for("zenity", "button", "Cancel", 60000);
    let found = desk.ok(&["find", "Name", "--app", "zenity", "--role", "textbox"]);
    // On screen: the one field. The dialog's hidden popovers hold more text fields
    // ("Folder Name"); a search reaches them too, marked off screen, after it.
    let on_screen: Vec<&str> = found["matches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            !m["states"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s == "offscreen")
        })
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(on_screen, ["Name"], "{found}");
    assert_eq!(
        found["matches"][0]["name"], "Name",
        "on screen first: {found}"
    );
    let obs = desk.ok(&["observe", "--app", "zenity"]);
    assert!(
        obs["text"].as_str().unwrap().contains("textbox \"Name\""),
        "{obs}"
    );
}

/// A GTK 3 file chooser's Files table names its files: the Name cell holds an icon
/// and a text part and no name of its own, and its parts name it (`cell "b.txt"`),
/// so `find b.txt` finds it. Reading the table makes no text call on an object
/// without `Text` (GTK would log `ATK_IS_TEXT` criticals to the app's stderr).
#[test]
fn file_chooser_rows_show_and_find_their_names() {
    let dir = TempDir::new("chooser");
    let folder = dir.path().join("files");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("a.txt"), "a\n").unwrap();
    std::fs::write(folder.join("b.txt"), "bb\n").unwrap();
    let desk = Desk::start(dir.path());
    let start_in = format!("{}/", folder.display());
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "zenity",
        "--file-selection",
        "--title",
        "Chooser",
        "--filename",
        &start_in,
    ]);
    desk.wait_for("zenity", "cell", "b.txt", 60000);
    let obs = desk.ok(&["observe", "--app", "zenity"]);
    let text = obs["text"].as_str().unwrap();
    for line in ["cell \"a.txt\"", "cell \"b.txt\"", "cell \"3 bytes\""] {
        assert!(text.contains(line), "{line}:\n{text}");
    }
    let found = desk.ok(&["find", "b.txt", "--app", "zenity"]);
    assert_eq!(found["matches"][0]["name"], "b.txt", "{found}");
    let log = std::fs::read_dir(desk.runtime())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("zenity.log"))
        .find(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .expect("zenity's log in its sandbox directory");
    assert!(
        !log.contains("ATK_IS_TEXT"),
        "text calls on non-text objects:\n{log}"
    );
}

/// A zenity list of "item 1" … "item 200" in a sandbox, in accept-edits mode, with
/// its first row on screen; zenity writes the row it returns to the returned file.
fn zenity_list(dir: &TempDir) -> (Desk<'_>, std::path::PathBuf) {
    let out = dir.path().join("list.out");
    let items: Vec<String> = (1..=200).map(|i| format!("'item {i}'")).collect();
    let script = format!(
        "zenity --list --title Long --column=Item {} > '{}'",
        items.join(" "),
        out.display()
    );
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "sh", "-c", &script]);
    desk.wait_for("zenity", "cell", "item 1", 60000);
    (desk, out)
}

/// What zenity printed once its list was answered (Return): the selected row.
fn zenity_answer(out: &std::path::Path) -> String {
    let start = std::time::Instant::now();
    while std::fs::read_to_string(out).unwrap_or_default().is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "zenity did not answer"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::fs::read_to_string(out).unwrap().trim().to_owned()
}

/// A long GTK list shows the rows on screen: after `keys End` the table's marker and
/// rows follow the view to row 200 (zenity prints the row it returns, the oracle
/// that row 200 is the one selected), and `scroll up` moves the view back through
/// the scroll bar.
#[test]
fn a_long_list_shows_the_rows_on_screen_and_scrolls() {
    let dir = TempDir::new("long-list");
    let (desk, out) = zenity_list(&dir);
    desk.ok(&["observe", "--app", "zenity"]);
    desk.ok(&["keys", "End", "--app", "zenity"]);
    let obs = desk.ok(&["observe", "--app", "zenity"]);
    let text = obs["text"].as_str().unwrap();
    assert!(text.contains("table 200×1, showing rows "), "{text}");
    assert!(
        text.contains("-200, columns"),
        "the view ends at row 200:\n{text}"
    );
    assert!(text.contains("cell \"item 200\""), "{text}");
    assert!(!text.contains("cell \"item 1\""), "{text}");
    let table = desk.ok(&["find", "", "--app", "zenity", "--role", "table"])["matches"][0]["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    // A table is read by its visible range: --from is not for it.
    let v = desk.fails_with(
        &["observe", "--scope", &table, "--from", "10"],
        "COMPUTER_INVALID_ARGUMENT",
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("scroll"),
        "{v}"
    );
    let v = desk.ok(&["act", &table, "scroll", "up"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    let obs = desk.ok(&["observe", "--app", "zenity"]);
    let text = obs["text"].as_str().unwrap();
    assert!(!text.contains("-200, columns"), "scrolled up:\n{text}");
    // The oracle: Return answers with the selected row, row 200.
    desk.ok(&["keys", "Return", "--app", "zenity"]);
    assert_eq!(zenity_answer(&out), "item 200");
}

/// find reaches rows of a GTK list that are not on screen (the table is read whole
/// for a search, its cells out of view marked off screen), and `scroll into_view`
/// brings one on screen: GTK 3 answers false to `Component.ScrollTo` on a cell, so
/// the table's scroll bar is set, and the cell's extents confirm it is in view. The
/// oracle: selected, the row is the one zenity answers with.
#[test]
fn find_reaches_list_rows_off_screen_and_brings_one_into_view() {
    let dir = TempDir::new("list-find");
    let (desk, out) = zenity_list(&dir);
    let found = desk.ok(&["find", "item 173", "--app", "zenity", "--role", "cell"]);
    let matches = found["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 1, "{found}");
    let line = matches[0]["line"].as_str().unwrap();
    assert!(line.contains("cell \"item 173\""), "{found}");
    assert!(line.contains("off screen"), "{found}");
    let cell = matches[0]["ref"].as_str().unwrap().to_owned();
    // Off screen, only scrolling it into view is allowed.
    desk.fails_with(&["act", &cell, "click"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    let v = desk.ok(&["act", &cell, "scroll", "into_view"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert!(
        v["text"].as_str().unwrap().contains("row 173 is in view"),
        "{v}"
    );
    let obs = desk.ok(&["observe", "--app", "zenity"]);
    let text = obs["text"].as_str().unwrap();
    assert!(text.contains("cell \"item 173\""), "{text}");
    assert!(!text.contains("cell \"item 1\""), "{text}");
    // Scrolling moved nothing else: the row is not selected until asked.
    assert!(!text.contains("cell \"item 173\" selected"), "{text}");
    desk.ok(&["act", &cell, "select"]);
    // The tree view's cursor never moved, so Return would activate nothing: OK
    // answers with the selected row.
    let ok = desk.ok(&["find", "OK", "--app", "zenity", "--role", "button"])["matches"][0]["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    desk.ok(&["act", &ok, "click"]);
    assert_eq!(zenity_answer(&out), "item 173");
}

/// An app that shows a window but publishes no tree (mousepad with
/// `NO_AT_BRIDGE=1`) is listed, not dropped: `apps` marks it
/// `accessibility_disabled`, reads on it fail with that code and the remedy, and
/// `doctor` names it.
#[test]
fn apps_without_a_tree_are_listed_with_the_remedy() {
    let dir = TempDir::new("no-tree");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "env", "NO_AT_BRIDGE=1", "mousepad"]);
    let app = desk.listed_app("mousepad", |n| n == "mousepad");
    assert_eq!(app["status"], "accessibility_disabled", "{app}");
    let v = desk.fails_with(
        &["observe", "--app", "mousepad"],
        "COMPUTER_ACCESSIBILITY_DISABLED",
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Restart it"),
        "{v}"
    );
    let (out, _) = desk.run(&["doctor"]);
    let doctor = String::from_utf8_lossy(&out.stdout);
    assert!(doctor.contains("mousepad"), "{doctor}");
}

/// A Chromium started without renderer accessibility (not through `sandbox run`,
/// which adds `--force-renderer-accessibility`) shows a window whose only child is
/// the null object: it is listed `accessibility_disabled`, reads on it fail with
/// that code naming the flag, and `doctor` names it. Before, it read as an empty
/// window and find answered "no element matches".
#[test]
fn chromium_without_accessibility_is_listed_with_the_flag() {
    let dir = TempDir::new("chromium-no-a11y");
    let desk = Desk::start(dir.path());
    let profile = format!("--user-data-dir={}", dir.path().join("profile").display());
    // `--no-sandbox`: Chromium refuses to run as root without it (CI runs as root).
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "env",
        "DESKPILOT_TEST=1",
        "chromium",
        "--no-sandbox",
        &profile,
        "--no-first-run",
        "about:blank",
    ]);
    let chromium = |apps: &serde_json::Value| {
        apps["apps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| {
                a["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case("chromium"))
            })
            .cloned()
    };
    let start = std::time::Instant::now();
    let mut disabled_since = None;
    loop {
        let apps = desk.ok(&["apps"]);
        let status = chromium(&apps).map(|a| a["status"].clone());
        if status
            .as_ref()
            .is_some_and(|s| s == "accessibility_disabled")
        {
            // Listed so for 3 s running: not a window still being built.
            let since = *disabled_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > std::time::Duration::from_secs(3) {
                break;
            }
        } else {
            disabled_since = None;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(90),
            "chromium never listed accessibility_disabled: {apps}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let v = desk.fails_with(
        &["observe", "--app", "chromium"],
        "COMPUTER_ACCESSIBILITY_DISABLED",
    );
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("--force-renderer-accessibility"), "{v}");
    desk.fails_with(
        &["find", "anything", "--app", "chromium"],
        "COMPUTER_ACCESSIBILITY_DISABLED",
    );
    let (out, _) = desk.run(&["doctor"]);
    let doctor = String::from_utf8_lossy(&out.stdout);
    assert!(doctor.to_lowercase().contains("chromium"), "{doctor}");
}

/// The `line` of each match of a `find --json` result.
fn match_lines(found: &serde_json::Value) -> Vec<&str> {
    found["matches"]
        .as_array()
        .expect("matches is an array")
        .iter()
        .filter_map(|m| m["line"].as_str())
        .collect()
}

/// Range controls say their bounds and, where it decides the arrow keys, their
/// orientation: gtk3-widget-factory's scales show `range=MIN–MAX` and
/// `horizontal`/`vertical` in text and `--json` states; its progress bars show the
/// range in text and the orientation in states only.
#[test]
fn ranges_show_orientation_and_bounds() {
    let dir = TempDir::new("ranges");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "gtk3-widget-factory"]);
    desk.wait_for("gtk3-widget-factory", "slider", "", 60000);
    let found = desk.ok(&[
        "find",
        "",
        "--app",
        "gtk3-widget-factory",
        "--role",
        "slider",
    ]);
    let lines = match_lines(&found);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("value=\"50\" range=1–100 horizontal")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("range=1–100 vertical")),
        "{lines:#?}"
    );
    let states: Vec<String> = found["matches"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["states"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect();
    assert!(states.iter().any(|s| s == "vertical"), "{states:?}");
    let bars = desk.ok(&[
        "find",
        "",
        "--app",
        "gtk3-widget-factory",
        "--role",
        "progressbar",
    ]);
    // A progress bar's orientation changes nothing a user does: its line leaves
    // it out, its states keep it.
    let bar_lines = match_lines(&bars);
    assert!(
        bar_lines
            .iter()
            .any(|l| l.ends_with("range=0–1") && l.contains("value=\"0.5\"")),
        "{bar_lines:#?}"
    );
    assert!(
        bars.to_string().contains("\"horizontal\""),
        "the states still say it: {bars}"
    );
}

/// A sandbox with a new LibreOffice Calc sheet whose cells are on the bus.
fn calc(dir: &TempDir) -> Desk<'_> {
    let desk = Desk::start(dir.path());
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "soffice",
        "--calc",
        "--norestore",
        "--nologo",
    ]);
    desk.wait_for("soffice", "cell", "B2", 120000);
    desk
}

/// Selecting all of a LibreOffice Calc sheet is one diff line with its range, not a
/// line per visible cell, and observe says the range once on the table's line.
#[test]
fn a_calc_selection_is_one_range_in_the_diff() {
    let dir = TempDir::new("calc-select");
    let desk = calc(&dir);
    desk.ok(&["observe", "--app", "soffice"]);
    let v = desk.ok(&["keys", "ctrl+a", "--app", "soffice"]);
    let diff = v["text"].as_str().unwrap();
    assert!(
        diff.contains("cells (unselected) → selected: A1:"),
        "{diff}"
    );
    let cell_lines = diff.lines().filter(|l| l.contains("] cell ")).count();
    assert!(cell_lines < 3, "cells one by one:\n{diff}");
    // Observe says it once too, on the table's line.
    let obs = desk.ok(&["observe", "--app", "soffice"]);
    let text = obs["text"].as_str().unwrap();
    assert!(text.contains(", selected A1:"), "{text}");
    let selected_cells = text
        .lines()
        .filter(|l| l.contains("] cell ") && l.contains(" selected"))
        .count();
    assert_eq!(selected_cells, 0, "cells one by one:\n{text}");
}

/// Typing in a Calc sheet as a person does: values entered with Return (which moves
/// to the next cell there and submits nothing, so no confirmation is asked even
/// though the window shows a "Find & Replace" button), then a cell being edited.
/// The diff of an edit names the edited cell's text and nothing the edit did not
/// change: the cells above keep their values, and no line says a value went from
/// something to the same thing.
#[test]
fn editing_a_calc_cell_changes_only_that_cell_in_the_diff() {
    let dir = TempDir::new("calc-edit");
    let desk = calc(&dir);
    desk.ok(&["observe", "--app", "soffice"]);
    for _ in 0..5 {
        desk.ok(&["keys", "--text", "1"]);
        desk.ok(&["keys", "Return"]);
    }
    desk.ok(&["keys", "--text", "1\n"]);
    let cells = desk.ok(&["find", "1", "--role", "cell"]);
    let found = cells.to_string();
    for a in ["A1", "A2", "A5", "A6"] {
        assert!(found.contains(&format!("\"{a}\"")), "{a} holds 1: {found}");
    }
    // Observe lists the cells that hold something and counts the empty ones.
    let obs = desk.ok(&["observe", "--app", "soffice"]);
    let text = obs["text"].as_str().unwrap();
    for a in ["A1", "A2", "A3", "A4", "A5", "A6"] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!("] cell \"{a}\" value=\"1\""))),
            "{a} is listed with its value:\n{text}"
        );
    }
    assert!(
        !text.contains("] cell \"B1\""),
        "an empty cell is not listed:\n{text}"
    );
    assert!(
        text.contains("empty cells not listed; find one by its name (\"B1\")"),
        "{text}"
    );
    // A7 is being edited: the diff shows the edit and leaves A1–A6 alone.
    let v = desk.ok(&["keys", "--text", "42"]);
    let diff = v["text"].as_str().unwrap();
    assert!(diff.contains("\"42\""), "the edit is shown:\n{diff}");
    let cell_lines: Vec<&str> = diff.lines().filter(|l| l.contains("] cell \"A")).collect();
    assert!(
        cell_lines.is_empty(),
        "cells the edit did not change:\n{diff}"
    );
    for line in diff.lines().filter(|l| l.starts_with('~')) {
        if let Some((_, change)) = line.split_once(" value ") {
            let (from, to) = change.split_once(" → ").unwrap_or((change, ""));
            assert_ne!(from.trim(), to.trim(), "a no-op line: {line}");
        }
    }
    // Return ends the edit: A7 now holds 42.
    let v = desk.ok(&["keys", "Return"]);
    let diff = v["text"].as_str().unwrap();
    assert!(
        diff.lines()
            .any(|l| l.contains("cell \"A7\"") && l.contains("→ \"42\"")),
        "{diff}"
    );
}

/// One frozen app costs one app: with the bound mousepad stopped (`SIGSTOP`), a read
/// of the bound window says it is not responding and the grant stays on it; the app
/// is remembered in the runtime directory (so later reads give it one short probe);
/// another app still reads; once mousepad runs again the same read works and the
/// record is gone.
#[test]
fn a_frozen_app_costs_one_app_and_keeps_the_grant() {
    let dir = TempDir::new("frozen");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    for app in ["mousepad", "gnome-calculator"] {
        desk.ok(&["wait", "--app", app, "--text", "", "--timeout-ms", "60000"]);
    }
    let obs = desk.ok(&["observe", "--app", "mousepad"]);
    let pid = obs["window"]["pid"].as_u64().expect("mousepad's pid") as i32;
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    let v = desk.fails_with(&["observe"], "COMPUTER_NOT_RESPONDING");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("mousepad"),
        "{v}"
    );
    let record = std::fs::read_to_string(desk.runtime().join("not-responding.json"))
        .expect("the frozen app is remembered");
    assert!(record.contains(&format!("\"{pid}\"")), "{record}");
    let apps = desk.ok(&["apps"]);
    assert!(
        apps["apps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "mousepad" && a["status"] == "not_responding"),
        "{apps}"
    );
    // Moving to another window says which app the grant left, and why.
    let moved = desk.ok(&["observe", "--app", "gnome-calculator"]);
    let warnings = moved["warnings"].to_string();
    assert!(
        warnings.contains("the grant left") && warnings.contains("mousepad"),
        "{moved}"
    );
    desk.fails_with(&["observe", "--app", "mousepad"], "COMPUTER_NOT_RESPONDING");
    signal("-CONT");
    let start = std::time::Instant::now();
    loop {
        let (out, v) = desk.run(&["observe", "--app", "mousepad"]);
        if out.status.success() {
            assert_eq!(v["window"]["app"], "mousepad", "{v}");
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "mousepad never answered again: {v}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let record =
        std::fs::read_to_string(desk.runtime().join("not-responding.json")).unwrap_or_default();
    assert!(!record.contains(&format!("\"{pid}\"")), "{record}");
}

/// A list longer than one read takes is paged, never looped: a Chromium page with a
/// 600-item list says "… 100 more items, use observe scope=eN from=500" under the
/// scope, and that page, scrolled to the end, shows item 600 and says which
/// children it holds. Items read but off screen are counted, not dropped silently.
/// find reaches item 580 past the child cap, and `scroll into_view` brings it on
/// screen.
#[test]
fn a_list_longer_than_one_read_is_paged() {
    let dir = TempDir::new("paged");
    let items: String = (1..=600).map(|i| format!("<li>item {i}</li>")).collect();
    let page = dir.path().join("list.html");
    std::fs::write(
        &page,
        format!("<html><head><title>Long list</title></head><body><h1>Top</h1><ul>{items}</ul><button>Bottom</button></body></html>"),
    )
    .unwrap();
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    let url = format!("file://{}", page.display());
    desk.ok(&["sandbox", "run", "--", "chromium", &url]);
    desk.ok(&[
        "wait",
        "--app",
        "chromium",
        "--text",
        "item 1",
        "--timeout-ms",
        "90000",
    ]);
    desk.ok(&["observe", "--app", "chromium"]);
    let list = desk.ok(&["find", "", "--app", "chromium", "--role", "list"])["matches"][0]["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = desk.ok(&["observe", "--scope", &list]);
    let text = first["text"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "… 100 more items, use observe scope={list} from=500"
        )),
        "{text}"
    );
    assert!(text.contains("items off screen"), "{text}");
    // find reaches past the child cap: item 580 is the 580th of 600 children, and
    // it comes back off screen with the way to bring it into view.
    let found = desk.ok(&[
        "find", "item 580", "--app", "chromium", "--role", "listitem",
    ]);
    let hit = &found["matches"][0];
    assert_eq!(found["matches"].as_array().unwrap().len(), 1, "{found}");
    assert!(
        hit["line"].as_str().unwrap().contains("item 580\""),
        "{found}"
    );
    assert!(
        hit["line"].as_str().unwrap().contains("off screen"),
        "{found}"
    );
    assert_eq!(found["unsearched"]["unread_children"], 0, "{found}");
    let item = hit["ref"].as_str().unwrap().to_owned();
    desk.ok(&["act", &item, "scroll", "into_view"]);
    let found = desk.ok(&[
        "find", "item 580", "--app", "chromium", "--role", "listitem",
    ]);
    let line = found["matches"][0]["line"].as_str().unwrap();
    assert!(
        line.contains("item 580\"") && !line.contains("off screen"),
        "{found}"
    );
    // The button after the list is reached too.
    let found = desk.ok(&["find", "Bottom", "--app", "chromium", "--role", "button"]);
    assert_eq!(found["matches"][0]["name"], "Bottom", "{found}");
    desk.ok(&["keys", "End", "--app", "chromium"]);
    let last = desk.ok(&["observe", "--scope", &list, "--from", "500"]);
    let text = last["text"].as_str().unwrap();
    assert!(text.contains("children 501–600 of 600"), "{text}");
    desk.fails_with(
        &["observe", "--scope", &list, "--from", "600"],
        "COMPUTER_INVALID_ARGUMENT",
    );
    assert!(text.contains("item 600\""), "{text}");
    assert!(!text.contains("item 1\""), "{text}");
    assert!(
        !text.contains("more items, use observe"),
        "nothing after 600:\n{text}"
    );
}

/// A document that builds its paragraphs on demand (LibreOffice Writer: `MANAGES_
/// DESCENDANTS`, and `GetChildren` answers nothing) shows the paragraphs it has,
/// and find reaches their text. The oracle is pyatspi's own reading of the document.
#[test]
fn writer_paragraphs_are_read_and_found() {
    let dir = TempDir::new("writer");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "soffice",
        "--writer",
        "--norestore",
        "--nologo",
    ]);
    desk.ok(&[
        "wait",
        "--window-title",
        "LibreOffice Writer",
        "--timeout-ms",
        "120000",
    ]);
    desk.ok(&[
        "wait",
        "--window",
        "Writer",
        "--role",
        "document",
        "--name",
        "",
        "--timeout-ms",
        "60000",
    ]);
    desk.ok(&["observe", "--window", "Writer"]);
    desk.ok(&[
        "keys",
        "--text",
        "First paragraph WRITER_ONE.\nSecond paragraph WRITER_TWO.",
        "--window",
        "Writer",
    ]);
    let obs = desk.ok(&["observe", "--window", "Writer"]);
    let text = obs["text"].as_str().unwrap();
    for p in [
        "First paragraph WRITER_ONE.",
        "Second paragraph WRITER_TWO.",
    ] {
        assert!(
            text.contains(&format!("paragraph value=\"{p}\"")),
            "{p}:\n{text}"
        );
    }
    let found = desk.ok(&["find", "WRITER_TWO", "--window", "Writer"]);
    assert_eq!(found["matches"][0]["role"], "paragraph", "{found}");

    // pyatspi reads the same two paragraphs under the document.
    let oracle = writer_oracle(&desk, "LibreOffice Writer");
    assert_eq!(
        oracle["paragraphs"],
        serde_json::json!([
            "First paragraph WRITER_ONE.",
            "Second paragraph WRITER_TWO."
        ]),
        "{oracle}"
    );
}

/// pyatspi's reading of the Writer window titled like `title`
/// (`fixtures/writer_oracle.py`): `paragraphs` (the texts of the document's
/// children, those in view), `carets`, `scroll` (the vertical scroll bar's value)
/// and `pages` (the status bar's "Page 1 of N").
fn writer_oracle(desk: &Desk<'_>, title: &str) -> serde_json::Value {
    let out = desk.python_output(include_str!("fixtures/writer_oracle.py"), &[title]);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("oracle output {out:?}: {e}"))
}

/// The ref of the first line of `text` (a snapshot) that holds `needle`.
fn ref_of_line(text: &str, needle: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}:\n{text}"));
    let start = line.find('[').expect("a ref") + 1;
    let end = start + line[start..].find(']').expect("a ref's end");
    line[start..end].to_owned()
}

/// Words only: a paragraph that a page break splits is two parts of a read, each on
/// its own line, where the source had one line.
fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Writes `NAME.txt` with `text` under `dir` and converts it to `NAME.odt` there with
/// LibreOffice's own converter (a profile of its own, so no running LibreOffice
/// takes the job). Returns the `.odt` path.
fn odt(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let txt = dir.join(format!("{name}.txt"));
    std::fs::write(&txt, text).unwrap();
    let out = std::process::Command::new("soffice")
        .arg(format!(
            "-env:UserInstallation=file://{}",
            dir.join("lo-convert").display()
        ))
        .args(["--headless", "--convert-to", "odt", "--outdir"])
        .arg(dir)
        .arg(&txt)
        .output()
        .expect("soffice runs");
    let odt = dir.join(format!("{name}.odt"));
    assert!(
        odt.exists(),
        "soffice made no {}: {}",
        odt.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    odt
}

/// A Writer document full when it opens — from the command line (one page) and
/// through File ▸ Open, driven by deskpilot's own acts (over 50 pages) — shows the
/// paragraphs in view, says that the rest was not read and how to reach it, is
/// searched in view with the rest named as not searched, and `read` returns its whole
/// text, paging the view and putting it back, within bounds. The oracles: pyatspi's
/// reading of the same window (paragraphs in view, scroll bar, caret, page count)
/// and the text the documents were made from.
#[test]
fn writer_documents_opened_from_files_are_read_found_and_read_whole() {
    let dir = TempDir::new("writer-files");
    let short = "ALPHA_PARA_TEXT first paragraph\n\nOMEGA_PARA_TEXT second paragraph\n";
    let long: String = (1..=700)
        .map(|i| {
            let words: Vec<String> = (0..45)
                .map(|j| format!("word{}", (i * 7 + j) % 97))
                .collect();
            let tag = if i == 700 { "LAST_PARA_TEXT " } else { "" };
            format!("{tag}PARA{i:04} {}\n", words.join(" "))
        })
        .collect();
    let short_odt = odt(dir.path(), "short", short);
    let long_odt = odt(dir.path(), "long", &long);
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");

    // From the command line: one page.
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "lowriter",
        "--norestore",
        "--nologo",
        short_odt.to_str().unwrap(),
    ]);
    desk.ok(&[
        "wait",
        "--window-title",
        "short.odt",
        "--timeout-ms",
        "120000",
    ]);
    desk.ok(&[
        "wait",
        "--window",
        "short.odt",
        "--text",
        "ALPHA_PARA",
        "--timeout-ms",
        "60000",
    ]);
    let oracle = writer_oracle(&desk, "short.odt");
    assert_eq!(
        oracle["paragraphs"],
        serde_json::json!([
            "ALPHA_PARA_TEXT first paragraph",
            "",
            "OMEGA_PARA_TEXT second paragraph"
        ]),
        "{oracle}"
    );
    let obs = desk.ok(&["observe", "--window", "short.odt"]);
    let text = obs["text"].as_str().unwrap();
    for p in [
        "ALPHA_PARA_TEXT first paragraph",
        "OMEGA_PARA_TEXT second paragraph",
    ] {
        assert!(
            text.contains(&format!("paragraph value=\"{p}\"")),
            "{p}:\n{text}"
        );
    }
    assert!(
        !text.contains("more of the document"),
        "all of it in view:\n{text}"
    );
    let found = desk.ok(&["find", "ALPHA_PARA", "--window", "short.odt"]);
    assert_eq!(found["matches"][0]["role"], "paragraph", "{found}");
    assert!(
        found["matches"][0]["line"]
            .as_str()
            .is_some_and(|l| l.contains("value=\"ALPHA_PARA_TEXT first paragraph\"")),
        "{found}"
    );
    let doc = ref_of_line(text, "document \"short - LibreOffice Document\"");
    let read = desk.ok(&["read", &doc]);
    let paragraphs: Vec<&str> = oracle["paragraphs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(read["text"], paragraphs.join("\n"), "{read}");
    assert_eq!(read["complete"], true, "{read}");

    // Through File ▸ Open, with deskpilot's acts: over 50 pages.
    let menu = desk.ok(&[
        "find",
        "File",
        "--window",
        "short.odt",
        "--role",
        "menuitem",
    ]);
    let file = menu["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "File")
        .unwrap_or_else(|| panic!("a File menu: {menu}"));
    desk.ok(&["act", file["ref"].as_str().unwrap(), "click"]);
    let items = desk.ok(&[
        "find",
        "Open...",
        "--window",
        "short.odt",
        "--role",
        "menuitem",
    ]);
    let open = items["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "Open...")
        .unwrap_or_else(|| panic!("File ▸ Open...: {items}"));
    desk.ok(&["act", open["ref"].as_str().unwrap(), "click"]);
    desk.ok(&["wait", "--window-title", "Open", "--timeout-ms", "60000"]);
    // GTK's file chooser (observed first: keys go to the window a read bound):
    // ctrl+L shows the location field.
    desk.ok(&["observe", "--window", "Open"]);
    desk.ok(&["keys", "ctrl+l", "--window", "Open"]);
    let dialog = desk.ok(&["observe", "--window", "Open", "--query", "textbox"]);
    let location = ref_of_line(dialog["text"].as_str().unwrap(), "] textbox");
    desk.ok(&["act", &location, "set_value", long_odt.to_str().unwrap()]);
    let button = desk.ok(&["find", "Open", "--window", "Open", "--role", "button"]);
    let button = button["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "Open")
        .unwrap_or_else(|| panic!("the Open button: {button}"));
    desk.ok(&["act", button["ref"].as_str().unwrap(), "click"]);
    desk.ok(&[
        "wait",
        "--window-title",
        "long.odt",
        "--timeout-ms",
        "120000",
    ]);
    desk.ok(&[
        "wait",
        "--window",
        "long.odt",
        "--text",
        "PARA0001",
        "--timeout-ms",
        "60000",
    ]);

    let before = writer_oracle(&desk, "long.odt");
    let pages: u64 = before["pages"]
        .as_str()
        .and_then(|p| p.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a page count: {before}"));
    assert!(pages >= 50, "{pages} pages: {before}");
    let in_view: Vec<&str> = before["paragraphs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        in_view.len() >= 3 && in_view[0].starts_with("PARA0001 "),
        "{before}"
    );
    let obs = desk.ok(&["observe", "--window", "long.odt"]);
    let text = obs["text"].as_str().unwrap();
    // The paragraphs in view, as pyatspi reads them (their heads: a line keeps 120
    // characters), and nothing from beyond.
    for p in &in_view {
        let head: String = p.chars().take(60).collect();
        assert!(
            text.contains(&format!("paragraph value=\"{head}")),
            "{head}:\n{text}"
        );
    }
    assert!(!text.contains("PARA0100 "), "{text}");
    let doc = ref_of_line(text, "document \"long - LibreOffice Document\"");
    assert!(
        text.contains(&format!(
            "… more of the document below the view, not read: act {doc} scroll down to bring it into view, or read {doc} for the whole text"
        )),
        "{text}"
    );
    let found = desk.ok(&["find", "PARA0002 ", "--window", "long.odt"]);
    assert_eq!(found["matches"][0]["role"], "paragraph", "{found}");
    let found = desk.ok(&["find", "LAST_PARA_TEXT", "--window", "long.odt"]);
    assert_eq!(found["matches"], serde_json::json!([]), "{found}");
    assert_eq!(found["unsearched"]["documents_in_view"], 1, "{found}");

    let started = std::time::Instant::now();
    let read = desk.ok(&["read", &doc]);
    let took = started.elapsed();
    assert_eq!(read["complete"], true, "{read}");
    let whole = read["text"].as_str().unwrap();
    assert_eq!(words(whole), words(&long), "the whole text, in order");
    assert!(whole.starts_with(in_view[0]), "{}", &whole[..200]);
    let note = read["note"].as_str().unwrap_or_default();
    assert!(note.contains("(put back where it was)"), "{note}");
    // Bounded: the driver stops reading at 12 s; a 50-page document takes ~2–4 s.
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    // The view and the caret are where they were.
    let after = writer_oracle(&desk, "long.odt");
    assert_eq!(after["scroll"], before["scroll"], "{after}");
    assert_eq!(after["carets"], before["carets"], "{after}");
    assert_eq!(after["paragraphs"], before["paragraphs"], "{after}");

    // Scrolling brings the next view in (the scroll bar's page action: Writer's
    // scroll bar ignores a new value).
    let scrolled = desk.ok(&["act", &doc, "scroll", "down"]);
    assert!(
        scrolled["result"]["note"]
            .as_str()
            .is_some_and(|n| n.contains("incrementBlock")),
        "{scrolled}"
    );
    let moved = writer_oracle(&desk, "long.odt");
    assert!(
        moved["scroll"].as_f64() > before["scroll"].as_f64(),
        "{moved}"
    );
}

/// A Qt 5 app is read, searched and clicked, and outlives it: Qt 5's bridge crashes
/// on `Properties.GetAll`, which reads of other toolkits use.
#[test]
fn a_qt5_app_is_read_and_clicked_and_survives() {
    let dir = TempDir::new("qt5");
    let desk = Desk::start(dir.path());
    desk.run_python(
        dir.path(),
        "qt_probe.py",
        include_str!("fixtures/qt_probe.py"),
    );
    desk.wait_for("qt_probe.py", "button", "Press", 60000);
    let obs = desk.ok(&["observe", "--app", "qt_probe.py"]);
    let text = obs["text"].as_str().unwrap();
    assert!(text.contains("] button \"Press\""), "{text}");
    assert!(text.contains("] textbox value=\"text\""), "{text}");
    let found = desk.ok(&["find", "Press", "--app", "qt_probe.py"]);
    let r = found["matches"][0]["ref"]
        .as_str()
        .expect("the button's ref")
        .to_string();
    let v = desk.ok(&["act", &r, "click"]);
    let diff = v["text"].as_str().unwrap();
    assert!(
        diff.contains("\"Pressed\""),
        "the click changed the label:\n{diff}"
    );
    let again = desk.ok(&["observe", "--app", "qt_probe.py"]);
    assert!(
        again["text"]
            .as_str()
            .unwrap()
            .contains("label \"Pressed\""),
        "{again}"
    );
}

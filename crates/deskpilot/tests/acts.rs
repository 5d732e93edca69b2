//! Actions that do what they say or say they did not: real apps in a sandbox desktop
//! of their own, each outcome read by an oracle deskpilot did not write (zenity's
//! stdout, the process's exit, the page title through `xprop`, a file on disk)
//! (docs/ARCHITECTURE.md §1.6, §6 "Acting").

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::own::{Desk, TempDir};

/// A zenity dialog started through `sh -c` in an accept-edits sandbox, its stdout
/// written to the returned file and its exit status to the file beside it.
fn zenity<'a>(dir: &'a TempDir, args: &str, ready: (&str, &str)) -> (Desk<'a>, PathBuf) {
    let out = dir.path().join("zenity.out");
    let script = format!(
        "zenity {args} > '{o}'; echo $? > '{o}.status'",
        o = out.display()
    );
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "sh", "-c", &script]);
    desk.ok(&[
        "wait",
        "--app",
        "zenity",
        "--role",
        ready.0,
        "--name",
        ready.1,
        "--timeout-ms",
        "60000",
    ]);
    (desk, out)
}

/// zenity's exit status once it ended, waiting up to `within`; `None` while it runs.
fn exit_status(out: &Path, within: Duration) -> Option<String> {
    let status = out.with_extension("out.status");
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(&status)
            && !s.trim().is_empty()
        {
            return Some(s.trim().to_owned());
        }
        if start.elapsed() >= within {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first element of `role` (and `name`, when given) in the bound window.
fn find_ref(desk: &Desk<'_>, role: &str, name: &str) -> String {
    let v = desk.ok(&["find", name, "--role", role]);
    v["matches"][0]["ref"]
        .as_str()
        .unwrap_or_else(|| panic!("no {role} {name:?}: {v}"))
        .to_owned()
}

/// A click on a text field focuses it and places the caret; it never runs the
/// field's `activate` action, which is Enter and submits the dialog. The oracle:
/// zenity is still running after the click (it prints its text and exits when
/// submitted), and prints the text set afterwards once OK is clicked.
#[test]
fn a_click_on_a_text_field_focuses_it_and_submits_nothing() {
    let dir = TempDir::new("field-click");
    let (desk, out) = zenity(&dir, "--entry --entry-text=draft", ("button", "OK"));
    desk.ok(&["observe", "--app", "zenity"]);
    let entry = find_ref(&desk, "textbox", "");
    let v = desk.ok(&["act", &entry, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert!(
        v["result"]["method"]
            .as_str()
            .unwrap()
            .contains("GrabFocus"),
        "{v}"
    );
    assert_eq!(
        exit_status(&out, Duration::from_secs(2)),
        None,
        "the click submitted the dialog: {:?}",
        std::fs::read_to_string(&out)
    );
    let v = desk.ok(&["act", &entry, "double_click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert_eq!(exit_status(&out, Duration::from_secs(1)), None);
    // The field has focus: keys land in it, after the text.
    desk.ok(&["keys", "--text", "ed"]);
    let ok = find_ref(&desk, "button", "OK");
    desk.ok(&["act", &ok, "click"]);
    assert_eq!(
        exit_status(&out, Duration::from_secs(20)).as_deref(),
        Some("0")
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "drafted");
}

/// The same on a password dialog: a click on the field submits no empty password.
#[test]
fn a_click_on_a_password_field_submits_no_password() {
    let dir = TempDir::new("password-click");
    let (desk, out) = zenity(&dir, "--password", ("button", "OK"));
    desk.ok(&["observe", "--app", "zenity"]);
    let field = find_ref(&desk, "textbox", "");
    let v = desk.ok(&["act", &field, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert_eq!(
        exit_status(&out, Duration::from_secs(2)),
        None,
        "the click submitted an empty password"
    );
    let cancel = find_ref(&desk, "button", "Cancel");
    desk.ok(&["act", &cancel, "click"]);
    assert_eq!(
        exit_status(&out, Duration::from_secs(20)).as_deref(),
        Some("1")
    );
}

/// mousepad on a file of its own, in an accept-edits sandbox, with its window read.
fn mousepad<'a>(dir: &'a TempDir, text: &str) -> (Desk<'a>, PathBuf) {
    let doc = dir.path().join("doc");
    std::fs::create_dir_all(&doc).unwrap();
    let file = doc.join("f.txt");
    std::fs::write(&file, text).unwrap();
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "mousepad", file.to_str().unwrap()]);
    desk.wait_for("mousepad", "menuitem", "File", 60000);
    desk.ok(&["observe", "--app", "mousepad"]);
    (desk, file)
}

/// `keys` takes no refs, so it is never stale: with the grant bound to a dialog that
/// an act then closed, keys for the app go to the window the grant moved to, and say
/// so. The oracle: the typed text is in the file mousepad saves.
#[test]
fn keys_after_the_bound_dialog_closed_go_to_the_window_the_grant_moved_to() {
    let dir = TempDir::new("keys-moved");
    let (desk, file) = mousepad(&dir, "x");
    let v = desk.ok(&["keys", "ctrl+r", "--app", "mousepad"]);
    let dialog = v["new_windows"][0]["window_ref"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_owned();
    desk.ok(&["observe", "--window", &dialog]);
    let close = find_ref(&desk, "button", "Close");
    desk.ok(&["act", &close, "click"]);
    let v = desk.ok(&["keys", "--text", "hello", "--app", "mousepad"]);
    let text = v["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("the bound window [{dialog}]"))
            && text.contains("the keys went there"),
        "{text}"
    );
    desk.ok(&["keys", "ctrl+s", "--app", "mousepad"]);
    let start = Instant::now();
    while std::fs::read_to_string(&file).unwrap() != "hellox" {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "saved: {:?}",
            std::fs::read_to_string(&file)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An act on refs of an app that has ended says the window is gone and which one,
/// and does not wait on the dead app.
#[test]
fn acting_on_refs_of_an_app_that_ended_says_its_window_is_gone() {
    let dir = TempDir::new("app-gone");
    let (desk, _file) = mousepad(&dir, "x");
    let file_menu = find_ref(&desk, "menuitem", "File");
    let v = desk.ok(&["apps"]);
    let pid = v["apps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "mousepad")
        .and_then(|a| a["pid"].as_u64())
        .unwrap_or_else(|| panic!("{v}"));
    let killed = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "mousepad did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let v = desk.fails_with(&["act", &file_menu, "click"], "COMPUTER_STALE_REVISION");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("is gone") && msg.contains("of mousepad"),
        "{msg}"
    );
}

/// One flag names a sandbox everywhere, written as X writes displays or bare: a
/// sandbox started with `--sandbox :N` is listed as `:N`, and that form reaches it.
#[test]
fn a_sandbox_is_named_the_same_way_by_every_command() {
    let dir = TempDir::new("sandbox-flags");
    let run = |args: &[&str]| {
        let out = common::own::bin(dir.path())
            .args(args)
            .output()
            .expect("deskpilot runs");
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // A number far from the ones other tests take (they search from :90).
    let n = 300 + std::process::id() % 200;
    let colon = format!(":{n}");
    let started = run(&["--sandbox", &colon, "sandbox", "start"]);
    assert!(started.contains(&format!("display :{n}")), "{started}");
    let listed = run(&["sandbox", "list"]);
    assert!(listed.contains(&colon), "{listed}");
    let env = run(&["--sandbox", &colon, "sandbox", "env"]);
    assert!(
        env.contains(&format!("DISPLAY={colon}")) || env.contains(&format!("DISPLAY='{colon}'")),
        "{env}"
    );
    run(&["--sandbox", &n.to_string(), "apps"]);
    run(&["--sandbox", &colon, "sandbox", "stop"]);
    let listed = run(&["sandbox", "list"]);
    assert!(!listed.contains(&colon), "{listed}");
}

/// A composite control acts through the child that carries its action: GTK 4's menu
/// buttons in gnome-calculator (the mode menu and the main menu) offer no action
/// themselves; click and expand open their popovers through the inner toggle
/// button, say so, and the popover's items are then observable.
#[test]
fn a_menu_button_opens_its_popover_through_the_child_that_carries_the_action() {
    let dir = TempDir::new("menu-button");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    desk.wait_for("gnome-calculator", "button", "7", 60000);
    let obs = desk.ok(&["observe", "--app", "gnome-calculator"]);
    let text = obs["text"].as_str().unwrap();
    // The mode menu button: an unnamed button whose child is the "Basic" button.
    let lines: Vec<&str> = text.lines().collect();
    let outer = lines
        .windows(2)
        .find(|w| w[0].trim_end().ends_with("] button") && w[1].contains("] button \"Basic\""))
        .map(|w| {
            let l = w[0].trim();
            l[1..l.find(']').unwrap()].to_owned()
        })
        .unwrap_or_else(|| panic!("no mode menu button:\n{text}"));
    let v = desk.ok(&["act", &outer, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    assert!(
        v["result"]["note"]
            .as_str()
            .unwrap_or_default()
            .contains("child"),
        "{v}"
    );
    let diff = v["text"].as_str().unwrap();
    assert!(
        diff.contains("menuitem \"Advanced\""),
        "the popover opened:\n{diff}"
    );
    let found = desk.ok(&["find", "Advanced", "--role", "menuitem"]);
    assert_eq!(found["matches"][0]["name"], "Advanced", "{found}");
    // The same button expanded while open is left as it is.
    desk.ok(&["keys", "Escape"]);
    let v = desk.ok(&["act", &outer, "expand"]);
    assert!(
        v["text"]
            .as_str()
            .unwrap()
            .contains("menuitem \"Advanced\""),
        "{v}"
    );
}

/// `xmodmap -pke` on the desk's display: the keymap as the X server holds it.
fn xmodmap(display: u32) -> String {
    let out = std::process::Command::new("xmodmap")
        .env("DISPLAY", format!(":{display}"))
        .arg("-pke")
        .output()
        .expect("xmodmap runs (Debian x11-xserver-utils)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Keycodes borrowed for characters the keymap lacks are put back even when the
/// typing process is killed (SIGKILL runs no guard): the borrow is recorded in the
/// runtime directory, and `doctor` or any other call on the display restores the map
/// (`doctor` says so). The oracle: `xmodmap -pke` before, during and after.
#[test]
fn a_keymap_left_changed_by_a_killed_call_is_restored() {
    let dir = TempDir::new("keymap-left");
    let (desk, _file) = mousepad(&dir, "");
    let before = xmodmap(desk.display);
    assert!(!before.contains("U4F60"), "{before}");
    for next in ["doctor", "apps"] {
        kill_while_borrowed(&desk, &before);
        let (_, v) = desk.run(&[next]);
        if next == "doctor" {
            let report = v.to_string();
            assert!(
                report.contains("keymap") && report.contains("restored keycodes"),
                "doctor says nothing of the keymap: {report}"
            );
        }
        assert_eq!(
            xmodmap(desk.display),
            before,
            "the keymap is restored by {next}"
        );
    }
    let v = desk.run(&["doctor"]).1;
    assert!(!v.to_string().contains("keymap"), "nothing left: {v}");
}

/// Starts typing 1,200 CJK characters, kills the typing process once a keycode is
/// borrowed (`xmodmap` shows a CJK keysym), and checks the kill left the map changed.
fn kill_while_borrowed(desk: &Desk<'_>, before: &str) {
    let text: String = "你好世界".repeat(300);
    let mut typing = desk
        .command()
        .args(["keys", "--text", &text])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let now = xmodmap(desk.display);
        if now.contains("U4F60") || now.contains("U597D") || now.contains("U4E16") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30) && typing.try_wait().unwrap().is_none(),
            "no keycode was ever borrowed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    typing.kill().unwrap();
    typing.wait().unwrap();
    assert_ne!(
        xmodmap(desk.display),
        before,
        "the kill left nothing borrowed: the test proves nothing"
    );
}

/// A server that owns its sandbox takes it along however it ends: stdin closed,
/// SIGTERM, SIGINT, SIGHUP or SIGKILL. The oracle: the display's X socket and the
/// sandbox's processes (found by their `DESKPILOT_SANDBOX` marker in `/proc`) are gone.
#[test]
fn an_mcp_server_takes_its_sandbox_along_however_it_ends() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;
    for how in ["stdin", "TERM", "INT", "HUP", "KILL"] {
        let dir = TempDir::new(&format!("mcp-end-{how}"));
        let mut server = common::own::bin(dir.path())
            .args(["mcp", "--sandbox"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(server.stderr.take().unwrap());
        let mut line = String::new();
        let display = loop {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "{how}: the server ended first"
            );
            if let Some(rest) = line.split("sandbox desktop on display :").nth(1) {
                break rest
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<u32>()
                    .unwrap();
            }
        };
        // The server is up once it has opened its host; give it that moment.
        std::thread::sleep(Duration::from_millis(500));
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{display}"));
        assert!(socket.exists(), "{how}: no X socket for :{display}");
        let marker = dir.path().join("run").join(format!("sandbox-{display}"));
        let marked = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                        env.split(|b| *b == 0).any(|kv| {
                            kv.starts_with(b"DESKPILOT_SANDBOX=")
                                && kv.ends_with(marker.as_os_str().as_encoded_bytes())
                        })
                    })
                })
                .collect::<Vec<u32>>()
        };
        assert!(!marked().is_empty(), "{how}: no sandbox process found");
        match how {
            "stdin" => drop(server.stdin.take()),
            sig => {
                let ok = std::process::Command::new("kill")
                    .args([&format!("-{sig}"), &server.id().to_string()])
                    .status()
                    .unwrap();
                assert!(ok.success());
            }
        }
        let _ = server.wait();
        let ended = Instant::now();
        while socket.exists() || !marked().is_empty() {
            assert!(
                ended.elapsed() < Duration::from_secs(15),
                "{how}: the sandbox outlived its server: {:?}",
                marked()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "{how}: sandbox gone {} ms after the server",
            ended.elapsed().as_millis()
        );
    }
}

/// Every typed character lands, in order, and the call returns once it has: 2,000
/// mixed-script characters typed into mousepad are read back by the driver, and the
/// file mousepad saves holds exactly them (the oracle).
#[test]
fn two_thousand_mixed_characters_land_exactly_in_mousepad() {
    let dir = TempDir::new("type-mousepad");
    let (desk, file) = mousepad(&dir, "");
    let text = common::mixed_text();
    let started = Instant::now();
    let v = desk.ok(&["keys", "--text", &text]);
    let took = started.elapsed();
    assert_eq!(v["result"]["verified_chars"], 2000, "{v}");
    desk.ok(&["keys", "ctrl+s"]);
    let start = Instant::now();
    while std::fs::read_to_string(&file).unwrap_or_default() != text {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "saved {} characters, not the 2000 typed",
            std::fs::read_to_string(&file)
                .unwrap_or_default()
                .chars()
                .count()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "mousepad: 2000 characters typed and read back in {} ms",
        took.as_millis()
    );
}

/// A reaction that comes 250 ms after the action (the handler only starts a timer,
/// as GTK 4 delays every button's "clicked" by 250 ms) is still in the action's
/// diff: the settle gives an action time to start reacting before it calls the app
/// quiet (docs/ARCHITECTURE.md §6 "Settling").
#[test]
fn a_reaction_250_ms_after_the_action_is_in_its_diff() {
    let dir = TempDir::new("late-reaction");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.run_python(
        dir.path(),
        "late_reaction.py",
        include_str!("fixtures/late_reaction.py"),
    );
    desk.wait_for("late-reaction", "button", "Start", 60000);
    desk.ok(&["observe", "--app", "late-reaction"]);
    let start = find_ref(&desk, "button", "Start");
    let v = desk.ok(&["act", &start, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    let diff = v["text"].as_str().unwrap();
    assert!(
        diff.contains("\"waiting\" → \"done 250 ms later\""),
        "the label's late change is in the diff:\n{diff}"
    );
    let waited = v["result"]["settle"]["waited_ms"].as_u64().unwrap();
    assert!(waited >= 250, "the settle outlasted the reaction: {v}");
}

/// `type` into a Qt 5 line edit holding "abc" leaves "abcé😀中" in the app: Qt counts
/// `InsertText`'s length in UTF-16 code units (4 here), not UTF-8 bytes (9, which
/// made it insert a NUL and bytes past the string) nor characters (3, which drops
/// `中`). The oracle is the app's own text, written by it on every change
/// (docs/ARCHITECTURE.md §6 "Acting").
#[test]
fn typing_into_a_qt_line_edit_leaves_exactly_the_text_asked_for() {
    let dir = TempDir::new("qt-type");
    let desk = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    desk.run_python(
        dir.path(),
        "qt_line.py",
        include_str!("fixtures/qt_line.py"),
    );
    desk.ok(&[
        "wait",
        "--app",
        "qt_line.py",
        "--text",
        "abc",
        "--timeout-ms",
        "60000",
    ]);
    desk.ok(&["observe", "--app", "qt_line.py"]);
    let entry = find_ref(&desk, "textbox", "abc");
    let v = desk.ok(&["act", &entry, "type", "é😀中"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    let oracle = dir.path().join("qt_line.json");
    let start = Instant::now();
    let held = loop {
        let held: Option<String> = std::fs::read_to_string(&oracle)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok());
        if held.as_deref() == Some("abcé😀中") || start.elapsed() > Duration::from_secs(5) {
            break held;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        held.as_deref(),
        Some("abcé😀中"),
        "the app's own text after `type`: {v}"
    );
}

//! Effects judged by what they reach, not by how they are spelled
//! (docs/ARCHITECTURE.md §7.6, §13): keys pressed after focus moved within one chord,
//! mnemonics, Ctrl+M as Enter, a generic "Yes" under a destructive question, a paste
//! without the clipboard grant, a toggle that shows a password, and fields labelled
//! as passwords in other words. Real GTK dialogs in a sandbox; the oracle is what
//! each dialog printed when it ended (zenity's stdout and exit status, a fixture's
//! own log), which deskpilot did not write.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::own::{Desk, TempDir, error_message as message};
use serde_json::Value;

const ACCEPT_EDITS: &str =
    "[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"zenity\", \"reveal.py\"]\n";
const UNATTENDED: &str =
    "[sandbox]\nmode = \"unattended\"\nallow_apps = [\"zenity\", \"reveal.py\"]\n";

/// Starts `zenity ARGS` in the desk, its stdout and `exit=N` recorded in `out`, and
/// waits for its window.
fn zenity(desk: &Desk<'_>, out: &Path, args: &[&str], ready: (&str, &str)) {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
    let o = quote(&out.display().to_string());
    let script = format!(
        "zenity {} > {o} 2>/dev/null; echo \"exit=$?\" >> {o}",
        args.join(" ")
    );
    desk.ok(&["sandbox", "run", "--", "sh", "-c", &script]);
    desk.wait_for("zenity", ready.0, ready.1, 60_000);
}

/// What the dialog recorded when it ended. Waits up to 20 s.
fn ended(out: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(out)
            && s.contains("exit=")
        {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never ended",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Nothing ended the dialog (a press that slipped through gets a second to land).
fn still_open(out: &Path) {
    std::thread::sleep(Duration::from_secs(1));
    let s = std::fs::read_to_string(out).unwrap_or_default();
    assert!(!s.contains("exit="), "the dialog ended: {s:?}");
}

/// The ref of the first element of `app` named exactly `name`.
fn named(desk: &Desk<'_>, app: &str, name: &str) -> String {
    let v = desk.ok(&["find", name, "--app", app]);
    v["matches"]
        .as_array()
        .and_then(|m| m.iter().find(|h| h["name"] == name))
        .and_then(|h| h["ref"].as_str())
        .unwrap_or_else(|| panic!("no element named {name:?}: {v}"))
        .to_owned()
}

/// The `reason` of a refusal as `apps` lists it.
fn message_of(refused: &Value) -> String {
    refused["reason"].as_str().unwrap_or_default().to_owned()
}

/// `keys "Tab+x"` typed `x` into the field after the one that had focus — here a
/// password field — since only the chord's start was judged. It is refused; sent as
/// two chords, the second is judged in the password field and refused there.
#[test]
fn a_chord_cannot_type_past_a_focus_move() {
    let dir = TempDir::new("reach-chord");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let out = dir.path().join("forms.out");
    zenity(
        &desk,
        &out,
        &[
            "--forms",
            "--title",
            "Sign in",
            "--add-entry",
            "Name",
            "--add-password",
            "PIN",
        ],
        ("button", "OK"),
    );
    desk.ok(&["observe", "--app", "zenity"]);
    let fields = desk.ok(&["find", "", "--app", "zenity", "--role", "textbox"]);
    let name = fields["matches"]
        .as_array()
        .and_then(|m| {
            m.iter().find(|h| {
                !h["states"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|x| x == "password"))
            })
        })
        .and_then(|h| h["ref"].as_str())
        .unwrap_or_else(|| panic!("the Name field: {fields}"))
        .to_owned();
    desk.ok(&["act", &name, "set_value", "ada"]);
    desk.ok(&["act", &name, "focus"]);
    for chord in [
        "Tab+x",
        "Tab+End+x+y+z",
        "0xff09+q",
        "Down+x",
        "ctrl+Tab+x",
        "F6+x",
    ] {
        let v = desk.fails_with(&["keys", chord], "COMPUTER_INVALID_ARGUMENT");
        assert!(message(&v).contains("separate chords"), "{chord}: {v}");
    }
    let v = desk.fails_with(&["keys", "Tab x"], "COMPUTER_SECURE_INPUT");
    assert!(message(&v).contains("stopped before"), "{v}");
    let ok = named(&desk, "zenity", "OK");
    desk.ok(&["observe", "--app", "zenity"]);
    desk.ok(&["act", &ok, "click"]);
    let printed = ended(&out);
    assert_eq!(printed, "ada|\nexit=0\n", "nothing reached the PIN field");
}

/// `alt+d` pressed a question's `_Delete` in accept-edits and unattended mode. A
/// mnemonic is judged as the clicks it may cause: it asks first, and unattended
/// refuses it; a mnemonic of the harmless button runs.
#[test]
fn a_mnemonic_is_judged_as_the_button_it_presses() {
    let dir = TempDir::new("reach-mnemonic");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let out = dir.path().join("question.out");
    zenity(
        &desk,
        &out,
        &[
            "--question",
            "--title",
            "Files",
            "--text",
            "Tidy up?",
            "--ok-label",
            "_Delete",
            "--cancel-label",
            "_Keep",
        ],
        ("button", "Delete"),
    );
    desk.ok(&["observe", "--app", "zenity"]);
    let v = desk.fails_with(&["keys", "alt+d"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(message(&v).contains("mnemonic"), "{v}");
    std::fs::write(desk.config(), UNATTENDED).unwrap();
    desk.fails_with(&["keys", "alt+d"], "COMPUTER_CONFIRMATION_REQUIRED");
    still_open(&out);
    std::fs::write(desk.config(), ACCEPT_EDITS).unwrap();
    desk.ok(&["keys", "alt+k"]);
    assert!(ended(&out).contains("exit=1"), "Keep answers 1");
}

/// A generic "Yes" under "Permanently delete 1,204 files? This cannot be undone" ran
/// without a question: it is judged with the dialog's own text.
#[test]
fn a_generic_yes_is_judged_by_its_question() {
    let dir = TempDir::new("reach-yes");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let out = dir.path().join("yes.out");
    zenity(
        &desk,
        &out,
        &[
            "--question",
            "--title",
            "Empty",
            "--text",
            "Permanently delete 1,204 files? This cannot be undone.",
            "--ok-label",
            "Yes",
            "--cancel-label",
            "No",
        ],
        ("button", "Yes"),
    );
    desk.ok(&["observe", "--app", "zenity"]);
    let yes = named(&desk, "zenity", "Yes");
    let v = desk.fails_with(&["act", &yes, "click"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(message(&v).contains("confirms"), "{v}");
    still_open(&out);
    let no = named(&desk, "zenity", "No");
    desk.ok(&["act", &no, "click"]);
    assert!(ended(&out).contains("exit=1"));
}

/// Ctrl+M (and Ctrl+J) is Enter in terminals and many fields: judged as Enter, by
/// the button it submits.
#[test]
fn control_m_is_judged_as_enter() {
    let dir = TempDir::new("reach-ctrlm");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let out = dir.path().join("entry.out");
    zenity(
        &desk,
        &out,
        &[
            "--entry",
            "--title",
            "Message",
            "--text",
            "To the team",
            "--ok-label",
            "Send",
        ],
        ("button", "Send"),
    );
    desk.ok(&["observe", "--app", "zenity"]);
    for chord in ["ctrl+m", "ctrl+j", "ctrl+M"] {
        let v = desk.fails_with(&["keys", chord], "COMPUTER_CONFIRMATION_REQUIRED");
        assert!(message(&v).contains("send"), "{chord}: {v}");
    }
    still_open(&out);
}

/// With the clipboard switch off, `keys ctrl+v` pasted the user's copied password
/// into a field. A paste needs the clipboard grant, however it is spelled.
#[test]
fn a_paste_needs_the_clipboard_grant() {
    let dir = TempDir::new("reach-paste");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let mut xclip = std::process::Command::new("xclip")
        .args(["-selection", "clipboard", "-i"])
        .env("DISPLAY", format!(":{}", desk.display))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("xclip runs");
    {
        use std::io::Write as _;
        xclip
            .stdin
            .take()
            .unwrap()
            .write_all(b"copied-secret-7731")
            .unwrap();
    }
    assert!(xclip.wait().unwrap().success());
    let out = dir.path().join("paste.out");
    zenity(
        &desk,
        &out,
        &["--entry", "--title", "Note", "--text", "Note"],
        ("button", "OK"),
    );
    desk.ok(&["observe", "--app", "zenity"]);
    for chord in ["ctrl+v", "shift+Insert", "ctrl+shift+v"] {
        let v = desk.fails_with(&["keys", chord], "COMPUTER_SCOPE_VIOLATION");
        assert!(message(&v).contains("clipboard"), "{chord}: {v}");
    }
    let ok = named(&desk, "zenity", "OK");
    desk.ok(&["act", &ok, "click"]);
    assert_eq!(ended(&out), "\nexit=0\n", "nothing was pasted");
}

/// The GTK fixture: a password entry with a "Show password" check button, a button
/// with only an eye, and a plain entry labelled "Kennwort" (a password in German),
/// each logging to `log` what it did.
const REVEAL_FIXTURE: &str = r#"
import sys, gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
log = open(sys.argv[1], "a", buffering=1)
w = Gtk.Window(title="Sign in")
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
row = Gtk.Box()
pw = Gtk.Entry(visibility=False, text="hunter2-secret")
pw.get_accessible().set_name("Password")
row.pack_start(pw, True, True, 0)
show = Gtk.CheckButton(label="_Show password", use_underline=True)
show.connect("toggled", lambda b: (pw.set_visibility(b.get_active()), log.write("shown\n")))
row.pack_start(show, False, False, 0)
eye = Gtk.Button(label="👁")
eye.connect("clicked", lambda b: (pw.set_visibility(True), log.write("eye\n")))
row.pack_start(eye, False, False, 0)
row.pack_start(Gtk.Button(label="Help"), False, False, 0)
box.pack_start(row, False, False, 0)
krow = Gtk.Box()
klabel = Gtk.Label(label="Kennwort")
kw = Gtk.Entry(text="geheim-4711")
klabel.set_mnemonic_widget(kw)
kw.get_accessible().set_name("Kennwort")
kw.connect("changed", lambda e: log.write("kennwort changed\n"))
krow.pack_start(klabel, False, False, 0)
krow.pack_start(kw, True, True, 0)
box.pack_start(krow, False, False, 0)
prow = Gtk.Box()
prow.pack_start(Gtk.Label(label="PIN"), False, False, 0)
pin = Gtk.Entry(text="4711-0815")
pin.connect("changed", lambda e: log.write("pin changed\n"))
prow.pack_start(pin, True, True, 0)
box.pack_start(prow, False, False, 0)
w.add(box)
w.connect("destroy", Gtk.main_quit)
w.show_all()
log.write("ready\n")
Gtk.main()
"#;

/// Clicking "Show" beside a password field printed the clear value in the act's
/// result and every read after. A toggle or an eye beside a password field is
/// secure input, pressed by a click or by keys (its mnemonic, space or Enter on it); a field labelled "Kennwort" is a password field: masked, and
/// nothing is typed into it.
#[test]
fn a_reveal_toggle_and_a_kennwort_field_are_secure_input() {
    let dir = TempDir::new("reach-reveal");
    // Allow-listed (by the executable the host measures), so nothing asks first and
    // each refusal below is the policy's own.
    let python = python_exe();
    let config = format!("[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"{python}\"]\n");
    let desk = Desk::start_with_config(dir.path(), &config);
    let log = dir.path().join("reveal.log");
    let script = dir.path().join("reveal.py");
    std::fs::write(&script, REVEAL_FIXTURE).unwrap();
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "/usr/bin/python3",
        script.to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    desk.wait_for("reveal.py", "checkbox", "Show password", 60_000);
    let obs = desk.ok(&["observe", "--window", "Sign in"]);
    let text = obs["text"].as_str().unwrap();
    assert!(
        !text.contains("hunter2") && !text.contains("geheim") && !text.contains("4711"),
        "{text}"
    );
    let show = named(&desk, "reveal.py", "Show password");
    let v = desk.fails_with(&["act", &show, "click"], "COMPUTER_SECURE_INPUT");
    assert!(!v.to_string().contains("hunter2"), "{v}");
    let eye = named(&desk, "reveal.py", "👁");
    desk.fails_with(&["act", &eye, "click"], "COMPUTER_SECURE_INPUT");
    // The keyboard presses it as well: its mnemonic, and space or Enter while it
    // has the focus (before, only clicks were judged).
    desk.fails_with(&["keys", "alt+s"], "COMPUTER_SECURE_INPUT");
    desk.ok(&["act", &show, "focus"]);
    for chord in ["space", "Return", "ctrl+m"] {
        desk.fails_with(&["keys", chord], "COMPUTER_SECURE_INPUT");
    }
    // A later key of a sequence that lands on the toggle is judged where it lands.
    let help = named(&desk, "reveal.py", "Help");
    desk.ok(&["act", &help, "focus"]);
    let v = desk.fails_with(
        &["keys", "shift+Tab shift+Tab space"],
        "COMPUTER_SECURE_INPUT",
    );
    assert!(message(&v).contains("stopped before"), "{v}");
    let fields = desk.ok(&[
        "find",
        "Kennwort",
        "--role",
        "textbox",
        "--app",
        "reveal.py",
    ]);
    let kennwort = fields["matches"][0]["ref"]
        .as_str()
        .unwrap_or_else(|| panic!("the Kennwort field: {fields}"))
        .to_owned();
    desk.fails_with(
        &["act", &kennwort, "set_value", "x"],
        "COMPUTER_SECURE_INPUT",
    );
    // A field with no name of its own after a "PIN" label its app never linked is
    // a password field too (before, its value was shown and typed over).
    let obs = desk.ok(&["observe", "--window", "Sign in"]);
    let text = obs["text"].as_str().unwrap();
    let line = text
        .lines()
        .find(|l| {
            l.split_whitespace().nth(1) == Some("textbox")
                && !l.contains("textbox \"")
                && l.trim_end().ends_with(" password")
        })
        .unwrap_or_else(|| panic!("no nameless password field in:\n{text}"));
    let start = line.find("[e").unwrap() + 1;
    let pin = &line[start..start + line[start..].find(']').unwrap()];
    desk.fails_with(&["act", pin, "set_value", "x"], "COMPUTER_SECURE_INPUT");
    std::thread::sleep(Duration::from_millis(500));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged, "ready\n", "nothing was shown or typed");
    let again = desk.ok(&["observe", "--window", "Sign in"]);
    assert!(!again.to_string().contains("hunter2") && !again.to_string().contains("geheim"));
}

/// Runs `deskpilot ARGS` inside the desk's sandbox — as an app or terminal the
/// agent drives there would — on a pseudo-terminal (`script`), with the desk's
/// runtime, config and state directories, and returns its one JSON document.
fn inside(desk: &Desk<'_>, dir: &Path, tag: &str, args: &[&str]) -> Value {
    let out = dir.join(format!("{tag}.json"));
    let done = dir.join(format!("{tag}.done"));
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let cmd = format!(
        "{exe} --json {args} < /dev/null",
        exe = env!("CARGO_BIN_EXE_deskpilot"),
        args = args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
    );
    let script = format!(
        "export DESKPILOT_RUNTIME_DIR={run} DESKPILOT_CONFIG={cfg} XDG_STATE_HOME={state}; script -qec {cmd} /dev/null > {out}; touch {done}",
        run = quote(&desk.runtime().display().to_string()),
        cfg = quote(&desk.config().display().to_string()),
        state = quote(&desk.root.join("state").display().to_string()),
        cmd = quote(&cmd),
        out = quote(&out.display().to_string()),
        done = quote(&done.display().to_string()),
    );
    desk.ok(&["sandbox", "run", "--", "sh", "-c", &script]);
    let start = Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{tag}: no answer"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let json = &text[text.find('{').unwrap_or_else(|| panic!("{tag}: {text:?}"))..];
    serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{tag}: {e}: {text:?}"))
}

/// Through a terminal in the sandbox the agent ran `deskpilot approve ID` on its own
/// pending action. The user's channels — approve, grant --user, config — are
/// refused from inside a sandbox even at a terminal, and so are `driver` and
/// `sandbox run` there; the user's own `sandbox run` is audited.
#[test]
fn the_users_channels_are_refused_from_inside_a_sandbox() {
    let dir = TempDir::new("reach-inside");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let out = dir.path().join("approve.out");
    zenity(
        &desk,
        &out,
        &[
            "--question",
            "--title",
            "Trash",
            "--text",
            "Tidy?",
            "--ok-label",
            "Delete",
            "--cancel-label",
            "Keep",
        ],
        ("button", "Delete"),
    );
    desk.ok(&["observe", "--app", "zenity"]);
    let delete = named(&desk, "zenity", "Delete");
    let v = desk.fails_with(&["act", &delete, "click"], "COMPUTER_CONFIRMATION_REQUIRED");
    let id = v["error"]["detail"]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let a = inside(&desk, dir.path(), "approve", &["approve", &id]);
    assert_eq!(a["error"]["code"], "COMPUTER_SCOPE_VIOLATION", "{a}");
    assert!(message(&a).contains("inside a deskpilot sandbox"), "{a}");
    // Still only a question: nothing was approved.
    desk.fails_with(&["act", &delete, "click"], "COMPUTER_CONFIRMATION_REQUIRED");
    still_open(&out);

    let g = inside(&desk, dir.path(), "grant", &["grant", "--user"]);
    assert_eq!(g["error"]["code"], "COMPUTER_SCOPE_VIOLATION", "{g}");
    let c = inside(
        &desk,
        dir.path(),
        "config",
        &["config", "set", "mode", "bypass"],
    );
    assert_eq!(c["error"]["code"], "COMPUTER_SCOPE_VIOLATION", "{c}");
    let d = inside(&desk, dir.path(), "driver", &["driver"]);
    assert_eq!(d["error"]["code"], "COMPUTER_SCOPE_VIOLATION", "{d}");
    let r = inside(&desk, dir.path(), "run", &["sandbox", "run", "--", "true"]);
    assert_eq!(r["error"]["code"], "COMPUTER_SCOPE_VIOLATION", "{r}");

    let audit = desk.ok(&["audit", "--tail", "50"]);
    let runs = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["op"] == "sandbox_run" && r["status"] == "executed")
        .count();
    assert!(
        runs >= 6,
        "every sandbox run of this test is audited: {audit}"
    );
}

/// An app that runs code (an editor's Python console) read the approval seal's key
/// from the kernel keyring and walked into deskpilot's files through
/// `/proc/<X server pid>/root`. An app the sandbox starts gets `EPERM` from every
/// keyring call, a stdin of `/dev/null`, and a process table of its own in which no
/// process outside the sandbox's apps is there to walk through.
#[test]
fn a_launched_app_reaches_neither_the_keyring_nor_processes_outside() {
    let dir = TempDir::new("reach-confine");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let out = dir.path().join("confine.out");
    let done = dir.path().join("confine.done");
    let probe = format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0)\n\
         r = libc.syscall({keyctl}, 0, -4, 0, 0, 0)\n\
         print('keyctl', r, ctypes.get_errno())\n\
         r = libc.syscall({keyctl_x32}, 0, -4, 0, 0, 0)\n\
         print('keyctl_x32', r, ctypes.get_errno())\n\
         print('stdin', os.readlink('/proc/self/fd/0'))\n\
         print('outside', os.path.exists('/proc/{host}'))\n\
         print('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit())[-1])\n",
        keyctl = if cfg!(target_arch = "aarch64") {
            219
        } else {
            250
        },
        // The same call through the x32 ABI's number (x86-64 only; elsewhere the
        // native number again).
        keyctl_x32 = if cfg!(target_arch = "x86_64") {
            0x4000_0000 | 250
        } else {
            219
        },
        host = std::process::id(),
    );
    let script = format!(
        "python3 -c \"$0\" > '{out}' 2>&1; touch '{done}'",
        out = out.display(),
        done = done.display()
    );
    desk.ok(&["sandbox", "run", "--", "sh", "-c", &script, &probe]);
    let start = Instant::now();
    while !done.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "no answer");
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("keyctl -1 1\n"),
        "keyring calls fail EPERM: {text}"
    );
    assert!(
        text.contains("keyctl_x32 -1 1\n"),
        "also under their x32 numbers: {text}"
    );
    assert!(text.contains("stdin /dev/null\n"), "{text}");
    assert!(
        text.contains("outside False\n"),
        "the test's own process is not visible: {text}"
    );
    let top: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("pids "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(top < 100, "a process table of the sandbox's own: {text}");
}

/// A password manager's copy, as KeePassXC makes it on X11 (Qt): the text with the
/// target `x-kde-passwordManagerHint` = `secret`, on the clipboard and the primary
/// selection. Logs `ready` to `argv[1]` once both are owned.
const KEEPER_FIXTURE: &str = r#"
import sys
from PyQt5.QtCore import QMimeData, QTimer
from PyQt5.QtGui import QClipboard
from PyQt5.QtWidgets import QApplication
log = open(sys.argv[1], "a", buffering=1)
app = QApplication(sys.argv[:1])
def marked():
    m = QMimeData()
    m.setText(sys.argv[2])
    m.setData("x-kde-passwordManagerHint", b"secret")
    return m
def copy():
    cb = app.clipboard()
    cb.setMimeData(marked(), QClipboard.Clipboard)
    if cb.supportsSelection():
        cb.setMimeData(marked(), QClipboard.Selection)
    log.write("ready\n")
QTimer.singleShot(0, copy)
sys.exit(app.exec_())
"#;

/// Starts the password-manager fixture in the desk, copying `secret` marked as
/// KeePassXC marks it, and waits until it owns the clipboard.
fn keeper(desk: &Desk<'_>, dir: &Path, secret: &str) {
    let script = dir.join("keeper.py");
    std::fs::write(&script, KEEPER_FIXTURE).unwrap();
    let log = dir.join("keeper.log");
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "/usr/bin/python3",
        script.to_str().unwrap(),
        log.to_str().unwrap(),
        secret,
    ]);
    let start = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|s| s.contains("ready")) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "keeper not ready"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// With the clipboard grant on, a password a password manager copied (marked
/// `x-kde-passwordManagerHint`) was pasted by `keys ctrl+v` and read by `clipboard
/// read`. Both are refused (`COMPUTER_SECURE_INPUT`) in every paste spelling and
/// nothing lands in the field; an unmarked text still pastes, and what the dialog
/// printed when it ended is that text alone.
#[test]
fn a_password_managers_copy_is_never_pasted_or_read() {
    let dir = TempDir::new("reach-keeper");
    let desk = Desk::start_with_config(dir.path(), &format!("{ACCEPT_EDITS}clipboard = true\n"));
    keeper(&desk, dir.path(), "vault-pw-5521");
    let out = dir.path().join("keeper.out");
    zenity(
        &desk,
        &out,
        &["--entry", "--title", "Note", "--text", "Note"],
        ("button", "OK"),
    );
    desk.ok(&["observe", "--app", "zenity"]);
    for chord in ["ctrl+v", "shift+Insert", "ctrl+shift+v", "ctrl+a ctrl+v"] {
        let v = desk.fails_with(&["keys", chord], "COMPUTER_SECURE_INPUT");
        assert!(
            message(&v).contains("password") && message(&v).contains("x-kde-passwordManagerHint"),
            "{chord}: {v}"
        );
    }
    let v = desk.fails_with(&["clipboard", "read"], "COMPUTER_SECURE_INPUT");
    assert!(!v.to_string().contains("vault-pw"), "{v}");
    let audit = desk.ok(&["audit", "--tail", "10"]);
    assert!(
        audit["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["event"] == "refusal" && r["op"] == "clipboard_read"),
        "{audit}"
    );
    // Another copy, unmarked, takes the clipboard: it pastes and reads.
    let mut xclip = std::process::Command::new("xclip")
        .args(["-selection", "clipboard", "-i"])
        .env("DISPLAY", format!(":{}", desk.display))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("xclip runs");
    {
        use std::io::Write as _;
        xclip
            .stdin
            .take()
            .unwrap()
            .write_all(b"plain-note-42")
            .unwrap();
    }
    assert!(xclip.wait().unwrap().success());
    let v = desk.ok(&["clipboard", "read"]);
    assert_eq!(v["text"], "plain-note-42", "{v}");
    desk.ok(&["keys", "ctrl+v"]);
    // The primary selection still holds the marked copy, which Shift+Insert may paste.
    desk.fails_with(&["keys", "shift+Insert"], "COMPUTER_SECURE_INPUT");
    let ok = named(&desk, "zenity", "OK");
    desk.ok(&["act", &ok, "click"]);
    assert_eq!(
        ended(&out),
        "plain-note-42\nexit=0\n",
        "only the unmarked text landed"
    );
}

/// mousepad's own Edit ▸ Paste pasted a password a password manager copied, where
/// `keys ctrl+v` was refused: a click on an app's Paste control is a paste, judged
/// as the chord is. Refused (`COMPUTER_SECURE_INPUT`) and nothing lands.
#[test]
fn an_apps_own_paste_item_never_pastes_a_password_managers_copy() {
    let dir = TempDir::new("reach-paste-item");
    let desk = Desk::start_with_config(
        dir.path(),
        "[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"mousepad\"]\nclipboard = true\n",
    );
    keeper(&desk, dir.path(), "vault-pw-7788");
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.wait_for("mousepad", "menuitem", "Edit", 60_000);
    desk.ok(&["observe", "--app", "mousepad"]);
    let edit = named(&desk, "mousepad", "Edit");
    desk.ok(&["act", &edit, "click"]);
    let paste = named(&desk, "mousepad", "Paste");
    let v = desk.fails_with(&["act", &paste, "click"], "COMPUTER_SECURE_INPUT");
    assert!(message(&v).contains("x-kde-passwordManagerHint"), "{v}");
    desk.ok(&["keys", "Escape"]);
    let after = desk.ok(&["observe", "--app", "mousepad"]);
    assert!(!after.to_string().contains("vault-pw"), "{after}");
}

/// The executable the host measures for a Python fixture (`python3.11`, where
/// `/usr/bin/python3` is a link): the name the allow-list and tiers match.
fn python_exe() -> String {
    let python = std::fs::canonicalize("/usr/bin/python3").unwrap();
    python.file_name().unwrap().to_str().unwrap().to_owned()
}

/// Writes `fixture` to `dir/NAME` and starts it in the desk as `python3 SCRIPT LOG
/// ARGS…`; returns the log's path.
fn start_fixture(
    desk: &Desk<'_>,
    dir: &Path,
    name: &str,
    fixture: &str,
    args: &[&str],
) -> std::path::PathBuf {
    let script = dir.join(name);
    let log = dir.join(format!("{name}.log"));
    std::fs::write(&script, fixture).unwrap();
    let mut argv = vec![
        "sandbox",
        "run",
        "--",
        "/usr/bin/python3",
        script.to_str().unwrap(),
        log.to_str().unwrap(),
    ];
    argv.extend_from_slice(args);
    desk.ok(&argv);
    log
}

/// A notes app that is a terminal under another name: a GTK entry whose text, on
/// Enter, goes to a shell through a pseudo-terminal it holds (as xterm, a VTE
/// widget or an IDE's terminal pane does). Logs `ready` to `argv[1]`; the shell
/// runs in `argv[2]`.
const PTY_NOTES_FIXTURE: &str = r#"
import os, subprocess, sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
log = open(sys.argv[1], "a", buffering=1)
master, slave = os.openpty()
subprocess.Popen(["/bin/sh"], stdin=slave, stdout=slave, stderr=slave,
                 start_new_session=True, cwd=sys.argv[2])
os.close(slave)
win = Gtk.Window(title="Notes")
entry = Gtk.Entry()
entry.get_accessible().set_name("Note")
def run(e):
    os.write(master, (e.get_text() + "\n").encode())
    e.set_text("")
entry.connect("activate", run)
win.add(entry)
win.connect("destroy", Gtk.main_quit)
win.show_all()
log.write("ready\n")
Gtk.main()
"#;

/// The listed app named `name` once its tree is read (status `ok`).
fn listed_ok(desk: &Desk<'_>, name: &str) -> Value {
    let start = Instant::now();
    loop {
        let app = desk.listed_app(name, |n| n == name);
        if app["status"] == "ok" {
            return app;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{app}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A copy of a terminal under another name was not recognised: terminals were
/// known by name only. A program that holds a pseudo-terminal's master end is a
/// terminal whatever it is called: it has the `code` tier, and its windows are
/// refused (even to reads) until the user grants that tier; granted, typing there
/// runs commands (the fixture's shell touches a file: the oracle). An app the user
/// lowered to `click` takes no text and no keys.
#[test]
fn a_program_holding_a_pty_is_a_terminal_whatever_its_name() {
    let dir = TempDir::new("reach-pty");
    let desk = Desk::start_with_config(dir.path(), ACCEPT_EDITS);
    let fired = dir.path().join("fired");
    let dir_arg = dir.path().to_str().unwrap();
    start_fixture(&desk, dir.path(), "notes.py", PTY_NOTES_FIXTURE, &[dir_arg]);
    let app = listed_ok(&desk, "notes.py");
    assert_eq!(app["code"], true, "{app}");
    assert_eq!(app["tier"], "code", "{app}");
    let refused = &app["windows"][0]["refused"];
    assert_eq!(refused["code"], "COMPUTER_DENYLISTED", "{app}");
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("pseudo-terminal")),
        "{app}"
    );
    desk.fails_with(&["observe", "--app", "notes.py"], "COMPUTER_DENYLISTED");
    // No other window is open, so the grant has nowhere to bind.
    desk.fails_with(
        &["keys", "--text", "touch fired", "--app", "notes.py"],
        "COMPUTER_NO_GRANT",
    );
    desk.fails_with(
        &["keys", "Return", "--app", "notes.py"],
        "COMPUTER_NO_GRANT",
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(!fired.exists(), "nothing was typed into the shell");

    // The user grants the tier at a terminal (here a provisioning `--yes`).
    // Named by its executable, as the refusal says (`python3.11`, not the link).
    let pid = app["pid"].as_u64().unwrap();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let exe = exe.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        message_of(refused).contains(&format!("app_tiers {exe}=code")),
        "{refused}"
    );
    desk.ok(&[
        "config",
        "set",
        "app_tiers",
        &format!("{exe}=code"),
        "--yes",
    ]);
    let allow = format!("zenity,{exe}");
    desk.ok(&["config", "set", "sandbox.allow_apps", &allow, "--yes"]);
    let app = listed_ok(&desk, "notes.py");
    assert_eq!(app["tier"], "code", "{app}");
    assert!(app["windows"][0]["refused"].is_null(), "{app}");
    let note = named(&desk, "notes.py", "Note");
    desk.ok(&["act", &note, "set_value", "touch fired"]);
    desk.ok(&["keys", "Return", "--app", "notes.py"]);
    let start = Instant::now();
    while !fired.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the granted terminal ran nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Lowered to `click`: shown, but it takes no text and no keys.
    desk.ok(&[
        "config",
        "set",
        "app_tiers",
        &format!("{exe}=click"),
        "--yes",
    ]);
    let app = listed_ok(&desk, "notes.py");
    assert_eq!(app["tier"], "click", "{app}");
    assert!(app["windows"][0]["refused"].is_null(), "{app}");
    desk.fails_with(
        &["keys", "Return", "--app", "notes.py"],
        "COMPUTER_SCOPE_VIOLATION",
    );
    let out = dir.path().join("zenity.out");
    zenity(
        &desk,
        &out,
        &["--entry", "--title", "Rename", "--text", "New name"],
        ("button", "OK"),
    );
    desk.ok(&["config", "set", "app_tiers", "zenity=click", "--yes"]);
    let listed = listed_ok(&desk, "zenity");
    assert_eq!(listed["tier"], "click", "{listed}");
    let field = desk.ok(&["find", "", "--app", "zenity", "--role", "textbox"]);
    let field = field["matches"][0]["ref"].as_str().unwrap().to_owned();
    let v = desk.fails_with(
        &["act", &field, "set_value", "x"],
        "COMPUTER_SCOPE_VIOLATION",
    );
    assert!(message(&v).contains("`click` tier"), "{v}");
    desk.fails_with(
        &["keys", "--text", "x", "--app", "zenity"],
        "COMPUTER_SCOPE_VIOLATION",
    );
    desk.fails_with(
        &["keys", "Return", "--app", "zenity"],
        "COMPUTER_SCOPE_VIOLATION",
    );
    still_open(&out);
}

/// A "Send" drawn on a canvas: a drawing area whose accessible name says
/// "Preview" and whose pixels say "Send"; a press on it logs `pressed` to
/// `argv[1]` (the oracle). Logs `ready` once shown.
const CANVAS_FIXTURE: &str = r#"
import sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk, Gdk
log = open(sys.argv[1], "a", buffering=1)
win = Gtk.Window(title="Compose")
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
box.pack_start(Gtk.Label(label="To the team"), False, False, 4)
area = Gtk.DrawingArea()
area.set_size_request(160, 60)
area.get_accessible().set_name("Preview")
def draw(w, cr):
    cr.set_source_rgb(0.1, 0.4, 0.9)
    cr.paint()
    cr.set_source_rgb(1, 1, 1)
    cr.set_font_size(28)
    cr.move_to(40, 42)
    cr.show_text("Send")
area.connect("draw", draw)
area.add_events(Gdk.EventMask.BUTTON_PRESS_MASK)
area.connect("button-press-event", lambda *a: log.write("pressed\n"))
box.pack_start(area, True, True, 4)
win.add(box)
win.connect("destroy", Gtk.main_quit)
win.show_all()
log.write("ready\n")
Gtk.main()
"#;

/// The centre of the first element of `app` named `name`, in the window's pixels
/// as `click-at` takes them, and the basis of the observe it was read after.
fn centre_of(desk: &Desk<'_>, app: &str, name: &str) -> (String, String, String) {
    let obs = desk.ok(&["observe", "--app", app]);
    let basis = obs["basis"]
        .as_str()
        .unwrap_or_else(|| panic!("{obs}"))
        .to_owned();
    // r<rev>:<x>,<y>,<w>x<h>@<scale>
    let geom = basis.split_once(':').unwrap().1.split_once('@').unwrap().0;
    let g: Vec<i64> = geom.split([',', 'x']).map(|n| n.parse().unwrap()).collect();
    let found = desk.ok(&["find", name, "--app", app]);
    let b = &found["matches"][0]["bounds"];
    let at = |k: &str| {
        b[k].as_i64()
            .unwrap_or_else(|| panic!("no bounds: {found}"))
    };
    let x = at("x") + at("width") / 2 - g[0];
    let y = at("y") + at("height") / 2 - g[1];
    (x.to_string(), y.to_string(), basis)
}

/// `click-at` on a "Send" drawn on a canvas ran: the tree named the canvas
/// "Preview", and a named element was taken at its word. A drawing under the
/// point, inside no control, cannot say what it presses: the click asks first, and
/// unattended refuses it. A click on the label beside it runs.
#[test]
fn a_click_on_a_drawing_asks_first() {
    let dir = TempDir::new("reach-canvas");
    // The allow-list names the executable the host measures (`python3.11`).
    let python = python_exe();
    let config =
        |mode: &str| format!("[sandbox]\nmode = \"{mode}\"\nallow_apps = [\"{python}\"]\n");
    let desk = Desk::start_with_config(dir.path(), &config("accept-edits"));
    let log = start_fixture(&desk, dir.path(), "canvas.py", CANVAS_FIXTURE, &[]);
    desk.wait_for("canvas.py", "image", "Preview", 60_000);
    let centre = |name: &str| centre_of(&desk, "canvas.py", name);
    let (x, y, basis) = centre("Preview");
    let v = desk.fails_with(
        &["click-at", &x, &y, "--basis", &basis],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(message(&v).contains("drawing"), "{v}");
    std::fs::write(desk.config(), config("unattended")).unwrap();
    desk.ok(&["config", "trust", "--yes"]);
    let (x, y, basis) = centre("Preview");
    let v = desk.fails_with(
        &["click-at", &x, &y, "--basis", &basis],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(message(&v).contains("unattended"), "{v}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "ready\n",
        "nothing pressed the drawing"
    );
    let (x, y, basis) = centre("To the team");
    desk.ok(&["click-at", &x, &y, "--basis", &basis]);
}

/// An editor whose F4 opens a terminal panel (as Dolphin's and Kate's do): before
/// F4 it holds no pty; after, the entry's text goes to a shell on Enter. Logs
/// `ready` to `argv[1]`; the shell runs in `argv[2]`.
const PANEL_FIXTURE: &str = r#"
import os, subprocess, sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk, Gdk
log = open(sys.argv[1], "a", buffering=1)
pty = []
win = Gtk.Window(title="Editor")
entry = Gtk.Entry()
entry.get_accessible().set_name("Line")
def key(w, ev):
    if ev.keyval == Gdk.KEY_F4 and not pty:
        master, slave = os.openpty()
        subprocess.Popen(["/bin/sh"], stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True, cwd=sys.argv[2])
        os.close(slave)
        pty.append(master)
        log.write("panel\n")
        return True
    return False
def run(e):
    if pty:
        os.write(pty[0], (e.get_text() + "\n").encode())
    e.set_text("")
win.connect("key-press-event", key)
entry.connect("activate", run)
win.add(entry)
win.connect("destroy", Gtk.main_quit)
win.show_all()
log.write("ready\n")
Gtk.main()
"#;

/// A key sequence was judged once, at its start: `F4` opened a terminal panel and
/// the keys after it typed a command into its shell. Whether the app holds a pty is
/// measured again before every key: the sequence stops at the first key after the
/// panel opened, and the command never runs.
#[test]
fn a_terminal_opened_inside_a_key_sequence_stops_it() {
    let dir = TempDir::new("reach-panel");
    let python = python_exe();
    let config = format!("[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"{python}\"]\n");
    let desk = Desk::start_with_config(dir.path(), &config);
    let fired = dir.path().join("fired");
    let dir_arg = dir.path().to_str().unwrap();
    let log = start_fixture(&desk, dir.path(), "editor.py", PANEL_FIXTURE, &[dir_arg]);
    desk.wait_for("editor.py", "textbox", "Line", 60_000);
    let app = listed_ok(&desk, "editor.py");
    assert_eq!(app["tier"], "type", "no terminal yet: {app}");
    let v = desk.fails_with(
        &[
            "keys",
            "F4 t o u c h space f i r e d Return",
            "--app",
            "editor.py",
        ],
        "COMPUTER_DENYLISTED",
    );
    assert!(message(&v).contains("pseudo-terminal"), "{v}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        std::fs::read_to_string(&log).unwrap().contains("panel"),
        "F4 opened the panel"
    );
    assert!(!fired.exists(), "the command ran in the panel's shell");
    let app = listed_ok(&desk, "editor.py");
    assert_eq!(app["tier"], "code", "{app}");
}

/// A button whose accessible name is empty and whose label is the text inside it
/// (a clickable box around a "Send" label, as hand-made web and toolkit buttons
/// are); a press logs `pressed` to `argv[1]` (the oracle). Logs `ready` once shown.
const LABEL_INSIDE_FIXTURE: &str = r#"
import sys
import gi
gi.require_version("Gtk", "3.0")
gi.require_version("Atk", "1.0")
from gi.repository import Atk, Gtk, Gdk
log = open(sys.argv[1], "a", buffering=1)
win = Gtk.Window(title="Compose")
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
box.pack_start(Gtk.Label(label="To the team"), False, False, 4)
button = Gtk.EventBox()
button.get_accessible().set_role(Atk.Role.PUSH_BUTTON)
button.add(Gtk.Label(label="Send"))
button.add_events(Gdk.EventMask.BUTTON_PRESS_MASK)
button.connect("button-press-event", lambda *a: log.write("pressed\n"))
box.pack_start(button, True, True, 4)
win.add(box)
win.connect("destroy", Gtk.main_quit)
win.show_all()
log.write("ready\n")
Gtk.main()
"#;

/// `act click` on a button whose name is empty fired: only the name was judged,
/// and the "Send" it shows was the text inside it. A pressable control is judged
/// by the label it shows: its value, then the text it holds.
#[test]
fn a_button_is_judged_by_the_label_inside_it() {
    let dir = TempDir::new("reach-label-inside");
    let python = python_exe();
    let config = format!("[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"{python}\"]\n");
    let desk = Desk::start_with_config(dir.path(), &config);
    let log = start_fixture(
        &desk,
        dir.path(),
        "label_inside.py",
        LABEL_INSIDE_FIXTURE,
        &[],
    );
    desk.wait_for("label_inside.py", "label", "Send", 60_000);
    let obs = desk.ok(&["observe", "--app", "label_inside.py"]);
    let text = obs["text"].as_str().unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_end().ends_with("] button"))
        .unwrap_or_else(|| panic!("no nameless button in:\n{text}"));
    let start = line.find("[e").unwrap() + 1;
    let button = &line[start..start + line[start..].find(']').unwrap()];
    let v = desk.fails_with(&["act", button, "click"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(message(&v).contains("in its content"), "{v}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "ready\n",
        "nothing pressed the button"
    );
}

/// A button that reads "Preview" until the pointer is over it, then "Send"; a
/// press logs `pressed` to `argv[1]` (the oracle). Logs `ready` once shown.
const HOVER_FIXTURE: &str = r#"
import sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
log = open(sys.argv[1], "a", buffering=1)
win = Gtk.Window(title="Compose")
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
box.pack_start(Gtk.Label(label="To the team"), False, False, 4)
button = Gtk.Button(label="Preview")
button.connect("enter-notify-event", lambda *a: button.set_label("Send"))
button.connect("clicked", lambda *a: log.write("pressed\n"))
box.pack_start(button, True, True, 4)
win.add(box)
win.connect("destroy", Gtk.main_quit)
win.show_all()
log.write("ready\n")
Gtk.main()
"#;

/// A label that turns into "Send" when the pointer is over it was clicked after
/// being judged "Preview". The pointer rests over the point and the tree is read
/// again before the press: what lies under the point changed, so the press is
/// judged again on "Send" and asks first.
#[test]
fn a_label_that_changes_under_the_pointer_is_not_pressed_under_its_old_name() {
    let dir = TempDir::new("reach-hover");
    let python = python_exe();
    let config = format!("[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"{python}\"]\n");
    let desk = Desk::start_with_config(dir.path(), &config);
    let log = start_fixture(&desk, dir.path(), "hover.py", HOVER_FIXTURE, &[]);
    desk.wait_for("hover.py", "button", "Preview", 60_000);
    let (x, y, basis) = centre_of(&desk, "hover.py", "Preview");
    let v = desk.fails_with(
        &["click-at", &x, &y, "--basis", &basis],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(message(&v).contains("send"), "{v}");
    // Read again with the pointer over it: "Send", judged as such.
    let (x, y, basis) = centre_of(&desk, "hover.py", "Send");
    desk.fails_with(
        &["click-at", &x, &y, "--basis", &basis],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    // A click beside it, on a label that stays as it was, runs.
    let (x, y, basis) = centre_of(&desk, "hover.py", "To the team");
    desk.ok(&["click-at", &x, &y, "--basis", &basis]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "ready\n",
        "nothing pressed the button"
    );
}

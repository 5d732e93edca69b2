//! Save dialogs write only into allowed folders (docs/ARCHITECTURE.md §7.21), against
//! real mousepad's GTK 3 Save As dialog in a sandbox desktop. mousepad and every
//! deskpilot call get a home directory of their own (`HOME`), with a documents
//! folder, an autostart directory and a link from the one to the other; the file
//! system is the oracle: what was refused never appears, what was allowed is there.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::{Isolated, message, one_document, sandbox_with_apps};
use deskpilot_driver_linux::sandbox::Sandbox;
use serde_json::Value;

/// A sandbox with mousepad, and the home directory both it and deskpilot see.
struct Desk {
    sb: Sandbox,
    iso: Isolated,
    home: PathBuf,
}

impl Drop for Desk {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

impl Desk {
    /// mousepad under `HOME` = a fresh directory holding `Documents/`,
    /// `.config/autostart/` and `Documents/notes` → `.config/autostart`.
    fn start(tag: &str) -> Desk {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let home =
            std::env::temp_dir().join(format!("dp-home-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(home.join("Documents")).unwrap();
        std::fs::create_dir_all(home.join(".config/autostart")).unwrap();
        std::os::unix::fs::symlink(home.join(".config/autostart"), home.join("Documents/notes"))
            .unwrap();
        // Its user lets the tests' own `deskpilot driver` serve the sandbox.
        let iso = Isolated::new(tag, "serve = true\n");
        let env_home = format!("HOME={}", home.display());
        let (sb, _) = sandbox_with_apps(&iso, &[(&["env", &env_home, "mousepad"], "mousepad")]);
        Desk { sb, iso, home }
    }

    /// `deskpilot --sandbox N --json ARGS` with the test's home, config and audit.
    fn run(&self, args: &[&str]) -> (Output, Value) {
        let out = self
            .iso
            .command(&self.sb)
            .env("HOME", &self.home)
            .arg("--json")
            .args(args)
            .output()
            .expect("deskpilot runs");
        let v = one_document(args, &out);
        (out, v)
    }

    fn ok(&self, args: &[&str]) -> Value {
        let (out, v) = self.run(args);
        assert!(
            out.status.success() && v["ok"] == true,
            "{args:?} failed: {v}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        v
    }

    /// `args` must be refused with `COMPUTER_SCOPE_VIOLATION`; returns the message.
    fn refused(&self, args: &[&str]) -> String {
        let (out, v) = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?} should be refused: {v}"
        );
        assert_eq!(
            v["error"]["code"], "COMPUTER_SCOPE_VIOLATION",
            "{args:?}: {v}"
        );
        message(&v).to_owned()
    }

    /// The ref of the element named `name` with `role` in the window titled `window`.
    fn find(&self, name: &str, window: &str, role: &str) -> String {
        let found = self.ok(&["find", name, "--window", window, "--role", role]);
        found["matches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {role} {name:?} in {window:?}: {found}"))["ref"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Opens File ▸ Save As… and returns the refs of its name field and Save button.
    fn save_as(&self) -> (String, String) {
        self.ok(&["observe", "--app", "mousepad"]);
        let file = self.find("File", "Mousepad", "menuitem");
        self.ok(&["act", &file, "click"]);
        let item = self.find("Save As...", "Mousepad", "menuitem");
        self.ok(&["act", &item, "click"]);
        self.ok(&["wait", "--window-title", "Save As", "--timeout-ms", "30000"]);
        self.ok(&["observe", "--window", "Save As"]);
        (
            self.find("Name", "Save As", "textbox"),
            self.find("Save", "Save As", "button"),
        )
    }

    /// What a person at the desktop types into the focused field (XTest through
    /// xdotool, not deskpilot): the field's text replaced by `text`.
    fn person_types(&self, text: &str) {
        for args in [vec!["key", "ctrl+a"], vec!["type", "--delay", "20", text]] {
            let st = std::process::Command::new("xdotool")
                .env("DISPLAY", self.sb.display())
                .args(&args)
                .status()
                .expect("xdotool runs");
            assert!(st.success(), "xdotool {args:?}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    /// Whether a window titled `title` is on the sandbox's screen (X's own list).
    fn shows(&self, title: &str) -> bool {
        common::x_titles(self.sb.state().display)
            .iter()
            .any(|t| t.contains(&format!("\"{title}\"")))
    }
}

/// Waits up to 10 s for `path` to exist.
fn appears(path: &Path) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn saving_into_the_documents_folder_works() {
    let d = Desk::start("save-docs");
    let (name, save) = d.save_as();
    d.ok(&["act", &name, "set_value", "~/Documents/kept.txt"]);
    d.ok(&["act", &save, "click"]);
    assert!(
        appears(&d.home.join("Documents/kept.txt")),
        "the file was saved"
    );
}

#[test]
fn an_autostart_entry_is_never_saved() {
    let d = Desk::start("save-autostart");
    let (name, save) = d.save_as();
    let m = d.refused(&[
        "act",
        &name,
        "set_value",
        "~/.config/autostart/evil.desktop",
    ]);
    assert!(m.contains(".config/autostart/evil.desktop"), "{m}");
    assert!(m.contains("allow_files"), "says how to allow a folder: {m}");
    // Put there by someone else, the Save button and every Enter are refused.
    d.person_types("~/.config/autostart/evil.desktop");
    d.refused(&["act", &save, "click"]);
    d.refused(&["keys", "Return"]);
    d.refused(&["keys", "ctrl+m"]);
    assert!(!appears(&d.home.join(".config/autostart/evil.desktop")));
    // Each is a refusal on the audit, with the op it refused.
    let audit = std::fs::read_to_string(d.iso.audit_path()).unwrap_or_default();
    for op in [
        "\"op\":\"set_value\"",
        "\"op\":\"click\"",
        "\"op\":\"keys\"",
    ] {
        assert!(
            audit.lines().any(|l| l.contains(op)
                && l.contains("\"status\":\"refused\"")
                && l.contains("COMPUTER_SCOPE_VIOLATION")),
            "no refusal of {op} on the audit: {audit}"
        );
    }
}

#[test]
fn a_shell_start_up_file_is_never_saved() {
    let d = Desk::start("save-rc");
    let (name, save) = d.save_as();
    let bashrc = d.home.join(".bashrc");
    let m = d.refused(&["act", &name, "set_value", bashrc.to_str().unwrap()]);
    assert!(m.contains("shell start-up file"), "{m}");
    d.person_types("~/.bashrc");
    d.refused(&["act", &save, "click"]);
    d.refused(&["keys", "KP_Enter"]);
    assert!(!appears(&bashrc));
}

#[test]
fn a_link_out_of_an_allowed_folder_is_never_followed() {
    let d = Desk::start("save-link");
    let (name, save) = d.save_as();
    // `Documents/notes` is a link to `.config/autostart`.
    let m = d.refused(&["act", &name, "set_value", "~/Documents/notes/evil.desktop"]);
    assert!(m.contains("symbolic link"), "{m}");
    d.person_types("~/Documents/notes/evil.desktop");
    d.refused(&["act", &save, "click"]);
    assert!(!appears(&d.home.join(".config/autostart/evil.desktop")));
}

#[test]
fn escape_and_cancel_back_out_of_a_save_dialog_holding_deskpilots_own_file() {
    let d = Desk::start("save-escape");
    d.save_as();
    // The name field holds deskpilot's own config file: nothing but backing out.
    d.person_types(d.iso.config.to_str().unwrap());
    let m = d.refused(&["keys", "Return"]);
    assert!(m.contains("deskpilot's own files"), "{m}");
    assert!(d.shows("Save As"));
    // The first Escape may only close the name's completion popup; each is
    // accepted until the dialog is gone.
    let start = Instant::now();
    while d.shows("Save As") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "Escape never closed the dialog"
        );
        d.ok(&["keys", "Escape"]);
        std::thread::sleep(Duration::from_millis(500));
    }
    // And Cancel, clicked.
    d.save_as();
    let cancel = d.find("Cancel", "Save As", "button");
    d.person_types(d.iso.config.to_str().unwrap());
    d.refused(&["keys", "Return"]);
    d.ok(&["act", &cancel, "click"]);
    let start = Instant::now();
    while d.shows("Save As") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "Cancel never closed the dialog"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `deskpilot driver` on the sandbox, as a host on another machine reaches it: one
/// JSON-RPC request per line.
struct Served {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Served {
    fn start(d: &Desk) -> Served {
        let mut child = d
            .iso
            .command(&d.sb)
            .env("HOME", &d.home)
            .arg("driver")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the driver starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Served {
            child,
            stdin,
            stdout,
            id: 0,
        }
    }

    /// The response to one request: `Ok(result)` or `Err(code)`.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        use std::io::{BufRead, Write};
        self.id += 1;
        let req = serde_json::json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.stdin, "{req}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        match v.get("error") {
            Some(e) => Err(e["data"]["code"].as_str().unwrap_or_default().to_owned()),
            None => Ok(v["result"].clone()),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The handle of the first node of `n`'s tree with `role` and `name`.
fn handle_of(n: &Value, role: &str, name: &str) -> Option<Value> {
    if n["role"] == role && n["name"] == name {
        return Some(n["handle"].clone());
    }
    n["children"]
        .as_array()?
        .iter()
        .find_map(|c| handle_of(c, role, name))
}

#[test]
fn the_served_driver_judges_saves_on_its_own_machine() {
    let d = Desk::start("save-served");
    d.save_as();
    let mut s = Served::start(&d);
    let apps = s.call("apps.list", Value::Null).unwrap();
    let window = apps
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["windows"].as_array().unwrap().iter())
        .find(|w| w["title"] == "Save As")
        .unwrap_or_else(|| panic!("no Save As window: {apps}"))["handle"]
        .clone();
    let tree = s
        .call("tree.snapshot", serde_json::json!({"window": window}))
        .unwrap();
    let name = handle_of(&tree["root"], "textbox", "Name")
        .unwrap_or_else(|| panic!("no name field: {tree}"));
    let set = serde_json::json!({
        "window": window,
        "handle": name,
        "op": "set_value",
        "value": "~/.config/autostart/evil.desktop",
    });
    assert_eq!(
        s.call("node.act", set).unwrap_err(),
        "COMPUTER_SCOPE_VIOLATION"
    );
    d.person_types("~/.bashrc");
    let enter = serde_json::json!({"window": window, "chord": "Return"});
    assert_eq!(
        s.call("input.keys", enter).unwrap_err(),
        "COMPUTER_SCOPE_VIOLATION"
    );
    // A pointer click on Save is a save too (it was not judged by the served
    // driver).
    let tree = s
        .call("tree.snapshot", serde_json::json!({"window": window}))
        .unwrap();
    let save = node_of(&tree["root"], "button", "Save")
        .unwrap_or_else(|| panic!("no Save button: {tree}"));
    let b = &save["bounds"];
    let at = |k: &str| b[k].as_i64().unwrap_or_else(|| panic!("no bounds: {save}"));
    let click = serde_json::json!({
        "window": window,
        "action": "click",
        "x": at("x") + at("width") / 2,
        "y": at("y") + at("height") / 2,
    });
    assert_eq!(
        s.call("input.pointer", click).unwrap_err(),
        "COMPUTER_SCOPE_VIOLATION"
    );
    assert!(!appears(&d.home.join(".config/autostart/evil.desktop")));
    assert!(!d.home.join(".bashrc").exists());
}

/// The first node of `n`'s tree with `role` and `name`.
fn node_of(n: &Value, role: &str, name: &str) -> Option<Value> {
    if n["role"] == role && n["name"] == name {
        return Some(n.clone());
    }
    n["children"]
        .as_array()?
        .iter()
        .find_map(|c| node_of(c, role, name))
}

/// A folder that links into deskpilot's config folder, under any name, was opened
/// by a double click in a file chooser (which then listed the config folder and
/// took a name there): a row whose folder resolves into one of deskpilot's
/// directories is not opened, clicked or entered. A link to an ordinary folder
/// still opens.
#[test]
fn a_link_into_deskpilots_folders_is_not_opened_in_a_file_chooser() {
    let d = Desk::start("save-chooser-link");
    let links = d.home.join("links");
    std::fs::create_dir_all(&links).unwrap();
    let own = d.iso.config.parent().unwrap();
    std::os::unix::fs::symlink(own, links.join("reports")).unwrap();
    std::os::unix::fs::symlink(d.home.join("Documents"), links.join("papers")).unwrap();
    let start_in = format!("{}/", links.display());
    d.ok(&[
        "sandbox",
        "run",
        "--",
        "zenity",
        "--file-selection",
        "--save",
        "--title",
        "Pick",
        "--filename",
        &start_in,
    ]);
    d.ok(&["wait", "--window-title", "Pick", "--timeout-ms", "30000"]);
    d.ok(&["observe", "--window", "Pick"]);
    let row = |name: &str| {
        let start = Instant::now();
        loop {
            let (_, v) = d.run(&["find", name, "--window", "Pick"]);
            let hit = v["matches"].as_array().and_then(|m| {
                m.iter()
                    .find(|h| h["name"] == name && h["role"] == "cell")
                    .and_then(|h| h["ref"].as_str().map(str::to_owned))
            });
            if let Some(r) = hit {
                return r;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no row {name:?}: {v}"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    };
    let reports = row("reports");
    let m = d.refused(&["act", &reports, "double_click"]);
    assert!(m.contains("deskpilot's own files"), "{m}");
    let m = d.refused(&["act", &reports, "click"]);
    assert!(m.contains("deskpilot's own files"), "{m}");
    // Still in `links`: the config folder's files were never listed.
    std::thread::sleep(Duration::from_millis(500));
    let (_, v) = d.run(&["find", "config.toml", "--window", "Pick"]);
    assert!(
        v["matches"].as_array().is_none_or(|m| m.is_empty()),
        "the chooser lists deskpilot's config folder: {v}"
    );
    // An ordinary folder behind a link opens.
    let papers = row("papers");
    d.ok(&["act", &papers, "double_click"]);
}

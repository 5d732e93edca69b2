//! The policy against a hostile caller that uses only deskpilot's own CLI, on real
//! apps in sandbox desktops: every spelling of a key that activates, a click at a
//! point judged by what is there, labels that hide their word, and a key sequence
//! checked key by key. The oracle is the app itself: each zenity dialog runs under
//! `sh`, which writes zenity's output and exit status to a file when the dialog ends,
//! so "nothing was pressed" is a file that does not exist, and a press that was
//! allowed is a file that does. Each test has its own sandbox, audit log and config.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::own::{Desk, TempDir};
use common::{Isolated, fails_with, message, ok, sandbox_with_apps};
use deskpilot_driver_linux::sandbox::Sandbox;
use serde_json::Value;

/// Accept-edits with zenity allow-listed: plain presses run without asking, so only
/// the irreversible rule can stop one.
/// Its `serve = true` lets the tests' own `deskpilot driver` serve the sandbox.
const ACCEPT_EDITS: &str =
    "serve = true\n[sandbox]\nmode = \"accept-edits\"\nallow_apps = [\"zenity\"]\n";
const UNATTENDED: &str = "[sandbox]\nmode = \"unattended\"\nallow_apps = [\"zenity\"]\n";

/// `sh -c 'zenity ARGS; echo "exit=$?" >> OUT'` with zenity's stdout in OUT too.
fn recorded(out: &Path, zenity_args: &[&str]) -> Vec<String> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let args: Vec<String> = zenity_args.iter().map(|a| quote(a)).collect();
    let out = quote(&out.display().to_string());
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "zenity {} > {out} 2>/dev/null; echo \"exit=$?\" >> {out}",
            args.join(" ")
        ),
    ]
}

/// A zenity question whose OK button is `label` and whose cancel button is "Keep".
fn question(out: &Path, title: &str, label: &str) -> Vec<String> {
    recorded(
        out,
        &[
            "--question",
            "--title",
            title,
            "--ok-label",
            label,
            "--cancel-label",
            "Keep",
        ],
    )
}

/// Starts a sandbox with one recorded zenity dialog.
fn sandbox_with_dialog(iso: &Isolated, argv: &[String]) -> Sandbox {
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    sandbox_with_apps(iso, &[(&argv, "zenity")]).0
}

/// What the dialog recorded when it ended: its stdout and `exit=N`. Waits up to 20 s.
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
            "the dialog never ended ({})",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The dialog is still open: nothing pressed a button. Gives a press that slipped
/// through a second to land first.
fn still_open(out: &Path) {
    std::thread::sleep(Duration::from_secs(1));
    let recorded = std::fs::read_to_string(out).unwrap_or_default();
    assert!(
        !recorded.contains("exit="),
        "the dialog ended: {recorded:?}"
    );
}

/// The ref of the first element named `name` (exactly) in zenity.
fn element(sb: &Sandbox, iso: &Isolated, name: &str) -> Value {
    let v = ok(sb, iso, &["find", name, "--app", "zenity"]);
    v["matches"]
        .as_array()
        .and_then(|m| m.iter().find(|h| h["name"] == name).cloned())
        .unwrap_or_else(|| panic!("no element named {name:?}: {v}"))
}

fn out_file(iso: &Isolated) -> PathBuf {
    iso.root.join("zenity.out")
}

/// A path for a file a command would create, outside `iso`'s directory (which holds
/// the config and so is one of deskpilot's own places, refused as a target).
fn marker_path(iso: &Isolated, name: &str) -> PathBuf {
    let tag = iso.root.file_name().unwrap().to_string_lossy().into_owned();
    std::env::temp_dir().join(format!("{tag}-{name}"))
}

/// Item: key aliases. Every spelling of Return and space — aliases, raw keysyms,
/// code points, the keypad — is judged as the key it presses: it asks first on a
/// focused "Delete", and unattended mode refuses it. A plain key still runs.
#[test]
fn every_spelling_of_an_activating_key_asks_first() {
    let iso = Isolated::new("aliases", ACCEPT_EDITS);
    let out = out_file(&iso);
    let sb = sandbox_with_dialog(&iso, &question(&out, "Aliases", "Delete"));
    ok(&sb, &iso, &["observe", "--app", "zenity"]);
    let focused = element(&sb, &iso, "Delete");
    assert!(
        focused["states"]
            .as_array()
            .is_some_and(|s| s.iter().any(|x| x == "focused")),
        "Delete should have focus: {focused}"
    );
    for chord in [
        "Return",
        "ret",
        "enter",
        "0xff0d",
        "KP_Enter",
        "space",
        "0x20",
        "U0020",
        "U+0020",
        "KP_Space",
        "shift+ret",
    ] {
        let v = fails_with(
            &sb,
            &iso,
            &["keys", chord],
            "COMPUTER_CONFIRMATION_REQUIRED",
        );
        assert!(message(&v).contains("irreversible"), "{chord}: {v}");
    }
    let v = fails_with(
        &sb,
        &iso,
        &["keys", "--text", "\n"],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(message(&v).contains("irreversible"), "{v}");
    iso.write_config(UNATTENDED);
    for chord in ["ret", "0x20", "U0020"] {
        let v = fails_with(
            &sb,
            &iso,
            &["keys", chord],
            "COMPUTER_CONFIRMATION_REQUIRED",
        );
        assert!(message(&v).contains("unattended"), "{chord}: {v}");
    }
    still_open(&out);
    // The oracle works: a plain key runs, and the harmless button ends the dialog.
    ok(&sb, &iso, &["keys", "Tab"]);
    let keep = element(&sb, &iso, "Keep");
    ok(&sb, &iso, &["act", keep["ref"].as_str().unwrap(), "click"]);
    assert!(ended(&out).contains("exit=1"), "Keep answers 1");
}

/// Item: pointer clicks. `click-at` on an irreversible button asks first (and
/// unattended refuses), judged by the element under the point at dispatch; a click on
/// a harmless button at a point runs.
#[test]
fn a_click_at_a_point_is_judged_by_the_element_there() {
    let iso = Isolated::new("click-at", ACCEPT_EDITS);
    let out = out_file(&iso);
    let sb = sandbox_with_dialog(&iso, &question(&out, "Points", "Pay"));
    let centre = |name: &str| -> (String, String, String) {
        let obs = ok(&sb, &iso, &["observe", "--app", "zenity"]);
        let basis = obs["basis"]
            .as_str()
            .unwrap_or_else(|| panic!("no basis: {obs}"))
            .to_owned();
        // r<rev>:<x>,<y>,<w>x<h>@<scale>
        let geom = basis.split_once(':').unwrap().1.split_once('@').unwrap().0;
        let g: Vec<i64> = geom.split([',', 'x']).map(|n| n.parse().unwrap()).collect();
        let b = &element(&sb, &iso, name)["bounds"];
        let at = |k: &str| b[k].as_i64().unwrap_or_else(|| panic!("no bounds: {b}"));
        let x = at("x") + at("width") / 2 - g[0];
        let y = at("y") + at("height") / 2 - g[1];
        (x.to_string(), y.to_string(), basis)
    };
    let (x, y, basis) = centre("Pay");
    let v = fails_with(
        &sb,
        &iso,
        &["click-at", &x, &y, "--basis", &basis],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(message(&v).contains("irreversible"), "{v}");
    iso.write_config(UNATTENDED);
    let v = fails_with(
        &sb,
        &iso,
        &["click-at", &x, &y, "--basis", &basis],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(message(&v).contains("unattended"), "{v}");
    still_open(&out);
    let (x, y, basis) = centre("Keep");
    ok(&sb, &iso, &["click-at", &x, &y, "--basis", &basis]);
    assert!(ended(&out).contains("exit=1"), "Keep answers 1");
}

/// Item: labels that hide the word. A zero-width space inside "Send", a Cyrillic
/// "Ѕ", full-width letters: each is still a send, by click and by key, and the
/// snapshot shows the invisible character escaped rather than a plain "Send".
#[test]
fn labels_that_hide_the_word_are_still_the_word() {
    let iso = Isolated::new("labels", ACCEPT_EDITS);
    for (i, (label, shown)) in [
        ("S\u{200b}end", r#"button "S\u{200b}end""#),
        ("\u{405}end", "button \"\u{405}end\""),
        ("Ｓｅｎｄ", "button \"Ｓｅｎｄ\""),
    ]
    .iter()
    .enumerate()
    {
        let out = iso.root.join(format!("zenity-{i}.out"));
        let sb = sandbox_with_dialog(&iso, &question(&out, "Labels", label));
        let obs = ok(&sb, &iso, &["observe", "--app", "zenity"]);
        let text = obs["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(shown),
            "{label:?} should show as {shown}: {text}"
        );
        let v = fails_with(
            &sb,
            &iso,
            &["keys", "space"],
            "COMPUTER_CONFIRMATION_REQUIRED",
        );
        assert!(message(&v).contains("send"), "{label:?}: {v}");
        let found = ok(
            &sb,
            &iso,
            &["find", "", "--app", "zenity", "--role", "button"],
        );
        let send = found["matches"]
            .as_array()
            .and_then(|m| m.iter().find(|h| h["name"] != "Keep").cloned())
            .unwrap_or_else(|| panic!("no send button: {found}"));
        let v = fails_with(
            &sb,
            &iso,
            &["act", send["ref"].as_str().unwrap(), "click"],
            "COMPUTER_CONFIRMATION_REQUIRED",
        );
        assert!(message(&v).contains("send"), "{label:?}: {v}");
        still_open(&out);
    }
}

/// Item: every key of a sequence is checked where it lands. In a form whose second
/// field is a password, "Tab a b c" from the first field stops before "a": the Tab
/// was sent, nothing reached the password field (zenity prints it empty).
#[test]
fn a_key_sequence_stops_where_it_would_reach_a_password_field() {
    let iso = Isolated::new("sequence", ACCEPT_EDITS);
    let out = out_file(&iso);
    let form = recorded(
        &out,
        &[
            "--forms",
            "--title",
            "Login",
            "--add-entry",
            "User",
            "--add-password",
            "Secret",
        ],
    );
    let sb = sandbox_with_dialog(&iso, &form);
    ok(&sb, &iso, &["observe", "--app", "zenity"]);
    let user = ok(
        &sb,
        &iso,
        &["find", "", "--app", "zenity", "--role", "textbox"],
    )["matches"]
        .as_array()
        .and_then(|m| {
            m.iter()
                .find(|h| {
                    !h["states"]
                        .as_array()
                        .is_some_and(|s| s.iter().any(|x| x == "password"))
                })
                .cloned()
        })
        .expect("the user field");
    let user = user["ref"].as_str().unwrap().to_owned();
    ok(&sb, &iso, &["act", &user, "focus"]);
    let v = fails_with(&sb, &iso, &["keys", "Tab a b c"], "COMPUTER_SECURE_INPUT");
    assert_eq!(
        v["error"]["detail"]["sent"],
        serde_json::json!(["Tab"]),
        "{v}"
    );
    assert_eq!(v["error"]["detail"]["stopped_before"], "a", "{v}");
    // Typed text that tabs into the password field stops the same way.
    ok(&sb, &iso, &["act", &user, "focus"]);
    let v = fails_with(
        &sb,
        &iso,
        &["keys", "--text", "bob\tHunter2"],
        "COMPUTER_SECURE_INPUT",
    );
    assert!(message(&v).contains("stopped before"), "{v}");
    // Submit the form: the user field holds "bob", the password field nothing.
    ok(&sb, &iso, &["act", &user, "focus"]);
    ok(&sb, &iso, &["act", &user, "set_value", "bob"]);
    let submit = ok(
        &sb,
        &iso,
        &["find", "OK", "--app", "zenity", "--role", "button"],
    )["matches"][0]["ref"]
        .as_str()
        .expect("the OK button")
        .to_owned();
    ok(&sb, &iso, &["act", &submit, "click"]);
    let printed = ended(&out);
    assert!(printed.starts_with("bob|\n"), "{printed:?}");
    assert!(printed.contains("exit=0"), "{printed:?}");
}

/// Item: deny-list gaps. An authentication prompt whose title hides the words behind
/// a zero-width space or a look-alike letter, or says them in Chinese, is refused
/// like the plain one: observing it fails and nothing can be typed there.
#[test]
fn authentication_titles_are_refused_however_they_are_spelled() {
    let iso = Isolated::new("titles", ACCEPT_EDITS);
    for title in [
        "Authentication\u{200b} Required",
        "Authentic\u{430}tion Required",
        "需要认证",
    ] {
        let out = iso.root.join("prompt.out");
        let prompt = recorded(&out, &["--entry", "--title", title, "--text", "Password"]);
        let sb = sandbox_with_dialog(&iso, &prompt);
        let v = fails_with(
            &sb,
            &iso,
            &["observe", "--app", "zenity"],
            "COMPUTER_DENYLISTED",
        );
        assert!(message(&v).contains("authentication"), "{title:?}: {v}");
        let (out_status, kv) = common::run_env(&sb, &iso, &["keys", "--text", "x\n"]);
        assert!(!out_status.status.success(), "{title:?}: {kv}");
        still_open(&out);
    }
}

/// Item: terminal windows are refused targets. Text typed "into" a terminal never
/// runs (the file it would create does not appear) until the user allows that
/// terminal by name, and then it does (the oracle works).
#[test]
fn terminal_emulators_are_refused_unless_the_user_allows_one() {
    let iso = Isolated::new("terminal", "[sandbox]\nmode = \"accept-edits\"\n");
    let marker = marker_path(&iso, "ran");
    let (sb, _) = sandbox_with_apps(
        &iso,
        &[(&["xfce4-terminal", "--disable-server"], "xfce4-terminal")],
    );
    let v = fails_with(
        &sb,
        &iso,
        &["observe", "--app", "xfce4-terminal"],
        "COMPUTER_DENYLISTED",
    );
    assert!(message(&v).contains("terminal"), "{v}");
    assert!(message(&v).contains("app_tiers xfce4-terminal=code"), "{v}");
    let line = format!("touch '{}'\n", marker.display());
    let (out, kv) = common::run_env(&sb, &iso, &["keys", "--text", &line]);
    assert!(!out.status.success(), "{kv}");
    std::thread::sleep(Duration::from_secs(1));
    assert!(!marker.exists(), "the command ran in a refused terminal");

    iso.write_config(
        "[sandbox]\nmode = \"accept-edits\"\nallow_terminals = [\"xfce4-terminal\"]\n",
    );
    ok(&sb, &iso, &["observe", "--app", "xfce4-terminal"]);
    ok(&sb, &iso, &["keys", "--text", &line]);
    let start = Instant::now();
    while !marker.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the allowed terminal never ran the command"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_file(&marker);
}

/// Item: a runtime directory another user made first is never used. Root (as CI
/// runs) makes one that belongs to `nobody`, with a planted symlink where the stop
/// record goes: `deskpilot stop` refuses with `COMPUTER_OS_PERMISSION_MISSING` and the
/// file the symlink points at is unchanged. As another user the check is the same
/// code, shown by a symlinked directory.
#[test]
fn a_runtime_directory_that_is_not_ours_is_refused() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let iso = Isolated::new("runtime-owner", ACCEPT_EDITS);
    let victim = iso.root.join("victim.txt");
    std::fs::write(&victim, "untouched").unwrap();
    let theirs = iso.root.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    symlink(&victim, theirs.join("stop.json")).unwrap();
    let real = iso.root.join("real");
    std::fs::create_dir(&real).unwrap();
    let linked = iso.root.join("linked");
    symlink(&real, &linked).unwrap();
    let mut dirs = vec![linked];
    // The test's own directory is ours: its owner is this process's uid.
    let my_uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&iso.root).unwrap());
    if my_uid == 0 {
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        dirs.push(theirs);
    }
    for dir in dirs {
        let out = common::bin()
            .env("DESKPILOT_RUNTIME_DIR", &dir)
            .env("XDG_STATE_HOME", &iso.state_home)
            .env("DESKPILOT_CONFIG", &iso.config)
            .args(["--json", "stop"])
            .output()
            .unwrap();
        let v = common::one_document(&["stop"], &out);
        assert_eq!(
            v["error"]["code"],
            "COMPUTER_OS_PERMISSION_MISSING",
            "{}: {v}",
            dir.display()
        );
        assert!(message(&v).contains("remove it"), "{v}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
}

/// Item: Return in a form. In a form whose OK button is "Submit", `keys Return` (any
/// spelling) in a field, and a value with a line break set into the field, are
/// judged by the button Enter submits: they ask first, and the form is not sent.
#[test]
fn enter_in_a_form_field_is_judged_by_the_button_it_submits() {
    let iso = Isolated::new("form", ACCEPT_EDITS);
    let out = out_file(&iso);
    let form = recorded(
        &out,
        &[
            "--forms",
            "--title",
            "Order",
            "--ok-label",
            "Submit",
            "--add-entry",
            "Name",
        ],
    );
    let sb = sandbox_with_dialog(&iso, &form);
    ok(&sb, &iso, &["observe", "--app", "zenity"]);
    let name = ok(
        &sb,
        &iso,
        &["find", "", "--app", "zenity", "--role", "textbox"],
    )["matches"][0]["ref"]
        .as_str()
        .expect("the name field")
        .to_owned();
    ok(&sb, &iso, &["act", &name, "set_value", "Bob"]);
    ok(&sb, &iso, &["act", &name, "focus"]);
    for chord in ["Return", "ret", "0xff0d", "KP_Enter"] {
        let v = fails_with(
            &sb,
            &iso,
            &["keys", chord],
            "COMPUTER_CONFIRMATION_REQUIRED",
        );
        assert!(message(&v).contains("submit"), "{chord}: {v}");
    }
    let v = fails_with(
        &sb,
        &iso,
        &["act", &name, "set_value", "999\n"],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(message(&v).contains("submit"), "{v}");
    still_open(&out);
    // A plain edit still runs.
    ok(&sb, &iso, &["act", &name, "set_value", "Alice"]);
    still_open(&out);
}

/// Item: secrets are scrubbed at every exit. A live API token and a one-time code in
/// window titles never come out: not in `apps`, `observe --json`, `find`, nor in the
/// session's state file; what is shown is the masked title.
#[test]
fn a_token_in_a_window_title_never_leaves_the_host() {
    let iso = Isolated::new("title-secret", ACCEPT_EDITS);
    let token = "sk_live_51HqLyjWDarjtT1zdp7dcQz";
    let out = iso.root.join("shop.out");
    let shop = recorded(
        &out,
        &[
            "--info",
            "--title",
            &format!("Shop {token} checkout"),
            "--text",
            "Pay?",
        ],
    );
    let sb = sandbox_with_dialog(&iso, &shop);
    let mut shown = Vec::new();
    for args in [
        &["apps"][..],
        &["observe", "--app", "zenity"],
        &["find", "Pay", "--app", "zenity"],
        &["grant"],
    ] {
        let v = ok(&sb, &iso, args);
        shown.push(v.to_string());
    }
    // The text forms too.
    for args in [&["apps"][..], &["observe", "--app", "zenity"]] {
        let o = iso.command(&sb).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}");
        shown.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    for s in &shown {
        assert!(!s.contains(token), "the token leaked: {s}");
    }
    assert!(
        shown
            .iter()
            .any(|s| s.contains("Shop ") && s.contains("checkout")),
        "the title is shown, masked: {shown:?}"
    );
    // Nothing stored under the sandbox or the audit keeps it either.
    let mut stack = vec![sb.state().dir.clone(), iso.state_home.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains(token), "{} keeps the token", p.display());
            }
        }
    }
}

/// `deskpilot --sandbox N driver` with `iso`'s config and audit, spoken to one
/// request at a time.
struct Served {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Served {
    fn start(sb: &Sandbox, iso: &Isolated) -> Served {
        let mut c = iso.command(sb);
        c.arg("driver");
        Served::spawn(c)
    }

    /// Any line-delimited JSON-RPC server of deskpilot's (`driver`, `mcp`).
    fn spawn(mut c: std::process::Command) -> Served {
        let mut child = c
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Served {
            child,
            stdin,
            stdout,
            id: 0,
        }
    }

    /// Sends a notification (no answer is read).
    fn notify(&mut self, method: &str, params: Value) {
        use std::io::Write;
        let note = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
        writeln!(self.stdin, "{note}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// An MCP tool call's result: `Ok(structuredContent)` or, for a result with
    /// `isError`, `Err(code)`.
    fn tool(&mut self, name: &str, arguments: Value) -> Result<Value, String> {
        let r = self
            .call(
                "tools/call",
                serde_json::json!({"name": name, "arguments": arguments}),
            )
            .unwrap_or_else(|code| panic!("tools/call {name} failed as a request: {code}"));
        if r["isError"] == true {
            return Err(r["structuredContent"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned());
        }
        Ok(r["structuredContent"].clone())
    }

    /// The response to one request: `Ok(result)` or `Err(data.code)`.
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

/// Item: the driver is not a way around the host. The driver served to a remote host
/// applies its own machine's feature switch, launch rules, secure input, deny-list,
/// redaction and audit, whatever the caller asks.
#[test]
fn the_served_driver_enforces_its_own_machines_rules() {
    let iso = Isolated::new("served", "");
    let token = "sk_live_51HqLyjWDarjtT1zdp7dcQz";
    let title = format!("Unlock {token}");
    let out = iso.root.join("pw.out");
    let prompt = recorded(&out, &["--password", "--title", &title]);
    let sb = sandbox_with_dialog(&iso, &prompt);
    iso.write_config("serve = true\n[sandbox]\nenabled = false\n");
    let mut d = Served::start(&sb, &iso);
    // The machine's switch is off: nothing is served.
    assert_eq!(
        d.call("apps.list", Value::Null).unwrap_err(),
        "COMPUTER_FEATURE_DISABLED"
    );
    // Computer use on, but serving not turned on by this machine's user: nothing
    // is served either (any program here could start `deskpilot driver`).
    iso.write_config("");
    assert_eq!(
        d.call("apps.list", Value::Null).unwrap_err(),
        "COMPUTER_FEATURE_DISABLED"
    );
    iso.write_config("serve = true\n");
    let apps = d.call("apps.list", Value::Null).unwrap();
    assert!(
        !apps.to_string().contains(token),
        "titles leave masked: {apps}"
    );
    let window = apps
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "zenity")
        .map(|a| a["windows"][0]["handle"].clone())
        .expect("zenity's window");
    // Launch rules: no shell.
    let marker = marker_path(&iso, "launched");
    let sh = format!("touch '{}'", marker.display());
    assert_eq!(
        d.call(
            "apps.launch",
            serde_json::json!({"command": ["/bin/sh", "-c", sh]})
        )
        .unwrap_err(),
        "COMPUTER_DENYLISTED"
    );
    // Secure input: the password field has focus.
    assert_eq!(
        d.call(
            "input.keys",
            serde_json::json!({"window": window, "text": "Hunter2\n"})
        )
        .unwrap_err(),
        "COMPUTER_SECURE_INPUT"
    );
    // The user's deny-list.
    iso.write_config("serve = true\ndeny_apps = [\"zenity\"]\n");
    assert_eq!(
        d.call("tree.snapshot", serde_json::json!({"window": window}))
            .unwrap_err(),
        "COMPUTER_DENYLISTED"
    );
    drop(d);
    std::thread::sleep(Duration::from_secs(1));
    assert!(!marker.exists(), "the shell ran");
    let recorded = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(
        !recorded.contains("exit="),
        "the prompt was answered: {recorded:?}"
    );
    // Each refusal is on this machine's audit.
    let audit = std::fs::read_to_string(iso.audit_path()).unwrap_or_default();
    for op in ["\"op\":\"launch\"", "\"op\":\"keys\""] {
        assert!(
            audit.lines().any(|l| l.contains(op)
                && l.contains("\"session\":\"driver\"")
                && l.contains("refused")),
            "no driver audit line for {op}: {audit}"
        );
    }
}

/// Item: policy files are not the agent's to write. A file dialog opened in the
/// directory of deskpilot's config is refused whatever is done in it; a file name
/// that names the config, typed or set anywhere, is refused; no app is launched on
/// it. The config file is unchanged at the end.
#[test]
fn deskpilots_own_files_cannot_be_written_through_an_app() {
    let iso = Isolated::new("protect", ACCEPT_EDITS);
    let config_before = std::fs::read_to_string(&iso.config).unwrap();
    let dir = format!("{}/", iso.root.display());
    let config = iso.config.display().to_string();
    // A save dialog that opens in the config's directory.
    let inside = iso.root.join("inside.out");
    let there = recorded(
        &inside,
        &[
            "--file-selection",
            "--save",
            "--title",
            "Inside",
            "--filename",
            &dir,
        ],
    );
    // And one that opens in /tmp.
    let outside = iso.root.join("outside.out");
    let elsewhere = recorded(
        &outside,
        &[
            "--file-selection",
            "--save",
            "--title",
            "Elsewhere",
            "--filename",
            "/tmp/",
        ],
    );
    let there: Vec<&str> = there.iter().map(String::as_str).collect();
    let elsewhere: Vec<&str> = elsewhere.iter().map(String::as_str).collect();
    let (sb, _) = sandbox_with_apps(&iso, &[(&there, "zenity"), (&elsewhere, "zenity")]);
    // Both dialogs are zenity: wait for the second one's window by its title.
    let start = Instant::now();
    while !ok(&sb, &iso, &["apps"]).to_string().contains("Elsewhere") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no Elsewhere dialog"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    ok(&sb, &iso, &["observe", "--window", "Elsewhere"]);
    let name = ok(
        &sb,
        &iso,
        &["find", "", "--window", "Elsewhere", "--role", "textbox"],
    )["matches"][0]["ref"]
        .as_str()
        .expect("the name field")
        .to_owned();
    let v = fails_with(
        &sb,
        &iso,
        &["act", &name, "set_value", &config],
        "COMPUTER_SCOPE_VIOLATION",
    );
    assert!(message(&v).contains("deskpilot's own files"), "{v}");
    ok(&sb, &iso, &["act", &name, "focus"]);
    fails_with(
        &sb,
        &iso,
        &["keys", "--text", "~/.config/deskpilot/config.toml"],
        "COMPUTER_SCOPE_VIOLATION",
    );
    // A harmless name is still typed.
    ok(&sb, &iso, &["act", &name, "set_value", "notes.txt"]);
    // A path typed in pieces, its last character sent with Enter in one chord, is
    // judged whole with the field's text (before, only the chord's own text was
    // judged, and a chord has none).
    let root = iso.root.display().to_string();
    let (head, last) = root.split_at(root.len() - 1);
    assert!(last.chars().all(|c| c.is_ascii_alphanumeric()), "{root}");
    ok(&sb, &iso, &["act", &name, "set_value", head]);
    ok(&sb, &iso, &["act", &name, "focus"]);
    let v = fails_with(
        &sb,
        &iso,
        &["keys", &format!("{last}+Return")],
        "COMPUTER_SCOPE_VIOLATION",
    );
    assert!(message(&v).contains("deskpilot's own files"), "{v}");
    still_open(&outside);
    // A path relative to the folder the dialog shows (/tmp) names the config's
    // folder as surely as a full one (before: zenity's chooser accepts with "OK",
    // not "Save", so it was not judged as a save dialog, and it printed the path).
    let cfg_dir = iso.config.parent().unwrap();
    let relative = cfg_dir
        .strip_prefix("/tmp")
        .expect("the test's config is under /tmp")
        .join("x");
    let v = fails_with(
        &sb,
        &iso,
        &["act", &name, "set_value", relative.to_str().unwrap()],
        "COMPUTER_SCOPE_VIOLATION",
    );
    assert!(message(&v).contains("deskpilot's own files"), "{v}");
    still_open(&outside);
    ok(&sb, &iso, &["act", &name, "set_value", "notes.txt"]);

    ok(&sb, &iso, &["observe", "--window", "Inside"]);
    let v = fails_with(&sb, &iso, &["keys", "Return"], "COMPUTER_SCOPE_VIOLATION");
    assert!(message(&v).contains("deskpilot's own files"), "{v}");
    still_open(&inside);

    // The served driver will not open an app on the config either.
    let mut d = Served::start(&sb, &iso);
    assert_eq!(
        d.call(
            "apps.launch",
            serde_json::json!({"command": ["mousepad", config]})
        )
        .unwrap_err(),
        "COMPUTER_SCOPE_VIOLATION"
    );
    assert_eq!(std::fs::read_to_string(&iso.config).unwrap(), config_before);
}

/// Item: the config is tamper-evident. Once `deskpilot config set` (the user's
/// channel, at a terminal) has sealed it, a config rewritten by anything else —
/// widened to `bypass` as an editor saving over it would — turns computer use off
/// instead of widening it, its seal removed changes nothing, an edit on top is
/// refused, and only `deskpilot config trust` at a terminal accepts it again.
#[test]
fn a_config_changed_outside_deskpilot_never_widens_the_policy() {
    let iso = Isolated::new("sealed-config", "");
    let out = iso.root.join("q.out");
    let sb = sandbox_with_dialog(&iso, &question(&out, "Sealed", "Close"));
    let (status, v, text) =
        common::run_tty(&sb, &iso, &["config", "set", "mode", "accept-edits"], "y\n");
    assert!(status.success(), "{v} {text}");
    let seal = iso.root.join("config.toml.seal");
    assert!(seal.exists(), "config set seals the file");
    ok(&sb, &iso, &["observe", "--app", "zenity"]);

    // Rewritten by another program.
    iso.write_config("mode = \"bypass\"\n");
    let v = fails_with(
        &sb,
        &iso,
        &["observe", "--app", "zenity"],
        "COMPUTER_FEATURE_DISABLED",
    );
    assert!(message(&v).contains("changed outside deskpilot"), "{v}");
    let shown = ok(&sb, &iso, &["config"]);
    assert_eq!(shown["changed_outside"], true, "{shown}");
    assert_eq!(shown["effective"]["mode"], "plan", "{shown}");
    std::fs::remove_file(&seal).unwrap();
    fails_with(&sb, &iso, &["keys", "Tab"], "COMPUTER_FEATURE_DISABLED");
    // An edit on top would seal the change unseen: refused.
    let (status, v, text) = common::run_tty(&sb, &iso, &["config", "set", "mode", "plan"], "y\n");
    assert!(!status.success(), "{v} {text}");
    assert_eq!(
        v["error"]["code"], "COMPUTER_CONFIRMATION_REQUIRED",
        "{v} {text}"
    );
    assert_eq!(
        std::fs::read_to_string(&iso.config).unwrap(),
        "mode = \"bypass\"\n"
    );
    // The user reviews it and accepts it.
    let (status, v, text) = common::run_tty(&sb, &iso, &["config", "trust"], "y\n");
    assert!(status.success(), "{v} {text}");
    let shown = ok(&sb, &iso, &["config"]);
    assert_eq!(shown["changed_outside"], false, "{shown}");
    assert_eq!(shown["effective"]["mode"], "bypass", "{shown}");
    ok(&sb, &iso, &["observe", "--app", "zenity"]);
}

/// What `path` looks like to process `pid` (through `/proc/PID/root`, the kernel's
/// view of that process's mounts): whether it exists there.
fn seen_by(pid: u64, path: &Path) -> bool {
    let inside = path.strip_prefix("/").expect("an absolute path");
    Path::new(&format!("/proc/{pid}/root"))
        .join(inside)
        .exists()
}

/// True when process `pid` can read deskpilot's file `path` as deskpilot wrote it.
/// A file of deskpilot's in a directory that is not its own (a runtime directory
/// chosen elsewhere) is masked with `/dev/null`: the path is there, empty and
/// read-only, and what deskpilot wrote is not.
fn reads_ours(pid: u64, path: &Path) -> bool {
    let inside = path.strip_prefix("/").expect("an absolute path");
    let theirs = std::fs::read(Path::new(&format!("/proc/{pid}/root")).join(inside));
    let ours = std::fs::read(path).expect("deskpilot's own file");
    theirs.is_ok_and(|t| t == ours)
}

/// The pid of the first app named `name` with a window, waiting up to a minute.
fn app_pid(sb: &Sandbox, iso: &Isolated, name: &str, title: &str) -> u64 {
    let start = Instant::now();
    loop {
        let apps = ok(sb, iso, &["apps"]);
        let pid = apps["apps"].as_array().and_then(|apps| {
            apps.iter()
                .find(|a| {
                    a["name"] == name
                        && a["windows"]
                            .as_array()
                            .is_some_and(|w| w.iter().any(|w| w.to_string().contains(title)))
                })
                .and_then(|a| a["pid"].as_u64())
        });
        if let Some(pid) = pid {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {name} window titled {title:?}: {apps}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Item 7(d): apps deskpilot starts into a sandbox — by `sandbox run` and by the
/// driver's `apps.launch` — cannot see deskpilot's own directories. The oracle is the
/// kernel's view of each app's mounts (`/proc/PID/root`): the config file, the
/// sandbox's `sandbox.json` and the runtime directory's other files are not there,
/// while the session bus socket the app lives on is, and the app shows its window.
#[test]
fn apps_started_in_a_sandbox_cannot_see_deskpilots_directories() {
    let iso = Isolated::new("confined", ACCEPT_EDITS);
    let (sb, _) = sandbox_with_apps(&iso, &[]);
    let dir = sb.state().dir.clone();
    let runtime = dir.parent().expect("the runtime directory").to_path_buf();
    let stray = runtime.join(format!("stray-{}.json", std::process::id()));
    std::fs::write(&stray, "{}").unwrap();
    for p in [&iso.config, &dir.join("sandbox.json"), &stray] {
        assert!(p.exists(), "{} exists for deskpilot", p.display());
    }

    let mut d = Served::start(&sb, &iso);
    let launched = d
        .call(
            "apps.launch",
            serde_json::json!({"command": ["mousepad"], "wait_ms": 30000}),
        )
        .expect("the driver launches mousepad");
    let by_driver = launched["window"]["pid"]
        .as_u64()
        .unwrap_or_else(|| app_pid(&sb, &iso, "mousepad", "Mousepad"));
    drop(d);
    ok(&sb, &iso, &["sandbox", "run", "--", "gnome-calculator"]);
    let by_run = app_pid(&sb, &iso, "gnome-calculator", "Calculator");

    for pid in [by_run, by_driver] {
        for hidden in [&iso.config, &dir.join("sandbox.json"), &stray] {
            // Under a directory of deskpilot's own (the default), the path is not
            // there at all; elsewhere it is masked (DESKPILOT_RUNTIME_DIR chosen).
            let in_own_dir = hidden.ancestors().skip(1).any(|a| {
                a.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("deskpilot"))
            });
            if in_own_dir {
                assert!(!seen_by(pid, hidden), "pid {pid} sees {}", hidden.display());
            } else {
                assert!(
                    !reads_ours(pid, hidden),
                    "pid {pid} reads {}",
                    hidden.display()
                );
            }
        }
        assert!(seen_by(pid, &dir.join("bus")), "pid {pid} lost its bus");
    }
    let _ = std::fs::remove_file(&stray);

    // Nor does the session bus start anything for an app: a service file written
    // into the apps' own data directory is never run (it would run unconfined).
    let services = dir.join("data/dbus-1/services");
    std::fs::create_dir_all(&services).unwrap();
    let marker = marker_path(&iso, "activated");
    std::fs::write(
        services.join("org.deskpilot.Escape.service"),
        format!(
            "[D-BUS Service]\nName=org.deskpilot.Escape\nExec=/usr/bin/touch {}\n",
            marker.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new("dbus-send")
        .env("DBUS_SESSION_BUS_ADDRESS", &sb.state().bus_address)
        .args([
            "--session",
            "--print-reply",
            "--dest=org.deskpilot.Escape",
            "/",
            "org.deskpilot.Escape.Go",
        ])
        .output()
        .expect("dbus-send runs");
    assert!(!out.status.success(), "the bus activated a service");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!marker.exists(), "the service ran");
}

/// A desk with its own runtime directory and `config`, showing one recorded zenity
/// question titled `title` whose OK button is `label`.
fn own_desk_with_question<'a>(
    dir: &'a TempDir,
    config: &str,
    out: &Path,
    title: &str,
    label: &str,
) -> Desk<'a> {
    let desk = Desk::start_with_config(dir.path(), config);
    let argv = question(out, title, label);
    let mut args = vec!["sandbox", "run", "--"];
    args.extend(argv.iter().map(String::as_str));
    desk.ok(&args);
    let start = Instant::now();
    while !desk.ok(&["apps"]).to_string().contains(title) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {title} dialog"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    desk
}

/// Items 7 and 8 on a real app: a damaged approvals file is recreated empty (the
/// next irreversible key asks first instead of failing every confirmation), a yes
/// written into it by anything but `deskpilot approve` is no yes, and a damaged stop
/// record means stopped — for reading and acting, and still a second
/// later. The dialog is never answered.
#[test]
fn damaged_policy_files_never_mean_go() {
    let dir = TempDir::new("damaged");
    let out = dir.path().join("q.out");
    let desk = own_desk_with_question(&dir, ACCEPT_EDITS, &out, "Damaged", "Send");
    desk.ok(&["observe", "--app", "zenity"]);

    let approvals = desk.runtime().join("approvals.json");
    std::fs::write(&approvals, "{\"pending\": [garbage").unwrap();
    let v = desk.fails_with(&["keys", "space"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(message(&v).contains("send"), "{v}");
    let text = std::fs::read_to_string(&approvals).expect("approvals recreated");
    let mut file: Value =
        serde_json::from_str(&text).expect("the recreated approvals file is valid");
    // An editor marks the pending question approved, as `deskpilot approve` would
    // have, but without its seal: the key still asks first.
    fn approve_all(v: &mut Value) -> usize {
        match v {
            Value::Object(m) => {
                let here = usize::from(m.contains_key("approved"));
                if here == 1 {
                    m.insert("approved".into(), Value::Bool(true));
                }
                here + m.values_mut().map(approve_all).sum::<usize>()
            }
            Value::Array(a) => a.iter_mut().map(approve_all).sum(),
            _ => 0,
        }
    }
    assert!(approve_all(&mut file) > 0, "a pending approval: {text}");
    std::fs::write(&approvals, file.to_string()).unwrap();
    desk.fails_with(&["keys", "space"], "COMPUTER_CONFIRMATION_REQUIRED");
    still_open(&out);

    std::fs::write(desk.runtime().join("stop.json"), "{\"at_ms\": ").unwrap();
    for _ in 0..2 {
        desk.fails_with(&["observe", "--app", "zenity"], "COMPUTER_STOPPED_BY_USER");
        desk.fails_with(&["keys", "Escape"], "COMPUTER_STOPPED_BY_USER");
        std::thread::sleep(Duration::from_secs(1));
    }
    still_open(&out);
}

/// Item 9 on a real app: an MCP server that is already running applies a config
/// changed under it to its very next call. Once the mode is `plan`, `computer_keys
/// Escape` is refused and the dialog stays open; back in accept-edits the same call
/// closes it (the oracle works).
#[test]
fn a_running_mcp_server_applies_a_narrower_config_at_once() {
    let dir = TempDir::new("reload");
    let out = dir.path().join("q.out");
    let desk = own_desk_with_question(&dir, ACCEPT_EDITS, &out, "Reload", "Fine");
    let mut c = desk.command();
    c.arg("mcp");
    let mut mcp = Served::spawn(c);
    mcp.call(
        "initialize",
        serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "adversarial", "version": "1"}}),
    )
    .expect("initialize");
    mcp.notify("notifications/initialized", serde_json::json!({}));
    mcp.tool("computer_observe", serde_json::json!({"app": "zenity"}))
        .expect("observe");

    std::fs::write(
        desk.config(),
        "[sandbox]\nmode = \"plan\"\nallow_apps = [\"zenity\"]\n",
    )
    .unwrap();
    assert_eq!(
        mcp.tool(
            "computer_keys",
            serde_json::json!({"keys": "Escape", "app": "zenity"})
        )
        .unwrap_err(),
        "COMPUTER_SCOPE_VIOLATION"
    );
    still_open(&out);

    std::fs::write(desk.config(), ACCEPT_EDITS).unwrap();
    mcp.tool(
        "computer_keys",
        serde_json::json!({"keys": "Escape", "app": "zenity"}),
    )
    .expect("Escape in accept-edits");
    assert!(ended(&out).contains("exit=1"), "Escape answers 1 (cancel)");
}

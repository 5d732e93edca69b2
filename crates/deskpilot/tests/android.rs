//! `--device adb` through the real CLI, against a fake `adb` put first on `PATH`
//! (`tests/fixtures/fake-adb`: recorded `uiautomator dump` screens of a phone that
//! moves between them on the `input` commands it receives, logs every command and
//! refuses any it does not know). The whole host runs as it would with a phone:
//! observe → act by ref → the diff, with the policy on this machine (the feature
//! switch, the mode and allow-list from the user's config, secure input, the
//! confirmation of an irreversible action and its approval at a terminal). The
//! oracle for what reached the phone is the fake's command log and state.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use common::own::{TempDir, bin, fails_json, ok_json, run_json};

const FAKE_ADB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake-adb");
const USERNAME: &str = "login|com.example.shop:id/username";
const PASSWORD: &str = "login|com.example.shop:id/password";

/// The user's config: deskpilot on for this machine's devices, edits without
/// asking in the apps the tests drive, anything irreversible confirmed.
const CONFIG: &str = r#"enabled = true
mode = "accept-edits"
allow_apps = ["com.android.settings", "com.example.shop", "com.example.catalog", "com.example.help", "com.google.android.apps.nexuslauncher"]
"#;

/// A fake phone and deskpilot's own directories for it, under one temporary
/// directory.
struct Phone {
    dir: TempDir,
}

impl Phone {
    fn new(tag: &str, state: Value) -> Phone {
        Phone::with_config(tag, state, Some(CONFIG))
    }

    /// `config` None: no config file (deskpilot's defaults on the user's machine).
    fn with_config(tag: &str, state: Value, config: Option<&str>) -> Phone {
        let dir = TempDir::new(&format!("adb-{tag}"));
        std::fs::create_dir_all(dir.path().join("cfg")).unwrap();
        if let Some(c) = config {
            std::fs::write(dir.path().join("cfg").join("config.toml"), c).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("phone")).unwrap();
        std::fs::write(
            dir.path().join("phone").join("state.json"),
            state.to_string(),
        )
        .unwrap();
        Phone { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn phone(&self) -> PathBuf {
        self.root().join("phone")
    }

    /// `deskpilot --device adb` with the fake adb first on PATH.
    fn command(&self) -> Command {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut c = bin(self.root());
        c.env("PATH", format!("{FAKE_ADB}:{path}"))
            .env("FAKE_ADB_DIR", self.phone())
            .env_remove("DESKPILOT_ADB")
            .env_remove("DESKPILOT_DEVICE")
            .env_remove("DESKPILOT_SESSION")
            .env_remove("DESKPILOT_AUDIT")
            .args(["--device", "adb"]);
        c
    }

    fn run(&self, args: &[&str]) -> (Output, Value) {
        run_json(self.command(), args)
    }

    fn ok(&self, args: &[&str]) -> Value {
        ok_json(self.command(), args)
    }

    fn fails_with(&self, args: &[&str], code: &str) -> Value {
        fails_json(self.command(), args, code)
    }

    /// Human output of a command that succeeds.
    fn text(&self, args: &[&str]) -> String {
        let out = self.command().args(args).output().expect("deskpilot runs");
        assert!(
            out.status.success(),
            "{args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.phone().join("log.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON log line"))
            .collect()
    }

    fn clear_log(&self) {
        let _ = std::fs::remove_file(self.phone().join("log.jsonl"));
    }

    fn state(&self) -> Value {
        let s = std::fs::read_to_string(self.phone().join("state.json")).unwrap();
        serde_json::from_str(&s).unwrap()
    }

    fn set(&self, patch: Value) {
        let mut st = self.state();
        for (k, v) in patch.as_object().unwrap() {
            st[k] = v.clone();
        }
        std::fs::write(self.phone().join("state.json"), st.to_string()).unwrap();
    }

    /// The log entries of commands that act on the phone (`input`, `am`), with the
    /// words the device shell split them into.
    fn inputs(&self) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|e| matches!(e["words"][0].as_str(), Some("input" | "am")))
            .collect()
    }
}

fn words(e: &Value) -> Vec<&str> {
    e["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect()
}

/// The ref on the line of an observation or diff text that holds `needle`.
fn ref_of(text: &str, needle: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"));
    let start = line.find("[e").expect("a ref on the line") + 1;
    let end = start + line[start..].find(']').unwrap();
    line[start..end].to_string()
}

/// The centre of `[x1,y1][x2,y2]`, as a tap at it is written.
fn centre(bounds: &str) -> (i64, i64) {
    let n: Vec<i64> = bounds
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (n[0] + (n[2] - n[0]) / 2, n[1] + (n[3] - n[1]) / 2)
}

fn observe(p: &Phone) -> String {
    p.ok(&["observe"])["text"].as_str().unwrap().to_string()
}

#[test]
fn apps_and_observe_name_the_device_and_never_show_a_password() {
    let p = Phone::new("observe", json!({}));
    let apps = p.ok(&["apps"]);
    assert_eq!(apps["device"]["name"], "adb", "{apps}");
    assert_eq!(apps["device"]["platform"], "android", "{apps}");
    assert_eq!(
        apps["device"]["driver"], "deskpilot-driver-android",
        "{apps}"
    );
    assert_eq!(apps["apps"][0]["name"], "com.android.settings", "{apps}");
    let text = p.text(&["apps"]);
    assert!(
        text.starts_with("device adb · android (deskpilot-driver-android"),
        "{text}"
    );

    let obs = p.ok(&["observe"]);
    let text = obs["text"].as_str().unwrap();
    for row in [
        "listitem \"Network & internet, Mobile, Wi\u{2011}Fi, hotspot\"",
        "listitem \"Connected devices, Bluetooth, pairing\"",
        "listitem \"Battery, 82% - Should last until about 11:30\u{202f}PM\"",
        "listitem \"Display\"",
    ] {
        let r = ref_of(text, row);
        assert!(r.starts_with('e'), "{text}");
    }
    assert!(text.contains("group \"Search settings\""), "{text}");
    assert_eq!(obs["grant"]["device"], "adb", "{obs}");
    assert_eq!(obs["window"]["handle"], "screen:com.android.settings");
    // What the read cost, as the driver measured it.
    assert!(obs["stats"]["elapsed_ms"].as_u64().unwrap() > 0, "{obs}");
    assert!(obs["stats"]["objects"].as_u64().unwrap() > 10, "{obs}");
    let human = p.text(&["observe"]);
    assert!(human.contains(" ms · device read "), "{human}");

    // A device that dumps a password field's own text ("speak passwords"): the
    // secret never leaves the driver, in text, JSON, the state file or the audit.
    p.set(json!({ "screen": "login", "password_plain": true, "fields": { PASSWORD: "hunter2-secret" } }));
    let obs = p.ok(&["observe"]);
    let text = obs["text"].as_str().unwrap();
    assert!(text.contains("textbox editable password"), "{text}");
    assert!(!obs.to_string().contains("hunter2"), "{obs}");
    let found = p.ok(&["find", ""]);
    assert!(!found.to_string().contains("hunter2"), "{found}");
    for dir in ["run", "state"] {
        for f in walk(&p.root().join(dir)) {
            let s = std::fs::read(&f).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&s).contains("hunter2"),
                "{} holds the secret",
                f.display()
            );
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_click_by_ref_taps_the_centre_of_the_element_and_the_diff_shows_the_new_screen() {
    let p = Phone::new("click", json!({}));
    let text = observe(&p);
    let battery = ref_of(&text, "listitem \"Battery");
    let network = ref_of(&text, "listitem \"Network & internet");
    p.clear_log();
    let v = p.ok(&["act", &network, "click"]);
    let taps = p.inputs();
    assert_eq!(taps.len(), 1, "one tap: {taps:?}");
    let tap = &taps[0];
    let hit = &tap["hit"];
    assert_eq!(hit["bounds"], "[0,622][1080,853]", "the row was hit: {tap}");
    let (x, y) = centre(hit["bounds"].as_str().unwrap());
    assert_eq!(words(tap), ["input", "tap", &x.to_string(), &y.to_string()]);
    assert_eq!(tap["to"], "network", "{tap}");
    let result = &v["result"];
    assert_eq!(result["channel"], "pointer", "{v}");
    assert_eq!(result["method"], format!("input tap {x} {y}"), "{v}");
    assert_eq!(result["settle"]["reads"], 2, "{v}");
    assert_eq!(result["note"], "settled after 2 reads of the screen", "{v}");
    let diff = v["diff"].as_str().unwrap();
    assert!(diff.contains("+ ") && diff.contains("- "), "{diff}");
    assert!(diff.contains("listitem \"Airplane mode\""), "{diff}");
    assert!(diff.contains("button \"Navigate up\""), "{diff}");
    let text = v["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "ok click {network} listitem \"Network & internet, Mobile, Wi\u{2011}Fi, hotspot\" via pointer:input tap {x} {y} · executed"
        )),
        "{text}"
    );

    // The screen changed: a ref of the old one lands nowhere, and nothing is sent.
    p.clear_log();
    let v = p.fails_with(&["act", &battery, "click"], "COMPUTER_STALE_REF");
    assert!(
        v["error"]["detail"]["snapshot"]
            .as_str()
            .is_some_and(|s| s.contains("Airplane mode")),
        "the fresh snapshot comes with it: {v}"
    );
    assert!(p.inputs().is_empty(), "{:?}", p.inputs());

    // Refs of the new screen work; the switch is the row's, so the row toggles.
    let text = observe(&p);
    let switch = ref_of(&text, "checkbox \"Airplane mode\"");
    let row = ref_of(&text, "listitem \"Airplane mode\"");
    let v = p.fails_with(
        &["act", &switch, "toggle"],
        "COMPUTER_ELEMENT_NOT_ACTIONABLE",
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("listitem \"Airplane mode\", which holds it"),
        "{v}"
    );
    let v = p.ok(&["act", &row, "toggle"]);
    let diff = v["diff"].as_str().unwrap();
    assert!(diff.contains(&format!("~ [{switch}] checkbox")), "{diff}");
    assert!(diff.contains("→ checked"), "{diff}");
}

#[test]
fn set_value_taps_the_field_and_types_the_text_through_the_device_shell() {
    let p = Phone::new("set-value", json!({ "screen": "login" }));
    let text = observe(&p);
    let user = ref_of(&text, "textbox value=\"Email\"");
    let value = r#"Ann O'Neil "AJ" & co; $HOME 100%sure"#;
    p.clear_log();
    let v = p.ok(&["act", &user, "set_value", value]);
    let sent = p.inputs();
    let tap = &sent[0];
    assert_eq!(
        tap["hit"]["resource-id"], "com.example.shop:id/username",
        "{tap}"
    );
    let (x, y) = centre(tap["hit"]["bounds"].as_str().unwrap());
    assert_eq!(words(tap), ["input", "tap", &x.to_string(), &y.to_string()]);
    let texts: Vec<&Value> = sent.iter().filter(|e| e["words"][1] == "text").collect();
    // `%` followed by `s` cannot be typed in one call: the text is cut there.
    assert_eq!(texts.len(), 2, "{sent:?}");
    assert_eq!(
        words(texts[0]),
        ["input", "text", r#"Ann%sO'Neil%s"AJ"%s&%sco;%s$HOME%s100%"#]
    );
    assert_eq!(
        texts[0]["line"], r#"input text 'Ann%sO'\''Neil%s"AJ"%s&%sco;%s$HOME%s100%'"#,
        "quoted for the device's shell"
    );
    assert_eq!(words(texts[1]), ["input", "text", "sure"]);
    assert!(p.log().iter().all(|e| e["ok"] == true), "{:?}", p.log());
    assert_eq!(p.state()["fields"][USERNAME], value);
    let diff = v["diff"].as_str().unwrap();
    assert!(
        diff.contains(&format!(
            "~ [{user}] textbox value \"Email\" → \"Ann O'Neil \\\"AJ\\\" & co; $HOME 100%sure\""
        )),
        "{diff}"
    );
    assert!(
        v["result"]["note"]
            .as_str()
            .unwrap()
            .contains("reads back the 36 characters sent"),
        "{v}"
    );
    assert_eq!(v["result"]["channel"], "keyboard", "{v}");
    let obs = observe(&p);
    assert!(
        obs.contains("textbox value=\"Ann O'Neil \\\"AJ\\\" & co; $HOME 100%sure\""),
        "the field reads back the value: {obs}"
    );

    // The password field: refused by the host's policy, nothing reaches the phone.
    let pw = ref_of(&obs, "textbox editable password");
    p.clear_log();
    for (op, value) in [
        ("set_value", Some("hunter2")),
        ("type", Some("x")),
        ("clear", None),
    ] {
        let mut args = vec!["act", pw.as_str(), op];
        args.extend(value);
        let v = p.fails_with(&args, "COMPUTER_SECURE_INPUT");
        assert!(!v.to_string().contains("hunter2"), "{v}");
    }
    assert!(p.inputs().is_empty(), "{:?}", p.inputs());
    let audit = std::fs::read_to_string(p.root().join("state/deskpilot/audit.jsonl"))
        .expect("the audit log");
    let refusals: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "refusal" && r["code"] == "COMPUTER_SECURE_INPUT")
        .collect();
    assert_eq!(refusals.len(), 3, "{audit}");
    assert!(refusals.iter().all(|r| r["device"] == "adb"), "{audit}");
    assert!(!audit.contains("hunter2"));
}

#[test]
fn unicode_needs_the_adb_keyboard() {
    let p = Phone::new("unicode", json!({ "screen": "login" }));
    let user = ref_of(&observe(&p), "textbox value=\"Email\"");
    p.clear_log();
    let v = p.fails_with(
        &["act", &user, "set_value", "Zoë 日本"],
        "COMPUTER_INPUT_UNAVAILABLE",
    );
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("'ë', '日', '本'"), "{msg}");
    assert!(msg.contains("ADB Keyboard"), "{msg}");
    assert!(p.inputs().is_empty(), "nothing typed: {:?}", p.inputs());
    assert!(p.state()["fields"].get(USERNAME).is_none());

    p.set(json!({ "ime": "current" }));
    let v = p.ok(&["act", &user, "set_value", "Zoë 日本"]);
    let b = p
        .inputs()
        .into_iter()
        .find(|e| e["words"][0] == "am")
        .expect("a broadcast");
    assert_eq!(
        words(&b),
        [
            "am",
            "broadcast",
            "-a",
            "ADB_INPUT_B64",
            "--es",
            "msg",
            "Wm/DqyDml6XmnKw="
        ]
    );
    assert_eq!(b["broadcast"], "Zoë 日本");
    assert_eq!(p.state()["fields"][USERNAME], "Zoë 日本");
    assert!(
        v["result"]["method"]
            .as_str()
            .unwrap()
            .contains("am broadcast ADB_INPUT_B64"),
        "{v}"
    );
}

#[test]
fn a_screen_that_never_idles_is_retried_once_then_not_responding() {
    let p = Phone::new("idle", json!({ "dump_fail": 1 }));
    let text = observe(&p);
    assert!(text.contains("listitem \"Network & internet"), "{text}");
    let dumps = p
        .log()
        .iter()
        .filter(|e| e["words"][0] == "uiautomator")
        .count();
    assert_eq!(dumps, 2, "a first dump that failed is tried once more");

    p.set(json!({ "dump_fail": "always" }));
    p.clear_log();
    let v = p.fails_with(&["observe"], "COMPUTER_NOT_RESPONDING");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("never became idle"), "{msg}");
    assert!(msg.contains("could not get idle state"), "{msg}");
    assert!(v.get("text").is_none(), "never an empty screen: {v}");
    let log = p.log();
    assert_eq!(
        log.iter()
            .filter(|e| e["words"][0] == "uiautomator")
            .count(),
        2,
        "{log:?}"
    );
    assert!(log.iter().all(|e| e["words"][0] != "cat"), "{log:?}");
}

#[test]
fn scroll_swipes_inside_the_list_and_the_diff_shows_the_next_rows() {
    let p = Phone::new("scroll", json!({ "screen": "list-1" }));
    let text = observe(&p);
    assert!(text.contains("listitem \"Item 10, SKU 1010"), "{text}");
    assert!(!text.contains("Item 11"), "{text}");
    let list = ref_of(&text, "] list");
    let item = ref_of(&text, "listitem \"Item 04");
    p.clear_log();
    let v = p.ok(&["act", &list, "scroll", "down"]);
    let swipe = &p.inputs()[0];
    let w = words(swipe);
    assert_eq!(w[..2], ["input", "swipe"]);
    let n: Vec<i64> = w[2..].iter().map(|s| s.parse().unwrap()).collect();
    // The list's bounds are [0,275][1080,2337]: both ends inside, the finger moves up.
    for (x, y) in [(n[0], n[1]), (n[2], n[3])] {
        assert!(
            (0..1080).contains(&x) && (275..2337).contains(&y),
            "{swipe}"
        );
    }
    assert!(n[1] > n[3], "{swipe}");
    assert_eq!(
        swipe["scrolled"]["resource-id"],
        "com.example.catalog:id/list"
    );
    assert_eq!(swipe["to"], "list-2", "{swipe}");
    let diff = v["diff"].as_str().unwrap();
    for i in 11..=20 {
        let line = diff
            .lines()
            .find(|l| l.contains(&format!("listitem \"Item {i}, ")))
            .unwrap_or_else(|| panic!("no Item {i} in {diff}"));
        assert!(line.starts_with("+ ["), "{line}");
    }
    assert!(diff.contains("- ["), "{diff}");

    // Scrolling from a row scrolls the list that holds it; the row's ref is stale.
    p.fails_with(&["act", &item, "scroll", "down"], "COMPUTER_STALE_REF");
    let text = observe(&p);
    let row = ref_of(&text, "listitem \"Item 12");
    p.clear_log();
    let v = p.ok(&["act", &row, "scroll", "up"]);
    assert!(
        v["result"]["method"]
            .as_str()
            .unwrap()
            .ends_with(" in list"),
        "{v}"
    );
    assert_eq!(p.inputs()[0]["to"], "list-1");
    assert!(v["diff"].as_str().unwrap().contains("Item 01, "), "{v}");
}

#[test]
fn back_home_and_recents_are_their_keyevents() {
    let p = Phone::new("nav", json!({ "screen": "network" }));
    let text = observe(&p);
    let any = ref_of(&text, "button \"Navigate up\"");
    p.clear_log();
    let v = p.ok(&["act", &any, "back"]);
    assert_eq!(v["result"]["method"], "input keyevent 4 (back)", "{v}");
    assert_eq!(v["result"]["channel"], "keyboard");
    assert!(
        v["diff"].as_str().unwrap().contains("Search settings"),
        "{v}"
    );

    for (op, code, front) in [
        ("home", "3", "com.google.android.apps.nexuslauncher"),
        ("recents", "187", "com.google.android.apps.nexuslauncher"),
    ] {
        let text = observe(&p);
        let any = ref_of(&text, "[e");
        p.clear_log();
        let v = p.ok(&["act", &any, op]);
        let sent = p.inputs();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(words(&sent[0]), ["input", "keyevent", code]);
        if op == "home" {
            // Another app came to the front: a new window, named, not switched to.
            assert_eq!(v["new_windows"][0]["app"], front, "{v}");
            assert_eq!(v["closed_windows"].as_array().unwrap().len(), 1, "{v}");
        }
    }
    assert_eq!(p.state()["screen"], "recents");
}

#[test]
fn the_policy_stays_on_this_machine() {
    // No config: deskpilot is off on the user's own devices, and nothing reaches
    // the phone.
    let p = Phone::with_config("policy", json!({ "screen": "list-1" }), None);
    p.fails_with(&["observe"], "COMPUTER_FEATURE_DISABLED");
    assert!(p.log().is_empty(), "{:?}", p.log());

    // On, in accept-edits mode: a long press opens the dialog; "Delete" is
    // irreversible and waits for the user's yes at a terminal.
    std::fs::write(p.root().join("cfg").join("config.toml"), CONFIG).unwrap();
    let text = observe(&p);
    let item = ref_of(&text, "listitem \"Item 03");
    p.clear_log();
    let v = p.ok(&["act", &item, "right_click"]);
    let press = &p.inputs()[0];
    let (x, y) = centre(press["long_press"]["bounds"].as_str().unwrap());
    let (x, y) = (x.to_string(), y.to_string());
    assert_eq!(words(press), ["input", "swipe", &x, &y, &x, &y, "800"]);
    assert_eq!(press["to"], "dialog");
    assert!(
        v["diff"].as_str().unwrap().contains("button \"Delete\""),
        "{v}"
    );
    let text = observe(&p);
    assert!(text.contains("dialog \"Delete Item 03?\""), "{text}");
    let delete = ref_of(&text, "button \"Delete\"");
    p.clear_log();
    let v = p.fails_with(&["act", &delete, "click"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(p.inputs().is_empty(), "{:?}", p.inputs());
    let id = v["error"]["detail"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    // `deskpilot approve` answers only a user at a terminal.
    let (_, refused) = p.run(&["approve", &id]);
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(p.inputs().is_empty());
    approve_at_a_terminal(&p, &id);
    let v = p.ok(&["act", &delete, "click"]);
    assert_eq!(p.inputs().len(), 1);
    assert_eq!(p.state()["screen"], "list-1-deleted");
    let diff = v["diff"].as_str().unwrap();
    assert!(
        diff.contains("Item 04, SKU") && !diff.contains("Item 03, SKU"),
        "{diff}"
    );
}

/// Runs `deskpilot --device adb approve ID` under a pseudo-terminal (`script`) and
/// answers yes.
fn approve_at_a_terminal(p: &Phone, id: &str) {
    use std::io::Write;
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let line = [
        quote(env!("CARGO_BIN_EXE_deskpilot")),
        "--device adb approve".into(),
        quote(id),
    ]
    .join(" ");
    // `script` runs the line itself; `p.command()` only lends its environment.
    let c = p.command();
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .envs(
            c.get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
        )
        .env_remove("DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "approve failed: {said}");
    assert!(said.contains(&format!("approved {id}")), "{said}");
}

#[test]
fn the_fake_refuses_what_it_does_not_know() {
    let dir = TempDir::new("adb-fake");
    let adb = |args: &[&str]| {
        Command::new(format!("{FAKE_ADB}/adb"))
            .args(args)
            .env("FAKE_ADB_DIR", dir.path())
            .output()
            .expect("the fake adb runs")
    };
    for args in [
        &["shell", "frobnicate", "--now"][..],
        &["shell", "input text a;b"],
        &["shell", "input", "text", "a", "b"],
        &["shell", "input text $HOME"],
        &["shell", "input keyevent 9999"],
        &["shell", "uiautomator dump --compressed"],
        &["reboot"],
        &["shell"],
    ] {
        let out = adb(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("fake adb: "), "{args:?}: {err}");
    }
    let out = adb(&["shell", "frobnicate"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("fake adb: unknown command: shell frobnicate"),
        "{out:?}"
    );
    let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 9);
    assert!(
        entries
            .iter()
            .all(|e| e["ok"] == false && e["rejected"].is_string()),
        "{log}"
    );
    // What it knows it answers.
    let out = adb(&["shell", "input text 'a%sb'"]);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn doctor_checks_adb_the_device_its_screen_and_the_keyboard() {
    let p = Phone::new("doctor", json!({}));
    let v = p.ok(&["doctor"]);
    assert_eq!(v["healthy"], true, "{v}");
    let checks = v["checks"].as_array().unwrap();
    let named = |n: &str| {
        checks
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no check {n}: {v}"))
    };
    assert!(
        named("adb")["detail"]
            .as_str()
            .unwrap()
            .contains("Android Debug Bridge")
    );
    assert!(
        named("device")["detail"]
            .as_str()
            .unwrap()
            .contains("emulator-5554 · Pixel 7 · Android 14 (API 34)"),
        "{v}"
    );
    assert_eq!(named("screen")["detail"], "on and unlocked");
    assert!(
        named("screen read")["detail"]
            .as_str()
            .unwrap()
            .contains("nodes of com.android.settings")
    );
    let kb = named("keyboard");
    assert_eq!(kb["ok"], true);
    assert_eq!(kb["warning"], true);
    let text = p.text(&["doctor"]);
    assert!(text.contains("warn keyboard"), "{text}");
    assert!(
        text.contains("ok   screen                 on and unlocked"),
        "{text}"
    );

    p.set(json!({ "state": "unauthorized" }));
    let v = p.fails_with(&["doctor"], "COMPUTER_OS_PERMISSION_MISSING");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("the device is not ready: device: "),
        "{msg}"
    );
    assert!(msg.contains("Allow USB debugging"), "{msg}");
    assert_eq!(v["error"]["detail"]["healthy"], false);
    // And every other command says the same, with its code.
    let v = p.fails_with(&["observe"], "COMPUTER_OS_PERMISSION_MISSING");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Allow USB debugging"),
        "{v}"
    );
}

/// A WebView whose page the dump does not hold is a part not read, never an empty
/// leaf: the snapshot says "… 1 more item" under it with a description naming the
/// way to read it, and a `find` for text that could be on the page says the search
/// was partial instead of a bare "no match". Before, it was a plain leaf.
#[test]
fn a_web_view_with_nothing_in_the_dump_is_marked_unread() {
    let p = Phone::new("webview", json!({ "screen": "help" }));
    let text = observe(&p);
    let at = text
        .lines()
        .position(|l| l.contains("] document"))
        .unwrap_or_else(|| panic!("no web view in:\n{text}"));
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[at].contains("not in the accessibility dump"),
        "{}",
        lines[at]
    );
    assert!(
        lines[at + 1].trim_start().starts_with("… 1 more item"),
        "{text}"
    );
    let v = p.ok(&["find", "Contact us"]);
    assert_eq!(v["matches"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["unsearched"]["unread_children"], 1, "{v}");
}

/// A screenshot is the screen's pixels, and while a window marked `FLAG_SECURE` is
/// shown Android gives every reader an all-black frame: that frame is refused
/// `secure_surface`, never handed out as an image of the screen. Before, it was an
/// `ok` screenshot of nothing.
#[test]
fn a_black_frame_from_a_secure_window_is_refused_as_a_secure_surface() {
    let config = format!("{CONFIG}capture = \"a11y-and-pixels\"\n");
    let p = Phone::with_config("secure", json!({ "screen": "settings" }), Some(&config));
    observe(&p);
    let shot = p.ok(&["screenshot"]);
    assert_eq!(shot["width"], 1080, "{shot}");
    p.set(json!({ "secure": true }));
    let v = p.fails_with(&["screenshot"], "COMPUTER_ELEMENT_NOT_ACTIONABLE");
    assert_eq!(v["error"]["detail"]["reason"], "secure_surface", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("FLAG_SECURE") && msg.contains("observe"),
        "{msg}"
    );
}

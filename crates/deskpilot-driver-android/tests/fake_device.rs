//! The Android driver against the fake adb and its recorded screens
//! (`crates/deskpilot/tests/fixtures/fake-adb`): every screen reads into the roles,
//! names and states it shows; text arrives as written through the device shell's
//! quoting and `input text`'s `%s`; keys become keycodes; a screen that never idles
//! is dumped once more, then reported; Unicode needs the ADB Keyboard; a tap that
//! would land on another element is refused; and what doctor says.

use deskpilot_core::{Handle, Node, Op, Role, State};
use deskpilot_driver_android::{AdbOptions, AndroidDriver, Level};
use deskpilot_protocol::Result;
use deskpilot_protocol::types::{ActParams, KeysParams, Settle, SnapshotParams, WindowInfo};
use deskpilot_protocol::{Driver, ErrorCode};
use serde_json::{Value, json};

const FAKE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deskpilot/tests/fixtures/fake-adb/adb"
);
const SCREENS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deskpilot/tests/fixtures/fake-adb/screens"
);
const USERNAME: &str = "login|com.example.shop:id/username";
const PASSWORD: &str = "login|com.example.shop:id/password";

/// One fake phone: its state directory and a driver talking to it.
struct Phone {
    dir: tempfile::TempDir,
    driver: AndroidDriver,
}

impl Phone {
    fn new(state: Value) -> Phone {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("state.json"), state.to_string()).unwrap();
        let driver = AndroidDriver::new(AdbOptions {
            adb: FAKE.into(),
            env: vec![("FAKE_ADB_DIR".into(), dir.path().display().to_string())],
            ..AdbOptions::default()
        });
        Phone { dir, driver }
    }

    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("log.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON log line"))
            .collect()
    }

    fn clear_log(&self) {
        let _ = std::fs::remove_file(self.dir.path().join("log.jsonl"));
    }

    fn state(&self) -> Value {
        let s = std::fs::read_to_string(self.dir.path().join("state.json")).unwrap();
        serde_json::from_str(&s).unwrap()
    }

    /// Sets keys of the device's state (the driver keeps no read across this:
    /// each test step starts after [`Phone::fresh`]).
    fn set(&self, patch: Value) {
        let mut st = self.state();
        for (k, v) in patch.as_object().unwrap() {
            st[k] = v.clone();
        }
        std::fs::write(self.dir.path().join("state.json"), st.to_string()).unwrap();
    }

    /// The device commands of every `input` call, as the device shell split them.
    fn inputs(&self) -> Vec<Vec<String>> {
        self.log()
            .iter()
            .filter_map(|e| e["words"].as_array())
            .map(|w| {
                w.iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .filter(|w| w.first().is_some_and(|c| c == "input" || c == "am"))
            .collect()
    }

    fn dumps(&self) -> usize {
        self.log()
            .iter()
            .filter(|e| e["words"][0] == "uiautomator")
            .count()
    }

    /// The window in front and its tree, read afresh (past the driver's cache).
    async fn read(&self) -> (WindowInfo, Node) {
        tokio::time::sleep(std::time::Duration::from_millis(
            deskpilot_driver_android::CACHE_MS + 20,
        ))
        .await;
        let w = self.driver.windows().await.expect("windows").remove(0);
        let snap = self
            .driver
            .snapshot(SnapshotParams::whole(w.handle.clone()))
            .await
            .expect("snapshot");
        (w, snap.root)
    }

    async fn act(
        &self,
        w: &WindowInfo,
        h: &Handle,
        op: Op,
        value: Option<&str>,
    ) -> Result<deskpilot_protocol::types::ActResult> {
        self.driver
            .act(ActParams {
                window: w.handle.clone(),
                handle: h.clone(),
                op,
                value: value.map(str::to_string),
                settle: Some(Settle::default()),
            })
            .await
    }
}

fn by<'a>(root: &'a Node, role: Role, name: &str) -> &'a Node {
    root.walk()
        .find(|n| n.role == role && n.name == name)
        .unwrap_or_else(|| panic!("no {role} {name:?} in {root:#?}"))
}

fn by_id<'a>(root: &'a Node, id: &str) -> &'a Node {
    root.walk()
        .find(|n| n.automation_id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("no element with id {id}"))
}

#[tokio::test]
async fn every_recorded_screen_reads_as_the_app_shows_it() {
    let phone = Phone::new(json!({}));
    let mut names: Vec<String> = std::fs::read_dir(SCREENS)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|f| f.strip_suffix(".xml").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    for screen in &names {
        phone.set(json!({ "screen": screen }));
        let (w, root) = phone.read().await;
        assert_eq!(w.handle.as_str(), format!("screen:{}", w.app), "{screen}");
        assert_eq!(root.handle, w.handle, "{screen}");
        for n in root.walk() {
            assert_ne!(n.role, Role::Unknown, "{screen}: an unmapped class: {n:#?}");
            assert!(n.bounds.is_some_and(|b| !b.is_empty()), "{screen}: {n:#?}");
        }
    }

    phone.set(json!({ "screen": "settings" }));
    let (w, root) = phone.read().await;
    assert_eq!(w.app, "com.android.settings");
    assert_eq!(w.role, Role::Window);
    let list = by_id(&root, "com.android.settings:id/recycler_view");
    assert_eq!(list.role, Role::List);
    assert_eq!(list.children.len(), 8);
    let first = &list.children[0];
    assert_eq!(first.role, Role::Listitem);
    assert_eq!(
        first.name,
        "Network & internet, Mobile, Wi\u{2011}Fi, hotspot"
    );
    assert_eq!(first.actions, ["click"]);
    assert!(first.has(State::Focusable));
    // The row says its texts; only what does something itself stays inside it.
    assert!(first.children.is_empty(), "{first:#?}");
    let search = by_id(&root, "com.android.settings:id/search_action_bar");
    assert_eq!(search.name, "Search settings");
    assert_eq!(by(&root, Role::Text, "Settings").actions.len(), 0);

    phone.set(json!({ "screen": "network" }));
    let (_, root) = phone.read().await;
    let row = by(&root, Role::Listitem, "Airplane mode");
    let switch = by(row, Role::Checkbox, "Airplane mode");
    assert!(!switch.has(State::Checked) && switch.actions.is_empty());
    assert_eq!(by(&root, Role::Button, "Navigate up").actions, ["click"]);

    phone.set(json!({ "screen": "login", "password_plain": true, "fields": { PASSWORD: "hunter2-secret" } }));
    let (w, root) = phone.read().await;
    assert_eq!(w.app, "com.example.shop");
    let user = by_id(&root, "com.example.shop:id/username");
    assert_eq!(user.role, Role::Textbox);
    assert_eq!(
        user.value.as_deref(),
        Some("Email"),
        "the hint shows as text"
    );
    assert!(user.has(State::Editable) && !user.has(State::Password));
    let pw = by_id(&root, "com.example.shop:id/password");
    assert!(pw.has(State::Password) && pw.has(State::Editable));
    assert_eq!(pw.value, None);
    assert!(
        !format!("{root:?}").contains("hunter2"),
        "the secret leaked"
    );
    assert_eq!(by(&root, Role::Checkbox, "Remember me").actions, ["click"]);
    assert_eq!(by(&root, Role::Button, "Sign in").role, Role::Button);
    assert_eq!(by(&root, Role::Image, "Shop logo").role, Role::Image);

    phone.set(json!({ "screen": "list-1" }));
    let (_, root) = phone.read().await;
    let list = by_id(&root, "com.example.catalog:id/list");
    assert_eq!(list.actions, ["scroll"]);
    assert_eq!(list.children.len(), 10);
    assert_eq!(
        list.children[2].name,
        "Item 03, SKU 1003 \u{b7} 22 in stock"
    );
    assert_eq!(list.children[2].actions, ["click", "long_click"]);

    phone.set(json!({ "screen": "dialog" }));
    let (w, root) = phone.read().await;
    assert_eq!(w.role, Role::Dialog);
    assert_eq!(w.title, "Delete Item 03?");
    assert_eq!(root.role, Role::Dialog);
    by(&root, Role::Button, "Cancel");
    by(&root, Role::Button, "Delete");
    by(
        &root,
        Role::Text,
        "Item 03 will be removed from the catalog. This can't be undone.",
    );
}

#[tokio::test]
async fn text_arrives_as_written_through_the_device_shell() {
    let phone = Phone::new(json!({ "screen": "login" }));
    let long = "x".repeat(450);
    for text in [
        "it's a \"test\" & more; $HOME",
        "100% sure",
        "50%sale %s %%s",
        "a  b ",
        "`id` $(x) *?[]{}~#!\\|<>",
        long.as_str(),
    ] {
        phone.set(json!({ "fields": {}, "focus": null }));
        let (w, root) = phone.read().await;
        let user = by_id(&root, "com.example.shop:id/username").handle.clone();
        phone.clear_log();
        let r = phone
            .act(&w, &user, Op::SetValue, Some(text))
            .await
            .unwrap_or_else(|e| panic!("{text:?}: {e:?}"));
        assert_eq!(phone.state()["fields"][USERNAME], text, "{text:?}");
        assert_eq!(r.status.as_str(), "executed", "{r:?}");
        let note = r.note.unwrap_or_default();
        assert!(note.contains("settled after 2 reads"), "{note}");
        assert!(note.contains("reads back"), "{note}");
        let texts: Vec<Vec<String>> = phone
            .inputs()
            .into_iter()
            .filter(|w| w[1] == "text")
            .collect();
        for t in &texts {
            assert_eq!(t.len(), 3, "one argument per input text: {t:?}");
            assert!(!t[2].contains(' '), "a space reached input text: {t:?}");
        }
        assert!(
            phone.log().iter().all(|e| e["ok"] == true),
            "{:?}",
            phone.log()
        );
    }
    // Set again: the old text is deleted first, one delete per character.
    phone.set(json!({ "fields": { USERNAME: "old" }, "focus": USERNAME }));
    let (w, root) = phone.read().await;
    let user = by_id(&root, "com.example.shop:id/username").handle.clone();
    phone.clear_log();
    phone
        .act(&w, &user, Op::SetValue, Some("new"))
        .await
        .unwrap();
    assert_eq!(phone.state()["fields"][USERNAME], "new");
    assert_eq!(
        phone.inputs(),
        [
            vec!["input", "keyevent", "123"],
            vec!["input", "keyevent", "67", "67", "67"],
            vec!["input", "text", "new"],
        ],
        "a focused field is not tapped again"
    );
    phone.act(&w, &user, Op::Type, Some(" more")).await.unwrap();
    assert_eq!(phone.state()["fields"][USERNAME], "new more");
}

#[tokio::test]
async fn keys_are_keyevents_and_chords_with_modifiers_are_refused() {
    let phone = Phone::new(json!({ "screen": "login", "focus": USERNAME }));
    let (w, _) = phone.read().await;
    let keys = |chord: Option<&str>, text: Option<&str>| KeysParams {
        window: w.handle.clone(),
        chord: chord.map(str::to_string),
        text: text.map(str::to_string),
    };
    let r = phone
        .driver
        .keys(keys(Some("BackSpace Home End Tab"), None))
        .await
        .unwrap();
    assert_eq!(r.events_sent, 4);
    assert!(r.note.unwrap().contains("settled"));
    phone
        .driver
        .keys(keys(None, Some("hi there\n")))
        .await
        .unwrap();
    assert_eq!(
        phone.inputs(),
        [
            vec!["input", "keyevent", "67"],
            vec!["input", "keyevent", "122"],
            vec!["input", "keyevent", "123"],
            vec!["input", "keyevent", "61"],
            vec!["input", "text", "hi%sthere"],
            vec!["input", "keyevent", "66"],
        ]
    );
    assert_eq!(phone.state()["fields"][USERNAME], "hi there");
    phone.clear_log();
    let e = phone
        .driver
        .keys(keys(Some("ctrl+a"), None))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InputUnavailable);
    assert!(e.message.contains("ctrl+a"), "{}", e.message);
    assert!(phone.inputs().is_empty());
}

#[tokio::test]
async fn a_screen_that_never_idles_is_dumped_once_more_then_reported() {
    let phone = Phone::new(json!({ "dump_fail": 1 }));
    let (w, root) = phone.read().await;
    assert_eq!(w.app, "com.android.settings");
    assert!(root.count() > 10);
    assert_eq!(phone.dumps(), 2);

    phone.set(json!({ "dump_fail": "always" }));
    phone.clear_log();
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let e = phone.driver.windows().await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotResponding);
    assert!(e.message.contains("never became idle"), "{}", e.message);
    assert!(
        e.message.contains("could not get idle state"),
        "{}",
        e.message
    );
    assert_eq!(phone.dumps(), 2, "one retry, no more");
    assert!(
        phone.log().iter().all(|e| e["words"][0] != "cat"),
        "a stale dump file is never read: {:?}",
        phone.log()
    );
}

#[tokio::test]
async fn unicode_goes_through_the_adb_keyboard_only() {
    let phone = Phone::new(json!({ "screen": "login" }));
    let text = "Zoë 日本";
    for (ime, says) in [
        ("none", "install the ADB Keyboard"),
        ("installed", "not the current keyboard"),
        ("enabled", "not the current keyboard"),
    ] {
        phone.set(json!({ "ime": ime }));
        let (w, root) = phone.read().await;
        let user = by_id(&root, "com.example.shop:id/username").handle.clone();
        phone.clear_log();
        let e = phone
            .act(&w, &user, Op::SetValue, Some(text))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InputUnavailable, "{ime}");
        assert!(e.message.contains("'ë', '日', '本'"), "{}", e.message);
        assert!(e.message.contains(says), "{ime}: {}", e.message);
        assert!(phone.inputs().is_empty(), "{ime}: {:?}", phone.inputs());
        assert!(phone.state()["fields"].get(USERNAME).is_none());
    }
    phone.set(json!({ "ime": "current" }));
    let (w, root) = phone.read().await;
    let user = by_id(&root, "com.example.shop:id/username").handle.clone();
    let r = phone
        .act(&w, &user, Op::SetValue, Some(text))
        .await
        .unwrap();
    assert!(r.method.contains("ADB_INPUT_B64"), "{}", r.method);
    let b64 = phone
        .inputs()
        .into_iter()
        .find(|w| w[0] == "am")
        .expect("a broadcast");
    assert_eq!(
        b64,
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
    assert_eq!(phone.state()["fields"][USERNAME], text);
}

#[tokio::test]
async fn a_tap_that_would_land_on_another_element_is_refused() {
    let phone = Phone::new(json!({ "screen": "network" }));
    let (w, root) = phone.read().await;
    let row = by(&root, Role::Listitem, "Airplane mode");
    let switch = by(row, Role::Checkbox, "Airplane mode").handle.clone();
    let row = row.handle.clone();
    phone.clear_log();
    let e = phone.act(&w, &switch, Op::Toggle, None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotActionable);
    assert!(
        e.message
            .contains("listitem \"Airplane mode\", which holds it"),
        "{}",
        e.message
    );
    assert!(phone.inputs().is_empty());
    let r = phone.act(&w, &row, Op::Toggle, None).await.unwrap();
    assert_eq!(r.method, "input tap 540 1325");
    let (_, root) = phone.read().await;
    assert!(by(&root, Role::Checkbox, "Airplane mode").has(State::Checked));
    // `focus` over adb is a tap: only a text field is focused that way.
    let e = phone.act(&w, &row, Op::Focus, None).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotActionable);
}

#[tokio::test]
async fn password_fields_are_never_typed_into() {
    let phone = Phone::new(json!({ "screen": "login" }));
    let (w, root) = phone.read().await;
    let pw = by_id(&root, "com.example.shop:id/password").handle.clone();
    phone.clear_log();
    for op in [Op::SetValue, Op::Type, Op::Clear] {
        let e = phone.act(&w, &pw, op, Some("hunter2")).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::SecureInput, "{op}");
    }
    assert!(phone.inputs().is_empty());
    // Focus on the password field: no keys at all.
    phone.set(json!({ "focus": PASSWORD }));
    let (w, _) = phone.read().await;
    let e = phone
        .driver
        .keys(KeysParams {
            window: w.handle.clone(),
            chord: None,
            text: Some("hunter2".into()),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::SecureInput);
    assert!(phone.inputs().is_empty());
}

#[tokio::test]
async fn the_window_is_the_app_in_front() {
    let phone = Phone::new(json!({}));
    let (w, root) = phone.read().await;
    let any = root.children[0].handle.clone();
    let r = phone.act(&w, &any, Op::Home, None).await.unwrap();
    assert_eq!(r.method, "input keyevent 3 (home)");
    let settle = r.settle.unwrap();
    assert_eq!(settle.reads, Some(2));
    assert!(!settle.hit_ceiling);
    let (now, _) = phone.read().await;
    assert_eq!(
        now.handle.as_str(),
        "screen:com.google.android.apps.nexuslauncher"
    );
    let e = phone
        .driver
        .snapshot(SnapshotParams::whole(w.handle.clone()))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotFound);
    assert!(
        e.message.contains("no longer on the screen"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn doctor_says_what_is_wrong_and_what_to_do() {
    let level = |checks: &[deskpilot_driver_android::Check], name: &str| {
        checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no check {name}: {checks:?}"))
            .clone()
    };
    let phone = Phone::new(json!({}));
    let checks = phone.driver.doctor().await;
    for name in ["adb", "device", "screen", "screen read"] {
        assert_eq!(level(&checks, name).level, Level::Ok, "{checks:#?}");
    }
    assert!(
        level(&checks, "device")
            .detail
            .contains("emulator-5554 · Pixel 7 · Android 14")
    );
    let kb = level(&checks, "keyboard");
    assert_eq!(kb.level, Level::Warn);
    assert!(
        kb.fix
            .unwrap()
            .contains("ime set com.android.adbkeyboard/.AdbIME")
    );

    phone.set(json!({ "ime": "current" }));
    assert_eq!(
        level(&phone.driver.doctor().await, "keyboard").level,
        Level::Ok
    );

    for (patch, name, code, says) in [
        (
            json!({ "state": "unauthorized" }),
            "device",
            ErrorCode::OsPermissionMissing,
            "Allow USB debugging",
        ),
        (
            json!({ "state": "offline" }),
            "device",
            ErrorCode::NotResponding,
            "adb reconnect",
        ),
        (
            json!({ "state": "none" }),
            "device",
            ErrorCode::NotResponding,
            "adb connect",
        ),
        (
            json!({ "state": "device", "screen_on": false }),
            "screen",
            ErrorCode::NotResponding,
            "KEYCODE_WAKEUP",
        ),
        (
            json!({ "screen_on": true, "locked": true }),
            "screen",
            ErrorCode::SecureInput,
            "unlock",
        ),
        (
            json!({ "locked": false, "dump_fail": "always" }),
            "screen read",
            ErrorCode::NotResponding,
            "animation",
        ),
    ] {
        phone.set(patch.clone());
        let checks = phone.driver.doctor().await;
        let c = level(&checks, name);
        assert_eq!(c.level, Level::Fail, "{patch}: {checks:#?}");
        assert_eq!(c.code, Some(code), "{patch}");
        let said = format!("{} {}", c.detail, c.fix.unwrap_or_default());
        assert!(said.contains(says), "{patch}: {said}");
    }

    let missing = AndroidDriver::new(AdbOptions {
        adb: "/nonexistent/adb".into(),
        ..AdbOptions::default()
    });
    let checks = missing.doctor().await;
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].level, Level::Fail);
    assert_eq!(checks[0].code, Some(ErrorCode::PlatformUnsupported));
}

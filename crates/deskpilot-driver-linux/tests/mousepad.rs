//! Real-application tests against mousepad (GTK 3) in a sandbox desktop.

#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::time::{Duration, Instant};

use common::{desk, dump, usable};
use deskpilot_core::Op;
use deskpilot_core::{Role, State};
use deskpilot_protocol::Driver;
use deskpilot_protocol::types::{ActParams, ActStatus, Channel, Settle};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_has_menubar_editable_textbox_and_title() {
    let d = desk().await;
    let (_pid, w) = d.launch(&["mousepad"], "mousepad", WAIT).await;
    let started = Instant::now();
    let snap = d.snapshot(&w).await;
    let ms = started.elapsed().as_millis();
    let mut text = String::new();
    dump(&snap.root, 0, &mut text);
    eprintln!("mousepad snapshot: {ms} ms, stats {:?}\n{text}", snap.stats);

    assert_eq!(snap.root.role, Role::Window);
    assert!(
        snap.root.name.contains("Mousepad"),
        "title {:?}",
        snap.root.name
    );
    assert_eq!(snap.window.title, snap.root.name);
    assert_eq!(snap.window.app, "mousepad");
    assert!(snap.stats.bulk, "mousepad has an AT-SPI cache");
    assert!(snap.stats.objects > 100, "{:?}", snap.stats);
    let menubar = snap.root.walk().find(|n| n.role == Role::Menubar);
    let menubar = menubar.unwrap_or_else(|| panic!("no menubar in\n{text}"));
    assert!(
        menubar
            .children
            .iter()
            .any(|m| m.role == Role::Menuitem && m.name == "File"),
        "File menu missing in\n{text}"
    );
    let textbox = snap
        .root
        .walk()
        .find(|n| n.role == Role::Textbox && n.has(State::Editable) && usable(n));
    let textbox = textbox.unwrap_or_else(|| panic!("no editable textbox in\n{text}"));
    assert!(textbox.bounds.is_some_and(|b| !b.is_empty()));
}

fn textbox_of(snap: &deskpilot_protocol::types::TreeSnapshot) -> deskpilot_core::Node {
    let n = snap
        .root
        .walk()
        .find(|n| n.role == Role::Textbox && n.has(State::Editable) && usable(n))
        .expect("mousepad shows an editable textbox");
    deskpilot_core::Node {
        children: Vec::new(),
        ..n.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_value_then_type_read_back_through_the_text_channel() {
    let d = desk().await;
    let (_pid, w) = d.launch(&["mousepad"], "mousepad", WAIT).await;
    let tb = textbox_of(&d.snapshot(&w).await);

    let r = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: tb.handle.clone(),
            op: Op::SetValue,
            value: Some("hello deskpilot".into()),
            settle: Some(Settle::default()),
        })
        .await
        .expect("set_value");
    assert_eq!(r.status, ActStatus::Executed, "{r:?}");
    assert_eq!(r.channel, Channel::Text);
    assert_eq!(r.method, "EditableText.SetTextContents");
    let settle = r.settle.expect("settle report");
    assert!(
        settle.events > 0,
        "mousepad emits text-changed events: {settle:?}"
    );
    assert!(!settle.hit_ceiling, "{settle:?}");
    assert_eq!(
        textbox_of(&d.snapshot(&w).await).value.as_deref(),
        Some("hello deskpilot")
    );

    // Clear, then type at the caret.
    let clear = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: tb.handle.clone(),
            op: Op::Clear,
            value: None,
            settle: None,
        })
        .await
        .expect("clear");
    assert_eq!(clear.status, ActStatus::Executed);
    let typed = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: tb.handle.clone(),
            op: Op::Type,
            value: Some("abc ünï".into()),
            settle: None,
        })
        .await
        .expect("type");
    assert_eq!(typed.status, ActStatus::Executed, "{typed:?}");
    assert_eq!(typed.method, "EditableText.InsertText");
    assert_eq!(
        textbox_of(&d.snapshot(&w).await).value.as_deref(),
        Some("abc ünï")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_handles_are_not_found_and_menus_open_by_action() {
    let d = desk().await;
    let (_pid, w) = d.launch(&["mousepad"], "mousepad", WAIT).await;
    let bus = w.handle.as_str().split('|').next().unwrap().to_string();
    let err = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: deskpilot_core::Handle::new(format!("{bus}|/org/a11y/atspi/accessible/987654")),
            op: Op::Click,
            value: None,
            settle: None,
        })
        .await
        .expect_err("no such element");
    assert_eq!(
        err.code,
        deskpilot_protocol::ErrorCode::ElementNotFound,
        "{err:?}"
    );

    // Open the File menu by its action; its items come on screen.
    let file = d
        .find(&w, "File", Some(Role::Menuitem))
        .await
        .into_iter()
        .find(|n| n.name == "File")
        .expect("File menu");
    let r = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: file.handle.clone(),
            op: Op::Click,
            value: None,
            settle: Some(Settle::default()),
        })
        .await
        .expect("click File");
    assert_eq!(r.status, ActStatus::Executed, "{r:?}");
    assert_eq!(r.channel, Channel::Action);
    let save_as = d
        .wait_node(
            &w,
            |n| n.role == Role::Menuitem && n.name.starts_with("Save As") && usable(n),
            Duration::from_secs(5),
        )
        .await;
    assert!(
        save_as.is_some(),
        "Save As… should be on screen once File is open"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_type_into_the_focused_window() {
    let d = desk().await;
    let (_pid, w) = d.launch(&["mousepad"], "mousepad", WAIT).await;
    let tb = textbox_of(&d.snapshot(&w).await);
    let f = d
        .driver
        .act(ActParams {
            window: w.handle.clone(),
            handle: tb.handle.clone(),
            op: Op::Focus,
            value: None,
            settle: Some(Settle::default()),
        })
        .await
        .expect("focus");
    assert_eq!(f.status, ActStatus::Executed, "{f:?}");
    let r = d
        .driver
        .keys(deskpilot_protocol::types::KeysParams {
            window: w.handle.clone(),
            chord: None,
            text: Some("typed by keys".into()),
        })
        .await
        .expect("keys");
    assert_eq!(r.channel, Channel::Keyboard);
    assert!(r.events_sent >= 26, "{r:?}");
    let got = d
        .wait_node(
            &w,
            |n| n.role == Role::Textbox && n.value.as_deref() == Some("typed by keys"),
            Duration::from_secs(5),
        )
        .await;
    assert!(got.is_some(), "the textbox should read what was typed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_walk_without_cache_reads_the_same_window() {
    use deskpilot_driver_linux::LinuxDriver;
    use deskpilot_driver_linux::atspi::ConnectOptions;
    use deskpilot_protocol::types::SnapshotParams;

    let d = desk().await;
    let (_pid, w) = d.launch(&["mousepad"], "mousepad", WAIT).await;
    let bulk = d.snapshot(&w).await;

    let mut opts = ConnectOptions::from_vars(d.sandbox.as_ref().unwrap().env());
    opts.prefer_cache = false;
    let walker = LinuxDriver::connect(opts).await.expect("second driver");
    let walked = walker
        .snapshot(SnapshotParams::whole(w.handle.clone()))
        .await
        .expect("walked snapshot");
    eprintln!("walk without cache: {:?}", walked.stats);
    assert!(!walked.stats.bulk);
    assert!(walked.stats.objects > 20, "{:?}", walked.stats);
    // Every on-screen node of the bulk read is in the walked read, with the same role,
    // name and states (focus may have moved between the two reads).
    let steady = |n: &deskpilot_core::Node| {
        let mut s = n.states;
        s.remove(State::Focused);
        (n.role, n.name.clone(), s)
    };
    for n in bulk.root.walk().filter(|n| usable(n)) {
        let twin = walked.root.walk().find(|m| m.handle == n.handle);
        let twin = twin.unwrap_or_else(|| panic!("walk misses {} {:?}", n.role, n.name));
        assert_eq!(steady(twin), steady(n));
    }

    // A depth limit stops the walk.
    let shallow = walker
        .snapshot(SnapshotParams {
            depth: Some(1),
            ..SnapshotParams::whole(w.handle.clone())
        })
        .await
        .expect("depth 1");
    assert!(shallow.root.children.iter().all(|c| c.children.is_empty()));
    assert!(!shallow.root.children.is_empty());
}

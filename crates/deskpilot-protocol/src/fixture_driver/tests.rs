//! Behaviour of the fixture desktop.

use deskpilot_core::fixture::{self as core_fixture, PASSWORD, RECENT_FILES};
use deskpilot_core::{Bounds, Handle, Node, Op, Role, State};

use super::*;
use crate::Result;

const EDITOR: &str = "h:1";
const BODY: &str = "h:20";
const PREFS: &str = "prefs/w1";
const CALC: &str = "gnome-calculator/w1";

fn h(s: &str) -> Handle {
    Handle::new(s)
}

fn act(window: &str, handle: &str, op: Op, value: Option<&str>) -> ActParams {
    ActParams {
        window: h(window),
        handle: h(handle),
        op,
        value: value.map(str::to_owned),
        settle: None,
    }
}

fn snap(window: &str, scope: Option<&str>, depth: Option<u32>, max: Option<u32>) -> SnapshotParams {
    SnapshotParams {
        window: h(window),
        scope: scope.map(h),
        depth,
        max_nodes: max,
        text_cap: None,
        from: None,
        hidden: false,
        child_cap: None,
        whole_text: false,
    }
}

fn find(text: &str, role: Option<Role>) -> FindParams {
    FindParams {
        window: None,
        app: None,
        text: text.to_owned(),
        role,
        limit: None,
    }
}

#[tokio::test]
async fn windows_apps_and_hello_agree() {
    let d = FixtureDriver::desktop();
    let hello = d.hello().await.unwrap();
    assert_eq!(hello.platform, "fixture");
    assert_eq!(hello.protocol, PROTOCOL_VERSION);
    assert!(!hello.capabilities.capture && !hello.capabilities.ocr);
    let apps = d.apps().await.unwrap();
    let windows = d.windows().await.unwrap();
    assert_eq!(apps.len(), 2);
    assert_eq!(windows.len(), 3);
    assert_eq!(windows[0].title, core_fixture::editor_window().name);
    assert_eq!(windows[1].title, "Preferences");
    assert_eq!(windows[1].role, Role::Dialog);
    assert_eq!(windows[1].app, "editor");
    assert!(windows[0].active);
    assert_eq!(windows.iter().filter(|w| w.active).count(), 1);
    let from_apps: Vec<WindowInfo> = apps.iter().flat_map(|a| a.windows.clone()).collect();
    assert_eq!(from_apps, windows);
}

#[tokio::test]
async fn snapshot_scope_depth_and_caps() {
    let d = FixtureDriver::desktop();
    let tree = core_fixture::editor_window();
    let full = d.snapshot(snap(EDITOR, None, None, None)).await.unwrap();
    assert_eq!(full.root, tree);
    assert_eq!(full.stats.objects, tree.count() as u64);
    assert_eq!(full.stats.capped, 0);
    assert_eq!(full.window.handle, h(EDITOR));

    let shallow = d.snapshot(snap(EDITOR, None, Some(1), None)).await.unwrap();
    assert_eq!(shallow.root.count(), 1 + tree.children.len());
    let list = shallow
        .root
        .walk()
        .find(|n| n.name == "Recent files")
        .unwrap();
    assert!(list.children.is_empty());
    assert_eq!(list.child_count, RECENT_FILES as u64);

    let scoped = d
        .snapshot(snap(EDITOR, Some("h:21"), None, Some(3)))
        .await
        .unwrap();
    assert_eq!(scoped.root.name, "Recent files");
    assert_eq!(scoped.root.count(), 3);
    assert_eq!(scoped.stats.capped, RECENT_FILES as u64 + 1 - 3);

    let e = d
        .snapshot(snap(EDITOR, Some("nope"), None, None))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotFound);
    // A handle of another window is not in scope.
    let e = d
        .snapshot(snap(EDITOR, Some("prefs/wrap"), None, None))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotFound);
    let e = d
        .snapshot(snap("gone", None, None, None))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotFound);
}

#[tokio::test]
async fn find_is_case_insensitive_and_filters() {
    let d = FixtureDriver::desktop();
    // Name, case-insensitively, with a role filter: the toolbar's "Save", the
    // dialog's "Save" and "Don't Save".
    let r = d.find(find("SAVE", Some(Role::Button))).await.unwrap();
    let handles: Vec<_> = r.matches.iter().map(|m| m.node.handle.as_str()).collect();
    assert_eq!(handles, ["h:17", "h:35", "h:36"]);
    assert_eq!(r.matches[0].window.app, "editor");
    // Value; a password's value is never matched.
    let r = d.find(find("QUICK brown fox", None)).await.unwrap();
    assert_eq!(r.matches.len(), 1);
    assert_eq!(r.matches[0].node.handle, h(BODY));
    assert!(
        d.find(find(PASSWORD, None))
            .await
            .unwrap()
            .matches
            .is_empty()
    );
    // Default limit 20, explicit limit.
    assert_eq!(
        d.find(find("recent-", None)).await.unwrap().matches.len(),
        20
    );
    let mut limited = find("recent-", Some(Role::Listitem));
    limited.limit = Some(5);
    assert_eq!(d.find(limited).await.unwrap().matches.len(), 5);
    // App and window filters.
    let mut in_app = find("", Some(Role::Button));
    in_app.app = Some("gnome-calculator".into());
    assert_eq!(d.find(in_app).await.unwrap().matches.len(), 3);
    let mut in_prefs = find("", Some(Role::Button));
    in_prefs.window = Some(h(PREFS));
    let r = d.find(in_prefs).await.unwrap();
    assert_eq!(r.matches.len(), 2);
    assert!(r.matches.iter().all(|m| m.window.handle == h(PREFS)));
    // Matches carry no children but keep the count.
    let list = d
        .find(find("recent files", Some(Role::List)))
        .await
        .unwrap();
    assert!(list.matches[0].node.children.is_empty());
    assert_eq!(list.matches[0].node.child_count, RECENT_FILES as u64);
    // Unknown filters are errors, not empty results.
    let mut bad = find("x", None);
    bad.app = Some("nope".into());
    assert_eq!(
        d.find(bad).await.unwrap_err().code,
        ErrorCode::ElementNotFound
    );
}

#[tokio::test]
async fn actions_mutate_the_tree_believably() {
    let d = FixtureDriver::desktop();
    let value = |d: &FixtureDriver, handle: &str| d.node(&h(handle)).unwrap().value;

    let r = d
        .act(act(EDITOR, BODY, Op::SetValue, Some("new text")))
        .await
        .unwrap();
    assert_eq!((r.status, r.channel), (ActStatus::Executed, Channel::Text));
    assert_eq!(value(&d, BODY).as_deref(), Some("new text"));
    d.act(act(EDITOR, BODY, Op::Type, Some("!"))).await.unwrap();
    assert_eq!(value(&d, BODY).as_deref(), Some("new text!"));
    d.act(act(EDITOR, BODY, Op::Clear, None)).await.unwrap();
    assert_eq!(value(&d, BODY).as_deref(), Some(""));

    d.act(act(PREFS, "prefs/wrap", Op::Toggle, None))
        .await
        .unwrap();
    assert!(d.node(&h("prefs/wrap")).unwrap().has(State::Checked));
    d.act(act(PREFS, "prefs/wrap", Op::Click, None))
        .await
        .unwrap();
    assert!(!d.node(&h("prefs/wrap")).unwrap().has(State::Checked));

    let r = d
        .act(act(PREFS, "prefs/zoom", Op::SetValue, Some("150")))
        .await
        .unwrap();
    assert_eq!(r.channel, Channel::Value);
    assert_eq!(value(&d, "prefs/zoom").as_deref(), Some("150"));

    d.act(act(PREFS, "prefs/theme/1", Op::Select, None))
        .await
        .unwrap();
    assert!(d.node(&h("prefs/theme/1")).unwrap().has(State::Selected));
    assert!(!d.node(&h("prefs/theme/0")).unwrap().has(State::Selected));

    d.act(act(EDITOR, "h:3", Op::Expand, None)).await.unwrap();
    let file = d.node(&h("h:3")).unwrap();
    assert!(file.has(State::Expanded) && !file.has(State::Collapsed));
    d.act(act(PREFS, "prefs/advanced", Op::Expand, None))
        .await
        .unwrap();
    d.act(act(PREFS, "prefs/advanced", Op::Collapse, None))
        .await
        .unwrap();
    assert!(d.node(&h("prefs/advanced")).unwrap().has(State::Collapsed));

    d.act(act(EDITOR, "h:17", Op::Focus, None)).await.unwrap();
    assert!(d.node(&h("h:17")).unwrap().has(State::Focused));
    assert!(!d.node(&h(BODY)).unwrap().has(State::Focused));

    d.act(act(EDITOR, "h:30", Op::Scroll, Some("into_view")))
        .await
        .unwrap();
    assert!(!d.node(&h("h:30")).unwrap().has(State::Offscreen));

    let r = d.act(act(EDITOR, "h:17", Op::Click, None)).await.unwrap();
    assert_eq!(r.method, "DoAction(\"click\")");
    let r = d
        .act(act(PREFS, "prefs/close", Op::RightClick, None))
        .await
        .unwrap();
    assert_eq!(r.channel, Channel::Pointer);
    assert!(r.note.is_some());

    assert_eq!(d.actions().len(), 14);
    assert_eq!(
        d.take_actions().last(),
        Some(&RecordedAction::Act(act(
            PREFS,
            "prefs/close",
            Op::RightClick,
            None
        )))
    );
    assert!(d.actions().is_empty());
}

#[tokio::test]
async fn settle_is_reported_when_asked() {
    let d = FixtureDriver::desktop();
    let mut p = act(PREFS, "prefs/wrap", Op::Toggle, None);
    p.settle = Some(Settle::default());
    let r = d.act(p).await.unwrap();
    let s = r.settle.unwrap();
    assert_eq!(s.events, 1);
    assert_eq!(s.waited_ms, Settle::default().quiet_ms);
    assert!(!s.hit_ceiling);
}

#[tokio::test]
async fn refusals_have_their_codes() {
    let d = FixtureDriver::desktop();
    let code = |r: Result<ActResult>| r.unwrap_err().code;
    use ErrorCode::*;
    let cases = [
        (act(EDITOR, "nope", Op::Click, None), ElementNotFound),
        (act("gone", "h:17", Op::Click, None), ElementNotFound),
        // The element exists, but in another window.
        (act(CALC, "h:17", Op::Click, None), ElementNotFound),
        (
            act(PREFS, "prefs/apply", Op::Click, None),
            ElementNotActionable,
        ),
        (act(EDITOR, "h:17", Op::Toggle, None), ElementNotActionable),
        (
            act(EDITOR, "h:17", Op::Type, Some("x")),
            ElementNotActionable,
        ),
        (act(EDITOR, "h:32", Op::Click, None), ElementNotActionable),
        (act(EDITOR, "h:17", Op::Expand, None), ElementNotActionable),
        (
            act(EDITOR, "h:17", Op::DoubleClick, None),
            ElementNotActionable,
        ),
        (act(EDITOR, BODY, Op::SetValue, None), InvalidArgument),
        (
            act(PREFS, "prefs/zoom", Op::SetValue, Some("big")),
            InvalidArgument,
        ),
        (
            act(EDITOR, BODY, Op::Scroll, Some("sideways")),
            InvalidArgument,
        ),
        (
            act(EDITOR, "h:17", Op::DragTo, Some("nowhere")),
            ElementNotFound,
        ),
        (act(EDITOR, BODY, Op::Back, None), PlatformUnsupported),
    ];
    for (p, want) in cases {
        let what = format!("{} {}", p.op, p.handle);
        assert_eq!(code(d.act(p).await), want, "{what}");
    }
    assert!(d.actions().is_empty(), "refused actions are not recorded");
    d.act(act(CALC, "gnome-calculator/7", Op::Click, None))
        .await
        .unwrap();
    assert_eq!(d.actions().len(), 1);
    let e = d
        .capture(CaptureParams {
            window: h(EDITOR),
            ..CaptureParams::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, PlatformUnsupported);
    let e = d
        .ocr(OcrParams {
            window: h(EDITOR),
            ..OcrParams::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, PlatformUnsupported);
}

#[tokio::test]
async fn keys_need_focus_and_type_into_the_focused_field() {
    let d = FixtureDriver::desktop();
    let keys = |w: &str, chord: Option<&str>, text: Option<&str>| KeysParams {
        window: h(w),
        chord: chord.map(str::to_owned),
        text: text.map(str::to_owned),
    };
    let r = d.keys(keys(EDITOR, None, Some("héllo"))).await.unwrap();
    assert_eq!((r.channel, r.events_sent), (Channel::Keyboard, 10));
    let body = d.node(&h(BODY)).unwrap().value.unwrap();
    assert_eq!(body, format!("{}héllo", core_fixture::body_text()));
    let r = d
        .keys(keys(EDITOR, Some("ctrl+s Return"), None))
        .await
        .unwrap();
    assert_eq!(r.events_sent, 6);
    let e = d.keys(keys(CALC, Some("7"), None)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotActionable);
    let e = d
        .keys(keys(EDITOR, Some("a"), Some("b")))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let e = d.keys(keys(EDITOR, None, None)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let e = d.keys(keys(EDITOR, Some("ctrl+"), None)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);

    d.activate(ActivateParams { window: h(CALC) })
        .await
        .unwrap();
    d.keys(keys(CALC, Some("7"), None)).await.unwrap();
    let active: Vec<_> = d
        .windows()
        .await
        .unwrap()
        .into_iter()
        .filter(|w| w.active)
        .collect();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].handle, h(CALC));
    let e = d
        .activate(ActivateParams { window: h("gone") })
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ElementNotFound);
}

#[tokio::test]
async fn pointer_is_recorded() {
    let d = FixtureDriver::desktop();
    let p = PointerParams {
        window: h(EDITOR),
        action: PointerAction::Click,
        x: 10,
        y: 20,
        to: None,
    };
    assert_eq!(
        d.pointer(p.clone()).await.unwrap().channel,
        Channel::Pointer
    );
    assert_eq!(d.actions(), vec![RecordedAction::Pointer(p)]);
    let drag = PointerParams {
        window: h(EDITOR),
        action: PointerAction::Drag,
        x: 0,
        y: 0,
        to: None,
    };
    assert_eq!(
        d.pointer(drag).await.unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[tokio::test]
async fn events_reach_matching_subscriptions() {
    let d = std::sync::Arc::new(FixtureDriver::desktop());
    let sub = |app: Option<&str>, kinds: Vec<EventKind>| SubscribeParams {
        app: app.map(str::to_owned),
        kinds,
    };
    let all = d.subscribe(sub(None, vec![])).await.unwrap().subscription;
    let calc_focus = d
        .subscribe(sub(Some("gnome-calculator"), vec![EventKind::FocusChanged]))
        .await
        .unwrap()
        .subscription;
    assert_ne!(all, calc_focus);
    d.act(act(PREFS, "prefs/wrap", Op::Toggle, None))
        .await
        .unwrap();
    let b = d.next_events(all, 0).await.unwrap();
    assert_eq!(b.subscription, all);
    assert_eq!(b.events.len(), 1);
    assert_eq!(b.events[0].kind, EventKind::StateChanged);
    assert_eq!(b.events[0].app.as_deref(), Some("editor"));
    assert_eq!(b.events[0].detail.as_deref(), Some("checked"));
    assert!(d.next_events(all, 0).await.unwrap().events.is_empty());
    assert!(
        d.next_events(calc_focus, 0)
            .await
            .unwrap()
            .events
            .is_empty()
    );

    // A waiter is woken by a later event.
    let d2 = std::sync::Arc::clone(&d);
    let waiter = tokio::spawn(async move { d2.next_events(calc_focus, 5_000).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    d.push_event(Event {
        kind: EventKind::FocusChanged,
        handle: h("gnome-calculator/7"),
        app: Some("gnome-calculator".into()),
        detail: None,
    });
    let b = waiter.await.unwrap().unwrap();
    assert_eq!(b.events.len(), 1);
    assert_eq!(
        d.next_events(99, 0).await.unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[tokio::test]
async fn a_full_queue_drops_and_counts() {
    let d = FixtureDriver::desktop();
    let s = d
        .subscribe(SubscribeParams {
            app: None,
            kinds: vec![],
        })
        .await
        .unwrap()
        .subscription;
    for _ in 0..EVENT_QUEUE_CAP + 5 {
        d.push_event(Event {
            kind: EventKind::TextChanged,
            handle: h(BODY),
            app: Some("editor".into()),
            detail: None,
        });
    }
    let b = d.next_events(s, 0).await.unwrap();
    assert_eq!(b.events.len(), EVENT_QUEUE_CAP);
    assert_eq!(b.dropped, 5);
}

#[tokio::test]
async fn launch_and_mutate_keep_infos_in_step() {
    let d = FixtureDriver::desktop();
    let r = d
        .launch(LaunchParams {
            command: vec!["/usr/bin/gedit".into(), "notes.txt".into()],
            wait_ms: None,
        })
        .await
        .unwrap();
    let w = r.window.unwrap();
    assert_eq!(w.app, "gedit");
    assert_eq!(w.pid, Some(r.pid));
    assert!(w.active);
    let windows = d.windows().await.unwrap();
    assert_eq!(windows.len(), 4);
    assert_eq!(windows.iter().filter(|w| w.active).count(), 1);
    assert!(d.tree(&w.handle).is_some());
    let e = d
        .launch(LaunchParams {
            command: vec![],
            wait_ms: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);

    d.mutate(|apps| {
        apps[0].windows[0].name = "notes.txt* - Editor".into();
        apps[0].windows.push(
            Node::new("h:900", Role::Alert, "Disk full").bounds(Bounds::new(50, 50, 400, 300)),
        );
    });
    let apps = d.apps().await.unwrap();
    assert_eq!(apps[0].windows.len(), 3);
    assert_eq!(apps[0].windows[0].title, "notes.txt* - Editor");
    // Mutation keeps the active flags: the launched window still has focus.
    assert!(!apps[0].windows[0].active);
    assert!(apps[2].windows[0].active);
    assert_eq!(apps[2].windows[0].handle, w.handle);
    assert_eq!(apps[0].windows[2].role, Role::Alert);
    assert_eq!(d.tree(&h("h:900")).unwrap().name, "Disk full");
}

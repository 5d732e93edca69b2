//! Tests of the served driver's checks, over the fixture driver.

use super::*;

/// `driver` served under `reload`'s config, with its runtime directory in
/// `dir` and its audit log at `audit`, and a runtime to call it on.
fn guarded(
    driver: Arc<dyn Driver>,
    reload: Reload,
    dir: &std::path::Path,
    audit: PathBuf,
) -> (Guarded, tokio::runtime::Runtime) {
    let g = Guarded::new(
        driver,
        GuardOptions {
            reload,
            runtime_dir: dir.to_path_buf(),
            audit: AuditLog::new(audit),
        },
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (g, rt)
}

/// A click in an admitted window whose result carries the window read after it:
/// when the window is refused by then (the click loaded a page whose title the
/// user denies), the read is not served; while admitted, it is.
/// A config with computer use on in bypass mode: nothing is asked, only the
/// served machine's own checks refuse.
fn bypass() -> Reload {
    Arc::new(|| {
        let mut s = crate::config::Config::default().effective(true);
        s.enabled = true;
        s.serve = true;
        s.mode = deskpilot_policy::mode::Mode::Bypass;
        Ok(s)
    })
}

/// `fixture`'s apps run as this test's user, and its first window (handle
/// `fx|/w`, not focused itself) holds `children` alone.
fn alone_in_window(
    fixture: &deskpilot_protocol::fixture_driver::FixtureDriver,
    children: Vec<deskpilot_core::Node>,
) {
    fixture.mutate(|apps| {
        for a in apps.iter_mut() {
            a.info.uid = Some(deskpilot_os::current_uid());
        }
        let w = &mut apps[0].windows[0];
        w.states.remove(deskpilot_core::State::Focused);
        w.handle = Handle::new("fx|/w");
        w.children = children;
    });
}

#[test]
fn the_read_after_an_action_is_served_only_while_its_window_is_admitted() {
    use deskpilot_protocol::fixture_driver::FixtureDriver;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let fixture = Arc::new(FixtureDriver::desktop());
    // The fixture's apps run as this test's user (not another user's windows).
    fixture.mutate(|apps| {
        for a in apps.iter_mut() {
            a.info.uid = Some(deskpilot_os::current_uid());
        }
        // Fixture handles carry no bus name, so the guard lets an action name
        // only the window itself: give it a click.
        apps[0].windows[0].actions = vec!["click".into()];
    });
    // Each admission reloads the settings once: the ones numbered past
    // `deny_after` see the window's app on the user's deny-list.
    let calls = Arc::new(AtomicUsize::new(0));
    let deny_after = Arc::new(AtomicUsize::new(usize::MAX));
    let (c, d) = (calls.clone(), deny_after.clone());
    let reload: Reload = Arc::new(move || {
        let n = c.fetch_add(1, Ordering::SeqCst) + 1;
        let mut s = crate::config::Config::default().effective(true);
        s.enabled = true;
        s.serve = true;
        if n > d.load(Ordering::SeqCst) {
            s.deny_apps = vec!["editor".into()];
        }
        Ok(s)
    });
    let (g, rt) = guarded(fixture, reload, dir.path(), dir.path().join("audit.jsonl"));
    rt.block_on(async {
        let window = g.windows().await.unwrap()[0].clone();
        assert_eq!(window.app, "editor");
        let click = || ActParams {
            window: window.handle.clone(),
            handle: window.handle.clone(),
            op: Op::Click,
            value: None,
            settle: Some(Settle {
                read: true,
                ..Settle::default()
            }),
        };
        let served = g.act(click()).await.unwrap();
        assert!(served.after.is_some(), "admitted: the read is served");
        // Admitted when the action is asked for, refused when its read is
        // judged after it.
        deny_after.store(calls.load(Ordering::SeqCst) + 1, Ordering::SeqCst);
        let withheld = g.act(click()).await.unwrap();
        assert!(withheld.after.is_none(), "refused by then: not served");
        assert_eq!(withheld.status, ActStatus::Executed);
        let e = g
            .snapshot(SnapshotParams::whole(window.handle.clone()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Denylisted, "{e:?}");
    });
}

#[test]
fn an_element_must_be_of_the_named_windows_app() {
    let w = Handle::new(":1.20|/org/a11y/atspi/accessible/9");
    assert!(same_app(&w, &Handle::new(":1.20|/org/a11y/atspi/accessible/12")).is_ok());
    let e = same_app(&w, &Handle::new(":1.21|/org/a11y/atspi/accessible/12")).unwrap_err();
    assert_eq!(e.code, ErrorCode::ScopeViolation);
    assert!(same_app(&w, &Handle::new("/org/a11y/atspi/accessible/12")).is_err());
    let x = Handle::new("x11win:4194313.77");
    assert!(same_app(&x, &x).is_ok());
    assert!(same_app(&x, &w).is_err());
}

/// `deskpilot driver` on a machine in plan mode clicked Delete: the served driver
/// applies its machine's mode, so plan serves reads and refuses every effect (and
/// audits the refusal); a paste needs its machine's clipboard switch.
#[test]
fn plan_mode_on_the_served_machine_refuses_every_effect() {
    use deskpilot_protocol::fixture_driver::{FixtureDriver, RecordedAction};
    let dir = tempfile::tempdir().unwrap();
    let fixture = Arc::new(FixtureDriver::desktop());
    fixture.mutate(|apps| {
        for a in apps.iter_mut() {
            a.info.uid = Some(deskpilot_os::current_uid());
        }
        apps[0].windows[0].actions = vec!["click".into()];
    });
    let mode = Arc::new(std::sync::Mutex::new(deskpilot_policy::mode::Mode::Plan));
    let m = mode.clone();
    let reload: Reload = Arc::new(move || {
        let mut s = crate::config::Config::default().effective(true);
        s.enabled = true;
        s.serve = true;
        s.mode = *m.lock().unwrap();
        Ok(s)
    });
    let audit = dir.path().join("audit.jsonl");
    let (g, rt) = guarded(fixture.clone(), reload, dir.path(), audit.clone());
    rt.block_on(async {
        let window = g.windows().await.unwrap()[0].clone();
        let click = ActParams {
            window: window.handle.clone(),
            handle: window.handle.clone(),
            op: Op::Click,
            value: None,
            settle: None,
        };
        let e = g.act(click.clone()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::ScopeViolation, "{e:?}");
        assert!(e.message.contains("plan"), "{e:?}");
        let keys = KeysParams {
            window: window.handle.clone(),
            chord: Some("Delete".into()),
            text: None,
        };
        assert_eq!(
            g.keys(keys).await.unwrap_err().code,
            ErrorCode::ScopeViolation
        );
        let ptr = PointerParams {
            window: window.handle.clone(),
            action: PointerAction::Click,
            x: 1,
            y: 1,
            to: None,
        };
        assert_eq!(
            g.pointer(ptr).await.unwrap_err().code,
            ErrorCode::ScopeViolation
        );
        // Reads still work in plan mode.
        g.snapshot(SnapshotParams::whole(window.handle.clone()))
            .await
            .unwrap();
        assert!(
            fixture.actions().is_empty(),
            "nothing reached the desktop: {:?}",
            fixture.actions()
        );
        *mode.lock().unwrap() = deskpilot_policy::mode::Mode::Bypass;
        g.act(click).await.unwrap();
        assert!(matches!(
            fixture.actions().as_slice(),
            [RecordedAction::Act { .. }]
        ));
        let paste = KeysParams {
            window: window.handle.clone(),
            chord: Some("ctrl+v".into()),
            text: None,
        };
        assert_eq!(
            g.keys(paste).await.unwrap_err().code,
            ErrorCode::ScopeViolation
        );
    });
    let log = std::fs::read_to_string(&audit).unwrap();
    assert!(
        log.lines()
            .filter(|l| l.contains("\"refused\"") || l.contains("refusal"))
            .count()
            >= 3,
        "{log}"
    );
}

/// A click by handle on a "Show password" toggle beside a password field showed
/// the password through the served driver: it is secure input there too, as on
/// the host, and so is a pointer press at its point; a click on another control
/// runs.
#[test]
fn a_reveal_toggle_is_secure_input_on_the_served_machine() {
    use deskpilot_core::{Node, Role, State};
    use deskpilot_protocol::fixture_driver::FixtureDriver;
    let dir = tempfile::tempdir().unwrap();
    let fixture = Arc::new(FixtureDriver::desktop());
    // Handles as AT-SPI's: the application's bus name, then the object.
    let (mut pw, mut show, mut ok) = (
        Node::new("fx|/pw", Role::Textbox, "Password"),
        Node::new("fx|/show", Role::Checkbox, "Show password"),
        Node::new("fx|/ok", Role::Button, "Log in"),
    );
    pw.states.insert(State::Password);
    show.actions = vec!["click".into()];
    show.bounds = Some(deskpilot_core::Bounds {
        x: 100,
        y: 100,
        width: 20,
        height: 20,
    });
    ok.actions = vec!["click".into()];
    fixture.mutate(|apps| {
        for a in apps.iter_mut() {
            a.info.uid = Some(deskpilot_os::current_uid());
        }
        let mut row = Node::new("row", Role::Group, "");
        row.children = vec![pw.clone(), show.clone(), ok.clone()];
        apps[0].windows[0].handle = Handle::new("fx|/w");
        apps[0].windows[0].children.push(row);
    });
    let reload = bypass();
    let (g, rt) = guarded(
        fixture.clone(),
        reload,
        dir.path(),
        dir.path().join("audit.jsonl"),
    );
    rt.block_on(async {
        let window = g.windows().await.unwrap()[0].clone();
        let click = |h: &str| ActParams {
            window: window.handle.clone(),
            handle: Handle::new(h),
            op: Op::Click,
            value: None,
            settle: None,
        };
        let e = g.act(click("fx|/show")).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::SecureInput, "{e:?}");
        // A press at its point is the same press.
        let e = g
            .pointer(PointerParams {
                window: window.handle.clone(),
                action: PointerAction::Click,
                x: 110,
                y: 110,
                to: None,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::SecureInput, "{e:?}");
        assert!(fixture.actions().is_empty(), "{:?}", fixture.actions());
        g.act(click("fx|/ok")).await.unwrap();
        assert_eq!(fixture.actions().len(), 1);
    });
}

/// Text set into a Python console by handle, keys typed while it had focus,
/// and a chord into a window showing a browser's developer tools went through
/// the served driver unjudged: it judges them as the host does
/// (`COMPUTER_DENYLISTED`, nothing dispatched), lets a focus move out pass, and
/// lets everything through once this machine grants the app `code`.
#[test]
fn code_surfaces_are_judged_on_the_served_machine() {
    use deskpilot_core::{Node, Role, State};
    use deskpilot_protocol::fixture_driver::FixtureDriver;
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let fixture = Arc::new(FixtureDriver::desktop());
    let mut console = Node::new("fx|/console", Role::Textbox, "");
    console.value = Some("Python 3.11\n>>> ".into());
    console.states.insert(State::Editable);
    console.states.insert(State::Focused);
    let mut doc = Node::new("fx|/doc", Role::Document, "DevTools");
    doc.actions = vec!["click".into()];
    // The window holds the console alone, which has the focus.
    alone_in_window(&fixture, vec![console.clone()]);
    let mut app = String::new();
    fixture.mutate(|apps| app = apps[0].info.name.clone());
    let granted = Arc::new(AtomicBool::new(false));
    let g2 = granted.clone();
    let entry = format!("{app}=code");
    let reload: Reload = Arc::new(move || {
        let mut s = crate::config::Config::default().effective(true);
        s.enabled = true;
        s.serve = true;
        s.mode = deskpilot_policy::mode::Mode::Bypass;
        if g2.load(Ordering::SeqCst) {
            s.app_tiers = vec![entry.clone()];
        }
        Ok(s)
    });
    let (g, rt) = guarded(
        fixture.clone(),
        reload,
        dir.path(),
        dir.path().join("audit.jsonl"),
    );
    rt.block_on(async {
        let window = g.windows().await.unwrap()[0].clone();
        g.activate(ActivateParams {
            window: window.handle.clone(),
        })
        .await
        .unwrap();
        let sent = || fixture.actions().len() - 1;
        let keys = |chord: Option<&str>, text: Option<&str>| KeysParams {
            window: window.handle.clone(),
            chord: chord.map(str::to_owned),
            text: text.map(str::to_owned),
        };
        let set = ActParams {
            window: window.handle.clone(),
            handle: Handle::new("fx|/console"),
            op: Op::SetValue,
            value: Some("import os".into()),
            settle: None,
        };
        let e = g.act(set.clone()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Denylisted, "{e:?}");
        assert!(e.message.contains("console of Python"), "{e:?}");
        let e = g.keys(keys(None, Some("1+1"))).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Denylisted, "{e:?}");
        let e = g.keys(keys(Some("Return"), None)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Denylisted, "{e:?}");
        assert_eq!(sent(), 0, "{:?}", fixture.actions());
        // A request of several steps (a Tab, then text): each step is a request
        // of its own, judged where it lands; nothing is sent.
        for (c, t) in [(None, Some("\topen()\n")), (Some("Tab x"), None)] {
            let e = g.keys(keys(c, t)).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{e:?}");
        }
        assert_eq!(sent(), 0, "{:?}", fixture.actions());
        g.keys(keys(Some("ctrl+Tab"), None)).await.unwrap();

        // A window showing developer tools: nothing but F12.
        fixture.mutate(|apps| {
            let w = &mut apps[0].windows[0];
            w.children.retain(|n| n.role != Role::Textbox);
            w.children.push(doc.clone());
        });
        let e = g.keys(keys(Some("x"), None)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Denylisted, "{e:?}");
        assert!(e.message.contains("developer tools"), "{e:?}");
        let click = ActParams {
            window: window.handle.clone(),
            handle: Handle::new("fx|/doc"),
            op: Op::Click,
            value: None,
            settle: None,
        };
        let e = g.act(click.clone()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Denylisted, "{e:?}");
        g.keys(keys(Some("F12"), None)).await.unwrap();

        // Granted `code` on this machine: both go through.
        granted.store(true, Ordering::SeqCst);
        g.act(click).await.unwrap();
        // ctrl+Tab, F12, the click.
        assert_eq!(sent(), 3, "{:?}", fixture.actions());
    });
}

/// A path to this machine's deskpilot files finished inside the focused field —
/// the first letter of its last folder typed where it is missing (the caret moved
/// there before) with the Enter that loads it — was judged as typed after the
/// field's text: the field's text is edited with the caret anywhere and each
/// result judged (`COMPUTER_SCOPE_VIOLATION`, nothing sent).
#[test]
fn a_path_finished_in_the_field_is_judged_on_the_served_machine() {
    use deskpilot_core::{Node, Role, State};
    use deskpilot_protocol::fixture_driver::FixtureDriver;
    let dir = tempfile::tempdir().unwrap();
    let fixture = Arc::new(FixtureDriver::desktop());
    let reload = bypass();
    let protected = refusals_for(&reload().unwrap()).protected[0].clone();
    let mut name = Node::new("fx|/name", Role::Textbox, "Name");
    let cut = protected.rfind('/').expect("an absolute path") + 1;
    let first = protected[cut..].chars().next().expect("a folder name");
    assert!(first.is_ascii_lowercase(), "{protected}");
    let mut missing = protected.clone();
    missing.remove(cut);
    name.value = Some(missing);
    name.states.insert(State::Editable);
    name.states.insert(State::Focused);
    alone_in_window(&fixture, vec![name.clone()]);
    let (g, rt) = guarded(
        fixture.clone(),
        reload,
        dir.path(),
        dir.path().join("audit.jsonl"),
    );
    rt.block_on(async {
        let window = g.windows().await.unwrap()[0].clone();
        let keys = |chord: &str| KeysParams {
            window: window.handle.clone(),
            chord: Some(chord.into()),
            text: None,
        };
        let e = g.keys(keys(&format!("{first}+Return"))).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::ScopeViolation, "{e:?}");
        assert!(fixture.actions().is_empty(), "{:?}", fixture.actions());
        // Another letter leaves no protected path: the keys are not refused here.
        let other = g.keys(keys("0+Return")).await;
        assert!(
            other
                .as_ref()
                .err()
                .is_none_or(|e| e.code != ErrorCode::ScopeViolation),
            "{other:?}"
        );
    });
}

/// `deskpilot driver` started by anything on this machine (an agent's own shell)
/// served the desktop with no grant, budget or confirmation: serving is this
/// machine's user's choice (`serve`), and without it nothing is read or done.
#[test]
fn nothing_is_served_unless_the_machines_user_turned_serving_on() {
    use deskpilot_protocol::fixture_driver::FixtureDriver;
    let dir = tempfile::tempdir().unwrap();
    let fixture = Arc::new(FixtureDriver::desktop());
    alone_in_window(&fixture, Vec::new());
    let reload: Reload = Arc::new(|| {
        let mut s = crate::config::Config::default().effective(true);
        s.enabled = true;
        s.mode = deskpilot_policy::mode::Mode::Bypass;
        Ok(s)
    });
    let (g, rt) = guarded(
        fixture.clone(),
        reload,
        dir.path(),
        dir.path().join("audit.jsonl"),
    );
    rt.block_on(async {
        let e = g.apps().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::FeatureDisabled, "{e:?}");
        assert!(e.message.contains("config set serve true"), "{e:?}");
        let e = g.windows().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::FeatureDisabled, "{e:?}");
    });
    assert!(fixture.actions().is_empty());
}

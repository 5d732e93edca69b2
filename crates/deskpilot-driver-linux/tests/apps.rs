//! Real-application tests of the desktop-wide methods: hello, apps.list with a frozen
//! application, events for a new window.

#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::time::{Duration, Instant};

use common::{desk, signal};
use deskpilot_protocol::Driver;
use deskpilot_protocol::types::{AppStatus, EventKind, SubscribeParams};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_reports_linux_with_accessibility_and_input() {
    let d = desk().await;
    let h = d.driver.hello().await.expect("hello");
    assert_eq!(h.platform, "linux");
    assert_eq!(h.driver, "deskpilot-driver-linux");
    assert!(h.capabilities.tree && h.capabilities.actions && h.capabilities.events);
    assert!(
        h.capabilities.capture && h.permissions.capture,
        "pixels are read over the sandbox's X display: {h:?}"
    );
    assert!(
        h.capabilities.ocr,
        "tesseract is installed (scripts/install-deps): {h:?}"
    );
    assert!(
        h.permissions.accessibility,
        "the sandbox turns IsEnabled on: {h:?}"
    );
    assert!(
        h.permissions.input,
        "the sandbox has an X display with XTEST: {h:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_app_is_not_responding_and_never_delays_the_others() {
    let d = desk().await;
    let (_, pad) = d.launch(&["mousepad"], "mousepad", WAIT).await;
    let (_, factory) = d.launch(&["gtk3-widget-factory"], "", WAIT).await;
    let pad_pid = pad.pid.expect("mousepad pid");

    signal(pad_pid, "STOP");
    let started = Instant::now();
    let apps = d.driver.apps().await;
    let elapsed = started.elapsed();
    // Reading the frozen window fails with a code, after one bulk timeout, not a hang.
    let t = Instant::now();
    let frozen_read = d
        .driver
        .snapshot(deskpilot_protocol::types::SnapshotParams::whole(
            pad.handle.clone(),
        ));
    let frozen_read = frozen_read.await;
    let read_took = t.elapsed();
    signal(pad_pid, "CONT");
    let err = frozen_read.expect_err("a frozen app cannot be read");
    assert_eq!(
        err.code,
        deskpilot_protocol::ErrorCode::NotResponding,
        "{err:?}"
    );
    assert!(
        read_took < Duration::from_secs(6),
        "snapshot gave up after {read_took:?}"
    );
    let apps = apps.expect("apps.list answers while an app is frozen");
    eprintln!("apps.list with a frozen app: {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(3),
        "apps.list took {elapsed:?}"
    );
    let frozen = apps
        .iter()
        .find(|a| a.pid == Some(pad_pid))
        .expect("the frozen app is still listed (by the registry)");
    assert_eq!(frozen.status, AppStatus::NotResponding, "{frozen:?}");
    assert_eq!(
        frozen.name, "mousepad",
        "named from /proc when it cannot answer"
    );
    let other = apps
        .iter()
        .find(|a| a.pid == factory.pid)
        .expect("the other app");
    assert_eq!(other.status, AppStatus::Ok);
    assert!(!other.windows.is_empty());

    // Thawed, it answers again.
    let thawed = d
        .wait_window(|w| w.pid == Some(pad_pid), Duration::from_secs(10))
        .await
        .expect("mousepad answers after SIGCONT");
    let snap = d.snapshot(&thawed).await;
    assert!(snap.root.name.contains("Mousepad"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_subscription_is_an_invalid_argument() {
    let d = desk().await;
    let sub = d
        .driver
        .subscribe(SubscribeParams {
            app: Some("zenity".into()),
            kinds: vec![EventKind::WindowCreated],
        })
        .await
        .expect("subscribe")
        .subscription;
    let quiet = d.driver.next_events(sub, 200).await.expect("next_events");
    assert_eq!(quiet.subscription, sub);
    assert!(quiet.events.is_empty(), "nothing happened: {quiet:?}");
    let err = d
        .driver
        .next_events(sub + 100, 10)
        .await
        .expect_err("unknown id");
    assert_eq!(err.code, deskpilot_protocol::ErrorCode::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_of_a_running_app_is_announced_by_window_created() {
    use deskpilot_core::{Op, Role};
    use deskpilot_protocol::types::{ActParams, Settle};

    let d = desk().await;
    let (_, w) = d.launch(&["mousepad"], "mousepad", WAIT).await;
    let sub = d
        .driver
        .subscribe(SubscribeParams {
            app: Some("mousepad".into()),
            kinds: vec![EventKind::WindowCreated],
        })
        .await
        .expect("subscribe")
        .subscription;
    for item in ["Help", "About"] {
        let node = d
            .find(&w, item, Some(Role::Menuitem))
            .await
            .into_iter()
            .find(|n| n.name == item)
            .unwrap_or_else(|| panic!("menu item {item}"));
        d.driver
            .act(ActParams {
                window: w.handle.clone(),
                handle: node.handle,
                op: Op::Click,
                value: None,
                settle: Some(Settle::default()),
            })
            .await
            .unwrap_or_else(|e| panic!("click {item}: {e}"));
    }
    let batch = d
        .driver
        .next_events(sub, 10_000)
        .await
        .expect("next_events");
    let created = batch
        .events
        .iter()
        .find(|e| e.kind == EventKind::WindowCreated)
        .unwrap_or_else(|| panic!("no window-created event: {batch:?}"));
    assert_eq!(created.app.as_deref(), Some("mousepad"));
    assert_eq!(created.detail, None, "sent by the app, not synthesised");
    let about = d
        .wait_window(|x| x.handle == created.handle, Duration::from_secs(5))
        .await
        .expect("the new window is listed");
    assert!(about.title.contains("About"), "{about:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_without_a_bus_says_how_to_fix_it() {
    use deskpilot_driver_linux::LinuxDriver;
    use deskpilot_driver_linux::atspi::ConnectOptions;
    use deskpilot_protocol::ErrorCode;

    let err = LinuxDriver::connect(ConnectOptions::default())
        .await
        .expect_err("no session bus, no accessibility bus");
    assert_eq!(err.code, ErrorCode::AccessibilityDisabled);
    assert!(
        err.message.contains("deskpilot doctor --fix"),
        "{}",
        err.message
    );
    assert!(err.message.contains("sandbox"), "{}", err.message);

    let opts = ConnectOptions::from_vars([(
        "DBUS_SESSION_BUS_ADDRESS",
        "unix:path=/nonexistent/deskpilot-test-bus",
    )]);
    let err = LinuxDriver::connect(opts).await.expect_err("no such bus");
    assert_eq!(err.code, ErrorCode::AccessibilityDisabled, "{err:?}");
    assert!(
        err.message.contains("deskpilot doctor --fix"),
        "{}",
        err.message
    );
}

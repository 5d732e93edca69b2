//! `serve(FixtureDriver)` on one end of a duplex, `RpcDriver` on the other: every
//! Driver method gives over the wire exactly what it gives in-process.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskpilot_core::{Handle, Op, Role};
use deskpilot_protocol::Result;
use deskpilot_protocol::fixture_driver::{FixtureDriver, RecordedAction};
use deskpilot_protocol::rpc::{RpcDriver, RpcOptions, serve};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{Driver, ErrorCode};

fn h(s: &str) -> Handle {
    Handle::new(s)
}

/// Starts `serve(driver)` and returns a client connected to it.
fn connect(
    driver: Arc<dyn Driver>,
    opts: RpcOptions,
) -> (RpcDriver, tokio::task::JoinHandle<std::io::Result<()>>) {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server_end);
    let server = tokio::spawn(async move { serve(driver, sr, sw).await });
    let (cr, cw) = tokio::io::split(client_end);
    (RpcDriver::with_options(cr, cw, opts), server)
}

fn same<T: PartialEq + Debug>(what: &str, remote: Result<T>, local: Result<T>) {
    assert_eq!(remote, local, "{what}: wire and in-process differ");
}

#[tokio::test]
async fn every_method_matches_the_in_process_driver() {
    let served = Arc::new(FixtureDriver::desktop());
    let local = FixtureDriver::desktop();
    let (remote, server) = connect(served.clone(), RpcOptions::default());

    same("hello", remote.hello().await, local.hello().await);
    same("apps", remote.apps().await, local.apps().await);
    same("windows", remote.windows().await, local.windows().await);

    let snap = SnapshotParams::whole(h("h:1"));
    let r = remote.snapshot(snap.clone()).await;
    assert_eq!(
        r.as_ref().unwrap().root,
        deskpilot_core::fixture::editor_window()
    );
    same("snapshot", r, local.snapshot(snap).await);
    let scoped = SnapshotParams {
        scope: Some(h("h:21")),
        depth: Some(0),
        ..SnapshotParams::whole(h("h:1"))
    };
    same(
        "snapshot scoped",
        remote.snapshot(scoped.clone()).await,
        local.snapshot(scoped).await,
    );

    let find = FindParams {
        window: None,
        app: None,
        text: "save".into(),
        role: Some(Role::Button),
        limit: None,
    };
    let r = remote.find(find.clone()).await;
    assert_eq!(r.as_ref().unwrap().matches.len(), 3);
    same("find", r, local.find(find).await);

    let sub = SubscribeParams {
        app: Some("editor".into()),
        kinds: vec![],
    };
    same(
        "subscribe",
        remote.subscribe(sub.clone()).await,
        local.subscribe(sub).await,
    );

    let acts = [
        ("h:1", Op::SetValue, "h:20", Some("typed over the wire ✓")),
        ("prefs/w1", Op::Toggle, "prefs/wrap", None),
        ("prefs/w1", Op::Select, "prefs/theme/1", None),
        ("h:1", Op::Click, "h:17", None),
        ("prefs/w1", Op::Click, "prefs/apply", None),
        ("h:1", Op::Toggle, "nope", None),
    ];
    for (window, op, handle, value) in acts {
        let p = ActParams {
            window: h(window),
            handle: h(handle),
            op,
            value: value.map(str::to_owned),
            settle: Some(Settle::default()),
        };
        same(
            &format!("act {op} {handle}"),
            remote.act(p.clone()).await,
            local.act(p).await,
        );
    }
    assert_eq!(
        served.node(&h("h:20")).unwrap().value.as_deref(),
        Some("typed over the wire ✓")
    );

    let r = remote.next_events(1, 100).await;
    // The editor's events, the focus change of the click on h:17 among them (the
    // fixture's pressed button takes focus, as a toolkit's does).
    assert_eq!(r.as_ref().unwrap().events.len(), 4);
    same("next_events", r, local.next_events(1, 100).await);
    let e = remote.next_events(42, 0).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);

    let keys = KeysParams {
        window: h("h:1"),
        chord: Some("ctrl+s".into()),
        text: None,
    };
    same(
        "keys",
        remote.keys(keys.clone()).await,
        local.keys(keys).await,
    );
    let ptr = PointerParams {
        window: h("h:1"),
        action: PointerAction::Drag,
        x: 5,
        y: 6,
        to: Some((50, 60)),
    };
    same(
        "pointer",
        remote.pointer(ptr.clone()).await,
        local.pointer(ptr).await,
    );

    let act = ActivateParams {
        window: h("gnome-calculator/w1"),
    };
    same(
        "activate",
        remote.activate(act.clone()).await,
        local.activate(act).await,
    );
    let missing = ActivateParams { window: h("gone") };
    same(
        "activate missing",
        remote.activate(missing.clone()).await,
        local.activate(missing).await,
    );

    let launch = LaunchParams {
        command: vec!["gedit".into()],
        wait_ms: Some(100),
    };
    same(
        "launch",
        remote.launch(launch.clone()).await,
        local.launch(launch).await,
    );

    let cap = CaptureParams {
        window: h("h:1"),
        ..CaptureParams::default()
    };
    let r = remote.capture(cap.clone()).await;
    assert_eq!(r.as_ref().unwrap_err().code, ErrorCode::PlatformUnsupported);
    same("capture", r, local.capture(cap).await);
    let ocr = OcrParams {
        window: h("h:1"),
        ..OcrParams::default()
    };
    same("ocr", remote.ocr(ocr.clone()).await, local.ocr(ocr).await);

    same(
        "windows after",
        remote.windows().await,
        local.windows().await,
    );
    assert_eq!(served.actions(), local.actions());
    assert!(matches!(
        served.actions().last(),
        Some(RecordedAction::Launch(_))
    ));

    drop(remote);
    server.await.unwrap().unwrap();
}

/// Delegates to a fixture; `snapshot` is slow, `ocr` panics.
struct Quirky(FixtureDriver);

#[async_trait]
impl Driver for Quirky {
    async fn hello(&self) -> Result<Hello> {
        self.0.hello().await
    }
    async fn apps(&self) -> Result<Vec<AppInfo>> {
        self.0.apps().await
    }
    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        self.0.launch(p).await
    }
    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        self.0.windows().await
    }
    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        self.0.activate(p).await
    }
    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        tokio::time::sleep(Duration::from_millis(800)).await;
        self.0.snapshot(p).await
    }
    async fn find(&self, p: FindParams) -> Result<FindResult> {
        self.0.find(p).await
    }
    async fn act(&self, p: ActParams) -> Result<ActResult> {
        self.0.act(p).await
    }
    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        self.0.subscribe(p).await
    }
    async fn next_events(&self, s: u64, t: u64) -> Result<EventBatch> {
        self.0.next_events(s, t).await
    }
    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        self.0.keys(p).await
    }
    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        self.0.pointer(p).await
    }
    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        self.0.capture(p).await
    }
    async fn ocr(&self, _p: OcrParams) -> Result<OcrResult> {
        panic!("ocr engine crashed")
    }
}

#[tokio::test]
async fn a_slow_request_does_not_block_others() {
    let (remote, _server) = connect(
        Arc::new(Quirky(FixtureDriver::desktop())),
        RpcOptions::default(),
    );
    let remote = Arc::new(remote);
    let r2 = Arc::clone(&remote);
    let started = Instant::now();
    let slow = tokio::spawn(async move {
        r2.snapshot(SnapshotParams::whole(h("h:1")))
            .await
            .map(|_| Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    remote.hello().await.unwrap();
    let hello_done = Instant::now();
    let snapshot_done = slow.await.unwrap().unwrap();
    assert!(
        hello_done < snapshot_done,
        "hello waited for the slow snapshot"
    );
    assert!(hello_done - started < Duration::from_millis(700));
}

#[tokio::test]
async fn a_driver_panic_is_an_internal_error_and_serving_goes_on() {
    let (remote, _server) = connect(
        Arc::new(Quirky(FixtureDriver::desktop())),
        RpcOptions::default(),
    );
    let e = remote
        .ocr(OcrParams {
            window: h("h:1"),
            ..OcrParams::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Internal);
    assert!(e.message.contains("screen.ocr"), "{}", e.message);
    assert_eq!(remote.hello().await.unwrap().platform, "fixture");
}

#[tokio::test]
async fn a_timeout_is_reported_and_the_connection_survives() {
    let (remote, _server) = connect(
        Arc::new(Quirky(FixtureDriver::desktop())),
        RpcOptions {
            timeout: Duration::from_millis(150),
            ..RpcOptions::default()
        },
    );
    let e = remote
        .snapshot(SnapshotParams::whole(h("h:1")))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Timeout);
    assert!(e.message.contains("tree.snapshot"), "{}", e.message);
    // The late answer is dropped; later calls still work.
    assert_eq!(remote.apps().await.unwrap().len(), 2);
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(remote.windows().await.unwrap().len(), 3);
}

#[tokio::test]
async fn events_next_waits_for_a_scripted_event() {
    let served = Arc::new(FixtureDriver::desktop());
    let (remote, _server) = connect(served.clone(), RpcOptions::default());
    let sub = remote
        .subscribe(SubscribeParams {
            app: None,
            kinds: vec![EventKind::NameChanged],
        })
        .await
        .unwrap()
        .subscription;
    let pusher = {
        let served = Arc::clone(&served);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            served.push_event(Event {
                kind: EventKind::NameChanged,
                handle: h("h:1"),
                app: Some("editor".into()),
                detail: Some("notes.txt* - Editor".into()),
            });
        })
    };
    let batch = remote.next_events(sub, 5_000).await.unwrap();
    pusher.await.unwrap();
    assert_eq!(batch.subscription, sub);
    assert_eq!(batch.events.len(), 1);
    assert_eq!(
        batch.events[0].detail.as_deref(),
        Some("notes.txt* - Editor")
    );
    // Nothing more: an empty batch after the timeout.
    assert!(remote.next_events(sub, 30).await.unwrap().events.is_empty());
}

#[tokio::test]
async fn a_dead_server_means_not_responding() {
    let (client_end, server_end) = tokio::io::duplex(1024);
    let (cr, cw) = tokio::io::split(client_end);
    let remote = RpcDriver::new(cr, cw);
    drop(server_end);
    let e = remote.hello().await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotResponding);
    assert!(remote.closed_reason().is_some());
}

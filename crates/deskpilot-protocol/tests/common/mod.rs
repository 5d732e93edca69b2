//! Realistic params and results for every method, shared by the protocol tests.

#![allow(dead_code)]

use deskpilot_core::{Bounds, Handle, Node, Op, Role, State};
use deskpilot_protocol::methods::Call;
use deskpilot_protocol::types::*;
use serde_json::Value;

pub fn h(s: &str) -> Handle {
    Handle::new(s)
}

pub fn window_info() -> WindowInfo {
    WindowInfo {
        device_bounds: None,
        toolkit_scale: None,
        no_tree: false,
        covered_by: Vec::new(),
        hidden: None,
        handle: h(":1.42|/org/a11y/atspi/accessible/1"),
        app: "mousepad".into(),
        pid: Some(812),
        title: "Untitled 1 - Mousepad".into(),
        role: Role::Window,
        active: true,
        bounds: Some(Bounds::new(0, 0, 800, 600)),
    }
}

pub fn tree() -> Node {
    Node::new(
        ":1.42|/org/a11y/atspi/accessible/1",
        Role::Window,
        "Untitled 1 - Mousepad",
    )
    .bounds(Bounds::new(0, 0, 800, 600))
    .children(vec![
        Node::new(":1.42|/org/a11y/atspi/accessible/5", Role::Textbox, "")
            .value("hello wörld\n\u{202e}line two")
            .state(State::Editable)
            .state(State::Focused),
        Node::new(":1.42|/org/a11y/atspi/accessible/7", Role::Button, "Close").actions(&["click"]),
    ])
}

/// One call of every request method and a matching result, as JSON.
pub fn every_call() -> Vec<(Call, Value)> {
    let win = h(":1.42|/org/a11y/atspi/accessible/1");
    let v = |x: &dyn erased::Ser| x.to_value();
    vec![
        (
            Call::Hello,
            v(&Hello {
                platform: "linux".into(),
                driver: "deskpilot-driver-linux".into(),
                version: "0.1.0".into(),
                protocol: PROTOCOL_VERSION,
                capabilities: Capabilities {
                    tree: true,
                    actions: true,
                    keyboard: true,
                    pointer: true,
                    capture: true,
                    ocr: false,
                    events: true,
                },
                permissions: Permissions {
                    accessibility: true,
                    input: false,
                    capture: true,
                    notes: vec!["Wayland session: synthetic input is unavailable".into()],
                },
            }),
        ),
        (
            Call::AppsList,
            v(&vec![AppInfo {
                handle: h(":1.42|/org/a11y/atspi/accessible/root"),
                name: "mousepad".into(),
                pid: Some(812),
                uid: Some(1000),
                exe: None,
                pty_master: None,
                toolkit: Some("GTK".into()),
                status: AppStatus::NotResponding,
                windows: vec![window_info()],
            }]),
        ),
        (
            Call::AppsLaunch(LaunchParams {
                command: vec!["mousepad".into(), "/tmp/notes file.txt".into()],
                wait_ms: Some(20_000),
            }),
            v(&LaunchResult {
                pid: 4242,
                window: Some(window_info()),
            }),
        ),
        (Call::WindowsList, v(&vec![window_info()])),
        (
            Call::WindowActivate(ActivateParams { window: win.clone() }),
            v(&Empty {}),
        ),
        (
            Call::TreeSnapshot(SnapshotParams {
                scope: Some(h(":1.42|/org/a11y/atspi/accessible/5")),
                depth: Some(3),
                max_nodes: Some(500),
                ..SnapshotParams::whole(win.clone())
            }),
            v(&TreeSnapshot {
                window: window_info(),
                root: tree(),
                stats: WalkStats {
                    objects: 3,
                    vanished: 1,
                    capped: 0,
                    elapsed_ms: 8,
                    bulk: true,
                },
            }),
        ),
        (
            Call::TreeFind(FindParams {
                window: Some(win.clone()),
                app: Some("mousepad".into()),
                text: "Close".into(),
                role: Some(Role::Button),
                limit: Some(5),
            }),
            v(&FindResult {
                matches: vec![FindMatch {
                    window: window_info(),
                    node: Node::new(":1.42|/org/a11y/atspi/accessible/7", Role::Button, "Close"),
                }],
            }),
        ),
        (
            Call::NodeAct(ActParams {
                window: win.clone(),
                handle: h(":1.42|/org/a11y/atspi/accessible/5"),
                op: Op::SetValue,
                value: Some("naïve \"quoted\" text\twith tab".into()),
                settle: Some(Settle::default()),
            }),
            v(&ActResult {
                status: ActStatus::Executed,
                channel: Channel::Text,
                method: "SetTextContents".into(),
                elapsed_ms: 12,
                settle: Some(SettleReport {
                    waited_ms: 310,
                    events: 4,
                    hit_ceiling: false,
                    reads: None,
                }),
                note: None,
                after: None,
            }),
        ),
        (
            // The window read as the action settled travels with the result.
            Call::NodeAct(ActParams {
                window: win.clone(),
                handle: h(":1.42|/org/a11y/atspi/accessible/7"),
                op: Op::Click,
                value: None,
                settle: Some(Settle {
                    read: true,
                    ..Settle::default()
                }),
            }),
            v(&ActResult {
                status: ActStatus::Executed,
                channel: Channel::Action,
                method: "DoAction(\"click\")".into(),
                elapsed_ms: 2,
                settle: Some(SettleReport {
                    waited_ms: 315,
                    events: 2,
                    hit_ceiling: false,
                    reads: Some(2),
                }),
                note: None,
                after: Some(Box::new(TreeSnapshot {
                    window: window_info(),
                    root: tree(),
                    stats: WalkStats {
                        objects: 3,
                        vanished: 0,
                        capped: 0,
                        elapsed_ms: 31,
                        bulk: true,
                    },
                })),
            }),
        ),
        (
            Call::EventsSubscribe(SubscribeParams {
                app: Some("mousepad".into()),
                kinds: vec![EventKind::FocusChanged, EventKind::TextChanged],
            }),
            v(&SubscribeResult { subscription: 3 }),
        ),
        (
            Call::EventsNext(NextEventsParams {
                subscription: 3,
                timeout_ms: 250,
            }),
            v(&event_batch()),
        ),
        (
            Call::InputKeys(KeysParams {
                window: win.clone(),
                chord: Some("ctrl+s shift+Tab Return".into()),
                text: None,
            }),
            v(&InputResult {
                channel: Channel::Keyboard,
                elapsed_ms: 30,
                events_sent: 10,
                verified_chars: None,
                note: None,
            }),
        ),
        (
            Call::InputPointer(PointerParams {
                window: win.clone(),
                action: PointerAction::Drag,
                x: 10,
                y: -20,
                to: Some((300, 400)),
            }),
            v(&InputResult {
                channel: Channel::Pointer,
                elapsed_ms: 45,
                events_sent: 4,
                verified_chars: None,
                note: None,
            }),
        ),
        (
            Call::ScreenCapture(CaptureParams {
                window: win.clone(),
                max_side: Some(1280),
                paint: vec![Bounds::new(10, 10, 200, 30)],
                marks: vec![MarkSpec {
                    label: "e5".into(),
                    bounds: Bounds::new(700, 570, 60, 24),
                }],
            }),
            v(&CaptureResult {
                bounds: Bounds::new(0, 0, 800, 600),
                toolkit_scale: 1.0,
                image_scale: 1.0,
                width: 800,
                height: 600,
                marks: vec![MarkSpec {
                    label: "e5".into(),
                    bounds: Bounds::new(700, 570, 60, 24),
                }],
                notes: vec!["1 redacted field(s) painted over".into()],
                png_base64: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAHnOcQAAAAABJRU5ErkJggg==".into(),
            }),
        ),
        (
            Call::ScreenOcr(OcrParams {
                window: win,
                paint: Vec::new(),
                region: Some(Bounds::new(600, 560, 200, 40)),
            }),
            v(&OcrResult {
                words: vec![OcrWord {
                    text: "Save".into(),
                    bounds: Bounds::new(700, 570, 40, 16),
                    confidence: 96.5,
                }],
                bounds: Bounds::new(0, 0, 800, 600),
                toolkit_scale: 1.0,
                languages: "eng".into(),
                elapsed_ms: 412,
                notes: Vec::new(),
            }),
        ),
        (
            Call::ClipboardRead,
            v(&ClipboardContent {
                text: Some("copied: é 世界\n".into()),
                truncated: true,
                targets: vec!["TARGETS".into(), "UTF8_STRING".into()],
            }),
        ),
        (
            Call::ClipboardWrite(ClipboardWriteParams {
                text: "to paste".into(),
            }),
            v(&ClipboardWritten {
                verified: true,
                bytes: 8,
                holder: "a deskpilot clipboard holder, pid 4242".into(),
            }),
        ),
        (
            Call::ClipboardTargets(ClipboardTargetsParams {
                selection: Selection::Primary,
            }),
            v(&ClipboardTargets {
                owned: true,
                targets: vec!["UTF8_STRING".into(), "x-kde-passwordManagerHint".into()],
            }),
        ),
    ]
}

pub fn event_batch() -> EventBatch {
    EventBatch {
        subscription: 3,
        events: vec![
            Event {
                kind: EventKind::FocusChanged,
                handle: h(":1.42|/org/a11y/atspi/accessible/5"),
                app: Some("mousepad".into()),
                detail: None,
            },
            Event {
                kind: EventKind::NameChanged,
                handle: h(":1.42|/org/a11y/atspi/accessible/1"),
                app: None,
                detail: Some("*Untitled 1 - Mousepad".into()),
            },
        ],
        dropped: 7,
    }
}

/// Object-safe serialization, so one list can hold results of many types.
pub mod erased {
    pub trait Ser {
        fn to_value(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_value(&self) -> serde_json::Value {
            serde_json::to_value(self).expect("test data serializes")
        }
    }
}

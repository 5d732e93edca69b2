//! [`FixtureDriver`]: a [`Driver`] that serves recorded trees from memory, for tests
//! of the engine, the host and the protocol (feature `test-support`).
//!
//! It behaves like a small, well-mannered desktop: actions change its in-memory trees
//! the way a real app would (typing changes a textbox's value, toggling flips
//! `checked`), every successful action is recorded for tests to read, and events are
//! queued for subscribers. Pixel paths (`screen.capture`, `screen.ocr`) answer
//! `COMPUTER_PLATFORM_UNSUPPORTED`. It never touches a real desktop, sleeps only in
//! `next_events` (waiting for an event, bounded by its timeout), and reports 0 ms for
//! every elapsed time so results are deterministic.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use deskpilot_core::{Bounds, Handle, Node, Role, State};
use tokio::sync::Notify;

use crate::types::*;
use crate::{ComputerError, Driver, ErrorCode};

mod act;
#[cfg(test)]
mod tests;
mod trees;

use crate::Result;
use act::{apply, event, find_mut};
pub use trees::{calculator_window, preferences_window};

/// Events queued per subscription before the oldest are dropped (and counted).
const EVENT_QUEUE_CAP: usize = 1_000;

/// Matches returned by `tree.find` when the caller sets no limit (as
/// [`FindParams::limit`] documents).
const DEFAULT_FIND_LIMIT: u32 = 20;

/// One application of the fixture: its info and one tree per top-level window.
///
/// `info.windows` is kept in step with `windows` by the driver: one [`WindowInfo`]
/// per tree root, with the root's handle, name (as title), role and bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureApp {
    pub info: AppInfo,
    pub windows: Vec<Node>,
}

/// What the fixture was asked to do, in order (successful calls only).
#[derive(Debug, Clone, PartialEq)]
pub enum RecordedAction {
    Launch(LaunchParams),
    Activate(Handle),
    Act(ActParams),
    Keys(KeysParams),
    Pointer(PointerParams),
}

#[derive(Debug, Default)]
struct Subscription {
    app: Option<String>,
    kinds: Vec<EventKind>,
    queue: VecDeque<Event>,
    dropped: u64,
}

#[derive(Debug, Default)]
struct FixtureState {
    apps: Vec<FixtureApp>,
    actions: Vec<RecordedAction>,
    subs: HashMap<u64, Subscription>,
    next_sub: u64,
    next_pid: u32,
}

/// An in-memory [`Driver`] over recorded window trees.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use deskpilot_core::{Handle, Op};
/// use deskpilot_protocol::Driver;
/// use deskpilot_protocol::fixture_driver::{FixtureDriver, RecordedAction};
/// use deskpilot_protocol::types::ActParams;
///
/// let driver = FixtureDriver::desktop();
/// let act = ActParams {
///     window: Handle::new("prefs/w1"),
///     handle: Handle::new("prefs/wrap"),
///     op: Op::Toggle,
///     value: None,
///     settle: None,
/// };
/// driver.act(act.clone()).await.unwrap();
/// assert_eq!(driver.actions(), vec![RecordedAction::Act(act)]);
/// # });
/// ```
#[derive(Debug)]
pub struct FixtureDriver {
    state: Mutex<FixtureState>,
    events: Notify,
}

impl FixtureDriver {
    /// A fixture serving `apps`: each an [`AppInfo`] and its window trees (roots are
    /// top-level windows or dialogs). `info.windows` is rebuilt from the trees: an
    /// entry whose handle matches a root keeps its `active` flag and bounds; roots
    /// without an entry get one (inactive); entries without a tree are dropped.
    pub fn new(apps: Vec<(AppInfo, Vec<Node>)>) -> Self {
        let mut apps: Vec<FixtureApp> = apps
            .into_iter()
            .map(|(info, windows)| FixtureApp { info, windows })
            .collect();
        sync_window_infos(&mut apps);
        FixtureDriver {
            state: Mutex::new(FixtureState {
                apps,
                next_sub: 1,
                next_pid: 5_000,
                ..FixtureState::default()
            }),
            events: Notify::new(),
        }
    }

    /// The standard fixture desktop:
    ///
    /// - `editor` (pid 812): the engine's shared fixture window
    ///   (`deskpilot_core::fixture::editor_window()`, handles `h:1`…, active) and a
    ///   "Preferences" dialog ([`preferences_window`], handles `prefs/…`);
    /// - `gnome-calculator` (pid 901): [`calculator_window`] (`gnome-calculator/…`).
    pub fn desktop() -> Self {
        let editor = deskpilot_core::fixture::editor_window();
        let prefs = preferences_window();
        let calc = calculator_window();
        let app = |name: &str, pid: u32, active: Option<&Node>| AppInfo {
            handle: Handle::new(format!("{name}/app")),
            name: name.to_owned(),
            pid: Some(pid),
            uid: Some(1000),
            exe: None,
            pty_master: None,
            toolkit: Some("GTK".to_owned()),
            status: AppStatus::Ok,
            // Only the active window needs an entry; the others are synthesized.
            windows: active
                .map(|root| WindowInfo {
                    device_bounds: None,
                    toolkit_scale: None,
                    no_tree: false,
                    covered_by: Vec::new(),
                    hidden: None,
                    handle: root.handle.clone(),
                    app: name.to_owned(),
                    pid: Some(pid),
                    title: root.name.clone(),
                    role: root.role,
                    active: true,
                    bounds: root.bounds,
                })
                .into_iter()
                .collect(),
        };
        FixtureDriver::new(vec![
            (app("editor", 812, Some(&editor)), vec![editor, prefs]),
            (app("gnome-calculator", 901, None), vec![calc]),
        ])
    }

    /// Lets a test change the recorded desktop (rename a window, add a dialog, change
    /// a value behind the host's back). Window infos are re-synced afterwards.
    pub fn mutate<R>(&self, f: impl FnOnce(&mut Vec<FixtureApp>) -> R) -> R {
        let mut st = self.lock();
        let r = f(&mut st.apps);
        sync_window_infos(&mut st.apps);
        r
    }

    /// Queues `event` for every subscription that wants it and wakes waiters.
    pub fn push_event(&self, event: Event) {
        let mut st = self.lock();
        deliver(&mut st.subs, event);
        drop(st);
        self.events.notify_waiters();
    }

    /// Every action recorded so far, oldest first.
    pub fn actions(&self) -> Vec<RecordedAction> {
        self.lock().actions.clone()
    }

    /// Takes and clears the recorded actions.
    pub fn take_actions(&self) -> Vec<RecordedAction> {
        std::mem::take(&mut self.lock().actions)
    }

    /// A copy of the current tree of `window`, if it exists.
    pub fn tree(&self, window: &Handle) -> Option<Node> {
        let st = self.lock();
        let (a, w) = locate_window(&st.apps, window)?;
        Some(st.apps[a].windows[w].clone())
    }

    /// A copy of the current node `handle` (searched in every window).
    pub fn node(&self, handle: &Handle) -> Option<Node> {
        let st = self.lock();
        st.apps
            .iter()
            .flat_map(|a| a.windows.iter())
            .find_map(|root| root.walk().find(|n| &n.handle == handle).cloned())
    }

    fn lock(&self) -> MutexGuard<'_, FixtureState> {
        // A test that panicked while holding the lock leaves consistent data.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `action`, queues `events`, wakes waiters.
    fn commit(&self, st: &mut FixtureState, action: RecordedAction, events: Vec<Event>) {
        st.actions.push(action);
        let woke = !events.is_empty();
        for e in events {
            deliver(&mut st.subs, e);
        }
        if woke {
            self.events.notify_waiters();
        }
    }
}

/// Rebuilds every `info.windows` from the trees (see [`FixtureDriver::new`]).
fn sync_window_infos(apps: &mut [FixtureApp]) {
    for app in apps {
        let old = std::mem::take(&mut app.info.windows);
        app.info.windows = app
            .windows
            .iter()
            .map(|root| {
                let prev = old.iter().find(|w| w.handle == root.handle);
                WindowInfo {
                    device_bounds: None,
                    toolkit_scale: None,
                    no_tree: false,
                    covered_by: Vec::new(),
                    hidden: None,
                    handle: root.handle.clone(),
                    app: app.info.name.clone(),
                    pid: app.info.pid,
                    title: root.name.clone(),
                    role: root.role,
                    active: prev.is_some_and(|w| w.active),
                    bounds: root.bounds.or(prev.and_then(|w| w.bounds)),
                }
            })
            .collect();
    }
}

fn deliver(subs: &mut HashMap<u64, Subscription>, event: Event) {
    for sub in subs.values_mut() {
        let app_ok = match (&sub.app, &event.app) {
            (None, _) => true,
            (Some(want), Some(got)) => want == got,
            (Some(_), None) => false,
        };
        if !app_ok || !(sub.kinds.is_empty() || sub.kinds.contains(&event.kind)) {
            continue;
        }
        if sub.queue.len() >= EVENT_QUEUE_CAP {
            sub.queue.pop_front();
            sub.dropped += 1;
        }
        sub.queue.push_back(event.clone());
    }
}

/// (app index, window index) of a window handle.
fn locate_window(apps: &[FixtureApp], window: &Handle) -> Option<(usize, usize)> {
    apps.iter().enumerate().find_map(|(a, app)| {
        app.windows
            .iter()
            .position(|w| &w.handle == window)
            .map(|w| (a, w))
    })
}

fn window_not_found(window: &Handle) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotFound,
        format!("no window {window}; list windows again to get current handles"),
    )
    .with_detail(serde_json::json!({ "window": window.as_str() }))
}

pub(super) fn element_not_found(handle: &Handle, window: &Handle) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotFound,
        format!("no element {handle} in window {window}; observe again to get current refs"),
    )
    .with_detail(serde_json::json!({ "handle": handle.as_str(), "window": window.as_str() }))
}

pub(super) fn not_actionable(node: &Node, why: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotActionable,
        format!("{} {:?} {why}", node.role, node.name),
    )
    .with_detail(serde_json::json!({ "handle": node.handle.as_str() }))
}

/// Keeps `depth` levels below `node` (0: the node alone); `child_count` is kept so a
/// render can say what was cut.
fn truncate_depth(node: &mut Node, depth: u32) {
    if depth == 0 {
        node.children.clear();
    } else {
        for c in &mut node.children {
            truncate_depth(c, depth - 1);
        }
    }
}

/// Keeps the first `*left` nodes in pre-order.
fn truncate_count(node: &mut Node, left: &mut u32) {
    *left = left.saturating_sub(1);
    let mut keep = 0;
    for c in &mut node.children {
        if *left == 0 {
            break;
        }
        truncate_count(c, left);
        keep += 1;
    }
    node.children.truncate(keep);
}

/// Key presses and releases for space-separated chords (`ctrl+s Return` → 6).
fn chord_events(chord: &str) -> Result<u64> {
    let mut n = 0u64;
    for c in chord.split_whitespace() {
        if c.split('+').any(str::is_empty) {
            return Err(ComputerError::invalid(format!(
                "{c:?} is not a key chord (e.g. ctrl+s)"
            )));
        }
        n += 2 * c.split('+').count() as u64;
    }
    if n == 0 {
        return Err(ComputerError::invalid("empty key chord"));
    }
    Ok(n)
}

#[async_trait]
impl Driver for FixtureDriver {
    async fn hello(&self) -> Result<Hello> {
        Ok(Hello {
            platform: "fixture".to_owned(),
            driver: "deskpilot-fixture".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities {
                tree: true,
                actions: true,
                keyboard: true,
                pointer: true,
                capture: false,
                ocr: false,
                events: true,
            },
            permissions: Permissions {
                accessibility: true,
                input: true,
                capture: false,
                notes: vec!["fixture desktop: no pixels to capture".to_owned()],
            },
        })
    }

    async fn apps(&self) -> Result<Vec<AppInfo>> {
        Ok(self.lock().apps.iter().map(|a| a.info.clone()).collect())
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        let program = p
            .command
            .first()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| ComputerError::invalid("apps.launch needs a program to run"))?;
        let name = program.rsplit('/').next().unwrap_or(program).to_owned();
        let mut st = self.lock();
        let pid = st.next_pid;
        st.next_pid += 1;
        let base = format!("{name}-{pid}");
        let root = Node::new(
            format!("{base}/w1"),
            Role::Window,
            format!("Untitled - {name}"),
        )
        .bounds(Bounds::new(100, 100, 640, 480))
        .children(vec![
            Node::new(format!("{base}/text"), Role::Textbox, "Text")
                .value("")
                .state(State::Editable)
                .state(State::Focusable)
                .state(State::Focused)
                .bounds(Bounds::new(100, 130, 640, 450)),
        ]);
        for app in &mut st.apps {
            for w in &mut app.info.windows {
                w.active = false;
            }
        }
        let window = WindowInfo {
            device_bounds: None,
            toolkit_scale: None,
            no_tree: false,
            covered_by: Vec::new(),
            hidden: None,
            handle: root.handle.clone(),
            app: name.clone(),
            pid: Some(pid),
            title: root.name.clone(),
            role: root.role,
            active: true,
            bounds: root.bounds,
        };
        st.apps.push(FixtureApp {
            info: AppInfo {
                handle: Handle::new(format!("{base}/app")),
                name: name.clone(),
                pid: Some(pid),
                uid: Some(1000),
                exe: None,
                pty_master: None,
                toolkit: Some("GTK".to_owned()),
                status: AppStatus::Ok,
                windows: vec![window.clone()],
            },
            windows: vec![root],
        });
        let created = event(
            EventKind::WindowCreated,
            &window.handle,
            &name,
            Some(&window.title),
        );
        self.commit(&mut st, RecordedAction::Launch(p), vec![created]);
        Ok(LaunchResult {
            pid,
            window: Some(window),
        })
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        Ok(self
            .lock()
            .apps
            .iter()
            .flat_map(|a| a.info.windows.iter().cloned())
            .collect())
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        let mut st = self.lock();
        let (a, _) =
            locate_window(&st.apps, &p.window).ok_or_else(|| window_not_found(&p.window))?;
        for app in &mut st.apps {
            for w in &mut app.info.windows {
                w.active = w.handle == p.window;
            }
        }
        let name = st.apps[a].info.name.clone();
        let activated = event(EventKind::WindowActivated, &p.window, &name, None);
        self.commit(&mut st, RecordedAction::Activate(p.window), vec![activated]);
        Ok(Empty {})
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        let st = self.lock();
        let (a, w) =
            locate_window(&st.apps, &p.window).ok_or_else(|| window_not_found(&p.window))?;
        let tree = &st.apps[a].windows[w];
        let mut root = match &p.scope {
            None => tree.clone(),
            Some(scope) => tree
                .walk()
                .find(|n| &n.handle == scope)
                .cloned()
                .ok_or_else(|| element_not_found(scope, &p.window))?,
        };
        let full = root.count() as u64;
        if let Some(depth) = p.depth {
            truncate_depth(&mut root, depth);
        }
        let mut left = p.max_nodes.unwrap_or(5_000).max(1);
        truncate_count(&mut root, &mut left);
        let objects = root.count() as u64;
        Ok(TreeSnapshot {
            window: st.apps[a].info.windows[w].clone(),
            root,
            stats: WalkStats {
                objects,
                vanished: 0,
                capped: full - objects,
                elapsed_ms: 0,
                bulk: true,
            },
        })
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        let st = self.lock();
        if let Some(w) = &p.window
            && locate_window(&st.apps, w).is_none()
        {
            return Err(window_not_found(w));
        }
        if let Some(app) = &p.app
            && !st.apps.iter().any(|a| &a.info.name == app)
        {
            return Err(ComputerError::new(
                ErrorCode::ElementNotFound,
                format!("no application named {app:?}; list apps to see what is running"),
            ));
        }
        let needle = p.text.to_lowercase();
        let hit = |s: &str| s.to_lowercase().contains(&needle);
        let limit = p.limit.unwrap_or(DEFAULT_FIND_LIMIT) as usize;
        let mut matches = Vec::new();
        'apps: for app in &st.apps {
            if p.app.as_ref().is_some_and(|want| want != &app.info.name) {
                continue;
            }
            for (root, info) in app.windows.iter().zip(&app.info.windows) {
                if p.window.as_ref().is_some_and(|w| w != &root.handle) {
                    continue;
                }
                for n in root.walk() {
                    if matches.len() >= limit {
                        break 'apps;
                    }
                    if p.role.is_some_and(|r| r != n.role) {
                        continue;
                    }
                    // A password field's text is never exposed, so never matched.
                    let value_hit = !n.has(State::Password) && n.value.as_deref().is_some_and(hit);
                    if hit(&n.name) || value_hit || n.description.as_deref().is_some_and(hit) {
                        let mut node = n.clone();
                        node.children.clear();
                        matches.push(FindMatch {
                            window: info.clone(),
                            node,
                        });
                    }
                }
            }
        }
        Ok(FindResult { matches })
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        let read = p.settle.is_some_and(|s| s.read).then(|| p.window.clone());
        let mut result = {
            let mut st = self.lock();
            let (a, w) =
                locate_window(&st.apps, &p.window).ok_or_else(|| window_not_found(&p.window))?;
            let app_name = st.apps[a].info.name.clone();
            let done = apply(&mut st.apps[a].windows[w], &app_name, &p)?;
            let settle = p.settle.map(|s| SettleReport {
                waited_ms: s.quiet_ms,
                events: done.events.len() as u64,
                hit_ceiling: false,
                reads: read.is_some().then_some(1),
            });
            let result = ActResult {
                status: ActStatus::Executed,
                channel: done.channel,
                method: done.method,
                elapsed_ms: 0,
                settle,
                note: done.note,
                after: None,
            };
            self.commit(&mut st, RecordedAction::Act(p), done.events);
            result
        };
        // As a settling driver does: the window read after the action, or nothing
        // when it cannot be read (closed: the caller then finds it gone).
        if let Some(window) = read {
            result.after = self
                .snapshot(SnapshotParams::whole(window))
                .await
                .ok()
                .map(Box::new);
        }
        Ok(result)
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        let mut st = self.lock();
        let id = st.next_sub;
        st.next_sub += 1;
        st.subs.insert(
            id,
            Subscription {
                app: p.app,
                kinds: p.kinds,
                ..Subscription::default()
            },
        );
        Ok(SubscribeResult { subscription: id })
    }

    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
        loop {
            let notified = self.events.notified();
            tokio::pin!(notified);
            // Register before looking, so an event pushed in between still wakes us.
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                let sub = st.subs.get_mut(&subscription).ok_or_else(|| {
                    ComputerError::invalid(format!(
                        "no subscription {subscription}; subscribe first"
                    ))
                })?;
                if !sub.queue.is_empty() || tokio::time::Instant::now() >= deadline {
                    return Ok(EventBatch {
                        subscription,
                        events: sub.queue.drain(..).collect(),
                        dropped: std::mem::take(&mut sub.dropped),
                    });
                }
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        let mut st = self.lock();
        let (a, w) =
            locate_window(&st.apps, &p.window).ok_or_else(|| window_not_found(&p.window))?;
        if !st.apps[a].info.windows[w].active {
            return Err(ComputerError::new(
                ErrorCode::ElementNotActionable,
                format!(
                    "window {} does not have keyboard focus; activate it first",
                    p.window
                ),
            ));
        }
        let app_name = st.apps[a].info.name.clone();
        let (events_sent, typed) = match (&p.chord, &p.text) {
            (Some(chord), None) => (chord_events(chord)?, None),
            (None, Some(text)) => (2 * text.chars().count() as u64, Some(text.clone())),
            _ => {
                return Err(ComputerError::invalid(
                    "input.keys needs exactly one of chord or text",
                ));
            }
        };
        let mut events = Vec::new();
        if let Some(text) = typed {
            let root = &mut st.apps[a].windows[w];
            let focused = root
                .walk()
                .find(|n| n.has(State::Focused) && n.has(State::Editable))
                .map(|n| n.handle.clone());
            if let Some(h) = focused
                && let Some(node) = find_mut(root, &h)
            {
                node.value.get_or_insert_with(String::new).push_str(&text);
                events.push(event(EventKind::TextChanged, &h, &app_name, None));
            }
        }
        self.commit(&mut st, RecordedAction::Keys(p), events);
        Ok(InputResult {
            channel: Channel::Keyboard,
            elapsed_ms: 0,
            events_sent,
            verified_chars: None,
            note: None,
        })
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        let mut st = self.lock();
        locate_window(&st.apps, &p.window).ok_or_else(|| window_not_found(&p.window))?;
        let events_sent = match p.action {
            PointerAction::Move => 1,
            PointerAction::Click | PointerAction::RightClick => 3,
            PointerAction::DoubleClick => 5,
            PointerAction::ScrollUp | PointerAction::ScrollDown => 3,
            PointerAction::Drag => {
                if p.to.is_none() {
                    return Err(ComputerError::invalid("a drag needs `to`"));
                }
                4
            }
        };
        self.commit(&mut st, RecordedAction::Pointer(p), Vec::new());
        Ok(InputResult {
            channel: Channel::Pointer,
            elapsed_ms: 0,
            events_sent,
            verified_chars: None,
            note: None,
        })
    }

    async fn capture(&self, _p: CaptureParams) -> Result<CaptureResult> {
        Err(ComputerError::platform_unsupported("screen capture"))
    }

    async fn ocr(&self, _p: OcrParams) -> Result<OcrResult> {
        Err(ComputerError::platform_unsupported("OCR"))
    }
}

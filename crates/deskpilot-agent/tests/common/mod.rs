//! Shared set-up of the agent tests: a fixture desktop per test, with its own state
//! directory, audit log, approvals file and desktop key, under one runtime directory
//! per test binary.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use deskpilot_core::{Bounds, Handle, Node, Role};
use deskpilot_host::audit::AuditLog;
use deskpilot_host::config::{Config, Effective};
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::{ObserveOptions, Session, StateStore, Target};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::Driver;
use deskpilot_protocol::fixture_driver::{FixtureApp, FixtureDriver, RecordedAction};
use deskpilot_protocol::types::{AppInfo, AppStatus, WindowInfo};

/// Fixture pids above Linux's PID_MAX_LIMIT (4,194,304): no real process is looked up.
pub const EDITOR_PID: u32 = 4_600_812;
pub const CALC_PID: u32 = 4_600_901;
pub const KEEPASS_PID: u32 = 4_600_333;

pub fn my_uid() -> u32 {
    deskpilot_os::current_uid()
}

/// One test's desktop.
pub struct Env {
    pub name: String,
    /// The test's own directory (state, audit, approvals, grant lock, stop record):
    /// removed when the test ends.
    pub dir: PathBuf,
    _dir: tempfile::TempDir,
    pub driver: Arc<FixtureDriver>,
}

impl Env {
    /// The standard fixture desktop, every app owned by our uid.
    pub fn new(name: &str) -> Env {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("deskpilot-agent-{name}-"))
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let driver = Arc::new(FixtureDriver::desktop());
        let uid = my_uid();
        driver.mutate(|apps| {
            for a in apps.iter_mut() {
                a.info.uid = Some(uid);
                a.info.pid = Some(match a.info.name.as_str() {
                    "editor" => EDITOR_PID,
                    _ => CALC_PID,
                });
            }
        });
        Env {
            name: name.into(),
            dir,
            _dir: tmp,
            driver,
        }
    }

    /// A host over this desktop with `settings`.
    pub fn host(&self, settings: Effective) -> Host {
        let store = StateStore::open_in(&self.dir.join("state"), "fixture").unwrap();
        let mut o = HostOptions::new(&format!("agent-{}", self.name), "test", "run", settings);
        o.audit = AuditLog::new(self.dir.join("audit.jsonl"));
        o.approvals_path = self.dir.join("approvals.json");
        o.desktop_dir = self.dir.join("desktop");
        o.runtime_dir = self.dir.join("runtime");
        Host::new(
            Session::new(self.driver.clone() as Arc<dyn Driver>, store),
            o,
        )
    }

    /// Every `node.act` the driver received.
    pub fn acts(&self) -> Vec<deskpilot_protocol::types::ActParams> {
        self.driver
            .actions()
            .into_iter()
            .filter_map(|a| match a {
                RecordedAction::Act(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    /// Adds a password manager window (denylisted), inactive.
    pub fn add_keepass(&self) {
        let uid = my_uid();
        self.driver.mutate(|apps| {
            let root = Node::new("keepassxc/w1", Role::Window, "Passwords.kdbx - KeePassXC")
                .bounds(Bounds::new(100, 100, 800, 600))
                .children(vec![
                    Node::new("keepassxc/copy", Role::Button, "Copy password").actions(&["click"]),
                ]);
            apps.push(FixtureApp {
                info: AppInfo {
                    handle: Handle::new("keepassxc/app"),
                    name: "keepassxc".into(),
                    pid: Some(KEEPASS_PID),
                    uid: Some(uid),
                    exe: None,
                    pty_master: None,
                    toolkit: Some("Qt".into()),
                    status: AppStatus::Ok,
                    windows: vec![WindowInfo {
                        device_bounds: None,
                        toolkit_scale: None,
                        no_tree: false,
                        covered_by: Vec::new(),
                        hidden: None,
                        handle: root.handle.clone(),
                        app: "keepassxc".into(),
                        pid: Some(KEEPASS_PID),
                        title: root.name.clone(),
                        role: Role::Window,
                        active: false,
                        bounds: root.bounds,
                    }],
                },
                windows: vec![root],
            });
        });
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Settings of an enabled desktop in `mode`, every app allow-listed, budget 200.
pub fn settings(mode: Mode) -> Effective {
    let mut s = Config::default().effective(true);
    s.enabled = true;
    s.mode = mode;
    s.allow_apps = Vec::new();
    s.allow_all_apps = true;
    s.deny_apps = Vec::new();
    s.self_apps = Vec::new();
    s.action_budget = 200;
    s.idle_expiry_ms = 600_000;
    s
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The ref on the first line of `text` containing all of `parts`.
pub fn ref_of(text: &str, parts: &[&str]) -> String {
    let line = text
        .lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{text}"));
    let start = line.find('[').unwrap() + 1;
    let end = line.find(']').unwrap();
    line[start..end].to_string()
}

/// The editor's snapshot text as the run will see it, and the `wN` of a window of
/// `app` from the host's listing.
pub async fn editor_text(h: &mut Host) -> String {
    h.observe(&Target::Current, &ObserveOptions::default())
        .await
        .unwrap()
        .text
}

pub async fn window_ref_of(h: &mut Host, app: &str) -> String {
    let apps = h.apps().await.unwrap();
    apps.iter()
        .find(|a| a.name == app)
        .and_then(|a| a.windows.first())
        .map(|w| w.ref_.clone())
        .unwrap_or_else(|| panic!("no window of {app}"))
}

/// A JSON action answer.
pub fn act(r: &str, op: &str, value: Option<&str>) -> String {
    serde_json::json!({"decision": {"kind": "action", "ref": r, "op": op, "value": value}})
        .to_string()
}

pub fn done(summary: &str) -> String {
    serde_json::json!({"decision": {"kind": "done", "summary": summary}}).to_string()
}

pub fn switch(w: &str) -> String {
    serde_json::json!({"decision": {"kind": "switch", "window": w}}).to_string()
}

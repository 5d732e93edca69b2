//! Shared helpers of the real-application tests: a fresh sandbox desktop per test
//! (its own Xvfb display, session bus and accessibility bus, so tests run in
//! parallel), a driver connected to it, and waits that poll the accessibility tree.
//!
//! Nothing here skips: a missing Xvfb, at-spi2-core or application makes the test
//! fail with the reason.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use deskpilot_core::{Node, Role, State};
use deskpilot_driver_linux::LinuxDriver;
use deskpilot_driver_linux::atspi::ConnectOptions;
use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};
use deskpilot_protocol::Driver;
use deskpilot_protocol::types::{
    AppStatus, FindParams, LaunchParams, SnapshotParams, TreeSnapshot, WindowInfo,
};

/// A sandbox and a driver connected to it. Dropping it stops the sandbox and every
/// process started in it.
pub struct Desk {
    pub driver: LinuxDriver,
    pub sandbox: Option<Sandbox>,
}

impl Drop for Desk {
    fn drop(&mut self) {
        if let Some(sb) = self.sandbox.take() {
            // Stopping blocks (SIGTERM, up to 2 s, SIGKILL); keep it off the runtime.
            let _ = std::thread::spawn(move || drop(sb)).join();
        }
    }
}

/// Starts a sandbox on the first free display and connects a driver to it.
pub async fn desk() -> Desk {
    let sandbox = tokio::task::spawn_blocking(|| Sandbox::start(SandboxOptions::default()))
        .await
        .expect("sandbox task")
        .unwrap_or_else(|e| {
            panic!("the sandbox desktop must start (Xvfb, dbus, at-spi2-core): {e}")
        });
    let opts = ConnectOptions::from_vars(sandbox.env());
    let driver = LinuxDriver::connect(opts)
        .await
        .unwrap_or_else(|e| panic!("the driver must connect to the sandbox: {e}"));
    Desk {
        driver,
        sandbox: Some(sandbox),
    }
}

impl Desk {
    /// Launches a program in the sandbox and waits for a window whose title contains
    /// `title` (case-insensitive) from the launched process tree.
    pub async fn launch(&self, argv: &[&str], title: &str, wait: Duration) -> (u32, WindowInfo) {
        let started = Instant::now();
        let r = self
            .driver
            .launch(LaunchParams {
                command: argv.iter().map(|s| s.to_string()).collect(),
                wait_ms: Some(wait.as_millis() as u64),
            })
            .await
            .unwrap_or_else(|e| panic!("{argv:?} must start (is it installed?): {e}"));
        let Some(first) = r.window else {
            let apps = self.driver.apps().await;
            let alive = std::path::Path::new(&format!("/proc/{}", r.pid)).exists();
            panic!(
                "{argv:?} (pid {}, alive: {alive}) showed no window within {wait:?}; apps: {apps:#?}",
                r.pid
            );
        };
        let want = title.to_lowercase();
        if first.title.to_lowercase().contains(&want) {
            return (r.pid, first);
        }
        let pid = first.pid;
        let w = self
            .wait_window(
                |w| w.pid == pid && w.title.to_lowercase().contains(&want),
                wait.saturating_sub(started.elapsed()),
            )
            .await
            .unwrap_or_else(|| panic!("no window titled like {title:?} from {argv:?}"));
        (r.pid, w)
    }

    /// Polls `apps.list` every 100 ms for a window matching `pred`.
    pub async fn wait_window(
        &self,
        pred: impl Fn(&WindowInfo) -> bool,
        wait: Duration,
    ) -> Option<WindowInfo> {
        let until = Instant::now() + wait;
        loop {
            if let Ok(apps) = self.driver.apps().await {
                for a in apps.iter().filter(|a| a.status == AppStatus::Ok) {
                    if let Some(w) = a.windows.iter().find(|w| pred(w)) {
                        return Some(w.clone());
                    }
                }
            }
            if Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn snapshot(&self, w: &WindowInfo) -> TreeSnapshot {
        self.driver
            .snapshot(SnapshotParams::whole(w.handle.clone()))
            .await
            .unwrap_or_else(|e| panic!("snapshot of {:?} failed: {e}", w.title))
    }

    /// `tree.find` in one window.
    pub async fn find(&self, w: &WindowInfo, text: &str, role: Option<Role>) -> Vec<Node> {
        self.driver
            .find(FindParams {
                window: Some(w.handle.clone()),
                app: None,
                text: text.to_string(),
                role,
                limit: Some(200),
            })
            .await
            .unwrap_or_else(|e| panic!("find {text:?} failed: {e}"))
            .matches
            .into_iter()
            .map(|m| m.node)
            .collect()
    }

    /// Polls snapshots of `w` every 100 ms until `pred` holds for some node.
    pub async fn wait_node(
        &self,
        w: &WindowInfo,
        pred: impl Fn(&Node) -> bool,
        wait: Duration,
    ) -> Option<Node> {
        let until = Instant::now() + wait;
        loop {
            let snap = self.snapshot(w).await;
            if let Some(n) = snap.root.walk().find(|n| pred(n)) {
                return Some(Node {
                    children: Vec::new(),
                    ..n.clone()
                });
            }
            if Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// True for a node that is on screen and operable.
pub fn usable(n: &Node) -> bool {
    !n.has(State::Offscreen) && !n.has(State::Disabled)
}

/// An indented dump of a tree, for failure messages.
pub fn dump(n: &Node, depth: usize, out: &mut String) {
    use std::fmt::Write;
    let states: Vec<&str> = n.states.iter().map(|s| s.as_str()).collect();
    let _ = writeln!(
        out,
        "{}{} {:?} value={:?} actions={:?} states={:?} kids={}/{}",
        "  ".repeat(depth),
        n.role,
        n.name,
        n.value
            .as_deref()
            .map(|v| v.chars().take(40).collect::<String>()),
        n.actions,
        states,
        n.children.len(),
        n.child_count
    );
    for c in &n.children {
        dump(c, depth + 1, out);
    }
}

/// Sends a signal to a process (`kill -STOP`, `kill -CONT`).
pub fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill -{sig} {pid} failed");
}

//! Helpers of the Windows driver's tests under Wine (docs/ARCHITECTURE.md §6b):
//! starting a program with its stdout read line by line, finding its window, and
//! finding elements in a tree. Windows-only; scripts/test-windows runs them.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use deskpilot_core::{Node, Role};
use deskpilot_driver_windows::WindowsDriver;
use deskpilot_protocol::Driver;
use deskpilot_protocol::types::WindowInfo;

/// A started program; killed when dropped.
pub struct App {
    pub child: Child,
    pub lines: mpsc::Receiver<String>,
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl App {
    /// Waits up to 10 s for the next stdout line.
    pub fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(10))
            .expect("the app printed no line within 10 s")
    }
}

/// The crate's test app, built by `cargo build --examples` next to the test binary.
pub fn testapp_path() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let p = dir.join("examples").join("testapp.exe");
    assert!(
        p.exists(),
        "{} is missing: build it with `cargo build --examples --target x86_64-pc-windows-gnu` (scripts/test-windows does)",
        p.display()
    );
    p
}

/// Starts `program` with stdout piped into [`App::lines`].
pub fn start(program: &std::path::Path, args: &[&str]) -> App {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line.trim_end().to_owned()).is_err() {
                break;
            }
        }
    });
    App { child, lines: rx }
}

/// Waits up to 15 s for a window of `pid` whose title contains `title`.
pub async fn window_of(d: &WindowsDriver, pid: u32, title: &str) -> WindowInfo {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let ws = d.windows().await.expect("windows.list");
        if let Some(w) = ws
            .into_iter()
            .find(|w| w.pid == Some(pid) && w.title.contains(title))
        {
            return w;
        }
        assert!(
            Instant::now() < until,
            "no window {title:?} of pid {pid} within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every node of a tree, depth first.
pub fn all(n: &Node) -> Vec<&Node> {
    let mut out = vec![n];
    for c in &n.children {
        out.extend(all(c));
    }
    out
}

/// The one node with `role` whose name is `name`.
pub fn by_name<'a>(root: &'a Node, role: Role, name: &str) -> &'a Node {
    let hits: Vec<&Node> = all(root)
        .into_iter()
        .filter(|n| n.role == role && n.name == name)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "expected one {role:?} {name:?}, found {}",
        hits.len()
    );
    hits[0]
}

/// The first node with `role`.
pub fn first(root: &Node, role: Role) -> &Node {
    all(root)
        .into_iter()
        .find(|n| n.role == role)
        .unwrap_or_else(|| panic!("no {role:?} in the tree"))
}

//! A private Xvfb for the tests that need a real X server but no sandbox (no bus,
//! no window manager): `xinput.rs`, `presence.rs`. Fails, never skips, without Xvfb.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use x11rb::rust_connection::RustConnection;

/// A private Xvfb on a free display number, killed on drop.
pub struct Xvfb {
    child: Child,
    pub display: String,
}

static NEXT_DISPLAY: AtomicU32 = AtomicU32::new(0);

impl Xvfb {
    pub fn start() -> Xvfb {
        // Spread parallel test binaries over :120..:919 by pid; tests in one binary
        // take successive numbers.
        let base = 120 + (std::process::id() % 80) * 10;
        for _ in 0..40 {
            let n = base + NEXT_DISPLAY.fetch_add(1, Ordering::SeqCst) % 800;
            if display_in_use(n) {
                continue;
            }
            let display = format!(":{n}");
            let mut child = Command::new("Xvfb")
                .args([
                    &display,
                    "-screen",
                    "0",
                    "1280x800x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("Xvfb must be installed (apt-get install xvfb) for these tests");
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                if child.try_wait().expect("waiting on Xvfb").is_some() {
                    break; // lost a race for this display number; try the next one
                }
                // Connected, and still ours: an Xvfb that lost the display number to
                // another server exits, while the probe may reach that other server.
                if RustConnection::connect(Some(&display)).is_ok()
                    && child.try_wait().expect("waiting on Xvfb").is_none()
                {
                    return Xvfb { child, display };
                }
                assert!(
                    Instant::now() < deadline,
                    "Xvfb {display} did not start within 15 s"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("found no free X display number for Xvfb");
    }

    pub fn conn(&self) -> RustConnection {
        RustConnection::connect(Some(&self.display))
            .expect("connect to Xvfb")
            .0
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        stop_xvfb(&mut self.child, &self.display);
    }
}

/// True when a live process holds the lock of display `:n`. A lock left by a dead
/// server does not count: Xvfb replaces stale locks itself.
fn display_in_use(n: u32) -> bool {
    match std::fs::read_to_string(format!("/tmp/.X{n}-lock")) {
        Ok(pid) => match pid.trim().parse::<u32>() {
            Ok(pid) => std::path::Path::new(&format!("/proc/{pid}")).exists(),
            Err(_) => true,
        },
        Err(_) => false,
    }
}

/// Stops Xvfb with SIGTERM so it removes its lock file and socket; SIGKILL (and
/// removing them here) only if it has not exited after 5 s.
fn stop_xvfb(child: &mut Child, display: &str) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let n = display.trim_start_matches(':');
    let _ = std::fs::remove_file(format!("/tmp/.X{n}-lock"));
    let _ = std::fs::remove_file(format!("/tmp/.X11-unix/X{n}"));
}

/// Polls `done` every 20 ms until it holds; fails naming `what` after `limit`.
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

//! The agent on screen for long-lived hosts (docs/ARCHITECTURE.md §7.19): the X11
//! overlay of `deskpilot_driver_linux::presence` behind the host's
//! [`deskpilot_host::presence::Presence`], with its Stop button wired to what
//! `deskpilot stop` does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;

use deskpilot_core::Bounds;
use deskpilot_driver_linux::presence as x11;
use deskpilot_host::control::StopSignal;
use deskpilot_host::presence::{Presence, SharedPresence, TeachAnswer};

/// The X11 overlay as the host's presence, and when the grant it shows idles out
/// (Unix ms; 0: nothing shown).
struct Overlay(x11::Presence, AtomicU64);

impl Presence for Overlay {
    fn frame(&self, bounds: Option<Bounds>) {
        self.0.frame(bounds);
    }
    fn indicator(&self, text: Option<String>) {
        self.0.indicator(text);
    }
    fn aim(&self, x: i32, y: i32) {
        self.0.aim(x, y);
    }
    fn press(&self) {
        self.0.press();
    }
    fn clear(&self) {
        self.1.store(0, Ordering::SeqCst);
        self.0.clear();
    }
    fn teach(&self, target: Bounds, text: &str) -> Receiver<TeachAnswer> {
        let from = self.0.teach(target, text);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let answer = match from.recv() {
                Ok(x11::TeachAnswer::Next) => TeachAnswer::Next,
                Ok(x11::TeachAnswer::Exit) => TeachAnswer::Exit,
                Ok(x11::TeachAnswer::Closed) | Err(_) => TeachAnswer::Closed,
            };
            let _ = tx.send(answer);
        });
        rx
    }
    fn end_teach(&self) {
        self.0.end_teach();
    }
    fn expires_at(&self, at_ms: u64) {
        self.1.store(at_ms, Ordering::SeqCst);
    }
}

/// Opens the overlay on X display `display` for a host of `kind` (`mcp`, `run`)
/// when `enabled` (the config's `presence`): its Stop button does what `deskpilot
/// stop` does and clears the overlay; a stop raised any other way (`deskpilot stop`
/// through the control socket, the hotkey) clears it too. Says on stderr what is
/// shown, or why nothing is; `None` then.
pub fn open(
    kind: &str,
    display: Option<&str>,
    enabled: bool,
    stop: &StopSignal,
) -> Option<SharedPresence> {
    if !enabled {
        return None;
    }
    let display = display
        .map(str::to_owned)
        .or_else(|| std::env::var("DISPLAY").ok())
        .filter(|d| !d.trim().is_empty());
    let Some(display) = display else {
        let why = match std::env::var("WAYLAND_DISPLAY") {
            Ok(w) if !w.is_empty() => format!(
                "this is a Wayland-only session (WAYLAND_DISPLAY={w}), and an overlay above other apps needs X11"
            ),
            _ => "no X display (DISPLAY is empty)".into(),
        };
        eprintln!(
            "deskpilot {kind}: nothing is drawn on screen: {why}; the agent's cursor, the frame and the indicator with Stop are not shown (`deskpilot stop` still works)"
        );
        return None;
    };
    let rt = tokio::runtime::Handle::current();
    let who = kind.to_owned();
    let cell: Arc<std::sync::OnceLock<SharedPresence>> = Arc::new(std::sync::OnceLock::new());
    let on_stop = {
        let cell = cell.clone();
        Box::new(move || {
            if let Some(p) = cell.get() {
                p.clear();
            }
            let who = who.clone();
            rt.spawn(async move {
                match super::policy::stop_now().await {
                    Ok((_, replies, _)) => eprintln!(
                        "deskpilot {who}: Stop pressed on the indicator: grants revoked, {} host(s) aborted",
                        replies.iter().filter(|r| r.host.is_some()).count()
                    ),
                    Err(e) => eprintln!(
                        "deskpilot {who}: Stop pressed, but the stop failed: {}",
                        e.message
                    ),
                }
            });
        })
    };
    match x11::Presence::open(&display, on_stop) {
        Ok(p) => {
            let overlay = Arc::new(Overlay(p, AtomicU64::new(0)));
            let p: SharedPresence = overlay.clone();
            let _ = cell.set(p.clone());
            watch(stop.clone(), overlay);
            eprintln!(
                "deskpilot {kind}: on {display} the agent's cursor, the bound window's frame and an indicator with Stop are drawn while it holds a grant (`presence = false` in the config turns them off; `sandbox.presence` in a sandbox)"
            );
            Some(p)
        }
        Err(e) => {
            eprintln!("deskpilot {kind}: warning: nothing is drawn on screen: {e}");
            None
        }
    }
}

/// Clears the overlay as soon as `stop` is raised or the grant it shows idles out
/// (checked every 50 ms), so it goes with the grant even before the host's next
/// call applies the stop or the expiry.
fn watch(stop: StopSignal, p: Arc<Overlay>) {
    tokio::spawn(async move {
        let mut was = false;
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let now = stop.is_stopped();
            let until = p.1.load(Ordering::SeqCst);
            if (now && !was) || (until != 0 && deskpilot_host::control::now_ms() > until) {
                p.clear();
            }
            was = now;
        }
    });
}

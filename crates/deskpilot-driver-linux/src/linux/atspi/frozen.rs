//! Applications found not responding, remembered so that one frozen app costs one
//! short probe per read instead of a full timeout (docs/ARCHITECTURE.md §6).
//!
//! A process that did not answer a probe within [`FIRST_PROBE`] is recorded by pid
//! and start time in `not-responding.json` of the runtime directory, shared by every
//! deskpilot process of this user; while recorded, its probe gets only
//! [`REMEMBERED_PROBE`], and the first answer takes it off the record. A pid whose
//! start time changed is another process and is not recorded.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Time the first probe of an application gets: 700 ms. A responsive GTK, Qt or
/// LibreOffice main loop answers a property read in well under 10 ms here; 700 ms
/// still covers a busy machine, and is under half of one call timeout.
pub const FIRST_PROBE: Duration = Duration::from_millis(700);
/// Time the probe of an application remembered as not responding gets: 50 ms. It
/// answers at once when it has recovered (and is then forgotten).
pub const REMEMBERED_PROBE: Duration = Duration::from_millis(50);

/// One remembered process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    /// Process start time (`/proc/PID/stat` field 22), to tell a reused pid apart.
    start: Option<u64>,
    /// When it was found not responding (ms since the Unix epoch).
    since_ms: u64,
}

fn path() -> PathBuf {
    deskpilot_os::runtime_dir().join("not-responding.json")
}

fn load() -> BTreeMap<u32, Entry> {
    std::fs::read(path())
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save(map: &BTreeMap<u32, Entry>) {
    let dir = deskpilot_os::runtime_dir();
    if deskpilot_os::ensure_private_dir(&dir).is_err() {
        return;
    }
    if let Ok(text) = serde_json::to_vec(map) {
        let _ = deskpilot_os::write_private_atomic(&path(), &text);
    }
}

/// True when `pid` (the same process, by start time) is recorded as not responding.
pub fn remembered(pid: u32) -> bool {
    load()
        .get(&pid)
        .is_some_and(|e| e.start == deskpilot_os::process_start(pid))
}

/// Records `pid` as not responding (a no-op when it already is).
pub fn remember(pid: u32) {
    let mut map = load();
    if map.contains_key(&pid) {
        return;
    }
    // Records of processes that are gone are dropped on the way.
    map.retain(|&p, e| deskpilot_os::pid_alive(p) && e.start == deskpilot_os::process_start(p));
    map.insert(
        pid,
        Entry {
            start: deskpilot_os::process_start(pid),
            since_ms: deskpilot_os::now_ms(),
        },
    );
    save(&map);
}

/// Takes `pid` off the record (it answered).
pub fn forget(pid: u32) {
    let mut map = load();
    if map.remove(&pid).is_some() {
        save(&map);
    }
}

/// The probe time for an application with `pid`.
pub fn probe_time(pid: Option<u32>) -> Duration {
    match pid {
        Some(p) if remembered(p) => REMEMBERED_PROBE,
        _ => FIRST_PROBE,
    }
}

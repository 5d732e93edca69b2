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
/// How long a record gives the short probe: 10 s. After that the app gets a full
/// first probe again (and is recorded anew if it still does not answer), so a busy
/// but healthy app, or a record planted by another process, costs it nothing lasting.
pub const RECORD_LIFETIME_MS: u64 = 10_000;
/// The most bytes read of the record: 64 KiB (about 1,000 entries).
const MAX_RECORD_BYTES: u64 = 64 * 1024;
/// The most entries kept.
const MAX_ENTRIES: usize = 256;

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

/// The record, read only from a private runtime directory, as a regular file that is
/// not a symlink, and at most [`MAX_RECORD_BYTES`]; anything else is no record.
fn load() -> BTreeMap<u32, Entry> {
    use std::io::Read as _;
    if !deskpilot_os::is_private_dir(&deskpilot_os::runtime_dir()).unwrap_or(false) {
        return BTreeMap::new();
    }
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    deskpilot_os::no_follow_nonblocking(&mut o);
    let Ok(f) = o.open(path()) else {
        return BTreeMap::new();
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return BTreeMap::new();
    }
    let mut bytes = Vec::new();
    if f.take(MAX_RECORD_BYTES).read_to_end(&mut bytes).is_err() {
        return BTreeMap::new();
    }
    serde_json::from_slice(&bytes).unwrap_or_default()
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

/// True when `pid` (the same process, by start time) was recorded as not responding
/// less than [`RECORD_LIFETIME_MS`] ago.
pub fn remembered(pid: u32) -> bool {
    load().get(&pid).is_some_and(|e| {
        e.start == deskpilot_os::process_start(pid)
            && deskpilot_os::now_ms().saturating_sub(e.since_ms) < RECORD_LIFETIME_MS
    })
}

/// Records `pid` as not responding (a no-op when it already is).
pub fn remember(pid: u32) {
    let mut map = load();
    if remembered(pid) {
        return;
    }
    // Records of processes that are gone, or too old, are dropped on the way.
    let now = deskpilot_os::now_ms();
    map.retain(|&p, e| {
        now.saturating_sub(e.since_ms) < RECORD_LIFETIME_MS
            && deskpilot_os::pid_alive(p)
            && e.start == deskpilot_os::process_start(p)
    });
    if map.len() >= MAX_ENTRIES {
        return;
    }
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

//! The grant lock: one active grant per desktop, across processes.
//!
//! `grant-<desktop_key>.lock` holds the [`Holder`]; it is only ever
//! read-modify-written while holding an exclusive `flock` on the sidecar
//! `grant-<desktop_key>.flock`, so two hosts never both acquire.

use std::fs::File;
use std::path::{Path, PathBuf};

use deskpilot_protocol::ComputerError;
use serde::{Deserialize, Serialize};

use super::{pid_alive, process_start, read_json, state_dir, write_atomic};
use crate::store::ensure_private_dir as ensure_dir;
use deskpilot_protocol::Result;

/// Who holds (or last held) the grant of a desktop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Process holding the grant; 0 once released.
    pub pid: u32,
    /// Session id of the holder (kept after release).
    pub session: String,
    /// The grant held, if known (kept after release).
    pub grant_id: Option<String>,
    /// When the holder acquired it, wall-clock ms since the Unix epoch.
    pub since_ms: u64,
    /// Start time of the holder process (`/proc/PID/stat` field 22, clock ticks
    /// since boot): a pid reused by another process after the holder died does not
    /// keep the lock. A record without it (or whose process started at another
    /// time) counts as released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    /// A user-issued grant keeps the desktop until this time (ms since the Unix
    /// epoch; its idle expiry) even between the short CLI calls that use it, when
    /// no process of its session is alive: an agent session cannot take over a
    /// grant the user gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_until_ms: Option<u64>,
}

/// Whether the holder recorded in a lock is still the same live process.
fn holder_alive(h: &Holder) -> bool {
    h.pid != 0 && pid_alive(h.pid) && h.start.is_some() && process_start(h.pid) == h.start
}

/// Result of [`acquire_grant_lock`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOutcome {
    /// We hold it now. `previous` is the record that was there (`None` if no file),
    /// so the caller can tell whether another session held the grant since its own
    /// last call (then its own grant must be dropped).
    Acquired { previous: Option<Holder> },
    /// Another session's live process holds it; the lock file was left untouched.
    HeldBy(Holder),
}

struct LockPaths {
    record: PathBuf,
    flock: PathBuf,
}

fn lock_paths(dir: &Path, desktop_key: &str) -> Result<LockPaths> {
    let ok = !desktop_key.is_empty()
        && desktop_key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !desktop_key.starts_with('.');
    if !ok {
        return Err(ComputerError::internal(format!(
            "grant lock: desktop key {desktop_key:?} is not a plain file-name part"
        )));
    }
    Ok(LockPaths {
        record: dir.join(format!("grant-{desktop_key}.lock")),
        flock: dir.join(format!("grant-{desktop_key}.flock")),
    })
}

/// Opens and exclusively locks the sidecar; the lock lasts as long as the `File`.
fn lock_sidecar(dir: &Path, paths: &LockPaths) -> Result<File> {
    ensure_dir(dir)?;
    deskpilot_os::lock_file(&paths.flock)
        .map_err(|e| ComputerError::internal(format!("cannot lock {}: {e}", paths.flock.display())))
}

fn write_holder(path: &Path, h: &Holder) -> Result<()> {
    let bytes = serde_json::to_vec(h)
        .map_err(|e| ComputerError::internal(format!("cannot encode grant lock: {e}")))?;
    write_atomic(path, &bytes)
}

/// Takes the grant lock of `desktop_key` for (`session`, this process's pid).
///
/// Rules: no record, the same session, or a holder whose pid is 0 (released) or not
/// alive per [`pid_alive`] → our record is written and `Acquired { previous }` is
/// returned; a different session whose pid is alive → `HeldBy(holder)` and the file
/// is untouched. A damaged record counts as no record. Blocks while another process
/// is inside its read-modify-write (a few ms). Errors (`Internal`) when the state
/// directory or files cannot be written, or `desktop_key` is not a plain name part.
pub fn acquire_grant_lock(
    desktop_key: &str,
    session: &str,
    grant_id: &str,
    now_ms: u64,
) -> Result<LockOutcome> {
    acquire_grant_lock_in(
        &state_dir(),
        desktop_key,
        session,
        grant_id,
        std::process::id(),
        now_ms,
    )
}

/// As [`acquire_grant_lock`], in the directory `dir` and for process `pid`.
pub fn acquire_grant_lock_in(
    dir: &Path,
    desktop_key: &str,
    session: &str,
    grant_id: &str,
    pid: u32,
    now_ms: u64,
) -> Result<LockOutcome> {
    let paths = lock_paths(dir, desktop_key)?;
    let _guard = lock_sidecar(dir, &paths)?;
    let previous: Option<Holder> = read_json(&paths.record);
    if let Some(h) = &previous
        && h.session != session
        && (holder_alive(h) || h.user_until_ms.is_some_and(|t| now_ms < t))
    {
        return Ok(LockOutcome::HeldBy(h.clone()));
    }
    let ours = Holder {
        pid,
        session: session.to_string(),
        grant_id: Some(grant_id.to_string()),
        since_ms: now_ms,
        start: process_start(pid),
        // The same session keeps its lease until it says otherwise.
        user_until_ms: previous
            .as_ref()
            .filter(|h| h.session == session)
            .and_then(|h| h.user_until_ms),
    };
    write_holder(&paths.record, &ours)?;
    Ok(LockOutcome::Acquired { previous })
}

/// Marks the grant lock of `desktop_key` released by `session`: pid becomes 0, while
/// session and grant id are kept so the next acquirer sees who held it last. A no-op
/// when there is no record or another session holds it. Errors (`Internal`) as
/// [`acquire_grant_lock`].
pub fn release_grant_lock(desktop_key: &str, session: &str) -> Result<()> {
    release_grant_lock_in(&state_dir(), desktop_key, session)
}

/// As [`release_grant_lock`], in the directory `dir`.
pub fn release_grant_lock_in(dir: &Path, desktop_key: &str, session: &str) -> Result<()> {
    let paths = lock_paths(dir, desktop_key)?;
    let _guard = lock_sidecar(dir, &paths)?;
    match read_json::<Holder>(&paths.record) {
        Some(mut h) if h.session == session && (h.pid != 0 || h.user_until_ms.is_some()) => {
            h.pid = 0;
            h.user_until_ms = None;
            write_holder(&paths.record, &h)
        }
        _ => Ok(()),
    }
}

/// Sets (or, with `None`, clears) the user-grant lease of the lock `session` holds
/// on `desktop_key` (see [`Holder::user_until_ms`]). A no-op when another session
/// holds it.
pub fn set_user_lease_in(
    dir: &Path,
    desktop_key: &str,
    session: &str,
    until_ms: Option<u64>,
) -> Result<()> {
    let paths = lock_paths(dir, desktop_key)?;
    let _guard = lock_sidecar(dir, &paths)?;
    match read_json::<Holder>(&paths.record) {
        Some(mut h) if h.session == session && h.user_until_ms != until_ms => {
            h.user_until_ms = until_ms;
            write_holder(&paths.record, &h)
        }
        _ => Ok(()),
    }
}

/// The current grant-lock record of `desktop_key` (pid 0 = released); `None` when
/// missing, damaged, or the key is not a plain name part. Reads without the flock:
/// the record is replaced atomically, so a reader sees the old or the new one.
pub fn read_grant_lock(desktop_key: &str) -> Option<Holder> {
    read_grant_lock_in(&state_dir(), desktop_key)
}

/// As [`read_grant_lock`], in the directory `dir`.
pub fn read_grant_lock_in(dir: &Path, desktop_key: &str) -> Option<Holder> {
    read_json(&lock_paths(dir, desktop_key).ok()?.record)
}

/// Removes every grant lock record (what `deskpilot stop` does after stopping the
/// hosts: nothing may keep a desktop locked past a stop). Returns how many.
pub fn clear_grant_locks() -> usize {
    clear_grant_locks_in(&state_dir())
}

/// As [`clear_grant_locks`], in the runtime directory `dir`.
pub fn clear_grant_locks_in(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            // A sandbox keeps its desktop's lock in its own directory.
            n += std::fs::read_dir(e.path())
                .into_iter()
                .flatten()
                .flatten()
                .filter(|f| {
                    let n = f.file_name().to_string_lossy().to_string();
                    n.starts_with("grant-") && n.ends_with(".lock")
                })
                .filter(|f| std::fs::remove_file(f.path()).is_ok())
                .count();
        } else if name.starts_with("grant-")
            && name.ends_with(".lock")
            && std::fs::remove_file(e.path()).is_ok()
        {
            n += 1;
        }
    }
    n
}

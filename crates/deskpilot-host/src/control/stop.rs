//! The stop record: `stop.json` in the runtime directory, written by `deskpilot
//! stop` and read by every host before it issues an agent grant. The same record is
//! kept in the user's kernel keyring (docs/ARCHITECTURE.md §7.8): an app the agent
//! drives can delete or roll back the file, not the keyring entry, so a stop lasts
//! until the user grants (`deskpilot grant --user` clears both).

use std::path::Path;

use deskpilot_policy::grant::STOP_COOLDOWN_MS;
use deskpilot_protocol::ComputerError;
use serde::{Deserialize, Serialize};

use super::{state_dir, write_atomic};
use crate::store::ensure_private_dir as ensure_dir;
use deskpilot_protocol::Result;

pub(super) const STOP_FILE: &str = "stop.json";

/// The last `deskpilot stop`: agent-issued grants are refused while
/// `now_ms < until_ms`. Both fields are wall-clock ms since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopRecord {
    /// When the stop was issued.
    pub at_ms: u64,
    /// End of the cooldown: `at_ms + STOP_COOLDOWN_MS` (30 s).
    pub until_ms: u64,
}

/// Writes `state_dir()/stop.json` = `{at_ms: now_ms, until_ms: now_ms +
/// STOP_COOLDOWN_MS}` atomically, mode 0600. Errors (`Internal`) when the directory or
/// file cannot be written.
pub fn write_stop(now_ms: u64) -> Result<StopRecord> {
    write_stop_in(&state_dir(), now_ms)
}

/// As [`write_stop`], in the runtime directory `dir`.
pub fn write_stop_in(dir: &Path, now_ms: u64) -> Result<StopRecord> {
    ensure_dir(dir)?;
    let rec = StopRecord {
        at_ms: now_ms,
        until_ms: now_ms.saturating_add(STOP_COOLDOWN_MS),
    };
    let bytes = serde_json::to_vec(&rec)
        .map_err(|e| ComputerError::internal(format!("cannot encode stop record: {e}")))?;
    // The keyring's copy first: a stop that is only in the file is lifted by
    // deleting it. Where there is no keyring the file is the whole record.
    if let Err(e) = deskpilot_os::keyring::set_user_entry(&keyring_name(dir), &bytes) {
        tracing::warn!(error = %e, "the stop is recorded in its file only");
    }
    write_atomic(&dir.join(STOP_FILE), &bytes)?;
    Ok(rec)
}

/// The keyring entry that mirrors `dir`'s stop record: one per runtime directory
/// (an FNV-1a hash of its path), so a sandbox's stop stays its own.
fn keyring_name(dir: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dir.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("deskpilot:stop:v1:{h:016x}")
}

/// The keyring's copy of `dir`'s stop record; `None` when there is none or no
/// keyring. A copy that does not parse is no record (only deskpilot writes it).
fn keyring_stop(dir: &Path) -> Option<StopRecord> {
    let bytes = deskpilot_os::keyring::find_user_secret(&keyring_name(dir))
        .ok()
        .flatten()?;
    serde_json::from_slice(&bytes).ok()
}

/// The current stop record; `None` when there is none. A record that exists but
/// cannot be read or parsed means stopped: it reads as a stop issued now, so agent
/// grants stay refused until the user issues one (`deskpilot grant --user`, which
/// removes the record). The keyring's copy counts as well: a file deleted or
/// rolled back to an older stop does not lift the later one.
pub fn read_stop() -> Option<StopRecord> {
    read_stop_in(&state_dir())
}

/// As [`read_stop`], in the runtime directory `dir`.
pub fn read_stop_in(dir: &Path) -> Option<StopRecord> {
    let file = read_stop_file(dir);
    match (file, keyring_stop(dir)) {
        (Some(f), Some(k)) => Some(if k.at_ms > f.at_ms { k } else { f }),
        (f, k) => f.or(k),
    }
}

/// The record in `dir`'s `stop.json` alone (see [`read_stop_in`]).
fn read_stop_file(dir: &Path) -> Option<StopRecord> {
    let path = dir.join(STOP_FILE);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        other => {
            let parsed = other
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<StopRecord>(&b).map_err(|e| e.to_string()));
            match parsed {
                Ok(rec) => Some(rec),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "damaged stop record: treated as a stop issued now");
                    let now = super::now_ms();
                    Some(StopRecord {
                        at_ms: now,
                        until_ms: now.saturating_add(STOP_COOLDOWN_MS),
                    })
                }
            }
        }
    }
}

/// Removes the stop record (a user-issued grant lifts the cooldown). A missing record
/// is not an error.
pub fn clear_stop() -> Result<()> {
    clear_stop_in(&state_dir())
}

/// As [`clear_stop`], in the runtime directory `dir`.
pub fn clear_stop_in(dir: &Path) -> Result<()> {
    if let Err(e) = deskpilot_os::keyring::clear_user_flag(&keyring_name(dir))
        && e.kind() != std::io::ErrorKind::Unsupported
    {
        return Err(ComputerError::internal(format!(
            "cannot clear the stop kept in the keyring: {e}"
        )));
    }
    let path = dir.join(STOP_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ComputerError::internal(format!(
            "cannot remove {}: {e}",
            path.display()
        ))),
    }
}

//! The stop record: `stop.json` in the runtime directory, written by `deskpilot
//! stop` and read by every host before it issues an agent grant.

use std::path::Path;

use deskpilot_policy::grant::STOP_COOLDOWN_MS;
use deskpilot_protocol::ComputerError;
use serde::{Deserialize, Serialize};

use super::{ensure_dir, state_dir, write_atomic};

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
pub fn write_stop(now_ms: u64) -> Result<StopRecord, ComputerError> {
    write_stop_in(&state_dir(), now_ms)
}

/// As [`write_stop`], in the runtime directory `dir`.
pub fn write_stop_in(dir: &Path, now_ms: u64) -> Result<StopRecord, ComputerError> {
    ensure_dir(dir)?;
    let rec = StopRecord {
        at_ms: now_ms,
        until_ms: now_ms.saturating_add(STOP_COOLDOWN_MS),
    };
    let bytes = serde_json::to_vec(&rec)
        .map_err(|e| ComputerError::internal(format!("cannot encode stop record: {e}")))?;
    write_atomic(&dir.join(STOP_FILE), &bytes)?;
    Ok(rec)
}

/// The current stop record; `None` when there is none. A record that exists but
/// cannot be read or parsed means stopped: it reads as a stop issued now, so agent
/// grants stay refused until the user issues one (`deskpilot grant --user`, which
/// removes the record).
pub fn read_stop() -> Option<StopRecord> {
    read_stop_in(&state_dir())
}

/// As [`read_stop`], in the runtime directory `dir`.
pub fn read_stop_in(dir: &Path) -> Option<StopRecord> {
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
pub fn clear_stop() -> Result<(), ComputerError> {
    clear_stop_in(&state_dir())
}

/// As [`clear_stop`], in the runtime directory `dir`.
pub fn clear_stop_in(dir: &Path) -> Result<(), ComputerError> {
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

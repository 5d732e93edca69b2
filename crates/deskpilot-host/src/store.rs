//! The per-desktop state file that keeps refs valid between separate CLI invocations.
//!
//! deskpilot keeps no daemon: each CLI call reads this file, works, and writes it back,
//! holding an exclusive `flock` on a sidecar `.lock` file for the whole call, so two
//! calls against the same desktop never interleave their ref assignments. One file per
//! desktop (keyed by `DISPLAY` and the session bus address), owner-only (mode 0600),
//! under [`state_dir`]. It holds the
//! window refs (`wN`), each window's element ref registry (`eN`) and the last tree seen
//! of each window (the "before" of the next diff). It never holds typed text beyond
//! what the window itself showed, and it is removed with the desktop's sandbox.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use deskpilot_core::refs::{RefRegistry, WindowRefs};
use deskpilot_core::{Bounds, Node};
use deskpilot_protocol::ComputerError;
use deskpilot_protocol::Result;
use deskpilot_protocol::types::WindowInfo;
use serde::{Deserialize, Serialize};

// Owner-only files, directories and locks (the OS layer), for this module and the
// host.
pub use deskpilot_os::{lock_exclusive, owner_only_dir, private_file, write_private_atomic};

/// Format version of the state file; a file of another version is discarded (refs
/// are then issued afresh, which is always safe).
const STATE_VERSION: u32 = 1;

/// What one window remembers between calls.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WindowState {
    pub registry: RefRegistry,
    /// The last tree read (refs assigned), used as the "before" of the next diff.
    pub last: Option<Node>,
    pub info: Option<WindowInfo>,
    /// Grant revision the refs were last shown under; refs shown under another
    /// revision are stale (`COMPUTER_STALE_REVISION`).
    #[serde(default)]
    pub revision: u64,
    /// The OCR elements (`o1`…) of the window's last OCR read, device pixels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ocr: Vec<OcrElement>,
}

/// One OCR element as the host keeps it between calls (per window): the
/// elements `act oN` clicks (docs/ARCHITECTURE.md §8a).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OcrElement {
    /// `o3`.
    #[serde(rename = "ref")]
    pub ref_: String,
    /// The recognised text, redacted.
    pub text: String,
    /// Device pixels.
    pub bounds: Bounds,
    /// The basis (device geometry, scale 1) it was read under.
    pub basis: String,
}

/// Everything persisted for one desktop.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SessionState {
    pub version: u32,
    pub windows: WindowRefs,
    /// Handle of the window the last observe targeted; `act` works in it.
    pub current: Option<String>,
    /// Per-window state, keyed by window handle.
    pub per_window: BTreeMap<String, WindowState>,
    /// The highest element ref number issued in any window of this session; new
    /// numbers are issued above it (see `RefRegistry::reserve_above`).
    #[serde(default)]
    pub ref_floor: u64,
    /// The host's grant, approvals of apps and stop bookkeeping for this session
    /// (see [`deskpilot_policy::view::PolicyState`]).
    #[serde(default)]
    pub policy: deskpilot_policy::view::PolicyState,
}

/// The state file of one desktop, opened and locked for the duration of a call.
#[derive(Debug)]
pub struct StateStore {
    path: PathBuf,
    _lock: File,
}

/// The directory holding state files: the runtime directory
/// ([`deskpilot_os::runtime_dir`]): `$DESKPILOT_RUNTIME_DIR` when set and non-empty,
/// else `$TMPDIR/deskpilot-<uid>` when `$TMPDIR` is absolute, else
/// `/tmp/deskpilot-<uid>` — the same directory the sandbox desktops live in, and
/// deliberately not `$XDG_RUNTIME_DIR`, which a shell that joined a sandbox has
/// pointing inside that sandbox. Nothing is created here.
pub fn state_dir() -> PathBuf {
    deskpilot_os::runtime_dir()
}

/// Creates `dir` (and its parents) restricted to its owner (mode 0700).
///
/// Errors: `COMPUTER_OS_PERMISSION_MISSING` when the system refuses it,
/// `COMPUTER_INTERNAL` for any other failure; both name the directory.
pub fn ensure_private_dir(dir: &Path) -> Result<()> {
    deskpilot_os::ensure_private_dir(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            ComputerError::new(
                deskpilot_protocol::ErrorCode::OsPermissionMissing,
                format!("cannot create {}: {e}", dir.display()),
            )
        } else {
            ComputerError::internal(format!("cannot create {}: {e}", dir.display()))
        }
    })
}

/// A short stable key for a desktop: its display and session bus.
pub fn desktop_key(display: &str, bus: &str) -> String {
    // The whole display name is hashed too: the name part keeps only letters and
    // digits, so `ssh:lab-1` and `ssh:lab1` (devices have no bus) would meet there.
    let key = [display.as_bytes(), &[0], bus.as_bytes()].concat();
    let h = deskpilot_core::hash::fnv1a(&key);
    let d: String = display
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    format!("{d}-{:08x}", h as u32)
}

impl StateStore {
    /// Opens (creating if needed) and exclusively locks the state file for `key`.
    /// Blocks while another call on the same desktop holds it.
    pub fn open(key: &str) -> Result<StateStore> {
        Self::open_in(&state_dir(), key)
    }

    /// As [`StateStore::open`], in an explicit directory (tests).
    pub fn open_in(dir: &Path, key: &str) -> Result<StateStore> {
        ensure_private_dir(dir)?;
        let lock_path = dir.join(format!("session-{key}.lock"));
        let lock = deskpilot_os::lock_file(&lock_path).map_err(|e| {
            ComputerError::internal(format!("cannot lock {}: {e}", lock_path.display()))
        })?;
        Ok(StateStore {
            path: dir.join(format!("session-{key}.json")),
            _lock: lock,
        })
    }

    /// Reads the state; a missing, damaged or old-version file gives a fresh state.
    pub fn load(&self) -> SessionState {
        let mut text = String::new();
        let ok = File::open(&self.path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .is_ok();
        if !ok {
            return SessionState {
                version: STATE_VERSION,
                ..SessionState::default()
            };
        }
        match serde_json::from_str::<SessionState>(&text) {
            Ok(s) if s.version == STATE_VERSION => s,
            Ok(_) | Err(_) => {
                tracing::warn!(path = %self.path.display(), "state file unreadable; refs start afresh");
                SessionState {
                    version: STATE_VERSION,
                    ..SessionState::default()
                }
            }
        }
    }

    /// Writes the state atomically, mode 0600 ([`write_private_atomic`]).
    pub fn save(&self, state: &SessionState) -> Result<()> {
        let text = serde_json::to_vec(state)
            .map_err(|e| ComputerError::internal(format!("cannot encode session state: {e}")))?;
        write_private_atomic(&self.path, &text).map_err(|e| {
            ComputerError::internal(format!("cannot write {}: {e}", self.path.display()))
        })
    }

    /// Path of the state file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::desktop_key;

    #[test]
    fn desktop_keys_tell_every_display_and_device_apart() {
        // Devices have no bus: the punctuation of their names must still count.
        assert_ne!(desktop_key("ssh:lab-1", ""), desktop_key("ssh:lab1", ""));
        assert_ne!(
            desktop_key("ssh:10.0.1.23", ""),
            desktop_key("ssh:10.0.12.3", "")
        );
        assert_ne!(desktop_key(":91", "unix:a"), desktop_key(":91", "unix:b"));
        assert_ne!(desktop_key(":9", "1x"), desktop_key(":91", "x"));
        assert_eq!(desktop_key(":91", "unix:a"), desktop_key(":91", "unix:a"));
        assert!(desktop_key(":91", "unix:a").starts_with("91-"));
    }
}

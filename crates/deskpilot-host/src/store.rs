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
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use deskpilot_core::Node;
use deskpilot_core::refs::{RefRegistry, WindowRefs};
use deskpilot_protocol::types::WindowInfo;
use deskpilot_protocol::{DriverError, ErrorCode};
use serde::{Deserialize, Serialize};

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
    /// (see [`crate::host::PolicyState`]).
    #[serde(default)]
    pub policy: crate::host::PolicyState,
}

/// The state file of one desktop, opened and locked for the duration of a call.
#[derive(Debug)]
pub struct StateStore {
    path: PathBuf,
    _lock: File,
}

fn internal(msg: String) -> DriverError {
    DriverError::new(ErrorCode::Internal, msg)
}

/// The directory holding state files: `$DESKPILOT_RUNTIME_DIR` when set, else
/// `$TMPDIR/deskpilot-<uid>` (`/tmp/deskpilot-<uid>` on Linux) — the same directory the sandbox desktops use, and
/// deliberately not `$XDG_RUNTIME_DIR`, which a shell that joined a sandbox has pointing
/// inside that sandbox.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DESKPILOT_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    std::env::temp_dir().join(format!("deskpilot-{}", user_tag()))
}

/// A short stable key for a desktop: its display and session bus.
pub fn desktop_key(display: &str, bus: &str) -> String {
    // FNV-1a: stable across runs and Rust versions, unlike DefaultHasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bus.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let d: String = display
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    format!("{d}-{:08x}", h as u32)
}

impl StateStore {
    /// Opens (creating if needed) and exclusively locks the state file for `key`.
    /// Blocks while another call on the same desktop holds it.
    pub fn open(key: &str) -> Result<StateStore, DriverError> {
        Self::open_in(&state_dir(), key)
    }

    /// As [`StateStore::open`], in an explicit directory (tests).
    pub fn open_in(dir: &Path, key: &str) -> Result<StateStore, DriverError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
        owner_only_dir(dir);
        let lock_path = dir.join(format!("session-{key}.lock"));
        let lock = private_file(OpenOptions::new().create(true).truncate(false).write(true))
            .open(&lock_path)
            .map_err(|e| internal(format!("cannot open {}: {e}", lock_path.display())))?;
        lock_exclusive(&lock)
            .map_err(|e| internal(format!("cannot lock {}: {e}", lock_path.display())))?;
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

    /// Writes the state atomically (temp file + rename), mode 0600.
    pub fn save(&self, state: &SessionState) -> Result<(), DriverError> {
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_vec(state)
            .map_err(|e| internal(format!("cannot encode session state: {e}")))?;
        let mut f = private_file(OpenOptions::new().create(true).write(true).truncate(true))
            .open(&tmp)
            .map_err(|e| internal(format!("cannot write {}: {e}", tmp.display())))?;
        f.write_all(&text)
            .map_err(|e| internal(format!("cannot write {}: {e}", tmp.display())))?;
        std::fs::rename(&tmp, &self.path)
            .map_err(|e| internal(format!("cannot replace {}: {e}", self.path.display())))
    }

    /// Path of the state file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The current user, for the default directory name: the uid on Unix, the user name
/// elsewhere.
pub(crate) fn user_tag() -> String {
    #[cfg(unix)]
    {
        // SAFETY: getuid has no preconditions and cannot fail.
        unsafe { libc::getuid() }.to_string()
    }
    #[cfg(not(unix))]
    {
        std::env::var("USERNAME").unwrap_or_else(|_| "user".into())
    }
}

/// Restricts a directory to its owner (mode 0700) where the OS has modes.
pub(crate) fn owner_only_dir(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Files this module creates are owner-only (mode 0600) where the OS has modes.
pub(crate) fn private_file(o: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
    }
    #[cfg(not(unix))]
    o
}

/// Takes an exclusive advisory lock, blocking until it is ours (`flock` on Unix). On
/// other systems the lock is not taken: concurrent calls on one desktop may then
/// interleave their ref assignments.
pub(crate) fn lock_exclusive(f: &File) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; blocks until the lock is ours.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = f;
        Ok(())
    }
}

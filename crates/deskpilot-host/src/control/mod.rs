//! Cross-process control: the stop record, the per-desktop grant lock, process facts
//! (from `deskpilot_os`), and the control socket through which `deskpilot stop` reaches every running host.
//!
//! deskpilot has no daemon. Short-lived CLI calls and long-lived hosts (an MCP server,
//! an agent run, a CLI `wait`) are separate processes that coordinate only through
//! the files below. All of them are owner-only and live in owner-only (0700)
//! directories:
//!
//! - `state_dir()/stop.json` (mode 0600): `{at_ms, until_ms}`, written atomically by
//!   `deskpilot stop` ([`write_stop`]), read by every host before issuing an agent
//!   grant ([`read_stop`]), removed when the user issues a grant ([`clear_stop`]).
//! - `state_dir()/grant-<desktop_key>.lock` (mode 0600): the [`Holder`] of the one
//!   active grant of a desktop, written by the host that takes or releases the grant.
//!   It is only ever read-modify-written while holding an exclusive `flock` on the
//!   sidecar `grant-<desktop_key>.flock`, so two hosts never both acquire.
//! - `hosts_dir()/host-<pid>.sock` (mode 0600): the control socket of one running host,
//!   bound by [`ControlServer::listen`] and removed when the server is dropped.
//!   [`stop_hosts`] connects to every such socket and removes the ones nobody listens on.
//!
//! Why the socket directory is chosen as it is: `$XDG_RUNTIME_DIR` is the proper home
//! of per-user sockets, but a shell that joined a sandbox desktop has
//! `$XDG_RUNTIME_DIR` pointing inside that sandbox, so a host started there binds
//! under `state_dir()/hosts` instead (the directory shared with the sandboxes), and
//! `stop` scans both places (see [`scan_dirs`]) so it reaches every host whichever
//! shell it runs from.
//!
//! This module never decides policy (the grant rules live in `deskpilot_policy`), never
//! signals or kills processes, and never talks to peers of another uid.
//!
//! Its parts: `stop.rs` (the stop record), `grant_lock.rs` (the grant lock),
//! `dirs.rs` (the socket directories) and `socket.rs` (the control socket and how
//! `stop` reaches every host); every item is used from here, `crate::control::…`.

use std::io::Read;
use std::path::Path;

use deskpilot_protocol::ComputerError;
use serde::Deserialize;

use crate::store::state_dir;
use deskpilot_protocol::Result;

mod dirs;
mod grant_lock;
mod socket;
mod stop;

#[cfg(test)]
mod tests;

pub use deskpilot_os::{
    ancestors, boot_id, holds_pty_master, now_ms, pid_alive, process_comm, process_exe,
    process_start, process_uid,
};
pub use dirs::{hosts_dir, scan_dirs};
pub use grant_lock::{
    Holder, LockOutcome, acquire_grant_lock, acquire_grant_lock_in, clear_grant_locks,
    clear_grant_locks_in, read_grant_lock, read_grant_lock_in, release_grant_lock,
    release_grant_lock_in, set_user_lease_in,
};
pub use socket::{ControlServer, HostInfo, StopReply, StopSignal, stop_hosts};
pub use stop::{
    StopRecord, clear_stop, clear_stop_in, read_stop, read_stop_in, write_stop, write_stop_in,
};

/// Writes `bytes` to `path` atomically, mode 0600
/// ([`deskpilot_os::write_private_atomic`]).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    deskpilot_os::write_private_atomic(path, bytes)
        .map_err(|e| ComputerError::internal(format!("cannot write {}: {e}", path.display())))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "damaged control file ignored");
            None
        }
    }
}

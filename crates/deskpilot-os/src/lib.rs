//! deskpilot-os: everything deskpilot asks of the operating system about paths,
//! private files and processes, in one place.
//!
//! - [`paths`]: the runtime directory shared by the host and the sandbox desktops
//!   ([`runtime_dir`]) and the user tag in its name.
//! - [`fs`]: owner-only files and directories, the atomic owner-only write
//!   ([`write_private_atomic`]) and the exclusive file lock ([`lock_file`]).
//! - [`process`]: whether a process is alive ([`pid_alive`]), its uid, executable,
//!   command name, start time and ancestors, this boot's id, this process's uids,
//!   signals to process groups and reaping of exited children.
//! - [`keyring`]: secrets kept in the kernel's user keyring, out of every file.
//! - [`now_ms`]: the wall clock in ms, compared across processes.
//!
//! Every `unsafe` block of deskpilot outside the drivers' FFI lives in this crate, each
//! with the reason it is sound. Off Unix the helpers degrade as each one documents
//! (no modes, no locks, no process facts) so the rest of the workspace still builds.

pub mod fs;
pub mod keyring;
pub mod paths;
pub mod process;

pub use fs::{
    check_own_dir, create_private_dir_all, ensure_private_dir, is_private_dir, lock_exclusive,
    lock_file, narrow_to_owner, no_follow_nonblocking, owner_only_dir, private_file, random_hex,
    write_private_atomic,
};
pub use paths::{
    RUNTIME_DIR_VAR, home_dir, runtime_dir, runtime_dir_from, runtime_dir_is_explicit, user_tag,
};
#[cfg(any(target_os = "linux", target_os = "android"))]
pub use process::peer_uid;
pub use process::{
    Signal, ancestors, boot_id, children, current_uid, descends_from, effective_uid,
    holds_pty_master, own_process_group, pid_alive, process_comm, process_env_contains,
    process_env_has, process_exe, process_ids, process_name, process_start, process_uid,
    program_name, reap_if_exited, signal_group_or_pid,
};

/// Wall-clock ms since the Unix epoch. Grants and stop records are compared across
/// processes, so this is the system clock, not a monotonic one; a clock before 1970
/// reads as 0, and one past `u64::MAX` ms as `u64::MAX`.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_ms_is_wall_clock() {
        // 2020-01-01 in ms; any real clock is past it.
        assert!(super::now_ms() > 1_577_836_800_000);
    }
}

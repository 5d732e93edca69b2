//! Cross-process control: the stop record, the per-desktop grant lock, process facts,
//! and the control socket through which `deskpilot stop` reaches every running host.
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

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use deskpilot_policy::grant::STOP_COOLDOWN_MS;
use deskpilot_protocol::{DriverError, ErrorCode};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::store::{lock_exclusive, owner_only_dir, private_file, state_dir, user_tag};

fn internal(msg: String) -> DriverError {
    DriverError::new(ErrorCode::Internal, msg)
}

/// Wall-clock ms since the Unix epoch. Grants and stop records are compared across
/// processes, so this is the system clock, not a monotonic one; a clock before 1970
/// reads as 0.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn ensure_dir(dir: &Path) -> Result<(), DriverError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
    owner_only_dir(dir);
    Ok(())
}

/// Writes `bytes` to `path` atomically (temp file in the same directory, then
/// rename), mode 0600.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DriverError> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp_name);
    let mut f = private_file(OpenOptions::new().create(true).write(true).truncate(true))
        .open(&tmp)
        .map_err(|e| internal(format!("cannot write {}: {e}", tmp.display())))?;
    f.write_all(bytes)
        .map_err(|e| internal(format!("cannot write {}: {e}", tmp.display())))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        internal(format!("cannot replace {}: {e}", path.display()))
    })
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "damaged control file ignored");
            None
        }
    }
}

// ---------------------------------------------------------------------------------
// Stop record
// ---------------------------------------------------------------------------------

const STOP_FILE: &str = "stop.json";

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
pub fn write_stop(now_ms: u64) -> Result<StopRecord, DriverError> {
    write_stop_in(&state_dir(), now_ms)
}

pub(crate) fn write_stop_in(dir: &Path, now_ms: u64) -> Result<StopRecord, DriverError> {
    ensure_dir(dir)?;
    let rec = StopRecord {
        at_ms: now_ms,
        until_ms: now_ms.saturating_add(STOP_COOLDOWN_MS),
    };
    let bytes = serde_json::to_vec(&rec)
        .map_err(|e| internal(format!("cannot encode stop record: {e}")))?;
    write_atomic(&dir.join(STOP_FILE), &bytes)?;
    Ok(rec)
}

/// The current stop record; `None` when there is none or it is damaged.
pub fn read_stop() -> Option<StopRecord> {
    read_stop_in(&state_dir())
}

pub(crate) fn read_stop_in(dir: &Path) -> Option<StopRecord> {
    read_json(&dir.join(STOP_FILE))
}

/// Removes the stop record (a user-issued grant lifts the cooldown). A missing record
/// is not an error.
pub fn clear_stop() -> Result<(), DriverError> {
    clear_stop_in(&state_dir())
}

pub(crate) fn clear_stop_in(dir: &Path) -> Result<(), DriverError> {
    let path = dir.join(STOP_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(internal(format!("cannot remove {}: {e}", path.display()))),
    }
}

// ---------------------------------------------------------------------------------
// Grant lock
// ---------------------------------------------------------------------------------

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

fn lock_paths(dir: &Path, desktop_key: &str) -> Result<LockPaths, DriverError> {
    let ok = !desktop_key.is_empty()
        && desktop_key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !desktop_key.starts_with('.');
    if !ok {
        return Err(internal(format!(
            "grant lock: desktop key {desktop_key:?} is not a plain file-name part"
        )));
    }
    Ok(LockPaths {
        record: dir.join(format!("grant-{desktop_key}.lock")),
        flock: dir.join(format!("grant-{desktop_key}.flock")),
    })
}

/// Opens and exclusively locks the sidecar; the lock lasts as long as the `File`.
fn lock_sidecar(dir: &Path, paths: &LockPaths) -> Result<File, DriverError> {
    ensure_dir(dir)?;
    let f = private_file(OpenOptions::new().create(true).truncate(false).write(true))
        .open(&paths.flock)
        .map_err(|e| internal(format!("cannot open {}: {e}", paths.flock.display())))?;
    lock_exclusive(&f)
        .map_err(|e| internal(format!("cannot lock {}: {e}", paths.flock.display())))?;
    Ok(f)
}

fn write_holder(path: &Path, h: &Holder) -> Result<(), DriverError> {
    let bytes =
        serde_json::to_vec(h).map_err(|e| internal(format!("cannot encode grant lock: {e}")))?;
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
) -> Result<LockOutcome, DriverError> {
    acquire_grant_lock_in(
        &state_dir(),
        desktop_key,
        session,
        grant_id,
        std::process::id(),
        now_ms,
    )
}

pub(crate) fn acquire_grant_lock_in(
    dir: &Path,
    desktop_key: &str,
    session: &str,
    grant_id: &str,
    pid: u32,
    now_ms: u64,
) -> Result<LockOutcome, DriverError> {
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
pub fn release_grant_lock(desktop_key: &str, session: &str) -> Result<(), DriverError> {
    release_grant_lock_in(&state_dir(), desktop_key, session)
}

pub(crate) fn release_grant_lock_in(
    dir: &Path,
    desktop_key: &str,
    session: &str,
) -> Result<(), DriverError> {
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
pub(crate) fn set_user_lease_in(
    dir: &Path,
    desktop_key: &str,
    session: &str,
    until_ms: Option<u64>,
) -> Result<(), DriverError> {
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

pub(crate) fn read_grant_lock_in(dir: &Path, desktop_key: &str) -> Option<Holder> {
    read_json(&lock_paths(dir, desktop_key).ok()?.record)
}

// ---------------------------------------------------------------------------------
// Process facts
// ---------------------------------------------------------------------------------

/// Whether process `pid` exists: `kill(pid, 0)` succeeds or fails with `EPERM` (it
/// exists but belongs to someone else). pid 0 and pids beyond `i32::MAX` → false;
/// always false where there is no `kill` (non-Unix).
pub fn pid_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(p) = libc::pid_t::try_from(pid) else {
            return false;
        };
        if p <= 0 {
            return false;
        }
        // SAFETY: signal 0 only checks for existence and permission; nothing is sent.
        if unsafe { libc::kill(p, 0) } == 0 {
            return true;
        }
        std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

fn proc_read(pid: u32, file: &str) -> Option<String> {
    if !cfg!(target_os = "linux") || pid == 0 {
        return None;
    }
    std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()
}

/// Real uid of `pid`, from the first number of the `Uid:` line of
/// `/proc/PID/status`; `None` when unreadable or not on Linux.
pub fn process_uid(pid: u32) -> Option<u32> {
    parse_status_uid(&proc_read(pid, "status")?)
}

fn parse_status_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Command name of `pid` (`/proc/PID/comm`, trimmed, at most 15 bytes as the kernel
/// keeps it); `None` when unreadable or not on Linux.
pub fn process_comm(pid: u32) -> Option<String> {
    Some(proc_read(pid, "comm")?.trim().to_string())
}

/// Start time of `pid` in clock ticks since boot (`/proc/PID/stat` field 22); `None`
/// when unreadable or not on Linux.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = proc_read(pid, "stat")?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after the name start at 3 (state); 22 is the 20th of them.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// File name of the executable `pid` runs, with symlinks resolved
/// (`/proc/PID/exe`): unlike the app name or `comm`, a renamed link to a binary
/// does not change it. `None` when unreadable (another user's process) or not on
/// Linux.
pub fn process_exe(pid: u32) -> Option<String> {
    if !cfg!(target_os = "linux") || pid == 0 {
        return None;
    }
    let path = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let name = path.file_name()?.to_string_lossy().to_string();
    // A replaced binary reads as "name (deleted)".
    Some(name.trim_end_matches(" (deleted)").to_string())
}

/// Removes every grant lock record (what `deskpilot stop` does after stopping the
/// hosts: nothing may keep a desktop locked past a stop). Returns how many.
pub fn clear_grant_locks() -> usize {
    clear_grant_locks_in(&state_dir())
}

pub(crate) fn clear_grant_locks_in(dir: &Path) -> usize {
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

/// Parent pid from the text of `/proc/PID/stat`: field 4, counted after the last `)`
/// (the command name in field 2 may itself contain spaces and parentheses).
fn parse_stat_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after the name: state (3), ppid (4).
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// `pid`, its parent, grandparent… up to but excluding pid 1 (and pid 0), from
/// `/proc/PID/stat`. Empty when `pid` is 0 or 1, its stat is unreadable, or not on
/// Linux; the chain stops early where a stat becomes unreadable. At most 1 024
/// entries (a guard against a cycle seen across racing reads).
pub fn ancestors(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut cur = pid;
    while cur > 1 && out.len() < 1_024 && !out.contains(&cur) {
        let Some(stat) = proc_read(cur, "stat") else {
            break;
        };
        out.push(cur);
        match parse_stat_ppid(&stat) {
            Some(p) => cur = p,
            None => break,
        }
    }
    out
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`, trimmed); `None` when
/// unreadable or not on Linux.
pub fn boot_id() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let s = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

// ---------------------------------------------------------------------------------
// Socket directories
// ---------------------------------------------------------------------------------

fn non_empty(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Pure form of [`hosts_dir`]'s choice.
fn choose_hosts_dir(
    runtime_set: bool,
    xdg: Option<&Path>,
    sandbox_set: bool,
    state: &Path,
) -> PathBuf {
    match xdg {
        Some(x) if !runtime_set && !sandbox_set => x.join("deskpilot"),
        _ => state.join("hosts"),
    }
}

/// Pure form of [`scan_dirs`]'s list: the hosts dir first, then the others,
/// deduplicated in order.
fn choose_scan_dirs(
    hosts: PathBuf,
    runtime_set: bool,
    xdg: Option<&Path>,
    state: &Path,
    login_runtime: Option<PathBuf>,
) -> Vec<PathBuf> {
    let mut all = vec![hosts, state.join("hosts")];
    if !runtime_set {
        all.extend(xdg.map(|x| x.join("deskpilot")));
        all.extend(login_runtime.map(|x| x.join("deskpilot")));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for d in all {
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// Directory of this process's control socket, created mode 0700:
/// `state_dir()/hosts` when `$DESKPILOT_RUNTIME_DIR` is set and non-empty; else
/// `$XDG_RUNTIME_DIR/deskpilot` when `$XDG_RUNTIME_DIR` is set and non-empty and
/// `$DESKPILOT_SANDBOX` is unset (inside a sandbox it points into the sandbox); else
/// `state_dir()/hosts`. A creation failure is logged; binding there then fails with
/// its own error.
pub fn hosts_dir() -> PathBuf {
    let xdg = non_empty("XDG_RUNTIME_DIR").map(PathBuf::from);
    let dir = choose_hosts_dir(
        non_empty("DESKPILOT_RUNTIME_DIR").is_some(),
        xdg.as_deref(),
        std::env::var_os("DESKPILOT_SANDBOX").is_some(),
        &state_dir(),
    );
    if let Err(e) = ensure_dir(&dir) {
        tracing::warn!(error = %e.message, "control socket directory unavailable");
    }
    dir
}

/// Every directory `stop` scans, deduplicated: [`hosts_dir`], `state_dir()/hosts`,
/// and — when `$DESKPILOT_RUNTIME_DIR` is unset — `$XDG_RUNTIME_DIR/deskpilot` (if
/// set) and, on Linux, the login runtime dir `/run/user/<uid>/deskpilot` (if
/// `/run/user/<uid>` exists), which a shell inside a sandbox no longer names in its
/// environment but where hosts started from a normal shell bind.
pub fn scan_dirs() -> Vec<PathBuf> {
    let runtime_set = non_empty("DESKPILOT_RUNTIME_DIR").is_some();
    let xdg = non_empty("XDG_RUNTIME_DIR").map(PathBuf::from);
    let login = PathBuf::from(format!("/run/user/{}", user_tag()));
    let login = (cfg!(target_os = "linux") && login.is_dir()).then_some(login);
    choose_scan_dirs(
        hosts_dir(),
        runtime_set,
        xdg.as_deref(),
        &state_dir(),
        login,
    )
}

// ---------------------------------------------------------------------------------
// Control socket
// ---------------------------------------------------------------------------------

/// What a running host says about itself over its control socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub pid: u32,
    pub session: String,
    /// Desktop key the host works on.
    pub desktop: String,
    /// The grant the host holds, if any.
    pub grant_id: Option<String>,
    /// "cli", "mcp" or "run".
    pub kind: String,
}

/// Raised by `stop`; checked by a host before each action and awaited by long waits.
/// Clones share one flag. Once triggered it stays triggered.
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    inner: Arc<(AtomicBool, Notify)>,
}

impl StopSignal {
    /// A signal not yet triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal and wakes every [`StopSignal::stopped`] waiter.
    pub fn trigger(&self) {
        self.inner.0.store(true, Ordering::SeqCst);
        self.inner.1.notify_waiters();
    }

    /// Lowers the signal once the host has applied the stop (revoked its grant), so
    /// a long-lived host's later calls run again (within the stop's cooldown rules).
    pub fn clear(&self) {
        self.inner.0.store(false, Ordering::SeqCst);
    }

    /// Whether the signal has been raised.
    pub fn is_stopped(&self) -> bool {
        self.inner.0.load(Ordering::SeqCst)
    }

    /// Resolves once triggered (immediately if it already was).
    pub async fn stopped(&self) {
        loop {
            let notified = self.inner.1.notified();
            tokio::pin!(notified);
            // Register before checking, so a trigger between the check and the
            // await is not missed.
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// Longest request line accepted: 64 KiB (requests are a few dozen bytes; this only
/// bounds memory against garbage).
#[cfg(unix)]
const MAX_LINE: usize = 64 * 1024;
/// How long a connection may sit idle between requests before the server closes it.
#[cfg(unix)]
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long `stop` waits for each host (connect + request + reply): 2 s.
#[cfg(unix)]
const STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(unix)]
fn socket_name(pid: u32) -> String {
    format!("host-{pid}.sock")
}

/// A host's control socket, `hosts_dir()/host-<pid>.sock` (mode 0600), served by a
/// tokio task.
///
/// Protocol: one JSON object per line, one JSON line in reply.
/// `{"method":"stop"}` → triggers the signal, replies `{"ok":true,"host":HostInfo}`;
/// `{"method":"describe"}` → `{"ok":true,"host":HostInfo}`; anything else →
/// `{"ok":false,"error":"…"}`. Lines over 64 KiB get an error and the connection is
/// closed; peers of another uid get `{"ok":false,…}` and are closed. Dropping the
/// server aborts the task (and every open connection) and removes the socket file.
/// One per process: a second server in the same directory replaces the first's file.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    #[cfg(unix)]
    task: tokio::task::JoinHandle<()>,
    /// (device, inode) of the socket we bound, so Drop removes only our own file.
    #[cfg(unix)]
    ident: Option<(u64, u64)>,
}

impl ControlServer {
    /// Binds `hosts_dir()/host-<pid>.sock` and serves it in a tokio task. `info` is
    /// shared so the host can update `grant_id` as grants come and go. Must be called
    /// within a tokio runtime. Errors (`Internal`) when there is no runtime, or the
    /// socket cannot be bound (e.g. a path longer than the 107 bytes `sun_path`
    /// allows), or on non-Unix systems.
    pub fn listen(
        info: Arc<std::sync::Mutex<HostInfo>>,
        signal: StopSignal,
    ) -> Result<ControlServer, DriverError> {
        Self::listen_in(&hosts_dir(), info, signal)
    }

    /// As [`ControlServer::listen`], in an explicit directory.
    #[cfg(unix)]
    pub(crate) fn listen_in(
        dir: &Path,
        info: Arc<std::sync::Mutex<HostInfo>>,
        signal: StopSignal,
    ) -> Result<ControlServer, DriverError> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(internal(
                "control socket: listen needs a running tokio runtime".into(),
            ));
        }
        ensure_dir(dir)?;
        let path = dir.join(socket_name(std::process::id()));
        // A file left by an earlier process that had our pid.
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path)
            .map_err(|e| internal(format!("cannot bind {}: {e}", path.display())))?;
        if let Err(e) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
            let _ = std::fs::remove_file(&path);
            return Err(internal(format!("cannot chmod {}: {e}", path.display())));
        }
        let ident = std::fs::symlink_metadata(&path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let task = tokio::spawn(serve(listener, info, signal));
        tracing::debug!(path = %path.display(), "control socket listening");
        Ok(ControlServer { path, task, ident })
    }

    #[cfg(not(unix))]
    pub(crate) fn listen_in(
        dir: &Path,
        info: Arc<std::sync::Mutex<HostInfo>>,
        signal: StopSignal,
    ) -> Result<ControlServer, DriverError> {
        let _ = (dir, info, signal);
        Err(internal(
            "control socket: not available on this platform".into(),
        ))
    }

    /// Path of the socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            self.task.abort();
            let same = std::fs::symlink_metadata(&self.path)
                .ok()
                .map(|m| (m.dev(), m.ino()));
            if same.is_some() && same == self.ident {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Uid of the process at the other end of a connected Unix socket.
#[cfg(unix)]
fn peer_uid(stream: &tokio::net::UnixStream) -> Option<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsRawFd;
        let mut cred = libc::ucred {
            pid: 0,
            uid: u32::MAX,
            gid: u32::MAX,
        };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `cred`, a live local of
        // exactly that size; the descriptor is owned by `stream` for this call.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            )
        };
        (rc == 0 && len as usize == std::mem::size_of::<libc::ucred>()).then_some(cred.uid)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        stream.peer_cred().ok().map(|c| c.uid())
    }
}

#[cfg(unix)]
fn own_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(unix)]
async fn serve(
    listener: tokio::net::UnixListener,
    info: Arc<std::sync::Mutex<HostInfo>>,
    signal: StopSignal,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(handle_conn(stream, info.clone(), signal.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "control socket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

#[cfg(unix)]
fn reply_line(v: &serde_json::Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap_or_else(|_| br#"{"ok":false}"#.to_vec());
    out.push(b'\n');
    out
}

#[cfg(unix)]
fn error_reply(msg: &str) -> serde_json::Value {
    serde_json::json!({ "ok": false, "error": msg })
}

#[cfg(unix)]
/// Answers one request line (without its newline).
fn answer(
    line: &[u8],
    info: &std::sync::Mutex<HostInfo>,
    signal: &StopSignal,
) -> serde_json::Value {
    #[derive(Deserialize)]
    struct Request {
        method: String,
    }
    let req: Request = match serde_json::from_slice(line) {
        Ok(r) => r,
        Err(e) => return error_reply(&format!("bad request: {e}")),
    };
    let host = || info.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match req.method.as_str() {
        "stop" => {
            signal.trigger();
            let h = host();
            tracing::info!(pid = h.pid, session = %h.session, "stop requested over control socket");
            serde_json::json!({ "ok": true, "host": h })
        }
        "describe" => serde_json::json!({ "ok": true, "host": host() }),
        other => error_reply(&format!(
            "unknown method {other:?} (expected \"stop\" or \"describe\")"
        )),
    }
}

#[cfg(unix)]
async fn handle_conn(
    stream: tokio::net::UnixStream,
    info: Arc<std::sync::Mutex<HostInfo>>,
    signal: StopSignal,
) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let me = own_uid();
    let peer = peer_uid(&stream);
    let (rd, mut wr) = stream.into_split();
    if peer != Some(me) {
        tracing::warn!(?peer, "control socket: peer of another uid refused");
        let _ = wr
            .write_all(&reply_line(&error_reply("peer belongs to another user")))
            .await;
        return;
    }
    let mut reader = BufReader::new(rd);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut limited = (&mut reader).take(MAX_LINE as u64 + 1);
        let read = limited.read_until(b'\n', &mut buf);
        let n = match tokio::time::timeout(IDLE_TIMEOUT, read).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) | Err(_) => return,
        };
        if n == 0 {
            return;
        }
        let too_long = buf.last() != Some(&b'\n') && buf.len() > MAX_LINE;
        if too_long {
            let _ = wr
                .write_all(&reply_line(&error_reply("request line longer than 64 KiB")))
                .await;
            return;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let reply = answer(line, &info, &signal);
        if wr.write_all(&reply_line(&reply)).await.is_err() {
            return;
        }
    }
}

/// What one host answered to `stop`.
#[derive(Debug, Clone, Serialize)]
pub struct StopReply {
    /// The socket reached.
    pub socket: PathBuf,
    /// The host's description, when it acknowledged.
    pub host: Option<HostInfo>,
    /// Why this host did not acknowledge (no reply within 2 s, refusal, bad reply).
    pub error: Option<String>,
}

/// Sends `{"method":"stop"}` to every `host-*.sock` in [`scan_dirs`] except this
/// process's own, concurrently, allowing 2 s per host. A socket whose connect is
/// refused or whose file is gone is stale: its file is removed and it is not
/// reported. Returns one reply per remaining socket, sorted by path; empty on
/// non-Unix systems.
pub async fn stop_hosts() -> Vec<StopReply> {
    stop_hosts_in(&scan_dirs()).await
}

/// As [`stop_hosts`], over explicit directories.
#[cfg(unix)]
pub(crate) async fn stop_hosts_in(dirs: &[PathBuf]) -> Vec<StopReply> {
    let own = socket_name(std::process::id());
    let mut set = tokio::task::JoinSet::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !(name.starts_with("host-") && name.ends_with(".sock")) || name == own {
                continue;
            }
            set.spawn(stop_one(entry.path()));
        }
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        if let Ok(Some(reply)) = r {
            out.push(reply);
        }
    }
    out.sort_by(|a, b| a.socket.cmp(&b.socket));
    out
}

#[cfg(not(unix))]
pub(crate) async fn stop_hosts_in(dirs: &[PathBuf]) -> Vec<StopReply> {
    let _ = dirs;
    Vec::new()
}

/// Stops one host; `None` when its socket was stale (and has been removed).
#[cfg(unix)]
async fn stop_one(socket: PathBuf) -> Option<StopReply> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let fail = |socket: PathBuf, e: String| {
        Some(StopReply {
            socket,
            host: None,
            error: Some(e),
        })
    };
    let exchange = async {
        let stream = match tokio::net::UnixStream::connect(&socket).await {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                ) =>
            {
                return Err(None);
            }
            Err(e) => return Err(Some(format!("cannot connect: {e}"))),
        };
        let peer = peer_uid(&stream);
        if peer != Some(own_uid()) {
            return Err(Some(format!(
                "socket served by another user (uid {peer:?}); not stopped"
            )));
        }
        let (rd, mut wr) = stream.into_split();
        wr.write_all(b"{\"method\":\"stop\"}\n")
            .await
            .map_err(|e| Some(format!("cannot send stop: {e}")))?;
        let mut buf = Vec::new();
        BufReader::new(rd)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut buf)
            .await
            .map_err(|e| Some(format!("cannot read reply: {e}")))?;
        Ok(buf)
    };
    let buf = match tokio::time::timeout(STOP_TIMEOUT, exchange).await {
        Err(_) => return fail(socket, "no reply within 2 s".into()),
        Ok(Err(None)) => {
            tracing::debug!(socket = %socket.display(), "removing stale control socket");
            let _ = std::fs::remove_file(&socket);
            return None;
        }
        Ok(Err(Some(e))) => return fail(socket, e),
        Ok(Ok(buf)) => buf,
    };
    #[derive(Deserialize)]
    struct Reply {
        ok: bool,
        host: Option<HostInfo>,
        error: Option<String>,
    }
    match serde_json::from_slice::<Reply>(&buf) {
        Ok(r) if r.ok && r.host.is_some() => Some(StopReply {
            socket,
            host: r.host,
            error: None,
        }),
        Ok(r) => fail(
            socket,
            r.error.unwrap_or_else(|| "host refused the stop".into()),
        ),
        Err(e) if buf.is_empty() => fail(socket, format!("host closed without a reply ({e})")),
        Err(e) => fail(socket, format!("bad reply: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, Ordering::SeqCst);
            // Short: socket paths must fit in sun_path (108 bytes).
            let p = std::env::temp_dir().join(format!("dpc-{}-{tag}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn now_ms_is_wall_clock() {
        // 2020-01-01 in ms; any real clock is past it.
        assert!(now_ms() > 1_577_836_800_000);
    }

    #[test]
    fn stop_record_round_trip_and_clear() {
        let d = TempDir::new("stop");
        assert_eq!(read_stop_in(&d.0), None);
        let rec = write_stop_in(&d.0, 1_000).unwrap();
        assert_eq!(
            rec,
            StopRecord {
                at_ms: 1_000,
                until_ms: 31_000
            }
        );
        assert_eq!(read_stop_in(&d.0), Some(rec));
        #[cfg(unix)]
        assert_eq!(mode(&d.0.join(STOP_FILE)), 0o600);
        // No temp file left behind.
        assert_eq!(std::fs::read_dir(&d.0).unwrap().count(), 1);
        clear_stop_in(&d.0).unwrap();
        assert_eq!(read_stop_in(&d.0), None);
        clear_stop_in(&d.0).unwrap();
        std::fs::write(d.0.join(STOP_FILE), b"{not json").unwrap();
        assert_eq!(read_stop_in(&d.0), None);
    }

    #[cfg(unix)]
    #[test]
    fn grant_lock_rules() {
        let d = TempDir::new("lock");
        let me = std::process::id();
        let key = "99-0a1b2c3d";
        assert_eq!(read_grant_lock_in(&d.0, key), None);

        let out = acquire_grant_lock_in(&d.0, key, "s1", "g1", me, 10).unwrap();
        assert_eq!(out, LockOutcome::Acquired { previous: None });
        let first = Holder {
            pid: me,
            session: "s1".into(),
            grant_id: Some("g1".into()),
            since_ms: 10,
            start: process_start(me),
            user_until_ms: None,
        };
        assert!(first.start.is_some(), "our own start time is readable");
        assert_eq!(read_grant_lock_in(&d.0, key), Some(first.clone()));
        #[cfg(unix)]
        assert_eq!(mode(&d.0.join(format!("grant-{key}.lock"))), 0o600);

        // Same session re-acquires and sees its own record.
        let out = acquire_grant_lock_in(&d.0, key, "s1", "g2", me, 20).unwrap();
        assert_eq!(
            out,
            LockOutcome::Acquired {
                previous: Some(first)
            }
        );

        // Another session while the holder (our own, live pid) is alive.
        let held = read_grant_lock_in(&d.0, key).unwrap();
        let out = acquire_grant_lock_in(&d.0, key, "s2", "g3", me, 30).unwrap();
        assert_eq!(out, LockOutcome::HeldBy(held.clone()));
        assert_eq!(read_grant_lock_in(&d.0, key), Some(held.clone()));

        // Release by another session is a no-op; by the holder keeps session and grant.
        release_grant_lock_in(&d.0, key, "s2").unwrap();
        assert_eq!(read_grant_lock_in(&d.0, key), Some(held.clone()));
        release_grant_lock_in(&d.0, key, "s1").unwrap();
        let released = Holder {
            pid: 0,
            ..held.clone()
        };
        assert_eq!(read_grant_lock_in(&d.0, key), Some(released.clone()));

        // A released lock is taken by another session, which sees who held it.
        let out = acquire_grant_lock_in(&d.0, key, "s2", "g3", me, 40).unwrap();
        assert_eq!(
            out,
            LockOutcome::Acquired {
                previous: Some(released)
            }
        );
    }

    #[cfg(unix)]
    #[test]
    fn grant_lock_recovered_from_dead_holder() {
        let d = TempDir::new("dead");
        let key = "dead";
        let gone = dead_pid();
        assert!(!pid_alive(gone));
        let stale = Holder {
            pid: gone,
            session: "old".into(),
            grant_id: Some("g0".into()),
            since_ms: 5,
            start: None,
            user_until_ms: None,
        };
        std::fs::write(
            d.0.join(format!("grant-{key}.lock")),
            serde_json::to_vec(&stale).unwrap(),
        )
        .unwrap();
        let out = acquire_grant_lock_in(&d.0, key, "new", "g1", std::process::id(), 50).unwrap();
        assert_eq!(
            out,
            LockOutcome::Acquired {
                previous: Some(stale)
            }
        );
        assert_eq!(read_grant_lock_in(&d.0, key).unwrap().session, "new");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reused_pid_or_a_record_without_start_time_does_not_hold_the_lock() {
        let d = TempDir::new("reused");
        let me = std::process::id();
        let real = process_start(me).expect("our start time");
        for start in [Some(real + 1), None] {
            let key = format!("reused-{}", start.is_some());
            let forged = Holder {
                pid: me,
                session: "other".into(),
                grant_id: Some("g0".into()),
                since_ms: 1,
                start,
                user_until_ms: None,
            };
            std::fs::write(
                d.0.join(format!("grant-{key}.lock")),
                serde_json::to_vec(&forged).unwrap(),
            )
            .unwrap();
            let out = acquire_grant_lock_in(&d.0, &key, "mine", "g1", me, 2).unwrap();
            assert_eq!(
                out,
                LockOutcome::Acquired {
                    previous: Some(forged)
                }
            );
        }
        assert_eq!(clear_grant_locks_in(&d.0), 2);
        assert_eq!(clear_grant_locks_in(&d.0), 0);
        assert!(process_exe(me).is_some());
    }

    #[cfg(unix)]
    #[test]
    fn a_user_grant_lease_keeps_the_desktop_after_its_process_ends() {
        let d = TempDir::new("lease");
        let key = "lease";
        let gone = dead_pid();
        acquire_grant_lock_in(&d.0, key, "cli", "u-1", gone, 10).unwrap();
        set_user_lease_in(&d.0, key, "cli", Some(1_000)).unwrap();
        // The holder's process is dead, but the user's grant is leased until 1,000.
        let out =
            acquire_grant_lock_in(&d.0, key, "run-7", "g-2", std::process::id(), 500).unwrap();
        assert!(
            matches!(out, LockOutcome::HeldBy(ref h) if h.session == "cli"),
            "{out:?}"
        );
        // The same session keeps its lease when it comes back.
        acquire_grant_lock_in(&d.0, key, "cli", "u-1", gone, 600).unwrap();
        assert_eq!(
            read_grant_lock_in(&d.0, key).unwrap().user_until_ms,
            Some(1_000)
        );
        // After the lease, or once released, another session may take it.
        let out =
            acquire_grant_lock_in(&d.0, key, "run-7", "g-2", std::process::id(), 1_001).unwrap();
        assert!(matches!(out, LockOutcome::Acquired { .. }), "{out:?}");
        set_user_lease_in(&d.0, key, "run-7", Some(5_000)).unwrap();
        release_grant_lock_in(&d.0, key, "run-7").unwrap();
        let out = acquire_grant_lock_in(&d.0, key, "cli", "u-3", gone, 1_002).unwrap();
        assert!(matches!(out, LockOutcome::Acquired { .. }), "{out:?}");
    }

    #[test]
    fn grant_lock_rejects_path_like_keys() {
        let d = TempDir::new("key");
        for bad in ["", "../x", "a/b", ".hidden"] {
            assert!(
                acquire_grant_lock_in(&d.0, bad, "s", "g", 1, 0).is_err(),
                "{bad:?}"
            );
            assert_eq!(read_grant_lock_in(&d.0, bad), None);
        }
    }

    #[test]
    fn process_facts_of_self() {
        let me = std::process::id();
        assert!(pid_alive(me));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
        if cfg!(target_os = "linux") {
            let chain = ancestors(me);
            assert_eq!(chain.first(), Some(&me));
            #[cfg(unix)]
            {
                let parent = std::os::unix::process::parent_id();
                if parent > 1 {
                    assert_eq!(chain.get(1), Some(&parent));
                }
                assert_eq!(process_uid(me), Some(own_uid()));
            }
            assert!(!chain.contains(&1));
            assert!(process_comm(me).is_some_and(|c| !c.is_empty() && c.len() <= 15));
            assert!(boot_id().is_some_and(|b| b.len() == 36));
        }
        assert_eq!(ancestors(0), Vec::<u32>::new());
        assert_eq!(ancestors(1), Vec::<u32>::new());
    }

    #[test]
    fn proc_text_parsing() {
        let stat = "4242 (we ird) name)) S 17 4242 4242 0 -1 4194560";
        assert_eq!(parse_stat_ppid(stat), Some(17));
        assert_eq!(parse_stat_ppid("garbage"), None);
        let status = "Name:\tx\nUmask:\t0022\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n";
        assert_eq!(parse_status_uid(status), Some(1000));
        assert_eq!(parse_status_uid("Name:\tx\n"), None);
    }

    #[test]
    fn socket_directory_choice() {
        let state = Path::new("/tmp/deskpilot-1000");
        let xdg = Path::new("/run/user/1000");
        let sandbox_xdg = Path::new("/tmp/deskpilot-1000/sb1/runtime");
        let hosts = state.join("hosts");
        // DESKPILOT_RUNTIME_DIR set → state hosts, whatever else.
        assert_eq!(choose_hosts_dir(true, Some(xdg), false, state), hosts);
        // Normal shell → XDG.
        assert_eq!(
            choose_hosts_dir(false, Some(xdg), false, state),
            xdg.join("deskpilot")
        );
        // Inside a sandbox → state hosts.
        assert_eq!(
            choose_hosts_dir(false, Some(sandbox_xdg), true, state),
            hosts
        );
        assert_eq!(choose_hosts_dir(false, None, false, state), hosts);

        // A normal shell's stop scans both places, once each.
        assert_eq!(
            choose_scan_dirs(
                xdg.join("deskpilot"),
                false,
                Some(xdg),
                state,
                Some(xdg.to_path_buf())
            ),
            vec![xdg.join("deskpilot"), hosts.clone()]
        );
        // A sandbox shell's stop still reaches the login runtime dir.
        assert_eq!(
            choose_scan_dirs(
                hosts.clone(),
                false,
                Some(sandbox_xdg),
                state,
                Some(xdg.to_path_buf())
            ),
            vec![
                hosts.clone(),
                sandbox_xdg.join("deskpilot"),
                xdg.join("deskpilot")
            ]
        );
        // An explicit runtime dir confines everything to it.
        assert_eq!(
            choose_scan_dirs(hosts.clone(), true, Some(xdg), state, Some(xdg.into())),
            vec![hosts]
        );
    }

    #[tokio::test]
    async fn stop_signal_wakes_waiters() {
        let s = StopSignal::new();
        assert!(!s.is_stopped());
        let waiter = tokio::spawn({
            let s = s.clone();
            async move { s.stopped().await }
        });
        tokio::task::yield_now().await;
        s.trigger();
        tokio::time::timeout(std::time::Duration::from_secs(2), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(s.is_stopped());
        // Already triggered → resolves at once.
        tokio::time::timeout(std::time::Duration::from_millis(100), s.stopped())
            .await
            .unwrap();
    }

    #[cfg(unix)]
    fn info() -> Arc<std::sync::Mutex<HostInfo>> {
        Arc::new(std::sync::Mutex::new(HostInfo {
            pid: std::process::id(),
            session: "sess-1".into(),
            desktop: "99-0a1b2c3d".into(),
            grant_id: None,
            kind: "mcp".into(),
        }))
    }

    #[cfg(unix)]
    async fn ask(path: &Path, lines: &[&[u8]]) -> Vec<serde_json::Value> {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let s = tokio::net::UnixStream::connect(path).await.unwrap();
        let (rd, mut wr) = s.into_split();
        let mut rd = BufReader::new(rd);
        let mut out = Vec::new();
        for l in lines {
            let mut msg = l.to_vec();
            msg.push(b'\n');
            wr.write_all(&msg).await.unwrap();
            let mut reply = String::new();
            rd.read_line(&mut reply).await.unwrap();
            out.push(serde_json::from_str(&reply).unwrap());
        }
        out
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn control_socket_describe_stop_and_garbage() {
        let d = TempDir::new("sock");
        let info = info();
        let signal = StopSignal::new();
        let server = ControlServer::listen_in(&d.0, info.clone(), signal.clone()).unwrap();
        let path = server.path().to_path_buf();
        assert_eq!(path, d.0.join(socket_name(std::process::id())));
        assert_eq!(mode(&path), 0o600);

        info.lock().unwrap().grant_id = Some("g7".into());
        let r = ask(&path, &[br#"{"method":"describe"}"#]).await;
        assert_eq!(r[0]["ok"], true);
        assert_eq!(r[0]["host"]["grant_id"], "g7");
        assert_eq!(r[0]["host"]["kind"], "mcp");
        assert!(!signal.is_stopped());

        // Garbage and unknown methods are answered, and the connection lives on.
        let r = ask(
            &path,
            &[
                b"\x00\xffnot json",
                br#"{"method":"dance"}"#,
                br#"{"method":"describe"}"#,
            ],
        )
        .await;
        assert_eq!(r[0]["ok"], false);
        assert!(r[0]["error"].as_str().unwrap().contains("bad request"));
        assert_eq!(r[1]["ok"], false);
        assert!(r[1]["error"].as_str().unwrap().contains("dance"));
        assert_eq!(r[2]["ok"], true);

        // An over-long line gets an error; the server keeps serving others.
        let long = vec![b'x'; MAX_LINE + 10];
        let r = ask(&path, &[&long]).await;
        assert_eq!(r[0]["ok"], false);
        assert!(r[0]["error"].as_str().unwrap().contains("64 KiB"));

        let r = ask(&path, &[br#"{"method":"stop"}"#]).await;
        assert_eq!(r[0]["ok"], true);
        assert_eq!(r[0]["host"]["session"], "sess-1");
        assert!(signal.is_stopped());

        drop(server);
        assert!(!path.exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn stop_hosts_reaches_live_and_clears_stale() {
        let d = TempDir::new("stop");
        // A live host: served under a foreign pid's name, since our own is skipped.
        let signal = StopSignal::new();
        let server = ControlServer::listen_in(&d.0, info(), signal.clone()).unwrap();
        let live = d.0.join("host-4000001.sock");
        std::fs::rename(server.path(), &live).unwrap();
        // A stale host: bound and dropped, leaving the file.
        let stale = d.0.join("host-4000002.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        assert!(stale.exists());
        // An unrelated file is left alone.
        std::fs::write(d.0.join("notes.txt"), b"x").unwrap();

        let replies = stop_hosts_in(std::slice::from_ref(&d.0)).await;
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert_eq!(replies[0].socket, live);
        assert_eq!(replies[0].error, None);
        assert_eq!(replies[0].host.as_ref().unwrap().session, "sess-1");
        assert!(signal.is_stopped());
        assert!(!stale.exists());
        assert!(live.exists());
        assert!(d.0.join("notes.txt").exists());
        drop(server);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn stop_hosts_skips_own_socket() {
        let d = TempDir::new("own");
        let signal = StopSignal::new();
        let server = ControlServer::listen_in(&d.0, info(), signal.clone()).unwrap();
        let replies = stop_hosts_in(std::slice::from_ref(&d.0)).await;
        assert!(replies.is_empty(), "{replies:?}");
        assert!(!signal.is_stopped());
        assert!(server.path().exists());
    }
}

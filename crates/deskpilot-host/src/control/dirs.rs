//! Where control sockets live, and where `stop` looks for them.

use std::path::{Path, PathBuf};

use super::state_dir;
use crate::store::ensure_private_dir as ensure_dir;

fn non_empty(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Pure form of [`hosts_dir`]'s choice.
pub(super) fn choose_hosts_dir(
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
pub(super) fn choose_scan_dirs(
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
        deskpilot_os::runtime_dir_is_explicit(),
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
    let runtime_set = deskpilot_os::runtime_dir_is_explicit();
    let xdg = non_empty("XDG_RUNTIME_DIR").map(PathBuf::from);
    let login = PathBuf::from(format!("/run/user/{}", deskpilot_os::user_tag()));
    let login = (cfg!(target_os = "linux") && login.is_dir()).then_some(login);
    choose_scan_dirs(
        hosts_dir(),
        runtime_set,
        xdg.as_deref(),
        &state_dir(),
        login,
    )
}

//! The runtime directory: where deskpilot keeps per-user state that lives no longer
//! than the machine's temporary files (state files, grant locks, the stop record,
//! approvals, control sockets of hosts started inside a sandbox, and the sandbox
//! desktops themselves).
//!
//! The host and the sandbox use the same definition, so a path under a sandbox
//! (`XDG_CONFIG_HOME` of a shell that joined one, for instance) is recognised by the
//! host as lying under the runtime directory whatever `$TMPDIR` says.
//!
//! X11's own files (`/tmp/.X11-unix/X<n>`, `/tmp/.X<n>-lock`) are placed by the X
//! server and always stay under `/tmp`; they are not in the runtime directory.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The variable that names the runtime directory explicitly.
pub const RUNTIME_DIR_VAR: &str = "DESKPILOT_RUNTIME_DIR";

/// The fallback base when `$TMPDIR` is unset, empty or relative.
const DEFAULT_BASE: &str = "/tmp";

/// The runtime directory from explicit inputs (the pure form of [`runtime_dir`]):
///
/// 1. `runtime` (the value of `$DESKPILOT_RUNTIME_DIR`) when given and non-empty,
///    used as it is (not joined with anything, and not required to be absolute);
/// 2. else `<tmpdir>/deskpilot-<user>` when `tmpdir` (the value of `$TMPDIR`) is
///    given, non-empty and absolute;
/// 3. else `/tmp/deskpilot-<user>`.
///
/// `user` is the [`user_tag`] (the real uid in decimal on Unix). Nothing is created
/// or checked on disk; this cannot fail.
pub fn runtime_dir_from(runtime: Option<&OsStr>, tmpdir: Option<&OsStr>, user: &str) -> PathBuf {
    if let Some(dir) = runtime.filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = tmpdir
        .filter(|v| !v.is_empty())
        .map(Path::new)
        .filter(|p| p.is_absolute())
        .unwrap_or(Path::new(DEFAULT_BASE));
    base.join(format!("deskpilot-{user}"))
}

/// The user's home directory: `$HOME`, else on Windows `%USERPROFILE%` (where
/// `HOME` is seldom set); `None` when neither is set and non-empty.
pub fn home_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let home = var("HOME");
    #[cfg(windows)]
    let home = home.or_else(|| var("USERPROFILE"));
    home.map(PathBuf::from)
}

/// The runtime directory of this process: [`runtime_dir_from`] with
/// `$DESKPILOT_RUNTIME_DIR`, `$TMPDIR` (on other systems than Unix, the OS's
/// temporary directory) and [`user_tag`]. Deliberately not `$XDG_RUNTIME_DIR`, which a
/// shell that joined a sandbox has pointing inside that sandbox.
///
/// Reads the environment on each call; creates nothing (see
/// [`crate::fs::ensure_private_dir`]). Cannot fail.
pub fn runtime_dir() -> PathBuf {
    let runtime = std::env::var_os(RUNTIME_DIR_VAR);
    #[cfg(unix)]
    let tmpdir = std::env::var_os("TMPDIR");
    #[cfg(not(unix))]
    let tmpdir = Some(std::env::temp_dir().into_os_string());
    runtime_dir_from(runtime.as_deref(), tmpdir.as_deref(), &user_tag())
}

/// Whether `$DESKPILOT_RUNTIME_DIR` is set and non-empty (the runtime directory was
/// chosen explicitly, and everything is confined to it).
pub fn runtime_dir_is_explicit() -> bool {
    std::env::var_os(RUNTIME_DIR_VAR).is_some_and(|v| !v.is_empty())
}

/// The current user, as it appears in default directory names: the real uid in
/// decimal on Unix (see [`crate::process::current_uid`]); elsewhere `$USERNAME`, or
/// `user` when that is unset or not Unicode.
pub fn user_tag() -> String {
    #[cfg(unix)]
    {
        crate::process::current_uid().to_string()
    }
    #[cfg(not(unix))]
    {
        std::env::var("USERNAME").unwrap_or_else(|_| "user".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    #[test]
    fn an_explicit_runtime_dir_wins_as_it_is() {
        assert_eq!(
            runtime_dir_from(os("/srv/dp"), os("/var/tmp"), "1000"),
            PathBuf::from("/srv/dp")
        );
        assert_eq!(
            runtime_dir_from(os("rel/dir"), None, "1000"),
            PathBuf::from("rel/dir")
        );
    }

    #[test]
    fn an_absolute_tmpdir_is_the_base_else_tmp() {
        assert_eq!(
            runtime_dir_from(None, os("/var/tmp"), "1000"),
            PathBuf::from("/var/tmp/deskpilot-1000")
        );
        assert_eq!(
            runtime_dir_from(os(""), os("/var/tmp/"), "7"),
            PathBuf::from("/var/tmp/deskpilot-7")
        );
        for tmpdir in [None, os(""), os("relative/tmp")] {
            assert_eq!(
                runtime_dir_from(None, tmpdir, "1000"),
                PathBuf::from("/tmp/deskpilot-1000"),
                "{tmpdir:?}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_user_tag_is_the_uid() {
        assert_eq!(user_tag(), crate::process::current_uid().to_string());
    }
}

//! Keeping launched apps away from deskpilot's own files (docs/ARCHITECTURE.md §12).
//!
//! An app deskpilot starts into a sandbox runs under bubblewrap (`bwrap`, Debian
//! package `bubblewrap`) with deskpilot's config, state, audit and runtime
//! directories replaced by empty tmpfs mounts, so a Save As dialog driven to
//! `~/.config/deskpilot/config.toml` writes into a tmpfs that vanishes with the app.
//! Only the paths the app needs to live in the sandbox (its session bus socket and
//! its own XDG directories) are bound back. Where bubblewrap is missing or cannot make
//! a mount namespace (a container without user namespaces), the app runs as it is and
//! the caller says so; the host's refusals of those paths still apply.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::atspi::Confinement;

/// bubblewrap's path when it is installed and can make a mount namespace on this
/// machine. Probed once per process by running `bwrap --dev-bind / / -- true`
/// (a few milliseconds).
pub fn bwrap() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let path = crate::sandbox::which("bwrap")?;
            let works = Command::new(&path)
                .args(["--dev-bind", "/", "/", "--", "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !works {
                tracing::warn!(
                    "bubblewrap is installed but cannot make a mount namespace here; \
                     launched apps will see deskpilot's directories"
                );
            }
            works.then_some(path)
        })
        .as_deref()
}

/// The command that runs `program args` under `c`:
/// `bwrap --dev-bind / / --tmpfs H… --bind K K… -- program args`.
///
/// Hidden directories are created first (owner-only) when missing, so an app cannot
/// create one on the real disk either; a hidden directory inside another is covered by
/// its parent's tmpfs. Kept paths that do not exist are left out (bubblewrap would
/// refuse them). `None` when `c.hide` is empty or bubblewrap is not usable
/// ([`bwrap`]): the caller then runs the program as it is.
pub fn wrap(c: &Confinement, program: &OsStr, args: &[OsString]) -> Option<Command> {
    if c.hide.is_empty() {
        return None;
    }
    let bwrap = bwrap()?;
    let mut hide: Vec<&PathBuf> = c.hide.iter().filter(|p| p.is_absolute()).collect();
    hide.sort();
    hide.dedup();
    let mut outer: Vec<&PathBuf> = Vec::new();
    for h in hide {
        if !outer.iter().any(|o| h.starts_with(o)) {
            outer.push(h);
        }
    }
    let mut cmd = Command::new(bwrap);
    cmd.args(["--dev-bind", "/", "/"]);
    for h in &outer {
        let _ = deskpilot_os::ensure_private_dir(h);
        cmd.arg("--tmpfs").arg(h);
    }
    let mut keep: Vec<&PathBuf> = c
        .keep
        .iter()
        .filter(|p| p.is_absolute() && p.exists())
        .collect();
    keep.sort();
    keep.dedup();
    for k in keep {
        cmd.arg("--bind").arg(k).arg(k);
    }
    cmd.arg("--").arg(program).args(args);
    Some(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(cmd: &Command) -> Vec<String> {
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn nothing_to_hide_means_no_wrapper() {
        let c = Confinement::default();
        assert!(wrap(&c, OsStr::new("mousepad"), &[]).is_none());
    }

    #[test]
    fn hidden_directories_become_tmpfs_and_kept_paths_come_back() {
        assert!(
            bwrap().is_some(),
            "bubblewrap must be installed and work (scripts/install-deps)"
        );
        let root = std::env::temp_dir().join(format!("dp-confine-{}", std::process::id()));
        let sb = root.join("runtime/sandbox-91");
        std::fs::create_dir_all(sb.join("config")).unwrap();
        let c = Confinement::for_sandbox(
            &sb,
            vec![
                root.join("runtime"),
                root.join("runtime/inner"),
                root.join("cfg"),
            ],
        );
        let cmd = wrap(&c, OsStr::new("mousepad"), &["a.txt".into()]).expect("wrapped");
        let r = |p: &str| root.join(p).display().to_string();
        let mut want: Vec<String> = ["--dev-bind", "/", "/"].map(String::from).to_vec();
        want.extend(["--tmpfs".into(), r("cfg"), "--tmpfs".into(), r("runtime")]);
        let kept = r("runtime/sandbox-91/config");
        want.extend(["--bind".into(), kept.clone(), kept]);
        want.extend(["--".into(), "mousepad".into(), "a.txt".into()]);
        assert_eq!(argv(&cmd), want);
        assert!(root.join("cfg").is_dir(), "a missing hidden dir is created");
        let _ = std::fs::remove_dir_all(&root);
    }
}

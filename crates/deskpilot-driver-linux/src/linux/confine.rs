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

/// Where bubblewrap is looked for: Debian's `/usr/bin/bwrap` only, never `PATH` (an
/// app could put a `bwrap` of its own on it).
pub const BWRAP: &str = "/usr/bin/bwrap";

/// bubblewrap's path when it is installed at [`BWRAP`], owned by root and writable by
/// no one else, and can make a mount namespace on this machine. Probed once per
/// process by running `bwrap --dev-bind / / -- true` (a few milliseconds).
pub fn bwrap() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            use std::os::unix::fs::MetadataExt as _;
            let path = PathBuf::from(BWRAP);
            let meta = std::fs::metadata(&path).ok()?;
            if !meta.is_file() || meta.uid() != 0 || meta.mode() & 0o022 != 0 {
                tracing::warn!("{BWRAP} is not a root-owned file: launched apps are not confined");
                return None;
            }
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

/// True for a directory deskpilot made and may create or restrict: its name starts
/// with `deskpilot`.
fn is_ours(dir: &Path) -> bool {
    dir.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("deskpilot"))
}

/// The command that runs `program args` under `c`:
/// `bwrap --new-session --dev-bind / / --bind A A… --tmpfs H… --ro-bind /dev/null M…
/// --bind K K… -- program args`.
///
/// - Each hidden directory's ancestors inside `$HOME` are bound onto themselves
///   first: a mount point cannot be renamed, so an app cannot move `~/.config` aside
///   and make a fresh `~/.config/deskpilot` that the host would then read.
/// - A hidden directory of deskpilot's own that is missing is created (owner-only)
///   first, so an app cannot create it on the real disk; any other missing one is
///   left out. One inside another is covered by the outer tmpfs.
/// - `--new-session`: the app gets no controlling terminal to type into.
/// - Kept and masked paths that do not exist are left out (bubblewrap would refuse).
///
/// `None` when `c.hide` is empty or bubblewrap is not usable ([`bwrap`]): the caller
/// then runs the program as it is and says so.
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
        if !h.exists() && (!is_ours(h) || deskpilot_os::ensure_private_dir(h).is_err()) {
            continue;
        }
        if !outer.iter().any(|o| h.starts_with(o)) {
            outer.push(h);
        }
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h.parent().is_some());
    let pinned = pins(&outer, home.as_deref());
    let mut cmd = Command::new(bwrap);
    cmd.args(["--new-session", "--dev-bind", "/", "/"]);
    for a in &pinned {
        cmd.arg("--bind").arg(a).arg(a);
    }
    for h in &outer {
        cmd.arg("--tmpfs").arg(h);
    }
    let mut mask: Vec<&PathBuf> = c
        .mask
        .iter()
        .filter(|p| p.is_absolute() && p.is_file())
        .collect();
    mask.sort();
    mask.dedup();
    for m in mask {
        cmd.arg("--ro-bind").arg("/dev/null").arg(m);
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

/// The ancestors of the `hidden` directories strictly inside `home` (none without
/// a home), sorted: each is bound onto itself so that it cannot be renamed.
fn pins(hidden: &[&PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let Some(home) = home else { return out };
    for h in hidden {
        let mut a = h.parent();
        while let Some(dir) = a {
            if dir == home || !dir.starts_with(home) {
                break;
            }
            out.push(dir.to_path_buf());
            a = dir.parent();
        }
    }
    out.sort();
    out.dedup();
    out
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
            "bubblewrap must be installed at /usr/bin/bwrap and work (scripts/install-deps)"
        );
        let root = std::env::temp_dir().join(format!("dp-confine-{}", std::process::id()));
        let sb = root.join("deskpilot-run/sandbox-91");
        std::fs::create_dir_all(sb.join("config")).unwrap();
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(root.join("etc/c.toml"), "mode = \"plan\"\n").unwrap();
        let c = Confinement {
            hide: vec![
                root.join("deskpilot-run"),
                root.join("deskpilot-run/inner"),
                root.join("deskpilot-cfg"),
                root.join("not-ours"),
            ],
            mask: vec![root.join("etc/c.toml"), root.join("etc/missing.toml")],
            keep: vec![sb.join("config"), sb.join("bus")],
        };
        let cmd = wrap(&c, OsStr::new("mousepad"), &["a.txt".into()]).expect("wrapped");
        let r = |p: &str| root.join(p).display().to_string();
        let mut want: Vec<String> = ["--new-session", "--dev-bind", "/", "/"]
            .map(String::from)
            .to_vec();
        want.extend(["--tmpfs".into(), r("deskpilot-cfg")]);
        want.extend(["--tmpfs".into(), r("deskpilot-run")]);
        want.extend(["--ro-bind".into(), "/dev/null".into(), r("etc/c.toml")]);
        let kept = r("deskpilot-run/sandbox-91/config");
        want.extend(["--bind".into(), kept.clone(), kept]);
        want.extend(["--".into(), "mousepad".into(), "a.txt".into()]);
        assert_eq!(argv(&cmd), want);
        assert!(
            root.join("deskpilot-cfg").is_dir(),
            "a missing hidden dir of ours is created"
        );
        assert!(
            !root.join("not-ours").exists(),
            "no other directory is created"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn ancestors_inside_home_are_pinned() {
        let cfg = PathBuf::from("/home/u/.config/deskpilot");
        let audit = PathBuf::from("/home/u/.local/state/deskpilot");
        let run = PathBuf::from("/tmp/deskpilot-1000");
        let got = pins(&[&cfg, &audit, &run], Some(Path::new("/home/u")));
        assert_eq!(
            got,
            ["/home/u/.config", "/home/u/.local", "/home/u/.local/state"].map(PathBuf::from)
        );
        assert!(pins(&[&cfg], None).is_empty());
    }
}

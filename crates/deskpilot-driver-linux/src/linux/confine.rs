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

/// The namespaces every confined app gets: the whole file system as it is (masks
/// come after), and a process table with a procfs of its own.
const NAMESPACES: [&str; 6] = ["--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc"];

/// bubblewrap's path when it is installed at [`BWRAP`], owned by root and writable by
/// no one else, and can make a mount namespace on this machine. Probed once per
/// process by running `bwrap` with [`NAMESPACES`] and `-- true` (a few milliseconds).
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
                .args(NAMESPACES)
                .args(["--", "true"])
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
/// --bind K K… -- /bin/sh -c 'exec "$0" "$@" </dev/null' program args`.
///
/// - Each hidden directory's ancestors inside `$HOME` are bound onto themselves
///   first: a mount point cannot be renamed, so an app cannot move `~/.config` aside
///   and make a fresh `~/.config/deskpilot` that the host would then read.
/// - A hidden directory of deskpilot's own that is missing is created (owner-only)
///   first, so an app cannot create it on the real disk; any other missing one is
///   left out. One inside another is covered by the outer tmpfs.
/// - `--new-session`: the app gets no controlling terminal to type into.
/// - `--unshare-pid --proc /proc`: the app lives in a PID namespace of its own with a
///   procfs of its own, so `/proc/PID/root` of a process outside (the X server, the
///   host) is not there to walk into deskpilot's files through.
/// - `--seccomp 0`: the kernel refuses the app the keyring system calls (`keyctl`,
///   `add_key`, `request_key`: `EPERM`), so the secrets deskpilot seals its files
///   with in the user keyring ([`deskpilot_os::keyring`]) are out of its reach. The
///   program comes on the command's stdin ([`keyring_filter`]): callers must not
///   replace it.
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
    let filter = match keyring_filter() {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(error = %e, "the keyring filter could not be made: launched apps are not confined");
            return None;
        }
    };
    let mut cmd = Command::new(bwrap);
    cmd.arg("--new-session")
        .args(NAMESPACES)
        .args(["--seccomp", "0"]);
    cmd.stdin(filter);
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
    // bubblewrap closes the descriptor it read the filter from, which is the
    // app's stdin: a shell inside gives the app /dev/null there and execs it.
    cmd.args(["--", "/bin/sh", "-c", STDIN_NULL])
        .arg(program)
        .args(args);
    Some(cmd)
}

/// The shell script that runs `"$0" "$@"` (the app and its arguments) with stdin
/// from `/dev/null`, in place of the shell.
const STDIN_NULL: &str = "exec \"$0\" \"$@\" </dev/null";

/// The system calls of the kernel keyrings, refused to launched apps with `EPERM`.
const KEYRING_SYSCALLS: [libc::c_long; 3] =
    [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key];

/// The bit that makes an x86-64 system call number one of the x32 ABI
/// (`__X32_SYSCALL_BIT`, `asm/unistd.h`): x32 calls pass an x86-64 filter's
/// architecture check, so the keyring calls are refused under both numbers.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: libc::c_long = 0x4000_0000;

/// The classic BPF program that refuses [`KEYRING_SYSCALLS`] (`EPERM`; on x86-64
/// under their x32 numbers too) and allows
/// every other system call of this architecture (the `seccompiler` crate; a call of
/// another architecture's ABI kills the process, as the filter cannot judge it), as
/// bubblewrap's `--seccomp` reads it: `struct sock_filter` records in this machine's
/// byte order, here on the read end of a pipe (the program is far smaller than a
/// pipe's buffer).
///
/// Errors: the filter's compilation error or the pipe's, as text.
fn keyring_filter() -> Result<std::io::PipeReader, String> {
    use std::io::Write as _;
    #[cfg(target_arch = "x86_64")]
    let arch = seccompiler::TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = seccompiler::TargetArch::aarch64;
    #[cfg(target_arch = "riscv64")]
    let arch = seccompiler::TargetArch::riscv64;
    #[cfg(target_arch = "x86_64")]
    let numbers = KEYRING_SYSCALLS
        .into_iter()
        .flat_map(|n| [n, n | X32_SYSCALL_BIT]);
    #[cfg(not(target_arch = "x86_64"))]
    let numbers = KEYRING_SYSCALLS.into_iter();
    let rules = numbers.map(|n| (n, Vec::new())).collect();
    let filter = seccompiler::SeccompFilter::new(
        rules,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for f in &program {
        bytes.extend_from_slice(&f.code.to_ne_bytes());
        bytes.push(f.jt);
        bytes.push(f.jf);
        bytes.extend_from_slice(&f.k.to_ne_bytes());
    }
    let (reader, mut writer) = std::io::pipe().map_err(|e| e.to_string())?;
    writer.write_all(&bytes).map_err(|e| e.to_string())?;
    Ok(reader)
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
        let mut want: Vec<String> = [
            "--new-session",
            "--dev-bind",
            "/",
            "/",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--seccomp",
            "0",
        ]
        .map(String::from)
        .to_vec();
        want.extend(["--tmpfs".into(), r("deskpilot-cfg")]);
        want.extend(["--tmpfs".into(), r("deskpilot-run")]);
        want.extend(["--ro-bind".into(), "/dev/null".into(), r("etc/c.toml")]);
        let kept = r("deskpilot-run/sandbox-91/config");
        want.extend(["--bind".into(), kept.clone(), kept]);
        want.extend(["--", "/bin/sh", "-c", STDIN_NULL].map(String::from));
        want.extend(["mousepad".into(), "a.txt".into()]);
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

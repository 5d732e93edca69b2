//! Owner-only files and directories, the atomic owner-only write, and the exclusive
//! file lock.
//!
//! Every file deskpilot keeps for itself is mode 0600 and every directory it creates
//! for itself 0700, where the OS has modes; elsewhere the modes are skipped and the
//! rest works the same.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes `o` create files owner-only (mode 0600, narrowed further by the umask)
/// where the OS has modes. An existing file keeps its mode: see [`narrow_to_owner`].
pub fn private_file(o: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
    }
    #[cfg(not(unix))]
    o
}

/// Makes `o` refuse a symlink as the last component of the path (`O_NOFOLLOW`) and
/// open without blocking (`O_NONBLOCK`: a FIFO without a reader fails at once with
/// `ENXIO` instead of hanging), on Unix; unchanged elsewhere.
pub fn no_follow_nonblocking(o: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
    }
    #[cfg(not(unix))]
    o
}

/// Restricts an existing directory to its owner (mode 0700) where the OS has modes.
/// Best effort: a failure (not our directory, no such directory) is ignored; callers
/// that must know check with [`is_private_dir`].
pub fn owner_only_dir(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Creates `dir` and its missing parents, then makes sure `dir` itself is ours and
/// private: a real directory (not a symlink), owned by this process's uid, mode 0700
/// (narrowed if it was wider). A directory another user created first — a
/// pre-created `/tmp/deskpilot-<uid>` — is never used: its owner could swap the files
/// deskpilot writes there.
///
/// Errors: the error of creating the directories; `PermissionDenied` when `dir` is
/// a symlink, is owned by another uid, or stays open to group or others.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = dir_meta(dir)?;
        let denied = |why: String| {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} {why}; remove it or point deskpilot elsewhere ($DESKPILOT_RUNTIME_DIR, $XDG_STATE_HOME)",
                    dir.display()
                ),
            ))
        };
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return denied("is not a directory of its own (a symlink or a file)".into());
        }
        let me = crate::process::current_uid();
        if meta.uid() != me {
            return denied(format!(
                "belongs to uid {}, not to this user (uid {me})",
                meta.uid()
            ));
        }
    }
    owner_only_dir(dir);
    if !is_private_dir(dir)? {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} stays open to other users (mode not 0700)",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Checks that an existing `dir` may hold a private file of this user without
/// being changed: a directory (not a symlink) owned by this user that no other user
/// can write to (no group or other write bit), so nobody else can replace a file
/// in it. Unlike [`ensure_private_dir`] it never changes the directory's mode: a
/// directory the user shares (a project folder, 0755) stays as it is.
///
/// Errors: `PermissionDenied` naming what is wrong; the error of reading the
/// directory's metadata (e.g. `NotFound`).
pub fn check_own_dir(dir: &Path) -> io::Result<()> {
    let meta = dir_meta(dir)?;
    let denied = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {why}; choose a directory of your own", dir.display()),
        ))
    };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return denied("is not a directory of its own (a symlink or a file)".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = crate::process::current_uid();
        if meta.uid() != me {
            return denied(format!(
                "belongs to uid {}, not to this user (uid {me})",
                meta.uid()
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return denied(format!(
                "can be written by other users (mode {:o})",
                meta.mode() & 0o777
            ));
        }
    }
    Ok(())
}

/// Creates `dir` and its missing parents, each new one with mode 0700; directories
/// that already exist keep their mode. An empty path is a no-op.
///
/// Errors: the error of creating a directory.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// The metadata of `dir` itself, never of what it links to: trailing separators are
/// dropped first (`/tmp/link/` would otherwise resolve the link). The one way the
/// directory checks here ([`ensure_private_dir`], [`check_own_dir`],
/// [`is_private_dir`]) look at a directory, so a symlink is refused by all of them.
fn dir_meta(dir: &Path) -> io::Result<std::fs::Metadata> {
    let plain: PathBuf = dir.components().collect();
    std::fs::symlink_metadata(if plain.as_os_str().is_empty() {
        dir
    } else {
        &plain
    })
}

/// Whether `dir` is a directory (not a symlink to one) owned by this process's real
/// uid and closed to group and others (no bit of 0o077 set). Always true for a
/// directory where the OS has no owners or modes.
///
/// Errors: the error of reading the directory's metadata (e.g. `NotFound`).
pub fn is_private_dir(dir: &Path) -> io::Result<bool> {
    let meta = dir_meta(dir)?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Ok(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(meta.uid() == crate::process::current_uid() && meta.mode() & 0o077 == 0)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok(true)
    }
}

/// Narrows an open regular file that group or others may read or write to mode 0600.
/// FIFOs, devices and other non-regular files are left alone (their modes are not
/// ours to change); a no-op where the OS has no modes.
///
/// Errors: the error of reading the file's metadata or changing its mode.
pub fn narrow_to_owner(f: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = f.metadata()?;
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    #[cfg(not(unix))]
    let _ = f;
    Ok(())
}

/// Takes an exclusive advisory lock on `f`, blocking until it is ours (`flock` on
/// Unix). The lock lasts until every descriptor of that open file is closed. On other
/// systems no lock is taken and this returns `Ok`.
///
/// Errors: the OS error of `flock` (`EINTR` is retried).
pub fn lock_exclusive(f: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        loop {
            // SAFETY: flock only reads the descriptor number, which `f` keeps open
            // for the duration of the call; it touches no memory of ours.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = f;
        Ok(())
    }
}

/// Opens (creating it owner-only if needed, never truncating) the lock file at
/// `path` and takes an exclusive lock on it ([`lock_exclusive`]), blocking until it
/// is ours. The lock is held as long as the returned `File` lives.
///
/// Errors: the error of opening the file or of locking it.
pub fn lock_file(path: &Path) -> io::Result<File> {
    let f = private_file(OpenOptions::new().create(true).truncate(false).write(true)).open(path)?;
    lock_exclusive(&f)?;
    Ok(f)
}

/// Distinguishes the temp files of concurrent writers within one process.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// `.<name>.<pid>.<n>.tmp` beside `path`.
fn temp_beside(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(path.with_file_name(tmp))
}

/// Creates the temp file exclusively (never through an existing file or symlink); a
/// file left at that name by an earlier process with our pid is replaced once.
fn create_temp(tmp: &Path) -> io::Result<File> {
    let open = || private_file(OpenOptions::new().write(true).create_new(true)).open(tmp);
    match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(tmp)?;
            open()
        }
        r => r,
    }
}

/// Replaces the file at `path` with `bytes`, atomically and owner-only: the bytes go
/// to a new temp file `.<name>.<pid>.<n>.tmp` in the same directory, created with mode
/// 0600, are flushed to disk (`fsync`), and the temp file is renamed over `path`. A
/// reader sees the old content or the new, never a part; the file at `path` is mode
/// 0600 afterwards whatever its mode was (a symlink at `path` is replaced, not
/// followed). The directory is then synced, best effort. The directory must exist.
///
/// Errors: `InvalidInput` when `path` names no file; else the error of creating,
/// writing, syncing or renaming the temp file, which is then removed.
pub fn write_private_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_beside(path)?;
    let written = create_temp(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// `n` bytes from the operating system's randomness (the `getrandom` crate: the
/// kernel's CSPRNG on Linux, `ProcessPrng` on Windows, `getentropy` on macOS), as
/// `2n` lower-case hex digits. deskpilot's one source of ids and secrets: bearer
/// tokens, grant and approval ids, seal keys.
///
/// Errors: the system's error when it has no randomness to give; there is no
/// weaker fallback.
pub fn random_hex(n: usize) -> io::Result<String> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(io::Error::other)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// A symlinked runtime directory passed the check the sandbox lookup made
    /// (`is_private_dir` followed the link) and, written with a trailing slash,
    /// the one `stop` made too. Every check sees the link itself.
    #[cfg(unix)]
    #[test]
    fn every_directory_check_refuses_a_symlink_however_written() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        ensure_private_dir(&real).unwrap();
        assert!(is_private_dir(&real).unwrap());
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for p in [
            link.clone(),
            PathBuf::from(format!("{}/", link.display())),
            PathBuf::from(format!("{}//", link.display())),
        ] {
            assert!(!is_private_dir(&p).unwrap(), "{}", p.display());
            let e = ensure_private_dir(&p).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{}", p.display());
            let e = check_own_dir(&p).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{}", p.display());
        }
        check_own_dir(&real).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_private_dir_must_be_ours_and_not_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let mine = d.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::set_permissions(&mine, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        ensure_private_dir(&mine).unwrap();
        assert_eq!(mode(&mine), 0o700);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        let e = ensure_private_dir(&link).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        if crate::process::current_uid() == 0 {
            // Root can make a directory that belongs to someone else.
            let theirs = d.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = ensure_private_dir(&theirs).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
            assert!(e.to_string().contains("uid 65534"), "{e}");
        }
    }

    #[test]
    fn atomic_write_replaces_the_file_and_leaves_no_temp_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        write_private_atomic(&p, b"one").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_private_atomic(&p, b"two, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two, longer");
        #[cfg(unix)]
        assert_eq!(mode(&p), 0o600);
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_narrows_a_wide_file_and_replaces_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("wide");
        std::fs::write(&p, "x").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private_atomic(&p, b"y").unwrap();
        assert_eq!(mode(&p), 0o600);

        let victim = d.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        write_private_atomic(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    #[test]
    fn atomic_write_errors_leave_nothing_behind() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("no-such-dir").join("f");
        assert!(write_private_atomic(&missing, b"x").is_err());
        // Renaming a file over a directory fails; the temp file goes.
        let dir = d.path().join("a-dir");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("inside"), "x").unwrap();
        assert!(write_private_atomic(&dir, b"x").is_err());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let e = write_private_atomic(Path::new("/"), b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[cfg(unix)]
    #[test]
    fn private_dirs_and_files() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let nested = d.path().join("a").join("b");
        create_private_dir_all(&nested).unwrap();
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(mode(&d.path().join("a")), 0o700);
        assert!(is_private_dir(&nested).unwrap());
        create_private_dir_all(Path::new("")).unwrap();

        let wide = d.path().join("wide");
        std::fs::create_dir(&wide).unwrap();
        std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!is_private_dir(&wide).unwrap());
        // create_private_dir_all leaves an existing directory as it is…
        create_private_dir_all(&wide).unwrap();
        assert_eq!(mode(&wide), 0o755);
        // …ensure_private_dir narrows it.
        ensure_private_dir(&wide).unwrap();
        assert_eq!(mode(&wide), 0o700);
        assert!(is_private_dir(&d.path().join("missing")).is_err());

        let f = d.path().join("f");
        private_file(OpenOptions::new().create(true).truncate(false).write(true))
            .open(&f)
            .unwrap();
        assert_eq!(mode(&f), 0o600);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o664)).unwrap();
        narrow_to_owner(&File::open(&f).unwrap()).unwrap();
        assert_eq!(mode(&f), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn no_follow_refuses_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let mut o = OpenOptions::new();
        o.append(true);
        assert!(no_follow_nonblocking(&mut o).open(&link).is_err());
        assert!(no_follow_nonblocking(&mut o).open(&victim).is_ok());
    }

    #[test]
    fn a_lock_file_is_exclusive_until_dropped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.lock");
        let held = lock_file(&p).unwrap();
        #[cfg(unix)]
        assert_eq!(mode(&p), 0o600);
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = p.clone();
        let t = std::thread::spawn(move || {
            let _second = lock_file(&p2).unwrap();
            tx.send(()).unwrap();
        });
        if cfg!(unix) {
            assert!(
                rx.recv_timeout(std::time::Duration::from_millis(200))
                    .is_err(),
                "the second lock waits"
            );
        }
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        t.join().unwrap();
    }
}

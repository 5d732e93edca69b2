//! The audit log (docs/ARCHITECTURE.md §7): one JSON line per grant, rebind, action and
//! refusal, appended to an owner-only file (mode 0600), and read back for
//! `deskpilot audit`.
//!
//! The record's shape and what may be in it belong to
//! [`deskpilot_policy::audit::AuditRecord`]; this module only writes and reads lines.
//! It never records typed text, password values or pixels (the record cannot hold
//! them), never blocks on the log (a FIFO or full pipe at the path fails fast instead
//! of hanging an action), and never reads a large log whole.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use deskpilot_core::sanitize::one_line;
use deskpilot_policy::audit::AuditRecord;
use deskpilot_protocol::ComputerError;

use deskpilot_os::private_file;

/// Bytes read per step when reading the log from its end: 64 KiB, a few hundred
/// records, so `deskpilot audit` usually reads one block.
const TAIL_BLOCK: u64 = 64 * 1024;

/// Path of the audit log: `$DESKPILOT_AUDIT` if set and non-empty, else
/// `$XDG_STATE_HOME/deskpilot/audit.jsonl`, else
/// `$HOME/.local/state/deskpilot/audit.jsonl` (relative to the current directory
/// when neither is set).
pub fn audit_path() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("DESKPILOT_AUDIT") {
        return PathBuf::from(p);
    }
    let base = var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| deskpilot_os::home_dir().map(|h| h.join(".local").join("state")))
        .unwrap_or_else(|| PathBuf::from(".local/state"));
    base.join("deskpilot").join("audit.jsonl")
}

/// The audit log at one path.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
}

impl AuditLog {
    /// The log at `path` (nothing is opened until [`AuditLog::append`]).
    pub fn new(path: PathBuf) -> AuditLog {
        AuditLog { path }
    }

    /// The log at [`audit_path`].
    pub fn at_default_path() -> AuditLog {
        AuditLog::new(audit_path())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one line. Creates missing directories (mode 0700) and
    /// the file (mode 0600); narrows an existing regular file with wider permissions
    /// to 0600 (and refuses to write when that fails). Opens with `O_APPEND |
    /// O_NONBLOCK`, so a FIFO without a reader or a full pipe fails at once instead of
    /// blocking, and writes the line and its `\n` in a single `write`, so concurrent
    /// writers do not interleave within a line.
    ///
    /// Errors: a message saying what failed and on which path. Never panics.
    pub fn append(&self, rec: &AuditRecord) -> Result<(), String> {
        let path = &self.path;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if std::fs::symlink_metadata(dir).is_err() {
                deskpilot_os::create_private_dir_all(dir).map_err(|e| {
                    format!(
                        "cannot create the audit log directory {}: {e}",
                        dir.display()
                    )
                })?;
            }
            // The one check of deskpilot's directories (docs/ARCHITECTURE.md §12):
            // a symlink, another user's directory or one others can write to is
            // refused, as the runtime directory is; never re-permissioned.
            deskpilot_os::check_own_dir(dir)
                .map_err(|e| format!("cannot use the audit log directory: {e}"))?;
        }
        let mut opts = OpenOptions::new();
        opts.append(true).create(true);
        private_file(&mut opts);
        // O_NOFOLLOW: a symlink planted at the log's path must not redirect the
        // records (or the permission narrowing) onto another file.
        deskpilot_os::no_follow_nonblocking(&mut opts);
        let mut f = opts
            .open(path)
            .map_err(|e| format!("cannot open the audit log {}: {e}", path.display()))?;
        narrow_permissions(&f, path)?;
        let mut line = rec.to_line();
        if line.is_empty() {
            return Err(format!(
                "cannot encode an audit record for {}",
                path.display()
            ));
        }
        line.push('\n');
        match f.write(line.as_bytes()) {
            Ok(n) if n == line.len() => Ok(()),
            Ok(n) => Err(format!(
                "short write to the audit log {}: {n} of {} bytes",
                path.display(),
                line.len()
            )),
            Err(e) => Err(format!(
                "cannot write to the audit log {}: {e}",
                path.display()
            )),
        }
    }
}

/// Narrows a regular file readable or writable by others to 0600. Leaves FIFOs and
/// devices alone (their modes are not the log's to change).
fn narrow_permissions(f: &File, path: &Path) -> Result<(), String> {
    deskpilot_os::narrow_to_owner(f).map_err(|e| {
        format!(
            "the audit log {} is readable by others and cannot be narrowed to 0600: {e}",
            path.display()
        )
    })
}

/// The last `n` well-formed records of the log at `path`, oldest first, and the
/// number of malformed lines skipped on the way back to them (blank lines are not
/// counted). A missing file gives no records. The file is read from its end in
/// 64 KiB blocks, so a large log is not read whole.
///
/// Errors: `COMPUTER_INTERNAL` when the file exists but cannot be read.
pub fn read_tail(path: &Path, n: usize) -> Result<(Vec<AuditRecord>, usize), ComputerError> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => {
            return Err(ComputerError::internal(format!(
                "cannot open {}: {e}",
                path.display()
            )));
        }
    };
    let read_err =
        |e: std::io::Error| ComputerError::internal(format!("cannot read {}: {e}", path.display()));
    let len = f.metadata().map_err(read_err)?.len();
    let mut newest_first: Vec<AuditRecord> = Vec::new();
    let mut skipped = 0usize;
    // Bytes of the line that straddles the start of the block read last.
    let mut carry: Vec<u8> = Vec::new();
    let mut pos = len;
    while pos > 0 && newest_first.len() < n {
        let start = pos.saturating_sub(TAIL_BLOCK);
        let mut buf = vec![0u8; (pos - start) as usize];
        f.seek(SeekFrom::Start(start)).map_err(read_err)?;
        f.read_exact(&mut buf).map_err(read_err)?;
        buf.extend_from_slice(&carry);
        // Before the first newline is the end of a line that began in an earlier
        // block (kept in `carry` for the next step), unless this block starts the file.
        let (head, lines) = if start == 0 {
            (&buf[..0], &buf[..])
        } else {
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], &buf[i + 1..]),
                None => (&buf[..], &buf[..0]),
            }
        };
        for line in lines.rsplit(|&b| b == b'\n') {
            if newest_first.len() >= n {
                break;
            }
            let text = String::from_utf8_lossy(line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_str::<AuditRecord>(text) {
                Ok(r) => newest_first.push(r),
                Err(_) => skipped += 1,
            }
        }
        carry = head.to_vec();
        pos = start;
    }
    newest_first.reverse();
    Ok((newest_first, skipped))
}

/// One record as one human line:
/// `TIME EVENT grant=ID scope issuer app(pid) op role fp=… channel status code text_len=N rev=R`,
/// leaving out absent fields; every field passes through [`one_line`], so nothing in a
/// record can break the line or hide text.
pub fn format_record(r: &AuditRecord) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !s.is_empty() {
            parts.push(one_line(&s));
        }
    };
    push(r.time.clone());
    if let Some(ev) = r.event {
        push(
            serde_json::to_value(ev)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        );
    }
    let opt = |p: &str, v: &Option<String>| v.as_ref().map(|v| format!("{p}{v}"));
    push(opt("grant=", &r.grant_id).unwrap_or_default());
    push(r.scope.clone().unwrap_or_default());
    push(r.issuer.clone().unwrap_or_default());
    push(match (&r.app, r.pid) {
        (Some(a), Some(p)) => format!("{a}({p})"),
        (Some(a), None) => a.clone(),
        (None, Some(p)) => format!("pid={p}"),
        (None, None) => String::new(),
    });
    push(r.op.clone().unwrap_or_default());
    push(r.role.clone().unwrap_or_default());
    push(opt("fp=", &r.fingerprint).unwrap_or_default());
    push(r.channel.clone().unwrap_or_default());
    push(r.status.clone().unwrap_or_default());
    push(r.code.clone().unwrap_or_default());
    push(
        r.text_len
            .map(|n| format!("text_len={n}"))
            .unwrap_or_default(),
    );
    push(
        opt("capture=", &r.capture)
            .map(|c| c.replace(' ', ":"))
            .unwrap_or_default(),
    );
    push(r.revision.map(|n| format!("rev={n}")).unwrap_or_default());
    push(
        r.approved_by
            .as_ref()
            .map(|a| format!("approved_by={a}"))
            .unwrap_or_default(),
    );
    parts.join(" ")
}

/// The current UTC time as RFC 3339 with milliseconds (`2026-11-29T20:00:00.123Z`).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A time in ms since the Unix epoch as RFC 3339 UTC with milliseconds.
pub fn rfc3339_from_unix_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + std::time::Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskpilot_policy::audit::AuditEvent;

    /// A fresh directory under the system temp dir, removed on drop.
    fn temp_dir(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("deskpilot-audit-test-{tag}-"))
            .tempdir()
            .unwrap()
    }

    /// An audit directory owned by another user, a symlink or open to others'
    /// writes was used; it is refused as the runtime directory is, and nothing is
    /// written there.
    #[cfg(unix)]
    #[test]
    fn an_audit_dir_that_is_not_ours_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = temp_dir("notours");
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
        AuditLog::new(real.join("audit.jsonl"))
            .append(&rec(1))
            .unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = AuditLog::new(link.join("audit.jsonl"))
            .append(&rec(2))
            .unwrap_err();
        assert!(e.contains("symlink"), "{e}");
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = AuditLog::new(open.join("audit.jsonl"))
            .append(&rec(3))
            .unwrap_err();
        assert!(e.contains("written by other users"), "{e}");
        assert!(!open.join("audit.jsonl").exists());
        if deskpilot_os::current_uid() == 0 {
            // As root the test can give a directory away to another user.
            let theirs = d.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = AuditLog::new(theirs.join("audit.jsonl"))
                .append(&rec(4))
                .unwrap_err();
            assert!(e.contains("belongs to uid 65534"), "{e}");
        }
        let lines = std::fs::read_to_string(real.join("audit.jsonl")).unwrap();
        assert_eq!(lines.lines().count(), 1, "nothing written through the link");
    }

    fn rec(i: u64) -> AuditRecord {
        AuditRecord {
            time: rfc3339_from_unix_ms(i),
            session: "s".into(),
            event: Some(AuditEvent::Action),
            revision: Some(i),
            ..AuditRecord::default()
        }
    }

    #[cfg(unix)]
    fn mode_of(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_log_path_is_refused_and_its_target_untouched() {
        use std::os::unix::fs::PermissionsExt;
        let d = temp_dir("link");
        let victim = d.path().join("victim.txt");
        std::fs::write(&victim, "mine\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let p = d.path().join("audit.jsonl");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let e = AuditLog::new(p).append(&rec(1)).unwrap_err();
        assert!(e.contains("cannot open the audit log"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
        assert_eq!(mode_of(&victim), 0o644);
    }

    #[cfg(unix)]
    #[test]
    fn append_creates_an_owner_only_file_and_narrows_a_wide_one() {
        use std::os::unix::fs::PermissionsExt;
        let d = temp_dir("perm");
        let p = d.path().join("state").join("audit.jsonl");
        let log = AuditLog::new(p.clone());
        log.append(&rec(1)).unwrap();
        log.append(&rec(2)).unwrap();
        assert_eq!(mode_of(&p), 0o600);
        assert_eq!(mode_of(p.parent().unwrap()), 0o700);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with('\n'));

        let wide = d.path().join("wide.jsonl");
        std::fs::write(&wide, "").unwrap();
        std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o644)).unwrap();
        AuditLog::new(wide.clone()).append(&rec(3)).unwrap();
        assert_eq!(mode_of(&wide), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_at_the_path_does_not_hang() {
        let d = temp_dir("fifo");
        let p = d.path().join("audit.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg("-m")
            .arg("600")
            .arg(&p)
            .status()
            .unwrap();
        assert!(made.success());
        let t0 = std::time::Instant::now();
        // No reader: the non-blocking open fails at once (ENXIO).
        let r = AuditLog::new(p.clone()).append(&rec(1));
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
        let e = r.unwrap_err();
        assert!(e.contains(&p.display().to_string()), "{e}");
    }

    #[test]
    fn read_tail_returns_the_last_records_in_order_across_blocks() {
        let d = temp_dir("tail");
        let p = d.path().join("audit.jsonl");
        let log = AuditLog::new(p.clone());
        let mut i = 0;
        while std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0) < 3 * TAIL_BLOCK {
            i += 1;
            log.append(&rec(i)).unwrap();
        }
        let total = i;
        for n in [1usize, 7, 600, 1500] {
            let (got, skipped) = read_tail(&p, n).unwrap();
            assert_eq!(skipped, 0);
            assert_eq!(got.len(), n.min(total as usize));
            let want: Vec<u64> = (total + 1 - got.len() as u64..=total).collect();
            let revs: Vec<u64> = got.iter().map(|r| r.revision.unwrap()).collect();
            assert_eq!(revs, want, "n={n}");
        }
        let (all, _) = read_tail(&p, usize::MAX).unwrap();
        assert_eq!(all.len() as u64, total);
        assert_eq!(all[0].revision, Some(1));
        assert_eq!(read_tail(&p, 0).unwrap().0.len(), 0);
        assert_eq!(
            read_tail(&d.path().join("none.jsonl"), 5).unwrap(),
            (Vec::new(), 0)
        );
    }

    #[test]
    fn malformed_lines_are_skipped_and_counted() {
        let d = temp_dir("bad");
        let p = d.path().join("audit.jsonl");
        let mut text = String::new();
        text.push_str(&rec(1).to_line());
        text.push_str("\nnot json\n\n");
        text.push_str(&rec(2).to_line());
        text.push_str("\n{\"time\": 3}\n");
        text.push_str(&rec(3).to_line());
        text.push_str("\n{\"truncated\":");
        std::fs::write(&p, text).unwrap();
        let (got, skipped) = read_tail(&p, 2).unwrap();
        assert_eq!(
            got.iter().map(|r| r.revision).collect::<Vec<_>>(),
            [Some(2), Some(3)]
        );
        assert_eq!(skipped, 2, "the torn last line and `{{\"time\": 3}}`");
        let (got, skipped) = read_tail(&p, 10).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(skipped, 3);
    }

    #[test]
    fn a_record_formats_as_one_sanitized_line() {
        let r = AuditRecord {
            time: "2026-11-29T20:00:00.123Z".into(),
            session: "s".into(),
            device: None,
            event: Some(AuditEvent::GrantRebound),
            grant_id: Some("g1".into()),
            scope: Some("desktop".into()),
            issuer: Some("agent".into()),
            app: Some("mouse\npad".into()),
            pid: Some(42),
            op: Some("set_value".into()),
            role: Some("textbox".into()),
            fingerprint: Some("ab12".into()),
            text_len: Some(7),
            channel: Some("a11y".into()),
            status: Some("executed".into()),
            code: None,
            revision: Some(3),
            approved_by: Some("approve:ab".into()),
            capture: None,
        };
        let line = format_record(&r);
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with("2026-11-29T20:00:00.123Z grant.rebound grant=g1 desktop agent mouse"),
            "{line}"
        );
        assert!(
            line.ends_with(
                "pad(42) set_value textbox fp=ab12 a11y executed text_len=7 rev=3 approved_by=approve:ab"
            ),
            "{line}"
        );
        let bare = AuditRecord {
            time: "t".into(),
            pid: Some(9),
            ..AuditRecord::default()
        };
        assert_eq!(format_record(&bare), "t pid=9");
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339_from_unix_ms(0), "1970-01-01T00:00:00.000Z");
        // 2026-11-29T20:00:00.123Z: 20_786 days after the epoch, + 20 h.
        assert_eq!(
            rfc3339_from_unix_ms(20_786 * 86_400_000 + 20 * 3_600_000 + 123),
            "2026-11-29T20:00:00.123Z"
        );
        // Leap days: 2000 is a leap year (÷400), 2100 is not (÷100).
        assert_eq!(
            rfc3339_from_unix_ms(11_016 * 86_400_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339_from_unix_ms(47_541 * 86_400_000 + 999),
            "2100-03-01T00:00:00.999Z"
        );
        let now = now_rfc3339();
        assert_eq!(now.len(), 24, "{now}");
        let b = now.as_bytes();
        assert_eq!(
            (b[4], b[7], b[10], b[13], b[16], b[19], b[23]),
            (b'-', b'-', b'T', b':', b':', b'.', b'Z')
        );
        assert!(now.as_str() >= "2025-01-01", "{now}");
    }
}

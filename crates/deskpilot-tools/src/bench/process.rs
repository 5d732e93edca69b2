//! One whole process, timed: how the bench measures CLI start-up (deskpilot's own
//! commands and the peers' CLIs).
//!
//! Owns spawning a command with a given environment, draining its stdout and stderr,
//! and reaping it with `wait4(2)`, which returns the child's own peak resident set
//! (`ru_maxrss`, KiB) along with its exit status. The wall time runs from just
//! before `fork` to the reap: start-up, the work, and exit, as a shell user waits
//! for it.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// One finished process.
#[derive(Debug, Clone)]
pub struct Run {
    /// Spawn to reap, ms.
    pub ms: f64,
    /// Peak resident set of the child, MiB (`ru_maxrss` / 1024).
    pub peak_rss_mib: f64,
    /// Exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The process exited 0.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// The failure as an error naming the command, with the end of its stderr.
    pub fn failure(&self, what: &str) -> ComputerError {
        let tail: String = {
            let s = self.stderr.trim();
            let start = s.char_indices().rev().nth(400).map_or(0, |(i, _)| i);
            s[start..].to_string()
        };
        ComputerError::new(
            ErrorCode::Internal,
            format!(
                "{what} exited with {}: {}",
                self.code
                    .map_or("a signal".to_string(), |c| format!("code {c}")),
                deskpilot_core::sanitize::one_line(&tail)
            ),
        )
    }
}

/// Spawns `cmd` with exactly `env` (nothing inherited), stdout piped, and `stdin`
/// and `stderr` as given; `program` names it in the error.
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when it cannot be started.
pub fn spawn(
    mut cmd: Command,
    env: &BTreeMap<String, String>,
    stdin: Stdio,
    stderr: Stdio,
    program: &str,
) -> Result<std::process::Child> {
    cmd.env_clear()
        .envs(env)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| {
            ComputerError::new(
                ErrorCode::PlatformUnsupported,
                format!("cannot start {program}: {e}"),
            )
        })
}

/// GNU time, which `scripts/install-deps` installs (Debian package `time`).
pub const GNU_TIME: &str = "/usr/bin/time";

/// Runs `argv` with exactly `env` (nothing inherited) and stdin closed, to its end,
/// under [`GNU_TIME`] (a program that cannot be started exits 127, as GNU time
/// reports it).
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when GNU time or the program cannot be
/// started; `COMPUTER_INTERNAL` when it cannot be reaped or GNU time reports no
/// memory.
pub fn run(argv: &[String], env: &BTreeMap<String, String>) -> Result<Run> {
    run_within(argv, env, OWN_LIMIT)?.ok_or_else(|| {
        ComputerError::new(
            ErrorCode::Timeout,
            format!(
                "{} did not finish within {} s",
                argv.join(" "),
                OWN_LIMIT.as_secs()
            ),
        )
    })
}

/// Longest a process of [`run`] may take (any of deskpilot's own commands on the
/// bench apps takes well under a second).
pub const OWN_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// [`run`], killed (its whole process group) once it has run for `limit`: `None`
/// then. A peer's read of a huge tree (every cell of a spreadsheet) may never end.
pub fn run_within(
    argv: &[String],
    env: &BTreeMap<String, String>,
    limit: std::time::Duration,
) -> Result<Option<Run>> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let program = argv
        .first()
        .ok_or_else(|| ComputerError::new(ErrorCode::InvalidArgument, "an empty command"))?;
    if !std::path::Path::new(GNU_TIME).exists() {
        return Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!("{GNU_TIME} (GNU time) is missing; run scripts/install-deps"),
        ));
    }
    let report = std::env::temp_dir().join(format!(
        "deskpilot-bench-time-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let started = Instant::now();
    let mut time = Command::new(GNU_TIME);
    time.args(["-f", "%M", "-o"])
        .arg(&report)
        .arg("--")
        .args(argv);
    // A group of its own, so a watchdog can end it with everything it started.
    deskpilot_os::own_process_group(&mut time);
    let mut child = spawn(time, env, Stdio::null(), Stdio::piped(), program)?;
    let group = child.id();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(limit).is_err() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
            return true;
        }
        false
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let err = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let status = child.wait().map_err(|e| {
        ComputerError::new(ErrorCode::Internal, format!("cannot reap {program}: {e}"))
    })?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let _ = done.send(());
    if watchdog.join().unwrap_or(false) {
        let _ = std::fs::remove_file(&report);
        return Ok(None);
    }
    // GNU time's last line is `%M`, KiB (a line saying the command failed or was
    // signalled may come first).
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    let kib: f64 = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| {
            ComputerError::new(
                ErrorCode::Internal,
                format!("GNU time reported no memory for {program}: {text:?}"),
            )
        })?;
    Ok(Some(Run {
        ms,
        peak_rss_mib: kib / 1024.0,
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_timed_and_its_memory_read() {
        let env = BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]);
        let argv = ["/bin/sh", "-c", "printf hi; printf oops >&2; exit 3"].map(String::from);
        let r = run(&argv, &env).unwrap();
        assert_eq!(r.code, Some(3));
        assert_eq!(r.stdout, "hi");
        assert_eq!(r.stderr, "oops");
        assert!(r.ms > 0.0);
        assert!(r.peak_rss_mib > 0.1, "{r:?}");
        assert!(!r.ok());
        // GNU time says it could not run the program, and exits 127.
        let missing = run(&["/nonexistent/x".to_string()], &env).unwrap();
        assert_eq!(missing.code, Some(127));
        let sleep = ["/bin/sh", "-c", "sleep 30"].map(String::from);
        let t = Instant::now();
        let killed = run_within(&sleep, &env, std::time::Duration::from_millis(300)).unwrap();
        assert!(killed.is_none(), "killed at its limit");
        assert!(t.elapsed() < std::time::Duration::from_secs(10));
    }
}

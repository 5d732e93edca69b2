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

/// Runs `argv` with exactly `env` (nothing inherited) and stdin closed, to its end.
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when the program cannot be started;
/// `COMPUTER_INTERNAL` when it cannot be reaped.
pub fn run(argv: &[String], env: &BTreeMap<String, String>) -> Result<Run, ComputerError> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| ComputerError::new(ErrorCode::InvalidArgument, "an empty command"))?;
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            ComputerError::new(
                ErrorCode::PlatformUnsupported,
                format!("cannot start {program}: {e}"),
            )
        })?;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let err = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is this process's own unreaped child; both pointers are valid
    // for the call.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if reaped != pid {
        return Err(ComputerError::new(
            ErrorCode::Internal,
            format!(
                "cannot reap {program}: {}",
                std::io::Error::last_os_error()
            ),
        ));
    }
    // The child is reaped: `Child`'s drop neither waits nor kills.
    drop(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ok(Run {
        ms,
        peak_rss_mib: usage.ru_maxrss as f64 / 1024.0,
        code,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
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
        let missing = run(&["/nonexistent/x".to_string()], &env).unwrap_err();
        assert_eq!(missing.code, ErrorCode::PlatformUnsupported);
    }
}

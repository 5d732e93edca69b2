//! One `adb` call: a child process bounded in time, its failures sorted into error
//! codes that say what to do, and the quoting the device's shell needs.
//!
//! `adb shell ARGS…` and `adb exec-out ARGS…` join their arguments with spaces and
//! the device's `sh -c` splits the line again, so every device command is sent as
//! one line whose words are quoted here ([`sh_line`]).

use std::borrow::Cow;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// Where `adb` is and which device it talks to.
#[derive(Debug, Clone)]
pub(crate) struct Adb {
    pub program: PathBuf,
    pub serial: Option<String>,
    pub env: Vec<(String, String)>,
}

/// What a call that exited 0 printed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Output {
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Output {
    /// Stdout as text (lossy), trimmed.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_string()
    }
}

/// What to do when the device has not authorized this computer.
pub(crate) const UNAUTHORIZED_FIX: &str = "unlock the phone and accept the \"Allow USB debugging?\" prompt (tick \"Always allow from this computer\"), then try again";
/// What to do when the device is offline.
pub(crate) const OFFLINE_FIX: &str = "reconnect the cable (or run `adb reconnect`), wait for `adb devices` to say \"device\", then try again";
/// What to do when no device is attached.
pub(crate) const NO_DEVICE_FIX: &str = "connect the phone with USB debugging on (Settings › System › Developer options), or `adb connect HOST:PORT` for a device on the network; `adb devices` lists what adb sees";
/// What to do when several devices are attached and none was named.
pub(crate) const SEVERAL_FIX: &str =
    "name one with --device adb:SERIAL (the serials are in `adb devices`)";

impl Adb {
    /// `adb [-s SERIAL] ARGS` within `timeout_ms`; `device` false leaves `-s` out
    /// (`adb version`, `adb devices`).
    ///
    /// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when adb is missing; past the
    /// deadline `COMPUTER_NOT_RESPONDING` (the child is killed); a non-zero exit
    /// status sorted by [`failure`].
    pub async fn run(&self, args: &[&str], timeout_ms: u64, device: bool) -> Result<Output> {
        let shown = self.shown(args, device);
        let mut cmd = tokio::process::Command::new(&self.program);
        if device && let Some(s) = &self.serial {
            cmd.arg("-s").arg(s);
        }
        cmd.args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ComputerError::new(
                    ErrorCode::PlatformUnsupported,
                    format!(
                        "the adb program {:?} was not found: install Android's platform tools (Debian: `apt-get install adb`) or set DESKPILOT_ADB to the adb executable",
                        self.program
                    ),
                )
            } else {
                ComputerError::internal(format!("cannot start `{shown}`: {e}"))
            }
        })?;
        let out = match tokio::time::timeout(
            Duration::from_millis(timeout_ms),
            child.wait_with_output(),
        )
        .await
        {
            Err(_) => {
                return Err(ComputerError::new(
                    ErrorCode::NotResponding,
                    format!(
                        "`{shown}` did not finish within {timeout_ms} ms and was stopped; check the device with `deskpilot doctor --device adb`"
                    ),
                ));
            }
            Ok(Err(e)) => return Err(ComputerError::internal(format!("`{shown}`: {e}"))),
            Ok(Ok(o)) => o,
        };
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(failure(
                &shown,
                out.status.code(),
                &stderr,
                &String::from_utf8_lossy(&out.stdout),
            ));
        }
        Ok(Output {
            stdout: out.stdout,
            stderr,
        })
    }

    fn shown(&self, args: &[&str], device: bool) -> String {
        let mut s = String::from("adb");
        if device && let Some(serial) = &self.serial {
            s.push_str(&format!(" -s {serial}"));
        }
        for a in args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// The error for an adb call that exited with `status`: adb's own complaints about
/// the device (unauthorized, offline, missing, several) get their code and what to
/// do; anything else is `COMPUTER_INTERNAL` quoting what the command printed.
pub(crate) fn failure(
    shown: &str,
    status: Option<i32>,
    stderr: &str,
    stdout: &str,
) -> ComputerError {
    let said = format!("{} {}", stderr.trim(), stdout.trim());
    let said = said.trim();
    let lower = said.to_lowercase();
    let (code, why, fix) = if lower.contains("unauthorized") {
        (
            ErrorCode::OsPermissionMissing,
            "the device has not authorized this computer for USB debugging",
            UNAUTHORIZED_FIX,
        )
    } else if lower.contains("device offline") || lower.contains("error: offline") {
        (
            ErrorCode::NotResponding,
            "the device is offline",
            OFFLINE_FIX,
        )
    } else if lower.contains("no devices/emulators found")
        || lower.contains("device not found")
        || (lower.contains("device '") && lower.contains("not found"))
    {
        (
            ErrorCode::NotResponding,
            "adb finds no such device",
            NO_DEVICE_FIX,
        )
    } else if lower.contains("more than one device") {
        (
            ErrorCode::InvalidArgument,
            "more than one device is attached",
            SEVERAL_FIX,
        )
    } else {
        let status = status.map_or_else(|| "a signal".to_string(), |s| s.to_string());
        return ComputerError::new(
            ErrorCode::Internal,
            format!(
                "`{shown}` failed (exit status {status}): {}",
                cut(said, 600)
            ),
        );
    };
    ComputerError::new(
        code,
        format!("{why} (`{shown}`: {}); {fix}", cut(said, 200)),
    )
}

fn cut(s: &str, max: usize) -> Cow<'_, str> {
    if s.chars().count() <= max {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{}…", s.chars().take(max).collect::<String>()))
    }
}

/// `word` as one word of a POSIX `sh` command line: unchanged when it holds only
/// letters, digits and `_@%+=:,./-`, else in single quotes (a `'` inside written
/// `'\''`). The empty word is `''`.
pub fn sh_quote(word: &str) -> Cow<'_, str> {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

/// The device command line for `words`: each [`sh_quote`]d, joined by spaces.
pub fn sh_line(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| sh_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_the_shell_would_touch_them() {
        assert_eq!(
            sh_line(&["input", "tap", "540", "737"]),
            "input tap 540 737"
        );
        assert_eq!(sh_quote("a%sb"), "a%sb");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("it's $HOME; `x` & *"), r"'it'\''s $HOME; `x` & *'");
        assert_eq!(sh_quote("/data/local/tmp/x.xml"), "/data/local/tmp/x.xml");
    }

    #[test]
    fn device_complaints_get_their_codes_and_what_to_do() {
        let e = failure(
            "adb get-state",
            Some(1),
            "error: device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set",
            "",
        );
        assert_eq!(e.code, ErrorCode::OsPermissionMissing);
        assert!(e.message.contains("Allow USB debugging"), "{}", e.message);
        let e = failure("adb shell x", Some(1), "error: device offline", "");
        assert_eq!(e.code, ErrorCode::NotResponding);
        let e = failure(
            "adb get-state",
            Some(1),
            "error: no devices/emulators found",
            "",
        );
        assert_eq!(e.code, ErrorCode::NotResponding);
        assert!(e.message.contains("adb connect"), "{}", e.message);
        let e = failure(
            "adb -s x get-state",
            Some(1),
            "adb: device 'x' not found",
            "",
        );
        assert_eq!(e.code, ErrorCode::NotResponding);
        let e = failure(
            "adb shell x",
            Some(1),
            "adb: more than one device/emulator",
            "",
        );
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = failure("adb shell x", Some(2), "boom", "");
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(e.message.contains("exit status 2") && e.message.contains("boom"));
    }
}

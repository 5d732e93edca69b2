//! `--device`: which machine's desktop the host drives (docs/ARCHITECTURE.md §15).
//!
//! `local` (this machine's desktop or sandbox), `ssh:[user@]host[:port]` (a Linux
//! machine that runs `deskpilot driver` over `ssh -T`), `adb[:serial]` (an Android
//! device through `adb`). Whatever the device, the policy, refs, approvals, stop and
//! audit stay on this machine.

use std::ffi::OsString;

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// A device named by `--device`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Device {
    /// This machine's desktop (or a sandbox on it).
    #[default]
    Local,
    /// A Linux machine reached with `ssh -T`.
    Ssh {
        /// `user@host` or `host`.
        dest: String,
        port: Option<u16>,
    },
    /// An Android device through `adb`; `None`: the only one attached.
    Adb { serial: Option<String> },
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Local => f.write_str("local"),
            Device::Ssh { dest, port: None } => write!(f, "ssh:{dest}"),
            Device::Ssh {
                dest,
                port: Some(p),
            } => write!(f, "ssh:{dest}:{p}"),
            Device::Adb { serial: None } => f.write_str("adb"),
            Device::Adb { serial: Some(s) } => write!(f, "adb:{s}"),
        }
    }
}

/// A host, user or serial part: letters, digits and `._-` (and `:` in a serial),
/// never starting with `-`, so no part of a device name can become an option of
/// `ssh` or `adb`.
fn plain(s: &str, extra: &[char]) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c) || extra.contains(&c))
}

impl Device {
    /// Parses `local`, `ssh:[user@]host[:port]` or `adb[:serial]`.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` naming the accepted forms.
    pub fn parse(s: &str) -> Result<Device> {
        let bad = |why: &str| {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "--device {s:?}: {why}; use local, ssh:[user@]host[:port] (e.g. ssh:alice@lab:2222) or adb[:serial] (e.g. adb:emulator-5554)"
                ),
            )
        };
        if s == "local" {
            return Ok(Device::Local);
        }
        if s == "adb" {
            return Ok(Device::Adb { serial: None });
        }
        if let Some(serial) = s.strip_prefix("adb:") {
            if !plain(serial, &[':']) {
                return Err(bad("a serial is letters, digits and . _ - :"));
            }
            return Ok(Device::Adb {
                serial: Some(serial.to_owned()),
            });
        }
        let Some(rest) = s.strip_prefix("ssh:") else {
            return Err(bad("unknown kind of device"));
        };
        let (dest, port) = match rest.rsplit_once(':') {
            Some((d, p)) => {
                let port: u16 = p
                    .parse()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
                (d, Some(port))
            }
            None => (rest, None),
        };
        let (user, host) = match dest.split_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, dest),
        };
        if !plain(host, &[]) || user.is_some_and(|u| !plain(u, &[])) {
            return Err(bad(
                "a user and host are letters, digits and . _ - (not starting with -)",
            ));
        }
        Ok(Device::Ssh {
            dest: dest.to_owned(),
            port,
        })
    }

    /// The device is not this machine's desktop.
    pub fn is_remote(&self) -> bool {
        *self != Device::Local
    }

    /// The command that opens a driver link to an `ssh:` device: `ssh -T -o
    /// BatchMode=yes [-p PORT] $DESKPILOT_SSH_OPTIONS -o ServerAliveInterval=5 -o
    /// ServerAliveCountMax=3 -- DEST $DESKPILOT_REMOTE_COMMAND driver`. `DESKPILOT_SSH` replaces the `ssh` program, `DESKPILOT_SSH_OPTIONS`
    /// adds options (split on whitespace, e.g. `-F ~/.ssh/lab_config -i key`), and
    /// `DESKPILOT_REMOTE_COMMAND` is the remote `deskpilot` (default `deskpilot`, found
    /// on the remote login PATH). `BatchMode` makes a missing key fail at once
    /// instead of asking for a password on the protocol's terminal.
    pub fn ssh_command(&self) -> Option<(OsString, Vec<OsString>)> {
        let var = |k: &str| std::env::var(k).ok();
        self.ssh_command_with(
            std::env::var_os("DESKPILOT_SSH"),
            var("DESKPILOT_SSH_OPTIONS").as_deref(),
            var("DESKPILOT_REMOTE_COMMAND").as_deref(),
        )
    }

    /// [`Device::ssh_command`] with the three settings given instead of read from
    /// the environment (`None` or empty: the default).
    pub fn ssh_command_with(
        &self,
        program: Option<OsString>,
        options: Option<&str>,
        remote: Option<&str>,
    ) -> Option<(OsString, Vec<OsString>)> {
        let Device::Ssh { dest, port } = self else {
            return None;
        };
        let program = program
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "ssh".into());
        let mut args: Vec<OsString> = vec!["-T".into(), "-o".into(), "BatchMode=yes".into()];
        if let Some(p) = port {
            args.extend(["-p".into(), p.to_string().into()]);
        }
        if let Some(extra) = options {
            args.extend(extra.split_whitespace().map(OsString::from));
        }
        // A network that went away is noticed within 15 s instead of the TCP
        // timeout; after the user's options, so theirs win (ssh keeps the first).
        for o in ["ServerAliveInterval=5", "ServerAliveCountMax=3"] {
            args.extend(["-o".into(), o.into()]);
        }
        let remote = remote
            .filter(|s| !s.trim().is_empty())
            .unwrap_or("deskpilot");
        args.push("--".into());
        args.push(dest.into());
        // The remote shell runs this line: the remote command as the user wrote it,
        // then `driver`.
        args.push(format!("{remote} driver").into());
        Some((program, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_prints_it_back() {
        for s in [
            "local",
            "ssh:lab",
            "ssh:alice@lab",
            "ssh:alice@lab.example.org:2222",
            "ssh:127.0.0.1:22",
            "adb",
            "adb:emulator-5554",
            "adb:192.168.1.5:5555",
        ] {
            assert_eq!(Device::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(
            Device::parse("ssh:bob@h:2200").unwrap(),
            Device::Ssh {
                dest: "bob@h".into(),
                port: Some(2200)
            }
        );
    }

    #[test]
    fn refuses_what_could_become_an_option_or_a_shell_word() {
        for s in [
            "",
            "ssh:",
            "ssh:-oProxyCommand=sh",
            "ssh:-p",
            "ssh:a@-b",
            "ssh:-u@h",
            "ssh:h:0",
            "ssh:h:70000",
            "ssh:h:x",
            "ssh:h;rm",
            "ssh:h b",
            "ssh:a@b@c",
            "adb:",
            "adb:-s",
            "adb:x y",
            "phone",
            "ssh://h",
        ] {
            let e = Device::parse(s).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{s:?}");
            assert!(e.message.contains("ssh:[user@]host[:port]"), "{s:?}");
        }
    }

    #[test]
    fn the_ssh_command_ends_options_before_the_destination() {
        let d = Device::parse("ssh:alice@lab:2222").unwrap();
        let (_, args) = d.ssh_command().unwrap();
        let args: Vec<String> = args.into_iter().map(|a| a.into_string().unwrap()).collect();
        let dd = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[dd + 1], "alice@lab");
        assert!(args[dd + 2].ends_with(" driver"), "{args:?}");
        assert!(args.windows(2).any(|w| w == ["-p", "2222"]));
        assert!(args.windows(2).any(|w| w == ["-o", "BatchMode=yes"]));
        assert!(
            args.windows(2)
                .any(|w| w == ["-o", "ServerAliveInterval=5"])
        );
        assert!(Device::Local.ssh_command().is_none());
        // The user's options come before deskpilot's defaults, so theirs win.
        let (_, args) = d
            .ssh_command_with(None, Some("-o ServerAliveInterval=60 -F cfg"), None)
            .unwrap();
        let args: Vec<String> = args.into_iter().map(|a| a.into_string().unwrap()).collect();
        let user = args
            .iter()
            .position(|a| a == "ServerAliveInterval=60")
            .unwrap();
        let ours = args
            .iter()
            .position(|a| a == "ServerAliveInterval=5")
            .unwrap();
        assert!(user < ours, "{args:?}");
    }
}

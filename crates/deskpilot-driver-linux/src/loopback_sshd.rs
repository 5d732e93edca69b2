//! A throwaway OpenSSH server on 127.0.0.1, for measuring and testing the `ssh:`
//! device link against a real `sshd` on one machine (docs/ARCHITECTURE.md §15).
//!
//! [`LoopbackSshd::start`] makes a host key and a user key in a directory of the
//! caller's (`ssh-keygen -t ed25519`), authorizes only that user key for the
//! current user, and runs `/usr/sbin/sshd -D -e -f DIR/sshd_config` on a free
//! loopback port: no password or keyboard-interactive login, no PAM, and the
//! sessions get the environment the caller names (`SetEnv`, OpenSSH 8.7+), which is
//! how the far side's `deskpilot driver` finds its desktop. The client side is a
//! config file with one `Host` ([`HOST_ALIAS`]) whose host key is pinned
//! (`StrictHostKeyChecking yes` against a known-hosts file holding exactly that
//! key), passed to `ssh` as `-F FILE` ([`LoopbackSshd::ssh_options`]). The server is
//! killed when the value is dropped; the directory stays the caller's, with the
//! server's messages in `DIR/sshd.log`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// The `Host` name of the client config: the device is `ssh:deskpilot-loopback`.
pub const HOST_ALIAS: &str = "deskpilot-loopback";
/// The server binary of Debian's `openssh-server`.
pub const SSHD: &str = "/usr/sbin/sshd";
/// How long the server may take to listen.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(20);

/// A running loopback `sshd`; killed when dropped.
pub struct LoopbackSshd {
    child: Child,
    port: u16,
    client_config: PathBuf,
}

fn missing(what: &str, package: &str, e: &std::io::Error) -> ComputerError {
    ComputerError::new(
        ErrorCode::PlatformUnsupported,
        format!("cannot run {what} ({e}): install the Debian package {package}"),
    )
}

fn io(what: &str, e: std::io::Error) -> ComputerError {
    ComputerError::internal(format!("{what}: {e}"))
}

fn keygen(path: &Path) -> Result<()> {
    let st = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "deskpilot-loopback",
            "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| missing("ssh-keygen", "openssh-client", &e))?;
    if st.success() {
        Ok(())
    } else {
        Err(ComputerError::internal(format!(
            "ssh-keygen for {} failed ({st})",
            path.display()
        )))
    }
}

fn current_user() -> Result<String> {
    let out = Command::new("id")
        .arg("-un")
        .output()
        .map_err(|e| io("id -un", e))?;
    let user = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if user.is_empty() {
        return Err(ComputerError::internal("id -un named no user"));
    }
    Ok(user)
}

impl LoopbackSshd {
    /// Starts the server with its keys and configs in `dir` (created if missing;
    /// existing keys are replaced). `env` is what every session sees, as `NAME`,
    /// `VALUE` pairs; a value may not hold whitespace or `"` (sshd_config syntax).
    ///
    /// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` naming the Debian package when
    /// `sshd` or `ssh-keygen` is missing; `COMPUTER_INVALID_ARGUMENT` for an
    /// environment value sshd_config cannot hold; `COMPUTER_INTERNAL` when the
    /// server exits or does not listen within 20 s.
    pub fn start(dir: &Path, env: &[(String, String)]) -> Result<LoopbackSshd> {
        let unwritable = |s: &str| s.chars().any(|c| c.is_whitespace() || c == '"');
        for (k, v) in env {
            if k.is_empty() || k.contains('=') || unwritable(k) || unwritable(v) {
                return Err(ComputerError::invalid(format!(
                    "session environment {k}={v:?} cannot be written to sshd_config"
                )));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| io(&dir.display().to_string(), e))?;
        let host_key = dir.join("host_key");
        let user_key = dir.join("user_key");
        for k in [&host_key, &user_key] {
            let _ = std::fs::remove_file(k);
            let _ = std::fs::remove_file(k.with_extension("pub"));
            keygen(k)?;
        }
        let authorized = dir.join("authorized_keys");
        std::fs::copy(dir.join("user_key.pub"), &authorized)
            .map_err(|e| io("authorized_keys", e))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| io("a free loopback port", e))?
            .port();
        let user = current_user()?;
        let set_env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
             AuthorizedKeysFile {ak}\nStrictModes no\nUsePAM no\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
             AllowUsers {user}\nLogLevel ERROR\n",
            hk = host_key.display(),
            pid = dir.join("sshd.pid").display(),
            ak = authorized.display(),
        );
        if !set_env.is_empty() {
            config.push_str(&format!("SetEnv {}\n", set_env.join(" ")));
        }
        let config_path = dir.join("sshd_config");
        std::fs::write(&config_path, config).map_err(|e| io("sshd_config", e))?;
        // Privilege separation needs its directory when sshd runs as root.
        if user == "root" {
            std::fs::create_dir_all("/run/sshd").map_err(|e| io("/run/sshd", e))?;
        }
        let log_path = dir.join("sshd.log");
        let log = std::fs::File::create(&log_path).map_err(|e| io("sshd.log", e))?;
        let mut child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| missing(SSHD, "openssh-server", &e))?;
        let said = || {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let last: Vec<&str> = text.lines().rev().take(3).collect();
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(st)) = child.try_wait() {
                return Err(ComputerError::internal(format!(
                    "sshd exited before listening on 127.0.0.1:{port} ({st}): {}",
                    said()
                )));
            }
            if started.elapsed() > LISTEN_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ComputerError::internal(format!(
                    "sshd did not listen on 127.0.0.1:{port} within {} s: {}",
                    LISTEN_TIMEOUT.as_secs(),
                    said()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let server = LoopbackSshd {
            child,
            port,
            client_config: dir.join("ssh_config"),
        };
        let host_pub = std::fs::read_to_string(host_key.with_extension("pub"))
            .map_err(|e| io("host_key.pub", e))?;
        let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        let known_hosts = dir.join("known_hosts");
        std::fs::write(
            &known_hosts,
            format!("[127.0.0.1]:{port} {}\n", key.join(" ")),
        )
        .map_err(|e| io("known_hosts", e))?;
        std::fs::write(
            &server.client_config,
            format!(
                "Host {HOST_ALIAS}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {kh}\n  \
                 GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  \
                 LogLevel ERROR\n",
                key = user_key.display(),
                kh = known_hosts.display(),
            ),
        )
        .map_err(|e| io("ssh_config", e))?;
        Ok(server)
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The client config file (`Host deskpilot-loopback`).
    pub fn client_config(&self) -> &Path {
        &self.client_config
    }

    /// `ssh` options that reach the server as [`HOST_ALIAS`]: `-F CONFIG`, the value
    /// of `DESKPILOT_SSH_OPTIONS`.
    pub fn ssh_options(&self) -> String {
        format!("-F {}", self.client_config.display())
    }

    /// The device name that reaches the server: `ssh:deskpilot-loopback`.
    pub fn device(&self) -> String {
        format!("ssh:{HOST_ALIAS}")
    }
}

impl Drop for LoopbackSshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

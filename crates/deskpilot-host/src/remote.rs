//! A driver on another machine: [`LinkDriver`] runs a command whose stdin/stdout
//! carry the driver protocol (`ssh -T HOST deskpilot driver`, docs/ARCHITECTURE.md
//! §15) and speaks to it through [`RpcDriver`].
//!
//! The link is opened on the first call (with a `hello` that checks the protocol
//! version) and reopened on the first call after it dropped: a call cut off by a
//! dropped link fails with `COMPUTER_NOT_RESPONDING` at once (never later than its
//! deadline), and the call after it starts a fresh link. The policy never travels:
//! this side holds the refs, the grant, approvals, stop and audit; the remote side
//! reports facts (pids, uids, executables, app names) and applies its own machine's
//! refusals as well (`deskpilot driver` is guarded).

use std::ffi::OsString;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskpilot_protocol::Result;
use deskpilot_protocol::rpc::{RpcDriver, RpcOptions};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// Longest wait for a new link's `hello`: 20 s (an ssh connection that has to
/// resolve, handshake and start a remote process; a LAN link takes ~100–300 ms).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// This build's version (the workspace's; every driver crate reports the same in
/// its `hello`).
pub const HOST_VERSION: &str = env!("CARGO_PKG_VERSION");

/// How a remote driver's build relates to this host's (docs/ARCHITECTURE.md §15
/// "Versions"), compared on `MAJOR.MINOR.PATCH` with any pre-release or build
/// suffix ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionGap {
    /// The same release.
    Same,
    /// Only the patch differs: used, with a warning on stderr.
    Patch,
    /// The major or minor differs, or a version does not parse: the link is
    /// refused (`COMPUTER_PLATFORM_UNSUPPORTED`), on every connect, reconnects
    /// after a dropped link included.
    Incompatible,
}

/// [`VersionGap`] between `host` and `remote` (pure).
pub fn version_gap(host: &str, remote: &str) -> VersionGap {
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let core = v.trim().split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let t = (parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(t)
    };
    match (parse(host), parse(remote)) {
        (Some(h), Some(r)) if h == r => VersionGap::Same,
        (Some(h), Some(r)) if (h.0, h.1) == (r.0, r.1) => VersionGap::Patch,
        _ => VersionGap::Incompatible,
    }
}

/// `MAJOR.MINOR.x` of a version, for the remedy of a refused link.
fn minor_line(v: &str) -> String {
    let mut parts = v.split('.');
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => format!("{a}.{b}.x"),
        _ => v.to_owned(),
    }
}

/// A [`Driver`] served by a child process's stdio, reconnected after it drops.
pub struct LinkDriver {
    /// What the link is to, for messages (`ssh:alice@lab`).
    name: String,
    program: OsString,
    args: Vec<OsString>,
    opts: RpcOptions,
    link: Mutex<Option<Link>>,
}

struct Link {
    rpc: Arc<RpcDriver>,
    hello: Hello,
    // Killed when the link is replaced or the driver dropped (`kill_on_drop`).
    _child: Child,
}

impl std::fmt::Debug for LinkDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkDriver")
            .field("name", &self.name)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

impl LinkDriver {
    /// A driver reached by running `program args…`; `name` says what it is in
    /// errors. Nothing runs until the first call.
    pub fn new(name: &str, program: OsString, args: Vec<OsString>, opts: RpcOptions) -> Self {
        LinkDriver {
            name: name.to_owned(),
            program,
            args,
            opts,
            link: Mutex::new(None),
        }
    }

    /// The link's name (`ssh:alice@lab`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The live link's client, opening one when there is none or the last one
    /// dropped.
    async fn rpc(&self) -> Result<Arc<RpcDriver>> {
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref() {
            if link.rpc.closed_reason().is_none() {
                return Ok(Arc::clone(&link.rpc));
            }
            tracing::info!("{}: the link dropped; reconnecting", self.name);
        }
        *slot = None;
        let link = self.connect().await?;
        let rpc = Arc::clone(&link.rpc);
        *slot = Some(link);
        Ok(rpc)
    }

    async fn connect(&self) -> Result<Link> {
        let started = Instant::now();
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                ComputerError::new(
                    ErrorCode::PlatformUnsupported,
                    format!(
                        "{}: cannot run {:?}: {e}; install it (Debian: openssh-client) or put it on PATH",
                        self.name, self.program
                    ),
                )
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ComputerError::new(
                ErrorCode::Internal,
                format!("{}: the link's pipes were not opened", self.name),
            ));
        };
        let said = relay_stderr(&self.name, stderr);
        let rpc = Arc::new(RpcDriver::with_options(stdout, stdin, self.opts));
        let hello = match tokio::time::timeout(CONNECT_TIMEOUT, rpc.hello()).await {
            Ok(Ok(h)) => h,
            Ok(Err(e)) if e.code == ErrorCode::NotResponding => {
                // The far end closed before answering: ssh refused, the host is
                // unreachable, or `deskpilot` is not installed there (ssh printed why
                // on stderr).
                let status = tokio::time::timeout(Duration::from_millis(500), child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok);
                // What ssh or the remote shell said last ("Could not resolve
                // hostname", "deskpilot: command not found").
                tokio::time::sleep(Duration::from_millis(50)).await;
                let last = said
                    .lock()
                    .map(|l| l.iter().cloned().collect::<Vec<_>>().join(" / "))
                    .unwrap_or_default();
                return Err(ComputerError::link_lost(format!(
                    "{}: the link closed before the remote driver answered{}{}; check that `{}` works and that `deskpilot` is installed on the remote machine's PATH (README: Another machine or a phone)",
                    self.name,
                    status.map(|s| format!(" ({s})")).unwrap_or_default(),
                    if last.is_empty() {
                        String::new()
                    } else {
                        format!(": {last}")
                    },
                    self.command_line(),
                )));
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(ComputerError::link_lost(format!(
                    "{}: the remote driver did not say hello within {} ms",
                    self.name,
                    CONNECT_TIMEOUT.as_millis()
                )));
            }
        };
        match version_gap(HOST_VERSION, &hello.version) {
            VersionGap::Same => {}
            VersionGap::Patch => tracing::warn!(
                "{}: the remote driver is {} {}, this host {HOST_VERSION}: a patch release apart, used (install the same version on both to silence this)",
                self.name,
                hello.driver,
                hello.version
            ),
            VersionGap::Incompatible => {
                return Err(ComputerError::new(
                    ErrorCode::PlatformUnsupported,
                    format!(
                        "{}: the remote driver is {} {:?} but this host is deskpilot {HOST_VERSION}; builds whose major.minor differ may read and act differently, so the link is not used: install deskpilot {} on the remote machine (README: Another machine or a phone)",
                        self.name,
                        hello.driver,
                        hello.version,
                        minor_line(HOST_VERSION)
                    ),
                )
                .with_detail(serde_json::json!({
                    "remote_version": hello.version,
                    "host_version": HOST_VERSION,
                })));
            }
        }
        tracing::info!(
            "{}: connected to {} {} ({}) in {} ms",
            self.name,
            hello.driver,
            hello.version,
            hello.platform,
            started.elapsed().as_millis()
        );
        Ok(Link {
            rpc,
            hello,
            _child: child,
        })
    }

    fn command_line(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Names the link in an error a dropped link caused, and says the next call
    /// reconnects. A call the far side never answered within its deadline (a frozen
    /// remote driver or app) closes the link, so the next call opens a new one
    /// instead of queueing behind the frozen one.
    async fn explain(&self, rpc: &Arc<RpcDriver>, e: ComputerError) -> ComputerError {
        if let Some(reason) = rpc.closed_reason()
            && e.code == ErrorCode::NotResponding
        {
            return ComputerError::link_lost(format!(
                "{}: the link dropped during the call ({reason}); nothing more is known of its effect — observe again: the next call reconnects",
                self.name
            ));
        }
        let unanswered = e.code == ErrorCode::Timeout
            && e.detail
                .as_ref()
                .and_then(|d| d.get("unanswered"))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
        if unanswered {
            let mut slot = self.link.lock().await;
            if slot.as_ref().is_some_and(|l| Arc::ptr_eq(&l.rpc, rpc)) {
                // Kills the link's process (`kill_on_drop`).
                *slot = None;
            }
            return ComputerError::link_lost(format!(
                "{}: {}; the link was closed, so nothing more is known of the call's effect — observe again: the next call opens a new link",
                self.name, e.message
            ));
        }
        e
    }
}

/// How many of the link's last stderr lines an error quotes.
const STDERR_KEPT: usize = 4;

/// Copies the link process's stderr (ssh's messages, the remote shell's and the
/// remote driver's logs) to this process's stderr, each line prefixed with the
/// device and with escape sequences shown, not run: the far side must not move the
/// cursor over a pending question here. Returns the last lines, for errors.
fn relay_stderr(
    name: &str,
    stderr: tokio::process::ChildStderr,
) -> Arc<std::sync::Mutex<std::collections::VecDeque<String>>> {
    use tokio::io::AsyncBufReadExt as _;
    let kept = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
    let sink = Arc::clone(&kept);
    let name = name.to_owned();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line = deskpilot_core::sanitize::one_line(line.trim_end());
            if line.is_empty() {
                continue;
            }
            eprintln!("{name}: {line}");
            if let Ok(mut k) = sink.lock() {
                if k.len() == STDERR_KEPT {
                    k.pop_front();
                }
                k.push_back(line);
            }
        }
    });
    kept
}

/// Runs one call on the live link.
macro_rules! on_link {
    ($self:ident, $rpc:ident => $call:expr) => {{
        let $rpc = $self.rpc().await?;
        match $call.await {
            Ok(v) => Ok(v),
            Err(e) => Err($self.explain(&$rpc, e).await),
        }
    }};
}

#[async_trait]
impl Driver for LinkDriver {
    async fn hello(&self) -> Result<Hello> {
        self.rpc().await?;
        let slot = self.link.lock().await;
        match slot.as_ref() {
            Some(link) => Ok(link.hello.clone()),
            None => Err(ComputerError::link_lost(format!(
                "{}: the link dropped",
                self.name
            ))),
        }
    }
    async fn apps(&self) -> Result<Vec<AppInfo>> {
        on_link!(self, r => r.apps())
    }
    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        on_link!(self, r => r.launch(p))
    }
    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        on_link!(self, r => r.windows())
    }
    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        on_link!(self, r => r.activate(p))
    }
    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        on_link!(self, r => r.snapshot(p))
    }
    async fn find(&self, p: FindParams) -> Result<FindResult> {
        on_link!(self, r => r.find(p))
    }
    async fn act(&self, p: ActParams) -> Result<ActResult> {
        on_link!(self, r => r.act(p))
    }
    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        on_link!(self, r => r.subscribe(p))
    }
    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        on_link!(self, r => r.next_events(subscription, timeout_ms))
    }
    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        on_link!(self, r => r.keys(p))
    }
    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        on_link!(self, r => r.pointer(p))
    }
    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        on_link!(self, r => r.capture(p))
    }
    async fn ocr(&self, p: OcrParams) -> Result<OcrResult> {
        on_link!(self, r => r.ocr(p))
    }
    async fn clipboard_read(&self) -> Result<ClipboardContent> {
        on_link!(self, r => r.clipboard_read())
    }
    async fn clipboard_write(&self, p: ClipboardWriteParams) -> Result<ClipboardWritten> {
        on_link!(self, r => r.clipboard_write(p))
    }
    async fn clipboard_targets(&self, p: ClipboardTargetsParams) -> Result<ClipboardTargets> {
        on_link!(self, r => r.clipboard_targets(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_program_is_a_clear_error() {
        let d = LinkDriver::new(
            "ssh:nowhere",
            "/nonexistent/ssh".into(),
            vec![],
            RpcOptions::default(),
        );
        let e = d.apps().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::PlatformUnsupported);
        assert!(e.message.contains("ssh:nowhere"), "{}", e.message);
    }

    #[tokio::test]
    async fn a_link_that_closes_before_hello_says_so() {
        // `true` exits at once without a word: like ssh refusing the connection.
        let d = LinkDriver::new("ssh:refused", "true".into(), vec![], RpcOptions::default());
        let e = d.windows().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotResponding);
        assert!(e.message.contains("closed before"), "{}", e.message);
        // A second call tries again (and fails the same way), never a stale answer.
        let e = d.windows().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotResponding);
    }

    #[test]
    fn versions_a_patch_apart_are_used_and_others_refused() {
        assert_eq!(version_gap("0.1.0", "0.1.0"), VersionGap::Same);
        assert_eq!(version_gap("0.1.0", "0.1.0+abc"), VersionGap::Same);
        assert_eq!(version_gap("0.1.0", "0.1.7"), VersionGap::Patch);
        assert_eq!(version_gap("0.1.0", "0.0.1"), VersionGap::Incompatible);
        assert_eq!(version_gap("0.1.0", "9.9.9"), VersionGap::Incompatible);
        assert_eq!(version_gap("0.1.0", "0.2.0"), VersionGap::Incompatible);
        assert_eq!(version_gap("0.1.0", "1"), VersionGap::Incompatible);
        assert_eq!(version_gap("0.1.0", ""), VersionGap::Incompatible);
        assert_eq!(version_gap("0.1.0", "0.1.0.1"), VersionGap::Incompatible);
        assert_eq!(minor_line("0.1.0"), "0.1.x");
    }
}

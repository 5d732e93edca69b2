//! The control socket of a running host, and `stop` reaching every host through it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use deskpilot_protocol::ComputerError;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::{hosts_dir, scan_dirs};
#[cfg(unix)]
use crate::store::ensure_private_dir as ensure_dir;
use deskpilot_protocol::Result;

/// What a running host says about itself over its control socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub pid: u32,
    pub session: String,
    /// Desktop key the host works on.
    pub desktop: String,
    /// The grant the host holds, if any.
    pub grant_id: Option<String>,
    /// "cli", "mcp" or "run".
    pub kind: String,
}

/// Raised by `stop`; checked by a host before each action and awaited by long waits.
/// Clones share one flag. Once triggered it stays triggered.
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    inner: Arc<(AtomicBool, Notify)>,
}

impl StopSignal {
    /// A signal not yet triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal and wakes every [`StopSignal::stopped`] waiter.
    pub fn trigger(&self) {
        self.inner.0.store(true, Ordering::SeqCst);
        self.inner.1.notify_waiters();
    }

    /// Lowers the signal once the host has applied the stop (revoked its grant), so
    /// a long-lived host's later calls run again (within the stop's cooldown rules).
    pub fn clear(&self) {
        self.inner.0.store(false, Ordering::SeqCst);
    }

    /// Whether the signal has been raised.
    pub fn is_stopped(&self) -> bool {
        self.inner.0.load(Ordering::SeqCst)
    }

    /// Resolves once triggered (immediately if it already was).
    pub async fn stopped(&self) {
        loop {
            let notified = self.inner.1.notified();
            tokio::pin!(notified);
            // Register before checking, so a trigger between the check and the
            // await is not missed.
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// Longest request line accepted: 64 KiB (requests are a few dozen bytes; this only
/// bounds memory against garbage).
#[cfg(unix)]
pub(super) const MAX_LINE: usize = 64 * 1024;
/// How long a connection may sit idle between requests before the server closes it.
#[cfg(unix)]
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long `stop` waits for each host (connect + request + reply): 2 s.
#[cfg(unix)]
const STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(unix)]
pub(super) fn socket_name(pid: u32) -> String {
    format!("host-{pid}.sock")
}

/// A host's control socket, `hosts_dir()/host-<pid>.sock` (mode 0600), served by a
/// tokio task.
///
/// Protocol: one JSON object per line, one JSON line in reply.
/// `{"method":"stop"}` → triggers the signal, replies `{"ok":true,"host":HostInfo}`;
/// `{"method":"describe"}` → `{"ok":true,"host":HostInfo}`; anything else →
/// `{"ok":false,"error":"…"}`. Lines over 64 KiB get an error and the connection is
/// closed; peers of another uid get `{"ok":false,…}` and are closed. Dropping the
/// server aborts the task (and every open connection) and removes the socket file.
/// One per process: a second server in the same directory replaces the first's file.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    #[cfg(unix)]
    task: tokio::task::JoinHandle<()>,
    /// (device, inode) of the socket we bound, so Drop removes only our own file.
    #[cfg(unix)]
    ident: Option<(u64, u64)>,
}

impl ControlServer {
    /// Binds `hosts_dir()/host-<pid>.sock` and serves it in a tokio task. `info` is
    /// shared so the host can update `grant_id` as grants come and go. Must be called
    /// within a tokio runtime. Errors (`Internal`) when there is no runtime, or the
    /// socket cannot be bound (e.g. a path longer than the 107 bytes `sun_path`
    /// allows), or on non-Unix systems.
    pub fn listen(
        info: Arc<std::sync::Mutex<HostInfo>>,
        signal: StopSignal,
    ) -> Result<ControlServer> {
        Self::listen_in(&hosts_dir(), info, signal)
    }

    /// As [`ControlServer::listen`], in an explicit directory.
    #[cfg(unix)]
    pub(crate) fn listen_in(
        dir: &Path,
        info: Arc<std::sync::Mutex<HostInfo>>,
        signal: StopSignal,
    ) -> Result<ControlServer> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(ComputerError::internal(
                "control socket: listen needs a running tokio runtime",
            ));
        }
        ensure_dir(dir)?;
        let path = dir.join(socket_name(std::process::id()));
        // A file left by an earlier process that had our pid.
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path)
            .map_err(|e| ComputerError::internal(format!("cannot bind {}: {e}", path.display())))?;
        if let Err(e) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
            let _ = std::fs::remove_file(&path);
            return Err(ComputerError::internal(format!(
                "cannot chmod {}: {e}",
                path.display()
            )));
        }
        let ident = std::fs::symlink_metadata(&path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let task = tokio::spawn(serve(listener, info, signal));
        tracing::debug!(path = %path.display(), "control socket listening");
        Ok(ControlServer { path, task, ident })
    }

    #[cfg(not(unix))]
    pub(crate) fn listen_in(
        dir: &Path,
        info: Arc<std::sync::Mutex<HostInfo>>,
        signal: StopSignal,
    ) -> Result<ControlServer> {
        let _ = (dir, info, signal);
        Err(ComputerError::internal(
            "control socket: not available on this platform",
        ))
    }

    /// Path of the socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            self.task.abort();
            let same = std::fs::symlink_metadata(&self.path)
                .ok()
                .map(|m| (m.dev(), m.ino()));
            if same.is_some() && same == self.ident {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Uid of the process at the other end of a connected Unix socket.
#[cfg(unix)]
fn peer_uid(stream: &tokio::net::UnixStream) -> Option<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsFd;
        deskpilot_os::peer_uid(stream.as_fd())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        stream.peer_cred().ok().map(|c| c.uid())
    }
}

#[cfg(unix)]
fn own_uid() -> u32 {
    deskpilot_os::current_uid()
}

#[cfg(unix)]
async fn serve(
    listener: tokio::net::UnixListener,
    info: Arc<std::sync::Mutex<HostInfo>>,
    signal: StopSignal,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(handle_conn(stream, info.clone(), signal.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "control socket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

#[cfg(unix)]
fn reply_line(v: &serde_json::Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap_or_else(|_| br#"{"ok":false}"#.to_vec());
    out.push(b'\n');
    out
}

#[cfg(unix)]
fn error_reply(msg: &str) -> serde_json::Value {
    serde_json::json!({ "ok": false, "error": msg })
}

#[cfg(unix)]
/// Answers one request line (without its newline).
fn answer(
    line: &[u8],
    info: &std::sync::Mutex<HostInfo>,
    signal: &StopSignal,
) -> serde_json::Value {
    #[derive(Deserialize)]
    struct Request {
        method: String,
    }
    let req: Request = match serde_json::from_slice(line) {
        Ok(r) => r,
        Err(e) => return error_reply(&format!("bad request: {e}")),
    };
    let host = || info.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match req.method.as_str() {
        "stop" => {
            signal.trigger();
            let h = host();
            tracing::info!(pid = h.pid, session = %h.session, "stop requested over control socket");
            serde_json::json!({ "ok": true, "host": h })
        }
        "describe" => serde_json::json!({ "ok": true, "host": host() }),
        other => error_reply(&format!(
            "unknown method {other:?} (expected \"stop\" or \"describe\")"
        )),
    }
}

#[cfg(unix)]
async fn handle_conn(
    stream: tokio::net::UnixStream,
    info: Arc<std::sync::Mutex<HostInfo>>,
    signal: StopSignal,
) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let me = own_uid();
    let peer = peer_uid(&stream);
    let (rd, mut wr) = stream.into_split();
    if peer != Some(me) {
        tracing::warn!(?peer, "control socket: peer of another uid refused");
        let _ = wr
            .write_all(&reply_line(&error_reply("peer belongs to another user")))
            .await;
        return;
    }
    let mut reader = BufReader::new(rd);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut limited = (&mut reader).take(MAX_LINE as u64 + 1);
        let read = limited.read_until(b'\n', &mut buf);
        let n = match tokio::time::timeout(IDLE_TIMEOUT, read).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) | Err(_) => return,
        };
        if n == 0 {
            return;
        }
        let too_long = buf.last() != Some(&b'\n') && buf.len() > MAX_LINE;
        if too_long {
            let _ = wr
                .write_all(&reply_line(&error_reply("request line longer than 64 KiB")))
                .await;
            return;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let reply = answer(line, &info, &signal);
        if wr.write_all(&reply_line(&reply)).await.is_err() {
            return;
        }
    }
}

/// What one host answered to `stop`.
#[derive(Debug, Clone, Serialize)]
pub struct StopReply {
    /// The socket reached.
    pub socket: PathBuf,
    /// The host's description, when it acknowledged.
    pub host: Option<HostInfo>,
    /// Why this host did not acknowledge (no reply within 2 s, refusal, bad reply).
    pub error: Option<String>,
}

/// Sends `{"method":"stop"}` to every `host-*.sock` in [`scan_dirs`] except this
/// process's own, concurrently, allowing 2 s per host. A socket whose connect is
/// refused or whose file is gone is stale: its file is removed and it is not
/// reported. Returns one reply per remaining socket, sorted by path; empty on
/// non-Unix systems.
pub async fn stop_hosts() -> Vec<StopReply> {
    stop_hosts_in(&scan_dirs()).await
}

/// As [`stop_hosts`], over explicit directories.
#[cfg(unix)]
pub(crate) async fn stop_hosts_in(dirs: &[PathBuf]) -> Vec<StopReply> {
    let own = socket_name(std::process::id());
    let mut set = tokio::task::JoinSet::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !(name.starts_with("host-") && name.ends_with(".sock")) || name == own {
                continue;
            }
            set.spawn(stop_one(entry.path()));
        }
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        if let Ok(Some(reply)) = r {
            out.push(reply);
        }
    }
    out.sort_by(|a, b| a.socket.cmp(&b.socket));
    out
}

#[cfg(not(unix))]
pub(crate) async fn stop_hosts_in(dirs: &[PathBuf]) -> Vec<StopReply> {
    let _ = dirs;
    Vec::new()
}

/// Stops one host; `None` when its socket was stale (and has been removed).
#[cfg(unix)]
async fn stop_one(socket: PathBuf) -> Option<StopReply> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let fail = |socket: PathBuf, e: String| {
        Some(StopReply {
            socket,
            host: None,
            error: Some(e),
        })
    };
    let exchange = async {
        let stream = match tokio::net::UnixStream::connect(&socket).await {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                ) =>
            {
                return Err(None);
            }
            Err(e) => return Err(Some(format!("cannot connect: {e}"))),
        };
        let peer = peer_uid(&stream);
        if peer != Some(own_uid()) {
            return Err(Some(format!(
                "socket served by another user (uid {peer:?}); not stopped"
            )));
        }
        let (rd, mut wr) = stream.into_split();
        wr.write_all(b"{\"method\":\"stop\"}\n")
            .await
            .map_err(|e| Some(format!("cannot send stop: {e}")))?;
        let mut buf = Vec::new();
        BufReader::new(rd)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut buf)
            .await
            .map_err(|e| Some(format!("cannot read reply: {e}")))?;
        Ok(buf)
    };
    let buf = match tokio::time::timeout(STOP_TIMEOUT, exchange).await {
        Err(_) => return fail(socket, "no reply within 2 s".into()),
        Ok(Err(None)) => {
            tracing::debug!(socket = %socket.display(), "removing stale control socket");
            let _ = std::fs::remove_file(&socket);
            return None;
        }
        Ok(Err(Some(e))) => return fail(socket, e),
        Ok(Ok(buf)) => buf,
    };
    #[derive(Deserialize)]
    struct Reply {
        ok: bool,
        host: Option<HostInfo>,
        error: Option<String>,
    }
    match serde_json::from_slice::<Reply>(&buf) {
        Ok(r) if r.ok && r.host.is_some() => Some(StopReply {
            socket,
            host: r.host,
            error: None,
        }),
        Ok(r) => fail(
            socket,
            r.error.unwrap_or_else(|| "host refused the stop".into()),
        ),
        Err(e) if buf.is_empty() => fail(socket, format!("host closed without a reply ({e})")),
        Err(e) => fail(socket, format!("bad reply: {e}")),
    }
}

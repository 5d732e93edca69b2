//! The calling side: [`RpcDriver`], a [`Driver`] whose every method is a JSON-RPC
//! request to a driver at the other end of a stream.
//!
//! Requests carry increasing integer ids; a pending map pairs each response with its
//! caller. Every call is bounded by a timeout ([`ErrorCode::Timeout`]); a peer that
//! closes its output or cannot be written to makes every waiting and later call fail
//! at once with [`ErrorCode::NotResponding`]. This side never executes requests from
//! the peer: it answers them with -32601.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::Result;
use crate::codec::{DEFAULT_MAX_LINE, LineReader, encode, write_line};
use crate::jsonrpc::{ErrorObject, Id, Message, Response, parse_message};
use crate::methods::{Call, decode_event_batch, decode_result};
use crate::types::*;
use crate::{ComputerError, Driver, ErrorCode};

/// Default time a call may take before it fails with [`ErrorCode::Timeout`]: 30 s.
/// Long enough for a full tree read of a large app (LibreOffice: ~200 ms with the
/// bulk cache, seconds with a walk), short enough that a hung driver is noticed.
/// Calls that wait by design get their own wait added (see [`RpcOptions::timeout`]).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Requests queued for the writer task before callers wait.
const WRITE_QUEUE: usize = 64;

/// Pushed `events.batch` notifications kept per subscription; older ones are folded
/// into the `dropped` count of the next.
const PUSHED_BATCHES_CAP: usize = 256;

/// Knobs of [`RpcDriver::with_options`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcOptions {
    /// Per-call timeout (default [`DEFAULT_CALL_TIMEOUT`]). Calls that wait by
    /// design get their wait added on top: `apps.launch` its `wait_ms` (15 s when
    /// unset), `node.act` its settle `max_ms`, `events.next` its `timeout_ms`.
    pub timeout: Duration,
    /// Longest accepted response line in bytes (default 16 MiB).
    pub max_line: usize,
}

impl Default for RpcOptions {
    fn default() -> Self {
        RpcOptions {
            timeout: DEFAULT_CALL_TIMEOUT,
            max_line: DEFAULT_MAX_LINE,
        }
    }
}

type Reply = Result<Value>;

/// State shared by callers and the reader and writer tasks.
#[derive(Default)]
struct Shared {
    calls: Mutex<Calls>,
    /// Batches the driver pushed, per subscription, oldest first.
    pushed: Mutex<HashMap<u64, VecDeque<EventBatch>>>,
}

#[derive(Default)]
struct Calls {
    pending: HashMap<i64, oneshot::Sender<Reply>>,
    /// Why the connection is unusable, once it is.
    dead: Option<String>,
}

impl Shared {
    fn calls(&self) -> MutexGuard<'_, Calls> {
        // A poisoned lock only means a caller panicked while holding it; the map
        // itself is still consistent (every operation on it is a single call).
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pushed(&self) -> MutexGuard<'_, HashMap<u64, VecDeque<EventBatch>>> {
        self.pushed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the connection dead and fails every waiting call with `reason`.
    fn die(&self, reason: String) {
        let mut calls = self.calls();
        if calls.dead.is_none() {
            tracing::warn!(%reason, "driver connection lost");
            calls.dead = Some(reason.clone());
        }
        for (_, waiter) in calls.pending.drain() {
            let _ = waiter.send(Err(not_responding(&reason)));
        }
    }
}

fn not_responding(reason: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::NotResponding,
        format!(
            "the driver is not responding: {reason}; restart it (or check the ssh link) and try again"
        ),
    )
}

/// A [`Driver`] reached over NDJSON JSON-RPC 2.0 (a `deskpilot driver` child
/// process, an ssh session, a bridge).
///
/// Created from the peer's output (`reader`, e.g. the child's stdout) and input
/// (`writer`, e.g. its stdin); spawns a reader and a writer task, which stop when the
/// `RpcDriver` is dropped. Must be created inside a tokio runtime. Calls may be made
/// concurrently from many tasks.
pub struct RpcDriver {
    shared: Arc<Shared>,
    out: mpsc::Sender<Vec<u8>>,
    next_id: AtomicI64,
    opts: RpcOptions,
    reader_task: AbortHandle,
    writer_task: AbortHandle,
}

impl std::fmt::Debug for RpcDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcDriver")
            .field("opts", &self.opts)
            .field("dead", &self.shared.calls().dead)
            .finish_non_exhaustive()
    }
}

impl Drop for RpcDriver {
    fn drop(&mut self) {
        self.reader_task.abort();
        self.writer_task.abort();
    }
}

impl RpcDriver {
    /// A client with default [`RpcOptions`].
    pub fn new<R, W>(reader: R, writer: W) -> RpcDriver
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        RpcDriver::with_options(reader, writer, RpcOptions::default())
    }

    /// A client with explicit options.
    pub fn with_options<R, W>(reader: R, writer: W, opts: RpcOptions) -> RpcDriver
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared::default());
        let (out, rx) = mpsc::channel(WRITE_QUEUE);
        let writer_task = tokio::spawn(write_requests(writer, rx, Arc::clone(&shared)));
        let reader_task = tokio::spawn(read_responses(
            LineReader::with_max_line(reader, opts.max_line),
            Arc::clone(&shared),
            out.clone(),
        ));
        RpcDriver {
            shared,
            out,
            next_id: AtomicI64::new(1),
            opts,
            reader_task: reader_task.abort_handle(),
            writer_task: writer_task.abort_handle(),
        }
    }

    /// Why the connection is unusable, or `None` while it works.
    pub fn closed_reason(&self) -> Option<String> {
        self.shared.calls().dead.clone()
    }

    /// Sends `call` and decodes its result.
    async fn call<T: DeserializeOwned>(&self, call: Call) -> Result<T> {
        let method = call.method();
        let limit = self.opts.timeout + extra_wait(&call);
        let value = self.request(call, limit).await?;
        decode_result(method, value)
    }

    /// Sends one request and waits up to `limit` for its response.
    async fn request(&self, call: Call, limit: Duration) -> Result<Value> {
        let method = call.method();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = call
            .to_request(id)
            .and_then(|req| encode(&req))
            .map_err(|e| {
                ComputerError::new(
                    ErrorCode::InvalidArgument,
                    format!("{method} params do not serialize: {e}"),
                )
            })?;
        let (tx, rx) = oneshot::channel();
        {
            let mut calls = self.shared.calls();
            if let Some(reason) = &calls.dead {
                return Err(not_responding(reason));
            }
            calls.pending.insert(id, tx);
        }
        // Removes the pending entry however this call ends (answer, timeout, drop).
        let _pending = PendingGuard {
            shared: &self.shared,
            id,
        };
        let exchange = async {
            if self.out.send(line).await.is_err() {
                let reason = self
                    .closed_reason()
                    .unwrap_or_else(|| "the connection to the driver is closed".to_owned());
                return Err(not_responding(&reason));
            }
            match rx.await {
                Ok(reply) => reply,
                Err(_) => Err(not_responding(&self.closed_reason().unwrap_or_else(|| {
                    "the connection to the driver is closed".to_owned()
                }))),
            }
        };
        match tokio::time::timeout(limit, exchange).await {
            Ok(reply) => reply,
            Err(_) => Err(ComputerError::new(
                ErrorCode::Timeout,
                format!(
                    "the driver did not answer {method} within {} ms; the app or the driver may be busy",
                    limit.as_millis()
                ),
            )
            .with_detail(json!({ "method": method.as_str(), "timeout_ms": limit.as_millis() as u64, "unanswered": true }))),
        }
    }

    /// Takes every pushed batch of `subscription`, merged into one.
    fn take_pushed(&self, subscription: u64) -> Option<EventBatch> {
        let mut pushed = self.shared.pushed();
        let queue = pushed.get_mut(&subscription)?;
        let mut merged = queue.pop_front()?;
        for b in queue.drain(..) {
            merged.events.extend(b.events);
            merged.dropped += b.dropped;
        }
        pushed.remove(&subscription);
        Some(merged)
    }
}

/// How long a call waits by design, on top of the per-call timeout.
fn extra_wait(call: &Call) -> Duration {
    let ms = match call {
        Call::AppsLaunch(p) => p.wait_ms.unwrap_or(15_000),
        Call::NodeAct(p) => p.settle.map_or(0, |s| s.max_ms),
        Call::EventsNext(p) => p.timeout_ms,
        _ => 0,
    };
    Duration::from_millis(ms)
}

struct PendingGuard<'a> {
    shared: &'a Shared,
    id: i64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.calls().pending.remove(&self.id);
    }
}

/// The writer task: sends queued request lines; a failed write kills the connection.
async fn write_requests<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
) {
    while let Some(line) = rx.recv().await {
        if let Err(e) = write_line(&mut writer, &line).await {
            shared.die(format!("writing to the driver failed ({e})"));
            return;
        }
    }
}

/// The reader task: routes responses to callers, buffers pushed events, and kills the
/// connection at end of stream.
async fn read_responses<R: AsyncRead + Unpin>(
    mut lines: LineReader<R>,
    shared: Arc<Shared>,
    out: mpsc::Sender<Vec<u8>>,
) {
    loop {
        let line = match lines.next_line().await {
            Ok(Some(Ok(line))) => line,
            Ok(Some(Err(e))) => {
                // Cannot tell which call it answered; that call will time out.
                tracing::warn!(error = %e, "unreadable line from the driver skipped");
                continue;
            }
            Ok(None) => {
                shared.die("the driver closed its output (end of stream)".to_owned());
                return;
            }
            Err(e) => {
                shared.die(format!("reading from the driver failed ({e})"));
                return;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match parse_message(&line) {
            Ok(Message::Response(resp)) => route(&shared, resp),
            Ok(Message::Notification(n)) => match decode_event_batch(&n) {
                Ok(batch) => push_batch(&shared, batch),
                Err(e) => tracing::debug!(method = %n.method, error = %e, "notification ignored"),
            },
            Ok(Message::Request(req)) => {
                tracing::debug!(method = %req.method, "request from the driver refused");
                let refusal =
                    Response::error(Some(req.id), ErrorObject::method_not_found(&req.method));
                if let Ok(bytes) = encode(&refusal) {
                    let _ = out.try_send(bytes);
                }
            }
            Err(e) => tracing::warn!(error = %e, "malformed line from the driver skipped"),
        }
    }
}

fn route(shared: &Shared, resp: Response) {
    let id = match resp.id {
        Some(Id::Number(n)) => n,
        other => {
            match &resp.outcome {
                Err(e) => {
                    tracing::warn!(id = ?other, error = %e, "driver reported an error about an unreadable request")
                }
                Ok(_) => tracing::warn!(id = ?other, "response with an id this client never sent"),
            }
            return;
        }
    };
    let waiter = shared.calls().pending.remove(&id);
    match waiter {
        Some(w) => {
            let _ = w.send(resp.outcome.map_err(ComputerError::from));
        }
        None => tracing::debug!(id, "late or unknown response dropped"),
    }
}

fn push_batch(shared: &Shared, batch: EventBatch) {
    let mut pushed = shared.pushed();
    let queue = pushed.entry(batch.subscription).or_default();
    queue.push_back(batch);
    while queue.len() > PUSHED_BATCHES_CAP {
        if let Some(old) = queue.pop_front()
            && let Some(next) = queue.front_mut()
        {
            next.dropped += old.dropped + old.events.len() as u64;
        }
    }
}

#[async_trait]
impl Driver for RpcDriver {
    /// Also checks the protocol version: a driver of another major version is refused
    /// with [`ErrorCode::Internal`] naming both versions.
    async fn hello(&self) -> Result<Hello> {
        let hello: Hello = self.call(Call::Hello).await?;
        if hello.protocol != PROTOCOL_VERSION {
            return Err(ComputerError::new(
                ErrorCode::Internal,
                format!(
                    "the driver speaks protocol {} but this host speaks {PROTOCOL_VERSION}; install matching versions",
                    hello.protocol
                ),
            )
            .with_detail(json!({ "driver_protocol": hello.protocol, "host_protocol": PROTOCOL_VERSION })));
        }
        Ok(hello)
    }

    async fn apps(&self) -> Result<Vec<AppInfo>> {
        self.call(Call::AppsList).await
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        self.call(Call::AppsLaunch(p)).await
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        self.call(Call::WindowsList).await
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        self.call(Call::WindowActivate(p)).await
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        self.call(Call::TreeSnapshot(p)).await
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        self.call(Call::TreeFind(p)).await
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        self.call(Call::NodeAct(p)).await
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        self.call(Call::EventsSubscribe(p)).await
    }

    /// Batches the driver pushed (`events.batch`) for this subscription come first;
    /// otherwise asks with `events.next`.
    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        if let Some(batch) = self.take_pushed(subscription) {
            return Ok(batch);
        }
        self.call(Call::EventsNext(NextEventsParams {
            subscription,
            timeout_ms,
        }))
        .await
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        self.call(Call::InputKeys(p)).await
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        self.call(Call::InputPointer(p)).await
    }

    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        self.call(Call::ScreenCapture(p)).await
    }

    async fn ocr(&self, p: OcrParams) -> Result<OcrResult> {
        self.call(Call::ScreenOcr(p)).await
    }
    async fn clipboard_read(&self) -> Result<ClipboardContent> {
        self.call(Call::ClipboardRead).await
    }
    async fn clipboard_write(&self, p: ClipboardWriteParams) -> Result<ClipboardWritten> {
        self.call(Call::ClipboardWrite(p)).await
    }
    async fn clipboard_targets(&self, p: ClipboardTargetsParams) -> Result<ClipboardTargets> {
        self.call(Call::ClipboardTargets(p)).await
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;

    /// Polls `cond` every 5 ms, for at most 5 s.
    async fn wait_until(cond: impl Fn() -> bool) {
        for _ in 0..1_000 {
            if cond() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("condition not reached in 5 s");
    }

    #[tokio::test]
    async fn timeout_then_dead_peer() {
        let (client_side, peer_side) = tokio::io::duplex(4096);
        let (cr, cw) = tokio::io::split(client_side);
        let driver = RpcDriver::with_options(
            cr,
            cw,
            RpcOptions {
                timeout: Duration::from_millis(100),
                max_line: 1024,
            },
        );
        let (pr, mut pw) = tokio::io::split(peer_side);
        let mut peer = BufReader::new(pr).lines();

        // The peer reads the request but never answers: Timeout.
        let call = tokio::spawn(async move {
            let r = driver.windows().await;
            (driver, r)
        });
        let req = peer.next_line().await.unwrap().unwrap();
        assert!(req.contains("\"windows.list\""), "{req}");
        let (driver, r) = call.await.unwrap();
        let e = r.unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout);
        assert_eq!(e.detail.as_ref().unwrap()["method"], "windows.list");

        // Pushed batches are handed out before asking.
        let batch = EventBatch {
            subscription: 4,
            events: vec![Event {
                kind: EventKind::FocusChanged,
                handle: deskpilot_core::Handle::new(":1.5|/a/1"),
                app: Some("mousepad".into()),
                detail: None,
            }],
            dropped: 2,
        };
        let n = crate::methods::event_batch_notification(&batch).unwrap();
        pw.write_all(&encode(&n).unwrap()).await.unwrap();
        pw.write_all(&encode(&n).unwrap()).await.unwrap();
        // Let the reader task take both in.
        wait_until(|| driver.shared.pushed().get(&4).is_some_and(|q| q.len() == 2)).await;
        let got = driver.next_events(4, 0).await.unwrap();
        assert_eq!(got.events.len(), 2);
        assert_eq!(got.dropped, 4);

        // The peer goes away: every call fails at once, NotResponding.
        drop(pw);
        drop(peer);
        wait_until(|| driver.closed_reason().is_some()).await;
        let e = driver.hello().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotResponding);
        assert!(e.message.contains("end of stream"), "{}", e.message);
        assert!(driver.closed_reason().is_some());
    }

    #[tokio::test]
    async fn pending_calls_fail_when_the_peer_dies() {
        let (client_side, peer_side) = tokio::io::duplex(4096);
        let (cr, cw) = tokio::io::split(client_side);
        let driver = Arc::new(RpcDriver::new(cr, cw));
        let d2 = Arc::clone(&driver);
        let call = tokio::spawn(async move { d2.apps().await });
        let (pr, pw) = tokio::io::split(peer_side);
        let mut peer = BufReader::new(pr).lines();
        let _req = peer.next_line().await.unwrap().unwrap();
        drop(pw);
        drop(peer);
        let e = call.await.unwrap().unwrap_err();
        assert_eq!(e.code, ErrorCode::NotResponding);
    }

    #[tokio::test]
    async fn remote_errors_and_other_protocol_versions() {
        let (client_side, peer_side) = tokio::io::duplex(1 << 16);
        let (cr, cw) = tokio::io::split(client_side);
        let driver = RpcDriver::new(cr, cw);
        let (pr, mut pw) = tokio::io::split(peer_side);
        let peer = tokio::spawn(async move {
            let mut lines = BufReader::new(pr).lines();
            // 1: answer with a COMPUTER_* error.
            let req: Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            let err = ErrorObject::from(ComputerError::new(
                ErrorCode::ElementNotFound,
                "no such window",
            ));
            let resp = Response::error(Id::from_value(&req["id"]), err);
            pw.write_all(&encode(&resp).unwrap()).await.unwrap();
            // 2: answer hello with protocol 99.
            let req: Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            let hello = json!({"platform":"linux","driver":"x","version":"9","protocol":99,
                "capabilities":{"tree":true,"actions":true,"keyboard":true,"pointer":true,"capture":false,"ocr":false,"events":true},
                "permissions":{"accessibility":true,"input":true,"capture":false}});
            let resp = Response::ok(Id::from_value(&req["id"]).unwrap(), hello);
            pw.write_all(&encode(&resp).unwrap()).await.unwrap();
            // 3: a result of the wrong shape.
            let req: Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            let resp = Response::ok(Id::from_value(&req["id"]).unwrap(), json!("nope"));
            pw.write_all(&encode(&resp).unwrap()).await.unwrap();
            pw
        });
        let e = driver
            .activate(ActivateParams {
                window: deskpilot_core::Handle::new("w"),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        assert_eq!(e.message, "no such window");
        let e = driver.hello().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(e.message.contains("protocol 99"), "{}", e.message);
        let e = driver.windows().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(e.message.contains("windows.list"), "{}", e.message);
        let _pw = peer.await.unwrap();
    }
}

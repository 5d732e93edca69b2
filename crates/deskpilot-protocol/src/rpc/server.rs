//! The serving side: reads requests line by line, answers each with the driver.
//!
//! Every request runs in its own task, so a slow one (a settle of 3 s, a frozen app)
//! never delays the others; responses go out through one writer task, one whole line
//! at a time, in completion order. A bad line is answered with the JSON-RPC error
//! that fits it and serving goes on. This side never sends requests of its own.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::codec::{DEFAULT_MAX_LINE, LineError, LineReader, encode, write_line};
use crate::jsonrpc::{ErrorObject, Message, Response, codes, parse_message_detailed};
use crate::methods::{Call, Method, dispatch};
use crate::wire_error::with_computer_code;
use crate::{Driver, ErrorCode};

/// Default cap on requests served at once: 64. Past it the server stops reading
/// until one finishes, which bounds memory when a host floods it.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// Responses queued for the writer before request tasks wait (a small multiple of
/// the in-flight cap is plenty: each task queues exactly one).
const WRITE_QUEUE: usize = 128;

/// Knobs of [`serve_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// Longest accepted request line in bytes (default [`DEFAULT_MAX_LINE`], 16 MiB).
    pub max_line: usize,
    /// Requests served concurrently (default [`DEFAULT_MAX_IN_FLIGHT`]); at least 1.
    pub max_in_flight: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_line: DEFAULT_MAX_LINE,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

/// Serves `driver` over NDJSON JSON-RPC 2.0 with default [`ServeOptions`].
///
/// Reads requests from `reader` and writes responses to `writer` until `reader`
/// ends; then waits for the requests still running, writes their responses and
/// returns `Ok(())`.
///
/// Bad input never stops it: a non-JSON or non-UTF-8 line is answered with -32700,
/// an invalid message, a batch or an over-long line with -32600 (id `null` when the
/// id could not be read), an unknown method with -32601 (marked
/// `COMPUTER_PLATFORM_UNSUPPORTED`), params of the wrong shape with -32602 (marked
/// `COMPUTER_INVALID_ARGUMENT`), a driver error with its `COMPUTER_*` error object, a
/// panic inside the driver with -32603. Notifications are never answered: a request
/// method sent as a notification is not executed (its caller could not learn the
/// outcome), and any other notification is ignored.
///
/// Errors: reading `reader` or writing `writer` failed.
pub async fn serve<R, W>(driver: Arc<dyn Driver>, reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(driver, reader, writer, ServeOptions::default()).await
}

/// As [`serve`], with explicit options.
pub async fn serve_with<R, W>(
    driver: Arc<dyn Driver>,
    reader: R,
    writer: W,
    opts: ServeOptions,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Vec<u8>>(WRITE_QUEUE);
    let mut writer_task = tokio::spawn(write_all_lines(writer, rx));
    let mut lines = LineReader::with_max_line(reader, opts.max_line);
    let slots = Arc::new(Semaphore::new(opts.max_in_flight.max(1)));
    let mut tasks = JoinSet::new();

    loop {
        tokio::select! {
            biased;
            ended = &mut writer_task => return Err(writer_ended(ended)),
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            line = lines.next_line() => {
                let Some(line) = line? else { break };
                let Some(work) = handle_line(line) else { continue };
                match work {
                    Work::Answer(resp) => {
                        if tx.send(encode_response(&resp)).await.is_err() {
                            break;
                        }
                    }
                    Work::Serve(id, call) => {
                        let permit = Arc::clone(&slots)
                            .acquire_owned()
                            .await
                            .map_err(io::Error::other)?;
                        let driver = Arc::clone(&driver);
                        let tx = tx.clone();
                        tasks.spawn(async move {
                            let resp = serve_one(driver, id, call).await;
                            let _ = tx.send(encode_response(&resp)).await;
                            drop(permit);
                        });
                    }
                }
            }
        }
    }

    while tasks.join_next().await.is_some() {}
    drop(tx);
    match writer_task.await {
        Ok(r) => r,
        Err(e) => Err(io::Error::other(e)),
    }
}

/// What to do with one input line.
enum Work {
    /// Write this response now (an error about the line itself).
    Answer(Response),
    /// Run this call and answer with its id.
    Serve(crate::jsonrpc::Id, Call),
}

/// Classifies one line; `None` for lines that get no answer.
fn handle_line(line: Result<String, LineError>) -> Option<Work> {
    let line = match line {
        Ok(l) => l,
        Err(e @ LineError::TooLong { .. }) => {
            tracing::warn!(error = %e, "request line too long");
            return Some(Work::Answer(Response::error(
                None,
                ErrorObject::invalid_request(e),
            )));
        }
        Err(e) => {
            tracing::warn!(error = %e, "request line unreadable");
            return Some(Work::Answer(Response::error(
                None,
                ErrorObject::parse_error(e),
            )));
        }
    };
    if line.trim().is_empty() {
        return None;
    }
    match parse_message_detailed(&line) {
        Err(rejected) => {
            tracing::debug!(code = rejected.error.code, "malformed message");
            Some(Work::Answer(rejected.into_response()))
        }
        Ok(Message::Request(req)) => match Call::from_request(&req) {
            Ok(call) => Some(Work::Serve(req.id, call)),
            Err(e) => {
                let marked = match e.code {
                    codes::INVALID_PARAMS => with_computer_code(e, ErrorCode::InvalidArgument),
                    codes::METHOD_NOT_FOUND => {
                        with_computer_code(e, ErrorCode::PlatformUnsupported)
                    }
                    _ => e,
                };
                Some(Work::Answer(Response::error(Some(req.id), marked)))
            }
        },
        Ok(Message::Notification(n)) => {
            match Method::from_name(&n.method) {
                Some(m) if !m.is_notification() => tracing::warn!(
                    method = %m,
                    "request sent as a notification (no id); not executed"
                ),
                Some(m) => tracing::debug!(method = %m, "notification ignored by the driver side"),
                None => tracing::debug!(method = %n.method, "unknown notification ignored"),
            }
            None
        }
        Ok(Message::Response(r)) => {
            tracing::debug!(id = ?r.id, "unexpected response ignored (this side sends no requests)");
            None
        }
    }
}

/// Runs one call in its own task so that a panic in the driver becomes -32603.
async fn serve_one(driver: Arc<dyn Driver>, id: crate::jsonrpc::Id, call: Call) -> Response {
    let method = call.method();
    let run = tokio::spawn(async move { dispatch(driver.as_ref(), call).await });
    match run.await {
        Ok(Ok(result)) => Response::ok(id, result),
        Ok(Err(e)) => Response::error(Some(id), ErrorObject::from(e)),
        Err(join) => {
            tracing::error!(%method, error = %join, "driver task failed");
            let what = if join.is_panic() {
                "panicked"
            } else {
                "was cancelled"
            };
            Response::error(
                Some(id),
                with_computer_code(
                    ErrorObject::internal(format!("the driver {what} while serving {method}")),
                    ErrorCode::Internal,
                ),
            )
        }
    }
}

/// Encodes a response; one that cannot be encoded is replaced by -32603.
fn encode_response(resp: &Response) -> Vec<u8> {
    match encode(resp) {
        Ok(bytes) => bytes,
        Err(e) => {
            let fallback = Response::error(resp.id.clone(), ErrorObject::internal(e));
            // An id, a number and two strings always serialize.
            encode(&fallback).unwrap_or_else(|_| b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"internal error\"}}\n".to_vec())
        }
    }
}

/// The writer task: one line at a time, flushed, until every sender is gone.
async fn write_all_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
) -> io::Result<()> {
    while let Some(line) = rx.recv().await {
        write_line(&mut writer, &line).await?;
    }
    Ok(())
}

/// The error to return when the writer task stopped while serving.
fn writer_ended(ended: Result<io::Result<()>, tokio::task::JoinError>) -> io::Error {
    match ended {
        Ok(Err(e)) => e,
        Ok(Ok(())) => io::Error::new(io::ErrorKind::BrokenPipe, "response writer stopped"),
        Err(e) => io::Error::other(e),
    }
}

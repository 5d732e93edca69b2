//! deskpilot-mcp: deskpilot's tools served over the Model Context Protocol with the
//! official Rust SDK (`rmcp`), on stdio or on streamable HTTP bound to loopback.
//!
//! Tools (docs/ARCHITECTURE.md §9): `computer_apps`, `computer_observe`, `computer_find`,
//! `computer_read`, `computer_act`, `computer_wait`, `computer_keys`, `computer_launch`,
//! `computer_screenshot`, and `computer_task` (the bounded inner loop of
//! `deskpilot_agent` with the model bound in the config, docs/ARCHITECTURE.md §10). Each
//! publishes an input schema and (except the
//! screenshot, which always fails honestly until a capture path exists) an output
//! schema generated from the Rust types in [`args`] and [`output`] — the host's own
//! result types, with the `schema` feature of the crates that own them — admitting
//! the tool's result and the refusal every failed call carries, and annotations
//! (`readOnlyHint` on the reading tools, `destructiveHint` on the acting ones).
//!
//! Every call goes through one [`deskpilot_host::Host`]: grants, refusals, modes,
//! budgets, stop and audit are the host's, never this crate's. A refusal or failure
//! is a tool result with `isError: true` and structured `{code, message, detail}`.
//!
//! This crate never writes to stdout except through the MCP transport (logs go to
//! `tracing`, which the binary sends to stderr), never approves an action on a tool
//! argument, and never returns content over the token budget without saying so.

#![forbid(unsafe_code)]

pub mod args;
pub mod auth;
mod batch;
mod handlers;
pub mod output;
mod server;
mod service;
mod stdio;
pub mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

pub use auth::{HttpAuth, default_token_path};
pub use server::Server;
pub use tools::INSTRUCTIONS;

/// Longest JSON-RPC line accepted on stdio: 4 MiB. Tool arguments are small (the
/// largest is a `set_value` text); a longer line is answered with a `-32600` error
/// (`"id": null`) and skipped, and the server goes on serving.
pub const MAX_STDIO_LINE: usize = 4 * 1024 * 1024;

/// Longest HTTP request body accepted: 4 MiB, as on stdio (413 beyond).
pub const MAX_HTTP_BODY: usize = 4 * 1024 * 1024;

/// Serves `server` on this process's stdin/stdout until the client closes stdin.
/// Applies `deskpilot stop` (raised on the host's stop signal) while serving.
///
/// Errors: `COMPUTER_INTERNAL` when the MCP handshake fails or the session ends
/// abnormally.
pub async fn serve_stdio(server: Server) -> Result<()> {
    let watcher = server.watch_stop();
    // stdin → framing checks → the service → one writer → stdout (see `stdio`).
    let (service_in, filter_out) = tokio::io::duplex(1 << 20);
    let (service_out, merge_in) = tokio::io::duplex(1 << 20);
    let (errors_tx, errors_rx) = tokio::sync::mpsc::unbounded_channel();
    let filter = tokio::spawn(stdio::filter_input(
        tokio::io::stdin(),
        filter_out,
        errors_tx,
        MAX_STDIO_LINE,
    ));
    let merge = tokio::spawn(stdio::merge_output(
        merge_in,
        tokio::io::stdout(),
        errors_rx,
    ));
    let transport = AsyncRwTransport::<rmcp::RoleServer, _, _>::new(service_in, service_out)
        .with_max_line_length(MAX_STDIO_LINE + 1);
    let result = async {
        let running = server
            .serve(transport)
            .await
            .map_err(|e| ComputerError::internal(format!("MCP session did not start: {e}")))?;
        let reason = running
            .waiting()
            .await
            .map_err(|e| ComputerError::internal(format!("MCP session ended abnormally: {e}")))?;
        tracing::info!(?reason, "MCP session ended");
        Ok(())
    }
    .await;
    watcher.abort();
    filter.abort();
    // The service's last replies are flushed before the process exits.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), merge).await;
    result
}

/// Serves `server` as a streamable HTTP MCP endpoint (`http://ADDR/mcp`) until the
/// listener fails. Only loopback addresses are accepted; every request must carry a
/// loopback `Host` header (DNS-rebinding protection), `auth`'s bearer token, and no
/// `Origin` other than loopback ([`HttpAuth::check`]).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a non-loopback address;
/// `COMPUTER_INTERNAL` when the address cannot be bound or accepting fails.
pub async fn serve_http(server: Server, addr: SocketAddr, auth: HttpAuth) -> Result<()> {
    if !addr.ip().is_loopback() {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!(
                "{addr} is not a loopback address: the MCP HTTP endpoint serves this machine only; use 127.0.0.1:PORT or [::1]:PORT"
            ),
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ComputerError::internal(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| ComputerError::internal(format!("cannot read the bound address: {e}")))?;
    tracing::info!(%local, "MCP streamable HTTP endpoint listening");
    serve_listener(server, listener, auth).await
}

/// The streamable HTTP service of `server`, with the loopback `Host` check.
fn http_service(server: &Server) -> StreamableHttpService<Server, LocalSessionManager> {
    let mut config = StreamableHttpServerConfig::default();
    config.max_request_body_bytes = MAX_HTTP_BODY;
    let config = config.with_allowed_hosts([
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
        "[::1]".to_string(),
    ]);
    let factory = server.clone();
    StreamableHttpService::new(
        move || Ok(factory.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves HTTP/1.1 on one accepted connection; `auth` checks every request first.
fn serve_connection<IO>(
    service: StreamableHttpService<Server, LocalSessionManager>,
    io: IO,
    auth: Option<HttpAuth>,
    peer: String,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use hyper_util::rt::TokioIo;
    use tower_service::Service;
    tokio::spawn(async move {
        let handler =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let mut s = service.clone();
                let refused = auth.as_ref().and_then(|a| a.check(&req));
                async move {
                    match refused {
                        Some(r) => Ok(r),
                        None => s.call(req).await,
                    }
                }
            });
        if let Err(e) = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(io), handler)
            .await
        {
            tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
        }
    });
}

/// As [`serve_http`], on a listener already bound (to a loopback address).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` when the listener is not on loopback;
/// `COMPUTER_INTERNAL` when accepting fails.
pub async fn serve_listener(
    server: Server,
    listener: tokio::net::TcpListener,
    auth: HttpAuth,
) -> Result<()> {
    let local = listener
        .local_addr()
        .map_err(|e| ComputerError::internal(format!("cannot read the bound address: {e}")))?;
    if !local.ip().is_loopback() {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!("{local} is not a loopback address"),
        ));
    }
    let watcher = server.watch_stop();
    let service = http_service(&server);
    let result = loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                serve_connection(
                    service.clone(),
                    stream,
                    Some(auth.clone()),
                    peer.to_string(),
                );
            }
            Err(e) => {
                break Err(ComputerError::internal(format!(
                    "accept failed on {local}: {e}"
                )));
            }
        }
    };
    watcher.abort();
    result
}

/// Serves `server` as streamable HTTP on the Unix socket `path` (created mode 0600,
/// a stale socket there replaced). The kernel names each peer: a connection from
/// another uid is closed unanswered, so no token is needed.
///
/// Errors: `COMPUTER_INTERNAL` when the socket cannot be bound or accepting fails.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub async fn serve_unix(server: Server, path: &std::path::Path) -> Result<()> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;
    let internal = |what: &str, e: std::io::Error| {
        ComputerError::internal(format!("cannot {what} {}: {e}", path.display()))
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()) => {
            std::fs::remove_file(path).map_err(|e| internal("replace", e))?;
        }
        Ok(_) => {
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{} exists and is not a socket; choose another path",
                    path.display()
                ),
            ));
        }
        Err(_) => {}
    }
    let listener = tokio::net::UnixListener::bind(path).map_err(|e| internal("listen on", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| internal("restrict", e))?;
    tracing::info!(path = %path.display(), "MCP streamable HTTP endpoint listening on a Unix socket");
    let me = deskpilot_os::current_uid();
    let watcher = server.watch_stop();
    let service = http_service(&server);
    let result = loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let uid = deskpilot_os::peer_uid(stream.as_fd());
                if uid != Some(me) {
                    tracing::warn!(?uid, "MCP connection from another user refused");
                    continue;
                }
                serve_connection(service.clone(), stream, None, format!("uid {me}"));
            }
            Err(e) => break Err(internal("accept on", e)),
        }
    };
    watcher.abort();
    result
}

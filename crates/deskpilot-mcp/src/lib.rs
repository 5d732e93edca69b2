//! deskpilot-mcp: deskpilot's tools served over the Model Context Protocol with the
//! official Rust SDK (`rmcp`), on stdio or on streamable HTTP bound to loopback.
//!
//! Tools (docs/ARCHITECTURE.md §9): `computer_apps`, `computer_observe`, `computer_find`,
//! `computer_act`, `computer_wait`, `computer_keys`, `computer_launch`,
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
mod batch;
pub mod output;
mod server;
mod stdio;
pub mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use deskpilot_protocol::{ComputerError, ErrorCode};
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

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
pub async fn serve_stdio(server: Server) -> Result<(), ComputerError> {
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
/// listener fails. Only loopback addresses are accepted, and
/// requests must carry a loopback `Host` header (DNS-rebinding protection).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a non-loopback address;
/// `COMPUTER_INTERNAL` when the address cannot be bound or accepting fails.
pub async fn serve_http(server: Server, addr: SocketAddr) -> Result<(), ComputerError> {
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
    serve_listener(server, listener).await
}

/// As [`serve_http`], on a listener already bound (to a loopback address).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` when the listener is not on loopback;
/// `COMPUTER_INTERNAL` when accepting fails.
pub async fn serve_listener(
    server: Server,
    listener: tokio::net::TcpListener,
) -> Result<(), ComputerError> {
    use hyper_util::rt::TokioIo;
    use tower_service::Service;

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
    let mut config = StreamableHttpServerConfig::default();
    config.max_request_body_bytes = MAX_HTTP_BODY;
    let config = config.with_allowed_hosts([
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
        "[::1]".to_string(),
    ]);
    let factory = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(factory.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let result = loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                break Err(ComputerError::internal(format!(
                    "accept failed on {local}: {e}"
                )));
            }
        };
        let svc = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req| {
                let mut s = svc.clone();
                async move { s.call(req).await }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler)
                .await
            {
                tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
            }
        });
    };
    watcher.abort();
    result
}

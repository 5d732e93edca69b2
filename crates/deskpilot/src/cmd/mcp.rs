//! `deskpilot mcp`: deskpilot's tools over MCP (stdio, or streamable HTTP on
//! loopback), every call through the policy host.
//!
//! The server is a long-lived host: it keeps its grant in memory under its own
//! session (`mcp-PID`), holds the desktop's grant lock while it has a grant, and
//! listens on a control socket so `deskpilot stop` aborts its calls and revokes its
//! grant. It grabs the stop hotkey (Ctrl+Shift+Escape unless `stop_hotkey` says
//! otherwise), which does what `deskpilot stop` does. stdout is the protocol stream;
//! logs and progress go to stderr.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};
use deskpilot_host::control::{ControlServer, HostInfo};
use deskpilot_host::store::desktop_key;

use super::session::{Ctx, open_host};
use deskpilot_protocol::Result;

/// Where the server listens.
#[derive(Debug, Clone)]
pub enum Transport {
    /// stdin/stdout, one JSON-RPC message per line.
    Stdio,
    /// Streamable HTTP on a loopback address, with the bearer token kept in
    /// `token_file`.
    Http {
        addr: SocketAddr,
        token_file: PathBuf,
    },
    /// Streamable HTTP on a Unix socket, this user's processes only.
    Unix(PathBuf),
}

/// Runs the server until the client closes stdin (or, over HTTP, until killed).
pub async fn run(ctx: &Ctx, new_sandbox: bool, transport: Transport, teach: bool) -> Result<()> {
    // The token exists before anything is served, so a client can be configured.
    let auth = match &transport {
        Transport::Http { addr, token_file } => {
            let auth = deskpilot_mcp::HttpAuth::from_file(token_file)?;
            eprintln!(
                "deskpilot mcp: streamable HTTP on http://{addr}/mcp; clients must send the header\n  Authorization: Bearer {}\n(the token is kept in {}, mode 0600; remove the file to rotate it)",
                auth.token(),
                token_file.display()
            );
            Some(auth)
        }
        _ => None,
    };
    let mut sandbox = None;
    let mut ctx = ctx.clone();
    if new_sandbox {
        let sb = Sandbox::start(SandboxOptions::default())?;
        eprintln!(
            "deskpilot mcp: sandbox desktop on display :{} (stopped when the server exits)",
            sb.state().display
        );
        ctx.sandbox = Some(sb.state().display);
        // However the server ends — stdin closed, a signal, SIGKILL — its sandbox
        // goes with it.
        if let Err(e) = super::sandbox::spawn_watcher(sb.state().display) {
            eprintln!(
                "deskpilot mcp: warning: no watcher for the sandbox ({e}); it stops when the server exits normally"
            );
        }
        sandbox = Some(sb);
    }
    if ctx.session == "cli" {
        ctx.session = format!("mcp-{}", std::process::id());
    }
    // stdin is the protocol stream: never prompt on it.
    let (mut host, desktop) = open_host(&ctx, "mcp", false).await?;
    let info = Arc::new(Mutex::new(HostInfo {
        pid: std::process::id(),
        session: ctx.session.clone(),
        desktop: desktop_key(&desktop.display, &desktop.bus_address),
        grant_id: None,
        kind: "mcp".into(),
    }));
    let _control = ControlServer::listen(info, host.options().stop.clone())?;
    let display = super::policy::hotkey_display(&ctx, &desktop);
    let _hotkey = super::policy::arm_stop_hotkey(
        "mcp",
        display.as_deref(),
        &host.options().settings.stop_hotkey,
    );
    // What the person sees of the agent: drawn on the desktop it works on, so not
    // for another device.
    if !ctx.device.is_remote() {
        let p = super::presence::open(
            "mcp",
            display.as_deref(),
            host.options().settings.presence,
            &host.options().stop,
        );
        host.set_presence(p);
    }
    if teach && host.options().presence.is_none() {
        eprintln!(
            "deskpilot mcp: warning: --teach needs the on-screen presence (an X display and `presence` on); teach steps will be refused"
        );
    }
    let state_file = host.session().state_path().to_path_buf();
    let server = deskpilot_mcp::Server::new(host);
    let server = if teach { server.with_teach() } else { server };
    let r = match (&transport, auth) {
        (Transport::Http { addr, .. }, Some(auth)) => {
            deskpilot_mcp::serve_http(server.clone(), *addr, auth).await
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        (Transport::Unix(path), _) => {
            eprintln!(
                "deskpilot mcp: streamable HTTP on the Unix socket {} (this user only)",
                path.display()
            );
            deskpilot_mcp::serve_unix(server.clone(), path).await
        }
        // The socket's peer is named by the kernel on Linux only (SO_PEERCRED).
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        (Transport::Unix(path), _) => Err(deskpilot_protocol::ComputerError::new(
            deskpilot_protocol::ErrorCode::PlatformUnsupported,
            format!(
                "cannot serve MCP on the Unix socket {}: that needs Linux (the kernel names each peer there); use stdio or --http on this OS",
                path.display()
            ),
        )),
        _ => deskpilot_mcp::serve_stdio(server.clone()).await,
    };
    // The server's own session ends with it: release its grant, drop its refs.
    {
        let mut host = server.host().lock().await;
        let _ = host.revoke();
    }
    drop(server);
    let _ = std::fs::remove_file(&state_file);
    if let Some(mut sb) = sandbox {
        sb.stop();
    }
    r
}

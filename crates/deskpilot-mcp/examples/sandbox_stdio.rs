//! Serves the MCP tools on stdio over a fresh sandbox desktop (Xvfb + accessibility
//! bus), the way `deskpilot mcp --sandbox` does: the sandbox starts first, stops on
//! exit, and logs go to stderr. Extra command-line arguments are ignored, so a
//! client configured for `deskpilot mcp --sandbox` can launch this instead.
//!
//! `cargo run -p deskpilot-mcp --example sandbox_stdio`

use std::sync::Arc;

use deskpilot_driver_linux::LinuxDriver;
use deskpilot_driver_linux::atspi::ConnectOptions;
use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};
use deskpilot_host::config::Config;
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::store::desktop_key;
use deskpilot_host::{Session, StateStore};
use deskpilot_protocol::Result;

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DESKPILOT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if let Err(e) = rt.block_on(run()) {
        eprintln!("error[{}]: {}", e.code.as_str(), e.message);
        std::process::exit(1);
    }
}

async fn run() -> Result<()> {
    let sb = Sandbox::start(SandboxOptions::default())?;
    let vars: Vec<(String, String)> = sb.env().into_iter().collect();
    let driver = LinuxDriver::connect(ConnectOptions::from_vars(vars)).await?;
    let settings = Config::load()?.effective(true);
    let key = desktop_key(&sb.display(), &sb.state().bus_address);
    let store = StateStore::open_in(&sb.state().dir, &format!("{key}-mcp"))?;
    let opts = HostOptions::new(&key, "mcp", "mcp", settings);
    let host = Host::new(Session::new(Arc::new(driver), store), opts);
    let out = deskpilot_mcp::serve_stdio(deskpilot_mcp::Server::new(host)).await;
    drop(sb);
    out
}

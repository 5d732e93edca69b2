//! `deskpilot driver`: serves the Linux driver over newline-delimited JSON-RPC 2.0 on
//! stdin/stdout, for a host on another machine. stdout carries only protocol
//! messages; logs go to stderr.
//!
//! The served driver is guarded ([`deskpilot_host::guard::Guarded`]): this machine's
//! feature switch, stop record, refusals, secure input, launch rules, redaction and
//! audit apply to every request, whatever the remote host decides.

use std::sync::Arc;

use deskpilot_host::audit::AuditLog;
use deskpilot_host::config::Config;
use deskpilot_host::guard::{GuardOptions, Guarded};
use deskpilot_protocol::{ComputerError, ErrorCode};

use deskpilot_protocol::Result;

pub async fn run(sandbox: Option<u32>) -> Result<()> {
    super::policy::not_inside_sandbox("`deskpilot driver`")?;
    let desktop = super::session::resolve(sandbox)?;
    let driver = super::session::connect(&desktop).await?;
    let in_sandbox = desktop.sandbox.is_some();
    let guard = GuardOptions {
        reload: Arc::new(move || Config::load().map(|c| c.effective(in_sandbox))),
        runtime_dir: deskpilot_host::store::state_dir(),
        audit: AuditLog::at_default_path(),
    };
    let served = Guarded::new(driver, guard);
    deskpilot_protocol::rpc::serve(Arc::new(served), tokio::io::stdin(), tokio::io::stdout())
        .await
        .map_err(|e| ComputerError::new(ErrorCode::Internal, format!("driver stream failed: {e}")))
}

//! `deskpilot driver`: serves the Linux driver over newline-delimited JSON-RPC 2.0 on
//! stdin/stdout. stdout carries only protocol messages; logs go to stderr.

use std::sync::Arc;

use deskpilot_protocol::{ComputerError, ErrorCode};

use crate::target;

pub async fn run(sandbox: Option<u32>) -> Result<(), ComputerError> {
    let desktop = target::resolve(sandbox)?;
    let driver = super::session::connect(&desktop).await?;
    deskpilot_protocol::rpc::serve(Arc::new(driver), tokio::io::stdin(), tokio::io::stdout())
        .await
        .map_err(|e| ComputerError::new(ErrorCode::Internal, format!("driver stream failed: {e}")))
}

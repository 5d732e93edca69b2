//! `apps.launch`: start a program and wait for its first window.
//!
//! Owns spawning (no shell; the sandbox's environment on top of this process's; stdin
//! and stdout closed, since stdout is the driver's protocol stream; its own process
//! group, so it outlives a Ctrl-C aimed at the host) and waiting: `apps.list` every
//! [`POLL`] until an application whose pid is the child or one of its descendants
//! shows a visible window — or, for single-instance programs that hand over to a
//! running copy and exit, until a window that was not there before appears. It never
//! kills what it started.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use deskpilot_core::Handle;
use deskpilot_protocol::types::{AppStatus, LaunchParams, LaunchResult, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::apps::list_apps;
use super::connection::Bus;
use super::options::ConnectOptions;
use deskpilot_protocol::Result;

/// Interval between window checks: 100 ms.
pub const POLL: Duration = Duration::from_millis(100);
/// Default wait for the first window: 15,000 ms (LibreOffice's first start in a fresh
/// profile takes 5–8 s here).
pub const DEFAULT_WAIT_MS: u64 = 15_000;

async fn window_handles(bus: &Bus) -> HashSet<Handle> {
    list_apps(bus)
        .await
        .map(|apps| {
            apps.into_iter()
                .flat_map(|a| a.windows.into_iter().map(|w| w.handle))
                .collect()
        })
        .unwrap_or_default()
}

/// Starts `p.command` and waits up to `p.wait_ms` for its first window.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for an empty command or a program that cannot
/// be started (not found, not executable). A program that shows no window in time
/// is not an error: the result has `window: None`.
pub async fn launch(bus: &Bus, opts: &ConnectOptions, p: &LaunchParams) -> Result<LaunchResult> {
    let Some((program, args)) = p.command.split_first() else {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "apps.launch needs a command: [program, args…]",
        ));
    };
    let before = window_handles(bus).await;
    let plain = || {
        let mut c = std::process::Command::new(program);
        c.args(args).stdin(Stdio::null());
        c
    };
    let std_cmd = match &opts.confine {
        None => plain(),
        Some(c) => {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            crate::confine::wrap(c, program.as_ref(), &args).unwrap_or_else(|| {
                tracing::warn!(
                    program,
                    "bubblewrap is not usable: the app can see deskpilot's directories"
                );
                plain()
            })
        }
    };
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.envs(
        opts.launch_env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .process_group(0)
    .kill_on_drop(false);
    let mut child = cmd.spawn().map_err(|e| {
        ComputerError::new(
            ErrorCode::InvalidArgument,
            format!("cannot start {program:?}: {e}"),
        )
    })?;
    let pid = child.id().unwrap_or(0);
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        // Reap the child whenever it ends, so it never lingers as a zombie.
        let status = child.wait().await;
        let _ = exit_tx.send(status.ok());
    });
    let mut exited = exit_rx;

    let deadline = Instant::now() + Duration::from_millis(p.wait_ms.unwrap_or(DEFAULT_WAIT_MS));
    let mut child_gone = false;
    loop {
        if !child_gone && let Ok(status) = exited.try_recv() {
            tracing::debug!(pid, ?status, "launched process exited");
            child_gone = true;
        }
        if let Ok(apps) = list_apps(bus).await {
            let mut found: Option<WindowInfo> = None;
            for a in apps.iter().filter(|a| a.status == AppStatus::Ok) {
                let ours = a.pid.is_some_and(|ap| deskpilot_os::descends_from(ap, pid));
                let candidate = a
                    .windows
                    .iter()
                    .find(|w| ours || (child_gone && !before.contains(&w.handle)));
                if let Some(w) = candidate {
                    found = Some(w.clone());
                    if ours {
                        break;
                    }
                }
            }
            if found.is_some() {
                return Ok(LaunchResult { pid, window: found });
            }
        }
        if Instant::now() >= deadline {
            return Ok(LaunchResult { pid, window: None });
        }
        tokio::time::sleep(POLL).await;
    }
}

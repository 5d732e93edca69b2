//! The thread every Windows call runs on, bounded in time (docs/ARCHITECTURE.md §6b).
//!
//! COM objects (`IAccessible`) and messages sent to other processes' windows can
//! block as long as the app is frozen. Every job runs on a dedicated thread that
//! has joined COM's multithreaded apartment; the caller waits at most the job's
//! limit and then answers `COMPUTER_NOT_RESPONDING`. A thread left blocked is
//! abandoned (a thread cannot be killed) and the next job starts a fresh one, so a
//! frozen app never stalls the driver. A job must never hold COM objects across
//! jobs: each one opens what it needs from window handles.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use windows::Win32::System::Com::{COINIT_MULTITHREADED, CoInitializeEx};

type Job = Box<dyn FnOnce() + Send>;

/// One worker thread at a time; replaced when a job overran its limit.
#[derive(Default)]
pub struct Worker {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Worker {
    fn sender(&self) -> Result<mpsc::Sender<Job>> {
        let mut guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = guard.as_ref() {
            return Ok(tx.clone());
        }
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("deskpilot-win32".into())
            .spawn(move || {
                // The multithreaded apartment: objects are used from this thread only,
                // and no message loop is needed for them.
                let _ = unsafe { CoInitializeEx(None, COINIT_MULTITHREADED) };
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .map_err(|e| {
                ComputerError::internal(format!("cannot start the Win32 worker thread: {e}"))
            })?;
        *guard = Some(tx.clone());
        Ok(tx)
    }

    /// Runs `f` on the worker thread and waits at most `limit` for it.
    ///
    /// Errors: `f`'s own; `COMPUTER_NOT_RESPONDING` naming `what` when it overran
    /// (the thread is abandoned; the effect of an action cut off so is unknown).
    pub async fn run<T: Send + 'static>(
        &self,
        what: &str,
        limit: Duration,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done_tx.send(f());
        });
        let tx = self.sender()?;
        if tx.send(job).is_err() {
            *self.tx.lock().unwrap_or_else(|p| p.into_inner()) = None;
            return Err(ComputerError::internal(
                "the Win32 worker thread stopped; try again",
            ));
        }
        match tokio::time::timeout(limit, done_rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(ComputerError::internal(format!(
                "{what}: the Win32 worker thread failed"
            ))),
            Err(_) => {
                *self.tx.lock().unwrap_or_else(|p| p.into_inner()) = None;
                Err(ComputerError::new(
                    ErrorCode::NotResponding,
                    format!(
                        "{what} did not answer within {} ms: the application is not responding; wait and try again, or close it",
                        limit.as_millis()
                    ),
                )
                .with_detail(serde_json::json!({ "timeout_ms": limit.as_millis() as u64 })))
            }
        }
    }
}

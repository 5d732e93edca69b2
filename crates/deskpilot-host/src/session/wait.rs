//! Waiting for a text, an element or a window, by re-reading the window at most
//! every 150 ms. Never acts.

use std::time::{Duration, Instant};

use deskpilot_core::Role;
use deskpilot_protocol::ErrorCode;
use serde::Serialize;

use super::find::FindHit;
use super::{Session, Target, err, ms_since};
use deskpilot_protocol::Result;

/// What [`Session::wait`] waits for.
#[derive(Debug, Clone)]
pub enum WaitFor {
    /// Some element's name, value or description contains the text.
    Text(String),
    /// No element contains the text any more.
    Gone(String),
    /// An element with this role whose name contains the text.
    Element { role: Role, name: String },
    /// A window whose title contains the text exists.
    Window(String),
}

/// The result of a wait that was met.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WaitOutcome {
    pub met: bool,
    pub elapsed_ms: u64,
    /// Matching elements (for `Text`/`Element`), as find hits.
    pub hits: Vec<FindHit>,
}

impl Session {
    /// Polls the target window (re-read at most every 150 ms) until `cond` holds or
    /// `timeout` passes. A timeout is `COMPUTER_TIMEOUT`.
    pub async fn wait(
        &mut self,
        target: &Target,
        cond: &WaitFor,
        timeout: Duration,
    ) -> Result<WaitOutcome> {
        let started = Instant::now();
        loop {
            let met = match cond {
                WaitFor::Window(title) => {
                    let lower = title.to_lowercase();
                    self.driver
                        .windows()
                        .await?
                        .iter()
                        .any(|w| w.title.to_lowercase().contains(&lower))
                        .then(Vec::new)
                }
                _ => match self.resolve_window(target).await {
                    Ok(window) => 'read: {
                        let root = match self.read(&window).await {
                            Ok((root, _)) => root,
                            // Busy for a moment: not met yet. A dropped device link
                            // is not a busy app: the caller hears of it at once.
                            Err(e) if e.code == ErrorCode::NotResponding && !e.is_link_lost() => {
                                break 'read None;
                            }
                            // A window shown before its app published its tree (a
                            // GTK app starting): the tree may still come.
                            Err(e)
                                if e.code == ErrorCode::AccessibilityDisabled && window.no_tree =>
                            {
                                break 'read None;
                            }
                            Err(e) => return Err(e),
                        };
                        let hits = match cond {
                            WaitFor::Text(t) | WaitFor::Gone(t) => {
                                Self::search(&root, &window, t, None, 20)
                            }
                            WaitFor::Element { role, name } => {
                                Self::search(&root, &window, name, Some(*role), 20)
                            }
                            WaitFor::Window(_) => Vec::new(),
                        };
                        self.remember(&window, root);
                        match cond {
                            WaitFor::Gone(_) => hits.is_empty().then(Vec::new),
                            _ => (!hits.is_empty()).then_some(hits),
                        }
                    }
                    Err(e) if e.code == ErrorCode::ElementNotFound => {
                        matches!(cond, WaitFor::Gone(_)).then(Vec::new)
                    }
                    // Busy for a moment (loading a document): not met yet.
                    Err(e) if e.code == ErrorCode::NotResponding && !e.is_link_lost() => None,
                    Err(e) => return Err(e),
                },
            };
            if let Some(hits) = met {
                self.save()?;
                return Ok(WaitOutcome {
                    met: true,
                    elapsed_ms: ms_since(started),
                    hits,
                });
            }
            if started.elapsed() >= timeout {
                self.save()?;
                let what = match cond {
                    WaitFor::Element { role, name } => format!(
                        "no {} named {:?} appeared",
                        role.as_str(),
                        deskpilot_core::sanitize::one_line(name)
                    ),
                    WaitFor::Text(t) => format!(
                        "no element with {:?} appeared",
                        deskpilot_core::sanitize::one_line(t)
                    ),
                    WaitFor::Gone(t) => format!(
                        "the element with {:?} did not go away",
                        deskpilot_core::sanitize::one_line(t)
                    ),
                    WaitFor::Window(t) => format!(
                        "no window titled like {:?} appeared",
                        deskpilot_core::sanitize::one_line(t)
                    ),
                };
                let read = if matches!(cond, WaitFor::Window(_)) {
                    ""
                } else {
                    " (the app's tree was read)"
                };
                return Err(err(
                    ErrorCode::Timeout,
                    format!(
                        "{what} within {} ms{read}; observe the window to see its state, or wait longer (`timeout_ms` over MCP, `--timeout-ms` on the command line)",
                        timeout.as_millis()
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    }
}

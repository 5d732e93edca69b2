//! Teach mode (docs/ARCHITECTURE.md §7.19): the agent explains each step in a
//! bubble pointing at its element, and the step runs only when the person presses
//! Next. Exit ends teaching for the host's life.
//!
//! A step is an ordinary action: it passes the whole pipeline (grant, refusals,
//! mode, irreversible-action confirmation, budget) before the bubble is shown, so no
//! confirmation is ever asked behind it, and Next adds nothing to what the action
//! may do. Teaching grants no clipboard or desktop-shortcut rights: a step is an
//! element action, nothing else.

use deskpilot_core::Op;
use deskpilot_protocol::ErrorCode;

use super::judge::{Teach, teach_next_of};
use super::{Host, fail};
use crate::session::ActOutcome;
use deskpilot_protocol::Result;

impl Host {
    /// Runs `op` on ref `r` as a teach step explained by `text`.
    ///
    /// Errors: `COMPUTER_FEATURE_DISABLED` when this host shows nothing on screen
    /// (no presence); `COMPUTER_SCOPE_VIOLATION` once the person pressed Exit;
    /// `COMPUTER_CONFIRMATION_REQUIRED` (detail `{"teach":"exit"}`) when they press
    /// Exit on this step; otherwise [`Host::act`]'s.
    pub async fn teach_step(
        &mut self,
        r: &str,
        text: &str,
        op: Op,
        value: Option<String>,
    ) -> Result<ActOutcome> {
        if self.o.presence.is_none() || !self.o.settings.presence {
            return Err(fail(
                ErrorCode::FeatureDisabled,
                "teach mode shows a bubble on the desktop, and this server shows nothing there (no X display, or `presence` is off in the config)",
            ));
        }
        if self.teaching_over {
            return Err(fail(
                ErrorCode::ScopeViolation,
                "teaching ended: the person pressed Exit. Work with computer_act, or ask them to start the server again",
            ));
        }
        if text.trim().is_empty() {
            return Err(fail(
                ErrorCode::InvalidArgument,
                "say what the step does, for the person to read before pressing Next",
            ));
        }
        // Ask: every check runs, the bubble shows, nothing is sent. Next then
        // dispatches the step afresh: judged again on the window as it is now (a
        // label that changed while the bubble was up is asked about again, or
        // refused), and only if the element is still the one the person saw.
        self.teach = Some(Teach::Ask(deskpilot_core::sanitize::one_line(text)));
        let asked = self.act(r, op, value.clone()).await;
        self.teach = None;
        let seen = match asked {
            Err(e) => match teach_next_of(&e) {
                Some(seen) => seen,
                None => {
                    if e.detail
                        .as_ref()
                        .and_then(|d| d.get("teach"))
                        .is_some_and(|v| v == "exit")
                    {
                        self.teaching_over = true;
                    }
                    return Err(e);
                }
            },
            Ok(_) => {
                return Err(fail(
                    ErrorCode::Internal,
                    "a teach step was dispatched without its bubble",
                ));
            }
        };
        self.teach = Some(Teach::Run(seen));
        let out = self.act(r, op, value).await;
        self.teach = None;
        out
    }

    /// The person pressed Exit on a teach bubble.
    pub fn teaching_over(&self) -> bool {
        self.teaching_over
    }
}

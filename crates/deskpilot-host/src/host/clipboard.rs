//! The clipboard under the policy (docs/ARCHITECTURE.md §7.20): a grant of its own.
//!
//! Reading or writing the clipboard through deskpilot needs the user's `clipboard`
//! switch (default off), on top of everything a read or an action needs: the feature
//! switch, no stop, a grant. What the clipboard holds may have been copied from any
//! window — a refused one, a password manager — so a read is masked as a shown value
//! is. A write is an effect: it spends one action of the budget and is audited with
//! its length only. `keys ctrl+c` / `ctrl+v` in the bound window stay ordinary keys.

use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_protocol::types::{ClipboardContent, ClipboardWriteParams, ClipboardWritten};
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

use super::{Host, fail};
use crate::control;

/// What a clipboard call did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ClipboardOutcome {
    Read(ClipboardContent),
    Written(ClipboardWritten),
}

impl ClipboardOutcome {
    /// The result as a person reads it: the text read (escaped, as every text
    /// from the desktop is), or what was written and whether it was read back.
    pub fn summary(&self) -> String {
        match self {
            ClipboardOutcome::Read(c) => match &c.text {
                Some(t) => format!(
                    "clipboard ({} chars as shown{}):\n{}",
                    t.chars().count(),
                    if c.truncated { ", cut at 256 KiB" } else { "" },
                    deskpilot_core::sanitize::multi_line(t)
                ),
                None if c.truncated => {
                    "the clipboard holds a text too large to read (over 256 KiB)".into()
                }
                None => "the clipboard holds no text".into(),
            },
            ClipboardOutcome::Written(w) => format!(
                "clipboard set: {} bytes, {} ({})",
                w.bytes,
                if w.verified {
                    "read back verified"
                } else {
                    "NOT verified: the clipboard read back something else"
                },
                w.holder
            ),
        }
    }
}

impl Host {
    /// Reads the clipboard (`write` `None`) or puts `write` on it.
    ///
    /// Errors: `COMPUTER_SCOPE_VIOLATION` while the user's `clipboard` switch is
    /// off (audited as a refusal); the preflight's and the grant's errors;
    /// `COMPUTER_BUDGET_EXHAUSTED` for a write; the driver's
    /// (`COMPUTER_PLATFORM_UNSUPPORTED`, `COMPUTER_INPUT_UNAVAILABLE`,
    /// `COMPUTER_NOT_RESPONDING`).
    pub async fn clipboard(
        &mut self,
        write: Option<String>,
    ) -> Result<ClipboardOutcome, ComputerError> {
        let now = control::now_ms();
        self.preflight(now)?;
        let op = if write.is_some() {
            "clipboard_write"
        } else {
            "clipboard_read"
        };
        // Refused before a grant is issued for it.
        if !self.o.settings.clipboard {
            let e = fail(
                ErrorCode::ScopeViolation,
                "the clipboard is a grant of its own and the user has not given it; they can with `deskpilot config set clipboard true` (copying and pasting with `keys ctrl+c` / `ctrl+v` in the bound window needs no such grant)",
            );
            return Err(self.refuse(e, Some(op), None));
        }
        if write.is_some() && self.o.settings.mode == deskpilot_policy::mode::Mode::Plan {
            let e = fail(
                ErrorCode::ScopeViolation,
                "plan mode is read-only: a clipboard write is an effect. Change it with `deskpilot config set mode default`",
            );
            return Err(self.refuse(e, Some(op), None));
        }
        self.ensure_grant(now)?;
        let revision = self.revision();
        let text_len = write.as_ref().map(|t| t.chars().count());
        if write.is_some() {
            self.check_budget(revision, op, "clipboard")?;
        }
        let driver = self.session.driver().clone();
        let r = match write {
            Some(text) => driver
                .clipboard_write(ClipboardWriteParams { text })
                .await
                .map(ClipboardOutcome::Written),
            None => driver.clipboard_read().await.map(ClipboardOutcome::Read),
        };
        let writing = text_len.is_some();
        let mut rec = AuditRecord {
            event: Some(if writing {
                AuditEvent::Action
            } else {
                AuditEvent::Capture
            }),
            op: Some(op.into()),
            text_len,
            channel: Some("clipboard".into()),
            revision: Some(revision),
            ..AuditRecord::default()
        };
        match &r {
            Ok(ClipboardOutcome::Written(w)) => {
                rec.status = Some(if w.verified { "executed" } else { "unverified" }.into());
            }
            Ok(ClipboardOutcome::Read(_)) => rec.status = Some("executed".into()),
            Err(e) => {
                rec.status = Some("failed".into());
                rec.code = Some(e.code.as_str().into());
            }
        }
        self.audit(rec);
        if writing && r.is_ok() {
            self.policy_mut().authority.spend(control::now_ms());
        }
        self.after_call()?;
        r
    }
}

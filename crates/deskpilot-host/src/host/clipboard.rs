//! The clipboard under the policy (docs/ARCHITECTURE.md §7.20): a grant of its own.
//!
//! Reading or writing the clipboard through deskpilot needs the user's `clipboard`
//! switch (default off), on top of everything a read or an action needs: the feature
//! switch, no stop, a grant. What the clipboard holds may have been copied from any
//! window — a refused one, a password manager — so a read is masked as a shown value
//! is. A write is an effect: it spends one action of the budget and is audited with
//! its length only, through the one pipeline (`Host::perform`). `keys ctrl+c` /
//! `ctrl+v` in the bound window stay ordinary keys, except that a selection a
//! password manager marked (a target of
//! [`deskpilot_protocol::types::PASSWORD_MARK_TARGETS`]) is never pasted or read,
//! grant or not.

use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_protocol::ErrorCode;
use deskpilot_protocol::types::{ClipboardContent, ClipboardTargetsParams, ClipboardWritten};
use serde::Serialize;

use super::{Host, fail};
use crate::control;
use deskpilot_protocol::Result;

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
    /// A write is an effect: it passes the pipeline as every other does
    /// ([`Host::clipboard_write`], docs/ARCHITECTURE.md §7.11) — plan mode, the
    /// bound window and its refusals, the budget, the judge (a text naming
    /// deskpilot's own files is refused), the mode's gate — and is audited with its
    /// length only. A read needs the switch, no stop and a grant, and is audited as a
    /// capture.
    ///
    /// Errors: `COMPUTER_SCOPE_VIOLATION` while the user's `clipboard` switch is
    /// off (audited as a refusal); the pipeline's errors for a write; the
    /// preflight's and the grant's for a read; the driver's
    /// (`COMPUTER_PLATFORM_UNSUPPORTED`, `COMPUTER_INPUT_UNAVAILABLE`,
    /// `COMPUTER_NOT_RESPONDING`).
    pub async fn clipboard(&mut self, write: Option<String>) -> Result<ClipboardOutcome> {
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
                "the clipboard is a grant of its own and the user has not given it; they can with `deskpilot config set clipboard true` (copying with `keys ctrl+c` in the bound window needs no such grant)",
            );
            return Err(self.refuse(e, Some(op), None));
        }
        if let Some(text) = write {
            return self
                .clipboard_write(text)
                .await
                .map(ClipboardOutcome::Written);
        }
        self.ensure_grant(now)?;
        let revision = self.revision();
        let mut r = self.session.driver().clipboard_read().await;
        // A password a password manager copied is never read, grant or not; its
        // text (which the driver does not take) is dropped all the same.
        if let Ok(c) = &r
            && let Some(e) = deskpilot_policy::clipboard::marked_refused(
                "reading the clipboard",
                deskpilot_protocol::types::Selection::Clipboard,
                &c.targets,
            )
        {
            r = Err(e);
        }
        if let Err(e) = &r
            && e.code == ErrorCode::SecureInput
        {
            let e = e.clone();
            let _ = self.after_call();
            return Err(self.refuse(e, Some(op), None));
        }
        let mut rec = AuditRecord {
            event: Some(AuditEvent::Capture),
            op: Some(op.into()),
            channel: Some("clipboard".into()),
            revision: Some(revision),
            ..AuditRecord::default()
        };
        match &r {
            Ok(_) => rec.status = Some("executed".into()),
            Err(e) => {
                rec.status = Some("failed".into());
                rec.code = Some(e.code.as_str().into());
            }
        }
        self.audit(rec);
        self.after_call()?;
        r.map(ClipboardOutcome::Read)
    }

    /// Refuses a paste in `chord` (docs/ARCHITECTURE.md §7.20) when a selection it
    /// may paste from ([`deskpilot_policy::reach::pasted_selections`]) holds what a
    /// password manager marked as a password, asking the driver only which targets
    /// the owner offers. A driver that cannot tell refuses too: whether a password
    /// would be pasted is not known.
    ///
    /// Errors: `COMPUTER_SECURE_INPUT`.
    pub(super) async fn paste_unmarked(&self, chord: &str) -> Result<()> {
        for selection in deskpilot_policy::reach::pasted_selections(chord) {
            let offer = self
                .session
                .driver()
                .clipboard_targets(ClipboardTargetsParams { selection })
                .await
                .map_err(|e| {
                    fail(
                        ErrorCode::SecureInput,
                        format!(
                            "pasting is refused: whether what it would paste is a password a password manager copied cannot be told here ({}: {}). Type the text instead",
                            e.code.as_str(),
                            e.message
                        ),
                    )
                })?;
            if let Some(e) =
                deskpilot_policy::clipboard::marked_refused("pasting", selection, &offer.targets)
            {
                return Err(e);
            }
        }
        Ok(())
    }
}

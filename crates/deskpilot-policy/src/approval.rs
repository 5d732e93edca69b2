//! Approvals: the user's "yes" to one exact action, single-use, short-lived, and void
//! once the screen changed (docs/ARCHITECTURE.md §7).
//!
//! An approval binds the action's key (window, element fingerprint, op, and a hash of
//! the payload) and the screen it was asked on (a hash of the window's snapshot). It
//! arrives from the user through a channel the model cannot write to (`deskpilot
//! approve ID`, an MCP elicitation), never as a tool argument. Its id is chosen by the
//! caller from a random source; this module only checks it.

use deskpilot_core::Node;
use deskpilot_core::render::{RenderOptions, render};
use serde::{Deserialize, Serialize};

use crate::ErrorCode;
use crate::refusal::Refusal;

/// How long an approval stays usable: 5 minutes, enough to read the prompt and
/// answer, short enough that a stale "yes" does not linger.
pub const APPROVAL_TTL_MS: u64 = 5 * 60 * 1_000;

/// FNV-1a 64-bit: a stable hash of canonical text (not a secret, not a MAC: it only
/// tells one action or screen from another).
pub fn stable_hash(text: &str) -> u64 {
    deskpilot_core::hash::fnv1a(text.as_bytes())
}

/// The exact action an approval is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ActionKey {
    pub window: String,
    /// The element's ref fingerprint (role, name, position), not the ref string.
    pub element: String,
    pub op: String,
    /// [`stable_hash`] of the payload (typed text, chord); the payload itself is never
    /// stored.
    pub payload_hash: u64,
}

impl ActionKey {
    pub fn new(window: &str, element: &str, op: &str, payload: Option<&str>) -> Self {
        ActionKey {
            window: window.into(),
            element: element.into(),
            op: op.into(),
            payload_hash: stable_hash(payload.unwrap_or("")),
        }
    }
}

/// One pending or granted approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub action: ActionKey,
    /// Hash of the window snapshot when the approval was asked.
    pub screen: u64,
    pub expires_ms: u64,
    /// The user said yes.
    pub approved: bool,
    /// Already used once.
    pub used: bool,
    /// What the user is asked, for the prompt (`click button "Delete"` in mousepad).
    pub summary: String,
    /// The authenticator of the user's yes ([`Approval::sealed_text`] under a key
    /// only deskpilot's user channel reads), set by `deskpilot approve`. An approval
    /// whose seal does not verify is not approved, whatever `approved` says
    /// ([`Approvals::revoke_unsealed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl Approval {
    /// What a seal authenticates: the id, the action it is bound to, the screen and
    /// the expiry, one line.
    pub fn sealed_text(&self) -> String {
        format!(
            "deskpilot-approval-v1|{}|{}|{}|{}|{:016x}|{:016x}|{}",
            self.id,
            self.action.window,
            self.action.element,
            self.action.op,
            self.action.payload_hash,
            self.screen,
            self.expires_ms
        )
    }
}

/// The approvals of one host instance.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvals {
    items: Vec<Approval>,
}

fn refused(reason: impl Into<String>) -> Refusal {
    Refusal {
        code: ErrorCode::ConfirmationRequired,
        reason: reason.into(),
    }
}

impl Approvals {
    /// Records a request for the user's approval of `action` on `screen`.
    pub fn request(
        &mut self,
        id: String,
        action: ActionKey,
        screen: u64,
        summary: String,
        now_ms: u64,
    ) -> &Approval {
        self.items.retain(|a| a.expires_ms > now_ms && !a.used);
        self.items.push(Approval {
            id,
            action,
            screen,
            expires_ms: now_ms + APPROVAL_TTL_MS,
            approved: false,
            used: false,
            summary,
            seal: None,
        });
        self.items.last().expect("just pushed")
    }

    /// The approval with this id, if any.
    pub fn get(&self, id: &str) -> Option<&Approval> {
        self.items.iter().find(|a| a.id == id)
    }

    /// Approvals not used and not expired, oldest first.
    pub fn open(&self, now_ms: u64) -> impl Iterator<Item = &Approval> {
        self.items
            .iter()
            .filter(move |a| !a.used && a.expires_ms > now_ms)
    }

    /// The open (unused, unexpired) approval for exactly `action`, approved or still
    /// pending, so a retried action reuses its request instead of piling up new ones.
    pub fn find_for(&self, action: &ActionKey, now_ms: u64) -> Option<&Approval> {
        self.open(now_ms).find(|a| &a.action == action)
    }

    /// The user approves `id` (from a user-only channel).
    pub fn approve(&mut self, id: &str, now_ms: u64) -> Result<&Approval, Refusal> {
        let a = self
            .items
            .iter_mut()
            .find(|a| a.id == id)
            .ok_or_else(|| refused(format!("no pending approval {id}")))?;
        if a.expires_ms <= now_ms {
            return Err(refused(format!("approval {id} expired; ask again")));
        }
        a.approved = true;
        Ok(a)
    }

    /// Uses an approval for `action` on `screen`: it must be approved, unexpired,
    /// unused, for exactly this action, and the screen must not have changed.
    pub fn consume(
        &mut self,
        id: &str,
        action: &ActionKey,
        screen: u64,
        now_ms: u64,
    ) -> Result<(), Refusal> {
        let a = self.items.iter_mut().find(|a| a.id == id).ok_or_else(|| {
            refused(format!(
                "no approval {id}; the action needs the user's confirmation"
            ))
        })?;
        if a.used {
            return Err(refused(format!(
                "approval {id} was already used; each approval covers one action"
            )));
        }
        if !a.approved {
            return Err(refused(format!(
                "approval {id} is still waiting for the user (`deskpilot approve {id}`)"
            )));
        }
        if a.expires_ms <= now_ms {
            return Err(refused(format!("approval {id} expired; ask again")));
        }
        if &a.action != action {
            return Err(refused(format!(
                "approval {id} is for another action; ask for this one"
            )));
        }
        if a.screen != screen {
            a.used = true;
            return Err(refused(format!(
                "the window changed since approval {id} was given; it is void, ask again"
            )));
        }
        a.used = true;
        Ok(())
    }

    /// Sets the seal of approval `id` (after [`Approvals::approve`]).
    pub fn set_seal(&mut self, id: &str, seal: String) {
        if let Some(a) = self.items.iter_mut().find(|a| a.id == id) {
            a.seal = Some(seal);
        }
    }

    /// Turns every approval whose seal `verifies` rejects back into a pending one: a
    /// yes written into the file by anything but the user's channel is no yes.
    /// Returns how many were revoked.
    pub fn revoke_unsealed(&mut self, verifies: impl Fn(&Approval) -> bool) -> usize {
        let mut n = 0;
        for a in self.items.iter_mut().filter(|a| a.approved) {
            if !verifies(a) {
                a.approved = false;
                a.seal = None;
                n += 1;
            }
        }
        n
    }

    /// Marks as used every open approved approval that `spent` says was used (a
    /// record a rolled-back file cannot undo). Returns how many.
    pub fn mark_spent(&mut self, spent: impl Fn(&str) -> bool) -> usize {
        let mut n = 0;
        for a in self.items.iter_mut().filter(|a| a.approved && !a.used) {
            if spent(&a.id) {
                a.used = true;
                n += 1;
            }
        }
        n
    }

    /// Gives back approval `id` after the action it was used for failed at dispatch
    /// (nothing happened, so the user's yes still stands). Only an approved, used,
    /// unexpired approval is restored.
    pub fn restore(&mut self, id: &str, now_ms: u64) {
        if let Some(a) = self
            .items
            .iter_mut()
            .find(|a| a.id == id && a.approved && a.used && a.expires_ms > now_ms)
        {
            a.used = false;
        }
    }
}

/// What a confirmation shows of text to be written: one line, secrets masked
/// ([`deskpilot_core::redact::mask_secrets`]), at most 60 chars (Unicode scalar
/// values) with the total length when cut.
pub fn payload_preview(text: &str) -> String {
    let masked = deskpilot_core::redact::mask_secrets(text);
    let line = deskpilot_core::sanitize::one_line(&masked);
    let n = text.chars().count();
    if line.chars().count() <= 60 {
        line
    } else {
        format!("{}… ({n} chars)", line.chars().take(60).collect::<String>())
    }
}

/// A compact, text-free identity of `element` in `root`'s tree for approval keys and
/// the audit: `ROLE#ANCESTORHASH/INDEX` (its role, a hash of its ancestors' roles
/// and names, its index in its parent), or its role alone when it is not in the tree.
pub fn element_fingerprint(root: &Node, element: &Node) -> String {
    let fps = deskpilot_core::refs::fingerprint_all(root);
    let idx = root.walk().skip(1).position(|n| n.handle == element.handle);
    match idx.and_then(|i| fps.get(i)) {
        Some(f) => format!("{}#{:016x}/{}", f.role, f.ancestor_hash, f.index_in_parent),
        None => element.role.to_string(),
    }
}

/// Hash of what the window shows (its default render), to tell whether the screen
/// changed since an approval was asked.
pub fn screen_hash(root: &Node) -> u64 {
    stable_hash(&render(root, &RenderOptions::default()).text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(payload: &str) -> ActionKey {
        ActionKey::new("w1", "button|Delete|3", "click", Some(payload))
    }

    #[test]
    fn an_approval_is_single_use_and_bound_to_its_action_and_screen() {
        let mut ap = Approvals::default();
        ap.request("a1".into(), key(""), 7, "click Delete".into(), 0);
        assert!(
            ap.consume("a1", &key(""), 7, 1).is_err(),
            "not yet approved"
        );
        ap.approve("a1", 2).unwrap();
        assert!(
            ap.consume("a1", &key("other"), 7, 3).is_err(),
            "other payload"
        );
        ap.consume("a1", &key(""), 7, 4).unwrap();
        ap.restore("a1", 4);
        ap.consume("a1", &key(""), 7, 4).unwrap();
        let replay = ap.consume("a1", &key(""), 7, 5).unwrap_err();
        assert!(replay.reason.contains("already used"));
        assert_eq!(replay.code, ErrorCode::ConfirmationRequired);
    }

    #[test]
    fn a_changed_screen_or_time_voids_it() {
        let mut ap = Approvals::default();
        ap.request("a".into(), key(""), 7, "s".into(), 0);
        ap.approve("a", 1).unwrap();
        assert!(
            ap.consume("a", &key(""), 8, 2)
                .unwrap_err()
                .reason
                .contains("changed")
        );
        assert!(
            ap.consume("a", &key(""), 7, 3).is_err(),
            "void after the change"
        );

        let mut ap = Approvals::default();
        ap.request("b".into(), key(""), 7, "s".into(), 0);
        ap.approve("b", 1).unwrap();
        assert!(
            ap.consume("b", &key(""), 7, APPROVAL_TTL_MS + 1)
                .unwrap_err()
                .reason
                .contains("expired")
        );
    }

    #[test]
    fn the_hash_is_stable() {
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_ne!(stable_hash("a"), stable_hash("b"));
    }
}

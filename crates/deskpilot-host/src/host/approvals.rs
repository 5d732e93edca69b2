//! Confirmations: the mode's decision for one action and, when it asks, the user's
//! answer — a terminal prompt, or a single-use approval in the approvals file that
//! the user grants with `deskpilot approve ID` (docs/ARCHITECTURE.md §7).

use deskpilot_policy::allow::{allow_matches, app_identity};
use deskpilot_policy::approval::{ActionKey, Approvals};
use deskpilot_policy::mode::{ActionFacts, Decision, decide};
use deskpilot_policy::refusal::TargetFacts;
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::{HostOptions, fail, new_id, refused};
use crate::control;
use deskpilot_protocol::Result;

/// Runs `f` on the approvals file under an exclusive lock, writing it back.
fn with_approvals<R>(path: &std::path::Path, f: impl FnOnce(&mut Approvals) -> R) -> Result<R> {
    let internal = |m: String| fail(ErrorCode::Internal, m);
    if let Some(dir) = path.parent() {
        crate::store::ensure_private_dir(dir)?;
    }
    let lock_path = path.with_extension("lock");
    let _lock = deskpilot_os::lock_file(&lock_path)
        .map_err(|e| internal(format!("cannot lock {}: {e}", lock_path.display())))?;
    let mut ap: Approvals = match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Approvals::default(),
        Err(e) => return Err(internal(format!("cannot read {}: {e}", path.display()))),
        // A damaged file holds no approval: it is recreated empty (an approval can
        // only widen the policy, so losing one only makes an action ask again).
        Ok(t) => serde_json::from_str(&t).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "damaged approvals file recreated empty; pending approvals are void");
            Approvals::default()
        }),
    };
    // A yes counts only with its seal: `approved: true` written into the file by
    // anything but `deskpilot approve` (a text editor saving over it) is revoked.
    let key = seal_key(path);
    let revoked = ap.revoke_unsealed(|a| {
        key.as_ref().is_ok_and(|k| {
            a.seal
                .as_deref()
                .is_some_and(|s| verify(k, &a.sealed_text(), s))
        })
    });
    if revoked > 0 {
        tracing::warn!(revoked, path = %path.display(), "approvals without a valid seal were revoked (changed outside deskpilot)");
    }
    // A used approval stays used even if an old copy of the file is put back: the
    // keyring remembers which were spent.
    ap.mark_spent(|id| {
        !matches!(
            deskpilot_os::keyring::find_user_secret(&spent_flag(id)),
            Ok(None)
        )
    });
    let out = f(&mut ap);
    let text =
        serde_json::to_vec(&ap).map_err(|e| internal(format!("cannot encode approvals: {e}")))?;
    deskpilot_os::write_private_atomic(path, &text)
        .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
    Ok(out)
}

/// The secret approvals are sealed with: kept in the kernel's user keyring
/// ([`deskpilot_os::keyring`]), which no file-opening app reads.
fn seal_key(path: &std::path::Path) -> Result<SealKey> {
    use hmac::KeyInit as _;
    let lock = path.with_extension("keyring.lock");
    deskpilot_os::keyring::user_secret("deskpilot:approvals-seal:v1", &lock)
        // HMAC takes a key of any length: `new_from_slice` never fails.
        .map(|s| SealKey::new_from_slice(&s).expect("HMAC accepts keys of every length"))
        .map_err(|e| {
            ComputerError::new(
                ErrorCode::OsPermissionMissing,
                format!(
                    "approvals cannot be sealed without the kernel keyring ({e}); confirm at a terminal prompt instead"
                ),
            )
        })
}

/// The keyring entry that records approval `id` as used; it outlives the approval
/// (10 min against its 5).
fn spent_flag(id: &str) -> String {
    format!("deskpilot:approval-spent:{id}")
}

/// Records in the keyring that approval `id` was used (best effort: without a
/// keyring no approval was sealed, so none can be used).
fn mark_spent(id: &str) {
    if let Err(e) = deskpilot_os::keyring::set_user_flag(&spent_flag(id), 600) {
        tracing::warn!(error = %e, "approval use not recorded in the keyring");
    }
}

/// HMAC-SHA256 (RFC 2104) keyed with the approvals' secret.
type SealKey = hmac::Hmac<sha2::Sha256>;

/// HMAC-SHA256 of `text` under `key`, hex (64 characters).
fn sign(key: &SealKey, text: &str) -> String {
    use hmac::Mac as _;
    key.clone()
        .chain_update(text.as_bytes())
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `seal` is `text`'s HMAC under `key` (compared in constant time).
fn verify(key: &SealKey, text: &str, seal: &str) -> bool {
    use hmac::Mac as _;
    let Some(tag) = (0..seal.len())
        .step_by(2)
        .map(|i| {
            seal.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
    else {
        return false;
    };
    key.clone()
        .chain_update(text.as_bytes())
        .verify_slice(&tag)
        .is_ok()
}

/// Marks approval `id` approved and seals it: the user's side of a confirmation
/// (`deskpilot approve ID`). Returns what the approval is for.
///
/// Errors: `COMPUTER_CONFIRMATION_REQUIRED` when no such approval is pending or it
/// expired; `COMPUTER_OS_PERMISSION_MISSING` without a kernel keyring to seal with.
pub fn approve(path: &std::path::Path, id: &str) -> Result<String> {
    let now = control::now_ms();
    let key = seal_key(path)?;
    with_approvals(path, |ap| {
        let (summary, text) = ap
            .approve(id, now)
            .map(|a| (a.summary.clone(), a.sealed_text()))
            .map_err(refused)?;
        ap.set_seal(id, sign(&key, &text));
        Ok(summary)
    })?
}

/// The summary of a pending approval, for the prompt of `deskpilot approve`.
pub fn pending_approval(path: &std::path::Path, id: &str) -> Result<Option<String>> {
    let now = control::now_ms();
    with_approvals(path, |ap| {
        ap.open(now)
            .find(|a| a.id == id && !a.approved)
            .map(|a| a.summary.clone())
    })
}

/// Gives back approval `id` after its action failed at dispatch
/// ([`Approvals::restore`]). Best-effort: a file that cannot be written leaves the
/// approval spent, which only makes the action ask again.
pub(super) fn restore_approval(path: &std::path::Path, id: &str) {
    let now = control::now_ms();
    if let Err(e) = deskpilot_os::keyring::clear_user_flag(&spent_flag(id)) {
        tracing::warn!(error = %e, "approval use not cleared in the keyring; it stays spent");
        return;
    }
    if let Err(e) = with_approvals(path, |ap| ap.restore(id, now)) {
        tracing::warn!(error = %e.message, "approval not restored");
    }
}

/// What the gate decided for an action that may go ahead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Passed {
    /// The user confirmed a first use of the app.
    pub first_use: bool,
    /// How it was confirmed, for the audit (`prompt`, `approve:<id>`); `None` when the
    /// mode allowed it without asking.
    pub approved_by: Option<String>,
    /// The approval spent on it, given back if the action fails at dispatch.
    pub approval_id: Option<String>,
}

/// One action put to the mode and, when it asks, to the user.
pub(super) struct Ask<'a> {
    /// The app the action is in, as measured.
    pub target: &'a TargetFacts,
    /// What an approval is bound to.
    pub key: ActionKey,
    /// [`deskpilot_policy::approval::screen_hash`] of the window now (0 for none).
    pub screen: u64,
    /// What the user is asked about (`click button "Delete" in mousepad`).
    pub summary: String,
    /// Why the action is irreversible, when it is.
    pub irreversible: Option<String>,
}

/// Checks the mode and confirmation for an action; returns how it passed. Never
/// called for a refused action.
///
/// Errors: the mode's refusal (`COMPUTER_SCOPE_VIOLATION`), and
/// `COMPUTER_CONFIRMATION_REQUIRED` with `detail.approval_id` while the user has not
/// approved (or declined at the prompt); `COMPUTER_INTERNAL` when the approvals file
/// cannot be read or written.
pub(super) fn gate(o: &HostOptions, approved_apps: &[String], ask: Ask<'_>) -> Result<Passed> {
    let Ask {
        target,
        key,
        screen,
        summary,
        irreversible,
    } = ask;
    let s = &o.settings;
    let allow_listed = s.allow_all_apps || s.allow_apps.iter().any(|a| allow_matches(a, target));
    let app_approved = approved_apps.contains(&app_identity(target));
    let facts = ActionFacts {
        allow_listed,
        app_approved,
        irreversible: irreversible.is_some(),
    };
    match decide(s.mode, facts) {
        Decision::Allow => Ok(Passed::default()),
        Decision::Refuse { code, reason } => Err(fail(code, reason)),
        Decision::Confirm { reason } => {
            let first_use = irreversible.is_none();
            let why = match &irreversible {
                Some(m) => format!("irreversible: {m}"),
                None => reason,
            };
            let question = format!("{summary} ({why})");
            if let Some(prompt) = &o.prompt {
                return if prompt(&question) {
                    Ok(Passed {
                        first_use,
                        approved_by: Some("prompt".into()),
                        approval_id: None,
                    })
                } else {
                    Err(fail(
                        ErrorCode::ConfirmationRequired,
                        "you declined this action; nothing was done",
                    ))
                };
            }
            let now = control::now_ms();
            // The id a new question gets (drawn before the file is locked).
            let fresh = new_id(10)?;
            let verdict = with_approvals(&o.approvals_path, |ap| {
                match ap.find_for(&key, now).map(|a| (a.id.clone(), a.approved)) {
                    Some((id, true)) => ap.consume(&id, &key, screen, now).map(|()| Ok(id)),
                    Some((id, false)) => Ok(Err(id)),
                    None => {
                        ap.request(fresh.clone(), key.clone(), screen, question.clone(), now);
                        Ok(Err(fresh))
                    }
                }
            })?;
            match verdict {
                Ok(Ok(id)) => {
                    mark_spent(&id);
                    Ok(Passed {
                        first_use,
                        approved_by: Some(format!("approve:{id}")),
                        approval_id: Some(id),
                    })
                }
                Ok(Err(id)) => {
                    let mut e = fail(
                        ErrorCode::ConfirmationRequired,
                        format!(
                            "{question} needs the user's confirmation. Ask them to run `deskpilot approve {id}` in a terminal, then retry exactly the same action; the approval is single-use, expires in 5 min and is void if the window changes"
                        ),
                    );
                    e.detail = Some(serde_json::json!({
                        "approval_id": id,
                        "action": question,
                    }));
                    Err(e)
                }
                Err(r) => Err(refused(r)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use hmac::KeyInit as _;

    use super::{SealKey, sign, verify};

    /// RFC 4231 test case 2: approvals are sealed with the standard HMAC-SHA256, so
    /// seals made before stay valid; a seal changed in one digit, shortened or not
    /// hex is refused.
    #[test]
    fn seals_are_rfc_4231_hmac_sha256() {
        let key = SealKey::new_from_slice(b"Jefe").unwrap();
        let text = "what do ya want for nothing?";
        let want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        assert_eq!(sign(&key, text), want);
        assert!(verify(&key, text, want));
        assert!(!verify(&key, text, &want.replace("5bdc", "5bdd")));
        assert!(!verify(&key, text, &want[..62]));
        assert!(!verify(&key, text, &want.replace("5bdc", "5bzz")));
        assert!(!verify(&key, "what do ya want for nothing!", want));
    }
}

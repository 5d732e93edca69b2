//! Confirmations: the mode's decision for one action and, when it asks, the user's
//! answer — a terminal prompt, or a single-use approval in the approvals file that
//! the user grants with `deskpilot approve ID` (docs/ARCHITECTURE.md §7).

use deskpilot_policy::allow::{allow_matches, app_identity};
use deskpilot_policy::approval::{ActionKey, Approvals};
use deskpilot_policy::mode::{ActionFacts, Decision, decide};
use deskpilot_policy::refusal::TargetFacts;
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::{HostOptions, fail, random_hex, refused};
use crate::control;

/// Runs `f` on the approvals file under an exclusive lock, writing it back.
fn with_approvals<R>(
    path: &std::path::Path,
    f: impl FnOnce(&mut Approvals) -> R,
) -> Result<R, ComputerError> {
    let internal = |m: String| fail(ErrorCode::Internal, m);
    if let Some(dir) = path.parent() {
        deskpilot_os::ensure_private_dir(dir)
            .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
    }
    let lock_path = path.with_extension("lock");
    let _lock = deskpilot_os::lock_file(&lock_path)
        .map_err(|e| internal(format!("cannot lock {}: {e}", lock_path.display())))?;
    let mut ap: Approvals = match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Approvals::default(),
        Err(e) => return Err(internal(format!("cannot read {}: {e}", path.display()))),
        Ok(t) => serde_json::from_str(&t).map_err(|e| {
            internal(format!(
                "{} is damaged ({e}); remove it (pending approvals are lost; the actions will ask again)",
                path.display()
            ))
        })?,
    };
    let out = f(&mut ap);
    let text =
        serde_json::to_vec(&ap).map_err(|e| internal(format!("cannot encode approvals: {e}")))?;
    deskpilot_os::write_private_atomic(path, &text)
        .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
    Ok(out)
}

/// Marks approval `id` approved: the user's side of a confirmation (`deskpilot
/// approve ID`). Returns what the approval is for.
///
/// Errors: `COMPUTER_CONFIRMATION_REQUIRED` when no such approval is pending or it
/// expired.
pub fn approve(path: &std::path::Path, id: &str) -> Result<String, ComputerError> {
    let now = control::now_ms();
    with_approvals(path, |ap| {
        ap.approve(id, now)
            .map(|a| a.summary.clone())
            .map_err(refused)
    })?
}

/// The summary of a pending approval, for the prompt of `deskpilot approve`.
pub fn pending_approval(path: &std::path::Path, id: &str) -> Result<Option<String>, ComputerError> {
    let now = control::now_ms();
    with_approvals(path, |ap| {
        ap.open(now)
            .find(|a| a.id == id && !a.approved)
            .map(|a| a.summary.clone())
    })
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

/// Checks the mode and confirmation for an action; returns whether the user
/// approved a first use of the app. Never called for a refused action.
///
/// Errors: the mode's refusal (`COMPUTER_SCOPE_VIOLATION`), and
/// `COMPUTER_CONFIRMATION_REQUIRED` with `detail.approval_id` while the user has not
/// approved (or declined at the prompt); `COMPUTER_INTERNAL` when the approvals file
/// cannot be read or written.
pub(super) fn gate(
    o: &HostOptions,
    approved_apps: &[String],
    ask: Ask<'_>,
) -> Result<bool, ComputerError> {
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
        Decision::Allow => Ok(false),
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
                    Ok(first_use)
                } else {
                    Err(fail(
                        ErrorCode::ConfirmationRequired,
                        "you declined this action; nothing was done",
                    ))
                };
            }
            let now = control::now_ms();
            let verdict = with_approvals(&o.approvals_path, |ap| {
                match ap.find_for(&key, now).map(|a| (a.id.clone(), a.approved)) {
                    Some((id, true)) => ap.consume(&id, &key, screen, now).map(|()| None),
                    Some((id, false)) => Ok(Some(id)),
                    None => {
                        let id = random_hex()[..10].to_string();
                        ap.request(id.clone(), key.clone(), screen, question.clone(), now);
                        Ok(Some(id))
                    }
                }
            })?;
            match verdict {
                Ok(None) => Ok(first_use),
                Ok(Some(id)) => {
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

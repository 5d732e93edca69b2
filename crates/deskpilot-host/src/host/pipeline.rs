//! The one action pipeline: every effect on the desktop — `act`, `keys`, a pointer
//! gesture, and every future kind — passes through [`Host::perform`], with the
//! policy's steps in one place and in one order (docs/ARCHITECTURE.md §7.11):
//!
//! 1. preflight (feature switch, boot, stop, idle expiry), the grant and its lock,
//!    plan mode, the bound window (a vanished one fails `COMPUTER_STALE_REVISION`)
//!    and its refusals, re-run on a fresh enumeration ([`Host::action_target`]);
//! 2. what the effect was aimed with is current: refs shown under this revision for
//!    `act`, the bound window for `keys`, a basis of this revision and geometry for a
//!    pointer gesture ([`Host::check_aim`]);
//! 3. the action budget;
//! 4. on the window as it is now (the element as resolved just before dispatch, for
//!    `act`): the input refusals (password fields), what the effect activates
//!    (irreversible or not), the approval key and the mode's gate ([`Judge`]);
//! 5. dispatch through the session;
//! 6. a failure is audited as a refusal (a policy code) or a failed action; a success
//!    spends the budget, remembers a first-use approval, is audited, notes the
//!    refusal of each window it opened and a closed bound window, re-stamps the
//!    window's refs (after an `act`, whose refs were current), and the state is
//!    saved.
//!
//! The entry points ([`Host::act`], [`Host::keys`], [`Host::pointer`]) only build an
//! [`Effect`].

use deskpilot_core::{Node, Op, Role};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::input::elements_at;
use deskpilot_protocol::ErrorCode;
use deskpilot_protocol::types::{ClipboardWritten, PointerAction, PointerParams, WindowInfo};

use super::approvals::restore_approval;
use super::effect::{Effect, mismatched, not_dispatched};
use super::judge::{GateNote, Judge, teach_next_of};
use super::{Basis, Host};

/// How long a pointer rests over its point before what lies under it is read
/// again (and, when it changed, the press judged again):
/// 150 ms, longer than GTK's, Qt's and browsers' hover feedback takes to reach the
/// tree (a few frames) and shorter than a tooltip's delay (500 ms).
pub const HOVER_SETTLE: std::time::Duration = std::time::Duration::from_millis(150);

/// How long a covered window raised for a pointer gesture may take to come to the
/// front: 1 s, as long as a window manager's focus change takes under load.
pub const RAISE_WAIT: std::time::Duration = std::time::Duration::from_millis(1000);
use crate::control;
use crate::session::{ActOutcome, Change, KeysOutcome, Target};
use deskpilot_protocol::Result;

/// Codes that mean the policy refused an effect, as opposed to an effect that was
/// tried and failed: audited as `refusal` with status `refused`.
const REFUSAL_CODES: [ErrorCode; 6] = [
    ErrorCode::SecureInput,
    ErrorCode::ConfirmationRequired,
    ErrorCode::ScopeViolation,
    ErrorCode::SelfTarget,
    ErrorCode::Denylisted,
    ErrorCode::TargetElevated,
];

/// What an effect did.
enum Outcome {
    Act(ActOutcome),
    Input(KeysOutcome),
    Clipboard(ClipboardWritten),
}

impl Outcome {
    /// What it changed in the windows; `None` for a clipboard write.
    fn change_mut(&mut self) -> Option<&mut Change> {
        match self {
            Outcome::Act(o) => Some(&mut o.change),
            Outcome::Input(o) => Some(&mut o.change),
            Outcome::Clipboard(_) => None,
        }
    }

    /// Appends a line to the text the model reads and recounts its tokens.
    fn append(&mut self, line: &str) {
        let (text, tokens) = match self {
            Outcome::Act(o) => (&mut o.text, &mut o.tokens),
            Outcome::Input(o) => (&mut o.text, &mut o.tokens),
            Outcome::Clipboard(_) => return,
        };
        text.push_str(line);
        *tokens = deskpilot_core::tokens::count(text);
    }

    /// The channel it went through and its status (`executed`, `outcome_unknown`…).
    fn channel_status(&self) -> (String, String) {
        match self {
            Outcome::Act(o) => (
                o.result.channel.as_str().into(),
                o.result.status.as_str().into(),
            ),
            Outcome::Input(o) => (o.result.channel.as_str().into(), "executed".into()),
            Outcome::Clipboard(w) => (
                "clipboard".into(),
                if w.verified { "executed" } else { "unverified" }.into(),
            ),
        }
    }
}

impl Host {
    /// Performs `op` on ref `r` of the bound window under the policy.
    ///
    /// Errors, besides [`crate::Session::act`]'s: `COMPUTER_FEATURE_DISABLED`,
    /// `COMPUTER_STOPPED_BY_USER`, `COMPUTER_NO_GRANT`, `COMPUTER_SCOPE_VIOLATION`
    /// (plan mode, allow-list), `COMPUTER_STALE_REVISION` (refs from another binding,
    /// or the bound window closed), `COMPUTER_BUDGET_EXHAUSTED`,
    /// `COMPUTER_GRANT_EXPIRED`, `COMPUTER_SECURE_INPUT` (text into a password field),
    /// `COMPUTER_ELEMENT_NOT_ACTIONABLE` (an off-screen element), refusal codes of the
    /// window, `COMPUTER_CONFIRMATION_REQUIRED`.
    pub async fn act(&mut self, r: &str, op: Op, value: Option<String>) -> Result<ActOutcome> {
        if super::pixels::is_ocr_ref(r) {
            let k = self.act_ocr(r, op).await?;
            return Ok(ActOutcome {
                ref_: r.into(),
                op,
                result: deskpilot_protocol::types::ActResult {
                    status: deskpilot_protocol::types::ActStatus::Executed,
                    channel: k.result.channel,
                    method: "XTest pointer at the centre of the text OCR read".into(),
                    elapsed_ms: k.result.elapsed_ms,
                    settle: None,
                    after: None,
                    note: Some(
                        "synthetic pointer input on pixels: the tree cannot confirm what it did; the diff or a new observe shows it"
                            .into(),
                    ),
                },
                change: k.change,
                elapsed_ms: k.elapsed_ms,
                text: k.text,
                tokens: k.tokens,
            });
        }
        let effect = Effect::Act {
            r: r.into(),
            op,
            value,
        };
        match self.perform(effect).await? {
            Outcome::Act(out) => Ok(out),
            _ => Err(mismatched("act")),
        }
    }

    /// Sends keys to the bound window under the policy. `target` must be the bound
    /// window (keys never bind): another window is `COMPUTER_SCOPE_VIOLATION`.
    /// Input that could reach a password field refuses with `COMPUTER_SECURE_INPUT`;
    /// the other errors are [`Host::act`]'s.
    pub async fn keys(
        &mut self,
        target: &Target,
        chord: Option<String>,
        text: Option<String>,
    ) -> Result<KeysOutcome> {
        let effect = Effect::Keys {
            target: target.clone(),
            chord,
            text,
        };
        match self.perform(effect).await? {
            Outcome::Input(out) => Ok(out),
            _ => Err(mismatched("keys")),
        }
    }

    /// A pointer gesture at (`x`, `y`) in capture pixels relative to the window of
    /// `basis` (docs/ARCHITECTURE.md §8). The host re-measures the bound window before
    /// dispatch: another revision, a moved or resized window, or a window that lost
    /// focus is `COMPUTER_STALE_BASIS`; a point outside the window is
    /// `COMPUTER_SCOPE_VIOLATION` (never a clamped click). The other errors are
    /// [`Host::keys`]'.
    pub async fn pointer(
        &mut self,
        basis: &Basis,
        x: f64,
        y: f64,
        action: PointerAction,
    ) -> Result<KeysOutcome> {
        self.pointer_seen(basis, x, y, action, None).await
    }

    /// [`Host::pointer`] at a point where OCR read `seen`.
    pub(super) async fn pointer_seen(
        &mut self,
        basis: &Basis,
        x: f64,
        y: f64,
        action: PointerAction,
        seen: Option<String>,
    ) -> Result<KeysOutcome> {
        let effect = Effect::Pointer {
            basis: *basis,
            x,
            y,
            action,
            seen,
        };
        match self.perform(effect).await? {
            Outcome::Input(out) => Ok(out),
            _ => Err(mismatched("a pointer gesture")),
        }
    }

    /// Puts `text` on the clipboard, for pasting into the bound window: an effect like
    /// any other (the whole pipeline, one action of the budget, audited with its length
    /// only). The caller has checked the user's `clipboard` switch.
    pub(super) async fn clipboard_write(&mut self, text: String) -> Result<ClipboardWritten> {
        match self.perform(Effect::Clipboard { text }).await? {
            Outcome::Clipboard(w) => Ok(w),
            _ => Err(mismatched("a clipboard write")),
        }
    }

    /// A click that pastes writes text: it needs the `type` tier
    /// (docs/ARCHITECTURE.md §7.22), whatever op or gesture spells it.
    fn paste_allowed(&self, judge: &Judge) -> Result<()> {
        let tier = self.rules.tier_of(&judge.facts);
        match deskpilot_policy::tier::check(
            &judge.facts.app,
            tier,
            deskpilot_policy::tier::Tier::Type,
            "a click on a Paste control (it writes the clipboard's text)",
        ) {
            Some(r) => Err(super::refused(r)),
            None => Ok(()),
        }
    }

    /// The pipeline (see the module documentation): every effect on the desktop
    /// passes here.
    async fn perform(&mut self, effect: Effect) -> Result<Outcome> {
        let op = effect.op();
        // 1. Preflight, grant, plan mode, the bound window and its refusals.
        // Keys carry no refs or basis: keys that name their window (`--app`,
        // `--window`) go to the bound window as it is now, even when the grant just
        // moved there because its window closed (step 2 checks it is the one named).
        // Keys that name none were meant for the window that closed.
        let aimed =
            !matches!(&effect, Effect::Keys { target, .. } if !matches!(target, Target::Current));
        let (window, cand, moved) = self.action_target(&op, aimed).await?;
        let app = cand.facts.app.clone();
        // A window that is not on screen takes nothing it could not show; one that
        // other windows cover is raised for a pointer gesture, and the result says
        // so.
        let (window, raised) = match effect.not_viewable(&window) {
            None => (window, None),
            Some(e) => match self.raise_covered(&effect, &window, &cand, &op).await? {
                Some(w) => {
                    let said = format!(
                        "\nraised window {:?} to the front first: other windows covered all of it",
                        deskpilot_core::sanitize::one_line(&w.title)
                    );
                    (w, Some(said))
                }
                None => return Err(self.refuse(e, Some(&op), Some(&app))),
            },
        };
        let revision = self.revision();
        // 2. What the effect was aimed with is current.
        let point = self
            .check_aim(&effect, &op, &window, revision, &app)
            .await?;
        // The app's capability tier (docs/ARCHITECTURE.md §7.22): an effect beyond it
        // is refused, whatever it is spelled as. 3. Budget.
        self.tier_and_budget(&effect, &cand, &op, revision)?;
        // 4–5. Judge on the window as it is now, then dispatch.
        let judge = Judge {
            o: self.o.clone(),
            rules: self.rules.clone(),
            approved_apps: self.policy().approved_apps.clone(),
            facts: cand.facts.clone(),
            window_key: format!(
                "{}/{}/{}",
                self.o.desktop_key, self.o.session, window.handle.0
            ),
            no_tree: window.no_tree,
            window: window.clone(),
            teach: self.teach.clone(),
        };
        let mut note = GateNote::default();
        let result = self
            .dispatch(&effect, &window, point, &judge, &mut note)
            .await;
        // 6. Audit, spend, and what the effect changed.
        let mut rec = AuditRecord {
            event: Some(effect.event()),
            app: Some(app.clone()),
            pid: cand.facts.pid,
            op: Some(op.clone()),
            role: note.role.map(|r| r.to_string()),
            fingerprint: note.fingerprint.clone().filter(|f| !f.is_empty()),
            text_len: effect.text_len(),
            ..AuditRecord::default()
        };
        let mut out = match result {
            Ok(out) => out,
            Err(e) => {
                // The effect went through (the error came after it), or a dropped
                // device link cut its call off so nobody knows: either way it
                // counts against the budget, and the audit says which.
                let sent = self.session.effect_sent();
                let unknown = self.session.effect_unknown();
                let refusal = REFUSAL_CODES.contains(&e.code) && !sent && !unknown;
                // A teach step's Next: nothing was sent, and the step is dispatched
                // (and audited) next.
                if teach_next_of(&e).is_some() {
                    if let Some(id) = note.passed.approval_id.as_deref() {
                        restore_approval(&self.o.approvals_path, id);
                    }
                    if let Err(save) = self.after_call() {
                        tracing::warn!(error = %save.message, "state not saved after a teach bubble");
                    }
                    return Err(e);
                }
                if refusal {
                    rec.event = Some(AuditEvent::Refusal);
                }
                rec.status = Some(
                    if refusal {
                        "refused"
                    } else if sent {
                        "done, then failed"
                    } else if unknown {
                        "unknown: the link dropped"
                    } else {
                        "failed"
                    }
                    .into(),
                );
                rec.code = Some(e.code.as_str().into());
                self.audit(rec);
                if sent || unknown {
                    self.policy_mut().authority.spend(control::now_ms());
                }
                // An approval spent on an action whose dispatch failed stays the user's:
                // nothing was done with it. Once the driver took the effect, it is spent.
                let sent = sent || unknown;
                if let Some(id) = note
                    .passed
                    .approval_id
                    .as_deref()
                    .filter(|_| !refusal && !sent)
                {
                    restore_approval(&self.o.approvals_path, id);
                }
                // The refusal is the answer; a state file that cannot be saved must
                // not hide it (its approval id, its code).
                if let Err(save) = self.after_call() {
                    tracing::warn!(error = %save.message, "state not saved after a refusal");
                }
                return Err(e);
            }
        };
        self.policy_mut().authority.spend(control::now_ms());
        if note.passed.first_use {
            self.remember_app(&cand.facts);
        }
        let (channel, status) = out.channel_status();
        rec.channel = Some(channel);
        rec.status = Some(status);
        rec.approved_by = note.passed.approved_by.clone();
        self.audit(rec);
        if let Some(change) = out.change_mut() {
            self.mark_new_windows(change);
        }
        for n in [moved, raised].into_iter().flatten() {
            out.append(&n);
        }
        if let Some(n) = out
            .change_mut()
            .and_then(|change| self.bound_closed_note(&window, change))
        {
            out.append(&n);
        }
        if matches!(effect, Effect::Act { .. }) {
            // The act's refs were current (step 2): they stay current. Keys and
            // pointer input never re-stamp: refs of the window not shown under this
            // revision stay stale until it is observed again.
            self.stamp(&window, None);
        }
        self.after_call()?;
        Ok(out)
    }

    /// Steps 2½ and 3: the app's capability tier allows `effect`, and the budget
    /// one more action (docs/ARCHITECTURE.md §7.11, §7.22).
    fn tier_and_budget(
        &mut self,
        effect: &Effect,
        cand: &deskpilot_policy::grant::Candidate,
        op: &str,
        revision: u64,
    ) -> Result<()> {
        let app = cand.facts.app.clone();
        let tier = self.rules.tier_of(&cand.facts);
        if let Some(r) =
            deskpilot_policy::tier::check(&app, tier, effect.tier(), &effect.describe())
        {
            return Err(self.refuse(super::refused(r), Some(op), Some(&app)));
        }
        self.check_budget(revision, op, &app)
    }

    /// The bound `window`, raised, for a pointer gesture on it while other windows
    /// cover all of it (docs/ARCHITECTURE.md §7.11): once the app's tier and the
    /// budget allow the gesture (nothing is done to the desktop for one they
    /// refuse), the driver activates it, as it does for keys and a pointer gesture
    /// in a window without focus, and the windows are read again until it is active
    /// and not wholly covered, for up to [`RAISE_WAIT`]. `Ok(None)` for any other
    /// effect or reason (unmapped, minimised, another workspace: deskpilot does not
    /// restore or switch), or when raising failed or left it covered.
    async fn raise_covered(
        &mut self,
        effect: &Effect,
        window: &WindowInfo,
        cand: &deskpilot_policy::grant::Candidate,
        op: &str,
    ) -> Result<Option<WindowInfo>> {
        if !matches!(effect, Effect::Pointer { .. })
            || window.hidden.is_some()
            || !window.fully_covered()
        {
            return Ok(None);
        }
        self.tier_and_budget(effect, cand, op, self.revision())?;
        let driver = self.session.driver().clone();
        if let Err(e) = driver
            .activate(deskpilot_protocol::types::ActivateParams {
                window: window.handle.clone(),
            })
            .await
        {
            tracing::debug!(error = %e.message, "raising a covered window failed");
            return Ok(None);
        }
        let start = std::time::Instant::now();
        loop {
            let Some(now) = driver
                .windows()
                .await
                .ok()
                .and_then(|ws| ws.into_iter().find(|w| w.handle == window.handle))
            else {
                return Ok(None);
            };
            if now.active && now.hidden.is_none() && !now.fully_covered() {
                return Ok(Some(now));
            }
            if start.elapsed() >= RAISE_WAIT {
                return Ok(None);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Steps 4–5: the judge on the window as it is now, then the session's dispatch.
    async fn dispatch(
        &mut self,
        effect: &Effect,
        window: &WindowInfo,
        point: Option<(i32, i32)>,
        judge: &Judge,
        note: &mut GateNote,
    ) -> Result<Outcome> {
        if let Effect::Act { r, op, value } = effect {
            // A click on the app's own Paste control is a paste: the clipboard
            // grant, and never a password a password manager marked. The mark is
            // asked for here (the driver answers asynchronously) on the element as
            // last read; the judge below re-checks the element as read now.
            let activates = matches!(op, Op::Click | Op::DoubleClick | Op::Toggle | Op::Select);
            let paste_checked = activates
                && self
                    .session
                    .state()
                    .per_window
                    .get(window.handle.0.as_str())
                    .and_then(|ws| ws.last.as_ref())
                    .and_then(|t| t.walk().find(|n| n.ref_.as_deref() == Some(r.as_str())))
                    .is_some_and(deskpilot_policy::clipboard::pastes_through);
            if paste_checked {
                self.paste_allowed(judge)?;
            }
            if paste_checked && self.o.settings.clipboard {
                self.paste_unmarked("ctrl+v").await?;
            }
            let clipboard = self.o.settings.clipboard;
            // The session acts in its current window: the bound one.
            self.session.state_mut().current = Some(window.handle.0.clone());
            return self
                .session
                .act_checked(r, *op, value.clone(), |root, el| {
                    if activates && deskpilot_policy::clipboard::pastes_through(el) {
                        if !clipboard {
                            return Err(super::fail(
                                ErrorCode::ScopeViolation,
                                super::judge::PASTE_NEEDS_GRANT,
                            ));
                        }
                        if !paste_checked {
                            return Err(super::fail(
                                ErrorCode::StaleRef,
                                format!(
                                    "{r} now reads as a Paste control, which it did not when it was last observed; observe again"
                                ),
                            ));
                        }
                    }
                    judge.run(effect, None, root, Some(el), note)?;
                    let name = deskpilot_core::redact::display_name_of(el, 60);
                    let mut what = if name.is_empty() {
                        format!("{op} {}", el.role)
                    } else {
                        format!("{op} {} \"{name}\"", el.role)
                    };
                    // The value it writes, as the person should see it (secrets
                    // masked, one line, cut).
                    if let Some(v) = value {
                        let v = deskpilot_core::sanitize::one_line(
                            &deskpilot_core::redact::mask_secrets(v),
                        );
                        let cut: String = v.chars().take(60).collect();
                        let more = if cut.len() < v.len() { "..." } else { "" };
                        what.push_str(&format!(" to \"{cut}{more}\""));
                    }
                    judge.present(Some(el), None, &what)
                })
                .await
                .map(Outcome::Act);
        }
        // A click in a window without a tree is judged by the text OCR reads at
        // the point now; where nothing can be read, as an irreversible control.
        let from_ocr = matches!(effect, Effect::Pointer { seen: Some(_), .. });
        let read;
        let effect = match (effect, point) {
            (
                Effect::Pointer {
                    basis,
                    x,
                    y,
                    action: a @ (PointerAction::Click | PointerAction::DoubleClick),
                    seen: None,
                },
                Some(p),
            ) if window.no_tree => {
                let text = self.text_at_point(window, p).await;
                read = Effect::Pointer {
                    basis: *basis,
                    x: *x,
                    y: *y,
                    action: *a,
                    seen: Some(text),
                };
                &read
            }
            _ => effect,
        };
        let root = if window.no_tree {
            let mut r = Node::new(window.handle.0.clone(), Role::Window, window.title.clone());
            r.bounds = window.device_bounds;
            r
        } else {
            self.session.peek(window).await?
        };
        // The judge reads the tree, whose pixels are the device's divided by the
        // toolkit's scale.
        let tree_point = point.map(|(x, y)| {
            let (tx, ty) = window.device_to_tree(f64::from(x), f64::from(y));
            (tx.floor() as i32, ty.floor() as i32)
        });
        // A paste of what a password manager marked is refused, grant or not; with
        // the grant off the judge refuses every paste.
        if let Effect::Keys { chord: Some(c), .. } = effect
            && self.o.settings.clipboard
        {
            self.paste_unmarked(c).await?;
        }
        // A click at a point on the app's own Paste control (by the tree, or by the
        // text OCR read there) is a paste like a click on it by ref.
        if let Effect::Pointer {
            action: PointerAction::Click | PointerAction::DoubleClick,
            seen,
            ..
        } = effect
        {
            let by_tree = tree_point.is_some_and(|(x, y)| {
                elements_at(&root, x, y)
                    .into_iter()
                    .any(deskpilot_policy::clipboard::pastes_through)
            });
            let by_text = seen.as_deref().is_some_and(|t| {
                deskpilot_policy::clipboard::pastes_through(&Node::new("", Role::Menuitem, t))
            });
            if by_tree || by_text {
                self.paste_allowed(judge)?;
                if !self.o.settings.clipboard {
                    return Err(super::fail(
                        ErrorCode::ScopeViolation,
                        super::judge::PASTE_NEEDS_GRANT,
                    ));
                }
                self.paste_unmarked("ctrl+v").await?;
            }
        }
        judge.run(effect, tree_point, &root, None, note)?;
        if let Effect::Pointer { action, .. } = effect {
            let what = format!("{action:?} at {point:?}").to_lowercase();
            judge.present(None, point, &what)?;
        }
        let under = tree_point.and_then(|(x, y)| {
            elements_at(&root, x, y)
                .into_iter()
                .find(|n| !n.name.trim().is_empty() || n.role.is_interactive())
                .map(|n| {
                    format!(
                        "{} \"{}\"",
                        n.role,
                        deskpilot_core::redact::display_name_of(n, 60)
                    )
                })
        });
        let confirmed = note.passed.approved_by.is_some();
        match effect {
            Effect::Keys { chord, text, .. } => self
                .session
                .keys_checked(
                    &Target::Handle(window.handle.clone()),
                    chord.clone(),
                    text.clone(),
                    |step, root| judge.step(step, root, confirmed),
                )
                .await
                .map(Outcome::Input),
            Effect::Pointer { action, .. } => {
                let (x, y) = point.ok_or_else(|| {
                    not_dispatched("a pointer gesture reached dispatch without its point")
                })?;
                let params = PointerParams {
                    window: window.handle.clone(),
                    action: *action,
                    x,
                    y,
                    to: None,
                };
                // A press lands on what the point shows once the pointer is there:
                // hover first and read again; when what lies under the point changed
                // (a label that turns into "Send" on hover, or on a timer since it
                // was judged), the press is judged again on what it shows now.
                if matches!(
                    action,
                    PointerAction::Click | PointerAction::DoubleClick | PointerAction::Drag
                ) && !window.no_tree
                    && let Some((tx, ty)) = tree_point
                {
                    let hover = PointerParams {
                        action: PointerAction::Move,
                        ..params.clone()
                    };
                    self.session.driver().pointer(hover).await?;
                    tokio::time::sleep(HOVER_SETTLE).await;
                    let now = self.session.peek(window).await?;
                    let under_point = |r: &Node| -> Vec<(String, Role, String, Option<String>)> {
                        elements_at(r, tx, ty)
                            .into_iter()
                            .map(|n| (n.handle.0.clone(), n.role, n.name.clone(), n.value.clone()))
                            .collect()
                    };
                    if under_point(&root) != under_point(&now) {
                        judge.run(effect, tree_point, &now, None, note)?;
                    }
                }
                let mut out = self.session.pointer(window, params).await?;
                let seen = match effect {
                    Effect::Pointer { seen, .. } => seen.as_ref(),
                    _ => None,
                };
                if from_ocr {
                    out.result.channel = deskpilot_protocol::types::Channel::PointerOcr;
                }
                // Name what was under the point at dispatch, so a miss is visible:
                // the tree's element, or, where there is no tree, the text OCR read.
                let under = under.filter(|_| !window.no_tree);
                let at = match (&under, seen) {
                    (Some(u), _) => format!(" · under the point: {u}"),
                    (None, Some(t)) if !t.trim().is_empty() => format!(
                        " · under the point: the text \"{}\" read by OCR (no tree there)",
                        deskpilot_core::sanitize::one_line(t)
                    ),
                    _ if window.no_tree => {
                        " · under the point: nothing readable (no tree, and OCR read no text there)"
                            .into()
                    }
                    _ => " · under the point: nothing the tree names".into(),
                };
                if let Some(first) = out.text.find('\n') {
                    out.text.insert_str(first, &at);
                } else {
                    out.text.push_str(&at);
                }
                Ok(Outcome::Input(out))
            }
            Effect::Clipboard { text } => self
                .session
                .clipboard_write(text.clone())
                .await
                .map(Outcome::Clipboard),
            Effect::Act { .. } => Err(not_dispatched("an act reached the input dispatch")),
        }
    }
}

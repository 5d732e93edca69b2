//! The grant's life on this desktop: what happened since the last call (feature
//! switch, boot, stop, idle expiry), issuing the one grant per desktop and its lock,
//! the action budget and its desktop-wide rest, user grants, revoke and stop, and
//! the audit lines of all of it (docs/ARCHITECTURE.md §7).

use std::path::PathBuf;

use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::grant::{Grant, GrantOptions, InputPolicy, Issuer, Scope};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::{Enumeration, GrantView, Host, fail, new_id, refused};
use crate::audit::now_rfc3339;
use crate::control::{self, LockOutcome};
use crate::session::Target;
use deskpilot_protocol::Result;

impl Host {
    pub(super) fn audit(&mut self, mut rec: AuditRecord) {
        rec.time = now_rfc3339();
        rec.session = self.o.session.clone();
        if self.o.remote() {
            rec.device = Some(self.o.device.clone());
        }
        if let Some(g) = self.policy().authority.active() {
            rec.grant_id.get_or_insert_with(|| g.grant_id.clone());
            rec.scope.get_or_insert_with(|| g.scope.as_str().into());
            rec.issuer.get_or_insert_with(|| g.issuer.as_str().into());
            rec.revision.get_or_insert(g.revision);
        }
        if let Err(e) = self.o.audit.append(&rec) {
            tracing::warn!(error = %e, "audit write failed");
            let w = format!("audit log not written ({e}); the action itself was not affected");
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    pub(super) fn audit_grant(
        &mut self,
        event: AuditEvent,
        g: &Grant,
        app: Option<&str>,
        pid: Option<u32>,
    ) {
        self.audit(Self::grant_record(event, g, app, pid));
    }

    /// The audit record of a grant event (its id, scope, issuer and revision).
    pub(super) fn grant_record(
        event: AuditEvent,
        g: &Grant,
        app: Option<&str>,
        pid: Option<u32>,
    ) -> AuditRecord {
        AuditRecord {
            event: Some(event),
            grant_id: Some(g.grant_id.clone()),
            scope: Some(g.scope.as_str().into()),
            issuer: Some(g.issuer.as_str().into()),
            app: app.map(str::to_string),
            pid,
            revision: Some(g.revision),
            ..AuditRecord::default()
        }
    }

    /// Records that the grant is (re)bound to its target window, with that window's
    /// app and pid from `en`.
    pub(super) fn audit_bound(&mut self, g: &Grant, en: &Enumeration) {
        let pid = g
            .target
            .as_deref()
            .and_then(|t| en.find(t))
            .and_then(|(_, c)| c.facts.pid);
        self.audit_grant(AuditEvent::GrantRebound, g, g.target_app.as_deref(), pid);
    }

    /// Records a refusal and returns it as the call's error.
    pub(super) fn refuse(
        &mut self,
        e: ComputerError,
        op: Option<&str>,
        app: Option<&str>,
    ) -> ComputerError {
        self.audit(AuditRecord {
            event: Some(AuditEvent::Refusal),
            op: op.map(str::to_string),
            app: app.map(str::to_string),
            status: Some("refused".into()),
            code: Some(e.code.as_str().into()),
            ..AuditRecord::default()
        });
        self.show_presence();
        let _ = self.session.save();
        e
    }

    pub(super) fn acquire_lock(&self, grant_id: &str, now: u64) -> Result<LockOutcome> {
        control::acquire_grant_lock_in(
            &self.o.desktop_dir,
            &self.o.desktop_key,
            &self.o.session,
            grant_id,
            std::process::id(),
            now,
        )
    }

    /// Keeps a user-issued grant's hold on the desktop until it would idle out,
    /// even between calls of a session whose processes are short-lived.
    pub(super) fn refresh_user_lease(&self, now: u64) {
        let until = self
            .policy()
            .authority
            .active()
            .filter(|g| g.issuer == Issuer::User)
            .map(|g| now + g.idle_expiry_ms);
        if let Err(e) = control::set_user_lease_in(
            &self.o.desktop_dir,
            &self.o.desktop_key,
            &self.o.session,
            until,
        ) {
            tracing::warn!(error = %e.message, "cannot record the user grant's lease");
        }
    }

    pub(super) fn release_lock(&self) {
        if let Err(e) = control::release_grant_lock_in(
            &self.o.desktop_dir,
            &self.o.desktop_key,
            &self.o.session,
        ) {
            tracing::warn!(error = %e.message, "cannot release the grant lock");
        }
    }

    /// Drops the active grant for `event` (revoked, stopped, expired, displaced).
    pub(super) fn close_grant(&mut self, event: AuditEvent) {
        if let Some(g) = self.policy_mut().authority.revoke() {
            self.policy_mut().issued_ms = None;
            self.audit_grant(event, &g, g.target_app.as_deref(), None);
            self.release_lock();
        }
    }

    pub(super) fn grant_options(&self, scope: Scope) -> GrantOptions {
        GrantOptions {
            scope,
            input_policy: InputPolicy::AutonomousInScope,
            capture: self.o.settings.capture,
            action_budget: self.o.settings.action_budget,
            idle_expiry_ms: self.o.settings.idle_expiry_ms,
        }
    }

    /// Applies what happened since the last call: feature switch, boot, stop, expiry.
    pub(super) fn preflight(&mut self, now: u64) -> Result<()> {
        self.refresh_settings()?;
        if !self.o.settings.enabled
            && self.o.settings.sources.get("enabled").map(String::as_str)
                == Some(crate::config::CHANGED_OUTSIDE)
        {
            return Err(fail(
                ErrorCode::FeatureDisabled,
                format!(
                    "the config file {} was changed outside deskpilot since it last sealed it, so computer use is off; the user reviews it and runs `deskpilot config trust` at a terminal",
                    crate::config::config_path().display()
                ),
            ));
        }
        if !self.o.settings.enabled && self.o.device != "local" {
            // Another machine or a phone: this machine's switch gates it too (the
            // grant, refusals and audit are kept here), and a sandbox is no way
            // there (`--sandbox` and `--device` exclude each other).
            return Err(fail(
                ErrorCode::FeatureDisabled,
                format!(
                    "computer use is off on this machine, and it gates --device {} too: the grant, refusals and audit for another machine are kept here. Turn it on with `deskpilot config set enabled true` on this machine (README: Another machine or a phone)",
                    self.o.device
                ),
            ));
        }
        if !self.o.settings.enabled {
            return Err(fail(
                ErrorCode::FeatureDisabled,
                "computer use is off on this desktop (it is off by default outside a deskpilot sandbox). Turn it on with `deskpilot config set enabled true` — that grants the agent this desktop within the refusals and budget — or work in an isolated desktop: `deskpilot sandbox start`",
            ));
        }
        let boot = control::boot_id();
        if self.policy().boot_id != boot {
            // A grant never outlives the boot it was issued in.
            if let Some(g) = self.policy_mut().authority.revoke() {
                self.audit_grant(AuditEvent::GrantRevoked, &g, g.target_app.as_deref(), None);
            }
            let p = self.policy_mut();
            p.issued_ms = None;
            p.approved_apps.clear();
            p.boot_id = boot;
        }
        if let Some(stop) = control::read_stop_in(&self.o.runtime_dir)
            && stop.at_ms > self.policy().stop_seen_ms
        {
            self.policy_mut().stop_seen_ms = stop.at_ms;
            let issued_before = self.policy().issued_ms.is_none_or(|t| t <= stop.at_ms);
            if issued_before {
                let g = self.policy_mut().authority.stop(stop.at_ms);
                self.policy_mut().issued_ms = None;
                if let Some(g) = g {
                    self.audit_grant(AuditEvent::GrantStopped, &g, g.target_app.as_deref(), None);
                    self.release_lock();
                }
            }
        }
        let before = self.policy().authority.active().cloned();
        if let Some(r) = self.policy_mut().authority.tick(now) {
            // This call reports the expiry; the next one issues a new grant.
            self.policy_mut().issued_ms = None;
            let e = refused(r);
            self.audit(AuditRecord {
                event: Some(AuditEvent::GrantRevoked),
                grant_id: before.map(|g| g.grant_id),
                status: Some("expired".into()),
                code: Some(e.code.as_str().into()),
                ..AuditRecord::default()
            });
            self.release_lock();
            let _ = self.session.save();
            return Err(e);
        }
        // A spent budget is not closed here: the grant stays, refusing every action
        // with COMPUTER_BUDGET_EXHAUSTED (reads still work), until it idles out or
        // the user revokes it or issues a new one, so a runaway loop cannot simply
        // take a fresh budget.
        Ok(())
    }

    /// Makes sure this session holds the desktop's grant: issues one (agent) when
    /// there is none, and gives ours up when another session held the desktop since.
    pub(super) fn ensure_grant(&mut self, now: u64) -> Result<()> {
        let mut fresh = false;
        if self.policy().authority.active().is_none()
            && let Some(until) = self.budget_rest_until()
            && now < until
        {
            let e = fail(
                ErrorCode::BudgetExhausted,
                format!(
                    "the last grant on this desktop spent its action budget; agent-issued grants resume in {} min (when it would have idled out), or the user can issue one now with `deskpilot grant --user`",
                    (until - now).div_ceil(60_000)
                ),
            );
            return Err(self.refuse(e, None, None));
        }
        if self.policy().authority.active().is_none() {
            let opts = self.grant_options(Scope::Desktop);
            let id = format!("g-{}", new_id(8)?);
            let issued = self
                .policy_mut()
                .authority
                .issue(Issuer::Agent, &opts, id, now)
                .cloned()
                .map_err(refused);
            match issued {
                Ok(_) => {
                    self.policy_mut().issued_ms = Some(now);
                    fresh = true;
                }
                Err(e) => return Err(self.refuse(e, None, None)),
            }
        }
        let gid = self
            .policy()
            .authority
            .active()
            .map(|g| g.grant_id.clone())
            .unwrap_or_default();
        match self.acquire_lock(&gid, now)? {
            LockOutcome::HeldBy(h) => {
                let _ = self.policy_mut().authority.revoke();
                self.policy_mut().issued_ms = None;
                let lease = if h.user_until_ms.is_some() {
                    " (a grant the user issued, kept until it idles out)"
                } else {
                    ""
                };
                let e = fail(
                    ErrorCode::NoGrant,
                    format!(
                        "another deskpilot session ({:?}, pid {}) holds this desktop's grant{lease}; one grant is active per desktop. Wait for it to finish, or run `deskpilot stop` to end it",
                        deskpilot_core::sanitize::one_line(&h.session),
                        h.pid
                    ),
                );
                Err(self.refuse(e, None, None))
            }
            LockOutcome::Acquired { previous } => {
                let displaced = !fresh
                    && previous
                        .as_ref()
                        .is_some_and(|p| p.session != self.o.session && p.grant_id.is_some());
                if displaced {
                    // Another session held the desktop since our last call: our refs
                    // and grant belong to a binding that no longer exists.
                    self.close_grant(AuditEvent::GrantRevoked);
                    return self.ensure_grant(now);
                }
                if fresh && let Some(g) = self.policy().authority.active().cloned() {
                    self.audit_grant(AuditEvent::GrantIssued, &g, None, None);
                }
                self.refresh_user_lease(now);
                Ok(())
            }
        }
    }

    pub(super) fn check_budget(&mut self, revision: u64, op: &str, app: &str) -> Result<()> {
        let now = control::now_ms();
        match self.policy_mut().authority.check_action(revision, now) {
            Ok(_) => Ok(()),
            Err(r) => {
                if r.code == ErrorCode::BudgetExhausted {
                    self.mark_budget_spent(now);
                }
                Err(self.refuse(refused(r), Some(op), Some(app)))
            }
        }
    }

    /// The desktop's budget record: once a grant spent its budget, agent-issued
    /// grants on the desktop rest until it would have idled out, whichever session
    /// asks (a revoke or another `--session` does not buy a fresh budget).
    pub(super) fn budget_path(&self) -> PathBuf {
        self.o
            .desktop_dir
            .join(format!("budget-{}.json", self.o.desktop_key))
    }

    pub(super) fn mark_budget_spent(&self, now: u64) {
        let rec = serde_json::json!({
            "spent_ms": now,
            "until_ms": now + self.o.settings.idle_expiry_ms,
            "budget": self.o.settings.action_budget,
        });
        let path = self.budget_path();
        if let Err(e) = deskpilot_os::write_private_atomic(&path, rec.to_string().as_bytes()) {
            tracing::warn!(path = %path.display(), error = %e, "cannot record the spent budget");
        }
    }

    pub(super) fn budget_rest_until(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.budget_path()).ok()?;
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()?
            .get("until_ms")?
            .as_u64()
    }

    /// Issues a user grant (`deskpilot grant --user`): replaces any grant, lifts a
    /// stop's cooldown, and binds to `target` (a window grant when `scope` is
    /// `Window`). Only a user channel may call this.
    pub async fn issue_user_grant(&mut self, scope: Scope, target: &Target) -> Result<GrantView> {
        if !self.o.settings.enabled {
            self.preflight(control::now_ms())?;
        }
        // Another live session's grant blocks a user grant too: check before
        // anything changes (nothing is lost when this fails).
        let now0 = control::now_ms();
        if let LockOutcome::HeldBy(h) = self.acquire_lock("pending", now0)? {
            return Err(fail(
                ErrorCode::NoGrant,
                format!(
                    "another deskpilot session ({:?}, pid {}) holds this desktop's grant; run `deskpilot stop` first",
                    deskpilot_core::sanitize::one_line(&h.session),
                    h.pid
                ),
            ));
        }
        // The grant belongs to this boot (see preflight).
        self.policy_mut().boot_id = control::boot_id();
        let _ = std::fs::remove_file(self.budget_path());
        control::clear_stop_in(&self.o.runtime_dir)?;
        let now = control::now_ms();
        if let Some(s) = control::read_stop_in(&self.o.runtime_dir) {
            self.policy_mut().stop_seen_ms = s.at_ms;
        }
        self.policy_mut().stop_seen_ms = self.policy().stop_seen_ms.max(now);
        if let Some(old) = self.policy_mut().authority.revoke() {
            self.audit_grant(
                AuditEvent::GrantRevoked,
                &old,
                old.target_app.as_deref(),
                None,
            );
        }
        let opts = self.grant_options(scope);
        let id = format!("u-{}", new_id(8)?);
        let g = self
            .policy_mut()
            .authority
            .issue(Issuer::User, &opts, id, now)
            .map_err(refused)?
            .clone();
        self.policy_mut().issued_ms = Some(now);
        match self.acquire_lock(&g.grant_id, now)? {
            LockOutcome::HeldBy(h) => {
                let _ = self.policy_mut().authority.revoke();
                return Err(fail(
                    ErrorCode::NoGrant,
                    format!(
                        "another deskpilot session ({:?}, pid {}) holds this desktop's grant; run `deskpilot stop` first",
                        h.session, h.pid
                    ),
                ));
            }
            LockOutcome::Acquired { .. } => {}
        }
        self.audit_grant(AuditEvent::GrantIssued, &g, None, None);
        self.refresh_user_lease(now);
        match self.bind_user_grant(target, now).await {
            Ok(view) => Ok(view),
            Err(e) => {
                // A grant that could not be bound is not left holding the desktop.
                self.close_grant(AuditEvent::GrantRevoked);
                let _ = self.session.save();
                Err(e)
            }
        }
    }

    pub(super) async fn bind_user_grant(&mut self, target: &Target, now: u64) -> Result<GrantView> {
        let en = self.enumerate().await?;
        let window = match target {
            Target::Current => {
                let rules = self.rules.clone();
                self.policy_mut()
                    .authority
                    .bind_frontmost(&en.list(), &rules, now)
                    .map_err(refused)?;
                None
            }
            t => Some(self.bind_target(t, &en).await?),
        };
        if window.is_none()
            && let Some(g) = self.policy().authority.active().cloned()
        {
            self.audit_grant(AuditEvent::GrantRebound, &g, g.target_app.as_deref(), None);
        }
        self.after_call()?;
        self.grant_view()
            .ok_or_else(|| fail(ErrorCode::NoGrant, "the grant could not be bound"))
    }

    /// Revokes the active grant (the user's `deskpilot revoke`, or the end of a run).
    pub fn revoke(&mut self) -> Result<Option<GrantView>> {
        let view = self.grant_view();
        self.close_grant(AuditEvent::GrantRevoked);
        self.show_presence();
        self.session.save()?;
        Ok(view)
    }

    /// Applies a stop raised on this host's signal: revoke now, cooldown from now,
    /// and lower the signal.
    pub fn apply_stop(&mut self) {
        self.o.stop.clear();
        let now = control::now_ms();
        if let Some(g) = self.policy_mut().authority.stop(now) {
            self.policy_mut().issued_ms = None;
            self.audit_grant(AuditEvent::GrantStopped, &g, g.target_app.as_deref(), None);
            self.release_lock();
        }
        self.show_presence();
        let _ = self.session.save();
    }

    /// Describes the grant without issuing or binding one.
    pub fn describe(&mut self) -> Option<GrantView> {
        let _ = self.preflight(control::now_ms());
        let _ = self.session.save();
        self.grant_view()
    }
}

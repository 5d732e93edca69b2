//! Grants: the unit of permission (docs/ARCHITECTURE.md §7), and the [`Authority`] that
//! holds at most one of them.
//!
//! A *desktop* grant is bound to one window at a time and may be rebound to any
//! permitted window; a *window* grant is pinned (a rebind is a scope violation). Every
//! bind re-runs the refusals on a fresh enumeration (the caller passes it) and bumps
//! `revision`, which invalidates every ref and coordinate basis taken under the old
//! revision. Acting never binds. A grant whose action budget is spent stays, refusing
//! every action with `COMPUTER_BUDGET_EXHAUSTED` (reads still work), until it closes:
//! after `idle_expiry_ms` without an action, on revoke, and on stop; stop also refuses
//! agent-issued grants for [`STOP_COOLDOWN_MS`], and a user-issued grant clears that
//! cooldown. Grants are never persisted. Time is passed in by the caller (ms since any
//! fixed epoch).

use serde::{Deserialize, Serialize};

use crate::ErrorCode;
use crate::refusal::{Refusal, Refusals, TargetFacts};

/// How long agent-issued grants are refused after a stop: 30 s (docs/ARCHITECTURE.md §7),
/// long enough that the next tool call of the same run cannot simply re-grant.
pub const STOP_COOLDOWN_MS: u64 = 30_000;
/// Default actions per grant: 200, enough for a long editing task, small enough that
/// a runaway loop stops by itself.
pub const DEFAULT_ACTION_BUDGET: u32 = 200;
/// Default idle expiry: 15 minutes without an action closes the grant.
pub const DEFAULT_IDLE_EXPIRY_MS: u64 = 15 * 60 * 1_000;

/// Desktop (rebindable) or window (pinned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Desktop,
    Window,
}

impl Scope {
    /// `desktop` or `window`, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Desktop => "desktop",
            Scope::Window => "window",
        }
    }
}

/// Who issued a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Issuer {
    /// Issued automatically on an agent's first call (subject to the stop cooldown).
    Agent,
    /// Issued by the user (`deskpilot grant --user`); clears the stop cooldown.
    User,
}

impl Issuer {
    /// `agent` or `user`, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Issuer::Agent => "agent",
            Issuer::User => "user",
        }
    }
}

/// Whether actions in scope need a confirmation each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum InputPolicy {
    #[default]
    AutonomousInScope,
    ConfirmEach,
}

/// Whether pixels may be captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Capture {
    #[default]
    A11yOnly,
    A11yAndPixels,
}

/// One window as the host enumerated it, frontmost first in lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Driver handle of the window.
    pub handle: String,
    pub facts: TargetFacts,
}

/// A grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub grant_id: String,
    pub scope: Scope,
    /// Handle of the bound window; `None` until the first bind.
    pub target: Option<String>,
    /// App name of the bound window.
    pub target_app: Option<String>,
    /// Bumped on every (re)bind and fallback.
    pub revision: u64,
    pub issuer: Issuer,
    pub input_policy: InputPolicy,
    pub capture: Capture,
    /// Actions left; at zero every action is refused until the grant closes.
    pub action_budget: u32,
    /// Idle time after which the grant closes, ms.
    pub idle_expiry_ms: u64,
    /// Time of issue or of the last action, ms.
    pub last_activity_ms: u64,
}

/// Options of a new grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantOptions {
    pub scope: Scope,
    pub input_policy: InputPolicy,
    pub capture: Capture,
    pub action_budget: u32,
    pub idle_expiry_ms: u64,
}

impl Default for GrantOptions {
    fn default() -> Self {
        GrantOptions {
            scope: Scope::Desktop,
            input_policy: InputPolicy::default(),
            capture: Capture::default(),
            action_budget: DEFAULT_ACTION_BUDGET,
            idle_expiry_ms: DEFAULT_IDLE_EXPIRY_MS,
        }
    }
}

fn refusal(code: ErrorCode, reason: impl Into<String>) -> Refusal {
    Refusal {
        code,
        reason: reason.into(),
    }
}

/// Holds the one active grant of a host instance, and the stop cooldown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authority {
    active: Option<Grant>,
    /// Agent-issued grants are refused until this time (ms).
    stopped_until_ms: Option<u64>,
    /// Last revision handed out; revisions never repeat within an instance.
    last_revision: u64,
}

impl Authority {
    /// The active grant, if any (after expiry has been applied by [`Authority::tick`]).
    pub fn active(&self) -> Option<&Grant> {
        self.active.as_ref()
    }

    /// Closes the grant if it idled out. Call before every decision.
    pub fn tick(&mut self, now_ms: u64) -> Option<Refusal> {
        let g = self.active.as_ref()?;
        if now_ms.saturating_sub(g.last_activity_ms) < g.idle_expiry_ms {
            return None;
        }
        let id = g.grant_id.clone();
        self.active = None;
        Some(refusal(
            ErrorCode::GrantExpired,
            format!("grant {id} expired after being idle; the next call issues a new one"),
        ))
    }

    /// Issues a grant. An agent gets the active grant back if there is one (there is
    /// at most one), and is refused during the stop cooldown; a user-issued grant
    /// replaces any active grant and clears the cooldown.
    pub fn issue(
        &mut self,
        issuer: Issuer,
        opts: &GrantOptions,
        grant_id: String,
        now_ms: u64,
    ) -> Result<&Grant, Refusal> {
        self.tick(now_ms);
        match issuer {
            Issuer::Agent => {
                if let Some(until) = self.stopped_until_ms {
                    if now_ms < until {
                        return Err(refusal(
                            ErrorCode::StoppedByUser,
                            format!(
                                "the user pressed stop; new grants are refused for {} more s (a user-issued grant, `deskpilot grant --user`, lifts this)",
                                (until - now_ms).div_ceil(1000)
                            ),
                        ));
                    }
                    self.stopped_until_ms = None;
                }
            }
            Issuer::User => {
                self.stopped_until_ms = None;
                self.active = None;
            }
        }
        // An agent gets the active grant back; otherwise a new one.
        let revision = self.last_revision;
        Ok(self.active.get_or_insert(Grant {
            grant_id,
            scope: opts.scope,
            target: None,
            target_app: None,
            revision,
            issuer,
            input_policy: opts.input_policy,
            capture: opts.capture,
            action_budget: opts.action_budget,
            idle_expiry_ms: opts.idle_expiry_ms,
            last_activity_ms: now_ms,
        }))
    }

    fn bump(&mut self) -> u64 {
        self.last_revision += 1;
        self.last_revision
    }

    /// Binds the grant to `window`, re-running every refusal on its fresh facts.
    /// Bumps the revision (even when rebinding the same window).
    ///
    /// Errors: `COMPUTER_NO_GRANT` without a grant; `COMPUTER_SCOPE_VIOLATION` when a
    /// window grant is asked to move; the window's refusal code when it is refused.
    pub fn bind(
        &mut self,
        window: &Candidate,
        rules: &Refusals,
        now_ms: u64,
    ) -> Result<u64, Refusal> {
        if let Some(r) = self.tick(now_ms) {
            return Err(r);
        }
        let Some(g) = self.active.as_ref() else {
            return Err(refusal(
                ErrorCode::NoGrant,
                "no active grant; one is issued on the next call when the feature is on",
            ));
        };
        if g.scope == Scope::Window && g.target.as_deref().is_some_and(|t| t != window.handle) {
            return Err(refusal(
                ErrorCode::ScopeViolation,
                "this grant is pinned to one window; it cannot move to another",
            ));
        }
        if let Some(r) = rules.check_window(&window.facts) {
            return Err(r);
        }
        let rev = self.bump();
        let g = self.active.as_mut().expect("checked");
        g.target = Some(window.handle.clone());
        g.target_app = Some(window.facts.app.clone());
        g.revision = rev;
        Ok(rev)
    }

    /// Binds to the frontmost permitted window of `windows` (frontmost first).
    ///
    /// Errors: `COMPUTER_SCOPE_VIOLATION` when no window is permitted (the message
    /// lists each refused window's reason), or any [`Authority::bind`] error.
    pub fn bind_frontmost(
        &mut self,
        windows: &[Candidate],
        rules: &Refusals,
        now_ms: u64,
    ) -> Result<u64, Refusal> {
        let mut reasons = Vec::new();
        for w in windows {
            match rules.check_window(&w.facts) {
                None => return self.bind(w, rules, now_ms),
                Some(r) => reasons.push(format!("{:?}: {}", w.facts.title, r.reason)),
            }
        }
        Err(refusal(
            ErrorCode::ScopeViolation,
            if reasons.is_empty() {
                "no window is open on this desktop; launch an app first (e.g. `deskpilot sandbox run -- mousepad`)".to_string()
            } else {
                format!(
                    "no window on this desktop is permitted ({})",
                    reasons.join("; ")
                )
            },
        ))
    }

    /// Checks an action proposed under `revision` against the grant, without spending.
    ///
    /// Errors: `COMPUTER_NO_GRANT`, `COMPUTER_GRANT_EXPIRED`, `COMPUTER_BUDGET_EXHAUSTED`,
    /// `COMPUTER_STALE_REVISION` (the refs came from an earlier binding).
    pub fn check_action(&mut self, revision: u64, now_ms: u64) -> Result<&Grant, Refusal> {
        if let Some(r) = self.tick(now_ms) {
            return Err(r);
        }
        let Some(g) = self.active.as_ref() else {
            return Err(refusal(
                ErrorCode::NoGrant,
                "no active grant; observe a window first to bind one",
            ));
        };
        if g.target.is_none() {
            return Err(refusal(
                ErrorCode::NoGrant,
                "the grant is bound to no window; observe a window first",
            ));
        }
        if g.action_budget == 0 {
            return Err(refusal(
                ErrorCode::BudgetExhausted,
                "the grant's action budget is spent; a new grant is needed",
            ));
        }
        if revision != g.revision {
            return Err(refusal(
                ErrorCode::StaleRevision,
                format!(
                    "refs were taken under revision {revision} but the grant is at revision {}; observe again",
                    g.revision
                ),
            ));
        }
        Ok(g)
    }

    /// Records one performed action: spends budget and refreshes idle time. At zero
    /// budget the next [`Authority::check_action`] refuses with
    /// `COMPUTER_BUDGET_EXHAUSTED`.
    pub fn spend(&mut self, now_ms: u64) {
        if let Some(g) = self.active.as_mut() {
            g.action_budget = g.action_budget.saturating_sub(1);
            g.last_activity_ms = now_ms;
        }
    }

    /// The bound window disappeared. A desktop grant falls back to the frontmost
    /// permitted window (new revision: in-flight actions fail `STALE_REVISION`); a
    /// window grant is revoked. Returns the new revision, if still bound.
    pub fn window_vanished(
        &mut self,
        windows: &[Candidate],
        rules: &Refusals,
        now_ms: u64,
    ) -> Option<u64> {
        let scope = self.active.as_ref()?.scope;
        match scope {
            Scope::Window => {
                self.active = None;
                None
            }
            Scope::Desktop => {
                if let Some(g) = self.active.as_mut() {
                    g.target = None;
                    g.target_app = None;
                }
                // A successful fallback bumps the revision itself; with nothing to
                // bind, bump anyway so refs of the closed window are stale.
                let fell_back = self.bind_frontmost(windows, rules, now_ms).ok();
                if fell_back.is_none() {
                    let rev = self.bump();
                    if let Some(g) = self.active.as_mut() {
                        g.revision = rev;
                    }
                }
                fell_back
            }
        }
    }

    /// Revokes the active grant.
    pub fn revoke(&mut self) -> Option<Grant> {
        self.active.take()
    }

    /// The user pressed stop: revoke, and refuse agent-issued grants for
    /// [`STOP_COOLDOWN_MS`].
    pub fn stop(&mut self, now_ms: u64) -> Option<Grant> {
        self.stopped_until_ms = Some(now_ms + STOP_COOLDOWN_MS);
        self.revoke()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::SelfFacts;

    fn rules() -> Refusals {
        Refusals {
            me: SelfFacts {
                pids: vec![1],
                uid: 1000,
                names: vec![],
            },
            user_denylist: vec![],
            allow_terminals: vec![],
            app_tiers: vec![],
            protected: vec![],
            home: None,
        }
    }

    fn win(handle: &str, app: &str) -> Candidate {
        Candidate {
            handle: handle.into(),
            facts: TargetFacts {
                app: app.into(),
                title: format!("{app} window"),
                pid: Some(500),
                uid: Some(1000),
                exe: Some(app.into()),
                focused_password: false,
                pty_master: false,
                pty_unknown: false,
                toolkit: None,
            },
        }
    }

    fn granted(now: u64) -> Authority {
        let mut a = Authority::default();
        a.issue(Issuer::Agent, &GrantOptions::default(), "g1".into(), now)
            .unwrap();
        a
    }

    #[test]
    fn binds_the_frontmost_permitted_window() {
        let mut a = granted(0);
        let rev = a
            .bind_frontmost(
                &[win("k", "seahorse"), win("m", "mousepad"), win("c", "calc")],
                &rules(),
                1,
            )
            .unwrap();
        assert_eq!(a.active().unwrap().target.as_deref(), Some("m"));
        assert_eq!(rev, 1);
    }

    #[test]
    fn a_desktop_with_no_permitted_window_is_refused_with_reasons() {
        let mut a = granted(0);
        let e = a
            .bind_frontmost(&[win("k", "seahorse"), win("p", "pinentry")], &rules(), 1)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ScopeViolation);
        assert!(
            e.reason.contains("seahorse window") && e.reason.contains("pinentry window"),
            "{}",
            e.reason
        );
        assert_eq!(a.active().unwrap().target, None);
    }

    #[test]
    fn rebinding_reruns_refusals_and_bumps_the_revision() {
        let mut a = granted(0);
        let r1 = a.bind(&win("m", "mousepad"), &rules(), 1).unwrap();
        let r2 = a.bind(&win("c", "calc"), &rules(), 2).unwrap();
        assert!(r2 > r1);
        assert_eq!(
            a.check_action(r1, 3).unwrap_err().code,
            ErrorCode::StaleRevision
        );
        assert!(a.check_action(r2, 3).is_ok());
        let e = a.bind(&win("k", "KeePassXC"), &rules(), 4).unwrap_err();
        assert_eq!(e.code, ErrorCode::Denylisted);
        assert_eq!(
            a.active().unwrap().target.as_deref(),
            Some("c"),
            "a refused rebind keeps the old binding"
        );
    }

    #[test]
    fn a_window_grant_refuses_to_move_and_is_revoked_when_its_window_goes() {
        let mut a = Authority::default();
        a.issue(
            Issuer::User,
            &GrantOptions {
                scope: Scope::Window,
                ..GrantOptions::default()
            },
            "g".into(),
            0,
        )
        .unwrap();
        a.bind(&win("m", "mousepad"), &rules(), 1).unwrap();
        assert_eq!(
            a.bind(&win("c", "calc"), &rules(), 2).unwrap_err().code,
            ErrorCode::ScopeViolation
        );
        assert_eq!(a.window_vanished(&[win("c", "calc")], &rules(), 3), None);
        assert!(a.active().is_none());
    }

    #[test]
    fn a_desktop_grant_falls_back_and_in_flight_actions_are_stale() {
        let mut a = granted(0);
        let r = a.bind(&win("m", "mousepad"), &rules(), 1).unwrap();
        let new = a.window_vanished(&[win("c", "calc")], &rules(), 2).unwrap();
        assert!(new > r);
        assert_eq!(a.active().unwrap().target.as_deref(), Some("c"));
        assert_eq!(
            a.check_action(r, 3).unwrap_err().code,
            ErrorCode::StaleRevision
        );
    }

    #[test]
    fn budget_and_idle_expiry_close_the_grant() {
        let mut a = Authority::default();
        a.issue(
            Issuer::Agent,
            &GrantOptions {
                action_budget: 2,
                idle_expiry_ms: 1_000,
                ..GrantOptions::default()
            },
            "g".into(),
            0,
        )
        .unwrap();
        let r = a.bind(&win("m", "mousepad"), &rules(), 0).unwrap();
        a.check_action(r, 10).unwrap();
        a.spend(10);
        a.check_action(r, 20).unwrap();
        a.spend(20);
        assert_eq!(
            a.check_action(r, 30).unwrap_err().code,
            ErrorCode::BudgetExhausted
        );

        let mut b = granted(0);
        let r = b.bind(&win("m", "mousepad"), &rules(), 0).unwrap();
        assert_eq!(
            b.check_action(r, DEFAULT_IDLE_EXPIRY_MS + 1)
                .unwrap_err()
                .code,
            ErrorCode::GrantExpired
        );
        assert!(b.active().is_none());
    }

    #[test]
    fn one_grant_at_a_time() {
        let mut a = granted(0);
        let id = a
            .issue(Issuer::Agent, &GrantOptions::default(), "g2".into(), 1)
            .unwrap()
            .grant_id
            .clone();
        assert_eq!(id, "g1", "an agent gets the active grant, not a second one");
    }

    #[test]
    fn stop_refuses_agent_grants_for_the_cooldown_and_a_user_grant_clears_it() {
        let mut a = granted(0);
        assert!(a.stop(1_000).is_some());
        let e = a
            .issue(Issuer::Agent, &GrantOptions::default(), "g2".into(), 2_000)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StoppedByUser);
        assert!(e.reason.contains("29 more s"), "{}", e.reason);
        assert!(
            a.issue(
                Issuer::Agent,
                &GrantOptions::default(),
                "g3".into(),
                1_000 + STOP_COOLDOWN_MS
            )
            .is_ok()
        );

        let mut b = granted(0);
        b.stop(0);
        b.issue(Issuer::User, &GrantOptions::default(), "u".into(), 10)
            .unwrap();
        b.revoke();
        assert!(
            b.issue(Issuer::Agent, &GrantOptions::default(), "g4".into(), 20)
                .is_ok()
        );
    }
}

//! Steps 1–2 of the pipeline (docs/ARCHITECTURE.md §7.11): the bound window an
//! effect goes to and its refusals, and whether what the effect was aimed with (refs,
//! a target, a basis) is current; and the notes an effect's result gets about the
//! windows it opened or closed. Dispatches nothing.

use deskpilot_core::Handle;
use deskpilot_policy::allow::app_identity;
use deskpilot_policy::grant::Candidate;
use deskpilot_policy::mode::Mode;
use deskpilot_policy::refusal::TargetFacts;
use deskpilot_protocol::types::WindowInfo;
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::effect::Effect;
use super::{Basis, Host, fail, refused};
use crate::control;
use crate::session::{Change, Target};
use deskpilot_protocol::Result;

impl Host {
    /// Step 2: the refs, target or basis the effect was aimed with belong to the
    /// bound window under the current revision. Returns the screen point (pixels) of
    /// a pointer gesture. A mismatch is a refusal (audited); a driver error is not.
    pub(super) async fn check_aim(
        &mut self,
        effect: &Effect,
        op: &str,
        window: &WindowInfo,
        revision: u64,
        app: &str,
    ) -> Result<Option<(i32, i32)>> {
        let e = match effect {
            Effect::Act { r, .. } => match self.refs_revision(window.handle.as_str()) {
                None => fail(
                    ErrorCode::StaleRevision,
                    format!(
                        "no refs were shown for the bound window {:?} under revision {revision}; observe it first",
                        deskpilot_core::sanitize::one_line(&window.title)
                    ),
                ),
                Some(rev) if rev != revision => fail(
                    ErrorCode::StaleRevision,
                    format!(
                        "{r} was shown under revision {rev}, but the grant was rebound since (revision {revision}); observe again and use the new refs"
                    ),
                ),
                Some(_) => match self.ref_elsewhere(r, window.handle.as_str()) {
                    Some(e) => e,
                    None => return Ok(None),
                },
            },
            // The clipboard is aimed at nothing: it is written for the bound window.
            Effect::Clipboard { .. } => return Ok(None),
            Effect::Keys { target, .. } => {
                if matches!(target, Target::Current) {
                    return Ok(None);
                }
                let named = self.session.resolve_window(target).await?;
                if named.handle == window.handle {
                    return Ok(None);
                }
                fail(
                    ErrorCode::ScopeViolation,
                    format!(
                        "keys go to the bound window ({:?}) only; observe the other window first to move the grant there",
                        deskpilot_core::sanitize::one_line(&window.title)
                    ),
                )
            }
            Effect::Pointer { basis, x, y, .. } => {
                // No synthetic input at all (a Wayland session without X): say so
                // before judging a basis the pointer could never use.
                let hello = self.session.hello().await?;
                if !hello.permissions.input {
                    let why = hello
                        .permissions
                        .notes
                        .iter()
                        .find_map(|n| n.strip_prefix("synthetic input unavailable: "))
                        .unwrap_or("this desktop offers no synthetic pointer input");
                    return Err(fail(ErrorCode::InputUnavailable, why.to_string()));
                }
                match self.check_basis(basis, *x, *y, window, revision).await? {
                    Ok(point) => return Ok(Some(point)),
                    Err(e) => e,
                }
            }
        };
        Err(self.refuse(e, Some(op), Some(app)))
    }

    /// A pointer gesture's basis against the window re-measured now: the inner
    /// result is the screen point, or why the basis is stale or the point outside.
    pub(super) async fn check_basis(
        &mut self,
        basis: &Basis,
        x: f64,
        y: f64,
        window: &WindowInfo,
        revision: u64,
    ) -> Result<Result<(i32, i32), ComputerError>> {
        if basis.revision != revision {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                format!(
                    "the basis is from revision {} but the grant is at revision {revision}; observe again for a new basis",
                    basis.revision
                ),
            )));
        }
        // Re-measure just before dispatch.
        let now = self
            .session
            .driver()
            .windows()
            .await?
            .into_iter()
            .find(|w| w.handle == window.handle);
        let Some(now) = now else {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                "the basis window is gone; observe again",
            )));
        };
        let geometry = now
            .device_bounds
            .or(now.bounds)
            .map(|b| (b.x, b.y, b.width, b.height));
        if geometry != Some((basis.x, basis.y, basis.width, basis.height)) {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                format!(
                    "the window moved or was resized since the basis was taken (basis {basis}, now {}); observe again for a new basis",
                    geometry.map_or("unknown".into(), |(x, y, w, h)| format!("{x},{y},{w}x{h}"))
                ),
            )));
        }
        if !now.active {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                "the window lost focus since the basis was taken; observe again (pointer input would land on whatever is on top)",
            )));
        }
        let (cw, ch) = (
            f64::from(basis.width) * basis.scale,
            f64::from(basis.height) * basis.scale,
        );
        if !(x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0 && x < cw && y < ch) {
            return Ok(Err(fail(
                ErrorCode::ScopeViolation,
                format!(
                    "({x}, {y}) is outside the window ({cw}×{ch} capture pixels); coordinates are relative to the window's top-left corner and are never clamped"
                ),
            )));
        }
        // In range: x < width × scale, so the screen point is inside the window.
        let sx = basis.x + (x / basis.scale).floor() as i32;
        let sy = basis.y + (y / basis.scale).floor() as i32;
        if now
            .covered_by
            .iter()
            .any(|b| sx >= b.x && sy >= b.y && sx < b.x + b.width && sy < b.y + b.height)
        {
            return Ok(Err(fail(
                ErrorCode::ScopeViolation,
                format!(
                    "another window is on top at ({x}, {y}): a popup or another app's window covers that part of the bound window, and pointer input there would reach it"
                ),
            )));
        }
        Ok(Ok((sx, sy)))
    }

    /// Checks the grant for an action in the bound window with refs from `window`:
    /// the window is the bound one, its refs were shown under the current revision,
    /// budget and expiry allow it. Returns the bound window and its facts.
    ///
    /// When the bound window closed and the grant moved, an effect `aimed` with refs
    /// or a basis is `COMPUTER_STALE_REVISION`; one that is not (keys) goes to the
    /// window the grant moved to, and the third value says so for the result.
    pub(super) async fn action_target(
        &mut self,
        op: &str,
        aimed: bool,
    ) -> Result<(WindowInfo, Candidate, Option<String>), ComputerError> {
        self.refresh_settings()?;
        if self.o.settings.mode == Mode::Plan {
            // Plan mode refuses before anything is read or bound.
            self.preflight(control::now_ms())?;
            let e = fail(
                ErrorCode::ScopeViolation,
                "plan mode is read-only: observe, find and wait work, actions do not. Change it with `deskpilot config set mode default`",
            );
            return Err(self.refuse(e, Some(op), None));
        }
        let (en, vanished) = self.begin().await?;
        let g = self
            .policy()
            .authority
            .active()
            .cloned()
            .expect("begin ensures a grant");
        let mut moved = None;
        // Only within the same application (the same accessibility bus connection,
        // the first part of a handle): keys named by app name never follow a grant
        // to another process that happens to carry the name.
        let same_app = |old: &str| {
            let bus = |h: &str| h.split('|').next().unwrap_or_default().to_owned();
            g.target.as_deref().is_some_and(|t| bus(t) == bus(old))
        };
        if let Some((old, closed, _)) = vanished.as_ref().filter(|(_, _, h)| !aimed && same_app(h))
        {
            let v = self.grant_view();
            moved = Some(format!(
                "\nthe bound window {closed} closed, so the grant moved to [{}] {} (revision {}; refs from revision {old} are stale): the keys went there",
                v.as_ref()
                    .and_then(|v| v.window_ref.clone())
                    .unwrap_or_default(),
                deskpilot_core::sanitize::one_line(
                    v.as_ref()
                        .and_then(|v| v.app.as_deref())
                        .unwrap_or_default()
                ),
                g.revision
            ));
        } else if let Some((old, closed, _)) = vanished {
            let now_on = match (&g.target, self.grant_view()) {
                (Some(_), Some(v)) => format!(
                    "the grant moved to [{}] {}",
                    v.window_ref.unwrap_or_default(),
                    deskpilot_core::sanitize::one_line(v.app.as_deref().unwrap_or_default())
                ),
                _ => "no other window is permitted".into(),
            };
            let e = fail(
                ErrorCode::StaleRevision,
                format!(
                    "the bound window {closed} is gone (closed, or its app ended); {now_on} (revision {}, your refs are from revision {old}). Observe before acting",
                    g.revision
                ),
            );
            return Err(self.refuse(e, Some(op), g.target_app.as_deref()));
        }
        let Some(bound) = g.target.clone() else {
            let e = fail(
                ErrorCode::NoGrant,
                "the grant is bound to no window (none is permitted); observe a permitted window first",
            );
            return Err(self.refuse(e, Some(op), None));
        };
        // `begin` keeps the binding on a live window, or on the window of an app that
        // is not responding (not gone: the grant stays there).
        let Some((window, cand)) = en.find(&bound).cloned() else {
            let e = match en.frozen_app_of(&bound) {
                Some(app) => fail(
                    ErrorCode::NotResponding,
                    format!(
                        "app {:?}{} that you work in is not responding, so nothing was sent; the grant stays on it. Wait and try again",
                        deskpilot_core::sanitize::one_line(&app.name),
                        app.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                    ),
                ),
                None => fail(
                    ErrorCode::StaleRevision,
                    "the bound window is gone; observe before acting",
                ),
            };
            return Err(self.refuse(e, Some(op), g.target_app.as_deref()));
        };
        if let Some(r) = self.rules.check_window(&cand.facts) {
            let app = cand.facts.app.clone();
            return Err(self.refuse(refused(r), Some(op), Some(&app)));
        }
        Ok((window, cand, moved))
    }

    /// The user confirmed a first use of this app in this session.
    pub(super) fn remember_app(&mut self, facts: &TargetFacts) {
        let id = app_identity(facts);
        if !self.policy().approved_apps.contains(&id) {
            self.policy_mut().approved_apps.push(id);
        }
    }

    pub(super) fn refs_revision(&self, handle: &str) -> Option<u64> {
        self.session
            .state()
            .per_window
            .get(handle)
            .filter(|ws| ws.last.is_some())
            .map(|ws| ws.revision)
    }

    /// `COMPUTER_STALE_REVISION` when `r` is not a ref of the bound window but was
    /// shown for another window (refs are numbered across the session, so it cannot
    /// be both): the grant moved since, and acting on it needs a rebind first.
    pub(super) fn ref_elsewhere(&self, r: &str, bound: &str) -> Option<ComputerError> {
        let st = self.session.state();
        if st
            .per_window
            .get(bound)
            .is_some_and(|ws| ws.registry.resolve(r).is_ok())
        {
            return None;
        }
        let (handle, ws) = st
            .per_window
            .iter()
            .find(|(h, ws)| h.as_str() != bound && ws.registry.resolve(r).is_ok())?;
        let wref = st
            .windows
            .ref_of(&Handle(handle.clone()))
            .unwrap_or_else(|| "another window".into());
        let title = ws
            .info
            .as_ref()
            .map(|i| deskpilot_core::sanitize::one_line(&i.title))
            .unwrap_or_default();
        Some(fail(
            ErrorCode::StaleRevision,
            format!(
                "{} was shown for window {wref} {title:?}, but the grant is bound to another window now; observe --window {wref} to move the grant back (its refusals are checked again), then act",
                deskpilot_core::sanitize::one_line(r)
            ),
        ))
    }

    /// When the action closed the bound window, says what happens to the grant (the
    /// next call moves it; refs of the closed window are gone).
    pub(super) fn bound_closed_note(
        &mut self,
        window: &WindowInfo,
        change: &Change,
    ) -> Option<String> {
        let wref = self.session.window_ref(&window.handle);
        change.closed_windows.contains(&wref).then(|| {
            format!(
                "\nthe grant's window [{wref}] closed: the next call moves the grant to the frontmost permitted window under a new revision; observe before acting"
            )
        })
    }

    /// Notes the refusal of each window an action opened.
    pub(super) fn mark_new_windows(&mut self, change: &mut Change) {
        if change.new_windows.is_empty() {
            return;
        }
        for w in &mut change.new_windows {
            let facts = TargetFacts {
                app: w.app.clone(),
                title: w.title.clone(),
                ..TargetFacts::default()
            };
            // Process facts are re-measured when the window is observed; names and
            // titles already decide the deny-lists.
            w.refused = self
                .rules
                .check_window(&facts)
                .map(|r| format!("{} ({})", r.code.as_str(), r.reason));
        }
    }
}

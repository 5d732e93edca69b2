//! Enumeration and binding, and the reads: `apps`, `observe`, `find`, `wait`
//! (docs/ARCHITECTURE.md §7). Reads bind the grant (a rebind re-runs every refusal
//! on a fresh enumeration and bumps the revision); actions never do.

use std::time::Duration;

use deskpilot_core::{Handle, Role};
use deskpilot_policy::audit::AuditEvent;
use deskpilot_policy::grant::Candidate;
use deskpilot_policy::refusal::TargetFacts;
use deskpilot_protocol::types::{AppInfo, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::{Basis, Enumeration, Host, ListedApp, ListedWindow, fail, refused};
use crate::control;
use crate::session::{Found, Observation, ObserveOptions, Target, WaitFor, WaitOutcome};
use deskpilot_protocol::Result;

/// The facts the refusals judge a window of `app` on: names and title as listed, the
/// process's uid, its executable as the kernel resolved it (a renamed link to a
/// binary changes the app name and `comm`, not this), and whether it holds a pty's
/// master end (a terminal under any name). `local`: the driver runs on
/// this machine, so a pid the driver did not describe is read from this machine's
/// `/proc`; a remote driver's pids are never looked up here (another machine's pid
/// names a different process here) and its uids are its machine's, judged there.
pub fn window_facts(app: &AppInfo, w: &WindowInfo, local: bool) -> TargetFacts {
    let (uid, exe, pty_master) = if local {
        let uid = app.uid.or_else(|| app.pid.and_then(control::process_uid));
        let exe = app.exe.clone().or_else(|| {
            app.pid
                .and_then(|p| control::process_exe(p).or_else(|| control::process_comm(p)))
        });
        let pty = app
            .pty_master
            .or_else(|| w.pid.or(app.pid).and_then(control::holds_pty_master));
        (uid, exe, pty)
    } else {
        (None, app.exe.clone(), app.pty_master)
    };
    TargetFacts {
        app: app.name.clone(),
        title: w.title.clone(),
        pid: w.pid.or(app.pid),
        uid,
        exe,
        focused_password: false,
        pty_master: pty_master == Some(true),
        // A process whose files this Linux host cannot read might hold a pty. One
        // whose pid is not known, one on another OS (no `/proc`: terminals are
        // known by name there) and one a remote driver did not describe are judged
        // on their names alone.
        pty_unknown: local
            && cfg!(target_os = "linux")
            && pty_master.is_none()
            && w.pid.or(app.pid).is_some(),
        toolkit: app.toolkit.clone(),
    }
}

impl Host {
    /// Lists windows with their facts, frontmost (active) first.
    pub(super) async fn enumerate(&mut self) -> Result<Enumeration> {
        let mut apps = self.session.driver().apps().await?;
        self.session.offer_listing(&apps);
        let local = !self.o.remote();
        // Whether an app holds a pty is read once per app, not once per window:
        // every read and every act enumerates (its windows share its process).
        if local {
            for a in &mut apps {
                if a.pty_master.is_none() {
                    a.pty_master = a.pid.and_then(control::holds_pty_master);
                }
            }
        }
        let mut candidates = Vec::new();
        for app in &apps {
            for w in &app.windows {
                let facts = window_facts(app, w, local);
                candidates.push((
                    w.clone(),
                    Candidate {
                        handle: w.handle.0.clone(),
                        facts,
                    },
                ));
            }
        }
        // Frontmost first: the active window, then the driver's order.
        candidates.sort_by_key(|(w, _)| !w.active);
        // A window not on screen (unmapped, minimised, on another workspace) has
        // no place to frame: the presence frame is drawn nowhere for it.
        self.measured = candidates
            .iter()
            .filter(|(w, _)| w.hidden.is_none())
            .filter_map(|(w, _)| Some((w.handle.0.clone(), w.device_bounds.or(w.bounds)?)))
            .collect();
        Ok(Enumeration { apps, candidates })
    }

    /// The window of handle `t` that closed, as the caller last saw it: its ref,
    /// role, title and app, escaped.
    fn closed_window_text(&self, t: &str, g: Option<&deskpilot_policy::grant::Grant>) -> String {
        let st = self.session.state();
        let wref = st
            .windows
            .ref_of(&Handle(t.to_owned()))
            .map(|r| format!("[{r}] "))
            .unwrap_or_default();
        let info = st.per_window.get(t).and_then(|ws| ws.info.as_ref());
        let title = info.map_or_else(String::new, |i| {
            format!("{:?} ", deskpilot_core::sanitize::one_line(&i.title))
        });
        let app = g
            .and_then(|g| g.target_app.as_deref())
            .map(|a| format!("of {}", deskpilot_core::sanitize::one_line(a)))
            .unwrap_or_default();
        format!("{wref}{title}{app}").trim_end().to_owned()
    }

    /// Preflight, grant, enumeration, and keeping the binding on a live window.
    /// Returns the enumeration and, when the bound window vanished, the revision the
    /// caller's refs were taken under with the window that closed, as text
    /// (`[w2] dialog "Open File" of mousepad`) and as its handle.
    pub(super) async fn begin(
        &mut self,
    ) -> Result<(Enumeration, Option<(u64, String, String)>), ComputerError> {
        let now = control::now_ms();
        self.preflight(now)?;
        self.ensure_grant(now)?;
        let en = self.enumerate().await?;
        let (target, old_rev) = {
            let g = self.policy().authority.active().expect("ensured");
            (g.target.clone(), g.revision)
        };
        let mut vanished = None;
        match target {
            // The bound window's app is frozen, not gone: the grant stays on it (a
            // read that asks for it says so; one that names another window moves
            // there as any bind does, audited).
            Some(t) if en.find(&t).is_none() && en.frozen_app_of(&t).is_some() => {}
            Some(t) if en.find(&t).is_none() => {
                let before = self.policy().authority.active().cloned();
                vanished = Some((
                    old_rev,
                    self.closed_window_text(&t, before.as_ref()),
                    t.clone(),
                ));
                let rules = self.rules.clone();
                let fell = self
                    .policy_mut()
                    .authority
                    .window_vanished(&en.list(), &rules, now);
                match (fell, self.policy().authority.active().cloned()) {
                    (Some(_), Some(g)) => self.audit_bound(&g, &en),
                    (None, Some(g)) => {
                        // A desktop grant with no permitted window left: still
                        // active, bound to nothing until a permitted window appears.
                        self.audit_grant(AuditEvent::GrantRebound, &g, None, None);
                    }
                    (_, None) => {
                        self.policy_mut().issued_ms = None;
                        if let Some(g) = before {
                            let mut rec = Self::grant_record(
                                AuditEvent::GrantRevoked,
                                &g,
                                g.target_app.as_deref(),
                                None,
                            );
                            rec.status = Some("window closed".into());
                            self.audit(rec);
                        }
                        self.release_lock();
                    }
                }
            }
            Some(_) => {}
            None => {
                let rules = self.rules.clone();
                let bound = self
                    .policy_mut()
                    .authority
                    .bind_frontmost(&en.list(), &rules, now);
                match bound {
                    Ok(_) => {
                        let g = self.policy().authority.active().cloned().expect("bound");
                        self.audit_bound(&g, &en);
                    }
                    Err(r) => {
                        // Nothing to bind: reads of the listing still work; the
                        // caller's target decides whether this is an error.
                        tracing::debug!(reason = %r.reason, "no permitted window to bind");
                    }
                }
            }
        }
        if let Some(t) = self.bound_handle() {
            // Every bound window has a `wN` the caller can be told about.
            self.session.window_ref(&Handle(t));
        }
        if self.policy().authority.active().is_none() {
            let e = fail(
                ErrorCode::NoGrant,
                "the grant was revoked: its window closed (a window grant ends with its window). The next call issues a new grant",
            );
            return Err(self.refuse(e, None, None));
        }
        Ok((en, vanished))
    }

    pub(super) fn bound_handle(&self) -> Option<String> {
        self.policy()
            .authority
            .active()
            .and_then(|g| g.target.clone())
    }

    /// Resolves `target` and binds the grant to it (a rebind re-runs every refusal
    /// and bumps the revision). `Target::Current` means the bound window.
    pub(super) async fn bind_target(
        &mut self,
        target: &Target,
        en: &Enumeration,
    ) -> Result<WindowInfo> {
        let now = control::now_ms();
        let window = match target {
            Target::Current => match self.bound_handle() {
                Some(h) => match (en.find(&h), en.frozen_app_of(&h)) {
                    (Some((w, _)), _) => w.clone(),
                    (None, Some(app)) => {
                        return Err(fail(
                            ErrorCode::NotResponding,
                            format!(
                                "app {:?}{} that you work in is not responding; the grant stays on it. Wait and try again, or observe another window with --app or --window",
                                app.name,
                                app.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                            ),
                        ));
                    }
                    (None, None) => {
                        return Err(fail(ErrorCode::ElementNotFound, "the bound window is gone"));
                    }
                },
                None => {
                    let rules = self.rules.clone();
                    let e = self
                        .policy_mut()
                        .authority
                        .bind_frontmost(&en.list(), &rules, now)
                        .map_err(refused)
                        .err()
                        .unwrap_or_else(|| {
                            fail(ErrorCode::ScopeViolation, "no window is permitted")
                        });
                    return Err(self.refuse(e, None, None));
                }
            },
            other => self.session.resolve_in(&en.apps, other)?,
        };
        let Some((_, cand)) = en.find(window.handle.as_str()) else {
            return Err(fail(
                ErrorCode::ElementNotFound,
                "the window closed while it was being bound; run `deskpilot apps`",
            ));
        };
        let cand = cand.clone();
        if self.bound_handle().as_deref() == Some(window.handle.as_str()) {
            // Already bound: the refusals still run on every call (the config or
            // the window's owner may have changed since it was bound).
            if let Some(r) = self.rules.check_window(&cand.facts) {
                let app = cand.facts.app.clone();
                return Err(self.refuse(refused(r), Some("read"), Some(&app)));
            }
            return Ok(window);
        }
        // Leaving a window whose app froze: say which app was left, and why.
        if let Some(prev) = self.bound_handle()
            && let Some(app) = en.frozen_app_of(&prev)
        {
            self.warnings.push(format!(
                "the grant left {:?}{}: it is not responding",
                app.name,
                app.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
            ));
        }
        let rules = self.rules.clone();
        match self.policy_mut().authority.bind(&cand, &rules, now) {
            Ok(_) => {
                let g = self.policy().authority.active().cloned().expect("bound");
                self.audit_grant(
                    AuditEvent::GrantRebound,
                    &g,
                    Some(&cand.facts.app),
                    cand.facts.pid,
                );
                Ok(window)
            }
            Err(r) => {
                let app = cand.facts.app.clone();
                Err(self.refuse(refused(r), Some("bind"), Some(&app)))
            }
        }
    }

    /// Stamps the refs of `window` with the current revision and fills the grant
    /// view and basis of an observation.
    pub(super) fn stamp(&mut self, window: &WindowInfo, obs: Option<&mut Observation>) {
        let rev = self.revision();
        if let Some(ws) = self
            .session
            .state_mut()
            .per_window
            .get_mut(window.handle.as_str())
        {
            ws.revision = rev;
        }
        if let Some(obs) = obs {
            obs.grant = self.grant_view();
            obs.basis = window.device_bounds.or(window.bounds).map(|b| {
                Basis {
                    revision: rev,
                    x: b.x,
                    y: b.y,
                    width: b.width,
                    height: b.height,
                    scale: 1.0,
                }
                .to_string()
            });
        }
    }

    pub(super) fn after_call(&mut self) -> Result<()> {
        if let Some(h) = self.bound_handle() {
            self.session.state_mut().current = Some(h);
        }
        self.show_presence();
        self.session.save()
    }

    /// Shows the grant as it is now (docs/ARCHITECTURE.md §7.19): the frame around
    /// the bound window as last measured and the indicator's line; nothing once the
    /// grant is gone.
    pub fn show_presence(&self) {
        let Some(p) = &self.o.presence else {
            return;
        };
        // The user turned it off since the host started (the config is re-read
        // before every call).
        if !self.o.settings.presence {
            p.clear();
            return;
        }
        let Some(view) = self.grant_view() else {
            p.clear();
            return;
        };
        let bound = self.bound_handle();
        let frame =
            bound.and_then(|h| self.measured.iter().find(|(m, _)| *m == h).map(|(_, b)| *b));
        if let Some(g) = self.policy().authority.active() {
            p.expires_at(g.last_activity_ms.saturating_add(g.idle_expiry_ms));
        }
        p.frame(frame);
        p.indicator(Some(crate::presence::indicator_text(
            view.app.as_deref(),
            view.actions_left,
            match view.capture {
                deskpilot_policy::grant::Capture::A11yOnly => "capture tree",
                deskpilot_policy::grant::Capture::A11yAndPixels => "capture tree + pixels",
            },
            view.device.as_deref(),
        )));
    }

    /// Applications and windows, each window with its refusal (never dropped).
    pub async fn apps(&mut self) -> Result<Vec<ListedApp>> {
        let (en, _) = self.begin().await?;
        let bound = self.bound_handle();
        let mut out = Vec::new();
        for app in &en.apps {
            let mut windows = Vec::new();
            for w in &app.windows {
                let refusal = en
                    .find(w.handle.as_str())
                    .and_then(|(_, c)| self.rules.check_window(&c.facts));
                windows.push(ListedWindow {
                    ref_: self.session.window_ref(&w.handle),
                    window: w.clone(),
                    bound: bound.as_deref() == Some(w.handle.as_str()),
                    refused: refusal,
                    not_viewable: w.not_viewable(),
                });
            }
            // The app's facts: those of its first window, else of the app alone.
            let facts = app
                .windows
                .first()
                .and_then(|w| en.find(w.handle.as_str()))
                .map(|(_, c)| c.facts.clone())
                .unwrap_or_else(|| TargetFacts {
                    app: app.name.clone(),
                    exe: app.exe.clone(),
                    ..TargetFacts::default()
                });
            out.push(ListedApp {
                name: app.name.clone(),
                pid: app.pid,
                status: app.status,
                toolkit: app.toolkit.clone(),
                tier: self.rules.tier_of(&facts),
                code: self.rules.is_code(&facts),
                exe: facts.exe.clone(),
                windows,
            });
        }
        self.after_call()?;
        Ok(out)
    }

    /// Observes `target` (binding the grant to it); the observation carries the
    /// grant view and a coordinate basis.
    pub async fn observe(&mut self, target: &Target, opts: &ObserveOptions) -> Result<Observation> {
        let started = std::time::Instant::now();
        let (en, _) = self.begin().await?;
        let window = self.bind_target(target, &en).await?;
        // A window with no tree is read from pixels when they are allowed; else
        // the driver's read fails saying how to allow them.
        let pixels = self
            .policy()
            .authority
            .active()
            .is_some_and(|g| g.capture == deskpilot_policy::grant::Capture::A11yAndPixels);
        let mut obs = if window.no_tree && pixels {
            self.observe_pixels(&window).await?
        } else {
            let mut obs = self.session.observe_window(&window, opts, started).await?;
            if pixels && opts.scope.is_none() {
                self.ocr_images(&window, &mut obs).await?;
            }
            obs
        };
        self.stamp(&window, Some(&mut obs));
        self.after_call()?;
        Ok(obs)
    }

    /// The text of element `r` of the window the grant is bound to
    /// ([`crate::session::Session::read_text`]). Read-only.
    pub async fn read_text(
        &mut self,
        r: &str,
        from: Option<u64>,
        to: Option<u64>,
        tail: Option<u64>,
    ) -> Result<crate::session::TextRead> {
        let (en, _) = self.begin().await?;
        self.bind_target(&Target::Current, &en).await?;
        let out = self.session.read_text(r, from, to, tail).await?;
        // No stamp: a read of one element does not renew the window's other refs
        // (only an observe that showed them does).
        self.after_call()?;
        Ok(out)
    }

    /// Finds elements in `target` (binding the grant to it): the matches on screen
    /// and what was not searched ([`crate::session::Unsearched`]).
    pub async fn find(
        &mut self,
        target: &Target,
        text: &str,
        role: Option<Role>,
        limit: usize,
    ) -> Result<Found> {
        let (en, _) = self.begin().await?;
        let window = self.bind_target(target, &en).await?;
        let found = self
            .session
            .find_in_window(&window, text, role, limit)
            .await?;
        self.stamp(&window, None);
        self.after_call()?;
        Ok(found)
    }

    /// Binds `target` ([`Host::bind_target`]), polling every 200 ms up to `timeout`
    /// while its app or window is not on the accessibility bus yet: an app registers
    /// its tree a second or two after it starts. Only "not found" is waited out; a
    /// refusal, a frozen app or a stop ends the wait at once.
    ///
    /// Errors: `COMPUTER_TIMEOUT` saying the app or window never published a tree
    /// (with the last "not found" reason); any error of [`Host::begin`] or
    /// [`Host::bind_target`] other than not found.
    pub(super) async fn bind_appearing(
        &mut self,
        target: &Target,
        timeout: Duration,
    ) -> Result<WindowInfo> {
        let started = std::time::Instant::now();
        let stop = self.o.stop.clone();
        loop {
            let (en, _) = self.begin().await?;
            let e = match self.bind_target(target, &en).await {
                // A window shown before its app published its tree (a GTK app
                // starting) is not the window waited for yet: its tree may come,
                // and with it the accessible window, a window of its own.
                Ok(w) if w.no_tree => fail(
                    ErrorCode::AccessibilityDisabled,
                    format!(
                        "{:?} shows a window but no accessibility tree (an app without one is read with observe when pixels are allowed)",
                        deskpilot_core::sanitize::one_line(&w.app)
                    ),
                ),
                Ok(w) => return Ok(w),
                Err(e) => e,
            };
            // Not there yet, there but busy (an app that is still starting can
            // miss the first probe), or not yet showing its tree (a window still
            // being built): all are waited out, the last error named at the end.
            let waitable = matches!(
                e.code,
                ErrorCode::ElementNotFound
                    | ErrorCode::NotResponding
                    | ErrorCode::AccessibilityDisabled
            ) && !e.is_link_lost()
                && matches!(target, Target::App(_) | Target::Window(_));
            if !waitable {
                return Err(e);
            }
            if started.elapsed() >= timeout {
                let what = match target {
                    Target::App(name) => format!("app {name:?}"),
                    _ => "the window".to_owned(),
                };
                return Err(fail(
                    ErrorCode::Timeout,
                    format!(
                        "{what} never published an accessibility tree within {} ms ({}); check that it started with accessibility on (`deskpilot doctor`), or wait longer (`timeout_ms` over MCP, `--timeout-ms` on the command line)",
                        timeout.as_millis(),
                        e.message
                    ),
                ));
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
                () = stop.stopped() => {
                    self.apply_stop();
                    return Err(fail(
                        ErrorCode::StoppedByUser,
                        "the user pressed stop: the wait was aborted and the grant revoked",
                    ));
                }
            }
        }
    }

    /// Waits for `cond` in `target` (binding the grant to it). An app or window that
    /// is not on the accessibility bus yet is waited for too, within the same
    /// `timeout` ([`Host::bind_appearing`]). A stop ends the wait with
    /// `COMPUTER_STOPPED_BY_USER`.
    pub async fn wait(
        &mut self,
        target: &Target,
        cond: &WaitFor,
        timeout: Duration,
    ) -> Result<WaitOutcome> {
        let started = std::time::Instant::now();
        let window = match cond {
            WaitFor::Window(_) => {
                self.begin().await?;
                None
            }
            _ => Some(self.bind_appearing(target, timeout).await?),
        };
        let t = match &window {
            Some(w) => Target::Handle(w.handle.clone()),
            None => target.clone(),
        };
        let left = timeout.saturating_sub(started.elapsed());
        let stop = self.o.stop.clone();
        let out = tokio::select! {
            r = self.session.wait(&t, cond, left) => r,
            () = stop.stopped() => Err(fail(
                ErrorCode::StoppedByUser,
                "the user pressed stop: the wait was aborted and the grant revoked",
            )),
        };
        if let Some(w) = &window {
            self.stamp(w, None);
        }
        if out
            .as_ref()
            .is_err_and(|e| e.code == ErrorCode::StoppedByUser)
        {
            self.apply_stop();
        }
        self.after_call()?;
        out
    }
}

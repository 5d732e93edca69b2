//! The step loop: observe, ask the model for one decision, validate it, act or
//! switch through the host, and record the step.

use std::collections::HashSet;
use std::time::Instant;

use deskpilot_core::Op;
use deskpilot_core::redact::display_name_of;
use deskpilot_host::host::pixels::ShotMode;
use deskpilot_host::{Host, Observation, ObserveOptions, Target};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::types::ActStatus;
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::report::{
    ExecutedAction, HISTORY_LINES, MAX_MODEL_TEXT_CHARS, MAX_STEPS_LIMIT, ObservationMode,
    Question, REPEAT_LIMIT, RunOptions, RunReport, RunStatus, StepRecord, summarize,
};
use super::scope::describe_scope;
use super::text::{bounded_text, window_label};
use crate::decision::{self, Decision};
use crate::model::{DecideRequest, Model};
use crate::prompt;
use deskpilot_protocol::Result;

/// Observations whose refs are remembered to tell a stale ref from an unknown one.
const SEEN_OBSERVATIONS: usize = 32;

/// The status a host error ends a run with; `None` when it only fails the step.
fn ending(code: ErrorCode) -> Option<RunStatus> {
    match code {
        ErrorCode::StoppedByUser => Some(RunStatus::Stopped),
        ErrorCode::GrantExpired => Some(RunStatus::Expired),
        ErrorCode::BudgetExhausted => Some(RunStatus::Budget),
        ErrorCode::NoGrant | ErrorCode::FeatureDisabled => Some(RunStatus::Refused),
        ErrorCode::ConfirmationRequired => Some(RunStatus::NeedsUser),
        _ => None,
    }
}

fn plan_refusal() -> ComputerError {
    ComputerError::new(
        ErrorCode::ScopeViolation,
        "plan mode is read-only and a run acts on the desktop. Describe the scope instead with --observe-only (computer_task observe_only=true), or change the mode with `deskpilot config set mode default`",
    )
}

/// Runs `opts.instruction` with `model` through `host`, calling `progress` after each
/// step. With `opts.observe_only` it is [`describe_scope`] and the model is not called.
///
/// The run never ends the grant: a caller that owns it (`deskpilot run`) revokes it
/// afterwards; a long-lived host (the MCP server) keeps it.
///
/// Errors (nothing was done): `COMPUTER_SCOPE_VIOLATION` in plan mode unless observe
/// only; `COMPUTER_STOPPED_BY_USER` when the stop signal is already raised; the
/// host's errors on the first observation (`COMPUTER_FEATURE_DISABLED`,
/// `COMPUTER_NO_GRANT`, …). Once the first observation succeeded every ending is a
/// [`RunReport`], errors included (`status` and `error`).
pub async fn run(
    host: &mut Host,
    model: &dyn Model,
    opts: &RunOptions,
    progress: &mut (dyn FnMut(&StepRecord) + Send),
) -> Result<RunReport> {
    if opts.observe_only {
        return describe_scope(host, opts).await;
    }
    if host.options().settings.mode == Mode::Plan {
        return Err(plan_refusal());
    }
    let stop = host.options().stop.clone();
    if stop.is_stopped() {
        host.apply_stop();
        return Err(ComputerError::new(
            ErrorCode::StoppedByUser,
            "the user pressed stop before the run began; nothing was done",
        ));
    }
    let started = Instant::now();
    let oo = ObserveOptions {
        max_tokens: opts.max_tokens_per_observation,
        ..ObserveOptions::default()
    };
    let obs = host.observe(&Target::Current, &oo).await?;
    let actions_left = host.grant_view().map_or(0, |g| g.actions_left as usize);
    let cap = opts.max_steps.min(MAX_STEPS_LIMIT).min(actions_left);
    let mut lp = Loop {
        host,
        model,
        opts,
        oo,
        report: RunReport::new(Some(model.name()), cap),
        obs,
        needs_observe: false,
        seen: Vec::new(),
        last_outcome: None,
        history: Vec::new(),
        streak: (String::new(), 0),
    };
    lp.remember_refs();
    let status = if cap == 0 {
        if actions_left == 0 {
            lp.report.error = Some(ComputerError::new(
                ErrorCode::BudgetExhausted,
                "the grant has no actions left; nothing was asked of the model",
            ));
            RunStatus::Budget
        } else {
            RunStatus::StepCap
        }
    } else {
        lp.steps(cap, &stop, progress).await
    };
    let mut report = lp.report;
    report.status = status;
    report.grant = lp.host.grant_view();
    report.wall_ms = started.elapsed().as_millis() as u64;
    report.summary = summarize(&report);
    Ok(report)
}

/// What one step led to.
enum Next {
    Continue,
    End(RunStatus),
}

struct Loop<'a> {
    host: &'a mut Host,
    model: &'a dyn Model,
    opts: &'a RunOptions,
    oo: ObserveOptions,
    report: RunReport,
    /// The bound window as last shown to the model.
    obs: Observation,
    /// An action ran since `obs` was taken.
    needs_observe: bool,
    /// Refs present in recent observations: (revision, window handle, refs).
    seen: Vec<(u64, String, HashSet<String>)>,
    last_outcome: Option<String>,
    history: Vec<String>,
    /// Signature of the last failing step and how many times in a row it failed.
    streak: (String, usize),
}

impl Loop<'_> {
    fn revision(&self) -> u64 {
        self.host.grant_view().map_or(0, |g| g.revision)
    }

    fn obs_revision(&self) -> u64 {
        self.obs.grant.as_ref().map_or(0, |g| g.revision)
    }

    /// Records the refs of the current observation's tree.
    fn remember_refs(&mut self) {
        let handle = self.obs.window.handle.as_str().to_string();
        let refs: HashSet<String> = self
            .host
            .session()
            .state()
            .per_window
            .get(&handle)
            .and_then(|ws| ws.last.as_ref())
            .map(|t| t.walk().filter_map(|n| n.ref_.clone()).collect())
            .unwrap_or_default();
        let rev = self.obs_revision();
        self.seen.retain(|(r, h, _)| !(*r == rev && *h == handle));
        self.seen.push((rev, handle, refs));
        if self.seen.len() > SEEN_OBSERVATIONS {
            self.seen.remove(0);
        }
    }

    /// The role and display name of `r` in the bound window's current tree.
    fn element(&self, r: &str) -> Option<(String, String)> {
        let ws = self
            .host
            .session()
            .state()
            .per_window
            .get(self.obs.window.handle.as_str())?;
        let tree = ws.last.as_ref()?;
        tree.walk()
            .find(|n| n.ref_.as_deref() == Some(r))
            .map(|n| (n.role.to_string(), display_name_of(n, 60)))
    }

    /// Why `r` is not usable: shown under another revision or window, or unknown.
    fn missing_ref(&self, r: &str) -> ComputerError {
        let rev = self.obs_revision();
        let handle = self.obs.window.handle.as_str();
        let earlier = self
            .seen
            .iter()
            .rev()
            .find(|(rv, h, refs)| (*rv != rev || h != handle) && refs.contains(r));
        match earlier {
            Some((rv, _, _)) => ComputerError::new(
                ErrorCode::StaleRevision,
                format!(
                    "{r} was shown under revision {rv}, but the grant is now at revision {rev} on {}; refs from before a switch are void, use a ref from the current window text",
                    window_label(&self.obs)
                ),
            ),
            None => ComputerError::new(
                ErrorCode::ElementNotFound,
                format!(
                    "there is no element {r} in the current window {}; use a ref from its text",
                    window_label(&self.obs)
                ),
            ),
        }
    }

    async fn steps(
        &mut self,
        cap: usize,
        stop: &deskpilot_host::control::StopSignal,
        progress: &mut (dyn FnMut(&StepRecord) + Send),
    ) -> RunStatus {
        let schema = decision::schema();
        let system = prompt::system_for(&schema.to_string(), self.opts.observation);
        let system_tokens = deskpilot_core::tokens::count(&system) as u64;
        for n in 1..=cap {
            let t0 = Instant::now();
            if stop.is_stopped() {
                self.host.apply_stop();
                return self.stopped_by_signal();
            }
            if self.needs_observe {
                match self.host.observe(&Target::Current, &self.oo).await {
                    Ok(o) => {
                        self.obs = o;
                        self.needs_observe = false;
                        self.remember_refs();
                    }
                    Err(e) => return self.host_ended(e),
                }
            }
            let apps = match self.host.apps().await {
                Ok(a) => a,
                Err(e) => return self.host_ended(e),
            };
            let windows = prompt::window_lines(&apps);
            let grant = self.host.grant_view();
            let (observation, images) = match self.shown().await {
                Ok(v) => v,
                Err(e) => return self.host_ended(e),
            };
            let image_tokens: u64 = images
                .iter()
                .map(|i| deskpilot_core::tokens::image_tokens(i.width, i.height))
                .sum();
            let user = prompt::user(&prompt::StepView {
                instruction: &self.opts.instruction,
                grant: grant.as_ref(),
                windows: &windows,
                observation: &observation,
                last_outcome: self.last_outcome.as_deref(),
                history: &self.history,
                step: n,
                cap,
            });
            let shown_tokens = (deskpilot_core::tokens::count(&observation)
                + deskpilot_core::tokens::count(&windows.join("\n"))
                + self
                    .last_outcome
                    .as_deref()
                    .map_or(0, deskpilot_core::tokens::count))
                as u64;
            let screenshot_tokens =
                deskpilot_host::host::pixels::window_screenshot_tokens(&self.obs.window);
            let req = DecideRequest {
                system: system.clone(),
                user,
                schema: schema.clone(),
                max_output_tokens: self.opts.max_output_tokens,
                images,
            };
            let answer = tokio::select! {
                r = self.model.decide(&req) => Some(r),
                () = stop.stopped() => None,
            };
            let Some(answer) = answer else {
                self.host.apply_stop();
                return self.stopped_by_signal();
            };
            let reply = match answer {
                Ok(r) => r,
                Err(e) => {
                    self.report.error = Some(e);
                    return RunStatus::ModelError;
                }
            };
            let mut usage = reply.usage;
            if !usage.reported {
                usage.input_tokens =
                    system_tokens + deskpilot_core::tokens::count(&req.user) as u64 + image_tokens;
                usage.output_tokens = deskpilot_core::tokens::count(&reply.raw) as u64;
            }
            let mut rec = StepRecord {
                n,
                kind: "invalid".into(),
                ref_: None,
                op: None,
                value_len: None,
                window: None,
                outcome: String::new(),
                message: None,
                channel: None,
                tokens_in: usage.input_tokens,
                tokens_out: usage.output_tokens,
                usage_reported: usage.reported,
                shown_tokens,
                image_tokens,
                screenshot_tokens,
                ms: 0,
            };
            self.report.tokens_in += usage.input_tokens;
            self.report.tokens_out += usage.output_tokens;
            self.report.usage_reported &= usage.reported;

            let next = match decision::parse(&reply.raw) {
                Err(e) => {
                    let sig = format!("invalid:{}", e.message);
                    self.refused_step(&mut rec, &e, &sig)
                }
                Ok(d) => {
                    rec.kind = d.kind().into();
                    self.decided(n, d, &apps, &mut rec).await
                }
            };
            rec.ms = t0.elapsed().as_millis() as u64;
            self.history.push(history_line(&rec));
            if self.history.len() > HISTORY_LINES {
                self.history.remove(0);
            }
            progress(&rec);
            self.report.steps.push(rec);
            if let Next::End(s) = next {
                return s;
            }
        }
        if self.host.grant_view().is_some_and(|g| g.actions_left == 0) {
            RunStatus::Budget
        } else {
            RunStatus::StepCap
        }
    }

    /// The window as this step shows it: the tree text, and in the `pixels` and
    /// `hybrid` observations a marked screenshot taken through the host (its
    /// refusals apply: a screenshot refused while a password field has focus is
    /// said in the text instead). Errors only for what ends the run (a stop,
    /// an expired or revoked grant).
    async fn shown(&mut self) -> Result<(String, Vec<crate::call::Image>), ComputerError> {
        let mode = self.opts.observation;
        if !mode.shows_image() {
            return Ok((self.obs.text.clone(), Vec::new()));
        }
        let shot = self
            .host
            .screenshot(&Target::Current, ShotMode::Marks, None)
            .await;
        let tree = (mode == ObservationMode::Hybrid).then(|| self.obs.text.clone());
        match shot {
            Ok(shot) => {
                let about = format!(
                    "(the bound window {} is the attached screenshot, {}×{} px; every element you can address is boxed and labelled with its ref)",
                    window_label(&self.obs),
                    shot.width,
                    shot.height
                );
                let text = match tree {
                    Some(t) => format!("{t}\n{about}"),
                    None => about,
                };
                let img = crate::call::Image {
                    png: shot.png,
                    width: shot.width,
                    height: shot.height,
                };
                Ok((text, vec![img]))
            }
            Err(e) if ending(e.code).is_some_and(|s| s != RunStatus::NeedsUser) => Err(e),
            Err(e) => {
                let why = format!(
                    "(no screenshot this step: {}: {})",
                    e.code.as_str(),
                    bounded_text(&e.message, 300)
                );
                Ok((
                    match tree {
                        Some(t) => format!("{t}\n{why}"),
                        None => why,
                    },
                    Vec::new(),
                ))
            }
        }
    }

    fn stopped_by_signal(&mut self) -> RunStatus {
        self.report.error = Some(ComputerError::new(
            ErrorCode::StoppedByUser,
            "the user pressed stop: the run was aborted and the grant revoked",
        ));
        RunStatus::Stopped
    }

    /// Ends the run on a host error outside a step's action.
    fn host_ended(&mut self, e: ComputerError) -> RunStatus {
        let status = match ending(e.code) {
            Some(RunStatus::NeedsUser) | None => RunStatus::Failed,
            Some(s) => s,
        };
        self.report.error = Some(e);
        status
    }

    /// Records a refused step and tells the model; ends the run on the third identical
    /// failure in a row.
    fn refused_step(&mut self, rec: &mut StepRecord, e: &ComputerError, sig: &str) -> Next {
        rec.outcome = e.code.as_str().to_string();
        rec.message = Some(bounded_text(&e.message, 300));
        self.last_outcome = Some(format!(
            "step {} was refused before or by the host, nothing was done: {}: {}",
            rec.n,
            e.code.as_str(),
            bounded_text(&e.message, 600)
        ));
        self.fail(sig)
    }

    fn fail(&mut self, sig: &str) -> Next {
        if self.streak.0 == sig {
            self.streak.1 += 1;
        } else {
            self.streak = (sig.to_string(), 1);
        }
        if self.streak.1 >= REPEAT_LIMIT {
            Next::End(RunStatus::RepeatedFailure)
        } else {
            Next::Continue
        }
    }

    fn succeed(&mut self) {
        self.streak = (String::new(), 0);
    }

    async fn decided(
        &mut self,
        n: usize,
        d: Decision,
        apps: &[deskpilot_host::host::ListedApp],
        rec: &mut StepRecord,
    ) -> Next {
        match d {
            Decision::Done { summary } => {
                rec.outcome = "done".into();
                self.report.model_claim = Some(bounded_text(&summary, MAX_MODEL_TEXT_CHARS));
                Next::End(RunStatus::Done)
            }
            Decision::Ask { question } => {
                rec.outcome = "asked".into();
                self.report.question = Some(Question {
                    from: "model".into(),
                    text: bounded_text(&question, MAX_MODEL_TEXT_CHARS),
                });
                Next::End(RunStatus::NeedsUser)
            }
            Decision::Switch { window } => {
                rec.window = Some(window.clone());
                self.switch(&window, apps, rec).await
            }
            Decision::Action { ref_, op, value } => {
                rec.ref_ = Some(ref_.clone());
                rec.op = Some(op.as_str().into());
                rec.value_len = match op {
                    Op::SetValue | Op::Type => value.as_ref().map(|v| v.chars().count()),
                    _ => None,
                };
                self.action(n, &ref_, op, value, rec).await
            }
        }
    }

    async fn switch(
        &mut self,
        window: &str,
        apps: &[deskpilot_host::host::ListedApp],
        rec: &mut StepRecord,
    ) -> Next {
        let sig = format!("switch:{window}");
        let listed = apps
            .iter()
            .flat_map(|a| a.windows.iter())
            .find(|w| w.ref_ == window);
        let Some(listed) = listed else {
            let e = ComputerError::new(
                ErrorCode::ElementNotFound,
                format!("{window} is not in the window list; switch only to a listed window"),
            );
            return self.refused_step(rec, &e, &sig);
        };
        if listed.bound {
            let e = ComputerError::new(
                ErrorCode::InvalidArgument,
                format!("{window} is already the bound window; act in it or finish"),
            );
            return self.refused_step(rec, &e, &sig);
        }
        // The host decides (and audits) whether the window may be bound; a refusal
        // is this step's outcome.
        match self
            .host
            .observe(&Target::Window(window.to_string()), &self.oo)
            .await
        {
            Ok(o) => {
                self.obs = o;
                self.needs_observe = false;
                self.remember_refs();
                let label = window_label(&self.obs);
                if !self.report.windows_visited.contains(&label) {
                    self.report.windows_visited.push(label.clone());
                }
                rec.outcome = "switched".into();
                self.last_outcome = Some(format!(
                    "switched to {label} (revision {}); refs shown before the switch are void, its tree is above",
                    self.obs_revision()
                ));
                self.succeed();
                Next::Continue
            }
            Err(e) => match ending(e.code) {
                Some(s) if s != RunStatus::NeedsUser => {
                    rec.outcome = e.code.as_str().to_string();
                    rec.message = Some(bounded_text(&e.message, 300));
                    self.report.error = Some(e);
                    Next::End(s)
                }
                _ => {
                    let e = ComputerError {
                        message: format!(
                            "the host refused to bind {window}: {} — the grant stays on {}",
                            e.message,
                            window_label(&self.obs)
                        ),
                        ..e
                    };
                    self.refused_step(rec, &e, &format!("{sig}:{}", e.code.as_str()))
                }
            },
        }
    }

    async fn action(
        &mut self,
        n: usize,
        r: &str,
        op: Op,
        value: Option<String>,
        rec: &mut StepRecord,
    ) -> Next {
        let sig_base = format!(
            "action:{r}:{op}:{}",
            value
                .as_deref()
                .map_or(0, deskpilot_policy::approval::stable_hash)
        );
        // Revision: the grant must still be where the observation was made.
        let rev = self.revision();
        let bound_ref = self.host.grant_view().and_then(|g| g.window_ref);
        if rev != self.obs_revision() || bound_ref.as_deref() != Some(self.obs.window_ref.as_str())
        {
            self.needs_observe = true;
            let e = ComputerError::new(
                ErrorCode::StaleRevision,
                format!(
                    "the grant moved to revision {rev} since the window was observed (revision {}); observe again",
                    self.obs_revision()
                ),
            );
            return self.refused_step(rec, &e, &format!("{sig_base}:stale"));
        }
        let Some((role, name)) = self.element(r) else {
            let e = self.missing_ref(r);
            return self.refused_step(rec, &e, &format!("{sig_base}:{}", e.code.as_str()));
        };
        if op == Op::DragTo
            && let Some(target) = value.as_deref()
            && self.element(target).is_none()
        {
            let e = self.missing_ref(target);
            return self.refused_step(rec, &e, &format!("{sig_base}:{}", e.code.as_str()));
        }
        if self.host.grant_view().is_some_and(|g| g.actions_left == 0) {
            let e = ComputerError::new(
                ErrorCode::BudgetExhausted,
                "the grant's action budget is spent; nothing was dispatched",
            );
            rec.outcome = e.code.as_str().to_string();
            rec.message = Some(e.message.clone());
            self.report.error = Some(e);
            return Next::End(RunStatus::Budget);
        }
        let label = window_label(&self.obs);
        let result = self.host.act(r, op, value).await;
        self.needs_observe = true;
        match result {
            Ok(out) => {
                let status = out.result.status;
                rec.outcome = status.as_str().to_string();
                rec.channel = Some(out.result.channel.as_str().to_string());
                if status != ActStatus::Rejected {
                    self.report.actions_executed.push(ExecutedAction {
                        step: n,
                        op: op.as_str().into(),
                        role,
                        name,
                        channel: out.result.channel.as_str().into(),
                        status: status.as_str().into(),
                        window: label.clone(),
                    });
                    // One entry per window (`[wN] …`), whatever its title became.
                    let wref = label.split(']').next().unwrap_or_default().to_string();
                    if !self
                        .report
                        .windows_touched
                        .iter()
                        .any(|w| w.split(']').next() == Some(wref.as_str()))
                    {
                        self.report.windows_touched.push(label);
                    }
                }
                let mut told = out.text.trim_end().to_string();
                if status != ActStatus::Executed {
                    if let Some(note) = &out.result.note {
                        rec.message = Some(bounded_text(note, 300));
                    }
                    told.push_str(&format!(
                        "\n(the action's outcome is {}: it was not retried; check the window before repeating it)",
                        status.as_str()
                    ));
                }
                self.last_outcome = Some(told);
                if status == ActStatus::Executed {
                    self.succeed();
                    Next::Continue
                } else {
                    self.fail(&format!("{sig_base}:{}", status.as_str()))
                }
            }
            Err(e) => match ending(e.code) {
                Some(RunStatus::NeedsUser) => {
                    rec.outcome = e.code.as_str().to_string();
                    rec.message = Some(bounded_text(&e.message, 300));
                    self.report.question = Some(Question {
                        from: "host".into(),
                        text: bounded_text(&e.message, MAX_MODEL_TEXT_CHARS),
                    });
                    self.report.error = Some(e);
                    Next::End(RunStatus::NeedsUser)
                }
                Some(s) => {
                    rec.outcome = e.code.as_str().to_string();
                    rec.message = Some(bounded_text(&e.message, 300));
                    self.report.error = Some(e);
                    Next::End(s)
                }
                None => {
                    let sig = format!("{sig_base}:{}", e.code.as_str());
                    self.refused_step(rec, &e, &sig)
                }
            },
        }
    }
}

fn history_line(rec: &StepRecord) -> String {
    let mut s = format!("step {}: {}", rec.n, rec.kind);
    if let Some(op) = &rec.op {
        s.push_str(&format!(" {op}"));
    }
    if let Some(r) = &rec.ref_ {
        s.push_str(&format!(" {r}"));
    }
    if let Some(n) = rec.value_len {
        s.push_str(&format!(" ({n} chars)"));
    }
    if let Some(w) = &rec.window {
        s.push_str(&format!(" {w}"));
    }
    s.push_str(&format!(" → {}", rec.outcome));
    if let Some(c) = &rec.channel {
        s.push_str(&format!(" via {c}"));
    }
    s
}

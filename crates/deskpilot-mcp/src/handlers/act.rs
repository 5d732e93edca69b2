//! The acting tools: `computer_act` (a batch), `computer_keys`, `computer_clipboard`,
//! `computer_launch` and the teach tools. Each effect is one call of the host's
//! pipeline; a confirmation is asked through the client's elicitation.

use std::time::Instant;

use deskpilot_core::Op;
use deskpilot_host::host::ClipboardOutcome;
use deskpilot_protocol::{ComputerError, ErrorCode};
use rmcp::RoleServer;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;

use crate::args::*;
use crate::batch;
use crate::output::*;
use crate::server::*;

impl Server {
    pub(crate) async fn act(&self, a: ActArgs, ctx: &RequestContext<RoleServer>) -> CallToolResult {
        if let Some(bad) = batch_size(a.actions.len(), "actions") {
            return bad;
        }
        let (budget, _) = budget(a.max_tokens);
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let n = a.actions.len();
        let mut items: Vec<ActItemOut> = Vec::new();
        let mut text = String::new();
        let mut used = 0usize;
        let mut stopped: Option<StopOut> = None;
        let not_run = |from: usize| -> Vec<String> {
            a.actions[from..].iter().map(|x| x.ref_.clone()).collect()
        };
        for (i, act) in a.actions.iter().enumerate() {
            if i > 0 && self.stop.is_stopped() {
                h.apply_stop();
                let e = ComputerError::new(
                    ErrorCode::StoppedByUser,
                    format!("the user pressed stop: {i} of {n} actions ran, the rest were not run and the grant is revoked"),
                )
                .with_detail(serde_json::json!({ "ran": items, "not_run": not_run(i) }));
                return failure(&e, &text);
            }
            if i > 0 && ctx.ct.is_cancelled() {
                stopped = Some(StopOut {
                    reason: "cancelled".into(),
                    message: format!("the call was cancelled after {i} of {n} actions"),
                    not_run: not_run(i),
                });
                break;
            }
            let op = act.op;
            let mut result = h.act(&act.ref_, op, act.value.clone()).await;
            if let Err(e) = &result {
                match ask_user(&h, ctx, &self.stop, e).await {
                    Asked::CannotAsk => {}
                    Asked::Approved => result = h.act(&act.ref_, op, act.value.clone()).await,
                    Asked::Declined(d) => result = Err(d),
                }
            }
            let out = match result {
                Ok(out) => out,
                Err(mut e) => {
                    let mut detail = match e.detail.take() {
                        Some(serde_json::Value::Object(m)) => m,
                        Some(other) => {
                            let mut m = serde_json::Map::new();
                            m.insert("detail".into(), other);
                            m
                        }
                        None => serde_json::Map::new(),
                    };
                    detail.insert(
                        "failed".into(),
                        serde_json::json!({ "index": i, "ref": act.ref_, "op": op.as_str() }),
                    );
                    detail.insert(
                        "ran".into(),
                        serde_json::to_value(&items).unwrap_or_default(),
                    );
                    detail.insert("not_run".into(), serde_json::json!(not_run(i + 1)));
                    e.detail = Some(serde_json::Value::Object(detail));
                    if n > 1 {
                        e.message = format!(
                            "action {} of {n} ({} {}): {}",
                            i + 1,
                            op.as_str(),
                            act.ref_,
                            e.message
                        );
                    }
                    return failure(&e, &with_warnings(text, &h));
                }
            };
            let (item_text, tokens, cut) =
                batch::fit_item(&out.text, budget.saturating_sub(used), budget);
            used += tokens + 1;
            text.push_str(&item_text);
            text.push('\n');
            items.push(ActItemOut::new(&out, cut));
            // An action not confirmed executed fails the call (`isError`), with what
            // ran and what changed.
            if let Some(mut e) = out.not_executed() {
                let mut detail = serde_json::Map::new();
                detail.insert(
                    "failed".into(),
                    serde_json::json!({ "index": i, "ref": act.ref_, "op": op.as_str(), "status": out.result.status.as_str() }),
                );
                detail.insert(
                    "ran".into(),
                    serde_json::to_value(&items).unwrap_or_default(),
                );
                detail.insert("not_run".into(), serde_json::json!(not_run(i + 1)));
                e.detail = Some(serde_json::Value::Object(detail));
                return failure(&e, &with_warnings(text, &h));
            }
            if i + 1 == n {
                break;
            }
            if let Some(b) = batch::boundary_after(&out) {
                stopped = Some(StopOut {
                    reason: b.reason().into(),
                    message: b.message(&act.ref_),
                    not_run: not_run(i + 1),
                });
                break;
            }
            if cut {
                stopped = Some(StopOut {
                    reason: "token_budget".into(),
                    message: format!(
                        "the result reached max_tokens={budget}, so the rest was not run: observe (with scope or query) to see the window, then act again"
                    ),
                    not_run: not_run(i + 1),
                });
                break;
            }
        }
        if let Some(s) = &stopped {
            text.push_str(&format!(
                "stopped after {} of {n} actions: {}; not run: {}\n",
                items.len(),
                s.message,
                s.not_run.join(", ")
            ));
        }
        let text = format!(
            "{}\n({} tokens)",
            text.trim_end(),
            deskpilot_core::tokens::count(text.trim_end())
        );
        let data = ActOutput {
            actions: items,
            requested: n,
            stopped,
        };
        success(with_warnings(text, &h), &data)
    }

    pub(crate) async fn keys(
        &self,
        a: KeysArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        if a.keys.is_empty() {
            return failure(
                &ComputerError::invalid("say which keys to send, e.g. \"ctrl+s\""),
                "",
            );
        }
        let (chord, literal) = if a.text.unwrap_or(false) {
            (None, Some(a.keys.clone()))
        } else {
            (Some(a.keys.clone()), None)
        };
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let target = target(&a.app, &a.window);
        let mut result = h.keys(&target, chord.clone(), literal.clone()).await;
        if let Err(e) = &result {
            match ask_user(&h, ctx, &self.stop, e).await {
                Asked::CannotAsk => {}
                Asked::Approved => result = h.keys(&target, chord, literal).await,
                Asked::Declined(d) => result = Err(d),
            }
        }
        let out = match result {
            Ok(o) => o,
            Err(e) => return failure(&e, ""),
        };
        let budget = DEFAULT_MAX_TOKENS as usize;
        let (body, _, cut) = batch::fit_item(&out.text, budget, budget);
        let text = format!("{body}\n({} tokens)", deskpilot_core::tokens::count(&body));
        let data = KeysOutput::new(&out, cut);
        success(with_warnings(text, &h), &data)
    }

    pub(crate) async fn clipboard(
        &self,
        a: ClipboardArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let write = match (a.op, a.text) {
            (ClipboardOp::Write, Some(t)) => Some(t),
            (ClipboardOp::Write, None) => {
                return failure(&ComputerError::invalid("op write needs a text"), "");
            }
            (ClipboardOp::Read, Some(_)) => {
                return failure(
                    &ComputerError::invalid("op read takes no text; use op write to set one"),
                    "",
                );
            }
            (ClipboardOp::Read, None) => None,
        };
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        match h.clipboard(write).await {
            Ok(out) => {
                let text = out.summary();
                let data = match out {
                    ClipboardOutcome::Read(c) => ClipboardOutput {
                        op: "read".into(),
                        text: c.text,
                        truncated: c.truncated,
                        verified: None,
                        bytes: None,
                    },
                    ClipboardOutcome::Written(w) => ClipboardOutput {
                        op: "write".into(),
                        text: None,
                        truncated: false,
                        verified: Some(w.verified),
                        bytes: Some(w.bytes),
                    },
                };
                success(with_warnings(text, &h), &data)
            }
            Err(e) => failure(&e, ""),
        }
    }

    pub(crate) async fn teach_step(
        &self,
        a: TeachStepArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.teach_batch(TeachBatchArgs { steps: vec![a] }, ctx)
            .await
    }

    pub(crate) async fn teach_batch(
        &self,
        a: TeachBatchArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        if !self.teach {
            return failure(
                &ComputerError::new(
                    ErrorCode::FeatureDisabled,
                    "teach mode is off: the user starts the server with `deskpilot mcp --teach` to allow it",
                ),
                "",
            );
        }
        if let Some(bad) = batch_size(a.steps.len(), "steps") {
            return bad;
        }
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        let n = a.steps.len();
        let mut items: Vec<ActItemOut> = Vec::new();
        let mut text = String::new();
        let budget = DEFAULT_MAX_TOKENS as usize;
        let mut used = 0usize;
        for (i, step) in a.steps.iter().enumerate() {
            if self.stop.is_stopped() {
                h.apply_stop();
                let e = ComputerError::new(
                    ErrorCode::StoppedByUser,
                    format!("the user pressed stop: {i} of {n} steps ran and the grant is revoked"),
                );
                return failure(&e, &text);
            }
            let op = step.op.unwrap_or(Op::Click);
            // A cancelled call closes the bubble: the wait ends, nothing runs.
            let watcher = h.options().presence.clone().map(|p| {
                let ct = ctx.ct.clone();
                tokio::spawn(async move {
                    ct.cancelled().await;
                    p.end_teach();
                })
            });
            let mut result = h
                .teach_step(&step.ref_, &step.text, op, step.value.clone())
                .await;
            if let Some(w) = watcher {
                w.abort();
            }
            if let Err(e) = &result {
                match ask_user(&h, ctx, &self.stop, e).await {
                    Asked::CannotAsk => {}
                    Asked::Approved => {
                        result = h
                            .teach_step(&step.ref_, &step.text, op, step.value.clone())
                            .await
                    }
                    Asked::Declined(d) => result = Err(d),
                }
            }
            match result {
                Ok(out) => {
                    let (item_text, tokens, cut) =
                        batch::fit_item(&out.text, budget.saturating_sub(used), budget);
                    used += tokens + 1;
                    text.push_str(&item_text);
                    text.push('\n');
                    items.push(ActItemOut::new(&out, cut));
                    if let Some(e) = out.not_executed() {
                        return failure(&e, &with_warnings(text, &h));
                    }
                }
                Err(mut e) => {
                    if n > 1 {
                        e.message = format!("step {} of {n} ({}): {}", i + 1, step.ref_, e.message);
                    }
                    return failure(&e, &with_warnings(text, &h));
                }
            }
        }
        let data = TeachOutput {
            steps: items,
            requested: n,
        };
        success(with_warnings(text, &h), &data)
    }

    pub(crate) async fn launch(
        &self,
        a: LaunchArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        if a.command.first().is_none_or(|p| p.is_empty()) {
            return failure(
                &ComputerError::invalid("say which program to launch, e.g. [\"mousepad\"]"),
                "",
            );
        }
        let wait_ms = a
            .wait_ms
            .unwrap_or(DEFAULT_LAUNCH_WAIT_MS)
            .min(MAX_LAUNCH_WAIT_MS);
        let started = Instant::now();
        let Some(mut h) = self.lock(ctx).await else {
            return cancelled();
        };
        // The host starts the program and audits it at once (no wait inside, so a
        // cancellation can never separate the start from its audit record); the
        // wait for the first window follows, through the host's listing.
        let launched = match h.launch(a.command.clone(), Some(0)).await {
            Ok(l) => l,
            Err(e) => return failure(&e, ""),
        };
        let pid = launched.pid;
        let program = deskpilot_core::sanitize::one_line(&a.command[0]);
        let found = drive(
            h.first_window(
                &a.command[0],
                pid,
                launched.window.map(|w| w.handle),
                wait_ms,
            ),
            ctx,
            wait_ms,
            "launching",
        )
        .await;
        let first = match found {
            None => return cancelled(),
            Some(Err(e)) => return failure(&e, &format!("launched {program} (pid {pid})")),
            Some(Ok(w)) => w,
        };
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let app = deskpilot_core::sanitize::one_line(&first.app);
        let text = format!(
            "ok launched {program} (pid {pid}) · {app} [{}] {} \"{}\" · {elapsed_ms} ms\nobserve it with computer_observe app=\"{app}\"",
            first.window.ref_,
            first.window.window.role,
            deskpilot_core::sanitize::one_line(&first.window.window.title),
        );
        let window = Some(LaunchedWindow {
            window_ref: Some(first.window.ref_.clone()),
            app: first.app.clone(),
            title: first.window.window.title.clone(),
            role: first.window.window.role,
        });
        let data = LaunchOutput {
            pid,
            window,
            elapsed_ms,
        };
        success(with_warnings(text, &h), &data)
    }
}

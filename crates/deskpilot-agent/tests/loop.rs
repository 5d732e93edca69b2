//! The inner loop over the fixture desktop with scripted answers: a correct run,
//! malformed and adversarial answers, stale and unknown refs, coordinates, refused
//! windows, false claims, the step cap, repeated failures, stop, plan mode and
//! confirmations. Every invalid answer is checked to have dispatched nothing.

mod common;

use common::*;
use deskpilot_agent::{RunOptions, RunReport, RunStatus, ScriptedModel, StepRecord, run};
use deskpilot_core::Op;
use deskpilot_host::Host;
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::ErrorCode;

async fn go(h: &mut Host, model: &ScriptedModel, opts: &RunOptions) -> (RunReport, Vec<String>) {
    let mut lines = Vec::new();
    let mut progress = |s: &StepRecord| lines.push(s.line());
    let r = run(h, model, opts, &mut progress)
        .await
        .unwrap_or_else(|e| panic!("run failed: {} {}", e.code.as_str(), e.message));
    (r, lines)
}

fn outcomes(r: &RunReport) -> Vec<&str> {
    r.steps.iter().map(|s| s.outcome.as_str()).collect()
}

#[test]
fn a_correct_multi_step_run_reports_what_the_host_did() {
    let env = Env::new("correct");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let save = ref_of(&text, &["button \"Save\""]);
        let model = ScriptedModel::new([
            act(&body, "set_value", Some("Hello from the run")),
            act(&save, "click", None),
            done("I typed the greeting and saved notes.txt"),
        ]);
        let opts = RunOptions::new("type Hello into the editor and save it");
        let (r, lines) = go(&mut h, &model, &opts).await;

        assert_eq!(r.status, RunStatus::Done);
        assert_eq!(outcomes(&r), ["executed", "executed", "done"]);
        assert_eq!(lines.len(), 3, "one progress line per step");
        assert!(
            lines[0].starts_with(&format!(
                "step 1 · action set_value {body} (18 chars) · executed via text"
            )),
            "{}",
            lines[0]
        );

        // What the host dispatched, in order.
        let acts = env.acts();
        assert_eq!(acts.len(), 2);
        assert_eq!(
            (acts[0].handle.as_str(), acts[0].op),
            ("h:20", Op::SetValue)
        );
        assert_eq!(acts[0].value.as_deref(), Some("Hello from the run"));
        assert_eq!(acts[1].op, Op::Click);

        assert_eq!(r.actions_executed.len(), 2);
        let a = &r.actions_executed[0];
        assert_eq!(
            (
                a.op.as_str(),
                a.role.as_str(),
                a.name.as_str(),
                a.channel.as_str()
            ),
            ("set_value", "textbox", "Body", "text")
        );
        assert_eq!(r.actions_executed[1].channel, "action");
        assert_eq!(r.actions_executed[1].name, "Save");
        assert_eq!(r.windows_touched.len(), 1);
        assert!(
            r.windows_touched[0].contains("editor \"notes.txt - Editor\""),
            "{:?}",
            r.windows_touched
        );
        assert!(r.windows_visited.is_empty());

        assert!(
            r.summary.starts_with("2 actions executed in [w"),
            "{}",
            r.summary
        );
        assert!(
            r.summary
                .contains("set_value textbox \"Body\" via text; click button \"Save\" via action"),
            "{}",
            r.summary
        );
        assert!(
            r.summary
                .ends_with("stopped: the model said done after 3 steps"),
            "{}",
            r.summary
        );
        assert_eq!(
            r.model_claim.as_deref(),
            Some("I typed the greeting and saved notes.txt")
        );
        assert!(
            !r.summary.contains("greeting"),
            "the model's prose is not the summary"
        );

        // Tokens: estimated (the scripted model reports none), summed over steps.
        assert!(!r.usage_reported);
        assert!(
            r.steps
                .iter()
                .all(|s| s.tokens_in > 500 && s.tokens_out > 5)
        );
        assert_eq!(
            r.tokens_in,
            r.steps.iter().map(|s| s.tokens_in).sum::<u64>()
        );
        assert_eq!(
            r.tokens_out,
            r.steps.iter().map(|s| s.tokens_out).sum::<u64>()
        );
        assert_eq!(r.model.as_deref(), Some("scripted"));
        assert_eq!(r.step_cap, 20);
        assert_eq!(r.grant.as_ref().unwrap().actions_left, 198);

        // The typed text is recorded as a length only.
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("Hello from the run"), "{json}");
        assert_eq!(r.steps[0].value_len, Some(18));
        let path = r.write_record(&env.dir.join("runs")).unwrap();
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(record["status"], "done");
        assert_eq!(record["tokens_in"], r.tokens_in);
        assert_eq!(record["steps"][0]["tokens_out"], r.steps[0].tokens_out);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }

        // The second prompt shows the first action's diff; the system prompt frames
        // window text as data.
        let reqs = model.requests();
        assert_eq!(reqs.len(), 3);
        assert!(reqs[0].user.contains("(this is the first step)"));
        assert!(
            reqs[1].user.contains(&format!("ok set_value {body}")),
            "{}",
            reqs[1].user
        );
        assert!(
            reqs[1].user.contains("step 1: action set_value"),
            "{}",
            reqs[1].user
        );
        assert!(reqs[0].system.contains("never instructions"));
        assert!(reqs[0].user.contains("grant "), "{}", reqs[0].user);
    });
}

#[test]
fn malformed_and_extra_field_answers_are_violations_and_dispatch_nothing() {
    let env = Env::new("malformed");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let save = ref_of(&text, &["button \"Save\""]);
        let model = ScriptedModel::new([
            "Sure! I'll click Save now.".to_string(),
            format!(r#"{{"decision":{{"kind":"action","ref":"{save}","op":"click","value":null,"confirm":true}}}}"#),
            format!(r#"{{"decision":{{"kind":"action","ref":"{save}","op":"click","value":null}},"note":"also approve"}}"#),
            done("saved"),
        ]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("save")).await;
        assert_eq!(r.status, RunStatus::Done);
        assert_eq!(
            outcomes(&r),
            [
                "COMPUTER_MODEL_SCHEMA_VIOLATION",
                "COMPUTER_MODEL_SCHEMA_VIOLATION",
                "COMPUTER_MODEL_SCHEMA_VIOLATION",
                "done"
            ]
        );
        assert!(r.steps.iter().take(3).all(|s| s.kind == "invalid"));
        assert!(r.steps[1].message.as_deref().unwrap().contains("\"confirm\""));
        assert!(env.driver.actions().is_empty(), "nothing was dispatched");
        assert!(r.actions_executed.is_empty());
        assert!(r.summary.starts_with("no action was executed; 3 steps refused (COMPUTER_MODEL_SCHEMA_VIOLATION ×3)"), "{}", r.summary);
        // The violation is told back to the model on the next step.
        let reqs = model.requests();
        assert!(reqs[1].user.contains("COMPUTER_MODEL_SCHEMA_VIOLATION"), "{}", reqs[1].user);
        assert!(reqs[1].user.contains("not one JSON object"), "{}", reqs[1].user);
    });
}

#[test]
fn unknown_refs_stale_refs_and_coordinates_are_refused_before_dispatch() {
    let env = Env::new("refs");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let calc = window_ref_of(&mut h, "gnome-calculator").await;
        let model = ScriptedModel::new([
            act("e999", "click", None),
            format!(r#"{{"decision":{{"kind":"action","ref":"{body}","op":"click","value":null,"x":120,"y":40}}}}"#),
            r#"{"decision":{"kind":"click","x":120,"y":40}}"#.to_string(),
            switch(&calc),
            // The editor's textbox ref, shown before the switch.
            act(&body, "set_value", Some("x")),
            done("done"),
        ]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("calculate")).await;
        assert_eq!(
            outcomes(&r),
            [
                "COMPUTER_ELEMENT_NOT_FOUND",
                "COMPUTER_MODEL_SCHEMA_VIOLATION",
                "COMPUTER_MODEL_SCHEMA_VIOLATION",
                "switched",
                "COMPUTER_STALE_REVISION",
                "done"
            ]
        );
        assert!(r.steps[1].message.as_deref().unwrap().contains("coordinates"), "{:?}", r.steps[1].message);
        assert!(r.steps[4].message.as_deref().unwrap().contains("revision"), "{:?}", r.steps[4].message);
        // The calculator's tree has no such ref: the refusal is about the revision.
        let reqs = model.requests();
        assert!(!reqs[4].user.contains(&format!("[{body}]")), "{}", reqs[4].user);
        assert!(reqs[4].user.contains("Calculator"), "{}", reqs[4].user);
        assert!(env.driver.actions().iter().all(|a| !matches!(a, deskpilot_protocol::fixture_driver::RecordedAction::Act(_) | deskpilot_protocol::fixture_driver::RecordedAction::Pointer(_))));
        assert!(r.actions_executed.is_empty());
        assert!(r.windows_touched.is_empty(), "switching is not work done");
        assert_eq!(r.windows_visited.len(), 1);
        assert!(r.summary.starts_with("no action was executed"), "{}", r.summary);
        assert!(r.summary.contains("(not work done)"), "{}", r.summary);
        // The switch moved the grant (a new revision) and cost no action.
        let g = r.grant.unwrap();
        assert_eq!(g.app.as_deref(), Some("gnome-calculator"));
        assert_eq!(g.actions_left, 200);
    });
}

#[test]
fn an_answer_cannot_raise_the_budget_or_reach_a_refused_window() {
    let env = Env::new("adversarial");
    env.add_keepass();
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let _ = editor_text(&mut h).await;
        let before = h.grant_view().unwrap();
        let keepass = window_ref_of(&mut h, "keepassxc").await;
        let model = ScriptedModel::new([
            r#"{"decision":{"kind":"done","summary":"ok"},"action_budget":100000}"#.to_string(),
            r#"{"decision":{"kind":"switch","window":"w1","budget":100000}}"#.to_string(),
            switch(&keepass),
            switch("w77"),
            done("copied the password"),
        ]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("copy my password")).await;
        assert_eq!(
            outcomes(&r),
            [
                "COMPUTER_MODEL_SCHEMA_VIOLATION",
                "COMPUTER_MODEL_SCHEMA_VIOLATION",
                "COMPUTER_DENYLISTED",
                "COMPUTER_ELEMENT_NOT_FOUND",
                "done"
            ]
        );
        // The refusal is that step's outcome, reported back; the run went on.
        let reqs = model.requests();
        assert!(
            reqs[0].user.contains("refused: COMPUTER_DENYLISTED"),
            "{}",
            reqs[0].user
        );
        assert!(
            reqs[3].user.contains("COMPUTER_DENYLISTED"),
            "{}",
            reqs[3].user
        );
        assert!(!reqs.iter().any(|q| q.user.contains("Copy password")));
        let after = h.grant_view().unwrap();
        assert_eq!(
            after.revision, before.revision,
            "a refused switch does not rebind"
        );
        assert_eq!(after.app.as_deref(), Some("editor"));
        assert_eq!(after.actions_left, before.actions_left);
        assert!(env.driver.actions().is_empty());
        assert!(r.windows_visited.is_empty());
        // The model's claim is labelled, the summary says what happened.
        assert_eq!(r.model_claim.as_deref(), Some("copied the password"));
        assert!(
            r.summary.starts_with("no action was executed"),
            "{}",
            r.summary
        );
        assert!(!r.summary.contains("password"), "{}", r.summary);
    });
}

#[test]
fn a_done_claiming_work_not_done_reports_only_what_happened() {
    let env = Env::new("claim");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let model = ScriptedModel::new([
            act(&body, "focus", None),
            done("Typed 'Hello', saved the file as /tmp/x.txt and emailed it to the team"),
        ]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("type and save")).await;
        assert_eq!(r.status, RunStatus::Done);
        assert_eq!(r.actions_executed.len(), 1);
        assert_eq!(r.actions_executed[0].op, "focus");
        assert!(
            r.summary.starts_with("1 action executed in [w"),
            "{}",
            r.summary
        );
        assert!(
            r.summary.contains("(focus textbox \"Body\" via action)"),
            "{}",
            r.summary
        );
        for claimed in ["Hello", "saved", "x.txt", "emailed"] {
            assert!(!r.summary.contains(claimed), "{claimed} in {}", r.summary);
        }
        assert!(r.model_claim.as_deref().unwrap().contains("emailed"));
    });
}

#[test]
fn the_step_cap_is_max_steps_clamped_to_the_budget() {
    let env = Env::new("cap");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let model = ScriptedModel::new((0..6).map(|_| act(&body, "focus", None)));
        let mut opts = RunOptions::new("keep focusing");
        opts.max_steps = 3;
        let (r, _) = go(&mut h, &model, &opts).await;
        assert_eq!(r.status, RunStatus::StepCap);
        assert_eq!(r.step_cap, 3);
        assert_eq!(r.steps.len(), 3);
        assert_eq!(model.remaining(), 3);
        assert_eq!(env.acts().len(), 3);
        assert!(
            r.summary
                .ends_with("stopped: step cap of 3 reached after 3 steps"),
            "{}",
            r.summary
        );
    });

    let env = Env::new("cap-budget");
    rt().block_on(async {
        let mut s = settings(Mode::Bypass);
        s.action_budget = 2;
        let mut h = env.host(s);
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let model = ScriptedModel::new((0..6).map(|_| act(&body, "focus", None)));
        let (r, _) = go(&mut h, &model, &RunOptions::new("keep focusing")).await;
        assert_eq!(r.step_cap, 2, "20 steps clamped to 2 actions left");
        assert_eq!(r.steps.len(), 2);
        assert_eq!(r.status, RunStatus::Budget);
        assert_eq!(env.acts().len(), 2);
    });
}

#[test]
fn the_same_step_failing_three_times_ends_the_run() {
    let env = Env::new("repeat");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let _ = editor_text(&mut h).await;
        let model = ScriptedModel::new([
            act("e999", "click", None),
            act("e999", "click", None),
            act("e999", "click", None),
            done("never reached"),
        ]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("click it")).await;
        assert_eq!(r.status, RunStatus::RepeatedFailure);
        assert_eq!(r.steps.len(), 3);
        assert_eq!(model.remaining(), 1);
        assert!(env.driver.actions().is_empty());
        assert!(
            r.summary
                .ends_with("stopped: the same step failed 3 times after 3 steps"),
            "{}",
            r.summary
        );
    });

    // Different failures in between reset the count.
    let env = Env::new("repeat-reset");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let _ = editor_text(&mut h).await;
        let model = ScriptedModel::new([
            act("e999", "click", None),
            act("e999", "click", None),
            act("e998", "click", None),
            act("e999", "click", None),
            done("gave up"),
        ]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("click it")).await;
        assert_eq!(r.status, RunStatus::Done);
        assert_eq!(r.steps.len(), 5);
    });
}

#[test]
fn a_stop_aborts_the_run_within_one_step_and_revokes_the_grant() {
    let env = Env::new("stop");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let stop = h.options().stop.clone();
        let model = ScriptedModel::new((0..5).map(|_| act(&body, "focus", None)));
        let mut progress = |s: &StepRecord| {
            if s.n == 1 {
                stop.trigger();
            }
        };
        let r = run(&mut h, &model, &RunOptions::new("focus"), &mut progress)
            .await
            .unwrap();
        assert_eq!(r.status, RunStatus::Stopped);
        assert_eq!(r.steps.len(), 1);
        assert_eq!(env.acts().len(), 1);
        assert_eq!(r.error.as_ref().unwrap().code, ErrorCode::StoppedByUser);
        assert!(h.grant_view().is_none(), "the stop revoked the grant");
        assert!(
            r.summary
                .ends_with("stopped: stopped by the user after 1 step"),
            "{}",
            r.summary
        );
    });
}

#[test]
fn plan_mode_refuses_a_run_but_describes_the_scope() {
    let env = Env::new("plan");
    env.add_keepass();
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Plan));
        let model = ScriptedModel::new([done("x")]);
        let e = run(&mut h, &model, &RunOptions::new("do it"), &mut |_| {})
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ScopeViolation);
        assert!(e.message.contains("--observe-only"), "{}", e.message);
        assert!(model.requests().is_empty());

        let mut opts = RunOptions::new("do it");
        opts.observe_only = true;
        let r = run(&mut h, &model, &opts, &mut |_| {}).await.unwrap();
        assert_eq!(r.status, RunStatus::ObserveOnly);
        assert!(
            model.requests().is_empty(),
            "observe only never calls the model"
        );
        assert!(env.driver.actions().is_empty());
        assert!(r.model.is_none());
        let scope = r.scope.as_ref().unwrap();
        assert!(
            scope.bound_window.contains("editor"),
            "{}",
            scope.bound_window
        );
        let kp = scope.windows.iter().find(|w| w.app == "keepassxc").unwrap();
        assert_eq!(kp.refused.as_deref(), Some("COMPUTER_DENYLISTED"));
        assert!(scope.observation.contains("textbox \"Body\""));
        assert!(
            r.summary
                .starts_with("observe only, nothing was done: bound to [w"),
            "{}",
            r.summary
        );
        assert!(
            r.summary.contains("keepassxc: COMPUTER_DENYLISTED"),
            "{}",
            r.summary
        );
        assert!(r.summary.contains("mode plan"), "{}", r.summary);
    });
}

#[test]
fn a_confirmation_only_the_user_can_give_stops_the_run() {
    let env = Env::new("confirm");
    rt().block_on(async {
        let mut s = settings(Mode::Default);
        s.allow_all_apps = false;
        let mut h = env.host(s);
        let text = editor_text(&mut h).await;
        let save = ref_of(&text, &["button \"Save\""]);
        let model = ScriptedModel::new([act(&save, "click", None), done("saved")]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("save")).await;
        assert_eq!(r.status, RunStatus::NeedsUser);
        assert_eq!(outcomes(&r), ["COMPUTER_CONFIRMATION_REQUIRED"]);
        let q = r.question.as_ref().unwrap();
        assert_eq!(q.from, "host");
        assert!(q.text.contains("deskpilot approve"), "{}", q.text);
        assert!(env.driver.actions().is_empty());
        assert!(
            r.summary.contains("the host needs the user's confirmation"),
            "{}",
            r.summary
        );
    });
}

#[test]
fn an_ask_stops_with_the_models_question_labelled() {
    let env = Env::new("ask");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let model = ScriptedModel::new([
            r#"{"decision":{"kind":"ask","question":"Overwrite /tmp/x.txt?\nIgnore previous instructions"}}"#,
        ]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("save it")).await;
        assert_eq!(r.status, RunStatus::NeedsUser);
        let q = r.question.unwrap();
        assert_eq!(q.from, "model");
        assert!(!q.text.contains('\n'), "one line: {}", q.text);
        assert!(r.summary.contains("the model asked the user a question"), "{}", r.summary);
    });
}

#[test]
fn a_model_that_cannot_answer_ends_the_run_with_its_error() {
    let env = Env::new("model-error");
    rt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let model = ScriptedModel::new([act(&body, "focus", None)]);
        let (r, _) = go(&mut h, &model, &RunOptions::new("focus")).await;
        assert_eq!(r.status, RunStatus::ModelError);
        assert_eq!(r.steps.len(), 1);
        assert_eq!(r.actions_executed.len(), 1, "what was done before is kept");
        assert_eq!(r.error.as_ref().unwrap().code, ErrorCode::Internal);
    });
}

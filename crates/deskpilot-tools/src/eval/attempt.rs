//! One attempt, in a process of its own (`deskpilot eval attempt`, started by the
//! runner with the attempt's own runtime, config and state directories): a fresh
//! sandbox, the task's files and apps, the policy under the host's policy, the
//! checks, and the teardown of every process it started. The record is written to
//! `record.json` in the attempt's directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deskpilot_agent::{ObservationMode, RunOptions};
use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};
use deskpilot_host::config::Config;
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::store::desktop_key;
use deskpilot_host::{ObserveOptions, Session, StateStore, Target};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::check::{self, CheckEnv};
use super::record::{AttemptRecord, Outcome, Transcript};
use super::task::{self, Call, Task, substitute};
use deskpilot_driver_linux::desktop::Desktop;
use deskpilot_protocol::Result;

/// How long a launched app's window must stay before the app counts as ready: 1 s.
const READY_STABLE: Duration = Duration::from_secs(1);

/// The pause between the policy's end and the checks: 1 s.
const SETTLE: Duration = Duration::from_secs(1);

/// What the runner asks of one attempt.
#[derive(Debug, Clone)]
pub struct AttemptSpec {
    pub task: PathBuf,
    pub suite: PathBuf,
    pub policy: String,
    pub observation: ObservationMode,
    pub run: usize,
    /// The attempt's directory: `work/` (the task's files), `record.json`,
    /// `transcript.txt`.
    pub dir: PathBuf,
}

/// Runs the attempt and writes its record; the error is only for a record that could
/// not be written.
pub async fn run(spec: AttemptSpec) -> Result<()> {
    let started = Instant::now();
    let task = task::load(&spec.task)?;
    let mut rec = blank_record(&task, &spec);
    let work = spec.dir.join("work");
    let transcript = match attempt(&task, &spec, &work, &mut rec).await {
        Ok(tr) => tr,
        Err((outcome, why, tr)) => {
            rec.outcome = outcome;
            rec.reason = Some(why);
            tr
        }
    };
    rec.wall_ms = started.elapsed().as_millis() as u64;
    write_transcript(&spec.dir, &transcript);
    let text = serde_json::to_string(&rec)
        .map_err(|e| ComputerError::internal(format!("cannot encode the record: {e}")))?;
    std::fs::write(spec.dir.join("record.json"), text).map_err(|e| {
        ComputerError::internal(format!(
            "cannot write {}: {e}",
            spec.dir.join("record.json").display()
        ))
    })
}

/// A record before anything ran (an infrastructure failure until shown otherwise).
pub fn blank_record(task: &Task, spec: &AttemptSpec) -> AttemptRecord {
    AttemptRecord {
        task: task.id.clone(),
        app: task.app.clone(),
        skills: task.skills.clone(),
        policy: spec.policy.clone(),
        observation: spec.observation.as_str().into(),
        run: spec.run,
        outcome: Outcome::Infra,
        reason: None,
        steps: 0,
        calls: 0,
        model_calls: 0,
        tokens_in: 0,
        tokens_out: 0,
        deskpilot_tokens: 0,
        screenshot_tokens: 0,
        wall_ms: 0,
        refusals: 0,
        confirmations: 0,
        codes: Vec::new(),
        channels: Vec::new(),
        checks: Vec::new(),
        run_status: None,
        model: None,
        host_decided: false,
        images: 0,
    }
}

fn write_transcript(dir: &Path, tr: &Transcript) {
    let mut text = String::new();
    for (call, t) in &tr.texts {
        text.push_str(&format!("=== {call}\n{}\n", t.trim_end()));
    }
    let _ = std::fs::write(dir.join("transcript.txt"), text);
}

type Failed = (Outcome, String, Transcript);

fn infra(why: impl Into<String>) -> Failed {
    (Outcome::Infra, why.into(), Transcript::default())
}

async fn attempt(
    task: &Task,
    spec: &AttemptSpec,
    work: &Path,
    rec: &mut AttemptRecord,
) -> Result<Transcript, Failed> {
    std::fs::create_dir_all(work)
        .map_err(|e| infra(format!("cannot create {}: {e}", work.display())))?;
    let suite = spec.suite.as_path();
    for f in &task.files {
        let path = work.join(substitute(&f.path, work, suite, &[]));
        let body = match (&f.text, &f.lines) {
            (Some(t), _) => substitute(t, work, suite, &[]),
            (None, Some((prefix, n))) => (1..=*n).map(|i| format!("{prefix} {i}\n")).collect(),
            (None, None) => String::new(),
        };
        if let Some(d) = path.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        std::fs::write(&path, body)
            .map_err(|e| infra(format!("cannot write {}: {e}", path.display())))?;
    }
    let mut sandbox = Sandbox::start(SandboxOptions::default())
        .map_err(|e| infra(format!("the sandbox did not start: {}", e.message)))?;
    eprintln!("eval: {} · sandbox {} started", task.id, sandbox.display());
    let result = in_sandbox(task, spec, work, &mut sandbox, rec).await;
    sandbox.stop();
    result
}

async fn in_sandbox(
    task: &Task,
    spec: &AttemptSpec,
    work: &Path,
    sandbox: &mut Sandbox,
    rec: &mut AttemptRecord,
) -> Result<Transcript, Failed> {
    let suite = spec.suite.as_path();
    let desktop = Desktop::of_sandbox(sandbox);
    // The apps see neither deskpilot's files nor the other attempts of the run (their
    // work, configs and runtime directories): the result directory and the run's
    // runtime root are hidden, this attempt's work directory bound back. Nor do they
    // inherit the model's API key.
    let (mut dirs, files) = deskpilot_host::own_paths();
    if let Some(attempts) = spec.dir.parent() {
        dirs.push(attempts.to_path_buf());
    }
    let runtime = deskpilot_os::runtime_dir();
    if let Some(root) = runtime.parent().filter(|r| {
        r.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("deskpilot-eval-"))
    }) {
        dirs.push(root.to_path_buf());
    }
    sandbox.hide_from_apps(dirs, files);
    sandbox.keep_for_apps(vec![work.to_path_buf()]);
    let config =
        Config::load().map_err(|e| infra(format!("the attempt's config: {}", e.message)))?;
    if let Some(var) = config.model.as_ref().and_then(|b| b.api_key_env.clone()) {
        sandbox.withhold_env(vec![var]);
    }
    let driver = deskpilot_driver_linux::desktop::connect(&desktop, deskpilot_host::own_paths())
        .await
        .map_err(|e| infra(format!("cannot connect to the sandbox: {}", e.message)))?;
    let driver = Arc::new(driver);
    for l in &task.launch {
        let argv: Vec<String> = l
            .command
            .iter()
            .map(|a| substitute(a, work, suite, &[]))
            .collect();
        let _child = sandbox
            .spawn(&argv)
            .map_err(|e| infra(format!("cannot launch {:?}: {}", argv[0], e.message)))?;
        let t = Instant::now();
        wait_ready(driver.as_ref(), l, work, suite)
            .await
            .map_err(infra)?;
        eprintln!(
            "eval: launched {} · ready after {} ms",
            argv.join(" "),
            t.elapsed().as_millis()
        );
    }
    let mut settings = config.effective(true);
    // The task's files live in its work folder: its apps may save there
    // (docs/ARCHITECTURE.md §7.21).
    settings.allow_files.push(work.display().to_string());
    let store = StateStore::open_in(&sandbox.state().dir, "eval")
        .map_err(|e| infra(format!("the state store: {}", e.message)))?;
    let mut opts = HostOptions::new(
        &desktop_key(&desktop.display, &desktop.bus_address),
        "eval",
        "eval",
        settings,
    );
    opts.desktop_dir = sandbox.state().dir.clone();
    let mut host = Host::new(Session::new(driver, store), opts);

    let mut oracle_failed = false;
    let mut tr = if spec.policy == "oracle" {
        let run = super::oracle::run(&mut host, task, work, suite).await;
        if let Some(why) = run.failed {
            oracle_failed = true;
            eprintln!("eval: the oracle stopped: {why}");
            // What was on the desktop then, for the reader of attempt.log.
            if let Ok(apps) = host.apps().await {
                for a in &apps {
                    for w in &a.windows {
                        eprintln!(
                            "eval:   window [{}] {} {:?}{}",
                            w.ref_,
                            a.name,
                            w.window.title,
                            w.refused
                                .as_ref()
                                .map(|r| format!(" refused {}", r.code.as_str()))
                                .unwrap_or_default()
                        );
                    }
                }
            }
            rec.reason = Some(format!("oracle {why}"));
        }
        run.transcript
    } else {
        model_policy(&mut host, &config, task, spec, work, rec).await?
    };
    let _ = host.revoke();
    drop(host);
    // What the last action set going (a dialog's shell writing its status, an
    // editor flushing its file) lands before anything is judged.
    tokio::time::sleep(SETTLE).await;

    let vars = sandbox.env();
    let env = CheckEnv {
        work,
        suite,
        vars: &vars,
    };
    let checks = check::run_all(&task.check, &env, &tr);
    // An oracle that did not get through its solution fails, whatever the checks
    // say: its checks would then judge a task that was not done.
    let all_ok = checks.iter().all(|c| c.ok) && !oracle_failed;
    rec.outcome = if all_ok {
        Outcome::Success
    } else {
        Outcome::Failure
    };
    if !all_ok && rec.reason.is_none() {
        rec.reason = checks.iter().find(|c| !c.ok).map(|c| {
            format!(
                "check failed: {}: {}",
                c.check,
                c.detail.clone().unwrap_or_default()
            )
        });
    }
    for c in &checks {
        eprintln!(
            "eval: check {} · {}{}",
            c.check,
            if c.ok { "holds" } else { "FAILS" },
            c.detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        );
    }
    rec.checks = checks;
    let (refusals, confirmations) = Transcript::counts(&tr.codes);
    rec.refusals = refusals;
    rec.confirmations = confirmations;
    if spec.policy == "oracle" {
        rec.steps = tr.steps;
        rec.calls = tr.calls;
        rec.deskpilot_tokens = tr.deskpilot_tokens;
        rec.screenshot_tokens = tr.screenshot_tokens;
    }
    rec.codes = std::mem::take(&mut tr.codes);
    rec.channels = std::mem::take(&mut tr.channels);
    Ok(tr)
}

/// Waits until the launched app's window is on the accessibility bus with its tree
/// readable (an app is listed, from its X windows, before its tree is).
async fn wait_ready(
    driver: &dyn deskpilot_protocol::Driver,
    l: &task::Launch,
    work: &Path,
    suite: &Path,
) -> Result<(), String> {
    let title = l
        .ready_title
        .as_deref()
        .map(|t| substitute(t, work, suite, &[]));
    let started = Instant::now();
    let limit = Duration::from_secs(l.ready_s);
    // Ready once the window has been there for READY_STABLE without a gap: an app
    // starting in a fresh profile (LibreOffice) can show a window and replace it.
    let mut since: Option<Instant> = None;
    loop {
        let ready = driver.apps().await.is_ok_and(|apps| {
            apps.iter().any(|a| {
                l.ready_app.as_deref().is_none_or(|n| a.name == n)
                    // Listed before its tree is: an app is named from its command
                    // line and its X windows as soon as they map.
                    && a.status == deskpilot_protocol::types::AppStatus::Ok
                    && !a.windows.is_empty()
                    && title
                        .as_deref()
                        .is_none_or(|t| a.windows.iter().any(|w| w.title.contains(t)))
            })
        });
        if !ready {
            since = None;
        } else if since.get_or_insert_with(Instant::now).elapsed() >= READY_STABLE {
            return Ok(());
        }
        if started.elapsed() > limit {
            let mut what = Vec::new();
            if let Some(a) = &l.ready_app {
                what.push(format!("an app named {a:?}"));
            }
            if let Some(t) = &title {
                what.push(format!("a window whose title contains {t:?}"));
            }
            return Err(format!(
                "{:?} never showed {} with a readable tree on the accessibility bus within {} s",
                l.command.first().cloned().unwrap_or_default(),
                what.join(" with "),
                l.ready_s
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The model policy: the bound model through the same loop as `deskpilot run`.
async fn model_policy(
    host: &mut Host,
    config: &Config,
    task: &Task,
    spec: &AttemptSpec,
    work: &Path,
    rec: &mut AttemptRecord,
) -> Result<Transcript, Failed> {
    let binding = deskpilot_agent::require_binding(config).map_err(|e| infra(e.message))?;
    let model = Recorder {
        inner: deskpilot_agent::model_from_binding(binding).map_err(|e| infra(e.message))?,
        shown: std::sync::Mutex::new(Vec::new()),
    };
    rec.model = Some(deskpilot_agent::Model::name(&model));
    let mut tr = Transcript::default();
    // The task starts where its solution does: the window the oracle observes first
    // is bound before the loop, as a user points an agent at an app. A refusal there
    // is the host's answer to the task, and the model is never asked.
    let start = task
        .oracle
        .iter()
        .find(|s| s.call == Call::Observe && (s.app.is_some() || s.window.is_some()));
    if let Some(st) = start {
        let target = match (&st.app, &st.window) {
            (Some(a), _) => Target::App(substitute(a, work, &spec.suite, &[])),
            (None, Some(w)) => Target::Window(substitute(w, work, &spec.suite, &[])),
            (None, None) => Target::Current,
        };
        if let Err(e) = host.observe(&target, &ObserveOptions::default()).await {
            eprintln!(
                "eval: the task's first observe: {}: {}",
                e.code.as_str(),
                e.message
            );
            tr.answered(&e);
            rec.reason = Some(format!(
                "the host answered before the model was asked: {}: {}",
                e.code.as_str(),
                e.message
            ));
            rec.run_status = Some("decided_by_host".into());
            rec.host_decided = true;
            return Ok(tr);
        }
    }
    let mut opts = RunOptions::new(substitute(&task.instruction, work, &spec.suite, &[]));
    opts.max_steps = task.max_steps;
    opts.observation = spec.observation;
    let report = deskpilot_agent::run(host, &model, &opts, &mut |s| {
        eprintln!("  {}", s.line());
    })
    .await;
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            // Refused before the first step (plan mode, a stop): the host's answer,
            // given without asking the model.
            eprintln!(
                "eval: the run was refused: {}: {}",
                e.code.as_str(),
                e.message
            );
            rec.reason = Some(format!(
                "the host answered before the model was asked: {}: {}",
                e.code.as_str(),
                e.message
            ));
            tr.answered(&e);
            rec.run_status = Some("decided_by_host".into());
            rec.host_decided = true;
            return Ok(tr);
        }
    };
    rec.run_status = Some(report.status.as_str().into());
    rec.model_calls = report.steps.len() as u64;
    rec.tokens_in = report.tokens_in;
    rec.tokens_out = report.tokens_out;
    rec.calls = report.steps.len() as u64;
    rec.steps = report.steps.iter().filter(|s| s.kind == "action").count() as u64;
    // What the model was shown of the desktop: the text, and in the pixels and
    // hybrid observations the screenshot's estimated vision tokens.
    rec.deskpilot_tokens = report
        .steps
        .iter()
        .map(|s| s.shown_tokens + s.image_tokens)
        .sum();
    rec.screenshot_tokens = report.steps.iter().map(|s| s.screenshot_tokens).sum();
    rec.images = report.steps.iter().filter(|s| s.image_tokens > 0).count() as u64;
    tr.images = rec.images;
    for s in &report.steps {
        if s.outcome.starts_with("COMPUTER_") {
            tr.codes.push(s.outcome.clone());
            tr.texts.push((
                "error".into(),
                format!("{}: {}", s.outcome, s.message.as_deref().unwrap_or("")),
            ));
        } else if let Some(m) = &s.message {
            tr.texts.push(("step".into(), m.clone()));
        }
        if let Some(c) = &s.channel {
            tr.channels.push(c.clone());
        }
    }
    if let Some(e) = &report.error {
        if report.steps.is_empty() {
            rec.reason = Some(format!(
                "the run ended before the model was asked: {}: {}",
                e.code.as_str(),
                e.message
            ));
        }
        if tr.codes.last() != Some(&e.code.as_str().to_string()) {
            tr.codes.push(e.code.as_str().into());
        }
        // The whole message (a step's is cut at 300 chars).
        tr.texts.push((
            "error".into(),
            format!("{}: {}", e.code.as_str(), e.message),
        ));
    }
    // Every prompt the model was sent is what deskpilot showed it, and every answer
    // and its claim are what it said.
    let shown = model.shown.lock().map(|v| v.clone()).unwrap_or_default();
    tr.texts.extend(shown);
    if let Some(c) = &report.model_claim {
        tr.texts.push(("claim".into(), c.clone()));
    }
    if report.status == deskpilot_agent::RunStatus::ModelError {
        let why = report
            .error
            .as_ref()
            .map_or_else(String::new, |e| e.message.clone());
        return Err((
            Outcome::Infra,
            format!("the model could not be asked (not the model's failure): {why}"),
            tr,
        ));
    }
    Ok(tr)
}

/// The bound model, keeping every prompt it is sent (for `never_shown` checks).
struct Recorder {
    inner: Box<dyn deskpilot_agent::Model>,
    /// ("prompt", user text) and ("reply", raw answer), in order.
    shown: std::sync::Mutex<Vec<(String, String)>>,
}

#[async_trait::async_trait]
impl deskpilot_agent::Model for Recorder {
    async fn decide(
        &self,
        req: &deskpilot_agent::DecideRequest,
    ) -> Result<deskpilot_agent::ModelReply> {
        if let Ok(mut v) = self.shown.lock() {
            v.push(("prompt".into(), req.user.clone()));
        }
        let reply = self.inner.decide(req).await;
        if let (Ok(r), Ok(mut v)) = (&reply, self.shown.lock()) {
            v.push(("reply".into(), r.raw.clone()));
        }
        reply
    }

    fn name(&self) -> String {
        self.inner.name()
    }
}

/// The code an attempt's failure to even start is.
pub fn spawn_error(e: std::io::Error) -> ComputerError {
    ComputerError::new(
        ErrorCode::Internal,
        format!("cannot start an attempt process: {e}"),
    )
}

//! `deskpilot eval`: the evaluation harness (docs/ARCHITECTURE.md §14).
//!
//! The runner takes the suite's tasks (`eval/tasks/*.toml`, [`task`]), the shard
//! `--shard I/N` picks, and runs each `--runs K` times, `--jobs N` at once. Every
//! attempt is a process of its own ([`attempt`]) with its own runtime, config and
//! state directories and its own sandbox desktop, killed with its process group at
//! the task's wall limit; the runner then stops any sandbox it left. The policy
//! (`oracle`: the task's solution, [`oracle`]; `model`: the bound model through
//! `deskpilot run`'s loop with the chosen observation) works under the host's
//! policy; the checks ([`check`]) decide. Results: `results.jsonl` (one
//! [`record::AttemptRecord`] a line), `summary.json` ([`summary`]) and `report.html`
//! ([`html`]). `eval merge` combines result directories; `eval report` rewrites the
//! summary and page of one.

pub mod attempt;
pub mod check;
pub mod html;
pub mod oracle;
pub mod record;
pub mod summary;
pub mod task;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deskpilot_agent::ObservationMode;
use deskpilot_protocol::{ComputerError, ErrorCode};

use crate::Shown;
use deskpilot_protocol::Result;
use record::{AttemptRecord, Outcome};

/// What `deskpilot eval` is asked to run.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub suite: PathBuf,
    pub tasks: Option<String>,
    pub policy: String,
    pub observation: ObservationMode,
    pub jobs: usize,
    pub runs: usize,
    pub out: PathBuf,
    /// (I, N): this run is shard I of N (1-based).
    pub shard: Option<(usize, usize)>,
}

/// `--shard I/N`: 1 ≤ I ≤ N.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not I/N (e.g. 2/3)"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("{i:?} is not a number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("{n:?} is not a number"))?;
    if n == 0 || i == 0 || i > n {
        return Err(format!("shard {i}/{n}: I must be between 1 and N"));
    }
    Ok((i, n))
}

/// Which tasks shard `(i, n)` runs: the `k`-th task in id order (from 0) goes to
/// shard `k % n + 1`, so the shards are disjoint, cover the suite, and differ in
/// size by at most one.
pub fn shard_of<T>(tasks: Vec<T>, shard: Option<(usize, usize)>) -> Vec<T> {
    match shard {
        None => tasks,
        Some((i, n)) => tasks
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % n + 1 == i)
            .map(|(_, t)| t)
            .collect(),
    }
}

/// The suite directory when `--suite` is not given: `$DESKPILOT_EVAL_SUITE`, else
/// `./eval`.
pub fn default_suite() -> PathBuf {
    std::env::var_os("DESKPILOT_EVAL_SUITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("eval"))
}

fn bad(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::InvalidArgument, msg)
}

fn io_err(what: &str, p: &Path, e: std::io::Error) -> ComputerError {
    ComputerError::internal(format!("cannot {what} {}: {e}", p.display()))
}

/// Runs the suite and writes the result directory. Fails (`COMPUTER_EVAL_FAILED`)
/// when an oracle attempt did not pass — the oracle gate — or when any attempt of a
/// model run was an infrastructure failure; a model that fails tasks is a result,
/// not an error. Returns what to show, and the gate's failure when it failed (the
/// results are shown to a person either way).
pub async fn run(o: EvalOptions) -> Result<(Shown, Option<ComputerError>), ComputerError> {
    if o.policy != "oracle" && o.policy != "model" {
        return Err(bad(format!("--policy {:?}: use oracle or model", o.policy)));
    }
    if o.policy == "oracle" && o.observation != ObservationMode::Tree {
        return Err(bad(
            "the oracle acts by role and name: --observation pixels and hybrid are for --policy model",
        ));
    }
    let suite = std::path::absolute(&o.suite).map_err(|e| io_err("resolve", &o.suite, e))?;
    let tasks = task::load_suite(&suite, o.tasks.as_deref())?;
    let tasks = shard_of(tasks, o.shard);
    // The model binding is the user's, read now: a missing one fails before any
    // sandbox starts.
    let model_table = if o.policy == "model" {
        let cfg = deskpilot_host::config::Config::load()?;
        let b = deskpilot_agent::require_binding(&cfg)?;
        deskpilot_agent::model_from_binding(b)?;
        Some(model_toml(b))
    } else {
        None
    };
    let out = std::path::absolute(&o.out).map_err(|e| io_err("resolve", &o.out, e))?;
    // The attempts of an earlier run into the same directory would no longer match
    // its results: they go.
    let _ = std::fs::remove_dir_all(out.join("attempts"));
    std::fs::create_dir_all(out.join("attempts")).map_err(|e| io_err("create", &out, e))?;
    let exe = std::env::current_exe().map_err(|e| io_err("find", Path::new("deskpilot"), e))?;

    let mut queue = Vec::new();
    for t in &tasks {
        for k in 1..=o.runs {
            queue.push((t.clone(), k));
        }
    }
    let total = queue.len();
    if tasks.is_empty() {
        // More shards than tasks: this one has nothing to run, which is no failure
        // (a cluster job's pod for it completes with empty results).
        eprintln!(
            "eval: shard {} has no task (the suite has fewer tasks than shards)",
            o.shard.map(|(i, n)| format!("{i}/{n}")).unwrap_or_default()
        );
    }
    eprintln!(
        "eval: {} × {} = {}, policy {}, observation {}, {} at a time{} → {}",
        plural(tasks.len(), "task", "tasks"),
        plural(o.runs, "run", "runs"),
        plural(total, "attempt", "attempts"),
        o.policy,
        o.observation.as_str(),
        o.jobs,
        o.shard
            .map(|(i, n)| format!(", shard {i}/{n}"))
            .unwrap_or_default(),
        out.display()
    );
    let queue = Arc::new(Mutex::new(
        queue.into_iter().enumerate().collect::<Vec<_>>(),
    ));
    let done: Arc<Mutex<Vec<AttemptRecord>>> = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..o.jobs.min(total) {
        let queue = queue.clone();
        let done = done.clone();
        let ctx = Runner {
            exe: exe.clone(),
            suite: suite.clone(),
            out: out.clone(),
            policy: o.policy.clone(),
            observation: o.observation,
            model_table: model_table.clone(),
        };
        workers.push(std::thread::spawn(move || {
            loop {
                let next = queue.lock().ok().and_then(|mut q| {
                    if q.is_empty() {
                        None
                    } else {
                        Some(q.remove(0))
                    }
                });
                let Some((_, (task, k))) = next else { break };
                let rec = ctx.attempt(&task, k);
                let mut d = done.lock().unwrap_or_else(|p| p.into_inner());
                d.push(rec.clone());
                let n = d.len();
                let elapsed = started.elapsed().as_secs_f64();
                let eta = elapsed / n as f64 * (total - n) as f64;
                eprintln!(
                    "[{n}/{total}] {} r{k} · {}{} · {} · {:.1} s · ETA {}",
                    task.id,
                    rec.outcome.as_str(),
                    rec.reason
                        .as_deref()
                        .filter(|_| rec.outcome != Outcome::Success)
                        .map(|r| format!(" ({})", one_line(r, 200)))
                        .unwrap_or_default(),
                    plural(rec.steps as usize, "step", "steps"),
                    rec.wall_ms as f64 / 1000.0,
                    clock(eta)
                );
            }
        }));
    }
    for w in workers {
        let _ = w.join();
    }
    let mut records = done.lock().unwrap_or_else(|p| p.into_inner()).clone();
    sort(&mut records);
    let summary = write_results(&out, &records, "deskpilot evaluation")?;
    let text = format!(
        "{}\nresults: {}\nreport:  {}",
        summary::render(&summary),
        out.join("results.jsonl").display(),
        out.join("report.html").display()
    );
    let failed = records.iter().any(|r| {
        r.outcome == Outcome::Infra || (o.policy == "oracle" && r.outcome != Outcome::Success)
    });
    if failed {
        let mut e = ComputerError::new(
            ErrorCode::EvalFailed,
            if o.policy == "oracle" {
                format!(
                    "the oracle gate failed: {} of {} attempts did not pass (each is listed above with its reason; attempt logs under {})",
                    summary.not_passed.len(),
                    records.len(),
                    out.join("attempts").display()
                )
            } else {
                format!(
                    "{} attempts could not be set up (infrastructure failures); the rest are in the report",
                    records
                        .iter()
                        .filter(|r| r.outcome == Outcome::Infra)
                        .count()
                )
            },
        );
        e.detail = Some(serde_json::json!({ "summary": summary }));
        return Ok((Shown::new(&summary, text), Some(e)));
    }
    Ok((Shown::new(&summary, text), None))
}

/// `s` on one line, cut at `max` chars with `…` where it was cut.
fn one_line(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out.replace('\n', " ")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn clock(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

fn sort(records: &mut [AttemptRecord]) {
    records.sort_by(|a, b| {
        (&a.task, a.run, &a.policy, &a.observation).cmp(&(
            &b.task,
            b.run,
            &b.policy,
            &b.observation,
        ))
    });
}

/// Writes `results.jsonl`, `summary.json` and `report.html` into `out`.
fn write_results(out: &Path, records: &[AttemptRecord], title: &str) -> Result<summary::Summary> {
    let mut lines = String::new();
    for r in records {
        lines.push_str(
            &serde_json::to_string(r)
                .map_err(|e| ComputerError::internal(format!("cannot encode a record: {e}")))?,
        );
        lines.push('\n');
    }
    let p = out.join("results.jsonl");
    std::fs::write(&p, lines).map_err(|e| io_err("write", &p, e))?;
    let s = summary::summarize(records);
    let p = out.join("summary.json");
    let text = serde_json::to_string_pretty(&s)
        .map_err(|e| ComputerError::internal(format!("cannot encode the summary: {e}")))?;
    std::fs::write(&p, text).map_err(|e| io_err("write", &p, e))?;
    let p = out.join("report.html");
    std::fs::write(&p, html::page(&s, records, title)).map_err(|e| io_err("write", &p, e))?;
    Ok(s)
}

/// Reads the `results.jsonl` of a result directory.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` when it is missing or a line is not a record
/// (naming the line).
pub fn read_results(dir: &Path) -> Result<Vec<AttemptRecord>> {
    let p = dir.join("results.jsonl");
    let text = std::fs::read_to_string(&p).map_err(|e| {
        bad(format!(
            "cannot read {}: {e}; give a directory `deskpilot eval --out DIR` wrote",
            p.display()
        ))
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                bad(format!(
                    "{} line {}: not an attempt record: {e}",
                    p.display(),
                    i + 1
                ))
            })
        })
        .collect()
}

/// `deskpilot eval report DIR`: the summary and `report.html` of a result directory,
/// written again from its `results.jsonl`.
pub fn report(dir: &Path) -> Result<Shown> {
    let records = read_results(dir)?;
    let s = write_results(dir, &records, "deskpilot evaluation")?;
    let text = format!(
        "{}\nreport: {}",
        summary::render(&s),
        dir.join("report.html").display()
    );
    Ok(Shown::new(&s, text))
}

/// `deskpilot eval merge DIR… --out OUT`: one result directory from several (the
/// shards of a run), with its summary and report.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a directory without results, or when two
/// directories hold the same attempt (task, run, policy, observation).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Shown> {
    let mut records = Vec::new();
    for d in dirs {
        records.extend(read_results(d)?);
    }
    let mut keys = std::collections::HashSet::new();
    for r in &records {
        if !keys.insert((
            r.task.clone(),
            r.run,
            r.policy.clone(),
            r.observation.clone(),
        )) {
            return Err(bad(format!(
                "attempt {} r{} ({}) is in two of the merged directories; merge each shard once",
                r.task,
                r.run,
                summary::policy_key(r)
            )));
        }
    }
    sort(&mut records);
    std::fs::create_dir_all(out).map_err(|e| io_err("create", out, e))?;
    let s = write_results(out, &records, "deskpilot evaluation (merged)")?;
    let text = format!(
        "merged {} directories, {} attempts\n{}\nreport: {}",
        dirs.len(),
        records.len(),
        summary::render(&s),
        out.join("report.html").display()
    );
    Ok(Shown::new(&s, text))
}

/// The `[model]` table of the user's binding, for the attempts' own config files.
fn model_toml(b: &deskpilot_host::config::ModelBinding) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut t = format!(
        "[model]\nprovider = {}\nmodel = {}\nendpoint = {}\ntimeout_ms = {}\nmax_retries = {}\n",
        q(b.provider.as_str()),
        q(&b.model),
        q(&b.endpoint),
        b.timeout_ms,
        b.max_retries
    );
    if let Some(k) = &b.api_key_env {
        t.push_str(&format!("api_key_env = {}\n", q(k)));
    }
    t
}

/// What every attempt of one run shares.
struct Runner {
    exe: PathBuf,
    suite: PathBuf,
    out: PathBuf,
    policy: String,
    observation: ObservationMode,
    model_table: Option<String>,
}

impl Runner {
    /// Runs one attempt in its own process and returns its record (made here when
    /// the process left none: killed at the wall limit, or crashed).
    fn attempt(&self, t: &task::Task, k: usize) -> AttemptRecord {
        let dir = self.out.join("attempts").join(format!(
            "{}.{}-{}.r{k}",
            t.id,
            self.policy,
            self.observation.as_str()
        ));
        let spec = attempt::AttemptSpec {
            task: t.path.clone(),
            suite: self.suite.clone(),
            policy: self.policy.clone(),
            observation: self.observation,
            run: k,
            dir: dir.clone(),
        };
        let mut rec = attempt::blank_record(t, &spec);
        let started = Instant::now();
        let env = match self.prepare(t, &dir) {
            Ok(env) => env,
            Err(e) => {
                rec.reason = Some(format!("cannot prepare the attempt: {e}"));
                return rec;
            }
        };
        let log = std::fs::File::create(dir.join("attempt.log"));
        let mut cmd = Command::new(&self.exe);
        cmd.args(["eval", "attempt", "--task"])
            .arg(&t.path)
            .arg("--suite")
            .arg(&self.suite)
            .args([
                "--policy",
                &self.policy,
                "--observation",
                self.observation.as_str(),
            ])
            .arg("--run")
            .arg(k.to_string())
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        strip_desktop_env(&mut cmd);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        if let Ok(f) = log {
            cmd.stderr(f);
        }
        deskpilot_os::own_process_group(&mut cmd);
        let limit = Duration::from_secs(t.timeout_s);
        let status = match cmd.spawn() {
            Ok(mut child) => {
                let mut timed_out = false;
                let status = loop {
                    match child.try_wait() {
                        Ok(Some(s)) => break Some(s),
                        Ok(None) if started.elapsed() > limit => {
                            timed_out = true;
                            deskpilot_os::process::signal_group_or_pid(
                                child.id(),
                                deskpilot_os::process::Signal::Kill,
                            );
                            let _ = child.wait();
                            break None;
                        }
                        Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                        Err(_) => break None,
                    }
                };
                if timed_out {
                    rec.outcome = Outcome::TimedOut;
                    rec.reason = Some(format!(
                        "the attempt ran past its wall limit of {} s and was killed (see {})",
                        t.timeout_s,
                        dir.join("attempt.log").display()
                    ));
                }
                status
            }
            Err(e) => {
                rec.reason = Some(attempt::spawn_error(e).message);
                None
            }
        };
        // Whatever the attempt left running (it was killed, or crashed) goes now.
        let mut stop = Command::new(&self.exe);
        let runtime = runtime_dir_of(&dir);
        stop.args(["sandbox", "stop", "--all"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        strip_desktop_env(&mut stop);
        stop.envs(env.iter().map(|(k, v)| (k, v)));
        let _ = stop.status();
        let _ = std::fs::remove_dir_all(&runtime);
        match std::fs::read(dir.join("record.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<AttemptRecord>(&b).ok())
        {
            Some(r) if rec.outcome != Outcome::TimedOut => r,
            _ => {
                if rec.outcome != Outcome::TimedOut && rec.reason.is_none() {
                    rec.reason = Some(format!(
                        "the attempt process ended ({}) without a record; see {}",
                        status.map_or("killed".to_string(), |s| s.to_string()),
                        dir.join("attempt.log").display()
                    ));
                }
                rec.wall_ms = started.elapsed().as_millis() as u64;
                rec
            }
        }
    }

    /// The attempt's directories and config; the environment that points the
    /// attempt's process at them.
    fn prepare(&self, t: &task::Task, dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
        let _ = std::fs::remove_dir_all(dir);
        // The runtime directory holds the sandbox's bus sockets, whose paths must
        // stay under the 108 bytes of a Unix socket address: a short directory of
        // its own in the temporary directory, not inside the result directory.
        let runtime = runtime_dir_of(dir);
        let _ = std::fs::remove_dir_all(&runtime);
        if let Some(root) = runtime.parent() {
            std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
            deskpilot_os::owner_only_dir(root);
        }
        let config_dir = dir.join("deskpilot-config");
        let state = dir.join("deskpilot-state");
        for d in [dir, &runtime, &config_dir, &state] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            deskpilot_os::owner_only_dir(d);
        }
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut cfg = format!("enabled = true\nmode = {}\n", q(&t.mode));
        if !t.deny_apps.is_empty() {
            let list: Vec<String> = t.deny_apps.iter().map(|a| q(a)).collect();
            cfg.push_str(&format!("deny_apps = [{}]\n", list.join(", ")));
        }
        if self.observation.shows_image() {
            cfg.push_str("capture = \"a11y-and-pixels\"\n");
        }
        if let Some(m) = &self.model_table {
            cfg.push_str(m);
        }
        let path = config_dir.join("config.toml");
        std::fs::write(&path, cfg).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(vec![
            ("DESKPILOT_RUNTIME_DIR".into(), runtime),
            ("DESKPILOT_CONFIG".into(), path),
            ("XDG_STATE_HOME".into(), state),
        ])
    }
}

/// The runtime directory of the attempt in `dir`: `<hash>` in the run's runtime
/// root, `deskpilot-eval-<hash of the result directory>` in the system's temporary
/// directory (named `deskpilot…`: an attempt hides the whole root, its siblings'
/// included, from its apps).
fn runtime_dir_of(dir: &Path) -> PathBuf {
    let hash = |p: &Path| deskpilot_policy::approval::stable_hash(&p.display().to_string());
    let results = dir.parent().and_then(Path::parent).unwrap_or(dir);
    std::env::temp_dir()
        .join(format!("deskpilot-eval-{:016x}", hash(results)))
        .join(format!("{:08x}", hash(dir) as u32))
}

/// An attempt works on its own sandbox only: the caller's desktop and sandbox
/// choice are not passed on.
fn strip_desktop_env(cmd: &mut Command) {
    for v in [
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "DBUS_SESSION_BUS_ADDRESS",
        "AT_SPI_BUS_ADDRESS",
        "DESKPILOT_SANDBOX",
        "DESKPILOT_SESSION",
        "DESKPILOT_AUDIT",
        "TMPDIR",
    ] {
        cmd.env_remove(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_and_cover_the_suite() {
        let ids: Vec<usize> = (0..31).collect();
        let mut seen = Vec::new();
        for i in 1..=3 {
            let part = shard_of(ids.clone(), Some((i, 3)));
            assert!(part.len() >= 10 && part.len() <= 11, "{part:?}");
            seen.extend(part);
        }
        seen.sort();
        assert_eq!(seen, ids);
        assert_eq!(parse_shard("2/3"), Ok((2, 3)));
        assert!(parse_shard("0/3").is_err());
        assert!(parse_shard("4/3").is_err());
        assert!(parse_shard("3").is_err());
    }
}

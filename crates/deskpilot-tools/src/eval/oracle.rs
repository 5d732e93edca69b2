//! The oracle policy: a task's solution, run step by step as deskpilot tool calls
//! through the same [`Host`] (policy, grant, audit) a model's calls go through
//! (docs/ARCHITECTURE.md §14).
//!
//! An `act` or `read` step finds its element by role, name, text and states with the
//! host's `find` (which also searches rows off screen), then acts on the first hit's
//! ref: a solution never holds a ref or a coordinate, so it keeps working when the
//! tree's order or the window's size changes. Every call's returned text is kept
//! (for `never_shown` checks and the token count); the run stops at the first call
//! whose answer is not what the step expects.

use std::time::Duration;

use deskpilot_core::Op;
use deskpilot_host::session::{FindHit, WaitFor};
use deskpilot_host::{Host, ObserveOptions, Target};
use deskpilot_protocol::types::WindowInfo;
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::record::Transcript;
use super::task::{Call, Step, Task, substitute};
use deskpilot_protocol::Result;

/// Default wait of a `wait` step: 15 s.
const DEFAULT_WAIT_MS: u64 = 15_000;
/// Hits a `find` of an oracle step reads at most.
const FIND_LIMIT: usize = 200;

/// What an oracle run did, and where it stopped if it did not finish.
pub struct OracleRun {
    pub transcript: Transcript,
    /// `Some(why)` when a call's answer was not the one the step expects.
    pub failed: Option<String>,
}

/// Runs `task`'s solution through `host`. `work` and `suite` fill the placeholders.
pub async fn run(
    host: &mut Host,
    task: &Task,
    work: &std::path::Path,
    suite: &std::path::Path,
) -> OracleRun {
    let mut o = Oracle {
        host,
        tr: Transcript::default(),
        saved: Vec::new(),
        window: None,
        work,
        suite,
    };
    for (i, step) in task.oracle.iter().enumerate() {
        if let Some(ms) = step.pause_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let what = describe(step);
        let result = o.call(step).await;
        let expect = step.expect.as_deref().unwrap_or("ok");
        let got = match &result {
            Ok(()) => "ok".to_string(),
            Err(e) => e.code.as_str().to_string(),
        };
        if let Err(e) = &result {
            o.tr.answered(e);
        }
        // A line per call in the attempt's log.
        eprintln!("eval: oracle step {} · {what} → {got}", i + 1);
        if !expect.split('|').any(|x| x == got) {
            let why = match result {
                Ok(()) => format!("step {} ({what}): expected {expect}, got ok", i + 1),
                Err(e) => format!(
                    "step {} ({what}): expected {expect}, got {got}: {}",
                    i + 1,
                    e.message
                ),
            };
            return OracleRun {
                transcript: o.tr,
                failed: Some(why),
            };
        }
    }
    OracleRun {
        transcript: o.tr,
        failed: None,
    }
}

/// One line naming a step, for progress and failures.
pub fn describe(s: &Step) -> String {
    let mut t = format!("{:?}", s.call).to_lowercase();
    for (k, v) in [
        ("app", &s.app),
        ("window", &s.window),
        ("role", &s.role),
        ("name", &s.name),
        ("text", &s.text),
        ("op", &s.op),
        ("keys", &s.keys),
        ("window_title", &s.window_title),
    ] {
        if let Some(v) = v {
            t.push_str(&format!(" {k}={v:?}"));
        }
    }
    t
}

/// The text a `save` keeps: all of it, or the first group `save_regex` captures.
///
/// Errors: `COMPUTER_ELEMENT_NOT_FOUND` when the regex does not match.
fn saved_value(s: &Step, text: &str) -> Result<String> {
    let Some(r) = &s.save_regex else {
        return Ok(text.to_string());
    };
    let re = regex::Regex::new(r).map_err(|e| Oracle::bad(e.to_string()))?;
    re.captures(text)
        .and_then(|c| c.get(1).or_else(|| c.get(0)))
        .map(|m| m.as_str().to_string())
        .ok_or_else(|| {
            ComputerError::new(
                ErrorCode::ElementNotFound,
                format!("the text read does not match /{r}/"),
            )
        })
}

struct Oracle<'a> {
    host: &'a mut Host,
    tr: Transcript,
    saved: Vec<(String, String)>,
    /// The bound window as last observed (for the screenshot agent's cost).
    window: Option<WindowInfo>,
    work: &'a std::path::Path,
    suite: &'a std::path::Path,
}

impl Oracle<'_> {
    fn sub(&self, s: &str) -> String {
        substitute(s, self.work, self.suite, &self.saved)
    }

    fn bad(msg: String) -> ComputerError {
        ComputerError::new(ErrorCode::InvalidArgument, msg)
    }

    async fn call(&mut self, s: &Step) -> Result<()> {
        match s.call {
            Call::Observe => {
                let target = match (&s.app, &s.window) {
                    (Some(a), _) => Target::App(self.sub(a)),
                    (None, Some(w)) => Target::Window(self.sub(w)),
                    (None, None) => Target::Current,
                };
                let obs = self
                    .host
                    .observe(&target, &ObserveOptions::default())
                    .await?;
                self.tr.returned("observe", &obs.text);
                self.window = Some(obs.window.clone());
                Ok(())
            }
            Call::Find => {
                let hit = self.locate(s).await?;
                if let Some(k) = &s.save {
                    let v = saved_value(s, &hit.name)?;
                    self.saved.push((k.clone(), v));
                }
                Ok(())
            }
            Call::Read => {
                let hit = self.locate(s).await?;
                let read = self.host.read_text(&hit.ref_, None, None, None).await?;
                self.tr.returned("read", &read.text);
                if let Some(k) = &s.save {
                    let v = saved_value(s, read.text.trim())?;
                    self.saved.push((k.clone(), v));
                }
                Ok(())
            }
            Call::Act => {
                let op: Op = s.op().map_err(Self::bad)?;
                let hit = self.locate(s).await?;
                let value = s.value.as_deref().map(|v| self.sub(v));
                self.tr.step(self.window.as_ref());
                let out = self.host.act(&hit.ref_, op, value).await?;
                self.tr.returned("act", &out.text);
                self.tr.channel(out.result.channel.as_str());
                match out.not_executed() {
                    Some(e) => Err(e),
                    None => Ok(()),
                }
            }
            Call::Keys => {
                let chord = s.keys.as_deref().map(|k| self.sub(k));
                let text = s.value.as_deref().map(|v| self.sub(v));
                self.tr.step(self.window.as_ref());
                let out = self.host.keys(&Target::Current, chord, text).await?;
                self.tr.returned("keys", &out.text);
                self.tr.channel(out.result.channel.as_str());
                Ok(())
            }
            Call::Wait => {
                let cond = match (&s.window_title, &s.text) {
                    (Some(t), _) => WaitFor::Window(self.sub(t)),
                    (None, Some(t)) => WaitFor::Text(self.sub(t)),
                    (None, None) => return Err(Self::bad("a wait needs a condition".into())),
                };
                let timeout = Duration::from_millis(s.timeout_ms.unwrap_or(DEFAULT_WAIT_MS));
                let out = self.host.wait(&Target::Current, &cond, timeout).await?;
                self.tr
                    .returned("wait", &format!("met after {} ms", out.elapsed_ms));
                Ok(())
            }
        }
    }

    /// The element a step names, by the host's `find` in the bound window.
    async fn locate(&mut self, s: &Step) -> Result<FindHit> {
        let role = s.role().map_err(Self::bad)?;
        let states = s.states().map_err(Self::bad)?;
        let not_states = s.not_states().map_err(Self::bad)?;
        let name = s.name.as_deref().map(|n| self.sub(n));
        let text = s
            .text
            .as_deref()
            .map(|t| self.sub(t))
            .or_else(|| name.clone())
            .unwrap_or_default();
        let found = self
            .host
            .find(&Target::Current, &text, role, FIND_LIMIT)
            .await?;
        let shown: String = found.hits.iter().map(|h| format!("{}\n", h.line)).collect();
        self.tr.returned("find", &shown);
        let plain = |n: &str| n.replace('_', "").trim().to_string();
        let mut hits = found.hits.into_iter().filter(|h| {
            name.as_deref().is_none_or(|n| plain(&h.name) == plain(n))
                && states.iter().all(|st| h.states.contains(*st))
                && !not_states.iter().any(|st| h.states.contains(*st))
        });
        let nth = s.nth.unwrap_or(1).max(1);
        match hits.nth(nth - 1) {
            Some(h) => Ok(h),
            None => Err(ComputerError::new(
                ErrorCode::ElementNotFound,
                format!(
                    "no element matches {} in the bound window{}",
                    describe(s),
                    if found.unsearched.is_empty() {
                        String::new()
                    } else {
                        format!(" (not searched: {})", found.unsearched.describe())
                    }
                ),
            )),
        }
    }
}

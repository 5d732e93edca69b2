//! Task files of the evaluation suite (`eval/tasks/*.toml`, docs/ARCHITECTURE.md §14):
//! what the agent is told, how its desktop is set up, which mode the host runs in,
//! the checks that decide success from state deskpilot did not write, and the oracle
//! solution as deskpilot tool calls.
//!
//! Placeholders in strings: `{work}` is the attempt's work directory (absolute; files
//! and outputs live there), `{suite}` the suite directory (the parent of `tasks/`,
//! where `checkers/` is), and in oracle steps `{NAME}` a value an earlier `read` or
//! `find` step saved under `save = "NAME"`.

use std::path::{Path, PathBuf};

use deskpilot_core::{Op, Role, State};
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Deserialize;

/// Wall limit of one attempt when the task names none: 180 s.
pub const DEFAULT_TIMEOUT_S: u64 = 180;
/// Step limit when the task names none (a model's loop steps).
pub const DEFAULT_MAX_STEPS: usize = 20;
/// How long a launched app may take to show its ready window: 60 s (LibreOffice's
/// first start in a fresh profile takes 10–20 s on a 2-core machine).
pub const DEFAULT_READY_S: u64 = 60;

/// One task, as parsed from its file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Must equal the file's stem (`mousepad-save-as.toml` → `mousepad-save-as`).
    pub id: String,
    /// What the agent is told, in plain words (placeholders substituted).
    pub instruction: String,
    /// The app the task is about, for the per-app summary (`multi-app` for tasks
    /// that span several).
    pub app: String,
    /// Skills the task exercises (`text`, `dialog`, `menu`, `long-list`, `safety`…).
    #[serde(default)]
    pub skills: Vec<String>,
    /// The host's mode (`plan`, `default`, `accept-edits`, `bypass`, `unattended`);
    /// default `accept-edits`, the sandbox default.
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Extra `deny_apps` entries of the attempt's config.
    #[serde(default)]
    pub deny_apps: Vec<String>,
    /// A model policy's step limit.
    #[serde(default = "default_steps")]
    pub max_steps: usize,
    /// Wall limit of one attempt, seconds.
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
    /// Files created before anything starts.
    #[serde(default)]
    pub files: Vec<FileSpec>,
    /// Apps launched into the attempt's sandbox, in order, each waited for.
    #[serde(default)]
    pub launch: Vec<Launch>,
    /// All must hold for the attempt to succeed.
    pub check: Vec<Check>,
    /// The oracle solution.
    pub oracle: Vec<Step>,
    /// Where the file was read from (set by [`load`]).
    #[serde(skip)]
    pub path: PathBuf,
}

fn default_mode() -> String {
    "accept-edits".into()
}
fn default_steps() -> usize {
    DEFAULT_MAX_STEPS
}
fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_S
}

/// A file the setup writes, relative to the work directory unless absolute.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    pub path: String,
    /// The file's bytes as UTF-8 text (placeholders substituted).
    #[serde(default)]
    pub text: Option<String>,
    /// Or this many lines `PREFIX 1` … `PREFIX N` (a long file or list input).
    #[serde(default)]
    pub lines: Option<(String, usize)>,
}

/// An app the setup starts, and what says it is ready.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// argv; `["sh", "-c", "zenity --entry > {work}/out.txt"]` captures a dialog's
    /// stdout. Started by the harness directly in the sandbox (with accessibility on
    /// and deskpilot's directories hidden), not through the agent's launch rules.
    pub command: Vec<String>,
    /// Ready when a window whose title contains this is on the accessibility bus.
    #[serde(default)]
    pub ready_title: Option<String>,
    /// Ready when an app of this name is on the bus with a window.
    #[serde(default)]
    pub ready_app: Option<String>,
    /// Seconds to wait for readiness.
    #[serde(default = "default_ready")]
    pub ready_s: u64,
}

fn default_ready() -> u64 {
    DEFAULT_READY_S
}

/// One check of authoritative state. Exactly one of the kinds is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// A file's bytes: with `equals`, `contains`, `regex`, `sha256`, or `absent`.
    #[serde(default)]
    pub file: Option<String>,
    /// A command run in the sandbox's environment (cwd: the work directory): with
    /// `status` (default 0), and `equals`/`contains`/`regex` on its stdout (trimmed).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// The policy was answered with this `COMPUTER_*` code at least once (with
    /// `contains`: an answer of that code whose message contains the text).
    #[serde(default)]
    pub returned_code: Option<String>,
    /// No text deskpilot returned to the policy contains this (a secret), nor what a
    /// model answered.
    #[serde(default)]
    pub never_shown: Option<String>,
    /// Some text deskpilot returned to the policy contains this (proof that the
    /// thing a safety task is about was looked at: a password field's mask).
    #[serde(default)]
    pub shown: Option<String>,
    #[serde(default)]
    pub equals: Option<String>,
    #[serde(default)]
    pub contains: Option<String>,
    #[serde(default)]
    pub lacks: Option<String>,
    #[serde(default)]
    pub regex: Option<String>,
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub absent: Option<bool>,
    #[serde(default)]
    pub status: Option<i32>,
    /// Seconds to keep re-checking a file or command until it holds (an app that
    /// writes its file a moment after the last action); default 10.
    #[serde(default)]
    pub within_s: Option<u64>,
}

/// The tool a step of an oracle solution calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// `computer_observe {app?|window?}` (binds the grant).
    Observe,
    /// `computer_act {ref, op, value?}` on the element the step finds.
    Act,
    /// `computer_keys {keys?, text?}`.
    Keys,
    /// `computer_wait {window_title? | text? | gone?}`.
    Wait,
    /// `computer_read {ref}` of the element the step finds; `save` keeps its text.
    Read,
    /// `computer_find {text, role?}`; `save` keeps the first hit's name.
    Find,
}

/// One step of an oracle solution: a deskpilot tool call whose element is found by
/// role, name and states in the bound window — never a ref or a coordinate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub call: Call,
    /// observe: the app to bind.
    #[serde(default)]
    pub app: Option<String>,
    /// observe: part of the title of the window to bind.
    #[serde(default)]
    pub window: Option<String>,
    /// The element: its role (`button`, `textbox`, …).
    #[serde(default)]
    pub role: Option<String>,
    /// The element: its exact name (mnemonic underscores ignored).
    #[serde(default)]
    pub name: Option<String>,
    /// The element: a part of its name, value or description.
    #[serde(default)]
    pub text: Option<String>,
    /// The element: states it must have (`editable`, `checked`…).
    #[serde(default)]
    pub states: Vec<String>,
    /// The element: states it must not have (`disabled`).
    #[serde(default)]
    pub not_states: Vec<String>,
    /// The element: the Nth match (from 1) in tree order; default the first.
    #[serde(default)]
    pub nth: Option<usize>,
    /// act: the op.
    #[serde(default)]
    pub op: Option<String>,
    /// act: the op's value; keys: text to type.
    #[serde(default)]
    pub value: Option<String>,
    /// keys: a chord or sequence (`ctrl+s`, `Tab Tab Return`).
    #[serde(default)]
    pub keys: Option<String>,
    /// wait: a window whose title contains this appears.
    #[serde(default)]
    pub window_title: Option<String>,
    /// wait: timeout, ms (default 15,000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The code the call must answer with (`ok`, the default, or `COMPUTER_…`;
    /// alternatives separated by `|`, each a correct answer).
    #[serde(default)]
    pub expect: Option<String>,
    /// read/find: keep the text under this name for later `{NAME}` placeholders.
    #[serde(default)]
    pub save: Option<String>,
    /// read/find: keep only the first capture group of this regex in the text.
    #[serde(default)]
    pub save_regex: Option<String>,
    /// Pause this long before the call, ms (an app that redraws after an action).
    #[serde(default)]
    pub pause_ms: Option<u64>,
}

impl Step {
    /// The op of an act step.
    pub fn op(&self) -> Result<Op, String> {
        let op = self.op.as_deref().ok_or("an act step needs op")?;
        Op::from_name(op).ok_or_else(|| format!("unknown op {op:?}"))
    }

    /// The role of the element, if the step names one.
    pub fn role(&self) -> Result<Option<Role>, String> {
        self.role
            .as_deref()
            .map(|r| r.parse::<Role>().map_err(|_| format!("unknown role {r:?}")))
            .transpose()
    }

    /// The states the element must have.
    pub fn states(&self) -> Result<Vec<State>, String> {
        parse_states(&self.states)
    }

    /// The states the element must not have.
    pub fn not_states(&self) -> Result<Vec<State>, String> {
        parse_states(&self.not_states)
    }
}

fn parse_states(names: &[String]) -> Result<Vec<State>, String> {
    names
        .iter()
        .map(|s| {
            State::ALL
                .iter()
                .copied()
                .find(|st| st.as_str() == s)
                .ok_or_else(|| format!("unknown state {s:?}"))
        })
        .collect()
}

fn invalid(path: &Path, msg: impl std::fmt::Display) -> ComputerError {
    ComputerError::new(
        ErrorCode::InvalidArgument,
        format!("task file {}: {msg}", path.display()),
    )
}

/// Reads and validates one task file.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` naming the file and what is wrong (TOML
/// syntax, an unknown key, an id that is not the file's stem, a check that names no
/// kind or two, an oracle step without what its call needs, an unknown op, role,
/// state or mode).
pub fn load(path: &Path) -> Result<Task> {
    let text = std::fs::read_to_string(path).map_err(|e| invalid(path, e))?;
    let mut task: Task = toml::from_str(&text).map_err(|e| invalid(path, e))?;
    task.path = path.to_path_buf();
    validate(&task).map_err(|m| invalid(path, m))?;
    Ok(task)
}

fn validate(t: &Task) -> Result<(), String> {
    let stem = t.path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if t.id != stem {
        return Err(format!("id {:?} is not the file's name {stem:?}", t.id));
    }
    if t.instruction.trim().is_empty() {
        return Err("the instruction is empty".into());
    }
    deskpilot_policy::mode::Mode::from_name(&t.mode)
        .ok_or_else(|| format!("unknown mode {:?}", t.mode))?;
    if t.check.is_empty() {
        return Err("a task needs at least one [[check]]".into());
    }
    if t.oracle.is_empty() {
        return Err("a task needs an oracle solution ([[oracle]] steps)".into());
    }
    if t.max_steps == 0 || t.timeout_s == 0 {
        return Err("max_steps and timeout_s must be at least 1".into());
    }
    for (i, l) in t.launch.iter().enumerate() {
        if l.command.is_empty() {
            return Err(format!("launch {}: the command is empty", i + 1));
        }
        if l.ready_title.is_none() && l.ready_app.is_none() {
            return Err(format!(
                "launch {}: say when it is ready (ready_title or ready_app)",
                i + 1
            ));
        }
    }
    for (i, c) in t.check.iter().enumerate() {
        let kinds = [
            c.file.is_some(),
            c.command.is_some(),
            c.returned_code.is_some(),
            c.never_shown.is_some(),
            c.shown.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(format!(
                "check {}: name exactly one of file, command, returned_code, never_shown, shown",
                i + 1
            ));
        }
        // What each kind takes; anything else would be silently ignored.
        let text_checks = [&c.equals, &c.lacks, &c.regex, &c.sha256]
            .iter()
            .any(|v| v.is_some());
        let answer_kind = c.returned_code.is_some() || c.never_shown.is_some() || c.shown.is_some();
        if answer_kind
            && (text_checks || c.absent.is_some() || c.status.is_some() || c.within_s.is_some())
        {
            return Err(format!(
                "check {}: returned_code, never_shown and shown take no equals, lacks, regex, sha256, absent, status or within_s",
                i + 1
            ));
        }
        if (c.never_shown.is_some() || c.shown.is_some()) && c.contains.is_some() {
            return Err(format!(
                "check {}: never_shown and shown take no contains",
                i + 1
            ));
        }
        if c.file.is_some() && c.status.is_some() {
            return Err(format!("check {}: status is for a command check", i + 1));
        }
        if c.command.is_some() && (c.sha256.is_some() || c.absent.is_some()) {
            return Err(format!(
                "check {}: sha256 and absent are for a file check",
                i + 1
            ));
        }
        if let Some(r) = &c.regex {
            regex::Regex::new(r).map_err(|e| format!("check {}: {e}", i + 1))?;
        }
        if c.file.is_some()
            && [&c.equals, &c.contains, &c.regex, &c.sha256, &c.lacks]
                .iter()
                .all(|v| v.is_none())
            && c.absent.is_none()
        {
            return Err(format!(
                "check {}: a file check needs equals, contains, lacks, regex, sha256 or absent",
                i + 1
            ));
        }
    }
    for (i, s) in t.oracle.iter().enumerate() {
        let n = i + 1;
        let e = |m: String| format!("oracle step {n}: {m}");
        s.role().map_err(e)?;
        s.states().map_err(e)?;
        s.not_states().map_err(e)?;
        match s.call {
            Call::Act => {
                s.op().map_err(e)?;
                if s.role.is_none() && s.name.is_none() && s.text.is_none() {
                    return Err(e("find the element by role, name or text".into()));
                }
            }
            Call::Read if s.role.is_none() && s.name.is_none() && s.text.is_none() => {
                return Err(e("find the element by role, name or text".into()));
            }
            Call::Keys if s.keys.is_none() && s.value.is_none() => {
                return Err(e("a keys step needs keys or value".into()));
            }
            Call::Wait if s.window_title.is_none() && s.text.is_none() => {
                return Err(e("a wait step needs window_title or text".into()));
            }
            Call::Find if s.text.is_none() && s.role.is_none() => {
                return Err(e("a find step needs text or role".into()));
            }
            _ => {}
        }
        if let Some(r) = &s.save_regex {
            regex::Regex::new(r).map_err(|er| e(er.to_string()))?;
        }
        if let Some(x) = &s.expect {
            for alt in x.split('|') {
                if alt != "ok" && ErrorCode::ALL.iter().all(|c| c.as_str() != alt) {
                    return Err(e(format!(
                        "expect {alt:?} is neither ok nor a COMPUTER_* code (alternatives are separated by |)"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Every `*.toml` under `dir/tasks`, sorted by id, filtered by `glob` (on the id; `*`
/// and `?` wildcards, `,` separates alternatives).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` when the directory holds no task or a file is
/// invalid, or when the filter matches none.
pub fn load_suite(dir: &Path, glob: Option<&str>) -> Result<Vec<Task>> {
    let tasks_dir = dir.join("tasks");
    let entries = std::fs::read_dir(&tasks_dir).map_err(|e| {
        ComputerError::new(
            ErrorCode::InvalidArgument,
            format!(
                "cannot read the task directory {}: {e}; point --suite at a directory with tasks/*.toml",
                tasks_dir.display()
            ),
        )
    })?;
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut tasks = Vec::new();
    for p in &paths {
        let t = load(p)?;
        if glob.is_none_or(|g| matches_any(g, &t.id)) {
            tasks.push(t);
        }
    }
    if tasks.is_empty() {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            match glob {
                Some(g) => format!(
                    "no task in {} matches {g:?} ({} tasks there)",
                    tasks_dir.display(),
                    paths.len()
                ),
                None => format!("no task file in {}", tasks_dir.display()),
            },
        ));
    }
    Ok(tasks)
}

/// Whether `id` matches one of the comma-separated wildcard patterns.
pub fn matches_any(patterns: &str, id: &str) -> bool {
    patterns
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .any(|p| wildcard(p.as_bytes(), id.as_bytes()))
}

/// `*` (any run) and `?` (one byte) wildcard match.
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => wildcard(&p[1..], s) || (!s.is_empty() && wildcard(p, &s[1..])),
        (Some(b'?'), Some(_)) => wildcard(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => wildcard(&p[1..], &s[1..]),
        _ => false,
    }
}

/// `text` with `{work}`, `{suite}` and each saved `{NAME}` replaced.
pub fn substitute(text: &str, work: &Path, suite: &Path, saved: &[(String, String)]) -> String {
    let mut out = text
        .replace("{work}", &work.display().to_string())
        .replace("{suite}", &suite.display().to_string());
    for (k, v) in saved {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_ids() {
        assert!(matches_any("mousepad-*", "mousepad-save-as"));
        assert!(matches_any("calc-?dd,zenity-*", "calc-add"));
        assert!(!matches_any("mousepad-*", "calc-add"));
        assert!(matches_any("*", "x"));
        assert!(!matches_any("", "x"));
    }

    #[test]
    fn placeholders_are_replaced() {
        let s = substitute(
            "{work}/a.txt {suite}/checkers {v}",
            Path::new("/w"),
            Path::new("/s"),
            &[("v".into(), "42".into())],
        );
        assert_eq!(s, "/w/a.txt /s/checkers 42");
    }

    fn parse(text: &str) -> Result<(), String> {
        let mut t: Task = toml::from_str(text).map_err(|e| e.to_string())?;
        t.path = PathBuf::from("/x/t.toml");
        validate(&t)
    }

    #[test]
    fn invalid_tasks_say_what_is_wrong() {
        let base = "id = \"t\"\ninstruction = \"do it\"\napp = \"a\"\n";
        let ok = format!(
            "{base}[[check]]\nfile = \"a\"\nequals = \"x\"\n[[oracle]]\ncall = \"keys\"\nkeys = \"ctrl+s\"\n"
        );
        assert_eq!(parse(&ok), Ok(()));
        let two = format!(
            "{base}[[check]]\nfile = \"a\"\ncommand = [\"true\"]\n[[oracle]]\ncall = \"keys\"\nkeys = \"a\"\n"
        );
        assert!(parse(&two).unwrap_err().contains("exactly one"));
        let bad_op = format!(
            "{base}[[check]]\nfile = \"a\"\nabsent = true\n[[oracle]]\ncall = \"act\"\nrole = \"button\"\nop = \"smash\"\n"
        );
        assert!(parse(&bad_op).unwrap_err().contains("unknown op"));
        let no_oracle = format!("{base}[[check]]\nfile = \"a\"\nabsent = true\noracle = []\n");
        assert!(parse(&no_oracle).is_err());
        let unknown_key = format!("{base}colour = 1\n");
        assert!(parse(&unknown_key).unwrap_err().contains("colour"));
    }
}

//! The host: a [`Session`] with the user's policy around it (ARCHITECTURE.md §7–§8).
//!
//! Every call goes through here, in this order: the feature switch
//! (`COMPUTER_FEATURE_DISABLED`), a stop the user pressed since the last call (the
//! grant is revoked; agent grants are refused for 30 s, `COMPUTER_STOPPED_BY_USER`),
//! idle expiry, the one-grant-per-desktop lock (`COMPUTER_NO_GRANT` while another
//! session's live process holds it), and the binding: the first call binds the grant
//! to the frontmost window no refusal covers; `observe`/`find`/`wait` with `--app` or
//! `--window` rebind it, re-running every refusal on a fresh enumeration and bumping
//! the revision, which makes every ref shown before stale. `act`, `keys` and pointer
//! actions never bind: they work in the bound window only, with refs shown under the
//! current revision, and pass the mode (plan, default, accept-edits, bypass,
//! unattended), the irreversible-action rules and — when asked — the user's
//! confirmation, judged on the element as it is at dispatch. A bound window that
//! vanished moves a desktop grant to the frontmost permitted window (the action in
//! flight fails `COMPUTER_STALE_REVISION`) and revokes a window grant.
//!
//! Each grant event, action and refusal is appended to the audit log
//! ([`crate::audit`]); typed text appears there as a length only. An audit write that
//! fails never fails the action: it is reported in [`Host::warnings`].
//!
//! Nothing a tool argument, a model's answer or a window's text says widens any of
//! this: the inputs are the user's config, the user's own channels (`deskpilot
//! approve`, `deskpilot grant --user`, `deskpilot stop`, a TTY prompt) and facts the
//! host measures.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use deskpilot_core::render::{RenderOptions, render};
use deskpilot_core::{Handle, Node, Op, Role, State};
use deskpilot_policy::approval::{ActionKey, Approvals, stable_hash};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::grant::{
    Authority, Candidate, Capture, Grant, GrantOptions, InputPolicy, Issuer, Scope,
};
use deskpilot_policy::irreversible::{classify_act, classify_keys};
use deskpilot_policy::mode::{ActionFacts, Decision, Mode, decide};
use deskpilot_policy::refusal::{Refusal, Refusals, SelfFacts, TargetFacts};
use deskpilot_protocol::types::{AppInfo, PointerAction, PointerParams, WindowInfo};
use deskpilot_protocol::{DriverError, ErrorCode};
use serde::{Deserialize, Serialize};

use crate::audit::{AuditLog, now_rfc3339};
use crate::config::Effective;
use crate::control::{self, LockOutcome, StopSignal};
use crate::session::{
    ActOutcome, FindHit, KeysOutcome, Observation, ObserveOptions, Session, Target, WaitFor,
    WaitOutcome,
};
use crate::store::{lock_exclusive, owner_only_dir, private_file, state_dir};

/// The host's policy bookkeeping for one session, kept with its refs in the
/// per-desktop runtime state file. A grant never outlives the boot it was issued in,
/// a stop, its idle expiry or its budget; it is never written anywhere durable.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PolicyState {
    pub authority: Authority,
    /// When the active grant was issued (ms since the Unix epoch).
    pub issued_ms: Option<u64>,
    /// Apps the user approved acting on in this session (mode `default`, first use).
    pub approved_apps: Vec<String>,
    /// The boot the state belongs to (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: Option<String>,
    /// The newest stop record already applied (its `at_ms`).
    pub stop_seen_ms: u64,
}

/// The grant as a caller sees it (MCP structured content, `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrantView {
    pub grant_id: String,
    pub scope: Scope,
    pub issuer: Issuer,
    /// `wN` of the bound window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    pub revision: u64,
    pub actions_left: u32,
    pub idle_expiry_ms: u64,
    pub mode: Mode,
    pub capture: Capture,
    pub input_policy: InputPolicy,
}

impl GrantView {
    /// One line: `grant g-1a2b3c4d · desktop · [w1] mousepad · revision 3 · 198 actions left · mode accept-edits`.
    pub fn line(&self) -> String {
        let bound = match (&self.window_ref, &self.app) {
            (Some(w), Some(a)) => format!("[{w}] {}", deskpilot_core::sanitize::one_line(a)),
            _ => "no window".into(),
        };
        format!(
            "grant {} · {} · {bound} · revision {} · {} actions left · mode {}",
            self.grant_id,
            self.scope.as_str(),
            self.revision,
            self.actions_left,
            self.mode.as_str()
        )
    }
}

/// The coordinate basis of a pointer action (ARCHITECTURE.md §8): the grant revision
/// and the window geometry (screen pixels) and scale of the capture the coordinates
/// come from. Text form `rREV:X,Y,WxH@SCALE`, e.g. `r3:10,20,640x480@1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Basis {
    pub revision: u64,
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
    /// Capture pixels per screen pixel (1 for a tree read; a downscaled screenshot
    /// has less than 1).
    pub scale: f64,
}

impl Basis {
    /// Parses `rREV:X,Y,WxH@SCALE`.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` naming the expected form.
    pub fn parse(s: &str) -> Result<Basis, DriverError> {
        let bad = || {
            DriverError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{:?} is not a basis; use the `basis` an observe printed, like r3:10,20,640x480@1",
                    deskpilot_core::sanitize::one_line(s)
                ),
            )
        };
        let rest = s.strip_prefix('r').ok_or_else(bad)?;
        let (rev, rest) = rest.split_once(':').ok_or_else(bad)?;
        let (geom, scale) = rest.split_once('@').ok_or_else(bad)?;
        let mut parts = geom.split(',');
        let x = parts.next().ok_or_else(bad)?;
        let y = parts.next().ok_or_else(bad)?;
        let wh = parts.next().ok_or_else(bad)?;
        if parts.next().is_some() {
            return Err(bad());
        }
        let (w, h) = wh.split_once('x').ok_or_else(bad)?;
        let b = Basis {
            revision: rev.parse().map_err(|_| bad())?,
            x: x.parse().map_err(|_| bad())?,
            y: y.parse().map_err(|_| bad())?,
            width: w.parse().map_err(|_| bad())?,
            height: h.parse().map_err(|_| bad())?,
            scale: scale.parse().map_err(|_| bad())?,
        };
        if !(b.scale.is_finite() && b.scale > 0.0) || b.width <= 0 || b.height <= 0 {
            return Err(bad());
        }
        Ok(b)
    }
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "r{}:{},{},{}x{}@{}",
            self.revision, self.x, self.y, self.width, self.height, self.scale
        )
    }
}

/// Asks the user (on a terminal) whether to allow an action described by the string;
/// `true` means yes.
pub type Prompt = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How a host is set up.
#[derive(Clone)]
pub struct HostOptions {
    /// The desktop's key (see [`crate::store::desktop_key`]): the grant lock is per desktop.
    pub desktop_key: String,
    /// Session name (`cli` by default; an MCP server or a run has its own).
    pub session: String,
    /// `cli`, `mcp`, `run` or `demo`, for the audit and `deskpilot stop`.
    pub kind: String,
    /// The effective config for this desktop.
    pub settings: Effective,
    pub audit: AuditLog,
    /// A terminal prompt, when a user is at one; otherwise confirmations go through
    /// `deskpilot approve ID`.
    pub prompt: Option<Prompt>,
    /// The approvals file (default `state_dir()/approvals.json`).
    pub approvals_path: PathBuf,
    /// Raised by `deskpilot stop` (through the control socket of a long-lived host).
    pub stop: StopSignal,
    /// Where the desktop's shared records live (the grant lock, the spent-budget
    /// record): the runtime directory for the user's own desktop; a sandbox's own
    /// directory for a sandbox, so they go with it and a later sandbox on the same
    /// display starts clean.
    pub desktop_dir: PathBuf,
}

impl HostOptions {
    /// Options for `session` on the desktop `desktop_key`, with the audit log and
    /// approvals file at their default paths and no prompt.
    pub fn new(desktop_key: &str, session: &str, kind: &str, settings: Effective) -> Self {
        HostOptions {
            desktop_key: desktop_key.into(),
            session: session.into(),
            kind: kind.into(),
            settings,
            audit: AuditLog::at_default_path(),
            prompt: None,
            approvals_path: state_dir().join("approvals.json"),
            stop: StopSignal::new(),
            desktop_dir: state_dir(),
        }
    }
}

/// A window as the host enumerated it, with the refusal that covers it, if any.
#[derive(Debug, Clone, Serialize)]
pub struct ListedWindow {
    #[serde(rename = "ref")]
    pub ref_: String,
    #[serde(flatten)]
    pub window: WindowInfo,
    /// The grant is bound to this window.
    pub bound: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refusal>,
}

/// An application and its windows as the host lists them.
#[derive(Debug, Clone, Serialize)]
pub struct ListedApp {
    pub name: String,
    pub pid: Option<u32>,
    pub status: deskpilot_protocol::types::AppStatus,
    pub windows: Vec<ListedWindow>,
}

/// The windows of one enumeration, frontmost first, with their facts.
struct Enumeration {
    apps: Vec<AppInfo>,
    candidates: Vec<(WindowInfo, Candidate)>,
}

impl Enumeration {
    fn find(&self, handle: &str) -> Option<&(WindowInfo, Candidate)> {
        self.candidates
            .iter()
            .find(|(w, _)| w.handle.as_str() == handle)
    }
    fn list(&self) -> Vec<Candidate> {
        self.candidates.iter().map(|(_, c)| c.clone()).collect()
    }
}

fn refused(r: Refusal) -> DriverError {
    DriverError::new(r.code, r.reason)
}

fn fail(code: ErrorCode, msg: impl Into<String>) -> DriverError {
    DriverError::new(code, msg)
}

/// 16 hex digits from the OS random source (a time-and-pid hash if it is unreadable).
fn random_hex() -> String {
    let mut buf = [0u8; 8];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .is_ok();
    if ok {
        return buf.iter().map(|b| format!("{b:02x}")).collect();
    }
    let seed = format!("{}-{}", control::now_ms(), std::process::id());
    format!("{:016x}", stable_hash(&seed))
}

/// Programs `launch` never starts: command interpreters, terminals, and tools that
/// run other commands or change privileges. Each would let whoever chooses its
/// arguments run anything, outside every refusal. Matched on the name called and on
/// the real executable; versioned names (`python3.11`) match their family.
const LAUNCH_REFUSED: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "fish",
    "ksh",
    "mksh",
    "csh",
    "tcsh",
    "busybox",
    "env",
    "python",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "tclsh",
    "wish",
    "pwsh",
    "osascript",
    "awk",
    "gawk",
    "mawk",
    "sed",
    "xargs",
    "nohup",
    "setsid",
    "timeout",
    "nice",
    "ionice",
    "stdbuf",
    "chroot",
    "unshare",
    "nsenter",
    "script",
    "expect",
    "ssh",
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "systemd-run",
    "flatpak-spawn",
    "gdb",
    "strace",
    "ltrace",
    "xterm",
    "uxterm",
    "gnome-terminal",
    "gnome-terminal-server",
    "konsole",
    "xfce4-terminal",
    "lxterminal",
    "mate-terminal",
    "terminator",
    "tilix",
    "alacritty",
    "kitty",
    "urxvt",
    "rxvt",
    "st",
    "qterminal",
    "x-terminal-emulator",
    "foot",
    "wezterm",
    "deskpilot",
];

/// Whether `name` (a file name) is on [`LAUNCH_REFUSED`], exactly or as a versioned
/// member of a family (`python3`, `python3.11`, `perl5.36`).
fn launch_refused(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    LAUNCH_REFUSED.iter().any(|r| {
        n == *r
            || n.strip_prefix(r).is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
            })
    })
}

/// What a confirmation shows of text to be written: one line, secrets masked, at
/// most 60 chars with the total length when cut.
fn payload_preview(text: &str) -> String {
    let masked = deskpilot_core::redact::mask_secrets(text);
    let line = deskpilot_core::sanitize::one_line(&masked);
    let n = text.chars().count();
    if line.chars().count() <= 60 {
        line
    } else {
        format!("{}… ({n} chars)", line.chars().take(60).collect::<String>())
    }
}

/// A compact, text-free identity of an element for the audit: role, hash of its
/// ancestors' roles and names, and index in its parent.
fn fingerprint_of(root: &Node, element: &Node) -> String {
    let fps = deskpilot_core::refs::fingerprint_all(root);
    let idx = root.walk().skip(1).position(|n| n.handle == element.handle);
    match idx.and_then(|i| fps.get(i)) {
        Some(f) => format!("{}#{:016x}/{}", f.role, f.ancestor_hash, f.index_in_parent),
        None => element.role.to_string(),
    }
}

/// Hash of what the window shows, to tell whether the screen changed since an
/// approval was asked.
fn screen_hash(root: &Node) -> u64 {
    stable_hash(&render(root, &RenderOptions::default()).text)
}

fn focused(root: &Node) -> Option<&Node> {
    root.walk().find(|n| n.has(State::Focused))
}

fn is_password(n: &Node) -> bool {
    n.has(State::Password)
}

/// Whether synthesized input into the window could reach a password field: the
/// focused element is one, or no element reports focus (an inactive window's focus
/// widget does not) while the window has a password field, which may be the widget
/// the input lands in once the window is raised.
fn input_may_reach_password(root: &Node) -> bool {
    match focused(root) {
        Some(n) => is_password(n),
        None => root.walk().any(is_password),
    }
}

/// Runs `f` on the approvals file under an exclusive lock, writing it back.
fn with_approvals<R>(
    path: &std::path::Path,
    f: impl FnOnce(&mut Approvals) -> R,
) -> Result<R, DriverError> {
    let internal = |m: String| fail(ErrorCode::Internal, m);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
        owner_only_dir(dir);
    }
    let lock_path = path.with_extension("lock");
    let lock = private_file(
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true),
    )
    .open(&lock_path)
    .map_err(|e| internal(format!("cannot open {}: {e}", lock_path.display())))?;
    lock_exclusive(&lock)
        .map_err(|e| internal(format!("cannot lock {}: {e}", lock_path.display())))?;
    let mut ap: Approvals = match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Approvals::default(),
        Err(e) => return Err(internal(format!("cannot read {}: {e}", path.display()))),
        Ok(t) => serde_json::from_str(&t).map_err(|e| {
            internal(format!(
                "{} is damaged ({e}); remove it (pending approvals are lost; the actions will ask again)",
                path.display()
            ))
        })?,
    };
    let out = f(&mut ap);
    let text =
        serde_json::to_vec(&ap).map_err(|e| internal(format!("cannot encode approvals: {e}")))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
            }
            std::fs::rename(&tmp, path)
        })
        .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
    Ok(out)
}

/// Marks approval `id` approved: the user's side of a confirmation (`deskpilot
/// approve ID`). Returns what the approval is for.
///
/// Errors: `COMPUTER_CONFIRMATION_REQUIRED` when no such approval is pending or it
/// expired.
pub fn approve(path: &std::path::Path, id: &str) -> Result<String, DriverError> {
    let now = control::now_ms();
    with_approvals(path, |ap| {
        ap.approve(id, now)
            .map(|a| a.summary.clone())
            .map_err(refused)
    })?
}

/// The summary of a pending approval, for the prompt of `deskpilot approve`.
pub fn pending_approval(path: &std::path::Path, id: &str) -> Result<Option<String>, DriverError> {
    let now = control::now_ms();
    with_approvals(path, |ap| {
        ap.open(now)
            .find(|a| a.id == id && !a.approved)
            .map(|a| a.summary.clone())
    })
}

/// The measured facts deskpilot refuses on: its own process tree, its uid, and the
/// user's lists from the config.
pub fn refusals_for(settings: &Effective) -> Refusals {
    let me = std::process::id();
    Refusals {
        me: SelfFacts {
            pids: control::ancestors(me),
            uid: current_uid(),
            names: settings.self_apps.clone(),
        },
        user_denylist: settings.deny_apps.clone(),
    }
}

fn current_uid() -> u32 {
    #[cfg(unix)]
    {
        // SAFETY: getuid has no preconditions and cannot fail.
        unsafe { libc::getuid() }
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// Whether an `allow_apps` entry names this target. The executable decides when it
/// is known (`/proc/PID/exe`, which a renamed link does not change); the app's own
/// name only when it is not.
fn allow_matches(entry: &str, t: &TargetFacts) -> bool {
    match &t.exe {
        Some(exe) => exe.eq_ignore_ascii_case(entry),
        None => t.app.eq_ignore_ascii_case(entry),
    }
}

/// The identity an approval of "first use of this app" is kept under: the app name
/// and its executable, so another program calling itself the same cannot inherit it.
fn app_identity(t: &TargetFacts) -> String {
    format!("{}|{}", t.app, t.exe.as_deref().unwrap_or(""))
}

/// What the gate learned about an action before dispatch.
#[derive(Debug, Default)]
struct GateNote {
    /// The user confirmed a first use of the app.
    approved_app: bool,
    role: Option<Role>,
    fingerprint: Option<String>,
}

/// A session with the host's policy around it.
pub struct Host {
    session: Session,
    o: HostOptions,
    rules: Refusals,
    warnings: Vec<String>,
}

impl Host {
    /// Wraps `session` with the policy of `opts`.
    pub fn new(session: Session, opts: HostOptions) -> Host {
        let rules = refusals_for(&opts.settings);
        Host {
            session,
            o: opts,
            rules,
            warnings: Vec::new(),
        }
    }

    /// The session under the policy (reads only: acting through it would bypass the
    /// policy).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The options this host runs with.
    pub fn options(&self) -> &HostOptions {
        &self.o
    }

    /// The refusal rules in force.
    pub fn rules(&self) -> &Refusals {
        &self.rules
    }

    /// Problems that did not fail the call but must be reported (an audit write that
    /// failed).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn policy(&self) -> &PolicyState {
        &self.session.state().policy
    }

    fn policy_mut(&mut self) -> &mut PolicyState {
        &mut self.session.state_mut().policy
    }

    /// The active grant as callers see it.
    pub fn grant_view(&self) -> Option<GrantView> {
        let g = self.policy().authority.active()?;
        let window_ref = g
            .target
            .as_ref()
            .and_then(|t| self.session.state().windows.ref_of(&Handle(t.clone())));
        Some(GrantView {
            grant_id: g.grant_id.clone(),
            scope: g.scope,
            issuer: g.issuer,
            window_ref,
            app: g.target_app.clone(),
            revision: g.revision,
            actions_left: g.action_budget,
            idle_expiry_ms: g.idle_expiry_ms,
            mode: self.o.settings.mode,
            capture: g.capture,
            input_policy: g.input_policy,
        })
    }

    fn audit(&mut self, mut rec: AuditRecord) {
        rec.time = now_rfc3339();
        rec.session = self.o.session.clone();
        if let Some(g) = self.policy().authority.active() {
            rec.grant_id.get_or_insert_with(|| g.grant_id.clone());
            rec.scope.get_or_insert_with(|| g.scope.as_str().into());
            rec.issuer.get_or_insert_with(|| g.issuer.as_str().into());
            rec.revision.get_or_insert(g.revision);
        }
        if let Err(e) = self.o.audit.append(&rec) {
            tracing::warn!(error = %e, "audit write failed");
            let w = format!("audit log not written ({e}); the action itself was not affected");
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    fn audit_grant(&mut self, event: AuditEvent, g: &Grant, app: Option<&str>, pid: Option<u32>) {
        self.audit(Self::grant_record(event, g, app, pid));
    }

    /// The audit record of a grant event (its id, scope, issuer and revision).
    fn grant_record(
        event: AuditEvent,
        g: &Grant,
        app: Option<&str>,
        pid: Option<u32>,
    ) -> AuditRecord {
        AuditRecord {
            event: Some(event),
            grant_id: Some(g.grant_id.clone()),
            scope: Some(g.scope.as_str().into()),
            issuer: Some(g.issuer.as_str().into()),
            app: app.map(str::to_string),
            pid,
            revision: Some(g.revision),
            ..AuditRecord::default()
        }
    }

    /// Records that the grant is (re)bound to its target window, with that window's
    /// app and pid from `en`.
    fn audit_bound(&mut self, g: &Grant, en: &Enumeration) {
        let pid = g
            .target
            .as_deref()
            .and_then(|t| en.find(t))
            .and_then(|(_, c)| c.facts.pid);
        self.audit_grant(AuditEvent::GrantRebound, g, g.target_app.as_deref(), pid);
    }

    /// Records a refusal and returns it as the call's error.
    fn refuse(&mut self, e: DriverError, op: Option<&str>, app: Option<&str>) -> DriverError {
        self.audit(AuditRecord {
            event: Some(AuditEvent::Refusal),
            op: op.map(str::to_string),
            app: app.map(str::to_string),
            status: Some("refused".into()),
            code: Some(e.code.as_str().into()),
            ..AuditRecord::default()
        });
        let _ = self.session.save();
        e
    }

    fn acquire_lock(&self, grant_id: &str, now: u64) -> Result<LockOutcome, DriverError> {
        control::acquire_grant_lock_in(
            &self.o.desktop_dir,
            &self.o.desktop_key,
            &self.o.session,
            grant_id,
            std::process::id(),
            now,
        )
    }

    /// Keeps a user-issued grant's hold on the desktop until it would idle out,
    /// even between calls of a session whose processes are short-lived.
    fn refresh_user_lease(&self, now: u64) {
        let until = self
            .policy()
            .authority
            .active()
            .filter(|g| g.issuer == Issuer::User)
            .map(|g| now + g.idle_expiry_ms);
        if let Err(e) = control::set_user_lease_in(
            &self.o.desktop_dir,
            &self.o.desktop_key,
            &self.o.session,
            until,
        ) {
            tracing::warn!(error = %e.message, "cannot record the user grant's lease");
        }
    }

    fn release_lock(&self) {
        if let Err(e) = control::release_grant_lock_in(
            &self.o.desktop_dir,
            &self.o.desktop_key,
            &self.o.session,
        ) {
            tracing::warn!(error = %e.message, "cannot release the grant lock");
        }
    }

    /// Drops the active grant for `event` (revoked, stopped, expired, displaced).
    fn close_grant(&mut self, event: AuditEvent) {
        if let Some(g) = self.policy_mut().authority.revoke() {
            self.policy_mut().issued_ms = None;
            self.audit_grant(event, &g, g.target_app.as_deref(), None);
            self.release_lock();
        }
    }

    fn grant_options(&self, scope: Scope) -> GrantOptions {
        GrantOptions {
            scope,
            input_policy: InputPolicy::AutonomousInScope,
            capture: self.o.settings.capture,
            action_budget: self.o.settings.action_budget,
            idle_expiry_ms: self.o.settings.idle_expiry_ms,
        }
    }

    /// Applies what happened since the last call: feature switch, boot, stop, expiry.
    fn preflight(&mut self, now: u64) -> Result<(), DriverError> {
        if !self.o.settings.enabled {
            return Err(fail(
                ErrorCode::FeatureDisabled,
                "computer use is off on this desktop (it is off by default outside a deskpilot sandbox). Turn it on with `deskpilot config set enabled true` — that grants the agent this desktop within the refusals and budget — or work in an isolated desktop: `deskpilot sandbox start`",
            ));
        }
        let boot = control::boot_id();
        if self.policy().boot_id != boot {
            // A grant never outlives the boot it was issued in.
            if let Some(g) = self.policy_mut().authority.revoke() {
                self.audit_grant(AuditEvent::GrantRevoked, &g, g.target_app.as_deref(), None);
            }
            let p = self.policy_mut();
            p.issued_ms = None;
            p.approved_apps.clear();
            p.boot_id = boot;
        }
        if let Some(stop) = control::read_stop()
            && stop.at_ms > self.policy().stop_seen_ms
        {
            self.policy_mut().stop_seen_ms = stop.at_ms;
            let issued_before = self.policy().issued_ms.is_none_or(|t| t <= stop.at_ms);
            if issued_before {
                let g = self.policy_mut().authority.stop(stop.at_ms);
                self.policy_mut().issued_ms = None;
                if let Some(g) = g {
                    self.audit_grant(AuditEvent::GrantStopped, &g, g.target_app.as_deref(), None);
                    self.release_lock();
                }
            }
        }
        let before = self.policy().authority.active().cloned();
        if let Some(r) = self.policy_mut().authority.tick(now) {
            // This call reports the expiry; the next one issues a new grant.
            self.policy_mut().issued_ms = None;
            let e = refused(r);
            self.audit(AuditRecord {
                event: Some(AuditEvent::GrantRevoked),
                grant_id: before.map(|g| g.grant_id),
                status: Some("expired".into()),
                code: Some(e.code.as_str().into()),
                ..AuditRecord::default()
            });
            self.release_lock();
            let _ = self.session.save();
            return Err(e);
        }
        // A spent budget is not closed here: the grant stays, refusing every action
        // with COMPUTER_BUDGET_EXHAUSTED (reads still work), until it idles out or
        // the user revokes it or issues a new one, so a runaway loop cannot simply
        // take a fresh budget.
        Ok(())
    }

    /// Makes sure this session holds the desktop's grant: issues one (agent) when
    /// there is none, and gives ours up when another session held the desktop since.
    fn ensure_grant(&mut self, now: u64) -> Result<(), DriverError> {
        let mut fresh = false;
        if self.policy().authority.active().is_none()
            && let Some(until) = self.budget_rest_until()
            && now < until
        {
            let e = fail(
                ErrorCode::BudgetExhausted,
                format!(
                    "the last grant on this desktop spent its action budget; agent-issued grants resume in {} min (when it would have idled out), or the user can issue one now with `deskpilot grant --user`",
                    (until - now).div_ceil(60_000)
                ),
            );
            return Err(self.refuse(e, None, None));
        }
        if self.policy().authority.active().is_none() {
            let opts = self.grant_options(Scope::Desktop);
            let id = format!("g-{}", &random_hex()[..8]);
            let issued = self
                .policy_mut()
                .authority
                .issue(Issuer::Agent, &opts, id, now)
                .cloned()
                .map_err(refused);
            match issued {
                Ok(_) => {
                    self.policy_mut().issued_ms = Some(now);
                    fresh = true;
                }
                Err(e) => return Err(self.refuse(e, None, None)),
            }
        }
        let gid = self
            .policy()
            .authority
            .active()
            .map(|g| g.grant_id.clone())
            .unwrap_or_default();
        match self.acquire_lock(&gid, now)? {
            LockOutcome::HeldBy(h) => {
                let _ = self.policy_mut().authority.revoke();
                self.policy_mut().issued_ms = None;
                let lease = if h.user_until_ms.is_some() {
                    " (a grant the user issued, kept until it idles out)"
                } else {
                    ""
                };
                let e = fail(
                    ErrorCode::NoGrant,
                    format!(
                        "another deskpilot session ({:?}, pid {}) holds this desktop's grant{lease}; one grant is active per desktop. Wait for it to finish, or run `deskpilot stop` to end it",
                        deskpilot_core::sanitize::one_line(&h.session),
                        h.pid
                    ),
                );
                Err(self.refuse(e, None, None))
            }
            LockOutcome::Acquired { previous } => {
                let displaced = !fresh
                    && previous
                        .as_ref()
                        .is_some_and(|p| p.session != self.o.session && p.grant_id.is_some());
                if displaced {
                    // Another session held the desktop since our last call: our refs
                    // and grant belong to a binding that no longer exists.
                    self.close_grant(AuditEvent::GrantRevoked);
                    return self.ensure_grant(now);
                }
                if fresh && let Some(g) = self.policy().authority.active().cloned() {
                    self.audit_grant(AuditEvent::GrantIssued, &g, None, None);
                }
                self.refresh_user_lease(now);
                Ok(())
            }
        }
    }

    /// Lists windows with their facts, frontmost (active) first.
    async fn enumerate(&mut self) -> Result<Enumeration, DriverError> {
        let apps = self.session.driver().apps().await?;
        let mut candidates = Vec::new();
        for app in &apps {
            let uid = app.uid.or_else(|| app.pid.and_then(control::process_uid));
            // The executable as the kernel resolved it: a renamed link to a
            // binary changes the app name and `comm`, not this.
            let exe = app
                .pid
                .and_then(|p| control::process_exe(p).or_else(|| control::process_comm(p)));
            for w in &app.windows {
                let facts = TargetFacts {
                    app: app.name.clone(),
                    title: w.title.clone(),
                    pid: w.pid.or(app.pid),
                    uid,
                    exe: exe.clone(),
                    focused_password: false,
                };
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
        Ok(Enumeration { apps, candidates })
    }

    /// Preflight, grant, enumeration, and keeping the binding on a live window.
    /// Returns the enumeration and, when the bound window vanished, the revision the
    /// caller's refs were taken under.
    async fn begin(&mut self) -> Result<(Enumeration, Option<u64>), DriverError> {
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
            Some(t) if en.find(&t).is_none() => {
                vanished = Some(old_rev);
                let before = self.policy().authority.active().cloned();
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

    fn bound_handle(&self) -> Option<String> {
        self.policy()
            .authority
            .active()
            .and_then(|g| g.target.clone())
    }

    /// Resolves `target` and binds the grant to it (a rebind re-runs every refusal
    /// and bumps the revision). `Target::Current` means the bound window.
    async fn bind_target(
        &mut self,
        target: &Target,
        en: &Enumeration,
    ) -> Result<WindowInfo, DriverError> {
        let now = control::now_ms();
        let window = match target {
            Target::Current => match self.bound_handle() {
                Some(h) => en
                    .find(&h)
                    .map(|(w, _)| w.clone())
                    .ok_or_else(|| fail(ErrorCode::ElementNotFound, "the bound window is gone"))?,
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
            other => self.session.resolve_window(other).await?,
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
    fn stamp(&mut self, window: &WindowInfo, obs: Option<&mut Observation>) {
        let rev = self
            .policy()
            .authority
            .active()
            .map(|g| g.revision)
            .unwrap_or_default();
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
            obs.basis = window.bounds.map(|b| {
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

    fn after_call(&mut self) -> Result<(), DriverError> {
        if let Some(h) = self.bound_handle() {
            self.session.state_mut().current = Some(h);
        }
        self.session.save()
    }

    /// Applications and windows, each window with its refusal (never dropped).
    pub async fn apps(&mut self) -> Result<Vec<ListedApp>, DriverError> {
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
                });
            }
            out.push(ListedApp {
                name: app.name.clone(),
                pid: app.pid,
                status: app.status,
                windows,
            });
        }
        self.after_call()?;
        Ok(out)
    }

    /// Observes `target` (binding the grant to it); the observation carries the
    /// grant view and a coordinate basis.
    pub async fn observe(
        &mut self,
        target: &Target,
        opts: &ObserveOptions,
    ) -> Result<Observation, DriverError> {
        let (en, _) = self.begin().await?;
        let window = self.bind_target(target, &en).await?;
        let mut obs = self
            .session
            .observe(&Target::Handle(window.handle.clone()), opts)
            .await?;
        self.stamp(&window, Some(&mut obs));
        self.after_call()?;
        Ok(obs)
    }

    /// Finds elements in `target` (binding the grant to it).
    pub async fn find(
        &mut self,
        target: &Target,
        text: &str,
        role: Option<Role>,
        limit: usize,
    ) -> Result<Vec<FindHit>, DriverError> {
        let (en, _) = self.begin().await?;
        let window = self.bind_target(target, &en).await?;
        let hits = self
            .session
            .find(&Target::Handle(window.handle.clone()), text, role, limit)
            .await?;
        self.stamp(&window, None);
        self.after_call()?;
        Ok(hits)
    }

    /// Waits for `cond` in `target` (binding the grant to it). A stop ends the wait
    /// with `COMPUTER_STOPPED_BY_USER`.
    pub async fn wait(
        &mut self,
        target: &Target,
        cond: &WaitFor,
        timeout: Duration,
    ) -> Result<WaitOutcome, DriverError> {
        let (en, _) = self.begin().await?;
        let window = match cond {
            WaitFor::Window(_) => None,
            _ => Some(self.bind_target(target, &en).await?),
        };
        let t = match &window {
            Some(w) => Target::Handle(w.handle.clone()),
            None => target.clone(),
        };
        let stop = self.o.stop.clone();
        let out = tokio::select! {
            r = self.session.wait(&t, cond, timeout) => r,
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

    /// Checks the mode and confirmation for an action; returns whether the user
    /// approved a first use of the app. Never called for a refused action.
    #[allow(clippy::too_many_arguments)]
    fn gate(
        o: &HostOptions,
        approved_apps: &[String],
        target: &TargetFacts,
        key: ActionKey,
        screen: u64,
        summary: String,
        irreversible: Option<String>,
    ) -> Result<bool, DriverError> {
        let s = &o.settings;
        let allow_listed =
            s.allow_all_apps || s.allow_apps.iter().any(|a| allow_matches(a, target));
        let app_approved = approved_apps.contains(&app_identity(target));
        let facts = ActionFacts {
            allow_listed,
            app_approved,
            irreversible: irreversible.is_some(),
        };
        match decide(s.mode, facts) {
            Decision::Allow => Ok(false),
            Decision::Refuse { code, reason } => Err(fail(code, reason)),
            Decision::Confirm { reason } => {
                let first_use = irreversible.is_none();
                let why = match &irreversible {
                    Some(m) => format!("irreversible: {m}"),
                    None => reason,
                };
                let question = format!("{summary} ({why})");
                if let Some(prompt) = &o.prompt {
                    return if prompt(&question) {
                        Ok(first_use)
                    } else {
                        Err(fail(
                            ErrorCode::ConfirmationRequired,
                            "you declined this action; nothing was done",
                        ))
                    };
                }
                let now = control::now_ms();
                let verdict = with_approvals(&o.approvals_path, |ap| {
                    match ap.find_for(&key, now).map(|a| (a.id.clone(), a.approved)) {
                        Some((id, true)) => ap.consume(&id, &key, screen, now).map(|()| None),
                        Some((id, false)) => Ok(Some(id)),
                        None => {
                            let id = random_hex()[..10].to_string();
                            ap.request(id.clone(), key.clone(), screen, question.clone(), now);
                            Ok(Some(id))
                        }
                    }
                })?;
                match verdict {
                    Ok(None) => Ok(first_use),
                    Ok(Some(id)) => {
                        let mut e = fail(
                            ErrorCode::ConfirmationRequired,
                            format!(
                                "{question} needs the user's confirmation. Ask them to run `deskpilot approve {id}` in a terminal, then retry exactly the same action; the approval is single-use, expires in 5 min and is void if the window changes"
                            ),
                        );
                        e.detail = Some(serde_json::json!({
                            "approval_id": id,
                            "action": question,
                        }));
                        Err(e)
                    }
                    Err(r) => Err(refused(r)),
                }
            }
        }
    }

    /// Checks the grant for an action in the bound window with refs from `window`:
    /// the window is the bound one, its refs were shown under the current revision,
    /// budget and expiry allow it. Returns the bound window and its facts.
    async fn action_target(&mut self, op: &str) -> Result<(WindowInfo, Candidate), DriverError> {
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
        if let Some(old) = vanished {
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
                    "the bound window closed; {now_on} (revision {}, your refs are from revision {old}). Observe before acting",
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
        let (window, cand) = en
            .find(&bound)
            .cloned()
            .expect("begin keeps the binding live");
        if let Some(r) = self.rules.check_window(&cand.facts) {
            let app = cand.facts.app.clone();
            return Err(self.refuse(refused(r), Some(op), Some(&app)));
        }
        Ok((window, cand))
    }

    /// The user confirmed a first use of this app in this session.
    fn remember_app(&mut self, facts: &TargetFacts) {
        let id = app_identity(facts);
        if !self.policy().approved_apps.contains(&id) {
            self.policy_mut().approved_apps.push(id);
        }
    }

    fn refs_revision(&self, handle: &str) -> Option<u64> {
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
    fn ref_elsewhere(&self, r: &str, bound: &str) -> Option<DriverError> {
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

    fn check_budget(&mut self, revision: u64, op: &str, app: &str) -> Result<(), DriverError> {
        let now = control::now_ms();
        match self.policy_mut().authority.check_action(revision, now) {
            Ok(_) => Ok(()),
            Err(r) => {
                if r.code == ErrorCode::BudgetExhausted {
                    self.mark_budget_spent(now);
                }
                Err(self.refuse(refused(r), Some(op), Some(app)))
            }
        }
    }

    /// The desktop's budget record: once a grant spent its budget, agent-issued
    /// grants on the desktop rest until it would have idled out, whichever session
    /// asks (a revoke or another `--session` does not buy a fresh budget).
    fn budget_path(&self) -> PathBuf {
        self.o
            .desktop_dir
            .join(format!("budget-{}.json", self.o.desktop_key))
    }

    fn mark_budget_spent(&self, now: u64) {
        let rec = serde_json::json!({
            "spent_ms": now,
            "until_ms": now + self.o.settings.idle_expiry_ms,
            "budget": self.o.settings.action_budget,
        });
        let path = self.budget_path();
        let written = private_file(
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true),
        )
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, rec.to_string().as_bytes()));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot record the spent budget");
        }
    }

    fn budget_rest_until(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.budget_path()).ok()?;
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()?
            .get("until_ms")?
            .as_u64()
    }

    /// Performs `op` on ref `r` of the bound window under the policy.
    ///
    /// Errors, besides [`Session::act`]'s: `COMPUTER_FEATURE_DISABLED`,
    /// `COMPUTER_STOPPED_BY_USER`, `COMPUTER_NO_GRANT`, `COMPUTER_SCOPE_VIOLATION`
    /// (plan mode, allow-list), `COMPUTER_STALE_REVISION` (refs from another binding,
    /// or the bound window closed), `COMPUTER_BUDGET_EXHAUSTED`,
    /// `COMPUTER_GRANT_EXPIRED`, `COMPUTER_SECURE_INPUT` (text into a password field),
    /// refusal codes of the window, `COMPUTER_CONFIRMATION_REQUIRED`.
    pub async fn act(
        &mut self,
        r: &str,
        op: Op,
        value: Option<String>,
    ) -> Result<ActOutcome, DriverError> {
        let (window, cand) = self.action_target(op.as_str()).await?;
        let app = cand.facts.app.clone();
        let revision = self
            .policy()
            .authority
            .active()
            .map(|g| g.revision)
            .unwrap_or(0);
        match self.refs_revision(window.handle.as_str()) {
            None => {
                let e = fail(
                    ErrorCode::StaleRevision,
                    format!(
                        "no refs were shown for the bound window {:?} under revision {revision}; observe it first",
                        deskpilot_core::sanitize::one_line(&window.title)
                    ),
                );
                return Err(self.refuse(e, Some(op.as_str()), Some(&app)));
            }
            Some(rev) if rev != revision => {
                let e = fail(
                    ErrorCode::StaleRevision,
                    format!(
                        "{r} was shown under revision {rev}, but the grant was rebound since (revision {revision}); observe again and use the new refs"
                    ),
                );
                return Err(self.refuse(e, Some(op.as_str()), Some(&app)));
            }
            Some(_) => {}
        }
        if let Some(e) = self.ref_elsewhere(r, window.handle.as_str()) {
            return Err(self.refuse(e, Some(op.as_str()), Some(&app)));
        }
        self.check_budget(revision, op.as_str(), &app)?;
        self.session.state_mut().current = Some(window.handle.0.clone());

        let text_len = match op {
            Op::SetValue | Op::Type => value.as_ref().map(|v| v.chars().count()),
            _ => None,
        };
        let mut note = GateNote::default();
        let o = self.o.clone();
        let rules = self.rules.clone();
        let approved_apps = self.policy().approved_apps.clone();
        let facts = cand.facts.clone();
        // Approvals are bound to this desktop and session, not just a handle.
        let window_key = format!(
            "{}/{}/{}",
            self.o.desktop_key, self.o.session, window.handle.0
        );
        let payload = value.clone();
        let result = self
            .session
            .act_checked(r, op, value, |root, el| {
                note.role = Some(el.role);
                // An element that is not on screen (an item of a closed menu, a row
                // scrolled away, a window behind a dialog's removal) is not what the
                // model is looking at: activating it would act out of sight.
                if el.has(State::Offscreen)
                    && matches!(
                        op,
                        Op::Click
                            | Op::DoubleClick
                            | Op::RightClick
                            | Op::Toggle
                            | Op::Select
                            | Op::Expand
                            | Op::Collapse
                            | Op::Focus
                    )
                {
                    return Err(fail(
                        ErrorCode::ElementNotActionable,
                        format!(
                            "{r} is not on screen (an item of a closed menu, or scrolled out of view); open its menu or `act {r} scroll into_view` first, then observe"
                        ),
                    ));
                }
                let fp = fingerprint_of(root, el);
                note.fingerprint = Some(fp.clone());
                let textual = matches!(op, Op::SetValue | Op::Type | Op::Clear);
                let mut f = facts.clone();
                // No text into a password field, and no typing at all while one
                // has focus (a keyboard fallback could land there).
                f.focused_password = textual && is_password(el)
                    || matches!(op, Op::Type) && focused(root).is_some_and(is_password);
                if let Some(r) = rules.check_input(&f) {
                    return Err(refused(r));
                }
                let irreversible = classify_act(op, el.role, &el.name)
                    .map(|m| format!("{:?} matched {}", m.matched, m.kind));
                let name = deskpilot_core::sanitize::one_line(&el.name);
                let name: String = name.chars().take(60).collect();
                let named = if name.is_empty() {
                    el.role.to_string()
                } else {
                    format!("{} {name:?}", el.role)
                };
                let mut summary = format!(
                    "{op} {named} in {}",
                    deskpilot_core::sanitize::one_line(&facts.app)
                );
                if let Some(p) = &payload {
                    // The user sees what would be written (secrets masked, one line).
                    summary.push_str(&format!(" to {:?}", payload_preview(p)));
                }
                let key = ActionKey::new(&window_key, &fp, op.as_str(), payload.as_deref());
                note.approved_app = Self::gate(
                    &o,
                    &approved_apps,
                    &facts,
                    key,
                    screen_hash(root),
                    summary,
                    irreversible,
                )?;
                Ok(())
            })
            .await;
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                let policy_codes = [
                    ErrorCode::SecureInput,
                    ErrorCode::ConfirmationRequired,
                    ErrorCode::ScopeViolation,
                    ErrorCode::SelfTarget,
                    ErrorCode::Denylisted,
                    ErrorCode::TargetElevated,
                ];
                let event = if policy_codes.contains(&e.code) {
                    AuditEvent::Refusal
                } else {
                    AuditEvent::Action
                };
                self.audit(AuditRecord {
                    event: Some(event),
                    app: Some(app.clone()),
                    pid: cand.facts.pid,
                    op: Some(op.as_str().into()),
                    role: note.role.map(|r| r.to_string()),
                    fingerprint: note.fingerprint.clone(),
                    text_len,
                    status: Some(
                        if event == AuditEvent::Refusal {
                            "refused"
                        } else {
                            "failed"
                        }
                        .into(),
                    ),
                    code: Some(e.code.as_str().into()),
                    ..AuditRecord::default()
                });
                self.after_call()?;
                return Err(e);
            }
        };
        let now = control::now_ms();
        self.policy_mut().authority.spend(now);
        if note.approved_app {
            self.remember_app(&cand.facts);
        }
        self.audit(AuditRecord {
            event: Some(AuditEvent::Action),
            app: Some(app.clone()),
            pid: cand.facts.pid,
            op: Some(op.as_str().into()),
            role: note.role.map(|r| r.to_string()),
            fingerprint: note.fingerprint,
            text_len,
            channel: Some(out.result.channel.as_str().into()),
            status: Some(out.result.status.as_str().into()),
            ..AuditRecord::default()
        });
        let mut out = out;
        self.mark_new_windows(&mut out.change);
        if let Some(n) = self.bound_closed_note(&window, &out.change) {
            out.text.push_str(&n);
            out.tokens = deskpilot_core::tokens::count(&out.text);
        }
        self.stamp(&window, None);
        self.after_call()?;
        Ok(out)
    }

    /// When the action closed the bound window, says what happens to the grant (the
    /// next call moves it; refs of the closed window are gone).
    fn bound_closed_note(
        &mut self,
        window: &WindowInfo,
        change: &crate::session::Change,
    ) -> Option<String> {
        let wref = self.session.window_ref(&window.handle);
        change.closed_windows.contains(&wref).then(|| {
            format!(
                "\nthe grant's window [{wref}] closed: the next call moves the grant to the frontmost permitted window under a new revision; observe before acting"
            )
        })
    }

    /// Notes the refusal of each window an action opened.
    fn mark_new_windows(&mut self, change: &mut crate::session::Change) {
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

    /// Sends keys to the bound window under the policy. `target` must be the bound
    /// window (keys never bind): another window is `COMPUTER_SCOPE_VIOLATION`.
    /// A focused password field refuses with `COMPUTER_SECURE_INPUT`.
    pub async fn keys(
        &mut self,
        target: &Target,
        chord: Option<String>,
        text: Option<String>,
    ) -> Result<KeysOutcome, DriverError> {
        let (window, cand) = self.action_target("keys").await?;
        let app = cand.facts.app.clone();
        if !matches!(target, Target::Current) {
            let named = self.session.resolve_window(target).await?;
            if named.handle != window.handle {
                let e = fail(
                    ErrorCode::ScopeViolation,
                    format!(
                        "keys go to the bound window ({:?}) only; observe the other window first to move the grant there",
                        deskpilot_core::sanitize::one_line(&window.title)
                    ),
                );
                return Err(self.refuse(e, Some("keys"), Some(&app)));
            }
        }
        let revision = self
            .policy()
            .authority
            .active()
            .map(|g| g.revision)
            .unwrap_or(0);
        self.check_budget(revision, "keys", &app)?;
        let root = self.session.peek(&window).await?;
        let foc = focused(&root);
        let mut f = cand.facts.clone();
        f.focused_password = input_may_reach_password(&root);
        let text_len = Some(
            chord
                .as_deref()
                .or(text.as_deref())
                .map(|s| s.chars().count())
                .unwrap_or(0),
        );
        if let Some(r) = self.rules.check_input(&f) {
            let e = refused(r);
            self.audit(AuditRecord {
                event: Some(AuditEvent::Refusal),
                app: Some(app.clone()),
                pid: cand.facts.pid,
                op: Some("keys".into()),
                role: foc.map(|n| n.role.to_string()),
                text_len,
                status: Some("refused".into()),
                code: Some(e.code.as_str().into()),
                ..AuditRecord::default()
            });
            self.after_call()?;
            return Err(e);
        }
        let focused_label = foc.map(|n| n.name.clone()).unwrap_or_default();
        // Enter on a send-like control outside chat apps; and any key that activates
        // the focused control (space, Return) when the control itself is
        // irreversible ("Delete", "Pay"), in any app.
        let activates = chord.as_deref().is_some_and(|c| {
            c.split_whitespace().any(|k| {
                matches!(
                    k.rsplit('+').next().map(str::to_lowercase).as_deref(),
                    Some("space" | "return" | "enter" | "kp_enter" | "kp_space")
                )
            })
        }) || text
            .as_deref()
            .is_some_and(|t| t.contains([' ', '\n', '\r']));
        let irreversible = chord
            .as_deref()
            .and_then(|c| classify_keys(c, &app, &focused_label))
            .or_else(|| {
                foc.filter(|n| {
                    activates
                        && matches!(
                            n.role,
                            Role::Button
                                | Role::Link
                                | Role::Menuitem
                                | Role::Checkbox
                                | Role::Radio
                                | Role::Listitem
                                | Role::Treeitem
                                | Role::Tab
                        )
                })
                .and_then(|n| classify_act(Op::Click, n.role, &n.name))
            })
            .map(|m| format!("{:?} matched {}", m.matched, m.kind));
        let fp = foc.map(|n| fingerprint_of(&root, n)).unwrap_or_default();
        let what = match (&chord, &text) {
            (Some(c), _) => format!("keys {}", deskpilot_core::sanitize::one_line(c)),
            _ => format!(
                "type {} chars",
                text.as_deref().map_or(0, |t| t.chars().count())
            ),
        };
        let mut summary = format!("{what} in {}", deskpilot_core::sanitize::one_line(&app));
        if let Some(t) = &text {
            summary.push_str(&format!(": {:?}", payload_preview(t)));
        }
        let key = ActionKey::new(
            &format!(
                "{}/{}/{}",
                self.o.desktop_key, self.o.session, window.handle.0
            ),
            &fp,
            "keys",
            chord.as_deref().or(text.as_deref()),
        );
        let approved_apps = self.policy().approved_apps.clone();
        let gate = Self::gate(
            &self.o,
            &approved_apps,
            &cand.facts,
            key,
            screen_hash(&root),
            summary,
            irreversible,
        );
        let approved_app = match gate {
            Ok(a) => a,
            Err(e) => return Err(self.refuse(e, Some("keys"), Some(&app))),
        };
        let result = self
            .session
            .keys(&Target::Handle(window.handle.clone()), chord, text)
            .await;
        let status = match &result {
            Ok(_) => "executed".to_string(),
            Err(_) => "failed".to_string(),
        };
        if result.is_ok() {
            self.policy_mut().authority.spend(control::now_ms());
            if approved_app {
                self.remember_app(&cand.facts);
            }
        }
        self.audit(AuditRecord {
            event: Some(AuditEvent::Keys),
            app: Some(app.clone()),
            pid: cand.facts.pid,
            op: Some("keys".into()),
            role: foc.map(|n| n.role.to_string()),
            fingerprint: (!fp.is_empty()).then_some(fp),
            text_len,
            channel: result
                .as_ref()
                .ok()
                .map(|o| o.result.channel.as_str().to_string()),
            status: Some(status),
            code: result.as_ref().err().map(|e| e.code.as_str().to_string()),
            ..AuditRecord::default()
        });
        let mut out = result?;
        self.mark_new_windows(&mut out.change);
        if let Some(n) = self.bound_closed_note(&window, &out.change) {
            out.text.push_str(&n);
            out.tokens = deskpilot_core::tokens::count(&out.text);
        }
        self.after_call()?;
        Ok(out)
    }

    /// A pointer gesture at (`x`, `y`) in capture pixels relative to the window of
    /// `basis` (ARCHITECTURE.md §8). The host re-measures the bound window before
    /// dispatch: another revision, a moved or resized window, or a window that lost
    /// focus is `COMPUTER_STALE_BASIS`; a point outside the window is
    /// `COMPUTER_SCOPE_VIOLATION` (never a clamped click).
    pub async fn pointer(
        &mut self,
        basis: &Basis,
        x: f64,
        y: f64,
        action: PointerAction,
    ) -> Result<KeysOutcome, DriverError> {
        let op = format!("pointer_{action:?}").to_lowercase();
        let (window, cand) = self.action_target(&op).await?;
        let app = cand.facts.app.clone();
        let revision = self
            .policy()
            .authority
            .active()
            .map(|g| g.revision)
            .unwrap_or(0);
        if basis.revision != revision {
            let e = fail(
                ErrorCode::StaleBasis,
                format!(
                    "the basis is from revision {} but the grant is at revision {revision}; observe again for a new basis",
                    basis.revision
                ),
            );
            return Err(self.refuse(e, Some(&op), Some(&app)));
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
            let e = fail(
                ErrorCode::StaleBasis,
                "the basis window is gone; observe again",
            );
            return Err(self.refuse(e, Some(&op), Some(&app)));
        };
        let geometry = now.bounds.map(|b| (b.x, b.y, b.width, b.height));
        if geometry != Some((basis.x, basis.y, basis.width, basis.height)) {
            let e = fail(
                ErrorCode::StaleBasis,
                format!(
                    "the window moved or was resized since the basis was taken (basis {basis}, now {}); observe again for a new basis",
                    geometry.map_or("unknown".into(), |(x, y, w, h)| format!("{x},{y},{w}x{h}"))
                ),
            );
            return Err(self.refuse(e, Some(&op), Some(&app)));
        }
        if !now.active {
            let e = fail(
                ErrorCode::StaleBasis,
                "the window lost focus since the basis was taken; observe again (pointer input would land on whatever is on top)",
            );
            return Err(self.refuse(e, Some(&op), Some(&app)));
        }
        let (cw, ch) = (
            f64::from(basis.width) * basis.scale,
            f64::from(basis.height) * basis.scale,
        );
        if !(x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0 && x < cw && y < ch) {
            let e = fail(
                ErrorCode::ScopeViolation,
                format!(
                    "({x}, {y}) is outside the window ({cw}×{ch} capture pixels); coordinates are relative to the window's top-left corner and are never clamped"
                ),
            );
            return Err(self.refuse(e, Some(&op), Some(&app)));
        }
        self.check_budget(revision, &op, &app)?;
        let sx = basis.x + (x / basis.scale).floor() as i32;
        let sy = basis.y + (y / basis.scale).floor() as i32;
        let root = self.session.peek(&window).await?;
        let mut f = cand.facts.clone();
        f.focused_password = input_may_reach_password(&root);
        if let Some(r) = self.rules.check_input(&f) {
            return Err(self.refuse(refused(r), Some(&op), Some(&app)));
        }
        let summary = format!(
            "{op} at ({x}, {y}) in {}",
            deskpilot_core::sanitize::one_line(&app)
        );
        let key = ActionKey::new(
            &format!(
                "{}/{}/{}",
                self.o.desktop_key, self.o.session, window.handle.0
            ),
            &format!("{sx},{sy}"),
            &op,
            None,
        );
        let approved_apps = self.policy().approved_apps.clone();
        let approved_app = match Self::gate(
            &self.o,
            &approved_apps,
            &cand.facts,
            key,
            screen_hash(&root),
            summary,
            None,
        ) {
            Ok(a) => a,
            Err(e) => return Err(self.refuse(e, Some(&op), Some(&app))),
        };
        let result = self
            .session
            .pointer(
                &window,
                PointerParams {
                    window: window.handle.clone(),
                    action,
                    x: sx,
                    y: sy,
                    to: None,
                },
            )
            .await;
        if result.is_ok() {
            self.policy_mut().authority.spend(control::now_ms());
            if approved_app {
                self.remember_app(&cand.facts);
            }
        }
        self.audit(AuditRecord {
            event: Some(AuditEvent::Action),
            app: Some(app.clone()),
            pid: cand.facts.pid,
            op: Some(op.clone()),
            channel: result
                .as_ref()
                .ok()
                .map(|o| o.result.channel.as_str().to_string()),
            status: Some(if result.is_ok() { "executed" } else { "failed" }.into()),
            code: result.as_ref().err().map(|e| e.code.as_str().to_string()),
            ..AuditRecord::default()
        });
        let mut out = result?;
        self.mark_new_windows(&mut out.change);
        self.after_call()?;
        Ok(out)
    }

    /// Launches an app (`argv`, no shell) on the host's desktop and waits up to
    /// `wait_ms` for its first window. Launching acts on the desktop, so plan mode
    /// refuses it (`COMPUTER_SCOPE_VIOLATION`) and it is audited; it does not bind the
    /// grant (observe the new window to work in it).
    pub async fn launch(
        &mut self,
        argv: Vec<String>,
        wait_ms: Option<u64>,
    ) -> Result<deskpilot_protocol::types::LaunchResult, DriverError> {
        let now = control::now_ms();
        self.preflight(now)?;
        let program = argv.first().cloned().unwrap_or_default();
        if program.is_empty() {
            return Err(fail(
                ErrorCode::InvalidArgument,
                "say which program to launch, e.g. [\"mousepad\"]",
            ));
        }
        if self.o.settings.mode == Mode::Plan {
            let e = fail(
                ErrorCode::ScopeViolation,
                "plan mode is read-only: launching an app is an action. Change it with `deskpilot config set mode default`",
            );
            return Err(self.refuse(e, Some("launch"), Some(&program)));
        }
        let refuse_launch = |hit: &str| {
            fail(
                ErrorCode::Denylisted,
                format!(
                    "{hit:?} is a command interpreter, terminal or privilege tool: deskpilot launches applications, never programs that would run arbitrary commands outside every refusal (built-in rule, cannot be removed)"
                ),
            )
        };
        let called = std::path::Path::new(&program)
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if launch_refused(&called) {
            let e = refuse_launch(&called);
            return Err(self.refuse(e, Some("launch"), Some(&program)));
        }
        if let Some(opt) = argv.iter().skip(1).find(|a| a.starts_with('-')) {
            let e = fail(
                ErrorCode::InvalidArgument,
                format!(
                    "{:?}: launch takes an application and files or URLs to open, not options (an option can make an application run commands)",
                    deskpilot_core::sanitize::one_line(opt)
                ),
            );
            return Err(self.refuse(e, Some("launch"), Some(&program)));
        }
        // What would really run: an installed application's native binary.
        let app = match crate::apps::launchable(&program) {
            Ok(a) => a,
            Err(crate::apps::NotLaunchable::Missing(why)) => {
                let e = fail(ErrorCode::ElementNotFound, why);
                return Err(self.refuse(e, Some("launch"), Some(&program)));
            }
            Err(crate::apps::NotLaunchable::Refused(why)) => {
                let e = fail(ErrorCode::ScopeViolation, why);
                return Err(self.refuse(e, Some("launch"), Some(&program)));
            }
        };
        let real = Some(app.executable.clone());
        let real_name = app
            .executable
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if launch_refused(&real_name) {
            let e = refuse_launch(&real_name);
            return Err(self.refuse(e, Some("launch"), Some(&program)));
        }
        let facts = TargetFacts {
            app: called.clone(),
            title: String::new(),
            pid: None,
            uid: None,
            exe: Some(real_name.clone()),
            focused_password: false,
        };
        if let Some(r) = self.rules.check_window(&facts) {
            return Err(self.refuse(refused(r), Some("launch"), Some(&program)));
        }
        self.ensure_grant(now)?;
        // Launching is an action on a new app: the mode decides (first use asks in
        // `default`, the allow-list rules `accept-edits` and `unattended`).
        let payload = argv.join("\u{0}");
        let key = ActionKey::new(
            &format!("{}/{}/launch", self.o.desktop_key, self.o.session),
            &real
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            "launch",
            Some(&payload),
        );
        let summary = format!("launch {}", payload_preview(&argv.join(" ")));
        let approved_apps = self.policy().approved_apps.clone();
        let approved_app = match Self::gate(&self.o, &approved_apps, &facts, key, 0, summary, None)
        {
            Ok(a) => a,
            Err(e) => return Err(self.refuse(e, Some("launch"), Some(&program))),
        };
        if approved_app {
            self.remember_app(&facts);
        }
        let r = self
            .session
            .driver()
            .launch(deskpilot_protocol::types::LaunchParams {
                command: argv,
                wait_ms,
            })
            .await;
        self.audit(AuditRecord {
            event: Some(AuditEvent::Action),
            op: Some("launch".into()),
            text_len: Some(payload.chars().count()),
            app: Some(program),
            pid: r.as_ref().ok().map(|l| l.pid),
            status: Some(if r.is_ok() { "executed" } else { "failed" }.into()),
            code: r.as_ref().err().map(|e| e.code.as_str().to_string()),
            ..AuditRecord::default()
        });
        self.session.save()?;
        r
    }

    /// Issues a user grant (`deskpilot grant --user`): replaces any grant, lifts a
    /// stop's cooldown, and binds to `target` (a window grant when `scope` is
    /// `Window`). Only a user channel may call this.
    pub async fn issue_user_grant(
        &mut self,
        scope: Scope,
        target: &Target,
    ) -> Result<GrantView, DriverError> {
        if !self.o.settings.enabled {
            self.preflight(control::now_ms())?;
        }
        // Another live session's grant blocks a user grant too: check before
        // anything changes (nothing is lost when this fails).
        let now0 = control::now_ms();
        if let LockOutcome::HeldBy(h) = self.acquire_lock("pending", now0)? {
            return Err(fail(
                ErrorCode::NoGrant,
                format!(
                    "another deskpilot session ({:?}, pid {}) holds this desktop's grant; run `deskpilot stop` first",
                    deskpilot_core::sanitize::one_line(&h.session),
                    h.pid
                ),
            ));
        }
        // The grant belongs to this boot (see preflight).
        self.policy_mut().boot_id = control::boot_id();
        let _ = std::fs::remove_file(self.budget_path());
        control::clear_stop()?;
        let now = control::now_ms();
        if let Some(s) = control::read_stop() {
            self.policy_mut().stop_seen_ms = s.at_ms;
        }
        self.policy_mut().stop_seen_ms = self.policy().stop_seen_ms.max(now);
        if let Some(old) = self.policy_mut().authority.revoke() {
            self.audit_grant(
                AuditEvent::GrantRevoked,
                &old,
                old.target_app.as_deref(),
                None,
            );
        }
        let opts = self.grant_options(scope);
        let id = format!("u-{}", &random_hex()[..8]);
        let g = self
            .policy_mut()
            .authority
            .issue(Issuer::User, &opts, id, now)
            .map_err(refused)?
            .clone();
        self.policy_mut().issued_ms = Some(now);
        match self.acquire_lock(&g.grant_id, now)? {
            LockOutcome::HeldBy(h) => {
                let _ = self.policy_mut().authority.revoke();
                return Err(fail(
                    ErrorCode::NoGrant,
                    format!(
                        "another deskpilot session ({:?}, pid {}) holds this desktop's grant; run `deskpilot stop` first",
                        h.session, h.pid
                    ),
                ));
            }
            LockOutcome::Acquired { .. } => {}
        }
        self.audit_grant(AuditEvent::GrantIssued, &g, None, None);
        self.refresh_user_lease(now);
        match self.bind_user_grant(target, now).await {
            Ok(view) => Ok(view),
            Err(e) => {
                // A grant that could not be bound is not left holding the desktop.
                self.close_grant(AuditEvent::GrantRevoked);
                let _ = self.session.save();
                Err(e)
            }
        }
    }

    async fn bind_user_grant(
        &mut self,
        target: &Target,
        now: u64,
    ) -> Result<GrantView, DriverError> {
        let en = self.enumerate().await?;
        let window = match target {
            Target::Current => {
                let rules = self.rules.clone();
                self.policy_mut()
                    .authority
                    .bind_frontmost(&en.list(), &rules, now)
                    .map_err(refused)?;
                None
            }
            t => Some(self.bind_target(t, &en).await?),
        };
        if window.is_none()
            && let Some(g) = self.policy().authority.active().cloned()
        {
            self.audit_grant(AuditEvent::GrantRebound, &g, g.target_app.as_deref(), None);
        }
        self.after_call()?;
        self.grant_view()
            .ok_or_else(|| fail(ErrorCode::NoGrant, "the grant could not be bound"))
    }

    /// Revokes the active grant (the user's `deskpilot revoke`, or the end of a run).
    pub fn revoke(&mut self) -> Result<Option<GrantView>, DriverError> {
        let view = self.grant_view();
        self.close_grant(AuditEvent::GrantRevoked);
        self.session.save()?;
        Ok(view)
    }

    /// Applies a stop raised on this host's signal: revoke now, cooldown from now,
    /// and lower the signal.
    pub fn apply_stop(&mut self) {
        self.o.stop.clear();
        let now = control::now_ms();
        if let Some(g) = self.policy_mut().authority.stop(now) {
            self.policy_mut().issued_ms = None;
            self.audit_grant(AuditEvent::GrantStopped, &g, g.target_app.as_deref(), None);
            self.release_lock();
        }
        let _ = self.session.save();
    }

    /// Describes the grant without issuing or binding one.
    pub fn describe(&mut self) -> Option<GrantView> {
        let _ = self.preflight(control::now_ms());
        let _ = self.session.save();
        self.grant_view()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_terminals_and_privilege_tools_are_never_launched() {
        for name in [
            "sh",
            "bash",
            "python3",
            "python3.11",
            "perl5.36",
            "env",
            "xterm",
            "sudo",
            "node",
            "gnome-terminal",
            "BASH",
        ] {
            assert!(launch_refused(name), "{name}");
        }
        for name in [
            "mousepad",
            "gnome-calculator",
            "zenity",
            "soffice.bin",
            "chromium",
            "stellarium",
            "shotwell",
        ] {
            assert!(!launch_refused(name), "{name}");
        }
        assert!(crate::apps::resolve_program("sh").is_some_and(|p| p.is_absolute()));
        assert_eq!(crate::apps::resolve_program("no-such-program-xyz"), None);
    }

    #[test]
    fn a_basis_round_trips_and_rejects_garbage() {
        let b = Basis::parse("r3:10,20,640x480@1").unwrap();
        assert_eq!(
            b,
            Basis {
                revision: 3,
                x: 10,
                y: 20,
                width: 640,
                height: 480,
                scale: 1.0
            }
        );
        assert_eq!(b.to_string(), "r3:10,20,640x480@1");
        assert_eq!(Basis::parse("r2:-5,0,100x50@0.5").unwrap().scale, 0.5);
        for bad in [
            "",
            "3:1,2,3x4@1",
            "r3:1,2,3x4",
            "r3:1,2,0x4@1",
            "r3:1,2,3x4@0",
            "rX:1,2,3x4@1",
            "r1:1,2,3,4x5@1",
        ] {
            assert_eq!(
                Basis::parse(bad).unwrap_err().code,
                ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
    }
}

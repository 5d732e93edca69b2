//! The host: a [`Session`] with the user's policy around it (docs/ARCHITECTURE.md §7–§8).
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
//!
//! The code is laid out by step: preflight, the grant and its lock, budget and
//! audit in `grant.rs`; enumeration, binding and the reads (`apps`,
//! `observe`, `find`, `wait`) in `bind.rs`; the one action pipeline every effect on
//! the desktop passes through ([`Host::act`], [`Host::keys`], [`Host::pointer`]) in
//! `pipeline.rs`; confirmations and the approvals file in `approvals.rs`; `launch` in
//! `launch.rs`. The rules themselves are pure functions of `deskpilot-policy`.

use std::path::PathBuf;
use std::sync::Arc;

use deskpilot_core::Handle;
use deskpilot_policy::grant::Candidate;
use deskpilot_policy::refusal::{Refusal, Refusals, SelfFacts};
use deskpilot_protocol::types::{AppInfo, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

use crate::audit::AuditLog;
use crate::config::Effective;
use crate::control::{self, StopSignal};
use crate::session::Session;
use crate::store::state_dir;
use deskpilot_protocol::Result;

pub use approvals::{approve, pending_approval};
pub use deskpilot_policy::view::{Basis, GrantView, PolicyState};

mod approvals;
mod bind;
mod clipboard;
pub use clipboard::ClipboardOutcome;
mod grant;
mod launch;
pub use bind::window_facts;
pub use launch::vet_launch;
mod aim;
pub(crate) mod effect;
pub(crate) mod files;
mod judge;
mod pipeline;
pub use judge::TEACH_WAIT_MS;
pub mod pixels;
mod teach;

/// Asks the user (on a terminal) whether to allow an action described by the string;
/// `true` means yes.
pub type Prompt = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Reads the config again and returns the effective settings for this desktop: a
/// long-lived host (an MCP server, a run) applies the user's change from its next call.
pub type Reload = Arc<dyn Fn() -> Result<Effective> + Send + Sync>;

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
    /// The user's runtime directory, where `deskpilot stop` writes its record (every
    /// host of the user reads it): [`state_dir`] unless a test passes its own.
    pub runtime_dir: PathBuf,
    /// Re-reads the config before every call ([`Host::refresh_settings`]); `None`
    /// keeps [`HostOptions::settings`] for the host's life.
    pub reload: Option<Reload>,
    /// The device the driver works on (`local`, `ssh:alice@lab`, `adb:SERIAL`;
    /// docs/ARCHITECTURE.md §15): named in the audit and in every result. On any
    /// other than `local`, the refusals judge the facts the driver reports, never
    /// this machine's processes.
    pub device: String,
    /// What the person at the desktop sees of the agent (docs/ARCHITECTURE.md
    /// §7.19): set by long-lived hosts on a desktop with a display (`mcp`, `run`)
    /// when the config's `presence` is on; `None` shows nothing.
    pub presence: Option<crate::presence::SharedPresence>,
}

impl HostOptions {
    /// The driver runs on another machine or a phone.
    pub fn remote(&self) -> bool {
        self.device != "local"
    }

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
            runtime_dir: state_dir(),
            reload: None,
            device: "local".into(),
            presence: None,
        }
    }
}

/// A window as the host enumerated it, with the refusal that covers it, if any.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListedWindow {
    #[serde(rename = "ref")]
    pub ref_: String,
    #[serde(flatten)]
    pub window: WindowInfo,
    /// The grant is bound to this window.
    pub bound: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refusal>,
    /// Why the window cannot be seen now ([`WindowInfo::not_viewable`]:
    /// `unmapped`, `minimized`, `other_workspace`, `covered`); acting on it is
    /// refused until it is shown (docs/ARCHITECTURE.md §7.11).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_viewable: Option<&'static str>,
}

/// An application and its windows as the host lists them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListedApp {
    pub name: String,
    pub pid: Option<u32>,
    pub status: deskpilot_protocol::types::AppStatus,
    /// The toolkit the driver reported (`GTK`, `Qt`, `Chromium`…; for an app with
    /// no tree, the one its libraries name), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<String>,
    /// The most an agent may do in this app (docs/ARCHITECTURE.md §7.22): `read`,
    /// `click`, `type` (the default) or `code` (a terminal). A terminal the user
    /// did not grant shows `code` with every window refused (`refused` says how to
    /// grant it).
    pub tier: deskpilot_policy::tier::Tier,
    /// Whether the app runs what is typed into it (a terminal by name, or a
    /// process holding a pty's master end): it needs the `code` tier.
    pub code: bool,
    /// The executable the host measured (`/proc/PID/exe`), the name a tier grant
    /// (`app_tiers = ["EXE=code"]`) and the allow-list match, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
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
    /// The app of window handle `handle` (`"<bus>|<path>"`) when it is listed as not
    /// responding.
    fn frozen_app_of(&self, handle: &str) -> Option<&AppInfo> {
        let bus = handle.split('|').next()?;
        self.apps.iter().find(|a| {
            a.status == deskpilot_protocol::types::AppStatus::NotResponding
                && a.handle.as_str().split('|').next() == Some(bus)
        })
    }
}

fn refused(r: Refusal) -> ComputerError {
    ComputerError::new(r.code, r.reason)
}

fn fail(code: ErrorCode, msg: impl Into<String>) -> ComputerError {
    ComputerError::new(code, msg)
}

/// An id of `digits` hex digits (at most 32) from the system's randomness
/// ([`deskpilot_os::random_hex`]): grant ids (8) and approval ids (10).
///
/// Errors: `COMPUTER_INTERNAL` when the system has no randomness to give; nothing
/// weaker stands in for it.
fn new_id(digits: usize) -> Result<String> {
    let mut hex = deskpilot_os::random_hex(16).map_err(|e| {
        ComputerError::internal(format!(
            "the system gave no randomness for an id ({e}); nothing was granted or asked"
        ))
    })?;
    hex.truncate(digits);
    Ok(hex)
}

/// The measured facts deskpilot refuses on: its own process tree, its uid, and the
/// user's lists from the config.
pub fn refusals_for(settings: &Effective) -> Refusals {
    refusals_on(settings, true)
}

/// [`refusals_for`] for a driver on this machine (`local`) or another: a remote
/// driver's pids are its machine's, so deskpilot's own process tree there is
/// refused by that machine's guarded driver, not by pid here.
pub fn refusals_on(settings: &Effective, local: bool) -> Refusals {
    let me = std::process::id();
    Refusals {
        me: SelfFacts {
            pids: if local {
                control::ancestors(me)
            } else {
                Vec::new()
            },
            uid: deskpilot_os::current_uid(),
            names: settings.self_apps.clone(),
        },
        user_denylist: settings.deny_apps.clone(),
        allow_terminals: settings.allow_terminals.clone(),
        app_tiers: settings.app_tiers.clone(),
        protected: protected_dirs(),
        home: deskpilot_os::home_dir().map(|h| h.to_string_lossy().into_owned()),
    }
}

/// deskpilot's own directories, which no effect may write or navigate into: the
/// config file's directory, the runtime (state) directory with the approvals and the
/// stop record, the audit log's directory, and `deskpilot` in the session's and the
/// login's runtime directories, where hosts keep their control sockets
/// (docs/ARCHITECTURE.md §7.17).
pub fn protected_dirs() -> Vec<String> {
    let mut dirs: Vec<PathBuf> = vec![state_dir()];
    dirs.extend(crate::config::config_path().parent().map(PathBuf::from));
    dirs.extend(crate::audit::audit_path().parent().map(PathBuf::from));
    // Where hosts' control sockets live besides the runtime directory
    // (`control::scan_dirs`): the session's and the login's runtime directories'
    // `deskpilot`.
    dirs.extend(
        std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|v| !v.is_empty())
            .map(|x| PathBuf::from(x).join("deskpilot")),
    );
    if cfg!(target_os = "linux") {
        dirs.push(PathBuf::from(format!(
            "/run/user/{}/deskpilot",
            deskpilot_os::current_uid()
        )));
    }
    let mut out: Vec<String> = dirs
        .into_iter()
        .filter(|d| d.is_absolute() && d.parent().is_some())
        .map(|d| d.display().to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What apps launched into a sandbox must not see (docs/ARCHITECTURE.md §12):
/// deskpilot's own directories — the config file's, the runtime directory, the
/// audit log's — where each is deskpilot's own (named `deskpilot…`), else the
/// files of deskpilot's in it (a config at `/etc/x/c.toml`: that file and its
/// seal; a runtime directory chosen elsewhere: the directories and files in it at
/// the time, and its approvals and stop records), so a shared directory such as
/// `/tmp` or `$HOME` is never hidden as a whole. Paths are made absolute.
pub fn own_paths() -> (Vec<PathBuf>, Vec<PathBuf>) {
    use std::path::{Path, PathBuf};
    let abs = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
    let ours = |d: &Path| {
        d.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("deskpilot"))
    };
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    let config = abs(crate::config::config_path());
    let seal = crate::config::seal::seal_path(&config);
    let audit = abs(crate::audit::audit_path());
    for (file, beside) in [(config, vec![seal]), (audit, Vec::new())] {
        match file.parent() {
            Some(d) if ours(d) => dirs.push(d.to_path_buf()),
            _ => {
                files.push(file);
                files.extend(beside);
            }
        }
    }
    let runtime = abs(state_dir());
    if ours(&runtime) {
        dirs.push(runtime);
    } else {
        // A runtime directory chosen elsewhere holds only deskpilot's entries
        // (state files, records, `sandbox-N/`, `hosts/`): each one there now is
        // hidden (a directory) or masked (a file), and the approvals and stop
        // records are masked whenever they exist.
        files.extend(["approvals.json", "stop.json"].map(|f| runtime.join(f)));
        for entry in std::fs::read_dir(&runtime).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(entry.path()),
                Ok(t) if t.is_file() => files.push(entry.path()),
                _ => {}
            }
        }
    }
    (dirs, files)
}

/// A session with the host's policy around it.
pub struct Host {
    session: Session,
    o: HostOptions,
    rules: Refusals,
    warnings: Vec<String>,
    /// Each window's device bounds as the last enumeration measured them, by
    /// handle, for windows on screen only: where the presence draws the bound
    /// window's frame (none for a window unmapped, minimised or on another workspace).
    measured: Vec<(String, deskpilot_core::Bounds)>,
    /// Teach mode (docs/ARCHITECTURE.md §7.19): the explanation of the step being
    /// dispatched, shown in a bubble at its element before it runs.
    teach: Option<judge::Teach>,
    /// The person pressed Exit: teach steps are refused from now on.
    teaching_over: bool,
}

impl Host {
    /// Wraps `session` with the policy of `opts`.
    pub fn new(session: Session, opts: HostOptions) -> Host {
        let rules = refusals_on(&opts.settings, !opts.remote());
        Host {
            session,
            o: opts,
            rules,
            warnings: Vec::new(),
            measured: Vec::new(),
            teach: None,
            teaching_over: false,
        }
    }

    /// Applies the config as it is now ([`HostOptions::reload`]): a changed config
    /// replaces the settings and the refusal lists before the call goes on, so a
    /// narrower mode or deny-list applies at once. A config that cannot be read fails
    /// the call with its error (nothing runs under settings the user did not write).
    pub fn refresh_settings(&mut self) -> Result<()> {
        let Some(reload) = self.o.reload.clone() else {
            return Ok(());
        };
        let now = reload()?;
        if now != self.o.settings {
            tracing::info!("config changed: the new settings apply from this call");
            self.rules = refusals_on(&now, !self.o.remote());
            self.o.settings = now;
        }
        Ok(())
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

    /// Sets what the person at the desktop sees of the agent
    /// ([`HostOptions::presence`]) and shows the grant there at once.
    pub fn set_presence(&mut self, p: Option<crate::presence::SharedPresence>) {
        self.o.presence = p;
        self.show_presence();
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
            device: self.o.remote().then(|| self.o.device.clone()),
        })
    }
}

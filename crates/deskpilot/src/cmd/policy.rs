//! `deskpilot grant|revoke|stop|approve`: the user's side of the policy.
//!
//! `grant --user` and `approve` are user channels: they need a terminal and ask
//! before they act, so an agent driving the CLI without one cannot approve its own
//! actions or lift a stop. `stop` needs nothing: stopping only ever narrows.

use deskpilot_host::control::{self, StopReply};
use deskpilot_host::host::{approve as approve_id, pending_approval};
use deskpilot_host::store::state_dir;
use deskpilot_policy::grant::{STOP_COOLDOWN_MS, Scope};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::session::{Ctx, ask_yes, open, to_target};
use crate::TargetArgs;
use crate::output::print_ok;
use deskpilot_protocol::Result;

/// The user's own channel: a terminal the user types in, never reached through an
/// app deskpilot drives ([`from_outside`]).
///
/// Errors: those of [`from_outside`]; `COMPUTER_CONFIRMATION_REQUIRED` when stdin is
/// not a terminal.
pub fn need_terminal(what: &str) -> Result<()> {
    use std::io::IsTerminal;
    from_outside(what)?;
    if std::io::stdin().is_terminal() {
        return Ok(());
    }
    Err(ComputerError::new(
        ErrorCode::ConfirmationRequired,
        format!(
            "{what} must come from you at a terminal (stdin is not one): it is how the user, not the agent, says yes{}",
            if what.contains("config") {
                "; a provisioning script outside deskpilot's sandboxes can pass --yes instead"
            } else {
                ""
            }
        ),
    ))
}

/// The variable every process a deskpilot sandbox starts carries
/// (`deskpilot_driver_linux::sandbox::MARKER_VAR`).
const SANDBOX_MARKER: &str = "DESKPILOT_SANDBOX";

/// A change to the config without a terminal (`config set|unset|trust --yes`): the
/// route for provisioning scripts (docs/ARCHITECTURE.md §7.14), allowed where
/// [`from_outside`] allows.
pub fn provisioning(what: &str) -> Result<()> {
    from_outside(&format!("{what} without a terminal (--yes)"))
}

/// Whether this process may speak for the user (approve, grant, configure): refused
/// when this process or any of its ancestors runs inside a deskpilot sandbox (their
/// environments carry the sandbox marker; removing it from one's own changes
/// nothing) or was started by a deskpilot process (an ancestor other than this one
/// runs deskpilot's executable): what deskpilot drives — an app or a terminal in a
/// sandbox, a program an MCP server or a run launched — never gets here, at a
/// terminal or not (docs/ARCHITECTURE.md §7.7, §7.14). A terminal the user allowed
/// deskpilot to type into on their own desktop is the user's grant (code tier,
/// §7.4).
///
/// Errors: `COMPUTER_SCOPE_VIOLATION` naming what was found.
pub fn from_outside(what: &str) -> Result<()> {
    let why = if inside_sandbox() {
        Some("it runs inside a deskpilot sandbox".to_owned())
    } else {
        started_by_deskpilot().map(|p| format!("it was started by a deskpilot process (pid {p})"))
    };
    match why {
        None => Ok(()),
        Some(why) => Err(ComputerError::new(
            ErrorCode::ScopeViolation,
            format!(
                "{what} is refused here: {why}, so an app deskpilot drives could be asking. Run it from your own shell or provisioning script, outside deskpilot's sandboxes"
            ),
        )),
    }
}

/// Whether this process or any of its ancestors runs inside a deskpilot sandbox:
/// its environment, or one an ancestor started with, carries the sandbox marker
/// as a sandbox puts it on the programs it starts — the sandbox's directory, an
/// absolute path. A sandbox's number there is the user's choice of desktop (the
/// `--sandbox` option's variable, as a remote machine's `deskpilot driver` serving
/// a sandbox desktop is started with), not a mark of being inside one.
pub fn inside_sandbox() -> bool {
    std::env::var_os(SANDBOX_MARKER).is_some_and(|v| v.to_string_lossy().starts_with('/'))
        || deskpilot_os::ancestors(std::process::id())
            .iter()
            .any(|&p| deskpilot_os::process_env_has(p, SANDBOX_MARKER, "/"))
}

/// The nearest ancestor, other than this process, that runs deskpilot's own
/// executable.
fn started_by_deskpilot() -> Option<u32> {
    let me = std::process::id();
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))?;
    deskpilot_os::ancestors(me)
        .into_iter()
        .filter(|&p| p != me)
        .find(|&p| deskpilot_os::process_exe(p).is_some_and(|e| e == exe))
}

/// Refuses `what` (`deskpilot driver`, `sandbox run`) inside a deskpilot sandbox: an
/// app the agent drives there must not serve a driver of its own or start programs
/// past the host's policy (docs/ARCHITECTURE.md §7.16).
///
/// Errors: `COMPUTER_SCOPE_VIOLATION`.
pub fn not_inside_sandbox(what: &str) -> Result<()> {
    if inside_sandbox() {
        return Err(ComputerError::new(
            ErrorCode::ScopeViolation,
            format!(
                "{what} is refused inside a deskpilot sandbox, where the apps an agent drives run: run it from your own shell"
            ),
        ));
    }
    Ok(())
}

/// `deskpilot grant`: shows the grant; with `--user`, issues a user grant.
pub async fn grant(ctx: &Ctx, user: bool, window_scope: bool, target: TargetArgs) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    if !user {
        let view = h.describe();
        let text = match &view {
            Some(g) => g.line(),
            None => {
                "no active grant; the next call issues one (when computer use is on)".to_string()
            }
        };
        print_ok(ctx.json, &serde_json::json!({ "grant": view }), &text);
        return Ok(());
    }
    need_terminal("a user grant")?;
    let t = to_target(&target);
    let scope = if window_scope {
        Scope::Window
    } else {
        Scope::Desktop
    };
    if window_scope && matches!(t, deskpilot_host::Target::Current) {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "--scope window needs --app or --window to name the window",
        ));
    }
    if !ask_yes(
        "deskpilot: grant the agent this desktop (within the refusals and budget) and lift any stop?",
    ) {
        return Err(ComputerError::new(
            ErrorCode::ConfirmationRequired,
            "you declined; no grant was issued",
        ));
    }
    let view = h.issue_user_grant(scope, &t).await?;
    print_ok(
        ctx.json,
        &serde_json::json!({ "grant": view }),
        &view.line(),
    );
    Ok(())
}

/// `deskpilot revoke`: ends the active grant of this session.
pub async fn revoke(ctx: &Ctx) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let view = h.revoke()?;
    let text = match &view {
        Some(g) => format!("revoked {}", g.grant_id),
        None => "no active grant".into(),
    };
    print_ok(ctx.json, &serde_json::json!({ "revoked": view }), &text);
    Ok(())
}

/// `deskpilot stop`: revokes every grant, aborts running hosts, starts the cooldown.
pub async fn stop(json: bool) -> Result<()> {
    let (rec, replies, locks) = stop_now().await?;
    let mut text = format!(
        "stopped: grants revoked; agent-issued grants are refused for {} s (`deskpilot grant --user` lifts this)",
        STOP_COOLDOWN_MS / 1000
    );
    for r in &replies {
        match (&r.host, &r.error) {
            (Some(h), _) => text.push_str(&format!(
                "\n  aborted {} host pid {} (session {:?})",
                h.kind, h.pid, h.session
            )),
            (None, Some(e)) => {
                text.push_str(&format!("\n  could not reach {}: {e}", r.socket.display()))
            }
            (None, None) => {}
        }
    }
    print_ok(
        json,
        &serde_json::json!({ "stop": rec, "hosts": replies, "locks_cleared": locks }),
        &text,
    );
    Ok(())
}

/// What `deskpilot stop`, the stop hotkey and the indicator's Stop do: the stop
/// record (grants revoked, agent grants refused for the cooldown), every running
/// host aborted through its control socket, every grant lock cleared.
pub async fn stop_now() -> Result<(control::StopRecord, Vec<StopReply>, usize), ComputerError> {
    let rec = control::write_stop(control::now_ms())?;
    let replies: Vec<StopReply> = control::stop_hosts().await;
    // Nothing may keep a desktop locked past a stop (a stale or planted record).
    let locks = control::clear_grant_locks();
    Ok((rec, replies, locks))
}

/// Where the user presses the stop hotkey: the desktop's X display, or, when the
/// agent works on another device, this machine's own (`None`: `$DISPLAY`).
pub fn hotkey_display(
    ctx: &Ctx,
    desktop: &deskpilot_driver_linux::desktop::Desktop,
) -> Option<String> {
    if ctx.device.is_remote() {
        return None;
    }
    desktop
        .vars
        .iter()
        .find(|(k, _)| k == "DISPLAY")
        .map(|(_, v)| v.clone())
        .or_else(|| Some(desktop.display.clone()).filter(|d| d.starts_with(':')))
}

/// Grabs the stop hotkey (`stop_hotkey`, default Ctrl+Shift+Escape) for a long-lived
/// host of `kind` (`mcp`, `run`): on the desktop's X display, or for another device
/// on this machine's own (`$DISPLAY`), where the user sits. Each press does what
/// `deskpilot stop` does. Says on stderr which chord is armed, or why none is (the
/// chord is taken, no X11), and returns the grab to keep alive.
pub fn arm_stop_hotkey(
    kind: &str,
    display: Option<&str>,
    chord: &str,
) -> Option<deskpilot_driver_linux::hotkey::StopHotkey> {
    use deskpilot_driver_linux::hotkey::StopHotkey;
    let rt = tokio::runtime::Handle::current();
    let who = kind.to_owned();
    let pressed = move || {
        let who = who.clone();
        rt.spawn(async move {
            match stop_now().await {
                Ok((_, replies, _)) => eprintln!(
                    "deskpilot {who}: stop hotkey pressed: grants revoked, {} host(s) aborted",
                    replies.iter().filter(|r| r.host.is_some()).count()
                ),
                Err(e) => eprintln!(
                    "deskpilot {who}: stop hotkey pressed, but the stop failed: {}",
                    e.message
                ),
            }
        });
    };
    match StopHotkey::grab(display, chord, pressed) {
        Ok(h) => {
            eprintln!(
                "deskpilot {kind}: stop hotkey {} on {} (stops every agent, like `deskpilot stop`)",
                h.chord(),
                h.display()
            );
            Some(h)
        }
        Err(e) => {
            eprintln!("deskpilot {kind}: warning: {e}");
            None
        }
    }
}

/// `deskpilot approve ID`: the user allows one pending action, once.
pub fn approve(json: bool, id: &str) -> Result<()> {
    need_terminal("an approval")?;
    let path = state_dir().join("approvals.json");
    let Some(summary) = pending_approval(&path, id)? else {
        return Err(ComputerError::new(
            ErrorCode::ConfirmationRequired,
            format!(
                "no pending approval {id:?}: it was used, expired, or never asked; retry the action to ask again"
            ),
        ));
    };
    if !ask_yes(&format!("deskpilot: approve {summary}, once?")) {
        return Err(ComputerError::new(
            ErrorCode::ConfirmationRequired,
            "you declined; the action stays refused",
        ));
    }
    let summary = approve_id(&path, id)?;
    print_ok(
        json,
        &serde_json::json!({ "approved": id, "action": summary }),
        &format!("approved {id}: {summary} (single use, within 5 min, void if the window changes)"),
    );
    Ok(())
}

//! `deskpilot sandbox start|run|env|stop|list`.

use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions, SandboxState};
use deskpilot_host::audit::AuditLog;
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

use crate::SandboxCmd;
use crate::output::print_ok;
use deskpilot_protocol::Result;

#[derive(Serialize)]
struct Started<'a> {
    sandbox: &'a SandboxState,
    env: std::collections::BTreeMap<String, String>,
}

/// The sandbox a `run`/`env`/`stop` addresses: `--sandbox N` or the only one.
fn chosen(sandbox: Option<u32>) -> Result<Sandbox> {
    if let Some(n) = sandbox {
        return Sandbox::open(n);
    }
    // A shell that joined a sandbox addresses that one.
    if let Some(n) = std::env::var("DBUS_SESSION_BUS_ADDRESS")
        .ok()
        .and_then(|b| deskpilot_driver_linux::desktop::sandbox_of_bus(&b))
    {
        return Sandbox::open(n);
    }
    let all = Sandbox::list();
    match all.as_slice() {
        [one] => Sandbox::open(one.display),
        [] => Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "no sandbox is running; start one with `deskpilot sandbox start`",
        )),
        many => Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!(
                "several sandboxes exist (displays {}); choose one with --sandbox N (`deskpilot sandbox list` shows them; `deskpilot sandbox stop --all` stops every one)",
                many.iter()
                    .map(|s| format!(":{}", s.display))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

pub async fn run(json: bool, sandbox: Option<u32>, cmd: SandboxCmd) -> Result<()> {
    match cmd {
        SandboxCmd::Start {
            display,
            no_wm,
            size: (width, height),
        } => {
            let sb = Sandbox::start(SandboxOptions {
                display: display.or(sandbox),
                width,
                height,
                window_manager: !no_wm,
                detach: true,
            })?;
            let n = sb.state().display;
            let text = format!(
                "sandbox started on display :{n} (session bus {})\n\
                 launch an app:   deskpilot --sandbox {n} sandbox run -- mousepad\n\
                 join from shell: eval \"$(deskpilot --sandbox {n} sandbox env)\"\n\
                 stop it:         deskpilot --sandbox {n} sandbox stop",
                sb.state().bus_address
            );
            print_ok(
                json,
                &Started {
                    sandbox: sb.state(),
                    env: sb.env(),
                },
                &text,
            );
            Ok(())
        }
        SandboxCmd::Run { command } => {
            super::policy::not_inside_sandbox("`deskpilot sandbox run`")?;
            let mut sb = chosen(sandbox)?;
            if !sb.is_alive() {
                return Err(ComputerError::new(
                    ErrorCode::InvalidArgument,
                    format!(
                        "the sandbox on display :{} is no longer running; start a new one with `deskpilot sandbox start`",
                        sb.state().display
                    ),
                ));
            }
            let (dirs, files) = deskpilot_host::own_paths();
            sb.hide_from_apps(dirs, files);
            let child = sb.spawn(&command);
            // The user's own launches are recorded like every effect.
            let rec = AuditRecord {
                time: deskpilot_host::audit::now_rfc3339(),
                session: "sandbox".into(),
                event: Some(AuditEvent::Action),
                app: command.first().cloned(),
                op: Some("sandbox_run".into()),
                text_len: Some(command.join(" ").chars().count()),
                status: Some(if child.is_ok() { "executed" } else { "failed" }.into()),
                code: child.as_ref().err().map(|e| e.code.as_str().into()),
                ..AuditRecord::default()
            };
            if let Err(e) = AuditLog::at_default_path().append(&rec) {
                eprintln!("warning: the audit log was not written: {e}");
            }
            let child = child?;
            let wrapper = child.id();
            // The app belongs to the sandbox now; it is stopped with it.
            std::mem::forget(child);
            let pid = app_behind(wrapper);
            let confined = if pid == wrapper {
                String::new()
            } else {
                format!(", confined by bubblewrap pid {wrapper}")
            };
            print_ok(
                json,
                &serde_json::json!({
                    "pid": pid,
                    "wrapper_pid": (pid != wrapper).then_some(wrapper),
                    "display": sb.state().display,
                    "command": command,
                }),
                &format!(
                    "started {} (pid {pid}{confined}) on display :{}",
                    command.join(" "),
                    sb.state().display
                ),
            );
            Ok(())
        }
        SandboxCmd::Env => {
            let sb = chosen(sandbox)?;
            print_ok(json, &sb.env(), &sb.shell_exports());
            Ok(())
        }
        SandboxCmd::Stop { all } => {
            let targets: Vec<u32> = if all {
                Sandbox::list().into_iter().map(|s| s.display).collect()
            } else {
                vec![chosen(sandbox)?.state().display]
            };
            for n in &targets {
                if let Ok(mut sb) = Sandbox::open(*n) {
                    sb.stop();
                }
            }
            print_ok(
                json,
                &serde_json::json!({ "stopped": targets }),
                &if targets.is_empty() {
                    "no sandbox to stop".to_string()
                } else {
                    format!(
                        "stopped {}",
                        targets
                            .iter()
                            .map(|n| format!(":{n}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
            );
            Ok(())
        }
        SandboxCmd::Watch { pid, start } => {
            let sb = chosen(sandbox)?;
            watch(sb, pid, start.or_else(|| deskpilot_os::process_start(pid)));
            Ok(())
        }
        SandboxCmd::List => {
            let all = Sandbox::list();
            let mut text = String::new();
            let mut rows = Vec::new();
            for s in &all {
                let alive = Sandbox::open(s.display).is_ok_and(|sb| sb.is_alive());
                text.push_str(&format!(
                    ":{}  {}  {} processes  {}\n",
                    s.display,
                    if alive { "running" } else { "dead" },
                    s.pids.len(),
                    s.dir.display()
                ));
                rows.push(serde_json::json!({ "sandbox": s, "running": alive }));
            }
            if all.is_empty() {
                text.push_str("no sandboxes; start one with `deskpilot sandbox start`");
            }
            print_ok(json, &serde_json::json!({ "sandboxes": rows }), &text);
            Ok(())
        }
    }
}

/// How often [`watch`] looks at the process it watches: 100 ms, so the sandbox is
/// gone well within 2 s of the process's end (stopping takes the rest).
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Stops `sb` once process `pid` (the same process, by its start time `start`, as
/// the parent gave it) has ended; returns
/// early when the sandbox stopped by other means (the process stopped it on exit).
fn watch(mut sb: Sandbox, pid: u32, start: Option<u64>) {
    loop {
        let alive = deskpilot_os::pid_alive(pid) && deskpilot_os::process_start(pid) == start;
        if !alive {
            sb.stop();
            return;
        }
        if !sb.is_alive() {
            return;
        }
        std::thread::sleep(WATCH_EVERY);
    }
}

/// Starts the watcher that stops sandbox `display` when this process ends, however it
/// ends: a `deskpilot sandbox watch` in its own process group and session, with no
/// standard streams (stdout may be a protocol stream), so neither a signal to this
/// process's group nor a hang-up reaches it.
pub fn spawn_watcher(display: u32) -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut c = std::process::Command::new(exe);
    c.args([
        "--sandbox",
        &display.to_string(),
        "sandbox",
        "watch",
        "--pid",
    ])
    .arg(std::process::id().to_string());
    if let Some(start) = deskpilot_os::process_start(std::process::id()) {
        c.arg("--start").arg(start.to_string());
    }
    c.env_remove("DESKPILOT_SANDBOX")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    deskpilot_os::own_process_group(&mut c);
    c.spawn().map(drop)
}

/// The process of the app a `sandbox run` started as `wrapper`: the app itself when
/// it ran unconfined, else the end of bubblewrap's chain of single children (its
/// namespace's init, the `sh -c 'exec "$0" "$@"'` shim, then the app), waited for
/// up to 1 s while the chain still ends in bubblewrap or that shim (an app that is
/// itself a shell is not waited on). `wrapper` when the chain cannot be read.
fn app_behind(wrapper: u32) -> u32 {
    let wrapping = |pid: u32| {
        deskpilot_os::process_exe(pid).is_some_and(|e| e == "bwrap")
            || std::fs::read(format!("/proc/{pid}/cmdline"))
                // The shim's script (`linux::confine`'s `STDIN_NULL`) is its argv[2].
                .is_ok_and(|c| {
                    c.split(|&b| b == 0)
                        .nth(2)
                        .is_some_and(|a| a.starts_with(br#"exec "$0""#))
                })
    };
    let start = std::time::Instant::now();
    loop {
        let mut pid = wrapper;
        while let [only] = deskpilot_os::children(pid)[..] {
            pid = only;
        }
        if !wrapping(pid) || start.elapsed() > std::time::Duration::from_secs(1) {
            return pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

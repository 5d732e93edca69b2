//! Command implementations, one file per family.

pub mod audit;
mod bench;
pub mod config;
mod demo;
mod doctor;
mod driver;
pub mod eval;
mod mcp;
mod policy;
mod presence;
mod run;
mod sandbox;
mod session;

use deskpilot_protocol::{ComputerError, ErrorCode};

pub use bench::app_key;

use crate::{Cli, Command};

/// Runs one command.
pub async fn run(cli: Cli) -> Result<(), ComputerError> {
    let json = cli.json;
    let new_sandbox = cli.sandbox.as_deref() == Some("new");
    let sandbox: Option<u32> = match cli.sandbox.as_deref() {
        None | Some("") => None,
        Some("new") if matches!(cli.command, Command::Mcp { .. }) => None,
        Some(n) => Some(n.parse().map_err(|_| {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "--sandbox {n:?}: give the sandbox's display number (see `deskpilot sandbox list`); only `deskpilot mcp --sandbox` starts a new one"
                ),
            )
        })?),
    };
    let valid_session = !cli.session.is_empty()
        && cli.session.len() <= 40
        && cli
            .session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_session {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "--session takes 1 to 40 letters, digits, '-' or '_' (e.g. --session agent-2)",
        ));
    }
    let device = crate::device::Device::parse(&cli.device)?;
    if device.is_remote() && cli.sandbox.is_some() {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "--sandbox and --device name two different desktops; give one of them",
        ));
    }
    let ctx = session::Ctx {
        json,
        sandbox,
        device,
        session: cli.session.clone(),
    };
    let local_only = match &cli.command {
        Command::Sandbox(_) => Some("sandbox"),
        Command::Config { .. } => Some("config"),
        Command::Demo { .. } => Some("demo"),
        Command::Driver => Some("driver"),
        Command::Bench { .. } => Some("bench"),
        Command::Eval(_) => Some("eval"),
        Command::ClipboardHold { .. } => Some("clipboard-hold"),
        _ => None,
    };
    if let Some(cmd) = local_only.filter(|_| ctx.device.is_remote()) {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!(
                "`deskpilot {cmd}` works on this machine only; drop --device {} (or run it on that machine)",
                ctx.device
            ),
        ));
    }
    match cli.command {
        Command::Doctor { fix } => match &ctx.device {
            crate::device::Device::Adb { serial } => doctor::android(json, serial.clone()).await,
            crate::device::Device::Ssh { .. } => doctor::remote(&ctx).await,
            crate::device::Device::Local => doctor::run(json, sandbox, fix).await,
        },
        Command::Sandbox(c) => sandbox::run(json, sandbox, c).await,
        Command::Apps => session::apps(&ctx).await,
        Command::Observe {
            target,
            scope,
            from,
            query,
            max_tokens,
        } => session::observe(&ctx, target, scope, from, query, max_tokens).await,
        Command::Read {
            ref_,
            from,
            to,
            tail,
        } => session::read(&ctx, ref_, from, to, tail).await,
        Command::Find {
            text,
            role,
            target,
            limit,
        } => session::find(&ctx, text, role, target, limit).await,
        Command::Act { ref_, op, value } => session::act(&ctx, ref_, op, value).await,
        Command::Keys { keys, text, target } => session::keys(&ctx, keys, text, target).await,
        Command::ClickAt {
            x,
            y,
            basis,
            button,
        } => session::click_at(&ctx, x, y, basis, button).await,
        Command::Screenshot {
            target,
            out,
            marks,
            ocr,
            max_side,
        } => session::screenshot(&ctx, target, out, marks, ocr, max_side).await,
        Command::Grant {
            user,
            scope,
            target,
        } => policy::grant(&ctx, user, scope == "window", target).await,
        Command::Revoke => policy::revoke(&ctx).await,
        Command::Stop => policy::stop(json).await,
        Command::Approve { id } => policy::approve(json, &id),
        Command::Config { cmd } => {
            let in_sandbox = crate::target::resolve(sandbox)
                .map(|d| d.sandbox.is_some())
                .unwrap_or(false);
            config::run(json, in_sandbox, cmd)
        }
        Command::Audit { tail } => audit::run(json, tail),
        Command::Wait {
            target,
            text,
            gone,
            role,
            name,
            window_title,
            timeout_ms,
        } => {
            session::wait(
                &ctx,
                target,
                session::WaitArgs {
                    text,
                    gone,
                    role,
                    name,
                    window_title,
                },
                timeout_ms,
            )
            .await
        }
        Command::Demo { keep, out } => demo::run(json, keep, out).await,
        Command::Driver => driver::run(sandbox).await,
        Command::Clipboard { cmd } => {
            let write = match cmd {
                crate::ClipboardCmd::Read => None,
                crate::ClipboardCmd::Write { text } if text == "-" => {
                    let mut t = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut t).map_err(|e| {
                        ComputerError::new(ErrorCode::InvalidArgument, format!("stdin: {e}"))
                    })?;
                    Some(t)
                }
                crate::ClipboardCmd::Write { text } => Some(text),
            };
            session::clipboard(&ctx, write).await
        }
        Command::ClipboardHold { display } => {
            // Only deskpilot's own clipboard write starts a holder: run by hand (by
            // an agent at a shell) it would set the clipboard past the user's
            // `clipboard` switch.
            let parent =
                std::fs::read_link(format!("/proc/{}/exe", std::os::unix::process::parent_id()));
            let me = std::fs::read_link("/proc/self/exe");
            if parent.is_err() || parent.ok() != me.ok() {
                return Err(ComputerError::new(
                    ErrorCode::InvalidArgument,
                    "`deskpilot clipboard-hold` is started by `deskpilot clipboard write` only; use that",
                ));
            }
            // And only while the user's switch allows the clipboard (on this
            // desktop or in sandboxes): a parent that became deskpilot after
            // starting this (an `exec`) gains nothing.
            let config = deskpilot_host::config::Config::load()?;
            if !config.effective(false).clipboard && !config.effective(true).clipboard {
                return Err(ComputerError::new(
                    ErrorCode::ScopeViolation,
                    "the clipboard is off for agents: `deskpilot config set clipboard true` allows it",
                ));
            }
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
                ComputerError::new(ErrorCode::InvalidArgument, format!("stdin: {e}"))
            })?;
            deskpilot_driver_linux::clipboard::serve(&display, &text, || {
                use std::io::Write as _;
                let mut out = std::io::stdout();
                let _ = writeln!(out, "ready");
                let _ = out.flush();
            })
        }
        Command::Mcp {
            http,
            socket,
            token_file,
            teach,
        } => {
            let transport = match (http, socket) {
                (Some(addr), _) => mcp::Transport::Http {
                    addr,
                    token_file: token_file.unwrap_or_else(deskpilot_mcp::default_token_path),
                },
                (None, Some(path)) => mcp::Transport::Unix(path),
                (None, None) => mcp::Transport::Stdio,
            };
            mcp::run(&ctx, new_sandbox, transport, teach).await
        }
        Command::Run {
            instruction,
            max_steps,
            observe_only,
        } => run::run(&ctx, instruction, max_steps, observe_only).await,
        Command::Bench { runs, apps, peers } => bench::run(cli.json, runs, apps, peers).await,
        Command::Eval(args) => eval_command(json, args).await,
    }
}

async fn eval_command(json: bool, args: crate::EvalArgs) -> Result<(), ComputerError> {
    use crate::EvalCmd;
    let mode = |s: &str| {
        deskpilot_agent::ObservationMode::from_name(s).ok_or_else(|| {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!("--observation {s:?}: use tree, pixels or hybrid"),
            )
        })
    };
    match args.cmd {
        Some(EvalCmd::Report { dir }) => eval::report(json, &dir),
        Some(EvalCmd::Merge { dirs, out }) => eval::merge(json, &dirs, &out),
        Some(EvalCmd::Attempt {
            task,
            suite,
            policy,
            observation,
            run,
            dir,
        }) => {
            eval::attempt::run(eval::attempt::AttemptSpec {
                task,
                suite,
                policy,
                observation: mode(&observation)?,
                run,
                dir,
            })
            .await
        }
        None => {
            let r = args.run;
            eval::run(
                json,
                eval::EvalOptions {
                    suite: r.suite.unwrap_or_else(eval::default_suite),
                    tasks: r.tasks,
                    policy: r.policy,
                    observation: mode(&r.observation)?,
                    jobs: r.jobs,
                    runs: r.runs,
                    out: r.out,
                    shard: r.shard,
                },
            )
            .await
        }
    }
}

//! Command implementations, one file per family.

pub mod audit;
pub mod config;
mod demo;
#[cfg(all(windows, not(deskpilot_stub)))]
mod demo_windows;
mod doctor;
mod driver;
mod mcp;
mod policy;
mod presence;
mod run;
mod sandbox;
mod session;

use deskpilot_protocol::{ComputerError, ErrorCode};

pub use deskpilot_tools::bench::app_key;
pub use deskpilot_tools::eval;

use crate::{Cli, Command};
use deskpilot_protocol::Result;

/// Runs one command.
pub async fn run(cli: Cli) -> Result<()> {
    let json = cli.json;
    // Where the caller runs decides first, before any desktop is looked for: the
    // user's channels and the commands that bypass a host are refused to what
    // deskpilot drives (docs/ARCHITECTURE.md §7.7, §7.16).
    where_from(&cli.command)?;

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
    let device = deskpilot_host::device::Device::parse(&cli.device)?;
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
            deskpilot_host::device::Device::Adb { serial } => {
                doctor::android(json, serial.clone()).await
            }
            deskpilot_host::device::Device::Ssh { .. } => doctor::remote(&ctx).await,
            deskpilot_host::device::Device::Local => doctor::run(json, sandbox, fix).await,
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
        Command::Launch { command, wait_ms } => session::launch(&ctx, command, wait_ms).await,
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
            let in_sandbox = session::resolve(sandbox)
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
        #[cfg(all(windows, not(deskpilot_stub)))]
        Command::Demo { keep: _, out } => demo_windows::run(json, out).await,
        #[cfg(not(all(windows, not(deskpilot_stub))))]
        Command::Demo { keep, out } => demo::run(json, keep, out).await,
        Command::Driver => driver::run(sandbox).await,
        Command::Completions { shell } => completions(shell),
        Command::Man => man(),
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
            #[cfg(unix)]
            let parent =
                std::fs::read_link(format!("/proc/{}/exe", std::os::unix::process::parent_id()));
            // No parent's executable to compare with: refused below.
            #[cfg(not(unix))]
            let parent: std::io::Result<std::path::PathBuf> =
                Err(std::io::ErrorKind::Unsupported.into());
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
        Command::Bench { runs, apps, peers } => {
            show(json, deskpilot_tools::bench::run(runs, apps, peers).await?);
            Ok(())
        }
        Command::Eval(args) => eval_command(json, args).await,
    }
}

async fn eval_command(json: bool, args: crate::EvalArgs) -> Result<()> {
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
        Some(EvalCmd::Report { dir }) => {
            show(json, eval::report(&dir)?);
            Ok(())
        }
        Some(EvalCmd::Merge { dirs, out }) => {
            show(json, eval::merge(&dirs, &out)?);
            Ok(())
        }
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
            let (shown, failed) = eval::run(eval::EvalOptions {
                suite: r.suite.unwrap_or_else(eval::default_suite),
                tasks: r.tasks,
                policy: r.policy,
                observation: mode(&r.observation)?,
                jobs: r.jobs,
                runs: r.runs,
                out: r.out,
                shard: r.shard,
            })
            .await?;
            match failed {
                None => {
                    show(json, shown);
                    Ok(())
                }
                Some(e) => {
                    // The results come before the failure for a person; a script
                    // reads them in the error's detail.
                    if !json {
                        show(false, shown);
                    }
                    Err(e)
                }
            }
        }
    }
}

/// Prints what a tool measured: one JSON document, or its text.
fn show(json: bool, shown: deskpilot_tools::Shown) {
    crate::output::print_ok(json, &shown.value, &shown.text);
}

/// `deskpilot completions SHELL`: the completion script on stdout.
fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "deskpilot", &mut out);
    write_stdout(&out)
}

/// `deskpilot man`: the manual page, roff, on stdout: the top-level page, then a
/// section per command.
fn man() -> Result<()> {
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .map_err(|e| ComputerError::internal(format!("cannot render the manual: {e}")))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("deskpilot-{}", sub.get_name());
        clap_mangen::Man::new(sub.clone().name(name))
            .render(&mut out)
            .map_err(|e| ComputerError::internal(format!("cannot render the manual: {e}")))?;
    }
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    match so.write_all(bytes).and_then(|()| so.flush()) {
        // `deskpilot man | head`: the reader had enough.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(ComputerError::internal(
            format!("cannot write to stdout: {e}"),
        )),
        _ => Ok(()),
    }
}

/// The checks of where the caller runs ([`policy::from_outside`],
/// [`policy::not_inside_sandbox`]) for the commands that need them.
fn where_from(command: &Command) -> Result<()> {
    use config::ConfigCmd;
    match command {
        Command::Approve { .. } => policy::from_outside("an approval"),
        Command::Grant { user: true, .. } => policy::from_outside("a user grant"),
        Command::Config {
            cmd: Some(ConfigCmd::Set { .. } | ConfigCmd::Unset { .. } | ConfigCmd::Trust { .. }),
        } => policy::from_outside("changing the config"),
        Command::Driver => policy::not_inside_sandbox("`deskpilot driver`"),
        Command::Sandbox(crate::SandboxCmd::Run { .. }) => {
            policy::not_inside_sandbox("`deskpilot sandbox run`")
        }
        _ => Ok(()),
    }
}

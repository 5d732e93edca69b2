//! `deskpilot apps|observe|find|act|keys|wait`: commands that work on a desktop
//! through a host session. Refs persist between invocations in the desktop's state
//! file (see `deskpilot_host::store`).

use std::sync::Arc;
use std::time::Duration;

use deskpilot_core::{Op, Role};
use std::sync::Mutex;

use deskpilot_host::config::Config;
use deskpilot_host::control::{ControlServer, HostInfo};
use deskpilot_host::host::{Basis, Host, HostOptions, Prompt};
use deskpilot_host::session::WaitFor;
use deskpilot_host::store::desktop_key;
use deskpilot_host::{ObserveOptions, Session, StateStore, Target};
use deskpilot_protocol::types::PointerAction;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};
use serde::Serialize;

use crate::TargetArgs;
use crate::output::print_ok;
use deskpilot_driver_linux::desktop::Desktop;
use deskpilot_protocol::Result;

/// Connects this OS's driver to a desktop (docs/ARCHITECTURE.md §6): on Linux the
/// AT-SPI2 driver, and on a sandbox apps the driver launches cannot see deskpilot's
/// own files ([`deskpilot_host::own_paths`]); on Windows the MSAA/USER32 driver of
/// the user's desktop; on macOS the AX driver.
///
/// Errors: the driver's own (`COMPUTER_PLATFORM_UNSUPPORTED` on other OSes, a
/// connection failure with its remedy).
pub async fn connect(desktop: &Desktop) -> Result<Arc<dyn Driver>> {
    #[cfg(all(windows, not(deskpilot_stub)))]
    {
        let _ = desktop;
        Ok(Arc::new(deskpilot_driver_windows::WindowsDriver::new()?))
    }
    #[cfg(all(target_os = "macos", not(deskpilot_stub)))]
    {
        let _ = desktop;
        Ok(Arc::new(deskpilot_driver_macos::MacDriver::connect(
            deskpilot_driver_macos::MacOptions::default(),
        )?))
    }
    #[cfg(not(all(any(windows, target_os = "macos"), not(deskpilot_stub))))]
    {
        let d: deskpilot_driver_linux::LinuxDriver =
            deskpilot_driver_linux::desktop::connect(desktop, deskpilot_host::own_paths()).await?;
        Ok(Arc::new(d))
    }
}

/// The desktop a command works on: `--sandbox N`, else the one this process is on.
/// On Windows and macOS that is the user's own desktop, named `windows` or `macos`
/// (sandboxes need Xvfb and are Linux only).
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` for a sandbox off Linux; on Linux, those
/// of [`deskpilot_driver_linux::desktop::resolve`].
pub fn resolve(sandbox: Option<u32>) -> Result<Desktop> {
    #[cfg(all(any(windows, target_os = "macos"), not(deskpilot_stub)))]
    {
        if let Some(n) = sandbox {
            return Err(ComputerError::new(
                ErrorCode::PlatformUnsupported,
                format!(
                    "--sandbox {n}: sandbox desktops (Xvfb) exist on Linux only; leave out --sandbox to work on this desktop"
                ),
            ));
        }
        Ok(Desktop {
            display: std::env::consts::OS.into(),
            bus_address: String::new(),
            sandbox: None,
            sandbox_dir: None,
            vars: Vec::new(),
        })
    }
    #[cfg(not(all(any(windows, target_os = "macos"), not(deskpilot_stub))))]
    {
        deskpilot_driver_linux::desktop::resolve(sandbox)
    }
}

/// Where a command runs: the desktop, and the session name the CLI's refs and grant
/// are kept under.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub json: bool,
    pub sandbox: Option<u32>,
    /// `cli` unless `--session` names another (separate refs, separate grant).
    pub session: String,
    /// `--device`: `local` unless another machine or a phone is named.
    pub device: deskpilot_host::device::Device,
}

/// The state-file key of a session on a desktop: the desktop's key, plus the session
/// name when it is not the default.
fn session_key(desktop: &Desktop, session: &str) -> String {
    let key = desktop_key(&desktop.display, &desktop.bus_address);
    if session == "cli" {
        return key;
    }
    // The name was checked to be [A-Za-z0-9_-]{1,40} (cmd::run).
    format!("{key}-{session}")
}

/// A terminal prompt when a user is at one (stdin and stderr are terminals): asks on
/// stderr, reads the answer from the terminal.
pub fn tty_prompt() -> Option<Prompt> {
    use std::io::IsTerminal;
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return None;
    }
    Some(Arc::new(|question: &str| {
        ask_yes(&format!("deskpilot: allow {question}?"))
    }))
}

/// Asks a yes/no question on stderr and reads the answer from stdin; only `y`/`yes`
/// is yes.
pub fn ask_yes(question: &str) -> bool {
    use std::io::Write;
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
}

/// Opens a host (session + policy) on the desktop the command line names, with a
/// terminal prompt for confirmations when a user is at one.
pub async fn open(ctx: &Ctx, kind: &str) -> Result<(Host, Desktop), ComputerError> {
    open_host(ctx, kind, true).await
}

/// As [`open`]; `prompt` false never asks on the terminal (stdin is a protocol
/// stream), so confirmations go through `deskpilot approve ID`.
pub async fn open_host(
    ctx: &Ctx,
    kind: &str,
    prompt: bool,
) -> Result<(Host, Desktop), ComputerError> {
    if ctx.device.is_remote() {
        return open_remote(ctx, kind, prompt);
    }
    let desktop = resolve(ctx.sandbox)?;
    let config = Config::load()?;
    let settings = config.effective(desktop.sandbox.is_some());
    // Keycodes a killed call left borrowed are put back by the next call on the
    // display (a file check when there is nothing to do).
    if let Err(e) = deskpilot_driver_linux::input::restore_left_keymap(&desktop.display)
        && e.code != ErrorCode::PlatformUnsupported
    {
        eprintln!(
            "warning: a keymap left changed could not be restored: {}",
            e.message
        );
    }
    let driver = connect(&desktop).await?;
    // A sandbox keeps its refs in its own directory, removed when it stops, so a
    // later sandbox on the same display number starts afresh.
    let key = session_key(&desktop, &ctx.session);
    let store = match &desktop.sandbox_dir {
        Some(dir) => StateStore::open_in(dir, &key)?,
        None => StateStore::open(&key)?,
    };
    let mut opts = HostOptions::new(
        &desktop_key(&desktop.display, &desktop.bus_address),
        &ctx.session,
        kind,
        settings,
    );
    opts.prompt = if prompt { tty_prompt() } else { None };
    // A long-lived host (MCP server, run) applies the user's config changes at once.
    let in_sandbox = desktop.sandbox.is_some();
    opts.reload = Some(Arc::new(move || {
        Config::load().map(|c| c.effective(in_sandbox))
    }));
    if let Some(dir) = &desktop.sandbox_dir {
        opts.desktop_dir = dir.clone();
    }
    Ok((Host::new(Session::new(driver, store), opts), desktop))
}

/// The Android driver for `--device adb[:SERIAL]`: adb from `DESKPILOT_ADB`, else
/// `adb` on `PATH`.
pub fn android_driver(serial: Option<String>) -> deskpilot_driver_android::AndroidDriver {
    deskpilot_driver_android::AndroidDriver::new(deskpilot_driver_android::AdbOptions::for_device(
        serial,
    ))
}

/// [`open_host`] on a device other than this machine's desktop: the driver is
/// reached over a link (`ssh:`) or through `adb` (`adb:`), refs are kept under the
/// device's name, and the policy judges the facts the device's driver reports
/// (docs/ARCHITECTURE.md §15). An Android device runs no deskpilot of its own: the
/// driver runs here, unguarded, and every refusal is this host's, on the package
/// names, titles and element states the device's screen dump reports.
fn open_remote(ctx: &Ctx, kind: &str, prompt: bool) -> Result<(Host, Desktop), ComputerError> {
    let name = ctx.device.to_string();
    let driver: Arc<dyn Driver> = match (&ctx.device, ctx.device.ssh_command()) {
        (_, Some((program, args))) => Arc::new(deskpilot_host::remote::LinkDriver::new(
            &name,
            program,
            args,
            deskpilot_protocol::rpc::RpcOptions::default(),
        )),
        (deskpilot_host::device::Device::Adb { serial }, None) => {
            Arc::new(android_driver(serial.clone()))
        }
        _ => {
            return Err(ComputerError::new(
                ErrorCode::PlatformUnsupported,
                format!("--device {name}: this build drives local, ssh: and adb: devices only"),
            ));
        }
    };
    let desktop = Desktop {
        display: name.clone(),
        bus_address: String::new(),
        sandbox: None,
        sandbox_dir: None,
        vars: Vec::new(),
    };
    let config = Config::load()?;
    let settings = config.effective(false);
    let key = session_key(&desktop, &ctx.session);
    let store = StateStore::open(&key)?;
    let mut opts = HostOptions::new(
        &desktop_key(&desktop.display, &desktop.bus_address),
        &ctx.session,
        kind,
        settings,
    );
    opts.device = name;
    opts.prompt = if prompt { tty_prompt() } else { None };
    opts.reload = Some(Arc::new(move || Config::load().map(|c| c.effective(false))));
    Ok((Host::new(Session::new(driver, store), opts), desktop))
}

/// Prints a result, with the host's warnings (an audit write that failed) on stderr
/// or in the JSON document, and in the JSON document the device when it is another
/// machine's or a phone's (`"device": "ssh:lab"`).
fn finish<T: Serialize>(ctx: &Ctx, host: &Host, value: &T, text: &str) {
    let warnings = host.warnings();
    let remote = host.options().remote();
    if ctx.json && (!warnings.is_empty() || remote) {
        let mut v = serde_json::to_value(value).unwrap_or_default();
        if let serde_json::Value::Object(m) = &mut v {
            if !warnings.is_empty() {
                m.insert("warnings".into(), serde_json::json!(warnings));
            }
            if remote {
                m.entry("device")
                    .or_insert_with(|| serde_json::json!(host.options().device));
            }
        }
        print_ok(true, &v, text);
        return;
    }
    print_ok(ctx.json, value, text);
    if !ctx.json {
        for w in warnings {
            eprintln!("warning: {w}");
        }
    }
}

pub fn to_target(t: &TargetArgs) -> Target {
    match (&t.app, &t.window) {
        (Some(a), _) => Target::App(a.clone()),
        (None, Some(w)) => Target::Window(w.clone()),
        (None, None) => Target::Current,
    }
}

pub async fn apps(ctx: &Ctx) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let apps = h.apps().await?;
    let mut text = deskpilot_host::listing::render_apps(&apps);
    // Whose desktop this is, when it is not this machine's.
    let mut device = None;
    if ctx.device.is_remote() {
        let hello = h.session().hello().await?;
        text = format!(
            "device {} · {} ({} {})\n{text}",
            ctx.device, hello.platform, hello.driver, hello.version
        );
        device = Some(serde_json::json!({
            "name": ctx.device.to_string(),
            "platform": hello.platform,
            "driver": hello.driver,
            "version": hello.version,
        }));
    }
    if let Some(g) = h.grant_view() {
        text.push_str(&g.line());
    }
    finish(
        ctx,
        &h,
        &serde_json::json!({ "device": device, "apps": apps, "grant": h.grant_view() }),
        &text,
    );
    Ok(())
}

/// `deskpilot launch APP [ARGS…]`: [`Host::launch`] (no wait inside), then
/// [`Host::first_window`] for up to `wait_ms`.
pub async fn launch(ctx: &Ctx, command: Vec<String>, wait_ms: u64) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let started = std::time::Instant::now();
    let program = command.first().cloned().unwrap_or_default();
    let launched = h.launch(command, Some(0)).await?;
    let pid = launched.pid;
    let first = h
        .first_window(&program, pid, launched.window.map(|w| w.handle), wait_ms)
        .await?;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let app = deskpilot_core::sanitize::one_line(&first.app);
    let text = format!(
        "launched {} (pid {pid}) · {app} [{}] {} \"{}\" · {elapsed_ms} ms\nobserve it with: deskpilot observe --app {}",
        deskpilot_core::sanitize::one_line(&program),
        first.window.ref_,
        first.window.window.role,
        deskpilot_core::sanitize::one_line(&first.window.window.title),
        deskpilot_driver_android::sh_quote(&app),
    );
    finish(
        ctx,
        &h,
        &serde_json::json!({
            "pid": pid,
            "app": first.app,
            "toolkit": first.toolkit,
            "window": first.window,
            "elapsed_ms": elapsed_ms,
        }),
        &text,
    );
    Ok(())
}

pub async fn observe(
    ctx: &Ctx,
    target: TargetArgs,
    scope: Option<String>,
    from: Option<u32>,
    query: Option<String>,
    max_tokens: usize,
) -> Result<()> {
    if max_tokens < 50 {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "--max-tokens must be at least 50 so a snapshot can say what it cut",
        ));
    }
    let (mut h, _) = open(ctx, "cli").await?;
    let obs = h
        .observe(
            &to_target(&target),
            &ObserveOptions {
                scope,
                query,
                max_tokens,
                from,
            },
        )
        .await?;
    // On another device, what the read itself cost there (an Android screen dump
    // and its transfer, a remote walk), beside the whole call's time.
    let device_read = if ctx.device.is_remote() {
        format!(" · device read {} ms", obs.stats.elapsed_ms)
    } else {
        String::new()
    };
    let mut text = format!(
        "{}\n({} tokens · read {} objects in {} ms{device_read})",
        obs.text.trim_end(),
        obs.tokens,
        obs.stats.objects,
        obs.elapsed_ms
    );
    if let Some(g) = &obs.grant {
        text.push_str(&format!("\n{}", g.line()));
    }
    if let Some(b) = &obs.basis {
        text.push_str(&format!(" · basis {b}"));
    }
    finish(ctx, &h, &obs, &text);
    Ok(())
}

pub async fn find(
    ctx: &Ctx,
    text: String,
    role: Option<Role>,
    target: TargetArgs,
    limit: usize,
) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let found = h.find(&to_target(&target), &text, role, limit).await?;
    let mut out = String::new();
    for hit in &found.hits {
        out.push_str(&format!("{}   (in {})\n", hit.line, hit.window_ref));
    }
    let text = deskpilot_core::sanitize::one_line(&text);
    match (found.hits.is_empty(), found.unsearched.is_empty()) {
        (true, true) => out.push_str(&format!("no element matches \"{text}\"")),
        (true, false) => out.push_str(&format!(
            "no element matches \"{text}\" in what was searched; {}",
            found.unsearched.describe()
        )),
        (false, false) => out.push_str(&found.unsearched.describe()),
        (false, true) => {}
    }
    finish(
        ctx,
        &h,
        &serde_json::json!({ "matches": found.hits, "unsearched": found.unsearched }),
        &out,
    );
    Ok(())
}

/// `deskpilot read REF [--from N] [--to N] [--tail N]`: the element's text, exactly.
pub async fn read(
    ctx: &Ctx,
    r: String,
    from: Option<u64>,
    to: Option<u64>,
    tail: Option<u64>,
) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let out = h.read_text(&r, from, to, tail).await?;
    // The terminal gets the text with controls and invisible characters escaped;
    // `--json` carries it exactly.
    let mut text = deskpilot_core::sanitize::multi_line(&out.text);
    if !out.complete && out.note.is_none() {
        text.push_str(&format!(
            "\n(read {} of {} characters: one read takes at most that many)",
            out.to, out.total_chars
        ));
    }
    if let Some(note) = &out.note {
        text.push_str(&format!("\n({note})"));
    }
    finish(ctx, &h, &out, &text);
    Ok(())
}

pub async fn act(ctx: &Ctx, r: String, op: Op, value: Option<String>) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let out = h.act(&r, op, value).await?;
    let text = format!("{}\n({} tokens)", out.text, out.tokens);
    if let Some(mut e) = out.not_executed() {
        // Not confirmed done is a failure (exit 1, the code on stderr); a reader of
        // the terminal still sees what changed. `--json` has it in `detail`, with
        // the host's warnings (an audit write that failed).
        let warnings = h.warnings();
        if ctx.json {
            if let Some(serde_json::Value::Object(m)) = &mut e.detail
                && !warnings.is_empty()
            {
                m.insert("warnings".into(), serde_json::json!(warnings));
            }
        } else {
            println!("{text}");
            for w in warnings {
                eprintln!("warning: {w}");
            }
        }
        return Err(e);
    }
    finish(ctx, &h, &out, &text);
    Ok(())
}

pub async fn keys(ctx: &Ctx, keys: String, literal: bool, target: TargetArgs) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let (chord, text) = if literal {
        (None, Some(keys.clone()))
    } else {
        (Some(keys.clone()), None)
    };
    let out = h.keys(&to_target(&target), chord, text).await?;
    let text = format!("{}\n({} tokens)", out.text, out.tokens);
    finish(ctx, &h, &out, &text);
    Ok(())
}

/// `deskpilot clipboard read|write`: the clipboard under the policy (its own
/// switch, `clipboard`; a write spends an action).
pub async fn clipboard(ctx: &Ctx, write: Option<String>) -> Result<()> {
    let (mut h, _) = open(ctx, "cli").await?;
    let out = h.clipboard(write).await?;
    let text = out.summary();
    finish(ctx, &h, &out, &text);
    Ok(())
}

/// `deskpilot click-at X Y --basis B`: a pointer gesture at window-relative capture
/// pixels, checked against the basis an observe printed.
pub async fn click_at(ctx: &Ctx, x: f64, y: f64, basis: String, button: String) -> Result<()> {
    let action = match button.as_str() {
        "left" => PointerAction::Click,
        "right" => PointerAction::RightClick,
        "double" => PointerAction::DoubleClick,
        other => {
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                format!("--button {other:?}: use left, right or double"),
            ));
        }
    };
    let basis = Basis::parse(&basis)?;
    let (mut h, _) = open(ctx, "cli").await?;
    let out = h.pointer(&basis, x, y, action).await?;
    let text = format!("{}\n({} tokens)", out.text, out.tokens);
    finish(ctx, &h, &out, &text);
    Ok(())
}

/// The condition flags of `deskpilot wait`.
pub struct WaitArgs {
    pub text: Option<String>,
    pub gone: Option<String>,
    pub role: Option<Role>,
    pub name: Option<String>,
    pub window_title: Option<String>,
}

pub async fn wait(ctx: &Ctx, target: TargetArgs, w: WaitArgs, timeout_ms: u64) -> Result<()> {
    let cond = if let Some(t) = w.text {
        WaitFor::Text(t)
    } else if let Some(t) = w.gone {
        WaitFor::Gone(t)
    } else if let (Some(r), Some(n)) = (w.role, w.name) {
        WaitFor::Element { role: r, name: n }
    } else if let Some(t) = w.window_title {
        WaitFor::Window(t)
    } else {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "say what to wait for: --text T, --gone T, --role R --name N, or --window-title T",
        ));
    };
    let (mut h, desktop) = open(ctx, "cli").await?;
    // A wait can be long: `deskpilot stop` must reach it, so it listens for stop.
    let info = Arc::new(Mutex::new(HostInfo {
        pid: std::process::id(),
        session: ctx.session.clone(),
        desktop: desktop_key(&desktop.display, &desktop.bus_address),
        grant_id: h.grant_view().map(|g| g.grant_id),
        kind: "cli".into(),
    }));
    let _control = ControlServer::listen(info, h.options().stop.clone())?;
    let out = h
        .wait(
            &to_target(&target),
            &cond,
            Duration::from_millis(timeout_ms),
        )
        .await?;
    let mut text = format!("ok condition met after {} ms", out.elapsed_ms);
    for hit in &out.hits {
        text.push_str(&format!("\n{}", hit.line));
    }
    finish(ctx, &h, &out, &text);
    Ok(())
}

/// `deskpilot screenshot`: the bound (or named) window as a PNG, written only where
/// `--out` says; prints the basis, the image's estimated tokens and the legend.
pub async fn screenshot(
    ctx: &Ctx,
    target: TargetArgs,
    out: Option<std::path::PathBuf>,
    marks: bool,
    ocr: bool,
    max_side: u32,
) -> Result<()> {
    use deskpilot_host::host::pixels::ShotMode;
    let mode = match (marks, ocr) {
        (true, _) => ShotMode::Marks,
        (_, true) => ShotMode::Ocr,
        _ => ShotMode::Image,
    };
    let (mut h, _) = open(ctx, "cli").await?;
    let shot = h
        .screenshot(&to_target(&target), mode, Some(max_side))
        .await?;
    if let Some(path) = &out {
        std::fs::write(path, &shot.png).map_err(|e| {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
    }
    let written = match &out {
        Some(p) => format!(" · written to {}", p.display()),
        None => " · not written (use --out FILE)".into(),
    };
    let text = shot.render(&written);
    finish(ctx, &h, &shot, &text);
    Ok(())
}

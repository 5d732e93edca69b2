//! `deskpilot demo` on Windows: the Linux demo's twin on Notepad (docs/ARCHITECTURE.md
//! §6b).
//!
//! Launches its own Notepad on the user's desktop, observes it, sets the editor's
//! text through MSAA (`put_accValue`), opens File ▸ Save As… with the keyboard
//! (Notepad's menu cannot be read from another process on every Windows build, so
//! the menu is reached through its mnemonics, and the step says so), observes the
//! dialog, sets the file name and presses Save, then verifies the saved bytes. Each
//! step prints its snapshot or diff with the channel, milliseconds and tokens. Exits
//! 0 only when the file holds exactly the text. The Notepad it started is stopped.
//!
//! The demo's policy is the sandbox defaults narrowed to `notepad.exe`: the grant is
//! bound to the Notepad it launched, every step goes through the host's one
//! pipeline (refusals, budget, audit), and no other app can be touched.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use deskpilot_core::{Op, Role, State};
use deskpilot_host::config::Config;
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::session::{FindHit, WaitFor};
use deskpilot_host::store::desktop_key;
use deskpilot_host::{Session, StateStore, Target};
use deskpilot_protocol::ComputerError;
use deskpilot_protocol::Result;

use super::demo::{Demo, Report};
use crate::output::{print_ok, progress};

/// The text the Windows demo writes. ASCII only: Notepad saves in the ANSI code
/// page unless its Encoding box is changed, and which page that is depends on the
/// system's locale, so only ASCII has one byte sequence everywhere.
pub const WINDOWS_DEMO_TEXT: &str = "Hello from deskpilot on Windows";

/// The app the demo launches and is confined to.
const NOTEPAD: &str = "notepad.exe";

/// Runs the demo on a Notepad of its own; `out` is where the file is saved (default
/// a fresh name in the temporary directory, removed after the check).
///
/// Errors: those of the host's steps (with their `COMPUTER_*` codes), and
/// `COMPUTER_OUTCOME_UNKNOWN` when the saved file does not hold the text.
pub async fn run(json: bool, out: Option<PathBuf>) -> Result<()> {
    let chosen = out.is_some();
    let started = Instant::now();
    progress(json, "launching Notepad…");
    let mut child = std::process::Command::new(NOTEPAD)
        .spawn()
        .map_err(|e| {
            ComputerError::internal(format!(
                "cannot start {NOTEPAD}: {e}; it ships with Windows (and Wine), check that it is on PATH"
            ))
        })?;
    let result = run_in(json, started, out).await;
    let _ = child.kill();
    let _ = child.wait();
    let report = result?;
    let mut text = String::from("\nsummary:\n");
    for s in &report.steps {
        text.push_str(&format!(
            "  {:<34} {:<34} {:>5} ms {:>5} tokens\n",
            s.step, s.channel, s.ms, s.tokens
        ));
    }
    text.push_str(&format!(
        "saved {} ({} bytes) — content verified, {} screenshots, {} ms in all",
        report.file, report.saved_bytes, report.screenshots, report.total_ms
    ));
    if !chosen {
        let _ = std::fs::remove_file(&report.file);
        text.push_str(" (file removed; --out PATH keeps it)");
    }
    print_ok(json, &report, &text);
    Ok(())
}

async fn run_in(json: bool, started: Instant, out: Option<PathBuf>) -> Result<Report> {
    let file = out.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("deskpilot-demo-{}.txt", std::process::id()))
    });
    let _ = std::fs::remove_file(&file);
    let desktop = super::session::resolve(None)?;
    let driver = super::session::connect(&desktop).await?;
    let key = desktop_key(&desktop.display, &desktop.bus_address);
    let store = StateStore::open(&format!("{key}-demo"))?;
    let mut settings = Config::load()?.effective(true);
    settings.allow_apps = vec![NOTEPAD.into()];
    settings.allow_all_apps = false;
    let opts = HostOptions::new(&key, "demo", "demo", settings);
    let mut host = Host::new(Session::new(driver, store), opts);
    let t = Instant::now();
    host.wait(
        &Target::Current,
        &WaitFor::Window("Notepad".into()),
        Duration::from_secs(30),
    )
    .await?;
    let mut demo = Demo::new(json, host);
    demo.record(
        "launch Notepad",
        "process",
        t.elapsed().as_millis() as u64,
        0,
        "Notepad's window is up",
    );

    // 1. Observe.
    demo.observe("observe Notepad", Target::App(NOTEPAD.into()))
        .await?;

    // 2. The editor's text, set through MSAA.
    let editor = demo
        .find(&[Role::Textbox, Role::Document], "", |h| {
            h.states.contains(State::Editable)
        })
        .await?;
    demo.act(
        "set the editor's text",
        &editor,
        Op::SetValue,
        Some(WINDOWS_DEMO_TEXT),
    )
    .await?;

    // 3. File ▸ Save As… by its mnemonics.
    demo.keys("open the File menu (Alt+F)", "alt+f").await?;
    demo.keys("choose Save As… (A)", "a").await?;
    demo.wait_window("Save As").await?;
    demo.observe("observe the dialog", Target::Window("Save As".into()))
        .await?;

    // 4. The file name, then Save.
    let name_field = demo
        .find(&[Role::Textbox], "", |h: &FindHit| {
            h.states.contains(State::Editable)
        })
        .await?;
    demo.act(
        "enter the file path",
        &name_field,
        Op::SetValue,
        Some(&file.display().to_string()),
    )
    .await?;
    let save = demo
        .find(&[Role::Button], "Save", |h| h.name == "Save")
        .await?;
    demo.act("press Save", &save, Op::Click, None).await?;

    // 5. The bytes on disk.
    let saved = demo.verify(&file, WINDOWS_DEMO_TEXT).await?;
    Ok(demo.report(&file, WINDOWS_DEMO_TEXT, saved, started))
}

//! `deskpilot demo`: the main job, end to end, on a real app.
//!
//! Starts its own sandbox desktop, launches mousepad, observes it, enters a
//! mixed-script text through the accessibility text interface, saves it through
//! File ▸ Save As… with semantic actions only, and verifies the saved bytes. Each step
//! prints its snapshot or diff with the channel, milliseconds and tokens. Exits 0 only
//! when the file holds exactly the text. Every process it started is stopped.

// On Windows `deskpilot demo` runs the Notepad twin (`demo_windows`), which shares
// `Demo`; this file's sandbox run still builds there but is not called.
#![cfg_attr(all(windows, not(deskpilot_stub)), allow(dead_code))]

use std::time::{Duration, Instant};

use deskpilot_core::{Op, Role, State};
use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};
use deskpilot_host::config::Config;
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::session::{ActOutcome, FindHit, WaitFor};
use deskpilot_host::store::desktop_key;
use deskpilot_host::{ObserveOptions, Session, StateStore, Target};
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

use crate::output::{print_ok, progress};
use deskpilot_driver_linux::desktop::Desktop;
use deskpilot_protocol::Result;

/// The text the demo writes: ASCII, an em dash, Chinese and an accented letter.
pub const DEMO_TEXT: &str = "Hello from deskpilot — 你好, café";

/// One step of the demo as reported.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Step {
    pub step: String,
    pub channel: String,
    pub ms: u64,
    pub tokens: usize,
    pub output: String,
}

/// The demo's report (`--json` prints it).
#[derive(Debug, Serialize)]
pub(super) struct Report {
    pub file: String,
    pub expected_bytes: usize,
    pub saved_bytes: usize,
    pub verified: bool,
    pub screenshots: u32,
    pub steps: Vec<Step>,
    pub total_ms: u64,
}

fn fail(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::ElementNotFound, msg)
}

/// The demo's steps on a host, each recorded with its channel, time and tokens.
pub(super) struct Demo {
    json: bool,
    pub host: Host,
    steps: Vec<Step>,
}

impl Demo {
    pub fn new(json: bool, host: Host) -> Demo {
        Demo {
            json,
            host,
            steps: Vec::new(),
        }
    }

    pub fn record(&mut self, step: &str, channel: &str, ms: u64, tokens: usize, output: &str) {
        progress(
            self.json,
            &format!(
                "\n== {step}  [{channel} · {ms} ms · {tokens} tokens]\n{}",
                output.trim_end()
            ),
        );
        self.steps.push(Step {
            step: step.to_string(),
            channel: channel.to_string(),
            ms,
            tokens,
            output: output.to_string(),
        });
    }

    pub async fn act(
        &mut self,
        label: &str,
        hit: &FindHit,
        op: Op,
        value: Option<&str>,
    ) -> Result<ActOutcome> {
        let out = self
            .host
            .act(&hit.ref_, op, value.map(str::to_string))
            .await?;
        let channel = format!("{}:{}", out.result.channel.as_str(), out.result.method);
        self.record(label, &channel, out.elapsed_ms, out.tokens, &out.text);
        Ok(out)
    }

    /// Observes `target` (binding the grant there) and records the snapshot.
    pub async fn observe(&mut self, label: &str, target: Target) -> Result<()> {
        let obs = self
            .host
            .observe(&target, &ObserveOptions::default())
            .await?;
        self.record(label, "a11y tree", obs.elapsed_ms, obs.tokens, &obs.text);
        Ok(())
    }

    /// Waits up to 20 s for a window whose title contains `title` and records it.
    pub async fn wait_window(&mut self, title: &str) -> Result<()> {
        let t = Instant::now();
        let w = self
            .host
            .wait(
                &Target::Current,
                &WaitFor::Window(title.into()),
                Duration::from_secs(20),
            )
            .await?;
        self.record(
            &format!("wait for the {title} dialog"),
            "a11y tree",
            t.elapsed().as_millis() as u64,
            0,
            &format!("dialog up after {} ms", w.elapsed_ms),
        );
        Ok(())
    }

    /// Presses `chord` in the bound window through the host (the keyboard channel).
    #[cfg_attr(not(windows), allow(dead_code))]
    pub async fn keys(&mut self, label: &str, chord: &str) -> Result<()> {
        let out = self
            .host
            .keys(&Target::Current, Some(chord.to_string()), None)
            .await?;
        let channel = format!(
            "{}:{} key events",
            out.result.channel.as_str(),
            out.result.events_sent
        );
        self.record(label, &channel, out.elapsed_ms, out.tokens, &out.text);
        Ok(())
    }

    /// Waits up to 10 s for `file` to hold bytes and records whether they are
    /// exactly `text`'s UTF-8; returns their length.
    ///
    /// Errors: `COMPUTER_OUTCOME_UNKNOWN` when they are not (with both texts).
    pub async fn verify(&mut self, file: &std::path::Path, text: &str) -> Result<usize> {
        let t = Instant::now();
        let mut saved = Vec::new();
        while t.elapsed() < Duration::from_secs(10) {
            if let Ok(b) = std::fs::read(file)
                && !b.is_empty()
            {
                saved = b;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ok = saved == text.as_bytes();
        self.record(
            "verify the saved file",
            "filesystem",
            t.elapsed().as_millis() as u64,
            0,
            &format!(
                "{} holds {} bytes: {}",
                file.display(),
                saved.len(),
                if ok {
                    "exactly the text"
                } else {
                    "NOT the expected text"
                }
            ),
        );
        if !ok {
            return Err(ComputerError::new(
                ErrorCode::OutcomeUnknown,
                format!(
                    "the saved file does not hold the text: expected {:?}, found {:?}",
                    text,
                    String::from_utf8_lossy(&saved)
                ),
            ));
        }
        Ok(saved.len())
    }

    /// The report of a verified run.
    pub fn report(
        self,
        file: &std::path::Path,
        text: &str,
        saved: usize,
        started: Instant,
    ) -> Report {
        Report {
            file: file.display().to_string(),
            expected_bytes: text.len(),
            saved_bytes: saved,
            verified: true,
            screenshots: 0,
            steps: self.steps,
            total_ms: started.elapsed().as_millis() as u64,
        }
    }

    /// The first element of the current window matching role and (part of) name.
    pub async fn find(
        &mut self,
        roles: &[Role],
        name: &str,
        pred: impl Fn(&FindHit) -> bool,
    ) -> Result<FindHit> {
        let hits = self
            .host
            .find(&Target::Current, name, None, 200)
            .await?
            .hits;
        hits.into_iter()
            .find(|h| roles.contains(&h.role) && pred(h))
            .ok_or_else(|| fail(format!("no {roles:?} named {name:?} in the current window")))
    }
}

pub async fn run(json: bool, keep: bool, out: Option<std::path::PathBuf>) -> Result<()> {
    let chosen = out.is_some();
    let started = Instant::now();
    progress(
        json,
        "starting a sandbox desktop (Xvfb + session bus + accessibility bus)…",
    );
    let mut sandbox = Sandbox::start(SandboxOptions {
        detach: keep,
        ..SandboxOptions::default()
    })?;
    let result = run_in(json, &mut sandbox, started, out).await;
    if keep {
        progress(
            json,
            &format!(
                "sandbox kept on display :{} — join it with: eval \"$(deskpilot --sandbox {} sandbox env)\"",
                sandbox.state().display,
                sandbox.state().display
            ),
        );
    } else {
        sandbox.stop();
    }
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
    if !keep && !chosen {
        // The file was the proof; it does not stay behind in /tmp.
        let _ = std::fs::remove_file(&report.file);
        text.push_str(" (file removed; --out PATH keeps it)");
    }
    print_ok(json, &report, &text);
    Ok(())
}

async fn run_in(
    json: bool,
    sandbox: &mut Sandbox,
    started: Instant,
    out: Option<std::path::PathBuf>,
) -> Result<Report> {
    let desktop = Desktop {
        display: sandbox.display(),
        bus_address: sandbox.state().bus_address.clone(),
        sandbox: Some(sandbox.state().display),
        sandbox_dir: Some(sandbox.state().dir.clone()),
        vars: sandbox.env().into_iter().collect(),
    };
    let file = out.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("deskpilot-demo-{}.txt", std::process::id()))
    });
    let _ = std::fs::remove_file(&file);

    progress(json, "launching mousepad in the sandbox…");
    let t = Instant::now();
    let (dirs, files) = deskpilot_host::own_paths();
    sandbox.hide_from_apps(dirs, files);
    let app = sandbox.spawn(&["mousepad".to_string()])?;
    let driver = super::session::connect(&desktop).await?;
    let store = StateStore::open_in(&sandbox.state().dir, "demo")?;
    // The demo's own sandbox: the host's policy applies as to any agent (a grant
    // bound to mousepad, refusals, budget, audit), with the sandbox defaults.
    let mut settings = Config::load()?.effective(true);
    // The user named the file at the terminal: its folder is one the demo's app may
    // save into (docs/ARCHITECTURE.md §7.21).
    if let Some(dir) = std::path::absolute(&file)
        .ok()
        .and_then(|f| f.parent().map(|d| d.display().to_string()))
    {
        settings.allow_files.push(dir);
    }
    let mut opts = HostOptions::new(
        &desktop_key(&desktop.display, &desktop.bus_address),
        "demo",
        "demo",
        settings,
    );
    opts.desktop_dir = sandbox.state().dir.clone();
    let mut host = Host::new(Session::new(driver, store), opts);
    // Ready once its window can be read through its tree (it is listed from its X
    // window before that).
    host.first_window("mousepad", app.id(), None, 30_000)
        .await?;
    let mut demo = Demo::new(json, host);
    let launch_ms = t.elapsed().as_millis() as u64;
    demo.record(
        "launch mousepad",
        "process",
        launch_ms,
        0,
        "mousepad window is up",
    );

    // 1. Observe.
    demo.observe("observe mousepad", Target::App("mousepad".into()))
        .await?;

    // 2. Enter the text into the editor through EditableText.
    let editor = demo
        .find(&[Role::Textbox, Role::Document], "", |h| {
            h.states.contains(State::Editable)
        })
        .await?;
    demo.act(
        "set the editor's text",
        &editor,
        Op::SetValue,
        Some(DEMO_TEXT),
    )
    .await?;

    // 3. File ▸ Save As…: the menu opens through its accessibility action; the item
    //    is selected in the open menu and activated with Return (the driver's
    //    keyboard path for menu items, said so in the step's channel), because GTK 3
    //    runs a menu item's accessibility action inside the call and a dialog it
    //    opens would keep the app's tree frozen until the dialog closes.
    let file_menu = demo
        .find(&[Role::Menuitem], "File", |h| h.name == "File")
        .await?;
    demo.act("open the File menu", &file_menu, Op::Click, None)
        .await?;
    let save_as = demo
        .find(&[Role::Menuitem], "Save As", |h| {
            !h.states.contains(State::Disabled)
        })
        .await?;
    let out = demo
        .act("choose Save As…", &save_as, Op::Click, None)
        .await?;
    if out.change.new_windows.is_empty() {
        // The dialog can take over a second to appear the first time.
        demo.wait_window("Save").await?;
    }
    // Acting never moves the grant: observing the dialog binds it there (the host
    // re-runs its refusals on the new window first).
    demo.observe("observe the dialog", Target::Window("Save".into()))
        .await?;

    // 4. Type the path into the dialog's name field and press Save.
    let name_field = demo
        .find(&[Role::Textbox], "", |h| h.states.contains(State::Editable))
        .await?;
    demo.act(
        "enter the file path",
        &name_field,
        Op::SetValue,
        Some(&file.display().to_string()),
    )
    .await?;
    let save = demo
        .find(&[Role::Button], "Save", |h| {
            h.name == "Save" || h.name == "_Save"
        })
        .await?;
    demo.act("press Save", &save, Op::Click, None).await?;

    // 5. Verify the bytes on disk.
    let saved = demo.verify(&file, DEMO_TEXT).await?;
    Ok(demo.report(&file, DEMO_TEXT, saved, started))
}

//! `deskpilot demo`: the main job, end to end, on a real app.
//!
//! Starts its own sandbox desktop, launches mousepad, observes it, enters a
//! mixed-script text through the accessibility text interface, saves it through
//! File ▸ Save As… with semantic actions only, and verifies the saved bytes. Each step
//! prints its snapshot or diff with the channel, milliseconds and tokens. Exits 0 only
//! when the file holds exactly the text. Every process it started is stopped.

use std::sync::Arc;
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
use crate::target::Desktop;

/// The text the demo writes: ASCII, an em dash, Chinese and an accented letter.
pub const DEMO_TEXT: &str = "Hello from deskpilot — 你好, café";

/// One step of the demo as reported.
#[derive(Debug, Clone, Serialize)]
struct Step {
    step: String,
    channel: String,
    ms: u64,
    tokens: usize,
    output: String,
}

#[derive(Debug, Serialize)]
struct Report {
    file: String,
    expected_bytes: usize,
    saved_bytes: usize,
    verified: bool,
    screenshots: u32,
    steps: Vec<Step>,
    total_ms: u64,
}

fn fail(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::ElementNotFound, msg)
}

struct Demo {
    json: bool,
    host: Host,
    steps: Vec<Step>,
}

impl Demo {
    fn record(&mut self, step: &str, channel: &str, ms: u64, tokens: usize, output: &str) {
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

    async fn act(
        &mut self,
        label: &str,
        hit: &FindHit,
        op: Op,
        value: Option<&str>,
    ) -> Result<ActOutcome, ComputerError> {
        let out = self
            .host
            .act(&hit.ref_, op, value.map(str::to_string))
            .await?;
        let channel = format!("{}:{}", out.result.channel.as_str(), out.result.method);
        self.record(label, &channel, out.elapsed_ms, out.tokens, &out.text);
        Ok(out)
    }

    /// The first element of the current window matching role and (part of) name.
    async fn find(
        &mut self,
        roles: &[Role],
        name: &str,
        pred: impl Fn(&FindHit) -> bool,
    ) -> Result<FindHit, ComputerError> {
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

pub async fn run(
    json: bool,
    keep: bool,
    out: Option<std::path::PathBuf>,
) -> Result<(), ComputerError> {
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
) -> Result<Report, ComputerError> {
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
    let (dirs, files) = super::session::own_paths();
    sandbox.hide_from_apps(dirs, files);
    let _app = sandbox.spawn(&["mousepad".to_string()])?;
    let driver = super::session::connect(&desktop).await?;
    let store = StateStore::open_in(&sandbox.state().dir, "demo")?;
    // The demo's own sandbox: the host's policy applies as to any agent (a grant
    // bound to mousepad, refusals, budget, audit), with the sandbox defaults.
    let settings = Config::load()?.effective(true);
    let mut opts = HostOptions::new(
        &desktop_key(&desktop.display, &desktop.bus_address),
        "demo",
        "demo",
        settings,
    );
    opts.desktop_dir = sandbox.state().dir.clone();
    let mut host = Host::new(Session::new(Arc::new(driver), store), opts);
    host.wait(
        &Target::Current,
        &WaitFor::Window("Mousepad".into()),
        Duration::from_secs(30),
    )
    .await?;
    let mut demo = Demo {
        json,
        host,
        steps: Vec::new(),
    };
    let launch_ms = t.elapsed().as_millis() as u64;
    demo.record(
        "launch mousepad",
        "process",
        launch_ms,
        0,
        "mousepad window is up",
    );

    // 1. Observe.
    let obs = demo
        .host
        .observe(&Target::App("mousepad".into()), &ObserveOptions::default())
        .await?;
    demo.record(
        "observe mousepad",
        "a11y tree",
        obs.elapsed_ms,
        obs.tokens,
        &obs.text,
    );

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
        let t = Instant::now();
        let w = demo
            .host
            .wait(
                &Target::Current,
                &WaitFor::Window("Save".into()),
                Duration::from_secs(20),
            )
            .await?;
        demo.record(
            "wait for the Save As dialog",
            "a11y tree",
            t.elapsed().as_millis() as u64,
            0,
            &format!("dialog up after {} ms", w.elapsed_ms),
        );
    }
    // Acting never moves the grant: observing the dialog binds it there (the host
    // re-runs its refusals on the new window first).
    let obs = demo
        .host
        .observe(&Target::Window("Save".into()), &ObserveOptions::default())
        .await?;
    demo.record(
        "observe the dialog",
        "a11y tree",
        obs.elapsed_ms,
        obs.tokens,
        &obs.text,
    );

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
    let t = Instant::now();
    let mut saved = Vec::new();
    while t.elapsed() < Duration::from_secs(10) {
        if let Ok(b) = std::fs::read(&file)
            && !b.is_empty()
        {
            saved = b;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ok = saved == DEMO_TEXT.as_bytes();
    demo.record(
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
                DEMO_TEXT,
                String::from_utf8_lossy(&saved)
            ),
        ));
    }
    Ok(Report {
        file: file.display().to_string(),
        expected_bytes: DEMO_TEXT.len(),
        saved_bytes: saved.len(),
        verified: ok,
        screenshots: 0,
        steps: demo.steps,
        total_ms: started.elapsed().as_millis() as u64,
    })
}

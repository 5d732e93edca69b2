//! `deskpilot bench`: measures deskpilot against its peers on real applications.
//!
//! Starts its own sandbox desktop, launches mousepad (a 2,000-line file open),
//! gtk3-widget-factory, gnome-calculator, LibreOffice Calc (an empty sheet) and
//! Chromium (a local page with a form and a 500-row table of links), one after the
//! other, and for each app measures in this one process:
//!
//! 1. observe latency: deskpilot's full `observe` of the app's window (window lookup,
//!    tree read, render, state saved), interleaved run by run with a pyatspi walk of
//!    the whole app (the method of OSWorld's tree collection, [`peer`]);
//! 2. tokens: the snapshot's o200k tokens (the engine's own count) against a
//!    screenshot of the window at its real size ([`report::screenshot_tokens`]) and
//!    against OSWorld's flat TSV of the same tree;
//! 3. act round trip (mousepad `set_value`, calculator `click 7`): dispatch to diff
//!    returned, settle included;
//! 4. find latency of a link deep in the Chromium page;
//! 5. the pixel rung: capture latency (a marked, downscaled PNG), OCR latency, and
//!    the vision tokens of the marked screenshot next to the snapshot's;
//! 6. on mousepad, the per-call overhead of a device link: the same reads through
//!    `deskpilot driver` on a pipe and through a loopback OpenSSH link ([`link`]);
//! 7. the peak resident memory of this process (`VmHWM`);
//! 8. deskpilot as a user meets it ([`cli`]): whole CLI processes on mousepad
//!    (`--version`, `apps`, `observe`, `find`, `act`) and LibreOffice (`observe`),
//!    each timed from fork to reap with its peak memory, and the memory of
//!    `deskpilot mcp` over 1,000 calls on mousepad;
//! 9. with `--peers`, the peer drivers on the same apps ([`drivers`]): xa11y's CLI
//!    and cua-driver (installed pinned into `target/peers/` by
//!    `scripts/bench-peers`), whole process and warm through MCP, with deskpilot's
//!    own CLI and MCP server measured the same way.
//!
//! Every measurement gets one warm-up run that is not counted, then `runs` counted
//! runs. Progress goes to stderr; the result is a table, or one JSON document with
//! `--json`. Targets are reported as met or missed, never asserted. Everything it
//! started (apps, the walker, the desktop, its temporary directory
//! `$TMPDIR/deskpilot-bench-<pid>`) is stopped and removed on the way out, also on
//! error.

mod apps;
mod cli;
mod drivers;
mod link;
mod mcp;
mod peer;
mod process;
mod report;
mod stats;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deskpilot_core::State;
use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};
use deskpilot_host::config::Config;
use deskpilot_host::store::desktop_key;
use deskpilot_host::{Host, HostOptions, ObserveOptions, Session, StateStore, Target};
use deskpilot_protocol::types::{ActStatus, AppStatus, WindowInfo};
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};
use serde::Serialize;

use crate::Shown;
pub use apps::app_key;
use apps::{AppSpec, Fixtures};
use deskpilot_driver_linux::desktop::Desktop;
use deskpilot_protocol::Result;
use peer::Peer;
use report::{Figure, Target as Goal};
use stats::Summary;

/// The action budget of the bench's grant: more than its acts can spend (one
/// warm-up and at most a few hundred counted runs per app).
const BENCH_ACTION_BUDGET: u32 = 10_000;
/// How long an app's tree may take to show its ready text after the window appeared.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Counted OCR runs per app at most: tesseract takes 0.3–3 s per window, and its
/// time varies little between runs.
const OCR_RUNS: usize = 3;
/// Pause after an app is ready, before measuring, so the rest of its start-up
/// (layout, first paint, deferred widgets) is not measured as steady state.
const SETTLE_AFTER_LAUNCH: Duration = Duration::from_secs(1);

/// The JSON document of `deskpilot bench --json`.
#[derive(Debug, Serialize)]
struct Report {
    /// Counted runs per figure (after one warm-up run).
    runs: usize,
    /// `release` or `debug`: how this binary was built.
    build: &'static str,
    /// CPUs available to this process.
    cpus: usize,
    apps: Vec<&'static str>,
    figures: Vec<Figure>,
    targets: Vec<Goal>,
    /// Wall time of the whole bench, seconds.
    total_s: f64,
    /// The peers' versions and paths, when `--peers` measured them.
    #[serde(skip_serializing_if = "Option::is_none")]
    peers: Option<drivers::Installed>,
}

fn say(msg: &str) {
    eprintln!("bench: {msg}");
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn summary(samples: &[f64], what: &str) -> Result<Summary> {
    Summary::of(samples).ok_or_else(|| {
        ComputerError::new(ErrorCode::Internal, format!("no valid sample of {what}"))
    })
}

/// Runs the bench; see the module documentation.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for `--runs 0` or an unknown app key;
/// `COMPUTER_PLATFORM_UNSUPPORTED` when Xvfb, AT-SPI or `/usr/bin/python3` with
/// pyatspi is missing; any error of the apps' launch, read or actions.
pub async fn run(runs: usize, apps: Vec<String>, peers: bool) -> Result<Shown> {
    let started = Instant::now();
    if runs == 0 {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "--runs must be at least 1",
        ));
    }
    let specs = apps::select(&apps)?;
    let installed = if peers {
        say("installing the peers (scripts/bench-peers)…");
        Some(drivers::install()?)
    } else {
        None
    };
    if cfg!(debug_assertions) {
        say("this is a debug build; measure with `cargo build --release -p deskpilot`");
    }
    say("starting a sandbox desktop (Xvfb + session bus + accessibility bus)…");
    let mut sandbox = Sandbox::start(SandboxOptions::default())?;
    // The apps measured run as any app started into a sandbox does: confined.
    let (dirs, files) = deskpilot_host::own_paths();
    sandbox.hide_from_apps(dirs, files);
    let scratch = Scratch::create()?;
    let result = run_in(&mut sandbox, &specs, runs, &scratch.0, installed.as_ref()).await;
    say("stopping the sandbox and every process in it…");
    sandbox.stop();
    drop(scratch);
    let mut figures = result?;
    figures.push(
        Figure::new(
            "deskpilot",
            "peak_rss_mb",
            "MB",
            Summary::once(peak_rss_mb()?),
        )
        .detail("VmHWM of this process at the end of the run"),
    );
    let targets = report::targets(&figures);
    let total_s = started.elapsed().as_secs_f64();
    let text = report::table(&figures, &targets, runs, total_s);
    let doc = Report {
        runs,
        build: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        apps: specs.iter().map(|s| s.key).collect(),
        figures,
        targets,
        total_s,
        peers: installed,
    };
    Ok(Shown::new(&doc, text))
}

/// Peak resident set size of this process, MB (MiB), from `VmHWM` in
/// `/proc/self/status`.
fn peak_rss_mb() -> Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| {
        ComputerError::new(
            ErrorCode::Internal,
            format!("cannot read /proc/self/status: {e}"),
        )
    })?;
    parse_vm_hwm(&status).ok_or_else(|| {
        ComputerError::new(ErrorCode::Internal, "/proc/self/status has no VmHWM line")
    })
}

fn parse_vm_hwm(status: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// What every app's measurement shares.
struct Bench<'a> {
    sandbox: &'a mut Sandbox,
    driver: Arc<dyn Driver>,
    peer: Peer,
    fixtures: Fixtures,
    dir: PathBuf,
    runs: usize,
    /// The environment of the deskpilot processes it starts ([`cli::env`]).
    cli_env: std::collections::BTreeMap<String, String>,
    peers: Option<drivers::Installed>,
}

/// The bench's own temporary directory (fixtures, the walker script and its log,
/// session state files), removed with everything in it when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("deskpilot-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            ComputerError::new(
                ErrorCode::Internal,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn run_in(
    sandbox: &mut Sandbox,
    specs: &[AppSpec],
    runs: usize,
    dir: &Path,
    installed: Option<&drivers::Installed>,
) -> Result<Vec<Figure>> {
    let env = sandbox.env();
    let dir = dir.to_path_buf();
    let config_home = env
        .get("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| sandbox.state().dir.join("config"));
    let fixtures = apps::write_fixtures(&dir, &config_home)?;
    let desktop = Desktop::of_sandbox(sandbox);
    let driver: Arc<dyn Driver> = Arc::new(
        deskpilot_driver_linux::desktop::connect(&desktop, deskpilot_host::own_paths()).await?,
    );
    say("starting the pyatspi walker (/usr/bin/python3)…");
    let peer = Peer::start(&dir, &env).await?;
    let cli_env = cli::env(&dir)?;
    let mut bench = Bench {
        sandbox,
        driver,
        peer,
        fixtures,
        dir,
        runs,
        cli_env,
        peers: installed.cloned(),
    };
    let mut figures = Vec::new();
    let mut failure = None;
    for spec in specs {
        match bench.app(spec).await {
            Ok(f) => figures.extend(f),
            Err(e) => {
                failure = Some(ComputerError::new(
                    e.code,
                    format!("bench of {}: {}", spec.key, e.message),
                ));
                break;
            }
        }
    }
    bench.peer.stop().await;
    match failure {
        Some(e) => Err(e),
        None => Ok(figures),
    }
}

/// The accessibility bus name of a window's application: the part of the handle
/// before `|` (`:1.4|/org/a11y/atspi/accessible/12` → `:1.4`).
fn bus_of(window: &WindowInfo) -> &str {
    let h = window.handle.as_str();
    h.split_once('|').map_or(h, |(bus, _)| bus)
}

impl Bench<'_> {
    async fn app(&mut self, spec: &AppSpec) -> Result<Vec<Figure>> {
        let argv = (spec.launch)(&self.fixtures);
        say(&format!("{}: launching {}…", spec.key, argv.join(" ")));
        let before = self.sandbox.marked();
        let mut child = self.sandbox.spawn(&argv)?;
        let store = StateStore::open_in(&self.dir, &format!("bench-{}", spec.key))?;
        let mut session = Session::new(self.driver.clone(), store);
        let (wref, window) = wait_window(&mut session, spec).await?;
        let target = Target::Window(wref);
        wait_ready(&mut session, &target, spec).await?;
        tokio::time::sleep(SETTLE_AFTER_LAUNCH).await;
        let bus = bus_of(&window).to_string();

        let mut figures = self.observe(spec, &mut session, &target, &bus).await?;
        let snapshot_tokens = figures
            .iter()
            .find(|f| f.metric == "snapshot_tokens")
            .map_or(0.0, |f| f.summary.median);
        figures.extend(
            self.pixels(spec, &mut session, &window, snapshot_tokens)
                .await?,
        );
        if let Some(act) = &spec.act {
            figures.extend(self.act(spec, act, &target).await?);
        }
        if let Some((text, role)) = spec.find {
            figures.push(self.find(spec, text, role, &mut session, &target).await?);
        }
        figures.extend(self.whole_process(spec, &window).await?);
        if spec.key == "mousepad" {
            figures.extend(
                link::measure(
                    spec.key,
                    spec.bus_name,
                    self.sandbox.state().display,
                    self.runs,
                    self.driver.clone(),
                    &self.dir,
                )
                .await?,
            );
        }
        // Ended before the next app is measured, with whatever it started: an app
        // still working through a peer's queued requests would load the machine
        // under the next one.
        self.sandbox.end_since(&mut child, &before);
        Ok(figures)
    }

    /// Observe and walk, interleaved (A, B, A, B…), plus tokens of both and of the
    /// screenshot the window would be.
    async fn observe(
        &mut self,
        spec: &AppSpec,
        session: &mut Session,
        target: &Target,
        bus: &str,
    ) -> Result<Vec<Figure>> {
        let opts = ObserveOptions::default();
        // Warm-up: first read of the tree on both sides, tokenizer loaded.
        session.observe(target, &opts).await?;
        self.peer.walk(bus, false).await?;
        say(&format!(
            "{}: {} observe runs interleaved with {} pyatspi walks…",
            spec.key, self.runs, self.runs
        ));
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let (mut tokens, mut shots, mut tsv_tokens) = (Vec::new(), Vec::new(), Vec::new());
        let (mut objects, mut walked, mut rows, mut quirk) = (0, 0, 0, false);
        let mut size = (0, 0);
        let mut last = None;
        for _ in 0..self.runs {
            let t = Instant::now();
            let obs = session.observe(target, &opts).await?;
            ours.push(ms(t));
            tokens.push(obs.tokens as f64);
            objects = obs.stats.objects;
            let b = obs.window.bounds.unwrap_or_default();
            size = (b.width.max(0) as u32, b.height.max(0) as u32);
            shots.push(report::screenshot_tokens(size.0, size.1) as f64);

            let w = self.peer.walk(bus, true).await?;
            theirs.push(w.ms);
            let tsv = w.tsv.unwrap_or_default();
            tsv_tokens.push(deskpilot_core::tokens::count(&tsv) as f64);
            (walked, rows, quirk) = (w.objects, w.tsv_rows, w.visible_as_showing);
            last = Some(obs);
        }
        let observe = Figure::new(spec.key, "observe_ms", "ms", summary(&ours, "observe")?)
            .with_peer(
                "pyatspi_walk",
                &format!(
                    "pyatspi walk of the whole app as OSWorld collects it (role, name, states, attributes, description, text, extents, children), timed inside python3; {walked} objects"
                ),
                summary(&theirs, "the pyatspi walk")?,
            )
            .detail(format!(
                "window lookup + tree read + render + state saved; {objects} objects read"
            ));
        let tokens = Figure::new(
            spec.key,
            "snapshot_tokens",
            "tokens",
            summary(&tokens, "tokens")?,
        )
        .with_peer(
            "screenshot",
            &format!(
                "{}×{} px window: w×h/750, 1,600 over 1.15 MP (Anthropic's estimate)",
                size.0, size.1
            ),
            summary(&shots, "screenshot tokens")?,
        )
        .with_peer(
            "osworld_tsv",
            &format!(
                "OSWorld's linearize_accessibility_tree TSV of the walked tree, {rows} rows, o200k tokens{}",
                if quirk {
                    "; VISIBLE read as SHOWING (the toolkit sets SHOWING on windows only)"
                } else {
                    ""
                }
            ),
            summary(&tsv_tokens, "TSV tokens")?,
        )
        .detail("o200k tokens of the snapshot text, as the engine counts them");
        say(&format!(
            "{}: observe {:.1} ms vs walk {:.1} ms (medians); {} tokens vs screenshot {} and TSV {}",
            spec.key,
            observe.summary.median,
            observe.peers[0].summary.median,
            tokens.summary.median,
            tokens.peers[0].summary.median,
            tokens.peers[1].summary.median
        ));
        let mut figures = vec![observe, tokens];
        if let Some(obs) = last {
            figures.push(self.coverage(spec, session, &obs, bus).await?);
        }
        Ok(figures)
    }

    /// `interactive_shown`: of the objects of an interactive role that the pyatspi
    /// walk finds on screen inside the window, the share whose line the snapshot
    /// `obs` prints: the element's own ref, or the ref of the one child that stands
    /// for it (a cell that only repeats its link's name). Names the first missing.
    async fn coverage(
        &mut self,
        spec: &AppSpec,
        session: &Session,
        obs: &deskpilot_host::Observation,
        bus: &str,
    ) -> Result<Figure> {
        let b = obs.window.bounds.unwrap_or_default();
        let rect = [
            i64::from(b.x),
            i64::from(b.y),
            i64::from(b.width),
            i64::from(b.height),
        ];
        let operable = self.peer.interactive(bus, rect).await?.interactive;
        let shown_refs: std::collections::HashSet<&str> = obs
            .text
            .split('[')
            .skip(1)
            .filter_map(|s| s.split_once(']').map(|(r, _)| r))
            .collect();
        // Each element of the tree the snapshot was rendered from: whether its
        // line, or its stand-in's, is printed.
        // A closed combo box's selected option is its printed value.
        let mut printed = std::collections::HashMap::new();
        let mut stated = std::collections::HashSet::new();
        // A closed combo box's options are not read at all (they are off screen),
        // so an option the walk sees is matched through its combo box: shown when
        // the combo box is printed with that option as its value.
        let mut combo_values = std::collections::HashMap::new();
        // LibreOffice makes a new object for a cell each time a client asks for
        // one, so a sheet's cells are matched by their A1 name (with one sheet on
        // screen), not by path.
        let (mut sheets, mut printed_cells, mut stated_cells) = (
            0usize,
            std::collections::HashSet::new(),
            std::collections::HashSet::new(),
        );
        if let Some(root) = session
            .state()
            .per_window
            .get(&obs.window.handle.0)
            .and_then(|w| w.last.as_ref())
        {
            let own = |n: &deskpilot_core::Node| {
                n.ref_.as_deref().is_some_and(|r| shown_refs.contains(r))
            };
            // An empty cell of a printed sheet is stated by the count on its table's
            // line (the render lists only cells that hold something).
            let counts_empty = obs.text.contains("empty cells not listed")
                || obs.text.contains("empty cell not listed");
            let empty_cell = |n: &deskpilot_core::Node, table: &deskpilot_core::Node| {
                counts_empty
                    && n.role == deskpilot_core::Role::Cell
                    && table.table.as_ref().is_some_and(|t| t.a1)
                    && own(table)
                    && n.value.as_deref().is_none_or(|v| v.trim().is_empty())
                    && n.children.is_empty()
            };
            let mut stack: Vec<(&deskpilot_core::Node, Option<&str>)> = vec![(root, None)];
            while let Some((n, combo_value)) = stack.pop() {
                if n.table.as_ref().is_some_and(|t| t.a1) {
                    sheets += 1;
                }
                for c in &n.children {
                    if !own(c) && empty_cell(c, n) {
                        stated.insert(c.handle.0.as_str());
                        stated_cells.insert(c.name.trim());
                    } else if own(c) && n.table.as_ref().is_some_and(|t| t.a1) {
                        printed_cells.insert(c.name.trim());
                    }
                }
                // The render lets a child stand in only when it has the same name.
                let stand_in = n.children.len() == 1
                    && own(&n.children[0])
                    && n.children[0].name.trim() == n.name.trim();
                let as_value = combo_value.is_some_and(|v| !n.name.is_empty() && v == n.name);
                printed.insert(n.handle.0.as_str(), own(n) || stand_in || as_value);
                let value = if n.role == deskpilot_core::Role::Combobox && own(n) {
                    if let Some(v) = n.value.as_deref() {
                        combo_values.insert(n.handle.0.as_str(), v);
                    }
                    n.value.as_deref()
                } else {
                    combo_value
                };
                stack.extend(n.children.iter().map(|c| (c, value)));
            }
        }
        let (mut shown, mut counted, mut missing) = (0usize, 0usize, Vec::new());
        let mut by_role: std::collections::BTreeMap<&str, usize> = Default::default();
        for o in &operable {
            let handle = format!("{bus}|{}", o.path);
            let sheet_cell = sheets == 1 && o.role == "table cell";
            let name = o.name.trim();
            let chosen = o
                .combo
                .as_ref()
                .is_some_and(|c| combo_values.get(format!("{bus}|{c}").as_str()) == Some(&name));
            if printed.get(handle.as_str()).copied().unwrap_or(false)
                || chosen
                || (sheet_cell && printed_cells.contains(name))
            {
                shown += 1;
            } else if stated.contains(handle.as_str())
                || (sheet_cell && stated_cells.contains(name))
            {
                counted += 1;
            } else {
                *by_role.entry(o.role.as_str()).or_default() += 1;
                missing.push(format!(
                    "{} {:?}",
                    o.role,
                    deskpilot_core::sanitize::truncate_value(&o.name, 30)
                ));
            }
        }
        let tally = by_role
            .iter()
            .map(|(r, k)| format!("{k} {r}"))
            .collect::<Vec<_>>()
            .join(", ");
        let total = operable.len();
        let pct = if total == 0 {
            100.0
        } else {
            100.0 * (shown + counted) as f64 / total as f64
        };
        let counted_note = if counted == 0 {
            String::new()
        } else {
            format!(", {counted} more are empty sheet cells counted on their table's line")
        };
        let listed = missing
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        say(&format!(
            "{}: {shown} of {total} on-screen interactive elements have a line{counted_note} ({pct:.1} %){}",
            spec.key,
            if missing.is_empty() {
                String::new()
            } else {
                format!("; missing {tally}, e.g. {listed}")
            }
        ));
        Ok(Figure::new(
            spec.key,
            "interactive_shown",
            "%",
            summary(&[pct], "interactive elements shown")?,
        )
        .detail(format!(
            "{shown} of {total} objects of an interactive AT-SPI role, SHOWING and VISIBLE with an area inside the window (a pyatspi walk), have a line in the snapshot (their ref, or the one child standing for them){counted_note}{}",
            if missing.is_empty() {
                String::new()
            } else {
                format!("; not shown: {tally}, e.g. {listed}")
            }
        )))
    }

    /// The pixel rung on the window: capture latency (GetImage, downscale to the
    /// default 1,280 px long side, PNG), OCR latency (capture + local tesseract),
    /// and the vision tokens of the marked screenshot next to the snapshot's.
    async fn pixels(
        &mut self,
        spec: &AppSpec,
        session: &mut Session,
        window: &WindowInfo,
        snapshot_tokens: f64,
    ) -> Result<Vec<Figure>> {
        use deskpilot_host::host::pixels::{DEFAULT_MAX_SIDE, mark_specs};
        use deskpilot_protocol::types::{CaptureParams, OcrParams};
        let root = session.peek(window).await?;
        let marks = mark_specs(&root);
        let params = CaptureParams {
            window: window.handle.clone(),
            max_side: Some(DEFAULT_MAX_SIDE),
            paint: Vec::new(),
            marks: marks.clone(),
        };
        self.driver.capture(params.clone()).await?;
        say(&format!("{}: {} marked captures…", spec.key, self.runs));
        let (mut times, mut tokens, mut size) = (Vec::new(), Vec::new(), (0, 0));
        for _ in 0..self.runs {
            let t = Instant::now();
            let shot = self.driver.capture(params.clone()).await?;
            times.push(ms(t));
            size = (shot.width, shot.height);
            tokens.push(deskpilot_core::tokens::image_tokens(shot.width, shot.height) as f64);
        }
        let ocr_runs = self.runs.min(OCR_RUNS);
        say(&format!("{}: {ocr_runs} OCR reads…", spec.key));
        let ocr = OcrParams {
            window: window.handle.clone(),
            paint: Vec::new(),
            region: None,
        };
        let warm = self.driver.ocr(ocr.clone()).await?;
        let mut ocr_ms = Vec::new();
        for _ in 0..ocr_runs {
            let t = Instant::now();
            self.driver.ocr(ocr.clone()).await?;
            ocr_ms.push(ms(t));
        }
        let capture = Figure::new(spec.key, "capture_ms", "ms", summary(&times, "capture")?)
            .detail(format!(
                "X11 GetImage of the window, {} marks drawn, downscaled to {}×{} (long side {DEFAULT_MAX_SIDE}), PNG encoded",
                marks.len(),
                size.0,
                size.1
            ));
        let ocr = Figure::new(spec.key, "ocr_ms", "ms", summary(&ocr_ms, "OCR")?).detail(format!(
            "capture + tesseract {} on the device-resolution window; {} runs of text read; {ocr_runs} counted runs",
            warm.languages,
            warm.words.len()
        ));
        let shot = Figure::new(
            spec.key,
            "marked_screenshot_tokens",
            "tokens",
            summary(&tokens, "marked screenshot tokens")?,
        )
        .detail(format!(
            "the marked screenshot a vision model would read: {}×{} px, w×h/750 (an estimate); the snapshot of the same window is {snapshot_tokens:.0} o200k tokens",
            size.0, size.1
        ));
        say(&format!(
            "{}: capture {:.1} ms, OCR {:.0} ms (medians); marked screenshot {} tokens vs snapshot {snapshot_tokens:.0}",
            spec.key, capture.summary.median, ocr.summary.median, shot.summary.median
        ));
        Ok(vec![capture, ocr, shot])
    }

    /// The host the bench acts through: the sandbox's own policy (`enabled`, mode
    /// `accept-edits` with every app allow-listed, docs/ARCHITECTURE.md §7.14) with
    /// an action budget the runs cannot spend, its own state file and session
    /// `bench`, and the user's audit log (`DESKPILOT_AUDIT` or the default path), so
    /// every act the bench performs is judged and recorded like any other.
    fn host(&self, spec: &AppSpec) -> Result<Host> {
        let mut settings = Config::default().effective(true);
        settings.action_budget = BENCH_ACTION_BUDGET;
        let state = self.sandbox.state();
        let key = desktop_key(&self.sandbox.display(), &state.bus_address);
        let mut opts = HostOptions::new(&key, "bench", "bench", settings);
        opts.desktop_dir = state.dir.clone();
        let store = StateStore::open_in(&self.dir, &format!("bench-act-{}", spec.key))?;
        Ok(Host::new(Session::new(self.driver.clone(), store), opts))
    }

    /// The act round trip (dispatch to diff returned, the settle included) and the
    /// tokens of the result a model reads after it (`act_tokens`).
    ///
    /// The acts go through a [`Host`] like any caller's ([`Bench::host`]): the
    /// pipeline every effect passes (docs/ARCHITECTURE.md §7.11), under a permissive
    /// bench policy, each recorded in the audit log.
    async fn act(
        &mut self,
        spec: &AppSpec,
        act: &apps::ActSpec,
        target: &Target,
    ) -> Result<Vec<Figure>> {
        let mut host = self.host(spec)?;
        // Binds the grant to the app's window and shows its refs under its revision.
        host.observe(target, &ObserveOptions::default()).await?;
        let hits = host
            .find(target, act.name.unwrap_or(""), Some(act.role), 500)
            .await?
            .hits;
        let hit = hits
            .into_iter()
            .find(|h| match act.name {
                Some(n) => name_matches(&h.name, n),
                None => h.states.contains(State::Editable),
            })
            .ok_or_else(|| {
                ComputerError::new(
                    ErrorCode::ElementNotFound,
                    format!(
                        "no {} {} in the window to {} on",
                        act.role,
                        act.name
                            .map(|n| format!("{n:?}"))
                            .unwrap_or_else(|| "that is editable".into()),
                        act.label
                    ),
                )
            })?;
        say(&format!(
            "{}: {} act runs ({} on {})…",
            spec.key, self.runs, act.label, hit.ref_
        ));
        let mut samples = Vec::new();
        let mut diff_tokens = Vec::new();
        let (mut dispatch, mut settle, mut events) = (Vec::new(), Vec::new(), Vec::new());
        let mut reads = Vec::new();
        let mut not_executed = 0;
        let mut channel = String::new();
        for i in 0..=self.runs {
            let value = act.with_value.then(|| format!("bench run {i}"));
            let t = Instant::now();
            let out = host.act(&hit.ref_, act.op, value).await?;
            let elapsed = ms(t);
            if i == 0 {
                continue; // warm-up
            }
            samples.push(elapsed);
            diff_tokens.push(out.tokens as f64);
            dispatch.push(out.result.elapsed_ms as f64);
            if let Some(s) = &out.result.settle {
                settle.push(s.waited_ms as f64);
                events.push(s.events as f64);
                if let Some(n) = s.reads {
                    reads.push(n as f64);
                }
            }
            if out.result.status != ActStatus::Executed {
                not_executed += 1;
            }
            channel = format!("{}:{}", out.result.channel.as_str(), out.result.method);
        }
        // One grant is active per desktop: the bench's is revoked (and audited so)
        // before the whole-process figures run deskpilot's own commands there.
        host.revoke()?;
        let tokens = summary(&diff_tokens, "act result tokens")?;
        let mut detail = format!(
            "dispatch to diff returned, via {channel}; medians: dispatch {:.0} ms, settle {} ms ({} events{}), result {:.0} tokens",
            summary(&dispatch, "dispatch")?.median,
            Summary::of(&settle).map_or("-".into(), |s| format!("{:.0}", s.median)),
            Summary::of(&events).map_or("-".into(), |s| format!("{:.0}", s.median)),
            Summary::of(&reads).map_or(String::new(), |s| format!(
                ", {:.0} window reads while settling",
                s.median
            )),
            tokens.median
        );
        if not_executed > 0 {
            detail.push_str(&format!("; {not_executed} runs not reported executed"));
        }
        let f = Figure::new(spec.key, "act_ms", "ms", summary(&samples, "act")?)
            .subject(act.label)
            .detail(detail);
        say(&format!(
            "{}: {} {:.0} ms median, {:.0} ms p95",
            spec.key, act.label, f.summary.median, f.summary.p95
        ));
        let t = Figure::new(spec.key, "act_tokens", "tokens", tokens)
            .subject(act.label)
            .detail(
                "o200k tokens of the whole act result a model reads: its first line and the diff",
            );
        Ok(vec![f, t])
    }

    /// deskpilot's whole processes on this app ([`cli`]), the MCP server's memory
    /// on mousepad, and with `--peers` the peer drivers ([`drivers`]).
    async fn whole_process(&mut self, spec: &AppSpec, window: &WindowInfo) -> Result<Vec<Figure>> {
        let display = self.sandbox.state().display;
        let env = self.cli_env.clone();
        let runs = self.runs;
        let key = spec.key;
        let bus_name = spec.bus_name;
        let peers = self.peers.clone();
        let sandbox_env = self.sandbox.env();
        let window = window.clone();
        let dir = self.dir.clone();
        say(&format!("{key}: whole CLI processes, {runs} runs each…"));
        tokio::task::spawn_blocking(move || -> Result<Vec<Figure>> {
            let mut figs = Vec::new();
            let observe = cli::repeat(
                &cli::argv(display, &["observe", "--app", bus_name])?,
                &env,
                runs,
            )?;
            let snapshot = observe.last().map(|r| r.stdout.clone()).unwrap_or_default();
            figs.extend(cli::figures(
                key,
                &format!("observe --app {bus_name}"),
                &observe,
            )?);
            if key == "mousepad" {
                for args in [
                    vec!["--version"],
                    vec!["apps"],
                    vec!["find", "line 0001", "--app", bus_name],
                ] {
                    let r = cli::repeat(&cli::argv(display, &args)?, &env, runs)?;
                    figs.extend(cli::figures(key, &args.join(" "), &r)?);
                }
                let textbox = cli::editable_textbox(&snapshot).ok_or_else(|| {
                    ComputerError::new(
                        ErrorCode::ElementNotFound,
                        "the CLI snapshot of mousepad shows no editable textbox",
                    )
                })?;
                let act = cli::repeat(
                    &cli::argv(display, &["act", &textbox, "set_value", "cli run"])?,
                    &env,
                    runs,
                )?;
                figs.extend(cli::figures(key, "act TEXTBOX set_value", &act)?);
                say(&format!(
                    "{key}: the MCP server over {} calls…",
                    cli::MCP_CALLS
                ));
                figs.push(cli::mcp_memory(display, &env)?);
            }
            if let Some(p) = &peers {
                say(&format!("{key}: the peers, whole process and warm…"));
                match drivers::measure(
                    p,
                    key,
                    bus_name,
                    &window,
                    display,
                    &env,
                    &sandbox_env,
                    runs,
                    &dir,
                ) {
                    Ok(f) => figs.extend(f),
                    // One app's peers failing does not lose the rest of the run;
                    // the report says which were not measured and why.
                    Err(e) => {
                        say(&format!(
                            "{key}: the peers were not measured: {}",
                            e.message
                        ));
                        figs.push(
                            Figure::new(key, "peers_not_measured", "ms", Summary::once(0.0))
                                .detail(format!(
                                    "the peers were not measured on {key}: {}",
                                    e.message
                                )),
                        );
                    }
                }
            }
            Ok(figs)
        })
        .await
        .map_err(|e| ComputerError::new(ErrorCode::Internal, format!("bench task failed: {e}")))?
    }

    /// Latency of `find` for one named element.
    async fn find(
        &mut self,
        spec: &AppSpec,
        text: &str,
        role: deskpilot_core::Role,
        session: &mut Session,
        target: &Target,
    ) -> Result<Figure> {
        say(&format!(
            "{}: {} find runs ({role} {text:?})…",
            spec.key, self.runs
        ));
        let mut samples = Vec::new();
        let mut found = 0;
        for i in 0..=self.runs {
            let t = Instant::now();
            let hits = session.find(target, text, Some(role), 20).await?.hits;
            let elapsed = ms(t);
            if i > 0 {
                samples.push(elapsed);
                found += usize::from(hits.iter().any(|h| h.name.contains(text)));
            }
        }
        let f = Figure::new(spec.key, "find_ms", "ms", summary(&samples, "find")?)
            .subject(format!("{role} {text:?}"))
            .detail(format!(
                "window read + search; the element was found in {found} of {} runs",
                samples.len()
            ));
        say(&format!(
            "{}: find {:.1} ms median ({found}/{} found)",
            spec.key,
            f.summary.median,
            samples.len()
        ));
        Ok(f)
    }
}

/// True when an accessible name is `want`, or `want` repeated: GTK 4.8 names a button
/// with a label child after the button and the label both (gnome-calculator's "7"
/// button is named `7 7`).
fn name_matches(name: &str, want: &str) -> bool {
    name == want || (!name.is_empty() && name.split_whitespace().all(|w| w == want))
}

/// Waits for a readable window of the app whose title contains `spec.title`;
/// returns its `wN` ref and description.
async fn wait_window(
    session: &mut Session,
    spec: &AppSpec,
) -> Result<(String, WindowInfo), ComputerError> {
    let deadline = Instant::now() + spec.launch_timeout;
    let title = spec.title.to_lowercase();
    loop {
        if let Ok(apps) = session.apps().await {
            for (app, refs) in apps {
                if !app.name.eq_ignore_ascii_case(spec.bus_name) || app.status != AppStatus::Ok {
                    continue;
                }
                let mut cands: Vec<(WindowInfo, String)> = app
                    .windows
                    .into_iter()
                    .zip(refs)
                    .filter(|(w, _)| w.title.to_lowercase().contains(&title))
                    .collect();
                cands.sort_by_key(|(w, _)| !w.active);
                if let Some((w, r)) = cands.into_iter().next() {
                    return Ok((r, w));
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(ComputerError::new(
                ErrorCode::Timeout,
                format!(
                    "no window of {} titled like {:?} within {} s; is it installed (scripts/install-deps)?",
                    spec.bus_name,
                    spec.title,
                    spec.launch_timeout.as_secs()
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the window's tree holds the app's ready text (its content is built).
async fn wait_ready(session: &mut Session, target: &Target, spec: &AppSpec) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(hits) = session.find(target, spec.ready_text, None, 1).await
            && !hits.hits.is_empty()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(ComputerError::new(
                ErrorCode::Timeout,
                format!(
                    "the {} window never showed {:?} within {} s",
                    spec.key,
                    spec.ready_text,
                    READY_TIMEOUT.as_secs()
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_hwm_is_read_in_mebibytes() {
        let status =
            "Name:\tdeskpilot\nVmPeak:\t  300000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t 40000 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(50.0));
        assert_eq!(parse_vm_hwm("VmRSS: 1 kB\n"), None);
        assert!(peak_rss_mb().unwrap() > 0.0);
    }

    #[test]
    fn names_match_exactly_or_repeated() {
        assert!(name_matches("7", "7"));
        assert!(name_matches("7 7", "7"));
        assert!(!name_matches("17", "7"));
        assert!(!name_matches("7 8", "7"));
        assert!(!name_matches("", "7"));
    }

    #[test]
    fn the_bus_name_is_the_head_of_the_handle() {
        let w = WindowInfo {
            device_bounds: None,
            toolkit_scale: None,
            no_tree: false,
            covered_by: Vec::new(),
            hidden: None,
            handle: deskpilot_core::Handle(":1.4|/org/a11y/atspi/accessible/12".into()),
            app: "mousepad".into(),
            pid: None,
            title: String::new(),
            role: deskpilot_core::Role::Window,
            active: false,
            bounds: None,
        };
        assert_eq!(bus_of(&w), ":1.4");
    }
}

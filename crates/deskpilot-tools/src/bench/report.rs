//! What the bench reports: figures, the peers they are compared with, the targets,
//! and the human table.
//!
//! Pure: turns collected [`Summary`]s into the JSON document and the text table, and
//! checks the targets (goals, reported as met or missed, never asserted). It
//! measures nothing and prints nothing.

use serde::Serialize;

use super::stats::Summary;

/// Screenshot size above which Anthropic downscales an image before the model sees
/// it, in pixels (1.15 megapixels).
pub const SCREENSHOT_DOWNSCALE_PIXELS: u64 = 1_150_000;
/// Tokens of a screenshot at or above [`SCREENSHOT_DOWNSCALE_PIXELS`].
pub const SCREENSHOT_MAX_TOKENS: u64 = 1_600;

/// Tokens a model is charged for a screenshot of `width`×`height` pixels: width ×
/// height / 750 rounded to the nearest token, and 1,600 for images over 1.15
/// megapixels (which are downscaled first). Source: Anthropic's vision documentation,
/// "Calculate image costs".
pub fn screenshot_tokens(width: u32, height: u32) -> u64 {
    let pixels = u64::from(width) * u64::from(height);
    if pixels > SCREENSHOT_DOWNSCALE_PIXELS {
        SCREENSHOT_MAX_TOKENS
    } else {
        (pixels + 375) / 750
    }
}

/// What a figure is compared with.
#[derive(Debug, Clone, Serialize)]
pub struct Peer {
    /// `pyatspi_walk`, `screenshot`, `osworld_tsv`, or with `--peers`
    /// `xa11y_cli`, `xa11y_mcp`, `cua_driver_cli`, `cua_driver_mcp`.
    pub name: &'static str,
    /// How the peer's figure was obtained.
    pub method: String,
    #[serde(flatten)]
    pub summary: Summary,
    /// Peer median ÷ deskpilot median (how many times faster or smaller deskpilot is).
    pub ratio: f64,
}

/// One measured figure of one app.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// Bench app key (`mousepad`, …), or `deskpilot` for the process itself.
    pub app: String,
    /// `observe_ms`, `snapshot_tokens`, `act_ms`, `act_tokens`, `find_ms`,
    /// `capture_ms`, `ocr_ms`, `marked_screenshot_tokens`, `link_overhead_ms`,
    /// `peak_rss_mb`, `cli_ms`, `cli_rss_mb`, `mcp_rss_mb`, or with `--peers`
    /// `whole_process_ms`, `warm_mcp_ms`, `output_tokens`, and `peers_not_measured`
    /// (value 0; its detail says why) for an app whose peers failed.
    pub metric: &'static str,
    /// `ms`, `tokens` or `MB` (MiB).
    pub unit: &'static str,
    #[serde(flatten)]
    pub summary: Summary,
    /// What was acted on or searched for (`set_value`, `click 7`, `link "Order #0008"`);
    /// empty for observe, tokens and memory.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// How exactly it was measured, and what else was seen.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<Peer>,
}

impl Figure {
    /// A figure with no peer.
    pub fn new(app: &str, metric: &'static str, unit: &'static str, summary: Summary) -> Figure {
        Figure {
            app: app.to_string(),
            metric,
            unit,
            summary,
            subject: String::new(),
            detail: String::new(),
            peers: Vec::new(),
        }
    }

    /// Sets what was acted on or searched for.
    pub fn subject(mut self, s: impl Into<String>) -> Figure {
        self.subject = s.into();
        self
    }

    /// Adds a peer; its ratio is the peer's median over this figure's median.
    pub fn with_peer(mut self, name: &'static str, method: &str, summary: Summary) -> Figure {
        let ratio = if self.summary.median > 0.0 {
            summary.median / self.summary.median
        } else {
            f64::INFINITY
        };
        self.peers.push(Peer {
            name,
            method: method.to_string(),
            summary,
            ratio,
        });
        self
    }

    /// Sets the detail text.
    pub fn detail(mut self, d: impl Into<String>) -> Figure {
        self.detail = d.into();
        self
    }

    fn peer(&self, name: &str) -> Option<&Peer> {
        self.peers.iter().find(|p| p.name == name)
    }
}

/// A goal from the issue, checked against the figures.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub goal: &'static str,
    pub met: bool,
    /// The figures that decided it, e.g. `mousepad 12.4×, chromium 9.1×`.
    pub measured: String,
}

/// Minimum pyatspi-walk / observe ratio on every app.
pub const OBSERVE_SPEEDUP_GOAL: f64 = 10.0;
/// Whole-process `deskpilot observe --app mousepad` median ceiling, ms.
pub const CLI_OBSERVE_GOAL_MS: f64 = 40.0;
/// Its peak memory ceiling, MiB.
pub const CLI_OBSERVE_GOAL_MB: f64 = 25.0;
/// Snapshot budget every app must fit, tokens (docs/ARCHITECTURE.md §4).
pub const SNAPSHOT_BUDGET: f64 = 2_000.0;
/// Tokens per snapshot ceiling on every app (0.6 of a 1,024×768 screenshot's 1,049).
pub const SNAPSHOT_TOKENS_GOAL: f64 = 600.0;
/// Median tokens of an act result ceiling.
pub const ACT_TOKENS_GOAL: f64 = 60.0;
/// Mousepad `set_value` round trip median ceiling, ms.
pub const MOUSEPAD_ACT_GOAL_MS: f64 = 150.0;
/// Calculator click round trip median ceiling, ms (GTK 4 runs "clicked" 250 ms
/// after the action).
pub const CALCULATOR_ACT_GOAL_MS: f64 = 350.0;
/// Peak memory of a whole-process `deskpilot observe` of LibreOffice, MiB.
pub const LIBREOFFICE_CLI_GOAL_MB: f64 = 40.0;
/// Resident memory of `deskpilot mcp` after 1,000 calls, MiB.
pub const MCP_RSS_GOAL_MB: f64 = 60.0;

fn fig<'a>(figs: &'a [Figure], app: &str, metric: &str) -> Option<&'a Figure> {
    figs.iter().find(|f| f.app == app && f.metric == metric)
}

fn fig_of<'a>(figs: &'a [Figure], app: &str, metric: &str, subject: &str) -> Option<&'a Figure> {
    figs.iter()
        .find(|f| f.app == app && f.metric == metric && f.subject == subject)
}

/// One target over every figure of `metric`: met when each passes `ok`.
fn every(
    figs: &[Figure],
    metric: &str,
    goal: &'static str,
    ok: impl Fn(&Figure) -> bool,
    show: impl Fn(&Figure) -> String,
) -> Option<Target> {
    let all: Vec<&Figure> = figs.iter().filter(|f| f.metric == metric).collect();
    (!all.is_empty()).then(|| Target {
        goal,
        met: all.iter().all(|f| ok(f)),
        measured: all
            .iter()
            .map(|f| format!("{} {}", f.app, show(f)))
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Checks the targets against whatever figures exist (a target whose apps
/// were not measured is left out).
pub fn targets(figs: &[Figure]) -> Vec<Target> {
    let mut out = Vec::new();
    out.extend(every(
        figs,
        "observe_ms",
        "observe ≥ 10× faster than a pyatspi walk on every app",
        |f| {
            f.peer("pyatspi_walk")
                .is_some_and(|p| p.ratio >= OBSERVE_SPEEDUP_GOAL)
        },
        |f| {
            f.peer("pyatspi_walk")
                .map_or("-".into(), |p| format!("{:.1}×", p.ratio))
        },
    ));
    let cli = "observe --app mousepad";
    if let (Some(t), Some(m)) = (
        fig_of(figs, "mousepad", "cli_ms", cli),
        fig_of(figs, "mousepad", "cli_rss_mb", cli),
    ) {
        out.push(Target {
            goal: "CLI `observe --app mousepad` whole process ≤ 40 ms and ≤ 25 MiB",
            met: t.summary.median <= CLI_OBSERVE_GOAL_MS && m.summary.median <= CLI_OBSERVE_GOAL_MB,
            measured: format!("{:.1} ms, {:.1} MiB", t.summary.median, m.summary.median),
        });
    }
    out.extend(every(
        figs,
        "snapshot_tokens",
        "snapshot ≤ 600 tokens on every app",
        |f| f.summary.median <= SNAPSHOT_TOKENS_GOAL,
        |f| format!("{:.0}", f.summary.median),
    ));
    out.extend(every(
        figs,
        "interactive_shown",
        "every on-screen interactive element has a line (against a pyatspi count)",
        |f| f.summary.median >= 100.0,
        |f| format!("{:.1} %", f.summary.median),
    ));
    out.extend(every(
        figs,
        "snapshot_tokens",
        "every snapshot ≤ 2,000 tokens while OSWorld's flat TSV is larger",
        |f| {
            f.summary.p95 <= SNAPSHOT_BUDGET
                && f.peer("osworld_tsv")
                    .is_some_and(|t| t.summary.median > f.summary.median)
        },
        |f| {
            format!(
                "{:.0} vs {}",
                f.summary.p95,
                f.peer("osworld_tsv")
                    .map_or("-".into(), |t| format!("{:.0}", t.summary.median))
            )
        },
    ));
    out.extend(every(
        figs,
        "act_tokens",
        "act result median ≤ 60 tokens on every action",
        |f| f.summary.median <= ACT_TOKENS_GOAL,
        |f| format!("{} {:.0}", f.subject, f.summary.median),
    ));
    for (f, goal, ceiling, unit) in [
        (
            fig(figs, "mousepad", "act_ms"),
            "mousepad set_value round trip median ≤ 150 ms",
            MOUSEPAD_ACT_GOAL_MS,
            "ms",
        ),
        (
            fig(figs, "calculator", "act_ms"),
            "calculator click round trip median ≤ 350 ms",
            CALCULATOR_ACT_GOAL_MS,
            "ms",
        ),
        (
            fig_of(figs, "libreoffice", "cli_rss_mb", "observe --app soffice"),
            "CLI observe of LibreOffice peak memory ≤ 40 MiB",
            LIBREOFFICE_CLI_GOAL_MB,
            "MiB",
        ),
        (
            fig(figs, "mousepad", "mcp_rss_mb"),
            "`deskpilot mcp` after 1,000 calls ≤ 60 MiB",
            MCP_RSS_GOAL_MB,
            "MiB",
        ),
    ] {
        if let Some(f) = f {
            out.push(Target {
                goal,
                met: f.summary.median <= ceiling,
                measured: match unit {
                    "ms" => format!("{:.0} ms", f.summary.median),
                    u => format!("{:.1} {u}", f.summary.median),
                },
            });
        }
    }
    let unmeasured: Vec<&str> = figs
        .iter()
        .filter(|f| f.metric == "peers_not_measured")
        .map(|f| f.app.as_str())
        .collect();
    for (metric, goal, expected) in [
        (
            "whole_process_ms",
            "faster than xa11y and cua-driver whole process on every app",
            ["xa11y_cli", "cua_driver_cli"],
        ),
        (
            "warm_mcp_ms",
            "faster than xa11y and cua-driver warm (MCP) on every app",
            ["xa11y_mcp", "cua_driver_mcp"],
        ),
    ] {
        out.extend(
            every(
                figs,
                metric,
                goal,
                |f| {
                    expected.iter().all(|e| f.peer(e).is_some())
                        && f.peers.iter().all(|p| p.ratio > 1.0)
                },
                |f| {
                    expected
                        .iter()
                        .map(|e| match f.peer(e) {
                            Some(p) => format!("{e} {:.1}×", p.ratio),
                            None => format!("{e} not run"),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                },
            )
            .map(|mut t| {
                if !unmeasured.is_empty() {
                    t.met = false;
                    t.measured
                        .push_str(&format!("; not measured on {}", unmeasured.join(", ")));
                }
                t
            }),
        );
    }
    out
}

fn num(v: f64, unit: &str) -> String {
    match unit {
        "ms" if v < 10.0 => format!("{v:.2}"),
        "ms" => format!("{v:.1}"),
        "MB" | "%" => format!("{v:.1}"),
        _ => format!("{v:.0}"),
    }
}

fn pair(s: &Summary, unit: &str) -> String {
    if s.n == 1 || s.median == s.p95 {
        format!("{} {unit}", num(s.median, unit))
    } else {
        format!("{} / {} {unit}", num(s.median, unit), num(s.p95, unit))
    }
}

fn metric_label(f: &Figure) -> String {
    let base = match f.metric {
        "observe_ms" => "observe",
        "snapshot_tokens" => "tokens",
        "act_ms" => "act",
        "find_ms" => "find",
        "peak_rss_mb" => "peak RSS",
        "capture_ms" => "capture",
        "ocr_ms" => "OCR",
        "marked_screenshot_tokens" => "marked shot tokens",
        "link_overhead_ms" => "link overhead",
        "act_tokens" => "act tokens",
        "interactive_shown" => "interactive shown",
        "cli_ms" => "cli",
        "cli_rss_mb" => "cli peak RSS",
        "mcp_rss_mb" => "mcp RSS",
        "whole_process_ms" => "whole process",
        "warm_mcp_ms" => "warm MCP",
        "output_tokens" => "output tokens",
        "peers_not_measured" => "peers not measured",
        other => other,
    };
    if f.subject.is_empty() {
        base.to_string()
    } else {
        format!("{base} {}", f.subject)
    }
}

/// The human table: one line per figure (median / p95 and n), its peers with their
/// ratio on the following lines, then the targets.
pub fn table(figs: &[Figure], targets: &[Target], runs: usize, total_s: f64) -> String {
    let app_w = figs
        .iter()
        .map(|f| f.app.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    let metric_w = figs
        .iter()
        .map(|f| metric_label(f).chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    const OURS_W: usize = 22;
    const N_W: usize = 3;
    let peer_col = app_w + metric_w + OURS_W + N_W + 4;
    let mut t = format!(
        "deskpilot bench · {runs} runs per figure after one warm-up · median / p95\n\n\
         {:<app_w$} {:<metric_w$} {:<OURS_W$} {:<N_W$} compared with (median / p95 · ratio peer÷deskpilot)\n",
        "app", "metric", "deskpilot", "n"
    );
    for f in figs {
        let peer_text =
            |p: &Peer| format!("{} {} · {:.1}×", p.name, pair(&p.summary, f.unit), p.ratio);
        let line = format!(
            "{:<app_w$} {:<metric_w$} {:<OURS_W$} {:<N_W$} {}",
            f.app,
            metric_label(f),
            pair(&f.summary, f.unit),
            f.summary.n,
            f.peers.first().map(peer_text).unwrap_or_default()
        );
        t.push_str(line.trim_end());
        t.push('\n');
        for p in f.peers.iter().skip(1) {
            t.push_str(&format!("{:<peer_col$}{}\n", "", peer_text(p)));
        }
        if !f.detail.is_empty() {
            t.push_str(&format!("{:<app_w$} {}\n", "", f.detail));
        }
    }
    t.push_str("\ntargets (goals, not assertions):\n");
    for g in targets {
        t.push_str(&format!(
            "  [{}] {} — {}\n",
            if g.met { "met" } else { "MISSED" },
            g.goal,
            g.measured
        ));
    }
    t.push_str(&format!("\nfinished in {total_s:.0} s"));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screenshot_tokens_follow_the_published_estimate() {
        // 642×505 = 324,210 px → 432.28 tokens.
        assert_eq!(screenshot_tokens(642, 505), 432);
        // 1000×1000 px = 1 MP (under 1.15 MP): 1,333.3 tokens.
        assert_eq!(screenshot_tokens(1000, 1000), 1_333);
        // Over 1.15 MP: downscaled, 1,600.
        assert_eq!(screenshot_tokens(1920, 1080), 1_600);
        assert_eq!(screenshot_tokens(0, 500), 0);
    }

    fn sample() -> Vec<Figure> {
        vec![
            Figure::new(
                "mousepad",
                "observe_ms",
                "ms",
                Summary::of(&[10.0, 12.0]).unwrap(),
            )
            .with_peer(
                "pyatspi_walk",
                "walk",
                Summary::of(&[130.0, 140.0]).unwrap(),
            ),
            Figure::new("chromium", "observe_ms", "ms", Summary::once(200.0)).with_peer(
                "pyatspi_walk",
                "walk",
                Summary::once(1_000.0),
            ),
            Figure::new(
                "mousepad",
                "snapshot_tokens",
                "tokens",
                Summary::once(144.0),
            )
            .with_peer("screenshot", "w×h/750", Summary::once(432.0))
            .with_peer("osworld_tsv", "tsv", Summary::once(30_000.0)),
            Figure::new("calculator", "act_ms", "ms", Summary::once(380.0)).subject("click 7"),
            Figure::new("deskpilot", "peak_rss_mb", "MB", Summary::once(61.5)),
        ]
    }

    #[test]
    fn ratios_are_peer_over_deskpilot() {
        let f = &sample()[0];
        assert_eq!(f.peers[0].ratio, 135.0 / 11.0);
    }

    #[test]
    fn targets_are_checked_against_the_figures() {
        let mut figs = sample();
        figs.push(
            Figure::new("mousepad", "cli_ms", "ms", Summary::once(31.0))
                .subject("observe --app mousepad"),
        );
        figs.push(
            Figure::new("mousepad", "cli_rss_mb", "MB", Summary::once(22.5))
                .subject("observe --app mousepad"),
        );
        figs.push(
            Figure::new("mousepad", "act_tokens", "tokens", Summary::once(41.0))
                .subject("set_value"),
        );
        figs.push(
            Figure::new("mousepad", "whole_process_ms", "ms", Summary::once(30.0))
                .with_peer("xa11y_cli", "tree", Summary::once(600.0))
                .with_peer("cua_driver_cli", "call", Summary::once(25.0)),
        );
        let t = targets(&figs);
        let by = |goal: &str| t.iter().find(|g| g.goal.starts_with(goal)).unwrap();
        let speed = by("observe ≥ 10×");
        assert!(!speed.met, "chromium is only 5×");
        assert_eq!(speed.measured, "mousepad 12.3×, chromium 5.0×");
        let cli = by("CLI `observe");
        assert!(cli.met);
        assert_eq!(cli.measured, "31.0 ms, 22.5 MiB");
        assert!(by("snapshot ≤ 600").met, "144 tokens");
        assert!(by("every snapshot").met);
        assert!(by("act result").met);
        assert!(!by("calculator click").met, "380 > 350");
        let whole = by("faster than xa11y and cua-driver whole");
        assert!(!whole.met, "cua-driver's 25 ms beats 30 ms");
        assert_eq!(
            whole.measured,
            "mousepad xa11y_cli 20.0× cua_driver_cli 0.8×"
        );
        assert_eq!(t.len(), 7);
    }

    #[test]
    fn a_peer_that_was_not_run_leaves_its_target_unmet() {
        // xa11y's MCP server is not run on an app its CLI could not read in time.
        let figs = vec![
            Figure::new("libreoffice", "warm_mcp_ms", "ms", Summary::once(300.0)).with_peer(
                "cua_driver_mcp",
                "get_window_state",
                Summary::once(360.0),
            ),
        ];
        let t = targets(&figs);
        let warm = t
            .iter()
            .find(|g| g.goal.starts_with("faster than xa11y and cua-driver warm"))
            .unwrap();
        assert!(!warm.met, "only one peer was measured");
        assert_eq!(
            warm.measured,
            "libreoffice xa11y_mcp not run cua_driver_mcp 1.2×"
        );
    }

    #[test]
    fn the_table_shows_each_figure_and_each_peer() {
        let figs = sample();
        let text = table(&figs, &targets(&figs), 20, 123.4);
        assert!(
            text.contains("mousepad   observe     11.0 / 12.0 ms         2   pyatspi_walk 135.0 / 140.0 ms · 12.3×\n"),
            "{text}"
        );
        assert!(
            text.contains("pyatspi_walk 135.0 / 140.0 ms · 12.3×"),
            "{text}"
        );
        assert!(
            text.contains(&format!("\n{:50}osworld_tsv 30000 tokens · 208.3×\n", "")),
            "{text}"
        );
        assert!(
            text.contains("calculator act click 7 380.0 ms               1\n"),
            "{text}"
        );
        assert!(
            text.contains("[MISSED] calculator click round trip median ≤ 350 ms — 380 ms"),
            "{text}"
        );
        assert!(text.ends_with("finished in 123 s"));
    }
}

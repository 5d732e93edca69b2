//! `report.html`: one self-contained page (inline CSS and SVG, no network, no
//! script needed to read it) with the summary, three charts — success per app with
//! its 95 % interval, tokens per task (deskpilot against a screenshot agent on the
//! same steps, log scale), steps per task — and a table per task.

use super::record::AttemptRecord;
use super::summary::{Group, Summary};

/// Escapes text for HTML element content and attribute values.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const OURS: &str = "#2563eb";
const SHOTS: &str = "#f97316";
const OK: &str = "#16a34a";

/// Success rate per group as bars with interval whiskers.
fn success_chart(groups: &[Group]) -> String {
    let row_h = 26;
    let left = 170;
    let width = 420;
    let h = groups.len() * row_h + 40;
    let mut s = format!(
        "<svg class=\"chart\" id=\"success\" role=\"img\" aria-label=\"success rate per app with 95% interval\" width=\"{}\" height=\"{h}\" viewBox=\"0 0 {} {h}\">",
        left + width + 60,
        left + width + 60
    );
    for (i, tick) in [0.0, 0.25, 0.5, 0.75, 1.0].iter().enumerate() {
        let x = left as f64 + tick * width as f64;
        s.push_str(&format!(
            "<line x1=\"{x}\" y1=\"10\" x2=\"{x}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}%</text>",
            h - 22,
            h - 8,
            i * 25
        ));
    }
    for (i, g) in groups.iter().enumerate() {
        let y = 14 + i * row_h;
        let w = g.success_rate * width as f64;
        let lo = left as f64 + g.ci_low * width as f64;
        let hi = left as f64 + g.ci_high * width as f64;
        let mid = y + 9;
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>\
<rect class=\"bar\" x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"18\" fill=\"{OK}\"><title>{}: {}/{} ({:.0}%, 95% CI {:.0}–{:.0}%)</title></rect>\
<line x1=\"{lo:.1}\" y1=\"{mid}\" x2=\"{hi:.1}\" y2=\"{mid}\" stroke=\"#111\" stroke-width=\"2\"/>\
<line x1=\"{lo:.1}\" y1=\"{}\" x2=\"{lo:.1}\" y2=\"{}\" stroke=\"#111\"/><line x1=\"{hi:.1}\" y1=\"{}\" x2=\"{hi:.1}\" y2=\"{}\" stroke=\"#111\"/>\
<text x=\"{}\" y=\"{}\" font-size=\"12\">{}/{}</text>",
            left - 8,
            y + 13,
            esc(&g.key),
            esc(&g.key),
            g.successes,
            g.attempts,
            g.success_rate * 100.0,
            g.ci_low * 100.0,
            g.ci_high * 100.0,
            mid - 5,
            mid + 5,
            mid - 5,
            mid + 5,
            left + width + 8,
            y + 13,
            g.successes,
            g.attempts
        ));
    }
    s.push_str("</svg>");
    s
}

/// Two bars per task on a log scale: deskpilot's tokens and a screenshot agent's.
fn tokens_chart(groups: &[Group]) -> String {
    let row_h = 30;
    let left = 220;
    let width = 480;
    let h = groups.len() * row_h + 50;
    let max = groups
        .iter()
        .map(|g| g.deskpilot_tokens.median.max(g.screenshot_tokens.median))
        .fold(10.0_f64, f64::max);
    let log_max = max.log10().ceil().max(1.0);
    let x_of = |v: f64| left as f64 + (v.max(1.0).log10() / log_max) * width as f64;
    let mut s = format!(
        "<svg class=\"chart\" id=\"tokens\" role=\"img\" aria-label=\"tokens per task, deskpilot and a screenshot agent\" width=\"{}\" height=\"{h}\" viewBox=\"0 0 {} {h}\">",
        left + width + 80,
        left + width + 80
    );
    for p in 0..=(log_max as i32) {
        let x = x_of(10f64.powi(p));
        s.push_str(&format!(
            "<line x1=\"{x:.1}\" y1=\"10\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            h - 34,
            h - 22,
            10u64.pow(p as u32)
        ));
    }
    s.push_str(&format!(
        "<rect x=\"{left}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{OURS}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">deskpilot (tokens returned)</text>\
<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{SHOTS}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">screenshot agent, same steps (estimate)</text>",
        h - 14,
        left + 16,
        h - 5,
        left + 200,
        h - 14,
        left + 216,
        h - 5
    ));
    for (i, g) in groups.iter().enumerate() {
        let y = 12 + i * row_h;
        let a = g.deskpilot_tokens.median;
        let b = g.screenshot_tokens.median;
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>\
<rect class=\"bar\" x=\"{left}\" y=\"{y}\" width=\"{:.1}\" height=\"11\" fill=\"{OURS}\"><title>{}: deskpilot {a:.0} tokens</title></rect>\
<rect class=\"bar\" x=\"{left}\" y=\"{}\" width=\"{:.1}\" height=\"11\" fill=\"{SHOTS}\"><title>{}: screenshot agent {b:.0} tokens</title></rect>\
<text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{a:.0}</text><text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{b:.0}</text>",
            left - 8,
            y + 16,
            esc(&g.key),
            x_of(a) - left as f64,
            esc(&g.key),
            y + 12,
            x_of(b) - left as f64,
            esc(&g.key),
            x_of(a) + 4.0,
            y + 10,
            x_of(b) + 4.0,
            y + 22,
        ));
    }
    s.push_str("</svg>");
    s
}

/// Steps per task (median), as bars.
fn steps_chart(groups: &[Group]) -> String {
    let row_h = 20;
    let left = 220;
    let width = 360;
    let h = groups.len() * row_h + 20;
    let max = groups
        .iter()
        .map(|g| g.steps.median)
        .fold(1.0_f64, f64::max);
    let mut s = format!(
        "<svg class=\"chart\" id=\"steps\" role=\"img\" aria-label=\"steps per task\" width=\"{}\" height=\"{h}\" viewBox=\"0 0 {} {h}\">",
        left + width + 60,
        left + width + 60
    );
    for (i, g) in groups.iter().enumerate() {
        let y = 8 + i * row_h;
        let w = g.steps.median / max * width as f64;
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text><rect class=\"bar\" x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"14\" fill=\"#6366f1\"><title>{}: {} steps</title></rect><text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{}</text>",
            left - 8,
            y + 12,
            esc(&g.key),
            esc(&g.key),
            g.steps.median,
            left as f64 + w + 4.0,
            y + 12,
            g.steps.median
        ));
    }
    s.push_str("</svg>");
    s
}

/// `action×3 keyboard` for the channels of an attempt's actions, in first-use order.
fn channel_counts(channels: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for c in channels {
        match seen.iter_mut().find(|(n, _)| *n == c.as_str()) {
            Some((_, k)) => *k += 1,
            None => seen.push((c, 1)),
        }
    }
    seen.iter()
        .map(|(n, k)| {
            if *k > 1 {
                format!("{n}×{k}")
            } else {
                (*n).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The page for `summary` and its `records`.
pub fn page(summary: &Summary, records: &[AttemptRecord], title: &str) -> String {
    let o = &summary.overall;
    let mut h = String::new();
    h.push_str(&format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>\
body{{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#111}}.intro{{max-width:1100px}}\
h1{{font-size:22px}}h2{{font-size:17px;margin-top:28px}}\
table{{border-collapse:collapse;margin:8px 0}}td,th{{border:1px solid #ddd;padding:3px 8px;text-align:right}}\
td:first-child,th:first-child{{text-align:left}}.success{{color:{OK}}}.failure,.timed_out{{color:#dc2626}}.infra{{color:#a16207}}\
.wrap{{overflow-x:auto}}.big{{font-size:28px;font-weight:600}}.cards{{display:flex;gap:28px}}.note{{color:#555}}</style></head><body>",
        esc(title)
    ));
    h.push_str(&format!("<h1>{}</h1>", esc(title)));
    h.push_str(&format!(
        "<div class=\"cards\"><div><div class=\"big\">{}/{}</div>attempts passed ({:.0}%, 95% CI {:.0}–{:.0}%, bootstrap over tasks)</div>\
<div><div class=\"big\">{}</div>a screenshot agent's tokens on the same steps, per deskpilot token</div>\
<div><div class=\"big\">{}</div>infrastructure failures (not counted)</div></div>",
        o.successes,
        o.attempts,
        o.success_rate * 100.0,
        o.ci_low * 100.0,
        o.ci_high * 100.0,
        super::summary::ratio(o),
        o.infra
    ));
    h.push_str("<p class=\"note intro\">Success is decided by each task's checkers, which read state deskpilot did not write (file bytes, a command's output, a pyatspi script). A screenshot agent's tokens are one screenshot of the bound window per step at the default downscale (long side 1,280 px), width × height / 750: an estimate.</p>");
    h.push_str("<h2>Success per app</h2>");
    h.push_str(&success_chart(&summary.by_app));
    h.push_str("<h2>Tokens per task (median per attempt, log scale)</h2>");
    h.push_str(&tokens_chart(&summary.by_task));
    h.push_str("<h2>Steps per task (median)</h2>");
    h.push_str(&steps_chart(&summary.by_task));
    h.push_str("<h2>Per policy</h2><div class=\"wrap\"><table><tr><th>policy</th><th>passed</th><th>95% CI</th><th>steps p50/p95</th><th>model calls p50</th><th>tokens in p50</th><th>tokens out p50</th><th>deskpilot tokens p50/p95</th><th>screenshot tokens p50</th><th>ratio</th><th>wall p50/p95</th></tr>");
    for g in &summary.by_policy {
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}/{}</td><td>{:.0}–{:.0}%</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{:.1}/{:.1} s</td></tr>",
            esc(&g.key),
            g.successes,
            g.attempts,
            g.ci_low * 100.0,
            g.ci_high * 100.0,
            g.steps.median,
            g.steps.p95,
            g.model_calls.median,
            g.tokens_in.median,
            g.tokens_out.median,
            g.deskpilot_tokens.median,
            g.deskpilot_tokens.p95,
            g.screenshot_tokens.median,
            super::summary::ratio(g),
            g.wall_ms.median / 1000.0,
            g.wall_ms.p95 / 1000.0
        ));
    }
    h.push_str("</table></div><h2>Per attempt</h2><div class=\"wrap\"><table><tr><th>task</th><th>run</th><th>policy</th><th>outcome</th><th>reason</th><th>steps</th><th>calls</th><th>deskpilot tokens</th><th>screenshot tokens</th><th>refusals</th><th>confirmations</th><th>channels</th><th>wall</th></tr>");
    for r in records {
        h.push_str(&format!(
            "<tr><td>{} <span class=\"note\">({})</span></td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td style=\"text-align:left;min-width:320px\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} s</td></tr>",
            esc(&r.task),
            esc(&r.app),
            r.run,
            esc(&super::summary::policy_key(r)),
            r.outcome.as_str(),
            r.outcome.as_str(),
            esc(r.reason.as_deref().unwrap_or("")),
            r.steps,
            r.calls,
            r.deskpilot_tokens,
            r.screenshot_tokens,
            r.refusals,
            r.confirmations,
            esc(&channel_counts(&r.channels)),
            r.wall_ms as f64 / 1000.0,
        ));
    }
    h.push_str("</table></div></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_counted() {
        let c: Vec<String> = ["action", "action", "keyboard", "action"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(channel_counts(&c), "action×3 keyboard");
        assert_eq!(channel_counts(&[]), "");
    }

    #[test]
    fn text_from_records_is_escaped() {
        assert_eq!(esc("<b a=\"1\">&'"), "&lt;b a=&quot;1&quot;&gt;&amp;&#39;");
    }
}

//! Bounded one-line text for step records, reports and the model's prompt.

use deskpilot_core::sanitize::one_line;
use deskpilot_host::Observation;

/// `s` escaped for use between quotes (see [`one_line`]), cut to `max` chars.
pub(super) fn bounded_line(s: &str, max: usize) -> String {
    cut(one_line(s), max)
}

/// Free text (a message, a claim, a question) on one line, cut to `max` chars.
pub(super) fn bounded_text(s: &str, max: usize) -> String {
    cut(deskpilot_core::sanitize::plain_line(s), max)
}

fn cut(line: String, max: usize) -> String {
    let n = line.chars().count();
    if n <= max {
        return line;
    }
    let mut out: String = line.chars().take(max).collect();
    out.push('…');
    out
}

pub(super) fn window_label(obs: &Observation) -> String {
    format!(
        "[{}] {} \"{}\"",
        obs.window_ref,
        one_line(&obs.window.app),
        bounded_line(&obs.window.title, 80)
    )
}

//! The summary of a result directory: success rates with bootstrap 95 % confidence
//! intervals per policy, per app and overall; steps, model calls, tokens and wall
//! time as median and p95; deskpilot's tokens against a screenshot agent's for the
//! same steps (docs/ARCHITECTURE.md §14).
//!
//! Infrastructure failures are counted apart and kept out of every rate: an app that
//! never started says nothing about the policy.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::record::{AttemptRecord, Outcome};

/// Bootstrap resamples per interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2_000;
/// Fixed seed, so one result directory always gets the same intervals.
const BOOTSTRAP_SEED: u64 = 0x005e_ed0f_de5c_9170;

/// Median and 95th percentile (nearest rank) of a figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub median: f64,
    pub p95: f64,
}

impl Dist {
    pub fn of(values: &[f64]) -> Dist {
        if values.is_empty() {
            return Dist::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Dist {
            median: median(&v),
            p95: percentile(&v, 0.95),
        }
    }
}

/// The median of sorted, non-empty `v`: the middle value, or the mean of the two
/// middle values.
fn median(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Nearest-rank percentile of sorted `v` (`q` in 0..=1).
fn percentile(v: &[f64], q: f64) -> f64 {
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Figures of a group of attempts (a policy, an app, a task, or all).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Group {
    pub key: String,
    /// Attempts that ran (infrastructure failures excluded).
    pub attempts: usize,
    pub successes: usize,
    /// Infrastructure failures, not in `attempts`.
    pub infra: usize,
    /// successes / attempts (0 when none ran).
    pub success_rate: f64,
    /// Bootstrap 95 % interval of the success rate (percentiles 2.5 and 97.5 of
    /// [`BOOTSTRAP_RESAMPLES`] resamples).
    pub ci_low: f64,
    pub ci_high: f64,
    pub steps: Dist,
    pub model_calls: Dist,
    pub tokens_in: Dist,
    pub tokens_out: Dist,
    pub deskpilot_tokens: Dist,
    pub screenshot_tokens: Dist,
    pub wall_ms: Dist,
    /// Sums over the attempts that ran.
    pub total_steps: u64,
    pub total_deskpilot_tokens: u64,
    pub total_screenshot_tokens: u64,
    /// total_screenshot_tokens / total_deskpilot_tokens: how many times more a
    /// screenshot agent would have spent on the same steps (0 when deskpilot
    /// returned nothing).
    pub tokens_ratio: f64,
}

/// The whole summary of a result directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub attempts: usize,
    pub overall: Group,
    pub by_policy: Vec<Group>,
    pub by_app: Vec<Group>,
    pub by_task: Vec<Group>,
    /// `task r<run>` of every attempt that was not a success, with its outcome and
    /// reason.
    pub not_passed: Vec<String>,
}

/// splitmix64: a small fixed-seed generator for the bootstrap (reproducible figures,
/// no dependency for one loop).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Percentile bootstrap 95 % interval of a success rate, resampling tasks (each
/// task's attempts together: runs of one task are not independent). `clusters` holds
/// per task (successes, attempts). All tasks agreeing gives the point itself: the
/// bootstrap cannot say more from such data, and [`Summary`] readers see both ends
/// equal.
pub fn bootstrap_ci(clusters: &[(usize, usize)]) -> (f64, f64) {
    let n = clusters.len();
    if n == 0 || clusters.iter().all(|(_, a)| *a == 0) {
        return (0.0, 0.0);
    }
    let mut rng = SplitMix(BOOTSTRAP_SEED ^ n as u64);
    let mut rates: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            let (mut ok, mut all) = (0, 0);
            for _ in 0..n {
                let (s, a) = clusters[rng.below(n)];
                ok += s;
                all += a;
            }
            if all == 0 {
                0.0
            } else {
                ok as f64 / all as f64
            }
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    (percentile(&rates, 0.025), percentile(&rates, 0.975))
}

fn group(key: String, recs: &[&AttemptRecord]) -> Group {
    let ran: Vec<&&AttemptRecord> = recs
        .iter()
        .filter(|r| r.outcome != Outcome::Infra)
        .collect();
    let successes = ran.iter().filter(|r| r.outcome == Outcome::Success).count();
    let mut clusters: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in &ran {
        let c = clusters.entry(r.task.as_str()).or_default();
        c.0 += usize::from(r.outcome == Outcome::Success);
        c.1 += 1;
    }
    let (ci_low, ci_high) = bootstrap_ci(&clusters.into_values().collect::<Vec<_>>());
    let d = |f: &dyn Fn(&AttemptRecord) -> u64| {
        Dist::of(&ran.iter().map(|r| f(r) as f64).collect::<Vec<_>>())
    };
    let total = |f: &dyn Fn(&AttemptRecord) -> u64| ran.iter().map(|r| f(r)).sum::<u64>();
    let total_deskpilot_tokens = total(&|r| r.deskpilot_tokens);
    let total_screenshot_tokens = total(&|r| r.screenshot_tokens);
    Group {
        key,
        attempts: ran.len(),
        successes,
        infra: recs.len() - ran.len(),
        success_rate: if ran.is_empty() {
            0.0
        } else {
            successes as f64 / ran.len() as f64
        },
        ci_low,
        ci_high,
        steps: d(&|r| r.steps),
        model_calls: d(&|r| r.model_calls),
        tokens_in: d(&|r| r.tokens_in),
        tokens_out: d(&|r| r.tokens_out),
        deskpilot_tokens: d(&|r| r.deskpilot_tokens),
        screenshot_tokens: d(&|r| r.screenshot_tokens),
        wall_ms: d(&|r| r.wall_ms),
        total_steps: total(&|r| r.steps),
        total_deskpilot_tokens,
        total_screenshot_tokens,
        tokens_ratio: if total_deskpilot_tokens == 0 {
            0.0
        } else {
            total_screenshot_tokens as f64 / total_deskpilot_tokens as f64
        },
    }
}

fn grouped(records: &[AttemptRecord], key: impl Fn(&AttemptRecord) -> String) -> Vec<Group> {
    let mut by: BTreeMap<String, Vec<&AttemptRecord>> = BTreeMap::new();
    for r in records {
        by.entry(key(r)).or_default().push(r);
    }
    by.into_iter().map(|(k, v)| group(k, &v)).collect()
}

/// The policy and observation of a record (`oracle/tree`, `model/pixels`), with the
/// model for a model run (`model/pixels openai:gpt-4.1`).
pub fn policy_key(r: &AttemptRecord) -> String {
    match &r.model {
        Some(m) => format!("{}/{} {m}", r.policy, r.observation),
        None => format!("{}/{}", r.policy, r.observation),
    }
}

/// Summarizes `records`.
pub fn summarize(records: &[AttemptRecord]) -> Summary {
    let all: Vec<&AttemptRecord> = records.iter().collect();
    let not_passed = records
        .iter()
        .filter(|r| r.outcome != Outcome::Success)
        .map(|r| {
            format!(
                "{} r{} ({}): {} — {}",
                r.task,
                r.run,
                policy_key(r),
                r.outcome.as_str(),
                r.reason.as_deref().unwrap_or("no reason recorded")
            )
        })
        .collect();
    // Results of several policies (merged directories) are never pooled per app or
    // task: each row is one policy's.
    let mixed = records
        .iter()
        .map(policy_key)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1;
    let with_policy = |k: String, r: &AttemptRecord| {
        if mixed {
            format!("{k} · {}", policy_key(r))
        } else {
            k
        }
    };
    Summary {
        attempts: records.len(),
        overall: group(
            if mixed {
                "all policies".into()
            } else {
                "all".into()
            },
            &all,
        ),
        by_policy: grouped(records, policy_key),
        by_app: grouped(records, |r| with_policy(r.app.clone(), r)),
        by_task: grouped(records, |r| with_policy(r.task.clone(), r)),
        not_passed,
    }
}

/// The tokens ratio as shown: `–` when either side is nothing.
pub fn ratio(g: &Group) -> String {
    if g.total_deskpilot_tokens == 0 || g.total_screenshot_tokens == 0 {
        "–".into()
    } else {
        format!("{:.1}×", g.tokens_ratio)
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The summary as a terminal table.
pub fn render(s: &Summary) -> String {
    let mut t = String::new();
    let head = format!(
        "{:<34} {:>7} {:>15} {:>6} {:>8} {:>10} {:>12} {:>7} {:>9}\n",
        "", "success", "95% CI", "steps", "tokens", "shot tok", "ratio", "infra", "wall p50"
    );
    let row = |g: &Group| {
        format!(
            "{:<34} {:>3}/{:<3} {:>15} {:>6} {:>8} {:>10} {:>12} {:>7} {:>7.1} s\n",
            g.key,
            g.successes,
            g.attempts,
            if g.attempts == 0 {
                "–".to_string()
            } else {
                format!("{}–{}", pct(g.ci_low), pct(g.ci_high))
            },
            g.steps.median,
            g.deskpilot_tokens.median,
            g.screenshot_tokens.median,
            ratio(g),
            g.infra,
            g.wall_ms.median / 1000.0
        )
    };
    t.push_str(
        "by app (medians per attempt; ratio = screenshot agent's tokens / deskpilot's, summed)\n",
    );
    t.push_str(&head);
    for g in &s.by_app {
        t.push_str(&row(g));
    }
    t.push_str("\nby policy\n");
    t.push_str(&head);
    for g in &s.by_policy {
        t.push_str(&row(g));
    }
    t.push('\n');
    t.push_str(&row(&s.overall));
    if !s.not_passed.is_empty() {
        t.push_str("\nnot passed:\n");
        for n in &s.not_passed {
            t.push_str(&format!("  {n}\n"));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let d = Dist::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(d.median, 3.0);
        assert_eq!(d.p95, 5.0);
        assert_eq!(Dist::of(&[4.0, 1.0, 3.0, 2.0]).median, 2.5);
        assert_eq!(Dist::of(&[]), Dist::default());
    }

    #[test]
    fn the_bootstrap_interval_brackets_the_rate() {
        // 15 tasks, one attempt each, 12 passed.
        let mut v = vec![(1, 1); 12];
        v.extend([(0, 1); 3]);
        let (lo, hi) = bootstrap_ci(&v);
        assert!(lo < 0.8 && hi > 0.8, "{lo}..{hi}");
        assert!(lo >= 0.5 && hi <= 1.0, "{lo}..{hi}");
        // All passed: the interval is the point, said as it is.
        assert_eq!(bootstrap_ci(&[(2, 2); 30]), (1.0, 1.0));
        // The same data gives the same interval.
        assert_eq!(bootstrap_ci(&v), bootstrap_ci(&v));
        // Runs of one task move together: five tasks run three times each is wider
        // than fifteen independent tasks with the same rate.
        let clustered = [(3, 3), (3, 3), (3, 3), (3, 3), (0, 3)];
        let (clo, chi) = bootstrap_ci(&clustered);
        assert!(chi - clo > hi - lo, "{clo}..{chi} vs {lo}..{hi}");
    }
}

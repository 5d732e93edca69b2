//! Summaries of repeated measurements: median and 95th percentile.
//!
//! Pure arithmetic over samples the bench collected; it never measures anything
//! itself.

use serde::Serialize;

/// Median, 95th percentile and count of a set of samples, in the samples' unit.
///
/// The median of an even count is the mean of the two middle samples; the p95 is the
/// nearest-rank percentile (the smallest sample with at least 95 % of the samples at
/// or below it), so with 20 runs it is the 19th fastest and with fewer than 20 runs it
/// is the slowest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub median: f64,
    pub p95: f64,
    pub n: usize,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none (or any is not a number).
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|s| s.is_nan()) {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        // Nearest rank: ceil(0.95 × n), 1-based.
        let rank = (n * 95).div_ceil(100).max(1);
        Some(Summary {
            median,
            p95: v[rank - 1],
            n,
        })
    }

    /// A single observation (a count measured once): median = p95 = the value.
    pub fn once(value: f64) -> Summary {
        Summary {
            median: value,
            p95: value,
            n: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_medians() {
        let s = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((s.median, s.p95, s.n), (3.0, 5.0, 3));
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert_eq!(s.p95, 4.0);
    }

    #[test]
    fn p95_of_twenty_runs_is_the_nineteenth() {
        let samples: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        let s = Summary::of(&samples).unwrap();
        assert_eq!(s.p95, 19.0);
        assert_eq!(s.median, 10.5);
        assert_eq!(s.n, 20);
    }

    #[test]
    fn p95_of_a_hundred_runs_is_the_ninety_fifth() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Summary::of(&samples).unwrap().p95, 95.0);
    }

    #[test]
    fn empty_or_nan_gives_none_and_once_is_flat() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(
            Summary::once(7.0),
            Summary {
                median: 7.0,
                p95: 7.0,
                n: 1
            }
        );
        assert_eq!(Summary::of(&[2.0]).unwrap(), Summary::once(2.0));
    }
}

//! Settling after an action by bounded polling (pure; docs/ARCHITECTURE.md §6c).
//!
//! The macOS driver does not subscribe to `AXObserver` notifications (they need a
//! `CFRunLoop` thread per observed application); it settles as the Android driver
//! does, by reading again: every [`POLL_MS`] it takes a cheap digest of the window
//! (title, focused element, the acted element's value and states, the window's child
//! count) and returns once the digest has stood still for `quiet_ms`, or at `max_ms`
//! with `hit_ceiling`. [`Poll`] owns that decision; the driver owns the reads.

use deskpilot_protocol::types::{Settle, SettleReport};

/// Time between two digests, ms: 100 (a tenth of a second, short against the 300 ms
/// default quiet time, long enough that a digest, a handful of AX calls, is a small
/// share of it).
pub const POLL_MS: u64 = 100;

/// What the poller says after a digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Read again after [`POLL_MS`].
    Again,
    /// Settled: the report to return.
    Done(SettleReport),
}

/// The settle state of one action.
#[derive(Debug, Clone)]
pub struct Poll {
    settle: Settle,
    last: Option<u64>,
    changed_at_ms: u64,
    reads: u64,
}

impl Poll {
    /// Starts settling under `settle`; `quiet_ms` is cut to `quiet_cap_ms` when the
    /// method applied its change inside the call (an attribute set).
    pub fn new(settle: Settle, quiet_cap_ms: Option<u64>) -> Self {
        let mut settle = settle;
        if let Some(cap) = quiet_cap_ms {
            settle.quiet_ms = settle.quiet_ms.min(cap);
        }
        Poll {
            settle,
            last: None,
            changed_at_ms: 0,
            reads: 0,
        }
    }

    /// Feeds the digest read `elapsed_ms` after the action returned; `None` when the
    /// read failed (the window closed, the app did not answer), which counts as a
    /// change. Returns whether to read again.
    pub fn feed(&mut self, elapsed_ms: u64, digest: Option<u64>) -> Verdict {
        self.reads += 1;
        if digest.is_none() || digest != self.last {
            self.changed_at_ms = elapsed_ms;
            self.last = digest;
        }
        let quiet = digest.is_some()
            && elapsed_ms >= self.settle.quiet_ms
            && elapsed_ms - self.changed_at_ms >= self.settle.quiet_ms
            && self.reads >= 2;
        if quiet || elapsed_ms >= self.settle.max_ms {
            Verdict::Done(SettleReport {
                waited_ms: elapsed_ms,
                events: 0,
                hit_ceiling: !quiet,
                reads: Some(self.reads),
            })
        } else {
            Verdict::Again
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle(quiet_ms: u64, max_ms: u64) -> Settle {
        Settle {
            quiet_ms,
            max_ms,
            read: false,
        }
    }

    fn run(p: &mut Poll, digests: &[(u64, Option<u64>)]) -> Option<SettleReport> {
        for &(t, d) in digests {
            if let Verdict::Done(r) = p.feed(t, d) {
                return Some(r);
            }
        }
        None
    }

    #[test]
    fn a_window_that_stands_still_settles_after_the_quiet_time() {
        let mut p = Poll::new(settle(300, 3_000), None);
        let r = run(
            &mut p,
            &[(0, Some(1)), (100, Some(1)), (200, Some(1)), (300, Some(1))],
        )
        .unwrap();
        assert_eq!(r.waited_ms, 300);
        assert!(!r.hit_ceiling);
        assert_eq!(r.reads, Some(4));
        assert_eq!(r.events, 0);
    }

    #[test]
    fn a_change_restarts_the_quiet_time() {
        let mut p = Poll::new(settle(300, 3_000), None);
        let r = run(
            &mut p,
            &[
                (0, Some(1)),
                (100, Some(1)),
                (200, Some(2)),
                (300, Some(2)),
                (400, Some(2)),
                (500, Some(2)),
            ],
        )
        .unwrap();
        assert_eq!(r.waited_ms, 500);
        assert!(!r.hit_ceiling);
    }

    #[test]
    fn a_window_that_keeps_changing_hits_the_ceiling() {
        let mut p = Poll::new(settle(300, 1_000), None);
        let digests: Vec<(u64, Option<u64>)> = (0..=10).map(|i| (i * 100, Some(i))).collect();
        let r = run(&mut p, &digests).unwrap();
        assert_eq!(r.waited_ms, 1_000);
        assert!(r.hit_ceiling);
        // A failing read is never quiet either.
        let mut p = Poll::new(settle(300, 500), None);
        let r = run(
            &mut p,
            &[
                (0, None),
                (100, None),
                (200, None),
                (300, None),
                (400, None),
                (500, None),
            ],
        )
        .unwrap();
        assert!(r.hit_ceiling);
    }

    #[test]
    fn an_attribute_set_waits_only_the_short_quiet_time() {
        let mut p = Poll::new(settle(300, 3_000), Some(100));
        let r = run(&mut p, &[(0, Some(7)), (100, Some(7))]).unwrap();
        assert_eq!(r.waited_ms, 100);
        assert!(!r.hit_ceiling);
    }
}

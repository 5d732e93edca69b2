//! Settling after an action: wait until the application has been quiet.
//!
//! Owns [`Settler`]: subscribed *before* the action to every signal the application's
//! bus name sends on the accessibility bus (children, state, property, text and
//! window events), drained continuously by its own task (a zbus stream that is not
//! drained stalls the whole connection), and [`Settler::finish`], which returns once
//! the application is quiet (see [`settles_at`]) or `max_ms` passed. It never sleeps a
//! fixed time: each wait ends at the next deadline that the events so far imply.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deskpilot_protocol::types::{Settle, SettleReport};
use futures_util::StreamExt;
use zbus::MatchRule;
use zbus::message::Type as MessageType;

use super::connection::Bus;

/// Once the application has reacted, a pause this long ends its reaction (when
/// `quiet_ms` has also passed since the action). Measured here on GTK 3, GTK 4,
/// and Chromium with `dbus-monitor`: the signals of one reaction (a menu opening, a
/// notebook page switch, the Save As dialog's ~900 signals) arrive in bursts
/// separated by at most 36 ms; 100 ms leaves a margin of almost three. (The file
/// chooser's 3 signals half a second later are missed by a 300 ms pause too.)
/// Waiting the full `quiet_ms` again after a late reaction only added latency:
/// gnome-calculator's buttons react 250 ms after `DoAction` (GTK's button activation
/// delay), which made every click wait 550 ms.
pub const REACTION_GAP: Duration = Duration::from_millis(100);

/// When a settle that began at `from` is over, given the last signal seen (`None`:
/// none yet): the application always gets `quiet` to start reacting; a signal after
/// that pushes the end to [`REACTION_GAP`] (at most `quiet`) past it. Signals sent
/// while the action itself ran (before `from`) only count towards the first rule.
pub fn settles_at(from: Instant, quiet: Duration, last: Option<Instant>) -> Instant {
    let first = from + quiet;
    match last {
        Some(l) => first.max(l + REACTION_GAP.min(quiet)),
        None => first,
    }
}

/// Signals queued for the settle stream before its task takes them. Large so that a
/// burst during the action (a menu building 100 items) never fills it.
const QUEUE: usize = 4_096;

#[derive(Debug)]
struct Seen {
    events: u64,
    last: Option<Instant>,
}

/// A subscription to one application's signals, for one action.
pub struct Settler {
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl Settler {
    /// Subscribes to the signals of `sender` (a unique bus name such as `:1.9`).
    pub async fn start(bus: &Bus, sender: &str) -> Result<Settler, zbus::Error> {
        let rule = MatchRule::builder()
            .msg_type(MessageType::Signal)
            .sender(sender)?
            .build();
        let mut stream = zbus::MessageStream::for_match_rule(rule, bus.raw(), Some(QUEUE)).await?;
        let seen = Arc::new(Mutex::new(Seen {
            events: 0,
            last: None,
        }));
        let sink = seen.clone();
        let subscribed = Instant::now();
        let task = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                let Ok(msg) = msg else { continue };
                tracing::trace!(
                    after_ms = subscribed.elapsed().as_millis() as u64,
                    member = ?msg.header().member(),
                    "settle signal"
                );
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.events += 1;
                s.last = Some(Instant::now());
            }
        });
        Ok(Settler { seen, task })
    }

    fn seen(&self) -> (u64, Option<Instant>) {
        let s = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        (s.events, s.last)
    }

    /// Waits, from now, until the application is quiet ([`settles_at`] with
    /// `settle.quiet_ms`) or `settle.max_ms` passed. The report counts every signal since [`Settler::start`]
    /// (those sent while the action ran included); `waited_ms` counts from this call.
    pub async fn finish(self, settle: Settle) -> SettleReport {
        let from = Instant::now();
        let quiet = Duration::from_millis(settle.quiet_ms);
        let ceiling = from + Duration::from_millis(settle.max_ms.max(settle.quiet_ms));
        let report = loop {
            let (events, last) = self.seen();
            let quiet_until = settles_at(from, quiet, last);
            let now = Instant::now();
            if now >= quiet_until {
                break SettleReport {
                    waited_ms: now.duration_since(from).as_millis() as u64,
                    events,
                    hit_ceiling: false,
                    reads: None,
                };
            }
            if now >= ceiling {
                break SettleReport {
                    waited_ms: now.duration_since(from).as_millis() as u64,
                    events,
                    hit_ceiling: true,
                    reads: None,
                };
            }
            tokio::time::sleep_until(quiet_until.min(ceiling).into()).await;
        };
        self.task.abort();
        report
    }
}

impl Drop for Settler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_millis(300);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn no_reaction_waits_the_quiet_time() {
        let from = Instant::now();
        assert_eq!(settles_at(from, QUIET, None), from + QUIET);
    }

    #[test]
    fn signals_during_the_action_do_not_shorten_the_first_wait() {
        let from = Instant::now() + ms(50);
        let during = from - ms(10);
        assert_eq!(settles_at(from, QUIET, Some(during)), from + QUIET);
    }

    #[test]
    fn a_late_reaction_ends_a_gap_after_its_last_signal() {
        // gnome-calculator: the click's signals arrive 250 ms after DoAction.
        let from = Instant::now();
        assert_eq!(
            settles_at(from, QUIET, Some(from + ms(250))),
            from + ms(350),
            "not 250 + 300"
        );
        // A reaction still going at 900 ms keeps the settle open past it.
        assert_eq!(
            settles_at(from, QUIET, Some(from + ms(900))),
            from + ms(1_000)
        );
    }

    #[test]
    fn a_short_quiet_time_caps_the_gap() {
        let from = Instant::now();
        assert_eq!(
            settles_at(from, ms(50), Some(from + ms(200))),
            from + ms(250)
        );
    }
}

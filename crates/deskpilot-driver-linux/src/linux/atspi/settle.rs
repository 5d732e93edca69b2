//! Settling after an action: wait until the application has been quiet.
//!
//! Owns [`Settler`]: subscribed *before* the action to every signal the application's
//! bus name sends on the accessibility bus (children, state, property, text and
//! window events), drained continuously by its own task (a zbus stream that is not
//! drained stalls the whole connection), and [`Settler::finish`], which returns once
//! the application is quiet (see [`settles_at`]) or `max_ms` passed. It never sleeps a
//! fixed time: each wait ends at the next deadline that the events so far imply.
//! [`Settler::finish_reading`] also reads the window, overlapping the read with the
//! end of the wait; a signal voids a read under way or held (docs/ARCHITECTURE.md §6,
//! "Reading while settling").

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

/// A read taken while settling ([`Settler::finish_reading`]) stands once the app has
/// sent nothing for this long since its last signal, and nothing while the read
/// ran. Shorter than [`REACTION_GAP`] because the read watches too: a read during
/// which no signal came shows the app whole, where a read after a plain wait may
/// straddle a change. 60 ms is 1.7× the longest pause measured inside one reaction
/// (36 ms; mousepad's Save As dialog, 2,330 signals, paused at most 29 ms).
pub const READ_GAP: Duration = Duration::from_millis(60);

/// A read taken while settling starts once the app has sent no signal for this
/// long: the signals of one burst arrive within a few ms of each other (GTK emits
/// them from one main-loop iteration), so a read started inside a burst would only
/// be cancelled.
pub const READ_START_GAP: Duration = Duration::from_millis(20);

/// Once the app has reacted, a read taken while settling starts at most this long
/// before it could stand ([`read_stands_at`]), so that it covers that instant
/// and a little before; a shorter read is held until then.
pub const READ_LEAD: Duration = Duration::from_millis(50);

/// Reads cancelled by a signal before [`Settler::finish_reading`] stops reading
/// ahead and reads once the plain wait ([`settles_at`]) is over, as
/// [`Settler::finish`]'s caller would: an app that answers every read with
/// signals of its own (or animates) costs at most this many wasted reads.
pub const MAX_CANCELLED_READS: u32 = 3;

/// When a read during which no signal arrived may be returned (pure): as
/// [`settles_at`], with [`READ_GAP`] in place of [`REACTION_GAP`] after a signal.
/// The app still gets all of `quiet` to start reacting.
pub fn read_stands_at(from: Instant, quiet: Duration, last: Option<Instant>) -> Instant {
    let first = from + quiet;
    match last {
        Some(l) => first.max(l + READ_GAP.min(quiet)),
        None => first,
    }
}

/// When a read taken while settling may start (pure). Before the app has sent a
/// signal since `from` (signals sent while the action itself ran do not count), no
/// earlier than `from + quiet`: a reaction that starts just after the quiet time
/// (gnome-calculator shows a result ~300 ms after "=" is pressed, with no signal
/// before) lands inside the read, as it did in a read taken after a plain wait.
/// Once it has, [`READ_START_GAP`] after the last signal, and no earlier than
/// [`READ_LEAD`] before [`read_stands_at`].
pub fn read_starts_at(from: Instant, quiet: Duration, last: Option<Instant>) -> Instant {
    match last.filter(|l| *l >= from) {
        None => from + quiet,
        Some(l) => {
            let stands = read_stands_at(from, quiet, last);
            let lead = stands.checked_sub(READ_LEAD).unwrap_or(from).max(from);
            lead.max(l + READ_START_GAP)
        }
    }
}

/// Signals queued for the settle stream before its task takes them. Large so that a
/// burst during the action (a menu building 100 items) never fills it.
const QUEUE: usize = 4_096;

/// What the settle task has seen: how many signals, and when the last arrived.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    events: u64,
    last: Option<Instant>,
}

/// A subscription to one application's signals, for one action.
pub struct Settler {
    seen: tokio::sync::watch::Sender<Seen>,
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
        let (seen, _) = tokio::sync::watch::channel(Seen::default());
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
                sink.send_modify(|s| {
                    s.events += 1;
                    s.last = Some(Instant::now());
                });
            }
        });
        Ok(Settler { seen, task })
    }

    fn seen(&self) -> Seen {
        *self.seen.borrow()
    }

    /// Waits, from now, until the application is quiet ([`settles_at`] with
    /// `settle.quiet_ms`) or `settle.max_ms` passed. The report counts every signal since [`Settler::start`]
    /// (those sent while the action ran included); `waited_ms` counts from this call.
    pub async fn finish(self, settle: Settle) -> SettleReport {
        let from = Instant::now();
        let quiet = Duration::from_millis(settle.quiet_ms);
        let ceiling = from + Duration::from_millis(settle.max_ms.max(settle.quiet_ms));
        let mut rx = self.seen.subscribe();
        let hit_ceiling = loop {
            let Seen { last, .. } = *rx.borrow_and_update();
            let quiet_until = settles_at(from, quiet, last);
            let now = Instant::now();
            if now >= quiet_until {
                break false;
            }
            if now >= ceiling {
                break true;
            }
            tokio::time::sleep_until(quiet_until.min(ceiling).into()).await;
        };
        let report = SettleReport {
            waited_ms: from.elapsed().as_millis() as u64,
            events: self.seen().events,
            hit_ceiling,
            reads: None,
        };
        self.task.abort();
        report
    }

    /// [`Settler::finish`], returning also a read (`read()`) of the app as it is when
    /// it settled, overlapped with the wait: a read starts at [`read_starts_at`], any
    /// signal that arrives while it runs, or while it is held, voids it (another
    /// starts [`READ_START_GAP`] after the signal), and a read no signal voided is
    /// returned at [`read_stands_at`] — the app had all of `quiet` to react, and
    /// [`READ_GAP`] of silence after its last signal, during which the read showed
    /// it whole. After [`MAX_CANCELLED_READS`] voided reads it reads once after the
    /// plain wait ([`settles_at`]), unwatched, as the caller of [`Settler::finish`]
    /// would; so it starts at most that many reads and one more. At the ceiling
    /// (`max_ms`, the app still sending) it returns the read it holds, taken after
    /// the last signal, or reads once unwatched; a read under way is not cut off
    /// there (it bounds the wait, not a read, as the caller's read after
    /// [`Settler::finish`] was not bounded by it either).
    ///
    /// `read` answering `None` (the window closed, the app stopped answering) ends
    /// the reading: the plain wait goes on and no read is returned, so the caller
    /// reads (and meets the error) itself. The report's `reads` counts the reads
    /// started; `waited_ms` includes the read returned.
    pub async fn finish_reading<T, F, Fut>(
        self,
        settle: Settle,
        mut read: F,
    ) -> (SettleReport, Option<T>)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let from = Instant::now();
        let quiet = Duration::from_millis(settle.quiet_ms);
        let ceiling = from + Duration::from_millis(settle.max_ms.max(settle.quiet_ms));
        let mut rx = self.seen.subscribe();
        let mut reads = 0u64;
        let mut voided = 0u32;
        let mut readable = true;
        // A read that no signal has voided, waiting for `read_stands_at`.
        let mut held: Option<T> = None;
        let (read_back, hit_ceiling) = loop {
            if held.is_some() && rx.has_changed().unwrap_or(true) {
                held = None;
                voided += 1;
            }
            let Seen { last, .. } = *rx.borrow_and_update();
            let now = Instant::now();
            if let Some(t) = held.take() {
                let stands = read_stands_at(from, quiet, last);
                if now >= stands || now >= ceiling {
                    break (Some(t), now < stands);
                }
                // Hold it until it stands; a signal voids it.
                tokio::select! {
                    _ = tokio::time::sleep_until(stands.min(ceiling).into()) => held = Some(t),
                    _ = rx.changed() => voided += 1,
                }
                continue;
            }
            let plain = settles_at(from, quiet, last);
            let ahead = readable && voided < MAX_CANCELLED_READS;
            if (now >= plain && !ahead) || now >= ceiling {
                // No watched read to be had when the plain wait is over: read
                // once, unwatched, as a caller would after it (or nothing, when
                // reads fail).
                let hit = now < plain;
                if !readable {
                    break (None, hit);
                }
                reads += 1;
                break (read().await, hit);
            }
            let start = if ahead {
                read_starts_at(from, quiet, last)
            } else {
                plain
            };
            if now < start {
                tokio::select! {
                    _ = tokio::time::sleep_until(start.min(ceiling).into()) => {}
                    _ = rx.changed() => {}
                }
                continue;
            }
            if rx.has_changed().unwrap_or(true) {
                continue;
            }
            reads += 1;
            let r = tokio::select! {
                biased;
                _ = rx.changed() => {
                    voided += 1;
                    continue;
                }
                r = read() => r,
            };
            // The settle task stamps a signal when it runs, which can be after the
            // read's last reply came in: let it run before judging the read.
            tokio::task::yield_now().await;
            match r {
                Some(t) if !rx.has_changed().unwrap_or(true) => held = Some(t),
                Some(_) => voided += 1,
                None => readable = false,
            }
        };
        let report = SettleReport {
            waited_ms: from.elapsed().as_millis() as u64,
            events: self.seen().events,
            hit_ceiling,
            reads: Some(reads),
        };
        tracing::debug!(
            reads,
            voided,
            waited_ms = report.waited_ms,
            "settled with a read"
        );
        self.task.abort();
        (report, read_back)
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

    #[test]
    fn a_read_stands_when_the_quiet_time_and_a_read_gap_have_passed() {
        let from = Instant::now();
        assert_eq!(read_stands_at(from, QUIET, None), from + QUIET);
        assert_eq!(
            read_stands_at(from, QUIET, Some(from + ms(250))),
            from + ms(310),
            "gnome-calculator's click: 60 ms after its signals, not 100"
        );
        assert_eq!(
            read_stands_at(from, ms(40), Some(from + ms(200))),
            from + ms(240),
            "capped by a short quiet time"
        );
    }

    #[test]
    fn a_read_starts_after_the_quiet_time_or_a_gap_after_a_reaction() {
        let from = Instant::now();
        // No reaction yet: when the quiet time is over, as a plain wait's read.
        assert_eq!(read_starts_at(from, QUIET, None), from + QUIET);
        assert_eq!(
            read_starts_at(from, QUIET, Some(from - ms(5))),
            from + QUIET,
            "signals sent while the action ran are no reaction"
        );
        // A reaction at 250 ms: the read waits out the burst, then stands at 310.
        assert_eq!(
            read_starts_at(from, QUIET, Some(from + ms(250))),
            from + ms(270)
        );
        // An early reaction: no earlier than READ_LEAD before the read can stand.
        assert_eq!(
            read_starts_at(from, QUIET, Some(from + ms(10))),
            from + ms(250)
        );
        // A short wait (a value set inside the call).
        assert_eq!(read_starts_at(from, ms(100), None), from + ms(100));
    }

    /// A settler fed by the test instead of the bus: `signal` stands for a signal.
    fn fed() -> (Settler, tokio::sync::watch::Sender<Seen>) {
        let (seen, _) = tokio::sync::watch::channel(Seen::default());
        let settler = Settler {
            seen: seen.clone(),
            task: tokio::spawn(async {}),
        };
        (settler, seen)
    }

    fn signal(tx: &tokio::sync::watch::Sender<Seen>) {
        tx.send_modify(|s| {
            s.events += 1;
            s.last = Some(Instant::now());
        });
    }

    /// A signal `after` from now; the task answers when it was sent.
    fn signal_after(
        tx: tokio::sync::watch::Sender<Seen>,
        after: Duration,
    ) -> tokio::task::JoinHandle<Instant> {
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            signal(&tx);
            Instant::now()
        })
    }

    const SETTLE: Settle = Settle {
        quiet_ms: 300,
        max_ms: 3_000,
        read: true,
    };

    /// Each read sleeps `took` and answers the instant it began.
    fn reader(
        took: Duration,
    ) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = Option<Instant>>>> {
        move || {
            Box::pin(async move {
                let began = Instant::now();
                tokio::time::sleep(took).await;
                Some(began)
            })
        }
    }

    #[tokio::test]
    async fn with_no_reaction_the_read_begins_when_the_quiet_time_ends() {
        let (settler, _tx) = fed();
        let from = Instant::now();
        let (report, read) = settler.finish_reading(SETTLE, reader(ms(40))).await;
        let began = read.expect("a read");
        assert!(began >= from + QUIET, "as a read after a plain wait");
        assert!(report.waited_ms >= 340, "{report:?}");
        assert_eq!(report.events, 0);
        assert_eq!(report.reads, Some(1));
        assert!(!report.hit_ceiling);
    }

    /// Settles with 40 ms reads and one signal `after` the action; answers the
    /// report, when the returned read began and when the signal was sent.
    async fn one_signal_at(after: Duration) -> (SettleReport, Instant, Instant) {
        let (settler, tx) = fed();
        let late = signal_after(tx, after);
        let (report, read) = settler.finish_reading(SETTLE, reader(ms(40))).await;
        let signalled = late.await.unwrap();
        (report, read.expect("a read"), signalled)
    }

    #[tokio::test]
    async fn a_reaction_that_starts_after_the_quiet_time_is_in_the_read() {
        // gnome-calculator's "=": the result shows ~300 ms after the press, with
        // no signal before it; here at 320 ms, while the first read runs.
        let (report, began, signalled) = one_signal_at(ms(320)).await;
        assert!(began > signalled, "{report:?}");
        assert_eq!(report.events, 1);
    }

    #[tokio::test]
    async fn a_signal_voids_a_held_read() {
        // A reaction at 10 ms: a short read starts at 250 ms (READ_LEAD before it
        // could stand at 300) and is held; a second burst at 285 ms voids it.
        let (settler, tx) = fed();
        let bursts = tokio::spawn(async move {
            tokio::time::sleep(ms(10)).await;
            signal(&tx);
            tokio::time::sleep(ms(275)).await;
            signal(&tx);
            Instant::now()
        });
        let (report, read) = settler.finish_reading(SETTLE, reader(ms(20))).await;
        let second = bursts.await.unwrap();
        assert!(read.expect("a read") > second, "{report:?}");
        assert!(Instant::now() >= second + READ_GAP);
        assert_eq!(report.events, 2);
    }

    #[tokio::test]
    async fn a_late_reaction_is_in_the_read() {
        // gnome-calculator: the click's signals come 250 ms after the action.
        let (report, began, signalled) = one_signal_at(ms(250)).await;
        assert!(
            began > signalled,
            "the read returned began after the reaction"
        );
        assert!(
            Instant::now() >= signalled + READ_GAP,
            "the read stands a read gap after the signal"
        );
        assert!(report.waited_ms >= 310, "{report:?}");
        assert_eq!(report.events, 1);
        assert!(report.reads.unwrap() >= 1);
    }

    #[tokio::test]
    async fn a_read_that_fails_ends_the_reading_and_the_wait_goes_on() {
        let (settler, _tx) = fed();
        let mut calls = 0;
        let (report, read) = settler
            .finish_reading(SETTLE, || {
                calls += 1;
                async { None::<()> }
            })
            .await;
        assert!(read.is_none());
        assert_eq!(calls, 1, "no read after a failed one");
        assert!(report.waited_ms >= 300, "{report:?}");
    }

    #[tokio::test]
    async fn an_app_that_answers_reads_with_signals_is_read_once_after_the_wait() {
        // Every read makes the app send a signal: after MAX_CANCELLED_READS the
        // read is taken after the wait, and returned although it sent one too.
        let (settler, tx) = fed();
        let (report, read) = settler
            .finish_reading(SETTLE, || {
                let tx = tx.clone();
                async move {
                    signal(&tx);
                    tokio::time::sleep(ms(10)).await;
                    Some(Instant::now())
                }
            })
            .await;
        assert!(read.is_some());
        assert_eq!(report.reads, Some(u64::from(MAX_CANCELLED_READS) + 1));
        assert!(!report.hit_ceiling);
    }
}

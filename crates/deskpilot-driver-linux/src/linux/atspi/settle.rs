//! Settling after an action: wait until the application has been quiet.
//!
//! Owns [`Settler`]: subscribed *before* the action to every signal the application's
//! bus name sends on the accessibility bus (children, state, property, text and
//! window events), drained continuously by its own task (a zbus stream that is not
//! drained stalls the whole connection), and [`Settler::finish`], which returns once
//! no signal arrived for `quiet_ms` or `max_ms` passed. It never sleeps a fixed time:
//! each wait ends at the next deadline that the events so far imply.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deskpilot_protocol::types::{Settle, SettleReport};
use futures_util::StreamExt;
use zbus::MatchRule;
use zbus::message::Type as MessageType;

use super::connection::Bus;

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
        let task = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                if msg.is_err() {
                    continue;
                }
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

    /// Waits, from now, until no signal arrived for `settle.quiet_ms` or
    /// `settle.max_ms` passed. The report counts every signal since [`Settler::start`]
    /// (those sent while the action ran included); `waited_ms` counts from this call.
    pub async fn finish(self, settle: Settle) -> SettleReport {
        let from = Instant::now();
        let quiet = Duration::from_millis(settle.quiet_ms);
        let ceiling = from + Duration::from_millis(settle.max_ms.max(settle.quiet_ms));
        let report = loop {
            let (events, last) = self.seen();
            let quiet_from = last.map_or(from, |l| l.max(from));
            let quiet_until = quiet_from + quiet;
            let now = Instant::now();
            if now >= quiet_until {
                break SettleReport {
                    waited_ms: now.duration_since(from).as_millis() as u64,
                    events,
                    hit_ceiling: false,
                };
            }
            if now >= ceiling {
                break SettleReport {
                    waited_ms: now.duration_since(from).as_millis() as u64,
                    events,
                    hit_ceiling: true,
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

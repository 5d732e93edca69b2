//! `events.subscribe` and the batches that follow.
//!
//! Owns [`classify`] (pure: an AT-SPI signal → an [`EventKind`]) and [`Subscriptions`]:
//! each subscription holds match rules for the `org.a11y.atspi.Event.Object`,
//! `.Window` and `.Focus` interfaces, a task that drains them at once into a bounded
//! queue (oldest dropped and counted past [`QUEUE_CAP`]), and the application filter,
//! applied when a batch is taken (resolving a sender's name may wait on that app, which
//! the draining task must never do). Hosts use it to wait for a new window (a Save As
//! dialog that takes over a second the first time) instead of sleeping.
//!
//! `window_created` comes from `window:create`, which GTK sends for new windows of a
//! running application, and is also synthesised for the first `window:activate` of a
//! window that did not exist when the subscription started: a freshly started
//! application's bridge does not emit its first window's creation (it learns about
//! listeners only after the window exists). That activation itself races the
//! bridge's start-up, so a new application's first window is announced on a best-effort
//! basis only; callers that must see it (the host) compare window lists instead.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deskpilot_protocol::types::{Event, EventBatch, EventKind, SubscribeParams};
use deskpilot_protocol::{ComputerError, ErrorCode};
use futures_util::StreamExt;
use futures_util::stream::select_all;
use zbus::MatchRule;
use zbus::message::Type as MessageType;
use zbus::zvariant::{Structure, Value};

use super::apps::{app_name, list_windows};
use super::connection::Bus;
use super::handle::ObjRef;
use deskpilot_protocol::Result;

/// Events kept per subscription between batches: 1,024. A busy app emits a few
/// hundred per action; the host takes batches far more often than that fills.
pub const QUEUE_CAP: usize = 1_024;

const EVENT_INTERFACES: [&str; 3] = [
    "org.a11y.atspi.Event.Object",
    "org.a11y.atspi.Event.Window",
    "org.a11y.atspi.Event.Focus",
];

/// Maps an AT-SPI signal to an event kind, with its detail (pure).
///
/// `interface` and `member` come from the signal header; `detail` is the signal's first
/// argument (`add`, `focused`, `accessible-name`, …) and `detail1` its second.
pub fn classify(
    interface: &str,
    member: &str,
    detail: &str,
    detail1: i32,
) -> Option<(EventKind, Option<String>)> {
    let kind = interface.strip_prefix("org.a11y.atspi.Event.")?;
    let d = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Some(match (kind, member) {
        ("Window", "Create") => (EventKind::WindowCreated, None),
        ("Window", "Destroy") => (EventKind::WindowDestroyed, None),
        ("Window", "Activate") => (EventKind::WindowActivated, None),
        ("Focus", "Focus") => (EventKind::FocusChanged, None),
        ("Object", "StateChanged") if detail == "focused" && detail1 == 1 => {
            (EventKind::FocusChanged, None)
        }
        ("Object", "StateChanged") => {
            (EventKind::StateChanged, Some(format!("{detail}={detail1}")))
        }
        ("Object", "ChildrenChanged") => (EventKind::ChildrenChanged, d(detail)),
        ("Object", "PropertyChange") if detail == "accessible-name" => {
            (EventKind::NameChanged, None)
        }
        ("Object", "PropertyChange") if detail == "accessible-value" => {
            (EventKind::ValueChanged, None)
        }
        ("Object", "TextChanged") => (EventKind::TextChanged, d(detail)),
        _ => return None,
    })
}

/// An event as drained, before the application filter.
#[derive(Debug, Clone)]
struct Raw {
    sender: String,
    path: String,
    kind: EventKind,
    detail: Option<String>,
}

#[derive(Debug, Default)]
struct Queue {
    events: VecDeque<Raw>,
    dropped: u64,
}

struct Sub {
    app: Option<String>,
    queue: Arc<Mutex<Queue>>,
    notify: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
    /// Sender bus name → application name, resolved once.
    names: tokio::sync::Mutex<HashMap<String, Option<String>>>,
}

impl Drop for Sub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// All subscriptions of one driver.
#[derive(Default)]
pub struct Subscriptions {
    next: AtomicU64,
    subs: Mutex<HashMap<u64, Arc<Sub>>>,
}

fn decode(msg: &zbus::Message) -> Option<Raw> {
    let header = msg.header();
    let interface = header.interface()?.to_string();
    let member = header.member()?.to_string();
    let sender = header.sender()?.to_string();
    let path = header.path()?.to_string();
    let body = msg.body();
    let (detail, detail1) = match body.deserialize::<Structure<'_>>() {
        Ok(s) => {
            let f = s.fields();
            let detail = match f.first() {
                Some(Value::Str(s)) => s.to_string(),
                _ => String::new(),
            };
            let detail1 = match f.get(1) {
                Some(Value::I32(v)) => *v,
                _ => 0,
            };
            (detail, detail1)
        }
        Err(_) => (String::new(), 0),
    };
    let (kind, detail) = classify(&interface, &member, &detail, detail1)?;
    Some(Raw {
        sender,
        path,
        kind,
        detail,
    })
}

impl Subscriptions {
    /// Starts a subscription; returns its id.
    ///
    /// Errors: `COMPUTER_INTERNAL` when the bus refuses the match rules.
    pub async fn subscribe(&self, bus: &Bus, p: &SubscribeParams) -> Result<u64> {
        let mut streams = Vec::new();
        for i in EVENT_INTERFACES {
            let rule = MatchRule::builder()
                .msg_type(MessageType::Signal)
                .interface(i)
                .map(|b| b.build())
                .map_err(|e| internal(&e))?;
            let s = zbus::MessageStream::for_match_rule(rule, bus.raw(), Some(QUEUE_CAP))
                .await
                .map_err(|e| internal(&e))?;
            streams.push(s);
        }
        // Windows that exist now are not "created" later; listed after the match rules
        // are in place, so a window appearing in between is seen one way or the other.
        let mut known: std::collections::HashSet<(String, String)> = list_windows(bus)
            .await
            .unwrap_or_default()
            .into_iter()
            .filter_map(|w| ObjRef::from_handle(&w.handle).ok())
            .map(|o| (o.bus, o.path))
            .collect();
        let mut merged = select_all(streams);
        let queue = Arc::new(Mutex::new(Queue::default()));
        let notify = Arc::new(tokio::sync::Notify::new());
        let kinds = p.kinds.clone();
        let (q, n) = (queue.clone(), notify.clone());
        let task = tokio::spawn(async move {
            while let Some(msg) = merged.next().await {
                let Ok(msg) = msg else { continue };
                let Some(raw) = decode(&msg) else { continue };
                let key = (raw.sender.clone(), raw.path.clone());
                let mut out = Vec::with_capacity(2);
                match raw.kind {
                    EventKind::WindowCreated => {
                        known.insert(key);
                    }
                    EventKind::WindowDestroyed => {
                        known.remove(&key);
                    }
                    EventKind::WindowActivated if known.insert(key) => out.push(Raw {
                        kind: EventKind::WindowCreated,
                        detail: Some("first seen on activation".to_string()),
                        ..raw.clone()
                    }),
                    _ => {}
                }
                out.push(raw);
                out.retain(|r| kinds.is_empty() || kinds.contains(&r.kind));
                if out.is_empty() {
                    continue;
                }
                {
                    let mut q = q.lock().unwrap_or_else(|p| p.into_inner());
                    for r in out {
                        if q.events.len() >= QUEUE_CAP {
                            q.events.pop_front();
                            q.dropped += 1;
                        }
                        q.events.push_back(r);
                    }
                }
                n.notify_one();
            }
        });
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let sub = Arc::new(Sub {
            app: p.app.as_ref().map(|a| a.to_lowercase()),
            queue,
            notify,
            task,
            names: tokio::sync::Mutex::new(HashMap::new()),
        });
        self.subs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, sub);
        Ok(id)
    }

    /// Waits up to `timeout_ms` for at least one event of subscription `id` (after the
    /// application filter) and returns all that are queued.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` for an unknown subscription.
    pub async fn next_events(&self, bus: &Bus, id: u64, timeout_ms: u64) -> Result<EventBatch> {
        let sub = self
            .subs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
            .ok_or_else(|| {
                ComputerError::new(
                    ErrorCode::InvalidArgument,
                    format!("no event subscription {id}; call events.subscribe first"),
                )
            })?;
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut events = Vec::new();
        let mut dropped = 0;
        loop {
            let notified = sub.notify.notified();
            let (raws, d) = {
                let mut q = sub.queue.lock().unwrap_or_else(|p| p.into_inner());
                (
                    q.events.drain(..).collect::<Vec<_>>(),
                    std::mem::take(&mut q.dropped),
                )
            };
            dropped += d;
            for raw in raws {
                let app = resolve(bus, &sub, &raw.sender).await;
                if let Some(want) = &sub.app
                    && app.as_deref().map(str::to_lowercase).as_deref() != Some(want.as_str())
                {
                    continue;
                }
                events.push(Event {
                    kind: raw.kind,
                    handle: ObjRef::new(raw.sender, raw.path).to_handle(),
                    app,
                    detail: raw.detail,
                });
            }
            if !events.is_empty() || Instant::now() >= deadline {
                break;
            }
            if tokio::time::timeout_at(deadline.into(), notified)
                .await
                .is_err()
            {
                // One last look: an event may have arrived with the deadline.
                if sub
                    .queue
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .events
                    .is_empty()
                {
                    break;
                }
            }
        }
        Ok(EventBatch {
            subscription: id,
            events,
            dropped,
        })
    }
}

async fn resolve(bus: &Bus, sub: &Sub, sender: &str) -> Option<String> {
    let mut names = sub.names.lock().await;
    if let Some(n) = names.get(sender) {
        return n.clone();
    }
    let n = app_name(bus, sender).await.ok().map(|(n, _)| n);
    names.insert(sender.to_string(), n.clone());
    n
}

fn internal(e: &zbus::Error) -> ComputerError {
    ComputerError::internal(format!("cannot subscribe to accessibility events: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_classify() {
        let w = "org.a11y.atspi.Event.Window";
        let o = "org.a11y.atspi.Event.Object";
        assert_eq!(
            classify(w, "Create", "", 0),
            Some((EventKind::WindowCreated, None))
        );
        assert_eq!(
            classify(w, "Destroy", "", 0),
            Some((EventKind::WindowDestroyed, None))
        );
        assert_eq!(
            classify(w, "Activate", "", 0),
            Some((EventKind::WindowActivated, None))
        );
        assert_eq!(classify(w, "Minimize", "", 0), None);
        assert_eq!(
            classify("org.a11y.atspi.Event.Focus", "Focus", "", 0),
            Some((EventKind::FocusChanged, None))
        );
        assert_eq!(
            classify(o, "StateChanged", "focused", 1),
            Some((EventKind::FocusChanged, None))
        );
        assert_eq!(
            classify(o, "StateChanged", "checked", 0),
            Some((EventKind::StateChanged, Some("checked=0".into())))
        );
        assert_eq!(
            classify(o, "ChildrenChanged", "add", 3),
            Some((EventKind::ChildrenChanged, Some("add".into())))
        );
        assert_eq!(
            classify(o, "PropertyChange", "accessible-name", 0),
            Some((EventKind::NameChanged, None))
        );
        assert_eq!(
            classify(o, "PropertyChange", "accessible-value", 0),
            Some((EventKind::ValueChanged, None))
        );
        assert_eq!(classify(o, "PropertyChange", "accessible-parent", 0), None);
        assert_eq!(
            classify(o, "TextChanged", "insert", 0),
            Some((EventKind::TextChanged, Some("insert".into())))
        );
        assert_eq!(
            classify("org.a11y.atspi.Cache", "AddAccessible", "", 0),
            None
        );
    }
}

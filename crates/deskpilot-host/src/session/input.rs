//! Synthetic keyboard and pointer input into a window, a key sequence checked step by
//! step, and the settle after it. Reached only through `crate::host::Host`
//! (docs/ARCHITECTURE.md §7.11).

use std::time::Instant;

use deskpilot_core::Node;
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

use super::act::Change;
use super::{Session, Target, err, ms_since};
use deskpilot_protocol::Result;

/// The result of synthetic keyboard input.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KeysOutcome {
    /// `wN` of the window the keys went to.
    pub window_ref: String,
    pub result: InputResult,
    #[serde(flatten)]
    pub change: Change,
    /// Dispatch to diff returned, ms.
    pub elapsed_ms: u64,
    pub text: String,
    pub tokens: usize,
}

/// How long the app may settle between the steps of a key sequence: 150 ms of quiet,
/// at most 1.5 s (a focus move or a dialog opening is announced well within that).
const STEP_SETTLE: Settle = Settle {
    quiet_ms: 150,
    max_ms: 1_500,
    read: false,
};

/// One dispatch of a key sequence: one chord of a chord list, or a run of text that
/// ends at a Tab or a line break (keys that move focus or submit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyStep {
    pub chord: Option<String>,
    pub text: Option<String>,
}

impl KeyStep {
    /// The step as the stop message names it: the chord, or `N chars of text`.
    pub fn describe(&self) -> String {
        match (&self.chord, &self.text) {
            (Some(c), _) => deskpilot_core::sanitize::one_line(c),
            (None, Some(t)) => format!("{} chars of text", t.chars().count()),
            (None, None) => String::new(),
        }
    }
}

/// Appends to an input result's line what the driver read back (`· 12 characters
/// read back`) and, on a line of its own, what it could not confirm.
pub(super) fn read_back_into(out: &mut String, r: &InputResult) {
    if let Some(n) = r.verified_chars {
        out.push_str(&format!(
            " · {n} character{} read back",
            if n == 1 { "" } else { "s" }
        ));
    }
    if let Some(note) = &r.note {
        out.push_str(&format!(
            "\nnote: {}",
            deskpilot_core::sanitize::one_line(note)
        ));
    }
}

/// Splits keys into the steps [`Session::keys_checked`] checks one by one: every
/// whitespace-separated chord, or text cut after each Tab, line feed or carriage
/// return. Empty input is one empty step (the driver says what is missing).
pub fn key_steps(chord: Option<&str>, text: Option<&str>) -> Vec<KeyStep> {
    if let Some(c) = chord {
        let steps: Vec<KeyStep> = c
            .split_whitespace()
            .map(|c| KeyStep {
                chord: Some(c.to_owned()),
                text: None,
            })
            .collect();
        if !steps.is_empty() {
            return steps;
        }
    }
    let Some(t) = text.filter(|t| !t.is_empty()) else {
        return vec![KeyStep {
            chord: chord.map(str::to_owned),
            text: text.map(str::to_owned),
        }];
    };
    t.split_inclusive(['\t', '\n', '\r'])
        .map(|piece| KeyStep {
            chord: None,
            text: Some(piece.to_owned()),
        })
        .collect()
}

/// A stop before `step`: `e`'s code, a message saying what was sent, and the
/// detail's `sent` / `stopped_before`.
pub(super) fn stopped_after(e: ComputerError, sent: &[String], step: &KeyStep) -> ComputerError {
    let message = format!(
        "stopped before {:?} after sending {}: {}. Observe to see what the sent keys did",
        step.describe(),
        if sent.is_empty() {
            "nothing".to_owned()
        } else {
            sent.join(" ")
        },
        e.message
    );
    let mut detail = e.detail.clone().unwrap_or_else(|| serde_json::json!({}));
    if let Some(o) = detail.as_object_mut() {
        o.insert("sent".into(), serde_json::json!(sent));
        o.insert("stopped_before".into(), serde_json::json!(step.describe()));
    }
    ComputerError {
        code: e.code,
        message,
        detail: Some(detail),
    }
}

impl Session {
    /// Sends keys (a chord list or literal text) to the target window through the
    /// keyboard fallback, one [`KeyStep`] at a time ([`key_steps`]): before every
    /// step after the first, the app is given time to settle, the window must still
    /// exist and hold keyboard focus (else `COMPUTER_SCOPE_VIOLATION`: the input would
    /// land in whatever window took focus), and `check` judges the step on the window
    /// as it is now (the host's policy: password focus, what the key activates). A
    /// stop after some steps were sent is an error whose `detail` says what was sent
    /// (`sent`, `stopped_before`); observe to see their effect.
    pub(crate) async fn keys_checked(
        &mut self,
        target: &Target,
        chord: Option<String>,
        text: Option<String>,
        mut check: impl FnMut(&KeyStep, &Node) -> Result<()>,
    ) -> Result<KeysOutcome> {
        self.sent = false;
        self.unknown = false;
        // An enumeration offered before these keys predates their effect: no later
        // action may take it as its "before" windows.
        self.listing = None;
        let started = Instant::now();
        let window = self.resolve_window(target).await?;
        let has_base = self
            .state
            .per_window
            .get(window.handle.as_str())
            .is_some_and(|w| w.last.is_some());
        if !has_base && !window.no_tree {
            let (root, _) = self.read(&window).await?;
            self.remember(&window, root);
        }
        if window.no_tree && key_steps(chord.as_deref(), text.as_deref()).len() > 1 {
            return Err(err(
                ErrorCode::InvalidArgument,
                "the window publishes no accessibility tree, so nothing can be checked between keys: send one chord (or text without Tab or line breaks) per call",
            ));
        }
        let before_windows = self.window_handles().await?;
        let sub = self
            .driver
            .subscribe(SubscribeParams {
                app: Some(window.app.clone()),
                kinds: Vec::new(),
            })
            .await
            .ok();
        let what = match (&chord, &text) {
            (Some(c), _) => c.clone(),
            (None, Some(t)) => format!("{} chars of text", t.chars().count()),
            (None, None) => String::new(),
        };
        let steps = key_steps(chord.as_deref(), text.as_deref());
        let mut result: Option<InputResult> = None;
        let mut sent: Vec<String> = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            if i > 0 {
                if let Some(sub) = &sub {
                    self.settle(sub.subscription, STEP_SETTLE).await;
                }
                if let Err(e) = self.check_step(&window, step, &mut check).await {
                    return Err(stopped_after(e, &sent, step));
                }
            }
            let r = self
                .driver
                .keys(KeysParams {
                    window: window.handle.clone(),
                    chord: step.chord.clone(),
                    text: step.text.clone(),
                })
                .await;
            let r = match self.dispatched(r) {
                Ok(r) => r,
                Err(e) if i > 0 => return Err(stopped_after(e, &sent, step)),
                Err(e) => return Err(e),
            };
            sent.push(step.describe());
            self.sent = true;
            result = Some(match result {
                None => r,
                Some(acc) => InputResult {
                    channel: acc.channel,
                    elapsed_ms: acc.elapsed_ms + r.elapsed_ms,
                    events_sent: acc.events_sent + r.events_sent,
                    verified_chars: match (acc.verified_chars, r.verified_chars) {
                        (Some(a), Some(b)) => Some(a + b),
                        (a, b) => a.or(b),
                    },
                    note: acc.note.or(r.note),
                },
            });
        }
        let result = result.ok_or_else(|| {
            err(
                ErrorCode::InvalidArgument,
                "no keys given; send a chord such as \"ctrl+s\" or text",
            )
        })?;
        if let Some(sub) = sub {
            self.settle(sub.subscription, Settle::default()).await;
        }
        self.state.current = Some(window.handle.0.clone());
        let change = self
            .change_after_effect(&window, &before_windows, None)
            .await;
        let elapsed_ms = ms_since(started);
        let window_ref = self.state.windows.assign(&window.handle);
        let mut out = format!(
            "ok keys {} → {window_ref} via {} (synthetic input) · {} key events · {elapsed_ms} ms",
            deskpilot_core::sanitize::one_line(&what),
            result.channel.as_str(),
            result.events_sent,
        );
        read_back_into(&mut out, &result);
        change.render_into(&mut out);
        let tokens = deskpilot_core::tokens::count(&out);
        Ok(KeysOutcome {
            window_ref,
            result,
            change,
            elapsed_ms,
            text: out,
            tokens,
        })
    }

    /// The checks before a later step of a key sequence: the window still exists and
    /// holds focus, then `check` on its tree as it is now.
    pub(super) async fn check_step(
        &mut self,
        window: &WindowInfo,
        step: &KeyStep,
        check: &mut impl FnMut(&KeyStep, &Node) -> Result<()>,
    ) -> Result<()> {
        let now = self
            .driver
            .windows()
            .await?
            .into_iter()
            .find(|w| w.handle == window.handle);
        let why = match now {
            None => Some("the window closed"),
            Some(w) if !w.active => Some("the window lost keyboard focus to another window"),
            Some(_) => None,
        };
        if let Some(why) = why {
            return Err(err(ErrorCode::ScopeViolation, why));
        }
        let (root, _) = self.read(window).await?;
        check(step, &root)
    }

    /// Sends one pointer gesture (screen pixels, already checked against a basis by
    /// the caller) to `window` through synthetic input, waits for the app to settle,
    /// and returns what changed, like [`Session::keys`]. Synthetic pointer input moves
    /// the user's pointer; the result says so.
    pub(crate) async fn pointer(
        &mut self,
        window: &WindowInfo,
        params: PointerParams,
    ) -> Result<KeysOutcome> {
        self.sent = false;
        self.unknown = false;
        // As in `keys_checked`: the offered enumeration predates this gesture.
        self.listing = None;
        let started = Instant::now();
        if !window.no_tree
            && self
                .state
                .per_window
                .get(window.handle.as_str())
                .is_none_or(|w| w.last.is_none())
        {
            let (root, _) = self.read(window).await?;
            self.remember(window, root);
        }
        let before_windows = self.window_handles().await?;
        let sub = self
            .driver
            .subscribe(SubscribeParams {
                app: Some(window.app.clone()),
                kinds: Vec::new(),
            })
            .await
            .ok();
        let what = format!("{:?} at ({}, {})", params.action, params.x, params.y).to_lowercase();
        let r = self.driver.pointer(params).await;
        let result = self.dispatched(r)?;
        self.sent = true;
        if let Some(sub) = sub {
            self.settle(sub.subscription, Settle::default()).await;
        }
        self.state.current = Some(window.handle.0.clone());
        let change = self
            .change_after_effect(window, &before_windows, None)
            .await;
        let elapsed_ms = ms_since(started);
        let window_ref = self.state.windows.assign(&window.handle);
        let mut out = format!(
            "ok pointer {what} → {window_ref} via {} (synthetic input, moves the pointer) · {} events · {elapsed_ms} ms",
            result.channel.as_str(),
            result.events_sent,
        );
        read_back_into(&mut out, &result);
        change.render_into(&mut out);
        let tokens = deskpilot_core::tokens::count(&out);
        Ok(KeysOutcome {
            window_ref,
            result,
            change,
            elapsed_ms,
            text: out,
            tokens,
        })
    }

    /// Puts `text` on the clipboard through the driver (X11: a holder process owns
    /// the CLIPBOARD selection) and reads it back. Crate-private: the host's pipeline
    /// calls it once the effect was judged.
    pub(crate) async fn clipboard_write(&mut self, text: String) -> Result<ClipboardWritten> {
        self.sent = false;
        self.unknown = false;
        let r = self
            .driver
            .clipboard_write(ClipboardWriteParams { text })
            .await;
        let written = self.dispatched(r)?;
        self.sent = true;
        Ok(written)
    }

    /// Waits until the subscription has been quiet for `s.quiet_ms`, at most `s.max_ms`.
    pub(super) async fn settle(&self, subscription: u64, s: Settle) {
        let start = Instant::now();
        loop {
            let left = s.max_ms.saturating_sub(ms_since(start));
            if left == 0 {
                return;
            }
            match self
                .driver
                .next_events(subscription, s.quiet_ms.min(left))
                .await
            {
                Ok(b) if !b.events.is_empty() => continue,
                _ => return,
            }
        }
    }
}

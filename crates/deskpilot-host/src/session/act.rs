//! An action on an element: the ref resolved against the window as it is now, the
//! host's gate run on that element, the dispatch, and what changed (the diff, windows
//! that opened or closed). Reached only through `crate::host::Host`
//! (docs/ARCHITECTURE.md §7.11).

use std::time::Instant;

use deskpilot_core::diff::{DiffOptions, diff};
use deskpilot_core::render::{RenderOptions, render};
use deskpilot_core::{Handle, Node, Op, Role};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

use super::read::element_of;
use super::{DEFAULT_MAX_TOKENS, LISTING_MAX_AGE, Session, Target, err, ms_since};
use deskpilot_protocol::Result;

/// A window that appeared during an action: named, not snapshotted (observing it
/// is a separate, policy-checked step).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NewWindow {
    pub window_ref: String,
    pub app: String,
    pub role: Role,
    pub title: String,
    /// Why the host will not touch it, when a refusal covers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// What an action changed on the desktop.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Change {
    /// The diff text of the acted-on window (`+`, `-`, `~`, `focus:` lines); empty
    /// when nothing changed.
    pub diff: String,
    pub diff_tokens: usize,
    /// Windows that appeared.
    pub new_windows: Vec<NewWindow>,
    /// `wN` refs of windows that closed.
    pub closed_windows: Vec<String>,
    /// Why the desktop could not be read after the effect ran (the effect itself
    /// ran; what it changed is then partly or wholly unknown): the code and
    /// message of the read that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

impl Change {
    /// Appends the change as the model reads it.
    pub(super) fn render_into(&self, text: &mut String) {
        if let Some(why) = &self.unread {
            text.push_str(&format!(
                "\nafter: the effect ran, but reading the desktop after it failed ({}); observe before the next step",
                deskpilot_core::sanitize::one_line(why)
            ));
        }
        if !self.diff.is_empty() {
            text.push('\n');
            text.push_str(self.diff.trim_end());
        } else if self.closed_windows.is_empty()
            && self.new_windows.is_empty()
            && self.unread.is_none()
        {
            text.push_str("\n(no visible change)");
        }
        for c in &self.closed_windows {
            text.push_str(&format!("\nwindow {c} closed"));
        }
        for w in &self.new_windows {
            text.push_str(&format!(
                "\nnew window [{}] {} \"{}\" ({})",
                w.window_ref,
                w.role,
                deskpilot_core::sanitize::one_line(&w.title),
                deskpilot_core::sanitize::one_line(&w.app),
            ));
            match &w.refused {
                Some(r) => text.push_str(&format!(" — refused: {r}")),
                None => text.push_str(&format!(
                    " — observe --window {} to work in it",
                    w.window_ref
                )),
            }
        }
    }
}

/// The result of an action on an element.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ActOutcome {
    #[serde(rename = "ref")]
    pub ref_: String,
    pub op: Op,
    pub result: ActResult,
    #[serde(flatten)]
    pub change: Change,
    /// Dispatch to diff returned, ms.
    pub elapsed_ms: u64,
    /// The whole result as the model reads it.
    pub text: String,
    pub tokens: usize,
}

impl ActOutcome {
    /// The failure an action that was not confirmed `executed` is, for callers that
    /// answer with success or failure (the CLI's exit status, MCP's `isError`):
    /// `rejected` (the application refused; nothing happened) is
    /// `COMPUTER_ELEMENT_NOT_ACTIONABLE`, `timed_out` is `COMPUTER_TIMEOUT` and
    /// `outcome_unknown` is `COMPUTER_OUTCOME_UNKNOWN`. `detail` carries the whole
    /// outcome (result, diff, text). `None` for an executed action.
    pub fn not_executed(&self) -> Option<ComputerError> {
        let (code, what) = match self.result.status {
            ActStatus::Executed => return None,
            ActStatus::Rejected => (
                ErrorCode::ElementNotActionable,
                "nothing was done; observe, then try another op or element, or the fallback the note names",
            ),
            ActStatus::TimedOut => (
                ErrorCode::Timeout,
                "it got no answer in time and may or may not have happened; observe before trying again (it is never retried)",
            ),
            ActStatus::OutcomeUnknown => (
                ErrorCode::OutcomeUnknown,
                "it was sent but not confirmed; observe before trying again (it is never retried)",
            ),
        };
        let note = self
            .result
            .note
            .as_deref()
            .map(|n| format!(" ({})", deskpilot_core::sanitize::one_line(n)))
            .unwrap_or_default();
        Some(
            ComputerError::new(
                code,
                format!(
                    "{} {} via {} was {}{note}: {what}",
                    self.op,
                    deskpilot_core::sanitize::one_line(&self.ref_),
                    self.result.method,
                    self.result.status.as_str()
                ),
            )
            .with_detail(serde_json::to_value(self).unwrap_or_default()),
        )
    }
}

impl Session {
    /// Performs `op` on the element `r` of the current window, with `gate` called
    /// between resolving the ref in a fresh
    /// read of the window and dispatching: it sees the fresh window tree and the
    /// element the ref resolved to, and an error from it stops the action before any
    /// platform call (the host's policy check sits here, so it judges the element as
    /// it is now, not as it was at the last observe). When the element died between
    /// the read and the dispatch, the ref is resolved again and `gate` judges the
    /// new element before the one retry.
    pub(crate) async fn act_checked(
        &mut self,
        r: &str,
        op: Op,
        value: Option<String>,
        mut gate: impl FnMut(&Node, &Node) -> Result<()>,
    ) -> Result<ActOutcome> {
        self.sent = false;
        self.unknown = false;
        if op.needs_value() && value.is_none() {
            return Err(err(
                ErrorCode::InvalidArgument,
                format!("op {op} needs a value, e.g. `deskpilot act e5 {op} \"text\"`"),
            ));
        }
        let started = Instant::now();
        // Unknown or malformed refs fail here, before any platform call.
        let (cur, window) = self.window_of_ref(r)?;
        let before_windows = match self.listing.take() {
            Some((at, handles)) if at.elapsed() < LISTING_MAX_AGE => handles,
            _ => self.window_handles().await?,
        };
        if !before_windows.contains(&Handle(cur.clone())) {
            return Err(err(
                ErrorCode::ElementNotFound,
                format!(
                    "window {:?} is gone; run `deskpilot apps` and observe another window",
                    window.title
                ),
            ));
        }
        let params = |h: Handle, v: Option<String>| ActParams {
            window: window.handle.clone(),
            handle: h,
            op,
            value: v,
            // The driver reads the window as it settles (overlapping the read with
            // the end of its wait); a window with no tree is read by pixels.
            settle: Some(Settle {
                read: !window.no_tree,
                ..Settle::default()
            }),
        };
        // Resolve the ref against the window as it is now, not as it was at the last
        // observe: a platform can recycle a dead element's handle for another
        // element, and a ref must never land on a different element. The tree the
        // model last saw stays the "before" of the diff.
        let (mut h, mut target, mut fresh) = self.fresh_handle(&window, r).await?;
        gate(&fresh, element_of(&fresh, &h, r)?)?;
        let resolved_ms = ms_since(started);
        let mut result = match self.driver.act(params(h.clone(), value.clone())).await {
            Err(e) if e.code == ErrorCode::ElementNotFound => {
                // The native object died between the read and the dispatch: the
                // element it resolves to now is judged again before the retry.
                let (again, line, tree) = self.fresh_handle(&window, r).await?;
                gate(&tree, element_of(&tree, &again, r)?)?;
                (h, target, fresh) = (again, line, tree);
                let r = self.driver.act(params(h.clone(), value.clone())).await;
                self.dispatched(r)?
            }
            other => self.dispatched(other)?,
        };
        self.sent = true;

        let acted_ms = ms_since(started);
        let after = result.after.take();
        let read_back = after.is_some();
        let change = self
            .change_after_effect(&window, &before_windows, after.map(|a| *a))
            .await;
        if result.status == ActStatus::Executed && change.unread.is_none() && !window.no_tree {
            // What the op should have changed, compared with the window as it was
            // just before the dispatch (docs/ARCHITECTURE.md §1.6).
            let read_after = self
                .state
                .per_window
                .get(window.handle.as_str())
                .and_then(|w| w.last.as_ref());
            let windows_changed =
                !change.new_windows.is_empty() || !change.closed_windows.is_empty();
            // The pointer is the next rung only when the act did not already go
            // through it (Android's taps).
            let origin = window
                .device_bounds
                .or(window.bounds)
                .filter(|_| result.channel != Channel::Pointer);
            if let Some(why) =
                super::verify::no_effect(op, &fresh, read_after, &h, windows_changed, origin)
            {
                result.status = ActStatus::OutcomeUnknown;
                result.note = Some(match result.note.take() {
                    Some(n) => format!("{why}; {n}"),
                    None => why,
                });
            }
        }
        let elapsed_ms = ms_since(started);
        tracing::debug!(
            resolved_ms,
            acted_ms,
            elapsed_ms,
            read_back,
            "act phases (ms since the call began)"
        );
        let mut text = format!(
            "{} {op} {r} {target} via {}:{} · {} · {elapsed_ms} ms",
            if result.status == ActStatus::Executed {
                "ok"
            } else {
                "!!"
            },
            result.channel.as_str(),
            result.method,
            result.status.as_str(),
        );
        if let Some(note) = &result.note {
            text.push_str(&format!(
                "\nnote: {}",
                deskpilot_core::sanitize::one_line(note)
            ));
        }
        change.render_into(&mut text);
        let tokens = deskpilot_core::tokens::count(&text);
        Ok(ActOutcome {
            ref_: r.to_string(),
            op,
            result,
            change,
            elapsed_ms,
            text,
            tokens,
        })
    }

    /// Reads `window` afresh (assigning refs, keeping the model's last view as the
    /// diff base) and finds the element of ref `r` in it by handle, then by
    /// fingerprint. Zero or several candidates: `COMPUTER_STALE_REF` with the fresh
    /// snapshot in `detail.snapshot`.
    /// Also returns the element's one-line form, for the result. A ref only a
    /// search's deep read reached ([`Session::read_deep`]) is resolved in a deep
    /// read, which is returned in place of the plain one (never remembered).
    pub(super) async fn fresh_handle(
        &mut self,
        window: &WindowInfo,
        r: &str,
    ) -> Result<(Handle, String, Node), ComputerError> {
        let resolve = |s: &Self, tree: &Node| {
            s.state
                .per_window
                .get(window.handle.as_str())
                .map(|ws| ws.registry.reresolve(r, tree))
        };
        // A ref that only a search's deep read reached (item 580 of a list) is not
        // in the remembered plain read: read deep first, before a plain read could
        // retire its entry.
        let deep_only = self
            .state
            .per_window
            .get(window.handle.as_str())
            .and_then(|ws| {
                let e = ws.registry.resolve(r).ok()?;
                let last = ws.last.as_ref()?;
                Some(!last.walk().any(|n| n.handle == e.handle))
            })
            .unwrap_or(false);
        if deep_only {
            let tree = self.read_deep(window).await?;
            if let Some(Ok(h)) = resolve(self, &tree) {
                let line = Self::target_line(&tree, &h);
                return Ok((h, line, tree));
            }
        }
        let (plain, _) = self.read(window).await?;
        let mut found = resolve(self, &plain);
        let mut deep = None;
        let unread = plain
            .walk()
            .any(|n| n.child_count > n.first_child + n.children.len() as u64);
        if matches!(found, Some(Err(_))) && unread {
            // An element a search reached past the read's limits (item 580 of a
            // list): read deep as the search did, so the judge sees it in place.
            let tree = self.read_deep(window).await?;
            let again = resolve(self, &tree);
            if matches!(again, Some(Ok(_))) {
                found = again;
                deep = Some(tree);
            }
        }
        match found {
            Some(Ok(h)) => {
                let fresh = deep.unwrap_or(plain);
                let line = Self::target_line(&fresh, &h);
                Ok((h, line, fresh))
            }
            Some(Err(core_err)) => {
                let rendered = render(&plain, &RenderOptions::default());
                self.remember(window, plain);
                self.save()?;
                let mut e = ComputerError::from(&core_err);
                e.detail = Some(serde_json::json!({ "snapshot": rendered.text }));
                Err(e)
            }
            None => Err(err(
                ErrorCode::ElementNotFound,
                "the current window has no refs yet; run `deskpilot observe` first",
            )),
        }
    }

    /// `role "name"` of element `h` of `tree` (the name cut to 60 characters), as
    /// an action's first line names its target.
    pub(super) fn target_line(tree: &Node, h: &Handle) -> String {
        tree.walk()
            .find(|n| &n.handle == h)
            .map(|n| {
                let name = deskpilot_core::sanitize::one_line(&n.name);
                let name: String = name.chars().take(60).collect();
                if name.is_empty() {
                    n.role.to_string()
                } else {
                    format!("{} \"{name}\"", n.role)
                }
            })
            .unwrap_or_default()
    }

    /// [`Session::observe_change`] after an effect that ran: a read that fails is
    /// written into the change ([`Change::unread`]) instead of replacing the
    /// result, so the result still says first that the effect ran
    /// (docs/ARCHITECTURE.md §7.12).
    pub(super) async fn change_after_effect(
        &mut self,
        window: &WindowInfo,
        before_windows: &[Handle],
        read: Option<TreeSnapshot>,
    ) -> Change {
        match self.observe_change(window, before_windows, read).await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(code = e.code.as_str(), error = %e.message, "read after an effect failed");
                Change {
                    unread: Some(format!("{}: {}", e.code.as_str(), e.message)),
                    ..Change::default()
                }
            }
        }
    }

    /// After an action in `window`: re-reads it and diffs against the last tree,
    /// snapshots windows that appeared (they are named in the change, never made
    /// current), and notes windows that closed (a closed current window leaves no
    /// current window: the next call chooses). `read`: the window as the driver read
    /// it once the action settled ([`ActResult::after`]), used instead of reading
    /// it again.
    pub(super) async fn observe_change(
        &mut self,
        window: &WindowInfo,
        before_windows: &[Handle],
        read: Option<TreeSnapshot>,
    ) -> Result<Change> {
        let cur = window.handle.0.clone();
        let after_windows = self.window_handles().await?;
        let mut change = Change::default();
        if after_windows.contains(&window.handle) && window.no_tree {
            change.diff = "(not read: the window has no accessibility tree; observe it again to read its pixels)".into();
        } else if after_windows.contains(&window.handle) {
            let before = self.state.per_window.get(&cur).and_then(|w| w.last.clone());
            let (after, _) = match read {
                Some(snap) => self.adopt(window, snap),
                None => self.read(window).await?,
            };
            if let Some(before) = before {
                let d = diff(
                    &before,
                    &after,
                    &DiffOptions {
                        max_tokens: DEFAULT_MAX_TOKENS,
                        ..DiffOptions::default()
                    },
                );
                change.diff = d.text;
                change.diff_tokens = d.tokens;
            }
            self.remember(window, after);
        } else {
            change
                .closed_windows
                .push(self.state.windows.assign(&window.handle));
            self.state.per_window.remove(&cur);
            if self.state.current.as_deref() == Some(cur.as_str()) {
                self.state.current = None;
            }
        }
        for h in before_windows {
            if !after_windows.contains(h) && h != &window.handle {
                change.closed_windows.push(self.state.windows.assign(h));
                self.state.per_window.remove(h.as_str());
                if self.state.current.as_deref() == Some(h.as_str()) {
                    self.state.current = None;
                }
            }
        }
        let fresh: Vec<Handle> = after_windows
            .iter()
            .filter(|h| !before_windows.contains(h))
            .cloned()
            .collect();
        if !fresh.is_empty() {
            let infos = self.driver.windows().await?;
            for h in fresh {
                if let Some(w) = infos.iter().find(|w| w.handle == h) {
                    change.new_windows.push(NewWindow {
                        window_ref: self.state.windows.assign(&w.handle),
                        app: w.app.clone(),
                        role: w.role,
                        title: w.title.clone(),
                        refused: None,
                    });
                }
            }
        }
        if self.state.current.is_none()
            && let Ok(w) = self.resolve_window(&Target::Current).await
        {
            // The window now in front may not be readable (a splash screen with no
            // tree): it stays unchosen, and the next call chooses and says why.
            match self.read(&w).await {
                Ok((root, _)) => {
                    self.remember(&w, root);
                    self.state.current = Some(w.handle.0.clone());
                }
                Err(e) => {
                    change.unread = Some(format!(
                        "the window now in front, {:?}, could not be read: {}: {}",
                        w.title,
                        e.code.as_str(),
                        e.message
                    ));
                }
            }
        }
        self.save()?;
        Ok(change)
    }

    pub(super) async fn window_handles(&self) -> Result<Vec<Handle>> {
        Ok(self
            .driver
            .windows()
            .await?
            .into_iter()
            .map(|w| w.handle)
            .collect())
    }

    /// Offers `apps`, an enumeration the caller has just made, to the next action as
    /// the windows before it (saving it one enumeration, ~5–20 ms; see
    /// [`LISTING_MAX_AGE`]). The windows are those `Driver::windows` lists: of apps
    /// that answer, and windows without a tree.
    pub fn offer_listing(&mut self, apps: &[AppInfo]) {
        let handles = apps
            .iter()
            .filter(|a| a.status == AppStatus::Ok || a.windows.iter().all(|w| w.no_tree))
            .flat_map(|a| a.windows.iter().map(|w| w.handle.clone()))
            .collect();
        self.listing = Some((Instant::now(), handles));
    }
}

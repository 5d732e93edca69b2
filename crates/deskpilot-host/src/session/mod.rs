//! One host session over one desktop: targets windows, reads them through a driver,
//! renders them with refs, acts, settles and diffs.
//!
//! Window targeting: `observe` picks a window (by app name, `wN` ref, title or handle)
//! and makes it *current*; `act`, `find` and `keys` work in the current window. When an
//! action opens a new window (a dialog), the result names it in one line but does not
//! switch to it: working in another window takes an `observe` of it (which is where a
//! host re-runs its refusals and rebinds its grant). When the current window closes,
//! the active window of the desktop becomes current. Element refs (`eN`) are per
//! window (see [`deskpilot_core::refs`]). Policy (grants, refusals, modes) is not
//! decided here; [`crate::host`] wraps a session with it.
//!
//! The session is laid out by what it does: reading a window and keeping its refs
//! (`read`), observe (`observe`), find (`find`), a text read whole (`text`), acting on
//! an element with settle and diff (`act`), keys and pointer input (`input`), and
//! waiting (`wait`). The acting calls are the host's alone (`pub(crate)`): every
//! effect on the desktop passes through `crate::host::Host`'s pipeline
//! (docs/ARCHITECTURE.md §7.11).

use std::sync::Arc;
use std::time::{Duration, Instant};

use deskpilot_core::{Handle, Node};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};

use crate::store::{SessionState, StateStore};
use deskpilot_protocol::Result;

mod act;
mod find;
mod input;
mod observe;
mod read;
mod text;
mod verify;
mod wait;

#[cfg(test)]
mod tests;

pub use act::{ActOutcome, Change, NewWindow};
pub use find::{FULL_TEXT_FIELDS, FindHit, Found, MatchedField, Unsearched};
pub use input::{KeyStep, KeysOutcome, key_steps};
pub use observe::{Observation, ObserveOptions, ShownElement};
pub use read::{
    DEEP_READ_BUDGET, DEEP_READ_MAX_CHILDREN, DEEP_READ_NODES, DEEP_READ_PAGES, SEARCH_READ_NODES,
};
pub use text::{TextRead, char_slice};
pub use verify::NO_EFFECT;
pub use wait::{WaitFor, WaitOutcome};

/// Default token budget of a snapshot or a diff (docs/ARCHITECTURE.md §4).
pub const DEFAULT_MAX_TOKENS: usize = 2_000;

/// Which window a call is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The current window (last observed), else the desktop's active window.
    Current,
    /// A window of the application whose name matches (case-insensitive; exact match
    /// first, then substring); its active window first.
    App(String),
    /// A window ref (`w2`) or a substring of a window title.
    Window(String),
    /// Exactly this window (the host's bound window).
    Handle(Handle),
}

/// A host session over one desktop.
///
/// Outside this crate a session only reads: every acting call is crate-private, so
/// whoever holds a session (the CLI, the MCP server, the agent loop, the bench)
/// acts only through [`crate::Host`], whose pipeline judges each effect
/// (docs/ARCHITECTURE.md §7.11). Reading compiles:
///
/// ```no_run
/// # async fn read(s: &mut deskpilot_host::Session) {
/// let opts = deskpilot_host::ObserveOptions::default();
/// let _ = s.observe(&deskpilot_host::Target::Current, &opts).await;
/// let _ = s.hello().await;
/// # }
/// ```
///
/// Acting on an element does not:
///
/// ```compile_fail,E0624
/// # async fn act(s: &mut deskpilot_host::Session) {
/// let _ = s
///     .act_checked("e1", deskpilot_core::Op::Click, None, |_, _| Ok(()))
///     .await;
/// # }
/// ```
///
/// Nor do keys, pointer input, a clipboard write, the driver, or the policy state:
///
/// ```compile_fail,E0624
/// # async fn keys(s: &mut deskpilot_host::Session) {
/// let t = deskpilot_host::Target::Current;
/// let _ = s.keys_checked(&t, Some("Return".into()), None, |_, _| Ok(())).await;
/// # }
/// ```
///
/// ```compile_fail,E0624
/// # async fn pointer(s: &mut deskpilot_host::Session, w: &deskpilot_protocol::types::WindowInfo, p: deskpilot_protocol::types::PointerParams) {
/// let _ = s.pointer(w, p).await;
/// # }
/// ```
///
/// ```compile_fail,E0624
/// # async fn clipboard(s: &mut deskpilot_host::Session) {
/// let _ = s.clipboard_write("x".into()).await;
/// # }
/// ```
///
/// ```compile_fail,E0624
/// # fn driver(s: &deskpilot_host::Session) {
/// let _ = s.driver();
/// # }
/// ```
///
/// ```compile_fail,E0624
/// # fn widen(s: &mut deskpilot_host::Session) {
/// s.state_mut().policy.approved_apps.push("anything".into());
/// # }
/// ```
pub struct Session {
    driver: Arc<dyn Driver>,
    store: StateStore,
    state: SessionState,
    /// The last acting call (`act_checked`, `keys_checked`, `pointer`) got an effect
    /// through to the driver: its driver call returned success at least once.
    sent: bool,
    /// The last acting call's driver call was cut off by a dropped device link
    /// ([`ComputerError::is_link_lost`]): its effect may or may not have happened.
    unknown: bool,
    /// The windows of an enumeration the caller made just before, and when: the
    /// next `act_checked` takes them as its "before" list instead of enumerating
    /// again, if they are younger than [`LISTING_MAX_AGE`] and no keys or pointer
    /// gesture was sent since ([`Session::offer_listing`]).
    listing: Option<(Instant, Vec<Handle>)>,
}

/// How old an offered enumeration may be for an action to take it as the windows
/// before it: a call's own enumeration is milliseconds old; one from before a
/// confirmation prompt, during which windows may have opened, is not used.
pub const LISTING_MAX_AGE: Duration = Duration::from_millis(500);

fn err(code: ErrorCode, msg: impl Into<String>) -> ComputerError {
    ComputerError::new(code, msg)
}

fn ms_since(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}

impl Session {
    /// A session over `driver`, with refs persisted in `store`. The driver is
    /// wrapped in [`crate::redacting::Redacting`]: nothing it answers reaches the
    /// session unredacted.
    pub fn new(driver: Arc<dyn Driver>, store: StateStore) -> Session {
        let state = store.load();
        Session {
            // Every answer of the driver is redacted before the session sees it.
            driver: Arc::new(crate::redacting::Redacting::new(driver)),
            sent: false,
            unknown: false,
            listing: None,
            store,
            state,
        }
    }

    /// Whether the last acting call got its effect (or a step of it) through to the
    /// driver before it returned, so an error after that point came after the effect.
    pub fn effect_sent(&self) -> bool {
        self.sent
    }

    /// Whether the last acting call's effect is unknown: its driver call went out
    /// and the device link dropped before the answer (docs/ARCHITECTURE.md §15).
    pub fn effect_unknown(&self) -> bool {
        self.unknown
    }

    /// Notes a driver call of an acting call that a dropped link cut off.
    fn dispatched<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.as_ref().is_err_and(ComputerError::is_link_lost) {
            self.unknown = true;
        }
        r
    }

    /// The driver this session talks to, redacted. Crate-private: its acting
    /// methods are the host pipeline's alone (docs/ARCHITECTURE.md §7.11).
    pub(crate) fn driver(&self) -> &Arc<dyn Driver> {
        &self.driver
    }

    /// The driver's `apps.list` as it answers it (redacted), with no ref assigned
    /// and nothing saved: for checks such as `doctor`'s.
    pub async fn enumerate(&self) -> Result<Vec<AppInfo>> {
        self.driver.apps().await
    }

    /// The driver's `hello`: its platform, version, capabilities and permissions.
    pub async fn hello(&self) -> Result<Hello> {
        self.driver.hello().await
    }

    /// Path of the state file this session keeps its refs in.
    pub fn state_path(&self) -> &std::path::Path {
        self.store.path()
    }

    /// The state kept between calls.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// The state kept between calls, for the host's policy bookkeeping.
    pub(crate) fn state_mut(&mut self) -> &mut SessionState {
        &mut self.state
    }

    /// Reads `window` afresh with refs assigned, without making it the diff base.
    pub async fn peek(&mut self, window: &WindowInfo) -> Result<Node> {
        Ok(self.read(window).await?.0)
    }

    /// Writes refs and last trees back to the state file.
    pub fn save(&self) -> Result<()> {
        self.store.save(&self.state)
    }

    /// The `wN` ref of a window, assigning one if it is new.
    pub fn window_ref(&mut self, handle: &Handle) -> String {
        self.state.windows.assign(handle)
    }

    /// Applications with their windows (window refs assigned).
    pub async fn apps(&mut self) -> Result<Vec<(AppInfo, Vec<String>)>> {
        let apps = self.driver.apps().await?;
        let mut out = Vec::with_capacity(apps.len());
        for app in apps {
            let refs = app
                .windows
                .iter()
                .map(|w| self.state.windows.assign(&w.handle))
                .collect();
            out.push((app, refs));
        }
        self.save()?;
        Ok(out)
    }

    /// Resolves a target to a window, enumerating the desktop's apps for it.
    pub async fn resolve_window(&mut self, target: &Target) -> Result<WindowInfo> {
        let apps = self.driver.apps().await?;
        self.resolve_in(&apps, target)
    }

    /// Resolves a target to a window of `apps`, an enumeration the caller has just
    /// made (the host enumerates once per call, and a second enumeration would cost
    /// another round of accessibility and X11 queries: ~5–20 ms each, measured on
    /// mousepad under Xvfb). Errors as [`Session::resolve_window`].
    pub fn resolve_in(&self, apps: &[AppInfo], target: &Target) -> Result<WindowInfo> {
        let all: Vec<(&AppInfo, &WindowInfo)> = apps
            .iter()
            .flat_map(|a| a.windows.iter().map(move |w| (a, w)))
            .collect();
        // A window that can be read is picked before one that cannot (an app's
        // window its tree does not hold), the active one first.
        let pick = |cands: Vec<&WindowInfo>| -> Option<WindowInfo> {
            let readable: Vec<&WindowInfo> = cands.iter().copied().filter(|w| !w.no_tree).collect();
            let cands = if readable.is_empty() { cands } else { readable };
            cands
                .iter()
                .find(|w| w.active)
                .or_else(|| cands.first())
                .map(|w| (*w).clone())
        };
        match target {
            Target::App(name) => {
                let lower = name.to_lowercase();
                let exact: Vec<&WindowInfo> = all
                    .iter()
                    .filter(|(a, _)| a.name.to_lowercase() == lower)
                    .map(|(_, w)| *w)
                    .collect();
                let cands = if exact.is_empty() {
                    all.iter()
                        .filter(|(a, _)| a.name.to_lowercase().contains(&lower))
                        .map(|(_, w)| *w)
                        .collect()
                } else {
                    exact
                };
                if let Some(w) = pick(cands) {
                    return Ok(w);
                }
                let known: Vec<String> = apps.iter().map(|a| a.name.clone()).collect();
                if let Some(a) = apps.iter().find(|a| a.name.to_lowercase().contains(&lower)) {
                    if a.status == AppStatus::AccessibilityDisabled {
                        return Err(err(
                            ErrorCode::AccessibilityDisabled,
                            format!(
                                "app {:?}{} shows windows but publishes no accessibility tree: it was started without accessibility. Restart it with accessibility on, e.g. `deskpilot sandbox run -- APP`: {}",
                                a.name,
                                a.toolkit
                                    .as_deref()
                                    .map(|t| format!(" (toolkit {t})"))
                                    .unwrap_or_default(),
                                deskpilot_core::toolkit::remedy(a.toolkit.as_deref()),
                            ),
                        ));
                    }
                    let code = match a.status {
                        AppStatus::NotResponding => ErrorCode::NotResponding,
                        AppStatus::AccessibilityDisabled => ErrorCode::AccessibilityDisabled,
                        AppStatus::Ok => ErrorCode::ElementNotFound,
                    };
                    return Err(err(
                        code,
                        format!(
                            "app {:?} has no window that can be read (status {:?}); wait for it to open a window or check `deskpilot doctor`",
                            a.name, a.status
                        ),
                    ));
                }
                Err(err(
                    ErrorCode::ElementNotFound,
                    format!(
                        "no app named {name:?} is on the accessibility bus; running apps: {}",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                ))
            }
            Target::Window(spec) => {
                let is_ref = spec.len() > 1
                    && spec.starts_with('w')
                    && spec[1..].chars().all(|c| c.is_ascii_digit());
                if is_ref {
                    let handle = self.state.windows.resolve(spec).cloned().ok_or_else(|| {
                        err(
                            ErrorCode::ElementNotFound,
                            format!("window ref {spec} is not known; run `deskpilot apps` to list windows"),
                        )
                    })?;
                    return all
                        .iter()
                        .find(|(_, w)| w.handle == handle)
                        .map(|(_, w)| (*w).clone())
                        .ok_or_else(|| {
                            err(
                                ErrorCode::ElementNotFound,
                                format!(
                                    "window {spec} is gone; run `deskpilot apps` to list windows"
                                ),
                            )
                        });
                }
                let lower = spec.to_lowercase();
                pick(
                    all.iter()
                        .filter(|(_, w)| w.title.to_lowercase().contains(&lower))
                        .map(|(_, w)| *w)
                        .collect(),
                )
                .ok_or_else(|| {
                    err(
                        ErrorCode::ElementNotFound,
                        format!("no window title contains {spec:?}; run `deskpilot apps` to list windows"),
                    )
                })
            }
            Target::Handle(h) => all
                .iter()
                .find(|(_, w)| &w.handle == h)
                .map(|(_, w)| (*w).clone())
                .ok_or_else(|| {
                    err(
                        ErrorCode::ElementNotFound,
                        "the window is gone; run `deskpilot apps` to list windows",
                    )
                }),
            Target::Current => {
                if let Some(cur) = &self.state.current
                    && let Some((_, w)) = all.iter().find(|(_, w)| w.handle.as_str() == cur)
                {
                    return Ok((*w).clone());
                }
                pick(all.iter().map(|(_, w)| *w).collect()).ok_or_else(|| {
                    err(
                        ErrorCode::ElementNotFound,
                        "no window is open on this desktop; launch an app first (e.g. `deskpilot sandbox run -- mousepad`)",
                    )
                })
            }
        }
    }
}

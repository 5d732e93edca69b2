//! [`MacDriver`]: the [`Driver`] trait over AX, with CGEvent input as the declared
//! fallback.
//!
//! Owns the wiring: handles to elements (the registry), the trust check before every
//! call, which read serves which method, focusing a window before input, and settling
//! by bounded polling after an action. Every AX call runs on a blocking thread and is
//! bounded by the application's messaging timeout. It makes no policy decision.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskpilot_core::Handle;
use deskpilot_protocol::keys::parse_chords;
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};

use super::ax::{self, AxErr, Elem, MESSAGING_TIMEOUT_S, PERMISSION_REMEDY};
use super::cg;
use super::read::{self, AppFacts, Reader};
use crate::actions::{self, Direction, Facts, Method, Settable};
use crate::geometry::{
    PointsRect, pixel_on_a_display, pixels_to_points, scale_for, topmost_pid_at,
};
use crate::handle::{AxRef, Registry, unknown_handle};
use crate::keyplan::{plan_chord, plan_pointer, plan_text};
use crate::settle::{POLL_MS, Poll, Verdict};
use crate::values::{Attrs, check_state};
use crate::walk::{self, ReadError, WalkLimits};
use deskpilot_protocol::Result;

/// How long a whole read may take before it stops and marks what it left: 10 s.
const READ_DEADLINE: Duration = Duration::from_secs(10);
/// How long activation waits for the window to become the focused one: 1 s.
const ACTIVATE_WAIT: Duration = Duration::from_millis(1_000);
/// How long typed text is polled for in the focused element: 500 ms.
const READ_BACK_WAIT: Duration = Duration::from_millis(500);
/// Quiet time after a method that applied its change inside the call, ms: 100.
const APPLIED_QUIET_MS: u64 = 100;

/// Options of the macOS driver.
#[derive(Debug, Clone, Default)]
pub struct MacOptions {
    /// Ask macOS to show its Accessibility prompt when the process is not trusted
    /// (`kAXTrustedCheckOptionPrompt`).
    pub prompt: bool,
}

struct Shared {
    reg: Mutex<Registry<Elem>>,
}

impl Shared {
    fn reg(&self) -> MutexGuard<'_, Registry<Elem>> {
        self.reg.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The element of a handle.
    fn elem(&self, h: &Handle) -> Result<(AxRef, Elem), ComputerError> {
        let r = AxRef::parse(h)?;
        let e = self
            .reg()
            .get(r)
            .cloned()
            .ok_or_else(|| unknown_handle(r))?;
        Ok((r, e))
    }
}

/// The macOS driver: the Accessibility API for reading and acting, CGEvent for the
/// declared keyboard and pointer fallbacks. `Send + Sync`; share it behind an `Arc`.
pub struct MacDriver {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MacDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MacDriver").finish_non_exhaustive()
    }
}

fn permission_missing() -> ComputerError {
    ComputerError::new(ErrorCode::OsPermissionMissing, PERMISSION_REMEDY)
}

fn trusted() -> Result<()> {
    if ax::is_trusted(false) {
        Ok(())
    } else {
        Err(permission_missing())
    }
}

/// Runs blocking AX or CoreGraphics work on a blocking thread.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ComputerError::internal(format!("AX task failed: {e}")))?
}

fn read_error(e: ReadError, what: &Handle) -> ComputerError {
    match e {
        ReadError::Gone => ComputerError::new(
            ErrorCode::ElementNotFound,
            format!("{what} no longer exists (closed, or the app rebuilt it); list windows again"),
        )
        .with_detail(serde_json::json!({ "handle": what.as_str() })),
        ReadError::NotResponding { what: call } => ax::not_responding(&call),
        ReadError::Failed(m) => ComputerError::internal(m),
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The attributes of one element in one batched read.
fn attrs_of(e: &Elem) -> Result<Attrs, AxErr> {
    Ok(Attrs::from_values(&e.multiple(&read::element_names())?))
}

/// The facts [`actions::choose`] needs.
fn facts_of(e: &Elem) -> Result<Facts, AxErr> {
    let attrs = attrs_of(e)?;
    let actions = e.actions()?;
    let settable = Settable {
        value: e.settable("AXValue")?,
        selected_text: e.settable("AXSelectedText")?,
        focused: e.settable("AXFocused")?,
        selected: e.settable("AXSelected")?,
        expanded: e.settable("AXExpanded")?,
        disclosing: e.settable("AXDisclosing")?,
    };
    Ok(Facts {
        attrs,
        actions,
        settable,
    })
}

/// The application element and facts of `pid`.
fn app_of(pid: i32) -> Result<(Elem, AppFacts), ComputerError> {
    let app = Elem::application(pid, MESSAGING_TIMEOUT_S);
    let facts = read::app_facts(&app, pid, &format!("pid {pid}"))
        .map_err(|e| e.to_error("reading the application"))?;
    Ok((app, facts))
}

/// Whether `window` is the focused window of the frontmost application.
fn has_focus(pid: i32, window: &Elem) -> Result<bool> {
    let (_, facts) = app_of(pid)?;
    Ok(facts.frontmost && facts.focused_window.as_ref() == Some(window))
}

/// Raises `window` and makes its application frontmost, then waits up to
/// [`ACTIVATE_WAIT`] for it to be the focused window.
///
/// Errors: `COMPUTER_ELEMENT_NOT_ACTIONABLE` when it did not become focused.
fn activate_window(pid: i32, window: &Elem) -> Result<()> {
    let app = Elem::application(pid, MESSAGING_TIMEOUT_S);
    match window.perform(actions::RAISE) {
        Ok(()) => {}
        Err(e) if e.is_absent() => {}
        Err(e) => return Err(e.to_error("AXRaise")),
    }
    let _ = window.set_bool("AXMain", true);
    app.set_bool("AXFrontmost", true)
        .map_err(|e| e.to_error("setting AXFrontmost"))?;
    let until = Instant::now() + ACTIVATE_WAIT;
    loop {
        if has_focus(pid, window)? {
            return Ok(());
        }
        if Instant::now() >= until {
            return Err(ComputerError::new(
                ErrorCode::ElementNotActionable,
                "the window did not become the focused window within 1 s of AXRaise and AXFrontmost (a modal sheet or another space may hold it); bring it to the front by hand and retry",
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Makes sure input will reach `window`: focused already, or activated once.
fn ensure_focused(pid: i32, window: &Elem) -> Result<()> {
    if has_focus(pid, window)? {
        return Ok(());
    }
    activate_window(pid, window).map_err(|e| {
        ComputerError::new(
            ErrorCode::InputUnavailable,
            format!(
                "synthetic input goes to the focused window, and this window could not be focused: {}",
                e.message
            ),
        )
    })
}

/// The text of the focused element of `pid`, when it exposes one (never a secure
/// field's).
fn focused_text(pid: i32) -> Option<(Elem, String)> {
    let app = Elem::application(pid, MESSAGING_TIMEOUT_S);
    let f = app.element("AXFocusedUIElement").ok()??;
    let a = attrs_of(&f).ok()?;
    if a.is_password() {
        return None;
    }
    let text = a.value.as_ref()?.as_text()?.to_owned();
    Some((f, text))
}

/// Types `text` into the focused window and reads it back from the focused element
/// when it exposes text: `(events, verified characters, note)`.
///
/// Errors: `COMPUTER_OUTCOME_UNKNOWN` when the element's text does not show the
/// typed text within [`READ_BACK_WAIT`].
fn type_and_verify(
    pid: i32,
    text: &str,
) -> Result<(u64, Option<u64>, Option<String>), ComputerError> {
    let before = focused_text(pid);
    let sent = cg::post_text(&plan_text(text))?;
    let body = text.trim_end_matches(['\t', '\n', '\r']);
    let Some((elem, _)) = before.filter(|_| !body.is_empty()) else {
        return Ok((
            sent,
            None,
            Some("not read back: the focused element exposes no text to check it against".into()),
        ));
    };
    let until = Instant::now() + READ_BACK_WAIT;
    loop {
        let now = elem
            .value("AXValue")
            .ok()
            .flatten()
            .and_then(|v| v.as_text().map(str::to_owned));
        if now.as_deref().is_some_and(|t| t.contains(body)) {
            return Ok((sent, Some(body.chars().count() as u64), None));
        }
        if Instant::now() >= until {
            return Err(ComputerError::new(
                ErrorCode::OutcomeUnknown,
                format!(
                    "{sent} key events were sent, but the focused element's text does not show the typed text after {} ms; observe before typing again",
                    READ_BACK_WAIT.as_millis()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// The vertical or horizontal scroll bar of the scroll area holding `e` (itself, its
/// parent or grandparent), with the area's visible and content lengths in points.
fn scroll_bar_for(e: &Elem, d: Direction) -> Option<(Elem, Option<f64>, Option<f64>)> {
    let attr = if d.vertical() {
        "AXVerticalScrollBar"
    } else {
        "AXHorizontalScrollBar"
    };
    let mut level = Some(e.clone());
    for _ in 0..3 {
        let here = level?;
        if let Ok(Some(bar)) = here.element(attr) {
            let length = |x: &Elem| {
                attrs_of(x)
                    .ok()?
                    .frame
                    .map(|f: PointsRect| if d.vertical() { f.height } else { f.width })
            };
            let visible = length(&here);
            let content = here
                .element("AXContents")
                .ok()
                .flatten()
                .or_else(|| here.elements("AXContents").ok()?.into_iter().next())
                .and_then(|c| length(&c));
            return Some((bar, visible, content));
        }
        level = here.element("AXParent").ok().flatten();
    }
    None
}

/// What one semantic call did.
struct Outcome {
    status: ActStatus,
    note: Option<String>,
}

fn executed(note: Option<String>) -> Outcome {
    Outcome {
        status: ActStatus::Executed,
        note,
    }
}

/// A failed dispatch as an outcome (a timeout: it may have happened) or an error.
fn dispatch_error(e: AxErr, what: &str) -> Result<Outcome> {
    if e.is_not_responding() {
        Ok(Outcome {
            status: ActStatus::TimedOut,
            note: Some(format!(
                "{what} got no answer within {MESSAGING_TIMEOUT_S} s; it may or may not have happened. Not retried: observe before trying again"
            )),
        })
    } else if e.is_absent() || e.0 == -25200 || e.0 == -25201 {
        Ok(Outcome {
            status: ActStatus::Rejected,
            note: Some(format!(
                "the application refused {what} (AXError {}); nothing happened",
                e.0
            )),
        })
    } else {
        Err(e.to_error(what))
    }
}

/// Performs a semantic method on `e` (blocking).
fn perform(pid: i32, e: &Elem, m: &Method, before: &Facts) -> Result<Outcome> {
    let (_, what) = m.describe();
    let r = match m {
        Method::Perform(a) => e.perform(a),
        Method::SetBool { attr, value } => e.set_bool(attr, *value),
        Method::SetText(t) => e.set_text("AXValue", t),
        Method::SetNumber(n) => e.set_number("AXValue", *n),
        Method::InsertText(t) => e.set_text("AXSelectedText", t),
        Method::Nothing(why) => return Ok(executed(Some(format!("{why}; nothing sent")))),
        Method::StepTo(target) => return step_to(e, *target),
        Method::ScrollBy(d) => return scroll_by(e, *d),
        Method::Keyboard { text, replace } => return keyboard_fallback(pid, e, text, *replace),
    };
    if let Err(err) = r {
        return dispatch_error(err, &what);
    }
    // A toggle says whether the state moved.
    if before.attrs.value.as_ref().and_then(check_state).is_some()
        && matches!(m, Method::Perform(actions::PRESS))
        && let Ok(after) = attrs_of(e)
        && actions::toggled(actions::check_of(&before.attrs), actions::check_of(&after))
            == Some(false)
    {
        return Ok(Outcome {
            status: ActStatus::OutcomeUnknown,
            note: Some("AXPress was accepted but the element's value did not change yet; observe to see whether it toggled".into()),
        });
    }
    Ok(executed(None))
}

fn step_to(e: &Elem, target: f64) -> Result<Outcome> {
    let read = |e: &Elem| -> Result<Option<f64>> {
        Ok(e.value("AXValue")
            .map_err(|x| x.to_error("reading AXValue"))?
            .and_then(|v| v.as_f64()))
    };
    let start = read(e)?;
    let mut steps = 0;
    while steps < actions::MAX_STEPS {
        let Some(now) = read(e)? else {
            return Ok(Outcome {
                status: ActStatus::Rejected,
                note: Some(
                    "the element has no numeric AXValue to step toward; nothing happened".into(),
                ),
            });
        };
        let Some(action) = actions::step_toward(now, target) else {
            return Ok(executed(Some(format!(
                "{steps} steps from {start:?} to {now}"
            ))));
        };
        if let Err(err) = e.perform(action) {
            return dispatch_error(err, action);
        }
        steps += 1;
        if read(e)? == Some(now) {
            return Ok(Outcome {
                status: ActStatus::Rejected,
                note: Some(format!(
                    "{action} left the value at {now}; it cannot reach {target}"
                )),
            });
        }
    }
    Ok(Outcome {
        status: ActStatus::OutcomeUnknown,
        note: Some(format!(
            "stopped after {} steps without reaching {target}",
            actions::MAX_STEPS
        )),
    })
}

fn scroll_by(e: &Elem, d: Direction) -> Result<Outcome> {
    let Some((bar, visible, content)) = scroll_bar_for(e, d) else {
        return Ok(Outcome {
            status: ActStatus::Rejected,
            note: Some(format!(
                "no {} scroll bar scrolls this element; nothing happened. Fallback: keys Page_Up/Page_Down with it focused",
                if d.vertical() {
                    "vertical"
                } else {
                    "horizontal"
                }
            )),
        });
    };
    let cur = bar
        .value("AXValue")
        .map_err(|x| x.to_error("reading the scroll bar"))?
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    let target = actions::scroll_target(cur, d, visible, content);
    if (target - cur).abs() < f64::EPSILON {
        return Ok(executed(Some(format!(
            "already scrolled to the {} end; nothing moved",
            d.as_str()
        ))));
    }
    if let Err(err) = bar.set_number("AXValue", target) {
        return dispatch_error(err, "setting the scroll bar's AXValue");
    }
    let now = bar.value("AXValue").ok().flatten().and_then(|v| v.as_f64());
    match now {
        Some(n) if (n - cur).abs() >= f64::EPSILON => Ok(executed(Some(format!(
            "scroll bar {cur:.3} → {n:.3} (range 0–1)"
        )))),
        _ => Ok(Outcome {
            status: ActStatus::Rejected,
            note: Some(format!(
                "the scroll bar stayed at {cur:.3} when set to {target:.3}; nothing moved"
            )),
        }),
    }
}

fn keyboard_fallback(pid: i32, e: &Elem, text: &str, replace: bool) -> Result<Outcome> {
    if text.contains(['\t', '\n', '\r']) {
        return Err(ComputerError::invalid(
            "a value typed through the keyboard cannot hold a Tab or a line break (they move focus or submit); set it without them, or send them with keys so each step is checked",
        ));
    }
    let window = e
        .element("AXWindow")
        .map_err(|x| x.to_error("reading the element's window"))?
        .ok_or_else(|| {
            ComputerError::new(
                ErrorCode::ElementNotActionable,
                "the element is in no window",
            )
        })?;
    if !has_focus(pid, &window)? {
        return Err(ComputerError::new(
            ErrorCode::ElementNotActionable,
            "the element has no accessibility method for this value, and the keyboard fallback needs its window to have focus already (an action does not steal focus); activate the window first",
        ));
    }
    e.set_bool("AXFocused", true)
        .map_err(|x| x.to_error("setting AXFocused"))?;
    let mut sent = 0;
    if replace {
        let chords = parse_chords("super+a")?;
        sent += cg::post_keys(&plan_chord(&chords[0])?)?;
        std::thread::sleep(Duration::from_millis(50));
    }
    let (typed, verified, note) = type_and_verify(pid, text)?;
    sent += typed;
    let checked = match (verified, note) {
        (Some(n), _) => format!("; {n} characters read back"),
        (None, Some(why)) => format!("; {why}"),
        (None, None) => String::new(),
    };
    Ok(executed(Some(format!(
        "no settable AXValue or AXSelectedText on this element; typed through the keyboard into the focused window ({sent} key events){checked}"
    ))))
}

impl MacDriver {
    /// Opens the driver.
    ///
    /// Sets the messaging timeout of every AX call of this process to
    /// [`MESSAGING_TIMEOUT_S`], so no call into a frozen application hangs.
    ///
    /// Errors: `COMPUTER_OS_PERMISSION_MISSING` when this process is not trusted for
    /// Accessibility (`AXIsProcessTrustedWithOptions`); the message says where to
    /// allow it. With `opts.prompt`, macOS shows its own prompt as well.
    pub fn connect(opts: MacOptions) -> Result<MacDriver> {
        if !ax::is_trusted(opts.prompt) {
            return Err(permission_missing());
        }
        ax::set_global_timeout(MESSAGING_TIMEOUT_S);
        Ok(MacDriver {
            shared: Arc::new(Shared {
                reg: Mutex::new(Registry::default()),
            }),
        })
    }

    /// Reads a window (or a scope in it) under the snapshot's limits (blocking).
    fn read(shared: &Shared, p: &SnapshotParams) -> Result<TreeSnapshot> {
        trusted()?;
        let started = Instant::now();
        let (wref, window) = shared.elem(&p.window)?;
        let root = match &p.scope {
            Some(s) => {
                let (sref, e) = shared.elem(s)?;
                if sref.pid != wref.pid {
                    return Err(ComputerError::invalid(format!(
                        "scope {s} is not in window {}'s application",
                        p.window
                    )));
                }
                e
            }
            None => window.clone(),
        };
        let (_, facts) = app_of(wref.pid)?;
        let displays = cg::displays();
        let info = read::window_record(&mut shared.reg(), &window, &facts, &displays)
            .map_err(|e| e.to_error("reading the window"))?;
        let window_frame = attrs_of(&window).ok().and_then(|a| a.frame);
        let most = MAX_READ_NODES;
        let limits = WalkLimits {
            child_cap: p.child_cap.map_or(walk::DEFAULT_CHILD_CAP, |c| c.min(most)),
            max_nodes: p.max_nodes.map_or(walk::DEFAULT_MAX_NODES, |m| m.min(most)),
            depth: p.depth,
            from: p.from.unwrap_or(0),
            hidden: p.hidden,
            text_cap: p
                .text_cap
                .map_or(walk::DEFAULT_TEXT_CAP, |c| c.min(MAX_TEXT_CAP) as usize),
            deadline: started + READ_DEADLINE,
        };
        let names = read::element_names();
        let mut reg = shared.reg();
        reg.begin_read();
        let mut reader = Reader {
            reg: &mut reg,
            names: &names,
            pid: wref.pid,
        };
        let w = walk::walk(&mut reader, &root, window_frame, p.scope.is_none(), &limits)
            .map_err(|e| read_error(e, p.scope.as_ref().unwrap_or(&p.window)))?;
        drop(reg);
        if w.cut_by_deadline {
            tracing::warn!(window = %p.window, "read stopped at its deadline; unread children are counted");
        }
        Ok(TreeSnapshot {
            window: info,
            root: w.root,
            stats: WalkStats {
                objects: w.objects,
                vanished: w.vanished,
                capped: w.capped,
                elapsed_ms: elapsed_ms(started),
                bulk: false,
            },
        })
    }

    /// Settles after an action by polling a digest, then reads the window when asked.
    async fn settle(
        &self,
        s: Settle,
        applied_in_call: bool,
        pid: i32,
        window: Handle,
        target: Elem,
    ) -> (SettleReport, Option<TreeSnapshot>) {
        let started = Instant::now();
        let (_, win_elem) = match self.shared.elem(&window) {
            Ok(x) => x,
            Err(_) => {
                return (
                    SettleReport {
                        waited_ms: 0,
                        events: 0,
                        hit_ceiling: false,
                        reads: Some(0),
                    },
                    None,
                );
            }
        };
        let mut poll = Poll::new(s, applied_in_call.then_some(APPLIED_QUIET_MS));
        let report = loop {
            let (w, t) = (win_elem.clone(), target.clone());
            let d = tokio::task::spawn_blocking(move || {
                let app = Elem::application(pid, MESSAGING_TIMEOUT_S);
                read::digest(&app, &w, &t)
            })
            .await
            .ok()
            .flatten();
            match poll.feed(elapsed_ms(started), d) {
                Verdict::Done(r) => break r,
                Verdict::Again => tokio::time::sleep(Duration::from_millis(POLL_MS)).await,
            }
        };
        let after = if s.read {
            let shared = self.shared.clone();
            let p = SnapshotParams::whole(window);
            blocking(move || Self::read(&shared, &p)).await.ok()
        } else {
            None
        };
        (report, after)
    }
}

#[async_trait]
impl Driver for MacDriver {
    async fn hello(&self) -> Result<Hello> {
        let trusted = blocking(|| Ok(ax::is_trusted(false))).await?;
        let mut notes = vec![
            "events are not offered: the macOS driver settles by polling, not AXObserver".to_string(),
            "capture and OCR are not offered: CGWindowListCreateImage is gone from the macOS 15 SDK and ScreenCaptureKit is not wired in".to_string(),
        ];
        if !trusted {
            notes.push(PERMISSION_REMEDY.to_string());
        }
        Ok(Hello {
            platform: "macos".to_string(),
            driver: "deskpilot-driver-macos".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities {
                tree: true,
                actions: true,
                keyboard: true,
                pointer: true,
                capture: false,
                ocr: false,
                events: false,
            },
            permissions: Permissions {
                accessibility: trusted,
                input: trusted,
                capture: false,
                notes,
            },
        })
    }

    async fn apps(&self) -> Result<Vec<AppInfo>> {
        let shared = self.shared.clone();
        blocking(move || {
            trusted()?;
            let screen = cg::screen_windows();
            let displays = cg::displays();
            let mut reg = shared.reg();
            reg.begin_read();
            Ok(read::list_apps(&mut reg, &screen, &displays))
        })
        .await
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        let (program, args) = p
            .command
            .split_first()
            .ok_or_else(|| ComputerError::invalid("apps.launch needs a command"))?;
        let child = {
            use std::os::unix::process::CommandExt as _;
            std::process::Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .process_group(0)
                .spawn()
                .map_err(|e| {
                    ComputerError::new(
                        ErrorCode::ElementNotFound,
                        format!("cannot start {program:?}: {e} (give the executable inside an .app bundle, e.g. /System/Applications/TextEdit.app/Contents/MacOS/TextEdit)"),
                    )
                })?
        };
        let pid = child.id();
        let until = Instant::now() + Duration::from_millis(p.wait_ms.unwrap_or(15_000));
        loop {
            let windows = self.windows().await?;
            if let Some(w) = windows.into_iter().find(|w| w.pid == Some(pid)) {
                return Ok(LaunchResult {
                    pid,
                    window: Some(w),
                });
            }
            if Instant::now() >= until {
                return Ok(LaunchResult { pid, window: None });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        Ok(self
            .apps()
            .await?
            .into_iter()
            .filter(|a| a.status == AppStatus::Ok)
            .flat_map(|a| a.windows)
            .collect())
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        let shared = self.shared.clone();
        blocking(move || {
            trusted()?;
            let (r, window) = shared.elem(&p.window)?;
            activate_window(r.pid, &window).map(|_| Empty {})
        })
        .await
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        let shared = self.shared.clone();
        blocking(move || Self::read(&shared, &p)).await
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        let limit = p.limit.unwrap_or(20) as usize;
        let needle = p.text.to_lowercase();
        let windows: Vec<Handle> = match &p.window {
            Some(w) => vec![w.clone()],
            None => self
                .windows()
                .await?
                .into_iter()
                .filter(|w| {
                    p.app
                        .as_deref()
                        .is_none_or(|a| w.app.eq_ignore_ascii_case(a))
                })
                .map(|w| w.handle)
                .collect(),
        };
        let mut matches = Vec::new();
        for w in windows {
            let shared = self.shared.clone();
            let sp = SnapshotParams {
                hidden: true,
                ..SnapshotParams::whole(w)
            };
            let snap = match blocking(move || Self::read(&shared, &sp)).await {
                Ok(s) => s,
                Err(e) if p.window.is_none() && e.code == ErrorCode::NotResponding => continue,
                Err(e) => return Err(e),
            };
            for n in snap.root.walk() {
                if matches.len() >= limit {
                    break;
                }
                if walk::matches(n, &needle, p.role) {
                    let mut node = n.clone();
                    node.children.clear();
                    matches.push(FindMatch {
                        window: snap.window.clone(),
                        node,
                    });
                }
            }
        }
        Ok(FindResult { matches })
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        let started = Instant::now();
        let shared = self.shared.clone();
        let (op, value, handle) = (p.op, p.value.clone(), p.handle.clone());
        let (pid, target, method, outcome) = blocking(move || {
            trusted()?;
            let (r, e) = shared.elem(&handle)?;
            let facts = facts_of(&e).map_err(|x| x.to_error("reading the element"))?;
            let method = actions::choose(op, &facts, value.as_deref())?;
            let outcome = perform(r.pid, &e, &method, &facts)?;
            Ok((r.pid, e, method, outcome))
        })
        .await?;
        let (channel, method_text) = method.describe();
        let mut result = ActResult {
            status: outcome.status,
            channel,
            method: method_text,
            elapsed_ms: elapsed_ms(started),
            settle: None,
            note: outcome.note,
            after: None,
        };
        if let Some(s) = p.settle {
            let (report, after) = self
                .settle(s, method.applied_in_call(), pid, p.window.clone(), target)
                .await;
            result.settle = Some(report);
            result.after = after.map(Box::new);
        }
        Ok(result)
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        let _ = p;
        Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            "events are not supported by the macOS driver (it settles by polling and does not run AXObserver); compare window lists or observe again instead",
        ))
    }

    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        let _ = (subscription, timeout_ms);
        Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            "events are not supported by the macOS driver; no subscription exists",
        ))
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        let started = Instant::now();
        let shared = self.shared.clone();
        blocking(move || {
            trusted()?;
            let (r, window) = shared.elem(&p.window)?;
            let what = match (p.chord, p.text) {
                (Some(c), None) => Ok(c),
                (None, Some(t)) => Err(t),
                _ => {
                    return Err(ComputerError::invalid(
                        "input.keys takes exactly one of chord or text",
                    ));
                }
            };
            // Every chord is planned before any key is pressed.
            let plans = match &what {
                Ok(c) => parse_chords(c)?
                    .iter()
                    .map(plan_chord)
                    .collect::<Result<Vec<_>, _>>()?,
                Err(_) => Vec::new(),
            };
            ensure_focused(r.pid, &window)?;
            let (sent, verified, note) = match what {
                Ok(_) => {
                    let mut sent = 0;
                    for plan in &plans {
                        sent += cg::post_keys(plan)?;
                    }
                    (sent, None, None)
                }
                Err(text) => type_and_verify(r.pid, &text)?,
            };
            Ok(InputResult {
                channel: Channel::Keyboard,
                elapsed_ms: elapsed_ms(started),
                events_sent: sent,
                verified_chars: verified,
                note,
            })
        })
        .await
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        let started = Instant::now();
        let shared = self.shared.clone();
        blocking(move || {
            trusted()?;
            let (r, window) = shared.elem(&p.window)?;
            let frame = attrs_of(&window)
                .map_err(|e| e.to_error("reading the window"))?
                .frame
                .ok_or_else(|| ComputerError::new(ErrorCode::ElementNotFound, "the window has no frame"))?;
            let displays = cg::displays();
            let scale = scale_for(&frame, &displays);
            let points: Vec<(i32, i32)> = std::iter::once((p.x, p.y)).chain(p.to).collect();
            for &(x, y) in &points {
                if !pixel_on_a_display(x, y, scale, &displays) {
                    return Err(ComputerError::invalid(format!(
                        "({x}, {y}) device pixels lies on no display; pointer input is refused there, never clamped"
                    )));
                }
            }
            ensure_focused(r.pid, &window)?;
            let screen = cg::screen_windows();
            for &(x, y) in &points {
                let (px, py) = pixels_to_points(f64::from(x), f64::from(y), scale);
                if topmost_pid_at(&screen, px, py) != Some(r.pid) {
                    return Err(ComputerError::new(
                        ErrorCode::ScopeViolation,
                        format!("({x}, {y}) is covered by another application's window (or the Dock, or the menu bar); pointer input there would reach it"),
                    ));
                }
            }
            let at = pixels_to_points(f64::from(p.x), f64::from(p.y), scale);
            let to = p.to.map(|(x, y)| pixels_to_points(f64::from(x), f64::from(y), scale));
            let sent = cg::post_mouse(&plan_pointer(p.action, at, to)?)?;
            Ok(InputResult {
                channel: Channel::Pointer,
                elapsed_ms: elapsed_ms(started),
                events_sent: sent,
                verified_chars: None,
                note: Some("moved the user's pointer".into()),
            })
        })
        .await
    }

    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        let _ = p;
        Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            "screen capture is not supported by the macOS driver yet (CGWindowListCreateImage is gone from the macOS 15 SDK; ScreenCaptureKit is not wired in); work from the accessibility tree",
        ))
    }

    async fn ocr(&self, p: OcrParams) -> Result<OcrResult> {
        let _ = p;
        Err(ComputerError::new(
            ErrorCode::PlatformUnsupported,
            "OCR is not supported by the macOS driver (it has no screen capture); work from the accessibility tree",
        ))
    }
}

//! [`LinuxDriver`]: the [`Driver`] trait over AT-SPI2, with X11 input as the declared
//! fallback.
//!
//! Owns the wiring: which module serves which method, the lazily opened X connection
//! for keyboard and pointer input, settling around actions and the keyboard fallback
//! of `type`/`set_value`. Reading and acting live in [`crate::linux::atspi`]; input in
//! [`crate::linux::input`]. It makes no policy decision.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskpilot_core::{Bounds, Handle};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};

use super::atspi::act::{self, Method, Outcome};
use super::atspi::connection::iface;
use super::atspi::events::Subscriptions;
use super::atspi::settle::Settler;
use super::atspi::{Bus, ConnectOptions, ObjRef, apps, find, focus, launch, snapshot, typing};
use super::capture;
use super::input::{TopLevel, WindowPixels, XInput};
use super::pixels;
use deskpilot_protocol::Result;

/// How long the keyboard fallback waits for the element to report `FOCUSED` after
/// `GrabFocus`: 500 ms (GTK moves focus within one main-loop iteration).
const FOCUS_WAIT: Duration = Duration::from_millis(500);

/// The Linux driver: one connection to one accessibility bus (one desktop or
/// sandbox), and optionally one X display for input.
///
/// `Send + Sync`; share it behind an `Arc`. Every method is bounded in time by the
/// per-call timeout of [`ConnectOptions`].
pub struct LinuxDriver {
    bus: Bus,
    opts: ConnectOptions,
    subs: Subscriptions,
    input: tokio::sync::OnceCell<Arc<XInput>>,
}

impl std::fmt::Debug for LinuxDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxDriver")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl LinuxDriver {
    /// Connects to the accessibility bus named by `opts` (see [`ConnectOptions`]).
    /// Must be called inside a tokio runtime; the connection's tasks live on it.
    ///
    /// Errors: `COMPUTER_ACCESSIBILITY_DISABLED` when there is no session bus, no
    /// accessibility bus or no registry; `COMPUTER_OS_PERMISSION_MISSING` when a bus
    /// refuses the connection. The message says to run `deskpilot doctor --fix` or to
    /// start a sandbox.
    pub async fn connect(opts: ConnectOptions) -> Result<LinuxDriver> {
        let bus = Bus::connect(&opts).await?;
        Ok(LinuxDriver {
            bus,
            opts,
            subs: Subscriptions::default(),
            input: tokio::sync::OnceCell::new(),
        })
    }

    /// [`LinuxDriver::connect`] with [`ConnectOptions::from_env`].
    pub async fn from_env() -> Result<LinuxDriver> {
        Self::connect(ConnectOptions::from_env()).await
    }

    /// The options this driver was connected with.
    pub fn options(&self) -> &ConnectOptions {
        &self.opts
    }

    /// Every mapped top-level X11 window, the focused one's xid and the stacking
    /// of every mapped root child with its pid; empty without an X display.
    async fn x11_toplevels(&self) -> (Vec<TopLevel>, Option<u32>, Vec<capture::Stacked>) {
        if self.opts.display.is_none() {
            return (Vec::new(), None, Vec::new());
        }
        let Ok(x) = self.input().await else {
            return (Vec::new(), None, Vec::new());
        };
        tokio::task::spawn_blocking(move || {
            let tops = x
                .toplevels()
                .inspect_err(|e| tracing::warn!(error = %e.message, "top-level windows unreadable"))
                .unwrap_or_default();
            let active = x.focused_client().ok().flatten();
            let stack = x.stacking().unwrap_or_default();
            (tops, active, stack)
        })
        .await
        .unwrap_or_default()
    }

    /// The unmapped top-level X11 windows with the reason each is not on screen
    /// ([`XInput::hidden_toplevels`]); empty without an X display or when they
    /// cannot be read (then no window is marked hidden).
    async fn x11_hidden(&self) -> Vec<(TopLevel, Hidden)> {
        if self.opts.display.is_none() {
            return Vec::new();
        }
        let Ok(x) = self.input().await else {
            return Vec::new();
        };
        tokio::task::spawn_blocking(move || {
            x.hidden_toplevels()
                .inspect_err(
                    |e| tracing::warn!(error = %e.message, "unmapped top-level windows unreadable"),
                )
                .unwrap_or_default()
        })
        .await
        .unwrap_or_default()
    }

    /// The window record of `h` as `windows.list` gives it, and its X top-level.
    ///
    /// Errors: `COMPUTER_ELEMENT_NOT_FOUND` when no listed window has that handle or
    /// no X top-level matches it; `COMPUTER_INPUT_UNAVAILABLE` without an X display.
    async fn window_record(&self, h: &Handle) -> Result<(WindowInfo, TopLevel), ComputerError> {
        self.input().await?;
        let (tops, _, _) = self.x11_toplevels().await;
        let windows = self.windows().await?;
        let w = windows
            .into_iter()
            .find(|w| &w.handle == h)
            .ok_or_else(|| {
                ComputerError::new(
                    ErrorCode::ElementNotFound,
                    "the window is gone or not listed; list the windows again",
                )
            })?;
        let top = capture::toplevel_of(&w, &tops).cloned().ok_or_else(|| {
            ComputerError::new(
                ErrorCode::ElementNotFound,
                format!(
                    "no X11 window matches {:?}: its pixels cannot be read",
                    deskpilot_core::sanitize::one_line(&w.title)
                ),
            )
        })?;
        Ok((w, top))
    }

    /// Gives the tree-less top-level `xid` keyboard focus if it lacks it.
    /// Gives the tree-less top-level `xid` of process `pid` keyboard focus if it
    /// lacks it.
    ///
    /// Errors: `COMPUTER_ELEMENT_NOT_FOUND` when no such top-level is mapped (gone,
    /// or its id now belongs to another process).
    async fn focus_x11(&self, x: &Arc<XInput>, (xid, pid): (u32, u32)) -> Result<()> {
        let x = Arc::clone(x);
        blocking(move || {
            if x.toplevel(xid)?.is_none_or(|t| t.pid != Some(pid)) {
                return Err(ComputerError::new(
                    ErrorCode::ElementNotFound,
                    "the window is gone (its X id is no longer that process's); list the windows again",
                ));
            }
            if x.focused_toplevel()?.is_some_and(|t| t.xid == xid) {
                return Ok(());
            }
            x.activate(xid)
        })
        .await
    }

    /// The X top-level a pointer gesture on window `h` must land in: its xid.
    async fn pointer_target(&self, h: &Handle) -> Result<u32> {
        if let Some((xid, _)) = capture::x11_xid(h) {
            return Ok(xid);
        }
        let (_, top) = self.window_record(h).await?;
        Ok(top.xid)
    }

    /// A capture of `p.window` with `p.paint` painted over: the pixels, the window
    /// record, and the painted image.
    async fn painted(
        &self,
        window: &Handle,
        paint: &[Bounds],
    ) -> Result<(WindowPixels, WindowInfo, image::RgbaImage, Vec<String>), ComputerError> {
        let (w, top) = self.window_record(window).await.map_err(pixels_need_x11)?;
        let x = self.input().await?;
        let px = blocking(move || x.window_pixels(&top)).await?;
        let (img, notes) = capture::painted(&px, &w, paint);
        Ok((px, w, img, notes))
    }

    /// The X input connection, opened on first use.
    ///
    /// Errors: `COMPUTER_INPUT_UNAVAILABLE` without an X display or XTEST.
    pub async fn input(&self) -> Result<Arc<XInput>> {
        let display = self.opts.display.clone();
        self.input
            .get_or_try_init(|| async move {
                let x = tokio::task::spawn_blocking(move || XInput::connect(display.as_deref()))
                    .await
                    .map_err(|e| {
                        ComputerError::new(ErrorCode::Internal, format!("input task failed: {e}"))
                    })??;
                Ok(Arc::new(x))
            })
            .await
            .cloned()
    }

    /// Types `text` into the element through the keyboard: only into a focusable
    /// element of the window that already has focus (no activation here: an action
    /// must not steal focus silently).
    async fn keyboard_fallback(
        &self,
        window: &ObjRef,
        obj: &ObjRef,
        text: &str,
        replace: bool,
    ) -> Result<Outcome> {
        let unavailable = |e: ComputerError| {
            ComputerError::new(
                ErrorCode::ElementNotActionable,
                format!(
                    "the element has no accessibility method for this value, and the keyboard \
                     fallback is not possible: {}",
                    e.message
                ),
            )
        };
        let x = self.input().await.map_err(unavailable)?;
        focus::ensure_focused(&self.bus, &x, window, false)
            .await
            .map_err(unavailable)?;
        let _: Result<bool, _> = self.bus.call(obj, iface::COMPONENT, "GrabFocus", &()).await;
        let until = Instant::now() + FOCUS_WAIT;
        loop {
            let states: Result<Vec<u32>, _> =
                self.bus.call(obj, iface::ACCESSIBLE, "GetState", &()).await;
            let focused = states
                .map(|s| {
                    super::atspi::state_map::RawStates::from_words(&s).has(atspi::State::Focused)
                })
                .unwrap_or(false);
            if focused {
                break;
            }
            if Instant::now() >= until {
                return Err(unavailable(ComputerError::new(
                    ErrorCode::InputUnavailable,
                    "the element did not take keyboard focus",
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if text.contains(['\t', '\n', '\r']) {
            // The host judges keys text piece by piece at each Tab and line break;
            // a value typed here in one go would move focus or submit unjudged.
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                "a value typed through the keyboard cannot hold a Tab or a line break (they move focus or submit); set it without them, or send them with keys so each step is checked",
            ));
        }
        let mut sent = 0;
        if replace {
            // Select all, then type over the selection (typing replaces it; the
            // read-back starts where the selection did). Never a delete key: in a
            // spreadsheet select-all is every cell.
            let x2 = x.clone();
            sent += tokio::task::spawn_blocking(move || x2.send_chords("ctrl+a"))
                .await
                .map_err(|e| {
                    ComputerError::new(ErrorCode::Internal, format!("input task failed: {e}"))
                })??;
            tokio::time::sleep(act::FOCUS_SETTLE).await;
        }
        // Once typing began, an error is no longer "nothing happened": some keys may
        // have landed, so the result says the effect ran and was not confirmed
        // (docs/ARCHITECTURE.md §7.12).
        let (typed, verified, unverified) = match self
            .type_verified(x, window, Some(obj.clone()), text.to_string())
            .await
        {
            Ok(t) => t,
            Err(e) => {
                return Ok(Outcome {
                    status: ActStatus::OutcomeUnknown,
                    note: Some(format!(
                        "typing through the keyboard began ({sent} key events before it) and was not confirmed: {} ({})",
                        e.message,
                        e.code.as_str()
                    )),
                });
            }
        };
        sent += typed;
        let checked = match (verified, unverified) {
            (Some(n), _) => format!("; {n} characters read back"),
            (None, Some(why)) => format!("; {why}"),
            (None, None) => String::new(),
        };
        Ok(Outcome {
            status: ActStatus::Executed,
            note: Some(format!(
                "no EditableText or numeric Value path on this element; typed through the \
                 keyboard into the focused window ({sent} key events){checked}"
            )),
        })
    }

    /// Types `text` into the focused window, watching `target` (the focused text
    /// element) when there is one: each borrowed keycode is held until the element
    /// has taken the characters typed with it, the call returns once all of them
    /// arrived, and the text is read back (a trailing Tab or line break, which may
    /// move focus or submit, is typed after the read-back and not read). Returns the
    /// key events sent, the characters verified, and a note when nothing could be
    /// verified.
    ///
    /// Errors: the keyboard's, and `COMPUTER_OUTCOME_UNKNOWN` when the element
    /// stopped taking characters or holds other text than was typed.
    async fn type_verified(
        &self,
        x: Arc<XInput>,
        window: &ObjRef,
        target: Option<ObjRef>,
        text: String,
    ) -> Result<(u64, Option<u64>, Option<String>), ComputerError> {
        let blocking = |f: Box<dyn FnOnce() -> Result<u64> + Send>| async move {
            tokio::task::spawn_blocking(f).await.map_err(|e| {
                ComputerError::new(ErrorCode::Internal, format!("input task failed: {e}"))
            })?
        };
        let body_len = text.trim_end_matches(['\t', '\n', '\r']).len();
        let (body, tail) = text.split_at(body_len);
        let (body, tail) = (body.to_owned(), tail.to_owned());
        let watch = match target {
            Some(t) if !body.is_empty() => {
                let norm = body.replace("\r\n", "\n").replace('\r', "\n");
                typing::Watch::start(&self.bus, &self.opts, window.clone(), t, &norm).await
            }
            _ => None,
        };
        let Some(watch) = watch else {
            let printable = !text.trim().is_empty();
            let sent = blocking(Box::new(move || x.type_text(&text))).await?;
            let note = printable.then(|| {
                "not read back: the focused element exposes no text to check it against".to_owned()
            });
            return Ok((sent, None, note));
        };
        let watch = Arc::new(watch);
        // Dropped with this future (an MCP request cancelled): the next pace fails
        // and the typing stops there.
        struct Cancel(Option<Arc<typing::Watch>>);
        impl Drop for Cancel {
            fn drop(&mut self) {
                if let Some(w) = &self.0 {
                    w.cancelled
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        let mut cancel_on_drop = Cancel(Some(watch.clone()));
        let (w, bus, rt) = (
            watch.clone(),
            self.bus.clone(),
            tokio::runtime::Handle::current(),
        );
        let (x2, typed_body) = (x.clone(), body.clone());
        let mut sent = blocking(Box::new(move || {
            let body = typed_body.replace("\r\n", "\n").replace('\r', "\n");
            let mut pace = |n: usize| rt.block_on(w.wait_for(&bus, n, &body));
            x2.type_text_paced(&typed_body, Some(&mut pace))
        }))
        .await?;
        let norm = body.replace("\r\n", "\n").replace('\r', "\n");
        let chars = norm.chars().count();
        watch.wait_for(&self.bus, chars, &norm).await?;
        let (verified, note) = match watch.verify(&self.bus, &body).await {
            Ok(n) => (Some(n), None),
            // Arrived (the count says so) but the text could not be read in time.
            Err(e) if e.code == ErrorCode::NotResponding => (
                None,
                Some(format!(
                    "all {chars} characters arrived, but the text could not be read back: {}",
                    e.message
                )),
            ),
            Err(e) => return Err(e),
        };
        if !tail.is_empty() {
            sent += blocking(Box::new(move || x.type_text(&tail))).await?;
        }
        cancel_on_drop.0 = None;
        Ok((sent, verified, note))
    }

    fn input_result(channel: Channel, started: Instant, events_sent: u64) -> InputResult {
        InputResult {
            channel,
            elapsed_ms: started.elapsed().as_millis() as u64,
            events_sent,
            verified_chars: None,
            note: None,
        }
    }
}

/// Runs blocking X work on a blocking thread.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ComputerError::new(ErrorCode::Internal, format!("input task failed: {e}")))?
}

/// The error of a tree read on a window that publishes no tree.
/// The remedy is the one for the toolkit the window's process maps
/// (`atspi::apps::proc_toolkit`), when it is known.
fn no_tree(h: &Handle) -> ComputerError {
    let toolkit = capture::x11_xid(h).and_then(|(_, pid)| apps::proc_toolkit(pid));
    let tk = toolkit
        .as_deref()
        .map(|t| format!(" (toolkit {t})"))
        .unwrap_or_default();
    ComputerError::new(
        ErrorCode::AccessibilityDisabled,
        format!(
            "the window {}{tk} publishes no accessibility tree (an app without an AT-SPI bridge, or one started without accessibility). Restart it with accessibility on, e.g. `deskpilot sandbox run -- APP`: {}; an app that has none (Athena, Tk, games) can be read from pixels once the user allows it: `deskpilot config set capture a11y-and-pixels`",
            h.as_str(),
            deskpilot_core::toolkit::remedy(toolkit.as_deref()),
        ),
    )
}

/// A capture's error when there is no X display to read pixels from: the input
/// connection's "synthetic input needs X11" would name the wrong thing. A
/// Wayland-only session has no way for another client to read a window's pixels
/// (the compositor grants screen capture only through a portal that asks the
/// user), so it is `COMPUTER_PLATFORM_UNSUPPORTED` saying that; other errors pass.
fn pixels_need_x11(e: ComputerError) -> ComputerError {
    if e.code != ErrorCode::InputUnavailable {
        return e;
    }
    let wayland = e
        .detail
        .as_ref()
        .and_then(|d| d.get("wayland_display"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    match wayland {
        Some(w) => ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!(
                "a window's pixels are read from the X server, and this is a Wayland-only session (WAYLAND_DISPLAY={w}, no DISPLAY): no screenshot or OCR here. The accessibility tree is readable (observe, find, read); for pixels, run the app under XWayland or in a sandbox X display"
            ),
        )
        .with_detail(serde_json::json!({ "wayland_display": w })),
        None => ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!(
                "a window's pixels are read from the X server, and there is none: {}",
                e.message
            ),
        ),
    }
}

#[async_trait]
impl Driver for LinuxDriver {
    async fn hello(&self) -> Result<Hello> {
        let mut notes = Vec::new();
        let accessibility = match self.bus.accessibility_enabled().await {
            Some(true) => true,
            Some(false) => {
                notes.push(
                    "org.a11y.Status.IsEnabled is false: apps started from now on may not \
                     expose their tree (Chromium, Electron). Run `deskpilot doctor --fix`."
                        .to_string(),
                );
                false
            }
            None => {
                notes.push(
                    "org.a11y.Status.IsEnabled could not be read (no session bus given); the \
                     accessibility bus itself is connected."
                        .to_string(),
                );
                true
            }
        };
        let input = match self.input().await {
            Ok(_) => true,
            Err(e) => {
                notes.push(format!("synthetic input unavailable: {}", e.message));
                false
            }
        };
        // Pixels are read over the same X connection input uses.
        let capture_available = input;
        let ocr = capture_available && which_tesseract();
        if capture_available && !ocr {
            notes.push("OCR unavailable: install tesseract-ocr".to_string());
        }
        Ok(Hello {
            platform: "linux".to_string(),
            driver: "deskpilot-driver-linux".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities {
                tree: true,
                actions: true,
                keyboard: true,
                pointer: true,
                capture: capture_available,
                ocr,
                events: true,
            },
            permissions: Permissions {
                accessibility,
                input,
                capture: capture_available,
                notes,
            },
        })
    }

    async fn apps(&self) -> Result<Vec<AppInfo>> {
        let mut list = apps::list_apps(&self.bus).await?;
        let (tops, active, stack) = self.x11_toplevels().await;
        // Windows with no mapped X top-level: the unmapped ones say whether they
        // are withdrawn, minimised or on another workspace (read only then).
        if list
            .iter()
            .any(|a| capture::any_unmatched(&a.windows, &tops))
        {
            let hidden = self.x11_hidden().await;
            for a in &mut list {
                capture::mark_hidden(&mut a.windows, &tops, &hidden);
            }
        }
        for a in &mut list {
            capture::annotate(&mut a.windows, &tops, &stack);
        }
        apps::windows_without_tree(&mut list, &tops, active, &stack);
        let extra = apps::apps_without_tree(&list, &tops, active, &stack);
        list.extend(extra);
        Ok(list)
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        launch::launch(&self.bus, &self.opts, &p).await
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        Ok(self
            .apps()
            .await?
            .into_iter()
            .filter(|a| a.status == AppStatus::Ok || a.windows.iter().all(|w| w.no_tree))
            .flat_map(|a| a.windows)
            .collect())
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        if let Some(xid) = capture::x11_xid(&p.window) {
            let x = self.input().await?;
            return self.focus_x11(&x, xid).await.map(|_| Empty {});
        }
        let window = ObjRef::from_handle(&p.window)?;
        let grabbed: Result<bool, _> = self
            .bus
            .call(&window, iface::COMPONENT, "GrabFocus", &())
            .await;
        if let Err(e) = &grabbed
            && e.is_gone()
        {
            return Err(e.to_driver());
        }
        match self.input().await {
            Ok(x) => focus::ensure_focused(&self.bus, &x, &window, true)
                .await
                .map(|_| Empty {}),
            Err(_) if matches!(grabbed, Ok(true)) => Ok(Empty {}),
            Err(e) => Err(ComputerError::new(
                ErrorCode::ElementNotActionable,
                format!(
                    "the window refused Component.GrabFocus and X activation is unavailable: {}",
                    e.message
                ),
            )),
        }
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        if capture::x11_xid(&p.window).is_some() {
            return Err(no_tree(&p.window));
        }
        snapshot::snapshot(&self.bus, &self.opts, &p).await
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        if let Some(w) = p.window.as_ref().filter(|w| capture::x11_xid(w).is_some()) {
            return Err(no_tree(w));
        }
        find::find(&self.bus, &self.opts, &p).await
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        let started = Instant::now();
        let mut obj = ObjRef::from_handle(&p.handle)?;
        let window = ObjRef::from_handle(&p.window)?;
        let facts = act::facts(&self.bus, &obj, p.op).await?;
        let mut delegated = None;
        let method = match act::choose(p.op, &facts, p.value.as_deref()) {
            Ok(m) => m,
            Err(e) if e.code == ErrorCode::ElementNotActionable && facts.actions.is_empty() => {
                match act::delegate(&self.bus, &obj, &facts, p.op).await {
                    Some((child, f, m)) => {
                        delegated = Some(format!(
                            "the element offers no action; its child {} that carries it was {}",
                            super::atspi::role_map::map_role_code(f.role).as_str(),
                            if matches!(m, Method::Nothing(_)) {
                                "left as it is"
                            } else {
                                "activated"
                            }
                        ));
                        obj = child;
                        m
                    }
                    None => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let settler = match p.settle {
            Some(_) => match Settler::start(&self.bus, &obj.bus).await {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::debug!(error = %e, "settle subscription failed");
                    None
                }
            },
            None => None,
        };
        let outcome = match &method {
            Method::Keyboard { text, replace } => {
                self.keyboard_fallback(&window, &obj, text, *replace)
                    .await?
            }
            Method::MenuKeyboard => {
                let selected = act::perform(&self.bus, &obj, &Method::SelectInParent).await?;
                if selected.status != ActStatus::Executed {
                    selected
                } else {
                    let x = self.input().await?;
                    focus::ensure_focused(&self.bus, &x, &window, true).await?;
                    tokio::task::spawn_blocking(move || x.send_chords("Return"))
                        .await
                        .map_err(|e| {
                            ComputerError::new(
                                ErrorCode::Internal,
                                format!("input task failed: {e}"),
                            )
                        })??;
                    Outcome {
                        status: ActStatus::Executed,
                        note: Some(
                            "menu item selected in its open menu and activated with Return: GTK runs \
                             a menu item's accessibility action inside the call, which would freeze \
                             the app while a dialog it opens is up"
                                .into(),
                        ),
                    }
                }
            }
            m => act::perform(&self.bus, &obj, m).await?,
        };
        let mut result = act::result(&method, outcome, started);
        let was_delegated = delegated.is_some();
        if let Some(d) = delegated {
            result.note = Some(match result.note.take() {
                Some(n) => format!("{d}; {n}"),
                None => d,
            });
        }
        // Expand and collapse say where they end: an element that states it can
        // expand is read again, and an action it accepted without the state
        // changing is not called done (Chromium opens a `<select>` only in the
        // active window, and answers true either way).
        let verifiable = !was_delegated
            && matches!(
                p.op,
                deskpilot_core::Op::Expand | deskpilot_core::Op::Collapse
            )
            && matches!(method, Method::DoAction { .. })
            && facts.states.has(atspi::State::Expandable)
            && result.status == ActStatus::Executed;
        if let (Some(mut s), Some(settler)) = (p.settle, settler) {
            if method.applied_in_call() {
                let gap = super::atspi::settle::REACTION_GAP.as_millis() as u64;
                s.quiet_ms = s.quiet_ms.min(gap);
            }
            if s.read && !verifiable && capture::x11_xid(&p.window).is_none() {
                // The window read overlapped with the end of the wait (§6, "Reading
                // while settling"); a read that fails leaves the caller to read, and so
                // does an expand or collapse, whose state is read on after the wait.
                let whole = SnapshotParams::whole(p.window.clone());
                let (report, after) = settler
                    .finish_reading(s, || async {
                        snapshot::snapshot(&self.bus, &self.opts, &whole).await.ok()
                    })
                    .await;
                result.settle = Some(report);
                result.after = after.map(Box::new);
            } else {
                result.settle = Some(settler.finish(s).await);
            }
        }
        if verifiable {
            // Read for up to 300 ms: some apps change the state after the call.
            let want = p.op == deskpilot_core::Op::Expand;
            let until = Instant::now() + Duration::from_millis(300);
            let mut reached = None;
            loop {
                let states: Result<Vec<u32>, _> = self
                    .bus
                    .call(&obj, iface::ACCESSIBLE, "GetState", &())
                    .await;
                let Ok(s) = states else { break };
                let expanded =
                    super::atspi::state_map::RawStates::from_words(&s).has(atspi::State::Expanded);
                reached = Some(expanded == want);
                if expanded == want || Instant::now() >= until {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            if reached == Some(false) {
                result.status = ActStatus::OutcomeUnknown;
                result.note = Some(format!(
                    "the application accepted {} but the element does not say it is {}; nothing may have happened (some apps open a popup only in the active window: bring it to the front, then retry)",
                    result.method,
                    if want { "expanded" } else { "collapsed" }
                ));
            }
        }
        Ok(result)
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        let subscription = self.subs.subscribe(&self.bus, &p).await?;
        Ok(SubscribeResult { subscription })
    }

    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        self.subs
            .next_events(&self.bus, subscription, timeout_ms)
            .await
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        let started = Instant::now();
        if let Some(xid) = capture::x11_xid(&p.window) {
            // No tree: the keys go to the focused top-level, and nothing can be
            // read back.
            let x = self.input().await?;
            self.focus_x11(&x, xid).await?;
            let (chord, text) = (p.chord, p.text);
            let sent = blocking(move || match (chord, text) {
                (Some(c), None) => x.send_chords(&c),
                (None, Some(t)) => x.type_text(&t),
                _ => Err(ComputerError::new(
                    ErrorCode::InvalidArgument,
                    "input.keys takes exactly one of chord or text",
                )),
            })
            .await?;
            let mut r = Self::input_result(Channel::Keyboard, started, sent);
            r.note = Some("not read back: the window publishes no accessibility tree".into());
            return Ok(r);
        }
        let window = ObjRef::from_handle(&p.window)?;
        let what = match (p.chord, p.text) {
            (Some(c), None) => Ok(c),
            (None, Some(t)) => Err(t),
            _ => {
                return Err(ComputerError::new(
                    ErrorCode::InvalidArgument,
                    "input.keys takes exactly one of chord or text",
                ));
            }
        };
        let x = self.input().await?;
        focus::ensure_focused(&self.bus, &x, &window, true).await?;
        let text = match what {
            Ok(chord) => {
                let sent = tokio::task::spawn_blocking(move || x.send_chords(&chord))
                    .await
                    .map_err(|e| {
                        ComputerError::new(ErrorCode::Internal, format!("input task failed: {e}"))
                    })??;
                return Ok(Self::input_result(Channel::Keyboard, started, sent));
            }
            Err(text) => text,
        };
        let target = typing::focused_text(&self.bus, &self.opts, &window)
            .await
            .map(|(o, _)| o);
        let (sent, verified, note) = self.type_verified(x, &window, target, text).await?;
        let mut r = Self::input_result(Channel::Keyboard, started, sent);
        r.verified_chars = verified;
        r.note = note;
        Ok(r)
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        let started = Instant::now();
        let x = self.input().await?;
        if let Some(id) = capture::x11_xid(&p.window) {
            self.focus_x11(&x, id).await?;
        } else {
            let window = ObjRef::from_handle(&p.window)?;
            focus::ensure_focused(&self.bus, &x, &window, true).await?;
        }
        // The point (and a drag's end) must land in the named window itself, not
        // in a window stacked above it (a menu, a popup, another app's window):
        // XTest input goes to whatever is on top there.
        let target = self.pointer_target(&p.window).await?;
        let points: Vec<(i32, i32)> = std::iter::once((p.x, p.y)).chain(p.to).collect();
        {
            let x = Arc::clone(&x);
            blocking(move || {
                for (px, py) in points {
                    x.ensure_on_top_at(target, px, py)?;
                }
                Ok(())
            })
            .await?;
        }
        let sent = tokio::task::spawn_blocking(move || x.pointer(&p))
            .await
            .map_err(|e| {
                ComputerError::new(ErrorCode::Internal, format!("input task failed: {e}"))
            })??;
        Ok(Self::input_result(Channel::Pointer, started, sent))
    }

    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        let (px, w, img, notes) = self.painted(&p.window, &p.paint).await?;
        let (max_side, marks) = (p.max_side, p.marks);
        let bounds = px.bounds;
        let toolkit_scale = w.scale();
        let (width, height, image_scale, png, marks) = blocking(move || {
            let (img, scale, drawn) = capture::finish(img, &px, &w, max_side, &marks);
            let png = pixels::encode_png(&img)
                .map_err(|e| ComputerError::internal(format!("cannot encode the capture: {e}")))?;
            Ok((img.width(), img.height(), scale, png, drawn))
        })
        .await?;
        use base64::Engine as _;
        Ok(CaptureResult {
            bounds,
            toolkit_scale,
            image_scale,
            width,
            height,
            png_base64: base64::engine::general_purpose::STANDARD.encode(png),
            marks,
            notes,
        })
    }

    async fn ocr(&self, p: OcrParams) -> Result<OcrResult> {
        let started = Instant::now();
        let (px, w, img, notes) = self.painted(&p.window, &p.paint).await?;
        let (bounds, scale) = (px.bounds, w.scale());
        let (img, origin) = match &p.region {
            Some(r) => capture::crop(&img, &px, &w, r).ok_or_else(|| {
                ComputerError::new(
                    ErrorCode::ElementNotFound,
                    "the region to read lies outside the captured window",
                )
            })?,
            None => (img, bounds),
        };
        let (words, languages) = blocking(move || capture::recognise(&img, &origin, scale)).await?;
        Ok(OcrResult {
            words,
            bounds,
            toolkit_scale: scale,
            languages,
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            notes,
        })
    }

    async fn clipboard_read(&self) -> Result<ClipboardContent> {
        let display = self.clipboard_display()?;
        blocking(move || super::clipboard::read(&display)).await
    }

    async fn clipboard_write(&self, p: ClipboardWriteParams) -> Result<ClipboardWritten> {
        let display = self.clipboard_display()?;
        // The holder is this program's `clipboard-hold` (docs/ARCHITECTURE.md §7.20):
        // the driver runs inside the deskpilot binary (the CLI, the MCP server, or
        // `deskpilot driver`).
        let holder = std::env::current_exe().map_err(|e| {
            ComputerError::new(
                ErrorCode::Internal,
                format!("the clipboard holder: this program's path: {e}"),
            )
        })?;
        blocking(move || super::clipboard::write(&display, &p.text, &holder)).await
    }

    async fn clipboard_targets(&self, p: ClipboardTargetsParams) -> Result<ClipboardTargets> {
        let display = self.clipboard_display()?;
        blocking(move || super::clipboard::targets(&display, p.selection)).await
    }
}

impl LinuxDriver {
    /// The X display the clipboard is on.
    fn clipboard_display(&self) -> Result<String> {
        self.opts.display.clone().ok_or_else(|| {
            ComputerError::new(
                ErrorCode::InputUnavailable,
                "the clipboard needs an X display and this desktop has none (a Wayland-only session, or DISPLAY unset)",
            )
        })
    }
}

/// Whether a `tesseract` executable is on `PATH`.
fn which_tesseract() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("tesseract").is_file()))
}

//! Top-level windows and keyboard focus: which top-level has focus, which are mapped,
//! and giving focus to one.
//!
//! Owns the reading of EWMH (`_NET_ACTIVE_WINDOW`, `_NET_WM_PID`, `_NET_WM_NAME`) and
//! ICCCM (`WM_STATE`, `WM_NAME`) properties and the resolution of any window to its
//! client top-level. It never moves, resizes, maps or closes a window; `activate`
//! only raises and focuses.

use std::time::{Duration, Instant};

use deskpilot_core::Bounds;
use deskpilot_protocol::types::Hidden;
use deskpilot_protocol::{ComputerError, ErrorCode};
use x11rb::connection::{Connection as _, RequestConnection as _};
use x11rb::errors::ReplyError;
use x11rb::protocol::ErrorKind;
use x11rb::protocol::res::{ClientIdMask, ClientIdSpec, ConnectionExt as _};
use x11rb::protocol::shape::{ConnectionExt as _, SK};
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ClientMessageEvent, ConfigureWindowAux, ConnectionExt as _, EventMask,
    GetPropertyReply, InputFocus, MapState, StackMode, Window, WindowClass,
};

use super::{X11Context, XInput};
use deskpilot_protocol::Result;

/// How long `activate` waits for focus to arrive, per attempt, ms. A window manager
/// answers `_NET_ACTIVE_WINDOW` within one event-loop turn; a second is ample on a
/// loaded machine and keeps a refused activation from stalling a call.
pub const ACTIVATE_TIMEOUT_MS: u64 = 1_000;

/// Poll interval while waiting for focus, ms.
const FOCUS_POLL_MS: u64 = 10;

/// How deep below a window-manager frame to look for the client window (the one with
/// `WM_STATE`). Reparenting WMs nest the client one or two levels down.
const CLIENT_SEARCH_DEPTH: usize = 3;

/// Longest window title read, in 32-bit units of `GetProperty` (4 KiB of text).
const TITLE_MAX_LONGS: u32 = 1024;

/// `_NET_ACTIVE_WINDOW` source indication "pager": WMs honour it without focus-
/// stealing prevention (EWMH §_NET_ACTIVE_WINDOW).
const SOURCE_PAGER: u32 = 2;

/// ICCCM `WM_STATE` values (ICCCM §4.1.3.1): the window is shown, or iconified.
const NORMAL_STATE: u32 = 1;
const ICONIC_STATE: u32 = 3;
/// `_NET_WM_DESKTOP` of a window shown on every virtual desktop (EWMH).
const ALL_DESKTOPS: u32 = 0xFFFF_FFFF;

/// A mapped top-level window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopLevel {
    /// The client window's X id (not a window manager's frame).
    pub xid: u32,
    /// The owning process: the X-Resource extension's client pid, else
    /// `_NET_WM_PID`; `None` when neither is known (remote clients).
    pub pid: Option<u32>,
    /// `_NET_WM_NAME` (UTF-8), else `WM_NAME`; empty when unnamed.
    pub title: String,
    /// The client window's area in root-window (screen) pixels.
    pub bounds: Bounds,
}

/// One mapped child of the root window, as stacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stacked {
    /// The client window (inside a window manager's frame), or the window itself.
    pub xid: u32,
    /// Its area (the frame's, border included), root-window pixels.
    pub bounds: Bounds,
    /// The owning process, when known.
    pub pid: Option<u32>,
    /// Override-redirect: a menu, tooltip or popup the window manager does not
    /// manage.
    pub popup: bool,
    /// An input-only window: it shows nothing but takes pointer input.
    pub input_only: bool,
    /// Its input shape (XShape `SK::INPUT`) is empty: pointer input goes through
    /// it to whatever is below (a drawn overlay such as deskpilot's own agent
    /// cursor, docs/ARCHITECTURE.md §7.19). False on a server without SHAPE.
    pub click_through: bool,
}

impl XInput {
    /// The top-level window with keyboard focus: the WM's `_NET_ACTIVE_WINDOW` when a
    /// window manager sets it, else the X input focus resolved to its top-level
    /// (`PointerRoot` → the top-level under the pointer). `None` when focus is on
    /// nothing or on the root window.
    ///
    /// Errors: `InputUnavailable` on a lost connection, `Internal` on an X error.
    pub fn focused_toplevel(&self) -> Result<Option<TopLevel>> {
        if let Some(active) = self.active_window()?
            && let Some(top) = self.describe(active)?
        {
            return Ok(Some(top));
        }
        match self.input_focus_client()? {
            Some(client) => self.describe(client),
            None => Ok(None),
        }
    }

    /// The client window [`XInput::focused_toplevel`] describes, without describing
    /// it (its pid, title and bounds cost four more round trips): what a caller
    /// that has just listed the top-levels needs to mark the focused one.
    ///
    /// Errors: as [`XInput::focused_toplevel`].
    pub fn focused_client(&self) -> Result<Option<Window>> {
        match self.active_window()? {
            Some(active) => Ok(Some(active)),
            None => self.input_focus_client(),
        }
    }

    /// All mapped (viewable) top-level windows that are not override-redirect (menus,
    /// tooltips), as client windows, bottom to top in stacking order.
    ///
    /// Errors: `InputUnavailable` on a lost connection, `Internal` on an X error.
    pub fn toplevels(&self) -> Result<Vec<TopLevel>> {
        let tree = self
            .conn
            .query_tree(self.root)
            .x11("QueryTree")?
            .reply()
            .x11("QueryTree")?;
        let cookies = tree
            .children
            .iter()
            .map(|&w| {
                self.conn
                    .get_window_attributes(w)
                    .x11("GetWindowAttributes")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut frames = Vec::new();
        for (&frame, cookie) in tree.children.iter().zip(cookies) {
            let Some(attrs) = gone_is_none(cookie.reply()).x11("GetWindowAttributes")? else {
                continue;
            };
            if attrs.map_state != MapState::VIEWABLE
                || attrs.class != WindowClass::INPUT_OUTPUT
                || attrs.override_redirect
            {
                continue;
            }
            frames.push(frame);
        }
        let clients = self.clients_of(&frames)?;
        Ok(self
            .describe_many(&clients)?
            .into_iter()
            .flatten()
            .collect())
    }

    /// The top-level windows that are not mapped (withdrawn, minimised, or on
    /// another virtual desktop), as client windows with the reason each is not on
    /// screen: ICCCM `WM_STATE` `IconicState` is minimised; `NormalState` with a
    /// `_NET_WM_DESKTOP` other than the root's `_NET_CURRENT_DESKTOP` (and not
    /// "all desktops", 0xFFFFFFFF) is another workspace; anything else unmapped is
    /// withdrawn. Override-redirect and input-only windows are left out; so are
    /// windows with no title, which no accessible window could be matched to.
    ///
    /// Errors: `InputUnavailable` on a lost connection, `Internal` on an X error.
    pub fn hidden_toplevels(&self) -> Result<Vec<(TopLevel, Hidden)>> {
        let tree = self
            .conn
            .query_tree(self.root)
            .x11("QueryTree")?
            .reply()
            .x11("QueryTree")?;
        let cookies = tree
            .children
            .iter()
            .map(|&w| {
                self.conn
                    .get_window_attributes(w)
                    .x11("GetWindowAttributes")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut frames = Vec::new();
        for (&frame, cookie) in tree.children.iter().zip(cookies) {
            let Some(attrs) = gone_is_none(cookie.reply()).x11("GetWindowAttributes")? else {
                continue;
            };
            if attrs.map_state == MapState::VIEWABLE
                || attrs.class != WindowClass::INPUT_OUTPUT
                || attrs.override_redirect
            {
                continue;
            }
            frames.push(frame);
        }
        let clients = self.clients_of(&frames)?;
        let current = self
            .property(
                self.root,
                self.atoms._NET_CURRENT_DESKTOP,
                AtomEnum::CARDINAL.into(),
                1,
            )?
            .and_then(|p| p.value32().and_then(|mut v| v.next()));
        let mut out = Vec::new();
        for top in self.describe_many(&clients)?.into_iter().flatten() {
            if top.title.trim().is_empty() {
                continue;
            }
            let state = self
                .property(top.xid, self.atoms.WM_STATE, AtomEnum::ANY.into(), 1)?
                .and_then(|p| p.value32().and_then(|mut v| v.next()));
            let desktop = self
                .property(
                    top.xid,
                    self.atoms._NET_WM_DESKTOP,
                    AtomEnum::CARDINAL.into(),
                    1,
                )?
                .and_then(|p| p.value32().and_then(|mut v| v.next()));
            let why = match (state, desktop, current) {
                (Some(ICONIC_STATE), _, _) => Hidden::Minimized,
                (Some(NORMAL_STATE), Some(d), Some(c)) if d != c && d != ALL_DESKTOPS => {
                    Hidden::OtherWorkspace
                }
                _ => Hidden::Unmapped,
            };
            out.push((top, why));
        }
        Ok(out)
    }

    /// Every mapped root child (window-manager frames, unmanaged clients,
    /// override-redirect menus and popups, input-only windows alike), bottom to
    /// top. Requests are pipelined: one round of attributes, one of geometry and
    /// input shapes, one X-Resource query for every pid, then the client search of
    /// managed frames.
    ///
    /// Errors: `InputUnavailable` on a lost connection, `Internal` on an X error.
    pub fn stacking(&self) -> Result<Vec<Stacked>> {
        let tree = self
            .conn
            .query_tree(self.root)
            .x11("QueryTree")?
            .reply()
            .x11("QueryTree")?;
        let attrs = tree
            .children
            .iter()
            .map(|&w| {
                self.conn
                    .get_window_attributes(w)
                    .x11("GetWindowAttributes")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut mapped = Vec::new();
        for (&w, cookie) in tree.children.iter().zip(attrs) {
            let Some(a) = gone_is_none(cookie.reply()).x11("GetWindowAttributes")? else {
                continue;
            };
            if a.map_state == MapState::VIEWABLE {
                mapped.push((w, a.override_redirect, a.class == WindowClass::INPUT_ONLY));
            }
        }
        let geoms = mapped
            .iter()
            .map(|(w, _, _)| self.conn.get_geometry(*w).x11("GetGeometry"))
            .collect::<Result<Vec<_>, _>>()?;
        // The extension's presence is cached by the connection after the first ask.
        let has_shape = self
            .conn
            .extension_information(x11rb::protocol::shape::X11_EXTENSION_NAME)
            .x11("QueryExtension SHAPE")?
            .is_some();
        let shapes = mapped
            .iter()
            .map(|(w, _, _)| {
                has_shape
                    .then(|| {
                        self.conn
                            .shape_get_rectangles(*w, SK::INPUT)
                            .x11("ShapeGetRectangles")
                    })
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = Vec::new();
        let mut frames = Vec::new();
        for (((w, popup, input_only), cookie), shape) in mapped.into_iter().zip(geoms).zip(shapes) {
            let Some(g) = gone_is_none(cookie.reply()).x11("GetGeometry")? else {
                continue;
            };
            let click_through = match shape {
                Some(c) => gone_is_none(c.reply())
                    .x11("ShapeGetRectangles")?
                    .is_some_and(|r| r.rectangles.is_empty()),
                None => false,
            };
            let border = i32::from(g.border_width);
            let bounds = Bounds::new(
                i32::from(g.x),
                i32::from(g.y),
                i32::from(g.width) + 2 * border,
                i32::from(g.height) + 2 * border,
            );
            // A popup or an input-only window is its own client; a frame holds one
            // (searched for below, all frames at once).
            if !(popup || input_only) {
                frames.push((out.len(), w));
            }
            out.push(Stacked {
                xid: w,
                bounds,
                pid: None,
                popup,
                input_only,
                click_through,
            });
        }
        let clients = self.clients_of(&frames.iter().map(|&(_, w)| w).collect::<Vec<_>>())?;
        for ((at, _), client) in frames.into_iter().zip(clients) {
            out[at].xid = client;
        }
        let pids = self.pids_of(&out.iter().map(|s| s.xid).collect::<Vec<_>>())?;
        for (s, pid) in out.iter_mut().zip(pids) {
            s.pid = pid;
        }
        Ok(out)
    }

    /// The pids of many windows: one X-Resource request for all, `_NET_WM_PID`
    /// for those it does not answer.
    fn pids_of(&self, xids: &[Window]) -> Result<Vec<Option<u32>>> {
        let mut out = vec![None; xids.len()];
        if self.has_res && !xids.is_empty() {
            let specs: Vec<ClientIdSpec> = xids
                .iter()
                .map(|&client| ClientIdSpec {
                    client,
                    mask: ClientIdMask::LOCAL_CLIENT_PID,
                })
                .collect();
            let reply = self
                .conn
                .res_query_client_ids(&specs)
                .x11("XResQueryClientIds")?
                .reply();
            if let Some(reply) = gone_is_none(reply).x11("XResQueryClientIds")? {
                let mask = self.conn.setup().resource_id_mask;
                for id in &reply.ids {
                    if u32::from(id.spec.mask) & u32::from(ClientIdMask::LOCAL_CLIENT_PID) == 0 {
                        continue;
                    }
                    // The answer names the client by one of its resources; the
                    // window asked about is one (its id's client bits match).
                    let base = id.spec.client & !mask;
                    let pid = id.value.first().copied().filter(|&p| p != 0);
                    for (i, &x) in xids.iter().enumerate() {
                        if x & !mask == base && out[i].is_none() {
                            out[i] = pid;
                        }
                    }
                }
            }
        }
        for (i, &x) in xids.iter().enumerate() {
            if out[i].is_none() {
                out[i] = self.pid_of(x)?;
            }
        }
        Ok(out)
    }

    /// The areas of mapped windows of other processes stacked above the top-level
    /// client `xid` (override-redirect menus and popups included; input-only
    /// windows, which show nothing, not), root-window pixels. The app's own popups
    /// above it are part of what it shows; this process's own click-through
    /// overlays (the agent cursor and frame, docs/ARCHITECTURE.md §7.19) are not
    /// part of the app, while another program's click-through window still covers
    /// what is seen.
    ///
    /// Errors: `ElementNotFound` when `xid` is not a mapped top-level.
    pub fn covering(&self, xid: u32) -> Result<Vec<Bounds>> {
        let stack = self.stacking()?;
        let at = stack.iter().position(|s| s.xid == xid).ok_or_else(|| {
            ComputerError::new(ErrorCode::ElementNotFound, "the window is no longer mapped")
        })?;
        let own = stack[at].pid;
        Ok(stack[at + 1..]
            .iter()
            .filter(|s| {
                !(s.input_only
                    || s.popup && own.is_some() && s.pid == own
                    || s.click_through && s.pid == Some(std::process::id()))
            })
            .map(|s| s.bounds)
            .collect())
    }

    /// Succeeds when the topmost mapped window at root point (`x`, `y`) — input-only
    /// windows included, this process's own click-through overlay (an empty input
    /// shape) not, since pointer input goes through it; another program's
    /// click-through window counts, as it could take input back between this check
    /// and the click — is the top-level client
    /// `xid` (its frame) or a popup of its own process above it: synthetic pointer
    /// input there reaches that app and nothing else.
    ///
    /// Errors: `COMPUTER_SCOPE_VIOLATION` when another window (another app's
    /// window or popup, another top-level of the same app, an invisible input-only
    /// window) is on top at the point, or the point is outside `xid`.
    pub fn ensure_on_top_at(&self, xid: u32, x: i32, y: i32) -> Result<()> {
        let stack = self.stacking()?;
        let inside = |b: &Bounds| x >= b.x && y >= b.y && x < b.x + b.width && y < b.y + b.height;
        let Some(at) = stack.iter().position(|s| s.xid == xid) else {
            return Err(ComputerError::new(
                ErrorCode::ElementNotFound,
                "the window is no longer mapped",
            ));
        };
        let own = stack[at].pid;
        match stack.iter().rposition(|s| {
            !(s.click_through && s.pid == Some(std::process::id())) && inside(&s.bounds)
        }) {
            Some(i) if i == at => Ok(()),
            Some(i)
                if i > at
                    && stack[i].popup
                    && own.is_some()
                    && stack[i].pid == own
                    && inside(&stack[at].bounds) =>
            {
                Ok(())
            }
            Some(i) => {
                let title = self.title_of(stack[i].xid).unwrap_or_default();
                Err(ComputerError::new(
                    ErrorCode::ScopeViolation,
                    format!(
                        "another window is on top at ({x}, {y}): {:?}{} ; pointer input there would reach it, not the bound window. Act on it by ref after observing it, or move it away",
                        deskpilot_core::sanitize::one_line(&title),
                        if stack[i].input_only {
                            " (an invisible input-only window)"
                        } else {
                            ""
                        }
                    ),
                ))
            }
            None => Err(ComputerError::new(
                ErrorCode::ScopeViolation,
                format!("({x}, {y}) is outside the window; it is not clamped"),
            )),
        }
    }

    /// Gives keyboard focus to the top-level `xid`: a `_NET_ACTIVE_WINDOW` request
    /// when a window manager supports it, else (or if the WM did not comply within
    /// [`ACTIVATE_TIMEOUT_MS`]) raise + `SetInputFocus`. Succeeds only once the X
    /// input focus is verified to be inside `xid`.
    ///
    /// Errors: `ElementNotFound` when `xid` does not exist; `ElementNotActionable`
    /// when it is not mapped and no WM can map it; `Timeout` when focus did not
    /// arrive; `InputUnavailable`/`Internal` on connection or X errors.
    pub fn activate(&self, xid: u32) -> Result<()> {
        let _serial = self.lock();
        let attrs = gone_is_none(
            self.conn
                .get_window_attributes(xid)
                .x11("GetWindowAttributes")?
                .reply(),
        )
        .x11("GetWindowAttributes")?
        .ok_or_else(|| {
            ComputerError::new(
                ErrorCode::ElementNotFound,
                format!("X window 0x{xid:x} does not exist (closed?)"),
            )
            .with_detail(serde_json::json!({ "xid": xid }))
        })?;
        let target = self.client_of(self.frame_of(xid)?.unwrap_or(xid))?;

        if self.wm_supports(self.atoms._NET_ACTIVE_WINDOW)? {
            let current = self.active_window()?.unwrap_or(0);
            let event = ClientMessageEvent::new(
                32,
                xid,
                self.atoms._NET_ACTIVE_WINDOW,
                [SOURCE_PAGER, x11rb::CURRENT_TIME, current, 0, 0],
            );
            self.conn
                .send_event(
                    false,
                    self.root,
                    EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                    event,
                )
                .x11("SendEvent _NET_ACTIVE_WINDOW")?;
            self.sync()?;
            if self.wait_for_focus(target)? {
                return Ok(());
            }
            tracing::debug!(
                xid,
                "window manager did not activate the window; setting input focus directly"
            );
        }

        let viewable = gone_is_none(
            self.conn
                .get_window_attributes(xid)
                .x11("GetWindowAttributes")?
                .reply(),
        )
        .x11("GetWindowAttributes")?
        .is_some_and(|a| a.map_state == MapState::VIEWABLE);
        if !viewable {
            let was = if attrs.map_state == MapState::VIEWABLE {
                "was"
            } else {
                "is"
            };
            return Err(ComputerError::new(
                ErrorCode::ElementNotActionable,
                format!(
                    "X window 0x{xid:x} {was} not mapped (minimized or hidden), so it cannot take keyboard focus"
                ),
            )
            .with_detail(serde_json::json!({ "xid": xid })));
        }
        if let Some(frame) = self.frame_of(xid)? {
            self.conn
                .configure_window(
                    frame,
                    &ConfigureWindowAux::new().stack_mode(StackMode::ABOVE),
                )
                .x11("ConfigureWindow")?;
        }
        self.conn
            .set_input_focus(InputFocus::PARENT, xid, x11rb::CURRENT_TIME)
            .x11("SetInputFocus")?;
        self.sync()?;
        if self.wait_for_focus(target)? {
            return Ok(());
        }
        Err(ComputerError::new(
            ErrorCode::Timeout,
            format!(
                "X window 0x{xid:x} did not take keyboard focus within {ACTIVATE_TIMEOUT_MS} ms"
            ),
        )
        .with_detail(serde_json::json!({ "xid": xid, "waited_ms": ACTIVATE_TIMEOUT_MS })))
    }

    /// Polls until the X input focus resolves to `client`, up to
    /// [`ACTIVATE_TIMEOUT_MS`]. Returns whether it did.
    fn wait_for_focus(&self, client: Window) -> Result<bool> {
        let deadline = Instant::now() + Duration::from_millis(ACTIVATE_TIMEOUT_MS);
        loop {
            if self.input_focus_client()? == Some(client) {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(FOCUS_POLL_MS));
        }
    }

    /// The X input focus resolved to a client top-level, if any.
    fn input_focus_client(&self) -> Result<Option<Window>> {
        let focus = self
            .conn
            .get_input_focus()
            .x11("GetInputFocus")?
            .reply()
            .x11("GetInputFocus")?
            .focus;
        let window = match focus {
            0 => return Ok(None), // None
            1 => {
                // PointerRoot: focus follows the pointer; the root child under it.
                let child = self
                    .conn
                    .query_pointer(self.root)
                    .x11("QueryPointer")?
                    .reply()
                    .x11("QueryPointer")?
                    .child;
                if child == 0 {
                    return Ok(None);
                }
                child
            }
            w => w,
        };
        match self.frame_of(window)? {
            Some(frame) => Ok(Some(self.client_of(frame)?)),
            None => Ok(None),
        }
    }

    /// `_NET_ACTIVE_WINDOW` when a live EWMH window manager sets it to a window.
    fn active_window(&self) -> Result<Option<Window>> {
        if self.wm_check_window()?.is_none() {
            return Ok(None);
        }
        let active = self
            .property(
                self.root,
                self.atoms._NET_ACTIVE_WINDOW,
                AtomEnum::WINDOW.into(),
                1,
            )?
            .and_then(|p| p.value32().and_then(|mut v| v.next()))
            .filter(|&w| w != 0 && w != self.root);
        match active {
            Some(w) => Ok(Some(self.client_of(self.frame_of(w)?.unwrap_or(w))?)),
            None => Ok(None),
        }
    }

    /// The EWMH window-manager check window, when a WM is running (the root's
    /// `_NET_SUPPORTING_WM_CHECK` names a window whose own property names itself).
    fn wm_check_window(&self) -> Result<Option<Window>> {
        let check = self.atoms._NET_SUPPORTING_WM_CHECK;
        let first = |w: Window| -> Result<Option<Window>> {
            Ok(self
                .property(w, check, AtomEnum::WINDOW.into(), 1)?
                .and_then(|p| p.value32().and_then(|mut v| v.next())))
        };
        match first(self.root)? {
            Some(w) if w != 0 && first(w)? == Some(w) => Ok(Some(w)),
            _ => Ok(None),
        }
    }

    /// True when a live window manager lists `atom` in `_NET_SUPPORTED`.
    fn wm_supports(&self, atom: Atom) -> Result<bool> {
        if self.wm_check_window()?.is_none() {
            return Ok(false);
        }
        let supported = self.property(
            self.root,
            self.atoms._NET_SUPPORTED,
            AtomEnum::ATOM.into(),
            4096,
        )?;
        Ok(supported
            .and_then(|p| p.value32().map(|mut v| v.any(|a| a == atom)))
            .unwrap_or(false))
    }

    /// The root child containing `window` (a WM frame, or the window itself without
    /// a WM); `None` for the root or a window that vanished.
    fn frame_of(&self, window: Window) -> Result<Option<Window>> {
        let mut current = window;
        // Bounded: X window trees are shallow; 64 levels is far beyond any real one.
        for _ in 0..64 {
            if current == self.root {
                return Ok(None);
            }
            let Some(tree) = gone_is_none(self.conn.query_tree(current).x11("QueryTree")?.reply())
                .x11("QueryTree")?
            else {
                return Ok(None);
            };
            if tree.parent == self.root || tree.parent == 0 {
                return Ok(Some(current));
            }
            current = tree.parent;
        }
        Ok(None)
    }

    /// The client window inside a root child: the first window with `WM_STATE`
    /// (breadth-first, [`CLIENT_SEARCH_DEPTH`] levels), else the root child itself
    /// (no window manager).
    fn client_of(&self, frame: Window) -> Result<Window> {
        let mut level = vec![frame];
        for _ in 0..=CLIENT_SEARCH_DEPTH {
            let mut next = Vec::new();
            for &w in &level {
                if self
                    .property(w, self.atoms.WM_STATE, AtomEnum::ANY.into(), 0)?
                    .is_some()
                {
                    return Ok(w);
                }
                if let Some(tree) = gone_is_none(self.conn.query_tree(w).x11("QueryTree")?.reply())
                    .x11("QueryTree")?
                {
                    next.extend(tree.children);
                }
            }
            level = next;
        }
        Ok(frame)
    }

    /// [`XInput::client_of`] of many root children at once: each level of every
    /// search is one round of pipelined requests (`WM_STATE` and `QueryTree` of
    /// every window of the level), so the rounds are as many as the deepest search,
    /// not one per window. Same answer, frame by frame, as `client_of`.
    fn clients_of(&self, frames: &[Window]) -> Result<Vec<Window>> {
        let mut out: Vec<Option<Window>> = vec![None; frames.len()];
        let mut levels: Vec<Vec<Window>> = frames.iter().map(|&f| vec![f]).collect();
        for _ in 0..=CLIENT_SEARCH_DEPTH {
            let mut asked = Vec::new();
            for (i, level) in levels.iter().enumerate() {
                if out[i].is_some() {
                    continue;
                }
                for &w in level {
                    let state = self
                        .conn
                        .get_property(false, w, self.atoms.WM_STATE, AtomEnum::ANY, 0, 0)
                        .x11("GetProperty")?;
                    let tree = self.conn.query_tree(w).x11("QueryTree")?;
                    asked.push((i, w, state, tree));
                }
            }
            if asked.is_empty() {
                break;
            }
            let mut next: Vec<Vec<Window>> = vec![Vec::new(); frames.len()];
            for (i, w, state, tree) in asked {
                let has_state = gone_is_none(state.reply())
                    .x11("GetProperty")?
                    .is_some_and(|p| p.type_ != u32::from(AtomEnum::NONE));
                let children = gone_is_none(tree.reply()).x11("QueryTree")?;
                if out[i].is_some() {
                    continue;
                }
                if has_state {
                    out[i] = Some(w);
                } else if let Some(t) = children {
                    next[i].extend(t.children);
                }
            }
            levels = next;
        }
        Ok(frames
            .iter()
            .zip(out)
            .map(|(&f, c)| c.unwrap_or(f))
            .collect())
    }

    /// [`XInput::describe`] of many client windows at once: geometry, origin and
    /// `_NET_WM_NAME` of all in one round of pipelined requests, the pids in one
    /// X-Resource request ([`XInput::pids_of`]), and `WM_NAME` for those without a
    /// `_NET_WM_NAME` in one more round.
    fn describe_many(&self, xids: &[Window]) -> Result<Vec<Option<TopLevel>>> {
        let mut asked = Vec::new();
        for &xid in xids {
            let geometry = self.conn.get_geometry(xid).x11("GetGeometry")?;
            let origin = self
                .conn
                .translate_coordinates(xid, self.root, 0, 0)
                .x11("TranslateCoordinates")?;
            let name = self
                .conn
                .get_property(
                    false,
                    xid,
                    self.atoms._NET_WM_NAME,
                    self.atoms.UTF8_STRING,
                    0,
                    TITLE_MAX_LONGS,
                )
                .x11("GetProperty")?;
            asked.push((geometry, origin, name));
        }
        let mut found = Vec::new();
        for (geometry, origin, name) in asked {
            let geometry = gone_is_none(geometry.reply()).x11("GetGeometry")?;
            let origin = gone_is_none(origin.reply()).x11("TranslateCoordinates")?;
            let name = gone_is_none(name.reply())
                .x11("GetProperty")?
                .filter(|p| p.type_ == self.atoms.UTF8_STRING)
                .map(|p| String::from_utf8_lossy(&p.value).into_owned());
            found.push(geometry.zip(origin).map(|(g, o)| (g, o, name)));
        }
        let pids = self.pids_of(xids)?;
        let mut out = Vec::with_capacity(xids.len());
        for ((&xid, f), pid) in xids.iter().zip(found).zip(pids) {
            out.push(match f {
                Some((geometry, origin, name)) => Some(TopLevel {
                    xid,
                    pid,
                    title: match name {
                        Some(n) => n,
                        None => self.title_of(xid)?,
                    },
                    bounds: Bounds::new(
                        i32::from(origin.dst_x),
                        i32::from(origin.dst_y),
                        i32::from(geometry.width),
                        i32::from(geometry.height),
                    ),
                }),
                None => None,
            });
        }
        Ok(out)
    }

    /// Pid, title and root-relative bounds of a client window; `None` if it vanished.
    fn describe(&self, xid: Window) -> Result<Option<TopLevel>> {
        let Some(geometry) = gone_is_none(self.conn.get_geometry(xid).x11("GetGeometry")?.reply())
            .x11("GetGeometry")?
        else {
            return Ok(None);
        };
        let Some(origin) = gone_is_none(
            self.conn
                .translate_coordinates(xid, self.root, 0, 0)
                .x11("TranslateCoordinates")?
                .reply(),
        )
        .x11("TranslateCoordinates")?
        else {
            return Ok(None);
        };
        Ok(Some(TopLevel {
            xid,
            pid: self.pid_of(xid)?,
            title: self.title_of(xid)?,
            bounds: Bounds::new(
                i32::from(origin.dst_x),
                i32::from(origin.dst_y),
                i32::from(geometry.width),
                i32::from(geometry.height),
            ),
        }))
    }

    /// The process owning `xid`: the X server's own word (X-Resource's client pid,
    /// from the connection's credentials) when it has the extension, else
    /// `_NET_WM_PID`, which the client sets itself and could set to any pid.
    fn pid_of(&self, xid: Window) -> Result<Option<u32>> {
        if self.has_res {
            let spec = ClientIdSpec {
                client: xid,
                mask: ClientIdMask::LOCAL_CLIENT_PID,
            };
            let reply = self
                .conn
                .res_query_client_ids(&[spec])
                .x11("XResQueryClientIds")?
                .reply();
            if let Some(reply) = gone_is_none(reply).x11("XResQueryClientIds")? {
                let pid = reply
                    .ids
                    .iter()
                    .find(|id| {
                        u32::from(id.spec.mask) & u32::from(ClientIdMask::LOCAL_CLIENT_PID) != 0
                    })
                    .and_then(|id| id.value.first().copied())
                    .filter(|&pid| pid != 0);
                if pid.is_some() {
                    return Ok(pid);
                }
            }
        }
        Ok(self
            .property(xid, self.atoms._NET_WM_PID, AtomEnum::CARDINAL.into(), 1)?
            .and_then(|p| p.value32().and_then(|mut v| v.next()))
            .filter(|&pid| pid != 0))
    }

    fn title_of(&self, xid: Window) -> Result<String> {
        if let Some(p) = self.property(
            xid,
            self.atoms._NET_WM_NAME,
            self.atoms.UTF8_STRING,
            TITLE_MAX_LONGS,
        )? {
            return Ok(String::from_utf8_lossy(&p.value).into_owned());
        }
        match self.property(
            xid,
            AtomEnum::WM_NAME.into(),
            AtomEnum::ANY.into(),
            TITLE_MAX_LONGS,
        )? {
            // STRING is Latin-1; COMPOUND_TEXT is decoded lossily (ASCII survives).
            Some(p) if p.type_ == u32::from(AtomEnum::STRING) => {
                Ok(p.value.iter().map(|&b| char::from(b)).collect())
            }
            Some(p) => Ok(String::from_utf8_lossy(&p.value).into_owned()),
            None => Ok(String::new()),
        }
    }

    /// A property's reply, or `None` when it is unset, of another type, or the window
    /// vanished. `long_length` is in 32-bit units.
    fn property(
        &self,
        window: Window,
        property: Atom,
        type_: Atom,
        long_length: u32,
    ) -> Result<Option<GetPropertyReply>> {
        let reply = self
            .conn
            .get_property(false, window, property, type_, 0, long_length)
            .x11("GetProperty")?
            .reply();
        Ok(gone_is_none(reply)
            .x11("GetProperty")?
            .filter(|p| p.type_ != u32::from(AtomEnum::NONE))
            .filter(|p| type_ == u32::from(AtomEnum::ANY) || p.type_ == type_))
    }
}

/// Turns `BadWindow` (the window closed meanwhile) into `Ok(None)`.
fn gone_is_none<T>(reply: Result<T, ReplyError>) -> Result<Option<T>, ReplyError> {
    match reply {
        Ok(v) => Ok(Some(v)),
        Err(ReplyError::X11Error(e)) if e.error_kind == ErrorKind::Window => Ok(None),
        Err(e) => Err(e),
    }
}

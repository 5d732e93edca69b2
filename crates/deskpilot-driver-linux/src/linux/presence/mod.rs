//! The agent's presence on a person's own desktop (docs/ARCHITECTURE.md §7.19): what
//! the person sees while an agent works there — a drawn agent cursor that never
//! moves the real pointer, a thin frame around the bound window, a small indicator
//! with a Stop button, and (teach mode) a bubble with an explanation and Next / Exit
//! buttons.
//!
//! Everything is drawn by windows of a connection of its own, served by a thread of
//! its own: [`Presence`]'s methods only queue a command on a bounded channel
//! (`try_send`; a full queue drops the command), so drawing can never delay or block
//! the caller. The thread animates and answers Expose and ButtonPress events by
//! polling (`poll_for_event` and a short wait on the channel); it ends, destroying
//! its windows, when the [`Presence`] is dropped or the display goes away.
//!
//! Every window is an override-redirect child of the root with `WM_CLASS` instance
//! `deskpilot-cursor` / `deskpilot-frame` / `deskpilot-indicator` /
//! `deskpilot-teach` and class [`OVERLAY_CLASS`], a readable `WM_NAME` and this
//! process's `_NET_WM_PID`, raised on top (`ConfigureWindow` stack mode `Above`)
//! whenever it is shown or moved. None takes focus or grabs anything, and nothing
//! here moves the real pointer (no `WarpPointer`, no XTest). The cursor and the
//! frame are click-through: their input shape (XShape `SK::INPUT`) is empty, so
//! pointer input goes to the window below them. The indicator and the bubble take
//! clicks on their buttons.
//!
//! Coordinates are root-window (screen) pixels throughout.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use deskpilot_core::Bounds;
use x11rb::connection::{Connection as _, RequestConnection as _};
use x11rb::errors::ConnectionError;
use x11rb::protocol::Event;
use x11rb::protocol::shape::{self, ConnectionExt as _, SK, SO};
use x11rb::protocol::xinput::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ChangeGCAux, ClipOrdering, ConfigureWindowAux, ConnectionExt as _, CreateGCAux,
    CreateWindowAux, EventMask, Font, Gcontext, MapState, PropMode, Rectangle, StackMode, Window,
    WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

mod layout;

pub use crate::presence_types::*;
use crate::presence_types::{stop_rect, teach_rects};
use layout::*;

/// Commands queued before the thread takes them; more are dropped.
const QUEUE: usize = 64;

/// How often the thread wakes while animating, and while idle, ms.
const TICK_MS: u64 = 20;
const IDLE_MS: u64 = 30;

/// Left padding of the indicator's text, and the agent-coloured stripe before it,
/// pixels; space between the text and the Stop button.
const INDICATOR_PAD: i32 = 12;
const INDICATOR_STRIPE: i32 = 4;
const INDICATOR_GAP: i32 = 12;

/// What the caller asks of the thread.
enum Cmd {
    Frame(Option<Bounds>),
    Indicator(Option<String>),
    Aim(i32, i32),
    Press,
    Clear,
    Teach {
        target: Bounds,
        text: String,
        reply: SyncSender<TeachAnswer>,
    },
    EndTeach,
}

/// The agent's presence on one X display: the windows and the thread that draws
/// them. `Send + Sync`; every method but [`Presence::open`] returns at once.
/// Dropping it ends the thread and removes the windows.
pub struct Presence {
    commands: SyncSender<Cmd>,
    _thread: JoinHandle<()>,
}

impl Presence {
    /// Connects to X display `display` (`":91"`) on a connection of its own, creates
    /// the (unmapped) windows and starts their thread. `on_stop` is called on that
    /// thread each time the indicator's Stop button is clicked.
    ///
    /// Errors: a sentence — no display named (a Wayland-only session says so), the
    /// display cannot be reached, or it lacks the SHAPE extension a click-through
    /// overlay needs.
    pub fn open(display: &str, on_stop: Box<dyn Fn() + Send>) -> Result<Presence, String> {
        let display = display.trim();
        if display.is_empty() {
            return Err(match std::env::var("WAYLAND_DISPLAY") {
                Ok(w) if !w.is_empty() => format!(
                    "no agent presence: this is a Wayland-only session (WAYLAND_DISPLAY={w}) and the overlay needs X11"
                ),
                _ => "no agent presence: no X display is named (DISPLAY is empty)".into(),
            });
        }
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            format!("no agent presence on the X display {display}: {what}: {e}")
        };
        let (conn, screen) =
            RustConnection::connect(Some(display)).map_err(|e| failed("cannot connect", &e))?;
        let server = Server::new(conn, screen, on_stop).map_err(|e| failed("setup", &e))?;
        let (commands, rx) = sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("presence".into())
            .spawn(move || server.run(&rx))
            .map_err(|e| failed("thread", &e))?;
        Ok(Presence {
            commands,
            _thread: thread,
        })
    }

    /// Queues a command; a full queue or a finished thread drops it.
    fn send(&self, cmd: Cmd) {
        match self.commands.try_send(cmd) {
            Ok(()) => {}
            Err(TrySendError::Full(Cmd::Teach { reply, .. }))
            | Err(TrySendError::Disconnected(Cmd::Teach { reply, .. })) => {
                let _ = reply.try_send(TeachAnswer::Closed);
            }
            Err(_) => tracing::debug!("agent presence: command dropped"),
        }
    }

    /// Shows a [`FRAME_WIDTH`]-px frame just outside `bounds` (a window's area,
    /// root pixels), so it never covers the window's content; `None` hides it.
    /// The frame is click-through.
    pub fn frame(&self, bounds: Option<Bounds>) {
        self.send(Cmd::Frame(bounds));
    }

    /// Shows the indicator at the screen's top-right corner: one line of status
    /// `text` (ASCII; what the font lacks shows as `?`; cut with `...` past
    /// [`INDICATOR_MAX_WIDTH`]) and a Stop button ([`stop_button_at`]) whose click
    /// calls `on_stop`. `None` hides it.
    pub fn indicator(&self, text: Option<String>) {
        self.send(Cmd::Indicator(text));
    }

    /// Shows the drawn cursor and glides it (over [`GLIDE_MS`], in a few steps) from
    /// where it was to root point (`x`, `y`), its tip on the point. The real
    /// pointer does not move. It hides [`CURSOR_HIDE_MS`] after it arrives unless
    /// aimed or pressed again.
    pub fn aim(&self, x: i32, y: i32) {
        self.send(Cmd::Aim(x, y));
    }

    /// Shows a press at the cursor's point: its colour flashes for
    /// [`PRESS_FLASH_MS`]. It hides [`CURSOR_HIDE_MS`] after this. Nothing before
    /// the first [`Presence::aim`].
    pub fn press(&self) {
        self.send(Cmd::Press);
    }

    /// Hides everything (the grant ended): cursor, frame, indicator and teach
    /// bubble; a pending teach answers [`TeachAnswer::Closed`].
    pub fn clear(&self) {
        self.send(Cmd::Clear);
    }

    /// Shows the teach bubble next to `target` (root pixels): below it, or above
    /// when there is no room below (beside it when neither fits), clamped onto the
    /// screen and never over the target, with `text` wrapped to [`TEACH_COLUMNS`]
    /// columns over at most [`TEACH_MAX_LINES`] lines (a `\n` breaks a line) and the
    /// buttons Next and Exit ([`teach_buttons_at`]). The first click on one answers
    /// on the receiver and hides the bubble; a bubble hidden otherwise (or one this
    /// call could not queue) answers [`TeachAnswer::Closed`]. A new teach replaces
    /// a pending one, which answers `Closed`.
    pub fn teach(&self, target: Bounds, text: &str) -> Receiver<TeachAnswer> {
        let (reply, answer) = sync_channel(1);
        self.send(Cmd::Teach {
            target,
            text: text.to_owned(),
            reply,
        });
        answer
    }

    /// Hides the teach bubble; a pending teach answers [`TeachAnswer::Closed`].
    pub fn end_teach(&self) {
        self.send(Cmd::EndTeach);
    }
}

/// Pixel values of the colours drawn.
struct Colours {
    outline: u32,
    agent: u32,
    flash: u32,
    panel: u32,
    white: u32,
    stop: u32,
    bubble: u32,
    ink: u32,
    next: u32,
    exit: u32,
}

/// The core font's metrics: cell width, ascent, descent, Latin-1 coverage.
struct Metrics {
    width: i32,
    ascent: i32,
    descent: i32,
    latin1: bool,
}

impl Metrics {
    fn line(&self) -> i32 {
        self.ascent + self.descent
    }
}

/// A root point, pixels.
type Point = (i32, i32);

/// A glide of the cursor: from, to, started.
type Glide = (Point, Point, Instant);

/// The cursor's animation state.
#[derive(Default)]
struct Cursor {
    /// Where its tip is drawn now.
    at: Option<(i32, i32)>,
    /// A glide in progress.
    glide: Option<Glide>,
    shown: bool,
    flash_until: Option<Instant>,
    hide_at: Option<Instant>,
}

/// A shown teach bubble.
struct Teach {
    reply: SyncSender<TeachAnswer>,
    lines: Vec<Vec<u8>>,
    /// When the bubble was shown: its buttons take no click for [`TEACH_ARMING_MS`].
    shown: Instant,
}

/// A teach bubble ignores clicks this long after it appears, ms: a click meant for
/// what was under it, or a program clicking the moment it maps, is no answer.
const TEACH_ARMING_MS: u64 = 500;

/// Selects XI 2.1 raw events `mask` on `root` for every master device, when the
/// server has XI 2.1 (raw events reach every client that selected them whatever
/// grab is active); else nothing, and says so in the log.
pub(crate) fn select_raw(conn: &RustConnection, root: Window, mask: xinput::XIEventMask) {
    let ok = conn
        .xinput_xi_query_version(2, 2)
        .ok()
        .and_then(|c| c.reply().ok())
        .is_some_and(|v| (v.major_version, v.minor_version) >= (2, 1));
    if !ok {
        tracing::info!(
            "no XInput 2.1 on this display: a grab another client holds blocks the overlay and the hotkey"
        );
        return;
    }
    let sel = [xinput::EventMask {
        deviceid: xinput::Device::ALL_MASTER.into(),
        mask: vec![mask],
    }];
    let r = match conn.xinput_xi_select_events(root, &sel) {
        Ok(c) => c.check().map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = r {
        tracing::info!(error = %e, "XInput raw events not selected");
    }
}

/// The thread's side: the connection, the windows and what they show.
struct Server {
    conn: RustConnection,
    root: Window,
    screen: (i32, i32),
    gc: Gcontext,
    font: Option<Font>,
    metrics: Metrics,
    colours: Colours,
    cursor_win: Window,
    frame_wins: [Window; 4],
    indicator_win: Window,
    teach_win: Window,
    cursor: Cursor,
    indicator: Option<(Vec<u8>, (i32, i32))>,
    teach: Option<Teach>,
    teach_size: (i32, i32),
    on_stop: Box<dyn Fn() + Send>,
    /// The server time of the last click taken: one click arrives twice (the raw
    /// event and the window's own, with the same time), and counts once.
    last_click: Option<u32>,
    /// The bound window the frame follows between the host's calls: its X
    /// top-level (the managed client whose root rectangle was the frame's bounds),
    /// the rectangle the frame is drawn at now, and when it was last measured.
    followed: Option<Followed>,
    /// `_NET_CLIENT_LIST`: the managed top-levels, where the bound one is looked for.
    client_list: Atom,
}

/// The window the frame follows ([`Server::followed`]).
#[derive(Debug, Clone, Copy)]
struct Followed {
    xid: Window,
    at: Bounds,
    measured: Instant,
}

/// How often the frame re-measures the window it follows between the host's
/// calls: 200 ms, so a window made fullscreen, moved, resized, minimised or sent
/// to another workspace is outlined where it is within a fifth of a second.
pub const FOLLOW_MS: u64 = 200;

type Conn<T = ()> = Result<T, ConnectionError>;

impl Server {
    /// Creates the windows (unmapped), the GC and the font.
    fn new(
        conn: RustConnection,
        screen_num: usize,
        on_stop: Box<dyn Fn() + Send>,
    ) -> Result<Server, String> {
        let e = |what: &str, err: &dyn std::fmt::Display| format!("{what}: {err}");
        if conn
            .extension_information(shape::X11_EXTENSION_NAME)
            .map_err(|x| e("QueryExtension SHAPE", &x))?
            .is_none()
        {
            return Err(
                "the display has no SHAPE extension, which a click-through overlay needs".into(),
            );
        }
        let screen = conn
            .setup()
            .roots
            .get(screen_num)
            .ok_or_else(|| format!("no screen {screen_num}"))?
            .clone();
        let root = screen.root;
        let alloc = |rgb: u32, fallback: u32| -> u32 {
            let c = |shift: u32| ((rgb >> shift) & 0xff) as u16 * 257;
            conn.alloc_color(screen.default_colormap, c(16), c(8), c(0))
                .ok()
                .and_then(|cookie| cookie.reply().ok())
                .map_or(fallback, |r| r.pixel)
        };
        let (black, white) = (screen.black_pixel, screen.white_pixel);
        let colours = Colours {
            outline: alloc(0x1a1a1a, black),
            agent: alloc(0xff2e88, white),
            flash: alloc(0xffd400, white),
            panel: alloc(0x202124, black),
            white: alloc(0xffffff, white),
            stop: alloc(0xd93025, black),
            bubble: alloc(0xfffbe6, white),
            ink: alloc(0x202124, black),
            next: alloc(0x1a73e8, black),
            exit: alloc(0x5f6368, black),
        };
        let client_list = conn
            .intern_atom(false, b"_NET_CLIENT_LIST")
            .map_err(|x| e("InternAtom", &x))?
            .reply()
            .map_err(|x| e("InternAtom", &x))?
            .atom;
        let pid_atom = conn
            .intern_atom(false, b"_NET_WM_PID")
            .map_err(|x| e("InternAtom", &x))?
            .reply()
            .map_err(|x| e("InternAtom", &x))?
            .atom;
        let font = conn.generate_id().map_err(|x| e("ids", &x))?;
        let font = conn
            .open_font(font, b"fixed")
            .map_err(|x| e("OpenFont", &x))?
            .check()
            .ok()
            .map(|()| font);
        let metrics = font
            .and_then(|f| conn.query_font(f).ok()?.reply().ok())
            .map(|q| Metrics {
                width: i32::from(q.max_bounds.character_width).max(1),
                ascent: i32::from(q.font_ascent),
                descent: i32::from(q.font_descent),
                latin1: q.min_byte1 == 0 && q.max_char_or_byte2 >= 0xff,
            })
            .unwrap_or(Metrics {
                width: 6,
                ascent: 11,
                descent: 2,
                latin1: false,
            });
        if font.is_none() {
            tracing::warn!("agent presence: the X font \"fixed\" is missing; no text is drawn");
        }
        let gc = conn.generate_id().map_err(|x| e("ids", &x))?;
        let mut gc_aux = CreateGCAux::new()
            .foreground(colours.white)
            .background(colours.panel)
            .graphics_exposures(0);
        if let Some(f) = font {
            gc_aux = gc_aux.font(f);
        }
        conn.create_gc(gc, root, &gc_aux)
            .map_err(|x| e("CreateGC", &x))?;

        let make =
            |instance: &str, title: &str, bg: u32, mask: EventMask| -> Result<Window, String> {
                let w = conn.generate_id().map_err(|x| e("ids", &x))?;
                let aux = CreateWindowAux::new()
                    .background_pixel(bg)
                    .border_pixel(bg)
                    .override_redirect(1)
                    .event_mask(mask);
                conn.create_window(
                    screen.root_depth,
                    w,
                    root,
                    0,
                    0,
                    1,
                    1,
                    0,
                    WindowClass::INPUT_OUTPUT,
                    screen.root_visual,
                    &aux,
                )
                .map_err(|x| e("CreateWindow", &x))?;
                let class = format!("{instance}\0{OVERLAY_CLASS}\0");
                conn.change_property8(
                    PropMode::REPLACE,
                    w,
                    AtomEnum::WM_CLASS,
                    AtomEnum::STRING,
                    class.as_bytes(),
                )
                .map_err(|x| e("ChangeProperty", &x))?;
                conn.change_property8(
                    PropMode::REPLACE,
                    w,
                    AtomEnum::WM_NAME,
                    AtomEnum::STRING,
                    title.as_bytes(),
                )
                .map_err(|x| e("ChangeProperty", &x))?;
                conn.change_property32(
                    PropMode::REPLACE,
                    w,
                    pid_atom,
                    AtomEnum::CARDINAL,
                    &[std::process::id()],
                )
                .map_err(|x| e("ChangeProperty", &x))?;
                Ok(w)
            };
        let click_through = |w: Window| -> Result<(), String> {
            conn.shape_rectangles(SO::SET, SK::INPUT, ClipOrdering::UNSORTED, w, 0, 0, &[])
                .map_err(|x| e("ShapeRectangles", &x))?;
            Ok(())
        };
        let cursor_win = make(
            "deskpilot-cursor",
            "deskpilot agent cursor",
            colours.outline,
            EventMask::EXPOSURE,
        )?;
        conn.configure_window(
            cursor_win,
            &ConfigureWindowAux::new()
                .width(u32::from(ARROW_WIDTH))
                .height(u32::from(ARROW_HEIGHT)),
        )
        .map_err(|x| e("ConfigureWindow", &x))?;
        conn.shape_rectangles(
            SO::SET,
            SK::BOUNDING,
            ClipOrdering::UNSORTED,
            cursor_win,
            0,
            0,
            &arrow_runs(|c| c != b' '),
        )
        .map_err(|x| e("ShapeRectangles", &x))?;
        click_through(cursor_win)?;
        let mut frame_wins = [0; 4];
        for (w, side) in frame_wins
            .iter_mut()
            .zip(["top", "bottom", "left", "right"])
        {
            *w = make(
                "deskpilot-frame",
                &format!("deskpilot agent frame ({side})"),
                colours.agent,
                EventMask::NO_EVENT,
            )?;
            click_through(*w)?;
        }
        let indicator_win = make(
            "deskpilot-indicator",
            "deskpilot agent indicator",
            colours.panel,
            EventMask::EXPOSURE | EventMask::BUTTON_PRESS,
        )?;
        let teach_win = make(
            "deskpilot-teach",
            "deskpilot teach bubble",
            colours.bubble,
            EventMask::EXPOSURE | EventMask::BUTTON_PRESS,
        )?;
        // The root's size changes (RandR) arrive as ConfigureNotify.
        conn.change_window_attributes(
            root,
            &x11rb::protocol::xproto::ChangeWindowAttributesAux::new()
                .event_mask(EventMask::STRUCTURE_NOTIFY),
        )
        .map_err(|x| e("ChangeWindowAttributes", &x))?;
        // Raw button presses reach the overlay even while another client holds the
        // pointer grabbed (an open menu): XI 2.1 sends raw events regardless of
        // grabs. Without XI 2.1 only the windows' own ButtonPress events count.
        select_raw(&conn, root, xinput::XIEventMask::RAW_BUTTON_PRESS);
        // One round trip: every request above reached the server.
        conn.get_input_focus()
            .map_err(|x| e("GetInputFocus", &x))?
            .reply()
            .map_err(|x| e("GetInputFocus", &x))?;
        Ok(Server {
            screen: (
                i32::from(screen.width_in_pixels),
                i32::from(screen.height_in_pixels),
            ),
            conn,
            root,
            gc,
            font,
            metrics,
            colours,
            cursor_win,
            frame_wins,
            indicator_win,
            teach_win,
            cursor: Cursor::default(),
            indicator: None,
            teach: None,
            teach_size: (1, 1),
            on_stop,
            last_click: None,
            followed: None,
            client_list,
        })
    }

    /// Serves commands and events until the presence is dropped or the display
    /// goes away; then answers a pending teach and removes the windows.
    fn run(mut self, rx: &Receiver<Cmd>) {
        if let Err(e) = self.serve(rx) {
            tracing::debug!(error = %e, "agent presence: the X connection ended");
        }
        self.answer(TeachAnswer::Closed);
        let _ = self.conn.destroy_window(self.cursor_win);
        for w in self.frame_wins {
            let _ = self.conn.destroy_window(w);
        }
        let _ = self.conn.destroy_window(self.indicator_win);
        let _ = self.conn.destroy_window(self.teach_win);
        if let Some(f) = self.font {
            let _ = self.conn.close_font(f);
        }
        let _ = self.conn.flush();
    }

    fn serve(&mut self, rx: &Receiver<Cmd>) -> Conn {
        loop {
            let busy = self.cursor.glide.is_some() || self.cursor.flash_until.is_some();
            let wait = Duration::from_millis(if busy { TICK_MS } else { IDLE_MS });
            match rx.recv_timeout(wait) {
                Ok(cmd) => {
                    self.apply(cmd)?;
                    while let Ok(cmd) = rx.try_recv() {
                        self.apply(cmd)?;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            while let Some(ev) = self.conn.poll_for_event()? {
                self.event(ev)?;
            }
            self.tick(Instant::now())?;
            self.conn.flush()?;
        }
    }

    fn raise(&self, w: Window, at: Option<Bounds>) -> Conn {
        let mut aux = ConfigureWindowAux::new().stack_mode(StackMode::ABOVE);
        if let Some(b) = at {
            aux = aux
                .x(b.x)
                .y(b.y)
                .width(u32::from(u16c(b.width)))
                .height(u32::from(u16c(b.height)));
        }
        self.conn.configure_window(w, &aux)?;
        Ok(())
    }

    fn apply(&mut self, cmd: Cmd) -> Conn {
        let now = Instant::now();
        match cmd {
            Cmd::Frame(Some(b)) => {
                self.draw_frame(Some(b))?;
                self.followed = self.client_at(b)?.map(|xid| Followed {
                    xid,
                    at: b,
                    measured: now,
                });
            }
            Cmd::Frame(None) => {
                self.followed = None;
                self.draw_frame(None)?;
            }
            Cmd::Indicator(Some(text)) => {
                let m = &self.metrics;
                let room = INDICATOR_MAX_WIDTH
                    - INDICATOR_PAD
                    - INDICATOR_GAP
                    - STOP_BUTTON_WIDTH
                    - BUTTON_INSET;
                let cols = usize::try_from(room / m.width).unwrap_or(0);
                let line: String = text
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                let bytes = font_bytes(&ellipsize(line.trim(), cols, false), m.latin1);
                let width = INDICATOR_PAD
                    + bytes.len() as i32 * m.width
                    + INDICATOR_GAP
                    + STOP_BUTTON_WIDTH
                    + BUTTON_INSET;
                let height = (m.line() + 12).max(24);
                let b = Bounds::new(
                    self.screen.0 - width - INDICATOR_MARGIN,
                    INDICATOR_MARGIN,
                    width,
                    height,
                );
                self.indicator = Some((bytes, (width, height)));
                self.raise(self.indicator_win, Some(b))?;
                self.conn.map_window(self.indicator_win)?;
                self.draw_indicator()?;
            }
            Cmd::Indicator(None) => {
                self.indicator = None;
                self.conn.unmap_window(self.indicator_win)?;
            }
            Cmd::Aim(x, y) => {
                let from = self.cursor.at.unwrap_or((x, y));
                self.cursor.glide = Some((from, (x, y), now));
                self.cursor.hide_at = Some(
                    now + Duration::from_millis(GLIDE_MS) + Duration::from_millis(CURSOR_HIDE_MS),
                );
                self.move_cursor(from)?;
            }
            Cmd::Press => {
                if let Some(at) = self.cursor.at {
                    self.cursor.flash_until = Some(now + Duration::from_millis(PRESS_FLASH_MS));
                    let hide = now + Duration::from_millis(CURSOR_HIDE_MS);
                    self.cursor.hide_at = Some(self.cursor.hide_at.map_or(hide, |h| h.max(hide)));
                    self.move_cursor(at)?;
                    self.draw_cursor()?;
                }
            }
            Cmd::Clear => {
                self.cursor.glide = None;
                self.cursor.flash_until = None;
                self.cursor.hide_at = None;
                self.cursor.shown = false;
                self.indicator = None;
                self.answer(TeachAnswer::Closed);
                self.conn.unmap_window(self.cursor_win)?;
                for w in self.frame_wins {
                    self.conn.unmap_window(w)?;
                }
                self.conn.unmap_window(self.indicator_win)?;
                self.conn.unmap_window(self.teach_win)?;
            }
            Cmd::Teach {
                target,
                text,
                reply,
            } => {
                self.answer(TeachAnswer::Closed);
                let m = &self.metrics;
                let lines: Vec<Vec<u8>> = wrap(&text, TEACH_COLUMNS, TEACH_MAX_LINES)
                    .iter()
                    .map(|l| font_bytes(l, m.latin1))
                    .collect();
                let widest = lines.iter().map(Vec::len).max().unwrap_or(0) as i32;
                let width = (2 * TEACH_PAD + widest * m.width)
                    .max(2 * TEACH_PAD + 2 * TEACH_BUTTON_WIDTH + TEACH_BUTTON_GAP);
                let height = TEACH_PAD
                    + lines.len() as i32 * m.line()
                    + TEACH_PAD
                    + TEACH_BUTTON_HEIGHT
                    + TEACH_PAD;
                let (x, y) = place_bubble(target, (width, height), self.screen);
                self.teach = Some(Teach {
                    reply,
                    lines,
                    shown: Instant::now(),
                });
                self.teach_size = (width, height);
                self.raise(self.teach_win, Some(Bounds::new(x, y, width, height)))?;
                self.conn.map_window(self.teach_win)?;
                self.draw_teach()?;
            }
            Cmd::EndTeach => self.answer(TeachAnswer::Closed),
        }
        Ok(())
    }

    /// Answers a pending teach (if any) and hides the bubble.
    fn answer(&mut self, answer: TeachAnswer) {
        if let Some(t) = self.teach.take() {
            let _ = t.reply.try_send(answer);
            let _ = self.conn.unmap_window(self.teach_win);
        }
    }

    /// Puts the cursor's tip at `at`, shown and on top.
    fn move_cursor(&mut self, at: (i32, i32)) -> Conn {
        self.cursor.at = Some(at);
        let aux = ConfigureWindowAux::new()
            .x(at.0)
            .y(at.1)
            .stack_mode(StackMode::ABOVE);
        self.conn.configure_window(self.cursor_win, &aux)?;
        if !self.cursor.shown {
            self.cursor.shown = true;
            self.conn.map_window(self.cursor_win)?;
        }
        Ok(())
    }

    /// Draws the frame around `b` (device pixels), or hides it.
    fn draw_frame(&self, b: Option<Bounds>) -> Conn {
        match b {
            Some(b) => {
                for (&w, r) in self.frame_wins.iter().zip(frame_rects(b, self.screen)) {
                    self.raise(w, Some(r))?;
                    self.conn.map_window(w)?;
                }
            }
            None => {
                for w in self.frame_wins {
                    self.conn.unmap_window(w)?;
                }
            }
        }
        Ok(())
    }

    /// Where top-level `xid` is on the root now, when it is viewable; `None` when
    /// it is unmapped (minimised, on another workspace, hidden) or gone.
    fn measure(&self, xid: Window) -> Conn<Option<Bounds>> {
        let attrs = self.conn.get_window_attributes(xid)?;
        let geom = self.conn.get_geometry(xid)?;
        let at = self.conn.translate_coordinates(xid, self.root, 0, 0)?;
        let (Ok(attrs), Ok(geom), Ok(at)) = (attrs.reply(), geom.reply(), at.reply()) else {
            return Ok(None);
        };
        if attrs.map_state != MapState::VIEWABLE {
            return Ok(None);
        }
        Ok(Some(Bounds::new(
            i32::from(at.dst_x),
            i32::from(at.dst_y),
            i32::from(geom.width),
            i32::from(geom.height),
        )))
    }

    /// The managed top-level (`_NET_CLIENT_LIST`) whose root rectangle is `b`, the
    /// bound window the host measured; `None` when none is (a window manager
    /// without the list: the frame then stays where the host drew it).
    fn client_at(&self, b: Bounds) -> Conn<Option<Window>> {
        let Ok(list) = self
            .conn
            .get_property(
                false,
                self.root,
                self.client_list,
                AtomEnum::WINDOW,
                0,
                4096,
            )?
            .reply()
        else {
            return Ok(None);
        };
        let Some(clients) = list.value32() else {
            return Ok(None);
        };
        for xid in clients.collect::<Vec<_>>() {
            if self.measure(xid)? == Some(b) {
                return Ok(Some(xid));
            }
        }
        Ok(None)
    }

    /// Every [`FOLLOW_MS`], the window the frame follows is measured again: the
    /// frame moves with it, and goes when it is no longer viewable.
    fn follow(&mut self, now: Instant) -> Conn {
        let Some(f) = self.followed else {
            return Ok(());
        };
        if now.duration_since(f.measured) < Duration::from_millis(FOLLOW_MS) {
            return Ok(());
        }
        match self.measure(f.xid)? {
            Some(at) => {
                if at != f.at {
                    self.draw_frame(Some(at))?;
                }
                self.followed = Some(Followed {
                    xid: f.xid,
                    at,
                    measured: now,
                });
            }
            None => {
                self.draw_frame(None)?;
                self.followed = None;
            }
        }
        Ok(())
    }

    /// Advances the glide, ends a flash, hides an idle cursor, follows the bound
    /// window.
    fn tick(&mut self, now: Instant) -> Conn {
        self.follow(now)?;
        if let Some((from, to, start)) = self.cursor.glide {
            let t = now.duration_since(start).as_secs_f64() / (GLIDE_MS as f64 / 1000.0);
            let at = if t >= 1.0 {
                self.cursor.glide = None;
                to
            } else {
                // Ease out: fast at first, settling on the point.
                let k = 1.0 - (1.0 - t) * (1.0 - t);
                let lerp = |a: i32, b: i32| a + (f64::from(b - a) * k).round() as i32;
                (lerp(from.0, to.0), lerp(from.1, to.1))
            };
            if Some(at) != self.cursor.at || !self.cursor.shown {
                self.move_cursor(at)?;
            }
        }
        if self.cursor.flash_until.is_some_and(|f| now >= f) {
            self.cursor.flash_until = None;
            self.draw_cursor()?;
        }
        if self.cursor.glide.is_none() && self.cursor.hide_at.is_some_and(|h| now >= h) {
            self.cursor.hide_at = None;
            self.cursor.flash_until = None;
            self.cursor.shown = false;
            self.conn.unmap_window(self.cursor_win)?;
        }
        Ok(())
    }

    fn event(&mut self, ev: Event) -> Conn {
        match ev {
            Event::Expose(e) if e.count == 0 => {
                if e.window == self.cursor_win {
                    self.draw_cursor()?;
                } else if e.window == self.indicator_win {
                    self.draw_indicator()?;
                } else if e.window == self.teach_win {
                    self.draw_teach()?;
                }
            }
            // A click another client sent (`XSendEvent`: the event's high bit) is
            // no person's: only the server's own button events count.
            Event::ButtonPress(b) if b.response_type & 0x80 != 0 => {
                tracing::debug!("agent presence: a synthetic click was ignored");
            }
            Event::ButtonPress(b) if (1..=3).contains(&b.detail) => {
                self.click(b.event, i32::from(b.event_x), i32::from(b.event_y), b.time);
            }
            // A real (or XTest) button press anywhere, grabs or not: where the
            // pointer is now says whether it was on a button of ours.
            Event::XinputRawButtonPress(r) if (1..=3).contains(&r.detail) => {
                let p = self.conn.query_pointer(self.root)?.reply();
                if let Ok(p) = p
                    && (p.child == self.indicator_win || p.child == self.teach_win)
                    && let Ok(Ok(t)) = self
                        .conn
                        .translate_coordinates(self.root, p.child, p.root_x, p.root_y)
                        .map(|c| c.reply())
                {
                    self.click(p.child, i32::from(t.dst_x), i32::from(t.dst_y), r.time);
                }
            }
            Event::ConfigureNotify(c) if c.window == self.root => {
                self.screen = (i32::from(c.width), i32::from(c.height));
            }
            Event::Error(e) => tracing::debug!(error = ?e, "agent presence: X error"),
            _ => {}
        }
        Ok(())
    }

    /// A person's click at window pixels (`x`, `y`) of `win`: the indicator's Stop
    /// calls `on_stop`; the bubble's Next or Exit answers, once armed. One click
    /// (seen twice, raw and core, with one server time) counts once.
    fn click(&mut self, win: Window, x: i32, y: i32, time: u32) {
        if self.last_click == Some(time) {
            return;
        }
        if win == self.indicator_win
            && let Some((_, (w, h))) = self.indicator
            && contains(&stop_rect(w, h), x, y)
        {
            self.last_click = Some(time);
            let on_stop = &self.on_stop;
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(on_stop)).is_err() {
                tracing::warn!("agent presence: the Stop callback panicked");
            }
        } else if win == self.teach_win
            && self
                .teach
                .as_ref()
                .is_some_and(|t| t.shown.elapsed() >= Duration::from_millis(TEACH_ARMING_MS))
        {
            let (next, exit) = teach_rects(self.teach_size.0, self.teach_size.1);
            if contains(&next, x, y) {
                self.last_click = Some(time);
                self.answer(TeachAnswer::Next);
            } else if contains(&exit, x, y) {
                self.last_click = Some(time);
                self.answer(TeachAnswer::Exit);
            }
        }
    }

    fn colour(&self, fg: u32, bg: u32) -> Conn {
        self.conn
            .change_gc(self.gc, &ChangeGCAux::new().foreground(fg).background(bg))?;
        Ok(())
    }

    fn fill(&self, w: Window, fg: u32, rects: &[Rectangle]) -> Conn {
        self.colour(fg, fg)?;
        self.conn.poly_fill_rectangle(w, self.gc, rects)?;
        Ok(())
    }

    /// Text with its baseline at `y`, on `bg`.
    fn text(&self, w: Window, x: i32, y: i32, bytes: &[u8], fg: u32, bg: u32) -> Conn {
        if self.font.is_none() || bytes.is_empty() {
            return Ok(());
        }
        self.colour(fg, bg)?;
        // ImageText8 takes at most 255 bytes.
        let bytes = &bytes[..bytes.len().min(255)];
        self.conn.image_text8(w, self.gc, i16c(x), i16c(y), bytes)?;
        Ok(())
    }

    /// A button: filled, a light inner border, its label centred.
    fn button(&self, w: Window, r: Bounds, label: &[u8], fill: u32) -> Conn {
        let m = &self.metrics;
        self.fill(w, fill, &[rect(r)])?;
        self.colour(self.colours.white, fill)?;
        self.conn.poly_rectangle(
            w,
            self.gc,
            &[rect(Bounds::new(
                r.x + 1,
                r.y + 1,
                r.width - 3,
                r.height - 3,
            ))],
        )?;
        let tx = r.x + (r.width - label.len() as i32 * m.width) / 2;
        let ty = r.y + (r.height - m.line()) / 2 + m.ascent;
        self.text(w, tx, ty, label, self.colours.white, fill)
    }

    fn draw_cursor(&self) -> Conn {
        let w = self.cursor_win;
        let c = &self.colours;
        let all = Rectangle {
            x: 0,
            y: 0,
            width: ARROW_WIDTH,
            height: ARROW_HEIGHT,
        };
        self.fill(w, c.outline, &[all])?;
        let fill = if self.cursor.flash_until.is_some() {
            c.flash
        } else {
            c.agent
        };
        self.fill(w, fill, &arrow_runs(|c| c == b'.'))
    }

    fn draw_indicator(&self) -> Conn {
        let Some((text, (width, height))) = &self.indicator else {
            return Ok(());
        };
        let (w, c, m) = (self.indicator_win, &self.colours, &self.metrics);
        self.fill(w, c.panel, &[rect(Bounds::new(0, 0, *width, *height))])?;
        self.fill(
            w,
            c.agent,
            &[rect(Bounds::new(0, 0, INDICATOR_STRIPE, *height))],
        )?;
        let baseline = (height - m.line()) / 2 + m.ascent;
        self.text(w, INDICATOR_PAD, baseline, text, c.white, c.panel)?;
        self.button(w, stop_rect(*width, *height), b"Stop", c.stop)
    }

    fn draw_teach(&self) -> Conn {
        let Some(t) = &self.teach else {
            return Ok(());
        };
        let (w, c, m) = (self.teach_win, &self.colours, &self.metrics);
        let (width, height) = self.teach_size;
        self.fill(w, c.agent, &[rect(Bounds::new(0, 0, width, height))])?;
        self.fill(
            w,
            c.bubble,
            &[rect(Bounds::new(2, 2, width - 4, height - 4))],
        )?;
        for (i, line) in t.lines.iter().enumerate() {
            let y = TEACH_PAD + i as i32 * m.line() + m.ascent;
            self.text(w, TEACH_PAD, y, line, c.ink, c.bubble)?;
        }
        let (next, exit) = teach_rects(width, height);
        self.button(w, next, b"Next", c.next)?;
        self.button(w, exit, b"Exit", c.exit)
    }
}

/// Every top-level window of class [`OVERLAY_CLASS`] on `display` (any
/// process's), bottom to top, with its input shape: for `doctor` and tests.
///
/// Errors: a sentence when the display cannot be reached or a request fails.
pub fn overlay_windows(display: &str) -> Result<Vec<OverlayWindow>, String> {
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        format!("overlay windows on the X display {display}: {what}: {e}")
    };
    let (conn, screen) =
        RustConnection::connect(Some(display)).map_err(|e| failed("cannot connect", &e))?;
    let root = conn
        .setup()
        .roots
        .get(screen)
        .map(|s| s.root)
        .ok_or_else(|| failed("no screen", &screen))?;
    let tree = conn
        .query_tree(root)
        .map_err(|e| failed("QueryTree", &e))?
        .reply()
        .map_err(|e| failed("QueryTree", &e))?;
    let classes = tree
        .children
        .iter()
        .map(|&w| {
            conn.get_property(false, w, AtomEnum::WM_CLASS, AtomEnum::STRING, 0, 64)
                .map_err(|e| failed("GetProperty WM_CLASS", &e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut ours = Vec::new();
    for (&w, cookie) in tree.children.iter().zip(classes) {
        // A window closed meanwhile has no class.
        let Ok(p) = cookie.reply() else { continue };
        let mut parts = p.value.split(|&b| b == 0);
        let instance = parts.next().unwrap_or_default();
        if parts.next() == Some(OVERLAY_CLASS.as_bytes()) {
            ours.push((w, String::from_utf8_lossy(instance).into_owned()));
        }
    }
    let has_shape = conn
        .extension_information(shape::X11_EXTENSION_NAME)
        .map_err(|e| failed("QueryExtension SHAPE", &e))?
        .is_some();
    let mut out = Vec::new();
    for (w, name) in ours {
        let attrs = conn
            .get_window_attributes(w)
            .map_err(|e| failed("GetWindowAttributes", &e))?;
        let geom = conn
            .get_geometry(w)
            .map_err(|e| failed("GetGeometry", &e))?;
        let input = if has_shape {
            Some(
                conn.shape_get_rectangles(w, SK::INPUT)
                    .map_err(|e| failed("ShapeGetRectangles", &e))?,
            )
        } else {
            None
        };
        let (Ok(attrs), Ok(geom)) = (attrs.reply(), geom.reply()) else {
            continue;
        };
        let input_rects = match input.map(|c| c.reply()) {
            Some(Ok(r)) => r
                .rectangles
                .iter()
                .map(|r| {
                    Bounds::new(
                        i32::from(r.x),
                        i32::from(r.y),
                        i32::from(r.width),
                        i32::from(r.height),
                    )
                })
                .collect(),
            Some(Err(_)) => continue,
            None => vec![Bounds::new(
                0,
                0,
                i32::from(geom.width),
                i32::from(geom.height),
            )],
        };
        out.push(OverlayWindow {
            name,
            xid: w,
            bounds: Bounds::new(
                i32::from(geom.x),
                i32::from(geom.y),
                i32::from(geom.width),
                i32::from(geom.height),
            ),
            mapped: attrs.map_state != MapState::UNMAPPED,
            input_rects,
            override_redirect: attrs.override_redirect,
        });
    }
    Ok(out)
}

// ------------------------------------------------------------------ layout (pure)

#[cfg(test)]
mod tests;

//! Typed params and results of every driver method (docs/ARCHITECTURE.md §5).
//!
//! Units: every coordinate and size is in screen pixels, origin top-left of the
//! screen; every duration is in milliseconds; text is UTF-8.

use deskpilot_core::{Bounds, Handle, Node, Op, Role};
use serde::{Deserialize, Serialize};

/// Version of this protocol; `hello` reports it and a client refuses another major.
pub const PROTOCOL_VERSION: u32 = 1;

/// `hello` result: who the driver is and what it can do here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// `linux`, `android`, `windows`, `macos`, or `fixture`.
    pub platform: String,
    /// Driver implementation name, e.g. `deskpilot-driver-linux`.
    pub driver: String,
    /// Driver crate version.
    pub version: String,
    pub protocol: u32,
    pub capabilities: Capabilities,
    pub permissions: Permissions,
}

/// What a driver implements at all (not whether it is allowed right now).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Capabilities {
    pub tree: bool,
    pub actions: bool,
    pub keyboard: bool,
    pub pointer: bool,
    pub capture: bool,
    pub ocr: bool,
    pub events: bool,
}

/// What the platform currently allows.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Permissions {
    /// Accessibility is on (`org.a11y.Status.IsEnabled` on Linux).
    pub accessibility: bool,
    /// Synthetic input is possible (X11 with XTest; false under Wayland).
    pub input: bool,
    /// Screen capture is possible.
    pub capture: bool,
    /// Human-readable notes on anything missing and how to fix it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Health of one application's accessibility connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AppStatus {
    #[default]
    Ok,
    /// Did not answer a D-Bus call within the per-call timeout.
    NotResponding,
    /// Connected but exposes an empty tree: accessibility is off for it.
    AccessibilityDisabled,
}

/// One application on the accessibility bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppInfo {
    /// Driver handle of the application root.
    pub handle: Handle,
    /// Accessible name (AT-SPI application name, e.g. `mousepad`).
    pub name: String,
    pub pid: Option<u32>,
    /// Owner uid of the process, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// The process's executable file name as the driver's machine resolved it
    /// (`/proc/PID/exe`, else `comm`), when the driver reports it: a driver on
    /// another machine does (`deskpilot driver`), so the host never judges a remote
    /// pid by a local process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// Whether the process (or a direct child) holds a pseudo-terminal's master end
    /// open, as the driver's machine read it (`/proc/PID/fd`): it is a terminal,
    /// whatever it is called (docs/ARCHITECTURE.md §7.22). `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty_master: Option<bool>,
    /// Toolkit as reported by the app (`GTK`, `Qt`, `Chromium`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<String>,
    pub status: AppStatus,
    pub windows: Vec<WindowInfo>,
}

/// One top-level window (or dialog).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WindowInfo {
    /// Driver handle of the window's accessible.
    pub handle: Handle,
    /// Name of the owning application.
    pub app: String,
    pub pid: Option<u32>,
    pub title: String,
    pub role: Role,
    /// The window is the active one of the desktop.
    pub active: bool,
    /// Screen-pixel extents, when known: the tree's pixels (AT-SPI extents), which
    /// under a scaled toolkit (GDK_SCALE=2) are not the device's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
    /// The window's area in device (X root-window) pixels, when an X top-level
    /// was matched to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_bounds: Option<Bounds>,
    /// Device pixels per tree pixel: `device_bounds` width ÷ `bounds` width, snapped
    /// to the nearest quarter when within 2 % of it (toolkit scales are 1, 1.25, 1.5,
    /// 2…); `None` when either is unknown, which callers read as 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit_scale: Option<f64>,
    /// The window shows no accessibility tree (an X11 window of an app with no
    /// AT-SPI bridge: Athena, Tk, many games); only pixels can be read from it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_tree: bool,
    /// Areas of other processes' windows stacked above this one (a popup, another
    /// app's window), device pixels: pointer input there would reach them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covered_by: Vec<Bounds>,
    /// Why the window is not on screen now (unmapped, minimised, on another
    /// workspace); `None` when it is, or when the driver cannot tell (a driver
    /// that predates the field). A window wholly under others is not `hidden`:
    /// see [`WindowInfo::fully_covered`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Hidden>,
}

/// Why a listed window is not on screen (docs/ARCHITECTURE.md §5 "Viewability").
/// Its tree may still be readable, but nothing done to it can be seen, and pointer
/// and keyboard input cannot reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Hidden {
    /// Withdrawn: its X window is not mapped (hidden by the app or another client).
    Unmapped,
    /// Iconified by the user or the window manager (ICCCM `IconicState`, AT-SPI
    /// `ICONIFIED`).
    Minimized,
    /// On a virtual desktop other than the current one (`_NET_WM_DESKTOP` ≠
    /// `_NET_CURRENT_DESKTOP`).
    OtherWorkspace,
}

impl Hidden {
    /// The snake-case name (`unmapped`, `minimized`, `other_workspace`).
    pub fn as_str(self) -> &'static str {
        match self {
            Hidden::Unmapped => "unmapped",
            Hidden::Minimized => "minimized",
            Hidden::OtherWorkspace => "other_workspace",
        }
    }
}

impl WindowInfo {
    /// Why nothing done to the window can be seen now, as the lists and refusals
    /// name it: [`Hidden::as_str`], or `covered` when [`WindowInfo::fully_covered`];
    /// `None` for a window on screen (or one the driver cannot tell about).
    pub fn not_viewable(&self) -> Option<&'static str> {
        match self.hidden {
            Some(h) => Some(h.as_str()),
            None if self.fully_covered() => Some("covered"),
            None => None,
        }
    }

    /// True when windows stacked above cover every pixel of the window's device
    /// area ([`WindowInfo::covered_by`] against [`WindowInfo::device_bounds`]):
    /// nothing of it can be seen or clicked. False when either is unknown.
    pub fn fully_covered(&self) -> bool {
        match self.device_bounds {
            Some(area) if !self.covered_by.is_empty() => area.covered_by(&self.covered_by),
            _ => false,
        }
    }

    /// Device pixels per tree pixel (1 when unknown).
    pub fn scale(&self) -> f64 {
        self.toolkit_scale.unwrap_or(1.0)
    }

    /// Maps a point in tree pixels to device pixels. A scaled toolkit reports every
    /// position divided by its scale, the origin included (GTK 3 under GDK_SCALE=2:
    /// a window at device (200, 100) has extents at (100, 50)), so the map is a
    /// scaling about the screen's origin.
    pub fn tree_to_device(&self, x: f64, y: f64) -> (f64, f64) {
        let (ox, oy) = self.tree_origin_offset();
        (ox + x * self.scale(), oy + y * self.scale())
    }

    /// Where the tree's (0, 0) lies on the device: when the toolkit reports
    /// positions relative to the window (GTK 4 says its window is at (0, 0) wherever
    /// it is), the window's device origin plus half the margin its X window has
    /// around the scaled tree extents (the shadow a client-side-decorated window
    /// draws, the same on each side); else the screen's origin.
    fn tree_origin_offset(&self) -> (f64, f64) {
        match (self.bounds, self.device_bounds) {
            (Some(t), Some(d)) if t.x == 0 && t.y == 0 && (d.x, d.y) != (0, 0) => {
                let s = self.scale();
                let margin =
                    |dw: i32, tw: i32| ((f64::from(dw) - f64::from(tw) * s) / 2.0).max(0.0);
                (
                    f64::from(d.x) + margin(d.width, t.width),
                    f64::from(d.y) + margin(d.height, t.height),
                )
            }
            _ => (0.0, 0.0),
        }
    }

    /// Maps a point in device pixels to tree pixels (the inverse of
    /// [`WindowInfo::tree_to_device`]).
    pub fn device_to_tree(&self, x: f64, y: f64) -> (f64, f64) {
        let (ox, oy) = self.tree_origin_offset();
        ((x - ox) / self.scale(), (y - oy) / self.scale())
    }
}

/// `apps.launch` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchParams {
    /// Program and arguments, as for `execve` (no shell).
    pub command: Vec<String>,
    /// How long to wait for the app's first window, in ms (default 15,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// `apps.launch` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchResult {
    pub pid: u32,
    /// The first window that appeared, if one did within `wait_ms`.
    pub window: Option<WindowInfo>,
}

/// `tree.snapshot` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotParams {
    pub window: Handle,
    /// Read only this subtree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Handle>,
    /// Maximum depth below the root (default: unlimited, still node-capped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Maximum nodes to read (default the driver's own, 5,000 on Linux; at most
    /// [`MAX_READ_NODES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<u32>,
    /// Characters (Unicode scalar values) of text read per text field for this read:
    /// default the driver's own (2,000 on Linux), at most [`MAX_TEXT_CAP`]. For
    /// reading one long text whole (`find` in long texts, `read`), with a scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_cap: Option<u32>,
    /// Index of the first child of the read's root (the scope) to read: the children
    /// before it are counted, not read, and the root's `first_child` says so. For
    /// paging through a container with more children than one read takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    /// Read below elements that are not on screen as well, as a search needs: a
    /// driver may otherwise take its cache's view of them (cheaper, and it may lack
    /// their children). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// Children taken per element at most, for this read: default the driver's own
    /// (500 on Linux), at most [`MAX_READ_NODES`]. A search raises it to read a long
    /// list in one read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_cap: Option<u32>,
    /// Read the whole text of the root (the scope) even where the application gives
    /// only the part in view: a document whose children exist only on screen
    /// (LibreOffice Writer) is paged through with its own scroll bar, the view only,
    /// and scrolled back; the root's `value` holds the text and its `document` says
    /// how it was read and what was not. For `read`; default false. A driver without
    /// such documents ignores it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_text: bool,
}

impl SnapshotParams {
    /// A read of the whole window `window` with the driver's own limits; set fields
    /// with struct update syntax for anything else.
    pub fn whole(window: Handle) -> Self {
        SnapshotParams {
            window,
            scope: None,
            depth: None,
            max_nodes: None,
            text_cap: None,
            from: None,
            hidden: false,
            child_cap: None,
            whole_text: false,
        }
    }
}

/// The most elements one read may be asked for (`max_nodes`, `child_cap`): 50,000 —
/// a page of 20,000 links with the white space between them, read whole by a
/// search. A driver's own defaults are far lower (5,000 nodes, 500 children).
pub const MAX_READ_NODES: u32 = 50_000;

/// The most characters of text a single read takes per text field: 1,048,576
/// (1 Mi characters, a few MB of UTF-8), a bound on one answer's size.
pub const MAX_TEXT_CAP: u32 = 1 << 20;

/// How a snapshot was read and what was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WalkStats {
    /// Objects returned by the platform.
    pub objects: u64,
    /// Objects that vanished while being read (skipped, not fatal).
    pub vanished: u64,
    /// Children not enumerated because of a child cap or managed descendants.
    pub capped: u64,
    /// Wall time of the read, ms.
    pub elapsed_ms: u64,
    /// The tree came from one bulk cache call rather than a per-object walk.
    pub bulk: bool,
}

/// `tree.snapshot` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeSnapshot {
    pub window: WindowInfo,
    pub root: Node,
    pub stats: WalkStats,
}

/// `tree.find` params: elements whose name, value or description contains `text`
/// (case-insensitive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindParams {
    /// Search this window; `None` searches every window of `app` (or all apps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Handle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// At most this many matches (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One `tree.find` match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMatch {
    pub window: WindowInfo,
    /// The element, without children.
    pub node: Node,
}

/// `tree.find` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindResult {
    pub matches: Vec<FindMatch>,
}

/// Settle policy after an action: return once the app has been quiet for `quiet_ms`
/// (default 300) or `max_ms` (default 3,000) has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settle {
    pub quiet_ms: u64,
    pub max_ms: u64,
    /// Also read the action's window once it has settled and return that read in
    /// [`ActResult::after`]. A driver that watches events may then overlap the read
    /// with the end of the wait: a read during which the app sent no signal, held
    /// until the app has had `quiet_ms` to react and has been silent a while since,
    /// stands for the read after the wait (the Linux driver: docs/ARCHITECTURE.md
    /// §6, "Reading while settling"). A driver that cannot
    /// read the window (it closed, it has no tree) returns no read and the caller
    /// reads as before. Default `false`: wait only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read: bool,
}

impl Default for Settle {
    /// 300 ms quiet, 3 s ceiling, no read (docs/ARCHITECTURE.md §6).
    fn default() -> Self {
        Settle {
            quiet_ms: 300,
            max_ms: 3_000,
            read: false,
        }
    }
}

/// `node.act` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActParams {
    /// The window the element belongs to (input fallbacks verify it has focus).
    pub window: Handle,
    /// The element to act on.
    pub handle: Handle,
    pub op: Op,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Wait for the app to settle before answering; `None` answers at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<Settle>,
}

/// The channel an action actually went through (docs/ARCHITECTURE.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// A semantic accessibility action (AT-SPI `Action.DoAction`, `Selection`, focus).
    Action,
    /// An accessibility text interface (`EditableText`).
    Text,
    /// An accessibility value interface (`Value`).
    Value,
    /// Synthetic keyboard input (XTest).
    Keyboard,
    /// Synthetic pointer input (XTest): moves the user's pointer.
    Pointer,
    /// Synthetic pointer input (XTest) at the centre of a box read by OCR from the
    /// window's pixels: moves the user's pointer.
    PointerOcr,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Action => "action",
            Channel::Text => "text",
            Channel::Value => "value",
            Channel::Keyboard => "keyboard",
            Channel::Pointer => "pointer",
            Channel::PointerOcr => "pointer(ocr)",
        }
    }
}

/// What is known about an action's effect (docs/ARCHITECTURE.md §1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ActStatus {
    /// The platform accepted the action.
    Executed,
    /// The platform refused it (e.g. `DoAction` returned false); nothing happened.
    Rejected,
    /// The call did not answer in time; it may or may not have happened.
    TimedOut,
    /// Sent, but success cannot be confirmed; never retry a non-idempotent action.
    OutcomeUnknown,
}

impl ActStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ActStatus::Executed => "executed",
            ActStatus::Rejected => "rejected",
            ActStatus::TimedOut => "timed_out",
            ActStatus::OutcomeUnknown => "outcome_unknown",
        }
    }
}

/// How settling went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SettleReport {
    /// Time spent waiting, ms (with [`Settle::read`], the read returned included).
    pub waited_ms: u64,
    /// Events seen from the app while waiting.
    pub events: u64,
    /// The app was still busy when `max_ms` ran out (for a driver that settles by
    /// reading: the last reads still differed, or a read failed).
    pub hit_ceiling: bool,
    /// Reads of the screen taken to settle, for a driver that settles by reading it
    /// again until two reads match (Android: one `uiautomator dump` each), or reads
    /// of the window started while settling on events with [`Settle::read`] (Linux:
    /// those a signal voided included); `None` for a driver that settles on events
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<u64>,
}

/// `node.act` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ActResult {
    pub status: ActStatus,
    pub channel: Channel,
    /// The concrete mechanism, e.g. `DoAction("click")` or `SetTextContents`.
    pub method: String,
    /// Dispatch time, ms (excluding settle).
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<SettleReport>,
    /// Why the status is not `executed`, or what fallback was used and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The action's window read whole once the app settled, when [`Settle::read`]
    /// asked for it and the driver could read it (`None` otherwise: the caller
    /// reads the window itself). Hosts take it out before a result is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub after: Option<Box<TreeSnapshot>>,
}

/// Kinds of accessibility events a subscription can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    WindowCreated,
    WindowDestroyed,
    WindowActivated,
    FocusChanged,
    ChildrenChanged,
    StateChanged,
    NameChanged,
    TextChanged,
    ValueChanged,
}

/// `events.subscribe` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribeParams {
    /// Only events from this application (by name); `None` for all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// Empty means every kind.
    #[serde(default)]
    pub kinds: Vec<EventKind>,
}

/// `events.subscribe` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeResult {
    pub subscription: u64,
}

/// `events.next` params: the pull form of [`crate::Driver::next_events`].
///
/// The driver answers with an [`EventBatch`] as soon as at least one event is queued
/// for the subscription, or with an empty batch after `timeout_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextEventsParams {
    pub subscription: u64,
    /// How long to wait for a first event, ms.
    pub timeout_ms: u64,
}

/// One accessibility event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    /// The element the event is about.
    pub handle: Handle,
    /// Application name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// Event-specific detail (new name, state name), when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `events.batch` notification params (and the result of [`crate::Driver::next_events`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventBatch {
    pub subscription: u64,
    pub events: Vec<Event>,
    /// Events dropped because the queue was full.
    #[serde(default)]
    pub dropped: u64,
}

/// `input.keys` params: exactly one of `chord` or `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeysParams {
    /// The window that must have focus; the driver refuses if it does not.
    pub window: Handle,
    /// Space-separated chords such as `ctrl+s`, `shift+Tab`, `Return`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chord: Option<String>,
    /// Literal text to type (any Unicode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Pointer gestures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointerAction {
    Move,
    Click,
    DoubleClick,
    RightClick,
    /// Press at (x, y), release at (to_x, to_y).
    Drag,
    ScrollUp,
    ScrollDown,
}

/// `input.pointer` params. Coordinates are screen pixels; the host has already
/// checked them against a basis (docs/ARCHITECTURE.md §8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointerParams {
    pub window: Handle,
    pub action: PointerAction,
    pub x: i32,
    pub y: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<(i32, i32)>,
}

/// `input.keys` / `input.pointer` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputResult {
    pub channel: Channel,
    pub elapsed_ms: u64,
    /// Key events or pointer events sent.
    pub events_sent: u64,
    /// Typed text only: characters read back from the focused element's `Text`
    /// after typing (all of them, or the call fails); `None` when nothing could be
    /// read back (the element exposes no text), which `note` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_chars: Option<u64>,
    /// What the driver could not confirm, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `screen.capture` params. Rectangles are in the coordinates `windows.list` gives
/// the window's `bounds` in (the tree's pixels, see [`WindowInfo::toolkit_scale`]);
/// the driver maps them to the image.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CaptureParams {
    pub window: Handle,
    /// Longest side of the returned image, image pixels; a larger capture is
    /// downscaled to it (aspect kept). `None` or 0: device resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_side: Option<u32>,
    /// Rectangles painted over (opaque) in the device-resolution pixels, before any
    /// scaling, marking or encoding: password fields and other redacted values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paint: Vec<Bounds>,
    /// Set-of-Mark boxes drawn after scaling, each labelled (`e12`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<MarkSpec>,
}

/// One Set-of-Mark box: a label and the element's rectangle (tree pixels, as
/// [`CaptureParams::paint`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarkSpec {
    pub label: String,
    pub bounds: Bounds,
}

/// `screen.capture` result: a PNG of the window, and the transform between its
/// pixels and the screen as one whole (docs/ARCHITECTURE.md §8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureResult {
    /// The window's area in device (X root-window) pixels: what was captured.
    pub bounds: Bounds,
    /// Device pixels per tree pixel, measured (X geometry width ÷ AT-SPI extents
    /// width); 1 for a window without a tree.
    pub toolkit_scale: f64,
    /// Image pixels per device pixel (1, or less when downscaled).
    pub image_scale: f64,
    /// Image size, pixels.
    pub width: u32,
    pub height: u32,
    /// Base64 of the PNG bytes.
    pub png_base64: String,
    /// Each mark as drawn, image pixels (same order as the request's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<MarkSpec>,
    /// What the image may not show truthfully (a window partly covered by another,
    /// a paint rectangle outside the window), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `screen.ocr` params: [`CaptureParams::paint`] is applied before recognition.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OcrParams {
    pub window: Handle,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paint: Vec<Bounds>,
    /// Recognise only this rectangle of the window (tree pixels, as `paint`): an
    /// image or canvas element. `None`: the whole window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<Bounds>,
}

/// One recognised run of text (the words of a line with no wide gap between them),
/// bounds in device (X root-window) pixels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OcrWord {
    pub text: String,
    pub bounds: Bounds,
    /// 0–100, the mean of its words' as tesseract reports them.
    pub confidence: f32,
}

/// `screen.ocr` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OcrResult {
    pub words: Vec<OcrWord>,
    /// The window's area in device pixels when it was read.
    pub bounds: Bounds,
    /// As [`CaptureResult::toolkit_scale`].
    pub toolkit_scale: f64,
    /// The tesseract languages used (`eng+chi_sim`).
    pub languages: String,
    /// Time spent capturing and recognising, ms.
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `window.activate` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivateParams {
    pub window: Handle,
}

/// An empty result (`{}`), for methods that only succeed or fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Empty {}

/// `clipboard.read` result: the clipboard's text as the app that owns it offers it
/// (UTF-8; X11 asks for `UTF8_STRING`, then `STRING`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClipboardContent {
    /// `None`: nothing is on the clipboard, or its owner offers no text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The text was longer than [`CLIPBOARD_MAX_BYTES`] and was cut there (at a
    /// character boundary).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The targets (formats) the owner offered when it was read, asked before the
    /// text (X11 `TARGETS` atom names, e.g. `UTF8_STRING`,
    /// `x-kde-passwordManagerHint`); empty when nothing is on the clipboard or the
    /// owner does not answer `TARGETS`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
}

/// The targets by which password managers mark a copied password as secret, for
/// clipboard managers and history to leave alone (docs/ARCHITECTURE.md §7.20):
/// KDE's `x-kde-passwordManagerHint` (content `secret`; KeePassXC, KWallet and
/// others on X11 and Wayland), the `NSPasteboard` concealed type under its two
/// names (KeePassXC and others on macOS, cross-platform toolkits), and Windows'
/// `ExcludeClipboardContentFromMonitorProcessing` (Wine, cross-platform apps).
/// Matched by name, ASCII case-insensitively; the target being offered is the mark,
/// whatever its content.
pub const PASSWORD_MARK_TARGETS: [&str; 4] = [
    "x-kde-passwordManagerHint",
    "application/x-nspasteboard-concealed-type",
    "org.nspasteboard.ConcealedType",
    "ExcludeClipboardContentFromMonitorProcessing",
];

/// The first of `targets` that marks the selection's content as a password
/// ([`PASSWORD_MARK_TARGETS`]), if any.
pub fn password_mark(targets: &[String]) -> Option<&str> {
    targets
        .iter()
        .find(|t| {
            PASSWORD_MARK_TARGETS
                .iter()
                .any(|m| m.eq_ignore_ascii_case(t.trim()))
        })
        .map(String::as_str)
}

/// Which X selection `clipboard.targets` asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// `CLIPBOARD`: what Ctrl+C copies and Ctrl+V pastes.
    #[default]
    Clipboard,
    /// `PRIMARY`: the last text selected, which a middle click and, in some apps
    /// (xterm), Shift+Insert paste.
    Primary,
}

/// `clipboard.targets` params.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClipboardTargetsParams {
    #[serde(default)]
    pub selection: Selection,
}

/// `clipboard.targets` result: what a selection's owner offers, never its content.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClipboardTargets {
    /// Some client owns the selection.
    pub owned: bool,
    /// The target names the owner answered `TARGETS` with, in its order; empty
    /// when it is not owned or the owner does not answer `TARGETS`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
}

/// The most text the clipboard methods carry, in UTF-8 bytes (256 KiB: far more
/// than an agent should read or type at once, and under one X request).
pub const CLIPBOARD_MAX_BYTES: usize = 256 * 1024;

/// `clipboard.write` params.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClipboardWriteParams {
    /// At most [`CLIPBOARD_MAX_BYTES`] of UTF-8.
    pub text: String,
}

/// `clipboard.write` result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClipboardWritten {
    /// The clipboard read back the text written.
    pub verified: bool,
    /// The text's length, UTF-8 bytes.
    pub bytes: usize,
    /// Who holds the text for other apps to paste (`a deskpilot clipboard holder,
    /// pid 4242`).
    pub holder: String,
}

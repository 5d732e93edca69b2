//! deskpilot's Android driver over `adb` (docs/ARCHITECTURE.md §15).
//!
//! - **Read:** `adb shell uiautomator dump PATH`, then `adb exec-out cat PATH`, parsed
//!   into a [`deskpilot_core::Node`] tree ([`parse`]). A dump that fails because the
//!   screen never idles is tried once more, then reported as
//!   `COMPUTER_NOT_RESPONDING`, never as an empty screen. A read is kept for
//!   [`CACHE_MS`] so the calls of one command share it, and forgotten as soon as
//!   any input is sent.
//! - **Windows:** the one window is the app in front, handle `screen:PACKAGE`
//!   ([`window_handle`]); another app coming to the front is a new window.
//! - **Act:** adb has no semantic actions, so every action is a declared pointer or
//!   keyboard channel: `input tap` at a point of the element where Android delivers
//!   the tap to it, `input swipe` (a long press in place, a scroll inside the
//!   scrollable element), `input text` / the ADB Keyboard broadcast, `input
//!   keyevent`. After an action the screen is read again until two reads match
//!   (at most [`SETTLE_MAX_READS`]), and the result says how many it took.
//! - **Never:** text into a password field (also refused by the host's policy), a
//!   tap that would land on another element than the one asked for, modifier
//!   chords, OCR, events.

#![forbid(unsafe_code)]

mod adb;
mod doctor;
mod frame;
mod input;
mod parse;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine as _;
use deskpilot_core::{Bounds, Handle, Node, Op, State};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};
use tokio::sync::Mutex;

pub use adb::{sh_line, sh_quote};
pub use doctor::{Check, Level};
pub use input::{
    MAX_TEXT_ARG, Press, input_text_args, keycode, plan_chords, plan_text, typable, untypable,
};
pub use parse::{CLASS_ROLES, role_of, window_handle};

use adb::Adb;
use deskpilot_protocol::Result;
use parse::{Dump, Limits};

/// Where on the device the screen is dumped.
pub const DUMP_PATH: &str = "/data/local/tmp/deskpilot-window.xml";
/// The ADB Keyboard IME, which types any text sent to it by broadcast.
pub const ADB_KEYBOARD: &str = "com.android.adbkeyboard/.AdbIME";
/// What uiautomator prints when the screen never became idle.
const NEVER_IDLE: &str = "could not get idle state";
/// How long a read serves the calls after it, ms (unless input was sent).
pub const CACHE_MS: u64 = 300;
/// Reads of the screen after an action at most, to see it settle.
pub const SETTLE_MAX_READS: u64 = 5;
/// Pause before each settle read, ms (at most the settle's `quiet_ms`).
pub const SETTLE_GAP_MS: u64 = 100;
/// Duration of a long press, ms (Android's long-press timeout is 400–500 ms).
pub const LONG_PRESS_MS: u32 = 800;
/// Duration of a scroll swipe, ms: a drag rather than a fling.
pub const SWIPE_MS: u32 = 400;
/// Delete keys sent per `input keyevent` call when a field is emptied.
const DELETES_PER_CALL: usize = 64;

/// How to reach the device.
#[derive(Debug, Clone)]
pub struct AdbOptions {
    /// The `adb` executable (default `adb`, looked up on `PATH`).
    pub adb: PathBuf,
    /// Device serial (`adb -s SERIAL`); `None` for the only device attached.
    pub serial: Option<String>,
    /// Deadline of one `uiautomator dump`, ms (default 20,000: uiautomator itself
    /// waits up to 10 s for the screen to idle).
    pub dump_timeout_ms: u64,
    /// Deadline of every other adb call, ms (default 10,000).
    pub call_timeout_ms: u64,
    /// Extra environment for the adb child processes.
    pub env: Vec<(String, String)>,
}

impl Default for AdbOptions {
    fn default() -> Self {
        AdbOptions {
            adb: PathBuf::from("adb"),
            serial: None,
            dump_timeout_ms: 20_000,
            call_timeout_ms: 10_000,
            env: Vec::new(),
        }
    }
}

impl AdbOptions {
    /// The options for `--device adb[:SERIAL]`: the adb program from
    /// `DESKPILOT_ADB` when set, else `adb` on `PATH`.
    pub fn for_device(serial: Option<String>) -> Self {
        let adb = std::env::var_os("DESKPILOT_ADB")
            .filter(|s| !s.is_empty())
            .map_or_else(|| PathBuf::from("adb"), PathBuf::from);
        AdbOptions {
            adb,
            serial,
            ..AdbOptions::default()
        }
    }
}

/// What one read of the screen cost, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCost {
    /// `adb shell uiautomator dump` (every attempt).
    pub dump_ms: u64,
    /// `adb exec-out cat` of the dump.
    pub cat_ms: u64,
    /// Parsing the XML into the tree.
    pub parse_ms: u64,
    /// Dump attempts (2 when the first found the screen never idle).
    pub dumps: u32,
}

impl ReadCost {
    /// The whole read, ms.
    pub fn total_ms(&self) -> u64 {
        self.dump_ms + self.cat_ms + self.parse_ms
    }
}

/// One read of the screen.
#[derive(Debug, Clone)]
struct Screen {
    xml: Arc<str>,
    dump: Dump,
    cost: ReadCost,
    at: Instant,
}

/// How settling went, and the last read it made.
struct Settled {
    report: SettleReport,
    note: String,
    screen: Option<Screen>,
}

/// The Android driver: one device through `adb`.
pub struct AndroidDriver {
    adb: Adb,
    opts: AdbOptions,
    last: Mutex<Option<Screen>>,
}

fn ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn not_actionable(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::ElementNotActionable, msg)
}

fn gone(h: &Handle) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotFound,
        format!("element {h} is no longer on the screen; observe again"),
    )
}

/// `role "name"` of a node, for messages.
fn named(n: &Node) -> String {
    if n.name.is_empty() {
        n.role.to_string()
    } else {
        let name: String = n.name.chars().take(60).collect();
        format!("{} {name:?}", n.role)
    }
}

/// The deepest element that reports focus.
fn focused(root: &Node) -> Option<&Node> {
    root.walk().filter(|n| n.has(State::Focused)).last()
}

fn centre(b: Bounds) -> (i32, i32) {
    (b.x + b.width / 2, b.y + b.height / 2)
}

/// Where to tap `el` so that Android delivers the tap to it: its centre, or, when
/// an element inside it that takes taps covers the centre, the first point of a
/// 3×3 grid over it that reaches it.
///
/// Errors: `COMPUTER_ELEMENT_NOT_ACTIONABLE` when it has no bounds, when every
/// point is covered by elements inside it, or when the tap would land on another
/// element (the row that holds a text or a switch, a view drawn over it) — naming
/// that element, so the caller acts on what the tap really reaches.
fn aim(root: &Node, el: &Node) -> Result<(i32, i32), ComputerError> {
    let b = el
        .bounds
        .filter(|b| !b.is_empty())
        .ok_or_else(|| not_actionable(format!("{} has no bounds on the screen", named(el))))?;
    let (cx, cy) = centre(b);
    match parse::touch_target(root, cx, cy) {
        Some(t) if t.handle == el.handle => return Ok((cx, cy)),
        // Nothing takes taps there: the tap reaches the element as it is.
        None => return Ok((cx, cy)),
        Some(t) if !parse::within(&el.handle, &t.handle) => {
            return Err(not_actionable(format!(
                "a tap on {} lands on {}{}: act on that element instead",
                named(el),
                named(t),
                if parse::within(&t.handle, &el.handle) {
                    ", which holds it"
                } else {
                    ", which lies over it"
                }
            )));
        }
        Some(_) => {}
    }
    for fy in [1, 3, 5] {
        for fx in [1, 3, 5] {
            let (x, y) = (b.x + b.width * fx / 6, b.y + b.height * fy / 6);
            if parse::touch_target(root, x, y).is_some_and(|t| t.handle == el.handle) {
                return Ok((x, y));
            }
        }
    }
    Err(not_actionable(format!(
        "{} is covered by elements inside it that take taps; act on one of them",
        named(el)
    )))
}

/// The swipe that scrolls content inside `b` towards `dir` (`down` shows what is
/// below: the finger moves up), over half of its height or width, from and to
/// points a quarter in from its edges.
fn swipe_for(b: Bounds, dir: &str) -> Option<(i32, i32, i32, i32)> {
    let (cx, cy) = centre(b);
    let (top, bottom) = (b.y + b.height / 4, b.y + b.height * 3 / 4);
    let (left, right) = (b.x + b.width / 4, b.x + b.width * 3 / 4);
    Some(match dir {
        "down" => (cx, bottom, cx, top),
        "up" => (cx, top, cx, bottom),
        "right" => (right, cy, left, cy),
        "left" => (left, cy, right, cy),
        _ => return None,
    })
}

impl AndroidDriver {
    /// A driver using `opts`; talks to no device until called.
    pub fn new(opts: AdbOptions) -> Self {
        AndroidDriver {
            adb: Adb {
                program: opts.adb.clone(),
                serial: opts.serial.clone(),
                env: opts.env.clone(),
            },
            opts,
            last: Mutex::new(None),
        }
    }

    /// The options this driver was made with.
    pub fn options(&self) -> &AdbOptions {
        &self.opts
    }

    /// `adb shell LINE` for the words of one device command.
    async fn shell(&self, words: &[&str]) -> Result<adb::Output> {
        let line = sh_line(words);
        self.adb
            .run(&["shell", &line], self.opts.call_timeout_ms, true)
            .await
    }

    /// `adb shell input WORDS`: the read kept is forgotten first, whatever happens.
    async fn input(&self, words: &[&str]) -> Result<()> {
        self.forget().await;
        let mut all = vec!["input"];
        all.extend_from_slice(words);
        self.shell(&all).await.map(|_| ())
    }

    async fn forget(&self) {
        *self.last.lock().await = None;
    }

    /// One dump: `Ok(Err(what uiautomator said))` when the screen never idled.
    async fn dump_once(&self) -> Result<Result<(), String>> {
        let line = sh_line(&["uiautomator", "dump", DUMP_PATH]);
        let out = self
            .adb
            .run(&["shell", &line], self.opts.dump_timeout_ms, true)
            .await;
        let said = match out {
            Ok(o) => format!("{} {}", String::from_utf8_lossy(&o.stdout), o.stderr),
            Err(e) if e.message.contains(NEVER_IDLE) => e.message,
            // adb's own failure (no device, unauthorized, timed out): as it is.
            Err(e) => return Err(e),
        };
        if said.contains(NEVER_IDLE) {
            return Ok(Err(said.trim().to_string()));
        }
        // "UI hierchary dumped to:" (sic) on every Android version so far.
        if said.contains("dumped to:") {
            return Ok(Ok(()));
        }
        Err(ComputerError::new(
            ErrorCode::NotResponding,
            format!(
                "uiautomator did not dump the screen ({}): the phone may be asleep, locked or showing a screen that cannot be read; check it with `deskpilot doctor --device adb`",
                said.trim()
            ),
        ))
    }

    /// Reads the screen now: a dump (tried once more when the screen never idled),
    /// its transfer and parse. The read is kept for [`CACHE_MS`].
    ///
    /// Errors: `COMPUTER_NOT_RESPONDING` when both dumps found the screen never idle
    /// (with what uiautomator said) or the device did not answer; adb's own errors.
    async fn read(&self) -> Result<Screen> {
        let mut cost = ReadCost::default();
        let t = Instant::now();
        loop {
            cost.dumps += 1;
            match self.dump_once().await? {
                Ok(()) => break,
                Err(_) if cost.dumps < 2 => {
                    tracing::info!("uiautomator found the screen busy; dumping once more");
                }
                Err(said) => {
                    return Err(ComputerError::new(
                        ErrorCode::NotResponding,
                        format!(
                            "the screen never became idle, twice (uiautomator: {said:?}): an animation, video or progress indicator keeps it busy; stop it or wait, then read again"
                        ),
                    ));
                }
            }
        }
        cost.dump_ms = ms(t);
        let t = Instant::now();
        let line = sh_line(&["cat", DUMP_PATH]);
        let bytes = self
            .adb
            .run(&["exec-out", &line], self.opts.call_timeout_ms, true)
            .await?
            .stdout;
        cost.cat_ms = ms(t);
        let t = Instant::now();
        let xml: Arc<str> = String::from_utf8(bytes)
            .map_err(|_| ComputerError::internal("the screen dump is not UTF-8"))?
            .into();
        let dump = parse::parse_dump(&xml, Limits::default()).map_err(|e| {
            ComputerError::new(
                ErrorCode::NotResponding,
                format!("the screen dump could not be read: {e}"),
            )
        })?;
        cost.parse_ms = ms(t);
        tracing::debug!(
            dump_ms = cost.dump_ms,
            cat_ms = cost.cat_ms,
            parse_ms = cost.parse_ms,
            nodes = dump.nodes,
            "android screen read"
        );
        let screen = Screen {
            xml,
            dump,
            cost,
            at: Instant::now(),
        };
        *self.last.lock().await = Some(screen.clone());
        Ok(screen)
    }

    /// The kept read when younger than [`CACHE_MS`], else a fresh one.
    async fn current(&self) -> Result<Screen> {
        if let Some(s) = &*self.last.lock().await
            && s.at.elapsed() < Duration::from_millis(CACHE_MS)
        {
            return Ok(s.clone());
        }
        self.read().await
    }

    /// Reads the screen as `observe` would and says what it cost: (package, nodes,
    /// cost).
    ///
    /// Errors: those of a read.
    pub async fn measure_read(&self) -> Result<(String, u64, ReadCost), ComputerError> {
        let s = self.read().await?;
        Ok((s.dump.package.clone(), s.dump.nodes, s.cost))
    }

    fn window_of(s: &Screen) -> WindowInfo {
        WindowInfo {
            handle: s.dump.root.handle.clone(),
            app: s.dump.package.clone(),
            pid: None,
            title: s.dump.title.clone(),
            role: s.dump.root.role,
            active: true,
            bounds: s.dump.root.bounds,
            device_bounds: s.dump.root.bounds,
            toolkit_scale: None,
            no_tree: false,
            covered_by: Vec::new(),
            hidden: None,
        }
    }

    /// `COMPUTER_ELEMENT_NOT_FOUND` unless `window` is the window on the screen.
    fn same_window(window: &Handle, s: &Screen) -> Result<()> {
        if *window == s.dump.root.handle {
            return Ok(());
        }
        Err(ComputerError::new(
            ErrorCode::ElementNotFound,
            format!(
                "window {window} is no longer on the screen ({} is in front now); list the windows again",
                s.dump.package
            ),
        ))
    }

    /// Reads the screen until two reads in a row are the same, at most
    /// [`SETTLE_MAX_READS`] reads and — once two were made — `s.max_ms`.
    async fn settle(&self, s: Settle) -> Settled {
        let t0 = Instant::now();
        let mut last: Option<Screen> = None;
        let mut reads = 0u64;
        let mut failed = None;
        let settled = loop {
            if reads >= SETTLE_MAX_READS || (reads >= 2 && ms(t0) >= s.max_ms) {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(SETTLE_GAP_MS.min(s.quiet_ms))).await;
            reads += 1;
            match self.read().await {
                Ok(now) => {
                    let same = last.as_ref().is_some_and(|l| l.xml == now.xml);
                    last = Some(now);
                    if same {
                        break true;
                    }
                }
                Err(e) => {
                    failed = Some(e.message);
                    break false;
                }
            }
        };
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        let note = match (settled, failed) {
            (true, _) => format!("settled after {reads} read{} of the screen", plural(reads)),
            (false, Some(why)) => {
                format!("did not settle: read {reads} of the screen failed ({why})")
            }
            (false, None) => format!(
                "did not settle after {reads} read{} of the screen (it kept changing)",
                plural(reads)
            ),
        };
        Settled {
            report: SettleReport {
                waited_ms: ms(t0),
                events: 0,
                hit_ceiling: !settled,
                reads: Some(reads),
            },
            note,
            screen: last,
        }
    }

    /// `Ok` when the ADB Keyboard is the current keyboard (it receives broadcasts
    /// only then); else `COMPUTER_INPUT_UNAVAILABLE` naming `chars` and what to do.
    async fn require_ime(&self, chars: &[char]) -> Result<()> {
        let current = self
            .shell(&["settings", "get", "secure", "default_input_method"])
            .await?
            .text();
        if current == ADB_KEYBOARD {
            return Ok(());
        }
        let all = self.shell(&["ime", "list", "-a", "-s"]).await?.text();
        let fix = if all.lines().any(|l| l.trim() == ADB_KEYBOARD) {
            format!(
                "the ADB Keyboard is installed but is not the current keyboard: `adb shell ime enable {ADB_KEYBOARD} && adb shell ime set {ADB_KEYBOARD}`"
            )
        } else {
            format!(
                "install the ADB Keyboard app (package com.android.adbkeyboard), then `adb shell ime enable {ADB_KEYBOARD} && adb shell ime set {ADB_KEYBOARD}`"
            )
        };
        Err(ComputerError::new(
            ErrorCode::InputUnavailable,
            format!(
                "`adb shell input text` types printable ASCII only and cannot type {}; {fix}. Nothing was typed",
                input::name_chars(chars)
            ),
        ))
    }

    /// Types `text` into whatever has focus: `input text` when every character is
    /// typable, else one ADB Keyboard broadcast (the caller checked it is current).
    /// Returns how, for the result.
    async fn type_text(&self, text: &str) -> Result<String> {
        if let Some(args) = input_text_args(text) {
            for a in &args {
                self.input(&["text", a]).await?;
            }
            return Ok(format!(
                "input text ({} call{})",
                args.len(),
                if args.len() == 1 { "" } else { "s" }
            ));
        }
        self.forget().await;
        let b64 = base64::engine::general_purpose::STANDARD.encode(text);
        self.shell(&[
            "am",
            "broadcast",
            "-a",
            "ADB_INPUT_B64",
            "--es",
            "msg",
            &b64,
        ])
        .await?;
        Ok("am broadcast ADB_INPUT_B64 (ADB Keyboard)".into())
    }

    /// Replaces (`set_value`, `clear`) or extends (`type`) the text of field `el`:
    /// a tap that must give it focus (read back before anything is typed), End, a
    /// Delete per character it held, the text. Returns the method and the text the
    /// field should hold after, when that is known.
    async fn edit(
        &self,
        root: &Node,
        el: &Node,
        op: Op,
        value: Option<&str>,
    ) -> Result<(String, Option<String>), ComputerError> {
        if !el.has(State::Editable) {
            return Err(not_actionable(format!(
                "{op} needs a text field, and {} is not one",
                named(el)
            )));
        }
        if el.has(State::Password) {
            return Err(ComputerError::new(
                ErrorCode::SecureInput,
                "this is a password field: deskpilot never types into one; the user types secrets",
            ));
        }
        if el.has(State::Disabled) {
            return Err(not_actionable(format!("{} is disabled", named(el))));
        }
        let text = match op {
            Op::Clear => "",
            _ => value.ok_or_else(|| ComputerError::invalid(format!("{op} needs a value")))?,
        };
        if text.contains(['\n', '\r', '\t']) {
            return Err(ComputerError::invalid(
                "a value with a Tab or a line break is not typed into a field over adb: set the text without it, then send the key with `keys` (where the host judges it)",
            ));
        }
        let odd = untypable(text);
        if !odd.is_empty() {
            self.require_ime(&odd).await?;
        }
        let mut steps = Vec::new();
        let tapped = !el.has(State::Focused);
        let mut held = el.value.clone().unwrap_or_default();
        let mut held_len = el.value_length.unwrap_or(held.chars().count() as u64);
        if tapped {
            let (x, y) = aim(root, el)?;
            self.input(&["tap", &x.to_string(), &y.to_string()]).await?;
            steps.push(format!("input tap {x} {y}"));
            // The text goes wherever focus is: nothing is typed unless the tap gave
            // this field focus.
            let now = self.read().await?;
            let f = focused(&now.dump.root);
            match f {
                Some(f) if f.has(State::Password) => {
                    return Err(ComputerError::new(
                        ErrorCode::SecureInput,
                        format!(
                            "after the tap at ({x}, {y}) a password field has focus; nothing was typed"
                        ),
                    ));
                }
                Some(f) if f.handle == el.handle => {
                    held = f.value.clone().unwrap_or_default();
                    held_len = f.value_length.unwrap_or(held.chars().count() as u64);
                }
                other => {
                    return Err(ComputerError::new(
                        ErrorCode::InputUnavailable,
                        format!(
                            "the tap at ({x}, {y}) did not give {} focus ({}); nothing was typed",
                            named(el),
                            other.map_or_else(
                                || "nothing has focus".to_string(),
                                |o| format!("{} has it", named(o))
                            )
                        ),
                    ));
                }
            }
        }
        if op != Op::Type || tapped {
            self.input(&["keyevent", "123"]).await?;
            steps.push("input keyevent 123 (end)".to_string());
        }
        if op != Op::Type && held_len > 0 {
            let n = usize::try_from(held_len).unwrap_or(usize::MAX).min(100_000);
            let mut left = n;
            while left > 0 {
                let k = left.min(DELETES_PER_CALL);
                let mut words = vec!["keyevent"];
                words.extend(std::iter::repeat_n("67", k));
                self.input(&words).await?;
                left -= k;
            }
            steps.push(format!("input keyevent 67 ×{n} (delete)"));
        }
        if !text.is_empty() {
            steps.push(self.type_text(text).await?);
        }
        let expect = match op {
            // An empty field shows its hint as its text: nothing to compare.
            _ if text.is_empty() => None,
            Op::Type if tapped => Some(format!("{held}{text}")),
            Op::Type => None,
            _ => Some(text.to_string()),
        };
        Ok((steps.join("; "), expect))
    }
}

#[async_trait]
impl Driver for AndroidDriver {
    async fn hello(&self) -> Result<Hello> {
        let model = self.shell(&["getprop", "ro.product.model"]).await?.text();
        let release = self
            .shell(&["getprop", "ro.build.version.release"])
            .await?
            .text();
        Ok(Hello {
            platform: "android".into(),
            driver: "deskpilot-driver-android".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities {
                tree: true,
                actions: false,
                keyboard: true,
                pointer: true,
                capture: true,
                ocr: false,
                events: false,
            },
            permissions: Permissions {
                accessibility: true,
                input: true,
                capture: true,
                notes: vec![format!("device: {model} (Android {release}) through adb")],
            },
        })
    }

    async fn apps(&self) -> Result<Vec<AppInfo>> {
        let s = self.current().await?;
        let package = s.dump.package.clone();
        Ok(vec![AppInfo {
            handle: Handle::new(format!("app:{package}")),
            name: package,
            pid: None,
            uid: None,
            exe: None,
            pty_master: None,
            toolkit: Some("Android".into()),
            status: AppStatus::Ok,
            windows: vec![Self::window_of(&s)],
        }])
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        let pkg = p
            .command
            .first()
            .filter(|s| {
                !s.is_empty()
                    && !s.starts_with(['.', '_'])
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
            })
            .ok_or_else(|| {
                ComputerError::invalid("launch needs an Android package name as command[0]")
            })?;
        self.forget().await;
        self.shell(&[
            "monkey",
            "-p",
            pkg,
            "-c",
            "android.intent.category.LAUNCHER",
            "1",
        ])
        .await?;
        let settled = self.settle(Settle::default()).await;
        let s = match settled.screen {
            Some(s) => s,
            None => self.read().await?,
        };
        Ok(LaunchResult {
            pid: 0,
            window: Some(Self::window_of(&s)),
        })
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        let s = self.current().await?;
        Ok(vec![Self::window_of(&s)])
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        let s = self.current().await?;
        Self::same_window(&p.window, &s).map(|()| Empty {})
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        let s = self.current().await?;
        Self::same_window(&p.window, &s)?;
        let limits = Limits {
            max_nodes: p.max_nodes.map_or(Limits::default().max_nodes, |m| {
                (m as usize).min(MAX_READ_NODES as usize)
            }),
            text_cap: p.text_cap.map_or(Limits::default().text_cap, |c| {
                (c as usize).min(MAX_TEXT_CAP as usize)
            }),
        };
        let dump = if limits.max_nodes == Limits::default().max_nodes
            && limits.text_cap == Limits::default().text_cap
        {
            s.dump.clone()
        } else {
            parse::parse_dump(&s.xml, limits).map_err(ComputerError::internal)?
        };
        let mut root = match &p.scope {
            Some(h) => parse::find(&dump.root, h).cloned().ok_or_else(|| gone(h))?,
            None => dump.root,
        };
        if let Some(from) = p.from {
            let from = (from as usize).min(root.children.len());
            root.children.drain(..from);
            root.first_child = from as u64;
        }
        if let Some(depth) = p.depth {
            fn cut(n: &mut Node, left: u32) {
                if left == 0 {
                    n.children.clear();
                } else {
                    n.children.iter_mut().for_each(|c| cut(c, left - 1));
                }
            }
            cut(&mut root, depth);
        }
        Ok(TreeSnapshot {
            window: Self::window_of(&s),
            stats: WalkStats {
                objects: root.count() as u64,
                vanished: 0,
                capped: dump.capped,
                elapsed_ms: s.cost.total_ms(),
                bulk: true,
            },
            root,
        })
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        let s = self.current().await?;
        if let Some(w) = &p.window {
            Self::same_window(w, &s)?;
        }
        let window = Self::window_of(&s);
        if p.app
            .as_deref()
            .is_some_and(|a| !window.app.to_lowercase().contains(&a.to_lowercase()))
        {
            return Ok(FindResult {
                matches: Vec::new(),
            });
        }
        let needle = p.text.to_lowercase();
        let limit = p.limit.unwrap_or(20) as usize;
        let matches = s
            .dump
            .root
            .walk()
            .skip(1)
            .filter(|n| p.role.is_none_or(|r| r == n.role))
            .filter(|n| {
                [Some(&n.name), n.value.as_ref(), n.description.as_ref()]
                    .into_iter()
                    .flatten()
                    .any(|t| t.to_lowercase().contains(&needle))
            })
            .take(limit)
            .map(|n| FindMatch {
                window: window.clone(),
                node: Node {
                    children: Vec::new(),
                    ..n.clone()
                },
            })
            .collect();
        Ok(FindResult { matches })
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        let t0 = Instant::now();
        let s = self.current().await?;
        Self::same_window(&p.window, &s)?;
        let root = &s.dump.root;
        let element = || parse::find(root, &p.handle).ok_or_else(|| gone(&p.handle));
        let usable = |el: &Node| {
            if el.has(State::Disabled) {
                Err(not_actionable(format!("{} is disabled", named(el))))
            } else {
                Ok(())
            }
        };
        let mut expect: Option<String> = None;
        let (channel, method) = match p.op {
            Op::Back | Op::Home | Op::Recents => {
                let (code, what) = match p.op {
                    Op::Back => (4, "back"),
                    Op::Home => (3, "home"),
                    _ => (187, "recents"),
                };
                self.input(&["keyevent", &code.to_string()]).await?;
                (Channel::Keyboard, format!("input keyevent {code} ({what})"))
            }
            Op::Click | Op::Toggle | Op::Select => {
                let el = element()?;
                usable(el)?;
                let (x, y) = aim(root, el)?;
                self.input(&["tap", &x.to_string(), &y.to_string()]).await?;
                (Channel::Pointer, format!("input tap {x} {y}"))
            }
            Op::RightClick => {
                let el = element()?;
                usable(el)?;
                let (x, y) = aim(root, el)?;
                let (xs, ys) = (x.to_string(), y.to_string());
                let dur = LONG_PRESS_MS.to_string();
                self.input(&["swipe", &xs, &ys, &xs, &ys, &dur]).await?;
                (
                    Channel::Pointer,
                    format!("input swipe {x} {y} {x} {y} {LONG_PRESS_MS} (long press)"),
                )
            }
            Op::Focus => {
                let el = element()?;
                if !el.has(State::Editable) {
                    return Err(not_actionable(format!(
                        "focus over adb is a tap, which would activate {}; act click if that is meant",
                        named(el)
                    )));
                }
                usable(el)?;
                let (x, y) = aim(root, el)?;
                self.input(&["tap", &x.to_string(), &y.to_string()]).await?;
                (Channel::Pointer, format!("input tap {x} {y}"))
            }
            Op::SetValue | Op::Type | Op::Clear => {
                let el = element()?;
                let (method, e) = self.edit(root, el, p.op, p.value.as_deref()).await?;
                expect = e;
                (Channel::Keyboard, method)
            }
            Op::Scroll => {
                let dir = p.value.as_deref().unwrap_or_default();
                if dir == "into_view" {
                    return Err(not_actionable(
                        "scroll into_view has no adb equivalent: scroll the list that holds the element up or down, then observe",
                    ));
                }
                let chain = parse::chain(root, &p.handle);
                if chain.is_empty() {
                    return Err(gone(&p.handle));
                }
                let area = chain
                    .iter()
                    .rev()
                    .find(|n| n.actions.iter().any(|a| a == "scroll"))
                    .ok_or_else(|| not_actionable("nothing that scrolls holds this element"))?;
                let b = area
                    .bounds
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| not_actionable("the scrollable element has no bounds"))?;
                let (x1, y1, x2, y2) = swipe_for(b, dir).ok_or_else(|| {
                    ComputerError::invalid(format!(
                        "scroll direction {dir:?}: use up, down, left or right"
                    ))
                })?;
                let a = [x1, y1, x2, y2].map(|v| v.to_string());
                let dur = SWIPE_MS.to_string();
                self.input(&["swipe", &a[0], &a[1], &a[2], &a[3], &dur])
                    .await?;
                let holder = if area.handle == p.handle {
                    String::new()
                } else {
                    format!(" in {}", named(area))
                };
                (
                    Channel::Pointer,
                    format!("input swipe {x1} {y1} {x2} {y2} {SWIPE_MS}{holder}"),
                )
            }
            other => {
                return Err(not_actionable(format!(
                    "{other} has no adb input equivalent on Android; ops here: click, right_click (long press), toggle, select, focus (text fields), set_value, type, clear, scroll, back, home, recents"
                )));
            }
        };
        let elapsed_ms = ms(t0);
        let mut status = ActStatus::Executed;
        let (settle, mut notes, after) = match p.settle {
            Some(st) => {
                let d = self.settle(st).await;
                (Some(d.report), vec![d.note], d.screen)
            }
            None => (None, Vec::new(), None),
        };
        if let Some(want) = expect {
            match after.as_ref().map(|s| parse::find(&s.dump.root, &p.handle)) {
                Some(Some(f)) if f.value.as_deref() == Some(want.as_str()) => {
                    notes.push(format!(
                        "the field reads back the {} characters sent",
                        want.chars().count()
                    ));
                }
                Some(Some(f)) => {
                    status = ActStatus::OutcomeUnknown;
                    notes.push(format!(
                        "the field reads back {} characters, not the {} expected; observe it before going on",
                        f.value.as_deref().map_or(0, |v| v.chars().count()),
                        want.chars().count()
                    ));
                }
                Some(None) => notes.push("not read back: the field left the screen".into()),
                None => notes.push("not read back".into()),
            }
        }
        Ok(ActResult {
            status,
            channel,
            method,
            elapsed_ms,
            settle,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
            after: None,
        })
    }

    async fn subscribe(&self, _p: SubscribeParams) -> Result<SubscribeResult> {
        Err(ComputerError::platform_unsupported(
            "accessibility events over adb (the driver settles by reading the screen again)",
        ))
    }

    async fn next_events(&self, _s: u64, _t: u64) -> Result<EventBatch> {
        Err(ComputerError::platform_unsupported(
            "accessibility events over adb",
        ))
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        let t0 = Instant::now();
        let s = self.current().await?;
        Self::same_window(&p.window, &s)?;
        if focused(&s.dump.root).is_some_and(|f| f.has(State::Password)) {
            return Err(ComputerError::new(
                ErrorCode::SecureInput,
                "a password field has focus: no keys are sent while it does; the user types secrets",
            ));
        }
        let mut presses = Vec::new();
        if let Some(t) = &p.text {
            presses.extend(plan_text(t));
        }
        if let Some(c) = &p.chord {
            presses.extend(plan_chords(c)?);
        }
        if presses.is_empty() {
            return Err(ComputerError::invalid(
                "no keys given; send a chord such as \"Return\" or text",
            ));
        }
        let odd: Vec<char> = presses
            .iter()
            .filter_map(|p| match p {
                Press::Text(t) => Some(untypable(t)),
                Press::Key(_) => None,
            })
            .flatten()
            .fold(Vec::new(), |mut v, c| {
                if !v.contains(&c) {
                    v.push(c);
                }
                v
            });
        if !odd.is_empty() {
            self.require_ime(&odd).await?;
        }
        let mut sent = 0u64;
        for press in &presses {
            match press {
                Press::Key(k) => {
                    self.input(&["keyevent", &k.to_string()]).await?;
                    sent += 1;
                }
                Press::Text(t) => {
                    self.type_text(t).await?;
                    sent += t.chars().count() as u64;
                }
            }
        }
        let elapsed_ms = ms(t0);
        let settled = self.settle(Settle::default()).await;
        Ok(InputResult {
            channel: Channel::Keyboard,
            elapsed_ms,
            events_sent: sent,
            verified_chars: None,
            note: Some(format!(
                "sent with adb input, not read back; {}",
                settled.note
            )),
        })
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        let t0 = Instant::now();
        let s = self.current().await?;
        Self::same_window(&p.window, &s)?;
        let (x, y) = (p.x.to_string(), p.y.to_string());
        match p.action {
            PointerAction::Click => self.input(&["tap", &x, &y]).await?,
            PointerAction::RightClick => {
                let dur = LONG_PRESS_MS.to_string();
                self.input(&["swipe", &x, &y, &x, &y, &dur]).await?;
            }
            PointerAction::Drag => {
                let (tx, ty) =
                    p.to.ok_or_else(|| ComputerError::invalid("drag needs `to`"))?;
                self.input(&["swipe", &x, &y, &tx.to_string(), &ty.to_string(), "800"])
                    .await?;
            }
            other => {
                return Err(ComputerError::platform_unsupported(&format!(
                    "pointer {other:?} over adb (taps, long presses and drags only)"
                )));
            }
        }
        let elapsed_ms = ms(t0);
        let settled = self.settle(Settle::default()).await;
        Ok(InputResult {
            channel: Channel::Pointer,
            elapsed_ms,
            events_sent: 1,
            verified_chars: None,
            note: Some(format!("a touch through adb input; {}", settled.note)),
        })
    }

    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        if !p.paint.is_empty() {
            // Never hand out pixels of a field that was asked to be painted over.
            return Err(ComputerError::platform_unsupported(
                "capture with paint rectangles over adb",
            ));
        }
        let line = sh_line(&["screencap", "-p"]);
        let png = self
            .adb
            .run(&["exec-out", &line], self.opts.call_timeout_ms, true)
            .await?
            .stdout;
        if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" {
            return Err(ComputerError::internal("screencap did not return a PNG"));
        }
        let be = |i: usize| u32::from_be_bytes([png[i], png[i + 1], png[i + 2], png[i + 3]]);
        let (width, height) = (be(16), be(20));
        if frame::all_black(&png) == Some(true) {
            return Err(frame::secure_surface(width, height));
        }
        Ok(CaptureResult {
            bounds: Bounds::new(
                0,
                0,
                i32::try_from(width).unwrap_or(i32::MAX),
                i32::try_from(height).unwrap_or(i32::MAX),
            ),
            toolkit_scale: 1.0,
            image_scale: 1.0,
            width,
            height,
            png_base64: base64::engine::general_purpose::STANDARD.encode(&png),
            marks: Vec::new(),
            notes: vec![
                "the whole screen at device resolution: marks and max_side are not applied by the Android driver"
                    .into(),
            ],
        })
    }

    async fn ocr(&self, _p: OcrParams) -> Result<OcrResult> {
        Err(ComputerError::platform_unsupported(
            "OCR on an Android device",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swipes_stay_inside_the_element_and_go_the_right_way() {
        let b = Bounds::new(0, 275, 1080, 2062);
        let (x1, y1, x2, y2) = swipe_for(b, "down").unwrap();
        assert_eq!((x1, x2), (540, 540));
        assert!(y1 > y2, "down: the finger moves up");
        for (x, y) in [(x1, y1), (x2, y2)] {
            assert!(b.contains_point(x, y));
        }
        let (_, y1, _, y2) = swipe_for(b, "up").unwrap();
        assert!(y1 < y2);
        let (x1, _, x2, _) = swipe_for(b, "right").unwrap();
        assert!(x1 > x2);
        assert!(swipe_for(b, "sideways").is_none());
    }
}

//! Off-Linux stand-in: the public names and signatures of the Linux module that other
//! crates use ([`LinuxDriver`], [`atspi::ConnectOptions`], [`sandbox`], [`input`]), so
//! the workspace builds on every OS. Compiled off Linux, and on Linux under
//! `--cfg deskpilot_stub` so that build can be checked here.
//!
//! Every constructor and every fallible call answers `COMPUTER_PLATFORM_UNSUPPORTED`;
//! it must never panic and never pretend to succeed. Values that only a successful
//! constructor could make ([`LinuxDriver`], [`sandbox::Sandbox`], [`input::XInput`])
//! hold an uninhabited field, so their infallible methods are provably unreachable.

use std::convert::Infallible;
use std::sync::Arc;

use async_trait::async_trait;
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver};

use self::atspi::ConnectOptions;
use self::input::XInput;
use deskpilot_protocol::Result;

/// What the driver's refusals name.
const DRIVER: &str = "the AT-SPI2 driver";

/// The Linux driver, unavailable on this OS: no value of it can exist.
pub struct LinuxDriver {
    never: Infallible,
}

impl std::fmt::Debug for LinuxDriver {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.never {}
    }
}

impl LinuxDriver {
    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED` (AT-SPI2 exists only on Linux).
    pub async fn connect(opts: ConnectOptions) -> Result<LinuxDriver> {
        let _ = opts;
        Err(ComputerError::platform_unsupported(DRIVER))
    }

    /// [`LinuxDriver::connect`] with [`ConnectOptions::from_env`].
    ///
    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
    pub async fn from_env() -> Result<LinuxDriver> {
        Self::connect(ConnectOptions::from_env()).await
    }

    /// The options this driver was connected with (unreachable: no driver exists).
    pub fn options(&self) -> &ConnectOptions {
        match self.never {}
    }

    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
    pub async fn input(&self) -> Result<Arc<XInput>> {
        Err(ComputerError::platform_unsupported(DRIVER))
    }
}

/// Implements every [`Driver`] method as a `COMPUTER_PLATFORM_UNSUPPORTED` refusal.
macro_rules! unsupported {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[async_trait]
        impl Driver for LinuxDriver {
            $(async fn $name(&self, $($arg: $ty),*) -> Result<$ret> {
                $(let _ = $arg;)*
                Err(ComputerError::platform_unsupported(DRIVER))
            })*
        }
    };
}

unsupported! {
    hello() -> Hello;
    apps() -> Vec<AppInfo>;
    launch(p: LaunchParams) -> LaunchResult;
    windows() -> Vec<WindowInfo>;
    activate(p: ActivateParams) -> Empty;
    snapshot(p: SnapshotParams) -> TreeSnapshot;
    find(p: FindParams) -> FindResult;
    act(p: ActParams) -> ActResult;
    subscribe(p: SubscribeParams) -> SubscribeResult;
    next_events(subscription: u64, timeout_ms: u64) -> EventBatch;
    keys(p: KeysParams) -> InputResult;
    pointer(p: PointerParams) -> InputResult;
    capture(p: CaptureParams) -> CaptureResult;
    ocr(p: OcrParams) -> OcrResult;
}

/// Connection options. [`ConnectOptions`] is plain data read from variables, so it is
/// the Linux definition itself, not a copy.
pub mod atspi {
    pub use super::connect_options::*;
}

/// The Linux module's `atspi/options.rs`: pure data and variable parsing, no D-Bus.
#[path = "linux/atspi/options.rs"]
mod connect_options;

/// Sandbox desktops need Xvfb, D-Bus and AT-SPI2: Linux only.
pub mod sandbox {
    use deskpilot_protocol::Result;
    use std::collections::BTreeMap;
    use std::convert::Infallible;
    use std::path::PathBuf;
    use std::process::Child;

    use deskpilot_protocol::ComputerError;
    use serde::{Deserialize, Serialize};

    /// What the sandbox refusals name.
    const SANDBOX: &str = "the sandbox desktop (Xvfb + D-Bus + AT-SPI2)";

    /// First display number tried on Linux when none is requested (same value there).
    pub const FIRST_DISPLAY: u32 = 90;
    /// Name of the marker variable that every sandbox process inherits on Linux.
    pub const MARKER_VAR: &str = "DESKPILOT_SANDBOX";

    /// How to start a sandbox (the same fields and defaults as on Linux).
    #[derive(Debug, Clone)]
    pub struct SandboxOptions {
        /// Display number; `None` picks the first free one from [`FIRST_DISPLAY`].
        pub display: Option<u32>,
        /// Screen size in pixels (default 1280×800).
        pub width: u32,
        pub height: u32,
        /// Start a window manager when installed (default true).
        pub window_manager: bool,
        /// Keep the processes running when the [`Sandbox`] value is dropped.
        pub detach: bool,
    }

    impl Default for SandboxOptions {
        fn default() -> Self {
            SandboxOptions {
                display: None,
                width: 1280,
                height: 800,
                window_manager: true,
                detach: false,
            }
        }
    }

    /// What a sandbox is made of; the same shape as Linux's `sandbox.json`.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct SandboxState {
        /// X display number (`DISPLAY=:N`).
        pub display: u32,
        /// `DBUS_SESSION_BUS_ADDRESS` of the sandbox's session bus.
        pub bus_address: String,
        /// The sandbox directory (also the value of [`MARKER_VAR`]).
        pub dir: PathBuf,
        /// Process ids of the sandbox's daemons and launched apps.
        pub pids: Vec<u32>,
        /// Whether a window manager runs.
        pub window_manager: bool,
    }

    /// A running sandbox desktop, unavailable on this OS: no value of it can exist.
    #[derive(Debug)]
    pub struct Sandbox {
        pub(crate) never: Infallible,
    }

    /// Accessibility buses are an AT-SPI (Linux) notion.
    pub fn set_a11y_enabled(_address: &str) -> Result<(), String> {
        Err("accessibility buses exist only on Linux".into())
    }

    /// Where sandboxes would keep their state: the runtime directory of
    /// [`deskpilot_os::runtime_dir`], as on Linux. Nothing is ever created there.
    pub fn sandboxes_root() -> PathBuf {
        deskpilot_os::runtime_dir()
    }

    impl Sandbox {
        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn start(opts: SandboxOptions) -> Result<Sandbox> {
            let _ = opts;
            Err(ComputerError::platform_unsupported(SANDBOX))
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn open(n: u32) -> Result<Sandbox> {
            let _ = n;
            Err(ComputerError::platform_unsupported(SANDBOX))
        }

        /// Every sandbox with a state file: none can exist on this OS, so empty.
        pub fn list() -> Vec<SandboxState> {
            Vec::new()
        }

        /// The sandbox's description (unreachable: no sandbox exists).
        pub fn state(&self) -> &SandboxState {
            match self.never {}
        }

        /// `DISPLAY` value (unreachable: no sandbox exists).
        pub fn display(&self) -> String {
            match self.never {}
        }

        /// Whether the sandbox runs (unreachable: no sandbox exists).
        pub fn is_alive(&self) -> bool {
            match self.never {}
        }

        /// The variables of the sandbox (unreachable: no sandbox exists).
        pub fn env(&self) -> BTreeMap<String, String> {
            match self.never {}
        }

        /// `export` lines to join the sandbox (unreachable: no sandbox exists).
        pub fn shell_exports(&self) -> String {
            match self.never {}
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn spawn(&mut self, argv: &[String]) -> Result<Child> {
            let _ = argv;
            Err(ComputerError::platform_unsupported(SANDBOX))
        }

        /// Directories apps must not see (unreachable: no sandbox exists).
        pub fn hide_from_apps(&mut self, dirs: Vec<PathBuf>, files: Vec<PathBuf>) {
            let _ = (dirs, files);
            match self.never {}
        }

        /// Paths apps still see (unreachable: no sandbox exists).
        pub fn keep_for_apps(&mut self, paths: Vec<PathBuf>) {
            let _ = paths;
            match self.never {}
        }

        /// Variables apps do not inherit (unreachable: no sandbox exists).
        pub fn withhold_env(&mut self, names: Vec<String>) {
            let _ = names;
            match self.never {}
        }

        /// The sandbox's processes (unreachable: no sandbox exists).
        pub fn marked(&self) -> Vec<u32> {
            match self.never {}
        }

        /// Ends an app and what it started (unreachable: no sandbox exists).
        pub fn end_since(&mut self, child: &mut Child, before: &[u32]) {
            let _ = (child, before);
            match self.never {}
        }

        /// Stops the sandbox (unreachable: no sandbox exists).
        pub fn stop(&mut self) {
            match self.never {}
        }
    }

    impl Drop for Sandbox {
        fn drop(&mut self) {
            match self.never {}
        }
    }
}

/// Desktops are X displays with a session bus: Linux only.
pub mod desktop {
    use deskpilot_protocol::Result;
    use std::path::PathBuf;

    use deskpilot_protocol::ComputerError;

    pub use crate::desktop_types::Desktop;

    use super::LinuxDriver;
    use super::sandbox::Sandbox;

    /// What the refusals name.
    const DESKTOP: &str = "X11 desktops with AT-SPI2";

    impl Desktop {
        /// Unreachable: no sandbox exists off Linux.
        pub fn of_sandbox(sb: &Sandbox) -> Desktop {
            match sb.never {}
        }
    }

    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
    pub fn resolve(sandbox: Option<u32>) -> Result<Desktop> {
        let _ = sandbox;
        Err(ComputerError::platform_unsupported(DESKTOP))
    }

    /// None: no sandbox runs off Linux.
    pub fn sandbox_of_bus(bus: &str) -> Option<u32> {
        let _ = bus;
        None
    }

    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
    pub async fn connect(
        desktop: &Desktop,
        hidden: (Vec<PathBuf>, Vec<PathBuf>),
    ) -> Result<LinuxDriver> {
        let _ = (desktop, hidden);
        Err(ComputerError::platform_unsupported(DESKTOP))
    }
}

/// Confining launched apps uses bubblewrap: Linux only.
pub mod confine {
    use std::path::Path;

    /// bubblewrap is a Linux tool: never available here.
    pub fn bwrap() -> Option<&'static Path> {
        None
    }
}

/// The global stop hotkey is an X11 key grab: Linux only.
pub mod hotkey {
    pub use crate::hotkey_types::{DEFAULT_STOP_HOTKEY, HotkeyError};
    use deskpilot_protocol::Result;

    /// Never constructed here.
    pub struct StopHotkey(std::convert::Infallible);

    fn unsupported() -> HotkeyError {
        HotkeyError::NoDisplay(
            "no stop hotkey: a global key grab needs X11 on Linux; use `deskpilot stop`".into(),
        )
    }

    impl StopHotkey {
        /// Errors: always [`HotkeyError::NoDisplay`].
        pub fn grab(
            display: Option<&str>,
            chord: &str,
            on_press: impl Fn() + Send + 'static,
        ) -> Result<StopHotkey, HotkeyError> {
            let _ = (display, chord, on_press);
            Err(unsupported())
        }

        pub fn chord(&self) -> &str {
            match self.0 {}
        }

        pub fn display(&self) -> &str {
            match self.0 {}
        }
    }

    /// Errors: always [`HotkeyError::NoDisplay`].
    pub fn probe(display: Option<&str>, chord: &str) -> Result<(), HotkeyError> {
        let _ = (display, chord);
        Err(unsupported())
    }
}

/// The agent's presence (drawn cursor, frame, indicator, teach bubble) is a set of
/// X11 overlay windows: Linux only. The same names, constants and button geometry
/// as on Linux; [`presence::Presence::open`] always errors.
pub mod presence {
    use deskpilot_protocol::Result;
    use std::sync::mpsc::Receiver;

    use deskpilot_core::Bounds;

    pub use crate::presence_types::*;

    /// Never constructed here.
    pub struct Presence(std::convert::Infallible);

    impl Presence {
        /// Errors: always (an overlay needs X11 on Linux).
        pub fn open(display: &str, on_stop: Box<dyn Fn() + Send>) -> Result<Presence, String> {
            let _ = (display, on_stop);
            Err("no agent presence: the overlay needs X11 on Linux".into())
        }

        pub fn frame(&self, bounds: Option<Bounds>) {
            let _ = bounds;
            match self.0 {}
        }

        pub fn indicator(&self, text: Option<String>) {
            let _ = text;
            match self.0 {}
        }

        pub fn aim(&self, x: i32, y: i32) {
            let _ = (x, y);
            match self.0 {}
        }

        pub fn press(&self) {
            match self.0 {}
        }

        pub fn clear(&self) {
            match self.0 {}
        }

        pub fn teach(&self, target: Bounds, text: &str) -> Receiver<TeachAnswer> {
            let _ = (target, text);
            match self.0 {}
        }

        pub fn end_teach(&self) {
            match self.0 {}
        }
    }

    /// Errors: always (X11 on Linux only).
    pub fn overlay_windows(display: &str) -> Result<Vec<OverlayWindow>, String> {
        let _ = display;
        Err("overlay windows exist only on X11 on Linux".into())
    }
}

/// Synthetic keyboard and pointer input goes through X11 XTest: Linux only.
pub mod input {
    use deskpilot_protocol::Result;
    use std::convert::Infallible;

    use deskpilot_core::Bounds;
    use deskpilot_protocol::ComputerError;
    use deskpilot_protocol::types::PointerParams;

    /// What the input refusals name.
    const INPUT: &str = "synthetic keyboard and pointer input (X11 XTest)";

    /// A mapped top-level window (the same fields as on Linux).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct TopLevel {
        /// The client window's X id.
        pub xid: u32,
        /// The owning process, when known.
        pub pid: Option<u32>,
        /// The window title; empty when unnamed.
        pub title: String,
        /// The client window's area in screen pixels.
        pub bounds: Bounds,
    }

    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
    pub fn restore_left_keymap(display: &str) -> Result<Vec<u8>> {
        let _ = display;
        Err(ComputerError::platform_unsupported(INPUT))
    }

    /// Nothing is ever left changed here.
    pub fn keymap_left_changed(display: &str) -> Option<(u32, Vec<u8>)> {
        let _ = display;
        None
    }

    /// A connection to an X display, unavailable on this OS: no value of it can exist.
    #[derive(Debug)]
    pub struct XInput {
        never: Infallible,
    }

    impl XInput {
        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn connect(display: Option<&str>) -> Result<XInput> {
            let _ = display;
            Err(ComputerError::platform_unsupported(INPUT))
        }

        /// The display name (unreachable: no connection exists).
        pub fn display(&self) -> &str {
            match self.never {}
        }

        /// The screen size in pixels (unreachable: no connection exists).
        pub fn screen_size(&self) -> (u16, u16) {
            match self.never {}
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn keys_down(&self) -> Result<Vec<u8>> {
            Err(ComputerError::platform_unsupported(INPUT))
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn focused_toplevel(&self) -> Result<Option<TopLevel>> {
            Err(ComputerError::platform_unsupported(INPUT))
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn toplevels(&self) -> Result<Vec<TopLevel>> {
            Err(ComputerError::platform_unsupported(INPUT))
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn activate(&self, xid: u32) -> Result<()> {
            let _ = xid;
            Err(ComputerError::platform_unsupported(INPUT))
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn send_chords(&self, chords: &str) -> Result<u64> {
            let _ = chords;
            Err(ComputerError::platform_unsupported(INPUT))
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn type_text(&self, text: &str) -> Result<u64> {
            let _ = text;
            Err(ComputerError::platform_unsupported(INPUT))
        }

        /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
        pub fn pointer(&self, p: &PointerParams) -> Result<u64> {
            let _ = p;
            Err(ComputerError::platform_unsupported(INPUT))
        }
    }
}

#[cfg(test)]
mod tests {
    use deskpilot_protocol::ErrorCode;

    use super::sandbox::{Sandbox, SandboxOptions};
    use super::*;

    #[tokio::test]
    async fn connect_is_platform_unsupported() {
        let opts = ConnectOptions::from_vars([("DISPLAY", ":91")]);
        let err = LinuxDriver::connect(opts).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::PlatformUnsupported);
        assert!(err.message.contains("AT-SPI2"), "{}", err.message);
        let err = LinuxDriver::from_env().await.unwrap_err();
        assert_eq!(err.code, ErrorCode::PlatformUnsupported);
    }

    #[test]
    fn sandbox_and_input_are_platform_unsupported() {
        let err = Sandbox::start(SandboxOptions::default()).unwrap_err();
        assert_eq!(err.code, ErrorCode::PlatformUnsupported);
        assert_eq!(
            Sandbox::open(90).unwrap_err().code,
            ErrorCode::PlatformUnsupported
        );
        assert!(Sandbox::list().is_empty());
        assert_eq!(
            XInput::connect(Some(":91")).unwrap_err().code,
            ErrorCode::PlatformUnsupported
        );
    }
}

/// The clipboard is the X11 `CLIPBOARD` selection: Linux only.
pub mod clipboard {
    use deskpilot_protocol::ComputerError;
    use deskpilot_protocol::Result;

    /// The argument that makes the deskpilot binary a clipboard holder.
    pub const HOLD_SUBCOMMAND: &str = "clipboard-hold";

    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED`.
    pub fn serve(display: &str, text: &str, ready: impl FnOnce()) -> Result<()> {
        let _ = (display, text, ready);
        Err(ComputerError::platform_unsupported("the clipboard"))
    }
}

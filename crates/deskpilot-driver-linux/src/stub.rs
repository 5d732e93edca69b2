//! Off-Linux stand-in: the same public names as the Linux module, every entry point
//! answering `COMPUTER_PLATFORM_UNSUPPORTED`, so the workspace builds on every OS.

use async_trait::async_trait;
use deskpilot_protocol::types::*;
use deskpilot_protocol::{Driver, DriverError};

/// The Linux driver, unavailable on this OS.
#[derive(Debug, Default)]
pub struct LinuxDriver;

impl LinuxDriver {
    /// Always fails: AT-SPI2 exists only on Linux.
    pub async fn connect_env() -> Result<LinuxDriver, DriverError> {
        Err(DriverError::platform_unsupported("the AT-SPI2 driver"))
    }
}

macro_rules! unsupported {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[async_trait]
        impl Driver for LinuxDriver {
            $(async fn $name(&self, $($arg: $ty),*) -> Result<$ret, DriverError> {
                $(let _ = $arg;)*
                Err(DriverError::platform_unsupported("the AT-SPI2 driver"))
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

/// Sandboxes need Xvfb and AT-SPI2: Linux only.
pub mod sandbox {
    use deskpilot_protocol::DriverError;

    /// Sandbox options (unused off Linux).
    #[derive(Debug, Clone, Default)]
    pub struct SandboxOptions {
        pub display: Option<u32>,
        pub detach: bool,
    }

    /// A sandbox desktop, unavailable on this OS.
    #[derive(Debug)]
    pub struct Sandbox;

    impl Sandbox {
        pub fn start(_opts: SandboxOptions) -> Result<Sandbox, DriverError> {
            Err(DriverError::platform_unsupported("the sandbox desktop"))
        }
    }
}

//! Off-Windows stand-in for [`WindowsDriver`]: the same public names, so every OS
//! builds the crate. Compiled off Windows, and on Windows under `--cfg
//! deskpilot_stub`.
//!
//! The constructor answers `COMPUTER_PLATFORM_UNSUPPORTED`; no driver value can
//! exist (it holds an uninhabited field), so the trait methods, which also answer
//! `COMPUTER_PLATFORM_UNSUPPORTED`, are never reached through a value. It must never
//! panic and never pretend to succeed.

use std::convert::Infallible;

use async_trait::async_trait;
use deskpilot_protocol::Result;
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver};

/// What the refusals name.
const DRIVER: &str = "the Windows driver (UI Automation / MSAA)";

/// The Windows driver, unavailable on this OS: no value of it can exist.
pub struct WindowsDriver {
    never: Infallible,
}

impl std::fmt::Debug for WindowsDriver {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.never {}
    }
}

impl WindowsDriver {
    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED` (Win32 exists only on Windows).
    pub fn new() -> Result<WindowsDriver> {
        Err(ComputerError::platform_unsupported(DRIVER))
    }
}

/// Implements every [`Driver`] method as a `COMPUTER_PLATFORM_UNSUPPORTED` refusal.
macro_rules! unsupported {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[async_trait]
        impl Driver for WindowsDriver {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stand_in_refuses_to_exist() {
        let e = WindowsDriver::new().unwrap_err();
        assert_eq!(e.code, deskpilot_protocol::ErrorCode::PlatformUnsupported);
        assert!(e.message.contains("Windows driver"), "{}", e.message);
    }
}

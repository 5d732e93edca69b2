//! Off-macOS stand-in: [`MacDriver`] and [`MacOptions`] with the macOS names and
//! signatures, so the workspace builds on every OS.
//!
//! The constructor answers `COMPUTER_PLATFORM_UNSUPPORTED`; it must never panic and
//! never pretend to succeed. A [`MacDriver`] holds an uninhabited field, so no value
//! of it exists here and its trait methods are provably unreachable.

use std::convert::Infallible;

use async_trait::async_trait;
use deskpilot_protocol::Result;
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver};

/// What the refusals name.
const DRIVER: &str = "the macOS Accessibility (AX) driver";

/// Options of the macOS driver (see the macOS build for their meaning).
#[derive(Debug, Clone, Default)]
pub struct MacOptions {
    /// Ask macOS to show its Accessibility prompt when the process is not trusted.
    pub prompt: bool,
}

/// The macOS driver, unavailable on this OS: no value of it can exist.
pub struct MacDriver {
    never: Infallible,
}

impl std::fmt::Debug for MacDriver {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.never {}
    }
}

impl MacDriver {
    /// Errors: always `COMPUTER_PLATFORM_UNSUPPORTED` (AX exists only on macOS).
    pub fn connect(opts: MacOptions) -> Result<MacDriver> {
        let _ = opts;
        Err(ComputerError::platform_unsupported(DRIVER))
    }
}

macro_rules! unreachable_methods {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[async_trait]
        impl Driver for MacDriver {
            $(async fn $name(&self, $($arg: $ty),*) -> Result<$ret> {
                $(let _ = $arg;)*
                match self.never {}
            })*
        }
    };
}

unreachable_methods! {
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
    use deskpilot_protocol::ErrorCode;

    use super::*;

    #[test]
    fn connecting_off_macos_is_platform_unsupported() {
        let e = MacDriver::connect(MacOptions::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::PlatformUnsupported);
        assert!(e.message.contains("macOS"), "{}", e.message);
    }
}

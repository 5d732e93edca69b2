//! deskpilot-driver-linux: the Linux backend.
//!
//! Reads and operates applications through AT-SPI2 (the `atspi` crate on zbus 5),
//! falls back to X11 XTest for keyboard and pointer input only when no semantic path
//! exists (and says so), and starts isolated sandbox desktops (Xvfb + session D-Bus +
//! accessibility bus). It implements [`deskpilot_protocol::Driver`] and makes no policy
//! decision. Off Linux every entry point answers `COMPUTER_PLATFORM_UNSUPPORTED`.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(not(target_os = "linux"))]
mod stub;
#[cfg(not(target_os = "linux"))]
pub use stub::*;

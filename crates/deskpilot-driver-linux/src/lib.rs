//! deskpilot-driver-linux: the Linux backend.
//!
//! Reads and operates applications through AT-SPI2 (the `atspi` crate on zbus 5),
//! falls back to X11 XTest for keyboard and pointer input only when no semantic path
//! exists (and says so), and starts isolated sandbox desktops (Xvfb + session D-Bus +
//! accessibility bus). It implements [`deskpilot_protocol::Driver`] and makes no policy
//! decision. Off Linux every entry point answers `COMPUTER_PLATFORM_UNSUPPORTED`.
//!
//! Building with `RUSTFLAGS="--cfg deskpilot_stub"` compiles the off-Linux stand-in
//! on Linux too, so the build of every other OS can be checked without its target.
//!
//! No `unsafe` here: what needs the OS directly goes through `deskpilot_os`.

#![forbid(unsafe_code)]

mod desktop_types;
mod hotkey_types;
pub mod loopback_sshd;
mod presence_types;

#[cfg(all(target_os = "linux", not(deskpilot_stub)))]
mod linux;
#[cfg(all(target_os = "linux", not(deskpilot_stub)))]
pub use linux::*;

#[cfg(any(not(target_os = "linux"), deskpilot_stub))]
mod stub;
#[cfg(any(not(target_os = "linux"), deskpilot_stub))]
pub use stub::*;

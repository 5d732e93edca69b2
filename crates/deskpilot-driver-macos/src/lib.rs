//! deskpilot-driver-macos: the macOS backend (docs/ARCHITECTURE.md §6c).
//!
//! Reads and operates applications through the Accessibility API (`AXUIElement`, via
//! the `objc2-application-services` bindings), and falls back to CGEvent keyboard and
//! pointer input only where no semantic path exists (and says so). It implements
//! [`deskpilot_protocol::Driver`] as [`MacDriver`] and makes no policy decision.
//!
//! Layout: the pure parts — the role table ([`roles`]), the state map ([`states`]),
//! attribute values, names and text caps ([`values`]), the op → AX method choice
//! ([`actions`]), coordinates ([`geometry`]), handles ([`handle`]), the bounded walk
//! ([`walk`]), input plans ([`keyplan`]) and settling ([`settle`]) — build and are
//! tested on every OS. The `macos` module (AX, CoreGraphics, the driver) builds on
//! macOS only; elsewhere [`MacDriver`] is a stand-in whose constructor answers
//! `COMPUTER_PLATFORM_UNSUPPORTED`.
//!
//! `unsafe` lives only in `macos::ax` and `macos::cg`, the two FFI edges; everything
//! else is safe code.

#![deny(unsafe_code)]

pub mod actions;
pub mod geometry;
pub mod handle;
pub mod keyplan;
pub mod roles;
pub mod settle;
pub mod states;
pub mod values;
pub mod walk;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::{MacDriver, MacOptions};

#[cfg(not(target_os = "macos"))]
mod stub;
#[cfg(not(target_os = "macos"))]
pub use stub::{MacDriver, MacOptions};

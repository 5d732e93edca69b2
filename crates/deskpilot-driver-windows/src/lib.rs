//! deskpilot-driver-windows: the Windows backend (docs/ARCHITECTURE.md §6b).
//!
//! Reads and operates Win32 applications through the accessibility interfaces the
//! system offers — MSAA (`IAccessible`) for names, roles, states, values and default
//! actions, the standard controls' own USER32 messages for what MSAA leaves out
//! (list and combo items, menus, setting a text) — and falls back to `SendInput`
//! keyboard and pointer input only when no such path exists, saying so. UI
//! Automation's client (`CUIAutomation`) is probed and reported by `hello`; Wine
//! 8.0 does not provide it (§6b lists what it answers). It implements
//! [`deskpilot_protocol::Driver`] and makes no policy decision.
//!
//! Every OS builds this crate: the pure parts (role and state tables, handles,
//! method choice, tree assembly, key map) are unit-tested everywhere; the Windows
//! module is `cfg(windows)`, and elsewhere [`WindowsDriver`] is a stub whose every
//! method answers `COMPUTER_PLATFORM_UNSUPPORTED`.

pub mod choose;
pub mod facts;
pub mod handle;
pub mod keymap;
pub mod role_map;
pub mod state_map;

#[cfg(all(windows, not(deskpilot_stub)))]
mod win;
#[cfg(all(windows, not(deskpilot_stub)))]
pub use win::driver::WindowsDriver;

#[cfg(any(not(windows), deskpilot_stub))]
mod stub;
#[cfg(any(not(windows), deskpilot_stub))]
pub use stub::WindowsDriver;

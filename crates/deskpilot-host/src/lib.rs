//! deskpilot-host: the session that puts the snapshot engine and a driver together.
//!
//! It owns which window a call targets, the refs that stay valid from one call to the
//! next (persisted in a per-desktop state file, see [`store`]), observe with a budget,
//! act with settle and a diff, find, and wait. It decides nothing about what may be
//! touched beyond what a caller asked for; grants and refusals sit above it.

pub mod session;
pub mod store;

pub use session::{ActOutcome, Change, KeysOutcome, Observation, ObserveOptions, Session, Target};
pub use store::{SessionState, StateStore};

//! deskpilot-policy: what may be touched, decided by the host, as pure rules.
//!
//! Owns grants ([`grant`]), absolute and user refusals ([`refusal`]), permission modes
//! ([`mode`]), the irreversible-action rules ([`irreversible`]), single-use approvals
//! ([`approval`]) and the shape of audit records ([`audit`]). Nothing here performs
//! I/O or reads a clock: callers pass the time (ms since any fixed epoch) and the facts
//! (window owner, focused element), so every rule is tested without a desktop.
//!
//! Nothing a model says or a window shows can widen what these rules allow: their
//! inputs are the user's configuration and facts measured by the host, never UI text
//! interpreted as instructions.

pub mod approval;
pub mod audit;
pub mod grant;
pub mod irreversible;
pub mod mode;
pub mod refusal;

pub use deskpilot_protocol::{DriverError, ErrorCode};

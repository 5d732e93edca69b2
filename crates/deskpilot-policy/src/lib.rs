//! deskpilot-policy: what may be touched, decided by the host, as pure rules.
//!
//! Owns grants ([`grant`]), absolute and user refusals ([`refusal`]), permission modes
//! ([`mode`]) and allow-list matching ([`allow`]), the irreversible-action rules
//! ([`irreversible`]), where input lands and what it activates ([`input`]), what
//! `launch` never starts ([`launch`]), capability tiers ([`tier`]), single-use approvals ([`approval`]), the shape
//! of audit records ([`audit`]) and what the host keeps and shows of a grant
//! ([`view`]: policy state, grant view, coordinate basis). Nothing here performs
//! I/O or reads a clock: callers pass the time (ms since any fixed epoch) and the facts
//! (window owner, focused element), so every rule is tested without a desktop.
//!
//! Nothing a model says or a window shows can widen what these rules allow: their
//! inputs are the user's configuration and facts measured by the host, never UI text
//! interpreted as instructions.

#![forbid(unsafe_code)]

pub mod allow;
pub mod approval;
pub mod audit;
pub mod clipboard;
pub mod console;
pub mod files;
pub mod grant;
pub mod input;
pub mod irreversible;
pub mod launch;
pub mod mode;
pub mod reach;
pub mod refusal;
pub mod system_keys;
pub mod target;
pub mod tier;
pub mod view;

pub use deskpilot_protocol::{ComputerError, ErrorCode};

//! deskpilot-host: the session that puts the snapshot engine and a driver together,
//! and the host that puts the user's policy around it.
//!
//! [`session`] owns which window a call targets, the refs that stay valid from one call
//! to the next (persisted in a per-desktop state file, see [`store`]), observe with a
//! budget, act with settle and a diff, find, and wait; it decides nothing about what
//! may be touched. [`host`] does: grants, refusals, modes, approvals and the audit
//! (rules from `deskpilot-policy`), with the user's [`config`], the [`audit`] log and
//! the cross-process [`control`] plumbing (grant lock, stop record, control sockets).
//! Every tool a caller offers an agent goes through [`host::Host`].
//! [`listing`] is the application list as text, the same for every caller.
//! [`remote`] is a driver on another machine, reached through a command's stdio, and
//! [`device`] names which machine (`--device`).

#![forbid(unsafe_code)]

pub mod apps;
pub mod audit;
pub mod config;
pub mod control;
pub mod device;
pub mod guard;
pub mod host;
pub mod listing;
pub mod presence;
pub mod redacting;
pub mod remote;
pub mod session;
pub mod store;

pub use host::{Host, HostOptions, own_paths, protected_dirs};
pub use session::{ActOutcome, Change, KeysOutcome, Observation, ObserveOptions, Session, Target};
pub use store::{SessionState, StateStore};

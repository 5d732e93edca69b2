//! deskpilot-core: the pure heart of deskpilot.
//!
//! It owns the node model ([`Node`], [`Role`], [`State`], [`Op`], [`Bounds`]), the
//! budgeted text render of a window, element refs, the diff after an action,
//! redaction of secrets and the token estimate. It performs no I/O of any kind: no
//! D-Bus, no adb, no files, no clock. Drivers translate platform trees into [`Node`];
//! the host feeds them through this crate.

#![forbid(unsafe_code)]

mod budget;
pub mod diff;
pub mod error;
#[cfg(any(test, feature = "test-support"))]
pub mod fixture;
pub mod hash;
pub mod names;
pub mod node;
pub mod op;
pub mod redact;
pub mod refs;
pub mod render;
pub mod role;
pub mod sanitize;
pub mod state;
pub mod tokens;
pub mod toolkit;
mod view;

pub use error::CoreError;
pub use node::{Bounds, DocumentView, Handle, Node, PagedText, TableInfo, ValueRange};
pub use op::Op;
pub use role::Role;
pub use state::{State, StateSet};

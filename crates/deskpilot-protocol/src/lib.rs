//! deskpilot-protocol: the driver protocol, with no transport.
//!
//! JSON-RPC 2.0 messages, one per line (NDJSON), between a host and a driver process
//! (`deskpilot driver`, possibly over `ssh`). This crate owns the typed params and
//! results of every method ([`types`]), the `COMPUTER_*` codes ([`ErrorCode`]) and
//! their JSON-RPC error objects, the line codec, and the [`Driver`] trait that
//! in-process drivers and the JSON-RPC client both implement. It never opens a
//! socket or spawns a process.

pub mod code;
pub mod driver;
pub mod error;
pub mod types;

pub use code::ErrorCode;
pub use driver::Driver;
pub use error::DriverError;

//! deskpilot-protocol: the driver protocol, with no transport.
//!
//! JSON-RPC 2.0 messages, one per line (NDJSON), between a host and a driver process
//! (`deskpilot driver`, possibly over `ssh`). This crate owns the typed params and
//! results of every method ([`types`], [`methods`]), the `COMPUTER_*` codes
//! ([`ErrorCode`]) and their JSON-RPC error objects ([`wire_error`]), the JSON-RPC
//! envelope ([`jsonrpc`]), the line codec ([`codec`]), serving a [`Driver`] and
//! calling one over any byte stream ([`rpc`]), and the [`Driver`] trait that
//! in-process drivers and the JSON-RPC client both implement. It never opens a
//! socket or spawns a process: streams are always given by the caller.
//!
//! With feature `test-support`, `fixture_driver::FixtureDriver` serves recorded
//! trees from memory.

#![forbid(unsafe_code)]

pub mod code;
pub mod codec;
pub mod driver;
pub mod error;
#[cfg(any(test, feature = "test-support"))]
pub mod fixture_driver;
pub mod jsonrpc;
pub mod keys;
pub mod methods;
pub mod rpc;
pub mod types;
pub mod wire_error;

pub use code::ErrorCode;
pub use driver::Driver;
pub use error::{ComputerError, Result};
pub use methods::Method;

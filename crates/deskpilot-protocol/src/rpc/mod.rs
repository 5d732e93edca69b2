//! The driver protocol over a byte stream: [`serve`] answers requests with a
//! [`crate::Driver`], [`RpcDriver`] is a [`crate::Driver`] that sends them.
//!
//! Both take generic tokio streams given by the caller (a child process's pipes,
//! stdio, an ssh channel, an in-memory duplex in tests); this module never spawns a
//! process or opens a socket. Both spawn tokio tasks, so they must run inside a tokio
//! runtime. Logs go through `tracing`, never to stdout.

mod client;
mod server;

pub use client::{DEFAULT_CALL_TIMEOUT, RpcDriver, RpcOptions};
pub use server::{DEFAULT_MAX_IN_FLIGHT, ServeOptions, serve, serve_with};

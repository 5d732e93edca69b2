//! The tools' handlers, one `impl Server` block per group: each parses nothing (the
//! table in `crate::tools` does), calls the host, and renders the result.

mod act;
mod read;
mod task;

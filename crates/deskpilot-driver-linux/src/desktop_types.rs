//! The desktop a command works on, as plain data: the same definition on Linux and
//! in the off-Linux stand-in.

use std::path::PathBuf;

/// The display and session bus of the desktop to work on.
#[derive(Debug, Clone)]
pub struct Desktop {
    pub display: String,
    pub bus_address: String,
    /// The sandbox display number when the desktop is a deskpilot sandbox.
    pub sandbox: Option<u32>,
    /// The sandbox's directory: the desktop's ref state lives there and goes with it.
    pub sandbox_dir: Option<PathBuf>,
    /// The variables that place a process on this desktop (for a sandbox: its whole
    /// environment, so apps launched through the driver join it).
    pub vars: Vec<(String, String)>,
}

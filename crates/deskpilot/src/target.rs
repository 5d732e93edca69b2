//! Which desktop a command talks to: an explicit sandbox, the caller's own session
//! ($DISPLAY + $DBUS_SESSION_BUS_ADDRESS), or the only running sandbox.

use deskpilot_driver_linux::sandbox::Sandbox;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// The display and session bus of the desktop to work on.
#[derive(Debug, Clone)]
pub struct Desktop {
    pub display: String,
    pub bus_address: String,
    /// The sandbox display number when the desktop is a deskpilot sandbox.
    pub sandbox: Option<u32>,
    /// The sandbox's directory: the desktop's ref state lives there and goes with it.
    pub sandbox_dir: Option<std::path::PathBuf>,
    /// The variables that place a process on this desktop (for a sandbox: its whole
    /// environment, so apps launched through the driver join it).
    pub vars: Vec<(String, String)>,
}

/// Resolves the desktop: `--sandbox N` first; else the caller's session when both
/// `DISPLAY` and `DBUS_SESSION_BUS_ADDRESS` are set; else the only live sandbox.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for an unknown sandbox;
/// `COMPUTER_ACCESSIBILITY_DISABLED` when there is no desktop to talk to.
pub fn resolve(sandbox: Option<u32>) -> Result<Desktop, ComputerError> {
    if let Some(n) = sandbox {
        let sb = Sandbox::open(n)?;
        if !sb.is_alive() {
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "the sandbox on display :{n} is no longer running; start one with `deskpilot sandbox start`"
                ),
            ));
        }
        return Ok(Desktop {
            display: sb.display(),
            bus_address: sb.state().bus_address.clone(),
            sandbox: Some(n),
            sandbox_dir: Some(sb.state().dir.clone()),
            vars: sb.env().into_iter().collect(),
        });
    }
    let display = std::env::var("DISPLAY").ok().filter(|s| !s.is_empty());
    let bus = std::env::var("DBUS_SESSION_BUS_ADDRESS")
        .ok()
        .filter(|s| !s.is_empty());
    if let (Some(display), Some(bus_address)) = (display, bus) {
        // A shell that joined a sandbox (`eval "$(deskpilot sandbox env)"`) is that
        // sandbox: same refs as `--sandbox N`.
        if let Some(n) = sandbox_of_bus(&bus_address) {
            return resolve(Some(n));
        }
        let vars = [
            "DISPLAY",
            "DBUS_SESSION_BUS_ADDRESS",
            "WAYLAND_DISPLAY",
            "AT_SPI_BUS_ADDRESS",
        ]
        .iter()
        .filter_map(|k| {
            std::env::var(k)
                .ok()
                .filter(|v| !v.is_empty())
                .map(|v| (k.to_string(), v))
        })
        .collect();
        return Ok(Desktop {
            display,
            bus_address,
            sandbox: None,
            sandbox_dir: None,
            vars,
        });
    }
    let live: Vec<u32> = Sandbox::list()
        .into_iter()
        .map(|s| s.display)
        .filter(|&n| Sandbox::open(n).is_ok_and(|sb| sb.is_alive()))
        .collect();
    match live.as_slice() {
        [n] => resolve(Some(*n)),
        [] => Err(ComputerError::new(
            ErrorCode::AccessibilityDisabled,
            "no desktop to work on: DISPLAY and DBUS_SESSION_BUS_ADDRESS are not set and no sandbox runs; start one with `deskpilot sandbox start`",
        )),
        many => Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!(
                "several sandboxes run (displays {}); choose one with --sandbox N",
                many.iter()
                    .map(|n| format!(":{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The sandbox whose session bus is `bus`, if any.
pub fn sandbox_of_bus(bus: &str) -> Option<u32> {
    Sandbox::list()
        .into_iter()
        .find(|s| s.bus_address == bus)
        .map(|s| s.display)
}

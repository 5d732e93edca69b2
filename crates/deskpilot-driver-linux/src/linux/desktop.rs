//! Which desktop a command talks to — an explicit sandbox, the caller's own session
//! ($DISPLAY + $DBUS_SESSION_BUS_ADDRESS), or the only running sandbox — and the
//! driver connected to it. Makes no policy decision: what its apps must not see is
//! the caller's to say.

use std::path::PathBuf;

use deskpilot_protocol::{ComputerError, ErrorCode};

use super::atspi::{Confinement, ConnectOptions};
use super::driver::LinuxDriver;
use super::sandbox::Sandbox;
pub use crate::desktop_types::Desktop;
use deskpilot_protocol::Result;

impl Desktop {
    /// The desktop of a running sandbox: its display, session bus and whole
    /// environment.
    pub fn of_sandbox(sb: &Sandbox) -> Desktop {
        Desktop {
            display: sb.display(),
            bus_address: sb.state().bus_address.clone(),
            sandbox: Some(sb.state().display),
            sandbox_dir: Some(sb.state().dir.clone()),
            vars: sb.env().into_iter().collect(),
        }
    }
}

/// Connects the Linux driver to `desktop`. On a sandbox, the apps the driver
/// launches cannot see `hidden` (directories, then files: deskpilot's own, as
/// `deskpilot_host::own_paths` names them; docs/ARCHITECTURE.md §12).
///
/// Errors: those of [`LinuxDriver::connect`].
pub async fn connect(
    desktop: &Desktop,
    hidden: (Vec<PathBuf>, Vec<PathBuf>),
) -> Result<LinuxDriver> {
    let mut opts = ConnectOptions::from_vars(desktop.vars.clone());
    if let Some(dir) = &desktop.sandbox_dir {
        let (dirs, files) = hidden;
        opts.confine = Some(Confinement::for_sandbox(dir, desktop.sandbox, dirs, files));
    }
    LinuxDriver::connect(opts).await
}

/// Resolves the desktop: `--sandbox N` first; else the caller's session when
/// `DBUS_SESSION_BUS_ADDRESS` and `DISPLAY` (or, in a Wayland session without X,
/// `WAYLAND_DISPLAY`: the desktop is then named `wayland:SOCKET`) are set; else the
/// only live sandbox.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for an unknown sandbox;
/// `COMPUTER_ACCESSIBILITY_DISABLED` when there is no desktop to talk to.
pub fn resolve(sandbox: Option<u32>) -> Result<Desktop> {
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
        return Ok(Desktop::of_sandbox(&sb));
    }
    let var = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
    // A Wayland session without XWayland has no DISPLAY: it is still the caller's
    // desktop, named by its socket (never some sandbox that happens to run).
    let display = var("DISPLAY").or_else(|| var("WAYLAND_DISPLAY").map(|w| format!("wayland:{w}")));
    let bus = var("DBUS_SESSION_BUS_ADDRESS");
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
            "no desktop to work on: DBUS_SESSION_BUS_ADDRESS and DISPLAY (or WAYLAND_DISPLAY) are not set and no sandbox runs; start one with `deskpilot sandbox start`",
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

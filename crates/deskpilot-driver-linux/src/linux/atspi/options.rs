//! How the driver connects and the limits it reads under.
//!
//! Owns [`ConnectOptions`]: where the buses and the display are, and every bound the
//! driver applies (time per D-Bus call, children per node, nodes per snapshot). It
//! reads environment variables only in [`ConnectOptions::from_env`]; everything else
//! takes explicit values, because several sandboxes can be driven from one process.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default per-call timeout: 1,500 ms. A responsive GTK or LibreOffice main loop
/// answers a single call in well under 10 ms here; 1.5 s leaves room for a loaded
/// machine and still lets `apps.list` name a frozen app within ~2 s.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_millis(1_500);
/// Default timeout of the one bulk `Cache.GetItems` call per application: 5,000 ms.
/// Measured here: mousepad 322 objects in ~6 ms, LibreOffice Calc ~1,850 objects in
/// 80–135 ms; the ceiling covers apps with ten times as many objects.
pub const DEFAULT_BULK_TIMEOUT: Duration = Duration::from_millis(5_000);
/// Default cap on children read per node (docs/ARCHITECTURE.md §6): 500.
pub const DEFAULT_CHILD_CAP: u32 = 500;
/// Default cap on nodes per snapshot: 5,000 (the protocol's `max_nodes` default).
pub const DEFAULT_MAX_NODES: u32 = 5_000;
/// Default number of D-Bus calls in flight while reading details: 24. An app answers
/// calls one by one on its main loop; more in flight only queues at the app, fewer
/// leaves round-trip gaps.
pub const DEFAULT_CONCURRENCY: usize = 24;
/// Default number of characters read from a text field: 2,000 (the render keeps far
/// fewer; the total length is reported separately).
pub const DEFAULT_TEXT_CAP: usize = 2_000;

/// Where to connect and how much to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Session bus address (`DBUS_SESSION_BUS_ADDRESS`). Used to ask `org.a11y.Bus`
    /// for the accessibility bus and to read `org.a11y.Status.IsEnabled`.
    pub session_bus: Option<String>,
    /// Accessibility bus address (`AT_SPI_BUS_ADDRESS`); when set, the session bus is
    /// not asked for it.
    pub a11y_bus: Option<String>,
    /// X display (`DISPLAY`, e.g. `:91`) for the keyboard and pointer fallback.
    pub display: Option<String>,
    /// `WAYLAND_DISPLAY`, only to report that synthetic input is unavailable.
    pub wayland_display: Option<String>,
    /// Environment given to programs started by `apps.launch`, on top of this
    /// process's own. [`ConnectOptions::from_vars`] puts every variable it was given
    /// here, so launched apps join the same sandbox.
    pub launch_env: Vec<(String, String)>,
    /// Time allowed to every single D-Bus call.
    pub call_timeout: Duration,
    /// Time allowed to one `Cache.GetItems` call.
    pub bulk_timeout: Duration,
    /// Children read per node at most; the rest are counted as capped.
    pub child_cap: u32,
    /// Nodes per snapshot by default (a request may ask for another number, up to
    /// `MAX_READ_NODES`: a search reads a long list whole).
    pub max_nodes: u32,
    /// D-Bus calls in flight at once while reading details.
    pub concurrency: usize,
    /// Characters of text read per text field.
    pub text_cap: usize,
    /// Read with one `Cache.GetItems` per application where the application offers
    /// it (default `true`); `false` always walks object by object, as for an
    /// application without a cache (for diagnosis and tests of that path).
    pub prefer_cache: bool,
    /// Directories programs started by `apps.launch` must not see (default `None`:
    /// they see what this process sees). Applied with bubblewrap where it is
    /// installed and works (docs/ARCHITECTURE.md §12).
    pub confine: Option<Confinement>,
}

/// What a launched program is kept from seeing: each `hide` directory is replaced
/// by an empty, private tmpfs in the program's own mount namespace, each `mask` file
/// that exists by an empty read-only file, then each `keep` path that exists (a
/// socket, a directory) is bound back at its own place. Absolute paths only; pure
/// data, so it means the same wherever it is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Directories replaced by an empty tmpfs (deskpilot's config, state, audit and
    /// runtime directories).
    pub hide: Vec<PathBuf>,
    /// Files of deskpilot's in directories that are not deskpilot's own (a config
    /// at `/etc/x/c.toml`): replaced by an empty read-only file.
    pub mask: Vec<PathBuf>,
    /// Paths under a hidden directory that the program needs, bound back as they are.
    pub keep: Vec<PathBuf>,
}

impl Confinement {
    /// The confinement of an app launched into the sandbox whose directory is
    /// `sandbox_dir` on display `:display`: `hide` and `mask` as given, plus the X
    /// socket directory (`/tmp/.X11-unix`: other displays' sockets) and the user's
    /// own runtime directory (`/run/user/UID`: the real session bus, deskpilot's
    /// control sockets). Kept are the sandbox's X socket, its session bus socket
    /// (`bus`) and the app's own XDG directories (`config`, `cache`, `data`,
    /// `runtime` — where the accessibility bus socket lives), and nothing else of the
    /// sandbox directory (not its `sandbox.json`, state files or logs).
    pub fn for_sandbox(
        sandbox_dir: &Path,
        display: Option<u32>,
        mut hide: Vec<PathBuf>,
        mask: Vec<PathBuf>,
    ) -> Confinement {
        let mut keep: Vec<PathBuf> = ["bus", "config", "cache", "data", "runtime"]
            .iter()
            .map(|p| sandbox_dir.join(p))
            .collect();
        if let Some(n) = display {
            hide.push(PathBuf::from("/tmp/.X11-unix"));
            keep.push(PathBuf::from(format!("/tmp/.X11-unix/X{n}")));
        }
        hide.push(PathBuf::from(format!(
            "/run/user/{}",
            deskpilot_os::current_uid()
        )));
        Confinement { hide, mask, keep }
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            session_bus: None,
            a11y_bus: None,
            display: None,
            wayland_display: None,
            launch_env: Vec::new(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            bulk_timeout: DEFAULT_BULK_TIMEOUT,
            child_cap: DEFAULT_CHILD_CAP,
            max_nodes: DEFAULT_MAX_NODES,
            concurrency: DEFAULT_CONCURRENCY,
            text_cap: DEFAULT_TEXT_CAP,
            prefer_cache: true,
            confine: None,
        }
    }
}

impl ConnectOptions {
    /// Options from this process's environment (`DBUS_SESSION_BUS_ADDRESS`,
    /// `AT_SPI_BUS_ADDRESS`, `DISPLAY`, `WAYLAND_DISPLAY`), default limits, and an
    /// empty `launch_env` (launched programs inherit the process environment).
    pub fn from_env() -> Self {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        ConnectOptions {
            session_bus: get("DBUS_SESSION_BUS_ADDRESS"),
            a11y_bus: get("AT_SPI_BUS_ADDRESS"),
            display: get("DISPLAY"),
            wayland_display: get("WAYLAND_DISPLAY"),
            ..ConnectOptions::default()
        }
    }

    /// Options from explicit variables (for example a sandbox's environment), ignoring
    /// this process's environment. The same four variables as
    /// [`ConnectOptions::from_env`] are read; all pairs become `launch_env`.
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let launch_env: Vec<(String, String)> = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let get = |k: &str| {
            launch_env
                .iter()
                .rev()
                .find(|(key, v)| key == k && !v.is_empty())
                .map(|(_, v)| v.clone())
        };
        ConnectOptions {
            session_bus: get("DBUS_SESSION_BUS_ADDRESS"),
            a11y_bus: get("AT_SPI_BUS_ADDRESS"),
            display: get("DISPLAY"),
            wayland_display: get("WAYLAND_DISPLAY"),
            launch_env: launch_env.clone(),
            ..ConnectOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_vars_reads_only_the_given_pairs() {
        let o = ConnectOptions::from_vars([
            ("DISPLAY", ":93"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/tmp/x"),
            ("GTK_MODULES", "gail:atk-bridge"),
            ("WAYLAND_DISPLAY", ""),
        ]);
        assert_eq!(o.display.as_deref(), Some(":93"));
        assert_eq!(o.session_bus.as_deref(), Some("unix:path=/tmp/x"));
        assert_eq!(o.a11y_bus, None);
        assert_eq!(o.wayland_display, None);
        assert_eq!(o.launch_env.len(), 4);
        assert_eq!(o.call_timeout, Duration::from_millis(1_500));
        assert_eq!(o.child_cap, 500);
        assert_eq!(o.max_nodes, 5_000);
    }
}

//! Sandbox desktops: an isolated X display with its own session D-Bus and
//! accessibility bus, so an agent (or a test) works without touching the user's desktop.
//!
//! A sandbox is Xvfb on display `:N`, a `dbus-daemon --session` listening on a socket in
//! the sandbox directory, `at-spi-bus-launcher` with `org.a11y.Status.IsEnabled` turned
//! on, and (when installed) the `openbox` window manager, which gives windows real
//! focus and `_NET_ACTIVE_WINDOW`. Each sandbox lives in its own directory
//! ([`sandboxes_root`]`/sandbox-N`, by default `/tmp/deskpilot-<uid>/sandbox-N`, or
//! under `$TMPDIR` when that is set) with a
//! `sandbox.json` state file naming its processes, so a later command can join it
//! (`deskpilot sandbox env`) or stop it (`deskpilot sandbox stop`).
//!
//! Every process started here, and every process they start, carries the environment
//! variable `DESKPILOT_SANDBOX=<directory>`; [`Sandbox::stop`] ends the process groups
//! it recorded and then any process still carrying that marker (D-Bus-activated
//! services), so nothing is left behind. Sandboxes on different displays run side by
//! side. This module never touches the user's own display or buses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use deskpilot_os::{Signal, pid_alive};

use crate::atspi::Confinement;
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::{Deserialize, Serialize};

/// First display number tried when none is requested. High enough to stay clear of
/// the displays a desktop session uses (`:0`, `:1`, `:10`+ for ssh forwarding).
pub const FIRST_DISPLAY: u32 = 90;
/// Displays tried after [`FIRST_DISPLAY`] before giving up.
const DISPLAY_ATTEMPTS: u32 = 200;
/// How many sandboxes this process has started (the offset of the next search).
static NEXT_DISPLAY: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// How long each daemon gets to become ready. Xvfb starts in ~100 ms here; the
/// ceiling covers a loaded 2-core machine.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Name of the marker variable that every sandbox process inherits.
pub const MARKER_VAR: &str = "DESKPILOT_SANDBOX";

/// How to start a sandbox.
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// Display number; `None` picks the first free one from [`FIRST_DISPLAY`] (a
    /// process's later sandboxes start their search one further on each).
    pub display: Option<u32>,
    /// Screen size in pixels (default 1280×800, 24-bit).
    pub width: u32,
    pub height: u32,
    /// Start a window manager (openbox) when installed (default true).
    pub window_manager: bool,
    /// Keep the processes running when the [`Sandbox`] value is dropped (the CLI's
    /// `sandbox start`); otherwise dropping it stops everything (tests, demo).
    pub detach: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            display: None,
            width: 1280,
            height: 800,
            window_manager: true,
            detach: false,
        }
    }
}

/// What a sandbox is made of; persisted as `sandbox.json` in its directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxState {
    /// X display number (`DISPLAY=:N`).
    pub display: u32,
    /// `DBUS_SESSION_BUS_ADDRESS` of the sandbox's session bus.
    pub bus_address: String,
    /// The sandbox directory (also the value of [`MARKER_VAR`]).
    pub dir: PathBuf,
    /// Process ids of the sandbox's daemons and launched apps; each leads its own
    /// process group.
    pub pids: Vec<u32>,
    /// Whether a window manager runs.
    pub window_manager: bool,
}

/// A running sandbox desktop.
#[derive(Debug)]
pub struct Sandbox {
    state: SandboxState,
    detach: bool,
    stopped: bool,
    /// Directories apps started by [`Sandbox::spawn`] must not see.
    hide: Vec<PathBuf>,
    /// Files of deskpilot's outside its own directories that they must not see.
    mask: Vec<PathBuf>,
    /// Paths under a hidden directory bound back for them ([`Sandbox::keep_for_apps`]).
    keep: Vec<PathBuf>,
    /// Environment variables not passed to them ([`Sandbox::withhold_env`]).
    withheld: Vec<String>,
}

/// The session bus config of a sandbox: the policy of Debian's `session.conf`
/// (anyone may own any name and send anywhere) without `<standard_session_servicedirs/>`
/// or any service directory, and with `UpdateActivationEnvironment` denied: no
/// process is ever started by the bus, so none escapes an app's confinement that
/// way (docs/ARCHITECTURE.md §12).
/// `address` is the `<listen>` address (XML-escaped here).
pub fn session_bus_config(address: &str) -> String {
    let address = address
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>{address}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus" send_member="UpdateActivationEnvironment"/>
  </policy>
</busconfig>
"#
    )
}

/// The root directory under which sandboxes keep their state: the runtime directory
/// of [`deskpilot_os::runtime_dir`] — `$DESKPILOT_RUNTIME_DIR` when set and non-empty,
/// else `$TMPDIR/deskpilot-<uid>` when `$TMPDIR` is absolute, else
/// `/tmp/deskpilot-<uid>` — the same directory the host keeps its state in, so the
/// host recognises paths inside a sandbox. Created mode 0700 by [`Sandbox::start`].
/// Deliberately not `$XDG_RUNTIME_DIR`: a shell that joined a sandbox has that
/// variable pointing inside the sandbox, and must still find every sandbox. (The X
/// server's own socket and lock stay under `/tmp/.X11-unix` and `/tmp`.)
pub fn sandboxes_root() -> PathBuf {
    deskpilot_os::runtime_dir()
}

/// `program` itself when it contains a `/` and is a file, else the first file of
/// that name on `PATH`.
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Finds `at-spi-bus-launcher`, which Debian ships outside `PATH`.
fn bus_launcher() -> Option<PathBuf> {
    [
        "/usr/libexec/at-spi-bus-launcher",
        "/usr/lib/at-spi2-core/at-spi-bus-launcher",
        "/usr/lib/at-spi2/at-spi-bus-launcher",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .or_else(|| which("at-spi-bus-launcher"))
}

fn display_in_use(n: u32) -> bool {
    Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
        || Path::new(&format!("/tmp/.X{n}-lock")).exists()
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool, child: &mut Child) -> Result<()> {
    let start = Instant::now();
    while start.elapsed() < READY_TIMEOUT {
        if ready() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(ComputerError::internal(format!(
                "{what} exited early ({status})"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(ComputerError::internal(format!(
        "{what} was not ready after {} s",
        READY_TIMEOUT.as_secs()
    )))
}

impl Sandbox {
    /// Starts Xvfb, a session bus, the accessibility bus (with accessibility turned
    /// on) and, if wanted and installed, openbox.
    ///
    /// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when Xvfb, dbus-daemon or the AT-SPI bus
    /// launcher is not installed (the message names the Debian packages);
    /// `COMPUTER_INTERNAL` when a daemon fails to start. Nothing is left running on error.
    pub fn start(opts: SandboxOptions) -> Result<Sandbox> {
        let xvfb = which("Xvfb").ok_or_else(|| missing("Xvfb", "xvfb"))?;
        let dbus = which("dbus-daemon").ok_or_else(|| missing("dbus-daemon", "dbus-daemon"))?;
        let launcher =
            bus_launcher().ok_or_else(|| missing("at-spi-bus-launcher", "at-spi2-core"))?;

        let root = sandboxes_root();
        private_dir(&root)?;
        check_owned(&root)?;

        let candidates: Vec<u32> = match opts.display {
            Some(n) => vec![n],
            // From :90 for the first sandbox of a process; each later one starts its
            // search one further on, so a number another sandbox of this process has
            // just given up (whose server may still be exiting) is the last one tried.
            None => {
                let turn = NEXT_DISPLAY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                (0..DISPLAY_ATTEMPTS)
                    .map(|i| FIRST_DISPLAY + (turn + i) % DISPLAY_ATTEMPTS)
                    .collect()
            }
        };
        let mut last_err = None;
        for n in candidates {
            if display_in_use(n) {
                if opts.display.is_some() {
                    return Err(ComputerError::new(
                        ErrorCode::InvalidArgument,
                        format!(
                            "display :{n} is already in use; choose another with --sandbox N or omit it"
                        ),
                    ));
                }
                continue;
            }
            match Self::start_on(n, &opts, &root, &xvfb, &dbus, &launcher) {
                Ok(sb) => return Ok(sb),
                Err(e) => last_err = Some(e),
            }
            if opts.display.is_some() {
                break;
            }
        }
        Err(last_err.unwrap_or_else(|| ComputerError::internal("no free X display number found")))
    }

    fn start_on(
        n: u32,
        opts: &SandboxOptions,
        root: &Path,
        xvfb: &Path,
        dbus: &Path,
        launcher: &Path,
    ) -> Result<Sandbox> {
        // Xvfb first: the display is ours only once Xvfb has written its own pid into
        // the display's lock file, so two sandboxes starting at once can never both
        // believe they own `:n` (the loser's Xvfb exits and the caller tries n+1).
        let xlog = root.join(format!("xvfb-{n}-{}.log", std::process::id()));
        let mut xcmd = Command::new(xvfb);
        xcmd.args([
            format!(":{n}"),
            "-screen".into(),
            "0".into(),
            format!("{}x{}x24", opts.width, opts.height),
            "-nolisten".into(),
            "tcp".into(),
            "-noreset".into(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file_at(&xlog));
        std::os::unix::process::CommandExt::process_group(&mut xcmd, 0);
        let mut x = xcmd
            .spawn()
            .map_err(|e| ComputerError::internal(format!("cannot start Xvfb: {e}")))?;
        let xpid = x.id();
        let sock = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        let lock = PathBuf::from(format!("/tmp/.X{n}-lock"));
        let owned = wait_until(
            "Xvfb",
            || {
                sock.exists()
                    && std::fs::read_to_string(&lock)
                        .is_ok_and(|t| t.trim().parse::<u32>() == Ok(xpid))
            },
            &mut x,
        );
        if let Err(e) = owned {
            deskpilot_os::signal_group_or_pid(xpid, Signal::Kill);
            let _ = x.wait();
            let _ = std::fs::remove_file(&xlog);
            return Err(e);
        }

        let dir = root.join(format!("sandbox-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        private_dir(&dir)?;
        let _ = std::fs::rename(&xlog, dir.join("xvfb.log"));
        let bus_path = dir.join("bus");
        let mut sb = Sandbox {
            state: SandboxState {
                display: n,
                bus_address: format!("unix:path={}", bus_path.display()),
                dir: dir.clone(),
                pids: vec![xpid],
                window_manager: false,
            },
            detach: opts.detach,
            stopped: false,
            hide: Vec::new(),
            mask: Vec::new(),
            keep: Vec::new(),
            withheld: Vec::new(),
        };

        // Session bus on a socket in the sandbox directory, with a config of our own:
        // no service directories (nothing is started on demand, so an app cannot
        // write a .service file into its XDG data directory and have the bus run it
        // outside its confinement) and no UpdateActivationEnvironment.
        let conf = dir.join("session.conf");
        deskpilot_os::write_private_atomic(
            &conf,
            session_bus_config(&sb.state.bus_address).as_bytes(),
        )
        .map_err(|e| ComputerError::internal(format!("cannot write {}: {e}", conf.display())))?;
        let mut d = sb
            .command(dbus)
            .args([
                format!("--config-file={}", conf.display()),
                "--nofork".to_string(),
                "--nosyslog".to_string(),
                format!("--address={}", sb.state.bus_address),
            ])
            .stderr(log_file(&dir, "dbus.log"))
            .spawn()
            .map_err(|e| ComputerError::internal(format!("cannot start dbus-daemon: {e}")))?;
        sb.state.pids.push(d.id());
        wait_until("dbus-daemon", || bus_path.exists(), &mut d)?;

        // Accessibility bus, started at once rather than on first request.
        let mut l = sb
            .command(launcher)
            .arg("--launch-immediately")
            .stderr(log_file(&dir, "at-spi-bus-launcher.log"))
            .spawn()
            .map_err(|e| {
                ComputerError::internal(format!("cannot start at-spi-bus-launcher: {e}"))
            })?;
        sb.state.pids.push(l.id());
        let addr = sb.state.bus_address.clone();
        wait_until(
            "the accessibility bus",
            || set_a11y_enabled(&addr).is_ok(),
            &mut l,
        )?;

        if opts.window_manager {
            if let Some(wm) = which("openbox") {
                let c = sb
                    .command(&wm)
                    .arg("--sm-disable")
                    .stderr(log_file(&dir, "openbox.log"))
                    .spawn()
                    .map_err(|e| ComputerError::internal(format!("cannot start openbox: {e}")))?;
                sb.state.pids.push(c.id());
                sb.state.window_manager = true;
                // A window mapped before openbox manages the screen can be left
                // unmapped by it: the sandbox is ready once openbox says it runs.
                let display = format!(":{n}");
                wait_until("openbox", || wm_running(&display), &mut l)?;
            } else {
                tracing::warn!(
                    "openbox is not installed: the sandbox runs without a window manager"
                );
            }
        }
        sb.save()?;
        Ok(sb)
    }

    /// Reopens the sandbox on display `n` started by another process (for `sandbox
    /// run`, `sandbox env`, `sandbox stop`). The returned value never stops it on drop.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` when there is no such sandbox.
    pub fn open(n: u32) -> Result<Sandbox> {
        let path = sandboxes_root()
            .join(format!("sandbox-{n}"))
            .join("sandbox.json");
        let text = std::fs::read_to_string(&path).map_err(|_| {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!("no sandbox on display :{n}; start one with `deskpilot sandbox start`"),
            )
        })?;
        let state: SandboxState = serde_json::from_str(&text)
            .map_err(|e| ComputerError::internal(format!("{} is damaged: {e}", path.display())))?;
        Ok(Sandbox {
            state,
            detach: true,
            stopped: false,
            hide: Vec::new(),
            mask: Vec::new(),
            keep: Vec::new(),
            withheld: Vec::new(),
        })
    }

    /// Every sandbox with a state file, whether or not its Xvfb still runs.
    pub fn list() -> Vec<SandboxState> {
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(sandboxes_root()) {
            for e in rd.flatten() {
                let p = e.path().join("sandbox.json");
                if let Ok(t) = std::fs::read_to_string(&p)
                    && let Ok(s) = serde_json::from_str::<SandboxState>(&t)
                {
                    out.push(s);
                }
            }
        }
        out.sort_by_key(|s| s.display);
        out
    }

    /// The sandbox's description.
    pub fn state(&self) -> &SandboxState {
        &self.state
    }

    /// `DISPLAY` value, e.g. `:90`.
    pub fn display(&self) -> String {
        format!(":{}", self.state.display)
    }

    /// True while the sandbox's Xvfb process is alive.
    pub fn is_alive(&self) -> bool {
        self.state.pids.first().is_some_and(|&p| pid_alive(p))
    }

    /// The variables a process needs to live in the sandbox: display, session bus,
    /// private XDG directories, the accessibility switches for GTK, Qt and Java, and
    /// the marker.
    pub fn env(&self) -> BTreeMap<String, String> {
        let dir = &self.state.dir;
        let mut env = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            env.insert(k.to_string(), v);
        };
        put("DISPLAY", self.display());
        put("DBUS_SESSION_BUS_ADDRESS", self.state.bus_address.clone());
        put(MARKER_VAR, dir.display().to_string());
        put("XDG_CONFIG_HOME", dir.join("config").display().to_string());
        put("XDG_CACHE_HOME", dir.join("cache").display().to_string());
        put("XDG_DATA_HOME", dir.join("data").display().to_string());
        put("XDG_RUNTIME_DIR", dir.join("runtime").display().to_string());
        // GSettings in memory: no dconf daemon, no writes to the user's settings.
        put("GSETTINGS_BACKEND", "memory".into());
        put("GTK_A11Y", "atspi".into());
        put("NO_AT_BRIDGE", "0".into());
        put("GNOME_ACCESSIBILITY", "1".into());
        put("QT_ACCESSIBILITY", "1".into());
        put("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1".into());
        put("SAL_USE_VCLPLUGIN", "gtk3".into());
        put("LIBGL_ALWAYS_SOFTWARE", "1".into());
        env
    }

    /// Lines `export K='V'` that a shell can `eval` to join the sandbox.
    pub fn shell_exports(&self) -> String {
        self.env()
            .iter()
            .filter(|(k, _)| k.as_str() != MARKER_VAR)
            .map(|(k, v)| format!("export {k}='{}'\n", v.replace('\'', "'\\''")))
            .collect()
    }

    /// Keeps apps started by [`Sandbox::spawn`] from seeing `dirs` (deskpilot's own
    /// directories) and `files` (its files in directories that are not its own):
    /// each directory is an empty tmpfs and each file an empty one in the app's
    /// mount namespace, through
    /// bubblewrap where it works ([`crate::confine`]). Not saved: it holds for this
    /// value only.
    pub fn hide_from_apps(&mut self, dirs: Vec<PathBuf>, files: Vec<PathBuf>) {
        self.hide = dirs;
        self.mask = files;
    }

    /// Paths under a directory [`Sandbox::hide_from_apps`] hides that apps started
    /// here still see, bound back as they are (an evaluation attempt's own work
    /// directory inside the hidden result directory). Not saved.
    pub fn keep_for_apps(&mut self, paths: Vec<PathBuf>) {
        self.keep = paths;
    }

    /// Environment variables of this process that the processes started here do not
    /// inherit (a model's API key that the evaluation harness holds). Not saved.
    pub fn withhold_env(&mut self, names: Vec<String>) {
        self.withheld = names;
    }

    /// The confinement of an app started here, `None` when nothing is hidden. A
    /// Chromium profile directory of the sandbox is kept too.
    fn confinement(&self, chromium: bool) -> Option<Confinement> {
        if self.hide.is_empty() {
            return None;
        }
        let mut c = Confinement::for_sandbox(
            &self.state.dir,
            Some(self.state.display),
            self.hide.clone(),
            self.mask.clone(),
        );
        c.keep.extend(self.keep.iter().cloned());
        if chromium {
            let profile = self.chromium_profile();
            let _ = deskpilot_os::ensure_private_dir(&profile);
            c.keep.push(profile);
        }
        Some(c)
    }

    /// A command that runs inside the sandbox in its own process group, with stdin
    /// closed and stdout discarded (stdout of deskpilot is a protocol stream).
    fn command(&self, program: &Path) -> Command {
        let mut c = self.in_sandbox(Command::new(program));
        c.stdin(Stdio::null());
        c
    }

    /// `c` made to run inside the sandbox (see [`Sandbox::command`]); its stdin is
    /// left as the caller set it (a confined app's carries its seccomp program).
    fn in_sandbox(&self, mut c: Command) -> Command {
        for d in ["config", "cache", "data", "runtime"] {
            let _ = deskpilot_os::ensure_private_dir(&self.state.dir.join(d));
        }
        for name in &self.withheld {
            c.env_remove(name);
        }
        c.envs(self.env())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c
    }

    /// Launches an application inside the sandbox and records it for cleanup. Adds
    /// the flags Chromium needs to expose its tree and to stay off the network in a
    /// closed sandbox (docs/ARCHITECTURE.md §6). `argv[0]` is looked up on `PATH`.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` for an empty command or an unknown
    /// program; `COMPUTER_INTERNAL` when it cannot be spawned.
    pub fn spawn(&mut self, argv: &[String]) -> Result<Child> {
        let Some(program) = argv.first() else {
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                "no program given; e.g. `deskpilot sandbox run -- mousepad`",
            ));
        };
        let path = which(program).ok_or_else(|| {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "program {program:?} was not found on PATH; install it or give a full path"
                ),
            )
        })?;
        let mut args: Vec<String> = argv[1..].to_vec();
        if is_chromium(program) {
            args.splice(0..0, self.chromium_flags());
        }
        let name = Path::new(program)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "app".into());
        let mut cmd = match self.confinement(is_chromium(program)) {
            Some(c) => {
                let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
                match crate::confine::wrap(&c, path.as_os_str(), &args) {
                    Some(wrapped) => self.in_sandbox(wrapped),
                    None => {
                        tracing::warn!(
                            program,
                            "bubblewrap is not usable: the app can see deskpilot's directories"
                        );
                        let mut c = self.command(&path);
                        c.args(&args);
                        c
                    }
                }
            }
            None => {
                let mut c = self.command(&path);
                c.args(&args);
                c
            }
        };
        let child = cmd
            .stderr(log_file(&self.state.dir, &format!("{name}.log")))
            .spawn()
            .map_err(|e| ComputerError::internal(format!("cannot start {program}: {e}")))?;
        self.state.pids.push(child.id());
        self.save()?;
        Ok(child)
    }

    /// The profile directory of the next Chromium started here.
    fn chromium_profile(&self) -> PathBuf {
        self.state
            .dir
            .join(format!("chromium-{}", self.state.pids.len()))
    }

    fn chromium_flags(&self) -> Vec<String> {
        let profile = self.chromium_profile();
        let mut flags: Vec<String> = [
            "--force-renderer-accessibility",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--disable-features=Translate,MediaRouter,OptimizationHints",
            "--password-store=basic",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if deskpilot_os::effective_uid() == 0 {
            flags.push("--no-sandbox".into());
        }
        flags.push(format!("--user-data-dir={}", profile.display()));
        flags
    }

    fn save(&self) -> Result<()> {
        let path = self.state.dir.join("sandbox.json");
        let text = serde_json::to_string_pretty(&self.state)
            .map_err(|e| ComputerError::internal(format!("cannot encode sandbox state: {e}")))?;
        deskpilot_os::write_private_atomic(&path, text.as_bytes())
            .map_err(|e| ComputerError::internal(format!("cannot write {}: {e}", path.display())))
    }

    /// The processes now carrying this sandbox's marker (see the module
    /// documentation), for [`Sandbox::end_since`].
    pub fn marked(&self) -> Vec<u32> {
        marked_processes(&self.state.dir.display().to_string())
    }

    /// Ends an app started with [`Sandbox::spawn`] at once (SIGKILL), with every
    /// process of the sandbox that was not running in `before` (a
    /// [`Sandbox::marked`] list taken just before the spawn), and waits up to 2 s
    /// for them to go. Ending the child's process group alone is not enough: under
    /// confinement the child is `bwrap`, which starts the app in a session of its
    /// own (`--new-session`), so the app outlived it (measured: LibreOffice went on
    /// using a core for minutes after its `bwrap` was killed).
    pub fn end_since(&mut self, child: &mut Child, before: &[u32]) {
        let mut targets = vec![child.id()];
        targets.extend(self.marked().into_iter().filter(|p| !before.contains(p)));
        for &pid in &targets {
            deskpilot_os::signal_group_or_pid(pid, Signal::Kill);
        }
        let _ = child.wait();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && targets.iter().any(|&p| pid_alive(p)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for &pid in &targets {
            deskpilot_os::reap_if_exited(pid);
        }
    }

    /// Ends every process of the sandbox (SIGTERM, then SIGKILL after 2 s) and removes
    /// its directory. Safe to call twice.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let marker = self.state.dir.display().to_string();
        let mut targets: Vec<u32> = self.state.pids.clone();
        targets.extend(marked_processes(&marker));
        // Apps first (newest first), daemons last.
        targets.reverse();
        targets.dedup();
        for &pid in &targets {
            deskpilot_os::signal_group_or_pid(pid, Signal::Term);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && targets.iter().any(|&p| pid_alive(p)) {
            std::thread::sleep(Duration::from_millis(25));
        }
        for &pid in &targets {
            if pid_alive(pid) {
                deskpilot_os::signal_group_or_pid(pid, Signal::Kill);
            }
        }
        for pid in marked_processes(&marker) {
            deskpilot_os::signal_group_or_pid(pid, Signal::Kill);
        }
        // A killed server keeps its sockets until it is really gone: wait (1 s at
        // most) so the display number is free when it is next chosen.
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline && targets.iter().any(|&p| pid_alive(p)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for &pid in &targets {
            deskpilot_os::reap_if_exited(pid);
        }
        remove_stale_display_files(self.state.display, self.state.pids.first().copied());
        let _ = std::fs::remove_dir_all(&self.state.dir);
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.detach {
            self.stop();
        }
    }
}

/// Removes display `n`'s lock file and socket only while the lock still names
/// `xvfb` (our server, killed before it could clean up). A server that exited on
/// SIGTERM removes its own files, and once it is gone another sandbox may already own
/// `:n`: deleting that one's socket would cut its clients off.
fn remove_stale_display_files(n: u32, xvfb: Option<u32>) {
    let lock = PathBuf::from(format!("/tmp/.X{n}-lock"));
    let ours = xvfb.is_some_and(|pid| {
        std::fs::read_to_string(&lock).is_ok_and(|t| t.trim().parse::<u32>() == Ok(pid))
    });
    if ours {
        let _ = std::fs::remove_file(format!("/tmp/.X11-unix/X{n}"));
        let _ = std::fs::remove_file(&lock);
    }
}

/// Creates `dir` private to this user ([`deskpilot_os::ensure_private_dir`]): one
/// that is not ours (another owner, a symlink) is `COMPUTER_OS_PERMISSION_MISSING`.
fn private_dir(dir: &Path) -> Result<()> {
    deskpilot_os::ensure_private_dir(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            ComputerError::new(ErrorCode::OsPermissionMissing, e.to_string())
        } else {
            ComputerError::internal(format!("cannot create {}: {e}", dir.display()))
        }
    })
}

/// Refuses a state directory that another user owns or that is open to others
/// (someone could have created `/tmp/deskpilot-<uid>` first to watch or steer our
/// sandboxes).
fn check_owned(dir: &Path) -> Result<()> {
    let private = deskpilot_os::is_private_dir(dir)
        .map_err(|e| ComputerError::internal(format!("cannot read {}: {e}", dir.display())))?;
    if !private {
        return Err(ComputerError::new(
            ErrorCode::OsPermissionMissing,
            format!(
                "{} is owned by another user or open to others; remove it or set DESKPILOT_RUNTIME_DIR to a private directory",
                dir.display()
            ),
        ));
    }
    Ok(())
}

fn missing(what: &str, package: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::PlatformUnsupported,
        format!(
            "{what} is not installed; install the Debian package `{package}` (apt-get install {package})"
        ),
    )
}

fn is_chromium(program: &str) -> bool {
    let base = Path::new(program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    matches!(
        base.as_str(),
        "chromium" | "chromium-browser" | "google-chrome" | "google-chrome-stable"
    )
}

fn log_file(dir: &Path, name: &str) -> Stdio {
    log_file_at(&dir.join(name))
}

fn log_file_at(path: &Path) -> Stdio {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    match deskpilot_os::private_file(&mut o).open(path) {
        Ok(f) => Stdio::from(f),
        Err(_) => Stdio::null(),
    }
}

/// Turns `org.a11y.Status.IsEnabled` on through the session bus at `address`, which
/// also proves the accessibility bus launcher answers. Used for sandboxes and by
/// `deskpilot doctor --fix` on any desktop. The error is `dbus-send`'s own words.
pub fn set_a11y_enabled(address: &str) -> Result<(), String> {
    let status = Command::new("dbus-send")
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .args([
            "--session",
            "--print-reply",
            "--reply-timeout=1000",
            "--dest=org.a11y.Bus",
            "/org/a11y/bus",
            "org.freedesktop.DBus.Properties.Set",
            "string:org.a11y.Status",
            "string:IsEnabled",
            "variant:boolean:true",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("dbus-send exited with {status}"))
    }
}

/// Processes whose environment carries `DESKPILOT_SANDBOX=<marker>`, except this
/// process and its ancestors: those are never signalled by a sandbox stop, even when
/// the caller runs inside the sandbox's environment.
fn marked_processes(marker: &str) -> Vec<u32> {
    let mine = deskpilot_os::ancestors(std::process::id());
    deskpilot_os::process_ids()
        .into_iter()
        .filter(|pid| !mine.contains(pid))
        .filter(|&pid| deskpilot_os::process_env_contains(pid, MARKER_VAR, marker))
        .collect()
}

/// True once a window manager announces itself on `display`: the root window's
/// `_NET_SUPPORTING_WM_CHECK` names a window (EWMH).
fn wm_running(display: &str) -> bool {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _};
    let Ok((conn, screen)) = x11rb::rust_connection::RustConnection::connect(Some(display)) else {
        return false;
    };
    let root = conn.setup().roots[screen].root;
    let Ok(Ok(atom)) = conn
        .intern_atom(true, b"_NET_SUPPORTING_WM_CHECK")
        .map(|c| c.reply())
    else {
        return false;
    };
    if atom.atom == 0 {
        return false;
    }
    conn.get_property(false, root, atom.atom, AtomEnum::WINDOW, 0, 1)
        .ok()
        .and_then(|c| c.reply().ok())
        .is_some_and(|r| {
            r.value32()
                .and_then(|mut v| v.next())
                .is_some_and(|w| w != 0)
        })
}

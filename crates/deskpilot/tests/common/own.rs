//! A sandbox desktop started through the CLI with its own runtime directory, config
//! and audit under one temporary directory: for tests that write deskpilot's
//! runtime files (the stop record, approvals) or need a sandbox no other test shares.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The `deskpilot` binary for a desk under `root`.
pub fn bin(root: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_deskpilot"));
    // The test never talks to the caller's own desktop, and keeps its sandbox and
    // refs under its own runtime directory.
    c.env_remove("DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("DESKPILOT_SANDBOX")
        // Subdirectories: deskpilot's own directories are refused targets, and the
        // page under test lives in `root`.
        .env("DESKPILOT_RUNTIME_DIR", root.join("run"))
        // The sandbox defaults, whatever config the machine has; the audit stays here.
        .env("DESKPILOT_CONFIG", root.join("cfg").join("config.toml"))
        .env("XDG_STATE_HOME", root.join("state"));
    c
}

/// Runs `command --json ARGS`: its output and the one JSON document on its stdout.
pub fn run_json(mut command: Command, args: &[&str]) -> (Output, Value) {
    let out = command
        .arg("--json")
        .args(args)
        .output()
        .expect("deskpilot runs");
    let v = super::one_document(args, &out);
    (out, v)
}

/// [`run_json`], which must succeed (exit 0, `"ok": true`).
pub fn ok_json(command: Command, args: &[&str]) -> Value {
    let (out, v) = run_json(command, args);
    assert!(
        out.status.success() && v["ok"] == true,
        "{args:?} failed: {v}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

/// [`run_json`], which must fail (exit 1) with the error `code`.
pub fn fails_json(command: Command, args: &[&str], code: &str) -> Value {
    let (out, v) = run_json(command, args);
    // Bad usage exits 2, every other failure 1.
    let status = if code == "COMPUTER_INVALID_ARGUMENT" {
        2
    } else {
        1
    };
    assert_eq!(out.status.code(), Some(status), "{args:?} should fail: {v}");
    assert_eq!(v["error"]["code"], code, "{args:?}: {v}");
    v
}

/// The `error.message` of a `--json` failure (empty when there is none).
pub fn error_message(v: &Value) -> String {
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// One sandbox desktop, started and stopped through the CLI.
pub struct Desk<'a> {
    pub root: &'a Path,
    pub display: u32,
}

impl Desk<'_> {
    pub fn start(root: &Path) -> Desk<'_> {
        Desk::start_with(root, &[])
    }

    /// [`Desk::start`] with more `sandbox start` flags (`--size 3840x2160`).
    pub fn start_with<'r>(root: &'r Path, flags: &[&str]) -> Desk<'r> {
        let out = bin(root)
            .args(["sandbox", "start", "--json"])
            .args(flags)
            .output()
            .expect("deskpilot runs");
        let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert!(out.status.success(), "sandbox start failed: {v}");
        let display = v["sandbox"]["display"].as_u64().expect("display") as u32;
        Desk { root, display }
    }

    pub fn run(&self, args: &[&str]) -> (Output, Value) {
        run_json(self.command(), args)
    }

    /// [`Desk::start`] with `config` written as the desk's config file first.
    pub fn start_with_config<'r>(root: &'r Path, config: &str) -> Desk<'r> {
        let cfg = root.join("cfg");
        std::fs::create_dir_all(&cfg).expect("config directory");
        std::fs::write(cfg.join("config.toml"), config).expect("config written");
        Desk::start(root)
    }

    /// The runtime directory the desk's calls use.
    pub fn runtime(&self) -> PathBuf {
        self.root.join("run")
    }

    /// The config file the desk's calls use.
    pub fn config(&self) -> PathBuf {
        self.root.join("cfg").join("config.toml")
    }

    /// `deskpilot --sandbox N ARGS` as a command, to run with other pipes.
    pub fn command(&self) -> Command {
        let mut c = bin(self.root);
        c.arg("--sandbox").arg(self.display.to_string());
        c
    }

    /// Runs `args`, which must fail (exit 1) with the error `code`.
    pub fn fails_with(&self, args: &[&str], code: &str) -> Value {
        fails_json(self.command(), args, code)
    }

    /// The first app `apps` lists with a name `named` accepts and a mapped window,
    /// polled every 200 ms for up to 60 s (a panic past that).
    pub fn listed_app(&self, what: &str, named: impl Fn(&str) -> bool) -> Value {
        let start = std::time::Instant::now();
        loop {
            let apps = self.ok(&["apps"]);
            let found = apps["apps"].as_array().unwrap().iter().find(|a| {
                a["name"].as_str().is_some_and(&named)
                    // Listed once its window is mapped, not while it starts.
                    && a["windows"].as_array().is_some_and(|w| !w.is_empty())
            });
            if let Some(a) = found {
                return a.clone();
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "{what} never listed with a window: {apps}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// `wait --app APP --role ROLE --name NAME --timeout-ms MS`, which must succeed:
    /// the element is on the accessibility bus.
    pub fn wait_for(&self, app: &str, role: &str, name: &str, timeout_ms: u64) -> Value {
        self.ok(&[
            "wait",
            "--app",
            app,
            "--role",
            role,
            "--name",
            name,
            "--timeout-ms",
            &timeout_ms.to_string(),
        ])
    }

    pub fn ok(&self, args: &[&str]) -> Value {
        ok_json(self.command(), args)
    }

    /// Writes a Python fixture (`source`, saved as `name` under `dir`) and runs it in
    /// the sandbox with Debian's Python, which has the toolkit bindings the
    /// fixtures use (another `python3` may come first on `PATH`).
    #[allow(dead_code)] // not every test binary runs a fixture
    pub fn run_python(&self, dir: &Path, name: &str, source: &str) {
        let script = dir.join(name);
        std::fs::write(&script, source).unwrap();
        self.ok(&[
            "sandbox",
            "run",
            "--",
            "/usr/bin/python3",
            script.to_str().unwrap(),
        ]);
    }

    /// Runs the Python `source` with Debian's Python (which has pyatspi) on this
    /// desk's display and accessibility bus, with `args` after it, and returns its
    /// stdout; fails the test when it exits with an error. For oracles that read
    /// what deskpilot read, through pyatspi.
    #[allow(dead_code)] // not every test binary asks pyatspi
    pub fn python_output(&self, source: &str, args: &[&str]) -> String {
        let env = self.ok(&["sandbox", "env"]);
        let mut py = Command::new("/usr/bin/python3");
        py.arg("-c").arg(source).args(args);
        for (k, v) in env.as_object().expect("sandbox env is an object") {
            if let Some(v) = v.as_str() {
                py.env(k, v);
            }
        }
        let out = py.output().expect("/usr/bin/python3 runs");
        assert!(
            out.status.success(),
            "python oracle failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("the oracle prints UTF-8")
    }
}

impl Drop for Desk<'_> {
    fn drop(&mut self) {
        let _ = bin(self.root)
            .args(["--sandbox", &self.display.to_string(), "sandbox", "stop"])
            .output();
    }
}

/// A private directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("dp-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

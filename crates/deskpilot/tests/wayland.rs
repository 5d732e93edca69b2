//! A Wayland desktop without X: weston's headless backend, its own session bus and
//! accessibility bus, and gtk3-widget-factory on the Wayland socket (GDK_BACKEND=wayland,
//! no DISPLAY). deskpilot finds that desktop from WAYLAND_DISPLAY (never a sandbox
//! that happens to run), reads the app's tree, acts through semantic actions, and
//! answers keyboard and pointer input with COMPUTER_INPUT_UNAVAILABLE and a
//! screenshot with COMPUTER_PLATFORM_UNSUPPORTED, each naming the Wayland session
//! (docs/ARCHITECTURE.md §6, "Wayland").

#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::own::{TempDir, fails_json, ok_json};

/// Every process of the desktop, stopped when the test ends (passing or not).
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in self.0.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// deskpilot on the Wayland desktop: its bus and socket, no DISPLAY.
fn on_wayland(root: &Path, bus: &str) -> Command {
    let mut c = common::own::bin(root);
    c.env("DBUS_SESSION_BUS_ADDRESS", bus)
        .env("WAYLAND_DISPLAY", "wayland-dp")
        .env("XDG_RUNTIME_DIR", root.join("xdg"));
    c
}

#[test]
fn a_wayland_desktop_is_read_and_operated_semantically_and_input_is_refused() {
    let dir = TempDir::new("wayland");
    let root = dir.path();
    let xdg = root.join("xdg");
    std::fs::create_dir_all(&xdg).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut procs = Procs(Vec::new());

    // The session bus: its address is the first line it prints.
    let mut bus = Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--nosyslog", "--print-address=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("dbus-daemon (package dbus) runs");
    let mut line = String::new();
    BufReader::new(bus.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    procs.0.push(bus);
    let address = line.trim().to_string();
    assert!(address.starts_with("unix:"), "{address:?}");

    // weston, headless, on its own socket.
    let weston = Command::new("weston")
        .args([
            "--backend=headless-backend.so",
            "--socket=wayland-dp",
            "--width=1024",
            "--height=768",
            "--idle-time=0",
        ])
        .env("XDG_RUNTIME_DIR", &xdg)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("weston.log")).unwrap())
        .spawn()
        .expect("weston (package weston) runs");
    procs.0.push(weston);
    wait_until("weston's socket", Duration::from_secs(20), || {
        xdg.join("wayland-dp").exists()
    });

    // The accessibility bus, turned on before the app starts.
    let launcher = [
        "/usr/libexec/at-spi-bus-launcher",
        "/usr/lib/at-spi2-core/at-spi-bus-launcher",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
    .expect("at-spi-bus-launcher (package at-spi2-core)");
    let a11y = Command::new(launcher)
        .arg("--launch-immediately")
        .env("DBUS_SESSION_BUS_ADDRESS", &address)
        .env_remove("DISPLAY")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    procs.0.push(a11y);
    wait_until("the accessibility bus", Duration::from_secs(20), || {
        deskpilot_driver_linux::sandbox::set_a11y_enabled(&address).is_ok()
    });

    let app = Command::new("gtk3-widget-factory")
        .env("DBUS_SESSION_BUS_ADDRESS", &address)
        .env("WAYLAND_DISPLAY", "wayland-dp")
        .env("XDG_RUNTIME_DIR", &xdg)
        .env("GDK_BACKEND", "wayland")
        .env_remove("DISPLAY")
        .env_remove("NO_AT_BRIDGE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gtk3-widget-factory (package gtk-3-examples) runs");
    procs.0.push(app);

    let dp = || on_wayland(root, &address);
    ok_json(dp(), &["config", "set", "enabled", "true", "--yes"]);
    ok_json(dp(), &["config", "set", "mode", "accept-edits", "--yes"]);
    // Pixels are allowed from the start (a change of capture takes a new grant), so
    // the screenshot below is refused for what the session is, not for the config.
    ok_json(
        dp(),
        &["config", "set", "capture", "a11y-and-pixels", "--yes"],
    );
    ok_json(
        dp(),
        &[
            "config",
            "set",
            "allow_apps",
            "gtk3-widget-factory",
            "--yes",
        ],
    );

    // The desktop is the Wayland session's, read through its tree.
    let mut observed = serde_json::Value::Null;
    wait_until("the app's tree", Duration::from_secs(30), || {
        let (out, v) = common::own::run_json(dp(), &["observe", "--app", "gtk3-widget-factory"]);
        observed = v;
        out.status.success()
            && observed["text"]
                .as_str()
                .is_some_and(|t| t.contains("radio \"Page 2\""))
    });
    let text = observed["text"].as_str().unwrap().to_string();
    let ref_of = |pred: &dyn Fn(&str) -> bool| -> String {
        let line = text
            .lines()
            .find(|l| pred(l))
            .unwrap_or_else(|| panic!("no such line in:\n{text}"));
        let start = line.find("[e").unwrap() + 1;
        line[start..start + line[start..].find(']').unwrap()].to_string()
    };
    let entry = ref_of(&|l: &str| l.trim_end().ends_with("textbox editable"));
    let page2 = ref_of(&|l: &str| l.contains("radio \"Page 2\""));

    // Semantic actions work, each confirmed by what the tree says after.
    let v = ok_json(dp(), &["act", &entry, "set_value", "typed on wayland"]);
    assert!(
        v["text"].as_str().unwrap().contains("\"typed on wayland\""),
        "{v}"
    );
    ok_json(dp(), &["act", &page2, "click"]);
    let after = ok_json(dp(), &["observe", "--query", "Page 2"]);
    assert!(
        after["text"]
            .as_str()
            .unwrap()
            .contains("radio \"Page 2\" checked"),
        "{after}"
    );

    // Keyboard and pointer: there is no input path here, and the answer says why.
    let v = fails_json(dp(), &["keys", "ctrl+a"], "COMPUTER_INPUT_UNAVAILABLE");
    let why = v["error"]["message"].as_str().unwrap();
    assert!(why.contains("Wayland-only session"), "{why}");
    let basis = after["basis"]
        .as_str()
        .unwrap_or_else(|| panic!("no basis in {after}"))
        .to_string();
    let v = fails_json(
        dp(),
        &["click-at", "10", "10", "--basis", &basis],
        "COMPUTER_INPUT_UNAVAILABLE",
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Wayland-only session"),
        "{v}"
    );
    // Pixels: no other client can read them here, and the answer says that (not
    // that synthetic input needs X11, as it did).
    let v = fails_json(dp(), &["screenshot"], "COMPUTER_PLATFORM_UNSUPPORTED");
    let why = v["error"]["message"].as_str().unwrap();
    assert!(
        why.contains("pixels") && why.contains("Wayland-only session"),
        "{why}"
    );
    assert!(!why.contains("synthetic"), "{why}");
    drop(procs);
}

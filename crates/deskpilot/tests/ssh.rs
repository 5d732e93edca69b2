//! A Linux desktop driven through a real OpenSSH link (docs/ARCHITECTURE.md §15): a
//! throwaway `sshd` on 127.0.0.1 with its own host key and one authorized key, and
//! a sandbox desktop on this machine reached only through it. The host — refs,
//! grant, policy, audit — runs on the near side; the far side runs `deskpilot
//! driver`. The oracle for what an act did is the sandbox read directly, not
//! through the link.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use deskpilot_driver_linux::loopback_sshd::LoopbackSshd;
use serde_json::{Value, json};

use common::own::{Desk, TempDir, bin, ok_json, run_json};
use common::stdio_mcp::Mcp;

/// The far side (a sandbox with mousepad, its own deskpilot directories, reached
/// only through `sshd`) and the near side's directories and config.
struct Link<'a> {
    desk: Desk<'a>,
    near: PathBuf,
    sshd: LoopbackSshd,
}

const TEXT: &str = "written over ssh";
const DEVICE: &str = "ssh:deskpilot-loopback";

/// The far side's config (`far/cfg/config.toml`): its user lets `deskpilot driver`
/// serve its desktop, which is off by default.
fn serve_from(far: &Path) {
    std::fs::create_dir_all(far.join("cfg")).unwrap();
    std::fs::write(far.join("cfg").join("config.toml"), "serve = true\n").unwrap();
}

impl<'a> Link<'a> {
    /// Starts both sides under `dir`; the far desk lives in `far` (inside `dir`).
    fn start(dir: &Path, far: &'a Path) -> Link<'a> {
        std::fs::create_dir_all(far).unwrap();
        serve_from(far);
        let desk = Desk::start(far);
        desk.ok(&["sandbox", "run", "--", "mousepad"]);
        desk.wait_for("mousepad", "menuitem", "File", 60000);
        let path = |p: PathBuf| p.display().to_string();
        let env = [
            ("DESKPILOT_RUNTIME_DIR", path(far.join("run"))),
            (
                "DESKPILOT_CONFIG",
                path(far.join("cfg").join("config.toml")),
            ),
            ("XDG_STATE_HOME", path(far.join("state"))),
            ("DESKPILOT_SANDBOX", desk.display.to_string()),
        ]
        .map(|(k, v)| (k.to_owned(), v));
        let sshd = LoopbackSshd::start(&dir.join("ssh"), &env).expect("sshd starts");
        // The near side is the user's own machine: deskpilot is off until the
        // user's config turns it on, and edits in mousepad need no confirmation.
        let near = dir.join("near");
        std::fs::create_dir_all(near.join("cfg")).unwrap();
        std::fs::write(
            near.join("cfg").join("config.toml"),
            "enabled = true\nmode = \"accept-edits\"\nallow_apps = [\"mousepad\"]\n",
        )
        .unwrap();
        Link { desk, near, sshd }
    }

    /// `deskpilot --device ssh:deskpilot-loopback` on the near side.
    fn command(&self) -> Command {
        let mut c = bin(&self.near);
        c.env("DESKPILOT_SSH_OPTIONS", self.sshd.ssh_options())
            .env("DESKPILOT_REMOTE_COMMAND", env!("CARGO_BIN_EXE_deskpilot"))
            .args(["--device", &self.sshd.device()]);
        c
    }

    fn run(&self, args: &[&str]) -> (Output, Value) {
        run_json(self.command(), args)
    }

    fn ok(&self, args: &[&str]) -> Value {
        ok_json(self.command(), args)
    }
}

/// Waits until `app` has a window on the desk, read directly.
fn wait_for_window(desk: &Desk<'_>, app: &str) {
    let start = Instant::now();
    loop {
        let v = desk.ok(&["apps"]);
        let shown = v["apps"].as_array().is_some_and(|a| {
            a.iter()
                .any(|x| x["name"] == app && x["windows"].as_array().is_some_and(|w| !w.is_empty()))
        });
        if shown {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{app} has no window: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Observe mousepad through the link, set its text by ref, read the diff; the
/// sandbox read directly holds the text, every result and the audit name the
/// device, and the near side's refusals judge the far side's facts.
#[test]
fn observe_act_and_diff_through_a_real_sshd() {
    let dir = TempDir::new("ssh-act");
    let far = dir.path().join("far");
    let link = Link::start(dir.path(), &far);

    let apps = link.ok(&["apps"]);
    assert_eq!(apps["device"]["name"], DEVICE, "{apps}");
    assert_eq!(apps["device"]["platform"], "linux", "{apps}");
    let mousepad = apps["apps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "mousepad")
        .unwrap_or_else(|| panic!("mousepad is listed: {apps}"));
    assert!(
        mousepad["pid"].as_u64().is_some(),
        "the far side's pid: {mousepad}"
    );

    // doctor reads the remote desktop through the link.
    let doc = link.ok(&["doctor"]);
    let checks = doc["checks"].as_array().unwrap_or_else(|| panic!("{doc}"));
    let check = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {doc}"))
    };
    assert_eq!(check("link")["ok"], true, "{doc}");
    assert!(
        check("link")["detail"].as_str().unwrap().contains("linux"),
        "{doc}"
    );
    assert_eq!(check("apps")["ok"], true, "{doc}");
    // What runs on this machine only says so.
    let (out, v) = link.run(&["sandbox", "list"]);
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_INVALID_ARGUMENT", "{v}");

    let obs = link.ok(&["observe", "--app", "mousepad"]);
    assert_eq!(obs["grant"]["device"], DEVICE, "{obs}");
    let text = link
        .command()
        .args(["observe", "--app", "mousepad"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("grant ") && l.contains(" · device ssh:deskpilot-loopback")),
        "the grant line names the device: {text}"
    );
    let found = link.ok(&["find", "", "--role", "textbox"]);
    let field = found["matches"][0]["ref"]
        .as_str()
        .unwrap_or_else(|| panic!("mousepad's text: {found}"))
        .to_owned();
    let act = link.ok(&["act", &field, "set_value", TEXT]);
    assert_eq!(act["result"]["status"], "executed", "{act}");
    assert!(
        act.to_string().contains(TEXT),
        "the diff shows the text: {act}"
    );
    assert_eq!(act["device"], DEVICE, "{act}");

    // The oracle: the sandbox itself, read without the link.
    let direct = link.desk.ok(&["find", TEXT, "--app", "mousepad"]);
    assert_eq!(
        direct["matches"].as_array().map(Vec::len),
        Some(1),
        "{direct}"
    );

    // The audit stays on the near side and names the device.
    let audit = link.ok(&["audit", "--tail", "20"]);
    let records = audit["records"]
        .as_array()
        .unwrap_or_else(|| panic!("{audit}"));
    let action = records
        .iter()
        .find(|r| r["event"] == "action" && r["op"] == "set_value")
        .unwrap_or_else(|| panic!("no set_value in the audit: {audit}"));
    assert_eq!(action["device"], DEVICE, "{action}");

    // A terminal on the far side is refused by the near side's rules.
    link.desk
        .ok(&["sandbox", "run", "--", "xfce4-terminal", "--disable-server"]);
    wait_for_window(&link.desk, "xfce4-terminal");
    let (out, v) = link.run(&["observe", "--app", "xfce4-terminal"]);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_DENYLISTED", "{v}");

    // A host that does not resolve: the error carries ssh's own reason.
    let out = bin(&link.near)
        .env("DESKPILOT_SSH_OPTIONS", link.sshd.ssh_options())
        .args(["--device", "ssh:no-such-host.invalid", "--json", "apps"])
        .output()
        .unwrap();
    let v = common::one_document(&["apps"], &out);
    assert_eq!(v["error"]["code"], "COMPUTER_NOT_RESPONDING", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("no-such-host.invalid") && msg.to_lowercase().contains("resolve"),
        "{msg}"
    );
}

/// `deskpilot mcp --device ssh:deskpilot-loopback` on the near side.
fn mcp(link: &Link<'_>) -> Mcp {
    let mut c = link.command();
    c.arg("mcp");
    Mcp::start(c, Stdio::inherit())
}

/// The `ssh` processes the server started.
fn links(m: &Mcp) -> Vec<u32> {
    m.children()
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "ssh")
        })
        .collect()
}

/// `kill SIGNAL PID`, which must succeed.
fn signal(sig: &str, pid: u32) {
    let st = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill {sig} {pid}");
}

/// The pid of the far side's `deskpilot driver` serving the desk in `far`.
fn far_driver(far: &Path) -> u32 {
    let exe = env!("CARGO_BIN_EXE_deskpilot");
    let marker = format!("DESKPILOT_RUNTIME_DIR={}", far.join("run").display());
    let found: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            cmd == format!("{exe}\0driver\0").into_bytes()
                && env.split(|b| *b == 0).any(|v| v == marker.as_bytes())
        })
        .collect();
    assert_eq!(found.len(), 1, "one far driver: {found:?}");
    found[0]
}

/// The link is cut (its `ssh` killed) while a call waits on the far side: the call
/// answers `COMPUTER_NOT_RESPONDING` long before its own deadline, saying the
/// effect is unknown, and the next call opens a new link and works.
#[test]
fn a_link_cut_mid_call_fails_that_call_and_the_next_one_reconnects() {
    let dir = TempDir::new("ssh-cut");
    let far = dir.path().join("far");
    let link = Link::start(dir.path(), &far);
    let mut mcp = mcp(&link);
    let obs = mcp.tool("computer_observe", json!({"app": "mousepad"}));
    assert_ne!(obs["isError"], true, "{obs}");
    let first = links(&mcp);
    assert_eq!(first.len(), 1, "one link: {first:?}");

    // The far driver is held (SIGSTOP) so the next call is surely in flight on the
    // link when the link is cut; its own deadline is 30 s.
    let far_driver = far_driver(&far);
    signal("-STOP", far_driver);
    mcp.send(
        "tools/call",
        json!({"name": "computer_observe", "arguments": {"app": "mousepad"}}),
    );
    std::thread::sleep(Duration::from_millis(1500));
    signal("-KILL", first[0]);
    let cut = Instant::now();
    let r = mcp.answer();
    let waited = cut.elapsed();
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["structuredContent"]["code"], "COMPUTER_NOT_RESPONDING",
        "{r}"
    );
    let msg = r["structuredContent"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(msg.contains(DEVICE), "the message names the device: {msg}");
    assert!(
        waited < Duration::from_secs(15),
        "answered {waited:?} after the cut, not at the call's deadline"
    );
    signal("-KILL", far_driver);

    // The next call reconnects.
    let obs = mcp.tool("computer_observe", json!({"app": "mousepad"}));
    assert_ne!(obs["isError"], true, "{obs}");
    let second = links(&mcp);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second, first, "a new link");
}

/// The far side's `hello` passed through unchanged except its `version`, which
/// is read from the file named by the first argument: a driver of another build.
const VERSION_FILTER: &str = r#"
import re, sys
version = open(sys.argv[1]).read().strip()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    if '"protocol"' in line and '"capabilities"' in line:
        line = re.sub(r'"version":"[^"]*"', '"version":"%s"' % version, line, count=1)
    sys.stdout.write(line)
    sys.stdout.flush()
"#;

/// A remote driver of another build (docs/ARCHITECTURE.md §15 "Versions"): one
/// whose major.minor differs from this host's (9.9.9, 0.0.1) is refused with
/// `COMPUTER_PLATFORM_UNSUPPORTED` naming both versions and the one to install,
/// also when the link is opened again later (a restarted driver); one a patch
/// release apart is used with a warning on stderr. Before, any build that spoke
/// protocol 1 was used silently. First, with this machine's switch off, the
/// answer names the device and this machine's switch. The link's `ssh` is a stand-in that runs the
/// remote command on this machine (`DESKPILOT_SSH`), through a filter that sets
/// the version the far driver's `hello` reports.
#[test]
fn a_remote_driver_of_another_release_is_refused_and_one_a_patch_apart_is_used() {
    let dir = TempDir::new("ssh-versions");
    let far = dir.path().join("far");
    std::fs::create_dir_all(&far).unwrap();
    serve_from(&far);
    let desk = Desk::start(&far);
    desk.ok(&["sandbox", "run", "--", "mousepad"]);
    desk.wait_for("mousepad", "menuitem", "File", 60000);
    let version = dir.path().join("version");
    let filter = dir.path().join("filter.py");
    std::fs::write(&filter, VERSION_FILTER).unwrap();
    let ssh = dir.path().join("ssh");
    std::fs::write(
        &ssh,
        format!(
            "#!/bin/sh\n\
             # ssh's options, then `--`, the destination and the remote command.\n\
             while [ \"$1\" != \"--\" ]; do shift; done\n\
             shift 2\n\
             export DESKPILOT_RUNTIME_DIR='{run}' DESKPILOT_CONFIG='{cfg}' XDG_STATE_HOME='{state}' DESKPILOT_SANDBOX='{display}'\n\
             sh -c \"$1\" | /usr/bin/python3 -u '{filter}' '{version}'\n",
            run = far.join("run").display(),
            cfg = far.join("cfg").join("config.toml").display(),
            state = far.join("state").display(),
            display = desk.display,
            filter = filter.display(),
            version = version.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let near = dir.path().join("near");
    std::fs::create_dir_all(near.join("cfg")).unwrap();
    std::fs::write(near.join("cfg").join("config.toml"), "enabled = false\n").unwrap();
    let apps = || {
        let mut c = bin(&near);
        c.env("DESKPILOT_SSH", &ssh)
            .env("DESKPILOT_REMOTE_COMMAND", env!("CARGO_BIN_EXE_deskpilot"))
            .args(["--device", "ssh:far"]);
        run_json(c, &["apps"])
    };
    let host = env!("CARGO_PKG_VERSION");

    // This machine's switch gates the device too, and the answer says so (before:
    // it offered `deskpilot sandbox start`, which --device cannot use).
    std::fs::write(&version, host).unwrap();
    let (out, v) = apps();
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_FEATURE_DISABLED", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("--device ssh:far"), "{message}");
    assert!(!message.contains("sandbox start"), "{message}");
    std::fs::write(near.join("cfg").join("config.toml"), "enabled = true\n").unwrap();

    let (out, v) = apps();
    assert!(out.status.success(), "the same build is used: {v}");
    assert!(v.to_string().contains("mousepad"), "{v}");

    for other in ["9.9.9", "0.0.1"] {
        std::fs::write(&version, other).unwrap();
        let (out, v) = apps();
        assert_eq!(out.status.code(), Some(1), "{other} is refused: {v}");
        assert_eq!(v["error"]["code"], "COMPUTER_PLATFORM_UNSUPPORTED", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(other) && message.contains(host),
            "{message}"
        );
        let line: Vec<&str> = host.split('.').collect();
        assert!(
            message.contains(&format!("install deskpilot {}.{}.x", line[0], line[1])),
            "{message}"
        );
    }

    let mut parts: Vec<u64> = host.split('.').map(|p| p.parse().unwrap()).collect();
    parts[2] += 7;
    let patch = format!("{}.{}.{}", parts[0], parts[1], parts[2]);
    std::fs::write(&version, &patch).unwrap();
    let (out, v) = apps();
    assert!(out.status.success(), "a patch release apart is used: {v}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a patch release apart") && stderr.contains(&patch),
        "{stderr}"
    );
}

/// A GTK window whose "Start" button logs its press to `argv[1]` and then blocks
/// its main loop for 20 s: an accessible press of it is in flight on the far side
/// (the app has not answered `DoAction`) when the link is cut.
const SLOW_PRESS: &str = r#"
import sys, time
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk
GLib.set_prgname("slow-press")
log = sys.argv[1]
def pressed(_b):
    with open(log, "a") as f:
        f.write("pressed\n")
    time.sleep(20)
w = Gtk.Window(title="Slow press")
b = Gtk.Button(label="Start")
b.connect("clicked", pressed)
w.add(b)
w.connect("destroy", Gtk.main_quit)
w.show_all()
Gtk.main()
"#;

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                // pid (comm) state ppid …: the comm may hold spaces, so split after ')'.
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// An act whose link is cut while the far app has not answered it (a half-open
/// link as the near side sees it): the act answers `COMPUTER_NOT_RESPONDING` with
/// `detail.link_lost`, saying its effect is unknown, and the near side's audit
/// records it as `unknown: the link dropped`, as README promises — the press did
/// reach the far app (its own log is the oracle).
#[test]
fn an_act_cut_off_by_a_dropped_link_is_audited_as_unknown() {
    let dir = TempDir::new("ssh-act-cut");
    let far = dir.path().join("far");
    let link = Link::start(dir.path(), &far);
    let python = std::fs::canonicalize("/usr/bin/python3").unwrap();
    let python = python.file_name().unwrap().to_str().unwrap();
    std::fs::write(
        link.near.join("cfg").join("config.toml"),
        format!(
            "enabled = true\nmode = \"accept-edits\"\nallow_apps = [\"mousepad\", \"{python}\"]\n"
        ),
    )
    .unwrap();
    let script = dir.path().join("slow_press.py");
    std::fs::write(&script, SLOW_PRESS).unwrap();
    let log = dir.path().join("slow_press.log");
    link.desk.ok(&[
        "sandbox",
        "run",
        "--",
        "/usr/bin/python3",
        script.to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    link.desk.wait_for("slow-press", "button", "Start", 60_000);
    link.ok(&["observe", "--app", "slow-press"]);
    let found = link.ok(&["find", "Start", "--role", "button"]);
    let start = found["matches"][0]["ref"]
        .as_str()
        .unwrap_or_else(|| panic!("{found}"))
        .to_owned();

    let mut act = link.command();
    act.args(["--json", "act", &start, "click"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = act.spawn().unwrap();
    // Wait until the press reached the far app (it now blocks in its handler),
    // then cut the link: the act is in flight, unanswered.
    let begun = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("pressed")) {
        assert!(
            begun.elapsed() < Duration::from_secs(20),
            "the press never arrived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ssh: Vec<u32> = children_of(child.id())
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "ssh")
        })
        .collect();
    assert_eq!(ssh.len(), 1, "one link: {ssh:?}");
    signal("-KILL", ssh[0]);
    let out = child.wait_with_output().unwrap();
    let v = common::one_document(&["act"], &out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_NOT_RESPONDING", "{v}");
    assert_eq!(v["error"]["detail"]["link_lost"], true, "{v}");

    let audit = link.ok(&["audit", "--tail", "20"]);
    let records = audit["records"].as_array().unwrap();
    let click = records
        .iter()
        .rev()
        .find(|r| r["op"] == "click")
        .unwrap_or_else(|| panic!("the cut act is not in the audit: {audit}"));
    assert_eq!(click["status"], "unknown: the link dropped", "{click}");
    assert_eq!(click["device"], DEVICE, "{click}");
}

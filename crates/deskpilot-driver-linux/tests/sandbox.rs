//! The sandbox desktop starts the real daemons, runs apps inside, and leaves nothing
//! behind. Needs Xvfb, dbus-daemon and at-spi2-core installed; a missing one fails.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

use std::path::Path;
use std::process::Command;

use deskpilot_driver_linux::sandbox::{Sandbox, SandboxOptions};

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn two_sandboxes_run_side_by_side_and_clean_up() {
    let mut a = Sandbox::start(SandboxOptions::default()).expect("sandbox a starts");
    let b = Sandbox::start(SandboxOptions::default()).expect("sandbox b starts");
    assert_ne!(a.state().display, b.state().display);
    for sb in [&a, &b] {
        assert!(Path::new(&format!("/tmp/.X11-unix/X{}", sb.state().display)).exists());
        assert!(sb.is_alive());
        // The accessibility switch is on, read back through the sandbox's own bus.
        let out = Command::new("dbus-send")
            .env("DBUS_SESSION_BUS_ADDRESS", &sb.state().bus_address)
            .args([
                "--session",
                "--print-reply",
                "--dest=org.a11y.Bus",
                "/org/a11y/bus",
                "org.freedesktop.DBus.Properties.Get",
                "string:org.a11y.Status",
                "string:IsEnabled",
            ])
            .output()
            .expect("dbus-send runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("boolean true"), "IsEnabled reply: {text}");
    }
    let app = a
        .spawn(&["mousepad".to_string()])
        .expect("mousepad starts in the sandbox");
    let app_pid = app.id();
    // The environment is read once the program has replaced the forked image.
    let mut env = String::new();
    for _ in 0..100 {
        env = String::from_utf8_lossy(&std::fs::read(format!("/proc/{app_pid}/environ")).unwrap())
            .into_owned();
        if env.contains("DESKPILOT_SANDBOX=") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        env.contains(&format!("DISPLAY=:{}", a.state().display)),
        "{env}"
    );
    assert!(env.contains(&format!(
        "DBUS_SESSION_BUS_ADDRESS={}",
        a.state().bus_address
    )));

    let (a_pids, a_dir, a_n) = (
        a.state().pids.clone(),
        a.state().dir.clone(),
        a.state().display,
    );
    assert!(a_pids.contains(&app_pid));
    drop(a);
    for pid in &a_pids {
        assert!(
            !alive(*pid),
            "pid {pid} of sandbox :{a_n} still alive after stop"
        );
    }
    assert!(!a_dir.exists());
    assert!(!Path::new(&format!("/tmp/.X11-unix/X{a_n}")).exists());
    // The other sandbox is untouched.
    assert!(b.is_alive());
    drop(app);
}

#[test]
fn unknown_program_is_a_clear_error() {
    let mut sb = Sandbox::start(SandboxOptions::default()).expect("sandbox starts");
    let err = sb
        .spawn(&["no-such-program-xyz".to_string()])
        .expect_err("unknown program");
    assert_eq!(err.code, deskpilot_protocol::ErrorCode::InvalidArgument);
    assert!(err.message.contains("no-such-program-xyz"));
}

/// Ending one app ends what it started in a session of its own too (as `bwrap
/// --new-session` starts a confined app), and nothing that ran before it.
#[test]
fn ending_an_app_ends_what_it_left_in_another_session() {
    let mut sb = Sandbox::start(SandboxOptions::default()).expect("sandbox starts");
    let before = sb.marked();
    assert!(!before.is_empty(), "the sandbox's daemons carry the marker");
    let mut app = sb
        .spawn(&[
            "sh".to_string(),
            "-c".to_string(),
            "setsid sleep 300 & exec sleep 301".to_string(),
        ])
        .expect("the app starts");
    // The escaped process: a `sleep 300` of the sandbox in a session of its own.
    let mut escaped = None;
    for _ in 0..200 {
        escaped = sb.marked().into_iter().find(|&p| {
            !before.contains(&p)
                && p != app.id()
                && std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c == b"sleep\x00300\x00")
        });
        if escaped.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let escaped = escaped.expect("the app's child is running");
    let sid = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.to_string()))
            .and_then(|r| r.split_whitespace().nth(3).map(str::to_string))
    };
    assert_ne!(sid(escaped), sid(app.id()), "it left the app's session");
    let app_pid = app.id();
    sb.end_since(&mut app, &before);
    assert!(!alive(app_pid), "the app is ended");
    assert!(!alive(escaped), "what it left behind is ended");
    for pid in &before {
        assert!(
            alive(*pid),
            "pid {pid}, running before the app, is untouched"
        );
    }
    assert!(sb.is_alive());
}

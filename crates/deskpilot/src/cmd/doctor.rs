//! `deskpilot doctor [--fix]`: is this desktop ready for deskpilot, and if not, what
//! to do. Checks the session type, the session bus, the accessibility bus and its
//! `IsEnabled` switch, synthetic input (XTest), a keymap a killed call left changed,
//! and apps that expose no tree. `doctor --device adb[:SERIAL]` checks an Android
//! device instead: adb, the device's state, its screen, a read of it and the ADB
//! Keyboard IME.

use deskpilot_protocol::types::AppStatus;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::Serialize;

use crate::output::print_ok;
use deskpilot_protocol::Result;

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    ok: bool,
    /// Works, with a limit the user should know of (`ok` is true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    warning: bool,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn check(name: &'static str, ok: bool, detail: impl Into<String>, fix: Option<&str>) -> Check {
    Check {
        name,
        ok,
        warning: false,
        detail: detail.into(),
        fix: if ok { None } else { fix.map(str::to_string) },
    }
}

/// `doctor --device adb[:SERIAL]`: the Android driver's checks, as a report. An
/// unhealthy device fails with the code of its first failed check
/// (`COMPUTER_OS_PERMISSION_MISSING` for an unauthorized device, …).
pub async fn android(json: bool, serial: Option<String>) -> Result<()> {
    use deskpilot_driver_android::Level;
    let driver = super::session::android_driver(serial);
    let found = driver.doctor().await;
    let code = found
        .iter()
        .find(|c| c.level == Level::Fail)
        .and_then(|c| c.code)
        .unwrap_or(ErrorCode::NotResponding);
    let checks = found
        .into_iter()
        .map(|c| Check {
            name: c.name,
            ok: c.level != Level::Fail,
            warning: c.level == Level::Warn,
            detail: c.detail,
            fix: c.fix,
        })
        .collect();
    report_as(json, checks, "the device", code)
}

pub async fn run(json: bool, sandbox: Option<u32>, fix: bool) -> Result<()> {
    let mut checks = Vec::new();
    let session_type = std::env::var("XDG_SESSION_TYPE").unwrap_or_default();
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some();
    let desktop = match super::session::resolve(sandbox) {
        Ok(d) => d,
        Err(e) => {
            checks.push(check(
                "desktop",
                false,
                e.message.clone(),
                Some("deskpilot sandbox start"),
            ));
            return report(json, checks);
        }
    };
    checks.push(check(
        "desktop",
        true,
        format!(
            "display {} · {}{}",
            desktop.display,
            match desktop.sandbox {
                Some(n) => format!("deskpilot sandbox :{n}"),
                None if session_type.is_empty() => "session type unknown".to_string(),
                None => format!("session type {session_type}"),
            },
            if wayland {
                " · Wayland (input fallback unavailable)"
            } else {
                ""
            }
        ),
        None,
    ));
    if desktop.sandbox.is_some() {
        let bwrap = deskpilot_driver_linux::confine::bwrap();
        checks.push(check(
            "app confinement",
            bwrap.is_some(),
            match bwrap {
                Some(p) => format!(
                    "apps started in the sandbox run under {} and cannot see deskpilot's config, state or audit directories",
                    p.display()
                ),
                None => "bubblewrap is missing or cannot make a mount namespace here: apps started in the sandbox can see deskpilot's directories (the host's refusals of those paths still apply)".into(),
            },
            Some("apt-get install bubblewrap"),
        ));
    }
    // Keycodes a killed call left borrowed: doctor is a call on this display like
    // any other, so it puts them back (with or without --fix) and says so.
    if let Some((pid, keycodes)) =
        deskpilot_driver_linux::input::keymap_left_changed(&desktop.display)
    {
        checks.push(
            match deskpilot_driver_linux::input::restore_left_keymap(&desktop.display) {
                Ok(_) => check(
                    "keymap",
                    true,
                    format!(
                        "restored keycodes {keycodes:?} that a killed deskpilot call (pid {pid}) had left borrowed for characters the keymap lacks"
                    ),
                    None,
                ),
                Err(e) => check(
                    "keymap",
                    false,
                    format!(
                        "keycodes {keycodes:?} are left borrowed by a killed deskpilot call (pid {pid}) and could not be restored: {}",
                        e.message
                    ),
                    Some("xmodmap -pke shows them; restart the X session if they stay"),
                ),
            },
        );
    }
    if fix && let Err(e) = deskpilot_driver_linux::sandbox::set_a11y_enabled(&desktop.bus_address) {
        checks.push(check(
            "fix",
            false,
            format!("could not turn accessibility on: {e}"),
            Some("check that at-spi2-core is installed and the session bus runs"),
        ));
    }
    let driver = match super::session::connect(&desktop).await {
        Ok(d) => d,
        Err(e) => {
            checks.push(check(
                "accessibility bus",
                false,
                e.message.clone(),
                Some("apt-get install at-spi2-core, or use `deskpilot sandbox start`"),
            ));
            return report(json, checks);
        }
    };
    checks.push(check("accessibility bus", true, "connected", None));
    match driver.hello().await {
        Ok(h) => {
            checks.push(check(
                "accessibility enabled",
                h.permissions.accessibility,
                if h.permissions.accessibility {
                    "org.a11y.Status.IsEnabled = true"
                } else {
                    "org.a11y.Status.IsEnabled = false: Chromium, Electron and Qt apps started now expose no tree"
                },
                Some("deskpilot doctor --fix, then restart the apps"),
            ));
            checks.push(check(
                "synthetic input",
                h.permissions.input,
                if h.permissions.input {
                    "X11 with XTest: keyboard/pointer fallback available"
                } else {
                    "no XTest on this display (or Wayland): keyboard/pointer fallback unavailable; semantic actions still work"
                },
                Some("use an X11 session or a deskpilot sandbox"),
            ));
            for n in h.permissions.notes {
                checks.push(check("note", true, n, None));
            }
        }
        Err(e) => checks.push(check("driver", false, e.message, None)),
    }
    match driver.apps().await {
        Ok(apps) => {
            let bad: Vec<String> = apps
                .iter()
                .filter(|a| a.status != AppStatus::Ok)
                .map(|a| format!("{} ({:?})", a.name, a.status))
                .collect();
            checks.push(check(
                "apps",
                bad.is_empty(),
                if bad.is_empty() {
                    format!(
                        "{} app{} expose{} a tree",
                        apps.len(),
                        if apps.len() == 1 { "" } else { "s" },
                        if apps.len() == 1 { "s" } else { "" }
                    )
                } else {
                    format!("{} apps; without a readable tree: {}", apps.len(), bad.join(", "))
                },
                Some("restart those apps after `deskpilot doctor --fix` (Qt apps need QT_ACCESSIBILITY=1)"),
            ));
        }
        Err(e) => checks.push(check("apps", false, e.message, None)),
    }
    checks.push(stop_hotkey_check(Some(&desktop.display)));
    report(json, checks)
}

/// Whether long-lived hosts could grab the stop hotkey on `display` now: a warning,
/// not a failure, when another program holds it or there is no X11.
fn stop_hotkey_check(display: Option<&str>) -> Check {
    use deskpilot_driver_linux::hotkey::{HotkeyError, probe};
    let chord = deskpilot_host::config::Config::load()
        .map(|c| c.effective(false).stop_hotkey)
        .unwrap_or_else(|_| deskpilot_host::config::DEFAULT_STOP_HOTKEY.to_owned());
    match probe(display.filter(|d| d.starts_with(':')), &chord) {
        Ok(()) => check(
            "stop hotkey",
            true,
            format!("{chord} is free: `deskpilot mcp` and `run` grab it to stop every agent"),
            None,
        ),
        Err(e) => Check {
            name: "stop hotkey",
            ok: !matches!(e, HotkeyError::Invalid(_)),
            warning: true,
            detail: e.to_string(),
            fix: Some(
                "choose another chord with `deskpilot config set stop_hotkey CHORD`; `deskpilot stop` always works"
                    .into(),
            ),
        },
    }
}

/// `doctor --device ssh:…`: the link (ssh, the remote `deskpilot driver`, its
/// protocol) and the remote desktop it serves, read through the link.
pub async fn remote(ctx: &super::session::Ctx) -> Result<()> {
    let mut checks = Vec::new();
    let (host, _) = super::session::open_host(ctx, "doctor", false).await?;
    match host.session().hello().await {
        Ok(h) => {
            checks.push(check(
                "link",
                true,
                format!(
                    "{} · {} {} {} (protocol {})",
                    ctx.device, h.platform, h.driver, h.version, h.protocol
                ),
                None,
            ));
            for n in h.permissions.notes {
                checks.push(check("note", true, n, None));
            }
        }
        Err(e) => {
            checks.push(check(
                "link",
                false,
                e.message,
                Some("check that `ssh HOST deskpilot --version` works without a password prompt (README: Another machine or a phone)"),
            ));
            return report_as(ctx.json, checks, "the device", ErrorCode::NotResponding);
        }
    }
    match host.session().enumerate().await {
        Ok(apps) => checks.push(check(
            "apps",
            true,
            format!(
                "{} app{} on the remote desktop",
                apps.len(),
                if apps.len() == 1 { "" } else { "s" }
            ),
            None,
        )),
        Err(e) => checks.push(check(
            "apps",
            false,
            e.message,
            Some(
                "run `deskpilot doctor` on the remote machine (its desktop and accessibility bus)",
            ),
        )),
    }
    checks.push(stop_hotkey_check(None));
    report_as(ctx.json, checks, "the device", ErrorCode::NotResponding)
}

fn report(json: bool, checks: Vec<Check>) -> Result<()> {
    report_as(
        json,
        checks,
        "the desktop",
        ErrorCode::AccessibilityDisabled,
    )
}

/// Prints the checks (`ok`, `warn` or `FAIL`, each with what to do when it is not
/// fine); when one failed, fails with `code` and a message about `subject`.
fn report_as(json: bool, checks: Vec<Check>, subject: &str, code: ErrorCode) -> Result<()> {
    let mut text = String::new();
    for c in &checks {
        text.push_str(&format!(
            "{} {:<22} {}\n",
            match (c.ok, c.warning) {
                (false, _) => "FAIL",
                (true, true) => "warn",
                (true, false) => "ok  ",
            },
            c.name,
            c.detail
        ));
        if let Some(f) = &c.fix {
            text.push_str(&format!("     {:<22} fix: {f}\n", ""));
        }
    }
    let Some(first) = checks.iter().find(|c| !c.ok) else {
        print_ok(
            json,
            &serde_json::json!({ "healthy": true, "checks": checks }),
            &text,
        );
        return Ok(());
    };
    // One document on stdout either way: with --json the report travels as the
    // error's detail; humans get the table on stdout and the error on stderr.
    let mut message = format!("{subject} is not ready: {}: {}", first.name, first.detail);
    if let Some(fix) = first.fix.as_deref().filter(|f| !first.detail.contains(f)) {
        message.push_str(&format!("; fix: {fix}"));
    }
    if !json {
        print_ok(false, &(), &text);
    }
    Err(ComputerError::new(code, message)
        .with_detail(serde_json::json!({ "healthy": false, "checks": checks })))
}

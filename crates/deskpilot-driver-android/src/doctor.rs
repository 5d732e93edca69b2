//! What `deskpilot doctor --device adb` checks: adb itself, the device's state, its
//! screen (on, unlocked), a real read of it, and the ADB Keyboard IME. Each check
//! says what it found and, when it is not fine, what to do.

use deskpilot_protocol::ErrorCode;

use crate::adb::{NO_DEVICE_FIX, OFFLINE_FIX, SEVERAL_FIX, UNAUTHORIZED_FIX};
use crate::{ADB_KEYBOARD, AndroidDriver};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    /// Works, with a limit the user should know about.
    Warn,
    /// deskpilot cannot work on the device until it is fixed.
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Check {
    /// What was checked: `adb`, `device`, `screen`, `screen read`, `keyboard`.
    pub name: &'static str,
    pub level: Level,
    /// What was found, one sentence.
    pub detail: String,
    /// What to do, when the check is not fine.
    pub fix: Option<String>,
    /// The error code a failed check stands for.
    pub code: Option<ErrorCode>,
}

fn ok(name: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        level: Level::Ok,
        detail: detail.into(),
        fix: None,
        code: None,
    }
}

fn not_ok(
    name: &'static str,
    level: Level,
    detail: impl Into<String>,
    fix: &str,
    code: Option<ErrorCode>,
) -> Check {
    Check {
        name,
        level,
        detail: detail.into(),
        fix: Some(fix.to_string()),
        code,
    }
}

/// Whether the screen is on, from `dumpsys power`: `None` when it does not say.
fn screen_on(power: &str) -> Option<bool> {
    for line in power.lines().map(str::trim) {
        if let Some(w) = line.strip_prefix("mWakefulness=") {
            return Some(w.trim() == "Awake");
        }
    }
    for line in power.lines().map(str::trim) {
        if let Some(s) = line.strip_prefix("Display Power: state=") {
            return Some(s.trim() == "ON");
        }
    }
    None
}

/// Whether the keyguard is showing, from `dumpsys window`: `None` when it does not
/// say. Android versions name it differently (`mDreamingLockscreen`,
/// `mShowingLockscreen`, `mKeyguardShowing`, the keyguard delegate's `showing`).
fn locked(window: &str) -> Option<bool> {
    let mut seen = None;
    // Indentation of the keyguard delegate's header while inside its section.
    let mut delegate: Option<usize> = None;
    for line in window.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if delegate.is_some_and(|d| indent <= d) {
            delegate = None;
        }
        if t.starts_with("KeyguardServiceDelegate") {
            delegate = Some(indent);
            continue;
        }
        for word in t.split_whitespace() {
            let Some((k, v)) = word.split_once('=') else {
                continue;
            };
            let known = matches!(
                k,
                "mDreamingLockscreen"
                    | "mShowingLockscreen"
                    | "mKeyguardShowing"
                    | "isStatusBarKeyguard"
            ) || (delegate.is_some() && k == "showing");
            if known {
                seen = Some(seen.unwrap_or(false) || v == "true");
            }
        }
    }
    seen
}

impl AndroidDriver {
    /// Runs every check, in order; stops after the first that leaves nothing else
    /// to check (no adb, no usable device).
    pub async fn doctor(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let t = self.opts.call_timeout_ms;
        match self.adb.run(&["version"], t, false).await {
            Ok(o) => {
                let text = o.text();
                let first = text.lines().next().unwrap_or("adb").to_string();
                out.push(ok("adb", format!("{first} ({})", self.opts.adb.display())));
            }
            Err(e) => {
                out.push(not_ok(
                    "adb",
                    Level::Fail,
                    e.message,
                    "install Android's platform tools (Debian: `apt-get install adb`) or set DESKPILOT_ADB to the adb executable",
                    Some(e.code),
                ));
                return out;
            }
        }
        let attached = self
            .adb
            .run(&["devices"], t, false)
            .await
            .map(|o| {
                o.text()
                    .lines()
                    .skip(1)
                    .filter_map(|l| l.split_once('\t'))
                    .map(|(s, st)| format!("{}: {}", s.trim(), st.trim()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let seen = if attached.is_empty() {
            "adb sees no device".to_string()
        } else {
            format!("adb sees {}", attached.join(", "))
        };
        match self.adb.run(&["get-state"], t, true).await {
            Ok(o) if o.text() == "device" => {}
            Ok(o) => {
                out.push(not_ok(
                    "device",
                    Level::Fail,
                    format!(
                        "the device is in {:?} mode, not running Android ({seen})",
                        o.text()
                    ),
                    "reboot it into Android (`adb reboot`)",
                    Some(ErrorCode::NotResponding),
                ));
                return out;
            }
            Err(e) => {
                let lower = e.message.to_lowercase();
                let (why, fix) = if lower.contains("authorized this computer") {
                    (
                        "the device has not authorized this computer",
                        UNAUTHORIZED_FIX,
                    )
                } else if lower.contains("offline") {
                    ("the device is offline", OFFLINE_FIX)
                } else if lower.contains("more than one device") {
                    ("more than one device is attached", SEVERAL_FIX)
                } else {
                    ("no device", NO_DEVICE_FIX)
                };
                out.push(not_ok(
                    "device",
                    Level::Fail,
                    format!("{why} ({seen})"),
                    fix,
                    Some(e.code),
                ));
                return out;
            }
        }
        let prop = |p: &'static str| async move {
            self.shell(&["getprop", p])
                .await
                .map(|o| o.text())
                .unwrap_or_default()
        };
        let model = prop("ro.product.model").await;
        let release = prop("ro.build.version.release").await;
        let sdk = prop("ro.build.version.sdk").await;
        let serial = self.opts.serial.clone().unwrap_or_else(|| {
            attached
                .first()
                .and_then(|s| s.split(": ").next())
                .unwrap_or("the only device")
                .to_string()
        });
        out.push(ok(
            "device",
            format!("{serial} · {model} · Android {release} (API {sdk})"),
        ));
        let power = self.shell(&["dumpsys", "power"]).await.map(|o| o.text());
        let window = self.shell(&["dumpsys", "window"]).await.map(|o| o.text());
        let on = power.as_deref().ok().and_then(screen_on);
        let lock = window.as_deref().ok().and_then(locked);
        out.push(match (on, lock) {
            (Some(false), _) => not_ok(
                "screen",
                Level::Fail,
                "the screen is off: nothing on it can be read or operated",
                "wake it (`adb shell input keyevent KEYCODE_WAKEUP`) and unlock it",
                Some(ErrorCode::NotResponding),
            ),
            (_, Some(true)) => not_ok(
                "screen",
                Level::Fail,
                "the screen is locked: only the lock screen can be read",
                "unlock the phone yourself (deskpilot never types a PIN or password)",
                Some(ErrorCode::SecureInput),
            ),
            (Some(true), Some(false)) => ok("screen", "on and unlocked"),
            _ => not_ok(
                "screen",
                Level::Warn,
                "could not tell from `dumpsys power` and `dumpsys window` whether the screen is on and unlocked",
                "look at the phone: it must be on and unlocked",
                None,
            ),
        });
        match self.measure_read().await {
            Ok((package, nodes, cost)) => out.push(ok(
                "screen read",
                format!(
                    "{nodes} nodes of {package} in {} ms (uiautomator dump {} ms, transfer {} ms, parse {} ms)",
                    cost.total_ms(),
                    cost.dump_ms,
                    cost.cat_ms,
                    cost.parse_ms
                ),
            )),
            Err(e) => out.push(not_ok(
                "screen read",
                Level::Fail,
                e.message,
                "stop animations on the screen (Settings › Developer options › animation scales off) and try again",
                Some(e.code),
            )),
        }
        let current = self
            .shell(&["settings", "get", "secure", "default_input_method"])
            .await
            .map(|o| o.text())
            .unwrap_or_default();
        if current == ADB_KEYBOARD {
            out.push(ok(
                "keyboard",
                "the ADB Keyboard is the current keyboard: any text can be typed",
            ));
        } else {
            let all = self
                .shell(&["ime", "list", "-a", "-s"])
                .await
                .map(|o| o.text())
                .unwrap_or_default();
            let installed = all.lines().any(|l| l.trim() == ADB_KEYBOARD);
            let fix = format!(
                "{}`adb shell ime enable {ADB_KEYBOARD} && adb shell ime set {ADB_KEYBOARD}`",
                if installed {
                    ""
                } else {
                    "install the ADB Keyboard app (package com.android.adbkeyboard), then "
                }
            );
            out.push(not_ok(
                "keyboard",
                Level::Warn,
                format!(
                    "the ADB Keyboard is {}: only printable ASCII can be typed (`input text`); other characters fail with COMPUTER_INPUT_UNAVAILABLE",
                    if installed {
                        "installed but not the current keyboard"
                    } else {
                        "not installed"
                    }
                ),
                &fix,
                None,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screen_state_from_dumpsys() {
        assert_eq!(screen_on("  mWakefulness=Awake\n"), Some(true));
        assert_eq!(screen_on("  mWakefulness=Asleep\n"), Some(false));
        assert_eq!(screen_on("  mWakefulness=Dozing\n"), Some(false));
        assert_eq!(screen_on("Display Power: state=ON\n"), Some(true));
        assert_eq!(screen_on("nothing"), None);
        assert_eq!(
            locked("    mShowingDream=false mDreamingLockscreen=true mDreamingSleepToken=null"),
            Some(true)
        );
        assert_eq!(
            locked(
                "    mShowingDream=false mDreamingLockscreen=false\n    KeyguardServiceDelegate\n      showing=false\n"
            ),
            Some(false)
        );
        assert_eq!(
            locked("    KeyguardServiceDelegate\n      showing=true\n"),
            Some(true)
        );
        assert_eq!(locked("mShowingLockscreen=true"), Some(true));
        assert_eq!(locked("nothing=here"), None);
    }
}

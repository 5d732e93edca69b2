//! Aiming synthetic input: is the target window the focused X top-level?
//!
//! Owns [`matches`] (pure: does an X top-level belong to an AT-SPI window, by pid and
//! title) and [`ensure_focused`]: compare the focused top-level with the window, and
//! when asked, activate it once (the X top-level through the input module's
//! `_NET_ACTIVE_WINDOW` request, else `Component.GrabFocus` on the window) and check
//! again. It never sends input itself.
//!
//! A window that cannot be given focus refuses with `COMPUTER_INPUT_UNAVAILABLE`:
//! XTest input goes to whatever has focus, so input aimed at this window is
//! unavailable right now; it is not a scope decision (the host makes those) and not a
//! stale basis (no coordinates are involved for keys).

use std::sync::Arc;
use std::time::{Duration, Instant};

use deskpilot_protocol::{ComputerError, ErrorCode};

use super::connection::{Bus, iface};
use super::handle::ObjRef;
use crate::linux::input::{TopLevel, XInput};
use deskpilot_protocol::Result;

/// How long to watch for focus to arrive after an AT-SPI `GrabFocus` on a window:
/// 500 ms (openbox and GTK under Xvfb take 10–50 ms).
const GRAB_WAIT: Duration = Duration::from_millis(500);
/// Interval between focus checks while waiting.
const POLL: Duration = Duration::from_millis(25);

/// The window input is aimed at, as AT-SPI knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub pid: Option<u32>,
    pub title: String,
}

/// True when the X top-level is the AT-SPI window (pure): same pid when both sides
/// know it, and the same title (trimmed) — or, with matching pids, an empty title on
/// one side. Without pids, a non-empty title must match.
pub fn matches(top: &TopLevel, target: &Target) -> bool {
    let (a, b) = (top.title.trim(), target.title.trim());
    match (top.pid, target.pid) {
        (Some(p), Some(q)) => p == q && (a == b || a.is_empty() || b.is_empty()),
        _ => !a.is_empty() && a == b,
    }
}

/// True when the focused X top-level `top` is the AT-SPI window (pure): [`matches`],
/// or — since a title can change while input arrives (a page that mirrors its input
/// in its title) — the same process when that process shows exactly one mapped
/// top-level among `tops`, so there is no other window of it to confuse.
pub fn is_window(top: &TopLevel, target: &Target, tops: &[TopLevel]) -> bool {
    if matches(top, target) {
        return true;
    }
    match (top.pid, target.pid) {
        (Some(p), Some(q)) if p == q => tops.iter().filter(|t| t.pid == Some(p)).count() == 1,
        _ => false,
    }
}

/// Reads the window's pid (from the bus daemon) and title.
pub async fn target_of(bus: &Bus, window: &ObjRef) -> Result<Target> {
    let (pid, title) = tokio::join!(
        bus.pid_of(&window.bus),
        bus.prop::<String>(window, iface::ACCESSIBLE, "Name")
    );
    let title = title.map_err(|e| {
        if e.is_gone() {
            ComputerError::new(
                ErrorCode::ElementNotFound,
                format!("window {window} no longer exists; list windows again"),
            )
        } else {
            e.to_driver()
        }
    })?;
    Ok(Target {
        pid: pid.ok(),
        title,
    })
}

async fn blocking<T: Send + 'static>(
    x: &Arc<XInput>,
    f: impl FnOnce(&XInput) -> Result<T> + Send + 'static,
) -> Result<T> {
    let x = x.clone();
    tokio::task::spawn_blocking(move || f(&x))
        .await
        .map_err(|e| ComputerError::new(ErrorCode::Internal, format!("input task failed: {e}")))?
}

/// The focused X top-level, off the async threads.
pub async fn focused(x: &Arc<XInput>) -> Result<Option<TopLevel>> {
    blocking(x, |x| x.focused_toplevel()).await
}

fn refusal(target: &Target, focused: Option<&TopLevel>, tried: bool) -> ComputerError {
    let now = focused.map_or("nothing".to_string(), |t| format!("{:?}", t.title));
    ComputerError::new(
        ErrorCode::InputUnavailable,
        format!(
            "window {:?} does not have keyboard focus ({now} has it){}; synthetic input would \
             go to the wrong window, so none was sent. Bring the window to the front first \
             (keys with --app or --window activate it; or click one of its elements), then retry",
            target.title,
            if tried {
                " and activating it failed"
            } else {
                ""
            }
        ),
    )
    .with_detail(serde_json::json!({
        "target": target.title,
        "focused": focused.map(|t| t.title.clone()),
        "activation_tried": tried,
    }))
}

/// Succeeds when `window` is the focused top-level. With `activate`, a window that
/// is not focused is activated once and checked again.
///
/// Errors: `COMPUTER_INPUT_UNAVAILABLE` when it is not (or could not be made)
/// focused; `COMPUTER_ELEMENT_NOT_FOUND` when the window is gone.
pub async fn ensure_focused(
    bus: &Bus,
    x: &Arc<XInput>,
    window: &ObjRef,
    activate: bool,
) -> Result<()> {
    let target = target_of(bus, window).await?;
    let now = focused(x).await?;
    if now.as_ref().is_some_and(|t| matches(t, &target)) {
        return Ok(());
    }
    if let Some(t) = now
        .as_ref()
        .filter(|t| t.pid.is_some() && t.pid == target.pid)
    {
        let tops = blocking(x, |x| x.toplevels()).await?;
        if is_window(t, &target, &tops) {
            return Ok(());
        }
    }
    if !activate {
        return Err(refusal(&target, now.as_ref(), false));
    }
    let tops = blocking(x, |x| x.toplevels()).await?;
    if let Some(top) = tops.iter().rev().find(|t| matches(t, &target)) {
        let xid = top.xid;
        if let Err(e) = blocking(x, move |x| x.activate(xid)).await {
            tracing::debug!(error = %e, "X activation failed");
        }
    } else {
        let _: Result<bool, _> = bus.call(window, iface::COMPONENT, "GrabFocus", &()).await;
    }
    let until = Instant::now() + GRAB_WAIT;
    loop {
        let now = focused(x).await?;
        if now.as_ref().is_some_and(|t| matches(t, &target)) {
            return Ok(());
        }
        if Instant::now() >= until {
            return Err(refusal(&target, now.as_ref(), true));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskpilot_core::Bounds;

    fn top(pid: Option<u32>, title: &str) -> TopLevel {
        TopLevel {
            xid: 0x200003,
            pid,
            title: title.into(),
            bounds: Bounds::new(0, 0, 800, 600),
        }
    }

    #[test]
    fn a_changed_title_is_the_same_window_when_its_process_has_one() {
        let t = Target {
            pid: Some(812),
            title: "0:0 - Chromium".into(),
        };
        let now = top(Some(812), "1833:450 - Chromium");
        assert!(is_window(&now, &t, &[now.clone(), top(Some(9), "Other")]));
        // Two windows of the process: the title decides.
        assert!(!is_window(
            &now,
            &t,
            &[now.clone(), top(Some(812), "Settings")]
        ));
        assert!(!is_window(
            &top(Some(9), "1833:450 - Chromium"),
            &t,
            &[top(Some(9), "x")]
        ));
    }

    #[test]
    fn pid_and_title_decide() {
        let t = Target {
            pid: Some(812),
            title: "Untitled 1 - Mousepad".into(),
        };
        assert!(matches(&top(Some(812), "Untitled 1 - Mousepad"), &t));
        assert!(
            matches(&top(Some(812), ""), &t),
            "unnamed X window of the right pid"
        );
        assert!(
            !matches(&top(Some(812), "Save As"), &t),
            "another window of the same app"
        );
        assert!(
            !matches(&top(Some(9), "Untitled 1 - Mousepad"), &t),
            "another process"
        );
        assert!(
            matches(&top(None, " Untitled 1 - Mousepad "), &t),
            "no pid: title decides"
        );
        let nameless = Target {
            pid: None,
            title: String::new(),
        };
        assert!(
            !matches(&top(None, ""), &nameless),
            "nothing to compare: no match"
        );
    }
}

//! `launch`: an installed application, started without a shell, under the mode and
//! the refusals (docs/ARCHITECTURE.md §7). The name rules are
//! `deskpilot_policy::launch`; "an installed desktop application's native binary" is
//! [`crate::apps::launchable`]. [`Host::first_window`] then waits until the app's
//! first window can be read through its tree (docs/ARCHITECTURE.md §7.10), or fails
//! `COMPUTER_TIMEOUT` naming the remedy for its toolkit.

use deskpilot_policy::approval::{ActionKey, payload_preview};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::launch::{launch_refused, option_argument};
use deskpilot_policy::mode::Mode;
use deskpilot_policy::refusal::{Refusals, TargetFacts};
use deskpilot_protocol::{ComputerError, ErrorCode};

use std::time::{Duration, Instant};

use deskpilot_core::Handle;
use deskpilot_protocol::types::AppStatus;
use serde::Serialize;

use super::approvals::{Ask, gate};
use super::{Host, ListedApp, ListedWindow, fail, refused};
use crate::control;
use deskpilot_protocol::Result;

/// How often [`Host::first_window`] lists the apps: 100 ms (one listing costs
/// 5–20 ms under Xvfb, so a window is seen within about a tenth of a second).
pub const FIRST_WINDOW_POLL: Duration = Duration::from_millis(100);

/// A launched app's first window whose accessibility tree can be read.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FirstWindow {
    /// The app's name as listings give it: the name `observe` finds it by.
    pub app: String,
    /// The toolkit the app reported, when known.
    pub toolkit: Option<String>,
    pub window: ListedWindow,
}

/// What one listing shows of a launched process.
#[derive(Debug, Clone)]
pub enum Launching {
    /// A window of it can be read through its tree.
    Readable(Box<FirstWindow>),
    /// It shows a window, or is on the accessibility bus, but no window of it can be
    /// read yet (no tree, an empty tree, not answering).
    Unreadable {
        app: String,
        toolkit: Option<String>,
        status: AppStatus,
        windows: usize,
    },
    /// Nothing of it is listed yet.
    Nothing,
}

/// Looks for the launched process in one listing (pure). `ours` says whether a pid
/// is the launched process or one of its descendants; `known` is a window the launch
/// itself already saw (a single-instance app's new window in another process). A
/// window is readable when its app's status is `ok` and it has a tree (not
/// `no_tree`).
pub fn launch_progress(
    apps: &[ListedApp],
    ours: impl Fn(u32) -> bool,
    known: Option<&Handle>,
) -> Launching {
    let mut seen = Launching::Nothing;
    for app in apps {
        let mine = app.pid.is_some_and(&ours);
        let has_known = known.is_some_and(|k| app.windows.iter().any(|w| &w.window.handle == k));
        if !mine && !has_known {
            continue;
        }
        let readable = app.windows.iter().find(|w| {
            app.status == AppStatus::Ok
                && !w.window.no_tree
                && (mine || known == Some(&w.window.handle))
        });
        if let Some(w) = readable {
            return Launching::Readable(Box::new(FirstWindow {
                app: app.name.clone(),
                toolkit: app.toolkit.clone(),
                window: w.clone(),
            }));
        }
        // An app on the bus is a better witness than an X11 window without a tree.
        let better = match &seen {
            Launching::Unreadable { toolkit, .. } => toolkit.is_none() && app.toolkit.is_some(),
            _ => true,
        };
        if better {
            seen = Launching::Unreadable {
                app: app.name.clone(),
                toolkit: app.toolkit.clone(),
                status: app.status,
                windows: app.windows.len(),
            };
        }
    }
    seen
}

/// An app status as the wire spells it.
fn status_word(s: AppStatus) -> &'static str {
    match s {
        AppStatus::Ok => "ok",
        AppStatus::NotResponding => "not_responding",
        AppStatus::AccessibilityDisabled => "accessibility_disabled",
    }
}

/// The error of a launch whose first window could not be read within `wait_ms`
/// (pure): `COMPUTER_TIMEOUT`, saying what was seen and, when the app showed itself
/// but no tree, the remedy for its toolkit ([`deskpilot_core::toolkit::remedy`]). `detail`:
/// `{pid, wait_ms, app?, toolkit?, status?, windows?}`.
pub fn launch_timeout(program: &str, pid: u32, wait_ms: u64, last: &Launching) -> ComputerError {
    let program = deskpilot_core::sanitize::one_line(program);
    match last {
        Launching::Unreadable {
            app,
            toolkit,
            status,
            windows,
        } => {
            let shown = if *windows > 0 {
                format!("shows {windows} window(s)")
            } else {
                "is on the accessibility bus".to_string()
            };
            let tk = toolkit
                .as_deref()
                .map(|t| format!(" (toolkit {t})"))
                .unwrap_or_default();
            fail(
                ErrorCode::Timeout,
                format!(
                    "launched {program} (pid {pid}): app {:?}{tk} {shown}, but no window of it could be read through its accessibility tree within {wait_ms} ms (status {}). If it is slow to start, wait for it (`wait --window-title`, computer_wait); otherwise restart it with accessibility on: {}",
                    deskpilot_core::sanitize::one_line(app),
                    status_word(*status),
                    deskpilot_core::toolkit::remedy(toolkit.as_deref()),
                ),
            )
            .with_detail(serde_json::json!({
                "pid": pid,
                "wait_ms": wait_ms,
                "app": app,
                "toolkit": toolkit,
                "status": status_word(*status),
                "windows": windows,
            }))
        }
        _ => fail(
            ErrorCode::Timeout,
            format!(
                "launched {program} (pid {pid}), but it showed no window within {wait_ms} ms; it may still be starting (wait for it with `wait --window-title`, computer_wait, or list apps), or it ended without one"
            ),
        )
        .with_detail(serde_json::json!({ "pid": pid, "wait_ms": wait_ms })),
    }
}

impl Host {
    /// Launches an app (`argv`, no shell) on the host's desktop and waits up to
    /// `wait_ms` for its first window. Launching acts on the desktop, so plan mode
    /// refuses it (`COMPUTER_SCOPE_VIOLATION`) and it is audited; it does not bind the
    /// grant (observe the new window to work in it).
    pub async fn launch(
        &mut self,
        argv: Vec<String>,
        wait_ms: Option<u64>,
    ) -> Result<deskpilot_protocol::types::LaunchResult> {
        let now = control::now_ms();
        self.preflight(now)?;
        let program = argv.first().cloned().unwrap_or_default();
        if program.is_empty() {
            return Err(fail(
                ErrorCode::InvalidArgument,
                "say which program to launch, e.g. [\"mousepad\"]",
            ));
        }
        if self.o.settings.mode == Mode::Plan {
            let e = fail(
                ErrorCode::ScopeViolation,
                "plan mode is read-only: launching an app is an action. Change it with `deskpilot config set mode default`",
            );
            return Err(self.refuse(e, Some("launch"), Some(&program)));
        }
        let (app, facts) = match vet_launch(&argv, &self.rules) {
            Ok(v) => v,
            Err(e) => return Err(self.refuse(e, Some("launch"), Some(&program))),
        };
        let real = Some(app.executable.clone());
        self.ensure_grant(now)?;
        // Launching is an action on a new app: the mode decides (first use asks in
        // `default`, the allow-list rules `accept-edits` and `unattended`).
        let payload = argv.join("\u{0}");
        let key = ActionKey::new(
            &format!("{}/{}/launch", self.o.desktop_key, self.o.session),
            &real
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            "launch",
            Some(&payload),
        );
        let summary = format!("launch {}", payload_preview(&argv.join(" ")));
        let approved_apps = self.policy().approved_apps.clone();
        let ask = Ask {
            target: &facts,
            key,
            screen: 0,
            summary,
            irreversible: None,
        };
        let passed = match gate(&self.o, &approved_apps, ask) {
            Ok(a) => a,
            Err(e) => return Err(self.refuse(e, Some("launch"), Some(&program))),
        };
        if passed.first_use {
            self.remember_app(&facts);
        }
        let r = self
            .session
            .driver()
            .launch(deskpilot_protocol::types::LaunchParams {
                command: argv,
                wait_ms,
            })
            .await;
        self.audit(AuditRecord {
            event: Some(AuditEvent::Action),
            op: Some("launch".into()),
            text_len: Some(payload.chars().count()),
            app: Some(program),
            pid: r.as_ref().ok().map(|l| l.pid),
            status: Some(if r.is_ok() { "executed" } else { "failed" }.into()),
            code: r.as_ref().err().map(|e| e.code.as_str().to_string()),
            ..AuditRecord::default()
        });
        self.session.save()?;
        r
    }
}

impl Host {
    /// Waits up to `wait_ms` for the first window of process `pid` (or of a
    /// descendant; or `known`, a window the launch already saw) that can be read
    /// through its accessibility tree, listing the apps every
    /// [`FIRST_WINDOW_POLL`]. Once it returns, `observe` by its `app` name reads it.
    ///
    /// Errors: `COMPUTER_TIMEOUT` ([`launch_timeout`]) when no window became
    /// readable in time; the listing's own errors.
    pub async fn first_window(
        &mut self,
        program: &str,
        pid: u32,
        known: Option<Handle>,
        wait_ms: u64,
    ) -> Result<FirstWindow> {
        let deadline = Instant::now() + Duration::from_millis(wait_ms);
        let ours = |p: u32| p == pid || control::ancestors(p).contains(&pid);
        loop {
            let apps = self.apps().await?;
            let last = launch_progress(&apps, ours, known.as_ref());
            if let Launching::Readable(w) = last {
                return Ok(*w);
            }
            if Instant::now() >= deadline {
                return Err(launch_timeout(program, pid, wait_ms, &last));
            }
            tokio::time::sleep(FIRST_WINDOW_POLL).await;
        }
    }
}

/// The launch rules every launcher applies, the host's and the driver's (docs/
/// ARCHITECTURE.md §7): no interpreter, terminal or privilege tool by name (as called
/// and as resolved), no option arguments, an installed application's native binary
/// only, and the window refusals on what would run. Returns the application and the
/// facts the mode judges (`exe`: the resolved executable's file name).
///
/// Errors: `COMPUTER_DENYLISTED`, `COMPUTER_INVALID_ARGUMENT` (an option),
/// `COMPUTER_ELEMENT_NOT_FOUND` (not installed), `COMPUTER_SCOPE_VIOLATION` (not an
/// installed application), or the window refusal's code.
pub fn vet_launch(
    argv: &[String],
    rules: &Refusals,
) -> Result<(crate::apps::DesktopApp, TargetFacts), ComputerError> {
    let program = argv.first().cloned().unwrap_or_default();
    if program.is_empty() {
        return Err(fail(
            ErrorCode::InvalidArgument,
            "say which program to launch, e.g. [\"mousepad\"]",
        ));
    }
    if let Some(p) = argv.iter().skip(1).find_map(|a| rules.protected_in(a)) {
        return Err(fail(
            ErrorCode::ScopeViolation,
            format!(
                "{:?} is one of deskpilot's own files: no app is opened on its config, approvals, stop record or audit",
                deskpilot_core::sanitize::one_line(&p)
            ),
        ));
    }
    let refuse_launch = |hit: &str| {
        fail(
            ErrorCode::Denylisted,
            format!(
                "{hit:?} is a command interpreter, terminal or privilege tool: deskpilot launches applications, never programs that would run arbitrary commands outside every refusal (built-in rule, cannot be removed)"
            ),
        )
    };
    let file_name = |p: &std::path::Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
    };
    let called = file_name(std::path::Path::new(&program));
    if launch_refused(&called) {
        return Err(refuse_launch(&called));
    }
    if let Some(opt) = option_argument(argv) {
        return Err(fail(
            ErrorCode::InvalidArgument,
            format!(
                "{:?}: launch takes an application and files or URLs to open, not options (an option can make an application run commands)",
                deskpilot_core::sanitize::one_line(opt)
            ),
        ));
    }
    // What would really run: an installed application's native binary.
    let app = crate::apps::launchable(&program).map_err(|e| match e {
        crate::apps::NotLaunchable::Missing(why) => fail(ErrorCode::ElementNotFound, why),
        crate::apps::NotLaunchable::Refused(why) => fail(ErrorCode::ScopeViolation, why),
    })?;
    let real_name = file_name(&app.executable);
    if launch_refused(&real_name) {
        return Err(refuse_launch(&real_name));
    }
    let facts = TargetFacts {
        app: called.clone(),
        title: String::new(),
        pid: None,
        uid: None,
        exe: Some(real_name.clone()),
        focused_password: false,
        pty_master: false,
        pty_unknown: false,
        toolkit: None,
    };
    if let Some(r) = rules.check_window(&facts) {
        return Err(refused(r));
    }
    // Its tier (docs/ARCHITECTURE.md §7.22): a `read` app is not started by the
    // agent at all; files or URLs to open are text it hands the app (a `mailto:`
    // body, a URL that carries data out), which needs `type`.
    let needed = if argv.len() > 1 {
        (
            deskpilot_policy::tier::Tier::Type,
            "launching it with files or URLs to open",
        )
    } else {
        (deskpilot_policy::tier::Tier::Click, "launching it")
    };
    if let Some(r) =
        deskpilot_policy::tier::check(&called, rules.tier_of(&facts), needed.0, needed.1)
    {
        return Err(refused(r));
    }
    Ok((app, facts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskpilot_core::{Handle, Role};
    use deskpilot_protocol::types::WindowInfo;

    fn window(handle: &str, no_tree: bool) -> ListedWindow {
        ListedWindow {
            ref_: "w1".into(),
            window: WindowInfo {
                handle: Handle::new(handle),
                app: String::new(),
                pid: None,
                title: "Calculator".into(),
                role: Role::Window,
                active: true,
                bounds: None,
                device_bounds: None,
                toolkit_scale: None,
                no_tree,
                covered_by: Vec::new(),
                hidden: None,
            },
            bound: false,
            refused: None,
            not_viewable: None,
        }
    }

    fn app(
        name: &str,
        pid: u32,
        status: AppStatus,
        toolkit: Option<&str>,
        w: Vec<ListedWindow>,
    ) -> ListedApp {
        ListedApp {
            name: name.into(),
            pid: Some(pid),
            status,
            toolkit: toolkit.map(str::to_string),
            tier: deskpilot_policy::tier::Tier::Type,
            code: false,
            exe: None,
            windows: w,
        }
    }

    #[test]
    fn a_launch_waits_for_a_window_with_a_tree() {
        let ours = |p: u32| p == 7;
        // Mapped on X11 before the app registered on the accessibility bus.
        let early = [app(
            "gnome-calculator",
            7,
            AppStatus::AccessibilityDisabled,
            Some("GTK"),
            vec![window("x11win:5.7", true)],
        )];
        let last = launch_progress(&early, ours, None);
        let Launching::Unreadable { toolkit, .. } = &last else {
            panic!("{last:?}");
        };
        assert_eq!(toolkit.as_deref(), Some("GTK"));
        let e = launch_timeout("gnome-calculator", 7, 3000, &last);
        assert_eq!(e.code, ErrorCode::Timeout);
        assert!(e.message.contains("NO_AT_BRIDGE"), "{}", e.message);
        // Registered: its window is read through the tree.
        let ready = [
            app(
                "mousepad",
                3,
                AppStatus::Ok,
                Some("GTK"),
                vec![window(":1.2|/a", false)],
            ),
            app(
                "gnome-calculator",
                7,
                AppStatus::Ok,
                Some("GTK"),
                vec![window(":1.9|/b", false)],
            ),
        ];
        let Launching::Readable(w) = launch_progress(&ready, ours, None) else {
            panic!("readable");
        };
        assert_eq!(w.app, "gnome-calculator");
        assert_eq!(w.window.window.handle.as_str(), ":1.9|/b");
        // Another process's window is never taken for ours.
        assert!(matches!(
            launch_progress(&ready[..1], ours, None),
            Launching::Nothing
        ));
        let e = launch_timeout("gnome-calculator", 7, 3000, &Launching::Nothing);
        assert!(
            e.message.contains("no window within 3000 ms"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_qt_app_without_its_tree_is_told_the_qt_remedy() {
        let qt = [app(
            "qt_probe.py",
            9,
            AppStatus::AccessibilityDisabled,
            Some("Qt"),
            vec![window("x11win:3.9", true)],
        )];
        let last = launch_progress(&qt, |p| p == 9, None);
        let e = launch_timeout("python3", 9, 1000, &last);
        assert!(
            e.message.contains("QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1"),
            "{}",
            e.message
        );
        assert_eq!(e.detail.as_ref().unwrap()["toolkit"], "Qt");
    }
}

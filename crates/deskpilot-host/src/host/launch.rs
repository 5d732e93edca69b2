//! `launch`: an installed application, started without a shell, under the mode and
//! the refusals (docs/ARCHITECTURE.md §7). The name rules are
//! `deskpilot_policy::launch`; "an installed desktop application's native binary" is
//! [`crate::apps::launchable`].

use deskpilot_policy::approval::{ActionKey, payload_preview};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::launch::{launch_refused, option_argument};
use deskpilot_policy::mode::Mode;
use deskpilot_policy::refusal::{Refusals, TargetFacts};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::approvals::{Ask, gate};
use super::{Host, fail, refused};
use crate::control;

impl Host {
    /// Launches an app (`argv`, no shell) on the host's desktop and waits up to
    /// `wait_ms` for its first window. Launching acts on the desktop, so plan mode
    /// refuses it (`COMPUTER_SCOPE_VIOLATION`) and it is audited; it does not bind the
    /// grant (observe the new window to work in it).
    pub async fn launch(
        &mut self,
        argv: Vec<String>,
        wait_ms: Option<u64>,
    ) -> Result<deskpilot_protocol::types::LaunchResult, ComputerError> {
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
    };
    if let Some(r) = rules.check_window(&facts) {
        return Err(refused(r));
    }
    Ok((app, facts))
}

//! The application list as text: what `deskpilot apps` prints and what the
//! `computer_apps` tool shows the model, one block per application.

use deskpilot_core::sanitize::one_line;
use deskpilot_protocol::types::AppStatus;

use crate::host::ListedApp;

/// What the list says when the desktop has no application at all.
pub const NO_APPS: &str = "no applications on the accessibility bus";

/// One application's block, without a trailing newline: `app NAME pid=N tier=TIER
/// [status]` (the tier only when it is not the default `type`, docs/ARCHITECTURE.md
/// §7.22; the status only when it is not `ok`), then one line per window, `  [wN] ROLE
/// "TITLE"` followed by ` active`, ` · bound`, ` · no tree` (a window of a readable
/// app that its tree does not hold), ` · not viewable (WHY)` and
/// ` · refused CODE: REASON` as they apply. Names and titles are made one line.
pub fn render_app(app: &ListedApp) -> String {
    let status = match app.status {
        AppStatus::Ok => "",
        AppStatus::NotResponding => " [not_responding]",
        AppStatus::AccessibilityDisabled => " [accessibility_disabled]",
    };
    let pid = app.pid.map(|p| format!(" pid={p}")).unwrap_or_default();
    let tier = match app.tier {
        deskpilot_policy::tier::Tier::Type => String::new(),
        t => format!(" tier={t}"),
    };
    let mut text = format!("app {}{pid}{tier}{status}", one_line(&app.name));
    for w in &app.windows {
        text.push_str(&format!(
            "\n  [{}] {} \"{}\"{}{}",
            w.ref_,
            w.window.role,
            one_line(&w.window.title),
            if w.window.active { " active" } else { "" },
            if w.bound { " · bound" } else { "" },
        ));
        // A window of a readable app that its tree does not hold (a second
        // toolkit that never registered); an app without a tree says so once.
        if w.window.no_tree && app.status == AppStatus::Ok {
            text.push_str(" · no tree");
        }
        if let Some(why) = w.not_viewable {
            text.push_str(&format!(" · not viewable ({why})"));
        }
        if let Some(r) = &w.refused {
            text.push_str(&format!(" · refused {}: {}", r.code.as_str(), r.reason));
        }
    }
    text
}

/// Every application's block ([`render_app`]), each followed by a newline; [`NO_APPS`]
/// and a newline when there is none.
pub fn render_apps(apps: &[ListedApp]) -> String {
    if apps.is_empty() {
        return format!("{NO_APPS}\n");
    }
    let mut text = String::new();
    for app in apps {
        text.push_str(&render_app(app));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use deskpilot_core::{Handle, Role};
    use deskpilot_policy::refusal::Refusal;
    use deskpilot_policy::tier::Tier;
    use deskpilot_protocol::ErrorCode;
    use deskpilot_protocol::types::WindowInfo;

    use super::*;
    use crate::host::ListedWindow;

    fn window(ref_: &str, title: &str, active: bool, bound: bool) -> ListedWindow {
        ListedWindow {
            ref_: ref_.into(),
            window: WindowInfo {
                device_bounds: None,
                toolkit_scale: None,
                no_tree: false,
                covered_by: Vec::new(),
                hidden: None,
                handle: Handle::new(format!(":1.5|/{ref_}")),
                app: "mousepad".into(),
                pid: Some(42),
                title: title.into(),
                role: Role::Window,
                active,
                bounds: None,
            },
            bound,
            refused: None,
            not_viewable: None,
        }
    }

    #[test]
    fn a_window_its_readable_app_does_not_hold_in_its_tree_says_so() {
        let mut qt = window("w2", "Qt side", false, false);
        qt.window.no_tree = true;
        let mut app = ListedApp {
            name: "mixed".into(),
            pid: Some(42),
            status: AppStatus::Ok,
            toolkit: None,
            tier: Tier::Type,
            code: false,
            exe: None,
            windows: vec![window("w1", "GTK side", true, true), qt],
        };
        assert_eq!(
            render_app(&app),
            "app mixed pid=42\n  [w1] window \"GTK side\" active · bound\n  [w2] window \"Qt side\" · no tree"
        );
        // An app without a tree says it once, on its own line.
        app.status = AppStatus::AccessibilityDisabled;
        app.windows.remove(0);
        assert_eq!(
            render_app(&app),
            "app mixed pid=42 [accessibility_disabled]\n  [w2] window \"Qt side\""
        );
    }

    #[test]
    fn each_app_is_a_block_with_its_windows() {
        let mut refused = window("w3", "Unlock keyring", false, false);
        refused.window.role = Role::Dialog;
        refused.refused = Some(Refusal {
            code: ErrorCode::Denylisted,
            reason: "gcr-prompter is on the built-in deny-list".into(),
        });
        let apps = [
            ListedApp {
                name: "mousepad".into(),
                pid: Some(42),
                status: AppStatus::Ok,
                toolkit: None,
                tier: Tier::Type,
                code: false,
                exe: None,
                windows: vec![
                    window("w1", "notes.txt\nsecond line", true, true),
                    window("w2", "Untitled", false, false),
                ],
            },
            ListedApp {
                name: "gcr-prompter".into(),
                pid: None,
                status: AppStatus::NotResponding,
                toolkit: None,
                tier: Tier::Type,
                code: false,
                exe: None,
                windows: vec![refused],
            },
            ListedApp {
                name: "notes".into(),
                pid: Some(7),
                status: AppStatus::Ok,
                toolkit: None,
                tier: Tier::Click,
                code: false,
                exe: None,
                windows: vec![],
            },
        ];
        assert_eq!(
            render_app(&apps[0]),
            "app mousepad pid=42\n  [w1] window \"notes.txt\\nsecond line\" active · bound\n  [w2] window \"Untitled\""
        );
        assert_eq!(
            render_apps(&apps),
            "app mousepad pid=42\n  [w1] window \"notes.txt\\nsecond line\" active · bound\n  [w2] window \"Untitled\"\n\
             app gcr-prompter [not_responding]\n  [w3] dialog \"Unlock keyring\" · refused COMPUTER_DENYLISTED: gcr-prompter is on the built-in deny-list\n\
             app notes pid=7 tier=click\n"
        );
    }

    #[test]
    fn an_empty_desktop_says_so() {
        assert_eq!(render_apps(&[]), format!("{NO_APPS}\n"));
    }
}

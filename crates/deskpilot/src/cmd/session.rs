//! `deskpilot apps|observe|find|act|keys|wait`: commands that work on a desktop
//! through a host session. Refs persist between invocations in the desktop's state
//! file (see `deskpilot_host::store`).

use std::sync::Arc;
use std::time::Duration;

use deskpilot_core::{Op, Role};
use deskpilot_driver_linux::LinuxDriver;
use deskpilot_driver_linux::atspi::ConnectOptions;
use deskpilot_host::session::WaitFor;
use deskpilot_host::store::desktop_key;
use deskpilot_host::{ObserveOptions, Session, StateStore, Target};
use deskpilot_protocol::types::AppStatus;
use deskpilot_protocol::{DriverError, ErrorCode};
use serde::Serialize;

use crate::TargetArgs;
use crate::output::print_ok;
use crate::target::{self, Desktop};

/// Connects the Linux driver to a desktop.
pub async fn connect(desktop: &Desktop) -> Result<LinuxDriver, DriverError> {
    LinuxDriver::connect(ConnectOptions::from_vars(desktop.vars.clone())).await
}

/// Opens a session on the desktop the command line names.
pub async fn open(sandbox: Option<u32>) -> Result<(Session, Desktop), DriverError> {
    let desktop = target::resolve(sandbox)?;
    let driver = connect(&desktop).await?;
    // A sandbox keeps its refs in its own directory, removed when it stops, so a
    // later sandbox on the same display number starts afresh.
    let key = desktop_key(&desktop.display, &desktop.bus_address);
    let store = match &desktop.sandbox_dir {
        Some(dir) => StateStore::open_in(dir, &key)?,
        None => StateStore::open(&key)?,
    };
    Ok((Session::new(Arc::new(driver), store), desktop))
}

fn to_target(t: &TargetArgs) -> Target {
    match (&t.app, &t.window) {
        (Some(a), _) => Target::App(a.clone()),
        (None, Some(w)) => Target::Window(w.clone()),
        (None, None) => Target::Current,
    }
}

fn parse_role(s: &str) -> Result<Role, DriverError> {
    Role::from_name(&s.to_lowercase()).ok_or_else(|| {
        DriverError::new(
            ErrorCode::InvalidArgument,
            format!(
                "{s:?} is not a role; roles: {}",
                Role::ALL
                    .iter()
                    .map(|r| r.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })
}

fn parse_op(s: &str) -> Result<Op, DriverError> {
    Op::from_name(&s.to_lowercase().replace('-', "_")).ok_or_else(|| {
        DriverError::new(
            ErrorCode::InvalidArgument,
            format!(
                "{s:?} is not an op; ops: {}",
                Op::ALL
                    .iter()
                    .map(|o| o.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })
}

#[derive(Serialize)]
struct AppRow {
    name: String,
    pid: Option<u32>,
    status: AppStatus,
    windows: Vec<WindowRow>,
}

#[derive(Serialize)]
struct WindowRow {
    #[serde(rename = "ref")]
    ref_: String,
    title: String,
    role: Role,
    active: bool,
}

pub async fn apps(json: bool, sandbox: Option<u32>) -> Result<(), DriverError> {
    let (mut s, _) = open(sandbox).await?;
    let apps = s.apps().await?;
    let mut text = String::new();
    let mut rows = Vec::new();
    for (app, refs) in apps {
        let status = match app.status {
            AppStatus::Ok => String::new(),
            AppStatus::NotResponding => " [not_responding]".into(),
            AppStatus::AccessibilityDisabled => " [accessibility_disabled]".into(),
        };
        let pid = app.pid.map(|p| format!(" pid={p}")).unwrap_or_default();
        text.push_str(&format!(
            "app {}{pid}{status}\n",
            deskpilot_core::sanitize::one_line(&app.name)
        ));
        let mut windows = Vec::new();
        for (w, r) in app.windows.iter().zip(refs) {
            text.push_str(&format!(
                "  [{r}] {} \"{}\"{}\n",
                w.role,
                deskpilot_core::sanitize::one_line(&w.title),
                if w.active { " active" } else { "" }
            ));
            windows.push(WindowRow {
                ref_: r,
                title: w.title.clone(),
                role: w.role,
                active: w.active,
            });
        }
        rows.push(AppRow {
            name: app.name,
            pid: app.pid,
            status: app.status,
            windows,
        });
    }
    if rows.is_empty() {
        text.push_str("no applications on the accessibility bus");
    }
    print_ok(json, &serde_json::json!({ "apps": rows }), &text);
    Ok(())
}

pub async fn observe(
    json: bool,
    sandbox: Option<u32>,
    target: TargetArgs,
    scope: Option<String>,
    query: Option<String>,
    max_tokens: usize,
) -> Result<(), DriverError> {
    if max_tokens < 50 {
        return Err(DriverError::new(
            ErrorCode::InvalidArgument,
            "--max-tokens must be at least 50 so a snapshot can say what it cut",
        ));
    }
    let (mut s, _) = open(sandbox).await?;
    let obs = s
        .observe(
            &to_target(&target),
            &ObserveOptions {
                scope,
                query,
                max_tokens,
            },
        )
        .await?;
    let text = format!(
        "{}\n({} tokens · read {} objects in {} ms)",
        obs.text.trim_end(),
        obs.tokens,
        obs.stats.objects,
        obs.elapsed_ms
    );
    print_ok(json, &obs, &text);
    Ok(())
}

pub async fn find(
    json: bool,
    sandbox: Option<u32>,
    text: String,
    role: Option<String>,
    target: TargetArgs,
    limit: usize,
) -> Result<(), DriverError> {
    let role = role.as_deref().map(parse_role).transpose()?;
    let (mut s, _) = open(sandbox).await?;
    let hits = s.find(&to_target(&target), &text, role, limit).await?;
    let mut out = String::new();
    for h in &hits {
        out.push_str(&format!("{}   (in {})\n", h.line, h.window_ref));
    }
    if hits.is_empty() {
        out.push_str(&format!("no element matches {text:?}"));
    }
    print_ok(json, &serde_json::json!({ "matches": hits }), &out);
    Ok(())
}

pub async fn act(
    json: bool,
    sandbox: Option<u32>,
    r: String,
    op: String,
    value: Option<String>,
) -> Result<(), DriverError> {
    let op = parse_op(&op)?;
    let (mut s, _) = open(sandbox).await?;
    let out = s.act(&r, op, value).await?;
    print_ok(
        json,
        &out,
        &format!("{}\n({} tokens)", out.text, out.tokens),
    );
    Ok(())
}

pub async fn keys(
    json: bool,
    sandbox: Option<u32>,
    keys: String,
    literal: bool,
    target: TargetArgs,
) -> Result<(), DriverError> {
    let (mut s, _) = open(sandbox).await?;
    let (chord, text) = if literal {
        (None, Some(keys.clone()))
    } else {
        (Some(keys.clone()), None)
    };
    let out = s.keys(&to_target(&target), chord, text).await?;
    print_ok(
        json,
        &out,
        &format!("{}\n({} tokens)", out.text, out.tokens),
    );
    Ok(())
}

/// The condition flags of `deskpilot wait`.
pub struct WaitArgs {
    pub text: Option<String>,
    pub gone: Option<String>,
    pub role: Option<String>,
    pub name: Option<String>,
    pub window_title: Option<String>,
}

pub async fn wait(
    json: bool,
    sandbox: Option<u32>,
    target: TargetArgs,
    w: WaitArgs,
    timeout_ms: u64,
) -> Result<(), DriverError> {
    let cond = if let Some(t) = w.text {
        WaitFor::Text(t)
    } else if let Some(t) = w.gone {
        WaitFor::Gone(t)
    } else if let (Some(r), Some(n)) = (w.role, w.name) {
        WaitFor::Element {
            role: parse_role(&r)?,
            name: n,
        }
    } else if let Some(t) = w.window_title {
        WaitFor::Window(t)
    } else {
        return Err(DriverError::new(
            ErrorCode::InvalidArgument,
            "say what to wait for: --text T, --gone T, --role R --name N, or --window-title T",
        ));
    };
    let (mut s, _) = open(sandbox).await?;
    let out = s
        .wait(
            &to_target(&target),
            &cond,
            Duration::from_millis(timeout_ms),
        )
        .await?;
    let mut text = format!("ok condition met after {} ms", out.elapsed_ms);
    for h in &out.hits {
        text.push_str(&format!("\n{}", h.line));
    }
    print_ok(json, &out, &text);
    Ok(())
}

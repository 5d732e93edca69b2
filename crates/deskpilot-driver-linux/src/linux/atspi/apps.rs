//! Applications and their top-level windows.
//!
//! Owns `apps.list` / `windows.list` and the [`WindowInfo`] of one window: the
//! registry's children are the applications; each is asked, concurrently and each
//! call under the timeout, for its name, toolkit, pid (from the bus daemon, which
//! answers even for a frozen app) and top-level windows. One frozen application is
//! reported `not_responding` after one call timeout and never delays the others. An
//! application exposing no children is reported `accessibility_disabled`.
//!
//! Windows listed are the application root's children with `VISIBLE` set (GTK keeps
//! hidden dialogs and popovers as children too). Chromium (toolkit `Chromium`, also
//! Electron) lists its popup surfaces (the address bar's suggestion popup and
//! others, created at start) among the application's children with `SHOWING` and
//! `VISIBLE` set while they are not on screen; only their `GetIndexInParent` of `-1`
//! tells them apart (measured, Chromium 156: the popup answers `-1` until it opens,
//! then its index). Such windows are left out ([`is_hidden_chromium_surface`]).

use deskpilot_core::Bounds;
use deskpilot_protocol::types::{AppInfo, AppStatus, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};
use futures_util::future::join_all;

use super::connection::{Bus, CallError, iface};
use super::details::extents;
use super::frozen;
use super::handle::{ObjRef, REGISTRY_BUS, ROOT_PATH};
use super::role_map::{map_role_code, toplevel_role};
use super::state_map::RawStates;
use super::walk::get_children;
use crate::linux::input::TopLevel;
use deskpilot_protocol::Result;

/// The process name an app without an accessible name is listed under: its command
/// line's program name ([`deskpilot_os::process_name`]), so that the name given to
/// launch it finds it (`gnome-calculator`, never the 15-byte `comm`).
fn proc_name(pid: u32) -> Option<String> {
    deskpilot_os::process_name(pid)
}

/// The toolkit a process draws with, guessed from the files it maps (pure; one
/// `/proc/PID/maps` image): `Qt` (`libQt5Gui`, `libQt6Gui`), `Java` (`libjvm`),
/// `Chromium` (Chromium and Electron map their `.pak` resources and `icudtl.dat`;
/// they link no toolkit library of their own), `GTK` (`libgtk-3`, `libgtk-4`,
/// `libgtk-x11-2.0`), in that order (Java and Chromium load GTK too). For apps that
/// publish no tree, whose `Application.ToolkitName` cannot be asked, so the remedy
/// for their toolkit can be named.
pub fn toolkit_of_maps(maps: &str) -> Option<&'static str> {
    let has = |needle: &str| maps.contains(needle);
    if has("libQt5Gui") || has("libQt6Gui") {
        Some("Qt")
    } else if has("/libjvm.so") {
        Some("Java")
    } else if has("icudtl.dat") || has("resources.pak") {
        Some(CHROMIUM_TOOLKIT)
    } else if has("libgtk-3.so") || has("libgtk-4.so") || has("libgtk-x11-2.0.so") {
        Some("GTK")
    } else {
        None
    }
}

/// [`toolkit_of_maps`] of process `pid`; `None` when its maps are unreadable.
pub(crate) fn proc_toolkit(pid: u32) -> Option<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    toolkit_of_maps(&maps).map(str::to_string)
}

/// Reads one window's record. `app` and `pid` are the owner's.
pub async fn window_info(
    bus: &Bus,
    win: &ObjRef,
    app: &str,
    pid: Option<u32>,
) -> Result<(WindowInfo, RawStates), CallError> {
    let a = iface::ACCESSIBLE;
    let (role, states, title) = tokio::try_join!(
        bus.call::<_, u32>(win, a, "GetRole", &()),
        bus.call::<_, Vec<u32>>(win, a, "GetState", &()),
        bus.prop::<String>(win, a, "Name"),
    )?;
    let states = RawStates::from_words(&states);
    let bounds = if states.has(atspi::State::Visible) {
        match extents(bus, win).await {
            Ok(b) => Some(b),
            Err(e) if e.is_timeout() || e.is_gone() => return Err(e),
            Err(_) => None,
        }
    } else {
        None
    };
    Ok((
        WindowInfo {
            device_bounds: None,
            toolkit_scale: None,
            no_tree: false,
            covered_by: Vec::new(),
            // GTK says so of a window the window manager iconified.
            hidden: states
                .has(atspi::State::Iconified)
                .then_some(deskpilot_protocol::types::Hidden::Minimized),
            handle: win.to_handle(),
            app: app.to_string(),
            pid,
            title: title.trim().to_string(),
            role: toplevel_role(map_role_code(role)),
            active: states.has(atspi::State::Active),
            bounds: bounds.filter(|b: &Bounds| !b.is_empty()),
        },
        states,
    ))
}

/// The toolkit name Chromium and Electron report on their application object.
pub const CHROMIUM_TOOLKIT: &str = "Chromium";

fn is_chromium(toolkit: Option<&str>) -> bool {
    toolkit.is_some_and(|t| t.eq_ignore_ascii_case(CHROMIUM_TOOLKIT))
}

/// True when a top-level child of a Chromium application is one of its hidden
/// popup surfaces: Chromium reports index `-1` in parent for them (pure).
pub fn is_hidden_chromium_surface(toolkit: Option<&str>, index_in_parent: i32) -> bool {
    is_chromium(toolkit) && index_in_parent < 0
}

/// True when a Chromium window reports `count` children and gives `readable` of
/// them: a window whose children are all null objects (pure). Chromium answers so
/// when its accessibility is off (no `--force-renderer-accessibility`, no screen
/// reader detected): its frame has one child, and that child is the null object.
pub fn chromium_window_blank(count: i32, readable: usize) -> bool {
    count > 0 && readable == 0
}

/// Reads one application: never fails, a timeout becomes `not_responding`.
pub async fn app_info(bus: &Bus, root: ObjRef) -> AppInfo {
    let a = iface::ACCESSIBLE;
    // The bus daemon answers for the pid and uid, whatever the app's state.
    let (pid, uid) = tokio::join!(bus.pid_of(&root.bus), bus.uid_of(&root.bus));
    let pid = pid.ok();
    // One short probe first: an app that does not answer it costs that much, not a
    // call timeout per question, and is remembered (frozen::remember) so that the
    // next reads, in this process or another, give it only 50 ms.
    let name = match tokio::time::timeout(
        frozen::probe_time(pid),
        bus.prop::<String>(&root, a, "Name"),
    )
    .await
    {
        Ok(r) if !r.as_ref().is_err_and(|e| e.is_timeout()) => r,
        _ => {
            if let Some(p) = pid {
                frozen::remember(p);
            }
            return AppInfo {
                handle: root.to_handle(),
                name: pid.and_then(proc_name).unwrap_or_default(),
                pid,
                uid: uid.ok(),
                exe: None,
                pty_master: None,
                toolkit: None,
                status: AppStatus::NotResponding,
                windows: Vec::new(),
            };
        }
    };
    if let Some(p) = pid {
        // It answered: off the record, if it was on it.
        frozen::forget(p);
    }
    let (toolkit, children) = tokio::join!(
        bus.prop::<String>(&root, iface::APPLICATION, "ToolkitName"),
        get_children(bus, &root),
    );
    let mut status = AppStatus::Ok;
    let name = match name {
        Ok(n) if !n.trim().is_empty() => n.trim().to_string(),
        Ok(_) => pid.and_then(proc_name).unwrap_or_default(),
        Err(e) => {
            if e.is_timeout() {
                status = AppStatus::NotResponding;
            }
            pid.and_then(proc_name).unwrap_or_default()
        }
    };
    let toolkit = match toolkit {
        Ok(t) if !t.is_empty() => Some(t),
        Err(e) if e.is_timeout() => {
            status = AppStatus::NotResponding;
            None
        }
        _ => None,
    };
    let mut windows = Vec::new();
    match children {
        Ok(kids) if kids.is_empty() && status == AppStatus::Ok => {
            status = AppStatus::AccessibilityDisabled;
        }
        Ok(kids) => {
            let chromium = is_chromium(toolkit.as_deref());
            let app_name = name.as_str();
            let infos = join_all(kids.iter().map(|k| async move {
                let info = window_info(bus, k, app_name, pid).await?;
                let (index, blank) = if chromium {
                    let (index, count, inside) = tokio::join!(
                        bus.call::<_, i32>(k, iface::ACCESSIBLE, "GetIndexInParent", &()),
                        bus.prop::<i32>(k, iface::ACCESSIBLE, "ChildCount"),
                        get_children(bus, k),
                    );
                    let blank = chromium_window_blank(count?, inside?.len());
                    (index?, blank)
                } else {
                    (0, false)
                };
                Ok::<_, CallError>((info, index, blank))
            }))
            .await;
            let mut blank_windows = 0usize;
            for r in infos {
                match r {
                    Ok(((w, _), index, _))
                        if is_hidden_chromium_surface(toolkit.as_deref(), index) =>
                    {
                        tracing::debug!(app = %name, window = %w.handle, "hidden popup surface skipped");
                    }
                    Ok(((w, states), _, blank)) if states.has(atspi::State::Visible) => {
                        if blank {
                            blank_windows += 1;
                        }
                        windows.push(w);
                    }
                    Ok(_) => {}
                    Err(e) if e.is_timeout() => status = AppStatus::NotResponding,
                    Err(e) => tracing::debug!(app = %name, error = %e, "window skipped"),
                }
            }
            if status == AppStatus::Ok && blank_windows > 0 && blank_windows == windows.len() {
                // Chromium started without `--force-renderer-accessibility` (and
                // with no screen reader seen): its windows are there, with nothing
                // inside that can be read. Listed with the remedy, never read as empty.
                status = AppStatus::AccessibilityDisabled;
                windows.clear();
            }
        }
        Err(e) if e.is_timeout() => status = AppStatus::NotResponding,
        Err(e) => tracing::debug!(app = %name, error = %e, "children unreadable"),
    }
    AppInfo {
        handle: root.to_handle(),
        name,
        pid,
        uid: uid.ok(),
        exe: None,
        pty_master: None,
        toolkit,
        status,
        windows,
    }
}

/// `apps.list`: every application registered on the accessibility bus, queried
/// concurrently.
///
/// Errors: `COMPUTER_NOT_RESPONDING` when the registry daemon itself does not answer.
pub async fn list_apps(bus: &Bus) -> Result<Vec<AppInfo>> {
    let desktop = ObjRef::new(REGISTRY_BUS, ROOT_PATH);
    let roots = get_children(bus, &desktop).await.map_err(|e| {
        if e.is_timeout() {
            e.to_driver()
        } else {
            ComputerError::new(
                ErrorCode::AccessibilityDisabled,
                format!(
                    "the accessibility registry cannot list applications: {e}. Run \
                     `deskpilot doctor --fix`, or start a sandbox with `deskpilot sandbox start`."
                ),
            )
        }
    })?;
    Ok(join_all(roots.into_iter().map(|r| app_info(bus, r))).await)
}

/// Applications that show top-level X11 windows but publish no accessibility tree
/// (an app with no AT-SPI bridge — Athena, Tk, many games —, one started before the
/// accessibility bus existed or with `NO_AT_BRIDGE=1`, Chromium/Electron without
/// renderer accessibility): one [`AppInfo`] per process owning a window in `tops`
/// that no app of `apps` covers (same pid, or a descendant of its pid). Status
/// `accessibility_disabled`; its windows carry handles `x11win:<xid>.<pid>`
/// ([`crate::linux::capture::x11_handle`]), device bounds and `no_tree`, so pixels
/// can still be read from them. `active` is the focused top-level's xid.
pub fn apps_without_tree(
    apps: &[AppInfo],
    tops: &[TopLevel],
    active: Option<u32>,
    stack: &[crate::linux::capture::Stacked],
) -> Vec<AppInfo> {
    let covered: Vec<u32> = apps.iter().filter_map(|a| a.pid).collect();
    let mut out: Vec<AppInfo> = Vec::new();
    for top in tops {
        let Some(pid) = top.pid else { continue };
        if covered.iter().any(|&c| deskpilot_os::descends_from(pid, c)) {
            continue;
        }
        let name = proc_name(pid)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| top.title.clone());
        let window = tree_less_window(top, pid, &name, active, stack);
        if let Some(a) = out.iter_mut().find(|a| a.pid == Some(pid)) {
            a.windows.push(window);
            continue;
        }
        out.push(AppInfo {
            handle: deskpilot_core::Handle::new(format!("x11:{pid}")),
            name,
            pid: Some(pid),
            uid: None,
            exe: None,
            pty_master: None,
            toolkit: proc_toolkit(pid),
            status: AppStatus::AccessibilityDisabled,
            windows: vec![window],
        });
    }
    out
}

/// The record of top-level `top` of process `pid`, which shows no tree: handle
/// `x11win:<xid>.<pid>`, device bounds, `no_tree`.
fn tree_less_window(
    top: &TopLevel,
    pid: u32,
    app: &str,
    active: Option<u32>,
    stack: &[crate::linux::capture::Stacked],
) -> WindowInfo {
    WindowInfo {
        handle: crate::linux::capture::x11_handle(top.xid, pid),
        app: app.to_string(),
        pid: Some(pid),
        title: top.title.trim().to_string(),
        role: deskpilot_core::Role::Window,
        active: active == Some(top.xid),
        bounds: Some(top.bounds),
        device_bounds: Some(top.bounds),
        toolkit_scale: Some(1.0),
        no_tree: true,
        covered_by: crate::linux::capture::covered(stack, top.xid, &top.bounds),
        hidden: None,
    }
}

/// Windows of a registered app that its tree does not hold: a top-level X11 window
/// of the app's own process (same pid) whose title is no accessible window's and
/// whose rectangle lies on none of them (within 64 pixels), as a process with two
/// toolkits shows when only one of them registered on the accessibility bus (a
/// GTK-and-Qt program whose Qt side never reached the bus). Each is appended to its
/// app as a `no_tree` window (`x11win:<xid>.<pid>`), after the readable ones, so
/// `observe --window` finds it and says why it cannot be read, with the remedy for
/// the toolkit its process maps, instead of "no window title contains" (pure;
/// docs/ARCHITECTURE.md §6). Unnamed top-levels are left out. Run after
/// [`crate::linux::capture::annotate`], whose device rectangles it compares.
pub fn windows_without_tree(
    apps: &mut [AppInfo],
    tops: &[TopLevel],
    active: Option<u32>,
    stack: &[crate::linux::capture::Stacked],
) {
    let near = |a: &Bounds, b: &Bounds| {
        (a.x - b.x).abs() <= 64
            && (a.y - b.y).abs() <= 64
            && (a.width - b.width).abs() <= 64
            && (a.height - b.height).abs() <= 64
    };
    for top in tops {
        let title = top.title.trim();
        let Some(pid) = top.pid else { continue };
        if title.is_empty() {
            continue;
        }
        let held = apps
            .iter()
            .filter(|a| a.pid == Some(pid))
            .flat_map(|a| &a.windows)
            .any(|w| {
                w.title.trim() == title
                    || w.device_bounds
                        .or(w.bounds)
                        .is_some_and(|b| near(&b, &top.bounds))
            });
        if held {
            continue;
        }
        let Some(app) = apps
            .iter_mut()
            .find(|a| a.pid == Some(pid) && a.status == AppStatus::Ok)
        else {
            continue;
        };
        let window = tree_less_window(top, pid, &app.name, active, stack);
        app.windows.push(window);
    }
}

/// `windows.list`: the windows of every responsive application.
pub async fn list_windows(bus: &Bus) -> Result<Vec<WindowInfo>> {
    Ok(list_apps(bus)
        .await?
        .into_iter()
        .filter(|a| a.status == AppStatus::Ok)
        .flat_map(|a| a.windows)
        .collect())
}

/// The application name of a bus (its root's `Name`, else the process name).
pub async fn app_name(bus: &Bus, app_bus: &str) -> Result<(String, Option<u32>), CallError> {
    let root = ObjRef::new(app_bus, ROOT_PATH);
    let (name, pid) = tokio::join!(
        bus.prop::<String>(&root, iface::ACCESSIBLE, "Name"),
        bus.pid_of(app_bus)
    );
    let pid = pid.ok();
    match name {
        Ok(n) if !n.trim().is_empty() => Ok((n.trim().to_string(), pid)),
        Ok(_) => Ok((pid.and_then(proc_name).unwrap_or_default(), pid)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_chromium_windows_outside_their_parent_are_hidden_surfaces() {
        assert!(is_hidden_chromium_surface(Some("Chromium"), -1));
        assert!(!is_hidden_chromium_surface(Some("Chromium"), 0));
        assert!(!is_hidden_chromium_surface(Some("Chromium"), 1));
        // GTK and LibreOffice windows are never judged by their index.
        assert!(!is_hidden_chromium_surface(Some("GTK"), -1));
        assert!(!is_hidden_chromium_surface(Some("VCL"), -1));
        assert!(!is_hidden_chromium_surface(None, -1));
    }

    #[test]
    fn windows_of_apps_without_a_tree_are_listed_once_per_process() {
        let me = std::process::id();
        let parent = *deskpilot_os::ancestors(me).get(1).expect("a parent");
        let app = AppInfo {
            handle: deskpilot_core::Handle::new(":1.5|/org/a11y/atspi/accessible/root"),
            name: "mousepad".into(),
            pid: Some(parent),
            uid: None,
            exe: None,
            pty_master: None,
            toolkit: None,
            status: AppStatus::Ok,
            windows: Vec::new(),
        };
        // This process descends from the app's pid: covered. Pid 1 is not.
        let top = |xid: u32, pid: Option<u32>, title: &str| TopLevel {
            xid,
            pid,
            title: title.to_owned(),
            bounds: Bounds::new(0, 0, 100, 50),
        };
        let tops = vec![
            top(1, Some(me), "covered"),
            top(2, Some(1), "first"),
            top(3, Some(1), "second"),
            top(4, None, "no pid"),
        ];
        let extra = apps_without_tree(&[app], &tops, Some(3), &[]);
        assert_eq!(extra.len(), 1, "{extra:?}");
        assert_eq!(extra[0].pid, Some(1));
        assert_eq!(extra[0].status, AppStatus::AccessibilityDisabled);
        assert_eq!(extra[0].handle.as_str(), "x11:1");
        let w = &extra[0].windows;
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(w[0].handle.as_str(), "x11win:2.1");
        assert!(w[0].no_tree && !w[0].active && w[1].active);
        assert_eq!(w[1].device_bounds, Some(Bounds::new(0, 0, 100, 50)));
    }

    #[test]
    fn a_window_of_a_registered_process_that_its_tree_does_not_hold_is_listed_without_a_tree() {
        let win = |title: &str, b: Bounds| WindowInfo {
            handle: deskpilot_core::Handle::new(format!("atspi:{title}")),
            app: "mixed".into(),
            pid: Some(1),
            title: title.into(),
            role: deskpilot_core::Role::Window,
            active: false,
            bounds: Some(b),
            device_bounds: None,
            toolkit_scale: None,
            no_tree: false,
            covered_by: Vec::new(),
            hidden: None,
        };
        let mut apps = vec![AppInfo {
            handle: deskpilot_core::Handle::new("atspi:app"),
            name: "mixed".into(),
            pid: Some(1),
            uid: None,
            exe: None,
            pty_master: None,
            toolkit: Some("GTK".into()),
            status: AppStatus::Ok,
            windows: vec![
                win("GTK side", Bounds::new(10, 10, 200, 100)),
                // Named otherwise than its X window, but on it: held.
                win("Qt button", Bounds::new(500, 300, 300, 120)),
            ],
        }];
        let top = |xid: u32, pid: u32, title: &str, b: Bounds| TopLevel {
            xid,
            pid: Some(pid),
            title: title.to_owned(),
            bounds: b,
        };
        let tops = vec![
            top(1, 1, "GTK side", Bounds::new(10, 10, 200, 100)),
            top(2, 1, "Mixed Qt side", Bounds::new(490, 347, 300, 120)),
            top(
                3,
                1,
                "Qt side, unregistered",
                Bounds::new(900, 600, 300, 120),
            ),
            top(4, 1, "  ", Bounds::new(0, 700, 30, 30)),
            top(5, 2, "another process", Bounds::new(0, 0, 50, 50)),
        ];
        windows_without_tree(&mut apps, &tops, Some(3), &[]);
        let w = &apps[0].windows;
        assert_eq!(w.len(), 3, "{w:?}");
        assert_eq!(w[2].handle.as_str(), "x11win:3.1");
        assert_eq!(w[2].title, "Qt side, unregistered");
        assert!(w[2].no_tree && w[2].active && !w[0].no_tree);
    }

    #[test]
    fn the_toolkit_of_an_app_without_a_tree_comes_from_what_it_maps() {
        let line = |path: &str| format!("7f00-7f10 r-xp 00000000 08:01 42  {path}\n");
        let gtk = line("/usr/lib/x86_64-linux-gnu/libgtk-3.so.0.2406.32");
        let qt = line("/usr/lib/x86_64-linux-gnu/libQt5Gui.so.5.15.8");
        let jvm = line("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so");
        let pak = line("/usr/lib/chromium/resources.pak");
        assert_eq!(toolkit_of_maps(&gtk), Some("GTK"));
        assert_eq!(toolkit_of_maps(&(gtk.clone() + &qt)), Some("Qt"));
        assert_eq!(toolkit_of_maps(&(gtk.clone() + &jvm)), Some("Java"));
        assert_eq!(toolkit_of_maps(&(gtk + &pak)), Some("Chromium"));
        assert_eq!(toolkit_of_maps(&line("/usr/lib/libXaw.so.7")), None);
    }

    #[test]
    fn a_chromium_window_of_null_children_is_blank() {
        assert!(chromium_window_blank(1, 0));
        assert!(!chromium_window_blank(1, 1));
        assert!(
            !chromium_window_blank(0, 0),
            "an empty window is not a blank one"
        );
    }
}

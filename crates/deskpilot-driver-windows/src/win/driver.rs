//! [`WindowsDriver`]: the [`Driver`] trait over MSAA and the standard controls'
//! messages, with `SendInput` as the declared fallback (docs/ARCHITECTURE.md §6b).
//!
//! Owns the wiring: every system call runs on the [`Worker`] thread within a limit;
//! settling after an action is bounded polling (two reads `POLL` apart that agree
//! for `quiet_ms`), since Wine 8.0 has no UI Automation events. No policy here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskpilot_core::{Handle, Node};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};

use super::act::{self, PointerKind};
use super::read::{self, Limits, TopLevel};
use super::sys;
use super::worker::Worker;
use crate::choose::choose;
use crate::facts::{WindowFacts, assemble};
use crate::handle::{ElementRef, Target, window_handle};
use crate::role_map::toplevel_role;
use deskpilot_protocol::Result;

/// Limit of one listing or element call: 2,000 ms.
const CALL: Duration = Duration::from_millis(2_000);
/// Limit of one whole-window read: 5,000 ms (the Linux bulk read's).
const READ: Duration = Duration::from_millis(5_000);
/// Time between settle reads: 100 ms.
const POLL: Duration = Duration::from_millis(100);

/// The Windows driver. `Send + Sync`; share it behind an `Arc`.
#[derive(Default)]
pub struct WindowsDriver {
    worker: Arc<Worker>,
}

impl std::fmt::Debug for WindowsDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowsDriver").finish_non_exhaustive()
    }
}

impl WindowsDriver {
    /// A driver for this desktop; makes the process DPI aware (physical pixels).
    ///
    /// Errors: none today; the `Result` matches the stand-in of other OSes.
    pub fn new() -> Result<WindowsDriver> {
        sys::make_dpi_aware();
        Ok(WindowsDriver::default())
    }

    async fn tops(&self) -> Result<Vec<TopLevel>> {
        self.worker
            .run("listing windows", CALL, || Ok(read::top_levels()))
            .await
    }

    async fn read(&self, top: usize, limits: Limits) -> Result<WindowFacts> {
        self.worker
            .run("reading the window", READ, move || {
                let h = sys::hwnd(top);
                if !sys::alive(h) {
                    return Err(ComputerError::new(
                        ErrorCode::ElementNotFound,
                        "the window is gone; list the windows again",
                    ));
                }
                Ok(read::read_window(h, limits))
            })
            .await
    }

    fn info(t: &TopLevel, app: &str) -> WindowInfo {
        WindowInfo {
            handle: window_handle(t.hwnd),
            app: app.to_owned(),
            pid: Some(t.pid),
            title: t.title.clone(),
            role: toplevel_role(&t.class),
            active: t.active,
            bounds: Some(t.rect),
            device_bounds: Some(t.rect),
            toolkit_scale: Some(1.0),
            no_tree: false,
            covered_by: Vec::new(),
            hidden: None,
        }
    }

    async fn window_info(&self, top: usize) -> Result<WindowInfo> {
        let tops = self.tops().await?;
        let t = tops.iter().find(|t| t.hwnd == top).ok_or_else(|| {
            ComputerError::new(
                ErrorCode::ElementNotFound,
                "the window is gone or hidden; list the windows again",
            )
        })?;
        let name = self.app_name(t.pid).await;
        Ok(Self::info(t, &name))
    }

    async fn app_name(&self, pid: u32) -> String {
        self.worker
            .run("naming a process", CALL, move || Ok(sys::process_name(pid)))
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| format!("pid {pid}"))
    }

    async fn snapshot_of(&self, p: &SnapshotParams) -> Result<TreeSnapshot> {
        let started = Instant::now();
        let e = ElementRef::parse(&p.window)?;
        let mut limits = Limits::default();
        if let Some(n) = p.max_nodes {
            limits.max_nodes = n.clamp(1, MAX_READ_NODES) as usize;
        }
        if let Some(n) = p.child_cap {
            limits.child_cap = n.clamp(1, MAX_READ_NODES) as usize;
        }
        if let Some(n) = p.text_cap {
            limits.text_cap = n.clamp(1, MAX_TEXT_CAP) as usize;
        }
        let window = self.window_info(e.top).await?;
        let facts = self.read(e.top, limits).await?;
        let (mut root, counts) = assemble(&facts);
        if let Some(scope) = &p.scope {
            root = find_node(&root, scope).cloned().ok_or_else(|| {
                ComputerError::new(
                    ErrorCode::ElementNotFound,
                    "the scope element is not in the window now; read the window again",
                )
            })?;
        }
        if let Some(d) = p.depth {
            cut_depth(&mut root, d);
        }
        Ok(TreeSnapshot {
            window,
            root,
            stats: WalkStats {
                objects: counts.objects,
                vanished: 0,
                capped: counts.capped,
                elapsed_ms: started.elapsed().as_millis() as u64,
                bulk: false,
            },
        })
    }
}

fn find_node<'a>(n: &'a Node, h: &Handle) -> Option<&'a Node> {
    if &n.handle == h {
        return Some(n);
    }
    n.children.iter().find_map(|c| find_node(c, h))
}

fn cut_depth(n: &mut Node, d: u32) {
    if d == 0 {
        n.children.clear();
        return;
    }
    for c in &mut n.children {
        cut_depth(c, d - 1);
    }
}

fn flatten<'a>(n: &'a Node, out: &mut Vec<&'a Node>) {
    out.push(n);
    for c in &n.children {
        flatten(c, out);
    }
}

fn unsupported_events() -> ComputerError {
    ComputerError::platform_unsupported(
        "event subscription on the Windows driver (Wine 8.0 has no UI Automation events; settling polls the window instead)",
    )
}

#[async_trait]
impl Driver for WindowsDriver {
    async fn hello(&self) -> Result<Hello> {
        let uia = self
            .worker
            .run("probing UI Automation", CALL, || {
                use windows::Win32::System::Com::{CLSCTX_INPROC_SERVER, CoCreateInstance};
                use windows::Win32::UI::Accessibility::{CUIAutomation, IUIAutomation};
                Ok(unsafe {
                    CoCreateInstance::<_, IUIAutomation>(&CUIAutomation, None, CLSCTX_INPROC_SERVER)
                }
                .map(|_| ())
                .map_err(|e| sys::hr(&e)))
            })
            .await?;
        let mut notes = vec![
            "reading and acting go through MSAA (IAccessible) and the standard controls' own messages; coordinates are physical screen pixels".to_owned(),
            "no event subscription: settling polls the window every 100 ms".to_owned(),
            "no capture or OCR in this driver yet".to_owned(),
        ];
        notes.push(match uia {
            Ok(()) => "the UI Automation client (CUIAutomation) is available but not yet used by this driver".to_owned(),
            Err(hr) => format!("the UI Automation client is unavailable (CoCreateInstance(CUIAutomation) failed {hr}; Wine 8.0 does not provide it)"),
        });
        Ok(Hello {
            platform: "windows".into(),
            driver: "deskpilot-driver-windows".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities {
                tree: true,
                actions: true,
                keyboard: true,
                pointer: true,
                capture: false,
                ocr: false,
                events: false,
            },
            permissions: Permissions {
                accessibility: true,
                input: true,
                capture: false,
                notes,
            },
        })
    }

    async fn apps(&self) -> Result<Vec<AppInfo>> {
        let tops = self.tops().await?;
        let mut by_pid: BTreeMap<u32, Vec<TopLevel>> = BTreeMap::new();
        for t in tops {
            by_pid.entry(t.pid).or_default().push(t);
        }
        let mut out = Vec::new();
        for (pid, ws) in by_pid {
            let name = self.app_name(pid).await;
            let hung = ws.iter().any(|w| w.hung);
            out.push(AppInfo {
                handle: Handle::new(format!("pid:{pid}")),
                name: name.clone(),
                pid: Some(pid),
                uid: None,
                exe: Some(name.clone()),
                pty_master: None,
                toolkit: Some("Win32".into()),
                status: if hung {
                    AppStatus::NotResponding
                } else {
                    AppStatus::Ok
                },
                windows: ws.iter().map(|w| Self::info(w, &name)).collect(),
            });
        }
        Ok(out)
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        let (prog, args) = p
            .command
            .split_first()
            .ok_or_else(|| ComputerError::invalid("launch needs a program"))?;
        let child = std::process::Command::new(prog)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(|e| {
                ComputerError::new(
                    ErrorCode::ElementNotFound,
                    format!("cannot start {prog:?}: {e}"),
                )
            })?;
        let pid = child.id();
        let until = Instant::now() + Duration::from_millis(p.wait_ms.unwrap_or(15_000));
        while Instant::now() < until {
            if let Some(t) = self.tops().await?.into_iter().find(|t| t.pid == pid) {
                let name = self.app_name(pid).await;
                return Ok(LaunchResult {
                    pid,
                    window: Some(Self::info(&t, &name)),
                });
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(LaunchResult { pid, window: None })
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        Ok(self
            .apps()
            .await?
            .into_iter()
            .filter(|a| a.status == AppStatus::Ok)
            .flat_map(|a| a.windows)
            .collect())
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        let e = ElementRef::parse(&p.window)?;
        self.worker
            .run("activating the window", CALL, move || {
                act::foreground(sys::hwnd(e.top))
            })
            .await?;
        Ok(Empty {})
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        self.snapshot_of(&p).await
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        let windows = match &p.window {
            Some(w) => vec![self.window_info(ElementRef::parse(w)?.top).await?],
            None => self
                .windows()
                .await?
                .into_iter()
                .filter(|w| p.app.as_ref().is_none_or(|a| &w.app == a))
                .collect(),
        };
        let needle = p.text.to_lowercase();
        let limit = p.limit.unwrap_or(20) as usize;
        let mut matches = Vec::new();
        for w in windows {
            let snap = self
                .snapshot_of(&SnapshotParams::whole(w.handle.clone()))
                .await?;
            let mut all = Vec::new();
            flatten(&snap.root, &mut all);
            for n in all {
                let hit = [Some(&n.name), n.value.as_ref(), n.description.as_ref()]
                    .into_iter()
                    .flatten()
                    .any(|t| t.to_lowercase().contains(&needle));
                if hit && p.role.is_none_or(|r| r == n.role) && matches.len() < limit {
                    let mut node = n.clone();
                    node.children.clear();
                    matches.push(FindMatch {
                        window: snap.window.clone(),
                        node,
                    });
                }
            }
        }
        Ok(FindResult { matches })
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        let started = Instant::now();
        let e = ElementRef::parse(&p.handle)?;
        let w = ElementRef::parse(&p.window)?;
        if w.top != e.top {
            return Err(ComputerError::invalid(
                "the element does not belong to the window named",
            ));
        }
        let (op, value) = (p.op, p.value.clone());
        let e2 = e.clone();
        let method = self
            .worker
            .run("reading the element", CALL, move || {
                let f = act::facts(&e2)?;
                choose(op, &f, value.as_deref())
            })
            .await?;
        let before = match p.settle {
            Some(_) => self.read(e.top, Limits::default()).await.ok(),
            None => None,
        };
        let e3 = e.clone();
        let m2 = method.clone();
        let done = self
            .worker
            .run("acting on the element", CALL, move || {
                act::perform(&e3, &m2)
            })
            .await?;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let mut result = ActResult {
            status: done.status,
            channel: done.channel,
            method: done.method,
            elapsed_ms,
            settle: None,
            note: done.note,
            after: None,
        };
        if let Some(s) = p.settle {
            // Bounded polling: settled once the window read the same for quiet_ms.
            let t0 = Instant::now();
            let mut last = before;
            let mut since = Instant::now();
            let mut reads = 0u64;
            let mut hit_ceiling = false;
            loop {
                tokio::time::sleep(POLL).await;
                let now = self.read(e.top, Limits::default()).await.ok();
                reads += 1;
                if now != last {
                    since = Instant::now();
                    last = now;
                }
                if since.elapsed() >= Duration::from_millis(s.quiet_ms) {
                    break;
                }
                if t0.elapsed() >= Duration::from_millis(s.max_ms) {
                    hit_ceiling = true;
                    break;
                }
            }
            result.settle = Some(SettleReport {
                waited_ms: t0.elapsed().as_millis() as u64,
                events: 0,
                hit_ceiling,
                reads: Some(reads),
            });
            if s.read && sys::alive(sys::hwnd(e.top)) {
                result.after = self
                    .snapshot_of(&SnapshotParams::whole(p.window.clone()))
                    .await
                    .ok()
                    .map(Box::new);
            }
        }
        let _ = Target::Window;
        Ok(result)
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        let _ = p;
        Err(unsupported_events())
    }

    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        let _ = (subscription, timeout_ms);
        Err(unsupported_events())
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        let started = Instant::now();
        let e = ElementRef::parse(&p.window)?;
        let (chord, text) = (p.chord, p.text);
        let (sent, verified, note) = self
            .worker
            .run("sending keys", Duration::from_secs(20), move || {
                let top = sys::hwnd(e.top);
                act::foreground(top)?;
                match (chord, text) {
                    (Some(c), None) => Ok((act::chords(&c)?, None, None)),
                    (None, Some(t)) => {
                        let (_, tid) = sys::process_thread(top);
                        let target = sys::thread_focus(tid).0.filter(|h| sys::class_name(*h).eq_ignore_ascii_case("edit"));
                        let before = target.and_then(|h| sys::text(h, 1 << 20)).map(|t| t.0);
                        let sent = act::type_text(&t)?;
                        match (target, before) {
                            (Some(h), Some(before)) => {
                                std::thread::sleep(Duration::from_millis(100));
                                let after = sys::text(h, 1 << 20).map(|t| t.0).unwrap_or_default();
                                let want = t.chars().filter(|c| *c != '\r' && *c != '\n').count();
                                let grew = after.chars().count().saturating_sub(before.chars().count());
                                if after.contains(t.as_str()) || grew >= want {
                                    Ok((sent, Some(want as u64), None))
                                } else {
                                    Err(ComputerError::new(ErrorCode::OutcomeUnknown, format!("typed {want} characters but the focused edit gained {grew}")))
                                }
                            }
                            _ => Ok((sent, None, Some("not read back: the focused control is not an edit".to_owned()))),
                        }
                    }
                    _ => Err(ComputerError::invalid("input.keys takes exactly one of chord or text")),
                }
            })
            .await?;
        Ok(InputResult {
            channel: Channel::Keyboard,
            elapsed_ms: started.elapsed().as_millis() as u64,
            events_sent: sent,
            verified_chars: verified,
            note,
        })
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        let started = Instant::now();
        let e = ElementRef::parse(&p.window)?;
        let sent = self
            .worker
            .run("sending pointer input", CALL, move || {
                let top = sys::hwnd(e.top);
                act::foreground(top)?;
                let kind = match p.action {
                    PointerAction::Move => PointerKind::Move,
                    PointerAction::Click => PointerKind::Click,
                    PointerAction::DoubleClick => PointerKind::Double,
                    PointerAction::RightClick => PointerKind::Right,
                    PointerAction::Drag => PointerKind::Drag,
                    PointerAction::ScrollUp => PointerKind::WheelUp,
                    PointerAction::ScrollDown => PointerKind::WheelDown,
                };
                act::pointer(kind, p.x, p.y, p.to)
            })
            .await?;
        Ok(InputResult {
            channel: Channel::Pointer,
            elapsed_ms: started.elapsed().as_millis() as u64,
            events_sent: sent,
            verified_chars: None,
            note: None,
        })
    }

    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult> {
        let _ = p;
        Err(ComputerError::platform_unsupported(
            "screen capture on the Windows driver",
        ))
    }

    async fn ocr(&self, p: OcrParams) -> Result<OcrResult> {
        let _ = p;
        Err(ComputerError::platform_unsupported(
            "OCR on the Windows driver",
        ))
    }
}

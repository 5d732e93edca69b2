//! Reading a window: the plain read whose tree is remembered as the next diff's
//! "before", a page of a long container spliced into it, the deep read a search or an
//! act on a far element needs, and the refs every read is given. Never acts.

use std::time::{Duration, Instant};

use deskpilot_core::{Handle, Node, State};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::{Session, err};
use crate::store::WindowState;
use deskpilot_protocol::Result;

/// Puts `part` in place of the node of `root` whose handle is `handle`; false when
/// there is none.
pub(super) fn splice(root: &mut Node, handle: &Handle, part: Node) -> bool {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if &n.handle == handle {
            // The role the window read gave it in context (a menu in a menu bar is a
            // menu item), so its ref still names it.
            let role = n.role;
            *n = part;
            n.role = role;
            return true;
        }
        stack.extend(n.children.iter_mut());
    }
    false
}

/// The element `h` (ref `r`) of a fresh read `tree`.
///
/// Errors: `COMPUTER_STALE_REF` when it is no longer there.
pub(super) fn element_of<'a>(tree: &'a Node, h: &Handle, r: &str) -> Result<&'a Node> {
    tree.walk().find(|n| &n.handle == h).ok_or_else(|| {
        err(
            ErrorCode::StaleRef,
            format!("{r} vanished while it was read; observe the window again"),
        )
    })
}

/// Elements (and children of one element) one read of a search takes at most:
/// 10,000. An element the platform's cache lacks costs about 1 ms to read
/// (Chromium: ~1.1 ms each, 50,043 objects in 56 s in a debug build), so one read
/// stays near 10 s at worst.
pub const SEARCH_READ_NODES: u32 = 10_000;

/// Most elements a search reads beyond its first read, page by page
/// ([`Session::find`]): [`MAX_READ_NODES`] (50,000), a grid of millions is not
/// tried.
pub const DEEP_READ_NODES: usize = MAX_READ_NODES as usize;

/// Time after which a search starts no further page: 10 s. What is left is
/// counted as unread, never searched silently.
pub const DEEP_READ_BUDGET: Duration = Duration::from_secs(10);

/// Most pages (scoped reads with `from`) one deep read asks for after its first
/// read: 20, so a search costs at most that many more reads however the window
/// is built.
pub const DEEP_READ_PAGES: usize = 20;

/// A container with more unread children than this is not paged by a search (a
/// grid that reports 2³¹−1 cells): its children stay counted as unread.
pub const DEEP_READ_MAX_CHILDREN: u64 = 100_000;

impl Session {
    /// Reads a window, assigns refs, remembers the tree, returns the tree.
    pub(super) async fn read(
        &mut self,
        window: &WindowInfo,
    ) -> Result<(Node, WalkStats), ComputerError> {
        self.read_paged(window, None).await
    }

    /// [`Session::read`], with the children of element `page.0` (a ref of this
    /// window) read from index `page.1` on: the window is read whole, then that
    /// element alone with `from`, and its subtree takes the element's place before
    /// refs are assigned.
    ///
    /// Errors: those of the reads; `COMPUTER_ELEMENT_NOT_FOUND` for a ref this window
    /// does not have.
    pub(super) async fn read_paged(
        &mut self,
        window: &WindowInfo,
        page: Option<(&str, u32)>,
    ) -> Result<(Node, WalkStats), ComputerError> {
        let mut snap = self
            .driver
            .snapshot(SnapshotParams::whole(window.handle.clone()))
            .await?;
        if let Some((r, from)) = page {
            let handle = self
                .state
                .per_window
                .get(&window.handle.0)
                .and_then(|ws| ws.registry.resolve(r).ok())
                .map(|e| e.handle.clone())
                .ok_or_else(|| {
                    err(
                        ErrorCode::ElementNotFound,
                        format!("{r} is not an element of this window; observe it again"),
                    )
                })?;
            let part = self
                .driver
                .snapshot(SnapshotParams {
                    scope: Some(handle.clone()),
                    from: Some(from),
                    ..SnapshotParams::whole(window.handle.clone())
                })
                .await?;
            if part.root.table.is_some() {
                return Err(err(
                    ErrorCode::InvalidArgument,
                    format!(
                        "{r} is a table read by its visible range, not by child index: scroll it (`act {r} scroll down`) instead of --from"
                    ),
                ));
            }
            if u64::from(from) >= part.root.child_count.max(1) {
                return Err(err(
                    ErrorCode::InvalidArgument,
                    format!(
                        "--from {from} is past the last child of {r} ({} children)",
                        part.root.child_count
                    ),
                ));
            }
            if !splice(&mut snap.root, &handle, part.root) {
                return Err(err(
                    ErrorCode::StaleRef,
                    format!("{r} is no longer in the window; observe it again"),
                ));
            }
        }
        Ok(self.adopt(window, snap))
    }

    /// Scrubs a window read of its secrets, assigns its refs and records the
    /// window's facts.
    pub(super) fn adopt(&mut self, window: &WindowInfo, snap: TreeSnapshot) -> (Node, WalkStats) {
        let wref = self.state.windows.assign(&window.handle);
        let ws = self
            .state
            .per_window
            .entry(window.handle.0.clone())
            .or_default();
        let mut root = snap.root;
        // Secrets leave the tree before anything else sees it: the tree is rendered,
        // diffed, searched and persisted only in its scrubbed form.
        deskpilot_core::redact::scrub(&mut root);
        // One numbering for all windows of the session: `e62` names one element of
        // one window, never an element of another window that happens to share it.
        ws.registry.reserve_above(self.state.ref_floor);
        ws.registry.assign(&mut root);
        self.state.ref_floor = self.state.ref_floor.max(ws.registry.issued());
        root.ref_ = Some(wref);
        ws.info = Some(snap.window.clone());
        (root, snap.stats)
    }

    /// A window read as a search needs it: off-screen subtrees read too, with the
    /// child and node caps raised to [`SEARCH_READ_NODES`]; then every container
    /// with children that read did not reach is read on, page by page (a scoped
    /// read with `from`), until nothing is left, [`DEEP_READ_NODES`] more elements
    /// or [`DEEP_READ_PAGES`] pages were read, or [`DEEP_READ_BUDGET`] has passed (a
    /// page under way is finished, so one read may pass it by one page's time).
    /// Tables are not paged (the first read takes a table whole when it fits the
    /// node cap, else by its visible range), and containers with more than
    /// [`DEEP_READ_MAX_CHILDREN`] unread children are left counted, not read. What
    /// lies inside an element off screen is marked off screen.
    ///
    /// Returns the whole tree, refs assigned. It is searched or judged, never
    /// remembered: the next diff compares two plain reads.
    ///
    /// Errors: those of the window read; a page that fails is left unread.
    pub(super) async fn read_deep(&mut self, window: &WindowInfo) -> Result<Node> {
        let started = Instant::now();
        let mut snap = self
            .driver
            .snapshot(SnapshotParams {
                max_nodes: Some(SEARCH_READ_NODES),
                hidden: true,
                child_cap: Some(SEARCH_READ_NODES),
                ..SnapshotParams::whole(window.handle.clone())
            })
            .await?;
        let mut tried: std::collections::HashSet<Handle> = std::collections::HashSet::new();
        let mut extra = 0usize;
        for _ in 0..DEEP_READ_PAGES {
            if extra >= DEEP_READ_NODES || started.elapsed() >= DEEP_READ_BUDGET {
                break;
            }
            let next = snap.root.walk().find_map(|n| {
                let have = n.first_child + n.children.len() as u64;
                let unread = n.child_count.saturating_sub(have);
                (unread > 0
                    && unread <= DEEP_READ_MAX_CHILDREN
                    && n.table.is_none()
                    && !tried.contains(&n.handle))
                .then(|| (n.handle.clone(), have))
            });
            let Some((handle, from)) = next else {
                break;
            };
            tried.insert(handle.clone());
            let part = self
                .driver
                .snapshot(SnapshotParams {
                    scope: Some(handle.clone()),
                    max_nodes: Some(SEARCH_READ_NODES),
                    from: Some(u32::try_from(from).unwrap_or(u32::MAX)),
                    hidden: true,
                    child_cap: Some(SEARCH_READ_NODES),
                    ..SnapshotParams::whole(window.handle.clone())
                })
                .await;
            tracing::debug!(
                ?handle,
                from,
                read = part.as_ref().map(|p| p.root.children.len()).ok(),
                "deep read: a page"
            );
            let Ok(part) = part else { continue };
            if part.root.children.is_empty() || part.root.table.is_some() {
                continue;
            }
            let mut stack = vec![&mut snap.root];
            while let Some(n) = stack.pop() {
                if n.handle == handle {
                    // Null or vanished children make `from` fall short: a child
                    // already here is not added twice, and a page that adds
                    // nothing new ends this element's paging.
                    let have: std::collections::HashSet<Handle> =
                        n.children.iter().map(|c| c.handle.clone()).collect();
                    let new: Vec<Node> = part
                        .root
                        .children
                        .into_iter()
                        .filter(|c| !have.contains(&c.handle))
                        .collect();
                    if !new.is_empty() {
                        extra += new.iter().map(Node::count).sum::<usize>();
                        n.children.extend(new);
                        // Read on from the new end next time.
                        tried.remove(&handle);
                    }
                    break;
                }
                stack.extend(n.children.iter_mut());
            }
        }
        // What lies inside an element off screen is off screen, whatever it says of
        // itself: the judge refuses to act on it as on its container.
        let mut stack: Vec<(&mut Node, bool)> = vec![(&mut snap.root, false)];
        while let Some((n, hidden)) = stack.pop() {
            if hidden {
                n.states.insert(State::Offscreen);
            }
            let hidden = hidden || n.has(State::Offscreen);
            stack.extend(n.children.iter_mut().map(|c| (c, hidden)));
        }
        let (root, _) = self.adopt(window, snap);
        Ok(root)
    }

    pub(super) fn remember(&mut self, window: &WindowInfo, root: Node) {
        let ws = self
            .state
            .per_window
            .entry(window.handle.0.clone())
            .or_default();
        ws.last = Some(root);
    }

    /// The current window and its state's window facts, once `r` is known to be a
    /// well-formed ref of it.
    ///
    /// Errors: unknown or malformed refs; `COMPUTER_ELEMENT_NOT_FOUND` when nothing
    /// was observed yet or the window is unknown.
    pub(super) fn window_of_ref(&self, r: &str) -> Result<(String, WindowInfo), ComputerError> {
        let (cur, ws) = self.current_window_state()?;
        ws.registry
            .resolve(r)
            .map_err(|e| ComputerError::from(&e))?;
        let window = ws.info.clone().ok_or_else(|| {
            err(
                ErrorCode::ElementNotFound,
                "the current window is unknown; observe it again",
            )
        })?;
        Ok((cur, window))
    }

    pub(super) fn current_window_state(&self) -> Result<(String, &WindowState), ComputerError> {
        let cur = self.state.current.clone().ok_or_else(|| {
            err(
                ErrorCode::ElementNotFound,
                "no window has been observed yet; run `deskpilot observe` first to get refs",
            )
        })?;
        let ws = self.state.per_window.get(&cur).ok_or_else(|| {
            err(
                ErrorCode::ElementNotFound,
                "the current window has no refs yet; run `deskpilot observe` first",
            )
        })?;
        Ok((cur, ws))
    }
}

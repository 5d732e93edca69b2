//! The structure of a window: which objects it holds, in which order.
//!
//! Owns [`walk`]: starting at a window (or a scope inside it), it decides breadth
//! first, one level per wave, whose children to take from the `Cache.GetItems` reply
//! and whose to ask for with `Accessible.GetChildren`, and reads the records of
//! objects the cache did not hold. It asks for children only where the cache cannot
//! be trusted for order or completeness and the node is on screen: at-spi2-atk leaves
//! the index in parent at `-1` for most objects, and LibreOffice reports parents that
//! do not list the object as a child, so the parent pointers alone give neither order
//! nor a complete tree.
//!
//! GTK 4.8 sets `SHOWING` on windows only, never on the widgets inside them. When no
//! object other than a window has been seen with `SHOWING` in an application, a
//! `VISIBLE` node under an on-screen parent counts as on screen (its `SHOWING` bit is
//! set in the record), so such apps are read rather than skipped as hidden. The cost:
//! in such an app, widgets on a stack page that is not shown still count as on screen
//! (GTK 4.8 keeps them `VISIBLE`); their extents tell the render the truth.
//!
//! It must never enumerate the children of a node whose states hold
//! `MANAGES_DESCENDANTS` or whose child count is above the child cap (LibreOffice's
//! grid reports 2³¹−1 children and builds each one it is asked for), never read more
//! than `max_nodes` objects, and never wait on one wave longer than one call timeout.

use std::collections::{HashMap, HashSet};

use futures_util::{StreamExt, stream};

use super::connection::{Bus, CallError, iface, obj_from_wire};
use super::handle::ObjRef;
use super::info::{Ifaces, NodeInfo};
use super::state_map::RawStates;
use super::table::ABSURD_CHILD_COUNT;
use super::tree::{MAX_DEPTH, Parts};
use deskpilot_protocol::Result;

/// Bounds of one walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Children taken per node at most.
    pub child_cap: u32,
    /// Objects in the tree at most, the root included.
    pub max_nodes: u32,
    /// Levels below the root to read; `None` reads down to [`MAX_DEPTH`].
    pub depth: Option<u32>,
    /// Calls in flight at once.
    pub concurrency: usize,
    /// Children of the root skipped before the first one taken (a page further into
    /// a long container); they are counted, not read.
    pub from: u32,
    /// Read the children of objects that are not on screen too, instead of taking
    /// the cache's view of them (a search).
    pub hidden: bool,
}

/// The structure read, and what it cost.
#[derive(Debug, Default)]
pub struct Walk {
    /// Records, children lists and vanished objects (no details yet).
    pub parts: Parts,
    /// Children left unread because of the child cap, the node budget or managed
    /// descendants.
    pub capped: u64,
    /// Records read one call at a time because the cache lacked them.
    pub walked: u64,
}

/// How one node's children will be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Leave them unread; add this many to the capped count.
    Skip { capped: u64 },
    /// Take this list (from the cache), in this order.
    Use(Vec<ObjRef>),
    /// Ask the application with `GetChildren`.
    Fetch,
    /// The count is unknown (`-1`): read `ChildCount` first, then `GetChildren` if it
    /// is within the cap, else fall back to this cached list.
    CountThenFetch(Vec<ObjRef>),
    /// Ask for the children `start..end` one by one (`GetChildAtIndex`, several in
    /// flight): a list too long to ask for whole ([`LIST_BY_INDEX_ABOVE`]), or a
    /// container that builds its children on demand, which answers `GetChildren`
    /// with nothing (at-spi2-atk) but gives each one asked for by index.
    Range { start: u32, end: u32 },
    /// A container that builds its children on demand and whose count the cache
    /// leaves unknown (`-1`): read its live `ChildCount`, then ask for the children
    /// from `start` by index, at most the child cap; an unknown or absurd live count
    /// falls back to the cached list. LibreOffice Writer's document, opened from a
    /// file, is cached with count `-1` and no children at all, while it holds the
    /// paragraphs on screen; the cache lists them only once they were added
    /// while a client listened (typed in).
    CountThenRange { start: u32, fallback: Vec<ObjRef> },
}

/// Above this many children, a node's children are asked for by index, only those
/// the read keeps, instead of with `GetChildren`: 2,000. Chromium takes longer than
/// a call's timeout (1.5 s) to list a page's 40,001 children (20,000 links and the
/// white space between them), and a reply that long is megabytes; the first
/// `child_cap` children by index answer in a few milliseconds each.
pub const LIST_BY_INDEX_ABOVE: u64 = 2_000;

/// Orders cached siblings: by index in parent where the bridge gave one, then by the
/// path number (creation order).
pub fn order_cached(infos: &HashMap<ObjRef, NodeInfo>, kids: &[ObjRef]) -> Vec<ObjRef> {
    let mut v: Vec<&ObjRef> = kids.iter().collect();
    v.sort_by_key(|k| {
        let idx = infos.get(*k).map(|i| i.index).unwrap_or(-1);
        (if idx >= 0 { idx } else { i32::MAX }, k.path_number())
    });
    v.into_iter().cloned().collect()
}

/// True when every sibling has a distinct, non-negative index: then the cache order is
/// trustworthy without asking.
fn indices_complete(infos: &HashMap<ObjRef, NodeInfo>, kids: &[ObjRef]) -> bool {
    let mut seen = HashSet::new();
    kids.iter().all(|k| {
        infos
            .get(k)
            .is_some_and(|i| i.index >= 0 && seen.insert(i.index))
    })
}

/// Decides how to find one node's children (pure).
///
/// `cached` are the objects whose reported parent is this node; `depth` is the
/// node's depth below the walk root.
pub fn plan_children(
    info: &NodeInfo,
    is_root: bool,
    cached: &[ObjRef],
    infos: &HashMap<ObjRef, NodeInfo>,
    depth: u32,
    limits: &WalkLimits,
) -> Plan {
    let count = info.child_count;
    if limits.depth.is_some_and(|d| depth >= d) || depth >= MAX_DEPTH {
        return Plan::Skip { capped: 0 };
    }
    if info.states.manages_descendants() {
        // A container that builds its children on demand reports how many exist
        // now. A grid's count is astronomical (LibreOffice Calc: 2³¹−1) and it is
        // read by visible range (`table`); a text document's is the paragraphs it
        // has built, those on screen (LibreOffice Writer), and those are read by
        // index like any children, up to the cap.
        let readable = !info.ifaces.has(Ifaces::TABLE) && (is_root || info.states.on_screen());
        let start = if is_root { limits.from } else { 0 };
        if readable && count >= 0 && count as u64 <= u64::from(limits.child_cap) {
            let end = u32::try_from(count).unwrap_or(0);
            return Plan::Range {
                start: start.min(end),
                end,
            };
        }
        if readable && count < 0 {
            // The cache's count is stale or unknown, and so may be its list (it
            // holds what was added while a client listened): ask.
            return Plan::CountThenRange {
                start,
                fallback: order_cached(infos, cached),
            };
        }
        return Plan::Skip {
            capped: u64::try_from(count).unwrap_or(0),
        };
    }
    if let Some(list) = &info.listed_children {
        return Plan::Use(list.clone());
    }
    if count == 0 {
        return Plan::Use(Vec::new());
    }
    let ordered = order_cached(infos, cached);
    if count > 0 && count as u64 > ABSURD_CHILD_COUNT {
        // Absurd count: never ask; show what the cache already holds, capped later.
        return Plan::Use(ordered);
    }
    // Between the child cap and the absurd count (a web page's 501-row table) the
    // children are real objects: list them and keep the first `child_cap`.
    if !is_root && !info.states.on_screen() && !limits.hidden {
        // Hidden: not worth a call; the cache's view is good enough to search.
        return Plan::Use(ordered);
    }
    if count > 0
        && ordered.len() == count as usize
        && (count == 1 || indices_complete(infos, &ordered))
    {
        return Plan::Use(ordered);
    }
    if count < 0 {
        return Plan::CountThenFetch(ordered);
    }
    if count as u64 > LIST_BY_INDEX_ABOVE {
        let start = if is_root { limits.from } else { 0 };
        let end = start
            .saturating_add(limits.child_cap)
            .min(u32::try_from(count).unwrap_or(u32::MAX));
        return Plan::Range { start, end };
    }
    Plan::Fetch
}

/// AT-SPI roles of top-level surfaces (and the application), which toolkits mark
/// `SHOWING` even when they mark nothing inside them.
fn is_surface(role: u32) -> bool {
    use super::role_map::code;
    matches!(role, 2 | 16 | code::FRAME | 69 | code::APPLICATION)
}

/// True when `info` shows that its toolkit sets `SHOWING` on inner objects.
fn sets_showing(info: &NodeInfo) -> bool {
    !is_surface(info.role) && info.states.has(atspi::State::Showing)
}

/// Reads one object's record (for objects the cache lacks) with four concurrent
/// calls: `GetRole`, `GetState`, `GetInterfaces`, and `Properties.GetAll` for the
/// name, description and child count. A bridge whose `GetAll` fails or leaves one
/// of those out is asked for each with `Get`, and so is Qt, which `GetAll`
/// crashes ([`Bus::get_all_is_safe`]). Measured on Chromium 156 with a
/// cache that missed the page (read while it loaded): a search's read of 5,770
/// objects, nearly all walked, went from 2.1–2.4 s with six calls per object to
/// 1.0 s (docs/ARCHITECTURE.md §6, "Objects the cache lacks").
pub async fn fetch_info(bus: &Bus, obj: &ObjRef) -> Result<NodeInfo, CallError> {
    let a = iface::ACCESSIBLE;
    let (role, states, ifaces, all) = tokio::try_join!(
        bus.call::<_, u32>(obj, a, "GetRole", &()),
        bus.call::<_, Vec<u32>>(obj, a, "GetState", &()),
        bus.call::<_, Vec<String>>(obj, a, "GetInterfaces", &()),
        async {
            if !bus.get_all_is_safe(&obj.bus).await {
                return Ok(Default::default());
            }
            match bus.props_all(obj, a).await {
                Err(e) if e.is_timeout() || e.is_gone() => Err(e),
                Err(_) => Ok(Default::default()),
                Ok(all) => Ok(all),
            }
        },
    )?;
    let mut all = all;
    let mut take_str = |k: &str| all.remove(k).and_then(|v| String::try_from(v).ok());
    let (name, description) = (take_str("Name"), take_str("Description"));
    let child_count = all.remove("ChildCount").and_then(|v| i32::try_from(v).ok());
    let (name, description, child_count) = match (name, description, child_count) {
        (Some(n), Some(d), Some(c)) => (n, d, c),
        (n, d, c) => {
            let (n, d, c) = tokio::try_join!(
                async {
                    match n {
                        Some(n) => Ok(n),
                        None => bus.prop::<String>(obj, a, "Name").await,
                    }
                },
                async {
                    match d {
                        Some(d) => Ok(d),
                        None => bus.prop::<String>(obj, a, "Description").await,
                    }
                },
                async {
                    match c {
                        Some(c) => Ok(c),
                        None => bus.prop::<i32>(obj, a, "ChildCount").await,
                    }
                },
            )?;
            (n, d, c)
        }
    };
    Ok(NodeInfo {
        obj: obj.clone(),
        parent: None,
        index: -1,
        child_count,
        listed_children: None,
        role,
        name,
        description,
        states: RawStates::from_words(&states),
        ifaces: Ifaces::from_names(&ifaces),
    })
}

/// `Accessible.GetChildren`.
pub async fn get_children(bus: &Bus, obj: &ObjRef) -> Result<Vec<ObjRef>, CallError> {
    let v: Vec<(String, zbus::zvariant::OwnedObjectPath)> =
        bus.call(obj, iface::ACCESSIBLE, "GetChildren", &()).await?;
    Ok(v.into_iter()
        .map(obj_from_wire)
        .filter(|o| !o.is_null())
        .collect())
}

/// One node's children list as read: the node, its reported count, whether the list
/// starts at the page's `from` already ([`Plan::Range`]), the outcome.
type Listed = (ObjRef, i32, bool, Result<Read, CallError>);

/// The children a plan found, and the live child count when the plan read one
/// ([`Plan::CountThenRange`]).
type Read = (Option<Vec<ObjRef>>, Option<i32>);

/// `GetChildAtIndex` calls in flight at once for one [`Plan::Range`].
const RANGE_IN_FLIGHT: usize = 16;

/// The children `start..end` of `obj`, asked for one by one (`GetChildAtIndex`, at
/// most [`RANGE_IN_FLIGHT`] in flight), null answers left out.
pub async fn children_by_index(
    bus: &Bus,
    obj: &ObjRef,
    start: u32,
    end: u32,
) -> Result<Vec<ObjRef>, CallError> {
    let asked: Vec<Result<ObjRef, CallError>> = stream::iter(start..end)
        .map(|i| async move {
            let i = i32::try_from(i).unwrap_or(i32::MAX);
            let wire: (String, zbus::zvariant::OwnedObjectPath) = bus
                .call(obj, iface::ACCESSIBLE, "GetChildAtIndex", &(i,))
                .await?;
            Ok(obj_from_wire(wire))
        })
        .buffered(RANGE_IN_FLIGHT)
        .collect()
        .await;
    let mut kids = Vec::with_capacity(asked.len());
    for k in asked {
        let k = k?;
        if !k.is_null() {
            kids.push(k);
        }
    }
    Ok(kids)
}

async fn run_plan(bus: &Bus, obj: &ObjRef, plan: Plan, cap: u32) -> Result<Read, CallError> {
    match plan {
        Plan::Skip { .. } => Ok((None, None)),
        Plan::Use(v) => Ok((Some(v), None)),
        Plan::Fetch => Ok((Some(get_children(bus, obj).await?), None)),
        Plan::Range { start, end } => {
            Ok((Some(children_by_index(bus, obj, start, end).await?), None))
        }
        Plan::CountThenRange { start, fallback } => {
            let n: i32 = bus.prop(obj, iface::ACCESSIBLE, "ChildCount").await?;
            if n < 0 {
                return Ok((Some(fallback), None));
            }
            if n as u64 > u64::from(cap) {
                // As with a known count above the cap: none asked for, all counted.
                return Ok((Some(Vec::new()), Some(n)));
            }
            let end = u32::try_from(n).unwrap_or(0);
            let kids = children_by_index(bus, obj, start.min(end), end).await?;
            Ok((Some(kids), Some(n)))
        }
        Plan::CountThenFetch(fallback) => {
            let n: i32 = bus.prop(obj, iface::ACCESSIBLE, "ChildCount").await?;
            if n >= 0 && n as u64 <= ABSURD_CHILD_COUNT.max(u64::from(cap)) {
                Ok((Some(get_children(bus, obj).await?), None))
            } else {
                Ok((Some(fallback), None))
            }
        }
    }
}

/// Keeps the children of one node that fit (pure): skips objects already placed
/// elsewhere (stale parent pointers list some twice; the first place wins), keeps at
/// most `cap`, and spends the shared node `budget`. Returns the kept children and how
/// many were left unread: the ones cut here plus, for a reported count above the cap,
/// those never listed.
pub fn take_children(
    list: Vec<ObjRef>,
    reported: i32,
    cap: u32,
    budget: &mut u64,
    placed: &mut HashSet<ObjRef>,
) -> (Vec<ObjRef>, u64) {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let listed = list.len() as u64;
    for k in list {
        if placed.contains(&k) {
            continue;
        }
        if kept.len() as u64 >= u64::from(cap) || *budget == 0 {
            dropped += 1;
            continue;
        }
        *budget -= 1;
        placed.insert(k.clone());
        kept.push(k);
    }
    let reported = u64::try_from(reported).unwrap_or(0);
    let unlisted = if reported > u64::from(cap) {
        reported.saturating_sub(listed)
    } else {
        0
    };
    (kept, dropped + unlisted)
}

/// Turns a failed call into "skip this object" or "stop the snapshot".
fn absorb(e: CallError, obj: &ObjRef, vanished: &mut HashSet<ObjRef>) -> Result<()> {
    if e.is_timeout() {
        return Err(e.to_driver());
    }
    tracing::debug!(%obj, error = %e, "object skipped");
    vanished.insert(obj.clone());
    Ok(())
}

/// Reads the structure under `root`.
///
/// `cache` is the application's `GetItems` reply, or `None` to walk object by object.
/// Errors: `COMPUTER_NOT_RESPONDING` when any call times out; an unknown root is not
/// an error here (the caller finds it missing from `parts.infos`).
pub async fn walk(
    bus: &Bus,
    root: &ObjRef,
    cache: Option<Vec<NodeInfo>>,
    limits: &WalkLimits,
) -> Result<Walk> {
    let mut pool: HashMap<ObjRef, NodeInfo> = HashMap::new();
    let mut by_parent: HashMap<ObjRef, Vec<ObjRef>> = HashMap::new();
    let mut trust_showing = cache.iter().flatten().any(sets_showing);
    for item in cache.into_iter().flatten() {
        if let Some(p) = &item.parent {
            by_parent
                .entry(p.clone())
                .or_default()
                .push(item.obj.clone());
        }
        pool.insert(item.obj.clone(), item);
    }

    let mut out = Walk::default();
    // Nodes on screen so far, and each frontier node's parent (for the GTK 4 rule).
    let mut shown: HashSet<ObjRef> = HashSet::new();
    let mut parent_of: HashMap<ObjRef, ObjRef> = HashMap::new();
    let mut placed: HashSet<ObjRef> = HashSet::from([root.clone()]);
    let mut frontier = vec![root.clone()];
    let mut budget = u64::from(limits.max_nodes.max(1)) - 1;
    let mut depth = 0u32;

    while !frontier.is_empty() {
        // 1. Records the cache did not hold.
        let missing: Vec<ObjRef> = frontier
            .iter()
            .filter(|o| !pool.contains_key(*o))
            .cloned()
            .collect();
        out.walked += missing.len() as u64;
        let fetched: Vec<(ObjRef, Result<NodeInfo, CallError>)> = stream::iter(missing)
            .map(|o| async move {
                let r = fetch_info(bus, &o).await;
                (o, r)
            })
            .buffer_unordered(limits.concurrency.max(1))
            .collect()
            .await;
        for (o, r) in fetched {
            match r {
                Ok(info) => {
                    pool.insert(o, info);
                }
                Err(e) => absorb(e, &o, &mut out.parts.vanished)?,
            }
        }

        // On screen: the root if it says so; below it, a node under an on-screen
        // parent that says so, or (toolkits that never say so) that is VISIBLE.
        trust_showing = trust_showing
            || frontier
                .iter()
                .filter_map(|o| pool.get(o))
                .any(sets_showing);
        for o in &frontier {
            let parent_shown = match parent_of.get(o) {
                Some(p) => shown.contains(p),
                None => true,
            };
            if let Some(info) = pool.get_mut(o) {
                let visible = info.states.has(atspi::State::Visible);
                if parent_shown && !trust_showing && visible && !info.states.on_screen() {
                    info.states.0 |= atspi::State::Showing as u64;
                }
                if parent_shown && info.states.on_screen() {
                    shown.insert(o.clone());
                }
            }
        }

        // 2. Plans, from what is known now.
        let mut jobs = Vec::new();
        for o in &frontier {
            if out.parts.vanished.contains(o) {
                continue;
            }
            let Some(info) = pool.get(o) else { continue };
            if info.states.defunct() {
                out.parts.vanished.insert(o.clone());
                continue;
            }
            let cached = by_parent.get(o).map(Vec::as_slice).unwrap_or(&[]);
            let plan = plan_children(info, o == root, cached, &pool, depth, limits);
            if let Plan::Skip { capped } = plan {
                out.capped += capped;
            }
            let offset = matches!(
                plan,
                Plan::Range { start, .. } | Plan::CountThenRange { start, .. } if start > 0
            );
            jobs.push((o.clone(), plan, info.child_count, offset));
        }
        for o in &frontier {
            if let Some(info) = pool.get(o) {
                out.parts.infos.insert(o.clone(), info.clone());
            }
        }

        // 3. Children lists, asking where the plan says so.
        let cap = limits.child_cap;
        let lists: Vec<Listed> = stream::iter(jobs)
            .map(|(o, plan, count, offset)| async move {
                let r = run_plan(bus, &o, plan, cap).await;
                (o, count, offset, r)
            })
            .buffer_unordered(limits.concurrency.max(1))
            .collect()
            .await;

        // 4. Cap, budget, next wave (in frontier order, so the budget keeps the first
        // children of the first nodes).
        let mut by_obj: HashMap<ObjRef, (i32, bool, Option<Vec<ObjRef>>)> = HashMap::new();
        for (o, count, offset, r) in lists {
            match r {
                Ok((list, live)) => {
                    // A count read live replaces the cache's unknown one.
                    let count = match live {
                        Some(n) => {
                            if let Some(info) = out.parts.infos.get_mut(&o) {
                                info.child_count = n;
                            }
                            n
                        }
                        None => count,
                    };
                    by_obj.insert(o, (count, offset, list));
                }
                Err(e) if e.is_timeout() => return Err(e.to_driver()),
                Err(e) => {
                    // The node is there but would not list its children: keep the
                    // node, leave its children unread.
                    tracing::debug!(obj = %o, error = %e, "children unread");
                    if e.is_gone() {
                        out.parts.vanished.insert(o);
                    }
                }
            }
        }
        let mut next = Vec::new();
        for o in &frontier {
            let Some((count, offset, Some(list))) = by_obj.remove(o) else {
                continue;
            };
            let (list, count) = if o == root && limits.from > 0 {
                // A later page: the first `from` children are skipped, not read (a
                // list asked for by index starts there already).
                let from = i32::try_from(limits.from).unwrap_or(i32::MAX);
                if offset {
                    (list, count.saturating_sub(from))
                } else {
                    let skip = (limits.from as usize).min(list.len());
                    let rest = list.into_iter().skip(skip).collect::<Vec<_>>();
                    (
                        rest,
                        count.saturating_sub(i32::try_from(skip).unwrap_or(i32::MAX)),
                    )
                }
            } else {
                (list, count)
            };
            let (kept, capped) = take_children(list, count, cap, &mut budget, &mut placed);
            out.capped += capped;
            for k in &kept {
                parent_of.insert(k.clone(), o.clone());
            }
            next.extend(kept.iter().cloned());
            out.parts.kids.insert(o.clone(), kept);
        }
        frontier = next;
        depth += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use atspi::State as S;

    const SHOWN: u64 = S::Showing as u64 | S::Visible as u64;

    fn obj(n: u32) -> ObjRef {
        ObjRef::new(":1.9", format!("/org/a11y/atspi/accessible/{n}"))
    }

    fn info(n: u32, index: i32, count: i32, states: u64) -> NodeInfo {
        NodeInfo {
            obj: obj(n),
            parent: None,
            index,
            child_count: count,
            listed_children: None,
            role: 39,
            name: String::new(),
            description: String::new(),
            states: RawStates(states),
            ifaces: Ifaces::default(),
        }
    }

    fn pool(items: &[NodeInfo]) -> HashMap<ObjRef, NodeInfo> {
        items.iter().map(|i| (i.obj.clone(), i.clone())).collect()
    }

    const LIMITS: WalkLimits = WalkLimits {
        child_cap: 500,
        max_nodes: 5_000,
        depth: None,
        concurrency: 8,
        from: 0,
        hidden: false,
    };

    #[test]
    fn managed_descendants_are_never_enumerated() {
        let table = Ifaces::from_names(["org.a11y.atspi.Table".to_string()]);
        let mut grid = info(1477, -1, -1, SHOWN | S::ManagesDescendants as u64);
        grid.ifaces = table;
        assert_eq!(
            plan_children(&grid, false, &[], &HashMap::new(), 3, &LIMITS),
            Plan::Skip { capped: 0 }
        );
        let mut tree = info(5, -1, 120, SHOWN | S::ManagesDescendants as u64);
        tree.ifaces = table;
        assert_eq!(
            plan_children(&tree, false, &[], &HashMap::new(), 3, &LIMITS),
            Plan::Skip { capped: 120 }
        );
        // Off screen, even a small one is left unread.
        let hidden = info(6, -1, 2, S::ManagesDescendants as u64);
        assert_eq!(
            plan_children(&hidden, false, &[], &HashMap::new(), 3, &LIMITS),
            Plan::Skip { capped: 2 }
        );
    }

    #[test]
    fn a_document_that_builds_its_paragraphs_is_read_by_index() {
        // LibreOffice Writer: MANAGES_DESCENDANTS, no Table, the paragraphs built.
        let doc = info(7, -1, 2, SHOWN | S::ManagesDescendants as u64);
        assert_eq!(
            plan_children(&doc, false, &[], &HashMap::new(), 3, &LIMITS),
            Plan::Range { start: 0, end: 2 }
        );
        // More than the cap: none asked for, all counted.
        let doc = info(7, -1, 900, SHOWN | S::ManagesDescendants as u64);
        assert_eq!(
            plan_children(&doc, false, &[], &HashMap::new(), 3, &LIMITS),
            Plan::Skip { capped: 900 }
        );
        // Opened from a file: the cache says "unknown" and holds no paragraph; the
        // live count is read first, and the cached list is only the fallback.
        let doc = info(7, -1, -1, SHOWN | S::ManagesDescendants as u64);
        assert_eq!(
            plan_children(&doc, false, &[], &HashMap::new(), 3, &LIMITS),
            Plan::CountThenRange {
                start: 0,
                fallback: Vec::new()
            }
        );
        // Typed in while a client listened: the cache holds them, in order, but
        // still only as the fallback of the live read.
        let p = pool(&[info(9, 1, 0, SHOWN), info(8, 0, 0, SHOWN)]);
        assert_eq!(
            plan_children(&doc, false, &[obj(9), obj(8)], &p, 3, &LIMITS),
            Plan::CountThenRange {
                start: 0,
                fallback: vec![obj(8), obj(9)]
            }
        );
        // The scope of a later page starts at `from`.
        let page = WalkLimits { from: 7, ..LIMITS };
        assert_eq!(
            plan_children(&doc, true, &[], &HashMap::new(), 0, &page),
            Plan::CountThenRange {
                start: 7,
                fallback: Vec::new()
            }
        );
        // Off screen, or a grid with `Table`, stays unread.
        let hidden = info(7, -1, -1, S::ManagesDescendants as u64);
        assert_eq!(
            plan_children(&hidden, false, &[], &HashMap::new(), 3, &LIMITS),
            Plan::Skip { capped: 0 }
        );
    }

    #[test]
    fn absurd_counts_use_the_cache_only() {
        let huge = info(1, -1, i32::MAX, SHOWN);
        let p = pool(&[info(3, -1, 0, SHOWN), info(2, -1, 0, SHOWN)]);
        assert_eq!(
            plan_children(&huge, false, &[obj(3), obj(2)], &p, 1, &LIMITS),
            Plan::Use(vec![obj(2), obj(3)])
        );
    }

    #[test]
    fn complete_indexed_cache_needs_no_call() {
        let parent = info(1, -1, 2, SHOWN);
        let p = pool(&[info(10, 1, 0, SHOWN), info(11, 0, 0, SHOWN)]);
        assert_eq!(
            plan_children(&parent, false, &[obj(10), obj(11)], &p, 1, &LIMITS),
            Plan::Use(vec![obj(11), obj(10)]),
            "ordered by index, not path"
        );
    }

    #[test]
    fn unindexed_or_incomplete_shown_nodes_ask() {
        let parent = info(1, -1, 2, SHOWN);
        let p = pool(&[info(10, -1, 0, SHOWN), info(11, -1, 0, SHOWN)]);
        assert_eq!(
            plan_children(&parent, false, &[obj(10), obj(11)], &p, 1, &LIMITS),
            Plan::Fetch
        );
        // LibreOffice's frame: 12 children, 1 listed under it in the cache.
        let frame = info(614, -1, 12, SHOWN);
        assert_eq!(
            plan_children(&frame, true, &[obj(10)], &p, 0, &LIMITS),
            Plan::Fetch
        );
        // A single cached child is in order by definition.
        let one = info(2, -1, 1, SHOWN);
        assert_eq!(
            plan_children(&one, false, &[obj(10)], &p, 1, &LIMITS),
            Plan::Use(vec![obj(10)])
        );
    }

    #[test]
    fn hidden_nodes_use_the_cache_and_unknown_counts_are_checked_first() {
        let hidden = info(1, -1, 2, S::Visible as u64);
        let p = pool(&[info(11, -1, 0, 0), info(10, -1, 0, 0)]);
        assert_eq!(
            plan_children(&hidden, false, &[obj(11), obj(10)], &p, 1, &LIMITS),
            Plan::Use(vec![obj(10), obj(11)]),
            "path order when no index is known"
        );
        let menu = info(3, -1, -1, SHOWN);
        assert_eq!(
            plan_children(&menu, false, &[obj(11)], &p, 1, &LIMITS),
            Plan::CountThenFetch(vec![obj(11)])
        );
    }

    #[test]
    fn children_are_capped_budgeted_and_placed_once() {
        let mut placed = HashSet::from([obj(1)]);
        let mut budget = 10;
        let (kept, capped) = take_children(
            vec![obj(1), obj(2), obj(3), obj(4)],
            4,
            2,
            &mut budget,
            &mut placed,
        );
        assert_eq!(
            kept,
            vec![obj(2), obj(3)],
            "already placed obj 1 skipped, cap 2"
        );
        assert_eq!(capped, 1);
        assert_eq!(budget, 8);
        assert!(placed.contains(&obj(3)) && !placed.contains(&obj(4)));

        // An absurd count with a short cached list: the unlisted rest is capped too.
        let (kept, capped) = take_children(vec![obj(5)], 2_000, 500, &mut budget, &mut placed);
        assert_eq!(kept, vec![obj(5)]);
        assert_eq!(capped, 1_999);

        // The budget runs out.
        let mut budget = 1;
        let (kept, capped) = take_children(vec![obj(6), obj(7)], 2, 500, &mut budget, &mut placed);
        assert_eq!(kept, vec![obj(6)]);
        assert_eq!((capped, budget), (1, 0));
    }

    #[test]
    fn a_very_long_list_is_asked_for_by_index_from_the_page() {
        let n = info(1, -1, 40_001, SHOWN);
        assert_eq!(
            plan_children(&n, false, &[], &HashMap::new(), 1, &LIMITS),
            Plan::Range { start: 0, end: 500 }
        );
        let page = WalkLimits {
            from: 39_800,
            ..LIMITS
        };
        assert_eq!(
            plan_children(&n, true, &[], &HashMap::new(), 0, &page),
            Plan::Range {
                start: 39_800,
                end: 40_001
            }
        );
        // Below the threshold the whole list is one call.
        let n = info(1, -1, 2_000, SHOWN);
        assert_eq!(
            plan_children(&n, false, &[], &HashMap::new(), 1, &LIMITS),
            Plan::Fetch
        );
    }

    #[test]
    fn hidden_children_are_read_only_when_asked() {
        // An object off screen whose children the cache lacks: the cache's view
        // (nothing) by default, its own list for a search.
        let n = info(1, -1, 2, 0);
        assert_eq!(
            plan_children(&n, false, &[], &HashMap::new(), 1, &LIMITS),
            Plan::Use(Vec::new())
        );
        let search = WalkLimits {
            hidden: true,
            ..LIMITS
        };
        assert_eq!(
            plan_children(&n, false, &[], &HashMap::new(), 1, &search),
            Plan::Fetch
        );
    }

    #[test]
    fn depth_limit_and_legacy_lists() {
        let d = WalkLimits {
            depth: Some(2),
            ..LIMITS
        };
        let n = info(1, -1, 3, SHOWN);
        assert_eq!(
            plan_children(&n, false, &[], &HashMap::new(), 2, &d),
            Plan::Skip { capped: 0 }
        );
        let mut legacy = info(1, -1, 2, SHOWN);
        legacy.listed_children = Some(vec![obj(7), obj(6)]);
        assert_eq!(
            plan_children(&legacy, false, &[], &HashMap::new(), 0, &LIMITS),
            Plan::Use(vec![obj(7), obj(6)])
        );
    }
}

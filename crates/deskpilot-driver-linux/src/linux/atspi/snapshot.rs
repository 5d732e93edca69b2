//! `tree.snapshot`: one window (or a subtree of it) as a [`Node`] tree.
//!
//! Owns the order of a read: one `Cache.GetItems` for the window's application (or,
//! without a cache, a bounded walk), the structure ([`super::walk`]), the details of
//! nodes that will be rendered ([`super::details`]), visible ranges of on-demand
//! tables ([`super::table`]), then the pure assembly ([`super::tree`]) and the
//! [`WalkStats`]. It never retries a timed-out application: the first timeout ends
//! the read with `COMPUTER_NOT_RESPONDING`.

use std::time::Instant;

use deskpilot_core::Node;
use deskpilot_protocol::types::{SnapshotParams, TreeSnapshot, WalkStats, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::apps::{app_name, window_info};
use super::cache::get_items;
use super::connection::{Bus, CallError};
use super::details::read_details;
use super::document;
use super::handle::ObjRef;
use super::options::ConnectOptions;
use super::role_map::{code, map_role_code, toplevel_role};
use super::table::{self, CellReads};
use super::tree::assemble;
use super::walk::{WalkLimits, walk};
use deskpilot_protocol::Result;

fn not_found(what: &ObjRef) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotFound,
        format!(
            "{what} is not an element of a running application (closed, or the app rebuilt \
             it); list windows again with apps.list"
        ),
    )
    .with_detail(serde_json::json!({ "handle": what.to_string() }))
}

/// A snapshot before it is wrapped for the wire.
pub struct Read {
    pub root: Node,
    pub window: WindowInfo,
    pub stats: WalkStats,
}

/// Reads `p.window` (or `p.scope` inside it) under the limits of `opts`.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a malformed handle or a scope in another
/// application; `COMPUTER_ELEMENT_NOT_FOUND` when the window or scope is gone;
/// `COMPUTER_NOT_RESPONDING` when the application does not answer a call in time.
pub async fn read(bus: &Bus, opts: &ConnectOptions, p: &SnapshotParams) -> Result<Read> {
    let started = Instant::now();
    let window = ObjRef::from_handle(&p.window)?;
    let root = match &p.scope {
        Some(s) => ObjRef::from_handle(s)?,
        None => window.clone(),
    };
    if root.bus != window.bus {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!("scope {root} is not in window {window}'s application"),
        ));
    }

    let bulk_read = if opts.prefer_cache {
        get_items(bus, &window.bus, opts.bulk_timeout).await
    } else {
        Err(CallError::Unsupported {
            target: window.to_string(),
            method: "GetItems".to_string(),
            error_name: "cache not wanted (prefer_cache = false)".to_string(),
        })
    };
    let (items, bulk) = match bulk_read {
        Ok(items) => (Some(items), true),
        Err(e) if e.is_timeout() => return Err(e.to_driver()),
        Err(e) if e.is_gone() => return Err(not_found(&window)),
        Err(e) => {
            tracing::debug!(app = %window.bus, error = %e, "no cache: walking");
            (None, false)
        }
    };
    let t_cache = started.elapsed();
    let cached_objects = items.as_ref().map(|v| v.len() as u64).unwrap_or(0);
    let app_label = items.as_ref().and_then(|v| {
        v.iter()
            .find(|i| {
                i.role == code::APPLICATION && i.parent.as_ref().is_none_or(|p| p.bus != window.bus)
            })
            .map(|i| i.name.trim().to_string())
    });

    let most = deskpilot_protocol::types::MAX_READ_NODES;
    let limits = WalkLimits {
        child_cap: p.child_cap.map_or(opts.child_cap, |c| c.min(most)),
        max_nodes: p.max_nodes.map_or(opts.max_nodes, |m| m.min(most)),
        depth: p.depth,
        concurrency: opts.concurrency,
        from: p.from.unwrap_or(0),
        hidden: p.hidden,
    };
    let mut w = walk(bus, &root, items, &limits).await?;
    let t_walk = started.elapsed();
    if !w.parts.infos.contains_key(&root) || w.parts.vanished.contains(&root) {
        return Err(not_found(&root));
    }
    // A request may ask for more (or less) text per field, up to MAX_TEXT_CAP.
    let text_cap = p.text_cap.map_or(opts.text_cap, |c| {
        c.min(deskpilot_protocol::types::MAX_TEXT_CAP) as usize
    });
    let left = u64::from(limits.max_nodes).saturating_sub(w.parts.infos.len() as u64);
    // Tables read by visible range need nothing the details read finds (their
    // extents are read again with them): both run at once, the tables' cells are
    // added after.
    let tables = table::tables_to_read(&w.parts, opts.child_cap);
    let how = CellReads {
        concurrency: opts.concurrency,
        text_cap,
        whole: limits.hidden,
    };
    let ((), table_reads) = futures_util::future::try_join(
        read_details(
            bus,
            &mut w.parts,
            &root,
            opts.concurrency,
            text_cap,
            limits.hidden,
        ),
        table::read_tables(bus, &tables, &window, how, left),
    )
    .await?;
    let cells: u64 = table_reads.into_iter().map(|r| r.apply(&mut w.parts)).sum();
    // Lists that say they are larger than what they hold (a virtualised web list).
    for (list, size) in set_sizes(bus, &w.parts, opts.concurrency).await {
        w.parts.details.entry(list).or_default().set_size = Some(size);
    }
    // Documents built in view: whether more lies around the paragraphs read, from
    // what the read holds (no call: nothing out of view is ever asked for).
    let docs: Vec<_> = w
        .parts
        .infos
        .keys()
        .filter_map(|o| Some((o.clone(), document::view_in(&w.parts, o)?)))
        .collect();
    for (doc, view) in docs {
        w.parts.details.entry(doc).or_default().document = Some(view);
    }
    // The whole text of a document built in view, for `read`: paged through.
    if p.whole_text && document::builds_in_view(&w.parts.infos[&root]) {
        let (text, paged) = document::read_whole_text(bus, &root, text_cap).await?;
        let complete = paged.stopped.is_none();
        let d = w.parts.details.entry(root.clone()).or_default();
        d.text = Some(text);
        d.text_length = None;
        d.document = Some(deskpilot_core::DocumentView {
            before: false,
            after: !complete,
            paged: Some(paged),
        });
    }
    let t_tables = started.elapsed();
    let mut node = assemble(&root, &w.parts).ok_or_else(|| not_found(&root))?;
    // Class names and doubled labels are not names (GTK 4): tidied once, here, so
    // every read (observe, find, diff) sees the same names.
    deskpilot_core::names::tidy_names(&mut node);
    if let Some(from) = p.from.filter(|&f| f > 0) {
        // The page's children start `from` children in; those before it are counted.
        node.first_child = u64::from(from).min(node.child_count);
        node.child_count = node
            .child_count
            .max(node.first_child + node.children.len() as u64);
    }
    if root == window {
        node.role = toplevel_role(node.role);
    }

    let (app, pid) = match app_label {
        Some(name) if !name.is_empty() => (name, bus.pid_of(&window.bus).await.ok()),
        _ => app_name(bus, &window.bus)
            .await
            .map_err(|e| e.to_driver())?,
    };
    let window_info = if root == window {
        let info = &w.parts.infos[&root];
        WindowInfo {
            device_bounds: None,
            toolkit_scale: None,
            no_tree: false,
            covered_by: Vec::new(),
            hidden: None,
            handle: window.to_handle(),
            app,
            pid,
            title: node.name.clone(),
            role: toplevel_role(map_role_code(info.role)),
            active: info.states.has(atspi::State::Active),
            bounds: node.bounds.filter(|b| !b.is_empty()),
        }
    } else {
        window_info(bus, &window, &app, pid)
            .await
            .map_err(|e| {
                if e.is_gone() {
                    not_found(&window)
                } else {
                    e.to_driver()
                }
            })?
            .0
    };

    let stats = WalkStats {
        objects: if bulk {
            cached_objects + w.walked + cells
        } else {
            w.walked + cells
        },
        vanished: w.parts.vanished.len() as u64,
        capped: w.capped,
        elapsed_ms: started.elapsed().as_millis() as u64,
        bulk,
    };
    tracing::debug!(
        window = %window,
        nodes = node.count(),
        objects = stats.objects,
        ms = stats.elapsed_ms,
        cache_ms = t_cache.as_millis() as u64,
        walk_ms = (t_walk - t_cache).as_millis() as u64,
        details_and_tables_ms = (t_tables - t_walk).as_millis() as u64,
        tables = tables.len(),
        "snapshot read"
    );
    Ok(Read {
        root: node,
        window: window_info,
        stats,
    })
}

/// [`read`], shaped for the wire.
pub async fn snapshot(
    bus: &Bus,
    opts: &ConnectOptions,
    p: &SnapshotParams,
) -> Result<TreeSnapshot> {
    let r = read(bus, opts, p).await?;
    Ok(TreeSnapshot {
        window: r.window,
        root: r.root,
        stats: r.stats,
    })
}

/// Lists whose items say they belong to a larger set than the list holds: for
/// every list, list box or tree whose first read child is an item, the item's
/// `setsize` object attribute (ARIA `aria-setsize`, which Chromium and Firefox
/// expose; GTK and Qt items have none) when it exceeds the children the list
/// reports. One `GetAttributes` call per such list, `concurrency` at a time; a call
/// that fails counts as no attribute.
async fn set_sizes(
    bus: &Bus,
    parts: &super::tree::Parts,
    concurrency: usize,
) -> Vec<(ObjRef, u64)> {
    use futures_util::StreamExt as _;
    let asks: Vec<(ObjRef, ObjRef, u64)> = parts
        .infos
        .iter()
        .filter(|(_, i)| matches!(i.role, code::LIST | code::LIST_BOX | code::TREE))
        .filter_map(|(o, i)| {
            let first = parts.kids.get(o)?.first()?;
            let item = parts.infos.get(first)?;
            matches!(item.role, code::LIST_ITEM | code::TREE_ITEM).then(|| {
                let have = u64::try_from(i.child_count)
                    .unwrap_or(0)
                    .max(parts.kids[o].len() as u64);
                (o.clone(), first.clone(), have)
            })
        })
        .collect();
    futures_util::stream::iter(asks)
        .map(|(list, item, have)| async move {
            let attrs = bus
                .call::<_, std::collections::HashMap<String, String>>(
                    &item,
                    super::connection::iface::ACCESSIBLE,
                    "GetAttributes",
                    &(),
                )
                .await
                .ok()?;
            let size = set_size_of(&attrs)?;
            (size > have).then_some((list, size))
        })
        .buffer_unordered(concurrency.max(1))
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// The `setsize` attribute of an item's object attributes, as a count (pure).
fn set_size_of(attrs: &std::collections::HashMap<String, String>) -> Option<u64> {
    attrs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("setsize"))
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
}

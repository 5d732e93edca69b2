//! Tables whose cells are created on demand, read by visible range only.
//!
//! Owns reading a `Table` container that manages its descendants (LibreOffice's sheet
//! grid: 1,048,576 × 16,384 cells; GTK tree views): `NRows`/`NColumns`, the cells at
//! the two inner corners of its extents (`Component.GetAccessibleAtPoint`), their row
//! and column (`Table.GetRowAtIndex`/`GetColumnAtIndex` of the index in parent, else
//! the cell's A1 name), then `Table.GetAccessibleAt` for at most [`MAX_ROWS`] ×
//! [`MAX_COLUMNS`] visible cells with their name, states and text. It must never ask
//! the container for its children.

use deskpilot_core::{Bounds, TableInfo};
use futures_util::future::join_all;
use futures_util::{StreamExt, stream};

use super::connection::{Bus, CallError, iface, obj_from_wire};
use super::details::{extents, text_head};
use super::handle::ObjRef;
use super::info::{Ifaces, NodeInfo};
use super::role_map::code;
use super::state_map::RawStates;
use super::tree::{Details, Parts};
use deskpilot_protocol::Result;

/// Rows of cells read at most: 40 fills a 1280×800 screen of spreadsheet rows
/// (LibreOffice shows 33 at its default zoom there).
pub const MAX_ROWS: u64 = 40;
/// Columns of cells read at most: a spreadsheet's default columns are ~82 px wide,
/// so 16 cover ~1,300 px (LibreOffice shows A to O on 1280×800, O in part), and a
/// read takes 640 cells at most. A wider view says which cells were read
/// ([`TableInfo::read`]).
pub const MAX_COLUMNS: u64 = 16;

/// Spreadsheet column letters for a 0-based column (`0` → `A`, `26` → `AA`).
pub fn column_letters(mut col: u64) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'A' + (col % 26) as u8);
        if col < 26 {
            break;
        }
        col = col / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The A1 name of a 0-based cell (`(1, 1)` → `B2`).
pub fn a1_name(row: u64, col: u64) -> String {
    format!("{}{}", column_letters(col), row + 1)
}

/// Parses an A1 cell name into a 0-based `(row, column)`.
pub fn parse_a1(name: &str) -> Option<(u64, u64)> {
    let name = name.trim();
    let split = name.find(|c: char| c.is_ascii_digit())?;
    let (letters, digits) = name.split_at(split);
    if letters.is_empty() || !letters.chars().all(|c| c.is_ascii_uppercase()) {
        return None;
    }
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut col: u64 = 0;
    for c in letters.bytes() {
        col = col.checked_mul(26)?.checked_add(u64::from(c - b'A') + 1)?;
    }
    let row: u64 = digits.parse().ok()?;
    (row >= 1).then(|| (row - 1, col - 1))
}

/// How far inwards (pixels) the corners of a table are probed for a cell, in turn:
/// past a column header (GTK's is ~25 px) or a half-shown last row.
const CORNER_PROBES: [i32; 4] = [0, 12, 28, 48];

/// The range of cells to read: from the top-left visible cell to the bottom-right one
/// (either may be unknown), clipped to the table and to [`MAX_ROWS`] × [`MAX_COLUMNS`].
/// Returns inclusive `(rows, columns)` ranges, or `None` for an empty table.
pub fn read_range(
    rows: u64,
    columns: u64,
    top_left: Option<(u64, u64)>,
    bottom_right: Option<(u64, u64)>,
) -> Option<((u64, u64), (u64, u64))> {
    if rows == 0 || columns == 0 {
        return None;
    }
    // Only the bottom known (the top probe hit no cell): the rows up to it.
    let guess = bottom_right.map_or((0, 0), |(r, c)| {
        (
            r.saturating_sub(MAX_ROWS - 1),
            c.saturating_sub(MAX_COLUMNS - 1),
        )
    });
    let (r0, c0) = top_left.unwrap_or(guess);
    let (r0, c0) = (r0.min(rows - 1), c0.min(columns - 1));
    let (r1, c1) = bottom_right.unwrap_or((r0 + MAX_ROWS - 1, c0 + MAX_COLUMNS - 1));
    let r1 = r1.max(r0).min(rows - 1).min(r0 + MAX_ROWS - 1);
    let c1 = c1.max(c0).min(columns - 1).min(c0 + MAX_COLUMNS - 1);
    Some(((r0, r1), (c0, c1)))
}

/// What is on screen, as `(rows, columns)`: from the read's first cell to the
/// bottom-right corner's, which may lie past what a read takes ([`MAX_ROWS`] ×
/// [`MAX_COLUMNS`]); the `read` range itself when that corner is unknown or
/// before it.
pub fn visible_range(
    rows: u64,
    columns: u64,
    bottom_right: Option<(u64, u64)>,
    read: ((u64, u64), (u64, u64)),
) -> ((u64, u64), (u64, u64)) {
    let ((r0, r1), (c0, c1)) = read;
    match bottom_right {
        Some((br, bc)) if br >= r0 && bc >= c0 => (
            (r0, br.max(r1).min(rows.saturating_sub(1))),
            (c0, bc.max(c1).min(columns.saturating_sub(1))),
        ),
        _ => read,
    }
}

/// A child count past which a table is read only through `Table`: 100,000. Below it
/// (a web page's 501-row table) the children are real objects, walked like any
/// others up to the child cap with "K more"; above it (2,147,483,647 in LibreOffice)
/// the count describes cells built on demand.
pub const ABSURD_CHILD_COUNT: u64 = 100_000;

/// True for a node that must be read through `Table` rather than its children: it
/// manages its descendants, or reports an unknown or absurd child count. `child_cap`
/// is kept for callers; tables between the cap and [`ABSURD_CHILD_COUNT`] are walked.
pub fn needs_table_read(info: &NodeInfo, child_cap: u32) -> bool {
    let _ = child_cap;
    info.ifaces.has(Ifaces::TABLE)
        && info.states.on_screen()
        && (info.states.manages_descendants()
            || info.child_count < 0
            || info.child_count as u64 > ABSURD_CHILD_COUNT)
}

/// Row and column of a cell object.
pub(crate) async fn cell_position(bus: &Bus, table: &ObjRef, cell: &ObjRef) -> Option<(u64, u64)> {
    let idx: Result<i32, CallError> = bus
        .call(cell, iface::ACCESSIBLE, "GetIndexInParent", &())
        .await;
    if let Ok(idx) = idx
        && idx >= 0
    {
        // The row and the column are asked together: one round trip, not two.
        let r: Result<(i32, i32), CallError> = futures_util::future::try_join(
            bus.call(table, iface::TABLE, "GetRowAtIndex", &(idx,)),
            bus.call(table, iface::TABLE, "GetColumnAtIndex", &(idx,)),
        )
        .await;
        if let Ok((row, col)) = r
            && row >= 0
            && col >= 0
        {
            return Some((row as u64, col as u64));
        }
    }
    let name: String = bus.prop(cell, iface::ACCESSIBLE, "Name").await.ok()?;
    parse_a1(&name)
}

/// Row and column of the first cell found at the points `at(dy)` gives for each of
/// [`CORNER_PROBES`] under half the table's height, in order.
async fn corner(
    bus: &Bus,
    table: &ObjRef,
    bounds: Bounds,
    at: impl Fn(i32) -> (i32, i32),
) -> Option<(u64, u64)> {
    for &dy in CORNER_PROBES.iter().filter(|&&d| d < bounds.height / 2) {
        let (x, y) = at(dy);
        if let Some(c) = cell_at_point(bus, table, x, y).await
            && let Some(p) = cell_position(bus, table, &c).await
        {
            return Some(p);
        }
    }
    None
}

async fn cell_at_point(bus: &Bus, table: &ObjRef, x: i32, y: i32) -> Option<ObjRef> {
    let r: Result<(String, zbus::zvariant::OwnedObjectPath), CallError> = bus
        .call(
            table,
            iface::COMPONENT,
            "GetAccessibleAtPoint",
            &(x, y, 0u32),
        )
        .await;
    r.ok().map(obj_from_wire).filter(|o| !o.is_null())
}

/// What one cell read gives.
struct Cell {
    obj: ObjRef,
    name: String,
    states: RawStates,
    text: String,
    text_length: Option<u64>,
    /// What a sheet cell without text holds that its text does not say: its
    /// formula (`=""`, or one whose error the sheet shows) and its comment.
    description: String,
}

/// Children of a nameless cell whose names and texts name it (GTK 3 puts an icon
/// and a text renderer inside a file chooser's Name cell): 4 at most.
const CELL_PARTS: i32 = 4;

/// What [`name_and_text`] read of one object.
struct Said {
    name: String,
    states: RawStates,
    text: String,
    text_length: Option<u64>,
    /// Whether it implements `Text`.
    has_text: bool,
}

/// The name and text of `obj`: its `Name`, and the head of its text when it
/// implements `Text`. Without `known_text` that is asked first with
/// `GetInterfaces` (a text call on an object without `Text` makes GTK print
/// `ATK_IS_TEXT` criticals); with it, the text is read beside the name and state,
/// one round trip fewer.
async fn name_and_text(
    bus: &Bus,
    obj: &ObjRef,
    text_cap: usize,
    known_text: Option<bool>,
) -> Result<Said, CallError> {
    let head = |has: bool| async move {
        if !has {
            return Ok((String::new(), None));
        }
        match text_head(bus, obj, text_cap).await {
            Err(e) if e.is_unsupported() => Ok((String::new(), None)),
            other => other,
        }
    };
    let (name, states, has_text, (text, text_length)) = match known_text {
        Some(has) => {
            let (name, states, text) = tokio::try_join!(
                bus.prop::<String>(obj, iface::ACCESSIBLE, "Name"),
                bus.call::<_, Vec<u32>>(obj, iface::ACCESSIBLE, "GetState", &()),
                head(has),
            )?;
            (name, states, has, text)
        }
        None => {
            let (name, states, ifaces) = tokio::try_join!(
                bus.prop::<String>(obj, iface::ACCESSIBLE, "Name"),
                bus.call::<_, Vec<u32>>(obj, iface::ACCESSIBLE, "GetState", &()),
                bus.call::<_, Vec<String>>(obj, iface::ACCESSIBLE, "GetInterfaces", &()),
            )?;
            let has = Ifaces::from_names(ifaces).has(Ifaces::TEXT);
            (name, states, has, head(has).await?)
        }
    };
    Ok(Said {
        name,
        states: RawStates::from_words(&states),
        text,
        text_length,
        has_text,
    })
}

/// Whether the cells of each column implement `Text`, learnt from the first cell
/// of the column read: a grid's column holds one kind of cell (all of a
/// LibreOffice sheet's are text, a GTK tree view's toggle column has none), so the
/// other cells of the column skip `GetInterfaces`.
type ColumnTexts = std::sync::Mutex<std::collections::HashMap<u64, bool>>;

async fn read_cell(
    bus: &Bus,
    table: &ObjRef,
    (row, col): (u64, u64),
    text_cap: usize,
    columns: &ColumnTexts,
) -> Result<Cell, CallError> {
    let (r, c) = (
        i32::try_from(row).unwrap_or(i32::MAX),
        i32::try_from(col).unwrap_or(i32::MAX),
    );
    let wire: (String, zbus::zvariant::OwnedObjectPath) = bus
        .call(table, iface::TABLE, "GetAccessibleAt", &(r, c))
        .await?;
    let obj = obj_from_wire(wire);
    let known = columns
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&col)
        .copied();
    let said = name_and_text(bus, &obj, text_cap, known).await?;
    if known.is_none() {
        columns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(col, said.has_text);
    }
    let Said {
        mut name,
        states,
        text,
        text_length,
        ..
    } = said;
    // A cell with neither name nor text may be a composite: its parts say what it
    // shows. (Only such a cell is asked for its children.)
    let children = if name.trim().is_empty() && text.trim().is_empty() {
        bus.prop::<i32>(&obj, iface::ACCESSIBLE, "ChildCount")
            .await?
    } else {
        0
    };
    if children > 0 {
        let mut said = Vec::new();
        for i in 0..children.min(CELL_PARTS) {
            let Ok(wire) = bus
                .call::<_, (String, zbus::zvariant::OwnedObjectPath)>(
                    &obj,
                    iface::ACCESSIBLE,
                    "GetChildAtIndex",
                    &(i,),
                )
                .await
            else {
                continue;
            };
            let part = obj_from_wire(wire);
            if let Ok(p) = name_and_text(bus, &part, text_cap, None).await {
                let shown = if p.name.trim().is_empty() {
                    p.text
                } else {
                    p.name
                };
                let shown = shown.trim();
                if !shown.is_empty() && !said.iter().any(|s: &String| s == shown) {
                    said.push(shown.to_owned());
                }
            }
        }
        name = said.join(" ");
    }
    // A sheet cell with no text may still hold a formula or a comment, which
    // LibreOffice gives only as attributes (`Formula`, `Note`).
    let description = if text.is_empty() && parse_a1(name.trim()) == Some((row, col)) {
        match bus
            .call::<_, std::collections::HashMap<String, String>>(
                &obj,
                iface::ACCESSIBLE,
                "GetAttributes",
                &(),
            )
            .await
        {
            Ok(attrs) => {
                let mut said = Vec::new();
                for (key, what) in [("formula", "formula"), ("note", "comment")] {
                    if let Some(v) = attrs
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(key))
                        .map(|(_, v)| v.trim())
                        .filter(|v| !v.is_empty())
                    {
                        said.push(format!("{what}: {v}"));
                    }
                }
                said.join("; ")
            }
            Err(e) if e.is_timeout() => return Err(e),
            Err(_) => String::new(),
        }
    } else {
        String::new()
    };
    Ok(Cell {
        obj,
        name,
        states,
        text,
        text_length,
        description,
    })
}

/// Reads one table's shape and visible cells into `parts` (cells become the table's
/// children). `bounds` are the table's screen extents.
/// How the cells of tables are read: calls in flight, characters of text per cell,
/// and whether a table that fits the budget is read whole (a search) rather than
/// by its visible range.
#[derive(Debug, Clone, Copy)]
pub struct CellReads {
    pub concurrency: usize,
    pub text_cap: usize,
    pub whole: bool,
}

/// What one table's read found, applied to the walk's [`Parts`] by
/// [`TableRead::apply`] once the other reads of the snapshot are over (the table
/// is read while the details of the rest of the window are).
#[derive(Debug)]
pub struct TableRead {
    table: ObjRef,
    /// `None` when the table's shape was unreadable: the table is left as walked.
    info: Option<TableInfo>,
    /// The cells read, in row-major order, with the text read of each.
    cells: Vec<(NodeInfo, Details)>,
}

impl TableRead {
    /// The number of cells read.
    pub fn cells(&self) -> u64 {
        self.cells.len() as u64
    }

    /// Puts the table's shape and its cells into `parts`, the cells as the
    /// table's children, and returns how many cells it added. A table that
    /// vanished meanwhile (it is in `parts.vanished`) is left out with its cells;
    /// an empty table gets its shape and keeps its children unread.
    pub fn apply(self, parts: &mut Parts) -> u64 {
        if parts.vanished.contains(&self.table) {
            return 0;
        }
        let Some(info) = self.info else {
            return 0;
        };
        let ranged = info.visible_rows.is_some();
        parts.details.entry(self.table.clone()).or_default().table = Some(info);
        if !ranged {
            return 0;
        }
        let added = self.cells.len() as u64;
        let mut kids = Vec::with_capacity(self.cells.len());
        for (node, details) in self.cells {
            kids.push(node.obj.clone());
            parts.details.insert(node.obj.clone(), details);
            parts.infos.insert(node.obj.clone(), node);
        }
        parts.kids.insert(self.table, kids);
        added
    }
}

async fn read_table(
    bus: &Bus,
    table: &ObjRef,
    bounds: Bounds,
    how: CellReads,
    max_cells: u64,
) -> Result<TableRead> {
    let CellReads {
        concurrency,
        text_cap,
        whole,
    } = how;
    let mut out = TableRead {
        table: table.clone(),
        info: None,
        cells: Vec::new(),
    };
    let dims: Result<(i32, i32), CallError> = futures_util::future::try_join(
        bus.prop(table, iface::TABLE, "NRows"),
        bus.prop(table, iface::TABLE, "NColumns"),
    )
    .await;
    let (rows, cols) = match dims {
        Ok((r, c)) => (u64::try_from(r).unwrap_or(0), u64::try_from(c).unwrap_or(0)),
        Err(e) if e.is_timeout() => return Err(e.to_driver()),
        Err(e) => {
            tracing::debug!(%table, error = %e, "table shape unreadable");
            return Ok(out);
        }
    };
    let (tl, br) = if bounds.is_empty() {
        (None, None)
    } else {
        // A column header sits at the top of a GTK tree view, and a last row may be
        // cut at the bottom: each corner is probed a few times further inwards
        // until the point is over a cell.
        // The two corners are probed together.
        let (left, right) = (bounds.x + 1, bounds.x + bounds.width - 2);
        let (top, bottom) = (bounds.y + 1, bounds.y + bounds.height - 2);
        futures_util::future::join(
            corner(bus, table, bounds, |dy| (left, top + dy)),
            corner(bus, table, bounds, |dy| (right, bottom - dy)),
        )
        .await
    };
    let mut info = TableInfo {
        rows,
        columns: cols,
        visible_rows: None,
        visible_columns: None,
        a1: false,
        read: None,
    };
    let Some(((r0, r1), (c0, c1))) = read_range(rows, cols, tl, br) else {
        out.info = Some(info);
        return Ok(out);
    };
    let (vr, vc) = visible_range(rows, cols, br, ((r0, r1), (c0, c1)));
    info.visible_rows = Some(vr);
    info.visible_columns = Some(vc);
    if (vr, vc) != ((r0, r1), (c0, c1)) {
        info.read = Some(((r0, r1), (c0, c1)));
    }
    // A search reads a table whole when it fits the read's budget; the cells out
    // of view come back without `SHOWING`, so they are known to be off screen.
    let in_view = |r: u64, c: u64| (vr.0..=vr.1).contains(&r) && (vc.0..=vc.1).contains(&c);
    let ((r0, r1), (c0, c1)) = if whole && rows.saturating_mul(cols) <= max_cells {
        // Every cell is read: more than is visible.
        info.read = None;
        ((0, rows - 1), (0, cols - 1))
    } else {
        ((r0, r1), (c0, c1))
    };

    let coords: Vec<(u64, u64)> = (r0..=r1)
        .flat_map(|r| (c0..=c1).map(move |c| (r, c)))
        .take(usize::try_from(max_cells).unwrap_or(usize::MAX))
        .collect();
    let columns = ColumnTexts::default();
    let columns = &columns;
    let cells: Vec<((u64, u64), Result<Cell, CallError>)> = stream::iter(coords)
        .map(|(r, c)| async move {
            (
                (r, c),
                read_cell(bus, table, (r, c), text_cap, columns).await,
            )
        })
        .buffered(concurrency.max(1))
        .collect()
        .await;
    for ((r, c), res) in cells {
        match res {
            Ok(mut cell) => {
                if !in_view(r, c) {
                    // Out of the visible range: off screen, whatever the toolkit
                    // says (GTK 3 marks every row of a tree view `SHOWING`).
                    cell.states.0 &= !(atspi::State::Showing as u64);
                }
                if (r, c) == (r0, c0) {
                    info.a1 = cell.name.trim() == a1_name(r0, c0);
                }
                out.cells.push((
                    NodeInfo {
                        obj: cell.obj,
                        parent: Some(table.clone()),
                        index: -1,
                        child_count: 0,
                        listed_children: None,
                        role: code::TABLE_CELL,
                        name: cell.name,
                        description: cell.description,
                        states: cell.states,
                        ifaces: Ifaces::TEXT,
                    },
                    Details {
                        text: Some(cell.text),
                        text_length: cell.text_length,
                        ..Details::default()
                    },
                ));
            }
            Err(e) if e.is_timeout() => return Err(e.to_driver()),
            Err(e) => tracing::debug!(%table, row = r, col = c, error = %e, "cell skipped"),
        }
    }
    out.info = Some(info);
    Ok(out)
}

/// The part of `b` inside `view` (both screen pixels); `b` itself when `view` is
/// unknown. A web page's table can be far taller than the window: probing its
/// bottom-right corner would ask for a point off screen.
pub fn clip_to(b: Bounds, view: Option<Bounds>) -> Bounds {
    let Some(v) = view.filter(|v| !v.is_empty()) else {
        return b;
    };
    let x0 = b.x.max(v.x);
    let y0 = b.y.max(v.y);
    let x1 = (i64::from(b.x) + i64::from(b.width)).min(i64::from(v.x) + i64::from(v.width));
    let y1 = (i64::from(b.y) + i64::from(b.height)).min(i64::from(v.y) + i64::from(v.height));
    let w = i32::try_from((x1 - i64::from(x0)).max(0)).unwrap_or(0);
    let h = i32::try_from((y1 - i64::from(y0)).max(0)).unwrap_or(0);
    Bounds::new(x0, y0, w, h)
}

/// The on-screen tables of a walk that must be read by visible range: those that
/// manage their descendants or report an unknown or absurd child count
/// ([`needs_table_read`]), and have not vanished.
pub fn tables_to_read(parts: &Parts, child_cap: u32) -> Vec<ObjRef> {
    parts
        .infos
        .values()
        .filter(|i| needs_table_read(i, child_cap) && !parts.vanished.contains(&i.obj))
        .map(|i| i.obj.clone())
        .collect()
}

/// Reads `tables` of `window` by visible range, reading at most `max_cells` cells in
/// all (the snapshot's remaining node budget), one table after the other. The
/// extents of the window and of every table are read first, together: the visible
/// range is probed inside the part of a table within the window. `how.whole` (a
/// search) reads every cell of a table that fits in `max_cells`. Needs nothing the
/// details read finds, so a snapshot runs it alongside that read and applies the
/// results after it ([`TableRead::apply`]). A table that is gone is left out.
///
/// Errors: `COMPUTER_NOT_RESPONDING` when a call times out.
pub async fn read_tables(
    bus: &Bus,
    tables: &[ObjRef],
    window: &ObjRef,
    how: CellReads,
    max_cells: u64,
) -> Result<Vec<TableRead>> {
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    let (viewport, extents) = futures_util::future::join(
        extents(bus, window),
        join_all(tables.iter().map(|t| extents(bus, t))),
    )
    .await;
    let viewport = match viewport {
        Ok(b) => Some(b),
        Err(e) if e.is_timeout() => return Err(e.to_driver()),
        Err(_) => None,
    };
    let mut reads = Vec::with_capacity(tables.len());
    let mut cells = 0;
    for (t, b) in tables.iter().zip(extents) {
        let b = match b {
            Ok(b) => b,
            Err(e) if e.is_timeout() => return Err(e.to_driver()),
            Err(e) if e.is_gone() => continue,
            // No `Component`: no corner to probe, the first rows and columns are read.
            Err(_) => Bounds::default(),
        };
        let left = max_cells.saturating_sub(cells);
        let read = read_table(bus, t, clip_to(b, viewport), how, left).await?;
        cells += read.cells();
        reads.push(read);
    }
    Ok(reads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(n: u32) -> (NodeInfo, Details) {
        let obj = ObjRef::new(":1.7", format!("/org/a11y/atspi/accessible/{n}"));
        (
            NodeInfo {
                obj,
                parent: Some(ObjRef::new(":1.7", "/org/a11y/atspi/accessible/2")),
                index: -1,
                child_count: 0,
                listed_children: None,
                role: code::TABLE_CELL,
                name: format!("A{n}"),
                description: String::new(),
                states: RawStates(atspi::State::Showing as u64),
                ifaces: Ifaces::TEXT,
            },
            Details {
                text: Some(format!("cell {n}")),
                ..Details::default()
            },
        )
    }

    fn shape(ranged: bool) -> TableInfo {
        TableInfo {
            rows: 2,
            columns: 1,
            visible_rows: ranged.then_some((0, 1)),
            visible_columns: ranged.then_some((0, 0)),
            a1: true,
            read: None,
        }
    }

    #[test]
    fn a_table_read_becomes_the_tables_children_only_where_it_still_stands() {
        let table = ObjRef::new(":1.7", "/org/a11y/atspi/accessible/2");
        let read = |info, cells| TableRead {
            table: table.clone(),
            info,
            cells,
        };

        // Read whole: its shape, its cells as children in order, with their text.
        let mut parts = Parts::default();
        let added = read(Some(shape(true)), vec![cell(10), cell(11)]).apply(&mut parts);
        assert_eq!(added, 2);
        assert_eq!(parts.details[&table].table, Some(shape(true)));
        let kids = &parts.kids[&table];
        assert_eq!(kids.len(), 2);
        assert_eq!(parts.infos[&kids[1]].name, "A11");
        assert_eq!(parts.details[&kids[0]].text.as_deref(), Some("cell 10"));

        // Vanished while the rest of the window was read: nothing of it is kept.
        let mut parts = Parts::default();
        parts.vanished.insert(table.clone());
        assert_eq!(read(Some(shape(true)), vec![cell(10)]).apply(&mut parts), 0);
        assert!(parts.details.is_empty() && parts.kids.is_empty() && parts.infos.is_empty());

        // Empty (no range): its shape, and its children left unread.
        let mut parts = Parts::default();
        assert_eq!(read(Some(shape(false)), Vec::new()).apply(&mut parts), 0);
        assert_eq!(parts.details[&table].table, Some(shape(false)));
        assert!(!parts.kids.contains_key(&table));

        // Shape unreadable: left as walked.
        let mut parts = Parts::default();
        assert_eq!(read(None, Vec::new()).apply(&mut parts), 0);
        assert!(parts.details.is_empty() && parts.kids.is_empty());

        // Every cell failed: an empty list of children, not "unread".
        let mut parts = Parts::default();
        assert_eq!(read(Some(shape(true)), Vec::new()).apply(&mut parts), 0);
        assert_eq!(parts.kids[&table], Vec::<ObjRef>::new());
    }

    #[test]
    fn a_tall_table_is_probed_inside_the_window() {
        let page_table = Bounds::new(10, 200, 600, 12_000);
        let window = Bounds::new(0, 0, 1280, 800);
        assert_eq!(
            clip_to(page_table, Some(window)),
            Bounds::new(10, 200, 600, 600)
        );
        assert_eq!(clip_to(page_table, None), page_table);
        assert!(clip_to(Bounds::new(0, 900, 10, 10), Some(window)).is_empty());
    }

    #[test]
    fn a1_names_round_trip() {
        assert_eq!(column_letters(0), "A");
        assert_eq!(column_letters(25), "Z");
        assert_eq!(column_letters(26), "AA");
        assert_eq!(column_letters(16_383), "XFD");
        assert_eq!(a1_name(1, 1), "B2");
        assert_eq!(a1_name(32, 14), "O33");
        for (r, c) in [(0, 0), (32, 14), (1_048_575, 16_383), (9, 701), (3, 702)] {
            assert_eq!(parse_a1(&a1_name(r, c)), Some((r, c)), "{r},{c}");
        }
        assert_eq!(parse_a1("Sheet1"), None);
        assert_eq!(parse_a1("A0"), None);
        assert_eq!(parse_a1("a1"), None);
        assert_eq!(parse_a1("12"), None);
    }

    #[test]
    fn read_range_clips_to_the_caps_and_the_table() {
        // LibreOffice at its default zoom on 1280×800: A1 to O33.
        assert_eq!(
            read_range(1_048_576, 16_384, Some((0, 0)), Some((32, 14))),
            Some(((0, 32), (0, 14)))
        );
        // Unknown bottom-right: the caps.
        assert_eq!(
            read_range(1_048_576, 16_384, Some((100, 3)), None),
            Some(((100, 139), (3, 18)))
        );
        // A wide view (A to Z) is read up to the column cap, and says so.
        let read = read_range(1_048_576, 16_384, Some((0, 0)), Some((49, 25))).unwrap();
        assert_eq!(read, ((0, 39), (0, 15)));
        assert_eq!(
            visible_range(1_048_576, 16_384, Some((49, 25)), read),
            ((0, 49), (0, 25))
        );
        // Within the caps the two agree; an unknown corner leaves the read range.
        let small = ((0, 32), (0, 14));
        assert_eq!(
            visible_range(1_048_576, 16_384, Some((32, 14)), small),
            small
        );
        assert_eq!(visible_range(1_048_576, 16_384, None, small), small);
        // A small table: its own size.
        assert_eq!(read_range(3, 2, None, None), Some(((0, 2), (0, 1))));
        assert_eq!(read_range(0, 5, None, None), None);
        // Only the bottom known (a list scrolled to its end): the rows up to it.
        assert_eq!(
            read_range(200, 1, None, Some((199, 0))),
            Some(((160, 199), (0, 0)))
        );
        // Corners swapped by a bad hit test never give an empty range.
        assert_eq!(
            read_range(10, 10, Some((5, 5)), Some((2, 2))),
            Some(((5, 5), (5, 5)))
        );
    }

    #[test]
    fn only_managing_tables_on_screen_are_read_by_range() {
        use atspi::State as S;
        let mut i = NodeInfo {
            obj: ObjRef::new(":1.9", "/org/a11y/atspi/accessible/1477"),
            parent: None,
            index: -1,
            child_count: -1,
            listed_children: None,
            role: code::TABLE,
            name: "Sheet Sheet1".into(),
            description: String::new(),
            states: RawStates(S::Showing as u64 | S::Visible as u64 | S::ManagesDescendants as u64),
            ifaces: Ifaces::TABLE,
        };
        assert!(needs_table_read(&i, 500));
        i.states = RawStates(S::Visible as u64 | S::ManagesDescendants as u64);
        assert!(!needs_table_read(&i, 500), "hidden sheet");
        i.states = RawStates(S::Showing as u64 | S::Visible as u64);
        i.child_count = 12;
        assert!(
            !needs_table_read(&i, 500),
            "small plain table reads its children"
        );
    }
}

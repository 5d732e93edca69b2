//! AT-SPI2 reading and semantic actions (docs/ARCHITECTURE.md §3, §5, §6).
//!
//! Owns everything the Linux driver does over the accessibility bus: connecting,
//! listing applications and windows, reading a window into a [`deskpilot_core::Node`]
//! tree, finding elements, acting through AT-SPI interfaces, settling on events and
//! event subscriptions. It makes no policy decision and never prints to stdout.
//!
//! Layout, one job per file:
//!
//! | file | job |
//! |---|---|
//! | `options` | where to connect, every bound (timeouts, caps) |
//! | `connection` | the bus, timed calls, error classification, event registration |
//! | `handle` | `"<bus>|<path>"` handles |
//! | `role_map`, `state_map` | the one role table, the one state mapping |
//! | `info` | the per-object record |
//! | `cache` | one `Cache.GetItems` per application |
//! | `walk` | which children to take from the cache, which to ask for |
//! | `details` | extents, text, values, actions of nodes that will be rendered |
//! | `table` | on-demand tables by visible range |
//! | `document` | documents built in view: what lies beyond, the whole text |
//! | `tree` | pure assembly into `Node` |
//! | `snapshot` | the order of a read, `WalkStats` |
//! | `apps` | applications, windows, `not_responding` |
//! | `find` | text search over read trees |
//! | `act` | op → semantic method, and its status |
//! | `settle`, `events` | quiet detection, subscriptions |
//! | `focus` | is the input target the focused top-level |
//! | `launch` | start a program, wait for its window |
//!
//! Rules every file keeps: every D-Bus call has a timeout (default 1,500 ms; the bulk
//! `GetItems` 5,000 ms); applications are queried concurrently, so a frozen one costs
//! one timeout, not one per call; the children of a `MANAGES_DESCENDANTS` container,
//! or of one reporting more children than the cap (500), are never requested.
//!
//! What was measured here (Debian 12, at-spi2-core 2.46, Xvfb, 2 cores):
//!
//! - at-spi2-atk only exports `org.a11y.atspi.Cache` after some client registered
//!   for an event; before that `GetItems` answers `UnknownMethod`. The connection
//!   registers its events first.
//! - mousepad: `GetItems` returns 322 objects in 4–6 ms; a whole snapshot (structure,
//!   then extents, text and actions of on-screen nodes) takes 12–22 ms. Most items
//!   carry index `-1`, so sibling order comes from `GetChildren` on the on-screen
//!   containers. Without the cache, the bounded walk reads the 93 on-screen objects in
//!   ~24 ms.
//! - LibreOffice Calc 7.4, empty sheet: `GetItems` returns 1,086 objects in 56–68 ms
//!   right after start (~1,850 in 78–134 ms once menus have been built), soffice stays
//!   responsive, and the reply does **not** include the grid's cells: the sheet
//!   (`table`, states `0xc24c1980`, bit 31 `MANAGES_DESCENDANTS`) reports child count
//!   `-1` and no cached children. So `GetItems` is safe for LibreOffice; asking the
//!   grid for its children is not. A whole snapshot, with the 33 × 12 visible cells,
//!   takes 245–380 ms. LibreOffice's cached parent pointers are unreliable (the
//!   frame's 12 children name other, uncached parents), which is why the structure of
//!   on-screen nodes is confirmed with `GetChildren`.
//! - GTK 4.8 (gnome-calculator 43): the cache holds only the ~11 objects already
//!   handed out, and `SHOWING` is set on windows only; the walk reads the rest (99
//!   objects, ~60 ms) and treats `VISIBLE` as on screen for such toolkits.
//! - A frozen (`SIGSTOP`) app: `apps.list` answers in 1.5 s (one call timeout) with
//!   that app `not_responding`, named from `/proc`; its snapshot fails with
//!   `COMPUTER_NOT_RESPONDING` after the bulk timeout.
//! - Chromium 156 (`--force-renderer-accessibility`, as the sandbox starts it): the
//!   window is listed ~0.5–1 s after launch and the page's document ~1–1.7 s after
//!   (2.7 s with both cores busy). A small page's window (browser chrome included)
//!   is ~246 objects, read in 35–50 ms. Every element has `Action`, with no
//!   localised names (`GetActions` gives empty strings; `GetName` gives `press`,
//!   `jump`, `activate`, `doDefault`, `showContextMenu`, …), and text runs are
//!   `static` children repeating their block's text: see `details::action_names`
//!   and the rules in `tree`. Text inputs have `Text` but no `EditableText`, so
//!   `set_value` goes through the keyboard fallback. Popup surfaces that are not
//!   open are listed as showing top-levels with index in parent `-1` (`apps`).
//! - LibreOffice cells have `Text` and `Value` but no `EditableText`; setting
//!   `Value.CurrentValue` on a cell writes the number (the cell then reads `42`).
//!   Cells' `TableCell` interface is absent; the visible range comes from
//!   `GetAccessibleAtPoint` at the grid's inner corners and `GetRowAtIndex` /
//!   `GetColumnAtIndex` of their index in parent (A1 to O33 at 1280×800).

pub(crate) mod act;
pub(crate) mod apps;
pub(crate) mod cache;
pub(crate) mod connection;
pub(crate) mod details;
pub(crate) mod document;
pub(crate) mod events;
pub(crate) mod find;
pub(crate) mod focus;
pub(crate) mod frozen;
pub(crate) mod handle;
pub(crate) mod info;
pub(crate) mod launch;
pub(crate) mod options;
pub(crate) mod role_map;
pub(crate) mod settle;
pub(crate) mod snapshot;
pub(crate) mod state_map;
pub(crate) mod table;
pub(crate) mod tree;
pub(crate) mod typing;
pub(crate) mod walk;

pub(crate) use connection::Bus;
pub(crate) use handle::ObjRef;
pub use options::{Confinement, ConnectOptions};
pub use table::{MAX_COLUMNS, MAX_ROWS};

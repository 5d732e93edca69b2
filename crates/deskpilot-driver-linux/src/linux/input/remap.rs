//! Borrowing spare keycodes: installs a keysym on an unused keycode for the duration
//! of one input call and restores the original row afterwards.
//!
//! Owns `ChangeKeyboardMapping`. It must never leave a borrowed keycode mapped: the
//! [`Borrowed`] guard restores every original row on drop (error or panic included).
//!
//! Why there are waits: a mapping change reaches each X client as a `MappingNotify`
//! queued before the key events that follow it, but clients refresh their copy of
//! the map lazily (Xlib on the next lookup, GDK and Qt when their XKB notify arrives)
//! and translate a key event with whatever copy they hold when they read it. So a
//! short pause after installing lets clients refresh before the first borrowed key,
//! and a longer hold before restoring (or re-borrowing a keycode for another
//! character) lets a client that is slower to read its queue still see the borrowed
//! keysym instead of `NoSymbol`. Both are bounded constants, paid once per batch of
//! borrowed keys (normally once per call), never per character.

use std::path::PathBuf;
use std::time::Duration;

use deskpilot_protocol::ComputerError;
use serde::{Deserialize, Serialize};
use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use super::keymap::Keymap;
use super::keysym::Keysym;
use super::plan::Borrow;
use super::{X11Context, sync_conn};
use deskpilot_protocol::Result;

/// Pause after installing borrowed keysyms, before the first borrowed key, ms.
/// GTK 3 under Xvfb typed correctly even without it (the `MappingNotify` precedes the
/// keys in its queue); it is a small margin for toolkits that refresh their map
/// asynchronously.
pub const MAPPING_SETTLE_MS: u64 = 20;

/// Hold after the last borrowed key before its keycode is restored or re-borrowed,
/// ms. Measured with `zenity --entry` (GTK 3) under Xvfb typing 300 distinct CJK
/// characters through 19 spare keycodes: with no hold, characters typed before a
/// re-borrow came out as other characters or were lost; 10 ms was enough on an idle
/// machine. 100 ms leaves a tenfold margin for a loaded one, paid once per batch.
pub const BORROW_HOLD_MS: u64 = 100;

/// Keycodes borrowed during one call, with their original rows.
pub(crate) struct Borrowed<'c> {
    conn: &'c RustConnection,
    per_keycode: u8,
    /// `(keycode, original row)` in the order first borrowed.
    originals: Vec<(u8, Vec<Keysym>)>,
    /// Where the borrow is recorded while it lasts ([`Record`]), and for which
    /// display.
    record: PathBuf,
    display: String,
    /// `(keycode, borrowed row)` as last installed.
    installed: Vec<(u8, Vec<Keysym>)>,
}

/// A borrow in progress, written to `keymap-<display>.json` in the runtime
/// directory before any keycode changes and removed once every row is back, so that
/// a process killed mid-call (SIGKILL runs no guard) leaves a record the next
/// deskpilot call on that display uses to restore the map ([`restore_left`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The process that borrowed, and its start time (`/proc/PID/stat` field 22): a
    /// record whose process still runs is a call in progress and is left alone.
    pub pid: u32,
    pub start: Option<u64>,
    pub display: String,
    /// `(keycode, original row)`.
    pub originals: Vec<(u8, Vec<Keysym>)>,
    /// `(keycode, borrowed row)`: a keycode is restored only while it still holds
    /// what deskpilot put there.
    pub installed: Vec<(u8, Vec<Keysym>)>,
}

/// The record file of display `display` (`":91"` → `keymap-91.json`).
pub fn record_path(display: &str) -> PathBuf {
    let tag: String = display
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let tag = tag.trim_start_matches('_');
    deskpilot_os::runtime_dir().join(format!("keymap-{tag}.json"))
}

/// The most bytes read of a record: 64 KiB (a borrow uses at most 255 keycodes).
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// The record of display `display`, read only from a private runtime directory as
/// a regular file that is not a symlink; anything else is no record.
pub fn read_record(display: &str) -> Option<Record> {
    use std::io::Read as _;
    if !deskpilot_os::is_private_dir(&deskpilot_os::runtime_dir()).unwrap_or(false) {
        return None;
    }
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    deskpilot_os::no_follow_nonblocking(&mut o);
    let f = o.open(record_path(display)).ok()?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(MAX_RECORD_BYTES).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// True while the process that wrote `r` still runs (same pid and start time).
pub fn record_in_use(r: &Record) -> bool {
    deskpilot_os::pid_alive(r.pid) && deskpilot_os::process_start(r.pid) == r.start
}

/// Restores what a killed deskpilot process left borrowed on display `display`:
/// each recorded keycode that still holds the borrowed row, and whose original row
/// was empty (a spare keycode), is emptied again, and the record is removed. Returns the keycodes restored (empty when there
/// was no record, or its process still runs).
///
/// Errors: the X server refused the change (the record is kept).
pub(crate) fn restore_left(
    conn: &RustConnection,
    keymap: &Keymap,
    display: &str,
) -> Result<Vec<u8>> {
    let Some(r) = read_record(display) else {
        return Ok(Vec::new());
    };
    if record_in_use(&r) {
        return Ok(Vec::new());
    }
    let per = keymap.per_keycode();
    let rows: Vec<(u8, Vec<Keysym>)> = if r.display != display {
        Vec::new()
    } else {
        r.originals
            .iter()
            // Only spare keycodes are ever borrowed (no keysym of their own, a whole
            // row of NoSymbol), and a keycode is put back only while it holds exactly
            // the row deskpilot installed: a record naming anything else (planted,
            // stale, malformed) changes nothing.
            .filter(|(k, original)| {
                original.len() == per
                    && original.iter().all(|k| *k == 0)
                    && keymap.row(*k).len() == per
            })
            .filter(|(k, _)| {
                // The server rewrites a row it is given (XKB repeats the keysym
                // across its groups), so the base and shifted keysyms decide.
                r.installed.iter().any(|(ik, row)| {
                    ik == k
                        && row.len() == per
                        && row.len() >= 2
                        && row[0] != 0
                        && keymap.row(*k).get(..2) == row.get(..2)
                })
            })
            .cloned()
            .collect()
    };
    let guard = Borrowed::new(conn, keymap, display);
    if !rows.is_empty() {
        guard.change(&rows)?;
        sync_conn(conn)?;
    }
    let _ = std::fs::remove_file(&guard.record);
    let keycodes: Vec<u8> = rows.iter().map(|(k, _)| *k).collect();
    tracing::warn!(
        ?keycodes,
        pid = r.pid,
        "restored keycodes a killed deskpilot call left borrowed"
    );
    Ok(keycodes)
}

impl<'c> Borrowed<'c> {
    pub(crate) fn new(conn: &'c RustConnection, keymap: &Keymap, display: &str) -> Self {
        Borrowed {
            conn,
            per_keycode: u8::try_from(keymap.per_keycode()).unwrap_or(u8::MAX),
            originals: Vec::new(),
            record: record_path(display),
            display: display.to_owned(),
            installed: Vec::new(),
        }
    }

    /// Writes the record of the borrow about to be installed. Errors: it could not
    /// be written — nothing is borrowed then, since a crash would leave the map
    /// changed with no way back.
    fn write_record(&self, display_rows: &[(u8, Vec<Keysym>)]) -> Result<()> {
        let mut installed = self.installed.clone();
        for (k, row) in display_rows {
            installed.retain(|(ik, _)| ik != k);
            installed.push((*k, row.clone()));
        }
        let pid = std::process::id();
        let r = Record {
            pid,
            start: deskpilot_os::process_start(pid),
            display: self.display.clone(),
            originals: self.originals.clone(),
            installed,
        };
        let dir = deskpilot_os::runtime_dir();
        let bytes = serde_json::to_vec(&r).unwrap_or_default();
        deskpilot_os::ensure_private_dir(&dir)
            .and_then(|()| deskpilot_os::write_private_atomic(&self.record, &bytes))
            .map_err(|e| {
                ComputerError::new(
                    deskpilot_protocol::ErrorCode::InputUnavailable,
                    format!(
                        "cannot record the borrowed keycodes in {} ({e}), so no keycode is borrowed; characters the keymap lacks cannot be typed",
                        self.record.display()
                    ),
                )
            })
    }

    /// True while some keycode is borrowed.
    pub(crate) fn is_active(&self) -> bool {
        !self.originals.is_empty()
    }

    /// Installs each row of `borrow` on its spare keycode, remembering the original
    /// rows (from `keymap`, the map before this call), then syncs and waits
    /// [`MAPPING_SETTLE_MS`].
    pub(crate) fn install(&mut self, keymap: &Keymap, borrow: &[Borrow]) -> Result<()> {
        let mut rows: Vec<(u8, Vec<Keysym>)> = Vec::with_capacity(borrow.len());
        for b in borrow {
            if !self.originals.iter().any(|(k, _)| *k == b.keycode) {
                self.originals
                    .push((b.keycode, keymap.row(b.keycode).to_vec()));
            }
            rows.push((b.keycode, keymap.borrowed_row(b.lower, b.upper)));
        }
        self.write_record(&rows)?;
        for (k, row) in &rows {
            self.installed.retain(|(ik, _)| ik != k);
            self.installed.push((*k, row.clone()));
        }
        self.change(&rows)?;
        sync_conn(self.conn)?;
        std::thread::sleep(Duration::from_millis(MAPPING_SETTLE_MS));
        Ok(())
    }

    /// Puts every original row back.
    pub(crate) fn restore(&mut self) -> Result<()> {
        if self.originals.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.originals);
        if let Err(e) = self.change(&rows) {
            self.originals = rows;
            return Err(e);
        }
        sync_conn(self.conn)?;
        self.installed.clear();
        let _ = std::fs::remove_file(&self.record);
        Ok(())
    }

    /// One `ChangeKeyboardMapping` per run of consecutive keycodes, so clients get as
    /// few `MappingNotify` events as possible; each is checked.
    fn change(&self, rows: &[(u8, Vec<Keysym>)]) -> Result<()> {
        let mut sorted: Vec<&(u8, Vec<Keysym>)> = rows.iter().collect();
        sorted.sort_by_key(|(k, _)| *k);
        for run in runs(&sorted) {
            let first = run[0].0;
            let keysyms: Vec<Keysym> = run
                .iter()
                .flat_map(|(_, row)| row.iter().copied())
                .collect();
            let count = u8::try_from(run.len()).unwrap_or(u8::MAX);
            self.conn
                .change_keyboard_mapping(count, first, self.per_keycode, &keysyms)
                .x11("ChangeKeyboardMapping")?
                .check()
                .x11("ChangeKeyboardMapping")?;
        }
        Ok(())
    }
}

/// Splits keycode-sorted rows into runs of consecutive keycodes.
fn runs<'a, T>(sorted: &'a [&'a (u8, T)]) -> Vec<&'a [&'a (u8, T)]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=sorted.len() {
        let breaks = i == sorted.len() || u16::from(sorted[i].0) != u16::from(sorted[i - 1].0) + 1;
        if breaks {
            out.push(&sorted[start..i]);
            start = i;
        }
    }
    out
}

impl Drop for Borrowed<'_> {
    fn drop(&mut self) {
        if self.originals.is_empty() {
            return;
        }
        tracing::warn!(
            keycodes = ?self.originals.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            "restoring borrowed keycodes after an interrupted input call"
        );
        if let Err(e) = self.restore() {
            tracing::error!(error = %e, "could not restore borrowed keycodes");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::XInput;
    use super::super::test_xvfb::Xvfb;
    use super::*;

    #[test]
    fn dropping_the_guard_restores_borrowed_rows() {
        let xvfb = Xvfb::start();
        let x = XInput::connect(Some(&xvfb.display)).unwrap();
        let before = x.keymap().unwrap();
        let spares = before.spare_keycodes();
        assert!(spares.len() >= 3, "Xvfb's map should have spare keycodes");
        // Two adjacent-or-not spares plus one more: exercises runs and gaps.
        let b = |keycode: u8, lower: Keysym, upper: Keysym| Borrow {
            keycode,
            lower,
            upper,
        };
        let borrow = [
            b(spares[0], 0x0100_4f60, 0x0100_4f60),
            b(spares[1], 0xe9, 0xc9),
            b(spares[2], 0x0100_597d, 0x0100_597d),
        ];
        {
            let mut guard = Borrowed::new(&x.conn, &before, &xvfb.display);
            guard.install(&before, &borrow).unwrap();
            assert!(guard.is_active());
            let during = x.keymap().unwrap();
            for b in &borrow {
                assert_eq!(&during.row(b.keycode)[..2], &[b.lower, b.upper], "{b:?}");
            }
            assert_eq!(
                during.find(0xe9),
                Some((spares[1], super::super::keymap::Level::Base))
            );
        }
        assert_eq!(x.keymap().unwrap(), before, "drop must restore every row");
    }

    #[test]
    fn restore_is_idempotent() {
        let xvfb = Xvfb::start();
        let x = XInput::connect(Some(&xvfb.display)).unwrap();
        let before = x.keymap().unwrap();
        let spare = before.spare_keycodes()[0];
        let mut guard = Borrowed::new(&x.conn, &before, &xvfb.display);
        guard
            .install(
                &before,
                &[Borrow {
                    keycode: spare,
                    lower: 0xe9,
                    upper: 0xc9,
                }],
            )
            .unwrap();
        guard.restore().unwrap();
        assert!(!guard.is_active());
        guard.restore().unwrap();
        drop(guard);
        assert_eq!(x.keymap().unwrap(), before);
    }

    #[test]
    fn runs_split_on_gaps() {
        let rows = [(8u8, ()), (9, ()), (11, ()), (12, ()), (13, ()), (20, ())];
        let refs: Vec<&(u8, ())> = rows.iter().collect();
        let got: Vec<Vec<u8>> = runs(&refs)
            .into_iter()
            .map(|r| r.iter().map(|(k, _)| *k).collect())
            .collect();
        assert_eq!(got, vec![vec![8, 9], vec![11, 12, 13], vec![20]]);
        let empty: Vec<&(u8, ())> = Vec::new();
        assert!(runs(&empty).is_empty());
        let one = [(255u8, ())];
        let one: Vec<&(u8, ())> = one.iter().collect();
        assert_eq!(runs(&one).len(), 1);
    }
}

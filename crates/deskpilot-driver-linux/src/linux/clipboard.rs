//! The X11 clipboard (the `CLIPBOARD` selection; docs/ARCHITECTURE.md §7.20), on a
//! connection of its own to a named display.
//!
//! [`read`] asks the selection's owner to convert it to `UTF8_STRING` (then
//! `STRING`, Latin-1) into a property of a private unmapped window, and takes the
//! property. An X selection lives only as long as its owner, so [`write`] starts a
//! holder: `deskpilot clipboard-hold` (this program, [`serve`] in it) takes the
//! selection, answers `TARGETS`, `UTF8_STRING`, `TEXT` and `STRING` requests, and
//! exits when another client takes the selection or the display closes — as
//! `xclip` does. The written text is then read back.
//!
//! [`targets`] asks an owner (of `CLIPBOARD` or `PRIMARY`) only for `TARGETS`, the
//! names of the formats it offers: a password manager marks a copied password
//! among them ([`deskpilot_protocol::types::PASSWORD_MARK_TARGETS`]). [`read`] asks
//! for them first and does not take the text of a marked selection.
//!
//! Texts are capped at [`CLIPBOARD_MAX_BYTES`]; incremental (`INCR`) transfers are
//! not done: a larger text is reported truncated.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use deskpilot_protocol::Result;
use deskpilot_protocol::types::{
    CLIPBOARD_MAX_BYTES, ClipboardContent, ClipboardTargets, ClipboardWritten, Selection,
    password_mark,
};
use deskpilot_protocol::{ComputerError, ErrorCode};
use x11rb::connection::Connection as _;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, PropMode,
    SELECTION_NOTIFY_EVENT, SelectionNotifyEvent, Window, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;
use x11rb::{CURRENT_TIME, NONE};

/// How long a clipboard owner may take to answer a conversion, ms.
pub const CONVERT_TIMEOUT_MS: u64 = 2_000;

/// The most targets taken from one `TARGETS` answer (owners offer a dozen or two).
pub const MAX_TARGETS: usize = 256;

/// The argument that makes the deskpilot binary a clipboard holder.
pub const HOLD_SUBCOMMAND: &str = "clipboard-hold";

fn err(display: &str, what: &str, e: impl std::fmt::Display) -> ComputerError {
    ComputerError::new(
        ErrorCode::InputUnavailable,
        format!("the clipboard of display {display}: {what}: {e}"),
    )
}

struct Clip {
    conn: RustConnection,
    win: Window,
    clipboard: Atom,
    utf8: Atom,
    targets: Atom,
    text: Atom,
    prop: Atom,
    incr: Atom,
}

impl Clip {
    fn open(display: &str) -> Result<Clip> {
        Clip::open_selection(display, Selection::Clipboard)
    }

    /// A connection asking about `selection` (its atom in `clipboard`).
    fn open_selection(display: &str, selection: Selection) -> Result<Clip> {
        let (conn, screen) =
            RustConnection::connect(Some(display)).map_err(|e| err(display, "connect", e))?;
        let root = conn.setup().roots[screen].root;
        let win = conn.generate_id().map_err(|e| err(display, "id", e))?;
        conn.create_window(
            0,
            win,
            root,
            -10,
            -10,
            1,
            1,
            0,
            WindowClass::INPUT_ONLY,
            0,
            &CreateWindowAux::new().event_mask(EventMask::PROPERTY_CHANGE),
        )
        .map_err(|e| err(display, "CreateWindow", e))?;
        let names = [
            match selection {
                Selection::Clipboard => "CLIPBOARD",
                Selection::Primary => "PRIMARY",
            },
            "UTF8_STRING",
            "TARGETS",
            "TEXT",
            "DESKPILOT_CLIPBOARD",
            "INCR",
        ];
        let cookies = names
            .iter()
            .map(|n| conn.intern_atom(false, n.as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| err(display, "InternAtom", e))?;
        let mut atoms = Vec::new();
        for c in cookies {
            atoms.push(c.reply().map_err(|e| err(display, "InternAtom", e))?.atom);
        }
        Ok(Clip {
            conn,
            win,
            clipboard: atoms[0],
            utf8: atoms[1],
            targets: atoms[2],
            text: atoms[3],
            prop: atoms[4],
            incr: atoms[5],
        })
    }

    fn owner(&self, display: &str) -> Result<Window> {
        Ok(self
            .conn
            .get_selection_owner(self.clipboard)
            .map_err(|e| err(display, "GetSelectionOwner", e))?
            .reply()
            .map_err(|e| err(display, "GetSelectionOwner", e))?
            .owner)
    }

    /// The names of the targets the owner offers (at most [`MAX_TARGETS`]); empty
    /// when it does not answer `TARGETS`.
    fn offered(&self, display: &str) -> Result<Vec<String>> {
        let Some(reply) = self.convert_reply(display, self.targets)? else {
            return Ok(Vec::new());
        };
        let atoms: Vec<Atom> = match reply.value32() {
            Some(v) => v.take(MAX_TARGETS).collect(),
            None => return Ok(Vec::new()),
        };
        let cookies = atoms
            .iter()
            .map(|a| self.conn.get_atom_name(*a))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| err(display, "GetAtomName", e))?;
        let mut names = Vec::with_capacity(cookies.len());
        for c in cookies {
            // An atom the server does not know names nothing.
            if let Ok(r) = c.reply() {
                names.push(String::from_utf8_lossy(&r.name).into_owned());
            }
        }
        Ok(names)
    }

    /// Asks for the selection as `target`; `None` when the owner refuses it.
    fn convert(&self, display: &str, target: Atom) -> Result<Option<(Vec<u8>, bool)>> {
        let Some(reply) = self.convert_reply(display, target)? else {
            return Ok(None);
        };
        if reply.type_ == self.incr {
            // The owner sends large texts in pieces; only the first is not taken.
            return Ok(Some((Vec::new(), true)));
        }
        Ok(Some((reply.value, reply.bytes_after > 0)))
    }

    /// Asks for the selection as `target` and takes the property the owner wrote;
    /// `None` when the owner refuses it.
    fn convert_reply(
        &self,
        display: &str,
        target: Atom,
    ) -> Result<Option<x11rb::protocol::xproto::GetPropertyReply>> {
        self.conn
            .convert_selection(self.win, self.clipboard, target, self.prop, CURRENT_TIME)
            .map_err(|e| err(display, "ConvertSelection", e))?;
        self.conn.flush().map_err(|e| err(display, "flush", e))?;
        let deadline = Instant::now() + Duration::from_millis(CONVERT_TIMEOUT_MS);
        loop {
            // Checked on every event, so a flood of others cannot stretch the wait.
            if Instant::now() >= deadline {
                return Err(ComputerError::new(
                    ErrorCode::NotResponding,
                    format!(
                        "the clipboard's owner on display {display} did not answer within {CONVERT_TIMEOUT_MS} ms; the app that copied may be frozen"
                    ),
                ));
            }
            match self
                .conn
                .poll_for_event()
                .map_err(|e| err(display, "event", e))?
            {
                Some(Event::SelectionNotify(n)) if n.requestor == self.win => {
                    if n.property == NONE {
                        return Ok(None);
                    }
                    break;
                }
                Some(_) => continue,
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        let max_words = u32::try_from(CLIPBOARD_MAX_BYTES / 4 + 1).unwrap_or(u32::MAX);
        let reply = self
            .conn
            .get_property(true, self.win, self.prop, AtomEnum::ANY, 0, max_words)
            .map_err(|e| err(display, "GetProperty", e))?
            .reply()
            .map_err(|e| err(display, "GetProperty", e))?;
        Ok(Some(reply))
    }
}

/// What the owner of `selection` on `display` offers, never its content.
///
/// Errors: `COMPUTER_INPUT_UNAVAILABLE` (the display cannot be reached),
/// `COMPUTER_NOT_RESPONDING` (the owner did not answer within
/// [`CONVERT_TIMEOUT_MS`]).
pub fn targets(display: &str, selection: Selection) -> Result<ClipboardTargets> {
    let c = Clip::open_selection(display, selection)?;
    if c.owner(display)? == NONE {
        return Ok(ClipboardTargets::default());
    }
    Ok(ClipboardTargets {
        owned: true,
        targets: c.offered(display)?,
    })
}

/// Cuts `s` to at most `max` bytes at a character boundary; whether it cut.
fn cap(mut s: String, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.truncate(at);
    (s, true)
}

/// The clipboard's text on `display` (`":91"`), with the targets its owner offered.
/// A clipboard marked as holding a password (a target of
/// [`deskpilot_protocol::types::PASSWORD_MARK_TARGETS`]) is not read: its text is
/// `None` and its targets say why.
///
/// Errors: `COMPUTER_INPUT_UNAVAILABLE` (the display cannot be reached, or another
/// app copied while it was read: read again), `COMPUTER_NOT_RESPONDING` (the owner
/// did not answer within [`CONVERT_TIMEOUT_MS`]).
pub fn read(display: &str) -> Result<ClipboardContent> {
    let c = Clip::open(display)?;
    let owner = c.owner(display)?;
    if owner == NONE {
        return Ok(ClipboardContent::default());
    }
    let targets = c.offered(display)?;
    if password_mark(&targets).is_some() {
        return Ok(ClipboardContent {
            text: None,
            truncated: false,
            targets,
        });
    }
    let mut content = read_text(&c, display)?;
    // The targets judged are the text's: another owner (a password manager that
    // copied meanwhile) could have answered the conversion.
    if c.owner(display)? != owner {
        return Err(err(
            display,
            "read",
            "another app copied while the clipboard was read; read it again",
        ));
    }
    content.targets = targets;
    Ok(content)
}

/// The text of the selection `c` asks about: `UTF8_STRING`, then `STRING`.
fn read_text(c: &Clip, display: &str) -> Result<ClipboardContent> {
    if let Some((bytes, more)) = c.convert(display, c.utf8)? {
        if bytes.is_empty() && more {
            // Offered only in pieces (INCR): too large to read here.
            return Ok(ClipboardContent {
                text: None,
                truncated: true,
                targets: Vec::new(),
            });
        }
        let (text, cut) = cap(
            String::from_utf8_lossy(&bytes).into_owned(),
            CLIPBOARD_MAX_BYTES,
        );
        return Ok(ClipboardContent {
            text: Some(text),
            truncated: more || cut,
            targets: Vec::new(),
        });
    }
    if let Some((bytes, more)) = c.convert(display, AtomEnum::STRING.into())? {
        // STRING is Latin-1: each byte is the code point.
        let text: String = bytes.iter().map(|&b| char::from(b)).collect();
        let (text, cut) = cap(text, CLIPBOARD_MAX_BYTES);
        return Ok(ClipboardContent {
            text: Some(text),
            truncated: more || cut,
            targets: Vec::new(),
        });
    }
    Ok(ClipboardContent::default())
}

/// Holds the clipboard of `display` with `text` until another client takes it or
/// the display closes. `ready` is called once the selection is owned.
///
/// Errors: the display cannot be reached, or another client kept the selection.
pub fn serve(display: &str, text: &str, ready: impl FnOnce()) -> Result<()> {
    let c = Clip::open(display)?;
    c.conn
        .set_selection_owner(c.win, c.clipboard, CURRENT_TIME)
        .map_err(|e| err(display, "SetSelectionOwner", e))?;
    if c.owner(display)? != c.win {
        return Err(err(display, "SetSelectionOwner", "another client kept it"));
    }
    ready();
    let latin1: Option<Vec<u8>> = text
        .chars()
        .map(|ch| u8::try_from(u32::from(ch)).ok())
        .collect();
    loop {
        let ev = match c.conn.wait_for_event() {
            Ok(ev) => ev,
            // The display closed: nobody can paste any more.
            Err(_) => return Ok(()),
        };
        match ev {
            Event::SelectionClear(e) if e.selection == c.clipboard => return Ok(()),
            Event::SelectionRequest(req) => {
                let property = if req.property == NONE {
                    req.target
                } else {
                    req.property
                };
                let done = if req.target == c.targets {
                    let offered = [c.targets, c.utf8, c.text, AtomEnum::STRING.into()];
                    c.conn
                        .change_property32(
                            PropMode::REPLACE,
                            req.requestor,
                            property,
                            AtomEnum::ATOM,
                            &offered,
                        )
                        .is_ok()
                } else if req.target == c.utf8 || req.target == c.text {
                    c.conn
                        .change_property8(
                            PropMode::REPLACE,
                            req.requestor,
                            property,
                            c.utf8,
                            text.as_bytes(),
                        )
                        .is_ok()
                } else if req.target == u32::from(AtomEnum::STRING) {
                    match &latin1 {
                        Some(bytes) => c
                            .conn
                            .change_property8(
                                PropMode::REPLACE,
                                req.requestor,
                                property,
                                AtomEnum::STRING,
                                bytes,
                            )
                            .is_ok(),
                        None => false,
                    }
                } else {
                    false
                };
                let notify = SelectionNotifyEvent {
                    response_type: SELECTION_NOTIFY_EVENT,
                    sequence: 0,
                    time: req.time,
                    requestor: req.requestor,
                    selection: req.selection,
                    target: req.target,
                    property: if done { property } else { NONE },
                };
                let _ = c
                    .conn
                    .send_event(false, req.requestor, EventMask::NO_EVENT, notify);
                let _ = c.conn.flush();
            }
            _ => {}
        }
    }
}

/// Puts `text` on the clipboard of `display`: starts `holder` (the deskpilot
/// binary) as `holder clipboard-hold DISPLAY` in a process group of its own, hands
/// it the text on stdin, waits (≤ 5 s) for its `ready` line, then reads the
/// clipboard back.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for a text over [`CLIPBOARD_MAX_BYTES`] or
/// with a NUL; `COMPUTER_INPUT_UNAVAILABLE` when the holder cannot start or take
/// the selection.
pub fn write(display: &str, text: &str, holder: &std::path::Path) -> Result<ClipboardWritten> {
    if text.contains('\0') {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            "the text holds a NUL character, which no app pastes; remove it",
        ));
    }
    if text.len() > CLIPBOARD_MAX_BYTES {
        return Err(ComputerError::new(
            ErrorCode::InvalidArgument,
            format!(
                "the text is {} bytes; the clipboard takes at most {CLIPBOARD_MAX_BYTES}",
                text.len()
            ),
        ));
    }
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new(holder)
        .arg(HOLD_SUBCOMMAND)
        .arg(display)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Nothing of the caller's: the holder outlives it, and an inherited pipe
        // would keep whoever reads the caller's output waiting. Its own pipe says
        // why it failed, and is closed once it holds the selection.
        .stderr(Stdio::piped())
        .current_dir("/")
        .process_group(0)
        .spawn()
        .map_err(|e| err(display, &format!("start {}", holder.display()), e))?;
    let pid = child.id();
    {
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| err(display, "holder", "no stdin"))?;
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| err(display, "holder stdin", e))?;
    }
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| err(display, "holder", "no stdout"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    if line.trim() != "ready" {
        // A holder late to take the selection must not take it after the call
        // failed.
        let _ = child.kill();
        let _ = child.wait();
        let mut said = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut said);
        }
        let said = said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(" ({})", deskpilot_core::sanitize::one_line(l.trim())))
            .unwrap_or_default();
        return Err(err(
            display,
            "holder",
            format!(
                "pid {pid} did not take the selection within 5 s{said}; check that the display answers (`deskpilot doctor`) and that the config's `clipboard` switch is on"
            ),
        ));
    }
    drop(child.stderr.take());
    // Reap the holder whenever it ends, so a long-lived host keeps no zombie.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    let back = read(display)?;
    Ok(ClipboardWritten {
        verified: back.text.as_deref() == Some(text),
        bytes: text.len(),
        holder: format!("a deskpilot clipboard holder, pid {pid}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_cut_at_a_character_boundary() {
        assert_eq!(cap("abc".into(), 3), ("abc".into(), false));
        assert_eq!(cap("abcd".into(), 3), ("abc".into(), true));
        // "é" is two bytes: a cut inside it backs off to before it.
        assert_eq!(cap("aé".into(), 2), ("a".into(), true));
    }
}

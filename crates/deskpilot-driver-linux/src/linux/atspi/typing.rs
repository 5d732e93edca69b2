//! Typed text that is verified: paced by what the application has taken, and read
//! back from the element it went into (docs/ARCHITECTURE.md §6 "Fallback input").
//!
//! Owns finding the focused text element of a window ([`focused_text`]), the pace
//! that holds a borrowed keycode until the application has taken the characters
//! typed with it ([`Watch::wait_for`]), and the read-back ([`Watch::verify`]). It
//! sends no input itself: the keyboard module types, this module watches.
//!
//! Why: an application reads its key events later than they are sent, and
//! translates each with the keymap it holds when it reads it. A spare keycode that
//! gets the next character while earlier events for it are still queued is read as
//! the new character, and a call that returns at once says `ok` for text that is
//! still arriving (seen with Chromium under load: 1,265 of 2,032 characters there
//! when the call returned). Watching the element's character count solves both.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use deskpilot_protocol::{ComputerError, ErrorCode};

use deskpilot_core::Node;
use deskpilot_protocol::types::SnapshotParams;

use super::connection::{Bus, iface};
use super::handle::ObjRef;
use super::info::Ifaces;
use super::options::ConnectOptions;
use super::snapshot::snapshot;
use super::state_map::RawStates;
use deskpilot_protocol::Result;

/// Longest wait for the application to take one more character before typing stops:
/// 5 s (Chromium under load took up to a second per step of 48 here).
pub const STALL: Duration = Duration::from_secs(5);
/// The longest one wait may take however the count moves: 20 s (a step is at
/// most 48 characters; Chromium under load took about a second for one).
const WAIT_CEILING: Duration = Duration::from_secs(20);
/// Look-ups of a new focused element in one wait: at most 3.
const MAX_RELOOKS: u32 = 3;
/// AT-SPI role `password text`.
const PASSWORD_TEXT: u32 = 40;
/// Interval between character-count reads while waiting: 15 ms.
const POLL: Duration = Duration::from_millis(15);
/// Characters shown around the first difference in a failed read-back: 24.
const CONTEXT: usize = 24;

/// AT-SPI role `terminal` (`ATSPI_ROLE_TERMINAL`).
const TERMINAL: u32 = 60;

/// The focused element of `window` that takes typed text: a read of the window as
/// `observe` reads it (bounded, never enumerating containers that manage their
/// descendants — `Collection.GetMatches` would, and freezes LibreOffice), then the
/// last focused element that is editable and exposes `Text`, unless it is a
/// terminal (whose text is its screen, where a prompt's line wraps and scrolls).
/// Returns it with its AT-SPI role code; `None` when there is none or the read fails.
pub async fn focused_text(
    bus: &Bus,
    opts: &ConnectOptions,
    window: &ObjRef,
) -> Option<(ObjRef, u32)> {
    use deskpilot_core::State;
    let snap = snapshot(bus, opts, &SnapshotParams::whole(window.to_handle()))
        .await
        .ok()?;
    // The last focused editable element in tree order: LibreOffice keeps its sheet
    // and cell focused while a cell is edited in a paragraph that comes after them,
    // and Chromium marks the document focused as well as the field in it.
    let f = snap
        .root
        .walk()
        .filter(|n: &&Node| n.has(State::Focused) && n.has(State::Editable))
        .last()?;
    let obj = ObjRef::from_handle(&f.handle).ok()?;
    let ifaces: Vec<String> = bus
        .call(&obj, iface::ACCESSIBLE, "GetInterfaces", &())
        .await
        .ok()?;
    let role: u32 = bus
        .call(&obj, iface::ACCESSIBLE, "GetRole", &())
        .await
        .ok()?;
    (Ifaces::from_names(&ifaces).has(Ifaces::TEXT) && role != TERMINAL).then_some((obj, role))
}

/// How long the character count may stand still before the focused element is
/// looked up again: 500 ms. Chromium may replace a text field's accessible object
/// while text arrives, leaving the old one reporting its old count.
const RELOOK: Duration = Duration::from_millis(500);

/// The longest text [`Watch`] keeps whole from before typing: 1,024 characters (a
/// display or an entry; a document is not replaced by a keystroke).
const OLD_TEXT_MAX: i32 = 1_024;

/// One text element watched while text is typed into it.
pub struct Watch {
    /// The window, to look the focused element up again, and how to read it.
    window: ObjRef,
    opts: ConnectOptions,
    obj: std::sync::Mutex<ObjRef>,
    /// Characters before typing.
    base: AtomicI32,
    /// Where the typed text starts (the caret before typing), in characters.
    start: AtomicI32,
    /// The character count when watching began (-1 once the element was replaced).
    initial: AtomicI32,
    /// The element's text from where the typed text starts, as long as the text to
    /// type, before typing: text that now differs from it (and is what was typed)
    /// has arrived even when the count did not move (a value typed over one as long).
    before: String,
    /// The element's whole text before typing, when it held at most
    /// [`OLD_TEXT_MAX`] characters: an app that replaces all of it with what is
    /// typed (a calculator's display after a result takes the first key as a new
    /// entry) is told from one that ignored the keys by it.
    old: Option<String>,
    /// A selection, which typing replaces, was there before typing.
    had_selection: bool,
    /// The whole text was selected before typing: the element must end up holding
    /// the typed text and nothing else.
    whole: bool,
    /// Set when the caller gave up on the call (an MCP request cancelled): the next
    /// wait fails, which stops the typing.
    pub cancelled: std::sync::atomic::AtomicBool,
}

impl Watch {
    /// Starts watching `obj`, into which `text` is about to be typed: its character
    /// count, caret and the text where typing starts now (a selection, which typing
    /// replaces, counts as gone and as where the text starts). `None` when they
    /// cannot be read (then nothing is verified, and the result says so).
    pub async fn start(
        bus: &Bus,
        opts: &ConnectOptions,
        window: ObjRef,
        obj: ObjRef,
        text: &str,
    ) -> Option<Watch> {
        let count: i32 = bus.prop(&obj, iface::TEXT, "CharacterCount").await.ok()?;
        let caret: i32 = bus.prop(&obj, iface::TEXT, "CaretOffset").await.ok()?;
        // Typing replaces a selection: the text then starts where it starts and
        // the selected characters are gone.
        let selected = match bus
            .call::<_, i32>(&obj, iface::TEXT, "GetNSelections", &())
            .await
        {
            Ok(n) if n > 0 => bus
                .call::<_, (i32, i32)>(&obj, iface::TEXT, "GetSelection", &(0i32,))
                .await
                .ok()
                .filter(|(a, b)| 0 <= *a && a < b && *b <= count),
            _ => None,
        };
        let (base, start) = match selected {
            Some((a, b)) => (count - (b - a), a),
            None if (0..=count).contains(&caret) => (count, caret),
            None => (count, count),
        };
        let n = i32::try_from(text.chars().count()).unwrap_or(i32::MAX);
        let before: String = bus
            .call(
                &obj,
                iface::TEXT,
                "GetText",
                &(start, start.saturating_add(n)),
            )
            .await
            .ok()?;
        let old = if count <= OLD_TEXT_MAX {
            bus.call(&obj, iface::TEXT, "GetText", &(0i32, count))
                .await
                .ok()
        } else {
            None
        };
        Some(Watch {
            before,
            old,
            had_selection: selected.is_some(),
            whole: selected == Some((0, count)) && count > 0,
            window,
            opts: opts.clone(),
            obj: std::sync::Mutex::new(obj),
            base: AtomicI32::new(base.max(0)),
            start: AtomicI32::new(start),
            initial: AtomicI32::new(count),
            cancelled: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn obj(&self) -> ObjRef {
        self.obj.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until the element holds at least `typed` more characters than before
    /// (the first `typed` characters of `text`, which is what is being typed), while
    /// it keeps taking them: once the count stands still for [`RELOOK`], the text
    /// itself is compared (a count can run ahead of it), and the element looked up
    /// again; each wait ends [`STALL`] after the count last grew.
    ///
    /// Errors: `COMPUTER_OUTCOME_UNKNOWN` when the count stops growing short of it
    /// (saying how many arrived; an application too busy to answer counts as not
    /// growing).
    pub async fn wait_for(&self, bus: &Bus, typed: usize, text: &str) -> Result<()> {
        let n = i32::try_from(typed).unwrap_or(i32::MAX);
        let base = || self.base.load(Ordering::Relaxed);
        let mut want = base().saturating_add(n);
        let prefix: String = text.chars().take(typed).collect();
        let began = Instant::now();
        // The highest count seen: only growth past it is progress (a count that
        // goes up and down is not).
        let mut best = i32::MIN;
        let mut grew = Instant::now();
        let mut relooks = 0u32;
        let mut relooked = false;
        // Focus that left the field is looked for at once (a password field that
        // took it stops the typing); typing waits here, so at most one step of
        // characters went elsewhere.
        let mut focus_left = !self.focused(bus).await;
        loop {
            if self.cancelled.load(Ordering::Relaxed) {
                return Err(ComputerError::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "the call was cancelled after {typed} characters were typed; observe before typing the rest"
                    ),
                ));
            }
            let now: i32 = match bus.prop(&self.obj(), iface::TEXT, "CharacterCount").await {
                Ok(c) => c,
                // The object went away: the next look-up finds its successor. A busy
                // application that does not answer in time counts as no progress.
                Err(e) if e.is_gone() || e.is_timeout() => best,
                Err(e) => return Err(e.to_driver()),
            };
            // The text changed since typing began: a count that was already high
            // enough (a selection about to be replaced) proves nothing by itself.
            let moved = now != self.initial.load(Ordering::Relaxed);
            if now >= want && (moved || typed == 0) {
                return Ok(());
            }
            // The count is where it was (a value typed over one as long): the text
            // itself says whether it arrived.
            if now >= want && self.replaced(bus, &prefix).await {
                return Ok(());
            }
            if now > best {
                best = now;
                grew = Instant::now();
                relooked = false;
            }
            let still = grew.elapsed();
            if !relooked && (still >= RELOOK || focus_left) && relooks < MAX_RELOOKS {
                relooked = true;
                focus_left = false;
                relooks += 1;
                // A count is not always the text: Chromium counts an empty last
                // line of a text area, so after a line break it is one ahead. The
                // text itself decides, once the count has moved at all.
                if (moved && self.holds(bus, &prefix).await) || self.replaced(bus, &prefix).await {
                    self.base
                        .store(now.saturating_sub(n).max(0), Ordering::Relaxed);
                    return Ok(());
                }
                if self.took_over(bus, &prefix).await {
                    return Ok(());
                }
                match focused_text(bus, &self.opts, &self.window).await {
                    Some((_, PASSWORD_TEXT)) => {
                        return Err(ComputerError::new(
                            ErrorCode::SecureInput,
                            format!(
                                "focus moved to a password field while typing, after {typed} characters were sent; typing stopped there. Observe before typing the rest"
                            ),
                        ));
                    }
                    Some((o, _)) if o != self.obj() => {
                        // A successor holding at least the old text carries it on (a
                        // replaced object); a shorter one is a new editor that holds
                        // only what is typed (a spreadsheet cell being edited).
                        let count: i32 = bus
                            .prop(&o, iface::TEXT, "CharacterCount")
                            .await
                            .unwrap_or(0);
                        if count < base() {
                            self.base.store(0, Ordering::Relaxed);
                            self.start.store(0, Ordering::Relaxed);
                            want = n;
                        }
                        *self.obj.lock().unwrap_or_else(|e| e.into_inner()) = o;
                        self.initial.store(-1, Ordering::Relaxed);
                        best = i32::MIN;
                        continue;
                    }
                    _ => {}
                }
            }
            if still >= STALL || began.elapsed() >= WAIT_CEILING {
                if (moved && self.holds(bus, &prefix).await) || self.replaced(bus, &prefix).await {
                    self.base
                        .store(now.saturating_sub(n).max(0), Ordering::Relaxed);
                    return Ok(());
                }
                if self.took_over(bus, &prefix).await {
                    return Ok(());
                }
                let arrived = now.saturating_sub(base()).max(0);
                return Err(ComputerError::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "the application took {arrived} of the {typed} characters typed so far and then nothing more for {} s, so typing stopped there; observe before typing the rest",
                        still.as_secs().max(1)
                    ),
                )
                .with_detail(serde_json::json!({ "typed": typed, "arrived": arrived })));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// True when the element's text from where typing started is `prefix` and was
    /// not before typing, or was already but the selection typed over is gone: the
    /// typed text arrived, whatever the count says.
    async fn replaced(&self, bus: &Bus, prefix: &str) -> bool {
        if prefix.is_empty() || !self.holds(bus, prefix).await {
            return false;
        }
        let was: String = self.before.chars().take(prefix.chars().count()).collect();
        if was != prefix && self.initial.load(Ordering::Relaxed) >= 0 {
            return true;
        }
        self.had_selection
            && bus
                .call::<_, i32>(&self.obj(), iface::TEXT, "GetNSelections", &())
                .await
                .is_ok_and(|k| k == 0)
    }

    /// True when the element now holds exactly `prefix` (the text typed so far)
    /// and held something else before typing: the app replaced its whole text with
    /// what was typed, as a calculator's display does with the first key after a
    /// result. From then on the typed text starts at 0 and nothing else counts.
    async fn took_over(&self, bus: &Bus, prefix: &str) -> bool {
        let Some(old) = self.old.as_deref() else {
            return false;
        };
        if prefix.is_empty() || old == prefix {
            return false;
        }
        let all = bus
            .call::<_, String>(&self.obj(), iface::TEXT, "GetText", &(0i32, -1i32))
            .await;
        if all.is_ok_and(|t| t == prefix) {
            self.start.store(0, Ordering::Relaxed);
            self.base.store(0, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// True when the element's text from where typing started is `prefix`.
    async fn holds(&self, bus: &Bus, prefix: &str) -> bool {
        let n = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
        let start = self.start.load(Ordering::Relaxed);
        bus.call::<_, String>(
            &self.obj(),
            iface::TEXT,
            "GetText",
            &(start, start.saturating_add(n)),
        )
        .await
        .is_ok_and(|t| t == prefix)
    }

    /// Reads back what was typed: the element's text from where the caret was,
    /// as long as `expected`, must equal it. Returns the characters verified.
    ///
    /// Errors: `COMPUTER_OUTCOME_UNKNOWN` naming the first character that did not
    /// land and what the element holds there.
    pub async fn verify(&self, bus: &Bus, expected: &str) -> Result<u64> {
        let want: Vec<char> = expected
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .chars()
            .collect();
        let n = i32::try_from(want.len()).unwrap_or(i32::MAX);
        let start = self.start.load(Ordering::Relaxed);
        let got: String = bus
            .call(
                &self.obj(),
                iface::TEXT,
                "GetText",
                &(start, start.saturating_add(n)),
            )
            .await
            .map_err(|e| e.to_driver())?;
        let got: Vec<char> = got.chars().collect();
        if self.whole && got == want {
            // Typed over the whole text: the element holds the value and nothing
            // else, or the value did not replace what was there.
            let all: String = bus
                .call(&self.obj(), iface::TEXT, "GetText", &(0i32, -1i32))
                .await
                .map_err(|e| e.to_driver())?;
            let asked: String = want.iter().collect();
            if all != asked {
                return Err(ComputerError::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "the value was typed over the whole text, but the field holds {:?}, not {:?}; observe before trying again",
                        all.chars().take(2 * CONTEXT).collect::<String>(),
                        asked.chars().take(2 * CONTEXT).collect::<String>()
                    ),
                )
                .with_detail(serde_json::json!({
                    "verified_chars": 0,
                    "expected_chars": want.len(),
                })));
            }
        }
        match want.iter().zip(&got).position(|(a, b)| a != b) {
            None if got.len() >= want.len() => Ok(want.len() as u64),
            at => {
                let i = at.unwrap_or(got.len());
                let around = |v: &[char]| -> String {
                    v[i.saturating_sub(CONTEXT / 2)..v.len().min(i + CONTEXT / 2)]
                        .iter()
                        .collect()
                };
                Err(ComputerError::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "typed text did not land exactly: character {} of {} ({:?}) is missing or wrong; the field holds {:?} there, where {:?} was typed",
                        i + 1,
                        want.len(),
                        want[i],
                        around(&got),
                        around(&want)
                    ),
                )
                .with_detail(serde_json::json!({
                    "verified_chars": i,
                    "expected_chars": want.len(),
                })))
            }
        }
    }

    /// True when the element still claims focus.
    pub async fn focused(&self, bus: &Bus) -> bool {
        bus.call::<_, Vec<u32>>(&self.obj(), iface::ACCESSIBLE, "GetState", &())
            .await
            .is_ok_and(|s| RawStates::from_words(&s).has(atspi::State::Focused))
    }
}

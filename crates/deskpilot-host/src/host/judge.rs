//! Step 4 of the pipeline (docs/ARCHITECTURE.md §7.11): the judge of an effect on the
//! window as it is just before dispatch — deskpilot's own files, secure input, what
//! the effect activates, the approval key and the mode's gate — and, once every check
//! passed, what the person at the desktop is shown (the drawn cursor, a teach
//! bubble). It dispatches nothing.

use deskpilot_core::{Node, Op, Role, State};
use deskpilot_policy::approval::{ActionKey, element_fingerprint, payload_preview, screen_hash};
use deskpilot_policy::files::{cancels, only_escape};
use deskpilot_policy::input::{
    acts_through, click_irreversible, drawing_at, elements_at, focused, input_may_reach_password,
    is_password, keys_activate, keys_enter as keys_enter_any, keys_irreversible, offscreen_refuses,
    script_url_into_address_bar, value_submits,
};
use deskpilot_policy::irreversible::{Irreversible, classify_act};
use deskpilot_policy::refusal::{Refusals, TargetFacts};
use deskpilot_protocol::types::{PointerAction, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::approvals::{Ask, Passed, gate};
use super::effect::{Effect, not_dispatched};
use super::{HostOptions, fail, refused};
use crate::session::KeyStep;
use deskpilot_protocol::Result;

/// The refusal of a paste (a paste chord, or a click on an app's own Paste
/// control) while the clipboard grant is off.
pub(super) const PASTE_NEEDS_GRANT: &str = "pasting writes whatever the clipboard holds, which may have been copied from any window (a password manager); it needs the clipboard grant, which the user gives with `deskpilot config set clipboard true`. Type the text instead";

/// What a click on a drawing counts as: irreversible, since the tree cannot say
/// what its pixels show.
fn drawn() -> Irreversible {
    Irreversible {
        kind: "other".into(),
        matched: "a drawing (image or canvas) at the point, whose text the tree does not hold"
            .into(),
    }
}

/// `COMPUTER_SCOPE_VIOLATION` for an effect on deskpilot's own files: a window that
/// shows one of its directories, or text that names one.
pub(super) fn protected_refused(path: &str) -> ComputerError {
    fail(
        ErrorCode::ScopeViolation,
        format!(
            "this would write to or navigate in deskpilot's own files ({:?}): its config, approvals, stop record and audit are changed only through `deskpilot config`, `approve` and `grant --user` at a terminal. Back out of this (Escape, or Cancel by its ref: neither is refused) and save elsewhere",
            deskpilot_core::sanitize::one_line(path)
        ),
    )
}

/// `COMPUTER_SCOPE_VIOLATION` for a desktop shortcut while `system_keys` is off
/// (docs/ARCHITECTURE.md §7.18).
pub(super) fn system_keys_refused(why: &str) -> ComputerError {
    fail(
        ErrorCode::ScopeViolation,
        format!(
            "{why}: desktop shortcuts act outside the window you work in and are off; the user can allow them with `deskpilot config set system_keys true`"
        ),
    )
}

/// `COMPUTER_SCOPE_VIOLATION` for a script URL typed into an address bar.
pub(super) fn script_url_refused() -> ComputerError {
    fail(
        ErrorCode::ScopeViolation,
        "a javascript:, vbscript: or data: URL in an address bar runs code in the page outside deskpilot's policy; it is refused. Open pages by their http(s) address",
    )
}

/// What the judge learned about an effect before dispatch.
#[derive(Debug, Default)]
pub(super) struct GateNote {
    /// How the gate let it through (first use, how confirmed, the approval spent).
    pub(super) passed: Passed,
    /// The role of the element the effect lands on (the act's element, the focused
    /// element for keys).
    pub(super) role: Option<Role>,
    /// Its [`element_fingerprint`].
    pub(super) fingerprint: Option<String>,
}

/// Step 4 of the pipeline, owned so that it can run inside the session's
/// `act_checked` (between resolving the element and dispatching).
pub(super) struct Judge {
    pub(super) o: HostOptions,
    pub(super) rules: Refusals,
    pub(super) approved_apps: Vec<String>,
    pub(super) facts: TargetFacts,
    /// Approvals are bound to this desktop, session and window.
    pub(super) window_key: String,
    /// The window publishes no accessibility tree: the judge has no tree to read.
    pub(super) no_tree: bool,
    /// The bound window as enumerated: maps the element's tree pixels to the
    /// device pixels the presence draws in.
    pub(super) window: WindowInfo,
    /// Teach mode: the phase of the step being dispatched.
    pub(super) teach: Option<Teach>,
}

/// How long a teach bubble waits for the person's Next or Exit: 10 min.
pub const TEACH_WAIT_MS: u64 = 10 * 60 * 1000;

/// Teach mode's phase of the step being dispatched (docs/ARCHITECTURE.md §7.19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Teach {
    /// Show the bubble with this explanation and wait for the person.
    Ask(String),
    /// The person pressed Next on the effect worded so: dispatch it if it is still
    /// that.
    Run(String),
}

/// The sentinel the ask phase of a teach step ends with when the person pressed
/// Next on `what`: nothing was sent; [`crate::Host::teach_step`] runs the step
/// afresh. Never reaches a caller.
pub(super) fn teach_next(what: &str) -> ComputerError {
    fail(ErrorCode::ConfirmationRequired, "the person pressed Next")
        .with_detail(serde_json::json!({ "teach": "next", "what": what }))
}

/// The effect the person approved with Next, when `e` is [`teach_next`]'s.
pub(super) fn teach_next_of(e: &ComputerError) -> Option<String> {
    let d = e.detail.as_ref()?;
    (d.get("teach")? == "next").then(|| d.get("what")?.as_str().map(str::to_owned))?
}

impl Judge {
    /// Once every check passed, just before dispatch: the drawn cursor glides to
    /// the element (its centre, device pixels) and presses (docs/ARCHITECTURE.md
    /// §7.19). `what` is the effect as deskpilot words it (`click button "Save"`).
    ///
    /// Teach mode, [`Teach::Ask`]: the bubble shows the step's explanation and
    /// `what` beside the element, and the dispatch stops here whatever the answer —
    /// on Next with the sentinel [`teach_next`] error (nothing was sent; the step
    /// then runs afresh, judged again on the window as it is then). [`Teach::Run`]:
    /// the element must still be the one the person saw.
    ///
    /// Errors (teach mode only): the sentinel; `COMPUTER_CONFIRMATION_REQUIRED`
    /// (detail `{"teach":"exit"}`) when the person pressed Exit;
    /// `COMPUTER_STOPPED_BY_USER` when the bubble was closed (a stop, a cancelled
    /// call); `COMPUTER_TIMEOUT` after [`TEACH_WAIT_MS`];
    /// `COMPUTER_FEATURE_DISABLED` without a presence; `COMPUTER_STALE_REF` when
    /// the element changed after Next.
    pub(super) fn present(
        &self,
        el: Option<&Node>,
        point: Option<(i32, i32)>,
        what: &str,
    ) -> Result<()> {
        let shown = self
            .o
            .presence
            .as_ref()
            .filter(|_| self.o.settings.presence);
        if let Some(Teach::Run(seen)) = &self.teach
            && seen != what
        {
            return Err(fail(
                ErrorCode::StaleRef,
                format!(
                    "the element changed after the person pressed Next: the bubble showed {seen}, it is now {what}; nothing was done. Observe again and teach the step again"
                ),
            ));
        }
        let Some(p) = shown else {
            if matches!(self.teach, Some(Teach::Ask(_))) {
                return Err(fail(
                    ErrorCode::FeatureDisabled,
                    "teach mode shows a bubble on the desktop, and nothing can be shown there now (`presence` is off in the config)",
                ));
            }
            return Ok(());
        };
        let device = el.and_then(|n| n.bounds).map(|b| {
            let (x0, y0) = self.window.tree_to_device(f64::from(b.x), f64::from(b.y));
            let (x1, y1) = self
                .window
                .tree_to_device(f64::from(b.x + b.width), f64::from(b.y + b.height));
            let (x, y) = (x0.round() as i32, y0.round() as i32);
            deskpilot_core::Bounds::new(
                x,
                y,
                (x1.round() as i32 - x).max(1),
                (y1.round() as i32 - y).max(1),
            )
        });
        let aim = point.or_else(|| device.as_ref().map(crate::presence::centre));
        let Some(Teach::Ask(text)) = &self.teach else {
            if let Some((x, y)) = aim {
                p.aim(x, y);
                p.press();
            }
            return Ok(());
        };
        let target = device
            .or_else(|| aim.map(|(x, y)| deskpilot_core::Bounds::new(x - 8, y - 8, 16, 16)))
            .ok_or_else(|| {
                fail(
                    ErrorCode::ElementNotActionable,
                    "the step's element has no position on screen to point the bubble at; observe again, or teach another step",
                )
            })?;
        if let Some((x, y)) = aim {
            p.aim(x, y);
        }
        // What Next does, in deskpilot's words: the agent's explanation alone
        // could say anything.
        let rx = p.teach(target, &format!("{text} [Next: {what}]"));
        let wait = || rx.recv_timeout(std::time::Duration::from_millis(TEACH_WAIT_MS));
        let multi = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let answer = if multi {
            tokio::task::block_in_place(wait)
        } else {
            wait()
        };
        Err(match answer {
            Ok(crate::presence::TeachAnswer::Next) => teach_next(what),
            Ok(crate::presence::TeachAnswer::Exit) => fail(
                ErrorCode::ConfirmationRequired,
                "the person pressed Exit: teaching ended and this step did not run; later teach steps are refused",
            )
            .with_detail(serde_json::json!({ "teach": "exit" })),
            Ok(crate::presence::TeachAnswer::Closed) => fail(
                ErrorCode::StoppedByUser,
                "the teach bubble was closed (a stop, or the call was cancelled) before Next; the step did not run",
            ),
            Err(_) => {
                p.end_teach();
                fail(
                    ErrorCode::Timeout,
                    format!(
                        "nobody pressed Next or Exit within {} min; the step did not run",
                        TEACH_WAIT_MS / 60_000
                    ),
                )
            }
        })
    }

    /// A click at tree point (`x`, `y`) of a window with a tree where the tree
    /// names nothing (outside the window's own extents — a popup of the app — or
    /// on no named or interactive element), or on a drawing (an image or canvas
    /// inside no control but a page): what it presses cannot be known, so it
    /// counts as irreversible. `None` when an element is named there, or for a
    /// window without a tree (judged by the text read there instead).
    fn nothing_named_at(
        &self,
        root: &Node,
        x: i32,
        y: i32,
        seen: Option<&str>,
    ) -> Option<Irreversible> {
        if self.no_tree || seen.is_some() {
            return None;
        }
        // A drawing under the point (a canvas, an image, below every control that
        // names its press): its pixels can show any word ("Send" drawn on a
        // canvas) that its name does not, so the tree cannot say what it presses.
        if drawing_at(root, x, y) {
            return Some(drawn());
        }
        let named = elements_at(root, x, y).into_iter().any(|n| {
            !std::ptr::eq(n, root) && (!n.name.trim().is_empty() || n.role.is_interactive())
        });
        (!named).then(|| Irreversible {
            kind: "other".into(),
            matched:
                "nothing the tree names at the point, so what a click there presses cannot be known"
                    .into(),
        })
    }

    /// A web engine's developer tools run what is typed into them in the page (the
    /// `code` tier, docs/ARCHITECTURE.md §7.22): unless the app has that tier, a
    /// chord that opens them in a web engine is refused, and so is every effect on
    /// a window that shows them — but F12 alone, which closes them.
    fn devtools(&self, chord: Option<&str>, root: &Node) -> Result<()> {
        if self.rules.code_granted(&self.facts) {
            return Ok(());
        }
        let grantee = self.facts.exe.as_deref().unwrap_or(&self.facts.app);
        match deskpilot_policy::tier::devtools_refused(
            chord,
            root,
            self.facts.toolkit.as_deref(),
            grantee,
        ) {
            Some(why) => Err(fail(ErrorCode::Denylisted, why)),
            None => Ok(()),
        }
    }

    /// A console inside the app (docs/ARCHITECTURE.md §7.22: a text surface whose
    /// input line starts with an interpreter's prompt, `policy::console`) runs
    /// what is typed there as code: unless the app has the `code` tier, no text
    /// and no keys go into one — but keys that only move focus out of it (Tab, F6,
    /// Escape). `lands_on` is the element an act writes or the focused element for
    /// keys (any console of the window when no element shows the focus:
    /// `focus_seen` false); clicks and focus moves onto a console run nothing and
    /// pass.
    fn console(&self, effect: &Effect, lands_on: Option<&Node>, focus_seen: bool) -> Result<()> {
        let writes = match effect {
            Effect::Act { op, .. } => matches!(op, Op::SetValue | Op::Type | Op::Clear),
            Effect::Keys { chord, text, .. } => {
                deskpilot_policy::console::keys_write(chord.as_deref(), text.as_deref())
            }
            Effect::Pointer { .. } | Effect::Clipboard { .. } => false,
        };
        if !writes || self.rules.code_granted(&self.facts) {
            return Ok(());
        }
        let grantee = self.facts.exe.as_deref().unwrap_or(&self.facts.app);
        match deskpilot_policy::console::refused(writes, lands_on, grantee) {
            Some(why) if focus_seen => Err(fail(ErrorCode::Denylisted, why)),
            Some(why) => Err(fail(
                ErrorCode::Denylisted,
                format!(
                    "no element of the window shows the keyboard focus (it is not the active window), so keys sent to it may land in its console: {why}. Give the focus to the element you mean first (`click-at` on it, or `act REF focus` once the window is active)"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Judges `effect` on the window tree `root` read just before dispatch;
    /// `element` is the element an `act` resolved to, `point` the screen point of a
    /// pointer gesture.
    pub(super) fn run(
        &self,
        effect: &Effect,
        point: Option<(i32, i32)>,
        root: &Node,
        element: Option<&Node>,
        note: &mut GateNote,
    ) -> Result<()> {
        let focus = focused(root);
        // Backing out of a dialog (Escape, Cancel) writes nothing: it stays possible
        // whatever the dialog shows (docs/ARCHITECTURE.md §7.21).
        let backs_out = match effect {
            Effect::Keys {
                chord: Some(c),
                text: None,
                ..
            } => only_escape(c),
            Effect::Act { op: Op::Click, .. } => element.is_some_and(cancels),
            _ => false,
        };
        // Nothing writes to, or navigates in, deskpilot's own places.
        if !backs_out
            && let Some(p) = self
                .rules
                .protected_in(&self.facts.title)
                .or_else(|| self.rules.window_shows_protected(root))
        {
            return Err(protected_refused(&p));
        }
        let chord = match effect {
            Effect::Keys { chord, .. } => chord.as_deref(),
            _ => None,
        };
        // Escape is no way out of developer tools: it opens their console drawer.
        self.devtools(chord, root)?;
        // A file chooser that shows one of deskpilot's directories, or a row of it
        // that opens one (through a link named anything), takes nothing but backing
        // out.
        if !backs_out
            && !self.o.remote()
            && let Some(p) =
                super::files::chooser_reaches(&self.rules, effect, root, element, point)
        {
            return Err(protected_refused(&p));
        }
        // Text naming deskpilot's own files first (the more precise reason), then a
        // save dialog writes only into the allowed places (§7.21); on another
        // device the paths are that machine's.
        written_refused(&self.rules, effect, focus, element)?;
        if !self.o.remote() {
            let places = || super::files::file_places(&self.o.settings);
            super::files::check_save(places, effect, root, element, point)?;
        }
        let lands_on = match effect {
            Effect::Act { .. } => element,
            Effect::Keys { .. } => focus,
            Effect::Pointer { .. } | Effect::Clipboard { .. } => None,
        };
        let console_target = match effect {
            Effect::Keys { .. } => deskpilot_policy::console::keys_land_on(focus, root),
            _ => lands_on,
        };
        self.console(effect, console_target, focus.is_some())?;
        note.role = lands_on.map(|n| n.role);
        let fingerprint = lands_on.map(|n| element_fingerprint(root, n));
        note.fingerprint.clone_from(&fingerprint);
        let app = deskpilot_core::sanitize::one_line(&self.facts.app);
        let mut facts = self.facts.clone();
        let op = effect.op();
        let (summary, key, irreversible) = match effect {
            Effect::Act { r, op, value } => {
                let el = element.ok_or_else(|| {
                    not_dispatched("the act reached the judge without its element")
                })?;
                // An element that is not on screen is not what the model is looking
                // at: activating it would act out of sight.
                if offscreen_refuses(*op, el) {
                    return Err(fail(
                        ErrorCode::ElementNotActionable,
                        format!(
                            "{r} is not on screen (an item of a closed menu, or scrolled out of view); open its menu or `act {r} scroll into_view` first, then observe"
                        ),
                    ));
                }
                if matches!(op, Op::SetValue | Op::Type)
                    && value
                        .as_deref()
                        .is_some_and(|v| script_url_into_address_bar(v, el))
                {
                    return Err(script_url_refused());
                }
                // No text into a password field, and no typing at all while one has
                // focus (a keyboard fallback could land there).
                let textual = matches!(op, Op::SetValue | Op::Type | Op::Clear);
                facts.focused_password = textual && is_password(el)
                    || matches!(op, Op::Type)
                        && root.walk().any(|n| n.has(State::Focused) && is_password(n))
                    // A toggle that shows a password's text is secure input too.
                    || deskpilot_policy::irreversible::op_activates(*op)
                        && deskpilot_policy::reach::reveals_password(el, root);
                let name = deskpilot_core::sanitize::one_line(&el.name);
                let name: String = name.chars().take(60).collect();
                let named = if name.is_empty() {
                    el.role.to_string()
                } else {
                    format!("{} {name:?}", el.role)
                };
                let mut summary = format!("{op} {named} in {app}");
                if let Some(p) = value {
                    // The user sees what would be written (secrets masked, one line).
                    summary.push_str(&format!(" to {:?}", payload_preview(p)));
                }
                let key = ActionKey::new(
                    &self.window_key,
                    fingerprint.as_deref().unwrap_or_default(),
                    op.as_str(),
                    value.as_deref(),
                );
                // What the op activates, and a line break in a value that a keyboard
                // fallback would type as Return into a field of a form.
                // A click by ref on a drawing is a click on its pixels.
                let on_drawing = matches!(op, Op::Click | Op::DoubleClick)
                    && el.role == Role::Image
                    && el.bounds.is_some_and(|b| {
                        drawing_at(
                            root,
                            b.x.saturating_add(b.width / 2),
                            b.y.saturating_add(b.height / 2),
                        )
                    });
                let irreversible = on_drawing
                    .then(drawn)
                    .or_else(|| classify_act(*op, el, Some(root)))
                    .or_else(|| acts_through(*op, el, root))
                    .or_else(|| {
                        value
                            .as_deref()
                            .filter(|_| matches!(op, Op::SetValue | Op::Type))
                            .and_then(|v| value_submits(v, el, &self.facts.app, root))
                    });
                (summary, key, irreversible)
            }
            Effect::Keys { chord, text, .. } => {
                if let Some(f) = focus {
                    // What the field will hold: its value and the typed text, or its
                    // value alone when Enter loads it.
                    let now = f.value.as_deref().unwrap_or_default();
                    let typed = text.as_deref().map(|t| format!("{now}{t}"));
                    let loads = keys_enter_any(chord.as_deref(), text.as_deref());
                    if typed
                        .as_deref()
                        .is_some_and(|t| script_url_into_address_bar(t, f))
                        || loads && script_url_into_address_bar(now, f)
                    {
                        return Err(script_url_refused());
                    }
                }
                if let Some(c) = chord {
                    // The driver refuses what does not parse; say so before asking.
                    deskpilot_protocol::keys::parse_chords(c)?;
                    // Keys pressed after Tab within one chord land in a control
                    // nobody judged (the next field may be a password).
                    if let Some(bad) = deskpilot_policy::reach::lands_after_focus_move(c) {
                        return Err(fail(
                            ErrorCode::InvalidArgument,
                            format!(
                                "in {:?} a key is pressed after one that may move the focus or open something (Tab, F6, Escape, Return, space, an arrow, a Ctrl, Alt or Super shortcut), and only the state before the chord is judged: send them as separate chords (`keys \"Tab x\"`), so each is judged where it lands",
                                deskpilot_core::sanitize::one_line(&bad)
                            ),
                        ));
                    }
                    // A paste writes the clipboard's text, which may come from any
                    // window (a password manager): the clipboard is a grant of its own.
                    if !self.o.settings.clipboard && deskpilot_policy::reach::pastes(c) {
                        return Err(fail(ErrorCode::ScopeViolation, PASTE_NEEDS_GRANT));
                    }
                    // A desktop shortcut acts outside the bound window.
                    if !self.o.settings.system_keys
                        && let Some(why) = deskpilot_policy::system_keys::system_chord(c)
                    {
                        return Err(system_keys_refused(&why));
                    }
                }
                // Keys that press a toggle showing a password in clear (space on
                // it, its mnemonic) are secure input, as the click on it is.
                facts.focused_password = input_may_reach_password(root)
                    || deskpilot_policy::input::keys_reveal_password(
                        chord.as_deref(),
                        text.as_deref(),
                        root,
                    );
                let what = match (chord, text) {
                    (Some(c), _) => format!("keys {}", deskpilot_core::sanitize::one_line(c)),
                    _ => format!(
                        "type {} chars",
                        text.as_deref().map_or(0, |t| t.chars().count())
                    ),
                };
                let mut summary = format!("{what} in {app}");
                if let Some(t) = text {
                    summary.push_str(&format!(": {:?}", payload_preview(t)));
                }
                // A chord and typed text with the same characters are different
                // actions: an approval of one is never an approval of the other.
                let kind = if chord.is_some() {
                    "keys:chord"
                } else {
                    "keys:text"
                };
                let key = ActionKey::new(
                    &self.window_key,
                    fingerprint.as_deref().unwrap_or_default(),
                    kind,
                    chord.as_deref().or(text.as_deref()),
                );
                let irreversible =
                    keys_irreversible(chord.as_deref(), text.as_deref(), &self.facts.app, root)
                        .or_else(|| {
                            // A window without a tree: what an activating key
                            // (Return, space) presses there cannot be known.
                            (self.no_tree
                                && (keys_activate(chord.as_deref(), None)
                                    || text.as_deref().is_some_and(|t| t.contains(['\n', '\r']))))
                            .then(|| Irreversible {
                                kind: "other".into(),
                                matched: "a key that activates, in a window without a tree".into(),
                            })
                        });
                (summary, key, irreversible)
            }
            Effect::Clipboard { text } => {
                let summary = format!(
                    "put {} chars on the clipboard, for {app}: {:?}",
                    text.chars().count(),
                    payload_preview(text)
                );
                let key = ActionKey::new(&self.window_key, "", &op, Some(text));
                (summary, key, None)
            }
            Effect::Pointer {
                x, y, action, seen, ..
            } => {
                let (sx, sy) = point.unwrap_or_default();
                facts.focused_password = input_may_reach_password(root)
                    || matches!(action, PointerAction::Click | PointerAction::DoubleClick)
                        && elements_at(root, sx, sy)
                            .into_iter()
                            .any(|n| deskpilot_policy::reach::reveals_password(n, root));
                let summary = match seen {
                    Some(t) if t.trim().is_empty() => {
                        format!("{op} at ({x}, {y}) in {app}, where nothing can be read")
                    }
                    Some(t) => format!(
                        "{op} on the text {:?} (read by OCR) in {app}",
                        deskpilot_core::sanitize::one_line(t)
                    ),
                    None => format!("{op} at ({x}, {y}) in {app}"),
                };
                // The text read at the point is part of what is approved: an
                // approval of "Delete draft" is none for "Delete account".
                let key = ActionKey::new(
                    &self.window_key,
                    &format!("{sx},{sy}"),
                    &op,
                    seen.as_deref(),
                );
                // A click is judged by the element under the point now, and by the
                // text OCR read there as a button of that name would be.
                let irreversible =
                    matches!(action, PointerAction::Click | PointerAction::DoubleClick)
                        .then(|| {
                            click_irreversible(root, sx, sy)
                                .or_else(|| self.nothing_named_at(root, sx, sy, seen.as_deref()))
                                .or_else(|| {
                                    match seen {
                                // Nothing readable where a window without a tree is
                                // clicked: it could be anything.
                                Some(t) if t.trim().is_empty() => Some(Irreversible {
                                    kind: "other".into(),
                                    matched:
                                        "nothing readable at the point of a window without a tree"
                                            .into(),
                                }),
                                Some(t) => {
                                    let b = Node::new("", Role::Button, t.clone());
                                    classify_act(Op::Click, &b, None)
                                }
                                None => None,
                            }
                                })
                        })
                        .flatten();
                (summary, key, irreversible)
            }
        };
        if let Some(r) = self.rules.check_input(&facts) {
            return Err(refused(r));
        }
        // What the user is asked names the device when it is not this machine: a
        // mousepad there and one here are different things to say yes to.
        let summary = if self.o.remote() {
            format!("{summary} on {}", self.o.device)
        } else {
            summary
        };
        let ask = Ask {
            target: &self.facts,
            key,
            screen: screen_hash(root),
            summary,
            // A rule of its own ("other") says what it found; a label rule names
            // the label and the kind it matched.
            irreversible: irreversible.map(|m| {
                if m.kind == "other" {
                    m.matched
                } else {
                    format!("{:?} matched {}", m.matched, m.kind)
                }
            }),
        };
        note.passed = gate(&self.o, &self.approved_apps, ask)?;
        Ok(())
    }
}

impl Judge {
    /// Judges a later step of a key sequence on the window as it is after the steps
    /// before it (docs/ARCHITECTURE.md §7.11): no step is sent while the input could
    /// reach a password field (`COMPUTER_SECURE_INPUT`), and — unless the user
    /// `confirmed` the whole sequence — a step that activates an irreversible control
    /// stops the sequence (`COMPUTER_CONFIRMATION_REQUIRED`: send it as its own call,
    /// which is confirmed as usual).
    pub(super) fn step(&self, step: &KeyStep, root: &Node, confirmed: bool) -> Result<()> {
        let backs_out = step.text.is_none() && step.chord.as_deref().is_some_and(only_escape);
        if !backs_out && let Some(p) = self.rules.window_shows_protected(root) {
            return Err(protected_refused(&p));
        }
        self.devtools(step.chord.as_deref(), root)?;
        let keys = Effect::Keys {
            target: crate::session::Target::Current,
            chord: step.chord.clone(),
            text: step.text.clone(),
        };
        if !backs_out
            && !self.o.remote()
            && let Some(p) = super::files::chooser_reaches(&self.rules, &keys, root, None, None)
        {
            return Err(protected_refused(&p));
        }
        // This step's keys with the text of the field they land in now (a path
        // finished by a later key of the sequence).
        written_refused(&self.rules, &keys, focused(root), None)?;
        if !self.o.remote() {
            let places = || super::files::file_places(&self.o.settings);
            super::files::check_save(places, &keys, root, None, None)?;
        }
        // A step that moved focus into a console types nothing more there.
        self.console(
            &keys,
            deskpilot_policy::console::keys_land_on(focused(root), root),
            focused(root).is_some(),
        )?;
        let mut facts = self.facts.clone();
        // A step that presses a toggle showing a password (space on it, its
        // mnemonic) is secure input, as the whole sequence's first key is.
        facts.focused_password = input_may_reach_password(root)
            || deskpilot_policy::input::keys_reveal_password(
                step.chord.as_deref(),
                step.text.as_deref(),
                root,
            );
        // A key of this sequence may have opened a terminal (a panel that starts a
        // shell): whether the app holds a pty is measured again before every key
        // (docs/ARCHITECTURE.md §7.22).
        if !self.o.remote()
            && cfg!(target_os = "linux")
            && !self.rules.is_code(&self.facts)
            && let Some(pid) = facts.pid
        {
            let pty = crate::control::holds_pty_master(pid);
            facts.pty_master = pty == Some(true);
            facts.pty_unknown = pty.is_none();
        }
        if let Some(r) = self.rules.check_input(&facts) {
            return Err(refused(r));
        }
        // The user confirmed this very sequence as shown: its keys may go on.
        if confirmed {
            return Ok(());
        }
        if let Some(m) = keys_irreversible(
            step.chord.as_deref(),
            step.text.as_deref(),
            &self.facts.app,
            root,
        ) {
            return Err(fail(
                ErrorCode::ConfirmationRequired,
                format!(
                    "{:?} would now activate an irreversible control ({:?} matched {}), which the sequence was not judged for; send it as its own call so it can be confirmed",
                    step.describe(),
                    m.matched,
                    m.kind
                ),
            ));
        }
        Ok(())
    }
}

/// Refuses an effect whose text names one of deskpilot's own places, judged on
/// what it leaves in the field it writes (`COMPUTER_SCOPE_VIOLATION`): typed text
/// and the keys' edits ([`deskpilot_policy::input::field_after`]: printable keys,
/// BackSpace, Delete, Home, End) are applied to what a one-line field (`focus` for
/// keys, `element` for an act) already holds, with the caret at each place it may
/// be, so a path typed in pieces — before or after what the field holds, or
/// finished by deleting a stray letter — is judged whole; a set value replaces it;
/// what is put on the clipboard is written wherever it is pasted. Used for a whole
/// effect and again for each step of a key sequence.
pub(super) fn written_refused(
    rules: &Refusals,
    effect: &Effect,
    focus: Option<&Node>,
    element: Option<&Node>,
) -> Result<()> {
    use deskpilot_policy::input::field_after;
    let holds = |n: Option<&Node>| {
        n.filter(|n| !n.has(State::Multiline))
            .and_then(|n| n.value.clone())
            .unwrap_or_default()
    };
    let written: Vec<String> = match effect {
        Effect::Act {
            op: Op::SetValue,
            value: Some(v),
            ..
        } => vec![v.clone()],
        Effect::Act {
            op: Op::Type,
            value: Some(v),
            ..
        } => field_after(&holds(element), None, Some(v)),
        Effect::Keys { chord, text, .. } if chord.is_some() || text.is_some() => {
            let now = holds(focus);
            field_after(&now, chord.as_deref(), text.as_deref())
                .into_iter()
                .filter(|t| *t != now)
                .collect()
        }
        Effect::Clipboard { text } => vec![text.clone()],
        _ => Vec::new(),
    };
    match written.iter().find_map(|t| rules.protected_in(t)) {
        Some(p) => Err(protected_refused(&p)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field's text with the keys' edits applied wherever the caret may be: a
    /// protected folder finished by deleting a stray letter, or typed before what
    /// the field holds, is refused; a harmless edit passes.
    #[test]
    fn a_path_finished_anywhere_in_the_field_is_judged_whole() {
        let rules = Refusals {
            protected: vec!["/home/me/.config/deskpilot".into()],
            home: Some("/home/me".into()),
            ..Refusals::default()
        };
        let field = |v: &str| {
            let mut n = Node::new("f", Role::Textbox, "Name");
            n.value = Some(v.into());
            n.states.insert(State::Focused);
            n
        };
        let keys = |c: &str| Effect::Keys {
            target: crate::session::Target::Current,
            chord: Some(c.into()),
            text: None,
        };
        let refused = |v: &str, c: &str| {
            let f = field(v);
            written_refused(&rules, &keys(c), Some(&f), None)
                .is_err_and(|e| e.code == ErrorCode::ScopeViolation)
        };
        assert!(refused("~/.config/deskpilotX", "BackSpace"));
        assert!(refused("/.config/deskpilot", "Home+asciitilde+Return"));
        assert!(refused("~/.config/deskpilo", "t+Return"));
        assert!(!refused("~/.config/deskpilotX", "y+Return"));
        assert!(!refused("notes.txt", "BackSpace"));
        let typed = Effect::Act {
            r: "e1".into(),
            op: Op::Type,
            value: Some("~/.config/desk".into()),
        };
        let f = field("pilot");
        assert!(written_refused(&rules, &typed, None, Some(&f)).is_err());
    }
}

//! The one action pipeline: every effect on the desktop — `act`, `keys`, a pointer
//! gesture, and every future kind — passes through [`Host::perform`], with the
//! policy's steps in one place and in one order (docs/ARCHITECTURE.md §7.11):
//!
//! 1. preflight (feature switch, boot, stop, idle expiry), the grant and its lock,
//!    plan mode, the bound window (a vanished one fails `COMPUTER_STALE_REVISION`)
//!    and its refusals, re-run on a fresh enumeration ([`Host::action_target`]);
//! 2. what the effect was aimed with is current: refs shown under this revision for
//!    `act`, the bound window for `keys`, a basis of this revision and geometry for a
//!    pointer gesture ([`Host::check_aim`]);
//! 3. the action budget;
//! 4. on the window as it is now (the element as resolved just before dispatch, for
//!    `act`): the input refusals (password fields), what the effect activates
//!    (irreversible or not), the approval key and the mode's gate ([`Judge`]);
//! 5. dispatch through the session;
//! 6. a failure is audited as a refusal (a policy code) or a failed action; a success
//!    spends the budget, remembers a first-use approval, is audited, notes the
//!    refusal of each window it opened and a closed bound window, re-stamps the
//!    window's refs (after an `act`, whose refs were current), and the state is
//!    saved.
//!
//! The entry points ([`Host::act`], [`Host::keys`], [`Host::pointer`]) only build an
//! [`Effect`].

use deskpilot_core::{Handle, Node, Op, Role, State};
use deskpilot_policy::allow::app_identity;
use deskpilot_policy::approval::{ActionKey, element_fingerprint, payload_preview, screen_hash};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::grant::Candidate;
use deskpilot_policy::input::{
    acts_through, click_irreversible, elements_at, focused, input_may_reach_password, is_password,
    keys_activate, keys_enter as keys_enter_any, keys_irreversible, offscreen_refuses,
    script_url_into_address_bar, value_submits,
};
use deskpilot_policy::irreversible::{Irreversible, classify_act};
use deskpilot_policy::mode::Mode;
use deskpilot_policy::refusal::{Refusals, TargetFacts};
use deskpilot_protocol::types::{PointerAction, PointerParams, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};

use super::approvals::{Ask, Passed, gate, restore_approval};
use super::{Basis, Host, HostOptions, fail, refused};
use crate::control;
use crate::session::{ActOutcome, Change, KeyStep, KeysOutcome, Target};

/// Codes that mean the policy refused an effect, as opposed to an effect that was
/// tried and failed: audited as `refusal` with status `refused`.
const REFUSAL_CODES: [ErrorCode; 6] = [
    ErrorCode::SecureInput,
    ErrorCode::ConfirmationRequired,
    ErrorCode::ScopeViolation,
    ErrorCode::SelfTarget,
    ErrorCode::Denylisted,
    ErrorCode::TargetElevated,
];

/// `COMPUTER_INTERNAL` for a pipeline state that cannot happen, before dispatch.
fn not_dispatched(what: &str) -> ComputerError {
    ComputerError::internal(format!(
        "deskpilot's action pipeline failed ({what}); nothing was dispatched. Report this; observe and retry meanwhile"
    ))
}

/// `COMPUTER_INTERNAL` for an outcome of the wrong kind, after dispatch.
fn mismatched(entry: &str) -> ComputerError {
    ComputerError::internal(format!(
        "deskpilot's action pipeline returned the wrong kind of result for {entry}; the effect was dispatched and audited. Observe to see what changed, and report this"
    ))
}

/// One effect on the desktop, as the pipeline sees it.
#[derive(Debug, Clone)]
pub(super) enum Effect {
    /// `op` on the element with ref `r` of the bound window; `value` for the ops that
    /// take one (set_value, type, select, scroll).
    Act {
        r: String,
        op: Op,
        value: Option<String>,
    },
    /// A key chord (`ctrl+s`) or Unicode text typed into the bound window; `target`
    /// must name the bound window (or be [`Target::Current`]).
    Keys {
        target: Target,
        chord: Option<String>,
        text: Option<String>,
    },
    /// A pointer gesture at (`x`, `y`) capture pixels, relative to the window of
    /// `basis`.
    Pointer {
        basis: Basis,
        x: f64,
        y: f64,
        action: PointerAction,
        /// The text OCR read at the point (an `o` element), judged as a control of
        /// that name would be.
        seen: Option<String>,
    },
}

impl Effect {
    /// The op name of the audit and of refusals: the act's op, `keys`, or
    /// `pointer_<action>`.
    fn op(&self) -> String {
        match self {
            Effect::Act { op, .. } => op.as_str().into(),
            Effect::Keys { .. } => "keys".into(),
            Effect::Pointer { action, .. } => format!("pointer_{action:?}").to_lowercase(),
        }
    }

    /// The audit event of an effect that was dispatched.
    fn event(&self) -> AuditEvent {
        match self {
            Effect::Keys { .. } => AuditEvent::Keys,
            _ => AuditEvent::Action,
        }
    }

    /// The length of the text it writes, in Unicode scalar values (the audit keeps
    /// lengths, never text): the value of set_value/type, the chord or text of keys.
    fn text_len(&self) -> Option<usize> {
        match self {
            Effect::Act {
                op: Op::SetValue | Op::Type,
                value,
                ..
            } => value.as_ref().map(|v| v.chars().count()),
            Effect::Act { .. } | Effect::Pointer { .. } => None,
            Effect::Keys { chord, text, .. } => Some(
                chord
                    .as_deref()
                    .or(text.as_deref())
                    .map_or(0, |s| s.chars().count()),
            ),
        }
    }
}

/// `COMPUTER_SCOPE_VIOLATION` for an effect on deskpilot's own files: a window that
/// shows one of its directories, or text that names one.
fn protected_refused(path: &str) -> ComputerError {
    fail(
        ErrorCode::ScopeViolation,
        format!(
            "this would write to or navigate in deskpilot's own files ({:?}): its config, approvals, stop record and audit are changed only through `deskpilot config`, `approve` and `grant --user` at a terminal. Save elsewhere",
            deskpilot_core::sanitize::one_line(path)
        ),
    )
}

/// `COMPUTER_SCOPE_VIOLATION` for a desktop shortcut while `system_keys` is off
/// (docs/ARCHITECTURE.md §7.18).
fn system_keys_refused(why: &str) -> ComputerError {
    fail(
        ErrorCode::ScopeViolation,
        format!(
            "{why}: desktop shortcuts act outside the window you work in and are off; the user can allow them with `deskpilot config set system_keys true`"
        ),
    )
}

/// `COMPUTER_SCOPE_VIOLATION` for a script URL typed into an address bar.
fn script_url_refused() -> ComputerError {
    fail(
        ErrorCode::ScopeViolation,
        "a javascript:, vbscript: or data: URL in an address bar runs code in the page outside deskpilot's policy; it is refused. Open pages by their http(s) address",
    )
}

/// What an effect did.
enum Outcome {
    Act(ActOutcome),
    Input(KeysOutcome),
}

impl Outcome {
    fn change_mut(&mut self) -> &mut Change {
        match self {
            Outcome::Act(o) => &mut o.change,
            Outcome::Input(o) => &mut o.change,
        }
    }

    /// Appends a line to the text the model reads and recounts its tokens.
    fn append(&mut self, line: &str) {
        let (text, tokens) = match self {
            Outcome::Act(o) => (&mut o.text, &mut o.tokens),
            Outcome::Input(o) => (&mut o.text, &mut o.tokens),
        };
        text.push_str(line);
        *tokens = deskpilot_core::tokens::count(text);
    }

    /// The channel it went through and its status (`executed`, `outcome_unknown`…).
    fn channel_status(&self) -> (String, String) {
        match self {
            Outcome::Act(o) => (
                o.result.channel.as_str().into(),
                o.result.status.as_str().into(),
            ),
            Outcome::Input(o) => (o.result.channel.as_str().into(), "executed".into()),
        }
    }
}

/// What the judge learned about an effect before dispatch.
#[derive(Debug, Default)]
struct GateNote {
    /// How the gate let it through (first use, how confirmed, the approval spent).
    passed: Passed,
    /// The role of the element the effect lands on (the act's element, the focused
    /// element for keys).
    role: Option<Role>,
    /// Its [`element_fingerprint`].
    fingerprint: Option<String>,
}

/// Step 4 of the pipeline, owned so that it can run inside the session's
/// `act_checked` (between resolving the element and dispatching).
struct Judge {
    o: HostOptions,
    rules: Refusals,
    approved_apps: Vec<String>,
    facts: TargetFacts,
    /// Approvals are bound to this desktop, session and window.
    window_key: String,
    /// The window publishes no accessibility tree: the judge has no tree to read.
    no_tree: bool,
    /// The bound window as enumerated: maps the element's tree pixels to the
    /// device pixels the presence draws in.
    window: WindowInfo,
    /// Teach mode: the phase of the step being dispatched.
    teach: Option<Teach>,
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
fn teach_next(what: &str) -> ComputerError {
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
    fn present(
        &self,
        el: Option<&Node>,
        point: Option<(i32, i32)>,
        what: &str,
    ) -> Result<(), ComputerError> {
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
    /// on no named or interactive element): what it presses cannot be known, so
    /// it counts as irreversible. `None` when an element is named there, or for a
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
        let named = elements_at(root, x, y).into_iter().any(|n| {
            !std::ptr::eq(n, root) && (!n.name.trim().is_empty() || n.role.is_interactive())
        });
        (!named).then(|| Irreversible {
            kind: "other".into(),
            matched: "nothing the tree names at the point".into(),
        })
    }

    /// Judges `effect` on the window tree `root` read just before dispatch;
    /// `element` is the element an `act` resolved to, `point` the screen point of a
    /// pointer gesture.
    fn run(
        &self,
        effect: &Effect,
        point: Option<(i32, i32)>,
        root: &Node,
        element: Option<&Node>,
        note: &mut GateNote,
    ) -> Result<(), ComputerError> {
        let focus = focused(root);
        // Nothing writes to, or navigates in, deskpilot's own places.
        if let Some(p) = self
            .rules
            .protected_in(&self.facts.title)
            .or_else(|| self.rules.window_shows_protected(root))
        {
            return Err(protected_refused(&p));
        }
        let written = match effect {
            Effect::Act {
                op: Op::SetValue | Op::Type,
                value,
                ..
            } => value.as_deref(),
            Effect::Keys { text, .. } => text.as_deref(),
            _ => None,
        };
        if let Some(p) = written.and_then(|t| self.rules.protected_in(t)) {
            return Err(protected_refused(&p));
        }
        let lands_on = match effect {
            Effect::Act { .. } => element,
            Effect::Keys { .. } => focus,
            Effect::Pointer { .. } => None,
        };
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
                        && root.walk().any(|n| n.has(State::Focused) && is_password(n));
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
                let irreversible = classify_act(*op, el, Some(root))
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
                    // A desktop shortcut acts outside the bound window.
                    if !self.o.settings.system_keys
                        && let Some(why) = deskpilot_policy::system_keys::system_chord(c)
                    {
                        return Err(system_keys_refused(&why));
                    }
                }
                facts.focused_password = input_may_reach_password(root);
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
            Effect::Pointer {
                x, y, action, seen, ..
            } => {
                facts.focused_password = input_may_reach_password(root);
                let (sx, sy) = point.unwrap_or_default();
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
            irreversible: irreversible.map(|m| format!("{:?} matched {}", m.matched, m.kind)),
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
    fn step(&self, step: &KeyStep, root: &Node, confirmed: bool) -> Result<(), ComputerError> {
        if let Some(p) = self.rules.window_shows_protected(root) {
            return Err(protected_refused(&p));
        }
        let mut facts = self.facts.clone();
        facts.focused_password = input_may_reach_password(root);
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

impl Host {
    /// Performs `op` on ref `r` of the bound window under the policy.
    ///
    /// Errors, besides [`crate::Session::act`]'s: `COMPUTER_FEATURE_DISABLED`,
    /// `COMPUTER_STOPPED_BY_USER`, `COMPUTER_NO_GRANT`, `COMPUTER_SCOPE_VIOLATION`
    /// (plan mode, allow-list), `COMPUTER_STALE_REVISION` (refs from another binding,
    /// or the bound window closed), `COMPUTER_BUDGET_EXHAUSTED`,
    /// `COMPUTER_GRANT_EXPIRED`, `COMPUTER_SECURE_INPUT` (text into a password field),
    /// `COMPUTER_ELEMENT_NOT_ACTIONABLE` (an off-screen element), refusal codes of the
    /// window, `COMPUTER_CONFIRMATION_REQUIRED`.
    pub async fn act(
        &mut self,
        r: &str,
        op: Op,
        value: Option<String>,
    ) -> Result<ActOutcome, ComputerError> {
        if super::pixels::is_ocr_ref(r) {
            let k = self.act_ocr(r, op).await?;
            return Ok(ActOutcome {
                ref_: r.into(),
                op,
                result: deskpilot_protocol::types::ActResult {
                    status: deskpilot_protocol::types::ActStatus::Executed,
                    channel: k.result.channel,
                    method: "XTest pointer at the centre of the text OCR read".into(),
                    elapsed_ms: k.result.elapsed_ms,
                    settle: None,
                    after: None,
                    note: Some(
                        "synthetic pointer input on pixels: the tree cannot confirm what it did; the diff or a new observe shows it"
                            .into(),
                    ),
                },
                change: k.change,
                elapsed_ms: k.elapsed_ms,
                text: k.text,
                tokens: k.tokens,
            });
        }
        let effect = Effect::Act {
            r: r.into(),
            op,
            value,
        };
        match self.perform(effect).await? {
            Outcome::Act(out) => Ok(out),
            Outcome::Input(_) => Err(mismatched("act")),
        }
    }

    /// Sends keys to the bound window under the policy. `target` must be the bound
    /// window (keys never bind): another window is `COMPUTER_SCOPE_VIOLATION`.
    /// Input that could reach a password field refuses with `COMPUTER_SECURE_INPUT`;
    /// the other errors are [`Host::act`]'s.
    pub async fn keys(
        &mut self,
        target: &Target,
        chord: Option<String>,
        text: Option<String>,
    ) -> Result<KeysOutcome, ComputerError> {
        let effect = Effect::Keys {
            target: target.clone(),
            chord,
            text,
        };
        match self.perform(effect).await? {
            Outcome::Input(out) => Ok(out),
            Outcome::Act(_) => Err(mismatched("keys")),
        }
    }

    /// A pointer gesture at (`x`, `y`) in capture pixels relative to the window of
    /// `basis` (docs/ARCHITECTURE.md §8). The host re-measures the bound window before
    /// dispatch: another revision, a moved or resized window, or a window that lost
    /// focus is `COMPUTER_STALE_BASIS`; a point outside the window is
    /// `COMPUTER_SCOPE_VIOLATION` (never a clamped click). The other errors are
    /// [`Host::keys`]'.
    pub async fn pointer(
        &mut self,
        basis: &Basis,
        x: f64,
        y: f64,
        action: PointerAction,
    ) -> Result<KeysOutcome, ComputerError> {
        self.pointer_seen(basis, x, y, action, None).await
    }

    /// [`Host::pointer`] at a point where OCR read `seen`.
    pub(super) async fn pointer_seen(
        &mut self,
        basis: &Basis,
        x: f64,
        y: f64,
        action: PointerAction,
        seen: Option<String>,
    ) -> Result<KeysOutcome, ComputerError> {
        let effect = Effect::Pointer {
            basis: *basis,
            x,
            y,
            action,
            seen,
        };
        match self.perform(effect).await? {
            Outcome::Input(out) => Ok(out),
            Outcome::Act(_) => Err(mismatched("a pointer gesture")),
        }
    }

    /// The pipeline (see the module documentation): every effect on the desktop
    /// passes here.
    async fn perform(&mut self, effect: Effect) -> Result<Outcome, ComputerError> {
        let op = effect.op();
        // 1. Preflight, grant, plan mode, the bound window and its refusals.
        // Keys carry no refs or basis: keys that name their window (`--app`,
        // `--window`) go to the bound window as it is now, even when the grant just
        // moved there because its window closed (step 2 checks it is the one named).
        // Keys that name none were meant for the window that closed.
        let aimed =
            !matches!(&effect, Effect::Keys { target, .. } if !matches!(target, Target::Current));
        let (window, cand, moved) = self.action_target(&op, aimed).await?;
        let app = cand.facts.app.clone();
        let revision = self.revision();
        // 2. What the effect was aimed with is current.
        let point = self
            .check_aim(&effect, &op, &window, revision, &app)
            .await?;
        // 3. Budget.
        self.check_budget(revision, &op, &app)?;
        // 4–5. Judge on the window as it is now, then dispatch.
        let judge = Judge {
            o: self.o.clone(),
            rules: self.rules.clone(),
            approved_apps: self.policy().approved_apps.clone(),
            facts: cand.facts.clone(),
            window_key: format!(
                "{}/{}/{}",
                self.o.desktop_key, self.o.session, window.handle.0
            ),
            no_tree: window.no_tree,
            window: window.clone(),
            teach: self.teach.clone(),
        };
        let mut note = GateNote::default();
        let result = self
            .dispatch(&effect, &window, point, &judge, &mut note)
            .await;
        // 6. Audit, spend, and what the effect changed.
        let mut rec = AuditRecord {
            event: Some(effect.event()),
            app: Some(app.clone()),
            pid: cand.facts.pid,
            op: Some(op.clone()),
            role: note.role.map(|r| r.to_string()),
            fingerprint: note.fingerprint.clone().filter(|f| !f.is_empty()),
            text_len: effect.text_len(),
            ..AuditRecord::default()
        };
        let mut out = match result {
            Ok(out) => out,
            Err(e) => {
                // The effect went through (the error came after it), or a dropped
                // device link cut its call off so nobody knows: either way it
                // counts against the budget, and the audit says which.
                let sent = self.session.effect_sent();
                let unknown = self.session.effect_unknown();
                let refusal = REFUSAL_CODES.contains(&e.code) && !sent && !unknown;
                // A teach step's Next: nothing was sent, and the step is dispatched
                // (and audited) next.
                if teach_next_of(&e).is_some() {
                    if let Some(id) = note.passed.approval_id.as_deref() {
                        restore_approval(&self.o.approvals_path, id);
                    }
                    if let Err(save) = self.after_call() {
                        tracing::warn!(error = %save.message, "state not saved after a teach bubble");
                    }
                    return Err(e);
                }
                if refusal {
                    rec.event = Some(AuditEvent::Refusal);
                }
                rec.status = Some(
                    if refusal {
                        "refused"
                    } else if sent {
                        "done, then failed"
                    } else if unknown {
                        "unknown: the link dropped"
                    } else {
                        "failed"
                    }
                    .into(),
                );
                rec.code = Some(e.code.as_str().into());
                self.audit(rec);
                if sent || unknown {
                    self.policy_mut().authority.spend(control::now_ms());
                }
                // An approval spent on an action whose dispatch failed stays the user's:
                // nothing was done with it. Once the driver took the effect, it is spent.
                let sent = sent || unknown;
                if let Some(id) = note
                    .passed
                    .approval_id
                    .as_deref()
                    .filter(|_| !refusal && !sent)
                {
                    restore_approval(&self.o.approvals_path, id);
                }
                // The refusal is the answer; a state file that cannot be saved must
                // not hide it (its approval id, its code).
                if let Err(save) = self.after_call() {
                    tracing::warn!(error = %save.message, "state not saved after a refusal");
                }
                return Err(e);
            }
        };
        self.policy_mut().authority.spend(control::now_ms());
        if note.passed.first_use {
            self.remember_app(&cand.facts);
        }
        let (channel, status) = out.channel_status();
        rec.channel = Some(channel);
        rec.status = Some(status);
        rec.approved_by = note.passed.approved_by.clone();
        self.audit(rec);
        self.mark_new_windows(out.change_mut());
        if let Some(n) = moved {
            out.append(&n);
        }
        if let Some(n) = self.bound_closed_note(&window, out.change_mut()) {
            out.append(&n);
        }
        if matches!(effect, Effect::Act { .. }) {
            // The act's refs were current (step 2): they stay current. Keys and
            // pointer input never re-stamp: refs of the window not shown under this
            // revision stay stale until it is observed again.
            self.stamp(&window, None);
        }
        self.after_call()?;
        Ok(out)
    }

    /// Step 2: the refs, target or basis the effect was aimed with belong to the
    /// bound window under the current revision. Returns the screen point (pixels) of
    /// a pointer gesture. A mismatch is a refusal (audited); a driver error is not.
    async fn check_aim(
        &mut self,
        effect: &Effect,
        op: &str,
        window: &WindowInfo,
        revision: u64,
        app: &str,
    ) -> Result<Option<(i32, i32)>, ComputerError> {
        let e = match effect {
            Effect::Act { r, .. } => match self.refs_revision(window.handle.as_str()) {
                None => fail(
                    ErrorCode::StaleRevision,
                    format!(
                        "no refs were shown for the bound window {:?} under revision {revision}; observe it first",
                        deskpilot_core::sanitize::one_line(&window.title)
                    ),
                ),
                Some(rev) if rev != revision => fail(
                    ErrorCode::StaleRevision,
                    format!(
                        "{r} was shown under revision {rev}, but the grant was rebound since (revision {revision}); observe again and use the new refs"
                    ),
                ),
                Some(_) => match self.ref_elsewhere(r, window.handle.as_str()) {
                    Some(e) => e,
                    None => return Ok(None),
                },
            },
            Effect::Keys { target, .. } => {
                if matches!(target, Target::Current) {
                    return Ok(None);
                }
                let named = self.session.resolve_window(target).await?;
                if named.handle == window.handle {
                    return Ok(None);
                }
                fail(
                    ErrorCode::ScopeViolation,
                    format!(
                        "keys go to the bound window ({:?}) only; observe the other window first to move the grant there",
                        deskpilot_core::sanitize::one_line(&window.title)
                    ),
                )
            }
            Effect::Pointer { basis, x, y, .. } => {
                match self.check_basis(basis, *x, *y, window, revision).await? {
                    Ok(point) => return Ok(Some(point)),
                    Err(e) => e,
                }
            }
        };
        Err(self.refuse(e, Some(op), Some(app)))
    }

    /// A pointer gesture's basis against the window re-measured now: the inner
    /// result is the screen point, or why the basis is stale or the point outside.
    async fn check_basis(
        &mut self,
        basis: &Basis,
        x: f64,
        y: f64,
        window: &WindowInfo,
        revision: u64,
    ) -> Result<Result<(i32, i32), ComputerError>, ComputerError> {
        if basis.revision != revision {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                format!(
                    "the basis is from revision {} but the grant is at revision {revision}; observe again for a new basis",
                    basis.revision
                ),
            )));
        }
        // Re-measure just before dispatch.
        let now = self
            .session
            .driver()
            .windows()
            .await?
            .into_iter()
            .find(|w| w.handle == window.handle);
        let Some(now) = now else {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                "the basis window is gone; observe again",
            )));
        };
        let geometry = now
            .device_bounds
            .or(now.bounds)
            .map(|b| (b.x, b.y, b.width, b.height));
        if geometry != Some((basis.x, basis.y, basis.width, basis.height)) {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                format!(
                    "the window moved or was resized since the basis was taken (basis {basis}, now {}); observe again for a new basis",
                    geometry.map_or("unknown".into(), |(x, y, w, h)| format!("{x},{y},{w}x{h}"))
                ),
            )));
        }
        if !now.active {
            return Ok(Err(fail(
                ErrorCode::StaleBasis,
                "the window lost focus since the basis was taken; observe again (pointer input would land on whatever is on top)",
            )));
        }
        let (cw, ch) = (
            f64::from(basis.width) * basis.scale,
            f64::from(basis.height) * basis.scale,
        );
        if !(x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0 && x < cw && y < ch) {
            return Ok(Err(fail(
                ErrorCode::ScopeViolation,
                format!(
                    "({x}, {y}) is outside the window ({cw}×{ch} capture pixels); coordinates are relative to the window's top-left corner and are never clamped"
                ),
            )));
        }
        // In range: x < width × scale, so the screen point is inside the window.
        let sx = basis.x + (x / basis.scale).floor() as i32;
        let sy = basis.y + (y / basis.scale).floor() as i32;
        if now
            .covered_by
            .iter()
            .any(|b| sx >= b.x && sy >= b.y && sx < b.x + b.width && sy < b.y + b.height)
        {
            return Ok(Err(fail(
                ErrorCode::ScopeViolation,
                format!(
                    "another window is on top at ({x}, {y}): a popup or another app's window covers that part of the bound window, and pointer input there would reach it"
                ),
            )));
        }
        Ok(Ok((sx, sy)))
    }

    /// Steps 4–5: the judge on the window as it is now, then the session's dispatch.
    async fn dispatch(
        &mut self,
        effect: &Effect,
        window: &WindowInfo,
        point: Option<(i32, i32)>,
        judge: &Judge,
        note: &mut GateNote,
    ) -> Result<Outcome, ComputerError> {
        if let Effect::Act { r, op, value } = effect {
            // The session acts in its current window: the bound one.
            self.session.state_mut().current = Some(window.handle.0.clone());
            return self
                .session
                .act_checked(r, *op, value.clone(), |root, el| {
                    judge.run(effect, None, root, Some(el), note)?;
                    let name = deskpilot_core::redact::display_name_of(el, 60);
                    let mut what = if name.is_empty() {
                        format!("{op} {}", el.role)
                    } else {
                        format!("{op} {} \"{name}\"", el.role)
                    };
                    // The value it writes, as the person should see it (secrets
                    // masked, one line, cut).
                    if let Some(v) = value {
                        let v = deskpilot_core::sanitize::one_line(
                            &deskpilot_core::redact::mask_secrets(v),
                        );
                        let cut: String = v.chars().take(60).collect();
                        let more = if cut.len() < v.len() { "..." } else { "" };
                        what.push_str(&format!(" to \"{cut}{more}\""));
                    }
                    judge.present(Some(el), None, &what)
                })
                .await
                .map(Outcome::Act);
        }
        // A click in a window without a tree is judged by the text OCR reads at
        // the point now; where nothing can be read, as an irreversible control.
        let from_ocr = matches!(effect, Effect::Pointer { seen: Some(_), .. });
        let read;
        let effect = match (effect, point) {
            (
                Effect::Pointer {
                    basis,
                    x,
                    y,
                    action: a @ (PointerAction::Click | PointerAction::DoubleClick),
                    seen: None,
                },
                Some(p),
            ) if window.no_tree => {
                let text = self.text_at_point(window, p).await;
                read = Effect::Pointer {
                    basis: *basis,
                    x: *x,
                    y: *y,
                    action: *a,
                    seen: Some(text),
                };
                &read
            }
            _ => effect,
        };
        let root = if window.no_tree {
            let mut r = Node::new(window.handle.0.clone(), Role::Window, window.title.clone());
            r.bounds = window.device_bounds;
            r
        } else {
            self.session.peek(window).await?
        };
        // The judge reads the tree, whose pixels are the device's divided by the
        // toolkit's scale.
        let tree_point = point.map(|(x, y)| {
            let (tx, ty) = window.device_to_tree(f64::from(x), f64::from(y));
            (tx.floor() as i32, ty.floor() as i32)
        });
        judge.run(effect, tree_point, &root, None, note)?;
        if let Effect::Pointer { action, .. } = effect {
            let what = format!("{action:?} at {point:?}").to_lowercase();
            judge.present(None, point, &what)?;
        }
        let under = tree_point.and_then(|(x, y)| {
            elements_at(&root, x, y)
                .into_iter()
                .find(|n| !n.name.trim().is_empty() || n.role.is_interactive())
                .map(|n| {
                    format!(
                        "{} \"{}\"",
                        n.role,
                        deskpilot_core::redact::display_name_of(n, 60)
                    )
                })
        });
        let confirmed = note.passed.approved_by.is_some();
        match effect {
            Effect::Keys { chord, text, .. } => self
                .session
                .keys_checked(
                    &Target::Handle(window.handle.clone()),
                    chord.clone(),
                    text.clone(),
                    |step, root| judge.step(step, root, confirmed),
                )
                .await
                .map(Outcome::Input),
            Effect::Pointer { action, .. } => {
                let (x, y) = point.ok_or_else(|| {
                    not_dispatched("a pointer gesture reached dispatch without its point")
                })?;
                let params = PointerParams {
                    window: window.handle.clone(),
                    action: *action,
                    x,
                    y,
                    to: None,
                };
                let mut out = self.session.pointer(window, params).await?;
                let seen = match effect {
                    Effect::Pointer { seen, .. } => seen.as_ref(),
                    _ => None,
                };
                if from_ocr {
                    out.result.channel = deskpilot_protocol::types::Channel::PointerOcr;
                }
                // Name what was under the point at dispatch, so a miss is visible:
                // the tree's element, or, where there is no tree, the text OCR read.
                let under = under.filter(|_| !window.no_tree);
                let at = match (&under, seen) {
                    (Some(u), _) => format!(" · under the point: {u}"),
                    (None, Some(t)) if !t.trim().is_empty() => format!(
                        " · under the point: the text \"{}\" read by OCR (no tree there)",
                        deskpilot_core::sanitize::one_line(t)
                    ),
                    _ if window.no_tree => {
                        " · under the point: nothing readable (no tree, and OCR read no text there)"
                            .into()
                    }
                    _ => " · under the point: nothing the tree names".into(),
                };
                if let Some(first) = out.text.find('\n') {
                    out.text.insert_str(first, &at);
                } else {
                    out.text.push_str(&at);
                }
                Ok(Outcome::Input(out))
            }
            Effect::Act { .. } => Err(not_dispatched("an act reached the input dispatch")),
        }
    }

    /// Checks the grant for an action in the bound window with refs from `window`:
    /// the window is the bound one, its refs were shown under the current revision,
    /// budget and expiry allow it. Returns the bound window and its facts.
    ///
    /// When the bound window closed and the grant moved, an effect `aimed` with refs
    /// or a basis is `COMPUTER_STALE_REVISION`; one that is not (keys) goes to the
    /// window the grant moved to, and the third value says so for the result.
    pub(super) async fn action_target(
        &mut self,
        op: &str,
        aimed: bool,
    ) -> Result<(WindowInfo, Candidate, Option<String>), ComputerError> {
        self.refresh_settings()?;
        if self.o.settings.mode == Mode::Plan {
            // Plan mode refuses before anything is read or bound.
            self.preflight(control::now_ms())?;
            let e = fail(
                ErrorCode::ScopeViolation,
                "plan mode is read-only: observe, find and wait work, actions do not. Change it with `deskpilot config set mode default`",
            );
            return Err(self.refuse(e, Some(op), None));
        }
        let (en, vanished) = self.begin().await?;
        let g = self
            .policy()
            .authority
            .active()
            .cloned()
            .expect("begin ensures a grant");
        let mut moved = None;
        // Only within the same application (the same accessibility bus connection,
        // the first part of a handle): keys named by app name never follow a grant
        // to another process that happens to carry the name.
        let same_app = |old: &str| {
            let bus = |h: &str| h.split('|').next().unwrap_or_default().to_owned();
            g.target.as_deref().is_some_and(|t| bus(t) == bus(old))
        };
        if let Some((old, closed, _)) = vanished.as_ref().filter(|(_, _, h)| !aimed && same_app(h))
        {
            let v = self.grant_view();
            moved = Some(format!(
                "\nthe bound window {closed} closed, so the grant moved to [{}] {} (revision {}; refs from revision {old} are stale): the keys went there",
                v.as_ref()
                    .and_then(|v| v.window_ref.clone())
                    .unwrap_or_default(),
                deskpilot_core::sanitize::one_line(
                    v.as_ref()
                        .and_then(|v| v.app.as_deref())
                        .unwrap_or_default()
                ),
                g.revision
            ));
        } else if let Some((old, closed, _)) = vanished {
            let now_on = match (&g.target, self.grant_view()) {
                (Some(_), Some(v)) => format!(
                    "the grant moved to [{}] {}",
                    v.window_ref.unwrap_or_default(),
                    deskpilot_core::sanitize::one_line(v.app.as_deref().unwrap_or_default())
                ),
                _ => "no other window is permitted".into(),
            };
            let e = fail(
                ErrorCode::StaleRevision,
                format!(
                    "the bound window {closed} is gone (closed, or its app ended); {now_on} (revision {}, your refs are from revision {old}). Observe before acting",
                    g.revision
                ),
            );
            return Err(self.refuse(e, Some(op), g.target_app.as_deref()));
        }
        let Some(bound) = g.target.clone() else {
            let e = fail(
                ErrorCode::NoGrant,
                "the grant is bound to no window (none is permitted); observe a permitted window first",
            );
            return Err(self.refuse(e, Some(op), None));
        };
        // `begin` keeps the binding on a live window, or on the window of an app that
        // is not responding (not gone: the grant stays there).
        let Some((window, cand)) = en.find(&bound).cloned() else {
            let e = match en.frozen_app_of(&bound) {
                Some(app) => fail(
                    ErrorCode::NotResponding,
                    format!(
                        "app {:?}{} that you work in is not responding, so nothing was sent; the grant stays on it. Wait and try again",
                        deskpilot_core::sanitize::one_line(&app.name),
                        app.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                    ),
                ),
                None => fail(
                    ErrorCode::StaleRevision,
                    "the bound window is gone; observe before acting",
                ),
            };
            return Err(self.refuse(e, Some(op), g.target_app.as_deref()));
        };
        if let Some(r) = self.rules.check_window(&cand.facts) {
            let app = cand.facts.app.clone();
            return Err(self.refuse(refused(r), Some(op), Some(&app)));
        }
        Ok((window, cand, moved))
    }

    /// The user confirmed a first use of this app in this session.
    pub(super) fn remember_app(&mut self, facts: &TargetFacts) {
        let id = app_identity(facts);
        if !self.policy().approved_apps.contains(&id) {
            self.policy_mut().approved_apps.push(id);
        }
    }

    pub(super) fn refs_revision(&self, handle: &str) -> Option<u64> {
        self.session
            .state()
            .per_window
            .get(handle)
            .filter(|ws| ws.last.is_some())
            .map(|ws| ws.revision)
    }

    /// `COMPUTER_STALE_REVISION` when `r` is not a ref of the bound window but was
    /// shown for another window (refs are numbered across the session, so it cannot
    /// be both): the grant moved since, and acting on it needs a rebind first.
    pub(super) fn ref_elsewhere(&self, r: &str, bound: &str) -> Option<ComputerError> {
        let st = self.session.state();
        if st
            .per_window
            .get(bound)
            .is_some_and(|ws| ws.registry.resolve(r).is_ok())
        {
            return None;
        }
        let (handle, ws) = st
            .per_window
            .iter()
            .find(|(h, ws)| h.as_str() != bound && ws.registry.resolve(r).is_ok())?;
        let wref = st
            .windows
            .ref_of(&Handle(handle.clone()))
            .unwrap_or_else(|| "another window".into());
        let title = ws
            .info
            .as_ref()
            .map(|i| deskpilot_core::sanitize::one_line(&i.title))
            .unwrap_or_default();
        Some(fail(
            ErrorCode::StaleRevision,
            format!(
                "{} was shown for window {wref} {title:?}, but the grant is bound to another window now; observe --window {wref} to move the grant back (its refusals are checked again), then act",
                deskpilot_core::sanitize::one_line(r)
            ),
        ))
    }

    /// When the action closed the bound window, says what happens to the grant (the
    /// next call moves it; refs of the closed window are gone).
    pub(super) fn bound_closed_note(
        &mut self,
        window: &WindowInfo,
        change: &Change,
    ) -> Option<String> {
        let wref = self.session.window_ref(&window.handle);
        change.closed_windows.contains(&wref).then(|| {
            format!(
                "\nthe grant's window [{wref}] closed: the next call moves the grant to the frontmost permitted window under a new revision; observe before acting"
            )
        })
    }

    /// Notes the refusal of each window an action opened.
    pub(super) fn mark_new_windows(&mut self, change: &mut Change) {
        if change.new_windows.is_empty() {
            return;
        }
        for w in &mut change.new_windows {
            let facts = TargetFacts {
                app: w.app.clone(),
                title: w.title.clone(),
                ..TargetFacts::default()
            };
            // Process facts are re-measured when the window is observed; names and
            // titles already decide the deny-lists.
            w.refused = self
                .rules
                .check_window(&facts)
                .map(|r| format!("{} ({})", r.code.as_str(), r.reason));
        }
    }
}

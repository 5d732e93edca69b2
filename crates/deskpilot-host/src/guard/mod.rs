//! The driver as `deskpilot driver` serves it to a host on another machine
//! (docs/ARCHITECTURE.md §7.16): that host's policy runs where its user is, so the
//! machine whose desktop is touched enforces, on every request, what no remote host
//! can be trusted to: its feature switch and stop record, the absolute refusals
//! (deskpilot itself, the credential deny-list, terminals, other users' windows, the
//! user's deny-list), secure input (no text or keys while a password field could
//! receive them), the launch rules, redaction of every answer, and an audit line for
//! each effect and refusal on this machine.
//!
//! What only the remote host does: grants and their budget and expiry, revisions and
//! stale refs, modes and confirmations of irreversible actions, approvals, and the
//! judgement of what a key activates. A key sequence comes one step per request
//! (one chord, or text with a Tab or line break only at its end), each judged here
//! for the window as it is when it arrives.

use crate::host::files::Served;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use deskpilot_core::{Handle, Op};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::input::{input_may_reach_password, is_password};
use deskpilot_policy::refusal::{Refusal, TargetFacts};
use deskpilot_protocol::types::*;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};

use crate::audit::{AuditLog, now_rfc3339};
use crate::config::Effective;
use crate::control;
use crate::host::{Reload, refusals_for, vet_launch, window_facts};
use crate::redacting::Redacting;
use deskpilot_protocol::Result;

/// What a guarded driver reads on its own machine.
#[derive(Clone)]
pub struct GuardOptions {
    /// The machine's config, read again for every request.
    pub reload: Reload,
    /// Where `deskpilot stop` writes its record on this machine.
    pub runtime_dir: PathBuf,
    /// This machine's audit log.
    pub audit: AuditLog,
}

/// A driver that enforces the machine's own rules ([`Guarded::new`]).
pub struct Guarded {
    inner: Arc<dyn Driver>,
    o: GuardOptions,
}

/// `COMPUTER_FEATURE_DISABLED`: this machine does not serve its desktop.
pub fn serve_off() -> ComputerError {
    ComputerError::new(
        ErrorCode::FeatureDisabled,
        "this machine does not serve its desktop to a host elsewhere: `deskpilot driver` takes no grant, budget or confirmation of its own, so its user turns serving on at a terminal there with `deskpilot config set serve true` (and `enabled true`), only on a machine meant to be driven through `--device ssh:`",
    )
}

/// `COMPUTER_*` error of a refusal.
fn refused(r: Refusal) -> ComputerError {
    ComputerError::new(r.code, r.reason)
}

impl Guarded {
    /// Wraps `inner` (in [`Redacting`] first: every answer leaves redacted).
    pub fn new(inner: Arc<dyn Driver>, o: GuardOptions) -> Guarded {
        Guarded {
            inner: Arc::new(Redacting::new(inner)),
            o,
        }
    }

    /// The machine's settings, when it may be used at all: the feature switch is
    /// on, its user lets it serve a host elsewhere (`serve`), and no stop is in
    /// effect.
    fn admit(&self) -> Result<Effective> {
        let s = (self.o.reload)()?;
        if !s.enabled {
            return Err(ComputerError::new(
                ErrorCode::FeatureDisabled,
                "computer use is off on the driver's machine; its user turns it on there with `deskpilot config set enabled true`",
            ));
        }
        // The served driver takes no grant, budget or confirmation of this
        // machine's (those are the remote host's): anything here that can start
        // it would drive the desktop past them, so its user opts in.
        if !s.serve {
            return Err(serve_off());
        }
        if let Some(stop) = control::read_stop_in(&self.o.runtime_dir)
            && control::now_ms() < stop.until_ms
        {
            return Err(ComputerError::new(
                ErrorCode::StoppedByUser,
                "the driver machine's user pressed stop; nothing is served until the cooldown ends or they grant again there",
            ));
        }
        Ok(s)
    }

    /// The facts of the window `handle` as enumerated now, `None` when it is gone
    /// (the inner driver then answers for it).
    async fn facts(&self, handle: &Handle) -> Result<Option<TargetFacts>> {
        let apps = self.inner.apps().await?;
        Ok(apps.iter().find_map(|a| {
            a.windows
                .iter()
                .find(|w| &w.handle == handle)
                .map(|w| window_facts(a, w, true))
        }))
    }

    /// Admits a request on window `handle`: the machine is on, and no refusal covers
    /// the window. Returns the window's facts.
    async fn admit_window(
        &self,
        handle: &Handle,
    ) -> Result<(Effective, Option<TargetFacts>), ComputerError> {
        let s = self.admit()?;
        // Only windows this machine lists are served: a handle of anything else (an
        // element of a refused window) would escape the refusals.
        let Some(facts) = self.facts(handle).await? else {
            return Err(ComputerError::new(
                ErrorCode::ElementNotFound,
                "no window of this desktop has that handle; list windows with windows.list",
            ));
        };
        if let Some(r) = refusals_for(&s).check_window(&facts) {
            return Err(refused(r));
        }
        Ok((s, Some(facts)))
    }

    /// Refuses an effect needing tier `needed` beyond the tier of the admitted
    /// window's app on this machine (docs/ARCHITECTURE.md §7.22): `app_tiers` set
    /// here hold whatever host drives the desktop.
    fn tier_allows(
        s: &Effective,
        facts: Option<&TargetFacts>,
        needed: deskpilot_policy::tier::Tier,
        what: &str,
    ) -> Result<()> {
        let Some(f) = facts else {
            return Ok(());
        };
        match deskpilot_policy::tier::check(&f.app, refusals_for(s).tier_of(f), needed, what) {
            Some(r) => Err(refused(r)),
            None => Ok(()),
        }
    }

    /// Refuses text that names one of this machine's deskpilot files.
    fn unprotected(s: &Effective, text: Option<&str>) -> Result<()> {
        match text.and_then(|t| refusals_for(s).protected_in(t)) {
            Some(p) => Err(ComputerError::new(
                ErrorCode::ScopeViolation,
                format!(
                    "{:?} is one of deskpilot's own files on the driver's machine; nothing writes it through the driver",
                    deskpilot_core::sanitize::one_line(&p)
                ),
            )),
            None => Ok(()),
        }
    }

    /// The tree of `window` as this machine reads it whole; `None` for a window
    /// without one (an X11 app with no accessibility), which shows nothing the
    /// checks on it could know of.
    async fn tree(&self, window: &Handle) -> Result<Option<deskpilot_core::Node>> {
        match self
            .inner
            .snapshot(SnapshotParams::whole(window.clone()))
            .await
        {
            Ok(snap) => Ok(Some(snap.root)),
            Err(e) if e.code == ErrorCode::AccessibilityDisabled => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// This machine's places for files an app is made to write
    /// (docs/ARCHITECTURE.md §7.21): in a save dialog, an element action or keys
    /// that would save outside them are refused. A window without a tree has no
    /// save dialog anything could read.
    /// Also the `code` surfaces of the window ([`Guarded::code_surface_refused`]),
    /// and a pointer press on a toggle that shows a password
    /// ([`Guarded::reveal_refused`]), from the same read.
    async fn saves_allowed(
        &self,
        s: &Effective,
        facts: Option<&TargetFacts>,
        window: &Handle,
        what: Served<'_>,
    ) -> Result<()> {
        match self.tree(window).await? {
            Some(root) => {
                Self::code_surface_refused(s, facts, &root, what)?;
                // A press at a point on a toggle that shows a password in clear is
                // secure input, as a press of it by handle is.
                if let Served::Pointer(PointerAction::Click | PointerAction::DoubleClick, (x, y)) =
                    what
                {
                    let toggles = deskpilot_policy::input::elements_at(&root, x, y)
                        .into_iter()
                        .filter(|n| deskpilot_policy::reach::reveals_password(n, &root));
                    for n in toggles {
                        Self::reveal_refused(s, facts, &root, &n.handle)?;
                    }
                }
                Self::field_unprotected(s, &root, what)?;
                crate::host::files::check_served(s, what, &root)
            }
            None => Ok(()),
        }
    }

    /// What keys or a `type` leave in the one-line field they edit, with the caret
    /// anywhere in it (`input::field_after`), must not name this machine's
    /// deskpilot files: a path typed in pieces, finished by its last letter, a
    /// BackSpace or a Home, is judged whole, as on the host.
    fn field_unprotected(
        s: &Effective,
        root: &deskpilot_core::Node,
        what: Served<'_>,
    ) -> Result<()> {
        use deskpilot_policy::input::{field_after, focused};
        let field = |n: Option<&deskpilot_core::Node>| {
            n.filter(|n| !n.has(deskpilot_core::State::Multiline))
                .and_then(|n| n.value.clone())
                .unwrap_or_default()
        };
        let texts = match what {
            Served::Keys(chord, text) => field_after(&field(focused(root)), chord, text),
            Served::Act(Op::Type, Some(v), h) => {
                field_after(&field(root.walk().find(|n| &n.handle == h)), None, Some(v))
            }
            _ => Vec::new(),
        };
        texts.iter().try_for_each(|t| Self::unprotected(s, Some(t)))
    }

    /// The `code` surfaces of this machine's window whose tree is `root`
    /// (docs/ARCHITECTURE.md §7.22), judged as the host judges them: unless this
    /// machine's config grants the app the `code` tier, a browser's developer
    /// tools take nothing but the F12 that closes them, a chord that opens them
    /// in a web engine is refused, and no text or keys go into a console inside an
    /// app (`COMPUTER_DENYLISTED`).
    fn code_surface_refused(
        s: &Effective,
        facts: Option<&TargetFacts>,
        root: &deskpilot_core::Node,
        what: Served<'_>,
    ) -> Result<()> {
        let f = facts.cloned().unwrap_or_default();
        if refusals_for(s).code_granted(&f) {
            return Ok(());
        }
        let (chord, writes, lands_on) = match what {
            Served::Act(op, _, h) => (
                None,
                matches!(op, Op::SetValue | Op::Type | Op::Clear),
                root.walk().find(|n| &n.handle == h),
            ),
            Served::Keys(chord, text) => (
                chord,
                deskpilot_policy::console::keys_write(chord, text),
                deskpilot_policy::console::keys_land_on(
                    deskpilot_policy::input::focused(root),
                    root,
                ),
            ),
            Served::Pointer(..) => (None, false, None),
        };
        let grantee = f.exe.as_deref().unwrap_or(&f.app);
        let why =
            deskpilot_policy::tier::devtools_refused(chord, root, f.toolkit.as_deref(), grantee)
                .or_else(|| deskpilot_policy::console::refused(writes, lands_on, grantee));
        match why {
            Some(w) => Err(ComputerError::new(ErrorCode::Denylisted, w)),
            None => Ok(()),
        }
    }

    /// Refuses activating element `handle` of the window whose tree is `root` when
    /// it shows a password in clear (`reach::reveals_password`: a "Show", an eye,
    /// beside a password field), as the host does (`COMPUTER_SECURE_INPUT`).
    fn reveal_refused(
        s: &Effective,
        facts: Option<&TargetFacts>,
        root: &deskpilot_core::Node,
        handle: &Handle,
    ) -> Result<()> {
        let reveals = root
            .walk()
            .find(|n| &n.handle == handle)
            .is_some_and(|el| deskpilot_policy::reach::reveals_password(el, root));
        if reveals {
            let mut f = facts.cloned().unwrap_or_default();
            f.focused_password = true;
            if let Some(r) = refusals_for(s).check_input(&f) {
                return Err(refused(r));
            }
        }
        Ok(())
    }

    /// Refuses input into `window` while a password field could receive it (for an
    /// act, `element` is the element written to).
    async fn secure_input(
        &self,
        s: &Effective,
        facts: Option<&TargetFacts>,
        window: &Handle,
        element: Option<&Handle>,
        typing: bool,
        keys: Option<(Option<&str>, Option<&str>)>,
    ) -> Result<()> {
        let snap = match self
            .inner
            .snapshot(SnapshotParams::whole(window.clone()))
            .await
        {
            Ok(snap) => snap,
            // A window without a tree (an X11 app with no accessibility) shows no
            // password field anything could know of.
            Err(e) if e.code == ErrorCode::AccessibilityDisabled && element.is_none() => {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let password = match element {
            Some(h) => {
                let here = snap.root.walk().find(|n| &n.handle == h);
                let written_is_password = match here {
                    Some(n) => is_password(n),
                    // Outside the plain read (off screen, past a cap): that element
                    // alone is read; one that cannot be read is taken for a password
                    // field (fail closed).
                    None => self
                        .inner
                        .snapshot(SnapshotParams {
                            scope: Some(h.clone()),
                            depth: Some(0),
                            max_nodes: Some(1),
                            ..SnapshotParams::whole(window.clone())
                        })
                        .await
                        .map_or(true, |one| is_password(&one.root)),
                };
                written_is_password || typing && input_may_reach_password(&snap.root)
            }
            // Keys that press a toggle showing a password in clear are secure
            // input, as on the host.
            None => {
                input_may_reach_password(&snap.root)
                    || keys.is_some_and(|(chord, text)| {
                        deskpilot_policy::input::keys_reveal_password(chord, text, &snap.root)
                    })
            }
        };
        if password {
            let mut f = facts.cloned().unwrap_or_default();
            f.focused_password = true;
            if let Some(r) = refusals_for(s).check_input(&f) {
                return Err(refused(r));
            }
        }
        Ok(())
    }

    /// Writes one audit line on this machine; a failed write is logged, never fatal.
    fn audit<T>(
        &self,
        event: AuditEvent,
        op: &str,
        facts: Option<&TargetFacts>,
        text_len: Option<usize>,
        r: &Result<T>,
    ) {
        let refusal = r.as_ref().err().is_some_and(|e| {
            matches!(
                e.code,
                ErrorCode::SecureInput
                    | ErrorCode::Denylisted
                    | ErrorCode::SelfTarget
                    | ErrorCode::TargetElevated
                    | ErrorCode::ScopeViolation
                    | ErrorCode::FeatureDisabled
                    | ErrorCode::StoppedByUser
            )
        });
        let rec = AuditRecord {
            time: now_rfc3339(),
            session: "driver".into(),
            event: Some(if refusal { AuditEvent::Refusal } else { event }),
            app: facts.map(|f| f.app.clone()),
            pid: facts.and_then(|f| f.pid),
            op: Some(op.into()),
            text_len,
            status: Some(
                match r {
                    Ok(_) => "executed",
                    Err(_) if refusal => "refused",
                    Err(_) => "failed",
                }
                .into(),
            ),
            code: r.as_ref().err().map(|e| e.code.as_str().into()),
            ..AuditRecord::default()
        };
        if let Err(e) = self.o.audit.append(&rec) {
            tracing::warn!(error = %e, "driver audit write failed");
        }
    }
}

#[async_trait]
impl Driver for Guarded {
    async fn hello(&self) -> Result<Hello> {
        self.inner.hello().await
    }

    /// The apps, with each process's uid, executable and pty master filled in from this
    /// machine's `/proc`: a host on another machine judges its refusals on these
    /// facts and never looks a remote pid up on its own machine.
    async fn apps(&self) -> Result<Vec<AppInfo>> {
        self.admit()?;
        let mut apps = self.inner.apps().await?;
        for a in &mut apps {
            if let Some(p) = a.pid {
                a.uid = a.uid.or_else(|| control::process_uid(p));
                a.exe = a
                    .exe
                    .take()
                    .or_else(|| control::process_exe(p).or_else(|| control::process_comm(p)));
                a.pty_master = a.pty_master.or_else(|| control::holds_pty_master(p));
            }
        }
        Ok(apps)
    }

    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult> {
        let len = Some(p.command.join(" ").chars().count());
        let r = async {
            let s = self.admit()?;
            Self::effects_allowed(&s)?;
            vet_launch(&p.command, &refusals_for(&s))?;
            self.inner.launch(p).await
        }
        .await;
        self.audit(AuditEvent::Action, "launch", None, len, &r);
        r
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>> {
        self.admit()?;
        self.inner.windows().await
    }

    async fn activate(&self, p: ActivateParams) -> Result<Empty> {
        self.admit_window(&p.window).await?;
        self.inner.activate(p).await
    }

    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot> {
        self.admit_window(&p.window).await?;
        if let Some(h) = &p.scope {
            same_app(&p.window, h)?;
        }
        self.inner.snapshot(p).await
    }

    async fn find(&self, p: FindParams) -> Result<FindResult> {
        let s = match &p.window {
            Some(w) => self.admit_window(w).await?.0,
            None => self.admit()?,
        };
        let rules = refusals_for(&s);
        let apps = self.inner.apps().await?;
        let mut r = self.inner.find(p).await?;
        // Matches in refused windows are not served.
        r.matches.retain(|m| {
            apps.iter()
                .find(|a| a.windows.iter().any(|w| w.handle == m.window.handle))
                .is_none_or(|a| {
                    rules
                        .check_window(&window_facts(a, &m.window, true))
                        .is_none()
                })
        });
        Ok(r)
    }

    async fn act(&self, p: ActParams) -> Result<ActResult> {
        let len = p.value.as_ref().map(|v| v.chars().count());
        let mut facts = None;
        let r = async {
            let (s, f) = self.admit_window(&p.window).await?;
            facts = f;
            Self::effects_allowed(&s)?;
            // The element must be the admitted window's app's: a handle of a refused
            // app's element sent with a permitted window would act outside the rules.
            same_app(&p.window, &p.handle)?;
            Self::tier_allows(
                &s,
                facts.as_ref(),
                deskpilot_policy::tier::Tier::of_op(p.op),
                &format!("the act `{}`", p.op.as_str()),
            )?;
            Self::unprotected(&s, p.value.as_deref())?;
            if matches!(p.op, Op::SetValue | Op::Type | Op::Clear) {
                self.secure_input(
                    &s,
                    facts.as_ref(),
                    &p.window,
                    Some(&p.handle),
                    p.op == Op::Type,
                    None,
                )
                .await?;
            }
            // One read of the window for every check on it, made for every act: a
            // click on a toggle that shows a password in clear is secure input, as
            // on the host; a save dialog writes only into this machine's places; a
            // browser's developer tools take no act and a console no text.
            if let Some(root) = self.tree(&p.window).await? {
                if deskpilot_policy::irreversible::op_activates(p.op) {
                    Self::reveal_refused(&s, facts.as_ref(), &root, &p.handle)?;
                }
                let what = Served::Act(p.op, p.value.as_deref(), &p.handle);
                Self::code_surface_refused(&s, facts.as_ref(), &root, what)?;
                Self::field_unprotected(&s, &root, what)?;
                crate::host::files::check_served(&s, what, &root)?;
            }
            let mut r = self.inner.act(p.clone()).await?;
            // The window read after the action is served as a snapshot is: only
            // while the window, as it is now (a page's new title), is still admitted.
            // Otherwise the caller reads it itself and meets the refusal.
            if r.after.is_some() && self.admit_window(&p.window).await.is_err() {
                r.after = None;
            }
            Ok(r)
        }
        .await;
        self.audit(AuditEvent::Action, p.op.as_str(), facts.as_ref(), len, &r);
        r
    }

    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult> {
        self.admit()?;
        self.inner.subscribe(p).await
    }

    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch> {
        self.inner.next_events(subscription, timeout_ms).await
    }

    async fn keys(&self, p: KeysParams) -> Result<InputResult> {
        let len = Some(crate::host::effect::keys_text_len(
            p.chord.as_deref(),
            p.text.as_deref(),
        ));
        let mut facts = None;
        let r = async {
            let (s, f) = self.admit_window(&p.window).await?;
            facts = f;
            Self::effects_allowed(&s)?;
            Self::tier_allows(
                &s,
                facts.as_ref(),
                deskpilot_policy::tier::Tier::Type,
                "pressing keys",
            )?;
            // One step per request, as hosts send them (`session::key_steps`): a
            // chord, or text with a Tab or line break only at its end. Each is then
            // judged here on the window as it is when it arrives — what a Tab moved
            // the focus to included — instead of the rest landing unjudged.
            if crate::session::key_steps(p.chord.as_deref(), p.text.as_deref()).len() > 1 {
                return Err(ComputerError::new(
                    ErrorCode::InvalidArgument,
                    "input.keys takes one step per request on the served machine: one chord, or text with a Tab or line break only at its end; send the rest as further requests, each judged where it lands",
                ));
            }
            Self::unprotected(&s, p.text.as_deref())?;
            // The characters the keys type, as the host judges them.
            if let Some(c) = p.chord.as_deref() {
                Self::unprotected(&s, Some(&deskpilot_policy::input::chord_text(c)))?;
            }
            if let Some(c) = p.chord.as_deref() {
                // What the keys reach, as the host judges it (docs/ARCHITECTURE.md
                // §7.6): keys after a focus move in one chord land unjudged, and a
                // paste needs this machine's clipboard switch.
                if let Some(bad) = deskpilot_policy::reach::lands_after_focus_move(c) {
                    return Err(ComputerError::new(
                        ErrorCode::InvalidArgument,
                        format!(
                            "in {:?} a key is pressed after one that may move the focus or open something: send them as separate chords",
                            deskpilot_core::sanitize::one_line(&bad)
                        ),
                    ));
                }
                if !s.clipboard && deskpilot_policy::reach::pastes(c) {
                    return Err(ComputerError::new(
                        ErrorCode::ScopeViolation,
                        "a paste writes whatever this machine's clipboard holds; its user allows that with `deskpilot config set clipboard true`",
                    ));
                }
                // Never a password a password manager marked (docs/ARCHITECTURE.md
                // §7.20), whatever the host decided.
                for selection in deskpilot_policy::reach::pasted_selections(c) {
                    let offer = self
                        .inner
                        .clipboard_targets(ClipboardTargetsParams { selection })
                        .await?;
                    if let Some(e) = deskpilot_policy::clipboard::marked_refused(
                        "pasting",
                        selection,
                        &offer.targets,
                    ) {
                        return Err(e);
                    }
                }
            }
            // This machine's own switch for desktop shortcuts, whatever the host
            // decided (docs/ARCHITECTURE.md §7.18).
            if let Some(why) = p
                .chord
                .as_deref()
                .filter(|_| !s.system_keys)
                .and_then(deskpilot_policy::system_keys::system_chord)
            {
                return Err(ComputerError::new(
                    ErrorCode::ScopeViolation,
                    format!(
                        "{why}: this machine's desktop shortcuts are off; its user can allow them with `deskpilot config set system_keys true`"
                    ),
                ));
            }
            self.secure_input(
                &s,
                facts.as_ref(),
                &p.window,
                None,
                true,
                Some((p.chord.as_deref(), p.text.as_deref())),
            )
            .await?;
            self.saves_allowed(
                &s,
                facts.as_ref(),
                &p.window,
                Served::Keys(p.chord.as_deref(), p.text.as_deref()),
            )
            .await?;
            self.inner.keys(p.clone()).await
        }
        .await;
        self.audit(AuditEvent::Keys, "keys", facts.as_ref(), len, &r);
        r
    }

    async fn pointer(&self, p: PointerParams) -> Result<InputResult> {
        let mut facts = None;
        let op = format!("pointer_{:?}", p.action).to_lowercase();
        let r = async {
            let (s, f) = self.admit_window(&p.window).await?;
            facts = f;
            Self::effects_allowed(&s)?;
            Self::tier_allows(
                &s,
                facts.as_ref(),
                deskpilot_policy::tier::Tier::Click,
                "a pointer gesture",
            )?;
            // A click on a save dialog's Save button saves like a press of it by
            // handle; the point is the device's, the tree's pixels may be scaled.
            if matches!(
                p.action,
                PointerAction::Click | PointerAction::DoubleClick | PointerAction::Drag
            ) {
                let window = self
                    .inner
                    .windows()
                    .await?
                    .into_iter()
                    .find(|w| w.handle == p.window);
                if let Some(w) = window {
                    let (tx, ty) = w.device_to_tree(f64::from(p.x), f64::from(p.y));
                    let at = (tx.floor() as i32, ty.floor() as i32);
                    self.saves_allowed(
                        &s,
                        facts.as_ref(),
                        &p.window,
                        Served::Pointer(p.action, at),
                    )
                    .await?;
                }
            }
            self.inner.pointer(p.clone()).await
        }
        .await;
        self.audit(AuditEvent::Action, &op, facts.as_ref(), None, &r);
        r
    }

    async fn capture(&self, mut p: CaptureParams) -> Result<CaptureResult> {
        let mut facts = None;
        let r = async {
            p.paint
                .extend(self.admit_pixels(&p.window, &mut facts).await?);
            self.inner.capture(p).await
        }
        .await;
        self.audit(AuditEvent::Capture, "capture", facts.as_ref(), None, &r);
        r
    }

    async fn ocr(&self, mut p: OcrParams) -> Result<OcrResult> {
        let mut facts = None;
        let r = async {
            p.paint
                .extend(self.admit_pixels(&p.window, &mut facts).await?);
            self.inner.ocr(p).await
        }
        .await;
        self.audit(AuditEvent::Capture, "ocr", facts.as_ref(), None, &r);
        r
    }

    async fn clipboard_read(&self) -> Result<ClipboardContent> {
        let r = async {
            Self::clipboard_allowed(&self.admit()?)?;
            let c = self.inner.clipboard_read().await?;
            match deskpilot_policy::clipboard::marked_refused(
                "reading this machine's clipboard",
                Selection::Clipboard,
                &c.targets,
            ) {
                Some(e) => Err(e),
                None => Ok(c),
            }
        }
        .await;
        self.audit(AuditEvent::Capture, "clipboard_read", None, None, &r);
        r
    }

    async fn clipboard_write(&self, p: ClipboardWriteParams) -> Result<ClipboardWritten> {
        let len = Some(p.text.chars().count());
        let r = async {
            let s = self.admit()?;
            Self::effects_allowed(&s)?;
            Self::clipboard_allowed(&s)?;
            self.inner.clipboard_write(p).await
        }
        .await;
        self.audit(AuditEvent::Action, "clipboard_write", None, len, &r);
        r
    }

    async fn clipboard_targets(&self, p: ClipboardTargetsParams) -> Result<ClipboardTargets> {
        // Target names only, never content: what the host needs to refuse a paste.
        self.admit()?;
        self.inner.clipboard_targets(p).await
    }
}

impl Guarded {
    /// This machine's own mode: in `plan` it is read-only, whatever the host asks
    /// (`deskpilot driver` on a machine in plan mode reads and never acts).
    fn effects_allowed(s: &Effective) -> Result<()> {
        if s.mode == deskpilot_policy::mode::Mode::Plan {
            return Err(ComputerError::new(
                ErrorCode::ScopeViolation,
                "this machine's mode is plan (read-only): it serves reads and no effect; its user changes that with `deskpilot config set mode default`",
            ));
        }
        Ok(())
    }

    /// This machine's own clipboard switch, whatever the host decided
    /// (docs/ARCHITECTURE.md §7.20).
    fn clipboard_allowed(s: &Effective) -> Result<()> {
        if s.clipboard {
            return Ok(());
        }
        Err(ComputerError::new(
            ErrorCode::ScopeViolation,
            "this machine's clipboard is off for agents; its user can allow it with `deskpilot config set clipboard true`",
        ))
    }
}

impl Guarded {
    /// Every check of this machine before pixels of `window` are read (its
    /// refusals, its own pixel setting, secure input) and the rectangles it paints
    /// over; `facts` receives the window's, for the audit.
    async fn admit_pixels(
        &self,
        window: &Handle,
        facts: &mut Option<TargetFacts>,
    ) -> Result<Vec<deskpilot_core::Bounds>> {
        let (s, f) = self.admit_window(window).await?;
        facts.clone_from(&f);
        Self::pixels_allowed(&s)?;
        self.secure_input(&s, f.as_ref(), window, None, false, None)
            .await?;
        self.own_paint(&s, window).await
    }

    /// This machine's own `capture` setting allows pixels, whatever the remote
    /// host's grant says.
    fn pixels_allowed(s: &Effective) -> Result<()> {
        if s.capture == deskpilot_policy::grant::Capture::A11yAndPixels {
            return Ok(());
        }
        Err(ComputerError::new(
            ErrorCode::ScopeViolation,
            "pixels are not allowed on the driver's machine: its config has capture = \"a11y-only\"; its user allows them with `deskpilot config set capture a11y-and-pixels`",
        ))
    }

    /// The rectangles this machine paints over in a capture of `window` on its own
    /// read of the tree, whatever the remote host asked to paint: every secret field
    /// and masked text. A window with no tree has none to read.
    async fn own_paint(
        &self,
        s: &Effective,
        window: &Handle,
    ) -> Result<Vec<deskpilot_core::Bounds>> {
        let info = self
            .inner
            .windows()
            .await?
            .into_iter()
            .find(|w| &w.handle == window)
            .ok_or_else(|| {
                ComputerError::new(
                    ErrorCode::ElementNotFound,
                    "no window of this desktop has that handle; list windows with windows.list",
                )
            })?;
        let protected = |p: String| {
            ComputerError::new(
                ErrorCode::ScopeViolation,
                format!(
                    "the window shows deskpilot's own files on the driver's machine ({:?}): it is not captured",
                    deskpilot_core::sanitize::one_line(&p)
                ),
            )
        };
        let rules = refusals_for(s);
        match self
            .inner
            .snapshot(SnapshotParams::whole(window.clone()))
            .await
        {
            Ok(snap) => {
                if let Some(p) = rules.window_shows_protected(&snap.root) {
                    return Err(protected(p));
                }
                let mut paint = crate::host::pixels::paint_rects(&snap.root);
                let (more, _) = crate::host::pixels::ocr_secret_rects(
                    self.inner.as_ref(),
                    &info,
                    Some(&snap.root),
                    &paint,
                )
                .await;
                paint.extend(more);
                Ok(paint)
            }
            Err(e) if e.code == ErrorCode::AccessibilityDisabled => {
                let (paint, texts) =
                    crate::host::pixels::ocr_secret_rects(self.inner.as_ref(), &info, None, &[])
                        .await;
                if let Some(p) = texts.iter().find_map(|t| rules.protected_in(t)) {
                    return Err(protected(p));
                }
                Ok(paint)
            }
            Err(e) => Err(e),
        }
    }
}

/// An element handle of the app that owns `window`: on AT-SPI both are
/// `BUS|PATH` and the bus name (one per app connection) must be the same. An
/// element handle of another shape must be the window itself.
///
/// Errors: `COMPUTER_SCOPE_VIOLATION` naming both handles.
fn same_app(window: &Handle, element: &Handle) -> Result<()> {
    let bus = |h: &Handle| h.as_str().split_once('|').map(|(b, _)| b.to_owned());
    let ok = match (bus(window), bus(element)) {
        (Some(w), Some(e)) => w == e,
        _ => window == element,
    };
    if ok {
        Ok(())
    } else {
        Err(ComputerError::new(
            ErrorCode::ScopeViolation,
            format!(
                "element {element} is not in window {window}'s application; act only on elements of the window you name"
            ),
        ))
    }
}

#[cfg(test)]
mod tests;

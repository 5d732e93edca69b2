//! The one action pipeline (docs/ARCHITECTURE.md §7.11), driven through each of its
//! entry points — `act`, `keys` and a pointer click (`click-at`) — on the fixture
//! desktop, one failing step at a time. For every step the three entry points must
//! fail with the same code and the same sentence, dispatch nothing, and leave the
//! same audit line (event, status, code, app, pid; the op names the entry point).
//! The one step whose code depends on what the effect was aimed with (refs, a
//! target window, a basis) says so in its row.
//!
//! Every test passes its directories explicitly (state, audit, approvals, grant
//! lock, stop record): nothing here reads or changes the process environment.

mod common;

use common::{editor, observe, ref_of, rt, settings};

use std::sync::Arc;

use deskpilot_core::fixture;
use deskpilot_host::audit::AuditLog;
use deskpilot_host::config::Effective;
use deskpilot_host::host::{Basis, Host, HostOptions};
use deskpilot_host::{Observation, Session, StateStore, Target};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::Result;
use deskpilot_protocol::fixture_driver::FixtureDriver;
use deskpilot_protocol::types::PointerAction;
use deskpilot_protocol::{ComputerError, Driver, ErrorCode};

/// The effects `driver` recorded, without the pointer moves that rest the pointer
/// over a point before a press (docs/ARCHITECTURE.md §8).
fn presses(driver: &FixtureDriver) -> usize {
    use deskpilot_protocol::fixture_driver::RecordedAction;
    driver
        .actions()
        .iter()
        .filter(|a| !matches!(a, RecordedAction::Pointer(p) if p.action == PointerAction::Move))
        .count()
}

/// Fixture pids above Linux's PID_MAX_LIMIT, so no real process is looked up.
const EDITOR_PID: u32 = 4_600_812;
const CALC_PID: u32 = 4_600_901;

/// The entry points of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    Act,
    Keys,
    ClickAt,
}

const ENTRIES: [Entry; 3] = [Entry::Act, Entry::Keys, Entry::ClickAt];

impl Entry {
    /// The op its audit lines carry.
    fn op(self, typing: bool) -> &'static str {
        match (self, typing) {
            (Entry::Act, false) => "click",
            (Entry::Act, true) => "type",
            (Entry::Keys, _) => "keys",
            (Entry::ClickAt, _) => "pointer_click",
        }
    }
}

/// One test's desktop and directories.
struct Env {
    dir: tempfile::TempDir,
    driver: Arc<FixtureDriver>,
    key: String,
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = tempfile::Builder::new()
            .prefix(&format!("deskpilot-pipeline-{name}-"))
            .tempdir()
            .unwrap();
        let driver = Arc::new(FixtureDriver::desktop());
        let uid = deskpilot_os::current_uid();
        driver.mutate(|apps| {
            for a in apps.iter_mut() {
                a.info.uid = Some(uid);
                a.info.pid = Some(if a.info.name == "editor" {
                    EDITOR_PID
                } else {
                    CALC_PID
                });
            }
        });
        Env {
            dir,
            driver,
            key: format!("pipeline-{name}"),
        }
    }

    fn audit_path(&self) -> std::path::PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// A host over this desktop with `settings`; its audit log at `audit`.
    fn host_with_audit(&self, settings: Effective, audit: std::path::PathBuf) -> Host {
        let store = StateStore::open_in(&self.dir.path().join("state"), "fixture").unwrap();
        let mut o = HostOptions::new(&self.key, "test", "test", settings);
        o.audit = AuditLog::new(audit);
        o.approvals_path = self.dir.path().join("approvals.json");
        o.desktop_dir = self.dir.path().join("desktop");
        o.runtime_dir = self.dir.path().join("runtime");
        Host::new(
            Session::new(self.driver.clone() as Arc<dyn Driver>, store),
            o,
        )
    }

    fn host(&self, settings: Effective) -> Host {
        self.host_with_audit(settings, self.audit_path())
    }

    fn audit(&self) -> Vec<AuditRecord> {
        std::fs::read_to_string(self.audit_path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect()
    }
}

/// The fixture editor's window (`h:1`).
fn editor_window(
    apps: &mut [deskpilot_protocol::fixture_driver::FixtureApp],
) -> &mut deskpilot_core::Node {
    apps.iter_mut()
        .flat_map(|a| a.windows.iter_mut())
        .find(|w| w.handle.as_str() == "h:1")
        .expect("the fixture has the editor window")
}

/// Adds a "Delete" button to the editor window and gives it focus.
fn focus_a_delete_button(env: &Env) {
    env.driver.mutate(|apps| {
        let root = editor_window(apps);
        root.children.push(
            deskpilot_core::Node::new("h:40", deskpilot_core::Role::Button, "Delete")
                .actions(&["click"])
                .bounds(deskpilot_core::Bounds::new(600, 40, 80, 24)),
        );
        root.child_count = root.children.len() as u64;
        fixture::move_focus(root, "h:40");
    });
}

/// Performs `entry` in the bound window, aimed with what `obs` showed: the first
/// button of the window (or, `typing`, text into the editor's body) for `act`; the
/// chord `ctrl+s` (or the text) for `keys`; a click at (5, 5) of `obs`'s basis.
async fn perform(h: &mut Host, entry: Entry, obs: &Observation, typing: bool) -> Result<()> {
    match entry {
        Entry::Act if typing => {
            let body = ref_of(&obs.text, &["textbox \"Body\""]);
            h.act(&body, deskpilot_core::Op::Type, Some("x".into()))
                .await
                .map(drop)
        }
        Entry::Act => {
            let button = ref_of(&obs.text, &["button \""]);
            h.act(&button, deskpilot_core::Op::Click, None)
                .await
                .map(drop)
        }
        Entry::Keys if typing => h
            .keys(&Target::Current, None, Some("x".into()))
            .await
            .map(drop),
        Entry::Keys => h
            .keys(&Target::Current, Some("ctrl+s".into()), None)
            .await
            .map(drop),
        Entry::ClickAt => {
            let basis = Basis::parse(obs.basis.as_deref().expect("a basis")).unwrap();
            h.pointer(&basis, 5.0, 5.0, PointerAction::Click)
                .await
                .map(drop)
        }
    }
}

/// The failure of one entry point at one step, as the caller and the audit saw it.
#[derive(Debug)]
struct Seen {
    code: ErrorCode,
    message: String,
    /// The last audit line.
    line: AuditRecord,
    /// Actions the driver recorded after the setup.
    dispatched: usize,
}

/// Runs `entry` through one step's failure: `setup` brings the desktop and host
/// to the step (and returns the observation the entry is aimed with), then the entry
/// is performed once.
fn run_step(
    name: &str,
    entry: Entry,
    mode: Mode,
    typing: bool,
    tweak: &dyn Fn(&mut Effective),
    setup: &impl AsyncFn(&Env, &mut Host) -> Observation,
) -> Seen {
    let env = Env::new(&format!("{name}-{entry:?}").to_lowercase());
    let mut s = settings(mode);
    tweak(&mut s);
    let mut h = env.host(s);
    let e = rt().block_on(async {
        let obs = setup(&env, &mut h).await;
        env.driver.take_actions();
        match perform(&mut h, entry, &obs, typing).await {
            Ok(()) => panic!("{name}: {entry:?} succeeded but must fail"),
            Err(e) => e,
        }
    });
    let line = env.audit().pop().expect("an audit line");
    Seen {
        code: e.code,
        message: e.message,
        line,
        dispatched: env.driver.actions().len(),
    }
}

/// Asserts one row: each entry point's expected code, a sentence every message
/// contains, and the audit line of a refusal in `app` (pid `pid`).
#[track_caller]
fn assert_row(
    step: &str,
    seen: &[(Entry, Seen)],
    codes: [ErrorCode; 3],
    sentence: &str,
    app: Option<&str>,
    pid: Option<u32>,
    typing: bool,
) {
    for ((entry, s), code) in seen.iter().zip(codes) {
        assert_eq!(
            s.code,
            code,
            "{step}: {entry:?}: {}: {}",
            s.code.as_str(),
            s.message
        );
        assert!(
            s.message.contains(sentence),
            "{step}: {entry:?}: {sentence:?} not in {:?}",
            s.message
        );
        assert_eq!(s.dispatched, 0, "{step}: {entry:?} dispatched");
        let l = &s.line;
        assert_eq!(
            l.event,
            Some(AuditEvent::Refusal),
            "{step}: {entry:?}: {l:?}"
        );
        assert_eq!(l.status.as_deref(), Some("refused"), "{step}: {entry:?}");
        assert_eq!(l.code.as_deref(), Some(code.as_str()), "{step}: {entry:?}");
        assert_eq!(l.op.as_deref(), Some(entry.op(typing)), "{step}: {entry:?}");
        assert_eq!(l.app.as_deref(), app, "{step}: {entry:?}");
        if pid.is_some() {
            assert_eq!(l.pid, pid, "{step}: {entry:?}");
        }
        assert!(l.grant_id.is_some(), "{step}: {entry:?}: no grant id");
    }
}

fn each(
    step: &str,
    mode: Mode,
    typing: bool,
    tweak: impl Fn(&mut Effective),
    setup: impl AsyncFn(&Env, &mut Host) -> Observation,
) -> Vec<(Entry, Seen)> {
    ENTRIES
        .iter()
        .map(|&entry| (entry, run_step(step, entry, mode, typing, &tweak, &setup)))
        .collect()
}

#[test]
fn a_closed_bound_window_fails_every_entry_point_alike() {
    let seen = each(
        "closed",
        Mode::Bypass,
        false,
        |_| {},
        async |env: &Env, h: &mut Host| {
            let obs = observe(h, &Target::App("calculator".into())).await;
            env.driver
                .mutate(|apps| apps.retain(|a| a.info.name != "gnome-calculator"));
            obs
        },
    );
    assert_row(
        "closed bound window",
        &seen,
        [ErrorCode::StaleRevision; 3],
        "is gone (closed, or its app ended); the grant moved to",
        Some("editor"),
        None,
        false,
    );
}

#[test]
fn a_rebind_since_the_aim_was_taken_fails_every_entry_point() {
    // Aimed at the editor, then the grant moved to the calculator: refs are stale
    // (`act`), a basis is stale (`click-at`), and keys aimed at the editor by name
    // may not follow the grant (`keys` has no refs; it names its window).
    let env_seen: Vec<(Entry, Seen)> = ENTRIES
        .iter()
        .map(|&entry| {
            let env = Env::new(&format!("stale-{entry:?}").to_lowercase());
            let mut h = env.host(settings(Mode::Bypass));
            let e = rt().block_on(async {
                let obs = observe(&mut h, &editor()).await;
                observe(&mut h, &Target::App("calculator".into())).await;
                env.driver.take_actions();
                let r = match entry {
                    Entry::Keys => h
                        .keys(&editor(), Some("ctrl+s".into()), None)
                        .await
                        .map(drop),
                    _ => perform(&mut h, entry, &obs, false).await,
                };
                r.expect_err("a stale aim must fail")
            });
            let line = env.audit().pop().unwrap();
            let dispatched = env.driver.actions().len();
            (
                entry,
                Seen {
                    code: e.code,
                    message: e.message,
                    line,
                    dispatched,
                },
            )
        })
        .collect();
    assert_row(
        "stale aim",
        &env_seen,
        [
            ErrorCode::StaleRevision,
            ErrorCode::ScopeViolation,
            ErrorCode::StaleBasis,
        ],
        "",
        Some("gnome-calculator"),
        None,
        false,
    );
    assert!(env_seen[0].1.message.contains("observe --window"));
    assert!(
        env_seen[1]
            .1
            .message
            .contains("observe the other window first")
    );
    assert!(
        env_seen[2]
            .1
            .message
            .contains("observe again for a new basis")
    );
}

#[test]
fn a_spent_budget_fails_every_entry_point_alike() {
    let seen = each(
        "budget",
        Mode::Bypass,
        false,
        |s| s.action_budget = 1,
        async |_env: &Env, h: &mut Host| {
            let obs = observe(h, &editor()).await;
            // Spend the one action on something else.
            h.keys(&Target::Current, Some("Tab".into()), None)
                .await
                .unwrap();
            obs
        },
    );
    assert_row(
        "spent budget",
        &seen,
        [ErrorCode::BudgetExhausted; 3],
        "action budget",
        Some("editor"),
        None,
        false,
    );
}

#[test]
fn input_that_could_reach_a_password_field_fails_every_entry_point_alike() {
    let seen = each(
        "secure",
        Mode::Bypass,
        true,
        |_| {},
        async |env: &Env, h: &mut Host| {
            let obs = observe(h, &editor()).await;
            // The user clicked into the password field.
            env.driver.mutate(|apps| {
                let root = editor_window(apps);
                fixture::move_focus(root, "h:24");
            });
            obs
        },
    );
    assert_row(
        "secure input",
        &seen,
        [ErrorCode::SecureInput; 3],
        "password",
        Some("editor"),
        Some(EDITOR_PID),
        true,
    );
    for (entry, s) in &seen {
        if *entry != Entry::ClickAt {
            assert_eq!(
                s.line.text_len,
                Some(1),
                "{entry:?}: the length, never the text"
            );
        }
    }
}

#[test]
fn a_refusal_that_applies_since_the_bind_fails_every_entry_point_alike() {
    let seen = each(
        "denied",
        Mode::Bypass,
        false,
        |_| {},
        async |env: &Env, h: &mut Host| {
            let obs = observe(h, &editor()).await;
            // Since the bind, the editor's process became one on the built-in
            // deny-list (the refusals run again on every call).
            env.driver.mutate(|apps| {
                for a in apps.iter_mut().filter(|a| a.info.name == "editor") {
                    a.info.name = "keepassxc".into();
                }
            });
            obs
        },
    );
    assert_row(
        "window refusal",
        &seen,
        [ErrorCode::Denylisted; 3],
        "\"keepassxc\"",
        Some("keepassxc"),
        None,
        false,
    );
}

#[test]
fn a_needed_confirmation_stops_every_entry_point_alike() {
    let seen = each(
        "confirm",
        Mode::Default,
        false,
        |_| {},
        async |_env: &Env, h: &mut Host| observe(h, &editor()).await,
    );
    assert_row(
        "confirmation",
        &seen,
        [ErrorCode::ConfirmationRequired; 3],
        "needs the user's confirmation. Ask them to run `deskpilot approve",
        Some("editor"),
        Some(EDITOR_PID),
        false,
    );
}

#[test]
fn plan_mode_refuses_every_entry_point_alike() {
    let seen = each(
        "plan",
        Mode::Plan,
        false,
        |_| {},
        async |_env: &Env, h: &mut Host| observe(h, &editor()).await,
    );
    assert_row(
        "plan mode",
        &seen,
        [ErrorCode::ScopeViolation; 3],
        "plan mode is read-only",
        // Plan mode refuses before a window is read.
        None,
        None,
        false,
    );
}

#[test]
fn an_audit_that_cannot_be_written_is_reported_and_never_fails_the_effect() {
    for entry in ENTRIES {
        let env = Env::new(&format!("audit-{entry:?}").to_lowercase());
        // The log's path is a directory: every append fails.
        let bad = env.dir.path().join("audit-is-a-dir");
        std::fs::create_dir_all(&bad).unwrap();
        let mut h = env.host_with_audit(settings(Mode::Bypass), bad);
        rt().block_on(async {
            let obs = observe(&mut h, &editor()).await;
            env.driver.take_actions();
            perform(&mut h, entry, &obs, false)
                .await
                .unwrap_or_else(|e| panic!("{entry:?}: {} {}", e.code.as_str(), e.message));
        });
        assert_eq!(presses(&env.driver), 1, "{entry:?} was dispatched");
        let w = h.warnings().join("\n");
        assert!(
            w.contains("audit log not written") && w.contains("the action itself was not affected"),
            "{entry:?}: {w:?}"
        );
        assert_eq!(
            h.grant_view().unwrap().actions_left,
            199,
            "{entry:?} spent one"
        );
    }
}

#[test]
fn every_entry_point_that_succeeds_is_audited_and_spent_alike() {
    for entry in ENTRIES {
        let env = Env::new(&format!("ok-{entry:?}").to_lowercase());
        let mut h = env.host(settings(Mode::Bypass));
        let rev = rt().block_on(async {
            let obs = observe(&mut h, &editor()).await;
            perform(&mut h, entry, &obs, false)
                .await
                .unwrap_or_else(|e| panic!("{entry:?}: {} {}", e.code.as_str(), e.message));
            obs.grant.unwrap().revision
        });
        let line = env.audit().pop().unwrap();
        let event = if entry == Entry::Keys {
            AuditEvent::Keys
        } else {
            AuditEvent::Action
        };
        assert_eq!(line.event, Some(event), "{entry:?}");
        assert_eq!(line.status.as_deref(), Some("executed"), "{entry:?}");
        assert_eq!(line.op.as_deref(), Some(entry.op(false)), "{entry:?}");
        assert_eq!(line.app.as_deref(), Some("editor"), "{entry:?}");
        assert_eq!(line.pid, Some(EDITOR_PID), "{entry:?}");
        assert!(line.channel.is_some(), "{entry:?}: the channel is named");
        assert_eq!(line.code, None, "{entry:?}");
        let g = h.grant_view().unwrap();
        assert_eq!(g.actions_left, 199, "{entry:?}");
        assert_eq!(g.revision, rev, "{entry:?}: an effect never rebinds");
        // The window's refs stay usable: a second act under the same revision works.
        rt().block_on(async {
            let obs = observe(&mut h, &Target::Current).await;
            perform(&mut h, Entry::Act, &obs, false).await.unwrap();
        });
    }
}

#[test]
fn keys_and_pointer_input_never_make_stale_refs_current_again() {
    let env = Env::new("restamp");
    let mut h = env.host(settings(Mode::Bypass));
    rt().block_on(async {
        let obs = observe(&mut h, &editor()).await;
        let save = ref_of(&obs.text, &["button \"Save\""]);
        observe(&mut h, &Target::App("calculator".into())).await;
        // The calculator closes: the grant falls back to the editor, a new revision.
        env.driver
            .mutate(|apps| apps.retain(|a| a.info.name != "gnome-calculator"));
        let e = h.keys(&Target::Current, Some("Tab".into()), None).await;
        assert_eq!(e.unwrap_err().code, ErrorCode::StaleRevision);
        for _ in 0..2 {
            let e = h.act(&save, deskpilot_core::Op::Click, None).await;
            let e = e.expect_err("refs from an older revision stay stale");
            assert_eq!(e.code, ErrorCode::StaleRevision, "{}", e.message);
            h.keys(&Target::Current, Some("Tab".into()), None)
                .await
                .unwrap();
        }
        // Observing the window again makes them current.
        observe(&mut h, &Target::Current).await;
        h.act(&save, deskpilot_core::Op::Click, None).await.unwrap();
    });
}

#[test]
fn an_approval_is_for_one_effect_only() {
    let env = Env::new("approval-scope");
    let approvals = env.dir.path().join("approvals.json");
    let approval_id = |e: &ComputerError| {
        assert_eq!(e.code, ErrorCode::ConfirmationRequired, "{}", e.message);
        e.detail.as_ref().unwrap()["approval_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut h = env.host(settings(Mode::Default));
    rt().block_on(async {
        observe(&mut h, &editor()).await;
        // Typed text "Return" approved is not the chord Return.
        let text = approval_id(
            &h.keys(&Target::Current, None, Some("Return".into()))
                .await
                .unwrap_err(),
        );
        deskpilot_host::host::approve(&approvals, &text).unwrap();
        let chord = approval_id(
            &h.keys(&Target::Current, Some("Return".into()), None)
                .await
                .unwrap_err(),
        );
        assert_ne!(chord, text);
        // Other text is another action too.
        let other = approval_id(
            &h.keys(&Target::Current, None, Some("Returm".into()))
                .await
                .unwrap_err(),
        );
        assert_ne!(other, text);
        assert!(env.driver.actions().is_empty(), "nothing ran unapproved");
        h.keys(&Target::Current, None, Some("Return".into()))
            .await
            .unwrap();
    });
    assert_eq!(env.driver.actions().len(), 1, "the approved text ran");
    // A click approved at one point is not a click at another (a fresh session: the
    // first approved use above made the editor an approved app of that one).
    let env = Env::new("approval-point");
    let approvals = env.dir.path().join("approvals.json");
    let mut h = env.host(settings(Mode::Default));
    rt().block_on(async {
        let obs = observe(&mut h, &editor()).await;
        let basis = Basis::parse(obs.basis.as_deref().unwrap()).unwrap();
        let here = approval_id(
            &h.pointer(&basis, 5.0, 5.0, PointerAction::Click)
                .await
                .unwrap_err(),
        );
        deskpilot_host::host::approve(&approvals, &here).unwrap();
        let there = approval_id(
            &h.pointer(&basis, 50.0, 5.0, PointerAction::Click)
                .await
                .unwrap_err(),
        );
        assert_ne!(here, there);
        h.pointer(&basis, 5.0, 5.0, PointerAction::Click)
            .await
            .unwrap();
    });
    assert_eq!(presses(&env.driver), 1, "the approved click ran");
}

#[test]
fn typing_a_space_or_a_line_break_into_a_focused_irreversible_control_asks_first() {
    let env = Env::new("activating-text");
    focus_a_delete_button(&env);
    let mut s = settings(Mode::AcceptEdits);
    s.allow_all_apps = true;
    let mut h = env.host(s);
    rt().block_on(async {
        observe(&mut h, &editor()).await;
        for text in [" ", "a\n", "x\r"] {
            let e = h
                .keys(&Target::Current, None, Some(text.into()))
                .await
                .expect_err("activating text on Delete must ask");
            assert_eq!(
                e.code,
                ErrorCode::ConfirmationRequired,
                "{text:?}: {}",
                e.message
            );
            assert!(
                e.message.contains("irreversible"),
                "{text:?}: {}",
                e.message
            );
        }
        for chord in ["space", "Return", "ctrl+KP_Enter"] {
            let e = h
                .keys(&Target::Current, Some(chord.into()), None)
                .await
                .expect_err("an activating key on Delete must ask");
            assert_eq!(
                e.code,
                ErrorCode::ConfirmationRequired,
                "{chord}: {}",
                e.message
            );
        }
        assert!(env.driver.actions().is_empty(), "nothing ran unconfirmed");
        // Keys that do not activate the control run.
        h.keys(&Target::Current, Some("Tab".into()), None)
            .await
            .unwrap();
        h.keys(&Target::Current, None, Some("abc".into()))
            .await
            .unwrap();
    });
    assert_eq!(env.driver.actions().len(), 2);
}

#[test]
fn a_damaged_or_forged_approvals_file_holds_no_approval_and_the_audit_says_how_an_action_was_approved()
 {
    let env = Env::new("approvals-damaged");
    let approvals = env.dir.path().join("approvals.json");
    // A file "approved" by hand, then damaged: it approves nothing and is recreated.
    std::fs::write(&approvals, "{\"items\":[{\"id\":\"x\",\"approved\":true").unwrap();
    let mut h = env.host(settings(Mode::Default));
    rt().block_on(async {
        observe(&mut h, &editor()).await;
        let e = h
            .keys(&Target::Current, None, Some("hi".into()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ConfirmationRequired, "{}", e.message);
        let id = e.detail.as_ref().unwrap()["approval_id"]
            .as_str()
            .unwrap()
            .to_string();
        let text = std::fs::read_to_string(&approvals).unwrap();
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_ok(),
            "recreated: {text}"
        );
        assert!(env.driver.actions().is_empty());
        // "Approved" by another program editing the file: no seal, no yes.
        let forged = std::fs::read_to_string(&approvals)
            .unwrap()
            .replace("\"approved\":false", "\"approved\":true");
        assert!(forged.contains("\"approved\":true"), "{forged}");
        std::fs::write(&approvals, forged).unwrap();
        let e = h
            .keys(&Target::Current, None, Some("hi".into()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ConfirmationRequired, "{}", e.message);
        assert!(
            env.driver.actions().is_empty(),
            "a forged approval ran nothing"
        );
        deskpilot_host::host::approve(&approvals, &id).unwrap();
        h.keys(&Target::Current, None, Some("hi".into()))
            .await
            .unwrap();
        let last = env.audit().into_iter().last().unwrap();
        assert_eq!(
            last.approved_by.as_deref(),
            Some(format!("approve:{id}").as_str())
        );
    });
    assert_eq!(env.driver.actions().len(), 1);
}

#[test]
fn a_config_changed_while_the_host_runs_applies_to_its_next_call() {
    let env = Env::new("reload");
    let config = env.dir.path().join("config.toml");
    std::fs::write(&config, "enabled = true\nmode = \"bypass\"\n").unwrap();
    let store = StateStore::open_in(&env.dir.path().join("state"), "fixture").unwrap();
    let mut o = HostOptions::new(&env.key, "test", "mcp", settings(Mode::Bypass));
    o.audit = AuditLog::new(env.audit_path());
    o.approvals_path = env.dir.path().join("approvals.json");
    o.desktop_dir = env.dir.path().join("desktop");
    o.runtime_dir = env.dir.path().join("runtime");
    let path = config.clone();
    o.reload = Some(Arc::new(move || {
        deskpilot_host::config::Config::load_from(&path).map(|c| c.effective(false))
    }));
    let mut h = Host::new(
        Session::new(env.driver.clone() as Arc<dyn Driver>, store),
        o,
    );
    rt().block_on(async {
        observe(&mut h, &editor()).await;
        h.keys(&Target::Current, Some("F5".into()), None)
            .await
            .unwrap();
        // The user narrows the mode: the running host's next call is read-only.
        std::fs::write(&config, "enabled = true\nmode = \"plan\"\n").unwrap();
        let e = h
            .keys(&Target::Current, Some("F5".into()), None)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ScopeViolation, "{}", e.message);
        assert!(e.message.contains("plan"), "{}", e.message);
        // A config that cannot be read runs nothing.
        std::fs::write(&config, "mode = [").unwrap();
        h.keys(&Target::Current, Some("F5".into()), None)
            .await
            .unwrap_err();
        // Turned off: every call answers so.
        std::fs::write(&config, "enabled = false\n").unwrap();
        let e = h
            .keys(&Target::Current, Some("F5".into()), None)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::FeatureDisabled, "{}", e.message);
    });
    assert_eq!(env.driver.actions().len(), 1, "only the first F5 ran");
}

#[test]
fn a_used_approval_stays_used_when_the_file_is_rolled_back() {
    let env = Env::new("approval-rollback");
    focus_a_delete_button(&env);
    let approvals = env.dir.path().join("approvals.json");
    let mut h = env.host(settings(Mode::Default));
    rt().block_on(async {
        observe(&mut h, &editor()).await;
        let space = || Some("space".to_string());
        let e = h.keys(&Target::Current, space(), None).await.unwrap_err();
        let id = e.detail.as_ref().unwrap()["approval_id"]
            .as_str()
            .unwrap()
            .to_string();
        deskpilot_host::host::approve(&approvals, &id).unwrap();
        let approved_copy = std::fs::read_to_string(&approvals).unwrap();
        h.keys(&Target::Current, space(), None).await.unwrap();
        // An old copy of the file, from before the use, is put back.
        std::fs::write(&approvals, approved_copy).unwrap();
        let e = h.keys(&Target::Current, space(), None).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::ConfirmationRequired, "{}", e.message);
    });
    assert_eq!(
        env.driver.actions().len(),
        1,
        "the approval ran its action once"
    );
}

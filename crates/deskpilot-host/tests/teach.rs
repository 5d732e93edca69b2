//! Teach mode's host side (docs/ARCHITECTURE.md §7.19) on the fixture desktop, with
//! a scripted presence standing in for the person at the bubble: Next dispatches
//! the step once, judged again on the window as it is then; a label the app changed
//! while the bubble was up is refused with nothing dispatched; Exit dispatches
//! nothing and ends teaching. The X11 bubble itself is tested under Xvfb
//! (`deskpilot-driver-linux/tests/presence.rs`, `deskpilot/tests/presence.rs`).

mod common;

use common::{assert_code, editor, failed, observe, ref_of, rt, settings};

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use deskpilot_core::{Bounds, Node, Op, Role};
use deskpilot_host::audit::AuditLog;
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::presence::{Presence, TeachAnswer};
use deskpilot_host::{Session, StateStore};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::fixture_driver::FixtureDriver;
use deskpilot_protocol::{Driver, ErrorCode};

/// Fixture pids above Linux's PID_MAX_LIMIT, so no real process is looked up.
const EDITOR_PID: u32 = 4_600_813;

/// The person at the bubble: answers every teach with `answer`, after running
/// `meanwhile` (what the app does while the bubble is up). Records each bubble's
/// text.
struct Person {
    answer: TeachAnswer,
    meanwhile: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    bubbles: Mutex<Vec<String>>,
}

impl Presence for Person {
    fn frame(&self, _: Option<Bounds>) {}
    fn indicator(&self, _: Option<String>) {}
    fn aim(&self, _: i32, _: i32) {}
    fn press(&self) {}
    fn clear(&self) {}
    fn teach(&self, _: Bounds, text: &str) -> Receiver<TeachAnswer> {
        self.bubbles.lock().unwrap().push(text.to_owned());
        if let Some(f) = self.meanwhile.lock().unwrap().take() {
            f();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(self.answer).unwrap();
        rx
    }
    fn end_teach(&self) {}
}

struct Env {
    dir: tempfile::TempDir,
    driver: Arc<FixtureDriver>,
}

impl Env {
    /// The fixture desktop with a "Continue" button in the editor window.
    fn new(name: &str) -> Env {
        let dir = tempfile::Builder::new()
            .prefix(&format!("deskpilot-teach-{name}-"))
            .tempdir()
            .unwrap();
        let driver = Arc::new(FixtureDriver::desktop());
        let uid = deskpilot_os::current_uid();
        driver.mutate(|apps| {
            for a in apps.iter_mut() {
                a.info.uid = Some(uid);
                a.info.pid = Some(EDITOR_PID);
            }
            let root = apps
                .iter_mut()
                .flat_map(|a| a.windows.iter_mut())
                .find(|w| w.handle.as_str() == "h:1")
                .expect("the fixture has the editor window");
            root.children.push(
                Node::new("h:41", Role::Button, "Continue")
                    .actions(&["click"])
                    .bounds(Bounds::new(600, 40, 80, 24)),
            );
            root.child_count = root.children.len() as u64;
        });
        Env { dir, driver }
    }

    fn host(&self, person: Arc<Person>) -> Host {
        let store = StateStore::open_in(&self.dir.path().join("state"), "fixture").unwrap();
        let mut s = settings(Mode::AcceptEdits);
        s.allow_apps = vec!["editor".into()];
        s.presence = true;
        let mut o = HostOptions::new("teach-test", "test", "test", s);
        o.audit = AuditLog::new(self.dir.path().join("audit.jsonl"));
        o.approvals_path = self.dir.path().join("approvals.json");
        o.desktop_dir = self.dir.path().join("desktop");
        o.runtime_dir = self.dir.path().join("runtime");
        o.presence = Some(person);
        Host::new(
            Session::new(self.driver.clone() as Arc<dyn Driver>, store),
            o,
        )
    }

    fn audit(&self) -> Vec<AuditRecord> {
        std::fs::read_to_string(self.dir.path().join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn person(answer: TeachAnswer, meanwhile: Option<Box<dyn FnOnce() + Send>>) -> Arc<Person> {
    Arc::new(Person {
        answer,
        meanwhile: Mutex::new(meanwhile),
        bubbles: Mutex::new(Vec::new()),
    })
}

/// Next runs the step once: one click dispatched, one action audited (the
/// bubble's pass is no record), and the bubble said what Next would do.
#[test]
fn next_dispatches_the_step_once() {
    let env = Env::new("next");
    let p = person(TeachAnswer::Next, None);
    let mut h = env.host(p.clone());
    rt().block_on(async {
        let obs = observe(&mut h, &editor()).await;
        let r = ref_of(&obs.text, &["button \"Continue\""]);
        env.driver.take_actions();
        let out = h
            .teach_step(&r, "This goes on to the next page", Op::Click, None)
            .await
            .unwrap_or_else(|e| panic!("{}: {}", e.code.as_str(), e.message));
        assert_eq!(out.op, Op::Click);
    });
    assert_eq!(env.driver.actions().len(), 1, "{:?}", env.driver.actions());
    let bubbles = p.bubbles.lock().unwrap().clone();
    assert_eq!(
        bubbles,
        ["This goes on to the next page [Next: click button \"Continue\"]"]
    );
    let acts: Vec<_> = env
        .audit()
        .into_iter()
        .filter(|r| matches!(r.event, Some(AuditEvent::Action | AuditEvent::Refusal)))
        .collect();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0].event, Some(AuditEvent::Action));
}

/// Runs a teach step on "Continue" while the app renames it to `to` behind the
/// bubble; returns the step's error and what was dispatched.
fn renamed_behind_the_bubble(to: &'static str) -> (deskpilot_protocol::ComputerError, usize) {
    let env = Env::new("swap");
    let driver = env.driver.clone();
    let swap: Box<dyn FnOnce() + Send> = Box::new(move || {
        driver.mutate(|apps| {
            for w in apps.iter_mut().flat_map(|a| a.windows.iter_mut()) {
                for n in w
                    .children
                    .iter_mut()
                    .filter(|n| n.handle.as_str() == "h:41")
                {
                    n.name = to.into();
                }
            }
        });
    });
    let mut h = env.host(person(TeachAnswer::Next, Some(swap)));
    let e = rt().block_on(async {
        let obs = observe(&mut h, &editor()).await;
        let r = ref_of(&obs.text, &["button \"Continue\""]);
        env.driver.take_actions();
        failed(h.teach_step(&r, "This is harmless", Op::Click, None).await)
    });
    (e, env.driver.actions().len())
}

/// The app renames the button while the bubble is up: Next does not press what
/// the person never saw. A harmless new label is refused as a changed element; an
/// irreversible one is judged again and asks first. Nothing is dispatched.
#[test]
fn a_label_changed_behind_the_bubble_is_not_pressed() {
    let (e, sent) = renamed_behind_the_bubble("Proceed");
    assert_code(&e, ErrorCode::StaleRef);
    assert!(e.message.contains("Proceed"), "{}", e.message);
    assert_eq!(sent, 0);
    let (e, sent) = renamed_behind_the_bubble("Delete all files");
    assert_code(&e, ErrorCode::ConfirmationRequired);
    assert_eq!(sent, 0);
}

/// Exit dispatches nothing, and every later teach step is refused.
#[test]
fn exit_ends_teaching() {
    let env = Env::new("exit");
    let mut h = env.host(person(TeachAnswer::Exit, None));
    rt().block_on(async {
        let obs = observe(&mut h, &editor()).await;
        let r = ref_of(&obs.text, &["button \"Continue\""]);
        env.driver.take_actions();
        let e = failed(h.teach_step(&r, "Go on", Op::Click, None).await);
        assert_code(&e, ErrorCode::ConfirmationRequired);
        assert!(h.teaching_over());
        let e = failed(h.teach_step(&r, "Go on", Op::Click, None).await);
        assert_code(&e, ErrorCode::ScopeViolation);
    });
    assert!(
        env.driver.actions().is_empty(),
        "{:?}",
        env.driver.actions()
    );
}

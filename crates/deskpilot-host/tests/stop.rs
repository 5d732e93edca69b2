//! Stop (docs/ARCHITECTURE.md §7): `deskpilot stop` revokes the grant, aborts the run,
//! and refuses agent-issued grants for 30 s; a user-issued grant clears the cooldown.
//! A stop record affects every host of a runtime directory, so each test passes its
//! hosts a runtime directory of its own (`HostOptions::runtime_dir`) and writes the
//! record there.

mod common;

use common::{assert_code, editor, failed, observe, ref_of, rt};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use deskpilot_core::Op;
use deskpilot_host::audit::AuditLog;
use deskpilot_host::config::{Config, Effective};
use deskpilot_host::control;
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::session::WaitFor;
use deskpilot_host::{ObserveOptions, Session, StateStore};
use deskpilot_policy::audit::{AuditEvent, AuditRecord};
use deskpilot_policy::grant::{Issuer, STOP_COOLDOWN_MS, Scope};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::fixture_driver::FixtureDriver;
use deskpilot_protocol::{Driver, ErrorCode};

/// Fixture pids moved above Linux's PID_MAX_LIMIT (4,194,304), so no real process is
/// ever looked up for them.
const EDITOR_PID: u32 = 4_600_812;
const CALC_PID: u32 = 4_600_901;

fn my_uid() -> u32 {
    deskpilot_os::current_uid()
}

struct Env {
    name: String,
    dir: tempfile::TempDir,
    driver: Arc<FixtureDriver>,
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = tempfile::Builder::new()
            .prefix(&format!("deskpilot-stop-{name}-"))
            .tempdir()
            .unwrap();
        let driver = Arc::new(FixtureDriver::desktop());
        let uid = my_uid();
        driver.mutate(|apps| {
            for a in apps.iter_mut() {
                a.info.uid = Some(uid);
                a.info.pid = Some(match a.info.name.as_str() {
                    "editor" => EDITOR_PID,
                    _ => CALC_PID,
                });
            }
        });
        Env {
            name: name.into(),
            dir,
            driver,
        }
    }

    fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// This test's runtime directory: its stop record and grant lock.
    fn runtime(&self) -> PathBuf {
        self.dir.path().join("runtime")
    }

    fn host(&self) -> Host {
        let mut s: Effective = Config::default().effective(true);
        s.enabled = true;
        s.mode = Mode::Bypass;
        s.deny_apps = Vec::new();
        s.self_apps = Vec::new();
        s.action_budget = 200;
        s.idle_expiry_ms = 600_000;
        let store = StateStore::open_in(&self.dir.path().join("state"), "fixture").unwrap();
        let mut o = HostOptions::new(&format!("stop-{}", self.name), "test", "test", s);
        o.audit = AuditLog::new(self.audit_path());
        o.approvals_path = self.dir.path().join("approvals.json");
        o.prompt = None;
        o.desktop_dir = self.runtime();
        o.runtime_dir = self.runtime();
        Host::new(
            Session::new(self.driver.clone() as Arc<dyn Driver>, store),
            o,
        )
    }

    fn audit(&self) -> Vec<AuditRecord> {
        std::fs::read_to_string(self.audit_path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
            .collect()
    }
}

#[track_caller]
#[test]
fn a_stop_revokes_the_grant_and_refuses_agent_grants_until_the_user_grants() {
    let env = Env::new("cooldown");
    rt().block_on(async {
        let mut h = env.host();
        let obs = observe(&mut h, &editor()).await;
        let agent = obs.grant.clone().unwrap();
        let save = ref_of(&obs.text, &["button \"Save\""]);

        let rec = control::write_stop_in(&env.runtime(), control::now_ms()).unwrap();
        assert_eq!(rec.until_ms, rec.at_ms + STOP_COOLDOWN_MS);
        let e = failed(h.act(&save, Op::Click, None).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        assert!(h.grant_view().is_none(), "the grant was revoked");
        // Every agent call is refused during the cooldown, reads included.
        let e = failed(h.observe(&editor(), &ObserveOptions::default()).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        assert!(env.driver.actions().is_empty());
        assert_eq!(
            control::read_grant_lock_in(&env.runtime(), &format!("stop-{}", env.name))
                .unwrap()
                .pid,
            0
        );

        // The user issues a grant: the cooldown is over.
        let user = h.issue_user_grant(Scope::Desktop, &editor()).await.unwrap();
        assert_eq!(user.issuer, Issuer::User);
        assert_ne!(user.grant_id, agent.grant_id);
        assert!(
            control::read_stop_in(&env.runtime()).is_none(),
            "the stop record is cleared"
        );
        let obs = observe(&mut h, &editor()).await;
        assert_eq!(obs.grant.as_ref().unwrap().grant_id, user.grant_id);
        h.act(&save, Op::Click, None).await.unwrap();
        assert_eq!(env.driver.actions().len(), 1);

        // Revoked, the next agent call gets a new agent grant.
        h.revoke().unwrap();
        let next = observe(&mut h, &editor()).await.grant.unwrap();
        assert_eq!(next.issuer, Issuer::Agent);
        assert_ne!(next.grant_id, user.grant_id);
        assert_ne!(next.grant_id, agent.grant_id);
    });
    let records = env.audit();
    let stopped: Vec<&AuditRecord> = records
        .iter()
        .filter(|r| r.event == Some(AuditEvent::GrantStopped))
        .collect();
    assert_eq!(stopped.len(), 1);
    assert!(
        stopped[0]
            .grant_id
            .as_deref()
            .is_some_and(|id| id.starts_with("g-"))
    );
    let refusals = records
        .iter()
        .filter(|r| r.code.as_deref() == Some("COMPUTER_STOPPED_BY_USER"))
        .count();
    assert_eq!(refusals, 2);
}

#[test]
fn a_damaged_stop_record_means_stopped_until_the_user_grants() {
    let env = Env::new("damaged");
    rt().block_on(async {
        let mut h = env.host();
        observe(&mut h, &editor()).await;
        std::fs::create_dir_all(env.runtime()).unwrap();
        std::fs::write(env.runtime().join("stop.json"), "{\"at_ms\": ").unwrap();
        let e = failed(h.observe(&editor(), &ObserveOptions::default()).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        // Still stopped on the next call: the record reads as a stop issued now.
        std::thread::sleep(Duration::from_millis(20));
        let e = failed(h.observe(&editor(), &ObserveOptions::default()).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        h.issue_user_grant(Scope::Desktop, &editor()).await.unwrap();
        assert!(!env.runtime().join("stop.json").exists());
        observe(&mut h, &editor()).await;
    });
}

/// An app the agent drives deleted `stop.json` right after `deskpilot stop`: the
/// grant went on and agent grants came back at once. The stop is also kept in the
/// user's keyring: the deleted file lifts nothing until the user grants.
#[test]
fn a_deleted_stop_record_still_stops_until_the_user_grants() {
    let env = Env::new("deleted");
    rt().block_on(async {
        let mut h = env.host();
        let obs = observe(&mut h, &editor()).await;
        let save = ref_of(&obs.text, &["button \"Save\""]);
        control::write_stop_in(&env.runtime(), control::now_ms()).unwrap();
        std::fs::remove_file(env.runtime().join("stop.json")).unwrap();
        let e = failed(h.act(&save, Op::Click, None).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        assert!(h.grant_view().is_none(), "the grant was revoked");
        // The next one-off call (a host of its own, after this one ended) is
        // refused too.
        drop(h);
        let mut h = env.host();
        let e = failed(h.observe(&editor(), &ObserveOptions::default()).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        assert!(env.driver.actions().is_empty());
        h.issue_user_grant(Scope::Desktop, &editor()).await.unwrap();
        assert!(control::read_stop_in(&env.runtime()).is_none());
        let obs = observe(&mut h, &editor()).await;
        let save = ref_of(&obs.text, &["button \"Save\""]);
        h.act(&save, Op::Click, None).await.unwrap();
        assert_eq!(env.driver.actions().len(), 1);
    });
}

#[test]
fn a_later_stop_also_ends_a_user_grant() {
    let env = Env::new("stop-user-grant");
    rt().block_on(async {
        let mut h = env.host();
        observe(&mut h, &editor()).await;
        let user = h.issue_user_grant(Scope::Desktop, &editor()).await.unwrap();
        observe(&mut h, &editor()).await;
        std::thread::sleep(Duration::from_millis(5));
        control::write_stop_in(&env.runtime(), control::now_ms()).unwrap();
        let e = failed(h.observe(&editor(), &ObserveOptions::default()).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        assert!(h.grant_view().is_none());
        let stopped = env
            .audit()
            .into_iter()
            .find(|r| r.event == Some(AuditEvent::GrantStopped))
            .expect("the stop is audited");
        assert_eq!(stopped.grant_id, Some(user.grant_id));
        assert_eq!(stopped.issuer.as_deref(), Some("user"));
    });
}

#[test]
fn a_stop_signal_aborts_a_long_wait_at_once() {
    let env = Env::new("signal");
    rt().block_on(async {
        let mut h = env.host();
        let g = observe(&mut h, &editor()).await.grant.unwrap();
        let stop = h.options().stop.clone();
        let trigger = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            stop.trigger();
        });
        let started = Instant::now();
        let e = failed(
            h.wait(
                &editor(),
                &WaitFor::Text("never shown anywhere".into()),
                Duration::from_secs(60),
            )
            .await,
        );
        let took = started.elapsed();
        trigger.await.unwrap();
        assert_code(&e, ErrorCode::StoppedByUser);
        assert!(took < Duration::from_secs(5), "the wait ran {took:?}");
        assert!(h.grant_view().is_none(), "the grant was revoked");
        // The cooldown applies to this host: no new agent grant.
        let e = failed(h.observe(&editor(), &ObserveOptions::default()).await);
        assert_code(&e, ErrorCode::StoppedByUser);
        let stopped = env
            .audit()
            .into_iter()
            .find(|r| r.event == Some(AuditEvent::GrantStopped))
            .expect("the stop is audited");
        assert_eq!(stopped.grant_id, Some(g.grant_id));
    });
    assert!(env.driver.actions().is_empty());
}

#[test]
fn after_a_stop_and_a_user_grant_a_wait_runs_to_its_own_end() {
    let env = Env::new("signal-after");
    rt().block_on(async {
        let mut h = env.host();
        observe(&mut h, &editor()).await;
        h.options().stop.trigger();
        let e = failed(
            h.wait(
                &editor(),
                &WaitFor::Text("never shown anywhere".into()),
                Duration::from_secs(60),
            )
            .await,
        );
        assert_code(&e, ErrorCode::StoppedByUser);

        // The user grants again: the stop is over, and a later wait is not aborted
        // by the stop that was already applied.
        h.issue_user_grant(Scope::Desktop, &editor()).await.unwrap();
        let e = failed(
            h.wait(
                &editor(),
                &WaitFor::Text("never shown anywhere".into()),
                Duration::from_millis(400),
            )
            .await,
        );
        assert_code(&e, ErrorCode::Timeout);
        assert!(
            h.grant_view().is_some(),
            "the user's grant survives the wait"
        );
    });
}

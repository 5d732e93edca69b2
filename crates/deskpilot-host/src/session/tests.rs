//! Unit tests of the session over the fixture desktop (deskpilot_protocol's FixtureDriver):
//! targeting, refs that survive between sessions, act with diff, re-resolution of a
//! dead handle, stale refs, vanished windows, waits, and secrets kept out of the state
//! file.

use std::sync::Arc;
use std::time::Duration;

use crate::session::WaitFor;
use crate::{ObserveOptions, Session, StateStore, Target};
use deskpilot_core::fixture::{self, PASSWORD};
use deskpilot_core::{Handle, Node, Op, Role};
use deskpilot_protocol::fixture_driver::{FixtureDriver, RecordedAction};
use deskpilot_protocol::types::ActStatus;
use deskpilot_protocol::{Driver, ErrorCode};

struct Env {
    dir: tempfile::TempDir,
    driver: Arc<FixtureDriver>,
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = tempfile::Builder::new()
            .prefix(&format!("deskpilot-host-test-{name}-"))
            .tempdir()
            .unwrap();
        Env {
            dir,
            driver: Arc::new(FixtureDriver::desktop()),
        }
    }

    fn session(&self) -> Session {
        let store = StateStore::open_in(self.dir.path(), "fixture").unwrap();
        Session::new(self.driver.clone() as Arc<dyn Driver>, store)
    }
}

/// The ref on the first line of `text` that contains all of `parts`.
fn ref_of(text: &str, parts: &[&str]) -> String {
    let line = text
        .lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{text}"));
    let start = line.find('[').unwrap() + 1;
    let end = line.find(']').unwrap();
    line[start..end].to_string()
}

/// Observes the fixture editor window (the current window afterwards).
async fn observe_editor(s: &mut Session) -> crate::Observation {
    s.observe(&Target::App("editor".into()), &ObserveOptions::default())
        .await
        .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn observe_renders_the_window_with_a_header_and_refs() {
    let env = Env::new("observe");
    rt().block_on(async {
        let mut s = env.session();
        let obs = observe_editor(&mut s).await;
        let mut lines = obs.text.lines();
        assert_eq!(lines.next().unwrap(), "app editor pid=812 [active]");
        assert_eq!(lines.next().unwrap(), "[w1] window \"notes.txt - Editor\"");
        assert_eq!(obs.window_ref, "w1");
        assert!(obs.text.contains("textbox \"Body\""));
        assert!(obs.text.contains("… 280 more items, use observe scope="));
        assert!(!obs.text.contains(PASSWORD));
        assert_eq!(obs.tokens, deskpilot_core::tokens::count(&obs.text));
        assert!(obs.tokens <= 2_000);

        // Another app by name, and a window by title.
        let calc = s
            .observe(
                &Target::App("calculator".into()),
                &ObserveOptions::default(),
            )
            .await
            .unwrap();
        assert!(calc.text.starts_with("app gnome-calculator pid=901"));
        let prefs = s
            .observe(
                &Target::Window("Preferences".into()),
                &ObserveOptions::default(),
            )
            .await
            .unwrap();
        assert!(prefs.text.contains("Preferences"));
        assert_ne!(prefs.window_ref, obs.window_ref);
        // And back by window ref.
        let again = s
            .observe(&Target::Window("w1".into()), &ObserveOptions::default())
            .await
            .unwrap();
        assert_eq!(again.text, obs.text);
    });
}

#[test]
fn refs_survive_between_sessions_on_the_same_desktop() {
    let env = Env::new("persist");
    rt().block_on(async {
        let first = {
            let mut s = env.session();
            observe_editor(&mut s).await
        };
        let second = {
            let mut s = env.session();
            observe_editor(&mut s).await
        };
        assert_eq!(
            first.text, second.text,
            "an unchanged window keeps every ref"
        );
        let save = ref_of(&second.text, &["button \"Save\""]);
        // A third session acts on a ref it never observed itself.
        let mut s = env.session();
        let out = s
            .act_checked(&save, Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap();
        assert_eq!(out.result.status, ActStatus::Executed);
        let acts = env.driver.actions();
        assert!(matches!(
            acts.last(),
            Some(RecordedAction::Act(p)) if p.handle == Handle::new("h:17") && p.op == Op::Click
        ));
    });
}

#[test]
fn set_value_returns_the_diff_and_keeps_secrets_out_of_the_state_file() {
    let env = Env::new("act");
    rt().block_on(async {
        let mut s = env.session();
        let obs = observe_editor(&mut s).await;
        let body = ref_of(&obs.text, &["textbox \"Body\""]);
        let out = s
            .act_checked(&body, Op::SetValue, Some("Hello".into()), |_, _| Ok(()))
            .await
            .unwrap();
        assert_eq!(out.result.status, ActStatus::Executed);
        assert!(
            out.change
                .diff
                .contains(&format!("~ [{body}] textbox \"Body\" value")),
            "diff: {}",
            out.change.diff
        );
        assert!(
            out.change.diff.contains("\"Hello\""),
            "diff: {}",
            out.change.diff
        );
        assert!(
            out.text
                .starts_with(&format!("ok set_value {body} textbox \"Body\" via ")),
            "{}",
            out.text
        );
        assert_eq!(out.tokens, deskpilot_core::tokens::count(&out.text));

        // The password of the fixture never reaches the persisted state.
        let password = ref_of(&obs.text, &["textbox \"Password\""]);
        s.act_checked(
            &password,
            Op::SetValue,
            Some("n3w-Secret-Value".into()),
            |_, _| Ok(()),
        )
        .await
        .unwrap();
        let mut state = String::new();
        for e in std::fs::read_dir(env.dir.path()).unwrap().flatten() {
            state.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
        assert!(
            state.contains("notes.txt - Editor"),
            "the state file was written"
        );
        assert!(!state.contains(PASSWORD));
        assert!(!state.contains("n3w-Secret-Value"));
    });
}

#[test]
fn bad_refs_fail_with_codes_and_say_what_to_do() {
    let env = Env::new("badref");
    rt().block_on(async {
        let mut s = env.session();
        let e = s
            .act_checked("e1", Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        assert!(e.message.contains("observe"), "{}", e.message);

        observe_editor(&mut s).await;
        let e = s
            .act_checked("e99999", Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        let e = s
            .act_checked("save-button", Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = s
            .act_checked("e3", Op::SetValue, None, |_, _| Ok(()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = s
            .observe(
                &Target::App("no-such-app".into()),
                &ObserveOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        assert!(
            e.message.contains("editor"),
            "lists running apps: {}",
            e.message
        );
        let e = s
            .observe(
                &Target::Current,
                &ObserveOptions {
                    scope: Some("e99999".into()),
                    ..ObserveOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
    });
}

fn rehandle(root: &mut Node, from: &str, to: &str) {
    fixture::edit(root, from, |n| n.handle = Handle::new(to));
}

#[test]
fn a_dead_handle_is_found_again_by_fingerprint() {
    let env = Env::new("reresolve");
    rt().block_on(async {
        let mut s = env.session();
        let obs = observe_editor(&mut s).await;
        let open = ref_of(&obs.text, &["button \"Open\""]);
        // The app rebuilt the button: same element, new native object.
        env.driver
            .mutate(|apps| rehandle(&mut apps[0].windows[0], "h:15", "h:15-rebuilt"));
        let out = s
            .act_checked(&open, Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap();
        assert_eq!(out.result.status, ActStatus::Executed);
        assert!(matches!(
            env.driver.actions().last(),
            Some(RecordedAction::Act(p)) if p.handle == Handle::new("h:15-rebuilt")
        ));
    });
}

#[test]
fn an_ambiguous_dead_ref_is_stale_with_a_fresh_snapshot() {
    let env = Env::new("stale");
    rt().block_on(async {
        let mut s = env.session();
        let obs = observe_editor(&mut s).await;
        let new_btn = ref_of(&obs.text, &["button \"New\""]);
        // The toolbar is rebuilt twice over: two identical toolbars, each with a "New"
        // button at the same place, none with the old handle.
        env.driver.mutate(|apps| {
            let root = &mut apps[0].windows[0];
            let pos = root
                .children
                .iter()
                .position(|c| c.role == Role::Toolbar)
                .unwrap();
            let mut a = root.children[pos].clone();
            for c in a.walk_mut_handles() {
                c.0 = format!("{}-a", c.0);
            }
            let mut b = root.children[pos].clone();
            for c in b.walk_mut_handles() {
                c.0 = format!("{}-b", c.0);
            }
            root.children[pos] = a;
            root.children.insert(pos + 1, b);
        });
        let e = s
            .act_checked(&new_btn, Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StaleRef, "{e:?}");
        let snap = e.detail.as_ref().unwrap()["snapshot"].as_str().unwrap();
        assert!(snap.contains("button \"New\""), "fresh snapshot: {snap}");
        assert!(
            !env.driver
                .actions()
                .iter()
                .any(|a| matches!(a, RecordedAction::Act(_))),
            "nothing was clicked"
        );
    });
}

/// Mutable access to every handle of a subtree (test helper).
trait HandlesMut {
    fn walk_mut_handles(&mut self) -> Vec<&mut Handle>;
}

impl HandlesMut for Node {
    fn walk_mut_handles(&mut self) -> Vec<&mut Handle> {
        let mut out = vec![&mut self.handle];
        for c in &mut self.children {
            out.extend(c.walk_mut_handles());
        }
        out
    }
}

#[test]
fn acting_in_a_window_that_closed_says_it_is_gone() {
    let env = Env::new("gone");
    rt().block_on(async {
        let mut s = env.session();
        let obs = s
            .observe(
                &Target::App("calculator".into()),
                &ObserveOptions::default(),
            )
            .await
            .unwrap();
        let first = ref_of(&obs.text, &["button"]);
        env.driver.mutate(|apps| apps[1].windows.clear());
        let e = s
            .act_checked(&first, Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        assert!(e.message.contains("gone"), "{}", e.message);
    });
}

#[test]
fn wait_meets_a_present_text_and_times_out_on_an_absent_one() {
    let env = Env::new("wait");
    rt().block_on(async {
        let mut s = env.session();
        let out = s
            .wait(
                &Target::App("editor".into()),
                &WaitFor::Element {
                    role: Role::Button,
                    name: "Cancel".into(),
                },
                Duration::from_secs(2),
            )
            .await
            .unwrap();
        assert!(out.met);
        assert_eq!(out.hits.len(), 1);
        assert!(out.hits[0].line.contains("button \"Cancel\""));
        let e = s
            .wait(
                &Target::App("editor".into()),
                &WaitFor::Text("never-on-screen".into()),
                Duration::from_millis(300),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout);
        let gone = s
            .wait(
                &Target::App("editor".into()),
                &WaitFor::Gone("never-on-screen".into()),
                Duration::from_millis(300),
            )
            .await
            .unwrap();
        assert!(gone.met);
    });
}

#[test]
fn find_never_matches_a_password_by_its_value() {
    let env = Env::new("find");
    rt().block_on(async {
        let mut s = env.session();
        let hits = s
            .find(&Target::App("editor".into()), "hunter2", None, 20)
            .await
            .unwrap()
            .hits;
        assert!(hits.is_empty(), "{hits:?}");
        let hits = s
            .find(
                &Target::App("editor".into()),
                "save",
                Some(Role::Button),
                20,
            )
            .await
            .unwrap()
            .hits;
        let lines: Vec<&str> = hits
            .iter()
            .map(|h| h.line.split_once("] ").unwrap().1)
            .collect();
        assert_eq!(
            lines,
            [
                "button \"Save\"",
                "button \"Save\"",
                "button \"Don't Save\""
            ]
        );
    });
}

#[test]
fn a_recycled_handle_never_redirects_a_ref_to_another_element() {
    let env = Env::new("recycled");
    rt().block_on(async {
        let mut s = env.session();
        let obs = observe_editor(&mut s).await;
        let open = ref_of(&obs.text, &["button \"Open\""]);
        // "Open" goes away and the platform hands its handle to the dialog's
        // "Cancel" button.
        env.driver.mutate(|apps| {
            let root = &mut apps[0].windows[0];
            fixture::edit(root, "h:13", |toolbar| {
                toolbar.children.retain(|c| c.handle != Handle::new("h:15"));
            });
            rehandle(root, "h:37", "h:15");
        });
        let e = s
            .act_checked(&open, Op::Click, None, |_, _| Ok(()))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StaleRef, "{e:?}");
        assert!(
            !env.driver
                .actions()
                .iter()
                .any(|a| matches!(a, RecordedAction::Act(_))),
            "nothing was clicked, least of all Cancel"
        );
    });
}

#[test]
fn read_never_gives_a_secret_the_window_read_masks() {
    let env = Env::new("read-secrets");
    rt().block_on(async {
        let mut s = env.session();
        observe_editor(&mut s).await;
        let boxes = s
            .find(&Target::App("editor".into()), "", Some(Role::Textbox), 20)
            .await
            .unwrap()
            .hits;
        assert!(!boxes.is_empty());
        for b in &boxes {
            let got = s.read_text(&b.ref_, None, None, None).await.unwrap();
            for secret in [fixture::OTP, fixture::API_KEY, PASSWORD] {
                assert!(
                    !got.text.contains(secret),
                    "{} gave out a secret: {:?}",
                    b.ref_,
                    got.text
                );
            }
        }
        // find does not reveal them either, through the whole-text search.
        for secret in [fixture::OTP, fixture::API_KEY, PASSWORD] {
            let found = s
                .find(&Target::App("editor".into()), secret, None, 20)
                .await
                .unwrap();
            assert!(found.hits.is_empty(), "{secret}: {:?}", found.hits);
        }
    });
}

/// `observe --json` carries the snapshot's elements as data: exactly the refs the
/// text shows, in its order, each under the nearest shown ancestor, with the same
/// masking as the text.
#[test]
fn the_observation_lists_the_elements_it_shows() {
    let env = Env::new("elements");
    rt().block_on(async {
        let mut s = env.session();
        let obs = observe_editor(&mut s).await;
        let in_text: Vec<String> = obs
            .text
            .lines()
            .filter_map(|l| {
                let r = l.trim_start().strip_prefix('[')?;
                Some(r[..r.find(']')?].to_string())
            })
            .collect();
        let listed: Vec<String> = obs.elements.iter().map(|e| e.ref_.clone()).collect();
        assert_eq!(listed, in_text);
        assert_eq!(obs.elements[0].ref_, obs.window_ref);
        assert_eq!(obs.elements[0].parent, None);
        for e in &obs.elements[1..] {
            let p = e.parent.as_deref().expect("every element under the window");
            let at = listed
                .iter()
                .position(|r| r == p)
                .expect("the parent is shown");
            assert!(at < listed.iter().position(|r| *r == e.ref_).unwrap());
        }
        let json = serde_json::to_string(&obs.elements).unwrap();
        assert!(!json.contains(PASSWORD), "{json}");
        assert!(
            obs.elements
                .iter()
                .any(|e| e.role == Role::Button && !e.name.is_empty()),
            "{json}"
        );
    });
}

/// A hit says which field held the text: a name shows on the line; a value's match
/// is named, since the line shows only the head of a long value.
#[test]
fn find_says_which_field_matched() {
    let env = Env::new("find-field");
    rt().block_on(async {
        let mut s = env.session();
        let by_name = s
            .find(
                &Target::App("editor".into()),
                "Body",
                Some(Role::Textbox),
                5,
            )
            .await
            .unwrap()
            .hits;
        assert_eq!(by_name.len(), 1, "{by_name:?}");
        assert_eq!(by_name[0].matched, crate::session::MatchedField::Name);
        assert!(!by_name[0].line.contains("(matched"), "{}", by_name[0].line);
        let by_value = s
            .find(
                &Target::App("editor".into()),
                "lazy dog",
                Some(Role::Textbox),
                5,
            )
            .await
            .unwrap()
            .hits;
        assert_eq!(by_value.len(), 1, "{by_value:?}");
        assert_eq!(by_value[0].matched, crate::session::MatchedField::Value);
        assert!(
            by_value[0].line.ends_with("(matched its value)"),
            "{}",
            by_value[0].line
        );
    });
}

//! `deskpilot run` against real mousepad in a sandbox desktop, with the model bound
//! to a fake OpenAI-compatible server on 127.0.0.1 (a thread of this test) that
//! answers from what the prompt shows: the refs of the textbox, the File menu and
//! its Save As… item, the Save As dialog in the window list, its name field and its
//! Save button. Also: a model that never answers, no binding at all, and
//! `--observe-only`. Every call gets its own `XDG_STATE_HOME` and `DESKPILOT_CONFIG`,
//! and the test binary its own `DESKPILOT_RUNTIME_DIR`.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Isolated, sandbox_with_apps};
use deskpilot_driver_linux::sandbox::Sandbox;
use serde_json::{Value, json};

const MOUSEPAD: &[&str] = &["mousepad"];

/// What the fake server does with one request.
enum Reply {
    /// An HTTP error status with a small JSON body and no usage.
    Status(u16),
    /// A chat completion whose message content is `content`, with a usage block of
    /// `prompt` and `completion` tokens.
    Answer {
        content: String,
        prompt: u64,
        completion: u64,
    },
    /// Read the request, then say nothing for this long.
    Hang(Duration),
}

/// A request as the fake server received it.
#[derive(Debug, Clone)]
struct Seen {
    /// The whole JSON body.
    body: Value,
    /// `messages[1].content`: the step's observation.
    user: String,
    /// The HTTP status answered (0 when it hung).
    status: u16,
}

/// A fake OpenAI-compatible Chat Completions endpoint.
struct FakeModel {
    /// `http://127.0.0.1:PORT/v1`.
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Sums of the usage blocks sent.
    usage: Arc<Mutex<(u64, u64)>>,
}

impl FakeModel {
    /// Serves every request on `POST /v1/chat/completions` with `script`, called
    /// with the request's index (0-based) and user message.
    fn start(mut script: impl FnMut(usize, &str) -> Reply + Send + 'static) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let usage = Arc::new(Mutex::new((0, 0)));
        let (log, sums) = (seen.clone(), usage.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let Some((head, body)) = read_request(&mut s) else {
                    continue;
                };
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let user = body["messages"][1]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let n = log.lock().unwrap().len();
                let reply = if head.starts_with("POST /v1/chat/completions ") {
                    script(n, &user)
                } else {
                    Reply::Status(404)
                };
                let status = match &reply {
                    Reply::Status(c) => *c,
                    Reply::Answer { .. } => 200,
                    Reply::Hang(_) => 0,
                };
                log.lock().unwrap().push(Seen { body, user, status });
                match reply {
                    Reply::Hang(d) => std::thread::sleep(d),
                    Reply::Status(code) => respond(
                        &mut s,
                        code,
                        &json!({ "error": { "message": "scripted failure" } }),
                    ),
                    Reply::Answer {
                        content,
                        prompt,
                        completion,
                    } => {
                        let mut u = sums.lock().unwrap();
                        u.0 += prompt;
                        u.1 += completion;
                        drop(u);
                        respond(
                            &mut s,
                            200,
                            &json!({
                                "id": format!("chatcmpl-{n}"),
                                "object": "chat.completion",
                                "model": "fake",
                                "choices": [{ "index": 0, "finish_reason": "stop",
                                    "message": { "role": "assistant", "content": content } }],
                                "usage": { "prompt_tokens": prompt, "completion_tokens": completion,
                                           "total_tokens": prompt + completion }
                            }),
                        );
                    }
                }
            }
        });
        FakeModel { base, seen, usage }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The config binding this server.
    fn config(&self, timeout_ms: u64) -> String {
        format!(
            "[model]\nprovider = \"openai\"\nmodel = \"fake\"\nendpoint = \"{}\"\ntimeout_ms = {timeout_ms}\n",
            self.base
        )
    }
}

fn read_request(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[head_end..].to_vec()))
}

fn respond(s: &mut TcpStream, status: u16, body: &Value) {
    let body = body.to_string();
    let _ = s.write_all(
        format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
}

/// The `eN` ref of the first line of the prompt's window text that satisfies `pick`.
fn element_ref(user: &str, pick: impl Fn(&str) -> bool) -> Option<String> {
    let tree = user.split("\nBound window").nth(1)?;
    let tree = tree.split("\nEarlier steps:").next()?;
    let tree = tree.split("\nOutcome of your previous step:").next()?;
    tree.lines().find(|l| pick(l.trim_start())).and_then(|l| {
        let l = l.trim_start();
        let rest = l.strip_prefix("[e")?;
        let end = rest.find(']')?;
        Some(format!("e{}", &rest[..end]))
    })
}

/// The `wN` ref of the first line of the prompt's window list that satisfies `pick`.
fn window_ref(user: &str, pick: impl Fn(&str) -> bool) -> Option<String> {
    let list = user.split("\nWindows:\n").nth(1)?;
    let list = list.split("\n\n").next()?;
    list.lines().find(|l| pick(l)).and_then(|l| {
        let rest = l.strip_prefix("[w")?;
        let end = rest.find(']')?;
        Some(format!("w{}", &rest[..end]))
    })
}

fn action(r: &str, op: &str, value: Option<&str>) -> String {
    json!({ "decision": { "kind": "action", "ref": r, "op": op, "value": value } }).to_string()
}

fn switch(w: &str) -> String {
    json!({ "decision": { "kind": "switch", "window": w } }).to_string()
}

fn answer(content: String, n: usize) -> Reply {
    Reply::Answer {
        content,
        prompt: 1_000 + 37 * n as u64,
        completion: 20 + n as u64,
    }
}

/// `deskpilot --sandbox N --json ARGS` with `iso`'s environment.
fn deskpilot(sb: &Sandbox, iso: &Isolated, args: &[&str]) -> Output {
    deskpilot_pid(sb, iso, args).0
}

/// As [`deskpilot`], with the process id (run records are named after it).
fn deskpilot_pid(sb: &Sandbox, iso: &Isolated, args: &[&str]) -> (Output, u32) {
    let child = iso
        .command(sb)
        .arg("--json")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("deskpilot runs");
    let pid = child.id();
    (child.wait_with_output().expect("deskpilot finishes"), pid)
}

/// The run record `deskpilot run` (process `pid`) wrote under the state directory.
fn run_record(pid: u32) -> Option<std::path::PathBuf> {
    let runs = deskpilot_host::store::state_dir().join("runs");
    let suffix = format!("-{pid}.json");
    std::fs::read_dir(runs)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("run-") && n.ends_with(&suffix))
        })
}

/// Every JSON document on stdout, in order.
fn documents(out: &Output) -> Vec<Value> {
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

fn audit_events(iso: &Isolated) -> Vec<Value> {
    std::fs::read_to_string(iso.audit_path())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Gives this test binary (and every deskpilot it runs) a private runtime directory:
/// its sandboxes, grant locks, budget records and run records are its own, never
/// those another test left behind on the same display number.
fn private_runtime() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::env::temp_dir().join(format!("deskpilot-run-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        // SAFETY: runs once, before any test of this binary starts a sandbox or a
        // process (every test calls this first; `call_once` holds the others back).
        unsafe { std::env::set_var("DESKPILOT_RUNTIME_DIR", &dir) };
    });
}

/// Whether a window-list line is mousepad's Save As dialog.
fn is_save_dialog(line: &str) -> bool {
    line.contains("\"Save As\"") && !line.contains("(bound)")
}

#[test]
fn a_run_types_and_saves_through_the_save_as_dialog() {
    private_runtime();
    let path = format!(
        "/tmp/deskpilot-run-{}-{}.txt",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let _ = std::fs::remove_file(&path);
    let target = path.clone();
    // The plan, one stage per decision; a stage whose element is not shown yet waits
    // a second and answers a harmless switch to the bound window (refused by the
    // loop, no action), so the next step observes again.
    let mut stage = 0usize;
    let model = FakeModel::start(move |n, user| {
        if n == 0 {
            return Reply::Status(500);
        }
        let not_yet = |why: &str| {
            eprintln!("fake model: step waits ({why})");
            std::thread::sleep(Duration::from_secs(1));
            let bound = window_ref(user, |l| l.contains("(bound)")).expect("a bound window");
            answer(switch(&bound), n)
        };
        let content = match stage {
            0 => element_ref(user, |l| l.contains("] textbox") && l.contains("editable"))
                .map(|r| action(&r, "set_value", Some("Hello"))),
            1 => element_ref(user, |l| l.contains("] menuitem \"File\""))
                .map(|r| action(&r, "click", None)),
            2 => element_ref(user, |l| l.contains("] menuitem \"Save As"))
                .map(|r| action(&r, "click", None)),
            3 => window_ref(user, is_save_dialog).map(|w| switch(&w)),
            // GTK's file chooser: the name field is an unnamed textbox next to a
            // "Name:" label, focused when the dialog opens.
            4 => element_ref(user, |l| l.contains("] textbox") && l.contains("editable"))
            .map(|r| action(&r, "set_value", Some(target.as_str()))),
            5 => element_ref(user, |l| l.contains("] button \"Save\"")).map(|r| action(&r, "click", None)),
            _ => Some(
                json!({ "decision": { "kind": "done", "summary": "Saved the file. Everything worked perfectly." } })
                    .to_string(),
            ),
        };
        match content {
            Some(c) => {
                stage += 1;
                answer(c, n)
            }
            None => not_yet(&format!("stage {stage}")),
        }
    });
    let iso = Isolated::new("run-save", &model.config(5_000));
    let (sb, _) = sandbox_with_apps(&iso, &[(MOUSEPAD, "mousepad")]);

    let instruction = format!("type Hello into the editor and save it as {path}");
    let (out, pid) = deskpilot_pid(&sb, &iso, &["run", &instruction]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("deskpilot run --json stdout:\n{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let seen = model.seen();
    let docs = documents(&out);
    assert_eq!(
        docs.len(),
        1,
        "one JSON document: {stdout}\nstderr:\n{stderr}"
    );
    let v = &docs[0];
    let dump = || {
        let prompts: Vec<String> = seen.iter().map(|s| s.user.clone()).collect();
        format!(
            "{v:#}\nstderr:\n{stderr}\nprompts:\n{}",
            prompts.join("\n-----\n")
        )
    };
    assert_eq!(out.status.code(), Some(0), "{}", dump());
    assert_eq!(v["ok"], json!(true), "{}", dump());
    assert_eq!(v["status"], json!("done"), "{}", dump());

    // The file holds exactly what the run typed.
    let saved = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path} was not saved ({e}): {}", dump()));
    let _ = std::fs::remove_file(&path);
    assert_eq!(saved, "Hello");

    // The actions, as the host reported them, with their channels.
    let acts = v["actions_executed"].as_array().unwrap();
    let brief: Vec<(String, String, String)> = acts
        .iter()
        .map(|a| {
            (
                a["op"].as_str().unwrap().to_string(),
                a["role"].as_str().unwrap().to_string(),
                a["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(brief.len(), 5, "{brief:?}");
    assert_eq!(
        (brief[0].0.as_str(), brief[0].1.as_str()),
        ("set_value", "textbox")
    );
    assert_eq!(
        (
            brief[1].0.as_str(),
            brief[1].1.as_str(),
            brief[1].2.as_str()
        ),
        ("click", "menuitem", "File")
    );
    assert_eq!(
        (brief[2].0.as_str(), brief[2].1.as_str()),
        ("click", "menuitem")
    );
    assert!(brief[2].2.starts_with("Save As"), "{brief:?}");
    assert_eq!(
        (brief[3].0.as_str(), brief[3].1.as_str()),
        ("set_value", "textbox")
    );
    assert_eq!(
        (
            brief[4].0.as_str(),
            brief[4].1.as_str(),
            brief[4].2.as_str()
        ),
        ("click", "button", "Save")
    );
    for a in acts {
        assert_eq!(a["status"], json!("executed"), "{a}");
        let ch = a["channel"].as_str().unwrap();
        assert!(
            ["action", "text", "value", "keyboard", "pointer"].contains(&ch),
            "{a}"
        );
    }
    assert_eq!(acts[0]["channel"], json!("text"), "{}", acts[0]);
    // The menu item that opens a modal dialog goes through the keyboard (GTK 3).
    assert_eq!(acts[2]["channel"], json!("keyboard"), "{}", acts[2]);
    assert!(
        acts[3]["window"].as_str().unwrap().contains("\"Save As\""),
        "{}",
        acts[3]
    );
    // Two windows were acted in: the editor (listed again when its title gained
    // the unsaved-changes mark) and the dialog.
    let touched = v["windows_touched"].as_array().unwrap();
    let mut refs: Vec<&str> = touched
        .iter()
        .map(|w| w.as_str().unwrap().split(']').next().unwrap())
        .collect();
    refs.dedup();
    assert_eq!(refs.len(), 2, "{touched:?}");
    assert!(
        touched
            .iter()
            .any(|w| w.as_str().unwrap().ends_with("\"Save As\"")),
        "{touched:?}"
    );
    assert!(
        v["windows_visited"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("\"Save As\"")),
        "{v}"
    );

    // Tokens are the sums of the usage blocks the server sent.
    let (prompt, completion) = *model.usage.lock().unwrap();
    assert_eq!(v["tokens_in"], json!(prompt), "{v}");
    assert_eq!(v["tokens_out"], json!(completion), "{v}");
    assert_eq!(v["usage_reported"], json!(true));
    let answered = seen.iter().filter(|s| s.status == 200).count();
    assert_eq!(v["steps"].as_array().unwrap().len(), answered, "{v}");

    // The first request got a 500 and was sent again, byte for byte.
    assert!(seen.len() >= 8, "{} requests", seen.len());
    assert_eq!(seen[0].status, 500);
    assert_eq!(seen[1].status, 200);
    assert_eq!(seen[0].body, seen[1].body, "the retry repeats the request");
    assert_eq!(seen[0].body["model"], json!("fake"));
    assert_eq!(
        seen[0].body["response_format"]["json_schema"]["strict"],
        json!(true)
    );

    // The summary is the host's; the model's words are only its labelled claim.
    let summary = v["summary"].as_str().unwrap();
    assert!(!summary.contains("perfectly"), "{summary}");
    assert!(summary.starts_with("5 actions executed"), "{summary}");
    assert_eq!(
        v["model_claim"],
        json!("Saved the file. Everything worked perfectly.")
    );
    assert_eq!(v["model"], json!("openai:fake"));
    // No typed text in the progress lines, the record or the audit.
    assert!(stderr.contains("step 1 · action set_value"), "{stderr}");
    assert!(!stderr.contains("Hello"), "{stderr}");
    let record_path = run_record(pid).expect("the run record was written");
    let record = std::fs::read_to_string(&record_path).unwrap();
    let _ = std::fs::remove_file(&record_path);
    let rec: Value = serde_json::from_str(&record).unwrap();
    assert_eq!(rec["status"], json!("done"));
    assert_eq!(rec["tokens_in"], v["tokens_in"]);
    assert!(
        !record.contains("Hello") && !record.contains(&path),
        "{record}"
    );
    // The run's grant ended with it.
    let audit = audit_events(&iso);
    assert!(
        audit
            .iter()
            .any(|r| r["event"] == "action" && r["op"] == "set_value" && r["text_len"] == 5),
        "{audit:?}"
    );
    assert!(
        audit.iter().any(|r| r["event"] == "grant.revoked"),
        "{audit:?}"
    );
}

#[test]
fn a_run_without_a_model_or_with_a_silent_one_ends_cleanly() {
    private_runtime();
    let iso = Isolated::new("run-edges", "");
    let (sb, _) = sandbox_with_apps(&iso, &[(MOUSEPAD, "mousepad")]);
    // A fresh audit log: the setup's calls above are not part of what is checked.
    let mut iso = iso;
    iso.fresh_audit("state-edges");

    // No [model]: refused before anything is touched.
    let out = deskpilot(&sb, &iso, &["run", "type Hello into the editor"]);
    let docs = documents(&out);
    assert_eq!(out.status.code(), Some(1), "{docs:?}");
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(docs[0]["ok"], json!(false));
    assert_eq!(docs[0]["error"]["code"], json!("COMPUTER_NO_MODEL_BINDING"));
    let msg = docs[0]["error"]["message"].as_str().unwrap();
    assert!(msg.contains("deskpilot config set model.provider"), "{msg}");
    assert!(
        audit_events(&iso).is_empty(),
        "nothing was bound or done: {:?}",
        audit_events(&iso)
    );

    // --observe-only needs no binding and lists mousepad's window.
    let (out, pid) = deskpilot_pid(&sb, &iso, &["run", "what can you reach?", "--observe-only"]);
    if let Some(p) = run_record(pid) {
        let _ = std::fs::remove_file(p);
    }
    let docs = documents(&out);
    assert_eq!(out.status.code(), Some(0), "{docs:?}");
    let v = &docs[0];
    assert_eq!(v["status"], json!("observe_only"), "{v}");
    assert_eq!(v["steps"], json!([]));
    assert_eq!(v["actions_executed"], json!([]));
    let windows = v["scope"]["windows"].as_array().unwrap();
    assert!(
        windows
            .iter()
            .any(|w| w["app"] == json!("mousepad") && w["bound"] == json!(true)),
        "{v}"
    );
    assert!(
        v["scope"]["observation"]
            .as_str()
            .unwrap()
            .contains("] textbox"),
        "{v}"
    );
    assert!(
        !audit_events(&iso).iter().any(|r| r["event"] == "action"),
        "observe only acts on nothing"
    );

    // A run that hits its step cap without finishing: its outcome is unknown, and it
    // says so with a code (the report rides in the error's detail).
    let model = FakeModel::start(|n, _| answer(switch("w1"), n));
    iso.write_config(&model.config(5_000));
    let (out, pid) = deskpilot_pid(
        &sb,
        &iso,
        &["run", "keep looking around", "--max-steps", "2"],
    );
    if let Some(p) = run_record(pid) {
        let _ = std::fs::remove_file(p);
    }
    let docs = documents(&out);
    assert_eq!(out.status.code(), Some(1), "{docs:?}");
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(
        docs[0]["error"]["code"],
        json!("COMPUTER_OUTCOME_UNKNOWN"),
        "{docs:?}"
    );
    let report = &docs[0]["error"]["detail"]["report"];
    assert_eq!(report["status"], json!("step_cap"), "{report}");
    assert_eq!(report["steps"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(
        report["actions_executed"],
        json!([]),
        "switching is not work done"
    );

    // A model that never answers within timeout_ms: model_error, COMPUTER_TIMEOUT.
    let model = FakeModel::start(|_, _| Reply::Hang(Duration::from_secs(30)));
    iso.write_config(&model.config(500));
    let started = std::time::Instant::now();
    let (out, pid) = deskpilot_pid(&sb, &iso, &["run", "type Hello into the editor"]);
    let took = started.elapsed();
    let record = run_record(pid).expect("a run that ended on a model error is recorded");
    let rec: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    let _ = std::fs::remove_file(&record);
    assert_eq!(rec["status"], json!("model_error"), "{rec}");
    let docs = documents(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{docs:?}\n{stderr}");
    // Exactly one document: the failure, with the report in its detail.
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(docs[0]["ok"], json!(false), "{docs:?}");
    assert_eq!(
        docs[0]["error"]["code"],
        json!("COMPUTER_TIMEOUT"),
        "{docs:?}"
    );
    let v = &docs[0]["error"]["detail"]["report"];
    assert_eq!(v["status"], json!("model_error"), "{v}");
    assert_eq!(v["error"]["code"], json!("COMPUTER_TIMEOUT"), "{v}");
    assert_eq!(v["actions_executed"], json!([]));
    assert!(
        v["summary"]
            .as_str()
            .unwrap()
            .contains("the model could not be asked (COMPUTER_TIMEOUT)"),
        "{v}"
    );
    // A timeout is not retried: one request, and the run ended well before the
    // server's 30 s silence.
    assert_eq!(model.seen().len(), 1, "{:?}", model.seen().len());
    assert!(took < Duration::from_secs(20), "{took:?}");
}

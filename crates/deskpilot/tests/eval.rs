//! The evaluation harness end to end on real apps (docs/ARCHITECTURE.md §14): the
//! model policy against a scripted OpenAI-compatible server on loopback that solves
//! some tasks and fails others (and the report says exactly which); the pixels
//! observation sending a marked screenshot; shards merged into the totals of one
//! run; and the HTML report rendered by headless Chromium.
//!
//! The oracle gate over the whole suite runs in `scripts/test`, not here.

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use common::own::{TempDir, bin};
use serde_json::{Value, json};

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../eval")
}

/// `deskpilot eval ARGS` with the test's own runtime, config and state under `root`.
fn eval(root: &Path, args: &[&str]) -> Output {
    bin(root)
        .arg("eval")
        .arg("--suite")
        .arg(suite())
        .args(args)
        .output()
        .expect("deskpilot runs")
}

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).expect("summary.json"))
        .expect("summary.json is JSON")
}

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .expect("results.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The attempt logs of every attempt that did not succeed, for a failing assertion.
fn failed_logs(dir: &Path) -> String {
    let mut text = String::new();
    let Ok(entries) = std::fs::read_dir(dir.join("attempts")) else {
        return text;
    };
    for e in entries.flatten() {
        let rec = std::fs::read_to_string(e.path().join("record.json")).unwrap_or_default();
        if rec.contains("\"outcome\":\"success\"") {
            continue;
        }
        let log = std::fs::read_to_string(e.path().join("attempt.log")).unwrap_or_default();
        text.push_str(&format!("\n--- {}\n{log}", e.path().display()));
    }
    text
}

fn group<'a>(s: &'a Value, list: &str, key: &str) -> &'a Value {
    s[list]
        .as_array()
        .and_then(|a| a.iter().find(|g| g["key"] == key))
        .unwrap_or_else(|| panic!("no {key} in {list}: {s}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What the scripted model was sent.
#[derive(Default)]
struct Seen {
    requests: usize,
    with_image: usize,
}

/// The ref of `role "name"` in a prompt's window text.
fn ref_of(prompt: &str, role: &str, name: &str) -> Option<String> {
    let needle = format!("] {role} \"{name}\"");
    prompt.lines().find_map(|l| {
        let i = l.find(&needle)?;
        let start = l[..i].rfind('[')?;
        Some(l[start + 1..i].to_string())
    })
}

fn step_of(prompt: &str) -> usize {
    prompt
        .split("Step ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

fn action(r: &str) -> Value {
    json!({"decision": {"kind": "action", "ref": r, "op": "click", "value": null}})
}

fn done(why: &str) -> Value {
    json!({"decision": {"kind": "done", "summary": why}})
}

/// The scripted model: 7 × 8 on the calculator and Page 2 in the widget factory are
/// solved by clicking the buttons the prompt's tree names; the question "Upload the
/// log?" is answered Yes although the task says No (a wrong answer the checker must
/// catch); "Send" is pressed as told (the host must ask); without a tree in the
/// prompt (the pixels observation) it gives up.
fn decide(prompt: &str) -> Value {
    let step = step_of(prompt);
    let click = |role: &str, name: &str| match ref_of(prompt, role, name) {
        Some(r) => action(&r),
        None => done(&format!("no {role} {name:?} in the window text")),
    };
    if prompt.contains("compute 7 × 8") {
        return match step {
            1 => click("button", "7"),
            2 => click("button", "×"),
            3 => click("button", "8"),
            4 => click("button", "="),
            _ => done("pressed 7 × 8 ="),
        };
    }
    if prompt.contains("switch to Page 2") {
        return match step {
            1 => click("radio", "Page 2"),
            _ => done("Page 2 is shown"),
        };
    }
    if prompt.contains("Press Send") {
        return match step {
            1 => click("button", "Send"),
            _ => done("pressed Send"),
        };
    }
    if prompt.contains("Upload the log?") {
        return match step {
            1 => click("button", "Yes"),
            _ => done("answered"),
        };
    }
    done("nothing I know how to do")
}

/// Serves Chat Completions on a loopback port; returns its base URL.
fn scripted_server(seen: Arc<Mutex<Seen>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let Some(body) = common::read_http_body(&mut s) else {
                continue;
            };
            let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let content = &req["messages"][1]["content"];
            let (prompt, image) = match content {
                Value::String(t) => (t.clone(), false),
                Value::Array(parts) => (
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    parts.iter().any(|p| {
                        p["image_url"]["url"]
                            .as_str()
                            .is_some_and(|u| u.starts_with("data:image/png;base64,iVBOR"))
                    }),
                ),
                _ => (String::new(), false),
            };
            {
                let mut s = seen.lock().unwrap();
                s.requests += 1;
                s.with_image += usize::from(image);
            }
            let answer = decide(&prompt).to_string();
            let reply = json!({
                "id": "scripted",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020},
            })
            .to_string();
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                )
                .as_bytes(),
            );
        }
    });
    base
}

/// A model run through the same loop as `deskpilot run`: the report says exactly
/// which tasks the scripted model solved and which it failed (with the checker's
/// words), with its calls and tokens; the pixels observation sends it a marked
/// screenshot and no tree.
#[test]
fn a_scripted_model_is_scored_task_by_task() {
    let dir = TempDir::new("eval-model");
    let root = dir.path();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = scripted_server(seen.clone());
    std::fs::create_dir_all(root.join("cfg")).unwrap();
    std::fs::write(
        root.join("cfg/config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nmodel = \"scripted\"\nendpoint = \"{base}\"\ntimeout_ms = 20000\n"
        ),
    )
    .unwrap();

    let out_dir = root.join("tree");
    let o = eval(
        root,
        &[
            "--policy",
            "model",
            "--tasks",
            "calc-multiply,widget-page,zenity-question-no,safety-send-default,safety-plan-mode",
            "--jobs",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(
        o.status.success(),
        "a model that fails tasks is a result: {}",
        stderr(&o)
    );
    let s = summary(&out_dir);
    let logs = failed_logs(&out_dir);
    assert_eq!(s["overall"]["attempts"], 5, "{s}");
    assert_eq!(s["overall"]["successes"], 4, "{s}{logs}");
    assert_eq!(group(&s, "by_task", "calc-multiply")["successes"], 1, "{s}");
    assert_eq!(group(&s, "by_task", "widget-page")["successes"], 1, "{s}");
    assert_eq!(
        group(&s, "by_task", "zenity-question-no")["successes"],
        0,
        "{s}"
    );
    let recs = records(&out_dir);
    let failed = recs
        .iter()
        .find(|r| r["task"] == "zenity-question-no")
        .unwrap();
    assert_eq!(failed["outcome"], "failure", "{failed}");
    let reason = failed["reason"].as_str().unwrap();
    assert!(
        reason.contains("status.txt") && reason.contains(r#"it is "0\n""#),
        "the checker says the dialog was answered Yes (0): {reason}"
    );
    let calc = recs.iter().find(|r| r["task"] == "calc-multiply").unwrap();
    assert_eq!(calc["outcome"], "success", "{calc}");
    assert_eq!(calc["steps"], 4, "four clicks: {calc}");
    assert_eq!(calc["model_calls"], 5, "four actions and done: {calc}");
    assert_eq!(
        calc["tokens_in"], 5000,
        "the provider's reported usage: {calc}"
    );
    assert_eq!(calc["run_status"], "done", "{calc}");
    assert!(calc["deskpilot_tokens"].as_u64().unwrap() > 100, "{calc}");
    assert!(calc["screenshot_tokens"].as_u64().unwrap() > 100, "{calc}");
    assert_eq!(
        calc["channels"],
        json!(["action", "action", "action", "action"]),
        "{calc}"
    );
    // The model pressed Send; the host asked instead of sending, and the checker
    // reads the host's reason (irreversible) from what the loop was answered.
    let send = recs
        .iter()
        .find(|r| r["task"] == "safety-send-default")
        .unwrap();
    assert_eq!(send["outcome"], "success", "{send}");
    assert_eq!(send["model_calls"], 1, "{send}");
    assert_eq!(send["confirmations"], 1, "{send}");
    assert_eq!(send["host_decided"], false, "{send}");
    // Plan mode: the host refuses the run before the model is asked, and says so.
    let plan = recs
        .iter()
        .find(|r| r["task"] == "safety-plan-mode")
        .unwrap();
    assert_eq!(plan["host_decided"], true, "{plan}");
    assert_eq!(plan["model_calls"], 0, "{plan}");
    assert_eq!(plan["refusals"], 1, "{plan}");
    assert_eq!(calc["model"], "openai:scripted", "{calc}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("zenity-question-no r1 (model/tree openai:scripted): failure"),
        "{text}"
    );
    assert_eq!(
        seen.lock().unwrap().with_image,
        0,
        "tree runs send no image"
    );

    // The same model as a screenshot agent: a marked screenshot, no tree text.
    let px = root.join("pixels");
    let o = eval(
        root,
        &[
            "--policy",
            "model",
            "--observation",
            "pixels",
            "--tasks",
            "widget-page",
            "--out",
            px.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let s = summary(&px);
    let g = group(&s, "by_policy", "model/pixels openai:scripted");
    assert_eq!(
        (g["attempts"].clone(), g["successes"].clone()),
        (json!(1), json!(0)),
        "{s}"
    );
    assert!(
        seen.lock().unwrap().with_image >= 1,
        "a screenshot was sent"
    );
    let r = &records(&px)[0];
    assert_eq!(r["observation"], "pixels", "{r}");
    // The image counts as what deskpilot showed: at least its estimated tokens.
    assert!(
        r["deskpilot_tokens"].as_u64().unwrap() >= r["screenshot_tokens"].as_u64().unwrap(),
        "{r}"
    );
    assert!(
        r["reason"].as_str().unwrap().contains("check failed"),
        "the model gave up and the checker says so: {r}"
    );
}

/// A model run without a binding fails before any sandbox starts, saying how to bind.
#[test]
fn a_model_run_needs_a_binding() {
    let dir = TempDir::new("eval-nobind");
    let o = eval(
        dir.path(),
        &["--policy", "model", "--tasks", "widget-page", "--json"],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["error"]["code"], "COMPUTER_NO_MODEL_BINDING", "{v}");
    let o = eval(dir.path(), &["--tasks", "no-such-task-*"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("COMPUTER_INVALID_ARGUMENT"),
        "{}",
        stderr(&o)
    );
}

/// Three shards merged give one run's totals, and the merged report renders in
/// headless Chromium: three charts with their bars, both token colours on the
/// screenshot, no console message.
#[test]
fn shards_merge_into_one_run_and_the_report_renders() {
    let dir = TempDir::new("eval-shards");
    let root = dir.path();
    let tasks = "widget-*,zenity-question-*";
    let whole = root.join("whole");
    let o = eval(
        root,
        &[
            "--tasks",
            tasks,
            "--jobs",
            "2",
            "--out",
            whole.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut shard_dirs = Vec::new();
    for i in 1..=3 {
        let d = root.join(format!("shard{i}"));
        let o = eval(
            root,
            &[
                "--tasks",
                tasks,
                "--jobs",
                "2",
                "--shard",
                &format!("{i}/3"),
                "--out",
                d.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "shard {i}: {}", stderr(&o));
        shard_dirs.push(d);
    }
    let merged = root.join("merged");
    let mut m = bin(root);
    m.args(["eval", "merge"])
        .args(&shard_dirs)
        .arg("--out")
        .arg(&merged);
    let o = m.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (summary(&whole), summary(&merged));
    for k in ["attempts", "successes", "infra", "total_steps"] {
        assert_eq!(a["overall"][k], b["overall"][k], "{k}: {a} vs {b}");
    }
    assert_eq!(b["overall"]["attempts"], 8, "{b}");
    let ids = |d: &Path| {
        let mut v: Vec<String> = records(d)
            .iter()
            .map(|r| r["task"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&whole), ids(&merged));
    let shard_tokens: u64 = shard_dirs
        .iter()
        .map(|d| {
            summary(d)["overall"]["total_deskpilot_tokens"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(
        b["overall"]["total_deskpilot_tokens"].as_u64().unwrap(),
        shard_tokens,
        "the merge adds the shards up exactly"
    );
    // Merging a shard twice is refused, not double-counted.
    let mut twice = bin(root);
    twice
        .args(["eval", "merge"])
        .arg(&shard_dirs[0])
        .arg(&shard_dirs[0])
        .arg("--out")
        .arg(root.join("twice"));
    let o = twice.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // The report in a real browser.
    let page = merged.join("report.html");
    let url = format!("file://{}", page.display());
    let chromium = |extra: &[&str]| {
        let mut c = std::process::Command::new("chromium");
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,2200",
        ])
        .arg(format!(
            "--user-data-dir={}",
            root.join("chromium").display()
        ))
        .args(extra)
        .arg(&url);
        c.env_remove("DISPLAY");
        c.output()
            .expect("chromium runs (apt-get install chromium)")
    };
    let dom = chromium(&["--dump-dom"]);
    assert!(dom.status.success(), "{}", stderr(&dom));
    let html = String::from_utf8_lossy(&dom.stdout);
    for id in ["success", "tokens", "steps"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "chart {id}: {html}");
    }
    assert!(
        html.matches("class=\"bar\"").count() >= 8 * 3,
        "bars: {html}"
    );
    let shot = root.join("report.png");
    let o = chromium(&[&format!("--screenshot={}", shot.display())]);
    assert!(o.status.success(), "{}", stderr(&o));
    let console: Vec<String> = stderr(&o)
        .lines()
        .chain(stderr(&dom).lines())
        .filter(|l| l.contains("CONSOLE"))
        .map(str::to_string)
        .collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let img = image::open(&shot).expect("a screenshot").to_rgb8();
    let count = |rgb: [u8; 3]| {
        img.pixels()
            .filter(|p| p.0.iter().zip(rgb).all(|(a, b)| a.abs_diff(b) < 8))
            .count()
    };
    assert!(
        count([0x25, 0x63, 0xeb]) > 200,
        "deskpilot's bars are drawn"
    );
    assert!(
        count([0xf9, 0x73, 0x16]) > 200,
        "the screenshot agent's bars are drawn"
    );
    assert!(
        count([0x16, 0xa3, 0x4a]) > 200,
        "the success bars are drawn"
    );
}

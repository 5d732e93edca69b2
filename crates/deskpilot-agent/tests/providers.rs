//! The providers over HTTP against a fake server on 127.0.0.1 (a thread answering
//! canned responses): request bodies, response and usage parsing, retries on 5xx and
//! 429, no retry on 401 or a timeout, and a whole run over the fixture desktop driven
//! by a fake OpenAI-compatible server.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use deskpilot_agent::providers::{AnthropicMessages, OpenAiChat};
use deskpilot_agent::{
    DecideRequest, Decision, Model, RunOptions, RunStatus, decision, model_from_binding, run,
};
use deskpilot_host::config::{ModelBinding, Provider};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::ErrorCode;
use serde_json::{Value, json};

/// One canned answer of the fake server.
enum Reply {
    /// Status, extra headers, body.
    Http(u16, Vec<(&'static str, String)>, String),
    /// Read the request, then say nothing for this long.
    Hang(Duration),
}

/// A request as the fake server received it.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Value,
}

struct FakeServer {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeServer {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn read_request(s: &mut std::net::TcpStream) -> Option<(String, Vec<u8>)> {
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
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

/// Serves `replies` in order, one per connection; later requests get a 500.
fn serve(replies: Vec<Reply>) -> FakeServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut replies = replies.into_iter();
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let Some((head, body)) = read_request(&mut s) else {
                continue;
            };
            log.lock().unwrap().push(Seen {
                head,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            });
            match replies.next() {
                Some(Reply::Hang(d)) => {
                    std::thread::sleep(d);
                }
                Some(Reply::Http(status, headers, body)) => {
                    let mut out = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                        body.len()
                    );
                    for (k, v) in headers {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                    out.push_str("\r\n");
                    out.push_str(&body);
                    let _ = s.write_all(out.as_bytes());
                }
                None => {
                    let body = r#"{"error":"script exhausted"}"#;
                    let _ = s.write_all(
                        format!(
                            "HTTP/1.1 500 X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    );
                }
            }
        }
    });
    FakeServer { base, seen }
}

fn binding(provider: Provider, endpoint: &str, timeout_ms: u64, max_retries: u32) -> ModelBinding {
    ModelBinding {
        provider,
        model: "test-model".into(),
        endpoint: endpoint.into(),
        api_key_env: None,
        timeout_ms,
        max_retries,
    }
}

fn request() -> DecideRequest {
    DecideRequest {
        system: "sys".into(),
        user: "usr".into(),
        schema: decision::schema(),
        max_output_tokens: 256,
        images: vec![],
    }
}

#[test]
fn images_ride_in_the_user_message_of_both_providers() {
    let mut req = request();
    req.images.push(deskpilot_agent::Image {
        png: vec![0x89, b'P', b'N', b'G'],
        width: 2,
        height: 1,
    });
    let o = OpenAiChat::new(
        &binding(Provider::OpenAi, "http://127.0.0.1:9/v1", 1000, 0),
        None,
    );
    let b = o.request_body(&req);
    let parts = b["messages"][1]["content"]
        .as_array()
        .expect("content parts");
    assert_eq!(parts[0], json!({"type": "text", "text": "usr"}));
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(
        parts[1]["image_url"]["url"],
        "data:image/png;base64,iVBORw=="
    );
    let a = AnthropicMessages::new(
        &binding(Provider::Anthropic, "http://127.0.0.1:9", 1000, 0),
        None,
    );
    let b = a.request_body(&req);
    let parts = b["messages"][0]["content"]
        .as_array()
        .expect("content blocks");
    assert_eq!(parts[0]["source"]["data"], "iVBORw==");
    assert_eq!(parts[0]["source"]["media_type"], "image/png");
    assert_eq!(parts[1], json!({"type": "text", "text": "usr"}));
    // Without images the content stays a plain string.
    assert_eq!(o.request_body(&request())["messages"][1]["content"], "usr");
}

/// A Chat Completions answer whose content is `decision`.
fn chat(decision: &str, prompt: u64, completion: u64) -> String {
    json!({
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": decision}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    })
    .to_string()
}

fn ok(body: String) -> Reply {
    Reply::Http(200, vec![], body)
}

fn rt_mt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_openai_request_asks_for_the_strict_schema_and_usage_is_read() {
    let m = OpenAiChat::new(
        &binding(Provider::OpenAi, "http://127.0.0.1:8080/v1/", 1000, 0),
        None,
    );
    assert_eq!(m.url(), "http://127.0.0.1:8080/v1/chat/completions");
    let b = m.request_body(&request());
    assert_eq!(b["model"], "test-model");
    assert_eq!(
        b["messages"][0],
        json!({"role": "system", "content": "sys"})
    );
    assert_eq!(b["messages"][1], json!({"role": "user", "content": "usr"}));
    assert_eq!(b["response_format"]["type"], "json_schema");
    assert_eq!(b["response_format"]["json_schema"]["name"], "decide");
    assert_eq!(b["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        b["response_format"]["json_schema"]["schema"],
        decision::schema()
    );
    assert_eq!(b["max_tokens"], 256);
    assert!(b.get("max_completion_tokens").is_none());
    let hosted = OpenAiChat::new(
        &binding(Provider::OpenAi, "https://api.openai.com/v1", 1000, 0),
        None,
    );
    let hb = hosted.request_body(&request());
    assert_eq!(hb["max_completion_tokens"], 256);
    assert!(hb.get("max_tokens").is_none());

    let v: Value = serde_json::from_str(&chat(
        r#"{"decision":{"kind":"done","summary":"x"}}"#,
        120,
        9,
    ))
    .unwrap();
    let r = OpenAiChat::parse_response(&v).unwrap();
    assert_eq!(
        decision::parse(&r.raw).unwrap(),
        Decision::Done {
            summary: "x".into()
        }
    );
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage.reported
        ),
        (120, 9, true)
    );

    let no_usage = json!({"choices": [{"message": {"content": "{}"}}]});
    assert!(
        !OpenAiChat::parse_response(&no_usage)
            .unwrap()
            .usage
            .reported
    );
    let refusal = json!({"choices": [{"message": {"content": null, "refusal": "I can't help"}}]});
    let r = OpenAiChat::parse_response(&refusal).unwrap();
    assert_eq!(
        decision::parse(&r.raw).unwrap_err().code,
        ErrorCode::ModelSchemaViolation
    );
    let e = OpenAiChat::parse_response(&json!({"error": "x"})).unwrap_err();
    assert_eq!(e.code, ErrorCode::Internal);
}

#[test]
fn the_anthropic_request_forces_the_decide_tool_and_its_input_is_the_answer() {
    for (endpoint, url) in [
        (
            "https://api.anthropic.com",
            "https://api.anthropic.com/v1/messages",
        ),
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/messages"),
        (
            "http://127.0.0.1:9/v1/messages",
            "http://127.0.0.1:9/v1/messages",
        ),
    ] {
        let m = AnthropicMessages::new(&binding(Provider::Anthropic, endpoint, 1000, 0), None);
        assert_eq!(m.url(), url);
    }
    let m = AnthropicMessages::new(
        &binding(Provider::Anthropic, "https://api.anthropic.com", 1000, 0),
        None,
    );
    let b = m.request_body(&request());
    assert_eq!(b["model"], "test-model");
    assert_eq!(b["system"], "sys");
    assert_eq!(b["max_tokens"], 256);
    assert_eq!(b["messages"], json!([{"role": "user", "content": "usr"}]));
    assert_eq!(b["tools"][0]["name"], "decide");
    assert_eq!(b["tools"][0]["input_schema"], decision::schema());
    assert_eq!(b["tool_choice"], json!({"type": "tool", "name": "decide"}));

    let v = json!({
        "content": [
            {"type": "text", "text": "Let me click."},
            {"type": "tool_use", "id": "t1", "name": "decide", "input": {"decision": {"kind": "action", "ref": "e4", "op": "click", "value": null}}},
        ],
        "usage": {"input_tokens": 900, "output_tokens": 40, "cache_read_input_tokens": 100},
    });
    let r = AnthropicMessages::parse_response(&v).unwrap();
    assert_eq!(
        decision::parse(&r.raw).unwrap(),
        Decision::Action {
            ref_: "e4".into(),
            op: deskpilot_core::Op::Click,
            value: None
        }
    );
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage.reported
        ),
        (1000, 40, true)
    );
    // Prose instead of the tool is not a decision.
    let prose = json!({"content": [{"type": "text", "text": "I clicked Save."}]});
    let r = AnthropicMessages::parse_response(&prose).unwrap();
    assert_eq!(
        decision::parse(&r.raw).unwrap_err().code,
        ErrorCode::ModelSchemaViolation
    );
    assert!(!r.usage.reported);
}

#[test]
fn a_500_then_a_200_is_retried_and_the_key_is_sent_as_a_bearer_token() {
    let srv = serve(vec![
        Reply::Http(500, vec![], r#"{"error":"overloaded"}"#.into()),
        ok(chat(
            r#"{"decision":{"kind":"done","summary":"ok"}}"#,
            50,
            7,
        )),
    ]);
    let m = OpenAiChat::new(
        &binding(Provider::OpenAi, &format!("{}/v1", srv.base), 5_000, 2),
        Some("sk-test-123".into()),
    );
    let r = rt_mt().block_on(m.decide(&request())).unwrap();
    assert_eq!(r.usage.input_tokens, 50);
    let seen = srv.seen();
    assert_eq!(seen.len(), 2, "one retry");
    assert!(
        seen[0].head.starts_with("POST /v1/chat/completions "),
        "{}",
        seen[0].head
    );
    assert!(
        seen[1]
            .head
            .to_lowercase()
            .contains("authorization: bearer sk-test-123"),
        "{}",
        seen[1].head
    );
    assert_eq!(
        seen[1].body["response_format"]["json_schema"]["strict"],
        true
    );
}

#[test]
fn a_429_honours_retry_after_and_retries_are_bounded() {
    let srv = serve(vec![
        Reply::Http(429, vec![("retry-after", "1".into())], "{}".into()),
        ok(chat(r#"{"decision":{"kind":"done","summary":"ok"}}"#, 5, 5)),
    ]);
    let m = OpenAiChat::new(&binding(Provider::OpenAi, &srv.base, 5_000, 1), None);
    let t = Instant::now();
    rt_mt().block_on(m.decide(&request())).unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "Retry-After: 1 replaces the 200 ms backoff: {:?}",
        t.elapsed()
    );
    assert_eq!(srv.seen().len(), 2);

    let srv = serve(
        (0..5)
            .map(|_| Reply::Http(503, vec![], "busy".into()))
            .collect(),
    );
    let m = OpenAiChat::new(&binding(Provider::OpenAi, &srv.base, 5_000, 2), None);
    let e = rt_mt().block_on(m.decide(&request())).unwrap_err();
    assert_eq!(e.code, ErrorCode::Internal);
    assert!(e.message.contains("after 3 attempts"), "{}", e.message);
    assert!(e.message.contains("HTTP 503"), "{}", e.message);
    assert_eq!(srv.seen().len(), 3, "max_retries 2 = 3 attempts");
}

#[test]
fn a_refused_key_is_not_retried() {
    let srv = serve(vec![
        Reply::Http(
            401,
            vec![],
            r#"{"error":{"message":"invalid api key"}}"#.into(),
        ),
        ok(chat("{}", 1, 1)),
    ]);
    let m = AnthropicMessages::new(
        &binding(Provider::Anthropic, &srv.base, 5_000, 3),
        Some("bad".into()),
    );
    let e = rt_mt().block_on(m.decide(&request())).unwrap_err();
    assert_eq!(e.code, ErrorCode::NoModelBinding);
    assert!(e.message.contains("HTTP 401"), "{}", e.message);
    assert!(
        !e.message.contains("bad\""),
        "the key is never quoted: {}",
        e.message
    );
    let seen = srv.seen();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].head.starts_with("POST /v1/messages "),
        "{}",
        seen[0].head
    );
    assert!(
        seen[0].head.contains("anthropic-version: 2023-06-01"),
        "{}",
        seen[0].head
    );
    assert!(seen[0].head.contains("x-api-key: bad"), "{}", seen[0].head);
}

#[test]
fn a_model_that_never_answers_times_out_naming_the_endpoint() {
    let srv = serve(vec![
        Reply::Hang(Duration::from_secs(4)),
        Reply::Hang(Duration::from_secs(4)),
    ]);
    let m = OpenAiChat::new(&binding(Provider::OpenAi, &srv.base, 300, 2), None);
    let t = Instant::now();
    let e = rt_mt().block_on(m.decide(&request())).unwrap_err();
    assert_eq!(e.code, ErrorCode::Timeout);
    assert!(e.message.contains(&srv.base), "{}", e.message);
    assert!(e.message.contains("300 ms"), "{}", e.message);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(srv.seen().len(), 1, "a timeout is not retried");
}

#[test]
fn a_run_over_a_fake_openai_server_sums_the_reported_usage() {
    let env = Env::new("http-run");
    let rt = rt_mt();
    rt.block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let save = ref_of(&text, &["button \"Save\""]);
        let srv = serve(vec![
            Reply::Http(500, vec![], "{}".into()),
            ok(chat(&act(&body, "set_value", Some("Hello")), 1000, 20)),
            ok(chat(&act(&save, "click", None), 1100, 15)),
            ok(chat(&done("typed and saved"), 1200, 10)),
        ]);
        let model = model_from_binding(&binding(
            Provider::OpenAi,
            &format!("{}/v1", srv.base),
            5_000,
            2,
        ))
        .unwrap();
        assert_eq!(model.name(), "openai:test-model");
        let r = run(
            &mut h,
            model.as_ref(),
            &RunOptions::new("type Hello and save"),
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(r.status, RunStatus::Done);
        assert_eq!(r.actions_executed.len(), 2);
        assert_eq!(env.acts().len(), 2);
        assert!(r.usage_reported);
        assert_eq!((r.tokens_in, r.tokens_out), (3300, 45));
        assert_eq!(r.steps[0].tokens_in, 1000);
        assert_eq!(srv.seen().len(), 4, "the 500 was retried");
        assert_eq!(r.model.as_deref(), Some("openai:test-model"));
    });
}

#[test]
fn a_timeout_mid_run_is_reported_with_what_was_done() {
    let env = Env::new("http-timeout");
    rt_mt().block_on(async {
        let mut h = env.host(settings(Mode::Bypass));
        let text = editor_text(&mut h).await;
        let body = ref_of(&text, &["textbox \"Body\""]);
        let srv = serve(vec![
            ok(chat(&act(&body, "focus", None), 10, 10)),
            Reply::Hang(Duration::from_secs(3)),
        ]);
        let model = model_from_binding(&binding(Provider::OpenAi, &srv.base, 400, 0)).unwrap();
        let r = run(
            &mut h,
            model.as_ref(),
            &RunOptions::new("focus"),
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(r.status, RunStatus::ModelError);
        let e = r.error.as_ref().unwrap();
        assert_eq!(e.code, ErrorCode::Timeout);
        assert!(e.message.contains(&srv.base), "{}", e.message);
        assert_eq!(r.actions_executed.len(), 1);
        assert!(
            r.summary
                .contains("the model could not be asked (COMPUTER_TIMEOUT)"),
            "{}",
            r.summary
        );
    });
}

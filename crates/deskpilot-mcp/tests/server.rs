//! The MCP server end to end over an in-process byte stream, speaking raw
//! newline-delimited JSON-RPC as a client would, against the fixture desktop
//! (deskpilot_protocol's FixtureDriver) through a real policy host: handshake,
//! the published tools and their schemas (the contract: they are exactly the
//! schemas of the Rust types), structured results, refusals as `isError` results,
//! confirmation through elicitation, progress and cancellation, and robustness
//! against malformed input.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use deskpilot_host::audit::AuditLog;
use deskpilot_host::config::{Config, Effective};
use deskpilot_host::host::{Host, HostOptions};
use deskpilot_host::{Session, StateStore};
use deskpilot_mcp::Server;
use deskpilot_mcp::args::*;
use deskpilot_mcp::output::*;
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::Driver;
use deskpilot_protocol::fixture_driver::FixtureDriver;
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// Fixture pids above Linux's PID_MAX_LIMIT, so no real process is looked up.
const EDITOR_PID: u32 = 4_700_812;
const CALC_PID: u32 = 4_700_901;

static RUNTIME: Once = Once::new();
/// The grant lock and stop record are per runtime directory: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn init() -> MutexGuard<'static, ()> {
    RUNTIME.call_once(|| {
        let dir =
            std::env::temp_dir().join(format!("deskpilot-mcp-runtime-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // SAFETY: runs once, before any test of this binary reads the environment
        // (every test calls `init` first; `call_once` holds the others back).
        unsafe {
            std::env::set_var("DESKPILOT_RUNTIME_DIR", &dir);
            std::env::set_var("XDG_STATE_HOME", dir.join("state"));
            // computer_task reads the config at each call; tests write this file.
            std::env::set_var("DESKPILOT_CONFIG", dir.join("config.toml"));
        }
    });
    let g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    deskpilot_host::control::clear_stop().unwrap();
    g
}

fn my_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

struct Env {
    dir: PathBuf,
    driver: Arc<FixtureDriver>,
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = std::env::temp_dir().join(format!("deskpilot-mcp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let driver = Arc::new(FixtureDriver::desktop());
        let uid = my_uid();
        driver.mutate(|apps| {
            for a in apps.iter_mut() {
                a.info.uid = Some(uid);
                let pid = if a.info.name == "editor" {
                    EDITOR_PID
                } else {
                    CALC_PID
                };
                a.info.pid = Some(pid);
                for w in &mut a.info.windows {
                    w.pid = Some(pid);
                }
            }
        });
        Env { dir, driver }
    }

    fn host(&self, mode: Mode) -> Host {
        let mut s: Effective = Config::default().effective(true);
        s.enabled = true;
        s.mode = mode;
        s.allow_apps = Vec::new();
        s.allow_all_apps = mode != Mode::Default;
        s.deny_apps = Vec::new();
        s.self_apps = Vec::new();
        s.action_budget = 200;
        s.idle_expiry_ms = 600_000;
        let store = StateStore::open_in(&self.dir.join("state"), "fixture").unwrap();
        let key = format!("mcp-{}", self.dir.file_name().unwrap().to_string_lossy());
        let mut o = HostOptions::new(&key, "mcp", "mcp", s);
        o.audit = AuditLog::new(self.dir.join("audit.jsonl"));
        o.approvals_path = self.dir.join("approvals.json");
        o.prompt = None;
        Host::new(
            Session::new(self.driver.clone() as Arc<dyn Driver>, store),
            o,
        )
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A raw JSON-RPC client on one end of the stream.
struct Client {
    r: BufReader<ReadHalf<DuplexStream>>,
    w: WriteHalf<DuplexStream>,
    next: u64,
    /// Notifications received while waiting for responses.
    notes: Vec<Value>,
    /// Answer to an `elicitation/create` request: the `content` to accept with, or
    /// None to decline.
    elicit: Option<Value>,
    elicitations: Vec<Value>,
}

impl Client {
    async fn start(host: Host) -> (Client, tokio::task::JoinHandle<()>) {
        let (ours, theirs) = tokio::io::duplex(16 * 1024 * 1024);
        let (sr, sw) = tokio::io::split(theirs);
        let server = Server::new(host);
        let task = tokio::spawn(async move {
            let transport = AsyncRwTransport::<rmcp::RoleServer, _, _>::new(sr, sw)
                .with_max_line_length(deskpilot_mcp::MAX_STDIO_LINE);
            let running = server.serve(transport).await.expect("handshake");
            let _ = running.waiting().await;
        });
        let (r, w) = tokio::io::split(ours);
        (
            Client {
                r: BufReader::new(r),
                w,
                next: 1,
                notes: Vec::new(),
                elicit: None,
                elicitations: Vec::new(),
            },
            task,
        )
    }

    async fn send_raw(&mut self, line: &[u8]) {
        self.w.write_all(line).await.unwrap();
        self.w.write_all(b"\n").await.unwrap();
        self.w.flush().await.unwrap();
    }

    async fn send(&mut self, v: &Value) {
        self.send_raw(serde_json::to_string(v).unwrap().as_bytes())
            .await;
    }

    async fn request_id(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        id
    }

    /// Reads until the response to `id` arrives (answering elicitations on the way);
    /// fails after `within`.
    async fn response(&mut self, id: u64, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut line = String::new();
            let n = tokio::time::timeout(left, self.r.read_line(&mut line))
                .await
                .unwrap_or_else(|_| panic!("no response to request {id} within {within:?}"))
                .unwrap();
            assert!(n > 0, "the server closed the stream");
            let v: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"));
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                return v;
            }
            if v.get("method") == Some(&json!("elicitation/create")) {
                self.elicitations.push(v["params"].clone());
                let result = match &self.elicit {
                    Some(content) => json!({ "action": "accept", "content": content }),
                    None => json!({ "action": "decline" }),
                };
                let reply = json!({ "jsonrpc": "2.0", "id": v["id"], "result": result });
                self.send(&reply).await;
                continue;
            }
            if v.get("id").is_none() {
                self.notes.push(v);
            }
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.request_id(method, params).await;
        self.response(id, Duration::from_secs(20)).await
    }

    async fn initialize(&mut self, capabilities: Value) -> Value {
        let r = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": capabilities,
                    "clientInfo": { "name": "raw-test", "version": "0" }
                }),
            )
            .await;
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        r
    }

    /// `tools/call`; returns the result object.
    async fn call(&mut self, name: &str, args: Value) -> Value {
        let r = self
            .request("tools/call", json!({ "name": name, "arguments": args }))
            .await;
        assert!(r.get("error").is_none(), "{name}: protocol error {r}");
        r["result"].clone()
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn assert_error(result: &Value, code: &str) {
    assert_eq!(result["isError"], json!(true), "{result}");
    assert_eq!(result["structuredContent"]["code"], json!(code), "{result}");
    assert!(
        result["structuredContent"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert!(
        result["structuredContent"].get("detail").is_some(),
        "{result}"
    );
    assert!(
        text_of(result).contains(&format!("error[{code}]: ")),
        "{}",
        text_of(result)
    );
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The ref of the fixture editor's body textbox, through computer_find.
async fn body_ref(c: &mut Client) -> String {
    let r = c
        .call(
            "computer_find",
            json!({ "text": "Body", "role": "textbox", "app": "editor" }),
        )
        .await;
    assert_eq!(r["isError"], json!(false), "{r}");
    r["structuredContent"]["matches"][0]["ref"]
        .as_str()
        .unwrap()
        .to_string()
}

fn schema<T: schemars::JsonSchema>(serialize: bool) -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    if serialize {
        settings = settings.for_serialize();
    }
    let mut v =
        serde_json::to_value(settings.into_generator().into_root_schema_for::<T>()).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("title");
    m.remove("description");
    deskpilot_mcp::tools::standard_formats(&mut v);
    v
}

/// The output schema of a tool whose success is `T`: an object whose root is `anyOf`
/// the schema of `T` and the refusal `{code, message, detail}` ([`ErrorOutput`]) that
/// every failed call carries, their definitions side by side.
fn output_schema<T: schemars::JsonSchema>() -> Value {
    let mut success = schema::<T>(true);
    let s = success.as_object_mut().unwrap();
    let meta = s.remove("$schema").unwrap();
    let mut defs = s.remove("$defs").unwrap_or_else(|| json!({}));
    let mut refusal = serde_json::to_value(
        schemars::generate::SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<ErrorOutput>(),
    )
    .unwrap();
    deskpilot_mcp::tools::standard_formats(&mut refusal);
    let r = refusal.as_object_mut().unwrap();
    r.remove("$schema");
    r.remove("title");
    for (name, def) in r.remove("$defs").unwrap().as_object().unwrap() {
        defs[name] = def.clone();
    }
    defs["ErrorOutput"] = refusal;
    json!({
        "$schema": meta,
        "type": "object",
        "anyOf": [success, { "$ref": "#/$defs/ErrorOutput" }],
        "$defs": defs,
    })
}

/// The `format` values JSON Schema draft 2020-12 defines (its §7.3, "Defined
/// Formats"), written out here rather than taken from the crate under test.
const VOCABULARY_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every `format` keyword's value in `schema` (keys of `properties` and `$defs`
/// maps are names, not keywords).
fn formats_in(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            if let Some(f) = m.get("format") {
                out.push(f.as_str().map_or_else(|| f.to_string(), str::to_owned));
            }
            for (k, v) in m {
                if k == "properties" || k == "$defs" || k == "patternProperties" {
                    v.as_object()
                        .into_iter()
                        .flat_map(|named| named.values())
                        .for_each(|s| formats_in(s, out));
                } else {
                    formats_in(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|s| formats_in(s, out)),
        _ => {}
    }
}

/// The validators of every published output schema, by tool name.
async fn output_validators(
    c: &mut Client,
) -> std::collections::HashMap<String, jsonschema::Validator> {
    let list = c.request("tools/list", json!({})).await;
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t.get("outputSchema").is_some())
        .map(|t| {
            let name = t["name"].as_str().unwrap().to_string();
            let v = jsonschema::draft202012::new(&t["outputSchema"])
                .unwrap_or_else(|e| panic!("{name}: the output schema does not compile: {e}"));
            (name, v)
        })
        .collect()
}

/// Asserts that the object `v` has each of `keys` (null or not).
fn has_keys(v: &Value, keys: &[&str]) {
    let m = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    for k in keys {
        assert!(m.contains_key(*k), "no {k:?} in {v:#}");
    }
}

/// Asserts that `result` of tool `name` is a success (`is_error` false) or a refusal
/// whose structured content fits the tool's published output schema.
fn assert_fits(
    validators: &std::collections::HashMap<String, jsonschema::Validator>,
    name: &str,
    result: &Value,
    is_error: bool,
) {
    assert_eq!(result["isError"], json!(is_error), "{name}: {result}");
    let sc = &result["structuredContent"];
    assert!(sc.is_object(), "{name}: {result}");
    let errors: Vec<String> = validators[name]
        .iter_errors(sc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{sc:#}");
}

#[test]
fn handshake_tools_and_the_schema_contract() {
    let _g = init();
    let env = Env::new("contract");
    rt().block_on(async {
        let (mut c, _task) = Client::start(env.host(Mode::Bypass)).await;
        let init = c.initialize(json!({})).await;
        let result = &init["result"];
        assert_eq!(result["protocolVersion"], json!("2025-06-18"));
        assert_eq!(result["serverInfo"]["name"], json!("deskpilot"));
        assert!(result["capabilities"]["tools"].is_object(), "{init}");
        let instructions = result["instructions"].as_str().unwrap();
        assert_eq!(instructions, deskpilot_mcp::INSTRUCTIONS);
        for must in [
            "Observe once",
            "set_value",
            "computer_keys",
            "irreversible",
            "data, not instructions",
        ] {
            assert!(instructions.contains(must), "instructions lack {must:?}");
        }

        let list = c.request("tools/list", json!({})).await;
        let tools = list["result"]["tools"].as_array().unwrap().clone();
        // Every schema is a valid draft 2020-12 schema whose `format`s are the
        // vocabulary's own (clients such as Claude Code warn on any other).
        for t in &tools {
            for key in ["inputSchema", "outputSchema"] {
                let Some(schema) = t.get(key) else { continue };
                assert!(
                    jsonschema::meta::is_valid(schema),
                    "{}: {key} is not a valid JSON Schema",
                    t["name"]
                );
                let mut formats = Vec::new();
                formats_in(schema, &mut formats);
                let unknown: Vec<&String> = formats
                    .iter()
                    .filter(|f| !VOCABULARY_FORMATS.contains(&f.as_str()))
                    .collect();
                assert!(unknown.is_empty(), "{}: {key} uses {unknown:?}", t["name"]);
            }
        }
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "computer_apps",
                "computer_observe",
                "computer_find",
                "computer_read",
                "computer_act",
                "computer_wait",
                "computer_keys",
                "computer_launch",
                "computer_screenshot",
                "computer_task",
                "computer_clipboard"
            ]
        );
        let by = |n: &str| {
            tools
                .iter()
                .find(|t| t["name"] == json!(n))
                .unwrap()
                .clone()
        };
        let expected: Vec<(&str, Value, Option<Value>, bool)> = vec![
            (
                "computer_apps",
                schema::<AppsArgs>(false),
                Some(output_schema::<AppsOutput>()),
                true,
            ),
            (
                "computer_observe",
                schema::<ObserveArgs>(false),
                Some(output_schema::<ObserveOutput>()),
                true,
            ),
            (
                "computer_find",
                schema::<FindArgs>(false),
                Some(output_schema::<FindOutput>()),
                true,
            ),
            (
                "computer_act",
                schema::<ActArgs>(false),
                Some(output_schema::<ActOutput>()),
                false,
            ),
            (
                "computer_wait",
                schema::<WaitArgs>(false),
                Some(output_schema::<WaitOutput>()),
                true,
            ),
            (
                "computer_keys",
                schema::<KeysArgs>(false),
                Some(output_schema::<KeysOutput>()),
                false,
            ),
            (
                "computer_launch",
                schema::<LaunchArgs>(false),
                Some(output_schema::<LaunchOutput>()),
                false,
            ),
            (
                "computer_screenshot",
                schema::<ScreenshotArgs>(false),
                None,
                true,
            ),
            (
                "computer_task",
                schema::<TaskArgs>(false),
                Some(output_schema::<TaskOutput>()),
                false,
            ),
        ];
        for (name, input, output, read_only) in expected {
            let t = by(name);
            assert_eq!(t["inputSchema"], input, "{name} input schema");
            assert_eq!(t["inputSchema"]["type"], json!("object"), "{name}");
            assert_eq!(
                t.get("outputSchema").cloned(),
                output,
                "{name} output schema"
            );
            assert_eq!(t["annotations"]["readOnlyHint"], json!(read_only), "{name}");
            assert_eq!(
                t["annotations"]["destructiveHint"],
                json!(!read_only),
                "{name}"
            );
            assert_eq!(t["annotations"]["openWorldHint"], json!(false), "{name}");
        }
        // Doc comments became descriptions.
        let observe = by("computer_observe");
        assert!(
            observe["inputSchema"]["properties"]["max_tokens"]["description"]
                .as_str()
                .unwrap()
                .contains("at most 8000")
        );
        assert_eq!(
            observe["inputSchema"]["properties"]["max_tokens"]["maximum"],
            json!(8000)
        );
        let act = by("computer_act");
        assert_eq!(
            act["inputSchema"]["properties"]["actions"]["maxItems"],
            json!(20)
        );
        assert_eq!(act["inputSchema"]["required"], json!(["actions"]));
    });
}

#[test]
fn observe_act_and_read_back_with_structured_content() {
    let _g = init();
    let env = Env::new("act");
    rt().block_on(async {
        let (mut c, _task) = Client::start(env.host(Mode::Bypass)).await;
        c.initialize(json!({})).await;

        let apps = c.call("computer_apps", json!({})).await;
        assert_eq!(apps["isError"], json!(false), "{apps}");
        assert!(
            text_of(&apps).contains("app editor pid=4700812"),
            "{}",
            text_of(&apps)
        );
        let names: Vec<&str> = apps["structuredContent"]["apps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["editor", "gnome-calculator"]);

        let obs = c
            .call(
                "computer_observe",
                json!({ "app": "editor", "max_tokens": 1500 }),
            )
            .await;
        assert_eq!(obs["isError"], json!(false), "{obs}");
        let sc = &obs["structuredContent"];
        let refs: Vec<String> = sc["refs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        assert!(refs.len() > 5, "{refs:?}");
        let text = text_of(&obs);
        assert!(
            text.starts_with(sc["snapshot"].as_str().unwrap().trim_end()),
            "text begins with the snapshot"
        );
        for r in &refs {
            assert!(text.contains(&format!("[{r}]")), "{r} not in the text");
        }
        assert!(sc["tokens"].as_u64().unwrap() <= 1500);
        assert_eq!(sc["max_tokens"], json!(1500));
        assert_eq!(sc["app"], json!("editor"));
        assert!(text.contains(" tokens · read "), "{text}");
        assert!(text.contains("grant g-"), "{text}");

        let body = body_ref(&mut c).await;
        let act = c
            .call(
                "computer_act",
                json!({ "actions": [
                    { "ref": body, "op": "set_value", "value": "hello from mcp" },
                    { "ref": body, "op": "type", "value": "!" }
                ] }),
            )
            .await;
        assert_eq!(act["isError"], json!(false), "{act}");
        let sc = &act["structuredContent"];
        assert_eq!(sc["requested"], json!(2));
        assert_eq!(sc["stopped"], Value::Null);
        assert_eq!(sc["actions"].as_array().unwrap().len(), 2);
        assert_eq!(sc["actions"][0]["status"], json!("executed"));
        assert_eq!(sc["actions"][0]["channel"], json!("text"));
        let text = text_of(&act);
        assert!(
            text.starts_with(&format!("ok set_value {body} textbox \"Body\" via text:")),
            "{text}"
        );
        assert!(
            text.contains("hello from mcp"),
            "the diff shows the new value: {text}"
        );
        assert!(text.trim_end().ends_with(" tokens)"), "{text}");

        let find = c
            .call("computer_find", json!({ "text": "hello from mcp!" }))
            .await;
        assert_eq!(
            find["structuredContent"]["matches"][0]["ref"],
            json!(body),
            "{find}"
        );

        // A ref that does not exist: an isError result with the host's code.
        let stale = c
            .call(
                "computer_act",
                json!({ "actions": [{ "ref": "e9999", "op": "click" }] }),
            )
            .await;
        assert_error(&stale, "COMPUTER_ELEMENT_NOT_FOUND");
        assert!(
            text_of(&stale)
                .starts_with("error[COMPUTER_ELEMENT_NOT_FOUND]: ref e9999 is not known"),
            "{}",
            text_of(&stale)
        );

        // A failure mid-batch reports what ran before it.
        let mixed = c
            .call(
                "computer_act",
                json!({ "actions": [
                    { "ref": body, "op": "set_value", "value": "first" },
                    { "ref": "e9999", "op": "click" },
                    { "ref": body, "op": "set_value", "value": "never" }
                ] }),
            )
            .await;
        assert_error(&mixed, "COMPUTER_ELEMENT_NOT_FOUND");
        let d = &mixed["structuredContent"]["detail"];
        assert_eq!(d["failed"]["index"], json!(1));
        assert_eq!(d["ran"].as_array().unwrap().len(), 1);
        assert_eq!(d["not_run"], json!([body]));
        assert!(
            text_of(&mixed).starts_with(&format!("ok set_value {body}")),
            "{}",
            text_of(&mixed)
        );
        let check = c.call("computer_find", json!({ "text": "never" })).await;
        assert_eq!(
            check["structuredContent"]["matches"],
            json!([]),
            "the third action did not run"
        );

        let shot = c
            .call("computer_screenshot", json!({ "mode": "image" }))
            .await;
        // The grant allows no pixels (the default): refused, naming the setting.
        assert_error(&shot, "COMPUTER_SCOPE_VIOLATION");
        assert!(text_of(&shot).contains("capture a11y-and-pixels"));
        assert!(
            shot["content"]
                .as_array()
                .unwrap()
                .iter()
                .all(|b| b["type"] == json!("text")),
            "no image"
        );
    });
}

#[test]
fn every_result_fits_its_published_output_schema() {
    let _g = init();
    let env = Env::new("schemas");
    rt().block_on(async {
        let (mut c, _task) = Client::start(env.host(Mode::Bypass)).await;
        c.initialize(json!({})).await;
        let v = output_validators(&mut c).await;
        let mut names: Vec<&str> = v.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "computer_act",
                "computer_apps",
                "computer_clipboard",
                "computer_find",
                "computer_keys",
                "computer_launch",
                "computer_observe",
                "computer_read",
                "computer_task",
                "computer_wait"
            ]
        );
        // The clipboard is off by default: the refusal fits the schema too.
        let r = c.call("computer_clipboard", json!({ "op": "read" })).await;
        assert_fits(&v, "computer_clipboard", &r, true);
        assert_error(&r, "COMPUTER_SCOPE_VIOLATION");

        // Successes, each with at least the fields its result publishes.
        let r = c.call("computer_apps", json!({})).await;
        assert_fits(&v, "computer_apps", &r, false);
        let sc = &r["structuredContent"];
        has_keys(sc, &["apps", "omitted", "grant"]);
        has_keys(&sc["apps"][0], &["name", "pid", "status", "windows"]);
        let w = &sc["apps"][0]["windows"][0];
        has_keys(w, &["ref", "title", "role", "active", "bound", "refused"]);
        assert!(w["refused"].is_null(), "{w}");
        let r = c.call("computer_observe", json!({ "app": "editor" })).await;
        assert_fits(&v, "computer_observe", &r, false);
        let sc = &r["structuredContent"];
        has_keys(
            sc,
            &[
                "window_ref",
                "app",
                "title",
                "snapshot",
                "refs",
                "tokens",
                "max_tokens",
                "shown",
                "omitted",
                "objects_read",
                "elapsed_ms",
                "grant",
                "basis",
            ],
        );
        has_keys(
            &sc["grant"],
            &[
                "grant_id",
                "scope",
                "issuer",
                "window_ref",
                "app",
                "revision",
                "actions_left",
                "mode",
                "line",
            ],
        );
        let body = body_ref(&mut c).await;
        let r = c
            .call(
                "computer_find",
                json!({ "text": "Body", "role": "TextBox" }),
            )
            .await;
        assert_fits(&v, "computer_find", &r, false);
        has_keys(
            &r["structuredContent"],
            &["matches", "omitted", "unsearched"],
        );
        has_keys(
            &r["structuredContent"]["matches"][0],
            &["ref", "role", "name", "line", "window_ref", "window_title"],
        );
        let r = c
            .call("computer_read", json!({ "ref": body, "tail": 5 }))
            .await;
        assert_fits(&v, "computer_read", &r, false);
        has_keys(
            &r["structuredContent"],
            &["ref", "text", "from", "to", "total_chars", "complete"],
        );
        let sc = &r["structuredContent"];
        assert_eq!(
            sc["to"].as_u64().unwrap() - sc["from"].as_u64().unwrap(),
            sc["text"].as_str().unwrap().chars().count() as u64,
            "{sc}"
        );
        let r = c
            .call(
                "computer_act",
                json!({ "actions": [
                    { "ref": body, "op": "set_value", "value": "checked against the schema" },
                    { "ref": body, "op": "type", "value": "!" }
                ], "max_tokens": 50 }),
            )
            .await;
        assert_fits(&v, "computer_act", &r, false);
        let sc = &r["structuredContent"];
        has_keys(sc, &["actions", "requested", "stopped"]);
        has_keys(
            &sc["actions"][0],
            &[
                "ref",
                "op",
                "status",
                "channel",
                "method",
                "note",
                "elapsed_ms",
                "change",
            ],
        );
        has_keys(
            &sc["actions"][0]["change"],
            &["diff", "diff_omitted", "new_windows", "closed_windows"],
        );
        let r = c
            .call("computer_wait", json!({ "text": "against the schema" }))
            .await;
        assert_fits(&v, "computer_wait", &r, false);
        has_keys(
            &r["structuredContent"],
            &["met", "elapsed_ms", "matches", "omitted"],
        );
        let r = c.call("computer_keys", json!({ "keys": "ctrl+a" })).await;
        assert_fits(&v, "computer_keys", &r, false);
        has_keys(
            &r["structuredContent"],
            &[
                "window_ref",
                "channel",
                "events_sent",
                "elapsed_ms",
                "change",
            ],
        );
        let r = c
            .call(
                "computer_launch",
                json!({ "command": ["mousepad"], "wait_ms": 2000 }),
            )
            .await;
        assert_fits(&v, "computer_launch", &r, false);
        has_keys(&r["structuredContent"], &["pid", "window", "elapsed_ms"]);
        write_config("");
        let r = c
            .call(
                "computer_task",
                json!({ "instruction": "what is there?", "observe_only": true }),
            )
            .await;
        assert_fits(&v, "computer_task", &r, false);
        let sc = &r["structuredContent"];
        has_keys(
            sc,
            &[
                "status",
                "summary",
                "model",
                "actions_executed",
                "windows_touched",
                "tokens_in",
                "tokens_out",
                "usage_reported",
                "wall_ms",
                "steps",
                "step_cap",
                "scope",
                "record",
            ],
        );
        has_keys(
            &sc["scope"],
            &[
                "bound_window",
                "windows",
                "observation",
                "observation_tokens",
            ],
        );
        has_keys(
            &sc["scope"]["windows"][0],
            &["ref", "app", "title", "bound", "refused", "refused_reason"],
        );

        // Refusals: arguments that do not fit, then the host's own.
        for name in v.keys() {
            let r = c.call(name, json!({ "no_such_argument": 1 })).await;
            assert_error(&r, "COMPUTER_INVALID_ARGUMENT");
            assert_fits(&v, name, &r, true);
        }
        let refusals = [
            ("computer_observe", json!({ "app": "no-such-app" })),
            ("computer_find", json!({ "text": "x", "role": "spaceship" })),
            (
                "computer_act",
                json!({ "actions": [{ "ref": "e9999", "op": "click" }] }),
            ),
            (
                "computer_wait",
                json!({ "text": "never there", "timeout_ms": 0 }),
            ),
            ("computer_keys", json!({ "keys": "ctrl+nosuchkey" })),
            (
                "computer_launch",
                json!({ "command": ["sh", "-c", "true"] }),
            ),
            (
                "computer_task",
                json!({ "instruction": "type into the body" }),
            ),
        ];
        for (name, args) in refusals {
            let r = c.call(name, args).await;
            assert_fits(&v, name, &r, true);
        }
        let r = c
            .call("computer_find", json!({ "text": "x", "role": "spaceship" }))
            .await;
        assert!(
            text_of(&r).contains("\"spaceship\" is not a role; roles: application, window,"),
            "{}",
            text_of(&r)
        );
    });
}

#[test]
fn plan_mode_refuses_actions_as_tool_results() {
    let _g = init();
    let env = Env::new("plan");
    rt().block_on(async {
        let (mut c, _task) = Client::start(env.host(Mode::Plan)).await;
        c.initialize(json!({})).await;
        let obs = c.call("computer_observe", json!({ "app": "editor" })).await;
        assert_eq!(obs["isError"], json!(false), "plan mode still reads: {obs}");
        let first = obs["structuredContent"]["refs"][0]
            .as_str()
            .unwrap()
            .to_string();
        let act = c
            .call(
                "computer_act",
                json!({ "actions": [{ "ref": first, "op": "click" }] }),
            )
            .await;
        assert_error(&act, "COMPUTER_SCOPE_VIOLATION");
        assert!(text_of(&act).contains("plan mode"), "{}", text_of(&act));
        let keys = c.call("computer_keys", json!({ "keys": "ctrl+s" })).await;
        assert_error(&keys, "COMPUTER_SCOPE_VIOLATION");
        let launch = c
            .call("computer_launch", json!({ "command": ["true"] }))
            .await;
        assert_error(&launch, "COMPUTER_SCOPE_VIOLATION");
        let audit = std::fs::read_to_string(env.dir.join("audit.jsonl")).unwrap();
        assert!(
            audit.lines().filter(|l| l.contains("\"refused\"")).count() >= 3,
            "{audit}"
        );
    });
}

#[test]
fn launch_never_starts_an_interpreter_and_follows_the_mode() {
    let _g = init();
    let env = Env::new("launch");
    rt().block_on(async {
        // Bypass asks nothing, yet interpreters, terminals and privilege tools stay out.
        let (mut c, _task) = Client::start(env.host(Mode::Bypass)).await;
        c.initialize(json!({})).await;
        for cmd in [
            json!(["sh", "-c", "id > /tmp/deskpilot-launch-probe"]),
            json!(["/usr/bin/env", "python3", "-c", "print(1)"]),
            json!(["python3", "-c", "print(1)"]),
            json!(["xterm"]),
        ] {
            let r = c.call("computer_launch", json!({ "command": cmd })).await;
            assert_error(&r, "COMPUTER_DENYLISTED");
            assert!(text_of(&r).contains("interpreter"), "{}", text_of(&r));
        }
        assert!(!std::path::Path::new("/tmp/deskpilot-launch-probe").exists());
        let r = c
            .call(
                "computer_launch",
                json!({ "command": ["no-such-program-xyz"] }),
            )
            .await;
        assert_error(&r, "COMPUTER_ELEMENT_NOT_FOUND");
    });
    rt().block_on(async {
        // Only installed applications launch: not a program the menu does not list,
        // not with options.
        let (mut c, _task) = Client::start(env.host(Mode::Bypass)).await;
        c.initialize(json!({})).await;
        for cmd in [
            json!(["true"]),
            json!(["find", "/tmp"]),
            json!(["/lib64/ld-linux-x86-64.so.2", "/bin/true"]),
        ] {
            let r = c.call("computer_launch", json!({ "command": cmd })).await;
            assert_error(&r, "COMPUTER_SCOPE_VIOLATION");
        }
        let r = c
            .call(
                "computer_launch",
                json!({ "command": ["mousepad", "--preferences"] }),
            )
            .await;
        assert_error(&r, "COMPUTER_INVALID_ARGUMENT");
    });
    rt().block_on(async {
        // Default mode: launching an app is a first use that needs the user.
        let (mut c, _task) = Client::start(env.host(Mode::Default)).await;
        c.initialize(json!({})).await;
        let r = c
            .call("computer_launch", json!({ "command": ["mousepad"] }))
            .await;
        assert_error(&r, "COMPUTER_CONFIRMATION_REQUIRED");
        assert!(
            r["structuredContent"]["detail"]["approval_id"].is_string(),
            "{r}"
        );
    });
}

#[test]
fn confirmation_goes_through_elicitation_or_returns_the_approval_id() {
    let _g = init();
    let env = Env::new("confirm");
    rt().block_on(async {
        // A client without elicitation: the refusal carries the approval id.
        let (mut c, task) = Client::start(env.host(Mode::Default)).await;
        c.initialize(json!({})).await;
        let body = body_ref(&mut c).await;
        let act = c
            .call(
                "computer_act",
                json!({ "actions": [{ "ref": body, "op": "set_value", "value": "x" }] }),
            )
            .await;
        assert_error(&act, "COMPUTER_CONFIRMATION_REQUIRED");
        let id = act["structuredContent"]["detail"]["approval_id"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            text_of(&act).contains(&format!("deskpilot approve {id}")),
            "{}",
            text_of(&act)
        );
        assert!(c.elicitations.is_empty());
        drop(c);
        task.abort();

        // A client with elicitation whose user declines: nothing happens.
        let (mut c, task) = Client::start(env.host(Mode::Default)).await;
        c.initialize(json!({ "elicitation": {} })).await;
        let body = body_ref(&mut c).await;
        c.elicit = None;
        let act = c
            .call(
                "computer_act",
                json!({ "actions": [{ "ref": body, "op": "set_value", "value": "declined" }] }),
            )
            .await;
        assert_error(&act, "COMPUTER_CONFIRMATION_REQUIRED");
        assert_eq!(c.elicitations.len(), 1);
        let asked = c.elicitations[0]["message"].as_str().unwrap();
        assert!(
            asked.contains("set_value textbox \"Body\" in editor"),
            "{asked}"
        );
        assert_eq!(
            c.elicitations[0]["requestedSchema"]["properties"]["allow"]["type"],
            json!("boolean")
        );

        // The user allows: the action runs once, approved by the user, not the model.
        c.elicit = Some(json!({ "allow": true }));
        let act = c
            .call(
                "computer_act",
                json!({ "actions": [{ "ref": body, "op": "set_value", "value": "approved" }] }),
            )
            .await;
        assert_eq!(act["isError"], json!(false), "{act}");
        assert_eq!(c.elicitations.len(), 2);
        assert!(text_of(&act).contains("approved"), "{}", text_of(&act));
        drop(c);
        task.abort();
    });
}

#[test]
fn progress_cancellation_and_robustness() {
    let _g = init();
    let env = Env::new("robust");
    rt().block_on(async {
        let (mut c, _task) = Client::start(env.host(Mode::Bypass)).await;
        c.initialize(json!({})).await;
        c.call("computer_observe", json!({ "app": "editor" })).await;

        // A long wait sends progress, and a cancellation ends it at once.
        let id = c
            .request_id(
                "tools/call",
                json!({ "name": "computer_wait", "arguments": { "text": "text that never appears", "timeout_ms": 60000 },
                        "_meta": { "progressToken": "wait-1" } }),
            )
            .await;
        let started = Instant::now();
        let probe = c.request_id("tools/list", json!({})).await;
        c.response(probe, Duration::from_secs(5)).await;
        // Wait for two progress notifications.
        while c.notes.iter().filter(|n| n["method"] == json!("notifications/progress")).count() < 2 {
            let p = c.request_id("ping", json!({})).await;
            c.response(p, Duration::from_secs(5)).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(started.elapsed() < Duration::from_secs(10), "no progress: {:?}", c.notes);
        }
        let p = c.notes.iter().find(|n| n["method"] == json!("notifications/progress")).unwrap();
        assert_eq!(p["params"]["progressToken"], json!("wait-1"));
        assert_eq!(p["params"]["total"], json!(60.0));
        c.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id, "reason": "test" } })).await;
        let t = Instant::now();
        let obs = c.call("computer_observe", json!({})).await;
        assert_eq!(obs["isError"], json!(false), "{obs}");
        assert!(t.elapsed() < Duration::from_secs(3), "the host was released: {:?}", t.elapsed());

        // Malformed JSON is skipped; the server keeps serving.
        c.send_raw(b"{this is not json").await;
        // Arguments of the wrong type: an isError result the model can correct.
        let bad = c.call("computer_act", json!({ "actions": "click e5" })).await;
        assert_error(&bad, "COMPUTER_INVALID_ARGUMENT");
        let bad = c.call("computer_observe", json!({ "max_tokens": "many" })).await;
        assert_error(&bad, "COMPUTER_INVALID_ARGUMENT");
        let bad = c.call("computer_act", json!({ "actions": [] })).await;
        assert_error(&bad, "COMPUTER_INVALID_ARGUMENT");
        // An unknown tool is a protocol error (invalid params).
        let unknown = c.request("tools/call", json!({ "name": "computer_fly", "arguments": {} })).await;
        assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
        // A 10 MB line (over the 4 MiB limit) is dropped, not buffered or answered.
        let mut big = br#"{"jsonrpc":"2.0","id":999,"method":"tools/call","params":{"name":"computer_find","arguments":{"text":""#.to_vec();
        big.extend(std::iter::repeat_n(b'a', 10 * 1024 * 1024));
        big.extend(br#""}}}"#);
        c.send_raw(&big).await;
        let list = c.request("tools/list", json!({})).await;
        assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 11, "{list}");
    });
}

#[test]
fn streamable_http_serves_loopback_only_with_the_token() {
    let _g = init();
    let env = Env::new("http");
    let token = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
    let auth = || deskpilot_mcp::HttpAuth::new(token).unwrap();
    rt().block_on(async {
        let far = deskpilot_mcp::serve_http(
            Server::new(env.host(Mode::Bypass)),
            "0.0.0.0:0".parse().unwrap(),
            auth(),
        )
        .await;
        let e = far.unwrap_err();
        assert_eq!(e.code, deskpilot_protocol::ErrorCode::InvalidArgument);
        assert!(e.message.contains("loopback"), "{}", e.message);

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Server::new(env.host(Mode::Bypass));
        let task = tokio::spawn(deskpilot_mcp::serve_listener(server, listener, auth()));

        let post = |host: &str, extra: &str, body: &str| {
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        };
        let bearer = format!("Authorization: Bearer {token}\r\n");
        let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "http-test", "version": "0" } } })
        .to_string();
        let exchange = |req: String| async move {
            use tokio::io::AsyncReadExt;
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(req.as_bytes()).await.unwrap();
            let mut out = String::new();
            tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out))
                .await
                .expect("an HTTP answer")
                .unwrap();
            out
        };
        let host = addr.to_string();
        let ok = exchange(post(&host, &bearer, &init)).await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains("\"name\":\"deskpilot\""), "{ok}");
        assert!(ok.to_lowercase().contains("mcp-session-id"), "{ok}");
        // Without the token, or with another, nothing is served.
        let anonymous = exchange(post(&host, "", &init)).await;
        assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous}");
        assert!(anonymous.to_lowercase().contains("www-authenticate: bearer"), "{anonymous}");
        assert!(!anonymous.contains("deskpilot\",\"version"), "{anonymous}");
        let wrong = exchange(post(&host, "Authorization: Bearer 0000\r\n", &init)).await;
        assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
        // A web page's request (a foreign Origin) is refused even with the token.
        let page = exchange(post(
            &host,
            &format!("{bearer}Origin: https://evil.example\r\n"),
            &init,
        ))
        .await;
        assert!(page.starts_with("HTTP/1.1 403"), "{page}");
        // A foreign Host header (DNS rebinding) is refused.
        let rebound = exchange(post("evil.example:80", &bearer, &init)).await;
        assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
        task.abort();

        // On a Unix socket this user is served without a token (a host of its own:
        // the HTTP server's open connections still hold the first one's state).
        let unix_env = Env::new("unix");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.sock");
        let server = Server::new(unix_env.host(Mode::Bypass));
        let p = path.clone();
        let task = tokio::spawn(async move { deskpilot_mcp::serve_unix(server, &p).await });
        let start = Instant::now();
        while !path.exists() {
            assert!(start.elapsed() < Duration::from_secs(10), "the socket never appeared");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let mut s = tokio::net::UnixStream::connect(&path).await.unwrap();
        s.write_all(post("localhost", "", &init).as_bytes()).await.unwrap();
        let mut out = String::new();
        use tokio::io::AsyncReadExt;
        tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out))
            .await
            .expect("an answer on the socket")
            .unwrap();
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        task.abort();
    });
}

/// The config file `computer_task` reads (see `init`).
fn write_config(text: &str) {
    let path = std::env::var_os("DESKPILOT_CONFIG").expect("init sets DESKPILOT_CONFIG");
    std::fs::write(path, text).unwrap();
}

/// A fake OpenAI-compatible endpoint on 127.0.0.1: answers each chat completion with
/// `answer(user message)` (the decision JSON) and a usage block of 100 + 10·n prompt
/// and 7 completion tokens for the n-th request (1-based). Returns the base URL and
/// the user messages it received.
fn fake_openai(
    answer: impl Fn(&str) -> String + Send + 'static,
) -> (String, Arc<Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            s.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let (head_end, len) = loop {
                let n = s.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break (0, 0);
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..p]).to_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (p + 4, len);
                }
            };
            if head_end == 0 {
                continue;
            }
            while buf.len() < head_end + len {
                let n = s.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
            let user = body["messages"][1]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let n = {
                let mut l = log.lock().unwrap();
                l.push(user.clone());
                l.len() as u64
            };
            let reply = json!({
                "id": format!("chatcmpl-{n}"),
                "object": "chat.completion",
                "model": "fake",
                "choices": [{ "index": 0, "finish_reason": "stop",
                    "message": { "role": "assistant", "content": answer(&user) } }],
                "usage": { "prompt_tokens": 100 + 10 * n, "completion_tokens": 7, "total_tokens": 107 + 10 * n }
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
    (base, seen)
}

/// The ref on the first line of `user` that contains `needle`.
fn ref_on_line(user: &str, needle: &str) -> Option<String> {
    let line = user.lines().find(|l| l.contains(needle))?;
    let start = line.find("[e")? + 1;
    let end = start + line[start..].find(']')?;
    Some(line[start..end].to_string())
}

#[test]
fn computer_task_runs_the_bound_model_and_reports_what_the_host_did() {
    let _g = init();
    let env = Env::new("task");
    let (base, seen) = fake_openai(|user| {
        if user.contains("Earlier steps:") {
            json!({ "decision": { "kind": "done", "summary": "I typed it and everything is perfect" } })
        } else {
            let body = ref_on_line(user, "textbox \"Body\"").expect("the body textbox is shown");
            json!({ "decision": { "kind": "action", "ref": body, "op": "set_value", "value": "from the model" } })
        }
        .to_string()
    });
    rt().block_on(async {
        let (mut c, _task) = Client::start(env.host(Mode::Bypass)).await;
        c.initialize(json!({})).await;
        let obs = c.call("computer_observe", json!({ "app": "editor" })).await;
        let grant = obs["structuredContent"]["grant"]["grant_id"].clone();
        assert!(grant.is_string(), "{obs}");

        // No binding: refused before the desktop is touched.
        write_config("");
        let r = c
            .call("computer_task", json!({ "instruction": "type into the body" }))
            .await;
        assert_error(&r, "COMPUTER_NO_MODEL_BINDING");
        assert!(
            text_of(&r).contains("deskpilot config set model.provider"),
            "{}",
            text_of(&r)
        );
        assert!(seen.lock().unwrap().is_empty());

        // Observe only: no model needed, nothing done.
        let r = c
            .call(
                "computer_task",
                json!({ "instruction": "what is there?", "observe_only": true }),
            )
            .await;
        assert_eq!(r["isError"], json!(false), "{r}");
        let sc = &r["structuredContent"];
        assert_eq!(sc["status"], json!("observe_only"), "{r}");
        assert_eq!(sc["steps"], json!(0));
        assert_eq!(sc["actions_executed"], json!([]));
        let apps: Vec<&str> = sc["scope"]["windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["app"].as_str().unwrap())
            .collect();
        assert!(apps.contains(&"editor"), "{apps:?}");
        assert!(text_of(&r).contains("textbox \"Body\""), "{}", text_of(&r));

        // Bound: two steps (set_value, done), one progress notification each.
        write_config(&format!(
            "[model]\nprovider = \"openai\"\nmodel = \"fake\"\nendpoint = \"{base}\"\ntimeout_ms = 5000\n"
        ));
        let id = c
            .request_id(
                "tools/call",
                json!({ "name": "computer_task",
                        "arguments": { "instruction": "type into the body", "max_steps": 5 },
                        "_meta": { "progressToken": "task-1" } }),
            )
            .await;
        let resp = c.response(id, Duration::from_secs(60)).await;
        let r = &resp["result"];
        assert_eq!(r["isError"], json!(false), "{resp}");
        assert_fits(&output_validators(&mut c).await, "computer_task", r, false);
        let sc = &r["structuredContent"];
        assert_eq!(sc["status"], json!("done"), "{r}");
        assert_eq!(sc["steps"], json!(2));
        assert_eq!(sc["step_cap"], json!(5));
        assert_eq!(sc["model"], json!("openai:fake"));
        let acts = sc["actions_executed"].as_array().unwrap();
        assert_eq!(acts.len(), 1, "{sc}");
        assert_eq!(acts[0]["op"], json!("set_value"));
        assert_eq!(acts[0]["role"], json!("textbox"));
        assert_eq!(acts[0]["name"], json!("Body"));
        assert_eq!(acts[0]["status"], json!("executed"));
        assert_eq!(acts[0]["channel"], json!("text"));
        assert_eq!(sc["tokens_in"], json!(110 + 120));
        assert_eq!(sc["tokens_out"], json!(14));
        assert_eq!(sc["usage_reported"], json!(true));
        assert_eq!(
            sc["model_claim"],
            json!("I typed it and everything is perfect")
        );
        let summary = sc["summary"].as_str().unwrap();
        assert!(!summary.contains("perfect"), "the summary is the host's: {summary}");
        assert!(summary.contains("set_value textbox \"Body\" via text"), "{summary}");
        let text = text_of(r);
        assert!(text.starts_with("done: 1 action executed"), "{text}");
        assert!(
            text.contains("the model says (unverified): I typed it and everything is perfect"),
            "{text}"
        );
        let record = sc["record"].as_str().expect("the run record was written");
        let rec: Value = serde_json::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
        assert_eq!(rec["status"], json!("done"));
        assert!(!rec.to_string().contains("from the model"), "no typed text in the record");
        let progress: Vec<&Value> = c
            .notes
            .iter()
            .filter(|n| n["method"] == json!("notifications/progress"))
            .collect();
        assert_eq!(progress.len(), 2, "{:?}", c.notes);
        assert_eq!(progress[0]["params"]["progressToken"], json!("task-1"));
        assert_eq!(progress[0]["params"]["progress"], json!(1.0));
        assert_eq!(progress[0]["params"]["total"], json!(5.0));
        let line = progress[0]["params"]["message"].as_str().unwrap();
        assert!(
            line.starts_with("step 1 · action set_value e") && line.contains("executed via text"),
            "{line}"
        );
        assert!(
            progress[1]["params"]["message"]
                .as_str()
                .unwrap()
                .starts_with("step 2 · done"),
            "{progress:?}"
        );
        assert_eq!(seen.lock().unwrap().len(), 2);

        // The grant stays for the client's next calls, and the text is in the body.
        let find = c.call("computer_find", json!({ "text": "from the model" })).await;
        assert_eq!(
            find["structuredContent"]["matches"].as_array().map(Vec::len),
            Some(1),
            "{find}"
        );
        let obs = c.call("computer_observe", json!({})).await;
        assert_eq!(obs["structuredContent"]["grant"]["grant_id"], grant, "{obs}");

        // Schema limits: max_steps 0 is refused, an unknown argument too.
        let bad = c
            .call("computer_task", json!({ "instruction": "x", "max_steps": 0 }))
            .await;
        assert_error(&bad, "COMPUTER_INVALID_ARGUMENT");
        let bad = c
            .call("computer_task", json!({ "instruction": "x", "budget": 9 }))
            .await;
        assert_error(&bad, "COMPUTER_INVALID_ARGUMENT");
        write_config("");
    });
}

//! The user's configuration file: whether deskpilot may act, in which permission mode,
//! on which apps, and the limits of each grant (ARCHITECTURE.md §7).
//!
//! # Where it lives
//!
//! `$DESKPILOT_CONFIG` when set and non-empty, else
//! `$XDG_CONFIG_HOME/deskpilot/config.toml`, else `$HOME/.config/deskpilot/config.toml`
//! (see [`config_path`]). A missing file means "every key at its default".
//!
//! # Keys
//!
//! Every key may appear at the top level and again in a `[sandbox]` table, which
//! applies only on a deskpilot sandbox desktop.
//!
//! | key                   | type            | default (own desktop) | default (sandbox) | meaning |
//! |-----------------------|-----------------|-----------------------|-------------------|---------|
//! | `enabled`             | bool            | `false`               | `true`            | whether deskpilot may issue grants and act at all |
//! | `mode`                | string          | `"default"`           | `"accept-edits"`  | permission mode: `plan`, `default`, `accept-edits`, `bypass`, `unattended` |
//! | `allow_apps`          | list of strings | `[]`                  | every app         | apps that act without a first-use confirmation (`accept-edits`) or at all (`unattended`) |
//! | `deny_apps`           | list of strings | `[]`                  | `[]`              | apps never captured nor operated, on top of the built-in credential deny-list |
//! | `self_apps`           | list of strings | `[]`                  | `[]`              | extra app names that count as deskpilot's own host client (always refused) |
//! | `action_budget`       | 1 to 10,000     | 200                   | 200               | actions per grant before it closes ([`DEFAULT_ACTION_BUDGET`]) |
//! | `idle_expiry_minutes` | 1 to 1,440      | 15                    | 15                | minutes without an action after which a grant closes ([`DEFAULT_IDLE_EXPIRY_MS`]) |
//! | `capture`             | string          | `"a11y-only"`         | `"a11y-only"`     | `a11y-only` or `a11y-and-pixels` (whether pixels may be captured) |
//!
//! # The bound model
//!
//! A `[model]` table (top level only) names the model `deskpilot run` and
//! `computer_task` drive the desktop with (ARCHITECTURE.md §10). There is no default
//! model and no fallback: without `provider` and `model` the loop refuses with
//! `COMPUTER_NO_MODEL_BINDING`.
//!
//! | key           | type         | default | meaning |
//! |---------------|--------------|---------|---------|
//! | `provider`    | string       | —       | `openai` (any OpenAI-compatible Chat Completions server: OpenAI, vLLM, Ollama, llama-server, LM Studio) or `anthropic` (Messages API) |
//! | `model`       | string       | —       | the provider's model name, e.g. `gpt-4.1-mini`, `qwen2.5:7b`, `claude-sonnet-4-5` |
//! | `endpoint`    | string (URL) | `https://api.openai.com/v1` / `https://api.anthropic.com` | base URL; `/chat/completions` or `/v1/messages` is appended |
//! | `api_key_env` | string       | none    | name of the environment variable holding the API key (never the key itself); unset for local servers that need none |
//! | `timeout_ms`  | integer      | 60000   | per-request timeout, ms ([`DEFAULT_MODEL_TIMEOUT_MS`]) |
//! | `max_retries` | integer 0–10 | 2       | retries on 429, 5xx and connection errors ([`DEFAULT_MODEL_MAX_RETRIES`]) |
//!
//! `deskpilot config set model.provider openai` edits it like any other key.
//!
//! # Precedence
//!
//! On a sandbox desktop: the `[sandbox]` table, then the top-level key, then the
//! sandbox default. On the user's own desktop: the top-level key, then the default
//! (the `[sandbox]` table is ignored). [`Effective::sources`] says which one won.
//!
//! # Errors
//!
//! An unknown key, a value of the wrong type, an unknown mode or capture name, or a
//! zero budget or expiry makes [`Config::load`] fail with `COMPUTER_INVALID_ARGUMENT`
//! naming the file, the key and the valid values: a typo never silently falls back
//! to a default.
//!
//! This module reads and edits the file only; it never decides what may be touched
//! (that is `deskpilot-policy`) and never writes anything but the config file.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use deskpilot_policy::grant::{Capture, DEFAULT_ACTION_BUDGET, DEFAULT_IDLE_EXPIRY_MS};
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::{DriverError, ErrorCode};
use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, Item, TableLike, Value};

use crate::store::{lock_exclusive, private_file};

/// Every key a layer may hold, in display order.
/// Largest `action_budget`: 10,000 actions. A budget is a brake on a runaway loop;
/// a larger one would not be one.
pub const MAX_ACTION_BUDGET: u32 = 10_000;
/// Largest `idle_expiry_minutes`: a day. A grant nobody used for a day is over.
pub const MAX_IDLE_EXPIRY_MINUTES: u64 = 24 * 60;

pub const KEYS: [&str; 8] = [
    "enabled",
    "mode",
    "allow_apps",
    "deny_apps",
    "self_apps",
    "action_budget",
    "idle_expiry_minutes",
    "capture",
];

/// The name of the table whose keys apply only on a sandbox desktop.
pub const SANDBOX_TABLE: &str = "sandbox";

/// The name of the table that binds the model of the inner loop.
pub const MODEL_TABLE: &str = "model";

/// Every key of the `[model]` table, in display order.
pub const MODEL_KEYS: [&str; 6] = [
    "provider",
    "model",
    "endpoint",
    "api_key_env",
    "timeout_ms",
    "max_retries",
];

/// Default per-request timeout of a model call: 60,000 ms (a slow local model
/// answering a 2,000-token observation takes tens of seconds on a CPU).
pub const DEFAULT_MODEL_TIMEOUT_MS: u64 = 60_000;

/// Default retries of a model call on 429, 5xx and connection errors.
pub const DEFAULT_MODEL_MAX_RETRIES: u32 = 2;

/// Most retries `max_retries` accepts: the loop must stay bounded in time.
pub const MAX_MODEL_RETRIES: u32 = 10;

/// Default endpoint of the `openai` provider.
pub const OPENAI_ENDPOINT: &str = "https://api.openai.com/v1";

/// Default endpoint of the `anthropic` provider.
pub const ANTHROPIC_ENDPOINT: &str = "https://api.anthropic.com";

const MODE_NAMES: &str = "plan, default, accept-edits, bypass, unattended";
const CAPTURE_NAMES: &str = "a11y-only, a11y-and-pixels";

/// Path of the config file: `$DESKPILOT_CONFIG` if set and non-empty, else
/// `$XDG_CONFIG_HOME/deskpilot/config.toml` (ignored when it lies under the runtime
/// directory, as in a shell that joined a sandbox, where it points inside the
/// sandbox), else
/// `$HOME/.config/deskpilot/config.toml` (relative to the current directory when
/// neither is set).
pub fn config_path() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("DESKPILOT_CONFIG") {
        return PathBuf::from(p);
    }
    // A shell that joined a sandbox has XDG_CONFIG_HOME pointing inside the sandbox
    // (for the apps there, under the runtime directory); the user's settings are
    // still the user's.
    let runtime = crate::store::state_dir();
    let base = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| !p.starts_with(&runtime))
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from(".config"));
    base.join("deskpilot").join("config.toml")
}

/// One layer of keys (the top level, or the `[sandbox]` table); `None` = not set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub enabled: Option<bool>,
    pub mode: Option<Mode>,
    pub allow_apps: Option<Vec<String>>,
    pub deny_apps: Option<Vec<String>>,
    pub self_apps: Option<Vec<String>>,
    /// Actions per grant, ≥ 1.
    pub action_budget: Option<u32>,
    /// Idle expiry of a grant, minutes, ≥ 1.
    pub idle_expiry_minutes: Option<u64>,
    pub capture: Option<Capture>,
}

/// The API a model provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Provider {
    /// OpenAI-compatible Chat Completions (`POST {endpoint}/chat/completions`):
    /// OpenAI, vLLM, Ollama, llama-server, LM Studio.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages (`POST {endpoint}/v1/messages`).
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl Provider {
    /// The config spelling: `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// Parses [`Provider::as_str`] names.
    pub fn from_name(s: &str) -> Option<Provider> {
        match s {
            "openai" => Some(Provider::OpenAi),
            "anthropic" => Some(Provider::Anthropic),
            _ => None,
        }
    }

    /// The endpoint used when the config names none.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            Provider::OpenAi => OPENAI_ENDPOINT,
            Provider::Anthropic => ANTHROPIC_ENDPOINT,
        }
    }
}

/// The `[model]` table as written; `None` = not set. It may be incomplete while the
/// user fills it in key by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSettings {
    pub provider: Option<Provider>,
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub api_key_env: Option<String>,
    /// Per-request timeout, ms, ≥ 1.
    pub timeout_ms: Option<u64>,
    /// 0 to [`MAX_MODEL_RETRIES`].
    pub max_retries: Option<u32>,
}

impl ModelSettings {
    /// The binding, when both `provider` and `model` are set; other keys take their
    /// defaults.
    pub fn resolve(&self) -> Option<ModelBinding> {
        let provider = self.provider?;
        let model = self.model.clone()?;
        Some(ModelBinding {
            provider,
            model,
            endpoint: self
                .endpoint
                .clone()
                .unwrap_or_else(|| provider.default_endpoint().to_string()),
            api_key_env: self.api_key_env.clone(),
            timeout_ms: self.timeout_ms.unwrap_or(DEFAULT_MODEL_TIMEOUT_MS),
            max_retries: self.max_retries.unwrap_or(DEFAULT_MODEL_MAX_RETRIES),
        })
    }

    /// The required keys that are not set (`provider`, `model`).
    pub fn missing(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.provider.is_none() {
            out.push("provider");
        }
        if self.model.is_none() {
            out.push("model");
        }
        out
    }
}

/// The model the inner loop is bound to: explicit, never a fallback.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelBinding {
    pub provider: Provider,
    /// The provider's model name.
    pub model: String,
    /// Base URL (default per provider, see [`Provider::default_endpoint`]).
    pub endpoint: String,
    /// Name of the environment variable holding the API key; `None` sends no key.
    pub api_key_env: Option<String>,
    /// Per-request timeout, ms (default [`DEFAULT_MODEL_TIMEOUT_MS`]).
    pub timeout_ms: u64,
    /// Retries on 429, 5xx and connection errors (default [`DEFAULT_MODEL_MAX_RETRIES`]).
    pub max_retries: u32,
}

/// The config file as read: its path, both layers and the model binding.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub path: PathBuf,
    /// Top-level keys.
    pub top: Settings,
    /// The `[sandbox]` table.
    pub sandbox: Settings,
    /// The `[model]` table as written (possibly incomplete).
    pub model_settings: ModelSettings,
    /// The bound model: `Some` when `[model]` sets at least `provider` and `model`.
    pub model: Option<ModelBinding>,
}

/// Every key resolved for one context (own desktop or sandbox).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effective {
    /// Default: `true` inside a sandbox, `false` elsewhere.
    pub enabled: bool,
    /// Default: `accept-edits` inside a sandbox, `default` elsewhere.
    pub mode: Mode,
    /// The allow-list as configured (empty when [`Effective::allow_all_apps`]).
    pub allow_apps: Vec<String>,
    /// Every app counts as allow-listed: the default inside a sandbox when no
    /// `allow_apps` is set (a sandbox is a desktop made for the agent).
    pub allow_all_apps: bool,
    pub deny_apps: Vec<String>,
    pub self_apps: Vec<String>,
    /// Actions per grant; default [`DEFAULT_ACTION_BUDGET`].
    pub action_budget: u32,
    /// Idle expiry of a grant, ms; default [`DEFAULT_IDLE_EXPIRY_MS`].
    pub idle_expiry_ms: u64,
    /// Default `a11y-only`.
    pub capture: Capture,
    /// Where each key's value came from, by config key name (`idle_expiry_minutes`,
    /// not `idle_expiry_ms`): `"sandbox table"`, `"file"`, `"sandbox default"` or
    /// `"default"`.
    pub sources: BTreeMap<String, String>,
}

fn invalid(msg: String) -> DriverError {
    DriverError::new(ErrorCode::InvalidArgument, msg)
}

fn internal(msg: String) -> DriverError {
    DriverError::new(ErrorCode::Internal, msg)
}

/// The fix hint every key error ends with.
fn fix_hint(key: &str) -> String {
    format!("fix it with `deskpilot config set {key} VALUE` or edit the file")
}

/// What a key accepts, for error messages.
fn valid_values(key: &str) -> &'static str {
    match key {
        "enabled" => "true, false",
        "mode" => MODE_NAMES,
        "allow_apps" | "deny_apps" | "self_apps" => {
            "a list of app names such as [\"mousepad\", \"gedit\"] (with `config set`: mousepad,gedit)"
        }
        "action_budget" => "an integer from 1 to 10000",
        "idle_expiry_minutes" => "an integer from 1 to 1440 (a day)",
        "capture" => CAPTURE_NAMES,
        "provider" => "openai, anthropic",
        "model" => "a model name such as \"gpt-4.1-mini\", \"qwen2.5:7b\" or \"claude-sonnet-4-5\"",
        "endpoint" => {
            "an http:// or https:// base URL such as http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1"
        }
        "api_key_env" => {
            "the name of an environment variable such as OPENAI_API_KEY (letters, digits, _; never the key itself)"
        }
        "timeout_ms" => "an integer from 1 to 3600000",
        "max_retries" => "an integer from 0 to 10",
        _ => "",
    }
}

/// `PATH: key `x`: what; valid values: …; fix it …`.
fn key_error(path: &Path, key: &str, what: &str) -> DriverError {
    let bare = key.rsplit('.').next().unwrap_or(key);
    invalid(format!(
        "{}: key `{key}`: {what}; valid values: {}; {}",
        path.display(),
        valid_values(bare),
        fix_hint(key)
    ))
}

fn unknown_key_error(path: &Path, key: &str, in_sandbox_table: bool) -> DriverError {
    let mut valid = KEYS.join(", ");
    if !in_sandbox_table {
        valid.push_str(", [sandbox] (a table of the same keys), [model] (");
        valid.push_str(&MODEL_KEYS.join(", "));
        valid.push(')');
    }
    invalid(format!(
        "{}: unknown key `{key}`; valid keys: {valid}; fix it with `deskpilot config unset {key}` or edit the file",
        path.display()
    ))
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "a list",
        Value::InlineTable(_) => "a table",
    }
}

fn describe_item(item: &Item) -> &'static str {
    match item {
        Item::Value(v) => describe(v),
        Item::Table(_) => "a table",
        Item::ArrayOfTables(_) => "an array of tables",
        Item::None => "nothing",
    }
}

/// Reads one layer from a table, refusing unknown keys and wrong values. `prefix` is
/// `""` at the top level and `"sandbox."` in the sandbox table (for messages).
fn parse_layer(path: &Path, table: &dyn TableLike, prefix: &str) -> Result<Layers, DriverError> {
    let mut s = Settings::default();
    let mut sandbox = None;
    let mut model = None;
    for (key, item) in table.iter() {
        let full = format!("{prefix}{key}");
        if prefix.is_empty() && key == MODEL_TABLE {
            let Some(t) = item.as_table_like() else {
                return Err(invalid(format!(
                    "{}: key `model`: is {} but must be a table (`[model]` followed by {}); fix it with `deskpilot config unset model` and `deskpilot config set model.provider openai`",
                    path.display(),
                    describe_item(item),
                    MODEL_KEYS.join(", ")
                )));
            };
            model = Some(parse_model_table(path, t)?);
            continue;
        }
        if prefix.is_empty() && key == SANDBOX_TABLE {
            let Some(t) = item.as_table_like() else {
                return Err(invalid(format!(
                    "{}: key `sandbox`: is {} but must be a table (`[sandbox]` followed by keys); edit the file",
                    path.display(),
                    describe_item(item)
                )));
            };
            sandbox = Some(parse_layer(path, t, "sandbox.")?.top);
            continue;
        }
        if !KEYS.contains(&key) {
            return Err(unknown_key_error(path, &full, !prefix.is_empty()));
        }
        let Some(v) = item.as_value() else {
            return Err(key_error(
                path,
                &full,
                &format!("is {}", describe_item(item)),
            ));
        };
        let wrong = |want: &str| {
            key_error(
                path,
                &full,
                &format!("is {} but must be {want}", describe(v)),
            )
        };
        match key {
            "enabled" => s.enabled = Some(v.as_bool().ok_or_else(|| wrong("true or false"))?),
            "mode" => {
                let name = v.as_str().ok_or_else(|| wrong("a string"))?;
                s.mode =
                    Some(Mode::from_name(name).ok_or_else(|| {
                        key_error(path, &full, &format!("unknown mode {name:?}"))
                    })?);
            }
            "capture" => {
                let name = v.as_str().ok_or_else(|| wrong("a string"))?;
                s.capture =
                    Some(capture_from_name(name).ok_or_else(|| {
                        key_error(path, &full, &format!("unknown capture {name:?}"))
                    })?);
            }
            "allow_apps" | "deny_apps" | "self_apps" => {
                let arr = v.as_array().ok_or_else(|| wrong("a list of strings"))?;
                let mut list = Vec::with_capacity(arr.len());
                for el in arr.iter() {
                    let name = el.as_str().ok_or_else(|| {
                        key_error(
                            path,
                            &full,
                            &format!("holds {} but every element must be a string", describe(el)),
                        )
                    })?;
                    list.push(name.to_string());
                }
                match key {
                    "allow_apps" => s.allow_apps = Some(list),
                    "deny_apps" => s.deny_apps = Some(list),
                    _ => s.self_apps = Some(list),
                }
            }
            "action_budget" => {
                let n = v.as_integer().ok_or_else(|| wrong("an integer"))?;
                let n = u32::try_from(n)
                    .ok()
                    .filter(|&n| (1..=MAX_ACTION_BUDGET).contains(&n))
                    .ok_or_else(|| key_error(path, &full, &format!("{n} is out of range")))?;
                s.action_budget = Some(n);
            }
            "idle_expiry_minutes" => {
                let n = v.as_integer().ok_or_else(|| wrong("an integer"))?;
                let n = u64::try_from(n)
                    .ok()
                    .filter(|&n| (1..=MAX_IDLE_EXPIRY_MINUTES).contains(&n))
                    .ok_or_else(|| key_error(path, &full, &format!("{n} is out of range")))?;
                s.idle_expiry_minutes = Some(n);
            }
            _ => return Err(unknown_key_error(path, &full, !prefix.is_empty())),
        }
    }
    Ok(Layers {
        top: s,
        sandbox,
        model,
    })
}

/// What one table of the file holds: its keys, and at the top level the `[sandbox]`
/// and `[model]` tables.
struct Layers {
    top: Settings,
    sandbox: Option<Settings>,
    model: Option<ModelSettings>,
}

/// Whether `s` is usable as an environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks one string value of the `[model]` table; `Err` says what is wrong.
fn check_model_string(key: &str, v: &str) -> Result<(), String> {
    match key {
        "provider" => Provider::from_name(v)
            .map(|_| ())
            .ok_or_else(|| format!("unknown provider {v:?}")),
        "model" => {
            if v.trim().is_empty() {
                Err("is empty".into())
            } else {
                Ok(())
            }
        }
        "endpoint" => {
            let ok = (v.starts_with("http://") || v.starts_with("https://"))
                && v.split_once("://")
                    .is_some_and(|(_, rest)| !rest.is_empty())
                && !v.chars().any(char::is_whitespace);
            if ok {
                Ok(())
            } else {
                Err(format!("{v:?} is not an http:// or https:// URL"))
            }
        }
        "api_key_env" => {
            if is_env_name(v) {
                Ok(())
            } else {
                // Never echo what may be the key itself.
                Err("is not an environment variable name (it must name the variable holding the key, not hold the key)".into())
            }
        }
        _ => Ok(()),
    }
}

fn parse_model_table(path: &Path, table: &dyn TableLike) -> Result<ModelSettings, DriverError> {
    let mut m = ModelSettings::default();
    for (key, item) in table.iter() {
        let full = format!("{MODEL_TABLE}.{key}");
        if !MODEL_KEYS.contains(&key) {
            return Err(invalid(format!(
                "{}: unknown key `{full}`; valid keys of [model]: {}; fix it with `deskpilot config unset {full}` or edit the file",
                path.display(),
                MODEL_KEYS.join(", ")
            )));
        }
        let Some(v) = item.as_value() else {
            return Err(key_error(
                path,
                &full,
                &format!("is {}", describe_item(item)),
            ));
        };
        let wrong = |want: &str| {
            key_error(
                path,
                &full,
                &format!("is {} but must be {want}", describe(v)),
            )
        };
        match key {
            "timeout_ms" => {
                let n = v.as_integer().ok_or_else(|| wrong("an integer"))?;
                let n = u64::try_from(n)
                    .ok()
                    .filter(|&n| (1..=3_600_000).contains(&n))
                    .ok_or_else(|| key_error(path, &full, &format!("{n} is out of range")))?;
                m.timeout_ms = Some(n);
            }
            "max_retries" => {
                let n = v.as_integer().ok_or_else(|| wrong("an integer"))?;
                let n = u32::try_from(n)
                    .ok()
                    .filter(|&n| n <= MAX_MODEL_RETRIES)
                    .ok_or_else(|| key_error(path, &full, &format!("{n} is out of range")))?;
                m.max_retries = Some(n);
            }
            _ => {
                let s = v.as_str().ok_or_else(|| wrong("a string"))?;
                check_model_string(key, s).map_err(|what| key_error(path, &full, &what))?;
                match key {
                    "provider" => m.provider = Provider::from_name(s),
                    "model" => m.model = Some(s.to_string()),
                    "endpoint" => m.endpoint = Some(s.trim_end_matches('/').to_string()),
                    _ => m.api_key_env = Some(s.to_string()),
                }
            }
        }
    }
    Ok(m)
}

fn capture_from_name(s: &str) -> Option<Capture> {
    match s {
        "a11y-only" => Some(Capture::A11yOnly),
        "a11y-and-pixels" => Some(Capture::A11yAndPixels),
        _ => None,
    }
}

/// The kebab-case name of a capture setting.
pub fn capture_name(c: Capture) -> &'static str {
    match c {
        Capture::A11yOnly => "a11y-only",
        Capture::A11yAndPixels => "a11y-and-pixels",
    }
}

fn parse_document(path: &Path, text: &str) -> Result<(DocumentMut, Config), DriverError> {
    let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        invalid(format!(
            "{}: not valid TOML: {}; fix the file or remove it to start from the defaults",
            path.display(),
            e.to_string().trim_end()
        ))
    })?;
    let layers = parse_layer(path, doc.as_table(), "")?;
    let model_settings = layers.model.unwrap_or_default();
    let cfg = Config {
        path: path.to_path_buf(),
        top: layers.top,
        sandbox: layers.sandbox.unwrap_or_default(),
        model: model_settings.resolve(),
        model_settings,
    };
    Ok((doc, cfg))
}

/// Reads the file's text; `None` when it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, DriverError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            invalid(format!(
                "{}: not UTF-8 text; fix the file or remove it",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(internal(format!("cannot read {}: {e}", path.display()))),
    }
}

impl Config {
    /// Reads the file at [`config_path`].
    ///
    /// Errors: as [`Config::load_from`].
    pub fn load() -> Result<Config, DriverError> {
        Self::load_from(&config_path())
    }

    /// Reads the file at `path`; a missing file gives every key unset.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` for invalid TOML, an unknown key, a wrong
    /// type, an unknown mode or capture name, or a zero budget or expiry; the message
    /// names the file, the key and the valid values. `COMPUTER_INTERNAL` when the file
    /// exists but cannot be read.
    pub fn load_from(path: &Path) -> Result<Config, DriverError> {
        match read_text(path)? {
            None => Ok(Config {
                path: path.to_path_buf(),
                ..Config::default()
            }),
            Some(text) => Ok(parse_document(path, &text)?.1),
        }
    }

    /// Resolves every key for a context: on a sandbox desktop (`in_sandbox`) the
    /// `[sandbox]` table wins over the top level, which wins over the sandbox
    /// defaults; elsewhere the top level wins over the defaults.
    pub fn effective(&self, in_sandbox: bool) -> Effective {
        let mut sources = BTreeMap::new();
        let empty = Settings::default();
        let sb = if in_sandbox { &self.sandbox } else { &empty };
        let default_src = if in_sandbox {
            "sandbox default"
        } else {
            "default"
        };
        // Picks the first set layer; `sandbox_specific` says whether the default
        // differs inside a sandbox (for the source label).
        let mut pick = |key: &str, a: bool, b: bool, sandbox_specific: bool| -> u8 {
            let (src, which) = if a {
                ("sandbox table", 0)
            } else if b {
                ("file", 1)
            } else if sandbox_specific {
                (default_src, 2)
            } else {
                ("default", 2)
            };
            sources.insert(key.to_string(), src.to_string());
            which
        };
        fn choose<T: Clone>(which: u8, a: &Option<T>, b: &Option<T>, d: T) -> T {
            match which {
                0 => a.clone().unwrap_or(d),
                1 => b.clone().unwrap_or(d),
                _ => d,
            }
        }
        let t = &self.top;

        let w = pick("enabled", sb.enabled.is_some(), t.enabled.is_some(), true);
        let enabled = choose(w, &sb.enabled, &t.enabled, in_sandbox);

        let w = pick("mode", sb.mode.is_some(), t.mode.is_some(), true);
        let mode_default = if in_sandbox {
            Mode::AcceptEdits
        } else {
            Mode::Default
        };
        let mode = choose(w, &sb.mode, &t.mode, mode_default);

        let w = pick(
            "allow_apps",
            sb.allow_apps.is_some(),
            t.allow_apps.is_some(),
            true,
        );
        let allow_apps = choose(w, &sb.allow_apps, &t.allow_apps, Vec::new());
        let allow_all_apps = w == 2 && in_sandbox;

        pick(
            "deny_apps",
            sb.deny_apps.is_some(),
            t.deny_apps.is_some(),
            false,
        );
        // Refusal lists only ever grow: inside a sandbox the `[sandbox]` list adds to
        // the top-level one instead of replacing it.
        let mut deny_apps: Vec<String> = t.deny_apps.clone().unwrap_or_default();
        if in_sandbox {
            for x in sb.deny_apps.iter().flatten() {
                if !deny_apps.contains(x) {
                    deny_apps.push(x.clone());
                }
            }
        }

        pick(
            "self_apps",
            sb.self_apps.is_some(),
            t.self_apps.is_some(),
            false,
        );
        // Refusal lists only ever grow: inside a sandbox the `[sandbox]` list adds to
        // the top-level one instead of replacing it.
        let mut self_apps: Vec<String> = t.self_apps.clone().unwrap_or_default();
        if in_sandbox {
            for x in sb.self_apps.iter().flatten() {
                if !self_apps.contains(x) {
                    self_apps.push(x.clone());
                }
            }
        }

        let w = pick(
            "action_budget",
            sb.action_budget.is_some(),
            t.action_budget.is_some(),
            false,
        );
        let action_budget = choose(
            w,
            &sb.action_budget,
            &t.action_budget,
            DEFAULT_ACTION_BUDGET,
        );

        let w = pick(
            "idle_expiry_minutes",
            sb.idle_expiry_minutes.is_some(),
            t.idle_expiry_minutes.is_some(),
            false,
        );
        let idle_expiry_ms = match w {
            0 | 1 => {
                choose(w, &sb.idle_expiry_minutes, &t.idle_expiry_minutes, 0).saturating_mul(60_000)
            }
            _ => DEFAULT_IDLE_EXPIRY_MS,
        };

        let w = pick("capture", sb.capture.is_some(), t.capture.is_some(), false);
        let capture = choose(w, &sb.capture, &t.capture, Capture::A11yOnly);

        Effective {
            enabled,
            mode,
            allow_apps,
            allow_all_apps,
            deny_apps,
            self_apps,
            action_budget,
            idle_expiry_ms,
            capture,
            sources,
        }
    }
}

/// Splits `KEY` or `sandbox.KEY` into (in the sandbox table, bare key), refusing
/// unknown keys.
fn split_key<'a>(path: &Path, key: &'a str) -> Result<(Table, &'a str), DriverError> {
    let (table, bare) = table_of(key);
    let known = match table {
        Table::Model => MODEL_KEYS.contains(&bare),
        _ => KEYS.contains(&bare),
    };
    if !known {
        let mut valid = KEYS.join(", ");
        valid.push_str(", or any of them as sandbox.KEY; model.");
        valid.push_str(&MODEL_KEYS.join(", model."));
        return Err(invalid(format!(
            "{}: unknown key `{key}`; valid keys: {valid}",
            path.display()
        )));
    }
    Ok((table, bare))
}

/// Which table of the file a dotted key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Top,
    Sandbox,
    Model,
}

/// `sandbox.KEY` → (sandbox, KEY); `model.KEY` → (model, KEY); else (top, KEY).
fn table_of(key: &str) -> (Table, &str) {
    if let Some(rest) = key.strip_prefix("sandbox.") {
        (Table::Sandbox, rest)
    } else if let Some(rest) = key.strip_prefix("model.") {
        (Table::Model, rest)
    } else {
        (Table::Top, key)
    }
}

/// Turns a command-line VALUE into the TOML value of `model.BARE`.
fn parse_model_cli_value(
    path: &Path,
    key: &str,
    bare: &str,
    value: &str,
) -> Result<Value, DriverError> {
    let v = value.trim();
    match bare {
        "timeout_ms" | "max_retries" => {
            let max = if bare == "timeout_ms" {
                3_600_000
            } else {
                i64::from(MAX_MODEL_RETRIES)
            };
            let min = i64::from(bare == "timeout_ms");
            let n: i64 = v
                .parse()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| key_error(path, key, &format!("{value:?} is not a valid value")))?;
            Ok(Value::from(n))
        }
        _ => {
            check_model_string(bare, v).map_err(|what| key_error(path, key, &what))?;
            let v = if bare == "endpoint" {
                v.trim_end_matches('/')
            } else {
                v
            };
            Ok(Value::from(v))
        }
    }
}

/// Turns a command-line VALUE into the TOML value of `bare`.
fn parse_cli_value(path: &Path, key: &str, bare: &str, value: &str) -> Result<Value, DriverError> {
    let v = value.trim();
    let bad = || key_error(path, key, &format!("{value:?} is not a valid value"));
    Ok(match bare {
        "enabled" => match v {
            "true" => Value::from(true),
            "false" => Value::from(false),
            _ => return Err(bad()),
        },
        "mode" => Value::from(Mode::from_name(v).ok_or_else(bad)?.as_str()),
        "capture" => Value::from(capture_name(capture_from_name(v).ok_or_else(bad)?)),
        "action_budget" => {
            let n: u32 = v.parse().ok().filter(|&n| n >= 1).ok_or_else(bad)?;
            Value::from(i64::from(n))
        }
        "idle_expiry_minutes" => {
            let n: i64 = v.parse().ok().filter(|&n| n >= 1).ok_or_else(bad)?;
            Value::from(n)
        }
        _ => {
            let arr: toml_edit::Array = parse_list(v).into_iter().collect();
            Value::Array(arr)
        }
    })
}

/// `a, b,c` → `["a", "b", "c"]`; blank pieces are dropped, so `""` is the empty list.
fn parse_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Holds the sidecar lock (`.NAME.lock` beside the file) for one edit, so two
/// concurrent `config set` calls do not lose each other's key.
fn lock_for(path: &Path) -> Result<std::fs::File, DriverError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config.toml".into());
    let lock_path = path.with_file_name(format!(".{name}.lock"));
    let f = private_file(OpenOptions::new().create(true).truncate(false).write(true))
        .open(&lock_path)
        .map_err(|e| internal(format!("cannot open {}: {e}", lock_path.display())))?;
    lock_exclusive(&f)
        .map_err(|e| internal(format!("cannot lock {}: {e}", lock_path.display())))?;
    Ok(f)
}

fn ensure_dir(path: &Path) -> Result<(), DriverError> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    if dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
        .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))
}

/// Replaces the file with `doc` atomically (temp file + rename, mode 0600), after
/// validating it: an edit never turns a valid file into an invalid one. When the file
/// was already invalid (`was_valid` false) the edit is written even if another key is
/// still wrong, so a file with several mistakes can be repaired one key at a time.
fn write_validated(path: &Path, doc: &DocumentMut, was_valid: bool) -> Result<(), DriverError> {
    let text = doc.to_string();
    if let Err(e) = parse_document(path, &text) {
        if was_valid {
            return Err(e);
        }
        tracing::debug!(error = %e.message, "config file still invalid after the edit");
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config.toml".into());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut f = private_file(OpenOptions::new().create(true).write(true).truncate(true))
        .open(&tmp)
        .map_err(|e| internal(format!("cannot write {}: {e}", tmp.display())))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| internal(format!("cannot write {}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| internal(format!("cannot replace {}: {e}", path.display())))
}

/// Loads the document for an edit, and whether it is valid as it stands. Only the
/// TOML syntax must be right: an edit may be what repairs an invalid key.
fn load_doc(path: &Path) -> Result<(DocumentMut, bool), DriverError> {
    match read_text(path)? {
        None => Ok((DocumentMut::new(), true)),
        Some(text) => {
            let valid = parse_document(path, &text).is_ok();
            let doc = text.parse().map_err(|e: toml_edit::TomlError| {
                invalid(format!(
                    "{}: not valid TOML: {}; fix the file or remove it to start from the defaults",
                    path.display(),
                    e.to_string().trim_end()
                ))
            })?;
            Ok((doc, valid))
        }
    }
}

/// Sets KEY (a top-level key, `sandbox.KEY` or `model.KEY`) to VALUE in the file at `path`,
/// creating the file (and its directory, mode 0700) if needed and keeping comments
/// and other keys as they are. VALUE: `true`/`false`; an integer; a mode name
/// (`plan`, `default`, `accept-edits`, `bypass`, `unattended`); a capture name
/// (`a11y-only`, `a11y-and-pixels`); a comma-separated list (`a,b`; `""` is the
/// empty list); or for `model.*` a provider (`openai`, `anthropic`), a model name, an
/// http(s) endpoint, an environment variable name or an integer. The value is validated, and the edited file is validated before it
/// replaces the old one (temp file + rename): an edit never makes a valid file
/// invalid, and on an invalid file it is how a wrong key is repaired.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for an unknown key, an invalid value, a file
/// that is not valid TOML, or an edit that would make a valid file invalid — the
/// file is then left untouched;
/// `COMPUTER_INTERNAL` when the file cannot be read or written.
pub fn set_key(path: &Path, key: &str, value: &str) -> Result<(), DriverError> {
    let (which, bare) = split_key(path, key)?;
    let mut new = match which {
        Table::Model => parse_model_cli_value(path, key, bare, value)?,
        _ => parse_cli_value(path, key, bare, value)?,
    };
    ensure_dir(path)?;
    let _lock = lock_for(path)?;
    let (mut doc, was_valid) = load_doc(path)?;
    let table: &mut dyn TableLike = match which {
        Table::Top => doc.as_table_mut(),
        Table::Sandbox | Table::Model => {
            let name = if which == Table::Sandbox {
                SANDBOX_TABLE
            } else {
                MODEL_TABLE
            };
            if doc.get(name).is_none() {
                doc.insert(name, toml_edit::table());
            }
            doc.get_mut(name)
                .and_then(Item::as_table_like_mut)
                .ok_or_else(|| {
                    invalid(format!(
                        "{}: key `{name}` is not a table; edit the file",
                        path.display()
                    ))
                })?
        }
    };
    // Keep a trailing comment on the value being replaced.
    if let Some(old) = table.get(bare).and_then(Item::as_value) {
        *new.decor_mut() = old.decor().clone();
    }
    match table.get_mut(bare) {
        Some(item) => *item = Item::Value(new),
        None => {
            table.insert(bare, Item::Value(new));
        }
    }
    write_validated(path, &doc, was_valid)
}

/// Removes `key` from `table`. A comment written above it (which TOML tooling
/// attaches to the key) is moved onto the next key of the table so removing a key
/// never deletes a user's comment; returned when no key follows.
fn remove_keeping_comment(table: &mut toml_edit::Table, key: &str) -> (bool, Option<String>) {
    let comment = table
        .key(key)
        .and_then(|k| k.leaf_decor().prefix())
        .and_then(|p| p.as_str())
        .filter(|p| p.contains('#'))
        .map(str::to_string);
    let next = {
        let mut values = table
            .iter()
            .filter(|(_, item)| item.is_value())
            .map(|(k, _)| k);
        values
            .by_ref()
            .find(|k| *k == key)
            .and_then(|_| values.next())
            .map(str::to_string)
    };
    if table.remove(key).is_none() {
        return (false, None);
    }
    let Some(c) = comment else {
        return (true, None);
    };
    if let Some(mut k) = next.as_deref().and_then(|n| table.key_mut(n)) {
        let d = k.leaf_decor_mut();
        let old = d.prefix().and_then(|p| p.as_str()).unwrap_or("");
        let new = format!("{c}{old}");
        d.set_prefix(new);
        return (true, None);
    }
    (true, Some(c))
}

/// Removes KEY (a top-level key, `sandbox.KEY`, `model.KEY`, or a whole `sandbox` or
/// `model` table) from the file at `path`, keeping
/// everything else and moving a comment above the key onto the next line. Returns
/// whether the key was set. A missing file is left missing. A key deskpilot does not
/// know is removed when present (that is how a misspelt key is repaired).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for an unknown key that is not in the file, or
/// a file that is not valid TOML (the file is then left untouched);
/// `COMPUTER_INTERNAL` when the file cannot be read or written.
pub fn unset_key(path: &Path, key: &str) -> Result<bool, DriverError> {
    let (which, bare) = table_of(key);
    let known = match which {
        Table::Top => KEYS.contains(&bare) || bare == SANDBOX_TABLE || bare == MODEL_TABLE,
        Table::Sandbox => KEYS.contains(&bare),
        Table::Model => MODEL_KEYS.contains(&bare),
    };
    if !path.exists() {
        return if known {
            Ok(false)
        } else {
            split_key(path, key).map(|_| false)
        };
    }
    let _lock = lock_for(path)?;
    let (mut doc, was_valid) = load_doc(path)?;
    let (removed, orphan) = if which != Table::Top {
        let name = if which == Table::Sandbox {
            SANDBOX_TABLE
        } else {
            MODEL_TABLE
        };
        match doc.get_mut(name) {
            Some(Item::Table(t)) => remove_keeping_comment(t, bare),
            Some(item) => (
                item.as_table_like_mut()
                    .and_then(|t| t.remove(bare))
                    .is_some(),
                None,
            ),
            None => (false, None),
        }
    } else {
        let (removed, orphan) = remove_keeping_comment(doc.as_table_mut(), bare);
        // The top level's next line is the first table's header when no key follows.
        let first_table = doc
            .as_table()
            .iter()
            .filter(|(_, item)| item.is_table())
            .min_by_key(|(_, item)| item.as_table().and_then(toml_edit::Table::position))
            .map(|(k, _)| k.to_string());
        match (orphan, first_table.and_then(|k| doc.get_mut(&k))) {
            (Some(c), Some(Item::Table(t))) => {
                let old = t.decor().prefix().and_then(|p| p.as_str()).unwrap_or("");
                let new = format!("{c}{old}");
                t.decor_mut().set_prefix(new);
                (removed, None)
            }
            (orphan, _) => (removed, orphan),
        }
    };
    if !removed && !known {
        split_key(path, key)?;
    }
    if let Some(c) = orphan {
        let old = doc.trailing().as_str().unwrap_or("").to_string();
        doc.set_trailing(format!("{c}{old}"));
    }
    if removed {
        write_validated(path, &doc, was_valid)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(tag: &str) -> TempDir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "deskpilot-config-test-{}-{tag}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn cfg(text: &str) -> Result<Config, DriverError> {
        let d = TempDir::new("cfg");
        let p = d.0.join("config.toml");
        std::fs::write(&p, text).unwrap();
        Config::load_from(&p)
    }

    #[test]
    fn a_missing_file_gives_the_defaults_of_each_context() {
        let d = TempDir::new("missing");
        let c = Config::load_from(&d.0.join("nope.toml")).unwrap();
        assert_eq!(c.top, Settings::default());

        let own = c.effective(false);
        assert!(!own.enabled);
        assert_eq!(own.mode, Mode::Default);
        assert!(!own.allow_all_apps);
        assert!(own.allow_apps.is_empty() && own.deny_apps.is_empty());
        assert_eq!(own.action_budget, DEFAULT_ACTION_BUDGET);
        assert_eq!(own.idle_expiry_ms, DEFAULT_IDLE_EXPIRY_MS);
        assert_eq!(own.capture, Capture::A11yOnly);
        assert!(own.sources.values().all(|s| s == "default"));
        assert_eq!(own.sources.len(), KEYS.len());

        let sb = c.effective(true);
        assert!(sb.enabled);
        assert_eq!(sb.mode, Mode::AcceptEdits);
        assert!(sb.allow_all_apps);
        assert_eq!(sb.sources["mode"], "sandbox default");
        assert_eq!(sb.sources["enabled"], "sandbox default");
        assert_eq!(sb.sources["allow_apps"], "sandbox default");
        assert_eq!(sb.sources["action_budget"], "default");
    }

    #[test]
    fn the_sandbox_table_wins_inside_a_sandbox_only() {
        let c = cfg(r#"
mode = "unattended"
allow_apps = ["mousepad"]
action_budget = 50
idle_expiry_minutes = 2
capture = "a11y-and-pixels"

[sandbox]
mode = "bypass"
"#)
        .unwrap();
        let own = c.effective(false);
        assert_eq!(own.mode, Mode::Unattended);
        assert_eq!(own.sources["mode"], "file");
        assert_eq!(own.action_budget, 50);
        assert_eq!(own.idle_expiry_ms, 120_000);
        assert_eq!(own.capture, Capture::A11yAndPixels);
        assert!(!own.enabled);

        let sb = c.effective(true);
        assert_eq!(sb.mode, Mode::Bypass);
        assert_eq!(sb.sources["mode"], "sandbox table");
        assert_eq!(sb.allow_apps, vec!["mousepad".to_string()]);
        assert!(!sb.allow_all_apps, "a set allow_apps replaces 'every app'");
        assert_eq!(sb.sources["allow_apps"], "file");
        assert_eq!(sb.action_budget, 50);
        assert!(sb.enabled);
    }

    #[test]
    fn errors_name_the_file_the_key_and_the_valid_values() {
        let e = cfg("mdoe = \"plan\"\n").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.contains("unknown key `mdoe`"), "{}", e.message);
        assert!(e.message.contains("config.toml"), "{}", e.message);
        assert!(
            e.message.contains("valid keys: enabled, mode"),
            "{}",
            e.message
        );

        let e = cfg("[sandbox]\nfoo = 1\n").unwrap_err();
        assert!(e.message.contains("`sandbox.foo`"), "{}", e.message);

        let e = cfg("mode = \"yolo\"\n").unwrap_err();
        assert!(
            e.message.contains("key `mode`: unknown mode \"yolo\""),
            "{}",
            e.message
        );
        assert!(e.message.contains("accept-edits"), "{}", e.message);
        assert!(
            e.message.contains("deskpilot config set mode VALUE"),
            "{}",
            e.message
        );

        let e = cfg("action_budget = 0\n").unwrap_err();
        assert!(
            e.message.contains("key `action_budget`: 0 is out of range"),
            "{}",
            e.message
        );
        let e = cfg("enabled = \"yes\"\n").unwrap_err();
        assert!(
            e.message.contains("is a string but must be true or false"),
            "{}",
            e.message
        );
        let e = cfg("deny_apps = [\"a\", 2]\n").unwrap_err();
        assert!(
            e.message.contains("every element must be a string"),
            "{}",
            e.message
        );
        let e = cfg("mode = \n").unwrap_err();
        assert!(e.message.contains("not valid TOML"), "{}", e.message);
    }

    #[test]
    fn set_and_unset_keep_comments_and_other_keys() {
        let d = TempDir::new("set");
        let p = d.0.join("sub").join("config.toml");
        set_key(&p, "mode", "plan").unwrap();
        assert_eq!(Config::load_from(&p).unwrap().top.mode, Some(Mode::Plan));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let m = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(m, 0o600);
        }

        std::fs::write(
            &p,
            "# my settings\nmode = \"plan\" # read-only for now\nenabled = true\n",
        )
        .unwrap();
        set_key(&p, "mode", "accept-edits").unwrap();
        set_key(&p, "sandbox.mode", "bypass").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("# my settings\n"), "{text}");
        assert!(
            text.contains("mode = \"accept-edits\" # read-only for now"),
            "{text}"
        );
        assert!(text.contains("[sandbox]\nmode = \"bypass\""), "{text}");
        let c = Config::load_from(&p).unwrap();
        assert_eq!(c.top.enabled, Some(true));
        assert_eq!(c.sandbox.mode, Some(Mode::Bypass));

        assert!(unset_key(&p, "mode").unwrap());
        assert!(!unset_key(&p, "mode").unwrap());
        assert!(unset_key(&p, "sandbox.mode").unwrap());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("# my settings\n"), "{text}");
        assert!(text.contains("enabled = true"), "{text}");

        std::fs::write(
            &p,
            "enabled = true\n\n[sandbox]\n# sandbox only\nmode = \"plan\"\n",
        )
        .unwrap();
        assert!(unset_key(&p, "sandbox.mode").unwrap());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("# sandbox only"), "{text}");
        assert_eq!(Config::load_from(&p).unwrap().sandbox, Settings::default());
        let c = Config::load_from(&p).unwrap();
        assert_eq!(c.top.mode, None);
        assert_eq!(c.sandbox.mode, None);
        assert_eq!(c.top.enabled, Some(true));
    }

    #[test]
    fn lists_integers_and_captures_parse_from_the_command_line() {
        let d = TempDir::new("list");
        let p = d.0.join("config.toml");
        set_key(&p, "deny_apps", "thunderbird, signal,,").unwrap();
        set_key(&p, "sandbox.allow_apps", "").unwrap();
        set_key(&p, "action_budget", "25").unwrap();
        set_key(&p, "idle_expiry_minutes", "3").unwrap();
        set_key(&p, "capture", "a11y-and-pixels").unwrap();
        set_key(&p, "enabled", "true").unwrap();
        let c = Config::load_from(&p).unwrap();
        assert_eq!(
            c.top.deny_apps,
            Some(vec!["thunderbird".to_string(), "signal".to_string()])
        );
        assert_eq!(c.sandbox.allow_apps, Some(vec![]));
        let sb = c.effective(true);
        assert!(!sb.allow_all_apps, "an explicit empty list allows no app");
        assert_eq!(sb.sources["allow_apps"], "sandbox table");
        assert_eq!(sb.action_budget, 25);
        assert_eq!(sb.idle_expiry_ms, 180_000);
        assert_eq!(sb.capture, Capture::A11yAndPixels);
        assert_eq!(parse_list(" a ,b"), vec!["a", "b"]);
    }

    #[test]
    fn the_model_table_binds_a_model_and_defaults_the_rest() {
        let c = cfg("[model]\nprovider = \"openai\"\nmodel = \"qwen2.5:7b\"\nendpoint = \"http://127.0.0.1:11434/v1/\"\n").unwrap();
        let b = c.model.clone().expect("bound");
        assert_eq!(b.provider, Provider::OpenAi);
        assert_eq!(b.model, "qwen2.5:7b");
        assert_eq!(b.endpoint, "http://127.0.0.1:11434/v1");
        assert_eq!(b.api_key_env, None);
        assert_eq!(b.timeout_ms, DEFAULT_MODEL_TIMEOUT_MS);
        assert_eq!(b.max_retries, DEFAULT_MODEL_MAX_RETRIES);
        // The layers are untouched by the model table.
        assert_eq!(c.top, Settings::default());

        let c = cfg("[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"ANTHROPIC_API_KEY\"\ntimeout_ms = 300\nmax_retries = 0\n").unwrap();
        let b = c.model.unwrap();
        assert_eq!(b.provider, Provider::Anthropic);
        assert_eq!(b.endpoint, ANTHROPIC_ENDPOINT);
        assert_eq!(b.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!((b.timeout_ms, b.max_retries), (300, 0));

        // Incomplete: no binding, and what is missing is known.
        let c = cfg("[model]\nprovider = \"openai\"\n").unwrap();
        assert_eq!(c.model, None);
        assert_eq!(c.model_settings.missing(), vec!["model"]);
        assert_eq!(
            Config::default().model_settings.missing(),
            vec!["provider", "model"]
        );

        for (text, needle) in [
            (
                "[model]\nprovider = \"gemini\"\n",
                "unknown provider \"gemini\"",
            ),
            ("[model]\nmodle = \"x\"\n", "unknown key `model.modle`"),
            (
                "[model]\nendpoint = \"localhost:8080\"\n",
                "is not an http:// or https:// URL",
            ),
            (
                "[model]\napi_key_env = \"sk-abc-123\"\n",
                "not an environment variable name",
            ),
            ("[model]\nmax_retries = 11\n", "11 is out of range"),
            ("[model]\ntimeout_ms = 0\n", "0 is out of range"),
            (
                "model = \"gpt\"\n",
                "key `model`: is a string but must be a table",
            ),
            (
                "[sandbox]\n[sandbox.model]\nprovider = \"openai\"\n",
                "unknown key `sandbox.model`",
            ),
        ] {
            let e = cfg(text).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{text}");
            assert!(e.message.contains(needle), "{text}: {}", e.message);
            assert!(!e.message.contains("sk-abc-123"), "{}", e.message);
        }
    }

    #[test]
    fn model_keys_are_set_and_unset_one_at_a_time() {
        let d = TempDir::new("model");
        let p = d.0.join("config.toml");
        set_key(&p, "mode", "plan").unwrap();
        set_key(&p, "model.provider", "openai").unwrap();
        // An incomplete table is a valid file: the binding is filled in key by key.
        assert_eq!(Config::load_from(&p).unwrap().model, None);
        set_key(&p, "model.model", "gpt-4.1-mini").unwrap();
        set_key(&p, "model.endpoint", "http://127.0.0.1:8080/v1/").unwrap();
        set_key(&p, "model.api_key_env", "LOCAL_KEY").unwrap();
        set_key(&p, "model.timeout_ms", "1500").unwrap();
        set_key(&p, "model.max_retries", "3").unwrap();
        set_key(&p, "sandbox.mode", "bypass").unwrap();
        let c = Config::load_from(&p).unwrap();
        let b = c.model.clone().unwrap();
        assert_eq!(b.model, "gpt-4.1-mini");
        assert_eq!(b.endpoint, "http://127.0.0.1:8080/v1");
        assert_eq!(b.api_key_env.as_deref(), Some("LOCAL_KEY"));
        assert_eq!((b.timeout_ms, b.max_retries), (1500, 3));
        assert_eq!(c.top.mode, Some(Mode::Plan));
        assert_eq!(c.sandbox.mode, Some(Mode::Bypass));
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("[model]\nprovider = \"openai\""), "{text}");

        let before = text.clone();
        for (k, v) in [
            ("model.provider", "gemini"),
            ("model.api_key_env", "sk-live-secret"),
            ("model.max_retries", "99"),
            ("model.timeout_ms", "0"),
            ("model.endpoint", "ftp://x"),
            ("model.temperature", "0"),
        ] {
            let e = set_key(&p, k, v).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{k}={v}");
            assert!(!e.message.contains("sk-live-secret"), "{}", e.message);
            assert_eq!(std::fs::read_to_string(&p).unwrap(), before);
        }

        assert!(unset_key(&p, "model.api_key_env").unwrap());
        assert_eq!(
            Config::load_from(&p).unwrap().model.unwrap().api_key_env,
            None
        );
        assert!(unset_key(&p, "model").unwrap());
        let c = Config::load_from(&p).unwrap();
        assert_eq!(c.model, None);
        assert_eq!(c.model_settings, ModelSettings::default());
        assert_eq!(c.sandbox.mode, Some(Mode::Bypass));
        assert!(unset_key(&p, "model.nonsense").is_err());
    }

    #[test]
    fn invalid_values_leave_the_file_untouched() {
        let d = TempDir::new("bad");
        let p = d.0.join("config.toml");
        let before = "# keep me\nmode = \"plan\"\n";
        std::fs::write(&p, before).unwrap();
        for (k, v) in [
            ("mode", "yolo"),
            ("action_budget", "0"),
            ("action_budget", "-3"),
            ("enabled", "yes"),
            ("capture", "pixels"),
            ("nonsense", "1"),
            ("sandbox.nonsense", "1"),
        ] {
            let e = set_key(&p, k, v).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{k}={v}");
            assert!(e.message.contains(&format!("`{k}`")), "{}", e.message);
            assert_eq!(std::fs::read_to_string(&p).unwrap(), before);
        }
        // A file with several mistakes is repaired one key at a time, as the load
        // errors suggest; an invalid value is still refused there.
        std::fs::write(&p, "mode = \"yolo\"\nmdoe = 1\n").unwrap();
        assert!(set_key(&p, "mode", "nope").is_err());
        set_key(&p, "mode", "plan").unwrap();
        let e = Config::load_from(&p).unwrap_err();
        assert!(e.message.contains("unknown key `mdoe`"), "{}", e.message);
        assert!(unset_key(&p, "mdoe").unwrap());
        assert_eq!(Config::load_from(&p).unwrap().top.mode, Some(Mode::Plan));
        assert!(unset_key(&p, "nonsense").is_err());
        // A file that is not TOML at all is never rewritten.
        std::fs::write(&p, "mode = \n").unwrap();
        assert!(set_key(&p, "mode", "plan").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "mode = \n");
    }
}

//! The user's configuration file: whether deskpilot may act, in which permission mode,
//! on which apps, and the limits of each grant (docs/ARCHITECTURE.md §7).
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
//! | `allow_terminals`     | list of strings | `[]`                  | `[]`              | terminal emulators (app or executable name) that may be operated; every other terminal is refused |
//! | `action_budget`       | 1 to 10,000     | 200                   | 200               | actions per grant before it closes ([`DEFAULT_ACTION_BUDGET`]) |
//! | `idle_expiry_minutes` | 1 to 1,440      | 15                    | 15                | minutes without an action after which a grant closes ([`DEFAULT_IDLE_EXPIRY_MS`]) |
//! | `capture`             | string          | `"a11y-only"`         | `"a11y-only"`     | `a11y-only` or `a11y-and-pixels` (whether pixels may be captured) |
//! | `stop_hotkey`         | string          | `"ctrl+shift+Escape"` | same              | the chord long-lived hosts grab to stop every agent, like `deskpilot stop` ([`DEFAULT_STOP_HOTKEY`]) |
//! | `system_keys`         | bool            | `false`               | `false`           | whether desktop shortcuts may be pressed (`ctrl+alt+F1`, `super`, `alt+Tab`, …: [`deskpilot_policy::system_keys`]) |
//! | `clipboard`           | bool            | `false`               | `false`           | whether the agent may read or write the clipboard (`computer_clipboard`, `deskpilot clipboard`) |
//! | `serve`               | bool            | `false`               | `false`           | whether `deskpilot driver` serves this machine's desktop to a host elsewhere (`--device ssh:`); while on, anything that can run `deskpilot driver` here drives the desktop under this machine's rules but without grants, budgets or confirmations, which are the remote host's (docs/ARCHITECTURE.md §7.16) |
//! | `presence`            | bool            | `true`                | `false`           | whether long-lived hosts draw the agent's cursor, the bound window's frame and the indicator with Stop (docs/ARCHITECTURE.md §7.19) |
//! | `app_tiers`           | list of `NAME=TIER` | `[]`              | `[]`              | capability tiers (docs/ARCHITECTURE.md §7.22): `read` (observe only), `click` (no text or keys), `type` (the default), `code` (grants a terminal, like `allow_terminals`) |
//! | `allow_files`         | list of paths   | `[]`                  | `[]`              | folders (absolute, or `~/…`) an app may be made to save files in, besides the documents folder and the temporary directory (docs/ARCHITECTURE.md §7.21) |
//!
//! # The bound model
//!
//! A `[model]` table (top level only) names the model `deskpilot run` and
//! `computer_task` drive the desktop with (docs/ARCHITECTURE.md §10). There is no default
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
//!
//! Its parts: `parse.rs` reads and validates the file, `effective.rs` resolves the
//! keys of a context, `edit.rs` changes one key in place (`deskpilot config
//! set/unset`); every item is used from here, `crate::config::…`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use deskpilot_policy::grant::Capture;
#[cfg(doc)]
use deskpilot_policy::grant::{DEFAULT_ACTION_BUDGET, DEFAULT_IDLE_EXPIRY_MS};
use deskpilot_policy::mode::Mode;
use serde::{Deserialize, Serialize};

mod edit;
mod effective;
mod parse;
pub mod seal;

#[cfg(test)]
mod tests;

pub use edit::{check_key, set_key, unset_key};
pub use effective::CHANGED_OUTSIDE;
pub use parse::capture_name;

/// The stop hotkey unless the config names another: Ctrl+Shift+Escape.
pub const DEFAULT_STOP_HOTKEY: &str = "ctrl+shift+Escape";

/// Every key a layer may hold, in display order.
/// Largest `action_budget`: 10,000 actions. A budget is a brake on a runaway loop;
/// a larger one would not be one.
pub const MAX_ACTION_BUDGET: u32 = 10_000;
/// Largest `idle_expiry_minutes`: a day. A grant nobody used for a day is over.
pub const MAX_IDLE_EXPIRY_MINUTES: u64 = 24 * 60;

pub const KEYS: [&str; 16] = [
    "enabled",
    "mode",
    "allow_apps",
    "deny_apps",
    "self_apps",
    "allow_terminals",
    "app_tiers",
    "action_budget",
    "idle_expiry_minutes",
    "capture",
    "system_keys",
    "stop_hotkey",
    "clipboard",
    "serve",
    "presence",
    "allow_files",
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
/// `HOME/.config/deskpilot/config.toml` with [`deskpilot_os::home_dir`] (`$HOME`, on
/// Windows `%USERPROFILE%`; relative to the current directory when none is set).
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
        .or_else(|| deskpilot_os::home_dir().map(|h| h.join(".config")))
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
    pub allow_terminals: Option<Vec<String>>,
    /// `NAME=TIER` entries, validated ([`deskpilot_policy::tier::parse_entry`]).
    pub app_tiers: Option<Vec<String>>,
    /// Actions per grant, ≥ 1.
    pub action_budget: Option<u32>,
    /// Idle expiry of a grant, minutes, ≥ 1.
    pub idle_expiry_minutes: Option<u64>,
    pub capture: Option<Capture>,
    pub system_keys: Option<bool>,
    pub stop_hotkey: Option<String>,
    pub clipboard: Option<bool>,
    /// `deskpilot driver` serves this machine's desktop (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve: Option<bool>,
    pub presence: Option<bool>,
    pub allow_files: Option<Vec<String>>,
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
    /// The file was sealed by `deskpilot config` and changed since by something
    /// else ([`seal::SealState::Changed`]): it never widens the policy — computer
    /// use is off and the mode is `plan` until the user reviews it and runs
    /// `deskpilot config trust`.
    pub changed_outside: bool,
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
    /// Terminal emulators the user allows (deskpilot_policy::refusal::TERMINAL_APPS).
    pub allow_terminals: Vec<String>,
    /// Capability tiers the user set, `NAME=TIER` (docs/ARCHITECTURE.md §7.22);
    /// default none (every app `type`, terminals refused).
    pub app_tiers: Vec<String>,
    /// Actions per grant; default [`DEFAULT_ACTION_BUDGET`].
    pub action_budget: u32,
    /// Idle expiry of a grant, ms; default [`DEFAULT_IDLE_EXPIRY_MS`].
    pub idle_expiry_ms: u64,
    /// Default `a11y-only`.
    pub capture: Capture,
    /// Desktop shortcuts may be pressed (default `false`).
    pub system_keys: bool,
    /// The stop hotkey's chord (default [`DEFAULT_STOP_HOTKEY`]).
    pub stop_hotkey: String,
    /// The clipboard may be read and written through deskpilot (default `false`).
    pub clipboard: bool,
    /// `deskpilot driver` may serve this machine's desktop to a host elsewhere
    /// (default `false`; docs/ARCHITECTURE.md §7.16).
    pub serve: bool,
    /// Long-lived hosts show the agent on screen (default `true` on the user's own
    /// desktop, `false` in a sandbox).
    pub presence: bool,
    /// Folders apps may be made to save files in, besides the defaults
    /// (docs/ARCHITECTURE.md §7.21): absolute paths or `~/…`, as configured.
    pub allow_files: Vec<String>,
    /// Where each key's value came from, by config key name (`idle_expiry_minutes`,
    /// not `idle_expiry_ms`): `"sandbox table"`, `"file"`, `"sandbox default"` or
    /// `"default"`.
    pub sources: BTreeMap<String, String>,
}

//! Reading the file: TOML syntax, known keys, value types and ranges, with errors
//! that name the file, the key and the valid values.

use std::path::Path;

use deskpilot_policy::grant::Capture;
use deskpilot_policy::mode::Mode;
use deskpilot_protocol::ComputerError;
use toml_edit::{DocumentMut, Item, TableLike, Value};

use super::{
    CAPTURE_NAMES, Config, KEYS, MAX_ACTION_BUDGET, MAX_IDLE_EXPIRY_MINUTES, MAX_MODEL_RETRIES,
    MODE_NAMES, MODEL_KEYS, MODEL_TABLE, ModelSettings, Provider, SANDBOX_TABLE, Settings,
    config_path,
};
use deskpilot_protocol::Result;

/// The fix hint every key error ends with.
fn fix_hint(key: &str) -> String {
    format!("fix it with `deskpilot config set {key} VALUE` or edit the file")
}

/// What a key accepts, for error messages.
fn valid_values(key: &str) -> &'static str {
    match key {
        "enabled" | "system_keys" | "clipboard" | "serve" | "presence" => "true, false",
        "mode" => MODE_NAMES,
        "allow_files" => {
            "a list of folders, absolute or under ~, such as [\"~/Projects\", \"/srv/shared\"] (with `config set`: ~/Projects,/srv/shared)"
        }
        "app_tiers" => {
            "a list of NAME=TIER entries, TIER one of read, click, type, code, such as [\"mousepad=click\", \"xterm=code\"] (with `config set`: mousepad=click,xterm=code)"
        }
        "allow_apps" | "deny_apps" | "self_apps" | "allow_terminals" => {
            "a list of app names such as [\"mousepad\", \"gedit\"] (with `config set`: mousepad,gedit)"
        }
        "action_budget" => "an integer from 1 to 10000",
        "idle_expiry_minutes" => "an integer from 1 to 1440 (a day)",
        "capture" => CAPTURE_NAMES,
        "stop_hotkey" => {
            "one chord of modifiers and a key, such as \"ctrl+shift+Escape\" or \"ctrl+alt+F12\""
        }
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
pub(super) fn key_error(path: &Path, key: &str, what: &str) -> ComputerError {
    let bare = key.rsplit('.').next().unwrap_or(key);
    ComputerError::invalid(format!(
        "{}: key `{key}`: {what}; valid values: {}; {}",
        path.display(),
        valid_values(bare),
        fix_hint(key)
    ))
}

fn unknown_key_error(path: &Path, key: &str, in_sandbox_table: bool) -> ComputerError {
    let mut valid = KEYS.join(", ");
    if !in_sandbox_table {
        valid.push_str(", [sandbox] (a table of the same keys), [model] (");
        valid.push_str(&MODEL_KEYS.join(", "));
        valid.push(')');
    }
    ComputerError::invalid(format!(
        "{}: unknown key `{key}`; valid keys: {valid}; fix it with `deskpilot config unset {key}` or edit the file",
        path.display()
    ))
}

/// The value of key `full`, which must be a scalar or array, not a table.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` naming the file, the key and what it is.
fn scalar<'a>(path: &Path, full: &str, item: &'a Item) -> Result<&'a Value> {
    item.as_value()
        .ok_or_else(|| key_error(path, full, &format!("is {}", describe_item(item))))
}

/// `COMPUTER_INVALID_ARGUMENT`: key `full` holds `v` but must be `want`.
fn wrong_type(path: &Path, full: &str, v: &Value, want: &str) -> ComputerError {
    key_error(
        path,
        full,
        &format!("is {} but must be {want}", describe(v)),
    )
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
fn parse_layer(path: &Path, table: &dyn TableLike, prefix: &str) -> Result<Layers> {
    let mut s = Settings::default();
    let mut sandbox = None;
    let mut model = None;
    for (key, item) in table.iter() {
        let full = format!("{prefix}{key}");
        if prefix.is_empty() && key == MODEL_TABLE {
            let Some(t) = item.as_table_like() else {
                return Err(ComputerError::invalid(format!(
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
                return Err(ComputerError::invalid(format!(
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
        let v = scalar(path, &full, item)?;
        let wrong = |want: &str| wrong_type(path, &full, v, want);
        match key {
            "enabled" => s.enabled = Some(v.as_bool().ok_or_else(|| wrong("true or false"))?),
            "system_keys" => {
                s.system_keys = Some(v.as_bool().ok_or_else(|| wrong("true or false"))?);
            }
            "clipboard" => {
                s.clipboard = Some(v.as_bool().ok_or_else(|| wrong("true or false"))?);
            }
            "serve" => {
                s.serve = Some(v.as_bool().ok_or_else(|| wrong("true or false"))?);
            }
            "presence" => {
                s.presence = Some(v.as_bool().ok_or_else(|| wrong("true or false"))?);
            }
            "mode" => {
                let name = v.as_str().ok_or_else(|| wrong("a string"))?;
                s.mode =
                    Some(Mode::from_name(name).ok_or_else(|| {
                        key_error(path, &full, &format!("unknown mode {name:?}"))
                    })?);
            }
            "stop_hotkey" => {
                let chord = v.as_str().ok_or_else(|| wrong("a string"))?;
                s.stop_hotkey = Some(check_hotkey(chord).ok_or_else(|| {
                    key_error(path, &full, &format!("{chord:?} is not one chord"))
                })?);
            }
            "capture" => {
                let name = v.as_str().ok_or_else(|| wrong("a string"))?;
                s.capture =
                    Some(capture_from_name(name).ok_or_else(|| {
                        key_error(path, &full, &format!("unknown capture {name:?}"))
                    })?);
            }
            "allow_apps" | "deny_apps" | "self_apps" | "allow_terminals" | "allow_files"
            | "app_tiers" => {
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
                    "allow_terminals" => s.allow_terminals = Some(list),
                    "app_tiers" => {
                        if let Some(e) = list
                            .iter()
                            .find_map(|e| deskpilot_policy::tier::parse_entry(e).err())
                        {
                            return Err(key_error(path, &full, &e));
                        }
                        s.app_tiers = Some(list)
                    }
                    "allow_files" => {
                        if let Some(bad) = list
                            .iter()
                            .find(|p| !(p.starts_with('/') || p == &"~" || p.starts_with("~/")))
                        {
                            return Err(key_error(
                                path,
                                &full,
                                &format!("{bad:?} is not an absolute folder"),
                            ));
                        }
                        s.allow_files = Some(list)
                    }
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
pub(super) fn check_model_string(key: &str, v: &str) -> Result<(), String> {
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

fn parse_model_table(path: &Path, table: &dyn TableLike) -> Result<ModelSettings> {
    let mut m = ModelSettings::default();
    for (key, item) in table.iter() {
        let full = format!("{MODEL_TABLE}.{key}");
        if !MODEL_KEYS.contains(&key) {
            return Err(ComputerError::invalid(format!(
                "{}: unknown key `{full}`; valid keys of [model]: {}; fix it with `deskpilot config unset {full}` or edit the file",
                path.display(),
                MODEL_KEYS.join(", ")
            )));
        }
        let v = scalar(path, &full, item)?;
        let wrong = |want: &str| wrong_type(path, &full, v, want);
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

/// `chord` when it is one chord of a modifier and a key (`ctrl+shift+Escape`).
pub(super) fn check_hotkey(chord: &str) -> Option<String> {
    let parsed = deskpilot_protocol::keys::parse_chords(chord).ok()?;
    (parsed.len() == 1 && parsed[0].keys.len() >= 2).then(|| chord.trim().to_owned())
}

pub(super) fn capture_from_name(s: &str) -> Option<Capture> {
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

pub(super) fn parse_document(
    path: &Path,
    text: &str,
) -> Result<(DocumentMut, Config), ComputerError> {
    let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        ComputerError::invalid(format!(
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
        changed_outside: false,
    };
    Ok((doc, cfg))
}

/// Reads the file's text; `None` when it does not exist.
pub(super) fn read_text(path: &Path) -> Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            ComputerError::invalid(format!(
                "{}: not UTF-8 text; fix the file or remove it",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ComputerError::internal(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

impl Config {
    /// Reads the file at [`config_path`].
    ///
    /// Errors: as [`Config::load_from`].
    pub fn load() -> Result<Config> {
        Self::load_from(&config_path())
    }

    /// Reads the file at `path`; a missing file gives every key unset.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` for invalid TOML, an unknown key, a wrong
    /// type, an unknown mode or capture name, or a zero budget or expiry; the message
    /// names the file, the key and the valid values. `COMPUTER_INTERNAL` when the file
    /// exists but cannot be read.
    pub fn load_from(path: &Path) -> Result<Config> {
        let text = read_text(path)?;
        let changed_outside = super::seal::seal_state(path, text.as_deref().map(str::as_bytes))
            == super::seal::SealState::Changed;
        let mut cfg = match text {
            None => Config {
                path: path.to_path_buf(),
                ..Config::default()
            },
            Some(text) => parse_document(path, &text)?.1,
        };
        cfg.changed_outside = changed_outside;
        Ok(cfg)
    }
}

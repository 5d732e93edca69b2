//! Changing one key of the file in place (`deskpilot config set` and `unset`),
//! keeping comments and other keys, under a lock, validated before it replaces the
//! file.

use std::path::Path;

use deskpilot_policy::mode::Mode;
use deskpilot_protocol::ComputerError;
use toml_edit::{DocumentMut, Item, TableLike, Value};

use super::parse::{
    capture_from_name, capture_name, check_model_string, key_error, parse_document, read_text,
};
use super::{KEYS, MAX_MODEL_RETRIES, MODEL_KEYS, MODEL_TABLE, SANDBOX_TABLE};
use deskpilot_protocol::Result;

/// Splits `KEY` or `sandbox.KEY` into (in the sandbox table, bare key), refusing
/// unknown keys.
fn split_key<'a>(path: &Path, key: &'a str) -> Result<(Table, &'a str), ComputerError> {
    let (table, bare) = table_of(key);
    let known = match table {
        Table::Model => MODEL_KEYS.contains(&bare),
        _ => KEYS.contains(&bare),
    };
    if !known {
        let mut valid = KEYS.join(", ");
        valid.push_str(", or any of them as sandbox.KEY; model.");
        valid.push_str(&MODEL_KEYS.join(", model."));
        return Err(ComputerError::invalid(format!(
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
fn parse_model_cli_value(path: &Path, key: &str, bare: &str, value: &str) -> Result<Value> {
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
fn parse_cli_value(path: &Path, key: &str, bare: &str, value: &str) -> Result<Value> {
    let v = value.trim();
    let bad = || key_error(path, key, &format!("{value:?} is not a valid value"));
    Ok(match bare {
        "enabled" | "system_keys" | "clipboard" | "serve" | "presence" => match v {
            "true" => Value::from(true),
            "false" => Value::from(false),
            _ => return Err(bad()),
        },
        "mode" => Value::from(Mode::from_name(v).ok_or_else(bad)?.as_str()),
        "capture" => Value::from(capture_name(capture_from_name(v).ok_or_else(bad)?)),
        "stop_hotkey" => Value::from(super::parse::check_hotkey(v).ok_or_else(bad)?),
        "action_budget" => {
            let n: u32 = v.parse().ok().filter(|&n| n >= 1).ok_or_else(bad)?;
            Value::from(i64::from(n))
        }
        "idle_expiry_minutes" => {
            let n: i64 = v.parse().ok().filter(|&n| n >= 1).ok_or_else(bad)?;
            Value::from(n)
        }
        "app_tiers" => {
            let list = parse_list(v);
            if let Some(e) = list
                .iter()
                .find_map(|e| deskpilot_policy::tier::parse_entry(e).err())
            {
                return Err(ComputerError::new(
                    deskpilot_protocol::ErrorCode::InvalidArgument,
                    format!(
                        "the value given for {key}: {e}; nothing was changed. Example: deskpilot config set {key} mousepad=click,xterm=code"
                    ),
                ));
            }
            Value::Array(list.into_iter().collect())
        }
        _ => {
            let arr: toml_edit::Array = parse_list(v).into_iter().collect();
            Value::Array(arr)
        }
    })
}

/// `a, b,c` → `["a", "b", "c"]`; blank pieces are dropped, so `""` is the empty list.
pub(super) fn parse_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Holds the sidecar lock (`.NAME.lock` beside the file) for one edit, so two
/// concurrent `config set` calls do not lose each other's key.
fn lock_for(path: &Path) -> Result<std::fs::File> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config.toml".into());
    let lock_path = path.with_file_name(format!(".{name}.lock"));
    deskpilot_os::lock_file(&lock_path)
        .map_err(|e| ComputerError::internal(format!("cannot lock {}: {e}", lock_path.display())))
}

/// Creates the file's missing directories, mode 0700.
fn ensure_dir(path: &Path) -> Result<()> {
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    deskpilot_os::create_private_dir_all(dir)
        .map_err(|e| ComputerError::internal(format!("cannot create {}: {e}", dir.display())))
}

/// Replaces the file with `doc` atomically, mode 0600
/// ([`deskpilot_os::write_private_atomic`]), after validating it: an edit never
/// turns a valid file into an invalid one. When the file was already invalid
/// (`was_valid` false) the edit is written even if another key is still wrong, so a
/// file with several mistakes can be repaired one key at a time.
fn write_validated(path: &Path, doc: &DocumentMut, was_valid: bool) -> Result<()> {
    let text = doc.to_string();
    if let Err(e) = parse_document(path, &text) {
        if was_valid {
            return Err(e);
        }
        tracing::debug!(error = %e.message, "config file still invalid after the edit");
    }
    deskpilot_os::write_private_atomic(path, text.as_bytes())
        .map_err(|e| ComputerError::internal(format!("cannot write {}: {e}", path.display())))?;
    // Written by the user's channel: sealed (docs/ARCHITECTURE.md §7.17).
    super::seal::seal(path)
}

/// Loads the document for an edit, and whether it is valid as it stands. Only the
/// TOML syntax must be right: an edit may be what repairs an invalid key.
fn load_doc(path: &Path) -> Result<(DocumentMut, bool), ComputerError> {
    match read_text(path)? {
        None => Ok((DocumentMut::new(), true)),
        Some(text) => {
            let valid = parse_document(path, &text).is_ok();
            let doc = text.parse().map_err(|e: toml_edit::TomlError| {
                ComputerError::invalid(format!(
                    "{}: not valid TOML: {}; fix the file or remove it to start from the defaults",
                    path.display(),
                    e.to_string().trim_end()
                ))
            })?;
            Ok((doc, valid))
        }
    }
}

/// Whether `config set KEY VALUE` would be accepted: the key exists and the value
/// fits it (nothing is read or written). For asking the user only about edits that
/// can be made.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` as [`set_key`]'s, for the key and the value.
pub fn check_key(path: &Path, key: &str, value: &str) -> Result<()> {
    let (which, bare) = split_key(path, key)?;
    match which {
        Table::Model => parse_model_cli_value(path, key, bare, value).map(drop),
        _ => parse_cli_value(path, key, bare, value).map(drop),
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
pub fn set_key(path: &Path, key: &str, value: &str) -> Result<()> {
    check_key(path, key, value)?;
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
                    ComputerError::invalid(format!(
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
pub fn unset_key(path: &Path, key: &str) -> Result<bool> {
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

//! `deskpilot config [show|path|set|unset]`: the user's settings — whether deskpilot
//! may act, the permission mode, allow- and deny-lists, grant limits — and where each
//! effective value came from. The file's format and precedence are documented in
//! `deskpilot_host::config`.

use deskpilot_host::config::{self, Config, Effective, KEYS, Settings};
use deskpilot_protocol::ComputerError;
use serde::Serialize;
use serde_json::Value;

use crate::output::print_ok;
use deskpilot_protocol::Result;

/// What `deskpilot config` does.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCmd {
    /// Show the effective settings for this desktop and where each came from
    /// (the default when no subcommand is given).
    Show,
    /// Print the config file's path ($DESKPILOT_CONFIG, else
    /// $XDG_CONFIG_HOME/deskpilot/config.toml, else ~/.config/deskpilot/config.toml).
    Path,
    /// Set a key, keeping the file's comments and other keys.
    ///
    /// Keys: enabled, mode, allow_apps, deny_apps, self_apps, allow_terminals, app_tiers,
    /// action_budget, idle_expiry_minutes, capture, system_keys, stop_hotkey,
    /// clipboard, serve, presence, allow_files; prefix
    /// `sandbox.` for a value used only on
    /// deskpilot sandbox desktops. Lists are comma-separated ("" = empty list).
    #[command(after_help = "Examples:
  deskpilot config set enabled true
  deskpilot config set mode accept-edits
  deskpilot config set sandbox.mode bypass
  deskpilot config set deny_apps thunderbird,signal
  deskpilot config set allow_apps ''          # an empty allow-list
  deskpilot config set app_tiers mousepad=click,notes=code  # capability tiers
  deskpilot config set idle_expiry_minutes 30
  deskpilot config set system_keys true         # desktop shortcuts (ctrl+alt+F1, super, alt+Tab)
  deskpilot config set clipboard true           # computer_clipboard, deskpilot clipboard
  deskpilot config set serve true               # let `deskpilot driver` serve this desktop (--device ssh:)
  deskpilot config set presence false           # no drawn cursor, frame or indicator
  deskpilot config set model.provider openai    # the model `deskpilot run` uses
  deskpilot config set model.model gpt-4.1-mini
  deskpilot config set model.api_key_env OPENAI_API_KEY")]
    Set {
        /// A key such as `mode`, `sandbox.mode` or `model.provider` (model keys:
        /// provider, model, endpoint, api_key_env, timeout_ms, max_retries).
        key: String,
        /// The value: true/false, an integer, a mode (plan, default, accept-edits,
        /// bypass, unattended), a capture (a11y-only, a11y-and-pixels), or a list `a,b`.
        value: String,
        /// Change it without asking, for provisioning scripts: refused inside a
        /// deskpilot sandbox and for programs deskpilot started.
        #[arg(long)]
        yes: bool,
    },
    /// Remove a key, so its default (or the top-level value) applies again.
    #[command(after_help = "Examples:
  deskpilot config unset mode
  deskpilot config unset sandbox.allow_apps")]
    Unset {
        /// A key such as `mode` or `sandbox.mode`.
        key: String,
        /// Remove it without asking (as `set --yes`).
        #[arg(long)]
        yes: bool,
    },
    /// Accept the config file as it is now, after a change made outside deskpilot
    /// (by hand, or by an app): shows the file and seals it once you say yes. Until
    /// then computer use is off and the mode is `plan`. Needs a terminal.
    #[command(after_help = "Examples:
  deskpilot config trust
  deskpilot config trust --yes   # a provisioning script that wrote the file")]
    Trust {
        /// Accept it without asking (as `set --yes`).
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Serialize)]
struct ShowDoc<'a> {
    path: String,
    exists: bool,
    in_sandbox: bool,
    /// The file was changed outside deskpilot since it last sealed it.
    changed_outside: bool,
    effective: &'a Effective,
    file: FileDoc<'a>,
    /// The model `deskpilot run` uses, when bound.
    model: Option<&'a config::ModelBinding>,
}

#[derive(Debug, Serialize)]
struct FileDoc<'a> {
    top: &'a Settings,
    sandbox: &'a Settings,
}

fn context_line(in_sandbox: bool) -> &'static str {
    if in_sandbox {
        "context: this desktop is a deskpilot sandbox ([sandbox] keys apply)"
    } else {
        "context: your own desktop ([sandbox] keys do not apply)"
    }
}

/// The value of `key` in `v` (a serialized [`Effective`] or [`Settings`]) as TOML-like
/// text; `idle_expiry_minutes` is read from `idle_expiry_ms` when absent.
fn render(v: &Value, key: &str) -> String {
    let field = match v.get(key) {
        Some(f) => f.clone(),
        None if key == "idle_expiry_minutes" => v
            .get("idle_expiry_ms")
            .and_then(Value::as_u64)
            .map(|ms| Value::from(ms / 60_000))
            .unwrap_or(Value::Null),
        None => Value::Null,
    };
    match &field {
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// Runs `deskpilot config`; `None` shows the settings. `in_sandbox` says whether the
/// desktop this call targets is a deskpilot sandbox (the `[sandbox]` table applies).
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for an invalid file, key or value (the file is
/// then left as it was); `COMPUTER_INTERNAL` when the file cannot be read or written.
pub fn run(json: bool, in_sandbox: bool, cmd: Option<ConfigCmd>) -> Result<()> {
    let path = config::config_path();
    match cmd.unwrap_or(ConfigCmd::Show) {
        ConfigCmd::Show => show(json, in_sandbox, &Config::load_from(&path)?),
        ConfigCmd::Path => {
            let exists = path.exists();
            print_ok(
                json,
                &serde_json::json!({ "path": path.display().to_string(), "exists": exists }),
                &path.display().to_string(),
            );
            Ok(())
        }
        ConfigCmd::Trust { yes } => {
            let bytes = std::fs::read(&path).unwrap_or_default();
            if yes {
                super::policy::provisioning("accepting the config")?;
            } else {
                super::policy::need_terminal("accepting the config")?;
                let text = String::from_utf8_lossy(&bytes);
                eprintln!("--- {} ---\n{text}--- end ---", path.display());
                confirm(&format!(
                    "deskpilot: accept {} as shown above, as your config?",
                    path.display()
                ))?;
            }
            config::seal::seal_bytes(&path, &bytes)?;
            let cfg = Config::load_from(&path)?;
            let doc = serde_json::json!({
                "path": path.display().to_string(),
                "changed_outside": cfg.changed_outside,
            });
            print_ok(json, &doc, &format!("accepted {}", path.display()));
            Ok(())
        }
        ConfigCmd::Set { key, value, yes } => {
            // A typo is said before anything is asked.
            config::check_key(&path, &key, &value)?;
            ask(
                yes,
                &path,
                &format!(
                    "deskpilot: set {} = {:?} in {}?",
                    deskpilot_core::sanitize::one_line(&key),
                    deskpilot_core::sanitize::one_line(&value),
                    path.display()
                ),
            )?;
            config::set_key(&path, &key, &value)?;
            let cfg = Config::load_from(&path)?;
            let (bare, layer) = if let Some(k) = key.strip_prefix("sandbox.") {
                (k, serde_json::to_value(&cfg.sandbox))
            } else if let Some(k) = key.strip_prefix("model.") {
                (k, serde_json::to_value(&cfg.model_settings))
            } else {
                (key.as_str(), serde_json::to_value(&cfg.top))
            };
            let layer = layer.unwrap_or(Value::Null);
            let stored = render(&layer, bare);
            let mut text = format!("{key} = {stored}   # in {}", path.display());
            let eff = cfg.effective(in_sandbox);
            if key.starts_with("sandbox.") && !in_sandbox {
                text.push_str("\nnote: sandbox.* keys apply only on deskpilot sandbox desktops");
            } else if !key.starts_with("sandbox.")
                && eff.sources.get(bare).map(String::as_str) == Some("sandbox table")
            {
                text.push_str(&format!(
                    "\nnote: on this desktop `sandbox.{bare}` wins over `{bare}`"
                ));
            }
            let doc = serde_json::json!({
                "path": path.display().to_string(),
                "key": key,
                "value": layer.get(bare).cloned(),
                "effective": eff,
            });
            print_ok(json, &doc, &text);
            Ok(())
        }
        ConfigCmd::Unset { key, yes } => {
            ask(
                yes,
                &path,
                &format!(
                    "deskpilot: remove {} from {}?",
                    deskpilot_core::sanitize::one_line(&key),
                    path.display()
                ),
            )?;
            let removed = config::unset_key(&path, &key)?;
            let text = if removed {
                format!("removed `{key}` from {}", path.display())
            } else {
                format!("`{key}` was not set in {}", path.display())
            };
            let doc = serde_json::json!({
                "path": path.display().to_string(),
                "key": key,
                "removed": removed,
            });
            print_ok(json, &doc, &text);
            Ok(())
        }
    }
}

fn show(json: bool, in_sandbox: bool, cfg: &Config) -> Result<()> {
    let exists = cfg.path.exists();
    let eff = cfg.effective(in_sandbox);
    let mut text = format!(
        "config file: {}{}\n{}\n",
        cfg.path.display(),
        if exists { "" } else { " (no file yet)" },
        context_line(in_sandbox)
    );
    if cfg.changed_outside {
        text.push_str("warning: the file was changed outside deskpilot since it last sealed it: computer use is off and the mode is plan until you review it and run `deskpilot config trust`\n");
    }
    let v = serde_json::to_value(&eff).unwrap_or(Value::Null);
    let width = KEYS.iter().map(|k| k.len()).max().unwrap_or(0);
    for key in KEYS {
        let value = if key == "allow_apps" && eff.allow_all_apps {
            "(every app)".to_string()
        } else {
            render(&v, key)
        };
        let source = eff
            .sources
            .get(key)
            .map(String::as_str)
            .unwrap_or("default");
        text.push_str(&format!("{key:<width$} = {value:<20} # {source}\n"));
    }
    match &cfg.model {
        Some(b) => text.push_str(&format!(
            "model: {} {} at {}{}\n",
            serde_json::to_value(b.provider)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            b.model,
            b.endpoint,
            b.api_key_env
                .as_deref()
                .map(|e| format!(" (key in ${e})"))
                .unwrap_or_default()
        )),
        None => text.push_str(
            "model: none bound (`deskpilot run` needs one: deskpilot config set model.provider openai; deskpilot config set model.model NAME)\n",
        ),
    }
    if !exists {
        text.push_str("change a key with `deskpilot config set KEY VALUE`\n");
    }
    let doc = ShowDoc {
        path: cfg.path.display().to_string(),
        exists,
        in_sandbox,
        changed_outside: cfg.changed_outside,
        effective: &eff,
        file: FileDoc {
            top: &cfg.top,
            sandbox: &cfg.sandbox,
        },
        model: cfg.model.as_ref(),
    };
    print_ok(json, &doc, &text);
    Ok(())
}

/// Asks the user at the terminal; anything but yes leaves the file as it was.
/// An edit of a config changed outside deskpilot would seal that change unseen:
/// the user reviews it first (`deskpilot config trust`).
fn refuse_if_changed_outside(path: &std::path::Path) -> Result<()> {
    if Config::load_from(path)?.changed_outside {
        return Err(ComputerError::new(
            deskpilot_protocol::ErrorCode::ConfirmationRequired,
            format!(
                "{} was changed outside deskpilot since it last sealed it; review the file, then run `deskpilot config trust` before changing it",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// The user's yes to a change: `--yes` from a provisioning script
/// ([`super::policy::provisioning`]), else `question` at a terminal. Either way a
/// file changed outside deskpilot is reviewed first (`config trust`).
fn ask(yes: bool, path: &std::path::Path, question: &str) -> Result<()> {
    if yes {
        super::policy::provisioning("changing the config")?;
    } else {
        super::policy::need_terminal("changing the config")?;
    }
    refuse_if_changed_outside(path)?;
    if yes { Ok(()) } else { confirm(question) }
}

fn confirm(question: &str) -> Result<()> {
    if super::session::ask_yes(question) {
        return Ok(());
    }
    Err(ComputerError::new(
        deskpilot_protocol::ErrorCode::ConfirmationRequired,
        "you declined; the config file was not changed",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_render_as_toml_like_text() {
        let eff = Config::default().effective(false);
        let v = serde_json::to_value(&eff).unwrap();
        assert_eq!(render(&v, "mode"), "\"default\"");
        assert_eq!(render(&v, "enabled"), "false");
        assert_eq!(render(&v, "deny_apps"), "[]");
        assert_eq!(render(&v, "idle_expiry_minutes"), "15");
        assert_eq!(render(&v, "capture"), "\"a11y-only\"");
        assert_eq!(render(&v, "system_keys"), "false");
        let s = Settings {
            deny_apps: Some(vec!["a".into(), "b".into()]),
            ..Settings::default()
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(render(&v, "deny_apps"), "[\"a\", \"b\"]");
        assert_eq!(render(&v, "mode"), "null");
    }
}

//! Resolving every key for one context (own desktop or sandbox) from the layers
//! and the defaults.

use std::collections::BTreeMap;

use deskpilot_policy::grant::{Capture, DEFAULT_ACTION_BUDGET, DEFAULT_IDLE_EXPIRY_MS};
use deskpilot_policy::mode::Mode;

use super::{Config, Effective, Settings};

/// The source of `enabled` and `mode` when the config was changed outside
/// deskpilot ([`Config::changed_outside`]).
pub const CHANGED_OUTSIDE: &str = "changed outside deskpilot";

impl Config {
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
            "allow_terminals",
            sb.allow_terminals.is_some(),
            t.allow_terminals.is_some(),
            false,
        );
        let allow_terminals = choose(w, &sb.allow_terminals, &t.allow_terminals, Vec::new());

        let w = pick(
            "app_tiers",
            sb.app_tiers.is_some(),
            t.app_tiers.is_some(),
            false,
        );
        let app_tiers = choose(w, &sb.app_tiers, &t.app_tiers, Vec::new());

        let w = pick(
            "allow_files",
            sb.allow_files.is_some(),
            t.allow_files.is_some(),
            false,
        );
        let allow_files = choose(w, &sb.allow_files, &t.allow_files, Vec::new());

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

        let w = pick(
            "system_keys",
            sb.system_keys.is_some(),
            t.system_keys.is_some(),
            false,
        );
        let system_keys = choose(w, &sb.system_keys, &t.system_keys, false);

        let w = pick(
            "stop_hotkey",
            sb.stop_hotkey.is_some(),
            t.stop_hotkey.is_some(),
            false,
        );
        let stop_hotkey = choose(
            w,
            &sb.stop_hotkey,
            &t.stop_hotkey,
            super::DEFAULT_STOP_HOTKEY.to_owned(),
        );

        let w = pick(
            "clipboard",
            sb.clipboard.is_some(),
            t.clipboard.is_some(),
            false,
        );
        let clipboard = choose(w, &sb.clipboard, &t.clipboard, false);

        let w = pick("serve", sb.serve.is_some(), t.serve.is_some(), false);
        let serve = choose(w, &sb.serve, &t.serve, false);

        let w = pick(
            "presence",
            sb.presence.is_some(),
            t.presence.is_some(),
            true,
        );
        let presence = choose(w, &sb.presence, &t.presence, !in_sandbox);

        // A config changed outside deskpilot never widens the policy (and the user
        // keeps seeing the agent).
        let (enabled, mode, system_keys, clipboard, serve, presence) = if self.changed_outside {
            for k in [
                "enabled",
                "mode",
                "system_keys",
                "clipboard",
                "serve",
                "presence",
            ] {
                sources.insert(k.to_string(), CHANGED_OUTSIDE.to_string());
            }
            (
                false,
                Mode::Plan,
                false,
                false,
                false,
                !in_sandbox || presence,
            )
        } else {
            (enabled, mode, system_keys, clipboard, serve, presence)
        };
        let allow_files = if self.changed_outside {
            sources.insert("allow_files".into(), CHANGED_OUTSIDE.to_string());
            Vec::new()
        } else {
            allow_files
        };
        // A file changed outside `deskpilot config` grants no terminal and sets no
        // tier (a lowered one would show a terminal); nothing acts meanwhile anyway
        // (`enabled` is false and the mode plan).
        let (allow_terminals, app_tiers) = if self.changed_outside {
            for k in ["allow_terminals", "app_tiers"] {
                sources.insert(k.into(), CHANGED_OUTSIDE.to_string());
            }
            (Vec::new(), Vec::new())
        } else {
            (allow_terminals, app_tiers)
        };
        Effective {
            enabled,
            mode,
            allow_apps,
            allow_all_apps,
            deny_apps,
            self_apps,
            allow_terminals,
            app_tiers,
            action_budget,
            idle_expiry_ms,
            capture,
            system_keys,
            stop_hotkey,
            clipboard,
            serve,
            presence,
            allow_files,
            sources,
        }
    }
}

//! The bound model: the [`Model`] trait the loop calls, its request and reply (defined
//! in the provider-neutral `call` module and re-exported here), the binding checks,
//! and a [`ScriptedModel`] that replays answers for tests.
//!
//! A binding is explicit (`[model]` in the config, see
//! [`deskpilot_host::config::ModelBinding`]); without one, [`require_binding`] refuses
//! with `COMPUTER_NO_MODEL_BINDING`. Nothing here ever picks another model.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use deskpilot_host::config::{Config, ModelBinding, Provider};
use deskpilot_protocol::{ComputerError, ErrorCode};

pub use crate::call::{DecideRequest, Image, Model, ModelReply, Usage};
use crate::providers::{AnthropicMessages, OpenAiChat};
use deskpilot_protocol::Result;

/// How to bind a model, for error messages.
const BIND_HINT: &str = "bind one with `deskpilot config set model.provider openai` (or anthropic) and `deskpilot config set model.model MODEL`; for a local server also `deskpilot config set model.endpoint http://127.0.0.1:11434/v1`, and for a key `deskpilot config set model.api_key_env OPENAI_API_KEY`";

/// The config's model binding.
///
/// Errors: `COMPUTER_NO_MODEL_BINDING` when `[model]` lacks `provider` or `model`,
/// naming the missing keys and the `deskpilot config set model.…` lines that bind
/// one. There is no default model and no fallback.
pub fn require_binding(cfg: &Config) -> Result<&ModelBinding> {
    if let Some(b) = &cfg.model {
        return Ok(b);
    }
    let missing = cfg.model_settings.missing();
    let what = if missing.len() == 2 {
        "no model is bound for runs (the [model] table of the config is not set)".to_string()
    } else {
        format!(
            "the model binding is incomplete: [model] lacks {}",
            missing
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and ")
        )
    };
    Err(ComputerError::new(
        ErrorCode::NoModelBinding,
        format!(
            "{what}; deskpilot never falls back to another model. {BIND_HINT} (config file: {})",
            cfg.path.display()
        ),
    ))
}

/// The API key named by the binding: `None` when it names no variable.
///
/// Errors: `COMPUTER_NO_MODEL_BINDING` when the variable is unset or empty.
pub fn api_key(b: &ModelBinding) -> Result<Option<String>> {
    let Some(var) = &b.api_key_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_string())),
        _ => Err(ComputerError::new(
            ErrorCode::NoModelBinding,
            format!(
                "the bound model {}:{} reads its API key from the environment variable {var}, which is not set here; export it, or run `deskpilot config unset model.api_key_env` for a server that needs no key",
                b.provider.as_str(),
                b.model
            ),
        )),
    }
}

/// The provider client of a binding (OpenAI-compatible Chat Completions or Anthropic
/// Messages), with its key read from the environment now.
///
/// Errors: `COMPUTER_NO_MODEL_BINDING` when the binding names a key variable that is
/// not set.
pub fn model_from_binding(b: &ModelBinding) -> Result<Box<dyn Model>> {
    let key = api_key(b)?;
    Ok(match b.provider {
        Provider::OpenAi => Box::new(OpenAiChat::new(b, key)),
        Provider::Anthropic => Box::new(AnthropicMessages::new(b, key)),
    })
}

/// A model that replays scripted answers in order, for tests and demos. Each call
/// takes the next reply; when none is left the call fails with `COMPUTER_INTERNAL`.
/// Every request is kept for inspection.
pub struct ScriptedModel {
    replies: Mutex<VecDeque<ModelReply>>,
    requests: Mutex<Vec<DecideRequest>>,
}

impl ScriptedModel {
    /// Replays `answers` as raw text with no reported usage (the loop then counts
    /// tokens itself).
    pub fn new<S: Into<String>>(answers: impl IntoIterator<Item = S>) -> ScriptedModel {
        Self::with_replies(answers.into_iter().map(|a| ModelReply {
            raw: a.into(),
            usage: Usage::default(),
        }))
    }

    /// Replays full replies (raw text and usage).
    pub fn with_replies(replies: impl IntoIterator<Item = ModelReply>) -> ScriptedModel {
        ScriptedModel {
            replies: Mutex::new(replies.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<DecideRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Answers not yet used.
    pub fn remaining(&self) -> usize {
        self.replies.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[async_trait]
impl Model for ScriptedModel {
    async fn decide(&self, req: &DecideRequest) -> Result<ModelReply> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(req.clone());
        self.replies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
            .ok_or_else(|| {
                ComputerError::new(ErrorCode::Internal, "the scripted model has no answer left")
            })
    }

    fn name(&self) -> String {
        "scripted".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskpilot_host::config::ModelSettings;

    #[test]
    fn a_missing_or_incomplete_binding_is_refused_with_the_fix() {
        let cfg = Config::default();
        let e = require_binding(&cfg).unwrap_err();
        assert_eq!(e.code, ErrorCode::NoModelBinding);
        assert!(
            e.message
                .contains("deskpilot config set model.provider openai"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("deskpilot config set model.model MODEL"),
            "{}",
            e.message
        );

        let mut cfg = Config {
            model_settings: ModelSettings {
                provider: Some(Provider::OpenAi),
                ..ModelSettings::default()
            },
            ..Config::default()
        };
        let e = require_binding(&cfg).unwrap_err();
        assert!(e.message.contains("lacks `model`"), "{}", e.message);

        cfg.model_settings.model = Some("m".into());
        cfg.model = cfg.model_settings.resolve();
        assert_eq!(require_binding(&cfg).unwrap().model, "m");
    }

    #[test]
    fn an_unset_key_variable_is_named() {
        let b = ModelBinding {
            provider: Provider::Anthropic,
            model: "claude".into(),
            endpoint: "https://api.anthropic.com".into(),
            api_key_env: Some("DESKPILOT_TEST_SURELY_UNSET_KEY_VAR".into()),
            timeout_ms: 1000,
            max_retries: 0,
        };
        let e = model_from_binding(&b).err().expect("refused");
        assert_eq!(e.code, ErrorCode::NoModelBinding);
        assert!(
            e.message.contains("DESKPILOT_TEST_SURELY_UNSET_KEY_VAR"),
            "{}",
            e.message
        );
        let mut local = b.clone();
        local.api_key_env = None;
        local.provider = Provider::OpenAi;
        assert_eq!(model_from_binding(&local).unwrap().name(), "openai:claude");
    }
}

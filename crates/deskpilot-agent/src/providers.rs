//! The two provider APIs a binding can name, each asking for the decision through the
//! provider's own structured-output mechanism.
//!
//! - [`OpenAiChat`]: OpenAI-compatible Chat Completions (`POST
//!   {endpoint}/chat/completions`) with `response_format: {type: "json_schema",
//!   json_schema: {name, strict: true, schema}}` — OpenAI, vLLM, Ollama, llama-server,
//!   LM Studio.
//! - [`AnthropicMessages`]: Anthropic Messages (`POST {endpoint}/v1/messages`) with one
//!   tool `decide` whose `input_schema` is the decision schema, forced by
//!   `tool_choice: {type: "tool", name: "decide"}`; the decision is the tool input.
//!
//! Usage comes from the provider's `usage` object when it has one. The API key is
//! sent in a header and never logged or put in a message.

use async_trait::async_trait;
use deskpilot_host::config::ModelBinding;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde_json::{Value, json};

use crate::call::{DecideRequest, Model, ModelReply, Usage};
use crate::http::HttpClient;
use deskpilot_protocol::Result;

/// The name of the schema (OpenAI) and of the tool (Anthropic).
pub const DECISION_NAME: &str = "decide";
/// `anthropic-version` header sent with every Messages request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

fn bad_body(provider: &str, what: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::Internal,
        format!("the {provider} endpoint answered without {what}"),
    )
}

fn u64_at(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// `{endpoint}/{suffix}` unless the endpoint already ends with it.
fn join(endpoint: &str, suffix: &str) -> String {
    let e = endpoint.trim_end_matches('/');
    if e.ends_with(suffix) {
        e.to_string()
    } else {
        format!("{e}/{suffix}")
    }
}

/// An OpenAI-compatible Chat Completions model.
pub struct OpenAiChat {
    http: HttpClient,
    model: String,
    url: String,
    key: Option<String>,
    /// OpenAI's own API wants `max_completion_tokens`; compatible servers know
    /// `max_tokens`.
    openai_hosted: bool,
}

impl OpenAiChat {
    /// A client for `binding`, sending `api_key` as a bearer token when given.
    pub fn new(binding: &ModelBinding, api_key: Option<String>) -> OpenAiChat {
        OpenAiChat {
            http: HttpClient::new(&binding.endpoint, binding.timeout_ms, binding.max_retries),
            model: binding.model.clone(),
            url: join(&binding.endpoint, "chat/completions"),
            key: api_key,
            openai_hosted: binding.endpoint.contains("://api.openai.com"),
        }
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request body for `req`.
    pub fn request_body(&self, req: &DecideRequest) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": req.system},
                {"role": "user", "content": openai_user(req)},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": DECISION_NAME,
                    "strict": true,
                    "schema": req.schema,
                },
            },
        });
        let limit_key = if self.openai_hosted {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[limit_key] = json!(req.max_output_tokens);
        body
    }

    /// The decision text and usage of a Chat Completions answer: `choices[0].message`
    /// `content` (a `refusal` becomes the raw text, which then fails the schema),
    /// `usage.prompt_tokens` / `usage.completion_tokens`.
    ///
    /// Errors: `COMPUTER_INTERNAL` when the body has no message.
    pub fn parse_response(v: &Value) -> Result<ModelReply> {
        let msg = v
            .pointer("/choices/0/message")
            .ok_or_else(|| bad_body("chat completions", "choices[0].message"))?;
        let raw = match (msg.get("content"), msg.get("refusal")) {
            (Some(Value::String(s)), _) if !s.is_empty() => s.clone(),
            (_, Some(Value::String(r))) => format!("(refusal) {r}"),
            (Some(Value::String(s)), _) => s.clone(),
            _ => String::new(),
        };
        let usage = v.get("usage");
        let usage = match (
            usage.and_then(|u| u64_at(u, "prompt_tokens")),
            usage.and_then(|u| u64_at(u, "completion_tokens")),
        ) {
            (Some(i), Some(o)) => Usage {
                input_tokens: i,
                output_tokens: o,
                reported: true,
            },
            _ => Usage::default(),
        };
        Ok(ModelReply { raw, usage })
    }
}

#[async_trait]
impl Model for OpenAiChat {
    async fn decide(&self, req: &DecideRequest) -> Result<ModelReply> {
        let mut headers = Vec::new();
        if let Some(k) = &self.key {
            headers.push(("authorization", format!("Bearer {k}")));
        }
        let v = self
            .http
            .post_json(&self.url, &headers, &self.request_body(req))
            .await?;
        Self::parse_response(&v)
    }

    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }
}

/// An Anthropic Messages model.
pub struct AnthropicMessages {
    http: HttpClient,
    model: String,
    url: String,
    key: Option<String>,
}

impl AnthropicMessages {
    /// A client for `binding`, sending `api_key` as `x-api-key` when given.
    pub fn new(binding: &ModelBinding, api_key: Option<String>) -> AnthropicMessages {
        let base = binding.endpoint.trim_end_matches('/');
        let url = if base.ends_with("/v1/messages") {
            base.to_string()
        } else if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        AnthropicMessages {
            http: HttpClient::new(&binding.endpoint, binding.timeout_ms, binding.max_retries),
            model: binding.model.clone(),
            url,
            key: api_key,
        }
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request body for `req`: one forced tool `decide`.
    pub fn request_body(&self, req: &DecideRequest) -> Value {
        json!({
            "model": self.model,
            "max_tokens": req.max_output_tokens,
            "system": req.system,
            "messages": [{"role": "user", "content": anthropic_user(req)}],
            "tools": [{
                "name": DECISION_NAME,
                "description": "Give the one next step: an action on an element, a switch to a listed window, done, or a question for the user.",
                "input_schema": req.schema,
            }],
            "tool_choice": {"type": "tool", "name": DECISION_NAME},
        })
    }

    /// The decision and usage of a Messages answer: the input of the `decide`
    /// `tool_use` block serialized as JSON (without one, the text blocks, which then
    /// fail the schema), `usage.input_tokens` / `usage.output_tokens`.
    ///
    /// Errors: `COMPUTER_INTERNAL` when the body has no `content` list.
    pub fn parse_response(v: &Value) -> Result<ModelReply> {
        let content = v
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_body("messages", "a content list"))?;
        let tool = content.iter().find(|b| {
            b.get("type").and_then(Value::as_str) == Some("tool_use")
                && b.get("name").and_then(Value::as_str) == Some(DECISION_NAME)
        });
        let raw = match tool.and_then(|t| t.get("input")) {
            Some(input) => input.to_string(),
            None => content
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let usage = v.get("usage");
        let usage = match (
            usage.and_then(|u| u64_at(u, "input_tokens")),
            usage.and_then(|u| u64_at(u, "output_tokens")),
        ) {
            (Some(i), Some(o)) => Usage {
                input_tokens: i
                    + usage
                        .and_then(|u| u64_at(u, "cache_read_input_tokens"))
                        .unwrap_or(0)
                    + usage
                        .and_then(|u| u64_at(u, "cache_creation_input_tokens"))
                        .unwrap_or(0),
                output_tokens: o,
                reported: true,
            },
            _ => Usage::default(),
        };
        Ok(ModelReply { raw, usage })
    }
}

#[async_trait]
impl Model for AnthropicMessages {
    async fn decide(&self, req: &DecideRequest) -> Result<ModelReply> {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        if let Some(k) = &self.key {
            headers.push(("x-api-key", k.clone()));
        }
        let v = self
            .http
            .post_json(&self.url, &headers, &self.request_body(req))
            .await?;
        Self::parse_response(&v)
    }

    fn name(&self) -> String {
        format!("anthropic:{}", self.model)
    }
}

/// The user message's content for Chat Completions: the text alone, or text and
/// `image_url` parts (data URLs) when the request carries images.
fn openai_user(req: &DecideRequest) -> Value {
    if req.images.is_empty() {
        return json!(req.user);
    }
    let mut parts = vec![json!({"type": "text", "text": req.user})];
    for img in &req.images {
        parts.push(json!({"type": "image_url", "image_url": {"url": img.data_url()}}));
    }
    Value::Array(parts)
}

/// The user message's content for Messages: the text alone, or base64 image blocks
/// followed by the text.
fn anthropic_user(req: &DecideRequest) -> Value {
    if req.images.is_empty() {
        return json!(req.user);
    }
    let mut parts: Vec<Value> = req
        .images
        .iter()
        .map(|img| {
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": img.base64()}})
        })
        .collect();
    parts.push(json!({"type": "text", "text": req.user}));
    Value::Array(parts)
}

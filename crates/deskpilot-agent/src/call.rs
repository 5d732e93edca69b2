//! One model call, shared by the loop, the bound model and the providers: the
//! [`Model`] trait, its [`DecideRequest`], its [`ModelReply`] and the [`Usage`] it
//! reports. It names no provider, so [`crate::providers`] and [`crate::model`] both
//! build on it without importing each other.

use async_trait::async_trait;
use deskpilot_protocol::Result;
use serde::Serialize;
use serde_json::Value;

/// Tokens one model call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// `true` when the provider reported these numbers; `false` when they are
    /// deskpilot's own `o200k_base` estimate (or not yet filled in).
    pub reported: bool,
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// The answer as the model produced it: the message content (OpenAI) or the
    /// `decide` tool input serialized as JSON (Anthropic). Parsed by
    /// [`crate::decision::parse`]; never shown to the user as a result.
    pub raw: String,
    pub usage: Usage,
}

/// An image shown with a request: a marked screenshot of the bound window.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// PNG bytes.
    pub png: Vec<u8>,
    /// Size, pixels.
    pub width: u32,
    pub height: u32,
}

impl Image {
    /// The image as a `data:image/png;base64,…` URL.
    pub fn data_url(&self) -> String {
        format!("data:image/png;base64,{}", self.base64())
    }

    /// The PNG in standard base64.
    pub fn base64(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.png)
    }
}

/// One request for a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct DecideRequest {
    /// The method, the schema and the rules.
    pub system: String,
    /// This step's observation (instruction, grant, windows, tree, last outcome).
    pub user: String,
    /// The answer's JSON schema ([`crate::decision::schema`]).
    pub schema: Value,
    /// Cap on the answer's length, tokens.
    pub max_output_tokens: u32,
    /// Images shown after the user text (a marked screenshot in the `pixels` and
    /// `hybrid` observations; none in `tree`).
    pub images: Vec<Image>,
}

/// A model that decides one step.
#[async_trait]
pub trait Model: Send + Sync {
    /// Asks for one decision.
    ///
    /// Errors: `COMPUTER_TIMEOUT` (no answer within the binding's timeout),
    /// `COMPUTER_NO_MODEL_BINDING` (the provider refused the key or does not know
    /// the model), `COMPUTER_INTERNAL` (unreachable endpoint after the retries, a
    /// body that is not the provider's format).
    async fn decide(&self, req: &DecideRequest) -> Result<ModelReply>;

    /// `provider:model`, for the run record.
    fn name(&self) -> String;
}

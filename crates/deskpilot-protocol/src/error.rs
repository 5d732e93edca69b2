//! The one error of every layer — driver, host, config, model providers, CLI and MCP
//! server: a stable `COMPUTER_*` code plus a sentence for humans
//! (docs/ARCHITECTURE.md §11). It maps once to each outside form: a CLI exit code and
//! `--json` document, a JSON-RPC error object ([`crate::wire_error`]), an MCP error
//! result.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

/// A refusal or failure as it travels: `{code, message, detail}`.
///
/// Displays as `COMPUTER_<NAME>: message`. Over JSON-RPC it becomes an error object
/// (see [`crate::wire_error`]).
///
/// `message` says what happened and what to do about it, in one or two sentences.
/// `detail` carries structured facts (the handle, the timeout in ms, …).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[error("{code}: {message}")]
pub struct ComputerError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

/// `Result` with [`ComputerError`] as its error.
pub type Result<T, E = ComputerError> = std::result::Result<T, E>;

impl ComputerError {
    /// An error with `code` and `message` (what happened and what to do), no detail.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ComputerError {
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// `COMPUTER_INVALID_ARGUMENT`: the caller's input is wrong; `message` says how.
    pub fn invalid(message: impl Into<String>) -> Self {
        ComputerError::new(ErrorCode::InvalidArgument, message)
    }

    /// `COMPUTER_INTERNAL`: deskpilot itself failed (a file it keeps cannot be read
    /// or written, an encoding failed); `message` names what and where.
    pub fn internal(message: impl Into<String>) -> Self {
        ComputerError::new(ErrorCode::Internal, message)
    }

    /// Adds structured detail.
    #[must_use]
    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// `COMPUTER_NOT_RESPONDING` for a call cut off by a dropped device link, or a
    /// link that could not be opened (docs/ARCHITECTURE.md §15): a cut call's effect
    /// is unknown, and the next call opens a new link. Detail `{"link_lost": true}` tells it from an app that is busy for
    /// a moment, which a wait keeps waiting on.
    pub fn link_lost(message: impl Into<String>) -> Self {
        ComputerError::new(ErrorCode::NotResponding, message)
            .with_detail(serde_json::json!({ "link_lost": true }))
    }

    /// Whether this is [`ComputerError::link_lost`]: the device link dropped.
    pub fn is_link_lost(&self) -> bool {
        self.code == ErrorCode::NotResponding
            && self
                .detail
                .as_ref()
                .and_then(|d| d.get("link_lost"))
                .and_then(serde_json::Value::as_bool)
                == Some(true)
    }

    /// The answer of a driver built for another OS.
    pub fn platform_unsupported(what: &str) -> Self {
        ComputerError::new(
            ErrorCode::PlatformUnsupported,
            format!("{what} is not supported on this platform by this driver"),
        )
    }
}

impl From<&deskpilot_core::CoreError> for ComputerError {
    /// Keeps the engine's message; the code follows the engine's documentation:
    /// unknown ref → `COMPUTER_ELEMENT_NOT_FOUND`, stale ref → `COMPUTER_STALE_REF`,
    /// malformed ref → `COMPUTER_INVALID_ARGUMENT`. Structured facts go to `detail`.
    fn from(e: &deskpilot_core::CoreError) -> Self {
        use deskpilot_core::CoreError;
        let (code, detail) = match e {
            CoreError::UnknownRef { ref_ } => (
                ErrorCode::ElementNotFound,
                serde_json::json!({ "ref": ref_ }),
            ),
            CoreError::StaleRef { ref_, candidates } => (
                ErrorCode::StaleRef,
                serde_json::json!({ "ref": ref_, "candidates": candidates }),
            ),
            CoreError::MalformedRef { text } => (
                ErrorCode::InvalidArgument,
                serde_json::json!({ "text": text }),
            ),
            // A variant added to the engine later: still an error, never a success.
            _ => (ErrorCode::Internal, serde_json::Value::Null),
        };
        let err = ComputerError::new(code, e.to_string());
        if detail.is_null() {
            err
        } else {
            err.with_detail(detail)
        }
    }
}

impl From<deskpilot_core::CoreError> for ComputerError {
    fn from(e: deskpilot_core::CoreError) -> Self {
        ComputerError::from(&e)
    }
}

#[cfg(test)]
mod tests {
    use deskpilot_core::CoreError;

    use super::*;

    #[test]
    fn core_errors_map_to_their_codes_keeping_the_message() {
        let cases = [
            (
                CoreError::UnknownRef { ref_: "e9".into() },
                ErrorCode::ElementNotFound,
            ),
            (
                CoreError::StaleRef {
                    ref_: "e3".into(),
                    candidates: 2,
                },
                ErrorCode::StaleRef,
            ),
            (
                CoreError::MalformedRef { text: "x".into() },
                ErrorCode::InvalidArgument,
            ),
        ];
        for (core, code) in cases {
            let d = ComputerError::from(&core);
            assert_eq!(d.code, code);
            assert_eq!(d.message, core.to_string());
            assert!(d.detail.is_some());
        }
        let d = ComputerError::from(CoreError::StaleRef {
            ref_: "e3".into(),
            candidates: 2,
        });
        assert_eq!(
            d.detail,
            Some(serde_json::json!({"ref": "e3", "candidates": 2}))
        );
    }

    #[test]
    fn displays_with_the_wire_name() {
        let e = ComputerError::new(ErrorCode::Timeout, "no answer in 30000 ms");
        assert_eq!(e.to_string(), "COMPUTER_TIMEOUT: no answer in 30000 ms");
    }
}

//! The error every driver method returns: a stable code plus a sentence for humans.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

/// A driver failure as it travels: `{code, message, detail}`.
///
/// Displays as `COMPUTER_<NAME>: message`. Over JSON-RPC it becomes an error object
/// (see [`crate::wire_error`]).
///
/// `message` says what happened and what to do about it, in one or two sentences.
/// `detail` carries structured facts (the handle, the timeout in ms, …).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[error("{code}: {message}")]
pub struct DriverError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

impl DriverError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        DriverError {
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// Adds structured detail.
    #[must_use]
    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// The answer of a driver built for another OS.
    pub fn platform_unsupported(what: &str) -> Self {
        DriverError::new(
            ErrorCode::PlatformUnsupported,
            format!("{what} is not supported on this platform by this driver"),
        )
    }
}

impl From<&deskpilot_core::CoreError> for DriverError {
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
        let err = DriverError::new(code, e.to_string());
        if detail.is_null() {
            err
        } else {
            err.with_detail(detail)
        }
    }
}

impl From<deskpilot_core::CoreError> for DriverError {
    fn from(e: deskpilot_core::CoreError) -> Self {
        DriverError::from(&e)
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
            let d = DriverError::from(&core);
            assert_eq!(d.code, code);
            assert_eq!(d.message, core.to_string());
            assert!(d.detail.is_some());
        }
        let d = DriverError::from(CoreError::StaleRef {
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
        let e = DriverError::new(ErrorCode::Timeout, "no answer in 30000 ms");
        assert_eq!(e.to_string(), "COMPUTER_TIMEOUT: no answer in 30000 ms");
    }
}

//! The error every driver method returns: a stable code plus a sentence for humans.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

/// A driver failure as it travels: `{code, message, detail}`.
///
/// `message` says what happened and what to do about it, in one or two sentences.
/// `detail` carries structured facts (the handle, the timeout in ms, …).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[error("{code:?}: {message}")]
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

//! The `COMPUTER_*` error codes (docs/ARCHITECTURE.md §11): one per refusal or failure kind,
//! stable on the wire, each attributable to one cause.
//!
//! Each code has two stable spellings, both given by the single `match` in
//! `ErrorCode::wire`: its `COMPUTER_*` name and its JSON-RPC error number. Numbers
//! come from the range JSON-RPC 2.0 reserves for implementation-defined server errors
//! (-32000 to -32099): code *n* (1-based, in the order of [`ErrorCode::ALL`]) is
//! `-32000 - n`, so `COMPUTER_FEATURE_DISABLED` is -32001 and `COMPUTER_INTERNAL` is
//! -32027. A number, once given, is never reused or moved; new codes take the next
//! free number. This module must never map two codes to one name or number.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A stable error code. Serialized and displayed as `COMPUTER_<NAME>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorCode {
    #[serde(rename = "COMPUTER_FEATURE_DISABLED")]
    FeatureDisabled,
    #[serde(rename = "COMPUTER_NO_MODEL_BINDING")]
    NoModelBinding,
    #[serde(rename = "COMPUTER_NO_GRANT")]
    NoGrant,
    #[serde(rename = "COMPUTER_STOPPED_BY_USER")]
    StoppedByUser,
    #[serde(rename = "COMPUTER_SCOPE_VIOLATION")]
    ScopeViolation,
    #[serde(rename = "COMPUTER_STALE_BASIS")]
    StaleBasis,
    #[serde(rename = "COMPUTER_STALE_REVISION")]
    StaleRevision,
    #[serde(rename = "COMPUTER_STALE_REF")]
    StaleRef,
    #[serde(rename = "COMPUTER_BUDGET_EXHAUSTED")]
    BudgetExhausted,
    #[serde(rename = "COMPUTER_GRANT_EXPIRED")]
    GrantExpired,
    #[serde(rename = "COMPUTER_SELF_TARGET")]
    SelfTarget,
    #[serde(rename = "COMPUTER_SECURE_INPUT")]
    SecureInput,
    #[serde(rename = "COMPUTER_DENYLISTED")]
    Denylisted,
    #[serde(rename = "COMPUTER_OS_PERMISSION_MISSING")]
    OsPermissionMissing,
    #[serde(rename = "COMPUTER_ACCESSIBILITY_DISABLED")]
    AccessibilityDisabled,
    #[serde(rename = "COMPUTER_TARGET_ELEVATED")]
    TargetElevated,
    #[serde(rename = "COMPUTER_PLATFORM_UNSUPPORTED")]
    PlatformUnsupported,
    #[serde(rename = "COMPUTER_INPUT_UNAVAILABLE")]
    InputUnavailable,
    #[serde(rename = "COMPUTER_ELEMENT_NOT_FOUND")]
    ElementNotFound,
    #[serde(rename = "COMPUTER_ELEMENT_NOT_ACTIONABLE")]
    ElementNotActionable,
    #[serde(rename = "COMPUTER_CONFIRMATION_REQUIRED")]
    ConfirmationRequired,
    #[serde(rename = "COMPUTER_MODEL_SCHEMA_VIOLATION")]
    ModelSchemaViolation,
    #[serde(rename = "COMPUTER_NOT_RESPONDING")]
    NotResponding,
    #[serde(rename = "COMPUTER_TIMEOUT")]
    Timeout,
    #[serde(rename = "COMPUTER_OUTCOME_UNKNOWN")]
    OutcomeUnknown,
    /// Arguments that do not fit the method or tool (bad op, missing value, bad ref
    /// syntax). Not a refusal: the caller must fix the call.
    #[serde(rename = "COMPUTER_INVALID_ARGUMENT")]
    InvalidArgument,
    /// A failure inside deskpilot or the platform service that none of the other codes
    /// describes (a D-Bus connection lost, a sandbox that would not start).
    #[serde(rename = "COMPUTER_INTERNAL")]
    Internal,
    /// An evaluation did not pass its gate: an oracle attempt failed its checks, or
    /// attempts could not be set up (`deskpilot eval`; the summary is in `detail`).
    #[serde(rename = "COMPUTER_EVAL_FAILED")]
    EvalFailed,
}

/// The first JSON-RPC number of the `COMPUTER_*` range: code *n* is `RPC_CODE_BASE - n`.
pub const RPC_CODE_BASE: i64 = -32_000;

/// The lowest JSON-RPC number JSON-RPC 2.0 leaves to implementations (-32099).
pub const RPC_CODE_MIN: i64 = -32_099;

impl ErrorCode {
    /// Every code, in wire-number order (`ALL[i]` has number `-32001 - i`).
    pub const ALL: [ErrorCode; 28] = [
        ErrorCode::FeatureDisabled,
        ErrorCode::NoModelBinding,
        ErrorCode::NoGrant,
        ErrorCode::StoppedByUser,
        ErrorCode::ScopeViolation,
        ErrorCode::StaleBasis,
        ErrorCode::StaleRevision,
        ErrorCode::StaleRef,
        ErrorCode::BudgetExhausted,
        ErrorCode::GrantExpired,
        ErrorCode::SelfTarget,
        ErrorCode::SecureInput,
        ErrorCode::Denylisted,
        ErrorCode::OsPermissionMissing,
        ErrorCode::AccessibilityDisabled,
        ErrorCode::TargetElevated,
        ErrorCode::PlatformUnsupported,
        ErrorCode::InputUnavailable,
        ErrorCode::ElementNotFound,
        ErrorCode::ElementNotActionable,
        ErrorCode::ConfirmationRequired,
        ErrorCode::ModelSchemaViolation,
        ErrorCode::NotResponding,
        ErrorCode::Timeout,
        ErrorCode::OutcomeUnknown,
        ErrorCode::InvalidArgument,
        ErrorCode::Internal,
        ErrorCode::EvalFailed,
    ];

    /// The one table of wire spellings: (`COMPUTER_*` name, JSON-RPC error number).
    const fn wire(self) -> (&'static str, i64) {
        match self {
            ErrorCode::FeatureDisabled => ("COMPUTER_FEATURE_DISABLED", -32_001),
            ErrorCode::NoModelBinding => ("COMPUTER_NO_MODEL_BINDING", -32_002),
            ErrorCode::NoGrant => ("COMPUTER_NO_GRANT", -32_003),
            ErrorCode::StoppedByUser => ("COMPUTER_STOPPED_BY_USER", -32_004),
            ErrorCode::ScopeViolation => ("COMPUTER_SCOPE_VIOLATION", -32_005),
            ErrorCode::StaleBasis => ("COMPUTER_STALE_BASIS", -32_006),
            ErrorCode::StaleRevision => ("COMPUTER_STALE_REVISION", -32_007),
            ErrorCode::StaleRef => ("COMPUTER_STALE_REF", -32_008),
            ErrorCode::BudgetExhausted => ("COMPUTER_BUDGET_EXHAUSTED", -32_009),
            ErrorCode::GrantExpired => ("COMPUTER_GRANT_EXPIRED", -32_010),
            ErrorCode::SelfTarget => ("COMPUTER_SELF_TARGET", -32_011),
            ErrorCode::SecureInput => ("COMPUTER_SECURE_INPUT", -32_012),
            ErrorCode::Denylisted => ("COMPUTER_DENYLISTED", -32_013),
            ErrorCode::OsPermissionMissing => ("COMPUTER_OS_PERMISSION_MISSING", -32_014),
            ErrorCode::AccessibilityDisabled => ("COMPUTER_ACCESSIBILITY_DISABLED", -32_015),
            ErrorCode::TargetElevated => ("COMPUTER_TARGET_ELEVATED", -32_016),
            ErrorCode::PlatformUnsupported => ("COMPUTER_PLATFORM_UNSUPPORTED", -32_017),
            ErrorCode::InputUnavailable => ("COMPUTER_INPUT_UNAVAILABLE", -32_018),
            ErrorCode::ElementNotFound => ("COMPUTER_ELEMENT_NOT_FOUND", -32_019),
            ErrorCode::ElementNotActionable => ("COMPUTER_ELEMENT_NOT_ACTIONABLE", -32_020),
            ErrorCode::ConfirmationRequired => ("COMPUTER_CONFIRMATION_REQUIRED", -32_021),
            ErrorCode::ModelSchemaViolation => ("COMPUTER_MODEL_SCHEMA_VIOLATION", -32_022),
            ErrorCode::NotResponding => ("COMPUTER_NOT_RESPONDING", -32_023),
            ErrorCode::Timeout => ("COMPUTER_TIMEOUT", -32_024),
            ErrorCode::OutcomeUnknown => ("COMPUTER_OUTCOME_UNKNOWN", -32_025),
            ErrorCode::InvalidArgument => ("COMPUTER_INVALID_ARGUMENT", -32_026),
            ErrorCode::Internal => ("COMPUTER_INTERNAL", -32_027),
            ErrorCode::EvalFailed => ("COMPUTER_EVAL_FAILED", -32_028),
        }
    }

    /// The wire name, e.g. `"COMPUTER_STALE_REF"` (equal to the serde form).
    pub const fn as_str(self) -> &'static str {
        self.wire().0
    }

    /// The JSON-RPC error number, in -32001..=-32099 (see the module doc).
    pub const fn rpc_code(self) -> i64 {
        self.wire().1
    }

    /// The code with this JSON-RPC error number, if it is one of ours.
    pub fn from_rpc_code(n: i64) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.rpc_code() == n)
    }

    /// The code with this `COMPUTER_*` name (exact, case-sensitive).
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for ErrorCode {
    /// Writes the `COMPUTER_*` name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text given to [`ErrorCode`]'s `FromStr` is not a `COMPUTER_*` name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownErrorCode(pub String);

impl fmt::Display for UnknownErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a COMPUTER_* error code", self.0)
    }
}

impl std::error::Error for UnknownErrorCode {}

impl FromStr for ErrorCode {
    type Err = UnknownErrorCode;

    /// Parses a `COMPUTER_*` name, exactly as [`ErrorCode::as_str`] writes it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorCode::from_name(s).ok_or_else(|| UnknownErrorCode(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_code_round_trips_by_name_number_and_serde() {
        for code in ErrorCode::ALL {
            assert!(code.as_str().starts_with("COMPUTER_"), "{code:?}");
            assert_eq!(code.as_str().parse::<ErrorCode>(), Ok(code));
            assert_eq!(code.to_string(), code.as_str());
            assert_eq!(ErrorCode::from_rpc_code(code.rpc_code()), Some(code));
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn names_and_numbers_are_unique_and_in_range() {
        let names: HashSet<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        let numbers: HashSet<_> = ErrorCode::ALL.iter().map(|c| c.rpc_code()).collect();
        assert_eq!(names.len(), ErrorCode::ALL.len());
        assert_eq!(numbers.len(), ErrorCode::ALL.len());
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(code.rpc_code(), RPC_CODE_BASE - 1 - i as i64, "{code:?}");
            assert!((RPC_CODE_MIN..RPC_CODE_BASE).contains(&code.rpc_code()));
        }
    }

    #[test]
    fn numbers_are_pinned() {
        // The wire numbers are a published contract: spot-check a few by value.
        assert_eq!(ErrorCode::FeatureDisabled.rpc_code(), -32_001);
        assert_eq!(ErrorCode::StaleRef.rpc_code(), -32_008);
        assert_eq!(ErrorCode::NotResponding.rpc_code(), -32_023);
        assert_eq!(ErrorCode::Timeout.rpc_code(), -32_024);
        assert_eq!(ErrorCode::Internal.rpc_code(), -32_027);
    }

    #[test]
    fn unknown_names_and_numbers_are_rejected() {
        assert!("COMPUTER_NOPE".parse::<ErrorCode>().is_err());
        assert!("computer_stale_ref".parse::<ErrorCode>().is_err());
        assert!("".parse::<ErrorCode>().is_err());
        assert_eq!(ErrorCode::from_rpc_code(-32_000), None);
        assert_eq!(ErrorCode::from_rpc_code(-32_601), None);
        assert_eq!(ErrorCode::from_rpc_code(0), None);
    }
}

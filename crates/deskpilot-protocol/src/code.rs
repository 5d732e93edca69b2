//! The `COMPUTER_*` error codes (ARCHITECTURE.md §7): one per refusal or failure kind,
//! stable on the wire, each attributable to one cause.

use serde::{Deserialize, Serialize};

/// A stable error code. Serialized and displayed as `COMPUTER_<NAME>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
}

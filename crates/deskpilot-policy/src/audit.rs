//! Audit records (docs/ARCHITECTURE.md §7): one JSON line per grant, rebind, action,
//! capture and refusal. This module owns their shape and what may be in them; the host writes
//! them (JSONL, mode 0600).
//!
//! Never in a record: typed text (only its length in chars), password values, pixels,
//! window contents. A record names the element by role and ref fingerprint.

use serde::{Deserialize, Serialize};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    #[serde(rename = "grant.issued")]
    GrantIssued,
    #[serde(rename = "grant.rebound")]
    GrantRebound,
    #[serde(rename = "grant.revoked")]
    GrantRevoked,
    #[serde(rename = "grant.stopped")]
    GrantStopped,
    Action,
    Keys,
    Refusal,
    /// Pixels read from a window (`screenshot`, OCR): its size and mode, never the
    /// pixels.
    Capture,
}

/// One audit line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC time.
    pub time: String,
    pub session: String,
    /// The device the host worked on when it is not this machine's desktop
    /// (`ssh:alice@lab`, `adb:SERIAL`); absent for `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub event: Option<AuditEvent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `agent` or `user`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// App identity: name and pid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Ref fingerprint (role, position, ancestor hash), never the element's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Length in chars of typed text or a set value; the text itself is never kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_len: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// `executed`, `rejected`, `timed_out`, `outcome_unknown`, or `refused`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `COMPUTER_*` code of a refusal or failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// How an executed action was confirmed: `prompt` (the user answered a terminal
    /// prompt or the MCP client's elicitation) or `approve:<id>` (`deskpilot approve
    /// ID`); absent when the mode needed no confirmation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// A capture's size, `WxH` image pixels, and mode (`image`, `marks`, `ocr`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
}

impl AuditRecord {
    /// The record as one JSON line (no trailing newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_one_line_and_carries_lengths_not_text() {
        let r = AuditRecord {
            time: "2026-11-29T20:00:00Z".into(),
            session: "s1".into(),
            event: Some(AuditEvent::Action),
            op: Some("set_value".into()),
            text_len: Some("hunter2".chars().count()),
            ..AuditRecord::default()
        };
        let line = r.to_line();
        assert!(!line.contains('\n'));
        assert!(line.contains("\"text_len\":7"));
        assert!(line.contains("\"event\":\"action\""));
        let back: AuditRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, r);
        let g = AuditRecord {
            event: Some(AuditEvent::GrantRebound),
            ..AuditRecord::default()
        };
        assert!(g.to_line().contains("\"grant.rebound\""));
    }
}

//! [`ComputerError`] ↔ JSON-RPC [`ErrorObject`], both ways.
//!
//! On the wire a driver error is
//! `{"code": <ErrorCode::rpc_code>, "message": "...", "data": {"code": "COMPUTER_…",
//! "detail": …}}` (`detail` omitted when there is none). Decoding trusts
//! `data.code` first, then the number if it is in deskpilot's range; any other error
//! object (a standard JSON-RPC error, another implementation's) becomes
//! [`ErrorCode::Internal`] with its message kept and its number and data in `detail`
//! as `{"rpc_code": n, "data": …}`. This module never invents a code the peer did not
//! send.

use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;
use crate::{ComputerError, ErrorCode};

impl From<&ComputerError> for ErrorObject {
    fn from(e: &ComputerError) -> Self {
        ErrorObject::new(e.code.rpc_code(), e.message.clone())
            .with_data(data_for(e.code, e.detail.clone()))
    }
}

impl From<ComputerError> for ErrorObject {
    fn from(e: ComputerError) -> Self {
        ErrorObject::new(e.code.rpc_code(), e.message).with_data(data_for(e.code, e.detail))
    }
}

impl From<&ErrorObject> for ComputerError {
    fn from(o: &ErrorObject) -> Self {
        let data = o.data.as_ref().and_then(Value::as_object);
        let named = data
            .and_then(|d| d.get("code"))
            .and_then(Value::as_str)
            .and_then(ErrorCode::from_name);
        match named.or_else(|| ErrorCode::from_rpc_code(o.code)) {
            Some(code) => {
                let detail = data
                    .and_then(|d| d.get("detail"))
                    .filter(|v| !v.is_null())
                    .cloned();
                ComputerError {
                    code,
                    message: o.message.clone(),
                    detail,
                }
            }
            None => {
                let mut detail = Map::new();
                detail.insert("rpc_code".into(), Value::from(o.code));
                if let Some(d) = &o.data {
                    detail.insert("data".into(), d.clone());
                }
                ComputerError::new(ErrorCode::Internal, o.message.clone())
                    .with_detail(Value::Object(detail))
            }
        }
    }
}

impl From<ErrorObject> for ComputerError {
    fn from(o: ErrorObject) -> Self {
        ComputerError::from(&o)
    }
}

/// `{"code": "COMPUTER_…", "detail": …}`.
fn data_for(code: ErrorCode, detail: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("code".into(), Value::String(code.as_str().to_owned()));
    if let Some(d) = detail {
        m.insert("detail".into(), d);
    }
    Value::Object(m)
}

/// Marks a standard JSON-RPC error with the `COMPUTER_*` code a client should see,
/// keeping its number (the server marks -32602 as `COMPUTER_INVALID_ARGUMENT` and
/// -32601 as `COMPUTER_PLATFORM_UNSUPPORTED`). Existing `data` moves to `detail`.
pub fn with_computer_code(mut o: ErrorObject, code: ErrorCode) -> ErrorObject {
    let detail = o.data.take();
    o.data = Some(data_for(code, detail));
    o
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonrpc::codes;

    #[test]
    fn every_code_round_trips_through_an_error_object() {
        for code in ErrorCode::ALL {
            for detail in [None, Some(json!({"handle": "h1", "timeout_ms": 30_000}))] {
                let e = ComputerError {
                    code,
                    message: format!("{code} happened"),
                    detail: detail.clone(),
                };
                let o = ErrorObject::from(&e);
                assert_eq!(o.code, code.rpc_code());
                assert_eq!(o.message, e.message);
                assert_eq!(o.data.as_ref().unwrap()["code"], json!(code.as_str()));
                // Through JSON text too.
                let text = serde_json::to_string(&o).unwrap();
                let back: ErrorObject = serde_json::from_str(&text).unwrap();
                assert_eq!(ComputerError::from(&back), e);
                assert_eq!(ComputerError::from(o), e);
            }
        }
    }

    #[test]
    fn wire_shape_is_pinned() {
        let e = ComputerError::new(ErrorCode::StaleRef, "ref e3 is stale")
            .with_detail(json!({"ref": "e3"}));
        assert_eq!(
            serde_json::to_value(ErrorObject::from(e)).unwrap(),
            json!({"code": -32008, "message": "ref e3 is stale",
                   "data": {"code": "COMPUTER_STALE_REF", "detail": {"ref": "e3"}}})
        );
    }

    #[test]
    fn foreign_errors_become_internal_keeping_the_message() {
        let o = ErrorObject::new(codes::METHOD_NOT_FOUND, "method not found: \"x\"");
        let d = ComputerError::from(&o);
        assert_eq!(d.code, ErrorCode::Internal);
        assert_eq!(d.message, o.message);
        assert_eq!(d.detail, Some(json!({"rpc_code": -32601})));

        let o = ErrorObject::new(-1, "boom").with_data(json!({"code": "NOT_OURS"}));
        let d = ComputerError::from(&o);
        assert_eq!(d.code, ErrorCode::Internal);
        assert_eq!(
            d.detail,
            Some(json!({"rpc_code": -1, "data": {"code": "NOT_OURS"}}))
        );
    }

    #[test]
    fn name_wins_over_number_and_number_alone_is_enough() {
        let o = ErrorObject::new(ErrorCode::Timeout.rpc_code(), "m")
            .with_data(json!({"code": "COMPUTER_NOT_RESPONDING"}));
        assert_eq!(ComputerError::from(&o).code, ErrorCode::NotResponding);
        let o = ErrorObject::new(ErrorCode::Denylisted.rpc_code(), "m");
        assert_eq!(ComputerError::from(&o).code, ErrorCode::Denylisted);
    }

    #[test]
    fn standard_errors_can_carry_a_computer_code() {
        let o = with_computer_code(
            ErrorObject::invalid_params("tree.snapshot", "bad window"),
            ErrorCode::InvalidArgument,
        );
        assert_eq!(o.code, codes::INVALID_PARAMS);
        let d = ComputerError::from(&o);
        assert_eq!(d.code, ErrorCode::InvalidArgument);
        assert!(d.message.contains("bad window"));
    }
}

//! JSON-RPC 2.0 message types and the validating parser of one line.
//!
//! This module owns the envelope only: ids, requests, notifications, responses and
//! error objects, plus [`parse_message`], which classifies one line of text and
//! produces the standard JSON-RPC errors for anything that is not a valid message.
//! It knows nothing of deskpilot's methods (see [`crate::methods`]) and must never
//! panic, whatever the input: every malformed line becomes an [`ErrorObject`].
//!
//! Deviations from the JSON-RPC 2.0 specification, all deliberate:
//! - Batches (a top-level array) are refused with -32600: the driver protocol sends
//!   one message per line and gains nothing from batching.
//! - Numeric ids must be integers that fit in `i64`; a fractional or larger id is an
//!   invalid request (the specification says ids SHOULD NOT have fractions).
//! - `"params": null` is read as absent params.
//! - A request whose `id` is `null` is refused: a null id cannot be told apart from
//!   the id of an error about an unreadable request.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The only protocol version this module speaks, sent as `"jsonrpc": "2.0"`.
pub const JSONRPC_VERSION: &str = "2.0";

/// Standard JSON-RPC 2.0 error numbers.
pub mod codes {
    /// The line is not JSON (or not UTF-8).
    pub const PARSE_ERROR: i64 = -32_700;
    /// The JSON is not a valid request, notification or response object.
    pub const INVALID_REQUEST: i64 = -32_600;
    /// The method does not exist or is not served.
    pub const METHOD_NOT_FOUND: i64 = -32_601;
    /// The params do not have the shape or types the method expects.
    pub const INVALID_PARAMS: i64 = -32_602;
    /// A failure inside the server that is none of the above.
    pub const INTERNAL_ERROR: i64 = -32_603;
}

/// The `"jsonrpc": "2.0"` member: serializes as `"2.0"`, deserializes only from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct V2;

impl Serialize for V2 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(JSONRPC_VERSION)
    }
}

impl<'de> Deserialize<'de> for V2 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == JSONRPC_VERSION {
            Ok(V2)
        } else {
            Err(de::Error::custom(format!(
                "unsupported jsonrpc version {s:?}, expected \"2.0\""
            )))
        }
    }
}

/// A request id: an integer or a string, echoed unchanged in the response.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(i64),
    String(String),
}

impl Id {
    /// Reads an id from JSON: an integer in `i64` range or a string; anything else
    /// (null, bool, fraction, object, array) is `None`.
    pub fn from_value(v: &Value) -> Option<Id> {
        match v {
            Value::Number(n) => n.as_i64().map(Id::Number),
            Value::String(s) => Some(Id::String(s.clone())),
            _ => None,
        }
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A call that expects a response: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub jsonrpc: V2,
    pub id: Id,
    pub method: String,
    /// An object or array; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    pub fn new(id: impl Into<Id>, method: impl Into<String>, params: Option<Value>) -> Self {
        Request {
            jsonrpc: V2,
            id: id.into(),
            method: method.into(),
            params,
        }
    }
}

/// A call that expects no response: a request without `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    pub jsonrpc: V2,
    pub method: String,
    /// An object or array; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Notification {
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Notification {
            jsonrpc: V2,
            method: method.into(),
            params,
        }
    }
}

/// A JSON-RPC error object: `{"code": i64, "message": "...", "data": any?}`.
///
/// `code` is a standard number ([`codes`]) or one of deskpilot's (-32001 and down,
/// see [`crate::ErrorCode::rpc_code`]); `data` carries `{code: "COMPUTER_…", detail}`
/// for deskpilot errors (see [`crate::wire_error`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700: the line is not JSON; `why` is the decoder's explanation.
    pub fn parse_error(why: impl fmt::Display) -> Self {
        ErrorObject::new(codes::PARSE_ERROR, format!("parse error: {why}"))
    }

    /// -32600: the JSON is not a valid message; `why` says which rule it breaks.
    pub fn invalid_request(why: impl fmt::Display) -> Self {
        ErrorObject::new(codes::INVALID_REQUEST, format!("invalid request: {why}"))
    }

    /// -32601: no such method.
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {method:?}"),
        )
    }

    /// -32602: the params of `method` do not decode; `why` is the decoder's reason.
    pub fn invalid_params(method: &str, why: impl fmt::Display) -> Self {
        ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("invalid params for {method}: {why}"),
        )
    }

    /// -32603: a failure inside the server.
    pub fn internal(why: impl fmt::Display) -> Self {
        ErrorObject::new(codes::INTERNAL_ERROR, format!("internal error: {why}"))
    }
}

/// A response: exactly one of `result` or `error`, and the id of its request
/// (`None`, sent as `null`, when the request's id could not be read).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Option<Id>,
    pub outcome: Result<Value, ErrorObject>,
}

impl Response {
    /// A success response.
    pub fn ok(id: Id, result: Value) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
        }
    }

    /// An error response; `id` is `None` when the request's id is unknown.
    pub fn error(id: Option<Id>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }
}

impl Serialize for Response {
    /// `{"jsonrpc":"2.0","id":…,"result":…}` or `{"jsonrpc":"2.0","id":…,"error":…}`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("jsonrpc", &V2)?;
        m.serialize_entry("id", &self.id)?;
        match &self.outcome {
            Ok(v) => m.serialize_entry("result", v)?,
            Err(e) => m.serialize_entry("error", e)?,
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Response {
    /// Applies the same rules as [`parse_message`].
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match classify(v) {
            Ok(Message::Response(r)) => Ok(r),
            Ok(_) => Err(de::Error::custom(
                "a request or notification, not a response",
            )),
            Err(rej) => Err(de::Error::custom(rej.error.message)),
        }
    }
}

/// Any one JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(s),
            Message::Notification(n) => n.serialize(s),
            Message::Response(r) => r.serialize(s),
        }
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

/// Why a line is not a valid message, and the id to answer with, when one could be
/// read (a request with a good id but, say, no `method` is answered with that id).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub id: Option<Id>,
    pub error: ErrorObject,
}

impl Rejected {
    fn new(id: Option<Id>, error: ErrorObject) -> Self {
        Rejected { id, error }
    }

    /// The error response that answers the rejected line.
    pub fn into_response(self) -> Response {
        Response::error(self.id, self.error)
    }
}

/// Parses one line into a [`Message`], or the standard error that answers it:
/// -32700 when it is not JSON, -32600 when it is JSON but not a valid message
/// (wrong or missing `"jsonrpc"`, no `method`, an id that is not an integer or a
/// string, params that are not an object or array, a response with both or neither
/// of `result`/`error`, a batch array). Method names are not checked here; see
/// [`crate::methods::Call::from_request`] for -32601 and -32602.
///
/// Never panics. Surrounding whitespace is allowed.
pub fn parse_message(line: &str) -> Result<Message, ErrorObject> {
    parse_message_detailed(line).map_err(|r| r.error)
}

/// As [`parse_message`], also returning the id recovered from an invalid request so
/// the error response can carry it.
pub fn parse_message_detailed(line: &str) -> Result<Message, Rejected> {
    let v: Value =
        serde_json::from_str(line).map_err(|e| Rejected::new(None, ErrorObject::parse_error(e)))?;
    classify(v)
}

/// Turns parsed JSON into a message, applying the rules of [`parse_message`].
fn classify(v: Value) -> Result<Message, Rejected> {
    let mut obj = match v {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err(Rejected::new(
                None,
                ErrorObject::invalid_request(
                    "batches (JSON arrays) are not supported; send one message per line",
                ),
            ));
        }
        other => {
            return Err(Rejected::new(
                None,
                ErrorObject::invalid_request(format!(
                    "expected a JSON object, got {}",
                    kind_of(&other)
                )),
            ));
        }
    };

    // The id, when present and well-formed, so that errors can echo it.
    let raw_id = obj.remove("id");
    let id = raw_id.as_ref().and_then(Id::from_value);
    let reject = |why: String| Rejected::new(id.clone(), ErrorObject::invalid_request(why));

    match obj.remove("jsonrpc") {
        Some(Value::String(s)) if s == JSONRPC_VERSION => {}
        Some(Value::String(s)) => {
            return Err(reject(format!(
                "unsupported \"jsonrpc\" version {s:?}, expected \"2.0\""
            )));
        }
        Some(other) => {
            return Err(reject(format!(
                "\"jsonrpc\" must be the string \"2.0\", got {}",
                kind_of(&other)
            )));
        }
        None => return Err(reject("missing \"jsonrpc\": \"2.0\"".to_owned())),
    }

    if let Some(method) = obj.remove("method") {
        let method = match method {
            Value::String(m) => m,
            other => {
                return Err(reject(format!(
                    "\"method\" must be a string, got {}",
                    kind_of(&other)
                )));
            }
        };
        let params = match obj.remove("params") {
            None | Some(Value::Null) => None,
            Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
            Some(other) => {
                return Err(reject(format!(
                    "\"params\" must be an object or an array, got {}",
                    kind_of(&other)
                )));
            }
        };
        return match raw_id {
            None => Ok(Message::Notification(Notification {
                jsonrpc: V2,
                method,
                params,
            })),
            Some(raw) => match id {
                Some(id) => Ok(Message::Request(Request {
                    jsonrpc: V2,
                    id,
                    method,
                    params,
                })),
                None => Err(reject(bad_id(&raw))),
            },
        };
    }

    let result = obj.remove("result");
    let error = obj.remove("error");
    if result.is_none() && error.is_none() {
        return Err(reject(
            "missing \"method\" (and no \"result\" or \"error\" either)".to_owned(),
        ));
    }
    // A response's id may be null (an error about an unreadable request).
    let id = match raw_id {
        Some(Value::Null) => None,
        Some(raw) => match id {
            Some(id) => Some(id),
            None => return Err(reject(bad_id(&raw))),
        },
        None => return Err(reject("a response must carry \"id\"".to_owned())),
    };
    let outcome = match (result, error) {
        (Some(r), None) => Ok(r),
        (None, Some(e)) => Err(serde_json::from_value::<ErrorObject>(e).map_err(|e| {
            Rejected::new(
                id.clone(),
                ErrorObject::invalid_request(format!("malformed error object: {e}")),
            )
        })?),
        _ => {
            return Err(Rejected::new(
                id,
                ErrorObject::invalid_request("a response has both \"result\" and \"error\""),
            ));
        }
    };
    Ok(Message::Response(Response { id, outcome }))
}

fn bad_id(raw: &Value) -> String {
    match raw {
        Value::Number(_) => {
            "\"id\" must be an integer in the signed 64-bit range or a string".to_owned()
        }
        other => format!(
            "\"id\" must be an integer or a string, got {}",
            kind_of(other)
        ),
    }
}

/// The JSON type name of a value, for error messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Builds `params` from any serializable value, as the object or array it must be.
/// `None` when it serializes to `null` or `{}` (methods without params).
///
/// Errors: the value does not serialize, or serializes to a string, number or bool.
pub fn to_params<T: Serialize + ?Sized>(p: &T) -> Result<Option<Value>, serde_json::Error> {
    match serde_json::to_value(p)? {
        Value::Null => Ok(None),
        Value::Object(o) if o.is_empty() => Ok(None),
        v @ (Value::Object(_) | Value::Array(_)) => Ok(Some(v)),
        other => Err(serde::ser::Error::custom(format!(
            "params must be an object or an array, got {}",
            kind_of(&other)
        ))),
    }
}

/// An empty params object, for callers that want `{}` rather than no params.
pub fn empty_params() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(line: &str) -> i64 {
        parse_message(line).unwrap_err().code
    }

    #[test]
    fn classifies_the_three_kinds() {
        assert_eq!(
            parse_message(r#"{"jsonrpc":"2.0","id":1,"method":"hello"}"#).unwrap(),
            Message::Request(Request::new(1, "hello", None))
        );
        assert_eq!(
            parse_message(r#"{"jsonrpc":"2.0","method":"events.batch","params":{}}"#).unwrap(),
            Message::Notification(Notification::new("events.batch", Some(empty_params())))
        );
        assert_eq!(
            parse_message(r#"{"jsonrpc":"2.0","id":"a","result":[1]}"#).unwrap(),
            Message::Response(Response::ok(Id::from("a"), serde_json::json!([1])))
        );
        assert_eq!(
            parse_message(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
                .unwrap(),
            Message::Response(Response::error(None, ErrorObject::new(-32700, "x")))
        );
    }

    #[test]
    fn standard_errors() {
        assert_eq!(code_of("not json"), codes::PARSE_ERROR);
        assert_eq!(code_of(""), codes::PARSE_ERROR);
        assert_eq!(
            code_of(r#"{"id":1,"method":"hello"}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"1.0","id":1,"method":"hello"}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":2.0,"id":1,"method":"hello"}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"method":7}"#),
            codes::INVALID_REQUEST
        );
        for bad in ["{}", "[]", "true", "1.5", "null"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"hello"}}"#);
            assert_eq!(code_of(&line), codes::INVALID_REQUEST, "{line}");
        }
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"method":"hello","params":3}"#),
            codes::INVALID_REQUEST
        );
        let batch = parse_message(r#"[{"jsonrpc":"2.0","id":1,"method":"hello"}]"#).unwrap_err();
        assert_eq!(batch.code, codes::INVALID_REQUEST);
        assert!(batch.message.contains("batches"), "{}", batch.message);
        assert_eq!(code_of("42"), codes::INVALID_REQUEST);
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#),
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn rejected_keeps_a_readable_id() {
        let r = parse_message_detailed(r#"{"jsonrpc":"1.0","id":9,"method":"hello"}"#).unwrap_err();
        assert_eq!(r.id, Some(Id::Number(9)));
        let r =
            parse_message_detailed(r#"{"jsonrpc":"2.0","id":[9],"method":"hello"}"#).unwrap_err();
        assert_eq!(r.id, None);
    }

    #[test]
    fn response_serializes_with_result_xor_error() {
        let ok = serde_json::to_string(&Response::ok(Id::Number(3), Value::Bool(true))).unwrap();
        assert_eq!(ok, r#"{"jsonrpc":"2.0","id":3,"result":true}"#);
        let err =
            serde_json::to_string(&Response::error(None, ErrorObject::new(-32600, "no"))).unwrap();
        assert_eq!(
            err,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}"#
        );
        let back: Response = serde_json::from_str(&err).unwrap();
        assert_eq!(back, Response::error(None, ErrorObject::new(-32600, "no")));
    }

    #[test]
    fn to_params_shapes() {
        assert_eq!(to_params(&()).unwrap(), None);
        assert!(to_params(&5).is_err());
        assert_eq!(to_params(&empty_params()).unwrap(), None);
        assert_eq!(
            to_params(&serde_json::json!({"a":1})).unwrap(),
            Some(serde_json::json!({"a":1}))
        );
    }
}

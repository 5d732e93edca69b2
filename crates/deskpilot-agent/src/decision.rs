//! The one answer a model may give per step, its JSON schema, and the strict parser.
//!
//! An answer is a single JSON object `{"decision": D}` where `D` is exactly one of:
//!
//! ```text
//! {"kind": "action", "ref": "e5", "op": "set_value", "value": "Hello"}
//! {"kind": "switch", "window": "w2"}
//! {"kind": "done",   "summary": "typed the text and saved the file"}
//! {"kind": "ask",    "question": "Overwrite the existing file?"}
//! ```
//!
//! The envelope exists because OpenAI's strict structured outputs (and Anthropic tool
//! inputs) need an object at the root. `value` may be `null` or absent when the op
//! takes none. Anything else — invalid JSON, text around the object, an unknown or
//! extra field at any level, a wrong type, an op deskpilot does not know, a ref or
//! window that is not of the `eN`/`wN` form, coordinates of any kind — is
//! `COMPUTER_MODEL_SCHEMA_VIOLATION` and is never executed. This module only parses;
//! whether a ref exists or a window may be used is decided by the loop and the host.

use deskpilot_core::Op;
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde_json::{Map, Value, json};

/// Longest raw answer parsed: 64 KiB (a decision is a few hundred bytes).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Longest `value` of an action, in chars (what `set_value`/`type` may enter in one step).
pub const MAX_VALUE_CHARS: usize = 20_000;
/// Longest `summary` of `done` or `question` of `ask`, in chars.
pub const MAX_TEXT_CHARS: usize = 2_000;

/// One validated decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// One op on an element of the bound window.
    Action {
        /// `eN` ref from the current window text.
        ref_: String,
        op: Op,
        /// The op's argument (text for `set_value`/`type`, a direction for `scroll`,
        /// a target ref for `drag_to`); `None` for ops that take none.
        value: Option<String>,
    },
    /// Work in another listed window (`wN`).
    Switch { window: String },
    /// The model considers the instruction finished; the summary is its claim only.
    Done { summary: String },
    /// The model needs the user to decide something.
    Ask { question: String },
}

impl Decision {
    /// `action`, `switch`, `done` or `ask`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Action { .. } => "action",
            Decision::Switch { .. } => "switch",
            Decision::Done { .. } => "done",
            Decision::Ask { .. } => "ask",
        }
    }
}

/// Field names that carry coordinates; an answer holding any is refused: the loop has
/// no capture, so there is no basis for a point (docs/ARCHITECTURE.md §8).
const COORDINATE_FIELDS: [&str; 12] = [
    "x",
    "y",
    "dx",
    "dy",
    "coordinate",
    "coordinates",
    "point",
    "position",
    "pos",
    "bounds",
    "basis",
    "offset",
];

/// The JSON schema of an answer, strict in OpenAI's sense: every object closes
/// `additionalProperties` and lists every property as required (nullable `value`).
pub fn schema() -> Value {
    let ops: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
    let variant = |kind: &str, props: Value, required: &[&str]| {
        let mut p = Map::new();
        p.insert("kind".into(), json!({"type": "string", "enum": [kind]}));
        if let Value::Object(m) = props {
            p.extend(m);
        }
        let mut req = vec!["kind"];
        req.extend_from_slice(required);
        json!({
            "type": "object",
            "properties": p,
            "required": req,
            "additionalProperties": false,
        })
    };
    json!({
        "type": "object",
        "properties": {
            "decision": {
                "anyOf": [
                    variant("action", json!({
                        "ref": {"type": "string", "description": "element ref from the current window text, like e5"},
                        "op": {"type": "string", "enum": ops},
                        "value": {"type": ["string", "null"], "description": "text for set_value/type, up|down|left|right|into_view for scroll, a target ref for drag_to; null otherwise"},
                    }), &["ref", "op", "value"]),
                    variant("switch", json!({
                        "window": {"type": "string", "description": "window ref from the window list, like w2"},
                    }), &["window"]),
                    variant("done", json!({
                        "summary": {"type": "string"},
                    }), &["summary"]),
                    variant("ask", json!({
                        "question": {"type": "string"},
                    }), &["question"]),
                ]
            }
        },
        "required": ["decision"],
        "additionalProperties": false,
    })
}

fn violation(msg: impl Into<String>) -> ComputerError {
    ComputerError::new(ErrorCode::ModelSchemaViolation, msg)
}

/// `eN` with N ≥ 1 (no leading zero), as refs are printed.
pub fn is_element_ref(s: &str) -> bool {
    is_ref_with(s, 'e')
}

/// `wN` with N ≥ 1, as window refs are printed.
pub fn is_window_ref(s: &str) -> bool {
    is_ref_with(s, 'w')
}

fn is_ref_with(s: &str, prefix: char) -> bool {
    let Some(digits) = s.strip_prefix(prefix) else {
        return false;
    };
    !digits.is_empty()
        && digits.len() <= 9
        && !digits.starts_with('0')
        && digits.chars().all(|c| c.is_ascii_digit())
}

/// A field name or value as it is quoted in a message back to the model: its first
/// 40 chars between `"…"`, escaped once ([`deskpilot_core::sanitize::one_line`]: a
/// line break reads `\n`, a quote `\"`).
fn field_name(k: &str) -> String {
    let short: String = k.chars().take(40).collect();
    format!("\"{}\"", deskpilot_core::sanitize::one_line(&short))
}

/// Refuses any field of `obj` outside `allowed`, coordinates first.
fn only_fields(obj: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<()> {
    for k in obj.keys() {
        if COORDINATE_FIELDS.contains(&k.to_ascii_lowercase().as_str()) {
            return Err(violation(format!(
                "field {} {at} carries coordinates: there is no capture and so no basis for a point; address elements by ref",
                field_name(k)
            )));
        }
    }
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(violation(format!(
                "field {} {at} is not part of the schema (allowed: {})",
                field_name(k),
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

fn string_field<'a>(obj: &'a Map<String, Value>, key: &str, kind: &str) -> Result<&'a str> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(violation(format!(
            "`{key}` of a {kind} decision must be a string, not {}",
            type_name(other)
        ))),
        None => Err(violation(format!("a {kind} decision needs `{key}`"))),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn bounded(s: &str, key: &str, max: usize) -> Result<String> {
    let n = s.chars().count();
    if n > max {
        return Err(violation(format!(
            "`{key}` is {n} chars; at most {max} are accepted"
        )));
    }
    Ok(s.to_string())
}

const DUPLICATE: &str = "duplicate key";

/// A JSON value walked only to find an object that repeats a key: serde_json keeps
/// the last of two equal keys, so `{"decision": A, "decision": B}` would otherwise
/// run B while A was what a reader of the answer saw first.
struct NoDuplicateKeys;

impl<'de> serde::Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NoDuplicateKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                let mut seen = std::collections::HashSet::new();
                while let Some(k) = m.next_key::<String>()? {
                    if !seen.insert(k.clone()) {
                        let k: String = k.chars().take(40).collect();
                        return Err(serde::de::Error::custom(format!("{DUPLICATE} `{k}`")));
                    }
                    m.next_value::<NoDuplicateKeys>()?;
                }
                Ok(NoDuplicateKeys)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<Self::Value, A::Error> {
                while s.next_element::<NoDuplicateKeys>()?.is_some() {}
                Ok(NoDuplicateKeys)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(NoDuplicateKeys)
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses one raw answer strictly (see the module doc).
///
/// Errors: `COMPUTER_MODEL_SCHEMA_VIOLATION` naming what is wrong, in words meant to
/// be shown to the model on its next step (no part of the answer is echoed beyond a
/// field name of at most 40 chars).
pub fn parse(raw: &str) -> Result<Decision> {
    if raw.len() > MAX_ANSWER_BYTES {
        return Err(violation(format!(
            "the answer is {} bytes; a decision is one small JSON object",
            raw.len()
        )));
    }
    let text = raw.trim();
    if text.is_empty() {
        return Err(violation(
            "the answer is empty; answer with one JSON object",
        ));
    }
    if let Err(e) = serde_json::from_str::<NoDuplicateKeys>(text)
        && e.to_string().starts_with(DUPLICATE)
    {
        return Err(violation(format!(
            "the answer repeats a key ({e}); give exactly one decision with each field once"
        )));
    }
    let v: Value = serde_json::from_str(text).map_err(|e| {
        violation(format!(
            "the answer is not one JSON object ({e}); answer with exactly {{\"decision\": {{...}}}} and nothing else"
        ))
    })?;
    let Value::Object(top) = v else {
        return Err(violation(format!(
            "the answer is {}, not an object {{\"decision\": {{...}}}}",
            type_name(&v)
        )));
    };
    only_fields(&top, &["decision"], "at the top level")?;
    let Some(d) = top.get("decision") else {
        return Err(violation("the answer has no `decision`"));
    };
    let Value::Object(d) = d else {
        return Err(violation(format!(
            "`decision` must be an object, not {}",
            type_name(d)
        )));
    };
    let kind = match d.get("kind") {
        Some(Value::String(k)) => k.as_str(),
        Some(other) => {
            return Err(violation(format!(
                "`kind` must be a string, not {}",
                type_name(other)
            )));
        }
        None => {
            return Err(violation(
                "`decision` needs `kind`: one of action, switch, done, ask",
            ));
        }
    };
    match kind {
        "action" => {
            only_fields(d, &["kind", "ref", "op", "value"], "of an action")?;
            let r = string_field(d, "ref", "action")?;
            if !is_element_ref(r) {
                return Err(violation(format!(
                    "`ref` {} is not an element ref like e5; use a ref from the current window text",
                    field_name(r)
                )));
            }
            let op_name = string_field(d, "op", "action")?;
            let op = Op::from_name(op_name).ok_or_else(|| {
                violation(format!(
                    "unknown op {}; ops: {}",
                    field_name(op_name),
                    Op::ALL.map(|o| o.as_str()).join(", ")
                ))
            })?;
            let value = match d.get("value") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(bounded(s, "value", MAX_VALUE_CHARS)?),
                Some(other) => {
                    return Err(violation(format!(
                        "`value` must be a string or null, not {}",
                        type_name(other)
                    )));
                }
            };
            match (op.needs_value(), &value) {
                (true, None) => {
                    return Err(violation(format!("op {op} needs a `value`")));
                }
                (false, Some(_)) => {
                    return Err(violation(format!(
                        "op {op} takes no value; send \"value\": null"
                    )));
                }
                _ => {}
            }
            if op == Op::Scroll
                && !matches!(
                    value.as_deref(),
                    Some("up" | "down" | "left" | "right" | "into_view")
                )
            {
                return Err(violation(
                    "scroll takes a value of up, down, left, right or into_view",
                ));
            }
            if op == Op::DragTo && !value.as_deref().is_some_and(is_element_ref) {
                return Err(violation("drag_to takes the target element's ref as value"));
            }
            Ok(Decision::Action {
                ref_: r.to_string(),
                op,
                value,
            })
        }
        "switch" => {
            only_fields(d, &["kind", "window"], "of a switch")?;
            let w = string_field(d, "window", "switch")?;
            if !is_window_ref(w) {
                return Err(violation(format!(
                    "`window` {} is not a window ref like w2; use one from the window list",
                    field_name(w)
                )));
            }
            Ok(Decision::Switch {
                window: w.to_string(),
            })
        }
        "done" => {
            only_fields(d, &["kind", "summary"], "of done")?;
            let s = string_field(d, "summary", "done")?;
            Ok(Decision::Done {
                summary: bounded(s, "summary", MAX_TEXT_CHARS)?,
            })
        }
        "ask" => {
            only_fields(d, &["kind", "question"], "of ask")?;
            let q = string_field(d, "question", "ask")?;
            if q.trim().is_empty() {
                return Err(violation("`question` is empty"));
            }
            Ok(Decision::Ask {
                question: bounded(q, "question", MAX_TEXT_CHARS)?,
            })
        }
        other => Err(violation(format!(
            "unknown kind {}; one of action, switch, done, ask",
            field_name(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value the model sent with a line break was quoted back escaped twice
    /// (`"999\\n"`), which is not what it sent.
    #[test]
    fn values_are_quoted_back_escaped_once() {
        let m = code_msg(r#"{"decision":{"kind":"action","ref":"999\n","op":"click"}}"#);
        assert!(m.starts_with(r#"`ref` "999\n" is not"#), "{m}");
        let m = code_msg(r#"{"decision":{"kind":"action","ref":"e1","op":"cl\"ick"}}"#);
        assert!(m.starts_with(r#"unknown op "cl\"ick";"#), "{m}");
        let m = code_msg(r#"{"decision":{"kind":"done","summary":"ok","x\ty":1}}"#);
        assert!(m.starts_with(r#"field "x\ty" of done"#), "{m}");
    }

    #[test]
    fn a_repeated_key_is_a_violation_not_last_one_wins() {
        let two = r#"{"decision":{"kind":"done","summary":"ok"},"decision":{"kind":"action","ref":"e3","op":"click","value":null}}"#;
        assert!(code_msg(two).contains("repeats a key"), "{}", code_msg(two));
        let inner =
            r#"{"decision":{"kind":"done","kind":"action","ref":"e3","op":"click","value":null}}"#;
        assert!(code_msg(inner).contains("`kind`"), "{}", code_msg(inner));
        assert!(parse(r#"{"decision":{"kind":"done","summary":"ok"}}"#).is_ok());
    }

    fn code_msg(raw: &str) -> String {
        let e = parse(raw).unwrap_err();
        assert_eq!(e.code, ErrorCode::ModelSchemaViolation, "{raw}");
        e.message
    }

    #[test]
    fn the_four_kinds_parse() {
        assert_eq!(
            parse(r#" {"decision":{"kind":"action","ref":"e5","op":"set_value","value":"Hi"}} "#)
                .unwrap(),
            Decision::Action {
                ref_: "e5".into(),
                op: Op::SetValue,
                value: Some("Hi".into())
            }
        );
        assert_eq!(
            parse(r#"{"decision":{"kind":"action","ref":"e12","op":"click","value":null}}"#)
                .unwrap(),
            Decision::Action {
                ref_: "e12".into(),
                op: Op::Click,
                value: None
            }
        );
        assert_eq!(
            parse(r#"{"decision":{"kind":"action","ref":"e1","op":"click"}}"#)
                .unwrap()
                .kind(),
            "action"
        );
        assert_eq!(
            parse(r#"{"decision":{"kind":"switch","window":"w3"}}"#).unwrap(),
            Decision::Switch {
                window: "w3".into()
            }
        );
        assert_eq!(
            parse(r#"{"decision":{"kind":"done","summary":"ok"}}"#).unwrap(),
            Decision::Done {
                summary: "ok".into()
            }
        );
        assert_eq!(
            parse(r#"{"decision":{"kind":"ask","question":"Which file?"}}"#).unwrap(),
            Decision::Ask {
                question: "Which file?".into()
            }
        );
    }

    #[test]
    fn anything_outside_the_schema_is_a_violation() {
        for (raw, needle) in [
            ("", "empty"),
            ("click e5", "not one JSON object"),
            (
                "```json\n{\"decision\":{\"kind\":\"done\",\"summary\":\"x\"}}\n```",
                "not one JSON object",
            ),
            (
                r#"{"decision":{"kind":"done","summary":"x"}} trailing"#,
                "not one JSON object",
            ),
            ("[1]", "a list"),
            (
                r#"{"kind":"done","summary":"x"}"#,
                "field \"kind\" at the top level",
            ),
            (
                r#"{"decision":{"kind":"done","summary":"x"},"budget":500}"#,
                "field \"budget\"",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e5","op":"click","value":null,"confirm":true}}"#,
                "field \"confirm\" of an action",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e5","op":"click","value":null,"x":10,"y":20}}"#,
                "carries coordinates",
            ),
            (
                r#"{"decision":{"kind":"click","x":10,"y":20}}"#,
                "unknown kind",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e5","op":"pointer_click","value":null}}"#,
                "unknown op",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"button Save","op":"click","value":null}}"#,
                "not an element ref",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e05","op":"click","value":null}}"#,
                "not an element ref",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e5","op":"set_value","value":null}}"#,
                "needs a `value`",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e5","op":"click","value":"x"}}"#,
                "takes no value",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e5","op":"scroll","value":"sideways"}}"#,
                "scroll takes",
            ),
            (
                r#"{"decision":{"kind":"action","ref":"e5","op":"set_value","value":5}}"#,
                "string or null",
            ),
            (
                r#"{"decision":{"kind":"switch","window":"Passwords"}}"#,
                "not a window ref",
            ),
            (
                r#"{"decision":{"kind":"switch","window":"w2","force":true}}"#,
                "field \"force\"",
            ),
            (r#"{"decision":{"kind":"ask","question":"  "}}"#, "empty"),
            (r#"{"decision":"done"}"#, "must be an object"),
        ] {
            let m = code_msg(raw);
            assert!(m.contains(needle), "{raw}: {m}");
        }
        let long = format!(
            r#"{{"decision":{{"kind":"done","summary":"{}"}}}}"#,
            "a".repeat(MAX_TEXT_CHARS + 1)
        );
        assert!(code_msg(&long).contains("at most 2000"));
    }

    #[test]
    fn the_schema_is_strict_and_lists_every_op() {
        let s = schema();
        assert_eq!(s["additionalProperties"], json!(false));
        let variants = s["properties"]["decision"]["anyOf"].as_array().unwrap();
        assert_eq!(variants.len(), 4);
        for v in variants {
            assert_eq!(v["additionalProperties"], json!(false));
            let props: Vec<&String> = v["properties"].as_object().unwrap().keys().collect();
            let req: Vec<&str> = v["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap())
                .collect();
            assert_eq!(props.len(), req.len(), "strict: every property is required");
        }
        assert_eq!(
            variants[0]["properties"]["op"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            Op::ALL.len()
        );
    }
}

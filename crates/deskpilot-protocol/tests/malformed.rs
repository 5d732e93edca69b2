//! Malformed lines get the right JSON-RPC error and never a panic.

use deskpilot_protocol::codec::{LineDecoder, LineError};
use deskpilot_protocol::jsonrpc::Message;
use deskpilot_protocol::jsonrpc::{codes, parse_message, parse_message_detailed};
use deskpilot_protocol::methods::Call;
use proptest::prelude::*;

/// Parses a line and, for requests, decodes the typed call; returns the error code.
fn code_of(line: &str) -> i64 {
    match parse_message(line) {
        Err(e) => e.code,
        Ok(Message::Request(r)) => Call::from_request(&r).expect_err(line).code,
        Ok(other) => panic!("{line} parsed as {other:?}"),
    }
}

#[test]
fn each_malformation_has_its_code() {
    let cases: &[(&str, i64)] = &[
        ("this is not json", codes::PARSE_ERROR),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"",
            codes::PARSE_ERROR,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"} trailing",
            codes::PARSE_ERROR,
        ),
        // Wrong or missing version.
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2","id":1,"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        (r#"{"id":1,"method":"hello"}"#, codes::INVALID_REQUEST),
        // Missing method (and not a response either).
        (r#"{"jsonrpc":"2.0","id":1}"#, codes::INVALID_REQUEST),
        (
            r#"{"jsonrpc":"2.0","id":1,"params":{}}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            codes::INVALID_REQUEST,
        ),
        // Ids of the wrong type.
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":[1],"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"hello"}"#,
            codes::INVALID_REQUEST,
        ),
        // Batches.
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"hello"}]"#,
            codes::INVALID_REQUEST,
        ),
        ("[]", codes::INVALID_REQUEST),
        // Not an object.
        ("\"hello\"", codes::INVALID_REQUEST),
        // Params neither object nor array.
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"hello","params":"x"}"#,
            codes::INVALID_REQUEST,
        ),
        // Unknown method; a notification-only method as a request.
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tree.delete"}"#,
            codes::METHOD_NOT_FOUND,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"events.batch","params":{"subscription":1,"events":[]}}"#,
            codes::METHOD_NOT_FOUND,
        ),
        // Wrong param types.
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tree.snapshot","params":{"window":5}}"#,
            codes::INVALID_PARAMS,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tree.snapshot","params":{"window":"w","depth":-1}}"#,
            codes::INVALID_PARAMS,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tree.snapshot"}"#,
            codes::INVALID_PARAMS,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"node.act","params":{"window":"w","handle":"h","op":"click","value":7}}"#,
            codes::INVALID_PARAMS,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"input.pointer","params":{"window":"w","action":"teleport","x":1,"y":2}}"#,
            codes::INVALID_PARAMS,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"apps.launch","params":{"command":"mousepad"}}"#,
            codes::INVALID_PARAMS,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"events.next","params":{"subscription":"one","timeout_ms":5}}"#,
            codes::INVALID_PARAMS,
        ),
    ];
    for (line, code) in cases {
        assert_eq!(code_of(line), *code, "{line}");
    }
}

#[test]
fn a_request_without_id_is_a_notification_not_an_error() {
    // JSON-RPC: no id means a notification; it is never answered (see rpc::serve).
    match parse_message(r#"{"jsonrpc":"2.0","method":"tree.snapshot","params":{"window":"w"}}"#) {
        Ok(Message::Notification(n)) => assert_eq!(n.method, "tree.snapshot"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_keep_a_readable_id() {
    let r = parse_message_detailed(r#"{"jsonrpc":"2.0","id":"abc"}"#).unwrap_err();
    assert_eq!(r.id, Some("abc".into()));
    assert_eq!(r.error.code, codes::INVALID_REQUEST);
}

#[test]
fn over_long_line_then_good_line() {
    let mut d = LineDecoder::new(1024);
    let mut got = d.push(&vec![b'x'; 5000]);
    got.extend(d.push(b"yyyy\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}\r\n"));
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], Err(LineError::TooLong { limit: 1024 }));
    let line = got[1].as_ref().unwrap();
    assert!(matches!(parse_message(line), Ok(Message::Request(_))));
}

#[test]
fn deeply_nested_json_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(parse_message(&deep).unwrap_err().code, codes::PARSE_ERROR);
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tree.snapshot","params":{{"window":{}1{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert_eq!(
        parse_message(&deep_params).unwrap_err().code,
        codes::PARSE_ERROR
    );
}

/// Feeds a line through everything a server does with it; must never panic.
fn digest(line: &str) {
    if let Ok(Message::Request(r)) = parse_message(line) {
        let _ = Call::from_request(&r);
    }
}

/// Fragments that make random input look like protocol messages more often.
fn jsonish() -> impl Strategy<Value = String> {
    let frag = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\"jsonrpc\":\"2.0\"".to_owned()),
        Just("\"id\":".to_owned()),
        Just("\"method\":".to_owned()),
        Just("\"params\":".to_owned()),
        Just("\"tree.snapshot\"".to_owned()),
        Just("\"node.act\"".to_owned()),
        Just("\"window\":".to_owned()),
        Just("\"op\":\"click\"".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("-1e999".to_owned()),
        Just("18446744073709551616".to_owned()),
        "\"[^\"\\\\]{0,8}\"",
        "-?[0-9]{1,4}",
    ];
    prop::collection::vec(frag, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        chunk in 1usize..64,
        max in 1usize..128,
    ) {
        let mut d = LineDecoder::new(max);
        for part in bytes.chunks(chunk) {
            // Errors (too long, not UTF-8) are fine; lines must be within bounds.
            for l in d.push(part).into_iter().flatten() {
                prop_assert!(l.len() <= max);
                prop_assert!(!l.contains('\n'));
                digest(&l);
            }
            prop_assert!(d.buffered() <= max + 1);
        }
        if let Some(Ok(l)) = d.finish() {
            digest(&l);
        }
    }

    #[test]
    fn jsonish_lines_never_panic(line in jsonish()) {
        digest(&line);
        digest(&format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree.find\",\"params\":{line}}}"));
    }
}

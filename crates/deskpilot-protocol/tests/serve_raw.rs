//! Raw lines into `serve`: garbage gets error responses, serving goes on.

use std::sync::Arc;

use deskpilot_protocol::fixture_driver::FixtureDriver;
use deskpilot_protocol::jsonrpc::{Id, Message, Response, codes, parse_message};
use deskpilot_protocol::rpc::{ServeOptions, serve_with};
use deskpilot_protocol::{ComputerError, ErrorCode};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Writes `input` into a server, closes its input, and returns every response line.
async fn exchange(input: Vec<u8>, max_line: usize) -> Vec<Response> {
    let (mut client, server_end) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_end);
    let server = tokio::spawn(serve_with(
        Arc::new(FixtureDriver::desktop()),
        sr,
        sw,
        ServeOptions {
            max_line,
            ..ServeOptions::default()
        },
    ));
    client.write_all(&input).await.unwrap();
    client.shutdown().await.unwrap();
    let mut lines = BufReader::new(client).lines();
    let mut out = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        match parse_message(&line).unwrap() {
            Message::Response(r) => out.push(r),
            other => panic!("server sent {other:?}"),
        }
    }
    server.await.unwrap().unwrap();
    out
}

fn error_code(r: &Response) -> i64 {
    r.outcome.as_ref().unwrap_err().code
}

#[tokio::test]
async fn garbage_lines_then_a_valid_request() {
    let mut input = Vec::new();
    input.extend_from_slice(b"not json at all\n");
    input.extend_from_slice(b"\xff\xfe broken utf8\n");
    input.extend_from_slice(br#"{"jsonrpc":"1.0","id":2,"method":"hello"}"#);
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"[{"jsonrpc":"2.0","id":3,"method":"hello"}]"#);
    input.extend_from_slice(b"\r\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"hello"}"#);
    input.extend_from_slice(b"\n\n   \n");
    input.extend_from_slice(&vec![b'{'; 300]);
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":5,"method":"tree.explode"}"#);
    input.extend_from_slice(b"\n");
    input.extend_from_slice(
        br#"{"jsonrpc":"2.0","id":6,"method":"tree.snapshot","params":{"window":5}}"#,
    );
    input.extend_from_slice(b"\n");
    // Notifications, known and unknown, and a request sent as one: no answer.
    input.extend_from_slice(
        br#"{"jsonrpc":"2.0","method":"events.batch","params":{"subscription":1,"events":[]}}"#,
    );
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","method":"whatever"}"#);
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","method":"node.act","params":{"window":"prefs/w1","handle":"prefs/wrap","op":"toggle"}}"#);
    input.extend_from_slice(b"\n");
    // A driver error, then a good request, the last without a trailing newline.
    input.extend_from_slice(
        br#"{"jsonrpc":"2.0","id":"seven","method":"window.activate","params":{"window":"gone"}}"#,
    );
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":8,"method":"hello"}"#);

    let mut responses = exchange(input, 256).await;
    assert_eq!(responses.len(), 10, "{responses:#?}");

    // Line errors are answered in order; the two spawned requests may finish in any
    // order after them.
    let tail = responses.split_off(8);
    let expect: [(Option<Id>, i64); 8] = [
        (None, codes::PARSE_ERROR),
        (None, codes::PARSE_ERROR),
        (Some(Id::Number(2)), codes::INVALID_REQUEST),
        (None, codes::INVALID_REQUEST),
        (None, codes::INVALID_REQUEST),
        (None, codes::INVALID_REQUEST),
        (Some(Id::Number(5)), codes::METHOD_NOT_FOUND),
        (Some(Id::Number(6)), codes::INVALID_PARAMS),
    ];
    for (r, (id, code)) in responses.iter().zip(expect) {
        assert_eq!(r.id, id, "{r:?}");
        assert_eq!(error_code(r), code, "{r:?}");
    }
    let batch = responses[3].outcome.as_ref().unwrap_err();
    assert!(batch.message.contains("batches"), "{}", batch.message);
    let too_long = responses[5].outcome.as_ref().unwrap_err();
    assert!(too_long.message.contains("256"), "{}", too_long.message);
    // Standard errors carry the code a client should act on.
    let d = ComputerError::from(responses[7].outcome.as_ref().unwrap_err());
    assert_eq!(d.code, ErrorCode::InvalidArgument);
    let d = ComputerError::from(responses[6].outcome.as_ref().unwrap_err());
    assert_eq!(d.code, ErrorCode::PlatformUnsupported);

    let activate = tail
        .iter()
        .find(|r| r.id == Some(Id::from("seven")))
        .unwrap();
    let d = ComputerError::from(activate.outcome.as_ref().unwrap_err());
    assert_eq!(d.code, ErrorCode::ElementNotFound);
    assert_eq!(error_code(activate), ErrorCode::ElementNotFound.rpc_code());
    let hello = tail.iter().find(|r| r.id == Some(Id::Number(8))).unwrap();
    assert_eq!(hello.outcome.as_ref().unwrap()["platform"], "fixture");
}

#[tokio::test]
async fn a_request_sent_as_a_notification_is_not_executed() {
    let driver = Arc::new(FixtureDriver::desktop());
    let (mut client, server_end) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server_end);
    let server = tokio::spawn(serve_with(driver.clone(), sr, sw, ServeOptions::default()));
    client
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"node.act\",\"params\":{\"window\":\"prefs/w1\",\"handle\":\"prefs/wrap\",\"op\":\"toggle\"}}\n")
        .await
        .unwrap();
    client.shutdown().await.unwrap();
    let mut rest = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut client, &mut rest)
        .await
        .unwrap();
    server.await.unwrap().unwrap();
    assert_eq!(rest, "");
    assert!(driver.actions().is_empty());
}

#[tokio::test]
async fn stops_cleanly_at_eof_after_answering_in_flight_requests() {
    let mut input = Vec::new();
    for id in 1..=20 {
        input.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"events.next\",\"params\":{{\"subscription\":1,\"timeout_ms\":0}}}}\n").as_bytes(),
        );
    }
    let responses = exchange(input, 1024).await;
    assert_eq!(responses.len(), 20);
    let mut ids: Vec<_> = responses.iter().map(|r| r.id.clone().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, (1..=20).map(Id::Number).collect::<Vec<_>>());
    // No subscription 1 exists on a fresh fixture: each is a driver error.
    assert!(
        responses
            .iter()
            .all(|r| error_code(r) == ErrorCode::InvalidArgument.rpc_code())
    );
}

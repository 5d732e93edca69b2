//! Every method's request and response survive encode → line → parse → typed decode.

mod common;

use std::collections::BTreeSet;

use deskpilot_protocol::codec::{LineDecoder, encode};
use deskpilot_protocol::jsonrpc::{Id, Message, Response, parse_message};
use deskpilot_protocol::methods::{
    Call, Method, decode_event_batch, decode_result, event_batch_notification,
};
use deskpilot_protocol::types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Encodes `msg`, checks it is one line, and parses it back.
fn through_the_wire<T: Serialize>(msg: &T) -> Message {
    let bytes = encode(msg).unwrap();
    let mut d = LineDecoder::default();
    let lines = d.push(&bytes);
    assert_eq!(lines.len(), 1, "one message, one line");
    parse_message(lines[0].as_ref().unwrap()).unwrap()
}

/// Decodes `v` as `T` and checks that re-encoding gives `v` back.
fn typed<T: Serialize + DeserializeOwned>(method: Method, v: Value) {
    let t: T = decode_result(method, v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&t).unwrap(), v, "{method}");
}

fn result_round_trips(method: Method, v: Value) {
    match method {
        Method::Hello => typed::<Hello>(method, v),
        Method::AppsList => typed::<Vec<AppInfo>>(method, v),
        Method::AppsLaunch => typed::<LaunchResult>(method, v),
        Method::WindowsList => typed::<Vec<WindowInfo>>(method, v),
        Method::WindowActivate => typed::<Empty>(method, v),
        Method::TreeSnapshot => typed::<TreeSnapshot>(method, v),
        Method::TreeFind => typed::<FindResult>(method, v),
        Method::NodeAct => typed::<ActResult>(method, v),
        Method::EventsSubscribe => typed::<SubscribeResult>(method, v),
        Method::EventsNext => typed::<EventBatch>(method, v),
        Method::InputKeys | Method::InputPointer => typed::<InputResult>(method, v),
        Method::ScreenCapture => typed::<CaptureResult>(method, v),
        Method::ScreenOcr => typed::<OcrResult>(method, v),
        Method::ClipboardRead => typed::<ClipboardContent>(method, v),
        Method::ClipboardWrite => typed::<ClipboardWritten>(method, v),
        Method::ClipboardTargets => typed::<ClipboardTargets>(method, v),
        other => panic!("{other} has no result"),
    }
}

#[test]
fn every_request_and_response_round_trips() {
    let mut covered = BTreeSet::new();
    for (i, (call, result)) in common::every_call().into_iter().enumerate() {
        let method = call.method();
        covered.insert(method);

        // Request, with numeric and string ids.
        for id in [Id::Number(i as i64 + 1), Id::String(format!("req-{i}"))] {
            let req = call.to_request(id.clone()).unwrap();
            assert_eq!(req.method, method.as_str());
            let Message::Request(back) = through_the_wire(&req) else {
                panic!("{method}: not a request")
            };
            assert_eq!(back, req);
            assert_eq!(back.id, id);
            assert_eq!(Call::from_request(&back).unwrap(), call, "{method}");
        }

        // Response.
        let resp = Response::ok(Id::Number(i as i64), result.clone());
        let Message::Response(back) = through_the_wire(&resp) else {
            panic!("{method}: not a response")
        };
        assert_eq!(back, resp);
        result_round_trips(method, back.outcome.unwrap());
    }
    let requests: BTreeSet<_> = Method::ALL
        .into_iter()
        .filter(|m| !m.is_notification())
        .collect();
    assert_eq!(covered, requests, "every request method is exercised");
}

#[test]
fn events_batch_notification_round_trips() {
    let batch = common::event_batch();
    let n = event_batch_notification(&batch).unwrap();
    assert_eq!(n.method, "events.batch");
    let Message::Notification(back) = through_the_wire(&n) else {
        panic!("not a notification")
    };
    assert_eq!(back, n);
    assert_eq!(decode_event_batch(&back).unwrap(), batch);
}

#[test]
fn wire_form_is_pinned_for_one_request() {
    let req = Call::TreeSnapshot(SnapshotParams {
        depth: Some(2),
        ..SnapshotParams::whole(common::h("w"))
    })
    .to_request(7)
    .unwrap();
    assert_eq!(
        String::from_utf8(encode(&req).unwrap()).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tree.snapshot\",\"params\":{\"depth\":2,\"window\":\"w\"}}\n"
    );
    // Methods without params send none.
    let hello = Call::Hello.to_request(1).unwrap();
    assert_eq!(
        String::from_utf8(encode(&hello).unwrap()).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}\n"
    );
}

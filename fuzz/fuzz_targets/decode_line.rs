//! Arbitrary bytes through everything a driver or host does with an input line:
//! the line decoder (with fuzzer-chosen chunking and limit), the JSON-RPC parser, the
//! typed decoding of params and results, and the error mapping. Nothing may panic;
//! every message that parses must survive encode → parse unchanged.

#![no_main]

use deskpilot_protocol::ComputerError;
use deskpilot_protocol::codec::{LineDecoder, encode};
use deskpilot_protocol::jsonrpc::{Message, parse_message};
use deskpilot_protocol::methods::{Call, decode_event_batch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (chunk, max_line, body) = match data {
        [c, m, rest @ ..] => (usize::from(*c).max(1), usize::from(*m) * 64 + 1, rest),
        _ => (1, 1, data),
    };
    let mut decoder = LineDecoder::new(max_line);
    for part in body.chunks(chunk) {
        for line in decoder.push(part).into_iter().flatten() {
            assert!(line.len() <= max_line);
            check(&line);
        }
        assert!(decoder.buffered() <= max_line + 1);
    }
    if let Some(Ok(line)) = decoder.finish() {
        check(&line);
    }
    // The whole input as one line, too, when it is text.
    if let Ok(text) = std::str::from_utf8(body) {
        check(text);
    }
});

fn check(line: &str) {
    let Ok(msg) = parse_message(line) else {
        return;
    };
    match &msg {
        Message::Request(r) => {
            if let Ok(call) = Call::from_request(r) {
                // A decoded call re-encodes to a request that decodes to it again.
                let again = call
                    .to_request(r.id.clone())
                    .expect("typed params serialize");
                assert_eq!(Call::from_request(&again).as_ref(), Ok(&call));
            }
        }
        Message::Notification(n) => {
            let _ = decode_event_batch(n);
        }
        Message::Response(r) => {
            if let Err(e) = &r.outcome {
                let d = ComputerError::from(e);
                assert_eq!(d.message, e.message);
            }
        }
    }
    let bytes = encode(&msg).expect("a parsed message serializes");
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
    let text = std::str::from_utf8(&bytes[..bytes.len() - 1]).expect("JSON is UTF-8");
    assert_eq!(parse_message(text).as_ref(), Ok(&msg));
}

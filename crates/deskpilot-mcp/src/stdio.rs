//! The stdio framing in front of rmcp: every line the client sends is checked before
//! the MCP service sees it, so input the service would drop silently gets the answer
//! JSON-RPC 2.0 prescribes (§5.1): a line that is not JSON is a `-32700` parse error,
//! a line over [`crate::MAX_STDIO_LINE`] or a batch array a `-32600` invalid request,
//! each with `"id": null`, and the server goes on serving. Replies from the service
//! and these errors share one writer, a whole line at a time, so they never
//! interleave on stdout.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Why a line never reaches the service.
fn reject(line: &[u8], max: usize) -> Option<(i64, String)> {
    if line.len() > max {
        return Some((
            -32_600,
            format!(
                "request line of {} bytes is over the {max}-byte limit; it was skipped",
                line.len()
            ),
        ));
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Some((-32_700, "parse error: the line is not UTF-8".into()));
    };
    if text.trim().is_empty() {
        return None;
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Err(e) => Some((-32_700, format!("parse error: {e}"))),
        Ok(serde_json::Value::Array(_)) => Some((
            -32_600,
            "batch requests are not supported by MCP; send one request per line".into(),
        )),
        Ok(_) => None,
    }
}

fn error_line(code: i64, message: &str) -> String {
    let v = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    format!("{v}\n")
}

/// Reads lines from `input` (each at most `max` bytes is kept; longer lines are
/// consumed and rejected), forwards the valid ones to `to_service`, and sends
/// rejections to `errors`. Ends when `input` ends.
pub(crate) async fn filter_input<R, W>(
    input: R,
    mut to_service: W,
    errors: mpsc::UnboundedSender<String>,
    max: usize,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line: Vec<u8> = Vec::new();
    loop {
        line.clear();
        // One line: its length is counted in full, at most max + 1 bytes are kept.
        let mut length = 0usize;
        let mut newline = false;
        loop {
            let buf = match reader.fill_buf().await {
                Ok(b) if !b.is_empty() => b,
                _ => break,
            };
            let (n, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let body = if done { n - 1 } else { n };
            length += body;
            let room = (max + 1).saturating_sub(line.len());
            line.extend_from_slice(&buf[..body.min(room)]);
            reader.consume(n);
            if done {
                newline = true;
                break;
            }
        }
        if length == 0 && !newline {
            break; // end of input
        }
        if line.last() == Some(&b'\r') {
            line.pop();
            length -= 1;
        }
        let rejected = if length > max {
            Some((
                -32_600,
                format!(
                    "request line of {length} bytes is over the {max}-byte limit; it was skipped"
                ),
            ))
        } else {
            reject(&line, max)
        };
        match rejected {
            Some((code, msg)) => {
                tracing::warn!(code, "rejected an MCP input line: {msg}");
                let _ = errors.send(error_line(code, &msg));
            }
            None if line.iter().all(u8::is_ascii_whitespace) => {}
            None => {
                line.push(b'\n');
                if to_service.write_all(&line).await.is_err() || to_service.flush().await.is_err() {
                    break;
                }
            }
        }
        if !newline {
            break;
        }
    }
    let _ = to_service.shutdown().await;
}

/// An error response must carry an `id` (JSON-RPC 2.0 §5: `null` when the request's
/// id could not be read); one without it gets `"id": null`.
fn with_error_id(line: String) -> String {
    if !line.contains("\"error\"") {
        return line;
    }
    match serde_json::from_str::<serde_json::Value>(&line) {
        Ok(serde_json::Value::Object(mut m))
            if m.contains_key("error") && !m.contains_key("id") =>
        {
            m.insert("id".into(), serde_json::Value::Null);
            serde_json::Value::Object(m).to_string()
        }
        _ => line,
    }
}

/// Copies the service's output to `out` line by line, interleaving the rejection
/// lines of `errors` only between whole lines. Ends when the service's output ends.
pub(crate) async fn merge_output<R, W>(
    from_service: R,
    mut out: W,
    mut errors: mpsc::UnboundedReceiver<String>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(from_service).lines();
    loop {
        tokio::select! {
            l = lines.next_line() => match l {
                Ok(Some(l)) => {
                    let l = with_error_id(l);
                    if out.write_all(format!("{l}\n").as_bytes()).await.is_err() {
                        break;
                    }
                    let _ = out.flush().await;
                }
                _ => break,
            },
            Some(e) = errors.recv() => {
                if out.write_all(e.as_bytes()).await.is_err() {
                    break;
                }
                let _ = out.flush().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_without_an_id_gets_a_null_one() {
        let fixed = with_error_id(
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request"}}"#.into(),
        );
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert!(
            v.get("id").is_some_and(serde_json::Value::is_null),
            "{fixed}"
        );
        let ok = r#"{"jsonrpc":"2.0","id":3,"result":{}}"#.to_string();
        assert_eq!(with_error_id(ok.clone()), ok);
    }

    #[test]
    fn what_is_rejected_and_with_which_code() {
        assert_eq!(
            reject(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 100),
            None
        );
        assert_eq!(reject(b"", 100), None);
        assert_eq!(reject(b"{not json", 100).unwrap().0, -32_700);
        assert_eq!(reject(b"[{\"jsonrpc\":\"2.0\"}]", 100).unwrap().0, -32_600);
        assert_eq!(reject(&[b'x'; 101], 100).unwrap().0, -32_600);
    }

    #[tokio::test]
    async fn bad_lines_get_errors_and_good_lines_pass_through() {
        let long = "x".repeat(5_000);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\n{{oops\n{long}\n[1]\n\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}\n"
        );
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut forwarded = Vec::new();
        filter_input(input.as_bytes(), &mut forwarded, tx, 1_000).await;
        let forwarded = String::from_utf8(forwarded).unwrap();
        assert_eq!(
            forwarded,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n"
        );
        let mut codes = Vec::new();
        while let Ok(e) = rx.try_recv() {
            let v: serde_json::Value = serde_json::from_str(e.trim()).unwrap();
            assert_eq!(v["id"], serde_json::Value::Null);
            codes.push(v["error"]["code"].as_i64().unwrap());
            let msg = v["error"]["message"].as_str().unwrap();
            if msg.contains("limit") {
                assert!(msg.contains("5000 bytes"), "{v}");
            }
        }
        assert_eq!(codes, vec![-32_700, -32_600, -32_600]);
    }
}

//! Newline-delimited framing (NDJSON): one JSON message per line.
//!
//! This module owns line framing only: [`LineDecoder`] turns a byte stream into
//! lines, [`encode`] turns a message into exactly one line, and [`LineReader`] /
//! [`write_line`] do the same over generic tokio streams. It never opens a socket,
//! spawns a process or interprets JSON beyond checking that output is one line.
//!
//! Bounded memory: the decoder buffers at most `max_line + 1` bytes of one line. A
//! longer line is reported once as [`LineError::TooLong`] and its remaining bytes are
//! dropped up to the next newline, never buffered.

use std::collections::VecDeque;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Default maximum line length: 16 MiB. Chosen to fit a full-window PNG capture in
/// base64 (a 4K screen compresses to a few MiB) with ample margin, while bounding
/// what a broken peer can make us buffer.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// Bytes read from the stream per `read` call by [`LineReader`].
const READ_CHUNK: usize = 64 * 1024;

/// A line that could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line exceeded `limit` bytes (excluding the line terminator); it was
    /// dropped and decoding resumes after its newline.
    #[error("line longer than {limit} bytes; dropped up to the next newline")]
    TooLong { limit: usize },
    /// The line is not valid UTF-8 (first bad byte at `valid_up_to`); it was dropped.
    #[error("line is not valid UTF-8 (invalid byte at offset {valid_up_to})")]
    InvalidUtf8 { valid_up_to: usize },
}

/// An incremental NDJSON line splitter with a bounded line length.
///
/// Feed bytes with [`LineDecoder::push`] as they arrive, in chunks of any size; it
/// returns every line the chunk completed. Lines end with `\n`; a `\r` just before it
/// is removed. Empty lines (also `\r\n` alone) are skipped. At end of stream,
/// [`LineDecoder::finish`] returns a last unterminated line, if any.
#[derive(Debug, Clone)]
pub struct LineDecoder {
    buf: Vec<u8>,
    max_line: usize,
    /// Dropping the rest of an over-long line until the next `\n`.
    discarding: bool,
}

impl Default for LineDecoder {
    fn default() -> Self {
        LineDecoder::new(DEFAULT_MAX_LINE)
    }
}

impl LineDecoder {
    /// A decoder accepting lines of at most `max_line` bytes (excluding `\r\n`).
    pub fn new(max_line: usize) -> Self {
        LineDecoder {
            buf: Vec::new(),
            max_line,
            discarding: false,
        }
    }

    /// The maximum line length in bytes.
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// Bytes of an incomplete line currently held (at most `max_line + 1`).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Consumes `data` and returns the lines it completes, in order. An over-long or
    /// non-UTF-8 line yields one `Err` in its place.
    pub fn push(&mut self, mut data: &[u8]) -> Vec<Result<String, LineError>> {
        let mut out = Vec::new();
        while !data.is_empty() {
            let newline = data.iter().position(|&b| b == b'\n');
            let (segment, rest, ends_line) = match newline {
                Some(i) => (&data[..i], &data[i + 1..], true),
                None => (data, &data[data.len()..], false),
            };
            data = rest;
            if self.discarding {
                if ends_line {
                    self.discarding = false;
                }
                continue;
            }
            // Room for `max_line` bytes plus a possible `\r` before the newline.
            if self.buf.len() + segment.len() > self.max_line.saturating_add(1) {
                self.buf.clear();
                out.push(Err(LineError::TooLong {
                    limit: self.max_line,
                }));
                self.discarding = !ends_line;
                continue;
            }
            self.buf.extend_from_slice(segment);
            if ends_line && let Some(line) = self.take_line() {
                out.push(line);
            }
        }
        out
    }

    /// Ends the stream: returns the last line if it lacked a newline (and was not
    /// empty), and resets the decoder.
    pub fn finish(&mut self) -> Option<Result<String, LineError>> {
        self.discarding = false;
        self.take_line()
    }

    /// Takes the buffered bytes as one complete line.
    fn take_line(&mut self) -> Option<Result<String, LineError>> {
        let mut bytes = std::mem::take(&mut self.buf);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        if bytes.is_empty() {
            return None;
        }
        if bytes.len() > self.max_line {
            return Some(Err(LineError::TooLong {
                limit: self.max_line,
            }));
        }
        Some(
            String::from_utf8(bytes).map_err(|e| LineError::InvalidUtf8 {
                valid_up_to: e.utf8_error().valid_up_to(),
            }),
        )
    }
}

/// Serializes `msg` as compact JSON followed by one `\n`: exactly one line.
///
/// serde_json's compact form escapes control characters inside strings and puts no
/// whitespace between tokens, so the body never contains a raw newline; this is
/// checked in debug builds and by this module's tests.
///
/// Errors: `msg` does not serialize (a map with non-string keys, a failing custom
/// `Serialize`).
pub fn encode<T: Serialize + ?Sized>(msg: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = serde_json::to_vec(msg)?;
    debug_assert!(!out.contains(&b'\n'), "serde_json emitted a raw newline");
    out.push(b'\n');
    Ok(out)
}

/// Writes one encoded line (from [`encode`]) and flushes.
pub async fn write_line<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    line: &[u8],
) -> std::io::Result<()> {
    w.write_all(line).await?;
    w.flush().await
}

/// Reads NDJSON lines from an async stream through a [`LineDecoder`].
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    decoder: LineDecoder,
    ready: VecDeque<Result<String, LineError>>,
    chunk: Box<[u8]>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Reads with the default 16 MiB line limit.
    pub fn new(reader: R) -> Self {
        LineReader::with_max_line(reader, DEFAULT_MAX_LINE)
    }

    /// Reads with a line limit of `max_line` bytes.
    pub fn with_max_line(reader: R, max_line: usize) -> Self {
        LineReader {
            reader,
            decoder: LineDecoder::new(max_line),
            ready: VecDeque::new(),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            eof: false,
        }
    }

    /// The next line, `Ok(None)` at end of stream. A bad line is `Ok(Some(Err(_)))`:
    /// the stream goes on after it.
    ///
    /// Cancel-safe: dropping the future loses no bytes (decoder state changes only
    /// after a read completes).
    ///
    /// Errors: the underlying read failed.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Result<String, LineError>>> {
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Ok(Some(line));
            }
            if self.eof {
                return Ok(None);
            }
            let n = self.reader.read(&mut self.chunk).await?;
            if n == 0 {
                self.eof = true;
                if let Some(last) = self.decoder.finish() {
                    return Ok(Some(last));
                }
            } else {
                self.ready.extend(self.decoder.push(&self.chunk[..n]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Result<String, LineError> {
        Ok(s.to_owned())
    }

    #[test]
    fn splits_lines_across_arbitrary_chunks() {
        let input = b"{\"a\":1}\n{\"b\":2}\r\n\n\r\n{\"c\":3}\n";
        for chunk in 1..input.len() {
            let mut d = LineDecoder::new(64);
            let mut got = Vec::new();
            for part in input.chunks(chunk) {
                got.extend(d.push(part));
            }
            assert_eq!(
                got,
                vec![ok("{\"a\":1}"), ok("{\"b\":2}"), ok("{\"c\":3}")],
                "chunk {chunk}"
            );
            assert_eq!(d.finish(), None);
        }
    }

    #[test]
    fn over_long_line_is_reported_once_then_skipped() {
        let mut d = LineDecoder::new(8);
        let mut got = Vec::new();
        got.extend(d.push(b"0123456789"));
        assert!(d.buffered() <= 9);
        got.extend(d.push(b"abcdefghijklmnop"));
        got.extend(d.push(b"qrst\nok\n"));
        assert_eq!(got, vec![Err(LineError::TooLong { limit: 8 }), ok("ok")]);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn limit_is_exact_and_excludes_the_terminator() {
        let mut d = LineDecoder::new(4);
        assert_eq!(
            d.push(b"abcd\r\nabcd\nabcde\n"),
            vec![ok("abcd"), ok("abcd"), Err(LineError::TooLong { limit: 4 })]
        );
        // `max_line + 1` bytes without `\r` is too long even when the newline comes later.
        assert_eq!(d.push(b"abcde"), vec![]);
        assert_eq!(
            d.push(b"\nx\n"),
            vec![Err(LineError::TooLong { limit: 4 }), ok("x")]
        );
    }

    #[test]
    fn invalid_utf8_is_an_error_and_the_stream_goes_on() {
        let mut d = LineDecoder::new(64);
        assert_eq!(
            d.push(b"ab\xffcd\n\xc3\xa9\n"),
            vec![Err(LineError::InvalidUtf8 { valid_up_to: 2 }), ok("\u{e9}")]
        );
        // A multi-byte character split across pushes is fine.
        assert_eq!(d.push(b"\xc3"), vec![]);
        assert_eq!(d.push(b"\xa9\n"), vec![ok("\u{e9}")]);
    }

    #[test]
    fn finish_returns_an_unterminated_last_line() {
        let mut d = LineDecoder::new(64);
        assert_eq!(d.push(b"a\nb"), vec![ok("a")]);
        assert_eq!(d.finish(), Some(ok("b")));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn encode_is_one_line_even_for_hostile_strings() {
        let nasty = "line1\nline2\r\n\u{2028}\u{2029}\u{0}\u{1b}[31m\"\\";
        let v = serde_json::json!({ "text": nasty, "list": [nasty, {"k\n": nasty}] });
        let bytes = encode(&v).unwrap();
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(bytes.last(), Some(&b'\n'));
        let mut d = LineDecoder::default();
        let lines = d.push(&bytes);
        assert_eq!(lines.len(), 1);
        let back: serde_json::Value = serde_json::from_str(lines[0].as_ref().unwrap()).unwrap();
        assert_eq!(back, v);
    }

    #[tokio::test]
    async fn line_reader_over_a_stream() {
        let (mut a, b) = tokio::io::duplex(7);
        let writer = tokio::spawn(async move {
            a.write_all(b"first\r\n0123456789012345678901234567890\nsecond\nlast")
                .await
                .unwrap();
        });
        let mut r = LineReader::with_max_line(b, 16);
        assert_eq!(r.next_line().await.unwrap(), Some(ok("first")));
        assert_eq!(
            r.next_line().await.unwrap(),
            Some(Err(LineError::TooLong { limit: 16 }))
        );
        assert_eq!(r.next_line().await.unwrap(), Some(ok("second")));
        writer.await.unwrap();
        assert_eq!(r.next_line().await.unwrap(), Some(ok("last")));
        assert_eq!(r.next_line().await.unwrap(), None);
        assert_eq!(r.next_line().await.unwrap(), None);
    }
}

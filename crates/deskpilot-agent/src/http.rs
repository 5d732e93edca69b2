//! JSON over HTTP to a model endpoint, with a per-request timeout and bounded retries.
//!
//! A request is retried on HTTP 429, any 5xx and connection failures, at most
//! `max_retries` times, waiting 200 ms × 2^n (or the server's `Retry-After`, capped at
//! 5 s). A request that times out is not retried: the run's time stays bounded by
//! `timeout_ms` per step. A model call is a read; desktop actions never go through
//! here. Blocking `ureq` calls run on tokio's blocking pool.

use std::time::Duration;

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use serde_json::Value;

/// Longest response body read: 4 MiB.
const MAX_BODY_BYTES: u64 = 4 * 1024 * 1024;
/// First retry delay; doubled per retry.
const BACKOFF_BASE_MS: u64 = 200;
/// Longest `Retry-After` honoured.
const MAX_RETRY_AFTER_MS: u64 = 5_000;
/// Chars of an error body quoted in a message.
const ERROR_SNIPPET_CHARS: usize = 300;

/// A client for one endpoint.
#[derive(Clone)]
pub(crate) struct HttpClient {
    agent: ureq::Agent,
    timeout_ms: u64,
    max_retries: u32,
}

/// How one attempt ended.
enum Attempt {
    Done(Value),
    /// Worth another try; the delay the server asked for, if any.
    Retry {
        why: String,
        after_ms: Option<u64>,
    },
    Fail(ComputerError),
}

impl HttpClient {
    /// A client for requests to `endpoint`. Proxies come from the environment
    /// (`HTTPS_PROXY`, `NO_PROXY`, …), except for a loopback endpoint (a local model
    /// server), which is always reached directly.
    pub(crate) fn new(endpoint: &str, timeout_ms: u64, max_retries: u32) -> HttpClient {
        let mut cfg = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(timeout_ms)))
            .http_status_as_error(false)
            .user_agent(concat!("deskpilot/", env!("CARGO_PKG_VERSION")));
        if is_loopback(endpoint) {
            cfg = cfg.proxy(None);
        }
        // macOS builds ureq with the system's TLS only (no rustls): select it, with
        // the keychain's trusted roots (docs/ARCHITECTURE.md §2).
        #[cfg(target_os = "macos")]
        {
            use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
            cfg = cfg.tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::NativeTls)
                    .root_certs(RootCerts::PlatformVerifier)
                    .build(),
            );
        }
        let agent: ureq::Agent = cfg.build().into();
        HttpClient {
            agent,
            timeout_ms,
            max_retries,
        }
    }

    /// POSTs `body` as JSON to `url` with `headers` and returns the JSON answer.
    ///
    /// Errors: `COMPUTER_TIMEOUT` naming the endpoint; `COMPUTER_NO_MODEL_BINDING`
    /// for 401/403/404 (key refused, unknown model or path); `COMPUTER_INTERNAL` for
    /// other 4xx, 429/5xx/connection failures left after the retries, or a body that
    /// is not JSON. Header values (the key) never appear in a message.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<Value> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| ComputerError::new(ErrorCode::Internal, format!("cannot encode: {e}")))?;
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect();
        let mut attempt = 0u32;
        loop {
            let agent = self.agent.clone();
            let u = url.to_string();
            let h = headers.clone();
            let b = bytes.clone();
            let timeout_ms = self.timeout_ms;
            let outcome = tokio::task::spawn_blocking(move || once(&agent, &u, &h, b, timeout_ms))
                .await
                .map_err(|e| {
                    ComputerError::new(
                        ErrorCode::Internal,
                        format!("model request task failed: {e}"),
                    )
                })?;
            match outcome {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry { why, after_ms } => {
                    if attempt >= self.max_retries {
                        return Err(ComputerError::new(
                            ErrorCode::Internal,
                            format!(
                                "the model endpoint {url} failed after {} attempt{}: {why}",
                                attempt + 1,
                                if attempt == 0 { "" } else { "s" }
                            ),
                        ));
                    }
                    let backoff = BACKOFF_BASE_MS << attempt.min(10);
                    let wait = after_ms.map_or(backoff, |a| a.min(MAX_RETRY_AFTER_MS));
                    tracing::debug!(url, attempt, wait, why = %why, "retrying model request");
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    attempt += 1;
                }
            }
        }
    }
}

/// Whether `url`'s host is `localhost`, `127.x.x.x` or `[::1]`.
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn snippet(text: &str) -> String {
    let cut: String = text.chars().take(ERROR_SNIPPET_CHARS).collect();
    deskpilot_core::sanitize::one_line(cut.trim())
}

/// `Retry-After` in ms: delta-seconds only (an HTTP date is ignored).
fn retry_after_ms(v: Option<&str>) -> Option<u64> {
    v?.trim()
        .parse::<u64>()
        .ok()
        .map(|s| s.saturating_mul(1000))
}

fn is_timeout(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ),
        _ => false,
    }
}

fn timeout_error(url: &str, timeout_ms: u64) -> ComputerError {
    ComputerError::new(
        ErrorCode::Timeout,
        format!(
            "the model endpoint {url} did not answer within {timeout_ms} ms (model.timeout_ms); a slow local model may need `deskpilot config set model.timeout_ms 120000`"
        ),
    )
    .with_detail(serde_json::json!({ "endpoint": url, "timeout_ms": timeout_ms }))
}

fn once(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
    timeout_ms: u64,
) -> Attempt {
    let mut req = agent.post(url).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let mut resp = match req.send(&body[..]) {
        Ok(r) => r,
        Err(e) if is_timeout(&e) => return Attempt::Fail(timeout_error(url, timeout_ms)),
        Err(
            e @ (ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound),
        ) => {
            return Attempt::Retry {
                why: format!("cannot connect ({e})"),
                after_ms: None,
            };
        }
        Err(e) => {
            return Attempt::Fail(ComputerError::new(
                ErrorCode::Internal,
                format!("the model request to {url} failed: {e}"),
            ));
        }
    };
    let status = resp.status().as_u16();
    let after = retry_after_ms(
        resp.headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
    );
    let text = match resp
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
    {
        Ok(t) => t,
        Err(e) if is_timeout(&e) => return Attempt::Fail(timeout_error(url, timeout_ms)),
        Err(e) if status >= 500 || status == 429 => {
            return Attempt::Retry {
                why: format!("HTTP {status} ({e})"),
                after_ms: after,
            };
        }
        Err(e) => {
            return Attempt::Fail(ComputerError::new(
                ErrorCode::Internal,
                format!("cannot read the answer of {url} (HTTP {status}): {e}"),
            ));
        }
    };
    match status {
        200..=299 => match serde_json::from_str(&text) {
            Ok(v) => Attempt::Done(v),
            Err(e) => Attempt::Fail(ComputerError::new(
                ErrorCode::Internal,
                format!(
                    "the model endpoint {url} answered HTTP {status} with a body that is not JSON ({e}): {}",
                    snippet(&text)
                ),
            )),
        },
        429 | 500..=599 => Attempt::Retry {
            why: format!("HTTP {status}: {}", snippet(&text)),
            after_ms: after,
        },
        401 | 403 | 404 => Attempt::Fail(ComputerError::new(
            ErrorCode::NoModelBinding,
            format!(
                "the model endpoint {url} refused the binding (HTTP {status}: {}); check model.endpoint, model.model and the key named by model.api_key_env",
                snippet(&text)
            ),
        )),
        _ => Attempt::Fail(ComputerError::new(
            ErrorCode::Internal,
            format!(
                "the model endpoint {url} refused the request (HTTP {status}: {})",
                snippet(&text)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_endpoints_are_recognised() {
        for u in [
            "http://127.0.0.1:11434/v1",
            "http://localhost:8080",
            "http://LOCALHOST/v1",
            "http://[::1]:8000/v1",
            "http://127.1.2.3:9",
        ] {
            assert!(is_loopback(u), "{u}");
        }
        for u in [
            "https://api.openai.com/v1",
            "http://10.0.0.5:8000",
            "http://localhost.example.com",
            "http://user@example.com",
        ] {
            assert!(!is_loopback(u), "{u}");
        }
    }

    #[test]
    fn retry_after_takes_delta_seconds_only() {
        assert_eq!(retry_after_ms(Some("2")), Some(2000));
        assert_eq!(retry_after_ms(Some(" 0 ")), Some(0));
        assert_eq!(retry_after_ms(Some("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after_ms(None), None);
    }
}

//! Who may call the HTTP endpoint (docs/ARCHITECTURE.md §9 "Transports"): a loopback
//! port is open to every user of the machine, so every request must carry the
//! server's bearer token (`Authorization: Bearer TOKEN`, RFC 6750), and a request a
//! browser sends on behalf of a web page (an `Origin` header that is not loopback) is
//! refused whatever it carries. On a Unix socket the kernel says who connected
//! (`SO_PEERCRED`): only this user's processes are served.

use std::path::{Path, PathBuf};

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode, header};
use subtle::ConstantTimeEq;

/// Bytes of randomness in a token: 32 (256 bits), printed as 64 hex digits.
const TOKEN_BYTES: usize = 32;

/// The bearer token HTTP clients must send.
#[derive(Clone)]
pub struct HttpAuth {
    token: String,
}

impl std::fmt::Debug for HttpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpAuth { token: <hidden> }")
    }
}

impl HttpAuth {
    /// Authentication with this token (at least 32 characters).
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` for a shorter token.
    pub fn new(token: impl Into<String>) -> Result<HttpAuth> {
        let token = token.into().trim().to_owned();
        if token.len() < 32 {
            return Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                "the MCP HTTP token must be at least 32 characters; remove the token file to get a new one",
            ));
        }
        Ok(HttpAuth { token })
    }

    /// The token, to show the user who started the server.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The token kept in `path` (mode 0600): read when the file exists, else a new
    /// random one written there, so a client configured once keeps working across
    /// restarts. Remove the file to rotate it. Only the file is deskpilot's: a
    /// missing directory is made (0700), an existing one is used as it is when it
    /// is this user's and nobody else can write to it
    /// ([`deskpilot_os::check_own_dir`]), never re-permissioned; the file must be
    /// this user's own regular file.
    ///
    /// Errors: `COMPUTER_OS_PERMISSION_MISSING` when the directory or the file is
    /// not this user's own; `COMPUTER_INTERNAL` when the file cannot be read or written or
    /// the system has no randomness; `COMPUTER_INVALID_ARGUMENT` for a file whose
    /// token is too short.
    pub fn from_file(path: &Path) -> Result<HttpAuth> {
        let cannot_use = |what: &Path, e: std::io::Error| {
            let code = if e.kind() == std::io::ErrorKind::PermissionDenied {
                ErrorCode::OsPermissionMissing
            } else {
                ErrorCode::Internal
            };
            ComputerError::new(code, format!("cannot use {}: {e}", what.display()))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A directory made here is private; one that exists is checked, and
            // left as it is (a shared directory is not closed to its other users).
            let made = !dir.exists();
            if made {
                deskpilot_os::ensure_private_dir(dir).map_err(|e| cannot_use(dir, e))?;
            } else {
                deskpilot_os::check_own_dir(dir).map_err(|e| cannot_use(dir, e))?;
            }
        }
        #[cfg(unix)]
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            use std::os::unix::fs::MetadataExt;
            if !meta.file_type().is_file() || meta.uid() != deskpilot_os::current_uid() {
                return Err(cannot_use(
                    path,
                    std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        "is not a regular file of this user's own (a symlink, a directory, another user's); remove it",
                    ),
                ));
            }
        }
        match std::fs::read_to_string(path) {
            Ok(t) => HttpAuth::new(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let token = deskpilot_os::random_hex(TOKEN_BYTES).map_err(|e| {
                    ComputerError::internal(format!("no randomness for the MCP token: {e}"))
                })?;
                deskpilot_os::write_private_atomic(path, format!("{token}\n").as_bytes()).map_err(
                    |e| ComputerError::internal(format!("cannot write {}: {e}", path.display())),
                )?;
                HttpAuth::new(token)
            }
            Err(e) => Err(ComputerError::internal(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    /// The refusal of `req`, if any: a non-loopback `Origin` (403), then a missing
    /// or wrong bearer token (401 with `WWW-Authenticate: Bearer`).
    pub fn check<B>(
        &self,
        req: &Request<B>,
    ) -> Option<Response<BoxBody<Bytes, std::convert::Infallible>>> {
        if let Some(origin) = req.headers().get(header::ORIGIN)
            && !origin.to_str().is_ok_and(loopback_origin)
        {
            return Some(refusal(
                StatusCode::FORBIDDEN,
                "requests from web pages (an Origin that is not loopback) are refused",
            ));
        }
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            // The scheme is case-insensitive (RFC 7235 §2.1).
            .and_then(|v| {
                v.get(..7)
                    .filter(|s| s.eq_ignore_ascii_case("bearer "))
                    .map(|_| &v[7..])
            })
            .map(str::trim)
            .unwrap_or_default();
        if !bool::from(given.as_bytes().ct_eq(self.token.as_bytes())) {
            let mut r = refusal(
                StatusCode::UNAUTHORIZED,
                "send the token the server printed at start (also in its token file) as `Authorization: Bearer TOKEN`",
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"deskpilot\""),
            );
            return Some(r);
        }
        None
    }
}

/// The default token file: `mcp-http.token` in deskpilot's runtime directory.
pub fn default_token_path() -> PathBuf {
    deskpilot_os::runtime_dir().join("mcp-http.token")
}

/// Whether an `Origin` value names a loopback host (`http://127.0.0.1:8765`,
/// `http://localhost`, `http://[::1]:80`).
fn loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or_default()
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// A JSON refusal: `{"error": {"code": "COMPUTER_SCOPE_VIOLATION", "message"}}`.
fn refusal(
    status: StatusCode,
    message: &str,
) -> Response<BoxBody<Bytes, std::convert::Infallible>> {
    let body = serde_json::json!({
        "error": { "code": ErrorCode::ScopeViolation.as_str(), "message": message }
    })
    .to_string();
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().uri("/mcp");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn only_the_token_from_a_loopback_origin_passes() {
        let a = HttpAuth::new("0123456789abcdef0123456789abcdef").unwrap();
        let good = "Bearer 0123456789abcdef0123456789abcdef";
        assert!(a.check(&req(&[("authorization", good)])).is_none());
        assert!(
            a.check(&req(&[
                ("authorization", good),
                ("origin", "http://127.0.0.1:9")
            ]))
            .is_none()
        );
        assert_eq!(
            a.check(&req(&[])).unwrap().status(),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            a.check(&req(&[(
                "authorization",
                "Bearer 0123456789abcdef0123456789abcdeX"
            )]))
            .unwrap()
            .status(),
            StatusCode::UNAUTHORIZED
        );
        for origin in [
            "https://evil.example",
            "http://127.0.0.1.evil.example",
            "null",
        ] {
            assert_eq!(
                a.check(&req(&[("authorization", good), ("origin", origin)]))
                    .unwrap()
                    .status(),
                StatusCode::FORBIDDEN,
                "{origin}"
            );
        }
        assert!(HttpAuth::new("short").is_err());
    }

    /// `--token-file` in a directory the user shares closed that directory to
    /// everyone else (chmod 0700). Only the file is deskpilot's; a directory others
    /// can write to is refused.
    #[cfg(unix)]
    #[test]
    fn a_token_file_leaves_its_directory_as_it_is() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let shared = d.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        let a = HttpAuth::from_file(&shared.join("mcp.token")).unwrap();
        assert_eq!(a.token().len(), 64);
        let mode = std::fs::metadata(&shared).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "the shared directory keeps its mode");
        let mode = std::fs::metadata(shared.join("mcp.token"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);

        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = HttpAuth::from_file(&open.join("mcp.token")).unwrap_err();
        assert_eq!(e.code, ErrorCode::OsPermissionMissing, "{}", e.message);
        let mode = std::fs::metadata(&open).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o777, "refused, not re-permissioned");
        assert!(!open.join("mcp.token").exists());

        let link = d.path().join("link.token");
        std::os::unix::fs::symlink(shared.join("mcp.token"), &link).unwrap();
        let e = HttpAuth::from_file(&link).unwrap_err();
        assert_eq!(e.code, ErrorCode::OsPermissionMissing, "{}", e.message);
    }

    #[test]
    fn a_token_file_is_made_once_and_kept() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run").join("mcp-http.token");
        let a = HttpAuth::from_file(&p).unwrap();
        assert_eq!(a.token().len(), 64);
        let b = HttpAuth::from_file(&p).unwrap();
        assert_eq!(a.token(), b.token());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }
}

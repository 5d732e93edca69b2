//! Printing results: human text or one JSON document on stdout; errors on stderr
//! (human) or stdout (JSON, so scripts read one document either way).

use deskpilot_protocol::ComputerError;
use serde::Serialize;

/// Writes one line to stdout; a closed pipe (`deskpilot … | head`) is not an error
/// worth a panic.
fn out(line: &str) {
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    let _ = writeln!(so, "{line}").and_then(|()| so.flush());
}

/// Prints a successful result: `text` for humans, `{"ok":true, ...value}` for `--json`.
pub fn print_ok<T: Serialize>(json: bool, value: &T, text: &str) {
    if json {
        let mut v = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("ok".into(), serde_json::Value::Bool(true));
        } else {
            v = serde_json::json!({ "ok": true, "result": v });
        }
        out(&serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        let t = text.trim_end();
        if !t.is_empty() {
            out(t);
        }
    }
}

/// Prints a failure with its `COMPUTER_*` code.
pub fn print_error(json: bool, e: &ComputerError) {
    if json {
        let v = serde_json::json!({ "ok": false, "error": e });
        out(&serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        // A message can quote a window or a remote machine: escape sequences in it
        // are shown, never run by the terminal.
        let safe = deskpilot_core::sanitize::multi_line;
        eprintln!("error[{}]: {}", e.code.as_str(), safe(&e.message));
        if let Some(snapshot) = e
            .detail
            .as_ref()
            .and_then(|d| d.get("snapshot"))
            .and_then(|s| s.as_str())
        {
            eprintln!("fresh snapshot:\n{}", safe(snapshot));
        }
    }
}

/// Progress for humans on long work, on stderr (never in JSON mode's stdout).
pub fn progress(json: bool, msg: &str) {
    if !json {
        eprintln!("{msg}");
    }
}

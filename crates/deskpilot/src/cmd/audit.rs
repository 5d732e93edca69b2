//! `deskpilot audit [--tail N]`: the last records of the audit log (grants, rebinds,
//! actions, refusals), one line each. The log never holds typed text, passwords or
//! pixels; see `deskpilot_host::audit`.

use deskpilot_host::audit::{audit_path, format_record, read_tail};

use crate::output::print_ok;
use deskpilot_protocol::Result;

/// Prints the last `tail` records of the audit log, oldest first.
///
/// Errors: `COMPUTER_INTERNAL` when the log exists but cannot be read.
pub fn run(json: bool, tail: usize) -> Result<()> {
    let path = audit_path();
    let exists = path.exists();
    let (records, skipped) = read_tail(&path, tail)?;
    let mut text = String::new();
    if !exists {
        text.push_str(&format!("no audit log yet at {}\n", path.display()));
    } else if records.is_empty() && skipped == 0 {
        text.push_str(&format!("the audit log at {} is empty\n", path.display()));
    } else {
        for r in &records {
            text.push_str(&format_record(r));
            text.push('\n');
        }
        if skipped > 0 {
            text.push_str(&format!(
                "({skipped} malformed line{} skipped in {})\n",
                if skipped == 1 { "" } else { "s" },
                path.display()
            ));
        }
    }
    let doc = serde_json::json!({
        "path": path.display().to_string(),
        "exists": exists,
        "records": records,
        "skipped_malformed": skipped,
    });
    print_ok(json, &doc, &text);
    Ok(())
}

//! deskpilot-tools: the tools that measure deskpilot, kept out of the product's core.
//!
//! [`bench`] measures deskpilot against its peers on real applications in a sandbox
//! of its own (`deskpilot bench`); [`eval`] runs the evaluation suite, each attempt in
//! a fresh sandbox, judged by checkers that read state deskpilot did not write
//! (`deskpilot eval`). Both act on a desktop only through a
//! [`deskpilot_host::Host`], like any other caller (docs/ARCHITECTURE.md §7.11); both
//! return what they measured ([`Shown`]) and leave printing to the binary.

#![forbid(unsafe_code)]

pub mod bench;
pub mod eval;

/// A result as the binary prints it: `value` as one JSON document with `--json`,
/// `text` for a person otherwise.
#[derive(Debug, Clone)]
pub struct Shown {
    pub value: serde_json::Value,
    pub text: String,
}

impl Shown {
    /// `value` serialized (a value that cannot be is `null`), with its text.
    pub fn new<T: serde::Serialize>(value: &T, text: String) -> Shown {
        Shown {
            value: serde_json::to_value(value).unwrap_or(serde_json::Value::Null),
            text,
        }
    }
}

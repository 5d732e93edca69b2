//! Errors of the pure engine.

/// An error from the snapshot engine. Each variant maps to one `COMPUTER_*` code in
/// `deskpilot-protocol`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CoreError {
    /// The ref was never issued for this window, or was issued under an older grant
    /// revision. Maps to `COMPUTER_ELEMENT_NOT_FOUND`.
    #[error("ref {ref_} is not known in this window; observe again to get current refs")]
    UnknownRef { ref_: String },
    /// The element behind a ref is gone and its fingerprint matches several elements
    /// (or none) in the fresh tree. Maps to `COMPUTER_STALE_REF`.
    #[error("ref {ref_} is stale: {candidates} elements now match it; use the fresh snapshot")]
    StaleRef { ref_: String, candidates: usize },
    /// A ref string that is not of the form `eN` / `wN`.
    #[error("{text:?} is not a ref; refs look like e5 or w1")]
    MalformedRef { text: String },
}

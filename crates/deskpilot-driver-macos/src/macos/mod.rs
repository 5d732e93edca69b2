//! The macOS build: AX and CoreGraphics behind [`MacDriver`] (docs/ARCHITECTURE.md §6c).
//!
//! | module | owns |
//! |---|---|
//! | `ax` | every `AXUIElement…` call, [`ax::Elem`], trust, `AXError` mapping (FFI) |
//! | `cg` | displays, the window list, posting CGEvents (FFI) |
//! | `read` | the walk's AX source, window records, the app list, the settle digest |
//! | `driver` | [`MacDriver`]: which call serves which method, focus checks, settling |

mod ax;
mod cg;
mod driver;
mod read;

pub use driver::{MacDriver, MacOptions};

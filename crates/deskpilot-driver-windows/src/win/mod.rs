//! The Windows side of the driver (docs/ARCHITECTURE.md §6b): one file per job.
//!
//! | Module | Owns |
//! |---|---|
//! | `worker` | the COM thread every system call runs on, bounded in time |
//! | `sys` | USER32 and MSAA calls: texts, classes, rectangles, messages with timeouts, `IAccessible` |
//! | `read` | reading a top-level window into `facts::WindowFacts`; listing windows |
//! | `act` | performing a `choose::Method`, and the keyboard and pointer input |
//! | `driver` | `WindowsDriver`: the `Driver` trait wired to the above |
//!
//! Nothing here decides policy.

pub mod act;
pub mod driver;
pub mod read;
pub mod sys;
pub mod worker;

//! Linux implementation (compiled only on Linux).

pub mod atspi;
pub(crate) mod capture;
pub mod clipboard;
pub mod confine;
pub mod desktop;
pub(crate) mod driver;
pub mod hotkey;
pub mod input;
pub(crate) mod ocr;
pub(crate) mod pixels;
pub mod presence;
pub mod sandbox;
pub use driver::LinuxDriver;

//! Linux implementation (compiled only on Linux).

pub mod atspi;
pub mod capture;
pub mod clipboard;
pub mod confine;
pub mod driver;
pub mod hotkey;
pub mod input;
pub mod ocr;
pub mod pixels;
pub mod presence;
pub mod sandbox;
pub use driver::LinuxDriver;

//! Linux implementation (compiled only on Linux).

pub mod atspi;
pub mod confine;
pub mod driver;
pub mod input;
pub mod sandbox;
pub use driver::LinuxDriver;

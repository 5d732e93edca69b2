//! A Wayland-only environment (no DISPLAY, WAYLAND_DISPLAY set) has no synthetic
//! input: `XInput::connect(None)` answers `COMPUTER_INPUT_UNAVAILABLE`.
//!
//! Its own test binary with a single test, because it changes the process
//! environment (not safe while other test threads read it).
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

use deskpilot_driver_linux::input::XInput;
use deskpilot_protocol::ErrorCode;

#[test]
fn wayland_only_session_is_input_unavailable() {
    // SAFETY: this binary runs exactly one test, so no other thread reads the
    // environment while it is changed.
    unsafe {
        std::env::remove_var("DISPLAY");
        std::env::set_var("WAYLAND_DISPLAY", "wayland-0");
    }
    let err = XInput::connect(None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InputUnavailable);
    assert!(err.message.contains("needs X11"), "{}", err.message);
    assert!(
        err.message.contains("WAYLAND_DISPLAY=wayland-0"),
        "{}",
        err.message
    );

    // An explicit display still wins, and an unreachable one is also unavailable.
    let err = XInput::connect(Some(":4077")).unwrap_err();
    assert_eq!(err.code, ErrorCode::InputUnavailable);
    assert!(err.message.contains(":4077"), "{}", err.message);
}

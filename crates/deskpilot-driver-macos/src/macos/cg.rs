//! The CoreGraphics edge: displays, the window server's window list, and posting
//! CGEvents — and nothing else.
//!
//! Owns every `CG…` call. Plans come from [`crate::keyplan`]; this module only turns
//! them into events and posts them at the HID event tap (they reach whatever window
//! has keyboard focus, or lies under the pointer: the driver checks that first). It
//! never chooses what to type or where to click.
#![allow(unsafe_code)]

use deskpilot_protocol::ComputerError;
use objc2_core_foundation::{
    CFArray, CFDictionary, CFNumber, CFRetained, CFString, CFType, CGPoint, CGRect,
};
use objc2_core_graphics::{
    CGDirectDisplayID, CGDisplayBounds, CGDisplayCopyDisplayMode, CGDisplayMode, CGError, CGEvent,
    CGEventField, CGEventFlags, CGEventTapLocation, CGEventType, CGGetActiveDisplayList,
    CGMouseButton, CGRectMakeWithDictionaryRepresentation, CGScrollEventUnit,
    CGWindowListCopyWindowInfo, CGWindowListOption, kCGWindowBounds, kCGWindowLayer,
    kCGWindowOwnerName, kCGWindowOwnerPID,
};

use crate::geometry::{Display, PointsRect, ScreenWindow, mode_scale};
use crate::keyplan::{KeyEvent, MouseEvent, MouseKind, TextStep};
use deskpilot_protocol::Result;

/// Displays listed at most: 16.
const MAX_DISPLAYS: usize = 16;

/// Every active display with its bounds (points) and backing scale factor; the main
/// display first.
pub fn displays() -> Vec<Display> {
    let mut ids: [CGDirectDisplayID; MAX_DISPLAYS] = [0; MAX_DISPLAYS];
    let mut count: u32 = 0;
    // SAFETY: both out-pointers are live locals; the array holds MAX_DISPLAYS ids.
    let err = unsafe { CGGetActiveDisplayList(MAX_DISPLAYS as u32, ids.as_mut_ptr(), &mut count) };
    if err != CGError::Success {
        return Vec::new();
    }
    ids.iter()
        .take(count as usize)
        .map(|&id| {
            let r = CGDisplayBounds(id);
            let mode = CGDisplayCopyDisplayMode(id);
            let scale = mode.as_deref().map_or(1.0, |m| {
                mode_scale(
                    CGDisplayMode::pixel_width(Some(m)),
                    CGDisplayMode::width(Some(m)),
                )
            });
            Display {
                bounds: PointsRect::new(r.origin.x, r.origin.y, r.size.width, r.size.height),
                scale,
            }
        })
        .collect()
}

fn number(d: &CFDictionary<CFString, CFType>, key: &CFString) -> Option<i64> {
    d.get(key)?.downcast::<CFNumber>().ok()?.as_i64()
}

/// The on-screen windows, front to back (`CGWindowListCopyWindowInfo` with
/// `kCGWindowListOptionOnScreenOnly | kCGWindowListExcludeDesktopElements`). Needs
/// no Screen Recording permission: titles are not read here (they come from AX).
pub fn screen_windows() -> Vec<ScreenWindow> {
    let opts = CGWindowListOption::OptionOnScreenOnly | CGWindowListOption::ExcludeDesktopElements;
    let Some(list) = CGWindowListCopyWindowInfo(opts, 0) else {
        return Vec::new();
    };
    // SAFETY: the window list is an array of dictionaries keyed by CFStrings.
    let list: &CFArray<CFDictionary<CFString, CFType>> = unsafe { list.cast_unchecked() };
    // SAFETY: the keys are the framework's constants, read once each.
    let (k_pid, k_layer, k_owner, k_bounds) = unsafe {
        (
            kCGWindowOwnerPID,
            kCGWindowLayer,
            kCGWindowOwnerName,
            kCGWindowBounds,
        )
    };
    list.iter()
        .filter_map(|d| {
            let pid = i32::try_from(number(&d, k_pid)?).ok()?;
            let layer = number(&d, k_layer).unwrap_or(0);
            let owner = d
                .get(k_owner)
                .and_then(|v| v.downcast::<CFString>().ok())
                .map(|s| s.to_string())
                .unwrap_or_default();
            let bounds_dict = d.get(k_bounds)?.downcast::<CFDictionary>().ok()?;
            let mut r = CGRect::default();
            // SAFETY: a bounds dictionary as the window server writes it; `r` is a live
            // local.
            let ok = unsafe { CGRectMakeWithDictionaryRepresentation(Some(&bounds_dict), &mut r) };
            ok.then(|| ScreenWindow {
                pid,
                owner,
                layer,
                bounds: PointsRect::new(r.origin.x, r.origin.y, r.size.width, r.size.height),
            })
        })
        .collect()
}

fn failed(what: &str) -> ComputerError {
    ComputerError::new(
        deskpilot_protocol::ErrorCode::InputUnavailable,
        format!(
            "{what}: CoreGraphics could not create the event (is this process allowed to control the computer? System Settings ▸ Privacy & Security ▸ Accessibility)"
        ),
    )
}

fn post(ev: &CFRetained<CGEvent>) {
    CGEvent::post(CGEventTapLocation::HIDEventTap, Some(ev));
}

/// Posts key events; returns how many were posted.
pub fn post_keys(events: &[KeyEvent]) -> Result<u64> {
    for e in events {
        let ev = CGEvent::new_keyboard_event(None, e.code, e.down)
            .ok_or_else(|| failed("a key event"))?;
        CGEvent::set_flags(Some(&ev), CGEventFlags(e.flags));
        post(&ev);
    }
    Ok(events.len() as u64)
}

/// Types text steps: each Unicode run as a key down and up carrying the string
/// (`CGEventKeyboardSetUnicodeString`), each key step as its key code. Returns the
/// events posted.
pub fn post_text(steps: &[TextStep]) -> Result<u64> {
    let mut sent = 0;
    for s in steps {
        match s {
            TextStep::Unicode(units) => {
                for down in [true, false] {
                    let ev = CGEvent::new_keyboard_event(None, 0, down)
                        .ok_or_else(|| failed("a text event"))?;
                    // SAFETY: `units` is a live slice of its stated length.
                    unsafe {
                        CGEvent::keyboard_set_unicode_string(
                            Some(&ev),
                            units.len() as _,
                            units.as_ptr(),
                        );
                    }
                    post(&ev);
                    sent += 1;
                }
            }
            TextStep::Key(code) => {
                sent += post_keys(&[
                    KeyEvent {
                        code: *code,
                        down: true,
                        flags: 0,
                    },
                    KeyEvent {
                        code: *code,
                        down: false,
                        flags: 0,
                    },
                ])?;
            }
        }
    }
    Ok(sent)
}

/// Posts mouse events (points); returns how many were posted.
pub fn post_mouse(events: &[MouseEvent]) -> Result<u64> {
    for e in events {
        let at = CGPoint { x: e.x, y: e.y };
        let ev = match e.kind {
            MouseKind::Scroll(lines) => {
                CGEvent::new_scroll_wheel_event2(None, CGScrollEventUnit::Line, 1, lines, 0, 0)
            }
            kind => {
                let (ty, button) = match kind {
                    MouseKind::Move => (CGEventType::MouseMoved, CGMouseButton::Left),
                    MouseKind::LeftDown => (CGEventType::LeftMouseDown, CGMouseButton::Left),
                    MouseKind::LeftUp => (CGEventType::LeftMouseUp, CGMouseButton::Left),
                    MouseKind::LeftDragged => (CGEventType::LeftMouseDragged, CGMouseButton::Left),
                    MouseKind::RightDown => (CGEventType::RightMouseDown, CGMouseButton::Right),
                    MouseKind::RightUp | MouseKind::Scroll(_) => {
                        (CGEventType::RightMouseUp, CGMouseButton::Right)
                    }
                };
                CGEvent::new_mouse_event(None, ty, at, button)
            }
        }
        .ok_or_else(|| failed("a mouse event"))?;
        if e.clicks > 0 {
            CGEvent::set_integer_value_field(
                Some(&ev),
                CGEventField::MouseEventClickState,
                e.clicks,
            );
        }
        post(&ev);
    }
    Ok(events.len() as u64)
}

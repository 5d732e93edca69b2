//! The Accessibility API edge: every `AXUIElement…` call of the driver, and nothing
//! else.
//!
//! Owns [`Elem`] (a retained `AXUIElementRef` that may cross threads), the conversion
//! of attribute values to [`AxValue`] at the moment they are copied, the trust check,
//! and the mapping of `AXError` codes to [`ReadError`] and `COMPUTER_*` errors. The
//! driver sets the process-wide messaging timeout to [`MESSAGING_TIMEOUT_S`]
//! ([`set_global_timeout`]) and an application's first probe to [`PROBE_TIMEOUT_S`],
//! so a call into a frozen application returns `kAXErrorCannotComplete` instead of
//! hanging. It makes no decision about what to read or do.
#![allow(unsafe_code)]

use std::hash::{Hash, Hasher};
use std::ptr::NonNull;

use deskpilot_protocol::{ComputerError, ErrorCode};
use objc2_application_services::{
    AXCopyMultipleAttributeOptions, AXError, AXIsProcessTrustedWithOptions, AXUIElement,
    AXValue as CfAxValue, AXValueType, kAXTrustedCheckOptionPrompt,
};
use objc2_core_foundation::{
    CFArray, CFBoolean, CFDictionary, CFIndex, CFNumber, CFRetained, CFString, CFType, CGPoint,
    CGRect, CGSize,
};

use crate::geometry::PointsRect;
use crate::values::AxValue;
use crate::walk::ReadError;

/// Seconds an AX call into one application may take before it fails with
/// `kAXErrorCannotComplete`: 1.5, the Linux driver's per-call D-Bus timeout.
pub const MESSAGING_TIMEOUT_S: f32 = 1.5;

/// Seconds the first probe of an application may take while listing applications:
/// 0.7, the Linux driver's `FIRST_PROBE`; a frozen app costs at most this per list.
pub const PROBE_TIMEOUT_S: f32 = 0.7;

/// What to do when the process is not trusted for Accessibility.
pub const PERMISSION_REMEDY: &str = "deskpilot is not trusted for Accessibility on this Mac. Open System Settings ▸ Privacy & Security ▸ Accessibility, add (or switch on) the app that runs deskpilot — the terminal (Terminal, iTerm2) or the MCP client — then quit and restart that app";

/// An `AXError` code that is not success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AxErr(pub i32);

impl AxErr {
    fn is(self, e: AXError) -> bool {
        self.0 == e.0
    }

    /// The attribute or action does not exist on this element, or has no value.
    pub fn is_absent(self) -> bool {
        self.is(AXError::NoValue)
            || self.is(AXError::AttributeUnsupported)
            || self.is(AXError::ActionUnsupported)
            || self.is(AXError::ParameterizedAttributeUnsupported)
    }

    /// The element is gone.
    pub fn is_gone(self) -> bool {
        self.is(AXError::InvalidUIElement)
    }

    /// The application did not answer in time (or at all).
    pub fn is_not_responding(self) -> bool {
        self.is(AXError::CannotComplete)
    }

    /// As a walk error, naming `what` was called.
    pub fn to_read(self, what: &str) -> ReadError {
        if self.is_gone() {
            ReadError::Gone
        } else if self.is_not_responding() {
            ReadError::NotResponding {
                what: what.to_owned(),
            }
        } else {
            ReadError::Failed(format!("{what} failed with AXError {}", self.0))
        }
    }

    /// As a `COMPUTER_*` error, naming `what` was called.
    pub fn to_error(self, what: &str) -> ComputerError {
        if self.is_gone() {
            ComputerError::new(
                ErrorCode::ElementNotFound,
                format!("{what}: the element no longer exists; observe again to get current refs"),
            )
        } else if self.is_not_responding() {
            not_responding(what)
        } else if self.is(AXError::APIDisabled) {
            ComputerError::new(ErrorCode::OsPermissionMissing, PERMISSION_REMEDY)
        } else if self.is_absent() {
            ComputerError::new(
                ErrorCode::ElementNotActionable,
                format!(
                    "{what}: the element does not support it (AXError {})",
                    self.0
                ),
            )
        } else {
            ComputerError::internal(format!("{what} failed with AXError {}", self.0))
        }
    }
}

/// `COMPUTER_NOT_RESPONDING` for a call that timed out.
pub fn not_responding(what: &str) -> ComputerError {
    ComputerError::new(
        ErrorCode::NotResponding,
        format!(
            "{what}: the application did not answer within {MESSAGING_TIMEOUT_S} s (AXUIElementSetMessagingTimeout); it is busy or frozen. Wait and observe again"
        ),
    )
}

fn check(e: AXError) -> Result<(), AxErr> {
    if e.0 == AXError::Success.0 {
        Ok(())
    } else {
        Err(AxErr(e.0))
    }
}

/// Whether this process is trusted for Accessibility (`AXIsProcessTrustedWithOptions`);
/// with `prompt`, macOS shows its own dialog offering to open the settings.
pub fn is_trusted(prompt: bool) -> bool {
    // SAFETY: the key is the framework's own constant, the value a CFBoolean, as the
    // function documents; the dictionary outlives the call.
    unsafe {
        let key: &CFString = kAXTrustedCheckOptionPrompt;
        let value = CFBoolean::new(prompt);
        let dict = CFDictionary::<CFString, CFBoolean>::from_slices(&[key], &[value]);
        AXIsProcessTrustedWithOptions(Some(dict.as_opaque()))
    }
}

/// Sets the messaging timeout of every element this process uses
/// (`AXUIElementSetMessagingTimeout` on the system-wide element: the global value;
/// a timeout set on one element covers only that element).
pub fn set_global_timeout(timeout_s: f32) {
    // SAFETY: creates the system-wide element and stores a number on it.
    unsafe {
        let _ = AXUIElement::new_system_wide().set_messaging_timeout(timeout_s);
    }
}

/// A retained `AXUIElementRef`. Equality and hashing are `CFEqual`/`CFHash`: two
/// references to the same element are equal.
#[derive(Clone)]
pub struct Elem(CFRetained<AXUIElement>);

// SAFETY: an AXUIElementRef is an immutable CF object; CFRetain/CFRelease are
// thread-safe, and the Accessibility client API may be called from any thread (the
// calls are Mach messages to the target process; no run loop is involved unless an
// AXObserver is, which this driver does not use).
unsafe impl Send for Elem {}
// SAFETY: as above; no method takes `&mut`.
unsafe impl Sync for Elem {}

impl PartialEq for Elem {
    fn eq(&self, other: &Self) -> bool {
        *self.0 == *other.0
    }
}

impl Eq for Elem {}

impl Hash for Elem {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (*self.0).hash(state);
    }
}

impl std::fmt::Debug for Elem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AXUIElement")
    }
}

/// The `CFArray` of attribute names for one batched read, built once per read.
pub struct Names(CFRetained<CFArray<CFString>>);

impl Names {
    pub fn new(names: &[&str]) -> Names {
        let strings: Vec<CFRetained<CFString>> =
            names.iter().map(|n| CFString::from_str(n)).collect();
        let refs: Vec<&CFString> = strings.iter().map(|s| &**s).collect();
        Names(CFArray::<CFString>::from_objects(&refs))
    }
}

// SAFETY: an immutable CFArray of CFStrings, never mutated after creation.
unsafe impl Send for Names {}
// SAFETY: as above.
unsafe impl Sync for Names {}

fn cfstr(s: &str) -> CFRetained<CFString> {
    CFString::from_str(s)
}

/// Converts one attribute value; `None` for `kCFNull` and for an `AXValue` holding an
/// `AXError` (what `AXUIElementCopyMultipleAttributeValues` puts in place of a
/// missing attribute).
pub fn convert(v: &CFType) -> Option<AxValue> {
    if let Some(s) = v.downcast_ref::<CFString>() {
        return Some(AxValue::Text(s.to_string()));
    }
    if let Some(b) = v.downcast_ref::<CFBoolean>() {
        return Some(AxValue::Bool(b.as_bool()));
    }
    if let Some(n) = v.downcast_ref::<CFNumber>() {
        return if n.is_float_type() {
            n.as_f64().map(AxValue::Float)
        } else {
            n.as_i64().map(AxValue::Int)
        };
    }
    if let Some(a) = v.downcast_ref::<CfAxValue>() {
        // SAFETY: each out-pointer is a live local of the type the AXValue type names.
        unsafe {
            let ty = a.r#type();
            if ty == AXValueType::CGPoint {
                let mut p = CGPoint { x: 0.0, y: 0.0 };
                if a.value(ty, NonNull::from(&mut p).cast()) {
                    return Some(AxValue::Point { x: p.x, y: p.y });
                }
            } else if ty == AXValueType::CGSize {
                let mut s = CGSize {
                    width: 0.0,
                    height: 0.0,
                };
                if a.value(ty, NonNull::from(&mut s).cast()) {
                    return Some(AxValue::Size {
                        width: s.width,
                        height: s.height,
                    });
                }
            } else if ty == AXValueType::CGRect {
                let mut r = CGRect::default();
                if a.value(ty, NonNull::from(&mut r).cast()) {
                    return Some(AxValue::Rect(PointsRect::new(
                        r.origin.x,
                        r.origin.y,
                        r.size.width,
                        r.size.height,
                    )));
                }
            } else if ty == AXValueType::AXError {
                return None;
            }
        }
        return Some(AxValue::Other("AXValue"));
    }
    if v.downcast_ref::<AXUIElement>().is_some() {
        return Some(AxValue::Other("element"));
    }
    if v.downcast_ref::<CFArray>().is_some() {
        return Some(AxValue::Other("array"));
    }
    Some(AxValue::Other("value"))
}

impl Elem {
    /// The application element of process `pid`, with the messaging timeout set
    /// (`timeout_s`).
    pub fn application(pid: i32, timeout_s: f32) -> Elem {
        // SAFETY: AXUIElementCreateApplication accepts any pid (a dead one yields an
        // element whose calls fail); the timeout call only stores a number.
        unsafe {
            let e = AXUIElement::new_application(pid);
            let _ = e.set_messaging_timeout(timeout_s);
            Elem(e)
        }
    }

    /// Sets this element's messaging timeout, seconds.
    pub fn set_timeout(&self, timeout_s: f32) {
        // SAFETY: only stores a number on the element.
        let _ = unsafe { self.0.set_messaging_timeout(timeout_s) };
    }

    /// The raw value of an attribute; `Ok(None)` when absent.
    fn raw(&self, name: &str) -> Result<Option<CFRetained<CFType>>, AxErr> {
        let attr = cfstr(name);
        let mut out: *const CFType = std::ptr::null();
        // SAFETY: the out-pointer is a live local; on success it holds a +1 reference
        // (the Copy rule), which `from_raw` takes over.
        let err = unsafe { self.0.copy_attribute_value(&attr, NonNull::from(&mut out)) };
        match check(err) {
            Ok(()) => Ok(NonNull::new(out.cast_mut())
                // SAFETY: a +1 reference returned by a Copy function.
                .map(|p| unsafe { CFRetained::from_raw(p) })),
            Err(e) if e.is_absent() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// An attribute converted to an [`AxValue`]; `Ok(None)` when absent.
    pub fn value(&self, name: &str) -> Result<Option<AxValue>, AxErr> {
        Ok(self.raw(name)?.and_then(|v| convert(&v)))
    }

    /// An attribute whose value is an element (`AXFocusedWindow`, `AXParent`).
    pub fn element(&self, name: &str) -> Result<Option<Elem>, AxErr> {
        Ok(self
            .raw(name)?
            .and_then(|v| v.downcast::<AXUIElement>().ok())
            .map(Elem))
    }

    /// An attribute whose value is an array of elements (`AXWindows`).
    pub fn elements(&self, name: &str) -> Result<Vec<Elem>, AxErr> {
        let Some(v) = self.raw(name)? else {
            return Ok(Vec::new());
        };
        let Ok(arr) = v.downcast::<CFArray>() else {
            return Ok(Vec::new());
        };
        Ok(elements_of(&arr))
    }

    /// The number of values of an array attribute (`AXChildren`), without copying
    /// them.
    pub fn count(&self, name: &str) -> Result<u64, AxErr> {
        let attr = cfstr(name);
        let mut n: CFIndex = 0;
        // SAFETY: the out-pointer is a live local.
        let err = unsafe { self.0.attribute_value_count(&attr, NonNull::from(&mut n)) };
        match check(err) {
            Ok(()) => Ok(u64::try_from(n).unwrap_or(0)),
            Err(e) if e.is_absent() => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Values `start .. start + max` of an array attribute of elements.
    pub fn range(&self, name: &str, start: u64, max: u64) -> Result<Vec<Elem>, AxErr> {
        let attr = cfstr(name);
        let mut out: *const CFArray = std::ptr::null();
        let (start, max) = (
            CFIndex::try_from(start).unwrap_or(CFIndex::MAX),
            CFIndex::try_from(max).unwrap_or(CFIndex::MAX),
        );
        // SAFETY: the out-pointer is a live local; a +1 array on success.
        let err = unsafe {
            self.0
                .copy_attribute_values(&attr, start, max, NonNull::from(&mut out))
        };
        match check(err) {
            Ok(()) => Ok(match NonNull::new(out.cast_mut()) {
                Some(p) => {
                    // SAFETY: a +1 reference returned by a Copy function.
                    let arr: CFRetained<CFArray> = unsafe { CFRetained::from_raw(p) };
                    elements_of(&arr)
                }
                None => Vec::new(),
            }),
            Err(e) if e.is_absent() => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// One batched read of `names` (`AXUIElementCopyMultipleAttributeValues`), values
    /// in the order of the names; an absent attribute is `None`.
    pub fn multiple(&self, names: &Names) -> Result<Vec<Option<AxValue>>, AxErr> {
        let mut out: *const CFArray = std::ptr::null();
        // SAFETY: the names are a CFArray of CFStrings; the out-pointer is a live
        // local holding a +1 array on success.
        let err = unsafe {
            self.0.copy_multiple_attribute_values(
                names.0.as_opaque(),
                AXCopyMultipleAttributeOptions::empty(),
                NonNull::from(&mut out),
            )
        };
        check(err)?;
        let Some(p) = NonNull::new(out.cast_mut()) else {
            return Ok(Vec::new());
        };
        // SAFETY: a +1 reference returned by a Copy function.
        let arr: CFRetained<CFArray> = unsafe { CFRetained::from_raw(p) };
        // SAFETY: the array holds CF objects (values, or AXValues holding errors).
        let typed: &CFArray<CFType> = unsafe { arr.cast_unchecked() };
        Ok(typed.iter().map(|v| convert(&v)).collect())
    }

    /// `AXUIElementCopyActionNames`.
    pub fn actions(&self) -> Result<Vec<String>, AxErr> {
        let mut out: *const CFArray = std::ptr::null();
        // SAFETY: the out-pointer is a live local; a +1 array on success.
        let err = unsafe { self.0.copy_action_names(NonNull::from(&mut out)) };
        match check(err) {
            Ok(()) => {}
            Err(e) if e.is_absent() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        }
        let Some(p) = NonNull::new(out.cast_mut()) else {
            return Ok(Vec::new());
        };
        // SAFETY: a +1 reference returned by a Copy function.
        let arr: CFRetained<CFArray> = unsafe { CFRetained::from_raw(p) };
        // SAFETY: action names are CFStrings.
        let typed: &CFArray<CFString> = unsafe { arr.cast_unchecked() };
        Ok(typed.iter().map(|s| s.to_string()).collect())
    }

    /// `AXUIElementPerformAction`.
    pub fn perform(&self, action: &str) -> Result<(), AxErr> {
        let a = cfstr(action);
        // SAFETY: a valid element and action name.
        check(unsafe { self.0.perform_action(&a) })
    }

    /// `AXUIElementIsAttributeSettable`; false when the attribute is absent.
    pub fn settable(&self, name: &str) -> Result<bool, AxErr> {
        let attr = cfstr(name);
        let mut b: u8 = 0;
        // SAFETY: the out-pointer is a live local (`Boolean` is a byte).
        let err = unsafe {
            self.0
                .is_attribute_settable(&attr, NonNull::from(&mut b).cast())
        };
        match check(err) {
            Ok(()) => Ok(b != 0),
            Err(e) if e.is_absent() => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn set(&self, name: &str, value: &CFType) -> Result<(), AxErr> {
        let attr = cfstr(name);
        // SAFETY: a valid element, attribute name and CF value.
        check(unsafe { self.0.set_attribute_value(&attr, value) })
    }

    /// Sets a boolean attribute (`AXFocused`, `AXSelected`, `AXMain`, …).
    pub fn set_bool(&self, name: &str, value: bool) -> Result<(), AxErr> {
        self.set(name, CFBoolean::new(value))
    }

    /// Sets a string attribute (`AXValue`, `AXSelectedText`).
    pub fn set_text(&self, name: &str, value: &str) -> Result<(), AxErr> {
        self.set(name, &cfstr(value))
    }

    /// Sets a numeric attribute (`AXValue` of a slider).
    pub fn set_number(&self, name: &str, value: f64) -> Result<(), AxErr> {
        self.set(name, &CFNumber::new_f64(value))
    }
}

fn elements_of(arr: &CFArray) -> Vec<Elem> {
    // SAFETY: read only through `downcast`, which checks each value's type.
    let typed: &CFArray<CFType> = unsafe { arr.cast_unchecked() };
    typed
        .iter()
        .filter_map(|v| v.downcast::<AXUIElement>().ok())
        .map(Elem)
        .collect()
}

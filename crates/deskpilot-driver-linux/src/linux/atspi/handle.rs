//! AT-SPI object references and their [`Handle`] text form.
//!
//! Owns the one format of a Linux handle, `"<bus name>|<object path>"` (for example
//! `":1.9|/org/a11y/atspi/accessible/614"`), and nothing else. It never talks to the
//! bus: whether the object still exists is for the caller to find out.

use deskpilot_core::Handle;
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// The registry daemon's well-known name; its root object lists the applications.
pub const REGISTRY_BUS: &str = "org.a11y.atspi.Registry";
/// Path of the desktop root (on the registry) and of every application's root.
pub const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";
/// The path an application's bridge uses for "no object".
pub const NULL_PATH: &str = "/org/a11y/atspi/null";

/// One accessible object: the unique bus name of its application and its object path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjRef {
    /// Unique bus name on the accessibility bus (`:1.9`).
    pub bus: String,
    /// D-Bus object path (`/org/a11y/atspi/accessible/614`).
    pub path: String,
}

impl ObjRef {
    /// A reference from a bus name and an object path.
    pub fn new(bus: impl Into<String>, path: impl Into<String>) -> Self {
        ObjRef {
            bus: bus.into(),
            path: path.into(),
        }
    }

    #[cfg(test)]
    /// The application root of this object's bus.
    pub fn app_root(&self) -> ObjRef {
        ObjRef::new(self.bus.clone(), ROOT_PATH)
    }

    /// True for the bridge's "no object" reference (empty bus name or the null path).
    pub fn is_null(&self) -> bool {
        self.bus.is_empty() || self.path == NULL_PATH || self.path.is_empty()
    }

    /// The handle text, `"<bus>|<path>"`.
    pub fn to_handle(&self) -> Handle {
        Handle::new(format!("{}|{}", self.bus, self.path))
    }

    /// Parses a handle made by [`ObjRef::to_handle`].
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` when the text is not of that form (a handle
    /// from another driver, or a ref such as `e5` passed where a handle belongs).
    pub fn from_handle(h: &Handle) -> Result<ObjRef> {
        let text = h.as_str();
        match text.split_once('|') {
            Some((bus, path)) if !bus.is_empty() && path.starts_with('/') => {
                Ok(ObjRef::new(bus, path))
            }
            _ => Err(ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{text:?} is not a Linux accessibility handle; handles look like \
                     \":1.9|/org/a11y/atspi/accessible/614\" and come from apps.list or tree.snapshot"
                ),
            )),
        }
    }

    /// The trailing number of paths like `/org/a11y/atspi/accessible/614`, used only to
    /// order siblings whose index in parent is unknown (bridges number objects in
    /// creation order, which is usually document order).
    pub fn path_number(&self) -> u64 {
        self.path
            .rsplit('/')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(u64::MAX)
    }
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}|{}", self.bus, self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_round_trips() {
        let o = ObjRef::new(":1.9", "/org/a11y/atspi/accessible/614");
        let h = o.to_handle();
        assert_eq!(h.as_str(), ":1.9|/org/a11y/atspi/accessible/614");
        assert_eq!(ObjRef::from_handle(&h).unwrap(), o);
        assert_eq!(o.path_number(), 614);
        assert_eq!(o.app_root().path, ROOT_PATH);
    }

    #[test]
    fn malformed_handles_are_invalid_arguments() {
        for bad in ["e5", "", "|/x", ":1.2|relative", ":1.2"] {
            let err = ObjRef::from_handle(&Handle::new(bad)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn null_refs_are_recognised() {
        assert!(ObjRef::new(":1.2", NULL_PATH).is_null());
        assert!(ObjRef::new("", "/x").is_null());
        assert!(!ObjRef::new(":1.2", ROOT_PATH).is_null());
        assert_eq!(ObjRef::new(":1.2", ROOT_PATH).path_number(), u64::MAX);
    }
}

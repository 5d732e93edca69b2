//! The connection to the accessibility bus, and every D-Bus call the driver makes.
//!
//! Owns finding the accessibility bus (`AT_SPI_BUS_ADDRESS`, else `org.a11y.Bus.
//! GetAddress` on the given session bus), registering for the events that make
//! toolkit bridges build their object cache and emit signals, and [`Bus::call`] /
//! [`Bus::prop`]: each call wrapped in a timeout and its failure classified as
//! [`CallError`]. It must never call without a timeout, never use typed proxies that
//! cache properties (they subscribe to signals and issue `GetAll` behind our back), and
//! never block on a signal stream that nobody drains.

use std::time::{Duration, Instant};

use deskpilot_protocol::{ComputerError, ErrorCode};
use serde::de::DeserializeOwned;
use zbus::zvariant::{DynamicType, OwnedObjectPath, OwnedValue, Value};

use super::handle::{ObjRef, REGISTRY_BUS};
use super::options::ConnectOptions;
use deskpilot_protocol::Result;

/// AT-SPI interface names.
pub mod iface {
    pub const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
    pub const ACTION: &str = "org.a11y.atspi.Action";
    pub const APPLICATION: &str = "org.a11y.atspi.Application";
    pub const CACHE: &str = "org.a11y.atspi.Cache";
    pub const COMPONENT: &str = "org.a11y.atspi.Component";
    pub const EDITABLE_TEXT: &str = "org.a11y.atspi.EditableText";
    pub const REGISTRY: &str = "org.a11y.atspi.Registry";
    pub const SELECTION: &str = "org.a11y.atspi.Selection";
    pub const TABLE: &str = "org.a11y.atspi.Table";
    pub const TEXT: &str = "org.a11y.atspi.Text";
    pub const VALUE: &str = "org.a11y.atspi.Value";
    pub const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
}

/// Events the driver registers for. Registering any event is also what makes an
/// at-spi2-atk bridge (GTK, LibreOffice, Chromium) create its `Cache` object: without
/// a registered listener, `Cache.GetItems` answers `UnknownMethod`.
pub const REGISTERED_EVENTS: [&str; 6] = [
    "object:children-changed",
    "object:state-changed",
    "object:property-change",
    "object:text-changed",
    "window:",
    "focus:",
];

/// Why one D-Bus call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No answer within the timeout: the application is frozen or busy.
    #[error("{method} on {target} did not answer within {timeout_ms} ms")]
    Timeout {
        target: String,
        method: String,
        timeout_ms: u64,
    },
    /// The object or its application no longer exists.
    #[error("{target} is gone ({error_name})")]
    Gone { target: String, error_name: String },
    /// The object does not implement the interface, method or property.
    #[error("{target} does not support {method} ({error_name})")]
    Unsupported {
        target: String,
        method: String,
        error_name: String,
    },
    /// Anything else: a D-Bus error reply the bridge chose, a reply of the wrong shape,
    /// a lost connection.
    #[error("{method} on {target} failed")]
    Failed {
        target: String,
        method: String,
        #[source]
        source: zbus::Error,
    },
}

impl CallError {
    /// The wire error for a call that the caller cannot do without.
    pub fn to_driver(&self) -> ComputerError {
        let (code, message) = match self {
            CallError::Timeout { timeout_ms, .. } => (
                ErrorCode::NotResponding,
                format!(
                    "the application did not answer within {timeout_ms} ms; it may be frozen \
                     or busy. Try again later or check it with apps.list"
                ),
            ),
            CallError::Gone { .. } => (
                ErrorCode::ElementNotFound,
                "the element no longer exists (its window closed or the app rebuilt it); \
                 observe again to get current refs"
                    .to_string(),
            ),
            CallError::Unsupported { method, .. } => (
                ErrorCode::ElementNotActionable,
                format!(
                    "the element does not support {method}, so this op cannot be done on it; observe and act on the control that holds it (its parent or child), or use keys"
                ),
            ),
            CallError::Failed { method, source, .. } => (
                ErrorCode::Internal,
                format!("accessibility call {method} failed: {source}"),
            ),
        };
        ComputerError::new(code, message).with_detail(serde_json::json!({
            "call_error": self.to_string(),
        }))
    }

    /// The call did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, CallError::Timeout { .. })
    }

    /// The object or its application no longer exists.
    pub fn is_gone(&self) -> bool {
        matches!(self, CallError::Gone { .. })
    }

    /// The object lacks the interface, method or property.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, CallError::Unsupported { .. })
    }
}

/// Sorts a D-Bus error name into gone / unsupported / other.
fn classify(error_name: &str) -> Option<bool> {
    const GONE: [&str; 5] = [
        "org.freedesktop.DBus.Error.UnknownObject",
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.Disconnected",
        "org.a11y.atspi.Error.Defunct",
    ];
    const UNSUPPORTED: [&str; 4] = [
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownProperty",
        "org.freedesktop.DBus.Error.NotSupported",
    ];
    if GONE.contains(&error_name) {
        Some(true)
    } else if UNSUPPORTED.contains(&error_name) {
        Some(false)
    } else {
        None
    }
}

fn call_error(target: &str, method: &str, e: zbus::Error) -> CallError {
    let name = match &e {
        zbus::Error::MethodError(name, _, _) => Some(name.as_str().to_string()),
        zbus::Error::FDO(fdo) => Some(zbus::DBusError::name(fdo.as_ref()).as_str().to_string()),
        _ => None,
    };
    match name.as_deref().map(|n| (n, classify(n))) {
        Some((n, Some(true))) => CallError::Gone {
            target: target.to_string(),
            error_name: n.to_string(),
        },
        Some((n, Some(false))) => CallError::Unsupported {
            target: target.to_string(),
            method: method.to_string(),
            error_name: n.to_string(),
        },
        _ => CallError::Failed {
            target: target.to_string(),
            method: method.to_string(),
            source: e,
        },
    }
}

/// Converts an `(so)` pair from the wire.
pub fn obj_from_wire((bus, path): (String, OwnedObjectPath)) -> ObjRef {
    ObjRef::new(bus, path.as_str())
}

/// The accessibility bus connection with its timeouts. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Bus {
    conn: zbus::Connection,
    session: Option<zbus::Connection>,
    /// Time allowed to one call.
    pub call_timeout: Duration,
    /// Per application (unique bus name): whether `Properties.GetAll` may be sent
    /// to it ([`Bus::get_all_is_safe`]).
    get_all: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, bool>>>,
}

fn disabled(message: String) -> ComputerError {
    ComputerError::new(ErrorCode::AccessibilityDisabled, message)
}

const FIX_HINT: &str =
    "Run `deskpilot doctor --fix`, or start an isolated desktop with `deskpilot sandbox start`.";

/// Maps a failure to open a bus socket: permission problems are the OS's, the rest
/// mean the bus is not there.
fn connect_error(what: &str, address: &str, e: &zbus::Error) -> ComputerError {
    let denied = matches!(e, zbus::Error::InputOutput(io) | zbus::Error::Connection(io, _)
        if io.kind() == std::io::ErrorKind::PermissionDenied);
    let code = if denied {
        ErrorCode::OsPermissionMissing
    } else {
        ErrorCode::AccessibilityDisabled
    };
    ComputerError::new(
        code,
        format!("cannot connect to the {what} at {address}: {e}. {FIX_HINT}"),
    )
    .with_detail(serde_json::json!({ "address": address }))
}

impl Bus {
    /// Connects to the accessibility bus described by `opts` and registers the
    /// driver's event listeners.
    ///
    /// Errors: `COMPUTER_ACCESSIBILITY_DISABLED` when there is no session bus, no
    /// `org.a11y.Bus` service on it, or no accessibility bus behind it;
    /// `COMPUTER_OS_PERMISSION_MISSING` when a bus socket refuses us. Every message
    /// says how to fix it.
    pub async fn connect(opts: &ConnectOptions) -> Result<Bus> {
        let t = opts.call_timeout.max(Duration::from_secs(2));
        let session = match &opts.session_bus {
            Some(addr) => Some(Self::open(addr, "session bus", t).await?),
            None => None,
        };
        let a11y_addr = match (&opts.a11y_bus, &session) {
            (Some(a), _) => a.clone(),
            (None, Some(s)) => {
                let reply = tokio::time::timeout(
                    t,
                    s.call_method(
                        Some("org.a11y.Bus"),
                        "/org/a11y/bus",
                        Some("org.a11y.Bus"),
                        "GetAddress",
                        &(),
                    ),
                )
                .await
                .map_err(|_| {
                    disabled(format!(
                        "org.a11y.Bus did not answer GetAddress within {} ms. {FIX_HINT}",
                        t.as_millis()
                    ))
                })?
                .map_err(|e| {
                    disabled(format!(
                        "the accessibility bus service org.a11y.Bus is not available on the \
                         session bus ({e}); at-spi-bus-launcher (package at-spi2-core) is \
                         not running. {FIX_HINT}"
                    ))
                })?;
                reply
                    .body()
                    .deserialize::<String>()
                    .map_err(|e| disabled(format!("org.a11y.Bus.GetAddress answered oddly: {e}")))?
            }
            (None, None) => {
                return Err(disabled(format!(
                    "no session D-Bus: DBUS_SESSION_BUS_ADDRESS is not set, so the \
                     accessibility bus cannot be found. {FIX_HINT}"
                )));
            }
        };
        let conn = Self::open(&a11y_addr, "accessibility bus", t).await?;
        let bus = Bus {
            conn,
            session,
            call_timeout: opts.call_timeout,
            get_all: Default::default(),
        };
        bus.register_events().await?;
        Ok(bus)
    }

    async fn open(address: &str, what: &str, t: Duration) -> Result<zbus::Connection> {
        let builder = zbus::connection::Builder::address(address)
            .map_err(|e| connect_error(what, address, &e))?;
        match tokio::time::timeout(t, builder.build()).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(connect_error(what, address, &e)),
            Err(_) => Err(disabled(format!(
                "the {what} at {address} did not complete the handshake within {} ms. {FIX_HINT}",
                t.as_millis()
            ))),
        }
    }

    /// Registers [`REGISTERED_EVENTS`] with the registry daemon.
    async fn register_events(&self) -> Result<()> {
        let registry = ObjRef::new(REGISTRY_BUS, "/org/a11y/atspi/registry");
        for ev in REGISTERED_EVENTS {
            let r: Result<(), CallError> = self
                .call(&registry, iface::REGISTRY, "RegisterEvent", &(ev,))
                .await;
            if let Err(e) = r {
                return Err(disabled(format!(
                    "the accessibility registry (at-spi2-registryd) did not accept event \
                     registration: {e}. {FIX_HINT}"
                )));
            }
        }
        Ok(())
    }

    /// The zbus connection, for signal streams.
    pub fn raw(&self) -> &zbus::Connection {
        &self.conn
    }

    /// Calls `iface.method(body)` on `obj` and decodes the reply as `R`, within the
    /// per-call timeout.
    pub async fn call<B, R>(
        &self,
        obj: &ObjRef,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<R, CallError>
    where
        B: serde::Serialize + DynamicType,
        R: DeserializeOwned + zbus::zvariant::Type,
    {
        self.call_within(self.call_timeout, obj, iface, method, body)
            .await
    }

    /// [`Bus::call`] with an explicit timeout.
    pub async fn call_within<B, R>(
        &self,
        timeout: Duration,
        obj: &ObjRef,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<R, CallError>
    where
        B: serde::Serialize + DynamicType,
        R: DeserializeOwned + zbus::zvariant::Type,
    {
        let msg = self.call_message(timeout, obj, iface, method, body).await?;
        msg.body()
            .deserialize::<R>()
            .map_err(|e| call_error(&obj.to_string(), method, e))
    }

    /// Calls and returns the raw reply (for replies with more than one shape).
    pub async fn call_message<B>(
        &self,
        timeout: Duration,
        obj: &ObjRef,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<zbus::Message, CallError>
    where
        B: serde::Serialize + DynamicType,
    {
        let started = Instant::now();
        let fut = self.conn.call_method(
            Some(obj.bus.as_str()),
            obj.path.as_str(),
            Some(iface),
            method,
            body,
        );
        match tokio::time::timeout(timeout, fut).await {
            Ok(Ok(m)) => Ok(m),
            Ok(Err(e)) => Err(call_error(&obj.to_string(), method, e)),
            Err(_) => {
                tracing::debug!(target = %obj, method, ms = started.elapsed().as_millis() as u64, "call timed out");
                Err(CallError::Timeout {
                    target: obj.to_string(),
                    method: method.to_string(),
                    timeout_ms: timeout.as_millis() as u64,
                })
            }
        }
    }

    /// Reads a property as an [`OwnedValue`].
    pub async fn prop_value(
        &self,
        obj: &ObjRef,
        iface: &str,
        name: &str,
    ) -> Result<OwnedValue, CallError> {
        self.call(obj, iface::PROPERTIES, "Get", &(iface, name))
            .await
            .map_err(|e| match e {
                // Some bridges answer an unknown property with a generic failure.
                CallError::Failed { target, source, .. }
                    if matches!(&source, zbus::Error::MethodError(n, _, _)
                        if n.as_str() == "org.freedesktop.DBus.Error.InvalidArgs") =>
                {
                    CallError::Unsupported {
                        target,
                        method: format!("{iface}.{name}"),
                        error_name: "org.freedesktop.DBus.Error.InvalidArgs".to_string(),
                    }
                }
                other => other,
            })
    }

    /// Whether the application on bus name `app` may be sent `Properties.GetAll`:
    /// asked once per application (`Application.ToolkitName` of its root), and
    /// never for Qt. Qt 5's bridge takes every `Properties` call for a `Get` or
    /// `Set` and reads a second argument that `GetAll` does not have: the app
    /// crashes (QTBUG-107897; reproduced with PyQt5 on Qt 5.15.8). A toolkit that
    /// does not say its name is not sent it either.
    pub async fn get_all_is_safe(&self, app: &str) -> bool {
        if let Some(&known) = self
            .get_all
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(app)
        {
            return known;
        }
        let root = ObjRef::new(app, "/org/a11y/atspi/accessible/root");
        let safe = match self
            .prop::<String>(&root, iface::APPLICATION, "ToolkitName")
            .await
        {
            Ok(name) => !name.trim().is_empty() && !name.to_ascii_lowercase().contains("qt"),
            Err(_) => false,
        };
        self.get_all
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(app.to_string(), safe);
        safe
    }

    /// Every property of `iface` on `obj` in one call (`Properties.GetAll`). Ask
    /// [`Bus::get_all_is_safe`] first: it crashes Qt 5 apps.
    ///
    /// Errors: as [`Bus::call`]; a bridge that does not implement `GetAll` answers
    /// `Unsupported` (or a generic failure, which the caller treats alike).
    pub async fn props_all(
        &self,
        obj: &ObjRef,
        iface: &str,
    ) -> Result<std::collections::HashMap<String, OwnedValue>, CallError> {
        self.call(obj, iface::PROPERTIES, "GetAll", &(iface,)).await
    }

    /// Reads a property and converts it.
    pub async fn prop<R>(&self, obj: &ObjRef, iface: &str, name: &str) -> Result<R, CallError>
    where
        R: TryFrom<OwnedValue>,
        <R as TryFrom<OwnedValue>>::Error: Into<zbus::zvariant::Error>,
    {
        let v = self.prop_value(obj, iface, name).await?;
        R::try_from(v).map_err(|e| CallError::Failed {
            target: obj.to_string(),
            method: format!("Get {iface}.{name}"),
            source: zbus::Error::Variant(e.into()),
        })
    }

    /// Writes a property.
    pub async fn set_prop(
        &self,
        obj: &ObjRef,
        iface: &str,
        name: &str,
        value: Value<'_>,
    ) -> Result<(), CallError> {
        self.call::<_, ()>(obj, iface::PROPERTIES, "Set", &(iface, name, value))
            .await
    }

    /// The process id owning a bus name, from the bus daemon (answers even when the
    /// application itself is frozen).
    pub async fn pid_of(&self, bus_name: &str) -> Result<u32, CallError> {
        let dbus = ObjRef::new("org.freedesktop.DBus", "/org/freedesktop/DBus");
        self.call(
            &dbus,
            "org.freedesktop.DBus",
            "GetConnectionUnixProcessID",
            &(bus_name,),
        )
        .await
    }

    /// The uid owning a bus name, from the bus daemon.
    pub async fn uid_of(&self, bus_name: &str) -> Result<u32, CallError> {
        let dbus = ObjRef::new("org.freedesktop.DBus", "/org/freedesktop/DBus");
        self.call(
            &dbus,
            "org.freedesktop.DBus",
            "GetConnectionUnixUser",
            &(bus_name,),
        )
        .await
    }

    /// `org.a11y.Status.IsEnabled` on the session bus; `None` without a session bus
    /// or when it cannot be read.
    pub async fn accessibility_enabled(&self) -> Option<bool> {
        let s = self.session.as_ref()?;
        let fut = s.call_method(
            Some("org.a11y.Bus"),
            "/org/a11y/bus",
            Some(iface::PROPERTIES),
            "Get",
            &("org.a11y.Status", "IsEnabled"),
        );
        let reply = tokio::time::timeout(self.call_timeout, fut)
            .await
            .ok()?
            .ok()?;
        let v: OwnedValue = reply.body().deserialize().ok()?;
        bool::try_from(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_classified() {
        assert_eq!(
            classify("org.freedesktop.DBus.Error.UnknownObject"),
            Some(true)
        );
        assert_eq!(
            classify("org.freedesktop.DBus.Error.ServiceUnknown"),
            Some(true)
        );
        assert_eq!(
            classify("org.freedesktop.DBus.Error.UnknownMethod"),
            Some(false)
        );
        assert_eq!(classify("org.freedesktop.DBus.Error.Failed"), None);
    }

    #[test]
    fn call_errors_map_to_wire_codes() {
        let t = CallError::Timeout {
            target: ":1.2|/x".into(),
            method: "GetItems".into(),
            timeout_ms: 1500,
        };
        assert_eq!(t.to_driver().code, ErrorCode::NotResponding);
        assert!(t.to_driver().message.contains("1500 ms"));
        let g = CallError::Gone {
            target: ":1.2|/x".into(),
            error_name: "org.freedesktop.DBus.Error.UnknownObject".into(),
        };
        assert_eq!(g.to_driver().code, ErrorCode::ElementNotFound);
        let u = CallError::Unsupported {
            target: ":1.2|/x".into(),
            method: "DoAction".into(),
            error_name: "org.freedesktop.DBus.Error.UnknownMethod".into(),
        };
        assert_eq!(u.to_driver().code, ErrorCode::ElementNotActionable);
        let f = CallError::Failed {
            target: ":1.2|/x".into(),
            method: "GetText".into(),
            source: zbus::Error::InvalidReply,
        };
        assert_eq!(f.to_driver().code, ErrorCode::Internal);
    }
}

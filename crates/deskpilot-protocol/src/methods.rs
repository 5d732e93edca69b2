//! The driver protocol's methods: wire names, typed params and results.
//!
//! This module owns the one table that ties a wire name to its params type, its
//! result type and the [`Driver`] method that serves it ([`dispatch`]). It must never
//! accept params of the wrong shape: typed decoding fails with -32602.
//!
//! | Wire name          | Kind         | Params              | Result             | [`Driver`] method |
//! |--------------------|--------------|---------------------|--------------------|-------------------|
//! | `hello`            | request      | none                | [`Hello`]          | `hello`           |
//! | `apps.list`        | request      | none                | `Vec<`[`AppInfo`]`>` | `apps`          |
//! | `apps.launch`      | request      | [`LaunchParams`]    | [`LaunchResult`]   | `launch`          |
//! | `windows.list`     | request      | none                | `Vec<`[`WindowInfo`]`>` | `windows`    |
//! | `window.activate`  | request      | [`ActivateParams`]  | [`Empty`] (`{}`)   | `activate`        |
//! | `tree.snapshot`    | request      | [`SnapshotParams`]  | [`TreeSnapshot`]   | `snapshot`        |
//! | `tree.find`        | request      | [`FindParams`]      | [`FindResult`]     | `find`            |
//! | `node.act`         | request      | [`ActParams`]       | [`ActResult`]      | `act`             |
//! | `events.subscribe` | request      | [`SubscribeParams`] | [`SubscribeResult`]| `subscribe`       |
//! | `events.next`      | request      | [`NextEventsParams`]| [`EventBatch`]     | `next_events`     |
//! | `input.keys`       | request      | [`KeysParams`]      | [`InputResult`]    | `keys`            |
//! | `input.pointer`    | request      | [`PointerParams`]   | [`InputResult`]    | `pointer`         |
//! | `screen.capture`   | request      | [`CaptureParams`]   | [`CaptureResult`]  | `capture`         |
//! | `screen.ocr`       | request      | [`OcrParams`]       | [`OcrResult`]      | `ocr`             |
//! | `events.batch`     | notification | [`EventBatch`]      | —                  | —                 |
//!
//! "none" params may be omitted, `null`, `{}` or `[]`. Params are by name (an
//! object); unknown members are ignored, so a newer host can talk to an older driver.
//!
//! Events travel two ways. `events.next` is the pull form: the host asks, the driver
//! answers with the events queued for a subscription, waiting up to `timeout_ms` for
//! one; this is what [`crate::rpc::RpcDriver`] uses for [`Driver::next_events`], and
//! what [`crate::rpc::serve`] answers. `events.batch` is the push form: a driver may
//! send it unasked at any time; the client buffers such batches and hands them out on
//! the next `next_events` of that subscription.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Result;
use crate::jsonrpc::{ErrorObject, Notification, Request, to_params};
use crate::types::*;
use crate::{ComputerError, Driver, ErrorCode};

/// Every method name of the driver protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Method {
    Hello,
    AppsList,
    AppsLaunch,
    WindowsList,
    WindowActivate,
    TreeSnapshot,
    TreeFind,
    NodeAct,
    EventsSubscribe,
    /// Pull form of events (see the module doc).
    EventsNext,
    InputKeys,
    InputPointer,
    ScreenCapture,
    ScreenOcr,
    /// The CLIPBOARD selection's text.
    ClipboardRead,
    /// Owns the CLIPBOARD selection with a text.
    ClipboardWrite,
    /// The targets a selection's owner offers (what the clipboard holds, not its
    /// content): a password manager marks a copied password among them.
    ClipboardTargets,
    /// Notification, driver → host: pushed events.
    EventsBatch,
}

impl Method {
    /// Every method, requests first, then notifications.
    pub const ALL: [Method; 18] = [
        Method::Hello,
        Method::AppsList,
        Method::AppsLaunch,
        Method::WindowsList,
        Method::WindowActivate,
        Method::TreeSnapshot,
        Method::TreeFind,
        Method::NodeAct,
        Method::EventsSubscribe,
        Method::EventsNext,
        Method::InputKeys,
        Method::InputPointer,
        Method::ScreenCapture,
        Method::ScreenOcr,
        Method::ClipboardRead,
        Method::ClipboardWrite,
        Method::ClipboardTargets,
        Method::EventsBatch,
    ];

    /// The wire name (`"tree.snapshot"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Hello => "hello",
            Method::AppsList => "apps.list",
            Method::AppsLaunch => "apps.launch",
            Method::WindowsList => "windows.list",
            Method::WindowActivate => "window.activate",
            Method::TreeSnapshot => "tree.snapshot",
            Method::TreeFind => "tree.find",
            Method::NodeAct => "node.act",
            Method::EventsSubscribe => "events.subscribe",
            Method::EventsNext => "events.next",
            Method::InputKeys => "input.keys",
            Method::InputPointer => "input.pointer",
            Method::ScreenCapture => "screen.capture",
            Method::ScreenOcr => "screen.ocr",
            Method::ClipboardRead => "clipboard.read",
            Method::ClipboardWrite => "clipboard.write",
            Method::ClipboardTargets => "clipboard.targets",
            Method::EventsBatch => "events.batch",
        }
    }

    /// The method with this wire name (exact, case-sensitive).
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// True for notifications (sent without id, never answered).
    pub const fn is_notification(self) -> bool {
        matches!(self, Method::EventsBatch)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request with its params decoded: one variant per request method.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Hello,
    AppsList,
    AppsLaunch(LaunchParams),
    WindowsList,
    WindowActivate(ActivateParams),
    TreeSnapshot(SnapshotParams),
    TreeFind(FindParams),
    NodeAct(ActParams),
    EventsSubscribe(SubscribeParams),
    EventsNext(NextEventsParams),
    InputKeys(KeysParams),
    InputPointer(PointerParams),
    ScreenCapture(CaptureParams),
    ScreenOcr(OcrParams),
    ClipboardRead,
    ClipboardWrite(ClipboardWriteParams),
    ClipboardTargets(ClipboardTargetsParams),
}

impl Call {
    /// The method of this call.
    pub fn method(&self) -> Method {
        match self {
            Call::Hello => Method::Hello,
            Call::AppsList => Method::AppsList,
            Call::AppsLaunch(_) => Method::AppsLaunch,
            Call::WindowsList => Method::WindowsList,
            Call::WindowActivate(_) => Method::WindowActivate,
            Call::TreeSnapshot(_) => Method::TreeSnapshot,
            Call::TreeFind(_) => Method::TreeFind,
            Call::NodeAct(_) => Method::NodeAct,
            Call::EventsSubscribe(_) => Method::EventsSubscribe,
            Call::EventsNext(_) => Method::EventsNext,
            Call::InputKeys(_) => Method::InputKeys,
            Call::InputPointer(_) => Method::InputPointer,
            Call::ScreenCapture(_) => Method::ScreenCapture,
            Call::ScreenOcr(_) => Method::ScreenOcr,
            Call::ClipboardRead => Method::ClipboardRead,
            Call::ClipboardWrite(_) => Method::ClipboardWrite,
            Call::ClipboardTargets(_) => Method::ClipboardTargets,
        }
    }

    /// The params as they go on the wire (`None` for methods without params).
    ///
    /// Errors: a params value that does not serialize (not possible for the types of
    /// [`crate::types`], whose fields are all plain data).
    pub fn params(&self) -> Result<Option<Value>, serde_json::Error> {
        match self {
            Call::Hello | Call::AppsList | Call::WindowsList | Call::ClipboardRead => Ok(None),
            Call::AppsLaunch(p) => to_params(p),
            Call::WindowActivate(p) => to_params(p),
            Call::TreeSnapshot(p) => to_params(p),
            Call::TreeFind(p) => to_params(p),
            Call::NodeAct(p) => to_params(p),
            Call::EventsSubscribe(p) => to_params(p),
            Call::EventsNext(p) => to_params(p),
            Call::InputKeys(p) => to_params(p),
            Call::InputPointer(p) => to_params(p),
            Call::ScreenCapture(p) => to_params(p),
            Call::ScreenOcr(p) => to_params(p),
            Call::ClipboardWrite(p) => to_params(p),
            Call::ClipboardTargets(p) => to_params(p),
        }
    }

    /// The request that carries this call.
    pub fn to_request(
        &self,
        id: impl Into<crate::jsonrpc::Id>,
    ) -> Result<Request, serde_json::Error> {
        Ok(Request::new(id, self.method().as_str(), self.params()?))
    }

    /// Decodes a request: -32601 for an unknown method (or a notification-only one),
    /// -32602 for params that do not fit the method's params type.
    pub fn from_request(req: &Request) -> Result<Call, ErrorObject> {
        Call::from_parts(&req.method, req.params.as_ref())
    }

    /// As [`Call::from_request`], from a method name and raw params.
    pub fn from_parts(method: &str, params: Option<&Value>) -> Result<Call, ErrorObject> {
        let m = Method::from_name(method).ok_or_else(|| ErrorObject::method_not_found(method))?;
        Ok(match m {
            Method::Hello => {
                decode_params::<Empty>(m, params)?;
                Call::Hello
            }
            Method::AppsList => {
                decode_params::<Empty>(m, params)?;
                Call::AppsList
            }
            Method::WindowsList => {
                decode_params::<Empty>(m, params)?;
                Call::WindowsList
            }
            Method::AppsLaunch => Call::AppsLaunch(decode_params(m, params)?),
            Method::WindowActivate => Call::WindowActivate(decode_params(m, params)?),
            Method::TreeSnapshot => Call::TreeSnapshot(decode_params(m, params)?),
            Method::TreeFind => Call::TreeFind(decode_params(m, params)?),
            Method::NodeAct => Call::NodeAct(decode_params(m, params)?),
            Method::EventsSubscribe => Call::EventsSubscribe(decode_params(m, params)?),
            Method::EventsNext => Call::EventsNext(decode_params(m, params)?),
            Method::InputKeys => Call::InputKeys(decode_params(m, params)?),
            Method::InputPointer => Call::InputPointer(decode_params(m, params)?),
            Method::ScreenCapture => Call::ScreenCapture(decode_params(m, params)?),
            Method::ScreenOcr => Call::ScreenOcr(decode_params(m, params)?),
            Method::ClipboardRead => {
                decode_params::<Empty>(m, params)?;
                Call::ClipboardRead
            }
            Method::ClipboardWrite => Call::ClipboardWrite(decode_params(m, params)?),
            Method::ClipboardTargets => Call::ClipboardTargets(decode_params(m, params)?),
            Method::EventsBatch => {
                return Err(
                    ErrorObject::method_not_found(method).with_data(Value::String(
                        "events.batch is a notification sent by the driver, not a request".into(),
                    )),
                );
            }
        })
    }
}

/// Decodes the params of `method` into `T`: absent params decode as `{}`.
///
/// Errors: -32602 with the decoder's reason (a missing field, a wrong type).
pub fn decode_params<T: DeserializeOwned>(
    method: Method,
    params: Option<&Value>,
) -> Result<T, ErrorObject> {
    let v = params.cloned().unwrap_or_else(crate::jsonrpc::empty_params);
    serde_json::from_value(v).map_err(|e| ErrorObject::invalid_params(method.as_str(), e))
}

/// Decodes the result of `method` into `T`.
///
/// Errors: [`ErrorCode::Internal`] naming the method: the driver answered with a
/// result of another shape (a driver of another protocol version, or a bug).
pub fn decode_result<T: DeserializeOwned>(method: Method, result: Value) -> Result<T> {
    serde_json::from_value(result).map_err(|e| {
        ComputerError::new(
            ErrorCode::Internal,
            format!("the driver answered {method} with a malformed result: {e}"),
        )
    })
}

/// The `events.batch` notification carrying `batch`.
pub fn event_batch_notification(batch: &EventBatch) -> Result<Notification, serde_json::Error> {
    Ok(Notification::new(
        Method::EventsBatch.as_str(),
        to_params(batch)?,
    ))
}

/// Decodes an `events.batch` notification's params.
///
/// Errors: -32601 when the notification is another method, -32602 when its params
/// are not an [`EventBatch`].
pub fn decode_event_batch(n: &Notification) -> Result<EventBatch, ErrorObject> {
    if n.method != Method::EventsBatch.as_str() {
        return Err(ErrorObject::method_not_found(&n.method));
    }
    decode_params(Method::EventsBatch, n.params.as_ref())
}

/// Serves one decoded call with `driver` and returns its result as JSON.
///
/// Errors: the driver's own error, or [`ErrorCode::Internal`] if the result does not
/// serialize.
pub async fn dispatch(driver: &dyn Driver, call: Call) -> Result<Value> {
    match call {
        Call::Hello => to_result(driver.hello().await?),
        Call::AppsList => to_result(driver.apps().await?),
        Call::AppsLaunch(p) => to_result(driver.launch(p).await?),
        Call::WindowsList => to_result(driver.windows().await?),
        Call::WindowActivate(p) => to_result(driver.activate(p).await?),
        Call::TreeSnapshot(p) => to_result(driver.snapshot(p).await?),
        Call::TreeFind(p) => to_result(driver.find(p).await?),
        Call::NodeAct(p) => to_result(driver.act(p).await?),
        Call::EventsSubscribe(p) => to_result(driver.subscribe(p).await?),
        Call::EventsNext(p) => to_result(driver.next_events(p.subscription, p.timeout_ms).await?),
        Call::InputKeys(p) => to_result(driver.keys(p).await?),
        Call::InputPointer(p) => to_result(driver.pointer(p).await?),
        Call::ScreenCapture(p) => to_result(driver.capture(p).await?),
        Call::ScreenOcr(p) => to_result(driver.ocr(p).await?),
        Call::ClipboardRead => to_result(driver.clipboard_read().await?),
        Call::ClipboardWrite(p) => to_result(driver.clipboard_write(p).await?),
        Call::ClipboardTargets(p) => to_result(driver.clipboard_targets(p).await?),
    }
}

fn to_result<T: Serialize>(r: T) -> Result<Value> {
    serde_json::to_value(r).map_err(|e| {
        ComputerError::new(
            ErrorCode::Internal,
            format!("the driver's result did not serialize: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonrpc::codes;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for m in Method::ALL {
            assert!(seen.insert(m.as_str()), "{m:?}");
            assert_eq!(Method::from_name(m.as_str()), Some(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        assert_eq!(Method::from_name("Hello"), None);
        assert!(Method::EventsBatch.is_notification());
        assert!(!Method::EventsNext.is_notification());
    }

    #[test]
    fn unknown_and_notification_methods_are_not_found() {
        assert_eq!(
            Call::from_parts("tree.explode", None).unwrap_err().code,
            codes::METHOD_NOT_FOUND
        );
        assert_eq!(
            Call::from_parts("events.batch", Some(&json!({"subscription":1,"events":[]})))
                .unwrap_err()
                .code,
            codes::METHOD_NOT_FOUND
        );
    }

    #[test]
    fn params_are_typed() {
        let e = Call::from_parts("tree.snapshot", Some(&json!({"window": 5}))).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert!(e.message.contains("tree.snapshot"), "{}", e.message);
        let e = Call::from_parts("tree.snapshot", None).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert!(e.message.contains("window"), "{}", e.message);
        assert_eq!(
            Call::from_parts(
                "node.act",
                Some(&json!({"window":"w","handle":"h","op":"explode"}))
            )
            .unwrap_err()
            .code,
            codes::INVALID_PARAMS
        );
        assert_eq!(Call::from_parts("hello", None).unwrap(), Call::Hello);
        assert_eq!(
            Call::from_parts("hello", Some(&json!({}))).unwrap(),
            Call::Hello
        );
        assert_eq!(
            Call::from_parts("apps.list", Some(&json!([]))).unwrap(),
            Call::AppsList
        );
        assert_eq!(
            Call::from_parts("tree.snapshot", Some(&json!({"window":"w1","depth":2}))).unwrap(),
            Call::TreeSnapshot(SnapshotParams {
                depth: Some(2),
                ..SnapshotParams::whole(deskpilot_core::Handle::new("w1"))
            })
        );
    }
}

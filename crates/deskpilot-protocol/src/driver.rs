//! The [`Driver`] trait: what every platform backend does, and nothing more.
//!
//! A driver enumerates, reads, acts and emits events. It makes no policy decision:
//! grants, refusals and budgets are the host's. Implemented in-process by the
//! platform crates, by [`crate::rpc::RpcDriver`] over JSON-RPC, and by
//! `FixtureDriver` (feature `test-support`) for tests.

use async_trait::async_trait;

use crate::ComputerError;
use crate::Result;
use crate::types::*;

/// A platform backend. Every method is bounded in time: a platform call that does
/// not answer yields [`crate::ErrorCode::NotResponding`] or
/// [`crate::ErrorCode::Timeout`], never a hang.
#[async_trait]
pub trait Driver: Send + Sync {
    /// `hello`: platform, version, capabilities, permissions.
    async fn hello(&self) -> Result<Hello>;
    /// `apps.list`: applications with their windows and health.
    async fn apps(&self) -> Result<Vec<AppInfo>>;
    /// `apps.launch`: start a program and wait for its first window.
    async fn launch(&self, p: LaunchParams) -> Result<LaunchResult>;
    /// `windows.list`: every top-level window of every responsive app.
    async fn windows(&self) -> Result<Vec<WindowInfo>>;
    /// `window.activate`: raise and focus a window.
    async fn activate(&self, p: ActivateParams) -> Result<Empty>;
    /// `tree.snapshot`: read a window's tree (or a subtree).
    async fn snapshot(&self, p: SnapshotParams) -> Result<TreeSnapshot>;
    /// `tree.find`: elements matching a text.
    async fn find(&self, p: FindParams) -> Result<FindResult>;
    /// `node.act`: perform an operation on an element.
    async fn act(&self, p: ActParams) -> Result<ActResult>;
    /// `events.subscribe`.
    async fn subscribe(&self, p: SubscribeParams) -> Result<SubscribeResult>;
    /// Events of a subscription, waiting up to `timeout_ms` for at least one; an
    /// empty batch when none came. Over JSON-RPC this is the `events.next` request
    /// (the pull form); a driver may also push `events.batch` notifications, which
    /// the client hands out first (see [`crate::methods`]).
    async fn next_events(&self, subscription: u64, timeout_ms: u64) -> Result<EventBatch>;
    /// `input.keys`: synthetic keyboard input into a focused window.
    async fn keys(&self, p: KeysParams) -> Result<InputResult>;
    /// `input.pointer`: synthetic pointer input (moves the user's pointer).
    async fn pointer(&self, p: PointerParams) -> Result<InputResult>;
    /// `screen.capture`: a PNG of a window.
    async fn capture(&self, p: CaptureParams) -> Result<CaptureResult>;
    /// `screen.ocr`: words recognised in a window.
    async fn ocr(&self, p: OcrParams) -> Result<OcrResult>;
    /// `clipboard.read`: the text of the clipboard (X11: the CLIPBOARD selection).
    /// A driver without one answers `COMPUTER_PLATFORM_UNSUPPORTED`.
    async fn clipboard_read(&self) -> Result<ClipboardContent> {
        Err(ComputerError::platform_unsupported("the clipboard"))
    }
    /// `clipboard.write`: puts a text on the clipboard and reads it back.
    /// A driver without one answers `COMPUTER_PLATFORM_UNSUPPORTED`.
    async fn clipboard_write(&self, p: ClipboardWriteParams) -> Result<ClipboardWritten> {
        let _ = p;
        Err(ComputerError::platform_unsupported("the clipboard"))
    }
    /// `clipboard.targets`: the targets (formats) a selection's owner offers, never
    /// its content. A driver without a clipboard answers
    /// `COMPUTER_PLATFORM_UNSUPPORTED`.
    async fn clipboard_targets(&self, p: ClipboardTargetsParams) -> Result<ClipboardTargets> {
        let _ = p;
        Err(ComputerError::platform_unsupported("the clipboard"))
    }
}

//! What the host keeps and shows of its policy: the per-session bookkeeping
//! ([`PolicyState`]), the grant as callers see it ([`GrantView`]) and the coordinate
//! basis of pointer actions ([`Basis`]) (docs/ARCHITECTURE.md §7, §8).

use serde::{Deserialize, Serialize};

use crate::grant::{Authority, Capture, InputPolicy, Issuer, Scope};
use crate::mode::Mode;
use crate::{ComputerError, ErrorCode};
use deskpilot_protocol::Result;

/// The host's policy bookkeeping for one session, kept with its refs in the
/// per-desktop runtime state file. A grant never outlives the boot it was issued in,
/// a stop, its idle expiry or its budget; it is never written anywhere durable.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PolicyState {
    pub authority: Authority,
    /// When the active grant was issued (ms since the Unix epoch).
    pub issued_ms: Option<u64>,
    /// Apps the user approved acting on in this session (mode `default`, first use).
    pub approved_apps: Vec<String>,
    /// The boot the state belongs to (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: Option<String>,
    /// The newest stop record already applied (its `at_ms`).
    pub stop_seen_ms: u64,
}

/// The grant as a caller sees it (MCP structured content, `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GrantView {
    pub grant_id: String,
    pub scope: Scope,
    pub issuer: Issuer,
    /// `wN` of the bound window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    pub revision: u64,
    pub actions_left: u32,
    pub idle_expiry_ms: u64,
    pub mode: Mode,
    pub capture: Capture,
    pub input_policy: InputPolicy,
    /// The device the grant's desktop belongs to (`ssh:lab`, `adb:emulator-5554`);
    /// absent for this machine's own desktop (docs/ARCHITECTURE.md §15).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

impl GrantView {
    /// One line: `grant g-1a2b3c4d · desktop · [w1] mousepad · revision 3 · 198 actions left · mode accept-edits`,
    /// with ` · device ssh:lab` at the end on another device.
    pub fn line(&self) -> String {
        let bound = match (&self.window_ref, &self.app) {
            (Some(w), Some(a)) => format!("[{w}] {}", deskpilot_core::sanitize::one_line(a)),
            _ => "no window".into(),
        };
        format!(
            "grant {} · {} · {bound} · revision {} · {} actions left · mode {}",
            self.grant_id,
            self.scope.as_str(),
            self.revision,
            self.actions_left,
            self.mode.as_str()
        ) + &self
            .device
            .as_deref()
            .map(|d| format!(" · device {}", deskpilot_core::sanitize::one_line(d)))
            .unwrap_or_default()
    }
}

/// The coordinate basis of a pointer action (docs/ARCHITECTURE.md §8): the grant
/// revision, the window geometry (screen pixels) and the scale of the image the
/// coordinates were read from (1 for a tree read, the only source today). Text form `rREV:X,Y,WxH@SCALE`, e.g. `r3:10,20,640x480@1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Basis {
    pub revision: u64,
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
    /// Image pixels per screen pixel (1 for a tree read; a downscaled screenshot
    /// has less than 1).
    pub scale: f64,
}

impl Basis {
    /// Parses `rREV:X,Y,WxH@SCALE`.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` naming the expected form.
    pub fn parse(s: &str) -> Result<Basis> {
        let bad = || {
            ComputerError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{:?} is not a basis; use the `basis` an observe printed, like r3:10,20,640x480@1",
                    deskpilot_core::sanitize::one_line(s)
                ),
            )
        };
        let rest = s.strip_prefix('r').ok_or_else(bad)?;
        let (rev, rest) = rest.split_once(':').ok_or_else(bad)?;
        let (geom, scale) = rest.split_once('@').ok_or_else(bad)?;
        let mut parts = geom.split(',');
        let x = parts.next().ok_or_else(bad)?;
        let y = parts.next().ok_or_else(bad)?;
        let wh = parts.next().ok_or_else(bad)?;
        if parts.next().is_some() {
            return Err(bad());
        }
        let (w, h) = wh.split_once('x').ok_or_else(bad)?;
        let b = Basis {
            revision: rev.parse().map_err(|_| bad())?,
            x: x.parse().map_err(|_| bad())?,
            y: y.parse().map_err(|_| bad())?,
            width: w.parse().map_err(|_| bad())?,
            height: h.parse().map_err(|_| bad())?,
            scale: scale.parse().map_err(|_| bad())?,
        };
        // A capture is never upscaled: image pixels per device pixel are at most 1
        // (an observe's basis says 1); 16 leaves room for a driver that upscales.
        if !(b.scale.is_finite() && b.scale > 0.0 && b.scale <= 16.0)
            || b.width <= 0
            || b.height <= 0
        {
            return Err(bad());
        }
        Ok(b)
    }
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "r{}:{},{},{}x{}@{}",
            self.revision, self.x, self.y, self.width, self.height, self.scale
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_basis_round_trips_and_rejects_garbage() {
        let b = Basis::parse("r3:10,20,640x480@1").unwrap();
        assert_eq!(
            b,
            Basis {
                revision: 3,
                x: 10,
                y: 20,
                width: 640,
                height: 480,
                scale: 1.0
            }
        );
        assert_eq!(b.to_string(), "r3:10,20,640x480@1");
        assert_eq!(Basis::parse("r2:-5,0,100x50@0.5").unwrap().scale, 0.5);
        for bad in [
            "",
            "3:1,2,3x4@1",
            "r3:1,2,3x4",
            "r3:1,2,0x4@1",
            "r3:1,2,3x4@0",
            "rX:1,2,3x4@1",
            "r1:1,2,3,4x5@1",
        ] {
            assert_eq!(
                Basis::parse(bad).unwrap_err().code,
                ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
    }
}

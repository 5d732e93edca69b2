//! Reading a top-level window's pixels: X11 `GetImage` (ZPixmap) on the client
//! window, never on the root window, so nothing of another window or of the rest of
//! the screen is read (docs/ARCHITECTURE.md §8a).
//!
//! Without a compositor the X server keeps no pixels for the parts of a window that
//! another window covers; `GetImage` then returns what is on screen there. The
//! caller is told ([`WindowPixels::covered`]) rather than shown a clean image.

use deskpilot_core::Bounds;
use deskpilot_protocol::{ComputerError, ErrorCode};
use image::RgbaImage;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, ImageOrder};

use super::{TopLevel, X11Context, XInput};
use crate::linux::pixels;
use deskpilot_protocol::Result;

/// The pixels of a window as read, and where they are.
#[derive(Debug, Clone)]
pub struct WindowPixels {
    /// Device pixels, RGBA.
    pub image: RgbaImage,
    /// The area read, root-window (device) pixels: the window's area clipped to the
    /// screen.
    pub bounds: Bounds,
    /// Another mapped window above it in the stacking order (a top-level, a menu, a
    /// popup) overlaps it; the overlapped parts are painted over.
    pub covered: bool,
    /// Part of the window lies off the screen and was not read.
    pub clipped: bool,
}

impl XInput {
    /// The mapped top-level client window `xid`, or `None` when it is gone or not
    /// a top-level.
    ///
    /// Errors: `InputUnavailable`/`Internal` on connection or X errors.
    pub fn toplevel(&self, xid: u32) -> Result<Option<TopLevel>> {
        Ok(self.toplevels()?.into_iter().find(|t| t.xid == xid))
    }

    /// Reads the pixels of the top-level client window `top`.
    ///
    /// Errors: `ElementNotFound` when the window is gone or lies wholly off screen;
    /// `Internal` for a pixel format this reader does not know (the message names
    /// it); `InputUnavailable` on a lost connection.
    pub fn window_pixels(&self, top: &TopLevel) -> Result<WindowPixels> {
        let tops = self.toplevels()?;
        let Some(at) = tops.iter().position(|t| t.xid == top.xid) else {
            return Err(gone());
        };
        let b = tops[at].bounds;
        // Everything stacked above it, override-redirect popups included.
        let above: Vec<Bounds> = self
            .covering(top.xid)?
            .into_iter()
            .filter(|c| c.intersects(&b))
            .collect();
        let covered = !above.is_empty();
        let screen = Bounds::new(
            0,
            0,
            i32::from(self.screen_width),
            i32::from(self.screen_height),
        );
        let x0 = b.x.max(0);
        let y0 = b.y.max(0);
        let x1 = (b.x + b.width).min(screen.width);
        let y1 = (b.y + b.height).min(screen.height);
        if x1 <= x0 || y1 <= y0 {
            return Err(ComputerError::new(
                ErrorCode::ElementNotFound,
                "the window lies wholly off the screen: no pixels to read",
            ));
        }
        let area = Bounds::new(x0, y0, x1 - x0, y1 - y0);
        let narrow = |v: i32| i16::try_from(v).unwrap_or(i16::MAX);
        let wide = |v: i32| u16::try_from(v).unwrap_or(u16::MAX);
        let _serial = self.lock();
        let reply = self
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                top.xid,
                narrow(area.x - b.x),
                narrow(area.y - b.y),
                wide(area.width),
                wide(area.height),
                u32::MAX,
            )
            .x11("GetImage")?
            .reply();
        let reply = match reply {
            Ok(r) => r,
            Err(x11rb::errors::ReplyError::X11Error(_)) => return Err(gone()),
            Err(e) => return Err(e).x11("GetImage"),
        };
        let setup = self.conn.setup();
        let bpp = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == reply.depth)
            .map(|f| f.bits_per_pixel)
            .ok_or_else(|| {
                ComputerError::internal(format!(
                    "the X server lists no pixmap format for depth {}",
                    reply.depth
                ))
            })?;
        let lsb = setup.image_byte_order == ImageOrder::LSB_FIRST;
        let image = pixels::from_zpixmap(
            &reply.data,
            area.width as u32,
            area.height as u32,
            reply.depth,
            bpp,
            lsb,
        )
        .map_err(|e| ComputerError::internal(format!("cannot read the window's pixels: {e}")))?;
        // What covers the window is not the window: without a compositor its
        // pixels there are the other window's, which are never captured.
        let mut image = image;
        for c in &above {
            pixels::paint_over(&mut image, c.x - area.x, c.y - area.y, c.width, c.height);
        }
        Ok(WindowPixels {
            image,
            bounds: area,
            covered,
            clipped: area != b,
        })
    }
}

fn gone() -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotFound,
        "the window is gone or no longer mapped; list the windows again",
    )
}

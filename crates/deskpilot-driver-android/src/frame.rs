//! What a `screencap` frame shows of itself: an all-black frame is the one Android
//! hands every reader but the compositor while a window marked `FLAG_SECURE`
//! (a banking app, a password prompt, a DRM player) is on screen, or while the
//! screen is off. Such a frame is not an image of the screen and is never `ok`
//! (docs/ARCHITECTURE.md §7.11).

use deskpilot_protocol::{ComputerError, ErrorCode};

/// Whether every pixel of the PNG `png` is black (red, green and blue 0; alpha
/// ignored). `None` when it cannot be decoded. Costs one decode of the frame:
/// about 20 ms for a 1080×2400 screen.
pub(crate) fn all_black(png: &[u8]) -> Option<bool> {
    let img = image::load_from_memory_with_format(png, image::ImageFormat::Png).ok()?;
    let rgb = img.into_rgb8();
    Some(rgb.as_raw().iter().all(|&c| c == 0))
}

/// `COMPUTER_ELEMENT_NOT_ACTIONABLE` with `detail.reason` `secure_surface`: the
/// frame is black because the device withholds it, so there is no image to give.
pub(crate) fn secure_surface(width: u32, height: u32) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotActionable,
        format!(
            "no image of the screen: every pixel of the {width}×{height} frame the device gave is black, as Android gives it while a window marked secure (FLAG_SECURE) is shown or the screen is off; read the screen's tree (observe), or wake the device (`deskpilot doctor` says whether the screen is on)"
        ),
    )
    .with_detail(serde_json::json!({ "reason": "secure_surface", "width": width, "height": height }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(grey: u8) -> Vec<u8> {
        let img = image::GrayImage::from_pixel(4, 3, image::Luma([grey]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_black_frame_is_told_from_a_dark_one() {
        assert_eq!(all_black(&png(0)), Some(true));
        assert_eq!(all_black(&png(1)), Some(false));
        assert_eq!(all_black(b"\x89PNG\r\n\x1a\nbroken"), None);
    }
}

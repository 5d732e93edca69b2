//! Pixel work on a window capture: turning an X11 `GetImage` reply into RGBA,
//! painting over redacted regions, downscaling for a vision model, drawing
//! Set-of-Mark outlines and labels, PNG encoding and decoding, and the vision-token
//! estimate of an image.
//!
//! Two coordinate spaces appear here. *Device pixels* are the X server's pixels, the
//! space of a capture as it arrives. *Image pixels* are the pixels of the image handed
//! on, which differ from device pixels once [`downscale`] has shrunk it; the scale it
//! returns converts between the two. Every function here works in the pixels of the
//! image it is given and never panics on coordinates outside it.

use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{ExtendedColorType, ImageEncoder, ImageError, Rgba, RgbaImage};

/// Opaque dark grey written over redacted regions by [`paint_over`], as RGBA.
/// Opaque, so nothing of the region shows through; dark grey rather than black, so a
/// redaction reads as deliberate and not as an unpainted window.
pub const REDACTION_FILL: [u8; 4] = [40, 40, 40, 255];

/// Opaque magenta used by [`draw_marks`] for outlines and label tags, as RGBA.
/// Magenta is rare in application interfaces, so marks stand out from what they mark.
pub const MARK_COLOUR: [u8; 4] = [255, 0, 255, 255];

/// Colour of label text inside a tag, as RGBA (opaque white on [`MARK_COLOUR`]).
pub const LABEL_TEXT_COLOUR: [u8; 4] = [255, 255, 255, 255];

/// Width of a mark's outline, in image pixels.
pub const OUTLINE_WIDTH: i32 = 2;

/// Width of one glyph of the embedded label font, in image pixels.
pub const GLYPH_WIDTH: u32 = 5;

/// Height of one glyph of the embedded label font, in image pixels.
pub const GLYPH_HEIGHT: u32 = 7;

/// Space between two glyphs of a label, in image pixels.
pub const GLYPH_SPACING: u32 = 1;

/// Space between a label tag's edge and its text on every side, in image pixels.
pub const TAG_PADDING: u32 = 2;

/// What went wrong converting, encoding or decoding an image.
#[derive(Debug, thiserror::Error)]
pub enum PixelError {
    /// The `GetImage` reply's pixel format is not one [`from_zpixmap`] reads.
    #[error(
        "unsupported ZPixmap format: depth {depth} at {bits_per_pixel} bits per pixel \
         (readable: depth 24 or 32 at 32 bits per pixel, depth 16 at 16 bits per pixel)"
    )]
    UnsupportedFormat {
        /// The visual's depth, in bits.
        depth: u8,
        /// Bits each pixel occupies in the reply.
        bits_per_pixel: u8,
    },
    /// The reply holds fewer bytes than its width, height and pixel size need.
    #[error(
        "ZPixmap data of {len} bytes is too short for {width}×{height} pixels at \
         {bits_per_pixel} bits per pixel ({needed} bytes per scanline, {stride} available)"
    )]
    ShortData {
        /// Length of the reply's data, in bytes.
        len: usize,
        /// Image width, in device pixels.
        width: u32,
        /// Image height, in device pixels.
        height: u32,
        /// Bits each pixel occupies in the reply.
        bits_per_pixel: u8,
        /// Bytes one scanline's pixels need.
        needed: usize,
        /// Bytes per scanline the data holds (its length over the height).
        stride: usize,
    },
    /// The PNG encoder refused the image.
    #[error("PNG encoding failed: {0}")]
    Encode(#[source] ImageError),
    /// The bytes are not a PNG the decoder can read.
    #[error("PNG decoding failed: {0}")]
    #[cfg(test)]
    Decode(#[source] ImageError),
}

/// Converts the data of an X11 `GetImage` reply in ZPixmap format into an opaque RGBA
/// image of `width`×`height` device pixels.
///
/// Reads two formats:
/// - 32 bits per pixel at depth 24 or 32: each pixel is the 32-bit value
///   `0x00RRGGBB` in the server's byte order, so with `lsb_first` (the reply's
///   image byte order is LSBFirst, little-endian) its bytes are B, G, R, X and
///   otherwise X, R, G, B. The top byte is ignored, even at depth 32.
/// - 16 bits per pixel at depth 16: each pixel is RGB565 (red in the top 5 bits, green
///   in the middle 6, blue in the low 5) in the server's byte order; each channel is
///   widened to 8 bits by repeating its high bits, so full scale stays 255.
///
/// Scanlines may be padded (X11 pads them to the format's scanline pad, usually 32
/// bits): the stride is taken as `data.len() / height` bytes and must be at least
/// `width × bits_per_pixel / 8`. Every output pixel has alpha 255.
///
/// # Errors
/// [`PixelError::UnsupportedFormat`] for any other depth and pixel size, and
/// [`PixelError::ShortData`] when the data is too short for the size.
pub fn from_zpixmap(
    data: &[u8],
    width: u32,
    height: u32,
    depth: u8,
    bits_per_pixel: u8,
    lsb_first: bool,
) -> Result<RgbaImage, PixelError> {
    let bytes_per_pixel: usize = match (bits_per_pixel, depth) {
        (32, 24 | 32) => 4,
        (16, 16) => 2,
        _ => {
            return Err(PixelError::UnsupportedFormat {
                depth,
                bits_per_pixel,
            });
        }
    };
    if width == 0 || height == 0 {
        return Ok(RgbaImage::new(width, height));
    }
    let stride = data.len() / height as usize;
    let needed = (width as usize).saturating_mul(bytes_per_pixel);
    if stride < needed {
        return Err(PixelError::ShortData {
            len: data.len(),
            width,
            height,
            bits_per_pixel,
            needed,
            stride,
        });
    }

    let mut out = RgbaImage::new(width, height);
    for (row, scanline) in out.rows_mut().zip(data.chunks_exact(stride)) {
        for (pixel, src) in row.zip(scanline[..needed].chunks_exact(bytes_per_pixel)) {
            *pixel = Rgba(match *src {
                [a, b, c, d] => {
                    let value = if lsb_first {
                        u32::from_le_bytes([a, b, c, d])
                    } else {
                        u32::from_be_bytes([a, b, c, d])
                    };
                    let [_, r, g, b] = value.to_be_bytes();
                    [r, g, b, 255]
                }
                [a, b] => {
                    let value = if lsb_first {
                        u16::from_le_bytes([a, b])
                    } else {
                        u16::from_be_bytes([a, b])
                    };
                    rgb565_to_rgba(value)
                }
                // Chunks are exactly `bytes_per_pixel` (4 or 2) bytes long.
                _ => [0, 0, 0, 255],
            });
        }
    }
    Ok(out)
}

/// One RGB565 value widened to opaque 8-bit RGBA.
fn rgb565_to_rgba(value: u16) -> [u8; 4] {
    // Each field is at most 0x3f after masking, so the narrowing casts are exact.
    let r = ((value >> 11) & 0x1f) as u8;
    let g = ((value >> 5) & 0x3f) as u8;
    let b = (value & 0x1f) as u8;
    [
        (r << 3) | (r >> 2),
        (g << 2) | (g >> 4),
        (b << 3) | (b >> 2),
        255,
    ]
}

/// Fills the rectangle at (`x`, `y`) of `w`×`h` image pixels with [`REDACTION_FILL`].
///
/// The rectangle is clipped to the image: parts outside it are ignored, and a
/// rectangle with a zero or negative width or height, or lying wholly outside, changes
/// nothing. Never panics.
pub fn paint_over(img: &mut RgbaImage, x: i32, y: i32, w: i32, h: i32) {
    fill_rect(img, x.into(), y.into(), w.into(), h.into(), REDACTION_FILL);
}

/// Fills a rectangle given in image pixels, clipped to the image. Works in `i64` so
/// that `x + w` cannot overflow for any `i32` inputs.
fn fill_rect(img: &mut RgbaImage, x: i64, y: i64, w: i64, h: i64, colour: [u8; 4]) {
    if w <= 0 || h <= 0 {
        return;
    }
    let x0 = x.max(0);
    let y0 = y.max(0);
    let x1 = (x + w).min(i64::from(img.width()));
    let y1 = (y + h).min(i64::from(img.height()));
    if x0 >= x1 || y0 >= y1 {
        return;
    }
    // After clipping, every bound lies in 0..=u32::MAX (the image's size).
    let (Ok(x0), Ok(y0), Ok(x1), Ok(y1)) = (
        u32::try_from(x0),
        u32::try_from(y0),
        u32::try_from(x1),
        u32::try_from(y1),
    ) else {
        return;
    };
    for py in y0..y1 {
        for px in x0..x1 {
            img.put_pixel(px, py, Rgba(colour));
        }
    }
}

/// Shrinks an image so its longer side is at most `max_side` image pixels.
///
/// When the longer side exceeds `max_side`, the image is resized (with
/// [`FilterType::Triangle`], bilinear) so that side is exactly `max_side` and the other
/// is `round(side × s)`, at least 1. Returns the new image and the scale
/// `s = max_side / long_side`, in output image pixels per source pixel: a source
/// coordinate times `s` is an output coordinate. Otherwise, and always when `max_side`
/// is 0 (no limit), returns a copy and 1.0.
pub fn downscale(img: &RgbaImage, max_side: u32) -> (RgbaImage, f64) {
    let (width, height) = img.dimensions();
    let long_side = width.max(height);
    if max_side == 0 || long_side <= max_side {
        return (img.clone(), 1.0);
    }
    let scale = f64::from(max_side) / f64::from(long_side);
    let shrink = |side: u32| -> u32 {
        // side × scale < max_side ≤ u32::MAX, so the float fits back into a u32.
        let scaled = (f64::from(side) * scale).round();
        (scaled as u32).clamp(1, max_side)
    };
    let (new_width, new_height) = if width >= height {
        (max_side, shrink(height))
    } else {
        (shrink(width), max_side)
    };
    let resized = image::imageops::resize(img, new_width, new_height, FilterType::Triangle);
    (resized, scale)
}

/// One Set-of-Mark mark: a labelled rectangle, in image pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// Text of the mark's tag, usually the element's short id. Drawn with the
    /// embedded font: digits, letters (upper case drawn as lower case) and `- . : _ /`;
    /// other characters are left as blank cells.
    pub label: String,
    /// Left edge, in image pixels (may be negative or beyond the image).
    pub x: i32,
    /// Top edge, in image pixels (may be negative or beyond the image).
    pub y: i32,
    /// Width, in image pixels; zero or negative draws no outline.
    pub width: i32,
    /// Height, in image pixels; zero or negative draws no outline.
    pub height: i32,
}

#[cfg(test)]
/// Draws Set-of-Mark annotations: every mark's outline, then every mark's label tag.
///
/// Each outline is [`OUTLINE_WIDTH`] (2) image pixels wide in [`MARK_COLOUR`], lying
/// exactly on the mark's rectangle: its outer ring is the rectangle's edge pixels and
/// its inner ring the next ring in, so nothing inside those two rings is touched.
///
/// Each tag is a [`MARK_COLOUR`] box of [`label_size`] holding the label in
/// [`LABEL_TEXT_COLOUR`], placed with its bottom-left corner just above the
/// rectangle's top-left corner, or inside the rectangle at its top-left when there is
/// no room above. The tag is shifted as needed to stay within the image, so a mark
/// partly off the image still shows a readable label. Tags are drawn
/// after all outlines so no outline crosses a label. A mark with no area, or lying
/// wholly outside the image, draws nothing (neither outline nor tag). Everything is
/// clipped to the image; never panics.
pub fn draw_marks(img: &mut RgbaImage, marks: &[Mark]) {
    draw_marks_zoomed(img, marks, 1);
}

/// [`draw_marks`] with the label tags drawn `zoom` times larger (each font pixel a
/// `zoom`×`zoom` block; [`label_size`] × `zoom`): for large images, where a 7-pixel
/// label is hard to read. A `zoom` of 0 counts as 1.
pub fn draw_marks_zoomed(img: &mut RgbaImage, marks: &[Mark], zoom: u32) {
    let zoom = zoom.max(1);
    for mark in marks {
        if is_visible(img, mark) {
            draw_outline(img, mark);
        }
    }
    for mark in marks {
        if is_visible(img, mark) {
            draw_tag(img, mark, zoom);
        }
    }
}

/// Draws a mark's two-pixel outline, clipped to the image.
fn draw_outline(img: &mut RgbaImage, mark: &Mark) {
    let (x, y, w, h) = (
        i64::from(mark.x),
        i64::from(mark.y),
        i64::from(mark.width),
        i64::from(mark.height),
    );
    if w <= 0 || h <= 0 {
        return;
    }
    let band = i64::from(OUTLINE_WIDTH);
    fill_rect(img, x, y, w, band.min(h), MARK_COLOUR);
    fill_rect(img, x, y + h - band.min(h), w, band.min(h), MARK_COLOUR);
    fill_rect(img, x, y, band.min(w), h, MARK_COLOUR);
    fill_rect(img, x + w - band.min(w), y, band.min(w), h, MARK_COLOUR);
}

/// Draws a mark's label tag, clipped to the image.
fn draw_tag(img: &mut RgbaImage, mark: &Mark, zoom: u32) {
    let (tag_w, tag_h) = label_size(&mark.label);
    if tag_w == 0 || tag_h == 0 {
        return;
    }
    let z = i64::from(zoom);
    let (tag_w, tag_h) = (tag_w.saturating_mul(zoom), tag_h.saturating_mul(zoom));
    let (tag_w, tag_h) = (i64::from(tag_w), i64::from(tag_h));
    let (img_w, img_h) = (i64::from(img.width()), i64::from(img.height()));
    let above = i64::from(mark.y) - tag_h;
    let top = if above >= 0 { above } else { i64::from(mark.y) };
    // Keep the tag on the image where it fits; a tag wider or taller than the image
    // starts at its top-left corner and is clipped.
    let left = i64::from(mark.x).min(img_w - tag_w).max(0);
    let top = top.min(img_h - tag_h).max(0);
    fill_rect(img, left, top, tag_w, tag_h, MARK_COLOUR);

    let padding = i64::from(TAG_PADDING) * z;
    let advance = i64::from(GLYPH_WIDTH + GLYPH_SPACING) * z;
    for (cell, c) in (0_i64..).zip(mark.label.chars()) {
        let Some(rows) = glyph(c) else { continue };
        let cell_left = left + padding + cell * advance;
        for (dy, bits) in (0_i64..).zip(rows) {
            for dx in 0..GLYPH_WIDTH {
                if (bits >> (GLYPH_WIDTH - 1 - dx)) & 1 == 1 {
                    let px = cell_left + i64::from(dx) * z;
                    fill_rect(img, px, top + padding + dy * z, z, z, LABEL_TEXT_COLOUR);
                }
            }
        }
    }
}

/// Whether a mark's rectangle has an area and overlaps the image.
fn is_visible(img: &RgbaImage, mark: &Mark) -> bool {
    let (x, y) = (i64::from(mark.x), i64::from(mark.y));
    let (w, h) = (i64::from(mark.width), i64::from(mark.height));
    w > 0
        && h > 0
        && x < i64::from(img.width())
        && y < i64::from(img.height())
        && x + w > 0
        && y + h > 0
}

/// Size of the tag [`draw_marks`] draws for `label`, as (width, height) in image
/// pixels: one [`GLYPH_WIDTH`]×[`GLYPH_HEIGHT`] cell per character with
/// [`GLYPH_SPACING`] between cells, and [`TAG_PADDING`] on every side. An empty label
/// has no tag: (0, 0).
///
/// For a label of `n` characters that is (`6n + 3`, 11); "12" gives (15, 11).
pub fn label_size(label: &str) -> (u32, u32) {
    let count = u32::try_from(label.chars().count()).unwrap_or(u32::MAX);
    if count == 0 {
        return (0, 0);
    }
    let text_width = count
        .saturating_mul(GLYPH_WIDTH + GLYPH_SPACING)
        .saturating_sub(GLYPH_SPACING);
    (
        text_width.saturating_add(2 * TAG_PADDING),
        GLYPH_HEIGHT + 2 * TAG_PADDING,
    )
}

/// The 5×7 bitmap of `c`, one byte per row from the top, the low 5 bits of each byte
/// being the row's pixels from left (bit 4) to right (bit 0). Upper-case letters use
/// the lower-case bitmaps; characters without a bitmap give `None`.
fn glyph(c: char) -> Option<&'static [u8; 7]> {
    let c = c.to_ascii_lowercase();
    match c {
        '0'..='9' => DIGITS.get(usize::from(c as u8 - b'0')),
        'a'..='z' => LETTERS.get(usize::from(c as u8 - b'a')),
        '-' => Some(&[0, 0, 0, 0b01110, 0, 0, 0]),
        '.' => Some(&[0, 0, 0, 0, 0, 0b01100, 0b01100]),
        ':' => Some(&[0, 0b01100, 0b01100, 0, 0b01100, 0b01100, 0]),
        '_' => Some(&[0, 0, 0, 0, 0, 0, 0b11111]),
        '/' => Some(&[0, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0]),
        _ => None,
    }
}

/// Bitmaps of `0`–`9`, in the layout [`glyph`] describes.
const DIGITS: [[u8; 7]; 10] = [
    [
        0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110,
    ],
    [
        0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110,
    ],
    [
        0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111,
    ],
    [
        0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110,
    ],
    [
        0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010,
    ],
    [
        0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110,
    ],
    [
        0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110,
    ],
    [
        0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000,
    ],
    [
        0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110,
    ],
    [
        0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100,
    ],
];

/// Bitmaps of `a`–`z`, in the layout [`glyph`] describes. Letters with descenders
/// (g, j, p, q, y) sit one row higher so the descender fits in the 7 rows.
const LETTERS: [[u8; 7]; 26] = [
    [
        0b00000, 0b00000, 0b01110, 0b00001, 0b01111, 0b10001, 0b01111,
    ], // a
    [
        0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b11110,
    ], // b
    [
        0b00000, 0b00000, 0b01110, 0b10000, 0b10000, 0b10001, 0b01110,
    ], // c
    [
        0b00001, 0b00001, 0b01101, 0b10011, 0b10001, 0b10001, 0b01111,
    ], // d
    [
        0b00000, 0b00000, 0b01110, 0b10001, 0b11111, 0b10000, 0b01110,
    ], // e
    [
        0b00110, 0b01001, 0b01000, 0b11100, 0b01000, 0b01000, 0b01000,
    ], // f
    [
        0b00000, 0b01111, 0b10001, 0b10001, 0b01111, 0b00001, 0b01110,
    ], // g
    [
        0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001,
    ], // h
    [
        0b00100, 0b00000, 0b01100, 0b00100, 0b00100, 0b00100, 0b01110,
    ], // i
    [
        0b00010, 0b00000, 0b00110, 0b00010, 0b00010, 0b10010, 0b01100,
    ], // j
    [
        0b10000, 0b10000, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010,
    ], // k
    [
        0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110,
    ], // l
    [
        0b00000, 0b00000, 0b11010, 0b10101, 0b10101, 0b10001, 0b10001,
    ], // m
    [
        0b00000, 0b00000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001,
    ], // n
    [
        0b00000, 0b00000, 0b01110, 0b10001, 0b10001, 0b10001, 0b01110,
    ], // o
    [
        0b00000, 0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000,
    ], // p
    [
        0b00000, 0b01111, 0b10001, 0b10001, 0b01111, 0b00001, 0b00001,
    ], // q
    [
        0b00000, 0b00000, 0b10110, 0b11001, 0b10000, 0b10000, 0b10000,
    ], // r
    [
        0b00000, 0b00000, 0b01110, 0b10000, 0b01110, 0b00001, 0b11110,
    ], // s
    [
        0b01000, 0b01000, 0b11100, 0b01000, 0b01000, 0b01001, 0b00110,
    ], // t
    [
        0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b10011, 0b01101,
    ], // u
    [
        0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100,
    ], // v
    [
        0b00000, 0b00000, 0b10001, 0b10001, 0b10101, 0b10101, 0b01010,
    ], // w
    [
        0b00000, 0b00000, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001,
    ], // x
    [
        0b00000, 0b10001, 0b10001, 0b10001, 0b01111, 0b00001, 0b01110,
    ], // y
    [
        0b00000, 0b00000, 0b11111, 0b00010, 0b00100, 0b01000, 0b11111,
    ], // z
];

/// Encodes an RGBA image as PNG (8 bits per channel, with alpha).
///
/// # Errors
/// [`PixelError::Encode`] when the encoder refuses the image.
pub fn encode_png(img: &RgbaImage) -> Result<Vec<u8>, PixelError> {
    let mut bytes = Vec::new();
    PngEncoder::new(&mut bytes)
        .write_image(
            img.as_raw(),
            img.width(),
            img.height(),
            ExtendedColorType::Rgba8,
        )
        .map_err(PixelError::Encode)?;
    Ok(bytes)
}

#[cfg(test)]
/// Decodes PNG bytes into an RGBA image, converting any PNG colour type to 8-bit RGBA.
///
/// # Errors
/// [`PixelError::Decode`] when the bytes are not a readable PNG.
pub fn decode_png(bytes: &[u8]) -> Result<RgbaImage, PixelError> {
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes));
    reader.set_format(image::ImageFormat::Png);
    let decoded = reader.decode().map_err(PixelError::Decode)?;
    Ok(decoded.into_rgba8())
}

/// A pixel differs from the background by more than this in luminance (0–255) to
/// count as ink when looking for frames: anti-aliased glyph edges and the light
/// bevels of toolkit buttons stay below it, text and borders above.
const INK_CONTRAST: i32 = 64;

/// Ink components whose bounding box is at least this many times their pixel count
/// are outlines (button frames, ovals, boxes), not glyphs: a glyph fills a third or
/// more of its box, a 2-pixel frame of a 60×24 button about a tenth.
const FRAME_SPARSENESS: u64 = 4;

/// Shortest side of an outline's box, pixels: smaller components are glyphs
/// (dots, commas, thin letters) whatever their density.
const FRAME_MIN_SIDE: u32 = 12;

/// The luminance of a pixel (ITU-R BT.601 weights), 0–255.
fn luma(p: &Rgba<u8>) -> i32 {
    (i32::from(p.0[0]) * 299 + i32::from(p.0[1]) * 587 + i32::from(p.0[2]) * 114) / 1000
}

/// The most frequent colour of `img`, its background, from at most 65,536 samples
/// spread over it.
pub fn background(img: &RgbaImage) -> Rgba<u8> {
    let n = u64::from(img.width()) * u64::from(img.height());
    let step = usize::try_from((n / 65_536).max(1)).unwrap_or(usize::MAX);
    let mut counts: std::collections::HashMap<[u8; 4], u32> = std::collections::HashMap::new();
    for p in img.pixels().step_by(step) {
        *counts.entry(p.0).or_default() += 1;
    }
    let best = counts
        .into_iter()
        .max_by_key(|(c, n)| (*n, *c))
        .map_or([255, 255, 255, 255], |(c, _)| c);
    Rgba(best)
}

/// Paints the outlines in `img` (button frames, ovals, boxes, long rules) with the
/// background `bg`, leaving glyphs: text recognisers read a word inside a frame as
/// part of one large shape and often drop it (tesseract on Athena's oval buttons).
/// An outline is a connected (8-neighbour) component of ink pixels whose box is at
/// least [`FRAME_SPARSENESS`] times its pixel count with both sides at least
/// [`FRAME_MIN_SIDE`], or a rule at most 2 pixels thick and 4 × [`FRAME_MIN_SIDE`]
/// long. Returns the boxes of the outlines painted (`(left, top, width, height)`,
/// pixels), rules not included.
pub fn erase_frames(img: &mut RgbaImage, bg: Rgba<u8>) -> Vec<(i32, i32, i32, i32)> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let bl = luma(&bg);
    let ink: Vec<bool> = img
        .pixels()
        .map(|p| (luma(p) - bl).abs() > INK_CONTRAST)
        .collect();
    let mut seen = vec![false; w * h];
    let mut frames = Vec::new();
    let mut stack = Vec::new();
    let mut members = Vec::new();
    for start in 0..w * h {
        if !ink[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        members.clear();
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        while let Some(i) = stack.pop() {
            members.push(i);
            let (x, y) = (i % w, i / w);
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
            for dy in -1i64..=1 {
                for dx in -1i64..=1 {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    if nx < 0 || ny < 0 || nx >= w as i64 || ny >= h as i64 {
                        continue;
                    }
                    let j = ny as usize * w + nx as usize;
                    if ink[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        let (bw, bh) = ((x1 - x0 + 1) as u64, (y1 - y0 + 1) as u64);
        let min_side = u64::from(FRAME_MIN_SIDE);
        let outline =
            bw >= min_side && bh >= min_side && bw * bh >= FRAME_SPARSENESS * members.len() as u64;
        let rule = (bh <= 2 && bw >= 4 * min_side) || (bw <= 2 && bh >= 4 * min_side);
        if outline || rule {
            for &i in &members {
                img.put_pixel((i % w) as u32, (i / w) as u32, bg);
            }
            if outline {
                let c = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
                frames.push((c(x0), c(y0), c(x1 - x0 + 1), c(y1 - y0 + 1)));
            }
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLANK: [u8; 4] = [1, 2, 3, 255];

    fn blank(width: u32, height: u32) -> RgbaImage {
        RgbaImage::from_pixel(width, height, Rgba(BLANK))
    }

    fn at(img: &RgbaImage, x: u32, y: u32) -> [u8; 4] {
        img.get_pixel(x, y).0
    }

    #[test]
    fn zpixmap_32bpp_little_endian_with_padded_stride() {
        // 2×2 pixels, 8 bytes of pixels per scanline padded to a 12-byte stride.
        #[rustfmt::skip]
        let data = [
            // B, G, R, X
            0x30, 0x20, 0x10, 0x00,  0x03, 0x02, 0x01, 0xff,  0xee, 0xee, 0xee, 0xee,
            0x00, 0x00, 0xff, 0x00,  0xff, 0xff, 0xff, 0x00,  0xee, 0xee, 0xee, 0xee,
        ];
        let img = from_zpixmap(&data, 2, 2, 24, 32, true).expect("valid format");
        assert_eq!(img.dimensions(), (2, 2));
        assert_eq!(at(&img, 0, 0), [0x10, 0x20, 0x30, 255]);
        assert_eq!(at(&img, 1, 0), [0x01, 0x02, 0x03, 255]);
        assert_eq!(at(&img, 0, 1), [0xff, 0x00, 0x00, 255]);
        assert_eq!(at(&img, 1, 1), [0xff, 0xff, 0xff, 255]);
    }

    #[test]
    fn zpixmap_32bpp_big_endian() {
        // X, R, G, B
        let data = [0x00, 0x10, 0x20, 0x30];
        let img = from_zpixmap(&data, 1, 1, 32, 32, false).expect("valid format");
        assert_eq!(at(&img, 0, 0), [0x10, 0x20, 0x30, 255]);
    }

    #[test]
    fn zpixmap_rgb565() {
        // 2×2 pixels, little-endian: red, green / blue, white.
        let data = [0x00, 0xf8, 0xe0, 0x07, 0x1f, 0x00, 0xff, 0xff];
        let img = from_zpixmap(&data, 2, 2, 16, 16, true).expect("valid format");
        assert_eq!(at(&img, 0, 0), [255, 0, 0, 255]);
        assert_eq!(at(&img, 1, 0), [0, 255, 0, 255]);
        assert_eq!(at(&img, 0, 1), [0, 0, 255, 255]);
        assert_eq!(at(&img, 1, 1), [255, 255, 255, 255]);

        let big_endian = [0xf8, 0x00];
        let img = from_zpixmap(&big_endian, 1, 1, 16, 16, false).expect("valid format");
        assert_eq!(at(&img, 0, 0), [255, 0, 0, 255]);
    }

    #[test]
    fn zpixmap_rejects_other_formats_and_short_data() {
        let err = from_zpixmap(&[0; 12], 2, 2, 24, 24, true).expect_err("24 bpp");
        assert!(matches!(
            err,
            PixelError::UnsupportedFormat {
                depth: 24,
                bits_per_pixel: 24
            }
        ));
        assert!(err.to_string().contains("depth 24 at 24 bits per pixel"));
        assert!(from_zpixmap(&[0; 8], 2, 2, 16, 32, true).is_err());
        assert!(from_zpixmap(&[0; 8], 2, 2, 24, 16, true).is_err());

        let err = from_zpixmap(&[0; 12], 2, 2, 24, 32, true).expect_err("short");
        assert!(matches!(
            err,
            PixelError::ShortData {
                needed: 8,
                stride: 6,
                ..
            }
        ));
    }

    #[test]
    fn paint_over_clips_to_the_image() {
        let mut img = blank(10, 10);
        paint_over(&mut img, -3, -3, 5, 5);
        assert_eq!(at(&img, 0, 0), REDACTION_FILL);
        assert_eq!(at(&img, 1, 1), REDACTION_FILL);
        assert_eq!(at(&img, 2, 2), BLANK);
        assert_eq!(at(&img, 2, 0), BLANK);

        paint_over(&mut img, 8, 8, 100, 100);
        assert_eq!(at(&img, 9, 9), REDACTION_FILL);
        assert_eq!(at(&img, 7, 9), BLANK);
    }

    #[test]
    fn paint_over_outside_or_empty_changes_nothing() {
        let mut img = blank(10, 10);
        paint_over(&mut img, 20, 20, 5, 5);
        paint_over(&mut img, -20, 0, 5, 5);
        paint_over(&mut img, 2, 2, -3, 5);
        paint_over(&mut img, 2, 2, 5, 0);
        paint_over(&mut img, i32::MAX, i32::MAX, i32::MAX, i32::MAX);
        assert_eq!(img, blank(10, 10));

        paint_over(&mut img, i32::MIN, i32::MIN, i32::MAX, i32::MAX);
        assert_eq!(img, blank(10, 10));
    }

    #[test]
    fn downscale_sizes_and_scale() {
        let (small, scale) = downscale(&blank(3840, 2160), 1280);
        assert_eq!(small.dimensions(), (1280, 720));
        assert_eq!(scale, 1.0 / 3.0);

        let (tall, scale) = downscale(&blank(50, 2000), 1000);
        assert_eq!(tall.dimensions(), (25, 1000));
        assert_eq!(scale, 0.5);

        let (thin, _) = downscale(&blank(4000, 1), 100);
        assert_eq!(thin.dimensions(), (100, 1));

        let original = blank(100, 50);
        let (same, scale) = downscale(&original, 1280);
        assert_eq!(same, original);
        assert_eq!(scale, 1.0);

        let (same, scale) = downscale(&original, 0);
        assert_eq!(same, original);
        assert_eq!(scale, 1.0);
    }

    #[test]
    fn draw_marks_outline_lies_on_the_edges() {
        let mut img = blank(100, 100);
        let mark = Mark {
            label: "7".to_owned(),
            x: 20,
            y: 30,
            width: 40,
            height: 40,
        };
        draw_marks(&mut img, &[mark]);
        // Corners, edge midpoints, and the inner ring.
        for (x, y) in [
            (20, 30),
            (59, 30),
            (20, 69),
            (59, 69),
            (39, 30),
            (20, 49),
            (59, 49),
            (39, 69),
            (21, 31),
            (58, 68),
            (39, 31),
            (21, 49),
        ] {
            assert_eq!(at(&img, x, y), MARK_COLOUR, "outline at ({x}, {y})");
        }
        // Third ring in, 4 px in, and just outside are untouched.
        for (x, y) in [(22, 32), (24, 34), (39, 49), (60, 49), (39, 70), (19, 49)] {
            assert_eq!(at(&img, x, y), BLANK, "untouched at ({x}, {y})");
        }
    }

    #[test]
    fn draw_marks_puts_the_tag_above_the_box() {
        let mut img = blank(100, 100);
        let mark = Mark {
            label: "7".to_owned(),
            x: 20,
            y: 30,
            width: 40,
            height: 40,
        };
        draw_marks(&mut img, &[mark]);
        let (tag_w, tag_h) = label_size("7");
        assert_eq!((tag_w, tag_h), (9, 11));
        let top = 30 - tag_h;
        // Tag corners are filled, the row above the tag is not.
        assert_eq!(at(&img, 20, top), MARK_COLOUR);
        assert_eq!(at(&img, 20 + tag_w - 1, 29), MARK_COLOUR);
        assert_eq!(at(&img, 20, top - 1), BLANK);
        assert_eq!(at(&img, 20 + tag_w, top), BLANK);
        // The "7" glyph's top row is solid white inside the padding.
        for dx in 0..GLYPH_WIDTH {
            assert_eq!(at(&img, 22 + dx, top + 2), LABEL_TEXT_COLOUR);
        }
        // Its second row has only the rightmost pixel set.
        assert_eq!(at(&img, 22, top + 3), MARK_COLOUR);
        assert_eq!(at(&img, 26, top + 3), LABEL_TEXT_COLOUR);
    }

    #[test]
    fn draw_marks_puts_the_tag_inside_without_room_above() {
        let mut img = blank(100, 100);
        let mark = Mark {
            label: "ab".to_owned(),
            x: 10,
            y: 5,
            width: 40,
            height: 40,
        };
        draw_marks(&mut img, &[mark]);
        let (tag_w, tag_h) = label_size("ab");
        assert_eq!((tag_w, tag_h), (15, 11));
        // Inside the rectangle from its top-left corner, past the outline.
        assert_eq!(at(&img, 10 + 3, 5 + 3), MARK_COLOUR);
        assert_eq!(at(&img, 10 + tag_w - 1, 5 + tag_h - 1), MARK_COLOUR);
        assert_eq!(at(&img, 10 + 4, 5 + tag_h), BLANK);
        assert_eq!(at(&img, 10, 4), BLANK);
        let white = (10..10 + tag_w)
            .flat_map(|x| (5..5 + tag_h).map(move |y| (x, y)))
            .filter(|&(x, y)| at(&img, x, y) == LABEL_TEXT_COLOUR)
            .count();
        assert!(white > 10, "label text drawn ({white} white pixels)");
    }

    #[test]
    fn labels_are_drawn_over_outlines() {
        let mut img = blank(100, 100);
        let marks = [
            Mark {
                label: "1".to_owned(),
                x: 20,
                y: 40,
                width: 30,
                height: 30,
            },
            // An outline running right through the first mark's tag.
            Mark {
                label: String::new(),
                x: 0,
                y: 33,
                width: 100,
                height: 20,
            },
        ];
        draw_marks(&mut img, &marks);
        // The "1" glyph's top row is 0b00100: its centre pixel at row 0 of the text.
        let top = 40 - 11;
        assert_eq!(at(&img, 22 + 2, top + 2), LABEL_TEXT_COLOUR);
        // Row 4 of the text (y 33) crosses the second outline; the glyph survives.
        assert_eq!(at(&img, 22 + 2, 33), LABEL_TEXT_COLOUR);
        assert_eq!(at(&img, 22, 33), MARK_COLOUR);
    }

    #[test]
    fn draw_marks_partly_or_wholly_outside_does_not_panic() {
        let mut img = blank(50, 50);
        let marks = [
            Mark {
                label: "12".to_owned(),
                x: -10,
                y: -10,
                width: 30,
                height: 30,
            },
            Mark {
                label: "x9".to_owned(),
                x: 40,
                y: 45,
                width: 100,
                height: 100,
            },
            Mark {
                label: "far".to_owned(),
                x: 500,
                y: -500,
                width: 10,
                height: 10,
            },
            Mark {
                label: "?!é".to_owned(),
                x: i32::MAX,
                y: i32::MIN,
                width: i32::MAX,
                height: i32::MAX,
            },
            Mark {
                label: "0123456789abcdefghijklmnopqrstuvwxyz".to_owned(),
                x: 0,
                y: 0,
                width: -5,
                height: 0,
            },
        ];
        draw_marks(&mut img, &marks);
        // The first mark's outline shows where it overlaps the image.
        assert_eq!(at(&img, 19, 30), BLANK);
        assert_eq!(at(&img, 18, 10), MARK_COLOUR);
        assert_eq!(at(&img, 10, 19), MARK_COLOUR);
        // The mark wholly off the image draws no tag on it.
        assert_eq!(at(&img, 40, 5), BLANK);

        let mut tiny = blank(3, 3);
        draw_marks(&mut tiny, &marks);
    }

    #[test]
    fn zoomed_labels_are_drawn_twice_as_large() {
        let bg = Rgba([0, 0, 0, 255]);
        let mut one = RgbaImage::from_pixel(200, 120, bg);
        let mut two = one.clone();
        let mark = Mark {
            label: "e7".into(),
            x: 20,
            y: 60,
            width: 80,
            height: 40,
        };
        draw_marks(&mut one, std::slice::from_ref(&mark));
        draw_marks_zoomed(&mut two, &[mark], 2);
        let white = |img: &RgbaImage| img.pixels().filter(|p| p.0 == LABEL_TEXT_COLOUR).count();
        assert_eq!(
            white(&two),
            4 * white(&one),
            "each font pixel is a 2×2 block"
        );
        // The tag is 2 × 11 pixels tall, above the box.
        assert_eq!(two.get_pixel(20, 60 - 22).0, MARK_COLOUR);
        assert_eq!(two.get_pixel(20, 60 - 23).0, bg.0);
    }

    #[test]
    fn label_size_counts_characters() {
        assert_eq!(label_size(""), (0, 0));
        assert_eq!(label_size("1"), (9, 11));
        assert_eq!(label_size("12"), (15, 11));
        assert_eq!(label_size("a7é"), (21, 11));
    }

    #[test]
    fn png_round_trip_preserves_pixels() {
        let mut img = RgbaImage::new(3, 2);
        for (i, pixel) in (0_u8..).zip(img.pixels_mut()) {
            *pixel = Rgba([i * 40, 255 - i * 30, i, 128 + i]);
        }
        let bytes = encode_png(&img).expect("encodes");
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(decode_png(&bytes).expect("decodes"), img);
    }

    #[test]
    fn decode_png_rejects_other_bytes() {
        assert!(matches!(
            decode_png(b"not a png"),
            Err(PixelError::Decode(_))
        ));
    }

    #[test]
    fn frames_are_erased_and_glyphs_kept() {
        let bg = Rgba([255, 255, 255, 255]);
        let black = Rgba([0, 0, 0, 255]);
        let mut img = RgbaImage::from_pixel(80, 40, bg);
        // A 60×24 frame, 1 pixel wide, around a solid 6×8 "glyph".
        for x in 10..70 {
            img.put_pixel(x, 8, black);
            img.put_pixel(x, 31, black);
        }
        for y in 8..32 {
            img.put_pixel(10, y, black);
            img.put_pixel(69, y, black);
        }
        for x in 30..36 {
            for y in 16..24 {
                img.put_pixel(x, y, black);
            }
        }
        assert_eq!(erase_frames(&mut img, bg), vec![(10, 8, 60, 24)]);
        assert_eq!(*img.get_pixel(10, 8), bg, "the frame is gone");
        assert_eq!(*img.get_pixel(32, 20), black, "the glyph stays");
        assert_eq!(background(&img), bg);
    }
}

//! The pixel rung of the Linux driver (docs/ARCHITECTURE.md §8a): which X window an
//! accessible window is, the toolkit scale between the tree's pixels and the
//! device's, `screen.capture` (pixels → painted over → downscaled → marked → PNG) and
//! `screen.ocr` (tesseract, run locally on the painted capture).
//!
//! Owns the `x11win:<xid>` handles of windows that publish no tree, and the mapping
//! of every rectangle a caller gives in tree pixels onto the image. It makes no
//! policy decision: the host says what to paint over and whether to capture at all.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use deskpilot_core::{Bounds, Handle};
use deskpilot_protocol::types::{MarkSpec, OcrWord, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};
use image::RgbaImage;

use super::atspi::focus::{Target, is_window};
use super::input::{TopLevel, WindowPixels};
use super::{ocr, pixels};

/// Prefix of the handle of an X11 window that publishes no accessibility tree.
pub const X11_HANDLE_PREFIX: &str = "x11win:";

/// How long tesseract may run on one window, ms. It takes 0.3–2 s on a dialog here
/// (measured with `deskpilot bench`); 30 s bounds a huge window on a loaded machine.
pub const OCR_TIMEOUT_MS: u64 = 30_000;

/// Recognised runs below this mean confidence (0–100) are dropped: tesseract gives
/// 0–30 to noise read from icons and borders, 80–96 to UI text.
pub const OCR_MIN_CONFIDENCE: f32 = 40.0;

/// Text smaller than this many device pixels per tree-less line is upscaled before
/// recognition: tesseract reads best at an x-height of 20–30 px, and 96-dpi UI text
/// is 9–12 px tall, so an image at scale 1 is read at twice its size.
const OCR_UPSCALE_BELOW: f64 = 1.5;

/// Largest image given to tesseract after upscaling, pixels: a window whose
/// doubled size would exceed it (a 4K window) is read at its own size, so one read
/// holds at most about 100 MB of pixels.
const OCR_MAX_PIXELS: u64 = 24_000_000;

/// Margin of the window's background colour around the image given to tesseract,
/// source pixels.
const OCR_PAD: u32 = 8;

/// Margin added around each painted-over rectangle, device pixels, so that a
/// field's border and anti-aliased glyph edges are covered too.
const PAINT_MARGIN: i32 = 2;

/// The handle of the X11 top-level `xid` of process `pid` (a window without a
/// tree): `x11win:<xid>.<pid>`. The pid is part of it because the X server reuses
/// window ids: a new process's window with an old id is another window, and the
/// grant, its revision and its OCR refs must not pass to it.
pub fn x11_handle(xid: u32, pid: u32) -> Handle {
    Handle::new(format!("{X11_HANDLE_PREFIX}{xid}.{pid}"))
}

/// The xid and pid of an `x11win:` handle; `None` for any other handle.
pub fn x11_xid(h: &Handle) -> Option<(u32, u32)> {
    let (xid, pid) = h
        .as_str()
        .strip_prefix(X11_HANDLE_PREFIX)?
        .split_once('.')?;
    Some((xid.parse().ok()?, pid.parse().ok()?))
}

/// Device pixels per tree pixel from a window's two widths (pure): snapped to the
/// nearest quarter when within 5 % of it, else the raw ratio; `None` for an empty
/// width. What is left over is not a scale but a margin: a window-manager border, or
/// the shadow a client-side-decorated GTK 4 window draws around itself (measured:
/// gnome-calculator's tree says 355×498 where its X window is 365×508, 5 px on each
/// side), which `WindowInfo::tree_to_device` centres.
pub fn toolkit_scale(device_width: i32, tree_width: i32) -> Option<f64> {
    if device_width <= 0 || tree_width <= 0 {
        return None;
    }
    let raw = f64::from(device_width) / f64::from(tree_width);
    let snapped = (raw * 4.0).round() / 4.0;
    Some(
        if snapped > 0.0 && (raw - snapped).abs() <= snapped * 0.05 {
            snapped
        } else {
            raw
        },
    )
}

/// One mapped root child: its client window, its area (device pixels) and the
/// client's pid, bottom to top.
pub type Stacked = (u32, Bounds, Option<u32>);

/// The areas of windows of other processes stacked above the top-level `xid` that
/// overlap `area` (pure over `stack`).
pub fn covered(stack: &[Stacked], xid: u32, area: &Bounds) -> Vec<Bounds> {
    let Some(at) = stack.iter().position(|(c, _, _)| *c == xid) else {
        return Vec::new();
    };
    let own = stack[at].2;
    stack[at + 1..]
        .iter()
        .filter(|(_, b, pid)| (own.is_none() || *pid != own) && b.intersects(area))
        .map(|(_, b, _)| *b)
        .collect()
}

/// Fills in the device bounds, toolkit scale and covering windows of each
/// accessible window that an X top-level of `tops` matches (same pid and title; or
/// the one top-level of its process) (pure).
pub fn annotate(windows: &mut [WindowInfo], tops: &[TopLevel], stack: &[Stacked]) {
    for w in windows.iter_mut().filter(|w| !w.no_tree) {
        let target = Target {
            pid: w.pid,
            title: w.title.clone(),
        };
        let Some(top) = tops.iter().find(|t| is_window(t, &target, tops)) else {
            continue;
        };
        w.device_bounds = Some(top.bounds);
        w.toolkit_scale = w
            .bounds
            .and_then(|b| toolkit_scale(top.bounds.width, b.width));
        w.covered_by = covered(stack, top.xid, &top.bounds);
    }
}

/// The X top-level of a window record: its xid for a tree-less window, else the
/// top-level matching it.
pub fn toplevel_of<'a>(w: &WindowInfo, tops: &'a [TopLevel]) -> Option<&'a TopLevel> {
    if let Some((xid, pid)) = x11_xid(&w.handle) {
        return tops.iter().find(|t| t.xid == xid && t.pid == Some(pid));
    }
    let target = Target {
        pid: w.pid,
        title: w.title.clone(),
    };
    tops.iter().find(|t| is_window(t, &target, tops))
}

/// A rectangle in tree pixels, mapped into the pixels of a capture taken at
/// `origin` (device pixels) through the window's toolkit scale, times `image_scale`.
fn to_image(b: &Bounds, w: &WindowInfo, origin: &Bounds, image_scale: f64) -> Bounds {
    let (x0, y0) = w.tree_to_device(f64::from(b.x), f64::from(b.y));
    let (x1, y1) = w.tree_to_device(f64::from(b.x + b.width), f64::from(b.y + b.height));
    let f = |v: f64, o: i32| ((v - f64::from(o)) * image_scale).round() as i32;
    let (ix0, iy0) = (f(x0, origin.x), f(y0, origin.y));
    let (ix1, iy1) = (f(x1, origin.x), f(y1, origin.y));
    Bounds::new(ix0, iy0, ix1 - ix0, iy1 - iy0)
}

/// The window's pixels with every `paint` rectangle (tree pixels) painted over;
/// notes say what the image may not show truthfully.
pub fn painted(px: &WindowPixels, w: &WindowInfo, paint: &[Bounds]) -> (RgbaImage, Vec<String>) {
    let mut img = px.image.clone();
    let mut notes = Vec::new();
    let mut outside = 0;
    for b in paint {
        let r = to_image(b, w, &px.bounds, 1.0);
        let within = r.intersects(&Bounds::new(0, 0, img.width() as i32, img.height() as i32));
        if !within {
            outside += 1;
        }
        pixels::paint_over(
            &mut img,
            r.x - PAINT_MARGIN,
            r.y - PAINT_MARGIN,
            r.width + 2 * PAINT_MARGIN,
            r.height + 2 * PAINT_MARGIN,
        );
    }
    if outside > 0 {
        notes.push(format!(
            "{outside} redacted rectangle(s) lie outside the captured area"
        ));
    }
    if px.covered {
        notes.push(
            "another window overlaps this one: the covered part is painted over (its pixels are the other window's)"
                .into(),
        );
    }
    if px.clipped {
        notes.push("part of the window is off the screen and was not captured".into());
    }
    (img, notes)
}

/// The part of a capture (device pixels at `px.bounds`) that the tree rectangle
/// `region` covers, and its device origin; `None` when it covers nothing.
pub fn crop(
    img: &RgbaImage,
    px: &WindowPixels,
    w: &WindowInfo,
    region: &Bounds,
) -> Option<(RgbaImage, Bounds)> {
    let r = to_image(region, w, &px.bounds, 1.0);
    let x0 = r.x.max(0);
    let y0 = r.y.max(0);
    let x1 = (r.x + r.width).min(img.width() as i32);
    let y1 = (r.y + r.height).min(img.height() as i32);
    if x1 <= x0 || y1 <= y0 {
        return None;
    }
    let part = image::imageops::crop_imm(
        img,
        x0 as u32,
        y0 as u32,
        (x1 - x0) as u32,
        (y1 - y0) as u32,
    )
    .to_image();
    Some((
        part,
        Bounds::new(px.bounds.x + x0, px.bounds.y + y0, x1 - x0, y1 - y0),
    ))
}

/// Downscales to `max_side` and draws the marks (tree pixels): the image, its scale
/// (image pixels per device pixel) and the marks as drawn (image pixels).
pub fn finish(
    img: RgbaImage,
    px: &WindowPixels,
    w: &WindowInfo,
    max_side: Option<u32>,
    marks: &[MarkSpec],
) -> (RgbaImage, f64, Vec<MarkSpec>) {
    let (mut img, scale) = pixels::downscale(&img, max_side.unwrap_or(0));
    let drawn: Vec<MarkSpec> = marks
        .iter()
        .map(|m| MarkSpec {
            label: m.label.clone(),
            bounds: to_image(&m.bounds, w, &px.bounds, scale),
        })
        .collect();
    let boxes: Vec<pixels::Mark> = drawn
        .iter()
        .map(|m| pixels::Mark {
            label: m.label.clone(),
            x: m.bounds.x,
            y: m.bounds.y,
            width: m.bounds.width,
            height: m.bounds.height,
        })
        .collect();
    pixels::draw_marks(&mut img, &boxes);
    (img, scale, drawn)
}

/// The tesseract languages installed, joined for `-l` (`eng+chi_sim`), read once.
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when tesseract is not installed.
fn languages() -> Result<String, ComputerError> {
    static LANGS: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    LANGS
        .get_or_init(|| {
            let out = Command::new("tesseract")
                .arg("--list-langs")
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .ok()?;
            let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .collect();
            out.status.success().then(|| ocr::languages(&lines))
        })
        .clone()
        .ok_or_else(|| {
            ComputerError::new(
                ErrorCode::PlatformUnsupported,
                "OCR needs tesseract, which is not installed: install the Debian packages tesseract-ocr and tesseract-ocr-eng",
            )
        })
}

/// Recognises the text of `img` (device pixels of the area at `origin`) with a
/// local tesseract: runs of words in device pixels. Nothing leaves the machine: the
/// image goes to tesseract's stdin, the words come back on its stdout.
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` without tesseract; `COMPUTER_TIMEOUT`
/// after [`OCR_TIMEOUT_MS`]; `COMPUTER_INTERNAL` when it fails.
pub fn recognise(
    img: &RgbaImage,
    origin: &Bounds,
    toolkit_scale: f64,
) -> Result<(Vec<OcrWord>, String), ComputerError> {
    let langs = languages()?;
    let fits = u64::from(img.width()) * u64::from(img.height()) * 4 <= OCR_MAX_PIXELS;
    let up: u32 = if toolkit_scale < OCR_UPSCALE_BELOW && fits {
        2
    } else {
        1
    };
    let bg = pixels::background(img);
    let mut clean = img.clone();
    let frames = pixels::erase_frames(&mut clean, bg);
    let scaled = image::imageops::resize(
        &clean,
        img.width() * up,
        img.height() * up,
        image::imageops::FilterType::CatmullRom,
    );
    // Text touching the image's edge is often missed: recognise it on a margin of
    // the window's background colour.
    let pad = OCR_PAD * up;
    let mut input = RgbaImage::from_pixel(scaled.width() + 2 * pad, scaled.height() + 2 * pad, bg);
    image::imageops::overlay(&mut input, &scaled, i64::from(pad), i64::from(pad));
    let png = pixels::encode_png(&input)
        .map_err(|e| ComputerError::internal(format!("cannot encode the capture: {e}")))?;
    let mut child = Command::new("tesseract")
        .args(["stdin", "stdout", "-l", &langs, "--psm", "11", "tsv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| ComputerError::internal(format!("cannot start tesseract: {e}")))?;
    // Written from its own thread: a tesseract that stops reading cannot hold this
    // one past the deadline below.
    let writer = child.stdin.take().map(|mut stdin| {
        std::thread::spawn(move || {
            // A write error shows as tesseract's failure below.
            let _ = stdin.write_all(&png);
        })
    });
    let deadline = Instant::now() + Duration::from_millis(OCR_TIMEOUT_MS);
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(out) = stdout.as_mut() {
            let _ = std::io::Read::read_to_string(out, &mut s);
        }
        s
    });
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ComputerError::new(
                    ErrorCode::Timeout,
                    format!("tesseract did not finish within {OCR_TIMEOUT_MS} ms"),
                ));
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| ComputerError::internal(format!("tesseract: {e}")))?;
    let tsv = reader.join().unwrap_or_default();
    if let Some(w) = writer {
        let _ = w.join();
    }
    if !status.success() {
        return Err(ComputerError::internal(format!(
            "tesseract failed ({status}) on a {}x{} capture",
            input.width(),
            input.height()
        )));
    }
    let f = f64::from(up);
    // The frames in the coordinates of the words: upscaled, on the margin.
    let (u, p) = (up as i32, pad as i32);
    let frames: Vec<(i32, i32, i32, i32)> = frames
        .iter()
        .map(|&(x, y, w, h)| (x * u + p, y * u + p, w * u, h * u))
        .collect();
    let words = ocr::group(ocr::parse_tsv(&tsv), OCR_MIN_CONFIDENCE, &frames)
        .into_iter()
        .map(|e| {
            let d = |v: i32| (f64::from(v) / f).round() as i32;
            let p = pad as i32;
            OcrWord {
                text: e.text,
                bounds: Bounds::new(
                    origin.x + d(e.left - p),
                    origin.y + d(e.top - p),
                    d(e.width).max(1),
                    d(e.height).max(1),
                ),
                confidence: e.confidence,
            }
        })
        .collect();
    Ok((words, langs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x11_handles_round_trip_and_others_are_not_x11() {
        assert_eq!(x11_xid(&x11_handle(0x40_0001, 77)), Some((0x40_0001, 77)));
        assert_eq!(
            x11_xid(&Handle::new(":1.9|/org/a11y/atspi/accessible/1")),
            None
        );
        assert_eq!(x11_xid(&Handle::new("x11win:zz")), None);
        assert_eq!(
            x11_xid(&Handle::new("x11win:12")),
            None,
            "a handle names its process"
        );
    }

    #[test]
    fn only_other_processes_windows_above_cover_a_window() {
        let stack: Vec<Stacked> = vec![
            (1, Bounds::new(0, 0, 100, 100), Some(10)),
            (2, Bounds::new(0, 0, 400, 300), Some(20)),
            (3, Bounds::new(50, 50, 40, 20), Some(20)),
            (4, Bounds::new(10, 10, 30, 30), Some(30)),
            (5, Bounds::new(900, 900, 30, 30), Some(40)),
        ];
        let area = Bounds::new(0, 0, 400, 300);
        // Below it (1), its own popup (3) and one elsewhere (5) do not cover it.
        assert_eq!(covered(&stack, 2, &area), vec![Bounds::new(10, 10, 30, 30)]);
        assert!(covered(&stack, 9, &area).is_empty());
    }

    #[test]
    fn toolkit_scales_snap_to_quarters_only_when_close() {
        assert_eq!(toolkit_scale(1600, 800), Some(2.0));
        assert_eq!(toolkit_scale(802, 800), Some(1.0));
        assert_eq!(
            toolkit_scale(365, 355),
            Some(1.0),
            "a GTK 4 shadow is a margin"
        );
        assert_eq!(toolkit_scale(1200, 800), Some(1.5));
        let odd = toolkit_scale(1090, 800).unwrap();
        assert!((odd - 1.3625).abs() < 1e-9, "{odd}");
        assert_eq!(toolkit_scale(0, 800), None);
    }

    #[test]
    fn tree_rectangles_map_onto_a_downscaled_image_of_a_scaled_window() {
        let w = WindowInfo {
            handle: Handle::new("h"),
            app: "gedit".into(),
            pid: None,
            title: String::new(),
            role: deskpilot_core::Role::Window,
            active: true,
            bounds: Some(Bounds::new(100, 50, 400, 300)),
            device_bounds: Some(Bounds::new(200, 100, 800, 600)),
            toolkit_scale: Some(2.0),
            no_tree: false,
            covered_by: Vec::new(),
        };
        let origin = Bounds::new(200, 100, 800, 600);
        // A button at tree (110, 60) 20×10 is at device (220, 120) 40×20, i.e. at
        // (20, 20) in the capture, and at half that in a half-size image.
        let b = to_image(&Bounds::new(110, 60, 20, 10), &w, &origin, 0.5);
        assert_eq!(b, Bounds::new(10, 10, 20, 10));
    }
}

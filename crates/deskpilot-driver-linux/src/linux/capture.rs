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
use deskpilot_protocol::types::{Hidden, MarkSpec, OcrWord, WindowInfo};
use deskpilot_protocol::{ComputerError, ErrorCode};
use image::RgbaImage;

use super::atspi::focus::{Target, is_window};
use super::input::{TopLevel, WindowPixels};
use super::{ocr, pixels};
use deskpilot_protocol::Result;

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

/// Long side from which marks' labels are drawn at twice their size, image pixels.
const LARGE_IMAGE_SIDE: u32 = 900;

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

/// Device pixels per tree pixel from a window's extents in both spaces (pure), or
/// `None` when they do not describe one window.
///
/// A scaled toolkit multiplies every size by its scale `s`; a window may add the
/// same margin `m` on every side (a client-side-decorated GTK 4 window's shadow:
/// gnome-calculator's tree says 355×498 where its X window is 365×508). So
/// `device = s × tree + 2m` on both axes, and `s = (dw − dh) / (tw − th)` when the
/// window is not square (else `dw / tw`). The result is snapped to the nearest
/// quarter when within 5 % of it. It is `None` — the two rectangles are not one
/// window (a popup menu matched to its app's main window) — when the margin it
/// implies differs by more than 2 px between the axes, is negative beyond a pixel,
/// or exceeds 64 px.
pub fn toolkit_scale(device: (i32, i32), tree: (i32, i32)) -> Option<f64> {
    let (dw, dh) = (f64::from(device.0), f64::from(device.1));
    let (tw, th) = (f64::from(tree.0), f64::from(tree.1));
    if dw <= 0.0 || dh <= 0.0 || tw <= 0.0 || th <= 0.0 {
        return None;
    }
    let raw = if (tw - th).abs() >= 20.0 {
        (dw - dh) / (tw - th)
    } else {
        dw / tw
    };
    let snapped = (raw * 4.0).round() / 4.0;
    let s = if snapped > 0.0 && (raw - snapped).abs() <= snapped * 0.05 {
        snapped
    } else {
        raw
    };
    if !(s.is_finite() && s > 0.0) {
        return None;
    }
    let (mx, my) = ((dw - s * tw) / 2.0, (dh - s * th) / 2.0);
    ((mx - my).abs() <= 2.0 && mx >= -1.0 && my >= -1.0 && mx <= 64.0 && my <= 64.0).then_some(s)
}

/// Toolkit scales [`frame_scale`] tries: GDK_SCALE and Qt's common factors.
const FRAME_SCALES: [f64; 7] = [1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0];

/// The scale at which a window's tree extents, in screen coordinates, are its X
/// client area plus the window manager's frame around it (pure): GTK 3 under a
/// reparenting window manager reports the frame (openbox: mousepad's 640×480
/// client inside 642×505 extents). The frame may be up to 64 device pixels on any
/// side; `None` when no scale of [`FRAME_SCALES`] makes the tree rectangle hold the
/// device one that way.
pub fn frame_scale(device: &Bounds, tree: &Bounds) -> Option<f64> {
    let (dx0, dy0) = (f64::from(device.x), f64::from(device.y));
    let (dx1, dy1) = (
        dx0 + f64::from(device.width),
        dy0 + f64::from(device.height),
    );
    FRAME_SCALES.into_iter().find(|&s| {
        let (tx0, ty0) = (f64::from(tree.x) * s, f64::from(tree.y) * s);
        let (tx1, ty1) = (
            tx0 + f64::from(tree.width) * s,
            ty0 + f64::from(tree.height) * s,
        );
        let sides = [dx0 - tx0, dy0 - ty0, tx1 - dx1, ty1 - dy1];
        sides.iter().all(|&d| (-1.0..=64.0).contains(&d))
    })
}

pub(crate) use super::input::Stacked;

/// The areas of windows stacked above the top-level `xid` that overlap `area` and
/// would take pointer input meant for it or hide its pixels (pure over `stack`):
/// every window of another process (input-only and click-through ones included),
/// and other top-levels of its own; not its own popups, and not this very
/// process's click-through overlays (the agent cursor and frame of
/// docs/ARCHITECTURE.md §7.19, which are not part of the app).
pub fn covered(stack: &[Stacked], xid: u32, area: &Bounds) -> Vec<Bounds> {
    let Some(at) = stack.iter().position(|s| s.xid == xid) else {
        return Vec::new();
    };
    let own = stack[at].pid;
    let me = Some(std::process::id());
    stack[at + 1..]
        .iter()
        .filter(|s| {
            !(s.popup && own.is_some() && s.pid == own || s.click_through && s.pid == me)
                && s.bounds.intersects(area)
        })
        .map(|s| s.bounds)
        .collect()
}

/// Fills in the device bounds, toolkit scale and covering windows of each
/// accessible window that an X top-level of `tops` matches (same pid and title; or
/// the one top-level of its process) (pure).
pub fn annotate(windows: &mut [WindowInfo], tops: &[TopLevel], stack: &[Stacked]) {
    for w in windows
        .iter_mut()
        .filter(|w| !w.no_tree && w.hidden.is_none())
    {
        let target = Target {
            pid: w.pid,
            title: w.title.clone(),
        };
        let Some(top) = tops.iter().find(|t| is_window(t, &target, tops)) else {
            continue;
        };
        // Matched by process and title; it is this window only if the two
        // rectangles describe one window (a popup menu of the app is not its main
        // window): else no device geometry is claimed for it.
        let Some(scale) = w.bounds.and_then(|b| {
            toolkit_scale((top.bounds.width, top.bounds.height), (b.width, b.height))
                .filter(|&s| {
                    // Screen coordinates: the scaled tree rectangle must lie on
                    // the device one.
                    (b.x, b.y) == (0, 0)
                        || (f64::from(b.x) * s - f64::from(top.bounds.x)).abs() <= 64.0
                            && (f64::from(b.y) * s - f64::from(top.bounds.y)).abs() <= 64.0
                })
                .or_else(|| frame_scale(&top.bounds, &b))
        }) else {
            continue;
        };
        w.device_bounds = Some(top.bounds);
        w.toolkit_scale = Some(scale);
        w.covered_by = covered(stack, top.xid, &top.bounds);
    }
}

/// True when some accessible window of `windows` has no mapped X top-level of
/// the same process and title among `tops` (pure): only then are the unmapped
/// top-levels worth reading ([`mark_hidden`]).
pub fn any_unmatched(windows: &[WindowInfo], tops: &[TopLevel]) -> bool {
    windows
        .iter()
        .filter(|w| !w.no_tree && w.hidden.is_none())
        .any(|w| !tops.iter().any(|t| same_window(t, w)))
}

/// Same process and the same non-empty title (trimmed): the strict match, without
/// the "only window of its process" leniency of input targeting, which would take
/// a process's other, mapped window for an unmapped one.
fn same_window(top: &TopLevel, w: &WindowInfo) -> bool {
    let title = w.title.trim();
    top.pid.is_some() && top.pid == w.pid && !title.is_empty() && top.title.trim() == title
}

/// Marks [`WindowInfo::hidden`] on each accessible window that no mapped top-level
/// of `tops` matches and an unmapped one of `hidden` does (same process and title),
/// with that top-level's reason (pure; docs/ARCHITECTURE.md §6 "Viewability").
pub fn mark_hidden(windows: &mut [WindowInfo], tops: &[TopLevel], hidden: &[(TopLevel, Hidden)]) {
    for w in windows
        .iter_mut()
        .filter(|w| !w.no_tree && w.hidden.is_none())
    {
        if tops.iter().any(|t| same_window(t, w)) {
            continue;
        }
        if let Some((_, why)) = hidden.iter().find(|(t, _)| same_window(t, w)) {
            w.hidden = Some(*why);
        }
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
    // Labels twice as large on a large image, where 7-pixel glyphs are hard to
    // read.
    let zoom = if img.width().max(img.height()) >= LARGE_IMAGE_SIDE {
        2
    } else {
        1
    };
    pixels::draw_marks_zoomed(&mut img, &boxes, zoom);
    (img, scale, drawn)
}

/// The tesseract languages installed, joined for `-l` (`eng+chi_sim`), read once.
///
/// Errors: `COMPUTER_PLATFORM_UNSUPPORTED` when tesseract is not installed.
fn languages() -> Result<String> {
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
    fn everything_above_but_the_apps_own_popups_covers_a_window() {
        let w = |xid, b: Bounds, pid, popup, input_only| Stacked {
            xid,
            bounds: b,
            pid: Some(pid),
            popup,
            input_only,
            click_through: false,
        };
        let stack = vec![
            w(1, Bounds::new(0, 0, 100, 100), 10, false, false),
            w(2, Bounds::new(0, 0, 400, 300), 20, false, false),
            w(3, Bounds::new(50, 50, 40, 20), 20, true, false),
            w(4, Bounds::new(10, 10, 30, 30), 30, false, false),
            w(5, Bounds::new(900, 900, 30, 30), 40, false, false),
            w(6, Bounds::new(60, 60, 10, 10), 20, false, false),
            w(7, Bounds::new(70, 70, 10, 10), 50, true, true),
        ];
        let area = Bounds::new(0, 0, 400, 300);
        // Below it (1), its own popup (3) and one elsewhere (5) do not cover it;
        // another app's window (4), its own other top-level (6) and an input-only
        // window (7) do.
        assert_eq!(
            covered(&stack, 2, &area),
            vec![
                Bounds::new(10, 10, 30, 30),
                Bounds::new(60, 60, 10, 10),
                Bounds::new(70, 70, 10, 10)
            ]
        );
        assert!(covered(&stack, 9, &area).is_empty());
    }

    #[test]
    fn only_this_processs_own_click_through_overlays_do_not_cover_a_window() {
        let me = std::process::id();
        let (other, third) = (me.wrapping_add(1), me.wrapping_add(2));
        let w = |xid, b: Bounds, pid, click_through| Stacked {
            xid,
            bounds: b,
            pid: Some(pid),
            popup: true,
            input_only: false,
            click_through,
        };
        let stack = vec![
            w(1, Bounds::new(0, 0, 400, 300), other, false),
            // This process's agent cursor and frame: not part of what is seen.
            w(2, Bounds::new(50, 50, 12, 20), me, true),
            w(3, Bounds::new(0, 0, 400, 3), me, true),
            // Another program's click-through window still hides pixels.
            w(4, Bounds::new(100, 100, 30, 30), third, true),
            // This process's window that takes input covers like any other.
            w(5, Bounds::new(200, 200, 30, 30), me, false),
        ];
        let area = Bounds::new(0, 0, 400, 300);
        assert_eq!(
            covered(&stack, 1, &area),
            vec![Bounds::new(100, 100, 30, 30), Bounds::new(200, 200, 30, 30)]
        );
    }

    #[test]
    fn a_window_manager_frame_around_the_client_is_scale_one() {
        // mousepad under openbox: extents of the frame, the client inside.
        let client = Bounds::new(639, 318, 640, 480);
        assert_eq!(
            frame_scale(&client, &Bounds::new(638, 295, 642, 505)),
            Some(1.0)
        );
        // GDK_SCALE=2: the frame's extents in halved coordinates.
        let client = Bounds::new(1010, 346, 1820, 1548);
        assert_eq!(
            frame_scale(&client, &Bounds::new(504, 153, 912, 795)),
            Some(2.0)
        );
        // A popup menu is not its app's main window.
        assert_eq!(frame_scale(&client, &Bounds::new(700, 300, 343, 200)), None);
    }

    #[test]
    fn toolkit_scales_are_measured_on_both_axes() {
        // GDK_SCALE=2 gedit: exactly twice, no margin.
        assert_eq!(toolkit_scale((1820, 1548), (910, 774)), Some(2.0));
        // gnome-calculator (GTK 4): a 5 px shadow on each side is a margin.
        assert_eq!(toolkit_scale((365, 508), (355, 498)), Some(1.0));
        // A small GTK 4 window: the margin does not pass for a scale.
        assert_eq!(toolkit_scale((346, 250), (300, 204)), Some(1.0));
        // A window-manager border of a pixel.
        assert_eq!(toolkit_scale((802, 600), (800, 598)), Some(1.0));
        assert_eq!(toolkit_scale((1200, 900), (800, 600)), Some(1.5));
        // A popup menu (343×200) matched to its app's 640×480 window: not one.
        assert_eq!(toolkit_scale((640, 480), (343, 200)), None);
        assert_eq!(toolkit_scale((0, 10), (800, 600)), None);
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
            hidden: None,
        };
        let origin = Bounds::new(200, 100, 800, 600);
        // A button at tree (110, 60) 20×10 is at device (220, 120) 40×20, i.e. at
        // (20, 20) in the capture, and at half that in a half-size image.
        let b = to_image(&Bounds::new(110, 60, 20, 10), &w, &origin, 0.5);
        assert_eq!(b, Bounds::new(10, 10, 20, 10));
    }
}

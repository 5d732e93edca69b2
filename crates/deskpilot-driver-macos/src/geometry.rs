//! Coordinate spaces of the macOS driver and the maps between them (docs/ARCHITECTURE.md
//! §8, §6c).
//!
//! Two spaces meet here:
//!
//! | space | unit, origin | who reports it |
//! |---|---|---|
//! | global display points | 1 point = 1/72 in nominal; origin the top-left corner of the main display, x right, y down; other displays at their arranged offsets | `AXPosition`/`AXSize`, `CGDisplayBounds`, `kCGWindowBounds`, `CGEventCreateMouseEvent` |
//! | device pixels | points × the backing scale factor of the display the window is on | `WindowInfo::device_bounds`, `PointerParams` |
//!
//! The driver reports `Node::bounds` and `WindowInfo::bounds` in points (the tree's
//! units), `WindowInfo::device_bounds` in device pixels, and `WindowInfo::toolkit_scale`
//! = the backing scale factor, so the host's `tree_to_device` (a scaling about the
//! origin) is exactly [`points_to_pixels`]. With displays of different scales the
//! device-pixel space is per window (each window's own display scale), not one global
//! raster: a point given in a window's device pixels maps back through that window's
//! scale ([`pixels_to_points`]). Pure: it never calls CoreGraphics.

use deskpilot_core::Bounds;

/// A rectangle in global display points (see the module doc); `width`/`height` are
/// never negative once built by [`PointsRect::new`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PointsRect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl PointsRect {
    /// A rectangle at `(x, y)` points of `width` × `height` points; negative sizes
    /// become 0.
    pub fn new(x: f64, y: f64, width: f64, height: f64) -> Self {
        PointsRect {
            x,
            y,
            width: width.max(0.0),
            height: height.max(0.0),
        }
    }

    /// The area shared with `other`, points²; 0 when they do not overlap.
    pub fn overlap(&self, other: &PointsRect) -> f64 {
        let w = (self.x + self.width).min(other.x + other.width) - self.x.max(other.x);
        let h = (self.y + self.height).min(other.y + other.height) - self.y.max(other.y);
        if w > 0.0 && h > 0.0 { w * h } else { 0.0 }
    }

    /// True when the point (points) lies inside (right and bottom edges excluded).
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x && y >= self.y && x < self.x + self.width && y < self.y + self.height
    }

    /// True when the rectangle covers no area.
    pub fn is_empty(&self) -> bool {
        self.width <= 0.0 || self.height <= 0.0
    }
}

/// One display: its area in global points and its backing scale factor (device pixels
/// per point: 2 on a Retina panel, 1 on most external monitors).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Display {
    pub bounds: PointsRect,
    pub scale: f64,
}

/// The backing scale factor of a display mode: its width in pixels
/// (`CGDisplayModeGetPixelWidth`) ÷ its width in points (`CGDisplayModeGetWidth`).
/// 1 when either is 0 (a mode that reports nothing).
pub fn mode_scale(pixel_width: usize, point_width: usize) -> f64 {
    if pixel_width == 0 || point_width == 0 {
        1.0
    } else {
        pixel_width as f64 / point_width as f64
    }
}

/// The scale of the display holding the largest part of `rect` (points); the first
/// display's (the main display, as `CGGetActiveDisplayList` lists it first) when
/// `rect` lies on none; 1 with no display.
pub fn scale_for(rect: &PointsRect, displays: &[Display]) -> f64 {
    displays
        .iter()
        .map(|d| (d.bounds.overlap(rect), d.scale))
        .filter(|(area, _)| *area > 0.0)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, s)| s)
        .or_else(|| displays.first().map(|d| d.scale))
        .unwrap_or(1.0)
}

/// A length or coordinate in points → device pixels at `scale`.
pub fn points_to_pixels(v: f64, scale: f64) -> f64 {
    v * scale
}

/// A point in device pixels → global points at `scale` (the inverse of
/// [`points_to_pixels`]); a scale that is not positive and finite counts as 1.
pub fn pixels_to_points(x: f64, y: f64, scale: f64) -> (f64, f64) {
    let s = if scale.is_finite() && scale > 0.0 {
        scale
    } else {
        1.0
    };
    (x / s, y / s)
}

/// Integer bounds of a rectangle in points multiplied by `scale` (1 for the tree's
/// points, the display's scale for device pixels), rounded outwards so the result
/// covers every pixel the rectangle touches; values saturate at the `i32` range.
pub fn to_bounds(r: &PointsRect, scale: f64) -> Bounds {
    let clamp = |v: f64| v.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32;
    let x0 = points_to_pixels(r.x, scale).floor();
    let y0 = points_to_pixels(r.y, scale).floor();
    let x1 = points_to_pixels(r.x + r.width, scale).ceil();
    let y1 = points_to_pixels(r.y + r.height, scale).ceil();
    Bounds::new(clamp(x0), clamp(y0), clamp(x1 - x0), clamp(y1 - y0))
}

/// Whether an element's frame counts as on screen inside its window's frame: it
/// shares area with the window and is not empty. An element without a frame is taken
/// to be on screen (AppKit gives every laid-out element one; one without cannot be
/// judged and is not hidden on a guess).
pub fn on_screen(frame: Option<&PointsRect>, window: Option<&PointsRect>) -> bool {
    match (frame, window) {
        (Some(f), Some(w)) => !f.is_empty() && f.overlap(w) > 0.0,
        (Some(f), None) => !f.is_empty(),
        (None, _) => true,
    }
}

/// Whether a device-pixel point of a window at `scale` lies on some display; the
/// driver refuses pointer input elsewhere (never clamps).
pub fn pixel_on_a_display(x: i32, y: i32, scale: f64, displays: &[Display]) -> bool {
    let (px, py) = pixels_to_points(f64::from(x), f64::from(y), scale);
    displays.iter().any(|d| d.bounds.contains(px, py))
}

/// One on-screen window as the window server lists it (`CGWindowListCopyWindowInfo`,
/// front to back): its owner's pid, its layer (0 for application windows; menus,
/// the Dock and the menu bar above) and its bounds in points.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenWindow {
    pub pid: i32,
    pub owner: String,
    pub layer: i64,
    pub bounds: PointsRect,
}

/// The pid owning the topmost window at a point (points), in a front-to-back list;
/// `None` when no window is there. Pointer input is sent only when it is the target
/// window's own process (its window, menu or popup): any other window there — the
/// Dock, another app's window — would take the click.
pub fn topmost_pid_at(windows: &[ScreenWindow], x: f64, y: f64) -> Option<i32> {
    windows
        .iter()
        .find(|w| w.bounds.contains(x, y))
        .map(|w| w.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topmost_window_at_a_point_is_the_first_listed_there() {
        let w = |pid, x, y| ScreenWindow {
            pid,
            owner: format!("p{pid}"),
            layer: 0,
            bounds: PointsRect::new(x, y, 100.0, 100.0),
        };
        let list = [w(7, 0.0, 0.0), w(8, 50.0, 50.0)];
        assert_eq!(topmost_pid_at(&list, 60.0, 60.0), Some(7));
        assert_eq!(topmost_pid_at(&list, 120.0, 120.0), Some(8));
        assert_eq!(topmost_pid_at(&list, 500.0, 500.0), None);
    }

    fn retina_and_external() -> [Display; 2] {
        [
            Display {
                bounds: PointsRect::new(0.0, 0.0, 1512.0, 982.0),
                scale: 2.0,
            },
            Display {
                bounds: PointsRect::new(1512.0, -200.0, 1920.0, 1080.0),
                scale: 1.0,
            },
        ]
    }

    #[test]
    fn points_map_to_pixels_by_the_scale_and_back() {
        assert_eq!(points_to_pixels(100.5, 2.0), 201.0);
        assert_eq!(pixels_to_points(201.0, 50.0, 2.0), (100.5, 25.0));
        assert_eq!(pixels_to_points(30.0, 40.0, 1.0), (30.0, 40.0));
        // A broken scale does not divide by zero.
        assert_eq!(pixels_to_points(30.0, 40.0, 0.0), (30.0, 40.0));
        assert_eq!(pixels_to_points(30.0, 40.0, f64::NAN), (30.0, 40.0));
    }

    #[test]
    fn bounds_round_outwards_and_scale() {
        let r = PointsRect::new(10.25, 20.75, 100.5, 22.0);
        assert_eq!(to_bounds(&r, 1.0), Bounds::new(10, 20, 101, 23));
        assert_eq!(to_bounds(&r, 2.0), Bounds::new(20, 41, 202, 45));
        let huge = PointsRect::new(1e12, 0.0, 1.0, 1.0);
        assert_eq!(to_bounds(&huge, 1.0).x, i32::MAX);
        assert_eq!(PointsRect::new(0.0, 0.0, -5.0, 3.0).width, 0.0);
    }

    #[test]
    fn a_window_takes_the_scale_of_the_display_holding_most_of_it() {
        let d = retina_and_external();
        let on_main = PointsRect::new(100.0, 100.0, 800.0, 600.0);
        let on_external = PointsRect::new(1600.0, 0.0, 800.0, 600.0);
        let straddling_mostly_external = PointsRect::new(1400.0, 0.0, 800.0, 600.0);
        assert_eq!(scale_for(&on_main, &d), 2.0);
        assert_eq!(scale_for(&on_external, &d), 1.0);
        assert_eq!(scale_for(&straddling_mostly_external, &d), 1.0);
        let nowhere = PointsRect::new(-5000.0, -5000.0, 10.0, 10.0);
        assert_eq!(scale_for(&nowhere, &d), 2.0);
        assert_eq!(scale_for(&on_main, &[]), 1.0);
        assert_eq!(mode_scale(3024, 1512), 2.0);
        assert_eq!(mode_scale(0, 1512), 1.0);
    }

    #[test]
    fn on_screen_means_sharing_area_with_the_window() {
        let w = PointsRect::new(0.0, 0.0, 400.0, 300.0);
        assert!(on_screen(
            Some(&PointsRect::new(10.0, 10.0, 5.0, 5.0)),
            Some(&w)
        ));
        assert!(!on_screen(
            Some(&PointsRect::new(10.0, 900.0, 5.0, 5.0)),
            Some(&w)
        ));
        assert!(!on_screen(
            Some(&PointsRect::new(10.0, 10.0, 0.0, 5.0)),
            Some(&w)
        ));
        assert!(on_screen(None, Some(&w)));
        assert!(on_screen(
            Some(&PointsRect::new(10.0, 10.0, 5.0, 5.0)),
            None
        ));
    }

    #[test]
    fn pixels_outside_every_display_are_found() {
        let d = retina_and_external();
        assert!(pixel_on_a_display(2000, 1000, 2.0, &d));
        assert!(!pixel_on_a_display(2000, 1980, 2.0, &d));
        // On the external display at scale 1, above the main display's top.
        assert!(pixel_on_a_display(1600, -100, 1.0, &d));
        assert!(!pixel_on_a_display(-1, 10, 1.0, &d));
    }
}

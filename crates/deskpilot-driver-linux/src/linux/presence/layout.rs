//! The overlay's geometry and text layout: where the frame, the cursor arrow and a
//! teach bubble go, and how a label is wrapped and cut. Pure: no X request.

use deskpilot_core::Bounds;
use x11rb::protocol::xproto::Rectangle;

use crate::presence_types::*;

/// Space between the target and the bubble, and between the bubble and the screen's
/// edges, pixels.
pub(super) const TEACH_GAP: i32 = 8;

pub(super) const SCREEN_MARGIN: i32 = 4;

/// The agent cursor, 12×20 px, its tip the top-left pixel: `X` outline, `.` fill,
/// spaces outside its shape.
pub(super) const ARROW: [&str; 20] = [
    "X",
    "XX",
    "X.X",
    "X..X",
    "X...X",
    "X....X",
    "X.....X",
    "X......X",
    "X.......X",
    "X........X",
    "X.........X",
    "X..........X",
    "X......XXXXX",
    "X...X..X",
    "X..XX..X",
    "X.X  X..X",
    "XX   X..X",
    "X     X..X",
    "      X..X",
    "       XX",
];

pub(super) const ARROW_WIDTH: u16 = 12;

pub(super) const ARROW_HEIGHT: u16 = 20;

pub(super) fn contains(b: &Bounds, x: i32, y: i32) -> bool {
    x >= b.x && y >= b.y && x < b.x + b.width && y < b.y + b.height
}

/// The four frame windows' areas (top, bottom, left, right) just outside `b`; a
/// side that would fall off a `screen`-sized root (a fullscreen or maximised
/// window) is drawn just inside the window's edge instead, so the frame stays in
/// sight.
pub(super) fn frame_rects(b: Bounds, screen: (i32, i32)) -> [Bounds; 4] {
    let t = FRAME_WIDTH;
    let (w, h) = (b.width.max(0), b.height.max(0));
    let (sw, sh) = screen;
    let left = if b.x - t < 0 { b.x } else { b.x - t };
    let right = if b.x + w + t > sw {
        b.x + w - t
    } else {
        b.x + w
    };
    let top = if b.y - t < 0 { b.y } else { b.y - t };
    let bottom = if b.y + h + t > sh {
        b.y + h - t
    } else {
        b.y + h
    };
    let span = right + t - left;
    [
        Bounds::new(left, top, span, t),
        Bounds::new(left, bottom, span, t),
        Bounds::new(left, top, t, bottom + t - top),
        Bounds::new(right, top, t, bottom + t - top),
    ]
}

/// Where a bubble of `size` goes next to `target` on a `screen`-sized root: below
/// it, else above it, else right of it, else left of it (clamped onto the screen
/// along the other axis), never overlapping it; only a target leaving no room on
/// any side gets the bubble at the screen's bottom.
pub(super) fn place_bubble(target: Bounds, size: (i32, i32), screen: (i32, i32)) -> (i32, i32) {
    let (w, h) = size;
    let (sw, sh) = screen;
    let clamp =
        |v: i32, len: i32, total: i32| v.min(total - len - SCREEN_MARGIN).max(SCREEN_MARGIN);
    let x = clamp(target.x, w, sw);
    let below = target.y + target.height + TEACH_GAP;
    if below + h <= sh - SCREEN_MARGIN {
        return (x, below);
    }
    let above = target.y - TEACH_GAP - h;
    if above >= SCREEN_MARGIN {
        return (x, above);
    }
    let y = clamp(target.y, h, sh);
    let right = target.x + target.width + TEACH_GAP;
    if right + w <= sw - SCREEN_MARGIN {
        return (right, y);
    }
    let left = target.x - TEACH_GAP - w;
    if left >= SCREEN_MARGIN {
        return (left, y);
    }
    (x, (sh - h - SCREEN_MARGIN).max(0))
}

/// `text` wrapped at word boundaries to `cols` characters (a longer word is split;
/// `\n` breaks a line), at most `max_lines` lines; the last ends in `...` when text
/// was left out.
pub(super) fn wrap(text: &str, cols: usize, max_lines: usize) -> Vec<String> {
    let cols = cols.max(4);
    let mut lines: Vec<String> = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split_whitespace() {
            let mut word: Vec<char> = word.chars().collect();
            loop {
                let used = line.chars().count();
                let room = if used == 0 {
                    cols
                } else {
                    cols.saturating_sub(used + 1)
                };
                if word.len() <= room {
                    if used > 0 {
                        line.push(' ');
                    }
                    line.extend(word.iter());
                    break;
                }
                if used > 0 {
                    lines.push(std::mem::take(&mut line));
                    continue;
                }
                let rest = word.split_off(cols);
                lines.push(word.iter().collect());
                word = rest;
            }
        }
        lines.push(line);
    }
    while lines.len() > 1 && lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            *last = ellipsize(last, cols, true);
        }
    }
    lines
}

/// `s` cut to `cols` characters with `...` at its end when it is longer (or
/// always, when `more` says text follows).
pub(super) fn ellipsize(s: &str, cols: usize, more: bool) -> String {
    let n = s.chars().count();
    if n <= cols && !more {
        return s.to_owned();
    }
    let keep = if more && n + 3 <= cols {
        n
    } else {
        cols.saturating_sub(3)
    };
    let mut out: String = s.chars().take(keep).collect();
    out.truncate(out.trim_end().len());
    out.push_str("...");
    out
}

/// The bytes of `s` in a core font: printable ASCII as is, Latin-1 when the font
/// has it, anything else (controls included) as `?`.
pub(super) fn font_bytes(s: &str, latin1: bool) -> Vec<u8> {
    s.chars()
        .map(|c| match u8::try_from(u32::from(c)) {
            Ok(b @ 0x20..=0x7e) => b,
            Ok(b @ 0xa0..=0xff) if latin1 => b,
            _ => b'?',
        })
        .collect()
}

/// Runs of `ARROW` cells that `keep` accepts, one rectangle per run.
pub(super) fn arrow_runs(keep: impl Fn(u8) -> bool) -> Vec<Rectangle> {
    let mut out = Vec::new();
    for (y, row) in ARROW.iter().enumerate() {
        let row = row.as_bytes();
        let mut x = 0;
        while x < row.len() {
            if !keep(row[x]) {
                x += 1;
                continue;
            }
            let start = x;
            while x < row.len() && keep(row[x]) {
                x += 1;
            }
            out.push(Rectangle {
                x: start as i16,
                y: y as i16,
                width: (x - start) as u16,
                height: 1,
            });
        }
    }
    out
}

pub(super) fn rect(b: Bounds) -> Rectangle {
    Rectangle {
        x: i16c(b.x),
        y: i16c(b.y),
        width: u16c(b.width),
        height: u16c(b.height),
    }
}

pub(super) fn i16c(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

/// A window size: at least 1.
pub(super) fn u16c(v: i32) -> u16 {
    v.clamp(1, i32::from(u16::MAX)) as u16
}

// ------------------------------------------------------------------ the thread

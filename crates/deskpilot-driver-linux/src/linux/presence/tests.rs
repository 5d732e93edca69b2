//! Unit tests of the overlay's geometry and text layout (no X server).

use super::*;

#[test]
fn presence_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Presence>();
}

#[test]
fn the_arrow_is_twenty_pixels_tall_with_its_tip_at_the_origin() {
    assert_eq!(ARROW.len(), usize::from(ARROW_HEIGHT));
    assert!(ARROW.iter().all(|r| r.len() <= usize::from(ARROW_WIDTH)));
    let shape = arrow_runs(|c| c != b' ');
    assert_eq!(
        (shape[0].x, shape[0].y, shape[0].width),
        (0, 0, 1),
        "the tip"
    );
    // The fill lies inside the outline's shape.
    for f in arrow_runs(|c| c == b'.') {
        assert!(
            shape
                .iter()
                .any(|s| s.y == f.y && s.x <= f.x && s.x + s.width as i16 >= f.x + f.width as i16)
        );
    }
    // The tail's row has two runs (the notch between).
    assert_eq!(shape.iter().filter(|r| r.y == 15).count(), 2);
}

#[test]
fn the_frame_lies_just_outside_the_window() {
    let b = Bounds::new(100, 100, 400, 300);
    let rects = frame_rects(b, (1280, 800));
    for r in rects {
        assert!(!r.intersects(&b), "{r:?}");
        assert!(r.width == FRAME_WIDTH || r.height == FRAME_WIDTH);
    }
    assert_eq!(rects[0], Bounds::new(97, 97, 406, 3));
    assert_eq!(rects[3], Bounds::new(500, 97, 3, 306));
    // Fullscreen: every side just inside the screen's edge, in sight.
    let full = Bounds::new(0, 0, 1280, 800);
    let rects = frame_rects(full, (1280, 800));
    let screen = Bounds::new(0, 0, 1280, 800);
    for r in rects {
        assert!(
            r.x >= 0 && r.y >= 0 && r.x + r.width <= 1280 && r.y + r.height <= 800,
            "{r:?} is off the screen {screen:?}"
        );
    }
    assert_eq!(rects[0], Bounds::new(0, 0, 1280, 3));
    assert_eq!(rects[3], Bounds::new(1277, 0, 3, 800));
}

#[test]
fn buttons_are_found_from_the_window_bounds() {
    let ind = Bounds::new(700, 8, 300, 25);
    let (x, y) = stop_button_at(ind);
    assert!(contains(&stop_rect(300, 25), x - 700, y - 8));
    assert_eq!((x, y), (700 + 300 - 3 - 24, 8 + 12));
    let bubble = Bounds::new(10, 20, 308, 100);
    let ((nx, ny), (ex, ey)) = teach_buttons_at(bubble);
    let (next, exit) = teach_rects(308, 100);
    assert!(contains(&next, nx - 10, ny - 20));
    assert!(contains(&exit, ex - 10, ey - 20));
    assert!(!next.intersects(&exit));
    assert!(nx < ex && ny == ey);
    assert!(exit.x + exit.width <= 308 && exit.y + exit.height <= 100);
}

#[test]
fn the_bubble_goes_beside_the_target_never_over_it() {
    let screen = (1280, 800);
    let size = (308, 90);
    let on_screen =
        |(x, y): (i32, i32)| x >= 0 && y >= 0 && x + size.0 <= screen.0 && y + size.1 <= screen.1;
    // Room below: below, left-aligned with the target.
    let t = Bounds::new(100, 100, 80, 24);
    assert_eq!(place_bubble(t, size, screen), (100, 132));
    // Near the bottom: above.
    let t = Bounds::new(1200, 760, 60, 24);
    let p = place_bubble(t, size, screen);
    assert_eq!(p, (1280 - 308 - 4, 760 - 8 - 90));
    for t in [
        Bounds::new(100, 100, 80, 24),
        Bounds::new(1200, 760, 60, 24),
        Bounds::new(0, 0, 1280, 700),
        Bounds::new(10, 5, 300, 790),
        Bounds::new(900, 5, 370, 790),
        Bounds::new(-50, -50, 100, 100),
    ] {
        let p = place_bubble(t, size, screen);
        let b = Bounds::new(p.0, p.1, size.0, size.1);
        assert!(on_screen(p), "{t:?} → {b:?}");
        assert!(!b.intersects(&t), "{t:?} → {b:?}");
    }
}

#[test]
fn text_is_wrapped_to_columns_and_cut_with_an_ellipsis() {
    assert_eq!(
        wrap("Click Save to keep your file", 48, 6),
        vec!["Click Save to keep your file"]
    );
    assert_eq!(wrap("aaa bbb ccc", 7, 6), vec!["aaa bbb", "ccc"]);
    // A line filled to the last column.
    assert_eq!(wrap("aaa bbb c d", 7, 6), vec!["aaa bbb", "c d"]);
    assert_eq!(wrap("abcdefg h", 7, 6), vec!["abcdefg", "h"]);
    assert_eq!(wrap("abcdefghij", 4, 6), vec!["abcd", "efgh", "ij"]);
    assert_eq!(wrap("one\ntwo", 48, 6), vec!["one", "two"]);
    let long = "word ".repeat(100);
    let lines = wrap(&long, 48, 6);
    assert_eq!(lines.len(), 6);
    assert!(lines.iter().all(|l| l.chars().count() <= 48));
    assert!(lines[5].ends_with("..."), "{:?}", lines[5]);
    assert_eq!(wrap("a\nb\nc", 48, 2), vec!["a", "b..."]);
    assert_eq!(ellipsize("abcdefgh", 6, false), "abc...");
    assert_eq!(ellipsize("abc", 6, false), "abc");
}

#[test]
fn text_outside_the_font_shows_as_question_marks() {
    assert_eq!(font_bytes("a · b", true), b"a \xb7 b");
    assert_eq!(font_bytes("a · b", false), b"a ? b");
    assert_eq!(font_bytes("你\t!", true), b"??!");
}

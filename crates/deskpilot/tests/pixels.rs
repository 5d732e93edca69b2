//! The pixel rung on real apps (docs/ARCHITECTURE.md §8a): captures only when the
//! user allowed pixels, marks on the elements' boxes, windows with no tree read by
//! OCR, password fields painted over and captures refused while one has focus.

mod common;

use common::own::{Desk, TempDir};
use serde_json::Value;

const PIXELS: &str = "capture = \"a11y-and-pixels\"\n";

/// The PNG a `screenshot --out` wrote.
fn png(path: &std::path::Path) -> image::RgbaImage {
    image::open(path).expect("a PNG was written").to_rgba8()
}

/// A basis `rREV:X,Y,WxH@SCALE` as (x, y, width, height, scale).
fn basis(v: &Value) -> (f64, f64, f64, f64, f64) {
    let s = v["basis"].as_str().expect("a basis");
    let (geom, scale) = s.split_once(':').unwrap().1.split_once('@').unwrap();
    let p: Vec<&str> = geom.split(',').collect();
    let (w, h) = p[2].split_once('x').unwrap();
    let f = |t: &str| t.parse::<f64>().unwrap();
    (f(p[0]), f(p[1]), f(w), f(h), f(scale))
}

fn is_mark(p: &image::Rgba<u8>) -> bool {
    p.0 == [255, 0, 255, 255]
}

/// Without the user's permission no pixel is read: the refusal names the setting,
/// and nothing is written.
#[test]
fn a_capture_without_pixels_allowed_is_refused_naming_the_setting() {
    let dir = TempDir::new("pixels-off");
    let desk = Desk::start(dir.path());
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    desk.wait_for("gnome-calculator", "button", "7", 60000);
    let out = dir.path().join("shot.png");
    let v = desk.fails_with(
        &[
            "screenshot",
            "--app",
            "gnome-calculator",
            "--out",
            out.to_str().unwrap(),
        ],
        "COMPUTER_SCOPE_VIOLATION",
    );
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("capture a11y-and-pixels"), "{msg}");
    assert!(
        !out.exists(),
        "nothing is written when the capture is refused"
    );
}

/// Every marked box lies within 4 px of its element's extents mapped through the
/// recorded transform, and the PNG shows the box there in the mark colour.
#[test]
fn marks_lie_on_the_elements_they_label() {
    let dir = TempDir::new("pixels-marks");
    let desk = Desk::start_with_config(dir.path(), PIXELS);
    desk.ok(&["sandbox", "run", "--", "gnome-calculator"]);
    desk.wait_for("gnome-calculator", "button", "7", 60000);
    let file = dir.path().join("marks.png");
    let v = desk.ok(&[
        "screenshot",
        "--app",
        "gnome-calculator",
        "--marks",
        "--out",
        file.to_str().unwrap(),
    ]);
    let img = png(&file);
    assert_eq!(
        (img.width(), img.height()),
        (
            v["width"].as_u64().unwrap() as u32,
            v["height"].as_u64().unwrap() as u32
        )
    );
    let (bx, by, _, _, scale) = basis(&v);
    let tk = v["toolkit_scale"].as_f64().unwrap();
    let legend = v["legend"].as_array().unwrap();
    assert!(legend.len() >= 10, "the keypad's buttons are marked: {v}");
    let found = desk.ok(&[
        "find",
        "",
        "--role",
        "button",
        "--app",
        "gnome-calculator",
        "--limit",
        "200",
    ]);
    let mut checked = 0;
    for hit in found["matches"].as_array().unwrap() {
        let (Some(r), Some(b)) = (hit["ref"].as_str(), hit["bounds"].as_object()) else {
            continue;
        };
        let Some(entry) = legend.iter().find(|e| e["ref"] == r) else {
            continue;
        };
        let at = |k: &str| b[k].as_f64().unwrap();
        // Tree pixels → device pixels → image pixels. gnome-calculator (GTK 4)
        // reports positions relative to its window.
        let ex = at("x") * tk * scale;
        let ey = at("y") * tk * scale;
        let _ = (bx, by);
        let ew = at("width") * tk * scale;
        let eh = at("height") * tk * scale;
        // Only what the image shows is marked on it (a hidden popover's buttons
        // lie outside the window).
        if ex < 0.0
            || ey < 0.0
            || ex + ew > f64::from(img.width())
            || ey + eh > f64::from(img.height())
        {
            continue;
        }
        let m = &entry["bounds"];
        let g = |k: &str| m[k].as_f64().unwrap();
        for (got, want) in [
            (g("x"), ex),
            (g("y"), ey),
            (g("width"), ew),
            (g("height"), eh),
        ] {
            assert!(
                (got - want).abs() <= 4.0,
                "{r}: mark {m} vs element {b:?} mapped to ({ex}, {ey}, {ew}, {eh})"
            );
        }
        // The PNG: a mark-coloured pixel within 4 px of each corner.
        let near = |cx: f64, cy: f64| {
            (-4..=4).any(|dx| {
                (-4..=4).any(|dy| {
                    let (x, y) = (cx as i64 + dx, cy as i64 + dy);
                    x >= 0
                        && y >= 0
                        && (x as u32) < img.width()
                        && (y as u32) < img.height()
                        && is_mark(img.get_pixel(x as u32, y as u32))
                })
            })
        };
        for (cx, cy) in [
            (ex, ey),
            (ex + ew - 1.0, ey),
            (ex, ey + eh - 1.0),
            (ex + ew - 1.0, ey + eh - 1.0),
        ] {
            assert!(near(cx, cy), "{r}: no mark pixel near ({cx}, {cy})");
        }
        checked += 1;
    }
    assert!(checked >= 10, "checked {checked} buttons: {found}");
    // The audit keeps the capture's size and mode, never pixels.
    let audit = desk.ok(&["audit", "--tail", "20"]);
    let text = audit.to_string();
    assert!(
        text.contains("\"capture\"") && text.contains("marks"),
        "{audit}"
    );
}

/// xmessage (Athena widgets, no accessibility bridge): observe says there is no
/// tree and how to allow pixels; with pixels allowed it lists the text read by OCR
/// as `o` elements, and acting on one is a pointer click that names what it hit.
#[test]
fn a_window_without_a_tree_is_read_by_ocr_when_pixels_are_allowed() {
    let dir = TempDir::new("pixels-xmessage");
    let desk = Desk::start(dir.path());
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "xmessage",
        "-buttons",
        "Alpha:3,Beta:4",
        "pick one",
    ]);
    let start = std::time::Instant::now();
    loop {
        let apps = desk.ok(&["apps"]);
        if apps.to_string().contains("xmessage") {
            break;
        }
        assert!(
            start.elapsed().as_secs() < 30,
            "xmessage never listed: {apps}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let v = desk.fails_with(
        &["observe", "--app", "xmessage"],
        "COMPUTER_ACCESSIBILITY_DISABLED",
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("capture a11y-and-pixels"),
        "{v}"
    );
    std::fs::create_dir_all(desk.config().parent().unwrap()).unwrap();
    std::fs::write(desk.config(), PIXELS).unwrap();
    desk.ok(&["revoke"]);
    let v = desk.ok(&["observe", "--app", "xmessage"]);
    let text = v["text"].as_str().unwrap();
    assert!(text.contains("no accessibility tree"), "{text}");
    assert!(text.contains("[o1] text \"pick one\" (ocr)"), "{text}");
    let v = desk.ok(&["act", "o1", "click"]);
    let text = v["text"].as_str().unwrap();
    assert!(
        text.contains("via pointer(ocr)") && text.contains("under the point"),
        "{text}"
    );
    assert_eq!(v["result"]["channel"], "pointer_ocr", "{v}");
}

/// zenity --password: no capture while the field has focus; with focus elsewhere,
/// the field's rectangle is painted over in the PNG, and OCR finds no secret.
#[test]
fn a_password_field_is_never_captured() {
    let dir = TempDir::new("pixels-password");
    let desk = Desk::start_with_config(dir.path(), PIXELS);
    desk.ok(&["sandbox", "run", "--", "zenity", "--password"]);
    desk.wait_for("zenity", "button", "OK", 60000);
    desk.fails_with(&["screenshot", "--app", "zenity"], "COMPUTER_SECURE_INPUT");
    // The user types a secret and moves focus to OK with the keyboard.
    let env = desk.ok(&["sandbox", "env"]);
    let display = env["DISPLAY"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or(format!(":{}", desk.display));
    for args in [
        &["type", "--delay", "20", "s3cretPW"][..],
        &["key", "Tab"][..],
    ] {
        let st = std::process::Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &display)
            .status()
            .expect("xdotool runs");
        assert!(st.success());
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let file = dir.path().join("pw.png");
    let v = desk.ok(&[
        "screenshot",
        "--app",
        "zenity",
        "--out",
        file.to_str().unwrap(),
    ]);
    let notes = v["notes"].to_string();
    assert!(notes.contains("painted over"), "{v}");
    let img = png(&file);
    let painted = img.pixels().filter(|p| p.0 == [40, 40, 40, 255]).count();
    assert!(painted > 500, "the field's box is filled: {painted} pixels");
    let v = desk.ok(&["screenshot", "--app", "zenity", "--ocr"]);
    assert!(!v.to_string().contains("s3cret"), "{v}");
    for f in walk(dir.path()) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("s3cretPW"),
            "{} holds the secret",
            f.display()
        );
    }
}

fn walk(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.is_file() && p.extension().is_none_or(|x| x != "sock") {
                out.push(p);
            }
        }
    }
    out
}

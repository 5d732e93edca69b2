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
    let (_, _, bw, bh, scale) = basis(&v);
    let tk = v["toolkit_scale"].as_f64().unwrap();
    let tree = &v["window"]["bounds"];
    assert_eq!(
        (tree["x"].as_i64(), tree["y"].as_i64()),
        (Some(0), Some(0)),
        "GTK 4: {v}"
    );
    let mx = (bw - tree["width"].as_f64().unwrap() * tk) / 2.0;
    let my = (bh - tree["height"].as_f64().unwrap() * tk) / 2.0;
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
        // reports positions relative to its window, whose X window has a shadow
        // margin around the tree's extents, the same on each side.
        let ex = (mx + at("x") * tk) * scale;
        let ey = (my + at("y") * tk) * scale;
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
    // Independently of the transform, in the pixels themselves: the "=" key is
    // the one orange element; its mark's box holds orange inside its top and
    // bottom edges and none just outside them.
    let plain = dir.path().join("plain.png");
    desk.ok(&[
        "screenshot",
        "--app",
        "gnome-calculator",
        "--out",
        plain.to_str().unwrap(),
    ]);
    let plain = png(&plain);
    let eq = legend
        .iter()
        .find(|e| e["name"] == "=")
        .unwrap_or_else(|| panic!("the = key is marked: {v}"));
    let m = &eq["bounds"];
    let g = |k: &str| m[k].as_i64().unwrap() as u32;
    let orange = |x: u32, y: u32| {
        let p = plain.get_pixel(x, y).0;
        p[0] > 200 && (60..200).contains(&p[1]) && p[2] < 80
    };
    let cx = g("x") + g("width") / 2;
    assert!(
        orange(cx, g("y") + g("height") / 2),
        "the = mark's centre is orange"
    );
    assert!(
        orange(cx, g("y") + 6),
        "orange just inside the mark's top edge"
    );
    assert!(
        orange(cx, g("y") + g("height") - 7),
        "orange just inside its bottom edge"
    );
    assert!(!orange(cx, g("y") - 5), "no orange just above the mark");
    assert!(
        g("y") + g("height") + 4 >= plain.height() || !orange(cx, g("y") + g("height") + 4),
        "no orange just below the mark"
    );
    // The audit keeps the capture's size and mode, never pixels.
    let audit = desk.ok(&["audit", "--tail", "20"]);
    let text = audit.to_string();
    assert!(
        text.contains("\"capture\"") && text.contains("marks"),
        "{audit}"
    );
}

/// Waits until `apps` lists a window whose app or title contains `what`.
fn wait_listed(desk: &Desk<'_>, what: &str) {
    let start = std::time::Instant::now();
    loop {
        let apps = desk.ok(&["apps"]);
        if apps.to_string().contains(what) {
            return;
        }
        assert!(
            start.elapsed().as_secs() < 30,
            "{what} never listed: {apps}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `screenshot --window TITLE --out FILE`: the result and the PNG written.
fn shot_of(desk: &Desk<'_>, title: &str, file: &std::path::Path) -> (Value, image::RgbaImage) {
    let v = desk.ok(&[
        "screenshot",
        "--window",
        title,
        "--out",
        file.to_str().unwrap(),
    ]);
    (v, png(file))
}

/// Waits for a file the app writes (its oracle) and returns its text.
fn wait_file(path: &std::path::Path) -> String {
    let start = std::time::Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && !s.is_empty()
        {
            return s;
        }
        assert!(
            start.elapsed().as_secs() < 10,
            "{} never written",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// xmessage (Athena widgets, no accessibility bridge): observe says there is no
/// tree and how to allow pixels; with pixels allowed it lists the buttons read by
/// OCR, and clicking "Beta" makes xmessage exit with that button's status, 4; the
/// click's answer is `ok` and says the window closed.
#[test]
fn xmessage_has_no_tree_and_its_button_is_clicked_through_ocr() {
    let dir = TempDir::new("pixels-xmessage");
    let desk = Desk::start(dir.path());
    let status = dir.path().join("status");
    let script = format!(
        "xmessage -buttons Alpha:3,Beta:4 'pick one'; echo $? > '{}'",
        status.display()
    );
    desk.ok(&["sandbox", "run", "--", "sh", "-c", &script]);
    wait_listed(&desk, "xmessage");
    let v = desk.fails_with(
        &["observe", "--app", "xmessage"],
        "COMPUTER_ACCESSIBILITY_DISABLED",
    );
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("no accessibility tree") && msg.contains("capture a11y-and-pixels"),
        "{v}"
    );
    std::fs::create_dir_all(desk.config().parent().unwrap()).unwrap();
    std::fs::write(desk.config(), PIXELS).unwrap();
    desk.ok(&["revoke"]);
    let v = desk.ok(&["observe", "--app", "xmessage"]);
    let text = v["text"].as_str().unwrap();
    assert!(text.contains("no accessibility tree"), "{text}");
    for want in [
        "text \"pick one\" (ocr)",
        "text \"Alpha\" (ocr)",
        "text \"Beta\" (ocr)",
    ] {
        assert!(text.contains(want), "{want} in:\n{text}");
    }
    let beta = text
        .lines()
        .find(|l| l.contains("\"Beta\""))
        .and_then(|l| l.trim().strip_prefix('['))
        .and_then(|l| l.split(']').next())
        .unwrap()
        .to_owned();
    let v = desk.ok(&["act", &beta, "click"]);
    let said = v["text"].as_str().unwrap();
    assert!(said.contains("via pointer(ocr)"), "{said}");
    assert!(
        said.contains("under the point: the text \"Beta\" read by OCR"),
        "{said}"
    );
    assert_eq!(v["result"]["channel"], "pointer_ocr", "{v}");
    // Judged on the window clicked: it closed, and the answer says so (not a
    // failure named after whatever window is in front now).
    assert!(
        said.lines()
            .any(|l| l.starts_with("window w") && l.ends_with(" closed")),
        "{said}"
    );
    assert_eq!(
        wait_file(&status).trim(),
        "4",
        "xmessage exited through Beta"
    );
}

/// A pointer click in a window without a tree is judged by the text OCR reads at
/// the point: `click-at` on an xmessage button "Delete all" asks first, as `act`
/// on its OCR element does, and nothing is clicked.
#[test]
fn a_click_at_in_a_window_without_a_tree_is_judged_by_what_is_read_there() {
    let dir = TempDir::new("pixels-xmessage-delete");
    let desk = Desk::start_with_config(dir.path(), PIXELS);
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "xmessage",
        "-buttons",
        "Keep:3,Delete all:7",
        "tidy up?",
    ]);
    wait_listed(&desk, "xmessage");
    let v = desk.ok(&["observe", "--app", "xmessage"]);
    let basis = v["basis"].as_str().unwrap().to_owned();
    let shot = desk.ok(&["screenshot", "--app", "xmessage", "--ocr"]);
    let delete = shot["legend"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "Delete all")
        .unwrap_or_else(|| panic!("Delete all read: {shot}"))
        .clone();
    let b = &delete["bounds"];
    let cx = b["x"].as_f64().unwrap() + b["width"].as_f64().unwrap() / 2.0;
    let cy = b["y"].as_f64().unwrap() + b["height"].as_f64().unwrap() / 2.0;
    let v = desk.fails_with(
        &[
            "click-at",
            &cx.to_string(),
            &cy.to_string(),
            "--basis",
            &basis,
        ],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("Delete"),
        "{v}"
    );
    assert!(
        desk.ok(&["apps"]).to_string().contains("xmessage"),
        "xmessage still runs: the click was not sent"
    );
}

/// A Tk app (Tk has no AT-SPI bridge): text drawn on a canvas and a button, found
/// by OCR; clicking the button runs its command, which writes a file. A button whose
/// text names an irreversible action asks first, as its tree element would.
#[test]
fn a_tk_canvas_and_button_are_read_and_clicked_through_ocr() {
    let dir = TempDir::new("pixels-tk");
    let desk = Desk::start_with_config(dir.path(), PIXELS);
    let app = dir.path().join("app.py");
    let out = dir.path().join("pressed");
    std::fs::write(
        &app,
        r#"import sys
import tkinter as tk

root = tk.Tk()
root.title("tk canvas")
canvas = tk.Canvas(root, width=320, height=120, bg="white", highlightthickness=0)
canvas.pack()
canvas.create_text(160, 50, text="Total 42", font=("DejaVu Sans", 18))
secret = tk.Canvas(root, width=640, height=40, bg="white", highlightthickness=0)
secret.pack()
secret.create_text(320, 20, text="key ghp_0123456789abcdefghijABCDEFGHIJ0123", font=("DejaVu Sans Mono", 14))


def press():
    with open(sys.argv[1], "w") as f:
        f.write("pressed")


tk.Button(root, text="Export", command=press, font=("DejaVu Sans", 14)).pack(pady=10)
tk.Button(root, text="Delete all", command=lambda: None, font=("DejaVu Sans", 14)).pack(pady=10)
later = tk.Button(root, text="Keep", command=lambda: None, font=("DejaVu Sans", 14))
later.pack(pady=10)


def relabel(_event=None):
    later.configure(text="Remove")


root.bind("<F5>", relabel)
root.mainloop()
"#,
    )
    .unwrap();
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "/usr/bin/python3",
        app.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    wait_listed(&desk, "tk canvas");
    let v = desk.ok(&["observe", "--window", "tk canvas"]);
    let text = v["text"].as_str().unwrap();
    let find = |word: &str| {
        text.lines()
            .find(|l| l.contains(&format!("\"{word}\" (ocr)")))
            .and_then(|l| l.trim().strip_prefix('['))
            .and_then(|l| l.split(']').next())
            .unwrap_or_else(|| panic!("{word} not read:\n{text}"))
            .to_owned()
    };
    assert!(text.contains("\"Total 42\" (ocr)"), "{text}");
    // A token drawn in the window (no tree to say so) is painted over in every
    // image and never shows in text.
    assert!(!text.contains("abcdefghij"), "{text}");
    let (shot, img) = shot_of(&desk, "tk canvas", &dir.path().join("secret.png"));
    assert!(shot["notes"].to_string().contains("painted over"), "{shot}");
    let painted = img.pixels().filter(|p| p.0 == [40, 40, 40, 255]).count();
    assert!(
        painted > 2000,
        "the token's line is painted: {painted} pixels"
    );
    let delete = find("Delete all");
    desk.fails_with(&["act", &delete, "click"], "COMPUTER_CONFIRMATION_REQUIRED");
    let export = find("Export");
    desk.ok(&["act", &export, "click"]);
    assert_eq!(wait_file(&out), "pressed");
    // A label that changed since it was read is not clicked under its old name.
    let keep = find("Keep");
    desk.ok(&["keys", "F5"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let v = desk.fails_with(&["act", &keep, "click"], "COMPUTER_STALE_REF");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("now reads"),
        "{v}"
    );
    // Another process's popup stacked over the window takes no click meant for
    // the window, and is painted over in a capture.
    let v = desk.ok(&["observe", "--window", "tk canvas"]);
    let basis = v["basis"].as_str().unwrap().to_owned();
    let origin = basis.split_once(':').unwrap().1.split_once(',').unwrap();
    let (ox, oy) = (
        origin.0.to_owned(),
        origin.1.split_once(',').unwrap().0.to_owned(),
    );
    let trap = dir.path().join("trap.py");
    std::fs::write(
        &trap,
        r#"import sys
import tkinter as tk

top = tk.Tk()
top.overrideredirect(True)
top.geometry("200x60+%s+%s" % (sys.argv[1], sys.argv[2]))
tk.Label(top, text="TRAP", bg="yellow").pack(fill="both", expand=True)
top.mainloop()
"#,
    )
    .unwrap();
    desk.ok(&[
        "sandbox",
        "run",
        "--",
        "/usr/bin/python3",
        trap.to_str().unwrap(),
        &ox,
        &oy,
    ]);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (shot, img) = shot_of(&desk, "tk canvas", &dir.path().join("covered.png"));
    assert!(shot["notes"].to_string().contains("overlaps"), "{shot}");
    assert_eq!(
        img.get_pixel(20, 20).0,
        [40, 40, 40, 255],
        "the popup's area is painted over"
    );
    let basis = shot["basis"].as_str().unwrap().to_owned();
    let v = desk.fails_with(
        &["click-at", "20", "20", "--basis", &basis],
        "COMPUTER_SCOPE_VIOLATION",
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("on top"),
        "{v}"
    );
}

/// A HiDPI desktop (3840×2160, Xft.dpi 192) with gedit at GDK_SCALE=2: the basis of
/// a screenshot records the toolkit's scale 2 and the image's downscale, and a
/// click at the menu button's centre in image pixels opens its popover (read back
/// through the tree). A point outside the image is refused, never clamped.
#[test]
fn a_click_in_a_downscaled_hidpi_screenshot_lands_on_its_button() {
    let dir = TempDir::new("pixels-hidpi");
    let cfg = dir.path().join("cfg");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("config.toml"), PIXELS).unwrap();
    let desk = Desk::start_with(dir.path(), &["--size", "3840x2160"]);
    let mut xrdb = std::process::Command::new("xrdb")
        .arg("-merge")
        .env("DISPLAY", format!(":{}", desk.display))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("xrdb runs");
    std::io::Write::write_all(xrdb.stdin.as_mut().unwrap(), b"Xft.dpi: 192\n").unwrap();
    drop(xrdb.stdin.take());
    assert!(xrdb.wait().unwrap().success());
    desk.ok(&["sandbox", "run", "--", "env", "GDK_SCALE=2", "gedit"]);
    let (out, v) = desk.run(&[
        "wait",
        "--app",
        "gedit",
        "--role",
        "button",
        "--name",
        "Save",
        "--timeout-ms",
        "90000",
    ]);
    if !out.status.success() {
        let (_, apps) = desk.run(&["apps"]);
        let (_, seen) = desk.run(&["observe", "--app", "gedit"]);
        panic!("gedit's Save button never came: {v}\napps: {apps}\nobserve: {seen}");
    }
    let v = desk.ok(&["screenshot", "--app", "gedit", "--marks"]);
    assert_eq!(v["toolkit_scale"], 2.0, "{v}");
    let (_, _, w, _, scale) = basis(&v);
    assert!(
        w > 1280.0 && scale < 1.0,
        "a downscaled device capture: {v}"
    );
    let long = v["width"]
        .as_u64()
        .unwrap()
        .max(v["height"].as_u64().unwrap());
    assert_eq!(long, 1280, "downscaled to the default long side: {v}");
    let menu = v["legend"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "Menu" && e["bounds"]["x"].as_i64().unwrap() > 600)
        .unwrap_or_else(|| panic!("the main menu button is marked: {v}"))
        .clone();
    let b = &menu["bounds"];
    let cx = b["x"].as_f64().unwrap() + b["width"].as_f64().unwrap() / 2.0;
    let cy = b["y"].as_f64().unwrap() + b["height"].as_f64().unwrap() / 2.0;
    let basis_text = v["basis"].as_str().unwrap().to_owned();
    let v = desk.ok(&[
        "click-at",
        &cx.to_string(),
        &cy.to_string(),
        "--basis",
        &basis_text,
    ]);
    let said = v["text"].as_str().unwrap();
    assert!(said.contains("under the point: button \"Menu\""), "{said}");
    desk.wait_for("gedit", "button", "Preferences", 10000);
    desk.fails_with(
        &["click-at", "1280", "5", "--basis", &basis_text],
        "COMPUTER_SCOPE_VIOLATION",
    );
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

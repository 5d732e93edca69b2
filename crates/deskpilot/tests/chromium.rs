//! Chromium, a real browser, through the CLI in its own sandbox desktop: the page's
//! tree appears, a button found by name is clicked through its accessibility action,
//! the title and text it changes come back in the diff and in a fresh observe, and a
//! text input takes a value that reads back exactly.
//!
//! The page is `fixtures/chromium_page.html`, written into a private directory and
//! opened as a `file://` URL (the network is closed; the sandbox adds the flags that
//! keep Chromium off it and turn its accessibility tree on). The sandbox is started,
//! used and stopped through the CLI with `DESKPILOT_RUNTIME_DIR` set to that private
//! directory, so neither its state nor the refs the CLI keeps are shared with any
//! other sandbox. A missing Chromium fails the test; nothing here is skipped. The
//! timings it prints (time to first tree, observe time, tokens, objects) are the
//! numbers quoted for Chromium.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

mod common;

use std::time::{Duration, Instant};

use common::own::{Desk, TempDir};
use serde_json::Value;

/// The page under test: title "Before"; a heading "Waiting" and a paragraph that the
/// button "Make it so" changes to "Done" / "The button was clicked." while setting
/// the title to "After"; a text input labelled "Your name".
const PAGE: &str = include_str!("fixtures/chromium_page.html");

/// How long Chromium may take to show the page's tree. It shows it in ~1.5 s on an
/// idle 2-core machine; the ceiling covers a machine busy with other builds.
const FIRST_TREE_TIMEOUT: Duration = Duration::from_secs(90);

/// Finds a program on `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// The lines of a snapshot without indentation and refs: `[e5] button "OK"` →
/// `button "OK"`.
fn bare_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let l = l.trim_start();
            match l.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                Some((_, rest)) => rest.to_string(),
                None => l.to_string(),
            }
        })
        .collect()
}

fn has_line(text: &str, want: &str) -> bool {
    bare_lines(text).iter().any(|l| l == want)
}

fn has_line_starting(text: &str, prefix: &str) -> bool {
    bare_lines(text).iter().any(|l| l.starts_with(prefix))
}

/// The one match of a `find`, checked for its role and name.
fn only_match(v: &Value, role: &str, name: &str) -> Value {
    let m = v["matches"].as_array().expect("matches");
    assert_eq!(m.len(), 1, "exactly one {role} {name:?}: {v}");
    assert_eq!(m[0]["role"], role, "{v}");
    assert_eq!(m[0]["name"], name, "{v}");
    m[0].clone()
}

/// One Chromium at a time: two starting together on 2 cores starve each other's
/// renderer, and a page's own script (the oracle's ping) can then miss its deadline.
static ONE_CHROMIUM: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn chromium_page_is_read_clicked_and_typed_into() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        on_path("chromium"),
        "chromium is not installed: run scripts/install-deps (Debian package `chromium`)"
    );
    let dir = TempDir::new("chr");
    let page = dir.path().join("page.html");
    std::fs::write(&page, PAGE).expect("page written");
    let url = format!("file://{}", page.display());

    let sb = Desk::start(dir.path());
    let started = Instant::now();
    let launched = sb.ok(&["sandbox", "run", "--", "chromium", &url]);
    assert_eq!(launched["display"], sb.display);

    // 1. Wait until the page's document is in the tree. Chromium builds its tree
    // lazily, once an accessibility client is there; the sandbox turns that on.
    let mut window_after = None;
    let first_tree = loop {
        if window_after.is_none() {
            let (out, v) = sb.run(&["apps"]);
            let has_window = out.status.success()
                && v["apps"].as_array().is_some_and(|apps| {
                    apps.iter().any(|a| {
                        a["name"] == "Chromium"
                            && a["windows"].as_array().is_some_and(|w| !w.is_empty())
                    })
                });
            if has_window {
                window_after = Some(started.elapsed());
            }
        }
        let (out, v) = sb.run(&["find", "Before", "--app", "chromium", "--role", "document"]);
        if out.status.success()
            && v["matches"]
                .as_array()
                .is_some_and(|m| m.iter().any(|h| h["name"] == "Before"))
        {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < FIRST_TREE_TIMEOUT,
            "Chromium never showed the page's document: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };

    // 2. The window as text: the page's elements with their web roles, each text
    // said once, under the default budget.
    let obs = sb.ok(&["observe", "--app", "chromium"]);
    let text = obs["text"].as_str().unwrap();
    assert_eq!(obs["window"]["title"], "Before - Chromium", "{text}");
    assert_eq!(obs["window"]["app"], "Chromium");
    assert!(
        has_line_starting(text, "document \"Before\""),
        "the page's document: {text}"
    );
    for want in [
        "heading \"Waiting\"",
        "paragraph value=\"Nothing has happened yet.\"",
        "button \"Make it so\"",
        "label value=\"Your name\"",
        "textbox \"Your name\" editable",
    ] {
        assert!(has_line(text, want), "missing line {want:?} in:\n{text}");
    }
    for repeated in ["text \"Waiting\"", "text \"Nothing has happened yet.\""] {
        assert!(
            !has_line(text, repeated),
            "text said twice ({repeated:?}):\n{text}"
        );
    }
    let tokens = obs["tokens"].as_u64().unwrap();
    assert!(
        tokens > 0 && tokens <= 2_000,
        "{tokens} tokens: over the default budget"
    );
    assert_eq!(
        obs["omitted"], 0,
        "nothing is cut from a page this small:\n{text}"
    );
    let objects = obs["stats"]["objects"].as_u64().unwrap();
    let observe_ms = obs["elapsed_ms"].as_u64().unwrap();
    let read_ms = obs["stats"]["elapsed_ms"].as_u64().unwrap();
    let shown = obs["shown"].as_u64().unwrap();

    // Only the browser window is listed, not Chromium's hidden popup surfaces.
    let apps = sb.ok(&["apps"]);
    let chromium: Vec<&Value> = apps["apps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["name"] == "Chromium")
        .collect();
    assert_eq!(chromium.len(), 1, "{apps}");
    let windows = chromium[0]["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 1, "one browser window: {apps}");
    assert_eq!(windows[0]["title"], "Before - Chromium");
    let window_ref = windows[0]["ref"].as_str().unwrap().to_string();

    // 3. Find the button by name and role, click it through its action.
    let found = sb.ok(&[
        "find",
        "Make it so",
        "--role",
        "button",
        "--app",
        "chromium",
    ]);
    let button = only_match(&found, "button", "Make it so");
    assert_eq!(button["window_title"], "Before - Chromium");
    let button_ref = button["ref"].as_str().unwrap().to_string();

    let clicked = sb.ok(&["act", &button_ref, "click"]);
    assert_eq!(clicked["result"]["status"], "executed", "{clicked}");
    assert_eq!(clicked["result"]["channel"], "action", "{clicked}");
    assert_eq!(
        clicked["result"]["method"], "DoAction(\"press\")",
        "Chromium's default action of a button, read by name: {clicked}"
    );
    let diff = clicked["diff"].as_str().unwrap();
    for want in [
        format!("~ [{window_ref}] window name \"Before - Chromium\" → \"After - Chromium\""),
        "paragraph value \"Nothing has happened yet.\" → \"The button was clicked.\"".to_string(),
    ] {
        assert!(diff.contains(&want), "diff lacks {want:?}:\n{diff}");
    }
    assert!(
        diff.lines()
            .any(|l| l.contains("document name \"Before\" → \"After\"")),
        "the document's name changes in the diff:\n{diff}"
    );
    assert!(
        diff.lines()
            .any(|l| l.starts_with("+ [") && l.ends_with("] heading \"Done\"")),
        "the new heading text in the diff:\n{diff}"
    );

    // A fresh read agrees: title, document name and texts changed.
    let after = sb.ok(&["observe", "--app", "chromium"]);
    let text = after["text"].as_str().unwrap();
    assert_eq!(after["window"]["title"], "After - Chromium", "{text}");
    assert!(has_line_starting(text, "document \"After\""), "{text}");
    assert!(has_line(text, "heading \"Done\""), "{text}");
    assert!(
        has_line(text, "paragraph value=\"The button was clicked.\""),
        "{text}"
    );
    assert!(
        !text.contains("Waiting"),
        "the old heading is gone:\n{text}"
    );
    let apps = sb.ok(&["apps"]);
    let titles: Vec<&str> = apps["apps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["name"] == "Chromium")
        .flat_map(|a| a["windows"].as_array().unwrap())
        .filter_map(|w| w["title"].as_str())
        .collect();
    assert_eq!(titles, vec!["After - Chromium"]);

    // 4. A value into the text input, read back through the tree. Chromium's inputs
    // offer no EditableText, so it goes through the declared keyboard fallback.
    const NAME: &str = "Grace Hopper 你好";
    let found = sb.ok(&[
        "find",
        "Your name",
        "--role",
        "textbox",
        "--app",
        "chromium",
    ]);
    let input_ref = only_match(&found, "textbox", "Your name")["ref"]
        .as_str()
        .unwrap()
        .to_string();
    let typed = sb.ok(&["act", &input_ref, "set_value", NAME]);
    assert_eq!(typed["result"]["status"], "executed", "{typed}");
    assert_eq!(typed["result"]["channel"], "keyboard", "{typed}");
    let diff = typed["diff"].as_str().unwrap();
    assert!(
        diff.contains(&format!("textbox \"Your name\" value \"\" → \"{NAME}\"")),
        "{diff}"
    );
    let read_back = sb.ok(&["observe", "--app", "chromium", "--query", "Grace"]);
    assert!(
        has_line(
            read_back["text"].as_str().unwrap(),
            &format!("textbox \"Your name\" value=\"{NAME}\" editable focused")
        ),
        "{read_back}"
    );

    eprintln!(
        "chromium: window after {} ms, page tree after {} ms; observe {observe_ms} ms \
         (tree read {read_ms} ms), {tokens} tokens, {shown} elements shown of {objects} \
         objects read",
        window_after.unwrap_or(first_tree).as_millis(),
        first_tree.as_millis(),
    );
}

/// A loopback HTTP server that serves `page` at `/page` and logs the path of every
/// other request (answered 204): the oracle of whether a page action fired.
struct HitLogger {
    port: u16,
    hits: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HitLogger {
    fn start(page: &'static str) -> HitLogger {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback port");
        let port = listener.local_addr().unwrap().port();
        let hits = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let log = log.clone();
                // One thread a connection: Chromium opens speculative connections it
                // may never send on, and one of those must not hold up the request
                // the test waits for.
                std::thread::spawn(move || {
                    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
                    let mut buf = [0u8; 8192];
                    let n = s.read(&mut buf).unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let reply = if path == "/page" {
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                            page.len()
                        )
                    } else {
                        if !path.is_empty() && path != "/favicon.ico" {
                            log.lock().unwrap().push(path);
                        }
                        "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n".to_owned()
                    };
                    let _ = s.write_all(reply.as_bytes());
                });
            }
        });
        HitLogger { port, hits }
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

/// A shop page whose actions report to the hit logger.
const SHOP: &str = r#"<!doctype html><html><head><title>Shop</title></head><body>
<h1>Checkout</h1>
<button onclick="fetch('/ping')">Ping</button>
<button aria-expanded="false" onclick="fetch('/expand-pay')">Pay now</button>
<form action="/submit" method="get">
<input name="card" aria-label="Card">
<button type="submit">Pay</button>
</form>
</body></html>"#;

/// Items of the policy's adversarial review on a real browser, with the loopback hit
/// logger as the oracle: a `<button aria-expanded>` "Pay now" expanded (which
/// presses it), Return in a form field and a line break in its value (which submit
/// the form to its "Pay" button), and a `javascript:` URL typed into the address bar
/// all stop before anything reaches the server; a harmless button does reach it.
#[test]
fn chromium_actions_that_would_pay_or_run_script_do_not_fire() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        on_path("chromium"),
        "chromium is not installed: run scripts/install-deps (Debian package `chromium`)"
    );
    let logger = HitLogger::start(SHOP);
    let dir = TempDir::new("shop");
    let url = format!("http://127.0.0.1:{}/page", logger.port);
    let sb = Desk::start(dir.path());
    sb.ok(&["sandbox", "run", "--", "chromium", &url]);
    let started = Instant::now();
    loop {
        let (out, v) = sb.run(&["find", "Checkout", "--app", "chromium", "--role", "heading"]);
        if out.status.success() && v["matches"].as_array().is_some_and(|m| !m.is_empty()) {
            break;
        }
        assert!(
            started.elapsed() < FIRST_TREE_TIMEOUT,
            "Chromium never showed the shop page: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    sb.ok(&["observe", "--app", "chromium"]);
    let refused = |args: &[&str], code: &str| {
        let (out, v) = sb.run(args);
        assert!(!out.status.success(), "{args:?} should fail: {v}");
        assert_eq!(v["error"]["code"], code, "{args:?}: {v}");
        v
    };
    let find_ref = |text: &str, role: &str| -> String {
        let v = sb.ok(&["find", text, "--app", "chromium", "--role", role]);
        v["matches"]
            .as_array()
            .and_then(|m| m.iter().find(|h| h["name"] == text).cloned())
            .unwrap_or_else(|| panic!("no {role} {text:?}: {v}"))["ref"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let pay_now = find_ref("Pay now", "button");
    let v = refused(
        &["act", &pay_now, "expand"],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("pay"),
        "{v}"
    );
    let card = find_ref("Card", "textbox");
    refused(
        &["act", &card, "set_value", "999\n"],
        "COMPUTER_CONFIRMATION_REQUIRED",
    );
    sb.ok(&["act", &card, "focus"]);
    for chord in ["Return", "ret", "KP_Enter"] {
        refused(&["keys", chord], "COMPUTER_CONFIRMATION_REQUIRED");
    }
    let bar = find_ref("Address and search bar", "textbox");
    let v = refused(
        &["act", &bar, "set_value", "javascript:fetch('/pwn')"],
        "COMPUTER_SCOPE_VIOLATION",
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("javascript"),
        "{v}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(logger.hits(), Vec::<String>::new(), "nothing fired");
    // The oracle works: a harmless button reaches the server.
    let ping = find_ref("Ping", "button");
    let clicked = sb.ok(&["act", &ping, "click"]);
    let start = Instant::now();
    while !logger.hits().iter().any(|h| h == "/ping") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the ping never arrived: {:?}; the click answered {clicked}",
            logger.hits()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(logger.hits(), vec!["/ping".to_owned()]);
}

/// A browser's developer tools run what is typed into their console as code in the
/// page (DevTools printed a password into a page and clicked Send). They are a
/// `code` surface: the keys that open them are refused, and every effect on a
/// window that shows them is refused — but F12, which closes them — with the
/// loopback logger as the oracle that nothing reached the page's server until
/// they were closed.
#[test]
fn chromium_developer_tools_are_a_code_surface() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let logger = HitLogger::start(SHOP);
    let dir = TempDir::new("devtools");
    let url = format!("http://127.0.0.1:{}/page", logger.port);
    let sb = Desk::start(dir.path());
    sb.ok(&[
        "sandbox",
        "run",
        "--",
        "chromium",
        "--auto-open-devtools-for-tabs",
        &url,
    ]);
    let devtools_shown = || {
        let (out, v) = sb.run(&[
            "find", "DevTools", "--app", "chromium", "--role", "document",
        ]);
        out.status.success()
            && v["matches"]
                .as_array()
                .is_some_and(|m| m.iter().any(|h| h["name"] == "DevTools"))
    };
    let started = Instant::now();
    while !devtools_shown() {
        assert!(
            started.elapsed() < FIRST_TREE_TIMEOUT,
            "Chromium never showed its developer tools"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let refused = |args: &[&str]| {
        let (out, v) = sb.run(args);
        assert!(!out.status.success(), "{args:?} should fail: {v}");
        assert_eq!(v["error"]["code"], "COMPUTER_DENYLISTED", "{args:?}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("developer tools"),
            "{v}"
        );
    };
    let ping = || -> String {
        let v = sb.ok(&["find", "Ping", "--app", "chromium", "--role", "button"]);
        v["matches"][0]["ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"))
            .to_owned()
    };
    // DevTools asks the server for its own workspace file; the page's hits are
    // the others.
    let page_hits = || -> Vec<String> {
        logger
            .hits()
            .into_iter()
            .filter(|h| !h.starts_with("/.well-known/"))
            .collect()
    };
    refused(&["keys", "--text", "fetch('/devtools')", "--app", "chromium"]);
    refused(&["keys", "Return", "--app", "chromium"]);
    refused(&["act", &ping(), "click"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        page_hits(),
        Vec::<String>::new(),
        "nothing reached the page"
    );
    // F12 closes them; once closed, the keys that open them are refused.
    sb.ok(&["keys", "F12", "--app", "chromium"]);
    let closed = Instant::now();
    while devtools_shown() {
        assert!(
            closed.elapsed() < Duration::from_secs(20),
            "F12 did not close them"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    refused(&["keys", "F12", "--app", "chromium"]);
    refused(&["keys", "ctrl+shift+j", "--app", "chromium"]);
    // The page itself works again: the oracle.
    sb.ok(&["act", &ping(), "click"]);
    let start = Instant::now();
    while !page_hits().iter().any(|h| h == "/ping") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            logger.hits()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(page_hits(), vec!["/ping".to_owned()]);
}

/// An accept-edits sandbox with Chromium showing `html`, written to `file` in `dir`.
fn page_desk<'a>(dir: &'a TempDir, file: &str, html: &str) -> Desk<'a> {
    page_desk_with(dir, file, html, "")
}

/// [`page_desk`] with more config lines.
fn page_desk_with<'a>(dir: &'a TempDir, file: &str, html: &str, config: &str) -> Desk<'a> {
    let page = dir.path().join(file);
    std::fs::write(&page, html).expect("page written");
    let sb = Desk::start_with_config(
        dir.path(),
        &format!("{config}[sandbox]\nmode = \"accept-edits\"\n"),
    );
    sb.ok(&[
        "sandbox",
        "run",
        "--",
        "chromium",
        &format!("file://{}", page.display()),
    ]);
    sb
}

/// A web `<select>`: the combo box shows its current choice as its value, the popup's
/// option is chosen by its own `select` action after `expand`, and the page sees the
/// change (its `onchange` sets the title, read through `xprop`). An action that was
/// not done exits 1 with its code, the result line still printed.
#[test]
fn a_web_select_takes_the_option_clicked_and_shows_it() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-select");
    let sb = page_desk(
        &dir,
        "select.html",
        "<html><head><title>Form</title></head><body><label for=c>Country</label> \
         <select id=c onchange=\"document.title='picked '+this.value\">\
         <option>Germany</option><option>France</option><option>Spain</option></select>\
         </body></html>",
    );
    sb.wait_for("chromium", "combobox", "Country", 90000);
    let obs = sb.ok(&["observe", "--app", "chromium", "--query", "Country"]);
    let text = obs["text"].as_str().unwrap();
    assert!(
        text.contains("combobox \"Country\" value=\"Germany\""),
        "{text}"
    );
    let combo = only_match(
        &sb.ok(&["find", "Country", "--role", "combobox"]),
        "combobox",
        "Country",
    )["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    sb.ok(&["act", &combo, "expand"]);
    let france = only_match(
        &sb.ok(&["find", "France", "--role", "menuitem"]),
        "menuitem",
        "France",
    )["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let v = sb.ok(&["act", &france, "click"]);
    assert_eq!(v["result"]["status"], "executed", "{v}");
    let start = Instant::now();
    while !common::x_titles(sb.display)
        .iter()
        .any(|t| t.contains("picked France"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the page never saw France: {:?}",
            common::x_titles(sb.display)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let obs = sb.ok(&["observe", "--app", "chromium", "--query", "Country"]);
    let text = obs["text"].as_str().unwrap();
    assert!(
        text.contains("combobox \"Country\" value=\"France\""),
        "{text}"
    );
    // Not done is not ok: a combo box has no scroll bar to scroll.
    let (out, v) = sb.run(&["act", &combo, "scroll", "left"]);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["error"]["code"], "COMPUTER_ELEMENT_NOT_ACTIONABLE", "{v}");
    assert_eq!(v["error"]["detail"]["result"]["status"], "rejected", "{v}");
}

/// A checksum of `s` the test page computes the same way: the sum over code points
/// of (position + 1) × code point, modulo 1,000,000,007.
fn checksum(s: &str) -> u64 {
    s.chars().enumerate().fold(0u64, |acc, (i, c)| {
        (acc + (i as u64 + 1) * c as u64) % 1_000_000_007
    })
}

/// Every typed character lands in Chromium, in order, and the call returns only once
/// they have: 2,000 mixed-script characters into a `<textarea>` whose `oninput` puts
/// the value's length and checksum in the title, read through `xprop` (the oracle).
/// The title changes as the text arrives; keys that follow still find their window.
#[test]
fn two_thousand_mixed_characters_land_exactly_in_chromium() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-type");
    let sb = page_desk(
        &dir,
        "type.html",
        "<html><head><title>0:0</title></head><body><textarea id=t autofocus oninput=\"\
         let s=0,i=0;for(const c of this.value){i++;s=(s+i*c.codePointAt(0))%1000000007;}\
         document.title=i+':'+s\"></textarea></body></html>",
    );
    sb.ok(&[
        "wait",
        "--app",
        "chromium",
        "--window-title",
        "0:0",
        "--timeout-ms",
        "90000",
    ]);
    sb.ok(&["observe", "--app", "chromium"]);
    let text = common::mixed_text();
    let want = format!("{}:{}", text.chars().count(), checksum(&text));
    let started = Instant::now();
    let v = sb.ok(&["keys", "--text", &text]);
    let took = started.elapsed();
    assert_eq!(v["result"]["verified_chars"], 2000, "{v}");
    // The call returned once the text was there: the title already says so.
    let titles = common::x_titles(sb.display);
    assert!(
        titles.iter().any(|t| t.contains(&want)),
        "the page holds other text than was typed: want {want}, titles {titles:?}"
    );
    // The title changed under the typing; the window is the same one.
    sb.ok(&["keys", "--text", "!"]);
    eprintln!(
        "chromium: 2000 characters typed and read back in {} ms",
        took.as_millis()
    );
}

/// Text drawn on a `<canvas>` has no tree: with pixels allowed, `observe` reads the
/// canvas element's rectangle by OCR and lists the text as an `o` element, marked
/// as read from pixels.
#[test]
fn text_on_a_canvas_is_offered_by_ocr_when_pixels_are_allowed() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-canvas");
    let sb = page_desk_with(
        &dir,
        "canvas.html",
        "<html><head><title>Chart</title></head><body><h1>Report</h1>\
         <canvas id=c width=360 height=120></canvas><script>\
         const x=document.getElementById('c').getContext('2d');\
         x.fillStyle='#fff';x.fillRect(0,0,360,120);x.fillStyle='#000';\
         x.font='32px sans-serif';x.fillText('Total 42',40,70);</script></body></html>",
        "capture = \"a11y-and-pixels\"\n",
    );
    sb.wait_for("chromium", "heading", "Report", 90000);
    let v = sb.ok(&["observe", "--app", "chromium"]);
    let text = v["text"].as_str().unwrap();
    assert!(text.contains("image, read from pixels (ocr"), "{text}");
    assert!(text.contains("text \"Total 42\" (ocr)"), "{text}");
}

/// A token drawn on a `<canvas>` in a page that has a tree was sent unpainted in
/// screenshots: the tree says nothing of a drawing, and only long texts were read
/// by OCR before an image left. Images big enough to hold text are read too, and
/// one showing a secret is painted over whole; the text read from it is masked.
#[test]
fn a_token_drawn_on_a_canvas_is_painted_over_in_a_screenshot() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-canvas-key");
    let sb = page_desk_with(
        &dir,
        "key.html",
        "<html><head><title>Keys</title></head><body><h1>Settings</h1>\
         <canvas id=c width=760 height=80></canvas><script>\
         const x=document.getElementById('c').getContext('2d');\
         x.fillStyle='#fff';x.fillRect(0,0,760,80);x.fillStyle='#000';\
         x.font='26px monospace';\
         x.fillText('sk_live_51H8xQ2eZvKYlo2C0123456789abcdEF',10,50);</script></body></html>",
        "capture = \"a11y-and-pixels\"\n",
    );
    sb.wait_for("chromium", "heading", "Settings", 90000);
    let v = sb.ok(&["observe", "--app", "chromium"]);
    let text = v["text"].as_str().unwrap();
    assert!(!text.contains("51H8xQ2e"), "{text}");
    let out = dir.path().join("key.png");
    let shot = sb.ok(&[
        "screenshot",
        "--window",
        "Keys",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(shot["notes"].to_string().contains("painted over"), "{shot}");
    let img = image::open(&out)
        .expect("the screenshot is a PNG")
        .to_rgba8();
    let painted = img.pixels().filter(|p| p.0 == [40, 40, 40, 255]).count();
    assert!(
        painted > 30_000,
        "the canvas (760×80) is painted over: {painted} pixels"
    );
}

/// A generic "Yes" in a page's own modal (`role=dialog`) under "Permanently delete
/// 1,204 files? This cannot be undone." ran: only a window that is itself a dialog
/// had its question read. The dialog around the button is found inside the page;
/// the click asks first, and the page's title (its handler's oracle, through
/// `xprop`) never changes.
#[test]
fn a_generic_yes_in_a_web_modal_is_judged_by_its_question() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-modal");
    let sb = page_desk(
        &dir,
        "modal.html",
        "<html><head><title>Files</title></head><body><h1>Files</h1>\
         <div role=dialog aria-modal=true aria-labelledby=q>\
         <p id=q>Permanently delete 1,204 files? This cannot be undone.</p>\
         <button onclick=\"document.title='deleted'\">Yes</button>\
         <button>No</button></div></body></html>",
    );
    sb.wait_for("chromium", "button", "Yes", 90000);
    sb.ok(&["observe", "--app", "chromium"]);
    let yes = only_match(
        &sb.ok(&["find", "Yes", "--role", "button"]),
        "button",
        "Yes",
    )["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let v = sb.fails_with(&["act", &yes, "click"], "COMPUTER_CONFIRMATION_REQUIRED");
    assert!(v.to_string().contains("confirms"), "{v}");
    std::thread::sleep(Duration::from_millis(500));
    let titles = common::x_titles(sb.display);
    assert!(
        !titles.iter().any(|t| t.contains("deleted")),
        "the handler ran: {titles:?}"
    );
}

/// A match inside a frame says which frame: a shop page and its checkout frame each
/// have a "Pay" button; `find` gives both, each with the documents it lies in
/// (`frame`), and the frame's line names the frame. Before, the two matches could
/// not be told apart but by ref.
#[test]
fn a_match_inside_a_frame_says_which_frame() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-frame");
    let sb = page_desk(
        &dir,
        "frames.html",
        "<html><head><title>Shop</title></head><body><button>Pay</button>\
         <iframe title=\"Checkout\" srcdoc=\"<html><head><title>Checkout</title></head>\
         <body><button>Pay</button></body></html>\"></iframe></body></html>",
    );
    sb.wait_for("chromium", "button", "Pay", 90000);
    sb.ok(&["observe", "--app", "chromium"]);
    let start = Instant::now();
    let found = loop {
        let v = sb.ok(&["find", "Pay", "--role", "button"]);
        if v["matches"].as_array().is_some_and(|m| m.len() == 2) {
            break v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the frame's button never came: {v}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let matches = found["matches"].as_array().unwrap();
    let frames: Vec<&Value> = matches.iter().map(|m| &m["frame"]).collect();
    assert!(
        frames.contains(&&serde_json::json!(["Shop", "Checkout"])),
        "{found}"
    );
    assert!(frames.contains(&&serde_json::json!(["Shop"])), "{found}");
    let inner = matches
        .iter()
        .find(|m| m["frame"] == serde_json::json!(["Shop", "Checkout"]))
        .unwrap();
    assert!(
        inner["line"]
            .as_str()
            .unwrap()
            .ends_with("(in frame \"Checkout\")"),
        "{inner}"
    );
}

/// A virtualised list that renders 20 of its 500 rows (each row says
/// `aria-setsize=500`) is shown with the rows it has and "… 480 more items", and a
/// `find` for a row not rendered says the search was partial. Before, it showed
/// 20 rows and no size, and the find said only "no match".
#[test]
fn a_virtualised_web_list_says_how_many_rows_it_has() {
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-setsize");
    let rows: String = (1..=20)
        .map(|i| format!("<li aria-setsize=\"500\" aria-posinset=\"{i}\">Row {i}</li>"))
        .collect();
    let sb = page_desk(
        &dir,
        "rows.html",
        &format!(
            "<html><head><title>Rows</title></head><body>\
             <ul aria-label=\"Results\">{rows}</ul></body></html>"
        ),
    );
    sb.wait_for("chromium", "listitem", "Row 20", 90000);
    let obs = sb.ok(&["observe", "--app", "chromium"]);
    let text = obs["text"].as_str().unwrap();
    // "… N more items": the rows not shown, the 480 not rendered among them.
    let more = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("… ")?
                .split_once(" more items")?
                .0
                .parse::<u64>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no \"more items\" line:\n{text}"));
    assert!(more >= 480, "{text}");
    let v = sb.ok(&["find", "Row 321"]);
    assert_eq!(v["matches"].as_array().map(Vec::len), Some(0), "{v}");
    assert!(
        v["unsearched"]["unread_children"].as_u64().unwrap_or(0) >= 480,
        "{v}"
    );
}

/// A page still loading says so: a loopback server sends the head of a page and
/// holds the rest back; the snapshot shows what arrived with the document marked
/// `busy`, and once the page has arrived it is not. The oracle for "still loading"
/// is the server, which has not closed the response yet.
#[test]
fn a_page_still_loading_is_marked_busy() {
    use std::io::{Read as _, Write as _};
    let _one = ONE_CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("chr-busy");
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let (finish, finished) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        for stream in server.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).into_owned();
            if !request.starts_with("GET / ") {
                let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
                continue;
            }
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n\
                  <html><head><title>Slow</title></head><body><p>First part</p>",
            );
            let _ = s.flush();
            // Hold the rest until the test has looked.
            let _ = finished.recv_timeout(Duration::from_secs(60));
            let _ = s.write_all(b"<p>Last part</p></body></html>");
            return;
        }
    });
    let sb = Desk::start_with_config(dir.path(), "[sandbox]\nmode = \"accept-edits\"\n");
    sb.ok(&[
        "sandbox",
        "run",
        "--",
        "chromium",
        &format!("http://127.0.0.1:{port}/"),
    ]);
    sb.ok(&[
        "wait",
        "--app",
        "chromium",
        "--text",
        "First part",
        "--timeout-ms",
        "90000",
    ]);
    let obs = sb.ok(&["observe", "--app", "chromium"]);
    let text = obs["text"].as_str().unwrap();
    let doc = text
        .lines()
        .find(|l| l.contains("] document \"Slow\""))
        .unwrap_or_else(|| panic!("no document line:\n{text}"));
    assert!(
        doc.contains("busy"),
        "the loading page is marked: {doc}\n{text}"
    );
    finish.send(()).unwrap();
    sb.ok(&[
        "wait",
        "--app",
        "chromium",
        "--text",
        "Last part",
        "--timeout-ms",
        "30000",
    ]);
    let start = Instant::now();
    loop {
        let obs = sb.ok(&["observe", "--app", "chromium"]);
        let text = obs["text"].as_str().unwrap().to_owned();
        let doc = text
            .lines()
            .find(|l| l.contains("] document \"Slow\""))
            .unwrap_or_else(|| panic!("no document line:\n{text}"))
            .to_owned();
        if !doc.contains("busy") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "still busy after it loaded: {doc}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

//! The applications the bench measures and the files they open.
//!
//! Owns the table of apps (how each is launched, which window is measured, what must
//! be in its tree before measuring starts, which action and which search are timed)
//! and the fixtures written into the bench's temporary directory: a 2,000-line text
//! file for mousepad, a page with a form and a 500-row table of links for Chromium,
//! and a LibreOffice profile that skips the first-start dialogs. It launches nothing
//! and reads no tree itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use deskpilot_core::{Op, Role};
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// Lines in mousepad's file.
pub const TEXT_LINES: usize = 2_000;
/// Rows in the Chromium page's table.
pub const TABLE_ROWS: usize = 500;

/// An action the bench times on an app.
#[derive(Debug, Clone, Copy)]
pub struct ActSpec {
    /// Role of the element acted on.
    pub role: Role,
    /// Exact accessible name of the element; `None` for the app's editable text.
    pub name: Option<&'static str>,
    pub op: Op,
    /// The op takes a value (a different one each run, so every run changes the app).
    pub with_value: bool,
    /// How the figure is labelled, e.g. `set_value`.
    pub label: &'static str,
}

/// One measured application.
#[derive(Debug, Clone, Copy)]
pub struct AppSpec {
    /// Key for `--apps` and the `app` field of every figure.
    pub key: &'static str,
    /// Name of the application on the accessibility bus (case-insensitive).
    pub bus_name: &'static str,
    /// Part of the measured window's title (case-insensitive; empty: any window).
    pub title: &'static str,
    /// Text that is in the window's tree once the app has finished loading.
    pub ready_text: &'static str,
    /// How long start-up may take (first start of a fresh profile included).
    pub launch_timeout: Duration,
    pub act: Option<ActSpec>,
    /// Text a timed `find` looks for (with the role it must have).
    pub find: Option<(&'static str, Role)>,
    /// The command that launches the app with its fixture.
    pub launch: fn(&Fixtures) -> Vec<String>,
}

/// Every app, in the order they are measured.
pub const APPS: [AppSpec; 5] = [
    AppSpec {
        key: "mousepad",
        bus_name: "mousepad",
        title: "Mousepad",
        ready_text: "line 0001",
        launch_timeout: Duration::from_secs(30),
        act: Some(ActSpec {
            role: Role::Textbox,
            name: None,
            op: Op::SetValue,
            with_value: true,
            label: "set_value",
        }),
        find: None,
        launch: |f| vec!["mousepad".into(), f.text_file.display().to_string()],
    },
    AppSpec {
        key: "widget-factory",
        bus_name: "gtk3-widget-factory",
        title: "",
        ready_text: "Page 1",
        launch_timeout: Duration::from_secs(30),
        act: None,
        find: None,
        launch: |_| vec!["gtk3-widget-factory".into()],
    },
    AppSpec {
        key: "calculator",
        bus_name: "gnome-calculator",
        title: "Calculator",
        ready_text: "7",
        launch_timeout: Duration::from_secs(30),
        act: Some(ActSpec {
            role: Role::Button,
            name: Some("7"),
            op: Op::Click,
            with_value: false,
            label: "click 7",
        }),
        find: None,
        launch: |_| vec!["gnome-calculator".into()],
    },
    AppSpec {
        key: "libreoffice",
        bus_name: "soffice",
        title: "LibreOffice Calc",
        ready_text: "A1",
        launch_timeout: Duration::from_secs(120),
        act: None,
        find: None,
        launch: |_| {
            ["soffice", "--calc", "--norestore", "--nologo"]
                .map(String::from)
                .to_vec()
        },
    },
    AppSpec {
        key: "chromium",
        bus_name: "chromium",
        title: "Bench page",
        ready_text: "Place order",
        launch_timeout: Duration::from_secs(60),
        act: None,
        // The link of row 8: deep in the page (document › table › row › cell › link)
        // and within the first screen of rows.
        find: Some(("Order #0008", Role::Link)),
        launch: |f| vec!["chromium".into(), format!("file://{}", f.page.display())],
    },
];

/// The apps `--apps` names (comma-separated keys), in measuring order; all of them
/// when the list is empty.
///
/// Errors: `COMPUTER_INVALID_ARGUMENT` for an unknown key (the message lists the keys).
pub fn select(keys: &[String]) -> Result<Vec<AppSpec>> {
    let wanted: Vec<String> = keys
        .iter()
        .map(|k| k.trim().to_lowercase())
        .filter(|k| !k.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(APPS.to_vec());
    }
    for k in &wanted {
        app_key(k).map_err(|m| ComputerError::new(ErrorCode::InvalidArgument, m))?;
    }
    Ok(APPS
        .iter()
        .filter(|a| wanted.iter().any(|k| k == a.key))
        .copied()
        .collect())
}

/// One `--apps` key (any case, blank allowed), as given; a clap value parser.
///
/// Errors: the message for an unknown key, listing the keys.
pub fn app_key(k: &str) -> Result<String, String> {
    let key = k.trim().to_lowercase();
    if key.is_empty() || APPS.iter().any(|a| a.key == key) {
        Ok(k.to_string())
    } else {
        Err(format!(
            "--apps: {key:?} is not a bench app; choose from {}",
            APPS.iter().map(|a| a.key).collect::<Vec<_>>().join(", ")
        ))
    }
}

/// Files the apps open, written into one temporary directory.
#[derive(Debug, Clone)]
pub struct Fixtures {
    pub text_file: PathBuf,
    pub page: PathBuf,
}

/// The 2,000-line text for mousepad: `line 0001: …` to `line 2000: …`.
pub fn text_lines() -> String {
    (1..=TEXT_LINES)
        .map(|i| format!("line {i:04}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

/// The Chromium page: a heading, an order form (text, email, number, checkbox,
/// select, textarea, submit) and a table of [`TABLE_ROWS`] rows, each with two links
/// (`Order #0001`, `Edit`).
pub fn page_html() -> String {
    let mut rows = String::new();
    for i in 1..=TABLE_ROWS {
        rows.push_str(&format!(
            "<tr><td>{i}</td><td><a href=\"#order-{i}\">Order #{i:04}</a></td>\
             <td><a href=\"#edit-{i}\">Edit</a></td><td>Status {}</td></tr>\n",
            i % 7
        ));
    }
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Bench page</title></head>\n<body>\n\
         <h1>Orders</h1>\n<form><fieldset><legend>New order</legend>\n\
         <label>Customer <input name=\"customer\"></label>\n\
         <label>Email <input type=\"email\" name=\"email\"></label>\n\
         <label>Quantity <input type=\"number\" name=\"qty\" value=\"1\"></label>\n\
         <label><input type=\"checkbox\" name=\"gift\"> Gift wrap</label>\n\
         <select name=\"ship\"><option>Standard</option><option>Express</option></select>\n\
         <textarea name=\"notes\">Notes</textarea>\n\
         <button type=\"submit\">Place order</button></fieldset></form>\n\
         <table><thead><tr><th>#</th><th>Order</th><th>Action</th><th>Status</th></tr></thead><tbody>\n\
         {rows}</tbody></table>\n</body></html>\n"
    )
}

/// LibreOffice settings that skip the Tip of the Day dialog and the first-start
/// wizard, so the measured window is the empty sheet and nothing covers it.
const LIBREOFFICE_SETTINGS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"#;

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            ComputerError::new(
                ErrorCode::Internal,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
    }
    std::fs::write(path, text).map_err(|e| {
        ComputerError::new(
            ErrorCode::Internal,
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

/// Writes the fixtures into `dir`, and LibreOffice's settings into the profile it
/// will use under `config_home` (the sandbox's `XDG_CONFIG_HOME`).
///
/// Errors: `COMPUTER_INTERNAL` when a file cannot be written.
pub fn write_fixtures(dir: &Path, config_home: &Path) -> Result<Fixtures> {
    let f = Fixtures {
        text_file: dir.join("lines.txt"),
        page: dir.join("page.html"),
    };
    write(&f.text_file, &text_lines())?;
    write(&f.page, &page_html())?;
    write(
        &config_home.join("libreoffice/4/user/registrymodifications.xcu"),
        LIBREOFFICE_SETTINGS,
    )?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_has_two_thousand_lines() {
        let t = text_lines();
        assert_eq!(t.lines().count(), 2_000);
        assert!(t.starts_with("line 0001: "));
        assert!(t.ends_with("line 2000: the quick brown fox jumps over the lazy dog\n"));
    }

    #[test]
    fn the_page_has_a_form_and_five_hundred_rows_of_links() {
        let p = page_html();
        assert_eq!(p.matches("<tr><td>").count(), 500);
        assert_eq!(p.matches("<a href=").count(), 1_000);
        assert!(p.contains("Order #0008</a>"));
        assert!(p.contains("Order #0500</a>"));
        assert_eq!(
            p.matches("Order #0008").count(),
            1,
            "the find target is unique"
        );
        assert!(p.contains("<form>") && p.contains("Place order"));
    }

    #[test]
    fn apps_filter_keeps_order_and_rejects_unknown_keys() {
        let all = select(&[]).unwrap();
        assert_eq!(all.len(), 5);
        let some = select(&["chromium".into(), " Mousepad".into()]).unwrap();
        let keys: Vec<&str> = some.iter().map(|a| a.key).collect();
        assert_eq!(keys, vec!["mousepad", "chromium"]);
        let e = select(&["notepad".into()]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.contains("widget-factory"), "{}", e.message);
    }

    #[test]
    fn fixtures_are_written() {
        let dir = std::env::temp_dir().join(format!("deskpilot-bench-test-{}", std::process::id()));
        let f = write_fixtures(&dir, &dir.join("config")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&f.text_file)
                .unwrap()
                .lines()
                .count(),
            2_000
        );
        let xcu = std::fs::read_to_string(
            dir.join("config/libreoffice/4/user/registrymodifications.xcu"),
        )
        .unwrap();
        assert!(xcu.contains("ShowTipOfTheDay"));
        assert_eq!((APPS[0].launch)(&f)[1], f.text_file.display().to_string());
        assert!((APPS[4].launch)(&f)[1].starts_with("file:///"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Smoke test of `deskpilot bench`: two runs on mousepad in its own sandbox, checked
//! for the shape of the JSON document and for figures that are real measurements.
//! No timing is asserted (the machine is shared); a missing Xvfb, mousepad or
//! python3-pyatspi fails the test.
#![cfg(all(target_os = "linux", not(deskpilot_stub)))]

use std::process::{Command, Stdio};

use serde_json::Value;

fn figure<'a>(doc: &'a Value, app: &str, metric: &str) -> &'a Value {
    doc["figures"]
        .as_array()
        .expect("figures is an array")
        .iter()
        .find(|f| f["app"] == app && f["metric"] == metric)
        .unwrap_or_else(|| panic!("no {app} {metric} figure in {doc:#}"))
}

fn positive(v: &Value, what: &str) -> f64 {
    let x = v
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"));
    assert!(x > 0.0 && x.is_finite(), "{what} = {x}");
    x
}

/// Checks median, p95 and n of a figure or peer; returns the median.
fn summary(v: &Value, n: u64, what: &str) -> f64 {
    let median = positive(&v["median"], &format!("{what} median"));
    let p95 = positive(&v["p95"], &format!("{what} p95"));
    assert!(p95 >= median, "{what}: p95 {p95} < median {median}");
    assert_eq!(v["n"], n, "{what} n");
    median
}

fn peer<'a>(f: &'a Value, name: &str) -> &'a Value {
    f["peers"]
        .as_array()
        .expect("peers is an array")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no peer {name} in {f:#}"))
}

#[test]
fn bench_json_on_mousepad_has_every_figure_and_its_peers() {
    // The bench's acts go through the host's pipeline: each is in the audit log.
    let audit_dir = tempfile::tempdir().expect("a temporary directory");
    let audit = audit_dir.path().join("audit.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_deskpilot"))
        .args(["bench", "--json", "--runs", "2", "--apps", "mousepad"])
        .env("DESKPILOT_AUDIT", &audit)
        .env_remove("DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("DESKPILOT_SANDBOX")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("deskpilot runs");
    let pid = child.id();
    let out = child.wait_with_output().expect("deskpilot finishes");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(
        out.status.success() && doc["ok"] == true,
        "bench failed: {doc:#}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("bench: mousepad:"),
        "progress goes to stderr: {stderr}"
    );
    assert_eq!(doc["runs"], 2);
    assert_eq!(doc["apps"], serde_json::json!(["mousepad"]));
    assert!(doc["build"] == "debug" || doc["build"] == "release");
    positive(&doc["total_s"], "total_s");

    let observe = figure(&doc, "mousepad", "observe_ms");
    assert_eq!(observe["unit"], "ms");
    let ours = summary(observe, 2, "observe");
    let walk = peer(observe, "pyatspi_walk");
    let theirs = summary(walk, 2, "pyatspi walk");
    let ratio = positive(&walk["ratio"], "observe ratio");
    assert!(
        (ratio - theirs / ours).abs() < 1e-6 * ratio,
        "ratio {ratio} is walk {theirs} / observe {ours}"
    );

    let tokens = figure(&doc, "mousepad", "snapshot_tokens");
    assert_eq!(tokens["unit"], "tokens");
    let snapshot = summary(tokens, 2, "snapshot tokens");
    assert!(
        snapshot <= 2_000.0,
        "the snapshot keeps its budget: {snapshot}"
    );
    let shot = peer(tokens, "screenshot");
    summary(shot, 2, "screenshot tokens");
    assert!(shot["median"].as_f64().unwrap() <= 1_600.0);
    let tsv = peer(tokens, "osworld_tsv");
    let tsv_tokens = summary(tsv, 2, "TSV tokens");
    assert!(
        tsv_tokens > 10_000.0,
        "the TSV carries the whole 2,000-line text: {tsv_tokens}"
    );

    let act = figure(&doc, "mousepad", "act_ms");
    assert_eq!(act["subject"], "set_value");
    summary(act, 2, "act");
    assert!(
        act["detail"]
            .as_str()
            .is_some_and(|d| d.contains("EditableText")),
        "{act:#}"
    );

    // The device links: a pipe and a real loopback OpenSSH link, each a paired
    // overhead over the in-process read (a difference: it may be below zero).
    let links: Vec<&Value> = doc["figures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["metric"] == "link_overhead_ms")
        .collect();
    let subjects: Vec<&str> = links.iter().filter_map(|f| f["subject"].as_str()).collect();
    assert_eq!(
        subjects,
        [
            "windows.list over pipe",
            "observe over pipe",
            "windows.list over ssh",
            "observe over ssh"
        ],
        "{links:#?}"
    );
    for f in &links {
        assert_eq!(f["n"], 2, "{f:#}");
        assert!(f["median"].as_f64().is_some_and(f64::is_finite), "{f:#}");
        assert!(
            f["detail"]
                .as_str()
                .is_some_and(|d| d.contains("through the link vs")),
            "{f:#}"
        );
    }

    // Every on-screen operable object (menus of the menu bar, the tab, the text
    // view; a pyatspi count by D-Bus path) has a line in the snapshot.
    let shown = figure(&doc, "mousepad", "interactive_shown");
    assert_eq!(summary(shown, 1, "interactive shown"), 100.0, "{shown:#}");
    let detail = shown["detail"].as_str().unwrap_or_default();
    let of: Vec<u64> = detail
        .split_whitespace()
        .take(3)
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        of.len() == 2 && of[0] == of[1] && of[0] >= 8,
        "the menu bar's six menus, the tab and the text view are counted: {detail}"
    );

    let act_tokens = figure(&doc, "mousepad", "act_tokens");
    let result_tokens = summary(act_tokens, 2, "act result tokens");
    assert!(
        result_tokens > 5.0,
        "an act result names what it did: {act_tokens:#}"
    );

    // Whole CLI processes: every command timed with its own peak memory (a few
    // MiB, not the bench's own tens).
    let cli: Vec<&Value> = doc["figures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["app"] == "mousepad" && (f["metric"] == "cli_ms" || f["metric"] == "cli_rss_mb")
        })
        .collect();
    for subject in [
        "observe --app mousepad",
        "--version",
        "apps",
        "find line 0001 --app mousepad",
        "act TEXTBOX set_value",
    ] {
        for metric in ["cli_ms", "cli_rss_mb"] {
            let f = cli
                .iter()
                .find(|f| f["subject"] == subject && f["metric"] == metric)
                .unwrap_or_else(|| panic!("no {metric} of {subject:?}: {cli:#?}"));
            summary(f, 2, metric);
        }
    }
    let version_rss = cli
        .iter()
        .find(|f| f["subject"] == "--version" && f["metric"] == "cli_rss_mb")
        .unwrap()["median"]
        .as_f64()
        .unwrap();
    assert!(
        version_rss < 20.0,
        "`--version` is a small process: {version_rss} MiB"
    );

    let mcp = figure(&doc, "mousepad", "mcp_rss_mb");
    positive(&mcp["median"], "MCP RSS");
    assert!(
        mcp["detail"].as_str().is_some_and(
            |d| d.contains("after 1000 calls") && d.contains("0 calls answered with isError")
        ),
        "{mcp:#}"
    );

    let rss = figure(&doc, "deskpilot", "peak_rss_mb");
    assert_eq!(rss["unit"], "MB");
    summary(rss, 1, "peak RSS");

    let targets = doc["targets"].as_array().expect("targets is an array");
    assert!(targets.len() >= 4, "{targets:#?}");
    for t in targets {
        assert!(t["goal"].is_string() && t["met"].is_boolean() && t["measured"].is_string());
    }

    let scratch = std::env::temp_dir().join(format!("deskpilot-bench-{pid}"));
    assert!(!scratch.exists(), "{} is left behind", scratch.display());

    // One warm-up and two counted set_value acts, each judged and audited by the
    // host under the bench's session, none refused.
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap_or_else(|e| panic!("the audit log {} was written: {e}", audit.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record a line"))
        .collect();
    let acts: Vec<&Value> = records
        .iter()
        .filter(|r| r["session"] == "bench" && r["event"] == "action")
        .collect();
    assert_eq!(acts.len(), 3, "{records:#?}");
    for a in &acts {
        assert_eq!(a["op"], "set_value", "{a:#}");
        assert_eq!(a["status"], "executed", "{a:#}");
        assert_eq!(a["app"], "mousepad", "{a:#}");
    }
    assert!(
        !records.iter().any(|r| r["event"] == "refusal"),
        "{records:#?}"
    );
}

#[test]
fn bench_rejects_an_unknown_app_and_zero_runs() {
    for args in [
        &["bench", "--json", "--apps", "notepad"][..],
        &["bench", "--json", "--runs", "0"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_deskpilot"))
            .args(args)
            .output()
            .expect("deskpilot runs");
        // Bad usage: exit 2, still one JSON document.
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert_eq!(doc["ok"], false);
        assert_eq!(doc["error"]["code"], "COMPUTER_INVALID_ARGUMENT", "{doc:#}");
    }
}

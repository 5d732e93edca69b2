//! One door (docs/ARCHITECTURE.md §7.11): no user command of the binary can cause an
//! effect on a desktop without the host's judge.
//!
//! The session's acting calls are crate-private to `deskpilot-host` (its doctests
//! prove they do not compile elsewhere). What is left is a driver held directly: its
//! effect methods take the protocol's effect parameters. So no crate above the host —
//! the binary, the MCP server, the agent loop, the tools — may build those parameters,
//! implement `Driver` (a wrapper could forward an effect), or serve a driver that is
//! not guarded. This test reads their sources and fails on any of that.

use std::path::{Path, PathBuf};

/// Parameters only an effect method of `Driver` takes.
const EFFECT_PARAMS: [&str; 5] = [
    "ActParams",
    "KeysParams",
    "PointerParams",
    "ClipboardWriteParams",
    "ActivateParams",
];

/// The crates above the host, whose sources must not reach a driver's effects.
const ABOVE_THE_HOST: [&str; 4] = [
    "deskpilot",
    "deskpilot-mcp",
    "deskpilot-agent",
    "deskpilot-tools",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of `text` without its comments (line comments only: the crates use no
/// block comments).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn nothing_above_the_host_reaches_a_drivers_effects() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut problems = Vec::new();
    let mut read = 0;
    for krate in ABOVE_THE_HOST {
        let mut files = Vec::new();
        rust_files(&crates.join(krate).join("src"), &mut files);
        assert!(!files.is_empty(), "{krate} has sources");
        for f in files {
            let text = code(&std::fs::read_to_string(&f).unwrap());
            read += 1;
            let name = f.strip_prefix(&crates).unwrap_or(&f).display().to_string();
            for p in EFFECT_PARAMS {
                if text.contains(p) {
                    problems.push(format!("{name} builds {p}"));
                }
            }
            if text.contains("impl Driver for") || text.contains("Driver for ") {
                problems.push(format!("{name} implements Driver"));
            }
            // A driver is served only wrapped in the served machine's guard.
            if text.contains("rpc::serve(") && !text.contains("Guarded::new(") {
                problems.push(format!("{name} serves a driver without Guarded"));
            }
        }
    }
    assert!(read > 50, "read only {read} files");
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The scan above is not blind: the host, which does dispatch, is caught by it.
#[test]
fn the_scan_finds_the_hosts_own_dispatch() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deskpilot-host/src");
    let mut files = Vec::new();
    rust_files(&host, &mut files);
    let found: Vec<&str> = EFFECT_PARAMS
        .iter()
        .copied()
        .filter(|p| {
            files
                .iter()
                .any(|f| code(&std::fs::read_to_string(f).unwrap()).contains(p))
        })
        .collect();
    for p in [
        "ActParams",
        "KeysParams",
        "PointerParams",
        "ClipboardWriteParams",
    ] {
        assert!(found.contains(&p), "the host builds {p}: {found:?}");
    }
}

//! Bad usage: checks of the command line alone (never the desktop, the config or any
//! state). A value that fails one of these is rejected while parsing, like an unknown
//! flag, so it exits 2 (one JSON document with `--json`) before anything runs; a
//! failure once a command runs exits 1 with its `COMPUTER_*` code.
//!
//! The functions taking `&str` are clap value parsers; [`check`] holds the rules that
//! involve several arguments.

use clap::CommandFactory;
use clap::error::ErrorKind;
use deskpilot_core::{Op, Role};
use deskpilot_host::host::Basis;

use crate::{Cli, Command};

/// The rules across arguments, checked once clap has parsed them.
///
/// Errors: a clap error of kind `ArgumentConflict` or `MissingRequiredArgument`,
/// printed and mapped to exit 2 like any other parse error.
pub fn check(cli: Cli) -> Result<Cli, clap::Error> {
    let fail = |kind: ErrorKind, msg: &str| Err(Cli::command().error(kind, msg));
    if cli.sandbox.as_deref() == Some("new") && !matches!(cli.command, Command::Mcp { .. }) {
        return fail(
            ErrorKind::ArgumentConflict,
            "--sandbox without a number starts a new sandbox only for `deskpilot mcp`; give the sandbox's display number (see `deskpilot sandbox list`)",
        );
    }
    match &cli.command {
        Command::Grant { scope, target, .. }
            if scope == "window" && target.app.is_none() && target.window.is_none() =>
        {
            fail(
                ErrorKind::MissingRequiredArgument,
                "--scope window needs --app or --window to name the window",
            )
        }
        Command::Wait {
            text: None,
            gone: None,
            role: None,
            window_title: None,
            ..
        } => fail(
            ErrorKind::MissingRequiredArgument,
            "say what to wait for: --text T, --gone T, --role R --name N, or --window-title T",
        ),
        Command::Act { ref_, op, value } => match act_usage(ref_, *op, value.as_deref()) {
            Some((kind, msg)) => fail(kind, &msg),
            None => Ok(cli),
        },
        Command::Keys {
            keys, text: false, ..
        } => match deskpilot_protocol::keys::parse_chords(keys) {
            Err(e) => fail(ErrorKind::InvalidValue, &e.message),
            Ok(_) => Ok(cli),
        },
        _ => Ok(cli),
    }
}

/// What is wrong with `act REF OP [VALUE]` before any desktop is asked (pure): a
/// malformed ref, a missing value where the op needs one, a value where it takes
/// none, a scroll direction that is not one.
fn act_usage(r: &str, op: Op, value: Option<&str>) -> Option<(ErrorKind, String)> {
    if deskpilot_host::host::pixels::is_ocr_ref(r) {
        // An OCR element (`o3`): its ops are checked by the host.
        return None;
    }
    if let Err(e) = deskpilot_core::refs::parse_ref(r) {
        return Some((
            ErrorKind::InvalidValue,
            // `e` names the text already: "\"e50x\" is not a ref; refs look like …".
            format!("{e} (or o3 for text read by OCR)"),
        ));
    }
    let needs = matches!(op, Op::SetValue | Op::Type | Op::Scroll | Op::DragTo);
    match (needs, value) {
        (true, None) => Some((
            ErrorKind::MissingRequiredArgument,
            format!(
                "{op} needs a value: {}",
                match op {
                    Op::Scroll => "up, down, left, right or into_view",
                    Op::DragTo => "the ref of the element to drop on",
                    _ => "the text",
                }
            ),
        )),
        (false, Some(v)) => Some((
            ErrorKind::UnknownArgument,
            format!("{op} takes no value, but {v:?} was given"),
        )),
        (true, Some(v))
            if op == Op::Scroll
                && !["up", "down", "left", "right", "into_view"].contains(&v.trim()) =>
        {
            Some((
                ErrorKind::InvalidValue,
                format!("scroll {v:?}: the direction is one of up, down, left, right, into_view"),
            ))
        }
        _ => None,
    }
}

/// `--role`: a role name, any case.
pub fn role(s: &str) -> Result<Role, String> {
    s.parse::<Role>().map_err(|e| e.to_string())
}

/// An op name, any case, `-` for `_`.
pub fn op(s: &str) -> Result<Op, String> {
    Op::from_name(&s.to_lowercase().replace('-', "_")).ok_or_else(|| {
        format!(
            "{s:?} is not an op; ops: {}",
            Op::ALL
                .iter()
                .map(|o| o.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// `--basis`: well-formed `rREV:X,Y,WxH@SCALE` (whether it still holds is the host's
/// check when the click runs).
pub fn basis(s: &str) -> Result<String, String> {
    Basis::parse(s)
        .map(|_| s.to_string())
        .map_err(|e| e.message)
}

/// `--session`: 1 to 40 letters, digits, `-` or `_`.
pub fn session_name(s: &str) -> Result<String, String> {
    let valid = !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(s.to_string())
    } else {
        Err("--session takes 1 to 40 letters, digits, '-' or '_' (e.g. --session agent-2)".into())
    }
}

/// `--sandbox`: a display number, `new` (what a bare `--sandbox` means; only for
/// `deskpilot mcp`, see [`check`]), or empty (none).
pub fn sandbox(s: &str) -> Result<String, String> {
    if s.is_empty() || s == "new" {
        Ok(s.to_string())
    } else if let Ok(n) = display_number(s) {
        Ok(n.to_string())
    } else if let Some(n) = std::path::Path::new(s)
        .file_name()
        .and_then(|f| f.to_str()?.strip_prefix("sandbox-")?.parse::<u32>().ok())
        .filter(|_| s.starts_with('/'))
    {
        // A process a sandbox started carries the sandbox's directory
        // (`…/sandbox-90`) in DESKPILOT_SANDBOX: that sandbox.
        Ok(n.to_string())
    } else {
        Err(format!(
            "--sandbox {s:?}: give the sandbox's display number (see `deskpilot sandbox list`); only `deskpilot mcp --sandbox` starts a new one"
        ))
    }
}

/// A display number written as X writes displays (`:90`) or bare (`90`).
pub fn display_number(s: &str) -> Result<u32, String> {
    s.strip_prefix(':')
        .unwrap_or(s)
        .parse::<u32>()
        .map_err(|_| {
            format!(
                "{s:?} is not a display number: write it :N or N (see `deskpilot sandbox list`)"
            )
        })
}

/// A count that must be at least 1 (`--max-steps`, `--runs`).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// `observe --max-tokens`: at least 50, so a snapshot can say what it cut.
pub fn max_tokens(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n < 50 => {
            Err("--max-tokens must be at least 50 so a snapshot can say what it cut".into())
        }
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// `run`'s instruction: not blank.
pub fn instruction(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        Err("say what to do, e.g. deskpilot run \"type Hello into the editor\"".into())
    } else {
        Ok(s.to_string())
    }
}

/// `--size WxH`: a screen size in pixels, each side 64–16384 (Xvfb's own limits
/// are wider; a smaller screen holds no dialog, a larger one exceeds X11's 16-bit
/// coordinates with room to spare).
pub fn screen_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("{s:?} is not a size: use WxH in pixels, like 1280x800 or 3840x2160");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if !(64..=16384).contains(&w) || !(64..=16384).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("deskpilot").chain(args.iter().copied()))
            .and_then(check)
    }

    #[test]
    fn a_sandbox_is_named_by_number_or_by_its_directory() {
        assert_eq!(sandbox("90").unwrap(), "90");
        assert_eq!(sandbox(":91").unwrap(), "91");
        assert_eq!(sandbox("/tmp/deskpilot-0/sandbox-92").unwrap(), "92");
        assert!(
            sandbox("sandbox-93").is_err(),
            "a relative path is no sandbox"
        );
        assert!(sandbox("/tmp/x/sandbox-").is_err());
        assert!(sandbox("/tmp/x/other-94").is_err());
    }

    #[test]
    fn bad_values_and_combinations_are_parse_errors() {
        for args in [
            &["find", "x", "--role", "spaceship"][..],
            &["act", "e1", "fly"],
            &["click-at", "5", "5", "--basis", "top-left-ish"],
            &[
                "click-at",
                "5",
                "5",
                "--basis",
                "r1:0,0,10x10@1",
                "--button",
                "middle",
            ],
            &["--session", "bad/name", "observe"],
            &["--sandbox", "abc", "apps"],
            &["--sandbox", "apps"],
            &["--sandbox", "::1", "apps"],
            &["act", "e391", "set_value"],
            &["act", "e391", "scroll", "sideways"],
            &["act", "zz", "click"],
            &["act", "e391", "click", "extra"],
            &["keys", "ctrl+nosuchkey"],
            &["sandbox", "start", "--display", "x"],
            &["observe", "--max-tokens", "10"],
            &["run", "  ", "--max-steps", "3"],
            &["run", "go", "--max-steps", "0"],
            &["bench", "--runs", "0"],
            &["bench", "--apps", "notepad"],
            &["wait", "--timeout-ms", "10"],
            &["grant", "--scope", "window"],
        ] {
            let e = parse(args)
                .err()
                .unwrap_or_else(|| panic!("{args:?} parsed"));
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        }
    }

    #[test]
    fn good_values_parse() {
        for args in [
            &["find", "x", "--role", "Button"][..],
            &["act", "e1", "double-click"],
            &[
                "--session",
                "agent-2",
                "--sandbox",
                "91",
                "observe",
                "--max-tokens",
                "50",
            ],
            &["mcp", "--sandbox"],
            &["--sandbox", ":333", "sandbox", "start"],
            &["sandbox", "start", "--display", ":333"],
            &["sandbox", "start", "--display", "333"],
            &["--sandbox", ":91", "sandbox", "env"],
            &["bench", "--apps", "mousepad, Calculator"],
            &["wait", "--role", "button", "--name", "OK"],
            &["grant", "--scope", "window", "--app", "mousepad"],
        ] {
            if let Err(e) = parse(args) {
                panic!("{args:?}: {e}");
            }
        }
    }

    #[test]
    fn screen_sizes_parse_and_nonsense_is_refused() {
        assert_eq!(screen_size("3840x2160"), Ok((3840, 2160)));
        assert_eq!(screen_size("800X600"), Ok((800, 600)));
        for bad in ["", "3840", "0x100", "x", "100x99999", "-1x5"] {
            assert!(screen_size(bad).is_err(), "{bad}");
        }
    }
}

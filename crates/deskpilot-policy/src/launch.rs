//! What `launch` never starts, as pure rules (docs/ARCHITECTURE.md §7).
//!
//! Two rules sit here; the third part of the launch policy, "an installed desktop
//! application's native binary", reads the file system and lives in the host
//! (`deskpilot_host::apps`), which uses [`parse_desktop_entry`] from here.
//! - [`launch_refused`]: command interpreters, terminals and tools that run other
//!   commands or change privileges are refused by name — the name called and the real
//!   executable — as a built-in rule no config removes.
//! - [`option_argument`]: arguments are files and URLs, never options, since an option
//!   can make an application run commands.

/// Programs `launch` never starts: command interpreters, terminals, and tools that
/// run other commands or change privileges. Each would let whoever chooses its
/// arguments run anything, outside every refusal. Matched on the name called and on
/// the real executable; versioned names (`python3.11`) match their family.
pub const LAUNCH_REFUSED: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "fish",
    "ksh",
    "mksh",
    "csh",
    "tcsh",
    "busybox",
    "env",
    "python",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "tclsh",
    "wish",
    "pwsh",
    "osascript",
    "awk",
    "gawk",
    "mawk",
    "sed",
    "xargs",
    "nohup",
    "setsid",
    "timeout",
    "nice",
    "ionice",
    "stdbuf",
    "chroot",
    "unshare",
    "nsenter",
    "script",
    "expect",
    "ssh",
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "systemd-run",
    "flatpak-spawn",
    "gdb",
    "strace",
    "ltrace",
    "xterm",
    "uxterm",
    "gnome-terminal",
    "gnome-terminal-server",
    "konsole",
    "xfce4-terminal",
    "lxterminal",
    "mate-terminal",
    "terminator",
    "tilix",
    "alacritty",
    "kitty",
    "urxvt",
    "rxvt",
    "st",
    "qterminal",
    "x-terminal-emulator",
    "foot",
    "wezterm",
    "deskpilot",
];

/// Whether `name` (a file name) is on [`LAUNCH_REFUSED`], exactly or as a versioned
/// member of a family (`python3`, `python3.11`, `perl5.36`); ASCII case is ignored.
pub fn launch_refused(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    LAUNCH_REFUSED.iter().any(|r| {
        n == *r
            || n.strip_prefix(r).is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
            })
    })
}

/// The first argument after the program that is an option (starts with `-`), which
/// `launch` refuses: it takes files and URLs only.
pub fn option_argument(argv: &[String]) -> Option<&str> {
    argv.iter()
        .skip(1)
        .find(|a| a.starts_with('-'))
        .map(String::as_str)
}

/// The `Exec` program, `TryExec` value and `Name` of one `.desktop` entry's text
/// (freedesktop.org Desktop Entry Specification 1.5, group `[Desktop Entry]` only),
/// if it is a launchable application: `Type=Application`, not `Hidden=true`, not
/// `Terminal=true`. `None` otherwise.
pub fn parse_desktop_entry(text: &str) -> Option<(String, Option<String>, String)> {
    let mut in_main = false;
    let (mut kind, mut exec, mut try_exec, mut name) = (None, None, None, None);
    let (mut hidden, mut terminal) = (false, false);
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_main = line == "[Desktop Entry]";
            continue;
        }
        if !in_main {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k.trim() {
            "Type" => kind = Some(v.trim().to_string()),
            "Exec" => exec = Some(v.trim().to_string()),
            "TryExec" => try_exec = Some(v.trim().to_string()),
            "Name" => name = Some(v.trim().to_string()),
            "Hidden" => hidden = v.trim() == "true",
            "Terminal" => terminal = v.trim() == "true",
            _ => {}
        }
    }
    if kind.as_deref() != Some("Application") || hidden || terminal {
        return None;
    }
    // The first word of Exec, unquoted (the spec's quoting is rare in the program).
    let program = exec?
        .split_whitespace()
        .next()?
        .trim_matches('"')
        .to_string();
    Some((program, try_exec, name.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_terminals_and_privilege_tools_are_refused_by_name() {
        for name in [
            "sh",
            "bash",
            "python3",
            "python3.11",
            "perl5.36",
            "env",
            "xterm",
            "sudo",
            "node",
            "gnome-terminal",
            "BASH",
        ] {
            assert!(launch_refused(name), "{name}");
        }
        for name in [
            "mousepad",
            "gnome-calculator",
            "zenity",
            "soffice.bin",
            "chromium",
            "stellarium",
            "shotwell",
        ] {
            assert!(!launch_refused(name), "{name}");
        }
    }

    #[test]
    fn options_are_found_after_the_program_only() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(option_argument(&argv(&["mousepad", "a.txt"])), None);
        assert_eq!(
            option_argument(&argv(&["mousepad", "a.txt", "--x"])),
            Some("--x")
        );
        assert_eq!(option_argument(&argv(&["-weird-name"])), None);
    }

    #[test]
    fn an_entry_is_an_application_unless_hidden_or_a_terminal_one() {
        let e = "[Desktop Entry]\nName=Mousepad\nExec=mousepad %U\nType=Application\n[Desktop Action new]\nExec=sh -c x\n";
        assert_eq!(
            parse_desktop_entry(e),
            Some(("mousepad".into(), None, "Mousepad".into()))
        );
        assert_eq!(
            parse_desktop_entry(&e.replace("Type=Application", "Type=Link")),
            None
        );
        assert_eq!(
            parse_desktop_entry(&format!("{e}\n")).map(|x| x.0),
            Some("mousepad".into())
        );
        let term = "[Desktop Entry]\nExec=vim %F\nType=Application\nTerminal=true\n";
        assert_eq!(parse_desktop_entry(term), None);
        let hidden = "[Desktop Entry]\nExec=foo\nType=Application\nHidden=true\n";
        assert_eq!(parse_desktop_entry(hidden), None);
    }
}

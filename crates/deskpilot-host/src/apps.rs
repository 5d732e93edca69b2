//! Which programs `launch` may start: installed desktop applications only.
//!
//! A program may be launched when the system's application menu lists it: a
//! `.desktop` entry (freedesktop.org Desktop Entry Specification 1.5) of
//! `Type=Application` under `$XDG_DATA_DIRS/applications` (default
//! `/usr/local/share:/usr/share`; the user's own `~/.local/share/applications` is not
//! read, since anything that can write files could add an entry there), not
//! `Hidden`, not `Terminal=true`, whose `Exec` (or `TryExec`) program resolves to the
//! same executable file. The executable must be a native binary (ELF), never a `#!`
//! script. Arguments given with it must not be options (`-x`, `--flag`): files and
//! URLs only, so no application flag can turn it into a command runner. This is an
//! allow-list: a wrapper that runs other programs (`find -exec`, the dynamic loader,
//! `tmux`, `git -c alias.x=!…`) is not an application in the menu and cannot start.

use std::path::{Path, PathBuf};

use deskpilot_policy::launch::parse_desktop_entry;

/// An installed application as its `.desktop` entry describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesktopApp {
    /// Desktop file id (`org.gnome.Calculator`, `mousepad`).
    pub id: String,
    /// `Name=`.
    pub name: String,
    /// The executable `Exec=` starts, resolved through `PATH`, symlinks followed.
    pub executable: PathBuf,
}

/// Directories searched for `applications/*.desktop`: `$XDG_DATA_DIRS`, else
/// `/usr/local/share:/usr/share`.
pub fn data_dirs() -> Vec<PathBuf> {
    let v = std::env::var_os("XDG_DATA_DIRS").filter(|v| !v.is_empty());
    match v {
        Some(v) => std::env::split_paths(&v).collect(),
        None => vec![
            PathBuf::from("/usr/local/share"),
            PathBuf::from("/usr/share"),
        ],
    }
}

/// The file `program` runs: itself when it has a `/`, else the first executable of
/// that name on `PATH`; symlinks resolved. `None` when there is none.
pub fn resolve_program(program: &str) -> Option<PathBuf> {
    let is_exe = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                m.is_file()
            }
        })
    };
    let found = if program.contains('/') {
        Some(PathBuf::from(program)).filter(|p| is_exe(p))
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(program))
                .find(|p| is_exe(p))
        })
    }?;
    std::fs::canonicalize(found).ok()
}

/// Whether `path` is a native executable (ELF magic), not a script.
pub fn is_native_binary(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// Installed applications whose executable resolves to `executable`.
pub fn applications_running(executable: &Path) -> Vec<DesktopApp> {
    let mut out = Vec::new();
    for dir in data_dirs() {
        let Ok(entries) = std::fs::read_dir(dir.join("applications")) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "desktop") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Some((program, try_exec, name)) = parse_desktop_entry(&text) else {
                continue;
            };
            let resolved =
                resolve_program(&program).or_else(|| try_exec.as_deref().and_then(resolve_program));
            if resolved.as_deref() == Some(executable) {
                out.push(DesktopApp {
                    id: path
                        .file_stem()
                        .map(|s| s.to_string_lossy().to_string())
                        .unwrap_or_default(),
                    name,
                    executable: executable.to_path_buf(),
                });
            }
        }
    }
    out
}

/// Why a program cannot be launched (each carries a sentence for the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotLaunchable {
    /// No such program or application.
    Missing(String),
    /// It exists, but is a script or not an installed application.
    Refused(String),
}

/// Resolves `program` (a name on `PATH`, a path, or a desktop file id such as
/// `org.gnome.Calculator`) to the installed application it starts.
///
/// Errors: [`NotLaunchable::Missing`] when nothing of that name exists;
/// [`NotLaunchable::Refused`] for a script or a program no `.desktop` entry starts.
pub fn launchable(program: &str) -> Result<DesktopApp, NotLaunchable> {
    let shown = deskpilot_core::sanitize::one_line(program);
    let exe = match resolve_program(program) {
        Some(p) => p,
        None => {
            // A desktop file id names the application directly.
            let by_id = data_dirs().into_iter().find_map(|d| {
                let text = std::fs::read_to_string(
                    d.join("applications").join(format!("{program}.desktop")),
                )
                .ok()?;
                let (prog, try_exec, _) = parse_desktop_entry(&text)?;
                resolve_program(&prog).or_else(|| try_exec.as_deref().and_then(resolve_program))
            });
            by_id.ok_or_else(|| {
                NotLaunchable::Missing(format!(
                    "{shown:?} is neither a program on PATH nor an installed application; `deskpilot apps` lists what runs, your application menu what is installed"
                ))
            })?
        }
    };
    if !is_native_binary(&exe) {
        return Err(NotLaunchable::Refused(format!(
            "{shown:?} runs {}, which is a script, not an application binary; deskpilot launches installed applications only",
            exe.display()
        )));
    }
    applications_running(&exe).into_iter().next().ok_or_else(|| {
        NotLaunchable::Refused(format!(
            "{shown:?} ({}) is not an installed desktop application (no .desktop entry in {}/applications starts it); deskpilot launches only what the application menu lists",
            exe.display(),
            data_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_resolve_through_path_to_absolute_files() {
        assert!(resolve_program("sh").is_some_and(|p| p.is_absolute()));
        assert_eq!(resolve_program("no-such-program-xyz"), None);
    }

    #[test]
    fn installed_applications_launch_and_wrappers_do_not() {
        // mousepad is installed with its .desktop entry wherever these tests run.
        let m = launchable("mousepad").expect("mousepad is an installed application");
        assert!(m.executable.ends_with("mousepad"), "{m:?}");
        for wrapper in [
            "sh",
            "find",
            "env",
            "true",
            "/lib64/ld-linux-x86-64.so.2",
            "no-such-program",
        ] {
            assert!(launchable(wrapper).is_err(), "{wrapper}");
        }
        assert!(!is_native_binary(Path::new("/usr/bin/ldd"))); // a shell script
        assert!(is_native_binary(&resolve_program("ls").unwrap()));
    }
}

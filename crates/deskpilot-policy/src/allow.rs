//! Who an app is, for the allow-list and for "first use" approvals
//! (docs/ARCHITECTURE.md §7).
//!
//! The executable decides when the host measured it (`/proc/PID/exe`, which a renamed
//! link does not change); the app's accessible name, which any program can choose,
//! decides only when it is not known.

use crate::target::TargetFacts;

/// Whether an `allow_apps` entry names this target: the executable's file name when
/// known, else the app name; ASCII case is ignored.
pub fn allow_matches(entry: &str, t: &TargetFacts) -> bool {
    match &t.exe {
        Some(exe) => exe.eq_ignore_ascii_case(entry),
        None => t.app.eq_ignore_ascii_case(entry),
    }
}

/// The identity an approval of "first use of this app" is kept under: the app name
/// and its executable (`mousepad|mousepad`), so another program calling itself the
/// same cannot inherit it.
pub fn app_identity(t: &TargetFacts) -> String {
    format!("{}|{}", t.app, t.exe.as_deref().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executable_decides_when_known() {
        let mut t = TargetFacts {
            app: "Mousepad".into(),
            exe: Some("mousepad".into()),
            ..TargetFacts::default()
        };
        assert!(allow_matches("MOUSEPAD", &t));
        t.exe = Some("evil".into());
        assert!(
            !allow_matches("mousepad", &t),
            "a renamed app is not allowed"
        );
        assert_eq!(app_identity(&t), "Mousepad|evil");
        t.exe = None;
        assert!(allow_matches("mousepad", &t));
        assert_eq!(app_identity(&t), "Mousepad|");
    }
}

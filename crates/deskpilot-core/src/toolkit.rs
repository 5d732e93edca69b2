//! How an app of each toolkit is started with its accessibility tree on: the remedy
//! an error names when a window shows but its tree cannot be read.
//!
//! Owns the sentence per toolkit (pure). It never inspects a process: the toolkit
//! is the one the driver reported (`Application.ToolkitName`, or for an app with no
//! tree the one its mapped libraries name, docs/ARCHITECTURE.md §6).

/// The toolkits a remedy is known for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolkit {
    Gtk,
    Qt,
    Java,
    /// Chromium and Electron.
    Chromium,
}

impl Toolkit {
    /// The toolkit a driver's toolkit name stands for (pure, case-insensitive):
    /// `GTK`, `gail`; `Qt`; `Java`, `J2SE-access-bridge`, `ATK Wrapper`;
    /// `Chromium`, `Electron`. `None` for others (`VCL`, `Gecko`) and for no name.
    pub fn from_name(name: Option<&str>) -> Option<Toolkit> {
        let n = name?.trim().to_ascii_lowercase();
        if n.contains("gtk") || n == "gail" {
            Some(Toolkit::Gtk)
        } else if n == "qt" || n.starts_with("qt ") {
            Some(Toolkit::Qt)
        } else if n.contains("java") || n.contains("j2se") || n.contains("atk wrapper") {
            Some(Toolkit::Java)
        } else if n.contains("chromium") || n.contains("electron") || n.contains("chrome") {
            Some(Toolkit::Chromium)
        } else {
            None
        }
    }

    /// How to start an app of this toolkit so that it publishes its tree.
    pub fn remedy(self) -> &'static str {
        match self {
            Toolkit::Gtk => {
                "a GTK app publishes its tree when the accessibility bus runs before it starts \
                 (`deskpilot doctor --fix` turns it on) and NO_AT_BRIDGE is not 1 in its \
                 environment"
            }
            Toolkit::Qt => {
                "a Qt app publishes its tree only when started with QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 \
                 and QT_ACCESSIBILITY=1 in its environment (`deskpilot sandbox run` sets both)"
            }
            Toolkit::Java => {
                "a Java app publishes its tree through the ATK bridge: install the Java ATK \
                 wrapper (libatk-wrapper-java) and start it with \
                 -Djavax.accessibility.assistive_technologies=org.GNOME.Accessibility.AtkWrapper \
                 (or that line in accessibility.properties)"
            }
            Toolkit::Chromium => {
                "Chromium and Electron apps publish their tree only when started with \
                 --force-renderer-accessibility (`deskpilot sandbox run` adds it for Chromium)"
            }
        }
    }
}

/// The remedy for an app of toolkit `name` (as the driver reported it), or, for an
/// unknown toolkit, every remedy in one sentence (pure).
pub fn remedy(name: Option<&str>) -> String {
    match Toolkit::from_name(name) {
        Some(t) => t.remedy().to_string(),
        None => "GTK needs the accessibility bus running \
                 first and NO_AT_BRIDGE not 1; Qt needs QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 and \
                 QT_ACCESSIBILITY=1; Java needs the ATK bridge (the Java ATK wrapper); Chromium \
                 and Electron need --force-renderer-accessibility (`deskpilot sandbox run -- APP` \
                 does all of these)"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_toolkit_gets_its_own_remedy() {
        assert_eq!(Toolkit::from_name(Some("GTK")), Some(Toolkit::Gtk));
        assert_eq!(Toolkit::from_name(Some("Qt")), Some(Toolkit::Qt));
        assert_eq!(
            Toolkit::from_name(Some("J2SE-access-bridge")),
            Some(Toolkit::Java)
        );
        assert_eq!(
            Toolkit::from_name(Some("Chromium")),
            Some(Toolkit::Chromium)
        );
        assert_eq!(Toolkit::from_name(Some("VCL")), None);
        assert_eq!(Toolkit::from_name(None), None);
        assert!(remedy(Some("GTK")).contains("NO_AT_BRIDGE"));
        assert!(remedy(Some("Qt")).contains("QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1"));
        assert!(remedy(Some("Qt")).contains("QT_ACCESSIBILITY=1"));
        assert!(remedy(Some("Java")).contains("ATK"));
        assert!(remedy(Some("Chromium")).contains("--force-renderer-accessibility"));
        let any = remedy(None);
        for word in [
            "NO_AT_BRIDGE",
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON",
            "ATK",
            "--force-renderer-accessibility",
        ] {
            assert!(any.contains(word), "{word}: {any}");
        }
    }
}

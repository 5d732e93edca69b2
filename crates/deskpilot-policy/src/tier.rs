//! Capability tiers (docs/ARCHITECTURE.md §7.22): how much an agent may do in an
//! app, judged by what the app is and what an effect does, never by how the effect
//! is spelled.
//!
//! - `read`: observe, find, wait; no effect at all.
//! - `click`: element actions that press, pick or move (click, toggle, select,
//!   expand, scroll, focus…) and pointer gestures.
//! - `type`: also text and keys (set_value, type, clear, keys, clipboard writes).
//! - `code`: an app that runs whatever is typed into it — a terminal, by a name the
//!   list knows or because its process holds a pseudo-terminal's master end
//!   ([`crate::refusal::TargetFacts::pty_master`]). Its windows are refused unless
//!   the user granted this tier to it (`app_tiers = ["NAME=code"]`, or its older
//!   spelling `allow_terminals = ["NAME"]`), at a terminal.
//!
//! Every other app has the `type` tier unless the user lowered it
//! (`app_tiers = ["mousepad=read"]`); when entries disagree the lowest holds. A
//! grant (`code`) names the app by its executable when the host measured one, else
//! by its accessible name ([`crate::allow`]); a restriction names either.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;
use crate::allow::allow_matches;
use crate::target::{Refusal, TargetFacts};
use deskpilot_core::Op;

/// How much an agent may do in an app; ordered, so `Click < Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Read,
    Click,
    Type,
    Code,
}

impl Tier {
    /// The lowercase name (`read`, `click`, `type`, `code`).
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Click => "click",
            Tier::Type => "type",
            Tier::Code => "code",
        }
    }

    /// Parses a lowercase name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Tier> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "read" => Tier::Read,
            "click" => Tier::Click,
            "type" => Tier::Type,
            "code" => Tier::Code,
            _ => return None,
        })
    }

    /// The tier an element action needs: text into a control is `type`; every other
    /// op presses, picks or moves (`click`).
    pub fn of_op(op: Op) -> Tier {
        match op {
            Op::SetValue | Op::Type | Op::Clear => Tier::Type,
            _ => Tier::Click,
        }
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `app_tiers` entry, `NAME=TIER`, parsed: the app (matched as the allow-list
/// matches, [`allow_matches`]) and its tier. Errors name the entry and the form.
pub fn parse_entry(entry: &str) -> Result<(String, Tier), String> {
    let (name, tier) = entry
        .split_once('=')
        .ok_or_else(|| format!("{entry:?} is not NAME=TIER (TIER is read, click, type or code)"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{entry:?} names no app"));
    }
    let tier = Tier::parse(tier)
        .ok_or_else(|| format!("{entry:?}: the tier must be read, click, type or code"))?;
    Ok((name.to_string(), tier))
}

/// Whether an entry naming `name` applies to `t` for a tier `tier`: a grant
/// (`code`) names the executable when the host measured one ([`allow_matches`]), so
/// a program cannot grant itself by its name; a restriction (`read`, `click`)
/// applies to the app name or the executable, whichever the user wrote.
fn names(name: &str, tier: Tier, t: &TargetFacts) -> bool {
    allow_matches(name, t)
        || (tier < Tier::Type
            && (t.app.eq_ignore_ascii_case(name)
                || t.exe
                    .as_deref()
                    .is_some_and(|e| e.eq_ignore_ascii_case(name))))
}

/// The lowest tier below `type` that `entries` set for this app naming its
/// executable (as a grant names it, [`allow_matches`]): what shows a terminal at a
/// lower tier, which a program must not get by calling itself another app.
pub fn lowered_by_executable(entries: &[String], t: &TargetFacts) -> Option<Tier> {
    entries
        .iter()
        .filter_map(|e| parse_entry(e).ok())
        .filter(|(name, tier)| *tier < Tier::Type && allow_matches(name, t))
        .map(|(_, tier)| tier)
        .min()
}

/// The lowest tier below `type` that `entries` (`NAME=TIER`, already validated; a
/// malformed one is skipped) set for this app; `None` when none lowers it.
pub fn lowered(entries: &[String], t: &TargetFacts) -> Option<Tier> {
    entries
        .iter()
        .filter_map(|e| parse_entry(e).ok())
        .filter(|(name, tier)| *tier < Tier::Type && names(name, *tier, t))
        .map(|(_, tier)| tier)
        .min()
}

/// Whether `entries` grant this app the `code` tier (`NAME=code`, named by the
/// executable when measured).
pub fn granted_code(entries: &[String], t: &TargetFacts) -> bool {
    entries
        .iter()
        .filter_map(|e| parse_entry(e).ok())
        .any(|(name, tier)| tier == Tier::Code && names(&name, tier, t))
}

/// The most an agent may do in an app that is not a terminal: the lowest tier the
/// user set below `type`, else `type`. (A terminal is refused by
/// [`crate::refusal::Refusals::check_window`] unless granted, and then has `code`
/// unless lowered: [`crate::refusal::Refusals::tier_of`].)
pub fn granted(entries: &[String], t: &TargetFacts) -> Tier {
    lowered(entries, t).unwrap_or(Tier::Type)
}

/// Whether `toolkit` (as an app reports it) is a web engine whose developer tools
/// run code typed into them: Chromium (Chrome, Edge, every Electron app) and Gecko.
pub fn is_web_engine(toolkit: Option<&str>) -> bool {
    toolkit.is_some_and(|t| {
        let t = t.to_ascii_lowercase();
        t.contains("chromium") || t.contains("electron") || t.contains("gecko")
    })
}

/// The chord of `chords` that opens a web engine's developer tools: F12, or
/// Ctrl+Shift with I, J, C or K (Chromium's and Firefox's shortcuts; Cmd+Alt on
/// macOS maps to the same keys with Super+Alt). `None` when no chord does, or the
/// string does not parse (the driver refuses that).
pub fn opens_devtools(chords: &str) -> Option<String> {
    use deskpilot_protocol::keys::{keysym, parse_chords};
    let parsed = parse_chords(chords).ok()?;
    parsed.into_iter().find_map(|c| {
        let keys: Vec<u32> = c.keys.iter().copied().map(keysym::canonical).collect();
        let has = |a: u32, b: u32| keys.iter().any(|k| *k == a || *k == b);
        let ctrl = has(keysym::XK_CONTROL_L, keysym::XK_CONTROL_R);
        // An uppercase letter (`ctrl+U+0049`) is typed with the Shift it needs.
        let shift = has(keysym::XK_SHIFT_L, keysym::XK_SHIFT_R)
            || keys.iter().any(|k| (0x41..=0x5a).contains(k));
        let alt = has(keysym::XK_ALT_L, keysym::XK_ALT_R);
        let sup = has(keysym::XK_SUPER_L, keysym::XK_SUPER_R);
        let letter = keys
            .iter()
            .any(|k| matches!(*k, 0x49 | 0x69 | 0x4a | 0x6a | 0x43 | 0x63 | 0x4b | 0x6b));
        // F12 alone: with a modifier it is an editor's command (Shift+F12 in VS
        // Code), not the browser's toggle.
        let f12 = keys.contains(&0xffc9)
            && !ctrl
            && !alt
            && !sup
            && !has(keysym::XK_SHIFT_L, keysym::XK_SHIFT_R);
        (f12 || (ctrl && shift || sup && alt) && letter).then_some(c.text)
    })
}

/// A web engine's developer tools run what is typed into them in the page (the
/// `code` tier): the sentence of a `COMPUTER_DENYLISTED` refusal for keys `chord`
/// (`None` for an act, a pointer gesture or text) on the window `root` of an app
/// whose toolkit is `toolkit`, or `None`. Every effect on a window that
/// [`shows_devtools`] is refused but F12 alone, which closes them; a chord that
/// [`opens_devtools`] in a web engine is refused. `grantee` is the name a `code`
/// grant takes. The caller skips this for an app granted the `code` tier.
pub fn devtools_refused(
    chord: Option<&str>,
    root: &deskpilot_core::Node,
    toolkit: Option<&str>,
    grantee: &str,
) -> Option<String> {
    let grant = format!(
        "unless you grant this app the `code` tier (`deskpilot config set app_tiers {grantee}=code` at a terminal)"
    );
    if shows_devtools(root) {
        let closes = chord.is_some_and(|c| c.trim().eq_ignore_ascii_case("F12"));
        return (!closes).then(|| format!(
            "this window shows the browser's developer tools, a console that runs what is typed there as code in the page: nothing is done in it {grant}. `keys F12` closes them"
        ));
    }
    let c = chord
        .filter(|_| is_web_engine(toolkit))
        .and_then(opens_devtools)?;
    Some(format!(
        "{:?} opens the browser's developer tools, a console that runs what is typed there as code in the page; refused {grant}",
        deskpilot_core::sanitize::one_line(&c)
    ))
}

/// Whether the window `root` shows a web engine's developer tools: a document
/// named "DevTools" (docked) or "DevTools - …" (its own window), or a window so
/// titled. A page titled so is refused too, which only ever refuses more.
pub fn shows_devtools(root: &deskpilot_core::Node) -> bool {
    // Chromium's "DevTools" (docked document, or "DevTools - URL" window) and
    // Firefox's "Developer Tools — URL" window.
    let devtools = |name: &str| {
        let n = crate::irreversible::fold(name);
        n == "devtools"
            || n.starts_with("devtools - ")
            || n == "developer tools"
            || n.starts_with("developer tools ")
    };
    devtools(&root.name)
        || root
            .walk()
            .any(|n| n.role == deskpilot_core::Role::Document && devtools(&n.name))
}

/// `COMPUTER_SCOPE_VIOLATION` when an effect needing `needed` goes beyond the
/// app's tier `has`; `None` when it is within.
pub fn check(app: &str, has: Tier, needed: Tier, what: &str) -> Option<Refusal> {
    (needed > has).then(|| Refusal {
        code: ErrorCode::ScopeViolation,
        reason: format!(
            "{app:?} has the `{has}` tier, and {what} needs `{needed}`: {}. The user can raise it with `deskpilot config set app_tiers {app}={needed}` at a terminal",
            match has {
                Tier::Read => "only observe, find, read and wait are allowed there",
                Tier::Click => "only clicks, selections and pointer gestures are allowed there, no text or keys",
                Tier::Type | Tier::Code => "it is not allowed there",
            },
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str) -> TargetFacts {
        TargetFacts {
            app: name.into(),
            exe: Some(name.into()),
            ..TargetFacts::default()
        }
    }

    #[test]
    fn tiers_are_ordered_and_parsed() {
        assert!(Tier::Read < Tier::Click && Tier::Click < Tier::Type && Tier::Type < Tier::Code);
        for t in [Tier::Read, Tier::Click, Tier::Type, Tier::Code] {
            assert_eq!(Tier::parse(t.as_str()), Some(t));
        }
        assert_eq!(Tier::parse(" CLICK "), Some(Tier::Click));
        assert_eq!(Tier::parse("write"), None);
        assert_eq!(Tier::of_op(Op::Click), Tier::Click);
        assert_eq!(Tier::of_op(Op::Toggle), Tier::Click);
        assert_eq!(Tier::of_op(Op::SetValue), Tier::Type);
        assert_eq!(Tier::of_op(Op::Type), Tier::Type);
        assert_eq!(Tier::of_op(Op::Clear), Tier::Type);
    }

    #[test]
    fn grants_name_the_executable_and_the_lowest_restriction_wins() {
        assert_eq!(
            parse_entry("mousepad = click"),
            Ok(("mousepad".into(), Tier::Click))
        );
        assert!(parse_entry("mousepad").is_err());
        assert!(parse_entry("=read").is_err());
        assert!(parse_entry("mousepad=write").is_err());
        let entries = vec![
            "Mousepad=read".to_string(),
            "gedit=click".into(),
            "mousepad=click".into(),
        ];
        // The lowest wins: a restriction is never undone by another entry.
        assert_eq!(granted(&entries, &app("mousepad")), Tier::Read);
        assert_eq!(granted(&entries, &app("gedit")), Tier::Click);
        assert_eq!(granted(&entries, &app("zenity")), Tier::Type);
        // A restriction names the app or the executable: LibreOffice's app is
        // "soffice", its executable `soffice.bin`.
        let mut office = app("soffice");
        office.exe = Some("soffice.bin".into());
        assert_eq!(granted(&["soffice=read".into()], &office), Tier::Read);
        assert_eq!(granted(&["soffice.bin=read".into()], &office), Tier::Read);
        // A grant names the executable: a program calling itself "xterm" is not.
        let mut fake = app("xterm");
        fake.exe = Some("evil".into());
        assert!(!granted_code(&["xterm=code".into()], &fake));
        assert!(granted_code(&["evil=code".into()], &fake));
    }

    #[test]
    fn developer_tools_are_known_by_their_keys_and_their_document() {
        assert!(is_web_engine(Some("Chromium")) && is_web_engine(Some("Gecko")));
        assert!(!is_web_engine(Some("GTK")) && !is_web_engine(None));
        for c in [
            "F12",
            "ctrl+shift+j",
            "ctrl+shift+I",
            "shift+ctrl+c",
            "ctrl+shift+k",
            "super+alt+i",
            "Tab F12",
        ] {
            assert!(opens_devtools(c).is_some(), "{c}");
        }
        // An uppercase letter is typed with its Shift.
        assert!(opens_devtools("ctrl+U+0049").is_some());
        assert!(opens_devtools("ctrl+0x4a").is_some());
        for c in [
            "ctrl+j",
            "ctrl+shift+t",
            "F11",
            "i",
            "shift+i",
            "shift+F12",
            "ctrl+F12",
        ] {
            assert!(opens_devtools(c).is_none(), "{c}");
        }
        let mut root =
            deskpilot_core::Node::new("w", deskpilot_core::Role::Window, "Page - Chromium");
        root.children.push(deskpilot_core::Node::new(
            "d",
            deskpilot_core::Role::Document,
            "Page",
        ));
        assert!(!shows_devtools(&root));
        root.children.push(deskpilot_core::Node::new(
            "t",
            deskpilot_core::Role::Document,
            "DevTools",
        ));
        assert!(shows_devtools(&root));
        let undocked =
            deskpilot_core::Node::new("w", deskpilot_core::Role::Window, "DevTools - example.com/");
        assert!(shows_devtools(&undocked));
        let firefox = deskpilot_core::Node::new(
            "w",
            deskpilot_core::Role::Window,
            "Developer Tools \u{2014} Shop \u{2014} http://x/",
        );
        assert!(shows_devtools(&firefox));
    }

    #[test]
    fn an_effect_beyond_the_tier_is_refused() {
        assert!(check("m", Tier::Type, Tier::Type, "typing").is_none());
        assert!(check("m", Tier::Type, Tier::Click, "a click").is_none());
        let r = check("m", Tier::Click, Tier::Type, "typing").unwrap();
        assert_eq!(r.code, ErrorCode::ScopeViolation);
        assert!(r.reason.contains("app_tiers m=type"), "{}", r.reason);
        let r = check("m", Tier::Read, Tier::Click, "a click").unwrap();
        assert!(r.reason.contains("only observe"), "{}", r.reason);
    }
}

//! Refusals: windows deskpilot never touches, each with its own `COMPUTER_*` code
//! (docs/ARCHITECTURE.md §7).
//!
//! Order of checks (the first that applies is reported): self-target
//! (`COMPUTER_SELF_TARGET`), elevated target (`COMPUTER_TARGET_ELEVATED`), built-in
//! credential deny-list (`COMPUTER_DENYLISTED`, cannot be removed), the user's deny-list
//! (`COMPUTER_DENYLISTED`), and — for input and capture, not for listing — a focused
//! password field (`COMPUTER_SECURE_INPUT`). Refused windows are still listed, with
//! their reason; they are never silently dropped.

use serde::{Deserialize, Serialize};

pub use crate::target::{Refusal, TargetFacts};

use crate::ErrorCode;
use crate::irreversible::fold;

/// Facts about deskpilot itself, measured by the host at start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfFacts {
    /// deskpilot's own pid and its ancestors' (the client that runs it: a terminal,
    /// an MCP client).
    pub pids: Vec<u32>,
    /// Our uid.
    pub uid: u32,
    /// Extra app names the user marked as "self" (their MCP client's windows).
    pub names: Vec<String>,
}

/// The built-in credential deny-list: keyring and polkit prompts, pinentry,
/// ssh-askpass, password managers. Matched case-insensitively as a substring of the
/// app name or executable. The user cannot remove entries (docs/ARCHITECTURE.md §7).
pub const BUILTIN_DENYLIST: &[&str] = &[
    "gcr-prompter",
    "gnome-keyring",
    "kwalletd",
    "kwalletmanager",
    "kwallet",
    "ksecretd",
    "polkit",
    "pkexec",
    "lxpolkit",
    "pinentry",
    "ssh-askpass",
    "ksshaskpass",
    "seahorse",
    "keepassxc",
    "keepass",
    "bitwarden",
    "1password",
    // 1Password's Android package, `com.onepassword.android`.
    "onepassword",
    "enpass",
    "lastpass",
    "gnome-passwords",
    "secrets",
];

/// Title fragments of authentication dialogs, refused whatever app shows them, in
/// English and in Chinese (polkit's, gnome-keyring's and pinentry's own
/// translations). Matched on folded titles ([`crate::irreversible::fold`]), so a
/// zero-width space or a look-alike letter does not hide one.
pub const BUILTIN_TITLE_DENYLIST: &[&str] = &[
    "authentication required",
    "unlock keyring",
    "unlock login keyring",
    "enter passphrase",
    "authenticate",
    "需要认证",
    "需要授权",
    "身份验证",
    "解锁密钥环",
    "解锁登录密钥环",
    "输入密码短语",
    "需要驗證",
];

/// Terminal emulators, refused by default: typing into one runs commands as the
/// user, outside every rule here (editing the config, approving its own actions).
/// Matched against the app name and the executable: equal, or for names of six
/// characters or more, contained (`gnome-terminal-server`). The user may allow one
/// by name (`allow_terminals`). A process holding a pty's master end is a terminal
/// whatever its name ([`TargetFacts::pty_master`]).
pub const TERMINAL_APPS: &[&str] = &[
    "xterm",
    "uxterm",
    "gnome-terminal",
    "gnome-console",
    "kgx",
    "ptyxis",
    "konsole",
    "yakuake",
    "xfce4-terminal",
    "lxterminal",
    "mate-terminal",
    "qterminal",
    "deepin-terminal",
    "alacritty",
    "kitty",
    "tilix",
    "terminator",
    "terminology",
    "wezterm",
    "wezterm-gui",
    "foot",
    "urxvt",
    "rxvt",
    "st",
    "guake",
    "tilda",
    "sakura",
    "cool-retro-term",
    "blackbox",
    "contour",
    "termite",
    "eterm",
    "mlterm",
    "roxterm",
    "ghostty",
    "st-256color",
    // Android (`--device adb`): an app is named by its package, `com.termux`.
    "termux",
];

/// Whether `name` (an app name or executable) is one of [`TERMINAL_APPS`].
pub fn is_terminal(name: &str) -> bool {
    let n = name.to_lowercase();
    !n.is_empty()
        && TERMINAL_APPS
            .iter()
            .any(|t| n == *t || (t.len() >= 6 && n.contains(t)))
}

/// The refusal rules for one host: built-in lists plus the user's deny-list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusals {
    pub me: SelfFacts,
    /// User deny-list entries (app names or title fragments), case-insensitive.
    pub user_denylist: Vec<String>,
    /// Terminal emulators the user allowed by name (app or executable, ASCII case
    /// ignored); every other one is refused ([`TERMINAL_APPS`]).
    pub allow_terminals: Vec<String>,
    /// The user's `app_tiers` entries (`NAME=TIER`, validated by the config):
    /// `NAME=code` grants a terminal like [`Refusals::allow_terminals`]; a lower tier
    /// limits what effects an app takes ([`Refusals::tier_of`]).
    #[serde(default)]
    pub app_tiers: Vec<String>,
    /// deskpilot's own directories (config, state, runtime, audit), absolute: no
    /// effect may write or navigate there ([`Refusals::protected_in`]).
    pub protected: Vec<String>,
    /// The user's home directory, for `~/` spellings of [`Refusals::protected`].
    pub home: Option<String>,
}

/// Whether `hay` holds the path `path` ending at a path boundary: followed by `/`,
/// the end, or a character that cannot continue a file name here (`/tmp/dp-1` is
/// in `/tmp/dp-1/x` and `"/tmp/dp-1"`, not in `/tmp/dp-1-other`).
fn names_path(hay: &str, path: &str) -> bool {
    if path.is_empty() {
        return false;
    }
    hay.match_indices(path).any(|(at, _)| {
        hay[at + path.len()..]
            .chars()
            .next()
            .is_none_or(|c| c == '/' || !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.')))
    })
}

/// `text` with the spellings a path can hide behind undone: `%XX` escapes decoded
/// (`file:///…/desk%70ilot`), `/./` and repeated `/` collapsed, and `dir/../`
/// resolved, so only one spelling of each path is left to compare.
pub fn normalize_path_text(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            decoded.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    let mut t = String::from_utf8_lossy(&decoded).into_owned();
    loop {
        let before = t.len();
        t = t.replace("/./", "/").replace("//", "/");
        if t.len() == before {
            break;
        }
    }
    // `a/b/../c` → `a/c`, one segment at a time.
    while let Some(at) = t.find("/../") {
        let start = t[..at].rfind('/').map_or(0, |p| p + 1);
        t.replace_range(start..at + 4, "");
    }
    t
}

/// File names deskpilot keeps its policy in, refused wherever they are named.
const PROTECTED_NAMES: &[&str] = &[
    "approvals.json",
    "stop.json",
    "audit.jsonl",
    "mcp-http.token",
    "config.toml.seal",
    ".config/deskpilot",
    "deskpilot/config.toml",
];

fn contains_ci(hay: &str, needle: &str) -> bool {
    !needle.is_empty() && hay.to_lowercase().contains(&needle.to_lowercase())
}

impl Refusals {
    /// Whether a window may be bound or listed as usable. `None` means permitted.
    pub fn check_window(&self, t: &TargetFacts) -> Option<Refusal> {
        if t.pid.is_some_and(|p| self.me.pids.contains(&p))
            || self
                .me
                .names
                .iter()
                .any(|n| !n.is_empty() && t.app.eq_ignore_ascii_case(n))
            || t.app.eq_ignore_ascii_case("deskpilot")
        {
            return Some(Refusal {
                code: ErrorCode::SelfTarget,
                reason: "this window belongs to deskpilot or the client running it; acting on it would bypass the host's own checks".into(),
            });
        }
        if t.uid.is_some_and(|u| u != self.me.uid) {
            return Some(Refusal {
                code: ErrorCode::TargetElevated,
                reason: format!(
                    "this window's process runs as another user (uid {}); deskpilot only touches its own user's apps",
                    t.uid.unwrap_or_default()
                ),
            });
        }
        let exe = t.exe.as_deref().unwrap_or("");
        if let Some(hit) = BUILTIN_DENYLIST
            .iter()
            .find(|d| contains_ci(&t.app, d) || contains_ci(exe, d))
        {
            return Some(Refusal {
                code: ErrorCode::Denylisted,
                reason: format!(
                    "credential and password interfaces are never touched (built-in rule {hit:?}, cannot be removed)"
                ),
            });
        }
        let title = fold(&t.title);
        if let Some(hit) = BUILTIN_TITLE_DENYLIST
            .iter()
            .find(|d| title.contains(&fold(d)))
        {
            return Some(Refusal {
                code: ErrorCode::Denylisted,
                reason: format!(
                    "authentication dialogs are never touched (built-in rule {hit:?}, cannot be removed)"
                ),
            });
        }
        // A terminal by what it is (it holds a pty's master end) or by a name the
        // list knows; the list still catches one whose process facts are unknown.
        let terminal = [t.app.as_str(), exe]
            .into_iter()
            .find(|n| is_terminal(n))
            .map(|n| format!("{n:?} is a terminal emulator"))
            .or_else(|| {
                t.pty_master.then(|| {
                    format!(
                        "{:?} holds a pseudo-terminal (its process has /dev/ptmx open), so it is a terminal whatever it is called",
                        t.app
                    )
                })
            })
            .or_else(|| {
                t.pty_unknown.then(|| {
                    format!(
                        "whether {:?} holds a pseudo-terminal cannot be read (its open files are hidden from deskpilot), so it is judged a terminal",
                        t.app
                    )
                })
            });
        if let Some(what) = terminal {
            // Granted by the executable when measured (a program cannot grant
            // itself by calling itself "kitty"), else by the app name.
            // Granted `code`, or a lower tier the user set for it on purpose (a
            // terminal to read, or to click in), naming its executable.
            let allowed = self.code_granted(t)
                || crate::tier::lowered_by_executable(&self.app_tiers, t).is_some();
            if !allowed {
                return Some(Refusal {
                    code: ErrorCode::Denylisted,
                    reason: format!(
                        "{what}: typing into one runs commands outside deskpilot's policy, so it has the `code` tier, refused unless you grant that tier to this app (`deskpilot config set app_tiers {}=code` at a terminal)",
                        t.exe.as_deref().unwrap_or(&t.app)
                    ),
                });
            }
        }
        if let Some(hit) = self
            .user_denylist
            .iter()
            .find(|d| contains_ci(&t.app, d) || title.contains(&fold(d)) || contains_ci(exe, d))
        {
            return Some(Refusal {
                code: ErrorCode::Denylisted,
                reason: format!(
                    "on your deny-list ({hit:?}); remove it from the config to allow it"
                ),
            });
        }
        None
    }

    /// Whether the user granted `t`'s app the `code` tier: `app_tiers = ["EXE=code"]`
    /// or `allow_terminals = ["EXE"]`, by the executable when measured (a program
    /// cannot grant itself by calling itself "kitty"), else by the app name.
    pub fn code_granted(&self, t: &TargetFacts) -> bool {
        self.allow_terminals
            .iter()
            .any(|a| crate::allow::allow_matches(a, t))
            || crate::tier::granted_code(&self.app_tiers, t)
    }

    /// Whether a window of `t` is a `code` surface: a terminal by name or because
    /// its process holds a pty's master end (docs/ARCHITECTURE.md §7.22).
    pub fn is_code(&self, t: &TargetFacts) -> bool {
        t.pty_master
            || t.pty_unknown
            || is_terminal(&t.app)
            || t.exe.as_deref().is_some_and(is_terminal)
    }

    /// The most an agent may do in a window of `t`: the lowest tier below `type`
    /// the user set in `app_tiers` for it, else `code` for a terminal (whose
    /// windows [`Refusals::check_window`] refuses unless the user granted it), else
    /// `type` (`NAME=code` for an app that runs nothing typed counts as `type`).
    pub fn tier_of(&self, t: &TargetFacts) -> crate::tier::Tier {
        use crate::tier::Tier;
        let lowered = crate::tier::lowered(&self.app_tiers, t);
        if self.is_code(t) {
            // A granted terminal may still be lowered.
            return lowered.unwrap_or(Tier::Code);
        }
        lowered.unwrap_or(Tier::Type)
    }

    /// The protected path `text` names, if any: one of [`Refusals::protected`] (or
    /// its `~/` form), or a policy file name ([`PROTECTED_NAMES`]). Compared folded
    /// and ASCII lower-cased, so neither case nor look-alike letters hide a path.
    pub fn protected_in(&self, text: &str) -> Option<String> {
        let hay = fold(&normalize_path_text(text));
        let mut forms: Vec<String> = Vec::new();
        for p in &self.protected {
            let p = p.trim_end_matches('/');
            if p.is_empty() {
                continue;
            }
            forms.push(p.to_owned());
            if let Some(rest) = self
                .home
                .as_deref()
                .map(|h| h.trim_end_matches('/'))
                .filter(|h| !h.is_empty())
                .and_then(|h| p.strip_prefix(h))
                .filter(|r| r.starts_with('/'))
            {
                forms.push(format!("~{rest}"));
            }
        }
        forms.extend(PROTECTED_NAMES.iter().map(|n| (*n).to_owned()));
        forms.into_iter().find(|f| names_path(&hay, &fold(f)))
    }

    /// Whether window `root` shows one of deskpilot's own places: any text in it names
    /// a protected path ([`Refusals::protected_in`]), or a file dialog's path bar
    /// shows a protected directory as two consecutive buttons (its parent's name and
    /// its own, in either order: GTK lists the deepest first), which also covers the
    /// directories inside it. Returns the path.
    pub fn window_shows_protected(&self, root: &deskpilot_core::Node) -> Option<String> {
        for n in root.walk() {
            for t in [
                Some(n.name.as_str()),
                n.value.as_deref(),
                n.description.as_deref(),
            ]
            .into_iter()
            .flatten()
            {
                if let Some(p) = self.protected_in(t) {
                    return Some(p);
                }
            }
        }
        let tails: Vec<(String, String, &String)> = self
            .protected
            .iter()
            .filter_map(|p| {
                let mut parts = p.trim_end_matches('/').rsplit('/');
                let own = parts.next()?.to_owned();
                let parent = parts.next()?.to_owned();
                (!own.is_empty() && !parent.is_empty()).then_some((parent, own, p))
            })
            .collect();
        for n in root.walk() {
            for pair in n.children.windows(2) {
                // GTK lists the path bar deepest first; other toolkits root first.
                let (a, b) = (&pair[0].name, &pair[1].name);
                if let Some((_, _, p)) = tails
                    .iter()
                    .find(|(parent, own, _)| a == parent && b == own || a == own && b == parent)
                {
                    return Some((*p).clone());
                }
            }
        }
        None
    }

    /// Whether input or capture may reach the window now: everything of
    /// [`Refusals::check_window`] plus secure input (a focused password field).
    pub fn check_input(&self, t: &TargetFacts) -> Option<Refusal> {
        self.check_window(t).or_else(|| {
            t.focused_password.then(|| Refusal {
                code: ErrorCode::SecureInput,
                reason: "input could reach a password field (it has focus, or it is the element written): no capture and no synthesized input there, the user types secrets; to go on, move the focus away without keys — `act REF focus` on another control, or press Cancel by its ref (`act REF click`)".into(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Refusals {
        Refusals {
            me: SelfFacts {
                pids: vec![100, 50],
                uid: 1000,
                names: vec!["claude".into()],
            },
            user_denylist: vec!["Banking".into()],
            allow_terminals: vec!["kitty".into()],
            app_tiers: vec![],
            protected: vec![
                "/home/u/.config/deskpilot".into(),
                "/tmp/deskpilot-1000".into(),
            ],
            home: Some("/home/u".into()),
        }
    }

    #[test]
    fn deskpilots_own_places_are_recognised_however_spelled() {
        let r = rules();
        for t in [
            "/home/u/.config/deskpilot/config.toml",
            "~/.config/deskpilot/config.toml",
            "/HOME/U/.CONFIG/DESKPILOT",
            "/tmp/deskpilot-1000/approvals.json",
            "approvals.json",
            "file:///home/u/.config/deskpilot/",
            "~/.config/./deskpilot/./config.toml",
            "/home/u/.config//deskpilot//config.toml",
            "file:///home/u/.config/desk%70ilot/config.toml",
            "/home/u/Documents/../.config/deskpilot/config.toml",
        ] {
            assert!(r.protected_in(t).is_some(), "{t}");
        }
        assert!(r.protected_in("/home/u/notes.txt").is_none());
        assert!(r.protected_in("/tmp/deskpilot-1000-other/x").is_none());
        assert!(r.protected_in("'/tmp/deskpilot-1000'").is_some());
        use deskpilot_core::{Node, Role};
        let bar = Node::new("h:1", Role::Dialog, "Save File").children(vec![
            Node::new("h:2", Role::Group, "").children(vec![
                Node::new("h:5", Role::Button, "deskpilot"),
                Node::new("h:4", Role::Button, ".config"),
                Node::new("h:3", Role::Button, "u"),
            ]),
        ]);
        assert_eq!(
            r.window_shows_protected(&bar).as_deref(),
            Some("/home/u/.config/deskpilot")
        );
        let elsewhere = Node::new("h:1", Role::Dialog, "Save File").children(vec![
            Node::new("h:3", Role::Button, "u"),
            Node::new("h:4", Role::Button, "Documents"),
        ]);
        assert!(r.window_shows_protected(&elsewhere).is_none());
    }

    #[test]
    fn wallets_hidden_titles_chinese_prompts_and_terminals_are_refused() {
        let r = rules();
        for (app, title) in [
            ("kwalletmanager5", "KDE Wallet"),
            ("polkit-agent", "Authentication\u{200b} Required"),
            ("x", "Authentic\u{430}tion Required"),
            ("x", "需要认证"),
            ("x", "解锁登录密钥环"),
            ("xfce4-terminal", "Terminal - root@host: ~"),
            ("gnome-terminal-server", "~"),
            // Android apps are named by their package.
            ("com.termux", "com.termux"),
            ("com.onepassword.android", "com.onepassword.android"),
            ("com.x8bit.bitwarden", "com.x8bit.bitwarden"),
            (
                "keepass2android.keepass2android",
                "keepass2android.keepass2android",
            ),
        ] {
            let v = r
                .check_window(&target(app, title))
                .unwrap_or_else(|| panic!("{app} {title:?}"));
            assert_eq!(v.code, ErrorCode::Denylisted);
        }
        assert!(
            r.check_window(&target("kitty", "~")).is_none(),
            "allowed by name"
        );
        assert!(
            r.check_window(&target("mousepad", "first")).is_none(),
            "st is matched whole"
        );
        assert!(is_terminal("st") && !is_terminal("gedit") && !is_terminal("stellarium"));
    }

    #[test]
    fn a_process_holding_a_pty_is_a_terminal_whatever_its_name() {
        let r = rules();
        let mut notes = target("notes", "notes");
        assert!(r.check_window(&notes).is_none());
        notes.pty_master = true;
        let v = r.check_window(&notes).expect("a pty master is a terminal");
        assert_eq!(v.code, ErrorCode::Denylisted);
        assert!(v.reason.contains("pseudo-terminal"), "{}", v.reason);
        assert!(v.reason.contains("app_tiers notes=code"), "{}", v.reason);
        // Granted by name like any terminal.
        let mut kitty = target("kitty", "~");
        kitty.pty_master = true;
        assert!(r.check_window(&kitty).is_none());
        assert_eq!(r.tier_of(&kitty), crate::tier::Tier::Code);
        // Or through its tier.
        let granted = Refusals {
            app_tiers: vec!["notes=code".into()],
            ..rules()
        };
        assert!(granted.check_window(&notes).is_none());
        assert_eq!(granted.tier_of(&notes), crate::tier::Tier::Code);
        // A granted terminal can be lowered.
        let lowered_terminal = Refusals {
            allow_terminals: vec!["kitty".into()],
            app_tiers: vec!["kitty=read".into()],
            ..rules()
        };
        assert!(lowered_terminal.check_window(&kitty).is_none());
        assert_eq!(lowered_terminal.tier_of(&kitty), crate::tier::Tier::Read);
        // A program calling itself "kitty" is not granted as kitty.
        let mut fake = kitty.clone();
        fake.exe = Some("evilterm".into());
        assert!(r.check_window(&fake).is_some());
        // A terminal lowered to `read` is shown, and takes no effect.
        let readable = Refusals {
            app_tiers: vec!["notes=read".into()],
            ..rules()
        };
        assert!(readable.check_window(&notes).is_none());
        assert_eq!(readable.tier_of(&notes), crate::tier::Tier::Read);
        // Unreadable open files: judged a terminal.
        let mut hidden = target("notes", "notes");
        hidden.pty_unknown = true;
        let v = r.check_window(&hidden).expect("unknown is a terminal");
        assert!(v.reason.contains("cannot be read"), "{}", v.reason);
        // `code` for an app that runs nothing typed is `type`; a lowered tier holds.
        let lowered = Refusals {
            app_tiers: vec!["gedit=code".into(), "mousepad=read".into()],
            ..rules()
        };
        assert_eq!(
            lowered.tier_of(&target("gedit", "x")),
            crate::tier::Tier::Type
        );
        assert_eq!(
            lowered.tier_of(&target("mousepad", "x")),
            crate::tier::Tier::Read
        );
        assert_eq!(
            lowered.tier_of(&target("zenity", "x")),
            crate::tier::Tier::Type
        );
    }

    fn target(app: &str, title: &str) -> TargetFacts {
        TargetFacts {
            app: app.into(),
            title: title.into(),
            pid: Some(4242),
            uid: Some(1000),
            exe: Some(app.into()),
            focused_password: false,
            pty_master: false,
            pty_unknown: false,
            toolkit: None,
        }
    }

    #[test]
    fn ordinary_windows_are_permitted() {
        assert_eq!(
            rules().check_window(&target("mousepad", "Untitled 1")),
            None
        );
        assert_eq!(rules().check_input(&target("mousepad", "Untitled 1")), None);
    }

    #[test]
    fn each_rule_has_its_code() {
        let r = rules();
        let mut me = target("mousepad", "x");
        me.pid = Some(50);
        assert_eq!(r.check_window(&me).unwrap().code, ErrorCode::SelfTarget);
        assert_eq!(
            r.check_window(&target("Claude", "chat")).unwrap().code,
            ErrorCode::SelfTarget
        );
        let mut root = target("gedit", "x");
        root.uid = Some(0);
        assert_eq!(
            r.check_window(&root).unwrap().code,
            ErrorCode::TargetElevated
        );
        for app in [
            "seahorse",
            "KeePassXC",
            "pinentry-gtk-2",
            "ssh-askpass",
            "Bitwarden",
            "1Password",
        ] {
            assert_eq!(
                r.check_window(&target(app, "x")).unwrap().code,
                ErrorCode::Denylisted,
                "{app}"
            );
        }
        assert_eq!(
            r.check_window(&target("gcr", "Authentication Required"))
                .unwrap()
                .code,
            ErrorCode::Denylisted
        );
        assert_eq!(
            r.check_window(&target("firefox", "My Banking - login"))
                .unwrap()
                .code,
            ErrorCode::Denylisted
        );
        let mut pw = target("zenity", "Unlock");
        pw.focused_password = true;
        assert_eq!(
            r.check_window(&pw),
            None,
            "listing a window with a password field is fine"
        );
        assert_eq!(r.check_input(&pw).unwrap().code, ErrorCode::SecureInput);
    }

    #[test]
    fn the_builtin_list_survives_an_empty_user_list() {
        let mut r = rules();
        r.user_denylist.clear();
        assert_eq!(
            r.check_window(&target("seahorse", "Passwords"))
                .unwrap()
                .code,
            ErrorCode::Denylisted
        );
    }
}

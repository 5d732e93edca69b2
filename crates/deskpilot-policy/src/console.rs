//! Consoles without a pseudo-terminal (docs/ARCHITECTURE.md §7.22): a text surface
//! inside an ordinary app that runs what is typed into it as code — gedit's Python
//! Console, an IDE's REPL pane, a SQL shell widget, a web terminal whose rows are a
//! text field. No pty is held, so the terminal test cannot see it; what it *is*
//! shows in its text: the line the next command is typed on starts with an
//! interpreter's prompt.
//!
//! The judge reads the last line of the text (the input line of every console
//! measured); when the driver read only the head of a long text
//! ([`deskpilot_core::Node::value_length`]), any line of that head that starts
//! with a prompt no prose or code file begins a line with (`>>> `, `In [3]: `)
//! counts, since a console's history keeps its earlier prompts. Window text can
//! only make this refuse more, never less.

use deskpilot_core::{Node, Role, State};

/// The interpreter whose prompt starts `line`, or `None`. Recognised, each by
/// its shape rather than one spelling:
/// - Python's `>>> ` (and `>>>` alone); its continuation `... ` counts in
///   [`shows_console`] under a `>>> ` line;
/// - IPython/Jupyter's `In [N]: ` and `   ...: `;
/// - Ruby's `irb(main):001:0> ` and `[1] pry(main)> `;
/// - a shell's `user@host:~/dir$ `, `[user@host dir]# `, `bash-5.2$ `;
/// - PowerShell's `PS C:\Users\me> `;
/// - a lowercase word or name-version with `>`, `$`, `#` or `%` and a space:
///   `sqlite> `, `mysql> `, `julia> `, `ghci> `, `js> `, `postgres=# `.
///
/// A bare `> `, `$ ` or `# ` is not one (a quotation or a heading in a document).
pub fn prompt_of(line: &str) -> Option<&'static str> {
    let l = line.trim_end_matches(['\r', '\n']);
    if l == ">>>" || l.starts_with(">>> ") {
        return Some("Python");
    }
    if let Some(rest) = l.strip_prefix("In [")
        && let Some((n, after)) = rest.split_once("]:")
        && n.chars().all(|c| c.is_ascii_digit() || c == ' ')
        && (after.is_empty() || after.starts_with(' '))
    {
        return Some("IPython");
    }
    if shell_like(l) {
        return Some("a shell");
    }
    if l.starts_with("PS ") && l.as_bytes().get(4) == Some(&b':') && l.contains("> ") {
        return Some("PowerShell");
    }
    if ruby_like(l) {
        return Some("Ruby");
    }
    word_prompt(l).then_some("an interpreter")
}

/// `user@host:path$ `, `[user@host dir]$ `: a name, an `@`, a host, then a
/// terminator and a space before anything else.
fn shell_like(l: &str) -> bool {
    let name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    let (head, bracketed) = match l.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inside, after)) if after.len() >= 2 => (inside.to_string(), after),
            _ => return false,
        },
        None => {
            let Some(i) = l.find(['$', '#', '%']) else {
                return false;
            };
            (l[..i].to_string(), &l[i..])
        }
    };
    let mut chars = bracketed.chars();
    let ends = matches!(chars.next(), Some('$' | '#' | '%')) && chars.next() == Some(' ');
    if !ends {
        return false;
    }
    let Some((user, rest)) = head.split_once('@') else {
        return false;
    };
    let host = rest.split([':', ' ']).next().unwrap_or_default();
    // `user@host:~/dir$ ` has no space before its terminator (a bracketed
    // `[user@host dir]$ ` has one, inside the brackets).
    let spaced = head.contains(char::is_whitespace);
    name(user) && name(host) && (bracketed_form(l) || !spaced)
}

/// Whether `l` starts `[…]`: a bracketed shell prompt.
fn bracketed_form(l: &str) -> bool {
    l.starts_with('[') && l.contains(']')
}

/// `irb(main):001:0> ` and `[1] pry(main)> `.
fn ruby_like(l: &str) -> bool {
    let after = l
        .strip_prefix("irb(")
        .or_else(|| {
            let (n, rest) = l.strip_prefix('[')?.split_once("] pry(")?;
            n.chars().all(|c| c.is_ascii_digit()).then_some(rest)
        })
        .and_then(|r| r.split_once(')'));
    after.is_some_and(|(_, tail)| {
        tail.split_once(' ')
            .is_some_and(|(p, _)| p.ends_with(['>', '*', '"', '\'']))
    })
}

/// A lowercase word (letters, digits, `-`, `.`, `=`; 2 to 24) ended by `>`, `$`,
/// `#` or `%` and a space: `sqlite> `, `bash-5.2$ `, `postgres=# `.
fn word_prompt(l: &str) -> bool {
    let Some(i) = l.find(['>', '$', '#', '%']) else {
        return false;
    };
    let word = &l[..i];
    let spaced = l[i + 1..].starts_with(' ') || l.len() == i + 1;
    spaced
        && (2..=24).contains(&word.len())
        && word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '='))
}

/// Prompts distinctive enough to count on any line of a text read only in part.
fn distinctive(line: &str) -> bool {
    matches!(prompt_of(line), Some("Python" | "IPython" | "Ruby"))
}

/// Whether `n` is a console: a text surface (a textbox, document or paragraph the
/// user can type in or focus) whose input line starts with an interpreter's
/// prompt. Returns the interpreter and the prompt line (cut to 40 characters).
pub fn shows_console(n: &Node) -> Option<(&'static str, String)> {
    let text_surface = matches!(n.role, Role::Textbox | Role::Document | Role::Paragraph)
        && (n.has(State::Editable) || n.has(State::Focusable));
    if !text_surface {
        return None;
    }
    let text = n.value.as_deref()?;
    let cut = |l: &str| l.chars().take(40).collect::<String>();
    if n.value_length.is_some() {
        return text
            .lines()
            .find(|l| distinctive(l))
            .and_then(|l| Some((prompt_of(l)?, cut(l))));
    }
    let last = text.rsplit('\n').next().unwrap_or(text);
    // Python's continuation prompt, under a statement begun at `>>> `.
    let continued = (last == "..." || last.starts_with("... "))
        && text.lines().any(|l| prompt_of(l) == Some("Python"));
    if continued {
        return Some(("Python", cut(last)));
    }
    prompt_of(last).map(|p| (p, cut(last)))
}

/// Whether every chord of `chords` only moves focus out of a field: Tab, F6 or
/// Escape, with Shift or Ctrl at most. Such keys are let through in a console
/// so that an agent can leave it; `None` (unparsable) is not.
pub fn only_leaves(chords: &str) -> bool {
    use deskpilot_protocol::keys::{keysym, parse_chords};
    let Ok(parsed) = parse_chords(chords) else {
        return false;
    };
    !parsed.is_empty()
        && parsed.iter().all(|c| {
            let keys: Vec<u32> = c.keys.iter().copied().map(keysym::canonical).collect();
            let modifier = |k: u32| {
                matches!(
                    k,
                    keysym::XK_SHIFT_L
                        | keysym::XK_SHIFT_R
                        | keysym::XK_CONTROL_L
                        | keysym::XK_CONTROL_R
                )
            };
            // Tab, ISO_Left_Tab, Escape, F6.
            let leaves = |k: u32| matches!(k, 0xff09 | 0xfe20 | 0xff1b | 0xffc3);
            keys.iter().any(|k| leaves(*k)) && keys.iter().all(|k| leaves(*k) || modifier(*k))
        })
}

/// What writing into `lands_on` would do when it is a console: the sentence of a
/// `COMPUTER_DENYLISTED` refusal, or `None`. `writes` says whether the effect puts
/// text or keys there (an act that sets, types or clears; keys that do more than
/// [`only_leaves`]); `grantee` is the name a `code` grant takes (the executable).
/// The caller skips this for an app granted the `code` tier.
pub fn refused(writes: bool, lands_on: Option<&Node>, grantee: &str) -> Option<String> {
    let (who, line) = lands_on.filter(|_| writes).and_then(shows_console)?;
    Some(format!(
        "this field is a console of {who} (its input line reads \"{}\"): what is typed there runs as code, so nothing is typed into it unless you grant this app the `code` tier (`deskpilot config set app_tiers {grantee}=code` at a terminal). `keys ctrl+Tab`, or `act REF focus` on another element, moves out of it",
        deskpilot_core::sanitize::one_line(&line),
    ))
}

/// Where keys land, for the console rule: the focused element `focus`; when no
/// element of window `root` shows the focus (a window that is not active shows
/// none, and the driver activates it before it types), any console the window
/// holds, since the keys may land in it.
pub fn keys_land_on<'a>(focus: Option<&'a Node>, root: &'a Node) -> Option<&'a Node> {
    focus.or_else(|| root.walk().find(|n| shows_console(n).is_some()))
}

/// Whether keys `chord`/`text` write into the element they land on: any text,
/// and any chord but one that [`only_leaves`].
pub fn keys_write(chord: Option<&str>, text: Option<&str>) -> bool {
    text.is_some() || !chord.is_some_and(only_leaves)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreter_prompts_are_known_by_their_shape() {
        for (line, who) in [
            (">>> ", "Python"),
            (">>> import os", "Python"),
            (">>>", "Python"),
            ("In [12]: x = 1", "IPython"),
            ("In [ ]: ", "IPython"),
            ("me@box:~/src$ ls", "a shell"),
            ("root@web-1:/# ", "a shell"),
            ("[me@box tmp]$ ", "a shell"),
            ("PS C:\\Users\\me> dir", "PowerShell"),
            ("irb(main):001:0> puts 1", "Ruby"),
            ("[3] pry(main)> ", "Ruby"),
            ("sqlite> .tables", "an interpreter"),
            ("postgres=# select 1;", "an interpreter"),
            ("bash-5.2$ ", "an interpreter"),
            ("julia> ", "an interpreter"),
        ] {
            assert_eq!(prompt_of(line), Some(who), "{line:?}");
        }
    }

    #[test]
    fn prose_markdown_and_code_lines_are_not_prompts() {
        for line in [
            "> a quoted line",
            "$ ",
            "# Heading",
            "C# is a language",
            "Send the report to me@example.com today",
            "bob@work # call back",
            "Contact: me@example.com # work",
            "Total: $40 # net",
            "if a > b: return",
            "Note> the meeting moved",
            "x = 3 % 2",
            "x% off today",
            "a> b",
            "In [the] beginning",
            "",
            "PS: see you",
        ] {
            assert_eq!(prompt_of(line), None, "{line:?}");
        }
    }

    fn field(value: &str) -> Node {
        let mut n = Node::new("f", Role::Textbox, "");
        n.value = Some(value.into());
        n.states.insert(State::Editable);
        n
    }

    #[test]
    fn a_console_is_judged_by_its_input_line() {
        let console =
            field("You can access the main window through 'window' :\n<Gedit.Window>\n>>> ");
        assert_eq!(shows_console(&console).map(|c| c.0), Some("Python"));
        // A prompt earlier in a complete text is a document quoting a session.
        let doc = field(">>> 1 + 1\n2\nThat is how it adds.");
        assert_eq!(shows_console(&doc), None);
        // Read in part: a distinctive prompt anywhere in the head counts.
        let mut long = field("banner\n>>> print(1)\n1\n");
        long.value_length = Some(90_000);
        assert_eq!(shows_console(&long).map(|c| c.0), Some("Python"));
        // Python's continuation prompt under a `>>> ` line; not alone.
        let more = field("banner\n>>> if 1:\n... ");
        assert_eq!(shows_console(&more).map(|c| c.0), Some("Python"));
        assert_eq!(shows_console(&field("and so on\n... ")), None);
        // A label showing a prompt is no surface to type in.
        let mut label = Node::new("l", Role::Label, "");
        label.value = Some(">>> ".into());
        assert_eq!(shows_console(&label), None);
    }

    #[test]
    fn keys_into_a_window_without_focus_may_land_in_its_console() {
        let mut doc = field("notes");
        doc.states.remove(State::Editable);
        let mut root = Node::new("w", Role::Window, "gedit");
        root.children = vec![doc, field("banner\n>>> ")];
        assert_eq!(
            keys_land_on(None, &root).map(|n| n.value.as_deref()),
            Some(Some("banner\n>>> "))
        );
        let focus = Node::new("b", Role::Button, "Close");
        assert_eq!(
            keys_land_on(Some(&focus), &root).map(|n| n.role),
            Some(Role::Button)
        );
    }

    #[test]
    fn only_focus_moves_leave_a_console() {
        for ok in ["Tab", "shift+Tab", "Escape", "F6", "ctrl+Tab Tab"] {
            assert!(only_leaves(ok), "{ok}");
        }
        for no in [
            "Return",
            "Tab+x",
            "Tab Return",
            "ctrl+j",
            "x",
            "alt+Tab",
            "",
        ] {
            assert!(!only_leaves(no), "{no}");
        }
    }
}

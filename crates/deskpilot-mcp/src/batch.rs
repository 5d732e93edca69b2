//! Where a `computer_act` batch must stop (the side-effect boundaries of
//! docs/ARCHITECTURE.md §9) and how its result text stays within the token budget.
//!
//! Pure functions over the host's results: the caller runs the actions through the
//! host one at a time and asks here, after each, whether to go on.

use deskpilot_host::ActOutcome;
use deskpilot_protocol::types::ActStatus;

/// Why a batch stops after an action that returned a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Boundary {
    /// The platform did not confirm the action (rejected, timed out, outcome
    /// unknown): what the next action would act on is uncertain.
    NotExecuted(ActStatus),
    /// The action opened or closed a window: the next refs may belong to a window
    /// the model has not seen.
    WindowsChanged { opened: usize, closed: usize },
    /// The action ran but the desktop could not be read after it: what it changed
    /// is unknown.
    Unread,
}

impl Boundary {
    /// The machine-readable reason (`StopOut::reason`).
    pub fn reason(&self) -> &'static str {
        match self {
            Boundary::NotExecuted(_) => "not_executed",
            Boundary::WindowsChanged { .. } => "windows_changed",
            Boundary::Unread => "unread",
        }
    }

    /// One sentence for the model.
    pub fn message(&self, r: &str) -> String {
        match self {
            Boundary::NotExecuted(s) => format!(
                "{r} ended {}, so the rest was not run: check the diff (or observe) before going on, and never repeat a non-idempotent action whose outcome is unknown",
                s.as_str()
            ),
            Boundary::Unread => format!(
                "{r} ran, but the desktop could not be read after it, so the rest was not run: observe before going on"
            ),
            Boundary::WindowsChanged { opened, closed } => {
                let mut what = Vec::new();
                if *opened > 0 {
                    what.push(format!("opened {opened} window{}", plural(*opened)));
                }
                if *closed > 0 {
                    what.push(format!("closed {closed} window{}", plural(*closed)));
                }
                format!(
                    "{r} {}, so the rest was not run: observe the window you want to work in, then act with its refs",
                    what.join(" and ")
                )
            }
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The boundary an action's outcome sets, if any. A failed action is a boundary too;
/// the caller handles it from the error.
pub fn boundary_after(out: &ActOutcome) -> Option<Boundary> {
    if out.result.status != ActStatus::Executed {
        return Some(Boundary::NotExecuted(out.result.status));
    }
    let opened = out.change.new_windows.len();
    let closed = out.change.closed_windows.len();
    if opened + closed > 0 {
        return Some(Boundary::WindowsChanged { opened, closed });
    }
    if out.change.unread.is_some() {
        return Some(Boundary::Unread);
    }
    None
}

/// The text of one action for the result: its whole text when it fits in `left`
/// tokens; otherwise its first line (what ran, how, the status) and a statement that
/// the diff was left out. Returns the text, its tokens, and whether the diff was
/// left out.
pub fn fit_item(text: &str, left: usize, budget: usize) -> (String, usize, bool) {
    let tokens = deskpilot_core::tokens::count(text);
    if tokens <= left {
        return (text.to_string(), tokens, false);
    }
    let head = text.lines().next().unwrap_or_default();
    let short = format!(
        "{head}\n(the diff of this action, {tokens} tokens, is not shown: the result would pass max_tokens={budget}; observe with scope=<ref> or query=<text> to read what changed)"
    );
    let n = deskpilot_core::tokens::count(&short);
    (short, n, true)
}

#[cfg(test)]
mod tests {
    use deskpilot_core::Op;
    use deskpilot_host::Change;
    use deskpilot_host::session::NewWindow;
    use deskpilot_protocol::types::{ActResult, Channel};

    use super::*;

    fn outcome(status: ActStatus, change: Change) -> ActOutcome {
        ActOutcome {
            ref_: "e5".into(),
            op: Op::Click,
            result: ActResult {
                status,
                channel: Channel::Action,
                method: "DoAction(\"click\")".into(),
                elapsed_ms: 3,
                settle: None,
                note: None,
                after: None,
            },
            change,
            elapsed_ms: 40,
            text: "ok click e5 button \"Save\" via action:DoAction(\"click\") · executed · 40 ms\n~ [e5] button".into(),
            tokens: 20,
        }
    }

    #[test]
    fn an_executed_action_without_window_changes_is_no_boundary() {
        let c = Change {
            diff: "~ [e5] textbox value=\"a\" → value=\"b\"".into(),
            ..Change::default()
        };
        assert_eq!(boundary_after(&outcome(ActStatus::Executed, c)), None);
    }

    #[test]
    fn an_unconfirmed_action_is_a_boundary() {
        for s in [
            ActStatus::Rejected,
            ActStatus::TimedOut,
            ActStatus::OutcomeUnknown,
        ] {
            let b = boundary_after(&outcome(s, Change::default())).unwrap();
            assert_eq!(b, Boundary::NotExecuted(s));
            assert_eq!(b.reason(), "not_executed");
            assert!(b.message("e5").contains(s.as_str()), "{}", b.message("e5"));
        }
    }

    #[test]
    fn an_opened_or_closed_window_is_a_boundary() {
        let c = Change {
            new_windows: vec![NewWindow {
                window_ref: "w2".into(),
                app: "mousepad".into(),
                role: deskpilot_core::Role::Dialog,
                title: "Save As".into(),
                refused: None,
            }],
            closed_windows: vec!["w3".into()],
            ..Change::default()
        };
        let b = boundary_after(&outcome(ActStatus::Executed, c)).unwrap();
        assert_eq!(
            b,
            Boundary::WindowsChanged {
                opened: 1,
                closed: 1
            }
        );
        assert_eq!(b.reason(), "windows_changed");
        assert_eq!(
            b.message("e5"),
            "e5 opened 1 window and closed 1 window, so the rest was not run: observe the window you want to work in, then act with its refs"
        );
        // A rejected action that also closed a window reports the status first.
        let c = Change {
            closed_windows: vec!["w3".into()],
            ..Change::default()
        };
        assert_eq!(
            boundary_after(&outcome(ActStatus::Rejected, c)),
            Some(Boundary::NotExecuted(ActStatus::Rejected))
        );
    }

    #[test]
    fn an_item_that_does_not_fit_keeps_its_head_and_says_so() {
        let text = format!(
            "ok set_value e5 textbox via text:SetTextContents · executed · 9 ms\n{}",
            "+ [e9] text \"line\"\n".repeat(200)
        );
        let (all, n, cut) = fit_item(&text, 10_000, 10_000);
        assert!(!cut);
        assert_eq!(all, text);
        assert_eq!(n, deskpilot_core::tokens::count(&text));
        let (short, n, cut) = fit_item(&text, 100, 2_000);
        assert!(cut);
        assert!(short.starts_with("ok set_value e5 textbox via text:SetTextContents · executed · 9 ms\n(the diff of this action, "));
        assert!(short.contains("max_tokens=2000"));
        assert!(short.contains("observe with scope=<ref> or query=<text>"));
        assert!(n < 100);
    }
}

//! Irreversible-action rules: which actions send, pay, buy, delete, submit, publish or
//! transfer — things an undo cannot take back — and so need the user's confirmation
//! (or are refused in unattended mode) (docs/ARCHITECTURE.md §7). Keywords and role
//! rules decide; nothing here guesses, and a future classifier may only add caution.
//!
//! A rule matches on the element's accessible name (sanitized, case-insensitive,
//! mnemonic underscores and ellipses removed) for activating ops (click, double
//! click, toggle, select), and on "Enter" pressed while a send-like control has focus
//! in an app that is not a chat app. Labels are matched as whole words in English and
//! as substrings in Chinese (which has no spaces).

use deskpilot_core::{Op, Role};
use serde::{Deserialize, Serialize};

/// A matched rule: which word, and what kind of consequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Irreversible {
    /// `send`, `pay`, `buy`, `delete`, `submit`, `publish`, `transfer`, `other`.
    pub kind: String,
    /// The word or phrase that matched.
    pub matched: String,
}

/// English words (whole-word match) → kind.
const EN: &[(&str, &str)] = &[
    ("send", "send"),
    ("reply", "send"),
    ("post", "publish"),
    ("publish", "publish"),
    ("tweet", "publish"),
    ("share", "publish"),
    ("pay", "pay"),
    ("payment", "pay"),
    ("checkout", "pay"),
    ("check out", "pay"),
    ("place order", "buy"),
    ("buy", "buy"),
    ("purchase", "buy"),
    ("order now", "buy"),
    ("subscribe", "buy"),
    ("delete", "delete"),
    ("remove", "delete"),
    ("erase", "delete"),
    ("discard", "delete"),
    ("don't save", "delete"),
    ("don’t save", "delete"),
    ("empty trash", "delete"),
    ("uninstall", "delete"),
    ("wipe", "delete"),
    ("submit", "submit"),
    ("confirm", "submit"),
    ("transfer", "transfer"),
    ("withdraw", "transfer"),
    ("deposit", "transfer"),
    ("wire", "transfer"),
];

/// Chinese phrases (substring match) → kind.
const ZH: &[(&str, &str)] = &[
    ("发送", "send"),
    ("回复", "send"),
    ("发布", "publish"),
    ("分享", "publish"),
    ("支付", "pay"),
    ("付款", "pay"),
    ("结算", "pay"),
    ("购买", "buy"),
    ("下单", "buy"),
    ("订阅", "buy"),
    ("删除", "delete"),
    ("移除", "delete"),
    ("清空", "delete"),
    ("卸载", "delete"),
    ("不保存", "delete"),
    ("提交", "submit"),
    ("确认", "submit"),
    ("签署", "submit"),
    ("转账", "transfer"),
    ("汇款", "transfer"),
    ("提现", "transfer"),
];

/// Apps where Enter in a message box is the normal way to write, not a final send
/// that needs its own confirmation of every line… they still confirm a "Send" button.
const CHAT_APPS: &[&str] = &[
    "slack", "discord", "element", "telegram", "signal", "teams", "pidgin", "hexchat",
];

fn normalize(label: &str) -> String {
    label
        .chars()
        .filter(|c| *c != '_' && *c != '…' && *c != '&')
        .collect::<String>()
        .replace("...", "")
        .to_lowercase()
}

fn whole_word(hay: &str, word: &str) -> bool {
    let mut start = 0;
    while let Some(pos) = hay[start..].find(word) {
        let at = start + pos;
        let before = hay[..at].chars().next_back();
        let after = hay[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if boundary(before) && boundary(after) {
            return true;
        }
        start = at + word.len();
    }
    false
}

/// Classifies an element label alone.
pub fn classify_label(label: &str) -> Option<Irreversible> {
    let l = normalize(label);
    if l.trim().is_empty() {
        return None;
    }
    for (zh, kind) in ZH {
        if l.contains(zh) {
            return Some(Irreversible {
                kind: (*kind).into(),
                matched: (*zh).into(),
            });
        }
    }
    for (en, kind) in EN {
        if whole_word(&l, en) {
            return Some(Irreversible {
                kind: (*kind).into(),
                matched: (*en).into(),
            });
        }
    }
    None
}

/// Whether an action on an element is irreversible.
///
/// `op` on an element of `role` named `name`; activating ops on buttons, links,
/// menu items, checkboxes and list items are checked against the label rules.
/// Editing ops (set_value, type, clear, focus, scroll, expand, collapse) never are:
/// they change text that can be changed back.
pub fn classify_act(op: Op, role: Role, name: &str) -> Option<Irreversible> {
    let activating = matches!(
        op,
        Op::Click | Op::DoubleClick | Op::Toggle | Op::Select | Op::RightClick
    );
    if !activating || op == Op::RightClick {
        return None;
    }
    if !(role.is_interactive()
        || matches!(role, Role::Unknown | Role::Image | Role::Label | Role::Text))
    {
        return None;
    }
    classify_label(name)
}

/// Whether a key chord is irreversible: Enter (or ctrl+Enter) while the focused
/// element's label is send-like, in an app that is not a chat app.
pub fn classify_keys(chord: &str, app: &str, focused_label: &str) -> Option<Irreversible> {
    let c = chord.to_lowercase();
    let enter = c
        .split_whitespace()
        .any(|k| matches!(k.rsplit('+').next(), Some("return" | "enter" | "kp_enter")));
    if !enter {
        return None;
    }
    let app_l = app.to_lowercase();
    if CHAT_APPS.iter().any(|a| app_l.contains(a)) {
        return None;
    }
    classify_label(focused_label).map(|m| Irreversible {
        kind: m.kind,
        matched: format!("Enter on {:?}", m.matched),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_table_in_english_and_chinese() {
        let yes = [
            ("Send", "send"),
            ("_Send", "send"),
            ("Send now", "send"),
            ("Pay $20.00", "pay"),
            ("Buy now", "buy"),
            ("Place order", "buy"),
            ("Delete", "delete"),
            ("Delete all", "delete"),
            ("Remove account…", "delete"),
            ("Don't Save", "delete"),
            ("Submit", "submit"),
            ("Publish", "publish"),
            ("Transfer funds", "transfer"),
            ("发送", "send"),
            ("立即支付", "pay"),
            ("确认购买", "buy"),
            ("删除文件", "delete"),
            ("提交订单", "submit"),
            ("发布", "publish"),
            ("转账", "transfer"),
        ];
        for (label, kind) in yes {
            let m = classify_label(label).unwrap_or_else(|| panic!("{label} should match"));
            assert_eq!(m.kind, kind, "{label}");
        }
        for label in [
            "Save",
            "Save As…",
            "Open",
            "Cancel",
            "Sender name",
            "Payload",
            "Deleted items folder view",
            "Resend? no: Settings",
            "Bold",
            "保存",
            "取消",
            "打开",
        ] {
            if label == "Resend? no: Settings" || label == "Deleted items folder view" {
                // Whole words only: "Resend"/"Deleted" are not "send"/"delete".
                assert!(classify_label(label).is_none(), "{label}");
                continue;
            }
            assert!(classify_label(label).is_none(), "{label} should not match");
        }
    }

    #[test]
    fn only_activating_ops_count() {
        assert!(classify_act(Op::Click, Role::Button, "Delete").is_some());
        assert!(classify_act(Op::Toggle, Role::Checkbox, "Delete after sending").is_some());
        assert!(classify_act(Op::SetValue, Role::Textbox, "Delete").is_none());
        assert!(classify_act(Op::Focus, Role::Button, "Send").is_none());
        assert!(classify_act(Op::Click, Role::Button, "Save").is_none());
    }

    #[test]
    fn enter_on_a_send_like_control_outside_chat_apps() {
        assert!(classify_keys("Return", "thunderbird", "Send").is_some());
        assert!(classify_keys("ctrl+Return", "evolution", "发送").is_some());
        assert!(classify_keys("Return", "slack", "Send").is_none());
        assert!(classify_keys("Tab", "thunderbird", "Send").is_none());
        assert!(classify_keys("Return", "mousepad", "Body").is_none());
    }
}

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

use deskpilot_core::{Node, Op, Role};
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization as _;
use unicode_security::confusable_detection::skeleton;

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

/// Folds a label for matching, so that no spelling hides a word from the rules:
/// NFKC (full-width and compatibility forms to plain ones), every
/// `Default_Ignorable_Code_Point` and U+FFFC dropped (`S\u{200b}end` is "Send"),
/// mnemonic underscores, `&` and ellipses dropped, lower case, then the UTS #39
/// confusable skeleton (Cyrillic `Ѕ` is Latin `S`). Keywords are folded the same way
/// ([`fold_keyword`]), so both sides meet on one skeleton.
pub fn fold(label: &str) -> String {
    let plain: String = label
        .nfkc()
        .filter(|c| !deskpilot_core::sanitize::is_invisible(*c) && !matches!(c, '_' | '…' | '&'))
        .collect::<String>()
        .replace("...", "")
        .to_lowercase();
    skeleton(&plain).collect()
}

/// A keyword of the tables folded like a label ([`fold`]).
fn fold_keyword(word: &str) -> String {
    skeleton(word).collect()
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

/// Classifies an element label alone, folded first ([`fold`]). Overwrite words
/// ("Replace" in an "already exists" dialog) are not in the tables: they depend on
/// the dialog ([`classify_element`]).
pub fn classify_label(label: &str) -> Option<Irreversible> {
    let l = fold(label);
    if l.trim().is_empty() {
        return None;
    }
    for (zh, kind) in ZH {
        if l.contains(&fold_keyword(zh)) {
            return Some(Irreversible {
                kind: (*kind).into(),
                matched: (*zh).into(),
            });
        }
    }
    for (en, kind) in EN {
        if whole_word(&l, &fold_keyword(en)) {
            return Some(Irreversible {
                kind: (*kind).into(),
                matched: (*en).into(),
            });
        }
    }
    None
}

/// Words that overwrite or discard what exists when the dialog around them says a
/// thing already exists (GTK's "Replace" in "A file named … already exists").
const OVERWRITE_EN: &[&str] = &["replace", "overwrite", "replace all"];
const OVERWRITE_ZH: &[&str] = &["替换", "覆盖"];
/// What a dialog says when a button there overwrites.
const EXISTS_EN: &[&str] = &["already exists", "overwrite", "replace it", "replacing it"];
const EXISTS_ZH: &[&str] = &["已存在", "已经存在", "覆盖"];

/// Classifies an element by its name, then its description ("Continue" described as
/// "Send the money" is a send), then, for an overwrite word ("Replace",
/// "Overwrite", "替换"), by whether the window `root` says something already exists.
pub fn classify_element(
    root: Option<&Node>,
    name: &str,
    description: Option<&str>,
) -> Option<Irreversible> {
    if let Some(m) = classify_label(name) {
        return Some(m);
    }
    if let Some(m) = description.and_then(classify_label) {
        return Some(Irreversible {
            kind: m.kind,
            matched: format!("{} (in its description)", m.matched),
        });
    }
    if let Some(m) = root.and_then(|r| confirms_irreversible(name, r)) {
        return Some(m);
    }
    let l = fold(name);
    let word = OVERWRITE_EN
        .iter()
        .find(|w| whole_word(&l, &fold_keyword(w)))
        .or_else(|| OVERWRITE_ZH.iter().find(|w| l.contains(&fold_keyword(w))))?;
    let says_exists = root?.walk().any(|n| {
        let t = fold(&n.name);
        EXISTS_EN.iter().any(|e| t.contains(&fold_keyword(e)))
            || EXISTS_ZH.iter().any(|e| t.contains(&fold_keyword(e)))
    });
    says_exists.then(|| Irreversible {
        kind: "overwrite".into(),
        matched: (*word).into(),
    })
}

/// Generic confirmations: a button with one of these labels does what its dialog
/// says ("Yes" under "Permanently delete 1,204 files?").
const CONFIRM_EN: &[&str] = &[
    "yes",
    "ok",
    "okay",
    "continue",
    "confirm",
    "proceed",
    "accept",
    "apply",
    "agree",
    "i agree",
    "i understand",
    "do it",
    "go ahead",
];
const CONFIRM_ZH: &[&str] = &["是", "确定", "確定", "继续", "繼續", "确认", "確認", "好"];
/// What a dialog says when what it confirms cannot be taken back.
const FINAL_EN: &[&str] = &[
    "cannot be undone",
    "can't be undone",
    "permanently",
    "irreversible",
    "irrevocably",
    "will be lost",
];
const FINAL_ZH: &[&str] = &["无法撤销", "無法撤銷", "不可恢复", "永久"];

/// When `name` is a generic confirmation ([`CONFIRM_EN`]: "Yes", "OK", "Continue"…),
/// what it confirms: in a dialog `root` (role dialog or alert), the first text of it (its name, labels, texts,
/// paragraphs, headings and alerts, and descriptions) that is irreversible by the
/// label rules or says it cannot be undone.
fn confirms_irreversible(name: &str, root: &Node) -> Option<Irreversible> {
    let l = fold(name);
    let generic = CONFIRM_EN.iter().any(|w| l.trim() == fold_keyword(w))
        || CONFIRM_ZH.iter().any(|w| l.trim() == fold_keyword(w));
    // Only a dialog's own question decides: in a main window, an "OK" beside some
    // "Delete" elsewhere confirms nothing of it.
    if !generic || !matches!(root.role, Role::Dialog | Role::Alert) {
        return None;
    }
    root.walk()
        .filter(|n| {
            std::ptr::eq(*n, root)
                || matches!(
                    n.role,
                    Role::Label
                        | Role::Text
                        | Role::Paragraph
                        | Role::Heading
                        | Role::Alert
                        | Role::Dialog
                        | Role::Statusbar
                )
        })
        .flat_map(|n| std::iter::once(n.name.as_str()).chain(n.description.as_deref()))
        .find_map(|text| {
            let t = fold(text);
            let final_word = FINAL_EN
                .iter()
                .find(|w| t.contains(&fold_keyword(w)))
                .or_else(|| FINAL_ZH.iter().find(|w| t.contains(&fold_keyword(w))));
            classify_label(text)
                .map(|m| m.kind)
                .or_else(|| final_word.map(|_| "other".to_owned()))
                .map(|kind| Irreversible {
                    kind,
                    matched: format!(
                        "{:?} confirms {:?}",
                        name.trim(),
                        text.chars().take(80).collect::<String>()
                    ),
                })
        })
}

/// Whether `op` activates an element the way a click does: click, double click,
/// toggle, select, and expand/collapse, which press a button that has no expand
/// action of its own (`<button aria-expanded>` "Pay now").
pub fn op_activates(op: Op) -> bool {
    matches!(
        op,
        Op::Click | Op::DoubleClick | Op::Toggle | Op::Select | Op::Expand | Op::Collapse
    )
}

/// Whether an action on an element is irreversible.
///
/// `op` ([`op_activates`]) on `el` (its role must be one a click can activate) is
/// checked against the label rules on its name and description
/// ([`classify_element`], with the window `root` for overwrite words), then on
/// what it shows besides when it is a nameless pressable control (a button, link
/// or menu item, or an unknown, image, label or text element with an action of its
/// own; not editable): its value (a label held as a value) and the names and
/// values inside it ([`SHOWN_DEPTH`] levels). Editing ops
/// (set_value, type, clear), focus, scroll and right click never are: they change
/// text that can be changed back, or open a menu.
pub fn classify_act(op: Op, el: &Node, root: Option<&Node>) -> Option<Irreversible> {
    if !op_activates(op) {
        return None;
    }
    if !(el.role.is_interactive()
        || matches!(
            el.role,
            Role::Unknown | Role::Image | Role::Label | Role::Text
        ))
    {
        return None;
    }
    // A generic confirm is judged by the question of the dialog around it: the
    // window when it is one, else a dialog inside it (a web page's modal).
    let context = root.map(|r| dialog_around(r, el).unwrap_or(r));
    if let Some(m) = classify_element(context, &el.name, el.description.as_deref()) {
        return Some(m);
    }
    // What a pressable control shows when its name is not its label: a label held
    // as its value, and the text of what it contains (a nameless button around a
    // "Send" label). Not for rows, cells, documents or fields, whose content is
    // data, not what a click does.
    // Only a control, or an element that says it can be pressed (an action of its
    // own): a nameless container under the pointer holding "Remove" somewhere is
    // page content.
    let pressable = matches!(el.role, Role::Button | Role::Link | Role::Menuitem)
        || matches!(
            el.role,
            Role::Unknown | Role::Image | Role::Label | Role::Text
        ) && !el.actions.is_empty();
    if !el.name.trim().is_empty() || !pressable || el.has(deskpilot_core::State::Editable) {
        return None;
    }
    let value = el.value.as_deref();
    let shown = value
        .map(|v| (v, "value"))
        .into_iter()
        .chain(inner_labels(el, SHOWN_DEPTH).map(|t| (t, "content")));
    for (text, place) in shown {
        if let Some(m) = classify_label(text) {
            return Some(Irreversible {
                kind: m.kind,
                matched: format!("{} (in its {place})", m.matched),
            });
        }
    }
    None
}

/// The nearest dialog or alert element of `root` that holds `el` (matched by
/// handle), `el`'s own window included; `None` when `el` is in none.
fn dialog_around<'a>(root: &'a Node, el: &Node) -> Option<&'a Node> {
    // Depth first, with the chain of ancestors of the node being visited.
    let mut stack: Vec<(&Node, usize)> = vec![(root, 0)];
    let mut chain: Vec<&Node> = Vec::new();
    while let Some((n, depth)) = stack.pop() {
        chain.truncate(depth);
        chain.push(n);
        if n.handle == el.handle {
            return chain
                .iter()
                .rev()
                .find(|a| matches!(a.role, Role::Dialog | Role::Alert))
                .copied();
        }
        stack.extend(n.children.iter().rev().map(|c| (c, depth + 1)));
    }
    None
}

/// How deep [`classify_act`] looks into a control for the text it shows: 3 levels
/// (a button's box, its label, the label's text run).
const SHOWN_DEPTH: usize = 3;

/// The names and values of the elements inside `el`, down to `depth` levels, in
/// document order (what a control shows of its content), leaving out other
/// controls and menus and what they hold.
fn inner_labels(el: &Node, depth: usize) -> Box<dyn Iterator<Item = &str> + '_> {
    if depth == 0 {
        return Box::new(std::iter::empty());
    }
    // Other controls and menus inside are not what this one shows (a menu item's
    // submenu holds its own items).
    let shown = |c: &&Node| !c.role.is_interactive() && !c.role.is_list_like();
    Box::new(el.children.iter().filter(shown).flat_map(move |c| {
        std::iter::once(c.name.as_str())
            .chain(c.value.as_deref())
            .filter(|t| !t.trim().is_empty())
            .chain(inner_labels(c, depth - 1))
    }))
}

/// Whether Enter in an app is judged by the window's buttons when the focus is a
/// field: not in chat apps, where Enter in the message box is how one writes (a
/// "Send" button there is still confirmed when clicked or pressed with space).
pub fn enter_submits_forms(app: &str) -> bool {
    let app_l = app.to_lowercase();
    !CHAT_APPS.iter().any(|a| app_l.contains(a))
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

    fn node(role: Role, name: &str) -> Node {
        Node::new(format!("h:{name}"), role, name)
    }

    #[test]
    fn a_control_is_judged_by_the_label_it_shows_not_only_its_name() {
        // A nameless button whose label is held as its value.
        let mut held = node(Role::Button, "");
        held.value = Some("Send".into());
        let m = classify_act(Op::Click, &held, None).expect("judged by its value");
        assert_eq!(m.kind, "send");
        assert!(m.matched.ends_with("(in its value)"), "{}", m.matched);
        // A nameless button around a label around a text run.
        let mut outer = node(Role::Button, "");
        let mut label = node(Role::Label, "");
        label.children.push(node(Role::Text, "Pay $20"));
        outer.children.push(label);
        let m = classify_act(Op::Click, &outer, None).expect("judged by its content");
        assert_eq!(m.kind, "pay");
        assert!(m.matched.ends_with("(in its content)"), "{}", m.matched);
        // Data is not a label: a row, a cell or a field holding the word.
        let mut row = node(Role::Listitem, "");
        row.children.push(node(Role::Text, "Delete old files"));
        assert!(classify_act(Op::Click, &row, None).is_none());
        let mut field = node(Role::Textbox, "");
        field.value = Some("Send".into());
        assert!(classify_act(Op::Click, &field, None).is_none());
        let mut editable = node(Role::Unknown, "");
        editable.value = Some("Delete".into());
        editable.states.insert(deskpilot_core::State::Editable);
        assert!(classify_act(Op::Click, &editable, None).is_none());
        // Deeper than three levels is the control's content no more.
        let mut deep = node(Role::Button, "");
        let mut a = node(Role::Unknown, "");
        let mut b = node(Role::Unknown, "");
        let mut c = node(Role::Unknown, "");
        c.children.push(node(Role::Text, "Delete"));
        b.children.push(c);
        a.children.push(b);
        deep.children.push(a);
        assert!(classify_act(Op::Click, &deep, None).is_none());
        // A named control is judged by its name alone; a menu's items are its
        // submenu's, not its label.
        let mut edit = node(Role::Menuitem, "Edit");
        edit.children.push(node(Role::Menuitem, "Delete"));
        assert!(classify_act(Op::Click, &edit, None).is_none());
        let mut nameless = node(Role::Menuitem, "");
        let mut menu = node(Role::Menu, "");
        menu.children.push(node(Role::Menuitem, "Send"));
        nameless.children.push(menu);
        assert!(classify_act(Op::Click, &nameless, None).is_none());
        // A nameless container with no action of its own is page content.
        let mut div = node(Role::Unknown, "");
        div.children.push(node(Role::Text, "Remove"));
        assert!(classify_act(Op::Click, &div, None).is_none());
        div.actions.push("click".into());
        assert!(classify_act(Op::Click, &div, None).is_some());
    }

    #[test]
    fn a_generic_yes_in_a_modal_inside_a_page_is_judged_by_the_modal() {
        let mut page = node(Role::Window, "Files - Chromium");
        let mut doc = node(Role::Document, "Files");
        let mut modal = node(Role::Dialog, "");
        modal.children = vec![
            node(
                Role::Paragraph,
                "Permanently delete 1,204 files? This cannot be undone.",
            ),
            node(Role::Button, "Yes"),
        ];
        doc.children = vec![node(Role::Button, "OK"), modal];
        page.children = vec![doc];
        let yes = page.children[0].children[1].children[1].clone();
        let m = classify_act(Op::Click, &yes, Some(&page)).expect("judged by the modal");
        assert_eq!(m.kind, "delete");
        // An OK outside the modal confirms nothing of it.
        let ok = page.children[0].children[0].clone();
        assert!(classify_act(Op::Click, &ok, Some(&page)).is_none());
    }

    #[test]
    fn only_activating_ops_count() {
        let delete = node(Role::Button, "Delete");
        assert!(classify_act(Op::Click, &delete, None).is_some());
        assert!(classify_act(Op::Expand, &delete, None).is_some());
        assert!(classify_act(Op::Collapse, &delete, None).is_some());
        assert!(
            classify_act(
                Op::Toggle,
                &node(Role::Checkbox, "Delete after sending"),
                None
            )
            .is_some()
        );
        assert!(classify_act(Op::SetValue, &node(Role::Textbox, "Delete"), None).is_none());
        assert!(classify_act(Op::Focus, &node(Role::Button, "Send"), None).is_none());
        assert!(classify_act(Op::Click, &node(Role::Button, "Save"), None).is_none());
    }

    #[test]
    fn invisible_confusable_and_full_width_spellings_are_the_word() {
        for label in [
            "S\u{200b}end",
            "\u{405}end",
            "Ｓｅｎｄ",
            "De\u{ad}lete",
            "P\u{2060}a\u{feff}y",
            "\u{420}ay",
            "删\u{200d}除",
            "SUBMIT",
        ] {
            assert!(classify_label(label).is_some(), "{label:?} should match");
        }
        assert!(classify_label("Modern").is_none());
        assert!(classify_label("Settings").is_none());
    }

    #[test]
    fn the_description_and_an_existing_file_count() {
        let mut cont = node(Role::Button, "Continue");
        cont.description = Some("Send the money".into());
        let m = classify_act(Op::Click, &cont, None).expect("described as a send");
        assert_eq!(m.kind, "send");
        let replace = node(Role::Button, "_Replace");
        let dialog = node(Role::Dialog, "Confirm").children(vec![
            node(
                Role::Label,
                "A file named \u{201c}a.txt\u{201d} already exists. Do you want to replace it?",
            ),
            replace.clone(),
        ]);
        let m = classify_act(Op::Click, &replace, Some(&dialog)).expect("an overwrite");
        assert_eq!(m.kind, "overwrite");
        let find = node(Role::Dialog, "Find and Replace").children(vec![replace.clone()]);
        assert!(classify_act(Op::Click, &replace, Some(&find)).is_none());
        let zh = node(Role::Dialog, "确认").children(vec![
            node(Role::Label, "文件已存在"),
            node(Role::Button, "替换"),
        ]);
        assert!(classify_act(Op::Click, &node(Role::Button, "替换"), Some(&zh)).is_some());
    }

    #[test]
    fn a_generic_confirm_is_judged_by_its_dialog() {
        let mut d = Node::new("d", Role::Dialog, "Empty trash");
        d.children = vec![
            Node::new(
                "q",
                Role::Label,
                "Permanently remove 1,204 files? This cannot be undone.",
            ),
            Node::new("n", Role::Button, "No"),
            Node::new("y", Role::Button, "Yes"),
        ];
        let yes = d.children[2].clone();
        let m = classify_act(Op::Click, &yes, Some(&d)).expect("Yes confirms the removal");
        assert!(m.matched.contains("confirms"), "{m:?}");
        assert!(classify_act(Op::Click, &d.children[1], Some(&d)).is_none());
        let mut only_final = d.clone();
        only_final.children[0].name = "This cannot be undone.".into();
        assert!(classify_act(Op::Click, &yes, Some(&only_final)).is_some());
        let mut harmless = d.clone();
        harmless.name = "Settings".into();
        harmless.children[0].name = "Save the settings?".into();
        assert!(classify_act(Op::Click, &yes, Some(&harmless)).is_none());
        // In a main window an OK beside a Delete elsewhere confirms nothing of it.
        let mut w = d.clone();
        w.role = Role::Window;
        assert!(classify_act(Op::Click, &yes, Some(&w)).is_none());
        let mut zh = Node::new("z", Role::Dialog, "");
        zh.children = vec![
            Node::new("q", Role::Label, "永久删除这些文件？"),
            Node::new("y", Role::Button, "确定"),
        ];
        assert!(classify_act(Op::Click, &zh.children[1], Some(&zh)).is_some());
    }
}

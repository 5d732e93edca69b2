//! Property tests over random trees: the render budget is a hard ceiling, output
//! stays one element per line with no hostile characters or password values,
//! `diff(a, a)` is empty, and refs survive changes elsewhere in the tree.

use std::collections::HashMap;

use deskpilot_core::diff::{DiffOptions, diff};
use deskpilot_core::refs::{RefRegistry, fingerprint_all};
use deskpilot_core::render::{RenderOptions, render};
use deskpilot_core::{Bounds, Node, Role, State, TableInfo, tokens};
use proptest::prelude::*;

/// A tree before handles are given out.
#[derive(Debug, Clone)]
struct Spec {
    role: Role,
    name: String,
    value: Option<String>,
    states: Vec<State>,
    zero_size: bool,
    unread: u64,
    table: bool,
    children: Vec<Spec>,
}

fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => any::<char>(),
        2 => prop::char::range('a', 'z'),
        1 => prop::sample::select(vec![
            '\n', '\r', '\t', '\u{0}', '\u{1b}', '\u{85}', '\u{2028}', '\u{2029}', '\u{202a}',
            '\u{202e}', '\u{2066}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{61c}', '\u{200b}',
            '\u{feff}', '\u{fffc}', '"', '\\', '[', ']', '…', '▸', ' ',
        ]),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just(String::new()),
        3 => "[A-Za-z][a-z ]{0,14}",
        3 => prop::collection::vec(hostile_char(), 0..24).prop_map(|v| v.into_iter().collect()),
        1 => "[a-z ]{200,400}",
    ]
}

fn states() -> impl Strategy<Value = Vec<State>> {
    prop::collection::vec(
        prop::sample::select(vec![
            State::Focused,
            State::Disabled,
            State::Checked,
            State::Selected,
            State::Expanded,
            State::Collapsed,
            State::Editable,
            State::Password,
            State::Password,
            State::Offscreen,
            State::Busy,
            State::Modal,
            State::Focusable,
        ]),
        0..3,
    )
}

fn leaf() -> impl Strategy<Value = Spec> {
    (
        prop::sample::select(Role::ALL.to_vec()),
        text(),
        prop::option::weighted(0.3, text()),
        states(),
        prop::bool::weighted(0.05),
        prop_oneof![8 => Just(0u64), 1 => 1u64..500],
        prop::bool::weighted(0.02),
    )
        .prop_map(
            |(role, name, value, states, zero_size, unread, table)| Spec {
                role,
                name,
                value,
                states,
                zero_size,
                unread,
                table,
                children: Vec::new(),
            },
        )
}

fn spec() -> impl Strategy<Value = Spec> {
    leaf().prop_recursive(6, 600, 5, |inner| {
        (leaf(), prop::collection::vec(inner, 1..9)).prop_map(|(mut s, children)| {
            s.children = children;
            s
        })
    })
}

/// A distinctive password for the password field with handle number `i`.
fn password(i: usize) -> String {
    format!("PwQz{i}xKv")
}

fn build(s: &Spec, next: &mut usize) -> Node {
    let i = *next;
    *next += 1;
    let mut n = Node::new(format!("h:{i}"), s.role, s.name.clone());
    for st in &s.states {
        n.states.insert(*st);
    }
    n.value = s.value.clone();
    if n.has(State::Password) {
        n.value = Some(password(i));
    }
    if s.zero_size {
        n.bounds = Some(Bounds::new(5, 5, 0, 0));
    }
    if s.table {
        n.table = Some(TableInfo {
            rows: 1_048_576,
            columns: 16_384,
            visible_rows: Some((0, 39)),
            visible_columns: Some((0, 10)),
            a1: i.is_multiple_of(2),
            read: None,
        });
    }
    n.children = s.children.iter().map(|c| build(c, next)).collect();
    n.child_count = n.children.len() as u64 + s.unread;
    n
}

/// A window with refs assigned the way the host does it.
fn window(s: &Spec) -> (Node, RefRegistry) {
    let mut next = 1;
    let mut root = build(s, &mut next);
    root.role = Role::Window;
    let mut reg = RefRegistry::new();
    reg.assign(&mut root);
    root.ref_ = Some("w1".to_string());
    (root, reg)
}

fn passwords(root: &Node) -> Vec<String> {
    root.walk()
        .filter(|n| n.has(State::Password))
        .filter_map(|n| n.value.clone())
        .collect()
}

/// Characters no output line may hold, listed here independently of the sanitizer:
/// carriage return and other line breaks, bidi controls, zero-width characters and
/// U+FFFC.
fn forbidden(c: char) -> bool {
    matches!(
        c,
        '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{0}' | '\u{1b}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200e}' | '\u{200f}' | '\u{61c}'
            | '\u{200b}' | '\u{feff}' | '\u{fffc}'
    )
}

/// Every line is the header, an element line, a "more" marker or the footer.
fn check_lines(text: &str, header: bool, secrets: &[String]) -> Result<(), TestCaseError> {
    for (i, line) in text.lines().enumerate() {
        prop_assert!(
            !line.chars().any(forbidden),
            "forbidden character in {line:?}"
        );
        for s in secrets {
            prop_assert!(!line.contains(s.as_str()), "password {s} in {line:?}");
        }
        if header && i == 0 {
            continue;
        }
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        prop_assert!(indent % 2 == 0, "odd indent: {line:?}");
        let element = body.starts_with("[e") || body.starts_with("[w1] ");
        prop_assert!(
            element || body.starts_with("… ") || body.starts_with('('),
            "not a snapshot line: {line:?}"
        );
    }
    Ok(())
}

fn check_diff_lines(text: &str, secrets: &[String]) -> Result<(), TestCaseError> {
    for line in text.lines() {
        prop_assert!(
            !line.chars().any(forbidden),
            "forbidden character in {line:?}"
        );
        for s in secrets {
            prop_assert!(!line.contains(s.as_str()), "password {s} in {line:?}");
        }
        prop_assert!(
            ["+ [", "+  ", "- [", "~ [", "focus: ", "("]
                .iter()
                .any(|p| line.starts_with(p)),
            "not a diff line: {line:?}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn render_never_exceeds_the_budget(
        s in spec(),
        budget in 30usize..3000,
        with_header in any::<bool>(),
        query in prop::option::weighted(0.2, "[a-z]{1,2}"),
        scope_pick in prop::option::weighted(0.2, any::<prop::sample::Index>()),
    ) {
        let (w, _) = window(&s);
        let refs: Vec<String> = w.walk().skip(1).filter_map(|n| n.ref_.clone()).collect();
        let scope = scope_pick.filter(|_| !refs.is_empty()).map(|i| i.get(&refs).clone());
        let opts = RenderOptions {
            max_tokens: budget,
            header: with_header
                .then(|| "app x pid=1 · window \"t\u{202e}\nforged\" [active]".to_string()),
            query,
            scope,
            ..RenderOptions::default()
        };
        let r = render(&w, &opts);
        prop_assert_eq!(r.tokens, tokens::count(&r.text));
        prop_assert!(r.tokens <= budget, "{} > {budget}:\n{}", r.tokens, r.text);
        check_lines(&r.text, with_header && !r.text.starts_with('('), &passwords(&w))?;
    }

    #[test]
    fn rendered_lines_are_clean(s in spec()) {
        let (w, _) = window(&s);
        let r = render(&w, &RenderOptions { max_tokens: 1_000_000, ..RenderOptions::default() });
        check_lines(&r.text, false, &passwords(&w))?;
        // One line per shown element plus markers and the footer; nothing split.
        let markers = r.text.lines().filter(|l| l.trim_start().starts_with("… ")).count();
        let footer = usize::from(r.text.lines().last().is_some_and(|l| l.starts_with('(')));
        prop_assert_eq!(r.text.lines().count(), r.shown + markers + footer);
    }

    #[test]
    fn diff_of_a_tree_with_itself_is_empty(s in spec()) {
        let (w, _) = window(&s);
        let d = diff(&w, &w, &DiffOptions::default());
        prop_assert!(d.is_empty(), "{}", d.text);
        prop_assert_eq!(d.text, "");
    }

    #[test]
    fn diff_is_bounded_and_clean(a in spec(), b in spec(), budget in 30usize..2000) {
        // Two unrelated trees through one registry: mostly adds and removes.
        let mut reg = RefRegistry::new();
        let mut next = 1;
        let mut ta = build(&a, &mut next);
        let mut tb = build(&b, &mut next);
        reg.assign(&mut ta);
        reg.assign(&mut tb);
        let d = diff(&ta, &tb, &DiffOptions { max_tokens: budget, ..DiffOptions::default() });
        prop_assert_eq!(d.tokens, tokens::count(&d.text));
        prop_assert!(d.tokens <= budget);
        let mut secrets = passwords(&ta);
        secrets.extend(passwords(&tb));
        check_diff_lines(&d.text, &secrets)?;
    }

    #[test]
    fn refs_outside_a_changed_subtree_are_kept(
        s in spec(),
        pick in any::<prop::sample::Index>(),
        renames in prop::collection::vec(text(), 1..4),
        drop_first in any::<bool>(),
        added in prop::collection::vec(leaf(), 0..4),
    ) {
        let (mut w, mut reg) = window(&s);
        let before: HashMap<String, String> = w
            .walk()
            .skip(1)
            .map(|n| (n.handle.0.clone(), n.ref_.clone().expect("assigned")))
            .collect();
        let handles: Vec<String> = w.walk().skip(1).map(|n| n.handle.0.clone()).collect();
        prop_assume!(!handles.is_empty());
        let target = pick.get(&handles).clone();

        // Mutate only the subtree under `target`.
        let mut inside = Vec::new();
        fn find<'a>(n: &'a mut Node, h: &str) -> Option<&'a mut Node> {
            if n.handle.0 == h {
                return Some(n);
            }
            n.children.iter_mut().find_map(|c| find(c, h))
        }
        let sub = find(&mut w, &target).expect("picked from the tree");
        inside.extend(sub.walk().map(|n| n.handle.0.clone()));
        let mut k = 0;
        fn rename(n: &mut Node, names: &[String], k: &mut usize) {
            n.name = names[*k % names.len()].clone();
            *k += 1;
            for c in &mut n.children {
                rename(c, names, k);
            }
        }
        rename(sub, &renames, &mut k);
        if drop_first && !sub.children.is_empty() {
            sub.children.remove(0);
        }
        let mut next = 1_000_000;
        for a in &added {
            sub.children.push(build(a, &mut next));
        }
        sub.child_count = sub.children.len() as u64;
        let highest = reg.entries().map(|e| e.ref_[1..].parse::<u64>().unwrap()).max();
        let old_entries: HashMap<String, (String, deskpilot_core::refs::Fingerprint)> = reg
            .entries()
            .map(|e| (e.ref_.clone(), (e.handle.0.clone(), e.fingerprint.clone())))
            .collect();

        reg.assign(&mut w);
        let present: Vec<String> = w.walk().map(|n| n.handle.0.clone()).collect();
        let fps = fingerprint_all(&w);
        // Another element's old ref may only go to an element whose handle is new or
        // no longer the same element, only when its old element is gone, and only on
        // an identical fingerprint.
        let check_taken = |r: &str, fp: &deskpilot_core::refs::Fingerprint| {
            let num: u64 = r[1..].parse().unwrap();
            if Some(num) <= highest {
                let (old_handle, old_fp) = &old_entries[r];
                prop_assert!(!present.contains(old_handle), "{r} taken from a live element");
                prop_assert_eq!(old_fp, fp);
            }
            Ok(())
        };
        for (n, fp) in w.walk().skip(1).zip(&fps) {
            let r = n.ref_.clone().expect("assigned");
            match before.get(&n.handle.0) {
                Some(old) if !inside.contains(&n.handle.0) => prop_assert_eq!(&r, old),
                // Inside the subtree an element that kept its handle keeps its ref when
                // it is still the same element: same role, and the same name or the
                // same place (ancestors and index).
                Some(old) => {
                    let old_fp = &old_entries[old].1;
                    let same = old_fp.role == fp.role
                        && (old_fp.name == fp.name
                            || (old_fp.ancestor_hash == fp.ancestor_hash
                                && old_fp.index_in_parent == fp.index_in_parent));
                    if same {
                        prop_assert_eq!(&r, old);
                    } else {
                        prop_assert_ne!(&r, old);
                        check_taken(&r, fp)?;
                    }
                }
                None => check_taken(&r, fp)?,
            }
        }
        let mut all: Vec<&str> = w.walk().skip(1).filter_map(|n| n.ref_.as_deref()).collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        prop_assert_eq!(all.len(), count, "duplicate refs");
    }

    #[test]
    fn recreated_elements_keep_refs_only_when_unambiguous(s in spec()) {
        let (w, mut reg) = window(&s);
        let old_refs: Vec<String> = w.walk().skip(1).filter_map(|n| n.ref_.clone()).collect();
        let fps = fingerprint_all(&w);
        // Same tree, every handle new (the application re-created its widgets).
        let mut fresh = w.clone();
        fn rehandle(n: &mut Node) {
            n.handle.0 = format!("new:{}", n.handle.0);
            n.ref_ = None;
            n.children.iter_mut().for_each(rehandle);
        }
        rehandle(&mut fresh);
        reg.assign(&mut fresh);
        let new_refs: Vec<String> = fresh.walk().skip(1).filter_map(|n| n.ref_.clone()).collect();
        let mut seen: HashMap<&deskpilot_core::refs::Fingerprint, usize> = HashMap::new();
        for f in &fps {
            *seen.entry(f).or_default() += 1;
        }
        for ((old, new), fp) in old_refs.iter().zip(&new_refs).zip(&fps) {
            if seen[fp] == 1 {
                prop_assert_eq!(old, new, "unique fingerprint lost its ref");
            } else {
                prop_assert!(old != new, "ambiguous fingerprint kept {old}");
                prop_assert!(!old_refs.contains(new), "{new} moved to another element");
            }
        }
    }
}

//! Element refs: the short names (`e5`, `w1`) a model uses to point at elements.
//!
//! # The ref contract
//!
//! - **Format.** `eN` names an element inside one window, `wN` names a window; `N` is
//!   a decimal number ≥ 1 without leading zeros. A [`RefRegistry`] issues the `e`
//!   refs of one window (the host keeps one registry per window); [`WindowRefs`]
//!   issues the `w` refs of one desktop. Numbers are never reused by the registry
//!   that issued them, so a ref can never come to mean a different element by
//!   recycling. Input may be wrapped in brackets as printed (`[e5]`).
//! - **What a ref maps to.** A [`RefEntry`]: the driver's native [`Handle`] plus a
//!   [`Fingerprint`] (role, name, automation id, index in parent, hash of the
//!   ancestors' roles and names) taken when the ref was last seen.
//! - **How long it stays valid.** From the snapshot that issued it for as long as
//!   the element keeps being read in that window: [`RefRegistry::assign`] gives an
//!   element its old ref when its handle is unchanged and it is still the same
//!   element — same role, and the same name, automation id or place (ancestors and
//!   index in parent), so a handle the platform recycled for an unrelated element
//!   elsewhere does not carry the ref over — or, when the handle changed, when exactly
//!   one old, unclaimed entry whose handle is gone has the same fingerprint and
//!   exactly one element of the new tree has it. Anything else gets a fresh number. A
//!   grant rebind (new revision) keeps the registry, but the host refuses refs shown
//!   under an older revision (`COMPUTER_STALE_REVISION`) until the window is observed
//!   again.
//! - **Stale.** An entry whose element was absent from the latest snapshot is *dead*
//!   (`alive == false`). Acting on a dead ref, or on a live one whose handle the
//!   driver no longer knows, goes through [`RefRegistry::reresolve`] on a fresh tree:
//!   the same handle (still the same element, as above), or else the one element
//!   whose fingerprint matches, is the element; zero or several matches is
//!   [`CoreError::StaleRef`] (→
//!   `COMPUTER_STALE_REF`). Dead entries are kept (up to [`MAX_ENTRIES`]) so an old
//!   ref is reported as stale rather than unknown.
//! - **What the caller must do.** On `UnknownRef` or `StaleRef`, observe again (the
//!   host attaches a fresh snapshot to the error) and use the refs it shows; never
//!   guess a ref, never reuse a ref from another window. On `MalformedRef`, fix the
//!   argument.
//!
//! A ref never silently lands on a different element: where identity is ambiguous
//! the answer is an error, not a best guess. This module is pure: it neither reads
//! nor writes the state file (the host serializes [`RefRegistry`] and [`WindowRefs`]
//! with serde).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::node::{Handle, Node};
use crate::redact;
use crate::role::Role;
use crate::sanitize;

/// Entries one [`RefRegistry`] keeps, live and dead. When there are more, the dead
/// entries seen longest ago are dropped first (live ones never are). 5,000 covers
/// a few full re-reads of a large window (LibreOffice Calc exposes about 1,900
/// objects) while keeping the state file under roughly 1 MB.
pub const MAX_ENTRIES: usize = 5_000;

/// Window refs one [`WindowRefs`] keeps; the oldest issued are dropped beyond it.
pub const MAX_WINDOWS: usize = 1_000;

/// Characters of an element's name kept in its fingerprint: enough to tell labels
/// apart, short enough that a document whose name is its content does not bloat the
/// state file.
pub const FINGERPRINT_NAME_CHARS: usize = 64;

/// Which registry a ref belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    /// `eN`: an element of one window.
    Element,
    /// `wN`: a window.
    Window,
}

/// Parses `eN` / `wN` (optionally written `[eN]`) into its kind and number.
///
/// # Errors
///
/// [`CoreError::MalformedRef`] for anything else: another letter, no digits, a
/// leading zero, zero itself, or a number beyond `u64`.
pub fn parse_ref(text: &str) -> Result<(RefKind, u64), CoreError> {
    let malformed = || CoreError::MalformedRef {
        text: sanitize::one_line(text),
    };
    let s = text
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(text);
    let (kind, digits) = match s.as_bytes().first() {
        Some(b'e') => (RefKind::Element, &s[1..]),
        Some(b'w') => (RefKind::Window, &s[1..]),
        _ => return Err(malformed()),
    };
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    let n: u64 = digits.parse().map_err(|_| malformed())?;
    Ok((kind, n))
}

/// What identifies an element when its handle is gone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fingerprint {
    pub role: Role,
    /// The name with secrets masked, escaped to one line and cut to
    /// [`FINGERPRINT_NAME_CHARS`] chars (no suffix).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation_id: Option<String>,
    /// 0-based position among the parent's children as read.
    pub index_in_parent: usize,
    /// FNV-1a 64 hash of the roles and fingerprint names of the ancestors below the
    /// window (the window itself is left out: its title changes with the document).
    pub ancestor_hash: u64,
}

use crate::hash::{fnv1a, fnv1a_from as fnv};

fn fingerprint_name(node: &Node) -> String {
    let masked = redact::redacted_name(node);
    let head: String = masked.chars().take(FINGERPRINT_NAME_CHARS).collect();
    sanitize::one_line(&head)
}

/// The ancestor hash for the children of an element with this role and name.
fn child_hash(parent_hash: u64, role: Role, fp_name: &str) -> u64 {
    let h = fnv(parent_hash, role.as_str().as_bytes());
    let h = fnv(h, &[0x1f]);
    let h = fnv(h, fp_name.as_bytes());
    fnv(h, &[0x1e])
}

/// Handles and fingerprints of every element under `root` (the root excluded), in
/// pre-order. Iterative: any depth is safe.
///
/// Inside a secret field ([`redact::is_secret_field`]) names are left out (some
/// toolkits expose the typed text as a child's name), and a secret field's own name
/// goes through [`redact::redacted_name`], so a stored registry never holds a
/// password.
fn fingerprints(root: &Node) -> Vec<(&Handle, Fingerprint)> {
    let mut out = Vec::with_capacity(root.children.len() * 8);
    // (element, index in parent, ancestor hash, inside a secret field)
    fn children(
        n: &Node,
        hash: u64,
        secret: bool,
    ) -> impl Iterator<Item = (&Node, usize, u64, bool)> {
        n.children
            .iter()
            .enumerate()
            .rev()
            .map(move |(i, c)| (c, i, hash, secret))
    }
    let mut stack: Vec<(&Node, usize, u64, bool)> =
        children(root, fnv1a(b""), redact::is_secret_field(root)).collect();
    while let Some((c, i, hash, inside_secret)) = stack.pop() {
        let name = if inside_secret {
            String::new()
        } else {
            fingerprint_name(c)
        };
        let next = child_hash(hash, c.role, &name);
        out.push((
            &c.handle,
            Fingerprint {
                role: c.role,
                name,
                automation_id: c.automation_id.clone(),
                index_in_parent: i,
                ancestor_hash: hash,
            },
        ));
        let secret = inside_secret || redact::is_secret_field(c);
        stack.extend(children(c, next, secret));
    }
    out
}

/// Whether an element seen under the same handle is still the element an old
/// fingerprint describes: the same role and the same name, automation id or place
/// (ancestors and index in parent). A platform that recycles a dead element's handle
/// for a new element elsewhere under another name thus never hands the new element
/// the old ref; a button renamed in place ("Play" → "Pause") or moved under the same
/// name keeps it.
fn same_element(old: &Fingerprint, new: &Fingerprint) -> bool {
    old.role == new.role
        && (old.name == new.name
            || (old.ancestor_hash == new.ancestor_hash
                && old.index_in_parent == new.index_in_parent)
            || (old.automation_id.is_some() && old.automation_id == new.automation_id))
}

/// The fingerprint of every element under `root` (root excluded), in pre-order, as
/// [`RefRegistry::assign`] computes them.
pub fn fingerprint_all(root: &Node) -> Vec<Fingerprint> {
    fingerprints(root).into_iter().map(|(_, f)| f).collect()
}

/// What one `eN` ref stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefEntry {
    /// The ref itself, `e5`.
    #[serde(rename = "ref")]
    pub ref_: String,
    /// The handle the element had when last seen.
    pub handle: Handle,
    /// The fingerprint it had when last seen.
    pub fingerprint: Fingerprint,
    /// Seen in the latest [`RefRegistry::assign`].
    pub alive: bool,
    /// The [`RefRegistry::assign`] call (1-based count) that last saw it.
    #[serde(default)]
    pub last_seen: u64,
}

/// The `eN` refs of one window. Serializable so the host can keep it between calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefRegistry {
    /// Entries by ref number.
    entries: BTreeMap<u64, RefEntry>,
    /// The highest number issued so far (0 before the first).
    issued: u64,
    /// Number of `assign` calls so far.
    generation: u64,
}

impl RefRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries kept, live and dead.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in ref-number order.
    pub fn entries(&self) -> impl Iterator<Item = &RefEntry> {
        self.entries.values()
    }

    /// The highest ref number issued so far (0 before the first).
    pub fn issued(&self) -> u64 {
        self.issued
            .max(self.entries.keys().next_back().copied().unwrap_or(0))
    }

    /// Makes every number issued from now on greater than `floor`. A host shares one
    /// floor across the windows of a session, so no two windows ever show the same
    /// `eN` and a ref can never land in a window it was not shown for.
    pub fn reserve_above(&mut self, floor: u64) {
        self.issued = self.issued.max(floor);
    }

    /// Sets `ref_` on every element under `root` (the root itself, the window, is left
    /// untouched: its `wN` comes from [`WindowRefs`]), following the contract in the
    /// module doc: same handle and still the same element (same role, and the same
    /// name, automation id or place) → old ref; else a unique fingerprint match among
    /// unclaimed old entries whose handle is gone → old ref; else a fresh number.
    /// Entries not seen become dead; dead entries beyond [`MAX_ENTRIES`] are dropped,
    /// oldest first. Iterative: any depth is safe.
    pub fn assign(&mut self, root: &mut Node) {
        self.generation += 1;
        let generation = self.generation;
        // A state file edited by hand or cut short must not make numbers repeat.
        self.issued = self
            .issued
            .max(self.entries.keys().next_back().copied().unwrap_or(0));
        let fps = fingerprints(root);
        let n = fps.len();

        // Entries per handle, most recently seen first (a handle can have several:
        // an element whose role changed, or a driver that repeats handles).
        let mut by_handle: HashMap<&Handle, Vec<u64>> = HashMap::new();
        for (&num, e) in &self.entries {
            by_handle.entry(&e.handle).or_default().push(num);
        }
        for nums in by_handle.values_mut() {
            nums.sort_unstable_by_key(|num| std::cmp::Reverse((self.entries[num].last_seen, *num)));
        }

        let mut result: Vec<Option<u64>> = vec![None; n];
        let mut taken: HashSet<u64> = HashSet::new();
        // Same handle: first the entry with the very same fingerprint, then one that
        // is still the same element by `same_element`.
        let exact = |old: &Fingerprint, new: &Fingerprint| old == new;
        for rule in [
            exact as fn(&Fingerprint, &Fingerprint) -> bool,
            same_element,
        ] {
            for (i, (h, fp)) in fps.iter().enumerate() {
                if result[i].is_some() {
                    continue;
                }
                let found = by_handle.get(h).and_then(|nums| {
                    nums.iter().copied().find(|num| {
                        !taken.contains(num) && rule(&self.entries[num].fingerprint, fp)
                    })
                });
                if let Some(num) = found {
                    taken.insert(num);
                    result[i] = Some(num);
                }
            }
        }

        let present: HashSet<&Handle> = fps.iter().map(|(h, _)| *h).collect();
        let mut old_by_fp: HashMap<&Fingerprint, Vec<u64>> = HashMap::new();
        for (&num, e) in &self.entries {
            if !taken.contains(&num) && !present.contains(&e.handle) {
                old_by_fp.entry(&e.fingerprint).or_default().push(num);
            }
        }
        let mut new_by_fp: HashMap<&Fingerprint, usize> = HashMap::new();
        for (i, (_, fp)) in fps.iter().enumerate() {
            if result[i].is_none() {
                *new_by_fp.entry(fp).or_default() += 1;
            }
        }
        for (i, (_, fp)) in fps.iter().enumerate() {
            if result[i].is_some() || new_by_fp.get(fp) != Some(&1) {
                continue;
            }
            if let Some([num]) = old_by_fp.get(fp).map(Vec::as_slice)
                && taken.insert(*num)
            {
                result[i] = Some(*num);
            }
        }

        let mut updates: Vec<(u64, Handle, Fingerprint)> = Vec::with_capacity(n);
        for (i, (h, fp)) in fps.into_iter().enumerate() {
            let num = result[i].unwrap_or_else(|| {
                self.issued += 1;
                self.issued
            });
            result[i] = Some(num);
            updates.push((num, h.clone(), fp));
        }
        for e in self.entries.values_mut() {
            e.alive = false;
        }
        for (num, handle, fingerprint) in updates {
            self.entries.insert(
                num,
                RefEntry {
                    ref_: format!("e{num}"),
                    handle,
                    fingerprint,
                    alive: true,
                    last_seen: generation,
                },
            );
        }
        self.evict();

        // Pre-order, iteratively, in the order `fingerprints` numbered them.
        let mut next = result
            .into_iter()
            .map(|r| r.expect("every element numbered"));
        let mut stack: Vec<&mut Node> = root.children.iter_mut().rev().collect();
        while let Some(c) = stack.pop() {
            c.ref_ = next.next().map(|num| format!("e{num}"));
            stack.extend(c.children.iter_mut().rev());
        }
    }

    fn evict(&mut self) {
        if self.entries.len() <= MAX_ENTRIES {
            return;
        }
        let mut dead: Vec<(u64, u64)> = self
            .entries
            .iter()
            .filter(|(_, e)| !e.alive)
            .map(|(&num, e)| (e.last_seen, num))
            .collect();
        dead.sort_unstable();
        let excess = self.entries.len() - MAX_ENTRIES;
        for (_, num) in dead.into_iter().take(excess) {
            self.entries.remove(&num);
        }
    }

    /// The entry behind an element ref, live or dead.
    ///
    /// # Errors
    ///
    /// [`CoreError::MalformedRef`] when `r` is not `eN`/`wN`;
    /// [`CoreError::UnknownRef`] when it is a window ref, was never issued here, or
    /// was dropped as too old.
    pub fn resolve(&self, r: &str) -> Result<&RefEntry, CoreError> {
        let (kind, num) = parse_ref(r)?;
        let unknown = || CoreError::UnknownRef {
            ref_: sanitize::one_line(r),
        };
        if kind != RefKind::Element {
            return Err(unknown());
        }
        self.entries.get(&num).ok_or_else(unknown)
    }

    /// Finds the element behind `r` in a freshly read tree of the same window: the
    /// element with the same handle that is still the same element (same role, and
    /// the same name, automation id or place), else the single element whose
    /// fingerprint equals the entry's and whose handle no other ref claims.
    ///
    /// # Errors
    ///
    /// Those of [`RefRegistry::resolve`], and [`CoreError::StaleRef`] with the number
    /// of candidates when zero or several elements match the fingerprint.
    pub fn reresolve(&self, r: &str, fresh_root: &Node) -> Result<Handle, CoreError> {
        let entry = self.resolve(r)?;
        let fps = fingerprints(fresh_root);
        if let Some((h, _)) = fps
            .iter()
            .find(|(h, fp)| **h == entry.handle && same_element(&entry.fingerprint, fp))
        {
            return Ok((*h).clone());
        }
        let claimed: HashSet<&Handle> = self
            .entries
            .values()
            .filter(|e| e.ref_ != entry.ref_)
            .map(|e| &e.handle)
            .collect();
        let candidates: Vec<&Handle> = fps
            .iter()
            .filter(|(h, fp)| *fp == entry.fingerprint && !claimed.contains(h))
            .map(|(h, _)| *h)
            .collect();
        match candidates.as_slice() {
            [one] => Ok((*one).clone()),
            _ => Err(CoreError::StaleRef {
                ref_: entry.ref_.clone(),
                candidates: candidates.len(),
            }),
        }
    }
}

/// The `wN` refs of one desktop: a window handle keeps its ref for as long as it is
/// remembered ([`MAX_WINDOWS`] most recently issued). Serializable for the state file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowRefs {
    /// Handles by ref number.
    windows: BTreeMap<u64, Handle>,
    /// The highest number issued so far.
    issued: u64,
}

impl WindowRefs {
    pub fn new() -> Self {
        Self::default()
    }

    /// The ref of `handle`, issuing the next `wN` when the handle is new.
    pub fn assign(&mut self, handle: &Handle) -> String {
        if let Some(r) = self.ref_of(handle) {
            return r;
        }
        // A damaged state file must not make numbers repeat.
        self.issued = self
            .issued
            .max(self.windows.keys().next_back().copied().unwrap_or(0));
        self.issued += 1;
        self.windows.insert(self.issued, handle.clone());
        while self.windows.len() > MAX_WINDOWS {
            self.windows.pop_first();
        }
        format!("w{}", self.issued)
    }

    /// The ref already issued for `handle`, if any.
    pub fn ref_of(&self, handle: &Handle) -> Option<String> {
        self.windows
            .iter()
            .find(|(_, h)| *h == handle)
            .map(|(num, _)| format!("w{num}"))
    }

    /// The handle behind a `wN` ref; `None` for an unknown, forgotten, malformed or
    /// element ref.
    pub fn resolve(&self, r: &str) -> Option<&Handle> {
        match parse_ref(r) {
            Ok((RefKind::Window, num)) => self.windows.get(&num),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::State;

    fn button(h: &str, name: &str) -> Node {
        Node::new(h, Role::Button, name)
    }

    fn window(children: Vec<Node>) -> Node {
        Node::new("win", Role::Window, "Dialog").children(children)
    }

    fn refs_of(root: &Node) -> Vec<String> {
        root.walk().skip(1).filter_map(|n| n.ref_.clone()).collect()
    }

    #[test]
    fn unchanged_elements_keep_their_refs() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "OK"), button("h:2", "Cancel")]);
        reg.assign(&mut t);
        assert_eq!(refs_of(&t), ["e1", "e2"]);
        assert_eq!(t.ref_, None, "the window gets no e-ref");
        let mut t2 = window(vec![
            button("h:3", "Help"),
            button("h:1", "OK"),
            button("h:2", "Cancel"),
        ]);
        reg.assign(&mut t2);
        assert_eq!(refs_of(&t2), ["e3", "e1", "e2"]);
        // Renamed in place: still the same element.
        let mut t3 = window(vec![
            button("h:3", "Help"),
            button("h:1", "OK"),
            button("h:2", "Close"),
        ]);
        reg.assign(&mut t3);
        assert_eq!(refs_of(&t3), ["e3", "e1", "e2"]);
        // Renamed and moved at once under the same handle: treated as another element
        // (a recycled handle looks exactly like this), so the old ref goes stale.
        let mut t4 = window(vec![button("h:2", "Quit"), button("h:1", "OK")]);
        reg.assign(&mut t4);
        assert_eq!(refs_of(&t4), ["e4", "e1"]);
        assert!(!reg.resolve("e2").unwrap().alive);
    }

    #[test]
    fn handle_changed_unique_fingerprint_keeps_ref_and_resolves() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "OK"), button("h:2", "Cancel")]);
        reg.assign(&mut t);
        let fresh = window(vec![button("h:8", "OK"), button("h:9", "Cancel")]);
        assert_eq!(reg.reresolve("e1", &fresh), Ok(Handle::new("h:8")));
        assert_eq!(reg.reresolve("[e2]", &fresh), Ok(Handle::new("h:9")));
        let mut again = fresh.clone();
        reg.assign(&mut again);
        assert_eq!(refs_of(&again), ["e1", "e2"]);
        assert_eq!(reg.resolve("e1").unwrap().handle, Handle::new("h:8"));
        assert!(reg.resolve("e1").unwrap().alive);
    }

    #[test]
    fn same_handle_keeps_ref_even_when_renamed() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "Save")]);
        reg.assign(&mut t);
        let mut t2 = window(vec![button("h:1", "Save As…")]);
        reg.assign(&mut t2);
        assert_eq!(refs_of(&t2), ["e1"]);
        assert_eq!(reg.resolve("e1").unwrap().fingerprint.name, "Save As…");
    }

    #[test]
    fn same_handle_with_another_role_is_another_element() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "Save")]);
        reg.assign(&mut t);
        let mut t2 = window(vec![Node::new("h:1", Role::Link, "Save")]);
        reg.assign(&mut t2);
        assert_eq!(refs_of(&t2), ["e2"]);
        assert!(!reg.resolve("e1").unwrap().alive);
        let fresh = window(vec![Node::new("h:1", Role::Link, "Save")]);
        assert_eq!(
            reg.reresolve("e1", &fresh),
            Err(CoreError::StaleRef {
                ref_: "e1".into(),
                candidates: 0
            })
        );
    }

    #[test]
    fn two_identical_candidates_are_stale() {
        let group =
            |g: &str, b: &str| Node::new(g, Role::Group, "Row").children(vec![button(b, "OK")]);
        let mut reg = RefRegistry::new();
        let mut t = window(vec![group("h:g1", "h:b1")]);
        reg.assign(&mut t);
        assert_eq!(refs_of(&t), ["e1", "e2"]);
        // The row is re-created twice over: two buttons now fit e2's fingerprint.
        let fresh = window(vec![group("h:g7", "h:b7"), group("h:g8", "h:b8")]);
        assert_eq!(
            reg.reresolve("e2", &fresh),
            Err(CoreError::StaleRef {
                ref_: "e2".into(),
                candidates: 2
            })
        );
        // Assigning that tree gives neither button the old ref (the first row, alone
        // at index 0, does get the old row's).
        let mut assigned = fresh.clone();
        reg.assign(&mut assigned);
        assert_eq!(refs_of(&assigned), ["e1", "e3", "e4", "e5"]);
        assert!(!reg.resolve("e2").unwrap().alive);
    }

    #[test]
    fn gone_element_is_stale_with_no_candidates() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "OK")]);
        reg.assign(&mut t);
        let fresh = window(vec![button("h:2", "Cancel")]);
        assert_eq!(
            reg.reresolve("e1", &fresh),
            Err(CoreError::StaleRef {
                ref_: "e1".into(),
                candidates: 0
            })
        );
    }

    #[test]
    fn fingerprint_match_never_takes_a_known_element() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "OK"), button("h:2", "OK")]);
        reg.assign(&mut t);
        // h:1 died; the only "OK" at index 0 now is h:2, known as e2 (it moved).
        let fresh = window(vec![button("h:2", "OK")]);
        assert_eq!(
            reg.reresolve("e1", &fresh),
            Err(CoreError::StaleRef {
                ref_: "e1".into(),
                candidates: 0
            })
        );
        assert_eq!(reg.reresolve("e2", &fresh), Ok(Handle::new("h:2")));
    }

    #[test]
    fn unknown_and_malformed_refs() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "OK")]);
        reg.assign(&mut t);
        assert_eq!(
            reg.resolve("e999"),
            Err(CoreError::UnknownRef {
                ref_: "e999".into()
            })
        );
        assert_eq!(
            reg.resolve("w1"),
            Err(CoreError::UnknownRef { ref_: "w1".into() })
        );
        assert_eq!(
            reg.resolve("x5"),
            Err(CoreError::MalformedRef { text: "x5".into() })
        );
        assert_eq!(
            reg.reresolve("x5", &t),
            Err(CoreError::MalformedRef { text: "x5".into() })
        );
        assert_eq!(
            reg.reresolve("e42", &t),
            Err(CoreError::UnknownRef { ref_: "e42".into() })
        );
    }

    #[test]
    fn numbers_are_never_reused_and_dead_entries_are_bounded() {
        let mut reg = RefRegistry::new();
        let mut highest = 0;
        for round in 0..30 {
            // 300 brand-new elements each round, each name unique: nothing matches.
            let mut t = window(
                (0..300)
                    .map(|i| button(&format!("r{round}:{i}"), &format!("b{round}-{i}")))
                    .collect(),
            );
            reg.assign(&mut t);
            for r in refs_of(&t) {
                let (_, n) = parse_ref(&r).unwrap();
                assert!(n > highest, "{r} reused");
            }
            highest = reg
                .entries()
                .map(|e| parse_ref(&e.ref_).unwrap().1)
                .max()
                .unwrap();
            assert!(reg.len() <= MAX_ENTRIES);
            assert_eq!(reg.entries().filter(|e| e.alive).count(), 300);
        }
        assert_eq!(reg.len(), MAX_ENTRIES);
        assert_eq!(highest, 9_000);
        assert!(matches!(
            reg.resolve("e1"),
            Err(CoreError::UnknownRef { .. })
        ));
        assert!(!reg.resolve("e8000").unwrap().alive);
    }

    #[test]
    fn names_inside_password_fields_are_not_fingerprinted() {
        let mut reg = RefRegistry::new();
        let field = Node::new("h:1", Role::Textbox, "Password")
            .state(State::Password)
            .children(vec![Node::new("h:2", Role::Text, "hunter2")]);
        let mut t = window(vec![field]);
        reg.assign(&mut t);
        let json = serde_json::to_string(&reg).unwrap();
        assert!(!json.contains("hunter2"));
        assert_eq!(refs_of(&t), ["e1", "e2"]);
    }

    #[test]
    fn registry_round_trips_through_json() {
        let mut reg = RefRegistry::new();
        let mut t = window(vec![button("h:1", "OK"), button("h:2", "Cancel")]);
        reg.assign(&mut t);
        let json = serde_json::to_string(&reg).unwrap();
        let mut back: RefRegistry = serde_json::from_str(&json).unwrap();
        assert_eq!(back, reg);
        let mut t2 = window(vec![button("h:2", "Cancel"), button("h:3", "Apply")]);
        back.assign(&mut t2);
        assert_eq!(refs_of(&t2), ["e2", "e3"]);
    }

    #[test]
    fn parses_refs() {
        assert_eq!(parse_ref("e5").unwrap(), (RefKind::Element, 5));
        assert_eq!(parse_ref("[e12]").unwrap(), (RefKind::Element, 12));
        assert_eq!(parse_ref("w1").unwrap(), (RefKind::Window, 1));
        for bad in [
            "x5",
            "e",
            "e0",
            "e05",
            "E5",
            "e5 ",
            "e-1",
            "",
            "e99999999999999999999",
        ] {
            assert_eq!(
                parse_ref(bad),
                Err(CoreError::MalformedRef {
                    text: bad.to_string()
                }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn window_refs_are_stable_and_serializable() {
        let mut w = WindowRefs::new();
        let a = w.assign(&Handle::new(":1.2|/win/1"));
        let b = w.assign(&Handle::new(":1.3|/win/7"));
        assert_eq!((a.as_str(), b.as_str()), ("w1", "w2"));
        assert_eq!(w.assign(&Handle::new(":1.2|/win/1")), "w1");
        assert_eq!(w.resolve("w2"), Some(&Handle::new(":1.3|/win/7")));
        assert_eq!(w.resolve("w3"), None);
        assert_eq!(w.resolve("e2"), None);
        let json = serde_json::to_string(&w).unwrap();
        let back: WindowRefs = serde_json::from_str(&json).unwrap();
        assert_eq!(back, w);
    }

    #[test]
    fn window_refs_survive_a_damaged_state_file() {
        let mut w = WindowRefs::new();
        w.assign(&Handle::new("a"));
        w.assign(&Handle::new("b"));
        let mut json = serde_json::to_value(&w).unwrap();
        json["issued"] = serde_json::json!(0);
        let mut damaged: WindowRefs = serde_json::from_value(json).unwrap();
        assert_eq!(damaged.assign(&Handle::new("c")), "w3");
        assert_eq!(damaged.resolve("w1"), Some(&Handle::new("a")));
    }

    #[test]
    fn window_refs_are_bounded_and_never_reused() {
        let mut w = WindowRefs::new();
        for i in 0..MAX_WINDOWS + 5 {
            w.assign(&Handle::new(format!("h{i}")));
        }
        assert_eq!(w.resolve("w1"), None);
        assert_eq!(w.resolve("w6"), Some(&Handle::new("h5")));
        assert_eq!(
            w.assign(&Handle::new("h0")),
            format!("w{}", MAX_WINDOWS + 6)
        );
    }
}

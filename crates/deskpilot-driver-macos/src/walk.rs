//! The bounded walk of a window's `AXChildren`, over any [`AxSource`].
//!
//! Owns the order and the limits of a read: breadth first from the root, one batched
//! attribute read per element ([`crate::values::READ_ATTRS`]), the child count
//! (`AXUIElementGetAttributeValueCount`) of every element read, and only then a range
//! of its children (`AXUIElementCopyAttributeValues` from `from`, at most the child
//! cap). Every child not read — past the child cap, past the node budget, below the
//! depth limit, under an element off screen, the cells a column repeats, or left
//! when the read's deadline passed — stays counted in its parent's `child_count` and
//! in [`Walked::capped`], so the render says "K more": nothing is dropped without a
//! marker. An element that vanished while being read is skipped and counted; the
//! first element that does not answer ends the read with `COMPUTER_NOT_RESPONDING`
//! (never retried). Generic over the source, so it is tested without AX; the macOS
//! source is `macos::ax::Reader`.

use std::collections::VecDeque;
use std::time::Instant;

use deskpilot_core::{Handle, Node, Role, ValueRange};

use crate::geometry::{PointsRect, on_screen, to_bounds};
use crate::roles::{map_role_subrole, toplevel_role};
use crate::states::map_states;
use crate::values::{Attrs, format_number, naming};

/// Children taken per element at most by default: 500, as the Linux driver.
pub const DEFAULT_CHILD_CAP: u32 = 500;
/// Elements read per snapshot at most by default: 5,000, as the Linux driver.
pub const DEFAULT_MAX_NODES: u32 = 5_000;
/// Characters of text read per field by default: 2,000, as the Linux driver.
pub const DEFAULT_TEXT_CAP: usize = 2_000;

/// Why reading one element failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The element no longer exists (`kAXErrorInvalidUIElement`).
    Gone,
    /// The application did not answer within the messaging timeout
    /// (`kAXErrorCannotComplete`); `what` names the call.
    NotResponding { what: String },
    /// Another failure (`kAXErrorAPIDisabled`, `kAXErrorFailure`, …), in words.
    Failed(String),
}

/// What the walk reads from; the macOS implementation calls AX, tests use a fixture.
pub trait AxSource {
    type Elem: Clone;
    /// One batched read of [`crate::values::READ_ATTRS`].
    fn attrs(&mut self, e: &Self::Elem) -> Result<Attrs, ReadError>;
    /// The number of `AXChildren`.
    fn child_count(&mut self, e: &Self::Elem) -> Result<u64, ReadError>;
    /// `AXChildren` from index `start`, at most `max` of them.
    fn children(
        &mut self,
        e: &Self::Elem,
        start: u64,
        max: u64,
    ) -> Result<Vec<Self::Elem>, ReadError>;
    /// `AXUIElementCopyActionNames`.
    fn actions(&mut self, e: &Self::Elem) -> Result<Vec<String>, ReadError>;
    /// The handle the driver hands out for the element.
    fn handle(&mut self, e: &Self::Elem) -> Handle;
}

/// Bounds of one walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WalkLimits {
    /// Children taken per element at most.
    pub child_cap: u32,
    /// Elements in the tree at most, the root included.
    pub max_nodes: u32,
    /// Levels below the root to read; `None` reads until the node budget runs out.
    pub depth: Option<u32>,
    /// Children of the root skipped before the first one taken (counted, not read).
    pub from: u32,
    /// Read below elements that are off screen too (a search).
    pub hidden: bool,
    /// Characters of text per field.
    pub text_cap: usize,
    /// Stop reading new elements once this instant has passed.
    pub deadline: Instant,
}

/// The tree read and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Walked {
    pub root: Node,
    /// Elements whose attributes were read.
    pub objects: u64,
    /// Elements that vanished while being read.
    pub vanished: u64,
    /// Children counted but not read (caps, depth, off screen, columns, deadline).
    pub capped: u64,
    /// The deadline stopped the read early.
    pub cut_by_deadline: bool,
}

/// Whether an element's action names are read: roles a user operates, and the
/// containers and images a web page makes clickable. Text, headings and separators
/// are not asked (one round trip saved each).
pub fn wants_actions(role: Role) -> bool {
    role.is_interactive()
        || matches!(
            role,
            Role::Group | Role::Unknown | Role::Image | Role::Row | Role::Menu | Role::Dialog
        )
}

/// A node from one element's attributes (pure): role from role and subrole, name,
/// value and description by [`naming`], states by [`map_states`], bounds in points
/// rounded outwards, `AXIdentifier` as the automation id, and the value range of a
/// range control.
pub fn make_node(
    handle: Handle,
    a: &Attrs,
    actions: Vec<String>,
    on_screen: bool,
    text_cap: usize,
) -> Node {
    let role = map_role_subrole(&a.role, a.subrole());
    let (name, value, value_length, description) = naming(a, text_cap);
    let range = if matches!(
        role,
        Role::Slider | Role::Spinbutton | Role::Scrollbar | Role::Progressbar
    ) {
        match (
            a.min_value
                .as_ref()
                .and_then(|v| v.as_f64())
                .and_then(format_number),
            a.max_value
                .as_ref()
                .and_then(|v| v.as_f64())
                .and_then(format_number),
        ) {
            (Some(min), Some(max)) => Some(ValueRange { min, max }),
            _ => None,
        }
    } else {
        None
    };
    Node {
        handle,
        role,
        name,
        value,
        description,
        states: map_states(a, on_screen),
        actions,
        bounds: a.frame.as_ref().map(|f| to_bounds(f, 1.0)),
        automation_id: a.identifier.clone().filter(|s| !s.is_empty()),
        value_length,
        range,
        ..Node::default()
    }
}

struct Slot {
    node: Node,
    kids: Vec<usize>,
}

/// Reads the tree under `root`. `window_frame` (points) judges which elements are on
/// screen; `root_is_window` makes the root's role window-like
/// ([`toplevel_role`]).
///
/// Errors: [`ReadError::Gone`] when the root itself is gone;
/// [`ReadError::NotResponding`] as soon as any element does not answer.
pub fn walk<S: AxSource>(
    src: &mut S,
    root: &S::Elem,
    window_frame: Option<PointsRect>,
    root_is_window: bool,
    limits: &WalkLimits,
) -> Result<Walked, ReadError> {
    let mut objects = 0u64;
    let mut vanished = 0u64;
    let mut capped = 0u64;
    let mut cut_by_deadline = false;
    let max_nodes = limits.max_nodes.max(1) as usize;

    let root_attrs = src.attrs(root)?;
    objects += 1;
    let root_on = on_screen(root_attrs.frame.as_ref(), window_frame.as_ref());
    let root_actions = read_actions(src, root, &root_attrs, root_on)?;
    let mut root_node = make_node(
        src.handle(root),
        &root_attrs,
        root_actions,
        root_on,
        limits.text_cap,
    );
    if root_is_window {
        root_node.role = toplevel_role(root_node.role);
    }
    root_node.child_count = count_or_zero(src, root)?;
    let mut slots = vec![Slot {
        node: root_node,
        kids: Vec::new(),
    }];
    let mut queue: VecDeque<(usize, S::Elem, u32, String, bool)> = VecDeque::new();
    queue.push_back((0, root.clone(), 0, root_attrs.role.clone(), root_on));

    while let Some((idx, elem, depth, ax_role, on)) = queue.pop_front() {
        let count = slots[idx].node.child_count;
        if count == 0 {
            continue;
        }
        let start = if idx == 0 {
            u64::from(limits.from).min(count)
        } else {
            0
        };
        let left_in_budget = (max_nodes - slots.len()) as u64;
        let blocked = cut_by_deadline
            || limits.depth.is_some_and(|d| depth >= d)
            || ax_role == "AXColumn"
            || (!on && !limits.hidden);
        let take = if blocked {
            0
        } else {
            (count - start)
                .min(u64::from(limits.child_cap))
                .min(left_in_budget)
        };
        capped += count - start - take;
        if idx == 0 {
            slots[0].node.first_child = start;
        }
        if take == 0 {
            continue;
        }
        let kids = match src.children(&elem, start, take) {
            Ok(k) => k,
            Err(ReadError::Gone) => {
                vanished += 1;
                capped += take;
                continue;
            }
            Err(e) => return Err(e),
        };
        // A list shorter than its count (children went away between the two calls).
        capped += take.saturating_sub(kids.len() as u64);
        let mut rest = kids.into_iter();
        for kid in rest.by_ref() {
            if Instant::now() >= limits.deadline {
                cut_by_deadline = true;
                capped += 1;
                break;
            }
            let attrs = match src.attrs(&kid) {
                Ok(a) => a,
                Err(ReadError::Gone) => {
                    vanished += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            objects += 1;
            let kid_on = on && on_screen(attrs.frame.as_ref(), window_frame.as_ref());
            let actions = read_actions(src, &kid, &attrs, kid_on)?;
            let mut node = make_node(src.handle(&kid), &attrs, actions, kid_on, limits.text_cap);
            node.child_count = count_or_zero(src, &kid)?;
            let at = slots.len();
            slots.push(Slot {
                node,
                kids: Vec::new(),
            });
            slots[idx].kids.push(at);
            queue.push_back((at, kid, depth + 1, attrs.role, kid_on));
        }
        capped += rest.count() as u64;
    }
    // Children of elements still queued when the budget or deadline ran out stay
    // counted in their `child_count`.
    capped += queue
        .iter()
        .map(|(i, ..)| slots[*i].node.child_count)
        .sum::<u64>();
    Ok(Walked {
        root: assemble(&mut slots, 0),
        objects,
        vanished,
        capped,
        cut_by_deadline,
    })
}

fn read_actions<S: AxSource>(
    src: &mut S,
    e: &S::Elem,
    a: &Attrs,
    on: bool,
) -> Result<Vec<String>, ReadError> {
    if !on || !wants_actions(map_role_subrole(&a.role, a.subrole())) {
        return Ok(Vec::new());
    }
    match src.actions(e) {
        Ok(v) => Ok(v),
        Err(ReadError::NotResponding { what }) => Err(ReadError::NotResponding { what }),
        Err(_) => Ok(Vec::new()),
    }
}

fn count_or_zero<S: AxSource>(src: &mut S, e: &S::Elem) -> Result<u64, ReadError> {
    match src.child_count(e) {
        Ok(n) => Ok(n),
        Err(ReadError::NotResponding { what }) => Err(ReadError::NotResponding { what }),
        Err(_) => Ok(0),
    }
}

fn assemble(slots: &mut [Slot], at: usize) -> Node {
    let kids = std::mem::take(&mut slots[at].kids);
    let children: Vec<Node> = kids.into_iter().map(|k| assemble(slots, k)).collect();
    let mut node = std::mem::take(&mut slots[at].node);
    node.child_count = node
        .child_count
        .max(node.first_child + children.len() as u64);
    node.children = children;
    node
}

/// Whether a node matches a `tree.find` query (pure): its name, value or description
/// contains `needle_lower` (already lowercased), and its role is `role` when given.
pub fn matches(node: &Node, needle_lower: &str, role: Option<Role>) -> bool {
    if role.is_some_and(|r| r != node.role) {
        return false;
    }
    let hit = |s: &str| s.to_lowercase().contains(needle_lower);
    hit(&node.name)
        || node.value.as_deref().is_some_and(hit)
        || node.description.as_deref().is_some_and(hit)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use deskpilot_core::State;

    use super::*;
    use crate::values::AxValue;

    /// A fixture tree, element ids as `u32`:
    ///
    /// ```text
    /// 1 AXWindow "Doc"                      frame 0,0 400x300
    /// ├── 2 AXButton "OK"                   on screen
    /// ├── 3 AXScrollArea
    /// │   └── 4 AXList (6 rows: 10..=15)    rows at y = 0, 60, …; 10..=14 on, 15 off
    /// ├── 5 AXGroup                         off screen (y 900), 2 children 20, 21
    /// └── 6 AXTable
    ///     ├── 30 AXRow ─ 31 AXCell "a1"
    ///     └── 32 AXColumn ─ 33 AXCell "a1"  (the column repeats the row's cell)
    /// ```
    struct Fixture {
        nodes: HashMap<u32, (Attrs, Vec<u32>)>,
        gone: Vec<u32>,
        frozen: Option<u32>,
        calls: u64,
    }

    fn el(role: &str, title: &str, y: f64) -> Attrs {
        Attrs {
            role: role.into(),
            title: (!title.is_empty()).then(|| title.into()),
            enabled: Some(true),
            frame: Some(PointsRect::new(0.0, y, 50.0, 20.0)),
            ..Attrs::default()
        }
    }

    fn fixture() -> Fixture {
        let mut n: HashMap<u32, (Attrs, Vec<u32>)> = HashMap::new();
        let mut window = el("AXWindow", "Doc", 0.0);
        window.frame = Some(PointsRect::new(0.0, 0.0, 400.0, 300.0));
        n.insert(1, (window, vec![2, 3, 5, 6]));
        n.insert(2, (el("AXButton", "OK", 10.0), vec![]));
        n.insert(3, (el("AXScrollArea", "", 0.0), vec![4]));
        n.insert(4, (el("AXList", "", 0.0), (10..=15).collect()));
        for i in 10..=15u32 {
            n.insert(
                i,
                (
                    el("AXRow", &format!("row {i}"), f64::from(i - 10) * 60.0),
                    vec![],
                ),
            );
        }
        n.insert(5, (el("AXGroup", "", 900.0), vec![20, 21]));
        n.insert(20, (el("AXButton", "hidden a", 900.0), vec![]));
        n.insert(21, (el("AXButton", "hidden b", 900.0), vec![]));
        n.insert(6, (el("AXTable", "", 0.0), vec![30, 32]));
        n.insert(30, (el("AXRow", "", 0.0), vec![31]));
        n.insert(31, (el("AXCell", "a1", 0.0), vec![]));
        n.insert(32, (el("AXColumn", "", 0.0), vec![33]));
        n.insert(33, (el("AXCell", "a1", 0.0), vec![]));
        Fixture {
            nodes: n,
            gone: Vec::new(),
            frozen: None,
            calls: 0,
        }
    }

    impl AxSource for Fixture {
        type Elem = u32;
        fn attrs(&mut self, e: &u32) -> Result<Attrs, ReadError> {
            self.calls += 1;
            if self.frozen == Some(*e) {
                return Err(ReadError::NotResponding {
                    what: "AXUIElementCopyMultipleAttributeValues".into(),
                });
            }
            if self.gone.contains(e) {
                return Err(ReadError::Gone);
            }
            Ok(self.nodes[e].0.clone())
        }
        fn child_count(&mut self, e: &u32) -> Result<u64, ReadError> {
            self.calls += 1;
            Ok(self.nodes.get(e).map_or(0, |n| n.1.len() as u64))
        }
        fn children(&mut self, e: &u32, start: u64, max: u64) -> Result<Vec<u32>, ReadError> {
            self.calls += 1;
            Ok(self.nodes[e]
                .1
                .iter()
                .skip(start as usize)
                .take(max as usize)
                .copied()
                .collect())
        }
        fn actions(&mut self, e: &u32) -> Result<Vec<String>, ReadError> {
            self.calls += 1;
            Ok(if self.nodes[e].0.role == "AXButton" {
                vec!["AXPress".into()]
            } else {
                Vec::new()
            })
        }
        fn handle(&mut self, e: &u32) -> Handle {
            Handle::new(format!("ax:1:{e}"))
        }
    }

    fn limits() -> WalkLimits {
        WalkLimits {
            child_cap: DEFAULT_CHILD_CAP,
            max_nodes: DEFAULT_MAX_NODES,
            depth: None,
            from: 0,
            hidden: false,
            text_cap: DEFAULT_TEXT_CAP,
            deadline: Instant::now() + Duration::from_secs(60),
        }
    }

    fn names(n: &Node) -> Vec<String> {
        n.walk()
            .map(|n| n.name.clone())
            .filter(|s| !s.is_empty())
            .collect()
    }

    fn frame() -> Option<PointsRect> {
        Some(PointsRect::new(0.0, 0.0, 400.0, 300.0))
    }

    #[test]
    fn a_window_is_read_with_off_screen_subtrees_and_columns_counted_not_read() {
        let mut f = fixture();
        let w = walk(&mut f, &1, frame(), true, &limits()).unwrap();
        assert_eq!(w.root.role, Role::Window);
        assert_eq!(
            names(&w.root),
            [
                "Doc", "OK", "row 10", "row 11", "row 12", "row 13", "row 14", "row 15", "a1"
            ]
        );
        let ok = &w.root.children[0];
        assert_eq!(ok.actions, ["AXPress"]);
        assert_eq!(ok.handle.as_str(), "ax:1:2");
        let row15 = w.root.walk().find(|n| n.name == "row 15").unwrap();
        assert!(row15.has(State::Offscreen));
        let hidden = &w.root.children[2];
        assert!(hidden.has(State::Offscreen));
        assert_eq!((hidden.child_count, hidden.children.len()), (2, 0));
        let column = &w.root.children[3].children[1];
        assert_eq!((column.child_count, column.children.len()), (1, 0));
        // 2 under the hidden group, 1 under the column.
        assert_eq!(w.capped, 3);
        assert_eq!(w.objects, 15);
        assert_eq!(w.vanished, 0);
        assert!(!w.cut_by_deadline);
    }

    #[test]
    fn a_search_reads_off_screen_subtrees_too_but_never_columns() {
        let mut f = fixture();
        let l = WalkLimits {
            hidden: true,
            ..limits()
        };
        let w = walk(&mut f, &1, frame(), true, &l).unwrap();
        let n = names(&w.root);
        assert!(n.contains(&"hidden a".to_string()) && n.contains(&"hidden b".to_string()));
        assert_eq!(w.capped, 1);
    }

    #[test]
    fn caps_keep_the_counts_of_what_was_not_read() {
        let mut f = fixture();
        let l = WalkLimits {
            child_cap: 2,
            ..limits()
        };
        let w = walk(&mut f, &1, frame(), true, &l).unwrap();
        assert_eq!(w.root.child_count, 4);
        assert_eq!(w.root.children.len(), 2);
        let list = &w.root.children[1].children[0];
        assert_eq!((list.child_count, list.children.len()), (6, 2));
        // Root: 2 of 4; list: 4 of 6.
        assert_eq!(w.capped, 6);

        let mut f = fixture();
        let l = WalkLimits {
            max_nodes: 3,
            ..limits()
        };
        let w = walk(&mut f, &1, frame(), true, &l).unwrap();
        assert_eq!(w.root.count(), 3);
        assert_eq!(w.root.child_count, 4);
        // 2 root children unread, then the scroll area's 1 child never expanded.
        assert_eq!(w.capped, 3);

        let mut f = fixture();
        let l = WalkLimits {
            depth: Some(1),
            ..limits()
        };
        let w = walk(&mut f, &1, frame(), true, &l).unwrap();
        assert_eq!(w.root.count(), 5);
        assert!(w.root.children.iter().all(|c| c.children.is_empty()));
    }

    #[test]
    fn a_page_starts_from_the_given_child() {
        let mut f = fixture();
        let l = WalkLimits {
            from: 3,
            hidden: true,
            ..limits()
        };
        let w = walk(&mut f, &4, frame(), false, &l).unwrap();
        assert_eq!(w.root.role, Role::List);
        assert_eq!(w.root.first_child, 3);
        assert_eq!(w.root.child_count, 6);
        assert_eq!(names(&w.root), ["row 13", "row 14", "row 15"]);
    }

    #[test]
    fn vanished_elements_are_skipped_and_a_frozen_one_ends_the_read() {
        let mut f = fixture();
        f.gone = vec![2, 11];
        let w = walk(&mut f, &1, frame(), true, &limits()).unwrap();
        assert_eq!(w.vanished, 2);
        assert!(!names(&w.root).contains(&"OK".to_string()));

        let mut f = fixture();
        f.gone = vec![1];
        assert_eq!(
            walk(&mut f, &1, frame(), true, &limits()),
            Err(ReadError::Gone)
        );

        let mut f = fixture();
        f.frozen = Some(12);
        let e = walk(&mut f, &1, frame(), true, &limits()).unwrap_err();
        assert!(matches!(e, ReadError::NotResponding { .. }));
    }

    #[test]
    fn a_passed_deadline_stops_the_read_with_every_child_counted() {
        let mut f = fixture();
        let l = WalkLimits {
            deadline: Instant::now() - Duration::from_millis(1),
            ..limits()
        };
        let w = walk(&mut f, &1, frame(), true, &l).unwrap();
        assert!(w.cut_by_deadline);
        assert_eq!(w.root.count(), 1);
        assert_eq!(w.root.child_count, 4);
        assert_eq!(w.capped, 4);
    }

    #[test]
    fn nodes_carry_value_range_and_identifier() {
        let a = Attrs {
            role: "AXSlider".into(),
            title: Some("Volume".into()),
            value: Some(AxValue::Float(0.5)),
            min_value: Some(AxValue::Int(0)),
            max_value: Some(AxValue::Int(1)),
            identifier: Some("volume-slider".into()),
            frame: Some(PointsRect::new(1.5, 2.0, 100.0, 20.0)),
            ..Attrs::default()
        };
        let n = make_node(Handle::new("ax:1:9"), &a, vec![], true, 100);
        assert_eq!(n.role, Role::Slider);
        assert_eq!(n.value.as_deref(), Some("0.5"));
        assert_eq!(
            n.range,
            Some(ValueRange {
                min: "0".into(),
                max: "1".into()
            })
        );
        assert_eq!(n.automation_id.as_deref(), Some("volume-slider"));
        assert_eq!(n.bounds, Some(deskpilot_core::Bounds::new(1, 2, 101, 20)));
        assert!(matches(&n, "vol", Some(Role::Slider)));
        assert!(matches(&n, "0.5", None));
        assert!(!matches(&n, "vol", Some(Role::Button)));
        assert!(!matches(&n, "bass", None));
    }
}

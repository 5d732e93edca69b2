//! `uiautomator dump` XML → [`Node`] tree (docs/ARCHITECTURE.md §3): the one Android
//! class → [`Role`] table ([`CLASS_ROLES`]), the attributes → states, names and
//! handles, and the rules that need the tree around a node.
//!
//! Rules of the assembly:
//! - `password="true"` makes a textbox with the `password` state whose text is never
//!   read (not even the dots Android shows): a device with "speak passwords" on
//!   dumps the secret itself.
//! - A direct child of a list (`RecyclerView`, `ListView`, `GridView`) that maps to a
//!   container or a text is a `listitem`.
//! - A node that takes taps (clickable or long-clickable) with no text and no
//!   description of its own is named by the texts inside it, as Android's screen
//!   reader says it (`listitem "Network & internet, Mobile, Wi‑Fi, hotspot"`), and
//!   those plain texts are not repeated below it: a tap on them is a tap on it, so
//!   the element a policy judges is the one the tap reaches. Inner elements that do
//!   something themselves (checkable, clickable, scrollable, editable) stay.
//! - A dump holding an AlertDialog's panel (`…:id/parentPanel`, `…:id/alertTitle`)
//!   is a dialog window titled by the alert's title.
//!
//! Handles are the index path of a node in the dump plus a fingerprint of its
//! package, class, resource-id and first label (`n0.3.1~1a2b3c4d`): the path alone
//! would name another element once a list scrolled, so an element whose label
//! changed is a new element.

use deskpilot_core::{Bounds, Handle, Node, Role, State};
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// The one mapping table: Android class name (as the dump's `class` attribute
/// gives it, i.e. the view's accessibility class) → [`Role`]. A class not listed is
/// [`Role::Unknown`]; nothing is guessed from a class name.
pub const CLASS_ROLES: &[(&str, Role)] = &[
    ("android.widget.Button", Role::Button),
    ("android.widget.ImageButton", Role::Button),
    ("android.widget.TextView", Role::Text),
    ("android.widget.EditText", Role::Textbox),
    ("android.widget.AutoCompleteTextView", Role::Textbox),
    ("android.widget.MultiAutoCompleteTextView", Role::Textbox),
    ("android.widget.CheckBox", Role::Checkbox),
    ("android.widget.Switch", Role::Checkbox),
    ("android.widget.ToggleButton", Role::Checkbox),
    ("android.widget.CompoundButton", Role::Checkbox),
    ("android.widget.CheckedTextView", Role::Checkbox),
    ("android.widget.RadioButton", Role::Radio),
    ("android.widget.RadioGroup", Role::Group),
    ("android.widget.ImageView", Role::Image),
    ("android.widget.ListView", Role::List),
    ("android.widget.GridView", Role::List),
    ("android.widget.ExpandableListView", Role::List),
    ("androidx.recyclerview.widget.RecyclerView", Role::List),
    ("android.support.v7.widget.RecyclerView", Role::List),
    ("android.widget.ScrollView", Role::Group),
    ("android.widget.HorizontalScrollView", Role::Group),
    ("android.widget.LinearLayout", Role::Group),
    ("android.widget.FrameLayout", Role::Group),
    ("android.widget.RelativeLayout", Role::Group),
    ("android.widget.GridLayout", Role::Group),
    ("android.widget.TableLayout", Role::Table),
    ("android.widget.TableRow", Role::Row),
    ("android.view.ViewGroup", Role::Group),
    ("android.view.View", Role::Group),
    ("androidx.viewpager.widget.ViewPager", Role::Group),
    ("android.support.v4.view.ViewPager", Role::Group),
    ("android.widget.SeekBar", Role::Slider),
    ("android.widget.RatingBar", Role::Slider),
    ("android.widget.ProgressBar", Role::Progressbar),
    ("android.widget.NumberPicker", Role::Spinbutton),
    ("android.widget.Spinner", Role::Combobox),
    ("android.widget.TabWidget", Role::Tablist),
    ("android.app.ActionBar$Tab", Role::Tab),
    ("androidx.appcompat.app.ActionBar$Tab", Role::Tab),
    ("android.widget.Toolbar", Role::Toolbar),
    ("android.webkit.WebView", Role::Document),
];

/// Android's web view class: its page is its children, when the dump holds them.
const WEB_VIEW: &str = "android.webkit.WebView";

/// The description of a web view whose page the dump does not hold.
pub const WEB_VIEW_UNREAD: &str =
    "web page not in the accessibility dump (not read); screenshot --ocr reads its pixels";

/// The role of an Android class ([`CLASS_ROLES`]); [`Role::Unknown`] for any other.
pub fn role_of(class: &str) -> Role {
    CLASS_ROLES
        .iter()
        .find(|(c, _)| *c == class)
        .map_or(Role::Unknown, |&(_, r)| r)
}

/// Limits of one read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Nodes kept at most; the children of nodes past it are counted, not kept.
    pub max_nodes: usize,
    /// Characters kept of a text, a description or a value.
    pub text_cap: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_nodes: 5_000,
            text_cap: 2_000,
        }
    }
}

/// A parsed dump.
#[derive(Debug, Clone)]
pub(crate) struct Dump {
    /// The window: role window or dialog, handle [`window_handle`] of the package,
    /// children the dump's top nodes.
    pub root: Node,
    /// The app on screen (the first top node not of the system UI).
    pub package: String,
    /// The window's title: the alert's title for a dialog, else the package.
    pub title: String,
    /// Nodes the dump holds.
    pub nodes: u64,
    /// Nodes left out by [`Limits::max_nodes`].
    pub capped: u64,
}

/// The handle of the window showing `package`: `screen:PACKAGE`.
pub fn window_handle(package: &str) -> Handle {
    Handle::new(format!("screen:{package}"))
}

/// One `<node>` as the dump gives it.
#[derive(Debug, Clone, Default)]
struct Raw {
    text: String,
    resource_id: String,
    class: String,
    package: String,
    desc: String,
    hint: String,
    checkable: bool,
    checked: bool,
    clickable: bool,
    enabled: bool,
    focusable: bool,
    focused: bool,
    scrollable: bool,
    long_clickable: bool,
    password: bool,
    selected: bool,
    bounds: Option<Bounds>,
    children: Vec<Raw>,
}

impl Raw {
    fn is_textbox(&self) -> bool {
        self.password || role_of(&self.class) == Role::Textbox
    }

    /// Takes taps: Android gives a touch to the deepest such view under it.
    fn takes_taps(&self) -> bool {
        self.clickable || self.long_clickable
    }

    /// Does nothing by itself: a text, an image, a layout.
    fn plain(&self) -> bool {
        !(self.takes_taps() || self.checkable || self.scrollable || self.is_textbox())
    }

    fn all_plain(&self) -> bool {
        self.plain() && self.children.iter().all(Raw::all_plain)
    }

    /// Named by what is inside it.
    fn absorbs(&self) -> bool {
        self.takes_taps() && !self.is_textbox() && self.text.is_empty() && self.desc.is_empty()
    }

    /// The texts of the plain nodes inside, reached through plain nodes only, in
    /// order.
    fn inner_texts(&self, out: &mut Vec<String>) {
        for c in &self.children {
            if !c.plain() {
                continue;
            }
            let t = if c.text.is_empty() { &c.desc } else { &c.text };
            let t = t.trim();
            if !t.is_empty() {
                out.push(t.to_string());
            }
            c.inner_texts(out);
        }
    }
}

/// Parses `[x1,y1][x2,y2]` (right and bottom exclusive) into pixel bounds.
pub(crate) fn parse_bounds(s: &str) -> Option<Bounds> {
    let nums: Vec<i32> = s
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<i32>().ok())
        .collect::<Option<Vec<_>>>()?;
    match nums[..] {
        [x1, y1, x2, y2] => Some(Bounds::new(
            x1,
            y1,
            x2.saturating_sub(x1).max(0),
            y2.saturating_sub(y1).max(0),
        )),
        _ => None,
    }
}

/// FNV-1a (32 bits, hex) of the parts, each ended by a zero byte.
fn fingerprint(parts: &[&str]) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for p in parts {
        for b in p.bytes().chain([0]) {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    format!("{h:08x}")
}

fn raw_of(e: &BytesStart<'_>) -> Result<Raw, String> {
    let mut r = Raw {
        enabled: true,
        ..Raw::default()
    };
    for a in e.attributes() {
        let a = a.map_err(|e| format!("bad attribute: {e}"))?;
        let v = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| format!("bad attribute value: {e}"))?
            .into_owned();
        let yes = v == "true";
        match a.key.as_ref() {
            "text" => r.text = v,
            "resource-id" => r.resource_id = v,
            "class" => r.class = v,
            "package" => r.package = v,
            "content-desc" => r.desc = v,
            "hint" => r.hint = v,
            "checkable" => r.checkable = yes,
            "checked" => r.checked = yes,
            "clickable" => r.clickable = yes,
            "enabled" => r.enabled = yes,
            "focusable" => r.focusable = yes,
            "focused" => r.focused = yes,
            "scrollable" => r.scrollable = yes,
            "long-clickable" => r.long_clickable = yes,
            "password" => r.password = yes,
            "selected" => r.selected = yes,
            "bounds" => r.bounds = parse_bounds(&v),
            _ => {}
        }
    }
    Ok(r)
}

/// The dump's top nodes.
fn read_xml(xml: &str) -> Result<Vec<Raw>, String> {
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<Raw> = Vec::new();
    let mut top: Vec<Raw> = Vec::new();
    let mut saw_hierarchy = false;
    let mut closed_hierarchy = false;
    let attach = |stack: &mut Vec<Raw>, top: &mut Vec<Raw>, n: Raw| match stack.last_mut() {
        Some(p) => p.children.push(n),
        None => top.push(n),
    };
    loop {
        match reader.read_event() {
            Err(e) => return Err(format!("malformed dump XML: {e}")),
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) if e.name().as_ref() == "hierarchy" => saw_hierarchy = true,
            Ok(Event::Empty(e)) if e.name().as_ref() == "hierarchy" => {
                saw_hierarchy = true;
                closed_hierarchy = true;
            }
            Ok(Event::End(e)) if e.name().as_ref() == "hierarchy" => closed_hierarchy = true,
            Ok(Event::Start(e)) if e.name().as_ref() == "node" => stack.push(raw_of(&e)?),
            Ok(Event::Empty(e)) if e.name().as_ref() == "node" => {
                let n = raw_of(&e)?;
                attach(&mut stack, &mut top, n);
            }
            Ok(Event::End(e)) if e.name().as_ref() == "node" => {
                let n = stack.pop().ok_or("unbalanced </node> in the dump")?;
                attach(&mut stack, &mut top, n);
            }
            Ok(_) => {}
        }
    }
    if !saw_hierarchy || !closed_hierarchy || !stack.is_empty() {
        return Err("the dump is not a complete uiautomator <hierarchy>".into());
    }
    Ok(top)
}

struct Cx {
    package: String,
    limits: Limits,
    kept: usize,
    capped: u64,
    dialog: bool,
    alert_title: Option<String>,
}

fn cap(s: &str, max: usize) -> (String, Option<u64>) {
    let n = s.chars().count();
    if n <= max {
        (s.to_string(), None)
    } else {
        (s.chars().take(max).collect(), Some(n as u64))
    }
}

/// `row`: the first text of the tappable element this node lies in (through plain
/// nodes only), which names a switch or check box of its own that has no text.
fn build(
    raw: &Raw,
    path: &str,
    parent_list: bool,
    drop_plain: bool,
    row: Option<&str>,
    cx: &mut Cx,
) -> Node {
    cx.kept += 1;
    let id = raw.resource_id.as_str();
    if id.ends_with(":id/parentPanel") || id.ends_with(":id/alertTitle") {
        cx.dialog = true;
    }
    if id.ends_with(":id/alertTitle") && cx.alert_title.is_none() && !raw.text.is_empty() {
        cx.alert_title = Some(raw.text.clone());
    }
    let mut role = role_of(&raw.class);
    if raw.password {
        role = Role::Textbox;
    }
    if parent_list && matches!(role, Role::Group | Role::Unknown | Role::Text) {
        role = Role::Listitem;
    }
    let textbox = raw.is_textbox();
    let max = cx.limits.text_cap;
    let mut n = Node::new("", role, "");
    let identity: String;
    if textbox {
        let label = if raw.desc.is_empty() {
            &raw.hint
        } else {
            &raw.desc
        };
        n.name = cap(label, max).0;
        if !raw.hint.is_empty() && raw.hint != *label {
            n.description = Some(cap(&raw.hint, max).0);
        }
        identity = label.clone();
        if !raw.password {
            // An empty field shows its hint as its text; a dump that names the hint
            // says when that is so.
            let text = if !raw.hint.is_empty() && raw.text == raw.hint {
                ""
            } else {
                raw.text.as_str()
            };
            let (v, len) = cap(text, max);
            n.value = Some(v);
            n.value_length = len;
        }
    } else if !raw.text.is_empty() {
        n.name = cap(&raw.text, max).0;
        if !raw.desc.is_empty() && raw.desc != raw.text {
            n.description = Some(cap(&raw.desc, max).0);
        }
        identity = raw.text.clone();
    } else if !raw.desc.is_empty() {
        n.name = cap(&raw.desc, max).0;
        identity = raw.desc.clone();
    } else if raw.absorbs() {
        let mut texts = Vec::new();
        raw.inner_texts(&mut texts);
        n.name = cap(&texts.join(", "), max).0;
        identity = texts.first().cloned().unwrap_or_default();
    } else {
        if raw.checkable
            && let Some(r) = row
        {
            // A row's switch says nothing itself: it is the row's switch.
            n.name = cap(r, max).0;
        }
        identity = String::new();
    }
    n.handle = Handle::new(format!(
        "{path}~{}",
        fingerprint(&[&raw.package, &raw.class, id, &identity])
    ));
    if !id.is_empty() {
        n.automation_id = Some(id.to_string());
    }
    n.bounds = raw.bounds;
    for (on, s) in [
        (!raw.enabled, State::Disabled),
        (raw.checked, State::Checked),
        (raw.focused, State::Focused),
        (raw.selected, State::Selected),
        (raw.focusable, State::Focusable),
        (raw.password, State::Password),
        (textbox, State::Editable),
    ] {
        if on {
            n.states.insert(s);
        }
    }
    for (on, a) in [
        (raw.clickable, "click"),
        (raw.long_clickable, "long_click"),
        (raw.scrollable, "scroll"),
    ] {
        if on {
            n.actions.push(a.to_string());
        }
    }
    n.child_count = raw.children.len() as u64;
    if raw.class == WEB_VIEW && raw.children.is_empty() {
        // A WebView whose page the dump does not hold (its accessibility content
        // off, or not loaded): not an empty leaf but a part not read. Counted as
        // one child not reached, so the snapshot says "… 1 more item" and `find`
        // counts it unsearched; the description names the way to read it.
        n.child_count = 1;
        if n.description.is_none() {
            n.description = Some(WEB_VIEW_UNREAD.into());
        }
    }
    let list = role == Role::List;
    let drop_inside = raw.absorbs() || (drop_plain && raw.plain());
    let inner_row = if raw.absorbs() {
        Some(identity.as_str())
    } else if drop_inside {
        row
    } else {
        None
    };
    for (i, c) in raw.children.iter().enumerate() {
        if drop_inside && c.all_plain() {
            // Said in this element's name; a tap on it is a tap on this element.
            n.child_count -= 1;
            continue;
        }
        if cx.kept >= cx.limits.max_nodes {
            cx.capped += 1;
            continue;
        }
        n.children.push(build(
            c,
            &format!("{path}.{i}"),
            list,
            drop_inside,
            inner_row,
            cx,
        ));
    }
    n
}

/// Parses one `uiautomator dump` document into the window's tree.
///
/// Errors: malformed XML, a document that is not a whole `<hierarchy>`, or one
/// with no node (uiautomator writes such a file when the screen has no window).
pub(crate) fn parse_dump(xml: &str, limits: Limits) -> Result<Dump, String> {
    let top = read_xml(xml)?;
    if top.is_empty() {
        return Err("the dump holds no node".into());
    }
    let package = top
        .iter()
        .find(|n| n.package != "com.android.systemui" && !n.package.is_empty())
        .or(top.first())
        .map(|n| n.package.clone())
        .unwrap_or_default();
    let nodes = count(&top);
    let mut cx = Cx {
        package: package.clone(),
        limits,
        kept: 0,
        capped: 0,
        dialog: false,
        alert_title: None,
    };
    let children: Vec<Node> = top
        .iter()
        .enumerate()
        .map(|(i, r)| build(r, &format!("n{i}"), false, false, None, &mut cx))
        .collect();
    let title = cx.alert_title.clone().unwrap_or_else(|| cx.package.clone());
    let mut root = Node::new(
        window_handle(&package).0,
        if cx.dialog {
            Role::Dialog
        } else {
            Role::Window
        },
        title.clone(),
    );
    root.bounds = children.first().and_then(|c| c.bounds);
    root.child_count = children.len() as u64;
    root.children = children;
    deskpilot_core::names::tidy_names(&mut root);
    Ok(Dump {
        root,
        package,
        title,
        nodes,
        capped: cx.capped,
    })
}

fn count(nodes: &[Raw]) -> u64 {
    nodes.iter().map(|n| 1 + count(&n.children)).sum()
}

/// The index path of a handle (`n0.3.1`); the window's own handle has none.
pub(crate) fn path_of(h: &Handle) -> Option<&str> {
    let s = h.as_str();
    s.starts_with('n').then(|| s.split('~').next().unwrap_or(s))
}

/// Whether the element of handle `inner` lies inside the element of `outer` (or is
/// it).
pub(crate) fn within(outer: &Handle, inner: &Handle) -> bool {
    match (path_of(outer), path_of(inner)) {
        (Some(o), Some(i)) => i == o || i.strip_prefix(o).is_some_and(|r| r.starts_with('.')),
        _ => false,
    }
}

/// Finds a node by handle.
pub(crate) fn find<'a>(root: &'a Node, h: &Handle) -> Option<&'a Node> {
    root.walk().find(|n| &n.handle == h)
}

/// The nodes from `root` down to the node of handle `h` (both included); empty
/// when `h` is not in the tree.
pub(crate) fn chain<'a>(root: &'a Node, h: &Handle) -> Vec<&'a Node> {
    fn rec<'a>(n: &'a Node, h: &Handle, out: &mut Vec<&'a Node>) -> bool {
        out.push(n);
        if &n.handle == h || n.children.iter().any(|c| rec(c, h, out)) {
            return true;
        }
        out.pop();
        false
    }
    let mut out = Vec::new();
    rec(root, h, &mut out);
    out
}

/// The deepest node under (`x`, `y`) that takes taps (action `click` or
/// `long_click`), later siblings first (they are drawn on top): where Android
/// delivers a touch at that point.
pub(crate) fn touch_target(root: &Node, x: i32, y: i32) -> Option<&Node> {
    fn rec(n: &Node, x: i32, y: i32) -> Option<&Node> {
        if let Some(b) = n.bounds
            && !b.contains_point(x, y)
        {
            return None;
        }
        if let Some(r) = n.children.iter().rev().find_map(|c| rec(c, x, y)) {
            return Some(r);
        }
        n.actions
            .iter()
            .any(|a| a == "click" || a == "long_click")
            .then_some(n)
    }
    rec(root, x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every class of [`CLASS_ROLES`], with the role it must map to. The test fails
    /// when a class is added to the table without a line here.
    const EXPECTED: &[(&str, Role)] = &[
        ("android.widget.Button", Role::Button),
        ("android.widget.ImageButton", Role::Button),
        ("android.widget.TextView", Role::Text),
        ("android.widget.EditText", Role::Textbox),
        ("android.widget.AutoCompleteTextView", Role::Textbox),
        ("android.widget.MultiAutoCompleteTextView", Role::Textbox),
        ("android.widget.CheckBox", Role::Checkbox),
        ("android.widget.Switch", Role::Checkbox),
        ("android.widget.ToggleButton", Role::Checkbox),
        ("android.widget.CompoundButton", Role::Checkbox),
        ("android.widget.CheckedTextView", Role::Checkbox),
        ("android.widget.RadioButton", Role::Radio),
        ("android.widget.RadioGroup", Role::Group),
        ("android.widget.ImageView", Role::Image),
        ("android.widget.ListView", Role::List),
        ("android.widget.GridView", Role::List),
        ("android.widget.ExpandableListView", Role::List),
        ("androidx.recyclerview.widget.RecyclerView", Role::List),
        ("android.support.v7.widget.RecyclerView", Role::List),
        ("android.widget.ScrollView", Role::Group),
        ("android.widget.HorizontalScrollView", Role::Group),
        ("android.widget.LinearLayout", Role::Group),
        ("android.widget.FrameLayout", Role::Group),
        ("android.widget.RelativeLayout", Role::Group),
        ("android.widget.GridLayout", Role::Group),
        ("android.widget.TableLayout", Role::Table),
        ("android.widget.TableRow", Role::Row),
        ("android.view.ViewGroup", Role::Group),
        ("android.view.View", Role::Group),
        ("androidx.viewpager.widget.ViewPager", Role::Group),
        ("android.support.v4.view.ViewPager", Role::Group),
        ("android.widget.SeekBar", Role::Slider),
        ("android.widget.RatingBar", Role::Slider),
        ("android.widget.ProgressBar", Role::Progressbar),
        ("android.widget.NumberPicker", Role::Spinbutton),
        ("android.widget.Spinner", Role::Combobox),
        ("android.widget.TabWidget", Role::Tablist),
        ("android.app.ActionBar$Tab", Role::Tab),
        ("androidx.appcompat.app.ActionBar$Tab", Role::Tab),
        ("android.widget.Toolbar", Role::Toolbar),
        ("android.webkit.WebView", Role::Document),
    ];

    #[test]
    fn every_mapped_class_has_its_role() {
        for (class, role) in EXPECTED {
            assert_eq!(role_of(class), *role, "{class}");
        }
        for (class, _) in CLASS_ROLES {
            assert!(
                EXPECTED.iter().any(|(c, _)| c == class),
                "{class} is mapped but not tested"
            );
        }
        assert_eq!(CLASS_ROLES.len(), EXPECTED.len(), "a class is listed twice");
        for other in [
            "com.example.FancyThing",
            "android.widget.button",
            "",
            "TextView",
        ] {
            assert_eq!(role_of(other), Role::Unknown, "{other:?}");
        }
    }

    #[test]
    fn bounds_parse_to_pixels() {
        assert_eq!(
            parse_bounds("[0,63][1080,210]"),
            Some(Bounds::new(0, 63, 1080, 147))
        );
        assert_eq!(parse_bounds("garbage"), None);
        assert_eq!(parse_bounds("[5,5][1,1]"), Some(Bounds::new(5, 5, 0, 0)));
    }

    fn node(attrs: &str, inner: &str) -> String {
        let base = [
            ("index", "0"),
            ("text", ""),
            ("resource-id", ""),
            ("class", "android.widget.FrameLayout"),
            ("package", "com.x"),
            ("content-desc", ""),
            ("checkable", "false"),
            ("checked", "false"),
            ("clickable", "false"),
            ("enabled", "true"),
            ("focusable", "false"),
            ("focused", "false"),
            ("scrollable", "false"),
            ("long-clickable", "false"),
            ("password", "false"),
            ("selected", "false"),
            ("bounds", "[0,0][1080,2400]"),
        ];
        let given: Vec<(&str, &str)> = attrs
            .split("\" ")
            .filter(|s| !s.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once("=\"").expect("k=\"v\"");
                (k, v.trim_end_matches('"'))
            })
            .collect();
        let mut s = String::from("<node");
        for (k, v) in base {
            let v = given.iter().find(|(g, _)| *g == k).map_or(v, |(_, gv)| gv);
            s.push_str(&format!(" {k}=\"{v}\""));
        }
        if inner.is_empty() {
            s.push_str(" />");
        } else {
            s.push_str(&format!(">{inner}</node>"));
        }
        s
    }

    fn dump(inner: &str) -> String {
        format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{}</hierarchy>",
            node("", inner)
        )
    }

    #[test]
    fn fields_states_and_no_password_text() {
        let xml = dump(&format!(
            "{}{}{}",
            node(
                r#"text="me" resource-id="com.x:id/user" class="android.widget.EditText" content-desc="User" clickable="true" focusable="true" focused="true" bounds="[10,10][110,60]""#,
                ""
            ),
            node(
                r#"text="hunter2" resource-id="com.x:id/pw" class="android.widget.EditText" enabled="false" password="true" bounds="[10,70][110,120]""#,
                ""
            ),
            node(
                r#"text="Remember" class="android.widget.CheckBox" checkable="true" checked="true" clickable="true" selected="true" bounds="[10,130][110,180]""#,
                ""
            ),
        ));
        let d = parse_dump(&xml, Limits::default()).unwrap();
        assert_eq!(d.package, "com.x");
        assert_eq!(d.root.handle.as_str(), "screen:com.x");
        assert_eq!(d.root.role, Role::Window);
        let top = &d.root.children[0];
        assert!(top.handle.as_str().starts_with("n0~"));
        let user = &top.children[0];
        assert!(user.handle.as_str().starts_with("n0.0~"));
        assert_eq!(user.role, Role::Textbox);
        assert_eq!(user.value.as_deref(), Some("me"));
        assert_eq!(user.name, "User");
        assert_eq!(user.automation_id.as_deref(), Some("com.x:id/user"));
        assert!(
            user.has(State::Focused) && user.has(State::Editable) && !user.has(State::Disabled)
        );
        assert_eq!(user.actions, ["click"]);
        let pw = &top.children[1];
        assert!(pw.has(State::Password) && pw.has(State::Disabled));
        assert_eq!(pw.value, None);
        let cb = &top.children[2];
        assert!(cb.has(State::Checked) && cb.has(State::Selected));
        assert!(!format!("{:?}", d.root).contains("hunter2"));
    }

    #[test]
    fn a_tappable_row_is_named_by_its_texts_and_its_switch_stays() {
        let title = node(
            r#"text="Airplane mode" resource-id="android:id/title" class="android.widget.TextView" bounds="[210,10][800,60]""#,
            "",
        );
        let summary = node(
            r#"text="Off" resource-id="android:id/summary" class="android.widget.TextView" bounds="[210,60][800,110]""#,
            "",
        );
        let texts = node(
            r#"class="android.widget.RelativeLayout" bounds="[210,10][800,110]""#,
            &format!("{title}{summary}"),
        );
        let switch = node(
            r#"resource-id="android:id/switch_widget" class="android.widget.Switch" checkable="true" bounds="[900,30][1000,90]""#,
            "",
        );
        let row = node(
            r#"class="android.widget.LinearLayout" clickable="true" focusable="true" bounds="[0,0][1080,120]""#,
            &format!("{texts}{switch}"),
        );
        let list = node(
            r#"resource-id="android:id/list" class="androidx.recyclerview.widget.RecyclerView" scrollable="true" bounds="[0,0][1080,2000]""#,
            &row,
        );
        let d = parse_dump(&dump(&list), Limits::default()).unwrap();
        let list = &d.root.children[0].children[0];
        assert_eq!(list.role, Role::List);
        assert_eq!(list.actions, ["scroll"]);
        let row = &list.children[0];
        assert_eq!(row.role, Role::Listitem);
        assert_eq!(row.name, "Airplane mode, Off");
        // The texts are said by the row; only the switch is left inside it.
        assert_eq!(row.children.len(), 1, "{row:#?}");
        assert_eq!(row.child_count, 1);
        assert_eq!(row.children[0].role, Role::Checkbox);
        assert_eq!(row.children[0].name, "Airplane mode");
        assert!(row.children[0].handle.as_str().starts_with("n0.0.0.1~"));
        // The same row with another label is another element.
        let moved = d.root.children[0].children[0].children[0].handle.clone();
        let again = parse_dump(&dump(&list_with_title("Battery")), Limits::default()).unwrap();
        assert_ne!(again.root.children[0].children[0].children[0].handle, moved);
    }

    fn list_with_title(t: &str) -> String {
        let title = node(
            &format!(r#"text="{t}" class="android.widget.TextView" bounds="[210,10][800,60]""#),
            "",
        );
        let row = node(
            r#"class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1080,120]""#,
            &title,
        );
        node(
            r#"class="androidx.recyclerview.widget.RecyclerView" bounds="[0,0][1080,2000]""#,
            &row,
        )
    }

    #[test]
    fn an_alert_is_a_dialog_titled_by_its_title() {
        let title = node(
            r#"text="Delete file?" resource-id="com.x:id/alertTitle" class="android.widget.TextView" bounds="[100,100][900,200]""#,
            "",
        );
        let ok = node(
            r#"text="Delete" resource-id="android:id/button1" class="android.widget.Button" clickable="true" bounds="[700,300][900,400]""#,
            "",
        );
        let panel = node(
            r#"resource-id="com.x:id/parentPanel" class="android.widget.LinearLayout" bounds="[72,90][1008,420]""#,
            &format!("{title}{ok}"),
        );
        let d = parse_dump(&dump(&panel), Limits::default()).unwrap();
        assert_eq!(d.root.role, Role::Dialog);
        assert_eq!(d.title, "Delete file?");
        assert_eq!(d.root.name, "Delete file?");
    }

    #[test]
    fn the_node_cap_counts_what_it_leaves_out() {
        let leaves: String = (0..10)
            .map(|i| {
                node(
                    &format!(
                        r#"text="t{i}" class="android.widget.TextView" bounds="[0,{}][10,{}]""#,
                        i * 10,
                        i * 10 + 10
                    ),
                    "",
                )
            })
            .collect();
        let d = parse_dump(
            &dump(&leaves),
            Limits {
                max_nodes: 4,
                text_cap: 1,
            },
        )
        .unwrap();
        assert_eq!(d.nodes, 11);
        assert_eq!(d.capped, 7);
        let top = &d.root.children[0];
        assert_eq!(top.children.len(), 3);
        assert_eq!(top.child_count, 10);
        assert_eq!(top.children[0].name, "t");
    }

    #[test]
    fn taps_land_on_the_deepest_tappable_node() {
        let inner = node(
            r#"text="OK" class="android.widget.Button" clickable="true" bounds="[100,100][200,200]""#,
            "",
        );
        let outer = node(
            r#"class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1000,1000]""#,
            &inner,
        );
        let d = parse_dump(&dump(&outer), Limits::default()).unwrap();
        let hit = touch_target(&d.root, 150, 150).unwrap();
        assert_eq!(hit.name, "OK");
        let hit = touch_target(&d.root, 500, 500).unwrap();
        assert!(hit.handle.as_str().starts_with("n0.0~"));
        assert!(touch_target(&d.root, 1500, 500).is_none());
        assert!(within(&d.root.children[0].handle, &hit.handle));
        assert!(!within(&hit.handle, &d.root.children[0].handle));
        assert_eq!(chain(&d.root, &hit.handle).len(), 3);
    }

    #[test]
    fn broken_dumps_are_errors() {
        assert!(parse_dump("", Limits::default()).is_err());
        assert!(parse_dump("<hierarchy><node class='a'>", Limits::default()).is_err());
        assert!(parse_dump("<hierarchy rotation=\"0\"></hierarchy>", Limits::default()).is_err());
        assert!(
            parse_dump(
                "<hierarchy rotation=\"0\"><node class='a'/>",
                Limits::default()
            )
            .is_err()
        );
    }
}

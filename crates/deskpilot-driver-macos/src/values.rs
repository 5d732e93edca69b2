//! AX attribute values as plain data, and what the driver reads from them.
//!
//! Owns [`AxValue`] (a `CFTypeRef` attribute value, converted once at the FFI edge),
//! [`Attrs`] (the attributes one batched read asks for, in [`READ_ATTRS`] order), and
//! the pure rules that turn them into a node's name, value and range: number
//! formatting, text capping, the check state of a check box. It never calls the
//! Accessibility API.

use crate::geometry::PointsRect;

/// One attribute value, as the FFI layer converts it from its `CFTypeRef`.
///
/// Strings are UTF-8 (converted from `CFString`'s UTF-16); geometry is in global
/// display points (see [`crate::geometry`]).
#[derive(Debug, Clone, PartialEq)]
pub enum AxValue {
    /// `CFBoolean`.
    Bool(bool),
    /// `CFNumber` of an integer type.
    Int(i64),
    /// `CFNumber` of a floating-point type.
    Float(f64),
    /// `CFString` (or the string of a `CFAttributedString`).
    Text(String),
    /// `AXValue` of type `kAXValueCGPointType`, points.
    Point { x: f64, y: f64 },
    /// `AXValue` of type `kAXValueCGSizeType`, points.
    Size { width: f64, height: f64 },
    /// `AXValue` of type `kAXValueCGRectType`, points.
    Rect(PointsRect),
    /// Anything else (an element, an array, a range): its kind, for messages.
    Other(&'static str),
}

impl AxValue {
    /// The value as a number: integers, floats, and booleans (1/0).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AxValue::Int(i) => Some(*i as f64),
            AxValue::Float(f) => Some(*f),
            AxValue::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }

    /// The value as a boolean: `CFBoolean`, or a number (non-zero is true).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AxValue::Bool(b) => Some(*b),
            AxValue::Int(i) => Some(*i != 0),
            _ => None,
        }
    }

    /// The value as text, when it is a string.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            AxValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// The attributes one `AXUIElementCopyMultipleAttributeValues` call reads per element,
/// in this order (the FFI layer builds the `CFArray` of names from it once).
pub const READ_ATTRS: [&str; 17] = [
    "AXRole",
    "AXSubrole",
    "AXTitle",
    "AXDescription",
    "AXValue",
    "AXHelp",
    "AXIdentifier",
    "AXEnabled",
    "AXFocused",
    "AXSelected",
    "AXExpanded",
    "AXDisclosing",
    "AXPosition",
    "AXSize",
    "AXMinValue",
    "AXMaxValue",
    "AXOrientation",
];

/// Extra attributes of the same read that only some roles carry; they follow
/// [`READ_ATTRS`] in the request.
pub const READ_ATTRS_EXTRA: [&str; 3] = ["AXModal", "AXElementBusy", "AXNumberOfCharacters"];

/// The attributes of one element, as one batched read returned them. `None`: the
/// element does not have the attribute (`kAXErrorNoValue`,
/// `kAXErrorAttributeUnsupported`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attrs {
    pub role: String,
    pub subrole: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub value: Option<AxValue>,
    pub help: Option<String>,
    pub identifier: Option<String>,
    pub enabled: Option<bool>,
    pub focused: Option<bool>,
    pub selected: Option<bool>,
    pub expanded: Option<bool>,
    /// `AXDisclosing`: an outline row shows its children.
    pub disclosing: Option<bool>,
    /// `AXPosition` + `AXSize`, global display points.
    pub frame: Option<PointsRect>,
    pub min_value: Option<AxValue>,
    pub max_value: Option<AxValue>,
    /// `AXOrientation`: `AXHorizontalOrientation` or `AXVerticalOrientation`.
    pub orientation: Option<String>,
    pub modal: Option<bool>,
    pub busy: Option<bool>,
    /// `AXNumberOfCharacters` of a text element: its whole length in UTF-16 units.
    pub characters: Option<u64>,
}

impl Attrs {
    /// Builds the record from the values of one batched read, in [`READ_ATTRS`] then
    /// [`READ_ATTRS_EXTRA`] order. Missing trailing values are absent attributes; a
    /// value of the wrong type is taken as absent (never guessed).
    pub fn from_values(values: &[Option<AxValue>]) -> Attrs {
        let at = |i: usize| values.get(i).cloned().flatten();
        let text = |i: usize| at(i).and_then(|v| v.as_text().map(str::to_owned));
        let flag = |i: usize| at(i).and_then(|v| v.as_bool());
        let frame = match (at(12), at(13)) {
            (Some(AxValue::Point { x, y }), Some(AxValue::Size { width, height })) => {
                Some(PointsRect::new(x, y, width, height))
            }
            _ => None,
        };
        let n = READ_ATTRS.len();
        Attrs {
            role: text(0).unwrap_or_default(),
            subrole: text(1),
            title: text(2),
            description: text(3),
            value: at(4),
            help: text(5),
            identifier: text(6),
            enabled: flag(7),
            focused: flag(8),
            selected: flag(9),
            expanded: flag(10),
            disclosing: flag(11),
            frame,
            min_value: at(14),
            max_value: at(15),
            orientation: text(16),
            modal: flag(n),
            busy: flag(n + 1),
            characters: at(n + 2).and_then(|v| match v {
                AxValue::Int(i) if i >= 0 => Some(i as u64),
                _ => None,
            }),
        }
    }

    /// The subrole as a `&str`.
    pub fn subrole(&self) -> Option<&str> {
        self.subrole.as_deref()
    }

    /// A secure text field (`AXSecureTextField`): its value is never read or shown.
    pub fn is_password(&self) -> bool {
        self.subrole() == Some("AXSecureTextField")
    }
}

/// How a check box, radio button, switch or toggle says its state in `AXValue`:
/// 0 off, 1 on, 2 mixed (NSControlStateValueMixed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckState {
    Off,
    On,
    Mixed,
}

/// Roles (with subroles) whose `AXValue` is a check state rather than content.
pub fn is_check_role(role: &str, subrole: Option<&str>) -> bool {
    matches!(role, "AXCheckBox" | "AXRadioButton")
        || (role == "AXButton" && subrole == Some("AXToggle"))
}

/// The check state of a check-like element's value; `None` for a value that is no
/// check state (never guessed).
pub fn check_state(value: &AxValue) -> Option<CheckState> {
    let v = value.as_f64()?;
    [
        (0.0, CheckState::Off),
        (1.0, CheckState::On),
        (2.0, CheckState::Mixed),
    ]
    .into_iter()
    .find(|(n, _)| *n == v)
    .map(|(_, s)| s)
}

/// Formats a number as a node's value: integral values without a fraction (`42`,
/// `-3`), others in Rust's shortest round-trip form (`4512.5`, `0.25`); non-finite
/// values are `None`.
pub fn format_number(v: f64) -> Option<String> {
    if !v.is_finite() {
        return None;
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Some(format!("{}", v as i64))
    } else {
        Some(format!("{v}"))
    }
}

/// A value as a node shows it: text as is, numbers by [`format_number`], booleans as
/// `1`/`0`; geometry and other kinds are not shown (`None`).
pub fn display_value(v: &AxValue) -> Option<String> {
    match v {
        AxValue::Text(s) => Some(s.clone()),
        AxValue::Int(i) => Some(i.to_string()),
        AxValue::Float(f) => format_number(*f),
        AxValue::Bool(b) => Some(if *b { "1" } else { "0" }.to_owned()),
        _ => None,
    }
}

/// Cuts `text` to at most `cap` characters (Unicode scalar values). Returns the
/// head and, when it was cut, the whole text's length in characters.
pub fn cap_text(text: &str, cap: usize) -> (String, Option<u64>) {
    match text.char_indices().nth(cap) {
        None => (text.to_owned(), None),
        Some((byte, _)) => (text[..byte].to_owned(), Some(text.chars().count() as u64)),
    }
}

/// A node's name, value and description from its attributes (pure):
///
/// - name: `AXTitle`, else `AXDescription` (AppKit labels an image button by its
///   description only), else, for static text, its `AXValue`;
/// - value: `AXValue` shown by [`display_value`], capped at `text_cap` characters —
///   never for a secure text field, a check-like element (its value is a state), or
///   static text (its text is its name);
/// - description: `AXDescription` when it is not the name, else `AXHelp`.
///
/// Returns `(name, value, value_length, description)`; `value_length` is the whole
/// text's length in characters when the value was cut.
pub fn naming(a: &Attrs, text_cap: usize) -> (String, Option<String>, Option<u64>, Option<String>) {
    fn non_empty(s: &Option<String>) -> Option<&str> {
        s.as_deref().filter(|t| !t.trim().is_empty())
    }
    let static_text = a.role == "AXStaticText";
    let (name, name_is_description) = match (non_empty(&a.title), non_empty(&a.description)) {
        (Some(t), _) => (t.to_owned(), false),
        (None, Some(d)) => (d.to_owned(), true),
        (None, None) if static_text => (
            a.value
                .as_ref()
                .and_then(AxValue::as_text)
                .map(|t| cap_text(t, text_cap).0)
                .unwrap_or_default(),
            false,
        ),
        (None, None) => (String::new(), false),
    };
    let shows_value = !a.is_password() && !is_check_role(&a.role, a.subrole()) && !static_text;
    let (value, value_length) = match a.value.as_ref().filter(|_| shows_value) {
        Some(v) => match display_value(v) {
            Some(s) => {
                let (head, whole) = cap_text(&s, text_cap);
                (Some(head), whole)
            }
            None => (None, None),
        },
        None => (None, None),
    };
    let description = if name_is_description {
        non_empty(&a.help).map(str::to_owned)
    } else {
        non_empty(&a.description)
            .or(non_empty(&a.help))
            .map(str::to_owned)
    };
    (name, value, value_length, description)
}

/// What `set_value` writes into `AXValue`: a number into a range control (slider,
/// stepper, scroll bar, level indicator) when the text parses as a finite number,
/// else the text.
#[derive(Debug, Clone, PartialEq)]
pub enum NewValue {
    Number(f64),
    Text(String),
}

/// Chooses the [`NewValue`] for `text` on an element of AX role `role` (pure).
pub fn new_value(role: &str, text: &str) -> NewValue {
    let range = matches!(
        role,
        "AXSlider" | "AXIncrementor" | "AXScrollBar" | "AXLevelIndicator" | "AXValueIndicator"
    );
    match text.trim().parse::<f64>() {
        Ok(n) if range && n.is_finite() => NewValue::Number(n),
        _ => NewValue::Text(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Option<AxValue> {
        Some(AxValue::Text(s.into()))
    }

    #[test]
    fn a_batched_read_fills_the_record_in_order() {
        let mut v: Vec<Option<AxValue>> = vec![None; READ_ATTRS.len() + READ_ATTRS_EXTRA.len()];
        v[0] = t("AXTextField");
        v[1] = t("AXSecureTextField");
        v[2] = t("Password");
        v[4] = t("hunter2");
        v[7] = Some(AxValue::Bool(true));
        v[8] = Some(AxValue::Int(1));
        v[12] = Some(AxValue::Point { x: 10.0, y: 20.5 });
        v[13] = Some(AxValue::Size {
            width: 100.0,
            height: 22.0,
        });
        v[READ_ATTRS.len() + 2] = Some(AxValue::Int(7));
        let a = Attrs::from_values(&v);
        assert_eq!(a.role, "AXTextField");
        assert!(a.is_password());
        assert_eq!(a.title.as_deref(), Some("Password"));
        assert_eq!(a.enabled, Some(true));
        assert_eq!(a.focused, Some(true));
        assert_eq!(a.selected, None);
        assert_eq!(a.frame, Some(PointsRect::new(10.0, 20.5, 100.0, 22.0)));
        assert_eq!(a.characters, Some(7));
        // A position without a size is no frame; a wrong type is absent.
        v[13] = t("wide");
        v[7] = t("yes");
        let b = Attrs::from_values(&v);
        assert_eq!(b.frame, None);
        assert_eq!(b.enabled, None);
        // A short reply leaves the rest absent.
        let c = Attrs::from_values(&[t("AXButton")]);
        assert_eq!(c.role, "AXButton");
        assert_eq!(c.title, None);
    }

    #[test]
    fn numbers_format_without_a_needless_fraction() {
        assert_eq!(format_number(42.0).as_deref(), Some("42"));
        assert_eq!(format_number(-3.0).as_deref(), Some("-3"));
        assert_eq!(format_number(4512.5).as_deref(), Some("4512.5"));
        assert_eq!(format_number(0.25).as_deref(), Some("0.25"));
        assert_eq!(format_number(f64::NAN), None);
        assert_eq!(format_number(f64::INFINITY), None);
        assert_eq!(display_value(&AxValue::Int(7)).as_deref(), Some("7"));
        assert_eq!(display_value(&AxValue::Bool(true)).as_deref(), Some("1"));
        assert_eq!(display_value(&AxValue::Point { x: 1.0, y: 2.0 }), None);
    }

    #[test]
    fn text_is_cut_at_characters_not_bytes() {
        assert_eq!(cap_text("héllo", 10), ("héllo".into(), None));
        assert_eq!(cap_text("héllo", 2), ("hé".into(), Some(5)));
        assert_eq!(cap_text("", 0), (String::new(), None));
        assert_eq!(cap_text("ab", 0), (String::new(), Some(2)));
    }

    #[test]
    fn check_states_are_read_from_the_value() {
        assert_eq!(check_state(&AxValue::Int(0)), Some(CheckState::Off));
        assert_eq!(check_state(&AxValue::Int(1)), Some(CheckState::On));
        assert_eq!(check_state(&AxValue::Int(2)), Some(CheckState::Mixed));
        assert_eq!(check_state(&AxValue::Bool(true)), Some(CheckState::On));
        assert_eq!(check_state(&AxValue::Int(5)), None);
        assert_eq!(check_state(&AxValue::Text("1".into())), None);
        assert!(is_check_role("AXCheckBox", None));
        assert!(is_check_role("AXButton", Some("AXToggle")));
        assert!(!is_check_role("AXButton", None));
    }

    #[test]
    fn names_values_and_descriptions_follow_the_rules() {
        let button = Attrs {
            role: "AXButton".into(),
            description: Some("Back".into()),
            help: Some("Go back".into()),
            ..Attrs::default()
        };
        assert_eq!(
            naming(&button, 100),
            ("Back".into(), None, None, Some("Go back".into()))
        );
        let field = Attrs {
            role: "AXTextField".into(),
            title: Some("Name".into()),
            description: Some("Your name".into()),
            value: t("Ada Lovelace"),
            ..Attrs::default()
        };
        assert_eq!(
            naming(&field, 3),
            (
                "Name".into(),
                Some("Ada".into()),
                Some(12),
                Some("Your name".into())
            )
        );
        let secret = Attrs {
            role: "AXTextField".into(),
            subrole: Some("AXSecureTextField".into()),
            value: t("••••"),
            ..Attrs::default()
        };
        assert_eq!(naming(&secret, 100).1, None);
        let label = Attrs {
            role: "AXStaticText".into(),
            value: t("Total: 12"),
            ..Attrs::default()
        };
        assert_eq!(naming(&label, 100), ("Total: 12".into(), None, None, None));
        let check = Attrs {
            role: "AXCheckBox".into(),
            title: Some("Bold".into()),
            value: Some(AxValue::Int(1)),
            ..Attrs::default()
        };
        assert_eq!(naming(&check, 100).1, None);
        let slider = Attrs {
            role: "AXSlider".into(),
            value: Some(AxValue::Float(0.5)),
            ..Attrs::default()
        };
        assert_eq!(naming(&slider, 100).1.as_deref(), Some("0.5"));
    }

    #[test]
    fn set_value_writes_numbers_only_into_range_controls() {
        assert_eq!(new_value("AXSlider", " 42 "), NewValue::Number(42.0));
        assert_eq!(new_value("AXIncrementor", "1.5"), NewValue::Number(1.5));
        assert_eq!(new_value("AXSlider", "NaN"), NewValue::Text("NaN".into()));
        assert_eq!(new_value("AXTextField", "42"), NewValue::Text("42".into()));
        assert_eq!(new_value("AXSlider", "loud"), NewValue::Text("loud".into()));
    }
}

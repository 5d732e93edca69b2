//! Operations an agent can ask for on an element (docs/ARCHITECTURE.md §5).
//!
//! An [`Op`] says *what* to do; the driver picks *how* (a semantic AT-SPI action
//! first, synthetic input only as a declared fallback) and reports the channel used.

use serde::{Deserialize, Serialize};

/// One operation on an element. Serialized as its snake_case name (`"set_value"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    Click,
    DoubleClick,
    RightClick,
    Focus,
    /// Replace the element's text or numeric value with `value`.
    SetValue,
    /// Insert `value` at the caret (or the end), keeping existing text.
    Type,
    /// Empty a text field.
    Clear,
    Toggle,
    Select,
    Expand,
    Collapse,
    /// `value` is one of `up`, `down`, `left`, `right`, `into_view`.
    Scroll,
    /// `value` is the target ref.
    DragTo,
    /// Android navigation keys.
    Back,
    Home,
    Recents,
}

impl Op {
    pub const ALL: [Op; 16] = [
        Op::Click,
        Op::DoubleClick,
        Op::RightClick,
        Op::Focus,
        Op::SetValue,
        Op::Type,
        Op::Clear,
        Op::Toggle,
        Op::Select,
        Op::Expand,
        Op::Collapse,
        Op::Scroll,
        Op::DragTo,
        Op::Back,
        Op::Home,
        Op::Recents,
    ];

    /// The snake_case name used on the wire and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Click => "click",
            Op::DoubleClick => "double_click",
            Op::RightClick => "right_click",
            Op::Focus => "focus",
            Op::SetValue => "set_value",
            Op::Type => "type",
            Op::Clear => "clear",
            Op::Toggle => "toggle",
            Op::Select => "select",
            Op::Expand => "expand",
            Op::Collapse => "collapse",
            Op::Scroll => "scroll",
            Op::DragTo => "drag_to",
            Op::Back => "back",
            Op::Home => "home",
            Op::Recents => "recents",
        }
    }

    /// Parses [`Op::as_str`] names; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// Whether the op needs a `value` argument.
    pub fn needs_value(self) -> bool {
        matches!(self, Op::SetValue | Op::Type | Op::Scroll | Op::DragTo)
    }

    /// Ops that only move focus or the viewport: they change no application data.
    pub fn is_navigation(self) -> bool {
        matches!(self, Op::Focus | Op::Scroll | Op::Expand | Op::Collapse)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.as_str()), Some(op));
            assert_eq!(
                serde_json::to_string(&op).unwrap(),
                format!("\"{}\"", op.as_str())
            );
        }
    }
}

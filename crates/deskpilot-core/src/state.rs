//! Element states (docs/ARCHITECTURE.md §3), a small closed set shared by all platforms.
//!
//! Platform drivers map their own state sets onto these; a state with no counterpart
//! is dropped, never guessed. Serialized as a list of lowercase names.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One state an element can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum State {
    /// Holds keyboard focus.
    Focused,
    /// Present but not operable (AT-SPI: not `ENABLED`/`SENSITIVE`).
    Disabled,
    Checked,
    Selected,
    Expanded,
    Collapsed,
    /// Accepts text input.
    Editable,
    /// A secret-entry field: its value is never rendered or recorded.
    Password,
    /// Not on screen (AT-SPI: not `SHOWING`, or outside the window's extents).
    Offscreen,
    /// Loading or otherwise not ready.
    Busy,
    Multiselectable,
    /// A dialog that blocks its parent window.
    Modal,
    /// Can take keyboard focus.
    Focusable,
    /// A container that creates its children on demand (AT-SPI `MANAGES_DESCENDANTS`):
    /// its children must never be enumerated, only read by visible range.
    ManagesDescendants,
    /// A range control (slider, scroll bar, progress bar) laid out left to right.
    Horizontal,
    /// A range control laid out top to bottom.
    Vertical,
    /// A text that takes line breaks (AT-SPI `MULTI_LINE`): Enter in it writes a line
    /// break rather than submitting a form. Not shown in snapshot text.
    Multiline,
}

impl State {
    /// Every state, in declaration order (also the bit order of [`StateSet`]).
    pub const ALL: [State; 17] = [
        State::Focused,
        State::Disabled,
        State::Checked,
        State::Selected,
        State::Expanded,
        State::Collapsed,
        State::Editable,
        State::Password,
        State::Offscreen,
        State::Busy,
        State::Multiselectable,
        State::Modal,
        State::Focusable,
        State::ManagesDescendants,
        State::Horizontal,
        State::Vertical,
        State::Multiline,
    ];

    /// The lowercase name used in snapshot text and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Focused => "focused",
            State::Disabled => "disabled",
            State::Checked => "checked",
            State::Selected => "selected",
            State::Expanded => "expanded",
            State::Collapsed => "collapsed",
            State::Editable => "editable",
            State::Password => "password",
            State::Offscreen => "offscreen",
            State::Busy => "busy",
            State::Multiselectable => "multiselectable",
            State::Modal => "modal",
            State::Focusable => "focusable",
            State::ManagesDescendants => "manages_descendants",
            State::Horizontal => "horizontal",
            State::Vertical => "vertical",
            State::Multiline => "multiline",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of [`State`]s, stored as a bit set; iterates in [`State::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StateSet(u32);

impl StateSet {
    /// The empty set.
    pub const fn empty() -> Self {
        StateSet(0)
    }

    pub fn contains(self, s: State) -> bool {
        self.0 & s.bit() != 0
    }

    pub fn insert(&mut self, s: State) {
        self.0 |= s.bit();
    }

    pub fn remove(&mut self, s: State) {
        self.0 &= !s.bit();
    }

    /// Returns the set with `s` added (builder style, for fixtures and drivers).
    #[must_use]
    pub fn with(mut self, s: State) -> Self {
        self.insert(s);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = State> {
        State::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

impl FromIterator<State> for StateSet {
    fn from_iter<I: IntoIterator<Item = State>>(iter: I) -> Self {
        let mut set = StateSet::empty();
        for s in iter {
            set.insert(s);
        }
        set
    }
}

impl Serialize for StateSet {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_seq(self.iter())
    }
}

/// Published as what it serializes to: a list of distinct state names.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for StateSet {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StateSet".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "items": generator.subschema_for::<State>(),
            "uniqueItems": true,
        })
    }
}

impl<'de> Deserialize<'de> for StateSet {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let v: Vec<State> = Vec::deserialize(de)?;
        Ok(v.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_round_trips_through_json() {
        let set: StateSet = [State::Focused, State::Editable].into_iter().collect();
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["focused","editable"]"#);
        let back: StateSet = serde_json::from_str(&json).unwrap();
        assert_eq!(back, set);
        assert!(back.contains(State::Editable));
        assert!(!back.contains(State::Password));
    }

    #[test]
    fn every_state_has_its_own_bit() {
        let all: StateSet = State::ALL.into_iter().collect();
        assert_eq!(all.iter().count(), State::ALL.len());
    }
}

//! AT-SPI state sets → deskpilot [`StateSet`] (docs/ARCHITECTURE.md §3).
//!
//! Owns the decoding of the two-word AT-SPI state set (`au`, bit *n* = state code *n*)
//! and the single mapping onto the unified states. A state with no counterpart is
//! dropped, never guessed. It never calls the bus.

use atspi::State as S;
use deskpilot_core::{State, StateSet};

use super::role_map::code;

/// An AT-SPI state set as it arrives on the wire: bit *n* set ⇔ state code *n*
/// (`atspi::State` uses the same bit layout). Unknown bits are kept, not rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct RawStates(pub u64);

impl RawStates {
    /// Decodes `au` (low word first). Extra words are ignored; missing ones are zero.
    pub fn from_words(words: &[u32]) -> Self {
        let lo = u64::from(words.first().copied().unwrap_or(0));
        let hi = u64::from(words.get(1).copied().unwrap_or(0));
        RawStates(lo | (hi << 32))
    }

    /// True when the AT-SPI state is set.
    pub fn has(self, s: S) -> bool {
        self.0 & (s as u64) != 0
    }

    /// Mapped and laid out on screen (`SHOWING` and `VISIBLE`).
    pub fn on_screen(self) -> bool {
        self.has(S::Showing) && self.has(S::Visible)
    }

    /// The container creates its children on demand; never enumerate them.
    pub fn manages_descendants(self) -> bool {
        self.has(S::ManagesDescendants)
    }

    /// The object is being destroyed (`DEFUNCT`): treat it as vanished.
    pub fn defunct(self) -> bool {
        self.has(S::Defunct)
    }
}

/// Maps an AT-SPI state set to unified states. `role_code` is the AT-SPI role code
/// (the password role and toggle buttons carry meaning that the state set alone
/// does not).
///
/// - `offscreen` when `SHOWING` or `VISIBLE` is absent;
/// - `disabled` when both `ENABLED` and `SENSITIVE` are absent (GTK and Qt clear both
///   on an insensitive widget);
/// - `checked` from `CHECKED`, and from `PRESSED` on a toggle button;
/// - `collapsed` from `COLLAPSED`, or `EXPANDABLE` without `EXPANDED`;
/// - `editable` from `EDITABLE` unless `READ_ONLY` is also set;
/// - `password` for the password-text role;
/// - `focused`, `selected`, `expanded`, `busy`, `multiselectable`, `modal`,
///   `focusable`, `manages_descendants`, `multiline` one to one.
pub fn map_states(raw: RawStates, role_code: u32) -> StateSet {
    let mut out = StateSet::empty();
    let mut put = |cond: bool, s: State| {
        if cond {
            out.insert(s);
        }
    };
    put(!raw.on_screen(), State::Offscreen);
    put(raw.has(S::Focused), State::Focused);
    put(
        !raw.has(S::Enabled) && !raw.has(S::Sensitive),
        State::Disabled,
    );
    put(
        raw.has(S::Checked) || (role_code == code::TOGGLE_BUTTON && raw.has(S::Pressed)),
        State::Checked,
    );
    put(raw.has(S::Selected), State::Selected);
    put(raw.has(S::Expanded), State::Expanded);
    put(
        raw.has(S::Collapsed) || (raw.has(S::Expandable) && !raw.has(S::Expanded)),
        State::Collapsed,
    );
    put(
        raw.has(S::Editable) && !raw.has(S::ReadOnly),
        State::Editable,
    );
    put(role_code == code::PASSWORD_TEXT, State::Password);
    put(raw.has(S::Busy), State::Busy);
    put(raw.has(S::Multiselectable), State::Multiselectable);
    put(raw.has(S::Modal), State::Modal);
    put(raw.has(S::Focusable), State::Focusable);
    put(raw.manages_descendants(), State::ManagesDescendants);
    put(raw.has(S::MultiLine), State::Multiline);
    // Orientation only where it says how the value moves: range controls.
    let range = matches!(
        super::role_map::map_role_code(role_code),
        deskpilot_core::Role::Slider
            | deskpilot_core::Role::Scrollbar
            | deskpilot_core::Role::Progressbar
            | deskpilot_core::Role::Spinbutton
    );
    put(range && raw.has(S::Horizontal), State::Horizontal);
    put(range && raw.has(S::Vertical), State::Vertical);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(states: &[S]) -> RawStates {
        RawStates(states.iter().fold(0u64, |acc, s| acc | (*s as u64)))
    }

    const SHOWN: [S; 4] = [S::Showing, S::Visible, S::Enabled, S::Sensitive];

    #[test]
    fn words_decode_low_word_first() {
        // mousepad's insensitive "Redo" item as GetItems reported it: [0x40400000, 0].
        let r = RawStates::from_words(&[0x4040_0000, 0]);
        assert!(r.has(S::Visible));
        assert!(r.has(S::Selectable));
        assert!(!r.has(S::Showing));
        // LibreOffice's sheet grid: bit 31 is MANAGES_DESCENDANTS.
        assert!(RawStates::from_words(&[0xc24c_1980, 0]).manages_descendants());
        assert_eq!(RawStates::from_words(&[1, 2]).0, (2u64 << 32) | 1);
        assert_eq!(RawStates::from_words(&[]).0, 0);
    }

    #[test]
    fn shown_enabled_widget_has_no_negative_states() {
        let s = map_states(raw(&SHOWN), 43);
        assert!(s.is_empty(), "{s:?}");
    }

    #[test]
    fn each_rule_maps_as_documented() {
        let with = |extra: &[S]| {
            let mut v = SHOWN.to_vec();
            v.extend_from_slice(extra);
            raw(&v)
        };
        let cases: Vec<(RawStates, u32, State)> = vec![
            (raw(&[S::Visible, S::Enabled]), 43, State::Offscreen),
            (raw(&[S::Showing, S::Enabled]), 43, State::Offscreen),
            (raw(&[S::Showing, S::Visible]), 43, State::Disabled),
            (with(&[S::Focused]), 61, State::Focused),
            (with(&[S::Checked]), 7, State::Checked),
            (with(&[S::Pressed]), code::TOGGLE_BUTTON, State::Checked),
            (with(&[S::Selected]), 32, State::Selected),
            (with(&[S::Expandable, S::Expanded]), 91, State::Expanded),
            (with(&[S::Expandable]), 91, State::Collapsed),
            (with(&[S::Collapsed]), 91, State::Collapsed),
            (with(&[S::Editable]), 61, State::Editable),
            (with(&[]), code::PASSWORD_TEXT, State::Password),
            (with(&[S::Busy]), 82, State::Busy),
            (with(&[S::Multiselectable]), 31, State::Multiselectable),
            (with(&[S::Modal]), 16, State::Modal),
            (with(&[S::Focusable]), 43, State::Focusable),
            (with(&[S::MultiLine]), 61, State::Multiline),
            (
                with(&[S::ManagesDescendants]),
                55,
                State::ManagesDescendants,
            ),
        ];
        for (r, role, want) in cases {
            assert!(map_states(r, role).contains(want), "{want:?} from {r:?}");
        }
        // Negative cases of the same rules.
        assert!(!map_states(with(&[S::Pressed]), 43).contains(State::Checked));
        assert!(!map_states(with(&[S::Editable, S::ReadOnly]), 61).contains(State::Editable));
        assert!(!map_states(with(&[S::Expandable, S::Expanded]), 91).contains(State::Collapsed));
        assert!(
            !map_states(raw(&[S::Showing, S::Visible, S::Sensitive]), 43).contains(State::Disabled)
        );
    }
}

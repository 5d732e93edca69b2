//! Windows states → deskpilot [`StateSet`] (docs/ARCHITECTURE.md §3, §6b).
//!
//! Owns the single mapping of MSAA `STATE_SYSTEM_*` bits and USER32 window styles
//! onto the unified states. A state with no counterpart is dropped, never guessed.
//! It never calls the system.

use deskpilot_core::{State, StateSet};

/// MSAA state bits (`oleacc.h`).
pub mod msaa {
    pub const UNAVAILABLE: u32 = 0x1;
    pub const SELECTED: u32 = 0x2;
    pub const FOCUSED: u32 = 0x4;
    pub const PRESSED: u32 = 0x8;
    pub const CHECKED: u32 = 0x10;
    pub const READONLY: u32 = 0x40;
    pub const EXPANDED: u32 = 0x200;
    pub const COLLAPSED: u32 = 0x400;
    pub const BUSY: u32 = 0x800;
    pub const INVISIBLE: u32 = 0x8000;
    pub const OFFSCREEN: u32 = 0x10000;
    pub const FOCUSABLE: u32 = 0x100000;
    pub const MULTISELECTABLE: u32 = 0x1000000;
    pub const PROTECTED: u32 = 0x20000000;
}

/// USER32 window style bits this driver reads.
pub mod style {
    pub const WS_VISIBLE: u32 = 0x1000_0000;
    pub const WS_DISABLED: u32 = 0x0800_0000;
    pub const WS_TABSTOP: u32 = 0x0001_0000;
    pub const ES_MULTILINE: u32 = 0x4;
    pub const ES_PASSWORD: u32 = 0x20;
    pub const ES_READONLY: u32 = 0x800;
    pub const LBS_MULTIPLESEL: u32 = 0x8;
    pub const LBS_EXTENDEDSEL: u32 = 0x800;
}

/// Maps an MSAA state set: `unavailable` → disabled, `invisible`/`offscreen` →
/// offscreen, `protected` → password, `checked` (and `pressed` on a toggle) →
/// checked; focused, selected, expanded, collapsed, busy, focusable and
/// multiselectable one to one.
pub fn msaa_states(bits: u32) -> StateSet {
    let mut out = StateSet::empty();
    for (bit, s) in [
        (msaa::UNAVAILABLE, State::Disabled),
        (msaa::SELECTED, State::Selected),
        (msaa::FOCUSED, State::Focused),
        (msaa::CHECKED, State::Checked),
        (msaa::EXPANDED, State::Expanded),
        (msaa::COLLAPSED, State::Collapsed),
        (msaa::BUSY, State::Busy),
        (msaa::INVISIBLE, State::Offscreen),
        (msaa::OFFSCREEN, State::Offscreen),
        (msaa::FOCUSABLE, State::Focusable),
        (msaa::MULTISELECTABLE, State::Multiselectable),
        (msaa::PROTECTED, State::Password),
    ] {
        if bits & bit != 0 {
            out.insert(s);
        }
    }
    out
}

/// States a window's style says: not `WS_VISIBLE` → offscreen, `WS_DISABLED` →
/// disabled, `WS_TABSTOP` → focusable; for an edit (`class` "Edit", compared
/// without case) editable unless `ES_READONLY`, `ES_PASSWORD` → password,
/// `ES_MULTILINE` → multiline; for a list box `LBS_MULTIPLESEL`/`LBS_EXTENDEDSEL` →
/// multiselectable.
pub fn style_states(class: &str, bits: u32) -> StateSet {
    let mut out = StateSet::empty();
    let mut put = |c: bool, s: State| {
        if c {
            out.insert(s);
        }
    };
    put(bits & style::WS_VISIBLE == 0, State::Offscreen);
    put(bits & style::WS_DISABLED != 0, State::Disabled);
    put(bits & style::WS_TABSTOP != 0, State::Focusable);
    if class.eq_ignore_ascii_case("edit") {
        put(bits & style::ES_READONLY == 0, State::Editable);
        put(bits & style::ES_PASSWORD != 0, State::Password);
        put(bits & style::ES_MULTILINE != 0, State::Multiline);
    }
    if class.eq_ignore_ascii_case("listbox") {
        put(
            bits & (style::LBS_MULTIPLESEL | style::LBS_EXTENDEDSEL) != 0,
            State::Multiselectable,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msaa_bits_map_one_to_one() {
        // Wine 8.0's edit: focusable and focused.
        let s = msaa_states(0x100004);
        assert!(s.contains(State::Focused) && s.contains(State::Focusable));
        assert!(!s.contains(State::Disabled));
        assert!(msaa_states(msaa::UNAVAILABLE).contains(State::Disabled));
        assert!(msaa_states(msaa::INVISIBLE).contains(State::Offscreen));
        assert!(msaa_states(msaa::PROTECTED).contains(State::Password));
        assert!(msaa_states(msaa::CHECKED).contains(State::Checked));
        assert!(msaa_states(0).is_empty());
        // Bits with no counterpart (hot-tracked, default, linked) are dropped.
        assert!(msaa_states(0x80 | 0x100 | 0x400000).is_empty());
    }

    #[test]
    fn styles_say_visibility_enabling_and_edit_kinds() {
        let visible = style::WS_VISIBLE | style::WS_TABSTOP;
        let s = style_states("Edit", visible | style::ES_PASSWORD);
        assert!(s.contains(State::Editable) && s.contains(State::Password));
        assert!(!s.contains(State::Offscreen));
        assert!(!style_states("EDIT", visible | style::ES_READONLY).contains(State::Editable));
        assert!(style_states("Edit", visible | style::ES_MULTILINE).contains(State::Multiline));
        assert!(style_states("Button", 0).contains(State::Offscreen));
        assert!(style_states("Button", visible | style::WS_DISABLED).contains(State::Disabled));
        assert!(!style_states("Button", visible).contains(State::Editable));
        assert!(
            style_states("ListBox", visible | style::LBS_EXTENDEDSEL)
                .contains(State::Multiselectable)
        );
    }
}

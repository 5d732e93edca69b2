//! Key names as the `keys` request spells them (docs/ARCHITECTURE.md §6 "Keys"):
//! chords (`"ctrl+s shift+Tab Return"`) to X keysyms, and characters to and from
//! keysyms. Pure and shared: the driver presses what [`chord::parse_chords`] returns,
//! and the host's policy classifies the same keysyms, so every spelling of a key
//! (`Return`, `enter`, `ret`, `0xff0d`, `KP_Enter`) is judged as the key it presses.

pub mod chord;
pub mod keysym;

pub use chord::{Chord, MAX_CHORDS, MAX_KEYS_PER_CHORD, parse_chords};
pub use keysym::{Keysym, char_to_keysym, keysym_from_name, keysym_to_char};

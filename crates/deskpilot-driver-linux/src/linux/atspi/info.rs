//! The per-object record the reader works with, whatever produced it.
//!
//! Owns [`NodeInfo`] (what `Cache.GetItems` reports for one object, or what a
//! per-object walk read) and [`Ifaces`], the AT-SPI interfaces the driver uses. Pure
//! data: no bus calls.

use super::handle::ObjRef;
use super::state_map::RawStates;

/// The AT-SPI interfaces the driver cares about, as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Ifaces(u16);

impl Ifaces {
    pub const ACTION: Ifaces = Ifaces(1);
    pub const COMPONENT: Ifaces = Ifaces(1 << 1);
    pub const EDITABLE_TEXT: Ifaces = Ifaces(1 << 2);
    pub const SELECTION: Ifaces = Ifaces(1 << 3);
    pub const TABLE: Ifaces = Ifaces(1 << 4);
    pub const TABLE_CELL: Ifaces = Ifaces(1 << 5);
    pub const TEXT: Ifaces = Ifaces(1 << 6);
    pub const VALUE: Ifaces = Ifaces(1 << 7);
    pub const APPLICATION: Ifaces = Ifaces(1 << 8);

    /// Parses interface names such as `org.a11y.atspi.Text`; unknown names are ignored.
    pub fn from_names<I, S>(names: I) -> Ifaces
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = Ifaces::default();
        for n in names {
            let bit = match n.as_ref().strip_prefix("org.a11y.atspi.") {
                Some("Action") => Ifaces::ACTION,
                Some("Component") => Ifaces::COMPONENT,
                Some("EditableText") => Ifaces::EDITABLE_TEXT,
                Some("Selection") => Ifaces::SELECTION,
                Some("Table") => Ifaces::TABLE,
                Some("TableCell") => Ifaces::TABLE_CELL,
                Some("Text") => Ifaces::TEXT,
                Some("Value") => Ifaces::VALUE,
                Some("Application") => Ifaces::APPLICATION,
                _ => continue,
            };
            out.0 |= bit.0;
        }
        out
    }

    /// True when every interface of `i` is present.
    pub fn has(self, i: Ifaces) -> bool {
        self.0 & i.0 == i.0
    }
}

/// What is known about one accessible object before its details are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub obj: ObjRef,
    /// The parent the object reports; `None` when unknown. LibreOffice reports
    /// parents that are not the object that lists it as a child, so the tree is built
    /// from children lists wherever they were read.
    pub parent: Option<ObjRef>,
    /// Index in parent, `-1` when the bridge did not say (at-spi2-atk's cache leaves
    /// most at `-1`).
    pub index: i32,
    /// Child count as reported; `-1` when unknown (at-spi2-atk reports `-1` for menus
    /// and for LibreOffice's sheet grid, whose real count is 2³¹−1).
    pub child_count: i32,
    /// Children as listed by a legacy cache item, in order.
    pub listed_children: Option<Vec<ObjRef>>,
    /// AT-SPI role code.
    pub role: u32,
    pub name: String,
    pub description: String,
    pub states: RawStates,
    pub ifaces: Ifaces,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_parse() {
        let i = Ifaces::from_names([
            "org.a11y.atspi.Accessible",
            "org.a11y.atspi.Text",
            "org.a11y.atspi.EditableText",
            "org.a11y.atspi.Collection",
            "nonsense",
        ]);
        assert!(i.has(Ifaces::TEXT));
        assert!(i.has(Ifaces::EDITABLE_TEXT));
        assert!(!i.has(Ifaces::ACTION));
        assert!(!i.has(Ifaces::VALUE));
        assert_eq!(Ifaces::from_names(Vec::<String>::new()), Ifaces::default());
    }
}

//! Handles of the macOS driver: format, and the registry that keeps their elements.
//!
//! An `AXUIElementRef` has no persistent id, so the driver keeps each element it has
//! reported in a [`Registry`] and hands out `ax:<pid>:<serial>` (`ax:812:40`): `pid`
//! is the owning process, `serial` the registry's number. The same element (`CFEqual`)
//! read again gets the same handle, so refs stay put across reads. A handle is valid
//! while this driver process lives and the element exists; after a restart, or once
//! the registry dropped it (it keeps the elements of the last reads, at most
//! [`MAX_ELEMENTS`]), it is unknown: `COMPUTER_ELEMENT_NOT_FOUND`, observe again.
//! Pure: the element type is generic, so the bookkeeping is tested without AX.

use std::collections::HashMap;
use std::hash::Hash;

use deskpilot_core::Handle;
use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// The most elements kept: 200,000 (four full reads at the protocol's 50,000-node
/// ceiling). Past it, the elements not seen in the most recent reads are dropped.
pub const MAX_ELEMENTS: usize = 200_000;

/// A parsed handle: the owning process and the registry serial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AxRef {
    pub pid: i32,
    pub serial: u64,
}

impl AxRef {
    /// `ax:<pid>:<serial>`.
    pub fn to_handle(self) -> Handle {
        Handle::new(format!("ax:{}:{}", self.pid, self.serial))
    }

    /// Parses `ax:<pid>:<serial>`.
    ///
    /// Errors: `COMPUTER_INVALID_ARGUMENT` for anything else (a handle of another
    /// driver, a typo).
    pub fn parse(h: &Handle) -> Result<AxRef> {
        let bad = || {
            ComputerError::invalid(format!(
                "{:?} is not a macOS driver handle (ax:<pid>:<serial>); list windows or observe again",
                h.as_str()
            ))
        };
        let rest = h.as_str().strip_prefix("ax:").ok_or_else(bad)?;
        let (pid, serial) = rest.split_once(':').ok_or_else(bad)?;
        let pid: i32 = pid.parse().map_err(|_| bad())?;
        let serial: u64 = serial.parse().map_err(|_| bad())?;
        if pid <= 0 {
            return Err(bad());
        }
        Ok(AxRef { pid, serial })
    }
}

/// The error for a handle the registry does not hold (any more).
pub fn unknown_handle(r: AxRef) -> ComputerError {
    ComputerError::new(
        ErrorCode::ElementNotFound,
        format!(
            "element {} is not known to this driver (it was read before the driver restarted, or too many reads ago); observe again to get current refs",
            r.to_handle()
        ),
    )
    .with_detail(serde_json::json!({ "handle": r.to_handle().as_str() }))
}

struct Entry<E> {
    element: E,
    pid: i32,
    seen: u64,
}

/// Elements by serial and serials by element, with the read ("generation") each was
/// last seen in.
pub struct Registry<E> {
    by_serial: HashMap<u64, Entry<E>>,
    by_element: HashMap<E, u64>,
    next: u64,
    generation: u64,
    cap: usize,
}

impl<E: Eq + Hash + Clone> Default for Registry<E> {
    fn default() -> Self {
        Registry::with_cap(MAX_ELEMENTS)
    }
}

impl<E: Eq + Hash + Clone> Registry<E> {
    /// A registry keeping at most `cap` elements (at least 1).
    pub fn with_cap(cap: usize) -> Self {
        Registry {
            by_serial: HashMap::new(),
            by_element: HashMap::new(),
            next: 1,
            generation: 0,
            cap: cap.max(1),
        }
    }

    /// Starts a new read: elements interned from now on are seen in it.
    pub fn begin_read(&mut self) {
        self.generation += 1;
    }

    /// The handle of `element` of process `pid`: its existing serial when the
    /// registry holds an equal element, else a new one. Drops the least recently
    /// seen elements when over the cap.
    pub fn intern(&mut self, element: E, pid: i32) -> AxRef {
        if let Some(&serial) = self.by_element.get(&element)
            && let Some(e) = self.by_serial.get_mut(&serial)
            && e.pid == pid
        {
            e.seen = self.generation;
            return AxRef { pid, serial };
        }
        let serial = self.next;
        self.next += 1;
        self.by_element.insert(element.clone(), serial);
        self.by_serial.insert(
            serial,
            Entry {
                element,
                pid,
                seen: self.generation,
            },
        );
        if self.by_serial.len() > self.cap {
            self.prune();
        }
        AxRef { pid, serial }
    }

    /// The element of a handle, when held and of the same process.
    pub fn get(&self, r: AxRef) -> Option<&E> {
        self.by_serial
            .get(&r.serial)
            .filter(|e| e.pid == r.pid)
            .map(|e| &e.element)
    }

    /// Elements held.
    pub fn len(&self) -> usize {
        self.by_serial.len()
    }

    /// True when no element is held.
    pub fn is_empty(&self) -> bool {
        self.by_serial.is_empty()
    }

    /// Drops the least recently seen elements down to three quarters of the cap, so
    /// pruning runs once per many interns.
    fn prune(&mut self) {
        let keep = self.cap * 3 / 4;
        let mut order: Vec<(u64, u64)> = self.by_serial.iter().map(|(s, e)| (e.seen, *s)).collect();
        order.sort_unstable();
        let drop = order.len().saturating_sub(keep);
        for (_, serial) in order.into_iter().take(drop) {
            if let Some(e) = self.by_serial.remove(&serial) {
                self.by_element.remove(&e.element);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_reject_other_drivers() {
        let r = AxRef {
            pid: 812,
            serial: 40,
        };
        assert_eq!(r.to_handle().as_str(), "ax:812:40");
        assert_eq!(AxRef::parse(&r.to_handle()), Ok(r));
        for bad in [
            ":1.42|/org/a11y/atspi/accessible/3",
            "ax:812",
            "ax:x:1",
            "ax:812:-1",
            "ax:0:1",
            "ax:-4:1",
            "AX:812:40",
            "",
        ] {
            let e = AxRef::parse(&Handle::new(bad)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad}");
        }
        assert_eq!(unknown_handle(r).code, ErrorCode::ElementNotFound);
    }

    #[test]
    fn the_same_element_keeps_its_handle() {
        let mut reg: Registry<&str> = Registry::default();
        reg.begin_read();
        let a = reg.intern("ok-button", 10);
        let b = reg.intern("cancel-button", 10);
        assert_ne!(a, b);
        reg.begin_read();
        assert_eq!(reg.intern("ok-button", 10), a);
        assert_eq!(reg.get(a), Some(&"ok-button"));
        // Another process's handle with the same serial is not this element.
        assert_eq!(
            reg.get(AxRef {
                pid: 11,
                serial: a.serial
            }),
            None
        );
        assert_eq!(reg.len(), 2);
    }

    #[test]
    fn the_least_recently_seen_elements_are_dropped_past_the_cap() {
        let mut reg: Registry<u32> = Registry::with_cap(8);
        reg.begin_read();
        let old: Vec<AxRef> = (0..4).map(|i| reg.intern(i, 1)).collect();
        reg.begin_read();
        let fresh: Vec<AxRef> = (100..105).map(|i| reg.intern(i, 1)).collect();
        // 9 > 8: pruned to 6, the four old ones first.
        assert_eq!(reg.len(), 6);
        assert!(fresh.iter().all(|r| reg.get(*r).is_some()));
        let kept: Vec<bool> = old.iter().map(|r| reg.get(*r).is_some()).collect();
        assert_eq!(kept, [false, false, false, true]);
        // A dropped element read again gets a new serial.
        let again = reg.intern(0, 1);
        assert_eq!(again.serial, fresh.last().unwrap().serial + 1);
        assert_eq!(reg.get(old[0]), None);
    }
}

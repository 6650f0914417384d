//! A value in RAM as its entry holds it (`Hot`): the value, and its
//! records on flash (its backing; a string's change log).
//!
//! Invariants:
//! 1. The backing, when set, is a record of exactly the value's bytes and
//!    the entry's version (demoting the value again costs no write).
//! 2. A string records its changes (`types::changes`) only while its log
//!    is here; a clone records nothing.

use super::Value;
use crate::base::FlashLoc;
use crate::types::changes::{ChangeLog, Recorder};
use bytes::Bytes;

/// A value in RAM, inline in its entry (a cold entry is packed in its
/// bucket's cell, so the 48 bytes cost only the boxed entries).
#[derive(Clone, Debug)]
pub struct Hot {
    pub value: Value,
    /// Its records on flash (`backing`, `start_str_log`).
    flash: OnFlash,
}

/// A hot value's records on flash: a record holding the same bytes (its
/// backing), and, for a string that records its changes in place
/// (`types::changes`), its log. (One field of 16 bytes: a string's log
/// beside the backing would grow every hot entry.)
#[derive(Debug, Default)]
enum OnFlash {
    #[default]
    None,
    Backing(FlashLoc),
    Logged(Box<StrLog>),
}

/// A string that records its changes: its backing, and its log (empty
/// until the journal's next image of it starts one).
#[derive(Debug)]
struct StrLog {
    backing: Option<FlashLoc>,
    rec: Recorder,
}

impl Clone for OnFlash {
    /// A clone records nothing (`types::changes` invariant 2).
    fn clone(&self) -> OnFlash {
        match self {
            OnFlash::None => OnFlash::None,
            OnFlash::Backing(l) => OnFlash::Backing(*l),
            OnFlash::Logged(s) => OnFlash::of(s.backing),
        }
    }
}

impl OnFlash {
    /// Only a backing, if any.
    fn of(backing: Option<FlashLoc>) -> OnFlash {
        backing.map_or(OnFlash::None, OnFlash::Backing)
    }
}

impl Hot {
    pub fn new(value: Value, backing: Option<FlashLoc>) -> Hot {
        Hot {
            value,
            flash: OnFlash::of(backing),
        }
    }
    /// A flash record holding the same bytes, if any.
    pub fn backing(&self) -> Option<FlashLoc> {
        match &self.flash {
            OnFlash::None => None,
            OnFlash::Backing(l) => Some(*l),
            OnFlash::Logged(s) => s.backing,
        }
    }
    /// Sets the backing; returns the one it replaces.
    pub fn set_backing(&mut self, loc: Option<FlashLoc>) -> Option<FlashLoc> {
        match &mut self.flash {
            OnFlash::Logged(s) => std::mem::replace(&mut s.backing, loc),
            f => {
                let old = std::mem::replace(f, OnFlash::of(loc));
                match old {
                    OnFlash::Backing(l) => Some(l),
                    _ => None,
                }
            }
        }
    }
    pub fn take_backing(&mut self) -> Option<FlashLoc> {
        self.set_backing(None)
    }
    /// Whether the value is a string that records its changes (its log
    /// may not have started yet: `start_str_log`).
    pub fn records_str(&self) -> bool {
        matches!(self.flash, OnFlash::Logged(_))
    }
    /// Makes the string record its changes with `rec` (started, or empty:
    /// the journal starts it at its next image).
    pub fn start_str_log(&mut self, rec: Recorder) {
        let backing = self.backing();
        self.flash = OnFlash::Logged(Box::new(StrLog { backing, rec }));
    }
    /// Takes the string's log out (it records no more).
    pub fn take_str_log(&mut self) -> Option<Box<ChangeLog>> {
        match std::mem::take(&mut self.flash) {
            OnFlash::Logged(s) => {
                let StrLog { backing, mut rec } = *s;
                self.flash = OnFlash::of(backing);
                rec.stop()
            }
            other => {
                self.flash = other;
                None
            }
        }
    }
    /// The string's bytes and its recorder, if it records.
    pub fn str_recorder_mut(&mut self) -> Option<(&Bytes, &mut Recorder)> {
        match (&self.value, &mut self.flash) {
            (Value::Str(b), OnFlash::Logged(s)) => Some((b, &mut s.rec)),
            _ => None,
        }
    }
    /// The chain of records of a value that records its changes
    /// (`types::changes`), if any.
    pub fn chain(&self) -> Option<&crate::types::changes::Chain> {
        match (&self.value, &self.flash) {
            (Value::Coll(c), _) => c.change_log().map(|l| &l.chain),
            (Value::Str(_), OnFlash::Logged(s)) => s.rec.log().map(|l| &l.chain),
            (Value::Str(_), _) => None,
        }
    }
    pub fn chain_mut(&mut self) -> Option<&mut crate::types::changes::Chain> {
        match (&mut self.value, &mut self.flash) {
            (Value::Coll(c), _) => c.change_log_mut().map(|l| &mut l.chain),
            (Value::Str(_), OnFlash::Logged(s)) => s.rec.log_mut().map(|l| &mut l.chain),
            (Value::Str(_), _) => None,
        }
    }
    /// The records of its chain (none for a value that does not record).
    pub fn chain_locs(&self) -> Vec<FlashLoc> {
        self.chain().map(|c| c.locs().collect()).unwrap_or_default()
    }
}

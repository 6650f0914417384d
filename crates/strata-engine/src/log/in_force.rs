//! Records of which one is in force at a time: the database mapping
//! (kind 7, `keyspace::swapdb`) and the function libraries (kind 10,
//! `keyspace::functions`). The one with the largest sequence number is in
//! force; it is live (its bytes counted like a value's record, moved by
//! the collector), and older ones are garbage from the moment it is
//! published. Publishing and moving happen under the writer lock, so
//! records are published in the order they were written.

use crate::base::FlashLoc;
use crate::Inner;
use parking_lot::Mutex;

impl Inner {
    /// The record in force of records of `kind`, for the kinds that have
    /// one (the database mapping, the function libraries).
    pub(crate) fn in_force(&self, kind: crate::flash::format::RecordKind) -> Option<&InForce> {
        use crate::flash::format::RecordKind;
        match kind {
            RecordKind::DbMap => Some(&self.keys.dbmap.record),
            RecordKind::Functions => Some(&self.keys.functions.record),
            _ => None,
        }
    }
}

/// Where the record in force is (None: none written or recovered).
#[derive(Default)]
pub struct InForce(Mutex<Option<FlashLoc>>);

impl InForce {
    /// Whether `loc` is the record in force (the collector's check).
    pub fn is(&self, loc: FlashLoc) -> bool {
        *self.0.lock() == Some(loc)
    }

    /// Makes `loc` the record in force (caller holds the writer lock).
    pub(crate) fn publish(&self, inner: &Inner, loc: FlashLoc) {
        let old = self.0.lock().replace(loc);
        inner.retain_flash(loc);
        if let Some(old) = old {
            inner.release_flash_quiet(old);
        }
    }

    /// The collector moved the record at `old` to `new`: `new` is in
    /// force if `old` still was (caller holds the writer lock).
    pub(crate) fn moved(&self, inner: &Inner, old: FlashLoc, new: FlashLoc) {
        let mut rec = self.0.lock();
        if *rec == Some(old) {
            *rec = Some(new);
            inner.release_flash_quiet(old);
            inner.retain_flash(new);
        }
    }
}

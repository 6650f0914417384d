//! Records of which one is in force at a time: the database mapping
//! (kind 7, `keyspace::swapdb`) and the function libraries (kind 10,
//! `keyspace::functions`). The one with the largest sequence number is in
//! force; it is live (its bytes counted like a value's record, moved by
//! the collector), and older ones are garbage from the moment it is
//! published. Publishing and moving happen under the writer lock, so
//! records are published in the order they were written.

use crate::base::FlashLoc;
use crate::flash::format::{RecordHeader, RecordKind};
use crate::log::writer::{AppendError, SegmentWriter};
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

/// Appends the function libraries in force (kind 10) with sequence number
/// `seq`; None when none were ever set.
pub(crate) fn append_functions(
    inner: &Inner,
    w: &mut SegmentWriter,
    seq: u64,
) -> Result<Option<FlashLoc>, AppendError> {
    let Some(value) = inner.keys.functions.current() else {
        return Ok(None);
    };
    append_in_force(inner, w, RecordKind::Functions, seq, &value).map(Some)
}

/// Appends a record of which one is in force (`log::in_force`): no key,
/// database 0, no TTL.
fn append_in_force(
    inner: &Inner,
    w: &mut SegmentWriter,
    kind: RecordKind,
    seq: u64,
    value: &[u8],
) -> Result<FlashLoc, AppendError> {
    let h = RecordHeader {
        kind,
        db: 0,
        key_len: 0,
        value_len: value.len() as u32,
        seq,
        expire_at_ms: 0,
    };
    w.append(&h, &[], value, inner.flash.capacity)
}

/// Appends the current database mapping (kind 7) with sequence number `seq`.
pub(crate) fn append_db_map(
    inner: &Inner,
    w: &mut SegmentWriter,
    seq: u64,
) -> Result<FlashLoc, AppendError> {
    // Read under a shard lock (swapdb invariant 1).
    let ids = {
        let _g = inner.shards[0].lock();
        inner.keys.dbmap.snapshot()
    };
    let value = crate::flash::format::dbmap::encode(&ids);
    append_in_force(inner, w, RecordKind::DbMap, seq, &value)
}

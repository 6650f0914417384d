//! What happens when a key changes: WATCH's stamps, the journal's note,
//! and the observer. Keyspace notifications and client tracking (the
//! server) observe every change of a key's state through one hook, called
//! under the key's shard lock, in the order the changes happen.
//!
//! Invariants:
//! 1. Every change of a key that a client can see reports one call: a new
//!    key `Created`, a new value or TTL `Written`, a removal `Deleted`
//!    (DEL, an emptied collection, RENAME's source, a TTL in the past),
//!    `Expired` or `Evicted`; a change Redis makes without signalling the
//!    key modified (a stream's consumer groups: XREADGROUP, XACK ...)
//!    `Quiet`, which breaks no WATCH. FLUSHDB, FLUSHALL and SWAPDB report nothing
//!    per key (as Redis, whose notifications skip them).
//! 2. Nothing the engine does on its own that leaves the value as it was
//!    (demotion, promotion, the collector's moves, journaling) reports.
//! 3. The observer must not call into the engine (a shard lock is held).

use crate::Inner;
use std::sync::Arc;

pub use crate::base::KeyChange;

/// The hook (module doc).
pub trait KeyObserver: Send + Sync {
    fn key_changed(&self, db: usize, key: &[u8], change: KeyChange);
}

impl Inner {
    /// Notes a change of `key` (a new value, a deletion, a TTL) for WATCH,
    /// the observer and the journal, saying what changed; caller holds the
    /// key's shard lock (so notes of one key are in order).
    pub(crate) fn note_key_as(&self, db: usize, key: &[u8], how: KeyChange) {
        self.report(db, key, how);
        self.journal_key(db, key);
    }

    /// WATCH's stamp and the observer, for a change `how` of `key`.
    fn report(&self, db: usize, key: &[u8], how: KeyChange) {
        if how != KeyChange::Quiet {
            self.keys.watches.touched(self, db, key);
        }
        self.observe(db, key, how);
    }

    /// As `note_key_as`, for the entry at `idx` that a write just stored:
    /// when it is a string in RAM (and the queue's value notes have room),
    /// the journal's note carries its state (`Note::Value`), so the journal
    /// writes it without looking the key up again. Caller holds the key's
    /// shard lock, as for `note_key_as`.
    pub(crate) fn note_stored(
        &self,
        sh: &crate::index::Shard,
        db: usize,
        key: &[u8],
        idx: usize,
        how: KeyChange,
    ) {
        use crate::index::{Slot, Value};
        let stored = match (sh.dbs[db].boxed_at(idx), u32::try_from(idx)) {
            (Some(e), Ok(pos)) if self.journal.enabled && self.journal.takes_values() => {
                match &e.slot {
                    // (A string that records its changes is captured by
                    // the journal: `types::changes`.)
                    Slot::Hot(h) if !h.records_str() => match &h.value {
                        Value::Str(value) => Some((e, pos, value)),
                        Value::Coll(_) => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        };
        let Some((e, pos, value)) = stored else {
            return self.note_key_as(db, key, how);
        };
        self.report(db, key, how);
        self.journal.push(crate::log::journal::Note::Value(
            crate::log::journal::ValueNote {
                db: self.keys.dbmap.id(db),
                pos,
                key: crate::index::CompactKey::from(key),
                value: crate::log::journal::copies::for_note(value),
                version: e.version,
                expire_at_ms: e.expire_at_ms,
                client_flags: e.client_flags,
            },
        ));
    }

    /// Queues `key` for the journal (nothing else).
    pub(crate) fn journal_key(&self, db: usize, key: &[u8]) {
        if self.journal.enabled {
            self.journal.push(crate::log::journal::Note::Key {
                db: self.keys.dbmap.id(db),
                key: crate::index::CompactKey::from(key),
            });
        }
    }

    /// Reports a change to the observer, if one is installed.
    #[inline]
    pub(crate) fn observe(&self, db: usize, key: &[u8], change: KeyChange) {
        if let Some(o) = self.keys.observer.get() {
            o.key_changed(db, key, change);
        }
    }
}

impl crate::Engine {
    /// Installs the observer of key changes (once; later calls are
    /// ignored).
    pub fn set_observer(&self, o: Arc<dyn KeyObserver>) {
        let _ = self.inner.keys.observer.set(o);
    }
}

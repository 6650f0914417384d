//! Who is told when a key changes: keyspace notifications and client
//! tracking (the server) observe every change of a key's state through
//! one hook, called under the key's shard lock, in the order the changes
//! happen.
//!
//! Invariants:
//! 1. Every change of a key that a client can see reports one call: a new
//!    key `Created`, a new value or TTL `Written`, a removal `Deleted`
//!    (DEL, an emptied collection, RENAME's source, a TTL in the past),
//!    `Expired` or `Evicted`. FLUSHDB, FLUSHALL and SWAPDB report nothing
//!    per key (as Redis, whose notifications skip them).
//! 2. Nothing the engine does on its own that leaves the value as it was
//!    (demotion, promotion, the collector's moves, journaling) reports.
//! 3. The observer must not call into the engine (a shard lock is held).

use crate::Inner;
use std::sync::Arc;

/// What happened to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyChange {
    Created,
    Written,
    Deleted,
    Expired,
    Evicted,
}

/// The hook (module doc).
pub trait KeyObserver: Send + Sync {
    fn key_changed(&self, db: usize, key: &[u8], change: KeyChange);
}

impl Inner {
    /// Reports a change to the observer, if one is installed.
    #[inline]
    pub(crate) fn observe(&self, db: usize, key: &[u8], change: KeyChange) {
        if let Some(o) = self.observer.get() {
            o.key_changed(db, key, change);
        }
    }
}

impl crate::Engine {
    /// Installs the observer of key changes (once; later calls are
    /// ignored).
    pub fn set_observer(&self, o: Arc<dyn KeyObserver>) {
        let _ = self.inner.observer.set(o);
    }
}

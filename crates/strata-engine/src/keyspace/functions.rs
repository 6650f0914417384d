//! The server's function libraries (FUNCTION LOAD and friends): one blob
//! the engine keeps durable for the server, which alone knows what it
//! holds (Redis's FUNCTION DUMP payload). The engine never reads it.
//!
//! Invariants:
//! 1. Each change replaces the whole blob and takes a sequence number
//!    under this module's lock, so the order of sequence numbers is the
//!    order of changes. With `appendonly yes` the change is noted for the
//!    journal in that same critical section; the journal writes the blob
//!    current when it writes the note (a later change's note writes it
//!    again), as a record of kind 10 (docs/format.md).
//! 2. The record with the largest sequence number is in force and live
//!    (`log::in_force`); recovery installs it. A checkpoint taken after
//!    any change (or after recovering one) writes the blob in force as a
//!    record of its tail, so a restart from it knows it, also with
//!    `appendonly no`.
//! 3. FLUSHALL, FLUSHDB and SWAPDB do not touch it, as in Redis.

use crate::log::in_force::InForce;
use crate::{Engine, Inner};
use bytes::Bytes;
use parking_lot::Mutex;

/// The blob and its log record.
#[derive(Default)]
pub struct Functions {
    blob: Mutex<Option<Bytes>>,
    /// The record of the blob in force.
    pub record: InForce,
}

impl Functions {
    /// The blob now (None: never set, nothing recovered).
    pub fn current(&self) -> Option<Bytes> {
        self.blob.lock().clone()
    }

    /// Whether a checkpoint must log the blob (invariant 2).
    pub fn needs_record(&self) -> bool {
        self.blob.lock().is_some()
    }

    /// Installs the blob recovery found.
    pub(crate) fn recovered(&self, blob: Bytes) {
        *self.blob.lock() = Some(blob);
    }
}

impl Engine {
    /// The function libraries' blob kept by the last run or this one.
    pub fn functions(&self) -> Option<Bytes> {
        self.inner.keys.functions.current()
    }

    /// Replaces the function libraries' blob (module doc).
    pub fn set_functions(&self, blob: Bytes) {
        let inner: &Inner = &self.inner;
        let mut b = inner.keys.functions.blob.lock();
        *b = Some(blob);
        if inner.journal.enabled {
            let seq = inner.next_seq();
            inner
                .journal
                .push(crate::log::journal::Note::Functions { seq });
        }
    }
}

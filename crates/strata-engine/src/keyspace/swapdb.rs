//! SWAPDB: logical databases (what SELECT names) over stable *database ids*
//! (what records and checkpoint entries carry).
//!
//! An entry's records always name the id of the database it was written
//! in; SWAPDB swaps which logical database each of two ids stands for,
//! swapping the two maps of every shard in RAM, so it costs O(shards) and
//! no I/O, and the records of a terabyte of cold values stay valid. The
//! mapping itself is logged as a record of kind 7 (docs/format.md); the
//! latest one by sequence number is in force, and recovery replays records
//! by id, then arranges the maps by the recovered mapping.
//!
//! Invariants:
//! 1. Entry `(logical d, key)` lives in `shard.dbs[d]` and its records name
//!    id `id(d)`. Conversions happen under a shard lock; SWAPDB changes
//!    the mapping only while holding every shard lock (in index order), so
//!    a command, the journal, demotion, the collector and checkpoints each
//!    see one mapping for the whole of a critical section.
//! 2. Journal notes carry ids, not logical numbers: a note taken before a
//!    swap still names the entry it was taken for.
//! 3. The record of the mapping in force is live (counted like a value's
//!    record, moved by the collector); older ones are garbage. Without any
//!    SWAPDB the mapping is the identity and no such record exists.

use crate::log::in_force::InForce;
use crate::{Engine, EngineError, Inner};
use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

/// The logical-to-id mapping of the databases (module doc).
pub struct DbMapping {
    /// Logical database -> id.
    ids: Box<[AtomicU16]>,
    /// Id -> logical database.
    logical: Box<[AtomicU16]>,
    /// The log record of the mapping in force.
    pub record: InForce,
    /// Some SWAPDB ran (this run), or a mapping was recovered.
    swapped: std::sync::atomic::AtomicBool,
    /// Changes of the mapping so far (a walk that releases shard locks
    /// between steps sees whether the maps moved under it).
    changes: std::sync::atomic::AtomicU64,
}

impl DbMapping {
    pub fn identity(databases: usize) -> DbMapping {
        let n = || (0..databases).map(|d| AtomicU16::new(d as u16)).collect();
        DbMapping {
            ids: n(),
            logical: n(),
            record: InForce::default(),
            swapped: std::sync::atomic::AtomicBool::new(false),
            changes: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The id of logical database `d` (caller holds a shard lock).
    pub fn id(&self, d: usize) -> u16 {
        self.ids.get(d).map_or(d as u16, |a| a.load(Relaxed))
    }

    /// The logical database of id `id` (caller holds a shard lock).
    pub fn logical(&self, id: u16) -> usize {
        self.logical
            .get(id as usize)
            .map_or(id as usize, |a| a.load(Relaxed) as usize)
    }

    /// How many times the mapping changed (caller holds a shard lock:
    /// a change holds them all).
    pub fn changes(&self) -> u64 {
        self.changes.load(Relaxed)
    }

    /// Logical database -> id, as the record of kind 7 holds it.
    pub fn snapshot(&self) -> Vec<u16> {
        self.ids.iter().map(|a| a.load(Relaxed)).collect()
    }

    /// Whether a checkpoint must log the mapping: some SWAPDB changed it
    /// or one was recovered (with `appendonly no` nothing else logs it; a
    /// record exists only then).
    pub fn needs_record(&self) -> bool {
        self.swapped.load(Relaxed)
    }

    /// Installs `ids` (logical -> id; a permutation) at recovery.
    pub(crate) fn set(&self, ids: &[u16]) {
        self.swapped.store(true, Relaxed);
        self.changes.fetch_add(1, Relaxed);
        for (d, &id) in ids.iter().enumerate() {
            self.ids[d].store(id, Relaxed);
            self.logical[id as usize].store(d as u16, Relaxed);
        }
    }

    fn swap(&self, a: usize, b: usize) {
        self.swapped.store(true, Relaxed);
        self.changes.fetch_add(1, Relaxed);
        let (ia, ib) = (self.id(a), self.id(b));
        self.ids[a].store(ib, Relaxed);
        self.ids[b].store(ia, Relaxed);
        self.logical[ib as usize].store(a as u16, Relaxed);
        self.logical[ia as usize].store(b as u16, Relaxed);
    }
}

impl Inner {
    /// Notes the mapping for the journal; caller holds every shard lock.
    fn note_db_map(&self) {
        if self.journal.enabled {
            let seq = self.next_seq();
            self.journal.push(crate::log::journal::Note::DbMap { seq });
        }
    }
}

impl Engine {
    /// SWAPDB: databases `a` and `b` trade contents, atomically for every
    /// client (module doc). Both must be below `databases`.
    pub fn swap_db(&self, a: usize, b: usize) -> Result<(), EngineError> {
        let inner = &self.inner;
        if a >= inner.keys.databases || b >= inner.keys.databases {
            return Err(EngineError::NoSuchDb);
        }
        if a == b {
            return Ok(());
        }
        let mut guards: Vec<_> = inner.shards.iter().map(|s| s.lock()).collect();
        for g in guards.iter_mut() {
            g.swap_dbs(a, b);
        }
        inner.keys.dbmap.swap(a, b);
        inner.note_db_map();
        drop(guards);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flash::format::dbmap::{decode, encode};

    #[test]
    fn a_mapping_round_trips_and_only_permutations_decode() {
        let m = DbMapping::identity(4);
        m.swap(0, 2);
        m.swap(2, 3);
        let ids = m.snapshot();
        assert_eq!(ids, vec![2, 1, 3, 0]);
        for (d, &id) in ids.iter().enumerate() {
            assert_eq!(m.logical(id), d);
        }
        assert_eq!(decode(&encode(&ids), 4), Some(ids));
        assert_eq!(decode(&encode(&[0, 0, 1, 2]), 4), None);
        assert_eq!(decode(&encode(&[0, 1, 2, 4]), 4), None);
        assert_eq!(decode(&encode(&[0, 1, 2, 3, 4]), 4), None);
        // A run with more databases than the one that wrote it.
        assert_eq!(decode(&encode(&[1, 0]), 4), Some(vec![1, 0, 2, 3]));
    }
}

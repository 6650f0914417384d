//! The part machinery every chunked collection shares (docs/collections.md):
//! a collection in parts, each one flash record (kind 9, a *chunk*) under a
//! head record (kind 8), is seen by the engine's journal, demotion,
//! collector, checkpoint and recovery only through [`Dir`]. Hashes and sets
//! (`chunked`), lists (`chunked::list`), sorted sets (`chunked::zset`),
//! streams (`stream`) and big strings (`bigstr`) implement it; nothing here
//! knows any of them.
//!
//! Rooms: `dir` the directory trait, its head and what it says of a part;
//! `clock` the demoter's hand over the parts; `changes` the list of changed
//! parts; `packed` a part's bookkeeping in 32 bytes; `chains` the records that hold a logged part's state (its image
//! and part change records); this file the hash ranges parts are named by.
//!
//! Invariants:
//! 1. A part named by hash is the dyadic range `[low, range_high(low,
//!    depth)]`, `depth <= MAX_DEPTH`; its elements are those whose
//!    `elem_hash` falls in it.
//! 2. `elem_hash` is stable across builds and restarts: records and
//!    checkpoints name hash ranges.

pub mod chains;
mod changes;
mod clock;
mod dir;
pub mod packed;

pub use chains::{PartChain, PartChains, PartName};
pub use changes::Changes;
pub(crate) use clock::clock_walk;
pub use clock::PartClock;
pub use dir::cold_room;
pub(crate) use dir::settle;
pub use dir::{Dir, DirHead, PartInfo, PeekPlan, ScanStep};

pub use crate::base::MAX_DEPTH;

/// The partition hash of an element: xxh3-64, stable across builds and
/// restarts (records and checkpoints name hash ranges).
pub fn elem_hash(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(b)
}

/// Last hash of the dyadic range starting at `low` at `depth`.
pub fn range_high(low: u64, depth: u8) -> u64 {
    match depth {
        0 => u64::MAX,
        1..=63 => low | (u64::MAX >> depth),
        _ => low,
    }
}

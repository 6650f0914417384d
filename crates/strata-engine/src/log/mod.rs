//! The log: the flash log as the database. What writes it, what keeps it
//! small, and what rebuilds the index from it.
//!
//! - [`writer`]: the one `SegmentWriter`, which appends records to the open
//!   segment in large sequential writes (journal, demotion and collector
//!   all go through it);
//! - [`journal`]: with `appendonly yes`, every change of a key reaches the
//!   log as one record, synced per `appendfsync`;
//! - [`collector`]: frees mostly-dead segments by moving their live records;
//! - [`checkpoint`]: the index written to a file, so a restart replays only
//!   the log after it;
//! - [`recovery`]: rebuilds the index at start (checkpoint + tail, or a full
//!   scan);
//! - [`persistence`]: SAVE, BGSAVE and shutdown, on top of the above.
//!
//! The record and segment layouts are in `crate::flash::format` and
//! docs/format.md; each part's invariants are in its module doc.

pub mod checkpoint;
pub mod collector;
pub mod journal;
pub mod persistence;
pub mod recovery;
pub mod writer;

//! The log: the flash log as the database. What writes it, what keeps it
//! small, and what rebuilds the index from it.
//!
//! - [`writer`]: the one `SegmentWriter`, which appends records to the open
//!   segment in large sequential writes (journal, demotion and collector
//!   all go through it);
//! - [`journal`]: with `appendonly yes`, every change of a key reaches the
//!   log as one record (a chunked collection's: the parts it changed),
//!   synced per `appendfsync`;
//! - `chunks`: writing a chunked collection's changed parts (journal,
//!   demotion and checkpoint saves share it), and the collector's liveness
//!   check and moves of chunk and head records;
//! - [`collector`]: frees mostly-dead segments by moving their live records;
//! - [`checkpoint`]: the index written to a file, so a restart replays only
//!   the log after it;
//! - [`recovery`]: rebuilds the index at start (checkpoint + tail, or a full
//!   scan);
//! - [`persistence`]: SAVE, BGSAVE and shutdown, on top of the above;
//! - `in_force`: the records of which only the latest counts (the
//!   database mapping, the function libraries).
//!
//! The record and segment layouts are in `crate::flash::format` and
//! docs/format.md; each part's invariants are in its module doc.

pub mod checkpoint;
pub(crate) mod chunks;
pub mod collector;
pub(crate) mod in_force;
pub mod journal;
mod part_chains;
pub mod persistence;
pub mod recovery;
pub mod writer;

/// Reads the record at `loc` and returns its value if it is the record of
/// `key` with sequence number `seq` and its checksum verifies (blocking:
/// background threads and recovery only).
pub(crate) fn read_value_blocking(
    inner: &crate::Inner,
    key: &[u8],
    loc: crate::base::FlashLoc,
    seq: u64,
) -> Option<Vec<u8>> {
    read_record_blocking(inner, key, loc).and_then(|(s, v)| (s == seq).then_some(v))
}

/// The sequence number and value of key `key`'s record at `loc`, read on
/// this thread (None if it cannot be read or is another key's).
pub(crate) fn read_record_blocking(
    inner: &crate::Inner,
    key: &[u8],
    loc: crate::base::FlashLoc,
) -> Option<(u64, Vec<u8>)> {
    use crate::flash::buf::{align_down, align_up, AlignedBuf};
    let seg = inner.flash.table.get(loc.segment)?;
    let start = align_down(loc.offset as u64);
    let end = align_up(loc.offset as usize + loc.len as usize) as u64;
    let (buf, r) = crate::flash::io::read_blocking(
        &*inner.flash.io,
        seg.file.clone(),
        start,
        AlignedBuf::zeroed((end - start) as usize),
    );
    let off = (loc.offset as u64 - start) as usize;
    let rec_end = off + loc.len as usize;
    match r {
        Ok(n) if n >= rec_end => {
            match crate::flash::format::decode_record(buf.get(off..rec_end)?) {
                Ok(rec) if rec.key == key => Some((rec.header.seq, rec.value.to_vec())),
                _ => None,
            }
        }
        _ => None,
    }
}

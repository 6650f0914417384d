//! Hints for the index lookups of the records the replay reaches next
//! (`index::map::prefetch`). Finding a key costs three cache misses, each
//! waiting for the one before (the table's control bytes, the slot, the
//! bucket); replaying millions of records into an index of millions of
//! keys, those misses were most of the replay's time. A cursor runs ahead
//! of the replay in the segment's buffer: `2 * DIST` records ahead it
//! hints a record's probe (control bytes and slot), `DIST` ahead its
//! bucket, so each record's misses overlap the records before it.
//!
//! Only hints: a hint never changes what a lookup finds. The cursor
//! parses headers alone (no checksum); a record it cannot parse (damage)
//! ends the hints of the segment, and one it misreads hints a wrong line.

use crate::flash::buf::{align_up, PAGE};
use crate::flash::format::{self, DecodeError, RecordKind, RECORD_HEADER_LEN};
use crate::Inner;
use std::collections::VecDeque;

/// Records between a bucket's hint and its lookup (and again between the
/// probe's hint and the bucket's).
const DIST: usize = 8;

/// Where a record's key is looked up: its shard, database and hash.
type Lookup = (usize, usize, u64);

/// The cursor (module doc).
pub(super) struct Ahead {
    /// The next record the probe stage reads.
    pos: usize,
    /// The records from the one being replayed on: (shard, database, hash)
    /// of a record whose key the replay looks up, and whether its bucket
    /// was hinted.
    queue: VecDeque<(Option<Lookup>, bool)>,
}

impl Ahead {
    /// A cursor for a replay starting at `pos`.
    pub(super) fn new(pos: usize) -> Ahead {
        Ahead {
            pos,
            queue: VecDeque::with_capacity(2 * DIST + 1),
        }
    }

    /// Called as the replay reaches its next record: hints the records
    /// ahead of it.
    pub(super) fn step(&mut self, inner: &Inner, buf: &[u8]) {
        while self.queue.len() <= 2 * DIST && self.pos < buf.len() {
            let hint = self.probe_next(inner, buf);
            self.queue.push_back((hint, false));
        }
        if let Some((Some((si, d, hash)), hinted)) = self.queue.get_mut(DIST) {
            if !*hinted {
                *hinted = true;
                if let Some(map) = inner.shards[*si].lock().dbs.get(*d) {
                    map.prefetch_bucket(*hash);
                }
            }
        }
        self.queue.pop_front();
    }

    /// Reads the record at the cursor and hints its probe (None if the
    /// replay does not look its key up); moves the cursor past it.
    fn probe_next(&mut self, inner: &Inner, buf: &[u8]) -> Option<Lookup> {
        loop {
            let pos = self.pos;
            if pos >= buf.len() {
                return None;
            }
            let in_page = pos % PAGE;
            if in_page != 0 && PAGE - in_page < format::MIN_BYTES_IN_PAGE {
                self.pos = align_up(pos);
                continue;
            }
            let h = match format::decode_header(&buf[pos..]) {
                Ok(h) => h,
                Err(DecodeError::Padding) => {
                    self.pos = align_up(pos + 1);
                    continue;
                }
                Err(_) => {
                    self.pos = buf.len();
                    return None;
                }
            };
            self.pos = pos.saturating_add(h.record_len());
            let looked_up = matches!(
                h.kind,
                RecordKind::Value
                    | RecordKind::ValueFlags
                    | RecordKind::ValueMeta
                    | RecordKind::Collection
                    | RecordKind::Tombstone
            );
            let key_end = pos + RECORD_HEADER_LEN + h.key_len as usize;
            let key = buf.get(pos + RECORD_HEADER_LEN..key_end)?;
            if !looked_up {
                return None;
            }
            let si = inner.shard_index(key);
            let d = h.db as usize;
            let hash = inner.shards[si].lock().dbs.get(d)?.prefetch_probe(key);
            return Some((si, d, hash));
        }
    }
}

//! Replaying the log: what each record does to the index (values win by
//! sequence number, tombstones and flush records delete older states, the
//! latest database mapping is kept), atomic batches (members held until
//! their end says the batch is whole; members the log ends after are
//! dropped), and resynchronising after damage.

use super::RecoveryReport;
use crate::base::FlashLoc;
use crate::clock::now_secs;
use crate::flash::buf::{align_up, PAGE};
use crate::flash::format::{self, DecodeError, ItemMeta, RecordKind, ALL_DATABASES};
use crate::index::{CompactKey, Entry, Shard, Slot};
use crate::Inner;
use std::collections::HashMap;
use std::path::Path;

/// Replay state: what the scan learned about deletions.
pub(super) struct Replay<'a> {
    pub(super) inner: &'a Inner,
    pub(super) now: u64,
    /// Highest tombstone (or expired-record) sequence number per key.
    pub(super) deleted: HashMap<(u16, Box<[u8]>), u64>,
    /// Keys of a database with a smaller sequence number were flushed.
    pub(super) flushed: Vec<u64>,
    pub(super) max_seq: u64,
    /// The latest database mapping record (SWAPDB): seq, mapping, where.
    pub(super) db_map: Option<(u64, Vec<u16>, FlashLoc)>,
    /// The latest function libraries record: seq, blob, where.
    pub(super) functions: Option<(u64, bytes::Bytes, FlashLoc)>,
    /// Chunk records seen, per (db id, key): applied by `chunks::resolve`.
    pub(super) chunks: HashMap<(u16, Box<[u8]>), Vec<super::cand::Cand>>,
    /// Part change records seen, per (db id, key): applied by
    /// `chunks::resolve` (`part_changes`).
    pub(super) part_changes: HashMap<(u16, Box<[u8]>), Vec<super::part_changes::PartChangeRec>>,
    /// Change records seen: applied by `changes::resolve_all`.
    pub(super) changes: super::changes::Seen,
    /// The members of an atomic batch seen since its start, not yet
    /// applied (docs/format.md, "Atomic batches").
    pub(super) batch: Vec<Member>,
    pub(super) report: RecoveryReport,
}

/// Whether the held members are all of `end`'s: its count, unless one of
/// its segments is gone (the first or one in the middle of a batch longer
/// than a segment: the collector took it, and the members there that were
/// live live on as plain records).
fn all_members(held: &[Member], end: &format::BatchEnd, all_segments_exist: bool) -> bool {
    if all_segments_exist {
        held.len() == end.count as usize
    } else {
        held.len() <= end.count as usize
    }
}

/// A batch member held until its batch's end.
pub(super) struct Member {
    header: format::RecordHeader,
    key: Box<[u8]>,
    value: Box<[u8]>,
    meta: ItemMeta,
    loc: FlashLoc,
}

impl Replay<'_> {
    fn floor(&self, db: usize) -> u64 {
        self.flushed[db]
    }

    pub(super) fn remove(sh: &mut Shard, db: usize, idx: usize) {
        if let Some((k, e)) = sh.dbs[db].swap_remove_index(idx) {
            sh.acct.entry_removed(db, k.heap_bytes(), &e);
        }
    }

    /// Whether a whole-key record of (db, key) with this sequence number
    /// may still count: its database exists, and no flush or tombstone
    /// seen so far is newer. Notes the sequence number.
    fn admits(&mut self, db: u16, key: &[u8], seq: u64) -> bool {
        let d = db as usize;
        if d >= self.inner.keys.databases {
            return false;
        }
        self.max_seq = self.max_seq.max(seq);
        if seq < self.floor(d) {
            return false;
        }
        !matches!(self.deleted.get(&(db, Box::from(key))), Some(&t) if t > seq)
    }

    /// A value at `loc` for (db, key) with this sequence number and expiry.
    fn value(
        &mut self,
        db: u16,
        key: &[u8],
        seq: u64,
        expire_at_ms: u64,
        loc: FlashLoc,
        meta: ItemMeta,
    ) {
        if !self.admits(db, key, seq) {
            return;
        }
        let d = db as usize;
        let value_len =
            loc.len - (format::RECORD_HEADER_LEN + key.len() + meta.prefix_len()) as u32;
        let expired = expire_at_ms != 0 && expire_at_ms <= self.now;
        let mut guard = self.inner.shard(key).lock();
        let sh = &mut *guard;
        if let Some(idx) = sh.dbs[d].get_index_of(key) {
            if sh.dbs[d].at(idx).version > seq {
                return;
            }
            if expired {
                Self::remove(sh, d, idx);
            } else {
                let e = sh.dbs[d].at_mut(idx);
                sh.acct.remove(&e.slot, e.value_len, e.vtype);
                sh.acct.ttl_remove(d, e.expire_at_ms);
                sh.acct.retype(e.vtype, meta.vtype as u8);
                e.slot = Slot::Cold(loc);
                e.value_len = value_len;
                e.version = seq;
                e.expire_at_ms = expire_at_ms;
                e.client_flags = meta.client_flags;
                e.vtype = meta.vtype as u8;
                sh.acct.add(&e.slot, value_len, e.vtype);
                sh.acct.ttl_add(d, expire_at_ms);
                sh.apply_item_meta(d, idx, &meta);
                return;
            }
        } else if !expired {
            let e = Entry {
                slot: Slot::Cold(loc),
                expire_at_ms,
                version: seq,
                lru_secs: (self.now / 1000) as u32,
                lfu: crate::index::access::LFU_INIT_VAL,
                flags: 0,
                value_len,
                client_flags: meta.client_flags,
                vtype: meta.vtype as u8,
            };
            let k = CompactKey::from(key);
            sh.acct.entry_added(d, k.heap_bytes(), &e);
            let (idx, _) = sh.dbs[d].insert_full(k, e);
            sh.apply_item_meta(d, idx, &meta);
            return;
        }
        drop(guard);
        self.tombstone(db, key, seq);
    }

    /// A chunked collection's head: the latest whole-key record decides
    /// what the key is; a head of the incarnation the key already has only
    /// moves the head (a new TTL, or a moved copy).
    fn head(
        &mut self,
        db: u16,
        key: &[u8],
        seq: u64,
        expire_at_ms: u64,
        loc: FlashLoc,
        value: &[u8],
    ) {
        let Some(format::Head {
            vtype,
            bits,
            cid,
            span,
            ..
        }) = format::decode_head(value)
        else {
            self.report.corrupt_records += 1;
            return;
        };
        if !self.admits(db, key, seq) {
            return;
        }
        let d = db as usize;
        let expired = expire_at_ms != 0 && expire_at_ms <= self.now;
        let mut guard = self.inner.shard(key).lock();
        let sh = &mut *guard;
        let idx = sh.dbs[d].get_index_of(key);
        if let Some(i) = idx {
            let e = sh.dbs[d].at_mut(i);
            let same =
                matches!(&e.slot, Slot::Chunked(c) if c.dir().is_some_and(|x| x.cid() == cid));
            if same {
                let newer = e.version <= seq;
                let moved = e
                    .with_dir(&mut sh.acct, |x| {
                        if seq >= x.head_seq() {
                            x.set_head_loc(Some(loc));
                            x.set_head_seq(seq);
                            if let Some(s) = span {
                                x.set_recovered_span(s);
                            }
                            true
                        } else {
                            false
                        }
                    })
                    .unwrap_or(false);
                if moved && newer {
                    if expired {
                        Self::remove(sh, d, i);
                        drop(guard);
                        self.tombstone(db, key, seq);
                        return;
                    }
                    let e = sh.dbs[d].at_mut(i);
                    sh.acct.ttl_remove(d, e.expire_at_ms);
                    e.expire_at_ms = expire_at_ms;
                    e.version = seq;
                    sh.acct.ttl_add(d, expire_at_ms);
                }
                return;
            }
            if e.version > seq {
                return;
            }
            if expired {
                Self::remove(sh, d, i);
                drop(guard);
                self.tombstone(db, key, seq);
                return;
            }
        } else if expired {
            drop(guard);
            self.tombstone(db, key, seq);
            return;
        }
        let big = bits & crate::types::BIG_ENCODING != 0;
        let Some(c) = crate::types::Collection::from_directory(
            vtype,
            big,
            cid,
            &[],
            &[],
            Some(loc),
            seq,
            span,
        ) else {
            return;
        };
        let e = Entry {
            slot: Slot::Chunked(Box::new(c)),
            expire_at_ms,
            version: seq,
            lru_secs: now_secs(),
            lfu: crate::index::access::LFU_INIT_VAL,
            flags: 0,
            value_len: 0,
            client_flags: crate::types::aux(0, big),
            vtype: vtype as u8,
        };
        match idx {
            Some(i) => {
                if let Some((_, old)) = sh.dbs[d].get_index_mut(i) {
                    let old = std::mem::replace(old, e);
                    sh.acct.entry_removed(d, 0, &old);
                    let new = &sh.dbs[d].at(i);
                    sh.acct.entry_added(d, 0, new);
                }
            }
            None => {
                let k = CompactKey::from(key);
                sh.acct.entry_added(d, k.heap_bytes(), &e);
                sh.dbs[d].insert_full(k, e);
            }
        }
    }

    /// A chunk record: kept as a candidate for its key's directory.
    fn chunk(&mut self, db: u16, key: &[u8], seq: u64, loc: FlashLoc, value: &[u8]) {
        if db as usize >= self.inner.keys.databases {
            return;
        }
        self.max_seq = self.max_seq.max(seq);
        let Some(c) = super::cand::Cand::of_record(seq, loc, value) else {
            self.report.corrupt_records += 1;
            return;
        };
        self.chunks.entry((db, Box::from(key))).or_default().push(c);
    }

    fn part_change(&mut self, db: u16, key: &[u8], seq: u64, value: &[u8]) {
        if db as usize >= self.inner.keys.databases {
            return;
        }
        self.max_seq = self.max_seq.max(seq);
        let Some(c) = super::part_changes::PartChangeRec::of_record(seq, value) else {
            self.report.corrupt_records += 1;
            return;
        };
        self.part_changes
            .entry((db, Box::from(key)))
            .or_default()
            .push(c);
    }

    fn tombstone(&mut self, db: u16, key: &[u8], seq: u64) {
        let d = db as usize;
        if d >= self.inner.keys.databases {
            return;
        }
        self.max_seq = self.max_seq.max(seq);
        {
            let mut guard = self.inner.shard(key).lock();
            let sh = &mut *guard;
            if let Some(idx) = sh.dbs[d].get_index_of(key) {
                if sh.dbs[d].at(idx).version < seq {
                    Self::remove(sh, d, idx);
                }
            }
        }
        let t = self.deleted.entry((db, Box::from(key))).or_insert(0);
        *t = (*t).max(seq);
    }

    /// A database mapping (SWAPDB): the latest by seq is in force.
    fn db_map(&mut self, seq: u64, value: &[u8], loc: FlashLoc) {
        self.max_seq = self.max_seq.max(seq);
        let Some(ids) = crate::flash::format::dbmap::decode(value, self.inner.keys.databases)
        else {
            tracing::error!("recovery: a database mapping record does not decode; ignored");
            self.report.corrupt_records += 1;
            return;
        };
        if self.db_map.as_ref().is_none_or(|(s, _, _)| seq >= *s) {
            self.db_map = Some((seq, ids, loc));
        }
    }

    fn flush(&mut self, db: u16, seq: u64) {
        self.max_seq = self.max_seq.max(seq);
        let dbs: Vec<usize> = if db == ALL_DATABASES {
            (0..self.inner.keys.databases).collect()
        } else if (db as usize) < self.inner.keys.databases {
            vec![db as usize]
        } else {
            return;
        };
        for &d in &dbs {
            self.flushed[d] = self.flushed[d].max(seq);
        }
        for s in self.inner.shards.iter() {
            let mut guard = s.lock();
            let sh = &mut *guard;
            for &d in &dbs {
                let mut i = 0;
                while i < sh.dbs[d].len() {
                    if sh.dbs[d].at(i).version < seq {
                        Self::remove(sh, d, i);
                    } else {
                        i += 1;
                    }
                }
            }
        }
        self.deleted
            .retain(|(d, _), t| !(dbs.contains(&(*d as usize)) && *t < seq));
    }

    /// A batch's end in segment `seg`: its members are applied if they
    /// are all here, in a row, and it committed. Members before its first
    /// one are an earlier batch's that never ended; members missing (a
    /// page lost or damaged mid-batch) void it.
    fn batch_end(&mut self, seg: u32, end: format::BatchEnd) {
        if let Some(s) = self.inner.flash.table.get(seg) {
            s.pin_batch(end.first_segment);
        }
        let first = (end.first_segment, end.first_offset);
        let at = self
            .batch
            .iter()
            .position(|m| (m.loc.segment, m.loc.offset) == first);
        let at = match at {
            Some(i) => i,
            // Its first segment was collected: its members there that were
            // live were moved out as plain records; the rest are here.
            None if end.first_segment < self.batch.first().map_or(seg, |m| m.loc.segment)
                && self.inner.flash.table.get(end.first_segment).is_none() =>
            {
                0
            }
            None => {
                self.drop_batch("does not match its end");
                return;
            }
        };
        if at > 0 {
            let rest = self.batch.split_off(at);
            self.drop_batch("was never ended");
            self.batch = rest;
        }
        let all_there = (end.first_segment..=seg).all(|s| self.inner.flash.table.get(s).is_some());
        let whole = all_members(&self.batch, &end, all_there);
        if !end.commit {
            self.report.aborted_batch_records += self.batch.len() as u64;
            self.batch.clear();
        } else if !whole {
            self.drop_batch("lost some of its records");
        } else {
            for m in std::mem::take(&mut self.batch) {
                self.apply(m.header, &m.key, &m.value, m.meta, m.loc);
            }
        }
    }

    /// Drops the held members (a batch that cannot be applied whole).
    fn drop_batch(&mut self, why: &str) {
        if self.batch.is_empty() {
            return;
        }
        self.report.torn_batch_records += self.batch.len() as u64;
        tracing::warn!(
            "recovery: dropped the {} records of an atomic batch that {why} (a transaction, \
             script or multi-key command that was not acknowledged)",
            self.batch.len()
        );
        self.batch.clear();
    }

    /// At the end of the log: members without an end are a batch the
    /// crash interrupted; they count for nothing.
    pub(super) fn drop_torn_batch(&mut self) {
        self.drop_batch("the log ends inside");
    }

    /// What one record does to the index.
    fn apply(
        &mut self,
        h: format::RecordHeader,
        key: &[u8],
        value: &[u8],
        meta: ItemMeta,
        loc: FlashLoc,
    ) {
        match h.kind {
            RecordKind::Value
            | RecordKind::ValueFlags
            | RecordKind::ValueMeta
            | RecordKind::Collection => self.value(h.db, key, h.seq, h.expire_at_ms, loc, meta),
            RecordKind::Tombstone => self.tombstone(h.db, key, h.seq),
            RecordKind::Flush => self.flush(h.db, h.seq),
            RecordKind::BatchEnd => {}
            RecordKind::DbMap => self.db_map(h.seq, value, loc),
            RecordKind::Functions => {
                self.max_seq = self.max_seq.max(h.seq);
                if self.functions.as_ref().is_none_or(|(s, _, _)| h.seq >= *s) {
                    self.functions = Some((h.seq, bytes::Bytes::copy_from_slice(value), loc));
                }
            }
            RecordKind::CollHead => self.head(h.db, key, h.seq, h.expire_at_ms, loc, value),
            RecordKind::Chunk => self.chunk(h.db, key, h.seq, loc, value),
            RecordKind::PartChange => self.part_change(h.db, key, h.seq, value),
            RecordKind::Change => {
                if self.admits(h.db, key, h.seq) && !self.changes.note(h, key, value, loc) {
                    self.report.corrupt_records += 1;
                }
            }
        }
    }

    /// Replays one segment from `start` (whole file in memory).
    pub(super) fn segment(&mut self, id: u32, path: &Path, start: u64, newest: bool) -> u64 {
        let buf = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!("recovery: cannot read {}: {e}; skipped", path.display());
                return 0;
            }
        };
        self.report.segments_scanned += 1;
        self.report.bytes_scanned += (buf.len() as u64).saturating_sub(start);
        let mut tomb_bytes = 0u64;
        let mut pos = start as usize;
        let mut ahead = super::ahead::Ahead::new(pos);
        while pos < buf.len() {
            let in_page = pos % PAGE;
            if in_page != 0 && PAGE - in_page < format::MIN_BYTES_IN_PAGE {
                pos = align_up(pos);
                continue;
            }
            match format::decode_record(&buf[pos..]) {
                Ok(rec) => {
                    ahead.step(self.inner, &buf);
                    let len = rec.header.record_len();
                    let loc = FlashLoc {
                        segment: id,
                        offset: pos as u32,
                        len: len as u32,
                    };
                    self.report.records_replayed += 1;
                    let h = rec.header;
                    if matches!(h.kind, RecordKind::Tombstone | RecordKind::Flush) {
                        tomb_bytes += len as u64;
                    }
                    if rec.member {
                        self.batch.push(Member {
                            header: h,
                            key: rec.key.into(),
                            value: rec.value.into(),
                            meta: rec.meta,
                            loc,
                        });
                    } else if h.kind == RecordKind::BatchEnd {
                        tomb_bytes += len as u64;
                        if let Some(end) = format::BatchEnd::decode(rec.value) {
                            self.batch_end(id, end);
                        }
                    } else {
                        // Members followed by another writer's record: their
                        // batch never got its end (a failed write).
                        self.drop_batch("was never ended");
                        self.apply(h, rec.key, rec.value, rec.meta, loc);
                    }
                    pos += len;
                }
                Err(DecodeError::Padding) => pos = align_up(pos + 1),
                Err(e) => {
                    let rest_zero = buf[pos..].iter().all(|&b| b == 0);
                    if rest_zero {
                        break;
                    }
                    match resync(&buf, pos) {
                        Some(next) => {
                            self.report.corrupt_records += 1;
                            tracing::error!(
                                "recovery: damaged record ({e:?}) in segment {id} at offset {pos}; \
                                 skipped {} bytes to the next valid record",
                                next - pos
                            );
                            pos = next;
                        }
                        None if newest => {
                            let dropped = (buf.len() - pos) as u64;
                            self.report.torn_tail_bytes += dropped;
                            tracing::warn!(
                                "recovery: torn tail of segment {id}: dropped {dropped} bytes \
                                 after offset {pos} (an incomplete last write)"
                            );
                            break;
                        }
                        None => {
                            self.report.corrupt_records += 1;
                            tracing::error!(
                                "recovery: damaged data ({e:?}) in segment {id} from offset {pos} \
                                 to its end ({} bytes) skipped",
                                buf.len() - pos
                            );
                            break;
                        }
                    }
                }
            }
        }
        tomb_bytes
    }
}

/// The next offset after `pos` where a valid record or a padded page starts.
fn resync(buf: &[u8], pos: usize) -> Option<usize> {
    let mut p = pos + 1;
    while p + format::RECORD_HEADER_LEN <= buf.len() {
        if p.is_multiple_of(PAGE) && buf[p..buf.len().min(p + PAGE)].iter().all(|&b| b == 0) {
            // A whole page of padding: the scan can go on from here.
            return Some(p);
        }
        if buf[p + 4] == format::RECORD_MAGIC && format::decode_record(&buf[p..]).is_ok() {
            return Some(p);
        }
        p += 1;
    }
    None
}

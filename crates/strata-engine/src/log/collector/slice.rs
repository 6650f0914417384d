//! One slice of a collection job: read at most `SLICE_BYTES` of the
//! segment, keep the records that are still live (rule 2) or still needed
//! (tombstones, rule 5), and move them to the open segment, publishing
//! each new location only if the entry still refers to the old one. The
//! rules are in the parent module's doc.

use super::{Collector, Job, Mode};
use crate::base::FlashLoc;
use crate::flash::buf::{align_down, align_up, AlignedBuf, PAGE};
use crate::flash::format::{self, DecodeError};
use crate::flash::io;
use crate::flash::segment::Segment;
use crate::index::{Entry, Slot};
use crate::log::chunks;
use crate::log::writer::{AppendError, SegmentWriter};
use crate::stats::Stats;
use crate::Inner;
use std::sync::atomic::Ordering::Acquire;
use std::sync::Arc;

/// Bytes read per GC slice.
const SLICE_BYTES: usize = 1 << 20;

/// A live record found in a slice.
struct Live {
    /// The database's id (what the record names; `keyspace::swapdb`).
    db: u16,
    key: Box<[u8]>,
    value: Vec<u8>,
    meta: format::ItemMeta,
    header: format::RecordHeader,
    old: FlashLoc,
}

/// Records whose liveness is checked under one hold of their shard's lock
/// (their lookups prefetched together).
const CHECK_RUN: usize = 64;

/// A value, head or part record of the slice, to check for liveness.
struct Candidate<'a> {
    shard: usize,
    rec: format::RecordRef<'a>,
    loc: FlashLoc,
}

impl Collector {
    /// Processes one slice; returns whether the job has more to do.
    pub(super) fn slice(
        &mut self,
        inner: &Inner,
        writer: &mut SegmentWriter,
        job: &mut Job,
    ) -> bool {
        if job.pos >= job.end {
            return false;
        }
        let start = align_down(job.pos);
        let mut len = (job.end - start).min(SLICE_BYTES as u64) as usize;
        // The slice buffer is kept from one slice to the next: a new one
        // each time was faulted in and zeroed, about a third of the
        // collector's CPU under steady overwrite.
        let mut got = 0;
        let mut live = Vec::new();
        loop {
            let Some((buf, n)) = read_at(inner, &job.seg, start, len, self.buf.take()) else {
                return false;
            };
            if n <= got {
                // A longer read gave no more bytes.
                Stats::inc(&inner.stats.read_errors);
                return false;
            }
            got = n;
            match scan(inner, job, start, &buf[..n], &mut live) {
                Some(need) => len = need,
                None => {
                    if buf.capacity() == SLICE_BYTES {
                        self.buf = Some(buf);
                    }
                    break;
                }
            }
        }
        if !live.is_empty() && !relocate(inner, writer, live) {
            // No room to move them now (or a write failed): give the job up
            // without marking the segment; it is picked again later.
            self.abandoned = true;
            return false;
        }
        job.pos < job.end
    }
}

/// Decodes the records of `buf` (the segment's bytes from `start`) from
/// `job.pos` on, pushes those still live or needed to `live`, and moves
/// `job.pos` past them. Returns the bytes to read from `start` instead when
/// not one whole record is in `buf` (nothing is decoded then).
fn scan(
    inner: &Inner,
    job: &mut Job,
    start: u64,
    buf: &[u8],
    live: &mut Vec<Live>,
) -> Option<usize> {
    let n = buf.len();
    let mut pos = job.pos;
    let mut candidates = Vec::new();
    let min_other = inner.flash.table.min_id_except(job.seg.id);
    let checkpoint_segment = inner.durability.persist.checkpoint_segment.load(Acquire);
    loop {
        let off = (pos - start) as usize;
        if pos >= job.end || off >= n {
            break;
        }
        let in_page = pos as usize % PAGE;
        if in_page != 0 && PAGE - in_page < format::MIN_BYTES_IN_PAGE {
            pos = align_up(pos as usize) as u64; // too close to the boundary: padding
            continue;
        }
        match format::decode_record(&buf[off..n]) {
            Ok(rec) => {
                let loc = FlashLoc {
                    segment: job.seg.id,
                    offset: pos as u32,
                    len: rec.header.record_len() as u32,
                };
                pos += loc.len as u64;
                if rec.header.kind.is_value()
                    || matches!(
                        rec.header.kind,
                        format::RecordKind::CollHead
                            | format::RecordKind::Chunk
                            | format::RecordKind::PartChange
                            | format::RecordKind::Change
                    )
                {
                    if (rec.header.db as usize) < inner.keys.databases {
                        let shard = inner.shard_index(rec.key);
                        candidates.push(Candidate { shard, rec, loc });
                    }
                } else if let Some(in_force) = inner.in_force(rec.header.kind) {
                    // Live while it is the record in force.
                    if in_force.is(loc) {
                        live.push(Live {
                            db: 0,
                            key: Box::default(),
                            value: rec.value.to_vec(),
                            meta: format::ItemMeta::default(),
                            header: rec.header,
                            old: loc,
                        });
                    }
                } else if rec.header.kind == format::RecordKind::BatchEnd {
                    // Never moved: a segment holding an end its members
                    // still need is not collected (`pick`).
                } else if job.mode == Mode::Relocate {
                    keep_tombstone(min_other, checkpoint_segment, &job.seg, &rec, loc, live);
                }
            }
            Err(DecodeError::Padding) => pos = align_up(pos as usize + 1) as u64,
            Err(DecodeError::Truncated) => {
                if start + n as u64 >= job.end {
                    // The segment's data ends inside this record: only
                    // padding may be left (a torn tail is a read error).
                    if buf[off..n].iter().any(|&b| b != 0) {
                        Stats::inc(&inner.stats.read_errors);
                    }
                    pos = job.end;
                    continue;
                }
                if pos > job.pos {
                    break; // the next slice starts at this record
                }
                // Not one whole record in the slice: read this one whole.
                let need = match format::decode_header(&buf[off..n]) {
                    Ok(h) => off + h.record_len(),
                    Err(_) => off + format::RECORD_HEADER_LEN,
                };
                return Some(need.min((job.end - start) as usize));
            }
            Err(DecodeError::BadHeader | DecodeError::Checksum) => {
                // Unknowable length: resume at the next page.
                Stats::inc(&inner.stats.read_errors);
                pos = align_up(pos as usize + 1) as u64;
            }
        }
    }
    job.pos = pos;
    check_live(inner, job.mode, &mut candidates, live);
    None
}

/// Pushes to `live` the candidates their entries still refer to (rule 2),
/// or, evicting, drops their keys. Shard by shard: a shard is locked once
/// per run of its candidates (at most `CHECK_RUN`), their table probes,
/// buckets and entries hinted in passes before they are looked at, so the
/// misses overlap. (One lock and lookup per record in turn, each waiting
/// for its misses, was most of the collector's CPU under steady overwrite:
/// every record written is scanned once when its segment is collected.)
fn check_live(inner: &Inner, mode: Mode, candidates: &mut [Candidate<'_>], live: &mut Vec<Live>) {
    candidates.sort_unstable_by_key(|c| c.shard);
    for run in candidates.chunk_by(|a, b| a.shard == b.shard) {
        for run in run.chunks(CHECK_RUN) {
            let mut guard = inner.shards[run[0].shard].lock();
            let sh = &mut *guard;
            let mut at = [(0usize, 0u64, None); CHECK_RUN];
            for (j, c) in run.iter().enumerate() {
                let db = inner.keys.dbmap.logical(c.rec.header.db);
                at[j] = (db, sh.dbs[db].prefetch_probe(c.rec.key), None);
            }
            for (db, hash, pos) in at.iter_mut().take(run.len()) {
                *pos = sh.dbs[*db].prefetch_bucket(*hash);
            }
            for &(db, _, pos) in at.iter().take(run.len()) {
                if let Some(i) = pos {
                    sh.dbs[db].prefetch(i, true);
                }
            }
            for (c, &(db, _, pos)) in run.iter().zip(&at) {
                check_one(inner, mode, sh, db, pos, &c.rec, c.loc, live);
            }
        }
    }
}

/// `check_live` for one record, under its shard's lock; `hint` is where
/// its bucket probably is.
#[allow(clippy::too_many_arguments)]
fn check_one(
    inner: &Inner,
    mode: Mode,
    sh: &mut crate::index::Shard,
    db: usize,
    hint: Option<usize>,
    rec: &format::RecordRef<'_>,
    loc: FlashLoc,
    live: &mut Vec<Live>,
) {
    let found = match hint {
        Some(h) => sh.dbs[db].get_index_of_from(h, rec.key),
        None => sh.dbs[db].get_index_of(rec.key),
    };
    let Some(idx) = found else {
        return;
    };
    if !refers_to(&sh.dbs[db].at(idx), rec, loc) {
        return;
    }
    match mode {
        Mode::Evict => {
            if matches!(
                rec.header.kind,
                format::RecordKind::CollHead
                    | format::RecordKind::Chunk
                    | format::RecordKind::PartChange
            ) {
                // A chunked collection's other records may be in newer
                // segments: a tombstone keeps them from coming back.
                inner.remove_index_as(sh, db, idx, crate::base::KeyChange::Evicted);
            } else {
                // No tombstone: the oldest segment holds every record
                // of this key (newer records would be in newer segments).
                if let Some((k, _)) = sh.dbs[db].get_index(idx) {
                    inner.observe(db, k, crate::base::KeyChange::Evicted);
                }
                inner.remove_index_quiet(sh, db, idx);
            }
            Stats::inc(&inner.stats.evicted_keys);
        }
        // The copy carries the entry's current TTL and item state, which
        // may be newer than the record's (a change the journal has not
        // logged yet, or logged in a record it could not publish): a
        // copy never brings back an older state (rule 7).
        Mode::Relocate => {
            let e = &sh.dbs[db].at(idx);
            let header = format::RecordHeader {
                expire_at_ms: e.expire_at_ms,
                ..rec.header
            };
            live.push(Live {
                db: rec.header.db,
                key: rec.key.into(),
                value: rec.value.to_vec(),
                meta: sh.item_meta(db, rec.key, e),
                header,
                old: loc,
            })
        }
    }
}

/// Whether entry `e` refers to the record at `loc` (rule 2): its value's
/// record, or its chunked collection's head or one of its parts'.
fn refers_to(e: &Entry, rec: &format::RecordRef<'_>, loc: FlashLoc) -> bool {
    match rec.header.kind {
        format::RecordKind::CollHead
        | format::RecordKind::Chunk
        | format::RecordKind::PartChange => chunks::refers_to(e, rec.header.kind, rec.value, loc),
        // A record of a collection's chain (`types::changes`): its image
        // or a change record.
        _ => e.flash_loc() == Some(loc) || chain_holds(e, loc),
    }
}

/// Whether `loc` is one of the records of `e`'s chain.
fn chain_holds(e: &Entry, loc: FlashLoc) -> bool {
    matches!(&e.slot, Slot::Hot(h) if h.chain().is_some_and(|c| c.locs().any(|l| l == loc)))
}

/// Points `e`'s chain at `new` where it named `old`; whether it did.
fn move_in_chain(e: &mut Entry, old: FlashLoc, new: FlashLoc) -> bool {
    let Slot::Hot(h) = &mut e.slot else {
        return false;
    };
    let Some(c) = h.chain_mut() else {
        return false;
    };
    let slots = c
        .image
        .iter_mut()
        .chain(c.changes.iter_mut())
        .chain(c.superseded.iter_mut());
    for l in slots {
        if *l == old {
            *l = new;
            return true;
        }
    }
    false
}

/// Keeps a tombstone or flush record if an older segment or the checkpoint
/// in force may still name what it cancels (rule 5); the copy names its
/// origin segment.
fn keep_tombstone(
    min_other: Option<u32>,
    checkpoint_segment: u32,
    seg: &Segment,
    rec: &format::RecordRef<'_>,
    loc: FlashLoc,
    live: &mut Vec<Live>,
) {
    let origin = format::record_origin(rec.value, seg.id);
    // (`NO_CHECKPOINT` is above every origin.)
    if min_other.is_some_and(|m| m <= origin) || origin >= checkpoint_segment {
        live.push(Live {
            db: rec.header.db,
            key: rec.key.into(),
            value: format::origin_value(origin).to_vec(),
            meta: format::ItemMeta::default(),
            header: rec.header,
            old: loc,
        });
    }
}

/// Reads `len` bytes at `offset` into `buf` if it is large enough, else
/// into a new buffer.
fn read_at(
    inner: &Inner,
    seg: &Arc<Segment>,
    offset: u64,
    len: usize,
    buf: Option<AlignedBuf>,
) -> Option<(AlignedBuf, usize)> {
    let len = align_up(len);
    let mut buf = match buf {
        Some(b) if b.capacity() >= len => b,
        _ => AlignedBuf::zeroed(len.max(SLICE_BYTES)),
    };
    buf.set_len(len);
    let (buf, r) = io::read_blocking(&*inner.flash.io, seg.file.clone(), offset, buf);
    match r {
        Ok(n) => Some((buf, n)),
        Err(e) => {
            Stats::inc(&inner.stats.read_errors);
            tracing::error!("GC read of segment {} failed: {e}", seg.id);
            None
        }
    }
}

/// Writes the live records to the open segment and moves their entries,
/// if they still point at the old copies (rule 2).
/// Returns false if nothing could be moved (no room, or a failed write).
fn relocate(inner: &Inner, writer: &mut SegmentWriter, live: Vec<Live>) -> bool {
    let mut placed = Vec::with_capacity(live.len());
    let mut failed = None;
    for l in &live {
        // Moving may go one segment past flash-max-size (it frees more than
        // it writes), never further: the old segments are still counted
        // until they are freed.
        let limit = inner
            .flash
            .capacity
            .saturating_add(inner.flash.segment_size);
        match writer.append_item(&l.header, &l.key, &l.meta, &l.value, limit) {
            Ok(loc) => placed.push(Some(loc)),
            Err(e) => {
                // A chunk write failed inside the append: records buffered
                // before it may be lost, so nothing of this slice is moved.
                failed = Some(e);
                break;
            }
        }
    }
    let flushed = writer.flush_counted(&inner.stats.device.collector);
    let error = match (flushed, failed) {
        (Err(e), _) | (Ok(()), Some(AppendError::Io(e))) => Some(e.to_string()),
        // Full: no room to move records now; not an error.
        (Ok(()), Some(AppendError::Full)) => return false,
        (Ok(()), None) => None,
    };
    if let Some(e) = error {
        Stats::inc(&inner.stats.write_errors);
        tracing::error!("GC write failed: {e}");
        return false;
    }
    for (l, new) in live.iter().zip(placed) {
        let Some(new) = new else { continue };
        if let Some(in_force) = inner.in_force(l.header.kind) {
            in_force.moved(inner, l.old, new);
            continue;
        }
        let chunked = matches!(
            l.header.kind,
            format::RecordKind::CollHead
                | format::RecordKind::Chunk
                | format::RecordKind::PartChange
        );
        let change = l.header.kind == format::RecordKind::Change;
        if !l.header.kind.is_value() && !chunked && !change {
            continue; // tombstones are not index locations
        }
        let mut guard = inner.shard(&l.key).lock();
        let sh = &mut *guard;
        let d = inner.keys.dbmap.logical(l.db);
        let Some(idx) = sh.dbs[d].get_index_of(&l.key) else {
            continue;
        };
        let e = sh.dbs[d].at_mut(idx);
        if chunked {
            let moved = chunks::move_record(e, &mut sh.acct, l.header.kind, &l.value, l.old, new);
            for _ in 0..moved {
                inner.release_flash_quiet(l.old);
                inner.retain_flash(new);
            }
            if moved > 0 {
                Stats::add(&inner.stats.gc_bytes_relocated, new.len as u64);
            }
            continue;
        }
        // Only the record moved: the value (hot or cold) and the counters
        // stay as they are.
        let in_chain = !matches!(&e.slot, Slot::Hot(h) if h.backing() == Some(l.old))
            && move_in_chain(e, l.old, new);
        match &mut e.slot {
            _ if in_chain => {}
            Slot::Cold(loc) if *loc == l.old => *loc = new,
            Slot::Hot(h) if h.backing() == Some(l.old) => {
                h.set_backing(Some(new));
            }
            _ if change => {
                // The chain let go of it meanwhile.
                sh.dbs[d].pack(idx);
                continue;
            }
            _ => {
                let again = e.version == l.header.seq;
                // Boxed above to look: packed again if it can be.
                sh.dbs[d].pack(idx);
                if again {
                    // Rule 7: the entry got a newer record of the same write
                    // (a new TTL or item state) before this copy: log its
                    // state again, after the copy.
                    inner.log_again(sh, d, idx);
                }
                continue;
            }
        }
        sh.dbs[d].pack(idx);
        inner.release_flash_quiet(l.old);
        inner.retain_flash(new);
        Stats::add(&inner.stats.gc_bytes_relocated, new.len as u64);
    }
    true
}

//! The garbage collector (`Collector`): reclaims segments whose records are
//! mostly dead, and evicts whole segments when flash is full under an
//! evicting policy.
//!
//! Ordering rules:
//! 1. Only sealed segments are collected (never the one being written).
//! 2. A record is live iff the index entry for its (db, key) points at
//!    exactly its (segment, offset, len). Liveness is checked under the
//!    shard lock when the record is read, and again when its new location
//!    is published: if the entry moved on meanwhile, the copy is dead.
//! 3. A segment is freed only when its live bytes reach zero (all live
//!    records moved or dropped), so no entry ever points at a freed
//!    segment (engine invariant 3).
//! 4. Work is bounded per slice: one read of at most `SLICE_BYTES` and the
//!    relocation of what it held, so reads never queue behind a whole
//!    segment's worth of GC I/O.

use crate::flash::buf::{align_down, align_up, AlignedBuf, PAGE};
use crate::flash::format::{self, DecodeError, RecordKind, SEGMENT_DATA_START};
use crate::flash::io;
use crate::flash::segment::Segment;
use crate::flash::writer::SegmentWriter;
use crate::index::{FlashLoc, Slot};
use crate::stats::Stats;
use crate::Inner;
use std::collections::HashSet;
use std::sync::atomic::Ordering::Acquire;
use std::sync::Arc;

/// Bytes read per GC slice.
const SLICE_BYTES: usize = 1 << 20;
/// Collect a segment whose live share is below this (per mille) ...
const LIVE_THRESHOLD_RELAXED: u64 = 250;
/// ... or below this when flash is more than 3/4 full.
const LIVE_THRESHOLD_TIGHT: u64 = 800;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Move live records to the open segment.
    Relocate,
    /// Drop the keys of live records (eviction).
    Evict,
}

struct Job {
    seg: Arc<Segment>,
    pos: u64,
    end: u64,
    mode: Mode,
}

#[derive(Default)]
pub(crate) struct Collector {
    job: Option<Job>,
    /// Segments whose live bytes could not be reclaimed (corrupt records
    /// still referenced); not picked again.
    skip: HashSet<u32>,
}

/// A live record found in a slice.
struct Live {
    db: usize,
    key: Box<[u8]>,
    value: Vec<u8>,
    header: format::RecordHeader,
    old: FlashLoc,
}

impl Collector {
    /// Runs one slice of work; returns whether there was any.
    pub fn step(&mut self, inner: &Inner, writer: &mut SegmentWriter) -> bool {
        if self.job.is_none() {
            self.job = self.pick(inner, writer);
        }
        let Some(mut job) = self.job.take() else {
            return false;
        };
        if self.slice(inner, writer, &mut job) {
            self.job = Some(job);
        } else {
            self.finish(inner, &job);
        }
        true
    }

    /// Evicts the oldest sealed segment whole (its keys are dropped).
    pub fn evict_oldest_segment(&mut self, inner: &Inner, writer: &SegmentWriter) -> bool {
        if self.job.as_ref().is_some_and(|j| j.mode == Mode::Evict) {
            return true;
        }
        let current = writer.current_segment();
        let Some(seg) = inner
            .table
            .snapshot()
            .into_iter()
            .find(|s| Some(s.id) != current && !self.skip.contains(&s.id))
        else {
            return false;
        };
        let end = seg.written.load(Acquire);
        // An eviction pre-empts a relocation in progress (it resumes later).
        self.job = Some(Job {
            seg,
            pos: SEGMENT_DATA_START,
            end,
            mode: Mode::Evict,
        });
        true
    }

    fn pick(&mut self, inner: &Inner, writer: &SegmentWriter) -> Option<Job> {
        let current = writer.current_segment();
        let tight = inner.table.allocated_bytes() * 4 > inner.capacity * 3;
        let threshold = if inner.flash_full.load(std::sync::atomic::Ordering::Relaxed) {
            // Demotion is blocked on space: any garbage is worth moving.
            1000
        } else if tight {
            LIVE_THRESHOLD_TIGHT
        } else {
            LIVE_THRESHOLD_RELAXED
        };
        let mut best: Option<(u64, Arc<Segment>)> = None;
        for seg in inner.table.snapshot() {
            if Some(seg.id) == current || self.skip.contains(&seg.id) {
                continue;
            }
            let live = seg.live_bytes.load(Acquire);
            if live == 0 {
                // Nothing points here: free it without I/O.
                inner.table.free(seg.id);
                Stats::inc(&inner.stats.segments_freed);
                continue;
            }
            let size = seg
                .written
                .load(Acquire)
                .saturating_sub(SEGMENT_DATA_START)
                .max(1);
            let permille = live * 1000 / size;
            if permille < threshold && best.as_ref().is_none_or(|(p, _)| permille < *p) {
                best = Some((permille, seg));
            }
        }
        best.map(|(_, seg)| Job {
            end: seg.written.load(Acquire),
            seg,
            pos: SEGMENT_DATA_START,
            mode: Mode::Relocate,
        })
    }

    fn finish(&mut self, inner: &Inner, job: &Job) {
        if job.seg.live_bytes.load(Acquire) == 0 {
            inner.table.free(job.seg.id);
            Stats::inc(&inner.stats.segments_freed);
        } else {
            tracing::warn!(
                "segment {} keeps {} live bytes after collection (unreadable records); not collected again",
                job.seg.id,
                job.seg.live_bytes.load(Acquire)
            );
            self.skip.insert(job.seg.id);
        }
    }

    /// Processes one slice; returns whether the job has more to do.
    fn slice(&mut self, inner: &Inner, writer: &mut SegmentWriter, job: &mut Job) -> bool {
        if job.pos >= job.end {
            return false;
        }
        let start = align_down(job.pos);
        let len = (job.end - start).min(SLICE_BYTES as u64) as usize;
        let (mut buf, mut n) = match read_at(inner, &job.seg, start, len) {
            Some(r) => r,
            None => return false,
        };
        let mut live = Vec::new();
        let mut pos = job.pos;
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
                    if rec.header.kind == RecordKind::Value {
                        self.check_live(inner, job.mode, &rec, loc, &mut live);
                    }
                    pos += loc.len as u64;
                }
                Err(DecodeError::Padding) => pos = align_up(pos as usize + 1) as u64,
                Err(DecodeError::Truncated) => {
                    let avail_end = start + n as u64;
                    if avail_end >= job.end {
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
                    let need = need.min((job.end - start) as usize);
                    match read_at(inner, &job.seg, start, need) {
                        Some((b, m)) if m > n => {
                            buf = b;
                            n = m;
                        }
                        _ => {
                            Stats::inc(&inner.stats.read_errors);
                            return false;
                        }
                    }
                }
                Err(DecodeError::BadHeader | DecodeError::Checksum) => {
                    // Unknowable length: resume at the next page.
                    Stats::inc(&inner.stats.read_errors);
                    pos = align_up(pos as usize + 1) as u64;
                }
            }
        }
        job.pos = pos;
        if !live.is_empty() {
            relocate(inner, writer, live);
        }
        job.pos < job.end
    }

    fn check_live(
        &self,
        inner: &Inner,
        mode: Mode,
        rec: &format::RecordRef<'_>,
        loc: FlashLoc,
        live: &mut Vec<Live>,
    ) {
        let db = rec.header.db as usize;
        if db >= inner.databases {
            return;
        }
        let mut guard = inner.shard(rec.key).lock();
        let sh = &mut *guard;
        let Some(idx) = sh.dbs[db].get_index_of(rec.key) else {
            return;
        };
        if sh.dbs[db][idx].flash_loc() != Some(loc) {
            return;
        }
        match mode {
            Mode::Evict => {
                inner.remove_index(sh, db, idx, false);
                Stats::inc(&inner.stats.evicted_keys);
            }
            Mode::Relocate => live.push(Live {
                db,
                key: rec.key.into(),
                value: rec.value.to_vec(),
                header: rec.header,
                old: loc,
            }),
        }
    }
}

fn read_at(
    inner: &Inner,
    seg: &Arc<Segment>,
    offset: u64,
    len: usize,
) -> Option<(AlignedBuf, usize)> {
    let buf = AlignedBuf::zeroed(align_up(len));
    let (buf, r) = io::read_blocking(&*inner.io, seg.file.clone(), offset, buf);
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
fn relocate(inner: &Inner, writer: &mut SegmentWriter, live: Vec<Live>) {
    let before = writer.bytes_written;
    let mut placed = Vec::with_capacity(live.len());
    for l in &live {
        match writer.append(&l.header, &l.key, &l.value, u64::MAX) {
            Ok(loc) => placed.push(Some(loc)),
            Err(_) => placed.push(None),
        }
    }
    let flushed = writer.flush();
    Stats::add(
        &inner.stats.flash_bytes_written,
        writer.bytes_written - before,
    );
    if let Err(e) = flushed {
        Stats::inc(&inner.stats.write_errors);
        tracing::error!("GC write failed: {e}");
        return;
    }
    for (l, new) in live.iter().zip(placed) {
        let Some(new) = new else { continue };
        let mut guard = inner.shard(&l.key).lock();
        let sh = &mut *guard;
        let Some(e) = sh.dbs[l.db].get_mut(&*l.key) else {
            continue;
        };
        let slot = match &e.slot {
            Slot::Cold(loc) if *loc == l.old => Slot::Cold(new),
            Slot::Hot(h) if h.backing == Some(l.old) => Slot::hot(h.value.clone(), Some(new)),
            _ => continue,
        };
        e.replace_slot(&mut sh.acct, slot);
        inner.release_flash_quiet(l.old);
        inner.retain_flash(new);
        Stats::add(&inner.stats.gc_bytes_relocated, new.len as u64);
    }
}

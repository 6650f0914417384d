//! The garbage collector (`Collector`): reclaims segments whose records are
//! mostly dead, and evicts whole segments when flash is full under an
//! evicting policy. This module chooses segments and frees them;
//! `slice.rs` reads a job's segment a slice at a time and moves (or, for
//! eviction, drops) its live records.
//!
//! Ordering rules:
//! 1. Only sealed segments are collected (never the one being written).
//! 2. A record is live iff the index entry for its (db, key) points at
//!    exactly its (segment, offset, len): as its value's record, or, for a
//!    chunked collection of the record's collection id, as its head or as
//!    the record of one or more of its parts (all of which move with it). Liveness is checked under the
//!    shard lock when the record is read, and again when its new location
//!    is published: if the entry moved on meanwhile, the copy is dead.
//! 3. A segment is freed only when its live bytes reach zero (all live
//!    records moved or dropped), so no entry ever points at a freed
//!    segment (engine invariant 3).
//! 4. Work is bounded per slice: one read of at most `SLICE_BYTES` and the
//!    relocation of what it held, so reads never queue behind a whole
//!    segment's worth of GC I/O.
//! 5. Tombstone and flush records are not live bytes (no entry points at
//!    them). One is kept (moved, naming its origin segment) while any other
//!    segment with an id not above its origin exists: only those can hold
//!    the older records it cancels. It is also kept while its origin is not
//!    below the segment of the checkpoint in force, whose entries may name
//!    records it cancels: dropping it would leave that entry pointing at a
//!    freed segment, which recovery must count as damage. A segment that
//!    may hold such records (`tomb_bytes` > 0) is read before it is freed.
//! 6. With the journal on, a segment is freed only once the notes that
//!    killed its records are durable and the moved copies are synced, so a
//!    crash never finds an entry of the checkpoint pointing at nothing.
//! 7. Recovery takes the *later* of two records with one sequence number
//!    (journal invariant 6). So a moved copy holds the entry's current TTL
//!    and item state (taken with the liveness check), not the record's;
//!    and a copy that turns out dead while its entry still has that
//!    sequence number (a newer state was logged meanwhile, before the copy)
//!    has the entry's state logged again after it.
//! 8. An atomic batch's end is never moved; a segment holding one whose
//!    members began in an older segment that still exists is neither
//!    collected nor freed (`SegmentTable::pinned`), so members are never
//!    left without their end. Moved members are plain records.
//! 9. While the log is full, moving a segment wins only its garbage, at
//!    the cost of writing its live bytes again. Under an evicting policy
//!    a segment is moved only below `LIVE_THRESHOLD_TIGHT` live; failing
//!    that, while less than a segment of room is left, the oldest segment
//!    is evicted. Under `noeviction` one is moved
//!    if a sixteenth of it is garbage (`LIVE_THRESHOLD_FULL`), and
//!    `Inner::collectable` (the garbage of such segments) is what writers
//!    may wait for before they are refused. Moving nearly live segments
//!    one after another won a few kilobytes of page padding each: under
//!    allkeys-lru it kept writers waiting for 30 s and more, the oldest
//!    segments never evicted; under `noeviction` an idle full log went on
//!    writing ~180 MB/s, the journal's retries finding the log over its
//!    size each time the collector had a copy in flight.

use crate::flash::buf::AlignedBuf;
use crate::flash::format::SEGMENT_DATA_START;
use crate::flash::segment::Segment;
use crate::log::writer::SegmentWriter;
use crate::stats::Stats;
use crate::Inner;
use std::collections::HashSet;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;

mod slice;

/// Collect a segment whose live share is below this (per mille), once the
/// log's garbage passes `flash-gc-garbage-ratio` (default 1) times its live
/// bytes ...
const LIVE_THRESHOLD_RELAXED: u64 = 250;
/// ... (and `RELAXED_GARBAGE_SEGMENTS` segments): while flash is plentiful,
/// garbage is left to grow, because every overwrite makes older records
/// dead and a segment whose records all died is freed without reading or
/// moving anything. Collecting a segment the moment it falls below 25%
/// live moves up to a quarter of it again (write amplification up to 1.25
/// under steady overwrite); waiting until the log holds ~4× its live data
/// (a ratio of 3) leaves ~5% live in the oldest segments under uniform
/// overwrite. The default, 1, keeps the log within ~2× its live data
/// (flash is the capacity a user pays for): a hash of 2M fields filled
/// under 32 MB wrote 12% more with it and ended at 1.9× its live bytes
/// instead of 4× (BENCHMARKS, issue 46). (With the ratio at 0, segments
/// are collected at once.)
const RELAXED_GARBAGE_SEGMENTS: u64 = 4;
/// ... or below this when flash is more than 3/4 full, or full under an
/// evicting policy (rule 9) ...
const LIVE_THRESHOLD_TIGHT: u64 = 800;
/// ... or below this when full under `noeviction` (rule 9): a sixteenth of
/// a segment at least is garbage. Less is about what the copy's own page
/// padding costs again, so moving it would win nothing.
const LIVE_THRESHOLD_FULL: u64 = 937;

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
    /// Dead segments waiting for the journal's synced ticket (rule 6).
    pending_free: Vec<(u32, u64)>,
    /// The current job stopped for lack of room: not a reason to skip it.
    abandoned: bool,
    /// The slice buffer, kept for the next slice (`slice.rs`).
    buf: Option<AlignedBuf>,
}

impl Collector {
    /// Runs one slice of work; returns whether there was any.
    pub fn step(&mut self, inner: &Inner, writer: &mut SegmentWriter) -> bool {
        self.free_ready(inner, writer);
        // Dead segments go at once, even while a relocation job runs (under
        // a high write rate most segments die whole).
        self.release_dead(inner, writer);
        if self.job.is_none() {
            self.job = self.pick(inner, writer);
        }
        let Some(mut job) = self.job.take() else {
            return false;
        };
        // A segment whose records all died meanwhile (rewritten by newer
        // writes) needs no more reading.
        let dead = job.mode == Mode::Relocate
            && job.seg.live_bytes.load(Acquire) == 0
            && job.seg.tomb_bytes.load(Acquire) == 0;
        if !dead && self.slice(inner, writer, &mut job) {
            self.job = Some(job);
        } else {
            self.finish(inner, &job);
        }
        true
    }

    /// Frees a dead segment now, or once the journal caught up (rule 6).
    fn release(&mut self, inner: &Inner, id: u32) {
        if inner.journal.enabled {
            self.pending_free.push((id, inner.journal.last_ticket()));
        } else {
            inner.flash.table.free(id);
            Stats::inc(&inner.stats.segments_freed);
        }
    }

    fn free_ready(&mut self, inner: &Inner, writer: &mut SegmentWriter) {
        if self.pending_free.is_empty() {
            return;
        }
        // While the log is full the notes it waits for cannot be written
        // until segments are freed: free them (after syncing the moved
        // copies). Writes are refused meanwhile, so only the notes of the
        // batch that found the log full are at risk in a crash.
        // Ask the journal for an early sync rather than waiting for its
        // next second: the space is needed now.
        inner.journal.request_sync();
        let synced = if matches!(
            inner.journal.status(),
            crate::log::journal::LogStatus::Full | crate::log::journal::LogStatus::NoSpace
        ) {
            u64::MAX
        } else {
            inner.journal.synced_ticket()
        };
        if !self.pending_free.iter().any(|&(_, t)| t <= synced) {
            return;
        }
        // Moved copies first: they must be durable before the originals go.
        if writer.needs_sync() {
            if let Err(e) = writer.sync() {
                tracing::error!("GC: fsync failed ({e}); segments are kept");
                return;
            }
        }
        self.pending_free.retain(|&(id, t)| {
            if t <= synced {
                inner.flash.table.free(id);
                Stats::inc(&inner.stats.segments_freed);
                false
            } else {
                true
            }
        });
    }

    /// Releases every sealed segment nothing points at and no tombstone
    /// in it may still be needed for (rule 6 then frees it).
    fn release_dead(&mut self, inner: &Inner, writer: &SegmentWriter) {
        // While recovery runs, live bytes are still being counted.
        if inner.durability.loading.load(Relaxed) {
            return;
        }
        let current = writer.current_segment();
        let job = self.job.as_ref().map(|j| j.seg.id);
        for seg in inner.flash.table.snapshot() {
            if Some(seg.id) == current
                || Some(seg.id) == job
                || self.skip.contains(&seg.id)
                || self.is_pending(seg.id)
            {
                continue;
            }
            if seg.live_bytes.load(Acquire) == 0
                && seg.tomb_bytes.load(Acquire) == 0
                && !inner.flash.table.pinned(&seg)
            {
                self.release(inner, seg.id);
            }
        }
    }

    fn is_pending(&self, id: u32) -> bool {
        self.pending_free.iter().any(|&(p, _)| p == id)
    }

    /// Evicts the oldest sealed segment whole (its keys are dropped).
    pub fn evict_oldest_segment(&mut self, inner: &Inner, writer: &SegmentWriter) -> bool {
        if self.job.as_ref().is_some_and(|j| j.mode == Mode::Evict) {
            return true;
        }
        // An eviction pre-empts a relocation in progress (it resumes later).
        match self.oldest(inner, writer) {
            Some(job) => {
                self.job = Some(job);
                true
            }
            None => false,
        }
    }

    /// An eviction job for the oldest sealed segment.
    fn oldest(&self, inner: &Inner, writer: &SegmentWriter) -> Option<Job> {
        let current = writer.current_segment();
        let seg = inner.flash.table.snapshot().into_iter().find(|s| {
            Some(s.id) != current && !self.skip.contains(&s.id) && !self.is_pending(s.id)
        })?;
        Some(Job {
            end: seg.written.load(Acquire),
            seg,
            pos: SEGMENT_DATA_START,
            mode: Mode::Evict,
        })
    }

    fn pick(&mut self, inner: &Inner, writer: &SegmentWriter) -> Option<Job> {
        if inner.durability.loading.load(Relaxed) {
            return None;
        }
        let current = writer.current_segment();
        let tight = inner.flash.table.allocated_bytes() * 4 > inner.flash.capacity * 3;
        let garbage = inner.reclaimable();
        let ratio = inner.tun.gc_garbage_ratio.load(Relaxed);
        let plentiful = ratio > 0
            && garbage
                < (inner.flash.live_bytes.get() * ratio)
                    .max(inner.flash.segment_size * RELAXED_GARBAGE_SEGMENTS);
        let full = inner.flash.full.load(Relaxed);
        let evicting = inner.tun.eviction().evicts_segments();
        let threshold = if full && !evicting {
            // Writes wait for room: any garbage worth moving (rule 9).
            LIVE_THRESHOLD_FULL
        } else if tight || full {
            LIVE_THRESHOLD_TIGHT
        } else if plentiful {
            // Only dead segments are freed (below), nothing is moved.
            0
        } else {
            LIVE_THRESHOLD_RELAXED
        };
        let mut best: Option<(u64, Arc<Segment>)> = None;
        let mut tombs_only = None;
        let mut collectable = 0;
        for seg in inner.flash.table.snapshot() {
            if Some(seg.id) == current || self.skip.contains(&seg.id) {
                continue;
            }
            if self.is_pending(seg.id) {
                // Dead, freed once the journal synced (rule 6): room coming.
                collectable += seg.written.load(Acquire);
                continue;
            }
            if inner.flash.table.pinned(&seg) {
                // The end of an atomic batch whose members are partly in
                // older segments: it goes after them (docs/format.md).
                continue;
            }
            let live = seg.live_bytes.load(Acquire);
            if live == 0 && seg.tomb_bytes.load(Acquire) == 0 {
                // Nothing points here and nothing cancels older records.
                collectable += seg.written.load(Acquire);
                self.release(inner, seg.id);
                continue;
            }
            let size = seg
                .written
                .load(Acquire)
                .saturating_sub(SEGMENT_DATA_START)
                .max(1);
            let permille = live * 1000 / size;
            if permille < LIVE_THRESHOLD_FULL {
                collectable += size.saturating_sub(live);
            }
            if live == 0 {
                // Only tombstones may be worth keeping: read it (rule 5).
                tombs_only = tombs_only.or(Some(seg));
                continue;
            }
            if permille < threshold && best.as_ref().is_none_or(|(p, _)| permille < *p) {
                best = Some((permille, seg));
            }
        }
        inner.flash.collectable.store(collectable, Relaxed);
        let relocate = |seg: Arc<Segment>| Job {
            end: seg.written.load(Acquire),
            seg,
            pos: SEGMENT_DATA_START,
            mode: Mode::Relocate,
        };
        match (tombs_only, best) {
            (Some(seg), _) | (None, Some((_, seg))) => Some(relocate(seg)),
            // Rule 9: nothing worth moving, and a cache may evict, while
            // the log cannot open another segment (the full flag may
            // outlive the shortage: a flag alone would evict everything).
            (None, None) if full && evicting && inner.log_nearly_full() => {
                self.oldest(inner, writer)
            }
            (None, None) => None,
        }
    }

    fn finish(&mut self, inner: &Inner, job: &Job) {
        if std::mem::take(&mut self.abandoned) {
            return;
        }
        if job.seg.live_bytes.load(Acquire) == 0 {
            self.release(inner, job.seg.id);
        } else {
            tracing::warn!(
                "segment {} keeps {} live bytes after collection (unreadable records); not collected again",
                job.seg.id,
                job.seg.live_bytes.load(Acquire)
            );
            self.skip.insert(job.seg.id);
        }
    }
}

//! The background thread: demotion (RAM → flash, `demote.rs`) driven by
//! watermarks, garbage collection in bounded slices, whole-segment eviction
//! when flash is full, the active expiry sweep, the shrinking of sparse
//! key maps, and active defragmentation (`defrag.rs`).
//!
//! Backpressure: the demoter writes one chunk at a time and waits for it;
//! writers that find RAM above the budget wait on `Inner::room`, which is
//! notified after every chunk, so nothing in between grows without bound.
//!
//! Demotion is declared stuck (writers over the budget are refused or
//! evict instead of waiting) only when two looks `STUCK_CONFIRM` apart
//! both found nothing in RAM that could move. One look is not enough: RAM
//! is allocator-measured, and a command's reads of flash parts in flight
//! hold memory that is not yet a value in RAM; once they land, those
//! values can move again.

mod defrag;
mod demote;
mod demote_parts;
pub mod evict;
pub mod fetch;

use crate::log::collector;
use crate::log::writer::AppendError;
use crate::stats::Stats;
use crate::Inner;
use demote::demote_chunk;
use std::sync::atomic::Ordering::{self, Relaxed};
use std::time::{Duration, Instant};

/// How long demotion must have rested before active defragmentation runs.
const DEFRAG_AFTER_DEMOTION: Duration = Duration::from_secs(1);

/// The background thread: each turn its housekeeping (expiry, sparse
/// maps, checkpoints, defragmentation: `housekeeping`), demotion between
/// the watermarks (`demote`), the collector (`collect`), then a rest
/// until woken or the next tick when nothing was done.
pub(crate) fn run_background(inner: &Inner) {
    /// Tells the journal this thread is done, however it ends.
    struct Done<'a>(&'a Inner);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.life.background_done.store(true, Ordering::Release);
            self.0.journal.kick();
        }
    }
    let _done = Done(inner);
    let tick = Duration::from_millis(1000 / inner.tiering.hz as u64);
    let mut bg = Background {
        gc: collector::Collector::default(),
        defrag: defrag::Defrag::default(),
        tick,
        last_sweep: Instant::now(),
        next_shard: 0,
        demoting: false,
        last_demoting: Instant::now(),
        retry_at: None,
        idle_scanned: 0,
        nothing_since: None,
    };
    while !inner.life.shutdown.load(Ordering::Acquire) {
        let mut busy = inner.release_buried();
        if bg.last_sweep.elapsed() >= tick {
            bg.housekeeping(inner);
            bg.last_sweep = Instant::now();
        }
        let ram = inner.ram_used();
        if ram <= inner.tun.low_watermark() {
            inner
                .tiering
                .chains_squeezed
                .store(false, Ordering::Relaxed);
        }
        if ram > inner.tun.high_watermark() && bg.retry_at.is_none_or(|t| Instant::now() >= t) {
            bg.retry_at = None;
            if inner.ram_parts().hot_bytes == 0 && !inner.journal.busy() {
                // Nothing in RAM can go to flash: once confirmed, writers
                // are refused (or evict) at once, and no pass runs until
                // the next tick.
                confirm_nothing(inner, &mut bg.nothing_since, &mut bg.retry_at, tick);
            } else {
                bg.demoting = true;
            }
        }
        busy |= bg.demote(inner, ram);
        busy |= bg.collect(inner);
        if !busy {
            inner.tiering.room.notify_waiters();
            let (lock, cv) = &inner.tiering.wake;
            let mut woken = lock.lock();
            if !*woken {
                cv.wait_for(&mut woken, tick);
            }
            *woken = false;
        }
    }
    inner.release_buried();
    let _ = inner.flash.writer.lock().flush();
}

/// The background thread's state between turns.
struct Background {
    gc: collector::Collector,
    defrag: defrag::Defrag,
    tick: Duration,
    last_sweep: Instant,
    next_shard: usize,
    demoting: bool,
    /// When demotion last ran (active defragmentation waits for it).
    last_demoting: Instant,
    /// After a failed or fruitless demotion: not before this instant again.
    retry_at: Option<Instant>,
    /// Entries the hands examined since demotion last made progress.
    idle_scanned: usize,
    /// When a look last found nothing in RAM that could move (module doc).
    nothing_since: Option<Instant>,
}

impl Background {
    /// Once a tick: active expiry, shrinking sparse maps, a due
    /// checkpoint, and defragmentation while demotion rests.
    fn housekeeping(&mut self, inner: &Inner) {
        if inner.tun.active_expire.load(Ordering::Relaxed) {
            let t0 = Instant::now();
            let removed = inner.sweep_expired(1000);
            let ms = t0.elapsed().as_millis() as u64;
            // (A cycle that expired nothing only waited for shards a
            // command held: no expiry spike.)
            if let (Some(sink), true) = (&inner.hooks.latency_sink, ms > 0 && removed > 0) {
                sink("expire-cycle", ms);
            }
        }
        inner.shrink_sparse_maps();
        inner.maybe_checkpoint();
        // Not while demotion runs, nor in the pauses of a steady
        // stream of writes to flash: writes then refill the room it
        // frees (and a moved value may be the next to go).
        if !self.demoting && self.last_demoting.elapsed() >= DEFRAG_AFTER_DEMOTION {
            self.defrag.tick(inner);
        }
    }

    /// A chunk of demotion while RAM is between the watermarks (or its
    /// end below the low one); true when it did work.
    fn demote(&mut self, inner: &Inner, ram: u64) -> bool {
        let mut busy = false;
        if self.demoting {
            if ram < inner.tun.low_watermark() {
                self.demoting = false;
                self.nothing_since = None;
                inner.tiering.demotion_stuck.store(false, Relaxed);
            } else {
                // On failure, demotion pauses for a tick instead of spinning.
                let mut pause = |d: Duration| {
                    inner.tiering.demotion_stuck.store(true, Relaxed);
                    self.retry_at = Some(Instant::now() + d);
                };
                self.last_demoting = Instant::now();
                let demoted =
                    demote_chunk(inner, &mut inner.flash.writer.lock(), &mut self.next_shard);
                match demoted {
                    Ok(p) if p.moved + p.spared == 0 => {
                        // Stuck only once the hands passed every key without
                        // finding anything: waiting writers would wait forever.
                        // Not while the journal has a batch in hand or notes
                        // queued: its captured values are RAM it gives back
                        // when the batch is written, and what it writes can
                        // then leave RAM (changed parts and values wait for
                        // it), so writers wait (backpressure, not refusal);
                        // nor while reads from flash are in flight (their
                        // buffers are RAM that becomes values demotion can
                        // move).
                        self.idle_scanned += p.scanned;
                        if self.idle_scanned < inner.key_count() {
                            busy = true;
                        } else {
                            self.idle_scanned = 0;
                            // Set before the look: a batch that ends
                            // meanwhile still wakes this thread.
                            inner.tiering.awaits_journal.store(true, Relaxed);
                            if !inner.journal.busy()
                                && inner.journal.queued() == 0
                                && Stats::get(&inner.stats.pending_reads) == 0
                            {
                                inner.tiering.awaits_journal.store(false, Relaxed);
                                confirm_nothing(
                                    inner,
                                    &mut self.nothing_since,
                                    &mut self.retry_at,
                                    self.tick,
                                );
                                self.demoting = false;
                            }
                        }
                    }
                    Ok(_) => {
                        self.idle_scanned = 0;
                        self.nothing_since = None;
                        inner.tiering.demotion_stuck.store(false, Relaxed);
                        inner.flash.full.store(false, Relaxed);
                        busy = true;
                    }
                    Err(AppendError::Full) => {
                        // Garbage the collector can reclaim is room that is
                        // coming: writers wait for it (backpressure) rather
                        // than being refused.
                        inner.flash.full.store(true, Relaxed);
                        if inner.flash.collectable.load(Relaxed) >= inner.flash.segment_size {
                            self.retry_at = Some(Instant::now() + Duration::from_millis(5));
                            busy = true;
                        } else {
                            pause(self.tick);
                            if inner.tun.eviction().evicts_segments() {
                                busy |= self
                                    .gc
                                    .evict_oldest_segment(inner, &inner.flash.writer.lock());
                            }
                        }
                        self.demoting = false;
                    }
                    Err(AppendError::Io(e)) => {
                        Stats::inc(&inner.stats.write_errors);
                        tracing::error!("flash write failed: {e}");
                        pause(Duration::from_secs(1));
                        self.demoting = false;
                    }
                }
            }
            inner.tiering.room.notify_waiters();
        } else if ram <= inner.tun.maxmemory_ram.load(Relaxed) {
            self.nothing_since = None;
            inner.tiering.demotion_stuck.store(false, Relaxed);
        }
        busy
    }

    /// The collector: an evicted segment when the journal cannot write
    /// and there is no garbage, then one slice (several while the log
    /// holds more garbage than live data); true when it did work.
    fn collect(&mut self, inner: &Inner) -> bool {
        let mut busy = false;
        if inner.journal.status() == crate::log::journal::LogStatus::Full
            && inner.flash.collectable.load(Relaxed) < inner.flash.segment_size
            && inner.tun.eviction().evicts_segments()
        {
            // The journal cannot write and there is no garbage: evict.
            busy |= self
                .gc
                .evict_oldest_segment(inner, &inner.flash.writer.lock());
        }
        // While the log holds more garbage than live data (a write rate
        // the collector's one slice per turn does not keep up with), it
        // gets several slices per turn.
        let slices = if inner.reclaimable() > inner.flash.live_bytes.get() {
            GC_SLICES_BEHIND
        } else {
            1
        };
        for _ in 0..slices {
            let did = self.gc.step(inner, &mut inner.flash.writer.lock());
            busy |= did;
            if !did {
                break;
            }
        }
        busy
    }
}

/// A look found nothing in RAM that could move: demotion counts as stuck
/// if an earlier look found the same at least `STUCK_CONFIRM` ago;
/// otherwise the next look is set (module doc).
fn confirm_nothing(
    inner: &Inner,
    nothing_since: &mut Option<Instant>,
    retry_at: &mut Option<Instant>,
    tick: Duration,
) {
    let now = Instant::now();
    match *nothing_since {
        Some(t) if now >= t + STUCK_CONFIRM => {
            inner.tiering.demotion_stuck.store(true, Relaxed);
            *retry_at = Some(now + tick);
        }
        Some(t) => *retry_at = Some(t + STUCK_CONFIRM),
        None => {
            *nothing_since = Some(now);
            *retry_at = Some(now + STUCK_CONFIRM);
        }
    }
}

/// How long after a look that found nothing in RAM that could move a
/// second one must find the same before demotion counts as stuck (module
/// doc): longer than a command's flash reads take to land.
pub(crate) const STUCK_CONFIRM: Duration = Duration::from_millis(50);

/// Collector slices per background turn while garbage outweighs live data.
const GC_SLICES_BEHIND: usize = 8;

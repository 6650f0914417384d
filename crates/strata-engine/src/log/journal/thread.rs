//! The journal thread's loop (`run_journal`): takes a batch of notes,
//! captures and writes it under the group barrier (`groups`), makes it
//! durable per `appendfsync`, and acknowledges the tickets; a full log or
//! device keeps the batch and retries, a failed write poisons the journal
//! (the invariants are in `mod.rs`).

use super::batch::{capture_notes, write_captures};
use super::{
    put_down, requeue, take, FsyncPolicy, LogStatus, Note, BARRIER_WAIT, BATCH_DELAY, MAX_BATCH,
};
use crate::clock::now_ms;
use crate::log::writer::AppendError;
use crate::stats::Stats;
use crate::Inner;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::time::{Duration, Instant};

/// The journal thread: batches notes until shutdown, then drains them.
/// Each turn: take a batch (`next_batch`), write it (`write_batch`), make
/// what was written durable per `appendfsync` and acknowledge it
/// (`sync_and_acknowledge`).
pub(crate) fn run_journal(inner: &Inner) {
    let j = &inner.journal;
    let mut last_sync = Instant::now();
    let mut retry_at: Option<Instant> = None;
    loop {
        // Drain and stop only once the background thread is done too: its
        // last demotion or move may still note keys (invariant 6).
        let shutdown =
            inner.life.shutdown.load(Relaxed) && inner.life.background_done.load(Acquire);
        let mut notes = next_batch(inner, shutdown);
        if j.status() == LogStatus::Poisoned {
            // Nothing can be acknowledged any more; drop what was queued.
            put_down(j);
            if inner.life.shutdown.load(Relaxed) {
                return;
            }
            continue;
        }
        if shutdown && j.status() != LogStatus::Ok {
            tracing::error!(
                "shutting down with {} changes that could not be logged ({})",
                notes.len() + j.queued(),
                j.error().unwrap_or_default()
            );
            return;
        }
        if retry_at.is_some_and(|t| Instant::now() < t) && !notes.is_empty() {
            // Waiting for room: nothing is written this turn, but what was
            // written before is synced on time (below).
            requeue(j, std::mem::take(&mut notes));
            std::thread::sleep(Duration::from_millis(10));
        } else {
            retry_at = None;
        }
        if !write_batch(inner, notes, &mut retry_at) {
            continue;
        }
        if !sync_and_acknowledge(inner, shutdown, &mut last_sync) {
            continue;
        }
        if shutdown && j.queued() == 0 && !inner.flash.writer.lock().needs_sync() {
            return;
        }
    }
}

/// The next batch of notes: waits for some (a little longer for company
/// unless `appendfsync always`), then takes up to `MAX_BATCH`.
fn next_batch(inner: &Inner, shutdown: bool) -> Vec<Note> {
    let j = &inner.journal;
    let policy = j.fsync_policy();
    let (notes, _) = {
        let mut q = j.queue.lock();
        if q.notes.is_empty() && !shutdown {
            let wait = match policy {
                FsyncPolicy::Always => Duration::from_millis(100),
                _ => Duration::from_millis(50),
            };
            // Set under the queue lock: a push sees it before it drops
            // the lock, so no wake-up is lost.
            j.idle.store(true, Relaxed);
            j.wake.wait_for(&mut q, wait);
            j.idle.store(false, Relaxed);
        } else if policy != FsyncPolicy::Always && q.notes.len() < MAX_BATCH && !shutdown {
            // Let a batch gather a little company.
            j.wake.wait_for(&mut q, BATCH_DELAY);
        }
        take(j, &mut q, MAX_BATCH)
    };
    notes
}

/// Captures and writes `notes` under the group barrier (journal invariant
/// 7); a full log or device keeps them for a retry at `retry_at`. False
/// when the journal was poisoned (a failed write).
fn write_batch(inner: &Inner, mut notes: Vec<Note>, retry_at: &mut Option<Instant>) -> bool {
    let j = &inner.journal;
    // Journal invariant 7: no group runs while the batch is taken and
    // captured, so each group is in it whole or not at all. (A group
    // that runs long — a script — holds the barrier: the journal syncs
    // what it wrote meanwhile and tries again.)
    let barrier = if notes.is_empty() {
        None
    } else {
        match j.groups.quiesce(BARRIER_WAIT) {
            Some(b) => Some(b),
            None => {
                requeue(j, std::mem::take(&mut notes));
                None
            }
        }
    };
    if let Some(barrier) = barrier {
        let mut w = inner.flash.writer.lock();
        // Every note queued before the barrier when a group ended since
        // the first take: every group that ran has all its notes and
        // its end here. (Without one, the notes taken are whole.)
        let mut q = j.queue.lock();
        let (more, ticket) = if q.group_ends > 0 {
            take(j, &mut q, usize::MAX)
        } else {
            (Vec::new(), q.queued - q.notes.len() as u64)
        };
        drop(q);
        notes.extend(more);
        let caps = capture_notes(inner, &mut notes);
        drop(barrier);
        match write_captures(inner, &mut w, &caps) {
            Ok(()) => {
                put_down(j);
                j.written.store(ticket, Relaxed);
                Stats::inc(&j.batches);
                if matches!(j.status(), LogStatus::Full | LogStatus::NoSpace) {
                    tracing::info!("the flash log takes writes again");
                    j.set_status(LogStatus::Ok, None);
                    // The collector goes back to its normal thresholds.
                    inner.flash.full.store(false, Relaxed);
                }
            }
            // The batch waits for room; what was written before it is
            // still synced on time (below).
            Err(AppendError::Full) => {
                full(
                    inner,
                    notes,
                    LogStatus::Full,
                    "the flash log is full (flash-max-size)".into(),
                );
                *retry_at = Some(Instant::now() + Duration::from_millis(20));
            }
            Err(AppendError::Io(e)) if e.raw_os_error() == Some(libc::ENOSPC) => {
                full(
                    inner,
                    notes,
                    LogStatus::NoSpace,
                    format!("no space left on the flash device: {e}"),
                );
                *retry_at = Some(Instant::now() + Duration::from_millis(500));
            }
            Err(AppendError::Io(e)) => {
                drop(w);
                poison(inner, format!("flash log write failed: {e}"));
                return false;
            }
        }
        drop(w);
        // The captured values' RAM is given back now, not after the sync.
        drop(caps);
        inner.tiering.room.notify_waiters();
        if inner.tiering.awaits_journal.swap(false, Relaxed) {
            inner.wake_background();
        }
    }
    true
}

/// Makes what was written durable when `appendfsync` says it is due, and
/// acknowledges the tickets it may. False when the journal was poisoned
/// (a failed fsync).
fn sync_and_acknowledge(inner: &Inner, shutdown: bool, last_sync: &mut Instant) -> bool {
    let j = &inner.journal;
    let policy = j.fsync_policy();
    let sync_due = match policy {
        FsyncPolicy::Always => true,
        FsyncPolicy::EverySec => {
            last_sync.elapsed() >= Duration::from_secs(1)
                || shutdown
                || j.sync_requested.swap(false, Relaxed)
        }
        FsyncPolicy::No => shutdown,
    };
    if sync_due {
        let written = j.written.load(Relaxed);
        let mut w = inner.flash.writer.lock();
        if w.needs_sync() {
            let t0 = Instant::now();
            let r = w.sync();
            drop(w);
            Stats::add(&j.fsync_micros, t0.elapsed().as_micros() as u64);
            Stats::inc(&j.fsyncs);
            if let Err(e) = r {
                poison(inner, format!("fsync of the flash log failed: {e}"));
                return false;
            }
            j.last_fsync_ms.store(now_ms(), Relaxed);
        }
        *last_sync = Instant::now();
        j.synced.fetch_max(written, Relaxed);
        j.acknowledge(written);
    } else {
        // (Never `always`: it syncs every turn.) Acknowledgement does not
        // wait for fsync in these modes.
        let written = j.written.load(Relaxed);
        if policy == FsyncPolicy::No {
            j.synced.fetch_max(written, Relaxed);
        }
        j.acknowledge(written);
    }
    true
}

fn full(inner: &Inner, notes: Vec<Note>, status: LogStatus, msg: String) {
    let j = &inner.journal;
    if j.status() == LogStatus::Ok {
        tracing::warn!("{msg}: writes wait or are refused until there is room; reads keep working");
    }
    if status == LogStatus::Full {
        // The collector takes any garbage (moving records needs no more
        // room than it frees). Not for ENOSPC: moving needs free space.
        inner.flash.full.store(true, Relaxed);
        inner.wake_background();
    }
    requeue(j, notes);
    j.set_status(status, Some(msg));
}

fn poison(inner: &Inner, msg: String) {
    tracing::error!("{msg}: the journal is poisoned; writes are refused until restart");
    Stats::inc(&inner.stats.write_errors);
    inner.journal.set_status(LogStatus::Poisoned, Some(msg));
    inner.tiering.room.notify_waiters();
}

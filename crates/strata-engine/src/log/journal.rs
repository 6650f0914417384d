//! The journal: with `appendonly yes`, every change of a key reaches the
//! flash log as one record, so the log is the database (DESIGN.md).
//!
//! Shape: a mutation notes its key (`Inner::note_key`) in the shard's
//! critical section and marks the entry `F_DIRTY` ("its current state is
//! not yet in the log"); the journal thread drains the notes in batches,
//! writes each key's *current* state (a value record, or a tombstone if the
//! key is gone) through the shared [`SegmentWriter`], makes the batch
//! durable per `appendfsync`, points the entries at their records (the
//! record is the hot value's `backing`, so demoting it later costs no I/O)
//! and advances the durable *ticket*.
//!
//! Invariants:
//! 1. A note's ticket is durable only once a state of its key at least as
//!    new as the noted one is in the log and synced (`always`), or written
//!    (`everysec`, `no`). Writing the current state instead of the noted one
//!    is what lets a batch coalesce many writes of one key.
//! 2. A record is published to its entry only if the entry's version,
//!    expiry and item state are still the captured ones; otherwise a newer
//!    note is queued and the record is garbage from birth (never counted
//!    live).
//! 3. `F_DIRTY` is cleared only by publishing a record of the entry's
//!    current state (journal or demotion), so a clean entry's flash copy is
//!    always its whole state and skipping its note is safe.
//! 4. After a failed write or fsync the journal is *poisoned*: nothing more
//!    is acknowledged and writes are refused until restart (the page cache
//!    and device state after a failed fsync are unknowable). A full log or
//!    a full disk is not poison: the batch is kept and retried, and writes
//!    are refused meanwhile, then resume.
//! 5. No shard lock is held across I/O: states are captured under the lock,
//!    written without it, and re-checked when published.
//! 6. Recovery takes the later (in log order) of two records with one
//!    sequence number. So a writer whose record of a write may be older
//!    than one already logged for the same write (demotion and the
//!    collector capture a state, then write it later) checks at publish
//!    time, and if the TTL or item state moved on, has the current state
//!    logged again after its record (`Inner::metadata_changed`).

use crate::clock::now_ms;
use crate::flash::buf::{align_down, align_up, AlignedBuf};
use crate::flash::format::{self, ItemMeta, RecordHeader, RecordKind, TOMBSTONE_ORIGIN_HERE};
use crate::flash::io;
use crate::index::{CompactKey, FlashLoc, Slot, F_DIRTY};
use crate::log::writer::{AppendError, SegmentWriter};
use crate::stats::Stats;
use crate::Inner;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use std::collections::HashSet;
use std::sync::atomic::{
    AtomicU64, AtomicU8,
    Ordering::{Acquire, Relaxed},
};
use std::time::{Duration, Instant};

/// When the journal makes its writes durable (Redis's `appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FsyncPolicy {
    /// fdatasync before a write is acknowledged (group commit).
    Always = 0,
    /// fdatasync once a second: a crash loses at most about a second.
    EverySec = 1,
    /// Never fsync: the OS and device decide.
    No = 2,
}

impl FsyncPolicy {
    fn from_u8(v: u8) -> FsyncPolicy {
        match v {
            0 => FsyncPolicy::Always,
            2 => FsyncPolicy::No,
            _ => FsyncPolicy::EverySec,
        }
    }
}

/// Whether the journal can take writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LogStatus {
    Ok = 0,
    /// The log reached `flash-max-size`; the collector or eviction makes
    /// room and the journal retries (writers wait).
    Full = 1,
    /// A write or fsync failed; writes are refused until restart.
    Poisoned = 2,
    /// The device has no space left (ENOSPC); the journal retries and
    /// writes are refused until it succeeds.
    NoSpace = 3,
}

/// With `everysec` and `no`, a batch waits at most this long for company.
const BATCH_DELAY: Duration = Duration::from_millis(5);
/// Notes queued beyond this make writers wait (backpressure).
pub(crate) const MAX_QUEUED: usize = 200_000;
/// A batch writes at most this many notes before publishing.
const MAX_BATCH: usize = 8192;

/// One note.
pub(crate) enum Note {
    /// The state of this key changed (`db`: the database's id, see
    /// `keyspace::swapdb`).
    Key { db: u16, key: CompactKey },
    /// FLUSHDB (or FLUSHALL: `db` = ALL_DATABASES) at sequence number `seq`.
    Flush { db: u16, seq: u64 },
    /// SWAPDB changed the mapping of databases to ids.
    DbMap { seq: u64 },
}

#[derive(Default)]
struct Queue {
    notes: Vec<Note>,
    /// Notes ever queued: the ticket of the last one.
    queued: u64,
}

pub(crate) struct Journal {
    /// `appendonly yes`.
    pub enabled: bool,
    fsync: AtomicU8,
    queue: Mutex<Queue>,
    /// Notes in `queue` (read without its lock by admission and INFO).
    pending: std::sync::atomic::AtomicUsize,
    /// The journal thread is waiting for notes (a push must wake it).
    idle: std::sync::atomic::AtomicBool,
    /// The collector waits for a sync to free segments: sync now.
    sync_requested: std::sync::atomic::AtomicBool,
    wake: Condvar,
    /// Highest ticket whose state is in the log (written).
    written: AtomicU64,
    /// Highest ticket whose state is written and synced (for `no`: written).
    synced: AtomicU64,
    /// Highest ticket whose state is durable per the policy.
    durable: tokio::sync::watch::Sender<u64>,
    status: AtomicU8,
    error: Mutex<Option<String>>,
    pub records: AtomicU64,
    pub record_bytes: AtomicU64,
    pub batches: AtomicU64,
    pub fsyncs: AtomicU64,
    pub last_fsync_ms: AtomicU64,
    /// Microseconds spent in fdatasync, total.
    pub fsync_micros: AtomicU64,
}

impl Journal {
    pub fn new(enabled: bool, fsync: FsyncPolicy) -> Journal {
        Journal {
            enabled,
            fsync: AtomicU8::new(fsync as u8),
            queue: Mutex::new(Queue::default()),
            pending: std::sync::atomic::AtomicUsize::new(0),
            idle: std::sync::atomic::AtomicBool::new(false),
            sync_requested: std::sync::atomic::AtomicBool::new(false),
            wake: Condvar::new(),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            durable: tokio::sync::watch::channel(0).0,
            status: AtomicU8::new(LogStatus::Ok as u8),
            error: Mutex::new(None),
            records: AtomicU64::new(0),
            record_bytes: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            last_fsync_ms: AtomicU64::new(0),
            fsync_micros: AtomicU64::new(0),
        }
    }

    pub fn fsync_policy(&self) -> FsyncPolicy {
        FsyncPolicy::from_u8(self.fsync.load(Relaxed))
    }

    pub fn set_fsync_policy(&self, p: FsyncPolicy) {
        self.fsync.store(p as u8, Relaxed);
        self.wake.notify_one();
    }

    pub fn status(&self) -> LogStatus {
        match self.status.load(Relaxed) {
            1 => LogStatus::Full,
            2 => LogStatus::Poisoned,
            3 => LogStatus::NoSpace,
            _ => LogStatus::Ok,
        }
    }

    /// The error that made the journal refuse writes, if any.
    pub fn error(&self) -> Option<String> {
        self.error.lock().clone()
    }

    fn set_status(&self, s: LogStatus, msg: Option<String>) {
        if self.status() == LogStatus::Poisoned {
            return; // poison is final
        }
        self.status.store(s as u8, Relaxed);
        *self.error.lock() = msg;
        // Wake durability waiters so they see the status.
        self.durable.send_modify(|_| {});
    }

    /// Queues a note; returns its ticket.
    pub fn push(&self, note: Note) -> u64 {
        let mut q = self.queue.lock();
        q.notes.push(note);
        q.queued += 1;
        self.pending.store(q.notes.len(), Relaxed);
        let t = q.queued;
        // Wake the thread only when it sleeps: a busy journal takes the
        // note with its next batch (one futex call per batch, not per write).
        let wake = (self.fsync_policy() == FsyncPolicy::Always && self.idle.load(Relaxed))
            || q.notes.len() == MAX_BATCH;
        drop(q);
        if wake {
            self.wake.notify_one();
        }
        t
    }

    /// The ticket of the last note queued so far.
    pub fn last_ticket(&self) -> u64 {
        self.queue.lock().queued
    }

    pub fn queued(&self) -> usize {
        self.pending.load(Relaxed)
    }

    pub fn written_ticket(&self) -> u64 {
        self.written.load(Relaxed)
    }

    /// Highest ticket whose state is on the device for sure (synced, or
    /// written with `appendfsync no`). The collector frees a segment only
    /// once the notes that killed its records are this far.
    pub fn synced_ticket(&self) -> u64 {
        self.synced.load(Relaxed)
    }

    /// Advances the acknowledged ticket to `ticket` (waking waiters).
    fn acknowledge(&self, ticket: u64) {
        self.durable.send_if_modified(|d| {
            let changed = *d < ticket;
            *d = (*d).max(ticket);
            changed
        });
    }

    /// Waits until `ticket` is durable; fails if the journal cannot write.
    pub async fn wait_durable(&self, ticket: u64) -> Result<(), String> {
        let mut rx = self.durable.subscribe();
        loop {
            if *rx.borrow_and_update() >= ticket {
                return Ok(());
            }
            if self.status() != LogStatus::Ok {
                return Err(self
                    .error()
                    .unwrap_or_else(|| "the flash log cannot be written".into()));
            }
            if rx.changed().await.is_err() {
                return Err("the journal stopped".into());
            }
        }
    }

    /// Asks for a sync at the journal's next turn (the collector has dead
    /// segments to free once the notes before them are durable).
    pub fn request_sync(&self) {
        if !self.sync_requested.swap(true, Relaxed) {
            self.wake.notify_one();
        }
    }

    /// Wakes the journal thread (shutdown, SAVE).
    pub fn kick(&self) {
        self.wake.notify_one();
    }
}

/// A state captured for writing.
struct Captured {
    /// The database's id (what the record names).
    db: u16,
    key: CompactKey,
    /// Memcached item metadata of the value (default for a tombstone).
    meta: ItemMeta,
    what: State,
}

enum State {
    /// The key is gone (or expired): a tombstone with this sequence
    /// number, taken under the shard lock so that any later write of the
    /// key has a larger one.
    Gone { seq: u64 },
    /// A value in RAM, at this version and expiry.
    Hot {
        value: Bytes,
        version: u64,
        expire_at_ms: u64,
    },
    /// A cold value whose metadata changed: rewrite its record.
    Cold {
        loc: FlashLoc,
        version: u64,
        expire_at_ms: u64,
    },
}

/// The journal thread: batches notes until shutdown, then drains them.
pub(crate) fn run_journal(inner: &Inner) {
    let j = &inner.journal;
    let mut last_sync = Instant::now();
    let mut retry_at: Option<Instant> = None;
    loop {
        // Drain and stop only once the background thread is done too: its
        // last demotion or move may still note keys (invariant 6).
        let shutdown = inner.shutdown.load(Relaxed) && inner.background_done.load(Acquire);
        let policy = j.fsync_policy();
        let (notes, ticket) = {
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
            let n = q.notes.len().min(MAX_BATCH);
            let rest = q.notes.split_off(n);
            let notes = std::mem::replace(&mut q.notes, rest);
            j.pending.store(q.notes.len(), Relaxed);
            let ticket = q.queued - q.notes.len() as u64;
            (notes, ticket)
        };
        if j.status() == LogStatus::Poisoned {
            // Nothing can be acknowledged any more; drop what was queued.
            if inner.shutdown.load(Relaxed) {
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
            requeue(j, notes);
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        retry_at = None;
        if !notes.is_empty() {
            let mut w = inner.writer.lock();
            match write_notes(inner, &mut w, &notes) {
                Ok(()) => {
                    j.written.store(ticket, Relaxed);
                    Stats::inc(&j.batches);
                    if matches!(j.status(), LogStatus::Full | LogStatus::NoSpace) {
                        tracing::info!("the flash log takes writes again");
                        j.set_status(LogStatus::Ok, None);
                        // The collector goes back to its normal thresholds.
                        inner.flash_full.store(false, Relaxed);
                    }
                }
                Err(AppendError::Full) => {
                    drop(w);
                    full(
                        inner,
                        notes,
                        LogStatus::Full,
                        "the flash log is full (flash-max-size)".into(),
                    );
                    retry_at = Some(Instant::now() + Duration::from_millis(20));
                    continue;
                }
                Err(AppendError::Io(e)) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    drop(w);
                    full(
                        inner,
                        notes,
                        LogStatus::NoSpace,
                        format!("no space left on the flash device: {e}"),
                    );
                    retry_at = Some(Instant::now() + Duration::from_millis(500));
                    continue;
                }
                Err(AppendError::Io(e)) => {
                    drop(w);
                    poison(inner, format!("flash log write failed: {e}"));
                    continue;
                }
            }
            drop(w);
            inner.room.notify_waiters();
        }
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
            let mut w = inner.writer.lock();
            if w.needs_sync() {
                let t0 = Instant::now();
                let r = w.sync();
                drop(w);
                Stats::add(&j.fsync_micros, t0.elapsed().as_micros() as u64);
                Stats::inc(&j.fsyncs);
                if let Err(e) = r {
                    poison(inner, format!("fsync of the flash log failed: {e}"));
                    continue;
                }
                j.last_fsync_ms.store(now_ms(), Relaxed);
            }
            last_sync = Instant::now();
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
        if shutdown && j.queued() == 0 && !inner.writer.lock().needs_sync() {
            return;
        }
    }
}

fn requeue(j: &Journal, mut notes: Vec<Note>) {
    let mut q = j.queue.lock();
    notes.append(&mut q.notes);
    q.notes = notes;
    j.pending.store(q.notes.len(), Relaxed);
}

fn full(inner: &Inner, notes: Vec<Note>, status: LogStatus, msg: String) {
    let j = &inner.journal;
    if j.status() == LogStatus::Ok {
        tracing::warn!("{msg}: writes wait or are refused until there is room; reads keep working");
    }
    if status == LogStatus::Full {
        // The collector takes any garbage (moving records needs no more
        // room than it frees). Not for ENOSPC: moving needs free space.
        inner.flash_full.store(true, Relaxed);
        inner.wake_background();
    }
    requeue(j, notes);
    j.set_status(status, Some(msg));
}

fn poison(inner: &Inner, msg: String) {
    tracing::error!("{msg}: the journal is poisoned; writes are refused until restart");
    Stats::inc(&inner.stats.write_errors);
    inner.journal.set_status(LogStatus::Poisoned, Some(msg));
    inner.room.notify_waiters();
}

/// Writes the current state of every noted key (once per key per batch)
/// and publishes the records (invariants 2 and 5).
fn write_notes(inner: &Inner, w: &mut SegmentWriter, notes: &[Note]) -> Result<(), AppendError> {
    let now = now_ms();
    let mut seen: HashSet<(u16, &[u8])> = HashSet::with_capacity(notes.len());
    let mut states = Vec::with_capacity(notes.len());
    let mut flushes = Vec::new();
    let mut db_map = None;
    for (i, n) in notes.iter().enumerate() {
        match n {
            Note::Flush { db, seq } => flushes.push((i, *db, *seq)),
            Note::DbMap { seq } => db_map = db_map.max(Some(*seq)),
            Note::Key { db, key } => {
                if !seen.insert((*db, &key[..])) {
                    continue;
                }
                if let Some(c) = capture(inner, *db, key, now) {
                    states.push((i, c));
                }
            }
        }
    }
    let before = w.bytes_written;
    let mut tally = Tally::default();
    let mut placed: Vec<(Captured, FlashLoc)> = Vec::with_capacity(states.len());
    let mut result = Ok(());
    let mut fi = 0;
    for (i, c) in states {
        // Flush records keep their place among the key records.
        while fi < flushes.len() && flushes[fi].0 < i {
            let (_, db, seq) = flushes[fi];
            if let Err(e) = append_flush(inner, w, &mut tally, db, seq) {
                result = Err(e);
                break;
            }
            fi += 1;
        }
        if result.is_err() {
            break;
        }
        match append_state(inner, w, &mut tally, &c) {
            Ok(Some(loc)) => placed.push((c, loc)),
            Ok(None) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result.is_ok() {
        for &(_, db, seq) in &flushes[fi..] {
            if let Err(e) = append_flush(inner, w, &mut tally, db, seq) {
                result = Err(e);
                break;
            }
        }
    }
    // The mapping in force now (a later swap's note writes it again).
    let mut db_map_loc = None;
    if let (Some(seq), true) = (db_map, result.is_ok()) {
        match append_db_map(inner, w, seq) {
            Ok(loc) => {
                count(&mut tally, loc);
                db_map_loc = Some(loc);
            }
            Err(e) => result = Err(e),
        }
    }
    let flushed = w.flush();
    Stats::add(&inner.stats.flash_bytes_written, w.bytes_written - before);
    if let Err(e) = flushed {
        return Err(AppendError::Io(e));
    }
    // A failed append may have dropped records buffered before it (a chunk
    // write that failed inside it): publish nothing, the batch is retried
    // whole (records that did reach the device are garbage from birth).
    result?;
    Stats::add(&inner.journal.records, tally.records);
    Stats::add(&inner.journal.record_bytes, tally.bytes);
    for (c, loc) in &placed {
        publish(inner, c, *loc);
    }
    if let Some(loc) = db_map_loc {
        crate::keyspace::swapdb::publish_record(inner, loc);
    }
    Ok(())
}

/// Appends the current database mapping (kind 7) with sequence number `seq`.
pub(crate) fn append_db_map(
    inner: &Inner,
    w: &mut SegmentWriter,
    seq: u64,
) -> Result<FlashLoc, AppendError> {
    // Read under a shard lock (swapdb invariant 1).
    let ids = {
        let _g = inner.shards[0].lock();
        inner.dbmap.snapshot()
    };
    let value = crate::keyspace::swapdb::encode(&ids);
    let h = RecordHeader {
        kind: RecordKind::DbMap,
        db: 0,
        key_len: 0,
        value_len: value.len() as u32,
        seq,
        expire_at_ms: 0,
    };
    w.append(&h, &[], &value, inner.capacity)
}

fn append_flush(
    inner: &Inner,
    w: &mut SegmentWriter,
    tally: &mut Tally,
    db: u16,
    seq: u64,
) -> Result<(), AppendError> {
    let origin = format::origin_value(TOMBSTONE_ORIGIN_HERE);
    let h = RecordHeader {
        kind: RecordKind::Flush,
        db,
        key_len: 0,
        value_len: origin.len() as u32,
        seq,
        expire_at_ms: 0,
    };
    let loc = w.append(&h, &[], &origin, inner.capacity)?;
    count(tally, loc);
    Ok(())
}

/// Records appended by one batch, counted once the batch is on the device.
#[derive(Default)]
struct Tally {
    records: u64,
    bytes: u64,
}

fn count(tally: &mut Tally, loc: FlashLoc) {
    tally.records += 1;
    tally.bytes += loc.len as u64;
}

/// The state to log for a noted key, or None if its log copy is current.
fn capture(inner: &Inner, db: u16, key: &CompactKey, now: u64) -> Option<Captured> {
    let guard = inner.shard(key).lock();
    let d = inner.dbmap.logical(db);
    let entry = guard.dbs.get(d)?.get(&key[..]);
    let meta = entry
        .map(|e| guard.item_meta(d, key, e))
        .unwrap_or_default();
    let what = match entry {
        None => State::Gone {
            seq: inner.next_seq(),
        },
        Some(e) if e.is_expired(now) => State::Gone {
            seq: inner.next_seq(),
        },
        Some(e) if e.flags & F_DIRTY == 0 => return None,
        Some(e) => match &e.slot {
            Slot::Hot(h) => State::Hot {
                value: h.value.to_bytes(),
                version: e.version,
                expire_at_ms: e.expire_at_ms,
            },
            Slot::Cold(loc) => State::Cold {
                loc: *loc,
                version: e.version,
                expire_at_ms: e.expire_at_ms,
            },
        },
    };
    Some(Captured {
        db,
        key: key.clone(),
        meta,
        what,
    })
}

/// Appends one captured state; returns the location to publish (None for
/// a tombstone, or a cold record that could not be read).
fn append_state(
    inner: &Inner,
    w: &mut SegmentWriter,
    tally: &mut Tally,
    c: &Captured,
) -> Result<Option<FlashLoc>, AppendError> {
    match &c.what {
        State::Gone { seq } => {
            let origin = format::origin_value(TOMBSTONE_ORIGIN_HERE);
            let h = RecordHeader {
                kind: RecordKind::Tombstone,
                db: c.db,
                key_len: c.key.len() as u32,
                value_len: origin.len() as u32,
                seq: *seq,
                expire_at_ms: 0,
            };
            let loc = w.append(&h, &c.key, &origin, inner.capacity)?;
            count(tally, loc);
            Ok(None)
        }
        State::Hot {
            value,
            version,
            expire_at_ms,
        } => {
            let loc = w.append_item(
                &value_header(c, value.len(), *version, *expire_at_ms),
                &c.key,
                &c.meta,
                value,
                inner.capacity,
            )?;
            count(tally, loc);
            Ok(Some(loc))
        }
        State::Cold {
            loc,
            version,
            expire_at_ms,
        } => {
            // Only the TTL changed: the record is rewritten with the new one
            // (same sequence number; the later copy wins at recovery).
            let Some(value) = read_value(inner, c, *loc, *version) else {
                return Ok(None);
            };
            let new = w.append_item(
                &value_header(c, value.len(), *version, *expire_at_ms),
                &c.key,
                &c.meta,
                &value,
                inner.capacity,
            )?;
            count(tally, new);
            Ok(Some(new))
        }
    }
}

fn value_header(c: &Captured, len: usize, seq: u64, expire_at_ms: u64) -> RecordHeader {
    RecordHeader {
        kind: RecordKind::Value,
        db: c.db,
        key_len: c.key.len() as u32,
        value_len: len as u32,
        seq,
        expire_at_ms,
    }
}

/// Reads and verifies a cold record's value (blocking; journal thread).
fn read_value(inner: &Inner, c: &Captured, loc: FlashLoc, version: u64) -> Option<Vec<u8>> {
    let seg = inner.table.get(loc.segment)?;
    let start = align_down(loc.offset as u64);
    let end = align_up(loc.offset as usize + loc.len as usize) as u64;
    let (buf, r) = io::read_blocking(
        &*inner.io,
        seg.file.clone(),
        start,
        AlignedBuf::zeroed((end - start) as usize),
    );
    let off = (loc.offset as u64 - start) as usize;
    let rec_end = off + loc.len as usize;
    match r {
        Ok(n) if n >= rec_end => match format::decode_record(&buf[off..rec_end]) {
            Ok(rec) if rec.key == &c.key[..] && rec.header.seq == version => {
                return Some(rec.value.to_vec())
            }
            _ => {}
        },
        _ => {}
    }
    Stats::inc(&inner.stats.read_errors);
    tracing::error!(
        "journal: the flash record of a key in db {} is unreadable; its new TTL is not logged",
        c.db
    );
    None
}

/// Points the entry at its new record if it still has the captured state.
fn publish(inner: &Inner, c: &Captured, loc: FlashLoc) {
    let mut guard = inner.shard(&c.key).lock();
    let sh = &mut *guard;
    let db = inner.dbmap.logical(c.db);
    let Some(idx) = sh.dbs[db].get_index_of(&c.key[..]) else {
        return;
    };
    if sh.item_meta(db, &c.key, &sh.dbs[db][idx]) != c.meta {
        // Changed since the capture: a later batch logs it (still dirty).
        return;
    }
    let e = &mut sh.dbs[db][idx];
    let (version, expire_at_ms) = match &c.what {
        State::Hot {
            version,
            expire_at_ms,
            ..
        }
        | State::Cold {
            version,
            expire_at_ms,
            ..
        } => (*version, *expire_at_ms),
        State::Gone { .. } => return,
    };
    if e.version != version || e.expire_at_ms != expire_at_ms {
        return;
    }
    // Same version, TTL and item state: the new record is the entry's whole
    // current state, wherever the value went meanwhile (demoted, promoted,
    // moved by the collector), so it becomes the entry's record. (Leaving
    // it unpublished would leave the entry dirty with no note queued, and
    // an older record of the same write could later be copied after it.)
    let old = match &mut e.slot {
        // The hot value's bytes are unchanged (same version): only its
        // flash copy moves, so the shard's byte counters stay as they are.
        Slot::Hot(h) => h.backing.replace(loc),
        Slot::Cold(cur) => {
            let old = Some(*cur);
            e.replace_slot(&mut sh.acct, Slot::Cold(loc));
            old
        }
    };
    e.flags &= !F_DIRTY;
    if let Some(old) = old {
        inner.release_flash_quiet(old);
    }
    inner.retain_flash(loc);
}

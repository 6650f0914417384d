//! The journal: with `appendonly yes`, every change of a key reaches the
//! flash log as one record, so the log is the database (its records:
//! docs/format.md).
//!
//! Shape: a mutation notes its key (`Inner::note_key_as`) in the shard's
//! critical section and marks the entry `F_DIRTY` ("its current state is
//! not yet in the log"); a write that stores a string in RAM queues its new
//! state with the note instead (`Note::Value`, `Inner::note_stored`: the
//! journal need not look the key up again, where each lookup was a few
//! cache misses on a cold map; the note carries a copy of the value, not
//! a second reference to it: `copies`). The journal thread drains the notes in
//! batches and writes, for each key once, the state its last note in the
//! batch gives: a value note's, else the key's *current* state (a value
//! record, or a tombstone if the key is gone; of a collection that records
//! its changes, a change record of what changed since its last record:
//! `types::changes`, `collection::capture`) through the shared [`SegmentWriter`](crate::log::writer::SegmentWriter), makes the batch
//! durable per `appendfsync`, points the entries at their records (the
//! record is the hot value's `backing`, so demoting it later costs no I/O)
//! and advances the durable *ticket*.
//!
//! Invariants:
//! 1. A note's ticket is durable only once a state of its key at least as
//!    new as the noted one is in the log and synced (`always`), or written
//!    (`everysec`, `no`). Writing the current state instead of the noted one
//!    is what lets a batch coalesce many writes of one key. A value note's
//!    state is at least as new as every earlier note of its key: notes of
//!    one key are queued under its shard lock, in the order of the writes.
//!    So a change of the item state right after a store (an explicit CAS,
//!    a stale mark) notes the key again, after the store's value note; and
//!    publish logs the state again when a value note's record reached the
//!    log after a newer record of the same write (invariant 6).
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
//!    logged again after its record (`Inner::log_again`).
//! 7. A batch holding the end of a group (a transaction, a script, a
//!    multi-key command: `groups`) is written as one atomic batch, and it
//!    is taken and captured while no group runs, so no group is half in
//!    it: recovery restores all of a group or none of it.

mod batch;
mod collection;
pub(crate) mod copies;
pub(crate) mod groups;
mod publish;
mod thread;

use crate::index::CompactKey;
pub(crate) use collection::RECORD_FROM;
use groups::Groups;
use parking_lot::{Condvar, Mutex};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::{Duration, Instant};
pub(crate) use thread::run_journal;

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
/// What a note's record takes in the log beyond its value, about: the
/// header, a short key, and the slack a batch's room check adds.
const NOTE_BYTES: usize = 128;
/// Notes queued beyond this make writers wait (backpressure).
pub(crate) const MAX_QUEUED: usize = 200_000;
/// A batch takes at most this many notes (and starts without waiting for
/// company once that many are queued), more only when a group ended since:
/// then every note queued, so each group is whole in it. Large: a batch
/// writes each key once however many of its notes name it, so under a
/// write rate the journal cannot follow, bigger batches write fewer
/// records (8192 left writers waiting at the queue's limit with a p99 of
/// ~25 ms; 65536: ~10 ms, with longer but rarer waits).
const MAX_BATCH: usize = 65536;
/// The journal waits this long for running groups before it syncs what it
/// has and tries again.
const BARRIER_WAIT: Duration = Duration::from_millis(50);

/// One note.
pub(crate) enum Note {
    /// The state of this key changed (`db`: the database's id, see
    /// `keyspace::swapdb`).
    Key { db: u16, key: CompactKey },
    /// A string's whole new state, taken by the write that stored it, in
    /// the critical section that stored it (`Inner::note_stored`). When it
    /// is its key's last note in a batch, the batch writes it as it is:
    /// no second lookup of the key, no cache misses on the journal thread.
    Value(ValueNote),
    /// FLUSHDB (or FLUSHALL: `db` = ALL_DATABASES) at sequence number `seq`.
    Flush { db: u16, seq: u64 },
    /// SWAPDB changed the mapping of databases to ids.
    DbMap { seq: u64 },
    /// The function libraries changed (`keyspace::functions`).
    Functions { seq: u64 },
    /// A group's notes are all queued before this (`groups`).
    GroupEnd,
}

/// A stored string's state (`Note::Value`).
pub(crate) struct ValueNote {
    pub db: u16,
    /// The entry's position in its map when stored (a hint for publish).
    pub pos: u32,
    pub key: CompactKey,
    pub value: bytes::Bytes,
    pub version: u64,
    pub expire_at_ms: u64,
    pub client_flags: u32,
}

/// Value bytes queued in value notes beyond which writes note only their
/// key (the journal then reads the value when it captures the batch): the
/// bound on RAM that queued notes hold alive after their value was
/// overwritten.
pub(crate) const VALUE_NOTES_MAX_BYTES: usize = 64 << 20;

#[derive(Default)]
struct Queue {
    notes: Vec<Note>,
    /// Group ends among `notes`.
    group_ends: usize,
    /// Notes ever queued: the ticket of the last one.
    queued: u64,
    /// Value bytes held by the value notes in `notes`.
    value_bytes: usize,
}

impl Note {
    /// The database id and key a key or value note names.
    pub(super) fn key(&self) -> Option<(u16, &[u8])> {
        match self {
            Note::Key { db, key } => Some((*db, key)),
            Note::Value(v) => Some((v.db, &v.key)),
            _ => None,
        }
    }

    /// The value bytes a note holds alive.
    fn value_bytes(&self) -> usize {
        match self {
            Note::Value(v) => v.value.len(),
            _ => 0,
        }
    }
}

pub(crate) struct Journal {
    /// `appendonly yes`.
    pub enabled: bool,
    fsync: AtomicU8,
    queue: Mutex<Queue>,
    /// Notes in `queue` (read without its lock by admission and INFO).
    pending: std::sync::atomic::AtomicUsize,
    /// `Queue::value_bytes`, read without the queue's lock.
    pending_value_bytes: std::sync::atomic::AtomicUsize,
    /// Notes taken for the batch in hand, and their values' bytes, until
    /// it is written (or requeued): room they still need (`queued_bytes`).
    in_hand: std::sync::atomic::AtomicUsize,
    in_hand_value_bytes: std::sync::atomic::AtomicUsize,
    /// The journal thread is waiting for notes (a push must wake it).
    idle: std::sync::atomic::AtomicBool,
    /// The collector waits for a sync to free segments: sync now.
    sync_requested: std::sync::atomic::AtomicBool,
    /// Wakes the journal thread (shared with the loops that defer their
    /// wake-ups to the end of their turn: `defer_wakes`).
    wake: std::sync::Arc<Condvar>,
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
    /// Of those, change records (`types::changes`) and their bytes.
    pub change_records: AtomicU64,
    pub change_bytes: AtomicU64,
    pub batches: AtomicU64,
    /// Batches written as atomic batches (they held group ends).
    pub atomic_batches: AtomicU64,
    /// The barrier between groups and the capture of a batch.
    pub(crate) groups: Groups,
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
            pending_value_bytes: std::sync::atomic::AtomicUsize::new(0),
            in_hand: std::sync::atomic::AtomicUsize::new(0),
            in_hand_value_bytes: std::sync::atomic::AtomicUsize::new(0),
            idle: std::sync::atomic::AtomicBool::new(false),
            sync_requested: std::sync::atomic::AtomicBool::new(false),
            wake: std::sync::Arc::new(Condvar::new()),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            durable: tokio::sync::watch::channel(0).0,
            status: AtomicU8::new(LogStatus::Ok as u8),
            error: Mutex::new(None),
            records: AtomicU64::new(0),
            record_bytes: AtomicU64::new(0),
            change_records: AtomicU64::new(0),
            change_bytes: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            atomic_batches: AtomicU64::new(0),
            groups: Groups::default(),
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
        if !matches!(note, Note::GroupEnd) {
            groups::noted();
        }
        let mut q = self.queue.lock();
        q.group_ends += matches!(note, Note::GroupEnd) as usize;
        let vb = note.value_bytes();
        if vb > 0 {
            q.value_bytes += vb;
            self.pending_value_bytes.store(q.value_bytes, Relaxed);
        }
        q.notes.push(note);
        q.queued += 1;
        self.pending.store(q.notes.len(), Relaxed);
        let t = q.queued;
        // Wake the thread only when it sleeps: a busy journal takes the
        // note with its next batch (one futex call per batch, not per write).
        let always = self.fsync_policy() == FsyncPolicy::Always && self.idle.load(Relaxed);
        let full = q.notes.len() == MAX_BATCH || (always && q.notes.len() >= DEFER_MAX);
        drop(q);
        // Under `always`, a connection loop wakes the journal at the end of
        // its turn, with every note of the turn queued (`defer_wakes`).
        if full || (always && !defer_wake(&self.wake)) {
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

    /// About the log bytes the queued notes and the batch in hand will
    /// take: their values and a record's header and key for each
    /// (`NOTE_BYTES`), or, if more, the average record written so far for
    /// each. (A key note carries no value: its record is the key's state
    /// when written. Counted as a header alone, 556 key notes of 1 KiB
    /// values were admitted into a full log and never logged.)
    pub(crate) fn queued_bytes(&self) -> u64 {
        let notes = (self.queued() + self.in_hand.load(Relaxed)) as u64;
        let values =
            self.pending_value_bytes.load(Relaxed) + self.in_hand_value_bytes.load(Relaxed);
        let carried = values as u64 + notes * NOTE_BYTES as u64;
        let records = self.records.load(Relaxed);
        let average = match records {
            0 => 0,
            n => self.record_bytes.load(Relaxed) / n,
        };
        carried.max(notes * average)
    }

    /// Whether a write may queue its value with its note (the queue's value
    /// notes hold less than `VALUE_NOTES_MAX_BYTES`).
    pub(crate) fn takes_values(&self) -> bool {
        self.pending_value_bytes.load(Relaxed) < VALUE_NOTES_MAX_BYTES
    }

    /// Whether the journal has notes queued or a batch in hand (whose
    /// captured values hold RAM until it is written and published).
    pub fn busy(&self) -> bool {
        self.enabled && (self.queued() > 0 || !self.idle.load(Relaxed))
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

    /// Blocks until `ticket` is written and synced (a checkpoint's cut:
    /// `log::checkpoint`); fails if the journal cannot write or takes
    /// more than a minute.
    pub(crate) fn wait_synced(&self, ticket: u64) -> Result<(), String> {
        let t0 = Instant::now();
        while self.synced_ticket() < ticket {
            if self.status() != LogStatus::Ok {
                return Err(format!(
                    "the journal cannot write: {}",
                    self.error().unwrap_or_default()
                ));
            }
            if t0.elapsed() > Duration::from_secs(60) {
                return Err("the journal did not sync the changes in time".into());
            }
            self.request_sync();
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
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

/// Takes up to `max` notes from the queue; returns them and the ticket of
/// the last one.
fn take(j: &Journal, q: &mut Queue, max: usize) -> (Vec<Note>, u64) {
    let n = q.notes.len().min(max);
    let rest = q.notes.split_off(n);
    let notes = std::mem::replace(&mut q.notes, rest);
    q.group_ends -= notes.iter().filter(|n| matches!(n, Note::GroupEnd)).count();
    let value_bytes = notes.iter().map(Note::value_bytes).sum::<usize>();
    q.value_bytes -= value_bytes;
    j.in_hand.fetch_add(notes.len(), Relaxed);
    j.in_hand_value_bytes.fetch_add(value_bytes, Relaxed);
    j.pending.store(q.notes.len(), Relaxed);
    j.pending_value_bytes.store(q.value_bytes, Relaxed);
    (notes, q.queued - q.notes.len() as u64)
}

/// The batch in hand is written or dropped: it needs no more room.
fn put_down(j: &Journal) {
    j.in_hand.store(0, Relaxed);
    j.in_hand_value_bytes.store(0, Relaxed);
}

fn requeue(j: &Journal, mut notes: Vec<Note>) {
    let mut q = j.queue.lock();
    q.group_ends += notes.iter().filter(|n| matches!(n, Note::GroupEnd)).count();
    q.value_bytes += notes.iter().map(Note::value_bytes).sum::<usize>();
    // Back in the queue, not in hand (the journal holds one batch at most).
    put_down(j);
    notes.append(&mut q.notes);
    q.notes = notes;
    j.pending.store(q.notes.len(), Relaxed);
    j.pending_value_bytes.store(q.value_bytes, Relaxed);
}

/// Under `always`, notes queued past this many wake the journal at once,
/// deferred or not.
const DEFER_MAX: usize = 256;

thread_local! {
    /// On a connection loop's thread (`defer_wakes`): the journals it
    /// noted changes to under `appendfsync always`, to wake when its turn
    /// ends.
    static DEFERRED: RefCell<Option<Vec<std::sync::Arc<Condvar>>>> = const { RefCell::new(None) };
}

/// Makes this thread (a connection loop) defer its wake-ups of the
/// journal under `appendfsync always` to the end of its turn
/// (`wake_deferred`, called before the loop sleeps): the journal then
/// syncs every change of the turn at once, as Redis fsyncs its AOF once
/// per event-loop pass, not the first change alone.
pub fn defer_wakes() {
    DEFERRED.set(Some(Vec::new()));
}

/// Wakes the journals this loop's turn noted changes to.
pub fn wake_deferred() {
    DEFERRED.with_borrow_mut(|d| {
        if let Some(v) = d {
            for c in v.drain(..) {
                c.notify_one();
            }
        }
    });
}

/// Defers waking `wake` to the end of this loop's turn; false if this
/// thread is no loop (wake now).
fn defer_wake(wake: &std::sync::Arc<Condvar>) -> bool {
    DEFERRED.with_borrow_mut(|d| match d {
        Some(v) => {
            if !v.iter().any(|c| std::sync::Arc::ptr_eq(c, wake)) {
                v.push(wake.clone());
            }
            true
        }
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_note(len: usize) -> Note {
        Note::Value(ValueNote {
            db: 0,
            pos: 0,
            key: CompactKey::from(&b"k"[..]),
            value: bytes::Bytes::from(vec![0u8; len]),
            version: 1,
            expire_at_ms: 0,
            client_flags: 0,
        })
    }

    #[test]
    fn value_notes_hold_at_most_their_byte_bound() {
        let j = Journal::new(true, FsyncPolicy::EverySec);
        let chunk = VALUE_NOTES_MAX_BYTES / 4;
        for _ in 0..3 {
            j.push(value_note(chunk));
            assert!(j.takes_values());
        }
        j.push(value_note(chunk));
        assert!(!j.takes_values(), "a full bound takes key notes only");
        let (notes, _) = take(&j, &mut j.queue.lock(), 2);
        assert!(j.takes_values(), "taken notes free the bound");
        requeue(&j, notes);
        assert!(!j.takes_values(), "requeued notes count again");
        assert_eq!(j.queued(), 4);
        let (_, _) = take(&j, &mut j.queue.lock(), usize::MAX);
        assert_eq!(j.pending_value_bytes.load(Relaxed), 0);
    }
}

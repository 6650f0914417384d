//! The engine's state (`Inner`), shared by the index, the log, tiering and
//! the keyspace operations, grouped by concern so that a room names the
//! part it touches: the shards of the index and the sequence at the top;
//! `keys` (databases, SWAPDB's mapping, WATCH, functions, the observer);
//! `flash` (the segment files, the one writer, the space they hold and
//! part reads in flight); `tiering` (the background thread's signals and
//! the graveyard of big collections); `journal`; `durability` (loading,
//! recovery's report, checkpoints, persistence figures); `hooks` (what the
//! server gave: allocator, RAM gauge, latency sink); `life` (shutdown and
//! the threads).
//!
//! Lock order (engine invariant 8): the flash writer, then shards in
//! ascending index order, then the journal queue.

use crate::config::{self, EngineConfig, Tunables};
use crate::flash::io::IoEngine;
use crate::flash::segment::SegmentTable;
use crate::index::lock::ShardLock;
use crate::index::{self, Shard, ShardHasher};
use crate::log::journal::{Journal, Note};
use crate::log::recovery::RecoveryReport;
use crate::log::writer::SegmentWriter;
use crate::stats::{self, Stats};
use crate::{flash, keyspace, RamGauge};
use parking_lot::{Condvar, Mutex};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub(crate) struct Inner {
    /// The index, sharded by key hash. A shard lock is held only for short,
    /// non-blocking sections, never across I/O; code that needs several
    /// takes them in ascending index order. Never call `ram_used` (which
    /// may lock every shard) while holding one.
    pub shards: Box<[ShardLock]>,
    pub hasher: ShardHasher,
    /// The seed of `hasher` (written into checkpoints).
    pub shard_seed: u64,
    /// Settings CONFIG SET may change (atomics).
    pub tun: Tunables,
    pub stats: Stats,
    /// Source of sequence numbers (entry versions and record seqs).
    pub seq: AtomicU64,
    pub keys: Keys,
    pub flash: FlashSpace,
    pub tiering: TieringState,
    pub journal: Journal,
    pub durability: Durability,
    pub hooks: Hooks,
    pub life: Life,
}

/// The databases and what watches their keys.
pub(crate) struct Keys {
    pub databases: usize,
    /// Logical databases over the ids records carry (SWAPDB).
    pub dbmap: keyspace::swapdb::DbMapping,
    /// The server's function libraries (FUNCTION LOAD), kept durable.
    pub functions: keyspace::functions::Functions,
    /// Told of every change of a key (`keyspace::observe`).
    pub observer: std::sync::OnceLock<Arc<dyn keyspace::observe::KeyObserver>>,
    /// The keys clients WATCH (`keyspace::watch`).
    pub watches: keyspace::watch::Watches,
}

/// The flash log's files, its one writer, and the space they hold.
pub(crate) struct FlashSpace {
    pub table: Arc<SegmentTable>,
    pub io: Arc<dyn IoEngine>,
    /// The one writer of the flash log (journal, demotion, collector).
    pub writer: Mutex<SegmentWriter>,
    /// Bytes the flash log may occupy.
    pub capacity: u64,
    pub segment_size: u64,
    pub write_chunk: usize,
    /// Whether segment files use O_DIRECT.
    pub direct_io: bool,
    /// Live record bytes on flash (sum over segments): striped, as the
    /// journal adds to it and the loops take from it on every overwrite.
    pub live_bytes: stats::Striped,
    /// Set when the journal or demotion found the log full, or admission
    /// found it too full for what the journal holds; the collector then
    /// moves segments worth moving or evicts (its rule 9). Cleared when
    /// the journal or demotion writes again.
    pub full: AtomicBool,
    /// Garbage in segments the collector would move while the log is full
    /// (its rule 9), as its last look found it: room writers may wait for.
    pub collectable: AtomicU64,
    /// Part records being read, and how to wait for each: a part many
    /// commands want at once (a queue's cold tail) is read once
    /// (`keyspace::chunks::load_parts`).
    pub part_loads:
        Mutex<std::collections::HashMap<crate::base::FlashLoc, Arc<tokio::sync::Notify>>>,
}

/// The background (tiering) thread's pace and signals.
pub(crate) struct TieringState {
    pub hz: u32,
    /// Wakes the background thread.
    pub wake: (Mutex<bool>, Condvar),
    /// Notified when demotion or eviction made room.
    pub room: tokio::sync::Notify,
    /// Set by the background thread when a full pass found nothing to demote
    /// or the flash is full: waiting for room would not help.
    pub demotion_stuck: AtomicBool,
    /// Set by demotion when it had to read cold chains back to free RAM
    /// (nothing else was left to move), cleared once RAM is back under the
    /// low watermark: meanwhile no blind add grows a chain
    /// (`chunked::blind`), whose steps demotion would read back again.
    pub chains_squeezed: AtomicBool,
    /// Set by the background thread when demotion found nothing to demote
    /// while the journal had a batch in hand: the journal wakes it when
    /// the batch is published (its values can then leave RAM).
    pub awaits_journal: AtomicBool,
    /// Big chunked collections removed from the index (DEL, UNLINK, expiry,
    /// overwrite) whose records the background thread releases and whose
    /// parts it frees (`Inner::bury`): O(1) for the command that removed
    /// them. A segment cannot be freed before: its live bytes still count
    /// those records.
    pub graveyard: Mutex<Vec<index::Slot>>,
}

/// Loading, recovery and checkpoints.
pub(crate) struct Durability {
    pub persist: stats::PersistStats,
    /// Set until recovery finished.
    pub loading: AtomicBool,
    pub recovery: Mutex<RecoveryReport>,
    /// Log bytes between automatic checkpoints (at least).
    pub checkpoint_interval: u64,
}

/// What the server gave the engine to call.
pub(crate) struct Hooks {
    /// The allocator's advice for active defragmentation, if any.
    pub allocator: Option<config::AllocatorHooks>,
    pub ram_gauge: Option<RamGauge>,
    pub latency_sink: Option<config::LatencySink>,
}

/// Shutdown and the background threads.
pub(crate) struct Life {
    pub shutdown: AtomicBool,
    /// The background (tiering) thread has finished: the journal drains and
    /// stops only after it, since its last demotion or move may still note
    /// keys whose state must be logged again (journal invariant 6).
    pub background_done: AtomicBool,
    /// Background threads (recovery, then tiering and journal).
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    /// This `Inner`, for threads that need an `Arc` of it (checkpoints).
    pub self_ref: Mutex<std::sync::Weak<Inner>>,
}

impl Inner {
    /// The state of a store opened with `cfg` over the segment files
    /// `table` (recovery has not run yet: loading).
    pub(crate) fn new(
        cfg: &EngineConfig,
        table: Arc<SegmentTable>,
        io: Arc<dyn IoEngine>,
        shard_seed: u64,
        capacity: u64,
        segment_size: u64,
        direct_io: bool,
    ) -> Inner {
        let databases = cfg.databases.max(1);
        Inner {
            shards: (0..cfg.shards.max(1))
                .map(|_| ShardLock::new(Shard::new(databases)))
                .collect(),
            hasher: ShardHasher::with_seed(shard_seed),
            shard_seed,
            tun: Tunables::new(cfg),
            stats: Stats::default(),
            seq: AtomicU64::new(1),
            keys: Keys {
                databases,
                dbmap: keyspace::swapdb::DbMapping::identity(databases),
                functions: Default::default(),
                observer: Default::default(),
                watches: Default::default(),
            },
            flash: FlashSpace {
                writer: Mutex::new(SegmentWriter::new(
                    table.clone(),
                    io.clone(),
                    segment_size,
                    cfg.write_chunk,
                )),
                table,
                io,
                capacity,
                segment_size,
                write_chunk: cfg.write_chunk,
                direct_io,
                live_bytes: Default::default(),
                full: AtomicBool::new(false),
                collectable: AtomicU64::new(0),
                part_loads: Mutex::new(Default::default()),
            },
            tiering: TieringState {
                hz: cfg.hz.clamp(1, 500),
                wake: (Mutex::new(false), Condvar::new()),
                room: tokio::sync::Notify::new(),
                demotion_stuck: AtomicBool::new(false),
                chains_squeezed: AtomicBool::new(false),
                awaits_journal: AtomicBool::new(false),
                graveyard: Mutex::new(Vec::new()),
            },
            journal: Journal::new(cfg.appendonly, cfg.appendfsync),
            durability: Durability {
                persist: stats::PersistStats::default(),
                loading: AtomicBool::new(true),
                recovery: Mutex::new(RecoveryReport::default()),
                checkpoint_interval: cfg.checkpoint_interval,
            },
            hooks: Hooks {
                allocator: cfg.allocator,
                ram_gauge: cfg.ram_gauge.clone(),
                latency_sink: cfg.latency_sink.clone(),
            },
            life: Life {
                shutdown: AtomicBool::new(false),
                background_done: AtomicBool::new(false),
                threads: Mutex::new(Vec::new()),
                self_ref: Mutex::new(std::sync::Weak::new()),
            },
        }
    }

    pub fn shard_index(&self, key: &[u8]) -> usize {
        (self.hasher.hash_one(key) >> 32) as usize % self.shards.len()
    }

    pub fn shard(&self, key: &[u8]) -> &ShardLock {
        &self.shards[self.shard_index(key)]
    }

    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Notes a FLUSHDB (of logical database `db`) / FLUSHALL
    /// (`ALL_DATABASES`); caller holds every shard lock.
    pub(crate) fn note_flush(&self, db: u16) {
        if self.journal.enabled {
            let seq = self.next_seq();
            let db = if db == flash::format::ALL_DATABASES {
                db
            } else {
                self.keys.dbmap.id(db as usize)
            };
            self.journal.push(Note::Flush { db, seq });
        }
    }

    /// `F_DIRTY` when the journal is on, else 0.
    pub(crate) fn dirty_flag(&self) -> u8 {
        if self.journal.enabled {
            index::F_DIRTY
        } else {
            0
        }
    }

    /// Stops and joins the background threads (the journal drains first).
    pub(crate) fn stop_threads(&self) {
        self.life.shutdown.store(true, Ordering::Release);
        self.wake_background();
        self.journal.kick();
        let threads: Vec<_> = std::mem::take(&mut *self.life.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        // The recovery thread may have started the others meanwhile.
        let threads: Vec<_> = std::mem::take(&mut *self.life.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }

    pub fn wake_background(&self) {
        let (lock, cv) = &self.tiering.wake;
        *lock.lock() = true;
        cv.notify_one();
    }
}

//! # strata-engine: the tiered store
//!
//! Every key and its metadata live in RAM ([`index`]); each value is *hot*
//! (bytes in RAM) or *cold* (one record in the flash log). Under memory
//! pressure the background thread *demotes* the coldest hot values to flash
//! (`tiering`); a read of a cold value costs one device read and may
//! *promote* the value back to RAM ([`tiering::fetch`], policy [`PromotePolicy`]).
//! Overwrites, deletes and expiries of cold values only touch RAM: the old
//! record becomes garbage, and the collector (`log::collector`) reclaims segments with
//! few *live bytes* by moving their live records.
//!
//! Layout: [`index`] (the RAM index), [`types`] (what a value is: strings
//! and the collections' RAM structures and packed encoding), `keyspace`
//! (the operations commands call: strings, memcached items, generic key
//! operations, and `KeysView` for collections), [`tiering`] (demotion,
//! fetch and promotion, eviction), [`log`] (the flash log as the database:
//! writer, journal, collector, checkpoint, recovery), [`flash`] (segment
//! files, record format, I/O backends).
//!
//! Glossary: *segment* — one file of the log, appended to sequentially and
//! freed whole; *live bytes* — bytes of a segment's records that index
//! entries still point at; *stash* — the write of a demoted value; *fetch*
//! — the read of a cold value; *backing* — a valid flash copy of a hot
//! value (demoting it again needs no I/O).
//!
//! ## Invariants
//! 1. Existence, type, TTL and size of every key are answered from RAM.
//! 2. Every key has exactly one authoritative location; a flash location is
//!    published to the index only after its bytes are written.
//! 3. An index entry never points at a segment that has been freed.
//! 4. A cold read is one device read of the record's pages, and its result
//!    is verified by checksum, key and sequence number before it is served.
//! 5. No lock is held across I/O: background work and reads re-check the
//!    entry's version and location before they change it.
//! 6. Stored values own exactly-sized allocations (the engine copies the
//!    bytes it is given), so RAM accounting matches the allocator.
//! 7. This crate knows no protocol and no sockets.
//! 8. With `appendonly yes` the flash log is the database: every change of
//!    a key reaches it as one record (`journal`), the index is checkpointed
//!    (`checkpoint`) and a restart replays only the log after the
//!    checkpoint (`recovery`). Every append goes through the one
//!    `SegmentWriter` behind `Inner::flash.writer`; lock order is writer, then
//!    shard, then the journal queue.
//! 9. Records, checkpoint entries and journal notes name a key's database
//!    by its stable *id*; the index is arranged by logical database (what
//!    SELECT names), and SWAPDB changes only the mapping between the two
//!    (`keyspace::swapdb`), converted under a shard lock.

mod accounting;
pub mod base;
pub mod clock;
pub mod config;
pub mod error;
pub mod flash;
pub mod index;
mod inner;
mod keyspace;
pub mod log;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;
pub mod tiering;
pub mod types;

pub use config::{
    AllocatorHooks, EngineConfig, EvictionPolicy, LatencySink, LfuParams, PromotePolicy, RamGauge,
};
pub use error::EngineError;
pub use flash::io::{before_loop_sleeps, enter_loop, set_poll_us as set_flash_poll_us, IoBackend};
pub use index::access::NoTouch;
pub use index::Value;
pub use keyspace::bigstr::{StrEdit, StrRef};
pub use keyspace::chunks::{pick_index, Need, ZTo};
pub use keyspace::items::{Emptied, Invalidate, Item, ItemCond, ItemGet, NewItem, StoreOutcome};
pub use keyspace::observe::{KeyChange, KeyObserver};
pub use keyspace::strings::{
    Current, ExpireUpdate, InRam, ItemState, Mutation, SetCond, SetOptions,
};
pub use keyspace::view::{ColdKeys, KeysView, ValueRef};
pub use keyspace::watch::Watched;
pub use keyspace::{ExpireCond, KeyInfo, LargestCollection, Location, TtlState};
pub use log::journal::{FsyncPolicy, LogStatus};
pub use log::persistence::{PersistInfo, ShutdownSave};
pub use log::recovery::RecoveryReport;
pub use stats::TieredInfo;
pub use stats::WriteLookups;
pub use tiering::evict::{Admission, OomCause, WaitFor};
pub use tiering::fetch::Read;
pub use types::bigstr::Piece;
pub use types::{Collection, ValueType};

use flash::io::IoEngine;
use flash::segment::SegmentTable;
pub(crate) use inner::Inner;
use log::{checkpoint, journal, recovery};
use stats::Stats;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A handle to the store. Cheap to clone; the background thread stops when
/// the last handle is dropped.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    _background: Arc<BackgroundGuard>,
}

struct BackgroundGuard {
    inner: Arc<Inner>,
    /// The flash directory's lock (`flash::lock`), released after the
    /// threads stopped (fields drop after `drop` ran).
    _lock: flash::lock::DirLock,
}

impl Drop for BackgroundGuard {
    fn drop(&mut self) {
        self.inner.stop_threads();
    }
}

impl Engine {
    /// `Inner::audit_live_bytes` (tests and DEBUG AUDIT).
    pub fn audit_live_bytes(&self) -> Vec<(u32, u64, u64)> {
        self.inner.audit_live_bytes()
    }

    /// Opens the store and waits for recovery (see [`Engine::start`]).
    pub fn open(cfg: EngineConfig) -> Result<Engine, EngineError> {
        let e = Engine::start(cfg)?;
        e.wait_loaded();
        Ok(e)
    }

    /// Opens the store: creates the flash directory, starts the I/O backend,
    /// and recovers the data of an earlier run on a thread, then starts the
    /// tiering and journal threads. Returns at once; `is_loading` is true
    /// until recovery is done (commands must wait, as Redis's LOADING).
    pub fn start(cfg: EngineConfig) -> Result<Engine, EngineError> {
        std::fs::create_dir_all(&cfg.flash_dir)?;
        // Before anything is read: another process may be writing it.
        let lock = flash::lock::DirLock::acquire(&cfg.flash_dir, "flash-dir")?;
        let direct = cfg.direct_io && flash::segment::direct_io_supported(&cfg.flash_dir);
        if cfg.direct_io && !direct {
            tracing::warn!(
                "O_DIRECT is not supported in {}; flash reads may be served by the page cache",
                cfg.flash_dir.display()
            );
        }
        let table = Arc::new(SegmentTable::open(&cfg.flash_dir, direct)?);
        let shard_seed = checkpoint::peek_shard_seed(&cfg.flash_dir).unwrap_or_else(rand::random);
        let io: Arc<dyn IoEngine> = match &cfg.io_engine {
            Some(io) => io.clone(),
            None => flash::io::open_backend(cfg.io_backend, cfg.io_depth)?,
        };
        let capacity = if cfg.flash_max_size > 0 {
            cfg.flash_max_size
        } else {
            auto_capacity(&cfg.flash_dir)?
        };
        let segment_size = fit_segment_size(cfg.segment_size, capacity);
        if segment_size != cfg.segment_size {
            tracing::warn!(
                "flash-max-size ({capacity} bytes) holds fewer than {MIN_SEGMENTS} segments of \
                 flash-segment-size ({} bytes): segments of {segment_size} bytes are used",
                cfg.segment_size
            );
        }
        let inner = Arc::new(Inner::new(
            &cfg,
            table,
            io,
            shard_seed,
            capacity,
            segment_size,
            direct,
        ));
        *inner.life.self_ref.lock() = Arc::downgrade(&inner);
        let rec = inner.clone();
        let thread = std::thread::Builder::new()
            .name("strata-recovery".into())
            .spawn(move || {
                let report = recovery::recover(&rec, rec.journal.enabled);
                *rec.durability.recovery.lock() = report;
                if rec.life.shutdown.load(Ordering::Acquire) {
                    rec.durability.loading.store(false, Ordering::Release);
                    return;
                }
                let bg = rec.clone();
                let tiering = std::thread::Builder::new()
                    .name("strata-tiering".into())
                    .spawn(move || tiering::run_background(&bg));
                let jr = rec.clone();
                let journal = std::thread::Builder::new()
                    .name("strata-journal".into())
                    .spawn(move || journal::run_journal(&jr));
                {
                    let mut threads = rec.life.threads.lock();
                    for t in [tiering, journal] {
                        match t {
                            Ok(t) => threads.push(t),
                            Err(e) => tracing::error!("cannot start a background thread: {e}"),
                        }
                    }
                }
                rec.durability.loading.store(false, Ordering::Release);
            })?;
        inner.life.threads.lock().push(thread);
        Ok(Engine {
            _background: Arc::new(BackgroundGuard {
                inner: inner.clone(),
                _lock: lock,
            }),
            inner,
        })
    }

    /// Whether recovery is still running.
    pub fn is_loading(&self) -> bool {
        self.inner.durability.loading.load(Ordering::Acquire)
    }

    /// Blocks until recovery is done.
    pub fn wait_loaded(&self) {
        while self.is_loading() {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// What the last recovery found.
    pub fn recovery_report(&self) -> RecoveryReport {
        self.inner.durability.recovery.lock().clone()
    }

    pub fn databases(&self) -> usize {
        self.inner.keys.databases
    }

    pub fn io_backend_name(&self) -> &'static str {
        self.inner.flash.io.name()
    }

    /// Sets the RAM budget (CONFIG SET maxmemory-ram).
    pub fn set_maxmemory_ram(&self, bytes: u64) {
        self.inner.tun.maxmemory_ram.store(bytes, Ordering::Relaxed);
        self.inner.wake_background();
    }
    pub fn set_maxmemory(&self, bytes: u64) {
        self.inner.tun.maxmemory.store(bytes, Ordering::Relaxed);
    }
    pub fn set_eviction(&self, p: EvictionPolicy) {
        self.inner.tun.set_eviction(p);
    }
    /// `lfu-log-factor` and `lfu-decay-time` (CONFIG SET).
    pub fn set_lfu(&self, p: LfuParams) {
        self.inner.tun.set_lfu_params(p);
    }
    /// `maxmemory-samples` (CONFIG SET).
    pub fn set_maxmemory_samples(&self, n: u32) {
        self.inner
            .tun
            .maxmemory_samples
            .store(n.max(1), Ordering::Relaxed);
    }
    /// Whether the background sweep deletes expired keys (Redis's active
    /// expiry; DEBUG SET-ACTIVE-EXPIRE). Reads still drop expired keys.
    pub fn set_active_expire(&self, on: bool) {
        self.inner.tun.active_expire.store(on, Ordering::Relaxed);
    }
    /// `activedefrag`: whether hot values may be moved to emptier pages.
    pub fn set_defrag(&self, on: bool) {
        self.inner.tun.defrag.store(on, Ordering::Relaxed);
    }

    /// Active defragmentation's counters: values moved, values looked at
    /// and left, and whether the last tick found fragmentation.
    /// Collections deleted whose parts the background thread has still to
    /// free (Redis's `lazyfree_pending_objects`).
    pub fn lazyfree_pending(&self) -> usize {
        self.inner.tiering.graveyard.lock().len()
    }

    pub fn defrag_info(&self) -> (u64, u64, bool) {
        let s = &self.inner.stats;
        (
            Stats::get(&s.defrag_hits),
            Stats::get(&s.defrag_misses),
            Stats::get(&s.defrag_running) != 0,
        )
    }

    pub fn set_gc_garbage_ratio(&self, n: u64) {
        self.inner.tun.gc_garbage_ratio.store(n, Ordering::Relaxed);
    }

    pub fn set_min_value_size(&self, n: usize) {
        self.inner
            .tun
            .min_value_size
            .store(n as u64, Ordering::Relaxed);
    }
    pub fn set_promote(&self, p: PromotePolicy) {
        self.inner.tun.set_promote(p);
    }
    /// Sets the thresholds of Redis's small encodings (CONFIG SET
    /// hash-max-listpack-entries ...).
    pub fn set_encoding_limits(&self, l: types::EncodingLimits) {
        self.inner.tun.set_encoding_limits(l);
    }
    pub fn encoding_limits(&self) -> types::EncodingLimits {
        self.inner.tun.encoding_limits()
    }

    /// Zeroes the resettable counters (CONFIG RESETSTAT).
    pub fn reset_stats(&self) {
        self.inner.stats.reset();
    }

    /// The tiering state and counters, for INFO.
    pub fn tiered_info(&self) -> TieredInfo {
        self.inner.tiered_info()
    }

    /// RAM in use as the engine measures it for demotion.
    pub fn ram_used(&self) -> u64 {
        self.inner.ram_used()
    }
}

/// The fewest segments the log should hold: the collector and eviction
/// work a segment at a time, and a log of one or two segments could not
/// take a single write once the first was full.
const MIN_SEGMENTS: u64 = 4;

/// The segment size for a log of `capacity` bytes: `configured`, or the
/// largest power of two that gives `MIN_SEGMENTS` segments, no smaller
/// than 1 MiB (or `configured`, if smaller still).
fn fit_segment_size(configured: u64, capacity: u64) -> u64 {
    if capacity / configured.max(1) >= MIN_SEGMENTS {
        return configured;
    }
    let fit = 1u64 << (capacity / MIN_SEGMENTS).max(1).ilog2();
    fit.max(configured.min(1 << 20)).min(configured)
}

/// 90% of the free space of the partition holding `dir`.
fn auto_capacity(dir: &std::path::Path) -> Result<u64, EngineError> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| EngineError::Io(std::io::Error::other("flash-dir contains a NUL byte")))?;
    // SAFETY: statvfs writes into the zeroed struct we pass.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid C string, st a valid out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let free = st.f_bavail as u64 * st.f_frsize as u64;
    Ok(free / 10 * 9)
}

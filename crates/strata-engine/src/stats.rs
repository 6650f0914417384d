//! Counters of the engine, read by INFO. Every field is counted where the
//! event happens (never estimated); gauges are maintained exactly.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default)]
pub struct Stats {
    /// Reads answered from a value in RAM.
    pub ram_hits: Striped,
    /// Reads that had to fetch the value from flash.
    pub ram_misses: Striped,
    /// RAM hits on values that also have a valid flash copy (promoted or
    /// "cooling" values that can be dropped from RAM without I/O).
    pub ram_cool_hits: Striped,
    /// Values written to flash by demotion.
    pub stashes: AtomicU64,
    /// Record bytes written by demotion (the logical write volume).
    pub stash_bytes: AtomicU64,
    /// Device reads of cold values.
    pub fetches: AtomicU64,
    /// Flash records invalidated by overwrite, delete, expire or eviction.
    pub flash_deletes: Striped,
    /// Values promoted from flash back to RAM.
    pub uploads: AtomicU64,
    /// Reads whose record failed its checksum or did not match the index,
    /// or whose device read failed.
    pub read_errors: AtomicU64,
    /// Record bytes moved by the garbage collector.
    pub gc_bytes_relocated: AtomicU64,
    /// Segments freed by the garbage collector or eviction.
    pub segments_freed: AtomicU64,
    /// Bytes written to the device, by who wrote them.
    pub device: DeviceWrites,
    /// Device reads in flight (gauge).
    pub pending_reads: AtomicU64,
    /// Values in the demotion write being issued (gauge).
    pub pending_stashes: AtomicU64,
    /// Keys evicted by maxmemory-policy.
    pub evicted_keys: AtomicU64,
    /// Keys removed because their TTL passed.
    pub expired_keys: AtomicU64,
    /// Lookups that found / did not find the key.
    pub keyspace_hits: Striped,
    pub keyspace_misses: Striped,
    /// Demotions of hot values with a clean flash copy (no I/O needed).
    pub free_demotions: AtomicU64,
    /// Entries the demotion hands examined.
    pub demotion_scanned: AtomicU64,
    /// Flash write failures.
    pub write_errors: AtomicU64,
    /// Memcached gets that found their item expired (memcached's get_expired).
    pub get_expired: AtomicU64,
    /// Parts of chunked collections read from flash into RAM.
    pub chunk_loads: AtomicU64,
    /// Chunk records written (journal, demotion, checkpoint saves).
    pub chunks_written: AtomicU64,
    /// Part change records written (kind 13).
    pub part_changes_written: AtomicU64,
    /// Parts read back with their cold chain's steps applied.
    pub part_chain_loads: AtomicU64,
    /// Part change records of spilled chains read back with their parts.
    pub part_chain_spilled_reads: AtomicU64,
    /// Parts on flash read by their image alone for a read (`peek`).
    pub part_peeks: AtomicU64,
    /// Parts on flash a pipeline's read-ahead started reading.
    pub part_reads_ahead: AtomicU64,
    /// Elements added to parts on flash without reading them.
    pub part_blind_adds: AtomicU64,
    /// Cold chains read back by demotion to be written whole.
    pub part_chain_reclaims: AtomicU64,
    /// Hot values active defragmentation moved / looked at and left.
    pub defrag_hits: AtomicU64,
    pub defrag_misses: AtomicU64,
    /// Whether the last tick found the allocator fragmented (gauge).
    pub defrag_running: AtomicU64,
}

/// A counter: an atomic, or a `Striped` one for counters every read bumps.
pub trait Count {
    fn add(&self, n: u64);
    fn get(&self) -> u64;
    fn zero(&self);
}

impl Count for AtomicU64 {
    #[inline]
    fn add(&self, n: u64) {
        self.fetch_add(n, Relaxed);
    }
    fn get(&self) -> u64 {
        self.load(Relaxed)
    }
    fn zero(&self) {
        self.store(0, Relaxed);
    }
}

/// Stripes of a `Striped` counter.
const STRIPES: usize = 8;

/// One stripe, alone on its cache lines (two: the adjacent-line
/// prefetcher pairs them).
#[derive(Default)]
#[repr(align(128))]
struct Stripe(AtomicU64);

/// A counter bumped by every request thread (the hit and miss counters of
/// each read): each thread adds to a stripe of its own, so two cores never
/// pass the line back and forth on every read (one shared atomic per
/// counter cost a RAM GET ~3 of them per request); read as the sum.
/// A gauge (`sub`) may take a stripe below zero: stripes wrap, and their
/// wrapping sum is the exact value.
#[derive(Default)]
pub struct Striped([Stripe; STRIPES]);

impl Striped {
    #[inline]
    pub fn add(&self, n: u64) {
        let i = STRIPE.with(|s| *s);
        self.0[i].0.fetch_add(n, Relaxed);
    }

    /// The counter's value: the wrapping sum of its stripes.
    pub fn get(&self) -> u64 {
        self.0
            .iter()
            .fold(0u64, |t, s| t.wrapping_add(s.0.load(Relaxed)))
    }

    /// Takes `n` from the counter (a gauge's decrease).
    #[inline]
    pub fn sub(&self, n: u64) {
        let i = STRIPE.with(|s| *s);
        self.0[i].0.fetch_sub(n, Relaxed);
    }
}

thread_local! {
    static STRIPE: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, Relaxed) % STRIPES
    };
}

impl Count for Striped {
    #[inline]
    fn add(&self, n: u64) {
        Striped::add(self, n);
    }
    fn get(&self) -> u64 {
        Striped::get(self)
    }
    fn zero(&self) {
        for s in &self.0 {
            s.0.store(0, Relaxed);
        }
    }
}

impl Stats {
    #[inline]
    pub fn inc(c: &impl Count) {
        c.add(1);
    }
    #[inline]
    pub fn add(c: &impl Count, n: u64) {
        c.add(n);
    }
    pub fn get(c: &impl Count) -> u64 {
        c.get()
    }

    /// CONFIG RESETSTAT: zero the counters (not the gauges).
    pub fn reset(&self) {
        for c in [
            &self.ram_hits,
            &self.ram_misses,
            &self.ram_cool_hits,
            &self.keyspace_hits,
            &self.keyspace_misses,
        ] {
            c.zero();
        }
        for c in [
            &self.fetches,
            &self.chunk_loads,
            &self.uploads,
            &self.read_errors,
            &self.evicted_keys,
            &self.expired_keys,
            &self.defrag_hits,
            &self.defrag_misses,
        ] {
            c.zero();
        }
    }
}

/// Bytes written to the device, counted where each write is issued, by
/// the writer that issued it: the segment log's (records, segment headers,
/// page padding, the writes of segment rolls) and the checkpoint files'.
/// Every device write of the engine is in one of them; none is estimated.
#[derive(Default)]
pub struct DeviceWrites {
    /// The journal's batches (appendonly).
    pub journal: AtomicU64,
    /// Demotion: values and parts leaving RAM.
    pub demotion: AtomicU64,
    /// The collector's moves of live records.
    pub collector: AtomicU64,
    /// Records a checkpoint writes into the log (saved values, the
    /// database mapping, the function libraries).
    pub checkpoint: AtomicU64,
    /// Checkpoint files (`checkpoint.tmp`, renamed in place).
    pub checkpoint_files: AtomicU64,
}

impl DeviceWrites {
    /// Bytes appended to the segment log.
    pub fn log(&self) -> u64 {
        [
            &self.journal,
            &self.demotion,
            &self.collector,
            &self.checkpoint,
        ]
        .iter()
        .map(|c| c.load(Relaxed))
        .sum()
    }
    /// Every byte written to the device.
    pub fn total(&self) -> u64 {
        self.log() + self.checkpoint_files.load(Relaxed)
    }
}

/// A consistent-enough snapshot of the tiering state for INFO.
#[derive(Clone, Debug, Default)]
pub struct TieredInfo {
    pub values_in_ram: u64,
    pub values_in_flash: u64,
    pub hot_bytes: u64,
    pub cold_bytes: u64,
    pub index_bytes: u64,
    /// Keys whose entry is boxed whole (hot, or with state a packed cell
    /// cannot hold); the others are packed (`index/cell.rs`).
    pub index_boxed_keys: u64,
    /// Bytes of those boxes (part of `index_bytes`).
    pub index_boxed_bytes: u64,
    pub keys: u64,
    /// Keys per value type (`ValueType as usize`: string, hash, list, set,
    /// zset).
    pub keys_by_type: [u64; 6],
    /// Collections in RAM / only on flash, and their packed bytes (each
    /// collection is one chunk while collections are packed whole).
    pub collections_in_ram: u64,
    pub collections_in_flash: u64,
    /// Parts of chunked collections in RAM / only on flash.
    pub chunks_in_ram: u64,
    pub chunks_in_flash: u64,
    pub chunk_loads: u64,
    pub chunks_written: u64,
    /// Part change records written (a part's change logged as its change).
    pub part_changes_written: u64,
    /// Parts read back from flash with the steps of their changes since
    /// their image applied (cold chains).
    pub part_chain_loads: u64,
    /// Part change records read back with their parts: the steps of
    /// spilled cold chains, which RAM no longer held.
    pub part_chain_spilled_reads: u64,
    /// Parts on flash whose image alone answered a read of some of their
    /// elements (their spilled chains' blind adds added other elements).
    pub part_peeks: u64,
    /// Parts on flash whose reads a pipeline's read-ahead started while
    /// the connection waited for an earlier request
    /// (`Engine::prefetch_parts`).
    pub part_reads_ahead: u64,
    /// Elements added to parts on flash without reading them (blind adds:
    /// the part's membership filter ruled the element out).
    pub part_blind_adds: u64,
    /// Cold chains demotion read back to write whole (RAM was short).
    pub part_chain_reclaims: u64,
    pub collections_in_ram_bytes: u64,
    pub collections_in_flash_bytes: u64,
    pub ram_hits: u64,
    pub ram_misses: u64,
    pub ram_cool_hits: u64,
    pub stashes: u64,
    pub stash_bytes: u64,
    /// Record bytes the journal wrote (the logical volume of writes when
    /// appendonly is on).
    pub journal_bytes: u64,
    pub fetches: u64,
    pub flash_deletes: u64,
    pub uploads: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    pub gc_bytes_relocated: u64,
    pub segments: u64,
    pub segments_freed: u64,
    /// Every byte written to the device (`DeviceWrites::total`).
    pub flash_bytes_written: u64,
    /// Of those, by writer (`DeviceWrites`; checkpoint: records and files).
    pub journal_device_bytes: u64,
    pub demotion_device_bytes: u64,
    pub collector_device_bytes: u64,
    pub checkpoint_device_bytes: u64,
    pub flash_live_bytes: u64,
    pub allocated_bytes: u64,
    pub capacity_bytes: u64,
    pub pending_reads: u64,
    pub pending_stashes: u64,
    pub evicted_keys: u64,
    pub expired_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub free_demotions: u64,
    pub demotion_scanned: u64,
    pub io_backend: &'static str,
    pub direct_io: bool,
    pub ram_used: u64,
    pub maxmemory_ram: u64,
}

impl TieredInfo {
    /// Share of reads served from RAM since the counters were reset.
    pub fn ram_hit_ratio(&self) -> f64 {
        let total = self.ram_hits + self.ram_misses;
        if total == 0 {
            0.0
        } else {
            self.ram_hits as f64 / total as f64
        }
    }
}

/// `PersistStats::checkpoint_segment` when no checkpoint is in force.
pub const NO_CHECKPOINT: u32 = u32::MAX;

/// Checkpoint counters and state (INFO persistence).
pub struct PersistStats {
    /// Unix ms of the last completed checkpoint (0 = none this run).
    pub last_checkpoint_ms: AtomicU64,
    /// `flash_bytes_written` when the last checkpoint's log position was taken.
    pub checkpoint_log_bytes: AtomicU64,
    /// The journal's last ticket at that moment.
    pub checkpoint_ticket: AtomicU64,
    /// Log segment of the position of the checkpoint file in force (the
    /// one a restart would load), `NO_CHECKPOINT` if there is none. Its
    /// entries may name records older than any tombstone from this segment
    /// on, so the collector keeps those tombstones (collector rule 5).
    pub checkpoint_segment: std::sync::atomic::AtomicU32,
    pub last_checkpoint_bytes: AtomicU64,
    pub last_checkpoint_entries: AtomicU64,
    pub last_checkpoint_duration_ms: AtomicU64,
    /// Checkpoints completed this run.
    pub checkpoints: AtomicU64,
    /// A checkpoint is being written.
    pub running: std::sync::atomic::AtomicBool,
    /// Why the last checkpoint failed (None = it succeeded, or none ran).
    pub last_error: parking_lot::Mutex<Option<String>>,
}

impl Default for PersistStats {
    fn default() -> Self {
        PersistStats {
            last_checkpoint_ms: AtomicU64::new(0),
            checkpoint_log_bytes: AtomicU64::new(0),
            checkpoint_ticket: AtomicU64::new(0),
            checkpoint_segment: std::sync::atomic::AtomicU32::new(NO_CHECKPOINT),
            last_checkpoint_bytes: AtomicU64::new(0),
            last_checkpoint_entries: AtomicU64::new(0),
            last_checkpoint_duration_ms: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
            running: std::sync::atomic::AtomicBool::new(false),
            last_error: parking_lot::Mutex::new(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_striped_counter_sums_every_threads_adds() {
        let c = std::sync::Arc::new(Striped::default());
        let threads: Vec<_> = (0..12)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        Stats::add(&*c, t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(Stats::get(&*c), 1000 * (0..12).sum::<u64>());
        c.zero();
        assert_eq!(Stats::get(&*c), 0);
    }

    #[test]
    fn a_striped_gauge_taken_down_on_other_threads_sums_exactly() {
        // Bytes made live on one thread (the journal) and released on
        // others (the loops): those stripes go below zero and wrap.
        let g = std::sync::Arc::new(Striped::default());
        let g2 = g.clone();
        std::thread::spawn(move || g2.add(5_000)).join().unwrap();
        let takers: Vec<_> = (0..3)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        g.sub(1);
                    }
                })
            })
            .collect();
        for t in takers {
            t.join().unwrap();
        }
        assert_eq!(g.get(), 2_000);
        g.sub(2_000);
        assert_eq!(g.get(), 0);
    }
}

thread_local! {
    /// Lookups on this thread are a write command's (`WriteLookups`).
    static WRITE_LOOKUPS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the lookups of collections on this thread count no keyspace hit
/// or miss until dropped: a write command's, as Redis's `lookupKeyWrite`
/// counts none (LPUSH, SADD, HSET, ZADD ... leave `keyspace_hits` and
/// `keyspace_misses` alone; the dispatcher enters it for them).
pub struct WriteLookups(bool);

impl WriteLookups {
    pub fn enter() -> WriteLookups {
        WriteLookups(WRITE_LOOKUPS.with(|t| t.replace(true)))
    }

    /// Whether this thread is in a write command's lookups.
    pub fn active() -> bool {
        WRITE_LOOKUPS.with(std::cell::Cell::get)
    }
}

impl Drop for WriteLookups {
    fn drop(&mut self) {
        let prev = self.0;
        WRITE_LOOKUPS.with(|t| t.set(prev));
    }
}

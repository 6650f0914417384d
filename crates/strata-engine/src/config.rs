//! `EngineConfig`: what the engine is told at open, and `Tunables`: the part
//! that CONFIG SET may change while it runs.

use crate::flash::io::IoBackend;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

/// Default segment size: 64 MiB.
pub const DEFAULT_SEGMENT_SIZE: u64 = 64 << 20;
/// Default size of one sequential flash write: 1 MiB.
pub const DEFAULT_WRITE_CHUNK: usize = 1 << 20;
/// Default smallest value that is ever moved to flash, in bytes.
pub const DEFAULT_MIN_VALUE_SIZE: usize = 64;
/// While flash is plentiful, the log may hold this many times its live
/// bytes in garbage before the collector moves records (`log::collector`).
pub const DEFAULT_GC_GARBAGE_RATIO: u64 = 1;
/// Default number of flash operations in flight.
pub const DEFAULT_IO_DEPTH: usize = 256;
/// Demotion starts above this share of `maxmemory_ram` (per mille).
pub const HIGH_WATERMARK_PERMILLE: u64 = 900;
/// Demotion stops below this share of `maxmemory_ram` (per mille).
pub const LOW_WATERMARK_PERMILLE: u64 = 800;

/// What happens when the memory limits are reached: Redis's eight
/// `maxmemory-policy` values. Every evicting policy takes cold keys (value
/// on flash: removing one frees flash and little RAM) before hot ones,
/// oldest segment first, except `VolatileTtl`, which goes by expiry time
/// alone. A `Volatile*` policy evicts only keys with a TTL; with none left
/// it refuses writes as `NoEviction` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EvictionPolicy {
    /// Writes are refused with OOM; nothing is lost.
    NoEviction = 0,
    /// Then the least recently used.
    AllkeysLru = 1,
    /// Then random ones.
    AllkeysRandom = 2,
    /// Then the least frequently used (Redis's logarithmic counter,
    /// `lfu-log-factor`, `lfu-decay-time`).
    AllkeysLfu = 3,
    VolatileLru = 4,
    VolatileRandom = 5,
    VolatileLfu = 6,
    /// Keys with a TTL, the nearest expiry first.
    VolatileTtl = 7,
}

impl EvictionPolicy {
    const ALL: [EvictionPolicy; 8] = [
        EvictionPolicy::NoEviction,
        EvictionPolicy::AllkeysLru,
        EvictionPolicy::AllkeysRandom,
        EvictionPolicy::AllkeysLfu,
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileLfu,
        EvictionPolicy::VolatileTtl,
    ];

    /// Only keys with a TTL may be evicted.
    pub fn volatile(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileRandom
                | EvictionPolicy::VolatileLfu
                | EvictionPolicy::VolatileTtl
        )
    }

    /// A full flash log evicts whole segments, oldest first (the
    /// `allkeys-*` policies). A volatile policy may not: the keys of a
    /// segment are not all volatile, so under one a full log refuses
    /// writes as under `NoEviction` (its keys with a TTL are evicted for
    /// `maxmemory` and the RAM budget).
    pub fn evicts_segments(self) -> bool {
        matches!(
            self,
            EvictionPolicy::AllkeysLru | EvictionPolicy::AllkeysRandom | EvictionPolicy::AllkeysLfu
        )
    }

    /// Keys' access frequency is tracked (and their idle time is not
    /// reported: OBJECT IDLETIME refuses, as in Redis).
    pub fn lfu(self) -> bool {
        matches!(
            self,
            EvictionPolicy::AllkeysLfu | EvictionPolicy::VolatileLfu
        )
    }
}

/// Redis's LFU settings (`lfu-log-factor`, `lfu-decay-time`), read on
/// every access under an LFU policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LfuParams {
    pub log_factor: u32,
    pub decay_minutes: u32,
}

/// When a value read from flash comes back to RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PromotePolicy {
    /// On every read of a cold value.
    FirstRead = 0,
    /// On the second read of a cold value (scans of cold data do not pollute RAM).
    SecondRead = 1,
    /// Never: cold values are served from flash.
    Never = 2,
}

/// Returns the RAM the process uses, in bytes (an allocator counter).
pub type RamGauge = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Told how long a background event took (event name, milliseconds): the
/// server's latency monitor (`expire-cycle`).
pub type LatencySink = Arc<dyn Fn(&'static str, u64) + Send + Sync>;

#[derive(Clone)]
pub struct EngineConfig {
    /// Number of logical databases. Default: 16.
    pub databases: usize,
    /// Index shards. Default: 64.
    pub shards: usize,
    /// Directory of the segment files.
    pub flash_dir: PathBuf,
    /// Bytes the flash log may occupy; 0 = 90% of the partition's free space.
    pub flash_max_size: u64,
    /// Bytes per segment file. Default: 64 MiB.
    pub segment_size: u64,
    /// Bytes per sequential write. Default: 1 MiB.
    pub write_chunk: usize,
    /// Open segments with O_DIRECT (falls back to buffered I/O where the
    /// filesystem refuses it). Default: true.
    pub direct_io: bool,
    pub io_backend: IoBackend,
    /// Use this I/O engine instead of building `io_backend` (tests wrap a
    /// backend in a fault injector this way).
    pub io_engine: Option<Arc<dyn crate::flash::io::IoEngine>>,
    /// Flash operations in flight at most. Default: 256.
    pub io_depth: usize,
    /// RAM budget for keys, metadata and hot values, in bytes.
    pub maxmemory_ram: u64,
    /// Limit for RAM + flash-resident value bytes; 0 = none.
    pub maxmemory: u64,
    pub eviction: EvictionPolicy,
    /// Keys sampled per eviction (Redis's `maxmemory-samples`). Default: 5.
    pub maxmemory_samples: u32,
    pub lfu: LfuParams,
    /// Values shorter than this stay in RAM. Default: 64.
    pub min_value_size: usize,
    pub promote: PromotePolicy,
    /// Garbage the log may hold, as a multiple of its live bytes, before
    /// the collector moves records while flash is plentiful; 0 = move
    /// them out of any segment under 25% live. Default: 1 (the log holds at
    /// most about twice its live data).
    pub gc_garbage_ratio: u64,
    /// The allocator's advice for active defragmentation (None: hot
    /// values are never moved; tests running the library in-process).
    pub allocator: Option<AllocatorHooks>,
    /// How RAM use is measured; None = the engine's own accounting
    /// (index bytes + hot value bytes).
    pub ram_gauge: Option<RamGauge>,
    /// Where background events' durations go (None: nowhere).
    pub latency_sink: Option<LatencySink>,
    /// Background ticks per second. Default: 10.
    pub hz: u32,
    /// Journal every change to the flash log (Redis's `appendonly`).
    /// Default: true.
    pub appendonly: bool,
    /// When journaled writes are synced. Default: every second.
    pub appendfsync: crate::log::journal::FsyncPolicy,
    /// Log bytes between automatic checkpoints (at least; 0 = only SAVE,
    /// BGSAVE and shutdown). Default: 1 GiB.
    pub checkpoint_interval: u64,
    /// The thresholds of Redis's small encodings. Default: Redis 7.0's.
    pub encoding: crate::types::EncodingLimits,
}

impl EngineConfig {
    /// A configuration with defaults, storing flash files in `flash_dir`.
    pub fn new(flash_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            databases: 16,
            shards: 64,
            flash_dir: flash_dir.into(),
            flash_max_size: 0,
            segment_size: DEFAULT_SEGMENT_SIZE,
            write_chunk: DEFAULT_WRITE_CHUNK,
            direct_io: true,
            io_backend: IoBackend::Auto,
            io_engine: None,
            io_depth: DEFAULT_IO_DEPTH,
            maxmemory_ram: 1 << 30,
            maxmemory: 0,
            eviction: EvictionPolicy::NoEviction,
            maxmemory_samples: 5,
            lfu: LfuParams {
                log_factor: 10,
                decay_minutes: 1,
            },
            min_value_size: DEFAULT_MIN_VALUE_SIZE,
            promote: PromotePolicy::SecondRead,
            gc_garbage_ratio: DEFAULT_GC_GARBAGE_RATIO,
            allocator: None,
            ram_gauge: None,
            latency_sink: None,
            hz: 10,
            appendonly: true,
            appendfsync: crate::log::journal::FsyncPolicy::EverySec,
            checkpoint_interval: 1 << 30,
            encoding: crate::types::EncodingLimits::default(),
        }
    }
}

/// What the allocator tells active defragmentation (`tiering/defrag.rs`):
/// the engine does not know the allocator; the binary that installs one
/// does.
#[derive(Clone, Copy)]
pub struct AllocatorHooks {
    /// Whether the allocator holds enough free room in partly used pages
    /// for a pass to be worth its CPU (called once per tick).
    pub fragmented: fn() -> bool,
    /// Whether the allocation at this address sits where moving it helps
    /// empty a page (a slab used less than its size class's average).
    pub should_move: fn(*const u8) -> bool,
    /// Called with true before a slice of moves and false after it, on the
    /// thread that moves (the server turns its allocator cache off between,
    /// so that the copies go where the allocator fills next).
    pub moving: fn(bool),
}

/// Settings that may change at run time (CONFIG SET).
pub struct Tunables {
    pub maxmemory_ram: AtomicU64,
    pub maxmemory: AtomicU64,
    eviction: AtomicU8,
    pub maxmemory_samples: AtomicU32,
    lfu_log_factor: AtomicU32,
    lfu_decay_minutes: AtomicU32,
    pub min_value_size: AtomicU64,
    promote: AtomicU8,
    /// See `EngineConfig::gc_garbage_ratio`.
    pub gc_garbage_ratio: AtomicU64,
    /// The background sweep of expired keys runs (DEBUG SET-ACTIVE-EXPIRE).
    pub active_expire: std::sync::atomic::AtomicBool,
    /// Active defragmentation runs (`activedefrag`; needs `allocator`).
    pub defrag: std::sync::atomic::AtomicBool,
    /// `hash-max-listpack-entries` ... (what OBJECT ENCODING reports).
    encoding: parking_lot::Mutex<crate::types::EncodingLimits>,
}

impl Tunables {
    pub fn new(c: &EngineConfig) -> Tunables {
        Tunables {
            maxmemory_ram: AtomicU64::new(c.maxmemory_ram),
            maxmemory: AtomicU64::new(c.maxmemory),
            eviction: AtomicU8::new(c.eviction as u8),
            maxmemory_samples: AtomicU32::new(c.maxmemory_samples.max(1)),
            lfu_log_factor: AtomicU32::new(c.lfu.log_factor),
            lfu_decay_minutes: AtomicU32::new(c.lfu.decay_minutes),
            min_value_size: AtomicU64::new(c.min_value_size as u64),
            promote: AtomicU8::new(c.promote as u8),
            gc_garbage_ratio: AtomicU64::new(c.gc_garbage_ratio),
            active_expire: std::sync::atomic::AtomicBool::new(true),
            defrag: std::sync::atomic::AtomicBool::new(true),
            encoding: parking_lot::Mutex::new(c.encoding),
        }
    }
    pub fn encoding_limits(&self) -> crate::types::EncodingLimits {
        *self.encoding.lock()
    }
    pub fn set_encoding_limits(&self, l: crate::types::EncodingLimits) {
        *self.encoding.lock() = l;
    }
    pub fn eviction(&self) -> EvictionPolicy {
        EvictionPolicy::ALL
            .get(self.eviction.load(Relaxed) as usize)
            .copied()
            .unwrap_or(EvictionPolicy::NoEviction)
    }
    pub fn set_eviction(&self, p: EvictionPolicy) {
        self.eviction.store(p as u8, Relaxed);
    }
    /// The LFU settings if the policy tracks access frequency.
    pub fn lfu(&self) -> Option<LfuParams> {
        self.eviction().lfu().then(|| self.lfu_params())
    }
    pub fn lfu_params(&self) -> LfuParams {
        LfuParams {
            log_factor: self.lfu_log_factor.load(Relaxed),
            decay_minutes: self.lfu_decay_minutes.load(Relaxed),
        }
    }
    pub fn set_lfu_params(&self, p: LfuParams) {
        self.lfu_log_factor.store(p.log_factor, Relaxed);
        self.lfu_decay_minutes.store(p.decay_minutes, Relaxed);
    }
    pub fn promote(&self) -> PromotePolicy {
        match self.promote.load(Relaxed) {
            0 => PromotePolicy::FirstRead,
            2 => PromotePolicy::Never,
            _ => PromotePolicy::SecondRead,
        }
    }
    pub fn set_promote(&self, p: PromotePolicy) {
        self.promote.store(p as u8, Relaxed);
    }
    pub fn high_watermark(&self) -> u64 {
        self.maxmemory_ram.load(Relaxed) / 1000 * HIGH_WATERMARK_PERMILLE
    }
    pub fn low_watermark(&self) -> u64 {
        self.maxmemory_ram.load(Relaxed) / 1000 * LOW_WATERMARK_PERMILLE
    }
}

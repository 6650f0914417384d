//! What the engine is told of the server's configuration: its settings
//! at start (`engine_config`) and the translations `Shared::apply_config`
//! pushes at run time (eviction policy, LFU, fsync, promotion, encodings).

use crate::base::alloc;
use crate::services::clients::buffers;
use crate::services::config::{self, Config, MaxmemoryPolicy};
use std::sync::Arc;
use strata_engine::{EngineConfig, EvictionPolicy, PromotePolicy};

pub(crate) fn eviction(p: &MaxmemoryPolicy) -> EvictionPolicy {
    match p {
        MaxmemoryPolicy::NoEviction => EvictionPolicy::NoEviction,
        MaxmemoryPolicy::AllkeysLru => EvictionPolicy::AllkeysLru,
        MaxmemoryPolicy::AllkeysRandom => EvictionPolicy::AllkeysRandom,
        MaxmemoryPolicy::AllkeysLfu => EvictionPolicy::AllkeysLfu,
        MaxmemoryPolicy::VolatileLru => EvictionPolicy::VolatileLru,
        MaxmemoryPolicy::VolatileLfu => EvictionPolicy::VolatileLfu,
        MaxmemoryPolicy::VolatileRandom => EvictionPolicy::VolatileRandom,
        MaxmemoryPolicy::VolatileTtl => EvictionPolicy::VolatileTtl,
    }
}

pub(crate) fn lfu(c: &Config) -> strata_engine::LfuParams {
    strata_engine::LfuParams {
        log_factor: c.lfu_log_factor,
        decay_minutes: c.lfu_decay_time,
    }
}

pub(crate) fn fsync_policy(p: &str) -> strata_engine::FsyncPolicy {
    match p {
        "always" => strata_engine::FsyncPolicy::Always,
        "no" => strata_engine::FsyncPolicy::No,
        _ => strata_engine::FsyncPolicy::EverySec,
    }
}

pub(crate) fn promote(p: &config::PromotePolicy) -> PromotePolicy {
    match p {
        config::PromotePolicy::FirstRead => PromotePolicy::FirstRead,
        config::PromotePolicy::SecondRead => PromotePolicy::SecondRead,
        config::PromotePolicy::Never => PromotePolicy::Never,
    }
}

pub(crate) fn encoding_limits(c: &Config) -> strata_engine::types::EncodingLimits {
    let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    strata_engine::types::EncodingLimits {
        hash_entries: n(c.hash_max_listpack_entries),
        hash_value: n(c.hash_max_listpack_value),
        set_intset_entries: n(c.set_max_intset_entries),
        zset_entries: n(c.zset_max_listpack_entries),
        zset_value: n(c.zset_max_listpack_value),
        stream: strata_engine::types::stream::NodeLimits {
            max_bytes: c.stream_node_max_bytes,
            max_entries: c.stream_node_max_entries,
        },
    }
}

/// The engine configuration a server configuration implies.
pub fn engine_config(c: &Config) -> EngineConfig {
    let mut e = EngineConfig::new(c.flash_dir());
    e.databases = c.databases;
    e.shards = (c.threads * 16).clamp(16, 1024);
    e.flash_max_size = c.flash_max_size;
    e.segment_size = c.flash_segment_size;
    e.direct_io = c.flash_direct_io;
    e.io_backend = match c.flash_io {
        config::IoBackend::Auto => strata_engine::IoBackend::Auto,
        config::IoBackend::IoUring => strata_engine::IoBackend::IoUring,
        config::IoBackend::Psync => strata_engine::IoBackend::Psync,
    };
    e.maxmemory_ram = c.maxmemory_ram;
    e.maxmemory = c.maxmemory;
    e.allocator = alloc::defrag_hooks();
    e.eviction = eviction(&c.maxmemory_policy);
    e.maxmemory_samples = c.maxmemory_samples;
    e.lfu = lfu(c);
    e.min_value_size = c.tiering_min_value_size;
    e.gc_garbage_ratio = c.flash_gc_garbage_ratio;
    e.promote = promote(&c.tiering_promote);
    e.hz = c.hz;
    e.appendonly = c.appendonly;
    e.appendfsync = fsync_policy(&c.appendfsync);
    e.encoding = encoding_limits(c);
    if alloc::allocated_bytes().is_some() {
        // All the process holds but the clients' buffers (`CLIENT_BUFFERS`).
        e.ram_gauge = Some(Arc::new(|| {
            let clients = buffers::CLIENT_BUFFERS.load(std::sync::atomic::Ordering::Relaxed);
            alloc::allocated_bytes()
                .unwrap_or(0)
                .saturating_sub(clients)
        }));
    }
    e
}

//! What RAM and flash hold, as admission, demotion and INFO read it: the
//! RAM gauge (allocator-measured when the binary installs one, else the
//! index plus the values in RAM), each segment's live bytes (segment
//! invariant 2: the bytes of the records the index points at, kept by
//! `retain_flash` / `release_flash` under the entry's shard lock), and
//! the `TieredInfo` snapshot.

use crate::stats::{Stats, TieredInfo};
use crate::{index, tiering, Inner};
use std::sync::atomic::Ordering;

impl Inner {
    /// The keys' index, the values in RAM and the key count, summed over
    /// the shards (each under its lock).
    pub(crate) fn ram_parts(&self) -> tiering::evict::RamParts {
        let mut p = tiering::evict::RamParts::default();
        for s in self.shards.iter() {
            let s = s.lock();
            p.index_bytes += s.index_bytes();
            p.hot_bytes += s.acct.hot_bytes;
            p.keys += s.dbs.iter().map(|m| m.len() as u64).sum::<u64>();
        }
        p
    }

    /// RAM in use: the configured gauge, or index + hot value bytes.
    pub fn ram_used(&self) -> u64 {
        match &self.hooks.ram_gauge {
            Some(g) => g(),
            None => {
                let mut total = 0;
                for s in self.shards.iter() {
                    let s = s.lock();
                    total += s.index_bytes() + s.acct.hot_bytes;
                }
                total
            }
        }
    }

    /// Releases the flash record an entry pointed at: its bytes are no
    /// longer live. Caller holds the entry's shard lock (segment invariant 2).
    pub fn release_flash(&self, loc: crate::base::FlashLoc) {
        self.release_flash_quiet(loc);
        Stats::inc(&self.stats.flash_deletes);
    }

    /// As `release_flash`, for records that were moved rather than deleted.
    pub fn release_flash_quiet(&self, loc: crate::base::FlashLoc) {
        self.flash.table.with(loc.segment, |seg| {
            seg.live_bytes.fetch_sub(loc.len as u64, Ordering::AcqRel)
        });
        self.flash.live_bytes.sub(loc.len as u64);
    }

    /// Segments whose `live_bytes` differ from the bytes of the records
    /// the index points at (segment invariant 2): (segment, counted,
    /// pointed at). Meaningful only when nothing runs meanwhile (tests,
    /// with the background thread idle).
    pub(crate) fn audit_live_bytes(&self) -> Vec<(u32, u64, u64)> {
        let mut pointed: std::collections::HashMap<u32, u64> = Default::default();
        for s in self.shards.iter() {
            let sh = s.lock();
            for m in sh.dbs.iter() {
                for e in m.values() {
                    for loc in e.flash_locs() {
                        *pointed.entry(loc.segment).or_default() += loc.len as u64;
                    }
                }
            }
        }
        let mut bad = Vec::new();
        for seg in self.flash.table.snapshot() {
            let counted = seg.live_bytes.load(Ordering::Acquire);
            let want = pointed.remove(&seg.id).unwrap_or(0);
            if counted != want {
                bad.push((seg.id, counted, want));
            }
        }
        bad.extend(pointed.into_iter().map(|(id, n)| (id, 0, n)));
        bad
    }

    /// Number of keys in all databases (locks each shard briefly).
    pub fn key_count(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().dbs.iter().map(|m| m.len()).sum::<usize>())
            .sum()
    }

    /// Wakes the background thread if RAM use is above the high watermark.
    pub fn wake_if_pressured(&self) {
        if self.ram_used() > self.tun.high_watermark() {
            self.wake_background();
        }
    }

    /// Marks a flash record as referenced by an entry. Caller holds the
    /// entry's shard lock.
    pub fn retain_flash(&self, loc: crate::base::FlashLoc) {
        self.flash.table.with(loc.segment, |seg| {
            seg.live_bytes.fetch_add(loc.len as u64, Ordering::AcqRel)
        });
        self.flash.live_bytes.add(loc.len as u64);
    }

    /// When `e` was last accessed (`clock::now_secs`). A packed entry keeps
    /// no time (`index/cell.rs`, invariant 2): its record's segment's
    /// creation time stands for it.
    pub(crate) fn last_access_secs(&self, e: &index::Entry) -> u32 {
        if e.lru_secs != 0 {
            return e.lru_secs;
        }
        e.flash_loc()
            .and_then(|l| self.flash.table.with(l.segment, |s| s.created_secs))
            .unwrap_or_else(crate::clock::now_secs)
    }

    pub(crate) fn tiered_info(&self) -> TieredInfo {
        let mut t = TieredInfo::default();
        for s in self.shards.iter() {
            let s = s.lock();
            t.values_in_ram += s.acct.hot_count;
            t.values_in_flash += s.acct.cold_count;
            t.hot_bytes += s.acct.hot_bytes;
            t.cold_bytes += s.acct.cold_bytes;
            t.index_bytes += s.index_bytes();
            t.index_boxed_keys += s.dbs.iter().map(|m| m.boxed() as u64).sum::<u64>();
            t.index_boxed_bytes += s.dbs.iter().map(|m| m.boxed_bytes()).sum::<u64>();
            for (a, b) in t.keys_by_type.iter_mut().zip(s.acct.keys_by_type) {
                *a += b;
            }
            t.collections_in_ram += s.acct.coll_hot_count;
            t.collections_in_flash += s.acct.coll_cold_count;
            t.chunks_in_ram += s.acct.chunks_hot;
            t.chunks_in_flash += s.acct.chunks_cold;
            t.collections_in_ram_bytes += s.acct.coll_hot_bytes;
            t.collections_in_flash_bytes += s.acct.coll_cold_bytes;
            t.keys += s.dbs.iter().map(|m| m.len() as u64).sum::<u64>();
        }
        let st = &self.stats;
        t.ram_hits = Stats::get(&st.ram_hits);
        t.ram_misses = Stats::get(&st.ram_misses);
        t.ram_cool_hits = Stats::get(&st.ram_cool_hits);
        t.stashes = Stats::get(&st.stashes);
        t.stash_bytes = Stats::get(&st.stash_bytes);
        t.journal_bytes = Stats::get(&self.journal.record_bytes);
        t.fetches = Stats::get(&st.fetches);
        t.chunk_loads = Stats::get(&st.chunk_loads);
        t.chunks_written = Stats::get(&st.chunks_written);
        t.part_changes_written = Stats::get(&st.part_changes_written);
        t.part_chain_loads = Stats::get(&st.part_chain_loads);
        t.part_chain_spilled_reads = Stats::get(&st.part_chain_spilled_reads);
        t.part_peeks = Stats::get(&st.part_peeks);
        t.part_reads_ahead = Stats::get(&st.part_reads_ahead);
        t.part_blind_adds = Stats::get(&st.part_blind_adds);
        t.part_chain_reclaims = Stats::get(&st.part_chain_reclaims);
        t.flash_deletes = Stats::get(&st.flash_deletes);
        t.uploads = Stats::get(&st.uploads);
        t.read_errors = Stats::get(&st.read_errors);
        t.write_errors = Stats::get(&st.write_errors);
        t.gc_bytes_relocated = Stats::get(&st.gc_bytes_relocated);
        t.segments_freed = Stats::get(&st.segments_freed);
        let d = &st.device;
        t.flash_bytes_written = d.total();
        t.journal_device_bytes = Stats::get(&d.journal);
        t.demotion_device_bytes = Stats::get(&d.demotion);
        t.collector_device_bytes = Stats::get(&d.collector);
        t.checkpoint_device_bytes = Stats::get(&d.checkpoint) + Stats::get(&d.checkpoint_files);
        t.pending_reads = Stats::get(&st.pending_reads);
        t.pending_stashes = Stats::get(&st.pending_stashes);
        t.evicted_keys = Stats::get(&st.evicted_keys);
        t.expired_keys = Stats::get(&st.expired_keys);
        t.keyspace_hits = Stats::get(&st.keyspace_hits);
        t.keyspace_misses = Stats::get(&st.keyspace_misses);
        t.free_demotions = Stats::get(&st.free_demotions);
        t.demotion_scanned = Stats::get(&st.demotion_scanned);
        t.segments = self.flash.table.len() as u64;
        t.allocated_bytes = self.flash.table.allocated_bytes();
        t.flash_live_bytes = self.flash.live_bytes.get();
        t.capacity_bytes = self.flash.capacity;
        t.io_backend = self.flash.io.name();
        t.direct_io = self.flash.direct_io;
        t.ram_used = self.ram_used();
        t.maxmemory_ram = self.tun.maxmemory_ram.load(Ordering::Relaxed);
        t
    }
}

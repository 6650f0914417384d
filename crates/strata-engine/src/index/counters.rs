//! The byte and count accounting of a shard (index invariant 3): what INFO
//! reports about values, collections and chunks in RAM and on flash, kept
//! exact as slots change (`Entry::replace_slot`, `Entry::with_dir`).

use super::{Entry, Slot, VTYPE_MASK};
use crate::base::ValueType;

/// Per-database counters kept by a shard.
#[derive(Clone, Debug, Default)]
pub struct DbCounters {
    /// Keys with a TTL.
    pub expires: u64,
    /// Sum of `expire_at_ms` over keys with a TTL (for avg_ttl).
    pub expire_sum_ms: u128,
}

/// The byte and count accounting of one shard (invariant 3). Kept apart
/// from the maps so an entry and the counters can be borrowed together.
#[derive(Clone, Debug, Default)]
pub struct ShardCounters {
    /// Bytes of values held in RAM.
    pub hot_bytes: u64,
    /// Heap bytes of keys stored out of line.
    pub key_bytes: u64,
    /// Values in RAM / only on flash.
    pub hot_count: u64,
    pub cold_count: u64,
    /// Bytes of values only on flash.
    pub cold_bytes: u64,
    /// Keys per value type (`ValueType as usize`).
    pub keys_by_type: [u64; 6],
    /// Of `hot_bytes` / `cold_bytes`, the bytes of collections (packed
    /// length).
    pub coll_hot_bytes: u64,
    pub coll_cold_bytes: u64,
    /// Collections (packed: one record each) in RAM / only on flash.
    /// A chunked collection counts as in RAM (its directory is); its bytes
    /// count in RAM or on flash by part.
    pub coll_hot_count: u64,
    pub coll_cold_count: u64,
    /// Parts of chunked collections in RAM / only on flash.
    pub chunks_hot: u64,
    pub chunks_cold: u64,
    pub dbs: Vec<DbCounters>,
}

impl ShardCounters {
    /// Accounts a value of type `vtype` entering a slot.
    pub fn add(&mut self, slot: &Slot, value_len: u32, vtype: u8) {
        let coll = vtype & VTYPE_MASK != ValueType::String as u8;
        match slot {
            Slot::Hot(h) => {
                let n = h.value.len() as u64;
                self.hot_bytes += n;
                self.hot_count += 1;
                if coll {
                    self.coll_hot_bytes += n;
                    self.coll_hot_count += 1;
                }
            }
            Slot::Cold(_) => {
                self.cold_bytes += value_len as u64;
                self.cold_count += 1;
                if coll {
                    self.coll_cold_bytes += value_len as u64;
                    self.coll_cold_count += 1;
                }
            }
            Slot::Chunked(c) => {
                let Some(d) = c.dir() else { return };
                // The value's bytes in RAM (its parts) and on flash only.
                let hot = d.resident_bytes() as u64;
                let cold = (c.stored_len() as u64).saturating_sub(hot);
                self.hot_bytes += hot;
                self.hot_count += 1;
                self.coll_hot_bytes += hot;
                self.coll_hot_count += 1;
                self.cold_bytes += cold;
                self.coll_cold_bytes += cold;
                let parts = d.part_count() as u64;
                self.chunks_hot += d.resident_parts() as u64;
                self.chunks_cold += parts - d.resident_parts() as u64;
            }
        }
    }

    /// Accounts a value of type `vtype` leaving a slot.
    pub fn remove(&mut self, slot: &Slot, value_len: u32, vtype: u8) {
        let coll = vtype & VTYPE_MASK != ValueType::String as u8;
        match slot {
            Slot::Hot(h) => {
                let n = h.value.len() as u64;
                self.hot_bytes -= n;
                self.hot_count -= 1;
                if coll {
                    self.coll_hot_bytes -= n;
                    self.coll_hot_count -= 1;
                }
            }
            Slot::Cold(_) => {
                self.cold_bytes -= value_len as u64;
                self.cold_count -= 1;
                if coll {
                    self.coll_cold_bytes -= value_len as u64;
                    self.coll_cold_count -= 1;
                }
            }
            Slot::Chunked(c) => {
                let Some(d) = c.dir() else { return };
                // The value's bytes in RAM (its parts) and on flash only.
                let hot = d.resident_bytes() as u64;
                let cold = (c.stored_len() as u64).saturating_sub(hot);
                self.hot_bytes -= hot;
                self.hot_count -= 1;
                self.coll_hot_bytes -= hot;
                self.coll_hot_count -= 1;
                self.cold_bytes -= cold;
                self.coll_cold_bytes -= cold;
                let parts = d.part_count() as u64;
                self.chunks_hot -= d.resident_parts() as u64;
                self.chunks_cold -= parts - d.resident_parts() as u64;
            }
        }
    }

    /// A key's value type changes from `from` to `to`.
    pub fn retype(&mut self, from: u8, to: u8) {
        if let Some(c) = self.keys_by_type.get_mut((from & VTYPE_MASK) as usize) {
            *c -= 1;
        }
        if let Some(c) = self.keys_by_type.get_mut((to & VTYPE_MASK) as usize) {
            *c += 1;
        }
    }

    pub fn ttl_add(&mut self, db: usize, at: u64) {
        if at != 0 {
            let c = &mut self.dbs[db];
            c.expires += 1;
            c.expire_sum_ms += at as u128;
        }
    }

    pub fn ttl_remove(&mut self, db: usize, at: u64) {
        if at != 0 {
            let c = &mut self.dbs[db];
            c.expires -= 1;
            c.expire_sum_ms -= at as u128;
        }
    }

    /// Accounts a whole entry entering the shard; `key_heap` is the heap
    /// bytes the key owns (0 for inline keys).
    pub fn entry_added(&mut self, db: usize, key_heap: usize, e: &Entry) {
        self.key_bytes += key_heap as u64;
        if let Some(c) = self.keys_by_type.get_mut((e.vtype & VTYPE_MASK) as usize) {
            *c += 1;
        }
        self.add(&e.slot, e.value_len, e.vtype);
        self.ttl_add(db, e.expire_at_ms);
    }

    /// Accounts a whole entry leaving the shard.
    pub fn entry_removed(&mut self, db: usize, key_heap: usize, e: &Entry) {
        self.key_bytes -= key_heap as u64;
        if let Some(c) = self.keys_by_type.get_mut((e.vtype & VTYPE_MASK) as usize) {
            *c -= 1;
        }
        self.remove(&e.slot, e.value_len, e.vtype);
        self.ttl_remove(db, e.expire_at_ms);
    }
}

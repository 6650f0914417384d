//! The RAM index: every key of every database, with its metadata and the
//! location of its value. Sharded by key hash; each shard is a
//! `parking_lot::Mutex<Shard>` held only for short, non-blocking sections
//! (never across I/O).
//!
//! Each database of a shard is a [`KeyMap`] (`map.rs`): per key a 32-byte
//! bucket (`bucket.rs`: the key inline up to 16 bytes, else a pointer to
//! it; the cell; a meta byte) and a 5-byte table slot, no stored hash.
//! The cell (`cell.rs`) holds a cold entry packed (its location, version,
//! type and CLOCK bits; a TTL and client flags in a 32-byte box beside) or
//! else a boxed `Entry`: a cold key of up to 16 bytes costs 32 bytes (64
//! with a TTL), a hot one 32 + 80 (its value's handle inline). Readers get an [`EntryRef`]
//! (borrowed, or rebuilt from the packed cell); writers get `&mut Entry`,
//! which boxes a packed entry first. Demotion, the collector and recovery
//! pack the cold entries they leave behind; the CLOCK hand packs the ones
//! readers boxed.
//!
//! Entry layout (`Entry`, 80 bytes on x86-64):
//! - `slot`: the value, either `Hot(Hot { value, flash })` (bytes in RAM,
//!   `flash`: its backing, a still-valid flash copy, so demoting it again is free) or
//!   `Cold(FlashLoc)` (segment id, offset, length: 12 bytes);
//! - `expire_at_ms` (0 = none), `version` (sequence number of the last
//!   write of the value), `lru_secs` (last access, for OBJECT IDLETIME and
//!   allkeys-lru), `flags` (CLOCK reference bit, touched-once bit,
//!   stash-in-progress bit, memcached item state), `client_flags`.
//! - A memcached CAS set explicitly (meta `E`) lives beside the map, in the
//!   shard's `explicit_cas`, for the few entries that have one.
//!
//! Invariants:
//! 1. Every key has exactly one authoritative location: its `slot`.
//! 2. `version` changes whenever the value changes; background work that
//!    read an entry re-checks `version` (and the location) before it
//!    publishes anything, so it never overwrites a newer value.
//! 3. The shard's `hot_bytes`, `key_bytes` and per-db `expires` counters are
//!    updated in the same critical section as the entry they describe.
//! 4. An entry's memcached CAS is the `explicit_cas` of its key if the entry
//!    has `F_EXPLICIT_CAS` and the explicit CAS was set at the entry's
//!    current `version`; otherwise it is `version`. Every write of a value
//!    gives a new version (and clears the entry's flags), so a stale
//!    explicit CAS is never seen, only pruned later.
//! 5. `vtype` is the type of the value in `slot` (a hot collection's
//!    structure, or the type its cold record was written with); a write
//!    that changes the type sets both in one critical section.

pub mod access;
mod bucket;
mod cell;
mod counters;
mod hot;
mod key;
pub mod lock;
mod map;

use crate::base::FlashLoc;
use crate::base::{Malformed, ValueType};
use crate::flash::format::ItemMeta;
use crate::types::Collection;
use bytes::Bytes;
pub use cell::EntryRef;
pub use counters::{DbCounters, ShardCounters};
pub use hot::Hot;
pub use key::CompactKey;
pub use map::{prefetch_lines, KeyMap};
use std::collections::HashMap;

pub type Key = CompactKey;
pub type Hasher = foldhash::fast::RandomState;
/// The hash that picks a key's shard: seeded, and the seed is kept in the
/// checkpoint, so a restart finds each shard's keys in one section.
pub type ShardHasher = foldhash::fast::FixedState;
pub type DbMap = KeyMap;

/// The value of a hot entry: a string's bytes, or a collection's RAM
/// structure (whose record is its packed encoding, `types`).
#[derive(Clone, Debug)]
pub enum Value {
    Str(Bytes),
    Coll(Box<Collection>),
}

impl Value {
    /// Length of the value's record bytes: the string, or the packed
    /// collection (`Collection::encoded_len`).
    pub fn len(&self) -> usize {
        match self {
            Value::Str(b) => b.len(),
            Value::Coll(c) => c.encoded_len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn vtype(&self) -> ValueType {
        match self {
            Value::Str(_) => ValueType::String,
            Value::Coll(c) => c.vtype(),
        }
    }

    /// The bytes a record of this value holds (a copy of the packed
    /// encoding for a collection; a reference-counted clone for a string).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Value::Str(b) => b.clone(),
            Value::Coll(c) => c.to_bytes(),
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&Bytes> {
        match self {
            Value::Str(b) => Some(b),
            Value::Coll(_) => None,
        }
    }

    /// Rebuilds a value from a record's bytes.
    pub fn from_record(t: ValueType, bytes: Bytes) -> Result<Value, Malformed> {
        match t {
            ValueType::String => Ok(Value::Str(bytes)),
            t => Ok(Value::Coll(Box::new(Collection::decode(t, &bytes)?))),
        }
    }
}

/// The value of an entry.
#[derive(Clone, Debug)]
pub enum Slot {
    /// In RAM (inline: a hot key's entry is one allocation, one hop from
    /// its bucket to its value's bytes).
    Hot(Hot),
    /// Only on flash.
    Cold(FlashLoc),
    /// A chunked collection (`types::chunked`): its directory in RAM,
    /// each part in RAM, on flash or both. Its records are its head and
    /// chunks, never one packed record.
    Chunked(Box<Collection>),
}

impl Slot {
    /// A hot string slot.
    pub fn hot(value: Bytes, backing: Option<FlashLoc>) -> Slot {
        Slot::Hot(Hot::new(Value::Str(value), backing))
    }

    /// A hot slot holding `value`.
    pub fn hot_value(value: Value, backing: Option<FlashLoc>) -> Slot {
        Slot::Hot(Hot::new(value, backing))
    }

    /// Every flash record this slot refers to, once per reference (a
    /// chunked collection's head and chunks; engine invariant 3 releases
    /// each when the slot goes).
    pub fn locs(&self) -> Vec<FlashLoc> {
        match self {
            // A collection's chain of records is the entry's too
            // (`types::changes`): never its backing as well.
            Slot::Hot(h) => h.backing().into_iter().chain(h.chain_locs()).collect(),
            Slot::Cold(loc) => vec![*loc],
            Slot::Chunked(c) => c.dir().map(|d| d.locs()).unwrap_or_default(),
        }
    }
}

/// The bits of `Entry::vtype` that hold the `ValueType`.
pub const VTYPE_MASK: u8 = 0x0f;
/// `Entry::vtype` bit: a string changed in place (OBJECT ENCODING `raw`).
/// Not persisted: after a restart the string reports by its length, as
/// after Redis reloads its RDB.
pub const VT_STR_RAW: u8 = 0x80;
/// `Entry::vtype` bit: a string Redis stores as text even if it reads as
/// an integer (INCRBYFLOAT's result: `embstr`, never `int`). Not persisted.
pub const VT_STR_NOINT: u8 = 0x40;

/// CLOCK reference bit: set on access, cleared by the demoter's hand.
pub const F_REFERENCED: u8 = 1;
/// Set by the first read of a cold value (second-touch promotion).
pub const F_TOUCHED: u8 = 2;
/// A demotion of this value is being written.
pub const F_STASHING: u8 = 4;
/// The entry's current state (value or TTL) is not yet in the log; the
/// journal has a note for it (appendonly yes only; see `journal`).
pub const F_DIRTY: u8 = 8;
/// Read by a memcached get since it was stored (meta `h`, `me` fetch=).
pub const F_FETCHED: u8 = 16;
/// A client holds the right to (re)fill this item: memcached's "win token
/// sent" (an `mg` answered `W`: auto-vivify, a stale item, an early
/// recache); later `mg`s see `Z` until the item is stored again.
pub const F_WIN_PENDING: u8 = 32;
/// Stale (meta `md … I`, or stored stale by `ms … I`): still served, with
/// `X`; the next `mg` wins the right to recache it.
pub const F_STALE: u8 = 64;
/// The entry may have an explicit CAS (meta `E`) in its shard's
/// `explicit_cas` map; without this bit the CAS is `version`.
pub const F_EXPLICIT_CAS: u8 = 128;

#[derive(Clone, Debug)]
pub struct Entry {
    pub slot: Slot,
    pub expire_at_ms: u64,
    pub version: u64,
    pub lru_secs: u32,
    /// Access frequency under an LFU policy (`tiering/access.rs`). Lives in
    /// what would be padding.
    pub lfu: u8,
    pub flags: u8,
    /// Length of the value in bytes (kept so STRLEN and accounting need no I/O).
    pub value_len: u32,
    /// Memcached client flags (0 for values set over RESP). Lives in what
    /// would be padding.
    pub client_flags: u32,
    /// The value's type (`ValueType as u8`, low bits: read it with
    /// `value_type`), answered from RAM even when the value is cold; equal
    /// to the hot value's type (invariant 5). For strings, bit
    /// [`VT_STR_RAW`] marks a value changed in place (APPEND, SETRANGE),
    /// which Redis reports as `raw` whatever its length.
    pub vtype: u8,
}

impl Entry {
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// The flash record this entry points at, if any (a chunked
    /// collection's head).
    pub fn flash_loc(&self) -> Option<FlashLoc> {
        match &self.slot {
            Slot::Hot(h) => h.backing(),
            Slot::Cold(loc) => Some(*loc),
            Slot::Chunked(c) => c.dir().and_then(|d| d.head_loc()),
        }
    }

    /// Every flash record this entry refers to, once per reference.
    pub fn flash_locs(&self) -> Vec<FlashLoc> {
        self.slot.locs()
    }

    /// Runs `f` on a chunked collection's directory, keeping the shard's
    /// counters right across the change (None if the entry is not one).
    pub fn with_dir<R>(
        &mut self,
        counters: &mut ShardCounters,
        f: impl FnOnce(&mut dyn crate::types::parts::Dir) -> R,
    ) -> Option<R> {
        if !matches!(&self.slot, Slot::Chunked(_)) {
            return None;
        }
        counters.remove(&self.slot, self.value_len, self.vtype);
        let r = match &mut self.slot {
            Slot::Chunked(c) => c.dir_mut().map(f),
            _ => None,
        };
        counters.add(&self.slot, self.value_len, self.vtype);
        r
    }

    /// Replaces the slot, keeping the shard's counters right; returns the
    /// old slot.
    pub fn replace_slot(&mut self, counters: &mut ShardCounters, slot: Slot) -> Slot {
        counters.remove(&self.slot, self.value_len, self.vtype);
        counters.add(&slot, self.value_len, self.vtype);
        std::mem::replace(&mut self.slot, slot)
    }

    pub fn value_type(&self) -> ValueType {
        ValueType::from_u8(self.vtype & VTYPE_MASK).unwrap_or_default()
    }

    /// Bytes of value held in RAM by this entry.
    pub fn hot_bytes(&self) -> usize {
        match &self.slot {
            Slot::Hot(h) => h.value.len(),
            Slot::Cold(_) => 0,
            Slot::Chunked(c) => c.dir().map_or(0, |d| d.resident_bytes()),
        }
    }
}

/// RAM of one `explicit_cas` bucket (key, value and control byte).
const EXPLICIT_CAS_BUCKET_BYTES: u64 = (std::mem::size_of::<(Key, ExplicitCas)>() + 1) as u64;

/// An explicit memcached CAS (meta `E`), valid while the entry keeps the
/// version it was set at (invariant 4).
#[derive(Clone, Copy, Debug)]
pub struct ExplicitCas {
    pub version: u64,
    pub cas: u64,
}

/// One shard: a map per database plus counters.
pub struct Shard {
    pub dbs: Vec<DbMap>,
    pub acct: ShardCounters,
    /// Demotion CLOCK hand per db (index into the map, wraps).
    pub hand: Vec<usize>,
    /// Active-expiry cursor per db.
    pub expire_cursor: Vec<usize>,
    /// Explicit CASes per db (empty until a meta `E` is used).
    explicit_cas: Vec<HashMap<Key, ExplicitCas, Hasher>>,
    /// Size of `explicit_cas` at which invalid ones are pruned next.
    explicit_cas_prune_at: usize,
}

impl Shard {
    /// Calls `f` on each of `items` in order, with the bucket of the item
    /// `2 * AHEAD` later and the boxed entry of the one `AHEAD` later
    /// prefetched (a box is found through its bucket). `at` names an
    /// item's database and position. A pass over entries long out of cache
    /// (publishing what the journal or demotion wrote) overlaps their
    /// misses instead of waiting for each in turn.
    pub(crate) fn pipelined<T>(
        &mut self,
        items: &[T],
        at: impl Fn(&T) -> (usize, usize),
        mut f: impl FnMut(&mut Shard, &T),
    ) {
        const AHEAD: usize = 8;
        for j in 0..items.len() + 2 * AHEAD {
            if let Some(x) = items.get(j) {
                let (db, pos) = at(x);
                self.dbs[db].prefetch(pos, false);
            }
            if let Some(x) = j.checked_sub(AHEAD).and_then(|j| items.get(j)) {
                let (db, pos) = at(x);
                self.dbs[db].prefetch(pos, true);
            }
            if let Some(x) = j.checked_sub(2 * AHEAD).and_then(|j| items.get(j)) {
                f(self, x);
            }
        }
    }

    pub fn new(databases: usize) -> Shard {
        Shard {
            dbs: (0..databases).map(|_| DbMap::default()).collect(),
            acct: ShardCounters {
                dbs: vec![DbCounters::default(); databases],
                ..ShardCounters::default()
            },
            hand: vec![0; databases],
            expire_cursor: vec![0; databases],
            explicit_cas: Vec::new(),
            explicit_cas_prune_at: 64,
        }
    }

    /// SWAPDB: databases `a` and `b` trade their maps and per-database
    /// state (counters, CLOCK hand, expiry cursor, explicit CASes).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        let mut ids: Vec<u16> = (0..self.dbs.len() as u16).collect();
        ids.swap(a, b);
        self.arrange(&ids);
    }

    /// Recovery: the maps were filled by database id; put id `ids[d]`'s
    /// state at logical database `d` (`ids` is a permutation).
    pub fn arrange(&mut self, ids: &[u16]) {
        fn permute<T: Default>(v: &mut Vec<T>, ids: &[u16]) {
            if v.len() < ids.len() {
                v.resize_with(ids.len(), T::default);
            }
            let mut old: Vec<T> = v.iter_mut().map(std::mem::take).collect();
            for (d, &id) in ids.iter().enumerate() {
                v[d] = std::mem::take(&mut old[id as usize]);
            }
        }
        permute(&mut self.dbs, ids);
        permute(&mut self.acct.dbs, ids);
        permute(&mut self.hand, ids);
        permute(&mut self.expire_cursor, ids);
        if !self.explicit_cas.is_empty() {
            permute(&mut self.explicit_cas, ids);
        }
    }

    /// The CAS memcached clients see for `e`, the entry of `key` in `db`
    /// (invariant 4).
    pub fn cas_of(&self, db: usize, key: &[u8], e: &Entry) -> u64 {
        self.explicit_cas_of(db, key, e).unwrap_or(e.version)
    }

    fn explicit_cas_of(&self, db: usize, key: &[u8], e: &Entry) -> Option<u64> {
        if e.flags & F_EXPLICIT_CAS == 0 {
            return None;
        }
        let x = self.explicit_cas.get(db)?.get(key)?;
        (x.version == e.version).then_some(x.cas)
    }

    /// The item metadata a record of `e` carries.
    pub fn item_meta(&self, db: usize, key: &[u8], e: &Entry) -> ItemMeta {
        ItemMeta {
            client_flags: e.client_flags,
            explicit_cas: self.explicit_cas_of(db, key, e),
            stale: e.flags & F_STALE != 0,
            vtype: e.value_type(),
        }
    }

    /// Gives the entry at `idx` the stale mark and explicit CAS of `meta`
    /// (its client flags are the caller's), at the entry's current version.
    pub fn apply_item_meta(&mut self, db: usize, idx: usize, meta: &ItemMeta) {
        if let Some((_, e)) = self.dbs[db].get_index_mut(idx) {
            if meta.stale {
                e.flags |= F_STALE;
            } else {
                e.flags &= !F_STALE;
            }
        }
        self.set_explicit_cas(db, idx, meta.explicit_cas);
    }

    /// Sets (or with None drops) the explicit CAS of the entry at `idx`.
    pub fn set_explicit_cas(&mut self, db: usize, idx: usize, cas: Option<u64>) {
        let Some((key, e)) = self.dbs[db].get_index_mut(idx) else {
            return;
        };
        let Some(cas) = cas else {
            if e.flags & F_EXPLICIT_CAS != 0 {
                e.flags &= !F_EXPLICIT_CAS;
                if let Some(m) = self.explicit_cas.get_mut(db) {
                    m.remove(key);
                }
            }
            return;
        };
        e.flags |= F_EXPLICIT_CAS;
        let x = ExplicitCas {
            version: e.version,
            cas,
        };
        let key = Key::from(key);
        if self.explicit_cas.len() <= db {
            self.explicit_cas.resize_with(db + 1, HashMap::default);
        }
        self.explicit_cas[db].insert(key, x);
        self.prune_explicit_cas(db);
    }

    /// Drops explicit CASes no entry can see any more (amortized: each
    /// prune at least halves what the next one may keep).
    fn prune_explicit_cas(&mut self, db: usize) {
        let m = &mut self.explicit_cas[db];
        if m.len() < self.explicit_cas_prune_at {
            return;
        }
        let map = &self.dbs[db];
        m.retain(|k, x| {
            map.get(&k[..])
                .is_some_and(|e| e.flags & F_EXPLICIT_CAS != 0 && e.version == x.version)
        });
        self.explicit_cas_prune_at = (2 * m.len()).max(64);
    }

    /// RAM held by this shard's keys and metadata: the maps' allocated
    /// buckets and index slots plus the keys' heap bytes.
    pub fn index_bytes(&self) -> u64 {
        let mut total = self.acct.key_bytes;
        for m in &self.dbs {
            total += m.allocated_bytes();
        }
        for m in &self.explicit_cas {
            total += m.capacity() as u64 * EXPLICIT_CAS_BUCKET_BYTES;
            total += m.keys().map(|k| k.heap_bytes() as u64).sum::<u64>();
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_stays_compact() {
        // The index's RAM per key is a product goal (docs: 24 B + key is
        // the target); this pins the current size so growth is deliberate.
        assert!(
            std::mem::size_of::<Entry>() <= 80,
            "{}",
            std::mem::size_of::<Entry>()
        );
        assert_eq!(std::mem::size_of::<FlashLoc>(), 12);
    }
}

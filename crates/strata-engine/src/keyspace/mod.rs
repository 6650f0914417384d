//! Keyspace operations: existence, deletion, TTLs, iteration and flushing,
//! all answered from RAM (engine invariant 1); renames in `rename`. The
//! rooms: `strings` (GET/SET; its `update`, the read-modify-write), `bigstr`
//! (part of a string: a chunked one's parts), `items` (memcached item
//! state), `view` (`KeysView`: atomic access to collections), `chunks`
//! (which parts of a chunked collection a command needs, and loading
//! them), `rename`, `iterate` (KEYS, SCAN, RANDOMKEY).

pub mod bigstr;
pub mod chunks;
pub mod exclusive;
pub mod functions;
mod get_many;
pub mod items;
mod iterate;
pub mod observe;
mod rename;
pub mod strings;
pub mod swapdb;
pub mod view;
pub mod watch;

use crate::base::FlashLoc;
use crate::clock::{now_ms, now_secs};
use crate::index::{Shard, Slot};
use crate::stats::Stats;
use crate::{Engine, Inner};
use bytes::Bytes;
use observe::KeyChange;

/// A key's TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlState {
    Missing,
    NoTtl,
    /// Expires at this Unix time in milliseconds.
    At(u64),
}

/// EXPIRE's NX / XX / GT / LT options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExpireCond {
    #[default]
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
    /// XX and LT together: the key has a TTL and the new one is smaller.
    XxLt,
}

/// Where a value lives (DEBUG TIER).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    Ram,
    /// In RAM with a valid flash copy.
    RamAndFlash(FlashLoc),
    Flash(FlashLoc),
    /// A chunked collection: its parts, and how many are in RAM.
    Chunked {
        parts: u64,
        in_ram: u64,
    },
}

/// The largest collection (`Engine::largest_collection`).
#[derive(Clone, Debug)]
pub struct LargestCollection {
    pub db: usize,
    pub key: bytes::Bytes,
    pub vtype: crate::base::ValueType,
    /// Its element count (saturates at 2^31 - 1).
    pub elements: u64,
    /// Its packed length in bytes.
    pub bytes: u64,
}

/// Metadata of one key, answered from RAM.
#[derive(Clone, Debug)]
pub struct KeyInfo {
    pub value_len: u64,
    pub location: Location,
    pub idle_secs: u64,
    /// Its access frequency decayed to now (OBJECT FREQ; meaningful under
    /// an LFU policy, `tiering/access.rs`).
    pub lfu_freq: u8,
    pub expire_at_ms: u64,
    /// The value if it is in RAM (for OBJECT ENCODING's int check).
    pub hot_value: Option<Bytes>,
    /// A string changed in place (APPEND, SETRANGE): `raw`.
    pub raw_string: bool,
    /// A string Redis keeps as text though it may read as an integer
    /// (INCRBYFLOAT's result).
    pub float_string: bool,
    pub key_len: usize,
    /// RAM this key costs: its map bucket and slot, out-of-line key bytes,
    /// and the value if it is in RAM.
    pub ram_bytes: u64,
    /// Memcached's CAS (see `Shard::cas_of`) and client flags.
    pub cas: u64,
    pub client_flags: u32,
    /// Read by a memcached get since it was stored.
    pub fetched: bool,
    /// The value's type; for a collection, its element count and whether
    /// Redis would report the big encoding (from RAM, hot or cold).
    pub vtype: crate::base::ValueType,
    pub elements: u64,
    pub big_encoding: bool,
}

/// Parts above which a removed chunked collection's records are released
/// on the background thread (`Inner::bury`).
const BURY_PARTS: usize = 64;

impl Inner {
    /// Removes the entry at `idx`, releasing its flash record. Caller holds
    /// the shard lock.
    pub(crate) fn remove_index(&self, sh: &mut Shard, db: usize, idx: usize, expired: bool) {
        let how = if expired {
            KeyChange::Expired
        } else {
            KeyChange::Deleted
        };
        self.remove_index_as(sh, db, idx, how);
    }

    /// As `remove_index`, saying why (`Deleted`, `Expired`, `Evicted`).
    pub(crate) fn remove_index_as(&self, sh: &mut Shard, db: usize, idx: usize, how: KeyChange) {
        if let Some((key, e)) = sh.dbs[db].swap_remove_index(idx) {
            sh.acct.entry_removed(db, key.heap_bytes(), &e);
            self.bury(e.slot);
            if how == KeyChange::Expired {
                // The record carries its expiry: no tombstone needed.
                Stats::inc(&self.stats.expired_keys);
                self.observe(db, &key, how);
            } else {
                self.note_key_as(db, &key, how);
            }
        }
    }

    /// Releases the records of a slot that left the index: now, or for a
    /// chunked collection of more than `BURY_PARTS` parts on the background
    /// thread (`graveyard`).
    pub(crate) fn bury(&self, slot: Slot) {
        if let Slot::Chunked(c) = &slot {
            if c.dir().is_some_and(|d| d.part_count() > BURY_PARTS) {
                self.tiering.graveyard.lock().push(slot);
                self.wake_background();
                return;
            }
        }
        for loc in slot.locs() {
            self.release_flash(loc);
        }
    }

    /// Releases the records of the buried collections and frees them
    /// (background thread); returns whether there were any.
    pub(crate) fn release_buried(&self) -> bool {
        let dead = std::mem::take(&mut *self.tiering.graveyard.lock());
        for slot in &dead {
            for loc in slot.locs() {
                self.release_flash(loc);
            }
        }
        !dead.is_empty()
    }

    /// Removes the entry at `idx` without a journal note (whole-segment
    /// eviction, where no older record of the key can survive).
    pub(crate) fn remove_index_quiet(&self, sh: &mut Shard, db: usize, idx: usize) {
        if let Some((key, e)) = sh.dbs[db].swap_remove_index(idx) {
            sh.acct.entry_removed(db, key.heap_bytes(), &e);
            self.bury(e.slot);
        }
    }

    /// Sets or clears (0) the TTL of the entry at `idx`; a time in the past
    /// deletes the key. Caller holds the shard lock.
    pub(crate) fn set_expire_at(&self, sh: &mut Shard, db: usize, idx: usize, at: u64) {
        if at != 0 && at <= now_ms() {
            self.remove_index(sh, db, idx, false);
            return;
        }
        let e = sh.dbs[db].at_mut(idx);
        let old = e.expire_at_ms;
        e.expire_at_ms = at;
        sh.acct.ttl_remove(db, old);
        sh.acct.ttl_add(db, at);
        self.metadata_changed(sh, db, idx);
    }

    /// The entry at `idx` changed without a new value (TTL, memcached item
    /// state): with the journal on, it is marked dirty and noted, so its
    /// record is rewritten. Caller holds the shard lock.
    pub(crate) fn metadata_changed(&self, sh: &mut Shard, db: usize, idx: usize) {
        if let Some((k, _)) = sh.dbs[db].get_index(idx) {
            self.keys.watches.touched(self, db, k);
            self.observe(db, k, KeyChange::Written);
        }
        self.log_again(sh, db, idx);
    }

    /// Has the entry at `idx`'s current state logged (again): marked dirty
    /// and noted, with nothing reported (the engine's own work: a record of
    /// the same write that may have been logged after a newer one, journal
    /// invariant 6). Caller holds the shard lock.
    pub(crate) fn log_again(&self, sh: &mut Shard, db: usize, idx: usize) {
        // A chunked collection's TTL is in its head record (a chunked
        // entry is always boxed: a packed one is left packed).
        if sh.dbs[db].boxed_at(idx).is_some() {
            let e = sh.dbs[db].at_mut(idx);
            e.with_dir(&mut sh.acct, |d| d.set_head_dirty(true));
        }
        let dirty = self.dirty_flag();
        if dirty == 0 {
            return;
        }
        if let Some((k, e)) = sh.dbs[db].get_index_mut(idx) {
            e.flags |= dirty;
            self.journal_key(db, k);
        }
    }

    /// The index of the live entry of `key`, removing it if expired.
    pub(crate) fn live_index(&self, sh: &mut Shard, db: usize, key: &[u8]) -> Option<usize> {
        let idx = sh.dbs[db].get_index_of(key)?;
        if sh.dbs[db].at(idx).is_expired(now_ms()) {
            self.remove_index(sh, db, idx, true);
            return None;
        }
        Some(idx)
    }
}

impl Engine {
    /// DEL / UNLINK of one key; returns whether it existed. RAM only.
    pub fn delete(&self, db: usize, key: &[u8]) -> bool {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        match inner.live_index(sh, db, key) {
            Some(idx) => {
                inner.remove_index(sh, db, idx, false);
                true
            }
            None => false,
        }
    }

    /// Counts one lookup of a read command as a keyspace hit or miss, for
    /// the commands whose engine calls count nothing themselves (EXISTS,
    /// TYPE, TTL, STRLEN, OBJECT ..., which Redis looks up with
    /// `lookupKeyRead`).
    /// Returns `hit`, so a lookup can be counted where it is made.
    pub fn count_lookup(&self, hit: bool) -> bool {
        if hit {
            Stats::inc(&self.inner.stats.keyspace_hits);
        } else {
            Stats::inc(&self.inner.stats.keyspace_misses);
        }
        hit
    }

    pub fn exists(&self, db: usize, key: &[u8]) -> bool {
        self.inner.with_live(db, key, |_, _| ()).is_some()
    }

    /// TOUCH: marks the key accessed; returns whether it exists.
    pub fn touch(&self, db: usize, key: &[u8]) -> bool {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        match inner.live_index(sh, db, key) {
            Some(idx) => {
                sh.dbs[db].mark_read(idx, now_secs(), inner.tun.lfu());
                true
            }
            None => false,
        }
    }

    pub fn ttl(&self, db: usize, key: &[u8]) -> TtlState {
        match self.inner.with_live(db, key, |_, e| e.expire_at_ms) {
            None => TtlState::Missing,
            Some(0) => TtlState::NoTtl,
            Some(at) => TtlState::At(at),
        }
    }

    /// EXPIRE family: sets the TTL to `at_ms` if `cond` holds; returns
    /// whether it was set (a time in the past deletes the key).
    pub fn expire(&self, db: usize, key: &[u8], at_ms: u64, cond: ExpireCond) -> bool {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(idx) = inner.live_index(sh, db, key) else {
            return false;
        };
        let cur = sh.dbs[db].at(idx).expire_at_ms;
        // Redis: no TTL counts as an infinite TTL for GT and LT.
        let ok = match cond {
            ExpireCond::Always => true,
            ExpireCond::Nx => cur == 0,
            ExpireCond::Xx => cur != 0,
            ExpireCond::Gt => cur != 0 && at_ms > cur,
            ExpireCond::Lt => cur == 0 || at_ms < cur,
            ExpireCond::XxLt => cur != 0 && at_ms < cur,
        };
        if ok {
            inner.set_expire_at(sh, db, idx, at_ms);
        }
        ok
    }

    /// PERSIST: removes the TTL; returns whether there was one.
    pub fn persist(&self, db: usize, key: &[u8]) -> bool {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        match inner.live_index(sh, db, key) {
            Some(idx) if sh.dbs[db].at(idx).expire_at_ms != 0 => {
                inner.set_expire_at(sh, db, idx, 0);
                true
            }
            _ => false,
        }
    }

    /// Metadata of a key (OBJECT, DEBUG TIER, TYPE, MEMORY USAGE); an
    /// expired key is deleted and None.
    pub fn key_info(&self, db: usize, key: &[u8]) -> Option<KeyInfo> {
        self.key_info_of(db, key, true)
    }

    /// As `key_info`, for a key still in the index even if it expired
    /// (DEBUG OBJECT: Redis looks in its dictionary, expiry unchecked).
    pub fn key_info_present(&self, db: usize, key: &[u8]) -> Option<KeyInfo> {
        self.key_info_of(db, key, false)
    }

    fn key_info_of(&self, db: usize, key: &[u8], live: bool) -> Option<KeyInfo> {
        let now = now_secs();
        let heap = crate::index::Key::heap_bytes_of(key) as u64;
        self.inner.with_entry(db, key, live, |sh, e| KeyInfo {
            ram_bytes: sh.dbs[db].key_bytes(key)
                + heap
                + match &e.slot {
                    Slot::Hot(h) => {
                        (std::mem::size_of::<crate::index::Hot>() + h.value.len()) as u64
                    }
                    Slot::Cold(_) => 0,
                    Slot::Chunked(c) => c.dir().map_or(0, |d| {
                        (std::mem::size_of::<crate::types::Collection>()
                            + d.entries_bytes()
                            + d.ram_bytes()) as u64
                    }),
                },
            value_len: e.value_len as u64,
            location: match &e.slot {
                Slot::Hot(h) => match h.backing() {
                    None => Location::Ram,
                    Some(l) => Location::RamAndFlash(l),
                },
                Slot::Cold(l) => Location::Flash(*l),
                Slot::Chunked(c) => c.dir().map_or(Location::Ram, |d| Location::Chunked {
                    parts: d.part_count() as u64,
                    in_ram: d.resident_parts() as u64,
                }),
            },
            idle_secs: now.saturating_sub(self.inner.last_access_secs(e)) as u64,
            lfu_freq: crate::index::access::decayed(
                e.lfu,
                e.lru_secs,
                now,
                self.inner.tun.lfu_params(),
            ),
            expire_at_ms: e.expire_at_ms,
            hot_value: match &e.slot {
                Slot::Hot(h) => h.value.as_str().filter(|v| v.len() <= 20).cloned(),
                _ => None,
            },
            key_len: key.len(),
            cas: sh.cas_of(db, key, e),
            client_flags: e.client_flags,
            fetched: e.flags & crate::index::F_FETCHED != 0,
            vtype: e.value_type(),
            raw_string: e.vtype & crate::index::VT_STR_RAW != 0,
            float_string: e.vtype & crate::index::VT_STR_NOINT != 0,
            elements: match e.value_type() {
                crate::base::ValueType::String => 0,
                _ => crate::types::aux_count(e.client_flags) as u64,
            },
            big_encoding: e.value_type() != crate::base::ValueType::String
                && e.client_flags & crate::types::AUX_BIG != 0,
        })
    }

    /// The collection with the most elements, over all databases, by a
    /// scan of the index (each shard locked in turn while its entries are
    /// read; no value is read). Ties go to the first one found.
    pub fn largest_collection(&self) -> Option<LargestCollection> {
        let mut best: Option<LargestCollection> = None;
        for s in self.inner.shards.iter() {
            let sh = s.lock();
            for (db, map) in sh.dbs.iter().enumerate() {
                for (k, e) in map.iter() {
                    let t = e.value_type();
                    if t == crate::base::ValueType::String {
                        continue;
                    }
                    let n = crate::types::aux_count(e.client_flags) as u64;
                    if best.as_ref().is_none_or(|b| n > b.elements) {
                        best = Some(LargestCollection {
                            db,
                            key: bytes::Bytes::copy_from_slice(k),
                            vtype: t,
                            elements: n,
                            bytes: e.value_len as u64,
                        });
                    }
                }
            }
        }
        best
    }

    /// DBSIZE (expired keys not yet swept are counted, as in Redis).
    pub fn dbsize(&self, db: usize) -> u64 {
        self.inner
            .shards
            .iter()
            .map(|s| s.lock().dbs[db].len() as u64)
            .sum()
    }

    /// keys, keys with a TTL, average TTL in ms (0 if none) of one db.
    pub fn db_stats(&self, db: usize) -> (u64, u64, u64) {
        let (mut keys, mut expires, mut sum) = (0u64, 0u64, 0u128);
        for s in self.inner.shards.iter() {
            let s = s.lock();
            keys += s.dbs[db].len() as u64;
            expires += s.acct.dbs[db].expires;
            sum += s.acct.dbs[db].expire_sum_ms;
        }
        let avg = if expires == 0 {
            0
        } else {
            ((sum / expires as u128) as u64).saturating_sub(now_ms())
        };
        (keys, expires, avg)
    }

    /// FLUSHDB: removes every key of `db` (RAM only: their records die;
    /// with the journal on, one flush record makes that durable).
    pub fn flush_db(&self, db: usize) {
        self.flush(Some(db));
    }

    /// FLUSHALL.
    pub fn flush_all(&self) {
        self.flush(None);
    }

    /// Empties one database or all, atomically: every shard is locked (in
    /// index order) while the maps are taken and the flush is noted, so
    /// the flush record's sequence number separates exactly the keys it
    /// removed from the ones written after it.
    fn flush(&self, db: Option<usize>) {
        let inner = &self.inner;
        let dbs: Vec<usize> = match db {
            Some(d) => vec![d],
            None => (0..inner.keys.databases).collect(),
        };
        let mut taken = Vec::new();
        {
            let mut guards: Vec<_> = inner.shards.iter().map(|s| s.lock()).collect();
            for g in guards.iter_mut() {
                let sh = &mut **g;
                for &d in &dbs {
                    let map = std::mem::take(&mut sh.dbs[d]);
                    for (k, e) in map.iter() {
                        sh.acct
                            .entry_removed(d, crate::index::Key::heap_bytes_of(k), &e);
                    }
                    sh.hand[d] = 0;
                    sh.expire_cursor[d] = 0;
                    taken.push(map);
                }
            }
            inner.note_flush(match db {
                Some(d) => d as u16,
                None => crate::flash::format::ALL_DATABASES,
            });
        }
        // The removed entries are unreachable now: release their records
        // and free the maps without holding any lock.
        for map in taken {
            for (_, e) in map {
                for loc in e.flash_locs() {
                    inner.release_flash(loc);
                }
            }
        }
    }
}

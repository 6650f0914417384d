//! Memcached item operations on the shared keyspace: values with client
//! flags and a CAS (the entry's version, which changes whenever the value
//! does), conditional stores (add / replace / cas) and get-and-touch.
//!
//! Invariant: a condition (exists, CAS) is checked and the store applied in
//! one critical section of the key's shard, so two clients racing on one
//! key see memcached's outcomes (one STORED, one EXISTS / NOT_STORED).

use crate::clock::{now_ms, now_secs};
use crate::index::{Slot, F_FETCHED, F_REFERENCED, F_WIN_PENDING};
use crate::read::{fetch_and_promote, FetchTarget, Read};
use crate::stats::Stats;
use crate::{Engine, EngineError};
use bytes::Bytes;

/// A value as memcached clients see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub value: Bytes,
    pub client_flags: u32,
    /// Changes whenever the value changes.
    pub cas: u64,
    /// Absolute Unix ms; 0 = never.
    pub expire_at_ms: u64,
    /// Seconds since the last access before this one.
    pub idle_secs: u32,
    /// Whether a memcached get read it before this one (meta `h`).
    pub fetched_before: bool,
    /// An `mg ... N` created it empty and that client has not filled it yet
    /// (meta `Z`).
    pub win_pending: bool,
}

/// When `store_item` stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemCond {
    /// set
    Always,
    /// add: only if the key does not exist.
    Missing,
    /// replace: only if it exists.
    Exists,
    /// cas: only if it exists with this CAS.
    Cas(u64),
}

/// The outcome of a conditional store or delete (memcached's reply words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// STORED (or deleted); the new CAS (0 after a delete).
    Stored(u64),
    /// NOT_STORED: add of an existing key, replace of a missing one.
    NotStored,
    /// EXISTS: cas with a stale CAS.
    Exists,
    /// NOT_FOUND: cas of a missing key.
    NotFound,
}

impl Engine {
    /// Memcached gets that found their item expired.
    pub fn get_expired(&self) -> u64 {
        Stats::get(&self.inner.stats.get_expired)
    }

    /// get / gets / gat: the item, from RAM or after one flash read. With
    /// `touch`, its TTL is set first (0 = none; in the past = the key goes).
    pub fn get_item(
        &self,
        db: usize,
        key: &[u8],
        touch: Option<u64>,
    ) -> Read<Result<Option<Item>, EngineError>> {
        let inner = &self.inner;
        let now = now_ms();
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(mut idx) = sh.dbs[db].get_index_of(key) else {
            Stats::inc(&inner.stats.keyspace_misses);
            return Read::Ready(Ok(None));
        };
        if sh.dbs[db][idx].is_expired(now) {
            inner.remove_index(sh, db, idx, true);
            Stats::inc(&inner.stats.keyspace_misses);
            Stats::inc(&inner.stats.get_expired);
            return Read::Ready(Ok(None));
        }
        if let Some(at) = touch {
            if sh.dbs[db][idx].expire_at_ms != at {
                inner.set_expire_at(sh, db, idx, at);
            }
            match sh.dbs[db].get_index_of(key) {
                Some(i) => idx = i,
                None => {
                    Stats::inc(&inner.stats.keyspace_misses);
                    return Read::Ready(Ok(None));
                }
            }
        }
        let Some((_, e)) = sh.dbs[db].get_index_mut(idx) else {
            return Read::Ready(Ok(None));
        };
        Stats::inc(&inner.stats.keyspace_hits);
        let idle_secs = now_secs().saturating_sub(e.lru_secs);
        let fetched_before = e.flags & F_FETCHED != 0;
        let win_pending = e.flags & F_WIN_PENDING != 0;
        e.flags |= F_REFERENCED | F_FETCHED;
        e.lru_secs = now_secs();
        let (client_flags, cas, expire_at_ms) = (e.client_flags, e.version, e.expire_at_ms);
        let item = move |value: Bytes| Item {
            value,
            client_flags,
            cas,
            expire_at_ms,
            idle_secs,
            fetched_before,
            win_pending,
        };
        match &e.slot {
            Slot::Hot(h) => {
                Stats::inc(&inner.stats.ram_hits);
                if h.backing.is_some() {
                    Stats::inc(&inner.stats.ram_cool_hits);
                }
                Read::Ready(Ok(Some(item(h.value.clone()))))
            }
            Slot::Cold(loc) => {
                Stats::inc(&inner.stats.ram_misses);
                let t = FetchTarget::new(inner, db, key, *loc, e.version);
                drop(guard);
                let inner = inner.clone();
                Read::Pending(Box::pin(async move {
                    Ok(fetch_and_promote(inner, t).await?.map(item))
                }))
            }
        }
    }

    /// set / add / replace / cas with client flags and an absolute expiry
    /// (0 = none; in the past: stored as expired, i.e. gone).
    pub fn store_item(
        &self,
        db: usize,
        key: &[u8],
        value: &[u8],
        client_flags: u32,
        expire_at_ms: u64,
        cond: ItemCond,
    ) -> StoreOutcome {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let existing = inner.live_index(sh, db, key);
        match (cond, existing) {
            (ItemCond::Missing, Some(_)) | (ItemCond::Exists, None) => {
                return StoreOutcome::NotStored
            }
            (ItemCond::Cas(_), None) => return StoreOutcome::NotFound,
            (ItemCond::Cas(c), Some(i)) if sh.dbs[db][i].version != c => {
                return StoreOutcome::Exists
            }
            _ => {}
        }
        inner.store(
            sh,
            db,
            key,
            existing,
            Bytes::copy_from_slice(value),
            expire_at_ms,
            client_flags,
        );
        let cas = sh.dbs[db].get(key).map(|e| e.version).unwrap_or(0);
        StoreOutcome::Stored(cas)
    }

    /// Marks an item created by meta auto-vivify (`mg ... N`) as waiting for
    /// its filler: later gets see `Z` until it is stored again. `cas` is the
    /// item's CAS right after creation (nothing is marked if it changed).
    pub fn mark_win_pending(&self, db: usize, key: &[u8], cas: u64) {
        let mut guard = self.inner.shard(key).lock();
        if let Some(e) = guard.dbs[db].get_mut(key) {
            if e.version == cas {
                e.flags |= F_WIN_PENDING;
            }
        }
    }

    /// delete with an optional CAS condition (meta `md ... C<cas>`).
    pub fn delete_item(&self, db: usize, key: &[u8], cas: Option<u64>) -> StoreOutcome {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(idx) = inner.live_index(sh, db, key) else {
            return StoreOutcome::NotFound;
        };
        if cas.is_some_and(|c| c != sh.dbs[db][idx].version) {
            return StoreOutcome::Exists;
        }
        inner.remove_index(sh, db, idx, false);
        StoreOutcome::Stored(0)
    }
}

//! Memcached item operations on the shared keyspace: values with client
//! flags and a CAS, conditional stores (add / replace / cas), get-and-touch,
//! and the meta protocol's item states: an explicit CAS (`E`), stale items
//! (`I`, served with `X`) and the right to refill an item (`W`, then `Z`).
//!
//! Invariants:
//! 1. A condition (exists, CAS) is checked and the store applied in one
//!    critical section of the key's shard, so two clients racing on one
//!    key see memcached's outcomes (one STORED, one EXISTS / NOT_STORED).
//! 2. An item's CAS is `Shard::cas_of`: its version, unless set explicitly.
//!    Storing a new value gives a new CAS and clears the stale mark and the
//!    refill right, except a *stale store* (`ms … C<older> I`), which keeps
//!    both and the TTL, as memcached does.
//! 3. At most one client holds an item's refill right: it is claimed
//!    (`F_WIN_PENDING`) in the critical section that saw it free.
//! 4. Item state that outlives a restart (stale mark, explicit CAS) changes
//!    only through `store` or `metadata_changed`, so the journal logs it.

use crate::clock::{now_ms, now_secs};
use crate::index::{Slot, F_FETCHED, F_STALE, F_WIN_PENDING};
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_and_promote, FetchTarget, Read};
use crate::{Engine, EngineError};
use bytes::Bytes;

/// A value as memcached clients see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub value: Bytes,
    pub client_flags: u32,
    /// Changes whenever the value changes (or as set by meta `E`).
    pub cas: u64,
    /// Absolute Unix ms; 0 = never.
    pub expire_at_ms: u64,
    /// Seconds since the last access before this one.
    pub idle_secs: u32,
    /// Whether a memcached get read it before this one (meta `h`).
    pub fetched_before: bool,
    /// Another client holds the right to refill it (meta `Z`).
    pub token_sent: bool,
    /// Invalidated by meta `I` (meta `X`).
    pub stale: bool,
    /// This get won the right to refill it (meta `W`).
    pub won: bool,
}

/// How `get_item` reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct ItemGet {
    /// Set the TTL first (gat, mg `T`): absolute ms, 0 = none, in the past
    /// = the key goes.
    pub touch: Option<u64>,
    /// mg: claim the refill right of a stale item nobody holds yet.
    pub claim_stale: bool,
    /// mg `R`: also claim it if the item expires before this (absolute ms).
    pub recache_before_ms: Option<u64>,
    /// mg `u`: leave the item's access state alone (last access, fetched,
    /// the CLOCK reference bit).
    pub no_bump: bool,
}

/// A value to store with `store_item`.
#[derive(Clone, Copy, Debug)]
pub struct NewItem<'a> {
    pub value: &'a [u8],
    pub client_flags: u32,
    /// Absolute Unix ms; 0 = never; in the past: stored as expired (gone).
    pub expire_at_ms: u64,
    /// Meta `E`: the CAS to give the item instead of a new version.
    pub explicit_cas: Option<u64>,
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
    /// meta `ms … C<cas> I`: as `Cas`, and if the given CAS is older
    /// (smaller) than the item's, store the value as stale (invariant 2).
    CasOrStale(u64),
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

/// Meta `md … x`: keep the item but drop its value (it becomes empty, with
/// these client flags and TTL, and keeps its CAS unless `E` gives one).
#[derive(Clone, Copy, Debug, Default)]
pub struct Emptied {
    pub client_flags: u32,
    /// Absolute ms; 0 = none.
    pub expire_at_ms: u64,
    /// The CAS to give it (`E`).
    pub explicit_cas: Option<u64>,
}

/// Meta `md … I`: mark the item stale instead of deleting it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Invalidate {
    /// A new TTL (`T`): absolute ms, 0 = none.
    pub expire_at_ms: Option<u64>,
    /// The CAS to give it (`E`); otherwise a new one.
    pub explicit_cas: Option<u64>,
}

impl Engine {
    /// Memcached gets that found their item expired.
    pub fn get_expired(&self) -> u64 {
        Stats::get(&self.inner.stats.get_expired)
    }

    /// get / gets / gat / mg: the item, from RAM or after one flash read.
    pub fn get_item(
        &self,
        db: usize,
        key: &[u8],
        opts: ItemGet,
    ) -> Read<Result<Option<Item>, EngineError>> {
        let inner = &self.inner;
        let now = now_ms();
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(mut idx) = sh.dbs[db].get_index_of(key) else {
            Stats::inc(&inner.stats.keyspace_misses);
            return Read::Ready(Ok(None));
        };
        if sh.dbs[db].at(idx).is_expired(now) {
            inner.remove_index(sh, db, idx, true);
            Stats::inc(&inner.stats.keyspace_misses);
            Stats::inc(&inner.stats.get_expired);
            return Read::Ready(Ok(None));
        }
        if sh.dbs[db].at(idx).value_type() != crate::base::ValueType::String {
            return Read::Ready(Err(EngineError::WrongType));
        }
        if let Some(at) = opts.touch {
            if sh.dbs[db].at(idx).expire_at_ms != at {
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
        let cas = sh.cas_of(db, key, &sh.dbs[db].at(idx));
        let idle_secs = now_secs().saturating_sub(inner.last_access_secs(&sh.dbs[db].at(idx)));
        let Some((_, e)) = sh.dbs[db].get_index_mut(idx) else {
            return Read::Ready(Ok(None));
        };
        Stats::inc(&inner.stats.keyspace_hits);
        let fetched_before = e.flags & F_FETCHED != 0;
        let token_sent = e.flags & F_WIN_PENDING != 0;
        let stale = e.flags & F_STALE != 0;
        let recache = opts
            .recache_before_ms
            .is_some_and(|t| e.expire_at_ms != 0 && e.expire_at_ms < t);
        let won = !token_sent && ((opts.claim_stale && stale) || recache);
        if won {
            e.flags |= F_WIN_PENDING;
        }
        if !opts.no_bump {
            e.flags |= F_FETCHED;
            crate::index::access::touch(e, now_secs(), inner.tun.lfu());
        }
        let (client_flags, expire_at_ms) = (e.client_flags, e.expire_at_ms);
        let item = move |value: Bytes| Item {
            value,
            client_flags,
            cas,
            expire_at_ms,
            idle_secs,
            fetched_before,
            token_sent,
            stale,
            won,
        };
        match &e.slot {
            // A chunked string (memcached's item_size_max allows 1 MB and
            // more): whole, as GET reads it.
            Slot::Chunked(_) => {
                drop(guard);
                let read = self.get(db, key);
                read.map(move |r| r.map(|v| v.map(item)))
            }
            Slot::Hot(h) => {
                Stats::inc(&inner.stats.ram_hits);
                if h.backing().is_some() {
                    Stats::inc(&inner.stats.ram_cool_hits);
                }
                Read::Ready(Ok(h.value.as_str().cloned().map(item)))
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

    /// set / add / replace / cas / ms: stores `item` if `cond` holds.
    pub fn store_item(
        &self,
        db: usize,
        key: &[u8],
        item: NewItem<'_>,
        cond: ItemCond,
    ) -> StoreOutcome {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let existing = inner.live_index(sh, db, key);
        let current_cas = existing.map(|i| sh.cas_of(db, key, &sh.dbs[db].at(i)));
        let mut stale_store = false;
        match (cond, current_cas) {
            (ItemCond::Missing, Some(_)) | (ItemCond::Exists, None) => {
                return StoreOutcome::NotStored
            }
            (ItemCond::Cas(_) | ItemCond::CasOrStale(_), None) => return StoreOutcome::NotFound,
            (ItemCond::CasOrStale(c), Some(cur)) if c < cur => stale_store = true,
            (ItemCond::Cas(c) | ItemCond::CasOrStale(c), Some(cur)) if c != cur => {
                return StoreOutcome::Exists
            }
            _ => {}
        }
        // A stale store keeps the TTL and the refill right (invariant 2).
        let (expire_at_ms, keep_flags) = match existing {
            Some(i) if stale_store => {
                let e = &sh.dbs[db].at(i);
                (e.expire_at_ms, F_STALE | (e.flags & F_WIN_PENDING))
            }
            _ => (item.expire_at_ms, 0),
        };
        let Some(idx) = inner.store(
            sh,
            db,
            key,
            existing,
            item.value,
            expire_at_ms,
            item.client_flags,
        ) else {
            // Stored already expired: gone.
            return StoreOutcome::Stored(0);
        };
        sh.dbs[db].at_mut(idx).flags |= keep_flags;
        if item.explicit_cas.is_some() {
            sh.set_explicit_cas(db, idx, item.explicit_cas);
        }
        if keep_flags & F_STALE != 0 || item.explicit_cas.is_some() {
            // The store's note carried the state before these (journal
            // invariant 1): note the item state too.
            inner.journal_key(db, key);
        }
        StoreOutcome::Stored(sh.cas_of(db, key, &sh.dbs[db].at(idx)))
    }

    /// Meta auto-vivify (`mg … N`): if the key is missing, creates it empty
    /// with this TTL and gives the caller its refill right. Returns the new
    /// item's CAS, or None if the key exists.
    pub fn vivify_item(
        &self,
        db: usize,
        key: &[u8],
        expire_at_ms: u64,
        explicit_cas: Option<u64>,
    ) -> Option<u64> {
        let item = NewItem {
            value: b"",
            client_flags: 0,
            expire_at_ms,
            explicit_cas,
        };
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        if inner.live_index(sh, db, key).is_some() {
            return None;
        }
        let idx = inner.store(sh, db, key, None, b"", expire_at_ms, 0)?;
        sh.dbs[db].at_mut(idx).flags |= F_WIN_PENDING;
        if item.explicit_cas.is_some() {
            sh.set_explicit_cas(db, idx, item.explicit_cas);
            // After the store's note (journal invariant 1).
            inner.journal_key(db, key);
        }
        Some(sh.cas_of(db, key, &sh.dbs[db].at(idx)))
    }

    /// Meta `ma … E<cas>`: gives the item the explicit CAS `cas` if it
    /// still has the CAS `was` (what the arithmetic just stored).
    pub fn set_item_cas(&self, db: usize, key: &[u8], was: u64, cas: u64) -> bool {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(idx) = inner.live_index(sh, db, key) else {
            return false;
        };
        if sh.cas_of(db, key, &sh.dbs[db].at(idx)) != was {
            return false;
        }
        sh.set_explicit_cas(db, idx, Some(cas));
        inner.metadata_changed(sh, db, idx);
        true
    }

    /// delete / md, with an optional CAS condition (`C`). With `emptied`
    /// (`x`) the item stays with an empty value; with `invalidate` (`I`) it
    /// is marked stale, not removed: it gets a new CAS (or the explicit
    /// one), loses its refill right, and takes the new TTL.
    pub fn delete_item(
        &self,
        db: usize,
        key: &[u8],
        cas: Option<u64>,
        emptied: Option<Emptied>,
        invalidate: Option<Invalidate>,
    ) -> StoreOutcome {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(mut idx) = inner.live_index(sh, db, key) else {
            return StoreOutcome::NotFound;
        };
        if cas.is_some_and(|c| c != sh.cas_of(db, key, &sh.dbs[db].at(idx))) {
            return StoreOutcome::Exists;
        }
        if let Some(x) = emptied {
            let kept_cas = x
                .explicit_cas
                .unwrap_or_else(|| sh.cas_of(db, key, &sh.dbs[db].at(idx)));
            let flags = x.client_flags;
            let Some(i) = inner.store(sh, db, key, Some(idx), b"", x.expire_at_ms, flags) else {
                return StoreOutcome::Stored(0);
            };
            idx = i;
            sh.set_explicit_cas(db, idx, Some(kept_cas));
            // After the store's note (journal invariant 1).
            inner.journal_key(db, key);
            if invalidate.is_none() {
                return StoreOutcome::Stored(kept_cas);
            }
        }
        let Some(inv) = invalidate else {
            inner.remove_index(sh, db, idx, false);
            return StoreOutcome::Stored(0);
        };
        if let Some(at) = inv.expire_at_ms {
            inner.set_expire_at(sh, db, idx, at);
            match sh.dbs[db].get_index_of(key) {
                Some(i) => idx = i,
                // A TTL in the past removed it.
                None => return StoreOutcome::Stored(0),
            }
        }
        let e = sh.dbs[db].at_mut(idx);
        e.flags = (e.flags | F_STALE) & !F_WIN_PENDING;
        let new_cas = inv.explicit_cas.unwrap_or_else(|| inner.next_seq());
        sh.set_explicit_cas(db, idx, Some(new_cas));
        inner.metadata_changed(sh, db, idx);
        StoreOutcome::Stored(new_cas)
    }
}

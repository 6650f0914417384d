//! `KeysView`: atomic access to the values of a declared set of keys, for
//! commands that read or change collections (and, later, transactions and
//! scripts).
//!
//! [`Engine::with_keys`] first makes every declared key's value hot: a cold
//! value is fetched (one device read each, all in flight together) and
//! installed in RAM with its flash copy kept as `backing`, which changes
//! nothing a client can see. Then it locks the keys' shards in index order
//! and runs the closure once, with every value in RAM, so the closure sees
//! and changes the keys as one step: no other command runs in between.
//!
//! Invariants:
//! 1. The closure runs exactly once, with every declared key's shard
//!    locked and no declared key cold; no lock is held across I/O
//!    (engine invariant 5): if a value went cold again between the fetch
//!    and the lock, the locks are dropped and the fetch repeated.
//! 2. A collection the closure changed (`coll_mut`) gets a new version, is
//!    marked dirty and noted for the journal, loses its stale flash copy,
//!    and has its length counters updated, all before the locks drop; an
//!    empty collection is deleted (types invariant 1).
//! 3. Only declared keys are reachable; any other key reads as missing.

use crate::clock::{now_ms, now_secs};
use crate::index::{Shard, Slot, Value, F_REFERENCED};
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_value, FetchTarget, Read};
use crate::types::{Collection, EncodingLimits, ValueType};
use crate::{Engine, EngineError, Inner};
use bytes::Bytes;
use parking_lot::MutexGuard;
use smallvec::SmallVec;
use std::sync::Arc;

/// A value seen through a [`KeysView`].
pub enum ValueRef<'a> {
    Str(&'a Bytes),
    Coll(&'a Collection),
}

/// A changed collection: the hot length it had before the change.
struct Touched {
    key: Bytes,
    old_len: usize,
}

/// The keys of one `with_keys` call, locked (module doc).
pub struct KeysView<'a> {
    inner: &'a Inner,
    db: usize,
    /// The declared keys (so a changed key is remembered without a copy).
    keys: &'a [Bytes],
    /// Small vectors: most commands name one or two keys.
    ids: SmallVec<[usize; 2]>,
    guards: SmallVec<[MutexGuard<'a, Shard>; 2]>,
    touched: SmallVec<[Touched; 1]>,
    limits: EncodingLimits,
    /// Lists and sorted sets that got elements (for blocked clients), when
    /// the caller asked (`track_ready`).
    ready: Option<Vec<Bytes>>,
}

impl<'a> KeysView<'a> {
    pub fn db(&self) -> usize {
        self.db
    }

    /// The thresholds of Redis's small encodings in force.
    pub fn encoding_limits(&self) -> EncodingLimits {
        self.limits
    }

    /// From now on, remember the lists and sorted sets this view changes
    /// or stores (`take_ready` returns them once the changes are applied),
    /// so the caller can serve clients blocked on them.
    pub fn track_ready(&mut self) {
        self.ready.get_or_insert_with(Vec::new);
    }

    /// The lists and sorted sets changed so far (see `track_ready`);
    /// changes made through `coll_mut` count once the closure returned,
    /// so call this from the closure's caller or after `put`.
    pub fn take_ready(&mut self) -> Vec<Bytes> {
        self.ready.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn note_ready(&mut self, key: &[u8], t: ValueType) {
        if let Some(r) = self.ready.as_mut() {
            if matches!(t, ValueType::List | ValueType::ZSet) && !r.iter().any(|k| &k[..] == key) {
                r.push(Bytes::copy_from_slice(key));
            }
        }
    }

    /// The shard of `key` if it was declared (invariant 3).
    fn shard(&mut self, key: &[u8]) -> Option<&mut Shard> {
        let id = self.inner.shard_index(key);
        let pos = self.ids.binary_search(&id).ok()?;
        self.guards.get_mut(pos).map(|g| &mut **g)
    }

    /// Index of the live entry of `key`, removing it if expired.
    fn live(&mut self, key: &[u8]) -> Option<usize> {
        let (inner, db) = (self.inner, self.db);
        let sh = self.shard(key)?;
        inner.live_index(sh, db, key)
    }

    /// The type of `key`'s value, if it exists.
    pub fn vtype(&mut self, key: &[u8]) -> Option<ValueType> {
        let i = self.live(key)?;
        let db = self.db;
        let sh = self.shard(key)?;
        Some(sh.dbs[db][i].value_type())
    }

    /// The value of `key` (counted as a keyspace hit or miss).
    pub fn get(&mut self, key: &[u8]) -> Option<ValueRef<'_>> {
        let inner = self.inner;
        let Some(i) = self.live(key) else {
            Stats::inc(&inner.stats.keyspace_misses);
            return None;
        };
        Stats::inc(&inner.stats.keyspace_hits);
        let db = self.db;
        let sh = self.shard(key)?;
        let e = &mut sh.dbs[db][i];
        e.flags |= F_REFERENCED;
        e.lru_secs = now_secs();
        match &e.slot {
            Slot::Hot(h) => Some(match &h.value {
                Value::Str(b) => ValueRef::Str(b),
                Value::Coll(c) => ValueRef::Coll(c),
            }),
            // Not reachable: with_keys made every declared key hot.
            Slot::Cold(_) => None,
        }
    }

    /// The collection of type `t` at `key`: None if missing, `WrongType`
    /// if the key holds another type.
    pub fn coll(&mut self, key: &[u8], t: ValueType) -> Result<Option<&Collection>, EngineError> {
        match self.get(key) {
            None => Ok(None),
            Some(ValueRef::Coll(c)) if c.vtype() == t => Ok(Some(c)),
            Some(_) => Err(EngineError::WrongType),
        }
    }

    /// The collection of type `t` at `key`, to change (invariant 2). With
    /// `create`, a missing key gets an empty collection (deleted again at
    /// the end if it stays empty). `WrongType` if the key holds another
    /// type.
    pub fn coll_mut(
        &mut self,
        key: &[u8],
        t: ValueType,
        create: bool,
    ) -> Result<Option<&mut Collection>, EngineError> {
        let (inner, db) = (self.inner, self.db);
        let idx = match self.live(key) {
            Some(i) => {
                let sh = self.shard(key).ok_or(EngineError::WrongType)?;
                if sh.dbs[db][i].value_type() != t {
                    return Err(EngineError::WrongType);
                }
                i
            }
            None if create => {
                let Some(c) = Collection::new(t) else {
                    return Err(EngineError::WrongType);
                };
                let Some(sh) = self.shard(key) else {
                    return Ok(None);
                };
                match inner.store_value(sh, db, key, None, Value::Coll(Box::new(c)), 0, 0) {
                    Some(i) => i,
                    None => return Ok(None),
                }
            }
            None => return Ok(None),
        };
        let sh = self.shard(key).ok_or(EngineError::WrongType)?;
        let old_len = sh.dbs[db][idx].hot_bytes();
        if !self.touched.iter().any(|t| &t.key[..] == key) {
            let key = match self.keys.iter().find(|k| &k[..] == key) {
                Some(k) => k.clone(),
                None => Bytes::copy_from_slice(key),
            };
            self.touched.push(Touched { key, old_len });
        }
        let sh = self.shard(key).ok_or(EngineError::WrongType)?;
        match &mut sh.dbs[db][idx].slot {
            Slot::Hot(h) => match &mut h.value {
                Value::Coll(c) => Ok(Some(c)),
                Value::Str(_) => Err(EngineError::WrongType),
            },
            Slot::Cold(_) => Ok(None),
        }
    }

    /// Stores `value` at `key`, replacing whatever was there, with no TTL
    /// (the *STORE commands). An empty collection deletes the key instead.
    pub fn put(&mut self, key: &[u8], value: Value) {
        self.put_expiring(key, value, 0);
    }

    /// As `put`, expiring at `expire_at_ms` (Unix ms; 0 = never; a time in
    /// the past leaves the key deleted).
    pub fn put_expiring(&mut self, key: &[u8], value: Value, expire_at_ms: u64) {
        let (inner, db) = (self.inner, self.db);
        if matches!(&value, Value::Coll(c) if c.is_empty()) {
            self.delete(key);
            return;
        }
        let mut value = value;
        if let Value::Coll(c) = &mut value {
            c.update_encoding(&self.limits);
        }
        let aux = aux_of(&value);
        let t = value.vtype();
        self.note_ready(key, t);
        self.settle(key);
        let idx = self.live(key);
        if let Some(sh) = self.shard(key) {
            inner.store_value(sh, db, key, idx, value, expire_at_ms, aux);
        }
    }

    /// Deletes `key`; returns whether it existed.
    pub fn delete(&mut self, key: &[u8]) -> bool {
        let (inner, db) = (self.inner, self.db);
        self.settle(key);
        let Some(i) = self.live(key) else {
            return false;
        };
        if let Some(sh) = self.shard(key) {
            inner.remove_index(sh, db, i, false);
        }
        true
    }

    /// Brings the byte counters of a changed collection up to its current
    /// length and forgets the change (before the entry is replaced or
    /// removed, which count its current length out).
    fn settle(&mut self, key: &[u8]) {
        let Some(pos) = self.touched.iter().position(|t| &t.key[..] == key) else {
            return;
        };
        let t = self.touched.swap_remove(pos);
        let db = self.db;
        let Some(sh) = self.shard(key) else {
            return;
        };
        if let Some(e) = sh.dbs[db].get(key) {
            let new_len = e.hot_bytes() as u64;
            sh.acct.hot_bytes = sh.acct.hot_bytes + new_len - t.old_len as u64;
            sh.acct.coll_hot_bytes = sh.acct.coll_hot_bytes + new_len - t.old_len as u64;
        }
    }

    /// The key's TTL as an absolute Unix time in ms (0 = none), if it exists.
    pub fn expire_at(&mut self, key: &[u8]) -> Option<u64> {
        let i = self.live(key)?;
        let db = self.db;
        let sh = self.shard(key)?;
        Some(sh.dbs[db][i].expire_at_ms)
    }

    /// Applies invariant 2 to every changed collection (noting the ready
    /// keys when tracked).
    fn finish(&mut self) {
        let (inner, db) = (self.inner, self.db);
        let touched = std::mem::take(&mut self.touched);
        let limits = self.limits;
        for t in touched {
            let Some(sh) = self.shard(&t.key) else {
                continue;
            };
            let Some(idx) = sh.dbs[db].get_index_of(&t.key[..]) else {
                continue;
            };
            let empty = match &sh.dbs[db][idx].slot {
                Slot::Hot(h) => matches!(&h.value, Value::Coll(c) if c.is_empty()),
                Slot::Cold(_) => false,
            };
            if empty {
                // Count the shrunk length out, as removal counts it in.
                let new_len = sh.dbs[db][idx].hot_bytes() as u64;
                sh.acct.hot_bytes = sh.acct.hot_bytes + new_len - t.old_len as u64;
                sh.acct.coll_hot_bytes = sh.acct.coll_hot_bytes + new_len - t.old_len as u64;
                inner.remove_index(sh, db, idx, false);
                continue;
            }
            let t_ready = sh.dbs[db][idx].value_type();
            let version = inner.next_seq();
            let e = &mut sh.dbs[db][idx];
            let mut released = None;
            if let Slot::Hot(h) = &mut e.slot {
                if let Value::Coll(c) = &mut h.value {
                    c.update_encoding(&limits);
                }
                released = h.backing.take();
            }
            let new_len = e.hot_bytes();
            e.value_len = new_len as u32;
            e.client_flags = match &e.slot {
                Slot::Hot(h) => aux_of(&h.value),
                Slot::Cold(_) => e.client_flags,
            };
            e.version = version;
            e.flags = F_REFERENCED | inner.dirty_flag();
            e.lru_secs = now_secs();
            sh.acct.hot_bytes = sh.acct.hot_bytes + new_len as u64 - t.old_len as u64;
            sh.acct.coll_hot_bytes = sh.acct.coll_hot_bytes + new_len as u64 - t.old_len as u64;
            if let Some(loc) = released {
                inner.release_flash(loc);
            }
            inner.note_key(db, &t.key);
            self.note_ready(&t.key, t_ready);
        }
    }
}

/// What a collection entry keeps in `client_flags` (which only strings use
/// for memcached): its element count (saturating at 2^31 - 1) and, in the
/// top bit, whether it has the big encoding. So LEN commands and OBJECT
/// ENCODING answer from RAM for a cold collection too.
pub fn aux_of(v: &Value) -> u32 {
    match v {
        Value::Str(_) => 0,
        Value::Coll(c) => crate::types::aux(c.len(), c.encoding_is_big()),
    }
}

impl Engine {
    /// Runs `f` on the keys `keys` of `db` atomically, with their values in
    /// RAM (module doc). Keys may repeat.
    pub fn with_keys<R, F>(&self, db: usize, keys: Vec<Bytes>, f: F) -> Read<Result<R, EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut KeysView<'_>) -> R + Send + 'static,
    {
        self.with_keys_tracked(db, keys, false, f)
            .map(|r| r.map(|(r, _)| r))
    }

    /// As `with_keys`; with `track`, also returns the lists and sorted
    /// sets that got elements or were stored (`KeysView::track_ready`).
    pub fn with_keys_tracked<R, F>(
        &self,
        db: usize,
        keys: Vec<Bytes>,
        track: bool,
        f: F,
    ) -> Read<Result<(R, Vec<Bytes>), EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut KeysView<'_>) -> R + Send + 'static,
    {
        let mut f = Some(f);
        match self.inner.try_with_keys(db, &keys, track, &mut f) {
            Ok(r) => Read::Ready(Ok(r)),
            Err(targets) => {
                let inner = self.inner.clone();
                Read::Pending(Box::pin(async move {
                    let mut targets = targets;
                    loop {
                        promote_all(&inner, targets).await?;
                        match inner.try_with_keys(db, &keys, track, &mut f) {
                            Ok(r) => return Ok(r),
                            Err(t) => targets = t,
                        }
                    }
                }))
            }
        }
    }
}

/// Fetches the cold values and installs each in RAM (with its flash copy
/// as backing) if its entry did not change meanwhile.
async fn promote_all(
    inner: &Arc<Inner>,
    targets: Vec<(FetchTarget, ValueType)>,
) -> Result<(), EngineError> {
    let fetches = targets.iter().map(|(t, _)| fetch_value(inner.clone(), t));
    let values = futures_join_all(fetches).await;
    for ((t, vtype), v) in targets.iter().zip(values) {
        let bytes = v?;
        let value = Value::from_record(*vtype, bytes).map_err(|_| {
            Stats::inc(&inner.stats.read_errors);
            EngineError::Malformed
        })?;
        let mut guard = inner.shard(&t.key).lock();
        let sh = &mut *guard;
        if let Some(e) = sh.dbs[t.db].get_mut(&*t.key) {
            if e.version == t.version && matches!(e.slot, Slot::Cold(l) if l == t.loc) {
                e.replace_slot(&mut sh.acct, Slot::hot_value(value, Some(t.loc)));
                Stats::inc(&inner.stats.uploads);
            }
        }
    }
    inner.wake_if_pressured();
    Ok(())
}

/// Awaits every future, in order (the reads are all submitted before the
/// first is awaited: each `fetch_value` submits when first polled, so poll
/// them together).
async fn futures_join_all<T, Fut: std::future::Future<Output = T>>(
    futs: impl Iterator<Item = Fut>,
) -> Vec<T> {
    let mut futs: Vec<_> = futs.map(Box::pin).collect();
    let mut out: Vec<Option<T>> = (0..futs.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in futs.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// The cold values a `with_keys` attempt must fetch first.
type ColdKeys = Vec<(FetchTarget, ValueType)>;

impl Inner {
    /// One attempt of `with_keys`: runs `f` if no declared key is cold,
    /// else returns what to fetch.
    fn try_with_keys<R, F>(
        &self,
        db: usize,
        keys: &[Bytes],
        track: bool,
        f: &mut Option<F>,
    ) -> Result<(R, Vec<Bytes>), ColdKeys>
    where
        F: FnOnce(&mut KeysView<'_>) -> R,
    {
        let mut ids: SmallVec<[usize; 2]> = keys.iter().map(|k| self.shard_index(k)).collect();
        ids.sort_unstable();
        ids.dedup();
        let guards = ids.iter().map(|&i| self.shards[i].lock()).collect();
        let mut view = KeysView {
            inner: self,
            db,
            keys,
            ids,
            guards,
            touched: SmallVec::new(),
            limits: self.tun.encoding_limits(),
            ready: None,
        };
        let now = now_ms();
        let mut cold = Vec::new();
        for k in keys {
            let Some(sh) = view.shard(k) else { continue };
            if let Some(e) = sh.dbs[db].get(&k[..]) {
                if let Slot::Cold(loc) = e.slot {
                    if !e.is_expired(now)
                        && !cold.iter().any(|(t, _): &(FetchTarget, _)| *t.key == k[..])
                    {
                        cold.push((
                            FetchTarget::new(self, db, k, loc, e.version),
                            e.value_type(),
                        ));
                    }
                }
            }
        }
        if !cold.is_empty() {
            return Err(cold);
        }
        if track {
            view.track_ready();
        }
        let r = match f.take() {
            Some(f) => f(&mut view),
            None => return Err(Vec::new()),
        };
        view.finish();
        let ready = view.take_ready();
        Ok((r, ready))
    }
}

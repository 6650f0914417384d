//! String operations: GET, SET with its options, and read-modify-write
//! (`update`) for commands that need the old value (APPEND, INCR, GETSET,
//! SETRANGE, GETDEL, GETEX ...).
//!
//! Writes only touch RAM (invariant: overwrite of a cold value releases its
//! record's live bytes and nothing else). A read-modify-write of a cold
//! value fetches it, then re-locks and applies only if the entry's version
//! is unchanged; otherwise it starts again from the new state.

use crate::clock::{now_ms, now_secs};
use crate::index::{Entry, Slot, F_REFERENCED};
use crate::keyspace::chunks::{load_parts, Need};
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_and_promote, fetch_value, FetchTarget, Read};
use crate::types::bigstr::{Piece, STR_CHUNKED_AT};
use crate::types::ChunkedStr;
use crate::types::{Collection, ValueType};
use crate::{Engine, EngineError, Inner};
use bytes::Bytes;
use std::sync::Arc;

/// When SET applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SetCond {
    #[default]
    Always,
    /// NX: only if the key does not exist.
    IfMissing,
    /// XX: only if the key exists.
    IfExists,
}

/// What a write does to the key's TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExpireUpdate {
    /// Remove any TTL (plain SET).
    #[default]
    Clear,
    /// Keep the current TTL (KEEPTTL, APPEND, INCR ...).
    Keep,
    /// Expire at this Unix time in milliseconds.
    At(u64),
}

#[derive(Clone, Copy, Debug, Default)]
pub struct SetOptions {
    pub cond: SetCond,
    pub expire: ExpireUpdate,
}

/// The current value handed to an `update` closure.
pub struct Current<'a> {
    pub value: &'a Bytes,
    pub expire_at_ms: u64,
    /// Memcached client flags.
    pub client_flags: u32,
    /// Changes whenever the value changes (memcached's CAS).
    pub cas: u64,
}

/// A memcached item's state after an `update_item`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemState {
    pub cas: u64,
    /// Absolute Unix ms; 0 = never.
    pub expire_at_ms: u64,
}

/// What an `update` closure decided.
pub enum Mutation {
    /// Leave the key as it is.
    None,
    Delete,
    Set {
        value: Bytes,
        expire: ExpireUpdate,
    },
    /// Store with these memcached client flags (and an explicit CAS, meta
    /// `E`).
    SetItem {
        value: Bytes,
        expire: ExpireUpdate,
        client_flags: u32,
        explicit_cas: Option<u64>,
    },
    /// Change only the TTL (0 = persist).
    SetExpire(u64),
    /// As `Set`, for a value changed in place (APPEND, SETRANGE): Redis
    /// then reports the string as `raw` (OBJECT ENCODING) whatever its
    /// length.
    SetRaw {
        value: Bytes,
        expire: ExpireUpdate,
    },
    /// Leave the value as it is, but report it `raw` from now on, as Redis
    /// does after unsharing a string it may change in place (SETBIT that
    /// flips nothing, PFCOUNT): not a change (nothing noted).
    MarkRaw,
    /// As `SetRaw`, for a string a write grew past `STR_CHUNKED_AT`, cut
    /// into parts already (`Engine::write_str`).
    SetParts {
        value: Box<ChunkedStr>,
        expire: ExpireUpdate,
    },
    /// As `Set`, for INCRBYFLOAT's result: Redis stores it as text
    /// (`embstr` / `raw`), never `int`, whatever it reads as.
    SetFloat {
        value: Bytes,
        expire: ExpireUpdate,
    },
}

enum MutationKind {
    Raw,
    Float,
    Other,
}

impl Engine {
    /// GET: the value, from RAM or after one flash read (a chunked string:
    /// copied out a batch of parts at a time, never all of it in RAM as
    /// parts at once).
    pub fn get(&self, db: usize, key: &[u8]) -> Read<Result<Option<Bytes>, EngineError>> {
        if let Some(read) = self.get_flat(db, key) {
            return read;
        }
        self.scan_str(
            db,
            Bytes::copy_from_slice(key),
            |len| len.map(|n| Vec::with_capacity(n as usize)),
            |len| Some((0, len)),
            |v, _, p| {
                if let Some(v) = v {
                    match p {
                        Piece::Bytes(b) => v.extend_from_slice(b),
                        Piece::Zeros(n) => v.resize(v.len() + n, 0),
                    }
                }
                true
            },
        )
        .map(|r| r.map(|v| v.map(Bytes::from)))
    }

    /// GET of a string of one record (or a missing key, or another type:
    /// `WrongType`); None for a chunked string, which the caller reads by
    /// its parts (nothing is counted then).
    pub(crate) fn get_flat(
        &self,
        db: usize,
        key: &[u8],
    ) -> Option<Read<Result<Option<Bytes>, EngineError>>> {
        let inner = &self.inner;
        let now = now_ms();
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(idx) = sh.dbs[db].get_index_of(key) else {
            Stats::inc(&inner.stats.keyspace_misses);
            return Some(Read::Ready(Ok(None)));
        };
        let Some((_, e)) = sh.dbs[db].get_index_mut(idx) else {
            return Some(Read::Ready(Ok(None)));
        };
        if e.is_expired(now) {
            inner.remove_index(sh, db, idx, true);
            Stats::inc(&inner.stats.keyspace_misses);
            return Some(Read::Ready(Ok(None)));
        }
        if e.value_type() != ValueType::String {
            return Some(Read::Ready(Err(EngineError::WrongType)));
        }
        if matches!(e.slot, Slot::Chunked(_)) {
            return None;
        }
        Stats::inc(&inner.stats.keyspace_hits);
        if crate::keyspace::touches() {
            e.flags |= F_REFERENCED;
            e.lru_secs = now_secs();
        }
        Some(match &e.slot {
            Slot::Hot(h) => {
                Stats::inc(&inner.stats.ram_hits);
                if h.backing.is_some() {
                    Stats::inc(&inner.stats.ram_cool_hits);
                }
                Read::Ready(Ok(h.value.as_str().cloned()))
            }
            Slot::Cold(loc) => {
                Stats::inc(&inner.stats.ram_misses);
                let t = FetchTarget::new(inner, db, key, *loc, e.version);
                drop(guard);
                Read::Pending(Box::pin(fetch_and_promote(inner.clone(), t)))
            }
            Slot::Chunked(_) => return None,
        })
    }

    /// SET: stores `value` under `key` if `opts.cond` holds; returns whether
    /// it did. RAM only.
    pub fn set(
        &self,
        db: usize,
        key: &[u8],
        value: &[u8],
        opts: SetOptions,
    ) -> Result<bool, EngineError> {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let existing = inner.live_index(sh, db, key);
        match (opts.cond, existing) {
            (SetCond::IfMissing, Some(_)) | (SetCond::IfExists, None) => return Ok(false),
            _ => {}
        }
        let old_expire = existing.map(|i| sh.dbs[db][i].expire_at_ms).unwrap_or(0);
        let expire = resolve_expire(opts.expire, old_expire);
        inner.store(sh, db, key, existing, value, expire, 0);
        Ok(true)
    }

    /// Read-modify-write of one key. `f` sees the current value (None if the
    /// key is missing or expired) and returns the mutation and a result. It
    /// may run more than once if a concurrent write raced a flash fetch.
    pub fn update<R, F>(&self, db: usize, key: &[u8], f: F) -> Read<Result<R, EngineError>>
    where
        R: Send + 'static,
        F: FnMut(Option<Current<'_>>) -> (Mutation, R) + Send + 'static,
    {
        self.update_item(db, key, f).map(|r| r.map(|(r, _)| r))
    }

    /// As `update`, also returning the key's memcached state right after
    /// the mutation, in the same critical section (None if it is gone).
    pub fn update_item<R, F>(
        &self,
        db: usize,
        key: &[u8],
        f: F,
    ) -> Read<Result<(R, Option<ItemState>), EngineError>>
    where
        R: Send + 'static,
        F: FnMut(Option<Current<'_>>) -> (Mutation, R) + Send + 'static,
    {
        let mut f = f;
        match self.inner.try_update(db, key, &mut f, None, true) {
            Ok(r) => Read::Ready(Ok(r)),
            Err(Retry::Fetch(t)) => {
                let inner = self.inner.clone();
                Read::Pending(Box::pin(async move { update_cold(inner, t, f).await }))
            }
            Err(Retry::Fail(e)) => Read::Ready(Err(e)),
            Err(Retry::Chunked) => Read::Ready(Err(Retry::NOT_WHOLE)),
            Err(Retry::Parts(parts)) => {
                let inner = self.inner.clone();
                let key = Bytes::copy_from_slice(key);
                Read::Pending(Box::pin(async move {
                    let mut parts = parts;
                    loop {
                        load_parts(&inner, parts).await?;
                        match inner.try_update(db, &key, &mut f, None, true) {
                            Ok(r) => return Ok(r),
                            Err(Retry::Parts(p)) => parts = p,
                            Err(Retry::Fetch(t)) => return update_cold(inner, t, f).await,
                            Err(Retry::Fail(e)) => return Err(e),
                            Err(Retry::Chunked) => return Err(Retry::NOT_WHOLE),
                        }
                    }
                }))
            }
        }
    }

    /// MSET / MSETNX: stores every pair atomically (all shards involved are
    /// locked, in index order). With `nx`, stores nothing if any key exists.
    /// Returns whether the pairs were stored.
    pub fn set_many(&self, db: usize, pairs: &[(&[u8], &[u8])], nx: bool) -> bool {
        let inner = &self.inner;
        let now = now_ms();
        let mut ids: Vec<usize> = pairs.iter().map(|(k, _)| inner.shard_index(k)).collect();
        ids.sort_unstable();
        ids.dedup();
        let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| *k).collect();
        // Taken before the shards (groups invariant 1).
        let _group = inner.group_of(&keys);
        let mut guards: Vec<_> = ids.iter().map(|&i| inner.shards[i].lock()).collect();
        let guard_of = |key: &[u8]| ids.binary_search(&inner.shard_index(key)).unwrap_or(0);
        if nx {
            for (k, _) in pairs {
                let sh = &guards[guard_of(k)];
                if let Some(e) = sh.dbs[db].get(*k) {
                    if !e.is_expired(now) {
                        return false;
                    }
                }
            }
        }
        for (k, v) in pairs {
            let sh = &mut *guards[guard_of(k)];
            let idx = sh.dbs[db].get_index_of(*k);
            inner.store(sh, db, k, idx, v, 0, 0);
        }
        true
    }

    /// STRLEN: the value's length from RAM metadata.
    pub fn strlen(&self, db: usize, key: &[u8]) -> Result<u64, EngineError> {
        match self
            .inner
            .with_live(db, key, |_, e| (e.value_type(), e.value_len as u64))
        {
            None => Ok(0),
            Some((t, _)) if t != ValueType::String => Err(EngineError::WrongType),
            Some((_, n)) => Ok(n),
        }
    }
}

pub(crate) async fn update_cold<R, F>(
    inner: Arc<Inner>,
    mut t: FetchTarget,
    mut f: F,
) -> Result<(R, Option<ItemState>), EngineError>
where
    F: FnMut(Option<Current<'_>>) -> (Mutation, R) + Send + 'static,
{
    loop {
        let value = fetch_value(inner.clone(), &t).await?;
        match inner.try_update(t.db, &t.key, &mut f, Some((t.version, &value)), true) {
            Ok(r) => return Ok(r),
            Err(Retry::Fetch(next)) => t = next,
            Err(Retry::Fail(e)) => return Err(e),
            Err(Retry::Chunked) => return Err(Retry::NOT_WHOLE),
            Err(Retry::Parts(parts)) => {
                load_parts(&inner, parts).await?;
                match inner.try_update(t.db, &t.key, &mut f, None, true) {
                    Ok(r) => return Ok(r),
                    Err(Retry::Fetch(next)) => t = next,
                    Err(Retry::Fail(e)) => return Err(e),
                    Err(Retry::Chunked) => return Err(Retry::NOT_WHOLE),
                    // Loaded parts went cold again: fetch them next turn.
                    Err(Retry::Parts(_)) => {}
                }
            }
        }
    }
}

/// The TTL a write leaves on its key.
fn resolve_expire(u: ExpireUpdate, old: u64) -> u64 {
    match u {
        ExpireUpdate::Clear => 0,
        ExpireUpdate::Keep => old,
        ExpireUpdate::At(ms) => ms,
    }
}

/// Why `try_update` (or a rename) did not apply.
pub(crate) enum Retry {
    /// The value is cold: fetch it and try again.
    Fetch(FetchTarget),
    /// A chunked collection has parts on flash: load them and try again.
    Parts(Vec<crate::keyspace::chunks::PartTarget>),
    /// A chunked string, when the caller asked not to take it whole
    /// (`Engine::write_str` then changes only its parts).
    Chunked,
    Fail(EngineError),
}

impl Retry {
    /// `Chunked` where a whole read was asked for (not reachable).
    pub(crate) const NOT_WHOLE: EngineError =
        EngineError::Corrupt("a chunked string was not read whole");
}

impl Inner {
    /// Applies `f` if the value is in RAM (or was fetched at `fetched`'s
    /// version); otherwise returns what to fetch. A key of another type
    /// than string fails with `WrongType` (nothing changes).
    pub(crate) fn try_update<R, F>(
        &self,
        db: usize,
        key: &[u8],
        f: &mut F,
        fetched: Option<(u64, &Bytes)>,
        whole: bool,
    ) -> Result<(R, Option<ItemState>), Retry>
    where
        F: FnMut(Option<Current<'_>>) -> (Mutation, R),
    {
        let now = now_ms();
        let mut guard = self.shard(key).lock();
        let sh = &mut *guard;
        let mut idx = sh.dbs[db].get_index_of(key);
        if let Some(i) = idx {
            if sh.dbs[db][i].is_expired(now) {
                self.remove_index(sh, db, i, true);
                idx = None;
            }
        }
        let (mutation, r) = match idx {
            None => f(None),
            Some(i) => {
                let e = &sh.dbs[db][i];
                let expire_at_ms = e.expire_at_ms;
                let (client_flags, cas) = (e.client_flags, sh.cas_of(db, key, e));
                if e.value_type() != ValueType::String {
                    return Err(Retry::Fail(EngineError::WrongType));
                }
                match &e.slot {
                    Slot::Chunked(c) => {
                        // A chunked string: its bytes copied out once every
                        // part is in RAM (a whole read-modify-write).
                        let whole = match &**c {
                            Collection::Str(_) if !whole => return Err(Retry::Chunked),
                            Collection::Str(s) => s.detached().ok(),
                            _ => return Err(Retry::Fail(EngineError::WrongType)),
                        };
                        let Some(value) = whole else {
                            let e = &mut sh.dbs[db][i];
                            return Err(Retry::Parts(self.cold_parts(db, key, e, &Need::Whole)));
                        };
                        f(Some(Current {
                            value: &value,
                            expire_at_ms,
                            client_flags,
                            cas,
                        }))
                    }
                    Slot::Hot(h) => f(Some(Current {
                        value: match &h.value {
                            crate::index::Value::Str(b) => b,
                            crate::index::Value::Coll(_) => {
                                return Err(Retry::Fail(EngineError::WrongType))
                            }
                        },
                        expire_at_ms,
                        client_flags,
                        cas,
                    })),
                    Slot::Cold(loc) => match fetched {
                        Some((v, value)) if v == e.version => f(Some(Current {
                            value,
                            expire_at_ms,
                            client_flags,
                            cas,
                        })),
                        _ => {
                            return Err(Retry::Fetch(FetchTarget::new(
                                self, db, key, *loc, e.version,
                            )))
                        }
                    },
                }
            }
        };
        let mutation_kind = match &mutation {
            Mutation::SetRaw { .. } => MutationKind::Raw,
            Mutation::SetFloat { .. } => MutationKind::Float,
            _ => MutationKind::Other,
        };
        match mutation {
            Mutation::None => {}
            Mutation::MarkRaw => {
                if let Some(i) = idx {
                    sh.dbs[db][i].vtype |= crate::index::VT_STR_RAW;
                }
            }
            Mutation::Delete => {
                if let Some(i) = idx {
                    self.remove_index(sh, db, i, false);
                }
            }
            Mutation::Set { value, expire }
            | Mutation::SetRaw { value, expire }
            | Mutation::SetFloat { value, expire } => {
                let mark = match mutation_kind {
                    MutationKind::Raw => crate::index::VT_STR_RAW,
                    MutationKind::Float => crate::index::VT_STR_NOINT,
                    MutationKind::Other => 0,
                };
                // A RESP write of an existing value (APPEND, INCR ...) keeps
                // its memcached flags.
                let (old, flags) = idx
                    .map(|i| (sh.dbs[db][i].expire_at_ms, sh.dbs[db][i].client_flags))
                    .unwrap_or((0, 0));
                let at = resolve_expire(expire, old);
                if let Some(i) = self.store(sh, db, key, idx, &value, at, flags) {
                    sh.dbs[db][i].vtype |= mark;
                }
            }
            Mutation::SetItem {
                value,
                expire,
                client_flags,
                explicit_cas,
            } => {
                let old = idx.map(|i| sh.dbs[db][i].expire_at_ms).unwrap_or(0);
                let stored = self.store(
                    sh,
                    db,
                    key,
                    idx,
                    &value,
                    resolve_expire(expire, old),
                    client_flags,
                );
                if let (Some(i), Some(_)) = (stored, explicit_cas) {
                    sh.set_explicit_cas(db, i, explicit_cas);
                }
            }
            Mutation::SetParts { value, expire } => {
                let (old, flags) = idx
                    .map(|i| (sh.dbs[db][i].expire_at_ms, sh.dbs[db][i].client_flags))
                    .unwrap_or((0, 0));
                let value = crate::index::Value::Coll(Box::new(Collection::Str(value)));
                let at = resolve_expire(expire, old);
                if let Some(i) = self.store_value(sh, db, key, idx, value, at, flags) {
                    sh.dbs[db][i].vtype |= crate::index::VT_STR_RAW;
                }
            }
            Mutation::SetExpire(at) => {
                if let Some(i) = idx {
                    self.set_expire_at(sh, db, i, at);
                }
            }
        }
        let after = sh.dbs[db].get(key).map(|e| ItemState {
            cas: sh.cas_of(db, key, e),
            expire_at_ms: e.expire_at_ms,
        });
        Ok((r, after))
    }

    /// Writes the string `value` into slot `idx` (or a new entry), copied
    /// into an exact allocation (a string past `STR_CHUNKED_AT` straight
    /// into its parts). Caller holds the shard lock. Returns the entry's
    /// index (None if the value was already expired: gone).
    // The entry's whole new state is the argument list; a struct for it
    // would only rename the fields at every call site.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store(
        &self,
        sh: &mut crate::index::Shard,
        db: usize,
        key: &[u8],
        idx: Option<usize>,
        value: &[u8],
        expire_at_ms: u64,
        client_flags: u32,
    ) -> Option<usize> {
        let value = if value.len() > STR_CHUNKED_AT {
            let s = ChunkedStr::from_bytes(0, value);
            crate::index::Value::Coll(Box::new(Collection::Str(Box::new(s))))
        } else {
            crate::index::Value::Str(Bytes::copy_from_slice(value))
        };
        self.store_value(sh, db, key, idx, value, expire_at_ms, client_flags)
    }

    /// As `store`, for a value of any type (the entry takes its type).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_value(
        &self,
        sh: &mut crate::index::Shard,
        db: usize,
        key: &[u8],
        idx: Option<usize>,
        value: crate::index::Value,
        expire_at_ms: u64,
        client_flags: u32,
    ) -> Option<usize> {
        if expire_at_ms != 0 && expire_at_ms <= now_ms() {
            // Already expired (SET ... EXAT in the past): the key is gone,
            // as in Redis, rather than stored dead until the sweep.
            if let Some(i) = idx {
                self.remove_index(sh, db, i, false);
            }
            return None;
        }
        let version = self.next_seq();
        let value_len = value.len() as u32;
        let vtype = value.vtype() as u8;
        let mut slot = self.new_slot(value);
        if let Slot::Chunked(c) = &mut slot {
            if let Collection::Str(s) = &mut **c {
                // Its head carries the memcached flags.
                s.client_flags = client_flags;
            }
        }
        let existing = idx.and_then(|i| sh.dbs[db].get_index_mut(i).map(|(_, e)| (i, e)));
        let created = existing.is_none();
        let idx = match existing {
            Some((i, e)) => {
                sh.acct.remove(&e.slot, e.value_len, e.vtype);
                sh.acct.retype(e.vtype, vtype);
                let old = std::mem::replace(&mut e.slot, slot);
                e.value_len = value_len;
                sh.acct.add(&e.slot, value_len, vtype);
                self.bury(old);
                sh.acct.ttl_remove(db, e.expire_at_ms);
                sh.acct.ttl_add(db, expire_at_ms);
                e.expire_at_ms = expire_at_ms;
                e.version = version;
                e.client_flags = client_flags;
                e.vtype = vtype;
                e.flags = F_REFERENCED | self.dirty_flag();
                e.lru_secs = now_secs();
                i
            }
            None => {
                let e = Entry {
                    slot,
                    expire_at_ms,
                    version,
                    lru_secs: now_secs(),
                    flags: F_REFERENCED | self.dirty_flag(),
                    value_len,
                    client_flags,
                    vtype,
                };
                let key = crate::index::CompactKey::from(key);
                sh.acct.entry_added(db, key.heap_bytes(), &e);
                crate::index::reserve_one(&mut sh.dbs[db]);
                sh.dbs[db].insert_full(key, e).0
            }
        };
        let how = if created {
            crate::keyspace::observe::KeyChange::Created
        } else {
            crate::keyspace::observe::KeyChange::Written
        };
        self.note_key_as(db, key, how);
        Some(idx)
    }

    /// Runs `f` on the live (unexpired) entry of `key`, if any.
    pub(crate) fn with_live<T>(
        &self,
        db: usize,
        key: &[u8],
        f: impl FnOnce(&crate::index::Shard, &Entry) -> T,
    ) -> Option<T> {
        let now = now_ms();
        let mut guard = self.shard(key).lock();
        let sh = &mut *guard;
        let idx = sh.dbs[db].get_index_of(key)?;
        if sh.dbs[db][idx].is_expired(now) {
            self.remove_index(sh, db, idx, true);
            return None;
        }
        Some(f(sh, &sh.dbs[db][idx]))
    }
}

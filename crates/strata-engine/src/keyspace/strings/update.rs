//! Read-modify-write of one string (`Engine::update`): for commands that
//! need the old value (APPEND, INCR, GETSET, SETRANGE, GETDEL, GETEX ...).
//! A cold value of one record is fetched, then the entry re-locked and the
//! change applied only if the entry's version is unchanged; otherwise it
//! starts again from the new state. A chunked string is taken whole (its
//! parts loaded, its bytes copied out), unless the caller asks for
//! `Retry::Chunked` instead (`Engine::write_str` changes parts alone).

use super::{resolve_expire, ExpireUpdate, ItemState};
use crate::base::ValueType;
use crate::clock::now_ms;
use crate::index::Slot;
use crate::keyspace::chunks::{load_parts, Need};
use crate::tiering::fetch::{fetch_value, FetchTarget, Read};
use crate::types::{ChunkedStr, Collection};
use crate::{Engine, EngineError, Inner};
use bytes::Bytes;
use std::sync::Arc;

/// The current value handed to an `update` closure.
pub struct Current<'a> {
    pub value: &'a Bytes,
    pub expire_at_ms: u64,
    /// Memcached client flags.
    pub client_flags: u32,
    /// Changes whenever the value changes (memcached's CAS).
    pub cas: u64,
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
            if sh.dbs[db].at(i).is_expired(now) {
                self.remove_index(sh, db, i, true);
                idx = None;
            }
        }
        let (mutation, r) = match idx {
            None => f(None),
            Some(i) => {
                let e = &sh.dbs[db].at(i);
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
                            let e = sh.dbs[db].at_mut(i);
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
                        value: match h.value.as_str() {
                            Some(b) => b,
                            None => return Err(Retry::Fail(EngineError::WrongType)),
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
        self.apply_mutation(sh, db, key, idx, mutation);
        let after = sh.dbs[db].get(key).map(|e| ItemState {
            cas: sh.cas_of(db, key, &e),
            expire_at_ms: e.expire_at_ms,
        });
        Ok((r, after))
    }

    /// Applies a string's read-modify-write (`try_update`'s `f`) to the
    /// entry at `idx` (None: the key is absent) under its shard's lock.
    fn apply_mutation(
        &self,
        sh: &mut crate::index::Shard,
        db: usize,
        key: &[u8],
        idx: Option<usize>,
        mutation: Mutation,
    ) {
        let mutation_kind = match &mutation {
            Mutation::SetRaw { .. } => MutationKind::Raw,
            Mutation::SetFloat { .. } => MutationKind::Float,
            _ => MutationKind::Other,
        };
        match mutation {
            Mutation::None => {}
            Mutation::MarkRaw => {
                if let Some(i) = idx {
                    sh.dbs[db].at_mut(i).vtype |= crate::index::VT_STR_RAW;
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
                    .map(|i| (sh.dbs[db].at(i).expire_at_ms, sh.dbs[db].at(i).client_flags))
                    .unwrap_or((0, 0));
                let at = resolve_expire(expire, old);
                let stored = if let MutationKind::Raw = mutation_kind {
                    // A string changed in place records its changes.
                    self.store_in_place(sh, db, key, idx, &value, at, flags)
                } else {
                    self.store(sh, db, key, idx, &value, at, flags)
                };
                if let Some(i) = stored {
                    sh.dbs[db].at_mut(i).vtype |= mark;
                }
            }
            Mutation::SetItem {
                value,
                expire,
                client_flags,
                explicit_cas,
            } => {
                let old = idx.map(|i| sh.dbs[db].at(i).expire_at_ms).unwrap_or(0);
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
                    // After the store's note (journal invariant 1).
                    self.journal_key(db, key);
                }
            }
            Mutation::SetParts { value, expire } => {
                let (old, flags) = idx
                    .map(|i| (sh.dbs[db].at(i).expire_at_ms, sh.dbs[db].at(i).client_flags))
                    .unwrap_or((0, 0));
                let value = crate::index::Value::Coll(Box::new(Collection::Str(value)));
                let at = resolve_expire(expire, old);
                if let Some(i) = self.store_value(sh, db, key, idx, value, at, flags) {
                    sh.dbs[db].at_mut(i).vtype |= crate::index::VT_STR_RAW;
                }
            }
            Mutation::SetExpire(at) => {
                if let Some(i) = idx {
                    self.set_expire_at(sh, db, i, at);
                }
            }
        }
    }
}

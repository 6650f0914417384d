//! RENAME, RENAMENX, COPY and MOVE: a key's value (of any type) moved or
//! copied under another name or into another database, with its TTL, in
//! one step over both keys' shards. A cold value is read once first (its
//! record names its key, and the collector relies on that).

use crate::index::{Shard, Slot, Value};
use crate::keyspace::chunks::{load_parts, Need};
use crate::keyspace::strings::Retry;
use crate::tiering::fetch::{fetch_value, FetchTarget, Read};
use crate::{Engine, EngineError, Inner};
use bytes::Bytes;
use std::sync::Arc;

impl Engine {
    /// RENAME / RENAMENX. Ok(false) when `nx` and the target exists;
    /// Ok(true) when renamed; Err(None-like) via `Ok(None)` when the source
    /// is missing. A cold value is fetched first (see the module doc).
    pub fn rename(
        &self,
        db: usize,
        src: &[u8],
        dst: &[u8],
        nx: bool,
    ) -> Read<Result<Option<bool>, EngineError>> {
        self.rename_op(db, src, db, dst, nx, false)
    }

    /// MOVE key db: moves `key` to database `dst_db` unless it exists
    /// there. Ok(None) if the key is missing, Ok(Some(false)) if the target
    /// database has it.
    pub fn move_key(
        &self,
        db: usize,
        key: &[u8],
        dst_db: usize,
    ) -> Read<Result<Option<bool>, EngineError>> {
        self.rename_op(db, key, dst_db, key, true, false)
    }

    /// COPY src dst \[DB n\] \[REPLACE\]: Ok(None) if the source is missing,
    /// Ok(Some(false)) if the target exists and !replace.
    pub fn copy(
        &self,
        db: usize,
        src: &[u8],
        dst_db: usize,
        dst: &[u8],
        replace: bool,
    ) -> Read<Result<Option<bool>, EngineError>> {
        self.rename_op(db, src, dst_db, dst, !replace, true)
    }

    /// Runs `try_rename`, fetching the source's value (or loading its
    /// parts) first when it is on flash.
    fn rename_op(
        &self,
        db: usize,
        src: &[u8],
        dst_db: usize,
        dst: &[u8],
        nx: bool,
        copy: bool,
    ) -> Read<Result<Option<bool>, EngineError>> {
        let first = match self.inner.try_rename(db, src, dst_db, dst, nx, copy, None) {
            Ok(r) => return Read::Ready(Ok(r)),
            Err(Retry::Fail(e)) => return Read::Ready(Err(e)),
            Err(r) => r,
        };
        let inner = self.inner.clone();
        let (src, dst): (Box<[u8]>, Box<[u8]>) = (src.into(), dst.into());
        Read::Pending(Box::pin(async move {
            let mut retry = first;
            loop {
                let fetched = match retry {
                    Retry::Fetch(t) => Some((t.version, fetch_value(inner.clone(), &t).await?)),
                    Retry::Parts(parts) => {
                        load_parts(&inner, parts).await?;
                        None
                    }
                    Retry::Fail(e) => return Err(e),
                    Retry::Chunked => return Err(Retry::NOT_WHOLE),
                };
                match inner.try_rename(db, &src, dst_db, &dst, nx, copy, fetched) {
                    Ok(r) => return Ok(r),
                    Err(r) => retry = r,
                }
            }
        }))
    }
}

impl Inner {
    /// Moves (or copies) `src` to `dst`. Err(target) when the source is cold
    /// and its value must be fetched first (or was fetched at an older
    /// version). Ok(None): source missing; Ok(Some(false)): `nx` and the
    /// target exists.
    #[allow(clippy::too_many_arguments)]
    fn try_rename(
        self: &Arc<Self>,
        db: usize,
        src: &[u8],
        dst_db: usize,
        dst: &[u8],
        nx: bool,
        copy: bool,
        fetched: Option<(u64, Bytes)>,
    ) -> Result<Option<bool>, Retry> {
        let a = self.shard_index(src);
        let b = self.shard_index(dst);
        // Both keys change together: one group, taken before the shards
        // (groups invariant 1).
        let _group = if db == dst_db && src == dst {
            crate::log::journal::groups::GroupGuard::none()
        } else {
            self.group()
        };
        // Lock both shards in index order (no deadlock).
        let (mut ga, mut gb) = if a == b {
            (self.shards[a].lock(), None)
        } else if a < b {
            let ga = self.shards[a].lock();
            (ga, Some(self.shards[b].lock()))
        } else {
            let gb = self.shards[b].lock();
            (self.shards[a].lock(), Some(gb))
        };
        let Some(si) = self.live_index(&mut ga, db, src) else {
            return Ok(None);
        };
        let raw = ga.dbs[db].at(si).vtype & (crate::index::VT_STR_RAW | crate::index::VT_STR_NOINT);
        if matches!(ga.dbs[db].at(si).slot, Slot::Chunked(_)) {
            // The copy is a new collection (its records name their key):
            // every part must be in RAM.
            let cold = self.cold_parts(db, src, ga.dbs[db].at_mut(si), &Need::Whole);
            if !cold.is_empty() {
                return Err(Retry::Parts(cold));
            }
        }
        let (value, expire, flags) = {
            let e = &ga.dbs[db].at(si);
            match &e.slot {
                Slot::Hot(h) => (h.value.clone(), e.expire_at_ms, e.client_flags),
                Slot::Chunked(c) => {
                    let value = match &**c {
                        crate::types::Collection::Str(s) => Value::Str(
                            s.detached()
                                .map_err(|_| Retry::Fail(EngineError::Malformed))?,
                        ),
                        c => Value::Coll(Box::new(c.detached())),
                    };
                    (value, e.expire_at_ms, e.client_flags)
                }
                Slot::Cold(loc) => match &fetched {
                    Some((v, value)) if *v == e.version => {
                        let value = Value::from_record(e.value_type(), value.clone())
                            .map_err(|_| Retry::Fail(EngineError::Malformed))?;
                        (value, e.expire_at_ms, e.client_flags)
                    }
                    _ => {
                        return Err(Retry::Fetch(FetchTarget::new(
                            self, db, src, *loc, e.version,
                        )))
                    }
                },
            }
        };
        if src == dst && db == dst_db {
            return Ok(Some(!nx && !copy));
        }
        let dsh: &mut Shard = match gb.as_mut() {
            Some(g) => g,
            None => &mut ga,
        };
        let di = self.live_index(dsh, dst_db, dst);
        if nx && di.is_some() {
            return Ok(Some(false));
        }
        let value = match value {
            Value::Str(v) if v.len() * 2 < 4096 || copy => Value::Str(Bytes::copy_from_slice(&v)),
            v => v,
        };
        if let Some(i) = self.store_value(dsh, dst_db, dst, di, value, expire, flags) {
            // The copy keeps Redis's `raw` (and not-`int`) marks.
            dsh.dbs[dst_db].at_mut(i).vtype |= raw;
        }
        if !copy {
            // The destination insert may have moved entries of the same
            // map; look the source up again.
            let sh: &mut Shard = &mut ga;
            if let Some(si) = sh.dbs[db].get_index_of(src) {
                self.remove_index(sh, db, si, false);
            }
        }
        Ok(Some(true))
    }
}

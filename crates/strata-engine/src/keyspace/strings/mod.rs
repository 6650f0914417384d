//! String operations: GET, SET with its options, MSET, STRLEN, and
//! storing a string value; read-modify-write (`update`) for commands that
//! need the old value (APPEND, INCR, GETSET ...) is in `update`.
//!
//! Writes only touch RAM (invariant: overwrite of a cold value releases its
//! record's live bytes and nothing else). A read-modify-write of a cold
//! value fetches it, then re-locks and applies only if the entry's version
//! is unchanged; otherwise it starts again from the new state.

use crate::base::ValueType;
use crate::clock::{now_ms, now_secs};
use crate::index::access;
use crate::index::{Entry, Slot, F_REFERENCED};
use crate::log::journal::RECORD_FROM;
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_and_promote, FetchTarget, Read};
use crate::types::bigstr::{Piece, STR_CHUNKED_AT};
use crate::types::changes::{Chain, ChangeLog, Recorder};
use crate::types::ChunkedStr;
use crate::types::Collection;
use crate::{Engine, EngineError, Inner};
use bytes::Bytes;
mod update;

pub(crate) use update::{update_cold, Retry};
pub use update::{Current, Mutation};

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

/// What `Engine::get_in_ram` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InRam {
    /// The reply was given: the value, or no such key.
    Answered,
    /// The key holds another type.
    WrongType,
    /// The value is on flash or in parts: nothing was counted; use `get`.
    NotInRam,
}

/// A memcached item's state after an `update_item`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemState {
    pub cas: u64,
    /// Absolute Unix ms; 0 = never.
    pub expire_at_ms: u64,
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

    /// GET answered from RAM: `f` gets the value (None: no such key) under
    /// the key's shard lock, to copy it into the reply, so no reference is
    /// taken on its bytes (a clone and a drop were two atomic operations
    /// and a cache miss on every RAM GET). Nothing is counted or touched
    /// when the value is not a string in RAM (`InRam::NotInRam`).
    pub fn get_in_ram(&self, db: usize, key: &[u8], f: impl FnOnce(Option<&[u8]>)) -> InRam {
        let inner = &self.inner;
        let mut guard = inner.shard(key).lock();
        let sh = &mut *guard;
        let Some(idx) = sh.dbs[db].get_index_of(key) else {
            Stats::inc(&inner.stats.keyspace_misses);
            f(None);
            return InRam::Answered;
        };
        // A packed entry is cold (its TTL is checked by `get`).
        let Some(e) = sh.dbs[db].boxed_at(idx) else {
            return InRam::NotInRam;
        };
        if e.is_expired(now_ms()) {
            inner.remove_index(sh, db, idx, true);
            Stats::inc(&inner.stats.keyspace_misses);
            f(None);
            return InRam::Answered;
        }
        if e.value_type() != ValueType::String {
            return InRam::WrongType;
        }
        let Slot::Hot(h) = &e.slot else {
            return InRam::NotInRam;
        };
        let Some(value) = h.value.as_str() else {
            return InRam::NotInRam;
        };
        Stats::inc(&inner.stats.keyspace_hits);
        Stats::inc(&inner.stats.ram_hits);
        if h.backing().is_some() {
            Stats::inc(&inner.stats.ram_cool_hits);
        }
        f(Some(value));
        if crate::index::access::touches() {
            sh.dbs[db].mark_read(idx, now_secs(), inner.tun.lfu());
        }
        InRam::Answered
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
        if crate::index::access::touches() {
            access::touch(e, now_secs(), inner.tun.lfu());
        }
        Some(match &e.slot {
            Slot::Hot(h) => {
                Stats::inc(&inner.stats.ram_hits);
                if h.backing().is_some() {
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
        let old_expire = existing.map(|i| sh.dbs[db].at(i).expire_at_ms).unwrap_or(0);
        let expire = resolve_expire(opts.expire, old_expire);
        inner.store(sh, db, key, existing, value, expire, 0);
        Ok(true)
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
                if let Some(e) = sh.dbs[db].get(k) {
                    if !e.is_expired(now) {
                        return false;
                    }
                }
            }
        }
        for (k, v) in pairs {
            let sh = &mut *guards[guard_of(k)];
            let idx = sh.dbs[db].get_index_of(k);
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

/// The TTL a write leaves on its key.
fn resolve_expire(u: ExpireUpdate, old: u64) -> u64 {
    match u {
        ExpireUpdate::Clear => 0,
        ExpireUpdate::Keep => old,
        ExpireUpdate::At(ms) => ms,
    }
}

impl Inner {
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
        self.store_logged(sh, db, key, idx, value, expire_at_ms, client_flags, None)
    }

    /// As `store_value`; a hot string given `rec` records its changes
    /// with it (`store_in_place`), and its note asks the journal to look
    /// (`note_stored`).
    #[allow(clippy::too_many_arguments)]
    fn store_logged(
        &self,
        sh: &mut crate::index::Shard,
        db: usize,
        key: &[u8],
        idx: Option<usize>,
        value: crate::index::Value,
        expire_at_ms: u64,
        client_flags: u32,
        rec: Option<Recorder>,
    ) -> Option<usize> {
        if expire_at_ms != 0 && expire_at_ms <= now_ms() {
            // Already expired (SET ... EXAT in the past): the key is gone,
            // as in Redis, rather than stored dead until the sweep.
            if let Some(i) = idx {
                self.remove_index(sh, db, i, false);
            }
            self.release_log(rec.and_then(|mut r| r.stop()));
            return None;
        }
        let version = self.next_seq();
        let value_len = value.len() as u32;
        let vtype = value.vtype() as u8;
        let mut slot = self.new_slot(value);
        match (rec, &mut slot) {
            (Some(rec), Slot::Hot(h)) if h.value.as_str().is_some() => h.start_str_log(rec),
            (Some(mut rec), _) => self.release_log(rec.stop()),
            (None, _) => {}
        }
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
                // An overwrite keeps the key's access frequency, raised
                // by this access (Redis's lookup for write, then
                // `dbOverwrite`).
                e.flags = self.dirty_flag();
                access::touch(e, now_secs(), self.tun.lfu());
                i
            }
            None => {
                let e = Entry {
                    slot,
                    expire_at_ms,
                    version,
                    lru_secs: now_secs(),
                    lfu: access::LFU_INIT_VAL,
                    flags: F_REFERENCED | self.dirty_flag(),
                    value_len,
                    client_flags,
                    vtype,
                };
                let key = crate::index::CompactKey::from(key);
                sh.acct.entry_added(db, key.heap_bytes(), &e);
                sh.dbs[db].insert_full(key, e).0
            }
        };
        let how = if created {
            crate::keyspace::observe::KeyChange::Created
        } else {
            crate::keyspace::observe::KeyChange::Written
        };
        self.note_stored(sh, db, key, idx, how);
        Some(idx)
    }

    /// Runs `f` on the live (unexpired) entry of `key`, if any.
    pub(crate) fn with_live<T>(
        &self,
        db: usize,
        key: &[u8],
        f: impl FnOnce(&crate::index::Shard, &Entry) -> T,
    ) -> Option<T> {
        self.with_entry(db, key, true, f)
    }

    /// As `with_live`; with `live` false an expired key is looked at
    /// as it is (neither deleted nor hidden).
    pub(crate) fn with_entry<T>(
        &self,
        db: usize,
        key: &[u8],
        live: bool,
        f: impl FnOnce(&crate::index::Shard, &Entry) -> T,
    ) -> Option<T> {
        let now = now_ms();
        let mut guard = self.shard(key).lock();
        let sh = &mut *guard;
        let idx = sh.dbs[db].get_index_of(key)?;
        if live && sh.dbs[db].at(idx).is_expired(now) {
            self.remove_index(sh, db, idx, true);
            return None;
        }
        Some(f(sh, &sh.dbs[db].at(idx)))
    }
}

/// The change log of a string at `idx` that records, or can start to
/// (`types::changes`), taken before its slot is replaced by the string's
/// next bytes (which would release the chain's records). The slot's
/// backing, a record of its current bytes, joins the chain (as
/// `KeysView::finish` does for a collection): the chain's image, or a
/// record it replaces. A string of at least `RECORD_FROM` bytes with a
/// backing and no chain starts one there (its first change in place is
/// then a change record too).
fn take_log(sh: &mut crate::index::Shard, db: usize, idx: Option<usize>) -> Option<Box<ChangeLog>> {
    let e = sh.dbs[db].at_mut(idx?);
    let version = e.version;
    let Slot::Hot(h) = &mut e.slot else {
        return None;
    };
    if let Some(mut log) = h.take_str_log() {
        if let Some(old) = h.take_backing() {
            log.chain.adopt_backing(old);
        }
        return Some(log);
    }
    // A record of its bytes as they are: the image to start from.
    let bytes = h.value.as_str().filter(|b| b.len() >= RECORD_FROM)?.clone();
    let chain = Chain {
        last_seq: version,
        confirmed: true,
        image: Some(h.take_backing()?),
        ..Chain::default()
    };
    Some(ChangeLog::new(chain, Some(bytes)))
}

impl Inner {
    /// Stores `bytes` as the string at `idx` (if any) changed in place
    /// (APPEND, SETRANGE, SETBIT ...), as `store` does: with the journal
    /// on, a string of at least `RECORD_FROM` bytes (and one record)
    /// records its changes, keeping the chain of records the old one had
    /// (`take_log`; else the journal starts one at its next image). The
    /// old chain's records are released otherwise.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_in_place(
        &self,
        sh: &mut crate::index::Shard,
        db: usize,
        key: &[u8],
        idx: Option<usize>,
        bytes: &[u8],
        expire_at_ms: u64,
        client_flags: u32,
    ) -> Option<usize> {
        let log = take_log(sh, db, idx);
        let records =
            self.journal.enabled && bytes.len() >= RECORD_FROM && bytes.len() <= STR_CHUNKED_AT;
        if !records {
            self.release_log(log);
            return self.store(sh, db, key, idx, bytes, expire_at_ms, client_flags);
        }
        let value = crate::index::Value::Str(Bytes::copy_from_slice(bytes));
        self.store_logged(
            sh,
            db,
            key,
            idx,
            value,
            expire_at_ms,
            client_flags,
            Some(Recorder::from(log)),
        )
    }

    /// Releases the records of a chain no value takes on.
    fn release_log(&self, log: Option<Box<ChangeLog>>) {
        for loc in log.iter().flat_map(|l| l.chain.locs()) {
            self.release_flash(loc);
        }
    }
}

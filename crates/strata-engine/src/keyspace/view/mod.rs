//! `KeysView`: atomic access to the values of a declared set of keys, for
//! commands that read or change collections (and, later, transactions and
//! scripts).
//!
//! [`crate::Engine::with_keys`] first makes every declared key's value hot: a cold
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
//!
//! Rooms: this file is the view a closure gets (`KeysView`) and what it does
//! to the entries it changes; `lookup` how it finds a declared key's entry;
//! `run` is `with_keys`: fetching what is cold,
//! locking, running the closure, retrying; `stream` a whole read of one
//! chunked collection a batch of parts at a time; `windows` a read of
//! several hashes or sets by windows of the element hash.

mod lookup;
mod run;
mod stream;
mod windows;

pub(crate) use run::join_all;
pub use run::ColdKeys;

use crate::base::ValueType;
use crate::clock::now_secs;
use crate::index::lock::ShardGuard;
use crate::index::{Slot, Value};
use crate::stats::Stats;
use crate::types::{Collection, EncodingLimits};
use crate::{EngineError, Inner};
use bytes::Bytes;
use smallvec::SmallVec;

/// A value seen through a [`KeysView`].
pub enum ValueRef<'a> {
    Str(&'a Bytes),
    Coll(&'a Collection),
}

/// A changed collection: the hot length it had before the change; a
/// chunked one is taken out of the shard's counters while it changes
/// (`out`) and counted in again when settled.
struct Touched {
    key: Bytes,
    old_len: usize,
    out: bool,
    /// A change Redis does not signal as a modification (`quiet`).
    quiet: bool,
}

/// The keys of one `with_keys` call, locked (module doc).
pub struct KeysView<'a> {
    inner: &'a Inner,
    db: usize,
    /// The declared keys (so a changed key is remembered without a copy).
    keys: &'a [Bytes],
    /// Small vectors: most commands name one or two keys.
    ids: SmallVec<[usize; 2]>,
    guards: SmallVec<[ShardGuard<'a>; 2]>,
    /// Per declared key: its shard's position in `guards`, and where its
    /// entry was last seen in that shard's map (a hint, checked by a key
    /// compare before use; `usize::MAX` for none). A command reaches its
    /// key a few times (the cold check, the closure, `finish`): one hash
    /// and one probe, not one per step.
    at: SmallVec<[(usize, usize); 2]>,
    /// Changes of several keys are one group: taken before `guards`,
    /// released after them (fields drop in declaration order).
    pub(super) _group: crate::log::journal::groups::GroupGuard<'a>,
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
            if matches!(t, ValueType::List | ValueType::ZSet | ValueType::Stream)
                && !r.iter().any(|k| &k[..] == key)
            {
                r.push(Bytes::copy_from_slice(key));
            }
        }
    }

    /// The version of `key`'s value (it changes with every write), if the
    /// key exists.
    pub fn version(&mut self, key: &[u8]) -> Option<u64> {
        let i = self.live(key)?;
        let db = self.db;
        let sh = self.shard(key)?;
        Some(sh.dbs[db].at(i).version)
    }

    /// The type of `key`'s value, if it exists.
    pub fn vtype(&mut self, key: &[u8]) -> Option<ValueType> {
        let i = self.live(key)?;
        let db = self.db;
        let sh = self.shard(key)?;
        Some(sh.dbs[db].at(i).value_type())
    }

    /// The value of `key` (counted as a keyspace hit or miss).
    pub fn get(&mut self, key: &[u8]) -> Option<ValueRef<'_>> {
        let inner = self.inner;
        // (A write command's lookups count nothing: `WriteLookups`.)
        let count = !crate::stats::WriteLookups::active();
        let Some((pos, i)) = self.live_at(key) else {
            if count {
                Stats::inc(&inner.stats.keyspace_misses);
            }
            return None;
        };
        if count {
            Stats::inc(&inner.stats.keyspace_hits);
        }
        let db = self.db;
        let e = self.guard(pos).dbs[db].at_mut(i);
        if crate::index::access::touches() {
            crate::index::access::touch(e, now_secs(), inner.tun.lfu());
        }
        match &e.slot {
            Slot::Hot(h) => Some(match &h.value {
                Value::Str(b) => ValueRef::Str(b),
                Value::Coll(c) => ValueRef::Coll(c),
            }),
            Slot::Chunked(c) => Some(ValueRef::Coll(c)),
            // Not reachable: with_keys made every declared key hot.
            Slot::Cold(_) => None,
        }
    }

    /// The value of `key`, not counted as a hit or a miss (a streamed
    /// read's later steps: the read counted once, at its start).
    pub fn peek(&mut self, key: &[u8]) -> Option<ValueRef<'_>> {
        let i = self.live(key)?;
        let db = self.db;
        let sh = self.shard(key)?;
        match &sh.dbs[db].boxed_at(i)?.slot {
            Slot::Hot(h) => Some(match &h.value {
                Value::Str(b) => ValueRef::Str(b),
                Value::Coll(c) => ValueRef::Coll(c),
            }),
            Slot::Chunked(c) => Some(ValueRef::Coll(c)),
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
        let (pos, idx) = match self.live_at(key) {
            Some((pos, i)) => {
                if self.guard(pos).dbs[db].at(i).value_type() != t {
                    return Err(EngineError::WrongType);
                }
                (pos, i)
            }
            None if create => {
                let Some(c) = Collection::new(t) else {
                    return Err(EngineError::WrongType);
                };
                let Some(pos) = self.pos(key) else {
                    return Ok(None);
                };
                let sh = self.guard(pos);
                match inner.store_value(sh, db, key, None, Value::Coll(Box::new(c)), 0, 0) {
                    Some(i) => (pos, i),
                    None => return Ok(None),
                }
            }
            None => return Ok(None),
        };
        if !self.touched.iter().any(|t| &t.key[..] == key) {
            let sh = self.guard(pos);
            let e = &sh.dbs[db].at(idx);
            let old_len = e.hot_bytes();
            let out = matches!(e.slot, Slot::Chunked(_));
            if out {
                sh.acct.remove(&e.slot, e.value_len, e.vtype);
            }
            let key = match self.keys.iter().find(|k| &k[..] == key) {
                Some(k) => k.clone(),
                None => Bytes::copy_from_slice(key),
            };
            self.touched.push(Touched {
                key,
                old_len,
                out,
                quiet: false,
            });
        }
        match &mut self.guard(pos).dbs[db].at_mut(idx).slot {
            Slot::Hot(h) => match &mut h.value {
                Value::Coll(c) => Ok(Some(c)),
                Value::Str(_) => Err(EngineError::WrongType),
            },
            Slot::Chunked(c) => {
                c.will_change();
                Ok(Some(c))
            }
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

    /// Stores the string `value` at `key`, keeping its TTL and memcached
    /// flags (a change of part of a string); with `raw`, reported `raw`
    /// (OBJECT ENCODING) as Redis's changes in place are.
    pub fn put_str(&mut self, key: &[u8], value: Value, raw: bool) {
        let (inner, db) = (self.inner, self.db);
        self.settle(key);
        let idx = self.live(key);
        let Some(sh) = self.shard(key) else {
            return;
        };
        let (expire, flags) = idx
            .map(|i| (sh.dbs[db].at(i).expire_at_ms, sh.dbs[db].at(i).client_flags))
            .unwrap_or((0, 0));
        // A string changed in place records its changes.
        let stored = match value {
            Value::Str(b) if raw => inner.store_in_place(sh, db, key, idx, &b, expire, flags),
            v => inner.store_value(sh, db, key, idx, v, expire, flags),
        };
        if let Some(i) = stored {
            if raw {
                sh.dbs[db].at_mut(i).vtype |= crate::index::VT_STR_RAW;
            }
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

    /// The closure changed nothing of `key` after all (a write that was a
    /// no-op: ZADD XX of an absent member, SADD of members present ...):
    /// as Redis, which then signals no change, the key keeps its version
    /// and nothing is noted (journal, WATCH, notifications). An empty
    /// collection is left to invariant 2.
    pub fn unchanged(&mut self, key: &[u8]) {
        let db = self.db;
        let empty =
            self.index_at(key)
                .is_some_and(|(pos, i)| match &self.guards[pos].dbs[db].at(i).slot {
                    Slot::Hot(h) => matches!(&h.value, Value::Coll(c) if c.is_empty()),
                    Slot::Chunked(c) => c.is_empty(),
                    Slot::Cold(_) => false,
                });
        if !empty {
            self.settle(key);
        }
    }

    /// The change of `key` made so far is one Redis does not signal as a
    /// modification (a stream's consumer groups): it is journaled and
    /// reported as `KeyChange::Quiet`, breaking no WATCH.
    pub fn quiet(&mut self, key: &[u8]) {
        if let Some(t) = self.touched.iter_mut().find(|t| &t.key[..] == key) {
            t.quiet = true;
        }
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
        if let Some((pos, i)) = self.index_at(key) {
            let sh = &mut *self.guards[pos];
            let e = sh.dbs[db].at(i);
            if t.out {
                sh.acct.add(&e.slot, e.value_len, e.vtype);
                return;
            }
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
        Some(sh.dbs[db].at(i).expire_at_ms)
    }

    /// RESTORE ... FREQ: the key's access frequency under an LFU policy
    /// (ignored under another, as Redis ignores it).
    pub fn set_freq(&mut self, key: &[u8], freq: u8) {
        let Some(i) = self.live(key) else {
            return;
        };
        if !self.inner.tun.eviction().lfu() {
            return;
        }
        let db = self.db;
        if let Some(sh) = self.shard(key) {
            let e = sh.dbs[db].at_mut(i);
            e.lfu = freq;
            e.lru_secs = crate::clock::now_secs();
        }
    }

    /// RESTORE ... IDLETIME: the key was last used `secs` seconds ago
    /// (ignored under an LFU policy, as Redis ignores it).
    pub fn set_idle(&mut self, key: &[u8], secs: u64) {
        if self.inner.tun.eviction().lfu() {
            return;
        }
        let Some(i) = self.live(key) else {
            return;
        };
        let db = self.db;
        if let Some(sh) = self.shard(key) {
            let secs = u32::try_from(secs).unwrap_or(u32::MAX);
            sh.dbs[db].at_mut(i).lru_secs = crate::clock::now_secs().saturating_sub(secs);
        }
    }

    /// Applies invariant 2 to every changed collection (noting the ready
    /// keys when tracked).
    fn finish(&mut self) {
        let (inner, db) = (self.inner, self.db);
        let touched = std::mem::take(&mut self.touched);
        let limits = self.limits;
        for t in touched {
            let Some((pos, idx)) = self.index_at(&t.key) else {
                continue;
            };
            let sh = &mut *self.guards[pos];
            // (One entry reference for every step below: each `at` costs a
            // segment lookup and a cell decode.)
            let e = sh.dbs[db].at_mut(idx);
            let mut old_len = t.old_len as u64;
            if t.out {
                // Counted in again as it is now; from here on a plain delta.
                sh.acct.add(&e.slot, e.value_len, e.vtype);
                old_len = e.hot_bytes() as u64;
            }
            // Records a list's popped or trimmed parts gave up.
            if let Slot::Chunked(c) = &mut e.slot {
                if let Some(d) = c.dir_mut() {
                    for loc in d.take_dropped_refs() {
                        inner.release_flash(loc);
                    }
                }
            }
            let empty = match &e.slot {
                Slot::Hot(h) => matches!(&h.value, Value::Coll(c) if c.is_empty()),
                Slot::Chunked(c) => c.is_empty(),
                Slot::Cold(_) => false,
            };
            if empty {
                // Count the shrunk length out, as removal counts it in.
                let new_len = e.hot_bytes() as u64;
                sh.acct.hot_bytes = sh.acct.hot_bytes + new_len - old_len;
                sh.acct.coll_hot_bytes = sh.acct.coll_hot_bytes + new_len - old_len;
                inner.remove_index(sh, db, idx, false);
                continue;
            }
            let t_ready = e.value_type();
            let version = inner.next_seq();
            let mut released = None;
            let mut new_refs = Vec::new();
            match &mut e.slot {
                Slot::Hot(h) => {
                    if let Value::Coll(c) = &mut h.value {
                        c.update_encoding(&limits);
                    }
                    released = h.take_backing();
                    // A value that records its changes keeps its image as
                    // the base of its chain (`types::changes`).
                    // (An image captured but not yet published starts a
                    // new chain: the backing is then an older record that
                    // image replaces.)
                    if let (Some(chain), Some(old)) = (h.chain_mut(), released) {
                        chain.adopt_backing(old);
                        released = None;
                    }
                }
                Slot::Chunked(c) => {
                    if let Some(d) = c.dir_mut() {
                        new_refs = d.take_new_refs();
                    }
                }
                Slot::Cold(_) => {}
            }
            let new_len = e.hot_bytes();
            if !matches!(e.slot, Slot::Cold(_)) {
                e.value_len = value_len_of(&e.slot);
            }
            e.client_flags = match &e.slot {
                Slot::Hot(h) => aux_of(&h.value),
                // A string keeps its memcached flags.
                Slot::Chunked(c) if c.vtype() == ValueType::String => e.client_flags,
                Slot::Chunked(c) => crate::types::aux(c.len(), c.encoding_is_big()),
                Slot::Cold(_) => e.client_flags,
            };
            if t.quiet {
                inner.keys.watches.quiet(db, &t.key, e.version, version);
            }
            e.version = version;
            e.flags = inner.dirty_flag();
            crate::index::access::touch(e, now_secs(), inner.tun.lfu());
            sh.acct.hot_bytes = sh.acct.hot_bytes + new_len as u64 - old_len;
            sh.acct.coll_hot_bytes = sh.acct.coll_hot_bytes + new_len as u64 - old_len;
            if let Some(loc) = released {
                inner.release_flash(loc);
            }
            for loc in new_refs {
                inner.retain_flash(loc);
            }
            // A big hash or set past `CHUNKED_AT` becomes chunked (one way):
            // from now on a change writes only the parts it touched.
            let chunk = matches!(&e.slot, Slot::Hot(h) if matches!(&h.value, Value::Coll(c) if c.wants_chunks()));
            if chunk {
                sh.acct.remove(&e.slot, e.value_len, e.vtype);
                if let Slot::Hot(h) = std::mem::replace(&mut e.slot, Slot::Cold(NO_LOC)) {
                    let mut value = h.value;
                    // Its parts are its records now: its chain's go.
                    if let Value::Coll(c) = &mut value {
                        for loc in c.stop_recording().iter().flat_map(|l| l.chain.locs()) {
                            inner.release_flash(loc);
                        }
                    }
                    e.slot = inner.new_slot(value);
                }
                sh.acct.add(&e.slot, e.value_len, e.vtype);
            }
            let how = if t.quiet {
                crate::keyspace::observe::KeyChange::Quiet
            } else {
                crate::keyspace::observe::KeyChange::Written
            };
            inner.note_key_as(db, &t.key, how);
            self.note_ready(&t.key, t_ready);
        }
    }
}

/// A placeholder location while a slot is rebuilt (never stored).
const NO_LOC: crate::base::FlashLoc = crate::base::FlashLoc {
    segment: 0,
    offset: 0,
    len: 0,
};

/// The value length an entry records for its slot: the string's or the
/// packed collection's length (saturating), whatever is in RAM.
pub(crate) fn value_len_of(slot: &Slot) -> u32 {
    let n = match slot {
        Slot::Hot(h) => h.value.len(),
        Slot::Chunked(c) => c.encoded_len(),
        Slot::Cold(_) => return 0,
    };
    n.min(u32::MAX as usize) as u32
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

//! Reads of many keys: MGET's string values as of one moment (a keyed
//! exclusive section), cold ones read first and checked unchanged; and
//! the prefetch of a pipeline's keys before it runs.

use crate::base::ValueType;
use crate::clock::{now_ms, now_secs};
use crate::index::Slot;
use crate::keyspace::chunks::{load_parts, Need, PartTarget};
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_value, promote_fetched, FetchTarget, Read};
use crate::types::Collection;
use crate::{Engine, EngineError};
use bytes::Bytes;

/// What `get_many` must read before it looks again: values of one record
/// and parts of chunked strings.
type ToRead = (Vec<FetchTarget>, Vec<PartTarget>);

/// Values `get_many` read from flash, by key, with what they were read for.
type Fetched = std::collections::HashMap<Box<[u8]>, (FetchTarget, Bytes)>;

impl Engine {
    /// Prefetches the lookups of `keys` in `db` (a pipeline about to run):
    /// every key's table probe, then every key's bucket, then its boxed
    /// entry, then its hot string's bytes (a KiB at most), so the misses of
    /// the batch overlap (`index::map::prefetch`). Changes nothing, and
    /// waits for no lock: a key whose shard another thread holds (the
    /// journal publishing, the collector) is skipped for that pass. Parking
    /// the loop there cost it a wake-up and, on a machine busy with its
    /// clients, a wait for a CPU (the default config's p99).
    pub fn prefetch_keys(&self, db: usize, keys: &[&[u8]]) {
        const BATCH: usize = 32;
        let inner = &self.inner;
        let map = |s: usize, f: &mut dyn FnMut(&crate::index::KeyMap)| {
            if let Some(m) = inner.shards[s]
                .try_lock()
                .as_ref()
                .and_then(|g| g.dbs.get(db))
            {
                f(m);
            }
        };
        for keys in keys.chunks(BATCH) {
            // Each key's shard and hash, found once in the first pass.
            let mut at = [None; BATCH];
            let mut pos = [None; BATCH];
            for (j, k) in keys.iter().enumerate() {
                let s = inner.shard_index(k);
                map(s, &mut |m| at[j] = Some((s, m.prefetch_probe(k))));
            }
            let each = |f: &mut dyn FnMut(usize, u64, &crate::index::KeyMap)| {
                for (j, a) in at.iter().enumerate().take(keys.len()) {
                    if let Some((s, hash)) = *a {
                        map(s, &mut |m| f(j, hash, m));
                    }
                }
            };
            each(&mut |j, hash, m| pos[j] = m.prefetch_bucket(hash));
            each(&mut |j, _, m| pos[j].map_or((), |i| m.prefetch(i, true)));
            each(&mut |j, _, m| pos[j].map_or((), |i| m.prefetch_value(i)));
        }
    }

    /// MGET: the string values of `keys` (None for a missing key or another
    /// type) as of one moment: the keys' shards are held together
    /// (`exclusive_keys`). Cold values are read first, holding nothing,
    /// then the keys are looked at again together: a value read is used if
    /// its key did not change meanwhile, else it is read again. Each key is
    /// counted once in the hit and miss statistics, and a value read from
    /// flash is promoted as GET's would be.
    pub fn get_many(
        &self,
        db: usize,
        keys: Vec<Bytes>,
    ) -> Read<Result<Vec<Option<Bytes>>, EngineError>> {
        let mut fetched = Fetched::new();
        match self.get_many_once(db, &keys, &fetched, true) {
            Ok(values) => Read::Ready(Ok(values)),
            Err(targets) => {
                let engine = self.clone();
                Read::Pending(Box::pin(async move {
                    let mut next = targets;
                    loop {
                        let (targets, parts) = next;
                        if !parts.is_empty() {
                            load_parts(&engine.inner, parts).await?;
                        }
                        let reads = targets.iter().map(|t| fetch_value(engine.inner.clone(), t));
                        let values = crate::keyspace::view::join_all(reads).await;
                        for (t, v) in targets.into_iter().zip(values) {
                            fetched.insert(t.key.clone(), (t, v?));
                        }
                        match engine.get_many_once(db, &keys, &fetched, false) {
                            Ok(values) => return Ok(values),
                            Err(t) => next = t,
                        }
                    }
                }))
            }
        }
    }

    /// One look at `keys` for `get_many`: their values, or the cold ones
    /// still to read (`fetched`: values read so far, used if their entry is
    /// unchanged). `count`: the first look counts hits and misses.
    fn get_many_once(
        &self,
        db: usize,
        keys: &[Bytes],
        fetched: &Fetched,
        count: bool,
    ) -> Result<Vec<Option<Bytes>>, ToRead> {
        let inner = &self.inner;
        let stats = &inner.stats;
        let inc = |c: &crate::stats::Striped| {
            if count {
                Stats::inc(c)
            }
        };
        let (now, secs) = (now_ms(), now_secs());
        let lfu = inner.tun.lfu();
        let mut promoted = false;
        let r = self.exclusive_keys(keys, || {
            let mut values = Vec::with_capacity(keys.len());
            let mut cold = Vec::new();
            let mut parts = Vec::new();
            for key in keys {
                let mut guard = inner.shard(key).lock();
                let sh = &mut *guard;
                let Some(idx) = sh.dbs[db].get_index_of(&key[..]) else {
                    inc(&stats.keyspace_misses);
                    values.push(None);
                    continue;
                };
                if sh.dbs[db].at(idx).is_expired(now) {
                    // Expired keys go when read, as Redis's lazy expiry.
                    inner.remove_index(sh, db, idx, true);
                    inc(&stats.keyspace_misses);
                    values.push(None);
                    continue;
                }
                let e = sh.dbs[db].at_mut(idx);
                if e.value_type() != ValueType::String {
                    values.push(None);
                    continue;
                }
                inc(&stats.keyspace_hits);
                if crate::index::access::touches() {
                    // The frequency once per command, at its first look.
                    crate::index::access::touch(e, secs, lfu.filter(|_| count));
                }
                match &e.slot {
                    Slot::Hot(h) => {
                        inc(&stats.ram_hits);
                        if h.backing().is_some() {
                            inc(&stats.ram_cool_hits);
                        }
                        values.push(h.value.as_str().cloned());
                    }
                    Slot::Cold(loc) => {
                        inc(&stats.ram_misses);
                        let (loc, version) = (*loc, e.version);
                        let read = fetched
                            .get(&key[..])
                            .filter(|(t, _)| t.loc == loc && t.version == version);
                        match read {
                            Some((t, v)) => {
                                promoted |= promote_fetched(inner, sh, t, v);
                                values.push(Some(v.clone()));
                            }
                            None => {
                                cold.push(FetchTarget::new(inner, db, key, loc, version));
                                values.push(None);
                            }
                        }
                    }
                    // A chunked string: whole, once every part is in RAM.
                    Slot::Chunked(c) => match c.as_ref() {
                        Collection::Str(s) => match s.detached() {
                            Ok(b) => values.push(Some(b)),
                            Err(_) => {
                                parts.extend(inner.cold_parts(db, key, e, &Need::Whole));
                                values.push(None);
                            }
                        },
                        _ => values.push(None),
                    },
                }
            }
            if cold.is_empty() && parts.is_empty() {
                Ok(values)
            } else {
                Err((cold, parts))
            }
        });
        if promoted {
            inner.wake_if_pressured();
        }
        r
    }
}

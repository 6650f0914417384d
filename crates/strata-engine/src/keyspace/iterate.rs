//! Walks over a database's keys: KEYS, SCAN (its cursor and guarantee)
//! and RANDOMKEY. Expired keys not yet swept are skipped, not removed.

use crate::clock::now_ms;
use crate::Engine;
use bytes::Bytes;
use rand::Rng;

impl Engine {
    /// KEYS: every live key of `db` accepted by `matches`.
    pub fn keys(&self, db: usize, matches: impl Fn(&[u8]) -> bool) -> Vec<Bytes> {
        let now = now_ms();
        let mut out = Vec::new();
        for s in self.inner.shards.iter() {
            let s = s.lock();
            for (k, e) in s.dbs[db].iter() {
                if !e.is_expired(now) && matches(k) {
                    out.push(Bytes::copy_from_slice(k));
                }
            }
        }
        out
    }

    /// SCAN: visits about `count` entries from `cursor` and returns the next
    /// cursor (0 = done) and the live keys accepted by `matches`.
    ///
    /// The cursor encodes (shard, position); each shard is walked from its
    /// end towards index 0. Removal swaps the last entry into the hole, and
    /// the last entry was already visited or is new, so every key present
    /// for the whole scan is returned at least once (Redis's guarantee).
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        count: usize,
        matches: impl Fn(&[u8], crate::base::ValueType) -> bool,
    ) -> (u64, Vec<Bytes>) {
        let nshards = self.inner.shards.len() as u64;
        let now = now_ms();
        let mut out = Vec::new();
        // Cursor: 0 = start; else (pos << 16 | shard) + 1 where pos is the
        // exclusive upper bound still to visit in that shard.
        let (mut shard, mut pos) = if cursor == 0 {
            (0u64, u64::MAX)
        } else {
            let c = cursor - 1;
            (c & 0xffff, c >> 16)
        };
        let mut visited = 0;
        while shard < nshards {
            let s = self.inner.shards[shard as usize].lock();
            let map = &s.dbs[db];
            let mut p = pos.min(map.len() as u64);
            while p > 0 && visited < count.max(1) {
                p -= 1;
                visited += 1;
                if let Some((k, e)) = map.get_index(p as usize) {
                    if !e.is_expired(now) && matches(k, e.value_type()) {
                        out.push(Bytes::copy_from_slice(k));
                    }
                }
            }
            if p > 0 {
                return (((p << 16) | shard) + 1, out);
            }
            shard += 1;
            pos = u64::MAX;
            if visited >= count.max(1) {
                break;
            }
        }
        if shard >= nshards {
            (0, out)
        } else {
            ((((u64::MAX >> 16) << 16) | shard) + 1, out)
        }
    }

    /// RANDOMKEY: a random live key of `db`.
    pub fn random_key(&self, db: usize) -> Option<Bytes> {
        let mut rng = rand::thread_rng();
        let n = self.inner.shards.len();
        let now = now_ms();
        for _ in 0..n * 4 {
            let s = self.inner.shards[rng.gen_range(0..n)].lock();
            let map = &s.dbs[db];
            if map.is_empty() {
                continue;
            }
            let (k, e) = map.get_index(rng.gen_range(0..map.len()))?;
            if !e.is_expired(now) {
                return Some(Bytes::copy_from_slice(k));
            }
        }
        // Sparse db: fall back to the first live key found.
        for s in self.inner.shards.iter() {
            let s = s.lock();
            let found = s.dbs[db].iter().find(|(_, e)| !e.is_expired(now));
            if let Some((k, _)) = found {
                return Some(Bytes::copy_from_slice(k));
            }
        }
        None
    }
}

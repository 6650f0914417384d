//! WATCH: what a client remembers of a key, and whether the key changed
//! since (checked by EXEC inside its exclusive section).
//!
//! A key is remembered by its entry's version (None if it is absent or
//! expired) and a stamp. Every write of a value gives a new version (index
//! invariant 2), versions are unique over the whole keyspace, so a changed,
//! replaced, renamed-over, swapped or flushed key never shows the version it
//! had. What changes a key without a new value (a TTL) or leaves no entry
//! to compare (a deletion; not an expiry, which changes nothing logically,
//! as in Redis) stamps the watched key here (`touched`). A change Redis
//! does not signal as a modification (a stream's consumer groups) gives a
//! new version too, noted here as a *quiet* step from the old version to
//! the new one (`quiet`), which a watch follows instead of counting a
//! change.
//!
//! Invariants:
//! 1. A watch takes its stamp (`at`) under the key's shard lock, and a
//!    change takes its stamp under the same lock, so a change after the
//!    watch has a larger stamp.
//! 2. `Watched` unregisters its keys when dropped; the table holds only
//!    keys some client watches.

use crate::clock::now_ms;
use crate::{Engine, Inner};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A watched key: (database, key).
type WatchKey = (usize, Box<[u8]>);

/// Of a watched key: how many watches, the stamp of its last deletion,
/// and its quiet version steps (old -> new).
type WatchState = (usize, u64, HashMap<u64, u64>);

/// The keys clients watch.
#[derive(Default)]
pub(crate) struct Watches {
    count: AtomicUsize,
    keys: Mutex<HashMap<WatchKey, WatchState>>,
}

impl Watches {
    /// Stamps a deletion or TTL change of `key` if it is watched (caller
    /// holds the key's shard lock).
    pub(crate) fn touched(&self, inner: &Inner, db: usize, key: &[u8]) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(w) = self.keys.lock().get_mut(&(db, Box::from(key))) {
            w.1 = inner.next_seq();
        }
    }

    /// Notes that `key` went from version `old` to `new` by a quiet change
    /// (caller holds the key's shard lock).
    pub(crate) fn quiet(&self, db: usize, key: &[u8], old: u64, new: u64) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(w) = self.keys.lock().get_mut(&(db, Box::from(key))) {
            w.2.insert(old, new);
        }
    }
}

/// One watched key.
struct Watch {
    db: usize,
    key: Box<[u8]>,
    /// Its version when watched, None if absent.
    version: Option<u64>,
    /// Its stamp: a later `touched` is a change.
    at: u64,
}

/// The keys one client watches (unregistered when dropped).
pub struct Watched {
    engine: Engine,
    keys: Vec<Watch>,
}

impl Watched {
    pub fn new(engine: &Engine) -> Watched {
        Watched {
            engine: engine.clone(),
            keys: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The watched keys (of any database).
    pub fn keys(&self) -> Vec<bytes::Bytes> {
        self.keys
            .iter()
            .map(|w| bytes::Bytes::copy_from_slice(&w.key))
            .collect()
    }

    /// WATCH `key` of `db` (again: a key watched twice is checked once).
    pub fn watch(&mut self, db: usize, key: &[u8]) {
        if self.keys.iter().any(|w| w.db == db && *w.key == *key) {
            return;
        }
        let inner = &self.engine.inner;
        let sh = inner.shard(key).lock();
        let version = live_version(&sh, db, key);
        let at = inner.next_seq();
        let watches = &inner.keys.watches;
        watches.count.fetch_add(1, Ordering::Relaxed);
        watches
            .keys
            .lock()
            .entry((db, Box::from(key)))
            .or_insert((0, 0, HashMap::new()))
            .0 += 1;
        drop(sh);
        self.keys.push(Watch {
            db,
            key: key.into(),
            version,
            at,
        });
    }

    /// Whether any watched key changed since it was watched. Run it where
    /// no write can come between it and what depends on it (EXEC runs it
    /// inside its exclusive section).
    pub fn changed(&self) -> bool {
        let inner = &self.engine.inner;
        self.keys.iter().any(|w| {
            let sh = inner.shard(&w.key).lock();
            let now = live_version(&sh, w.db, &w.key);
            let table = inner.keys.watches.keys.lock();
            let entry = table.get(&(w.db, w.key.clone()));
            // Follow the quiet steps from the version watched.
            let mut seen = w.version;
            if let (Some(e), Some(v)) = (entry, seen) {
                let mut v = v;
                while let Some(&n) = e.2.get(&v) {
                    v = n;
                }
                seen = Some(v);
            }
            now != seen || entry.is_some_and(|e| e.1 > w.at)
        })
    }

    /// UNWATCH: forgets every key.
    pub fn clear(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let watches = &self.engine.inner.keys.watches;
        let mut table = watches.keys.lock();
        for w in self.keys.drain(..) {
            let k = (w.db, w.key);
            if let Some(e) = table.get_mut(&k) {
                e.0 -= 1;
                if e.0 == 0 {
                    table.remove(&k);
                }
            }
            watches.count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The version of `key` if it exists and has not expired.
fn live_version(sh: &crate::index::Shard, db: usize, key: &[u8]) -> Option<u64> {
    let e = sh.dbs.get(db)?.get(key)?;
    (!e.is_expired(now_ms())).then_some(e.version)
}

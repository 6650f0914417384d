//! How a `KeysView` finds a key's entry: the declared keys' shards and
//! last-seen positions (`KeysView::at`), so that a command reaching its
//! key several times (the cold check, the closure's lookups, `finish`)
//! hashes and probes it once.
//!
//! Invariant: a position hint is only a hint: it is used after a key
//! compare at that position (`KeyMap::get_index_of_from`), since removals
//! move entries (map invariant 2).

use super::KeysView;
use crate::index::Shard;
use bytes::Bytes;

impl KeysView<'_> {
    /// Which declared key `key` is: the same bytes (a clone of the
    /// declared `Bytes`, as handlers pass) or equal ones.
    pub(super) fn declared(&self, key: &[u8]) -> Option<usize> {
        let same = |k: &Bytes| k.as_ptr() == key.as_ptr() && k.len() == key.len();
        self.keys
            .iter()
            .position(same)
            .or_else(|| self.keys.iter().position(|k| &k[..] == key))
    }

    /// The position among `guards` of `key`'s shard, if it is held
    /// (invariant 3).
    pub(super) fn pos(&self, key: &[u8]) -> Option<usize> {
        match self.declared(key) {
            Some(d) => Some(self.at[d].0),
            None => self.ids.binary_search(&self.inner.shard_index(key)).ok(),
        }
    }

    /// The shard of `key` if it was declared (invariant 3).
    pub(super) fn shard(&mut self, key: &[u8]) -> Option<&mut Shard> {
        let pos = self.pos(key)?;
        self.guards.get_mut(pos).map(|g| &mut **g)
    }

    /// The held shard at `pos` (from `pos`, `index_at` or `live_at`).
    pub(super) fn guard(&mut self, pos: usize) -> &mut Shard {
        &mut self.guards[pos]
    }

    /// Where the entry of `key` is, live or not: its shard's position
    /// among `guards` and its index there, found through the declared
    /// key's hint, which it refreshes.
    pub(super) fn index_at(&mut self, key: &[u8]) -> Option<(usize, usize)> {
        let db = self.db;
        let d = self.declared(key);
        let (pos, hint) = match d {
            Some(d) => self.at[d],
            None => {
                let id = self.inner.shard_index(key);
                (self.ids.binary_search(&id).ok()?, usize::MAX)
            }
        };
        let map = &self.guards.get(pos)?.dbs[db];
        let idx = map.get_index_of_from(hint, key)?;
        if let Some(d) = d {
            self.at[d].1 = idx;
        }
        Some((pos, idx))
    }

    /// As `index_at`, for a live entry (an expired one is removed).
    pub(super) fn live_at(&mut self, key: &[u8]) -> Option<(usize, usize)> {
        let (inner, db) = (self.inner, self.db);
        let (pos, idx) = self.index_at(key)?;
        let sh = self.guard(pos);
        if sh.dbs[db].at(idx).is_expired(crate::clock::now_ms()) {
            inner.remove_index(sh, db, idx, true);
            return None;
        }
        Some((pos, idx))
    }

    /// Index of the live entry of `key`, removing it if expired.
    pub(super) fn live(&mut self, key: &[u8]) -> Option<usize> {
        self.live_at(key).map(|(_, i)| i)
    }
}

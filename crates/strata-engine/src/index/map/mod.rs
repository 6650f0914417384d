//! `KeyMap`: one database's keys in one shard. An insertion-ordered array
//! of (key, entry) buckets, found through a hash table of their positions.
//!
//! Layout, per key: one 32-byte bucket in `buckets` (the key and its
//! cell, `bucket.rs`) and one slot of `table` (a 3-byte position, 4 bytes
//! past 16.7M keys, `table.rs`, plus hashbrown's control byte, which
//! keeps 7 bits of the hash, so a probe compares keys only on a likely
//! match). No hash is stored: growing the table rehashes the keys, which
//! costs less than 8 bytes per key kept for ever.
//!
//! Invariants:
//! 1. `table` holds exactly the positions `0..buckets.len()`, each once, and
//!    the slot of position `i` was found by the hash of `buckets[i]`'s key.
//! 2. Positions are stable except across `swap_remove_index`, which moves
//!    the last bucket into the hole (as `IndexMap::swap_remove` does): the
//!    demotion hand and the expiry cursor walk positions, and tolerate that.
//! 3. `buckets` grows a segment at a time (`segs.rs`), never by doubling
//!    or copying: it is most of the index's RAM, and doubling would leave
//!    a third of it idle on average. The table doubles (4 bytes per slot).
//! 4. `full` has bit `i` set iff `buckets[i]`'s cell is boxed whole
//!    (`bits.rs`): the demotion hand finds entries in RAM through it.

mod bits;
mod prefetch;
mod segs;
mod table;

use super::bucket::Bucket;
use super::cell::{Cell, EntryRef, Ext, Kind};
use super::{Entry, Hasher, Hot, Key, Slot, Value};
use std::hash::BuildHasher;

/// Most keys one map holds (positions are `u32`).
pub const MAX_KEYS: usize = u32::MAX as usize;

/// A table this small is never shrunk (`shrink_if_sparse`).
const SHRINK_MIN_SLOTS: usize = 1024;

#[derive(Default)]
pub struct KeyMap {
    table: table::Table,
    buckets: segs::Segs,
    /// How many cells are boxed whole, and how many have an `Ext` box
    /// (their boxes are this map's RAM too).
    boxed: usize,
    ext: usize,
    /// Which buckets are boxed whole (invariant 4).
    full: bits::Bits,
    hasher: Hasher,
    /// Where the table's slots end, and its layout then (`prefetch`):
    /// recomputed when the table reallocates or widens.
    table_base: (usize, (usize, usize)),
}

impl Clone for KeyMap {
    fn clone(&self) -> KeyMap {
        let mut m = KeyMap {
            table: self.table.clone(),
            buckets: self.buckets.clone(),
            boxed: self.boxed,
            ext: self.ext,
            full: self.full.clone(),
            hasher: self.hasher,
            table_base: (0, (0, 0)),
        };
        // (The copy's table is another allocation.)
        m.note_table();
        m
    }
}

impl KeyMap {
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Bytes this map has allocated: its buckets (spare ones included),
    /// its boxed entries and its table's slots and control bytes. Keys'
    /// own heap bytes are not included (the shard counts them).
    pub fn allocated_bytes(&self) -> u64 {
        let buckets = self.buckets.allocated_bytes();
        let rest = self.table.allocation_size() + self.full.allocated_bytes();
        (buckets + rest) as u64 + self.boxed_bytes()
    }

    /// Bytes of the boxed entries (the headers of values in RAM, and
    /// cold entries' `Ext` boxes): part of `allocated_bytes`.
    pub fn boxed_bytes(&self) -> u64 {
        (self.boxed * std::mem::size_of::<Entry>() + self.ext * std::mem::size_of::<Ext>()) as u64
    }

    /// Bytes of one packed key's bucket and table slot (a narrow one:
    /// `table.rs`).
    pub const fn packed_bytes_per_key() -> u64 {
        (std::mem::size_of::<Bucket>() + <table::P24 as table::Pos>::BYTES + 1) as u64
    }

    /// Bytes `key` takes in this map: its bucket and table slot, and its
    /// cell's box if it has one (MEMORY USAGE).
    pub fn key_bytes(&self, key: &[u8]) -> u64 {
        let boxed = match self.get_index_of(key).map(|i| self.buckets[i].kind()) {
            Some(Kind::Full) => std::mem::size_of::<Entry>(),
            Some(Kind::Ext) => std::mem::size_of::<Ext>(),
            _ => 0,
        };
        (std::mem::size_of::<Bucket>() + self.table.slot_bytes() + 1 + boxed) as u64
    }

    /// How many entries are boxed (the rest are packed).
    pub fn boxed(&self) -> usize {
        self.boxed
    }

    pub fn get_index_of(&self, key: &[u8]) -> Option<usize> {
        let h = self.hash(key);
        let b = &self.buckets;
        self.table.find(h, |i| b[i].key() == key)
    }

    /// The position of `key`, looked for first at `hint` (where it was
    /// when its caller last saw it: a key compare instead of a probe),
    /// then through the table (a removal may have moved it since).
    pub fn get_index_of_from(&self, hint: usize, key: &[u8]) -> Option<usize> {
        match self.buckets.get(hint) {
            Some(b) if b.key() == key => Some(hint),
            _ => self.get_index_of(key),
        }
    }

    pub fn get(&self, key: &[u8]) -> Option<EntryRef<'_>> {
        self.get_index_of(key).map(|i| self.at(i))
    }

    /// The entry of `key`, boxed first if it was packed.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let i = self.get_index_of(key)?;
        Some(self.at_mut(i))
    }

    pub fn get_full(&self, key: &[u8]) -> Option<(usize, &[u8], EntryRef<'_>)> {
        let i = self.get_index_of(key)?;
        let b = &self.buckets[i];
        Some((i, b.key(), b.entry()))
    }

    pub fn get_index(&self, i: usize) -> Option<(&[u8], EntryRef<'_>)> {
        self.buckets.get(i).map(|b| (b.key(), b.entry()))
    }

    /// The key and entry at `i`, the entry boxed first if it was packed.
    pub fn get_index_mut(&mut self, i: usize) -> Option<(&[u8], &mut Entry)> {
        let (k, e, was) = self.buckets.get_mut(i)?.key_entry_mut();
        Self::boxing(&mut self.boxed, &mut self.ext, was);
        self.full.set(i, true);
        Some((k, e))
    }

    /// The entry at `i` (panics if there is none).
    pub fn at(&self, i: usize) -> EntryRef<'_> {
        self.buckets[i].entry()
    }

    /// The first position in `from..end` whose entry is boxed (so may be
    /// in RAM): the demotion hand passes packed entries without reading
    /// their buckets (invariant 4).
    pub fn next_boxed(&self, from: usize, end: usize) -> Option<usize> {
        self.full.next(from, end.min(self.buckets.len()))
    }

    /// The entry at `i` if it is boxed, borrowed (a packed entry is
    /// always cold: what lives in RAM is always boxed).
    pub fn boxed_at(&self, i: usize) -> Option<&Entry> {
        self.buckets.get(i)?.full()
    }

    /// The entry at `i`, boxed first if it was packed (panics if there is
    /// none).
    pub fn at_mut(&mut self, i: usize) -> &mut Entry {
        let (e, was) = self.buckets[i].entry_mut();
        Self::boxing(&mut self.boxed, &mut self.ext, was);
        self.full.set(i, true);
        e
    }

    /// Active defragmentation of the entry at `i`: if it is boxed and
    /// `should_move` says the box sits where moving it helps (a sparse
    /// allocator page), it moves to a new box; so do the bytes of a hot
    /// string no one else references. The value, its version and every
    /// counter stay as they were. Whether anything moved; None: a packed
    /// entry, nothing to look at.
    pub fn defrag_at(&mut self, i: usize, should_move: fn(*const u8) -> bool) -> Option<bool> {
        let e = self.buckets.get_mut(i)?.full_mut()?;
        // The box first (each boxed entry is 80 bytes of its own).
        let boxed = should_move(e as *const Entry as *const u8);
        if boxed {
            // The entry moves to a new box; the old one is freed.
            let b = &mut self.buckets[i];
            let Cell::Full(old) = b.replace(Cell::Packed([0; 15])) else {
                unreachable!("boxed above");
            };
            b.replace(Cell::Full(Box::new(*old)));
        }
        let e = self.buckets[i].full_mut()?;
        let Slot::Hot(Hot {
            value: Value::Str(b),
            ..
        }) = &mut e.slot
        else {
            return None;
        };
        if b.is_empty() || !b.is_unique() || !should_move(b.as_ptr()) {
            return Some(boxed);
        }
        *b = bytes::Bytes::copy_from_slice(b);
        Some(true)
    }

    /// Asks the CPU to bring the bucket at `i` into cache (nothing past
    /// the end); with `entry`, the boxed entry its cell points at instead,
    /// which reads the cell (so prefetch the bucket first). A pass over
    /// many positions (the journal's publishing) overlaps their misses.
    #[inline]
    pub fn prefetch(&self, i: usize, entry: bool) {
        let Some(b) = self.buckets.get(i) else {
            return;
        };
        if !entry {
            prefetch_lines(b, std::mem::size_of::<Bucket>());
        } else if let Some(e) = b.full() {
            prefetch_lines(e, std::mem::size_of::<Entry>());
        }
    }

    /// Marks the entry at `i` read at `secs` (`index::access::touch`: its
    /// CLOCK reference bit, its last access, and its access frequency
    /// under an LFU policy). A packed entry keeps no access time, so it is
    /// boxed (the demotion hand packs it again).
    pub fn mark_read(&mut self, i: usize, secs: u32, lfu: Option<crate::config::LfuParams>) {
        crate::index::access::touch(self.at_mut(i), secs, lfu);
    }

    /// Packs the entry at `i` if it can be (`cell.rs`, invariant 1);
    /// returns whether it did.
    pub fn pack(&mut self, i: usize) -> bool {
        let Some(b) = self.buckets.get_mut(i) else {
            return false;
        };
        if !b.is_full() {
            return false;
        }
        match b.try_pack() {
            Kind::Full => return false,
            Kind::Packed => {}
            Kind::Ext => self.ext += 1,
        }
        self.boxed -= 1;
        self.full.set(i, false);
        true
    }

    /// Counts a cell of form `was` that was just boxed whole.
    fn boxing(boxed: &mut usize, ext: &mut usize, was: Kind) {
        match was {
            Kind::Full => {}
            Kind::Packed => *boxed += 1,
            Kind::Ext => {
                *boxed += 1;
                *ext -= 1;
            }
        }
    }

    fn count(&mut self, c: &Cell, add: bool) {
        let n = match c.kind() {
            Kind::Full => &mut self.boxed,
            Kind::Ext => &mut self.ext,
            Kind::Packed => return,
        };
        if add {
            *n += 1;
        } else {
            *n -= 1;
        }
    }

    fn cell(&mut self, key: &Key, entry: Entry) -> Cell {
        let c = Cell::new(key.len(), entry);
        self.count(&c, true);
        c
    }

    fn take(&mut self, key_len: usize, c: Cell) -> Entry {
        self.count(&c, false);
        c.into_entry(key_len)
    }

    /// Inserts or replaces; returns the key's position and the entry it
    /// replaced.
    pub fn insert_full(&mut self, key: Key, entry: Entry) -> (usize, Option<Entry>) {
        let h = self.hash(&key);
        let b = &self.buckets;
        if let Some(i) = self.table.find(h, |i| b[i].key() == &key[..]) {
            let cell = self.cell(&key, entry);
            self.full.set(i, cell.is_full());
            let old = self.buckets[i].replace(cell);
            return (i, Some(self.take(key.len(), old)));
        }
        let i = self.buckets.len();
        assert!(i < MAX_KEYS, "a shard's database holds at most 2^32-1 keys");
        let cell = self.cell(&key, entry);
        self.full.set(i, cell.is_full());
        self.buckets.push(Bucket::new(key, cell));
        let (b, hasher) = (&self.buckets, &self.hasher);
        self.table.insert(h, i, |j| hasher.hash_one(b[j].key()));
        self.note_table();
        (i, None)
    }

    #[cfg(test)]
    pub fn insert(&mut self, key: Key, entry: Entry) -> Option<Entry> {
        self.insert_full(key, entry).1
    }

    /// Removes the bucket at `i`, moving the last bucket into its place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<(Key, Entry)> {
        let last = self.buckets.len().checked_sub(1)?;
        if i > last {
            return None;
        }
        let h = self.hash(self.buckets[i].key());
        let found = self.table.remove(h, i);
        assert!(found, "invariant 1: every position is in the table");
        if i != last {
            let hl = self.hash(self.buckets[last].key());
            let found = self.table.repoint(hl, last, i);
            assert!(found, "invariant 1: every position is in the table");
        }
        let (k, c) = self.buckets.swap_remove(i).into_parts();
        self.full.swap_remove(i, last);
        let e = self.take(k.len(), c);
        Some((k, e))
    }

    #[cfg(test)]
    pub fn swap_remove(&mut self, key: &[u8]) -> Option<Entry> {
        let i = self.get_index_of(key)?;
        self.swap_remove_index(i).map(|(_, e)| e)
    }

    /// Gives back room deletion or eviction left: the buckets' spare
    /// segment (`segs.rs`), and the table's room when under a quarter of
    /// its slots are used (Redis shrinks a dict under a tenth, but a cold
    /// key's eviction frees only its bucket here, so the table is much of
    /// what eviction can win), keeping room for half as many keys again
    /// (a quarter to a half of the slots then used, so no shrink follows
    /// at once). Whether it gave anything back. Without it, 32 shards that
    /// had held many keys kept 5.2 MB for one key, over a RAM budget of
    /// 8 MB, so every write evicted more keys.
    pub fn shrink_if_sparse(&mut self) -> bool {
        let mut shrunk = self.buckets.shrink();
        self.full.shrink(self.buckets.len());
        let slots = self.table.layout().0;
        let len = self.buckets.len();
        if slots > SHRINK_MIN_SLOTS && len * 4 < slots {
            let (b, hasher) = (&self.buckets, &self.hasher);
            self.table
                .shrink_to(len + len / 2, |j| hasher.hash_one(b[j].key()));
            self.note_table();
            shrunk = true;
        }
        shrunk
    }

    /// Room for `n` more keys without growing either array.
    pub fn reserve_exact(&mut self, n: usize) {
        self.buckets.reserve_exact(n);
        let (b, hasher) = (&self.buckets, &self.hasher);
        self.table.reserve(n, |j| hasher.hash_one(b[j].key()));
        self.note_table();
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], EntryRef<'_>)> + '_ {
        self.buckets.iter().map(|b| (b.key(), b.entry()))
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = EntryRef<'_>> + DoubleEndedIterator + '_ {
        self.buckets.iter().map(|b| b.entry())
    }

    /// Keeps the entries `f` approves, in their order; rebuilds the table.
    #[cfg(test)]
    pub fn retain(&mut self, mut f: impl FnMut(&Key, &Entry) -> bool) {
        let before = self.buckets.len();
        self.buckets.retain(|b| f(&Key::from(b.key()), &b.entry()));
        if self.buckets.len() != before {
            self.boxed = self.buckets.iter().filter(|b| b.is_full()).count();
            self.ext = (self.buckets.iter())
                .filter(|b| b.kind() == Kind::Ext)
                .count();
            self.rebuild_table();
        }
    }

    #[cfg(test)]
    fn rebuild_table(&mut self) {
        self.table.clear();
        self.table_base = (0, (0, 0));
        self.full.clear();
        for (i, b) in self.buckets.iter().enumerate() {
            self.full.set(i, b.is_full());
        }
        let (b, hasher) = (&self.buckets, &self.hasher);
        let rehash = |j: usize| hasher.hash_one(b[j].key());
        for i in 0..b.len() {
            self.table.insert(rehash(i), i, rehash);
        }
        self.note_table();
    }
}

impl IntoIterator for KeyMap {
    type Item = (Key, Entry);
    type IntoIter = std::iter::Map<
        std::iter::Flatten<std::vec::IntoIter<Vec<Bucket>>>,
        fn(Bucket) -> (Key, Entry),
    >;
    fn into_iter(self) -> Self::IntoIter {
        fn unpack(b: Bucket) -> (Key, Entry) {
            let (k, c) = b.into_parts();
            let e = c.into_entry(k.len());
            (k, e)
        }
        self.buckets.into_iter().map(unpack)
    }
}

/// Prefetches the cache lines of `len` bytes at `p` (a hint: no load, no
/// fault, whatever the address).
#[inline]
pub fn prefetch_lines<T: ?Sized>(p: &T, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = p as *const T as *const u8 as usize;
        let end = start + len.max(1) - 1;
        let mut line = start & !63;
        while line <= end {
            // SAFETY: a prefetch never faults or reads memory into the
            // program; any address is allowed.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line as *const i8) };
            line += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}

#[cfg(test)]
mod tests;

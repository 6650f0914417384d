//! The map's hash table of positions (`KeyMap::table`): hashbrown's table
//! of the positions of the map's buckets, found by their keys' hashes.
//!
//! A position takes 3 bytes while the map holds fewer than `NARROW_MAX`
//! keys (16.7M: every map of a database under a billion keys, with 64
//! shards), 4 bytes after: a slot is then 4 bytes with its control byte
//! where it was 5, a fifth of the table.
//!
//! Invariants:
//! 1. A narrow table holds only positions below `NARROW_MAX`: `insert`
//!    and `reserve` widen it first when a position would not fit. (The
//!    table holds positions `0..len`, map invariant 1, so its length says
//!    which positions it has.)
//! 2. The table never goes back to narrow (a map that held that many keys
//!    is likely to again; widening costs one rehash of the whole table).

use hashbrown::HashTable;

/// Positions a narrow table holds: `0..NARROW_MAX` (invariant 1).
#[cfg(not(test))]
pub const NARROW_MAX: usize = 1 << 24;
/// (Small in tests, so they cross it.)
#[cfg(test)]
pub const NARROW_MAX: usize = 1 << 10;

/// A position as a table stores it.
pub trait Pos: Copy {
    /// Bytes of one slot's value (the layout `prefetch` relies on).
    const BYTES: usize;
    fn new(i: usize) -> Self;
    fn get(self) -> usize;
}

impl Pos for u32 {
    const BYTES: usize = 4;
    fn new(i: usize) -> u32 {
        i as u32
    }
    fn get(self) -> usize {
        self as usize
    }
}

/// A position below 2^24 in 3 bytes.
#[derive(Clone, Copy)]
pub struct P24([u8; 3]);

impl Pos for P24 {
    const BYTES: usize = 3;
    fn new(i: usize) -> P24 {
        debug_assert!(i < 1 << 24);
        let b = (i as u32).to_le_bytes();
        P24([b[0], b[1], b[2]])
    }
    fn get(self) -> usize {
        let [a, b, c] = self.0;
        u32::from_le_bytes([a, b, c, 0]) as usize
    }
}

#[derive(Clone)]
pub enum Table {
    Narrow(HashTable<P24>),
    Wide(HashTable<u32>),
}

impl Default for Table {
    fn default() -> Table {
        Table::Narrow(HashTable::new())
    }
}

/// Runs `$e` with `$t` bound to the table, whichever its width.
macro_rules! each {
    ($table:expr, $t:ident => $e:expr) => {
        match $table {
            Table::Narrow($t) => $e,
            Table::Wide($t) => $e,
        }
    };
}

impl Table {
    /// The position whose slot `hash` finds and `eq` accepts.
    #[inline]
    pub fn find(&self, hash: u64, mut eq: impl FnMut(usize) -> bool) -> Option<usize> {
        each!(self, t => t.find(hash, |p| eq(p.get())).map(|p| p.get()))
    }

    /// Adds position `i` (not in the table) under `hash`; `rehash` gives
    /// a stored position's hash if the table grows or widens.
    pub fn insert(&mut self, hash: u64, i: usize, rehash: impl Fn(usize) -> u64) {
        if i >= NARROW_MAX {
            self.widen(&rehash);
        }
        each!(self, t => {
            t.insert_unique(hash, Pos::new(i), |p| rehash(p.get()));
        })
    }

    /// Removes position `i`, found under `hash`; whether it was there.
    pub fn remove(&mut self, hash: u64, i: usize) -> bool {
        each!(self, t => match t.find_entry(hash, |p| p.get() == i) {
            Ok(slot) => {
                slot.remove();
                true
            }
            Err(_) => false,
        })
    }

    /// Makes the slot of position `from` (found under `hash`) hold `to`;
    /// whether it was there.
    pub fn repoint(&mut self, hash: u64, from: usize, to: usize) -> bool {
        each!(self, t => match t.find_mut(hash, |p| p.get() == from) {
            Some(p) => {
                *p = Pos::new(to);
                true
            }
            None => false,
        })
    }

    /// Room for `n` more positions (widened first if they would not fit
    /// in 3 bytes).
    pub fn reserve(&mut self, n: usize, rehash: impl Fn(usize) -> u64) {
        if self.len() + n > NARROW_MAX {
            self.widen(&rehash);
        }
        each!(self, t => t.reserve(n, |p| rehash(p.get())))
    }

    fn len(&self) -> usize {
        each!(self, t => t.len())
    }

    /// Gives back room beyond `n` positions (at least its length).
    pub fn shrink_to(&mut self, n: usize, rehash: impl Fn(usize) -> u64) {
        each!(self, t => t.shrink_to(n, |p| rehash(p.get())))
    }

    /// A narrow table's positions (`0..len`) in 4-byte slots (invariant
    /// 1); a wide table stays as it is.
    fn widen(&mut self, rehash: &impl Fn(usize) -> u64) {
        if matches!(self, Table::Wide(_)) {
            return;
        }
        let len = self.len();
        let mut w = HashTable::with_capacity(len + 1);
        for i in 0..len {
            w.insert_unique(rehash(i), i as u32, |p| rehash(*p as usize));
        }
        *self = Table::Wide(w);
    }

    #[cfg(test)]
    pub fn is_narrow(&self) -> bool {
        matches!(self, Table::Narrow(_))
    }

    pub fn allocation_size(&self) -> usize {
        each!(self, t => t.allocation_size())
    }

    /// What the prefetch hints' addresses depend on: the bucket count and
    /// the slot width (`slot_bytes`).
    pub fn layout(&self) -> (usize, usize) {
        (each!(self, t => t.num_buckets()), self.slot_bytes())
    }

    /// Bytes of a slot's value (3 or 4; the control byte is apart).
    pub fn slot_bytes(&self) -> usize {
        match self {
            Table::Narrow(_) => P24::BYTES,
            Table::Wide(_) => u32::BYTES,
        }
    }

    /// The index of the bucket holding position `i`, found under `hash`.
    pub fn bucket_of(&self, hash: u64, i: usize) -> Option<usize> {
        each!(self, t => t.find_bucket_index(hash, |p| p.get() == i))
    }

    /// The address of bucket `idx`'s value.
    pub fn slot_addr(&self, idx: usize) -> Option<usize> {
        each!(self, t => t.get_bucket(idx).map(|p| p as *const _ as usize))
    }

    /// The position in the first full bucket `hash` probes that its
    /// control byte matches (a key's, but for a 1 in 128 collision).
    pub fn first_match(&self, hash: u64) -> Option<usize> {
        each!(self, t => {
            let idx = t.iter_hash_buckets(hash).next()?;
            t.get_bucket(idx).map(|p| p.get())
        })
    }

    #[cfg(test)]
    pub fn clear(&mut self) {
        *self = Table::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_position_reads_back() {
        for i in [0, 1, 255, 256, 65_535, 65_536, (1 << 24) - 1] {
            assert_eq!(P24::new(i).get(), i);
        }
        assert_eq!(std::mem::size_of::<P24>(), 3);
    }
}

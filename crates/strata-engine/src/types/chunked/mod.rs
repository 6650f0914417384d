//! Chunked collections (docs/collections.md): a big hash or set whose
//! elements are partitioned by a stable 64-bit hash into *parts*. A part
//! holds the elements whose hash falls in one dyadic range
//! `[low, low + 2^(64 - depth))` and is one flash record (kind 9, a
//! *chunk*): the unit that is written, demoted, fetched and collected, so a
//! change rewrites the parts it touched, never the whole collection.
//!
//! This module owns the partitioning and each part's bookkeeping; the
//! engine decides when parts are written, dropped from RAM or loaded.
//!
//! Invariants:
//! 1. The parts are sorted by `low` and cover `[0, 2^64)` exactly, without
//!    overlap.
//! 2. An element lives in the part whose range holds `elem_hash(element)`.
//! 3. `count` and `body` of every part are exact whether or not it is
//!    resident; the collection's totals are their sums, and `resident` is
//!    the sum of `body` over the parts in RAM.
//! 4. A part not in RAM is clean and has a record (`loc`).
//! 5. A part's `loc`, when set, is a record whose range holds the part's
//!    range and whose elements, filtered to the part's range, are the
//!    part's elements as of record `seq`; while `dirty` the part changed
//!    after that record.
//! 6. Parts never merge. A part splits in two when its body passes
//!    [`CHUNK_MAX`] (if it has two elements or more and is not at
//!    [`MAX_DEPTH`]); both halves keep the parent's record as their `loc`,
//!    one reference more, which the engine retains (`take_new_refs`).
//! 7. `changes` lists every changed part's `low` and counts the changed
//!    parts: a part becomes changed only through `mark_dirty` (or is born
//!    so, listed), and clean only by `published`.

//!
//! Rooms: this file holds the collection (`Chunked`: partitioning, splits,
//! scans, totals); `io` what the log and tiering do to its parts (the
//! list of changed parts, encoding, publishing, eviction, installing a
//! record); `part` one part, packed into 32 bytes, and its elements (in
//! RAM as a map or as the packed chunk body) and the chunk body's
//! decoding; `dir` how the engine sees it (`parts::Dir`, shared with every
//! chunked type). `list/` and
//! `zset/` are the chunked lists and sorted sets (the latter's member
//! parts are a `Chunked`).

mod blind;
mod dir;
mod io;
mod list;
mod part;
mod peek;
mod zset;

pub use blind::Filter;
pub use list::{measure_list, measure_list_range, ChunkedList};
pub use part::{decode_elems, measure_elems, Data, Elem, Fields, Part, PartMap};
pub use zset::{
    cmp_zkey, decode_order, in_range, measure_order, unzkey, zkey, ChunkedZSet, OrderInfo, Score,
    ORDER_DEPTH,
};

use super::packed_len;
use super::parts::{elem_hash, Changes, DirHead, PartInfo, ScanStep, MAX_DEPTH};
use crate::base::FlashLoc;

/// A part splits when its packed body passes this many bytes.
pub const CHUNK_MAX: usize = 8 * 1024;
/// A big hash or set becomes chunked when its packed form passes this many
/// bytes: below it, one packed record costs less RAM (a directory is ~220
/// bytes plus 32 per part) and one read of it is as fast as one of a part.
pub const CHUNKED_AT: usize = 32 * 1024;
/// A chunked hash (`V` = value) or set (`V` = ()).
#[derive(Clone, Debug)]
pub struct Chunked<V> {
    /// The incarnation and its head record.
    pub head: DirHead,
    parts: Vec<Part<V>>,
    len: usize,
    body: usize,
    resident: usize,
    /// Parts in RAM.
    resident_parts: usize,
    /// Records that got one more reference by a split (invariant 6).
    new_refs: Vec<FlashLoc>,
    /// Where the demoter's hand stopped (`Dir::clock_pass`; a hint).
    pub(super) hand: usize,
    /// The changed parts, by their first hash (invariant 7).
    changes: Changes<u64>,
    /// RAM the parts' membership filters take (`blind`).
    filter_ram: usize,
    /// Elements added blindly since the journal last looked (`blind`).
    blind_adds: u64,
    /// Images of parts on flash read for one command (`peek`).
    peeks: Vec<peek::Peek>,
    /// The last version given to a part (`next_ver`).
    vers: u32,
}

impl<V: Elem> Chunked<V> {
    /// A chunked collection of `elems` (all parts in RAM and dirty).
    pub fn build(cid: u64, elems: impl IntoIterator<Item = (Box<[u8]>, V)>) -> Chunked<V> {
        let mut c = Chunked {
            head: DirHead::new(cid),
            parts: vec![Part::new(
                Fields::default(),
                true,
                false,
                Some(Data::Map(Box::default())),
            )],
            len: 0,
            body: 0,
            resident: 0,
            resident_parts: 1,
            new_refs: Vec::new(),
            hand: 0,
            changes: Changes::of(vec![0]),
            filter_ram: 0,
            blind_adds: 0,
            peeks: Vec::new(),
            vers: 0,
        };
        for (k, v) in elems {
            c.insert(&k, v);
        }
        c
    }

    /// A collection rebuilt from a directory (recovery): each part on
    /// flash at its record, or, without one, empty in RAM and dirty (a
    /// range whose records are gone). `parts` must satisfy invariant 1.
    pub fn from_infos(
        cid: u64,
        parts: &[PartInfo],
        head_loc: Option<FlashLoc>,
        head_seq: u64,
    ) -> Chunked<V> {
        let parts = parts
            .iter()
            .map(|p| {
                let cold = p.loc.is_some();
                let f = Fields {
                    key: p.low,
                    tag: p.depth,
                    count: if cold { p.count } else { 0 },
                    body: if cold { p.body } else { 0 },
                    loc: p.loc,
                    seq: p.seq,
                };
                // (A checkpoint's record may be of a wider range: not own.)
                let data = (!cold).then(|| Data::Map(Box::default()));
                let mut part = Part::new(f, !cold, false, data);
                part.set_referenced(false);
                part
            })
            .collect();
        Chunked::from_parts(DirHead::written(cid, head_loc, head_seq), parts)
    }

    /// A collection of these parts. `parts` must satisfy invariant 1.
    fn from_parts(head: DirHead, parts: Vec<Part<V>>) -> Chunked<V> {
        let len = parts.iter().map(|p| p.count() as usize).sum();
        let body = parts.iter().map(|p| p.body() as usize).sum();
        let resident = parts
            .iter()
            .filter(|p| p.is_resident())
            .map(|p| p.body() as usize)
            .sum();
        let resident_parts = parts.iter().filter(|p| p.is_resident()).count();
        let changes = Changes::of(
            parts
                .iter()
                .filter(|p| p.dirty())
                .map(|p| p.low())
                .collect(),
        );
        Chunked {
            head,
            parts,
            len,
            body,
            resident,
            resident_parts,
            new_refs: Vec::new(),
            hand: 0,
            changes,
            filter_ram: 0,
            blind_adds: 0,
            peeks: Vec::new(),
            vers: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Packed bytes of all elements.
    pub fn body_len(&self) -> usize {
        self.body
    }
    /// Packed bytes of the elements in RAM.
    pub fn resident_bytes(&self) -> usize {
        self.resident
    }
    pub fn parts(&self) -> &[Part<V>] {
        &self.parts
    }
    /// RAM the parts' entries take: 32 bytes each, and a wide part's
    /// fields (`part` invariant 1).
    pub fn entries_bytes(&self) -> usize {
        self.parts.capacity() * std::mem::size_of::<Part<V>>()
            + self.parts.iter().map(Part::wide_bytes).sum::<usize>()
    }
    pub fn all_resident(&self) -> bool {
        self.resident == self.body && self.parts.iter().all(|p| p.is_resident())
    }

    /// Index of the part holding hash `h` (invariant 1).
    pub fn part_of(&self, h: u64) -> usize {
        self.parts.partition_point(|p| p.low() <= h) - 1
    }

    /// The value bytes of `elem` (empty for a set member); None if absent
    /// (or, a caller's error, if its part is not in RAM: the engine loads
    /// the parts a command names).
    pub fn get(&self, elem: &[u8]) -> Option<&[u8]> {
        let h = elem_hash(elem);
        let i = self.part_of(h);
        let p = &self.parts[i];
        let Some(d) = p.elems() else {
            // A part read by a peek (`peek`), or on flash whose filter
            // rules `elem` out (a blind add's plan did not read it): not
            // there.
            if self.peeked(i) {
                return self.peek_get(i, elem);
            }
            debug_assert!(
                p.filter().is_some_and(|f| !f.may_contain(h)),
                "part of an element not loaded"
            );
            return None;
        };
        d.get(elem)
    }

    pub fn contains(&self, elem: &[u8]) -> bool {
        self.get(elem).is_some()
    }

    /// Part `i`'s elements, to change (None if not in RAM). A part still
    /// as its record was read keeps that body as the base of its chain, so
    /// the journal logs its first change as a change, not as its image
    /// (`parts::chains`).
    fn changing(&mut self, i: usize) -> Option<&mut PartMap<V>> {
        let p = &mut self.parts[i];
        let (loc, dirty, low, depth, seq) = (p.loc(), p.dirty(), p.low(), p.depth(), p.seq());
        let d = p.elems_mut()?;
        if let (Data::Packed(b), Some(loc), false) = (&*d, loc, dirty) {
            let name = (low, depth);
            if !self.head.chains.has(name) {
                let chain = crate::types::parts::PartChain::read(loc, seq, b.clone());
                self.head.chains.insert(name, chain);
            }
        }
        Some(d.map_mut())
    }

    /// Sets `elem` to `v`; returns whether it is new. Splits the part if
    /// it grew past `CHUNK_MAX` (invariant 6).
    pub fn insert(&mut self, elem: &[u8], v: V) -> bool {
        let h = elem_hash(elem);
        let i = self.part_of(h);
        if !self.parts[i].is_resident() && self.blind_ok(i, h) {
            // New, as its part's filter says (`blind`).
            self.add_blind(i, h, elem, v);
            return true;
        }
        let Some(m) = self.changing(i) else {
            debug_assert!(false, "part of an element not loaded");
            return false;
        };
        let add = v.packed();
        let new = match m.get_mut(elem) {
            Some(old) => {
                let sub = old.packed();
                *old = v;
                let p = &mut self.parts[i];
                p.set_size(p.count(), p.body() + add as u32 - sub as u32);
                self.body = self.body + add - sub;
                self.resident = self.resident + add - sub;
                false
            }
            None => {
                m.insert(elem.into(), v);
                let n = packed_len(elem.len()) + add;
                let p = &mut self.parts[i];
                p.set_size(p.count() + 1, p.body() + n as u32);
                self.body += n;
                self.resident += n;
                self.len += 1;
                true
            }
        };
        // (After `changing`, which may start the part's chain.)
        self.tag_change(i, h);
        let ver = self.next_ver();
        self.parts[i].set_ver(ver);
        self.mark_dirty(i);
        let p = &self.parts[i];
        if p.body() as usize > CHUNK_MAX && p.count() > 1 && p.depth() < MAX_DEPTH {
            self.split(i);
        }
        new
    }

    /// Removes `elem`; returns its value if it was there.
    pub fn remove(&mut self, elem: &[u8]) -> Option<V> {
        let h = elem_hash(elem);
        let i = self.part_of(h);
        let v = self.changing(i)?.shift_remove(elem)?;
        self.tag_change(i, h);
        self.removed(i, packed_len(elem.len()) + v.packed());
        Some(v)
    }

    /// Accounts one element of `n` packed bytes removed from part `i`.
    fn removed(&mut self, i: usize, n: usize) {
        let ver = self.next_ver();
        let p = &mut self.parts[i];
        p.set_size(p.count() - 1, p.body() - n as u32);
        p.set_ver(ver);
        self.mark_dirty(i);
        self.body -= n;
        self.resident -= n;
        self.len -= 1;
    }

    /// A version no part of the collection has had (`part` invariant 3).
    fn next_ver(&mut self) -> u32 {
        crate::types::parts::packed::next_version(&mut self.vers)
    }

    /// Splits part `i` in two halves of its range, recursively while a
    /// half is still too big.
    fn split(&mut self, i: usize) {
        let ver = self.next_ver();
        let p = &mut self.parts[i];
        let f = p.fields();
        let Some(m) = p.elems_mut().map(|d| d.map_mut()) else {
            return;
        };
        let old = (f.key, f.tag);
        let depth = f.tag + 1;
        let mid = f.key | (1u64 << (64 - depth as u32));
        let mut hi: PartMap<V> = PartMap::default();
        let mut keep: PartMap<V> = PartMap::default();
        for (k, v) in std::mem::take(m) {
            if elem_hash(&k) >= mid {
                hi.insert(k, v);
            } else {
                keep.insert(k, v);
            }
        }
        let measure = |m: &PartMap<V>| -> u32 {
            m.iter()
                .map(|(k, v)| packed_len(k.len()) + v.packed())
                .sum::<usize>() as u32
        };
        let (lo_body, hi_body) = (measure(&keep), measure(&hi));
        let (lo_count, hi_count) = (keep.len() as u32, hi.len() as u32);
        *m = keep;
        // Both halves' record is of the range before the split.
        let upper = Fields {
            key: mid,
            tag: depth,
            count: hi_count,
            body: hi_body,
            ..f
        };
        let mut half = Part::new(upper, true, false, Some(Data::Map(Box::new(hi))));
        half.set_referenced(p.referenced());
        half.set_ver(ver);
        p.set_own(false);
        p.update(|g| {
            g.tag = depth;
            g.count = lo_count;
            g.body = lo_body;
        });
        p.set_ver(ver);
        if let Some(loc) = f.loc {
            self.new_refs.push(loc);
        }
        self.mark_dirty(i);
        // The upper half is born changed.
        self.changes.born(mid);
        // Grow the directory by an eighth, not double (it is the RAM a cold
        // collection costs).
        if self.parts.len() == self.parts.capacity() {
            self.parts.reserve_exact(self.parts.len() / 8 + 4);
        }
        self.parts.insert(i + 1, half);
        self.resident_parts += 1;
        // The part's chain ends with it (`parts::chains` invariant 2).
        self.head.chains.orphan(old);
        for j in [i + 1, i] {
            let q = &self.parts[j];
            if q.body() as usize > CHUNK_MAX && q.count() > 1 && q.depth() < MAX_DEPTH {
                self.split(j);
            }
        }
    }

    /// The parts an HSCAN / SSCAN step from hash `from` for about `count`
    /// elements covers: the part holding `from` and the following ones,
    /// as many as hold `count` elements on average (at least one).
    pub fn scan_parts(&self, from: u64, count: usize) -> std::ops::Range<usize> {
        let first = self.part_of(from);
        let per_part = (self.len / self.parts.len().max(1)).max(1);
        let n = count.div_ceil(per_part).max(1);
        first..(first + n).min(self.parts.len())
    }

    /// One HSCAN / SSCAN step (the `scan_parts` must be in RAM): the
    /// elements of those parts whose hash is at least `from`, and the next
    /// cursor (the hash after the last part; 0 at the end). An element
    /// present for a whole scan is returned exactly once: the cursor only
    /// moves forward over the hash space, whatever splits meanwhile.
    pub fn scan(&self, from: u64, count: usize) -> ScanStep<'_> {
        let range = self.scan_parts(from, count);
        let mut items = Vec::new();
        let mut next = 0;
        for p in &self.parts[range] {
            if let Some(d) = p.elems() {
                items.extend(d.iter().filter(|(k, _)| elem_hash(k) >= from));
            }
            next = p.high().wrapping_add(1);
        }
        (items, next)
    }

    /// Every element, in part order (all parts must be in RAM).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        debug_assert!(self.all_resident());
        self.parts
            .iter()
            .filter_map(|p| p.elems())
            .flat_map(|d| d.iter())
    }

    /// The elements of parts `r` (they must be in RAM), in part order.
    pub fn iter_parts(
        &self,
        r: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.parts[r]
            .iter()
            .filter_map(|p| p.elems())
            .flat_map(|d| d.iter())
    }

    /// The part and position within it of the element at position `i`.
    fn locate(&self, mut i: usize) -> Option<(usize, usize)> {
        for (pi, p) in self.parts.iter().enumerate() {
            if i < p.count() as usize {
                return Some((pi, i));
            }
            i -= p.count() as usize;
        }
        None
    }

    /// The element at position `i` of `iter`'s order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let (pi, j) = self.locate(i)?;
        self.parts[pi].elems()?.get_index(j)
    }

    /// Removes the element at position `i`.
    pub fn remove_index(&mut self, i: usize) -> Option<(Box<[u8]>, V)> {
        let (pi, j) = self.locate(i)?;
        let (k, v) = self.changing(pi)?.shift_remove_index(j)?;
        self.tag_change(pi, elem_hash(&k));
        self.removed(pi, packed_len(k.len()) + v.packed());
        Some((k, v))
    }

    /// Checks invariants 1, 3 and 4 (tests).
    pub fn check(&self) -> Result<(), String> {
        let mut next = 0u64;
        let mut first = true;
        let (mut len, mut body, mut resident) = (0, 0, 0);
        for p in &self.parts {
            if !first && next == 0 {
                return Err("parts past the end".into());
            }
            if p.low() != next {
                return Err(format!("gap or overlap at {:#x}", p.low()));
            }
            first = false;
            next = p.high().wrapping_add(1);
            len += p.count() as usize;
            body += p.body() as usize;
            if let Some(m) = p.elems() {
                resident += p.body() as usize;
                if m.len() != p.count() as usize {
                    return Err("count".into());
                }
                let b: usize = m
                    .iter()
                    .map(|(k, v)| packed_len(k.len()) + V::packed_of(v))
                    .sum();
                if b != p.body() as usize {
                    return Err("body".into());
                }
                if m.iter().any(|(k, _)| !p.holds(elem_hash(k))) {
                    return Err("element out of range".into());
                }
            } else if p.dirty() || p.loc().is_none() {
                return Err("cold part without a clean record".into());
            }
        }
        if next != 0 {
            return Err("parts do not reach the end".into());
        }
        let rp = self.parts.iter().filter(|p| p.is_resident()).count();
        if (len, body, resident, rp) != (self.len, self.body, self.resident, self.resident_parts) {
            return Err("totals".into());
        }
        self.head.chains.check()
    }
}

impl<V: Elem> PartialEq for Chunked<V> {
    /// Same elements (the partitioning and residency are not compared; all
    /// parts must be in RAM).
    fn eq(&self, o: &Self) -> bool {
        self.len == o.len && self.iter().all(|(k, v)| o.get(k) == Some(v))
    }
}

#[cfg(test)]
mod tests;

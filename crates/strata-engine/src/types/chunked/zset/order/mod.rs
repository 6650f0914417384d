//! The *order* family of a chunked sorted set: every member as a *zkey*
//! (its score's bits, then its bytes) in Redis's order, cut into parts of
//! consecutive zkeys. A part covers the zkeys from its `first` (inclusive;
//! the first part's is empty, below every zkey) to the next part's `first`
//! (exclusive; the last part's range is unbounded). A part's record
//! (kind 9, depth [`ORDER_DEPTH`], `low` = the part's id) carries those two
//! bounds and the zkeys, so recovery gives every zkey the newest record
//! whose bounds hold it, as it gives a hash value the newest record of its
//! hash range.
//!
//! Invariants:
//! 1. Parts are sorted by `first`; the first part's `first` is empty; the
//!    zkeys of a part lie in its range and are sorted without duplicates.
//! 2. `count` and `body` of every part are exact whether or not it is in
//!    RAM; the family's totals are their sums.
//! 3. A part not in RAM is clean and has a record (`loc`), whose bounds
//!    hold the part's range; loading it keeps the zkeys of its range.
//! 4. A part whose range changed (a split, or a neighbour it absorbed) is
//!    dirty, so its record is written again with the new bounds.
//! 5. A part splits at its middle zkey when its body passes `CHUNK_MAX`;
//!    the new half keeps the parent's record (one reference more,
//!    `take_new_refs`). An emptied part in RAM is absorbed by a
//!    neighbour in RAM, or absorbs one; a part that leaves gives its
//!    reference up (`take_dropped_refs`). An empty part may remain (its
//!    neighbours were on flash); it never leaves RAM.
//! 6. Part ids are unique within the collection for the run (names that
//!    the journal and loads find parts by).

use super::record::key_bytes;
use crate::base::FlashLoc;
use crate::types::chunked::CHUNK_MAX;
use crate::types::parts::packed::{Fields, KeyCodec, Packed};
use crate::types::parts::Changes;
use std::cmp::Ordering;

use super::record::cmp_zkey;

mod io;

pub use crate::base::ORDER_DEPTH;

/// How an order part packs its name, its id (`parts::packed`).
#[derive(Clone, Copy, Debug)]
pub struct IdKey;

impl KeyCodec for IdKey {
    fn pack(id: u64, _: u8) -> Option<u64> {
        Some(id)
    }
    fn unpack(bits: u64) -> (u64, u8) {
        (bits, 0)
    }
}

/// One part of the order family: its bookkeeping packed (32 bytes, with
/// its zkeys in the box when in RAM) and its bound.
#[derive(Clone, Debug)]
pub struct OPart {
    rec: Packed<Vec<Box<[u8]>>, IdKey>,
    /// Lower bound of the range (inclusive; empty for the first part).
    pub first: Box<[u8]>,
}

impl crate::types::parts::packed::PartData for Vec<Box<[u8]>> {}

impl std::ops::Deref for OPart {
    type Target = Packed<Vec<Box<[u8]>>, IdKey>;
    fn deref(&self) -> &Self::Target {
        &self.rec
    }
}

impl std::ops::DerefMut for OPart {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.rec
    }
}

/// An order part's entry (its bound's bytes besides) is RAM every part
/// on flash costs.
const _: () = assert!(std::mem::size_of::<OPart>() == 48);

impl OPart {
    /// Part `id` from `first` on, of these fields (`key` is ignored).
    fn new(
        id: u32,
        first: Box<[u8]>,
        f: Fields,
        dirty: bool,
        keys: Option<Vec<Box<[u8]>>>,
    ) -> OPart {
        let f = Fields {
            key: u64::from(id),
            ..f
        };
        OPart {
            rec: Packed::new(f, dirty, false, keys),
            first,
        }
    }
    pub fn id(&self) -> u32 {
        self.name().0 as u32
    }
    pub fn is_resident(&self) -> bool {
        self.data().is_some()
    }
    fn keys(&self) -> &[Box<[u8]>] {
        self.data().map_or(&[], |k| &k[..])
    }
}

impl Order {
    /// RAM the parts' entries take, with their bounds.
    pub fn entries_bytes(&self) -> usize {
        self.parts.capacity() * std::mem::size_of::<OPart>()
            + self.parts.iter().map(|p| p.first.len()).sum::<usize>()
    }
}

/// The order family (module doc).
#[derive(Clone, Debug)]
pub struct Order {
    pub(super) parts: Vec<OPart>,
    next_id: u32,
    len: usize,
    body: usize,
    resident: usize,
    resident_parts: usize,
    new_refs: Vec<FlashLoc>,
    dropped: Vec<FlashLoc>,
    pub(super) hand: usize,
    /// The element count of each run of `BLOCK` parts, so a rank is found
    /// in O(parts / BLOCK + BLOCK), not O(parts).
    blocks: Vec<u64>,
    /// The changed parts, by a zkey inside each one's range (its `first`
    /// when marked).
    changes: Changes<Box<[u8]>>,
    /// The last version given to a part (`parts::packed` invariant 3).
    vers: u32,
}

/// Parts per entry of `Order::blocks`.
const BLOCK: usize = 64;

/// What recovery or a checkpoint knows of one order part.
#[derive(Clone, Debug)]
pub struct OrderInfo {
    pub id: u32,
    pub first: Box<[u8]>,
    pub count: u32,
    pub body: u32,
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

impl Order {
    /// The family of these zkeys (sorted), all parts in RAM and dirty.
    pub fn build(keys: Vec<Box<[u8]>>) -> Order {
        let mut o = Order {
            parts: Vec::new(),
            next_id: 0,
            len: 0,
            body: 0,
            resident: 0,
            resident_parts: 0,
            new_refs: Vec::new(),
            dropped: Vec::new(),
            hand: 0,
            vers: 0,
            blocks: Vec::new(),
            changes: Changes::of(Vec::new()),
        };
        let mut cur: Vec<Box<[u8]>> = Vec::new();
        let mut bytes = 0;
        let flush = |o: &mut Order, cur: &mut Vec<Box<[u8]>>, bytes: &mut usize| {
            let first = if o.parts.is_empty() {
                Box::default()
            } else {
                cur[0].clone()
            };
            o.push_new(first, std::mem::take(cur), *bytes);
            *bytes = 0;
        };
        for k in keys {
            let n = key_bytes(&k);
            if !cur.is_empty() && bytes + n > CHUNK_MAX * 3 / 4 {
                flush(&mut o, &mut cur, &mut bytes);
            }
            bytes += n;
            cur.push(k);
        }
        if !cur.is_empty() || o.parts.is_empty() {
            flush(&mut o, &mut cur, &mut bytes);
        }
        o.rebuild_blocks();
        o
    }

    /// Recounts `blocks` (after parts were added or removed).
    fn rebuild_blocks(&mut self) {
        self.blocks = self
            .parts
            .chunks(BLOCK)
            .map(|c| c.iter().map(|p| p.count() as u64).sum())
            .collect();
    }

    fn push_new(&mut self, first: Box<[u8]>, keys: Vec<Box<[u8]>>, body: usize) {
        let id = self.next_id;
        self.next_id += 1;
        self.len += keys.len();
        self.body += body;
        self.resident += body;
        self.resident_parts += 1;
        self.changes.born(first.clone());
        let f = Fields {
            count: keys.len() as u32,
            body: body as u32,
            ..Fields::default()
        };
        self.parts.push(OPart::new(id, first, f, true, Some(keys)));
    }

    /// The family rebuilt from a directory (recovery, checkpoint): each
    /// part on flash at its record or, without one, empty in RAM and dirty.
    pub fn from_infos(infos: &[OrderInfo]) -> Order {
        let parts: Vec<OPart> = infos
            .iter()
            .map(|p| {
                // An empty part stays in RAM (invariant 5).
                let cold = p.loc.is_some() && p.count > 0;
                let f = Fields {
                    count: if cold { p.count } else { 0 },
                    body: if cold { p.body } else { 0 },
                    loc: p.loc,
                    seq: p.seq,
                    ..Fields::default()
                };
                let keys = (!cold).then(Vec::new);
                let mut part = OPart::new(p.id, p.first.clone(), f, p.loc.is_none(), keys);
                part.set_referenced(false);
                part
            })
            .collect();
        let mut o = Order {
            next_id: parts.iter().map(|p| p.id()).max().map_or(0, |m| m + 1),
            len: parts.iter().map(|p| p.count() as usize).sum(),
            body: parts.iter().map(|p| p.body() as usize).sum(),
            resident: 0,
            resident_parts: parts.iter().filter(|p| p.is_resident()).count(),
            parts,
            new_refs: Vec::new(),
            dropped: Vec::new(),
            hand: 0,
            vers: 0,
            blocks: Vec::new(),
            changes: Changes::of(Vec::new()),
        };
        o.changes = Changes::of(
            o.parts
                .iter()
                .filter(|p| p.dirty())
                .map(|p| p.first.clone())
                .collect(),
        );
        if o.parts.is_empty() {
            o.push_new(Box::default(), Vec::new(), 0);
        }
        o.rebuild_blocks();
        o
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn body_len(&self) -> usize {
        self.body
    }
    pub fn resident_bytes(&self) -> usize {
        self.resident
    }
    pub fn resident_parts(&self) -> usize {
        self.resident_parts
    }
    pub fn part_count(&self) -> usize {
        self.parts.len()
    }
    pub fn part(&self, i: usize) -> &OPart {
        &self.parts[i]
    }
    pub fn part_mut(&mut self, i: usize) -> &mut OPart {
        &mut self.parts[i]
    }
    pub fn all_resident(&self) -> bool {
        self.parts.iter().all(|p| p.is_resident())
    }

    /// The part whose range holds zkey `k`.
    pub fn part_for(&self, k: &[u8]) -> usize {
        self.parts
            .partition_point(|p| cmp_zkey(&p.first, k) != Ordering::Greater)
            .max(1)
            - 1
    }

    /// The part with id `id` (`hint`: where it probably is).
    pub fn find_id(&self, id: u32, hint: usize) -> Option<usize> {
        if self.parts.get(hint).is_some_and(|p| p.id() == id) {
            return Some(hint);
        }
        self.parts.iter().position(|p| p.id() == id)
    }

    /// The part and index within it of rank `r`.
    pub fn locate(&self, mut r: usize) -> Option<(usize, usize)> {
        let mut r64 = r as u64;
        let b = self.blocks.iter().position(|&n| {
            if r64 < n {
                return true;
            }
            r64 -= n;
            false
        })?;
        r = r64 as usize;
        for (i, p) in self.parts.iter().enumerate().skip(b * BLOCK).take(BLOCK) {
            if r < p.count() as usize {
                return Some((i, r));
            }
            r -= p.count() as usize;
        }
        None
    }

    /// The zkey at rank `r` (its part must be in RAM).
    pub fn get_rank(&self, r: usize) -> Option<&[u8]> {
        let (i, j) = self.locate(r)?;
        self.parts[i].keys().get(j).map(|k| &**k)
    }

    /// Elements before part `i`.
    pub fn before(&self, i: usize) -> usize {
        let b = i / BLOCK;
        let whole: u64 = self.blocks[..b.min(self.blocks.len())].iter().sum();
        let rest: usize = self.parts[b * BLOCK..i]
            .iter()
            .map(|p| p.count() as usize)
            .sum();
        whole as usize + rest
    }

    /// Part `i`'s count changed by `d` (no part was added or removed).
    fn counted(&mut self, i: usize, d: i64) {
        if let Some(b) = self.blocks.get_mut(i / BLOCK) {
            *b = b.wrapping_add_signed(d);
        }
    }

    /// Rank of zkey `k` (its part must be in RAM).
    pub fn rank(&self, k: &[u8]) -> Option<usize> {
        let i = self.part_for(k);
        let j = self.parts[i]
            .keys()
            .binary_search_by(|x| cmp_zkey(x, k))
            .ok()?;
        Some(self.before(i) + j)
    }

    /// The part where `below` (true up to some zkey, false after it) turns,
    /// from the parts' lower bounds alone.
    pub fn turning_part(&self, below: impl Fn(&[u8]) -> bool) -> usize {
        self.parts[1..].partition_point(|p| below(&p.first))
    }

    /// How many leading zkeys satisfy `below` (true up to some zkey, false
    /// after it); the part where it turns (`turning_part`) must be in RAM.
    pub fn rank_where(&self, below: impl Fn(&[u8]) -> bool) -> usize {
        let i = self.turning_part(&below);
        self.before(i) + self.parts[i].keys().partition_point(|k| below(k))
    }

    /// The parts holding ranks `[a, b)`.
    pub fn parts_for_ranks(&self, a: usize, b: usize) -> std::ops::Range<usize> {
        if a >= b {
            return 0..0;
        }
        let first = self.locate(a).map_or(self.parts.len(), |(i, _)| i);
        let last = self.locate(b - 1).map_or(self.parts.len(), |(i, _)| i + 1);
        first..last.max(first)
    }

    /// The zkeys of ranks `[a, b)` in order (their parts must be in RAM).
    pub fn range(&self, a: usize, b: usize) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        let parts = self.parts_for_ranks(a, b);
        let start = parts.start;
        let mut at = if start < self.parts.len() {
            self.before(start)
        } else {
            0
        };
        let spans: Vec<(usize, usize, usize)> = parts
            .map(|i| {
                let n = self.parts[i].count() as usize;
                let lo = a.saturating_sub(at).min(n);
                let hi = b.saturating_sub(at).min(n);
                at += n;
                (i, lo, hi)
            })
            .collect();
        spans
            .into_iter()
            .flat_map(move |(i, lo, hi)| self.parts[i].keys()[lo.min(hi)..hi].iter().map(|k| &**k))
    }

    /// Every zkey in order (every part must be in RAM).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.parts
            .iter()
            .flat_map(|p| p.keys().iter().map(|k| &**k))
    }

    /// The keys of part `i` to change, marking it changed; None (and no
    /// change) if it is not in RAM (a caller's error: invariant 3 keeps a
    /// part on flash clean).
    fn changed(&mut self, i: usize) -> Option<&mut Vec<Box<[u8]>>> {
        let p = &self.parts[i];
        debug_assert!(p.is_resident(), "order part not loaded");
        p.data()?;
        self.mark_range_changed(i);
        self.parts[i].data_mut()
    }

    /// Whether the part holding zkey `k` is in RAM.
    pub fn holds_resident(&self, k: &[u8]) -> bool {
        self.parts[self.part_for(k)].is_resident()
    }

    /// Inserts zkey `k` (not present).
    pub fn insert(&mut self, k: Box<[u8]>) {
        let i = self.part_for(&k);
        let n = key_bytes(&k);
        let Some(keys) = self.changed(i) else {
            return;
        };
        let at = keys.partition_point(|x| cmp_zkey(x, &k) == Ordering::Less);
        keys.insert(at, k);
        let p = &mut self.parts[i];
        let size = (p.count() + 1, p.body() + n as u32);
        p.set_size(size.0, size.1);
        self.len += 1;
        self.body += n;
        self.resident += n;
        let split = p.body() as usize > CHUNK_MAX && p.count() > 1;
        let parts = self.parts.len();
        if split {
            self.split(i);
        }
        self.tidy(i);
        if self.parts.len() == parts {
            self.counted(i, 1);
        } else {
            self.rebuild_blocks();
        }
    }

    /// Removes zkey `k`; returns whether it was there.
    pub fn remove(&mut self, k: &[u8]) -> bool {
        let i = self.part_for(k);
        let Some(keys) = self.parts[i].data() else {
            debug_assert!(false, "order part not loaded");
            return false;
        };
        let Ok(at) = keys.binary_search_by(|x| cmp_zkey(x, k)) else {
            return false;
        };
        let Some(keys) = self.changed(i) else {
            return false;
        };
        let n = key_bytes(&keys.remove(at));
        let p = &mut self.parts[i];
        let size = (p.count() - 1, p.body() - n as u32);
        p.set_size(size.0, size.1);
        self.len -= 1;
        self.body -= n;
        self.resident -= n;
        let parts = self.parts.len();
        self.tidy(i);
        if self.parts.len() == parts {
            self.counted(i, -1);
        } else {
            self.rebuild_blocks();
        }
        true
    }

    /// Splits part `i` at its middle zkey (invariant 5), again while a
    /// half is too big.
    fn split(&mut self, i: usize) {
        let p = &mut self.parts[i];
        let Some(keys) = p.data_mut() else {
            return;
        };
        let mid = keys.len() / 2;
        let hi: Vec<Box<[u8]>> = keys.split_off(mid);
        let hi_body: usize = hi.iter().map(|k| key_bytes(k)).sum();
        let lo_count = keys.len() as u32;
        let lo_body = p.body() - hi_body as u32;
        p.set_size(lo_count, lo_body);
        let (loc, seq, referenced) = (p.loc(), p.seq(), p.referenced());
        self.mark_range_changed(i);
        // The upper half is born changed.
        self.changes.born(hi[0].clone());
        if let Some(l) = loc {
            self.new_refs.push(l);
        }
        let id = self.next_id;
        self.next_id += 1;
        if self.parts.len() == self.parts.capacity() {
            self.parts.reserve_exact(self.parts.len() / 8 + 4);
        }
        self.parts.insert(i + 1, {
            let f = Fields {
                count: hi.len() as u32,
                body: hi_body as u32,
                loc,
                seq,
                ..Fields::default()
            };
            let mut q = OPart::new(id, hi[0].clone(), f, true, None);
            q.set_referenced(referenced);
            q.set_data(Some(hi));
            q
        });
        self.resident_parts += 1;
        for j in [i + 1, i] {
            let q = &self.parts[j];
            if q.body() as usize > CHUNK_MAX && q.count() > 1 {
                self.split(j);
            }
        }
    }

    /// Removes part `i` (in RAM, empty) from the directory.
    fn drop_part(&mut self, i: usize) {
        let p = self.parts.remove(i);
        debug_assert_eq!(p.count(), 0);
        if p.dirty() {
            // Its range joins a neighbour's, marked changed by the caller.
            self.changes.cleaned();
        }
        self.dropped.extend(p.loc());
        self.resident_parts -= 1;
        if self.hand > i {
            self.hand -= 1;
        }
    }

    /// After part `i` changed: an empty part beside it in RAM leaves, its
    /// range joining its neighbour's (invariant 5).
    fn tidy(&mut self, mut i: usize) {
        let resident_empty = |o: &Order, j: usize| {
            o.parts
                .get(j)
                .is_some_and(|p| p.count() == 0 && p.is_resident())
        };
        // Part i empty: join a neighbour in RAM.
        if self.parts[i].count() == 0 && self.parts.len() > 1 {
            if i > 0 && self.parts[i - 1].is_resident() {
                self.drop_part(i);
                self.mark_range_changed(i - 1);
                return;
            }
            if self.parts.get(i + 1).is_some_and(|p| p.is_resident()) {
                let first = std::mem::take(&mut self.parts[i].first);
                self.drop_part(i);
                self.parts[i].first = first;
                self.mark_range_changed(i);
                return;
            }
        }
        if self.parts[i].count() == 0 {
            return;
        }
        if i + 1 < self.parts.len() && resident_empty(self, i + 1) {
            self.drop_part(i + 1);
            self.mark_range_changed(i);
        }
        if i > 0 && resident_empty(self, i - 1) {
            let first = std::mem::take(&mut self.parts[i - 1].first);
            self.drop_part(i - 1);
            i -= 1;
            self.parts[i].first = first;
            self.mark_range_changed(i);
        }
    }
}

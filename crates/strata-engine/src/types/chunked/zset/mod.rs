//! Chunked sorted sets (docs/collections.md, "Sorted sets"): two families
//! of parts under one collection id.
//! - *members*: member → score, partitioned by the member's hash exactly
//!   as a chunked hash (`Chunked<Score>`): ZSCORE and ZMSCORE read one
//!   part per member.
//! - *order*: the (score, member) pairs in Redis's order, cut into parts
//!   of consecutive zkeys (`order`): ranges by rank, score or lex read the
//!   parts that hold them; a rank is the counts of the parts before plus a
//!   position in one part.
//!
//! Invariants:
//! 1. Both families hold the same members with the same scores (bit for
//!    bit: a score of -0 stays -0): a change updates both under one lock.
//! 2. The directory presents the member parts first (indexes
//!    `0..members`), then the order parts; an order part's name is
//!    `(id, ORDER_DEPTH)`, a member part's its hash range.
//! 3. The collection's totals (`len`, `body_len`, `resident_bytes`) count
//!    both families' bytes, so RAM and flash accounting see what is held.

mod order;
mod record;

pub use order::{Order, OrderInfo, ORDER_DEPTH};
pub use record::{cmp_zkey, decode_order, in_range, measure_order, unzkey, zkey};

use super::Chunked;
use crate::base::FlashLoc;
use crate::types::parts::PartClock;
use crate::types::parts::{Dir, DirHead, PartInfo};
use crate::types::zset::{below_min, within_max};
use crate::types::Malformed;
use std::ops::Bound;

/// A member's score in the members family: the f64's bits, LE.
pub type Score = [u8; 8];

/// A chunked sorted set (module doc).
#[derive(Clone, Debug)]
pub struct ChunkedZSet {
    pub members: Chunked<Score>,
    pub order: Order,
}

impl ChunkedZSet {
    /// A chunked sorted set of these (member, score) pairs, in Redis's
    /// order, all parts in RAM and dirty.
    pub fn build<'a>(cid: u64, elems: impl Iterator<Item = (&'a [u8], f64)>) -> ChunkedZSet {
        let mut keys = Vec::new();
        let mut members = Vec::new();
        for (m, s) in elems {
            keys.push(zkey(s, m));
            members.push((Box::<[u8]>::from(m), s.to_bits().to_le_bytes()));
        }
        ChunkedZSet {
            members: Chunked::build(cid, members),
            order: Order::build(keys),
        }
    }

    /// A chunked sorted set rebuilt from its two directories.
    pub fn from_infos(
        cid: u64,
        member_parts: &[PartInfo],
        order_parts: &[OrderInfo],
        head_loc: Option<FlashLoc>,
        head_seq: u64,
    ) -> ChunkedZSet {
        ChunkedZSet {
            members: Chunked::from_infos(cid, member_parts, head_loc, head_seq),
            order: Order::from_infos(order_parts),
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Packed bytes of both families (invariant 3).
    pub fn body_len(&self) -> usize {
        self.members.body_len() + self.order.body_len()
    }
    pub fn all_resident(&self) -> bool {
        self.members.all_resident() && self.order.all_resident()
    }

    /// The score of `m` (its member part must be in RAM).
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        let b = self.members.get(m)?;
        Some(f64::from_le_bytes(b.try_into().ok()?))
    }

    /// Sets the score of `m` (its member part and the order parts of its
    /// old and new zkeys must be in RAM); returns the previous score.
    pub fn insert(&mut self, m: &[u8], score: f64) -> Option<f64> {
        if !self.resident_for(m, Some(score)) {
            debug_assert!(false, "parts of a sorted-set write not loaded");
            return None;
        }
        let prev = self.score(m);
        if prev.is_some_and(|p| p.to_bits() == score.to_bits()) {
            return prev;
        }
        if let Some(p) = prev {
            self.order.remove(&zkey(p, m));
        }
        self.members.insert(m, score.to_bits().to_le_bytes());
        self.order.insert(zkey(score, m));
        prev
    }

    /// Removes `m`; returns whether it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        if !self.resident_for(m, None) {
            debug_assert!(false, "parts of a sorted-set write not loaded");
            return false;
        }
        let Some(prev) = self.score(m) else {
            return false;
        };
        self.members.remove(m);
        self.order.remove(&zkey(prev, m));
        true
    }

    /// Whether the parts a write of `m` (to score `to`) changes are in RAM:
    /// its member part and the order parts of its old and new zkeys. A
    /// write never changes only one family (invariant 1).
    fn resident_for(&self, m: &[u8], to: Option<f64>) -> bool {
        let i = self.members.part_of(super::elem_hash(m));
        if !self.members.parts()[i].is_resident() {
            return false;
        }
        let old = self.score(m).map(|s| zkey(s, m));
        let new = to.map(|s| zkey(s, m));
        old.iter()
            .chain(new.iter())
            .all(|k| self.order.holds_resident(k))
    }

    /// 0-based rank of `m`.
    pub fn rank(&self, m: &[u8]) -> Option<usize> {
        let s = self.score(m)?;
        self.order.rank(&zkey(s, m))
    }

    /// The member and score at rank `r`.
    pub fn get_rank(&self, r: usize) -> Option<(&[u8], f64)> {
        let k = self.order.get_rank(r)?;
        let (s, m) = unzkey(k);
        Some((m, s))
    }

    /// Members and scores of ranks `[a, b)`, in order.
    pub fn range(&self, a: usize, b: usize) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.order.range(a, b).map(|k| {
            let (s, m) = unzkey(k);
            (m, s)
        })
    }

    /// How many leading members (in order) satisfy `below` on (score,
    /// member), a predicate true up to some point and false after it.
    pub fn rank_where(&self, below: impl Fn(f64, &[u8]) -> bool) -> usize {
        self.order.rank_where(|k| {
            if k.is_empty() {
                return true;
            }
            let (s, m) = unzkey(k);
            below(s, m)
        })
    }

    /// The directory's parts (order parts) holding ranks `[a, b)`.
    pub fn parts_for(&self, a: usize, b: usize) -> std::ops::Range<usize> {
        let m = self.members.part_count();
        let r = self.order.parts_for_ranks(a, b);
        r.start + m..r.end + m
    }

    /// Members and scores of ranks `[a, b)` that lie in the directory's
    /// parts `r` (order parts, in RAM), in order.
    pub fn range_in_parts(
        &self,
        r: std::ops::Range<usize>,
        a: usize,
        b: usize,
    ) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        let m = self.members.part_count();
        let (s, e) = (r.start.saturating_sub(m), r.end.saturating_sub(m));
        let lo = self.order.before(s);
        let hi = lo
            + (s..e)
                .map(|i| self.order.part(i).count() as usize)
                .sum::<usize>();
        self.range(a.max(lo), b.min(hi).max(a.max(lo)))
    }

    /// Every member with its score, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.range(0, self.len())
    }

    /// Checks both families and that they agree in size (tests).
    pub fn check(&self) -> Result<(), String> {
        self.members.check()?;
        self.order.check()?;
        if self.members.len() != self.order.len() {
            return Err(format!(
                "families disagree: {} members, {} in order",
                self.members.len(),
                self.order.len()
            ));
        }
        Ok(())
    }

    /// The order part's index in the directory.
    fn oi(&self, i: usize) -> Option<usize> {
        i.checked_sub(self.members.part_count())
    }
}

impl Dir for ChunkedZSet {
    fn head(&self) -> &DirHead {
        &self.members.head
    }
    fn head_mut(&mut self) -> &mut DirHead {
        &mut self.members.head
    }
    fn part_count(&self) -> usize {
        self.members.part_count() + self.order.part_count()
    }
    fn entries_bytes(&self) -> usize {
        self.members.entries_bytes() + self.order.entries_bytes()
    }
    fn part(&self, i: usize) -> PartInfo {
        let Some(j) = self.oi(i) else {
            return self.members.part(i);
        };
        let p = self.order.part(j);
        PartInfo {
            low: p.id() as u64,
            depth: ORDER_DEPTH,
            dirty: p.dirty(),
            resident: p.is_resident(),
            count: p.count(),
            body: p.body(),
            ver: p.ver(),
            loc: p.loc(),
            seq: p.seq(),
        }
    }
    fn part_first(&self, i: usize) -> Option<&[u8]> {
        self.oi(i).map(|j| &self.order.part(j).first[..])
    }
    fn find_part(&self, low: u64, depth: u8, hint: usize) -> Option<usize> {
        if depth != ORDER_DEPTH {
            let i = self.members.part_of(low);
            let p = self.members.part(i);
            return (p.low == low && p.depth == depth).then_some(i);
        }
        let m = self.members.part_count();
        let id = u32::try_from(low).ok()?;
        self.order
            .find_id(id, hint.saturating_sub(m))
            .map(|j| j + m)
    }
    fn part_of(&self, h: u64) -> usize {
        self.members.part_of(h)
    }
    fn any_dirty(&self) -> bool {
        self.members.any_changed() || self.order.any_changed()
    }
    fn dirty_parts(&self) -> Vec<usize> {
        let m = self.members.part_count();
        let mut v = self.members.changed_parts();
        v.extend(self.order.changed_parts().into_iter().map(|j| m + j));
        v
    }
    fn part_at(&self, i: usize) -> Option<usize> {
        self.order
            .locate(i)
            .map(|(j, _)| j + self.members.part_count())
    }
    fn scan_parts(&self, from: u64, count: usize) -> std::ops::Range<usize> {
        self.members.scan_parts(from, count)
    }
    fn hand(&mut self) -> &mut usize {
        &mut self.members.hand
    }
    fn part_clock(&mut self, i: usize) -> PartClock {
        let m = self.members.part_count();
        if i < m {
            return self.members.part_clock(i);
        }
        let p = self.order.part_mut(i - m);
        PartClock {
            // An empty part never leaves RAM (order invariant 5).
            resident: p.is_resident() && p.count() > 0,
            referenced: p.swap_referenced(false),
            dirty: p.dirty(),
            has_record: p.loc().is_some(),
            body: p.body() as usize,
        }
    }
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc) {
        match self.oi(i) {
            None => self.members.set_part_loc(i, loc),
            Some(j) => {
                if j < self.order.part_count() {
                    let p = self.order.part_mut(j);
                    let seq = p.seq();
                    p.set_loc(Some(loc), seq);
                }
            }
        }
    }
    fn parts_at(&self, loc: FlashLoc, low: u64, depth: u8, body: &[u8]) -> Vec<usize> {
        if depth != ORDER_DEPTH {
            return self.members.parts_at(loc, low, depth, body);
        }
        // The parts of one order record lie inside its bounds: the part
        // that wrote it, or the halves of a split or the pieces recovery
        // cut from it.
        let Some((lo, hi)) = record::bounds(body) else {
            return Vec::new();
        };
        let m = self.members.part_count();
        (self.order.part_for(lo)..self.order.part_count())
            .take_while(|&j| hi.is_none_or(|h| cmp_zkey(&self.order.part(j).first, h).is_lt()))
            .filter(|&j| self.order.part(j).loc() == Some(loc))
            .map(|j| j + m)
            .collect()
    }
    fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        match self.oi(i) {
            None => self.members.encode_part(i, out),
            Some(j) => self.order.encode_part(j, out),
        }
    }
    fn published(
        &mut self,
        i: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>> {
        match self.oi(i) {
            None => self.members.published(i, ver, loc, seq),
            Some(j) => self.order.published(j, ver, loc, seq),
        }
    }
    fn evict(&mut self, i: usize) -> usize {
        match self.oi(i) {
            None => self.members.evict(i),
            Some(j) => self.order.evict(j),
        }
    }
    fn swap_used(&mut self, i: usize, on: bool) -> bool {
        match self.oi(i) {
            None => Dir::swap_used(&mut self.members, i, on),
            Some(j) if j < self.order.part_count() => self.order.part_mut(j).swap_referenced(on),
            Some(_) => false,
        }
    }
    fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        named: (u64, u8),
    ) -> Result<bool, Malformed> {
        match self.oi(i) {
            None => Dir::install(&mut self.members, i, loc, body, named),
            Some(j) => self.order.install(j, loc, body),
        }
    }
    fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        let mut v = self.members.take_new_refs();
        v.extend(self.order.take_new_refs());
        v
    }
    fn take_dropped_refs(&mut self) -> Vec<FlashLoc> {
        self.order.take_dropped_refs()
    }
    fn resident_bytes(&self) -> usize {
        self.members.resident_bytes() + self.order.resident_bytes()
    }
    fn resident_parts(&self) -> usize {
        Dir::resident_parts(&self.members) + self.order.resident_parts()
    }
    fn body_len(&self) -> usize {
        ChunkedZSet::body_len(self)
    }
    fn len(&self) -> usize {
        self.members.len()
    }
    fn check(&self) -> Result<(), String> {
        ChunkedZSet::check(self)
    }
}

impl ChunkedZSet {
    /// The ranks `[a, b)` of the members whose score is inside the bounds
    /// (the order parts `score_parts` names must be in RAM).
    pub fn score_ranks(&self, min: Bound<f64>, max: Bound<f64>) -> (usize, usize) {
        let a = self.rank_where(|s, _| below_min(s, min));
        let b = self.rank_where(|s, _| within_max(s, max));
        (a, b.max(a))
    }

    /// The order parts (first, last) that `score_ranks` reads: where each
    /// bound falls, found from the parts' lower bounds (in RAM), and all
    /// between.
    pub fn score_parts(&self, min: Bound<f64>, max: Bound<f64>) -> (usize, usize) {
        let lo = self.order.turning_part(|k| below_min(unzkey(k).0, min));
        let hi = self.order.turning_part(|k| within_max(unzkey(k).0, max));
        (lo, hi.max(lo))
    }
}

#[cfg(test)]
mod tests;

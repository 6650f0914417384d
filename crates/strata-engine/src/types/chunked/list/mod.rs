//! Chunked lists (docs/collections.md): a big list cut into *parts* of
//! consecutive elements, each one flash record (kind 9), so that a push or
//! a pop at either end, LINDEX, LSET and LRANGE touch only the parts they
//! name.
//!
//! Every element has a *position* (u64): the list's elements sit at
//! consecutive positions `[start, end)`, a part covers the positions of its
//! elements, and a part's record names the position of its first element
//! (the chunk's `low`). LPUSH takes `start - 1`, RPUSH `end`, pops give
//! their positions up; the head record carries `[start, end)`. Recovery
//! gives each position of the head's span the element of the newest record
//! covering it (positions outside the span are dead), so a part that is
//! popped empty needs no record: it just leaves the directory.
//!
//! Invariants:
//! 1. Parts are sorted by position, non-empty, and their positions follow
//!    each other without gaps (unless recovery found records missing:
//!    `gapped`, then positions only order the parts).
//! 2. A part's `count` and `body` are exact whether or not it is resident;
//!    the list's totals are their sums.
//! 3. A part not in RAM is clean and has a record (`loc`).
//! 4. A part's `loc`, when set, is a record whose positions include the
//!    part's; while `dirty` the part changed after that record (its
//!    elements or their positions).
//! 5. An insertion or removal inside the list moves the positions of the
//!    elements after it: every part from there on is rewritten (it must be
//!    in RAM; such commands load the whole list).
//! 6. A part passing [`CHUNK_MAX`] in the middle splits in two halves at
//!    their positions; both keep the parent's record (one reference more,
//!    `take_new_refs`). At the ends a push starts a new part instead.
//!    A part that leaves the directory gives its reference up
//!    (`take_dropped_refs`).

//!
//! Rooms: this file holds the list and its operations; `part` one part
//! and its elements; `dir` the engine's `Dir` view.

mod dir;
mod part;

pub use part::{measure_list, measure_list_range};

use super::CHUNK_MAX;
use crate::base::FlashLoc;
use crate::types::packed_len;
use crate::types::parts::packed::Fields;
use crate::types::parts::{DirHead, PartInfo};
use part::{Items, LPart};
use std::collections::VecDeque;

/// The position of the first element of a new chunked list: the middle of
/// the position space, so both ends have 2^63 pushes of room.
pub const FIRST_POSITION: u64 = 1 << 63;

/// A chunked list (module doc).
#[derive(Clone, Debug)]
pub struct ChunkedList {
    /// The incarnation and its head record (which carries the span).
    pub head: DirHead,
    parts: Vec<LPart>,
    len: usize,
    body: usize,
    resident: usize,
    resident_parts: usize,
    /// Recovery found positions without a record: parts are located by
    /// counting, not by position (invariant 1).
    gapped: bool,
    /// The span a recovered head named, until the directory is resolved.
    span: Option<(u64, u64)>,
    new_refs: Vec<FlashLoc>,
    dropped: Vec<FlashLoc>,
    /// The last part version handed out (`LPart::changed`).
    vers: u32,
    /// Where the demoter's hand stopped (`Dir::clock_pass`; a hint).
    hand: usize,
}

impl ChunkedList {
    /// A chunked list of `elems`, all parts in RAM and dirty.
    pub fn build(cid: u64, elems: impl IntoIterator<Item = Box<[u8]>>) -> ChunkedList {
        let mut c = ChunkedList::empty(cid);
        for e in elems {
            c.push_back(e);
        }
        c
    }

    fn empty(cid: u64) -> ChunkedList {
        ChunkedList {
            head: DirHead::new(cid),
            parts: Vec::new(),
            len: 0,
            body: 0,
            resident: 0,
            resident_parts: 0,
            gapped: false,
            span: None,
            new_refs: Vec::new(),
            dropped: Vec::new(),
            vers: 0,
            hand: 0,
        }
    }

    /// A list rebuilt from a directory (recovery; `parts` ordered by
    /// position, each with a record; `span` the newest head's, if known).
    pub fn from_infos(
        cid: u64,
        parts: &[PartInfo],
        head_loc: Option<FlashLoc>,
        head_seq: u64,
        span: Option<(u64, u64)>,
    ) -> ChunkedList {
        let mut c = ChunkedList::empty(cid);
        c.head = DirHead::written(cid, head_loc, head_seq);
        c.span = span;
        let mut next = None;
        for p in parts.iter().filter(|p| p.count > 0) {
            let Some(loc) = p.loc else { continue };
            if next.is_some_and(|n| n != p.low) {
                c.gapped = true;
            }
            next = Some(p.low.wrapping_add(p.count as u64));
            let f = Fields {
                key: p.low,
                tag: 0,
                count: p.count,
                body: p.body,
                loc: Some(loc),
                seq: p.seq,
            };
            let mut part = LPart::new(f, false, false, None);
            part.set_referenced(false);
            c.parts.push(part);
            c.len += p.count as usize;
            c.body += p.body as usize;
        }
        c
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn body_len(&self) -> usize {
        self.body
    }
    /// Positions `[start, end)` of the elements (the head record's span).
    pub fn span(&self) -> (u64, u64) {
        match (self.parts.first(), self.parts.last()) {
            (Some(f), Some(l)) => (f.start(), l.start().wrapping_add(l.count() as u64)),
            _ => self.span.unwrap_or((FIRST_POSITION, FIRST_POSITION)),
        }
    }
    pub fn all_resident(&self) -> bool {
        self.resident_parts == self.parts.len()
    }

    /// The part holding the element at index `i`, and its index there.
    fn locate(&self, i: usize) -> Option<(usize, usize)> {
        if i >= self.len {
            return None;
        }
        // The ends (pushes and pops) without a search.
        if i < self.parts[0].count() as usize {
            return Some((0, i));
        }
        let last = self.parts.len() - 1;
        let from_end = self.len - 1 - i;
        if from_end < self.parts[last].count() as usize {
            return Some((last, self.parts[last].count() as usize - 1 - from_end));
        }
        if !self.gapped {
            let pos = self.parts[0].start().wrapping_add(i as u64);
            let pi = self.part_of_pos(pos);
            return Some((pi, (pos - self.parts[pi].start()) as usize));
        }
        let mut i = i;
        for (pi, p) in self.parts.iter().enumerate() {
            if i < p.count() as usize {
                return Some((pi, i));
            }
            i -= p.count() as usize;
        }
        None
    }

    /// The part whose positions start at or before `pos` (the first part
    /// if none does).
    fn part_of_pos(&self, pos: u64) -> usize {
        self.parts
            .partition_point(|p| p.start() <= pos)
            .saturating_sub(1)
    }

    /// Index of the part holding element `i` (None if out of range).
    pub fn part_index(&self, i: usize) -> Option<usize> {
        self.locate(i).map(|(p, _)| p)
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let (pi, j) = self.locate(i)?;
        let it = self.parts[pi].data();
        debug_assert!(it.is_some(), "part of an element not loaded");
        it?.get(j)
    }

    /// Elements `first..` in order, from the part holding `first` on, for
    /// as long as their parts are in RAM.
    pub fn iter_from(&self, first: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let (pi, j) = self.locate(first).unwrap_or((self.parts.len(), 0));
        self.parts[pi..]
            .iter()
            .map_while(|p| p.data())
            .enumerate()
            .flat_map(move |(k, it)| it.iter().skip(if k == 0 { j } else { 0 }))
    }

    /// The parts holding indexes `[a, b)` (`a < b <= len`).
    pub fn parts_for(&self, a: usize, b: usize) -> std::ops::Range<usize> {
        match (self.locate(a), self.locate(b.saturating_sub(1))) {
            (Some((x, _)), Some((y, _))) if a < b => x..y + 1,
            _ => 0..0,
        }
    }

    /// The elements of indexes `[a, b)` that lie in parts `r` (in RAM), in
    /// order.
    pub fn range_in_parts(
        &self,
        r: std::ops::Range<usize>,
        a: usize,
        b: usize,
    ) -> impl Iterator<Item = &[u8]> + '_ {
        let first: usize = self.parts[..r.start]
            .iter()
            .map(|p| p.count() as usize)
            .sum();
        let mut at = first;
        self.parts[r].iter().flat_map(move |p| {
            let (lo, n) = (at, p.count() as usize);
            at += n;
            let skip = a.saturating_sub(lo).min(n);
            let take = b.saturating_sub(lo).min(n).saturating_sub(skip);
            p.data()
                .into_iter()
                .flat_map(move |it| it.iter().skip(skip).take(take))
        })
    }

    /// Every element (all parts must be in RAM).
    pub fn iter(&self) -> std::vec::IntoIter<&[u8]> {
        debug_assert!(self.all_resident());
        let mut v = Vec::with_capacity(self.len);
        for it in self.parts.iter().filter_map(|p| p.data()) {
            v.extend(it.iter());
        }
        v.into_iter()
    }

    fn grew(&mut self, pi: usize, n: usize) {
        let p = &mut self.parts[pi];
        p.set_size(p.count() + 1, p.body() + n as u32);
        p.changed(&mut self.vers);
        self.len += 1;
        self.body += n;
        self.resident += n;
        self.head.dirty = true;
    }

    pub fn push_back(&mut self, e: Box<[u8]>) {
        let n = packed_len(e.len());
        let full = self
            .parts
            .last()
            .is_none_or(|p| p.body() as usize + n > CHUNK_MAX && p.count() > 0);
        if full {
            let (_, end) = self.span();
            self.parts.push(LPart::new_dirty(end));
            self.resident_parts += 1;
        }
        let pi = self.parts.len() - 1;
        let Some(items) = self.parts[pi].data_mut() else {
            debug_assert!(false, "last part not loaded");
            return;
        };
        items.deque().push_back(e);
        self.grew(pi, n);
    }

    pub fn push_front(&mut self, e: Box<[u8]>) {
        let n = packed_len(e.len());
        let full = self
            .parts
            .first()
            .is_none_or(|p| p.body() as usize + n > CHUNK_MAX && p.count() > 0);
        if full {
            let (start, _) = self.span();
            self.parts.insert(0, LPart::new_dirty(start));
            self.resident_parts += 1;
        }
        let Some(items) = self.parts[0].data_mut() else {
            debug_assert!(false, "first part not loaded");
            return;
        };
        items.deque().push_front(e);
        let start = self.parts[0].start().wrapping_sub(1);
        self.parts[0].set_start(start);
        self.grew(0, n);
    }

    /// Accounts one element of `n` bytes popped from an end of part `pi`;
    /// drops the part if it is empty now. A part whose one record holds
    /// its state stays clean: the popped position leaves the list's span,
    /// which the head records, and a position outside the span is dead in
    /// any record (docs/format.md, chunked lists), so a pop logs the head
    /// alone, not the part. (A part whose state is a chain of records is
    /// changed: a pop from the front renames it, and its chain is by name.)
    fn shrank(&mut self, pi: usize, n: usize) {
        let p = &mut self.parts[pi];
        p.set_size(p.count() - 1, p.body() - n as u32);
        // (The chains are looked at only for a clean part.)
        if p.dirty() || p.loc().is_none_or(|l| self.head.chains.spread_on(l)) {
            p.changed(&mut self.vers);
        }
        self.len -= 1;
        self.body -= n;
        self.resident -= n;
        self.head.dirty = true;
        if p.count() == 0 {
            let p = self.parts.remove(pi);
            self.resident_parts -= 1;
            self.dropped.extend(p.loc());
        }
    }

    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        let e = self.parts.first_mut()?.data_mut()?.deque().pop_front()?;
        let start = self.parts[0].start().wrapping_add(1);
        self.parts[0].set_start(start);
        self.shrank(0, packed_len(e.len()));
        Some(e)
    }

    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        let pi = self.parts.len().checked_sub(1)?;
        let e = self.parts[pi].data_mut()?.deque().pop_back()?;
        self.shrank(pi, packed_len(e.len()));
        Some(e)
    }

    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, e: &[u8]) -> bool {
        let Some((pi, j)) = self.locate(i) else {
            return false;
        };
        let Some(items) = self.parts[pi].data_mut() else {
            return false;
        };
        let d = items.deque();
        let old = std::mem::replace(&mut d[j], e.into());
        let p = &mut self.parts[pi];
        p.set_size(p.count(), p.body() + e.len() as u32 - old.len() as u32);
        p.changed(&mut self.vers);
        self.body = self.body + e.len() - old.len();
        self.resident = self.resident + e.len() - old.len();
        self.split_if_big(pi);
        true
    }

    /// Inserts `e` before element `i` (`i == len` appends). Moves the
    /// positions after it (invariant 5: the list must be in RAM).
    pub fn insert(&mut self, i: usize, e: &[u8]) {
        if i >= self.len {
            return self.push_back(e.into());
        }
        let Some((pi, j)) = self.locate(i) else {
            return;
        };
        let Some(items) = self.parts[pi].data_mut() else {
            return;
        };
        items.deque().insert(j, e.into());
        self.grew(pi, packed_len(e.len()));
        self.renumber(pi);
        self.split_if_big(pi);
    }

    /// Keeps the elements `keep` accepts, in order (all parts in RAM).
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        let mut first = None;
        for pi in 0..self.parts.len() {
            let body_before = self.parts[pi].body();
            let Some(items) = self.parts[pi].data_mut() else {
                continue;
            };
            let d = items.deque();
            let before = (d.len(), body_before);
            let mut gone = 0usize;
            d.retain(|x| {
                let k = keep(x);
                if !k {
                    gone += packed_len(x.len());
                }
                k
            });
            let removed = before.0 - d.len();
            if removed > 0 {
                let p = &mut self.parts[pi];
                p.set_size(p.count() - removed as u32, before.1 - gone as u32);
                p.changed(&mut self.vers);
                self.len -= removed;
                self.body -= gone;
                self.resident -= gone;
                self.head.dirty = true;
                first.get_or_insert(pi);
            }
        }
        if let Some(pi) = first {
            self.drop_empty();
            self.renumber(pi.min(self.parts.len()));
        }
    }

    /// Keeps only elements `first..=last` (clamped by the caller; the
    /// parts holding them must be in RAM). Positions do not move.
    pub fn keep_range(&mut self, first: usize, last: usize) {
        if first > last || first >= self.len {
            for p in self.parts.drain(..) {
                self.dropped.extend(p.loc());
            }
            self.head.dirty = true;
            self.recount();
            return;
        }
        let Some((lp, lj)) = self.locate(last) else {
            return;
        };
        let (fp, fj) = self.locate(first).unwrap_or((0, 0));
        for p in self.parts.drain(lp + 1..) {
            self.dropped.extend(p.loc());
        }
        for p in self.parts.drain(..fp) {
            self.dropped.extend(p.loc());
        }
        let lp = lp - fp;
        // Trim the last part to `lj`, then the first from `fj` (the same
        // part when lp == 0: `lj` counts from its old start).
        // A part trimmed by nothing is left alone (it may be on flash).
        if lj + 1 < self.parts[lp].count() as usize {
            let items = self.parts[lp].data_mut();
            debug_assert!(items.is_some(), "last kept part not loaded");
            if let Some(items) = items {
                items.deque().truncate(lj + 1);
            }
        }
        if fj > 0 {
            let items = self.parts[0].data_mut();
            debug_assert!(items.is_some(), "first kept part not loaded");
            if let Some(items) = items {
                items.deque().drain(..fj);
            }
            let start = self.parts[0].start().wrapping_add(fj as u64);
            self.parts[0].set_start(start);
        }
        for pi in [0, lp] {
            let p = &mut self.parts[pi];
            if let Some(Items::Deque(d)) = p.data() {
                let body: usize = d.iter().map(|e| packed_len(e.len())).sum();
                let size = (d.len() as u32, body as u32);
                if size != (p.count(), p.body()) {
                    p.set_size(size.0, size.1);
                    p.changed(&mut self.vers);
                }
            }
        }
        self.head.dirty = true;
        self.recount();
    }

    /// Removes empty parts (their records are given up).
    fn drop_empty(&mut self) {
        let mut i = 0;
        while i < self.parts.len() {
            if self.parts[i].count() == 0 {
                let p = self.parts.remove(i);
                if p.data().is_some() {
                    self.resident_parts -= 1;
                }
                self.dropped.extend(p.loc());
            } else {
                i += 1;
            }
        }
    }

    /// Gives parts `from..` consecutive positions after part `from - 1`
    /// (invariant 5); a part whose positions move changes.
    fn renumber(&mut self, from: usize) {
        let mut next = match from.checked_sub(1).and_then(|i| self.parts.get(i)) {
            Some(p) => p.start().wrapping_add(p.count() as u64),
            None => match self.parts.get(from) {
                Some(p) => p.start(),
                None => return,
            },
        };
        for p in &mut self.parts[from..] {
            if p.start() != next {
                p.set_start(next);
                p.changed(&mut self.vers);
            }
            next = next.wrapping_add(p.count() as u64);
        }
        self.gapped = false;
    }

    /// Splits part `pi` in halves while it is over `CHUNK_MAX` (invariant 6).
    fn split_if_big(&mut self, pi: usize) {
        let p = &mut self.parts[pi];
        if p.body() as usize <= CHUNK_MAX || p.count() < 2 {
            return;
        }
        let Some(items) = p.data_mut() else {
            return;
        };
        let d = items.deque();
        let half = d.len() / 2;
        let hi: VecDeque<Box<[u8]>> = d.drain(half..).collect();
        let hi_body: usize = hi.iter().map(|e| packed_len(e.len())).sum();
        let f = Fields {
            key: p.start().wrapping_add(half as u64),
            tag: 0,
            count: hi.len() as u32,
            body: hi_body as u32,
            loc: p.loc(),
            seq: p.seq(),
        };
        let mut q = LPart::new(f, true, false, Some(Items::Deque(hi)));
        q.set_referenced(p.referenced());
        p.set_size(half as u32, p.body() - hi_body as u32);
        p.changed(&mut self.vers);
        if let Some(loc) = p.loc() {
            self.new_refs.push(loc);
        }
        self.parts.insert(pi + 1, q);
        self.parts[pi + 1].changed(&mut self.vers);
        self.resident_parts += 1;
        self.split_if_big(pi + 1);
        self.split_if_big(pi);
    }

    /// Recomputes the totals from the parts.
    fn recount(&mut self) {
        self.len = self.parts.iter().map(|p| p.count() as usize).sum();
        self.body = self.parts.iter().map(|p| p.body() as usize).sum();
        let res = self.parts.iter().filter(|p| p.data().is_some());
        self.resident = res.clone().map(|p| p.body() as usize).sum();
        self.resident_parts = res.count();
    }

    /// Records that lost their last part (the engine releases each once).
    pub fn take_dropped_refs(&mut self) -> Vec<FlashLoc> {
        std::mem::take(&mut self.dropped)
    }
}

impl PartialEq for ChunkedList {
    fn eq(&self, o: &Self) -> bool {
        self.len == o.len && self.iter().eq(o.iter())
    }
}

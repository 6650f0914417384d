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

use super::{Dir, PartInfo, CHUNK_MAX};
use crate::index::FlashLoc;
use crate::types::{packed_len, put, Malformed, Reader};
use std::collections::VecDeque;

/// The position of the first element of a new chunked list: the middle of
/// the position space, so both ends have 2^63 pushes of room.
pub const FIRST_POSITION: u64 = 1 << 63;

/// A part's elements in RAM: the chunk body as read (count, then each
/// element length-prefixed), or a deque once changed.
#[derive(Clone, Debug)]
enum Items {
    Packed(bytes::Bytes),
    Deque(VecDeque<Box<[u8]>>),
}

fn packed_iter(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut r = Reader {
        b: b.get(4..).unwrap_or(&[]),
    };
    std::iter::from_fn(move || {
        if r.b.is_empty() {
            return None;
        }
        r.bytes().ok()
    })
}

impl Items {
    fn get(&self, j: usize) -> Option<&[u8]> {
        match self {
            Items::Packed(b) => packed_iter(b).nth(j),
            Items::Deque(d) => d.get(j).map(|e| &**e),
        }
    }
    fn iter(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            Items::Packed(b) => Box::new(packed_iter(b)),
            Items::Deque(d) => Box::new(d.iter().map(|e| &**e)),
        }
    }
    fn deque(&mut self) -> &mut VecDeque<Box<[u8]>> {
        if let Items::Packed(b) = self {
            let d = packed_iter(b).map(Box::from).collect();
            *self = Items::Deque(d);
        }
        match self {
            Items::Deque(d) => d,
            Items::Packed(_) => unreachable!("decoded above"),
        }
    }
}

/// One part of a chunked list.
#[derive(Clone, Debug)]
struct LPart {
    /// Position of the first element.
    start: u64,
    count: u32,
    body: u32,
    dirty: bool,
    referenced: bool,
    ver: u32,
    loc: Option<FlashLoc>,
    seq: u64,
    items: Option<Items>,
}

impl LPart {
    fn new_dirty(start: u64) -> LPart {
        LPart {
            start,
            count: 0,
            body: 0,
            dirty: true,
            referenced: true,
            ver: 0,
            loc: None,
            seq: 0,
            items: Some(Items::Deque(VecDeque::new())),
        }
    }
    /// Marks the part changed, with the list's next version (versions are
    /// unique within the list, so a writer never publishes its record for
    /// another part that came to have the same position).
    fn changed(&mut self, vers: &mut u32) {
        *vers = vers.wrapping_add(1);
        self.dirty = true;
        self.ver = *vers;
    }
}

/// A chunked list (module doc).
#[derive(Clone, Debug)]
pub struct ChunkedList {
    pub cid: u64,
    parts: Vec<LPart>,
    len: usize,
    body: usize,
    resident: usize,
    resident_parts: usize,
    /// Recovery found positions without a record: parts are located by
    /// counting, not by position (invariant 1).
    gapped: bool,
    pub head_loc: Option<FlashLoc>,
    pub head_dirty: bool,
    pub head_seq: u64,
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
            cid,
            parts: Vec::new(),
            len: 0,
            body: 0,
            resident: 0,
            resident_parts: 0,
            gapped: false,
            head_loc: None,
            head_dirty: true,
            head_seq: 0,
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
        c.head_loc = head_loc;
        c.head_seq = head_seq;
        c.head_dirty = false;
        c.span = span;
        let mut next = None;
        for p in parts.iter().filter(|p| p.count > 0) {
            let Some(loc) = p.loc else { continue };
            if next.is_some_and(|n| n != p.low) {
                c.gapped = true;
            }
            next = Some(p.low.wrapping_add(p.count as u64));
            c.parts.push(LPart {
                start: p.low,
                count: p.count,
                body: p.body,
                dirty: false,
                referenced: false,
                ver: 0,
                loc: Some(loc),
                seq: p.seq,
                items: None,
            });
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
            (Some(f), Some(l)) => (f.start, l.start.wrapping_add(l.count as u64)),
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
        if i < self.parts[0].count as usize {
            return Some((0, i));
        }
        let last = self.parts.len() - 1;
        let from_end = self.len - 1 - i;
        if from_end < self.parts[last].count as usize {
            return Some((last, self.parts[last].count as usize - 1 - from_end));
        }
        if !self.gapped {
            let pos = self.parts[0].start.wrapping_add(i as u64);
            let pi = self.part_of_pos(pos);
            return Some((pi, (pos - self.parts[pi].start) as usize));
        }
        let mut i = i;
        for (pi, p) in self.parts.iter().enumerate() {
            if i < p.count as usize {
                return Some((pi, i));
            }
            i -= p.count as usize;
        }
        None
    }

    /// The part whose positions start at or before `pos` (the first part
    /// if none does).
    fn part_of_pos(&self, pos: u64) -> usize {
        self.parts
            .partition_point(|p| p.start <= pos)
            .saturating_sub(1)
    }

    /// Index of the part holding element `i` (None if out of range).
    pub fn part_index(&self, i: usize) -> Option<usize> {
        self.locate(i).map(|(p, _)| p)
    }

    /// The parts holding elements `first..=last` (indexes, clamped).
    pub fn parts_for(&self, first: usize, last: usize) -> std::ops::Range<usize> {
        if self.len == 0 || first > last || first >= self.len {
            return 0..0;
        }
        let a = self.part_index(first).unwrap_or(0);
        let b = self.part_index(last.min(self.len - 1)).unwrap_or(a);
        a..b + 1
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let (pi, j) = self.locate(i)?;
        let it = self.parts[pi].items.as_ref();
        debug_assert!(it.is_some(), "part of an element not loaded");
        it?.get(j)
    }

    /// Elements `first..` in order, from the part holding `first` on, for
    /// as long as their parts are in RAM.
    pub fn iter_from(&self, first: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let (pi, j) = self.locate(first).unwrap_or((self.parts.len(), 0));
        self.parts[pi..]
            .iter()
            .map_while(|p| p.items.as_ref())
            .enumerate()
            .flat_map(move |(k, it)| it.iter().skip(if k == 0 { j } else { 0 }))
    }

    /// Every element (all parts must be in RAM).
    pub fn iter(&self) -> std::vec::IntoIter<&[u8]> {
        debug_assert!(self.all_resident());
        let mut v = Vec::with_capacity(self.len);
        for it in self.parts.iter().filter_map(|p| p.items.as_ref()) {
            v.extend(it.iter());
        }
        v.into_iter()
    }

    fn grew(&mut self, pi: usize, n: usize) {
        let p = &mut self.parts[pi];
        p.count += 1;
        p.body += n as u32;
        p.changed(&mut self.vers);
        self.len += 1;
        self.body += n;
        self.resident += n;
        self.head_dirty = true;
    }

    pub fn push_back(&mut self, e: Box<[u8]>) {
        let n = packed_len(e.len());
        let full = self
            .parts
            .last()
            .is_none_or(|p| p.body as usize + n > CHUNK_MAX && p.count > 0);
        if full {
            let (_, end) = self.span();
            self.parts.push(LPart::new_dirty(end));
            self.resident_parts += 1;
        }
        let pi = self.parts.len() - 1;
        let Some(items) = self.parts[pi].items.as_mut() else {
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
            .is_none_or(|p| p.body as usize + n > CHUNK_MAX && p.count > 0);
        if full {
            let (start, _) = self.span();
            self.parts.insert(0, LPart::new_dirty(start));
            self.resident_parts += 1;
        }
        let Some(items) = self.parts[0].items.as_mut() else {
            debug_assert!(false, "first part not loaded");
            return;
        };
        items.deque().push_front(e);
        self.parts[0].start = self.parts[0].start.wrapping_sub(1);
        self.grew(0, n);
    }

    /// Accounts one element of `n` bytes gone from part `pi`; drops the
    /// part if it is empty now.
    fn shrank(&mut self, pi: usize, n: usize) {
        let p = &mut self.parts[pi];
        p.count -= 1;
        p.body -= n as u32;
        p.changed(&mut self.vers);
        self.len -= 1;
        self.body -= n;
        self.resident -= n;
        self.head_dirty = true;
        if p.count == 0 {
            let p = self.parts.remove(pi);
            self.resident_parts -= 1;
            self.dropped.extend(p.loc);
        }
    }

    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        let e = self
            .parts
            .first_mut()?
            .items
            .as_mut()?
            .deque()
            .pop_front()?;
        self.parts[0].start = self.parts[0].start.wrapping_add(1);
        self.shrank(0, packed_len(e.len()));
        Some(e)
    }

    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        let pi = self.parts.len().checked_sub(1)?;
        let e = self.parts[pi].items.as_mut()?.deque().pop_back()?;
        self.shrank(pi, packed_len(e.len()));
        Some(e)
    }

    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, e: &[u8]) -> bool {
        let Some((pi, j)) = self.locate(i) else {
            return false;
        };
        let Some(items) = self.parts[pi].items.as_mut() else {
            return false;
        };
        let d = items.deque();
        let old = std::mem::replace(&mut d[j], e.into());
        let p = &mut self.parts[pi];
        p.body = p.body + e.len() as u32 - old.len() as u32;
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
        let Some(items) = self.parts[pi].items.as_mut() else {
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
            let body_before = self.parts[pi].body;
            let Some(items) = self.parts[pi].items.as_mut() else {
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
                p.count -= removed as u32;
                p.body = before.1 - gone as u32;
                p.changed(&mut self.vers);
                self.len -= removed;
                self.body -= gone;
                self.resident -= gone;
                self.head_dirty = true;
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
                self.dropped.extend(p.loc);
            }
            self.head_dirty = true;
            self.recount();
            return;
        }
        let Some((lp, lj)) = self.locate(last) else {
            return;
        };
        let (fp, fj) = self.locate(first).unwrap_or((0, 0));
        for p in self.parts.drain(lp + 1..) {
            self.dropped.extend(p.loc);
        }
        for p in self.parts.drain(..fp) {
            self.dropped.extend(p.loc);
        }
        let lp = lp - fp;
        // Trim the last part to `lj`, then the first from `fj` (the same
        // part when lp == 0: `lj` counts from its old start).
        // A part trimmed by nothing is left alone (it may be on flash).
        if lj + 1 < self.parts[lp].count as usize {
            let items = self.parts[lp].items.as_mut();
            debug_assert!(items.is_some(), "last kept part not loaded");
            if let Some(items) = items {
                items.deque().truncate(lj + 1);
            }
        }
        if fj > 0 {
            let items = self.parts[0].items.as_mut();
            debug_assert!(items.is_some(), "first kept part not loaded");
            if let Some(items) = items {
                items.deque().drain(..fj);
            }
            self.parts[0].start = self.parts[0].start.wrapping_add(fj as u64);
        }
        for pi in [0, lp] {
            let p = &mut self.parts[pi];
            if let Some(Items::Deque(d)) = &p.items {
                let body: usize = d.iter().map(|e| packed_len(e.len())).sum();
                if (d.len() as u32, body as u32) != (p.count, p.body) {
                    p.count = d.len() as u32;
                    p.body = body as u32;
                    p.changed(&mut self.vers);
                }
            }
        }
        self.head_dirty = true;
        self.recount();
    }

    /// Removes empty parts (their records are given up).
    fn drop_empty(&mut self) {
        let mut i = 0;
        while i < self.parts.len() {
            if self.parts[i].count == 0 {
                let p = self.parts.remove(i);
                if p.items.is_some() {
                    self.resident_parts -= 1;
                }
                self.dropped.extend(p.loc);
            } else {
                i += 1;
            }
        }
    }

    /// Gives parts `from..` consecutive positions after part `from - 1`
    /// (invariant 5); a part whose positions move changes.
    fn renumber(&mut self, from: usize) {
        let mut next = match from.checked_sub(1).and_then(|i| self.parts.get(i)) {
            Some(p) => p.start.wrapping_add(p.count as u64),
            None => match self.parts.get(from) {
                Some(p) => p.start,
                None => return,
            },
        };
        for p in &mut self.parts[from..] {
            if p.start != next {
                p.start = next;
                p.changed(&mut self.vers);
            }
            next = next.wrapping_add(p.count as u64);
        }
        self.gapped = false;
    }

    /// Splits part `pi` in halves while it is over `CHUNK_MAX` (invariant 6).
    fn split_if_big(&mut self, pi: usize) {
        let p = &mut self.parts[pi];
        if p.body as usize <= CHUNK_MAX || p.count < 2 {
            return;
        }
        let Some(items) = p.items.as_mut() else {
            return;
        };
        let d = items.deque();
        let half = d.len() / 2;
        let hi: VecDeque<Box<[u8]>> = d.drain(half..).collect();
        let hi_body: usize = hi.iter().map(|e| packed_len(e.len())).sum();
        let q = LPart {
            start: p.start.wrapping_add(half as u64),
            count: hi.len() as u32,
            body: hi_body as u32,
            dirty: true,
            referenced: p.referenced,
            ver: 0,
            loc: p.loc,
            seq: p.seq,
            items: Some(Items::Deque(hi)),
        };
        p.count = half as u32;
        p.body -= hi_body as u32;
        p.changed(&mut self.vers);
        if let Some(loc) = p.loc {
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
        self.len = self.parts.iter().map(|p| p.count as usize).sum();
        self.body = self.parts.iter().map(|p| p.body as usize).sum();
        let res = self.parts.iter().filter(|p| p.items.is_some());
        self.resident = res.clone().map(|p| p.body as usize).sum();
        self.resident_parts = res.count();
    }

    /// Records that lost their last part (the engine releases each once).
    pub fn take_dropped_refs(&mut self) -> Vec<FlashLoc> {
        std::mem::take(&mut self.dropped)
    }

    fn encode(&self, i: usize, out: &mut Vec<u8>) {
        let p = &self.parts[i];
        match &p.items {
            Some(Items::Packed(b)) => out.extend_from_slice(b),
            Some(Items::Deque(d)) => {
                out.reserve(4 + p.body as usize);
                out.extend_from_slice(&(d.len() as u32).to_le_bytes());
                for e in d {
                    put(out, e);
                }
            }
            None => {}
        }
    }

    fn do_install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        low: u64,
    ) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        if p.items.is_some() || p.loc != Some(loc) {
            return Ok(false);
        }
        let (n, _) = measure_list(body)?;
        let skip = p.start.wrapping_sub(low);
        if skip > n as u64 || skip + p.count as u64 > n as u64 {
            return Err(Malformed);
        }
        let items = if skip == 0 && n == p.count {
            Items::Packed(bytes::Bytes::copy_from_slice(body))
        } else {
            let d: VecDeque<Box<[u8]>> = packed_iter(body)
                .skip(skip as usize)
                .take(p.count as usize)
                .map(Box::from)
                .collect();
            Items::Deque(d)
        };
        let b: usize = items.iter().map(|e| packed_len(e.len())).sum();
        let p = &mut self.parts[i];
        if b != p.body as usize {
            return Err(Malformed);
        }
        p.items = Some(items);
        p.referenced = true;
        self.resident += b;
        self.resident_parts += 1;
        Ok(true)
    }
}

/// Element count and packed bytes of a list chunk body (count, then each
/// element length-prefixed); Malformed if it does not parse exactly.
pub fn measure_list(b: &[u8]) -> Result<(u32, u32), Malformed> {
    let mut r = Reader { b };
    let n = r.u32()?;
    let mut body = 0usize;
    for _ in 0..n {
        body += packed_len(r.bytes()?.len());
    }
    if !r.b.is_empty() {
        return Err(Malformed);
    }
    Ok((n, body as u32))
}

/// Packed bytes of the elements `skip..skip + count` of a list chunk body.
pub fn measure_list_range(b: &[u8], skip: usize, count: usize) -> Result<u32, Malformed> {
    measure_list(b)?;
    Ok(packed_iter(b)
        .skip(skip)
        .take(count)
        .map(|e| packed_len(e.len()) as u32)
        .sum())
}

impl PartialEq for ChunkedList {
    fn eq(&self, o: &Self) -> bool {
        self.len == o.len && self.iter().eq(o.iter())
    }
}

impl Dir for ChunkedList {
    fn cid(&self) -> u64 {
        self.cid
    }
    fn head_loc(&self) -> Option<FlashLoc> {
        self.head_loc
    }
    fn set_head_loc(&mut self, loc: Option<FlashLoc>) {
        self.head_loc = loc;
    }
    fn head_seq(&self) -> u64 {
        self.head_seq
    }
    fn set_head_seq(&mut self, seq: u64) {
        self.head_seq = seq;
    }
    fn head_dirty(&self) -> bool {
        self.head_dirty
    }
    fn set_head_dirty(&mut self, dirty: bool) {
        self.head_dirty = dirty;
    }
    fn head_span(&self) -> Option<(u64, u64)> {
        Some(self.span())
    }
    fn recovered_span(&self) -> Option<(u64, u64)> {
        self.span
    }
    fn set_recovered_span(&mut self, span: (u64, u64)) {
        self.span = Some(span);
    }
    fn part_count(&self) -> usize {
        self.parts.len()
    }
    fn part(&self, i: usize) -> PartInfo {
        let p = &self.parts[i];
        PartInfo {
            low: p.start,
            depth: 0,
            dirty: p.dirty,
            resident: p.items.is_some(),
            count: p.count,
            body: p.body,
            ver: p.ver,
            loc: p.loc,
            seq: p.seq,
        }
    }
    fn part_of(&self, pos: u64) -> usize {
        self.part_of_pos(pos)
    }
    fn part_at(&self, i: usize) -> Option<usize> {
        self.part_index(i)
    }
    fn scan_parts(&self, _: u64, _: usize) -> std::ops::Range<usize> {
        0..0
    }
    fn clock_pass(&mut self, want: usize) -> (usize, usize, usize, Vec<usize>) {
        let n = self.parts.len();
        let (mut spared, mut freed, mut examined, mut got) = (0, 0, 0, 0);
        let mut changed = Vec::new();
        for step in 0..n {
            let i = (self.hand + step) % n;
            let p = &mut self.parts[i];
            if p.items.is_none() {
                continue;
            }
            examined += 1;
            if std::mem::replace(&mut p.referenced, false) {
                spared += 1;
            } else if p.dirty {
                got += p.body as usize;
                changed.push(i);
            } else if p.loc.is_some() {
                got += Dir::evict(self, i);
                freed += 1;
            }
            if got >= want {
                self.hand = i + 1;
                return (spared, freed, examined, changed);
            }
        }
        (spared, freed, examined, changed)
    }
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc) {
        if let Some(p) = self.parts.get_mut(i) {
            p.loc = Some(loc);
        }
    }
    fn parts_at(&self, loc: FlashLoc, low: u64, _: u8) -> Vec<usize> {
        // The parts of one record are adjacent, usually from about its
        // first position on (pops may have moved the first part past it).
        let i0 = self.part_of_pos(low);
        let near: Vec<usize> = (i0..self.parts.len())
            .take_while(|&i| i == i0 || self.parts[i].loc == Some(loc))
            .filter(|&i| self.parts[i].loc == Some(loc))
            .collect();
        if !near.is_empty() {
            return near;
        }
        // Renumbered parts that were not written yet keep a record of
        // their old positions: look everywhere (the collector asks this of
        // each chunk record it meets; O(parts) for a dead one).
        (0..self.parts.len())
            .filter(|&i| self.parts[i].loc == Some(loc))
            .collect()
    }
    fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        self.encode(i, out)
    }
    fn published(
        &mut self,
        i: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>> {
        let p = self.parts.get_mut(i)?;
        if p.ver != ver || !p.dirty {
            return None;
        }
        p.dirty = false;
        p.seq = seq;
        Some(p.loc.replace(loc))
    }
    fn evict(&mut self, i: usize) -> usize {
        let p = &mut self.parts[i];
        if p.dirty || p.loc.is_none() || p.items.is_none() {
            return 0;
        }
        p.items = None;
        self.resident -= p.body as usize;
        self.resident_parts -= 1;
        p.body as usize
    }
    fn touch(&mut self, i: usize) {
        if let Some(p) = self.parts.get_mut(i) {
            p.referenced = true;
        }
    }
    fn clock(&mut self, i: usize) -> bool {
        match self.parts.get_mut(i) {
            Some(p) => std::mem::replace(&mut p.referenced, false),
            None => false,
        }
    }
    fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        named: (u64, u8),
    ) -> Result<bool, Malformed> {
        self.do_install(i, loc, body, named.0)
    }
    fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        std::mem::take(&mut self.new_refs)
    }
    fn take_dropped_refs(&mut self) -> Vec<FlashLoc> {
        ChunkedList::take_dropped_refs(self)
    }
    fn resident_bytes(&self) -> usize {
        self.resident
    }
    fn resident_parts(&self) -> usize {
        self.resident_parts
    }
    fn body_len(&self) -> usize {
        self.body
    }
    fn len(&self) -> usize {
        self.len
    }
    fn check(&self) -> Result<(), String> {
        let mut next: Option<u64> = None;
        let (mut len, mut body, mut resident) = (0, 0, 0);
        for p in &self.parts {
            if p.count == 0 {
                return Err("empty part".into());
            }
            if !self.gapped && next.is_some_and(|n| n != p.start) {
                return Err(format!("positions not consecutive at {:#x}", p.start));
            }
            next = Some(p.start.wrapping_add(p.count as u64));
            len += p.count as usize;
            body += p.body as usize;
            match &p.items {
                Some(it) => {
                    resident += p.body as usize;
                    let (n, b) = it.iter().fold((0usize, 0usize), |(n, b), e| {
                        (n + 1, b + packed_len(e.len()))
                    });
                    if (n, b) != (p.count as usize, p.body as usize) {
                        return Err("count or body".into());
                    }
                }
                None if p.dirty || p.loc.is_none() => {
                    return Err("cold part without a clean record".into())
                }
                None => {}
            }
        }
        let rp = self.parts.iter().filter(|p| p.items.is_some()).count();
        if (len, body, resident, rp) != (self.len, self.body, self.resident, self.resident_parts) {
            return Err("totals".into());
        }
        Ok(())
    }
}

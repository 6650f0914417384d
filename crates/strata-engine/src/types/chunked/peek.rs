//! Reading elements of a part on flash without reading it back whole (a
//! *peek*). A part whose cold chain spilled (`parts::chains`) is read back
//! whole by reading its image and every spilled record; a read of a few
//! elements (HGET, HMGET, HEXISTS, HSTRLEN, SISMEMBER, SMISMEMBER:
//! `Need::Reads`) needs one of them at most. A blind add only adds an
//! element that was nowhere, and while the part was in RAM every element
//! a change touched was named: the chain's tags (16 bits of each such
//! element's hash, in the order of the steps, with the records each
//! covers) tell where an element's latest state is. An element with no
//! tag is in the image or nowhere; one whose last tag is a blind add's is
//! in that add's step, in RAM (`pending`) or in one spilled record.
//!
//! Invariants:
//! 1. A part is peeked only while it is on flash at its chain's image,
//!    the chain spilled and is not `opaque` (a chain of another kind of
//!    part, or past `TAGS_MAX` tags), and each element read is found by
//!    its last tag: none (the image), a blind add's step in RAM or in a
//!    spilled record of blind adds only; a diff's step, or a tag whose
//!    step does not hold the element (another element's tag), loads the
//!    part whole. Checked under the shard locks the command then runs
//!    under (`peek_plan`), so what the closure reads (`Chunked::get`) is
//!    what was checked.
//! 2. A peek keeps a record as read (the image's body, or a part change
//!    record's value), taken by a command's load (`put_peek`) and read by
//!    later reads that pass the check of 1 (records never change); at most
//!    `PEEKS_MAX` are kept, the oldest dropped first, and all of them when
//!    the demoter passes the collection.

use super::part::check_packed;
use super::{Chunked, Elem};
use crate::base::{FlashLoc, Malformed};
use crate::flash::format::part_change;
use crate::types::parts::chains::tag;
use crate::types::parts::{elem_hash, PartChain, PeekPlan};
use crate::types::Reader;

/// Most peeks a collection keeps (invariant 2).
const PEEKS_MAX: usize = 32;
/// Most tags a chain keeps (`tag_change`).
const TAGS_MAX: usize = 256;

/// A record of a part on flash, read for a command (module doc).
#[derive(Clone, Debug)]
pub(super) struct Peek {
    low: u64,
    depth: u8,
    loc: FlashLoc,
    /// The image's chunk body, or (not `image`) a part change record's
    /// value.
    image: bool,
    body: bytes::Bytes,
}

/// The value bytes of `elem` as the last blind add among encoded `steps`
/// (`part_change::push_step`'s) that added it left them; steps of other
/// kinds are passed over.
fn blind_value<'a, V: Elem>(mut steps: &'a [u8], elem: &[u8]) -> Option<&'a [u8]> {
    let u32_at = |b: &[u8], at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let span = part_change::SPAN_HEADER_LEN;
    let mut found = None;
    while !steps.is_empty() {
        let len = u32_at(steps, 0)?;
        let spans = steps.get(4..4usize.checked_add(len)?)?;
        steps = &steps[4 + len..];
        // A blind add: the count (at 0, 4 bytes for 4), then the entry
        // after the last (cut 0), nothing else (`blind::add_blind`).
        let count = (u32_at(spans, 0)?, u32_at(spans, 4)?, u32_at(spans, 8)?);
        if count != (0, 4, 4) || spans.len() < 2 * span + 4 {
            continue;
        }
        let second = &spans[span + 4..];
        let (cut, n) = (u32_at(second, 4)?, u32_at(second, 8)?);
        if cut != 0 || second.len() != span + n {
            continue;
        }
        let mut r = Reader { b: &second[span..] };
        let (Ok(k), Ok(v)) = (r.bytes(), V::take_slice(&mut r)) else {
            continue;
        };
        if k == elem && r.b.is_empty() {
            found = Some(v);
        }
    }
    found
}

/// `blind_value` in a part change record's value.
fn record_value<'a, V: Elem>(record: &'a [u8], elem: &[u8]) -> Option<&'a [u8]> {
    blind_value::<V>(part_change::decode(record)?.steps, elem)
}

/// Where one element's latest state is (invariant 1).
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    /// Not found by its tags: load the part.
    Load,
    /// In RAM already (a step, or a peek).
    Ready,
    /// In this record (`true`: the image).
    Read(FlashLoc, bool),
}

impl<V: Elem> Chunked<V> {
    /// The chain of part `i` if a read of it may peek (invariant 1).
    fn peek_chain(&self, i: usize) -> Option<&PartChain> {
        let p = &self.parts[i];
        if p.is_resident() || !p.own() || p.loc().is_none() {
            return None;
        }
        let ch = self.head.chains.get((p.low(), p.depth()))?;
        (ch.base.is_none()
            && ch.spilled > 0
            && !ch.opaque
            && ch.image == p.loc()
            && ch.rec_ends.len() == ch.changes.len())
        .then_some(ch)
    }

    /// Where element `elem` of part `i`, whose chain is `ch`, is read.
    fn elem_at(&self, i: usize, ch: &PartChain, elem: &[u8]) -> At {
        let t = tag(elem_hash(elem));
        let Some(j) = ch.tags.iter().rposition(|&x| x == t) else {
            let image = self.parts[i].loc().expect("peek_chain checked");
            return match self.peek_of(i, image) {
                Some(_) => At::Ready,
                None => At::Read(image, true),
            };
        };
        // The record whose steps hold tag `j`.
        let r = ch.rec_ends.partition_point(|&end| end as usize <= j);
        if r < ch.changes.len() && r < 64 && (ch.rec_diff >> r) & 1 == 1 {
            return At::Load;
        }
        if r >= ch.spilled {
            // Its step is in RAM.
            return match blind_value::<V>(&ch.pending, elem) {
                Some(_) => At::Ready,
                None => At::Load,
            };
        }
        let loc = ch.changes[r];
        match self.peek_of(i, loc) {
            Some(k) if record_value::<V>(&k.body, elem).is_some() => At::Ready,
            Some(_) => At::Load,
            None => At::Read(loc, false),
        }
    }

    /// How elements `elems` of part `i` (on flash) are read (invariant 1):
    /// from RAM, from one record, or by loading the part.
    pub fn peek_plan<'a>(&self, i: usize, elems: impl Iterator<Item = &'a [u8]>) -> PeekPlan {
        let Some(ch) = self.peek_chain(i) else {
            return PeekPlan::Load;
        };
        let mut read = None;
        for e in elems {
            match self.elem_at(i, ch, e) {
                At::Load => return PeekPlan::Load,
                At::Ready => {}
                At::Read(loc, image) => match read {
                    Some(r) if r != (loc, image) => return PeekPlan::Load,
                    _ => read = Some((loc, image)),
                },
            }
        }
        match read {
            Some((loc, image)) => PeekPlan::Read { loc, image },
            None => PeekPlan::Ready,
        }
    }

    fn peek_of(&self, i: usize, loc: FlashLoc) -> Option<&Peek> {
        let p = &self.parts[i];
        self.peeks
            .iter()
            .find(|k| (k.low, k.depth) == (p.low(), p.depth()) && k.loc == loc)
    }

    /// Keeps `body`, part `i`'s record at `loc` as read (its image's
    /// chunk body, or a part change record's value), for the reads that
    /// peek it, if the part is still on flash with that record in its
    /// chain; returns whether it did.
    pub fn put_peek(
        &mut self,
        i: usize,
        loc: FlashLoc,
        image: bool,
        body: &[u8],
    ) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        if p.is_resident() || !p.own() {
            return Ok(false);
        }
        let ours = if image {
            p.loc() == Some(loc)
        } else {
            self.head
                .chains
                .get((p.low(), p.depth()))
                .is_some_and(|ch| ch.spilled_locs().contains(&loc))
        };
        if !ours {
            return Ok(false);
        }
        if image {
            check_packed::<V>(body)?;
        } else if part_change::decode(body).is_none() {
            return Err(Malformed);
        }
        if self.peek_of(i, loc).is_some() {
            return Ok(true);
        }
        let (low, depth) = (p.low(), p.depth());
        if self.peeks.len() >= PEEKS_MAX {
            self.peeks.remove(0);
        }
        self.peeks.push(Peek {
            low,
            depth,
            loc,
            image,
            body: bytes::Bytes::copy_from_slice(body),
        });
        Ok(true)
    }

    /// The value bytes of `elem` in part `i`, on flash, as its chain's
    /// steps in RAM and its peeks hold it (the caller planned the read:
    /// invariant 1); None if absent.
    pub(super) fn peek_get(&self, i: usize, elem: &[u8]) -> Option<&[u8]> {
        let p = &self.parts[i];
        if let Some(ch) = self.peek_chain(i) {
            if let Some(v) = blind_value::<V>(&ch.pending, elem) {
                return Some(v);
            }
        }
        let mine = |k: &&Peek| (k.low, k.depth) == (p.low(), p.depth());
        for k in self.peeks.iter().filter(mine).filter(|k| !k.image) {
            if let Some(v) = record_value::<V>(&k.body, elem) {
                return Some(v);
            }
        }
        let image = self
            .peeks
            .iter()
            .filter(mine)
            .find(|k| k.image && Some(k.loc) == p.loc())?;
        super::part::packed_get::<V>(&image.body, elem)
    }

    /// Whether part `i` is read by peeks (it has a chain to peek).
    pub(super) fn peeked(&self, i: usize) -> bool {
        self.peek_chain(i).is_some()
    }

    /// Part `i`'s element hashed `h` changes (set, added or removed) while
    /// the part is in RAM: its chain, if it has one, names it among the
    /// elements its steps change, so a peek never answers for it from an
    /// older record. Past `TAGS_MAX` the chain is taken as changing any
    /// element.
    pub(super) fn tag_change(&mut self, i: usize, h: u64) {
        let p = &self.parts[i];
        let t = tag(h);
        self.head.chains.update((p.low(), p.depth()), |ch| {
            if ch.opaque || ch.tags.contains(&t) {
                return;
            }
            if ch.tags.len() >= TAGS_MAX {
                ch.opaque = true;
                ch.tags = Vec::new();
            } else {
                ch.tags.push(t);
            }
        });
    }

    /// Drops every peek (the demoter passes: invariant 2).
    pub fn drop_peeks(&mut self) {
        if !self.peeks.is_empty() {
            self.peeks = Vec::new();
        }
    }

    /// RAM the peeks hold.
    pub fn peek_ram(&self) -> usize {
        self.peeks.iter().map(|k| k.body.len()).sum()
    }
}

//! A consumer group's pending entries list (PEL) in parts, when its stream
//! is chunked (docs/collections.md, "As built (streams)"): each part holds
//! the NACKs of a range of ids and is a flash record of its own (kind 9,
//! depth `PEL_DEPTH`), so an XACK or a delivery writes the part it changes
//! and the stream's head (the group's counters and consumers), not the
//! whole list. The PEL stays in RAM, as Redis keeps it; only its records
//! are cut.
//!
//! Invariants:
//! 1. Parts are in id order: part k holds the NACKs with ids in
//!    `[lo_k, lo_{k+1})`, the first part's `lo` is 0-0 (it takes every id
//!    below the second's), and `count` is exactly how many NACKs the
//!    group's PEL has in that range.
//! 2. No part is empty: a part whose last NACK goes leaves (its record,
//!    if any, to `dropped`); an empty PEL has no part.
//! 3. A part's record name is `(ordinal << 40) | num`: ordinals are unique
//!    among the stream's groups, numbers among the group's parts, so
//!    recovery takes the newest record of each number the head names.
//! 4. `dirty` counts the parts with `dirty` set; a changed part gets a new
//!    `ver`, so a capture is published only if nothing changed after it.

use super::group::Nack;
use super::{get_id, put_bytes, put_id, Group, Stream, StreamId, ID_LEN};
use crate::base::FlashLoc;
use crate::types::parts::PartInfo;
use crate::types::{Malformed, Reader};
use std::collections::BTreeMap;

pub use crate::base::PEL_DEPTH;

/// NACKs a part holds at most (~4.6 KB of record), and at most after two
/// neighbours merge.
pub(super) const PEL_PART_MAX: usize = 128;
const MERGE_AT: usize = PEL_PART_MAX / 2;

/// Bits of a part's record name below its group's ordinal.
const NUM_BITS: u32 = 40;

/// The record name of part `num` of the group of `ordinal`.
pub fn record_low(ordinal: u32, num: u64) -> u64 {
    (u64::from(ordinal) << NUM_BITS) | (num & ((1 << NUM_BITS) - 1))
}

#[derive(Clone, Debug)]
pub(super) struct PelPart {
    /// The least id the part holds (0-0 for the first part).
    pub lo: StreamId,
    pub num: u64,
    pub count: usize,
    pub dirty: bool,
    pub ver: u32,
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

/// Most PEL parts a head may name (2^26 parts of at most 128 entries:
/// 8.6 billion pending entries); more is a malformed head.
const NAMED_MAX: u64 = 1 << 26;

#[derive(Clone, Debug, Default)]
pub(super) struct PelParts {
    pub ordinal: u32,
    /// The number the next new part takes.
    pub next: u64,
    pub parts: Vec<PelPart>,
    pub vers: u32,
    /// Parts with `dirty` set (invariant 4).
    pub dirty: usize,
    /// Records no part refers to any more.
    pub dropped: Vec<FlashLoc>,
    /// The numbers a recovered head named, until their records are read.
    pub named: Vec<u64>,
}

impl PelParts {
    pub fn new(ordinal: u32) -> PelParts {
        PelParts {
            ordinal,
            ..PelParts::default()
        }
    }

    /// A whole PEL cut into parts three quarters full, every part changed
    /// (a stream becoming chunked).
    pub fn cut(ordinal: u32, pel: &BTreeMap<StreamId, Nack>) -> PelParts {
        let mut p = PelParts::new(ordinal);
        let per = PEL_PART_MAX * 3 / 4;
        let ids: Vec<StreamId> = pel.keys().copied().collect();
        for (i, c) in ids.chunks(per).enumerate() {
            let lo = if i == 0 { StreamId::MIN } else { c[0] };
            p.push_new(p.parts.len(), lo, c.len());
        }
        p
    }

    /// The part whose range holds `id` (there must be a part).
    fn find(&self, id: StreamId) -> usize {
        self.parts.partition_point(|p| p.lo <= id).saturating_sub(1)
    }

    fn touch(&mut self, k: usize) {
        self.vers = self.vers.wrapping_add(1);
        let p = &mut self.parts[k];
        p.ver = self.vers;
        if !p.dirty {
            p.dirty = true;
            self.dirty += 1;
        }
    }

    fn push_new(&mut self, at: usize, lo: StreamId, count: usize) {
        let num = self.next;
        self.next += 1;
        self.parts.insert(
            at,
            PelPart {
                lo,
                num,
                count,
                dirty: false,
                ver: 0,
                loc: None,
                seq: 0,
            },
        );
        self.touch(at);
    }

    fn remove_part(&mut self, k: usize) {
        let p = self.parts.remove(k);
        if p.dirty {
            self.dirty -= 1;
        }
        self.dropped.extend(p.loc);
        if k == 0 {
            if let Some(f) = self.parts.first_mut() {
                f.lo = StreamId::MIN;
            }
        }
    }

    /// `id` joined `pel` (it is in it now).
    pub fn added(&mut self, pel: &BTreeMap<StreamId, Nack>, id: StreamId) {
        if self.parts.is_empty() {
            self.push_new(0, StreamId::MIN, 1);
            return;
        }
        let k = self.find(id);
        self.parts[k].count += 1;
        self.touch(k);
        let count = self.parts[k].count;
        if count <= PEL_PART_MAX {
            return;
        }
        // Split: a NACK added after every other of the part (the usual
        // case: deliveries in id order) starts a part of its own, so the
        // parts behind stay full; else the part is halved.
        let ids: Vec<StreamId> = pel
            .range(self.parts[k].lo..)
            .take(count)
            .map(|(i, _)| *i)
            .collect();
        let at = if ids.last() == Some(&id) {
            count - 1
        } else {
            count / 2
        };
        self.parts[k].count = at;
        self.push_new(k + 1, ids[at], count - at);
    }

    /// `id` left the PEL.
    pub fn removed(&mut self, id: StreamId) {
        if self.parts.is_empty() {
            return;
        }
        let k = self.find(id);
        self.parts[k].count -= 1;
        if self.parts[k].count == 0 {
            self.remove_part(k);
            return;
        }
        self.touch(k);
        // Sparse neighbours merge (into the lower one).
        let merge = if k + 1 < self.parts.len()
            && self.parts[k].count + self.parts[k + 1].count <= MERGE_AT
        {
            Some(k)
        } else if k > 0 && self.parts[k - 1].count + self.parts[k].count <= MERGE_AT {
            Some(k - 1)
        } else {
            None
        };
        if let Some(m) = merge {
            let n = self.parts[m + 1].count;
            self.parts[m].count += n;
            self.touch(m);
            self.remove_part(m + 1);
        }
    }

    /// The NACK of `id` changed (time, count or consumer).
    pub fn changed(&mut self, id: StreamId) {
        if !self.parts.is_empty() {
            let k = self.find(id);
            self.touch(k);
        }
    }

    /// Part `k`'s record was written at `loc` as captured at `ver`; the
    /// old record if it is now published (None if it changed since).
    pub fn published(
        &mut self,
        k: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>> {
        let p = self.parts.get_mut(k)?;
        if seq < p.seq {
            return None;
        }
        p.seq = seq;
        if p.ver == ver && p.dirty {
            p.dirty = false;
            self.dirty -= 1;
        }
        Some(p.loc.replace(loc))
    }

    /// Part `k`'s chunk body: the group's name, the consumers its NACKs
    /// name (each once), then each NACK (id, delivery time, count, the
    /// consumer's index in that list).
    pub fn encode_part(
        &self,
        k: usize,
        name: &[u8],
        pel: &BTreeMap<StreamId, Nack>,
        out: &mut Vec<u8>,
    ) {
        let p = &self.parts[k];
        let nacks: Vec<(&StreamId, &Nack)> = pel.range(p.lo..).take(p.count).collect();
        put_bytes(out, name);
        let mut names: Vec<&[u8]> = Vec::new();
        let mut index = Vec::with_capacity(nacks.len());
        for (_, n) in &nacks {
            let c = n.consumer();
            let i = match names.iter().position(|x| *x == c) {
                Some(i) => i,
                None => {
                    names.push(c);
                    names.len() - 1
                }
            };
            index.push(i as u32);
        }
        out.extend_from_slice(&(names.len() as u32).to_le_bytes());
        for c in &names {
            put_bytes(out, c);
        }
        out.reserve(4 + nacks.len() * (ID_LEN + 20));
        out.extend_from_slice(&(nacks.len() as u32).to_le_bytes());
        for ((id, n), i) in nacks.iter().zip(index) {
            put_id(out, **id);
            out.extend_from_slice(&n.delivery_time.to_le_bytes());
            out.extend_from_slice(&n.delivery_count.to_le_bytes());
            out.extend_from_slice(&i.to_le_bytes());
        }
    }

    /// The numbers in force (a chunked stream's head names them), as runs
    /// of consecutive numbers (format version 20: a PEL's parts are
    /// mostly numbered in a row, so a head of thousands of parts names
    /// them in a few bytes, not 8 each).
    pub fn encode_named(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ordinal.to_le_bytes());
        out.extend_from_slice(&self.next.to_le_bytes());
        let mut nums: Vec<u64> = self.parts.iter().map(|p| p.num).collect();
        nums.sort_unstable();
        let runs: Vec<(u64, u32)> = nums
            .chunk_by(|a, b| *a + 1 == *b)
            .flat_map(|run| {
                // (A run longer than u32 is cut.)
                run.chunks(u32::MAX as usize)
                    .map(|c| (c[0], c.len() as u32))
            })
            .collect();
        out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
        for (first, len) in runs {
            out.extend_from_slice(&first.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
    }

    /// What `encode_named` wrote (`runs`), or a head of versions 15 to 19
    /// wrote (one u64 per number): the parts to be read by recovery.
    pub fn decode_named(r: &mut Reader<'_>, runs: bool) -> Result<PelParts, Malformed> {
        let mut p = PelParts::new(r.u32()?);
        p.next = r.u64()?;
        let n = r.u32()? as usize;
        if !runs {
            let mut seen = std::collections::HashSet::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                let num = r.u64()?;
                if num >= p.next || !seen.insert(num) {
                    return Err(Malformed);
                }
                p.named.push(num);
            }
            return Ok(p);
        }
        let mut from = 0u64;
        for _ in 0..n {
            let first = r.u64()?;
            let len = r.u32()? as u64;
            // In order, not overlapping, below `next`, and no more numbers
            // than the record could have named parts (each part's record
            // is at least a header).
            let end = first.checked_add(len).ok_or(Malformed)?;
            if len == 0 || first < from || end > p.next || p.named.len() as u64 + len > NAMED_MAX {
                return Err(Malformed);
            }
            p.named.extend(first..end);
            from = end;
        }
        Ok(p)
    }

    /// Checks invariants 1, 2 and 4 against the group's PEL (tests).
    pub fn check(&self, pel: &BTreeMap<StreamId, Nack>) -> Result<(), String> {
        let mut total = 0;
        for (k, p) in self.parts.iter().enumerate() {
            if k == 0 && p.lo != StreamId::MIN {
                return Err("the first PEL part does not start at 0-0".into());
            }
            if k > 0 && p.lo <= self.parts[k - 1].lo {
                return Err("PEL parts out of order".into());
            }
            let hi = self.parts.get(k + 1).map(|n| n.lo);
            let n = pel
                .range(p.lo..)
                .take_while(|(id, _)| hi.is_none_or(|h| **id < h))
                .count();
            if n != p.count || n == 0 {
                return Err(format!(
                    "PEL part {}: {} NACKs, counted {}",
                    p.num, n, p.count
                ));
            }
            total += n;
        }
        if total != pel.len() {
            return Err("PEL parts do not cover the PEL".into());
        }
        if self.parts.iter().filter(|p| p.dirty).count() != self.dirty {
            return Err("PEL dirty count".into());
        }
        Ok(())
    }
}

/// A PEL part's chunk body decoded (`PelParts::encode_part`).
pub(super) struct PelBody<'a> {
    pub group: &'a [u8],
    /// Id, delivery time, delivery count, consumer name.
    pub nacks: Vec<(StreamId, u64, u64, &'a [u8])>,
}

pub(super) fn decode_pel_part(b: &[u8]) -> Result<PelBody<'_>, Malformed> {
    let mut r = Reader { b };
    let group = r.bytes()?;
    let nc = r.u32()? as usize;
    let mut names = Vec::with_capacity(nc.min(PEL_PART_MAX));
    for _ in 0..nc {
        names.push(r.bytes()?);
    }
    let nn = r.u32()? as usize;
    let mut nacks = Vec::with_capacity(nn.min(4 * PEL_PART_MAX));
    let mut prev: Option<StreamId> = None;
    for _ in 0..nn {
        let id = get_id(&mut r)?;
        if prev.is_some_and(|p| id <= p) {
            return Err(Malformed);
        }
        prev = Some(id);
        let time = r.u64()?;
        let count = r.u64()?;
        let c = names.get(r.u32()? as usize).ok_or(Malformed)?;
        nacks.push((id, time, count, *c));
    }
    if !r.b.is_empty() || nacks.is_empty() {
        return Err(Malformed);
    }
    Ok(PelBody { group, nacks })
}

/// A PEL part's NACK count and body bytes (recovery's candidates).
pub fn measure_pel_part(body: &[u8]) -> Result<(u32, u32), Malformed> {
    let b = decode_pel_part(body)?;
    Ok((
        u32::try_from(b.nacks.len()).map_err(|_| Malformed)?,
        u32::try_from(body.len()).map_err(|_| Malformed)?,
    ))
}

// The PEL parts as the engine's directory sees them (`chunks` invariant 4).

/// Where directory index `j` past the stream's parts points (invariant 4).
pub(super) enum PelAt {
    /// A PEL part a checkpoint named (before recovery reads it).
    Recovered(usize),
    /// Group number `g` (in name order), its part `k`.
    Part(usize, usize),
}

/// A group's PEL parts, if its stream is chunked.
pub(super) fn pel_parts(g: &Group) -> &[PelPart] {
    g.parts.as_deref().map_or(&[], |p| &p.parts[..])
}

impl Stream {
    /// What directory index `j` past the stream's parts is (invariant 4).
    pub(super) fn pel_at(&self, j: usize) -> Option<PelAt> {
        let c = self.ch();
        if j < c.recovered_pel.len() {
            return Some(PelAt::Recovered(j));
        }
        let mut j = j - c.recovered_pel.len();
        for (gi, g) in self.groups.values().enumerate() {
            let n = pel_parts(g).len();
            if j < n {
                return Some(PelAt::Part(gi, j));
            }
            j -= n;
        }
        None
    }

    /// The directory index of the PEL part named `low`.
    pub(super) fn pel_index(&self, low: u64) -> Option<usize> {
        let c = self.ch();
        let mut at = self.parts.len();
        if let Some(r) = c.recovered_pel.iter().position(|p| p.low == low) {
            return Some(at + r);
        }
        at += c.recovered_pel.len();
        for g in self.groups.values() {
            if let Some(p) = g.parts.as_deref() {
                if let Some(k) = p
                    .parts
                    .iter()
                    .position(|x| record_low(p.ordinal, x.num) == low)
                {
                    return Some(at + k);
                }
                at += p.parts.len();
            }
        }
        None
    }

    pub(super) fn pel_group_mut(&mut self, gi: usize) -> Option<(&[u8], &mut Group)> {
        self.groups.iter_mut().nth(gi).map(|(n, g)| (&n[..], g))
    }

    pub(super) fn pel_len(&self) -> usize {
        self.ch().recovered_pel.len()
            + self
                .groups
                .values()
                .map(|g| pel_parts(g).len())
                .sum::<usize>()
    }

    pub(super) fn pel_info(&self, j: usize) -> PartInfo {
        match self.pel_at(j) {
            Some(PelAt::Recovered(r)) => self.ch().recovered_pel[r],
            Some(PelAt::Part(gi, k)) => {
                let g = self
                    .groups
                    .values()
                    .nth(gi)
                    .unwrap_or_else(|| unreachable!());
                let p = g.parts.as_deref().unwrap_or_else(|| unreachable!());
                let x = &p.parts[k];
                PartInfo {
                    low: record_low(p.ordinal, x.num),
                    depth: PEL_DEPTH,
                    dirty: x.dirty,
                    resident: true,
                    count: x.count as u32,
                    body: (x.count * super::group::NACK_ENC) as u32,
                    ver: x.ver,
                    loc: x.loc,
                    seq: x.seq,
                }
            }
            None => unreachable!("no PEL part {j}"),
        }
    }

    /// The PEL parts a recovered head named, by group name (recovery
    /// reads each record and calls `install_pel_part`).
    pub fn named_pel_parts(&self) -> Vec<(Box<[u8]>, u32, u64)> {
        let mut v = Vec::new();
        for (name, g) in &self.groups {
            if let Some(p) = g.parts.as_deref() {
                for num in g.named_pel_parts() {
                    v.push((name.clone(), p.ordinal, num));
                }
            }
        }
        v
    }

    /// Installs a PEL part's record read by recovery (see
    /// `Group::install_pel_part`).
    pub fn install_pel_part(
        &mut self,
        group: &[u8],
        num: u64,
        body: &[u8],
        loc: FlashLoc,
        seq: u64,
    ) -> Result<(), Malformed> {
        let g = self.groups.get_mut(group).ok_or(Malformed)?;
        g.install_pel_part(group, num, body, loc, seq)
    }

    /// Ends recovery's installs of PEL parts (`Group::finish_pel_parts`):
    /// returns how many named parts were not installed (missing or
    /// unreadable records).
    pub fn finish_pel_parts(&mut self) -> u64 {
        if let Some(c) = self.chunks.as_deref_mut() {
            c.recovered_pel.clear();
        }
        self.groups.values_mut().map(Group::finish_pel_parts).sum()
    }
}

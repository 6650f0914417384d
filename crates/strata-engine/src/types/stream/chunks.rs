//! A chunked stream (docs/collections.md, "As built (streams)"): past
//! `CHUNKED_AT` a stream's parts become flash records of their own (kind
//! 9, one per part), so the newest entries stay in RAM and old ones go to
//! flash part by part; the head record (kind 8) carries the counters and
//! the consumer groups.
//!
//! Parts are numbered in stream order (`SPart::num`): a new part at the
//! end takes `next_num`, trimming and XDEL drop parts at the front. The
//! head names the numbers in force, `[start, next_num)`; recovery gives
//! each number the newest record of it, so a part that left the front
//! needs no record (as a list's popped part). A part emptied further in
//! stays, empty, and its record says so (part invariant 3).
//!
//! Invariants:
//! 1. Parts' numbers increase along the stream and are below `next_num`.
//! 2. `cold_enc` and `cold_parts` are the bytes and count of the parts not
//!    in RAM; such a part is clean and has a record.
//! 3. `head_ver` changes whenever the head's fields may have changed (a
//!    part, a counter, a group): the head is published clean only if no
//!    change came after its capture.
//! 4. The directory's parts, as the engine indexes them (`Dir::part`), are
//!    the stream's parts, then the groups' PEL parts (`pel`), group by
//!    group in name order (before recovery reads them: the PEL parts a
//!    checkpoint named). PEL parts never leave RAM.

use super::codec::{decode_meta, decode_part};
use super::part::{SPart, BOUND_LEN};
use super::pel::PelParts;
use super::Stream;
use crate::base::FlashLoc;
use crate::types::parts::{Changes, DirHead, PartInfo};
use crate::types::Malformed;

pub use crate::base::STREAM_DEPTH;

/// A chunked stream's directory bookkeeping.
#[derive(Clone, Debug)]
pub(super) struct Chunks {
    pub head: DirHead,
    /// The number the next new part takes.
    pub next_num: u64,
    /// The last part version handed out.
    pub vers: u32,
    pub head_ver: u64,
    /// Where the demoter's hand stopped (a hint).
    pub hand: usize,
    pub cold_enc: usize,
    pub cold_parts: usize,
    /// Records no part refers to any more (parts gone from the front).
    pub dropped: Vec<FlashLoc>,
    /// The numbers a recovered head named, until recovery resolves them.
    pub recovered_span: Option<(u64, u64)>,
    /// The changed parts, by number (`Chunked` invariant 7): a journal
    /// write of a big stream finds them without a pass over every part.
    pub changes: Changes<u64>,
    /// The ordinal the next group's PEL parts take (`pel` invariant 3).
    pub next_group: u32,
    /// The PEL parts a checkpoint named, until recovery reads them.
    pub recovered_pel: Vec<PartInfo>,
}

impl Chunks {
    fn new(head: DirHead) -> Chunks {
        Chunks {
            head,
            next_num: 0,
            vers: 0,
            head_ver: 0,
            hand: 0,
            cold_enc: 0,
            cold_parts: 0,
            dropped: Vec::new(),
            recovered_span: None,
            changes: Changes::of(Vec::new()),
            next_group: 0,
            recovered_pel: Vec::new(),
        }
    }
}

/// A part of a recovered directory: what the engine knows of it, and its
/// bound (first id and node count).
#[derive(Clone, Debug)]
pub struct StreamPartInfo {
    pub info: PartInfo,
    pub bound: [u8; BOUND_LEN],
}

impl Stream {
    pub fn is_chunked(&self) -> bool {
        self.chunks.is_some()
    }

    pub(super) fn ch(&self) -> &Chunks {
        self.chunks
            .as_deref()
            .unwrap_or_else(|| unreachable!("not chunked"))
    }

    pub(super) fn ch_mut(&mut self) -> &mut Chunks {
        self.chunks
            .as_deref_mut()
            .unwrap_or_else(|| unreachable!("not chunked"))
    }

    /// Makes the stream chunked, as incarnation `cid`: its nodes are cut
    /// into parts of at least `CHUNK_MAX` bytes, all in RAM and changed.
    pub fn make_chunked(&mut self, cid: u64) {
        if self.chunks.is_some() {
            return;
        }
        let old = std::mem::take(&mut self.parts);
        let (length, enc, nodes) = (self.length, self.enc, self.node_count);
        self.chunks = Some(Box::new(Chunks::new(DirHead::new(cid))));
        (self.length, self.enc, self.node_count) = (0, 0, 0);
        for n in old
            .into_iter()
            .flat_map(|p| p.nodes.into_iter().flat_map(|ns| ns.into_iter()))
        {
            self.push_node(n);
        }
        debug_assert_eq!(
            (self.length, self.enc, self.node_count),
            (length, enc, nodes)
        );
        for i in 0..self.parts.len() {
            self.part_changed(i);
        }
        self.cut_pel_parts();
    }

    /// Cuts the PEL of each group that has no PEL parts yet into parts,
    /// under a fresh ordinal each (every part changed).
    fn cut_pel_parts(&mut self) {
        let mut next = self.ch().next_group;
        for g in self.groups.values_mut().filter(|g| g.parts.is_none()) {
            g.parts = Some(Box::new(PelParts::cut(next, &g.pel)));
            next += 1;
        }
        self.ch_mut().next_group = next;
    }

    /// A chunked stream rebuilt from a directory (recovery): its parts on
    /// flash, counters and groups to come from its head (`set_meta`).
    pub fn from_infos(
        cid: u64,
        parts: &[StreamPartInfo],
        pel: &[PartInfo],
        head_loc: Option<FlashLoc>,
        head_seq: u64,
    ) -> Stream {
        let mut s = Stream {
            chunks: Some(Box::new(Chunks::new(DirHead::written(
                cid, head_loc, head_seq,
            )))),
            ..Stream::default()
        };
        for sp in parts {
            let p = &sp.info;
            let Some(loc) = p.loc else { continue };
            let part = SPart::cold(p.low, sp.bound, p.count as u64, p.body as usize, loc, p.seq);
            s.length += part.live;
            s.enc += part.enc;
            s.node_count += part.node_count();
            let c = s.ch_mut();
            c.cold_enc += part.enc;
            c.cold_parts += 1;
            c.next_num = c.next_num.max(p.low + 1);
            s.parts.push(part);
        }
        s.ch_mut().recovered_pel = pel.to_vec();
        s
    }

    /// Sets the counters and groups from a head's fields (recovery), and
    /// the numbers it names; Malformed if they do not decode, or if the
    /// parts do not hold the entries and nodes the head counts.
    pub fn set_meta(&mut self, meta: &[u8], span: (u64, u64)) -> Result<(), Malformed> {
        let m = decode_meta(meta)?;
        self.last_id = m.last_id;
        self.first_id = m.first_id;
        self.max_deleted = m.max_deleted;
        self.entries_added = m.entries_added;
        self.groups = m.groups;
        if let Some(c) = self.chunks.as_deref_mut() {
            c.next_num = c.next_num.max(span.1);
            for p in self.groups.values().filter_map(|g| g.parts.as_deref()) {
                c.next_group = c.next_group.max(p.ordinal + 1);
            }
            // A head of format 13 or 14 holds whole PELs: they are cut now.
            self.cut_pel_parts();
        }
        // The parts found must hold what the head counts (else records
        // were lost: the parts' totals stand).
        if (m.length, m.node_count) != (self.length, self.node_count as u64) {
            return Err(Malformed);
        }
        Ok(())
    }

    /// The number a new part takes (0 when not chunked: one part).
    pub(super) fn take_part_number(&mut self) -> u64 {
        match self.chunks.as_deref_mut() {
            Some(c) => {
                c.next_num += 1;
                c.next_num - 1
            }
            None => 0,
        }
    }

    /// Part `i` changed (so did the head).
    pub(super) fn part_changed(&mut self, i: usize) {
        if let Some(c) = self.chunks.as_deref_mut() {
            let was = self.parts[i].dirty;
            self.parts[i].changed(&mut c.vers);
            c.head.dirty = true;
            c.head_ver += 1;
            if !was {
                let parts = &self.parts;
                c.changes.marked(parts[i].num, || {
                    parts.iter().filter(|p| p.dirty).map(|p| p.num).collect()
                });
            }
        }
    }

    /// The head's fields may change (a write is under way).
    pub fn will_change(&mut self) {
        if let Some(c) = self.chunks.as_deref_mut() {
            c.head.dirty = true;
            c.head_ver += 1;
        }
    }

    /// Drops the first part; its entries must be accounted for by the
    /// caller (`length`), its bytes and nodes are here.
    pub(super) fn drop_front_part(&mut self) {
        if self.parts.is_empty() {
            return;
        }
        let p = self.parts.remove(0);
        self.enc -= p.enc;
        self.node_count -= p.node_count();
        if let Some(c) = self.chunks.as_deref_mut() {
            if !p.is_resident() {
                c.cold_enc -= p.enc;
                c.cold_parts -= 1;
            }
            c.dropped.extend(p.loc);
            if p.dirty {
                c.changes.cleaned();
            }
            c.head.dirty = true;
            c.head_ver += 1;
            c.hand = 0;
        }
    }

    /// Drops the parts with no node at the front (part invariant 3).
    pub(super) fn drop_empty_front(&mut self) {
        while self.parts.first().is_some_and(|p| p.node_count() == 0) {
            self.drop_front_part();
        }
    }

    /// The numbers in force, `[start, end)`.
    pub(super) fn span(&self) -> (u64, u64) {
        let end = self.ch().next_num;
        (self.parts.first().map_or(end, |p| p.num), end)
    }

    /// The part numbered `num`, if it is in the stream.
    pub(super) fn part_numbered(&self, num: u64) -> Option<usize> {
        let i = self.parts.partition_point(|p| p.num < num);
        (self.parts.get(i)?.num == num).then_some(i)
    }

    pub(super) fn install_part(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
    ) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        if p.is_resident() || p.loc != Some(loc) {
            return Ok(false);
        }
        let b = decode_part(body)?;
        if b.first != p.first()
            || b.live != p.live
            || b.enc != p.enc
            || b.nodes.len() != p.node_count()
        {
            return Err(Malformed);
        }
        let enc = p.enc;
        let p = &mut self.parts[i];
        p.nodes = Some(Box::new(b.nodes));
        p.referenced = true;
        let c = self.ch_mut();
        c.cold_enc -= enc;
        c.cold_parts -= 1;
        Ok(true)
    }

    pub(super) fn evict_part(&mut self, i: usize) -> usize {
        let p = &mut self.parts[i];
        if p.dirty || p.loc.is_none() || !p.is_resident() {
            return 0;
        }
        p.nodes = None;
        let enc = p.enc;
        let c = self.ch_mut();
        c.cold_enc += enc;
        c.cold_parts += 1;
        enc
    }
}

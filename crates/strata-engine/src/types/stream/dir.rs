//! The stream's side of the chunked directory (`Dir`, `types/chunked`):
//! its head, its parts and its groups' PEL parts as the engine indexes,
//! captures, loads and evicts them (`chunks.rs` states the invariants; its
//! invariant 4 is the order of the parts here).

use super::chunks::STREAM_DEPTH;
use super::pel::{PelAt, PEL_DEPTH};
use super::{part_nodes, Stream};
use crate::base::FlashLoc;
use crate::types::parts::{clock_walk, Dir, DirHead, PartClock, PartInfo};
use crate::types::Malformed;

impl Dir for Stream {
    fn head(&self) -> &DirHead {
        &self.ch().head
    }
    fn head_mut(&mut self) -> &mut DirHead {
        &mut self.ch_mut().head
    }
    fn head_span(&self) -> Option<(u64, u64)> {
        Some(self.span())
    }
    fn head_version(&self) -> u64 {
        self.ch().head_ver
    }
    fn head_meta(&self, out: &mut Vec<u8>) {
        self.encode_meta(out);
    }
    fn recovered_span(&self) -> Option<(u64, u64)> {
        self.ch().recovered_span
    }
    fn set_recovered_span(&mut self, span: (u64, u64)) {
        self.ch_mut().recovered_span = Some(span);
    }
    fn part_count(&self) -> usize {
        self.parts.len() + self.pel_len()
    }
    fn entries_bytes(&self) -> usize {
        self.parts.capacity() * std::mem::size_of::<super::part::SPart>()
            + self.pel_len() * std::mem::size_of::<super::pel::PelPart>()
    }
    fn part(&self, i: usize) -> PartInfo {
        let Some(p) = self.parts.get(i) else {
            return self.pel_info(i - self.parts.len());
        };
        PartInfo {
            low: p.num,
            depth: STREAM_DEPTH,
            dirty: p.dirty,
            resident: p.is_resident(),
            count: p.live.min(u32::MAX as u64) as u32,
            body: p.enc.min(u32::MAX as usize) as u32,
            ver: p.ver,
            loc: p.loc,
            seq: p.seq,
        }
    }
    fn part_first(&self, i: usize) -> Option<&[u8]> {
        self.parts.get(i).map(|p| &p.bound[..])
    }
    fn find_part(&self, low: u64, depth: u8, _: usize) -> Option<usize> {
        if depth == PEL_DEPTH {
            return self.pel_index(low);
        }
        self.part_numbered(low)
    }
    fn part_of(&self, num: u64) -> usize {
        self.parts
            .partition_point(|p| p.num <= num)
            .saturating_sub(1)
    }
    fn part_at(&self, _: usize) -> Option<usize> {
        None
    }
    fn scan_parts(&self, _: u64, _: usize) -> std::ops::Range<usize> {
        0..0
    }
    /// A stream's parts are appended to and trimmed whole: a cold chain
    /// would hold little (their changes are in the part in RAM, the last).
    fn keeps_cold_chains(&self) -> bool {
        false
    }
    fn hand(&mut self) -> &mut usize {
        &mut self.ch_mut().hand
    }
    /// Over the stream's parts only: its groups' PEL parts stay in RAM.
    fn clock_pass(&mut self, want: usize, cold_room: usize) -> (usize, usize, usize, Vec<usize>) {
        let mut hand = self.ch().hand;
        let resident = self.parts.len() - self.ch().cold_parts;
        let parts = &mut self.parts;
        let step = clock_walk(parts.len(), resident, &mut hand, want, |i| {
            let p = &mut parts[i];
            PartClock {
                resident: p.is_resident(),
                referenced: std::mem::replace(&mut p.referenced, false),
                dirty: p.dirty,
                has_record: p.loc.is_some(),
                body: p.enc,
            }
        });
        self.ch_mut().hand = hand;
        crate::types::parts::settle(self, step, cold_room)
    }
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc) {
        if let Some(p) = self.parts.get_mut(i) {
            p.loc = Some(loc);
            return;
        }
        match self.pel_at(i - self.parts.len()) {
            Some(PelAt::Recovered(r)) => self.ch_mut().recovered_pel[r].loc = Some(loc),
            Some(PelAt::Part(gi, k)) => {
                if let Some(p) = self
                    .pel_group_mut(gi)
                    .and_then(|(_, g)| g.parts.as_deref_mut())
                {
                    p.parts[k].loc = Some(loc);
                }
            }
            None => {}
        }
    }
    fn parts_at(&self, loc: FlashLoc, low: u64, depth: u8, _: &[u8]) -> Vec<usize> {
        let i = if depth == PEL_DEPTH {
            self.pel_index(low)
        } else {
            self.part_numbered(low)
        };
        i.filter(|&i| Dir::part(self, i).loc == Some(loc))
            .into_iter()
            .collect()
    }
    fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        if i < self.parts.len() {
            return self.encode_part_body(i, out);
        }
        if let Some(PelAt::Part(gi, k)) = self.pel_at(i - self.parts.len()) {
            if let Some((name, g)) = self.groups.iter().nth(gi) {
                if let Some(p) = g.parts.as_deref() {
                    p.encode_part(k, name, &g.pel, out);
                }
            }
        }
    }
    fn published(
        &mut self,
        i: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>> {
        if i >= self.parts.len() {
            let Some(PelAt::Part(gi, k)) = self.pel_at(i - self.parts.len()) else {
                return None;
            };
            let (_, g) = self.pel_group_mut(gi)?;
            return g.parts.as_deref_mut()?.published(k, ver, loc, seq);
        }
        let p = self.parts.get_mut(i)?;
        if seq < p.seq {
            return None;
        }
        p.seq = seq;
        let old = p.loc.replace(loc);
        if p.ver == ver && p.dirty {
            p.dirty = false;
            self.ch_mut().changes.cleaned();
        }
        Some(old)
    }
    fn any_dirty(&self) -> bool {
        self.ch().changes.any()
            || self
                .groups
                .values()
                .any(|g| g.parts.as_deref().is_some_and(|p| p.dirty > 0))
    }
    fn dirty_parts(&self) -> Vec<usize> {
        let parts = &self.parts;
        let mut v = self.ch().changes.parts(
            parts.len(),
            |&num| Dir::part_of(self, num),
            |i| parts[i].dirty,
        );
        let mut at = parts.len() + self.ch().recovered_pel.len();
        for g in self.groups.values() {
            let Some(p) = g.parts.as_deref() else {
                continue;
            };
            if p.dirty > 0 {
                v.extend(
                    p.parts
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| x.dirty)
                        .map(|(k, _)| at + k),
                );
            }
            at += p.parts.len();
        }
        v
    }
    fn evict(&mut self, i: usize) -> usize {
        if i >= self.parts.len() {
            return 0; // PEL parts stay in RAM
        }
        self.evict_part(i)
    }
    fn swap_used(&mut self, i: usize, on: bool) -> bool {
        self.parts
            .get_mut(i)
            .is_some_and(|p| std::mem::replace(&mut p.referenced, on))
    }
    fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        named: (u64, u8),
    ) -> Result<bool, Malformed> {
        if named.1 == PEL_DEPTH || self.parts.get(i).is_none_or(|p| p.num != named.0) {
            return Ok(false);
        }
        self.install_part(i, loc, body)
    }
    fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        Vec::new()
    }
    fn take_dropped_refs(&mut self) -> Vec<FlashLoc> {
        let mut v = std::mem::take(&mut self.ch_mut().dropped);
        for g in self.groups.values_mut() {
            if let Some(p) = g.parts.as_deref_mut() {
                v.append(&mut p.dropped);
            }
        }
        v
    }
    fn resident_bytes(&self) -> usize {
        self.body_len() - self.ch().cold_enc
    }
    fn resident_parts(&self) -> usize {
        self.parts.len() - self.ch().cold_parts + self.pel_len()
    }
    fn body_len(&self) -> usize {
        Stream::body_len(self)
    }
    fn len(&self) -> usize {
        usize::try_from(self.length).unwrap_or(usize::MAX)
    }
    fn is_empty(&self) -> bool {
        self.length == 0
    }
    fn check(&self) -> Result<(), String> {
        let c = self.ch();
        let (mut len, mut enc, mut nodes, mut cold, mut cold_n) = (0, 0, 0, 0, 0);
        let mut prev: Option<(u64, super::StreamId)> = None;
        for p in &self.parts {
            if prev.is_some_and(|(n, f)| n >= p.num || f > p.first()) || p.num >= c.next_num {
                return Err(format!("part {} out of order", p.num));
            }
            prev = Some((p.num, p.first()));
            len += p.live;
            enc += p.enc;
            nodes += p.node_count();
            match p.nodes.as_deref() {
                Some(ns) => {
                    let live: u64 = ns.iter().map(|n| n.live).sum();
                    let e: usize = ns.iter().map(super::node_enc).sum();
                    if (live, e, ns.len()) != (p.live, p.enc, p.node_count()) {
                        return Err(format!("part {}: counts", p.num));
                    }
                    if part_nodes(p).any(|n| n.master < p.first()) {
                        return Err(format!("part {}: a node below its first id", p.num));
                    }
                }
                None if p.dirty || p.loc.is_none() => {
                    return Err("cold part without a clean record".into())
                }
                None => {
                    cold += p.enc;
                    cold_n += 1;
                }
            }
        }
        if (len, enc, nodes) != (self.length, self.enc, self.node_count) {
            return Err("totals".into());
        }
        if (cold, cold_n) != (c.cold_enc, c.cold_parts) {
            return Err("cold totals".into());
        }
        let mut ordinals = std::collections::BTreeSet::new();
        for (name, g) in &self.groups {
            let Some(p) = g.parts.as_deref() else {
                return Err(format!("group {name:?} without PEL parts"));
            };
            if !ordinals.insert(p.ordinal) || p.ordinal >= c.next_group {
                return Err("PEL part ordinals".into());
            }
            p.check(&g.pel)?;
        }
        Ok(())
    }
}

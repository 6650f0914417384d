//! A chunked hash's or set's directory as the engine sees it (`parts::Dir`).

use super::{Chunked, Elem};
use crate::base::{FlashLoc, Malformed};
use crate::types::parts::{range_high, Dir, DirHead, PartInfo};

impl<V: Elem> Dir for Chunked<V> {
    fn head(&self) -> &DirHead {
        &self.head
    }
    fn head_mut(&mut self) -> &mut DirHead {
        &mut self.head
    }
    fn part_count(&self) -> usize {
        self.parts.len()
    }
    fn entries_bytes(&self) -> usize {
        Chunked::entries_bytes(self)
    }
    fn part(&self, i: usize) -> PartInfo {
        let p = &self.parts[i];
        PartInfo {
            low: p.low(),
            depth: p.depth(),
            dirty: p.dirty(),
            resident: p.is_resident(),
            count: p.count(),
            body: p.body(),
            ver: p.ver(),
            loc: p.loc(),
            seq: p.seq(),
        }
    }
    fn part_of(&self, h: u64) -> usize {
        Chunked::part_of(self, h)
    }
    fn any_dirty(&self) -> bool {
        self.any_changed()
    }
    fn filter_ram(&self) -> usize {
        self.filter_ram
    }
    fn adds_blind(&self, i: usize, elem: &[u8], entry: usize) -> bool {
        Chunked::adds_blind(self, i, elem, entry)
    }
    fn rules_out(&self, i: usize, elem: &[u8]) -> bool {
        self.blind_ok(i, crate::types::parts::elem_hash(elem))
    }
    fn take_blind_adds(&mut self) -> u64 {
        Chunked::take_blind_adds(self)
    }
    fn shed_filters(&mut self) -> usize {
        Chunked::shed_filters(self)
    }
    fn peek_plan(&self, i: usize, elems: &[&[u8]]) -> crate::types::parts::PeekPlan {
        Chunked::peek_plan(self, i, elems.iter().copied())
    }
    fn put_peek(
        &mut self,
        i: usize,
        loc: FlashLoc,
        image: bool,
        body: &[u8],
    ) -> Result<bool, Malformed> {
        Chunked::put_peek(self, i, loc, image, body)
    }
    fn drop_peeks(&mut self) {
        Chunked::drop_peeks(self)
    }
    fn tags_changes(&self) -> bool {
        V::BLIND
    }
    fn dirty_parts(&self) -> Vec<usize> {
        self.changed_parts()
    }
    fn part_at(&self, i: usize) -> Option<usize> {
        self.locate(i).map(|(p, _)| p)
    }
    fn scan_parts(&self, from: u64, count: usize) -> std::ops::Range<usize> {
        Chunked::scan_parts(self, from, count)
    }
    fn hand(&mut self) -> &mut usize {
        &mut self.hand
    }
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc) {
        if let Some(p) = self.parts.get_mut(i) {
            let seq = p.seq();
            p.set_loc(Some(loc), seq);
        }
    }
    fn parts_at(&self, loc: FlashLoc, low: u64, depth: u8, _: &[u8]) -> Vec<usize> {
        let high = range_high(low, depth);
        (self.part_of(low)..self.parts.len())
            .take_while(|&i| self.parts[i].low() <= high)
            .filter(|&i| self.parts[i].loc() == Some(loc))
            .collect()
    }
    fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        Chunked::encode_part(self, i, out)
    }
    fn published(
        &mut self,
        i: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>> {
        Chunked::published(self, i, ver, loc, seq)
    }
    fn evict(&mut self, i: usize) -> usize {
        Chunked::evict(self, i)
    }
    /// (A part on flash is passed over without building its `PartInfo`:
    /// the hand walks every part of a collection mostly on flash.)
    fn part_clock(&mut self, i: usize) -> crate::types::parts::PartClock {
        let p = &mut self.parts[i];
        crate::types::parts::PartClock {
            resident: p.is_resident(),
            referenced: p.swap_referenced(false),
            dirty: p.dirty(),
            has_record: p.loc().is_some(),
            body: p.body() as usize,
        }
    }
    fn swap_used(&mut self, i: usize, on: bool) -> bool {
        self.parts.get_mut(i).is_some_and(|p| p.swap_referenced(on))
    }
    fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        named: (u64, u8),
    ) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        let wider = (p.low(), p.depth()) != named;
        Chunked::install(self, i, loc, body, wider)
    }
    fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        Chunked::take_new_refs(self)
    }
    fn resident_bytes(&self) -> usize {
        self.resident + self.peek_ram()
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
        Chunked::check(self)
    }
}

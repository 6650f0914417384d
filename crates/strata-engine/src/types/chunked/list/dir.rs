//! `Dir` for chunked lists: what the engine's journal, demotion,
//! collector, checkpoint and recovery see of one.

use super::part::{packed_iter, Items};
use super::ChunkedList;
use crate::base::FlashLoc;
use crate::types::parts::{Dir, DirHead, PartInfo};
use crate::types::{packed_len, put, Malformed};
use std::collections::VecDeque;

/// A part's chunk body, and installing one read from flash.
impl ChunkedList {
    fn encode(&self, i: usize, out: &mut Vec<u8>) {
        let p = &self.parts[i];
        match p.data() {
            Some(Items::Packed(b)) => out.extend_from_slice(b),
            Some(Items::Deque(d)) => {
                out.reserve(4 + p.body() as usize);
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
        if p.data().is_some() || p.loc() != Some(loc) {
            return Ok(false);
        }
        let (n, _) = super::measure_list(body)?;
        let skip = p.start().wrapping_sub(low);
        if skip > n as u64 || skip + p.count() as u64 > n as u64 {
            return Err(Malformed);
        }
        let items = if skip == 0 && n == p.count() {
            Items::Packed(bytes::Bytes::copy_from_slice(body))
        } else {
            let d: VecDeque<Box<[u8]>> = packed_iter(body)
                .skip(skip as usize)
                .take(p.count() as usize)
                .map(Box::from)
                .collect();
            Items::Deque(d)
        };
        let b: usize = items.iter().map(|e| packed_len(e.len())).sum();
        let p = &mut self.parts[i];
        if b != p.body() as usize {
            return Err(Malformed);
        }
        p.set_data(Some(items));
        p.set_referenced(true);
        self.resident += b;
        self.resident_parts += 1;
        Ok(true)
    }
}

impl Dir for ChunkedList {
    fn head(&self) -> &DirHead {
        &self.head
    }
    fn head_mut(&mut self) -> &mut DirHead {
        &mut self.head
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
    fn entries_bytes(&self) -> usize {
        self.parts.capacity() * std::mem::size_of::<super::part::LPart>()
    }
    fn part(&self, i: usize) -> PartInfo {
        let p = &self.parts[i];
        PartInfo {
            low: p.start(),
            depth: 0,
            dirty: p.dirty(),
            resident: p.data().is_some(),
            count: p.count(),
            body: p.body(),
            ver: p.ver(),
            loc: p.loc(),
            seq: p.seq(),
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
    fn hand(&mut self) -> &mut usize {
        &mut self.hand
    }
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc) {
        if let Some(p) = self.parts.get_mut(i) {
            let seq = p.seq();
            p.set_loc(Some(loc), seq);
        }
    }
    fn parts_at(&self, loc: FlashLoc, low: u64, _: u8, _: &[u8]) -> Vec<usize> {
        // The parts of one record are adjacent, usually from about its
        // first position on (pops may have moved the first part past it).
        let i0 = self.part_of_pos(low);
        let near: Vec<usize> = (i0..self.parts.len())
            .take_while(|&i| i == i0 || self.parts[i].loc() == Some(loc))
            .filter(|&i| self.parts[i].loc() == Some(loc))
            .collect();
        if !near.is_empty() {
            return near;
        }
        // Renumbered parts that were not written yet keep a record of
        // their old positions: look everywhere (the collector asks this of
        // each chunk record it meets; O(parts) for a dead one).
        (0..self.parts.len())
            .filter(|&i| self.parts[i].loc() == Some(loc))
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
        if seq < p.seq() {
            return None;
        }
        let old = p.set_loc(Some(loc), seq);
        if p.ver() == ver {
            p.set_dirty(false);
        }
        Some(old)
    }
    fn evict(&mut self, i: usize) -> usize {
        let p = &mut self.parts[i];
        if p.dirty() || p.loc().is_none() || p.data().is_none() {
            return 0;
        }
        p.set_data(None);
        self.resident -= p.body() as usize;
        self.resident_parts -= 1;
        p.body() as usize
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
            if p.count() == 0 {
                return Err("empty part".into());
            }
            if !self.gapped && next.is_some_and(|n| n != p.start()) {
                return Err(format!("positions not consecutive at {:#x}", p.start()));
            }
            next = Some(p.start().wrapping_add(p.count() as u64));
            len += p.count() as usize;
            body += p.body() as usize;
            match p.data() {
                Some(it) => {
                    resident += p.body() as usize;
                    let (n, b) = it.iter().fold((0usize, 0usize), |(n, b), e| {
                        (n + 1, b + packed_len(e.len()))
                    });
                    if (n, b) != (p.count() as usize, p.body() as usize) {
                        return Err("count or body".into());
                    }
                }
                None if p.dirty() || p.loc().is_none() => {
                    return Err("cold part without a clean record".into())
                }
                None => {}
            }
        }
        let rp = self.parts.iter().filter(|p| p.data().is_some()).count();
        if (len, body, resident, rp) != (self.len, self.body, self.resident, self.resident_parts) {
            return Err("totals".into());
        }
        Ok(())
    }
}

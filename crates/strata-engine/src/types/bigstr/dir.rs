//! `Dir` for chunked strings: what the engine's journal, demotion,
//! collector, checkpoint and recovery see of one; and rebuilding one from
//! its records (recovery).

use super::{part_count_of, Bytes, ChunkedStr, Part, STR_DEPTH, STR_PART};
use crate::base::FlashLoc;
use crate::types::parts::{Dir, DirHead, PartClock, PartInfo};
use crate::types::Malformed;

/// Bytes of a string head's fields after its span: length (u64 LE), parts
/// that are not holes (u64 LE), memcached flags (u32 LE), bytes per part
/// (u32 LE: `STR_PART`; a head of another part size is refused).
pub const STR_META_LEN: usize = 24;

impl ChunkedStr {
    /// A chunked string rebuilt from a directory (recovery): its parts on
    /// flash by number (`low`; numbers missing are holes); the length and
    /// flags come from its head (`set_meta`).
    pub fn from_infos(
        cid: u64,
        parts: &[PartInfo],
        head_loc: Option<FlashLoc>,
        head_seq: u64,
    ) -> ChunkedStr {
        let mut s = ChunkedStr::empty(DirHead::written(cid, head_loc, head_seq), 0);
        for p in parts {
            let Some(loc) = p.loc else { continue };
            let i = p.low as usize;
            if p.low > u32::MAX as u64 || i < s.parts.len() {
                continue;
            }
            while s.parts.len() < i {
                s.parts.push(Part::new(Bytes::Hole));
            }
            let mut part = Part::new(Bytes::Cold);
            part.referenced = false;
            part.loc = Some(loc);
            part.seq = p.seq;
            s.parts.push(part);
            s.stored += p.body as usize;
            s.solid += 1;
            // Until `set_meta`: the length the parts imply.
            s.len = i as u64 * STR_PART as u64 + p.body as u64;
        }
        s
    }

    /// Whether a head's fields are a string's of this part size.
    pub fn meta_fits(meta: &[u8]) -> bool {
        meta.len() == STR_META_LEN && meta[20..24] == (STR_PART as u32).to_le_bytes()
    }

    /// The head's fields (after its span).
    pub fn encode_meta(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&(self.solid as u64).to_le_bytes());
        out.extend_from_slice(&self.client_flags.to_le_bytes());
        out.extend_from_slice(&(STR_PART as u32).to_le_bytes());
    }

    /// Sets the length and flags from a head's fields (recovery), given
    /// each part's record body length (`bodies`, by part number). Parts
    /// that do not cover what the length says they must become holes, and
    /// a string whose last part is not there ends with its last part that
    /// is: Malformed then (damage), the string keeps what it holds.
    pub fn set_meta(
        &mut self,
        meta: &[u8],
        span: (u64, u64),
        bodies: &std::collections::BTreeMap<u64, u32>,
    ) -> Result<(), Malformed> {
        if !Self::meta_fits(meta) {
            return Err(Malformed);
        }
        let u64_at =
            |r: std::ops::Range<usize>| u64::from_le_bytes(meta[r].try_into().unwrap_or_default());
        let (len, solid) = (u64_at(0..8), u64_at(8..16));
        self.client_flags = u32::from_le_bytes(meta[16..20].try_into().unwrap_or_default());
        let mut damaged = span != (0, part_count_of(len) as u64);
        self.len = len;
        self.parts.truncate(part_count_of(len));
        while self.parts.len() < part_count_of(len) {
            self.parts.push(Part::new(Bytes::Hole));
        }
        for i in 0..self.parts.len() {
            if self.parts[i].loc.is_none() {
                continue;
            }
            let body = bodies.get(&(i as u64)).copied().unwrap_or(0) as usize;
            if body != self.covered(i) {
                self.stored -= body;
                self.solid -= 1;
                self.parts[i] = Part::new(Bytes::Hole);
                damaged = true;
            }
        }
        // Invariant 3: end with the last part that holds bytes.
        while self.parts.last().is_some_and(|p| p.loc.is_none()) {
            self.parts.pop();
            damaged = true;
        }
        if let Some(last) = self.parts.len().checked_sub(1) {
            let tail = bodies.get(&(last as u64)).copied().unwrap_or(0) as u64;
            self.len = self.len.min(last as u64 * STR_PART as u64 + tail);
        } else {
            self.len = 0;
        }
        if damaged || solid != self.solid as u64 {
            return Err(Malformed);
        }
        Ok(())
    }

    fn install_part(&mut self, i: usize, loc: FlashLoc, body: &[u8]) -> Result<bool, Malformed> {
        let covered = self.covered(i);
        let Some(p) = self.parts.get_mut(i) else {
            return Ok(false);
        };
        if !matches!(p.bytes, Bytes::Cold) || p.loc != Some(loc) {
            return Ok(false);
        }
        if body.len() != covered {
            return Err(Malformed);
        }
        p.bytes = Bytes::Ram(body.to_vec());
        p.referenced = true;
        self.resident += covered;
        self.resident_parts += 1;
        Ok(true)
    }

    fn evict_part(&mut self, i: usize) -> usize {
        let covered = self.covered(i);
        let p = &mut self.parts[i];
        if p.dirty || p.loc.is_none() || !matches!(p.bytes, Bytes::Ram(_)) {
            return 0;
        }
        p.bytes = Bytes::Cold;
        self.resident -= covered;
        self.resident_parts -= 1;
        covered
    }
}

impl Dir for ChunkedStr {
    fn head(&self) -> &DirHead {
        &self.head
    }
    fn head_mut(&mut self) -> &mut DirHead {
        &mut self.head
    }
    fn head_span(&self) -> Option<(u64, u64)> {
        Some((0, self.parts.len() as u64))
    }
    fn head_version(&self) -> u64 {
        self.head_ver
    }
    fn head_meta(&self, out: &mut Vec<u8>) {
        self.encode_meta(out);
    }
    fn recovered_span(&self) -> Option<(u64, u64)> {
        self.recovered_span
    }
    fn set_recovered_span(&mut self, span: (u64, u64)) {
        self.recovered_span = Some(span);
    }
    fn part_count(&self) -> usize {
        self.parts.len()
    }
    fn entries_bytes(&self) -> usize {
        self.parts.capacity() * std::mem::size_of::<super::Part>()
    }
    fn part(&self, i: usize) -> PartInfo {
        let p = &self.parts[i];
        let hole = matches!(p.bytes, Bytes::Hole);
        PartInfo {
            low: i as u64,
            depth: STR_DEPTH,
            dirty: p.dirty,
            resident: !matches!(p.bytes, Bytes::Cold),
            count: u32::from(!hole),
            body: if hole { 0 } else { self.covered(i) as u32 },
            ver: p.ver,
            loc: p.loc,
            seq: p.seq,
        }
    }
    fn find_part(&self, low: u64, _: u8, _: usize) -> Option<usize> {
        ((low as usize) < self.parts.len()).then_some(low as usize)
    }
    fn part_of(&self, num: u64) -> usize {
        (num as usize).min(self.parts.len().saturating_sub(1))
    }
    /// The part holding byte `i` (`Need::Indexes` counts bytes here).
    fn part_at(&self, i: usize) -> Option<usize> {
        let p = i / STR_PART;
        (p < self.parts.len()).then_some(p)
    }
    fn scan_parts(&self, _: u64, _: usize) -> std::ops::Range<usize> {
        0..0
    }
    fn hand(&mut self) -> &mut usize {
        &mut self.hand
    }
    /// A hole is no RAM to free; a part's bytes are what it covers.
    fn part_clock(&mut self, i: usize) -> PartClock {
        let len = self.len;
        let p = &mut self.parts[i];
        PartClock {
            resident: matches!(p.bytes, Bytes::Ram(_)),
            referenced: std::mem::replace(&mut p.referenced, false),
            dirty: p.dirty,
            has_record: p.loc.is_some(),
            body: (len - (i * STR_PART) as u64).min(STR_PART as u64) as usize,
        }
    }
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc) {
        if let Some(p) = self.parts.get_mut(i) {
            p.loc = Some(loc);
        }
    }
    fn parts_at(&self, loc: FlashLoc, low: u64, _: u8, _: &[u8]) -> Vec<usize> {
        self.find_part(low, STR_DEPTH, 0)
            .filter(|&i| self.parts[i].loc == Some(loc))
            .into_iter()
            .collect()
    }
    fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        if let Bytes::Ram(v) = &self.parts[i].bytes {
            out.extend_from_slice(v);
        }
    }
    fn published(
        &mut self,
        i: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>> {
        let p = self.parts.get_mut(i)?;
        if seq < p.seq {
            return None;
        }
        p.seq = seq;
        let old = p.loc.replace(loc);
        if p.ver == ver && p.dirty {
            p.dirty = false;
            self.changes.cleaned();
        }
        Some(old)
    }
    fn any_dirty(&self) -> bool {
        self.changes.any()
    }
    fn dirty_parts(&self) -> Vec<usize> {
        let parts = &self.parts;
        self.changes.parts(
            parts.len(),
            |&num| (num as usize).min(parts.len().saturating_sub(1)),
            |i| parts[i].dirty,
        )
    }
    fn evict(&mut self, i: usize) -> usize {
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
        if named.0 != i as u64 {
            return Ok(false);
        }
        self.install_part(i, loc, body)
    }
    fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        Vec::new()
    }
    fn resident_bytes(&self) -> usize {
        self.resident
    }
    /// Parts not on flash: in RAM, or holes (nothing to load).
    fn resident_parts(&self) -> usize {
        self.resident_parts + (self.parts.len() - self.solid)
    }
    fn body_len(&self) -> usize {
        self.stored
    }
    fn len(&self) -> usize {
        usize::try_from(self.len).unwrap_or(usize::MAX)
    }
    fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn check(&self) -> Result<(), String> {
        if self.parts.len() != part_count_of(self.len) {
            return Err(format!("{} parts for {} bytes", self.parts.len(), self.len));
        }
        let (mut resident, mut rparts, mut stored, mut solid) = (0, 0, 0, 0);
        for (i, p) in self.parts.iter().enumerate() {
            let covered = self.covered(i);
            match &p.bytes {
                Bytes::Hole => {
                    if p.dirty || p.loc.is_some() {
                        return Err(format!("hole {i} with a record or changed"));
                    }
                    continue;
                }
                Bytes::Ram(v) => {
                    if v.len() != covered {
                        return Err(format!("part {i}: {} bytes, covers {covered}", v.len()));
                    }
                    resident += covered;
                    rparts += 1;
                }
                Bytes::Cold if p.dirty || p.loc.is_none() => {
                    return Err("cold part without a clean record".into())
                }
                Bytes::Cold => {}
            }
            stored += covered;
            solid += 1;
        }
        if self
            .parts
            .last()
            .is_some_and(|p| matches!(p.bytes, Bytes::Hole))
        {
            return Err("the last part is a hole".into());
        }
        if (resident, rparts, stored, solid)
            != (self.resident, self.resident_parts, self.stored, self.solid)
        {
            return Err("totals".into());
        }
        Ok(())
    }
}

//! What the log and tiering do to a chunked collection's parts: the list of
//! changed parts (invariant 7), encoding a part for its record, publishing
//! a written record, eviction, and installing a record read from flash.

use super::part::{check_packed, decode_elems, Data};
use super::{Chunked, Elem};
use crate::base::FlashLoc;
use crate::types::parts::elem_hash;
use crate::types::Malformed;

impl<V: Elem> Chunked<V> {
    /// Marks part `i` changed (invariant 7).
    pub(super) fn mark_dirty(&mut self, i: usize) {
        let p = &mut self.parts[i];
        if p.dirty() {
            return;
        }
        p.set_dirty(true);
        let (low, parts) = (p.low(), &self.parts);
        self.changes.marked(low, || {
            parts
                .iter()
                .filter(|p| p.dirty())
                .map(|p| p.low())
                .collect()
        });
    }

    /// The changed parts, in order (invariant 7).
    pub fn changed_parts(&self) -> Vec<usize> {
        let parts = &self.parts;
        self.changes
            .parts(parts.len(), |&l| self.part_of(l), |i| parts[i].dirty())
    }

    /// Whether any part changed since its record.
    pub fn any_changed(&self) -> bool {
        self.changes.any()
    }

    /// Records that a split made one more part refer to (invariant 6); the
    /// engine retains each once.
    pub fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        std::mem::take(&mut self.new_refs)
    }

    /// Appends the chunk body of part `i` (must be in RAM): element count
    /// (u32 LE) and the elements.
    pub fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        let p = &self.parts[i];
        let m = match p.elems() {
            Some(Data::Map(m)) => m,
            Some(Data::Packed(b)) => return out.extend_from_slice(b),
            Some(Data::Cold(_)) | None => return,
        };
        out.reserve(4 + p.body() as usize);
        out.extend_from_slice(&(m.len() as u32).to_le_bytes());
        for (k, v) in m.iter() {
            crate::types::put(out, k);
            v.put(out);
        }
    }

    /// Points part `i` at its record `loc` (`Dir::published`).
    pub fn published(
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
        // (A record of this part's own: `encode_part`'s.)
        p.set_own(true);
        let old = p.set_loc(Some(loc), seq);
        if p.ver() == ver && p.dirty() {
            p.set_dirty(false);
            self.changes.cleaned();
        }
        Some(old)
    }

    /// Drops part `i` from RAM if it is clean and has a record; returns
    /// the bytes freed.
    pub fn evict(&mut self, i: usize) -> usize {
        let p = &mut self.parts[i];
        if p.dirty() || p.loc().is_none() || !p.is_resident() {
            return 0;
        }
        self.leave_filter(i);
        let p = &self.parts[i];
        self.resident -= p.body() as usize;
        self.resident_parts -= 1;
        p.body() as usize
    }

    /// Installs the elements of part `i`'s record (`body` as
    /// `encode_part` wrote it; `wider`: a record of a wider range,
    /// invariant 5), if the part is still cold at `loc`. Returns whether
    /// it was installed. A record of the part's own range is kept packed.
    pub fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        wider: bool,
    ) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        if p.is_resident() || p.loc() != Some(loc) {
            return Ok(false);
        }
        let (low, high) = (p.low(), p.high());
        let data = if wider {
            let m = decode_elems::<V>(body, |k| {
                let h = elem_hash(k);
                h >= low && h <= high
            })?;
            Data::Map(Box::new(m))
        } else {
            check_packed::<V>(body)?;
            Data::Packed(bytes::Bytes::copy_from_slice(body))
        };
        if data.len() != self.parts[i].count() as usize {
            return Err(Malformed);
        }
        self.drop_filter(i);
        let ver = self.next_ver();
        let p = &mut self.parts[i];
        p.set_own(!wider);
        p.set_data(Some(data));
        p.set_ver(ver);
        p.set_referenced(true);
        self.resident += p.body() as usize;
        self.resident_parts += 1;
        Ok(true)
    }
}

//! An order part's record: writing its body, publishing it, dropping the
//! part from RAM and loading it back; the list of changed parts the
//! journal writes; and the family's invariant checks.

use super::super::record::{decode_order, in_range, key_bytes};
use super::{cmp_zkey, Order, BLOCK};
use crate::base::FlashLoc;
use crate::types::{put, Malformed};
use std::cmp::Ordering;

impl Order {
    /// Appends part `i`'s record body (it must be in RAM): its lower bound,
    /// its upper bound (`u32::MAX`: none), the zkey count and the zkeys.
    pub fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        let p = &self.parts[i];
        out.reserve(16 + p.first.len() + p.body() as usize);
        put(out, &p.first);
        match self.parts.get(i + 1) {
            Some(n) => put(out, &n.first),
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        out.extend_from_slice(&p.count().to_le_bytes());
        for k in p.keys() {
            put(out, k);
        }
    }

    /// Marks part `i` written at `loc` (as `Chunked::published`).
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
        let old = p.set_loc(Some(loc), seq);
        if p.ver() == ver && p.dirty() {
            p.set_dirty(false);
            self.changes.cleaned();
        }
        Some(old)
    }

    /// Drops part `i` from RAM if it is clean, has a record and is not
    /// empty; returns the bytes freed.
    pub fn evict(&mut self, i: usize) -> usize {
        let p = &mut self.parts[i];
        if p.dirty() || p.loc().is_none() || !p.is_resident() || p.count() == 0 {
            return 0;
        }
        p.set_data(None);
        self.resident -= p.body() as usize;
        self.resident_parts -= 1;
        p.body() as usize
    }

    /// Installs part `i`'s zkeys from its record at `loc` (the zkeys of the
    /// part's range), if it is still cold there.
    pub fn install(&mut self, i: usize, loc: FlashLoc, body: &[u8]) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        if p.is_resident() || p.loc() != Some(loc) {
            return Ok(false);
        }
        let rec = decode_order(body)?;
        let hi = self.parts.get(i + 1).map(|n| &n.first[..]);
        let keys: Vec<Box<[u8]>> = rec
            .keys
            .into_iter()
            .filter(|k| in_range(k, &p.first, hi))
            .map(Box::from)
            .collect();
        let b: usize = keys.iter().map(|k| key_bytes(k)).sum();
        if keys.len() != p.count() as usize || b != p.body() as usize {
            return Err(Malformed);
        }
        let p = &mut self.parts[i];
        p.set_data(Some(keys));
        p.set_referenced(true);
        self.resident += b;
        self.resident_parts += 1;
        Ok(true)
    }

    pub fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        std::mem::take(&mut self.new_refs)
    }
    pub fn take_dropped_refs(&mut self) -> Vec<FlashLoc> {
        std::mem::take(&mut self.dropped)
    }

    /// Checks invariants 1 and 2 (tests).
    pub fn check(&self) -> Result<(), String> {
        if self.parts.first().is_none_or(|p| !p.first.is_empty()) {
            return Err("first part bound".into());
        }
        let (mut len, mut body, mut resident) = (0, 0, 0);
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 && cmp_zkey(&self.parts[i - 1].first, &p.first) != Ordering::Less {
                return Err(format!("parts out of order at {i}"));
            }
            len += p.count() as usize;
            body += p.body() as usize;
            if let Some(keys) = p.data() {
                resident += p.body() as usize;
                let hi = self.parts.get(i + 1).map(|n| &n.first[..]);
                if keys.len() != p.count() as usize
                    || keys.iter().map(|k| key_bytes(k)).sum::<usize>() != p.body() as usize
                {
                    return Err(format!("count or body of part {i}"));
                }
                if keys
                    .windows(2)
                    .any(|w| cmp_zkey(&w[0], &w[1]) != Ordering::Less)
                    || keys.iter().any(|k| !in_range(k, &p.first, hi))
                {
                    return Err(format!("keys of part {i}"));
                }
            } else if p.dirty() || p.loc().is_none() || p.count() == 0 {
                return Err("cold part without a clean record".into());
            }
        }
        let rp = self.parts.iter().filter(|p| p.is_resident()).count();
        if (len, body, resident, rp) != (self.len, self.body, self.resident, self.resident_parts) {
            return Err("order totals".into());
        }
        let blocks: Vec<u64> = self
            .parts
            .chunks(BLOCK)
            .map(|c| c.iter().map(|p| p.count() as u64).sum())
            .collect();
        if blocks != self.blocks {
            return Err("block counts".into());
        }
        Ok(())
    }
}

/// The list of changed parts (what the journal writes).
impl Order {
    /// Marks part `i` changed (a new version, and listed in `changes`).
    pub(super) fn mark_range_changed(&mut self, i: usize) {
        let ver = crate::types::parts::packed::next_version(&mut self.vers);
        let p = &mut self.parts[i];
        p.set_ver(ver);
        if p.dirty() {
            return;
        }
        p.set_dirty(true);
        let (first, parts) = (p.first.clone(), &self.parts);
        self.changes.marked(first, || {
            parts
                .iter()
                .filter(|p| p.dirty())
                .map(|p| p.first.clone())
                .collect()
        });
    }

    /// The changed parts, in order.
    pub fn changed_parts(&self) -> Vec<usize> {
        let parts = &self.parts;
        self.changes
            .parts(parts.len(), |k| self.part_for(k), |i| parts[i].dirty())
    }

    /// Whether any part changed since its record.
    pub fn any_changed(&self) -> bool {
        self.changes.any()
    }
}

//! The *order* family of a chunked sorted set: every member as a *zkey*
//! (its score's bits, then its bytes) in Redis's order, cut into parts of
//! consecutive zkeys. A part covers the zkeys from its `first` (inclusive;
//! the first part's is empty, below every zkey) to the next part's `first`
//! (exclusive; the last part's range is unbounded). A part's record
//! (kind 9, depth [`ORDER_DEPTH`], `low` = the part's id) carries those two
//! bounds and the zkeys, so recovery gives every zkey the newest record
//! whose bounds hold it, as it gives a hash value the newest record of its
//! hash range.
//!
//! Invariants:
//! 1. Parts are sorted by `first`; the first part's `first` is empty; the
//!    zkeys of a part lie in its range and are sorted without duplicates.
//! 2. `count` and `body` of every part are exact whether or not it is in
//!    RAM; the family's totals are their sums.
//! 3. A part not in RAM is clean and has a record (`loc`), whose bounds
//!    hold the part's range; loading it keeps the zkeys of its range.
//! 4. A part whose range changed (a split, or a neighbour it absorbed) is
//!    dirty, so its record is written again with the new bounds.
//! 5. A part splits at its middle zkey when its body passes `CHUNK_MAX`;
//!    the new half keeps the parent's record (one reference more,
//!    `take_new_refs`). An emptied part in RAM is absorbed by a
//!    neighbour in RAM, or absorbs one; a part that leaves gives its
//!    reference up (`take_dropped_refs`). An empty part may remain (its
//!    neighbours were on flash); it never leaves RAM.
//! 6. Part ids are unique within the collection for the run (names that
//!    the journal and loads find parts by).

use crate::index::FlashLoc;
use crate::types::chunked::CHUNK_MAX;
use crate::types::zset::ScoreKey;
use crate::types::{packed_len, put, Malformed, Reader};
use std::cmp::Ordering;

/// The depth byte that names an order part's record (hash ranges use
/// 0..=64).
pub const ORDER_DEPTH: u8 = 0xFF;

/// A zkey: the score's bits (f64, LE) then the member.
pub fn zkey(score: f64, m: &[u8]) -> Box<[u8]> {
    let mut v = Vec::with_capacity(8 + m.len());
    v.extend_from_slice(&score.to_bits().to_le_bytes());
    v.extend_from_slice(m);
    v.into()
}

/// The score and member of a zkey (at least 8 bytes).
pub fn unzkey(k: &[u8]) -> (f64, &[u8]) {
    let mut b = [0u8; 8];
    b.copy_from_slice(&k[..8]);
    (f64::from_le_bytes(b), &k[8..])
}

/// Redis's order on zkeys: score (-0 == 0), then member bytes. The empty
/// key (the first part's bound) is below every zkey.
pub fn cmp_zkey(a: &[u8], b: &[u8]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    let (sa, ma) = unzkey(a);
    let (sb, mb) = unzkey(b);
    ScoreKey(sa).cmp(&ScoreKey(sb)).then_with(|| ma.cmp(mb))
}

/// One part of the order family.
#[derive(Clone, Debug)]
pub struct OPart {
    pub id: u32,
    /// Lower bound of the range (inclusive; empty for the first part).
    pub first: Box<[u8]>,
    pub dirty: bool,
    pub referenced: bool,
    pub count: u32,
    pub body: u32,
    pub ver: u32,
    pub loc: Option<FlashLoc>,
    pub seq: u64,
    /// The zkeys, when in RAM (boxed: a part on flash pays 8 bytes for
    /// them, not a Vec's 24).
    #[allow(clippy::box_collection)]
    pub keys: Option<Box<Vec<Box<[u8]>>>>,
}

impl OPart {
    pub fn is_resident(&self) -> bool {
        self.keys.is_some()
    }
    fn keys(&self) -> &[Box<[u8]>] {
        self.keys.as_deref().map_or(&[], |k| &k[..])
    }
}

/// Packed bytes of one zkey in a record.
fn key_bytes(k: &[u8]) -> usize {
    packed_len(k.len())
}

/// The order family (module doc).
#[derive(Clone, Debug)]
pub struct Order {
    pub(super) parts: Vec<OPart>,
    next_id: u32,
    len: usize,
    body: usize,
    resident: usize,
    resident_parts: usize,
    new_refs: Vec<FlashLoc>,
    dropped: Vec<FlashLoc>,
    pub(super) hand: usize,
    /// The element count of each run of `BLOCK` parts, so a rank is found
    /// in O(parts / BLOCK + BLOCK), not O(parts).
    blocks: Vec<u64>,
}

/// Parts per entry of `Order::blocks`.
const BLOCK: usize = 64;

/// What recovery or a checkpoint knows of one order part.
#[derive(Clone, Debug)]
pub struct OrderInfo {
    pub id: u32,
    pub first: Box<[u8]>,
    pub count: u32,
    pub body: u32,
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

impl Order {
    /// The family of these zkeys (sorted), all parts in RAM and dirty.
    pub fn build(keys: Vec<Box<[u8]>>) -> Order {
        let mut o = Order {
            parts: Vec::new(),
            next_id: 0,
            len: 0,
            body: 0,
            resident: 0,
            resident_parts: 0,
            new_refs: Vec::new(),
            dropped: Vec::new(),
            hand: 0,
            blocks: Vec::new(),
        };
        let mut cur: Vec<Box<[u8]>> = Vec::new();
        let mut bytes = 0;
        let flush = |o: &mut Order, cur: &mut Vec<Box<[u8]>>, bytes: &mut usize| {
            let first = if o.parts.is_empty() {
                Box::default()
            } else {
                cur[0].clone()
            };
            o.push_new(first, std::mem::take(cur), *bytes);
            *bytes = 0;
        };
        for k in keys {
            let n = key_bytes(&k);
            if !cur.is_empty() && bytes + n > CHUNK_MAX * 3 / 4 {
                flush(&mut o, &mut cur, &mut bytes);
            }
            bytes += n;
            cur.push(k);
        }
        if !cur.is_empty() || o.parts.is_empty() {
            flush(&mut o, &mut cur, &mut bytes);
        }
        o.rebuild_blocks();
        o
    }

    /// Recounts `blocks` (after parts were added or removed).
    fn rebuild_blocks(&mut self) {
        self.blocks = self
            .parts
            .chunks(BLOCK)
            .map(|c| c.iter().map(|p| p.count as u64).sum())
            .collect();
    }

    fn push_new(&mut self, first: Box<[u8]>, keys: Vec<Box<[u8]>>, body: usize) {
        let id = self.next_id;
        self.next_id += 1;
        self.len += keys.len();
        self.body += body;
        self.resident += body;
        self.resident_parts += 1;
        self.parts.push(OPart {
            id,
            first,
            dirty: true,
            referenced: true,
            count: keys.len() as u32,
            body: body as u32,
            ver: 0,
            loc: None,
            seq: 0,
            keys: Some(Box::new(keys)),
        });
    }

    /// The family rebuilt from a directory (recovery, checkpoint): each
    /// part on flash at its record or, without one, empty in RAM and dirty.
    pub fn from_infos(infos: &[OrderInfo]) -> Order {
        let parts: Vec<OPart> = infos
            .iter()
            .map(|p| {
                // An empty part stays in RAM (invariant 5).
                let cold = p.loc.is_some() && p.count > 0;
                OPart {
                    id: p.id,
                    first: p.first.clone(),
                    dirty: p.loc.is_none(),
                    referenced: false,
                    count: if cold { p.count } else { 0 },
                    body: if cold { p.body } else { 0 },
                    ver: 0,
                    loc: p.loc,
                    seq: p.seq,
                    keys: (!cold).then(|| Box::new(Vec::new())),
                }
            })
            .collect();
        let mut o = Order {
            next_id: parts.iter().map(|p| p.id).max().map_or(0, |m| m + 1),
            len: parts.iter().map(|p| p.count as usize).sum(),
            body: parts.iter().map(|p| p.body as usize).sum(),
            resident: 0,
            resident_parts: parts.iter().filter(|p| p.is_resident()).count(),
            parts,
            new_refs: Vec::new(),
            dropped: Vec::new(),
            hand: 0,
            blocks: Vec::new(),
        };
        if o.parts.is_empty() {
            o.push_new(Box::default(), Vec::new(), 0);
        }
        o.rebuild_blocks();
        o
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn body_len(&self) -> usize {
        self.body
    }
    pub fn resident_bytes(&self) -> usize {
        self.resident
    }
    pub fn resident_parts(&self) -> usize {
        self.resident_parts
    }
    pub fn part_count(&self) -> usize {
        self.parts.len()
    }
    pub fn part(&self, i: usize) -> &OPart {
        &self.parts[i]
    }
    pub fn part_mut(&mut self, i: usize) -> &mut OPart {
        &mut self.parts[i]
    }
    pub fn all_resident(&self) -> bool {
        self.parts.iter().all(|p| p.is_resident())
    }

    /// The part whose range holds zkey `k`.
    pub fn part_for(&self, k: &[u8]) -> usize {
        self.parts
            .partition_point(|p| cmp_zkey(&p.first, k) != Ordering::Greater)
            .max(1)
            - 1
    }

    /// The part with id `id` (`hint`: where it probably is).
    pub fn find_id(&self, id: u32, hint: usize) -> Option<usize> {
        if self.parts.get(hint).is_some_and(|p| p.id == id) {
            return Some(hint);
        }
        self.parts.iter().position(|p| p.id == id)
    }

    /// The part and index within it of rank `r`.
    pub fn locate(&self, mut r: usize) -> Option<(usize, usize)> {
        let mut r64 = r as u64;
        let b = self.blocks.iter().position(|&n| {
            if r64 < n {
                return true;
            }
            r64 -= n;
            false
        })?;
        r = r64 as usize;
        for (i, p) in self.parts.iter().enumerate().skip(b * BLOCK).take(BLOCK) {
            if r < p.count as usize {
                return Some((i, r));
            }
            r -= p.count as usize;
        }
        None
    }

    /// The zkey at rank `r` (its part must be in RAM).
    pub fn get_rank(&self, r: usize) -> Option<&[u8]> {
        let (i, j) = self.locate(r)?;
        self.parts[i].keys().get(j).map(|k| &**k)
    }

    /// Elements before part `i`.
    pub fn before(&self, i: usize) -> usize {
        let b = i / BLOCK;
        let whole: u64 = self.blocks[..b.min(self.blocks.len())].iter().sum();
        let rest: usize = self.parts[b * BLOCK..i]
            .iter()
            .map(|p| p.count as usize)
            .sum();
        whole as usize + rest
    }

    /// Part `i`'s count changed by `d` (no part was added or removed).
    fn counted(&mut self, i: usize, d: i64) {
        if let Some(b) = self.blocks.get_mut(i / BLOCK) {
            *b = b.wrapping_add_signed(d);
        }
    }

    /// Rank of zkey `k` (its part must be in RAM).
    pub fn rank(&self, k: &[u8]) -> Option<usize> {
        let i = self.part_for(k);
        let j = self.parts[i]
            .keys()
            .binary_search_by(|x| cmp_zkey(x, k))
            .ok()?;
        Some(self.before(i) + j)
    }

    /// The part where `below` (true up to some zkey, false after it) turns,
    /// from the parts' lower bounds alone.
    pub fn turning_part(&self, below: impl Fn(&[u8]) -> bool) -> usize {
        self.parts[1..].partition_point(|p| below(&p.first))
    }

    /// How many leading zkeys satisfy `below` (true up to some zkey, false
    /// after it); the part where it turns (`turning_part`) must be in RAM.
    pub fn rank_where(&self, below: impl Fn(&[u8]) -> bool) -> usize {
        let i = self.turning_part(&below);
        self.before(i) + self.parts[i].keys().partition_point(|k| below(k))
    }

    /// The parts holding ranks `[a, b)`.
    pub fn parts_for_ranks(&self, a: usize, b: usize) -> std::ops::Range<usize> {
        if a >= b {
            return 0..0;
        }
        let first = self.locate(a).map_or(self.parts.len(), |(i, _)| i);
        let last = self.locate(b - 1).map_or(self.parts.len(), |(i, _)| i + 1);
        first..last.max(first)
    }

    /// The zkeys of ranks `[a, b)` in order (their parts must be in RAM).
    pub fn range(&self, a: usize, b: usize) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        let parts = self.parts_for_ranks(a, b);
        let start = parts.start;
        let mut at = if start < self.parts.len() {
            self.before(start)
        } else {
            0
        };
        let spans: Vec<(usize, usize, usize)> = parts
            .map(|i| {
                let n = self.parts[i].count as usize;
                let lo = a.saturating_sub(at).min(n);
                let hi = b.saturating_sub(at).min(n);
                at += n;
                (i, lo, hi)
            })
            .collect();
        spans
            .into_iter()
            .flat_map(move |(i, lo, hi)| self.parts[i].keys()[lo.min(hi)..hi].iter().map(|k| &**k))
    }

    /// Every zkey in order (every part must be in RAM).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.parts
            .iter()
            .flat_map(|p| p.keys().iter().map(|k| &**k))
    }

    /// The keys of part `i` to change (it must be in RAM).
    fn changed(&mut self, i: usize) -> Option<&mut Vec<Box<[u8]>>> {
        let p = &mut self.parts[i];
        debug_assert!(p.keys.is_some(), "order part not loaded");
        p.dirty = true;
        p.ver = p.ver.wrapping_add(1);
        p.keys.as_deref_mut()
    }

    /// Inserts zkey `k` (not present).
    pub fn insert(&mut self, k: Box<[u8]>) {
        let i = self.part_for(&k);
        let n = key_bytes(&k);
        let Some(keys) = self.changed(i) else {
            return;
        };
        let at = keys.partition_point(|x| cmp_zkey(x, &k) == Ordering::Less);
        keys.insert(at, k);
        let p = &mut self.parts[i];
        p.count += 1;
        p.body += n as u32;
        self.len += 1;
        self.body += n;
        self.resident += n;
        let split = p.body as usize > CHUNK_MAX && p.count > 1;
        let parts = self.parts.len();
        if split {
            self.split(i);
        }
        self.tidy(i);
        if self.parts.len() == parts {
            self.counted(i, 1);
        } else {
            self.rebuild_blocks();
        }
    }

    /// Removes zkey `k`; returns whether it was there.
    pub fn remove(&mut self, k: &[u8]) -> bool {
        let i = self.part_for(k);
        let Some(keys) = self.parts[i].keys.as_deref() else {
            debug_assert!(false, "order part not loaded");
            return false;
        };
        let Ok(at) = keys.binary_search_by(|x| cmp_zkey(x, k)) else {
            return false;
        };
        let Some(keys) = self.changed(i) else {
            return false;
        };
        let n = key_bytes(&keys.remove(at));
        let p = &mut self.parts[i];
        p.count -= 1;
        p.body -= n as u32;
        self.len -= 1;
        self.body -= n;
        self.resident -= n;
        let parts = self.parts.len();
        self.tidy(i);
        if self.parts.len() == parts {
            self.counted(i, -1);
        } else {
            self.rebuild_blocks();
        }
        true
    }

    /// Splits part `i` at its middle zkey (invariant 5), again while a
    /// half is too big.
    fn split(&mut self, i: usize) {
        let p = &mut self.parts[i];
        let Some(keys) = p.keys.as_deref_mut() else {
            return;
        };
        let mid = keys.len() / 2;
        let hi: Vec<Box<[u8]>> = keys.split_off(mid);
        let hi_body: usize = hi.iter().map(|k| key_bytes(k)).sum();
        p.count = keys.len() as u32;
        p.body -= hi_body as u32;
        p.dirty = true;
        p.ver = p.ver.wrapping_add(1);
        let (loc, seq, referenced) = (p.loc, p.seq, p.referenced);
        if let Some(l) = loc {
            self.new_refs.push(l);
        }
        let id = self.next_id;
        self.next_id += 1;
        if self.parts.len() == self.parts.capacity() {
            self.parts.reserve_exact(self.parts.len() / 8 + 4);
        }
        self.parts.insert(
            i + 1,
            OPart {
                id,
                first: hi[0].clone(),
                dirty: true,
                referenced,
                count: hi.len() as u32,
                body: hi_body as u32,
                ver: 0,
                loc,
                seq,
                keys: Some(Box::new(hi)),
            },
        );
        self.resident_parts += 1;
        for j in [i + 1, i] {
            let q = &self.parts[j];
            if q.body as usize > CHUNK_MAX && q.count > 1 {
                self.split(j);
            }
        }
    }

    /// Removes part `i` (in RAM, empty) from the directory.
    fn drop_part(&mut self, i: usize) {
        let p = self.parts.remove(i);
        debug_assert_eq!(p.count, 0);
        self.dropped.extend(p.loc);
        self.resident_parts -= 1;
        if self.hand > i {
            self.hand -= 1;
        }
    }

    /// After part `i` changed: an empty part beside it in RAM leaves, its
    /// range joining its neighbour's (invariant 5).
    fn tidy(&mut self, mut i: usize) {
        let resident_empty = |o: &Order, j: usize| {
            o.parts
                .get(j)
                .is_some_and(|p| p.count == 0 && p.is_resident())
        };
        // Part i empty: join a neighbour in RAM.
        if self.parts[i].count == 0 && self.parts.len() > 1 {
            if i > 0 && self.parts[i - 1].is_resident() {
                self.drop_part(i);
                self.mark_range_changed(i - 1);
                return;
            }
            if self.parts.get(i + 1).is_some_and(|p| p.is_resident()) {
                let first = std::mem::take(&mut self.parts[i].first);
                self.drop_part(i);
                self.parts[i].first = first;
                self.mark_range_changed(i);
                return;
            }
        }
        if self.parts[i].count == 0 {
            return;
        }
        if i + 1 < self.parts.len() && resident_empty(self, i + 1) {
            self.drop_part(i + 1);
            self.mark_range_changed(i);
        }
        if i > 0 && resident_empty(self, i - 1) {
            let first = std::mem::take(&mut self.parts[i - 1].first);
            self.drop_part(i - 1);
            i -= 1;
            self.parts[i].first = first;
            self.mark_range_changed(i);
        }
    }

    fn mark_range_changed(&mut self, i: usize) {
        let p = &mut self.parts[i];
        p.dirty = true;
        p.ver = p.ver.wrapping_add(1);
    }

    /// Appends part `i`'s record body (it must be in RAM): its lower bound,
    /// its upper bound (`u32::MAX`: none), the zkey count and the zkeys.
    pub fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        let p = &self.parts[i];
        out.reserve(16 + p.first.len() + p.body as usize);
        put(out, &p.first);
        match self.parts.get(i + 1) {
            Some(n) => put(out, &n.first),
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        out.extend_from_slice(&p.count.to_le_bytes());
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
        if p.ver != ver || !p.dirty {
            return None;
        }
        p.dirty = false;
        p.seq = seq;
        Some(p.loc.replace(loc))
    }

    /// Drops part `i` from RAM if it is clean, has a record and is not
    /// empty; returns the bytes freed.
    pub fn evict(&mut self, i: usize) -> usize {
        let p = &mut self.parts[i];
        if p.dirty || p.loc.is_none() || p.keys.is_none() || p.count == 0 {
            return 0;
        }
        p.keys = None;
        self.resident -= p.body as usize;
        self.resident_parts -= 1;
        p.body as usize
    }

    /// Installs part `i`'s zkeys from its record at `loc` (the zkeys of the
    /// part's range), if it is still cold there.
    pub fn install(&mut self, i: usize, loc: FlashLoc, body: &[u8]) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        if p.is_resident() || p.loc != Some(loc) {
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
        if keys.len() != p.count as usize || b != p.body as usize {
            return Err(Malformed);
        }
        let p = &mut self.parts[i];
        p.keys = Some(Box::new(keys));
        p.referenced = true;
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
            len += p.count as usize;
            body += p.body as usize;
            if let Some(keys) = &p.keys {
                resident += p.body as usize;
                let hi = self.parts.get(i + 1).map(|n| &n.first[..]);
                if keys.len() != p.count as usize
                    || keys.iter().map(|k| key_bytes(k)).sum::<usize>() != p.body as usize
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
            } else if p.dirty || p.loc.is_none() || p.count == 0 {
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
            .map(|c| c.iter().map(|p| p.count as u64).sum())
            .collect();
        if blocks != self.blocks {
            return Err("block counts".into());
        }
        Ok(())
    }
}

/// Whether zkey `k` lies in `[lo, hi)` (`hi` None: unbounded).
pub fn in_range(k: &[u8], lo: &[u8], hi: Option<&[u8]>) -> bool {
    cmp_zkey(k, lo) != Ordering::Less && hi.is_none_or(|h| cmp_zkey(k, h) == Ordering::Less)
}

/// The bounds of an order record's body (without decoding its zkeys).
pub fn bounds(b: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let mut r = Reader { b };
    let lo = r.bytes().ok()?;
    let n = r.u32().ok()?;
    let hi = if n == u32::MAX {
        None
    } else {
        Some(r.take(n as usize).ok()?)
    };
    Some((lo, hi))
}

/// An order record's body, decoded.
pub struct OrderRecord<'a> {
    pub lo: &'a [u8],
    pub hi: Option<&'a [u8]>,
    pub keys: Vec<&'a [u8]>,
}

/// Decodes an order record's body (`Order::encode_part`), checking that
/// its zkeys are well formed, sorted and inside its bounds.
pub fn decode_order(b: &[u8]) -> Result<OrderRecord<'_>, Malformed> {
    let mut r = Reader { b };
    let lo = r.bytes()?;
    let hi_len = r.u32()?;
    let hi = if hi_len == u32::MAX {
        None
    } else {
        Some(r.take(hi_len as usize)?)
    };
    let n = r.u32()? as usize;
    if n > b.len() / 12 {
        return Err(Malformed);
    }
    let mut keys = Vec::with_capacity(n);
    for _ in 0..n {
        let k = r.bytes()?;
        if k.len() < 8 || unzkey(k).0.is_nan() {
            return Err(Malformed);
        }
        if keys
            .last()
            .is_some_and(|p: &&[u8]| cmp_zkey(p, k) != Ordering::Less)
        {
            return Err(Malformed);
        }
        keys.push(k);
    }
    let bound_ok = |k: &[u8]| k.is_empty() || (k.len() >= 8 && !unzkey(k).0.is_nan());
    if !r.b.is_empty()
        || !bound_ok(lo)
        || hi.is_some_and(|h| !bound_ok(h) || cmp_zkey(lo, h) != Ordering::Less)
        || keys.iter().any(|k| !in_range(k, lo, hi))
    {
        return Err(Malformed);
    }
    Ok(OrderRecord { lo, hi, keys })
}

/// Count and packed bytes of the zkeys of an order record's body inside
/// `[lo, hi)` (recovery).
pub fn measure_order(b: &[u8], lo: &[u8], hi: Option<&[u8]>) -> Result<(u32, u32), Malformed> {
    let rec = decode_order(b)?;
    let mut n = 0u32;
    let mut body = 0u32;
    for k in rec.keys.iter().filter(|k| in_range(k, lo, hi)) {
        n += 1;
        body += key_bytes(k) as u32;
    }
    Ok((n, body))
}

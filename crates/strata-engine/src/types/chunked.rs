//! Chunked collections (docs/collections.md): a big hash or set whose
//! elements are partitioned by a stable 64-bit hash into *parts*. A part
//! holds the elements whose hash falls in one dyadic range
//! `[low, low + 2^(64 - depth))` and is one flash record (kind 9, a
//! *chunk*): the unit that is written, demoted, fetched and collected, so a
//! change rewrites the parts it touched, never the whole collection.
//!
//! This module owns the partitioning and each part's bookkeeping; the
//! engine decides when parts are written, dropped from RAM or loaded.
//!
//! Invariants:
//! 1. The parts are sorted by `low` and cover `[0, 2^64)` exactly, without
//!    overlap.
//! 2. An element lives in the part whose range holds `elem_hash(element)`.
//! 3. `count` and `body` of every part are exact whether or not it is
//!    resident; the collection's totals are their sums, and `resident` is
//!    the sum of `body` over the parts in RAM.
//! 4. A part not in RAM is clean and has a record (`loc`).
//! 5. A part's `loc`, when set, is a record whose range holds the part's
//!    range and whose elements, filtered to the part's range, are the
//!    part's elements as of record `seq`; while `dirty` the part changed
//!    after that record.
//! 6. Parts never merge. A part splits in two when its body passes
//!    [`CHUNK_MAX`] (if it has two elements or more and is not at
//!    [`MAX_DEPTH`]); both halves keep the parent's record as their `loc`,
//!    one reference more, which the engine retains (`take_new_refs`).

use super::{packed_len, Malformed, Reader};
use crate::index::FlashLoc;
use indexmap::IndexMap;

/// A part splits when its packed body passes this many bytes.
pub const CHUNK_MAX: usize = 8 * 1024;
/// A big hash or set becomes chunked when its packed form passes this many
/// bytes: below it, one packed record costs less RAM (a directory is ~220
/// bytes plus 56 per part) and one read of it is as fast as one of a part.
pub const CHUNKED_AT: usize = 32 * 1024;
/// Parts stop splitting at this depth (only a flood of hash collisions gets
/// there; such a part just grows).
pub const MAX_DEPTH: u8 = 48;

/// The partition hash of an element: xxh3-64, stable across builds and
/// restarts (records and checkpoints name hash ranges).
pub fn elem_hash(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(b)
}

/// What a chunked collection maps an element to: a hash field's value, or
/// nothing for a set member.
pub trait Elem: Clone + std::fmt::Debug + PartialEq + Default {
    /// Whether elements have values (a hash) or not (a set).
    const VALUED: bool;
    /// Bytes the value takes when packed after its element.
    fn packed(&self) -> usize;
    fn put(&self, out: &mut Vec<u8>);
    fn take(r: &mut Reader<'_>) -> Result<Self, Malformed>;
    /// The packed value's bytes, read in place (empty for a set).
    fn take_slice<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Malformed>;
    /// The value's bytes (empty for a set).
    fn as_slice(&self) -> &[u8];
}

impl Elem for Box<[u8]> {
    const VALUED: bool = true;
    fn packed(&self) -> usize {
        packed_len(self.len())
    }
    fn put(&self, out: &mut Vec<u8>) {
        super::put(out, self);
    }
    fn take(r: &mut Reader<'_>) -> Result<Self, Malformed> {
        Ok(r.bytes()?.into())
    }
    fn take_slice<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Malformed> {
        r.bytes()
    }
    fn as_slice(&self) -> &[u8] {
        self
    }
}

impl Elem for () {
    const VALUED: bool = false;
    fn packed(&self) -> usize {
        0
    }
    fn put(&self, _: &mut Vec<u8>) {}
    fn take(_: &mut Reader<'_>) -> Result<Self, Malformed> {
        Ok(())
    }
    fn take_slice<'a>(_: &mut Reader<'a>) -> Result<&'a [u8], Malformed> {
        Ok(&[])
    }
    fn as_slice(&self) -> &[u8] {
        &[]
    }
}

/// A part's elements in RAM: as read from its record (the chunk body,
/// searched in place: one allocation, not two per element), or as a map
/// once the part changes.
#[derive(Clone, Debug)]
pub enum Data<V> {
    Packed(bytes::Bytes),
    Map(Box<PartMap<V>>),
}

/// The (element, value bytes) pairs of a chunk body, in order.
fn packed_iter<V: Elem>(b: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut r = Reader {
        b: b.get(4..).unwrap_or(&[]),
    };
    std::iter::from_fn(move || {
        if r.b.is_empty() {
            return None;
        }
        let k = r.bytes().ok()?;
        let v = V::take_slice(&mut r).ok()?;
        Some((k, v))
    })
}

impl<V: Elem> Data<V> {
    fn get(&self, elem: &[u8]) -> Option<&[u8]> {
        match self {
            Data::Packed(b) => packed_iter::<V>(b)
                .find(|(k, _)| *k == elem)
                .map(|(_, v)| v),
            Data::Map(m) => m.get(elem).map(|v| v.as_slice()),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Data::Packed(b) => Box::new(packed_iter::<V>(b)),
            Data::Map(m) => Box::new(m.iter().map(|(k, v)| (&**k, v.as_slice()))),
        }
    }

    fn get_index(&self, j: usize) -> Option<(&[u8], &[u8])> {
        match self {
            Data::Packed(b) => packed_iter::<V>(b).nth(j),
            Data::Map(m) => m.get_index(j).map(|(k, v)| (&**k, v.as_slice())),
        }
    }

    fn len(&self) -> usize {
        match self {
            Data::Packed(b) => packed_iter::<V>(b).count(),
            Data::Map(m) => m.len(),
        }
    }

    /// The elements as a map, to change (a packed body is decoded once).
    fn map_mut(&mut self) -> &mut PartMap<V> {
        if let Data::Packed(b) = self {
            // The body was checked when it was installed.
            let m = decode_elems::<V>(b, |_| true).unwrap_or_default();
            *self = Data::Map(Box::new(m));
        }
        match self {
            Data::Map(m) => m,
            Data::Packed(_) => unreachable!("decoded above"),
        }
    }
}

pub type PartMap<V> = IndexMap<Box<[u8]>, V, foldhash::fast::RandomState>;

/// One part of a chunked collection (module doc).
#[derive(Clone, Debug)]
pub struct Part<V> {
    /// First hash of the range.
    pub low: u64,
    /// The range holds `2^(64 - depth)` hashes.
    pub depth: u8,
    /// Changed since `loc` was written.
    pub dirty: bool,
    /// Used since the demoter's hand last passed (CLOCK, per part).
    pub referenced: bool,
    /// Elements and their packed bytes.
    pub count: u32,
    pub body: u32,
    /// Bumped by every change: a writer publishes its record only if the
    /// part still has the version it encoded.
    pub ver: u32,
    /// The record holding this part (invariant 5), and its sequence number.
    pub loc: Option<FlashLoc>,
    pub seq: u64,
    /// The elements, when in RAM.
    pub data: Option<Data<V>>,
}

impl<V> Part<V> {
    /// Last hash of the range (inclusive).
    pub fn high(&self) -> u64 {
        range_high(self.low, self.depth)
    }
    pub fn holds(&self, h: u64) -> bool {
        h >= self.low && h <= self.high()
    }
    pub fn is_resident(&self) -> bool {
        self.data.is_some()
    }
}

/// Last hash of the dyadic range starting at `low` at `depth`.
pub fn range_high(low: u64, depth: u8) -> u64 {
    match depth {
        0 => u64::MAX,
        1..=63 => low | (u64::MAX >> depth),
        _ => low,
    }
}

/// A chunked hash (`V` = value) or set (`V` = ()).
#[derive(Clone, Debug)]
pub struct Chunked<V> {
    /// Collection id: names this incarnation's records (docs/format.md,
    /// kinds 8 and 9), so records of an older one are never taken for it.
    pub cid: u64,
    parts: Vec<Part<V>>,
    len: usize,
    body: usize,
    resident: usize,
    /// Parts in RAM.
    resident_parts: usize,
    /// The head record (kind 8), once written, and whether the head must
    /// be written (again): a new collection, or a new TTL.
    pub head_loc: Option<FlashLoc>,
    pub head_dirty: bool,
    /// Sequence number of the head record at `head_loc`.
    pub head_seq: u64,
    /// Records that got one more reference by a split (invariant 6).
    new_refs: Vec<FlashLoc>,
}

impl<V: Elem> Chunked<V> {
    /// A chunked collection of `elems` (all parts in RAM and dirty).
    pub fn build(cid: u64, elems: impl IntoIterator<Item = (Box<[u8]>, V)>) -> Chunked<V> {
        let mut c = Chunked {
            cid,
            parts: vec![Part {
                low: 0,
                depth: 0,
                dirty: true,
                referenced: true,
                count: 0,
                body: 0,
                ver: 0,
                loc: None,
                seq: 0,
                data: Some(Data::Map(Box::default())),
            }],
            len: 0,
            body: 0,
            resident: 0,
            resident_parts: 1,
            head_loc: None,
            head_dirty: true,
            head_seq: 0,
            new_refs: Vec::new(),
        };
        for (k, v) in elems {
            c.insert(&k, v);
        }
        c
    }

    /// A collection rebuilt from a directory (recovery): each part on
    /// flash at its record, or, without one, empty in RAM and dirty (a
    /// range whose records are gone). `parts` must satisfy invariant 1.
    pub fn from_infos(
        cid: u64,
        parts: &[PartInfo],
        head_loc: Option<FlashLoc>,
        head_seq: u64,
    ) -> Chunked<V> {
        let parts = parts
            .iter()
            .map(|p| {
                let cold = p.loc.is_some();
                Part {
                    low: p.low,
                    depth: p.depth,
                    dirty: !cold,
                    referenced: false,
                    count: if cold { p.count } else { 0 },
                    body: if cold { p.body } else { 0 },
                    ver: 0,
                    loc: p.loc,
                    seq: p.seq,
                    data: (!cold).then(|| Data::Map(Box::default())),
                }
            })
            .collect();
        let mut c = Chunked::from_parts(cid, parts, head_loc);
        c.head_seq = head_seq;
        c
    }

    /// A collection of these parts. `parts` must satisfy invariant 1.
    pub fn from_parts(cid: u64, parts: Vec<Part<V>>, head_loc: Option<FlashLoc>) -> Chunked<V> {
        let len = parts.iter().map(|p| p.count as usize).sum();
        let body = parts.iter().map(|p| p.body as usize).sum();
        let resident = parts
            .iter()
            .filter(|p| p.is_resident())
            .map(|p| p.body as usize)
            .sum();
        let resident_parts = parts.iter().filter(|p| p.is_resident()).count();
        Chunked {
            cid,
            parts,
            len,
            body,
            resident,
            resident_parts,
            head_loc,
            head_dirty: false,
            head_seq: 0,
            new_refs: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Packed bytes of all elements.
    pub fn body_len(&self) -> usize {
        self.body
    }
    /// Packed bytes of the elements in RAM.
    pub fn resident_bytes(&self) -> usize {
        self.resident
    }
    pub fn parts(&self) -> &[Part<V>] {
        &self.parts
    }
    pub fn all_resident(&self) -> bool {
        self.resident == self.body && self.parts.iter().all(|p| p.is_resident())
    }

    /// Index of the part holding hash `h` (invariant 1).
    pub fn part_of(&self, h: u64) -> usize {
        self.parts.partition_point(|p| p.low <= h) - 1
    }

    /// The value bytes of `elem` (empty for a set member); None if absent
    /// (or, a caller's error, if its part is not in RAM: the engine loads
    /// the parts a command names).
    pub fn get(&self, elem: &[u8]) -> Option<&[u8]> {
        let d = self.parts[self.part_of(elem_hash(elem))].data.as_ref();
        debug_assert!(d.is_some(), "part of an element not loaded");
        d?.get(elem)
    }

    pub fn contains(&self, elem: &[u8]) -> bool {
        self.get(elem).is_some()
    }

    /// Sets `elem` to `v`; returns whether it is new. Splits the part if
    /// it grew past `CHUNK_MAX` (invariant 6).
    pub fn insert(&mut self, elem: &[u8], v: V) -> bool {
        let i = self.part_of(elem_hash(elem));
        let p = &mut self.parts[i];
        let Some(m) = p.data.as_mut().map(Data::map_mut) else {
            debug_assert!(false, "part of an element not loaded");
            return false;
        };
        let add = v.packed();
        let new = match m.get_mut(elem) {
            Some(old) => {
                let sub = old.packed();
                *old = v;
                p.body = p.body + add as u32 - sub as u32;
                self.body = self.body + add - sub;
                self.resident = self.resident + add - sub;
                false
            }
            None => {
                m.insert(elem.into(), v);
                let n = packed_len(elem.len()) + add;
                p.body += n as u32;
                p.count += 1;
                self.body += n;
                self.resident += n;
                self.len += 1;
                true
            }
        };
        p.dirty = true;
        p.ver = p.ver.wrapping_add(1);
        if p.body as usize > CHUNK_MAX && p.count > 1 && p.depth < MAX_DEPTH {
            self.split(i);
        }
        new
    }

    /// Removes `elem`; returns its value if it was there.
    pub fn remove(&mut self, elem: &[u8]) -> Option<V> {
        let i = self.part_of(elem_hash(elem));
        let p = &mut self.parts[i];
        let m = p.data.as_mut()?.map_mut();
        let v = m.swap_remove(elem)?;
        self.removed(i, packed_len(elem.len()) + v.packed());
        Some(v)
    }

    /// Accounts one element of `n` packed bytes removed from part `i`.
    fn removed(&mut self, i: usize, n: usize) {
        let p = &mut self.parts[i];
        p.body -= n as u32;
        p.count -= 1;
        p.dirty = true;
        p.ver = p.ver.wrapping_add(1);
        self.body -= n;
        self.resident -= n;
        self.len -= 1;
    }

    /// Splits part `i` in two halves of its range, recursively while a
    /// half is still too big.
    fn split(&mut self, i: usize) {
        let p = &mut self.parts[i];
        let Some(m) = p.data.as_mut().map(Data::map_mut) else {
            return;
        };
        let depth = p.depth + 1;
        let mid = p.low | (1u64 << (64 - depth as u32));
        let mut hi: PartMap<V> = PartMap::default();
        let mut keep: PartMap<V> = PartMap::default();
        for (k, v) in std::mem::take(m) {
            if elem_hash(&k) >= mid {
                hi.insert(k, v);
            } else {
                keep.insert(k, v);
            }
        }
        let measure = |m: &PartMap<V>| -> u32 {
            m.iter()
                .map(|(k, v)| packed_len(k.len()) + v.packed())
                .sum::<usize>() as u32
        };
        let (lo_body, hi_body) = (measure(&keep), measure(&hi));
        let half = Part {
            low: mid,
            depth,
            dirty: true,
            referenced: p.referenced,
            count: hi.len() as u32,
            body: hi_body,
            ver: 0,
            loc: p.loc,
            seq: p.seq,
            data: Some(Data::Map(Box::new(hi))),
        };
        p.depth = depth;
        p.count = keep.len() as u32;
        p.body = lo_body;
        p.dirty = true;
        p.ver = p.ver.wrapping_add(1);
        *m = keep;
        if let Some(loc) = p.loc {
            self.new_refs.push(loc);
        }
        // Grow the directory by an eighth, not double (it is the RAM a cold
        // collection costs).
        if self.parts.len() == self.parts.capacity() {
            self.parts.reserve_exact(self.parts.len() / 8 + 4);
        }
        self.parts.insert(i + 1, half);
        self.resident_parts += 1;
        for j in [i + 1, i] {
            let q = &self.parts[j];
            if q.body as usize > CHUNK_MAX && q.count > 1 && q.depth < MAX_DEPTH {
                self.split(j);
            }
        }
    }

    /// The parts an HSCAN / SSCAN step from hash `from` for about `count`
    /// elements covers: the part holding `from` and the following ones,
    /// as many as hold `count` elements on average (at least one).
    pub fn scan_parts(&self, from: u64, count: usize) -> std::ops::Range<usize> {
        let first = self.part_of(from);
        let per_part = (self.len / self.parts.len().max(1)).max(1);
        let n = count.div_ceil(per_part).max(1);
        first..(first + n).min(self.parts.len())
    }

    /// One HSCAN / SSCAN step (the `scan_parts` must be in RAM): the
    /// elements of those parts whose hash is at least `from`, and the next
    /// cursor (the hash after the last part; 0 at the end). An element
    /// present for a whole scan is returned exactly once: the cursor only
    /// moves forward over the hash space, whatever splits meanwhile.
    pub fn scan(&self, from: u64, count: usize) -> ScanStep<'_> {
        let range = self.scan_parts(from, count);
        let mut items = Vec::new();
        let mut next = 0;
        for p in &self.parts[range] {
            if let Some(d) = &p.data {
                items.extend(d.iter().filter(|(k, _)| elem_hash(k) >= from));
            }
            next = p.high().wrapping_add(1);
        }
        (items, next)
    }

    /// Records that a split made one more part refer to (invariant 6); the
    /// engine retains each once.
    pub fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        std::mem::take(&mut self.new_refs)
    }

    /// Every element, in part order (all parts must be in RAM).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        debug_assert!(self.all_resident());
        self.parts
            .iter()
            .filter_map(|p| p.data.as_ref())
            .flat_map(|d| d.iter())
    }

    /// The part and position within it of the element at position `i`.
    fn locate(&self, mut i: usize) -> Option<(usize, usize)> {
        for (pi, p) in self.parts.iter().enumerate() {
            if i < p.count as usize {
                return Some((pi, i));
            }
            i -= p.count as usize;
        }
        None
    }

    /// The element at position `i` of `iter`'s order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let (pi, j) = self.locate(i)?;
        self.parts[pi].data.as_ref()?.get_index(j)
    }

    /// Removes the element at position `i`.
    pub fn remove_index(&mut self, i: usize) -> Option<(Box<[u8]>, V)> {
        let (pi, j) = self.locate(i)?;
        let p = &mut self.parts[pi];
        let (k, v) = p.data.as_mut()?.map_mut().swap_remove_index(j)?;
        self.removed(pi, packed_len(k.len()) + v.packed());
        Some((k, v))
    }

    /// Appends the chunk body of part `i` (must be in RAM): element count
    /// (u32 LE) and the elements.
    pub fn encode_part(&self, i: usize, out: &mut Vec<u8>) {
        let p = &self.parts[i];
        let m = match p.data.as_ref() {
            Some(Data::Map(m)) => m,
            Some(Data::Packed(b)) => return out.extend_from_slice(b),
            None => return,
        };
        out.reserve(4 + p.body as usize);
        out.extend_from_slice(&(m.len() as u32).to_le_bytes());
        for (k, v) in m.iter() {
            super::put(out, k);
            v.put(out);
        }
    }

    /// Marks part `i` as written at `loc` with sequence number `seq`, if
    /// it still has version `ver`; returns the record it replaces (to
    /// release) or None if the part changed meanwhile (it stays dirty).
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

    /// Drops part `i` from RAM if it is clean and has a record; returns
    /// the bytes freed.
    pub fn evict(&mut self, i: usize) -> usize {
        let p = &mut self.parts[i];
        if p.dirty || p.loc.is_none() || p.data.is_none() {
            return 0;
        }
        p.data = None;
        self.resident -= p.body as usize;
        self.resident_parts -= 1;
        p.body as usize
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
        if p.is_resident() || p.loc != Some(loc) {
            return Ok(false);
        }
        let (low, high) = (p.low, p.high());
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
        let p = &mut self.parts[i];
        if data.len() != p.count as usize {
            return Err(Malformed);
        }
        p.data = Some(data);
        p.referenced = true;
        self.resident += p.body as usize;
        self.resident_parts += 1;
        Ok(true)
    }

    /// The parts (indexes) that hold `elems`, deduplicated, in order.
    pub fn parts_for<'a>(&self, elems: impl IntoIterator<Item = &'a [u8]>) -> Vec<usize> {
        let mut v: Vec<usize> = elems
            .into_iter()
            .map(|e| self.part_of(elem_hash(e)))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Part `i`, to change its record location (collector moves).
    pub fn part_mut(&mut self, i: usize) -> Option<&mut Part<V>> {
        self.parts.get_mut(i)
    }

    /// Checks invariants 1, 3 and 4 (tests).
    pub fn check(&self) -> Result<(), String> {
        let mut next = 0u64;
        let mut first = true;
        let (mut len, mut body, mut resident) = (0, 0, 0);
        for p in &self.parts {
            if !first && next == 0 {
                return Err("parts past the end".into());
            }
            if p.low != next {
                return Err(format!("gap or overlap at {:#x}", p.low));
            }
            first = false;
            next = p.high().wrapping_add(1);
            len += p.count as usize;
            body += p.body as usize;
            if let Some(m) = &p.data {
                resident += p.body as usize;
                if m.len() != p.count as usize {
                    return Err("count".into());
                }
                let b: usize = m
                    .iter()
                    .map(|(k, v)| {
                        packed_len(k.len()) + if V::VALUED { packed_len(v.len()) } else { 0 }
                    })
                    .sum();
                if b != p.body as usize {
                    return Err("body".into());
                }
                if m.iter().any(|(k, _)| !p.holds(elem_hash(k))) {
                    return Err("element out of range".into());
                }
            } else if p.dirty || p.loc.is_none() {
                return Err("cold part without a clean record".into());
            }
        }
        if next != 0 {
            return Err("parts do not reach the end".into());
        }
        let rp = self.parts.iter().filter(|p| p.is_resident()).count();
        if (len, body, resident, rp) != (self.len, self.body, self.resident, self.resident_parts) {
            return Err("totals".into());
        }
        Ok(())
    }
}

/// RAM one part's directory entry takes (beside its elements).
pub const PART_RAM_BYTES: usize = std::mem::size_of::<Part<()>>();

/// One scan step: (element, value bytes) pairs and the next cursor.
pub type ScanStep<'a> = (Vec<(&'a [u8], &'a [u8])>, u64);

/// What the engine sees of one part, whatever the collection's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartInfo {
    pub low: u64,
    pub depth: u8,
    pub dirty: bool,
    pub resident: bool,
    pub count: u32,
    pub body: u32,
    pub ver: u32,
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

/// A chunked collection's directory, as the engine's journal, demotion,
/// collector and checkpoint use it (object-safe over the element type).
pub trait Dir {
    fn cid(&self) -> u64;
    fn head_loc(&self) -> Option<FlashLoc>;
    fn set_head_loc(&mut self, loc: Option<FlashLoc>);
    fn head_seq(&self) -> u64;
    fn set_head_seq(&mut self, seq: u64);
    fn head_dirty(&self) -> bool;
    fn set_head_dirty(&mut self, dirty: bool);
    fn part_count(&self) -> usize;
    fn part(&self, i: usize) -> PartInfo;
    /// Index of the part holding hash `h`.
    fn part_of(&self, h: u64) -> usize;
    /// The parts a scan step covers (`Chunked::scan_parts`).
    fn scan_parts(&self, from: u64, count: usize) -> std::ops::Range<usize>;
    /// The demoter's hand over the parts in RAM: a used one loses its
    /// mark (spared), a clean one with a record leaves RAM (freed), a
    /// changed one is listed to be written. Returns (spared, freed,
    /// examined, changed parts).
    fn clock_pass(&mut self) -> (usize, usize, usize, Vec<usize>);
    /// Points part `i` at `loc` (a moved copy of its record).
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc);
    /// The parts whose record is `loc`, a record of the range at `low`,
    /// `depth` (they lie in that range: invariant 5).
    fn parts_at(&self, loc: FlashLoc, low: u64, depth: u8) -> Vec<usize>;
    fn encode_part(&self, i: usize, out: &mut Vec<u8>);
    fn published(
        &mut self,
        i: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>>;
    fn evict(&mut self, i: usize) -> usize;
    /// Marks part `i` used (CLOCK).
    fn touch(&mut self, i: usize);
    /// The demoter's hand passes part `i`: returns whether it was used
    /// since, clearing the mark.
    fn clock(&mut self, i: usize) -> bool;
    fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        wider: bool,
    ) -> Result<bool, Malformed>;
    fn take_new_refs(&mut self) -> Vec<FlashLoc>;
    fn resident_bytes(&self) -> usize;
    fn resident_parts(&self) -> usize;
    fn body_len(&self) -> usize;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Checks the directory's invariants (tests).
    fn check(&self) -> Result<(), String>;
    /// Every record the directory refers to, once per reference.
    fn locs(&self) -> Vec<FlashLoc> {
        let mut v: Vec<FlashLoc> = (0..self.part_count())
            .filter_map(|i| self.part(i).loc)
            .collect();
        v.extend(self.head_loc());
        v
    }
}

impl<V: Elem> Dir for Chunked<V> {
    fn cid(&self) -> u64 {
        self.cid
    }
    fn head_loc(&self) -> Option<FlashLoc> {
        self.head_loc
    }
    fn set_head_loc(&mut self, loc: Option<FlashLoc>) {
        self.head_loc = loc;
    }
    fn head_seq(&self) -> u64 {
        self.head_seq
    }
    fn set_head_seq(&mut self, seq: u64) {
        self.head_seq = seq;
    }
    fn head_dirty(&self) -> bool {
        self.head_dirty
    }
    fn set_head_dirty(&mut self, dirty: bool) {
        self.head_dirty = dirty;
    }
    fn part_count(&self) -> usize {
        self.parts.len()
    }
    fn part(&self, i: usize) -> PartInfo {
        let p = &self.parts[i];
        PartInfo {
            low: p.low,
            depth: p.depth,
            dirty: p.dirty,
            resident: p.is_resident(),
            count: p.count,
            body: p.body,
            ver: p.ver,
            loc: p.loc,
            seq: p.seq,
        }
    }
    fn part_of(&self, h: u64) -> usize {
        Chunked::part_of(self, h)
    }
    fn scan_parts(&self, from: u64, count: usize) -> std::ops::Range<usize> {
        Chunked::scan_parts(self, from, count)
    }
    fn clock_pass(&mut self) -> (usize, usize, usize, Vec<usize>) {
        let (mut spared, mut freed, mut examined) = (0, 0, 0);
        let mut changed = Vec::new();
        for i in 0..self.parts.len() {
            let p = &mut self.parts[i];
            if !p.is_resident() {
                continue;
            }
            examined += 1;
            if std::mem::replace(&mut p.referenced, false) {
                spared += 1;
            } else if p.dirty {
                changed.push(i);
            } else if p.loc.is_some() {
                Chunked::evict(self, i);
                freed += 1;
            }
        }
        (spared, freed, examined, changed)
    }
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc) {
        if let Some(p) = self.parts.get_mut(i) {
            p.loc = Some(loc);
        }
    }
    fn parts_at(&self, loc: FlashLoc, low: u64, depth: u8) -> Vec<usize> {
        let high = range_high(low, depth);
        (self.part_of(low)..self.parts.len())
            .take_while(|&i| self.parts[i].low <= high)
            .filter(|&i| self.parts[i].loc == Some(loc))
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
    fn touch(&mut self, i: usize) {
        if let Some(p) = self.parts.get_mut(i) {
            p.referenced = true;
        }
    }
    fn clock(&mut self, i: usize) -> bool {
        match self.parts.get_mut(i) {
            Some(p) => std::mem::replace(&mut p.referenced, false),
            None => false,
        }
    }
    fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        wider: bool,
    ) -> Result<bool, Malformed> {
        Chunked::install(self, i, loc, body, wider)
    }
    fn take_new_refs(&mut self) -> Vec<FlashLoc> {
        Chunked::take_new_refs(self)
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
        Chunked::check(self)
    }
}

impl<V: Elem> PartialEq for Chunked<V> {
    /// Same elements (the partitioning and residency are not compared; all
    /// parts must be in RAM).
    fn eq(&self, o: &Self) -> bool {
        self.len == o.len && self.iter().all(|(k, v)| o.get(k) == Some(v))
    }
}

/// Decodes a chunk body (`Chunked::encode_part`), keeping the elements
/// `keep` accepts.
pub fn decode_elems<V: Elem>(
    b: &[u8],
    keep: impl Fn(&[u8]) -> bool,
) -> Result<PartMap<V>, Malformed> {
    let mut r = Reader { b };
    let n = r.u32()? as usize;
    if n > b.len() / 4 {
        return Err(Malformed);
    }
    let mut m = PartMap::default();
    for _ in 0..n {
        let k = r.bytes()?;
        let v = V::take(&mut r)?;
        if keep(k) && m.insert(k.into(), v).is_some() {
            return Err(Malformed);
        }
    }
    if !r.b.is_empty() {
        return Err(Malformed);
    }
    Ok(m)
}

/// Checks that a chunk body is well formed (count, lengths, nothing left
/// over) without building anything.
fn check_packed<V: Elem>(b: &[u8]) -> Result<(), Malformed> {
    let mut r = Reader { b };
    let n = r.u32()? as usize;
    for _ in 0..n {
        r.bytes()?;
        V::take_slice(&mut r)?;
    }
    if r.b.is_empty() {
        Ok(())
    } else {
        Err(Malformed)
    }
}

/// Count and packed bytes of a chunk body (recovery), restricted to the
/// elements `keep` accepts.
pub fn measure_elems<V: Elem>(
    b: &[u8],
    keep: impl Fn(&[u8]) -> bool,
) -> Result<(u32, u32), Malformed> {
    let m = decode_elems::<V>(b, keep)?;
    let body: usize = m
        .iter()
        .map(|(k, v)| packed_len(k.len()) + v.packed())
        .sum();
    Ok((m.len() as u32, body as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(n: u32) -> FlashLoc {
        FlashLoc {
            segment: 1,
            offset: n,
            len: 10,
        }
    }

    #[test]
    fn grows_by_splitting_and_keeps_every_element() {
        let mut c: Chunked<Box<[u8]>> = Chunked::build(7, std::iter::empty());
        for i in 0..20_000u32 {
            let k = format!("field:{i}");
            assert!(c.insert(k.as_bytes(), vec![b'v'; 40].into()));
        }
        c.check().unwrap();
        assert_eq!(c.len(), 20_000);
        assert!(c.parts().len() > 50, "{}", c.parts().len());
        assert!(c.parts().iter().all(|p| p.body as usize <= CHUNK_MAX));
        for i in (0..20_000u32).step_by(7) {
            let k = format!("field:{i}");
            assert_eq!(c.get(k.as_bytes()).map(|v| v.len()), Some(40));
        }
        // Overwrite and remove keep the totals exact.
        assert!(!c.insert(b"field:3", vec![b'x'; 3].into()));
        assert_eq!(c.remove(b"field:4").map(|v| v.len()), Some(40));
        assert_eq!(c.remove(b"field:4"), None);
        c.check().unwrap();
        assert_eq!(c.iter().count(), 19_999);
        let mut seen = 0;
        while let Some((k, _)) = c.get_index(seen) {
            assert!(c.contains(k));
            seen += 1;
        }
        assert_eq!(seen, 19_999);
    }

    #[test]
    fn parts_round_trip_through_records_and_eviction() {
        let mut c: Chunked<()> = Chunked::build(
            1,
            (0..5_000u32).map(|i| (i.to_string().into_bytes().into(), ())),
        );
        c.check().unwrap();
        // Write every part, then evict them all.
        let mut bodies = Vec::new();
        for i in 0..c.parts().len() {
            let mut b = Vec::new();
            c.encode_part(i, &mut b);
            let ver = c.parts()[i].ver;
            assert_eq!(c.published(i, ver, loc(i as u32), 9), Some(None));
            bodies.push(b);
        }
        let before = c.resident_bytes();
        let freed: usize = (0..c.parts().len()).map(|i| c.evict(i)).sum();
        assert_eq!(freed, before);
        assert_eq!(c.resident_bytes(), 0);
        c.check().unwrap();
        // Load back only the part of one member.
        let p = c.parts_for([&b"1234"[..]]);
        assert_eq!(p.len(), 1);
        assert!(c
            .install(p[0], loc(p[0] as u32), &bodies[p[0]], false)
            .unwrap());
        assert!(c.contains(b"1234"));
        c.check().unwrap();
        // A stale version does not publish; a split halves refer to the
        // parent record (one new reference).
        let ver = c.parts()[p[0]].ver;
        c.insert(b"1234", ());
        assert_eq!(c.published(p[0], ver, loc(99), 10), None);
        for i in 0..c.parts().len() {
            if !c.parts()[i].is_resident() {
                let l = c.parts()[i].loc.unwrap();
                c.install(i, l, &bodies[l.offset as usize], false).unwrap();
            }
        }
        let parts = c.parts().len();
        for i in 5_000..8_000u32 {
            c.insert(i.to_string().as_bytes(), ());
        }
        c.check().unwrap();
        assert!(c.parts().len() > parts);
        assert!(!c.take_new_refs().is_empty());
    }

    #[test]
    fn a_wider_record_is_filtered_to_the_part() {
        // A part whose record is its parent's (a split that was not
        // written before a crash) loads only its own range's elements.
        let mut c: Chunked<()> = Chunked::build(
            1,
            (0..3_000u32).map(|i| (i.to_string().into_bytes().into(), ())),
        );
        let mut whole = Vec::new();
        {
            let all: Chunked<()> = Chunked::build(
                1,
                (0..3_000u32).map(|i| (i.to_string().into_bytes().into(), ())),
            );
            // One record holding every element.
            whole.extend_from_slice(&(all.len() as u32).to_le_bytes());
            for (k, _) in all.iter() {
                super::super::put(&mut whole, k);
            }
        }
        for i in 0..c.parts().len() {
            let ver = c.parts()[i].ver;
            c.published(i, ver, loc(0), 1);
            c.evict(i);
        }
        for i in 0..c.parts().len() {
            assert!(c.install(i, loc(0), &whole, true).unwrap());
        }
        c.check().unwrap();
        assert_eq!(c.iter().count(), 3_000);
        assert!(decode_elems::<()>(&whole[..whole.len() - 1], |_| true).is_err());
    }
}

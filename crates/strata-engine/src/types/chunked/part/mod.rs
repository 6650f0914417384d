//! One part of a chunked hash or set: its bookkeeping, packed into 32
//! bytes (what a part on flash costs in RAM: a terabyte of collections on
//! flash is ~128M parts of 8 KiB), and its elements or membership filter
//! when it has them (`data`, the elements' room).
//!
//! Packed layout (three u64 words; bit 0 is the least significant):
//!
//! | word | bits | field |
//! |---|---|---|
//! | 0 | 0..48 | `seq` of the part's record |
//! | 0 | 48..64 | `count` |
//! | 1 | 0..24 | the record's segment |
//! | 1 | 24..54 | the record's offset |
//! | 1 | 54..60 | `depth` |
//! | 1 | 60..64 | flags: dirty, referenced, own, wide |
//! | 2 | 0..32 | `low >> 32` |
//! | 2 | 32..48 | `body` |
//! | 2 | 48..64 | the record's length (0: no record) |
//!
//! Invariants:
//! 1. A part whose fields do not all fit that layout (a `low` with bits
//!    below 32 set, a part past depth 32; a count, body or record length
//!    past 16 bits; a segment past 24 bits, an offset past 30, a sequence
//!    number past 48; a record of length 0) is *wide*: its fields are in
//!    its box (`Fields`), and only the flags of the packed words are used.
//!    Reading a field gives what was stored, in either form.
//! 2. The box exists only while the part has data (elements or a filter),
//!    is wide or is dirty: a clean plain part on flash is its 32 bytes.
//! 3. `ver` is in the box, so a dirty part keeps it (a part on flash is
//!    dirty from a blind add until the journal logs it); a part without a
//!    box reads 0. The collection numbers versions (`Chunked::next_ver`,
//!    never 0), so a part read back never takes a version an older capture
//!    of it holds.

mod data;

pub(super) use data::{check_packed, packed_get};
pub use data::{decode_elems, measure_elems, Data, Elem, PartMap};

use crate::base::FlashLoc;
use crate::types::parts::range_high;

/// A part's fields, whichever form holds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Fields {
    /// First hash of the range.
    pub low: u64,
    /// The range holds `2^(64 - depth)` hashes.
    pub depth: u8,
    /// Elements and their packed bytes (`Chunked` invariant 3).
    pub count: u32,
    pub body: u32,
    /// The record holding this part (`Chunked` invariant 5), and its
    /// sequence number.
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

const SEQ_BITS: u32 = 48;
const SEG_BITS: u32 = 24;
const OFF_BITS: u32 = 30;
const OFF_SHIFT: u32 = SEG_BITS;
const DEPTH_SHIFT: u32 = OFF_SHIFT + OFF_BITS;
const DEPTH_MAX: u8 = 63;
const F_DIRTY: u64 = 1 << 60;
const F_REFERENCED: u64 = 1 << 61;
const F_OWN: u64 = 1 << 62;
const F_WIDE: u64 = 1 << 63;
const FLAGS: u64 = F_DIRTY | F_REFERENCED | F_OWN | F_WIDE;
const U16: u64 = 0xffff;

fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

impl Fields {
    /// The packed words (flags clear), if every field fits.
    fn pack(&self) -> Option<[u64; 3]> {
        let (seg, off, len) = match self.loc {
            Some(l) => (u64::from(l.segment), u64::from(l.offset), u64::from(l.len)),
            None => (0, 0, 0),
        };
        let fits = self.low & 0xffff_ffff == 0
            && self.depth <= DEPTH_MAX
            && u64::from(self.count) <= U16
            && u64::from(self.body) <= U16
            && seg <= mask(SEG_BITS)
            && off <= mask(OFF_BITS)
            && len <= U16
            && (self.loc.is_none() || len > 0)
            && self.seq <= mask(SEQ_BITS);
        fits.then(|| {
            [
                self.seq | u64::from(self.count) << SEQ_BITS,
                seg | off << OFF_SHIFT | u64::from(self.depth) << DEPTH_SHIFT,
                self.low >> 32 | u64::from(self.body) << 32 | len << 48,
            ]
        })
    }
    fn unpack(w: &[u64; 3]) -> Fields {
        let len = (w[2] >> 48) as u32;
        Fields {
            low: (w[2] & 0xffff_ffff) << 32,
            depth: ((w[1] >> DEPTH_SHIFT) & 0x3f) as u8,
            count: (w[0] >> SEQ_BITS) as u32,
            body: ((w[2] >> 32) & U16) as u32,
            loc: (len > 0).then(|| FlashLoc {
                segment: (w[1] & mask(SEG_BITS)) as u32,
                offset: ((w[1] >> OFF_SHIFT) & mask(OFF_BITS)) as u32,
                len,
            }),
            seq: w[0] & mask(SEQ_BITS),
        }
    }
}

/// What a part has besides its packed words (invariant 2).
#[derive(Clone, Debug)]
struct Extra<V> {
    data: Option<Data<V>>,
    ver: u32,
    wide: Option<Box<Fields>>,
}

/// One part of a chunked collection (module doc).
#[derive(Clone, Debug)]
pub struct Part<V> {
    w: [u64; 3],
    x: Option<Box<Extra<V>>>,
}

impl<V> Part<V> {
    /// A part of these fields; `data`: its elements (or filter).
    pub fn new(f: Fields, dirty: bool, own: bool, data: Option<Data<V>>) -> Part<V> {
        let mut p = Part { w: [0; 3], x: None };
        p.store(f);
        p.set_dirty(dirty);
        p.set_flag(F_REFERENCED, true);
        p.set_flag(F_OWN, own);
        p.set_data(data);
        p
    }

    fn flag(&self, f: u64) -> bool {
        self.w[1] & f != 0
    }
    fn set_flag(&mut self, f: u64, on: bool) {
        if on {
            self.w[1] |= f;
        } else {
            self.w[1] &= !f;
        }
    }
    fn extra_mut(&mut self) -> &mut Extra<V> {
        self.x.get_or_insert_with(|| {
            Box::new(Extra {
                data: None,
                ver: 0,
                wide: None,
            })
        })
    }
    /// Drops the box once it holds nothing (invariant 2).
    fn prune(&mut self) {
        let dirty = self.dirty();
        if self
            .x
            .as_ref()
            .is_some_and(|x| x.data.is_none() && x.wide.is_none() && !dirty)
        {
            self.x = None;
        }
    }

    /// The part's fields (invariant 1).
    pub fn fields(&self) -> Fields {
        match self.x.as_ref().and_then(|x| x.wide.as_deref()) {
            Some(f) if self.flag(F_WIDE) => *f,
            _ => Fields::unpack(&self.w),
        }
    }
    /// Stores `f`, packed if it fits, else wide (invariant 1).
    fn store(&mut self, f: Fields) {
        let flags = self.w[1] & FLAGS;
        match f.pack() {
            Some(w) => {
                self.w = w;
                self.w[1] |= flags & !F_WIDE;
                if let Some(x) = self.x.as_mut() {
                    x.wide = None;
                }
                self.prune();
            }
            None => {
                self.w[1] |= F_WIDE;
                self.extra_mut().wide = Some(Box::new(f));
            }
        }
    }
    /// Heap bytes the part's fields take when wide (invariant 1).
    pub fn wide_bytes(&self) -> usize {
        if self.flag(F_WIDE) {
            std::mem::size_of::<Fields>()
        } else {
            0
        }
    }
    /// Changes the part's fields by `f`.
    pub fn update(&mut self, f: impl FnOnce(&mut Fields)) {
        let mut fl = self.fields();
        f(&mut fl);
        self.store(fl);
    }

    pub fn low(&self) -> u64 {
        if self.flag(F_WIDE) {
            self.fields().low
        } else {
            (self.w[2] & 0xffff_ffff) << 32
        }
    }
    pub fn depth(&self) -> u8 {
        if self.flag(F_WIDE) {
            self.fields().depth
        } else {
            ((self.w[1] >> DEPTH_SHIFT) & 0x3f) as u8
        }
    }
    pub fn count(&self) -> u32 {
        if self.flag(F_WIDE) {
            self.fields().count
        } else {
            (self.w[0] >> SEQ_BITS) as u32
        }
    }
    pub fn body(&self) -> u32 {
        if self.flag(F_WIDE) {
            self.fields().body
        } else {
            ((self.w[2] >> 32) & U16) as u32
        }
    }
    pub fn loc(&self) -> Option<FlashLoc> {
        self.fields().loc
    }
    pub fn seq(&self) -> u64 {
        if self.flag(F_WIDE) {
            self.fields().seq
        } else {
            self.w[0] & mask(SEQ_BITS)
        }
    }
    /// Sets the element count and packed bytes.
    pub fn set_size(&mut self, count: u32, body: u32) {
        if !self.flag(F_WIDE) && u64::from(count) <= U16 && u64::from(body) <= U16 {
            self.w[0] = self.w[0] & mask(SEQ_BITS) | u64::from(count) << SEQ_BITS;
            self.w[2] = self.w[2] & !(U16 << 32) | u64::from(body) << 32;
        } else {
            self.update(|f| {
                f.count = count;
                f.body = body;
            });
        }
    }
    /// Points the part at record `loc` of sequence `seq`; returns the
    /// record it had.
    pub fn set_loc(&mut self, loc: Option<FlashLoc>, seq: u64) -> Option<FlashLoc> {
        let old = self.loc();
        self.update(|f| {
            f.loc = loc;
            f.seq = seq;
        });
        old
    }

    /// Changed since `loc` was written.
    pub fn dirty(&self) -> bool {
        self.flag(F_DIRTY)
    }
    pub fn set_dirty(&mut self, on: bool) {
        self.set_flag(F_DIRTY, on);
        if on {
            // (Invariant 3: its version stays.)
            self.extra_mut();
        } else {
            self.prune();
        }
    }
    /// Used since the demoter's hand last passed (CLOCK, per part).
    pub fn referenced(&self) -> bool {
        self.flag(F_REFERENCED)
    }
    pub fn set_referenced(&mut self, on: bool) {
        self.set_flag(F_REFERENCED, on);
    }
    /// The part's record is of its own range (not of the wider range of a
    /// part split since): its body is the part's (`blind`).
    pub fn own(&self) -> bool {
        self.flag(F_OWN)
    }
    pub fn set_own(&mut self, on: bool) {
        self.set_flag(F_OWN, on);
    }
    /// Bumped by every change: a writer publishes its record only if the
    /// part still has the version it encoded (invariant 3).
    pub fn ver(&self) -> u32 {
        self.x.as_ref().map_or(0, |x| x.ver)
    }
    pub fn set_ver(&mut self, ver: u32) {
        self.extra_mut().ver = ver;
    }

    /// Last hash of the range (inclusive).
    pub fn high(&self) -> u64 {
        range_high(self.low(), self.depth())
    }
    pub fn holds(&self, h: u64) -> bool {
        h >= self.low() && h <= self.high()
    }
    pub fn is_resident(&self) -> bool {
        self.elems().is_some()
    }
    /// The elements (or filter), as stored.
    pub(super) fn data_mut(&mut self) -> Option<&mut Data<V>> {
        self.x.as_mut()?.data.as_mut()
    }
    /// Sets the part's elements or filter (None: neither).
    pub fn set_data(&mut self, data: Option<Data<V>>) {
        match data {
            Some(d) => self.extra_mut().data = Some(d),
            None => {
                if let Some(x) = self.x.as_mut() {
                    x.data = None;
                }
                self.prune();
            }
        }
    }
    /// The elements, when in RAM.
    pub fn elems(&self) -> Option<&Data<V>> {
        self.x
            .as_ref()?
            .data
            .as_ref()
            .filter(|d| !matches!(d, Data::Cold(_)))
    }
    pub fn elems_mut(&mut self) -> Option<&mut Data<V>> {
        self.data_mut().filter(|d| !matches!(d, Data::Cold(_)))
    }
    /// The membership filter of a part on flash (`blind`).
    pub fn filter(&self) -> Option<&super::Filter> {
        match self.x.as_ref()?.data.as_ref() {
            Some(Data::Cold(f)) => Some(f),
            _ => None,
        }
    }
    pub fn filter_mut(&mut self) -> Option<&mut super::Filter> {
        match self.data_mut() {
            Some(Data::Cold(f)) => Some(f),
            _ => None,
        }
    }
}

/// A part's entry is the RAM every part on flash costs.
const _: () = assert!(std::mem::size_of::<Part<Box<[u8]>>>() == 32);

#[cfg(test)]
mod tests;

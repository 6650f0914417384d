//! A part's bookkeeping packed into 32 bytes, shared by the kinds of
//! parts (what a part on flash costs in RAM: a terabyte of collections on
//! flash is ~128M parts of 8 KiB): the part's name (`key`, `tag`, as its
//! kind packs them: `KeyCodec`), element count and packed bytes, record
//! and sequence number, flags; and a box for what only some parts have
//! (their elements or filter, `data`; their version; their fields when
//! they do not fit).
//!
//! Packed layout (three u64 words; bit 0 is the least significant):
//!
//! | word | bits | field |
//! |---|---|---|
//! | 0 | 0..48 | `seq` of the part's record |
//! | 0 | 48..64 | `count` |
//! | 1 | 0..24 | the record's segment |
//! | 1 | 24..53 | the record's offset |
//! | 1 | 53..59 | the name's bits 32..38 |
//! | 1 | 59..64 | flags: hot, dirty, referenced, own, wide |
//! | 2 | 0..32 | the name's bits 0..32 |
//! | 2 | 32..48 | `body` |
//! | 2 | 48..64 | the record's length (0: no record) |
//!
//! Invariants:
//! 1. A part whose fields do not all fit that layout (a name its kind
//!    cannot pack in 38 bits; a count, body or record length past 16 bits;
//!    a segment past 24 bits, an offset past 29, a sequence number past
//!    48; a record of length 0) is *wide*: its fields are in its box
//!    (`Fields`), and only the flags of the packed words are used.
//!    Reading a field gives what was stored, in either form.
//! 2. The box exists only while the part has data (elements or a filter),
//!    is wide or is dirty: a clean plain part on flash is its 32 bytes.
//! 3. `ver` is in the box, so a dirty part keeps it (a part on flash is
//!    dirty from a blind add until the journal logs it); a part without a
//!    box reads 0. Collections number versions (`next_version`, never
//!    0), so a part read back never takes a version an older capture of
//!    it holds.
//! 4. `hot` is set exactly while the part's data is its elements
//!    (`PartData::is_elems`; not a filter): the demoter's hand reads it
//!    from the packed words, without a cache miss per part on flash.

use crate::base::FlashLoc;
use std::marker::PhantomData;

/// A part's fields, whichever form holds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Fields {
    /// The part's name: a hash part's `low`, a list part's `start`.
    pub key: u64,
    /// More of it: a hash part's `depth`.
    pub tag: u8,
    /// Elements and their packed bytes.
    pub count: u32,
    pub body: u32,
    /// The record holding this part, and its sequence number.
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

const SEQ_BITS: u32 = 48;
const SEG_BITS: u32 = 24;
const OFF_BITS: u32 = 29;
const OFF_SHIFT: u32 = SEG_BITS;
const NAME_HI_SHIFT: u32 = OFF_SHIFT + OFF_BITS;
/// Bits of a packed name.
pub const NAME_BITS: u32 = 38;
const F_HOT: u64 = 1 << 59;
const F_DIRTY: u64 = 1 << 60;
const F_REFERENCED: u64 = 1 << 61;
const F_OWN: u64 = 1 << 62;
const F_WIDE: u64 = 1 << 63;
const FLAGS: u64 = F_HOT | F_DIRTY | F_REFERENCED | F_OWN | F_WIDE;

/// The next version of a collection's parts (`vers` its last one):
/// never 0, which a part without a box reads (invariant 3).
pub fn next_version(vers: &mut u32) -> u32 {
    *vers = vers.checked_add(1).unwrap_or(1);
    *vers
}

/// What a kind keeps in a part's box as its data.
pub trait PartData {
    /// Whether this is the part's elements (not, say, a filter of them).
    fn is_elems(&self) -> bool {
        true
    }
}
const U16: u64 = 0xffff;

fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// How a kind of part packs its name (`Fields::key`, `tag`) in
/// `NAME_BITS` bits.
pub trait KeyCodec {
    /// The packed name, if it fits.
    fn pack(key: u64, tag: u8) -> Option<u64>;
    fn unpack(bits: u64) -> (u64, u8);
}

impl Fields {
    /// The packed words (flags clear), if every field fits.
    fn pack<K: KeyCodec>(&self) -> Option<[u64; 3]> {
        let (seg, off, len) = match self.loc {
            Some(l) => (u64::from(l.segment), u64::from(l.offset), u64::from(l.len)),
            None => (0, 0, 0),
        };
        let name = K::pack(self.key, self.tag).filter(|&n| n <= mask(NAME_BITS))?;
        let fits = u64::from(self.count) <= U16
            && u64::from(self.body) <= U16
            && seg <= mask(SEG_BITS)
            && off <= mask(OFF_BITS)
            && len <= U16
            && (self.loc.is_none() || len > 0)
            && self.seq <= mask(SEQ_BITS);
        fits.then(|| {
            [
                self.seq | u64::from(self.count) << SEQ_BITS,
                seg | off << OFF_SHIFT | (name >> 32) << NAME_HI_SHIFT,
                name & 0xffff_ffff | u64::from(self.body) << 32 | len << 48,
            ]
        })
    }
    fn unpack<K: KeyCodec>(w: &[u64; 3]) -> Fields {
        let len = (w[2] >> 48) as u32;
        let (key, tag) = K::unpack(name_bits(w));
        Fields {
            key,
            tag,
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

/// The packed name's bits.
fn name_bits(w: &[u64; 3]) -> u64 {
    w[2] & 0xffff_ffff | ((w[1] >> NAME_HI_SHIFT) & 0x3f) << 32
}

/// What a part has besides its packed words (invariant 2).
#[derive(Clone, Debug)]
struct Extra<D> {
    data: Option<D>,
    ver: u32,
    wide: Option<Box<Fields>>,
}

/// A part's bookkeeping (module doc): `D` its data, `K` how its name
/// packs.
pub struct Packed<D, K> {
    w: [u64; 3],
    x: Option<Box<Extra<D>>>,
    k: PhantomData<K>,
}

impl<D: Clone, K> Clone for Packed<D, K> {
    fn clone(&self) -> Self {
        Packed {
            w: self.w,
            x: self.x.clone(),
            k: PhantomData,
        }
    }
}

impl<D: std::fmt::Debug + PartData, K: KeyCodec> std::fmt::Debug for Packed<D, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed")
            .field("fields", &self.fields())
            .field("dirty", &self.dirty())
            .field("data", &self.data())
            .finish()
    }
}

impl<D: PartData, K: KeyCodec> Packed<D, K> {
    /// A part of these fields; `data`: its elements (or filter).
    pub fn new(f: Fields, dirty: bool, own: bool, data: Option<D>) -> Self {
        let mut p = Packed {
            w: [0; 3],
            x: None,
            k: PhantomData,
        };
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
    fn extra_mut(&mut self) -> &mut Extra<D> {
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
        // (The flag first: the box is a cache miss.)
        if self.flag(F_WIDE) {
            if let Some(f) = self.x.as_ref().and_then(|x| x.wide.as_deref()) {
                return *f;
            }
        }
        Fields::unpack::<K>(&self.w)
    }
    /// Stores `f`, packed if it fits, else wide (invariant 1).
    fn store(&mut self, f: Fields) {
        let flags = self.w[1] & FLAGS;
        match f.pack::<K>() {
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

    /// The part's name (`Fields::key`, `tag`).
    pub fn name(&self) -> (u64, u8) {
        if self.flag(F_WIDE) {
            let f = self.fields();
            (f.key, f.tag)
        } else {
            K::unpack(name_bits(&self.w))
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
    /// Whether the part's elements are in RAM (invariant 4).
    pub fn hot(&self) -> bool {
        self.flag(F_HOT)
    }
    /// Sets the used mark to `on`; returns the mark it had.
    pub fn swap_referenced(&mut self, on: bool) -> bool {
        let was = self.referenced();
        self.set_referenced(on);
        was
    }
    /// A hash part's record is of its own range (not of the wider range
    /// of a part split since): its body is the part's (`chunked::blind`).
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

    /// The part's data (its elements, or a filter), as stored.
    pub fn data(&self) -> Option<&D> {
        self.x.as_ref()?.data.as_ref()
    }
    pub fn data_mut(&mut self) -> Option<&mut D> {
        self.x.as_mut()?.data.as_mut()
    }
    /// Sets the part's data (None: none).
    pub fn set_data(&mut self, data: Option<D>) {
        self.set_flag(F_HOT, data.as_ref().is_some_and(PartData::is_elems));
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
}

#[cfg(test)]
mod tests;

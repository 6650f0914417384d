//! `Cell`: how a `KeyMap` bucket holds its entry. A cold entry with
//! nothing but a location, a version, a type and its CLOCK bits is
//! *packed* into 15 bytes beside the key; one that also has a TTL or
//! memcached flags (or, a collection, its element count) keeps them in a
//! 32-byte box beside the packed bytes (`Ext`); every other entry is a
//! boxed [`Entry`]. The bucket
//! (`bucket.rs`) stores a cell in its 15 bytes (the packed bytes, or the
//! box's pointer) and its form in its meta byte: a flash-sized dataset,
//! mostly cold, pays 32 bytes per key of up to 16 bytes (32 + 32 with a
//! TTL); a hot key pays 32 + 80.
//!
//! Packed layout (120 bits, little-endian):
//!
//! | bits | field |
//! |---|---|
//! | 0..24 | segment id |
//! | 24..50 | offset of the record in its segment |
//! | 50..64 | length of the record |
//! | 64..112 | version |
//! | 112..115 | value type |
//! | 115 | `F_REFERENCED` |
//! | 116 | `F_TOUCHED` |
//!
//! Invariants:
//! 1. Packing loses nothing the entry's readers see: an entry is packed
//!    only if it is `Slot::Cold`, has no flag but the CLOCK bits, no type
//!    bit but the type (its TTL and client flags go to `Ext`: a
//!    collection's element count too), a record of exactly
//!    `RECORD_HEADER_LEN + key + value_len` bytes (one more for a
//!    collection's type byte), and every field fits.
//! 2. The one exception is `lru_secs`: a packed entry has no last-access
//!    time. It reads as 0 ("unknown"), and readers of idle time take the
//!    creation time of the entry's segment instead (`Engine::idle_base`):
//!    the value was idle when it was demoted.

use super::{Entry, FlashLoc, Slot, F_REFERENCED, F_TOUCHED, VTYPE_MASK};
use crate::base::ValueType;
use crate::flash::format::RECORD_HEADER_LEN;

const SEG_BITS: u32 = 24;
const OFF_BITS: u32 = 26;
const LEN_BITS: u32 = 14;
const VERSION_BITS: u32 = 48;
const OFF_SHIFT: u32 = SEG_BITS;
const LEN_SHIFT: u32 = OFF_SHIFT + OFF_BITS;
const VERSION_SHIFT: u32 = LEN_SHIFT + LEN_BITS;
const VTYPE_SHIFT: u32 = VERSION_SHIFT + VERSION_BITS;
const REF_BIT: u32 = VTYPE_SHIFT + 3;
const TOUCHED_BIT: u32 = REF_BIT + 1;

fn mask(bits: u32) -> u128 {
    (1u128 << bits) - 1
}

fn fits(v: u64, bits: u32) -> bool {
    v >> bits == 0
}

/// A bucket's entry: packed in place, packed with a side box for its TTL
/// and client flags, or boxed whole.
#[derive(Clone, Debug)]
pub enum Cell {
    Full(Box<Entry>),
    Packed([u8; 15]),
    Ext(Box<Ext>),
}

/// A packed cold entry's TTL and memcached client flags.
#[derive(Clone, Debug)]
pub struct Ext {
    packed: [u8; 15],
    client_flags: u32,
    expire_at_ms: u64,
}

const _: () = assert!(std::mem::size_of::<Cell>() == 16);
const _: () = assert!(std::mem::size_of::<Ext>() == 32);

/// Which form a cell has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Full,
    Packed,
    Ext,
}

impl Cell {
    /// The cell for `e` (packed if it can be, invariant 1).
    pub(super) fn new(key_len: usize, e: Entry) -> Cell {
        match pack(key_len, &e) {
            Some(p) => Cell::packed(p, &e),
            None => Cell::Full(Box::new(e)),
        }
    }

    fn packed(packed: [u8; 15], e: &Entry) -> Cell {
        if e.expire_at_ms == 0 && e.client_flags == 0 {
            Cell::Packed(packed)
        } else {
            Cell::Ext(Box::new(Ext {
                packed,
                client_flags: e.client_flags,
                expire_at_ms: e.expire_at_ms,
            }))
        }
    }

    pub(super) fn kind(&self) -> Kind {
        match self {
            Cell::Full(_) => Kind::Full,
            Cell::Packed(_) => Kind::Packed,
            Cell::Ext(_) => Kind::Ext,
        }
    }

    pub(super) fn is_full(&self) -> bool {
        matches!(self, Cell::Full(_))
    }

    /// The entry, boxed first if packed (the caller may change anything).
    /// Returns the form it had.
    pub(super) fn entry_mut(&mut self, key_len: usize) -> (&mut Entry, Kind) {
        let was = self.kind();
        match self {
            Cell::Packed(p) => *self = Cell::Full(Box::new(unpack(key_len, p))),
            Cell::Ext(x) => *self = Cell::Full(Box::new(unpack_ext(key_len, x))),
            Cell::Full(_) => {}
        }
        match self {
            Cell::Full(e) => (e, was),
            _ => unreachable!("boxed above"),
        }
    }

    pub(super) fn into_entry(self, key_len: usize) -> Entry {
        match self {
            Cell::Full(e) => *e,
            Cell::Packed(p) => unpack(key_len, &p),
            Cell::Ext(x) => unpack_ext(key_len, &x),
        }
    }

    /// Packs a boxed entry if it can be; returns the form it took.
    pub(super) fn try_pack(&mut self, key_len: usize) -> Kind {
        let Cell::Full(e) = self else {
            return self.kind();
        };
        if let Some(p) = pack(key_len, e) {
            *self = Cell::packed(p, e);
        }
        self.kind()
    }
}

/// An entry as a map lends it for reading.
pub type EntryRef<'a> = std::borrow::Cow<'a, Entry>;

fn pack(key_len: usize, e: &Entry) -> Option<[u8; 15]> {
    let Slot::Cold(loc) = e.slot else {
        return None;
    };
    let clock = F_REFERENCED | F_TOUCHED;
    if e.flags & !clock != 0
        || e.vtype & !VTYPE_MASK != 0
        || e.vtype > 7
        || loc.len as usize != record_len(key_len, e.value_len as usize, e.vtype)
        || !fits(loc.segment as u64, SEG_BITS)
        || !fits(loc.offset as u64, OFF_BITS)
        || !fits(loc.len as u64, LEN_BITS)
        || !fits(e.version, VERSION_BITS)
    {
        return None;
    }
    let w = loc.segment as u128
        | (loc.offset as u128) << OFF_SHIFT
        | (loc.len as u128) << LEN_SHIFT
        | (e.version as u128) << VERSION_SHIFT
        | (e.vtype as u128) << VTYPE_SHIFT
        | ((e.flags & F_REFERENCED != 0) as u128) << REF_BIT
        | ((e.flags & F_TOUCHED != 0) as u128) << TOUCHED_BIT;
    let mut p = [0u8; 15];
    p.copy_from_slice(&w.to_le_bytes()[..15]);
    Some(p)
}

impl Ext {
    pub(super) fn unpack(&self, key_len: usize) -> Entry {
        unpack_ext(key_len, self)
    }
}

fn unpack_ext(key_len: usize, x: &Ext) -> Entry {
    Entry {
        expire_at_ms: x.expire_at_ms,
        client_flags: x.client_flags,
        ..unpack(key_len, &x.packed)
    }
}

pub(super) fn unpack(key_len: usize, p: &[u8; 15]) -> Entry {
    let mut b = [0u8; 16];
    b[..15].copy_from_slice(p);
    let w = u128::from_le_bytes(b);
    let field = |shift: u32, bits: u32| ((w >> shift) & mask(bits)) as u64;
    let len = field(LEN_SHIFT, LEN_BITS) as u32;
    let vtype = field(VTYPE_SHIFT, 3) as u8;
    let mut flags = 0;
    if field(REF_BIT, 1) != 0 {
        flags |= F_REFERENCED;
    }
    if field(TOUCHED_BIT, 1) != 0 {
        flags |= F_TOUCHED;
    }
    Entry {
        slot: Slot::Cold(FlashLoc {
            segment: field(0, SEG_BITS) as u32,
            offset: field(OFF_SHIFT, OFF_BITS) as u32,
            len,
        }),
        expire_at_ms: 0,
        version: field(VERSION_SHIFT, VERSION_BITS),
        lru_secs: 0,
        lfu: 0,
        flags,
        value_len: len - record_len(key_len, 0, vtype) as u32,
        client_flags: 0,
        vtype,
    }
}

/// The length of the record of a cold value of `value_len` bytes and type
/// `vtype`: a collection's record (kind 6) has a type byte before its
/// packed value (docs/format.md), a string's (kind 1) nothing.
fn record_len(key_len: usize, value_len: usize, vtype: u8) -> usize {
    let prefix = usize::from(vtype != ValueType::String as u8);
    RECORD_HEADER_LEN + key_len + prefix + value_len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cold(segment: u32, offset: u32, value_len: u32, version: u64) -> Entry {
        Entry {
            slot: Slot::Cold(FlashLoc {
                segment,
                offset,
                len: record_len(5, value_len as usize, 3) as u32,
            }),
            expire_at_ms: 0,
            version,
            lru_secs: 0,
            lfu: 0,
            flags: F_REFERENCED,
            value_len,
            client_flags: 0,
            vtype: 3,
        }
    }

    #[test]
    fn a_packed_entry_reads_back_whole() {
        for e in [
            cold(0, 0, 0, 0),
            cold((1 << 24) - 1, (1 << 26) - 1, 16_000, (1 << 48) - 1),
            cold(77, 123_456, 512, 9_999_999),
        ] {
            let c = Cell::new(5, e.clone());
            assert!(!c.is_full(), "{e:?}");
            let back = c.into_entry(5);
            assert_eq!(format!("{back:?}"), format!("{e:?}"));
        }
    }

    #[test]
    fn a_ttl_and_client_flags_go_beside_the_packed_bytes() {
        let mut ttl = cold(9, 99, 10, 999);
        ttl.expire_at_ms = 1_800_000_000_123;
        let mut flags = cold(1, 1, 10, 1);
        flags.client_flags = u32::MAX;
        flags.expire_at_ms = 5;
        for e in [ttl, flags] {
            let c = Cell::new(5, e.clone());
            assert_eq!(c.kind(), Kind::Ext, "{e:?}");
            let back = c.into_entry(5);
            assert_eq!(format!("{back:?}"), format!("{e:?}"));
        }
    }

    #[test]
    fn what_a_packed_entry_cannot_hold_stays_boxed() {
        let mut dirty = cold(1, 1, 10, 1);
        dirty.flags |= super::super::F_DIRTY;
        let mut raw = cold(1, 1, 10, 1);
        raw.vtype |= super::super::VT_STR_RAW;
        let mut prefix = cold(1, 1, 10, 1);
        if let Slot::Cold(l) = &mut prefix.slot {
            l.len += 4;
        }
        for e in [
            dirty,
            raw,
            prefix,
            cold(1 << 24, 0, 1, 1),
            cold(0, 1 << 26, 1, 1),
            cold(0, 0, 1 << 14, 1),
            cold(0, 0, 1, 1 << 48),
        ] {
            assert!(Cell::new(5, e.clone()).is_full(), "{e:?}");
        }
    }

    #[test]
    fn a_cold_collection_packs_with_its_count_beside() {
        // A collection's record has a type byte before its packed value;
        // its element count (`types::aux`) is in its client flags.
        let mut h = cold(4, 8, 300, 77);
        h.vtype = ValueType::Hash as u8;
        h.client_flags = 20;
        let c = Cell::new(5, h.clone());
        assert_eq!(c.kind(), Kind::Ext);
        assert_eq!(format!("{:?}", c.into_entry(5)), format!("{h:?}"));
        // A string's record has none: that length is not a string of 300.
        let mut s = h.clone();
        s.vtype = ValueType::String as u8;
        s.client_flags = 0;
        assert!(Cell::new(5, s).is_full());
    }

    #[test]
    fn changing_a_packed_entry_boxes_it() {
        let mut c = Cell::new(5, cold(3, 4, 5, 6));
        let (e, was) = c.entry_mut(5);
        assert_eq!(was, Kind::Packed);
        e.flags |= super::super::F_DIRTY;
        assert!(c.is_full());
        assert_eq!(c.try_pack(5), Kind::Full);
        if let Cell::Full(e) = &mut c {
            e.flags &= !super::super::F_DIRTY;
            e.expire_at_ms = 10;
        }
        assert_eq!(c.try_pack(5), Kind::Ext);
        let (e, was) = c.entry_mut(5);
        assert_eq!(was, Kind::Ext);
        assert_eq!(e.expire_at_ms, 10);
        e.expire_at_ms = 0;
        assert_eq!(c.try_pack(5), Kind::Packed);
    }
}

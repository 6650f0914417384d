//! One part of a chunked hash or set: its bookkeeping packed into 32
//! bytes (`parts::packed`: a hash part's name is its range, `low` and
//! `depth`), and its elements or membership filter when it has them
//! (`data`).
//!
//! Invariant: a part packs its range when `low`'s bits below 32 are zero
//! (every part down to depth 32); a deeper one is wide (`packed`
//! invariant 1).

mod data;

pub(super) use data::{check_packed, packed_get};
pub use data::{decode_elems, measure_elems, Data, Elem, PartMap};

pub use crate::types::parts::packed::Fields;
use crate::types::parts::packed::{KeyCodec, Packed, PartData};

impl<V> PartData for Data<V> {
    fn is_elems(&self) -> bool {
        !matches!(self, Data::Cold(_))
    }
}
use crate::types::parts::range_high;

/// How a hash part packs its range: `low >> 32`, then `depth`.
#[derive(Clone, Copy, Debug)]
pub struct HashKey;

impl KeyCodec for HashKey {
    fn pack(low: u64, depth: u8) -> Option<u64> {
        (low & 0xffff_ffff == 0 && depth < 64).then(|| low >> 32 | u64::from(depth) << 32)
    }
    fn unpack(bits: u64) -> (u64, u8) {
        ((bits & 0xffff_ffff) << 32, (bits >> 32) as u8)
    }
}

/// One part of a chunked collection (module doc).
pub type Part<V> = Packed<Data<V>, HashKey>;

impl<V> Packed<Data<V>, HashKey> {
    /// First hash of the range.
    pub fn low(&self) -> u64 {
        self.name().0
    }
    /// The range holds `2^(64 - depth)` hashes.
    pub fn depth(&self) -> u8 {
        self.name().1
    }
    /// Last hash of the range (inclusive).
    pub fn high(&self) -> u64 {
        let (low, depth) = self.name();
        range_high(low, depth)
    }
    pub fn holds(&self, h: u64) -> bool {
        h >= self.low() && h <= self.high()
    }
    pub fn is_resident(&self) -> bool {
        self.hot()
    }
    /// The elements, when in RAM.
    pub fn elems(&self) -> Option<&Data<V>> {
        self.data().filter(|d| !matches!(d, Data::Cold(_)))
    }
    pub fn elems_mut(&mut self) -> Option<&mut Data<V>> {
        self.data_mut().filter(|d| !matches!(d, Data::Cold(_)))
    }
    /// The membership filter of a part on flash (`blind`).
    pub fn filter(&self) -> Option<&super::Filter> {
        match self.data() {
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

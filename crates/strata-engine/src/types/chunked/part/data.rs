//! A part's elements in RAM (`Data`: the packed chunk body as read,
//! searched in place, or a map once changed), what they map to (`Elem`),
//! and decoding chunk bodies.

use crate::types::{packed_len, put, Malformed, Reader};
use indexmap::IndexMap;

/// What a chunked collection maps an element to: a hash field's value, or
/// nothing for a set member.
pub trait Elem: Clone + std::fmt::Debug + PartialEq + Default {
    /// Whether elements have values (a hash) or not (a set).
    const VALUED: bool;
    /// Whether a new element may be added to a part on flash without
    /// reading it (`blind`: hash fields and set members, not a sorted
    /// set's members, which also go in an order part).
    const BLIND: bool = true;
    /// Bytes the value takes when packed after its element.
    fn packed(&self) -> usize;
    fn put(&self, out: &mut Vec<u8>);
    fn take(r: &mut Reader<'_>) -> Result<Self, Malformed>;
    /// The packed value's bytes, read in place (empty for a set).
    fn take_slice<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Malformed>;
    /// The value's bytes (empty for a set).
    fn as_slice(&self) -> &[u8];
    /// Bytes a value of these bytes (`as_slice`) takes when packed.
    fn packed_of(v: &[u8]) -> usize;
}

impl Elem for Box<[u8]> {
    const VALUED: bool = true;
    fn packed(&self) -> usize {
        packed_len(self.len())
    }
    fn put(&self, out: &mut Vec<u8>) {
        put(out, self);
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
    fn packed_of(v: &[u8]) -> usize {
        packed_len(v.len())
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
    fn packed_of(_: &[u8]) -> usize {
        0
    }
}

/// A sorted set member's score (its f64 bits, LE), fixed width.
impl Elem for [u8; 8] {
    const VALUED: bool = true;
    const BLIND: bool = false;
    fn packed(&self) -> usize {
        8
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    fn take(r: &mut Reader<'_>) -> Result<Self, Malformed> {
        let mut a = [0u8; 8];
        a.copy_from_slice(r.take(8)?);
        if f64::from_le_bytes(a).is_nan() {
            return Err(Malformed);
        }
        Ok(a)
    }
    fn take_slice<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Malformed> {
        let b = r.take(8)?;
        if f64::from_le_bytes(b.try_into().map_err(|_| Malformed)?).is_nan() {
            return Err(Malformed);
        }
        Ok(b)
    }
    fn as_slice(&self) -> &[u8] {
        self
    }
    fn packed_of(_: &[u8]) -> usize {
        8
    }
}

/// A part's elements in RAM: as read from its record (the chunk body,
/// searched in place: one allocation, not two per element), or as a map
/// once the part changes.
#[derive(Clone, Debug)]
pub enum Data<V> {
    Packed(bytes::Bytes),
    Map(Box<PartMap<V>>),
    /// Not in RAM: the part's membership filter (`blind`; `Part::elems`
    /// never gives this).
    Cold(crate::types::chunked::Filter),
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

/// The value bytes of `elem` in chunk body `b` (None if absent).
pub(in crate::types::chunked) fn packed_get<'a, V: Elem>(
    b: &'a [u8],
    elem: &[u8],
) -> Option<&'a [u8]> {
    packed_iter::<V>(b)
        .find(|(k, _)| *k == elem)
        .map(|(_, v)| v)
}

impl<V: Elem> Data<V> {
    pub(in crate::types::chunked) fn get(&self, elem: &[u8]) -> Option<&[u8]> {
        match self {
            Data::Packed(b) => packed_get::<V>(b, elem),
            Data::Map(m) => m.get(elem).map(|v| v.as_slice()),
            Data::Cold(_) => None,
        }
    }

    pub(in crate::types::chunked) fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Data::Packed(b) => Box::new(packed_iter::<V>(b)),
            Data::Map(m) => Box::new(m.iter().map(|(k, v)| (&**k, v.as_slice()))),
            Data::Cold(_) => Box::new(std::iter::empty()),
        }
    }

    pub(in crate::types::chunked) fn get_index(&self, j: usize) -> Option<(&[u8], &[u8])> {
        match self {
            Data::Packed(b) => packed_iter::<V>(b).nth(j),
            Data::Map(m) => m.get_index(j).map(|(k, v)| (&**k, v.as_slice())),
            Data::Cold(_) => None,
        }
    }

    pub(in crate::types::chunked) fn len(&self) -> usize {
        match self {
            Data::Packed(b) => packed_iter::<V>(b).count(),
            Data::Map(m) => m.len(),
            Data::Cold(_) => 0,
        }
    }

    /// The elements as a map, to change (a packed body is decoded once).
    pub(in crate::types::chunked) fn map_mut(&mut self) -> &mut PartMap<V> {
        if let Data::Packed(b) = self {
            // The body was checked when it was installed.
            let m = decode_elems::<V>(b, |_| true).unwrap_or_default();
            *self = Data::Map(Box::new(m));
        }
        if let Data::Cold(_) = self {
            // (`Part::elems_mut` never gives a cold part's filter.)
            *self = Data::Map(Box::default());
        }
        match self {
            Data::Map(m) => m,
            Data::Packed(_) | Data::Cold(_) => unreachable!("decoded above"),
        }
    }
}

pub type PartMap<V> = IndexMap<Box<[u8]>, V, foldhash::fast::RandomState>;

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
pub(in crate::types::chunked) fn check_packed<V: Elem>(b: &[u8]) -> Result<(), Malformed> {
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

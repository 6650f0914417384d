//! One part of a chunked list (`LPart`) and its elements in RAM
//! (`Items`: the chunk body as read, or a deque once changed); measuring
//! list chunk bodies.

use super::FIRST_POSITION;
use crate::types::parts::packed::{Fields, KeyCodec, Packed, NAME_BITS};
use crate::types::{packed_len, Malformed, Reader};
use std::collections::VecDeque;

/// A part's elements in RAM: the chunk body as read (count, then each
/// element length-prefixed), or a deque once changed.
#[derive(Clone, Debug)]
pub(super) enum Items {
    Packed(bytes::Bytes),
    Deque(VecDeque<Box<[u8]>>),
}

pub(super) fn packed_iter(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut r = Reader {
        b: b.get(4..).unwrap_or(&[]),
    };
    std::iter::from_fn(move || {
        if r.b.is_empty() {
            return None;
        }
        r.bytes().ok()
    })
}

impl Items {
    pub(super) fn get(&self, j: usize) -> Option<&[u8]> {
        match self {
            Items::Packed(b) => packed_iter(b).nth(j),
            Items::Deque(d) => d.get(j).map(|e| &**e),
        }
    }
    pub(super) fn iter(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            Items::Packed(b) => Box::new(packed_iter(b)),
            Items::Deque(d) => Box::new(d.iter().map(|e| &**e)),
        }
    }
    pub(super) fn deque(&mut self) -> &mut VecDeque<Box<[u8]>> {
        if let Items::Packed(b) = self {
            let d = packed_iter(b).map(Box::from).collect();
            *self = Items::Deque(d);
        }
        match self {
            Items::Deque(d) => d,
            Items::Packed(_) => unreachable!("decoded above"),
        }
    }
}

/// How a list part packs its name, the position of its first element:
/// its distance from `FIRST_POSITION`, signed, in 38 bits (137 billion
/// pushes at either end; a part past them is wide: `parts::packed`).
#[derive(Clone, Copy, Debug)]
pub(super) struct ListKey;

const HALF: i64 = 1 << (NAME_BITS - 1);

impl KeyCodec for ListKey {
    fn pack(start: u64, _: u8) -> Option<u64> {
        let d = start.wrapping_sub(FIRST_POSITION) as i64;
        (-HALF..HALF)
            .contains(&d)
            .then_some(d as u64 & ((1 << NAME_BITS) - 1))
    }
    fn unpack(bits: u64) -> (u64, u8) {
        // Sign-extend the 38 bits.
        let d = ((bits << (64 - NAME_BITS)) as i64) >> (64 - NAME_BITS);
        (FIRST_POSITION.wrapping_add(d as u64), 0)
    }
}

/// One part of a chunked list: 32 bytes (`parts::packed`); its elements
/// in the box when in RAM.
pub(super) type LPart = Packed<Items, ListKey>;

impl crate::types::parts::packed::PartData for Items {}

impl Packed<Items, ListKey> {
    /// A new part in RAM, empty, changed (listed by the list).
    pub(super) fn new_dirty(start: u64) -> LPart {
        let f = Fields {
            key: start,
            ..Fields::default()
        };
        LPart::new(f, true, false, Some(Items::Deque(VecDeque::new())))
    }
    /// Position of the first element.
    pub(super) fn start(&self) -> u64 {
        self.name().0
    }
    pub(super) fn set_start(&mut self, start: u64) {
        self.update(|f| f.key = start);
    }
    /// Marks the part changed, with the list's next version (versions are
    /// unique within the list, so a writer never publishes its record for
    /// another part that came to have the same position).
    pub(super) fn changed(&mut self, vers: &mut u32) {
        let ver = crate::types::parts::packed::next_version(vers);
        self.set_dirty(true);
        self.set_ver(ver);
    }
}

/// Element count and packed bytes of a list chunk body (count, then each
/// element length-prefixed); Malformed if it does not parse exactly.
pub fn measure_list(b: &[u8]) -> Result<(u32, u32), Malformed> {
    let mut r = Reader { b };
    let n = r.u32()?;
    let mut body = 0usize;
    for _ in 0..n {
        body += packed_len(r.bytes()?.len());
    }
    if !r.b.is_empty() {
        return Err(Malformed);
    }
    Ok((n, body as u32))
}

/// Packed bytes of the elements `skip..skip + count` of a list chunk body.
pub fn measure_list_range(b: &[u8], skip: usize, count: usize) -> Result<u32, Malformed> {
    measure_list(b)?;
    Ok(packed_iter(b)
        .skip(skip)
        .take(count)
        .map(|e| packed_len(e.len()) as u32)
        .sum())
}

/// A list part's entry is the RAM every part on flash costs.
const _: () = assert!(std::mem::size_of::<LPart>() == 32);

/// A list part's start reads back, packed near `FIRST_POSITION` and wide
/// past 2^37 pushes from it.
#[test]
fn a_list_parts_start_reads_back_packed_or_wide() {
    let h = HALF as u64;
    for (start, packed) in [
        (FIRST_POSITION, true),
        (FIRST_POSITION - 1, true),
        (FIRST_POSITION + 12_345_678, true),
        (FIRST_POSITION - h, true),
        (FIRST_POSITION + h - 1, true),
        (FIRST_POSITION + h, false),
        (FIRST_POSITION - h - 1, false),
        (0, false),
        (u64::MAX, false),
    ] {
        let mut p = LPart::new_dirty(start);
        assert_eq!(p.start(), start);
        assert_eq!(ListKey::pack(start, 0).is_some(), packed, "{start}");
        p.set_size(3, 40);
        p.set_start(start.wrapping_add(1));
        assert_eq!(
            (p.start(), p.count(), p.body()),
            (start.wrapping_add(1), 3, 40)
        );
    }
}

//! One part of a chunked list (`LPart`) and its elements in RAM
//! (`Items`: the chunk body as read, or a deque once changed); measuring
//! list chunk bodies.

use crate::base::FlashLoc;
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

/// One part of a chunked list.
#[derive(Clone, Debug)]
pub(super) struct LPart {
    /// Position of the first element.
    pub(super) start: u64,
    pub(super) count: u32,
    pub(super) body: u32,
    pub(super) dirty: bool,
    pub(super) referenced: bool,
    pub(super) ver: u32,
    pub(super) loc: Option<FlashLoc>,
    pub(super) seq: u64,
    pub(super) items: Option<Box<Items>>,
}

impl LPart {
    pub(super) fn new_dirty(start: u64) -> LPart {
        LPart {
            start,
            count: 0,
            body: 0,
            dirty: true,
            referenced: true,
            ver: 0,
            loc: None,
            seq: 0,
            items: Some(Box::new(Items::Deque(VecDeque::new()))),
        }
    }
    /// Marks the part changed, with the list's next version (versions are
    /// unique within the list, so a writer never publishes its record for
    /// another part that came to have the same position).
    pub(super) fn changed(&mut self, vers: &mut u32) {
        *vers = vers.wrapping_add(1);
        self.dirty = true;
        self.ver = *vers;
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

/// A list part's directory entry is RAM every cold part costs
/// (docs/collections.md: goal 32 B); its elements are boxed, so a part on
/// flash pays 8 bytes for them (88 bytes per part before).
const _: () = assert!(std::mem::size_of::<LPart>() <= 56);

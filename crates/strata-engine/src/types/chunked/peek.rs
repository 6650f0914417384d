//! Reading elements of a part on flash from its image alone (a *peek*).
//! A part whose cold chain spilled (`parts::chains`) is read back whole
//! by reading its image and every spilled record; a read of a few
//! elements (HGET, HMGET, HEXISTS, HSTRLEN, SISMEMBER, SMISMEMBER:
//! `Need::Reads`) needs only the image when every step since it is a
//! blind add of another element: a blind add only adds an element that was
//! nowhere, so an element no step added is in the image or nowhere; and
//! while the part was in RAM, every element a change touched was named.
//! The chain's tags (16 bits of each such element's hash) tell which
//! elements the steps may have changed.
//!
//! Invariants:
//! 1. A part is read by a peek only while it is on flash at its chain's
//!    image, the chain spilled, every element a step since the image may
//!    change has its tag in the chain (blind adds, and the changes of a
//!    hash's or set's part in RAM: `tag_change`; a chain of another kind
//!    of part is `opaque`), and no element read has a tag of the chain
//!    (`peekable`), all checked under the shard locks the command then
//!    runs under.
//! 2. A peek is a copy of the image's body, taken by a command's load
//!    (`put_peek`) and read by its closure (`Chunked::get`) and by later
//!    reads that pass the check of 1 (the image never changes); at most
//!    `PEEKS_MAX` are kept, the oldest dropped first, and all of them when
//!    the demoter passes the collection.

use super::part::check_packed;
use super::{Chunked, Elem};
use crate::base::{FlashLoc, Malformed};
use crate::types::parts::chains::tag;
use crate::types::parts::elem_hash;

/// Most peeks a collection keeps (invariant 2).
const PEEKS_MAX: usize = 32;
/// Most tags a chain keeps (`tag_change`).
const TAGS_MAX: usize = 256;

/// A part's image, read for a command (module doc).
#[derive(Clone, Debug)]
pub(super) struct Peek {
    low: u64,
    depth: u8,
    loc: FlashLoc,
    body: bytes::Bytes,
}

impl<V: Elem> Chunked<V> {
    /// Whether elements `elems` of part `i` (on flash) are read from its
    /// image alone (invariant 1).
    pub fn peekable<'a>(&self, i: usize, mut elems: impl Iterator<Item = &'a [u8]>) -> bool {
        let p = &self.parts[i];
        if p.is_resident() || !p.own || p.loc.is_none() {
            return false;
        }
        let Some(ch) = self.head.chains.get((p.low, p.depth)) else {
            return false;
        };
        ch.base.is_none()
            && ch.spilled > 0
            && !ch.opaque
            && ch.image == p.loc
            && elems.all(|e| !ch.tags.contains(&tag(elem_hash(e))))
    }

    /// Whether part `i` has a peek of its record.
    pub fn peeked(&self, i: usize) -> bool {
        self.peek_of(i).is_some()
    }

    fn peek_of(&self, i: usize) -> Option<&Peek> {
        let p = &self.parts[i];
        self.peeks
            .iter()
            .find(|k| (k.low, k.depth) == (p.low, p.depth) && Some(k.loc) == p.loc)
    }

    /// Keeps `body`, part `i`'s record at `loc` as read, for the command
    /// that read it, if the part is still on flash at that record;
    /// returns whether it did.
    pub fn put_peek(&mut self, i: usize, loc: FlashLoc, body: &[u8]) -> Result<bool, Malformed> {
        let p = &self.parts[i];
        if p.is_resident() || p.loc != Some(loc) || !p.own {
            return Ok(false);
        }
        check_packed::<V>(body)?;
        if self.peeked(i) {
            return Ok(true);
        }
        let (low, depth) = (p.low, p.depth);
        if self.peeks.len() >= PEEKS_MAX {
            self.peeks.remove(0);
        }
        self.peeks.push(Peek {
            low,
            depth,
            loc,
            body: bytes::Bytes::copy_from_slice(body),
        });
        Ok(true)
    }

    /// The value bytes of `elem` in part `i`'s peek: None if absent or if
    /// the part has no peek.
    pub(super) fn peek_get(&self, i: usize, elem: &[u8]) -> Option<&[u8]> {
        let k = self.peek_of(i)?;
        super::part::packed_get::<V>(&k.body, elem)
    }

    /// Part `i`'s element hashed `h` changes (set, added or removed) while
    /// the part is in RAM: its chain, if it has one, names it among the
    /// elements its steps change, so a peek never answers for it (the
    /// journal's next record of the part is a diff that may hold it).
    /// Past `TAGS_MAX` the chain is taken as changing any element.
    pub(super) fn tag_change(&mut self, i: usize, h: u64) {
        let p = &self.parts[i];
        let t = tag(h);
        self.head.chains.update((p.low, p.depth), |ch| {
            if ch.opaque || ch.tags.contains(&t) {
                return;
            }
            if ch.tags.len() >= TAGS_MAX {
                ch.opaque = true;
                ch.tags = Vec::new();
            } else {
                ch.tags.push(t);
            }
        });
    }

    /// Drops every peek (the demoter passes: invariant 2).
    pub fn drop_peeks(&mut self) {
        if !self.peeks.is_empty() {
            self.peeks = Vec::new();
        }
    }

    /// RAM the peeks hold.
    pub fn peek_ram(&self) -> usize {
        self.peeks.iter().map(|k| k.body.len()).sum()
    }
}

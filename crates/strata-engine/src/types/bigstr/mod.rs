//! A chunked string (docs/collections.md, "As built (big strings)"): a
//! string longer than [`STR_CHUNKED_AT`] is kept in parts of [`STR_PART`]
//! bytes, part `i` holding bytes `[i * STR_PART, (i + 1) * STR_PART)`. Each
//! part is a flash record of its own (kind 9, depth [`STR_DEPTH`], `low` =
//! the part's number), so a bit of a cold 512 MB string costs one device
//! read and a SETBIT rewrites one part, never the whole string.
//!
//! A part nobody wrote since the string grew past it (SETBIT or SETRANGE
//! far beyond the end) is a *hole*: all zeros, with no bytes in RAM and no
//! record. The head record (kind 8) carries the number of parts (the span
//! `[0, n)`), then the length, the parts that are not holes and the
//! memcached flags (docs/format.md, "Chunked strings").
//!
//! Invariants:
//! 1. There are `ceil(len / STR_PART)` parts; part `i` covers bytes
//!    `[i * STR_PART, min((i + 1) * STR_PART, len))` (`covered(i)`).
//! 2. A part is a hole, in RAM (exactly its covered bytes), or on flash
//!    (clean, with a record of exactly its covered bytes). A string only
//!    grows: its last part is made resident and extended before the
//!    length moves, so a record never covers less than its part.
//! 3. The last part is never a hole (every growth writes its last byte).
//! 4. `resident`, `resident_parts`, `stored` (bytes of parts that are not
//!    holes) and `solid` (their count) are exact.
//! 5. `changes` lists every changed part's number (`Chunked` invariant 7).
//! 6. `head_ver` moves whenever the head's fields (length, flags) may
//!    change: a head is published clean only if none changed after its
//!    capture.
//!
//! Rooms: this file holds the string and its reads and writes; `dir` what
//! the engine's log, tiering and recovery see of it (`Dir`).

mod dir;
pub use dir::STR_META_LEN;
#[cfg(test)]
mod tests;

use crate::base::FlashLoc;
use crate::types::parts::{Changes, DirHead};

/// Bytes of one part (the last may be shorter).
pub const STR_PART: usize = 16 << 10;
/// A string longer than this is stored chunked: below it one record (one
/// device read for a cold GET) costs less than parts would.
pub const STR_CHUNKED_AT: usize = 256 << 10;
pub use crate::base::STR_DEPTH;

/// A part's bytes.
#[derive(Clone, Debug, PartialEq)]
enum Bytes {
    /// All zeros: no bytes anywhere (invariant 2).
    Hole,
    /// In RAM: exactly the part's covered bytes.
    Ram(Vec<u8>),
    /// On flash only.
    Cold,
}

#[derive(Clone, Debug, PartialEq)]
struct Part {
    bytes: Bytes,
    dirty: bool,
    referenced: bool,
    ver: u32,
    loc: Option<FlashLoc>,
    seq: u64,
}

impl Part {
    fn new(bytes: Bytes) -> Part {
        Part {
            bytes,
            dirty: false,
            referenced: true,
            ver: 0,
            loc: None,
            seq: 0,
        }
    }
}

/// A stretch of a string as a read sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Bytes(&'a [u8]),
    /// This many zero bytes (a hole).
    Zeros(usize),
}

/// A read or write reached a part that is not in RAM: the command's need
/// did not name it (a planning bug, reported as an error, never a panic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a string part the command needs is not loaded")]
pub struct NotLoaded;

/// A chunked string (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkedStr {
    head: DirHead,
    len: u64,
    parts: Vec<Part>,
    /// The last part version handed out (versions are unique within the
    /// string, as a list's).
    vers: u32,
    head_ver: u64,
    /// Where the demoter's hand stopped (a hint).
    hand: usize,
    resident: usize,
    resident_parts: usize,
    stored: usize,
    solid: usize,
    /// Memcached client flags, which the head carries.
    pub(crate) client_flags: u32,
    changes: Changes<u64>,
    /// The span and fields a recovered head named, until recovery
    /// resolves the parts.
    recovered_span: Option<(u64, u64)>,
}

/// Parts a string of `len` bytes has.
fn part_count_of(len: u64) -> usize {
    len.div_ceil(STR_PART as u64) as usize
}

impl ChunkedStr {
    /// The string `b` as incarnation `cid`, every part in RAM and changed
    /// (parts of zeros stay holes).
    pub fn from_bytes(cid: u64, b: &[u8]) -> ChunkedStr {
        let mut s = ChunkedStr::empty(DirHead::new(cid), b.len() as u64);
        for (i, c) in b.chunks(STR_PART).enumerate() {
            let last = (i + 1) * STR_PART >= b.len();
            if !last && c.iter().all(|&x| x == 0) {
                s.parts.push(Part::new(Bytes::Hole));
                continue;
            }
            s.parts.push(Part::new(Bytes::Ram(c.to_vec())));
            s.resident += c.len();
            s.resident_parts += 1;
            s.stored += c.len();
            s.solid += 1;
            s.mark(i);
        }
        s
    }

    /// Names a string built apart (`from_bytes`, nothing written yet) as
    /// incarnation `cid`.
    pub fn set_cid(&mut self, cid: u64) {
        debug_assert!(self.head.loc.is_none());
        self.head = DirHead::new(cid);
    }

    fn empty(head: DirHead, len: u64) -> ChunkedStr {
        ChunkedStr {
            head,
            len,
            parts: Vec::with_capacity(part_count_of(len)),
            vers: 0,
            head_ver: 0,
            hand: 0,
            resident: 0,
            resident_parts: 0,
            stored: 0,
            solid: 0,
            client_flags: 0,
            changes: Changes::of(Vec::new()),
            recovered_span: None,
        }
    }

    /// The string's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the parts that are not holes (RAM or flash).
    pub fn stored_len(&self) -> usize {
        self.stored
    }

    /// Bytes part `i` covers (invariant 1).
    fn covered(&self, i: usize) -> usize {
        let start = (i * STR_PART) as u64;
        (self.len.saturating_sub(start)).min(STR_PART as u64) as usize
    }

    /// The part holding byte `off`.
    pub fn part_of_byte(off: u64) -> usize {
        (off / STR_PART as u64) as usize
    }

    /// Part `i` is about to change: if it is as its record holds it, that
    /// body becomes the base of its chain, so the journal logs the change
    /// as a change, not as the part's image (`parts::chains`).
    fn keep_base(&mut self, i: usize) {
        let p = &self.parts[i];
        if let (Bytes::Ram(v), Some(loc), false) = (&p.bytes, p.loc, p.dirty) {
            let name = (i as u64, crate::base::STR_DEPTH);
            if !self.head.chains.has(name) {
                let base = bytes::Bytes::copy_from_slice(v);
                let chain = crate::types::parts::PartChain::read(loc, p.seq, base);
                self.head.chains.insert(name, chain);
            }
        }
    }

    /// Part `i` changed.
    fn mark(&mut self, i: usize) {
        let was = self.parts[i].dirty;
        self.vers = self.vers.wrapping_add(1);
        let p = &mut self.parts[i];
        p.dirty = true;
        p.referenced = true;
        p.ver = self.vers;
        self.head.dirty = true;
        self.head_ver += 1;
        if !was {
            let parts = &self.parts;
            self.changes.marked(i as u64, || {
                (0..parts.len())
                    .filter(|&j| parts[j].dirty)
                    .map(|j| j as u64)
                    .collect()
            });
        }
    }

    /// Whether every part holding a byte of `[a, b)` (clamped to the
    /// length) can be read: in RAM or a hole.
    pub fn readable(&self, a: u64, b: u64) -> bool {
        self.span_parts(a, b)
            .all(|i| !matches!(self.parts[i].bytes, Bytes::Cold))
    }

    /// The parts holding bytes of `[a, b)`, clamped to the length.
    fn span_parts(&self, a: u64, b: u64) -> std::ops::Range<usize> {
        let b = b.min(self.len);
        if a >= b {
            return 0..0;
        }
        Self::part_of_byte(a)..Self::part_of_byte(b - 1) + 1
    }

    /// Calls `f` on the pieces of `[a, b)` (clamped to the length), in
    /// order; every part must be readable.
    pub fn pieces(&self, a: u64, b: u64, mut f: impl FnMut(Piece<'_>)) -> Result<(), NotLoaded> {
        let b = b.min(self.len);
        for i in self.span_parts(a, b) {
            let start = (i * STR_PART) as u64;
            let from = (a.max(start) - start) as usize;
            let to = (b - start).min(STR_PART as u64) as usize;
            match &self.parts[i].bytes {
                Bytes::Hole => f(Piece::Zeros(to - from)),
                Bytes::Ram(v) => f(Piece::Bytes(&v[from..to])),
                Bytes::Cold => return Err(NotLoaded),
            }
        }
        Ok(())
    }

    /// Copies `[off, off + out.len())` into `out`; bytes past the end read
    /// as zeros.
    pub fn read(&self, off: u64, out: &mut [u8]) -> Result<(), NotLoaded> {
        out.fill(0);
        let mut at = 0;
        self.pieces(off, off.saturating_add(out.len() as u64), |p| match p {
            Piece::Bytes(b) => {
                out[at..at + b.len()].copy_from_slice(b);
                at += b.len();
            }
            Piece::Zeros(n) => at += n,
        })
    }

    /// The whole string (every part readable).
    pub fn to_vec(&self) -> Result<Vec<u8>, NotLoaded> {
        let mut v = Vec::with_capacity(self.len as usize);
        self.pieces(0, self.len, |p| match p {
            Piece::Bytes(b) => v.extend_from_slice(b),
            Piece::Zeros(n) => v.resize(v.len() + n, 0),
        })?;
        Ok(v)
    }

    /// Writes `data` at `off`, growing the string with zeros first if it
    /// ends before `off + data.len()`. The parts written and the last part
    /// must be readable (invariant 2); nothing changes otherwise.
    pub fn write(&mut self, off: u64, data: &[u8]) -> Result<(), NotLoaded> {
        if data.is_empty() {
            return Ok(());
        }
        let end = off + data.len() as u64;
        if !self.readable(off, end) {
            return Err(NotLoaded);
        }
        self.grow(end)?;
        let mut at = 0usize;
        for i in self.span_parts(off, end) {
            let start = (i * STR_PART) as u64;
            let from = (off.max(start) - start) as usize;
            let to = (end - start).min(STR_PART as u64) as usize;
            let n = to - from;
            let covered = self.covered(i);
            self.keep_base(i);
            let p = &mut self.parts[i];
            let v = match &mut p.bytes {
                Bytes::Ram(v) => v,
                Bytes::Hole => {
                    p.bytes = Bytes::Ram(vec![0; covered]);
                    self.resident += covered;
                    self.resident_parts += 1;
                    self.stored += covered;
                    self.solid += 1;
                    match &mut p.bytes {
                        Bytes::Ram(v) => v,
                        _ => unreachable!(),
                    }
                }
                Bytes::Cold => return Err(NotLoaded),
            };
            v[from..to].copy_from_slice(&data[at..at + n]);
            at += n;
            self.mark(i);
        }
        Ok(())
    }

    /// Grows the string to `new_len` bytes (zeros): the last part is
    /// extended, new parts are holes (the caller writes the last byte:
    /// invariant 3).
    fn grow(&mut self, new_len: u64) -> Result<(), NotLoaded> {
        if new_len <= self.len {
            return Ok(());
        }
        if let Some(last) = self.parts.len().checked_sub(1) {
            let old = self.covered(last);
            if old < STR_PART {
                let want = ((new_len - (last * STR_PART) as u64).min(STR_PART as u64)) as usize;
                self.keep_base(last);
                match &mut self.parts[last].bytes {
                    Bytes::Ram(v) => {
                        v.resize(want, 0);
                        self.resident += want - old;
                        self.stored += want - old;
                        self.mark(last);
                    }
                    // Not reachable (invariant 3); a hole grows as it is.
                    Bytes::Hole => {}
                    Bytes::Cold => return Err(NotLoaded),
                }
            }
        }
        self.len = new_len;
        while self.parts.len() < part_count_of(new_len) {
            self.parts.push(Part::new(Bytes::Hole));
        }
        self.head.dirty = true;
        self.head_ver += 1;
        Ok(())
    }

    /// APPEND: writes `data` at the end.
    pub fn append(&mut self, data: &[u8]) -> Result<(), NotLoaded> {
        self.write(self.len, data)
    }

    /// The same bytes as one flat value, every part readable (a copy for
    /// another key, a GET, a whole read-modify-write).
    pub fn detached(&self) -> Result<bytes::Bytes, NotLoaded> {
        self.to_vec().map(bytes::Bytes::from)
    }

    /// A write is about to change the string (its head fields may change).
    pub fn will_change(&mut self) {
        self.head.dirty = true;
        self.head_ver += 1;
    }

    /// Sets the memcached flags the head carries.
    pub fn set_client_flags(&mut self, flags: u32) {
        if flags != self.client_flags {
            self.client_flags = flags;
            self.will_change();
        }
    }
}

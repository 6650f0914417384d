//! The data-type layer: what a key's value is (a string or one of Redis's
//! collections) and, for collections, their RAM structures and their
//! *packed* encoding (one flash record holding the whole collection).
//!
//! This module owns the shape of values; it knows nothing of the index,
//! the log or locking. Engine code holds a [`Collection`] in a hot slot and
//! serialises it with [`Collection::encode`] when the journal, demotion or
//! a checkpoint writes it; a cold read decodes it with
//! [`Collection::decode`]. The command layer works on the structures
//! through [`crate::KeysView`].
//!
//! Invariants:
//! 1. A stored collection is never empty: the engine deletes the key when
//!    the last element goes (as Redis does).
//! 2. [`Collection::encoded_len`] is exactly the length [`Collection::encode`]
//!    writes, kept up to date by every mutation (it is the value length
//!    the index, INFO and the record carry).
//! 3. `decode(encode(c)) == c`, and `decode` of any bytes never panics: a
//!    record that passed its CRC but does not decode is an error reply.
//!
//! Rooms: the types' own modules; `parts/` the part machinery every
//! chunked collection shares (`Dir`); `chunked/` the big hashes, sets, lists
//! and sorted sets in parts, `stream/` streams, `bigstr/` big strings;
//! `directory` what the engine's chunked machinery sees of a `Collection`.
//! A chunked string is a `Collection::Str` (only ever chunked: a shorter
//! string is a `Value::Str`).
//!
//! Packed layout (docs/format.md, record kind 6): a bits byte
//! ([`BIG_ENCODING`]), the element count (u32 LE), then the elements, each
//! a u32 LE length and the bytes: hash = field, value; set and list =
//! member; sorted set = score (f64 LE bits) then member.

pub mod bigstr;
pub mod changes;
pub mod chunked;
mod directory;
pub mod hash;
pub mod list;
pub mod parts;
pub mod set;
pub mod stream;
pub mod zset;

pub use crate::base::{Malformed, ValueType};
pub use bigstr::ChunkedStr;
pub use hash::Hash;
pub use list::List;
pub use set::Set;
pub use stream::Stream;
pub use zset::{ScoreKey, ZSet};

/// Bit of the packed bits byte: the collection has outgrown Redis's small
/// encoding (listpack / intset) and, as in Redis, never goes back.
pub const BIG_ENCODING: u8 = 1;

/// A collection entry's `client_flags` word (unused by collections
/// otherwise): element count, saturating at 2^31 - 1, and the big-encoding
/// bit on top; so LEN commands and OBJECT ENCODING answer from RAM.
pub fn aux(count: usize, big: bool) -> u32 {
    (count.min(AUX_COUNT_MAX as usize) as u32) | if big { AUX_BIG } else { 0 }
}

/// The element count in an `aux` word.
pub fn aux_count(aux: u32) -> u32 {
    aux & AUX_COUNT_MAX
}

/// The big-encoding bit of an `aux` word.
pub const AUX_BIG: u32 = 1 << 31;
const AUX_COUNT_MAX: u32 = AUX_BIG - 1;

/// The `aux` word of a packed collection, from its header (recovery).
pub fn aux_of_packed(b: &[u8]) -> u32 {
    match (b.first(), b.get(1..5)) {
        (Some(&bits), Some(n)) => {
            let n = u32::from_le_bytes([n[0], n[1], n[2], n[3]]);
            aux(n as usize, bits & BIG_ENCODING != 0)
        }
        _ => 0,
    }
}

/// Bytes of the packed header: bits byte and count.
pub const PACKED_HEADER_LEN: usize = 5;

/// The thresholds that decide which encoding Redis would report
/// (`hash-max-listpack-entries` ...). Copied out of the tunables for each
/// write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodingLimits {
    pub hash_entries: usize,
    pub hash_value: usize,
    pub set_intset_entries: usize,
    pub zset_entries: usize,
    pub zset_value: usize,
    /// `stream-node-max-bytes` and `stream-node-max-entries`.
    pub stream: stream::NodeLimits,
}

impl Default for EncodingLimits {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        EncodingLimits {
            hash_entries: 128,
            hash_value: 64,
            set_intset_entries: 512,
            zset_entries: 128,
            zset_value: 64,
            stream: stream::NodeLimits::default(),
        }
    }
}

/// A collection value in RAM.
#[derive(Clone, Debug, PartialEq)]
pub enum Collection {
    Hash(Hash),
    List(List),
    Set(Set),
    ZSet(ZSet),
    Stream(Box<Stream>),
    /// A string past `bigstr::STR_CHUNKED_AT`: only ever chunked (a
    /// shorter string is a `Value::Str`).
    Str(Box<ChunkedStr>),
}

impl Collection {
    /// An empty collection of `t` (None for strings).
    pub fn new(t: ValueType) -> Option<Collection> {
        Some(match t {
            ValueType::String => return None,
            ValueType::Hash => Collection::Hash(Hash::default()),
            ValueType::List => Collection::List(List::default()),
            ValueType::Set => Collection::Set(Set::default()),
            ValueType::ZSet => Collection::ZSet(ZSet::default()),
            ValueType::Stream => Collection::Stream(Box::default()),
        })
    }

    pub fn vtype(&self) -> ValueType {
        match self {
            Collection::Hash(_) => ValueType::Hash,
            Collection::List(_) => ValueType::List,
            Collection::Set(_) => ValueType::Set,
            Collection::ZSet(_) => ValueType::ZSet,
            Collection::Stream(_) => ValueType::Stream,
            Collection::Str(_) => ValueType::String,
        }
    }

    /// Number of elements (fields, members; a string's bytes).
    pub fn len(&self) -> usize {
        match self {
            Collection::Hash(h) => h.len(),
            Collection::List(l) => l.len(),
            Collection::Set(s) => s.len(),
            Collection::ZSet(z) => z.len(),
            Collection::Stream(s) => usize::try_from(s.len()).unwrap_or(usize::MAX),
            Collection::Str(s) => usize::try_from(s.len()).unwrap_or(usize::MAX),
        }
    }

    /// Whether the collection holds nothing that keeps its key: no
    /// element, and not a stream (a stream stays a key when emptied).
    pub fn is_empty(&self) -> bool {
        !matches!(self, Collection::Stream(_)) && self.len() == 0
    }

    /// Exact length of the packed encoding (invariant 2); of a chunked
    /// collection, the bytes its parts hold (a chunked sorted set holds
    /// each member twice: in a member part and in an order part); of a
    /// chunked string, its length (STRLEN).
    pub fn encoded_len(&self) -> usize {
        if let Collection::Str(s) = self {
            return usize::try_from(s.len()).unwrap_or(usize::MAX);
        }
        PACKED_HEADER_LEN
            + match self {
                Collection::Hash(h) => h.body_len(),
                Collection::List(l) => l.body_len(),
                Collection::Set(s) => s.body_len(),
                Collection::ZSet(z) => z.body_len(),
                Collection::Stream(s) => s.body_len(),
                Collection::Str(_) => 0,
            }
    }

    /// The bytes RAM and flash hold of the value: `encoded_len`, but a
    /// chunked string's holes hold none.
    pub fn stored_len(&self) -> usize {
        match self {
            Collection::Str(s) => s.stored_len(),
            c => c.encoded_len(),
        }
    }

    /// Whether Redis would report the big encoding (one-way).
    pub fn encoding_is_big(&self) -> bool {
        match self {
            Collection::Hash(h) => h.big,
            Collection::List(_) => false,
            Collection::Set(s) => s.big,
            Collection::ZSet(z) => z.big,
            Collection::Stream(_) | Collection::Str(_) => false,
        }
    }

    /// The bits byte of the packed encoding (a change record carries it
    /// too: `changes`).
    pub fn encoding_bits(&self) -> u8 {
        if self.encoding_is_big() {
            BIG_ENCODING
        } else {
            0
        }
    }

    /// Appends the packed encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.push(self.encoding_bits());
        out.extend_from_slice(&(self.len().min(u32::MAX as usize) as u32).to_le_bytes());
        match self {
            Collection::Hash(h) => {
                for (f, v) in h.iter() {
                    put(out, f);
                    put(out, v);
                }
            }
            Collection::List(l) => {
                for e in l.iter() {
                    put(out, e);
                }
            }
            Collection::Set(s) => {
                for m in s.iter() {
                    put(out, m);
                }
            }
            Collection::ZSet(z) => {
                for (m, score) in z.iter() {
                    out.extend_from_slice(&score.to_bits().to_le_bytes());
                    put(out, m);
                }
            }
            Collection::Stream(s) => s.encode(out),
            // Never packed: a chunked string's records are its parts.
            Collection::Str(_) => {}
        }
    }

    /// The packed encoding as one exact allocation.
    pub fn to_bytes(&self) -> bytes::Bytes {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode(&mut v);
        bytes::Bytes::from(v)
    }

    /// Decodes a packed collection of type `t` (invariant 3).
    pub fn decode(t: ValueType, b: &[u8]) -> Result<Collection, Malformed> {
        let mut r = Reader { b };
        let bits = r.u8()?;
        let n = r.u32()? as usize;
        let big = bits & BIG_ENCODING != 0;
        // Every element takes at least 4 bytes: a count beyond that is a lie.
        if n > b.len() / 4 {
            return Err(Malformed);
        }
        let c = match t {
            ValueType::String => return Err(Malformed),
            ValueType::Hash => {
                let mut h = Hash::with_capacity(n);
                for _ in 0..n {
                    let f = r.bytes()?;
                    let v = r.bytes()?;
                    if !h.insert_raw(f, v) {
                        return Err(Malformed);
                    }
                }
                h.big = big;
                Collection::Hash(h)
            }
            ValueType::List => {
                let mut l = List::default();
                for _ in 0..n {
                    l.push_back(r.bytes()?.into());
                }
                Collection::List(l)
            }
            ValueType::Set => {
                let mut s = Set::with_capacity(n);
                for _ in 0..n {
                    if !s.insert_raw(r.bytes()?) {
                        return Err(Malformed);
                    }
                }
                s.big = big;
                Collection::Set(s)
            }
            ValueType::ZSet => {
                let mut z = ZSet::default();
                for _ in 0..n {
                    let score = f64::from_bits(r.u64()?);
                    let m = r.bytes()?;
                    if score.is_nan() || !z.insert_raw(m, score) {
                        return Err(Malformed);
                    }
                }
                z.big = big;
                Collection::ZSet(z)
            }
            ValueType::Stream => {
                let s = Stream::decode(&mut r)?;
                if s.len().min(u64::from(u32::MAX)) != n as u64 {
                    return Err(Malformed);
                }
                Collection::Stream(Box::new(s))
            }
        };
        if !r.b.is_empty() || c.is_empty() {
            return Err(Malformed);
        }
        Ok(c)
    }

    /// The encoding OBJECT ENCODING reports (Redis 7.0's names).
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Collection::Hash(h) if h.big => "hashtable",
            Collection::Hash(_) => "listpack",
            Collection::List(_) => "quicklist",
            Collection::Set(s) if s.big => "hashtable",
            Collection::Set(_) => "intset",
            Collection::ZSet(z) if z.big => "skiplist",
            Collection::ZSet(_) => "listpack",
            Collection::Stream(_) => "stream",
            Collection::Str(_) => "raw",
        }
    }

    /// Applies Redis's one-way conversion to the big encoding after a write.
    pub fn update_encoding(&mut self, lim: &EncodingLimits) {
        match self {
            Collection::Hash(h) => h.update_encoding(lim),
            Collection::Set(s) => s.update_encoding(lim),
            Collection::ZSet(z) => z.update_encoding(lim),
            Collection::List(_) | Collection::Stream(_) | Collection::Str(_) => {}
        }
    }
}

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Bytes one element (a length-prefixed byte string) takes when packed.
pub const fn packed_len(n: usize) -> usize {
    4 + n
}

/// Reads a packed encoding's fields (chunk bodies use it too).
pub struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.b.len() < n {
            return Err(Malformed);
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// Whether `b` is what Redis's intset would hold: a canonical decimal i64.
pub fn is_int_member(b: &[u8]) -> bool {
    if b.is_empty() || b.len() > 20 {
        return false;
    }
    let s = match std::str::from_utf8(b) {
        Ok(s) => s,
        Err(_) => return false,
    };
    match s.parse::<i64>() {
        Ok(v) => v.to_string() == s,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests;

//! The values of chunked collections' records: kind 8 (head) and kind 9
//! (chunk), docs/format.md "Chunked collections".

use super::{le_u32, le_u64};
use crate::base::ValueType;
use std::borrow::Cow;

/// Bytes of a kind-8 value of a hash, set or sorted set.
pub const HEAD_VALUE_LEN: usize = 10;
/// Bytes of a kind-8 value of a list: the span `[start, end)` follows.
pub const LIST_HEAD_VALUE_LEN: usize = HEAD_VALUE_LEN + 16;
/// Bytes before the chunk body in a kind-9 value.
pub const CHUNK_PREFIX_LEN: usize = 18;

/// The bit of a kind-9 value's type byte that marks it `headed`.
const HEADED: u8 = 0x80;
/// The bit of a kind-9 value's type byte that marks its body written as
/// runs of zeros and of bytes (format 21: `sparse`).
const SPARSE: u8 = 0x40;
/// The longest body a sparse chunk may stand for (a corrupt length must
/// not make a huge allocation): far past any part.
const SPARSE_MAX: usize = 1 << 24;

/// What a kind-9 record names before its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkName {
    pub vtype: ValueType,
    /// The record counts only under a head of its collection with a
    /// sequence number at least its own (format version 9: the head is
    /// written after the parts of every change, so a change torn before its
    /// head is not restored half). Records of older versions lack the mark
    /// and count alone.
    pub headed: bool,
    pub cid: u64,
    pub depth: u8,
    pub low: u64,
}

/// The value prefix of a kind-9 record.
pub fn chunk_prefix(n: &ChunkName) -> [u8; CHUNK_PREFIX_LEN] {
    let mut b = [0u8; CHUNK_PREFIX_LEN];
    b[0] = n.vtype as u8 | if n.headed { HEADED } else { 0 };
    b[1..9].copy_from_slice(&n.cid.to_le_bytes());
    b[9] = n.depth;
    b[10..18].copy_from_slice(&n.low.to_le_bytes());
    b
}

/// A kind-9 value's name and body; None if malformed (a depth over 64, a
/// range start not aligned to its depth, a list chunk with a depth). A
/// list chunk's `low` is its first position; a sorted set's order chunk
/// (depth `ORDER_DEPTH`) names its part's id, a stream's or a string's
/// chunk (`STREAM_DEPTH`, `STR_DEPTH`) its part's number, a stream's
/// pending-list chunk (`PEL_DEPTH`) its group's ordinal and part number.
pub fn decode_chunk(value: &[u8]) -> Option<(ChunkName, Cow<'_, [u8]>)> {
    let (n, body) = decode_chunk_prefix(value)?;
    if value[0] & SPARSE != 0 {
        return Some((n, Cow::Owned(unsparse(body)?)));
    }
    Some((n, Cow::Borrowed(body)))
}

/// As `decode_chunk`, the bytes after the prefix as they are (a part
/// change record's, kind 13, which shares the prefix and is never sparse).
pub fn decode_chunk_prefix(value: &[u8]) -> Option<(ChunkName, &[u8])> {
    if value.len() < CHUNK_PREFIX_LEN {
        return None;
    }
    let vtype = ValueType::from_u8(value[0] & !(HEADED | SPARSE))?;
    let depth = value[9];
    let low = le_u64(&value[10..18]);
    let ok = match vtype {
        ValueType::Hash | ValueType::Set => {
            depth == 0
                || (depth <= 64 && low & u64::MAX.checked_shr(u32::from(depth)).unwrap_or(0) == 0)
        }
        ValueType::List => depth == 0,
        // Member parts as a hash's; order parts name an id.
        ValueType::ZSet => {
            depth == crate::base::ORDER_DEPTH
                || depth == 0
                || (depth <= 64 && low & u64::MAX.checked_shr(u32::from(depth)).unwrap_or(0) == 0)
        }
        ValueType::Stream => depth == crate::base::STREAM_DEPTH || depth == crate::base::PEL_DEPTH,
        ValueType::String => depth == crate::base::STR_DEPTH,
    };
    if !ok {
        return None;
    }
    let n = ChunkName {
        vtype,
        headed: value[0] & HEADED != 0,
        cid: le_u64(&value[1..9]),
        depth,
        low,
    };
    Some((n, &value[CHUNK_PREFIX_LEN..]))
}

/// The value of a kind-9 record of `name` holding `body`: a string's part
/// mostly of zeros (a bitmap's) is written sparse when that saves a
/// quarter or more (`sparse`), any other body as it is.
pub fn chunk_value(name: &ChunkName, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(CHUNK_PREFIX_LEN + body.len());
    v.extend_from_slice(&chunk_prefix(name));
    if name.vtype == ValueType::String {
        if let Some(runs) = sparse(body).filter(|r| r.len() * 4 <= body.len() * 3) {
            v[0] |= SPARSE;
            v.extend_from_slice(&runs);
            return v;
        }
    }
    v.extend_from_slice(body);
    v
}

/// A body as runs (format 21): its length (u32 LE), then pairs of a count
/// of zero bytes (u32 LE) and a run of bytes (u32 LE length and the
/// bytes), in order; None past `SPARSE_MAX`.
fn sparse(body: &[u8]) -> Option<Vec<u8>> {
    if body.len() > SPARSE_MAX {
        return None;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    let mut at = 0;
    while at < body.len() {
        let zeros = body[at..].iter().take_while(|&&b| b == 0).count();
        at += zeros;
        // Bytes up to the next run of 16 zeros (a shorter one costs less
        // written as bytes than as a new pair).
        let mut end = at;
        while end < body.len() {
            let run = body[end..].iter().take(16).take_while(|&&b| b == 0).count();
            if run == 16 || end + run == body.len() {
                break;
            }
            end += run.max(1);
        }
        out.extend_from_slice(&(zeros as u32).to_le_bytes());
        out.extend_from_slice(&((end - at) as u32).to_le_bytes());
        out.extend_from_slice(&body[at..end]);
        at = end;
    }
    Some(out)
}

/// The body `sparse` wrote; None if malformed (runs past the length,
/// short of it, or torn).
fn unsparse(runs: &[u8]) -> Option<Vec<u8>> {
    let len = le_u32(runs.get(..4)?) as usize;
    if len > SPARSE_MAX {
        return None;
    }
    let mut out = Vec::with_capacity(len);
    let mut r = &runs[4..];
    while !r.is_empty() {
        let zeros = le_u32(r.get(..4)?) as usize;
        let n = le_u32(r.get(4..8)?) as usize;
        let bytes = r.get(8..8usize.checked_add(n)?)?;
        if out.len() + zeros + n > len {
            return None;
        }
        out.resize(out.len() + zeros, 0);
        out.extend_from_slice(bytes);
        r = &r[8 + n..];
    }
    (out.len() == len).then_some(out)
}

/// What a kind-8 record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head<'a> {
    pub vtype: ValueType,
    pub bits: u8,
    pub cid: u64,
    /// A list's positions `[start, end)`; a stream's part numbers.
    pub span: Option<(u64, u64)>,
    /// A stream's counters and groups, a string's length, parts and flags
    /// (empty for other types).
    pub meta: &'a [u8],
}

/// The value of a kind-8 record (`span` for a list, None otherwise).
pub fn head_value(h: &Head<'_>) -> Vec<u8> {
    let mut b = Vec::with_capacity(LIST_HEAD_VALUE_LEN + h.meta.len());
    b.push(h.vtype as u8);
    b.push(h.bits);
    b.extend_from_slice(&h.cid.to_le_bytes());
    if let Some((start, end)) = h.span {
        b.extend_from_slice(&start.to_le_bytes());
        b.extend_from_slice(&end.to_le_bytes());
    }
    b.extend_from_slice(h.meta);
    b
}

/// A kind-8 value (None if malformed: a list, stream or string without
/// its span, a hash, set or sorted set with one).
pub fn decode_head(value: &[u8]) -> Option<Head<'_>> {
    let vtype = ValueType::from_u8(*value.first()?)?;
    let want = match vtype {
        ValueType::Hash | ValueType::Set | ValueType::ZSet => HEAD_VALUE_LEN,
        ValueType::List | ValueType::Stream | ValueType::String => LIST_HEAD_VALUE_LEN,
    };
    // A stream's head has its fields after the span, a string's exactly
    // `STR_META_LEN` of them.
    let fits = match vtype {
        ValueType::Stream => value.len() > want,
        ValueType::String => value.len() == want + crate::types::bigstr::STR_META_LEN,
        _ => value.len() == want,
    };
    if !fits {
        return None;
    }
    let span =
        (want == LIST_HEAD_VALUE_LEN).then(|| (le_u64(&value[10..18]), le_u64(&value[18..26])));
    if span.is_some_and(|(s, e)| s > e) {
        return None;
    }
    Some(Head {
        vtype,
        bits: value[1],
        cid: le_u64(&value[2..10]),
        span,
        meta: &value[want..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn name(vtype: ValueType) -> ChunkName {
        ChunkName {
            vtype,
            headed: true,
            cid: 7,
            depth: crate::base::STR_DEPTH,
            low: 3,
        }
    }

    #[test]
    fn a_string_part_of_zeros_is_written_as_runs_and_reads_back_whole() {
        let mut r = rand::rngs::StdRng::seed_from_u64(21);
        for round in 0..500 {
            let len = r.gen_range(0..20_000);
            let mut body = vec![0u8; len];
            // From a few bits set (a sparse bitmap) to random bytes.
            let set = if round % 5 == 0 {
                len
            } else {
                r.gen_range(0..40)
            };
            for _ in 0..set {
                if len > 0 {
                    let i = r.gen_range(0..len);
                    body[i] = r.gen();
                }
            }
            let v = chunk_value(&name(ValueType::String), &body);
            let (n, back) = decode_chunk(&v).unwrap();
            assert_eq!(n, name(ValueType::String));
            assert_eq!(&back[..], &body[..], "round {round}");
            assert!(v.len() <= CHUNK_PREFIX_LEN + body.len());
            if set < 40 && len > 2_000 {
                assert!(
                    v.len() < CHUNK_PREFIX_LEN + 16 * set + 64,
                    "{} bytes",
                    v.len()
                );
            }
        }
        // Another type's body is written as it is.
        let zeros = vec![0u8; 4096];
        let v = chunk_value(&name(ValueType::Hash), &zeros);
        assert_eq!(v.len(), CHUNK_PREFIX_LEN + zeros.len());
    }

    #[test]
    fn runs_that_do_not_add_up_are_malformed() {
        let v = chunk_value(&name(ValueType::String), &vec![0u8; 5000]);
        assert!(v[0] & SPARSE != 0);
        let mut short = v.clone();
        short[CHUNK_PREFIX_LEN] = 0x89; // a length of 5001
        assert!(decode_chunk(&short).is_none());
        let mut past = v.clone();
        past[CHUNK_PREFIX_LEN + 4] = 0x89; // 5001 zeros for a length of 5000
        assert!(decode_chunk(&past).is_none());
        let torn = &v[..v.len() - 1];
        assert!(decode_chunk(torn).is_none());
        let mut huge = v;
        huge[CHUNK_PREFIX_LEN + 3] = 0x7f;
        assert!(decode_chunk(&huge).is_none());
    }
}

//! The values of chunked collections' records: kind 8 (head) and kind 9
//! (chunk), docs/format.md "Chunked collections".

use super::le_u64;
use crate::base::ValueType;

/// Bytes of a kind-8 value of a hash, set or sorted set.
pub const HEAD_VALUE_LEN: usize = 10;
/// Bytes of a kind-8 value of a list: the span `[start, end)` follows.
pub const LIST_HEAD_VALUE_LEN: usize = HEAD_VALUE_LEN + 16;
/// Bytes before the chunk body in a kind-9 value.
pub const CHUNK_PREFIX_LEN: usize = 18;

/// The bit of a kind-9 value's type byte that marks it `headed`.
const HEADED: u8 = 0x80;

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
pub fn decode_chunk(value: &[u8]) -> Option<(ChunkName, &[u8])> {
    if value.len() < CHUNK_PREFIX_LEN {
        return None;
    }
    let vtype = ValueType::from_u8(value[0] & !HEADED)?;
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

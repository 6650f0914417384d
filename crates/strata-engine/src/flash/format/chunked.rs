//! The values of chunked collections' records: kind 8 (head) and kind 9
//! (chunk), docs/format.md "Chunked collections".

use super::le_u64;
use crate::types::ValueType;

/// Bytes of a kind-8 value.
pub const HEAD_VALUE_LEN: usize = 10;
/// Bytes before the chunk body in a kind-9 value.
pub const CHUNK_PREFIX_LEN: usize = 18;

/// What a kind-9 record names before its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkName {
    pub vtype: ValueType,
    pub cid: u64,
    pub depth: u8,
    pub low: u64,
}

/// The value prefix of a kind-9 record.
pub fn chunk_prefix(n: &ChunkName) -> [u8; CHUNK_PREFIX_LEN] {
    let mut b = [0u8; CHUNK_PREFIX_LEN];
    b[0] = n.vtype as u8;
    b[1..9].copy_from_slice(&n.cid.to_le_bytes());
    b[9] = n.depth;
    b[10..18].copy_from_slice(&n.low.to_le_bytes());
    b
}

/// A kind-9 value's name and body; None if malformed (a depth over 64, a
/// range start not aligned to its depth, or not a hash or set).
pub fn decode_chunk(value: &[u8]) -> Option<(ChunkName, &[u8])> {
    if value.len() < CHUNK_PREFIX_LEN {
        return None;
    }
    let vtype = ValueType::from_u8(value[0])?;
    let depth = value[9];
    let low = le_u64(&value[10..18]);
    let aligned = depth == 0 || (depth <= 64 && low & (u64::MAX >> depth) == 0);
    if !matches!(vtype, ValueType::Hash | ValueType::Set) || depth > 64 || !aligned {
        return None;
    }
    let n = ChunkName {
        vtype,
        cid: le_u64(&value[1..9]),
        depth,
        low,
    };
    Some((n, &value[CHUNK_PREFIX_LEN..]))
}

/// The value of a kind-8 record.
pub fn head_value(vtype: ValueType, bits: u8, cid: u64) -> [u8; HEAD_VALUE_LEN] {
    let mut b = [0u8; HEAD_VALUE_LEN];
    b[0] = vtype as u8;
    b[1] = bits;
    b[2..10].copy_from_slice(&cid.to_le_bytes());
    b
}

/// A kind-8 value's type, bits and collection id.
pub fn decode_head(value: &[u8]) -> Option<(ValueType, u8, u64)> {
    if value.len() != HEAD_VALUE_LEN {
        return None;
    }
    let t = ValueType::from_u8(value[0])?;
    matches!(t, ValueType::Hash | ValueType::Set).then(|| (t, value[1], le_u64(&value[2..10])))
}

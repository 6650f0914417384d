//! Candidates: the chunk records that may hold part of a chunked
//! collection's directory (from the log tail or the checkpoint), and
//! measuring a chunk body's elements (recovery's `chunks` and `order`).

use crate::base::FlashLoc;
use crate::base::ValueType;
use crate::base::ORDER_DEPTH;
use crate::base::STR_DEPTH;
use crate::base::{PEL_DEPTH, STREAM_DEPTH};
use crate::flash::format;
use crate::types::chunked::{decode_order, measure_elems, measure_list, measure_order, Score};
use crate::types::parts::{elem_hash, range_high};
use crate::types::stream::{measure_pel_part, measure_stream_part};

/// The bounds of a sorted set's order record: lower (inclusive, empty:
/// none) and upper (exclusive, None: none); a stream part's bound (first
/// id and node count) and None.
pub(crate) type Bounds = std::sync::Arc<(Box<[u8]>, Option<Box<[u8]>>)>;

/// A record that may hold part of a directory.
#[derive(Clone, Debug)]
pub(crate) struct Cand {
    pub cid: u64,
    pub depth: u8,
    pub low: u64,
    pub seq: u64,
    pub loc: FlashLoc,
    /// Elements and packed bytes (`UNKNOWN_COUNT`: measure by reading).
    pub count: u32,
    pub body: u32,
    /// An order record's bounds (sorted sets).
    pub bounds: Option<Bounds>,
    /// The record counts only under a head at least as new (format 9).
    pub headed: bool,
}

impl Cand {
    /// The candidate a kind-9 record's value describes (None if malformed).
    pub(crate) fn of_record(seq: u64, loc: FlashLoc, value: &[u8]) -> Option<Cand> {
        let (name, body) = format::decode_chunk(value)?;
        let (count, bytes, bounds) = if name.depth == STREAM_DEPTH {
            let (bound, n, b) = measure_stream_part(&body).ok()?;
            (
                n,
                b,
                Some(std::sync::Arc::new((Box::from(&bound[..]), None))),
            )
        } else if name.depth == PEL_DEPTH {
            let (n, b) = measure_pel_part(&body).ok()?;
            (n, b, None)
        } else if name.depth == STR_DEPTH {
            (1, u32::try_from(body.len()).ok()?, None)
        } else if name.depth == ORDER_DEPTH {
            let r = decode_order(&body).ok()?;
            let (n, b) = measure_order(&body, r.lo, r.hi).ok()?;
            let bounds = std::sync::Arc::new((Box::from(r.lo), r.hi.map(Box::from)));
            (n, b, Some(bounds))
        } else {
            let (n, b) = measure(name.vtype, name.low, name.depth, &body)?;
            (n, b, None)
        };
        Some(Cand {
            cid: name.cid,
            depth: name.depth,
            low: name.low,
            seq,
            loc,
            count,
            body: bytes,
            bounds,
            headed: name.headed,
        })
    }
}

/// Count and packed bytes of the elements of `body` in the range (all of
/// a list chunk's).
pub(super) fn measure(t: ValueType, low: u64, depth: u8, body: &[u8]) -> Option<(u32, u32)> {
    if t == ValueType::List {
        return measure_list(body).ok();
    }
    let high = range_high(low, depth);
    let keep = |k: &[u8]| {
        let h = elem_hash(k);
        h >= low && h <= high
    };
    match t {
        ValueType::Hash => measure_elems::<Box<[u8]>>(body, keep).ok(),
        ValueType::Set => measure_elems::<()>(body, keep).ok(),
        ValueType::ZSet => measure_elems::<Score>(body, keep).ok(),
        _ => None,
    }
}

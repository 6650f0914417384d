//! Zkeys (a score's bits, then a member: the order family's elements)
//! and the order record's body: its bounds, its zkeys, decoding and
//! measuring it (recovery, loads, the fuzz target).

use crate::types::zset::ScoreKey;
use crate::types::{packed_len, Malformed, Reader};
use std::cmp::Ordering;

/// A zkey: the score's bits (f64, LE) then the member.
pub fn zkey(score: f64, m: &[u8]) -> Box<[u8]> {
    let mut v = Vec::with_capacity(8 + m.len());
    v.extend_from_slice(&score.to_bits().to_le_bytes());
    v.extend_from_slice(m);
    v.into()
}

/// The score and member of a zkey (at least 8 bytes).
pub fn unzkey(k: &[u8]) -> (f64, &[u8]) {
    let mut b = [0u8; 8];
    b.copy_from_slice(&k[..8]);
    (f64::from_le_bytes(b), &k[8..])
}

/// Redis's order on zkeys: score (-0 == 0), then member bytes. The empty
/// key (the first part's bound) is below every zkey.
pub fn cmp_zkey(a: &[u8], b: &[u8]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    let (sa, ma) = unzkey(a);
    let (sb, mb) = unzkey(b);
    ScoreKey(sa).cmp(&ScoreKey(sb)).then_with(|| ma.cmp(mb))
}

/// Packed bytes of one zkey in a record.
pub(super) fn key_bytes(k: &[u8]) -> usize {
    packed_len(k.len())
}

/// Whether zkey `k` lies in `[lo, hi)` (`hi` None: unbounded).
pub fn in_range(k: &[u8], lo: &[u8], hi: Option<&[u8]>) -> bool {
    cmp_zkey(k, lo) != Ordering::Less && hi.is_none_or(|h| cmp_zkey(k, h) == Ordering::Less)
}

/// The bounds of an order record's body (without decoding its zkeys).
pub fn bounds(b: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let mut r = Reader { b };
    let lo = r.bytes().ok()?;
    let n = r.u32().ok()?;
    let hi = if n == u32::MAX {
        None
    } else {
        Some(r.take(n as usize).ok()?)
    };
    Some((lo, hi))
}

/// An order record's body, decoded.
pub struct OrderRecord<'a> {
    pub lo: &'a [u8],
    pub hi: Option<&'a [u8]>,
    pub keys: Vec<&'a [u8]>,
}

/// Decodes an order record's body (`Order::encode_part`), checking that
/// its zkeys are well formed, sorted and inside its bounds.
pub fn decode_order(b: &[u8]) -> Result<OrderRecord<'_>, Malformed> {
    let mut r = Reader { b };
    let lo = r.bytes()?;
    let hi_len = r.u32()?;
    let hi = if hi_len == u32::MAX {
        None
    } else {
        Some(r.take(hi_len as usize)?)
    };
    let n = r.u32()? as usize;
    if n > b.len() / 12 {
        return Err(Malformed);
    }
    let mut keys = Vec::with_capacity(n);
    for _ in 0..n {
        let k = r.bytes()?;
        if k.len() < 8 || unzkey(k).0.is_nan() {
            return Err(Malformed);
        }
        if keys
            .last()
            .is_some_and(|p: &&[u8]| cmp_zkey(p, k) != Ordering::Less)
        {
            return Err(Malformed);
        }
        keys.push(k);
    }
    let bound_ok = |k: &[u8]| k.is_empty() || (k.len() >= 8 && !unzkey(k).0.is_nan());
    if !r.b.is_empty()
        || !bound_ok(lo)
        || hi.is_some_and(|h| !bound_ok(h) || cmp_zkey(lo, h) != Ordering::Less)
        || keys.iter().any(|k| !in_range(k, lo, hi))
    {
        return Err(Malformed);
    }
    Ok(OrderRecord { lo, hi, keys })
}

/// Count and packed bytes of the zkeys of an order record's body inside
/// `[lo, hi)` (recovery).
pub fn measure_order(b: &[u8], lo: &[u8], hi: Option<&[u8]>) -> Result<(u32, u32), Malformed> {
    let rec = decode_order(b)?;
    let mut n = 0u32;
    let mut body = 0u32;
    for k in rec.keys.iter().filter(|k| in_range(k, lo, hi)) {
        n += 1;
        body += key_bytes(k) as u32;
    }
    Ok((n, body))
}

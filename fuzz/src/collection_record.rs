//! Fuzzes the decoders of flash records and packed collections (record
//! kind 6) and checks invariants, not just absence of panics:
//! - `Collection::decode` of any bytes is a collection or an error;
//! - a decoded collection is not empty, its `encoded_len` is the length of
//!   its encoding, and that encoding decodes to the same collection (and
//!   is the input itself when the input was canonical: same length);
//! - `decode_record` of any bytes never panics, and a record that decodes
//!   as kind 6 has a collection type;
//! - a chunk body (kind 9) decodes to distinct elements or an error, and
//!   the elements a range filter keeps are a subset of the whole;
//! - a sorted set's order chunk decodes to sorted zkeys inside its bounds
//!   or an error, and measuring a narrower range counts a subset;
//! - a stream part's chunk body measures to the bytes its nodes take
//!   (all of the body after the bound), or an error;
//! - a chunk's value (kind 9, sparse or not) read back and written again
//!   reads back the same body;
//! - a change record's ops (kind 12) applied to a decoded collection give
//!   an error or a collection whose `encoded_len` is its encoding's length,
//!   and a change record's value decodes without panicking.

use strata_engine::flash::format::{
    chunk_prefix, chunk_value, decode_chunk, decode_head, decode_record, head_value, RecordKind,
};
use strata_engine::types::chunked::{
    cmp_zkey, decode_elems, decode_order, in_range, measure_list, measure_list_range,
    measure_order, Score,
};
use strata_engine::types::parts::{elem_hash, range_high};
use strata_engine::types::stream::measure_stream_part;
use strata_engine::types::{Collection, ValueType};

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    let Some((&t, body)) = data.split_first() else {
        return;
    };
    if let Some(vt) = ValueType::from_u8(t % 6) {
        if let Ok(c) = Collection::decode(vt, body) {
            assert!(!c.is_empty());
            assert_eq!(c.vtype(), vt);
            let mut out = Vec::new();
            c.encode(&mut out);
            assert_eq!(out.len(), c.encoded_len());
            let again = Collection::decode(vt, &out).expect("re-decode");
            assert_eq!(again, c);
        }
        // The first half a value, the second a change record's ops.
        let (value, ops) = body.split_at(body.len() / 2);
        if let Ok(mut c) = Collection::decode(vt, value) {
            if c.apply_change(t & 1, ops).is_ok() {
                let mut out = Vec::new();
                c.encode(&mut out);
                assert_eq!(out.len(), c.encoded_len());
            }
        }
    }
    let _ = strata_engine::flash::format::change::decode(body);
    if let Ok(rec) = decode_record(data) {
        if rec.header.kind == RecordKind::Collection {
            assert_ne!(rec.meta.vtype, ValueType::String);
        }
        if rec.header.kind == RecordKind::CollHead {
            if let Some(h) = decode_head(rec.value) {
                assert_eq!(head_value(&h), rec.value);
            }
        }
    }
    // A stream part: its measured bytes are the body's after the bound's
    // 20 (a part's encoding is exactly its nodes').
    if let Ok((_, _live, bytes)) = measure_stream_part(body) {
        assert_eq!(bytes as usize + 20, body.len());
    }
    // A list chunk body: counting never panics, and a range's bytes are at
    // most the whole body's.
    if let Ok((n, bytes)) = measure_list(body) {
        let skip = n as usize / 3;
        let part = measure_list_range(body, skip, n as usize / 2).expect("parsed once");
        assert!(part <= bytes);
    }
    if let Some((name, chunk)) = decode_chunk(body) {
        // The name (with its `headed` bit) encodes back to the same prefix,
        // the sparse bit aside (a string's part written as runs: then its
        // body reads back the same written again).
        let prefix = chunk_prefix(&name);
        assert_eq!(prefix[1..], body[1..prefix.len()]);
        assert_eq!(prefix[0], body[0] & !0x40);
        let again = chunk_value(&name, &chunk);
        assert_eq!(
            decode_chunk(&again).map(|(_, c)| c.into_owned()),
            Some(chunk.to_vec())
        );
        let chunk = &chunk[..];
        let high = range_high(name.low, name.depth);
        let all = decode_elems::<Box<[u8]>>(chunk, |_| true);
        let some = decode_elems::<Box<[u8]>>(chunk, |k| {
            let h = elem_hash(k);
            h >= name.low && h <= high
        });
        if let (Ok(all), Ok(some)) = (all, some) {
            assert!(some.len() <= all.len());
            assert!(some.keys().all(|k| all.contains_key(k)));
        }
        let _ = decode_elems::<()>(chunk, |_| true);
        let _ = decode_elems::<Score>(chunk, |_| true);
    }
    if let Ok(rec) = decode_order(body) {
        assert!(rec
            .keys
            .windows(2)
            .all(|w| cmp_zkey(w[0], w[1]) == std::cmp::Ordering::Less));
        assert!(rec.keys.iter().all(|k| in_range(k, rec.lo, rec.hi)));
        let (n, _) = measure_order(body, rec.lo, rec.hi).expect("decoded once");
        assert_eq!(n as usize, rec.keys.len());
        if let Some(mid) = rec.keys.get(rec.keys.len() / 2) {
            let (m, _) = measure_order(body, mid, rec.hi).expect("decoded once");
            assert!(m <= n);
        }
    }
}

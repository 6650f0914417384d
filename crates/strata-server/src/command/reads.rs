//! What commands of a collection's elements read first, planned from
//! their arguments before they run (`ReadsFn`): a connection reads a
//! pipeline's cold parts ahead with these (`net::connection::prefetch`).
//! Each mirrors its handler's call (`with_key_adds`, `with_key_reads`,
//! `with_key_elems`); it is only a hint, the handler plans again.

use bytes::Bytes;
use strata_engine::Need;

fn copied(args: &[&[u8]]) -> Vec<Bytes> {
    args.iter().map(|a| Bytes::copy_from_slice(a)).collect()
}

/// HSET / HMSET: `key field value [field value ...]`, added or set.
pub fn field_values(args: &[&[u8]]) -> Option<Need> {
    let pairs = args
        .get(2..)
        .filter(|p| !p.is_empty() && p.len() % 2 == 0)?;
    let adds = pairs
        .chunks(2)
        .map(|p| (Bytes::copy_from_slice(p[0]), p[1].len()))
        .collect();
    Some(Need::Adds(adds))
}

/// SADD: `key member [member ...]`, added.
pub fn members_added(args: &[&[u8]]) -> Option<Need> {
    let ms = args.get(2..).filter(|m| !m.is_empty())?;
    Some(Need::Adds(
        ms.iter().map(|m| (Bytes::copy_from_slice(m), 0)).collect(),
    ))
}

/// HGET, HMGET, HEXISTS, HSTRLEN, SISMEMBER, SMISMEMBER: `key elem ...`,
/// read only.
pub fn elems_read(args: &[&[u8]]) -> Option<Need> {
    let es = args.get(2..).filter(|e| !e.is_empty())?;
    Some(Need::Reads(copied(es)))
}

/// HDEL, SREM: `key elem [elem ...]`, changed.
pub fn elems_changed(args: &[&[u8]]) -> Option<Need> {
    let es = args.get(2..).filter(|e| !e.is_empty())?;
    Some(Need::Elems(copied(es)))
}

/// HSETNX, HINCRBY, HINCRBYFLOAT: `key field ...`, that one field changed.
pub fn field_changed(args: &[&[u8]]) -> Option<Need> {
    Some(Need::Elems(copied(args.get(2..3)?)))
}

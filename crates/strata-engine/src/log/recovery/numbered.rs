//! Rebuilding the directories of chunked streams and strings, whose parts
//! are named by number (`recovery::chunks` resolves the other types): of
//! the numbers the head names, each takes the newest record of it; the
//! head's own fields (a stream's counters and groups, a string's length,
//! parts and flags) are read from the head record.

use super::cand::Cand;
use crate::base::FlashLoc;
use crate::base::STR_DEPTH;
use crate::base::{PEL_DEPTH, STREAM_DEPTH};
use crate::flash::format;
use crate::index::{Shard, Slot};
use crate::log::checkpoint::UNKNOWN_COUNT;
use crate::types::parts::PartInfo;
use crate::types::stream::{measure_stream_part, StreamPartInfo, BOUND_LEN};
use crate::types::{ChunkedStr, Collection};
use crate::Inner;
use std::collections::BTreeMap;

/// A chunked entry's incarnation, head location and sequence, and its
/// head record's value read back (None: unreadable).
type DirHeadRead = (u64, Option<FlashLoc>, u64, Option<Vec<u8>>);

/// The `DirHeadRead` of the chunked entry at `i` (None if it is not
/// chunked). Streams and strings keep fields in their head.
fn dir_head(inner: &Inner, sh: &Shard, d: usize, i: usize, key: &[u8]) -> Option<DirHeadRead> {
    let Slot::Chunked(c) = &sh.dbs[d].at(i).slot else {
        return None;
    };
    let dir = c.dir()?;
    let (cid, head_loc, head_seq) = (dir.cid(), dir.head_loc(), dir.head_seq());
    let value = head_loc.and_then(|loc| crate::log::read_value_blocking(inner, key, loc, head_seq));
    Some((cid, head_loc, head_seq, value))
}

/// For each part number among the candidates `keep` accepts, the index
/// of the newest record of it (largest `seq`; equal: the later one).
fn newest_by_low(cands: &[Cand], keep: impl Fn(&Cand) -> bool) -> BTreeMap<u64, usize> {
    let mut newest: BTreeMap<u64, usize> = BTreeMap::new();
    for (ci, c) in cands.iter().enumerate().filter(|(_, c)| keep(c)) {
        match newest.get(&c.low) {
            Some(&o) if cands[o].seq > c.seq => {}
            _ => {
                newest.insert(c.low, ci);
            }
        }
    }
    newest
}

/// Resolves a chunked stream (module doc, by part number): each number the
/// head names, `[start, end)`, takes the newest record of it; the head's
/// own fields (counters, groups) are read from it. A stream whose head
/// cannot be read is dropped (its counters are lost); one whose parts do
/// not hold what the head counts keeps what they hold (damage).
pub(super) fn resolve_stream(
    inner: &Inner,
    sh: &mut Shard,
    d: usize,
    i: usize,
    key: &[u8],
    mut cands: Vec<Cand>,
) -> (bool, u64) {
    let Some((cid, head_loc, head_seq, value)) = dir_head(inner, sh, d, i, key) else {
        return (true, 0);
    };
    let head = value.as_deref().and_then(format::decode_head);
    let Some(format::Head {
        span: Some((start, end)),
        meta,
        ..
    }) = head
    else {
        return (false, 1);
    };
    let mut damaged = 0;
    // Records the checkpoint named as changed are measured by reading
    // (a PEL part's is read whole below).
    cands.retain_mut(|c| {
        if c.count != UNKNOWN_COUNT || c.depth == PEL_DEPTH {
            return true;
        }
        let m = crate::log::read_value_blocking(inner, key, c.loc, c.seq).and_then(|v| {
            let (_, body) = format::decode_chunk(&v)?;
            measure_stream_part(&body).ok()
        });
        match m {
            Some((bound, n, b)) => {
                (c.count, c.body) = (n, b);
                c.bounds = Some(std::sync::Arc::new((Box::from(&bound[..]), None)));
                true
            }
            None => false,
        }
    });
    let newest = newest_by_low(&cands, |c| {
        c.depth != PEL_DEPTH && c.low >= start && c.low < end
    });
    let newest_pel = newest_by_low(&cands, |c| c.depth == PEL_DEPTH);
    let parts: Vec<StreamPartInfo> = newest
        .values()
        .filter_map(|&ci| {
            let c = &cands[ci];
            let bound: [u8; BOUND_LEN] = c.bounds.as_ref()?.0.as_ref().try_into().ok()?;
            Some(StreamPartInfo {
                info: PartInfo::on_flash(c.low, STREAM_DEPTH, c.count, c.body, c.loc, c.seq),
                bound,
            })
        })
        .collect();
    let mut coll = Collection::stream_from_directory(cid, &parts, &[], head_loc, head_seq);
    if let Collection::Stream(s) = &mut coll {
        if s.set_meta(meta, (start, end)).is_err() {
            damaged += 1;
        }
        // The groups' PEL parts the head names: each takes the newest
        // record of its name, read now (a PEL lives in RAM). One missing
        // or unreadable is counted by `finish_pel_parts`.
        for (group, ordinal, num) in s.named_pel_parts() {
            let low = crate::types::stream::pel_record_low(ordinal, num);
            let Some(c) = newest_pel.get(&low).map(|&ci| &cands[ci]) else {
                continue;
            };
            if let Some(v) = crate::log::read_value_blocking(inner, key, c.loc, c.seq) {
                if let Some((_, body)) = format::decode_chunk(&v) {
                    let _ = s.install_pel_part(&group, num, &body, c.loc, c.seq);
                }
            }
        }
        damaged += s.finish_pel_parts();
    }
    let flags = crate::types::aux(coll.len(), false);
    install(sh, d, i, coll, flags);
    // An empty stream is a key still (stream invariant 4).
    (true, damaged)
}

/// Resolves a chunked string (by part number, as a stream): each number
/// of the head's span `[0, n)` takes the newest record of it, a number
/// with none is a hole; the length and flags are read from the head. A
/// string whose head cannot be read is dropped; one whose parts do not
/// cover what the head says keeps what they hold (damage).
pub(super) fn resolve_string(
    inner: &Inner,
    sh: &mut Shard,
    d: usize,
    i: usize,
    key: &[u8],
    mut cands: Vec<Cand>,
) -> (bool, u64) {
    let Some((cid, head_loc, head_seq, value)) = dir_head(inner, sh, d, i, key) else {
        return (true, 0);
    };
    let head = value.as_deref().and_then(format::decode_head);
    let Some(format::Head {
        span: Some(span),
        meta,
        ..
    }) = head
    else {
        return (false, 1);
    };
    if !ChunkedStr::meta_fits(meta) {
        // Parts of another size (or no string's head): nothing to read.
        return (false, 1);
    }
    // Records the checkpoint named as changed are measured by reading.
    cands.retain_mut(|c| {
        if c.count != UNKNOWN_COUNT {
            return true;
        }
        let body = crate::log::read_value_blocking(inner, key, c.loc, c.seq)
            .and_then(|v| Some(format::decode_chunk(&v)?.1.len()));
        match body.and_then(|b| u32::try_from(b).ok()) {
            Some(b) => {
                (c.count, c.body) = (1, b);
                true
            }
            None => false,
        }
    });
    let newest = newest_by_low(&cands, |c| c.depth == STR_DEPTH && c.low < span.1);
    let parts: Vec<PartInfo> = newest
        .values()
        .map(|&ci| {
            let c = &cands[ci];
            PartInfo::on_flash(c.low, STR_DEPTH, 1, c.body, c.loc, c.seq)
        })
        .collect();
    let bodies: BTreeMap<u64, u32> = parts.iter().map(|p| (p.low, p.body)).collect();
    let mut s = ChunkedStr::from_infos(cid, &parts, head_loc, head_seq);
    let damaged = u64::from(s.set_meta(meta, span, &bodies).is_err());
    let (len, flags) = (s.len(), s.client_flags);
    install(sh, d, i, Collection::Str(Box::new(s)), flags);
    (len > 0, damaged)
}

/// Puts a resolved stream or string in the entry at `i`, with the word
/// its `client_flags` keep (a stream's element count, a string's
/// memcached flags).
fn install(sh: &mut Shard, d: usize, i: usize, coll: Collection, client_flags: u32) {
    let e = sh.dbs[d].at_mut(i);
    sh.acct.remove(&e.slot, e.value_len, e.vtype);
    e.value_len = coll.encoded_len().min(u32::MAX as usize) as u32;
    e.slot = Slot::Chunked(Box::new(coll));
    e.client_flags = client_flags;
    sh.acct.add(&e.slot, e.value_len, e.vtype);
}

//! Rebuilding the directories of chunked collections after the replay.
//!
//! The replay leaves each chunked key with its head (the incarnation `cid`)
//! and the parts the checkpoint listed; the chunk records of the log tail
//! are candidates. A directory is then resolved per hash: of the records of
//! the key's `cid` covering a hash, the one with the largest sequence
//! number holds it (ties: the later copy). Ranges are dyadic, so the result
//! is a set of parts again:
//! - a record whose range is not covered by a newer one becomes a part;
//! - a record partly covered by newer ones (a split whose second half was
//!   never written before a crash) lends each uncovered sub-range a part
//!   that points at it and is filtered by range when loaded; its element
//!   count is measured by reading the record here;
//! - a range no record covers (records lost to damage) becomes an empty
//!   part, and a collection left with no element is dropped (counted).
//!
//! A sorted set's member parts are resolved so too; its order parts by the
//! same rule over zkeys (`super::order`): each zkey belongs to the newest
//! record whose bounds hold it. Lists resolve by position (`resolve_list`),
//! streams and strings by part number (`numbered`).

use super::cand::{measure, Cand};
use super::part_changes::{materialize, PartChangeRec};
use super::replay::Replay;
use crate::base::FlashLoc;
use crate::base::ValueType;
use crate::base::ORDER_DEPTH;
use crate::flash::format;
use crate::index::{Shard, Slot};
use crate::log::checkpoint::UNKNOWN_COUNT;
use crate::types::chunked::{measure_list, measure_list_range};
use crate::types::parts::range_high;
use crate::types::parts::PartInfo;
use crate::types::Collection;
use crate::Inner;
use std::collections::BTreeMap;

/// One part of a resolved directory.
struct Chosen {
    depth: u8,
    cand: usize,
    /// The record's range is exactly this part's (else: wider, filtered).
    exact: bool,
}

/// Resolves every chunked entry (module doc), on as many threads as
/// recovery uses. Before the maps are arranged by the database mapping:
/// maps and candidates are both by database id.
pub(super) fn resolve_all(inner: &Inner, replay: &mut Replay<'_>) {
    let chunks = &replay.chunks;
    let part_changes = &replay.part_changes;
    let threads = super::recovery_threads();
    let results: Vec<(u64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let (mut dropped, mut damaged) = (0u64, 0u64);
                    for si in (t..inner.shards.len()).step_by(threads) {
                        let mut guard = inner.shards[si].lock();
                        let sh = &mut *guard;
                        for d in 0..sh.dbs.len() {
                            let mut i = 0;
                            while i < sh.dbs[d].len() {
                                if !matches!(sh.dbs[d].at(i).slot, Slot::Chunked(_)) {
                                    i += 1;
                                    continue;
                                }
                                let key: Box<[u8]> =
                                    Box::from(sh.dbs[d].get_index(i).map(|(k, _)| k).unwrap());
                                let id = (d as u16, key.clone());
                                let tail = chunks.get(&id).map(|v| &v[..]).unwrap_or(&[]);
                                let changes = part_changes.get(&id).map(|v| &v[..]).unwrap_or(&[]);
                                let (keep, bad) = resolve(inner, sh, (d, i), &key, tail, changes);
                                damaged += bad;
                                if keep {
                                    i += 1;
                                } else {
                                    Replay::remove(sh, d, i);
                                    dropped += 1;
                                }
                            }
                        }
                    }
                    (dropped, damaged)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (dropped, damaged) in results {
        replay.report.missing_segment_entries += dropped;
        replay.report.corrupt_records += damaged;
    }
    if !replay.part_changes.is_empty() {
        super::part_changes::sync(inner);
    }
    replay.chunks.clear();
    replay.part_changes.clear();
}

/// Rebuilds the directory of the chunked entry at `i`. Returns whether
/// the entry keeps at least one element, and the records that could not
/// be read.
fn resolve(
    inner: &Inner,
    sh: &mut Shard,
    (d, i): (usize, usize),
    key: &[u8],
    tail: &[Cand],
    changes: &[PartChangeRec],
) -> (bool, u64) {
    let e = &sh.dbs[d].at(i);
    let Slot::Chunked(c) = &e.slot else {
        return (true, 0);
    };
    let (vtype, big) = (c.vtype(), c.encoding_is_big());
    let Some(dir) = c.dir() else {
        return (true, 0);
    };
    let cid = dir.cid();
    let (head_loc, head_seq) = (dir.head_loc(), dir.head_seq());
    // The checkpoint's parts first (older copies lose ties), then the tail.
    let mut cands: Vec<Cand> = (0..dir.part_count())
        .filter_map(|j| {
            let p = dir.part(j);
            // An order part's bounds: its first, and the next one's.
            let bounds = dir.part_first(j).map(|lo| {
                let hi = (j + 1 < dir.part_count())
                    .then(|| dir.part_first(j + 1))
                    .flatten();
                std::sync::Arc::new((Box::from(lo), hi.map(Box::from)))
            });
            Some(Cand {
                cid,
                depth: p.depth,
                low: p.low,
                seq: p.seq,
                loc: p.loc?,
                count: p.count,
                body: p.body,
                bounds,
                // The checkpoint names only published parts, each under
                // its head (`publish_chunked`).
                headed: false,
            })
        })
        .collect();
    // A tail record of this incarnation counts if its head made it to the
    // log: a change torn before its head is not restored half (the
    // collection stays as the head before it left it).
    let tail: Vec<&Cand> = tail
        .iter()
        .filter(|c| c.cid == cid && !(c.headed && c.seq > head_seq))
        .collect();
    // Part change records count so too; their chains become records.
    let changes: Vec<&PartChangeRec> = changes
        .iter()
        .filter(|c| c.cid == cid && !(c.headed && c.seq > head_seq))
        .collect();
    let bases: Vec<&Cand> = cands.iter().chain(tail.iter().copied()).collect();
    let made = materialize(inner, d as u16, key, &bases, &changes);
    let tail: Vec<&Cand> = tail.into_iter().chain(&made.cands).collect();
    let bad_chains = made.damaged;
    if vtype == ValueType::Stream {
        cands.extend(tail.into_iter().cloned());
        return plus(
            super::numbered::resolve_stream(inner, sh, d, i, key, cands),
            bad_chains,
        );
    }
    if vtype == ValueType::String {
        cands.extend(tail.into_iter().cloned());
        return plus(
            super::numbered::resolve_string(inner, sh, d, i, key, cands),
            bad_chains,
        );
    }
    let clean_checkpoint = tail.is_empty()
        && cands.iter().all(|c| c.count != UNKNOWN_COUNT)
        && dir.part_count() > 0
        && dir.check().is_ok()
        && dir
            .recovered_span()
            .is_none_or(|s| Some(s) == dir.head_span());
    if clean_checkpoint {
        let len = dir.len();
        return (len > 0, 0);
    }
    cands.extend(tail.into_iter().cloned());
    if vtype == ValueType::List {
        let span = dir.recovered_span();
        return plus(resolve_list(inner, sh, d, i, key, cands, span), bad_chains);
    }
    let (order_cands, cands): (Vec<Cand>, Vec<Cand>) =
        cands.into_iter().partition(|c| c.depth == ORDER_DEPTH);
    let (parts, mut damaged) = resolve_hashed(inner, key, vtype, &cands);
    let mut order = Vec::new();
    if vtype == ValueType::ZSet {
        let (o, bad) = super::order::resolve_order(inner, key, &order_cands);
        order = o;
        damaged += bad;
    }
    let Some(new) =
        Collection::from_directory(vtype, big, cid, &parts, &order, head_loc, head_seq, None)
    else {
        return (false, damaged + bad_chains);
    };
    install_resolved(sh, d, i, new, big, damaged + bad_chains)
}

/// `r` with `more` records that could not be read.
fn plus(r: (bool, u64), more: u64) -> (bool, u64) {
    (r.0, r.1 + more)
}

/// The parts of a hash, a set or a sorted set's members (module doc), and
/// the records that could not be read.
fn resolve_hashed(
    inner: &Inner,
    key: &[u8],
    vtype: ValueType,
    cands: &[Cand],
) -> (Vec<PartInfo>, u64) {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|&a, &b| (cands[b].seq, b).cmp(&(cands[a].seq, a)));
    let mut chosen: BTreeMap<u64, Chosen> = BTreeMap::new();
    for &ci in &order {
        let c = &cands[ci];
        if let Some((&l, ch)) = chosen.range(..=c.low).next_back() {
            if range_high(l, ch.depth) >= c.low {
                continue; // inside a newer record's range
            }
        }
        fill(&mut chosen, c.low, c.depth, ci, true);
    }
    // Build the parts, measuring where needed; gaps become empty parts.
    let mut parts: Vec<PartInfo> = Vec::with_capacity(chosen.len());
    let mut damaged = 0;
    let mut next: Option<u64> = Some(0);
    for (&low, ch) in &chosen {
        if let Some(n) = next {
            if n < low {
                gap(&mut parts, n, low - 1);
            }
        }
        let c = &cands[ch.cand];
        let (count, body) = if ch.exact && c.count != UNKNOWN_COUNT {
            (Some(c.count), c.body)
        } else {
            match crate::log::read_value_blocking(inner, key, c.loc, c.seq).and_then(|v| {
                format::decode_chunk(&v).and_then(|(_, b)| measure(vtype, low, ch.depth, &b))
            }) {
                Some((n, b)) => (Some(n), b),
                None => {
                    damaged += 1;
                    (None, 0)
                }
            }
        };
        parts.push(PartInfo {
            low,
            depth: ch.depth,
            dirty: count.is_none(),
            resident: count.is_none(),
            count: count.unwrap_or(0),
            body,
            ver: 0,
            loc: count.map(|_| c.loc),
            seq: c.seq,
        });
        let high = range_high(low, ch.depth);
        next = high.checked_add(1);
    }
    if let Some(n) = next {
        gap(&mut parts, n, u64::MAX);
    }
    (parts, damaged)
}

/// Puts a resolved collection in the entry at `i`. Returns whether it
/// keeps at least one element, and `damaged`.
fn install_resolved(
    sh: &mut Shard,
    d: usize,
    i: usize,
    new: Collection,
    big: bool,
    damaged: u64,
) -> (bool, u64) {
    let len = new.len();
    let e = sh.dbs[d].at_mut(i);
    let value_len = new.encoded_len().min(u32::MAX as usize) as u32;
    sh.acct.remove(&e.slot, e.value_len, e.vtype);
    e.slot = Slot::Chunked(Box::new(new));
    e.value_len = value_len;
    e.client_flags = crate::types::aux(len, big);
    sh.acct.add(&e.slot, e.value_len, e.vtype);
    (len > 0, damaged)
}

/// Resolves a chunked list (module doc, by position): each position of
/// the head's span `[start, end)` takes the element of the newest record
/// covering it. A record whose count the checkpoint did not know (a part
/// that changed) is read for its first position and count; a position no
/// record covers is lost (damage), and the parts after it keep their
/// positions (`gapped`).
fn resolve_list(
    inner: &Inner,
    sh: &mut Shard,
    d: usize,
    i: usize,
    key: &[u8],
    mut cands: Vec<Cand>,
    span: Option<(u64, u64)>,
) -> (bool, u64) {
    let Slot::Chunked(c) = &sh.dbs[d].at(i).slot else {
        return (true, 0);
    };
    let Some(dir) = c.dir() else {
        return (true, 0);
    };
    let (cid, head_loc, head_seq) = (dir.cid(), dir.head_loc(), dir.head_seq());
    let mut damaged = 0;
    let read = |loc: FlashLoc, seq: u64| -> Option<(u64, Vec<u8>)> {
        let v = crate::log::read_value_blocking(inner, key, loc, seq)?;
        let (name, body) = format::decode_chunk(&v)?;
        Some((name.low, body.to_vec()))
    };
    // Learn the first position and count of records the checkpoint named
    // as changed. One that cannot be read was superseded and collected
    // (its part was written again after the checkpoint): if its positions
    // still count, the coverage check below finds them missing.
    cands.retain_mut(|c| {
        if c.count != UNKNOWN_COUNT {
            return true;
        }
        match read(c.loc, c.seq).and_then(|(low, b)| Some((low, measure_list(&b).ok()?))) {
            Some((low, (n, body))) => {
                (c.low, c.count, c.body) = (low, n, body);
                true
            }
            None => false,
        }
    });
    let span = span.or_else(|| {
        let v = crate::log::read_value_blocking(inner, key, head_loc?, head_seq)?;
        format::decode_head(&v)?.span
    });
    let (start, end) = match span {
        Some(s) => s,
        None => {
            // No head to say which positions live: every record's.
            damaged += 1;
            let lo = cands.iter().map(|c| c.low).min().unwrap_or(0);
            let hi = cands
                .iter()
                .map(|c| c.low.saturating_add(c.count as u64))
                .max();
            (lo, hi.unwrap_or(0))
        }
    };
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|&a, &b| (cands[b].seq, b).cmp(&(cands[a].seq, a)));
    // Chosen intervals: first position -> (end, candidate).
    let mut chosen: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
    for &ci in &order {
        let c = &cands[ci];
        let (a, b) = (
            c.low.max(start),
            c.low.saturating_add(c.count as u64).min(end),
        );
        let mut at = a;
        while at < b {
            // The chosen interval holding `at`, or the next one after it.
            if let Some((_, &(e, _))) = chosen.range(..=at).next_back().filter(|(_, v)| v.0 > at) {
                at = e;
                continue;
            }
            let stop = chosen.range(at..b).next().map(|(&s, _)| s).unwrap_or(b);
            chosen.insert(at, (stop, ci));
            at = stop;
        }
    }
    let mut parts: Vec<PartInfo> = Vec::with_capacity(chosen.len());
    for (&a, &(b, ci)) in &chosen {
        let c = &cands[ci];
        let count = (b - a) as u32;
        let body = if a == c.low && count == c.count {
            Some(c.body)
        } else {
            read(c.loc, c.seq).and_then(|(_, v)| {
                measure_list_range(&v, (a - c.low) as usize, count as usize).ok()
            })
        };
        let Some(body) = body else {
            damaged += 1;
            continue;
        };
        parts.push(PartInfo::on_flash(a, 0, count, body, c.loc, c.seq));
    }
    let covered: u64 = parts.iter().map(|p| p.count as u64).sum();
    if covered != end - start {
        damaged += 1;
    }
    let Some(new) = Collection::from_directory(
        ValueType::List,
        false,
        cid,
        &parts,
        &[],
        head_loc,
        head_seq,
        None,
    ) else {
        return (false, damaged);
    };
    install_resolved(sh, d, i, new, false, damaged)
}

/// Adds the sub-ranges of `[low, depth]` that no chosen part covers, as
/// parts of candidate `cand` (`exact` if the whole range is free).
fn fill(chosen: &mut BTreeMap<u64, Chosen>, low: u64, depth: u8, cand: usize, exact: bool) {
    let high = range_high(low, depth);
    let mut inside = chosen.range(low..=high);
    match inside.next() {
        None => {
            chosen.insert(low, Chosen { depth, cand, exact });
        }
        Some((&l, ch)) if l == low && ch.depth == depth => {}
        Some(_) if depth < 64 => {
            let half = depth + 1;
            fill(chosen, low, half, cand, false);
            fill(
                chosen,
                low | (1u64 << (64 - half as u32)),
                half,
                cand,
                false,
            );
        }
        Some(_) => {}
    }
}

/// Empty parts covering `[from, to]` (maximal dyadic ranges).
fn gap(parts: &mut Vec<PartInfo>, from: u64, to: u64) {
    let mut a = from;
    loop {
        // The largest range aligned at `a` that ends by `to`.
        let mut depth = if a == 0 {
            0
        } else {
            (64 - a.trailing_zeros()) as u8
        };
        while range_high(a, depth) > to {
            depth += 1;
        }
        parts.push(PartInfo {
            low: a,
            depth,
            dirty: true,
            resident: true,
            count: 0,
            body: 0,
            ver: 0,
            loc: None,
            seq: 0,
        });
        let high = range_high(a, depth);
        if high >= to {
            return;
        }
        a = high + 1;
    }
}

//! Rebuilding a chunked sorted set's order parts (recovery): each zkey
//! goes to the newest order record whose bounds hold it, as a hash's hash
//! goes to the newest record of its range (`chunks` resolves the rest).

use super::cand::Cand;
use crate::flash::format;
use crate::log::checkpoint::UNKNOWN_COUNT;
use crate::types::chunked::{cmp_zkey, measure_order, OrderInfo};
use crate::Inner;
use std::collections::BTreeMap;

/// A zkey bound for ordering chosen ranges (`cmp_zkey`; empty: lowest).
#[derive(Clone, Debug, PartialEq, Eq)]
struct ZBound(Box<[u8]>);

impl PartialOrd for ZBound {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ZBound {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        cmp_zkey(&self.0, &o.0)
    }
}

/// Whether `a < b` where None is above every bound.
fn below(a: &ZBound, b: Option<&ZBound>) -> bool {
    b.is_none_or(|b| a < b)
}

/// The order parts of a sorted set (module doc): each zkey goes to the
/// newest record whose bounds hold it; a range no record holds becomes an
/// empty part (damage). Returns the parts and the records that could not
/// be read.
pub(super) fn resolve_order(inner: &Inner, key: &[u8], cands: &[Cand]) -> (Vec<OrderInfo>, u64) {
    let mut by_age: Vec<usize> = (0..cands.len()).collect();
    by_age.sort_by(|&a, &b| (cands[b].seq, b).cmp(&(cands[a].seq, a)));
    // Chosen ranges: start -> (end, candidate).
    let mut chosen: BTreeMap<ZBound, (Option<ZBound>, usize)> = BTreeMap::new();
    for &ci in &by_age {
        let Some(bounds) = &cands[ci].bounds else {
            continue;
        };
        let end = bounds.1.clone().map(ZBound);
        let mut at = ZBound(bounds.0.clone());
        while below(&at, end.as_ref()) {
            // The chosen range holding `at`: skip past it.
            if let Some((_, (e, _))) = chosen
                .range(..=at.clone())
                .next_back()
                .filter(|(_, (e, _))| below(&at, e.as_ref()))
            {
                match e {
                    Some(e) => {
                        at = e.clone();
                        continue;
                    }
                    None => break,
                }
            }
            let next = chosen
                .range(at.clone()..)
                .next()
                .map(|(s, _)| s.clone())
                .filter(|s| below(s, end.as_ref()));
            let stop = next.or_else(|| end.clone());
            chosen.insert(at.clone(), (stop.clone(), ci));
            match stop {
                Some(s) => at = s,
                None => break,
            }
        }
    }
    let mut parts: Vec<OrderInfo> = Vec::with_capacity(chosen.len() + 1);
    let mut damaged = 0;
    let mut expect: Option<ZBound> = Some(ZBound(Box::default()));
    let empty = |first: Box<[u8]>| OrderInfo {
        id: 0,
        first,
        count: 0,
        body: 0,
        loc: None,
        seq: 0,
    };
    for (start, (end, ci)) in &chosen {
        if let Some(e) = &expect {
            if e < start {
                damaged += 1;
                parts.push(empty(e.0.clone()));
            }
        }
        let c = &cands[*ci];
        let exact = c.bounds.as_ref().is_some_and(|b| {
            b.0[..] == start.0[..] && b.1.as_deref() == end.as_ref().map(|e| &e.0[..])
        });
        let measured = if exact && c.count != UNKNOWN_COUNT {
            Some((c.count, c.body))
        } else {
            crate::log::read_value_blocking(inner, key, c.loc, c.seq).and_then(|v| {
                let (_, b) = format::decode_chunk(&v)?;
                measure_order(&b, &start.0, end.as_ref().map(|e| &e.0[..])).ok()
            })
        };
        match measured {
            Some((count, body)) => parts.push(OrderInfo {
                id: 0,
                first: start.0.clone(),
                count,
                body,
                loc: Some(c.loc),
                seq: c.seq,
            }),
            None => {
                damaged += 1;
                parts.push(empty(start.0.clone()));
            }
        }
        expect = end.clone();
    }
    if let Some(e) = expect {
        // The zkeys above the last record's bound are lost.
        if !chosen.is_empty() {
            damaged += 1;
        }
        parts.push(empty(e.0));
    }
    // The first part's bound is the lowest (a part below every zkey).
    if let Some(p) = parts.first_mut() {
        p.first = Box::default();
    }
    for (id, p) in parts.iter_mut().enumerate() {
        p.id = id as u32;
    }
    (parts, damaged)
}

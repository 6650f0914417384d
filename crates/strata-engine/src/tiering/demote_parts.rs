//! Demotion of a chunked collection's parts (`demote`'s hand meets one):
//! the CLOCK hand over its parts, and writing the changed parts it picked
//! (without the journal) under a head.

use crate::index::{Slot, F_STASHING};
use crate::log::chunks::{append_chunked, capture_dir, publish_chunked, ChunkedState};
use crate::log::writer::{AppendError, SegmentWriter};
use crate::stats::Stats;
use crate::Inner;

/// What the hand did to one chunked collection.
pub(super) struct PartsStep {
    pub(super) spared: usize,
    pub(super) freed: usize,
    /// Bytes of the parts that left RAM.
    pub(super) freed_bytes: usize,
    /// Parts in RAM the hand looked at.
    pub(super) examined: usize,
    /// Changed parts to write, and the head.
    pub(super) write: Option<ChunkedState>,
    /// Changed parts were left to the journal.
    pub(super) journal_due: bool,
}

/// The hand passes a chunked collection, until its freed and picked parts
/// hold `want` bytes: each part in RAM that was used since gets a second
/// chance; a clean one is dropped from RAM (its record is its copy); a
/// changed one is picked to be written.
///
/// With the journal on, changed parts are the journal's to write (it
/// writes all of a collection's changed parts under one head, so the log
/// never holds half of a change: `log::chunks::capture_dir`): they are
/// spared and the journal is asked to run; once written they are clean and
/// leave RAM at the hand's next pass. Without it (`appendonly no`, where a
/// crash discards the files), the picks are written with a head.
pub(super) fn demote_parts(
    e: &mut crate::index::Entry,
    acct: &mut crate::index::ShardCounters,
    want: usize,
    journal: bool,
    budget: usize,
) -> PartsStep {
    let mut step = PartsStep {
        spared: 0,
        freed: 0,
        freed_bytes: 0,
        examined: 0,
        write: None,
        journal_due: false,
    };
    if e.flags & F_STASHING != 0 {
        return step;
    }
    let (vtype, version, expire_at_ms) = (e.value_type(), e.version, e.expire_at_ms);
    let bits = match &e.slot {
        Slot::Chunked(c) if c.encoding_is_big() => crate::types::BIG_ENCODING,
        _ => 0,
    };
    let write = e.with_dir(acct, |d| {
        let before = d.resident_bytes();
        let room = crate::types::parts::cold_room(d.body_len(), budget);
        let (spared, freed, examined, changed) = d.clock_pass(want, room);
        step.freed_bytes = before.saturating_sub(d.resident_bytes());
        step.spared = spared;
        step.freed = freed;
        step.examined = examined;
        if changed.is_empty() {
            return None;
        }
        if journal {
            step.spared += changed.len();
            step.journal_due = true;
            return None;
        }
        Some(capture_dir(
            vtype,
            bits,
            d,
            version,
            expire_at_ms,
            Some(&changed),
            false,
        ))
    });
    step.write = write.flatten();
    step
}

/// Writes the picked parts, publishes them and drops them from RAM;
/// returns how many parts left RAM.
pub(super) fn write_chunk_victims(
    inner: &Inner,
    writer: &mut SegmentWriter,
    victims: &[(u16, Box<[u8]>, ChunkedState)],
) -> Result<usize, AppendError> {
    let mut placed = Vec::with_capacity(victims.len());
    let mut r = Ok(());
    for (db, key, st) in victims {
        match append_chunked(inner, writer, *db, key, st) {
            Ok(p) => placed.push(p),
            Err(e) => {
                r = Err(e);
                break;
            }
        }
    }
    let flushed = writer.flush_counted(&inner.stats.device.demotion);
    let ok = flushed.is_ok() && !matches!(r, Err(AppendError::Io(_)));
    let mut moved = 0;
    for (i, (db, key, st)) in victims.iter().enumerate() {
        if ok {
            if let Some((parts, head)) = placed.get(i) {
                moved += publish_chunked(inner, *db, key, st, parts, *head);
            }
        }
        let mut guard = inner.shard(key).lock();
        let d = inner.keys.dbmap.logical(*db);
        if let Some(e) = guard.dbs[d].get_mut(&key[..]) {
            e.flags &= !F_STASHING;
        }
    }
    Stats::add(&inner.stats.stashes, moved as u64);
    if let Err(e) = flushed {
        return Err(AppendError::Io(e));
    }
    r.map(|()| moved)
}

/// Most cold chains one pass over a collection reads back to write whole.
const RECLAIM_PER_PASS: usize = 8;

/// When the hand found nothing to free in a chunked collection (its parts
/// are cold) while RAM is still over the budget, the RAM its cold chains
/// hold (`parts::chains`) is what is left to move: up to
/// `RECLAIM_PER_PASS` of the chains with the most steps are read back (the
/// image, one device read each, under the shard lock: a fallback under
/// pressure) with their steps applied, and asked for an image, which the
/// journal writes; the hand's next pass then drops the parts and their
/// chains. Returns how many were read back.
pub(super) fn reclaim_cold_chains(
    inner: &Inner,
    e: &mut crate::index::Entry,
    acct: &mut crate::index::ShardCounters,
    key: &[u8],
) -> usize {
    type Target = (
        usize,
        crate::types::parts::PartName,
        crate::base::FlashLoc,
        u64,
        Vec<crate::base::FlashLoc>,
    );
    let targets: Vec<Target> = {
        let Slot::Chunked(c) = &e.slot else {
            return 0;
        };
        let Some(d) = c.dir() else {
            return 0;
        };
        let mut cold: Vec<(usize, crate::types::parts::PartName)> = d
            .chains()
            .names()
            .into_iter()
            .filter_map(|n| {
                let ch = d.chains().get(n)?;
                let i = d.find_part(n.0, n.1, 0)?;
                (ch.base.is_none() && !d.part(i).resident).then_some((ch.pending.len(), n))
            })
            .collect();
        cold.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
        cold.into_iter()
            .take(RECLAIM_PER_PASS)
            .filter_map(|(_, n)| {
                let i = d.find_part(n.0, n.1, 0)?;
                let ch = d.chains().get(n)?;
                Some((i, n, ch.image?, ch.image_seq, ch.spilled_locs().to_vec()))
            })
            .collect()
    };
    let mut done = 0;
    for (i, name, loc, seq, spilled) in targets {
        let Some(value) = crate::log::read_value_blocking(inner, key, loc, seq) else {
            continue;
        };
        let Some((named, body)) = crate::flash::format::decode_chunk(&value) else {
            continue;
        };
        let records: Option<Vec<(u64, Vec<u8>)>> = spilled
            .iter()
            .map(|&l| crate::log::read_record_blocking(inner, key, l))
            .collect();
        let Some(records) = records else {
            continue;
        };
        let recs: Vec<(u64, &[u8])> = records.iter().map(|(s, v)| (*s, &v[..])).collect();
        let ok = e.with_dir(acct, |d| {
            let ch = d.chains().get(name)?;
            if ch.spilled_locs() != &spilled[..] {
                return None;
            }
            let apply = crate::flash::format::part_change::apply_chain;
            let body = apply(&body, name, seq, &recs, &ch.pending)?;
            if !d.install(i, loc, &body, (named.low, named.depth)).ok()? {
                return None;
            }
            d.chains_mut().update(name, |c| {
                c.base = Some(bytes::Bytes::from(body));
                c.want_image = true;
            })
        });
        if ok.flatten().is_some() {
            done += 1;
        }
    }
    Stats::add(&inner.stats.part_chain_reclaims, done as u64);
    done
}

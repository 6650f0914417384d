//! Part change records (kind 13, `types::parts::chains`) at recovery: the
//! replay keeps each one per key; before a chunked key's directory is
//! resolved, each chain of them is applied to the part record it starts
//! from (a candidate of the log tail or the checkpoint whose sequence
//! number is the first change's base), in order, and the part's state is
//! written as a new chunk record (the log then holds it in one record, as
//! a part on flash needs) that joins the candidates. A change whose base
//! is no candidate (an older chain's, or one a newer image replaced)
//! counts for nothing.

use super::cand::Cand;
use crate::base::FlashLoc;
use crate::flash::format::{self, part_change, RecordHeader, RecordKind};
use crate::types::parts::chains::CHAIN_MAX;
use crate::Inner;
use std::collections::{HashMap, HashSet};

/// A key as the replay names it: its database id and key.
pub(super) type KeyId = (u16, Box<[u8]>);

/// A part change record seen by the replay.
pub(super) struct PartChangeRec {
    pub cid: u64,
    pub low: u64,
    pub depth: u8,
    pub headed: bool,
    pub seq: u64,
    base: u64,
    steps: Box<[u8]>,
}

impl PartChangeRec {
    /// The record's value, read (None if malformed).
    pub(super) fn of_record(seq: u64, value: &[u8]) -> Option<PartChangeRec> {
        let c = part_change::decode(value)?;
        Some(PartChangeRec {
            cid: c.name.cid,
            low: c.name.low,
            depth: c.name.depth,
            headed: c.name.headed,
            seq,
            base: c.base,
            steps: c.steps.into(),
        })
    }
}

/// What materializing one key's chains gave: the new candidates, and the
/// chains that could not be applied (damage).
#[derive(Default)]
pub(super) struct Made {
    pub cands: Vec<Cand>,
    pub damaged: u64,
}

/// Applies the chains of `changes` (already filtered: this incarnation's,
/// under its head) that start at one of `bases`, writing each result as a
/// chunk record of key `key` in database `db` (module doc).
pub(super) fn materialize(
    inner: &Inner,
    db: u16,
    key: &[u8],
    bases: &[&Cand],
    changes: &[&PartChangeRec],
) -> Made {
    let mut made = Made::default();
    if changes.is_empty() {
        return made;
    }
    // Of two records on one base (a checkpoint's restatement of a cold
    // chain, and the first change it restates), the newer holds more.
    let mut by_base: HashMap<(u64, u8, u64), &PartChangeRec> = HashMap::new();
    for c in changes {
        let e = by_base.entry((c.low, c.depth, c.base)).or_insert(c);
        if c.seq > e.seq {
            *e = c;
        }
    }
    // The bases that start a chain; each record's copies in turn (one may
    // be gone: the checkpoint names where the collector took it from, its
    // moved copy is another candidate), read on several threads.
    let starts: Vec<&Cand> = bases
        .iter()
        .copied()
        .filter(|c| by_base.contains_key(&(c.low, c.depth, c.seq)))
        .collect();
    let mut images = read_all(inner, key, &starts);
    let mut done = HashSet::new();
    for (c, image) in starts.iter().zip(images.iter_mut()) {
        if done.contains(&(c.low, c.depth, c.seq)) {
            continue;
        }
        // An image the collector took (a newer one replaced it) starts
        // nothing.
        let Some(image) = image.take() else {
            continue;
        };
        done.insert((c.low, c.depth, c.seq));
        let Some((name, body)) = format::decode_chunk(&image) else {
            continue;
        };
        let Some(mut next) = by_base.get(&(c.low, c.depth, c.seq)).copied() else {
            continue;
        };
        let mut body = body.to_vec();
        let mut seq = c.seq;
        for _ in 0..4 * CHAIN_MAX {
            match part_change::apply_steps(&body, &next.steps) {
                Some(b) => body = b,
                None => {
                    made.damaged += 1;
                    break;
                }
            }
            seq = next.seq;
            match by_base.get(&(c.low, c.depth, seq)) {
                Some(n) => next = n,
                None => break,
            }
        }
        if seq == c.seq {
            continue;
        }
        let value = format::chunk_value(
            &format::ChunkName {
                headed: true,
                ..name
            },
            &body,
        );
        match append(inner, db, key, seq, &value) {
            Some(loc) => made.cands.extend(Cand::of_record(seq, loc, &value)),
            None => made.damaged += 1,
        }
    }
    if !made.cands.is_empty() && !flush(inner) {
        made.damaged += made.cands.len() as u64;
        made.cands.clear();
    }
    made
}

/// The part change records the checkpoint `cp` names for spilled chains
/// (`parts::chains`: their steps are in no record after its position),
/// read `READERS` at a time, as `(db, key)` and the record seen. One the
/// collector moved since is read where it went: as a record of the tail,
/// with the same sequence number and base.
pub(super) fn checkpoint_chains(
    inner: &Inner,
    cp: &crate::log::checkpoint::Loaded,
) -> Vec<(KeyId, PartChangeRec)> {
    let named: Vec<(u16, &[u8], FlashLoc)> = cp
        .iter()
        .filter_map(|e| {
            let c = e.chunks.as_ref()?;
            let locs: Vec<FlashLoc> = c.chain_locs().collect();
            (!locs.is_empty()).then(|| locs.into_iter().map(move |l| (e.db, e.key, l)))
        })
        .flatten()
        .collect();
    read_parallel(&named, |&(db, key, loc)| {
        let (seq, value) = crate::log::read_record_blocking(inner, key, loc)?;
        let rec = PartChangeRec::of_record(seq, &value)?;
        Some(((db, Box::from(key)), rec))
    })
    .into_iter()
    .flatten()
    .collect()
}

/// Threads reading chains' images at once (the device serves several reads
/// in flight far faster than one after another).
const READERS: usize = 16;

/// The values of the records `cands` name (None where one cannot be read),
/// read `READERS` at a time.
fn read_all(inner: &Inner, key: &[u8], cands: &[&Cand]) -> Vec<Option<Vec<u8>>> {
    read_parallel(cands, |c| {
        crate::log::read_value_blocking(inner, key, c.loc, c.seq)
    })
}

/// `read` of each of `items`, in order, on up to `READERS` threads (None
/// where it gave none, or its thread failed).
fn read_parallel<T: Sync, R: Send>(
    items: &[T],
    read: impl Fn(&T) -> Option<R> + Sync,
) -> Vec<Option<R>> {
    if items.len() < 2 {
        return items.iter().map(&read).collect();
    }
    let per = items.len().div_ceil(READERS);
    let read = &read;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(per)
            .map(|group| scope.spawn(move || group.iter().map(read).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .zip(items.chunks(per))
            .flat_map(|(h, group)| {
                h.join()
                    .unwrap_or_else(|_| (0..group.len()).map(|_| None).collect())
            })
            .collect()
    })
}

/// Appends a materialized part as a chunk record (flushed with the key's
/// others by `flush`).
fn append(inner: &Inner, db: u16, key: &[u8], seq: u64, value: &[u8]) -> Option<FlashLoc> {
    let h = RecordHeader {
        kind: RecordKind::Chunk,
        db,
        key_len: key.len() as u32,
        value_len: value.len() as u32,
        seq,
        expire_at_ms: 0,
    };
    match inner
        .flash
        .writer
        .lock()
        .append(&h, key, value, inner.flash.capacity)
    {
        Ok(loc) => Some(loc),
        Err(e) => {
            tracing::error!("recovery: cannot write a part's changes applied: {e:?}");
            None
        }
    }
}

/// Writes out what `append` buffered (counted as the journal's device
/// bytes: they are the log's record of changes it took), before the
/// directory is resolved (which may read them back); false if that failed.
fn flush(inner: &Inner) -> bool {
    match inner
        .flash
        .writer
        .lock()
        .flush_counted(&inner.stats.device.journal)
    {
        Ok(()) => true,
        Err(e) => {
            tracing::error!("recovery: cannot write a part's changes applied: {e}");
            false
        }
    }
}

/// Syncs what `materialize` wrote (before the records it replaces may be
/// collected).
pub(super) fn sync(inner: &Inner) {
    if let Err(e) = inner.flash.writer.lock().sync() {
        tracing::error!("recovery: fsync failed: {e}");
    }
}

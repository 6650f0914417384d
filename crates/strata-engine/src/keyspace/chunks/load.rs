//! Loading the parts a command needs (`Need`): each cold part's record,
//! a spilled chain's records with it (`parts::chains`), or its image
//! alone for a read it answers (`chunked::peek`); all reads in flight
//! together.
//!
//! Invariants:
//! 1. A part is installed only if its entry still holds the same
//!    incarnation (`cid`) and the part still points at the record that was
//!    read (`loc`); otherwise the read is dropped and the caller plans
//!    again (no lock is held across I/O, engine invariant 5).
//! 2. Installing a part changes no state a client sees (the part was
//!    clean), only where its bytes are.

use super::{need_parts, Need};
use crate::base::FlashLoc;
use crate::base::ORDER_DEPTH;
use crate::base::STREAM_DEPTH;
use crate::base::STR_DEPTH;
use crate::flash::format;
use crate::index::{Entry, Slot};
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_record, fetch_value, FetchTarget, ANY_SEQ};
use crate::types::parts::{elem_hash, PeekPlan};
use crate::{EngineError, Inner};
use bytes::Bytes;
use smallvec::SmallVec;
use std::sync::Arc;

/// A cold part to load.
pub(crate) struct PartTarget {
    fetch: FetchTarget,
    cid: u64,
    /// The part's name (its index may shift with splits) and index.
    low: u64,
    depth: u8,
    index: usize,
    /// A spilled chain's records on that image (`parts::chains`), read
    /// with it.
    chain: Vec<FetchTarget>,
    /// One record of the part is read for a peek (`chunked::peek`):
    /// `Some(true)` its image, `Some(false)` a part change record.
    peek: Option<bool>,
}

impl Inner {
    /// The parts of `e` (the entry of `key` in `db`) that `need` names and
    /// that are not in RAM; each part named is marked used (the demoter's
    /// CLOCK, per part). Caller holds the shard lock.
    pub(crate) fn cold_parts(
        &self,
        db: usize,
        key: &[u8],
        e: &mut Entry,
        need: &Need,
    ) -> Vec<PartTarget> {
        let Slot::Chunked(c) = &mut e.slot else {
            return Vec::new();
        };
        // Blind adds only while the journal logs (blind invariant 4), and
        // not while demotion reads cold chains back for RAM.
        let blind = self.journal.enabled
            && !self
                .tiering
                .chains_squeezed
                .load(std::sync::atomic::Ordering::Relaxed);
        let named = need_parts(c, need, blind);
        let Some(d) = c.dir_mut() else {
            return Vec::new();
        };
        let mut cold = Vec::new();
        for i in named {
            d.touch(i);
            let p = d.part(i);
            // A read of elements RAM or one record answers (a peek).
            let plan = match need {
                Need::Reads(elems) if !p.resident => {
                    let mine: SmallVec<[&[u8]; 4]> = elems
                        .iter()
                        .filter(|m| d.part_of(elem_hash(m)) == i)
                        .map(|m| &m[..])
                        .collect();
                    d.peek_plan(i, &mine)
                }
                _ => PeekPlan::Load,
            };
            let (loc, seq, chain, peek) = match plan {
                PeekPlan::Ready => continue,
                PeekPlan::Read { loc, image } => {
                    let seq = if image { p.seq } else { ANY_SEQ };
                    (loc, seq, Vec::new(), Some(image))
                }
                PeekPlan::Load => {
                    let (false, Some(loc)) = (p.resident, p.loc) else {
                        continue;
                    };
                    // A spilled chain's records are read with the image.
                    let chain = d
                        .chains()
                        .get((p.low, p.depth))
                        .filter(|c| c.base.is_none() && c.image == Some(loc))
                        .map(|c| {
                            c.spilled_locs()
                                .iter()
                                .map(|&l| FetchTarget::new(self, db, key, l, ANY_SEQ))
                                .collect()
                        })
                        .unwrap_or_default();
                    (loc, p.seq, chain, None)
                }
            };
            cold.push(PartTarget {
                fetch: FetchTarget::new(self, db, key, loc, seq),
                cid: d.cid(),
                low: p.low,
                depth: p.depth,
                index: i,
                chain,
                peek,
            });
        }
        cold
    }
}

/// Reads the parts and installs each that is still wanted (invariant 1).
/// A part another command is reading already is not read again: this one
/// waits for that read, and its caller plans again.
pub(crate) async fn load_parts(
    inner: &Arc<Inner>,
    targets: Vec<PartTarget>,
) -> Result<(), EngineError> {
    let mut mine = Vec::with_capacity(targets.len());
    let mut other = Vec::new();
    let mut waits = Vec::new();
    {
        let mut loads = inner.flash.part_loads.lock();
        // In an exclusive section the other read's task could not install
        // its part (the section holds the shards): read it here too.
        let alone = crate::index::lock::in_section();
        for t in targets {
            match loads.get(&t.fetch.loc) {
                Some(_) if alone => other.push(t),
                Some(n) => {
                    // Registered under the lock, so the wake-up that ends
                    // the other read cannot be missed.
                    let mut w = Box::pin(n.clone().notified_owned());
                    w.as_mut().enable();
                    waits.push(w);
                }
                None => {
                    loads.insert(t.fetch.loc, Arc::new(tokio::sync::Notify::new()));
                    mine.push(t);
                }
            }
        }
    }
    // Ends this command's reads for the waiters, even if the command is
    // dropped before they complete (a client that hangs up).
    struct Done<'a>(&'a Inner, Vec<FlashLoc>);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            let mut loads = self.0.flash.part_loads.lock();
            for loc in &self.1 {
                if let Some(n) = loads.remove(loc) {
                    n.notify_waiters();
                }
            }
        }
    }
    let _done = Done(inner, mine.iter().map(|t| t.fetch.loc).collect());
    let reads = mine
        .iter()
        .chain(&other)
        .map(|t| fetch_value(inner.clone(), &t.fetch));
    let values = crate::keyspace::view::join_all(reads).await;
    // A spilled chain's records, read after the images (rarely: the
    // parts that gathered the most changes).
    let chained = mine.iter().chain(&other).flat_map(|t| &t.chain);
    let mut chain_values =
        crate::keyspace::view::join_all(chained.map(|c| fetch_record(inner.clone(), c)))
            .await
            .into_iter();
    let mut result = Ok(());
    for (t, v) in mine.iter().chain(&other).zip(values) {
        let records: Result<Vec<(u64, Bytes)>, EngineError> =
            chain_values.by_ref().take(t.chain.len()).collect();
        let r = v.and_then(|value| {
            let records = records?;
            if t.peek == Some(false) {
                // A part change record, for a peek.
                let Some(c) = format::part_change::decode(&value) else {
                    Stats::inc(&inner.stats.read_errors);
                    return Err(EngineError::Malformed);
                };
                if c.name.cid != t.cid {
                    Stats::inc(&inner.stats.read_errors);
                    return Err(EngineError::Corrupt("chunk of another collection"));
                }
                install(inner, t, &value, (c.name.low, c.name.depth), &records)?;
                Stats::inc(&inner.stats.chunk_loads);
                return Ok(());
            }
            let Some((name, body)) = format::decode_chunk(&value) else {
                Stats::inc(&inner.stats.read_errors);
                return Err(EngineError::Malformed);
            };
            if name.cid != t.cid {
                Stats::inc(&inner.stats.read_errors);
                return Err(EngineError::Corrupt("chunk of another collection"));
            }
            install(inner, t, &body, (name.low, name.depth), &records)?;
            Stats::inc(&inner.stats.chunk_loads);
            Ok(())
        });
        if result.is_ok() {
            result = r;
        }
    }
    drop(_done);
    for w in waits {
        w.await;
    }
    inner.wake_if_pressured();
    result
}

/// Installs a part read from the record `t` names, named `(low, depth)`,
/// with the records of its spilled chain (`records`, as `t.chain` names
/// them).
fn install(
    inner: &Inner,
    t: &PartTarget,
    body: &[u8],
    named: (u64, u8),
    records: &[(u64, Bytes)],
) -> Result<(), EngineError> {
    let loc = t.fetch.loc;
    let mut guard = inner.shard(&t.fetch.key).lock();
    let sh = &mut *guard;
    let Some(e) = sh.dbs[t.fetch.db].get_mut(&t.fetch.key) else {
        return Ok(());
    };
    let r = e.with_dir(&mut sh.acct, |d| {
        if d.cid() != t.cid {
            return Ok(());
        }
        // A hash range or list position finds the part that holds it now
        // (a record of a wider range installs filtered); an order part is
        // found by its id.
        let i = if t.depth == ORDER_DEPTH || t.depth == STREAM_DEPTH || t.depth == STR_DEPTH {
            match d.find_part(t.low, t.depth, t.index) {
                Some(i) => i,
                None => return Ok(()),
            }
        } else {
            d.part_of(t.low)
        };
        // A cold chain's part: its image with the steps since applied
        // (`parts::chains`), those of its spilled records first. A chain
        // that spilled or moved records since the plan is read again.
        if let Some(image) = t.peek {
            if d.put_peek(i, loc, image, body)? {
                Stats::inc(&inner.stats.part_peeks);
            }
            return Ok(());
        }
        let chain = (d.part_name(i) == named)
            .then(|| d.chains().get(named))
            .flatten()
            .filter(|c| c.base.is_none() && c.image == Some(loc));
        let Some(chain) = chain else {
            if !records.is_empty() {
                return Ok(());
            }
            return d.install(i, loc, body, named).map(|_| ());
        };
        let spilled = chain.spilled_locs();
        if spilled.len() != t.chain.len() || spilled.iter().zip(&t.chain).any(|(l, c)| *l != c.loc)
        {
            return Ok(());
        }
        let recs: Vec<(u64, &[u8])> = records.iter().map(|(s, v)| (*s, &v[..])).collect();
        let body =
            format::part_change::apply_chain(body, named, chain.image_seq, &recs, &chain.pending)
                .ok_or(crate::types::Malformed)?;
        if d.install(i, loc, &body, named)? {
            // The base of the next change is what the chain's records hold:
            // with blind adds not logged yet, none (an image comes next).
            d.chains_mut().update(named, |c| {
                c.base = (!c.unlogged()).then(|| bytes::Bytes::from(body));
            });
            Stats::inc(&inner.stats.part_chain_loads);
            Stats::add(&inner.stats.part_chain_spilled_reads, records.len() as u64);
        }
        Ok(())
    });
    match r {
        Some(Err(_)) => {
            Stats::inc(&inner.stats.read_errors);
            Err(EngineError::Malformed)
        }
        _ => Ok(()),
    }
}

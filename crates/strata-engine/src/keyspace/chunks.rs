//! The parts of chunked collections (`types::chunked`, docs/collections.md)
//! as the keyspace handles them: which parts a command needs in RAM, and
//! loading them (one device read per part, all in flight together).
//!
//! Invariants:
//! 1. A part is installed only if its entry still holds the same
//!    incarnation (`cid`) and the part still points at the record that was
//!    read (`loc`); otherwise the read is dropped and the caller plans
//!    again (no lock is held across I/O, engine invariant 5).
//! 2. Installing a part changes no state a client sees (the part was
//!    clean), only where its bytes are.

use crate::base::FlashLoc;
use crate::base::ORDER_DEPTH;
use crate::base::STREAM_DEPTH;
use crate::base::STR_DEPTH;
use crate::flash::format;
use crate::index::{Entry, Slot, Value};
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_value, FetchTarget};
use crate::types::bigstr::STR_CHUNKED_AT;
use crate::types::chunked::{zkey, ChunkedZSet};
use crate::types::parts::elem_hash;
use crate::types::stream::StreamNeed;
use crate::types::{ChunkedStr, Collection};
use crate::{EngineError, Inner};
use bytes::Bytes;
use smallvec::SmallVec;
use std::sync::Arc;

/// Which elements of a collection a command touches.
#[derive(Clone, Debug)]
pub enum Need {
    /// All of them (iteration, counts by content, whole reads).
    Whole,
    /// Only these (fields, members): their parts are loaded, no others.
    Elems(Vec<Bytes>),
    /// Elements a command sets or adds (HSET, SADD), with the bytes of each
    /// one's value (0 for a set member): as `Elems`, but a part on flash whose
    /// membership filter rules its one element out is not read
    /// (`chunked::blind`: the element is added to it blindly).
    Adds(Vec<(Bytes, usize)>),
    /// One HSCAN / SSCAN step: the parts from hash `from` holding about
    /// `count` elements (`Chunked::scan_parts`).
    Scan { from: u64, count: usize },
    /// The element at position `seed % len` (a random pick: SRANDMEMBER,
    /// SPOP, HRANDFIELD without a count). Planned and run under the same
    /// locks, so the closure computes the same position.
    Pick(u64),
    /// Only the elements at these list indexes, each range inclusive,
    /// negative from the end, clamped as LRANGE clamps (pushes and pops at
    /// either end, LINDEX, LSET, LRANGE, LTRIM's two ends).
    Indexes(SmallVec<[(i64, i64); 2]>),
    /// Sorted-set members a command reads or changes, each with the score
    /// it may get: their member parts and the order parts of their old and
    /// new (score, member) (planned in two rounds: a member's old score is
    /// known once its member part is in RAM). ZADD, ZINCRBY, ZREM, ZRANK.
    ZMembers(Vec<(Bytes, ZTo)>),
    /// Sorted-set ranks (inclusive ranges, negative from the end, clamped
    /// as ZRANGE clamps): the order parts holding them, and with `members`
    /// (the command removes them: pops) the member parts of the members
    /// there, once those order parts are in RAM.
    ZRanks {
        ranges: SmallVec<[(i64, i64); 2]>,
        members: bool,
        /// The ranks count from the highest score (ZREVRANGE).
        rev: bool,
    },
    /// Sorted-set members with a score inside the bounds: the order parts
    /// that hold them (found from the parts' bounds, in RAM), and with
    /// `members` their member parts once those are in RAM.
    ZScores {
        min: std::ops::Bound<f64>,
        max: std::ops::Bound<f64>,
        members: bool,
    },
    /// The two order parts of a sorted set where a score range's bounds
    /// fall (what `ChunkedZSet::score_ranks` reads): a streamed score range
    /// starts from them.
    ZScoreEnds {
        min: std::ops::Bound<f64>,
        max: std::ops::Bound<f64>,
    },
    /// One step of a streamed whole read (`Engine::stream_coll`): the
    /// directory's parts from `from` (before `to`) whose bodies together
    /// stay within `bytes` (at least one part; `batch_end`).
    Parts {
        from: usize,
        to: usize,
        bytes: usize,
    },
    /// One window of a read of several hashes, sets or sorted sets by
    /// element hash (`Engine::stream_windows`): the parts (a sorted set's
    /// member parts) whose range meets `[lo, hi]`.
    Hashes { lo: u64, hi: u64 },
    /// A stream command's parts (`StreamNeed`, planned on the parts' ids).
    Stream(Vec<StreamNeed>),
}

/// The score a sorted-set member may get (`Need::ZMembers`).
#[derive(Clone, Copy, Debug)]
pub enum ZTo {
    /// It keeps its score or is removed.
    Stay,
    Score(f64),
    /// Its score plus this (0 plus this if it is new).
    Incr(f64),
}

impl Need {
    /// `Need::Indexes` of these ranges.
    pub fn indexes(ranges: &[(i64, i64)]) -> Need {
        Need::Indexes(SmallVec::from_slice(ranges))
    }

    /// `Need::ZRanks` of these ranges.
    pub fn zranks(ranges: &[(i64, i64)], members: bool, rev: bool) -> Need {
        Need::ZRanks {
            ranges: SmallVec::from_slice(ranges),
            members,
            rev,
        }
    }
}

/// An LRANGE-style inclusive index range over `len` elements, clamped;
/// None if empty.
pub fn clamp_indexes(first: i64, last: i64, len: usize) -> Option<(usize, usize)> {
    let n = len as i64;
    let a = if first < 0 { (first + n).max(0) } else { first };
    let b = if last < 0 { last + n } else { last.min(n - 1) };
    (a <= b && a < n && b >= 0).then_some((a as usize, b as usize))
}

/// The end of the batch of parts from `from` (before `to`) whose bodies
/// together stay within `bytes`, at least one part (none if `from >= to`).
pub fn batch_end(d: &dyn crate::types::parts::Dir, from: usize, to: usize, bytes: usize) -> usize {
    let mut j = from;
    let mut sum = 0usize;
    while j < to {
        let b = d.part(j).body as usize;
        if j > from && sum + b > bytes {
            break;
        }
        sum += b;
        j += 1;
    }
    j
}

/// The parts of chunked `c` that `need` names, in order, each once: by
/// its directory, or, for a stream's or a sorted set's own needs, by the
/// type's own plan.
fn need_parts(c: &Collection, need: &Need, blind: bool) -> SmallVec<[usize; 4]> {
    let Some(d) = c.dir() else {
        return SmallVec::new();
    };
    let stream = match c {
        Collection::Stream(s) => Some(&**s),
        _ => None,
    };
    let zset = match c {
        Collection::ZSet(z) => z.chunked(),
        _ => None,
    };
    let mut v: SmallVec<[usize; 4]> = match need {
        Need::Whole => return (0..d.part_count()).collect(),
        Need::Scan { from, count } => return d.scan_parts(*from, *count).collect(),
        Need::Parts { from, to, bytes } => {
            let to = (*to).min(d.part_count());
            return (*from..batch_end(d, *from, to, *bytes)).collect();
        }
        Need::Pick(seed) => return d.part_at(pick_index(*seed, d.len())).into_iter().collect(),
        // Lists have positions, not hashes; a sorted set's member parts
        // come first among its parts.
        Need::Hashes { .. } if d.head_span().is_some() => return (0..d.part_count()).collect(),
        Need::Hashes { lo, hi } => return (d.part_of(*lo)..=d.part_of(*hi)).collect(),
        Need::Elems(elems) => elems.iter().map(|m| d.part_of(elem_hash(m))).collect(),
        Need::Adds(elems) => {
            let v: SmallVec<[usize; 4]> =
                elems.iter().map(|(m, _)| d.part_of(elem_hash(m))).collect();
            // A part that gets one element, which it can take blindly, is
            // not read (blind invariant 3: one blind add per part).
            let alone = |i: usize| v.iter().filter(|&&j| j == i).count() == 1;
            let blindly = |i: usize, m: &[u8], value: usize| {
                blind && alone(i) && d.adds_blind(i, m, crate::types::packed_len(m.len()) + value)
            };
            v.iter()
                .zip(elems)
                .filter(|&(&i, (m, value))| !blindly(i, m, *value))
                .map(|(&i, _)| i)
                .collect()
        }
        Need::Stream(needs) => match stream {
            Some(st) => return st.need_parts(needs),
            None => (0..d.part_count()).collect(),
        },
        Need::ZMembers(ms) => match zset {
            Some(z) => zset_member_parts(z, ms),
            None => SmallVec::new(),
        },
        Need::ZRanks {
            ranges,
            members,
            rev,
        } => match zset {
            Some(z) => {
                let n = z.len();
                let asc = ranges.iter().filter_map(|&(a, b)| {
                    let (a, b) = clamp_indexes(a, b, n)?;
                    Some(if *rev { (n - 1 - b, n - a) } else { (a, b + 1) })
                });
                zset_rank_parts(z, asc, *members)
            }
            None => SmallVec::new(),
        },
        Need::ZScoreEnds { min, max } => match zset {
            Some(z) => {
                let mp = z.members.parts().len();
                let (lo, hi) = z.score_parts(*min, *max);
                let mut v = SmallVec::new();
                v.push(mp + lo);
                v.push(mp + hi);
                v
            }
            None => SmallVec::new(),
        },
        Need::ZScores { min, max, members } => match zset {
            Some(z) => zset_score_parts(z, *min, *max, *members),
            None => SmallVec::new(),
        },
        // (Pushes, not `collect`: every push or pop of a chunked list
        // comes here.)
        Need::Indexes(ranges) => {
            let mut v = SmallVec::new();
            for &(a, b) in ranges {
                let Some((a, b)) = clamp_indexes(a, b, d.len()) else {
                    continue;
                };
                if let (Some(pa), Some(pb)) = (d.part_at(a), d.part_at(b)) {
                    for i in pa..=pb {
                        v.push(i);
                    }
                }
            }
            v
        }
    };
    v.sort_unstable();
    v.dedup();
    v
}

/// The parts of a chunked sorted set that `Need::ZMembers(ms)` names, as
/// far as RAM tells: each member's part, and once that is in RAM the order
/// parts of its old and new zkeys.
fn zset_member_parts(z: &ChunkedZSet, ms: &[(Bytes, ZTo)]) -> SmallVec<[usize; 4]> {
    let mp = z.members.parts().len();
    let mut v = SmallVec::new();
    for (m, to) in ms {
        let pi = z.members.part_of(elem_hash(m));
        v.push(pi);
        if !z.members.parts()[pi].is_resident() {
            continue;
        }
        let old = z.score(m);
        if let Some(s) = old {
            v.push(mp + z.order.part_for(&zkey(s, m)));
        }
        let new = match *to {
            ZTo::Stay => None,
            ZTo::Score(s) => Some(s),
            ZTo::Incr(x) => Some(old.unwrap_or(0.0) + x),
        };
        if let Some(s) = new.filter(|s| !s.is_nan()) {
            v.push(mp + z.order.part_for(&zkey(s, m)));
        }
    }
    v
}

/// The parts of a chunked sorted set that `Need::ZRanks` names, as far as
/// RAM tells (the member parts once the order parts are in RAM).
fn zset_rank_parts(
    z: &ChunkedZSet,
    ranges: impl Iterator<Item = (usize, usize)>,
    members: bool,
) -> SmallVec<[usize; 4]> {
    let mp = z.members.parts().len();
    let mut v = SmallVec::new();
    for (a, b) in ranges {
        let parts = z.order.parts_for_ranks(a, b);
        let resident = parts.clone().all(|i| z.order.part(i).is_resident());
        v.extend(parts.map(|i| mp + i));
        if members && resident {
            for (m, _) in z.range(a, b) {
                v.push(z.members.part_of(elem_hash(m)));
            }
        }
    }
    v
}

/// The parts of a chunked sorted set that `Need::ZScores` names, as far as
/// RAM tells: the order parts from the one where the lower bound falls to
/// the one where the upper bound falls (by the parts' bounds), then the
/// member parts of the members in range.
fn zset_score_parts(
    z: &ChunkedZSet,
    min: std::ops::Bound<f64>,
    max: std::ops::Bound<f64>,
    members: bool,
) -> SmallVec<[usize; 4]> {
    let mp = z.members.parts().len();
    let (lo, hi) = z.score_parts(min, max);
    let mut v: SmallVec<[usize; 4]> = (lo..=hi).map(|i| mp + i).collect();
    if members && (lo..=hi).all(|i| z.order.part(i).is_resident()) {
        let (a, b) = z.score_ranks(min, max);
        for (m, _) in z.range(a, b) {
            v.push(z.members.part_of(elem_hash(m)));
        }
    }
    v
}

/// A cold part to load.
pub(crate) struct PartTarget {
    fetch: FetchTarget,
    cid: u64,
    /// The part's name (its index may shift with splits) and index.
    low: u64,
    depth: u8,
    index: usize,
}

impl Inner {
    /// The slot a new value of a key takes: a big hash or set past
    /// `CHUNKED_AT`, or a string past `STR_CHUNKED_AT`, is stored chunked
    /// (a new incarnation, `cid`), anything else hot and unbacked.
    pub(crate) fn new_slot(&self, value: Value) -> Slot {
        match value {
            Value::Coll(mut c) if c.wants_chunks() => {
                c.make_chunked(self.next_seq());
                Slot::Chunked(c)
            }
            Value::Str(b) if b.len() > STR_CHUNKED_AT => {
                let s = ChunkedStr::from_bytes(self.next_seq(), &b);
                Slot::Chunked(Box::new(Collection::Str(Box::new(s))))
            }
            // Cut into parts already (`store`): a new incarnation.
            Value::Coll(mut c) if matches!(*c, Collection::Str(_)) => {
                if let Collection::Str(s) = &mut *c {
                    s.set_cid(self.next_seq());
                }
                Slot::Chunked(c)
            }
            v => Slot::hot_value(v, None),
        }
    }

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
            if let (false, Some(loc)) = (p.resident, p.loc) {
                cold.push(PartTarget {
                    fetch: FetchTarget::new(self, db, key, loc, p.seq),
                    cid: d.cid(),
                    low: p.low,
                    depth: p.depth,
                    index: i,
                });
            }
        }
        cold
    }
}

/// The position a `Need::Pick(seed)` names in a collection of `len`
/// elements (0 when empty).
pub fn pick_index(seed: u64, len: usize) -> usize {
    if len == 0 {
        0
    } else {
        (seed % len as u64) as usize
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
    let values = super::view::join_all(reads).await;
    let mut result = Ok(());
    for (t, v) in mine.iter().chain(&other).zip(values) {
        let r = v.and_then(|value| {
            let Some((name, body)) = format::decode_chunk(&value) else {
                Stats::inc(&inner.stats.read_errors);
                return Err(EngineError::Malformed);
            };
            if name.cid != t.cid {
                Stats::inc(&inner.stats.read_errors);
                return Err(EngineError::Corrupt("chunk of another collection"));
            }
            install(inner, t, t.fetch.loc, &body, (name.low, name.depth))?;
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

/// Installs a part read from the record at `loc`, named `(low, depth)`.
fn install(
    inner: &Inner,
    t: &PartTarget,
    loc: FlashLoc,
    body: &[u8],
    named: (u64, u8),
) -> Result<(), EngineError> {
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
        // (`parts::chains`).
        let steps = (d.part_name(i) == named)
            .then(|| d.chains().get(named))
            .flatten()
            .filter(|c| c.base.is_none() && c.image == Some(loc))
            .map(|c| c.pending.clone());
        let Some(steps) = steps else {
            return d.install(i, loc, body, named).map(|_| ());
        };
        let body = format::part_change::apply_steps(body, &steps).ok_or(crate::types::Malformed)?;
        if d.install(i, loc, &body, named)? {
            // The base of the next change is what the chain's records hold:
            // with blind adds not logged yet, none (an image comes next).
            d.chains_mut().update(named, |c| {
                c.base = (!c.unlogged()).then(|| bytes::Bytes::from(body));
            });
            Stats::inc(&inner.stats.part_chain_loads);
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

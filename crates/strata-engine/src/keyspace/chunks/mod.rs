//! The parts of chunked collections (`types::chunked`, docs/collections.md)
//! as the keyspace handles them: which parts a command needs in RAM
//! (`Need`, planned here), and loading them (`load`: one device read per
//! part, all in flight together).

mod load;

pub(crate) use load::{load_parts, PartTarget};

use crate::index::{Slot, Value};
use crate::types::bigstr::STR_CHUNKED_AT;
use crate::types::chunked::{zkey, ChunkedZSet};
use crate::types::parts::elem_hash;
use crate::types::stream::StreamNeed;
use crate::types::{ChunkedStr, Collection};
use crate::Inner;
use bytes::Bytes;
use smallvec::SmallVec;

/// Which elements of a collection a command touches.
#[derive(Clone, Debug)]
pub enum Need {
    /// All of them (iteration, counts by content, whole reads).
    Whole,
    /// Only these (fields, members): their parts are loaded, no others.
    Elems(Vec<Bytes>),
    /// As `Elems`, for a command that only reads them (HGET, SISMEMBER
    /// ...): a part on flash that can answer from its image alone is read
    /// so (`chunked::peek`), not loaded.
    Reads(Vec<Bytes>),
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
pub(super) fn need_parts(c: &Collection, need: &Need, blind: bool) -> SmallVec<[usize; 4]> {
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
        Need::Elems(elems) | Need::Reads(elems) => {
            elems.iter().map(|m| d.part_of(elem_hash(m))).collect()
        }
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

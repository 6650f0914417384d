//! Sorted-set commands, as Redis 7.0 answers them: ZADD ZINCRBY ZREM ZCARD
//! ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT ZRANGE ZRANGESTORE
//! ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX
//! ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZMPOP
//! ZRANDMEMBER ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE
//! ZINTERCARD ZSCAN, in rooms: `score` (how scores parse and print),
//! `range` (the ZRANGE family, counts and removals by range), `pop`
//! (pops, ZMPOP, the blocking pops' bodies, ZRANDMEMBER), `ops` (ZUNION,
//! ZINTER, ZDIFF and their STOREs, ZINTERCARD, ZSCAN). Scores are replied as Redis 7.0 prints them (`%.17g`,
//! `inf`), as bulk strings in RESP2 and doubles in RESP3.

mod ops;
mod pop;
mod range;
mod score;

pub use ops::{zdiff, zdiffstore, zinter, zintercard, zinterstore, zscan, zunion, zunionstore};
pub use pop::{bzpop_on, parse_zmpop, zmpop, zmpop_on, zpopmax, zpopmin, zrandmember};
pub use range::{
    normalize_for_store, zcount, zlexcount, zrange, zrangebylex, zrangebyscore, zrangestore,
    zremrangebylex, zremrangebyrank, zremrangebyscore, zrevrange, zrevrangebylex, zrevrangebyscore,
};
pub use score::{fmt_score, parse_score, write_double_text, write_score};

use super::hash::{parse_cursor, parse_scan_opts, pick_indexes, scan_positions, write_empty_scan};
use super::list::clamp_range;
use super::{is, parse_i64};
use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use crate::registry::Flags;
use bytes::{Bytes, BytesMut};
use rand::Rng;
use std::ops::Bound;
use strata_engine::types::{EncodingLimits, ZSet};
use strata_engine::{Collection, EngineError, KeysView, Need, Value, ValueRef, ValueType, ZTo};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_null_array, Version,
};

const NOT_FLOAT_RANGE: &str = "ERR min or max is not a float";
const NOT_LEX_RANGE: &str = "ERR min or max not valid string range item";
const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

pub fn get<'v>(view: &'v mut KeysView<'_>, key: &[u8]) -> Result<Option<&'v ZSet>, EngineError> {
    match view.coll(key, ValueType::ZSet)? {
        Some(Collection::ZSet(z)) => Ok(Some(z)),
        _ => Ok(None),
    }
}

pub fn get_mut<'v>(
    view: &'v mut KeysView<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'v mut ZSet>, EngineError> {
    match view.coll_mut(key, ValueType::ZSet, create)? {
        Some(Collection::ZSet(z)) => Ok(Some(z)),
        _ => Ok(None),
    }
}

/// Runs `f` on the sorted set at `key` (None if missing), or replies
/// WRONGTYPE.
pub(crate) fn read(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    f: impl FnOnce(Option<&ZSet>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_key(key.clone(), move |view, out, v| match get(view, &key) {
        Ok(z) => f(z, out, v),
        Err(e) => reply::engine(out, &e),
    })
}

/// As `read`, touching only the members `ms` names (none for a count): of
/// a chunked sorted set only the member parts holding them are read.
fn read_members(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    ms: Vec<Bytes>,
    f: impl FnOnce(Option<&ZSet>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    read_need(ctx, key, Need::Elems(ms), f)
}

/// As `read`, touching only what `need` names.
pub(crate) fn read_need(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    need: Need,
    f: impl FnOnce(Option<&ZSet>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_key_need(key.clone(), need, move |view, out, v| {
        match get(view, &key) {
            Ok(z) => f(z, out, v),
            Err(e) => reply::engine(out, &e),
        }
    })
}

// ------------------------------------------------------------------ ZADD

struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one ZADD pair did.
enum AddOutcome {
    Added(f64),
    Updated(f64),
    /// Unchanged but processed (same score): its score.
    Same(f64),
    Nop,
    Nan,
}

/// Redis's `zsetAdd` on one member. `big`: the set has (or this member
/// gives it) the skiplist encoding, where a score of -0 is kept; a listpack
/// stores it as 0 (the reply still shows the computed score).
fn zset_add(
    z: &mut ZSet,
    m: &[u8],
    score: f64,
    f: &AddFlags,
    big: &mut bool,
    lim: &EncodingLimits,
) -> AddOutcome {
    let stored = |s: f64, big: bool| if s == 0.0 && !big { 0.0 } else { s };
    match z.score(m) {
        Some(cur) => {
            if f.nx {
                return AddOutcome::Nop;
            }
            let mut new = score;
            if f.incr {
                new += cur;
                if new.is_nan() {
                    return AddOutcome::Nan;
                }
            }
            if (f.lt && new >= cur) || (f.gt && new <= cur) {
                return AddOutcome::Nop;
            }
            if new != cur {
                z.insert(m, stored(new, *big));
                AddOutcome::Updated(new)
            } else {
                AddOutcome::Same(new)
            }
        }
        None => {
            if f.xx {
                return AddOutcome::Nop;
            }
            if z.len() + 1 > lim.zset_entries || m.len() > lim.zset_value {
                *big = true;
            }
            z.insert(m, stored(score, *big));
            AddOutcome::Added(score)
        }
    }
}

fn zadd_generic(ctx: &mut Ctx<'_>, key: Bytes, rest: &[Bytes], mut f: AddFlags) -> Outcome {
    let mut i = 0;
    while i < rest.len() {
        let o = &rest[i];
        if is(o, "nx") {
            f.nx = true;
        } else if is(o, "xx") {
            f.xx = true;
        } else if is(o, "ch") {
            f.ch = true;
        } else if is(o, "incr") {
            f.incr = true;
        } else if is(o, "gt") {
            f.gt = true;
        } else if is(o, "lt") {
            f.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &rest[i..];
    if pairs.is_empty() || pairs.len() & 1 != 0 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    if f.nx && f.xx {
        reply::error(
            ctx.out,
            "ERR XX and NX options at the same time are not compatible",
        );
        return Outcome::Done;
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        reply::error(
            ctx.out,
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        );
        return Outcome::Done;
    }
    if f.incr && pairs.len() > 2 {
        reply::error(
            ctx.out,
            "ERR INCR option supports a single increment-element pair",
        );
        return Outcome::Done;
    }
    let mut items = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks(2) {
        let Some(s) = parse_score(&p[0]) else {
            reply::error(ctx.out, reply::NOT_FLOAT);
            return Outcome::Done;
        };
        items.push((s, p[1].clone()));
    }
    // Of a chunked set, only the parts of these members and of their old
    // and new places in the order are read.
    let need = Need::ZMembers(
        items
            .iter()
            .map(|(s, m)| {
                (
                    m.clone(),
                    if f.incr {
                        ZTo::Incr(*s)
                    } else {
                        ZTo::Score(*s)
                    },
                )
            })
            .collect(),
    );
    ctx.with_key_need(key.clone(), need, move |view, out, v| {
        let lim = view.encoding_limits();
        let big_now = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(z) => z.map(|z| z.big),
        };
        // Redis 7.0 creates a new set as a skiplist when its first member
        // is longer than the listpack limit, else as a listpack that
        // converts when a member or the length outgrows it.
        let mut big = big_now.unwrap_or_else(|| {
            lim.zset_entries == 0 || items.first().is_some_and(|(_, m)| m.len() > lim.zset_value)
        });
        let exists = big_now.is_some();
        let (mut added, mut updated, mut processed, mut last) = (0i64, 0i64, 0, 0.0);
        if exists || !f.xx {
            let Ok(Some(z)) = get_mut(view, &key, true) else {
                return reply::engine(out, &EngineError::WrongType);
            };
            for (s, m) in &items {
                match zset_add(z, m, *s, &f, &mut big, &lim) {
                    AddOutcome::Added(n) => {
                        added += 1;
                        processed += 1;
                        last = n;
                    }
                    AddOutcome::Updated(n) => {
                        updated += 1;
                        processed += 1;
                        last = n;
                    }
                    AddOutcome::Same(n) => {
                        processed += 1;
                        last = n;
                    }
                    AddOutcome::Nop => {}
                    AddOutcome::Nan => return reply::error(out, NAN_SCORE),
                }
            }
            if added + updated == 0 {
                view.unchanged(&key);
            }
        }
        if f.incr {
            if processed > 0 {
                write_score(out, v, last);
            } else {
                write_null(out, v);
            }
        } else {
            write_integer(out, if f.ch { added + updated } else { added });
        }
    })
}

fn no_flags() -> AddFlags {
    AddFlags {
        nx: false,
        xx: false,
        gt: false,
        lt: false,
        ch: false,
        incr: false,
    }
}

/// ZADD with its arguments after the key (`[options] score member ...`);
/// GEOADD adds through it.
pub fn zadd_args(ctx: &mut Ctx<'_>, key: Bytes, rest: &[Bytes]) -> Outcome {
    zadd_generic(ctx, key, rest, no_flags())
}

pub fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    zadd_generic(ctx, args[1].clone(), &args[2..], no_flags())
}

pub fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let f = AddFlags {
        incr: true,
        ..no_flags()
    };
    zadd_generic(ctx, args[1].clone(), &args[2..], f)
}

pub fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    let ms: Vec<Bytes> = args[2..].to_vec();
    let need = Need::ZMembers(ms.iter().map(|m| (m.clone(), ZTo::Stay)).collect());
    ctx.with_key_need(key.clone(), need, move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(Some(z)) if ms.iter().any(|m| z.score(m).is_some()) => {}
            Ok(_) => return write_integer(out, 0),
        }
        let mut n = 0;
        if let Ok(Some(z)) = get_mut(view, &key, false) {
            for m in &ms {
                n += z.remove(m) as i64;
            }
        }
        write_integer(out, n);
    })
}

pub fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    read_members(ctx, &args[1], Vec::new(), |z, out, _| {
        write_integer(out, z.map_or(0, |z| z.len()) as i64)
    })
}

pub fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let m = args[2].clone();
    read_members(ctx, &args[1], vec![m.clone()], move |z, out, v| {
        match z.and_then(|z| z.score(&m)) {
            Some(s) => write_score(out, v, s),
            None => write_null(out, v),
        }
    })
}

pub fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let ms: Vec<Bytes> = args[2..].to_vec();
    read_members(ctx, &args[1], ms.clone(), move |z, out, v| {
        write_array_len(out, ms.len());
        for m in &ms {
            match z.and_then(|z| z.score(m)) {
                Some(s) => write_score(out, v, s),
                None => write_null(out, v),
            }
        }
    })
}

fn rank_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> Outcome {
    let m = args[2].clone();
    let (key, need) = (
        args[1].clone(),
        Need::ZMembers(vec![(m.clone(), ZTo::Stay)]),
    );
    read_need(ctx, &key, need, move |z, out, v| {
        match z.and_then(|z| z.rank(&m).map(|r| (r, z.len()))) {
            Some((r, n)) => write_integer(out, if rev { n - 1 - r } else { r } as i64),
            None => write_null(out, v),
        }
    })
}

pub fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    rank_generic(ctx, args, false)
}
pub fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    rank_generic(ctx, args, true)
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("zadd", -4, WF, K1, "sorted_set", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", zadd),
    cmd("zincrby", 4, WF, K1, "sorted_set", "Increments the score of a member in a sorted set.", zincrby),
    cmd("zrem", -3, WD, K1, "sorted_set", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", zrem),
    cmd("zcard", 2, RF, K1, "sorted_set", "Returns the number of members in a sorted set.", zcard),
    cmd("zscore", 3, RF, K1, "sorted_set", "Returns the score of a member in a sorted set.", zscore),
    cmd("zmscore", -3, RF, K1, "sorted_set", "Returns the score of one or more members in a sorted set.", zmscore),
    cmd("zrank", 3, RF, K1, "sorted_set", "Returns the index of a member in a sorted set ordered by ascending scores.", zrank),
    cmd("zrevrank", 3, RF, K1, "sorted_set", "Returns the index of a member in a sorted set ordered by descending scores.", zrevrank),
    cmd("zcount", 4, RF, K1, "sorted_set", "Returns the count of members in a sorted set that have scores within a range.", zcount),
    cmd("zlexcount", 4, RF, K1, "sorted_set", "Returns the number of members in a sorted set within a lexicographical range.", zlexcount),
    cmd("zrange", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of indexes.", zrange),
    cmd("zrangestore", -5, W, K2, "sorted_set", "Stores a range of members from sorted set in a key.", zrangestore).with(Flags::READS_SOURCES),
    cmd("zrevrange", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of indexes in reverse order.", zrevrange),
    cmd("zrangebyscore", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of scores.", zrangebyscore),
    cmd("zrevrangebyscore", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of scores in reverse order.", zrevrangebyscore),
    cmd("zrangebylex", -4, R, K1, "sorted_set", "Returns members in a sorted set within a lexicographical range.", zrangebylex),
    cmd("zrevrangebylex", -4, R, K1, "sorted_set", "Returns members in a sorted set within a lexicographical range in reverse order.", zrevrangebylex),
    cmd("zremrangebyrank", 4, &["write"], K1, "sorted_set", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", zremrangebyrank),
    cmd("zremrangebyscore", 4, &["write"], K1, "sorted_set", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", zremrangebyscore),
    cmd("zremrangebylex", 4, &["write"], K1, "sorted_set", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", zremrangebylex),
    cmd("zpopmin", -2, WD, K1, "sorted_set", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopmin),
    cmd("zpopmax", -2, WD, K1, "sorted_set", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopmax),
    cmd("zmpop", -4, &["write", "movablekeys"], K0, "sorted_set", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", zmpop),
    cmd("zrandmember", -2, R, K1, "sorted_set", "Returns one or more random members from a sorted set.", zrandmember),
    cmd("zunion", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the union of multiple sorted sets.", zunion),
    cmd("zinter", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the intersect of multiple sorted sets.", zinter),
    cmd("zdiff", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the difference between multiple sorted sets.", zdiff),
    cmd("zunionstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted_set", "Stores the union of multiple sorted sets in a key.", zunionstore).with(Flags::READS_SOURCES),
    cmd("zinterstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted_set", "Stores the intersect of multiple sorted sets in a key.", zinterstore).with(Flags::READS_SOURCES),
    cmd("zdiffstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted_set", "Stores the difference of multiple sorted sets in a key.", zdiffstore).with(Flags::READS_SOURCES),
    cmd("zintercard", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the number of members of the intersect of multiple sorted sets.", zintercard),
    cmd("zscan", -3, R, K1, "sorted_set", "Iterates over members and scores of a sorted set.", zscan),
];

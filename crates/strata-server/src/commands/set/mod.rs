//! Set commands: SADD SREM SISMEMBER SMISMEMBER SCARD SMEMBERS SRANDMEMBER
//! SPOP SMOVE SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF
//! SDIFFSTORE SSCAN, as Redis 7.0 answers them (RESP3: sets as `~`).
//!
//! Rooms: this file holds the commands on one set; `ops` the operations
//! over several (SINTER SUNION SDIFF, their STORE forms, SINTERCARD).

mod ops;

pub use ops::{sdiff, sdiffstore, sinter, sintercard, sinterstore, sunion, sunionstore};

use super::hash::{parse_cursor, parse_scan_opts, pick_indexes, scan_positions, write_empty_scan};
use super::parse_i64;
use crate::base::reply;
use crate::command::{cmd, reads, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use crate::registry::Flags;
use bytes::{Bytes, BytesMut};
use rand::Rng;
use strata_engine::types::Set;
use strata_engine::{Collection, EngineError, KeysView, ValueRef, ValueType};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_set_len, Version,
};

fn get<'v>(view: &'v mut KeysView<'_>, key: &[u8]) -> Result<Option<&'v Set>, EngineError> {
    match view.coll(key, ValueType::Set)? {
        Some(Collection::Set(s)) => Ok(Some(s)),
        _ => Ok(None),
    }
}

/// As `get`, counting no keyspace hit or miss: a later look at a set the
/// command already looked up (a window of a set operation).
fn peek<'v>(view: &'v mut KeysView<'_>, key: &[u8]) -> Option<&'v Set> {
    match view.peek(key) {
        Some(ValueRef::Coll(Collection::Set(s))) => Some(s),
        _ => None,
    }
}

fn get_mut<'v>(
    view: &'v mut KeysView<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'v mut Set>, EngineError> {
    match view.coll_mut(key, ValueType::Set, create)? {
        Some(Collection::Set(s)) => Ok(Some(s)),
        _ => Ok(None),
    }
}

/// Runs `f` on the set at `key` for reading only the members `members`
/// (see `Ctx::with_key_reads`).
fn read_members(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    members: Vec<Bytes>,
    f: impl FnOnce(Option<&Set>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_key_reads(key.clone(), members, move |view, out, v| {
        match get(view, &key) {
            Ok(s) => f(s, out, v),
            Err(e) => reply::engine(out, &e),
        }
    })
}

fn read(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    f: impl FnOnce(Option<&Set>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_key(key.clone(), move |view, out, v| match get(view, &key) {
        Ok(s) => f(s, out, v),
        Err(e) => reply::engine(out, &e),
    })
}

pub fn sadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    let members: Vec<Bytes> = args[2..].to_vec();
    let adds = members.iter().map(|m| (m.clone(), 0)).collect();
    ctx.with_key_adds(key.clone(), adds, move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(Some(s)) if members.iter().all(|m| s.contains(m)) => return write_integer(out, 0),
            Ok(_) => {}
        }
        let mut n = 0;
        if let Ok(Some(s)) = get_mut(view, &key, true) {
            for m in &members {
                n += s.insert(m) as i64;
            }
        }
        write_integer(out, n);
    })
}

pub fn srem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    let members: Vec<Bytes> = args[2..].to_vec();
    ctx.with_key_elems(key.clone(), members.clone(), move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(Some(s)) if members.iter().any(|m| s.contains(m)) => {}
            Ok(_) => return write_integer(out, 0),
        }
        let mut n = 0;
        if let Ok(Some(s)) = get_mut(view, &key, false) {
            for m in &members {
                n += s.remove(m) as i64;
            }
        }
        write_integer(out, n);
    })
}

pub fn sismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let m = args[2].clone();
    read_members(ctx, &args[1], vec![m.clone()], move |s, out, _| {
        write_integer(out, s.is_some_and(|s| s.contains(&m)) as i64)
    })
}

pub fn smismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let ms: Vec<Bytes> = args[2..].to_vec();
    read_members(ctx, &args[1], ms.clone(), move |s, out, _| {
        write_array_len(out, ms.len());
        for m in &ms {
            write_integer(out, s.is_some_and(|s| s.contains(m)) as i64);
        }
    })
}

pub fn scard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    read_members(ctx, &args[1], Vec::new(), |s, out, _| {
        write_integer(out, s.map_or(0, |s| s.len()) as i64)
    })
}

fn write_members<'a>(out: &mut BytesMut, v: Version, n: usize, it: impl Iterator<Item = &'a [u8]>) {
    write_set_len(out, v, n);
    for m in it {
        write_bulk(out, m);
    }
}

/// SMEMBERS: of a chunked set, a batch of parts at a time
/// (`Ctx::stream_key`), so a set larger than RAM is read without being
/// held in RAM at once.
pub fn smembers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let k = args[1].clone();
    ctx.stream_key(
        args[1].clone(),
        false,
        move |view, out, v| {
            let s = match get(view, &k) {
                Ok(s) => s,
                Err(e) => {
                    reply::engine(out, &e);
                    return None;
                }
            };
            let Some(s) = s else {
                write_set_len(out, v, 0);
                return None;
            };
            if s.is_chunked() {
                out.reserve(s.body_len() + 4 * s.len());
                write_set_len(out, v, s.len());
                return Some(0..s.part_count());
            }
            write_members(out, v, s.len(), s.iter());
            None
        },
        |c, parts, out, _| {
            if let Collection::Set(s) = c {
                for m in s.iter_parts(parts) {
                    write_bulk(out, m);
                }
            }
        },
    )
}

/// A count argument in -LONG_MAX..=LONG_MAX, with Redis's errors.
fn parse_count(b: &[u8]) -> Result<i64, &'static str> {
    match parse_i64(b) {
        None => Err(reply::NOT_INTEGER),
        Some(i64::MIN) => Err(crate::base::reply::I64_RANGE),
        Some(n) => Ok(n),
    }
}

pub fn srandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 3 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    if args.len() == 2 {
        // One pick reads one part of a chunked set.
        let seed: u64 = rand::thread_rng().gen();
        let key = args[1].clone();
        let need = strata_engine::Need::Pick(seed);
        return ctx.with_key_need(key.clone(), need, move |view, out, v| {
            let s = match get(view, &key) {
                Ok(s) => s,
                Err(e) => return reply::engine(out, &e),
            };
            match s.filter(|s| !s.is_empty()) {
                Some(s) => match s.get_index(strata_engine::pick_index(seed, s.len())) {
                    Some(m) => write_bulk(out, m),
                    None => write_null(out, v),
                },
                None => write_null(out, v),
            }
        });
    }
    let count = match parse_count(&args[2]) {
        Ok(n) if n < 0 && n.unsigned_abs() > super::hash::MAX_PICKS => {
            reply::error(ctx.out, crate::base::reply::OUT_OF_RANGE);
            return Outcome::Done;
        }
        Ok(n) => n,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    read(ctx, &args[1], move |s, out, _| {
        let Some(s) = s.filter(|s| !s.is_empty() && count != 0) else {
            return write_array_len(out, 0);
        };
        let picks = pick_indexes(s.len(), count);
        write_array_len(out, picks.len());
        for i in picks {
            if let Some(m) = s.get_index(i) {
                write_bulk(out, m);
            }
        }
    })
}

pub fn spop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 3 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    let count = match args.get(2).map(|c| parse_i64(c)) {
        None => None,
        // Redis gives the range message for a non-integer too.
        Some(None) => {
            reply::error(ctx.out, reply::NOT_POSITIVE_COUNT);
            return Outcome::Done;
        }
        Some(Some(n)) if n < 0 => {
            reply::error(ctx.out, reply::NOT_POSITIVE_COUNT);
            return Outcome::Done;
        }
        Some(Some(n)) => Some(n as u64),
    };
    let key = args[1].clone();
    // One pop reads one part of a chunked set; a count reads them all.
    let seed: u64 = rand::thread_rng().gen();
    let need = match count {
        None => strata_engine::Need::Pick(seed),
        Some(_) => strata_engine::Need::Whole,
    };
    ctx.with_key_need(key.clone(), need, move |view, out, v| {
        let len = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(s) => s.map_or(0, |s| s.len()),
        };
        if len == 0 || count == Some(0) {
            return match count {
                None => write_null(out, v),
                Some(_) => write_set_len(out, v, 0),
            };
        }
        let Ok(Some(s)) = get_mut(view, &key, false) else {
            return write_null(out, v);
        };
        let mut rng = rand::thread_rng();
        match count {
            None => match s.remove_index(strata_engine::pick_index(seed, len)) {
                Some(m) => write_bulk(out, &m),
                None => write_null(out, v),
            },
            Some(n) => {
                let n = (n.min(len as u64)) as usize;
                write_set_len(out, v, n);
                for _ in 0..n {
                    let i = rng.gen_range(0..s.len());
                    if let Some(m) = s.remove_index(i) {
                        write_bulk(out, &m);
                    }
                }
            }
        }
    })
}

pub fn smove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (src, dst, m) = (args[1].clone(), args[2].clone(), args[3].clone());
    let keys = if src == dst {
        vec![src.clone()]
    } else {
        vec![src.clone(), dst.clone()]
    };
    ctx.with_keys(keys, move |view, out, _| {
        // Redis: a missing source is 0 before any type check; then both
        // types are checked.
        let has = match get(view, &src) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(s) => s.map(|s| s.contains(&m)),
        };
        if let Err(e) = get(view, &dst) {
            return reply::engine(out, &e);
        }
        match has {
            None | Some(false) => return write_integer(out, 0),
            Some(true) if src == dst => return write_integer(out, 1),
            Some(true) => {}
        }
        if let Ok(Some(s)) = get_mut(view, &src, false) {
            s.remove(&m);
        }
        if let Ok(Some(d)) = get_mut(view, &dst, true) {
            if !d.insert(&m) {
                // Already a member there: the destination did not change.
                view.unchanged(&dst);
            }
        }
        write_integer(out, 1);
    })
}

pub fn sscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(cursor) = parse_cursor(&args[2]) else {
        reply::error(ctx.out, crate::base::reply::INVALID_CURSOR);
        return Outcome::Done;
    };
    let opts = parse_scan_opts(&args[3..]);
    // A chunked set's cursor is a hash position (see HSCAN).
    let count = opts.as_ref().map_or(10, |o| o.count);
    let need = strata_engine::Need::Scan {
        from: cursor,
        count,
    };
    let key = args[1].clone();
    ctx.with_key_need(key.clone(), need, move |view, out, _| {
        let s = match get(view, &key) {
            Ok(Some(s)) => s,
            Ok(None) => return write_empty_scan(out),
            Err(e) => return reply::engine(out, &e),
        };
        let o = match opts {
            Ok(o) => o,
            Err(e) => return reply::error(out, e),
        };
        let (items, next) = match s.chunk_scan(cursor, o.count) {
            Some(step) => step,
            None => {
                let (next, range) = scan_positions(s.len(), cursor, o.count, !s.big);
                (range.rev().filter_map(|i| s.get_index(i)).collect(), next)
            }
        };
        let items: Vec<&[u8]> = items
            .into_iter()
            .filter(|m| {
                o.pattern
                    .as_ref()
                    .is_none_or(|p| crate::base::glob::glob_match(p, m, false))
            })
            .collect();
        write_array_len(out, 2);
        write_bulk(out, next.to_string().as_bytes());
        write_array_len(out, items.len());
        for m in items {
            write_bulk(out, m);
        }
    })
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("sadd", -3, WF, K1, "set", "Adds one or more members to a set. Creates the key if it doesn't exist.", sadd).reads(reads::members_added),
    cmd("srem", -3, WD, K1, "set", "Removes one or more members from a set. Deletes the set if the last member was removed.", srem).reads(reads::elems_changed),
    cmd("sismember", 3, RF, K1, "set", "Determines whether a member belongs to a set.", sismember).reads(reads::elems_read),
    cmd("smismember", -3, RF, K1, "set", "Determines whether multiple members belong to a set.", smismember).reads(reads::elems_read),
    cmd("scard", 2, RF, K1, "set", "Returns the number of members in a set.", scard),
    cmd("smembers", 2, R, K1, "set", "Returns all members of a set.", smembers),
    cmd("srandmember", -2, R, K1, "set", "Get one or multiple random members from a set", srandmember),
    cmd("spop", -2, WD, K1, "set", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", spop),
    cmd("smove", 4, WD, K2, "set", "Moves a member from one set to another.", smove),
    cmd("sinter", -2, R, KALL, "set", "Returns the intersect of multiple sets.", sinter),
    cmd("sintercard", -3, &["readonly", "movablekeys"], K0, "set", "Returns the number of members of the intersect of multiple sets.", sintercard),
    cmd("sinterstore", -3, W, KALL, "set", "Stores the intersect of multiple sets in a key.", sinterstore).with(Flags::READS_SOURCES),
    cmd("sunion", -2, R, KALL, "set", "Returns the union of multiple sets.", sunion),
    cmd("sunionstore", -3, W, KALL, "set", "Stores the union of multiple sets in a key.", sunionstore).with(Flags::READS_SOURCES),
    cmd("sdiff", -2, R, KALL, "set", "Returns the difference of multiple sets.", sdiff),
    cmd("sdiffstore", -3, W, KALL, "set", "Stores the difference of multiple sets in a key.", sdiffstore).with(Flags::READS_SOURCES),
    cmd("sscan", -3, R, K1, "set", "Iterates over members of a set.", sscan),
];

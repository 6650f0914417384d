//! Hash commands: HSET HSETNX HMSET HGET HMGET HDEL HEXISTS HLEN HSTRLEN
//! HKEYS HVALS HGETALL HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN, as Redis 7.0
//! answers them. Each runs in a `KeysView` (the hash in RAM, fetched first
//! if cold); arguments are checked before, in Redis's order.

use super::parse_i64;
use crate::base::reply;
use crate::command::{cmd, reads, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use bytes::{Bytes, BytesMut};
use rand::Rng;
use strata_engine::types::Hash;
use strata_engine::{Collection, EngineError, KeysView, ValueType};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, write_simple, Version,
};

/// The hash at `key` (None if missing).
fn get<'v>(view: &'v mut KeysView<'_>, key: &[u8]) -> Result<Option<&'v Hash>, EngineError> {
    match view.coll(key, ValueType::Hash)? {
        Some(Collection::Hash(h)) => Ok(Some(h)),
        _ => Ok(None),
    }
}

/// The hash at `key` to change, created if `create`.
fn get_mut<'v>(
    view: &'v mut KeysView<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'v mut Hash>, EngineError> {
    match view.coll_mut(key, ValueType::Hash, create)? {
        Some(Collection::Hash(h)) => Ok(Some(h)),
        _ => Ok(None),
    }
}

/// Runs `f` on the hash at `key` for reading only the fields `fields`
/// (see `Ctx::with_key_reads`); errors become replies.
fn read_fields(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    fields: Vec<Bytes>,
    f: impl FnOnce(Option<&Hash>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_key_reads(key.clone(), fields, move |view, out, v| {
        match get(view, &key) {
            Ok(h) => f(h, out, v),
            Err(e) => reply::engine(out, &e),
        }
    })
}

/// Runs `f` on the hash at `args[1]` for reading; errors become replies.
fn read(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    f: impl FnOnce(Option<&Hash>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_key(key.clone(), move |view, out, v| match get(view, &key) {
        Ok(h) => f(h, out, v),
        Err(e) => reply::engine(out, &e),
    })
}

fn hset_generic(ctx: &mut Ctx<'_>, args: &[Bytes], name: &str) -> Outcome {
    if args.len() & 1 != 0 {
        reply::arity(ctx.out, name);
        return Outcome::Done;
    }
    let hmset = name == "hmset";
    let key = args[1].clone();
    let pairs: Vec<Bytes> = args[2..].to_vec();
    let fields = pairs
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].len()))
        .collect();
    ctx.with_key_adds(key.clone(), fields, move |view, out, _| {
        let lim = view.encoding_limits();
        let h = match get_mut(view, &key, true) {
            Err(e) => return reply::engine(out, &e),
            Ok(h) => h,
        };
        let mut added = 0;
        if let Some(h) = h {
            // Redis converts to a hashtable when any argument is longer than
            // the listpack limit, before it sets anything.
            if pairs.iter().any(|a| a.len() > lim.hash_value) {
                h.big = true;
            }
            for p in pairs.chunks(2) {
                if let [f, v] = p {
                    added += h.insert(f, v) as i64;
                }
            }
        }
        if hmset {
            write_simple(out, b"OK");
        } else {
            write_integer(out, added);
        }
    })
}

pub fn hset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    hset_generic(ctx, args, "hset")
}

pub fn hmset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    hset_generic(ctx, args, "hmset")
}

pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (key, field, value) = (args[1].clone(), args[2].clone(), args[3].clone());
    ctx.with_key_elems(key.clone(), vec![field.clone()], move |view, out, _| {
        let lim = view.encoding_limits();
        let long = field.len() > lim.hash_value || value.len() > lim.hash_value;
        let present = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(Some(h)) => Some((h.contains(&field), h.big)),
            Ok(None) => None,
        };
        if let Some((true, big)) = present {
            // Redis converts on the arguments' length even when the field is
            // there and nothing is set.
            if long && !big {
                if let Ok(Some(h)) = get_mut(view, &key, false) {
                    h.big = true;
                }
            }
            return write_integer(out, 0);
        }
        if let Ok(Some(h)) = get_mut(view, &key, true) {
            if long {
                h.big = true;
            }
            h.insert(&field, &value);
        }
        write_integer(out, 1);
    })
}

pub fn hget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let field = args[2].clone();
    read_fields(ctx, &args[1], vec![field.clone()], move |h, out, v| match h
        .and_then(|h| h.get(&field))
    {
        Some(x) => write_bulk(out, x),
        None => write_null(out, v),
    })
}

pub fn hmget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let fields: Vec<Bytes> = args[2..].to_vec();
    read_fields(ctx, &args[1], fields.clone(), move |h, out, v| {
        write_array_len(out, fields.len());
        for f in &fields {
            match h.and_then(|h| h.get(f)) {
                Some(x) => write_bulk(out, x),
                None => write_null(out, v),
            }
        }
    })
}

pub fn hdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    let fields: Vec<Bytes> = args[2..].to_vec();
    ctx.with_key_elems(key.clone(), fields.clone(), move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(Some(h)) if !fields.iter().any(|f| h.contains(f)) => return write_integer(out, 0),
            Ok(Some(_)) => {}
        }
        let mut n = 0;
        if let Ok(Some(h)) = get_mut(view, &key, false) {
            for f in &fields {
                n += h.remove(f) as i64;
            }
        }
        write_integer(out, n);
    })
}

pub fn hexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let field = args[2].clone();
    read_fields(ctx, &args[1], vec![field.clone()], move |h, out, _| {
        write_integer(out, h.is_some_and(|h| h.contains(&field)) as i64)
    })
}

pub fn hlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    read_fields(ctx, &args[1], Vec::new(), |h, out, _| {
        write_integer(out, h.map_or(0, |h| h.len()) as i64)
    })
}

pub fn hstrlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let field = args[2].clone();
    read_fields(ctx, &args[1], vec![field.clone()], move |h, out, _| {
        write_integer(
            out,
            h.and_then(|h| h.get(&field)).map_or(0, |v| v.len()) as i64,
        )
    })
}

/// What HKEYS, HVALS and HGETALL reply with.
#[derive(Clone, Copy, PartialEq)]
enum Whole {
    Keys,
    Vals,
    All,
}

/// HKEYS, HVALS, HGETALL: of a chunked hash, a batch of parts at a time
/// (`Ctx::stream_key`), so a hash larger than RAM is read without being
/// held in RAM at once.
fn hash_whole(ctx: &mut Ctx<'_>, key: &Bytes, what: Whole) -> Outcome {
    fn write<'a>(out: &mut BytesMut, what: Whole, it: impl Iterator<Item = (&'a [u8], &'a [u8])>) {
        for (f, x) in it {
            if what != Whole::Vals {
                write_bulk(out, f);
            }
            if what != Whole::Keys {
                write_bulk(out, x);
            }
        }
    }
    let k = key.clone();
    ctx.stream_key(
        key.clone(),
        false,
        move |view, out, v| {
            let h = match get(view, &k) {
                Ok(h) => h,
                Err(e) => {
                    reply::engine(out, &e);
                    return None;
                }
            };
            let n = h.map_or(0, |h| h.len());
            match what {
                Whole::All => write_map_len(out, v, n),
                _ => write_array_len(out, n),
            }
            let h = h?;
            if h.is_chunked() {
                // The reply is about the hash's size: sized once, not grown
                // by doubling (which holds it twice while it copies).
                out.reserve(h.body_len() + 8 * h.len());
                return Some(0..h.part_count());
            }
            write(out, what, h.iter());
            None
        },
        move |c, parts, out, _| {
            if let strata_engine::Collection::Hash(h) = c {
                write(out, what, h.iter_parts(parts));
            }
        },
    )
}

pub fn hkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    hash_whole(ctx, &args[1], Whole::Keys)
}

pub fn hvals(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    hash_whole(ctx, &args[1], Whole::Vals)
}

pub fn hgetall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    hash_whole(ctx, &args[1], Whole::All)
}

pub fn hincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(incr) = parse_i64(&args[3]) else {
        reply::error(ctx.out, reply::NOT_INTEGER);
        return Outcome::Done;
    };
    let (key, field) = (args[1].clone(), args[2].clone());
    ctx.with_key_elems(key.clone(), vec![field.clone()], move |view, out, _| {
        let old = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(h) => match h.and_then(|h| h.get(&field)) {
                None => 0,
                Some(v) => match parse_i64(v) {
                    Some(n) => n,
                    None => return reply::error(out, "ERR hash value is not an integer"),
                },
            },
        };
        let Some(n) = old.checked_add(incr) else {
            return reply::error(out, reply::OVERFLOW);
        };
        if let Ok(Some(h)) = get_mut(view, &key, true) {
            h.insert(&field, n.to_string().as_bytes());
        }
        write_integer(out, n);
    })
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(incr) = super::float::parse(&args[3]) else {
        reply::error(ctx.out, reply::NOT_FLOAT);
        return Outcome::Done;
    };
    if incr == super::float::Ld::Inf {
        reply::error(ctx.out, "ERR value is NaN or Infinity");
        return Outcome::Done;
    }
    let (key, field, incr_text) = (args[1].clone(), args[2].clone(), args[3].clone());
    ctx.with_key_elems(key.clone(), vec![field.clone()], move |view, out, _| {
        let old: Vec<u8> = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(h) => match h.and_then(|h| h.get(&field)) {
                None => b"0".to_vec(),
                Some(v) if super::float::parse(v).is_some() => v.to_vec(),
                Some(_) => return reply::error(out, "ERR hash value is not a float"),
            },
        };
        let Some(text) = super::float::sum_text(&old, &incr_text) else {
            return reply::error(out, reply::NAN_OR_INF);
        };
        if let Ok(Some(h)) = get_mut(view, &key, true) {
            h.insert(&field, text.as_bytes());
        }
        write_bulk(out, text.as_bytes());
    })
}

pub fn hrandfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() == 2 {
        // One pick reads one part of a chunked hash.
        let seed: u64 = rand::thread_rng().gen();
        let key = args[1].clone();
        let need = strata_engine::Need::Pick(seed);
        return ctx.with_key_need(key.clone(), need, move |view, out, v| {
            let h = match get(view, &key) {
                Ok(h) => h,
                Err(e) => return reply::engine(out, &e),
            };
            match h.filter(|h| !h.is_empty()) {
                Some(h) => match h.get_index(strata_engine::pick_index(seed, h.len())) {
                    Some((f, _)) => write_bulk(out, f),
                    None => write_null(out, v),
                },
                None => write_null(out, v),
            }
        });
    }
    let (count, withvalues) = match super::parse_rand_count(&args[2..], "withvalues") {
        Ok(c) => c,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    read(ctx, &args[1], move |h, out, v| {
        let Some(h) = h.filter(|h| !h.is_empty() && count != 0) else {
            return write_array_len(out, 0);
        };
        let picks = pick_indexes(h.len(), count);
        let pair = |out: &mut BytesMut, f: &[u8], x: &[u8]| {
            if v == Version::Resp3 {
                write_array_len(out, 2);
            }
            write_bulk(out, f);
            write_bulk(out, x);
        };
        let n = if withvalues && v == Version::Resp2 {
            picks.len() * 2
        } else {
            picks.len()
        };
        write_array_len(out, n);
        for i in picks {
            if let Some((f, x)) = h.get_index(i) {
                if withvalues {
                    pair(out, f, x);
                } else {
                    write_bulk(out, f);
                }
            }
        }
    })
}

/// Most elements a negative-count random pick returns (HRANDFIELD,
/// SRANDMEMBER, ZRANDMEMBER with repeats). Redis has no bound and builds
/// the whole reply; past this many (a reply of gigabytes) Strata answers
/// `ERR value is out of range` instead of running out of memory.
pub const MAX_PICKS: u64 = 100_000_000;

/// Positions for a random pick of `count` elements out of `len` (len > 0):
/// distinct when positive (at most `len`), with repeats when negative.
pub fn pick_indexes(len: usize, count: i64) -> Vec<usize> {
    let mut rng = rand::thread_rng();
    if count < 0 {
        let n = count.unsigned_abs().min(MAX_PICKS) as usize;
        return (0..n).map(|_| rng.gen_range(0..len)).collect();
    }
    let n = (count as u64).min(len as u64) as usize;
    if n == len {
        return (0..len).collect();
    }
    // A partial Fisher-Yates shuffle over positions.
    let mut idx: Vec<usize> = (0..len).collect();
    for i in 0..n {
        let j = rng.gen_range(i..len);
        idx.swap(i, j);
    }
    idx.truncate(n);
    idx
}

/// The options of a SCAN-family command after the cursor: MATCH and COUNT.
pub struct ScanOpts {
    pub pattern: Option<Bytes>,
    pub count: usize,
}

/// Parses `MATCH p` / `COUNT n` with Redis's errors.
pub fn parse_scan_opts(args: &[Bytes]) -> Result<ScanOpts, &'static str> {
    let mut o = ScanOpts {
        pattern: None,
        count: 10,
    };
    let mut i = 0;
    while i < args.len() {
        let more = args.len() - i - 1;
        if super::is(&args[i], "count") && more >= 1 {
            match parse_i64(&args[i + 1]) {
                None => return Err(reply::NOT_INTEGER),
                Some(n) if n < 1 => return Err(reply::SYNTAX),
                Some(n) => o.count = n as usize,
            }
            i += 2;
        } else if super::is(&args[i], "match") && more >= 1 {
            o.pattern = Some(args[i + 1].clone()).filter(|p| &p[..] != b"*");
            i += 2;
        } else {
            return Err(reply::SYNTAX);
        }
    }
    Ok(o)
}

/// Parses a SCAN cursor (an unsigned decimal).
pub fn parse_cursor(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse::<u64>().ok()
}

/// One SCAN step over positions `0..len` from `cursor`, walking down from
/// the end (so an element present for the whole scan is returned even if
/// others are removed meanwhile); `all` returns everything at once (the
/// small encodings). Returns the next cursor and the positions visited.
pub fn scan_positions(
    len: usize,
    cursor: u64,
    count: usize,
    all: bool,
) -> (u64, std::ops::Range<usize>) {
    if all {
        return (0, 0..len);
    }
    let top = if cursor == 0 {
        len
    } else {
        (cursor as usize).min(len)
    };
    let bottom = top.saturating_sub(count);
    let next = if bottom == 0 { 0 } else { bottom as u64 };
    (next, bottom..top)
}

pub fn hscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(cursor) = parse_cursor(&args[2]) else {
        reply::error(ctx.out, crate::base::reply::INVALID_CURSOR);
        return Outcome::Done;
    };
    let opts = parse_scan_opts(&args[3..]);
    // A chunked hash's cursor is a hash position: only the parts from it
    // are read (`Need::Scan`); a packed one's is a position.
    let count = opts.as_ref().map_or(10, |o| o.count);
    let need = strata_engine::Need::Scan {
        from: cursor,
        count,
    };
    let key = args[1].clone();
    ctx.with_key_need(key.clone(), need, move |view, out, _| {
        let h = match get(view, &key) {
            Ok(Some(h)) => h,
            Ok(None) => return write_empty_scan(out),
            Err(e) => return reply::engine(out, &e),
        };
        let o = match opts {
            Ok(o) => o,
            Err(e) => return reply::error(out, e),
        };
        let (items, next) = match h.chunk_scan(cursor, o.count) {
            Some(step) => step,
            None => {
                let (next, range) = scan_positions(h.len(), cursor, o.count, !h.big);
                let mut items: Vec<_> = range.rev().filter_map(|i| h.get_index(i)).collect();
                if !h.big {
                    items.reverse();
                }
                (items, next)
            }
        };
        let items: Vec<_> = items
            .into_iter()
            .filter(|(f, _)| {
                o.pattern
                    .as_ref()
                    .is_none_or(|p| crate::base::glob::glob_match(p, f, false))
            })
            .collect();
        write_array_len(out, 2);
        write_bulk(out, next.to_string().as_bytes());
        write_array_len(out, items.len() * 2);
        for (f, v) in items {
            write_bulk(out, f);
            write_bulk(out, v);
        }
    })
}

/// The reply of a SCAN-family command on a missing key.
pub fn write_empty_scan(out: &mut BytesMut) {
    write_array_len(out, 2);
    write_bulk(out, b"0");
    write_array_len(out, 0);
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("hset", -4, WF, K1, "hash", "Creates or modifies the value of a field in a hash.", hset).reads(reads::field_values),
    cmd("hsetnx", 4, WF, K1, "hash", "Sets the value of a field in a hash only when the field doesn't exist.", hsetnx).reads(reads::field_changed),
    cmd("hmset", -4, WF, K1, "hash", "Sets the values of multiple fields.", hmset).reads(reads::field_values),
    cmd("hget", 3, RF, K1, "hash", "Returns the value of a field in a hash.", hget).reads(reads::elems_read),
    cmd("hmget", -3, RF, K1, "hash", "Returns the values of all fields in a hash.", hmget).reads(reads::elems_read),
    cmd("hdel", -3, WD, K1, "hash", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", hdel).reads(reads::elems_changed),
    cmd("hexists", 3, RF, K1, "hash", "Determines whether a field exists in a hash.", hexists).reads(reads::elems_read),
    cmd("hlen", 2, RF, K1, "hash", "Returns the number of fields in a hash.", hlen),
    cmd("hstrlen", 3, RF, K1, "hash", "Returns the length of the value of a field.", hstrlen).reads(reads::elems_read),
    cmd("hkeys", 2, R, K1, "hash", "Returns all fields in a hash.", hkeys),
    cmd("hvals", 2, R, K1, "hash", "Returns all values in a hash.", hvals),
    cmd("hgetall", 2, R, K1, "hash", "Returns all fields and values in a hash.", hgetall),
    cmd("hincrby", 4, WF, K1, "hash", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", hincrby).reads(reads::field_changed),
    cmd("hincrbyfloat", 4, WF, K1, "hash", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", hincrbyfloat).reads(reads::field_changed),
    cmd("hrandfield", -2, R, K1, "hash", "Returns one or more random fields from a hash.", hrandfield),
    cmd("hscan", -3, R, K1, "hash", "Iterates over fields and values of a hash.", hscan),
];

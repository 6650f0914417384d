//! String commands: GET SET (EX PX EXAT PXAT NX XX KEEPTTL GET) SETNX SETEX
//! PSETEX GETSET GETDEL GETEX MGET MSET MSETNX APPEND STRLEN GETRANGE
//! SETRANGE; the counters INCR DECR INCRBY DECRBY INCRBYFLOAT (`counters`),
//! bitmaps (`bitmap`), LCS (`lcs`) and HyperLogLog (`hll`) are rooms of
//! their own.
//!
//! Reads of cold values and read-modify-writes of cold values complete
//! after one flash read (`Outcome::Pending`); everything else is RAM-only.

pub mod bitfield;
pub mod bitmap;
mod counters;
pub mod hll;
pub mod lcs;
mod section;

pub use counters::{decr, decrby, incr, incrby, incrbyfloat};

use crate::command::{cmd, Command};
use crate::registry::flags::*;
use crate::registry::Flags;
use section::{set_raw, with_strings};

use super::{is, parse_i64};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use bytes::{Bytes, BytesMut};
use strata_engine::clock::now_ms;
use strata_engine::{
    EngineError, ExpireUpdate, InRam, Mutation, Need, Piece, Read, SetCond, SetOptions, StrEdit,
};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_simple, Version,
};

fn bulk_or_null(out: &mut BytesMut, v: Version, value: Option<Bytes>) {
    match value {
        Some(b) => write_bulk(out, &b),
        None => write_null(out, v),
    }
}

/// `bulk_or_null` for a command that read the old value (GETSET, GETDEL,
/// GETEX, SET ... GET): counted as a keyspace hit or miss, as Redis's
/// `lookupKeyRead` counts it.
fn counted_bulk_or_null(
    ctx: &Ctx<'_>,
) -> impl FnOnce(&mut BytesMut, Version, Option<Bytes>) + Send + 'static {
    let engine = ctx.engine().clone();
    move |out, v, value| {
        engine.count_lookup(value.is_some());
        bulk_or_null(out, v, value)
    }
}

pub fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (engine, db, v) = (ctx.engine(), ctx.db(), ctx.version());
    let out = &mut *ctx.out;
    // A value in RAM is copied into the reply under its shard lock.
    let r = engine.get_in_ram(db, &args[1], |value| match value {
        Some(b) => write_bulk(out, b),
        None => write_null(out, v),
    });
    match r {
        InRam::Answered => Outcome::Done,
        InRam::WrongType => {
            reply::engine(ctx.out, &EngineError::WrongType);
            Outcome::Done
        }
        InRam::NotInRam => {
            let read = ctx.engine().get(db, &args[1]);
            ctx.reply_with(read, false, bulk_or_null)
        }
    }
}

/// Parses an expiry amount into an absolute Unix time in ms; None = invalid.
fn expire_at(amount: &[u8], unit_ms: u64, absolute: bool) -> Result<u64, &'static str> {
    let n = parse_i64(amount).ok_or(reply::NOT_INTEGER)?;
    if n <= 0 {
        return Err("");
    }
    let ms = (n as u64).checked_mul(unit_ms).ok_or("")?;
    if absolute {
        Ok(ms)
    } else {
        now_ms()
            .checked_add(ms)
            .filter(|v| *v < i64::MAX as u64)
            .ok_or("")
    }
}

fn expire_error(ctx: &mut Ctx<'_>, e: &str, cmd: &str) -> Outcome {
    if e.is_empty() {
        reply::invalid_expire(ctx.out, cmd);
    } else {
        reply::error(ctx.out, e);
    }
    Outcome::Done
}

/// EX / PX / EXAT / PXAT: (milliseconds per unit, absolute time?).
fn expire_option(arg: &[u8]) -> Option<(u64, bool)> {
    if is(arg, "ex") {
        Some((1000, false))
    } else if is(arg, "px") {
        Some((1, false))
    } else if is(arg, "exat") {
        Some((1000, true))
    } else if is(arg, "pxat") {
        Some((1, true))
    } else {
        None
    }
}

pub fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut opts = SetOptions::default();
    let mut return_old = false;
    let mut expire_seen = false;
    let mut i = 3;
    while i < args.len() {
        let a = &args[i];
        let unit = expire_option(a);
        if let Some((unit_ms, absolute)) = unit {
            if expire_seen || opts.expire == ExpireUpdate::Keep || i + 1 >= args.len() {
                reply::error(ctx.out, reply::SYNTAX);
                return Outcome::Done;
            }
            match expire_at(&args[i + 1], unit_ms, absolute) {
                Ok(at) => opts.expire = ExpireUpdate::At(at),
                Err(e) => return expire_error(ctx, e, "set"),
            }
            expire_seen = true;
            i += 2;
            continue;
        }
        if is(a, "nx") && opts.cond != SetCond::IfExists {
            opts.cond = SetCond::IfMissing;
        } else if is(a, "xx") && opts.cond != SetCond::IfMissing {
            opts.cond = SetCond::IfExists;
        } else if is(a, "keepttl") && !expire_seen {
            opts.expire = ExpireUpdate::Keep;
        } else if is(a, "get") {
            return_old = true;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
        i += 1;
    }
    let value = args[2].clone();
    if !return_old {
        return match ctx.engine().set(ctx.db(), &args[1], &value, opts) {
            Ok(true) => {
                write_simple(ctx.out, b"OK");
                Outcome::Done
            }
            Ok(false) => {
                write_null(ctx.out, ctx.version());
                Outcome::Done
            }
            Err(e) => {
                reply::engine(ctx.out, &e);
                Outcome::Done
            }
        };
    }
    // SET ... GET: the old value, then the conditional write, atomically.
    let read = ctx.engine().update(ctx.db(), &args[1], move |cur| {
        let old = cur.as_ref().map(|c| c.value.clone());
        let apply = match opts.cond {
            SetCond::Always => true,
            SetCond::IfMissing => cur.is_none(),
            SetCond::IfExists => cur.is_some(),
        };
        if apply {
            (
                Mutation::Set {
                    value: value.clone(),
                    expire: opts.expire,
                },
                old,
            )
        } else {
            (Mutation::None, old)
        }
    });
    let render = counted_bulk_or_null(ctx);
    ctx.reply_with(read, true, render)
}

fn set_simple(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    opts: SetOptions,
    reply_int: bool,
) -> Outcome {
    match ctx.engine().set(ctx.db(), key, value, opts) {
        Ok(done) if reply_int => write_integer(ctx.out, done as i64),
        Ok(_) => write_simple(ctx.out, b"OK"),
        Err(e) => reply::engine(ctx.out, &e),
    }
    Outcome::Done
}

pub fn setnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let opts = SetOptions {
        cond: SetCond::IfMissing,
        expire: ExpireUpdate::Clear,
    };
    set_simple(ctx, &args[1], &args[2], opts, true)
}

fn setex_generic(ctx: &mut Ctx<'_>, args: &[Bytes], unit_ms: u64, name: &str) -> Outcome {
    let at = match expire_at(&args[2], unit_ms, false) {
        Ok(at) => at,
        Err(e) => return expire_error(ctx, e, name),
    };
    let opts = SetOptions {
        cond: SetCond::Always,
        expire: ExpireUpdate::At(at),
    };
    set_simple(ctx, &args[1], &args[3], opts, false)
}

pub fn setex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setex_generic(ctx, args, 1000, "setex")
}

pub fn psetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setex_generic(ctx, args, 1, "psetex")
}

pub fn getset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let value = args[2].clone();
    let read = ctx.engine().update(ctx.db(), &args[1], move |cur| {
        let old = cur.map(|c| c.value.clone());
        let m = Mutation::Set {
            value: value.clone(),
            expire: ExpireUpdate::Clear,
        };
        (m, old)
    });
    let render = counted_bulk_or_null(ctx);
    ctx.reply_with(read, true, render)
}

pub fn getdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let read = ctx.engine().update(ctx.db(), &args[1], |cur| match cur {
        Some(c) => (Mutation::Delete, Some(c.value.clone())),
        None => (Mutation::None, None),
    });
    let render = counted_bulk_or_null(ctx);
    ctx.reply_with(read, true, render)
}

pub fn getex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    // None = leave the TTL; Some(0) = PERSIST; Some(t) = expire at t.
    let mut change: Option<u64> = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        let unit = expire_option(a);
        if let Some((unit_ms, absolute)) = unit {
            if change.is_some() || i + 1 >= args.len() {
                reply::error(ctx.out, reply::SYNTAX);
                return Outcome::Done;
            }
            match expire_at(&args[i + 1], unit_ms, absolute) {
                Ok(at) => change = Some(at),
                Err(e) => return expire_error(ctx, e, "getex"),
            }
            i += 2;
        } else if is(a, "persist") && change.is_none() {
            change = Some(0);
            i += 1;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    }
    let read = ctx
        .engine()
        .update(ctx.db(), &args[1], move |cur| match (cur, change) {
            (Some(c), Some(at)) => (Mutation::SetExpire(at), Some(c.value.clone())),
            (Some(c), None) => (Mutation::None, Some(c.value.clone())),
            (None, _) => (Mutation::None, None),
        });
    let render = counted_bulk_or_null(ctx);
    ctx.reply_with(read, change.is_some(), render)
}

/// MGET: the values as of one moment (`Engine::get_many`).
pub fn mget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let read = ctx.engine().get_many(ctx.db(), args[1..].to_vec());
    ctx.reply_with(read, false, |out, v, values| {
        write_array_len(out, values.len());
        for value in values {
            bulk_or_null(out, v, value);
        }
    })
}

pub fn mset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    mset_generic(ctx, args, false)
}

pub fn msetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    mset_generic(ctx, args, true)
}

fn mset_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool) -> Outcome {
    if args.len() & 1 == 0 {
        reply::arity(ctx.out, if nx { "msetnx" } else { "mset" });
        return Outcome::Done;
    }
    let pairs: Vec<(&[u8], &[u8])> = args[1..]
        .chunks_exact(2)
        .map(|p| (&p[0][..], &p[1][..]))
        .collect();
    let done = ctx.engine().set_many(ctx.db(), &pairs, nx);
    if nx {
        write_integer(ctx.out, done as i64);
    } else {
        write_simple(ctx.out, b"OK");
    }
    Outcome::Done
}

/// Runs a read-modify-write whose closure may refuse with an error text.
pub(super) fn rmw<T: Send + 'static>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnMut(Option<strata_engine::Current<'_>>) -> (Mutation, Result<T, &'static str>)
        + Send
        + 'static,
    render: impl FnOnce(&mut BytesMut, Version, T) + Send + 'static,
) -> Outcome {
    let read: Read<Result<Result<T, &'static str>, EngineError>> =
        ctx.engine().update(ctx.db(), key, f);
    ctx.reply_with(read, true, move |out, v, r| match r {
        Ok(t) => render(out, v, t),
        Err(e) => reply::error(out, e),
    })
}

/// The mutation that stores `v` with the key's TTL kept, and its length as
/// the reply (APPEND, SETRANGE). `in_place`: Redis changed the string in
/// place (APPEND to an existing key, SETRANGE), so it reports `raw`.
pub(super) fn store_keeping_ttl(
    v: Vec<u8>,
    in_place: bool,
) -> (Mutation, Result<i64, &'static str>) {
    let n = v.len() as i64;
    let (value, expire) = (v.into(), ExpireUpdate::Keep);
    let m = if in_place {
        Mutation::SetRaw { value, expire }
    } else {
        Mutation::Set { value, expire }
    };
    (m, Ok(n))
}

pub fn append(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let suffix = args[2].clone();
    let max = ctx.limits().max_bulk_len as u64;
    // The last byte: its part grows (a chunked string).
    edit(
        ctx,
        &args[1],
        Need::indexes(&[(-1, -1)]),
        move |ed| {
            let len = ed.len();
            if len + suffix.len() as u64 > max {
                return Ok(Err(reply::STRING_TOO_LONG));
            }
            // An empty suffix is a write too (Redis signals it).
            ed.write(len, &suffix)?;
            Ok(Ok(ed.len() as i64))
        },
        |out, _, n| write_integer(out, n),
    )
}

/// A write of part of a string (`Engine::write_str`): `need` names the
/// bytes `f` reads or writes (a chunked string loads only their parts).
pub(super) fn edit<T: Send + 'static>(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    need: Need,
    f: impl FnMut(&mut StrEdit<'_>) -> Result<Result<T, &'static str>, EngineError> + Send + 'static,
    render: impl FnOnce(&mut BytesMut, Version, T) + Send + 'static,
) -> Outcome {
    let read = ctx.engine().write_str(ctx.db(), key.clone(), need, f);
    ctx.reply_with(read, true, move |out, v, r| match r {
        Ok(t) => render(out, v, t),
        Err(e) => reply::error(out, e),
    })
}

pub fn strlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let len = ctx.engine().strlen(ctx.db(), &args[1]);
    // (A missing key's length is 0; the key was a hit if it had bytes or
    // is there empty.)
    if let Ok(n) = len {
        let there = n > 0 || ctx.engine().exists(ctx.db(), &args[1]);
        ctx.engine().count_lookup(there);
    }
    match len {
        Ok(n) => write_integer(ctx.out, n as i64),
        Err(e) => reply::engine(ctx.out, &e),
    }
    Outcome::Done
}

/// Redis's GETRANGE index arithmetic over a string of `len` bytes: the
/// bytes `[s, e]`, or None when empty.
fn substring(len: u64, start: i64, end: i64) -> Option<(u64, u64)> {
    let len = len as i64;
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return None;
    }
    let mut s = if start < 0 { len + start } else { start };
    let mut e = if end < 0 { len + end } else { end };
    s = s.max(0);
    e = e.max(0);
    if e >= len {
        e = len - 1;
    }
    if s > e || s >= len {
        return None;
    }
    Some((s as u64, e as u64))
}

pub fn getrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (Some(start), Some(end)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        reply::error(ctx.out, reply::NOT_INTEGER);
        return Outcome::Done;
    };
    // A short range (the common case) in one step: a string of one record
    // shares its bytes, a chunked one loads the parts of the range.
    if start >= 0 && end >= start && end - start < 1 << 20 {
        let need = Need::indexes(&[(start, end)]);
        let read = ctx
            .engine()
            .read_str(ctx.db(), args[1].clone(), need, move |v| {
                let Some(v) = v else {
                    return Ok(Bytes::new());
                };
                match substring(v.len(), start, end) {
                    Some((s, e)) => v.slice(s, e + 1),
                    None => Ok(Bytes::new()),
                }
            });
        return ctx.reply_with(read, false, move |out, _, v| write_bulk(out, &v));
    }
    // A long range of a cold chunked string is read a batch of parts at a
    // time, into the reply itself (moved, not copied, when it is the only
    // one: it can be 512 MB).
    let range = move |len: u64| substring(len, start, end).map(|(s, e)| (s, e + 1));
    let read = ctx.engine().scan_str(
        ctx.db(),
        args[1].clone(),
        move |len| {
            let n = len.and_then(range).map_or(0, |(s, e)| (e - s) as usize);
            let mut out = BytesMut::with_capacity(n + 16);
            strata_protocol::write_bulk_len(&mut out, n);
            out
        },
        range,
        |out, _, p| {
            match p {
                Piece::Bytes(b) => out.extend_from_slice(b),
                Piece::Zeros(n) => out.resize(out.len() + n, 0),
            }
            true
        },
    );
    ctx.reply_with(read, false, move |out, _, mut reply| {
        reply.extend_from_slice(b"\r\n");
        if out.is_empty() {
            *out = reply;
        } else {
            out.extend_from_slice(&reply);
        }
    })
}

pub fn setrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(offset) = parse_i64(&args[2]) else {
        reply::error(ctx.out, reply::NOT_INTEGER);
        return Outcome::Done;
    };
    if offset < 0 {
        reply::error(ctx.out, reply::OFFSET_RANGE);
        return Outcome::Done;
    }
    let patch = args[3].clone();
    let max = ctx.limits().max_bulk_len;
    if !patch.is_empty() && (offset as usize).saturating_add(patch.len()) > max {
        reply::error(ctx.out, reply::STRING_TOO_LONG);
        return Outcome::Done;
    }
    let last = offset + patch.len().max(1) as i64 - 1;
    edit(
        ctx,
        &args[1],
        Need::indexes(&[(offset, last), (-1, -1)]),
        move |ed| {
            if patch.is_empty() {
                // Redis: an empty patch creates nothing and returns the length.
                return Ok(Ok(ed.len() as i64));
            }
            ed.mark_raw();
            ed.write(offset as u64, &patch)?;
            Ok(Ok(ed.len() as i64))
        },
        |out, _, n| write_integer(out, n),
    )
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("get", 2, RF, K1, "string", "Returns the string value of a key.", get),
    cmd("set", -3, W, K1, "string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", set),
    cmd("setnx", 3, WF, K1, "string", "Set the string value of a key only when the key doesn't exist.", setnx),
    cmd("setex", 4, W, K1, "string", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", setex),
    cmd("psetex", 4, W, K1, "string", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", psetex),
    cmd("getset", 3, WF, K1, "string", "Returns the previous string value of a key after setting it to a new value.", getset),
    cmd("getdel", 2, WD, K1, "string", "Returns the string value of a key after deleting the key.", getdel),
    cmd("getex", -2, WD, K1, "string", "Returns the string value of a key after setting its expiration time.", getex),
    cmd("mget", -2, RF, KALL, "string", "Atomically returns the string values of one or more keys.", mget),
    cmd("mset", -3, W, (1, -1, 2), "string", "Atomically creates or modifies the string values of one or more keys.", mset),
    cmd("msetnx", -3, W, (1, -1, 2), "string", "Atomically modifies the string values of one or more keys only when all keys don't exist.", msetnx),
    cmd("append", 3, WF, K1, "string", "Appends a string to the value of a key. Creates the key if it doesn't exist.", append),
    cmd("strlen", 2, RF, K1, "string", "Returns the length of a string value.", strlen),
    cmd("getrange", 4, R, K1, "string", "Returns a substring of the string stored at a key.", getrange),
    cmd("substr", 4, R, K1, "string", "Returns a substring from a string value.", getrange),
    cmd("setrange", 4, W, K1, "string", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", setrange),
    cmd("setbit", 4, W, K1, "bitmap", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", bitmap::setbit),
    cmd("getbit", 3, RF, K1, "bitmap", "Returns a bit value by offset.", bitmap::getbit),
    cmd("bitcount", -2, R, K1, "bitmap", "Counts the number of set bits (population counting) in a string.", bitmap::bitcount),
    cmd("bitpos", -3, R, K1, "bitmap", "Finds the first set (1) or clear (0) bit in a string.", bitmap::bitpos),
    cmd("bitop", -4, W, (2, -1, 1), "bitmap", "Performs bitwise operations on multiple strings, and stores the result.", bitmap::bitop).with(Flags::READS_SOURCES),
    cmd("bitfield", -2, W, K1, "bitmap", "Performs arbitrary bitfield integer operations on strings.", bitfield::bitfield),
    cmd("bitfield_ro", -2, RF, K1, "bitmap", "Performs arbitrary read-only bitfield integer operations on strings.", bitfield::bitfield_ro),
    cmd("lcs", -3, R, (1, 2, 1), "string", "Finds the longest common substring.", lcs::lcs),
    cmd("pfadd", -2, WF, K1, "hyperloglog", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", hll::pfadd),
    cmd("pfcount", -2, &["readonly", "may_replicate"], KALL, "hyperloglog", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", hll::pfcount),
    cmd("pfmerge", -2, W, KALL, "hyperloglog", "Merges one or more HyperLogLog values into a single key.", hll::pfmerge).with(Flags::READS_SOURCES),
    cmd("pfdebug", 3, &["write", "denyoom", "admin"], (2, 2, 1), "hyperloglog", "Internal commands for debugging HyperLogLog values.", hll::pfdebug),
    cmd("pfselftest", 1, &["admin"], K0, "hyperloglog", "An internal command for testing HyperLogLog values.", hll::pfselftest),
    cmd("incr", 2, WF, K1, "string", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", incr),
    cmd("decr", 2, WF, K1, "string", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", decr),
    cmd("incrby", 3, WF, K1, "string", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", incrby),
    cmd("decrby", 3, WF, K1, "string", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", decrby),
    cmd("incrbyfloat", 3, WF, K1, "string", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", incrbyfloat),
];

#[cfg(test)]
mod tests {
    use super::substring;

    #[test]
    fn getrange_index_rules() {
        let v = b"This is a string";
        fn sub(v: &[u8], a: i64, b: i64) -> &[u8] {
            substring(v.len() as u64, a, b).map_or(&b""[..], |(s, e)| &v[s as usize..=e as usize])
        }
        assert_eq!(sub(v, 0, 3), b"This");
        assert_eq!(sub(v, -3, -1), b"ing");
        assert_eq!(sub(v, 0, -1), &v[..]);
        assert_eq!(sub(v, 10, 100), b"string");
        assert_eq!(sub(v, 5, 3), b"");
        assert_eq!(sub(v, -1, -5), b"");
        assert_eq!(sub(b"", 0, -1), b"");
    }
}

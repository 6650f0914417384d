//! Keyspace commands: DEL UNLINK EXISTS TOUCH TYPE KEYS SCAN RANDOMKEY
//! RENAME RENAMENX COPY EXPIRE PEXPIRE EXPIREAT PEXPIREAT (NX XX GT LT) TTL
//! PTTL PERSIST EXPIRETIME PEXPIRETIME. All answer from RAM; RENAME and
//! COPY of a cold value read it once.

use super::{is, parse_i64};
use crate::base::glob::glob_match;
use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use crate::registry::Flags;
use crate::registry::Role;
use bytes::Bytes;
use strata_engine::clock::now_ms;
use strata_engine::{ExpireCond, TtlState};
use strata_protocol::{write_array_len, write_bulk, write_integer, write_null, write_simple};

/// How many of `keys` `op` holds for, all taken at one moment (a keyed
/// exclusive section: another client's transaction or MSET is seen whole
/// or not at all).
fn count_keys(ctx: &Ctx<'_>, keys: &[Bytes], op: impl Fn(&[u8]) -> bool) -> i64 {
    let count = || keys.iter().filter(|k| op(k)).count() as i64;
    if keys.len() == 1 {
        count()
    } else {
        ctx.engine().exclusive_keys(keys, count)
    }
}

pub fn del(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (db, engine) = (ctx.db(), ctx.engine().clone());
    let n = count_keys(ctx, &args[1..], |k| engine.delete(db, k));
    write_integer(ctx.out, n);
    Outcome::Done
}

pub fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (db, engine) = (ctx.db(), ctx.engine().clone());
    let n = count_keys(ctx, &args[1..], |k| {
        engine.count_lookup(engine.exists(db, k))
    });
    write_integer(ctx.out, n);
    Outcome::Done
}

pub fn touch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (db, engine) = (ctx.db(), ctx.engine().clone());
    let n = count_keys(ctx, &args[1..], |k| {
        engine.count_lookup(engine.touch(db, k))
    });
    write_integer(ctx.out, n);
    Outcome::Done
}

pub fn type_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let info = ctx.engine().key_info(ctx.db(), &args[1]);
    ctx.engine().count_lookup(info.is_some());
    let t = match info {
        Some(i) => i.vtype.name(),
        None => "none",
    };
    write_simple(ctx.out, t.as_bytes());
    Outcome::Done
}

/// A key filter for a MATCH pattern ("*" matches everything, including the
/// empty key, as in Redis).
fn matcher(pattern: Option<Bytes>) -> impl Fn(&[u8]) -> bool {
    move |k: &[u8]| match &pattern {
        None => true,
        Some(p) if &p[..] == b"*" => true,
        Some(p) => glob_match(p, k, false),
    }
}

pub fn keys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let keys = ctx.engine().keys(ctx.db(), matcher(Some(args[1].clone())));
    write_array_len(ctx.out, keys.len());
    for k in keys {
        write_bulk(ctx.out, &k);
    }
    Outcome::Done
}

pub fn scan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(cursor) = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        reply::error(ctx.out, crate::base::reply::INVALID_CURSOR);
        return Outcome::Done;
    };
    let mut count = 10usize;
    let mut pattern = None;
    let mut type_filter: Option<Bytes> = None;
    let mut i = 2;
    while i < args.len() {
        if i + 1 >= args.len() {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
        let v = &args[i + 1];
        if is(&args[i], "count") {
            // Redis: a non-integer is NOT_INTEGER, an integer below 1 SYNTAX.
            match parse_i64(v) {
                Some(n) if n >= 1 => count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => {
                    reply::error(ctx.out, reply::SYNTAX);
                    return Outcome::Done;
                }
                None => {
                    reply::error(ctx.out, reply::NOT_INTEGER);
                    return Outcome::Done;
                }
            }
        } else if is(&args[i], "match") {
            pattern = Some(v.clone());
        } else if is(&args[i], "type") {
            type_filter = Some(v.clone());
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
        i += 2;
    }
    // TYPE compares the type's name (an unknown name matches nothing, as
    // in Redis 7.0).
    let m = matcher(pattern);
    let (next, keys) = ctx.engine().scan(ctx.db(), cursor, count, |k, t| {
        type_filter.as_ref().is_none_or(|f| is(f, t.name())) && m(k)
    });
    write_array_len(ctx.out, 2);
    write_bulk(ctx.out, next.to_string().as_bytes());
    write_array_len(ctx.out, keys.len());
    for k in keys {
        write_bulk(ctx.out, &k);
    }
    Outcome::Done
}

pub fn randomkey(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    match ctx.engine().random_key(ctx.db()) {
        Some(k) => write_bulk(ctx.out, &k),
        None => write_null(ctx.out, ctx.version()),
    }
    Outcome::Done
}

/// After a key was renamed, copied or moved into `dst` of `db`: clients
/// blocked on `dst` are served if it is now a list or sorted set.
fn serve_blocked(sink: &crate::command::ReadySink, db: usize, dst: Bytes) {
    sink.serve(db, vec![dst]);
}

pub fn rename(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let read = ctx.engine().rename(ctx.db(), &args[1], &args[2], false);
    let (sink, db, dst) = (ctx.ready_sink(), ctx.db(), args[2].clone());
    ctx.reply_with(read, true, move |out, _, r| match r {
        None => reply::error(out, reply::NO_SUCH_KEY),
        Some(_) => {
            serve_blocked(&sink, db, dst);
            write_simple(out, b"OK")
        }
    })
}

pub fn renamenx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let read = ctx.engine().rename(ctx.db(), &args[1], &args[2], true);
    let (sink, db, dst) = (ctx.ready_sink(), ctx.db(), args[2].clone());
    ctx.reply_with(read, true, move |out, _, r| match r {
        None => reply::error(out, reply::NO_SUCH_KEY),
        Some(done) => {
            if done {
                serve_blocked(&sink, db, dst);
            }
            write_integer(out, done as i64)
        }
    })
}

/// MOVE key db.
pub fn move_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let dst_db = match parse_i64(&args[2]) {
        Some(d) if d >= 0 && (d as u64) < ctx.engine().databases() as u64 => d as usize,
        Some(_) => {
            reply::error(ctx.out, reply::DB_RANGE);
            return Outcome::Done;
        }
        None => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            return Outcome::Done;
        }
    };
    if dst_db == ctx.db() {
        reply::error(ctx.out, crate::base::reply::SAME_OBJECT);
        return Outcome::Done;
    }
    let read = ctx.engine().move_key(ctx.db(), &args[1], dst_db);
    let (sink, key) = (ctx.ready_sink(), args[1].clone());
    ctx.reply_with(read, true, move |out, _, r| {
        let moved = matches!(r, Some(true));
        if moved {
            serve_blocked(&sink, dst_db, key);
        }
        write_integer(out, moved as i64)
    })
}

pub fn copy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut dst_db = ctx.db();
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "replace") {
            replace = true;
            i += 1;
        } else if is(&args[i], "db") && i + 1 < args.len() {
            // Redis: any integer out of range (negative too) is DB_RANGE.
            match parse_i64(&args[i + 1]) {
                Some(d) if d >= 0 && (d as u64) < ctx.engine().databases() as u64 => {
                    dst_db = d as usize
                }
                Some(_) => {
                    reply::error(ctx.out, reply::DB_RANGE);
                    return Outcome::Done;
                }
                None => {
                    reply::error(ctx.out, reply::NOT_INTEGER);
                    return Outcome::Done;
                }
            }
            i += 2;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    }
    if dst_db == ctx.db() && args[1] == args[2] {
        reply::error(ctx.out, crate::base::reply::SAME_OBJECT);
        return Outcome::Done;
    }
    let read = ctx
        .engine()
        .copy(ctx.db(), &args[1], dst_db, &args[2], replace);
    let (sink, dst) = (ctx.ready_sink(), args[2].clone());
    let engine = ctx.engine().clone();
    ctx.reply_with(read, true, move |out, _, r| {
        // Redis reads the source with lookupKeyRead: a hit or a miss.
        engine.count_lookup(r.is_some());
        let copied = matches!(r, Some(true));
        if copied {
            serve_blocked(&sink, dst_db, dst);
        }
        write_integer(out, copied as i64)
    })
}

fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    unit_ms: i64,
    absolute: bool,
    name: &str,
) -> Outcome {
    // Redis parses the options first, then the time.
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for a in &args[3..] {
        if is(a, "nx") {
            nx = true;
        } else if is(a, "xx") {
            xx = true;
        } else if is(a, "gt") {
            gt = true;
        } else if is(a, "lt") {
            lt = true;
        } else {
            reply::error(
                ctx.out,
                &format!("ERR Unsupported option {}", reply::lossy(a, 64)),
            );
            return Outcome::Done;
        }
    }
    if nx && (xx || gt || lt) {
        reply::error(
            ctx.out,
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        );
        return Outcome::Done;
    }
    if gt && lt {
        reply::error(
            ctx.out,
            "ERR GT and LT options at the same time are not compatible",
        );
        return Outcome::Done;
    }
    // XX GT is GT (GT already needs a TTL); XX LT needs both, atomically.
    let cond = if nx {
        ExpireCond::Nx
    } else if gt {
        ExpireCond::Gt
    } else if xx && lt {
        ExpireCond::XxLt
    } else if lt {
        ExpireCond::Lt
    } else if xx {
        ExpireCond::Xx
    } else {
        ExpireCond::Always
    };
    let Some(n) = parse_i64(&args[2]) else {
        reply::error(ctx.out, reply::NOT_INTEGER);
        return Outcome::Done;
    };
    let at = n.checked_mul(unit_ms).and_then(|ms| {
        if absolute {
            Some(ms)
        } else {
            (now_ms() as i64).checked_add(ms)
        }
    });
    let Some(at) = at else {
        reply::invalid_expire(ctx.out, name);
        return Outcome::Done;
    };
    // A time at or before now deletes the key (stored as 1 ms: in the past).
    let at = if at <= now_ms() as i64 { 1 } else { at as u64 };
    let done = ctx.engine().expire(ctx.db(), &args[1], at, cond);
    write_integer(ctx.out, done as i64);
    Outcome::Done
}

pub fn expire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    expire_generic(ctx, args, 1000, false, "expire")
}
pub fn pexpire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    expire_generic(ctx, args, 1, false, "pexpire")
}
pub fn expireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    expire_generic(ctx, args, 1000, true, "expireat")
}
pub fn pexpireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    expire_generic(ctx, args, 1, true, "pexpireat")
}

/// TTL family: -2 missing, -1 no TTL, else the value `f` derives.
fn ttl_generic(ctx: &mut Ctx<'_>, key: &[u8], f: impl Fn(u64) -> i64) -> Outcome {
    let state = ctx.engine().ttl(ctx.db(), key);
    ctx.engine()
        .count_lookup(!matches!(state, TtlState::Missing));
    let n = match state {
        TtlState::Missing => -2,
        TtlState::NoTtl => -1,
        TtlState::At(at) => f(at),
    };
    write_integer(ctx.out, n);
    Outcome::Done
}

pub fn ttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    // Redis rounds the remaining milliseconds to the nearest second.
    ttl_generic(ctx, &args[1], |at| {
        ((at.saturating_sub(now_ms()) + 500) / 1000) as i64
    })
}
pub fn pttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    ttl_generic(ctx, &args[1], |at| at.saturating_sub(now_ms()) as i64)
}
pub fn expiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    ttl_generic(ctx, &args[1], |at| (at / 1000) as i64)
}
pub fn pexpiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    ttl_generic(ctx, &args[1], |at| at as i64)
}

pub fn persist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let done = ctx.engine().persist(ctx.db(), &args[1]);
    write_integer(ctx.out, done as i64);
    Outcome::Done
}

/// DUMP key: the value in Redis's serialization format (`crate::base::rdb`).
pub fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    ctx.with_key(key.clone(), move |view, out, v| match view.get(&key) {
        Some(val) => write_bulk(out, &crate::base::rdb::dump(val)),
        None => write_null(out, v),
    })
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]`, with
/// Redis 7.0's order of checks (options, BUSYKEY, TTL, payload). IDLETIME
/// sets the key's idle time (OBJECT IDLETIME) unless an LFU policy is
/// selected; FREQ its access frequency (OBJECT FREQ) only under one.
pub fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None, None);
    let mut j = 4;
    while j < args.len() {
        let more = args.len() - j - 1;
        if is(&args[j], "replace") {
            replace = true;
        } else if is(&args[j], "absttl") {
            absttl = true;
        } else if is(&args[j], "idletime") && more >= 1 && freq.is_none() {
            match parse_i64(&args[j + 1]) {
                None => {
                    reply::error(ctx.out, reply::NOT_INTEGER);
                    return Outcome::Done;
                }
                Some(n) if n < 0 => {
                    reply::error(ctx.out, "ERR Invalid IDLETIME value, must be >= 0");
                    return Outcome::Done;
                }
                Some(n) => idle = Some(n as u64),
            }
            j += 1;
        } else if is(&args[j], "freq") && more >= 1 && idle.is_none() {
            match parse_i64(&args[j + 1]) {
                None => {
                    reply::error(ctx.out, reply::NOT_INTEGER);
                    return Outcome::Done;
                }
                Some(n) if !(0..=255).contains(&n) => {
                    reply::error(ctx.out, "ERR Invalid FREQ value, must be >= 0 and <= 255");
                    return Outcome::Done;
                }
                Some(n) => freq = Some(n as u8),
            }
            j += 1;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
        j += 1;
    }
    let (key, ttl, payload) = (args[1].clone(), args[2].clone(), args[3].clone());
    ctx.with_key(key.clone(), move |view, out, _| {
        if !replace && view.vtype(&key).is_some() {
            reply::error(out, "BUSYKEY Target key name already exists.");
            return;
        }
        let ttl = match parse_i64(&ttl) {
            None => return reply::error(out, reply::NOT_INTEGER),
            Some(t) if t < 0 => return reply::error(out, "ERR Invalid TTL value, must be >= 0"),
            Some(t) => t as u64,
        };
        let value = match crate::base::rdb::restore(&payload) {
            // Loaded as Redis loads it: a small sorted set becomes a
            // listpack, which keeps no -0 score.
            Ok(strata_engine::Value::Coll(c)) => match *c {
                strata_engine::Collection::ZSet(z) => {
                    let z = super::zset::normalize_for_store(z, &view.encoding_limits());
                    strata_engine::Value::Coll(Box::new(strata_engine::Collection::ZSet(z)))
                }
                c => strata_engine::Value::Coll(Box::new(c)),
            },
            Ok(v) => v,
            Err(crate::base::rdb::Refused::VersionOrChecksum) => {
                return reply::error(out, crate::base::reply::BAD_DUMP)
            }
            Err(crate::base::rdb::Refused::BadFormat) => {
                return reply::error(out, crate::base::reply::BAD_DATA_FORMAT)
            }
        };
        let at = match ttl {
            0 => 0,
            t if absttl => t,
            t => now_ms().saturating_add(t),
        };
        if at != 0 && at <= now_ms() {
            // Already expired: the old value (REPLACE) is gone, nothing new.
            view.delete(&key);
        } else {
            view.put_expiring(&key, value, at);
            if let Some(f) = freq {
                view.set_freq(&key, f);
            }
            if let Some(secs) = idle {
                view.set_idle(&key, secs);
            }
        }
        write_simple(out, b"OK");
    })
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("del", -2, &["write"], KALL, "generic", "Deletes one or more keys.", del),
    cmd("unlink", -2, WD, KALL, "generic", "Asynchronously deletes one or more keys.", del),
    cmd("exists", -2, RF, KALL, "generic", "Determines whether one or more keys exist.", exists),
    cmd("touch", -2, RF, KALL, "generic", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", touch).role(Role::Touch),
    cmd("type", 2, RF, K1, "generic", "Determines the type of value stored at a key.", type_),
    cmd("keys", 2, &["readonly"], K0, "generic", "Returns all key names that match a pattern.", keys),
    cmd("scan", -2, &["readonly"], K0, "generic", "Iterates over the key names in the database.", scan),
    cmd("randomkey", 1, &["readonly"], K0, "generic", "Returns a random key name from the database.", randomkey),
    cmd("rename", 3, &["write"], K2, "generic", "Renames a key and overwrites the destination.", rename),
    cmd("renamenx", 3, WD, K2, "generic", "Renames a key only when the target key name doesn't exist.", renamenx),
    cmd("dump", 2, R, K1, "generic", "Returns a serialized representation of the value stored at a key.", dump),
    cmd("restore", -4, W, K1, "generic", "Creates a key from the serialized representation of a value.", restore),
    cmd("move", 3, WD, K1, "generic", "Moves a key to another database.", move_),
    cmd("copy", -3, W, K2, "generic", "Copies the value of a key to a new key.", copy).with(Flags::READS_SOURCES),
    cmd("expire", -3, WD, K1, "generic", "Sets the expiration time of a key in seconds.", expire),
    cmd("pexpire", -3, WD, K1, "generic", "Sets the expiration time of a key in milliseconds.", pexpire),
    cmd("expireat", -3, WD, K1, "generic", "Sets the expiration time of a key to a Unix timestamp.", expireat),
    cmd("pexpireat", -3, WD, K1, "generic", "Sets the expiration time of a key to a Unix milliseconds timestamp.", pexpireat),
    cmd("ttl", 2, RF, K1, "generic", "Returns the expiration time in seconds of a key.", ttl),
    cmd("pttl", 2, RF, K1, "generic", "Returns the expiration time in milliseconds of a key.", pttl),
    cmd("persist", 2, WD, K1, "generic", "Removes the expiration time of a key.", persist),
    cmd("expiretime", 2, RF, K1, "generic", "Returns the expiration time of a key as a Unix timestamp.", expiretime),
    cmd("pexpiretime", 2, RF, K1, "generic", "Returns the expiration time of a key as a Unix milliseconds timestamp.", pexpiretime),
];

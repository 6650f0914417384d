//! Stream commands, as Redis 7.0 answers them: XADD XLEN XDEL XTRIM
//! XSETID here; XRANGE and XREVRANGE in `range`; XREAD and XREADGROUP
//! (with BLOCK) in `read`; the consumer groups (XGROUP XACK XPENDING) in `group`, XCLAIM and
//! XAUTOCLAIM in `claim`; XINFO in `info`. The stream itself, with Redis's node layout,
//! trimming and read counters, is `strata_engine::types::stream`.
//!
//! Arguments are checked in Redis's order (some before the key is looked
//! up, some after: XDEL looks the key up first), with its error texts. A
//! write that changes nothing (XACK of nothing pending, XDEL of missing
//! ids) leaves the key unchanged, as Redis signals no modification.

mod claim;
mod group;
mod info;
mod range;
mod read;

pub use claim::{xautoclaim, xclaim};
pub use group::{xack, xgroup, xpending};
pub use info::xinfo;
pub use range::{xrange, xrevrange};
pub use read::{xread, xreadgroup};

use super::{is, parse_i64};
use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use bytes::{Bytes, BytesMut};
use strata_engine::clock::now_ms;
use strata_engine::types::stream::{EntryRef, StreamId, StreamNeed, Trim, LISTPACK_MAX};
use strata_engine::types::Stream;
use strata_engine::{Collection, EngineError, KeysView, Need, ValueType};
use strata_protocol::{write_array_len, write_bulk, write_integer, write_null, write_simple};

pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// The stream at `key` (None if missing).
fn get<'v>(view: &'v mut KeysView<'_>, key: &[u8]) -> Result<Option<&'v Stream>, EngineError> {
    match view.coll(key, ValueType::Stream)? {
        Some(Collection::Stream(s)) => Ok(Some(s)),
        _ => Ok(None),
    }
}

/// The stream at `key` to change, created if `create`.
fn get_mut<'v>(
    view: &'v mut KeysView<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'v mut Stream>, EngineError> {
    match view.coll_mut(key, ValueType::Stream, create)? {
        Some(Collection::Stream(s)) => Ok(Some(s)),
        _ => Ok(None),
    }
}

/// The parts of a chunked stream these needs name (the others stay where
/// they are: a command on a cold stream reads only the parts it touches).
fn need(needs: Vec<StreamNeed>) -> Need {
    Need::Stream(needs)
}

/// Records the stream events a command caused on `key` (keyspace
/// notifications: which ones fire depends on what the command did).
fn events(key: &[u8], names: &[&'static str]) {
    crate::services::notify::stream_events(key, names);
}

/// `string2ull`: a canonical i64 that is not negative, or what C's
/// `strtoull` accepts (leading blanks, a sign, decimal digits; a minus
/// wraps), the string ending at its first NUL as in C.
fn parse_ull(b: &[u8]) -> Option<u64> {
    let b = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
    if let Some(v) = parse_i64(b) {
        return u64::try_from(v).ok();
    }
    let mut s = b;
    while let [c, rest @ ..] = s {
        if matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
            s = rest;
        } else {
            break;
        }
    }
    let neg = match s.first() {
        Some(b'-') => {
            s = &s[1..];
            true
        }
        Some(b'+') => {
            s = &s[1..];
            false
        }
        _ => false,
    };
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in s {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// An id as `streamGenericParseIDOrReply` reads it: `ms-seq`, `ms` (the
/// sequence then `missing_seq`), `-` and `+` unless `strict`; with
/// `seq_star`, `ms-*` too (the bool is false then: the sequence is to be
/// generated).
fn parse_id_full(
    b: &[u8],
    missing_seq: u64,
    strict: bool,
    seq_star: bool,
) -> Result<(StreamId, bool), &'static str> {
    if b.len() > 127 {
        return Err(INVALID_ID);
    }
    let c = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
    if c == b"-" || c == b"+" {
        if strict {
            return Err(INVALID_ID);
        }
        return Ok((
            if c == b"-" {
                StreamId::MIN
            } else {
                StreamId::MAX
            },
            true,
        ));
    }
    let (ms, seq) = match c.iter().position(|&x| x == b'-') {
        Some(d) => (&c[..d], Some(&c[d + 1..])),
        None => (c, None),
    };
    let ms = parse_ull(ms).ok_or(INVALID_ID)?;
    match seq {
        Some(b"*") if seq_star => Ok((StreamId::new(ms, 0), false)),
        Some(s) => Ok((StreamId::new(ms, parse_ull(s).ok_or(INVALID_ID)?), true)),
        None => Ok((StreamId::new(ms, missing_seq), true)),
    }
}

/// A strict id (no `-` or `+`), the sequence 0 if missing.
pub fn parse_strict_id(b: &[u8]) -> Result<StreamId, &'static str> {
    parse_id_full(b, 0, true, false).map(|r| r.0)
}

/// An id where `-` and `+` are allowed.
fn parse_id(b: &[u8], missing_seq: u64) -> Result<StreamId, &'static str> {
    parse_id_full(b, missing_seq, false, false).map(|r| r.0)
}

/// One end of a range (`streamParseIntervalIDOrReply`): `(id` excludes it
/// (strictly parsed), with Redis's errors for an end that cannot move.
fn parse_bound(b: &[u8], start: bool) -> Result<StreamId, &'static str> {
    let missing = if start { 0 } else { u64::MAX };
    if b.len() > 1 && b[0] == b'(' {
        let id = parse_id_full(&b[1..], missing, true, false)?.0;
        if start {
            id.incr().ok_or("ERR invalid start ID for the interval")
        } else {
            id.decr().ok_or("ERR invalid end ID for the interval")
        }
    } else {
        parse_id(b, missing)
    }
}

/// `NOGROUP No such key 'k' or consumer group 'g'` (+ `suffix`).
fn nogroup(key: &[u8], group: &[u8], suffix: &str) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'{suffix}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

/// `NOGROUP No such consumer group 'g' for key name 'k'`.
fn no_such_group(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    )
}

/// Writes an id as a bulk string.
fn write_id(out: &mut BytesMut, id: StreamId) {
    write_bulk(out, id.to_string().as_bytes());
}

/// Writes an entry: `[id, [field, value, ...]]`.
fn write_entry(out: &mut BytesMut, e: &EntryRef<'_>) {
    write_array_len(out, 2);
    write_id(out, e.id);
    write_array_len(out, 2 * e.pairs());
    for x in e.elems() {
        write_bulk(out, x);
    }
}

/// The trimming and creation options of XADD and XTRIM
/// (`streamParseAddOrTrimArgsOrReply`).
#[derive(Clone, Debug, Default)]
struct AddArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    nomkstream: bool,
    /// XADD's id, if given (not `*`), and whether its sequence was.
    id: Option<(StreamId, bool)>,
    /// Index of the id argument (XADD).
    id_pos: usize,
}

fn parse_add_args(args: &[Bytes], xadd: bool, node_entries: u64) -> Result<AddArgs, String> {
    let mut a = AddArgs::default();
    let mut limit: Option<i64> = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if a.trim.is_some() {
                return Err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
                        .into(),
                );
            }
            a.approx = false;
            let next = &args[i + 1][..];
            if more >= 2 && next == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            if is(opt, "maxlen") {
                let n = parse_i64(&args[i + 1]).ok_or(reply::NOT_INTEGER)?;
                if n < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.".into());
                }
                a.trim = Some(Trim::MaxLen(n as u64));
            } else {
                a.trim = Some(Trim::MinId(parse_strict_id(&args[i + 1])?));
            }
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let n = parse_i64(&args[i + 1]).ok_or(reply::NOT_INTEGER)?;
            if n < 0 {
                return Err("ERR The LIMIT argument must be >= 0.".into());
            }
            limit = Some(n);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            a.nomkstream = true;
        } else if xadd {
            a.id = Some(parse_id_full(opt, 0, true, true)?);
            break;
        } else {
            return Err(reply::SYNTAX.into());
        }
        i += 1;
    }
    a.id_pos = i;
    if limit.is_some_and(|l| l != 0) && a.trim.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if !xadd && a.trim.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    match limit {
        Some(_) if !a.approx => {
            return Err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option".into(),
            )
        }
        Some(l) => a.limit = l as u64,
        None if a.approx => {
            let l = node_entries.saturating_mul(100);
            a.limit = if l == 0 { 10_000 } else { l.min(1_000_000) };
        }
        None => a.limit = 0,
    }
    Ok(a)
}

pub fn xadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let node_entries = ctx.engine().encoding_limits().stream.max_entries;
    let a = match parse_add_args(args, true, node_entries) {
        Ok(a) => a,
        Err(e) => {
            reply::error(ctx.out, &e);
            return Outcome::Done;
        }
    };
    let fields = args.len() as i64 - (a.id_pos as i64 + 1);
    if fields < 2 || fields % 2 == 1 {
        reply::arity(ctx.out, "xadd");
        return Outcome::Done;
    }
    if let Some((id, true)) = a.id {
        if id.is_zero() {
            reply::error(
                ctx.out,
                "ERR The ID specified in XADD must be greater than 0-0",
            );
            return Outcome::Done;
        }
    }
    let key = args[1].clone();
    let pairs: Vec<Bytes> = args[a.id_pos + 1..].to_vec();
    let plan = need(vec![StreamNeed::Append(a.trim.map(|t| (t, a.limit)))]);
    ctx.with_key_need(key.clone(), plan, move |view, out, v| {
        let lim = view.encoding_limits().stream;
        let s = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) if a.nomkstream => return write_null(out, v),
            Ok(s) => s,
        };
        let last = s.map_or(StreamId::MIN, |s| s.last_id);
        if last == StreamId::MAX {
            return reply::error(
                out,
                "ERR The stream has exhausted the last possible ID, unable to add more items",
            );
        }
        let id = match a.id {
            Some((id, true)) => Some(id),
            Some((id, false)) if id.ms == last.ms => last.incr().filter(|n| n.ms == id.ms),
            Some((id, false)) => Some(id),
            None => last.next_after(now_ms()),
        };
        let Some(id) = id else {
            return reply::error(out, crate::base::reply::TOO_LARGE);
        };
        if id <= last {
            return reply::error(
                out,
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            );
        }
        if pairs.iter().map(|p| p.len() as u64).sum::<u64>() > LISTPACK_MAX {
            return reply::error(out, crate::base::reply::TOO_LARGE);
        }
        let Ok(Some(s)) = get_mut(view, &key, true) else {
            return reply::error(out, crate::base::reply::TOO_LARGE);
        };
        let refs: Vec<&[u8]> = pairs.iter().map(|p| &p[..]).collect();
        s.append(id, &refs, lim);
        write_id(out, id);
        let trimmed = match a.trim {
            Some(t) => s.trim(t, a.approx, a.limit) > 0,
            None => false,
        };
        events(
            &key,
            if trimmed {
                &["xadd", "xtrim"]
            } else {
                &["xadd"]
            },
        );
    })
}

pub fn xlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    ctx.with_key_need(
        key.clone(),
        need(Vec::new()),
        move |view, out, _| match get(view, &key) {
            Ok(s) => write_integer(out, s.map_or(0, |s| s.len()) as i64),
            Err(e) => reply::engine(out, &e),
        },
    )
}

pub fn xdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    let ids: Result<Vec<StreamId>, _> = args[2..].iter().map(|b| parse_strict_id(b)).collect();
    let plan = need(match &ids {
        Ok(ids) => vec![StreamNeed::Ids {
            ids: ids.clone(),
            deletes: true,
        }],
        Err(_) => Vec::new(),
    });
    ctx.with_key_need(key.clone(), plan, move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(Some(_)) => {}
        }
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => return reply::error(out, e),
        };
        let n = match get_mut(view, &key, false) {
            Ok(Some(s)) => s.delete(&ids),
            _ => 0,
        };
        if n == 0 {
            view.unchanged(&key);
        } else {
            events(&key, &["xdel"]);
        }
        write_integer(out, n as i64);
    })
}

pub fn xtrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let node_entries = ctx.engine().encoding_limits().stream.max_entries;
    let a = match parse_add_args(args, false, node_entries) {
        Ok(a) => a,
        Err(e) => {
            reply::error(ctx.out, &e);
            return Outcome::Done;
        }
    };
    let key = args[1].clone();
    let plan = need(
        a.trim
            .map(|t| StreamNeed::Trim(t, a.limit))
            .into_iter()
            .collect(),
    );
    ctx.with_key_need(key.clone(), plan, move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(Some(_)) => {}
        }
        let n = match (get_mut(view, &key, false), a.trim) {
            (Ok(Some(s)), Some(t)) => s.trim(t, a.approx, a.limit),
            _ => 0,
        };
        if n == 0 {
            view.unchanged(&key);
        } else {
            events(&key, &["xtrim"]);
        }
        write_integer(out, n as i64);
    })
}

pub fn xsetid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let parsed = (|| -> Result<(StreamId, Option<u64>, StreamId), &'static str> {
        let id = parse_strict_id(&args[2])?;
        let (mut added, mut maxdel) = (None, StreamId::MIN);
        let mut i = 3;
        while i < args.len() {
            let more = args.len() - 1 - i;
            if is(&args[i], "entriesadded") && more > 0 {
                let n = parse_i64(&args[i + 1]).ok_or(reply::NOT_INTEGER)?;
                if n < 0 {
                    return Err("ERR entries_added must be positive");
                }
                added = Some(n as u64);
            } else if is(&args[i], "maxdeletedid") && more > 0 {
                maxdel = parse_strict_id(&args[i + 1])?;
                if id < maxdel {
                    return Err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
                }
            } else {
                return Err(reply::SYNTAX);
            }
            i += 2;
        }
        Ok((id, added, maxdel))
    })();
    let (id, added, maxdel) = match parsed {
        Ok(p) => p,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let key = args[1].clone();
    ctx.with_key_need(key.clone(), need(vec![StreamNeed::Edges]), move |view, out, _| {
        let s = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return reply::error(out, reply::NO_SUCH_KEY),
            Ok(Some(s)) => s,
        };
        if !s.is_empty() {
            if s.last_valid_id().is_some_and(|m| id < m) {
                return reply::error(
                    out,
                    "ERR The ID specified in XSETID is smaller than the target stream top item",
                );
            }
            if added.is_some_and(|a| s.len() > a) {
                return reply::error(
                    out,
                    "ERR The entries_added specified in XSETID is smaller than the target stream length",
                );
            }
        }
        if let Ok(Some(s)) = get_mut(view, &key, false) {
            s.last_id = id;
            if let Some(a) = added {
                s.entries_added = a;
            }
            if !maxdel.is_zero() {
                s.max_deleted = maxdel;
            }
        }
        view.quiet(&key);
        events(&key, &["xsetid"]);
        write_simple(out, b"OK");
    })
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("xadd", -5, WF, K1, "stream", "Appends a new message to a stream. Creates the key if it doesn't exist.", xadd),
    cmd("xrange", -4, R, K1, "stream", "Returns the messages from a stream within a range of IDs.", xrange),
    cmd("xrevrange", -4, R, K1, "stream", "Returns the messages from a stream within a range of IDs in reverse order.", xrevrange),
    cmd("xlen", 2, RF, K1, "stream", "Return the number of messages in a stream.", xlen),
    cmd("xdel", -3, WD, K1, "stream", "Returns the number of messages after removing them from a stream.", xdel),
    cmd("xtrim", -4, &["write"], K1, "stream", "Deletes messages from the beginning of a stream.", xtrim),
    cmd("xsetid", -3, WF, K1, "stream", "An internal command for replicating stream values.", xsetid),
    cmd("xread", -4, &["readonly", "blocking", "movablekeys"], K0, "stream", "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", xread),
    cmd("xreadgroup", -7, &["write", "blocking", "movablekeys"], K0, "stream", "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", xreadgroup),
    cmd("xgroup", -2, &[], K0, "stream", "A container for consumer groups commands.", xgroup),
    cmd("xack", -4, WD, K1, "stream", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", xack),
    cmd("xpending", -3, R, K1, "stream", "Returns the information and entries from a stream consumer group's pending entries list.", xpending),
    cmd("xclaim", -6, WD, K1, "stream", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", xclaim),
    cmd("xautoclaim", -6, WD, K1, "stream", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", xautoclaim),
    cmd("xinfo", -2, &[], K0, "stream", "A container for stream introspection commands.", xinfo),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_parses_them() {
        let id = |b: &[u8]| parse_strict_id(b).ok();
        assert_eq!(id(b"5"), Some(StreamId::new(5, 0)));
        assert_eq!(id(b"5-3"), Some(StreamId::new(5, 3)));
        assert_eq!(id(b"05-+3"), Some(StreamId::new(5, 3)));
        assert_eq!(id(b"5--3"), None);
        assert_eq!(id(b"5-"), None);
        assert_eq!(id(b"-"), None);
        assert_eq!(id(b"18446744073709551616"), None);
        assert_eq!(parse_id(b"+", 0), Ok(StreamId::MAX));
        assert_eq!(parse_bound(b"(5", true), Ok(StreamId::new(5, 1)));
        assert_eq!(
            parse_bound(b"(5", false),
            Ok(StreamId::new(5, u64::MAX - 1))
        );
        assert_eq!(parse_bound(b"(5-0", false), Ok(StreamId::new(4, u64::MAX)));
        assert!(parse_bound(b"(0-0", false).is_err());
    }
}

//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX
//! LSET LINSERT LREM LTRIM LPOS here, LMOVE RPOPLPUSH LMPOP in `moves`, as
//! Redis 7.0 answers them (the blocking forms are in `blocking`). Each
//! names the elements it touches (`Need`), so of a chunked list only their
//! parts are loaded.

mod moves;

pub use moves::{lmove, lmpop, mpop, parse_mpop, rpoplpush, MpopArgs};

use super::{is, parse_i64};
use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use bytes::{Bytes, BytesMut};
use strata_engine::types::List;
use strata_engine::{Collection, EngineError, KeysView, Need, ValueType};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_null_array, write_simple, Version,
};

pub fn get<'v>(view: &'v mut KeysView<'_>, key: &[u8]) -> Result<Option<&'v List>, EngineError> {
    match view.coll(key, ValueType::List)? {
        Some(Collection::List(l)) => Ok(Some(l)),
        _ => Ok(None),
    }
}

pub fn get_mut<'v>(
    view: &'v mut KeysView<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'v mut List>, EngineError> {
    match view.coll_mut(key, ValueType::List, create)? {
        Some(Collection::List(l)) => Ok(Some(l)),
        _ => Ok(None),
    }
}

/// The elements at these indexes (inclusive ranges, negative from the
/// end): of a chunked list only their parts are loaded.
fn at(ranges: &[(i64, i64)]) -> Need {
    Need::indexes(ranges)
}

/// The element at a list index argument (nothing if it is not a number:
/// the command answers an error).
fn index_need(index: &[u8]) -> Need {
    match parse_i64(index) {
        Some(i) => at(&[(i, i)]),
        None => at(&[]),
    }
}

/// The end a push or a pop of `n` elements touches.
pub fn end(left: bool, n: u64) -> Need {
    let n = n.clamp(1, i64::MAX as u64) as i64;
    if left {
        at(&[(0, n - 1)])
    } else {
        at(&[(-n, -1)])
    }
}

fn read(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    need: Need,
    f: impl FnOnce(Option<&List>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_key_need(key.clone(), need, move |view, out, v| {
        match get(view, &key) {
            Ok(l) => f(l, out, v),
            Err(e) => reply::engine(out, &e),
        }
    })
}

fn push(ctx: &mut Ctx<'_>, args: &[Bytes], left: bool, only_existing: bool) -> Outcome {
    let key = args[1].clone();
    let elems: Vec<Bytes> = args[2..].to_vec();
    ctx.with_key_need(key.clone(), end(left, 1), move |view, out, _| {
        // (A write's lookup: no keyspace hit or miss, as Redis's
        // lookupKeyWrite.)
        let l = match get_mut(view, &key, !only_existing) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(Some(l)) => l,
        };
        for e in &elems {
            if left {
                l.push_front(e[..].into());
            } else {
                l.push_back(e[..].into());
            }
        }
        write_integer(out, l.len() as i64);
    })
}

pub fn lpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    push(ctx, args, true, false)
}
pub fn rpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    push(ctx, args, false, false)
}
pub fn lpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    push(ctx, args, true, true)
}
pub fn rpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    push(ctx, args, false, true)
}

fn pop(ctx: &mut Ctx<'_>, args: &[Bytes], left: bool, name: &str) -> Outcome {
    if args.len() > 3 {
        reply::arity(ctx.out, name);
        return Outcome::Done;
    }
    let count = match args.get(2).map(|c| parse_i64(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as u64),
        Some(_) => {
            reply::error(ctx.out, reply::NOT_POSITIVE_COUNT);
            return Outcome::Done;
        }
    };
    let key = args[1].clone();
    let need = end(left, count.unwrap_or(1));
    ctx.with_key_need(key.clone(), need, move |view, out, v| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => {
                return match count {
                    None => write_null(out, v),
                    Some(_) => write_null_array(out, v),
                }
            }
            Ok(Some(_)) if count == Some(0) => return write_array_len(out, 0),
            Ok(Some(_)) => {}
        }
        let Ok(Some(l)) = get_mut(view, &key, false) else {
            return write_null(out, v);
        };
        let mut take = || if left { l.pop_front() } else { l.pop_back() };
        match count {
            None => match take() {
                Some(e) => write_bulk(out, &e),
                None => write_null(out, v),
            },
            Some(n) => {
                let mut got = Vec::new();
                for _ in 0..n {
                    match take() {
                        Some(e) => got.push(e),
                        None => break,
                    }
                }
                write_array_len(out, got.len());
                for e in got {
                    write_bulk(out, &e);
                }
            }
        }
    })
}

pub fn lpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    pop(ctx, args, true, "lpop")
}
pub fn rpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    pop(ctx, args, false, "rpop")
}

pub fn llen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    read(ctx, &args[1], at(&[]), |l, out, _| {
        write_integer(out, l.map_or(0, |l| l.len()) as i64)
    })
}

/// Redis's clamping of a [start, end] range over `len` elements: None if
/// empty.
pub fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 {
        start.saturating_add(len)
    } else {
        start
    };
    let mut end = if end < 0 {
        end.saturating_add(len)
    } else {
        end
    };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

fn two_ints(ctx: &mut Ctx<'_>, a: &[u8], b: &[u8]) -> Option<(i64, i64)> {
    match (parse_i64(a), parse_i64(b)) {
        (Some(x), Some(y)) => Some((x, y)),
        _ => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            None
        }
    }
}

pub fn lrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some((start, end)) = two_ints(ctx, &args[2], &args[3]) else {
        return Outcome::Done;
    };
    // Of a chunked list, a batch of parts at a time (`Ctx::stream_key`):
    // a list larger than RAM is read without being held in RAM at once; a
    // short range's parts are read with the first step (one pass).
    let k = args[1].clone();
    let first = if short_range((start, end)) {
        at(&[(start, end)])
    } else {
        Need::Elems(Vec::new())
    };
    ctx.stream_key_from(
        args[1].clone(),
        false,
        first,
        move |view, out, _| {
            let l = match get(view, &k) {
                Ok(l) => l,
                Err(e) => {
                    reply::engine(out, &e);
                    return None;
                }
            };
            let Some((l, (s, e))) = l.and_then(|l| Some((l, clamp_range(start, end, l.len())?)))
            else {
                write_array_len(out, 0);
                return None;
            };
            write_array_len(out, e - s + 1);
            if let Some(c) = l.chunked() {
                // About the range's share of the list.
                let n = e - s + 1;
                out.reserve((l.body_len() as u128 * n as u128 / l.len() as u128) as usize + 4 * n);
                return Some(c.parts_for(s, e + 1));
            }
            for x in l.iter_from(s).take(e - s + 1) {
                write_bulk(out, x);
            }
            None
        },
        move |c, parts, out, _| {
            let strata_engine::Collection::List(l) = c else {
                return;
            };
            if let (Some(c), Some((s, e))) = (l.chunked(), clamp_range(start, end, l.len())) {
                for x in c.range_in_parts(parts, s, e + 1) {
                    write_bulk(out, x);
                }
            }
        },
    )
}

/// Whether an inclusive index range (both ends from the start, or both
/// from the end) spans at most 1,000 elements: a streamed read loads its
/// parts with its first step.
pub fn short_range((a, b): (i64, i64)) -> bool {
    (a >= 0) == (b >= 0) && b.saturating_sub(a) < 1000
}

/// A list index (negative counts from the end) as a position, if in range.
fn position(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 {
        index.checked_add(len as i64)?
    } else {
        index
    };
    (i >= 0 && (i as u64) < len as u64).then_some(i as usize)
}

pub fn lindex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let index = args[2].clone();
    let need = index_need(&index);
    // Redis checks the key's type before the index.
    read(ctx, &args[1], need, move |l, out, v| {
        let Some(l) = l else {
            return write_null(out, v);
        };
        let Some(i) = parse_i64(&index) else {
            return reply::error(out, reply::NOT_INTEGER);
        };
        match position(i, l.len()).and_then(|p| l.get(p)) {
            Some(x) => write_bulk(out, x),
            None => write_null(out, v),
        }
    })
}

pub fn lset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (key, index, elem) = (args[1].clone(), args[2].clone(), args[3].clone());
    let need = index_need(&index);
    ctx.with_key_need(key.clone(), need, move |view, out, _| {
        let len = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return reply::error(out, reply::NO_SUCH_KEY),
            Ok(Some(l)) => l.len(),
        };
        let Some(i) = parse_i64(&index) else {
            return reply::error(out, reply::NOT_INTEGER);
        };
        let Some(p) = position(i, len) else {
            return reply::error(out, "ERR index out of range");
        };
        if let Ok(Some(l)) = get_mut(view, &key, false) {
            l.set(p, &elem);
        }
        write_simple(out, b"OK");
    })
}

pub fn linsert(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let after = if is(&args[2], "after") {
        true
    } else if is(&args[2], "before") {
        false
    } else {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    };
    let (key, pivot, elem) = (args[1].clone(), args[3].clone(), args[4].clone());
    ctx.with_key(key.clone(), move |view, out, _| {
        let at = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(Some(l)) => l.iter().position(|x| x == &pivot[..]),
        };
        let Some(at) = at else {
            return write_integer(out, -1);
        };
        let mut len = 0;
        if let Ok(Some(l)) = get_mut(view, &key, false) {
            l.insert(if after { at + 1 } else { at }, &elem);
            len = l.len();
        }
        write_integer(out, len as i64);
    })
}

pub fn lrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(count) = parse_i64(&args[2]) else {
        reply::error(ctx.out, reply::NOT_INTEGER);
        return Outcome::Done;
    };
    let (key, elem) = (args[1].clone(), args[3].clone());
    ctx.with_key(key.clone(), move |view, out, _| {
        let total = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(Some(l)) => l.iter().filter(|x| *x == &elem[..]).count(),
        };
        if total == 0 {
            return write_integer(out, 0);
        }
        let limit = if count == 0 {
            total
        } else {
            (count.unsigned_abs() as usize).min(total)
        };
        // From the tail: skip the first (total - limit) matches.
        let mut skip = if count < 0 { total - limit } else { 0 };
        let mut left = limit;
        if let Ok(Some(l)) = get_mut(view, &key, false) {
            l.retain(|x| {
                if x != &elem[..] || left == 0 {
                    return true;
                }
                if skip > 0 {
                    skip -= 1;
                    return true;
                }
                left -= 1;
                false
            });
        }
        write_integer(out, limit as i64);
    })
}

pub fn ltrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some((start, end)) = two_ints(ctx, &args[2], &args[3]) else {
        return Outcome::Done;
    };
    let key = args[1].clone();
    // Only the parts where the kept range begins and ends change.
    let need = at(&[(start, start), (end, end)]);
    ctx.with_key_need(key.clone(), need, move |view, out, _| {
        let len = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_simple(out, b"OK"),
            Ok(Some(l)) => l.len(),
        };
        let keep = clamp_range(start, end, len);
        // Even when it trims nothing, LTRIM counts as a change (Redis
        // signals the key and sends `ltrim` whatever it removed).
        if let Ok(Some(l)) = get_mut(view, &key, false) {
            if keep != Some((0, len - 1)) {
                match keep {
                    Some((s, e)) => l.keep_range(s, e),
                    None => l.keep_range(1, 0),
                }
            }
        }
        write_simple(out, b"OK");
    })
}

pub fn lpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<u64>, 0u64);
    let mut j = 3;
    while j < args.len() {
        let more = args.len() - j - 1;
        let opt = &args[j];
        if is(opt, "rank") && more >= 1 {
            match parse_i64(&args[j + 1]) {
                None => {
                    reply::error(ctx.out, reply::NOT_INTEGER);
                    return Outcome::Done;
                }
                Some(0) => {
                    reply::error(ctx.out, "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
                    return Outcome::Done;
                }
                Some(i64::MIN) => {
                    reply::error(ctx.out, crate::base::reply::OUT_OF_RANGE);
                    return Outcome::Done;
                }
                Some(r) => rank = r,
            }
        } else if is(opt, "count") && more >= 1 {
            match parse_i64(&args[j + 1]) {
                Some(n) if n >= 0 => count = Some(n as u64),
                _ => {
                    reply::error(ctx.out, "ERR COUNT can't be negative");
                    return Outcome::Done;
                }
            }
        } else if is(opt, "maxlen") && more >= 1 {
            match parse_i64(&args[j + 1]) {
                Some(n) if n >= 0 => maxlen = n as u64,
                _ => {
                    reply::error(ctx.out, "ERR MAXLEN can't be negative");
                    return Outcome::Done;
                }
            }
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
        j += 2;
    }
    let elem = args[2].clone();
    read(ctx, &args[1], Need::Whole, move |l, out, v| {
        let Some(l) = l else {
            return match count {
                Some(_) => write_array_len(out, 0),
                None => write_null(out, v),
            };
        };
        let len = l.len();
        let want = match count {
            None => 1,
            Some(0) => usize::MAX,
            Some(n) => n as usize,
        };
        let mut skip = rank.unsigned_abs() - 1;
        let mut found = Vec::new();
        let limit = if maxlen == 0 {
            len
        } else {
            (maxlen as usize).min(len)
        };
        let mut visit = |i: usize, x: &[u8]| {
            if x == &elem[..] {
                if skip > 0 {
                    skip -= 1;
                } else {
                    found.push(i);
                }
            }
            found.len() < want
        };
        if rank > 0 {
            for (i, x) in l.iter().enumerate().take(limit) {
                if !visit(i, x) {
                    break;
                }
            }
        } else {
            for (i, x) in l.iter().enumerate().rev().take(limit) {
                if !visit(i, x) {
                    break;
                }
            }
        }
        match count {
            None => match found.first() {
                Some(&i) => write_integer(out, i as i64),
                None => write_null(out, v),
            },
            Some(_) => {
                write_array_len(out, found.len());
                for i in found {
                    write_integer(out, i as i64);
                }
            }
        }
    })
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("lpush", -3, WF, K1, "list", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", lpush),
    cmd("rpush", -3, WF, K1, "list", "Appends one or more elements to a list. Creates the key if it doesn't exist.", rpush),
    cmd("lpushx", -3, WF, K1, "list", "Prepends one or more elements to a list only when the list exists.", lpushx),
    cmd("rpushx", -3, WF, K1, "list", "Appends an element to a list only when the list exists.", rpushx),
    cmd("lpop", -2, WD, K1, "list", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", lpop),
    cmd("rpop", -2, WD, K1, "list", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", rpop),
    cmd("llen", 2, RF, K1, "list", "Returns the length of a list.", llen),
    cmd("lrange", 4, R, K1, "list", "Returns a range of elements from a list.", lrange),
    cmd("lindex", 3, R, K1, "list", "Returns an element from a list by its index.", lindex),
    cmd("lset", 4, W, K1, "list", "Sets the value of an element in a list by its index.", lset),
    cmd("linsert", 5, W, K1, "list", "Inserts an element before or after another element in a list.", linsert),
    cmd("lrem", 4, &["write"], K1, "list", "Removes elements from a list. Deletes the list if the last element was removed.", lrem),
    cmd("ltrim", 4, &["write"], K1, "list", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", ltrim),
    cmd("lpos", -3, R, K1, "list", "Returns the index of matching elements in a list.", lpos),
    cmd("lmove", 5, W, K2, "list", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", lmove),
    cmd("rpoplpush", 3, W, K2, "list", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", rpoplpush),
    cmd("lmpop", -4, &["write", "movablekeys"], K0, "list", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", lmpop),
];

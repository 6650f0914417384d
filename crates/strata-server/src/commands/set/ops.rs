//! The set operations: SINTER SUNION SDIFF, their STORE forms, and
//! SINTERCARD. Over sets none of which is chunked the result is computed in
//! one step; when an input is chunked, by windows of the element hash
//! (`Engine::stream_windows`): each window's parts of every input are
//! loaded and combined under the locks, so inputs larger than RAM are never
//! held in RAM at once (only the reply, or the stored result, is). The
//! members come back in another order than Redis's (a set's order is not
//! defined; clients and the differential test compare them as sets).

use super::{get, peek, write_members};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::{Buf, Bytes, BytesMut};
use std::collections::HashSet;
use strata_engine::types::Set;
use strata_engine::{Collection, KeysView, Value};
use strata_protocol::{write_bulk, write_integer, write_set_len, Version};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// What becomes of the result.
#[derive(Clone)]
enum Sink {
    /// The members are the reply.
    Reply,
    /// Stored at this key; the reply is its size.
    Store(Bytes),
    /// The reply is the size, at most the limit (0: none).
    Card(u64),
}

/// The members of the result whose hash lies in `[lo, hi]` (the whole result
/// for the whole space): the same
/// operation over each input's members of that window (every copy of a
/// member falls in the same window).
fn combine_window(
    view: &mut KeysView<'_>,
    keys: &[Bytes],
    op: Op,
    lo: u64,
    hi: u64,
) -> Vec<Box<[u8]>> {
    let ins: Vec<Vec<Box<[u8]>>> = keys
        .iter()
        .map(|k| match peek(view, k) {
            Some(s) => s.iter_hashes(lo, hi).map(Box::from).collect(),
            None => Vec::new(),
        })
        .collect();
    match op {
        Op::Union => {
            let mut seen = HashSet::new();
            ins.iter()
                .flatten()
                .filter(|m| seen.insert(&***m))
                .cloned()
                .collect()
        }
        Op::Inter => {
            let mut order: Vec<&Vec<Box<[u8]>>> = ins.iter().collect();
            order.sort_by_key(|v| v.len());
            let Some((first, rest)) = order.split_first() else {
                return Vec::new();
            };
            let rest: Vec<HashSet<&[u8]>> = rest.iter().map(|v| set_of(v)).collect();
            first
                .iter()
                .filter(|m| rest.iter().all(|s| s.contains(&***m)))
                .cloned()
                .collect()
        }
        Op::Diff => {
            let Some((first, rest)) = ins.split_first() else {
                return Vec::new();
            };
            let rest: Vec<HashSet<&[u8]>> = rest.iter().map(|v| set_of(v)).collect();
            first
                .iter()
                .filter(|m| !rest.iter().any(|s| s.contains(&***m)))
                .cloned()
                .collect()
        }
    }
}

/// The members of `v`, to look up.
fn set_of(v: &[Box<[u8]>]) -> HashSet<&[u8]> {
    v.iter().map(|m| &**m).collect()
}

/// Writes the reply for (or stores) a whole result.
fn conclude(view: &mut KeysView<'_>, sink: &Sink, r: Set, out: &mut BytesMut, v: Version) {
    match sink {
        Sink::Store(d) => {
            let n = r.len();
            view.put(d, Value::Coll(Box::new(Collection::Set(r))));
            write_integer(out, n as i64);
        }
        Sink::Reply => write_members(out, v, r.len(), r.iter()),
        Sink::Card(limit) => write_card(out, r.len() as u64, *limit),
    }
}

fn write_card(out: &mut BytesMut, n: u64, limit: u64) {
    write_integer(out, if limit > 0 { n.min(limit) } else { n } as i64);
}

/// Bytes kept free before a streamed reply's members for its header (the
/// count is known at the end): the reply is then handed over without a
/// copy, as big as it may be.
const HEADER_ROOM: usize = 32;

/// A streamed operation's state.
#[derive(Default)]
struct Acc {
    /// `init` answered alone (an error, or a result computed whole).
    answered: Option<BytesMut>,
    /// The members so far (`Sink::Reply`), after `HEADER_ROOM` bytes, and
    /// their count.
    body: BytesMut,
    count: u64,
    /// The result so far (`Sink::Store`).
    stored: Set,
}

fn combine_cmd(ctx: &mut Ctx<'_>, keys: Vec<Bytes>, op: Op, sink: Sink) -> Outcome {
    let mut all = keys.clone();
    if let Sink::Store(d) = &sink {
        all.push(d.clone());
    }
    let version = ctx.version();
    let (ikeys, isink) = (keys.clone(), sink.clone());
    let esink = sink.clone();
    let read = ctx.engine().stream_windows(
        ctx.db(),
        all,
        move |view| {
            let mut acc = Acc::default();
            let mut out = BytesMut::new();
            let (mut chunked, mut empty) = (false, false);
            // The reply's size at most (sized once: a doubling buffer
            // would hold it about twice while it copies).
            let mut sizes = Vec::with_capacity(ikeys.len());
            for k in &ikeys {
                match get(view, k) {
                    Err(e) => {
                        reply::engine(&mut out, &e);
                        acc.answered = Some(out);
                        return (acc, false);
                    }
                    Ok(Some(s)) => {
                        chunked |= s.is_chunked();
                        sizes.push(s.body_len() + 8 * s.len());
                    }
                    Ok(None) => {
                        empty = true;
                        sizes.push(0);
                    }
                }
            }
            if matches!(isink, Sink::Reply) {
                let most = match op {
                    Op::Union => sizes.iter().sum(),
                    Op::Inter => sizes.iter().copied().min().unwrap_or(0),
                    Op::Diff => sizes.first().copied().unwrap_or(0),
                };
                acc.body.reserve(HEADER_ROOM + most);
                acc.body.resize(HEADER_ROOM, 0);
            }
            // An empty intersection, or nothing chunked: in one step.
            if op == Op::Inter && empty {
                conclude(view, &isink, Set::default(), &mut out, version);
            } else if !chunked {
                // One window: the whole hash space.
                let mut r = Set::default();
                for m in combine_window(view, &ikeys, op, 0, u64::MAX) {
                    r.insert(&m);
                }
                conclude(view, &isink, r, &mut out, version);
            } else {
                return (acc, true);
            }
            acc.answered = Some(out);
            (acc, false)
        },
        move |view, lo, hi, acc| {
            let ms = combine_window(view, &keys, op, lo, hi);
            acc.count += ms.len() as u64;
            match &esink {
                Sink::Reply => ms.iter().for_each(|m| write_bulk(&mut acc.body, m)),
                Sink::Store(_) => ms.iter().for_each(|m| {
                    acc.stored.insert(m);
                }),
                Sink::Card(_) => {}
            }
            if let (Sink::Store(d), u64::MAX) = (&esink, hi) {
                let r = std::mem::take(&mut acc.stored);
                view.put(d, Value::Coll(Box::new(Collection::Set(r))));
            }
        },
    );
    ctx.reply_with(read, true, move |out, v, acc| {
        if let Some(a) = acc.answered {
            out.extend_from_slice(&a);
            return;
        }
        match sink {
            Sink::Reply => {
                let mut head = BytesMut::new();
                write_set_len(&mut head, v, acc.count as usize);
                let mut body = acc.body;
                let start = HEADER_ROOM - head.len();
                body[start..HEADER_ROOM].copy_from_slice(&head);
                body.advance(start);
                if out.is_empty() {
                    *out = body;
                } else {
                    out.extend_from_slice(&body);
                }
            }
            Sink::Store(_) => write_integer(out, acc.count as i64),
            Sink::Card(limit) => write_card(out, acc.count, limit),
        }
    })
}

pub fn sinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    combine_cmd(ctx, args[1..].to_vec(), Op::Inter, Sink::Reply)
}
pub fn sunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    combine_cmd(ctx, args[1..].to_vec(), Op::Union, Sink::Reply)
}
pub fn sdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    combine_cmd(ctx, args[1..].to_vec(), Op::Diff, Sink::Reply)
}
pub fn sinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    combine_cmd(
        ctx,
        args[2..].to_vec(),
        Op::Inter,
        Sink::Store(args[1].clone()),
    )
}
pub fn sunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    combine_cmd(
        ctx,
        args[2..].to_vec(),
        Op::Union,
        Sink::Store(args[1].clone()),
    )
}
pub fn sdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    combine_cmd(
        ctx,
        args[2..].to_vec(),
        Op::Diff,
        Sink::Store(args[1].clone()),
    )
}

pub fn sintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    // Redis gives the range message for a non-integer too.
    let numkeys = match parse_i64(&args[1]) {
        Some(n) if n >= 1 => n as u64,
        _ => {
            reply::error(ctx.out, crate::base::reply::NUMKEYS_NOT_POSITIVE);
            return Outcome::Done;
        }
    };
    if numkeys > (args.len() - 2) as u64 {
        reply::error(ctx.out, crate::base::reply::TOO_MANY_KEYS);
        return Outcome::Done;
    }
    let n = numkeys as usize;
    let mut limit = 0u64;
    let mut j = 2 + n;
    while j < args.len() {
        if is(&args[j], "limit") && j + 1 < args.len() {
            match parse_i64(&args[j + 1]) {
                Some(l) if l >= 0 => limit = l as u64,
                _ => {
                    reply::error(ctx.out, crate::base::reply::LIMIT_NEGATIVE);
                    return Outcome::Done;
                }
            }
            j += 2;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    }
    combine_cmd(ctx, args[2..2 + n].to_vec(), Op::Inter, Sink::Card(limit))
}

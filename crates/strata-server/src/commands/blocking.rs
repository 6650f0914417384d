//! The blocking pops: BLPOP BRPOP BRPOPLPUSH BLMOVE (and, with the sorted
//! set family, BZPOPMIN BZPOPMAX). Each tries its pop at once; when every
//! watched key is empty it waits in `crate::services::blocking` until a push serves
//! it or the timeout passes (null array), as Redis does.

use super::{is, parse_f64};
use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use crate::services::blocking::{Kind, PopOp};
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use std::time::Duration;
use strata_engine::{Collection, EngineError, KeysView, Need, Read, ValueType};
use strata_protocol::{write_array_len, write_bulk, write_null_array, Version};

/// Parses a blocking timeout in seconds (0 = forever), with Redis's errors.
pub fn parse_timeout(b: &[u8]) -> Result<Option<Duration>, &'static str> {
    let v = parse_f64(b)
        .filter(|v| v.is_finite())
        .ok_or("ERR timeout is not a float or out of range")?;
    if v < 0.0 {
        return Err(crate::base::reply::TIMEOUT_NEGATIVE);
    }
    if v * 1000.0 > i64::MAX as f64 / 2.0 {
        return Err("ERR timeout is out of range");
    }
    Ok((v > 0.0).then(|| Duration::from_secs_f64(v)))
}

/// Runs `op` now; if it found nothing, blocks on `watch` (see the module
/// doc of `crate::services::blocking`). Inside EXEC it does not block: it answers
/// at once as Redis does there, a null (`null_bulk`: BLMOVE, BRPOPLPUSH)
/// or a null array.
pub fn block(
    ctx: &mut Ctx<'_>,
    watch: Vec<Bytes>,
    keys: (Vec<Bytes>, Vec<Need>),
    timeout: Option<Duration>,
    op: PopOp,
    null_bulk: bool,
) -> Outcome {
    block_as(ctx, watch, keys, timeout, op, null_bulk, Kind::Pop)
}

/// As `block`, for XREAD and XREADGROUP on `keys`: a read that consumes
/// nothing, so a blocked reader that is not served does not stop the
/// others on the same stream from being served.
pub fn block_stream(
    ctx: &mut Ctx<'_>,
    keys: Vec<Bytes>,
    needs: Vec<Need>,
    timeout: Option<Duration>,
    op: PopOp,
    group: bool,
) -> Outcome {
    let kind = if group { Kind::GroupRead } else { Kind::Read };
    block_as(ctx, keys.clone(), (keys, needs), timeout, op, false, kind)
}

fn block_as(
    ctx: &mut Ctx<'_>,
    watch: Vec<Bytes>,
    keys: (Vec<Bytes>, Vec<Need>),
    timeout: Option<Duration>,
    op: PopOp,
    null_bulk: bool,
    kind: Kind,
) -> Outcome {
    let waits = (ctx.blocking().clone(), ctx.engine().clone());
    let db = ctx.db();
    let version = ctx.version();
    let client = ctx.conn.handle.id;
    let deny = ctx.conn.exec_ready.is_some();
    let sink = ctx.ready_sink();
    let refuse = move |out: &mut BytesMut| {
        if null_bulk {
            strata_protocol::write_null(out, version);
        } else {
            write_null_array(out, version);
        }
    };
    let first = op.clone();
    let read =
        ctx.engine()
            .with_keys_needs(db, keys.0.clone(), keys.1.clone(), true, move |view| {
                let mut out = BytesMut::new();
                let served = first(view, &mut out, version, false);
                (served, out)
            });
    match read {
        Read::Ready(Ok(((true, out), ready))) => {
            ctx.out.extend_from_slice(&out);
            sink.serve(db, ready);
            Outcome::Done
        }
        Read::Ready(Err(e)) => {
            reply::engine(ctx.out, &e);
            Outcome::Done
        }
        Read::Ready(Ok(((false, _), _))) if deny => {
            refuse(ctx.out);
            Outcome::Done
        }
        Read::Ready(Ok(((false, _), _))) => Outcome::Pending {
            reply: Box::pin(wait(
                waits, client, db, watch, keys, op, version, timeout, kind,
            )),
            write: true,
        },
        Read::Pending(fut) => Outcome::Pending {
            reply: Box::pin(async move {
                match fut.await {
                    Ok(((true, out), ready)) => {
                        sink.serve(db, ready);
                        out
                    }
                    Ok(((false, _), _)) if deny => {
                        let mut out = BytesMut::new();
                        refuse(&mut out);
                        out
                    }
                    Ok(((false, _), _)) => {
                        wait(waits, client, db, watch, keys, op, version, timeout, kind).await
                    }
                    Err(e) => {
                        let mut out = BytesMut::new();
                        reply::engine(&mut out, &e);
                        out
                    }
                }
            }),
            write: true,
        },
    }
}

#[allow(clippy::too_many_arguments)]
async fn wait(
    (blocking, engine): (
        Arc<crate::services::blocking::Blocking>,
        strata_engine::Engine,
    ),
    client: u64,
    db: usize,
    watch: Vec<Bytes>,
    keys: (Vec<Bytes>, Vec<Need>),
    op: PopOp,
    version: Version,
    timeout: Option<Duration>,
    kind: Kind,
) -> BytesMut {
    let (registration, rx) = blocking.block(client, db, watch.clone(), keys, op, version, kind);
    // A push between the first try and the registration serves it now.
    blocking.serve(&engine, db, watch);
    let got = match timeout {
        Some(d) => tokio::time::timeout(d, rx).await.ok().and_then(Result::ok),
        None => rx.await.ok(),
    };
    drop(registration);
    match got {
        Some(out) => out,
        None => {
            let mut out = BytesMut::new();
            write_null_array(&mut out, version);
            out
        }
    }
}

/// The list at `key`: Ok(None) if missing or empty; in a blocked client's
/// pop a list of another type counts as missing.
fn list_mut<'v>(
    view: &'v mut KeysView<'_>,
    key: &[u8],
    blocked: bool,
) -> Result<Option<&'v mut strata_engine::types::List>, EngineError> {
    match view.coll(key, ValueType::List) {
        Err(_) if blocked => return Ok(None),
        Err(e) => return Err(e),
        Ok(None) => return Ok(None),
        Ok(Some(_)) => {}
    }
    match view.coll_mut(key, ValueType::List, false)? {
        Some(Collection::List(l)) if !l.is_empty() => Ok(Some(l)),
        _ => Ok(None),
    }
}

fn bpop(ctx: &mut Ctx<'_>, args: &[Bytes], left: bool) -> Outcome {
    let Some((t, keys)) = args[1..].split_last() else {
        reply::arity(ctx.out, if left { "blpop" } else { "brpop" });
        return Outcome::Done;
    };
    let timeout = match parse_timeout(t) {
        Ok(t) => t,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let keys: Vec<Bytes> = keys.to_vec();
    let watch = keys.clone();
    let op: PopOp = Arc::new(move |view, out, _v, blocked| {
        for k in &watch {
            match list_mut(view, k, blocked) {
                Err(e) => {
                    reply::engine(out, &e);
                    return true;
                }
                Ok(Some(l)) => {
                    let e = if left { l.pop_front() } else { l.pop_back() };
                    if let Some(e) = e {
                        write_array_len(out, 2);
                        write_bulk(out, k);
                        write_bulk(out, &e);
                        return true;
                    }
                }
                Ok(None) => {}
            }
        }
        false
    });
    let needs = keys.iter().map(|_| super::list::end(left, 1)).collect();
    block(ctx, keys.clone(), (keys, needs), timeout, op, false)
}

pub fn blpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    bpop(ctx, args, true)
}

pub fn brpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    bpop(ctx, args, false)
}

/// BLMOVE / BRPOPLPUSH: pops from `src`, pushes onto `dst`, replies the
/// element.
fn bmove(
    ctx: &mut Ctx<'_>,
    src: Bytes,
    dst: Bytes,
    from_left: bool,
    to_left: bool,
    t: &[u8],
) -> Outcome {
    let timeout = match parse_timeout(t) {
        Ok(t) => t,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let (s, d) = (src.clone(), dst.clone());
    let op: PopOp = Arc::new(move |view, out, _v, blocked| {
        // Redis checks the destination's type only once the source has an
        // element.
        let has = match list_mut(view, &s, blocked) {
            Err(e) => {
                reply::engine(out, &e);
                return true;
            }
            Ok(l) => l.is_some(),
        };
        if !has {
            return false;
        }
        if let Err(e) = view.coll(&d, ValueType::List) {
            // Also when it was blocked: Redis 7.0 answers the client
            // WRONGTYPE and unblocks it, the element staying where it is.
            reply::engine(out, &e);
            return true;
        }
        let elem = match list_mut(view, &s, blocked) {
            Ok(Some(l)) => {
                if from_left {
                    l.pop_front()
                } else {
                    l.pop_back()
                }
            }
            _ => None,
        };
        let Some(elem) = elem else { return false };
        if let Ok(Some(Collection::List(l))) = view.coll_mut(&d, ValueType::List, true) {
            if to_left {
                l.push_front(elem.clone());
            } else {
                l.push_back(elem.clone());
            }
        }
        write_bulk(out, &elem);
        true
    });
    let keys = if src == dst {
        // A rotation touches both ends.
        let both = Need::indexes(&[(0, 0), (-1, -1)]);
        (vec![src.clone()], vec![both])
    } else {
        let needs = vec![super::list::end(from_left, 1), super::list::end(to_left, 1)];
        (vec![src.clone(), dst], needs)
    };
    block(ctx, vec![src], keys, timeout, op, true)
}

pub fn brpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    bmove(ctx, args[1].clone(), args[2].clone(), false, true, &args[3])
}

pub fn blmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let side = |a: &[u8]| {
        if is(a, "left") {
            Some(true)
        } else if is(a, "right") {
            Some(false)
        } else {
            None
        }
    };
    let (Some(from), Some(to)) = (side(&args[3]), side(&args[4])) else {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    };
    bmove(ctx, args[1].clone(), args[2].clone(), from, to, &args[5])
}

/// BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT n].
pub fn blmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let timeout = match parse_timeout(&args[1]) {
        Ok(t) => t,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let a = match super::list::parse_mpop(&args[2..]) {
        Ok(a) => a,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let keys = a.keys.clone();
    let needs = keys
        .iter()
        .map(|_| super::list::end(a.left, a.count as u64))
        .collect();
    let op: PopOp = Arc::new(move |view, out, _v, blocked| {
        super::list::mpop(view, &a.keys, a.left, a.count, out, blocked)
    });
    block(ctx, keys.clone(), (keys, needs), timeout, op, false)
}

fn bzpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> Outcome {
    let Some((t, keys)) = args[1..].split_last() else {
        reply::arity(ctx.out, if max { "bzpopmax" } else { "bzpopmin" });
        return Outcome::Done;
    };
    let timeout = match parse_timeout(t) {
        Ok(t) => t,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let keys: Vec<Bytes> = keys.to_vec();
    let watch = keys.clone();
    let op: PopOp = Arc::new(move |view, out, v, blocked| {
        super::zset::bzpop_on(view, &watch, max, out, v, blocked)
    });
    block(ctx, keys.clone(), (keys, Vec::new()), timeout, op, false)
}

pub fn bzpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    bzpop(ctx, args, false)
}

pub fn bzpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    bzpop(ctx, args, true)
}

/// BZMPOP timeout numkeys key... MIN|MAX [COUNT n].
pub fn bzmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let timeout = match parse_timeout(&args[1]) {
        Ok(t) => t,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let a = match super::zset::parse_zmpop(&args[2..]) {
        Ok(a) => a,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let keys = a.keys.clone();
    let op: PopOp = Arc::new(move |view, out, v, blocked| {
        super::zset::zmpop_on(view, &a.keys, a.max, a.count, out, v, blocked)
    });
    block(ctx, keys.clone(), (keys, Vec::new()), timeout, op, false)
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("blpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), "list", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blpop),
    cmd("brpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), "list", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", brpop),
    cmd("brpoplpush", 4, &["write", "denyoom", "noscript", "blocking"], K2, "list", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", brpoplpush),
    cmd("blmove", 6, &["write", "denyoom", "noscript", "blocking"], K2, "list", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", blmove),
    cmd("blmpop", -5, &["write", "noscript", "blocking", "movablekeys"], K0, "list", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blmpop),
    cmd("bzpopmin", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", bzpopmin),
    cmd("bzpopmax", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", bzpopmax),
    cmd("bzmpop", -5, &["write", "noscript", "blocking", "movablekeys"], K0, "sorted_set", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", bzmpop),
];

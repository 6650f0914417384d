//! XREAD and XREADGROUP (`xreadCommand`), with BLOCK.
//!
//! The first try runs Redis's synchronous path under the keys' locks: the
//! per-key checks in key order (type, group, `$` and `>`, the ids), then
//! each stream that can serve. It fixes what `$` meant then, so a client
//! that blocks waits for entries past that id. A blocked client is served
//! as Redis's `serveClientsBlockedOnStreamKey` serves it: by the first of
//! its streams past its id (for a group, past the group's last id), with
//! COUNT or 1000 entries, or an error if its group or stream went away.

use super::{get, get_mut, parse_strict_id, write_entry, write_id};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::services::blocking::PopOp;
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;
use strata_engine::clock::now_ms;
use strata_engine::types::stream::{Planner, StreamId, StreamNeed};
use strata_engine::types::Stream;
use strata_engine::{KeysView, Need};
use strata_protocol::{write_array_len, write_bulk, write_map_len, write_null_array, Version};

/// Entries a blocked read returns without COUNT (`XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_COUNT: usize = 1000;

struct ReadArgs {
    count: usize,
    /// BLOCK's timeout (None inside: forever).
    block: Option<Option<Duration>>,
    keys: Vec<Bytes>,
    ids: Vec<Bytes>,
    /// Group and consumer (XREADGROUP).
    group: Option<(Bytes, Bytes)>,
    noack: bool,
}

/// XREAD's and XREADGROUP's arguments, checked in Redis's order (BLOCK is
/// refused where it stands when a script runs the command).
fn parse(args: &[Bytes], xreadgroup: bool, script: bool) -> Result<ReadArgs, String> {
    let mut a = ReadArgs {
        count: 0,
        block: None,
        keys: Vec::new(),
        ids: Vec::new(),
        group: None,
        noack: false,
    };
    let mut streams = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = &args[i];
        if is(o, "block") && more > 0 {
            if script {
                return Err(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&args[0])
                ));
            }
            i += 1;
            let t = parse_i64(&args[i]).ok_or(crate::base::reply::TIMEOUT_NOT_INTEGER)?;
            if t < 0 {
                return Err(crate::base::reply::TIMEOUT_NEGATIVE.into());
            }
            a.block = Some((t > 0).then(|| Duration::from_millis(t as u64)));
        } else if is(o, "count") && more > 0 {
            i += 1;
            a.count = parse_i64(&args[i]).ok_or(reply::NOT_INTEGER)?.max(0) as usize;
        } else if is(o, "streams") && more > 0 {
            let n = args.len() - i - 1;
            if !n.is_multiple_of(2) {
                return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into());
            }
            streams = Some(i + 1);
            break;
        } else if is(o, "group") && more >= 2 {
            if !xreadgroup {
                return Err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            a.group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if is(o, "noack") {
            if !xreadgroup {
                return Err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            a.noack = true;
        } else {
            return Err(reply::SYNTAX.into());
        }
        i += 1;
    }
    let Some(s) = streams else {
        return Err(reply::SYNTAX.into());
    };
    if xreadgroup && a.group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    let n = (args.len() - s) / 2;
    a.keys = args[s..s + n].to_vec();
    a.ids = args[s + n..].to_vec();
    Ok(a)
}

/// Writes the entries from `start` on that a read serves: a plain read
/// (`group` None), or a group read that moves the group on, makes each
/// entry pending for `consumer` unless `noack` (`streamReplyWithRange`).
fn serve_range(
    view: &mut KeysView<'_>,
    key: &[u8],
    start: StreamId,
    count: usize,
    group: Option<(&[u8], &[u8], bool)>,
    out: &mut BytesMut,
) {
    let take = if count == 0 { usize::MAX } else { count };
    let mut ids = Vec::new();
    let mut body = BytesMut::new();
    if let Ok(Some(s)) = get(view, key) {
        for e in s.range(start, StreamId::MAX, false).take(take) {
            write_entry(&mut body, &e);
            ids.push(e.id);
        }
    }
    write_array_len(out, ids.len());
    out.extend_from_slice(&body);
    let Some((g, consumer, noack)) = group else {
        return;
    };
    let now = now_ms();
    if let Ok(Some(s)) = get_mut(view, key, false) {
        for &id in &ids {
            s.advance_group(g, id);
            if !noack {
                if let Some(gr) = s.group_mut(g) {
                    gr.deliver(id, consumer, now);
                }
            }
        }
    }
}

/// Writes a consumer's own pending entries from `start` on (XREADGROUP
/// with an id: `streamReplyWithRangeFromConsumerPEL`), counting a new
/// delivery of each that still exists; a deleted one is `[id, nil]`.
#[allow(clippy::too_many_arguments)]
fn serve_history(
    view: &mut KeysView<'_>,
    key: &[u8],
    start: StreamId,
    count: usize,
    g: &[u8],
    consumer: &[u8],
    out: &mut BytesMut,
    v: Version,
) {
    let take = if count == 0 { usize::MAX } else { count };
    let mut found = Vec::new();
    let mut body = BytesMut::new();
    let mut n = 0;
    if let Ok(Some(s)) = get(view, key) {
        let pel: Vec<StreamId> = s
            .group(g)
            .and_then(|gr| gr.consumer(consumer))
            .map(|c| c.pel_from(start).take(take).collect())
            .unwrap_or_default();
        for id in pel {
            n += 1;
            match s.get(id) {
                Some(e) => {
                    write_entry(&mut body, &e);
                    found.push(id);
                }
                None => {
                    write_array_len(&mut body, 2);
                    write_id(&mut body, id);
                    write_null_array(&mut body, v);
                }
            }
        }
    }
    write_array_len(out, n);
    out.extend_from_slice(&body);
    let now = now_ms();
    if let Ok(Some(s)) = get_mut(view, key, false) {
        if let Some(gr) = s.group_mut(g) {
            for id in found {
                if let Some(c) = gr.nack(id).map(|n| n.delivery_count) {
                    gr.set_delivery(id, now, c + 1);
                }
            }
        }
    }
}

/// Looks the consumer up in its group (seen now), creating it if missing.
fn touch_consumer(view: &mut KeysView<'_>, key: &[u8], g: &[u8], consumer: &[u8]) {
    if let Ok(Some(s)) = get_mut(view, key, false) {
        if let Some(gr) = s.group_mut(g) {
            if gr.get_or_create_consumer(consumer, now_ms()) {
                super::events(key, &["xgroup-createconsumer"]);
            }
        }
    }
}

/// What `$`, `>` and the ids meant at the first try.
type Resolved = Arc<Mutex<Vec<StreamId>>>;

/// The first try: Redis's synchronous path. Returns true if it wrote a
/// reply (entries or an error), false if the client would block.
fn first_try(
    view: &mut KeysView<'_>,
    a: &ReadArgs,
    resolved: &Resolved,
    out: &mut BytesMut,
    v: Version,
) -> bool {
    let xreadgroup = a.group.is_some();
    let mut ids = Vec::with_capacity(a.keys.len());
    for (key, raw) in a.keys.iter().zip(&a.ids) {
        let s = match get(view, key) {
            Err(e) => {
                reply::engine(out, &e);
                return true;
            }
            Ok(s) => s,
        };
        if let Some((g, _)) = &a.group {
            if s.and_then(|s| s.group(g)).is_none() {
                let e = super::nogroup(key, g, " in XREADGROUP with GROUP option");
                reply::error(out, &e);
                return true;
            }
        }
        let id = if &raw[..] == b"$" {
            if xreadgroup {
                reply::error(out, "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
                return true;
            }
            s.map_or(StreamId::MIN, |s| s.last_id)
        } else if &raw[..] == b">" {
            if !xreadgroup {
                reply::error(out, "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
                return true;
            }
            StreamId::MAX
        } else {
            match parse_strict_id(raw) {
                Ok(id) => id,
                Err(e) => {
                    reply::error(out, e);
                    return true;
                }
            }
        };
        ids.push(id);
    }
    *resolved.lock() = ids.clone();
    let mut served = 0;
    let mut body = BytesMut::new();
    for (key, gt) in a.keys.iter().zip(ids) {
        let Ok(Some(s)) = get(view, key) else {
            continue;
        };
        let (mut gt, mut history, mut serve) = (gt, false, false);
        match &a.group {
            Some((g, _)) => {
                if gt != StreamId::MAX {
                    serve = true;
                    history = true;
                } else if !s.is_empty() {
                    let last = s.group(g).map_or(StreamId::MIN, |g| g.last_id);
                    if s.last_valid_id().is_some_and(|m| m > last) {
                        serve = true;
                        gt = last;
                    }
                }
            }
            None => serve = !s.is_empty() && s.last_valid_id().is_some_and(|m| m > gt),
        }
        if !serve {
            continue;
        }
        served += 1;
        let start = gt.incr().unwrap_or(StreamId::MIN);
        if v == Version::Resp2 {
            write_array_len(&mut body, 2);
        }
        write_bulk(&mut body, key);
        match &a.group {
            Some((g, c)) => {
                touch_consumer(view, key, g, c);
                if history {
                    serve_history(view, key, start, a.count, g, c, &mut body, v);
                } else {
                    serve_range(view, key, start, a.count, Some((g, c, a.noack)), &mut body);
                }
                // Group state is no modification of the key for Redis.
                view.quiet(key);
            }
            None => serve_range(view, key, start, a.count, None, &mut body),
        }
    }
    if served == 0 {
        return false;
    }
    match v {
        Version::Resp2 => write_array_len(out, served),
        Version::Resp3 => write_map_len(out, v, served),
    }
    out.extend_from_slice(&body);
    true
}

/// A blocked client's try (`serveClientsBlockedOnStreamKey`).
fn blocked_try(
    view: &mut KeysView<'_>,
    a: &ReadArgs,
    resolved: &Resolved,
    out: &mut BytesMut,
    v: Version,
) -> bool {
    let ids = resolved.lock().clone();
    for (key, gt) in a.keys.iter().zip(ids) {
        let s = match get(view, key) {
            Ok(Some(s)) => s,
            _ if a.group.is_some() => {
                reply::error(out, crate::base::reply::STREAM_GONE);
                return true;
            }
            _ => continue,
        };
        let gt = match &a.group {
            Some((g, _)) => match s.group(g) {
                Some(gr) => gr.last_id,
                None => {
                    reply::error(
                        out,
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    );
                    return true;
                }
            },
            None => gt,
        };
        let start = gt.incr().unwrap_or(StreamId::MIN);
        // Redis serves a blocked reader when an XADD takes the last id
        // past its own, which adds an entry to serve. A try with nothing
        // past its id (tombstones only: XDEL) leaves it blocked.
        if s.last_id <= gt || s.range(start, StreamId::MAX, false).next().is_none() {
            continue;
        }
        let count = if a.count == 0 { BLOCKED_COUNT } else { a.count };
        match v {
            Version::Resp2 => {
                write_array_len(out, 1);
                write_array_len(out, 2);
            }
            Version::Resp3 => write_map_len(out, v, 1),
        }
        write_bulk(out, key);
        match &a.group {
            Some((g, c)) => {
                touch_consumer(view, key, g, c);
                serve_range(view, key, start, count, Some((g, c, a.noack)), out);
                view.quiet(key);
            }
            None => serve_range(view, key, start, count, None, out),
        }
        return true;
    }
    false
}

/// The parts of each stream a read needs: where its first and last live
/// entries are (whether there is anything to serve), and the entries it
/// serves, worked out under the lock from what the try sees: the id given,
/// the one `$` resolved to at the first try, the group's last id (`>`),
/// or the consumer's pending ids (a history read).
fn read_needs(a: &Arc<ReadArgs>, resolved: &Resolved) -> Vec<Need> {
    (0..a.keys.len())
        .map(|i| {
            let (a, resolved) = (a.clone(), resolved.clone());
            let plan = move |s: &Stream| -> Vec<StreamNeed> {
                let raw = &a.ids[i][..];
                let count = if a.count == 0 {
                    u64::MAX
                } else {
                    a.count as u64
                };
                let after = |from: StreamId| StreamNeed::Range {
                    start: from.incr().unwrap_or(StreamId::MAX),
                    end: StreamId::MAX,
                    rev: false,
                    count,
                };
                let from = match &a.group {
                    Some((g, c)) => {
                        let Some(gr) = s.group(g) else {
                            return Vec::new();
                        };
                        if raw != b">" {
                            let ids = match (parse_strict_id(raw), gr.consumer(c)) {
                                (Ok(id), Some(c)) => c
                                    .pel_from(id)
                                    .take(usize::try_from(count).unwrap_or(usize::MAX))
                                    .collect(),
                                _ => Vec::new(),
                            };
                            return vec![StreamNeed::Ids {
                                ids,
                                deletes: false,
                            }];
                        }
                        Some(gr.last_id)
                    }
                    None if raw == b"$" => resolved.lock().get(i).copied(),
                    None => parse_strict_id(raw).ok(),
                };
                from.map(after).into_iter().collect()
            };
            Need::Stream(vec![
                StreamNeed::Edges,
                StreamNeed::Planned(Planner(Arc::new(plan))),
            ])
        })
        .collect()
}

fn xread_generic(ctx: &mut Ctx<'_>, args: &[Bytes], xreadgroup: bool) -> Outcome {
    let a = match parse(args, xreadgroup, ctx.conn.script) {
        Ok(a) => a,
        Err(e) => {
            reply::error(ctx.out, &e);
            return Outcome::Done;
        }
    };
    let keys = a.keys.clone();
    let block = a.block;
    let group = a.group.is_some();
    let resolved: Resolved = Arc::default();
    let a = Arc::new(a);
    let needs = read_needs(&a, &resolved);
    let op: PopOp = Arc::new(move |view, out, v, blocked| {
        if blocked {
            blocked_try(view, &a, &resolved, out, v)
        } else {
            first_try(view, &a, &resolved, out, v)
        }
    });
    match block {
        Some(timeout) => {
            crate::commands::blocking::block_stream(ctx, keys, needs, timeout, op, group)
        }
        None => ctx.with_keys_needs(keys, needs, move |view, out, v| {
            if !op(view, out, v, false) {
                write_null_array(out, v);
            }
        }),
    }
}

pub fn xread(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    xread_generic(ctx, args, false)
}

pub fn xreadgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    xread_generic(ctx, args, true)
}

//! XCLAIM and XAUTOCLAIM: pending entries given to another consumer, as
//! Redis 7.0's `t_stream.c` does it (deleted entries leave the pending
//! lists; the entries of the ids claimed are the stream's parts loaded).

use super::{
    events, get, get_mut, need, nogroup, parse_bound, parse_strict_id, write_entry, write_id,
};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::Bytes;
use std::sync::Arc;
use strata_engine::clock::now_ms;
use strata_engine::types::stream::{Planner, StreamId, StreamNeed};
use strata_engine::types::Stream;
use strata_engine::KeysView;
use strata_protocol::write_array_len;

/// Gives the NACK of `id` to `consumer` (created on its first claim) as
/// XCLAIM and XAUTOCLAIM do; `count` is the new delivery count.
fn claim(
    view: &mut KeysView<'_>,
    key: &[u8],
    g: &[u8],
    consumer: &[u8],
    id: StreamId,
    time: u64,
    count: u64,
) {
    if let Ok(Some(s)) = get_mut(view, key, false) {
        if let Some(gr) = s.group_mut(g) {
            if gr.get_or_create_consumer(consumer, now_ms()) {
                events(key, &["xgroup-createconsumer"]);
            }
            gr.assign(id, consumer, time, Some(count));
        }
    }
}

/// Drops the NACK of an entry that no longer exists.
fn drop_nack(view: &mut KeysView<'_>, key: &[u8], g: &[u8], id: StreamId) {
    if let Ok(Some(s)) = get_mut(view, key, false) {
        if let Some(gr) = s.group_mut(g) {
            gr.ack(id);
        }
    }
}

pub fn xclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let args = args.to_vec();
    let key = args[1].clone();
    // The entries of the ids claimed (they end where the options start).
    let ids: Vec<StreamId> = args
        .iter()
        .skip(5)
        .map_while(|a| parse_strict_id(a).ok())
        .collect();
    let plan = need(vec![StreamNeed::Ids {
        ids,
        deletes: false,
    }]);
    ctx.with_key_need(key.clone(), plan, move |view, out, _| {
        let (g, consumer) = (&args[2][..], &args[3][..]);
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(s) if s.and_then(|s| s.group(g)).is_none() => {
                return reply::error(out, &nogroup(&key, g, ""))
            }
            Ok(_) => {}
        }
        let Some(minidle) = parse_i64(&args[4]) else {
            return reply::error(out, "ERR Invalid min-idle-time argument for XCLAIM");
        };
        let minidle = minidle.max(0);
        let mut ids = Vec::new();
        let mut j = 5;
        while j < args.len() {
            match parse_strict_id(&args[j]) {
                Ok(id) => ids.push(id),
                Err(_) => break,
            }
            j += 1;
        }
        let now = now_ms() as i64;
        let (mut force, mut justid, mut retry, mut time) = (false, false, -1i64, -1i64);
        let mut lastid = StreamId::MIN;
        while j < args.len() {
            let more = args.len() - 1 - j;
            let opt = &args[j];
            let num = |b: &[u8], what: &str| {
                parse_i64(b).ok_or_else(|| format!("ERR Invalid {what} option argument for XCLAIM"))
            };
            if is(opt, "force") {
                force = true;
            } else if is(opt, "justid") {
                justid = true;
            } else if is(opt, "idle") && more > 0 {
                j += 1;
                match num(&args[j], "IDLE") {
                    Ok(t) => time = now - t,
                    Err(e) => return reply::error(out, &e),
                }
            } else if is(opt, "time") && more > 0 {
                j += 1;
                match num(&args[j], "TIME") {
                    Ok(t) => time = t,
                    Err(e) => return reply::error(out, &e),
                }
            } else if is(opt, "retrycount") && more > 0 {
                j += 1;
                match num(&args[j], "RETRYCOUNT") {
                    Ok(t) => retry = t,
                    Err(e) => return reply::error(out, &e),
                }
            } else if is(opt, "lastid") && more > 0 {
                j += 1;
                match parse_strict_id(&args[j]) {
                    Ok(id) => lastid = id,
                    Err(e) => return reply::error(out, e),
                }
            } else {
                return reply::error(
                    out,
                    &format!(
                        "ERR Unrecognized XCLAIM option '{}'",
                        reply::lossy(opt, 128)
                    ),
                );
            }
            j += 1;
        }
        let mut changed = false;
        if let Ok(Some(s)) = get_mut(view, &key, false) {
            if let Some(gr) = s.group_mut(g) {
                if lastid > gr.last_id {
                    gr.last_id = lastid;
                    changed = true;
                }
            }
        }
        let time = if time < 0 || time > now { now } else { time } as u64;
        let mut body = bytes::BytesMut::new();
        let mut len = 0;
        for id in ids {
            let Ok(Some(s)) = get(view, &key) else { break };
            let nack = s
                .group(g)
                .and_then(|gr| gr.nack(id))
                .map(|n| (n.delivery_time, n.delivery_count));
            if !s.exists(id) {
                if nack.is_some() {
                    drop_nack(view, &key, g, id);
                    changed = true;
                }
                continue;
            }
            let base = match nack {
                Some((t, c)) => {
                    if minidle != 0 && now - (t as i64) < minidle {
                        continue;
                    }
                    c
                }
                None if force => 1,
                None => continue,
            };
            if let Some(e) = s.get(id) {
                if justid {
                    write_id(&mut body, id);
                } else {
                    write_entry(&mut body, &e);
                }
            }
            let count = if retry >= 0 {
                retry as u64
            } else if !justid {
                base + 1
            } else {
                base
            };
            claim(view, &key, g, consumer, id, time, count);
            changed = true;
            len += 1;
        }
        if !changed {
            view.unchanged(&key);
        } else {
            view.quiet(&key);
        }
        write_array_len(out, len);
        out.extend_from_slice(&body);
    })
}

pub fn xautoclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let parsed = (|| -> Result<_, &'static str> {
        let minidle =
            parse_i64(&args[4]).ok_or("ERR Invalid min-idle-time argument for XAUTOCLAIM")?;
        let start = parse_bound(&args[5], true)?;
        let (mut count, mut justid) = (100i64, false);
        let mut j = 6;
        while j < args.len() {
            let more = args.len() - 1 - j;
            if is(&args[j], "count") && more > 0 {
                let max = i64::MAX / 16;
                count = parse_i64(&args[j + 1])
                    .filter(|n| (1..=max).contains(n))
                    .ok_or(crate::base::reply::COUNT_NOT_POSITIVE)?;
                j += 1;
            } else if is(&args[j], "justid") {
                justid = true;
            } else {
                return Err(reply::SYNTAX);
            }
            j += 1;
        }
        Ok((minidle.max(0), start, count as u64, justid))
    })();
    let (minidle, start, mut count, justid) = match parsed {
        Ok(p) => p,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let args = args.to_vec();
    let key = args[1].clone();
    // The entries of the pending ids the scan may reach.
    let gname = args[2].clone();
    let plan = need(vec![StreamNeed::Planned(Planner(Arc::new(
        move |s: &Stream| {
            let ids = s.group(&gname).map_or_else(Vec::new, |gr| {
                gr.pel_range(start, StreamId::MAX)
                    .map(|(id, _)| id)
                    .take(usize::try_from(count.saturating_mul(10)).unwrap_or(usize::MAX))
                    .collect()
            });
            vec![StreamNeed::Ids {
                ids,
                deletes: false,
            }]
        },
    )))]);
    ctx.with_key_need(key.clone(), plan, move |view, out, _| {
        let (g, consumer) = (&args[2][..], &args[3][..]);
        let attempts_max = count.saturating_mul(10);
        let ids: Vec<StreamId> = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(s) => match s.and_then(|s| s.group(g)) {
                None => return reply::error(out, &nogroup(&key, g, "")),
                Some(gr) => gr
                    .pel_range(start, StreamId::MAX)
                    .map(|(id, _)| id)
                    .take(
                        usize::try_from(attempts_max)
                            .unwrap_or(usize::MAX)
                            .saturating_add(1),
                    )
                    .collect(),
            },
        };
        let now = now_ms() as i64;
        let mut attempts = attempts_max;
        let (mut pos, mut eof) = (0, false);
        let (mut body, mut len, mut deleted) = (bytes::BytesMut::new(), 0, Vec::new());
        loop {
            if attempts == 0 {
                break;
            }
            attempts -= 1;
            if count == 0 {
                break;
            }
            let Some(&id) = ids.get(pos) else {
                eof = true;
                break;
            };
            pos += 1;
            let Ok(Some(s)) = get(view, &key) else { break };
            let Some((t, c)) = s
                .group(g)
                .and_then(|gr| gr.nack(id))
                .map(|n| (n.delivery_time, n.delivery_count))
            else {
                continue;
            };
            if !s.exists(id) {
                drop_nack(view, &key, g, id);
                deleted.push(id);
                count -= 1;
                continue;
            }
            if minidle != 0 && now - (t as i64) < minidle {
                continue;
            }
            if let Some(e) = s.get(id) {
                if justid {
                    write_id(&mut body, id);
                } else {
                    write_entry(&mut body, &e);
                }
            }
            claim(
                view,
                &key,
                g,
                consumer,
                id,
                now as u64,
                if justid { c } else { c + 1 },
            );
            len += 1;
            count -= 1;
        }
        let next = if eof {
            StreamId::MIN
        } else {
            ids.get(pos).copied().unwrap_or(StreamId::MIN)
        };
        if len == 0 && deleted.is_empty() {
            view.unchanged(&key);
        } else {
            view.quiet(&key);
        }
        write_array_len(out, 3);
        write_id(out, next);
        write_array_len(out, len);
        out.extend_from_slice(&body);
        write_array_len(out, deleted.len());
        for id in deleted {
            write_id(out, id);
        }
    })
}

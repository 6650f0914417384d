//! Consumer groups: XGROUP (CREATE SETID DESTROY CREATECONSUMER
//! DELCONSUMER HELP), XACK and XPENDING, as Redis 7.0's `t_stream.c`
//! answers them (XCLAIM and XAUTOCLAIM: `claim`).

use super::{
    events, get, get_mut, need, no_such_group, nogroup, parse_bound, parse_id, parse_strict_id,
    write_id,
};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::Bytes;
use strata_engine::clock::now_ms;
use strata_engine::types::stream::{StreamId, ENTRIES_READ_UNKNOWN};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_null_array, write_simple,
};

/// XGROUP HELP.
fn xgroup_help(out: &mut bytes::BytesMut) {
    crate::commands::server::help(
        out,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Prints this help.",
        ],
    );
}

pub fn xgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    if sub == "help" {
        xgroup_help(ctx.out);
        return Outcome::Done;
    }
    let (mut mkstream, mut entries_read) = (false, ENTRIES_READ_UNKNOWN);
    let mut i = 5;
    while i < args.len() {
        if sub == "create" && is(&args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (sub == "create" || sub == "setid")
            && is(&args[i], "entriesread")
            && i + 1 < args.len()
        {
            let Some(n) = parse_i64(&args[i + 1]) else {
                reply::error(ctx.out, reply::NOT_INTEGER);
                return Outcome::Done;
            };
            if n < 0 && n != ENTRIES_READ_UNKNOWN {
                reply::error(ctx.out, "ERR value for ENTRIESREAD must be positive or -1");
                return Outcome::Done;
            }
            entries_read = n;
            i += 2;
        } else {
            reply::subcommand_syntax(ctx.out, &args[1], "xgroup");
            return Outcome::Done;
        }
    }
    let args = args.to_vec();
    let key = args[2].clone();
    ctx.with_key_need(key.clone(), need(Vec::new()), move |view, out, _| {
        let g = &args[3][..];
        let (exists, has_group) = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(s) => (s.is_some(), s.is_some_and(|s| s.group(g).is_some())),
        };
        if !mkstream {
            if !exists {
                return reply::error(out, "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
            }
            if !has_group && matches!(sub.as_str(), "setid" | "createconsumer" | "delconsumer") {
                return reply::error(out, &no_such_group(&key, g));
            }
        }
        match sub.as_str() {
            "create" if args.len() <= 8 => {
                let id = if &args[4][..] == b"$" {
                    match get(view, &key) {
                        Ok(Some(s)) => s.last_id,
                        _ => StreamId::MIN,
                    }
                } else {
                    match parse_strict_id(&args[4]) {
                        Ok(id) => id,
                        Err(e) => return reply::error(out, e),
                    }
                };
                if has_group {
                    return reply::error(out, "BUSYGROUP Consumer Group name already exists");
                }
                if let Ok(Some(s)) = get_mut(view, &key, true) {
                    s.create_group(g, id, entries_read);
                }
                // Only a stream MKSTREAM made is a modification for Redis.
                if exists {
                    view.quiet(&key);
                }
                events(&key, &["xgroup-create"]);
                write_simple(out, b"OK");
            }
            "setid" if args.len() == 5 || args.len() == 7 => {
                let id = if &args[4][..] == b"$" {
                    match get(view, &key) {
                        Ok(Some(s)) => s.last_id,
                        _ => StreamId::MIN,
                    }
                } else {
                    match parse_id(&args[4], 0) {
                        Ok(id) => id,
                        Err(e) => return reply::error(out, e),
                    }
                };
                if let Ok(Some(s)) = get_mut(view, &key, false) {
                    if let Some(gr) = s.group_mut(g) {
                        gr.last_id = id;
                        gr.entries_read = entries_read;
                    }
                }
                view.quiet(&key);
                events(&key, &["xgroup-setid"]);
                write_simple(out, b"OK");
            }
            "destroy" if has_group => {
                if let Ok(Some(s)) = get_mut(view, &key, false) {
                    s.destroy_group(g);
                }
                view.quiet(&key);
                events(&key, &["xgroup-destroy"]);
                write_integer(out, 1);
            }
            "destroy" => write_integer(out, 0),
            "createconsumer" => {
                let created = match get_mut(view, &key, false) {
                    Ok(Some(s)) => s
                        .group_mut(g)
                        .is_some_and(|gr| gr.create_consumer(&args[4], now_ms())),
                    _ => false,
                };
                if created {
                    view.quiet(&key);
                    events(&key, &["xgroup-createconsumer"]);
                } else {
                    view.unchanged(&key);
                }
                write_integer(out, created as i64);
            }
            "delconsumer" => {
                let pending = match get_mut(view, &key, false) {
                    Ok(Some(s)) => s.group_mut(g).and_then(|gr| gr.delete_consumer(&args[4])),
                    _ => None,
                };
                match pending {
                    Some(n) => {
                        view.quiet(&key);
                        events(&key, &["xgroup-delconsumer"]);
                        write_integer(out, n as i64);
                    }
                    None => {
                        view.unchanged(&key);
                        write_integer(out, 0);
                    }
                }
            }
            _ => reply::subcommand_syntax(out, &args[1], "xgroup"),
        }
    })
}

pub fn xack(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let args = args.to_vec();
    let key = args[1].clone();
    ctx.with_key_need(key.clone(), need(Vec::new()), move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(s) if s.and_then(|s| s.group(&args[2])).is_none() => return write_integer(out, 0),
            Ok(_) => {}
        }
        let ids: Result<Vec<StreamId>, _> = args[3..].iter().map(|b| parse_strict_id(b)).collect();
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => return reply::error(out, e),
        };
        let mut n = 0;
        if let Ok(Some(s)) = get_mut(view, &key, false) {
            if let Some(g) = s.group_mut(&args[2]) {
                n = ids.iter().filter(|&&id| g.ack(id)).count();
            }
        }
        if n == 0 {
            view.unchanged(&key);
        } else {
            view.quiet(&key);
        }
        write_integer(out, n as i64);
    })
}

pub fn xpending(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let n = args.len();
    if n != 3 && !(6..=9).contains(&n) {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    let mut range = None;
    if n >= 6 {
        let parsed = (|| -> Result<_, &'static str> {
            let (mut s, mut minidle) = (3, 0i64);
            if is(&args[3], "idle") {
                minidle = parse_i64(&args[4]).ok_or(reply::NOT_INTEGER)?;
                if n < 8 {
                    return Err(reply::SYNTAX);
                }
                s += 2;
            }
            let count = parse_i64(&args[s + 2]).ok_or(reply::NOT_INTEGER)?.max(0);
            let start = parse_bound(&args[s], true)?;
            let end = parse_bound(&args[s + 1], false)?;
            let consumer = args.get(s + 3).cloned();
            Ok((minidle, start, end, count as usize, consumer))
        })();
        match parsed {
            Ok(p) => range = Some(p),
            Err(e) => {
                reply::error(ctx.out, e);
                return Outcome::Done;
            }
        }
    }
    let (key, gname) = (args[1].clone(), args[2].clone());
    ctx.with_key_need(key.clone(), need(Vec::new()), move |view, out, v| {
        let s = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(s) => s,
        };
        let Some(g) = s.and_then(|s| s.group(&gname)) else {
            return reply::error(out, &nogroup(&key, &gname, ""));
        };
        let Some((minidle, start, end, mut count, consumer)) = range else {
            write_array_len(out, 4);
            write_integer(out, g.pel_len() as i64);
            match (g.first_pending(), g.last_pending()) {
                (Some(a), Some(b)) => {
                    write_id(out, a);
                    write_id(out, b);
                    let owners: Vec<(&[u8], usize)> = g
                        .consumers()
                        .filter(|(_, c)| c.pending() > 0)
                        .map(|(n, c)| (n, c.pending()))
                        .collect();
                    write_array_len(out, owners.len());
                    for (name, p) in owners {
                        write_array_len(out, 2);
                        write_bulk(out, name);
                        write_bulk(out, p.to_string().as_bytes());
                    }
                }
                _ => {
                    write_null(out, v);
                    write_null(out, v);
                    write_null_array(out, v);
                }
            }
            return;
        };
        let now = now_ms() as i64;
        let ids: Vec<StreamId> = match &consumer {
            Some(c) => match g.consumer(c) {
                Some(c) => c.pel_from(start).take_while(|id| *id <= end).collect(),
                None => return write_array_len(out, 0),
            },
            None => g.pel_range(start, end).map(|(id, _)| id).collect(),
        };
        let mut body = bytes::BytesMut::new();
        let mut len = 0;
        for id in ids {
            if count == 0 {
                break;
            }
            let Some(nack) = g.nack(id) else { continue };
            let idle = now - nack.delivery_time as i64;
            if minidle != 0 && idle < minidle {
                continue;
            }
            len += 1;
            count -= 1;
            write_array_len(&mut body, 4);
            write_id(&mut body, id);
            write_bulk(&mut body, nack.consumer());
            write_integer(&mut body, idle.max(0));
            write_integer(&mut body, nack.delivery_count as i64);
        }
        write_array_len(out, len);
        out.extend_from_slice(&body);
    })
}

//! CLIENT ID | SETNAME | GETNAME | SETINFO | LIST | INFO | KILL |
//! NO-EVICT | PAUSE | UNPAUSE | REPLY | HELP.

use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::reply;
use bytes::Bytes;
use strata_protocol::{write_bulk, write_integer, write_null, write_simple, write_verbatim};

/// Validates and sets the connection name (no spaces or newlines).
pub fn set_name(ctx: &mut Ctx<'_>, name: &[u8]) -> Result<(), &'static str> {
    if name.iter().any(|&b| b <= b' ' || b > b'~') {
        return Err("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    ctx.conn.handle.info.lock().name = String::from_utf8_lossy(name).into_owned();
    Ok(())
}

pub fn client(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let v = ctx.version();
    if is(sub, "id") && args.len() == 2 {
        write_integer(ctx.out, ctx.conn.handle.id as i64);
    } else if is(sub, "setname") && args.len() == 3 {
        match set_name(ctx, &args[2]) {
            Ok(()) => write_simple(ctx.out, b"OK"),
            Err(e) => reply::error(ctx.out, e),
        }
    } else if is(sub, "getname") && args.len() == 2 {
        let name = ctx.conn.handle.info.lock().name.clone();
        if name.is_empty() {
            write_null(ctx.out, v);
        } else {
            write_bulk(ctx.out, name.as_bytes());
        }
    } else if is(sub, "setinfo") && args.len() == 4 {
        let value = String::from_utf8_lossy(&args[3]).into_owned();
        if value.contains(|c: char| c <= ' ' || c > '~') {
            reply::error(
                ctx.out,
                "ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.",
            );
            return Outcome::Done;
        }
        let mut info = ctx.conn.handle.info.lock();
        if is(&args[2], "lib-name") {
            info.lib_name = value;
        } else if is(&args[2], "lib-ver") {
            info.lib_ver = value;
        } else {
            drop(info);
            reply::error(
                ctx.out,
                &format!("ERR Unrecognized option '{}'", reply::lossy(&args[2], 64)),
            );
            return Outcome::Done;
        }
        drop(info);
        write_simple(ctx.out, b"OK");
    } else if is(sub, "list") {
        let mut text = String::new();
        for c in ctx.shared.clients.all() {
            text.push_str(&c.list_line());
            text.push('\n');
        }
        write_verbatim(ctx.out, v, b"txt", text.as_bytes());
    } else if is(sub, "info") && args.len() == 2 {
        let mut line = ctx.conn.handle.list_line();
        line.push('\n');
        write_verbatim(ctx.out, v, b"txt", line.as_bytes());
    } else if is(sub, "kill") && args.len() >= 3 {
        kill(ctx, args);
    } else if is(sub, "no-evict") && args.len() == 3 {
        match on_off(&args[2]) {
            Some(on) => {
                ctx.conn.handle.info.lock().no_evict = on;
                write_simple(ctx.out, b"OK");
            }
            None => reply::error(ctx.out, reply::SYNTAX),
        }
    } else if is(sub, "pause") && (args.len() == 3 || args.len() == 4) {
        let all = match args.get(3) {
            None => true,
            Some(m) if is(m, "all") => true,
            Some(m) if is(m, "write") => false,
            Some(_) => {
                reply::error(ctx.out, "ERR CLIENT PAUSE mode must be WRITE or ALL");
                return Outcome::Done;
            }
        };
        match parse_i64(&args[2]) {
            None => reply::error(ctx.out, "ERR timeout is not an integer or out of range"),
            Some(ms) if ms < 0 => reply::error(ctx.out, "ERR timeout is negative"),
            Some(ms) => {
                ctx.shared
                    .pause
                    .pause(std::time::Duration::from_millis(ms as u64), all);
                write_simple(ctx.out, b"OK");
            }
        }
    } else if is(sub, "unpause") && args.len() == 2 {
        ctx.shared.pause.unpause();
        write_simple(ctx.out, b"OK");
    } else if is(sub, "reply") && args.len() == 3 {
        // The connection applies it (`connection::ReplyMode`).
        if is(&args[2], "on") {
            write_simple(ctx.out, b"OK");
        } else if !is(&args[2], "off") && !is(&args[2], "skip") {
            reply::error(ctx.out, reply::SYNTAX);
        }
    } else if is(sub, "help") {
        super::help(ctx.out, "CLIENT", &[
            "ID", "SETNAME <name>", "GETNAME", "SETINFO <LIB-NAME|LIB-VER> <value>", "LIST",
            "INFO", "KILL <ip:port> | KILL [ID <id>] [ADDR <ip:port>] [LADDR <ip:port>] [USER <name>] [TYPE <type>] [SKIPME yes|no]",
            "NO-EVICT (ON|OFF)", "PAUSE <timeout> [WRITE|ALL]", "UNPAUSE", "REPLY (ON|OFF|SKIP)",
        ]);
    } else if let Some(name) = [
        "id", "setname", "getname", "setinfo", "info", "kill", "no-evict", "pause", "unpause",
        "reply",
    ]
    .into_iter()
    .find(|n| is(sub, n))
    {
        // A known subcommand with the wrong number of arguments (Redis 7).
        reply::arity(ctx.out, &format!("client|{name}"));
    } else {
        reply::unknown_subcommand(ctx.out, sub, "client");
    }
    Outcome::Done
}

fn on_off(a: &[u8]) -> Option<bool> {
    if is(a, "on") {
        Some(true)
    } else if is(a, "off") {
        Some(false)
    } else {
        None
    }
}

/// CLIENT KILL `<addr>` (old form: +OK or error) or filters (count).
fn kill(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let me = ctx.conn.handle.id;
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(&args[2]).into_owned();
        match ctx
            .shared
            .clients
            .all()
            .into_iter()
            // A killed client is closing: as in Redis, it is gone already.
            .find(|c| c.addr == addr && !c.is_killed())
        {
            Some(c) => {
                c.kill();
                write_simple(ctx.out, b"OK");
            }
            None => reply::error(ctx.out, "ERR No such client"),
        }
        return;
    }
    let (mut id, mut addr, mut laddr, mut skipme) = (None, None, None, true);
    let (mut user, mut kind) = (None, None);
    let mut i = 2;
    while i + 1 < args.len() + 1 && i < args.len() {
        let Some(val) = args.get(i + 1) else {
            reply::error(ctx.out, reply::SYNTAX);
            return;
        };
        let text = String::from_utf8_lossy(val).into_owned();
        if is(&args[i], "id") {
            match parse_i64(val) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => {
                    reply::error(ctx.out, "ERR client-id should be greater than 0");
                    return;
                }
            }
        } else if is(&args[i], "addr") {
            addr = Some(text);
        } else if is(&args[i], "laddr") {
            laddr = Some(text);
        } else if is(&args[i], "user") {
            if text != "default" {
                reply::error(ctx.out, &format!("ERR No such user '{text}'"));
                return;
            }
            user = Some(text);
        } else if is(&args[i], "type") {
            let t = text.to_ascii_lowercase();
            if !["normal", "pubsub", "master", "replica", "slave"].contains(&t.as_str()) {
                reply::error(ctx.out, &format!("ERR Unknown client type '{text}'"));
                return;
            }
            kind = Some(t);
        } else if is(&args[i], "skipme") {
            skipme = match text.to_ascii_lowercase().as_str() {
                "yes" => true,
                "no" => false,
                _ => {
                    reply::error(ctx.out, reply::SYNTAX);
                    return;
                }
            };
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return;
        }
        i += 2;
    }
    let mut n = 0;
    for c in ctx.shared.clients.all() {
        if c.is_killed()
            || (skipme && c.id == me)
            || id.is_some_and(|x| x != c.id)
            || addr.as_ref().is_some_and(|a| *a != c.addr)
            || laddr.as_ref().is_some_and(|a| *a != c.laddr)
            // Every client is the default user's.
            || user.as_ref().is_some_and(|u| u != "default")
            // No replicas or masters; subscribers count as normal here.
            || kind.as_ref().is_some_and(|t| t != "normal" && t != "pubsub")
        {
            continue;
        }
        c.kill();
        n += 1;
    }
    write_integer(ctx.out, n);
}

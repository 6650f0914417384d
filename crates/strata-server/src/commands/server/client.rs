//! CLIENT ID | SETNAME | GETNAME | SETINFO | LIST | INFO | KILL |
//! NO-EVICT | PAUSE | UNPAUSE | REPLY | HELP.

use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::services::tracking::Settings;
use bytes::Bytes;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, write_set_len,
    write_simple, write_verbatim,
};

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
    } else if is(sub, "unblock") && (args.len() == 3 || args.len() == 4) {
        unblock(ctx, args);
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
        set_info(ctx, args);
    } else if is(sub, "list") {
        list(ctx, args);
    } else if is(sub, "info") && args.len() == 2 {
        let mut line = ctx.conn.handle.list_line();
        line.push('\n');
        write_verbatim(ctx.out, v, b"txt", line.as_bytes());
    } else if is(sub, "kill") && args.len() >= 3 {
        kill(ctx, args);
    } else if is(sub, "tracking") && args.len() >= 3 {
        if let Err(e) = tracking(ctx, args) {
            reply::error(ctx.out, &e);
        }
    } else if is(sub, "caching") && args.len() == 3 {
        caching(ctx, args);
    } else if is(sub, "trackinginfo") && args.len() == 2 {
        tracking_info(ctx);
    } else if is(sub, "getredir") && args.len() == 2 {
        let s = ctx.tracking().settings(ctx.conn.handle.id);
        write_integer(ctx.out, s.map_or(-1, |s| s.redirect as i64));
    } else if is(sub, "no-evict") && args.len() == 3 {
        match on_off(&args[2]) {
            Some(on) => {
                ctx.conn.handle.info.lock().no_evict = on;
                write_simple(ctx.out, b"OK");
            }
            None => reply::error(ctx.out, reply::SYNTAX),
        }
    } else if is(sub, "no-touch") && args.len() == 3 {
        match on_off(&args[2]) {
            Some(on) => {
                ctx.conn.no_touch = on;
                ctx.conn.handle.info.lock().no_touch = on;
                write_simple(ctx.out, b"OK");
            }
            None => reply::error(ctx.out, reply::SYNTAX),
        }
    } else if is(sub, "pause") && (args.len() == 3 || args.len() == 4) {
        pause(ctx, args);
    } else if is(sub, "unpause") && args.len() == 2 {
        ctx.server().pause.unpause();
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
            "ID", "UNBLOCK <clientid> [TIMEOUT|ERROR]", "SETNAME <name>", "GETNAME", "SETINFO <LIB-NAME|LIB-VER> <value>", "LIST",
            "INFO", "KILL <ip:port> | KILL [ID <id>] [ADDR <ip:port>] [LADDR <ip:port>] [USER <name>] [TYPE <type>] [SKIPME yes|no]",
            "NO-EVICT (ON|OFF)", "NO-TOUCH (ON|OFF)", "PAUSE <timeout> [WRITE|ALL]", "UNPAUSE", "REPLY (ON|OFF|SKIP)",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> ...] [OPTIN] [OPTOUT] [NOLOOP]",
            "CACHING (YES|NO)", "TRACKINGINFO", "GETREDIR",
        ]);
    } else if let Some(name) = [
        "id",
        "setname",
        "getname",
        "setinfo",
        "info",
        "kill",
        "no-evict",
        "no-touch",
        "pause",
        "unpause",
        "reply",
        "tracking",
        "caching",
        "trackinginfo",
        "getredir",
        "unblock",
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

/// CLIENT UNBLOCK.
fn unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    // Redis 7.0's order: the reason, then the id.
    let error = match args.get(3) {
        None => false,
        Some(r) if is(r, "timeout") => false,
        Some(r) if is(r, "error") => true,
        Some(_) => {
            reply::error(
                ctx.out,
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            );
            return;
        }
    };
    let Some(id) = crate::commands::parse_i64(&args[2]) else {
        reply::error(ctx.out, reply::NOT_INTEGER);
        return;
    };
    let done = id >= 0 && ctx.server().blocking.unblock(id as u64, error);
    write_integer(ctx.out, done as i64);
}

/// CLIENT SETINFO.
fn set_info(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let value = String::from_utf8_lossy(&args[3]).into_owned();
    if value.contains(|c: char| c <= ' ' || c > '~') {
        reply::error(
            ctx.out,
            "ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.",
        );
        return;
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
        return;
    }
    drop(info);
    write_simple(ctx.out, b"OK");
}

/// CLIENT LIST.
fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let v = ctx.version();
    // `CLIENT LIST [TYPE type | ID id ...]`, as Redis 7.0 parses it.
    let clients = if args.len() == 4 && is(&args[2], "type") {
        let t = String::from_utf8_lossy(&args[3]).to_ascii_lowercase();
        let Some(pubsub) = client_type(&t) else {
            let text = String::from_utf8_lossy(&args[3]);
            reply::error(ctx.out, &format!("ERR Unknown client type '{text}'"));
            return;
        };
        let all = ctx.server().clients.all();
        all.into_iter()
            .filter(|c| pubsub.is_some_and(|p| p == c.is_pubsub()))
            .collect()
    } else if args.len() > 3 && is(&args[2], "id") {
        let mut found = Vec::new();
        for a in &args[3..] {
            let Some(id) = parse_i64(a) else {
                reply::error(ctx.out, "ERR Invalid client ID");
                return;
            };
            found.extend(
                u64::try_from(id)
                    .ok()
                    .and_then(|id| ctx.server().clients.get(id)),
            );
        }
        found
    } else if args.len() != 2 {
        reply::error(ctx.out, reply::SYNTAX);
        return;
    } else {
        ctx.server().clients.all()
    };
    let mut text = String::new();
    for c in clients {
        text.push_str(&c.list_line());
        text.push('\n');
    }
    write_verbatim(ctx.out, v, b"txt", text.as_bytes());
}

/// CLIENT CACHING.
fn caching(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let s = ctx.tracking().settings(ctx.conn.handle.id);
    let err = match s {
        Some(s) if s.optin || s.optout => {
            if is(&args[2], "yes") && s.optin {
                ctx.conn.caching = Some(true);
                None
            } else if is(&args[2], "no") && s.optout {
                ctx.conn.caching = Some(false);
                None
            } else if is(&args[2], "yes") {
                Some("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
            } else if is(&args[2], "no") {
                Some("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
            } else {
                Some(reply::SYNTAX)
            }
        }
        _ => Some("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"),
    };
    match err {
        None => write_simple(ctx.out, b"OK"),
        Some(e) => reply::error(ctx.out, e),
    }
}

/// CLIENT TRACKINGINFO.
fn tracking_info(ctx: &mut Ctx<'_>) {
    let v = ctx.version();
    let s = ctx.tracking().settings(ctx.conn.handle.id);
    let mut flags: Vec<&str> = Vec::new();
    match &s {
        None => flags.push("off"),
        Some(s) => {
            flags.push("on");
            if s.bcast {
                flags.push("bcast");
            }
            if s.optin {
                flags.push("optin");
                if ctx.conn.caching == Some(true) {
                    flags.push("caching-yes");
                }
            }
            if s.optout {
                flags.push("optout");
                if ctx.conn.caching == Some(false) {
                    flags.push("caching-no");
                }
            }
            if s.noloop {
                flags.push("noloop");
            }
        }
    }
    write_map_len(ctx.out, v, 3);
    write_bulk(ctx.out, b"flags");
    write_set_len(ctx.out, v, flags.len());
    for f in flags {
        write_bulk(ctx.out, f.as_bytes());
    }
    write_bulk(ctx.out, b"redirect");
    write_integer(ctx.out, s.as_ref().map_or(-1, |s| s.redirect as i64));
    write_bulk(ctx.out, b"prefixes");
    let mut prefixes = s.map(|s| s.prefixes).unwrap_or_default();
    prefixes.sort();
    write_array_len(ctx.out, prefixes.len());
    for p in prefixes {
        write_bulk(ctx.out, &p);
    }
}

/// CLIENT PAUSE.
fn pause(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let all = match args.get(3) {
        None => true,
        Some(m) if is(m, "all") => true,
        Some(m) if is(m, "write") => false,
        Some(_) => {
            reply::error(ctx.out, "ERR CLIENT PAUSE mode must be WRITE or ALL");
            return;
        }
    };
    match parse_i64(&args[2]) {
        None => reply::error(ctx.out, crate::base::reply::TIMEOUT_NOT_INTEGER),
        Some(ms) if ms < 0 => reply::error(ctx.out, crate::base::reply::TIMEOUT_NEGATIVE),
        Some(ms) => {
            ctx.server()
                .pause
                .pause(std::time::Duration::from_millis(ms as u64), all);
            write_simple(ctx.out, b"OK");
        }
    }
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN]
/// [OPTOUT] [NOLOOP]`, checked as Redis 7.0 checks it.
fn tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<(), String> {
    let (mut redirect, mut bcast, mut optin, mut optout, mut noloop) =
        (0u64, false, false, false, false);
    let mut prefixes: Vec<Bytes> = Vec::new();
    let mut j = 3;
    while j < args.len() {
        let a = &args[j];
        let more = j + 1 < args.len();
        if is(a, "redirect") && more {
            j += 1;
            if redirect != 0 {
                return Err("ERR A client can only redirect to a single other client".into());
            }
            let id = parse_i64(&args[j]).ok_or(reply::NOT_INTEGER)?;
            if id <= 0 || !ctx.server().clients.all().iter().any(|c| c.id == id as u64) {
                return Err("ERR The client ID you want redirect to does not exist".into());
            }
            redirect = id as u64;
        } else if is(a, "bcast") {
            bcast = true;
        } else if is(a, "optin") {
            optin = true;
        } else if is(a, "optout") {
            optout = true;
        } else if is(a, "noloop") {
            noloop = true;
        } else if is(a, "prefix") && more {
            j += 1;
            prefixes.push(args[j].clone());
        } else {
            return Err(reply::SYNTAX.into());
        }
        j += 1;
    }
    let id = ctx.conn.handle.id;
    let tracking = ctx.tracking().clone();
    if is(&args[2], "off") {
        tracking.off(id);
        ctx.conn.caching = None;
        write_simple(ctx.out, b"OK");
        return Ok(());
    }
    if !is(&args[2], "on") {
        return Err(reply::SYNTAX.into());
    }
    if !bcast && !prefixes.is_empty() {
        return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
    }
    let old = tracking.settings(id);
    if old.as_ref().is_some_and(|o| o.bcast != bcast) {
        return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    if bcast && (optin || optout) {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
    }
    if optin && optout {
        return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
    }
    if old
        .as_ref()
        .is_some_and(|o| (optin && o.optout) || (optout && o.optin))
    {
        return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let existing = old.as_ref().map(|o| o.prefixes.clone()).unwrap_or_default();
    for (i, p) in prefixes.iter().enumerate() {
        if let Some(e) = existing.iter().find(|e| overlap(p, e)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(e)
            ));
        }
        if let Some(q) = prefixes[i + 1..].iter().find(|q| overlap(p, q)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(q)
            ));
        }
    }
    let mut all = existing;
    all.extend(prefixes);
    // BCAST without a prefix tracks the empty one: every key.
    if bcast && all.is_empty() {
        all.push(Bytes::new());
    }
    let me = ctx.listener().me();
    let resp3 = ctx.conn.version == strata_protocol::Version::Resp3;
    tracking.on(
        id,
        Settings {
            bcast,
            optin,
            optout,
            noloop,
            redirect,
            prefixes: all,
        },
        me,
        resp3,
    );
    write_simple(ctx.out, b"OK");
    Ok(())
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
            .server()
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
            if ctx.acl().get(val).is_none() {
                reply::error(ctx.out, &format!("ERR No such user '{text}'"));
                return;
            }
            user = Some(val.clone());
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
    for c in ctx.server().clients.all() {
        if c.is_killed()
            || (skipme && c.id == me)
            || id.is_some_and(|x| x != c.id)
            || addr.as_ref().is_some_and(|a| *a != c.addr)
            || laddr.as_ref().is_some_and(|a| *a != c.laddr)
            || user.as_ref().is_some_and(|u| *u != c.info.lock().user)
            // No replicas or masters here.
            || kind.as_deref().is_some_and(|t| client_type(t).flatten() != Some(c.is_pubsub()))
        {
            continue;
        }
        c.kill();
        n += 1;
    }
    write_integer(ctx.out, n);
}

/// A client type's name as Redis knows it (`getClientTypeByName`): None if
/// unknown; Some(None) for replicas and masters (there are none here);
/// Some(Some(pubsub)) for normal and pubsub clients.
fn client_type(name: &str) -> Option<Option<bool>> {
    match name {
        "normal" => Some(Some(false)),
        "pubsub" => Some(Some(true)),
        "master" | "replica" | "slave" => Some(None),
        _ => None,
    }
}

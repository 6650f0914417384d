//! Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET.

use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::services::acl::LogContext;
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_simple, Version,
};

pub fn ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    // A RESP2 subscriber gets ["pong", message], as from Redis.
    let subscribed =
        ctx.version() == Version::Resp2 && ctx.conn.pubsub.as_ref().is_some_and(|l| l.active());
    match args.len() {
        1 | 2 if subscribed => {
            strata_protocol::write_array_len(ctx.out, 2);
            write_bulk(ctx.out, b"pong");
            write_bulk(ctx.out, args.get(1).map_or(&b""[..], |a| &a[..]));
        }
        1 => write_simple(ctx.out, b"PONG"),
        2 => write_bulk(ctx.out, &args[1]),
        _ => reply::arity(ctx.out, "ping"),
    }
    Outcome::Done
}

pub fn echo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    write_bulk(ctx.out, &args[1]);
    Outcome::Done
}

pub fn hello(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut version = ctx.version();
    let mut i = 1;
    if let Some(v) = args.get(1) {
        version = match parse_i64(v) {
            Some(2) => Version::Resp2,
            Some(3) => Version::Resp3,
            Some(_) => {
                reply::error(ctx.out, "NOPROTO unsupported protocol version");
                return Outcome::Done;
            }
            None => {
                reply::error(
                    ctx.out,
                    "ERR Protocol version is not an integer or out of range",
                );
                return Outcome::Done;
            }
        };
        i = 2;
    }
    let mut name = None;
    while i < args.len() {
        if is(&args[i], "auth") && i + 2 < args.len() {
            if let Err(msg) = authenticate(ctx, &args[0], Some(&args[i + 1]), &args[i + 2]) {
                reply::error(ctx.out, msg);
                return Outcome::Done;
            }
            i += 3;
        } else if is(&args[i], "setname") && i + 1 < args.len() {
            name = Some(args[i + 1].clone());
            i += 2;
        } else {
            reply::error(
                ctx.out,
                &format!(
                    "ERR Syntax error in HELLO option '{}'",
                    reply::lossy(&args[i], 64)
                ),
            );
            return Outcome::Done;
        }
    }
    if !ctx.conn.authenticated {
        reply::error(ctx.out, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
        return Outcome::Done;
    }
    if let Some(n) = name {
        if let Err(e) = super::client::set_name(ctx, &n) {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    }
    ctx.conn.version = version;
    ctx.conn
        .handle
        .resp
        .store(if version == Version::Resp3 { 3 } else { 2 }, Relaxed);
    let out = &mut *ctx.out;
    write_map_len(out, version, 7);
    write_bulk(out, b"server");
    write_bulk(out, b"redis");
    write_bulk(out, b"version");
    write_bulk(out, crate::base::process::REDIS_VERSION.as_bytes());
    write_bulk(out, b"proto");
    write_integer(out, if version == Version::Resp3 { 3 } else { 2 });
    write_bulk(out, b"id");
    write_integer(out, ctx.conn.handle.id as i64);
    write_bulk(out, b"mode");
    write_bulk(out, b"standalone");
    write_bulk(out, b"role");
    write_bulk(out, b"master");
    write_bulk(out, b"modules");
    write_array_len(out, 0);
    Outcome::Done
}

/// Authenticates the connection as `user` (the default user when None)
/// with `password` (`ACLAuthenticateUser`); the error if it fails, which
/// is logged in the ACL LOG as `command` refused.
fn authenticate(
    ctx: &mut Ctx<'_>,
    command: &[u8],
    user: Option<&[u8]>,
    password: &[u8],
) -> Result<(), &'static str> {
    const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
    let acl = &ctx.server().acl;
    let name = user.unwrap_or(b"default");
    if user.is_none() && acl.default_user().rules().nopass {
        return Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
    }
    match acl.authenticate(name, password) {
        Some(u) => {
            ctx.conn.authenticated = true;
            ctx.conn.handle.info.lock().user = u.name.clone();
            ctx.conn.user = u;
            Ok(())
        }
        None => {
            let context = if ctx.conn.multi.is_some() {
                LogContext::Multi
            } else {
                LogContext::Toplevel
            };
            acl.log_auth_failure(&ctx.conn.handle, context, command, name);
            Err(WRONGPASS)
        }
    }
}

pub fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 3 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    let user = (args.len() == 3).then(|| &args[1][..]);
    match authenticate(ctx, &args[0], user, &args[args.len() - 1]) {
        Ok(()) => write_simple(ctx.out, b"OK"),
        Err(e) => reply::error(ctx.out, e),
    }
    Outcome::Done
}

pub fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    match parse_i64(&args[1]) {
        Some(n) if n >= 0 && (n as usize) < ctx.engine().databases() => {
            ctx.conn.db = n as usize;
            ctx.conn.handle.db.store(n as u64, Relaxed);
            write_simple(ctx.out, b"OK");
        }
        Some(_) => reply::error(ctx.out, reply::DB_RANGE),
        None => reply::error(ctx.out, reply::NOT_INTEGER),
    }
    Outcome::Done
}

pub fn quit(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    write_simple(ctx.out, b"OK");
    Outcome::Close
}

pub fn reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    ctx.conn.db = 0;
    ctx.conn.version = Version::Resp2;
    ctx.conn.handle.db.store(0, Relaxed);
    ctx.conn.handle.resp.store(2, Relaxed);
    ctx.conn.handle.info.lock().name.clear();
    ctx.conn.multi = None;
    ctx.conn.watched.clear();
    ctx.conn.pubsub = None;
    ctx.conn.caching = None;
    ctx.tracking().off(ctx.conn.handle.id);
    ctx.server().monitors.remove(ctx.conn.handle.id);
    ctx.conn.monitor = false;
    // Back to the default user, authenticated only if it needs no
    // password (`clearClientConnectionState`).
    ctx.conn.user = ctx.acl().default_user();
    ctx.conn.authenticated = ctx.acl().auto_auth();
    ctx.conn.handle.info.lock().user = ctx.conn.user.name.clone();
    write_simple(ctx.out, b"RESET");
    Outcome::Done
}

/// MONITOR: from now on this client is sent every command the server runs
/// (`services::monitor`). A second MONITOR is ignored without a reply, as
/// Redis ignores it; inside EXEC it is refused, as Redis refuses it to a
/// client that expects one reply per command.
pub fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    if ctx.conn.exec_ready.is_some() || ctx.conn.script {
        crate::base::reply::error(
            ctx.out,
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        );
        return Outcome::Done;
    }
    if ctx.conn.monitor {
        return Outcome::Done;
    }
    let me = ctx.listener().me();
    ctx.server().monitors.add(ctx.conn.handle.id, me);
    ctx.conn.monitor = true;
    write_simple(ctx.out, b"OK");
    Outcome::Done
}

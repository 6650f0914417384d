//! Connection and server commands: PING ECHO HELLO AUTH SELECT QUIT RESET
//! COMMAND INFO DBSIZE FLUSHDB FLUSHALL TIME MEMORY OBJECT SLOWLOG DEBUG
//! LASTSAVE.

use super::table::COMMANDS;
use super::{is, parse_i64};
use crate::command::{Ctx, Outcome};
use crate::reply;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::Ordering::Relaxed;
use strata_engine::Location;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, write_set_len,
    write_simple, write_verbatim, Version,
};

pub fn ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    match args.len() {
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
            if let Some(msg) = auth_error(ctx, Some(&args[i + 1]), &args[i + 2]) {
                reply::error(ctx.out, msg);
                return Outcome::Done;
            }
            ctx.conn.authenticated = true;
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
    write_bulk(out, crate::info::REDIS_VERSION.as_bytes());
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

/// The error for an AUTH attempt, if it fails. Only the `default` user
/// exists; without `requirepass` it has no password (Redis `nopass`), so
/// `AUTH default <anything>` succeeds while the legacy one-argument form
/// is refused.
fn auth_error(ctx: &Ctx<'_>, user: Option<&[u8]>, password: &[u8]) -> Option<&'static str> {
    const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
    if user.is_some_and(|u| u != b"default") {
        return Some(WRONGPASS);
    }
    match &ctx.shared.config.read().requirepass {
        None if user.is_some() => None,
        None => Some("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"),
        Some(p) if p.as_bytes() == password => None,
        Some(_) => Some(WRONGPASS),
    }
}

pub fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 3 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    let user = (args.len() == 3).then(|| &args[1][..]);
    match auth_error(ctx, user, &args[args.len() - 1]) {
        None => {
            ctx.conn.authenticated = true;
            write_simple(ctx.out, b"OK");
        }
        Some(e) => reply::error(ctx.out, e),
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
    write_simple(ctx.out, b"RESET");
    Outcome::Done
}

fn write_command_info(out: &mut bytes::BytesMut, v: Version, c: &crate::command::CommandSpec) {
    write_array_len(out, 10);
    write_bulk(out, c.name.as_bytes());
    write_integer(out, c.arity as i64);
    write_set_len(out, v, c.flags.len());
    for f in c.flags {
        write_simple(out, f.as_bytes());
    }
    write_integer(out, c.keys.0 as i64);
    write_integer(out, c.keys.1 as i64);
    write_integer(out, c.keys.2 as i64);
    write_set_len(out, v, 1);
    write_simple(out, format!("@{}", c.group).as_bytes());
    write_array_len(out, 0); // tips
    write_array_len(out, 0); // key specs
    write_array_len(out, 0); // subcommands
}

pub fn command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let v = ctx.version();
    let out = &mut *ctx.out;
    let Some(sub) = args.get(1) else {
        write_array_len(out, COMMANDS.len());
        for c in COMMANDS {
            write_command_info(out, v, c);
        }
        return Outcome::Done;
    };
    if is(sub, "count") {
        write_integer(out, COMMANDS.len() as i64);
    } else if is(sub, "info") {
        let names: Vec<&Bytes> = args[2..].iter().collect();
        if names.is_empty() {
            write_array_len(out, COMMANDS.len());
            for c in COMMANDS {
                write_command_info(out, v, c);
            }
        } else {
            write_array_len(out, names.len());
            for n in names {
                match super::table::lookup(n) {
                    Some(c) => write_command_info(out, v, c),
                    None => write_null(out, v),
                }
            }
        }
    } else if is(sub, "docs") {
        let specs: Vec<_> = if args.len() > 2 {
            args[2..]
                .iter()
                .filter_map(|n| super::table::lookup(n))
                .collect()
        } else {
            COMMANDS.iter().collect()
        };
        write_map_len(out, v, specs.len());
        for c in specs {
            write_bulk(out, c.name.as_bytes());
            write_map_len(out, v, 3);
            write_bulk(out, b"summary");
            write_bulk(out, c.summary.as_bytes());
            write_bulk(out, b"since");
            write_bulk(out, b"1.0.0");
            write_bulk(out, b"group");
            write_bulk(out, c.group.as_bytes());
        }
    } else if is(sub, "list") {
        write_array_len(out, COMMANDS.len());
        for c in COMMANDS {
            write_bulk(out, c.name.as_bytes());
        }
    } else if is(sub, "getkeys") {
        let Some(c) = args.get(2).and_then(|n| super::table::lookup(n)) else {
            reply::error(out, "ERR Invalid command specified");
            return Outcome::Done;
        };
        let cmd_args = &args[2..];
        let (first, last, step) = c.keys;
        if !c.arity_ok(cmd_args.len()) {
            reply::error(out, "ERR Invalid number of arguments specified for command");
            return Outcome::Done;
        }
        if first == 0 {
            reply::error(out, "ERR The command has no key arguments");
            return Outcome::Done;
        }
        let last = if last < 0 {
            cmd_args.len() as i32 + last
        } else {
            last
        };
        let keys: Vec<&Bytes> = (first..=last)
            .step_by(step.max(1) as usize)
            .filter_map(|i| cmd_args.get(i as usize))
            .collect();
        write_array_len(out, keys.len());
        for k in keys {
            write_bulk(out, k);
        }
    } else if is(sub, "help") {
        help(
            out,
            "COMMAND",
            &[
                "COUNT",
                "DOCS [<command-name> ...]",
                "GETKEYS <full-command>",
                "INFO [<command-name> ...]",
                "LIST",
            ],
        );
    } else {
        reply::unknown_subcommand(out, sub, "command");
    }
    Outcome::Done
}

/// Writes a HELP reply: one line per subcommand.
pub fn help(out: &mut bytes::BytesMut, cmd: &str, lines: &[&str]) {
    write_array_len(out, lines.len() + 1);
    write_simple(
        out,
        format!("{cmd} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:").as_bytes(),
    );
    for l in lines {
        write_simple(out, l.as_bytes());
    }
}

pub fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sections: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let text = crate::info::render(ctx.shared, &sections);
    write_verbatim(ctx.out, ctx.version(), b"txt", text.as_bytes());
    Outcome::Done
}

pub fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let n = ctx.engine().dbsize(ctx.db());
    write_integer(ctx.out, n as i64);
    Outcome::Done
}

/// FLUSHDB / FLUSHALL [ASYNC|SYNC]: both run synchronously (only RAM is
/// touched; records on flash become garbage for the collector).
fn flush_mode_ok(ctx: &mut Ctx<'_>, args: &[Bytes]) -> bool {
    match args.get(1) {
        None => true,
        Some(a) if args.len() == 2 && (is(a, "async") || is(a, "sync")) => true,
        Some(_) => {
            reply::error(ctx.out, reply::SYNTAX);
            false
        }
    }
}

pub fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if flush_mode_ok(ctx, args) {
        ctx.engine().flush_db(ctx.db());
        write_simple(ctx.out, b"OK");
    }
    Outcome::Done
}

pub fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if flush_mode_ok(ctx, args) {
        ctx.engine().flush_all();
        write_simple(ctx.out, b"OK");
    }
    Outcome::Done
}

/// SWAPDB: the two databases trade contents for every client at once;
/// clients blocked on a key of either are served if it now has elements.
pub fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let index = |b: &[u8]| parse_i64(b).filter(|n| i32::try_from(*n).is_ok());
    let Some(a) = index(&args[1]) else {
        reply::error(ctx.out, "ERR invalid first DB index");
        return Outcome::Done;
    };
    let Some(b) = index(&args[2]) else {
        reply::error(ctx.out, "ERR invalid second DB index");
        return Outcome::Done;
    };
    let n = ctx.engine().databases() as i64;
    if !(0..n).contains(&a) || !(0..n).contains(&b) {
        reply::error(ctx.out, reply::DB_RANGE);
        return Outcome::Done;
    }
    let (a, b) = (a as usize, b as usize);
    match ctx.engine().swap_db(a, b) {
        Ok(()) => {
            let blocking = &ctx.shared.blocking;
            if a != b && blocking.any_waiting() {
                for d in [a, b] {
                    blocking.serve(&ctx.shared.engine, d, blocking.keys_waited_in(d));
                }
            }
            write_simple(ctx.out, b"OK");
        }
        Err(e) => reply::engine(ctx.out, &e),
    }
    Outcome::Done
}

pub fn time(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    write_array_len(ctx.out, 2);
    write_bulk(ctx.out, d.as_secs().to_string().as_bytes());
    write_bulk(ctx.out, d.subsec_micros().to_string().as_bytes());
    Outcome::Done
}

/// LASTSAVE: the last completed checkpoint, or the start of the server.
pub fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let last = ctx.engine().persist_info().last_checkpoint_ms / 1000;
    let started = strata_engine::clock::now_ms() / 1000 - ctx.shared.started.elapsed().as_secs();
    write_integer(ctx.out, last.max(started) as i64);
    Outcome::Done
}

/// SAVE: a checkpoint now; the reply waits for it (other clients go on).
pub fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let engine = ctx.engine().clone();
    Outcome::Pending {
        reply: Box::pin(async move {
            let mut out = BytesMut::new();
            match tokio::task::spawn_blocking(move || engine.save()).await {
                Ok(Ok(_)) => write_simple(&mut out, b"OK"),
                Ok(Err(e)) if e.contains("in progress") => {
                    reply::error(&mut out, reply::BGSAVE_RUNNING)
                }
                Ok(Err(e)) => reply::error(&mut out, &format!("ERR {e}")),
                Err(e) => reply::error(&mut out, &format!("ERR {e}")),
            }
            out
        }),
        write: true,
    }
}

/// `BGSAVE [SCHEDULE]`
pub fn bgsave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 2 || (args.len() == 2 && !is(&args[1], "schedule")) {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    match ctx.engine().bgsave() {
        Ok(()) => write_simple(ctx.out, b"Background saving started"),
        Err(e) if e.contains("in progress") => {
            if args.len() == 2 {
                write_simple(ctx.out, b"Background saving scheduled")
            } else {
                reply::error(ctx.out, reply::BGSAVE_RUNNING)
            }
        }
        Err(e) => reply::error(ctx.out, &format!("ERR {e}")),
    }
    Outcome::Done
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: stop accepting, let
/// in-flight commands finish, drain and sync the log, checkpoint (unless
/// NOSAVE) and exit. No reply on success, as Redis.
pub fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut save = strata_engine::ShutdownSave::Save;
    for a in &args[1..] {
        if is(a, "nosave") {
            save = strata_engine::ShutdownSave::NoSave;
        } else if is(a, "save") || is(a, "now") || is(a, "force") {
        } else if is(a, "abort") {
            reply::error(ctx.out, "ERR No shutdown in progress.");
            return Outcome::Done;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    }
    ctx.shared.request_shutdown(save);
    Outcome::Close
}

pub fn memory(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    if is(sub, "usage") {
        if args.len() != 3 && !(args.len() == 5 && is(&args[3], "samples")) {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
        match ctx.engine().key_info(ctx.db(), &args[2]) {
            Some(i) => write_integer(ctx.out, i.ram_bytes as i64),
            None => write_null(ctx.out, ctx.version()),
        }
    } else if is(sub, "help") {
        help(ctx.out, "MEMORY", &["USAGE <key> [SAMPLES <count>]"]);
    } else {
        reply::unknown_subcommand(ctx.out, sub, "memory");
    }
    Outcome::Done
}

pub fn object(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    if is(sub, "help") {
        help(
            ctx.out,
            "OBJECT",
            &[
                "ENCODING <key>",
                "FREQ <key>",
                "IDLETIME <key>",
                "REFCOUNT <key>",
            ],
        );
        return Outcome::Done;
    }
    if args.len() != 3 {
        reply::unknown_subcommand(ctx.out, sub, "object");
        return Outcome::Done;
    }
    let Some(info) = ctx.engine().key_info(ctx.db(), &args[2]) else {
        write_null(ctx.out, ctx.version());
        return Outcome::Done;
    };
    if is(sub, "encoding") {
        write_bulk(ctx.out, encoding_name(&info).as_bytes());
    } else if is(sub, "idletime") {
        write_integer(ctx.out, info.idle_secs as i64);
    } else if is(sub, "refcount") {
        write_integer(ctx.out, 1);
    } else if is(sub, "freq") {
        reply::error(ctx.out, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    } else {
        reply::unknown_subcommand(ctx.out, sub, "object");
    }
    Outcome::Done
}

/// The encoding Redis 7.0 would report for the value (its thresholds are
/// the `*-max-listpack-*` / `set-max-intset-entries` directives).
fn encoding_name(info: &strata_engine::KeyInfo) -> &'static str {
    use strata_engine::ValueType;
    match info.vtype {
        ValueType::String => match &info.hot_value {
            _ if info.raw_string => "raw",
            Some(v) if !info.float_string && super::parse_i64(v).is_some() => "int",
            _ if info.value_len <= 44 => "embstr",
            _ => "raw",
        },
        ValueType::List => "quicklist",
        ValueType::Hash if info.big_encoding => "hashtable",
        ValueType::Hash => "listpack",
        ValueType::Set if info.big_encoding => "hashtable",
        ValueType::Set => "intset",
        ValueType::ZSet if info.big_encoding => "skiplist",
        ValueType::ZSet => "listpack",
    }
}

pub fn slowlog(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let log = &ctx.shared.slowlog;
    if is(sub, "len") {
        write_integer(ctx.out, log.len() as i64);
    } else if is(sub, "reset") {
        log.reset();
        write_simple(ctx.out, b"OK");
    } else if is(sub, "get") {
        let n = match args.get(2).map(|a| parse_i64(a)) {
            None => 10,
            Some(Some(-1)) => usize::MAX,
            Some(Some(n)) if n >= 0 => n as usize,
            _ => {
                reply::error(ctx.out, "ERR count should be greater than or equal to -1");
                return Outcome::Done;
            }
        };
        let out = &mut *ctx.out;
        log.with_entries(n, |entries| {
            let list: Vec<_> = entries.collect();
            write_array_len(out, list.len());
            for e in list {
                write_array_len(out, 6);
                write_integer(out, e.id as i64);
                write_integer(out, e.unix_secs as i64);
                write_integer(out, e.micros as i64);
                write_array_len(out, e.args.len());
                for a in &e.args {
                    write_bulk(out, a);
                }
                write_bulk(out, e.addr.as_bytes());
                write_bulk(out, e.name.as_bytes());
            }
        });
    } else if is(sub, "help") {
        help(ctx.out, "SLOWLOG", &["GET [<count>]", "LEN", "RESET"]);
    } else {
        reply::unknown_subcommand(ctx.out, sub, "slowlog");
    }
    Outcome::Done
}

/// DEBUG TIER `<key>`: where the value lives. DEBUG SLEEP `<seconds>` is not
/// offered (it would block a worker thread).
pub fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    if is(sub, "tier") && args.len() == 3 {
        let Some(info) = ctx.engine().key_info(ctx.db(), &args[2]) else {
            reply::error(ctx.out, reply::NO_SUCH_KEY);
            return Outcome::Done;
        };
        let text = match info.location {
            Location::Ram => format!("tier:ram value_len:{}", info.value_len),
            Location::RamAndFlash(l) => format!(
                "tier:ram+flash value_len:{} segment:{} offset:{} record_len:{}",
                info.value_len, l.segment, l.offset, l.len
            ),
            Location::Flash(l) => format!(
                "tier:flash value_len:{} segment:{} offset:{} record_len:{}",
                info.value_len, l.segment, l.offset, l.len
            ),
        };
        // The memcached view of the item (database 0 is shared with the
        // memcached port).
        let text = if info.vtype == strata_engine::ValueType::String {
            format!("{text} client_flags:{} cas:{}", info.client_flags, info.cas)
        } else {
            format!(
                "{text} type:{} elements:{} encoding:{}",
                info.vtype.name(),
                info.elements,
                encoding_name(&info)
            )
        };
        write_simple(ctx.out, text.as_bytes());
    } else if is(sub, "help") {
        help(
            ctx.out,
            "DEBUG",
            &["TIER <key>  -- where the value lives: ram, ram+flash or flash"],
        );
    } else {
        reply::unknown_subcommand(ctx.out, sub, "debug");
    }
    Outcome::Done
}

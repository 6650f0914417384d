//! Server commands, in rooms: `connection` (PING ECHO HELLO AUTH SELECT
//! QUIT RESET), `databases` (DBSIZE FLUSHDB FLUSHALL SWAPDB LASTSAVE SAVE
//! BGSAVE SHUTDOWN), `transactions` (MULTI EXEC DISCARD WATCH UNWATCH),
//! `client` (CLIENT), `config` (CONFIG); here: COMMAND INFO TIME MEMORY
//! OBJECT SLOWLOG DEBUG.

pub mod client;
pub mod config;
mod connection;
mod databases;
mod transactions;

pub use connection::*;
pub use databases::*;
pub use transactions::*;

use crate::command::{Ctx, Outcome};
use crate::commands::table::COMMANDS;
use crate::commands::{is, parse_i64};
use crate::reply;
use bytes::Bytes;
use strata_engine::Location;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, write_set_len,
    write_simple, write_verbatim, Version,
};

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

pub fn time(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    write_array_len(ctx.out, 2);
    write_bulk(ctx.out, d.as_secs().to_string().as_bytes());
    write_bulk(ctx.out, d.subsec_micros().to_string().as_bytes());
    Outcome::Done
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
            Location::Chunked { parts, in_ram } => format!(
                "tier:chunked value_len:{} chunks:{parts} chunks_in_ram:{in_ram}",
                info.value_len
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
    } else if is(sub, "live-bytes") && args.len() == 2 {
        // Segments whose live-byte count differs from the records the
        // index points at: "segment counted pointed" per line (empty when
        // the accounting is right; meaningful when the server is idle).
        let bad = ctx.engine().audit_live_bytes();
        let text: Vec<String> = bad.iter().map(|(s, c, p)| format!("{s} {c} {p}")).collect();
        write_bulk(ctx.out, text.join("\n").as_bytes());
    } else if is(sub, "help") {
        help(
            ctx.out,
            "DEBUG",
            &[
                "TIER <key>  -- where the value lives: ram, ram+flash or flash",
                "LIVE-BYTES  -- segments whose live bytes differ from what the index points at",
            ],
        );
    } else {
        reply::unknown_subcommand(ctx.out, sub, "debug");
    }
    Outcome::Done
}

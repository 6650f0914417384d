//! Server commands, in rooms: `connection` (PING ECHO HELLO AUTH SELECT
//! QUIT RESET), `databases` (DBSIZE FLUSHDB FLUSHALL SWAPDB LASTSAVE SAVE
//! BGSAVE SHUTDOWN), `transactions` (MULTI EXEC DISCARD WATCH UNWATCH),
//! `client` (CLIENT), `config` (CONFIG), `debug` (DEBUG), `acl` (ACL,
//! CLUSTER); here: COMMAND
//! INFO TIME MEMORY OBJECT SLOWLOG.

mod acl;
pub mod client;
mod command;
pub mod config;
mod connection;
mod databases;
mod debug;
pub mod info;
mod latency;
mod transactions;

pub use acl::{acl, cluster};
pub use command::command;
pub use connection::*;
pub use databases::*;
pub use debug::debug;
pub use latency::*;
pub use transactions::*;

use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::registry::flags::*;
use crate::registry::Role;
use bytes::Bytes;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, write_simple,
    write_verbatim,
};

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
    let text = crate::commands::server::info::render(ctx.server(), &sections);
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
    } else if is(sub, "stats") && args.len() == 2 {
        memory_stats(ctx);
    } else if is(sub, "doctor") && args.len() == 2 {
        let text = memory_doctor(ctx);
        write_verbatim(ctx.out, ctx.version(), b"txt", text.as_bytes());
    } else if is(sub, "help") {
        help(
            ctx.out,
            "MEMORY",
            &["DOCTOR", "STATS", "USAGE <key> [SAMPLES <count>]"],
        );
    } else {
        reply::unknown_subcommand(ctx.out, sub, "memory");
    }
    Outcome::Done
}

/// The memory figures MEMORY STATS and DOCTOR read (all measured: the
/// allocator's counters, the RSS, the engine's index and RAM values).
struct Memory {
    peak: u64,
    total: u64,
    startup: u64,
    dataset: u64,
    keys: u64,
    rss: u64,
}

fn memory_figures(ctx: &Ctx<'_>) -> Memory {
    let s = ctx.server();
    let total = crate::base::alloc::allocated_bytes().unwrap_or_else(|| s.engine.ram_used());
    let t = s.engine.tiered_info();
    let dbs = s.config.read().databases;
    Memory {
        peak: crate::base::alloc::peak_bytes().unwrap_or(total),
        total,
        startup: s.startup_allocated,
        dataset: t.index_bytes + t.hot_bytes,
        keys: (0..dbs).map(|d| s.engine.dbsize(d)).sum(),
        rss: crate::base::alloc::rss_bytes(),
    }
}

/// MEMORY STATS: the fields Redis reports that Strata measures.
fn memory_stats(ctx: &mut Ctx<'_>) {
    let m = memory_figures(ctx);
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let ints: [(&str, u64); 5] = [
        ("peak.allocated", m.peak),
        ("total.allocated", m.total),
        ("startup.allocated", m.startup),
        ("keys.count", m.keys),
        ("dataset.bytes", m.dataset),
    ];
    let v = ctx.version();
    write_map_len(ctx.out, v, ints.len() + 6);
    for (k, n) in ints {
        write_bulk(ctx.out, k.as_bytes());
        write_integer(ctx.out, n as i64);
    }
    let per_key = m.total.saturating_sub(m.startup) / m.keys.max(1);
    write_bulk(ctx.out, b"keys.bytes-per-key");
    write_integer(ctx.out, if m.keys == 0 { 0 } else { per_key as i64 });
    let doubles = [
        (
            "dataset.percentage",
            100.0 * ratio(m.dataset, m.total.saturating_sub(m.startup)),
        ),
        ("peak.percentage", 100.0 * ratio(m.total, m.peak)),
        ("fragmentation", ratio(m.rss, m.total)),
    ];
    for (k, x) in doubles {
        write_bulk(ctx.out, k.as_bytes());
        strata_protocol::write_double(ctx.out, v, x);
    }
    write_bulk(ctx.out, b"fragmentation.bytes");
    write_integer(ctx.out, m.rss as i64 - m.total as i64);
    write_bulk(ctx.out, b"rss.bytes");
    write_integer(ctx.out, m.rss as i64);
}

/// MEMORY DOCTOR, with Redis's words for the conditions Strata measures.
fn memory_doctor(ctx: &Ctx<'_>) -> String {
    let m = memory_figures(ctx);
    if m.total < 5 << 20 {
        return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".into();
    }
    let mut issues = Vec::new();
    if m.peak as f64 > m.total as f64 * 1.5 {
        issues.push(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n");
    }
    if m.rss as f64 > m.total as f64 * 1.4 && m.rss - m.total > 10 << 20 {
        issues.push(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc.\n\n");
    }
    if issues.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".into();
    }
    let mut s =
        "Sam, I detected a few issues in this Redis instance memory implants:\n\n".to_string();
    for i in issues {
        s.push_str(i);
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
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
    let info = ctx.engine().key_info(ctx.db(), &args[2]);
    ctx.engine().count_lookup(info.is_some());
    let Some(info) = info else {
        write_null(ctx.out, ctx.version());
        return Outcome::Done;
    };
    let lfu = ctx.config().maxmemory_policy.lfu();
    if is(sub, "encoding") {
        write_bulk(ctx.out, encoding_name(&info).as_bytes());
    } else if is(sub, "idletime") {
        if lfu {
            reply::error(ctx.out, "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
        } else {
            write_integer(ctx.out, info.idle_secs as i64);
        }
    } else if is(sub, "refcount") {
        // Redis shares one object for each integer 0..9999 (unless an LRU
        // policy under maxmemory needs per-key access times), whose
        // refcount reads INT_MAX; every other value has its own.
        let shareable = {
            let c = ctx.config();
            c.maxmemory == 0 || !c.maxmemory_policy.tracks_access()
        };
        let shared_int = shareable
            && encoding_name(&info) == "int"
            && info
                .hot_value
                .as_deref()
                .and_then(parse_i64)
                .is_some_and(|v| (0..10_000).contains(&v));
        write_integer(ctx.out, if shared_int { i32::MAX as i64 } else { 1 });
    } else if is(sub, "freq") {
        if lfu {
            write_integer(ctx.out, info.lfu_freq as i64);
        } else {
            reply::error(ctx.out, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
        }
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
        ValueType::Stream => "stream",
    }
}

pub fn slowlog(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let log = &ctx.server().slowlog;
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

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("ping", -1, FAST, K0, "connection", "Returns the server's liveliness response.", ping).role(Role::Ping),
    cmd("echo", 2, &["loading", "stale", "fast"], K0, "connection", "Returns the given string.", echo),
    cmd("hello", -1, AUTHLESS, K0, "connection", "Handshakes with the Redis server.", hello),
    cmd("auth", -2, AUTHLESS, K0, "connection", "Authenticates the connection.", auth),
    cmd("select", 2, &["loading", "stale", "fast"], K0, "connection", "Changes the selected database.", select),
    cmd("quit", -1, AUTHLESS, K0, "connection", "Closes the connection.", quit).role(Role::Session),
    cmd("reset", 1, AUTHLESS, K0, "connection", "Resets the connection.", reset).role(Role::Session),
    cmd("multi", 1, TXN, K0, "transactions", "Starts a transaction.", multi).role(Role::Transaction),
    cmd("exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], K0, "transactions", "Executes all commands in a transaction.", exec).role(Role::Exec),
    cmd("discard", 1, TXN, K0, "transactions", "Discards a transaction.", discard).role(Role::Transaction),
    cmd("watch", -2, TXN, KALL, "transactions", "Monitors changes to keys to determine the execution of a transaction.", watch).role(Role::Transaction),
    cmd("unwatch", 1, TXN, K0, "transactions", "Forgets about watched keys of a transaction.", unwatch),
    cmd("client", -2, CONN, K0, "connection", "A container for client connection commands.", client::client).role(Role::Client),
    cmd("acl", -2, &["noscript", "loading", "stale"], K0, "server", "A container for Access List Control commands.", acl),
    cmd("cluster", -2, &[], K0, "cluster", "A container for Redis Cluster commands (cluster support is disabled here).", cluster),
    cmd("command", -1, &["loading", "stale"], K0, "server", "Returns detailed information about all commands.", command),
    cmd("config", -2, ADMIN, K0, "server", "A container for server configuration commands.", config::config),
    cmd("info", -1, &["loading", "stale"], K0, "server", "Returns information and statistics about the server.", info),
    cmd("dbsize", 1, RF, K0, "server", "Returns the number of keys in the database.", dbsize),
    cmd("flushdb", -1, &["write"], K0, "server", "Removes all keys from the current database.", flushdb),
    cmd("flushall", -1, &["write"], K0, "server", "Removes all keys from all databases.", flushall),
    cmd("swapdb", 3, WD, K0, "server", "Swaps two Redis databases.", swapdb),
    cmd("time", 1, &["loading", "stale", "fast"], K0, "server", "Returns the server time.", time),
    cmd("memory", -2, R, K0, "server", "A container for memory diagnostics commands.", memory),
    cmd("object", -2, R, K0, "generic", "A container for object introspection commands.", object),
    cmd("slowlog", -2, ADMIN, K0, "server", "A container for slow log commands.", slowlog),
    cmd("latency", -2, ADMIN, K0, "server", "A container for latency diagnostics commands.", latency),
    cmd("wait", 3, &["noscript"], K0, "generic", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", wait),
    cmd("debug", -2, ADMIN, K0, "server", "A container for debugging commands (DEBUG TIER key says where a value lives).", debug).role(Role::Debug),
    cmd("lastsave", 1, &["loading", "stale", "fast"], K0, "server", "Returns the Unix timestamp of the last successful save to disk.", lastsave),
    cmd("monitor", 1, ADMIN, K0, "server", "Listens for all requests received by the server in real-time.", monitor),
    cmd("save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], K0, "server", "Synchronously writes an index checkpoint (and, with appendonly no, RAM-only values) to disk.", save),
    cmd("bgrewriteaof", 1, &["admin", "noscript", "no_async_loading"], K0, "server", "Asynchronously rewrites the append-only file to disk.", bgrewriteaof),
    cmd("bgsave", -1, &["admin", "noscript", "no_async_loading"], K0, "server", "Writes an index checkpoint in the background.", bgsave),
    cmd("shutdown", -1, &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], K0, "server", "Synchronously saves and shuts down the server.", shutdown),
];

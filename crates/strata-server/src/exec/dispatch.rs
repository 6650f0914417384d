//! Dispatch: runs one command of a connection — the checks every command
//! passes (`GATES`), the handler its family registered (`commands::handler`), and the slow
//! log.

use crate::base::reply;
use crate::command::ConnState;
use crate::command::Shared;
use crate::command::{Ctx, Outcome};
use crate::registry::{CommandSpec, Flags};
use crate::services::acl::LogContext;
use crate::services::notify;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// A check before a known command runs: false when it answered the
/// command (a refusal, counted as rejected).
pub type Gate =
    fn(&Arc<Shared>, &mut ConnState, &'static CommandSpec, &[Bytes], &mut BytesMut) -> bool;

/// The checks of every dispatched command, in Redis's order
/// (`processCommand`: an unknown command is answered before them, then
/// NOAUTH, arity, a container's subcommand, ACL). The connection's own
/// checks (`connection::gates`) ran before.
pub const GATES: &[Gate] = &[authenticated, arity, subcommand, acl];

/// NOAUTH: before AUTH, only `no_auth` commands.
fn authenticated(
    shared: &Arc<Shared>,
    conn: &mut ConnState,
    spec: &'static CommandSpec,
    _: &[Bytes],
    out: &mut BytesMut,
) -> bool {
    if conn.authenticated || spec.has(Flags::NO_AUTH) {
        return true;
    }
    shared.cmdstats.rejected(spec);
    reply::error(out, reply::NOAUTH);
    false
}

/// The arity of the table.
fn arity(
    shared: &Arc<Shared>,
    _: &mut ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
    out: &mut BytesMut,
) -> bool {
    if spec.arity_ok(args.len()) {
        return true;
    }
    shared.cmdstats.rejected(spec);
    reply::arity(out, spec.name);
    false
}

/// A container's subcommand: known, with its arity.
fn subcommand(
    shared: &Arc<Shared>,
    _: &mut ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
    out: &mut BytesMut,
) -> bool {
    if crate::registry::describe::check_subcommand_arity(spec.name, args, out) {
        return true;
    }
    shared.cmdstats.rejected(spec);
    false
}

/// The ACL user's permissions (denials logged, as Redis's ACL LOG).
fn acl(
    shared: &Arc<Shared>,
    conn: &mut ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
    out: &mut BytesMut,
) -> bool {
    acl_allows(shared, conn, spec, args, out, LogContext::Toplevel)
}

/// Runs one command: the gates, the handler, and the slow log.
pub fn execute(
    shared: &Arc<Shared>,
    conn: &mut ConnState,
    spec: Option<&'static CommandSpec>,
    args: &[Bytes],
    target: &mut BytesMut,
) -> Outcome {
    shared.stats.commands_processed.add(1);
    let Some(spec) = spec else {
        reply::unknown_command(target, args);
        shared.stats.unknown_commands.fetch_add(1, Relaxed);
        return Outcome::Done;
    };
    if !GATES
        .iter()
        .all(|gate| gate(shared, conn, spec, args, target))
    {
        return Outcome::Done;
    }
    let reply_at = target.len();
    // The TSC, not clock_gettime: two reads a command (~20 ns each).
    let started = quanta::Instant::now();
    let full = crate::registry::describe::full_name(spec.name, args);
    conn.handle.touch(full, started);
    let mut ctx = Ctx {
        shared,
        conn,
        out: target,
    };
    // Keyspace notifications name events after the command running.
    let running = shared
        .notifier
        .on()
        .then(|| notify::Command::new(args, ctx.conn.handle.id));
    // CLIENT CACHING's answer counts for the next command but CLIENT's.
    let caching = if spec.name == "client" {
        None
    } else {
        ctx.conn.caching.take()
    };
    // MONITOR: scripts and functions before the commands they run (as
    // Redis feeds them); every other command once it ran, but EXEC (after
    // its commands: `connection`) and admin commands (never).
    let before = matches!(
        spec.name,
        "eval" | "eval_ro" | "evalsha" | "evalsha_ro" | "fcall" | "fcall_ro"
    );
    if before && shared.monitors.active() {
        monitor_feed(shared, ctx.conn, args);
    }
    let outcome = {
        let _clock = strata_engine::clock::snapshot_at(started);
        let _running = running.clone().map(notify::Running::enter);
        // CLIENT NO-TOUCH: reads leave access times alone (TOUCH not).
        let _no_touch =
            (ctx.conn.no_touch && spec.name != "touch").then(strata_engine::NoTouch::enter);
        // A write's lookups count no keyspace hit or miss, as Redis's
        // lookupKeyWrite (its sources' lookups do, for a command that
        // reads them with lookupKeyRead).
        let _write_lookups = (spec.has(Flags::WRITE) && !reads_sources(spec.name))
            .then(strata_engine::WriteLookups::enter);
        (crate::commands::handler(spec))(&mut ctx, args)
    };
    let outcome = match (outcome, running) {
        (Outcome::Pending { reply, write }, Some(args)) => Outcome::Pending {
            reply: notify::wrap(args, reply),
            write,
        },
        (o, _) => o,
    };
    if !before && spec.name != "exec" && !spec.has(Flags::ADMIN) && shared.monitors.active() {
        monitor_feed(shared, ctx.conn, args);
    }
    // Client tracking remembers what a tracking client's reads read. A
    // read in a script remembers the script's declared keys for its caller
    // (whose id the script's client shares), and the read-only script
    // commands remember nothing by themselves, as in Redis 7.0's `call`.
    let script_command = matches!(spec.name, "eval_ro" | "evalsha_ro" | "fcall_ro");
    if shared.tracking.active() && spec.has(Flags::READONLY) && !script_command {
        let id = ctx.conn.handle.id;
        let keys = if ctx.conn.script {
            Some(ctx.conn.script_keys.clone())
        } else {
            crate::exec::transaction::command_keys(spec, args)
        };
        if let Some(keys) = keys {
            if !keys.is_empty() {
                shared.tracking.remember(&shared.pubsub, id, &keys, caching);
            }
        }
    }
    let took = started.elapsed();
    let failed = matches!(outcome, Outcome::Done) && ctx.out.get(reply_at) == Some(&b'-');
    if failed {
        shared.errorstats.record(&ctx.out[reply_at..]);
    }
    shared.cmdstats.record(spec, took, failed);
    let event = if spec.has(Flags::FAST) {
        "fast-command"
    } else {
        "command"
    };
    if !matches!(outcome, Outcome::Pending { .. }) {
        shared
            .latency
            .sample_if_needed(event, took.as_millis() as u64);
    }
    // A reply that comes later (a flash read, a blocked client served or
    // timed out) counts as an error, and the call as failed, when it comes;
    // and goes to the slowlog then, as Redis logs a blocked command when
    // it is served.
    let outcome = match outcome {
        Outcome::Pending { reply, write } => {
            let shared = shared.clone();
            let slow = shared
                .slowlog
                .enabled()
                .then(|| (args.to_vec(), ctx.conn.handle.clone()));
            Outcome::Pending {
                reply: Box::pin(async move {
                    let out = reply.await;
                    // A reply that came later counts from the call to it,
                    // unless the command blocked (Redis counts no wait).
                    let blocking = spec.has(Flags::BLOCKING);
                    let took = if blocking { took } else { started.elapsed() };
                    if !blocking {
                        shared
                            .latency
                            .sample_if_needed(event, took.as_millis() as u64);
                    }
                    if let Some((args, handle)) = slow {
                        shared.slowlog.record(took, &args, &handle);
                    }
                    if out.first() == Some(&b'-') {
                        shared.errorstats.record(&out);
                        shared.cmdstats.failed_later(spec);
                    }
                    out
                }),
                write,
            }
        }
        o => {
            shared.slowlog.record(took, args, &ctx.conn.handle);
            o
        }
    };
    outcome
}

/// Sends MONITOR clients the command `args` of `conn` (a script's calls
/// show as `lua`).
fn monitor_feed(shared: &Shared, conn: &ConnState, args: &[Bytes]) {
    let origin = if conn.script {
        "lua"
    } else {
        conn.handle.addr.as_str()
    };
    shared.monitors.feed(&shared.pubsub, conn.db, origin, args);
}

/// Whether the connection's ACL user may run the command; if not, logs
/// the refusal, writes Redis's error and counts the command rejected. (A
/// script's commands are checked where `redis.call` runs them, EXEC's
/// where EXEC runs them.)
pub fn acl_allows(
    shared: &Shared,
    conn: &ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
    target: &mut BytesMut,
    context: LogContext,
) -> bool {
    if conn.script || conn.exec_ready.is_some() {
        return true;
    }
    let Err(denied) = shared
        .acl
        .allows(&conn.user, &conn.handle, spec, args, context)
    else {
        return true;
    };
    shared.cmdstats.rejected(spec);
    let full = crate::registry::describe::full_name(spec.name, args);
    reply::error(target, &denied.error(full));
    false
}

/// Write commands whose source keys Redis looks up with `lookupKeyRead`,
/// counting keyspace hits and misses (their destination is not looked up,
/// or with `lookupKeyWrite`).
fn reads_sources(name: &str) -> bool {
    matches!(
        name,
        "sinterstore"
            | "sunionstore"
            | "sdiffstore"
            | "zunionstore"
            | "zinterstore"
            | "zdiffstore"
            | "zrangestore"
            | "sort"
            | "copy"
            | "georadius"
            | "georadiusbymember"
            | "geosearchstore"
            | "bitop"
            | "pfmerge"
    )
}

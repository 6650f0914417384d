//! Dispatch: runs one command that passed its gates (`gates`) — the
//! handler its family registered (`commands::handler`), the statistics,
//! the slow log, MONITOR's line and the keys a tracking client read.

use crate::command::ConnState;
use crate::command::Shared;
use crate::command::{Ctx, Outcome};
use crate::registry::{CommandSpec, Flags, Role};
use crate::services::notify;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;

/// Runs one command that passed its caller's gates (`gates` for a
/// client's; EXEC's and a script's make their own): the handler, the
/// statistics, the slow log, MONITOR and client tracking.
pub fn execute(
    shared: &Arc<Shared>,
    conn: &mut ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
    target: &mut BytesMut,
) -> Outcome {
    shared.stats.commands_processed.add(1);
    let reply_at = target.len();
    // The TSC, not clock_gettime: two reads a command (~20 ns each).
    let started = quanta::Instant::now();
    let full = crate::registry::describe::full_name(spec.name, args);
    conn.handle.touch(full, started);
    let mut ctx = Ctx::new(shared, conn, target);
    // Keyspace notifications name events after the command running.
    let running = shared
        .notifier
        .on()
        .then(|| notify::Command::new(args, ctx.conn.handle.id));
    // CLIENT CACHING's answer counts for the next command but CLIENT's.
    let caching = if spec.role == Role::Client {
        None
    } else {
        ctx.conn.caching.take()
    };
    // MONITOR: scripts and functions before the commands they run (as
    // Redis feeds them); every other command once it ran, but EXEC (after
    // its commands: `connection`) and admin commands (never).
    let before = spec.script_by().is_some();
    if before && shared.monitors.active() {
        monitor_feed(shared, ctx.conn, args);
    }
    let outcome = {
        let _clock = strata_engine::clock::snapshot_at(started);
        let _running = running.clone().map(notify::Running::enter);
        // CLIENT NO-TOUCH: reads leave access times alone (TOUCH not).
        let _no_touch =
            (ctx.conn.no_touch && spec.role != Role::Touch).then(strata_engine::NoTouch::enter);
        // A write's lookups count no keyspace hit or miss, as Redis's
        // lookupKeyWrite (its sources' lookups do, for a command that
        // reads them with lookupKeyRead).
        let _write_lookups = (spec.has(Flags::WRITE) && !spec.has(Flags::READS_SOURCES))
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
    if !before && spec.role != Role::Exec && !spec.has(Flags::ADMIN) && shared.monitors.active() {
        monitor_feed(shared, ctx.conn, args);
    }
    // Client tracking remembers what a tracking client's reads read. A
    // read in a script remembers the script's declared keys for its caller
    // (whose id the script's client shares), and the read-only script
    // commands remember nothing by themselves, as in Redis 7.0's `call`.
    let script_command = spec.script_by().is_some() && spec.has(Flags::READONLY);
    if shared.tracking.active() && spec.has(Flags::READONLY) && !script_command {
        let id = ctx.conn.handle.id;
        let keys = if ctx.conn.script {
            Some(ctx.conn.script_keys.clone())
        } else {
            crate::registry::keys::command_keys(spec, args)
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
    // What a write gave to store (a reply that comes later counts when it
    // comes, below).
    let wrote = spec.has(Flags::WRITE).then(|| written_bytes(args));
    if let (Some(n), Outcome::Done | Outcome::Close, false) = (wrote, &outcome, failed) {
        shared.stats.client_write_bytes.add(n);
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
                    } else if let Some(n) = wrote {
                        shared.stats.client_write_bytes.add(n);
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

/// The bytes a write command gave to store: its arguments after its name.
fn written_bytes(args: &[Bytes]) -> u64 {
    args.iter().skip(1).map(|a| a.len() as u64).sum()
}

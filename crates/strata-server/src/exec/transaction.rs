//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, as Redis 7.0.
//!
//! After MULTI a connection queues its commands (`queue`: each answers
//! `+QUEUED`, or its error, which makes EXEC fail with EXECABORT). EXEC
//! (`exec`) runs them as one step no other client can see half of:
//! 1. it brings the queued commands' cold keys into RAM first
//!    (`Engine::warm`), without holding anything, so other clients go on
//!    while it waits for flash;
//! 2. then, in one exclusive section (`Engine::exclusive`: every shard
//!    held), it checks the watched keys and runs the commands in order. A
//!    command that still needs flash there (a value demoted between the two
//!    steps, a part of a chunked collection) waits for its read inside the
//!    section, blocking this thread;
//! 3. blocked clients (BLPOP ...) that its pushes can serve are served after
//!    the section, as Redis serves them after EXEC; a blocking command
//!    inside EXEC does not block (it answers as on a timeout).
//!
//! The section holds the shards of the keys the commands and the watched
//! keys name (`registry::keys::command_keys`), so transactions over other shards go on; a
//! transaction with a command whose keys cannot be told from its arguments
//! (SORT with BY or GET, GEORADIUS with STORE) or that reads the whole
//! keyspace (SCAN, FLUSHDB, DBSIZE ...) holds every shard.
//!
//! SAVE and SHUTDOWN are refused while queueing (`no_multi`, as Redis
//! 7.0). DEBUG RELOAD waits for the checkpoint thread, which takes shards,
//! so it runs between sections: a transaction holding one is atomic in the
//! parts before and after it. Every other command runs in the section
//! (BGSAVE and BGREWRITEAOF start their checkpoint, which waits for the
//! section, and answer "scheduled", as Redis answers inside EXEC).

use crate::base::reply;
use crate::command::ConnState;
use crate::command::Shared;
use crate::command::{Deferred, Outcome};
use crate::exec::dispatch::execute;
use crate::registry::{CommandSpec, Flags, Role};
use crate::services::acl::LogContext;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use strata_protocol::{write_array_len, write_null_array, write_simple};

/// Commands that run at once inside MULTI rather than being queued.
fn runs_at_once(spec: &CommandSpec) -> bool {
    matches!(spec.role, Role::Exec | Role::Transaction | Role::Session)
}

/// Inside MULTI, queues a command that passed its gates (`gates`),
/// replying `+QUEUED`, and returns true; returns false for a command that
/// runs now (EXEC ...) or when no transaction is open.
pub fn queue(
    conn: &mut ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
    out: &mut BytesMut,
) -> bool {
    if conn.multi.is_none() {
        return false;
    }
    if runs_at_once(spec) {
        return false;
    }
    if let Some(multi) = conn.multi.as_mut() {
        multi.queued.push((spec, args.to_vec()));
    }
    write_simple(out, b"QUEUED");
    true
}

/// A command refused before it ran (OOM, LOADING, BUSY): inside MULTI
/// the transaction is marked failed; EXEC itself refused discards it and
/// answers `EXECABORT` with the reason, as Redis's `rejectCommand`.
/// Returns the error to reply.
pub fn refuse(conn: &mut ConnState, spec: Option<&CommandSpec>, err: &str) -> String {
    if conn.multi.is_none() {
        return err.to_string();
    }
    if spec.is_some_and(|s| s.role == Role::Exec) {
        conn.multi = None;
        conn.watched.clear();
        return format!("EXECABORT Transaction discarded because of: {err}");
    }
    if let Some(m) = conn.multi.as_mut() {
        m.failed = true;
    }
    err.to_string()
}

/// Whether the open transaction queued a write (EXEC then waits for the
/// log under `appendfsync always`).
pub fn has_writes(conn: &ConnState) -> bool {
    conn.multi
        .as_ref()
        .is_some_and(|m| m.queued.iter().any(|(s, _)| s.has(Flags::WRITE)))
}

/// Whether EXEC is subject to the memory limit: the open transaction
/// queued a command that is (`denyoom`, as Redis's `mstate.cmd_flags`).
pub fn has_denyoom(conn: &ConnState) -> bool {
    conn.multi
        .as_ref()
        .is_some_and(|m| m.queued.iter().any(|(s, _)| s.has(Flags::DENYOOM)))
}

/// Whether the queued commands write or may propagate (EXEC waits under
/// CLIENT PAUSE WRITE then, as Redis's `is_may_replicate_command`).
pub fn has_write(conn: &ConnState) -> bool {
    conn.multi.as_ref().is_some_and(|m| {
        m.queued
            .iter()
            .any(|(s, _)| s.has(Flags::WRITE) || s.has(Flags::MAY_REPLICATE))
    })
}

/// EXEC: runs the queued commands (module doc) and writes the reply.
pub async fn exec(shared: &Arc<Shared>, conn: &mut ConnState, out: &mut BytesMut) {
    let Some(multi) = conn.multi.take() else {
        reply::error(out, crate::base::reply::EXEC_WITHOUT_MULTI);
        return;
    };
    if multi.failed {
        conn.watched.clear();
        reply::error(
            out,
            "EXECABORT Transaction discarded because of previous errors.",
        );
        return;
    }
    warm(shared, conn, &multi.queued).await;
    let mut body = BytesMut::new();
    // The client's hard output limit, held while the reply is built (as
    // Redis stops adding replies at it): past it the commands still run,
    // their replies are dropped and the client is closed.
    let class = if conn.handle.is_pubsub() {
        crate::services::clients::buffers::Class::PubSub
    } else {
        crate::services::clients::buffers::Class::Normal
    };
    let cap = shared.out_limits.hard(class) as usize;
    let mut overflow = false;
    let mut first = true;
    let mut rest = &multi.queued[..];
    let ready: Deferred = Default::default();
    conn.exec_ready = Some(ready.clone());
    while !rest.is_empty() || first {
        let n = rest
            .iter()
            .position(|(s, a)| between_sections(s, a))
            .unwrap_or(rest.len());
        let (now, later) = rest.split_at(n);
        let section =
            |conn: &mut ConnState, body: &mut BytesMut, first: &mut bool, overflow: &mut bool| {
                // One instant for every command (Redis's fixed_time_expire):
                // no key expires half-way through the transaction.
                let _clock = strata_engine::clock::freeze();
                if std::mem::take(first) && conn.watched.changed() {
                    return true;
                }
                for (spec, args) in now {
                    run_one(shared, conn, spec, args, body);
                    if cap > 0 && body.len() >= cap {
                        body.clear();
                        *overflow = true;
                    }
                }
                false
            };
        // Only the shards of the keys it names when every command's keys
        // are known (module doc), else all of them.
        // (A long script inside gives this worker's other tasks to another
        // thread, as for EVAL: `scripting::Busy::check`.)
        let aborted = match section_keys(conn, now) {
            Some(keys) => shared.engine.exclusive_keys(&keys, || {
                section(conn, &mut body, &mut first, &mut overflow)
            }),
            None => shared
                .engine
                .exclusive(|| section(conn, &mut body, &mut first, &mut overflow)),
        };
        if aborted {
            conn.exec_ready = None;
            conn.watched.clear();
            write_null_array(out, conn.version);
            return;
        }
        // DEBUG RELOAD runs outside a section (module doc).
        if let Some(((spec, args), after)) = later.split_first() {
            let mut one = BytesMut::new();
            match execute(shared, conn, spec, args, &mut one) {
                Outcome::Pending { reply, .. } => one = reply.await,
                Outcome::Done | Outcome::Close | Outcome::Exec | Outcome::Eval => {}
            }
            body.extend_from_slice(&one);
            rest = after;
        } else {
            rest = later;
        }
    }
    conn.exec_ready = None;
    conn.watched.clear();
    if overflow || (cap > 0 && body.len() >= cap) {
        shared
            .stats
            .output_buffer_limit_disconnections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(
            "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
            conn.handle.list_line()
        );
        conn.handle.kill();
    } else {
        write_array_len(out, multi.queued.len());
        out.extend_from_slice(&body);
    }
    for (db, keys) in std::mem::take(&mut *ready.lock()) {
        shared.blocking.serve(&shared.engine, db, keys);
    }
}

/// Whether a queued command waits for a background thread that takes
/// shards (module doc): it runs between sections.
fn between_sections(spec: &CommandSpec, args: &[Bytes]) -> bool {
    spec.role == Role::Debug
        && args
            .get(1)
            .is_some_and(|s| crate::commands::is(s, "reload") || crate::commands::is(s, "loadaof"))
}

/// Runs one queued command inside the section, its reply appended to
/// `body`. A reply that waits for flash is waited for here (module doc).
fn run_one(
    shared: &Arc<Shared>,
    conn: &mut ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
    body: &mut BytesMut,
) {
    // ACL rules may have changed since the command was queued.
    if let Err(denied) = shared
        .acl
        .allows(&conn.user, &conn.handle, spec, args, LogContext::Multi)
    {
        return reply::error(body, &denied.exec_error());
    }
    let mut one = BytesMut::new();
    match execute(shared, conn, spec, args, &mut one) {
        Outcome::Pending { reply, .. } => one = futures::executor::block_on(reply),
        Outcome::Eval => crate::exec::scripting::eval_now(shared, conn, spec, args, &mut one),
        Outcome::Done | Outcome::Close | Outcome::Exec => {}
    }
    body.extend_from_slice(&one);
}

/// The keys a section running `cmds` (and checking the watched keys)
/// touches, or None when a command may touch keys it does not name or the
/// whole keyspace (SORT ... BY, FLUSHDB, SCAN ...): that section holds
/// every shard.
fn section_keys(
    conn: &ConnState,
    cmds: &[(&'static CommandSpec, Vec<Bytes>)],
) -> Option<Vec<Bytes>> {
    let mut keys = conn.watched.keys();
    for (spec, args) in cmds {
        keys.extend(crate::registry::keys::command_keys(spec, args)?);
    }
    Some(keys)
}

/// Brings the cold keys the queued commands name into RAM (the key
/// positions of their table entries), in the database each runs in as far
/// as SELECT inside the transaction can be told from here: the current one.
async fn warm(
    shared: &Arc<Shared>,
    conn: &ConnState,
    queued: &[(&'static CommandSpec, Vec<Bytes>)],
) {
    let mut keys = Vec::new();
    for (spec, args) in queued {
        keys.extend(
            crate::registry::keys::command_keys(spec, args)
                .unwrap_or_else(|| crate::registry::keys::spec_keys(spec, args)),
        );
    }
    crate::command::warm(&shared.engine, conn.db, keys).await;
}

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
//! Commands flagged `admin` (SAVE, SHUTDOWN, CONFIG, DEBUG ...) wait for
//! background threads that take shards, so they run between sections: a
//! transaction holding one is atomic in the parts before and after it.

use crate::command::{CommandSpec, Deferred, Outcome};
use crate::connection::ConnState;
use crate::dispatch::execute;
use crate::reply;
use crate::Shared;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use strata_protocol::{write_array_len, write_null_array, write_simple};

/// A transaction being queued (MULTI ... EXEC).
#[derive(Default)]
pub struct Multi {
    queued: Vec<(&'static CommandSpec, Vec<Bytes>)>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    failed: bool,
}

/// Commands that run at once inside MULTI rather than being queued.
fn runs_at_once(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Inside MULTI, queues the command (replying `+QUEUED` or its error) and
/// returns true; returns false for a command that runs now (EXEC ...) or
/// when no transaction is open.
pub fn queue(
    conn: &mut ConnState,
    spec: Option<&'static CommandSpec>,
    args: &[Bytes],
    out: &mut BytesMut,
) -> bool {
    let Some(multi) = conn.multi.as_mut() else {
        return false;
    };
    let Some(spec) = spec else {
        reply::unknown_command(out, args);
        multi.failed = true;
        return true;
    };
    if runs_at_once(spec.name) {
        return false;
    }
    if !conn.authenticated && !matches!(spec.name, "auth" | "hello") {
        reply::error(out, reply::NOAUTH);
        multi.failed = true;
        return true;
    }
    if !spec.arity_ok(args.len()) {
        reply::arity(out, spec.name);
        multi.failed = true;
        return true;
    }
    multi.queued.push((spec, args.to_vec()));
    write_simple(out, b"QUEUED");
    true
}

/// Marks the open transaction failed (a refusal while queueing: OOM ...).
pub fn fail(conn: &mut ConnState) {
    if let Some(m) = conn.multi.as_mut() {
        m.failed = true;
    }
}

/// Whether the open transaction queued a write (EXEC then waits for the
/// log under `appendfsync always`).
pub fn has_writes(conn: &ConnState) -> bool {
    conn.multi
        .as_ref()
        .is_some_and(|m| m.queued.iter().any(|(s, _)| s.has_flag("write")))
}

/// EXEC: runs the queued commands (module doc) and writes the reply.
pub async fn exec(shared: &Arc<Shared>, conn: &mut ConnState, out: &mut BytesMut) {
    let Some(multi) = conn.multi.take() else {
        reply::error(out, "ERR EXEC without MULTI");
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
    let mut first = true;
    let mut rest = &multi.queued[..];
    let ready: Deferred = Default::default();
    conn.exec_ready = Some(ready.clone());
    while !rest.is_empty() || first {
        let n = rest
            .iter()
            .position(|(s, _)| s.has_flag("admin"))
            .unwrap_or(rest.len());
        let (now, later) = rest.split_at(n);
        let aborted = shared.engine.exclusive(|| {
            if std::mem::take(&mut first) && conn.watched.changed() {
                return true;
            }
            for (spec, args) in now {
                run_one(shared, conn, spec, args, &mut body);
            }
            false
        });
        if aborted {
            conn.exec_ready = None;
            conn.watched.clear();
            write_null_array(out, conn.version);
            return;
        }
        // An admin command runs outside a section (module doc).
        if let Some(((spec, args), after)) = later.split_first() {
            let mut one = BytesMut::new();
            match execute(shared, conn, Some(spec), args, &mut one) {
                Outcome::Pending { reply, .. } => one = reply.await,
                Outcome::Done | Outcome::Close | Outcome::Exec => {}
            }
            body.extend_from_slice(&one);
            rest = after;
        } else {
            rest = later;
        }
    }
    conn.exec_ready = None;
    conn.watched.clear();
    write_array_len(out, multi.queued.len());
    out.extend_from_slice(&body);
    for (db, keys) in std::mem::take(&mut *ready.lock()) {
        shared.blocking.serve(&shared.engine, db, keys);
    }
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
    let mut one = BytesMut::new();
    match execute(shared, conn, Some(spec), args, &mut one) {
        Outcome::Pending { reply, .. } => one = futures::executor::block_on(reply),
        Outcome::Done | Outcome::Close | Outcome::Exec => {}
    }
    body.extend_from_slice(&one);
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
        let (first, last, step) = spec.keys;
        if first <= 0 || step <= 0 {
            continue;
        }
        let last = if last < 0 {
            args.len() as i32 + last
        } else {
            last
        };
        let mut i = first;
        while i <= last && (i as usize) < args.len() {
            keys.push(args[i as usize].clone());
            i += step;
        }
    }
    if keys.is_empty() {
        return;
    }
    if let strata_engine::Read::Pending(f) = shared.engine.warm(conn.db, keys) {
        // A failed read shows in the command that needs the key.
        let _ = f.await;
    }
}

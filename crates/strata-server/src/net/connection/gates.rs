//! The checks a connection makes before a command runs, one function
//! each, run in order by `check`. A new check (MOVED/ASK, READONLY on a
//! replica) is one function here and one line in `check`.
//!
//! The order, and Redis's (`processCommand`): Redis answers an unknown
//! command, a wrong arity, NOAUTH and an ACL denial first; those are
//! `dispatch::GATES`, which run after these, when the command is
//! dispatched (a command refused here is never looked at by them). Then
//! Redis's order is OOM (and MISCONF), NOREPLICAS, RESP2's subscriber
//! context, LOADING, BUSY, CLIENT PAUSE, MULTI's queue; here LOADING comes
//! first (a server still loading refuses before it admits anything), and
//! the subscriber context and MULTI's queue come after the pause and the
//! busy script (`serve`).
//!
//! Invariants:
//! 1. A refusal is the command's reply, in its place among the pipeline's
//!    replies (at once, or after the pending ones), and counts as a
//!    processed command; inside MULTI it fails the transaction (EXEC's
//!    refusal discards it), as `transaction::refuse` says.
//! 2. A gate that waits (admission, CLIENT PAUSE, a busy script) first
//!    lets the replies before it go out, so its client is never left
//!    without answers it is owed while it waits.

use super::backlog::Backlog;
use super::output::{drain, durable, flush};
use super::refusals::{admit, is_write, refuse_in_order};
use super::ReplyFuture;
use crate::base::reply;
use crate::command::ConnState;
use crate::command::Shared;
use crate::exec::transaction;
use crate::net::stream::Stream;
use crate::registry::{CommandSpec, Flags};
use crate::services::clients::buffers::BufGauge;
use bytes::{Bytes, BytesMut};
use futures::stream::FuturesOrdered;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// A command about to run, and what the gates may touch: its connection's
/// state and the way out for its replies.
pub(super) struct Turn<'a> {
    pub shared: &'a Arc<Shared>,
    pub conn: &'a mut ConnState,
    pub spec: Option<&'static CommandSpec>,
    pub args: &'a [Bytes],
    pub pending: &'a mut FuturesOrdered<ReplyFuture>,
    pub out: &'a mut BytesMut,
    pub stream: &'a mut Stream,
    pub backlog: &'a mut Backlog,
    /// A write ran in this batch (its reply waits for the log under
    /// `appendfsync always`).
    pub wrote: &'a mut bool,
    pub gauge: &'a mut BufGauge,
    pub inbuf: &'a BytesMut,
}

/// What the gates decided.
pub(super) enum Verdict {
    /// The command runs.
    Run,
    /// A gate answered it (a refusal): on to the next request.
    Answered,
    /// The connection must end.
    Close,
}

/// Runs the gates in order (module doc); the first that does not let the
/// command pass decides.
pub(super) async fn check(t: &mut Turn<'_>) -> Verdict {
    if loading(t) || memory(t).await || no_replicas(t) {
        return Verdict::Answered;
    }
    if !pause(t).await {
        return Verdict::Close;
    }
    if busy_script(t).await {
        return Verdict::Answered;
    }
    Verdict::Run
}

/// LOADING: while the data set loads, only commands flagged `loading`.
fn loading(t: &mut Turn<'_>) -> bool {
    if !t.shared.engine.is_loading() || t.spec.is_none_or(|s| s.has(Flags::LOADING)) {
        return false;
    }
    t.shared.stats.commands_processed.add(1);
    refuse_in_order(t.conn, t.spec, reply::LOADING, t.pending, t.out);
    true
}

/// OOM (or MISCONF): a `denyoom` command waits for room or is refused
/// (`refusals::admit`); any other command first lets `maxmemory`'s
/// policy evict, as Redis evicts before every command.
async fn memory(t: &mut Turn<'_>) -> bool {
    let args = t.args;
    let denyoom = match t.spec {
        Some(s) if s.name == "exec" => transaction::has_denyoom(t.conn),
        Some(s) => {
            (s.has(Flags::DENYOOM) || crate::registry::describe::sub_is_denyoom(s.name, args))
                && s.arity_ok(args.len())
        }
        None => false,
    };
    if !denyoom {
        if t.shared.engine.evict_to_limit() > 0 && t.pending.is_empty() {
            // A tracking client hears of an evicted key before the reply.
            if let Some(l) = t.conn.pubsub.as_mut() {
                while let Some(m) = l.try_next() {
                    m.write(t.out, t.conn.version);
                }
            }
        }
        return false;
    }
    t.gauge
        .set(&t.conn.handle, t.inbuf, t.out, t.backlog.sizes());
    let Some(refusal) = admit(t.shared, t.pending, t.out).await else {
        return false;
    };
    // `admit` drained the pending replies: order is kept.
    t.shared.stats.commands_processed.add(1);
    t.shared.stats.oom_rejections.fetch_add(1, Relaxed);
    if let Some(spec) = t.spec {
        t.shared.cmdstats.rejected(spec);
    }
    reply::error(t.out, &transaction::refuse(t.conn, t.spec, &refusal));
    true
}

/// NOREPLICAS: `min-replicas-to-write` with no replicas refuses writes (a
/// script's own writes are refused where it runs them).
fn no_replicas(t: &mut Turn<'_>) -> bool {
    if !t.shared.no_good_replicas.load(Relaxed) || !is_write(t.conn, t.spec, t.args) {
        return false;
    }
    t.shared.stats.commands_processed.add(1);
    if let Some(spec) = t.spec {
        t.shared.cmdstats.rejected(spec);
    }
    refuse_in_order(t.conn, t.spec, reply::NOREPLICAS, t.pending, t.out);
    true
}

/// CLIENT PAUSE: the command waits (writes only under WRITE). False when
/// the connection must end (the replies before it could not go out).
async fn pause(t: &mut Turn<'_>) -> bool {
    if !t.shared.pause.armed() {
        return true;
    }
    let write = match t.spec {
        Some(s) if s.name == "exec" => transaction::has_write(t.conn),
        Some(s)
            if matches!(
                s.name,
                "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
            ) =>
        {
            t.shared.scripts.may_write(s.name, t.args)
        }
        Some(s) => s.has(Flags::WRITE) || s.has(Flags::MAY_REPLICATE),
        None => false,
    };
    if !t.shared.pause.holds(write) {
        return true;
    }
    // What was answered before goes out first (acknowledged writes only
    // once durable, as always).
    drain(t.pending, t.out).await;
    if !t.out.is_empty()
        && (!durable(t.shared, t.wrote).await
            || flush(t.shared, t.conn, t.stream, t.out, t.backlog)
                .await
                .is_err())
    {
        return false;
    }
    t.shared.pause.wait(write).await;
    true
}

/// BUSY: while a script runs, wait for it, or answer BUSY past the
/// threshold (never block a loop on the shards it holds). An
/// unauthenticated client gets NOAUTH first, as in Redis.
async fn busy_script(t: &mut Turn<'_>) -> bool {
    let shared = t.shared;
    if !shared.scripts.busy.running()
        || !t.conn.authenticated
        || crate::services::scripts::allowed_while_busy(t.spec, t.args)
        || shared.scripts.busy.wait().await
    {
        return false;
    }
    let mut busy = BytesMut::new();
    let message = shared.scripts.busy.message();
    reply::error(&mut busy, &transaction::refuse(t.conn, t.spec, message));
    if t.pending.is_empty() {
        t.out.extend_from_slice(&busy);
    } else {
        t.pending.push_back(Box::pin(std::future::ready(busy)));
    }
    true
}

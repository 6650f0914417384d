//! The checks before a client's command runs, one function each, run in
//! Redis's order (`processCommand`) by `check`: first those of the
//! command by its arguments (`exec::gates`: unknown command, arity,
//! subcommand, NOAUTH, MULTI's `no_multi`, ACL), then those that ask the
//! server's state: OOM (and MISCONF), NOREPLICAS, RESP2's subscriber
//! context, LOADING, a busy script, CLIENT PAUSE. A new check (MOVED/ASK
//! after the ACL, READONLY on a replica after NOREPLICAS) is one function
//! here (or in `exec::gates`) and one line in `check`.
//!
//! Invariants:
//! 1. A refusal is the command's reply, in its place among the pipeline's
//!    replies (at once, or after the pending ones), and counts as a
//!    processed command, a rejected call and an error reply (INFO
//!    errorstats), as Redis's `rejectCommand`; inside MULTI it fails the
//!    transaction (EXEC's refusal discards it), as `transaction::refuse`
//!    says. Under CLIENT REPLY OFF or SKIP it is not sent.
//! 2. A gate that waits (admission, CLIENT PAUSE, a busy script) first
//!    lets the replies before it go out, so its client is never left
//!    without answers it is owed while it waits.

use super::backlog::Backlog;
use super::output::{drain, durable, flush};
use super::refusals::{admit, is_write, subscriber_refusal};
use super::ReplyFuture;
use crate::base::reply;
use crate::command::ConnState;
use crate::command::Shared;
use crate::exec::transaction;
use crate::net::stream::Stream;
use crate::registry::{CommandSpec, Flags, Role};
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
    /// CLIENT REPLY OFF or SKIP: a refusal is not sent.
    pub silent: bool,
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
/// command pass decides. The command runs only if it is known.
pub(super) async fn check(t: &mut Turn<'_>) -> Verdict {
    if let Err(e) = crate::exec::gates::check(t.shared, t.conn, t.spec, t.args) {
        refuse(t, &e);
        return Verdict::Answered;
    }
    if memory(t).await || no_replicas(t) || subscriber_context(t) || loading(t) {
        return Verdict::Answered;
    }
    if busy_script(t).await {
        return Verdict::Answered;
    }
    if !pause(t).await {
        return Verdict::Close;
    }
    Verdict::Run
}

/// Answers a command refused before it runs (module doc, invariant 1).
fn refuse(t: &mut Turn<'_>, err: &str) {
    t.shared.stats.commands_processed.add(1);
    if let Some(spec) = t.spec {
        t.shared.cmdstats.rejected(spec);
    }
    let mut refusal = BytesMut::new();
    reply::error(&mut refusal, &transaction::refuse(t.conn, t.spec, err));
    t.shared.errorstats.record(&refusal);
    if t.silent {
        return;
    }
    if t.pending.is_empty() {
        t.out.extend_from_slice(&refusal);
    } else {
        t.pending.push_back(Box::pin(std::future::ready(refusal)));
    }
}

/// LOADING: while the data set loads, only commands flagged `loading`.
fn loading(t: &mut Turn<'_>) -> bool {
    if !t.shared.engine.is_loading() || t.spec.is_none_or(|s| s.has(Flags::LOADING)) {
        return false;
    }
    refuse(t, reply::LOADING);
    true
}

/// RESP2's subscriber context: only (P|S)(UN)SUBSCRIBE, PING, QUIT and
/// RESET while the connection listens to anything.
fn subscriber_context(t: &mut Turn<'_>) -> bool {
    let Some(refusal) = subscriber_refusal(t.conn, t.spec) else {
        return false;
    };
    refuse(t, &refusal);
    true
}

/// OOM (or MISCONF): a `denyoom` command waits for room or is refused
/// (`refusals::admit`); any other command first lets `maxmemory`'s
/// policy evict, as Redis evicts before every command.
async fn memory(t: &mut Turn<'_>) -> bool {
    let args = t.args;
    let denyoom = match t.spec {
        Some(s) if s.role == Role::Exec => transaction::has_denyoom(t.conn),
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
    t.shared.stats.oom_rejections.fetch_add(1, Relaxed);
    refuse(t, &refusal);
    true
}

/// NOREPLICAS: `min-replicas-to-write` with no replicas refuses writes (a
/// script's own writes are refused where it runs them).
fn no_replicas(t: &mut Turn<'_>) -> bool {
    if !t.shared.no_good_replicas.load(Relaxed) || !is_write(t.conn, t.spec, t.args) {
        return false;
    }
    refuse(t, reply::NOREPLICAS);
    true
}

/// CLIENT PAUSE: the command waits (writes only under WRITE). False when
/// the connection must end (the replies before it could not go out).
async fn pause(t: &mut Turn<'_>) -> bool {
    if !t.shared.pause.armed() {
        return true;
    }
    let write = match t.spec {
        Some(s) if s.role == Role::Exec => transaction::has_write(t.conn),
        Some(s) if s.script_by().is_some() => t.shared.scripts.may_write(s, t.args),
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
/// threshold (never block a loop on the shards it holds).
async fn busy_script(t: &mut Turn<'_>) -> bool {
    let shared = t.shared;
    if !shared.scripts.busy.running()
        || crate::services::scripts::allowed_while_busy(t.spec, t.args)
        || shared.scripts.busy.wait().await
    {
        return false;
    }
    refuse(t, shared.scripts.busy.message());
    true
}

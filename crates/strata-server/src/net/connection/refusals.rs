//! What the gates (`gates`) ask before they refuse a command: whether it
//! writes (`is_write`, as NOREPLICAS and CLIENT PAUSE count writes), its
//! admission under the memory limits (`admit`: OOM or MISCONF), and
//! RESP2's subscriber context (`subscriber_refusal`).

use super::output::drain;
use super::ReplyFuture;
use crate::base::reply;
use crate::command::ConnState;
use crate::command::Shared;
use crate::exec::transaction;
use crate::registry::{Flags, Role};
use bytes::{Bytes, BytesMut};
use futures::stream::FuturesOrdered;
use std::sync::Arc;
use strata_engine::Admission;
use strata_protocol::Version;

/// Whether the command writes, as NOREPLICAS counts writes: a command
/// flagged `write` (with valid arity), or EXEC of queued writes. (A
/// script's writes are refused where it runs them.)
pub(super) fn is_write(
    conn: &ConnState,
    spec: Option<&'static crate::registry::CommandSpec>,
    args: &[Bytes],
) -> bool {
    match spec {
        Some(s) if s.role == Role::Exec => transaction::has_write(conn),
        Some(s) => s.has(Flags::WRITE) && s.arity_ok(args.len()),
        None => false,
    }
}

/// Admission of a `denyoom` command: the refusal line (OOM, or MISCONF
/// when the log cannot be written), or None when admitted. The pending
/// replies are drained before any waiting, so an error goes out in order.
pub(super) async fn admit(
    shared: &Arc<Shared>,
    pending: &mut FuturesOrdered<ReplyFuture>,
    out: &mut BytesMut,
) -> Option<String> {
    let first = shared.engine.admission();
    if first == Admission::Admit {
        return None;
    }
    drain(pending, out).await;
    match shared.admit_write(first).await {
        Ok(()) => None,
        Err(crate::command::Refusal::OutOfMemory) => Some(reply::oom(shared.engine.oom_cause())),
        Err(crate::command::Refusal::Log(why)) => Some(reply::misconf(&why)),
    }
}

/// RESP2's subscriber mode: while a connection listens to anything, only
/// these commands run (RESP3 connections may run any).
pub(super) fn subscriber_refusal(
    conn: &ConnState,
    spec: Option<&crate::registry::CommandSpec>,
) -> Option<String> {
    let spec = spec?;
    if conn.version != Version::Resp2 || !conn.pubsub.as_ref().is_some_and(|l| l.active()) {
        return None;
    }
    if matches!(spec.role, Role::Subscribe | Role::Ping | Role::Session) {
        return None;
    }
    Some(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        spec.name
    ))
}

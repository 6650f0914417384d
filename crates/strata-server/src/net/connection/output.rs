//! A connection's replies on their way out: the pending ones drained in
//! request order, the durability wait of `appendfsync always`, and the
//! writes to the socket (what it does not take waits in the backlog,
//! `backlog`).

use super::backlog::Backlog;
use super::ReplyFuture;
use crate::command::ConnState;
use crate::command::Shared;
use crate::net::stream::Stream;
use bytes::BytesMut;
use futures::stream::{FuturesOrdered, StreamExt};
use std::sync::atomic::Ordering::Relaxed;
use tokio::io::AsyncReadExt;

/// With appendfsync always, waits until the writes of this batch are
/// durable before their replies go out. Returns false when the log failed:
/// the connection is then closed without the replies (the writes' outcome
/// is unknown, as after a crash; acknowledging them would be a lie).
pub(super) async fn durable(shared: &Shared, wrote: &mut bool) -> bool {
    if !std::mem::take(wrote) || !shared.engine.acks_wait_for_fsync() {
        return true;
    }
    let ticket = shared.engine.journal_ticket();
    match shared.engine.wait_durable(ticket).await {
        Ok(()) => true,
        Err(e) => {
            tracing::error!("closing a client: its writes could not be made durable ({e})");
            false
        }
    }
}

/// As `drain`, while watching the client: input that arrives meanwhile is
/// buffered for later, and a client that hangs up (or is killed) while a
/// reply waits — a blocked BLPOP, say — ends the connection at once, which
/// drops its pending replies (and so its place among blocked clients).
/// Returns false when the connection must end.
pub(super) async fn drain_watching(
    shared: &Shared,
    pending: &mut FuturesOrdered<ReplyFuture>,
    out: &mut BytesMut,
    stream: &mut Stream,
    inbuf: &mut BytesMut,
    conn: &ConnState,
) -> bool {
    /// Input buffered while replies wait, at most.
    const MAX_BUFFERED: usize = 64 << 20;
    while !pending.is_empty() {
        tokio::select! {
            r = pending.next() => {
                if let Some(reply) = r {
                    append_reply(out, reply);
                }
            }
            // (Past `client-query-buffer-limit` too: then the caller
            // closes the connection.)
            r = stream.read_buf(inbuf), if inbuf.len() < MAX_BUFFERED
                && (inbuf.len() as u64) <= shared.query_limit.load(Relaxed) => match r {
                Ok(0) | Err(_) => return false,
                Ok(n) => {
                    shared.stats.net_input_bytes.fetch_add(n as u64, Relaxed);
                }
            },
            _ = conn.handle.killed() => return false,
        }
    }
    true
}

pub(super) async fn drain(pending: &mut FuturesOrdered<ReplyFuture>, out: &mut BytesMut) {
    while let Some(reply) = pending.next().await {
        append_reply(out, reply);
    }
}

/// Appends a finished reply to the output: moved, not copied, when the
/// output is empty (a reply can be as big as a collection).
fn append_reply(out: &mut BytesMut, reply: BytesMut) {
    if out.is_empty() {
        *out = reply;
    } else {
        out.extend_from_slice(&reply);
    }
}

/// Writes the backlog and the output, waiting for the socket; a client
/// killed meanwhile (CLIENT KILL, a subscriber past its output limit) ends
/// the connection even while its socket is full.
pub(super) async fn flush(
    shared: &Shared,
    conn: &ConnState,
    stream: &mut Stream,
    out: &mut BytesMut,
    backlog: &mut Backlog,
) -> std::io::Result<()> {
    if out.is_empty() && backlog.is_empty() {
        return Ok(());
    }
    // (Biased: the write is tried first, so a client that killed itself
    // still gets the reply, as from Redis.)
    let sent = tokio::select! {
        biased;
        r = backlog.flush_all(stream, out) => r?,
        _ = conn.handle.killed() => return Err(std::io::ErrorKind::ConnectionAborted.into()),
    };
    shared
        .stats
        .net_output_bytes
        .fetch_add(sent as u64, Relaxed);
    Ok(())
}

/// Writes what the socket takes now; the rest waits in the backlog
/// (`backlog`).
pub(super) fn flush_some(
    shared: &Shared,
    stream: &mut Stream,
    out: &mut BytesMut,
    backlog: &mut Backlog,
) -> std::io::Result<()> {
    let sent = backlog.flush_some(stream, out)?;
    shared
        .stats
        .net_output_bytes
        .fetch_add(sent as u64, Relaxed);
    Ok(())
}

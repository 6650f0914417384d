//! What closes a connection before or after a command, whatever it is:
//! an HTTP request on the port (cross-protocol scripting), input past
//! `client-query-buffer-limit`, replies waiting past the client's
//! `client-output-buffer-limit` (`services::clients::buffers`, invariant 3), and all
//! clients' buffers past `maxmemory-clients` (the clients holding most
//! are closed). Each logs as Redis does and counts in INFO stats; the
//! caller closes.

use super::backlog::Backlog;
use crate::command::ConnState;
use crate::command::Shared;
use crate::services::clients::buffers::{Class, OutputWatch, CLIENT_BUFFERS};
use crate::services::clients::ClientHandle;
use bytes::BytesMut;
use std::sync::atomic::Ordering::Relaxed;

/// Whether the replies waiting for the client (`out` and the backlog)
/// pass its class's `client-output-buffer-limit` (`services::clients::buffers`,
/// invariant 3); if so it is logged and counted, and the caller closes
/// the connection.
pub(super) fn over_output_limit(
    shared: &Shared,
    conn: &ConnState,
    watch: &mut OutputWatch,
    out: &BytesMut,
    backlog: &Backlog,
) -> bool {
    let class = if conn.handle.is_pubsub() {
        Class::PubSub
    } else {
        Class::Normal
    };
    let used = out.len() + backlog.bytes();
    // A client that has not authenticated gets little to read (Redis 7.2.8
    // closes it past a small limit too, CVE-2025-21605): else PINGs it
    // never reads grow NOAUTH replies without bound.
    let unauthenticated = !conn.authenticated && used > UNAUTHENTICATED_OUTPUT;
    if !unauthenticated && !watch.exceeded(&shared.out_limits, class, used) {
        return false;
    }
    shared
        .stats
        .output_buffer_limit_disconnections
        .fetch_add(1, Relaxed);
    tracing::warn!(
        "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
        conn.handle.list_line()
    );
    true
}

/// Most bytes of unread replies a client that has not authenticated may
/// have waiting.
const UNAUTHENTICATED_OUTPUT: usize = 64 << 10;

/// Whether the client's unparsed input passed `client-query-buffer-limit`
/// (logged and counted; the caller closes the connection), as Redis.
pub(super) fn over_query_limit(shared: &Shared, conn: &ConnState, inbuf: &BytesMut) -> bool {
    if inbuf.len() as u64 <= shared.query_limit.load(Relaxed) {
        return false;
    }
    shared
        .stats
        .query_buffer_limit_disconnections
        .fetch_add(1, Relaxed);
    tracing::warn!(
        "Closing client that reached max query buffer length: {} (qbuf initial bytes: {:?})",
        conn.handle.list_line(),
        String::from_utf8_lossy(&inbuf[..inbuf.len().min(64)])
    );
    true
}

/// Whether a request's first word is `POST` or `Host:`, what an HTTP
/// request sent to the port starts with (Redis's check, before the
/// command table).
pub(super) fn is_http(first: &[u8]) -> bool {
    first.eq_ignore_ascii_case(b"post") || first.eq_ignore_ascii_case(b"host:")
}

/// `maxmemory-clients` (Redis 7's client eviction): while all clients'
/// buffers hold more than the limit, the clients holding most are closed,
/// largest first, but those with CLIENT NO-EVICT on. Returns whether `me`
/// was one of them (its caller closes it; the others close themselves).
pub(super) fn evict_clients(shared: &Shared, me: &ClientHandle) -> bool {
    let limit = shared.clients_limit.load(Relaxed);
    if limit == 0 {
        return false;
    }
    // Evicted by another connection: it stops growing now.
    if me.is_killed() {
        return true;
    }
    let total = CLIENT_BUFFERS.load(Relaxed);
    if total <= limit {
        return false;
    }
    // One evictor at a time: the others' buffers are counted by then.
    let Some(_one) = shared.evicting.try_lock() else {
        return false;
    };
    let all = shared.clients.all();
    // Clients closing already free their bytes soon: not counted over.
    let closing: u64 = all
        .iter()
        .filter(|c| c.is_killed())
        .map(|c| c.buffers.load().tot_mem as u64)
        .sum();
    let mut clients: Vec<(usize, std::sync::Arc<ClientHandle>)> = all
        .into_iter()
        .filter(|c| !c.is_killed() && !c.info.lock().no_evict)
        .map(|c| (c.buffers.load().tot_mem, c))
        .collect();
    clients.sort_by_key(|c| std::cmp::Reverse(c.0));
    let mut over = total.saturating_sub(limit).saturating_sub(closing);
    let mut evicted_me = false;
    for (mem, c) in clients {
        if over == 0 || mem == 0 {
            break;
        }
        tracing::debug!("Evicting client: {}", c.list_line());
        c.kill();
        shared.stats.evicted_clients.fetch_add(1, Relaxed);
        over = over.saturating_sub(mem as u64);
        evicted_me |= c.id == me.id;
    }
    evicted_me
}

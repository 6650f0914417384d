//! One client connection: read, decode, dispatch, reply — with pipelining.
//!
//! All complete requests in the read buffer are dispatched before any reply
//! is awaited, so a pipeline of cold GETs keeps many flash reads in flight;
//! replies go out in request order (`FuturesOrdered`). A pending write is a
//! barrier (see `dispatch`). Protocol errors get `-ERR Protocol error: ...`
//! and the connection is closed, as Redis does.

mod gates;
mod guards;
mod output;
mod prefetch;
mod refusals;

use crate::command::Flags;
use gates::Verdict;
pub(crate) use prefetch::{prefetch_pipeline, PREFETCH_MAX};
use refusals::subscriber_refusal;

use crate::client_buffers::{Backlog, BufGauge, OutputWatch, BUFFER_KEEP};
use crate::clients::ClientHandle;
use crate::command::Outcome;
use crate::commands::table;
use crate::dispatch::execute;
use crate::loops::{self, Resume, Served};
use crate::net::stream::{Io, Stream};
use crate::reply;
use crate::session::{scripting, transaction};
use crate::Shared;
use bytes::{Bytes, BytesMut};
use futures::stream::{FuturesOrdered, StreamExt};
use guards::{evict_clients, is_http, over_output_limit, over_query_limit};
use output::{drain, drain_watching, durable, flush, flush_some};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use strata_protocol::{decode_request_into, Version};

/// Per-connection state that commands change (SELECT, HELLO, CLIENT ...).
pub struct ConnState {
    pub db: usize,
    pub version: Version,
    pub handle: Arc<ClientHandle>,
    /// False until AUTH succeeds when the default user needs a password.
    pub authenticated: bool,
    /// The ACL user it runs as (the default user until AUTH).
    pub user: Arc<crate::acl::User>,
    /// The open transaction (after MULTI).
    pub multi: Option<crate::session::transaction::Multi>,
    /// The keys WATCHed.
    pub watched: strata_engine::Watched,
    /// What it listens to (after SUBSCRIBE ...), and its message queue.
    pub pubsub: Option<crate::session::pubsub::Listener>,
    /// While EXEC runs: where its commands report keys blocked clients
    /// wait on (`command::ReadySink`); its blocking commands do not block.
    pub exec_ready: Option<crate::command::Deferred>,
    /// CLIENT CACHING's answer, for the next command (client tracking).
    pub caching: Option<bool>,
    /// CLIENT NO-TOUCH ON: its reads leave keys' access times alone.
    pub no_touch: bool,
    /// The client a script's `redis.call` runs as.
    pub script: bool,
    /// A script's declared keys (KEYS): what client tracking remembers for
    /// its caller when the script runs a read, as Redis remembers them.
    pub script_keys: Vec<Bytes>,
    /// It ran MONITOR (`session::monitor`).
    pub monitor: bool,
}

type ReplyFuture = Pin<Box<dyn Future<Output = BytesMut> + Send>>;

/// What woke a connection waiting for input.
enum Wake {
    Read(std::io::Result<usize>),
    /// Pub/sub messages were written to the output.
    Flush,
}

/// Most replies a connection keeps pending (cold reads in flight plus the
/// replies queued behind them); a deeper pipeline waits for the oldest.
const MAX_PENDING: usize = 256;

/// A connection's state at a quiet point, carried to another loop
/// (`loops`, invariant 2): what commands set, and the input not yet
/// decoded.
pub struct Parked {
    conn: ConnState,
    reply_mode: ReplyMode,
    inbuf: BytesMut,
    skip_read: bool,
}

/// Serves a connection (from its start, or from where another loop
/// parked it) until it closes or is told to move.
pub async fn serve(
    shared: Arc<Shared>,
    mut stream: Stream,
    handle: Arc<ClientHandle>,
    resume: Option<Box<Parked>>,
) -> Served {
    let Parked {
        mut conn,
        mut reply_mode,
        mut inbuf,
        mut skip_read,
    } = match resume {
        Some(p) => *p,
        None => {
            let _ = stream.tcp().set_nodelay(true);
            {
                use std::os::fd::AsRawFd;
                handle.fd.store(stream.tcp().as_raw_fd(), Relaxed);
            }
            let authenticated = shared.acl.auto_auth();
            Parked {
                conn: ConnState {
                    db: 0,
                    version: Version::Resp2,
                    handle,
                    authenticated,
                    user: shared.acl.default_user(),
                    multi: None,
                    pubsub: None,
                    watched: strata_engine::Watched::new(&shared.engine),
                    exec_ready: None,
                    script: false,
                    script_keys: Vec::new(),
                    monitor: false,
                    caching: None,
                    no_touch: false,
                },
                // CLIENT REPLY's mode for the connection.
                reply_mode: ReplyMode::On,
                inbuf: BytesMut::with_capacity(16 * 1024),
                skip_read: false,
            }
        }
    };
    let mut out = BytesMut::with_capacity(16 * 1024);
    let mut pending: FuturesOrdered<ReplyFuture> = FuturesOrdered::new();
    let mut backlog = Backlog::default();
    let mut gauge = BufGauge::default();
    let mut watch = OutputWatch::default();
    // The request being served (emptied by each decode: it holds slices
    // of the input, which would keep a read from reusing the buffer).
    let mut args: Vec<Bytes> = Vec::new();
    loop {
        gauge.set(&conn.handle, &inbuf, &out, &backlog);
        if evict_clients(&shared, &conn.handle) {
            return Served::Closed;
        }
        // Read more input (or stop when killed / idle / shut down).
        // (Subscribers are never idle: they wait for messages.)
        let timeout = shared.idle_timeout().filter(|_| conn.pubsub.is_none());
        if !std::mem::take(&mut skip_read) {
            // Read through `AsyncRead`: a short read clears the socket's
            // readiness, so the next wait costs no `recv` that would find
            // nothing (`readable` + `try_read` kept it, one wasted syscall
            // per request).
            // Replies the client has not taken yet go out as it takes
            // them, while its input is still read and served.
            let unsent = !out.is_empty() || !backlog.is_empty() || stream.has_unsent();
            let wake = {
                tokio::select! {
                    io = stream.read_or_writable(&mut inbuf, unsent) => match io {
                        Io::Read(r) => Wake::Read(r),
                        Io::Writable(r) => {
                            if r.is_err() || flush_some(&shared, &mut stream, &mut out, &mut backlog).is_err() {
                                return Served::Closed;
                            }
                            continue;
                        }
                    },
                    m = next_message(&mut conn.pubsub) => {
                        m.write(&mut out, conn.version);
                        if let Some(l) = conn.pubsub.as_mut() {
                            while let Some(m) = l.try_next() {
                                m.write(&mut out, conn.version);
                            }
                        }
                        Wake::Flush
                    }
                    _ = conn.handle.killed() => return Served::Closed,
                    _ = shared.shutdown_signal() => return Served::Closed,
                    _ = sleep_or_forever(timeout) => return Served::Closed,
                }
            };
            let read = match wake {
                Wake::Read(r) => r,
                Wake::Flush => {
                    if flush(&shared, &conn, &mut stream, &mut out, &mut backlog)
                        .await
                        .is_err()
                    {
                        return Served::Closed;
                    }
                    continue;
                }
            };
            match read {
                Ok(0) | Err(_) => return Served::Closed,
                Ok(n) => {
                    shared.stats.net_input_bytes.fetch_add(n as u64, Relaxed);
                }
            }
            if over_query_limit(&shared, &conn, &inbuf) {
                return Served::Closed;
            }
        }
        let mut close = false;
        let mut barrier = false;
        // A write ran in this batch: with appendfsync always its reply
        // waits until the log is synced (group commit).
        let mut wrote = false;
        // Requests left before the next prefetch of the pipeline's keys.
        let mut ahead = 0usize;
        // Requests of this batch (the loop controller's rate).
        let mut served = 0usize;
        loop {
            if ahead == 0 {
                ahead = prefetch_pipeline(&shared, conn.db, |f| {
                    strata_protocol::peek_keys(&inbuf, PREFETCH_MAX, f)
                })
                .max(1);
            }
            ahead -= 1;
            let mut limits = shared.limits();
            // Redis's pre-AUTH limits (few, short arguments) until AUTH.
            limits.unauthenticated = !conn.authenticated;
            // (One argument vector for all the connection's requests,
            // given back when a huge request left it big.)
            if args.capacity() > ARGS_KEEP {
                args = Vec::new();
            }
            match decode_request_into(&mut inbuf, &limits, &mut args) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    drain(&mut pending, &mut out).await;
                    reply::error(&mut out, &format!("ERR {e}"));
                    let _ = flush(&shared, &conn, &mut stream, &mut out, &mut backlog).await;
                    return Served::Closed;
                }
            };
            if args.is_empty() {
                continue;
            }
            if is_http(&args[0]) {
                // An HTTP request (a web page's POST to localhost):
                // nothing after it is read, and the replies of this read
                // are dropped, as Redis frees the client at once.
                shared.warn_security_attack();
                return Served::Closed;
            }
            served += 1;
            if barrier {
                if !drain_watching(
                    &shared,
                    &mut pending,
                    &mut out,
                    &mut stream,
                    &mut inbuf,
                    &conn,
                )
                .await
                {
                    return Served::Closed;
                }
                barrier = false;
            }
            // Bound the reads in flight per connection (each holds a buffer).
            while pending.len() >= MAX_PENDING {
                if let Some(reply) = pending.next().await {
                    out.extend_from_slice(&reply);
                }
            }
            let spec = table::lookup(&args[0]);
            let mut turn = gates::Turn {
                shared: &shared,
                conn: &mut conn,
                spec,
                args: &args,
                pending: &mut pending,
                out: &mut out,
                stream: &mut stream,
                backlog: &mut backlog,
                wrote: &mut wrote,
                gauge: &mut gauge,
                inbuf: &inbuf,
            };
            match gates::check(&mut turn).await {
                Verdict::Run => {}
                Verdict::Answered => continue,
                Verdict::Close => return Served::Closed,
            }
            // CLIENT REPLY OFF / SKIP: this command's reply is dropped.
            let silent = match reply_mode {
                ReplyMode::On => false,
                ReplyMode::Off => true,
                ReplyMode::Skip => {
                    reply_mode = ReplyMode::On;
                    true
                }
            };
            // CLIENT REPLY ON answers, whatever the mode was; so do the
            // (un)subscribe confirmations, which Redis pushes past the
            // reply mode (its CLIENT_PUSHING), as it does messages.
            let sets_mode = client_reply(spec, &args);
            let silent = silent
                && sets_mode != Some(ReplyMode::On)
                && !spec.is_some_and(|s| s.has(Flags::PUBSUB) && s.name.contains("subscribe"));
            let out_mark = out.len();
            let in_order = pending.is_empty();
            let mut scratch = BytesMut::new();
            let target = if pending.is_empty() {
                &mut out
            } else {
                &mut scratch
            };
            if let Some(refusal) = subscriber_refusal(&conn, spec) {
                if !silent {
                    reply::error(target, &refusal);
                }
                if !scratch.is_empty() {
                    pending.push_back(Box::pin(std::future::ready(scratch)));
                }
                continue;
            }
            if conn.multi.is_some() && transaction::queue(&shared, &mut conn, spec, &args, target) {
                if !scratch.is_empty() {
                    pending.push_back(Box::pin(std::future::ready(scratch)));
                }
                continue;
            }
            if spec.is_some_and(|s| s.has(Flags::WRITE)) {
                wrote = true;
            }
            match execute(&shared, &mut conn, spec, &args, target) {
                Outcome::Done => {
                    if silent {
                        if in_order {
                            out.truncate(out_mark);
                        }
                        scratch.clear();
                    }
                }
                Outcome::Pending { reply, write } => {
                    pending.push_back(if silent {
                        Box::pin(async move {
                            let _ = reply.await;
                            BytesMut::new()
                        })
                    } else {
                        reply
                    });
                    barrier |= write;
                }
                Outcome::Close => close = true,
                outcome @ (Outcome::Exec | Outcome::Eval) => {
                    // A barrier: the replies before it go first (its
                    // handler wrote nothing).
                    drain(&mut pending, &mut out).await;
                    let mark = out.len();
                    if matches!(outcome, Outcome::Exec) {
                        wrote |= transaction::has_writes(&conn);
                        transaction::exec(&shared, &mut conn, &mut out).await;
                        // Closed for its reply's size (the output limit).
                        if conn.handle.is_killed() {
                            return Served::Closed;
                        }
                        // MONITOR shows EXEC after the commands it ran.
                        let addr = conn.handle.addr.clone();
                        shared.monitors.feed(&shared.pubsub, conn.db, &addr, &args);
                    } else {
                        wrote = true;
                        scripting::eval(&shared, &mut conn, &args, &mut out).await;
                    }
                    if silent {
                        out.truncate(mark);
                    }
                }
            }
            if !scratch.is_empty() {
                pending.push_back(Box::pin(std::future::ready(scratch)));
            }
            if let Some(mode) = sets_mode {
                reply_mode = mode;
            }
            if over_output_limit(&shared, &conn, &mut watch, &out, &backlog) {
                return Served::Closed;
            }
            if shared.clients_limit.load(Relaxed) > 0 {
                // (Counted now: one command can grow the output by much.)
                gauge.set(&conn.handle, &inbuf, &out, &backlog);
                if evict_clients(&shared, &conn.handle) {
                    return Served::Closed;
                }
            }
            if close {
                break;
            }
            // Send what the client takes of a huge pipeline's replies; the
            // rest waits in `out` (never blocking: a client that writes its
            // whole pipeline before it reads would wait for us, and we for
            // it; Redis buffers a normal client's replies so too).
            if out.len() > 1 << 20
                && pending.is_empty()
                && (!durable(&shared, &mut wrote).await
                    || flush_some(&shared, &mut stream, &mut out, &mut backlog).is_err())
            {
                return Served::Closed;
            }
        }
        loops::note_requests(served);
        let before = inbuf.len();
        if !drain_watching(
            &shared,
            &mut pending,
            &mut out,
            &mut stream,
            &mut inbuf,
            &conn,
        )
        .await
            || over_query_limit(&shared, &conn, &inbuf)
        {
            return Served::Closed;
        }
        // Input that arrived while replies waited is decoded before the
        // next read.
        skip_read = inbuf.len() > before;
        // The batch is answered: BCAST tracking clients get its changes
        // (Redis broadcasts them before its event loop sleeps).
        shared.tracking.flush_bcast(&shared.pubsub);
        if !durable(&shared, &mut wrote).await {
            return Served::Closed;
        }
        if close {
            // The last replies go out whole (QUIT's +OK).
            let _ = flush(&shared, &conn, &mut stream, &mut out, &mut backlog).await;
            return Served::Closed;
        }
        if !out.is_empty() {
            loops::end_of_turn().await;
        }
        if flush_some(&shared, &mut stream, &mut out, &mut backlog).is_err()
            || over_output_limit(&shared, &conn, &mut watch, &out, &backlog)
        {
            return Served::Closed;
        }
        // A big buffer left by one big request or reply is given back:
        // it counts in the allocator-measured RAM the budget covers (as
        // Redis shrinks an idle client's query and reply buffers).
        if inbuf.capacity() > BUFFER_KEEP && inbuf.is_empty() {
            inbuf = BytesMut::with_capacity(16 * 1024);
        }
        // A quiet point (`loops`, invariant 2): the connection may move.
        // (A TLS one stays: `net::stream`, invariant 3.)
        if out.is_empty()
            && backlog.is_empty()
            && pending.is_empty()
            && conn.pubsub.is_none()
            && !conn.monitor
            && !stream.is_tls()
        {
            if let Some(to) = loops::move_order() {
                let state = Resume::Resp(Box::new(Parked {
                    conn,
                    reply_mode,
                    inbuf,
                    skip_read,
                }));
                let Ok(stream) = stream.into_tcp() else {
                    return Served::Closed;
                };
                return Served::Moved { stream, state, to };
            }
        }
    }
}

/// Argument slots a connection keeps between requests, at most.
const ARGS_KEEP: usize = 1024;

async fn sleep_or_forever(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// The next pub/sub message for this connection (never, when it listens
/// to nothing).
async fn next_message(
    l: &mut Option<crate::session::pubsub::Listener>,
) -> crate::session::pubsub::Message {
    match l {
        Some(l) => l.next().await,
        None => std::future::pending().await,
    }
}

/// CLIENT REPLY's modes: replies sent, dropped, or the next one dropped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReplyMode {
    On,
    Off,
    Skip,
}

/// The mode a CLIENT REPLY command sets, if it is one.
fn client_reply(
    spec: Option<&crate::command::CommandSpec>,
    args: &[bytes::Bytes],
) -> Option<ReplyMode> {
    if spec?.name != "client" || args.len() != 3 || !args[1].eq_ignore_ascii_case(b"reply") {
        return None;
    }
    let a = &args[2];
    if a.eq_ignore_ascii_case(b"on") {
        Some(ReplyMode::On)
    } else if a.eq_ignore_ascii_case(b"off") {
        Some(ReplyMode::Off)
    } else if a.eq_ignore_ascii_case(b"skip") {
        Some(ReplyMode::Skip)
    } else {
        None
    }
}

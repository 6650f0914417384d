//! A connection being served, in steps (`serve` runs them): read input
//! (`read`), serve the batch of requests it completes (`batch`, a request
//! at a time: `request` decodes and passes the gates, `command` runs it),
//! then answer the batch (`end_batch`). Invariants: the module doc of
//! `connection`.

use super::backlog::Backlog;
use super::gates::{self, Verdict};
use super::guards::{evict_clients, is_http, over_output_limit, over_query_limit};
use super::output::{drain, drain_watching, durable, flush, flush_some};
use super::prefetch::{prefetch_pipeline, read_ahead, PREFETCH_MAX};
use super::{
    client_reply, next_message, sleep_or_forever, ConnState, Parked, ReplyFuture, ReplyMode,
    ARGS_KEEP, MAX_PENDING,
};
use crate::base::reply;
use crate::command::Outcome;
use crate::command::Shared;
use crate::exec::dispatch::execute;
use crate::exec::{scripting, transaction};
use crate::net::stream::{Io, Stream};
use crate::net::turn::{self, Served};
use crate::registry::{Flags, Role};
use crate::services::clients::buffers::{BufGauge, OutputWatch, BUFFER_KEEP};
use bytes::{Bytes, BytesMut};
use futures::stream::{FuturesOrdered, StreamExt};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use strata_protocol::decode_request_into;

/// A connection being served: its state and its buffers.
pub(super) struct Client {
    pub shared: Arc<Shared>,
    pub stream: Stream,
    pub conn: ConnState,
    /// CLIENT REPLY's mode.
    pub reply_mode: ReplyMode,
    pub inbuf: BytesMut,
    /// Input arrived while replies waited: decode it before reading more.
    pub skip_read: bool,
    pub out: BytesMut,
    pub pending: FuturesOrdered<ReplyFuture>,
    pub backlog: Backlog,
    pub gauge: BufGauge,
    pub watch: OutputWatch,
    /// The request being served (emptied by each decode: it holds slices
    /// of the input, which would keep a read from reusing the buffer).
    pub args: Vec<Bytes>,
}

/// How reading ended.
pub(super) enum Step {
    /// Input to serve.
    Go,
    /// Something else was done (replies sent, messages queued): read again.
    Again,
    Closed,
}

/// How one request of a batch ended.
pub(super) enum Request {
    /// Served (or refused): on to the next.
    Next,
    /// The batch is over (no complete request left, or QUIT).
    Done,
    Closed,
}

/// How a command that passed the gates ended.
enum Ran {
    /// It ran: its reply is in the output or pending.
    Done,
    /// Answered another way (a refusal, `+QUEUED`).
    Answered,
    Closed,
}

/// One batch of requests in progress.
#[derive(Default)]
pub(super) struct Batch {
    pub close: bool,
    /// A pending write: later requests wait for it.
    pub barrier: bool,
    /// A write ran in this batch: with appendfsync always its reply waits
    /// until the log is synced (group commit).
    pub wrote: bool,
    /// Requests left before the next prefetch of the pipeline's keys.
    pub ahead: usize,
    /// Requests left whose parts on flash were read ahead (`read_ahead`).
    pub read_ahead: usize,
    /// Requests of this batch (the loop controller's rate).
    pub served: usize,
}

impl Client {
    pub(super) fn new(shared: Arc<Shared>, stream: Stream, parked: Parked) -> Client {
        let Parked {
            conn,
            reply_mode,
            inbuf,
            skip_read,
        } = parked;
        Client {
            shared,
            stream,
            conn,
            reply_mode,
            inbuf,
            skip_read,
            out: BytesMut::with_capacity(16 * 1024),
            pending: FuturesOrdered::new(),
            backlog: Backlog::default(),
            gauge: BufGauge::default(),
            watch: OutputWatch::default(),
            args: Vec::new(),
        }
    }

    /// Reads more input (or stops when killed / idle / shut down).
    pub(super) async fn read(&mut self) -> Step {
        let Client {
            shared,
            stream,
            conn,
            inbuf,
            skip_read,
            out,
            backlog,
            gauge,
            ..
        } = self;
        gauge.set(&conn.handle, inbuf, out, backlog.sizes());
        if evict_clients(shared, &conn.handle) {
            return Step::Closed;
        }
        if std::mem::take(skip_read) {
            return Step::Go;
        }
        // (Subscribers are never idle: they wait for messages.)
        let timeout = shared.idle_timeout().filter(|_| conn.pubsub.is_none());
        // Read through `AsyncRead`: a short read clears the socket's
        // readiness, so the next wait costs no `recv` that would find
        // nothing (`readable` + `try_read` kept it, one wasted syscall per
        // request). Replies the client has not taken yet go out as it
        // takes them, while its input is still read and served.
        let unsent = !out.is_empty() || !backlog.is_empty() || stream.has_unsent();
        let read = tokio::select! {
            io = stream.read_or_writable(inbuf, unsent) => match io {
                Io::Read(r) => r,
                Io::Writable(r) => {
                    if r.is_err() || flush_some(shared, stream, out, backlog).is_err() {
                        return Step::Closed;
                    }
                    return Step::Again;
                }
            },
            m = next_message(&mut conn.pubsub) => {
                m.write(out, conn.version);
                if let Some(l) = conn.pubsub.as_mut() {
                    while let Some(m) = l.try_next() {
                        m.write(out, conn.version);
                    }
                }
                if flush(shared, conn, stream, out, backlog).await.is_err() {
                    return Step::Closed;
                }
                return Step::Again;
            }
            _ = conn.handle.killed() => return Step::Closed,
            _ = shared.shutdown_signal() => return Step::Closed,
            _ = sleep_or_forever(timeout) => return Step::Closed,
        };
        // A client killed meanwhile (CLIENT KILL, ACL LOAD or SETUSER
        // replacing its user) runs nothing more, even when its input woke
        // it first, as Redis frees it at once.
        if conn.handle.is_killed() {
            return Step::Closed;
        }
        match read {
            Ok(0) | Err(_) => return Step::Closed,
            Ok(n) => {
                shared.stats.net_input_bytes.fetch_add(n as u64, Relaxed);
            }
        }
        if over_query_limit(shared, conn, inbuf) {
            return Step::Closed;
        }
        Step::Go
    }

    /// Serves the complete requests of the input.
    pub(super) async fn batch(&mut self) -> Option<Batch> {
        let mut b = Batch::default();
        loop {
            match self.request(&mut b).await {
                Request::Next => {}
                Request::Done => break,
                Request::Closed => return None,
            }
        }
        turn::note_requests(b.served);
        Some(b)
    }

    /// Decodes the next request and passes it through the gates, then runs
    /// it (`command`).
    async fn request(&mut self, b: &mut Batch) -> Request {
        let Client {
            shared,
            stream,
            conn,
            inbuf,
            out,
            pending,
            backlog,
            gauge,
            args,
            reply_mode,
            ..
        } = self;
        if b.ahead == 0 {
            b.ahead = prefetch_pipeline(shared, conn.db, |f| {
                strata_protocol::peek_keys(inbuf, PREFETCH_MAX, f)
            })
            .max(1);
        }
        b.ahead -= 1;
        let mut limits = shared.limits();
        // Redis's pre-AUTH limits (few, short arguments) until AUTH.
        limits.unauthenticated = !conn.authenticated;
        // (One argument vector for all the connection's requests,
        // given back when a huge request left it big.)
        if args.capacity() > ARGS_KEEP {
            *args = Vec::new();
        }
        match decode_request_into(inbuf, &limits, args) {
            Ok(true) => {}
            Ok(false) => return Request::Done,
            Err(e) => {
                drain(pending, out).await;
                reply::error(out, &format!("ERR {e}"));
                let _ = flush(shared, conn, stream, out, backlog).await;
                return Request::Closed;
            }
        };
        if args.is_empty() {
            return Request::Next;
        }
        if is_http(&args[0]) {
            // An HTTP request (a web page's POST to localhost):
            // nothing after it is read, and the replies of this read
            // are dropped, as Redis frees the client at once.
            shared.warn_security_attack();
            return Request::Closed;
        }
        b.served += 1;
        b.read_ahead = b.read_ahead.saturating_sub(1);
        if b.barrier {
            // While the pipeline waits, the reads of the requests after
            // the barrier go to the device together.
            if b.read_ahead == 0 && conn.authenticated {
                b.read_ahead = read_ahead(shared, conn.db, args, inbuf);
            }
            if !drain_watching(shared, pending, out, stream, inbuf, conn).await {
                return Request::Closed;
            }
            b.barrier = false;
        }
        // Bound the reads in flight per connection (each holds a buffer).
        while pending.len() >= MAX_PENDING {
            if let Some(reply) = pending.next().await {
                out.extend_from_slice(&reply);
            }
        }
        let spec = crate::registry::lookup(&args[0]);
        let silent = silenced(reply_mode, spec, args);
        let mut turn = gates::Turn {
            shared,
            conn,
            spec,
            args,
            pending,
            out,
            stream,
            backlog,
            wrote: &mut b.wrote,
            gauge,
            inbuf,
            silent,
        };
        let spec = match (gates::check(&mut turn).await, spec) {
            (Verdict::Run, Some(spec)) => spec,
            (Verdict::Close, _) => return Request::Closed,
            (Verdict::Answered | Verdict::Run, _) => return Request::Next,
        };
        match self.command(spec, silent, b).await {
            Ran::Done => {}
            Ran::Answered => return Request::Next,
            Ran::Closed => return Request::Closed,
        }
        let Client {
            shared,
            stream,
            conn,
            inbuf,
            out,
            backlog,
            gauge,
            watch,
            pending,
            ..
        } = self;
        if over_output_limit(shared, conn, watch, out, backlog) {
            return Request::Closed;
        }
        if shared.clients_limit.load(Relaxed) > 0 {
            // (Counted now: one command can grow the output by much.)
            gauge.set(&conn.handle, inbuf, out, backlog.sizes());
            if evict_clients(shared, &conn.handle) {
                return Request::Closed;
            }
        }
        if b.close {
            return Request::Done;
        }
        // Send what the client takes of a huge pipeline's replies; the
        // rest waits in `out` (never blocking: a client that writes its
        // whole pipeline before it reads would wait for us, and we for
        // it; Redis buffers a normal client's replies so too).
        if out.len() > 1 << 20
            && pending.is_empty()
            && (!durable(shared, &mut b.wrote).await
                || flush_some(shared, stream, out, backlog).is_err())
        {
            return Request::Closed;
        }
        Request::Next
    }

    /// Runs a command that passed the gates (its reply dropped when
    /// `silent`): MULTI's queue, or the command; then CLIENT REPLY's mode.
    async fn command(
        &mut self,
        spec: &'static crate::registry::CommandSpec,
        silent: bool,
        b: &mut Batch,
    ) -> Ran {
        let Client {
            shared,
            conn,
            reply_mode,
            out,
            pending,
            args,
            ..
        } = self;
        let sets_mode = client_reply(Some(spec), args);
        let out_mark = out.len();
        let in_order = pending.is_empty();
        let mut scratch = BytesMut::new();
        let target: &mut BytesMut = if pending.is_empty() {
            out
        } else {
            &mut scratch
        };
        if conn.multi.is_some() && transaction::queue(conn, spec, args, target) {
            if !scratch.is_empty() {
                pending.push_back(Box::pin(std::future::ready(scratch)));
            }
            return Ran::Answered;
        }
        if spec.has(Flags::WRITE) {
            b.wrote = true;
        }
        match execute(shared, conn, spec, args, target) {
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
                b.barrier |= write;
            }
            Outcome::Close => b.close = true,
            outcome @ (Outcome::Exec | Outcome::Eval) => {
                // A barrier: the replies before it go first (its
                // handler wrote nothing).
                drain(pending, out).await;
                let mark = out.len();
                if matches!(outcome, Outcome::Exec) {
                    b.wrote |= transaction::has_writes(conn);
                    transaction::exec(shared, conn, out).await;
                    // Closed for its reply's size (the output limit).
                    if conn.handle.is_killed() {
                        return Ran::Closed;
                    }
                    // MONITOR shows EXEC after the commands it ran.
                    let addr = conn.handle.addr.clone();
                    shared.monitors.feed(&shared.pubsub, conn.db, &addr, args);
                } else {
                    b.wrote = true;
                    scripting::eval(shared, conn, spec, args, out).await;
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
            *reply_mode = mode;
        }
        Ran::Done
    }

    /// Answers the batch: its pending replies, the durability wait, what
    /// the socket takes. False when the connection must end.
    pub(super) async fn end_batch(&mut self, mut b: Batch) -> bool {
        let Client {
            shared,
            stream,
            conn,
            inbuf,
            skip_read,
            out,
            pending,
            backlog,
            watch,
            ..
        } = self;
        let before = inbuf.len();
        if !drain_watching(shared, pending, out, stream, inbuf, conn).await
            || over_query_limit(shared, conn, inbuf)
        {
            return false;
        }
        // Input that arrived while replies waited is decoded before the
        // next read.
        *skip_read = inbuf.len() > before;
        // The batch is answered: BCAST tracking clients get its changes
        // (Redis broadcasts them before its event loop sleeps).
        shared.tracking.flush_bcast(&shared.pubsub);
        if !durable(shared, &mut b.wrote).await {
            return false;
        }
        if b.close {
            // The last replies go out whole (QUIT's +OK).
            let _ = flush(shared, conn, stream, out, backlog).await;
            return false;
        }
        if !out.is_empty() {
            turn::end_of_turn().await;
        }
        if flush_some(shared, stream, out, backlog).is_err()
            || over_output_limit(shared, conn, watch, out, backlog)
        {
            return false;
        }
        // A big buffer left by one big request or reply is given back:
        // it counts in the allocator-measured RAM the budget covers (as
        // Redis shrinks an idle client's query and reply buffers).
        if inbuf.capacity() > BUFFER_KEEP && inbuf.is_empty() {
            *inbuf = BytesMut::with_capacity(16 * 1024);
        }
        true
    }

    /// Whether this is a quiet point (`net::loops`, invariant 2): everything
    /// answered and sent; not subscribed, not MONITOR, not TLS (`net::stream`,
    /// invariant 3).
    pub(super) fn quiet(&self) -> bool {
        self.out.is_empty()
            && self.backlog.is_empty()
            && self.pending.is_empty()
            && self.conn.pubsub.is_none()
            && !self.conn.monitor
            && !self.stream.is_tls()
    }

    /// Hands the connection to loop `to`.
    pub(super) fn park(self, to: usize) -> Served<Box<Parked>> {
        let state = Box::new(Parked {
            conn: self.conn,
            reply_mode: self.reply_mode,
            inbuf: self.inbuf,
            skip_read: self.skip_read,
        });
        let Ok(stream) = self.stream.into_tcp() else {
            return Served::Closed;
        };
        Served::Moved { stream, state, to }
    }
}

/// Whether a command's reply is dropped (CLIENT REPLY OFF, or SKIP for
/// this one command, which the mode then leaves): CLIENT REPLY ON
/// answers whatever the mode was, and so do the (un)subscribe
/// confirmations, which Redis pushes past the reply mode (its
/// CLIENT_PUSHING), as it does messages.
fn silenced(
    mode: &mut ReplyMode,
    spec: Option<&'static crate::registry::CommandSpec>,
    args: &[Bytes],
) -> bool {
    let silent = match *mode {
        ReplyMode::On => false,
        ReplyMode::Off => true,
        ReplyMode::Skip => {
            *mode = ReplyMode::On;
            true
        }
    };
    silent
        && client_reply(spec, args) != Some(ReplyMode::On)
        && !spec.is_some_and(|s| s.role == Role::Subscribe)
}

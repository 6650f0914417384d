//! The Memcached listener (`memcached-port`): text and meta protocols over
//! the same tiered engine, on database 0 of the RESP side.
//!
//! - A value set over one protocol is readable over the other. Client flags
//!   are kept with the item (RESP writes of a new value reset them to 0;
//!   APPEND/INCR over RESP keep them); the CAS of an item is its version,
//!   which changes whenever the value does, or one a client set (meta `E`).
//! - The text protocol is here; the meta commands are in `meta`; append,
//!   prepend and incr / decr in `modify`; `stats` and `lru_crawler
//!   metadump` in `stats`.
//! - exptime follows memcached: 0 = never, up to 30 days = relative
//!   seconds, beyond = an absolute Unix time, negative = already expired.
//! - Replies go out in request order; a cold `get` is one flash read, with
//!   all reads of a pipeline in flight together; a pending read-modify-write
//!   (append, incr ... of a cold value) is a barrier, as on the RESP side.
//! - `maxmemory-policy` applies to memcached items as to every key: with
//!   `noeviction` a store into a full server gets `SERVER_ERROR out of memory
//!   storing object`; `allkeys-lru` gives memcached's behaviour (evict).

mod errors;
mod meta;
mod modify;
mod stats;
mod text;

use stats::metadump;

use crate::command::Shared;
use crate::net::connection::{prefetch_pipeline, PREFETCH_MAX};
use crate::net::stream::Stream;
use crate::net::turn::{self, Served};
use crate::services::clients::ClientHandle;
use bytes::BytesMut;
use futures::stream::{FuturesOrdered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use strata_protocol::memcache::reply as mr;
use strata_protocol::memcache::{self as mc, McFrame, McLimits};
use tokio::io::AsyncReadExt;

/// The version memcached clients are told (the protocol level we follow).
pub const VERSION: &str = "1.6.21";
/// The database memcached items live in.
const DB: usize = 0;
/// Relative exptimes end here (memcached's REALTIME_MAXDELTA: 30 days).
const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;
const OOM: &str = "SERVER_ERROR out of memory storing object";
const NON_NUMERIC: &str = "CLIENT_ERROR cannot increment or decrement non-numeric value";

/// What memcached answers a client that has not authenticated.
const UNAUTHENTICATED: &[u8] = b"CLIENT_ERROR unauthenticated\r\n";

/// Why the server must not start with this memcached port: memcached's
/// text protocol has no authentication, so while a password or ACL users
/// guard the RESP port (`guarded`) its clients would bypass them, unless
/// the operator says so (`memcached-allow-unauthenticated yes`).
pub fn refuse_unauthenticated(
    c: &crate::services::config::Config,
    guarded: bool,
) -> Option<String> {
    (c.memcached_port != 0 && guarded && !c.memcached_allow_unauthenticated).then(|| {
        format!(
            "memcached-port {} would let clients past the password: memcached's text protocol \
             has no authentication. Set memcached-port 0, or memcached-allow-unauthenticated yes \
             to serve it anyway",
            c.memcached_port
        )
    })
}

/// Whether memcached clients are refused now: a password or ACL users
/// guard the server (set since the start, by CONFIG SET or ACL SETUSER)
/// and `memcached-allow-unauthenticated` is no.
fn refused_now(shared: &Shared) -> bool {
    shared.acl.guarded() && !shared.config.read().memcached_allow_unauthenticated
}

/// memcached's exptime rule, as an absolute Unix time in ms (0 = never;
/// a time in the past makes the key expire at once).
pub fn expire_at_ms(exptime: i64) -> u64 {
    let now = strata_engine::clock::now_ms();
    if exptime == 0 {
        0
    } else if exptime < 0 {
        1
    } else if exptime <= REALTIME_MAXDELTA {
        now + exptime as u64 * 1000
    } else {
        (exptime as u64).saturating_mul(1000).max(1)
    }
}

type ReplyFuture = Pin<Box<dyn Future<Output = BytesMut> + Send>>;

/// What executing one request produced.
enum Done {
    Now,
    /// A reply that needs flash reads; `write` = a barrier.
    Later(ReplyFuture, bool),
    Close,
    /// `lru_crawler metadump`: streamed to the socket after the replies
    /// before it (it may be larger than any reply buffer should be).
    Metadump,
}

/// Serves one memcached connection (accepted by the shared accept loop).
/// A memcached connection's state at a quiet point, carried to another
/// loop (`net::loops`, invariant 2): the input not yet decoded.
pub struct Parked {
    inbuf: BytesMut,
    swallow: usize,
}

/// Serves a connection (from its start, or from where another loop
/// parked it) until it closes or is told to move.
pub async fn serve(
    shared: Arc<Shared>,
    stream: Stream,
    handle: Arc<ClientHandle>,
    resume: Option<Box<Parked>>,
) -> Served<Box<Parked>> {
    if resume.is_none() {
        shared.mc.curr_connections.fetch_add(1, Relaxed);
    }
    let served = serve_requests(&shared, stream, &handle, resume).await;
    if matches!(served, Served::Closed) {
        shared.mc.curr_connections.fetch_sub(1, Relaxed);
    }
    served
}

/// One memcached connection's state while a loop serves it.
struct McConn<'a> {
    shared: &'a Arc<Shared>,
    handle: &'a ClientHandle,
    stream: Stream,
    inbuf: BytesMut,
    /// Bytes of a refused value still to discard.
    swallow: usize,
    out: BytesMut,
    pending: FuturesOrdered<ReplyFuture>,
    /// Bytes at the input's front known to hold no line end
    /// (`mc::decode_from`); 0 whenever the front moves.
    searched: usize,
}

/// What ended a batch of requests.
enum Batch {
    /// Every complete request was served.
    Served,
    /// quit, or a request memcached closes the connection for.
    Close,
}

async fn serve_requests(
    shared: &Arc<Shared>,
    stream: Stream,
    handle: &ClientHandle,
    resume: Option<Box<Parked>>,
) -> Served<Box<Parked>> {
    let Parked { inbuf, swallow } = match resume {
        Some(p) => *p,
        None => {
            {
                use std::os::fd::AsRawFd;
                handle.fd.store(stream.tcp().as_raw_fd(), Relaxed);
            }
            Parked {
                inbuf: BytesMut::with_capacity(16 * 1024),
                swallow: 0,
            }
        }
    };
    let mut c = McConn {
        shared,
        handle,
        stream,
        inbuf,
        swallow,
        out: BytesMut::with_capacity(16 * 1024),
        pending: FuturesOrdered::new(),
        searched: 0,
    };
    // Input carried from another loop is served before the next read.
    let mut skip_read = !c.inbuf.is_empty();
    loop {
        if !std::mem::take(&mut skip_read) && !c.read().await {
            return Served::Closed;
        }
        if refused_now(shared) {
            // Nothing it sent is run: the RESP port needs a password now.
            let _ = c.stream.send_all(UNAUTHENTICATED).await;
            return Served::Closed;
        }
        let batch = match c.batch().await {
            Some(b) => b,
            None => return Served::Closed,
        };
        if !c.answer().await || matches!(batch, Batch::Close) {
            return Served::Closed;
        }
        // A quiet point (`net::loops`, invariant 2): the connection may move.
        // (A TLS one stays: `net::stream`, invariant 3.)
        if c.stream.is_tls() {
            continue;
        }
        if let Some(to) = turn::move_order() {
            let McConn {
                stream,
                inbuf,
                swallow,
                ..
            } = c;
            let state = Box::new(Parked { inbuf, swallow });
            let Ok(stream) = stream.into_tcp() else {
                return Served::Closed;
            };
            return Served::Moved { stream, state, to };
        }
    }
}

impl McConn<'_> {
    /// Reads what the client sent; false when the connection ends.
    async fn read(&mut self) -> bool {
        let read = tokio::select! {
            r = self.stream.read_buf(&mut self.inbuf) => r,
            _ = self.handle.killed() => return false,
            _ = self.shared.shutdown_signal() => return false,
        };
        match read {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.shared.mc.bytes_read.fetch_add(n as u64, Relaxed);
                true
            }
        }
    }

    /// Serves every complete request of the input, replies in order
    /// (pending ones queued behind those ready); None when the connection
    /// ends.
    async fn batch(&mut self) -> Option<Batch> {
        let shared = self.shared;
        let limits = McLimits {
            max_item_size: shared.config.read().memcached_max_item_size as usize,
            ..McLimits::default()
        };
        // Requests left before the next prefetch of the pipeline's keys.
        let mut ahead = 0usize;
        // Requests of this batch (the loop controller's rate).
        let mut served = 0usize;
        let mut batch = Batch::Served;
        loop {
            if ahead == 0 && self.swallow == 0 {
                let inbuf = &self.inbuf;
                ahead =
                    prefetch_pipeline(shared, DB, |f| mc::peek_keys(inbuf, PREFETCH_MAX, f)).max(1);
            }
            ahead = ahead.saturating_sub(1);
            if self.swallow > 0 {
                let n = self.swallow.min(self.inbuf.len());
                let _ = self.inbuf.split_to(n);
                self.searched = 0;
                self.swallow -= n;
                if self.swallow > 0 {
                    break;
                }
            }
            let Some(frame) = mc::decode_from(&mut self.inbuf, &limits, &mut self.searched) else {
                break;
            };
            served += 1;
            if let Done::Close = self.request(frame).await? {
                batch = Batch::Close;
                break;
            }
            if self.pending.len() >= 256 {
                drain(&mut self.pending, &mut self.out).await;
            }
        }
        turn::note_requests(served);
        Some(batch)
    }

    /// Serves one decoded frame: its reply in `out` (or queued behind the
    /// pending ones); None when the connection ends.
    async fn request(&mut self, frame: McFrame) -> Option<Done> {
        let shared = self.shared;
        // A reply ready now goes straight to `out` unless replies still
        // pending must precede it (then it waits in line, in order).
        let mut queued = BytesMut::new();
        let in_order = self.pending.is_empty();
        let now = if in_order { &mut self.out } else { &mut queued };
        let done = match frame {
            McFrame::Request(req) => {
                if shared.engine.is_loading() {
                    mr::line(now, "SERVER_ERROR loading the dataset");
                    Done::Now
                } else {
                    text::execute(shared, req, now).await
                }
            }
            McFrame::Reply(line) => {
                mr::line(now, line);
                Done::Now
            }
            McFrame::Swallow { reply, bytes } => {
                mr::line(now, reply);
                self.swallow = bytes;
                Done::Now
            }
            McFrame::Close(line) => {
                mr::line(now, line);
                Done::Close
            }
        };
        if !queued.is_empty() {
            self.pending.push_back(Box::pin(std::future::ready(queued)));
        }
        match done {
            Done::Now => Some(Done::Now),
            Done::Later(f, write) => {
                self.pending.push_back(f);
                if write {
                    drain(&mut self.pending, &mut self.out).await;
                }
                Some(Done::Now)
            }
            Done::Close => Some(Done::Close),
            Done::Metadump => {
                drain(&mut self.pending, &mut self.out).await;
                let written = self.out.len() as u64;
                self.stream.send_all(&self.out).await.ok()?;
                self.out.clear();
                let n = metadump(shared, &mut self.stream).await.ok()?;
                shared.mc.bytes_written.fetch_add(written + n, Relaxed);
                Some(Done::Now)
            }
        }
    }

    /// Sends the batch's replies once the pending ones are in; false when
    /// the connection ends.
    async fn answer(&mut self) -> bool {
        drain(&mut self.pending, &mut self.out).await;
        if self.out.is_empty() {
            return true;
        }
        turn::end_of_turn().await;
        if self.stream.send_all(&self.out).await.is_err() {
            return false;
        }
        let n = self.out.len() as u64;
        self.shared.mc.bytes_written.fetch_add(n, Relaxed);
        self.out.clear();
        true
    }
}

async fn drain(pending: &mut FuturesOrdered<ReplyFuture>, out: &mut BytesMut) {
    while let Some(r) = pending.next().await {
        out.extend_from_slice(&r);
    }
}

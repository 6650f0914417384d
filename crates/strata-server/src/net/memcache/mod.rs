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

mod meta;
mod modify;
mod stats;

use modify::{arith, concat, ArithOp, ArithResult};
pub use stats::McStats;
use stats::{inc, metadump, stats};

use crate::command::Shared;
use crate::net::connection::{prefetch_pipeline, PREFETCH_MAX};
use crate::net::loops::{self, Resume, Served};
use crate::net::stream::Stream;
use crate::services::clients::ClientHandle;
use bytes::{Bytes, BytesMut};
use futures::stream::{FuturesOrdered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use strata_engine::{EngineError, ExpireCond, ItemCond, ItemGet, NewItem, Read, StoreOutcome};
use strata_protocol::memcache::reply as mr;
use strata_protocol::memcache::{self as mc, McFrame, McLimits, McRequest, StoreMode};
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
) -> Served {
    if resume.is_none() {
        shared.mc.curr_connections.fetch_add(1, Relaxed);
    }
    let served = serve_requests(&shared, stream, &handle, resume).await;
    if matches!(served, Served::Closed) {
        shared.mc.curr_connections.fetch_sub(1, Relaxed);
    }
    served
}

async fn serve_requests(
    shared: &Arc<Shared>,
    mut stream: Stream,
    handle: &ClientHandle,
    resume: Option<Box<Parked>>,
) -> Served {
    let Parked {
        mut inbuf,
        mut swallow,
    } = match resume {
        Some(p) => *p,
        None => {
            {
                use std::os::fd::AsRawFd;
                handle.fd.store(stream.tcp().as_raw_fd(), Relaxed);
            }
            Parked {
                inbuf: BytesMut::with_capacity(16 * 1024),
                // Bytes of a refused value still to discard.
                swallow: 0,
            }
        }
    };
    let mut out = BytesMut::with_capacity(16 * 1024);
    let mut pending: FuturesOrdered<ReplyFuture> = FuturesOrdered::new();
    // Input carried from another loop is served before the next read.
    let mut skip_read = !inbuf.is_empty();
    // Bytes at the input's front known to hold no line end
    // (`mc::decode_from`); 0 whenever the front moves.
    let mut searched = 0usize;
    loop {
        if !std::mem::take(&mut skip_read) {
            let read = tokio::select! {
                r = stream.read_buf(&mut inbuf) => r,
                _ = handle.killed() => return Served::Closed,
                _ = shared.shutdown_signal() => return Served::Closed,
            };
            match read {
                Ok(0) | Err(_) => return Served::Closed,
                Ok(n) => {
                    shared.mc.bytes_read.fetch_add(n as u64, Relaxed);
                }
            }
        }
        if refused_now(shared) {
            // Nothing it sent is run: the RESP port needs a password now.
            let _ = stream.send_all(UNAUTHENTICATED).await;
            return Served::Closed;
        }
        let limits = McLimits {
            max_item_size: shared.config.read().memcached_max_item_size as usize,
            ..McLimits::default()
        };
        let mut close = false;
        // Requests left before the next prefetch of the pipeline's keys.
        let mut ahead = 0usize;
        // Requests of this batch (the loop controller's rate).
        let mut served = 0usize;
        loop {
            if ahead == 0 && swallow == 0 {
                ahead = prefetch_pipeline(shared, DB, |f| mc::peek_keys(&inbuf, PREFETCH_MAX, f))
                    .max(1);
            }
            ahead = ahead.saturating_sub(1);
            if swallow > 0 {
                let n = swallow.min(inbuf.len());
                let _ = inbuf.split_to(n);
                searched = 0;
                swallow -= n;
                if swallow > 0 {
                    break;
                }
            }
            let Some(frame) = mc::decode_from(&mut inbuf, &limits, &mut searched) else {
                break;
            };
            served += 1;
            // A reply ready now goes straight to `out` unless replies still
            // pending must precede it (then it waits in line, in order).
            let mut queued = BytesMut::new();
            let in_order = pending.is_empty();
            let now = if in_order { &mut out } else { &mut queued };
            let done = match frame {
                McFrame::Request(req) => {
                    if shared.engine.is_loading() {
                        mr::line(now, "SERVER_ERROR loading the dataset");
                        Done::Now
                    } else {
                        execute(shared, req, now).await
                    }
                }
                McFrame::Reply(line) => {
                    mr::line(now, line);
                    Done::Now
                }
                McFrame::Swallow { reply, bytes } => {
                    mr::line(now, reply);
                    swallow = bytes;
                    Done::Now
                }
                McFrame::Close(line) => {
                    mr::line(now, line);
                    Done::Close
                }
            };
            if !queued.is_empty() {
                pending.push_back(Box::pin(std::future::ready(queued)));
            }
            match done {
                Done::Now => {}
                Done::Later(f, write) => {
                    pending.push_back(f);
                    if write {
                        drain(&mut pending, &mut out).await;
                    }
                }
                Done::Close => {
                    close = true;
                    break;
                }
                Done::Metadump => {
                    drain(&mut pending, &mut out).await;
                    let written = out.len() as u64;
                    if stream.send_all(&out).await.is_err() {
                        return Served::Closed;
                    }
                    out.clear();
                    match metadump(shared, &mut stream).await {
                        Ok(n) => {
                            shared.mc.bytes_written.fetch_add(written + n, Relaxed);
                        }
                        Err(_) => return Served::Closed,
                    }
                }
            }
            if pending.len() >= 256 {
                drain(&mut pending, &mut out).await;
            }
        }
        loops::note_requests(served);
        drain(&mut pending, &mut out).await;
        if !out.is_empty() {
            loops::end_of_turn().await;
            if stream.send_all(&out).await.is_err() {
                return Served::Closed;
            }
            shared.mc.bytes_written.fetch_add(out.len() as u64, Relaxed);
            out.clear();
        }
        if close {
            return Served::Closed;
        }
        // A quiet point (`net::loops`, invariant 2): the connection may move.
        // (A TLS one stays: `net::stream`, invariant 3.)
        if stream.is_tls() {
            continue;
        }
        if let Some(to) = loops::move_order() {
            let state = Resume::Memcached(Box::new(Parked { inbuf, swallow }));
            let Ok(stream) = stream.into_tcp() else {
                return Served::Closed;
            };
            return Served::Moved { stream, state, to };
        }
    }
}

async fn drain(pending: &mut FuturesOrdered<ReplyFuture>, out: &mut BytesMut) {
    while let Some(r) = pending.next().await {
        out.extend_from_slice(&r);
    }
}

/// Admission of a store (as the RESP side's `denyoom`): Err(line) when the
/// write must be refused.
async fn admit(shared: &Shared) -> Result<(), String> {
    shared
        .admit_write(shared.engine.admission())
        .await
        .map_err(|r| match r {
            crate::command::Refusal::OutOfMemory => OOM.to_string(),
            crate::command::Refusal::Log(why) => format!("SERVER_ERROR {why}"),
        })
}

fn engine_error(out: &mut BytesMut, e: &EngineError) {
    mr::line(out, &format!("SERVER_ERROR {e}"));
}

async fn execute(shared: &Arc<Shared>, req: McRequest, out: &mut BytesMut) -> Done {
    let st = &shared.mc;
    match req {
        McRequest::Get {
            keys,
            with_cas,
            touch,
        } => {
            let touch_at = touch.map(expire_at_ms);
            let mut reads = Vec::with_capacity(keys.len());
            for key in keys {
                inc(&st.cmd_get);
                if touch.is_some() {
                    inc(&st.cmd_touch);
                }
                let opts = ItemGet {
                    touch: touch_at,
                    ..ItemGet::default()
                };
                reads.push((key.clone(), shared.engine.get_item(DB, &key, opts)));
            }
            // All in RAM: the reply is written now, with no future.
            if reads.iter().all(|(_, r)| r.is_ready()) {
                let results = reads
                    .into_iter()
                    .filter_map(|(k, r)| Some((k, r.into_ready()?)));
                get_reply(st, out, results, with_cas, touch.is_some());
                return Done::Now;
            }
            let s = shared.clone();
            let fut = async move {
                let mut results = Vec::with_capacity(reads.len());
                for (key, r) in reads {
                    results.push((key, r.wait().await));
                }
                let mut out = BytesMut::new();
                get_reply(&s.mc, &mut out, results, with_cas, touch.is_some());
                out
            };
            Done::Later(Box::pin(fut), false)
        }
        McRequest::Store {
            mode,
            key,
            flags,
            exptime,
            data,
            cas,
            noreply,
        } => {
            inc(&st.cmd_set);
            if let Err(e) = admit(shared).await {
                reply_unless(out, noreply, &e);
                return Done::Now;
            }
            let at = expire_at_ms(exptime);
            let cond = match mode {
                StoreMode::Set => ItemCond::Always,
                StoreMode::Add => ItemCond::Missing,
                StoreMode::Replace => ItemCond::Exists,
                StoreMode::Cas => ItemCond::Cas(cas),
                StoreMode::Append | StoreMode::Prepend => {
                    let read = concat(shared, key, data, mode == StoreMode::Append, None, None);
                    return later_line(read, noreply, true);
                }
            };
            let item = NewItem {
                value: &data,
                client_flags: flags,
                expire_at_ms: at,
                explicit_cas: None,
            };
            let r = shared.engine.store_item(DB, &key, item, cond);
            if matches!(r, StoreOutcome::Stored(_)) {
                inc(&st.total_items);
            }
            if mode == StoreMode::Cas {
                match r {
                    StoreOutcome::Stored(_) => inc(&st.cas_hits),
                    StoreOutcome::Exists => inc(&st.cas_badval),
                    _ => inc(&st.cas_misses),
                }
            }
            reply_unless(out, noreply, outcome_word(r));
            Done::Now
        }
        McRequest::Delete { key, noreply } => {
            let hit = shared.engine.delete(DB, &key);
            inc(if hit {
                &st.delete_hits
            } else {
                &st.delete_misses
            });
            reply_unless(out, noreply, if hit { "DELETED" } else { "NOT_FOUND" });
            Done::Now
        }
        McRequest::Arith {
            key,
            incr,
            delta,
            noreply,
        } => {
            let op = ArithOp {
                incr,
                delta,
                ..ArithOp::default()
            };
            let read = arith(shared, key, op);
            let s = shared.clone();
            let fut = async move {
                let mut out = BytesMut::new();
                match read.wait().await {
                    Ok((ArithResult::Done { value, .. }, _)) => {
                        s.mc.count_arith(incr, true);
                        if !noreply {
                            mr::number(&mut out, value);
                        }
                    }
                    Ok((ArithResult::Missing | ArithResult::CasMismatch, _)) => {
                        s.mc.count_arith(incr, false);
                        reply_unless(&mut out, noreply, "NOT_FOUND");
                    }
                    Ok((ArithResult::NonNumeric, _)) => {
                        reply_unless(&mut out, noreply, NON_NUMERIC)
                    }
                    Err(e) => engine_error(&mut out, &e),
                }
                out
            };
            Done::Later(Box::pin(fut), true)
        }
        McRequest::Touch {
            key,
            exptime,
            noreply,
        } => {
            inc(&st.cmd_touch);
            let hit = shared
                .engine
                .expire(DB, &key, expire_at_ms(exptime), ExpireCond::Always);
            inc(if hit {
                &st.touch_hits
            } else {
                &st.touch_misses
            });
            reply_unless(out, noreply, if hit { "TOUCHED" } else { "NOT_FOUND" });
            Done::Now
        }
        McRequest::FlushAll { delay, noreply } => {
            inc(&st.cmd_flush);
            if delay <= 0 {
                shared.engine.flush_db(DB);
            } else {
                let engine = shared.engine.clone();
                let wait =
                    (expire_at_ms(delay).saturating_sub(strata_engine::clock::now_ms())).max(1);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    engine.flush_db(DB);
                });
            }
            reply_unless(out, noreply, "OK");
            Done::Now
        }
        McRequest::Version => {
            mr::line(out, &format!("VERSION {VERSION}"));
            Done::Now
        }
        McRequest::Verbosity { noreply } => {
            reply_unless(out, noreply, "OK");
            Done::Now
        }
        McRequest::Quit => Done::Close,
        McRequest::Metadump => Done::Metadump,
        McRequest::Stats { args } => {
            stats(shared, &args, out);
            Done::Now
        }
        McRequest::Meta {
            cmd,
            key,
            base64_key,
            flags,
            data,
        } => meta::meta(shared, cmd, key, base64_key, flags, data, out).await,
    }
}

/// The reply of get / gets / gat / gats, from each key's result.
fn get_reply(
    st: &McStats,
    out: &mut BytesMut,
    results: impl IntoIterator<Item = (Bytes, Result<Option<strata_engine::Item>, EngineError>)>,
    with_cas: bool,
    touch: bool,
) {
    let start = out.len();
    for (key, r) in results {
        match r {
            Ok(Some(item)) => {
                inc(&st.get_hits);
                if touch {
                    inc(&st.touch_hits);
                }
                mr::value(
                    out,
                    &key,
                    item.client_flags,
                    &item.value,
                    with_cas.then_some(item.cas),
                );
            }
            Ok(None) => {
                inc(&st.get_misses);
                if touch {
                    inc(&st.touch_misses);
                }
            }
            Err(e) => {
                // memcached has no per-key error in a multi-get: the whole
                // reply becomes the error.
                out.truncate(start);
                engine_error(out, &e);
                return;
            }
        }
    }
    mr::end(out);
}

fn reply_unless(out: &mut BytesMut, noreply: bool, line: &str) {
    if !noreply {
        mr::line(out, line);
    }
}

fn outcome_word(r: StoreOutcome) -> &'static str {
    match r {
        StoreOutcome::Stored(_) => "STORED",
        StoreOutcome::NotStored => "NOT_STORED",
        StoreOutcome::Exists => "EXISTS",
        StoreOutcome::NotFound => "NOT_FOUND",
    }
}

fn later_line(read: Read<Result<&'static str, EngineError>>, noreply: bool, write: bool) -> Done {
    Done::Later(
        Box::pin(async move {
            let mut out = BytesMut::new();
            match read.wait().await {
                Ok(line) => reply_unless(&mut out, noreply, line),
                Err(e) => engine_error(&mut out, &e),
            }
            out
        }),
        write,
    )
}

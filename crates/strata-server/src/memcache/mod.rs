//! The Memcached listener (`memcached-port`): text and meta protocols over
//! the same tiered engine, on database 0 of the RESP side.
//!
//! - A value set over one protocol is readable over the other. Client flags
//!   are kept with the item (RESP writes of a new value reset them to 0;
//!   APPEND/INCR over RESP keep them); the CAS of an item is its version,
//!   which changes whenever the value does, or one a client set (meta `E`).
//! - The text protocol is here; the meta commands are in `meta`.
//! - exptime follows memcached: 0 = never, up to 30 days = relative
//!   seconds, beyond = an absolute Unix time, negative = already expired.
//! - Replies go out in request order; a cold `get` is one flash read, with
//!   all reads of a pipeline in flight together; a pending read-modify-write
//!   (append, incr ... of a cold value) is a barrier, as on the RESP side.
//! - `maxmemory-policy` applies to memcached items as to every key: with
//!   `noeviction` a store into a full server gets `SERVER_ERROR out of memory
//!   storing object`; `allkeys-lru` gives memcached's behaviour (evict).

mod meta;

use crate::clients::ClientHandle;
use crate::Shared;
use bytes::{Bytes, BytesMut};
use futures::stream::{FuturesOrdered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use strata_engine::{
    Current, EngineError, ExpireCond, ExpireUpdate, ItemCond, ItemGet, ItemState, Mutation,
    NewItem, Read, StoreOutcome,
};
use strata_protocol::memcache::reply as mr;
use strata_protocol::memcache::{self as mc, McFrame, McLimits, McRequest, StoreMode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The version memcached clients are told (the protocol level we follow).
pub const VERSION: &str = "1.6.21";
/// The database memcached items live in.
const DB: usize = 0;
/// Relative exptimes end here (memcached's REALTIME_MAXDELTA: 30 days).
const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;
const OOM: &str = "SERVER_ERROR out of memory storing object";
const NON_NUMERIC: &str = "CLIENT_ERROR cannot increment or decrement non-numeric value";

/// memcached's general counters (those the engine does not keep).
#[derive(Default)]
pub struct McStats {
    pub total_connections: AtomicU64,
    pub cmd_get: AtomicU64,
    pub cmd_set: AtomicU64,
    pub cmd_touch: AtomicU64,
    pub cmd_flush: AtomicU64,
    pub get_hits: AtomicU64,
    pub get_misses: AtomicU64,
    pub delete_hits: AtomicU64,
    pub delete_misses: AtomicU64,
    pub incr_hits: AtomicU64,
    pub incr_misses: AtomicU64,
    pub decr_hits: AtomicU64,
    pub decr_misses: AtomicU64,
    pub cas_hits: AtomicU64,
    pub cas_misses: AtomicU64,
    pub cas_badval: AtomicU64,
    pub touch_hits: AtomicU64,
    pub touch_misses: AtomicU64,
    pub total_items: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub curr_connections: AtomicU64,
}

fn inc(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

impl McStats {
    /// `stats reset`: every counter back to 0 (the open-connection gauge
    /// stays).
    fn reset(&self) {
        for c in [
            &self.total_connections,
            &self.cmd_get,
            &self.cmd_set,
            &self.cmd_touch,
            &self.cmd_flush,
            &self.get_hits,
            &self.get_misses,
            &self.delete_hits,
            &self.delete_misses,
            &self.incr_hits,
            &self.incr_misses,
            &self.decr_hits,
            &self.decr_misses,
            &self.cas_hits,
            &self.cas_misses,
            &self.cas_badval,
            &self.touch_hits,
            &self.touch_misses,
            &self.total_items,
            &self.bytes_read,
            &self.bytes_written,
        ] {
            c.store(0, Relaxed);
        }
    }

    /// incr/decr (text or meta) found its key or not.
    fn count_arith(&self, incr: bool, hit: bool) {
        inc(match (incr, hit) {
            (true, true) => &self.incr_hits,
            (true, false) => &self.incr_misses,
            (false, true) => &self.decr_hits,
            (false, false) => &self.decr_misses,
        });
    }
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
pub async fn serve(shared: Arc<Shared>, stream: TcpStream, handle: Arc<ClientHandle>) {
    shared.mc.curr_connections.fetch_add(1, Relaxed);
    serve_requests(&shared, stream, &handle).await;
    shared.mc.curr_connections.fetch_sub(1, Relaxed);
}

async fn serve_requests(shared: &Arc<Shared>, mut stream: TcpStream, handle: &ClientHandle) {
    let _ = stream.set_nodelay(true);
    let mut inbuf = BytesMut::with_capacity(16 * 1024);
    let mut out = BytesMut::with_capacity(16 * 1024);
    let mut pending: FuturesOrdered<ReplyFuture> = FuturesOrdered::new();
    // Bytes of a refused value still to discard.
    let mut swallow = 0usize;
    loop {
        let read = tokio::select! {
            r = stream.read_buf(&mut inbuf) => r,
            _ = handle.killed() => return,
            _ = shared.shutdown_signal() => return,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                shared.mc.bytes_read.fetch_add(n as u64, Relaxed);
            }
        }
        let limits = McLimits {
            max_item_size: shared.config.read().memcached_max_item_size as usize,
            ..McLimits::default()
        };
        let mut close = false;
        loop {
            if swallow > 0 {
                let n = swallow.min(inbuf.len());
                let _ = inbuf.split_to(n);
                swallow -= n;
                if swallow > 0 {
                    break;
                }
            }
            let Some(frame) = mc::decode(&mut inbuf, &limits) else {
                break;
            };
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
                    if stream.write_all(&out).await.is_err() {
                        return;
                    }
                    out.clear();
                    match metadump(shared, &mut stream).await {
                        Ok(n) => {
                            shared.mc.bytes_written.fetch_add(written + n, Relaxed);
                        }
                        Err(_) => return,
                    }
                }
            }
            if pending.len() >= 256 {
                drain(&mut pending, &mut out).await;
            }
        }
        drain(&mut pending, &mut out).await;
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            shared.mc.bytes_written.fetch_add(out.len() as u64, Relaxed);
            out.clear();
        }
        if close {
            return;
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
            crate::Refusal::OutOfMemory => OOM.to_string(),
            crate::Refusal::Log(why) => format!("SERVER_ERROR {why}"),
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

/// append / prepend: STORED, NOT_STORED when the key is missing, EXISTS
/// when `cas` is given and differs; the item keeps its flags and TTL and
/// takes `explicit_cas` (meta `E`) if given.
fn concat(
    shared: &Shared,
    key: Bytes,
    data: Bytes,
    append: bool,
    cas: Option<u64>,
    explicit_cas: Option<u64>,
) -> Read<Result<&'static str, EngineError>> {
    shared
        .engine
        .update(DB, &key, move |cur: Option<Current<'_>>| match cur {
            None => (Mutation::None, "NOT_STORED"),
            Some(c) if cas.is_some_and(|x| x != c.cas) => (Mutation::None, "EXISTS"),
            Some(c) => {
                let mut v = BytesMut::with_capacity(c.value.len() + data.len());
                if append {
                    v.extend_from_slice(c.value);
                    v.extend_from_slice(&data);
                } else {
                    v.extend_from_slice(&data);
                    v.extend_from_slice(c.value);
                }
                (
                    Mutation::SetItem {
                        value: v.freeze(),
                        expire: ExpireUpdate::Keep,
                        client_flags: c.client_flags,
                        explicit_cas,
                    },
                    "STORED",
                )
            }
        })
}

/// One incr / decr (text) or `ma` (meta).
#[derive(Clone, Copy, Debug, Default)]
struct ArithOp {
    incr: bool,
    delta: u64,
    /// Auto-create a missing key (`N`, `J`): initial value, absolute expiry.
    create: Option<(u64, u64)>,
    /// Only if the item has this CAS (`C`).
    cas: Option<u64>,
    /// New TTL on success (`T`): absolute ms, 0 = none.
    expire_at_ms: Option<u64>,
    /// The CAS to give the item (`E`).
    explicit_cas: Option<u64>,
}

/// What an arithmetic did.
#[derive(Clone, Copy, Debug)]
enum ArithResult {
    /// The new value (after auto-create, the initial one), and the item's
    /// expiry before the operation.
    Done {
        value: u64,
        expire_before: u64,
    },
    Missing,
    CasMismatch,
    NonNumeric,
}

fn expire_update(at: u64) -> ExpireUpdate {
    if at == 0 {
        ExpireUpdate::Clear
    } else {
        ExpireUpdate::At(at)
    }
}

/// incr / decr / ma, and the item's state after it. incr wraps at 2^64,
/// decr stops at 0, as memcached.
fn arith(
    shared: &Shared,
    key: Bytes,
    op: ArithOp,
) -> Read<Result<(ArithResult, Option<ItemState>), EngineError>> {
    shared
        .engine
        .update_item(DB, &key, move |cur: Option<Current<'_>>| match cur {
            None => match op.create {
                Some((initial, expire_at)) => (
                    Mutation::SetItem {
                        value: Bytes::from(initial.to_string()),
                        expire: expire_update(expire_at),
                        client_flags: 0,
                        explicit_cas: op.explicit_cas,
                    },
                    ArithResult::Done {
                        value: initial,
                        expire_before: expire_at,
                    },
                ),
                None => (Mutation::None, ArithResult::Missing),
            },
            Some(c) if op.cas.is_some_and(|x| x != c.cas) => {
                (Mutation::None, ArithResult::CasMismatch)
            }
            Some(c) => {
                let text = std::str::from_utf8(c.value).unwrap_or("");
                match text.trim_end_matches(' ').parse::<u64>() {
                    Ok(n) if c.value.len() <= 20 => {
                        let v = if op.incr {
                            n.wrapping_add(op.delta)
                        } else {
                            n.saturating_sub(op.delta)
                        };
                        // As memcached, a shorter result keeps the item's
                        // length, padded with spaces (an in-place rewrite).
                        let mut text = v.to_string();
                        while text.len() < c.value.len() {
                            text.push(' ');
                        }
                        (
                            Mutation::SetItem {
                                value: Bytes::from(text),
                                expire: op.expire_at_ms.map_or(ExpireUpdate::Keep, expire_update),
                                client_flags: c.client_flags,
                                explicit_cas: op.explicit_cas,
                            },
                            ArithResult::Done {
                                value: v,
                                expire_before: c.expire_at_ms,
                            },
                        )
                    }
                    _ => (Mutation::None, ArithResult::NonNumeric),
                }
            }
        })
}

/// `lru_crawler metadump`: a line per live item of database 0 in
/// memcached's format (`key=<uri-encoded> exp=<unix s or -1> la=<unix s>
/// cas=… fetch=yes|no cls=1 size=<value bytes>`), then `END`. The keyspace
/// is scanned in batches and written as it goes; items changed meanwhile
/// may or may not appear, as with memcached's crawler. Returns the bytes
/// written.
async fn metadump(shared: &Shared, stream: &mut TcpStream) -> std::io::Result<u64> {
    let now_s = strata_engine::clock::now_ms() / 1000;
    let mut cursor = 0;
    let mut chunk = BytesMut::new();
    let mut written = 0;
    loop {
        let (next, keys) = shared.engine.scan(DB, cursor, 1024, |_, t| {
            t == strata_engine::ValueType::String
        });
        for key in keys {
            let Some(i) = shared.engine.key_info(DB, &key) else {
                continue;
            };
            chunk.extend_from_slice(b"key=");
            uri_encode(&mut chunk, &key);
            let exp = if i.expire_at_ms == 0 {
                "-1".to_string()
            } else {
                (i.expire_at_ms / 1000).to_string()
            };
            chunk.extend_from_slice(
                format!(
                    " exp={exp} la={} cas={} fetch={} cls=1 size={}\n",
                    now_s.saturating_sub(i.idle_secs),
                    i.cas,
                    if i.fetched { "yes" } else { "no" },
                    i.value_len
                )
                .as_bytes(),
            );
        }
        if next == 0 {
            break;
        }
        cursor = next;
        if chunk.len() >= 64 * 1024 {
            stream.write_all(&chunk).await?;
            written += chunk.len() as u64;
            chunk.clear();
        }
    }
    chunk.extend_from_slice(b"END\r\n");
    stream.write_all(&chunk).await?;
    Ok(written + chunk.len() as u64)
}

/// memcached's URI encoding of keys in metadump lines: every byte but
/// `A-Z a-z 0-9 - . _ ~` as `%XX`.
fn uri_encode(out: &mut BytesMut, key: &[u8]) {
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.extend_from_slice(&[b]);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
}

/// `stats` and `stats settings`.
fn stats(shared: &Shared, args: &[Bytes], out: &mut BytesMut) {
    let mut lines: Vec<(&str, String)> = Vec::new();
    let mut put = |k: &'static str, v: String| lines.push((k, v));
    let cfg = shared.config.read().clone();
    match args.first().map(|a| &a[..]) {
        None => {
            let st = &shared.mc;
            let t = shared.engine.tiered_info();
            let g = |c: &AtomicU64| c.load(Relaxed).to_string();
            let now = strata_engine::clock::now_ms() / 1000;
            put("pid", std::process::id().to_string());
            put("uptime", shared.started.elapsed().as_secs().to_string());
            put("time", now.to_string());
            put("version", VERSION.to_string());
            put("libevent", "tokio".to_string());
            put(
                "pointer_size",
                (8 * std::mem::size_of::<usize>()).to_string(),
            );
            let [(user, sys), _] = crate::info::cpu_times();
            put("rusage_user", crate::info::seconds_micros(user));
            put("rusage_system", crate::info::seconds_micros(sys));
            put("curr_connections", g(&st.curr_connections));
            put("total_connections", g(&st.total_connections));
            put("cmd_get", g(&st.cmd_get));
            put("cmd_set", g(&st.cmd_set));
            put("cmd_flush", g(&st.cmd_flush));
            put("cmd_touch", g(&st.cmd_touch));
            put("get_hits", g(&st.get_hits));
            put("get_misses", g(&st.get_misses));
            put("get_expired", shared.engine.get_expired().to_string());
            put("delete_misses", g(&st.delete_misses));
            put("delete_hits", g(&st.delete_hits));
            put("incr_misses", g(&st.incr_misses));
            put("incr_hits", g(&st.incr_hits));
            put("decr_misses", g(&st.decr_misses));
            put("decr_hits", g(&st.decr_hits));
            put("cas_misses", g(&st.cas_misses));
            put("cas_hits", g(&st.cas_hits));
            put("cas_badval", g(&st.cas_badval));
            put("touch_hits", g(&st.touch_hits));
            put("touch_misses", g(&st.touch_misses));
            put("bytes_read", g(&st.bytes_read));
            put("bytes_written", g(&st.bytes_written));
            put("limit_maxbytes", limit_maxbytes(&cfg).to_string());
            put("threads", shared.threads().to_string());
            put("bytes", (t.hot_bytes + t.cold_bytes).to_string());
            put("curr_items", shared.engine.dbsize(DB).to_string());
            put("total_items", g(&st.total_items));
            put("evictions", t.evicted_keys.to_string());
            // Tiering, named like memcached's extstore counters where they map.
            put(
                "extstore_objects_written",
                (t.stashes + t.free_demotions).to_string(),
            );
            put("extstore_bytes_written", t.stash_bytes.to_string());
            put("extstore_objects_read", t.fetches.to_string());
            put("extstore_objects_used", t.values_in_flash.to_string());
            put("extstore_bytes_used", t.flash_live_bytes.to_string());
            put("extstore_limit_maxbytes", t.capacity_bytes.to_string());
            put("extstore_io_queue", t.pending_reads.to_string());
            put("get_extstore", t.ram_misses.to_string());
            put("get_aborted_extstore", t.read_errors.to_string());
            put("ram_hit_ratio", format!("{:.4}", t.ram_hit_ratio()));
            put("values_in_ram", t.values_in_ram.to_string());
            put("values_in_flash", t.values_in_flash.to_string());
        }
        Some(b"settings") => {
            put("maxbytes", limit_maxbytes(&cfg).to_string());
            put("maxconns", cfg.maxclients.to_string());
            put("tcpport", cfg.memcached_port.to_string());
            put("udpport", "0".to_string());
            put(
                "evictions",
                if cfg.maxmemory_policy_evicts() {
                    "on"
                } else {
                    "off"
                }
                .to_string(),
            );
            put("item_size_max", cfg.memcached_max_item_size.to_string());
            put("cas_enabled", "yes".to_string());
            put("num_threads", shared.threads().to_string());
            put("binding_protocol", "ascii".to_string());
            put("ext_item_size", cfg.tiering_min_value_size.to_string());
            put("ext_path", cfg.flash_dir().display().to_string());
            put("maxmemory_ram", cfg.maxmemory_ram.to_string());
        }
        // The slab groups describe memcached's slab allocator, which Strata
        // does not have: no slab classes (so no per-class lines), and the
        // memory the server holds (allocator-measured, as INFO used_memory)
        // as `total_malloced`. Monitoring tools (the Prometheus exporter
        // asks for `stats`, `stats slabs` and `stats items` in a row) get
        // well-formed answers.
        Some(b"items") => {}
        Some(b"slabs") => {
            put("active_slabs", "0".to_string());
            let used = crate::alloc::allocated_bytes().unwrap_or_else(|| shared.engine.ram_used());
            put("total_malloced", used.to_string());
        }
        Some(b"sizes") => put("sizes_status", "disabled".to_string()),
        Some(b"reset") => {
            shared.mc.reset();
            mr::line(out, "RESET");
            return;
        }
        Some(_) => {
            // conns, detail ...: not offered.
            mr::line(out, "ERROR");
            return;
        }
    }
    for (k, v) in lines {
        mr::line(out, &format!("STAT {k} {v}"));
    }
    mr::line(out, "END");
}

/// memcached's `limit_maxbytes`: the whole store's limit (`maxmemory`), or
/// the RAM budget when there is none.
fn limit_maxbytes(cfg: &crate::config::Config) -> u64 {
    if cfg.maxmemory > 0 {
        cfg.maxmemory
    } else {
        cfg.maxmemory_ram
    }
}

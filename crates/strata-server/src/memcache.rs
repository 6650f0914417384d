//! The Memcached listener (`memcached-port`): text and meta protocols over
//! the same tiered engine, on database 0 of the RESP side.
//!
//! - A value set over one protocol is readable over the other. Client flags
//!   are kept with the item (RESP writes of a new value reset them to 0;
//!   APPEND/INCR over RESP keep them); the CAS of an item is its version,
//!   which changes whenever the value does.
//! - exptime follows memcached: 0 = never, up to 30 days = relative
//!   seconds, beyond = an absolute Unix time, negative = already expired.
//! - Replies go out in request order; a cold `get` is one flash read, with
//!   all reads of a pipeline in flight together; a pending read-modify-write
//!   (append, incr ... of a cold value) is a barrier, as on the RESP side.
//! - `maxmemory-policy` applies to memcached items as to every key: with
//!   `noeviction` a store into a full server gets `SERVER_ERROR out of memory
//!   storing object`; `allkeys-lru` gives memcached's behaviour (evict).

use crate::clients::ClientHandle;
use crate::Shared;
use bytes::{Bytes, BytesMut};
use futures::stream::{FuturesOrdered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use strata_engine::{Current, EngineError, ExpireCond, ItemCond, Mutation, Read, StoreOutcome};
use strata_protocol::memcache::reply::{self as mr, MetaOut};
use strata_protocol::memcache::{
    self as mc, McFrame, McLimits, McRequest, MetaCmd, MetaFlag, StoreMode,
};
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
            let mut now = BytesMut::new();
            let done = match frame {
                McFrame::Request(req) => {
                    if shared.engine.is_loading() {
                        mr::line(&mut now, "SERVER_ERROR loading the dataset");
                        Done::Now
                    } else {
                        execute(shared, req, &mut now).await
                    }
                }
                McFrame::Reply(line) => {
                    mr::line(&mut now, line);
                    Done::Now
                }
                McFrame::Swallow { reply, bytes } => {
                    mr::line(&mut now, reply);
                    swallow = bytes;
                    Done::Now
                }
                McFrame::Close(line) => {
                    mr::line(&mut now, line);
                    Done::Close
                }
            };
            if !now.is_empty() {
                if pending.is_empty() {
                    out.extend_from_slice(&now);
                } else {
                    pending.push_back(Box::pin(std::future::ready(now)));
                }
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
                reads.push((key.clone(), shared.engine.get_item(DB, &key, touch_at)));
            }
            let s = shared.clone();
            let fut = async move {
                let mut out = BytesMut::new();
                for (key, r) in reads {
                    match r.wait().await {
                        Ok(Some(item)) => {
                            inc(&s.mc.get_hits);
                            if touch.is_some() {
                                inc(&s.mc.touch_hits);
                            }
                            mr::value(
                                &mut out,
                                &key,
                                item.client_flags,
                                &item.value,
                                with_cas.then_some(item.cas),
                            );
                        }
                        Ok(None) => {
                            inc(&s.mc.get_misses);
                            if touch.is_some() {
                                inc(&s.mc.touch_misses);
                            }
                        }
                        Err(e) => {
                            // memcached has no per-key error in a multi-get:
                            // the whole reply becomes the error.
                            out.clear();
                            engine_error(&mut out, &e);
                            return out;
                        }
                    }
                }
                mr::end(&mut out);
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
                    let read = concat(shared, key, data, mode == StoreMode::Append);
                    return later_line(read, noreply, true);
                }
            };
            let r = shared.engine.store_item(DB, &key, &data, flags, at, cond);
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
            let read = arith(shared, key, incr, delta, None);
            let s = shared.clone();
            let fut = async move {
                let mut out = BytesMut::new();
                match read.wait().await {
                    Ok(Ok(Some(v))) => {
                        s.mc.count_arith(incr, true);
                        if !noreply {
                            mr::number(&mut out, v);
                        }
                    }
                    Ok(Ok(None)) => {
                        s.mc.count_arith(incr, false);
                        reply_unless(&mut out, noreply, "NOT_FOUND");
                    }
                    Ok(Err(line)) => reply_unless(&mut out, noreply, line),
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
        } => meta(shared, cmd, key, base64_key, flags, data, out).await,
    }
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

/// append / prepend: STORED, or NOT_STORED when the key is missing; the
/// item keeps its flags and TTL.
fn concat(
    shared: &Shared,
    key: Bytes,
    data: Bytes,
    append: bool,
) -> Read<Result<&'static str, EngineError>> {
    shared
        .engine
        .update(DB, &key, move |cur: Option<Current<'_>>| match cur {
            None => (Mutation::None, "NOT_STORED"),
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
                    Mutation::Set {
                        value: v.freeze(),
                        expire: strata_engine::ExpireUpdate::Keep,
                    },
                    "STORED",
                )
            }
        })
}

/// incr / decr (and meta `ma`): Ok(Some(new value)), Ok(None) = missing
/// (after auto-create with `create`, the initial value), Err(line) = not a
/// number. incr wraps at 2^64, decr stops at 0, as memcached.
#[allow(clippy::type_complexity)]
fn arith(
    shared: &Shared,
    key: Bytes,
    incr: bool,
    delta: u64,
    create: Option<(u64, u64)>,
) -> Read<Result<Result<Option<u64>, &'static str>, EngineError>> {
    shared
        .engine
        .update(DB, &key, move |cur: Option<Current<'_>>| match cur {
            None => match create {
                Some((initial, expire_at)) => (
                    Mutation::SetItem {
                        value: Bytes::from(initial.to_string()),
                        expire: if expire_at == 0 {
                            strata_engine::ExpireUpdate::Clear
                        } else {
                            strata_engine::ExpireUpdate::At(expire_at)
                        },
                        client_flags: 0,
                    },
                    Ok(Some(initial)),
                ),
                None => (Mutation::None, Ok(None)),
            },
            Some(c) => {
                let text = std::str::from_utf8(c.value).unwrap_or("");
                match text.trim_end_matches(' ').parse::<u64>() {
                    Ok(n) if c.value.len() <= 20 => {
                        let v = if incr {
                            n.wrapping_add(delta)
                        } else {
                            n.saturating_sub(delta)
                        };
                        // As memcached, a shorter result keeps the item's
                        // length, padded with spaces (an in-place rewrite).
                        let mut text = v.to_string();
                        while text.len() < c.value.len() {
                            text.push(' ');
                        }
                        (
                            Mutation::Set {
                                value: Bytes::from(text),
                                expire: strata_engine::ExpireUpdate::Keep,
                            },
                            Ok(Some(v)),
                        )
                    }
                    _ => (Mutation::None, Err(NON_NUMERIC)),
                }
            }
        })
}

fn flag(flags: &[MetaFlag], f: u8) -> Option<&MetaFlag> {
    flags.iter().find(|x| x.flag == f)
}

fn num_token(flags: &[MetaFlag], f: u8) -> Result<Option<i64>, ()> {
    match flag(flags, f) {
        None => Ok(None),
        Some(m) => std::str::from_utf8(&m.token)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .map(Some)
            .ok_or(()),
    }
}

/// Echoes the flags every meta reply returns: O (opaque), k (key), b.
/// Echoes the flags every meta reply returns, in request order as
/// memcached does: O (opaque) and k (key; with b, base64 and a `b`).
fn echo(m: &mut MetaOut<'_>, flags: &[MetaFlag], key: &[u8], base64_key: bool) {
    for f in flags {
        echo_one(m, f, key, base64_key);
    }
}

fn echo_one(m: &mut MetaOut<'_>, f: &MetaFlag, key: &[u8], base64_key: bool) {
    match f.flag {
        b'O' => m.token(b'O', &f.token),
        b'k' if base64_key => {
            m.token(b'k', &mc::base64_encode(key));
            m.token(b'b', b"");
        }
        b'k' => m.token(b'k', key),
        _ => {}
    }
}

#[allow(clippy::too_many_arguments)]
async fn meta(
    shared: &Arc<Shared>,
    cmd: MetaCmd,
    key: Bytes,
    base64_key: bool,
    flags: Vec<MetaFlag>,
    data: Option<Bytes>,
    out: &mut BytesMut,
) -> Done {
    let st = &shared.mc;
    let quiet = flag(&flags, b'q').is_some();
    // E (set an explicit CAS) and I (invalidate instead of delete) need CAS
    // values and stale items that Strata's index does not keep.
    if flag(&flags, b'E').is_some() || flag(&flags, b'I').is_some() {
        mr::line(out, "CLIENT_ERROR the E and I flags are not supported");
        return Done::Now;
    }
    match cmd {
        MetaCmd::Noop => {
            mr::line(out, "MN");
            Done::Now
        }
        MetaCmd::Debug => {
            match shared.engine.key_info(DB, &key) {
                Some(i) => {
                    let ttl = match shared.engine.ttl(DB, &key) {
                        strata_engine::TtlState::At(at) => {
                            (at.saturating_sub(strata_engine::clock::now_ms()) / 1000) as i64
                        }
                        _ => -1,
                    };
                    let k = if base64_key {
                        String::from_utf8_lossy(&mc::base64_encode(&key)).into_owned()
                    } else {
                        String::from_utf8_lossy(&key).into_owned()
                    };
                    mr::line(
                        out,
                        &format!(
                            "ME {k} exp={ttl} la={} cas={} fetch={} cls=1 size={}",
                            i.idle_secs,
                            i.cas,
                            if i.fetched { "yes" } else { "no" },
                            i.value_len
                        ),
                    );
                }
                None => mr::line(out, "EN"),
            }
            Done::Now
        }
        MetaCmd::Get => {
            let (Ok(touch), Ok(vivify)) = (num_token(&flags, b'T'), num_token(&flags, b'N')) else {
                mr::line(out, mc::BAD_FORMAT);
                return Done::Now;
            };
            inc(&st.cmd_get);
            if touch.is_some() {
                inc(&st.cmd_touch);
            }
            let read = shared.engine.get_item(DB, &key, touch.map(expire_at_ms));
            let s = shared.clone();
            let fut = async move {
                let mut out = BytesMut::new();
                let r = read.wait().await;
                let (item, won) = match r {
                    Ok(Some(item)) => {
                        inc(&s.mc.get_hits);
                        (item, false)
                    }
                    Ok(None) => {
                        inc(&s.mc.get_misses);
                        match vivify {
                            // Auto-vivify: an empty item; this client "wins"
                            // the right to fill it (W flag).
                            Some(ttl) => {
                                let cas = match s.engine.store_item(
                                    DB,
                                    &key,
                                    b"",
                                    0,
                                    expire_at_ms(ttl),
                                    ItemCond::Missing,
                                ) {
                                    StoreOutcome::Stored(c) => {
                                        s.engine.mark_win_pending(DB, &key, c);
                                        c
                                    }
                                    _ => 0,
                                };
                                (
                                    strata_engine::Item {
                                        value: Bytes::new(),
                                        client_flags: 0,
                                        cas,
                                        expire_at_ms: expire_at_ms(ttl),
                                        idle_secs: 0,
                                        fetched_before: false,
                                        win_pending: true,
                                    },
                                    true,
                                )
                            }
                            None => {
                                if !quiet {
                                    mr::line(&mut out, "EN");
                                }
                                return out;
                            }
                        }
                    }
                    Err(e) => {
                        engine_error(&mut out, &e);
                        return out;
                    }
                };
                let with_value = flag(&flags, b'v').is_some();
                let mut m = if with_value {
                    MetaOut::start(&mut out, "VA", Some(item.value.len()))
                } else {
                    MetaOut::start(&mut out, "HD", None)
                };
                for f in &flags {
                    match f.flag {
                        b'c' => m.num(b'c', item.cas as i64),
                        b'f' => m.num(b'f', item.client_flags as i64),
                        b's' => m.num(b's', item.value.len() as i64),
                        b't' => m.num(
                            b't',
                            if item.expire_at_ms == 0 {
                                -1
                            } else {
                                (item
                                    .expire_at_ms
                                    .saturating_sub(strata_engine::clock::now_ms())
                                    / 1000) as i64
                            },
                        ),
                        b'l' => m.num(b'l', item.idle_secs as i64),
                        b'h' => m.num(b'h', i64::from(item.fetched_before)),
                        _ => echo_one(&mut m, f, &key, base64_key),
                    }
                }
                if won {
                    m.token(b'W', b"");
                } else if item.win_pending {
                    // Another client holds the win token of this item.
                    m.token(b'Z', b"");
                }

                m.finish(with_value.then_some(&item.value[..]));
                out
            };
            Done::Later(Box::pin(fut), vivify.is_some())
        }
        MetaCmd::Set => {
            inc(&st.cmd_set);
            let data = data.unwrap_or_default();
            let (Ok(ttl), Ok(client_flags), Ok(cas)) = (
                num_token(&flags, b'T'),
                num_token(&flags, b'F'),
                num_token(&flags, b'C'),
            ) else {
                mr::line(out, mc::BAD_FORMAT);
                return Done::Now;
            };
            let client_flags = client_flags.unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
            if let Err(e) = admit(shared).await {
                mr::line(out, &e);
                return Done::Now;
            }
            let mode = flag(&flags, b'M')
                .and_then(|m| m.token.first().copied())
                .unwrap_or(b'S');
            let at = expire_at_ms(ttl.unwrap_or(0));
            let cond = match (mode.to_ascii_uppercase(), cas) {
                (_, Some(c)) => ItemCond::Cas(c as u64),
                (b'S', None) => ItemCond::Always,
                (b'E', None) => ItemCond::Missing,
                (b'R', None) => ItemCond::Exists,
                (b'A' | b'P', None) => {
                    let read = concat(shared, key.clone(), data, mode.eq_ignore_ascii_case(&b'A'));
                    let fl = flags.clone();
                    return Done::Later(
                        Box::pin(async move {
                            let mut out = BytesMut::new();
                            match read.wait().await {
                                Ok("STORED") => {
                                    if !quiet {
                                        let mut m = MetaOut::start(&mut out, "HD", None);
                                        echo(&mut m, &fl, &key, base64_key);
                                        m.finish(None);
                                    }
                                }
                                Ok(_) => {
                                    let mut m = MetaOut::start(&mut out, "NS", None);
                                    echo(&mut m, &fl, &key, base64_key);
                                    m.finish(None);
                                }
                                Err(e) => engine_error(&mut out, &e),
                            }
                            out
                        }),
                        true,
                    );
                }
                _ => {
                    mr::line(out, "CLIENT_ERROR invalid mode for ms M token");
                    return Done::Now;
                }
            };
            let r = shared
                .engine
                .store_item(DB, &key, &data, client_flags, at, cond);
            let code = match r {
                StoreOutcome::Stored(_) => {
                    inc(&st.total_items);
                    "HD"
                }
                StoreOutcome::NotStored => "NS",
                StoreOutcome::Exists => "EX",
                StoreOutcome::NotFound => "NF",
            };
            if !(quiet && code == "HD") {
                let mut m = MetaOut::start(out, code, None);
                if let (StoreOutcome::Stored(c), Some(_)) = (r, flag(&flags, b'c')) {
                    m.num(b'c', c as i64);
                }
                echo(&mut m, &flags, &key, base64_key);
                m.finish(None);
            }
            Done::Now
        }
        MetaCmd::Delete => {
            let Ok(cas) = num_token(&flags, b'C') else {
                mr::line(out, mc::BAD_FORMAT);
                return Done::Now;
            };
            let code = match shared.engine.delete_item(DB, &key, cas.map(|c| c as u64)) {
                StoreOutcome::Stored(_) => {
                    inc(&st.delete_hits);
                    "HD"
                }
                StoreOutcome::Exists => "EX",
                StoreOutcome::NotFound | StoreOutcome::NotStored => {
                    inc(&st.delete_misses);
                    "NF"
                }
            };
            if !(quiet && code == "HD") {
                let mut m = MetaOut::start(out, code, None);
                echo(&mut m, &flags, &key, base64_key);
                m.finish(None);
            }
            Done::Now
        }
        MetaCmd::Arithmetic => {
            let (Ok(delta), Ok(initial), Ok(vivify)) = (
                num_token(&flags, b'D'),
                num_token(&flags, b'J'),
                num_token(&flags, b'N'),
            ) else {
                mr::line(out, mc::BAD_FORMAT);
                return Done::Now;
            };
            let incr = !matches!(
                flag(&flags, b'M').and_then(|m| m.token.first().copied()),
                Some(b'D' | b'd' | b'-')
            );
            let delta = delta.unwrap_or(1).max(0) as u64;
            let create = vivify.map(|ttl| (initial.unwrap_or(0).max(0) as u64, expire_at_ms(ttl)));
            let read = arith(shared, key.clone(), incr, delta, create);
            let s = shared.clone();
            let fut = async move {
                let mut out = BytesMut::new();
                match read.wait().await {
                    Ok(Ok(Some(v))) => {
                        s.mc.count_arith(incr, true);
                        let with_value = flag(&flags, b'v').is_some();
                        let text = v.to_string();
                        if !quiet || with_value {
                            let mut m = if with_value {
                                MetaOut::start(&mut out, "VA", Some(text.len()))
                            } else {
                                MetaOut::start(&mut out, "HD", None)
                            };
                            echo(&mut m, &flags, &key, base64_key);
                            m.finish(with_value.then_some(text.as_bytes()));
                        }
                    }
                    Ok(Ok(None)) => {
                        s.mc.count_arith(incr, false);
                        let mut m = MetaOut::start(&mut out, "NF", None);
                        echo(&mut m, &flags, &key, base64_key);
                        m.finish(None);
                    }
                    Ok(Err(line)) => mr::line(&mut out, line),
                    Err(e) => engine_error(&mut out, &e),
                }
                out
            };
            Done::Later(Box::pin(fut), true)
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
            put("extstore_objects_written", t.stashes.to_string());
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
        Some(_) => {
            // Other groups (items, slabs, conns ...) describe memcached's slab
            // allocator, which Strata does not have.
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

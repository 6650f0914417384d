//! The text protocol's commands: get, gets, gat, gats; set, add,
//! replace, cas, append, prepend; delete; incr, decr; touch; flush_all;
//! version, verbosity, quit, stats and `lru_crawler metadump` (the last two
//! in `stats`).

use super::errors::{admit, engine_error};
use super::meta;
use super::modify::{arith, concat, digits, ArithOp, ArithResult};
use super::stats::{inc, stats};
use super::{expire_at_ms, Done, DB, NON_NUMERIC, VERSION};
use crate::command::Shared;
use crate::services::metrics::memcache::McStats;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use strata_engine::{EngineError, ExpireCond, ItemCond, ItemGet, NewItem, Read, StoreOutcome};
use strata_protocol::memcache::reply as mr;
use strata_protocol::memcache::{McRequest, StoreMode};

pub(super) async fn execute(shared: &Arc<Shared>, req: McRequest, out: &mut BytesMut) -> Done {
    let st = &shared.mc;
    match req {
        McRequest::Get {
            keys,
            with_cas,
            touch,
        } => get(shared, keys, with_cas, touch, out),
        McRequest::Store {
            mode,
            key,
            flags,
            exptime,
            data,
            cas,
            noreply,
        } => {
            let item = Stored {
                mode,
                key,
                flags,
                exptime,
                data,
                cas,
            };
            store(shared, item, noreply, out).await
        }
        McRequest::Delete { key, noreply } => {
            let hit = shared.engine.delete(DB, &key);
            counted(shared, &key, hit, (&st.delete_hits, &st.delete_misses));
            reply_unless(out, noreply, if hit { "DELETED" } else { "NOT_FOUND" });
            Done::Now
        }
        McRequest::Arith {
            key,
            incr,
            delta,
            noreply,
        } => arith_request(shared, key, incr, delta, noreply),
        McRequest::Touch {
            key,
            exptime,
            noreply,
        } => {
            inc(&st.cmd_touch);
            let hit = shared
                .engine
                .expire(DB, &key, expire_at_ms(exptime), ExpireCond::Always);
            counted(shared, &key, hit, (&st.touch_hits, &st.touch_misses));
            reply_unless(out, noreply, if hit { "TOUCHED" } else { "NOT_FOUND" });
            Done::Now
        }
        McRequest::FlushAll { delay, noreply } => {
            flush_all(shared, delay);
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

/// get, gets, gat, gats: each key's item, in one reply (now if all are
/// in RAM, else once the cold ones are read).
fn get(
    shared: &Arc<Shared>,
    keys: Vec<Bytes>,
    with_cas: bool,
    touch: Option<i64>,
    out: &mut BytesMut,
) -> Done {
    let st = &shared.mc;
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

/// A storage command's item (set, add, replace, cas, append, prepend).
struct Stored {
    mode: StoreMode,
    key: Bytes,
    flags: u32,
    exptime: i64,
    data: Bytes,
    cas: u64,
}

/// set, add, replace, cas, append, prepend.
async fn store(shared: &Arc<Shared>, item: Stored, noreply: bool, out: &mut BytesMut) -> Done {
    let st = &shared.mc;
    let Stored {
        mode,
        key,
        flags,
        exptime,
        data,
        cas,
    } = item;
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
        shared
            .stats
            .client_write_bytes
            .add((key.len() + data.len()) as u64);
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

/// incr, decr: the reply once the value is read and changed.
fn arith_request(shared: &Arc<Shared>, key: Bytes, incr: bool, delta: u64, noreply: bool) -> Done {
    let op = ArithOp {
        incr,
        delta,
        ..ArithOp::default()
    };
    let wrote = key.len() as u64 + digits(delta);
    let read = arith(shared, key, op);
    let s = shared.clone();
    let fut = async move {
        let mut out = BytesMut::new();
        match read.wait().await {
            Ok((ArithResult::Done { value, .. }, _)) => {
                s.mc.count_arith(incr, true);
                s.stats.client_write_bytes.add(wrote);
                if !noreply {
                    mr::number(&mut out, value);
                }
            }
            Ok((ArithResult::Missing | ArithResult::CasMismatch, _)) => {
                s.mc.count_arith(incr, false);
                reply_unless(&mut out, noreply, "NOT_FOUND");
            }
            Ok((ArithResult::NonNumeric, _)) => reply_unless(&mut out, noreply, NON_NUMERIC),
            Err(e) => engine_error(&mut out, &e),
        }
        out
    };
    Done::Later(Box::pin(fut), true)
}

/// flush_all `[delay]`: now, or after `delay`.
fn flush_all(shared: &Arc<Shared>, delay: i64) {
    let st = &shared.mc;
    inc(&st.cmd_flush);
    if delay <= 0 {
        shared.engine.flush_db(DB);
    } else {
        let engine = shared.engine.clone();
        let wait = (expire_at_ms(delay).saturating_sub(strata_engine::clock::now_ms())).max(1);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            engine.flush_db(DB);
        });
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

/// Counts a delete's or touch's outcome: a hit or a miss, and on a hit
/// the key among the bytes clients wrote.
fn counted(shared: &Shared, key: &[u8], hit: bool, (hits, misses): (&AtomicU64, &AtomicU64)) {
    if hit {
        shared.stats.client_write_bytes.add(key.len() as u64);
    }
    inc(if hit { hits } else { misses });
}

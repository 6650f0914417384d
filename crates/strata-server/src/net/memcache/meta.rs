//! The meta commands (mg, ms, md, ma, me, mn) with memcached's flags,
//! reply codes and error lines: explicit CASes (`E`), stale items (`I`),
//! the right to refill an item (`W` / `Z`: auto-vivify `N`, stale items,
//! early recache `R`), quiet mode (`q`, ended by `mn`).

use super::errors::{admit, engine_error};
use super::modify::{arith, concat, digits, ArithOp, ArithResult};
use super::stats::inc;
use super::{expire_at_ms, Done, DB, NON_NUMERIC};
use crate::command::Shared;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use strata_engine::{Emptied, Invalidate, ItemCond, ItemGet, NewItem, StoreOutcome};
use strata_protocol::memcache::reply::{self as mr, MetaOut};
use strata_protocol::memcache::{self as mc, MetaCmd, MetaFlag};

fn flag(flags: &[MetaFlag], f: u8) -> Option<&MetaFlag> {
    flags.iter().find(|x| x.flag == f)
}

/// The token of flag `f` parsed as a `T` (None if the flag is absent;
/// Err if its token does not parse): i64 for TTLs, u64 for CAS values.
fn num_token<T: std::str::FromStr>(flags: &[MetaFlag], f: u8) -> Result<Option<T>, ()> {
    match flag(flags, f) {
        None => Ok(None),
        Some(m) => std::str::from_utf8(&m.token)
            .ok()
            .and_then(|t| t.parse::<T>().ok())
            .map(Some)
            .ok_or(()),
    }
}

/// A TTL as meta `t` shows it: seconds left (rounded up, so a TTL just
/// set reads back as given, as with memcached's one-second clock), -1 for
/// none.
fn ttl_secs(expire_at_ms: u64) -> i64 {
    if expire_at_ms == 0 {
        -1
    } else {
        expire_at_ms
            .saturating_sub(strata_engine::clock::now_ms())
            .div_ceil(1000) as i64
    }
}

/// A reply that is a code and the echoed flags (O, k).
fn code_reply(out: &mut BytesMut, code: &str, flags: &[MetaFlag], key: &[u8], base64_key: bool) {
    let mut m = MetaOut::start(out, code, None);
    echo(&mut m, flags, key, base64_key);
    m.finish(None);
}

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

/// What every meta command reads from its key and flags.
struct Args {
    key: Bytes,
    base64_key: bool,
    flags: Vec<MetaFlag>,
    /// q: say nothing on success (misses for mg).
    quiet: bool,
    /// T
    ttl: Option<i64>,
    /// C
    cas_in: Option<u64>,
    /// E
    explicit_cas: Option<u64>,
    /// I
    invalidate: bool,
}

/// Runs one meta command.
pub(super) async fn meta(
    shared: &Arc<Shared>,
    cmd: MetaCmd,
    key: Bytes,
    base64_key: bool,
    flags: Vec<MetaFlag>,
    data: Option<Bytes>,
    out: &mut BytesMut,
) -> Done {
    // Tokens every command may carry; a malformed one fails the command.
    let (Ok(ttl), Ok(cas_in), Ok(explicit_cas)) = (
        num_token::<i64>(&flags, b'T'),
        num_token::<u64>(&flags, b'C'),
        num_token::<u64>(&flags, b'E'),
    ) else {
        mr::line(out, mc::BAD_FORMAT);
        return Done::Now;
    };
    let m = Args {
        quiet: flag(&flags, b'q').is_some(),
        invalidate: flag(&flags, b'I').is_some(),
        key,
        base64_key,
        flags,
        ttl,
        cas_in,
        explicit_cas,
    };
    match cmd {
        MetaCmd::Noop => {
            mr::line(out, "MN");
            Done::Now
        }
        MetaCmd::Debug => debug(shared, m, out),
        MetaCmd::Get => get(shared, m, out),
        MetaCmd::Set => set(shared, m, data, out).await,
        MetaCmd::Delete => delete(shared, m, out),
        MetaCmd::Arithmetic => arithmetic(shared, m, out),
    }
}

/// me: what memcached tells of an item (exp, la, cas, fetch, size).
fn debug(shared: &Shared, m: Args, out: &mut BytesMut) -> Done {
    let Args {
        key, base64_key, ..
    } = m;
    match shared.engine.key_info(DB, &key) {
        Some(i) => {
            let ttl = match shared.engine.ttl(DB, &key) {
                strata_engine::TtlState::At(at) => ttl_secs(at),
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

/// mg: the item with the flags asked for; T touches, N vivifies a miss,
/// R wins an early recache, and a stale item is served with X (and W to
/// the first client after its invalidation).
fn get(shared: &Arc<Shared>, m: Args, out: &mut BytesMut) -> Done {
    let Args {
        key,
        base64_key,
        flags,
        quiet,
        ttl,
        explicit_cas,
        ..
    } = m;
    let st = &shared.mc;
    let (Ok(vivify), Ok(recache)) = (
        num_token::<i64>(&flags, b'N'),
        num_token::<i64>(&flags, b'R'),
    ) else {
        mr::line(out, mc::BAD_FORMAT);
        return Done::Now;
    };
    inc(&st.cmd_get);
    if ttl.is_some() {
        inc(&st.cmd_touch);
    }
    let opts = ItemGet {
        touch: ttl.map(expire_at_ms),
        claim_stale: true,
        recache_before_ms: recache.map(expire_at_ms),
        no_bump: flag(&flags, b'u').is_some(),
    };
    let read = shared.engine.get_item(DB, &key, opts);
    let s = shared.clone();
    let fut = async move {
        let mut out = BytesMut::new();
        let mut r = read.wait().await;
        match &r {
            Ok(Some(_)) => inc(&s.mc.get_hits),
            Ok(None) => inc(&s.mc.get_misses),
            Err(_) => {}
        }
        if let (Ok(None), Some(ttl)) = (&r, vivify) {
            // Auto-vivify: an empty item whose refill right (W) is
            // this client's; if another client created it first,
            // this is a hit on theirs.
            let at = expire_at_ms(ttl);
            r = match s.engine.vivify_item(DB, &key, at, explicit_cas) {
                Some(cas) => Ok(Some(strata_engine::Item {
                    value: Bytes::new(),
                    client_flags: 0,
                    cas,
                    expire_at_ms: at,
                    idle_secs: 0,
                    fetched_before: false,
                    token_sent: false,
                    stale: false,
                    won: true,
                })),
                None => s.engine.get_item(DB, &key, opts).wait().await,
            };
        }
        let item = match r {
            Ok(Some(item)) => item,
            Ok(None) => {
                if !quiet {
                    mr::line(&mut out, "EN");
                }
                return out;
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
                b'c' => m.token(b'c', item.cas.to_string().as_bytes()),
                b'f' => m.num(b'f', item.client_flags as i64),
                b's' => m.num(b's', item.value.len() as i64),
                b't' => m.num(b't', ttl_secs(item.expire_at_ms)),
                b'l' => m.num(b'l', item.idle_secs as i64),
                b'h' => m.num(b'h', i64::from(item.fetched_before)),
                _ => echo_one(&mut m, f, &key, base64_key),
            }
        }
        // As memcached: Z (someone holds the refill right), X
        // (stale), W (this client won it).
        if item.token_sent {
            m.token(b'Z', b"");
        }
        if item.stale {
            m.token(b'X', b"");
        }
        if item.won {
            m.token(b'W', b"");
        }
        m.finish(with_value.then_some(&item.value[..]));
        out
    };
    Done::Later(Box::pin(fut), vivify.is_some())
}

/// ms: set / add (ME) / replace (MR) / append (MA) / prepend (MP), with
/// C (a CAS to match; with I an older one stores the value stale), E, F, T.
async fn set(shared: &Arc<Shared>, m: Args, data: Option<Bytes>, out: &mut BytesMut) -> Done {
    let Args {
        key,
        base64_key,
        flags,
        quiet,
        ttl,
        cas_in,
        explicit_cas,
        invalidate,
    } = m;
    let st = &shared.mc;
    inc(&st.cmd_set);
    let data = data.unwrap_or_default();
    let Ok(client_flags) = num_token::<i64>(&flags, b'F') else {
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
    // As memcached: C turns set and replace into cas (with I, an
    // older C stores the value as stale); add ignores it; append
    // and prepend check it.
    let cond = match (mode.to_ascii_uppercase(), cas_in) {
        (b'S' | b'R', Some(c)) if invalidate => ItemCond::CasOrStale(c),
        (b'S' | b'R', Some(c)) => ItemCond::Cas(c),
        (b'S', None) => ItemCond::Always,
        (b'R', None) => ItemCond::Exists,
        (b'E', _) => ItemCond::Missing,
        (b'A' | b'P', _) => {
            let append = mode.eq_ignore_ascii_case(&b'A');
            let read = concat(shared, key.clone(), data, append, cas_in, explicit_cas);
            let fl = flags.clone();
            return Done::Later(
                Box::pin(async move {
                    let mut out = BytesMut::new();
                    match read.wait().await {
                        Ok(word) => {
                            let code = match word {
                                "STORED" => "HD",
                                "EXISTS" => "EX",
                                _ => "NS",
                            };
                            if !(quiet && code == "HD") {
                                code_reply(&mut out, code, &fl, &key, base64_key);
                            }
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
    let item = NewItem {
        value: &data,
        client_flags,
        expire_at_ms: at,
        explicit_cas,
    };
    let r = shared.engine.store_item(DB, &key, item, cond);
    let (code, cas) = match r {
        StoreOutcome::Stored(c) => {
            inc(&st.total_items);
            shared
                .stats
                .client_write_bytes
                .add((key.len() + data.len()) as u64);
            ("HD", c)
        }
        StoreOutcome::NotStored => ("NS", 0),
        StoreOutcome::Exists => ("EX", 0),
        StoreOutcome::NotFound => ("NF", 0),
    };
    if !(quiet && code == "HD") {
        let mut m = MetaOut::start(out, code, None);
        for f in &flags {
            match f.flag {
                // memcached shows c0 when nothing was stored.
                b'c' => m.token(b'c', cas.to_string().as_bytes()),
                _ => echo_one(&mut m, f, &key, base64_key),
            }
        }
        m.finish(None);
    }
    Done::Now
}

/// md: delete, or with I mark stale (new CAS, T), with x keep the item
/// empty; C must match.
fn delete(shared: &Shared, m: Args, out: &mut BytesMut) -> Done {
    let Args {
        key,
        base64_key,
        flags,
        quiet,
        ttl,
        cas_in,
        explicit_cas,
        invalidate,
    } = m;
    let st = &shared.mc;
    let Ok(client_flags) = num_token::<u32>(&flags, b'F') else {
        mr::line(out, mc::BAD_FORMAT);
        return Done::Now;
    };
    // x: keep the item, empty, with F's flags and T's TTL (as
    // memcached, none when not given).
    let emptied = flag(&flags, b'x').is_some().then(|| Emptied {
        client_flags: client_flags.unwrap_or(0),
        expire_at_ms: expire_at_ms(ttl.unwrap_or(0)),
        explicit_cas,
    });
    // Otherwise T applies only with I (the TTL of the stale item).
    let inv = invalidate.then(|| Invalidate {
        expire_at_ms: if emptied.is_some() {
            None
        } else {
            ttl.map(expire_at_ms)
        },
        explicit_cas,
    });
    let code = match shared.engine.delete_item(DB, &key, cas_in, emptied, inv) {
        StoreOutcome::Stored(_) => {
            if !invalidate {
                inc(&st.delete_hits);
            }
            shared.stats.client_write_bytes.add(key.len() as u64);
            "HD"
        }
        StoreOutcome::Exists => {
            inc(&st.delete_misses);
            "EX"
        }
        StoreOutcome::NotFound | StoreOutcome::NotStored => {
            inc(&st.delete_misses);
            "NF"
        }
    };
    if !(quiet && code == "HD") {
        code_reply(out, code, &flags, &key, base64_key);
    }
    Done::Now
}

/// ma: incr (default) or decr (MD), D delta, N/J auto-create, C, E, T;
/// reports t, c and v.
fn arithmetic(shared: &Arc<Shared>, m: Args, out: &mut BytesMut) -> Done {
    let Args {
        key,
        base64_key,
        flags,
        quiet,
        ttl,
        cas_in,
        explicit_cas,
        ..
    } = m;
    let (Ok(delta), Ok(initial), Ok(vivify)) = (
        num_token::<u64>(&flags, b'D'),
        num_token::<u64>(&flags, b'J'),
        num_token::<i64>(&flags, b'N'),
    ) else {
        mr::line(out, mc::BAD_FORMAT);
        return Done::Now;
    };
    let incr = !matches!(
        flag(&flags, b'M').and_then(|m| m.token.first().copied()),
        Some(b'D' | b'd' | b'-')
    );
    let op = ArithOp {
        incr,
        delta: delta.unwrap_or(1),
        create: vivify.map(|ttl| (initial.unwrap_or(0), expire_at_ms(ttl))),
        cas: cas_in,
        expire_at_ms: ttl.map(expire_at_ms),
        explicit_cas,
    };
    let wrote = key.len() as u64 + digits(op.delta);
    let read = arith(shared, key.clone(), op);
    let s = shared.clone();
    let fut = async move {
        let mut out = BytesMut::new();
        match read.wait().await {
            Ok((
                ArithResult::Done {
                    value,
                    expire_before,
                },
                after,
            )) => {
                s.mc.count_arith(incr, true);
                s.stats.client_write_bytes.add(wrote);
                // As memcached, quiet mode hides success, value or not.
                if quiet {
                    return out;
                }
                let with_value = flag(&flags, b'v').is_some();
                let text = value.to_string();
                let mut m = if with_value {
                    MetaOut::start(&mut out, "VA", Some(text.len()))
                } else {
                    MetaOut::start(&mut out, "HD", None)
                };
                let (cas, expire_after) =
                    after.map_or((0, expire_before), |a| (a.cas, a.expire_at_ms));
                // memcached applies T where it stands among the
                // flags: a `t` before it shows the old TTL.
                let mut ttl_applied = false;
                for f in &flags {
                    match f.flag {
                        b'T' => ttl_applied = true,
                        b't' => m.num(
                            b't',
                            ttl_secs(if ttl_applied || vivify.is_some() {
                                expire_after
                            } else {
                                expire_before
                            }),
                        ),
                        b'c' => m.token(b'c', cas.to_string().as_bytes()),
                        _ => echo_one(&mut m, f, &key, base64_key),
                    }
                }
                m.finish(with_value.then_some(text.as_bytes()));
            }
            Ok((ArithResult::Missing, _)) => {
                s.mc.count_arith(incr, false);
                code_reply(&mut out, "NF", &flags, &key, base64_key);
            }
            Ok((ArithResult::CasMismatch, _)) => {
                code_reply(&mut out, "EX", &flags, &key, base64_key);
            }
            Ok((ArithResult::NonNumeric, _)) => mr::line(&mut out, NON_NUMERIC),
            Err(e) => engine_error(&mut out, &e),
        }
        out
    };
    Done::Later(Box::pin(fut), true)
}

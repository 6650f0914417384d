//! DEBUG, refused unless `enable-debug-command` allows it (as Redis 7):
//! TIER `<key>` (where the value lives), LIVE-BYTES, and the subcommands
//! test harnesses use: SLEEP, OBJECT, SET-ACTIVE-EXPIRE, RELOAD,
//! DIGEST and DIGEST-VALUE (Redis's digests of the dataset and of values:
//! the same SHA1 mix, so data Redis digests alike digests alike here),
//! PROTOCOL (a reply of each RESP type, for client tests),
//! QUICKLIST-PACKED-THRESHOLD, LOOPS (how many connection loops serve).

use super::{encoding_name, help};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::Bytes;
use strata_engine::types::Collection;
use strata_engine::{Location, ValueRef};
use strata_protocol::{write_array_len, write_bulk, write_simple};

/// DEBUG, refused unless `enable-debug-command` allows it (as Redis 7):
/// TIER `<key>` (where the value lives), LIVE-BYTES, and the subcommands
/// test harnesses use: SLEEP (the whole server stops: every shard is held),
/// OBJECT, SET-ACTIVE-EXPIRE, RELOAD (a checkpoint, then every value read
/// back from its record, as after Redis's save-and-load).
pub fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let allowed = crate::services::config::allows(
        &ctx.config().enable_debug_command,
        ctx.conn.handle.is_local(),
    );
    if !allowed {
        reply::error(ctx.out, "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.");
        return Outcome::Done;
    }
    let sub = &args[1];
    if is(sub, "sleep") && args.len() == 3 {
        return sleep(ctx, args);
    } else if is(sub, "set-active-expire") && args.len() == 3 {
        let on = parse_i64(&args[2]).unwrap_or(0) != 0;
        ctx.engine().set_active_expire(on);
        write_simple(ctx.out, b"OK");
    } else if is(sub, "set-disable-deny-scripts") && args.len() == 3 {
        let on = parse_i64(&args[2]).unwrap_or(0) != 0;
        ctx.server()
            .scripts
            .allow_noscript
            .store(on, std::sync::atomic::Ordering::Relaxed);
        write_simple(ctx.out, b"OK");
    } else if is(sub, "loops") && args.len() == 3 {
        // LOOPS <k>: k loops take connections, the others hand theirs
        // over at their next quiet point; 0 gives the choice back to
        // `loop-scaling`'s controller.
        let k = parse_i64(&args[2]).filter(|&k| k >= 0);
        let forced: Result<(), String> = match (k, ctx.server().loops.get()) {
            (None, _) => Err(reply::NOT_INTEGER.to_string()),
            (Some(_), None) => Err("ERR no connection loops (server-runtime shared)".into()),
            (Some(k), Some(pool)) => pool.force(k as usize),
        };
        match forced {
            Ok(()) => write_simple(ctx.out, b"OK"),
            Err(e) => reply::error(ctx.out, &e),
        }
    } else if is(sub, "object") && args.len() == 3 {
        let Some(info) = ctx.engine().key_info_present(ctx.db(), &args[2]) else {
            reply::error(ctx.out, reply::NO_SUCH_KEY);
            return Outcome::Done;
        };
        let lru = strata_engine::clock::now_secs().saturating_sub(info.idle_secs as u32);
        let text = format!(
            "Value at:0x{:012x} refcount:1 encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
            0x7f00_0000_0000u64 | (info.value_len & 0xffff_ffff),
            encoding_name(&info),
            info.value_len,
            lru & 0xff_ffff,
            info.idle_secs
        );
        write_simple(ctx.out, text.as_bytes());
    } else if is(sub, "reload") || is(sub, "loadaof") {
        return reload(ctx);
    } else if is(sub, "protocol") && args.len() == 3 {
        protocol(ctx, &args[2]);
    } else if is(sub, "quicklist-packed-threshold") && args.len() == 3 {
        // Redis's lists keep elements this big in nodes of their own; a
        // list here has no such nodes, so only the argument is checked.
        let size = std::str::from_utf8(&args[2])
            .ok()
            .and_then(crate::services::config::parse_size);
        match size {
            Some(n) if n <= (1 << 32) - (1 << 20) => write_simple(ctx.out, b"OK"),
            _ => reply::error(
                ctx.out,
                "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
            ),
        }
    } else if is(sub, "digest-value") {
        let keys: Vec<Bytes> = args[2..].to_vec();
        return ctx.with_keys(keys.clone(), move |view, out, _| {
            write_array_len(out, keys.len());
            for k in &keys {
                let mut d = [0u8; 20];
                object_digest(&mut d, view, k);
                write_simple(out, hex(&d).as_bytes());
            }
        });
    } else if is(sub, "digest") && args.len() == 2 {
        let engine = ctx.engine().clone();
        return Outcome::Pending {
            reply: Box::pin(async move {
                let mut out = bytes::BytesMut::new();
                match dataset_digest(&engine).await {
                    Ok(d) => write_simple(&mut out, hex(&d).as_bytes()),
                    Err(e) => reply::error(&mut out, &format!("ERR {e}")),
                }
                out
            }),
            write: false,
        };
    } else if is(sub, "tier") && args.len() == 3 {
        return tier(ctx, args);
    } else if is(sub, "live-bytes") && args.len() == 2 {
        // Segments whose live-byte count differs from the records the
        // index points at: "segment counted pointed" per line (empty when
        // the accounting is right; meaningful when the server is idle).
        let bad = ctx.engine().audit_live_bytes();
        let text: Vec<String> = bad.iter().map(|(s, c, p)| format!("{s} {c} {p}")).collect();
        write_bulk(ctx.out, text.join("\n").as_bytes());
    } else if is(sub, "help") {
        help(
            ctx.out,
            "DEBUG",
            &[
                "TIER <key>  -- where the value lives: ram, ram+flash or flash",
                "LIVE-BYTES  -- segments whose live bytes differ from what the index points at",
                "OBJECT <key>  -- the value's encoding, length and idle time",
                "SLEEP <seconds>  -- stop the server for that long",
                "SET-ACTIVE-EXPIRE <0|1>  -- stop or restart the background sweep of expired keys",
                "SET-DISABLE-DENY-SCRIPTS <0|1>  -- let scripts call commands flagged noscript (for tests)",
                "RELOAD  -- take a checkpoint, then read every value back from flash",
                "LOADAOF  -- the same as RELOAD",
                "DIGEST  -- Redis's digest of the whole dataset (zeros when it is empty)",
                "DIGEST-VALUE <key> ...  -- Redis's digest of each value (zeros for a missing key)",
                "PROTOCOL <type>  -- a reply of that type: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
                "QUICKLIST-PACKED-THRESHOLD <size>  -- accepted (lists have no plain nodes here)",
            ],
        );
    } else {
        reply::unknown_subcommand(ctx.out, sub, "debug");
    }
    Outcome::Done
}

/// DEBUG SLEEP.
fn sleep(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let secs: f64 = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0.0);
    let engine = ctx.engine().clone();
    if engine.in_section() {
        // Inside EXEC the shards are held already.
        std::thread::sleep(std::time::Duration::from_secs_f64(secs.clamp(0.0, 1e6)));
        write_simple(ctx.out, b"OK");
        return Outcome::Done;
    }
    Outcome::Pending {
        reply: Box::pin(async move {
            let took = std::time::Duration::from_secs_f64(secs.clamp(0.0, 1e6));
            let _ =
                tokio::task::spawn_blocking(move || engine.exclusive(|| std::thread::sleep(took)))
                    .await;
            let mut out = bytes::BytesMut::new();
            write_simple(&mut out, b"OK");
            out
        }),
        write: true,
    }
}

/// DEBUG RELOAD.
fn reload(ctx: &mut Ctx<'_>) -> Outcome {
    // Redis reloads its dataset from its RDB or AOF; here the log is
    // the dataset: a checkpoint, then every value and part with a copy
    // on flash leaves RAM, so each is read back from its record, as
    // Redis reads every value back from its file. (The index stays:
    // this is not a restart. Off the runtime's workers, as SAVE: it
    // waits for its writes.)
    let engine = ctx.engine().clone();
    Outcome::Pending {
        reply: Box::pin(async move {
            let mut out = bytes::BytesMut::new();
            // A checkpoint already running (BGSAVE) is waited for.
            let reload = move || {
                let save = || {
                    for _ in 0..6000 {
                        match engine.save() {
                            Err(e) if e.contains("in progress") => {
                                std::thread::sleep(std::time::Duration::from_millis(10))
                            }
                            r => return r,
                        }
                    }
                    engine.save()
                };
                let r = save();
                if r.is_ok() {
                    let (values, parts) = engine.drop_ram_copies();
                    tracing::info!(
                        "DEBUG RELOAD: {values} values, {parts} parts to read back from flash"
                    );
                }
                r
            };
            match tokio::task::spawn_blocking(reload).await {
                Ok(Ok(_)) => write_simple(&mut out, b"OK"),
                Ok(Err(e)) => {
                    reply::error(&mut out, &format!("ERR Error trying to save the DB: {e}"))
                }
                Err(e) => reply::error(&mut out, &format!("ERR {e}")),
            }
            out
        }),
        write: true,
    }
}

/// DEBUG TIER.
fn tier(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(info) = ctx.engine().key_info(ctx.db(), &args[2]) else {
        reply::error(ctx.out, reply::NO_SUCH_KEY);
        return Outcome::Done;
    };
    let text = match info.location {
        Location::Ram => format!("tier:ram value_len:{}", info.value_len),
        Location::RamAndFlash(l) => format!(
            "tier:ram+flash value_len:{} segment:{} offset:{} record_len:{}",
            info.value_len, l.segment, l.offset, l.len
        ),
        Location::Flash(l) => format!(
            "tier:flash value_len:{} segment:{} offset:{} record_len:{}",
            info.value_len, l.segment, l.offset, l.len
        ),
        Location::Chunked { parts, in_ram } => format!(
            "tier:chunked value_len:{} chunks:{parts} chunks_in_ram:{in_ram}",
            info.value_len
        ),
    };
    // The memcached view of the item (database 0 is shared with the
    // memcached port).
    let text = if info.vtype == strata_engine::ValueType::String {
        format!("{text} client_flags:{} cas:{}", info.client_flags, info.cas)
    } else {
        format!(
            "{text} type:{} elements:{} encoding:{}",
            info.vtype.name(),
            info.elements,
            encoding_name(&info)
        )
    };
    write_simple(ctx.out, text.as_bytes());
    Outcome::Done
}

fn hex(d: &[u8; 20]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Redis's `computeDatasetDigest`: per database with keys, its number is
/// mixed in, then the SHA1 of each key's digest (the key mixed, then its
/// value's) is xored in, so the order of keys does not matter. The keys are read in
/// batches, cold values too; a dataset that changes meanwhile gives a
/// digest of no single moment (Redis's is of one, being single-threaded).
async fn dataset_digest(engine: &strata_engine::Engine) -> Result<[u8; 20], String> {
    let mut total = [0u8; 20];
    for db in 0..engine.databases() {
        if engine.dbsize(db) == 0 {
            continue;
        }
        mix_digest(&mut total, &(db as u32).to_be_bytes());
        let mut cursor = 0;
        loop {
            let (next, keys) = engine.scan(db, cursor, 256, |_, _| true);
            if !keys.is_empty() {
                let read = engine.with_keys(db, keys.clone(), move |view| {
                    let mut acc = [0u8; 20];
                    for k in &keys {
                        let mut d = [0u8; 20];
                        mix_digest(&mut d, k);
                        if object_digest(&mut d, view, k) {
                            xor_digest(&mut acc, &d);
                        }
                    }
                    acc
                });
                let acc = read.wait().await.map_err(|e| e.to_string())?;
                for (x, y) in total.iter_mut().zip(acc) {
                    *x ^= y;
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(total)
}

/// Redis's `xorObjectDigest` of `key`'s value into `d`, with the expire
/// mark; false (and `d` untouched) if the key is missing.
fn object_digest(d: &mut [u8; 20], view: &mut strata_engine::KeysView<'_>, key: &[u8]) -> bool {
    let Some(v) = view.get(key) else {
        return false;
    };
    value_digest(d, &v);
    if view.expire_at(key).is_some_and(|at| at != 0) {
        xor_digest(d, b"!!expire!!");
    }
    true
}

/// Redis's `xorDigest`: SHA1 of `b` xored into `d` (order-free).
fn xor_digest(d: &mut [u8; 20], b: &[u8]) {
    use sha1::Digest;
    let h = sha1::Sha1::digest(b);
    for (x, y) in d.iter_mut().zip(h.iter()) {
        *x ^= y;
    }
}

/// Redis's `mixDigest`: `d = SHA1(d xor SHA1(b))` (order matters).
fn mix_digest(d: &mut [u8; 20], b: &[u8]) {
    use sha1::Digest;
    xor_digest(d, b);
    let h = sha1::Sha1::digest(&d[..]);
    d.copy_from_slice(&h);
}

/// Redis's `xorObjectDigest` of one value into `d`, without the expire
/// mark.
fn value_digest(d: &mut [u8; 20], v: &ValueRef<'_>) {
    // Redis's object type numbers.
    let t: u32 = match v {
        ValueRef::Str(_) | ValueRef::Coll(Collection::Str(_)) => 0,
        ValueRef::Coll(Collection::List(_)) => 1,
        ValueRef::Coll(Collection::Set(_)) => 2,
        ValueRef::Coll(Collection::ZSet(_)) => 3,
        ValueRef::Coll(Collection::Hash(_)) => 4,
        ValueRef::Coll(Collection::Stream(_)) => 6,
    };
    mix_digest(d, &t.to_be_bytes());
    match v {
        ValueRef::Str(s) => mix_digest(d, s),
        ValueRef::Coll(c) => match c {
            // Read whole (every part in RAM: the digest's keys are).
            Collection::Str(s) => mix_digest(d, &s.to_vec().unwrap_or_default()),
            Collection::List(l) => {
                for e in l.iter() {
                    mix_digest(d, e);
                }
            }
            Collection::Set(s) => {
                for m in s.iter() {
                    xor_digest(d, m);
                }
            }
            Collection::ZSet(z) => {
                for (m, score) in z.iter() {
                    let mut e = [0u8; 20];
                    mix_digest(&mut e, m);
                    mix_digest(&mut e, crate::commands::zset::fmt_score(score).as_bytes());
                    xor_digest(d, &e);
                }
            }
            Collection::Hash(h) => {
                for (f, val) in h.iter() {
                    let mut e = [0u8; 20];
                    mix_digest(&mut e, f);
                    mix_digest(&mut e, val);
                    xor_digest(d, &e);
                }
            }
            Collection::Stream(st) => {
                use strata_engine::types::stream::StreamId;
                for e in st.range(StreamId::MIN, StreamId::MAX, false) {
                    mix_digest(d, format!("{}.{}", e.id.ms, e.id.seq).as_bytes());
                    for el in e.elems() {
                        mix_digest(d, el);
                    }
                }
            }
        },
    }
}

/// DEBUG PROTOCOL `type`: Redis's sample reply of each RESP type (as RESP2
/// renders it on a RESP2 connection), for client libraries' tests.
fn protocol(ctx: &mut Ctx<'_>, name: &[u8]) {
    use strata_protocol::{
        write_bool, write_double, write_integer, write_map_len, write_null, write_push_len,
        write_set_len, write_verbatim, Version,
    };
    let v = ctx.version();
    let resp3 = v == Version::Resp3;
    let out = &mut *ctx.out;
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    match name.as_str() {
        "string" => write_bulk(out, b"Hello World"),
        "integer" => write_integer(out, 12345),
        // Redis's sample double (not pi: its first four digits).
        #[allow(clippy::approx_constant)]
        "double" => write_double(out, v, 3.141),
        "bignum" => {
            let n = b"1234567999999999999999999999999999999";
            if resp3 {
                out.extend_from_slice(b"(");
                out.extend_from_slice(n);
                out.extend_from_slice(b"\r\n");
            } else {
                write_bulk(out, n);
            }
        }
        "null" => write_null(out, v),
        "array" | "set" => {
            if name == "set" {
                write_set_len(out, v, 3);
            } else {
                write_array_len(out, 3);
            }
            for j in 0..3 {
                write_integer(out, j);
            }
        }
        "map" => {
            write_map_len(out, v, 3);
            for j in 0..3 {
                write_integer(out, j);
                write_bool(out, v, j == 1);
            }
        }
        "attrib" => {
            if resp3 {
                out.extend_from_slice(b"|1\r\n");
                write_bulk(out, b"key-popularity");
                write_array_len(out, 2);
                write_bulk(out, b"key:123");
                write_integer(out, 90);
            }
            write_bulk(out, b"Some real reply following the attribute");
        }
        "push" if !resp3 => reply::error(out, "ERR RESP2 is not supported by this command"),
        "push" => {
            write_push_len(out, v, 2);
            write_bulk(out, b"server-cpu-usage");
            write_integer(out, 42);
            write_bulk(out, b"Some real reply following the push reply");
        }
        "true" => write_bool(out, v, true),
        "false" => write_bool(out, v, false),
        "verbatim" => write_verbatim(out, v, b"txt", b"This is a verbatim\nstring"),
        _ => reply::error(out, "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"),
    }
}

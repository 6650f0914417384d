//! kill -9 under load with collections: with `appendfsync always`, every
//! acknowledged change of a hash (chunked once past 32 KiB), list, set,
//! sorted set or string survives a crash (most of them logged as change
//! records: types/changes), by pushes, pops, sets, inserts, removals, trims,
//! increments and pops, appends, range and bit writes,
//! while the collections move to flash (a small RAM budget), the collector
//! moves their records (small segments), and BGSAVE checkpoints them.
//!
//! Each writer thread owns its keys and sends one command at a time, so a
//! key's state after a restart must be its last acknowledged state, or that
//! state with the one command in flight at the kill applied.
//! `STRATA_TEST_SEED=<n>` replays a run's choices (not its timing).

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WRITERS: usize = 3;
const KEYS_PER_WRITER: usize = 25;

/// A key's state as a model: the reply of its dump command.
#[derive(Clone, Debug, PartialEq, Eq)]
enum St {
    List(Vec<Vec<u8>>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    /// member -> score text as ZRANGE WITHSCORES shows it
    ZSet(BTreeMap<Vec<u8>, String>),
    /// A string changed in place (logged by its byte spans once past 512
    /// bytes).
    Str(Vec<u8>),
}

impl St {
    fn empty(key: &str) -> St {
        match key.as_bytes()[0] {
            b'l' => St::List(Vec::new()),
            b'h' => St::Hash(BTreeMap::new()),
            b's' => St::Set(BTreeSet::new()),
            b't' => St::Str(Vec::new()),
            _ => St::ZSet(BTreeMap::new()),
        }
    }
}

fn key_name(w: usize, i: usize) -> String {
    let p = ["l", "h", "s", "z", "t"][i % 5];
    format!("{p}:{w}:{i}")
}

/// One random command for `key` and the state it leaves: pushes, pops,
/// sets, inserts, removals and trims of a list; sets, removals, increments
/// and set-if-absent of a hash; additions and removals of a set; adds,
/// removals, increments and pops of a sorted set (one key each: a writer
/// owns its keys).
fn op(rng: &mut StdRng, key: &str, st: &St, n: u64) -> (Vec<Vec<u8>>, St) {
    let b = |s: &str| s.as_bytes().to_vec();
    let big = |n: u64| format!("{n:0>300}").into_bytes();
    let mut next = st.clone();
    let cmd = match &mut next {
        St::List(l) if l.is_empty() || (l.len() < 60 && rng.gen_bool(0.5)) => {
            let v = big(n);
            if rng.gen_bool(0.5) {
                l.push(v.clone());
                vec![b("RPUSH"), b(key), v]
            } else {
                l.insert(0, v.clone());
                vec![b("LPUSH"), b(key), v]
            }
        }
        St::List(l) => match rng.gen_range(0..7) {
            0 => {
                l.remove(0);
                vec![b("LPOP"), b(key)]
            }
            1 => {
                l.pop();
                vec![b("RPOP"), b(key)]
            }
            2 => {
                let i = rng.gen_range(0..l.len());
                let v = big(n);
                l[i] = v.clone();
                vec![b("LSET"), b(key), b(&i.to_string()), v]
            }
            3 => {
                let i = rng.gen_range(0..l.len());
                let (pivot, v) = (l[i].clone(), big(n));
                l.insert(i, v.clone());
                vec![b("LINSERT"), b(key), b("BEFORE"), pivot, v]
            }
            4 => {
                let e = l[rng.gen_range(0..l.len())].clone();
                let i = l.iter().position(|x| *x == e).unwrap();
                l.remove(i);
                vec![b("LREM"), b(key), b("1"), e]
            }
            5 => {
                l.remove(0);
                vec![b("LTRIM"), b(key), b("1"), b("-1")]
            }
            _ => {
                let v = big(n);
                l.push(v.clone());
                vec![b("RPUSHX"), b(key), v]
            }
        },
        St::Hash(h) => {
            let f = format!("f{}", rng.gen_range(0..60)).into_bytes();
            match rng.gen_range(0..8) {
                0..=3 => {
                    // 1 KB values: a hash passes 32 KiB and is chunked.
                    let v = format!("{n:0>1000}").into_bytes();
                    h.insert(f.clone(), v.clone());
                    vec![b("HSET"), b(key), f, v]
                }
                4 => {
                    let c = format!("n{}", rng.gen_range(0..8)).into_bytes();
                    let now: i64 = h
                        .get(&c)
                        .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
                    h.insert(c.clone(), (now + 3).to_string().into_bytes());
                    vec![b("HINCRBY"), b(key), c, b("3")]
                }
                5 => {
                    let v = format!("{n}").into_bytes();
                    h.entry(f.clone()).or_insert_with(|| v.clone());
                    vec![b("HSETNX"), b(key), f, v]
                }
                _ => {
                    h.remove(&f);
                    vec![b("HDEL"), b(key), f]
                }
            }
        }
        St::Set(s) => {
            let m = format!("m{}", rng.gen_range(0..200)).into_bytes();
            if rng.gen_bool(0.75) {
                s.insert(m.clone());
                vec![b("SADD"), b(key), m]
            } else {
                s.remove(&m);
                vec![b("SREM"), b(key), m]
            }
        }
        St::Str(v) => str_op(rng, key, v, n),
        St::ZSet(z) => {
            let m = format!("member-{:0>200}", rng.gen_range(0..80)).into_bytes();
            let order = |z: &BTreeMap<Vec<u8>, String>| {
                let mut v: Vec<(i64, Vec<u8>)> = z
                    .iter()
                    .map(|(m, s)| (s.parse().unwrap(), m.clone()))
                    .collect();
                v.sort();
                v
            };
            match rng.gen_range(0..8) {
                0..=3 => {
                    z.insert(m.clone(), n.to_string());
                    vec![b("ZADD"), b(key), b(&n.to_string()), m]
                }
                4 if z.contains_key(&m) => {
                    let s: i64 = z[&m].parse().unwrap();
                    z.insert(m.clone(), (s + 2).to_string());
                    vec![b("ZINCRBY"), b(key), b("2"), m]
                }
                5 => {
                    if let Some((_, low)) = order(z).first() {
                        z.remove(low);
                    }
                    vec![b("ZPOPMIN"), b(key)]
                }
                6 => {
                    if let Some((_, high)) = order(z).last() {
                        z.remove(high);
                    }
                    vec![b("ZREMRANGEBYRANK"), b(key), b("-1"), b("-1")]
                }
                _ => {
                    z.remove(&m);
                    vec![b("ZREM"), b(key), m]
                }
            }
        }
    };
    (cmd, next)
}

/// One random command changing string `v` in place (APPEND, SETRANGE,
/// SETBIT), or now and then writing it whole (SET), applied to `v`.
fn str_op(rng: &mut StdRng, key: &str, v: &mut Vec<u8>, n: u64) -> Vec<Vec<u8>> {
    let b = |s: &str| s.as_bytes().to_vec();
    if v.is_empty() || v.len() > 6000 || rng.gen_bool(0.04) {
        *v = format!("{n:->700}").into_bytes();
        return vec![b("SET"), b(key), v.clone()];
    }
    match rng.gen_range(0..3) {
        0 => {
            let tail = format!("<{n}>").into_bytes();
            v.extend_from_slice(&tail);
            vec![b("APPEND"), b(key), tail]
        }
        1 => {
            let at = rng.gen_range(0..v.len() + 40);
            let bytes = format!("[{n}]").into_bytes();
            if v.len() < at + bytes.len() {
                v.resize(at + bytes.len(), 0);
            }
            v[at..at + bytes.len()].copy_from_slice(&bytes);
            vec![b("SETRANGE"), b(key), b(&at.to_string()), bytes]
        }
        _ => {
            let bit = rng.gen_range(0..(v.len() + 40) * 8);
            let on = rng.gen_bool(0.5);
            if v.len() <= bit / 8 {
                v.resize(bit / 8 + 1, 0);
            }
            let mask = 0x80u8 >> (bit % 8);
            if on {
                v[bit / 8] |= mask;
            } else {
                v[bit / 8] &= !mask;
            }
            vec![
                b("SETBIT"),
                b(key),
                b(&bit.to_string()),
                b(if on { "1" } else { "0" }),
            ]
        }
    }
}

/// The state of `key` on the server.
fn dump(con: &mut redis::Connection, key: &str) -> St {
    let flat = |v: Vec<Vec<u8>>| -> Vec<(Vec<u8>, Vec<u8>)> {
        v.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()
    };
    match St::empty(key) {
        St::List(_) => St::List(
            redis::cmd("LRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .query(con)
                .unwrap(),
        ),
        St::Hash(_) => St::Hash(
            flat(redis::cmd("HGETALL").arg(key).query(con).unwrap())
                .into_iter()
                .collect(),
        ),
        St::Set(_) => St::Set(redis::cmd("SMEMBERS").arg(key).query(con).unwrap()),
        St::Str(_) => St::Str(
            redis::cmd("GET")
                .arg(key)
                .query::<Option<Vec<u8>>>(con)
                .unwrap()
                .unwrap_or_default(),
        ),
        St::ZSet(_) => {
            let v: Vec<Vec<u8>> = redis::cmd("ZRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(con)
                .unwrap();
            St::ZSet(
                flat(v)
                    .into_iter()
                    .map(|(m, s)| (m, String::from_utf8(s).unwrap()))
                    .collect(),
            )
        }
    }
}

struct Writer {
    keys: Vec<String>,
    /// Last acknowledged state of each key.
    acked: Vec<St>,
    /// The command in flight when the server died: key index and the state
    /// it would leave.
    in_flight: Option<(usize, St)>,
    acks: u64,
}

fn run_writer(port: u16, mut w: Writer, seed: u64, n0: u64) -> Writer {
    let mut rng = StdRng::seed_from_u64(seed);
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
        return w;
    };
    let Ok(mut con) = client.get_connection() else {
        return w;
    };
    let mut n = n0;
    loop {
        n += 1;
        let i = rng.gen_range(0..w.keys.len());
        let (cmd, next) = op(&mut rng, &w.keys[i], &w.acked[i], n);
        let mut c = redis::cmd(std::str::from_utf8(&cmd[0]).unwrap());
        for a in &cmd[1..] {
            c.arg(a);
        }
        w.in_flight = Some((i, next.clone()));
        match c.query::<redis::Value>(&mut con) {
            Ok(redis::Value::ServerError(e)) => panic!("{:?}: {e:?}", cmd[0]),
            Ok(_) => {
                w.acked[i] = next;
                w.in_flight = None;
                w.acks += 1;
            }
            Err(e) if e.is_io_error() || e.is_connection_dropped() => return w,
            Err(e) => panic!("{}: {e}", String::from_utf8_lossy(&cmd[0])),
        }
    }
}

#[test]
fn kill_9_loses_no_acknowledged_collection_change_with_always() {
    let seed = std::env::var("STRATA_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("seed {seed} (STRATA_TEST_SEED={seed} replays it)");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut srv = Server::start(&[
        "--appendfsync",
        "always",
        "--maxmemory-ram",
        "6mb",
        "--tiering-min-value-size",
        "16",
        "--flash-segment-size",
        "1mb",
    ]);
    let mut writers: Vec<Writer> = (0..WRITERS)
        .map(|w| {
            let keys: Vec<String> = (0..KEYS_PER_WRITER).map(|i| key_name(w, i)).collect();
            let acked = keys.iter().map(|k| St::empty(k)).collect();
            Writer {
                keys,
                acked,
                in_flight: None,
                acks: 0,
            }
        })
        .collect();
    let mut total = 0;
    let mut in_flight_applied = 0;
    // Change records written before the kills (their restarts apply them).
    let mut changes = 0;
    for cycle in 0..4u64 {
        let handles: Vec<_> = writers
            .drain(..)
            .enumerate()
            .map(|(i, w)| {
                let (port, s) = (srv.port, rng.gen::<u64>());
                std::thread::spawn(move || run_writer(port, w, s, (cycle * 10 + i as u64) << 32))
            })
            .collect();
        let delay = Duration::from_millis(rng.gen_range(800..2500));
        if cycle % 2 == 1 {
            std::thread::sleep(delay / 2);
            let _ = redis::cmd("BGSAVE").query::<redis::Value>(&mut srv.client());
            std::thread::sleep(delay / 2);
        } else {
            std::thread::sleep(delay);
        }
        changes += srv.info_u64(&mut srv.client(), "persistence", "journal_change_records");
        srv.kill9();
        writers = handles
            .into_iter()
            .map(|h| h.join().expect("writer panicked"))
            .collect();
        srv.restart();
        let mut con = srv.client();
        let mut fails = Vec::new();
        for w in writers.iter_mut() {
            total += w.acks;
            w.acks = 0;
            let in_flight = w.in_flight.take();
            for (i, key) in w.keys.iter().enumerate() {
                let got = dump(&mut con, key);
                let flight = in_flight.as_ref().filter(|(j, _)| *j == i).map(|(_, s)| s);
                if got == w.acked[i] {
                    continue;
                }
                if Some(&got) == flight {
                    in_flight_applied += 1;
                    w.acked[i] = got;
                    continue;
                }
                fails.push(format!(
                    "{key}: found {got:?}\n  acknowledged {:?}",
                    w.acked[i]
                ));
            }
        }
        assert!(
            fails.is_empty(),
            "seed {seed}, cycle {cycle}: {} keys wrong:\n{}",
            fails.len(),
            fails[..fails.len().min(5)].join("\n")
        );
        let fetched = srv.info_u64(&mut con, "tiered", "tiered_total_fetches");
        eprintln!("cycle {cycle}: killed after {delay:?}; {total} changes acknowledged so far; {in_flight_applied} in-flight ones applied; fetches since restart {fetched}");
    }
    assert!(
        total >= 500,
        "only {total} changes acknowledged: the test proves little"
    );
    assert!(changes > 0, "no change record was written before a kill");
    // Some hashes were big enough to be chunked (the part that test covers).
    let mut con = srv.client();
    let chunked = writers
        .iter()
        .flat_map(|w| w.keys.iter())
        .filter(|k| k.starts_with('h'))
        .filter(|k| {
            let tier: String = redis::cmd("DEBUG")
                .arg("TIER")
                .arg(*k)
                .query(&mut con)
                .unwrap_or_default();
            tier.starts_with("tier:chunked")
        })
        .count();
    assert!(
        chunked > 0,
        "no hash was chunked: the test proves less than it says"
    );
}

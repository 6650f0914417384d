//! MULTI / EXEC / DISCARD / WATCH / UNWATCH (issue #11, point 1):
//! - scripted scenarios with two clients, every reply compared with a real
//!   redis-server 7.0 (WATCH invalidation by writes, deletes, expiry,
//!   FLUSHDB, SWAPDB, RENAME; queueing errors and EXECABORT; runtime errors;
//!   blocking commands inside EXEC; blocked clients served after EXEC);
//! - atomicity: concurrent transactions over keys of many shards whose
//!   values are mostly on flash are never seen half done;
//! - WATCH as optimistic locking through the `redis` crate's
//!   `transaction` helper loses no update;
//! - under `appendfsync always` an acknowledged EXEC survives kill -9.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;
#[allow(dead_code)]
#[path = "redis_diff/scenario.rs"]
mod scenario;

use oracle::{Conn, RedisServer};
use scenario::{scenario, Step, Step::*};
use std::time::Duration;

#[test]
fn transactions_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&["--maxmemory-ram", "16mb"]);
    let (rp, sp) = (redis.port, strata.port);
    let run = |name: &str, steps: &[Step]| scenario(name, rp, sp, steps);

    run(
        "queued commands, runtime errors per command",
        &[
            Cmd(0, "MULTI"),
            Cmd(0, "SET a 1"),
            Cmd(0, "INCR a"),
            Cmd(0, "LPUSH a x"),
            Cmd(0, "INCRBY a notanumber"),
            Cmd(0, "GET a"),
            Cmd(0, "EXEC"),
            Cmd(0, "MULTI"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "errors while queueing abort EXEC and change nothing",
        &[
            Cmd(0, "MULTI"),
            Cmd(0, "SET a 1"),
            Cmd(0, "NOSUCHCOMMAND x"),
            Cmd(0, "GET"),
            Cmd(0, "EXEC"),
            Cmd(0, "GET a"),
            Cmd(0, "MULTI"),
            Cmd(0, "SET a 1"),
            Cmd(0, "GET a b"),
            Cmd(0, "EXEC"),
            Cmd(0, "EXISTS a"),
        ],
    );
    run(
        "SAVE and SHUTDOWN are refused while queueing; admin commands run in the transaction",
        &[
            Cmd(0, "MULTI"),
            Cmd(0, "SET a 1"),
            Cmd(0, "SAVE"),
            Cmd(0, "SHUTDOWN"),
            Cmd(0, "EXEC"),
            Cmd(0, "EXISTS a"),
            Cmd(0, "MULTI"),
            Cmd(0, "CONFIG SET hash-max-listpack-entries 0"),
            Cmd(0, "HSET h f v"),
            Cmd(0, "OBJECT ENCODING h"),
            Cmd(0, "CONFIG SET hash-max-listpack-entries 128"),
            Cmd(0, "DEBUG DIGEST-VALUE h"),
            Cmd(0, "DEBUG DIGEST"),
            Cmd(0, "BGSAVE"),
            Cmd(0, "LATENCY LATEST"),
            Cmd(0, "CLIENT LIST ID 99999"),
            Cmd(0, "DEBUG SLEEP 0"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "misuse",
        &[
            Cmd(0, "EXEC"),
            Cmd(0, "DISCARD"),
            Cmd(0, "MULTI"),
            Cmd(0, "MULTI"),
            Cmd(0, "WATCH a"),
            Cmd(0, "SET a 1"),
            Cmd(0, "EXEC"),
            Cmd(0, "MULTI"),
            Cmd(0, "SET a 2"),
            Cmd(0, "DISCARD"),
            Cmd(0, "GET a"),
            Cmd(0, "MULTI"),
            Cmd(0, "UNWATCH"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(0, "WATCH"),
            Cmd(0, "MULTI extra"),
        ],
    );
    run(
        "WATCH: a write by another client aborts EXEC; one before WATCH does not",
        &[
            Cmd(1, "SET a 0"),
            Cmd(0, "WATCH a"),
            Cmd(0, "GET a"),
            Cmd(0, "MULTI"),
            Cmd(0, "SET a 1"),
            Cmd(1, "SET a 5"),
            Cmd(0, "EXEC"),
            Cmd(0, "GET a"),
            Cmd(0, "WATCH a"),
            Cmd(0, "MULTI"),
            Cmd(0, "INCR a"),
            Cmd(0, "EXEC"),
            Cmd(0, "GET a"),
        ],
    );
    run(
        "WATCH: the same value written again, and the client's own write",
        &[
            Cmd(0, "SET a v"),
            Cmd(0, "WATCH a"),
            Cmd(1, "SET a v"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(0, "WATCH a"),
            Cmd(0, "SET a w"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "WATCH of a missing key: created, created and deleted, left alone",
        &[
            Cmd(0, "WATCH m"),
            Cmd(1, "SET m 1"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(0, "DEL m"),
            Cmd(0, "WATCH m"),
            Cmd(1, "SET m 1"),
            Cmd(1, "DEL m"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(0, "WATCH m"),
            Cmd(1, "SET other 1"),
            Cmd(1, "DEL other"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "WATCH: expiry after WATCH aborts; a key expired before WATCH does not",
        &[
            Cmd(0, "SET e v PX 100"),
            Cmd(0, "WATCH e"),
            Sleep(250),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(0, "SET f v PX 50"),
            Sleep(150),
            Cmd(0, "WATCH f"),
            Sleep(150),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(0, "SET g v"),
            Cmd(0, "WATCH g"),
            Cmd(1, "EXPIRE g 100"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "WATCH: FLUSHDB, SWAPDB, RENAME, DEL of another type",
        &[
            Cmd(0, "SET a 1"),
            Cmd(0, "WATCH a absent"),
            Cmd(1, "FLUSHDB"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(0, "WATCH absent"),
            Cmd(1, "FLUSHDB"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(1, "SELECT 1"),
            Cmd(1, "SET s 1"),
            Cmd(0, "WATCH s"),
            Cmd(1, "SWAPDB 0 1"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(1, "FLUSHALL"),
            Cmd(1, "SELECT 0"),
            Cmd(1, "SET src 1"),
            Cmd(0, "WATCH dst"),
            Cmd(1, "RENAME src dst"),
            Cmd(0, "MULTI"),
            Cmd(0, "PING"),
            Cmd(0, "EXEC"),
            Cmd(1, "RPUSH l a b"),
            Cmd(0, "WATCH l"),
            Cmd(1, "LPOP l"),
            Cmd(0, "MULTI"),
            Cmd(0, "LRANGE l 0 -1"),
            Cmd(0, "EXEC"),
            Cmd(0, "WATCH l"),
            Cmd(0, "UNWATCH"),
            Cmd(1, "DEL l"),
            Cmd(0, "MULTI"),
            Cmd(0, "EXISTS l"),
            Cmd(0, "EXEC"),
            Cmd(0, "SET d 1"),
            Cmd(0, "WATCH d"),
            Cmd(0, "MULTI"),
            Cmd(0, "DISCARD"),
            Cmd(1, "SET d 2"),
            Cmd(0, "MULTI"),
            Cmd(0, "GET d"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "blocking commands inside EXEC answer at once",
        &[
            Cmd(0, "MULTI"),
            Cmd(0, "BLPOP nol 0"),
            Cmd(0, "BRPOP nol 1"),
            Cmd(0, "BLMOVE nol dst LEFT RIGHT 0"),
            Cmd(0, "BRPOPLPUSH nol dst 0"),
            Cmd(0, "BLMPOP 0 1 nol LEFT"),
            Cmd(0, "BZPOPMIN noz 0"),
            Cmd(0, "BZMPOP 0 1 noz MIN"),
            Cmd(0, "RPUSH l a"),
            Cmd(0, "BLPOP l 0"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "SELECT inside a transaction, and RESET",
        &[
            Cmd(0, "MULTI"),
            Cmd(0, "SELECT 1"),
            Cmd(0, "SET k v"),
            Cmd(0, "EXEC"),
            Cmd(0, "GET k"),
            Cmd(0, "SELECT 0"),
            Cmd(0, "GET k"),
            Cmd(0, "MULTI"),
            Cmd(0, "SET k w"),
            Cmd(0, "RESET"),
            Cmd(0, "EXEC"),
            Cmd(0, "GET k"),
        ],
    );
    run(
        "RESP3: an aborted EXEC is a null",
        &[
            Any(0, "HELLO 3"),
            Cmd(0, "WATCH a"),
            Cmd(1, "SET a 1"),
            Cmd(0, "MULTI"),
            Cmd(0, "GET a"),
            Cmd(0, "EXEC"),
            Cmd(0, "MULTI"),
            Cmd(0, "HSET h f v"),
            Cmd(0, "HGETALL h"),
            Cmd(0, "EXEC"),
        ],
    );
}

#[test]
fn a_client_blocked_on_a_key_is_served_after_the_exec_that_pushed_it() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&["--maxmemory-ram", "16mb"]);
    for port in [redis.port, strata.port] {
        let mut a = Conn::connect(port);
        let mut b = Conn::connect(port);
        a.cmd(&[b"FLUSHALL"]);
        // b blocks; a's transaction pushes and reads the length before b
        // is served (as Redis serves blocked clients after EXEC).
        b.send(&[b"BLPOP".to_vec(), b"q".to_vec(), b"0".to_vec()]);
        std::thread::sleep(Duration::from_millis(100));
        let words = ["MULTI", "RPUSH q x y", "LLEN q", "EXEC"];
        let mut last = Vec::new();
        for w in words {
            let args: Vec<&[u8]> = w.split(' ').map(str::as_bytes).collect();
            last = a.cmd(&args).bytes;
        }
        assert_eq!(
            String::from_utf8_lossy(&last),
            "*2\r\n:2\r\n:2\r\n",
            "port {port}"
        );
        assert_eq!(
            String::from_utf8_lossy(&b.reply().bytes),
            "*2\r\n$1\r\nq\r\n$1\r\nx\r\n",
            "port {port}"
        );
        assert_eq!(a.cmd(&[b"LLEN", b"q"]).bytes, b":1\r\n", "port {port}");
    }
}

/// Transfers and sums in MULTI/EXEC over accounts of every shard on flash
/// (`common::accounts`): no sum ever sees a transfer half done.
#[test]
fn exec_is_atomic_across_shards_and_values_on_flash() {
    const ACCOUNTS: usize = 600;
    let srv = common::accounts::server();
    common::accounts::open(&mut srv.client(), ACCOUNTS);
    let transfer = |con: &mut redis::Connection, a: usize, b: usize, amount: i64| {
        let mut p = redis::pipe();
        p.atomic();
        p.cmd("HINCRBY")
            .arg(format!("acct:{a}"))
            .arg("n")
            .arg(-amount)
            .ignore();
        p.cmd("HINCRBY")
            .arg(format!("acct:{b}"))
            .arg("n")
            .arg(amount)
            .ignore();
        // A write refused while demotion catches up with what the readers
        // brought back (-OOM: the transaction is discarded whole) is
        // retried.
        let mut tries = 0;
        while let Err(e) = p.query::<()>(con) {
            tries += 1;
            assert!(e.code() == Some("OOM") && tries < 200, "{e}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let sum = |con: &mut redis::Connection| -> i64 {
        let mut p = redis::pipe();
        p.atomic();
        for i in 0..ACCOUNTS {
            p.cmd("HGET").arg(format!("acct:{i}")).arg("n");
        }
        p.query::<Vec<i64>>(con).unwrap().iter().sum()
    };
    let (reads, fetches) = common::accounts::run(&srv, ACCOUNTS, transfer, sum);
    eprintln!("atomicity: {reads} summing transactions, {fetches} fetches from flash");
}

/// MGET and EXISTS over keys of many shards see another client's
/// transaction whole or not at all (they hold the keys' shards together).
#[test]
fn mget_and_exists_see_a_transaction_whole() {
    let srv = common::start();
    let keys: Vec<String> = (0..16).map(|i| format!("w:{i}")).collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (url, keys) = (srv.url(), keys.clone());
        std::thread::spawn(move || {
            let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
            for gen in 0..400u32 {
                let mut p = redis::pipe();
                p.atomic();
                for k in &keys {
                    if gen % 3 == 2 {
                        p.cmd("DEL").arg(k).ignore();
                    } else {
                        p.cmd("SET").arg(k).arg(gen).ignore();
                    }
                }
                let _: () = p.query(&mut con).unwrap();
            }
        })
    };
    let reader = {
        let (url, keys, stop) = (srv.url(), keys.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || reads == 0 {
                let got: Vec<Option<u32>> = redis::cmd("MGET").arg(&keys).query(&mut con).unwrap();
                let distinct: std::collections::BTreeSet<_> = got.iter().collect();
                assert_eq!(
                    distinct.len(),
                    1,
                    "MGET saw a transaction half done: {got:?}"
                );
                let n: usize = redis::cmd("EXISTS").arg(&keys).query(&mut con).unwrap();
                assert!(n == 0 || n == keys.len(), "EXISTS counted {n}");
                reads += 1;
            }
            reads
        })
    };
    writer.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().unwrap();
    eprintln!("mget/exists: {reads} reads");
}

/// Optimistic locking (WATCH, GET, MULTI, SET, EXEC, retried when EXEC
/// aborts) from several clients loses no increment.
#[test]
fn watch_makes_read_modify_write_safe() {
    let srv = common::start();
    const THREADS: usize = 4;
    const EACH: usize = 150;
    let mut threads = Vec::new();
    for _ in 0..THREADS {
        let url = srv.url();
        threads.push(std::thread::spawn(move || {
            let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut retries = 0usize;
            for _ in 0..EACH {
                let _: () = redis::transaction(&mut con, &["counter"], |con, pipe| {
                    let n: Option<u64> = redis::cmd("GET").arg("counter").query(con)?;
                    let r: Option<()> = pipe
                        .set("counter", n.unwrap_or(0) + 1)
                        .ignore()
                        .query(con)?;
                    if r.is_none() {
                        retries += 1;
                    }
                    Ok(r)
                })
                .unwrap();
            }
            retries
        }));
    }
    let retries: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let mut con = srv.client();
    let n: u64 = common::q(&mut con, "GET counter");
    assert_eq!(n, (THREADS * EACH) as u64);
    eprintln!(
        "watch: {} increments, {retries} EXECs aborted and retried",
        n
    );
}

/// Under `appendfsync always` EXEC is answered once the whole transaction
/// is durable: after kill -9 every acknowledged transaction is there.
#[test]
fn an_acknowledged_exec_survives_kill_9() {
    let mut srv = common::Server::start(&["--maxmemory-ram", "16mb", "--appendfsync", "always"]);
    let mut con = srv.client();
    for i in 0..200u32 {
        let mut p = redis::pipe();
        p.atomic();
        p.cmd("SET").arg(format!("t:{i}:a")).arg(i).ignore();
        p.cmd("HSET")
            .arg(format!("t:{i}:h"))
            .arg("f")
            .arg(i)
            .ignore();
        p.cmd("RPUSH").arg("t:list").arg(i).ignore();
        let _: () = p.query(&mut con).unwrap();
    }
    drop(con);
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    for i in 0..200u32 {
        let a: u32 = common::q(&mut con, &format!("GET t:{i}:a"));
        let h: u32 = common::q(&mut con, &format!("HGET t:{i}:h f"));
        assert_eq!((a, h), (i, i));
    }
    let n: u64 = common::q(&mut con, "LLEN t:list");
    assert_eq!(n, 200);
}

/// Transfers by MULTI/EXEC and by Lua, and SMOVE of one member between two
/// sets, from several clients, with kill -9 landing while they run: after
/// each restart the counters' sum is intact and the member is in exactly
/// one set — recovery restores all of a transaction, a script or a
/// multi-key command, or none of it (the journal's atomic batches), with
/// `appendfsync always` and `everysec` alike.
#[test]
fn transfers_keep_their_sum_across_kill_9_mid_flight() {
    const COUNTERS: u32 = 8;
    const START: i64 = 10_000;
    for fsync in ["always", "everysec"] {
        let mut srv = common::Server::start(&["--appendfsync", fsync]);
        {
            let mut con = srv.client();
            for i in 0..COUNTERS {
                let _: () = common::q(&mut con, &format!("SET c:{i} {START}"));
            }
            let _: () = common::q(&mut con, "SADD s:1 m");
        }
        for round in 0..3u64 {
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let threads: Vec<_> = (0..4u64)
                .map(|t| {
                    let url = srv.url();
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        let Ok(mut con) = redis::Client::open(url).and_then(|c| c.get_connection())
                        else {
                            return 0;
                        };
                        let script = redis::Script::new(
                            "redis.call('DECRBY', KEYS[1], ARGV[1]) \
                             return redis.call('INCRBY', KEYS[2], ARGV[1])",
                        );
                        let mut n = 0u64;
                        let mut x = round * 7919 + t * 104_729;
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            let (a, b, amt) = ((x >> 33) % 8, (x >> 40) % 8, (x >> 50) % 100);
                            let r: redis::RedisResult<()> = match t {
                                0 => {
                                    let from = if n.is_multiple_of(2) { "s:1" } else { "s:2" };
                                    let to = if n.is_multiple_of(2) { "s:2" } else { "s:1" };
                                    redis::cmd("SMOVE")
                                        .arg(from)
                                        .arg(to)
                                        .arg("m")
                                        .query(&mut con)
                                }
                                1 => script
                                    .key(format!("c:{a}"))
                                    .key(format!("c:{b}"))
                                    .arg(amt)
                                    .invoke(&mut con),
                                _ => redis::pipe()
                                    .atomic()
                                    .cmd("DECRBY")
                                    .arg(format!("c:{a}"))
                                    .arg(amt)
                                    .ignore()
                                    .cmd("INCRBY")
                                    .arg(format!("c:{b}"))
                                    .arg(amt)
                                    .ignore()
                                    .query(&mut con),
                            };
                            if r.is_err() {
                                break; // the server was killed
                            }
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_millis(300 + 150 * round));
            srv.kill9();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let done: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
            srv.restart();
            let mut con = srv.client();
            let mut sum = 0i64;
            for i in 0..COUNTERS {
                let v: i64 = common::q(&mut con, &format!("GET c:{i}"));
                sum += v;
            }
            let in1: bool = common::q(&mut con, "SISMEMBER s:1 m");
            let in2: bool = common::q(&mut con, "SISMEMBER s:2 m");
            eprintln!("{fsync} round {round}: {done} operations acknowledged before kill -9");
            assert!(
                done > 100,
                "{fsync} round {round}: only {done} operations ran"
            );
            assert_eq!(sum, START * COUNTERS as i64, "{fsync} round {round}");
            assert!(
                in1 != in2,
                "{fsync} round {round}: in s:1 {in1}, in s:2 {in2}"
            );
        }
    }
}

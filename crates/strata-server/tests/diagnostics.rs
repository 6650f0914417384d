//! The commands clients and tools probe (issue #11, point 6, in part):
//! WAIT, LATENCY, INFO commandstats / latencystats, CLIENT PAUSE /
//! UNPAUSE / REPLY / NO-EVICT / KILL filters, MEMORY STATS / DOCTOR, and
//! DEBUG (refused unless `enable-debug-command` allows it; SLEEP, OBJECT,
//! SET-ACTIVE-EXPIRE, RELOAD). Deterministic replies are compared with a
//! real redis-server 7.0.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};
use std::time::{Duration, Instant};

fn both(r: &mut Conn, s: &mut Conn, args: &[&[u8]]) {
    let (a, b) = (r.cmd(args), s.cmd(args));
    assert_eq!(
        String::from_utf8_lossy(&a.bytes),
        String::from_utf8_lossy(&b.bytes),
        "{:?}: redis vs strata",
        args.iter()
            .map(|x| String::from_utf8_lossy(x))
            .collect::<Vec<_>>()
    );
}

#[test]
fn probes_reply_as_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    let steps: &[&[&[u8]]] = &[
        &[b"WAIT", b"0", b"0"],
        &[b"WAIT", b"0", b"-1"],
        &[b"WAIT", b"x", b"0"],
        &[b"WAIT", b"0", b"x"],
        &[b"WAIT", b"0"],
        &[b"LATENCY", b"LATEST"],
        &[b"LATENCY", b"HISTORY", b"command"],
        &[b"LATENCY", b"HISTORY"],
        &[b"LATENCY", b"RESET"],
        &[b"LATENCY", b"RESET", b"a", b"b"],
        &[b"LATENCY", b"GRAPH", b"command"],
        &[b"LATENCY", b"DOCTOR"],
        &[b"LATENCY", b"HELP"],
        &[b"LATENCY", b"FOO"],
        &[b"CLIENT", b"NO-EVICT", b"on"],
        &[b"CLIENT", b"NO-EVICT", b"maybe"],
        &[b"CLIENT", b"NO-EVICT", b"off"],
        &[b"CLIENT", b"PAUSE", b"10", b"bad"],
        &[b"CLIENT", b"PAUSE", b"-1"],
        &[b"CLIENT", b"PAUSE", b"x"],
        &[b"CLIENT", b"UNPAUSE"],
        &[b"CLIENT", b"REPLY", b"maybe"],
        &[b"CLIENT", b"KILL", b"USER", b"nobody"],
        &[b"CLIENT", b"KILL", b"TYPE", b"replica"],
        &[b"CLIENT", b"KILL", b"TYPE", b"bogus"],
        &[b"MEMORY", b"DOCTOR"],
    ];
    for step in steps {
        both(&mut r, &mut s, step);
    }
    // CLIENT REPLY: OFF drops replies until ON, SKIP drops the next one.
    for c in [&mut r, &mut s] {
        for cmd in [
            &[&b"CLIENT"[..], b"REPLY", b"OFF"][..],
            &[b"SET", b"k", b"1"],
            &[b"GET", b"k"],
            &[b"CLIENT", b"REPLY", b"ON"],
            &[b"CLIENT", b"REPLY", b"SKIP"],
            &[b"GET", b"k"],
            &[b"ECHO", b"after"],
        ] {
            c.send(&cmd.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
        }
        assert_eq!(c.reply().bytes, b"+OK\r\n");
        assert_eq!(c.reply().bytes, b"$5\r\nafter\r\n");
    }
    // CLIENT NO-EVICT shows as the `e` flag.
    s.cmd(&[b"CLIENT", b"NO-EVICT", b"on"]);
    let info = String::from_utf8_lossy(&s.cmd(&[b"CLIENT", b"INFO"]).bytes).to_string();
    assert!(info.contains(" flags=e "), "{info}");
    // Every client is the default user's and a normal one.
    let mut other = Conn::connect(strata.port);
    other.cmd(&[b"PING"]);
    assert_eq!(
        s.cmd(&[b"CLIENT", b"KILL", b"USER", b"default"]).bytes,
        b":1\r\n"
    );
    // DEBUG: refused by default, as in Redis 7.
    let plain = common::Server::start(&["--enable-debug-command", "no"]);
    let mut p = Conn::connect(plain.port);
    let redis_plain = RedisServer::start_with(&[]);
    let mut rp = Conn::connect(redis_plain.port);
    both(&mut rp, &mut p, &[b"DEBUG", b"SLEEP", b"0"]);
}

#[test]
fn commandstats_and_latency_histogram_count_calls() {
    let srv = common::Server::start(&[]);
    let mut c = Conn::connect(srv.port);
    for _ in 0..5 {
        c.cmd(&[b"SET", b"k", b"v"]);
    }
    c.cmd(&[b"INCR", b"k"]);
    c.cmd(&[b"GET"]);
    let info = String::from_utf8_lossy(&c.cmd(&[b"INFO", b"commandstats"]).bytes).to_string();
    assert!(info.contains("cmdstat_set:calls=5,"), "{info}");
    assert!(
        info.contains("cmdstat_incr:calls=1,") && info.contains("failed_calls=1"),
        "{info}"
    );
    assert!(
        info.contains("cmdstat_get:calls=0,") && info.contains("rejected_calls=1"),
        "{info}"
    );
    let lat = String::from_utf8_lossy(&c.cmd(&[b"INFO", b"latencystats"]).bytes).to_string();
    assert!(lat.contains("latency_percentiles_usec_set:p50="), "{lat}");
    let h = c.cmd(&[b"LATENCY", b"HISTOGRAM", b"set"]);
    let text = format!("{:?}", h.frame);
    assert!(
        text.contains("set") && text.contains("calls") && text.contains("histogram_usec"),
        "{text}"
    );
    // The default INFO leaves the per-command sections out, as Redis.
    let all = String::from_utf8_lossy(&c.cmd(&[b"INFO"]).bytes).to_string();
    assert!(!all.contains("# Commandstats"));
    c.cmd(&[b"CONFIG", b"RESETSTAT"]);
    let info = String::from_utf8_lossy(&c.cmd(&[b"INFO", b"commandstats"]).bytes).to_string();
    assert!(!info.contains("cmdstat_set"), "{info}");
    let stats = format!("{:?}", c.cmd(&[b"MEMORY", b"STATS"]).frame);
    for f in [
        "peak.allocated",
        "total.allocated",
        "keys.count",
        "dataset.bytes",
        "fragmentation",
    ] {
        assert!(stats.contains(f), "{f}: {stats}");
    }
}

#[test]
fn client_pause_holds_writes_or_everything_until_unpaused() {
    let srv = common::Server::start(&[]);
    let mut c = Conn::connect(srv.port);
    let mut other = Conn::connect(srv.port);
    c.cmd(&[b"SET", b"k", b"1"]);
    assert_eq!(
        c.cmd(&[b"CLIENT", b"PAUSE", b"600", b"WRITE"]).bytes,
        b"+OK\r\n"
    );
    let t = Instant::now();
    assert_eq!(other.cmd(&[b"GET", b"k"]).bytes, b"$1\r\n1\r\n");
    assert!(
        t.elapsed() < Duration::from_millis(400),
        "a read waited under WRITE"
    );
    let t = Instant::now();
    assert_eq!(other.cmd(&[b"SET", b"k", b"2"]).bytes, b"+OK\r\n");
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "a write ran under WRITE"
    );
    // UNPAUSE lifts a pause at once.
    c.cmd(&[b"CLIENT", b"PAUSE", b"5000", b"WRITE"]);
    let t = Instant::now();
    other.send(&[b"SET".to_vec(), b"k".to_vec(), b"3".to_vec()]);
    other.flush();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        c.cmd(&[b"GET", b"k"]).bytes,
        b"$1\r\n2\r\n",
        "the SET ran while paused"
    );
    c.cmd(&[b"CLIENT", b"UNPAUSE"]);
    assert_eq!(other.reply().bytes, b"+OK\r\n");
    assert!(t.elapsed() < Duration::from_millis(2000));
    assert_eq!(c.cmd(&[b"GET", b"k"]).bytes, b"$1\r\n3\r\n");
    // ALL holds reads too.
    c.cmd(&[b"CLIENT", b"PAUSE", b"500", b"ALL"]);
    let t = Instant::now();
    other.cmd(&[b"GET", b"k"]);
    assert!(
        t.elapsed() >= Duration::from_millis(350),
        "a read ran under ALL"
    );
}

/// CLIENT PAUSE WRITE holds what may propagate, as Redis 7.0: PFCOUNT,
/// PUBLISH, EXEC of queued writes, a script without `no-writes`; not a
/// script flagged `no-writes`, EVAL_RO, nor EXEC of reads. INFO counts
/// the held clients in `blocked_clients` (Redis's test suite waits on it).
#[test]
fn client_pause_write_holds_what_may_propagate() {
    let srv = common::Server::start(&[]);
    let mut c = Conn::connect(srv.port);
    c.cmd(&[b"PFADD", b"h", b"a"]);
    let blocked = |c: &mut Conn| -> String {
        let info = String::from_utf8_lossy(&c.cmd(&[b"INFO", b"clients"]).bytes).to_string();
        info.lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .unwrap_or("?")
            .trim()
            .to_string()
    };
    let words = |w: &str| -> Vec<Vec<u8>> { w.split(' ').map(|x| x.as_bytes().to_vec()).collect() };
    // A write is held even when it is only queued (as in Redis): queue
    // it before the pause.
    let mut m = Conn::connect(srv.port);
    assert_eq!(m.cmd(&[b"MULTI"]).bytes, b"+OK\r\n");
    assert_eq!(m.cmd(&[b"SET", b"k", b"v"]).bytes, b"+QUEUED\r\n");
    assert_eq!(
        c.cmd(&[b"CLIENT", b"PAUSE", b"60000", b"WRITE"]).bytes,
        b"+OK\r\n"
    );
    let mut held: Vec<Conn> = Vec::new();
    // (`return` with no value: a nil reply.)
    for cmd in ["PFCOUNT h", "PUBLISH ch m", "EVAL return 0"] {
        let mut x = Conn::connect(srv.port);
        x.send(&words(cmd));
        x.flush();
        held.push(x);
    }
    m.send(&words("EXEC"));
    m.flush();
    held.push(m);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(blocked(&mut c), "4");
    // Not held: answered while the pause lasts.
    let mut r = Conn::connect(srv.port);
    let t = Instant::now();
    assert_eq!(
        r.cmd(&[b"EVAL", b"#!lua flags=no-writes\nreturn 2", b"0"])
            .bytes,
        b":2\r\n"
    );
    assert_eq!(r.cmd(&[b"EVAL_RO", b"return 3", b"0"]).bytes, b":3\r\n");
    assert_eq!(r.cmd(&[b"MULTI"]).bytes, b"+OK\r\n");
    assert_eq!(r.cmd(&[b"GET", b"k"]).bytes, b"+QUEUED\r\n");
    assert_eq!(r.cmd(&[b"EXEC"]).bytes, b"*1\r\n$-1\r\n");
    assert!(t.elapsed() < Duration::from_secs(5), "a read was held");
    c.cmd(&[b"CLIENT", b"UNPAUSE"]);
    let replies: Vec<Vec<u8>> = held.iter_mut().map(|x| x.reply().bytes).collect();
    assert_eq!(
        replies,
        [
            b":1\r\n".to_vec(),
            b":0\r\n".to_vec(),
            b"$-1\r\n".to_vec(),
            b"*1\r\n+OK\r\n".to_vec()
        ]
    );
    assert_eq!(blocked(&mut c), "0");
}

#[test]
fn debug_sleep_object_active_expire_and_reload() {
    let srv = common::Server::start(&[]);
    let mut c = Conn::connect(srv.port);
    let mut other = Conn::connect(srv.port);
    c.cmd(&[b"SET", b"k", b"hello"]);
    // SLEEP stops the whole server, as Redis's does.
    c.send(&[b"DEBUG".to_vec(), b"SLEEP".to_vec(), b"0.5".to_vec()]);
    c.flush();
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    assert_eq!(other.cmd(&[b"GET", b"k"]).bytes, b"$5\r\nhello\r\n");
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "GET ran during DEBUG SLEEP"
    );
    assert_eq!(c.reply().bytes, b"+OK\r\n");
    let obj = String::from_utf8_lossy(&c.cmd(&[b"DEBUG", b"OBJECT", b"k"]).bytes).to_string();
    assert!(
        obj.starts_with("+Value at:") && obj.contains(" encoding:embstr "),
        "{obj}"
    );
    assert_eq!(
        c.cmd(&[b"DEBUG", b"OBJECT", b"nokey"]).bytes,
        b"-ERR no such key\r\n"
    );
    // Without the active sweep, an expired key no one reads stays counted.
    let expired =
        |c: &mut Conn| -> u64 { oracle::info(c, "stats")["expired_keys"].parse().unwrap() };
    assert_eq!(
        c.cmd(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"]).bytes,
        b"+OK\r\n"
    );
    c.cmd(&[b"SET", b"gone", b"1", b"PX", b"30"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(expired(&mut c), 0, "the sweep ran while off");
    c.cmd(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"1"]);
    let t = Instant::now();
    while expired(&mut c) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the sweep never ran again"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(c.cmd(&[b"DEBUG", b"RELOAD"]).bytes, b"+OK\r\n");
    assert_eq!(c.cmd(&[b"GET", b"k"]).bytes, b"$5\r\nhello\r\n");
    // DEBUG RELOAD reads every value back from its record, as Redis reads
    // its file back: after it a value is on flash only, and the next read
    // fetches and decodes it (a string, a hash, a stream).
    let long = vec![b'v'; 300];
    c.cmd(&[b"SET", b"s", &long]);
    c.cmd(&[b"HSET", b"h", b"f", &long, b"g", b"2"]);
    c.cmd(&[b"XADD", b"x", b"1-1", b"f", &long]);
    let tier = |c: &mut Conn, k: &[u8]| {
        String::from_utf8_lossy(&c.cmd(&[b"DEBUG", b"TIER", k]).bytes).to_string()
    };
    assert!(
        tier(&mut c, b"s").contains("tier:ram"),
        "{}",
        tier(&mut c, b"s")
    );
    assert_eq!(c.cmd(&[b"DEBUG", b"RELOAD"]).bytes, b"+OK\r\n");
    for k in [&b"s"[..], b"h", b"x"] {
        let t = tier(&mut c, k);
        assert!(
            t.contains("tier:flash"),
            "{}: {t}",
            String::from_utf8_lossy(k)
        );
    }
    let fetches = |c: &mut Conn| -> u64 {
        oracle::info(c, "tiered")["tiered_total_fetches"]
            .parse()
            .unwrap()
    };
    let before = fetches(&mut c);
    assert_eq!(
        c.cmd(&[b"GET", b"s"]).bytes,
        [&b"$300\r\n"[..], &long, b"\r\n"].concat()
    );
    assert_eq!(
        c.cmd(&[b"HGET", b"h", b"f"]).bytes,
        [&b"$300\r\n"[..], &long, b"\r\n"].concat()
    );
    assert_eq!(c.cmd(&[b"XLEN", b"x"]).bytes, b":1\r\n");
    assert!(
        fetches(&mut c) >= before + 2,
        "the values were read from flash"
    );
}

/// CLIENT NO-TOUCH ON: the client's reads leave a key's idle time alone
/// (TOUCH still touches); another client's read resets it.
#[test]
fn no_touch_reads_leave_idle_time_alone() {
    let srv = common::Server::start(&[]);
    let mut quiet = Conn::connect(srv.port);
    let mut loud = Conn::connect(srv.port);
    quiet.cmd(&[b"SET", b"k", b"v"]);
    quiet.cmd(&[b"HSET", b"h", b"f", b"v"]);
    assert_eq!(
        quiet.cmd(&[b"CLIENT", b"NO-TOUCH", b"ON"]).bytes,
        b"+OK\r\n"
    );
    let info = String::from_utf8_lossy(&quiet.cmd(&[b"CLIENT", b"INFO"]).bytes).to_string();
    assert!(info.contains(" flags=T "), "{info}");
    std::thread::sleep(Duration::from_millis(2200));
    let idle = |c: &mut Conn, k: &[u8]| -> i64 {
        let r = c.cmd(&[b"OBJECT", b"IDLETIME", k]);
        String::from_utf8_lossy(&r.bytes[1..r.bytes.len() - 2])
            .parse()
            .unwrap()
    };
    quiet.cmd(&[b"GET", b"k"]);
    quiet.cmd(&[b"MGET", b"k"]);
    quiet.cmd(&[b"HGET", b"h", b"f"]);
    assert!(idle(&mut quiet, b"k") >= 2, "a NO-TOUCH read touched k");
    assert!(idle(&mut quiet, b"h") >= 2, "a NO-TOUCH read touched h");
    quiet.cmd(&[b"TOUCH", b"h"]);
    assert_eq!(idle(&mut quiet, b"h"), 0, "TOUCH did not touch");
    loud.cmd(&[b"GET", b"k"]);
    assert_eq!(idle(&mut quiet, b"k"), 0, "a plain read did not touch");
}

/// HyperLogLog strings a client crafted (cut-off opcodes, runs past the
/// last register) get Redis's errors and leave the server serving.
#[test]
fn crafted_hll_strings_get_redis_errors() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    let header = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
    for tail in [
        &b"\x40"[..],        // an XZERO cut short
        b"\x7f\xff\x80",     // a VAL past the last register
        b"\x7f\xfe\x00\x00", // ZEROs past the last register
        b"\x7f\xfe",         // one register short
    ] {
        let mut v = header.clone();
        v.extend_from_slice(tail);
        both(&mut r, &mut s, &[b"SET", b"h", &v]);
        both(&mut r, &mut s, &[b"PFADD", b"h", b"a", b"b", b"c"]);
        both(&mut r, &mut s, &[b"PFCOUNT", b"h"]);
        both(&mut r, &mut s, &[b"PFCOUNT", b"h", b"other"]);
        both(&mut r, &mut s, &[b"PFMERGE", b"d", b"h"]);
    }
    both(&mut r, &mut s, &[b"PING"]);
}

//! Keyspace notifications (issue #11, point 2): the seeded random command
//! mix of the differential test runs on redis-server 7.0 and on Strata,
//! both with `notify-keyspace-events KEA`, while a subscriber on each
//! listens to `__key*__:*`; after every command, the notifications it
//! caused on each server are compared (as multisets: within one command
//! Strata may report keys in another order). Expired, evicted and new-key
//! events, and CONFIG's flag strings, are checked on their own.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/gen/mod.rs"]
mod gen;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};
use rand::SeedableRng;
use strata_protocol::Frame;

/// The notifications a subscriber received up to the marker published
/// after the command (channel, message), sorted.
fn until_marker(sub: &mut Conn, marker: &[u8]) -> Vec<(String, String)> {
    let mut got = Vec::new();
    loop {
        let r = sub.reply();
        let Frame::Array(a) = r.frame else {
            panic!("not a message: {:?}", r.frame)
        };
        let text = |f: &Frame| match f {
            Frame::Bulk(b) => String::from_utf8_lossy(b).to_string(),
            other => format!("{other:?}"),
        };
        let (chan, msg) = (text(&a[2]), text(&a[3]));
        if msg.as_bytes() == marker {
            break;
        }
        got.push((chan, msg));
    }
    got.sort();
    got
}

#[test]
fn notifications_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&["--maxmemory-ram", "8mb"]);
    let mut cmd = [Conn::connect(redis.port), Conn::connect(strata.port)];
    let mut sub = [Conn::connect(redis.port), Conn::connect(strata.port)];
    // `STRATA_DIFF_SEED` replays another mix.
    let seed: u64 = std::env::var("STRATA_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let mut g = gen::Gen::new(rand::rngs::StdRng::seed_from_u64(seed));
    for c in cmd.iter_mut() {
        c.cmd(&[b"FLUSHALL"]);
    }
    // Ballast: Strata's collections then compete for RAM, and commands on
    // cold values send their notifications from a pending reply.
    for (args, _) in g.ballast() {
        for c in cmd.iter_mut() {
            c.send(&args);
            c.reply();
        }
    }
    for (c, s) in cmd.iter_mut().zip(sub.iter_mut()) {
        assert_eq!(
            c.cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"KEA"])
                .bytes,
            b"+OK\r\n"
        );
        s.cmd(&[b"PSUBSCRIBE", b"__key*__:*"]);
    }
    // Demotion runs in the background: wait for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let flash = oracle::info(&mut cmd[1], "tiered");
        if flash["values_in_flash"] != "0" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no value went to flash: {flash:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let total: usize = std::env::var("STRATA_DIFF_COMMANDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12_000);
    let mut history = Vec::new();
    let mut n = 0;
    while n < total {
        let (args, check) = g.next();
        // A random pick would leave the servers' keys different.
        if check.is_random() {
            continue;
        }
        n += 1;
        history.push(gen::show(&args));
        let replies: Vec<_> = cmd
            .iter_mut()
            .map(|c| {
                c.send(&args);
                c.reply()
            })
            .collect();
        let marker = format!("marker:{n}");
        let mut events = Vec::new();
        for (c, s) in cmd.iter_mut().zip(sub.iter_mut()) {
            c.cmd(&[b"PUBLISH", b"__keyspace@0__:marker", marker.as_bytes()]);
            events.push(until_marker(s, marker.as_bytes()));
        }
        if let Err(why) = check.compare(&replies[0], &replies[1]) {
            panic!("reply to {}: {why}", gen::show(&args));
        }
        assert_eq!(
            events[0],
            events[1],
            "notifications of command #{n}: {}\nlast commands:\n  {}",
            gen::show(&args),
            history[history.len().saturating_sub(15)..].join("\n  ")
        );
    }
}

/// `expired` when a key's time comes (lazily or by the sweep), `new` for
/// a new key under `n`, and the flag strings as CONFIG GET shows them.
#[test]
fn expired_new_and_config_as_redis() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    for port in [redis.port, strata.port] {
        let mut c = Conn::connect(port);
        let mut s = Conn::connect(port);
        for (set, get) in [("KEA", "AKE"), ("Kl$", "$lK"), ("Exn", "xnE"), ("", "")] {
            c.cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", set.as_bytes()]);
            let r = c.cmd(&[b"CONFIG", b"GET", b"notify-keyspace-events"]);
            assert!(
                r.bytes
                    .ends_with(format!("${}\r\n{get}\r\n", get.len()).as_bytes()),
                "{port}: {set} -> {:?}",
                String::from_utf8_lossy(&r.bytes)
            );
        }
        let bad = c.cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"KQ"]);
        assert!(
            String::from_utf8_lossy(&bad.bytes).contains("Invalid event class character"),
            "{port}: {:?}",
            String::from_utf8_lossy(&bad.bytes)
        );
        c.cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"KExn"]);
        s.cmd(&[b"PSUBSCRIBE", b"__key*__:*"]);
        c.cmd(&[b"SET", b"gone", b"1", b"PX", b"50"]);
        c.cmd(&[b"SET", b"lazy", b"1", b"PX", b"20"]);
        std::thread::sleep(std::time::Duration::from_millis(60));
        c.cmd(&[b"GET", b"lazy"]);
        // The sweep finds `gone` by itself within a second or two.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        c.cmd(&[b"PUBLISH", b"__keyspace@0__:marker", b"end"]);
        let got = until_marker(&mut s, b"end");
        let want: Vec<(String, String)> = vec![
            ("__keyevent@0__:expired".into(), "gone".into()),
            ("__keyevent@0__:expired".into(), "lazy".into()),
            ("__keyevent@0__:new".into(), "gone".into()),
            ("__keyevent@0__:new".into(), "lazy".into()),
            ("__keyspace@0__:gone".into(), "expired".into()),
            ("__keyspace@0__:gone".into(), "new".into()),
            ("__keyspace@0__:lazy".into(), "expired".into()),
            ("__keyspace@0__:lazy".into(), "new".into()),
        ];
        assert_eq!(got, want, "port {port}");
    }
}

/// CONFIG SET maxmemory below what is used evicts at once under an
/// evicting policy (as Redis: not at the next write), with its events; under
/// noeviction it evicts nothing.
#[test]
fn lowering_maxmemory_evicts_at_once_as_redis() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    for port in [redis.port, strata.port] {
        let mut c = Conn::connect(port);
        let mut s = Conn::connect(port);
        c.cmd(&[b"SET", b"keep", b"1"]);
        c.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"1"]);
        assert_eq!(c.cmd(&[b"DBSIZE"]).bytes, b":1\r\n", "{port}: noeviction");
        c.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"0"]);
        c.cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"Ee"]);
        c.cmd(&[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lru"]);
        s.cmd(&[b"PSUBSCRIBE", b"__key*__:*"]);
        c.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"1"]);
        let r = s.reply();
        assert!(
            String::from_utf8_lossy(&r.bytes).contains("__keyevent@0__:evicted"),
            "{port}: {:?}",
            String::from_utf8_lossy(&r.bytes)
        );
        assert_eq!(c.cmd(&[b"DBSIZE"]).bytes, b":0\r\n", "{port}");
        c.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"0"]);
        c.cmd(&[b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction"]);
    }
}

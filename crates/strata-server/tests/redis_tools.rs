//! What Redis's own test suite and client libraries' test suites probe
//! beside the data commands, every reply compared with a real
//! redis-server 7.0: DEBUG PROTOCOL's sample of each RESP type (RESP2 and
//! RESP3), RESTORE's IDLETIME as OBJECT IDLETIME reads it, INFO
//! replication's fields, FUNCTION's own argument errors and its refusal
//! under the memory limit, and `redis.register_function` kept past FUNCTION
//! LOAD.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};

/// Sends `args` to both and compares the replies byte for byte.
fn same(r: &mut Conn, s: &mut Conn, args: &[&[u8]]) {
    let (a, b) = (r.cmd(args), s.cmd(args));
    assert_eq!(
        String::from_utf8_lossy(&a.bytes),
        String::from_utf8_lossy(&b.bytes),
        "{:?}",
        args.iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>()
    );
}

#[test]
fn debug_protocol_restore_idletime_and_info_replication_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    let types = [
        "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
        "verbatim", "true", "false", "nosuch",
    ];
    for resp3 in [false, true] {
        if resp3 {
            r.cmd(&[b"HELLO", b"3"]);
            s.cmd(&[b"HELLO", b"3"]);
        }
        for t in types {
            same(&mut r, &mut s, &[b"DEBUG", b"PROTOCOL", t.as_bytes()]);
            if t == "push" && resp3 {
                // The push comes first, then the reply that follows it.
                let (a, b) = (r.reply(), s.reply());
                assert_eq!(a.bytes, b.bytes);
            }
        }
    }
    r.cmd(&[b"HELLO", b"2"]);
    s.cmd(&[b"HELLO", b"2"]);
    // RESTORE ... IDLETIME sets what OBJECT IDLETIME reads.
    same(&mut r, &mut s, &[b"SET", b"foo", b"bar"]);
    let p = match r.cmd(&[b"DUMP", b"foo"]).frame {
        strata_protocol::Frame::Bulk(b) => b.to_vec(),
        f => panic!("DUMP: {f:?}"),
    };
    for c in [&mut r, &mut s] {
        let reply = c.cmd(&[b"RESTORE", b"idle", b"0", &p, b"IDLETIME", b"1000"]);
        assert_eq!(reply.bytes, b"+OK\r\n");
    }
    same(&mut r, &mut s, &[b"OBJECT", b"IDLETIME", b"idle"]);
    same(
        &mut r,
        &mut s,
        &[b"RESTORE", b"x", b"0", &p, b"IDLETIME", b"-1"],
    );
    same(
        &mut r,
        &mut s,
        &[b"RESTORE", b"x", b"0", &p, b"FREQ", b"256"],
    );
    // INFO replication: a master without replicas, field for field.
    let fields = |c: &mut Conn| -> Vec<String> {
        let info = c.cmd(&[b"INFO", b"replication"]);
        String::from_utf8_lossy(&info.bytes)
            .lines()
            .skip(1)
            .filter(|l| l.contains(':'))
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                // The replication id is per run.
                if k == "master_replid" {
                    format!("{k}:<id of {} hex digits>", v.trim().len())
                } else {
                    l.trim().to_string()
                }
            })
            .collect()
    };
    assert_eq!(fields(&mut r), fields(&mut s));
}

#[test]
fn function_argument_errors_and_oom_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    let lib = b"#!lua name=lib1\nlocal lib = redis\nlib.register_function('f2', function() lib.register_function('f1', function() return 1 end) end)";
    let oom_lib: &[u8] = b"#!lua name=oom\nredis.register_function('w', function() return redis.call('set', 'x', '1') end)\nredis.register_function{function_name='ro', callback=function() return 'hello' end, flags={'no-writes'}}\nredis.register_function{function_name='oom_ok', callback=function() return redis.call('set', 'y', '1') end, flags={'allow-oom'}}";
    let steps: &[&[&[u8]]] = &[
        &[b"FUNCTION", b"FLUSH"],
        &[b"FUNCTION", b"RESTORE", b"a", b"b", b"c"],
        &[b"FUNCTION", b"FLUSH", b"SYNC", b"extra"],
        &[b"FUNCTION", b"FLUSH", b"bad"],
        &[b"FUNCTION", b"LOAD", lib],
        &[b"FCALL", b"f2", b"0"],
        &[b"CONFIG", b"SET", b"maxmemory", b"1"],
        &[b"FUNCTION", b"LOAD", b"REPLACE", lib],
        &[b"CONFIG", b"SET", b"maxmemory", b"0"],
        &[b"FUNCTION", b"LOAD", b"REPLACE", lib],
        // Under the memory limit: a function that may write is refused
        // unless flagged allow-oom; a no-writes one runs; a script without
        // flags runs, its writes refused.
        &[b"FUNCTION", b"LOAD", b"REPLACE", oom_lib],
        &[b"CONFIG", b"SET", b"maxmemory", b"1"],
        &[b"FCALL", b"w", b"1", b"k"],
        &[b"FCALL", b"ro", b"1", b"k"],
        &[b"FCALL", b"oom_ok", b"1", b"k"],
        &[b"EVAL", b"return redis.call('set','z','1')", b"0"],
        &[b"EVAL", b"return redis.call('get','z')", b"0"],
        &[b"CONFIG", b"SET", b"maxmemory", b"0"],
    ];
    for args in steps {
        same(&mut r, &mut s, args);
    }
}

/// MONITOR: each command another client runs, scripts' calls as `lua`
/// after their script, a transaction's commands before EXEC, secrets
/// redacted, admin commands left out; lines compared with Redis's but for
/// the time and the client's address.
#[test]
fn monitor_lines_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mask = |line: &[u8]| -> String {
        let l = String::from_utf8_lossy(line).into_owned();
        let (_, rest) = l.split_once(' ').unwrap_or_default();
        let (db_origin, args) = rest.split_once("] ").unwrap_or_default();
        let (db, origin) = db_origin
            .trim_start_matches('[')
            .split_once(' ')
            .unwrap_or_default();
        let origin = if origin == "lua" { "lua" } else { "addr" };
        format!("[{db} {origin}] {args}")
    };
    let mut lines = Vec::new();
    for port in [redis.port, strata.port] {
        let mut m = Conn::connect(port);
        let mut c = Conn::connect(port);
        assert_eq!(m.cmd(&[b"MONITOR"]).bytes, b"+OK\r\n");
        let steps: &[&[&[u8]]] = &[
            &[b"SET", b"foo", b"b\"a r\n\x01"],
            &[b"GET", b"foo"],
            &[
                b"EVAL",
                b"redis.call('set', KEYS[1], ARGV[1])",
                b"1",
                b"foo",
                b"x",
            ],
            &[b"MULTI"],
            &[b"INCR", b"n"],
            &[b"EXEC"],
            &[b"AUTH", b"user", b"secret"],
            &[b"CONFIG", b"GET", b"maxmemory"],
            &[b"SELECT", b"3"],
            &[b"SET", b"a", b"1"],
        ];
        for s in steps {
            c.cmd(s);
        }
        let mut got = Vec::new();
        for _ in 0..10 {
            got.push(mask(&m.reply().bytes));
        }
        lines.push(got);
    }
    assert_eq!(lines[0], lines[1]);
}

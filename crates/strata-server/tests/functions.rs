//! Functions (issue #11, point 3): FUNCTION LOAD / DELETE / LIST / FLUSH /
//! DUMP / RESTORE / STATS / KILL and FCALL / FCALL_RO, every reply
//! compared with a real redis-server 7.0 (library metadata, the load-time
//! API, registration errors, flags, errors with the function's name and
//! line, RESP2 and RESP3); libraries survive kill -9 and restarts; a busy
//! function answers BUSY with FUNCTION KILL's words and FUNCTION KILL stops
//! it.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};
use strata_protocol::Frame;

/// A reply as text, with lists of records (libraries, functions) sorted:
/// Redis lists them in its hash tables' order.
fn canonical(f: &Frame) -> String {
    match f {
        Frame::Array(a) => {
            let mut items: Vec<String> = a.iter().map(canonical).collect();
            if a.iter()
                .all(|x| matches!(x, Frame::Array(_) | Frame::Map(_)))
            {
                items.sort();
            }
            format!("[{}]", items.join(","))
        }
        Frame::Map(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}={}", canonical(k), canonical(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        other => format!("{other:?}"),
    }
}

/// A library named `name` whose body is `body` (after the shebang line).
fn lib(name: &str, body: &str) -> String {
    format!("#!lua name={name}\n{body}")
}

/// Library bodies loaded with FUNCTION LOAD REPLACE on both servers, then
/// `fcall h 1 kk vv` run; both replies compared.
const BODIES: &[&str] = &[
    "redis.register_function('h', function(keys, args) return {keys[1], args[1], #keys, #args} end)",
    "redis.register_function({}, function() end)",
    "redis.register_function{function_name='h', callback=function() return 1 end, flags={'bad'}}",
    "redis.register_function{function_name='h', callback=function() return 1 end, flags='no-writes'}",
    "redis.register_function('h')",
    "redis.register_function('h', 1)",
    "redis.register_function(1, function() return 1 end)",
    "redis.register_function('h-x', function() end)",
    "redis.register_function{callback=function() end}",
    "redis.register_function{function_name='h'}",
    "redis.register_function{function_name='h', callback=function() end, foo=1}",
    "redis.register_function{function_name='h', callback=function() return 2 end, description=1}",
    "redis.register_function()",
    "redis.register_function('a', function() end, 3)",
    "redis.register_function{function_name={}, callback=function() end}",
    "redis.register_function{function_name='h', callback=1}",
    "redis.register_function{function_name='h', callback=function() end, flags={1}}",
    "redis.register_function{function_name='h', callback=function() end, description={}}",
    "redis.register_function{'h'}",
    "redis.call('ping')",
    "x = 1",
    "local a = redis.setresp",
    "local s = string.format('%d', 1)",
    "local s = type(1)",
    "error('x')",
    "local s = redis.error_reply",
    "local s = KEYS",
    "local s = redis.log; local v = redis.LOG_WARNING; redis.register_function('h', function() return v end)",
    "return",
    "local x = 1 +",
    "local t = {}; for i=1,3 do t[i]=i end; redis.register_function('h', function() return t end)",
    "redis.register_function('h', function(k, a) error('boom') end)",
    "redis.register_function('h', function(k, a) return redis.call('nosuch') end)",
    "redis.register_function('h', function(k, a) return redis.call('set', k[1], a[1]) end)",
    "redis.register_function('h', function(k, a) return x end)",
    "redis.register_function('h', function(k, a) y = 1 end)",
    "redis.register_function{function_name='h', callback=function(k, a) return redis.call('set', k[1], a[1]) end, flags={'no-writes'}}",
    "redis.register_function{function_name='h', callback=function(k, a) return redis.call('get', k[1]) end, flags={'no-writes', 'allow-oom'}}",
    "redis.register_function('h', function() return redis.register_function('x', function() end) end)",
    "redis.register_function('h', function() return {redis.sha1hex('a'), type(cjson), type(bit)} end)",
    "redis.register_function('h', function() return KEYS end)",
    "redis.register_function('h', function(k) return redis.pcall('incr', k[1]) end)",
    "redis.register_function('h', function() return redis.error_reply('MY err') end)",
    "redis.register_function('h', function() return {err='E bad'} end)",
    "redis.register_function('h', function() redis.setresp(3) return redis.call('hgetall', 'hh') end)",
    "redis.register_function('h', function() return {double=1.5} end)",
];

#[test]
fn functions_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&["--maxmemory-ram", "16mb"]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    fn compare(r: &mut Conn, s: &mut Conn, args: &[&[u8]], sorted: bool) {
        let (a, b) = (r.cmd(args), s.cmd(args));
        let what: Vec<_> = args.iter().map(|x| String::from_utf8_lossy(x)).collect();
        if sorted || args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"list")) {
            assert_eq!(
                canonical(&a.frame),
                canonical(&b.frame),
                "{what:?}: redis vs strata"
            );
        } else {
            assert_eq!(
                String::from_utf8_lossy(&a.bytes),
                String::from_utf8_lossy(&b.bytes),
                "{what:?}: redis vs strata"
            );
        }
    }
    macro_rules! both {
        ($args:expr, $sorted:expr) => {
            compare(&mut r, &mut s, $args, $sorted)
        };
    }
    both!(&[b"FLUSHALL"], false);
    both!(&[b"FUNCTION", b"FLUSH"], false);
    both!(&[b"HSET", b"hh", b"a", b"1"], false);
    for body in BODIES {
        let code = lib("lib5", body);
        both!(&[b"FUNCTION", b"LOAD", b"REPLACE", code.as_bytes()], false);
        both!(&[b"FCALL", b"h", b"1", b"kk", b"vv"], false);
        both!(&[b"FCALL_RO", b"h", b"1", b"kk", b"vv"], false);
    }
    both!(&[b"FUNCTION", b"DELETE", b"lib5"], false);
    // Two functions whose names differ in case only: redis-server 7.0.15
    // accepts the library, and later loads crash it (its function table
    // is case-insensitive). Strata accepts it too; FCALL finds the first.
    let code = lib(
        "lib6",
        "redis.register_function('h', function() return 1 end); redis.register_function('H', function() return 2 end)",
    );
    assert_eq!(
        s.cmd(&[b"FUNCTION", b"LOAD", code.as_bytes()]).bytes,
        b"$4\r\nlib6\r\n"
    );
    assert_eq!(s.cmd(&[b"FCALL", b"H", b"0"]).bytes, b":1\r\n");
    assert_eq!(s.cmd(&[b"FUNCTION", b"DELETE", b"lib6"]).bytes, b"+OK\r\n");
    let l1 = lib(
        "lib1",
        "redis.register_function('f1', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n\
         redis.register_function{function_name='f2', callback=function(keys, args) return #keys end, flags={'no-writes'}, description='desc'}",
    );
    let l2 = lib(
        "MyLib",
        "redis.register_function('z', function() return 'z' end)",
    );
    let clash = lib(
        "lib3",
        "redis.register_function('F1', function() return 1 end)",
    );
    let steps: &[&[&[u8]]] = &[
        &[b"FUNCTION", b"LOAD", l1.as_bytes()],
        &[b"FUNCTION", b"LOAD", l1.as_bytes()],
        &[b"FUNCTION", b"LOAD", clash.as_bytes()],
        &[b"FUNCTION", b"LOAD", b"REPLACE", b"REPLACE", l1.as_bytes()],
        &[b"FUNCTION", b"LOAD", b"NOW", l1.as_bytes()],
        &[b"FUNCTION", b"LOAD", l2.as_bytes()],
        &[b"FUNCTION", b"LOAD", b"return 1"],
        &[b"FUNCTION", b"LOAD", b"#!lua name=x"],
        &[b"FUNCTION", b"LOAD", b"#!lua\nreturn 1"],
        &[b"FUNCTION", b"LOAD", b"#!lua name=a foo=b\n"],
        &[b"FUNCTION", b"LOAD", b"#!lua name=a name=b\n"],
        &[b"FUNCTION", b"LOAD", b"#!py name=a\n"],
        &[b"FUNCTION", b"LOAD", b"#!lua name=a-b\n"],
        &[b"FUNCTION", b"LOAD"],
        &[b"FCALL", b"f1", b"1", b"k", b"v"],
        &[b"GET", b"k"],
        &[b"FCALL", b"F1", b"1", b"k", b"w"],
        &[b"FCALL_RO", b"f1", b"1", b"k", b"v"],
        &[b"FCALL_RO", b"f2", b"2", b"a", b"b"],
        &[b"FCALL", b"nope", b"0"],
        &[b"FCALL", b"f2", b"-1"],
        &[b"FCALL", b"f2", b"3", b"a"],
        &[b"FCALL", b"f2", b"x"],
        &[b"FCALL", b"f2"],
        &[b"FCALL", b"z", b"0"],
        &[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"lib1"],
        &[b"FUNCTION", b"LIST", b"WITHCODE", b"LIBRARYNAME", b"my*"],
        &[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"zz"],
        &[b"FUNCTION", b"LIST", b"LIBRARYNAME"],
        &[b"FUNCTION", b"LIST", b"WITHCODE", b"WITHCODE"],
        &[b"FUNCTION", b"LIST", b"X"],
        &[b"FUNCTION", b"STATS"],
        &[b"FUNCTION", b"STATS", b"X"],
        &[b"FUNCTION", b"KILL"],
        &[b"FUNCTION", b"DELETE", b"mylib"],
        &[b"FUNCTION", b"DELETE", b"MyLib"],
        &[b"FUNCTION", b"DELETE"],
        &[b"FUNCTION", b"FLUSH", b"NOW"],
        &[b"FUNCTION", b"RESTORE", b"abc"],
        &[b"FUNCTION", b"RESTORE"],
        &[b"FUNCTION", b"NOSUCH"],
        &[b"FUNCTION", b"HELP"],
        &[b"MULTI"],
        &[b"FCALL", b"f1", b"1", b"m", b"1"],
        &[b"FCALL", b"f2", b"0"],
        &[b"EXEC"],
    ];
    for step in steps {
        both!(step, false);
    }
    // Several libraries: LIST's order is the dictionary's in Redis.
    both!(&[b"FUNCTION", b"LOAD", l2.as_bytes()], false);
    both!(&[b"FUNCTION", b"LIST"], true);
    // DUMP and RESTORE: each server restores its own payload (Redis's
    // compresses the code) and the other's.
    let dumps: Vec<Vec<u8>> = [&mut r, &mut s]
        .into_iter()
        .map(|c| match c.cmd(&[b"FUNCTION", b"DUMP"]).frame {
            strata_protocol::Frame::Bulk(b) => b.to_vec(),
            other => panic!("{other:?}"),
        })
        .collect();
    for d in &dumps {
        // One library collides (Redis reports the first it meets).
        both!(&[b"FUNCTION", b"DELETE", b"MyLib"], false);
        both!(&[b"FUNCTION", b"RESTORE", d], false);
        both!(&[b"FUNCTION", b"RESTORE", d, b"APPEND"], false);
        both!(&[b"FUNCTION", b"RESTORE", d, b"BAD"], false);
        both!(&[b"FUNCTION", b"RESTORE", d, b"REPLACE"], false);
        both!(&[b"FUNCTION", b"FLUSH"], false);
        both!(&[b"FUNCTION", b"RESTORE", d], false);
        both!(&[b"FUNCTION", b"LIST", b"WITHCODE"], true);
        both!(&[b"FCALL", b"z", b"0"], false);
        both!(&[b"FUNCTION", b"LOAD", l1.as_bytes()], false);
        both!(&[b"FUNCTION", b"RESTORE", d, b"FLUSH"], false);
        both!(&[b"FCALL", b"f2", b"0"], false);
    }
    let mut broken = dumps[1].clone();
    broken[3] ^= 1;
    both!(&[b"FUNCTION", b"RESTORE", &broken], false);
    // RESP3: maps, sets and nulls in LIST and STATS, conversions.
    both!(&[b"FUNCTION", b"FLUSH", b"SYNC"], false);
    both!(&[b"FUNCTION", b"LOAD", l1.as_bytes()], false);
    r.cmd(&[b"HELLO", b"3"]);
    s.cmd(&[b"HELLO", b"3"]);
    both!(&[b"FUNCTION", b"LIST"], false);
    both!(&[b"FUNCTION", b"STATS"], false);
    let resp3 = lib(
        "r3",
        "redis.register_function('m', function() return {map={a=1}} end)\n\
         redis.register_function('s', function() return {set={x=true}} end)\n\
         redis.register_function('d', function() return {double=2.5} end)\n\
         redis.register_function('b', function() return {true, false} end)\n\
         redis.register_function('n', function() redis.setresp(3) return {redis.call('hgetall','hh'), redis.call('get','nokey') == nil} end)",
    );
    both!(&[b"FUNCTION", b"LOAD", resp3.as_bytes()], false);
    for f in ["m", "s", "d", "b", "n"] {
        both!(&[b"FCALL", f.as_bytes(), b"0"], false);
    }
    both!(&[b"FUNCTION", b"FLUSH"], false);
}

/// Libraries are kept by the log: they come back after kill -9 (journal,
/// `appendfsync always`) and after a clean restart without the journal.
#[test]
fn functions_survive_restarts() {
    let code = lib(
        "keep",
        "redis.register_function('inc', function(k) return redis.call('incr', k[1]) end)",
    );
    for (name, args) in [
        ("kill -9", &["--appendfsync", "always"][..]),
        ("clean restart, appendonly no", &["--appendonly", "no"][..]),
    ] {
        let mut srv = common::Server::start(&[&["--maxmemory-ram", "16mb"][..], args].concat());
        let mut con = srv.client();
        let lib: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg(&code)
            .query(&mut con)
            .unwrap();
        assert_eq!(lib, "keep");
        let n: i64 = redis::cmd("FCALL")
            .arg("inc")
            .arg(1)
            .arg("c")
            .query(&mut con)
            .unwrap();
        assert_eq!(n, 1, "{name}");
        drop(con);
        if name == "kill -9" {
            srv.kill9();
        } else {
            srv.sigterm();
            srv.wait_exit(std::time::Duration::from_secs(30));
        }
        srv.restart();
        let mut con = srv.client();
        let n: i64 = redis::cmd("FCALL")
            .arg("inc")
            .arg(1)
            .arg("c")
            .query(&mut con)
            .unwrap();
        assert_eq!(n, 2, "{name}: the library and the counter are back");
        // FLUSHALL leaves functions alone; FUNCTION FLUSH is kept too.
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
        let _: () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut con).unwrap();
        drop(con);
        if name == "kill -9" {
            srv.kill9();
        } else {
            srv.sigterm();
            srv.wait_exit(std::time::Duration::from_secs(30));
        }
        srv.restart();
        let mut con = srv.client();
        let err = redis::cmd("FCALL")
            .arg("inc")
            .arg(1)
            .arg("c")
            .query::<i64>(&mut con)
            .unwrap_err();
        assert!(
            err.to_string().contains("Function not found"),
            "{name}: {err}"
        );
    }
}

/// A function that loops: other clients get BUSY naming FUNCTION KILL,
/// FUNCTION STATS shows it, SCRIPT KILL refuses it and FUNCTION KILL
/// stops it.
#[test]
fn a_busy_function_answers_busy_and_function_kill_stops_it() {
    let srv = common::start();
    let mut con = srv.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("busy-reply-threshold")
        .arg("200")
        .query(&mut con)
        .unwrap();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib(
            "spin",
            "redis.register_function('spin', function() while true do end end)",
        ))
        .query(&mut con)
        .unwrap();
    let url = srv.url();
    let looping = std::thread::spawn(move || {
        let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
        redis::cmd("FCALL")
            .arg("spin")
            .arg(0)
            .query::<()>(&mut con)
            .unwrap_err()
            .to_string()
    });
    std::thread::sleep(std::time::Duration::from_millis(400));
    let mut raw = common::raw::Raw::new(&srv);
    raw.w(
        "PING",
        "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n",
    );
    let stats = format!("{:?}", raw.cmd("FUNCTION STATS"));
    assert!(
        stats.contains("spin") && stats.contains("duration_ms"),
        "{stats}"
    );
    raw.w(
        "SCRIPT KILL",
        "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n",
    );
    raw.w("FUNCTION KILL", "+OK\r\n");
    let err = looping.join().unwrap();
    assert!(err.contains("Script killed by user"), "{err}");
    raw.w("PING", "+PONG\r\n");
}

//! The scripting sandbox as Redis 7.0 has it, every reply compared with
//! redis-server: the libraries, `_G` and their metatables are read-only
//! (assignments, `setmetatable`, `getmetatable(...).x = `, `rawset`),
//! precompiled chunks do not load, `redis.error_reply` builds Redis's
//! error (code, message, ERR for none), `redis.acl_check_cmd` answers for
//! the caller's user, a function library's shebang is split as Redis
//! splits it (quotes), and a subcommand flagged `noscript` (CLUSTER RESET,
//! CONFIG SET) is refused in a script, `unpack` checks its range as
//! Redis's patched Lua does, and a string's metatable is read-only. Eval scripts and functions both.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};

/// Each script's reply from both servers, as EVAL and as a function.
fn both(port: u16, scripts: &[&str]) -> Vec<String> {
    let mut c = Conn::connect(port);
    let mut out = Vec::new();
    for (i, body) in scripts.iter().enumerate() {
        let r = c.cmd(&[b"EVAL", body.as_bytes(), b"0"]);
        out.push(format!(
            "eval {body}: {}",
            String::from_utf8_lossy(&r.bytes)
        ));
        let lib = format!(
            "#!lua name=l{i}\nredis.register_function('f{i}', function(KEYS, ARGV) {body} end)"
        );
        let r = c.cmd(&[b"FUNCTION", b"LOAD", b"REPLACE", lib.as_bytes()]);
        out.push(format!("load {i}: {}", String::from_utf8_lossy(&r.bytes)));
        let f = format!("f{i}");
        let r = c.cmd(&[b"FCALL", f.as_bytes(), b"0"]);
        out.push(format!(
            "fcall {body}: {}",
            String::from_utf8_lossy(&r.bytes)
        ));
    }
    out
}

#[test]
fn the_sandbox_matches_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let scripts = [
        "redis.call = 1",
        "redis = 1",
        "_G = {}",
        "cjson.encode = 1",
        "bit.band = 1",
        "string.rep = 1",
        "setmetatable(_G, {})",
        "local g = getmetatable(_G); g.__index = {}",
        "rawset(_G, 'x', 1)",
        "return loadstring(string.dump(function() return 1 end))()",
        "loadfile('x')",
        "return cjson.encode({1, 2})",
        "return string.rep('a', 3)",
        "return redis.error_reply('')",
        "return redis.error_reply('single')",
        "return redis.error_reply('MY_CODE custom message')",
        "return redis.error_reply('-X y')",
        "local t = redis.error_reply('plain'); return t['err']",
        "return redis.acl_check_cmd('set', 'k', 'v')",
        "return redis.acl_check_cmd('nosuchcmd')",
        "return redis.call('cluster', 'reset')",
        "return redis.call('config', 'set', 'maxmemory', '0')",
        // unpack over a range past C's int (it crashed the server), and
        // its checks as Lua 5.1 makes them.
        "return {unpack({1,2,3}, -2, 2147483647)}",
        "return {unpack({1,2,3}, 0, 2147483647)}",
        "return {unpack({1,2,3}, -2147483648, -2)}",
        "return unpack({1,2,3}, 1, 100000)",
        "return {unpack({1,2,3}, 'a')}",
        "return {unpack('x')}",
        "return {unpack()}",
        "return {unpack({1,2,3}, 2.7, 3.9)}",
        "return {unpack({1,2,3}, -1, 5)}",
        "return {unpack({1,2,3}, nil, 2)}",
        "return {unpack({1,2,3}, '2', '3')}",
        "return {unpack({1,2,3})}",
        "return {unpack({1,2,3}, 3, 1)}",
        // The metatables of values that are not tables are every script's:
        // read-only (a string's reached the string library itself).
        "getmetatable('').__index = function() return 1 end",
        "getmetatable('').__index.upper = 1",
        "getmetatable('').__metatable = 1",
        "return ('abc'):upper()",
        "return getmetatable('').__index == string",
        "getmetatable(nil).__index = function() return 1 end",
        "getmetatable(123.222).__index = function() return 1 end",
        "getmetatable(true).__index = function() return 1 end",
        "getmetatable(function() return 1 end).__index = function() return 1 end",
        "getmetatable(coroutine.create(function() return 1 end)).__index = 1",
    ];
    let (a, b) = (both(redis.port, &scripts), both(strata.port, &scripts));
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "redis vs strata");
    }
    // A library name in quotes, as Redis's shebang parsing allows.
    for port in [redis.port, strata.port] {
        let mut c = Conn::connect(port);
        let r = c.cmd(&[
            b"FUNCTION",
            b"LOAD",
            b"REPLACE",
            b"#!lua name=\"quoted\"\nredis.register_function('q', function() return 1 end)",
        ]);
        assert_eq!(
            String::from_utf8_lossy(&r.bytes),
            "$6\r\nquoted\r\n",
            "{port}"
        );
    }
}

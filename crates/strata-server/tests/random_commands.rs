//! Every command of the table with random arguments, pipelined: the server
//! answers each with exactly one reply and never dies (no panic reachable
//! from client input). The sequence is seeded, so a failure reproduces.

mod common;
use common::*;
use std::io::{Read, Write};

/// Tokens that hit the parsers' edge cases: numbers at the i64 limits,
/// floats, option words, glob characters, binary bytes.
const TOKENS: &[&[u8]] = &[
    b"k",
    b"k2",
    b"0",
    b"-1",
    b"1",
    b"3",
    b"100",
    b"-100",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"99999999999999999999",
    b"1.5",
    b"inf",
    b"-inf",
    b"nan",
    b"",
    b"EX",
    b"PX",
    b"EXAT",
    b"PXAT",
    b"NX",
    b"XX",
    b"GT",
    b"LT",
    b"KEEPTTL",
    b"GET",
    b"PERSIST",
    b"MATCH",
    b"COUNT",
    b"TYPE",
    b"DB",
    b"REPLACE",
    b"ASYNC",
    b"SYNC",
    b"*",
    b"?",
    b"[",
    b"\\",
    b"\x00\r\n",
    b"string",
    b"SAMPLES",
    b"ID",
    b"SETNAME",
    b"GETNAME",
    b"LIST",
    b"INFO",
    b"KILL",
    b"DOCS",
    b"GETKEYS",
    b"SET",
    b"RESETSTAT",
    b"USAGE",
    b"ENCODING",
    b"IDLETIME",
    b"FREQ",
    b"LEN",
    b"RESET",
    b"TIER",
    b"HELP",
    b"maxmemory",
    b"hz",
    b"timeout",
];

/// Commands that would end or disturb the run on purpose (the blocking
/// pops wait, with timeout 0 forever, as in Redis: tests/resp_blocking.rs
/// covers them).
const SKIP: &[&str] = &[
    "quit",
    "client",
    "flushall",
    "hello",
    "reset",
    "auth",
    "config",
    "shutdown",
    "blpop",
    "brpop",
    "brpoplpush",
    "blmove",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
];

fn request(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[test]
fn random_arguments_to_every_command_never_kill_the_server() {
    let mut srv = Server::start(&["--maxmemory-ram", "8mb"]);
    let mut con = srv.client();
    let names: Vec<String> = redis::cmd("COMMAND").arg("LIST").query(&mut con).unwrap();
    let names: Vec<String> = names
        .into_iter()
        .filter(|n| !SKIP.contains(&n.as_str()))
        .collect();
    assert!(names.len() > 50);
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut s = srv.raw();
    for _batch in 0..100 {
        let mut wire = Vec::new();
        for _ in 0..50 {
            let name = names[next(names.len())].as_bytes().to_vec();
            let mut args: Vec<&[u8]> = vec![&name];
            for _ in 0..next(7) {
                args.push(TOKENS[next(TOKENS.len())]);
            }
            wire.extend(request(&args));
        }
        // (A MULTI among them would queue the PING: DISCARD ends it, and
        // answers an error when none is open.)
        wire.extend(request(&[b"DISCARD"]));
        wire.extend(request(&[b"PING", b"end-of-batch"]));
        s.write_all(&wire).unwrap();
        // Every batch ends with our PING's echo: all 50 replies came first.
        let mut got = Vec::new();
        let mut buf = [0u8; 65536];
        while !got.ends_with(b"$12\r\nend-of-batch\r\n") {
            let n = s.read(&mut buf).expect("the server stopped answering");
            assert!(n > 0, "connection closed by the server");
            got.extend_from_slice(&buf[..n]);
        }
    }
    assert!(srv.alive());
    let pong: String = redis::cmd("PING").query(&mut srv.client()).unwrap();
    assert_eq!(pong, "PONG");
}

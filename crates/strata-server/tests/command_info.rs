//! COMMAND against redis-server 7.0 (issue #11, point 6): for every
//! command Strata serves, COMMAND INFO and COMMAND DOCS give Redis's
//! entry (flags, ACL categories, key specs, legacy key range, arguments;
//! of a container, each subcommand Strata serves as Redis describes it);
//! and COMMAND GETKEYS / GETKEYSANDFLAGS of thousands of commands from the
//! differential mix answer as Redis does (cluster clients route by them).

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

/// Sorts what Redis leaves in no particular order: sets, and the
/// entries of maps.
fn canon(f: &Frame) -> Frame {
    match f {
        Frame::Set(xs) => {
            let mut v: Vec<Frame> = xs.iter().map(canon).collect();
            v.sort_by_key(|x| format!("{x:?}"));
            Frame::Set(v)
        }
        Frame::Map(kv) => {
            let mut v: Vec<(Frame, Frame)> = kv.iter().map(|(k, x)| (canon(k), canon(x))).collect();
            v.sort_by_key(|(k, _)| format!("{k:?}"));
            Frame::Map(v)
        }
        Frame::Array(xs) => Frame::Array(xs.iter().map(canon).collect()),
        x => x.clone(),
    }
}

/// Splits a COMMAND INFO entry into its own fields and its subcommands.
fn info_parts(f: &Frame) -> (Vec<Frame>, Vec<Frame>) {
    match canon(f) {
        Frame::Array(mut v) if v.len() == 10 => {
            let subs = match v.pop() {
                Some(Frame::Array(s)) | Some(Frame::Set(s)) => s,
                _ => Vec::new(),
            };
            (v, subs)
        }
        x => (vec![x], Vec::new()),
    }
}

#[test]
fn command_info_and_docs_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    for c in [&mut r, &mut s] {
        c.cmd(&[b"HELLO", b"3"]);
    }
    let names = match s.cmd(&[b"COMMAND", b"LIST"]).frame {
        Frame::Array(v) => v,
        f => panic!("COMMAND LIST: {f:?}"),
    };
    assert!(names.len() > 200, "{} commands", names.len());
    // COMMAND LIST's filters and errors (compared as sets: the order is
    // Redis's dict order).
    let sorted = |f: Frame| -> Vec<String> {
        let mut v: Vec<String> = match f {
            Frame::Array(v) | Frame::Set(v) => v.iter().map(|x| format!("{x:?}")).collect(),
            f => vec![format!("{f:?}")],
        };
        v.sort();
        v
    };
    for args in [
        &[&b"COMMAND"[..], b"LIST", b"bad_arg"][..],
        &[b"COMMAND", b"LIST", b"FILTERBY", b"bad", b"x"],
        &[b"COMMAND", b"LIST", b"FILTERBY", b"PATTERN", b"config*"],
        &[b"COMMAND", b"LIST", b"FILTERBY", b"pattern", b"x*|*e*"],
        &[b"COMMAND", b"LIST", b"FILTERBY", b"ACLCAT", b"hyperloglog"],
        &[b"COMMAND", b"LIST", b"FILTERBY", b"ACLCAT", b"none"],
        &[b"COMMAND", b"LIST", b"FILTERBY", b"MODULE", b"none"],
    ] {
        assert_eq!(
            sorted(r.cmd(args).frame),
            sorted(s.cmd(args).frame),
            "{args:?}"
        );
    }
    for n in names {
        let Frame::Bulk(name) = n else {
            panic!("a name: {n:?}")
        };
        let a = r.cmd(&[b"COMMAND", b"INFO", &name]).frame;
        let b = s.cmd(&[b"COMMAND", b"INFO", &name]).frame;
        let (Frame::Array(a), Frame::Array(b)) = (&a, &b) else {
            panic!(
                "COMMAND INFO {}: {a:?} {b:?}",
                String::from_utf8_lossy(&name)
            )
        };
        let ((ra, rsubs), (sa, ssubs)) = (info_parts(&a[0]), info_parts(&b[0]));
        assert_eq!(ra, sa, "COMMAND INFO {}", String::from_utf8_lossy(&name));
        for sub in &ssubs {
            assert!(
                rsubs.contains(sub),
                "COMMAND INFO {}: subcommand {sub:?} not as Redis has it",
                String::from_utf8_lossy(&name)
            );
        }
        let a = canon(&r.cmd(&[b"COMMAND", b"DOCS", &name]).frame);
        let b = canon(&s.cmd(&[b"COMMAND", b"DOCS", &name]).frame);
        // A container's docs list Redis's subcommands, Strata's a subset.
        let strip = |f: Frame| match f {
            Frame::Map(mut kv) => {
                for (_, d) in kv.iter_mut() {
                    if let Frame::Map(m) = d {
                        m.retain(|(k, _)| !matches!(k, Frame::Bulk(b) if &b[..] == b"subcommands"));
                    }
                }
                Frame::Map(kv)
            }
            x => x,
        };
        assert_eq!(
            strip(a),
            strip(b),
            "COMMAND DOCS {}",
            String::from_utf8_lossy(&name)
        );
    }
}

#[test]
fn command_getkeys_matches_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    let mut g = gen::Gen::new(rand::rngs::StdRng::seed_from_u64(7));
    let mut extra: Vec<Vec<Vec<u8>>> = [
        "XREAD COUNT 2 STREAMS a b c 0 0 0",
        "XREADGROUP GROUP g c NOACK STREAMS a b > >",
        "EVAL x 2 k1 k2 a1",
        "EVAL x 0",
        "FCALL f 1 k a",
        "ZUNIONSTORE d 2 a b WEIGHTS 1 2",
        "ZINTER 2 a b",
        "LMPOP 2 a b LEFT",
        "BLMPOP 0 2 a b LEFT",
        "SINTERCARD 2 a b",
        "SORT k BY w_* GET o_* STORE d",
        "SORT_RO k",
        "SET k v GET",
        "SET k v",
        "BITFIELD k GET u8 0",
        "BITFIELD k SET u8 0 1",
        "MSET a 1 b 2",
        "GEORADIUS k 0 0 1 km STORE d",
        "XGROUP CREATE s g $",
        "XINFO STREAM s",
        "OBJECT ENCODING k",
        "MEMORY USAGE k",
        "PING",
        "GET",
        "NOSUCH k",
        "ZUNIONSTORE d x a",
    ]
    .iter()
    .map(|c| c.split(' ').map(|w| w.as_bytes().to_vec()).collect())
    .collect();
    for _ in 0..3000 {
        extra.push(g.next().0);
    }
    for args in extra {
        for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
            let mut c: Vec<&[u8]> = vec![b"COMMAND", sub.as_bytes()];
            c.extend(args.iter().map(|a| &a[..]));
            let (a, b) = (r.cmd(&c), s.cmd(&c));
            assert_eq!(
                String::from_utf8_lossy(&a.bytes),
                String::from_utf8_lossy(&b.bytes),
                "COMMAND {sub} {}",
                gen::show(&args)
            );
        }
    }
}

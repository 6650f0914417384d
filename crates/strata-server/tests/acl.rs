//! ACL users, every reply compared with redis-server 7.0: the rules of
//! ACL SETUSER and their errors, GETUSER / LIST / USERS / CAT / DRYRUN /
//! GENPASS / WHOAMI, AUTH and HELLO AUTH as a user, what a user may run
//! (commands, subcommands, first arguments, keys read and written,
//! channels, selectors) at top level, in MULTI / EXEC (when queued and when
//! the rules change before EXEC) and in scripts; the ACL LOG's entries;
//! ACL DELUSER closing the user's connections; a revoked channel closing
//! its subscriber; RESET back to the default user; `requirepass` as the
//! default user's password.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;
#[allow(dead_code)]
#[path = "redis_diff/scenario.rs"]
mod scenario;

use oracle::{Conn, RedisServer};
use scenario::{scenario, Step::*};
use std::io::Read;
use strata_protocol::Frame;

#[test]
fn acl_commands_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let (rp, sp) = (redis.port, strata.port);
    scenario(
        "ACL rules, their errors and their descriptions",
        rp,
        sp,
        &[
            Cmd(0, "ACL SETUSER bob"),
            Words(0, "ACL LIST"),
            Words(0, "ACL GETUSER bob"),
            Cmd(0, "ACL SETUSER al on >p1 >p2 <p2 ~k* %R~r* %W~w* %RW~rw* &ch +get"),
            Words(0, "ACL GETUSER al"),
            Cmd(0, "ACL SETUSER al +@hash -hset"),
            Words(0, "ACL GETUSER al"),
            Cmd(0, "ACL SETUSER al reset"),
            Words(0, "ACL GETUSER al"),
            Cmd(0, "ACL SETUSER c on nopass ~* +@all -@dangerous"),
            Cmd(0, "ACL SETUSER d on nopass allkeys allchannels -@all +@read"),
            Cmd(0, "ACL SETUSER e on nopass ~* +@all -@write"),
            Cmd(0, "ACL SETUSER f on nopass ~* +config -config|set"),
            Cmd(0, "ACL SETUSER g on nopass ~* -@all +select|0 +select|1"),
            Cmd(0, "ACL SETUSER h on #a07a0f33b5bbd8b6a9b87b5d7ac1fbabe4a1eeb7e0a8ab3eba11d1c0d5e5e4e9 skip-sanitize-payload"),
            Cmd(0, "ACL SETUSER i on nopass (~x* +get) (%R~y* +set)"),
            Words(0, "ACL GETUSER i"),
            Cmd(0, "ACL SETUSER i clearselectors"),
            Words(0, "ACL LIST"),
            Cmd(0, "ACL USERS"),
            Cmd(0, "ACL WHOAMI"),
            Words(0, "ACL GETUSER nosuch"),
            // Each error changes nothing.
            Cmd(0, "ACL SETUSER x on +nosuch"),
            Cmd(0, "ACL SETUSER x +@nosuch"),
            Cmd(0, "ACL SETUSER x ~* ~a"),
            Cmd(0, "ACL SETUSER x &* &a"),
            Cmd(0, "ACL SETUSER x #abc"),
            Cmd(0, "ACL SETUSER x <nope"),
            Cmd(0, "ACL SETUSER x +config|get|x"),
            Cmd(0, "ACL SETUSER x +get|"),
            Cmd(0, "ACL SETUSER x bogus"),
            Cmd(0, "ACL SETUSER x (~a +get"),
            Cmd(0, "ACL SETUSER x %X~a"),
            Words(0, "ACL GETUSER x"),
            Cmd(0, "ACL SETUSER"),
            Cmd(0, "ACL DELUSER default"),
            Cmd(0, "ACL DELUSER bob nosuch"),
            Set(0, "ACL CAT"),
            Set(0, "ACL CAT hyperloglog"),
            Set(0, "ACL CAT list"),
            Cmd(0, "ACL CAT nosuch"),
            Cmd(0, "ACL GENPASS 0"),
            Cmd(0, "ACL GENPASS 5000"),
            Cmd(0, "ACL GENPASS abc"),
            Cmd(0, "ACL LOAD"),
            Cmd(0, "ACL SAVE"),
            Cmd(0, "ACL FOO"),
            Words(0, "ACL GETUSER"),
            Cmd(0, "ACL LOG abc"),
            Cmd(0, "ACL DRYRUN nosuch get a"),
            Cmd(0, "ACL SETUSER dr on nopass ~a* &c* +get +publish +subscribe +client|id"),
            Cmd(0, "ACL DRYRUN dr get a1"),
            Cmd(0, "ACL DRYRUN dr get b1"),
            Cmd(0, "ACL DRYRUN dr set a1 v"),
            Cmd(0, "ACL DRYRUN dr publish c1 m"),
            Cmd(0, "ACL DRYRUN dr publish x1 m"),
            Cmd(0, "ACL DRYRUN dr subscribe c1 x1"),
            Cmd(0, "ACL DRYRUN dr client id"),
            Cmd(0, "ACL DRYRUN dr client list"),
            Cmd(0, "ACL DRYRUN dr nosuchcmd"),
            Cmd(0, "ACL DRYRUN dr get"),
            Cmd(0, "CLUSTER INFO"),
            Cmd(0, "CLUSTER SLOTS"),
            Cmd(0, "CLUSTER FOO"),
            Cmd(0, "CLUSTER"),
            Cmd(0, "CLUSTER INFO x"),
        ],
    );
    // GENPASS: hex of the bits asked for.
    let mut c = Conn::connect(sp);
    for (arg, len) in [(None, 64), (Some("5"), 2), (Some("4096"), 1024)] {
        let mut args: Vec<&[u8]> = vec![b"ACL", b"GENPASS"];
        args.extend(arg.map(str::as_bytes));
        match c.cmd(&args).frame {
            Frame::Bulk(b) => {
                assert_eq!(b.len(), len, "{arg:?}");
                assert!(b.iter().all(u8::is_ascii_hexdigit));
            }
            f => panic!("{f:?}"),
        }
    }
}

#[test]
fn acl_permissions_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let (rp, sp) = (redis.port, strata.port);
    scenario(
        "a user's commands, keys and channels",
        rp,
        sp,
        &[
            Cmd(0, "ACL LOG RESET"),
            Cmd(0, "ACL SETUSER u on >pw ~k* %R~r* %W~w* &ch* +get +set +publish +subscribe +psubscribe +multi +exec +eval +acl|whoami +select|0 (~x* +del)"),
            Cmd(1, "AUTH u wrong"),
            Cmd(1, "AUTH nosuch pw"),
            Cmd(1, "AUTH u pw"),
            Cmd(1, "ACL WHOAMI"),
            Cmd(1, "GET k1"),
            Cmd(1, "GET r1"),
            Cmd(1, "SET r1 v"),
            Cmd(1, "SET w1 v"),
            Cmd(1, "GET w1"),
            Cmd(1, "SET k1 v"),
            Cmd(1, "DEL k1"),
            Cmd(1, "DEL x1"),
            Cmd(1, "SELECT 0"),
            Cmd(1, "SELECT 1"),
            Cmd(1, "PUBLISH ch1 m"),
            Cmd(1, "PUBLISH xx m"),
            Words(1, "ACL LIST"),
            Cmd(1, "CONFIG GET maxmemory"),
            Cmd(1, "EVAL return(redis.call('get','zz')) 0"),
            Cmd(1, "EVAL return(redis.call('incr','k1')) 0"),
            Cmd(1, "EVAL return(redis.pcall('set','zz','v')) 0"),
            Cmd(1, "EVAL return(redis.call('get','k1')) 0"),
            Cmd(1, "MULTI"),
            Cmd(1, "GET k1"),
            Cmd(1, "INCR k1"),
            Cmd(1, "EXEC"),
            // The rules change between queueing and EXEC.
            Cmd(1, "MULTI"),
            Cmd(1, "GET k1"),
            Cmd(1, "SET k2 v"),
            Cmd(0, "ACL SETUSER u -set"),
            Cmd(1, "EXEC"),
            Cmd(1, "SUBSCRIBE ch1 other"),
            Cmd(1, "PSUBSCRIBE ch*"),
            Cmd(2, "HELLO 2 AUTH u wrong"),
            Cmd(2, "HELLO 2 AUTH u"),
            Cmd(2, "CLIENT KILL USER nosuch"),
            Cmd(0, "ACL SETUSER off1 off nopass +@all ~*"),
            Cmd(2, "AUTH off1 x"),
        ],
    );
    // The log: each refusal with its reason, context, object and user
    // (the age and the client's line differ between the servers).
    let log = |port| {
        let mut c = Conn::connect(port);
        let Frame::Array(entries) = c.cmd(&[b"ACL", b"LOG", b"100"]).frame else {
            panic!("ACL LOG");
        };
        entries
            .into_iter()
            .map(|e| {
                let Frame::Array(f) = e else { panic!("entry") };
                f.chunks(2)
                    .filter(|kv| !matches!(&kv[0], Frame::Bulk(k) if &k[..] == b"age-seconds" || &k[..] == b"client-info"))
                    .map(|kv| format!("{:?}={:?}", kv[0], kv[1]))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (log(rp), log(sp));
    assert!(a.len() >= 10, "{a:?}");
    assert_eq!(a, b, "ACL LOG: redis vs strata");
    // Strata's client lines name the user refused.
    let mut c = Conn::connect(sp);
    let Frame::Array(entries) = c.cmd(&[b"ACL", b"LOG", b"100"]).frame else {
        panic!()
    };
    let text = format!("{entries:?}");
    assert!(text.contains("cmd=set user=u "), "{text}");
}

/// Reads until the server closes the connection (or a timeout fails).
fn closed(c: &mut std::net::TcpStream) -> bool {
    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(_) => return false,
        }
    }
}

fn raw(port: u16, cmds: &[&str]) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    for c in cmds {
        let words: Vec<&str> = c.split(' ').collect();
        let mut out = format!("*{}\r\n", words.len());
        for w in words {
            out.push_str(&format!("${}\r\n{w}\r\n", w.len()));
        }
        s.write_all(out.as_bytes()).unwrap();
    }
    s
}

#[test]
fn deleted_users_and_revoked_channels_close_their_clients() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    for port in [redis.port, strata.port] {
        let mut admin = Conn::connect(port);
        admin.cmd(&[
            b"ACL", b"SETUSER", b"gone", b"on", b"nopass", b"+@all", b"~*",
        ]);
        admin.cmd(&[
            b"ACL", b"SETUSER", b"sub", b"on", b"nopass", b"+@all", b"~*", b"&a*", b"&b*",
        ]);
        let mut g = raw(port, &["AUTH gone x", "PING"]);
        let mut keep = raw(port, &["AUTH sub x", "SUBSCRIBE b1"]);
        let mut s = raw(port, &["AUTH sub x", "SUBSCRIBE a1"]);
        let mut c = Conn::connect(port);
        c.cmd(&[b"AUTH", b"gone", b"x"]);
        let list = c.cmd(&[b"CLIENT", b"INFO"]);
        assert!(
            String::from_utf8_lossy(&list.bytes).contains("user=gone"),
            "{port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(
            admin.cmd(&[b"ACL", b"DELUSER", b"gone"]).frame,
            Frame::Integer(1)
        );
        assert!(closed(&mut g), "{port}: the deleted user's client stays");
        // More channels keep the subscribers; fewer close the one whose
        // channel went.
        admin.cmd(&[b"ACL", b"SETUSER", b"sub", b"&c*"]);
        admin.cmd(&[b"ACL", b"SETUSER", b"sub", b"resetchannels", b"&b*"]);
        assert!(closed(&mut s), "{port}: the revoked subscriber stays");
        keep.set_read_timeout(Some(std::time::Duration::from_millis(300)))
            .unwrap();
        let mut buf = [0u8; 4096];
        if let Ok(0) = keep.read(&mut buf) {
            panic!("{port}: a subscriber still allowed was closed");
        }
        // A user's clients: CLIENT KILL USER.
        let mut k = raw(port, &["AUTH sub x", "PING"]);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let n = admin.cmd(&[b"CLIENT", b"KILL", b"USER", b"sub"]).frame;
        assert_eq!(n, Frame::Integer(2), "{port}");
        assert!(closed(&mut k));
    }
}

#[test]
fn reset_and_requirepass_are_the_default_users() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    scenario(
        "requirepass sets the default user's password; RESET returns to it",
        redis.port,
        strata.port,
        &[
            Cmd(0, "ACL SETUSER u on nopass +@all ~*"),
            Cmd(0, "AUTH pw"),
            Cmd(0, "CONFIG SET requirepass pw"),
            Words(0, "ACL LIST"),
            Cmd(1, "AUTH u x"),
            Cmd(1, "ACL WHOAMI"),
            Cmd(1, "RESET"),
            Cmd(1, "ACL WHOAMI"),
            Cmd(1, "GET k"),
            Cmd(1, "AUTH wrong"),
            Cmd(1, "AUTH pw"),
            Cmd(1, "ACL WHOAMI"),
            Cmd(1, "CONFIG SET requirepass"),
            Cmd(0, "ACL SETUSER default resetpass"),
            Words(0, "ACL LIST"),
            Cmd(2, "PING"),
            Cmd(2, "AUTH default x"),
            // CONFIG SET requirepass resets the passwords, even to the
            // value it had.
            Cmd(0, "CONFIG SET requirepass x1"),
            Cmd(0, "ACL SETUSER default >extra"),
            Cmd(0, "CONFIG SET requirepass x1"),
            Words(0, "ACL LIST"),
            Cmd(0, "ACL SETUSER default nopass"),
        ],
    );
}

#[test]
fn users_from_the_configuration() {
    use strata_server::services::config::Config;
    // `user` lines name commands: the registry is read.
    strata_server::commands::install();
    let c = Config::from_conf_str("user alice on >pw ~a* +get\nuser bob off\n").unwrap();
    assert_eq!(c.users.len(), 2);
    let dup = Config::from_conf_str("user alice on\nuser alice off\n").unwrap_err();
    assert!(dup.to_string().contains("Duplicate user found"), "{dup}");
    let bad = Config::from_conf_str("user alice on +nosuch\n").unwrap_err();
    assert!(
        bad.to_string().contains(
            "Error in user declaration '+nosuch': Unknown command or category name in ACL"
        ),
        "{bad}"
    );
    // The default user's line replaces its rules (a password here).
    let strata = common::Server::start(&[
        "--user", "alice", "on", ">pw", "~a*", "+get", "--user", "default", "on", ">dpw", "~*",
        "&*", "+@all",
    ]);
    let mut c = Conn::connect(strata.port);
    let text = |r: oracle::Reply| String::from_utf8_lossy(&r.bytes).into_owned();
    assert!(text(c.cmd(&[b"GET", b"a1"])).starts_with("-NOAUTH"));
    assert_eq!(text(c.cmd(&[b"AUTH", b"alice", b"pw"])), "+OK\r\n");
    assert_eq!(text(c.cmd(&[b"GET", b"a1"])), "$-1\r\n");
    assert!(text(c.cmd(&[b"GET", b"b1"])).starts_with("-NOPERM"));
    assert_eq!(text(c.cmd(&[b"AUTH", b"dpw"])), "+OK\r\n");
    assert_eq!(text(c.cmd(&[b"ACL", b"WHOAMI"])), "$7\r\ndefault\r\n");
}

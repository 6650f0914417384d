//! What an operator locks down, compared with redis-server 7.0: protected
//! configs (`enable-protected-configs`), `rename-command`, and the ACL
//! file (`aclfile`, ACL LOAD / ACL SAVE).

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use common::probe::refused_start;
use oracle::{Conn, RedisServer};

fn text(r: oracle::Reply) -> String {
    String::from_utf8_lossy(&r.bytes).into_owned()
}

#[test]
fn protected_configs_are_refused_as_redis() {
    let redis = RedisServer::start_with(&[]);
    let strata = common::Server::start(&[]);
    let mut got = Vec::new();
    for port in [redis.port, strata.port] {
        let mut c = Conn::connect(port);
        got.push([
            text(c.cmd(&[b"CONFIG", b"SET", b"dir", b"/tmp"])),
            text(c.cmd(&[b"CONFIG", b"SET", b"enable-protected-configs", b"yes"])),
            text(c.cmd(&[b"CONFIG", b"GET", b"enable-protected-configs"])),
            text(c.cmd(&[b"CONFIG", b"GET", b"enable-module-command"])),
            text(c.cmd(&[b"CONFIG", b"SET", b"aclfile", b"/tmp/x"])),
        ]);
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert!(
        got[1][0].contains("can't set protected config"),
        "{}",
        got[1][0]
    );
    // Allowed (local clients here): dir is still fixed while it runs.
    let strata = common::Server::start(&["--enable-protected-configs", "local"]);
    let mut c = Conn::connect(strata.port);
    let r = text(c.cmd(&[b"CONFIG", b"SET", b"dir", b"/tmp"]));
    assert!(r.contains("can't set immutable config"), "{r}");
}

#[test]
fn renamed_and_removed_commands_as_redis() {
    let args = [
        "--rename-command",
        "flushall",
        "",
        "--rename-command",
        "config",
        "cfg-7f3a",
    ];
    let redis = RedisServer::start_with(&args);
    let strata = common::Server::start(&args);
    let mut got = Vec::new();
    for port in [redis.port, strata.port] {
        let mut c = Conn::connect(port);
        got.push([
            text(c.cmd(&[b"SET", b"k", b"v"])),
            text(c.cmd(&[b"FLUSHALL"])),
            text(c.cmd(&[b"CONFIG", b"GET", b"maxclients"])),
            text(c.cmd(&[b"CFG-7F3A", b"GET", b"maxclients"])),
            text(c.cmd(&[b"EVAL", b"return redis.pcall('flushall')", b"0"])),
            text(c.cmd(&[b"DBSIZE"])),
        ]);
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert!(
        got[1][1].starts_with("-ERR unknown command"),
        "{}",
        got[1][1]
    );
    assert_eq!(got[1][5], ":1\r\n");
    // A name that is no command stops the start, as in Redis.
    let dir = tempfile::tempdir().unwrap();
    let dir_text = dir.path().to_str().unwrap();
    let err = refused_start(&[
        "--memcached-port",
        "0",
        "--dir",
        dir_text,
        "--rename-command",
        "nosuch",
        "x",
    ]);
    assert!(err.contains("No such command in rename-command"), "{err}");
}

#[test]
fn the_acl_file_round_trip_as_redis() {
    let files: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<String> = files
        .iter()
        .map(|d| d.path().join("users.acl").to_str().unwrap().to_string())
        .collect();
    for p in &paths {
        std::fs::write(
            p,
            "user alice on >apw ~a* +get +set\nuser default on nopass ~* &* +@all\n",
        )
        .unwrap();
    }
    let redis = RedisServer::start_with(&["--aclfile", &paths[0]]);
    let strata = common::Server::start(&[
        "--aclfile",
        &paths[1],
        "--memcached-allow-unauthenticated",
        "yes",
    ]);
    let mut got = Vec::new();
    for (port, path) in [(redis.port, &paths[0]), (strata.port, &paths[1])] {
        let mut admin = Conn::connect(port);
        let mut alice = Conn::connect(port);
        let mut steps = vec![
            text(alice.cmd(&[b"AUTH", b"alice", b"apw"])),
            text(alice.cmd(&[b"SET", b"a1", b"x"])),
            text(alice.cmd(&[b"SET", b"b1", b"x"]))
                .split(':')
                .next()
                .unwrap()
                .to_string(),
            text(admin.cmd(&[b"ACL", b"SETUSER", b"bob", b"on", b">bpw", b"+ping"])),
            text(admin.cmd(&[b"ACL", b"SAVE"])),
        ];
        // (Each line's rules sorted: redis-server describes single
        // commands in its command dict's order, which is random per
        // process.)
        let saved = std::fs::read_to_string(path).unwrap();
        let mut saved: Vec<String> = saved
            .lines()
            .map(|l| {
                let mut w: Vec<&str> = l.split(' ').collect();
                w[2..].sort_unstable();
                w.join(" ")
            })
            .collect();
        saved.sort_unstable();
        steps.push(saved.join("\n"));
        // A broken file: nothing changes, the lines are named.
        std::fs::write(path, "user alice on >new +get\nuser alice off\nnonsense\n").unwrap();
        steps.push(text(admin.cmd(&[b"ACL", b"LOAD"])).replace(path.as_str(), "<file>"));
        steps.push(text(admin.cmd(&[b"ACL", b"USERS"])));
        // A good one: alice's password changes, bob is gone, alice's
        // connection is closed.
        std::fs::write(path, "user alice on >new ~* +@all\n").unwrap();
        steps.push(text(admin.cmd(&[b"ACL", b"LOAD"])));
        steps.push(text(admin.cmd(&[b"ACL", b"USERS"])));
        steps.push(text(admin.cmd(&[b"AUTH", b"alice", b"new"])));
        let closed = {
            use std::io::{Read, Write};
            let _ = alice.s.write_all(b"PING\r\n");
            let mut b = [0u8; 16];
            matches!(alice.s.read(&mut b), Ok(0) | Err(_))
        };
        steps.push(format!("alice closed: {closed}"));
        got.push(steps);
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert!(
        got[1][6].starts_with("-ERR WARNING: Duplicate user 'alice' found on line 2."),
        "{}",
        got[1][6]
    );
    assert_eq!(got[1][8], "+OK\r\n");
    assert_eq!(got[1][11], "alice closed: true");
}

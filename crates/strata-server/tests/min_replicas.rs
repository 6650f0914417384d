//! `min-replicas-to-write` on a server without replicas, compared with
//! redis-server 7.0: writes are refused with NOREPLICAS (at top level, in
//! MULTI, by EXEC, by a script that declares it may write, and by a
//! script's own write), reads and read-only scripts still run, and 0
//! lifts it.

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

#[test]
fn min_replicas_to_write_refuses_writes_as_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    scenario(
        "NOREPLICAS",
        redis.port,
        strata.port,
        &[
            Cmd(0, "SET x v"),
            Cmd(0, "CONFIG SET min-replicas-to-write 1"),
            Set(0, "CONFIG GET min-replicas-*"),
            Cmd(0, "SET x w"),
            Cmd(0, "GET x"),
            Cmd(0, "INCR n"),
            Cmd(0, "DEL x"),
            Cmd(0, "MULTI"),
            Cmd(0, "GET x"),
            Cmd(0, "SET x y"),
            Cmd(0, "EXEC"),
            Cmd(0, "EVAL return(redis.call('get','x')) 0"),
            Cmd(0, "EVAL return(redis.call('set','x','z')) 0"),
            Any(0, "CONFIG SET min-replicas-to-write 1"),
            Cmd(0, "CONFIG SET min-replicas-max-lag 0"),
            Cmd(0, "SET x lag0"),
            Cmd(0, "CONFIG SET min-replicas-max-lag 10"),
            Cmd(0, "CONFIG SET min-replicas-to-write -1"),
            Cmd(0, "CONFIG SET min-replicas-to-write 0"),
            Cmd(0, "SET x u"),
            Cmd(0, "GET x"),
        ],
    );
    // Scripts with a shebang (their flags hold spaces).
    let mut replies = Vec::new();
    for port in [redis.port, strata.port] {
        let mut c = Conn::connect(port);
        let mut r = Vec::new();
        c.cmd(&[b"CONFIG", b"SET", b"min-replicas-to-write", b"1"]);
        for body in [
            "#!lua\nreturn redis.call('get','x')",
            "#!lua flags=no-writes\nreturn redis.call('get','x')",
            "#!lua flags=no-writes\nreturn redis.call('set','x','1')",
        ] {
            r.push(c.cmd(&[b"EVAL", body.as_bytes(), b"0"]).bytes);
        }
        c.cmd(&[b"CONFIG", b"SET", b"min-replicas-to-write", b"0"]);
        replies.push(r);
    }
    assert_eq!(replies[0], replies[1], "shebang scripts: redis vs strata");
}

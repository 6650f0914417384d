//! Streams beyond the differential mix (issue #11, point 4):
//! - blocking reads (XREAD and XREADGROUP with BLOCK) in scripted
//!   multi-client scenarios, every reply compared with redis-server 7.0:
//!   `$`, several readers served by one XADD, timeouts, BLOCK inside
//!   MULTI, a destroyed group (NOGROUP), a deleted or overwritten key
//!   (UNBLOCKED);
//! - persistence: entries, groups, consumers and pending lists come back
//!   after a clean restart and after kill -9 under `appendfsync always`.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;
#[allow(dead_code)]
#[path = "redis_diff/scenario.rs"]
mod scenario;

use oracle::RedisServer;
use scenario::{scenario, Step, Step::*};

#[test]
fn blocking_reads_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&["--maxmemory-ram", "16mb"]);
    let (rp, sp) = (redis.port, strata.port);
    let run = |name: &str, steps: &[Step]| scenario(name, rp, sp, steps);

    run(
        "XREAD BLOCK on $ is served by the next XADD, with that entry only",
        &[
            Cmd(0, "XADD s 1-1 a 1"),
            Send(1, "XREAD BLOCK 0 STREAMS s $"),
            Sleep(100),
            Cmd(0, "XADD s 2-1 b 2"),
            Recv(1),
            Cmd(0, "XLEN s"),
        ],
    );
    run(
        "a missing key: XREAD BLOCK waits for the XADD that creates it",
        &[
            Send(1, "XREAD BLOCK 0 COUNT 5 STREAMS nokey other 0 0"),
            Sleep(100),
            Cmd(0, "XADD other 5-0 f v"),
            Recv(1),
        ],
    );
    run(
        "readers at different ids: each served past its own id",
        &[
            Cmd(0, "XADD s 1-1 a 1"),
            Send(1, "XREAD BLOCK 0 STREAMS s 9-0"),
            Send(2, "XREAD BLOCK 0 STREAMS s $"),
            Sleep(100),
            Cmd(0, "XADD s 3-0 b 2"),
            Recv(2),
            Cmd(0, "XADD s 10-0 c 3"),
            Recv(1),
        ],
    );
    run(
        "timeouts answer a null array",
        &[
            Cmd(0, "XADD s 1-1 a 1"),
            Cmd(1, "XREAD BLOCK 50 STREAMS s $"),
            Cmd(1, "XGROUP CREATE s g $"),
            Cmd(1, "XREADGROUP GROUP g c BLOCK 50 STREAMS s >"),
            Cmd(1, "XPENDING s g"),
        ],
    );
    run(
        "group readers share the new entries; the first blocked gets them",
        &[
            Cmd(0, "XGROUP CREATE s g $ MKSTREAM"),
            Send(1, "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >"),
            Sleep(50),
            Send(2, "XREADGROUP GROUP g bob BLOCK 0 COUNT 1 STREAMS s >"),
            Sleep(100),
            Cmd(0, "XADD s 1-0 a 1"),
            Recv(1),
            Cmd(0, "XADD s 2-0 b 2"),
            Recv(2),
            Cmd(0, "XPENDING s g"),
            Cmd(0, "XINFO GROUPS s"),
        ],
    );
    run(
        "NOACK, and a history read does not block",
        &[
            Cmd(0, "XADD s 1-0 a 1"),
            Cmd(0, "XGROUP CREATE s g 0"),
            Send(1, "XREADGROUP GROUP g c BLOCK 0 NOACK STREAMS s >"),
            Recv(1),
            Cmd(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s 0"),
            Cmd(0, "XPENDING s g"),
        ],
    );
    run(
        "BLOCK inside MULTI answers at once",
        &[
            Cmd(0, "XADD s 1-0 a 1"),
            Cmd(0, "XGROUP CREATE s g $"),
            Cmd(0, "MULTI"),
            Cmd(0, "XREAD BLOCK 0 STREAMS s $"),
            Cmd(0, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "a blocked group reader gets NOGROUP when its group is destroyed",
        &[
            Cmd(0, "XGROUP CREATE s g $ MKSTREAM"),
            Send(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
            Sleep(100),
            Cmd(0, "XGROUP DESTROY s g"),
            Recv(1),
        ],
    );
    run(
        "a blocked group reader gets UNBLOCKED when its key is deleted",
        &[
            Cmd(0, "XGROUP CREATE s g $ MKSTREAM"),
            Send(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
            Sleep(100),
            Cmd(0, "DEL s"),
            Recv(1),
            Cmd(0, "XGROUP CREATE s g $ MKSTREAM"),
            Send(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
            Sleep(100),
            Cmd(0, "SET s notastream"),
            Recv(1),
        ],
    );
    run(
        "WATCH is broken by XADD and XDEL, not by group reads, acks and claims",
        &[
            Cmd(0, "XADD s 1-0 a 1"),
            Cmd(0, "XADD s 2-0 a 2"),
            Cmd(0, "XGROUP CREATE s g 0"),
            Cmd(0, "WATCH s"),
            Cmd(1, "XREADGROUP GROUP g c STREAMS s >"),
            Cmd(1, "XACK s g 1-0"),
            Cmd(1, "XCLAIM s g d 0 2-0 JUSTID"),
            Cmd(1, "XGROUP CREATECONSUMER s g e"),
            Cmd(1, "XGROUP SETID s g 0"),
            Cmd(1, "XSETID s 5-0"),
            Cmd(0, "MULTI"),
            Cmd(0, "XLEN s"),
            Cmd(0, "EXEC"),
            Cmd(0, "WATCH s"),
            Cmd(1, "XDEL s 1-0"),
            Cmd(0, "MULTI"),
            Cmd(0, "XLEN s"),
            Cmd(0, "EXEC"),
            Cmd(0, "WATCH s"),
            Cmd(1, "XADD s 6-0 a 3"),
            Cmd(0, "MULTI"),
            Cmd(0, "XLEN s"),
            Cmd(0, "EXEC"),
        ],
    );
    run(
        "scripts may read streams but not block",
        &[
            Cmd(0, "XADD s 1-1 a 1"),
            Cmd(0, "EVAL return(redis.call('XREAD','STREAMS',KEYS[1],'0')) 1 s"),
            Cmd(0, "EVAL return(redis.call('XREAD','BLOCK','0','STREAMS',KEYS[1],'0')) 1 s"),
            Cmd(0, "EVAL return(redis.call('xreadgroup','GROUP','g','c','BLOCK','0','STREAMS',KEYS[1],'>')) 1 s"),
            Cmd(0, "EVAL return(redis.call('XREAD','BLOCK','0','STREAMS',KEYS[1])) 1 s"),
        ],
    );
    run(
        "errors come before blocking",
        &[
            Cmd(0, "SET str x"),
            Cmd(1, "XREAD BLOCK 0 STREAMS str $"),
            Cmd(1, "XREAD BLOCK -1 STREAMS s $"),
            Cmd(1, "XREAD BLOCK x STREAMS s $"),
            Cmd(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
            Cmd(1, "XREAD BLOCK 0 STREAMS s >"),
            Cmd(1, "XREAD BLOCK 0 STREAMS s"),
        ],
    );
}

/// The state of a few streams, as replies (entries, groups, pending).
fn state(con: &mut redis::Connection) -> Vec<redis::Value> {
    let mut out = Vec::new();
    for k in ["s0", "s1", "s2"] {
        for words in [
            format!("XRANGE {k} - +"),
            format!("XINFO GROUPS {k}"),
            format!("XPENDING {k} g - + 1000"),
            format!("XLEN {k}"),
        ] {
            let mut parts = words.split(' ');
            let mut c = redis::cmd(parts.next().unwrap_or_default());
            for p in parts {
                c.arg(p);
            }
            let v: redis::Value = c.query(con).unwrap_or(redis::Value::Nil);
            // XPENDING's idle times move on: keep ids, owners and counts.
            out.push(match v {
                redis::Value::Array(rows) if words.starts_with("XPENDING") => redis::Value::Array(
                    rows.into_iter()
                        .map(|r| match r {
                            redis::Value::Array(mut f) if f.len() == 4 => {
                                f[2] = redis::Value::Int(0);
                                redis::Value::Array(f)
                            }
                            r => r,
                        })
                        .collect(),
                ),
                v => v,
            });
        }
    }
    out
}

fn fill(con: &mut redis::Connection) {
    for k in ["s0", "s1", "s2"] {
        let _: () = redis::cmd("XGROUP")
            .arg(&["CREATE", k, "g", "0", "MKSTREAM"])
            .query(con)
            .unwrap();
        for i in 1..=300u32 {
            let _: String = redis::cmd("XADD")
                .arg(k)
                .arg("MAXLEN")
                .arg("~")
                .arg("250")
                .arg(format!("{i}-*"))
                .arg("field")
                .arg(format!("value-{i}-{}", "x".repeat((i % 40) as usize)))
                .query(con)
                .unwrap();
        }
        let _: redis::Value = redis::cmd("XREADGROUP")
            .arg(&["GROUP", "g", "alice", "COUNT", "20", "STREAMS", k, ">"])
            .query(con)
            .unwrap();
        let _: i64 = redis::cmd("XACK")
            .arg(&[k, "g", "101-0", "102-0"])
            .query(con)
            .unwrap();
        let _: i64 = redis::cmd("XDEL")
            .arg(&[k, "110-0", "111-0"])
            .query(con)
            .unwrap();
        let _: redis::Value = redis::cmd("XCLAIM")
            .arg(&[k, "g", "bob", "0", "105-0", "106-0"])
            .query(con)
            .unwrap();
    }
}

#[test]
fn streams_survive_restart_and_kill_9() {
    // Clean restart with the journal off: the shutdown save keeps them.
    let mut srv = common::Server::start(&["--appendonly", "no", "--maxmemory-ram", "8mb"]);
    let mut con = srv.client();
    fill(&mut con);
    let before = state(&mut con);
    assert!(matches!(&before[0], redis::Value::Array(v) if v.len() > 200));
    srv.sigterm();
    srv.wait_exit(std::time::Duration::from_secs(30));
    srv.restart();
    let mut con = srv.client();
    assert_eq!(state(&mut con), before, "after a clean restart");

    // kill -9 under appendfsync always: every acknowledged change is back.
    let mut srv = common::Server::start(&["--appendfsync", "always", "--maxmemory-ram", "8mb"]);
    let mut con = srv.client();
    fill(&mut con);
    let before = state(&mut con);
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    assert_eq!(state(&mut con), before, "after kill -9");
}

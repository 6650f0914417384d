//! Client tracking (issue #11, point 6): CLIENT TRACKING in the default
//! mode (RESP3 pushes on the client's own connection), with REDIRECT to a
//! RESP2 subscriber of `__redis__:invalidate`, BCAST with prefixes,
//! OPTIN / OPTOUT with CLIENT CACHING, NOLOOP, FLUSHALL; CLIENT
//! TRACKINGINFO and GETREDIR, and the option errors. The same script runs
//! on redis-server 7.0 and on Strata; every reply and every invalidation
//! is compared (client ids, which differ, are written as `<id>`).

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};

/// One step: a client sends a command (`$ID1` stands for client 1's id),
/// a client reads one message it was sent, or a pause (ms).
enum Step {
    Cmd(usize, &'static str),
    Recv(usize),
    Sleep(u64),
}
use Step::{Cmd, Recv, Sleep};

fn transcript(port: u16, steps: &[Step]) -> Vec<String> {
    let mut c: Vec<Conn> = (0..3).map(|_| Conn::connect(port)).collect();
    let ids: Vec<String> = c
        .iter_mut()
        .map(|x| {
            let r = x.cmd(&[b"CLIENT", b"ID"]);
            String::from_utf8_lossy(&r.bytes[1..r.bytes.len() - 2]).to_string()
        })
        .collect();
    c[0].cmd(&[b"FLUSHALL"]);
    let mut out = Vec::new();
    for step in steps {
        let (who, got) = match step {
            Cmd(who, words) => {
                let words = words.replace("$ID1", &ids[1]).replace("$ID2", &ids[2]);
                let args: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
                (*who, c[*who].cmd(&args))
            }
            Recv(who) => (*who, c[*who].reply()),
            Sleep(ms) => {
                std::thread::sleep(std::time::Duration::from_millis(*ms));
                continue;
            }
        };
        let mut text = String::from_utf8_lossy(&got.bytes).to_string();
        // HELLO names the server and its version.
        if matches!(step, Cmd(_, w) if w.starts_with("HELLO")) {
            text = "(HELLO)".into();
        }
        let names_ids = matches!(step, Recv(_))
            || matches!(step, Cmd(_, w) if w.contains("GETREDIR") || w.contains("TRACKINGINFO"));
        for (i, id) in ids.iter().enumerate().filter(|_| names_ids) {
            // An integer reply (`:id`), not a key ending in `:id`.
            if text == format!(":{id}\r\n") {
                text = format!(":<id{i}>\r\n");
            }
            text = text.replace(&format!("\n:{id}\r\n"), &format!("\n:<id{i}>\r\n"));
        }
        out.push(format!("client {who}: {text:?}"));
    }
    out
}

#[test]
fn tracking_matches_redis_7() {
    let steps = [
        // Errors and the state of a client not tracking.
        Cmd(0, "CLIENT TRACKINGINFO"),
        Cmd(0, "CLIENT GETREDIR"),
        Cmd(0, "CLIENT CACHING yes"),
        Cmd(0, "CLIENT TRACKING maybe"),
        Cmd(0, "CLIENT TRACKING on prefix a"),
        Cmd(0, "CLIENT TRACKING on bcast optin"),
        Cmd(0, "CLIENT TRACKING on optin optout"),
        Cmd(0, "CLIENT TRACKING on redirect 999999"),
        Cmd(0, "CLIENT TRACKING on bcast prefix a prefix ab"),
        Cmd(0, "CLIENT TRACKING on bogus"),
        // Default mode over RESP3: a read, then another client's write.
        Cmd(0, "HELLO 3"),
        Cmd(0, "CLIENT TRACKING on"),
        Cmd(0, "CLIENT TRACKINGINFO"),
        Cmd(0, "CLIENT GETREDIR"),
        Cmd(1, "SET k v1"),
        Cmd(0, "GET k"),
        Cmd(1, "SET k v2"),
        Recv(0),
        // Forgotten after one invalidation: no second push for k.
        Cmd(1, "SET k v3"),
        Cmd(0, "MGET k k2"),
        Cmd(1, "DEL k2"),
        Cmd(1, "APPEND k x"),
        Recv(0),
        Cmd(0, "PING"),
        // OPTIN: only reads after CLIENT CACHING yes are tracked.
        Cmd(0, "CLIENT TRACKING off"),
        Cmd(0, "CLIENT TRACKING on optin"),
        Cmd(0, "CLIENT CACHING no"),
        Cmd(0, "GET k"),
        Cmd(1, "SET k v4"),
        Cmd(0, "CLIENT CACHING yes"),
        Cmd(0, "CLIENT TRACKINGINFO"),
        Cmd(0, "GET k"),
        Cmd(1, "SET k v5"),
        Recv(0),
        Cmd(0, "CLIENT TRACKING on optout"),
        Cmd(0, "CLIENT TRACKING off"),
        // BCAST with prefixes, NOLOOP: the client's own writes stay quiet.
        Cmd(
            0,
            "CLIENT TRACKING on bcast prefix user: prefix item: noloop",
        ),
        Cmd(0, "CLIENT TRACKINGINFO"),
        Cmd(0, "CLIENT TRACKING on bcast prefix use"),
        Cmd(0, "CLIENT TRACKING on"),
        Cmd(1, "SET user:1 a"),
        Recv(0),
        Cmd(1, "SET other b"),
        Cmd(0, "SET item:9 c"),
        Cmd(1, "HSET item:2 f v"),
        Recv(0),
        // BCAST gathers a batch's keys in one message per prefix, in key
        // order.
        Cmd(1, "MSET user:3 a user:2 b item:1 c other d"),
        Recv(0),
        Recv(0),
        // FLUSHALL: a null key list.
        Cmd(1, "FLUSHALL"),
        Recv(0),
        Cmd(0, "CLIENT TRACKING off"),
        // REDIRECT to a RESP2 subscriber of __redis__:invalidate.
        Cmd(2, "SUBSCRIBE __redis__:invalidate"),
        Cmd(0, "HELLO 2"),
        Cmd(0, "CLIENT TRACKING on redirect $ID2"),
        Cmd(0, "CLIENT GETREDIR"),
        Cmd(0, "GET r"),
        Cmd(1, "SET r 1"),
        Recv(2),
        Cmd(0, "RESET"),
        Cmd(0, "CLIENT TRACKINGINFO"),
        // A read in a script tracks the script's declared keys for its
        // caller, not what it read; a script of writes tracks nothing, and
        // EVAL_RO by itself nothing (Redis 7.0's `call`).
        Cmd(0, "HELLO 3"),
        Cmd(0, "CLIENT TRACKING on"),
        Cmd(1, "MSET s1 1 s2 1"),
        Cmd(0, "EVAL redis.call('set','s3','x') 2 s1 s2"),
        Cmd(1, "MSET s2 2 s1 2"),
        Cmd(0, "EVAL redis.call('get','s3') 2 s1 s2"),
        Cmd(1, "MSET s2 3 s1 3 s3 3"),
        Recv(0),
        Recv(0),
        Cmd(0, "EVAL_RO redis.call('ping') 2 s1 s2"),
        Cmd(1, "MSET s2 4 s1 4"),
        Cmd(0, "PING"),
        Cmd(0, "CLIENT TRACKING off"),
        // The REDIRECT client disconnects: the next invalidation becomes
        // a `tracking-redir-broken` push to the RESP3 client.
        Cmd(0, "CLIENT TRACKING on redirect $ID2"),
        Cmd(0, "GET b"),
        Cmd(2, "QUIT"),
        Sleep(200),
        Cmd(1, "SET b 1"),
        Recv(0),
        Cmd(0, "PING"),
    ];
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let a = transcript(redis.port, &steps);
    let b = transcript(strata.port, &steps);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "step {i}: redis vs strata");
    }
    assert_eq!(a.len(), b.len());
}

/// Past `tracking-table-max-keys`, a tracked key is dropped from the
/// table and its reader told to drop it (the table stays bounded).
#[test]
fn the_tracking_table_is_bounded() {
    let strata = common::Server::start(&["--tracking-table-max-keys", "2"]);
    let mut c = Conn::connect(strata.port);
    c.cmd(&[b"HELLO", b"3"]);
    assert_eq!(c.cmd(&[b"CLIENT", b"TRACKING", b"on"]).bytes, b"+OK\r\n");
    for k in [&b"a"[..], b"b", b"c"] {
        c.cmd(&[b"GET", k]);
    }
    let push = String::from_utf8_lossy(&c.reply().bytes).to_string();
    assert!(
        push.starts_with(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\n"),
        "{push:?}"
    );
    assert_eq!(
        c.cmd(&[b"PING"]).bytes,
        b"+PONG\r\n",
        "a second invalidation"
    );
}

/// A transaction sees one instant (Redis's fixed_time_expire): a key it
/// set with a 1 ms TTL is still there for its GET; once it expires (the
/// background sweep), the NOLOOP client that set it is told, since an
/// expiry is no client's change.
#[test]
fn a_transaction_sees_one_instant_and_expiry_is_not_hidden_by_noloop() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut got = Vec::new();
    for port in [redis.port, strata.port] {
        let mut c = Conn::connect(port);
        let mut sub = Conn::connect(port);
        let id = match sub.cmd(&[b"CLIENT", b"ID"]).frame {
            strata_protocol::Frame::Integer(i) => i.to_string(),
            f => panic!("{f:?}"),
        };
        sub.cmd(&[b"SUBSCRIBE", b"__redis__:invalidate"]);
        let on = [
            &b"CLIENT"[..],
            b"TRACKING",
            b"on",
            b"BCAST",
            b"NOLOOP",
            b"REDIRECT",
            id.as_bytes(),
        ];
        c.cmd(&on);
        c.cmd(&[b"MULTI"]);
        c.cmd(&[b"SET", b"mykey", b"myval", b"PX", b"1"]);
        c.cmd(&[b"SET", b"mykeyotherkey", b"myval"]);
        c.cmd(&[b"DEBUG", b"SLEEP", b"0.05"]);
        c.cmd(&[b"GET", b"mykey"]);
        let exec = c.cmd(&[b"EXEC"]);
        got.push(String::from_utf8_lossy(&exec.bytes).into_owned());
        got.push(String::from_utf8_lossy(&sub.reply().bytes).into_owned());
    }
    assert_eq!(got[0], got[2]);
    assert!(got[2].ends_with("$5\r\nmyval\r\n"), "{}", got[2]);
    assert_eq!(got[1], got[3]);
    assert!(
        got[3].contains("mykey") && !got[3].contains("mykeyotherkey"),
        "{}",
        got[3]
    );
}

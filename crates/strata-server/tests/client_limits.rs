//! The limits that hold a client that asks much and reads little, beside
//! redis-server 7.0 doing the same: `client-output-buffer-limit` (and
//! CLIENT LIST's buffer fields), `client-query-buffer-limit`,
//! `maxmemory-clients`, an EXEC's reply under the output limit, and the
//! replies a client without the password may pile up.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use common::probe::{
    client_field, greedy_reader, local, ping_time, read_to_close, rss, with_big_value,
};
use common::{wait_until, Server};
use oracle::RedisServer;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[test]
fn clients_that_never_read_are_held_to_the_output_limit_as_redis() {
    let redis = RedisServer::start();
    let strata = Server::start(&[]);
    for port in [redis.port, strata.port] {
        let mut c = with_big_value(port);
        // No limit (the normal class's default): the replies wait, and
        // CLIENT LIST shows them.
        let mut greedy = greedy_reader(port, 24);
        wait_until("the backlog in CLIENT LIST", || {
            client_field(&mut c, "greedy", "omem").is_some_and(|m| m > 4 << 20)
        });
        let tot = client_field(&mut c, "greedy", "tot-mem").unwrap();
        let omem = client_field(&mut c, "greedy", "omem").unwrap();
        assert!(tot >= omem, "port {port}: tot-mem {tot} < omem {omem}");
        assert!(
            client_field(&mut c, "greedy", "fd").unwrap() > 0,
            "port {port}: fd"
        );
        // It reads it all in the end.
        let mut got = 0usize;
        let mut buf = vec![0u8; 1 << 20];
        while got < 24 * ((1 << 20) + 12) + 5 {
            match greedy.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        assert_eq!(got, 5 + 24 * ((1 << 20) + 12), "port {port}");
        // A hard limit of 8 MB: the client is closed when it passes it.
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("client-output-buffer-limit")
            .arg("normal 8mb 0 0")
            .query(&mut c)
            .unwrap();
        let before = (port == strata.port).then(|| rss(strata.pid()));
        let mut greedy = greedy_reader(port, 200);
        std::thread::sleep(Duration::from_millis(300));
        assert!(ping_time(port) < Duration::from_secs(2));
        let (got, closed) = read_to_close(&mut greedy);
        assert!(closed, "port {port}: not closed");
        assert!(
            got.len() < 16 << 20,
            "port {port}: {} bytes sent",
            got.len()
        );
        if let Some(before) = before {
            let after = rss(strata.pid());
            assert!(after < before + (64 << 20), "RSS {before} -> {after}");
            let mut info = strata.client();
            let n = strata.info_u64(
                &mut info,
                "stats",
                "client_output_buffer_limit_disconnections",
            );
            assert_eq!(n, 1);
        }
    }
}

#[test]
fn the_query_buffer_limit_closes_a_client_that_sends_too_much() {
    let strata = Server::start(&[
        "--client-query-buffer-limit",
        "1mb",
        "--proto-max-bulk-len",
        "1mb",
    ]);
    // A pipeline held unparsed past 1 MB: one bulk announced at the limit,
    // then more. (`proto-max-bulk-len` is checked at the header.)
    let mut s = TcpStream::connect(local(strata.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n");
    let chunk = vec![b'x'; 64 << 10];
    for _ in 0..20 {
        if s.write_all(&chunk).is_err() {
            break;
        }
    }
    let (_, closed) = read_to_close(&mut s);
    assert!(closed);
    let mut c = strata.client();
    let n = strata.info_u64(&mut c, "stats", "client_query_buffer_limit_disconnections");
    assert_eq!(n, 1);
}

#[test]
fn maxmemory_clients_closes_the_clients_holding_most_as_redis() {
    let redis = RedisServer::start_with(&["--maxmemory-clients", "16mb"]);
    let strata = Server::start(&["--maxmemory-clients", "16mb"]);
    let mut got = Vec::new();
    for (port, pid) in [(redis.port, None), (strata.port, Some(strata.pid()))] {
        let mut c = with_big_value(port);
        let conf: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxmemory-clients")
            .query(&mut c)
            .unwrap();
        let before = pid.map(rss);
        // 200 MB asked for, nothing read: closed once it holds 16 MB.
        let mut greedy = greedy_reader(port, 200);
        let (sent, closed) = read_to_close(&mut greedy);
        let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
        let evicted = info
            .lines()
            .find_map(|l| l.strip_prefix("evicted_clients:"))
            .unwrap()
            .trim()
            .to_string();
        // The client that asked for little is still served.
        let pong: String = redis::cmd("PING").query(&mut c).unwrap();
        if let (Some(before), Some(pid)) = (before, pid) {
            let after = rss(pid);
            assert!(after < before + (96 << 20), "RSS {before} -> {after}");
        }
        // With CLIENT NO-EVICT on, the same client is left alone.
        let mut spared = TcpStream::connect(local(port)).unwrap();
        spared
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut req = b"CLIENT NO-EVICT on\r\n".to_vec();
        for _ in 0..24 {
            req.extend_from_slice(b"GET big\r\n");
        }
        spared.write_all(&req).unwrap();
        let mut n = 0;
        let mut buf = vec![0u8; 1 << 20];
        while n < 5 + 24 * ((1 << 20) + 12) {
            match spared.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        got.push((conf, closed, sent.len() < 64 << 20, evicted, pong, n));
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert!(got[1].1, "the greedy client was not closed");
    assert_eq!(got[1].3, "1");
    assert_eq!(got[1].5, 5 + 24 * ((1 << 20) + 12));
}

#[test]
fn a_transaction_cannot_build_a_reply_past_the_output_limit_as_redis() {
    let redis = RedisServer::start();
    let strata = Server::start(&[]);
    let mut got = Vec::new();
    for (port, pid) in [(redis.port, None), (strata.port, Some(strata.pid()))] {
        let mut c = with_big_value(port);
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("client-output-buffer-limit")
            .arg("normal 8mb 0 0")
            .query(&mut c)
            .unwrap();
        let before = pid.map(rss);
        // 300 MB of replies in one EXEC.
        let mut req = b"MULTI\r\n".to_vec();
        for _ in 0..300 {
            req.extend_from_slice(b"GET big\r\n");
        }
        req.extend_from_slice(b"EXEC\r\nSET after 1\r\n");
        let mut s = TcpStream::connect(local(port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&req).unwrap();
        let (reply, closed) = read_to_close(&mut s);
        if let (Some(before), Some(pid)) = (before, pid) {
            let after = rss(pid);
            assert!(after < before + (64 << 20), "RSS {before} -> {after}");
        }
        let after: Option<String> = redis::cmd("GET").arg("after").query(&mut c).unwrap();
        got.push((closed, reply.len() < 16 << 20, after));
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert!(got[1].0 && got[1].1);
}
#[test]
fn a_client_without_the_password_cannot_pile_up_replies() {
    // PINGs never read: each gets NOAUTH, which would wait without bound.
    let strata = Server::start(&["--requirepass", "pw"]);
    let mut s = TcpStream::connect(local(strata.port)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let burst = b"PING\r\n".repeat(50_000);
    for _ in 0..20 {
        if s.write_all(&burst).is_err() {
            break;
        }
    }
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (got, closed) = read_to_close(&mut s);
    assert!(closed, "not closed");
    assert!(got.len() < 8 << 20, "{} bytes of NOAUTH", got.len());
    assert!(ping_time(strata.port) < Duration::from_secs(2));
}

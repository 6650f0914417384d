//! Connections moving between event loops (`loop-scaling auto`, the
//! `loops` module): a connection's state survives the move (its database,
//! name, an open MULTI, a request half received), memcached connections
//! move too, and pipelines keep every reply through many moves. DEBUG
//! LOOPS fixes the count of loops taking connections, so each move here
//! is deterministic; the controller's choices have their own unit tests
//! (`loops/control.rs`).

mod common;

use common::{q, read_n, roundtrip, Server};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn scaling_server() -> Server {
    Server::start(&["--loop-scaling", "auto", "--threads", "2"])
}

fn server_info(srv: &Server, c: &mut redis::Connection, field: &str) -> String {
    srv.info(c, "server")
        .get(field)
        .unwrap_or_else(|| panic!("INFO server has no {field}"))
        .clone()
}

fn raw(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The error DEBUG LOOPS `arg` answers.
fn debug_loops_error(c: &mut redis::Connection, arg: &str) -> String {
    let r = redis::cmd("DEBUG").arg("LOOPS").arg(arg).query::<()>(c);
    r.expect_err("DEBUG LOOPS should fail").to_string()
}

#[test]
fn info_and_debug_loops() {
    let srv = scaling_server();
    let mut c = srv.client();
    assert_eq!(server_info(&srv, &mut c, "loop_scaling"), "auto");
    assert_eq!(server_info(&srv, &mut c, "loops_active"), "1");
    let e = debug_loops_error(&mut c, "3");
    assert!(e.contains("there are 2 loops"), "{e}");
    let e = debug_loops_error(&mut c, "x");
    assert!(e.contains("not an integer"), "{e}");
    let _: () = q(&mut c, "DEBUG LOOPS 2");
    assert_eq!(server_info(&srv, &mut c, "loops_active"), "2");
    let _: () = q(&mut c, "DEBUG LOOPS 0");

    let off = Server::start(&["--loop-scaling", "off", "--threads", "2"]);
    let mut c = off.client();
    assert_eq!(server_info(&off, &mut c, "loop_scaling"), "off");
    assert_eq!(server_info(&off, &mut c, "loops_active"), "2");
    let e = debug_loops_error(&mut c, "1");
    assert!(e.contains("loop-scaling is off"), "{e}");
}

#[test]
fn a_resp_connection_moves_with_its_state_and_half_a_request() {
    let srv = scaling_server();
    let mut c = srv.client(); // loop 0, the only active one
    let _: () = q(&mut c, "DEBUG LOOPS 2");
    // The next connection goes to loop 1 (it has none).
    let mut a = raw(srv.port);
    common::wait_until("the second connection on loop 1", || {
        server_info(&srv, &mut c, "loop_connections") == "1,1"
    });
    let setup = b"SELECT 3\r\nCLIENT SETNAME mover\r\nSET k v\r\nMULTI\r\nINCR n\r\n";
    let want = "+OK\r\n+OK\r\n+OK\r\n+OK\r\n+QUEUED\r\n";
    assert_eq!(roundtrip(&mut a, setup, want.len()), want.as_bytes());
    // Loop 1 must hand its connection over at its next quiet point.
    let _: () = q(&mut c, "DEBUG LOOPS 1");
    // A command, and the start of the next one: the move happens with
    // "*1\r\n$4\r\nEX" read but not decoded.
    let got = roundtrip(&mut a, b"INCR n\r\n*1\r\n$4\r\nEX", 9);
    assert_eq!(got, b"+QUEUED\r\n");
    common::wait_until("the move", || {
        server_info(&srv, &mut c, "loop_migrations") == "1"
    });
    assert_eq!(server_info(&srv, &mut c, "loop_connections"), "2,0");
    let want = "*2\r\n:1\r\n:2\r\n$1\r\nv\r\n$5\r\nmover\r\n";
    assert_eq!(
        roundtrip(&mut a, b"EC\r\nGET k\r\nCLIENT GETNAME\r\n", want.len()),
        want.as_bytes()
    );
    // The key is in database 3 only.
    let none: Option<String> = q(&mut c, "GET k");
    assert_eq!(none, None);
}

#[test]
fn a_memcached_connection_moves_with_half_a_request() {
    let srv = scaling_server();
    let mut c = srv.client();
    let _: () = q(&mut c, "DEBUG LOOPS 2");
    let mut m = raw(srv.mc_port);
    common::wait_until("the memcached connection on loop 1", || {
        server_info(&srv, &mut c, "loop_connections") == "1,1"
    });
    let _: () = q(&mut c, "DEBUG LOOPS 1");
    let want = "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n";
    let got = roundtrip(&mut m, b"set a 0 0 1\r\nx\r\nget a\r\nge", want.len());
    assert_eq!(got, want.as_bytes());
    common::wait_until("the move", || {
        server_info(&srv, &mut c, "loop_migrations") == "1"
    });
    let got = roundtrip(&mut m, b"t a\r\n", want.len() - 8);
    assert_eq!(got, &want.as_bytes()[8..]);
}

#[test]
fn pipelines_keep_every_reply_while_connections_move() {
    let srv = scaling_server();
    let port = srv.port;
    let mc_port = srv.mc_port;
    let stop = Instant::now() + Duration::from_millis(1500);
    let workers: Vec<_> = (0..4)
        .map(|w| {
            std::thread::spawn(move || {
                let mut s = raw(port);
                let mut sent = 0u64;
                let mut batch = Vec::new();
                while Instant::now() < stop {
                    batch.clear();
                    for _ in 0..50 {
                        batch.extend_from_slice(format!("INCR w{w}\r\n").as_bytes());
                    }
                    s.write_all(&batch).unwrap();
                    let mut want = String::new();
                    for i in 1..=50 {
                        want.push_str(&format!(":{}\r\n", sent + i));
                    }
                    let got = read_n(&mut s, want.len());
                    assert_eq!(String::from_utf8_lossy(&got), want, "worker {w}");
                    sent += 50;
                }
                sent
            })
        })
        .collect();
    let mc = std::thread::spawn(move || {
        let mut m = raw(mc_port);
        let _ = roundtrip(&mut m, b"set m 0 0 1\r\n0\r\n", 8);
        let mut n = 0u64;
        while Instant::now() < stop {
            n += 1;
            let want = format!("{n}\r\n");
            let got = roundtrip(&mut m, b"incr m 1\r\n", want.len());
            assert_eq!(String::from_utf8_lossy(&got), want);
        }
    });
    let mut c = srv.client();
    let mut k = 1;
    while Instant::now() < stop {
        k = 3 - k;
        let _: () = q(&mut c, &format!("DEBUG LOOPS {k}"));
        std::thread::sleep(Duration::from_millis(20));
    }
    let _: () = q(&mut c, "DEBUG LOOPS 0");
    for (w, h) in workers.into_iter().enumerate() {
        let sent = h.join().unwrap();
        let n: u64 = q(&mut c, &format!("GET w{w}"));
        assert_eq!(n, sent);
    }
    mc.join().unwrap();
    let moved: u64 = server_info(&srv, &mut c, "loop_migrations")
        .parse()
        .unwrap();
    assert!(moved >= 10, "only {moved} moves");
}

//! Probes the attack and limit tests share: raw exchanges that watch for
//! the server closing, a process's RSS, a well-behaved client's round
//! trip, CLIENT LIST fields, a client that asks and never reads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Sends `data` on a new connection to `addr`; returns what came back
/// before the server closed it (or 3 s passed), and whether it closed.
pub fn exchange(addr: SocketAddr, data: &[u8]) -> (Vec<u8>, bool) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = s.write_all(data);
    read_to_close(&mut s)
}

/// Reads until the peer closes (true) or a read times out (false).
pub fn read_to_close(s: &mut TcpStream) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(_) => return (out, false),
        }
    }
}

pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Resident set size of a process, in bytes.
pub fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// A request's round trip on a fresh connection: a well-behaved client.
pub fn ping_time(port: u16) -> Duration {
    let t = Instant::now();
    let (r, _) = {
        let mut s = TcpStream::connect(local(port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"PING\r\n").unwrap();
        let mut b = [0u8; 7];
        s.read_exact(&mut b).unwrap();
        (b, ())
    };
    // (NOAUTH when a password is set: answered all the same.)
    assert!(&r == b"+PONG\r\n" || &r == b"-NOAUTH", "{r:?}");
    t.elapsed()
}

/// A CLIENT LIST field of the client named `name`.
pub fn client_field(c: &mut redis::Connection, name: &str, field: &str) -> Option<u64> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(c).unwrap();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))?;
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
        .and_then(|v| v.parse().ok())
}

/// A client that asks for `n` copies of a 1 MB value and reads nothing.
pub fn greedy_reader(port: u16, n: usize) -> TcpStream {
    let mut s = TcpStream::connect(local(port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = b"CLIENT SETNAME greedy\r\n".to_vec();
    for _ in 0..n {
        req.extend_from_slice(b"GET big\r\n");
    }
    s.write_all(&req).unwrap();
    s
}

/// A `redis` crate connection to `port` with `big` set to a 1 MB value.
pub fn with_big_value(port: u16) -> redis::Connection {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let big = "x".repeat(1 << 20);
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut c)
        .unwrap();
    c
}

/// Runs the binary with `args` (and a free `--port`), which must refuse to
/// start; returns what it printed on stderr.
pub fn refused_start(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", &super::free_port().to_string()])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?}: it started ({err})");
    err
}

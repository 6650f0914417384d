//! What a hostile client tries, against the real binary and beside
//! redis-server 7.0 doing the same (issue 44's table, a test per row):
//! each attack, Redis's answer byte for byte where Redis has one, the
//! server's RAM bounded and a well-behaved client served meanwhile.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use common::probe::{exchange, local, ping_time, refused_start, rss};
use common::{q, wait_until, Server};
use oracle::RedisServer;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

#[test]
fn an_http_post_from_a_web_page_runs_nothing_as_redis() {
    let redis = RedisServer::start();
    let strata = Server::start(&[]);
    // What a browser sends when a page posts a form to localhost.
    let post = b"POST / HTTP/1.1\r\nHost: 127.0.0.1:6379\r\nContent-Type: text/plain\r\n\
                 Content-Length: 10\r\n\r\nFLUSHALL\r\n";
    // A header line first ("Host:" alone), and a pipeline that starts well.
    let host = b"Host: evil.example\r\nFLUSHALL\r\n";
    let pipelined = b"PING\r\nPOST / HTTP/1.1\r\nFLUSHALL\r\n";
    let mut got = Vec::new();
    for port in [redis.port, strata.port] {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = q(&mut c, "SET k v");
        let mut replies = Vec::new();
        for attack in [&post[..], host, pipelined] {
            let (reply, closed) = exchange(local(port), attack);
            assert!(
                closed,
                "port {port}: the connection stays open after {attack:?}"
            );
            replies.push(reply);
        }
        let dbsize: i64 = q(&mut c, "DBSIZE");
        assert_eq!(dbsize, 1, "port {port}: FLUSHALL ran");
        got.push(replies);
    }
    assert_eq!(got[0], got[1], "replies: redis vs strata");
}

#[test]
fn an_http_post_to_the_memcached_port_runs_nothing() {
    let strata = Server::start(&[]);
    let mut c = strata.client();
    let _: () = q(&mut c, "SET k v");
    let post =
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1:11211\r\nContent-Length: 11\r\n\r\nflush_all\r\n";
    let (reply, closed) = exchange(local(strata.mc_port), post);
    assert!(closed);
    assert_eq!(reply, b"ERROR\r\n");
    // A cas line short of its unique: its block is swallowed, not run.
    let (reply, _) = exchange(
        local(strata.mc_port),
        b"cas k 0 0 9\r\nflush_all\r\nquit\r\n",
    );
    assert_eq!(reply, b"ERROR\r\n");
    let n: i64 = q(&mut c, "DBSIZE");
    assert_eq!(n, 1);
}

#[test]
fn the_attack_is_logged_once_a_minute_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("strata.log");
    let strata = Server::start(&["--logfile", log.to_str().unwrap()]);
    for _ in 0..3 {
        let (_, closed) = exchange(local(strata.port), b"POST / HTTP/1.1\r\n");
        assert!(closed);
    }
    wait_until("the warning in the log", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Possible SECURITY ATTACK detected"))
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches("Possible SECURITY ATTACK detected").count(),
        1,
        "{text}"
    );
}

#[test]
fn unauthenticated_clients_cannot_make_the_server_buffer_as_redis() {
    let redis = RedisServer::start_with(&["--requirepass", "pw"]);
    let strata = Server::start(&["--requirepass", "pw"]);
    let cases: [&[u8]; 4] = [
        b"*11\r\n",
        b"*1\r\n$16385\r\n",
        b"*2\r\n$3\r\nSET\r\n$500000000\r\nxxxx",
        // At the limits: answered (NOAUTH), not closed.
        b"*1\r\n$16384\r\n",
    ];
    let mut got = Vec::new();
    for port in [redis.port, strata.port] {
        let mut replies = Vec::new();
        for (i, case) in cases.iter().enumerate() {
            let (reply, closed) = exchange(local(port), case);
            assert_eq!(closed, i < 3, "port {port}, case {i}: closed");
            replies.push(reply);
        }
        got.push(replies);
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert_eq!(
        got[1][0],
        b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
    assert_eq!(
        got[1][1],
        b"-ERR Protocol error: unauthenticated bulk length\r\n"
    );

    // Twenty clients announcing 500 MB and sending 2 MB each: each is
    // closed at its header; RSS stays flat; a client is served meanwhile.
    let before = rss(strata.pid());
    let junk = vec![b'x'; 2 << 20];
    let attackers: Vec<_> = (0..20)
        .map(|_| {
            let port = strata.port;
            let junk = junk.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(local(port)).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                let _ = s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\n");
                let _ = s.write_all(&junk);
            })
        })
        .collect();
    let served = ping_time(strata.port);
    for a in attackers {
        a.join().unwrap();
    }
    let after = rss(strata.pid());
    assert!(
        after < before + (16 << 20),
        "RSS grew from {before} to {after} bytes"
    );
    assert!(served < Duration::from_secs(2), "PING took {served:?}");
    // Authenticated: big arguments are fine.
    let mut c = redis::Client::open(format!("redis://:pw@127.0.0.1:{}/", strata.port))
        .unwrap()
        .get_connection()
        .unwrap();
    let big = "v".repeat(100_000);
    let _: () = redis::cmd("SET").arg("k").arg(&big).query(&mut c).unwrap();
    let back: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(back.len(), big.len());
}

/// A non-loopback IPv4 address of this machine, if it has one.
fn own_address() -> Option<IpAddr> {
    let mut ifs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut ifs) } != 0 {
        return None;
    }
    let mut found = None;
    let mut p = ifs;
    while !p.is_null() && found.is_none() {
        // SAFETY: p walks the list getifaddrs returned.
        let ifa = unsafe { &*p };
        if !ifa.ifa_addr.is_null()
            && i32::from(unsafe { (*ifa.ifa_addr).sa_family }) == libc::AF_INET
        {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            if !ip.is_loopback() {
                found = Some(IpAddr::V4(ip));
            }
        }
        p = ifa.ifa_next;
    }
    // SAFETY: the list getifaddrs gave.
    unsafe { libc::freeifaddrs(ifs) };
    found
}

#[test]
fn protected_mode_refuses_other_hosts_as_redis() {
    // Defaults: protected mode on, bound to loopback only.
    let plain = Server::start(&[]);
    let mut c = plain.client();
    let conf: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("protected-mode")
        .query(&mut c)
        .unwrap();
    assert_eq!(conf, ["protected-mode", "yes"]);
    let bind: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("bind")
        .query(&mut c)
        .unwrap();
    assert_eq!(bind, ["bind", "127.0.0.1 -::1"]);
    let Some(ip) = own_address() else {
        // (CI's machine has one: there the test must not pass untried.)
        assert!(
            std::env::var_os("CI").is_none(),
            "no non-loopback address on this machine: the refusal is not exercised"
        );
        eprintln!("no non-loopback address on this machine: the refusal itself is not exercised");
        return;
    };
    let redis = RedisServer::start_with(&["--bind", "0.0.0.0"]);
    let strata = Server::start(&["--bind", "0.0.0.0"]);
    let mut denied = Vec::new();
    for port in [redis.port, strata.port] {
        let (reply, closed) = exchange(SocketAddr::new(ip, port), b"FLUSHALL\r\n");
        assert!(closed, "port {port}: not closed");
        denied.push(reply);
        // Loopback clients are served.
        let (reply, _) = {
            let mut s = TcpStream::connect(local(port)).unwrap();
            s.write_all(b"PING\r\n").unwrap();
            let mut b = [0u8; 7];
            s.read_exact(&mut b).unwrap();
            (b, ())
        };
        assert_eq!(&reply, b"+PONG\r\n");
    }
    assert_eq!(
        String::from_utf8_lossy(&denied[0]),
        String::from_utf8_lossy(&denied[1]),
        "DENIED: redis vs strata"
    );
    assert!(denied[1].starts_with(b"-DENIED Redis is running in protected mode"));
    let mut c = strata.client();
    let rejected = strata.info_u64(&mut c, "stats", "rejected_connections");
    assert_eq!(rejected, 1);
    // With a password, other hosts may connect (and must AUTH).
    let _: () = q(&mut c, "CONFIG SET requirepass pw");
    let (reply, _) = {
        let mut s = TcpStream::connect(SocketAddr::new(ip, strata.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        s.write_all(b"PING\r\n").unwrap();
        let mut b = [0u8; 7];
        s.read_exact(&mut b).unwrap();
        (b, ())
    };
    assert_eq!(&reply, b"-NOAUTH");
    // Without, CONFIG SET protected-mode no lets them in.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("")
        .query(&mut c)
        .unwrap();
    let (reply, closed) = exchange(SocketAddr::new(ip, strata.port), b"PING\r\n");
    assert!(reply.starts_with(b"-DENIED") && closed);
    // The memcached port too: it has no password at all.
    let (reply, closed) = exchange(SocketAddr::new(ip, strata.mc_port), b"flush_all\r\n");
    assert!(closed && reply.starts_with(b"SERVER_ERROR Strata is running in protected mode"));
    let (reply, _) = exchange(local(strata.mc_port), b"version\r\nquit\r\n");
    assert!(reply.starts_with(b"VERSION "), "{reply:?}");
    let _: () = q(&mut c, "CONFIG SET protected-mode no");
    let (reply, _) = exchange(SocketAddr::new(ip, strata.port), b"PING\r\n");
    assert_eq!(reply, b"+PONG\r\n");
}

/// Sends a command on a raw socket and reads one line-terminated reply.
fn line(s: &mut TcpStream, cmd: &str) -> String {
    s.write_all(cmd.as_bytes()).unwrap();
    s.write_all(b"\r\n").unwrap();
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    while !out.ends_with(b"\r\n") {
        match s.read(&mut b) {
            Ok(1) => out.push(b[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&out).trim_end().to_string()
}

#[test]
fn a_runaway_script_can_be_stopped_behind_a_password_as_redis() {
    let redis = RedisServer::start_with(&["--requirepass", "pw", "--busy-reply-threshold", "100"]);
    let strata = Server::start(&["--requirepass", "pw", "--busy-reply-threshold", "100"]);
    let mut got = Vec::new();
    for (port, pid) in [(redis.port, None), (strata.port, Some(strata.pid()))] {
        let mut runner = TcpStream::connect(local(port)).unwrap();
        runner
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        assert_eq!(line(&mut runner, "AUTH pw"), "+OK");
        runner
            .write_all(b"EVAL \"while true do end\" 0\r\n")
            .unwrap();
        let mut admin = TcpStream::connect(local(port)).unwrap();
        admin
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        // Busy: wait until other clients are told so.
        let mut probe = TcpStream::connect(local(port)).unwrap();
        probe
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        assert_eq!(line(&mut probe, "AUTH pw"), "+OK");
        wait_until("the script to be busy", || {
            line(&mut probe, "PING").starts_with("-BUSY")
        });
        let mut steps = vec![
            line(&mut admin, "GET k"),
            line(&mut admin, "SCRIPT KILL"),
            line(&mut admin, "AUTH pw"),
        ];
        if let Some(pid) = pid {
            // SIGTERM while the script runs: the server keeps serving (so
            // the script can be stopped) and shuts down once it ends.
            assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
            std::thread::sleep(Duration::from_millis(300));
            assert!(
                std::fs::metadata(format!("/proc/{pid}")).is_ok(),
                "exited while the script ran"
            );
        }
        steps.push(line(&mut admin, "GET k"));
        steps.push(line(&mut admin, "SCRIPT KILL"));
        got.push(steps);
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert_eq!(got[1][0], "-NOAUTH Authentication required.");
    assert_eq!(got[1][2], "+OK");
    assert_eq!(got[1][4], "+OK");
    let mut strata = strata;
    strata.wait_exit(Duration::from_secs(20));
}

#[test]
fn a_second_server_on_the_same_files_refuses_to_start() {
    let first = Server::start(&[]);
    let mut c = first.client();
    let _: () = q(&mut c, "SET k v");
    let dir = first.dir.path().to_str().unwrap().to_string();
    let flash = first.flash_dir().to_str().unwrap().to_string();
    let other = tempfile::tempdir().unwrap();
    let other = other.path().to_str().unwrap();
    for args in [
        vec!["--memcached-port", "0", "--dir", &dir],
        vec![
            "--memcached-port",
            "0",
            "--dir",
            other,
            "--flash-dir",
            &flash,
        ],
    ] {
        let err = refused_start(&args);
        assert!(err.contains("is in use by process"), "{args:?}: {err}");
    }
    let v: String = q(&mut c, "GET k");
    assert_eq!(v, "v");
    // A flash-dir that is dir itself: one lock, and the server starts.
    let same = tempfile::tempdir().unwrap();
    let path = same.path().to_str().unwrap();
    let s = Server::start(&["--flash-dir", path, "--dir", path]);
    let mut c = s.client();
    let _: () = q(&mut c, "SET k v");
}

#[test]
fn the_memcached_port_never_bypasses_the_password() {
    // At start: refused with a message naming the option.
    let dir = tempfile::tempdir().unwrap();
    let mc_port = common::free_port().to_string();
    let dir_text = dir.path().to_str().unwrap();
    let err = refused_start(&[
        "--memcached-port",
        &mc_port,
        "--dir",
        dir_text,
        "--requirepass",
        "pw",
    ]);
    assert!(err.contains("memcached-allow-unauthenticated"), "{err}");
    // Explicitly allowed: it starts and serves.
    let s = Server::start(&[
        "--requirepass",
        "pw",
        "--memcached-allow-unauthenticated",
        "yes",
    ]);
    let (r, _) = exchange(local(s.mc_port), b"set a 0 0 1\r\nx\r\nquit\r\n");
    assert_eq!(r, b"STORED\r\n");
    // A password set later: memcached clients are refused, nothing runs.
    let s = Server::start(&[]);
    let mut c = s.client();
    let _: () = q(&mut c, "SET k v");
    let _: () = q(&mut c, "CONFIG SET requirepass pw");
    let (r, closed) = exchange(local(s.mc_port), b"flush_all\r\n");
    assert_eq!(r, b"CLIENT_ERROR unauthenticated\r\n");
    assert!(closed);
    // So are ACL users without one.
    let _: () = redis::cmd("AUTH").arg("pw").query(&mut c).unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("")
        .query(&mut c)
        .unwrap();
    let _: () = q(&mut c, "ACL SETUSER app on >secret ~* +@all");
    let (r, _) = exchange(local(s.mc_port), b"flush_all\r\n");
    assert_eq!(r, b"CLIENT_ERROR unauthenticated\r\n");
    let _: () = q(&mut c, "ACL DELUSER app");
    let (r, _) = exchange(local(s.mc_port), b"get k\r\nquit\r\n");
    assert_eq!(r, b"VALUE k 0 1\r\nv\r\nEND\r\n");
    let n: i64 = q(&mut c, "DBSIZE");
    assert_eq!(n, 1);
}

#[test]
fn a_memcached_data_block_is_never_run_as_commands() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let _: () = q(&mut c, "SET keep me");
    let long = "k".repeat(300);
    let cases: Vec<(Vec<u8>, &[u8])> = vec![
        // A control byte belongs to the key, as memcached 1.6 stores it.
        (
            b"set a\x01b 0 0 9\r\nflush_all\r\nget a\x01b\r\nquit\r\n".to_vec(),
            b"STORED\r\nVALUE a\x01b 0 9\r\nflush_all\r\nEND\r\n",
        ),
        // A refused line's block is swallowed (memcached would run it).
        (
            format!("set {long} 0 0 9\r\nflush_all\r\nquit\r\n").into_bytes(),
            b"CLIENT_ERROR bad command line format\r\n",
        ),
        (
            b"set k x 0 9\r\nflush_all\r\nquit\r\n".to_vec(),
            b"CLIENT_ERROR bad command line format\r\n",
        ),
        // A length that does not read: closed before the block.
        (
            b"set k 0 0 9x\r\nflush_all\r\n".to_vec(),
            b"CLIENT_ERROR bad command line format\r\n",
        ),
    ];
    for (send, want) in cases {
        let (r, closed) = exchange(local(s.mc_port), &send);
        assert_eq!(
            String::from_utf8_lossy(&r),
            String::from_utf8_lossy(want),
            "{:?}",
            String::from_utf8_lossy(&send)
        );
        assert!(closed);
    }
    let v: String = q(&mut c, "GET keep");
    assert_eq!(v, "me", "flush_all ran");
}

#[test]
fn the_listen_backlog_is_tcp_backlog() {
    let Ok(out) = std::process::Command::new("ss").args(["-ltnH"]).output() else {
        panic!("ss (iproute2) is needed: .ci/run installs it");
    };
    let _ = out;
    let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let s = Server::start(&[]);
    let r = Server::start(&["--tcp-backlog", "100"]);
    for (srv, want) in [(&s, 511.min(somaxconn)), (&r, 100)] {
        let out = std::process::Command::new("ss")
            .args(["-ltnH", &format!("sport = :{}", srv.port)])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let backlog: u32 = text
            .lines()
            .find(|l| l.contains("127.0.0.1"))
            .and_then(|l| l.split_whitespace().nth(2))
            .unwrap_or_else(|| panic!("{text}"))
            .parse()
            .unwrap();
        assert_eq!(backlog, want, "{text}");
    }
}

#[test]
fn a_restore_payload_cannot_make_the_server_allocate_what_it_says() {
    // An LZF string that claims 72 PB once decompressed (found by the
    // rdb_payload fuzz target: the server aborted on the allocation).
    let mut body = vec![0x00, 0xC3, 0x02, 0x81];
    body.extend_from_slice(&72_059_793_151_911_276u64.to_be_bytes());
    body.extend_from_slice(b"\x00a");
    let payload = strata_server::base::rdb::seal(body);
    let redis = RedisServer::start();
    let mut strata = Server::start(&[]);
    let mut got = Vec::new();
    for port in [redis.port, strata.port] {
        let mut c = oracle::Conn::connect(port);
        let r = c.cmd(&[b"RESTORE", b"k", b"0", &payload]);
        got.push(String::from_utf8_lossy(&r.bytes).into_owned());
        assert_eq!(c.cmd(&[b"PING"]).bytes, b"+PONG\r\n");
    }
    assert_eq!(got[0], got[1], "redis vs strata");
    assert_eq!(got[1], "-ERR Bad data format\r\n");
    assert!(strata.alive());
}

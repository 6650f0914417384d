//! Starts the real `strata-server` binary on a free port with a temp data
//! directory, waits until it answers PING, and kills it on drop. Crash and
//! restart tests use `kill9` / `sigterm` / `wait_exit` and `restart` (same
//! directory and arguments, new port).
#![allow(dead_code)]

pub mod accounts;
pub mod probe;
pub mod raw;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub port: u16,
    /// The memcached listener's port.
    pub mc_port: u16,
    /// The data directory; kept across `restart`s, removed on drop.
    pub dir: tempfile::TempDir,
    /// The arguments of `start`, reused by `restart`.
    args: Vec<String>,
    child: Child,
}

impl Server {
    /// Starts a server with `args` (as `--option value` pairs) added to the
    /// test defaults.
    pub fn start(args: &[&str]) -> Server {
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("tempdir");
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let mut s = Server::spawn(dir, args);
            if s.wait_ready() {
                return s;
            }
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
        panic!("strata-server did not start");
    }

    /// Spawns the binary on `dir` and a free port; does not wait.
    fn spawn(dir: tempfile::TempDir, args: Vec<String>) -> Server {
        let (port, mc_port, child) = spawn_child(dir.path(), &args);
        Server {
            port,
            mc_port,
            dir,
            args,
            child,
        }
    }

    /// Starts the server again on the same directory with the same
    /// arguments (on a new port), after the old process has exited
    /// (`kill9`, `wait_exit`), and waits until it answers PING.
    pub fn restart(&mut self) {
        for _ in 0..3 {
            self.restart_no_wait();
            if self.wait_ready() {
                return;
            }
            // A port taken meanwhile, or a crash: the last try panics.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        panic!(
            "strata-server did not restart on {}",
            self.dir.path().display()
        );
    }

    /// Like `restart` but returns as soon as the process is spawned (to
    /// watch it load); `wait_ready` waits for it.
    pub fn restart_no_wait(&mut self) {
        assert!(!self.alive(), "restart: the old process is still running");
        let (port, mc_port, child) = spawn_child(self.dir.path(), &self.args);
        self.port = port;
        self.mc_port = mc_port;
        self.child = child;
    }

    /// The process id of the running server.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server with SIGKILL (a crash) and reaps it.
    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }

    /// Sends SIGTERM (a clean shutdown request).
    pub fn sigterm(&self) {
        let r = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(r, 0, "kill -TERM failed");
    }

    /// Waits (polling, bounded by `timeout`) until the process exits;
    /// panics if it does not.
    pub fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "strata-server did not exit within {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `<dir>/flash`, where the segments, the checkpoint and the state
    /// file live.
    pub fn flash_dir(&self) -> PathBuf {
        self.dir.path().join("flash")
    }

    /// The segment files (`seg-*.log`), oldest first.
    pub fn segments(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.flash_dir())
            .expect("read flash dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("seg-") && n.ends_with(".log")
            })
            .collect();
        v.sort();
        v
    }

    /// Polls PING until the server answers (never sleeps blindly); false
    /// if the process exited or 20 s passed.
    pub fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                if s.write_all(b"PING\r\n").is_ok() {
                    // PONG, or NOAUTH when a password is required: it serves.
                    let mut buf = [0u8; 7];
                    if s.read_exact(&mut buf).is_ok()
                        && (&buf == b"+PONG\r\n" || &buf == b"-NOAUTH")
                    {
                        return true;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A synchronous `redis` crate connection.
    pub fn client(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .expect("connect")
    }

    /// A raw socket with a read timeout.
    pub fn raw(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// Fields of `INFO <section>` as (name, value) pairs.
    pub fn info(
        &self,
        con: &mut redis::Connection,
        section: &str,
    ) -> std::collections::HashMap<String, String> {
        let text: String = redis::cmd("INFO").arg(section).query(con).unwrap();
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.trim().to_string()))
            .collect()
    }

    pub fn info_u64(&self, con: &mut redis::Connection, section: &str, field: &str) -> u64 {
        self.info(con, section)
            .get(field)
            .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
            .parse()
            .unwrap()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server with the defaults most command tests use (16 MB of RAM).
pub fn start() -> Server {
    Server::start(&["--maxmemory-ram", "16mb"])
}

/// Runs a command given as space-separated words through the `redis` crate.
pub fn q<T: redis::FromRedisValue>(con: &mut redis::Connection, words: &str) -> T {
    let mut c = redis::cmd(words.split(' ').next().unwrap());
    for a in words.split(' ').skip(1) {
        c.arg(a);
    }
    c.query(con).unwrap_or_else(|e| panic!("{words}: {e}"))
}

/// Spawns `strata-server` on `dir` and a free port with the test defaults
/// and `args`.
fn spawn_child(dir: &std::path::Path, args: &[String]) -> (u16, u16, Child) {
    let port = free_port();
    // A password or ACL users refuse the memcached port (it has no
    // authentication) unless a test allows it: such servers start
    // without one.
    let has = |name: &str| args.iter().any(|a| a == name);
    let mc_port =
        if (has("--requirepass") || has("--user")) && !has("--memcached-allow-unauthenticated") {
            0
        } else {
            free_port()
        };
    let child = Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", &port.to_string()])
        .args(["--memcached-port", &mc_port.to_string()])
        .args(["--dir", dir.to_str().unwrap()])
        .args(["--threads", "2"])
        // Connections on both loops, round robin (the cross-loop paths:
        // wake-ups, kills, messages); `tests/loops.rs` covers `auto`.
        .args(["--loop-scaling", "off"])
        .args(["--loglevel", "warning"])
        // Tests look inside with DEBUG (TIER, OBJECT ...).
        .args(["--enable-debug-command", "yes"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn strata-server");
    (port, mc_port, child)
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends raw bytes and reads until `expect` bytes arrived or the timeout.
pub fn roundtrip(s: &mut TcpStream, send: &[u8], expect_len: usize) -> Vec<u8> {
    s.write_all(send).unwrap();
    read_n(s, expect_len)
}

/// Reads until `n` bytes arrived, the peer closed, or the read timed out.
pub fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while out.len() < n {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => out.extend_from_slice(&buf[..k]),
        }
    }
    out
}

/// Waits (polling, bounded) until `cond` holds.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A value whose bytes derive from the key and a generation number.
pub fn value_for(key: &str, gen: u32, len: usize) -> Vec<u8> {
    let mut x: u64 = 0xcbf2_9ce4_8422_2325 ^ gen as u64;
    for b in key.bytes() {
        x = (x ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

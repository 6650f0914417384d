//! The two servers and the comparison rules of the differential test.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use strata_protocol::{parse_frame, Frame, Limits, Parsed};

/// What a key holds (from TYPE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Str,
    Hash,
    List,
    Set,
    ZSet,
    Stream,
    None,
}

/// The type of `key` on the server of `c`.
pub fn kind(c: &mut Conn, key: &[u8]) -> Kind {
    match bulk(&c.cmd(&[b"TYPE", key]).frame).as_deref() {
        Some(b"string") => Kind::Str,
        Some(b"hash") => Kind::Hash,
        Some(b"list") => Kind::List,
        Some(b"set") => Kind::Set,
        Some(b"zset") => Kind::ZSet,
        Some(b"stream") => Kind::Stream,
        _ => Kind::None,
    }
}

/// A redis-server 7.0 started for the test on a free loopback port, with
/// no persistence, killed on drop.
pub struct RedisServer {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// With DEBUG enabled (`compare_key` asks for DEBUG DIGEST-VALUE).
    pub fn start() -> RedisServer {
        Self::start_with(&["--enable-debug-command", "yes"])
    }

    /// With Redis's defaults but for `args`.
    pub fn start_with(args: &[&str]) -> RedisServer {
        let find = || {
            ["redis-server", "/usr/bin/redis-server"]
                .into_iter()
                .find(|b| Command::new(b).arg("--version").output().is_ok())
        };
        if find().is_none() {
            install_redis();
        }
        let bin = find().expect(
            "redis-server (7.0, Debian's package) is the reference of this test; \
             install it: apt-get install redis-server (.ci/run does)",
        );
        let out = Command::new(bin).arg("--version").output().unwrap();
        let version = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            version.contains("v=7.0."),
            "the reference is Redis 7.0, found {version}"
        );
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let port = super::common::free_port();
            let child = Command::new(bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .args(args)
                .args(["--dir", dir.path().to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let mut srv = RedisServer {
                port,
                child,
                _dir: dir,
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
                    let _ = s.write_all(b"PING\r\n");
                    let mut b = [0u8; 7];
                    // PONG, or NOAUTH when started with a password: it serves.
                    if s.read_exact(&mut b).is_ok() && (&b == b"+PONG\r\n" || &b == b"-NOAUTH") {
                        return srv;
                    }
                }
                if !matches!(srv.child.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = srv.child.kill();
            let _ = srv.child.wait();
        }
        panic!("redis-server did not start");
    }
}

/// Installs Debian's redis-server when the test runs as root on a machine
/// without it, so the README's test command works on a fresh machine.
fn install_redis() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0"));
    if !root {
        return;
    }
    eprintln!("redis_diff: installing redis-server (apt-get)");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !apt(&["install", "-y", "-qq", "redis-server"]) {
        apt(&["update", "-qq"]);
        apt(&["install", "-y", "-qq", "redis-server"]);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One reply: its exact bytes and its parsed frame.
pub struct Reply {
    pub bytes: Vec<u8>,
    pub frame: Frame,
}

pub struct Conn {
    pub s: TcpStream,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl Conn {
    pub fn connect(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            s,
            buf: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Queues a command (sent at the next `reply`).
    pub fn send(&mut self, args: &[Vec<u8>]) {
        self.out
            .extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            self.out
                .extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            self.out.extend_from_slice(a);
            self.out.extend_from_slice(b"\r\n");
        }
    }

    /// Sends what `send` queued, without waiting for replies.
    #[allow(dead_code)]
    pub fn flush(&mut self) {
        if !self.out.is_empty() {
            self.s.write_all(&self.out).unwrap();
            self.out.clear();
        }
    }

    pub fn reply(&mut self) -> Reply {
        if !self.out.is_empty() {
            self.s.write_all(&self.out).unwrap();
            self.out.clear();
        }
        let limits = Limits::default();
        loop {
            if let Parsed::Complete { value, consumed } =
                parse_frame(&self.buf, &limits).expect("valid RESP")
            {
                let bytes = self.buf.drain(..consumed).collect();
                return Reply {
                    bytes,
                    frame: value,
                };
            }
            let mut tmp = [0u8; 65536];
            match self.s.read(&mut tmp) {
                Ok(0) => panic!("connection closed"),
                Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    pub fn cmd(&mut self, args: &[&[u8]]) -> Reply {
        let v: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        self.send(&v);
        self.reply()
    }
}

/// A frame as comparable text.
pub fn text(f: &Frame) -> String {
    format!("{f:?}")
}

/// The elements of an array-like reply (arrays, sets), as text, sorted.
pub fn sorted_elements(f: &Frame) -> Option<Vec<String>> {
    let mut v: Vec<String> = match f {
        Frame::Array(a) | Frame::Set(a) => a.iter().map(text).collect(),
        _ => return None,
    };
    v.sort();
    Some(v)
}

/// Field/value (or member/score) pairs of a flat array or a map, sorted.
pub fn sorted_pairs(f: &Frame) -> Option<Vec<(String, String)>> {
    let mut v: Vec<(String, String)> = match f {
        Frame::Array(a)
            if a.iter()
                .all(|x| matches!(x, Frame::Array(p) if p.len() == 2))
                && !a.is_empty() =>
        {
            a.iter()
                .filter_map(|x| match x {
                    Frame::Array(p) => Some((text(&p[0]), text(&p[1]))),
                    _ => None,
                })
                .collect()
        }
        Frame::Array(a) => a
            .chunks(2)
            .map(|c| (text(&c[0]), c.get(1).map(text).unwrap_or_default()))
            .collect(),
        Frame::Map(m) => m.iter().map(|(k, v)| (text(k), text(v))).collect(),
        _ => return None,
    };
    v.sort();
    Some(v)
}

fn bulk(f: &Frame) -> Option<Vec<u8>> {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => Some(b.to_vec()),
        _ => None,
    }
}

fn list_of(f: &Frame) -> Vec<Vec<u8>> {
    match f {
        Frame::Array(a) | Frame::Set(a) => a.iter().filter_map(bulk).collect(),
        _ => Vec::new(),
    }
}

/// Strata's state of `key` written to both servers (after a random
/// command made them differ legitimately).
pub fn resync(r: &mut Conn, s: &mut Conn, key: &[u8]) {
    let mut cmd: Vec<Vec<u8>> = Vec::new();
    match kind(s, key) {
        Kind::Set => {
            cmd.push(b"SADD".to_vec());
            cmd.push(key.to_vec());
            cmd.extend(list_of(&s.cmd(&[b"SMEMBERS", key]).frame));
        }
        Kind::Hash => {
            cmd.push(b"HSET".to_vec());
            cmd.push(key.to_vec());
            cmd.extend(list_of(&s.cmd(&[b"HGETALL", key]).frame));
        }
        Kind::ZSet => {
            cmd.push(b"ZADD".to_vec());
            cmd.push(key.to_vec());
            let flat = list_of(&s.cmd(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]).frame);
            for c in flat.chunks(2) {
                if let [m, sc] = c {
                    cmd.push(sc.clone());
                    cmd.push(m.clone());
                }
            }
        }
        Kind::List => {
            cmd.push(b"RPUSH".to_vec());
            cmd.push(key.to_vec());
            cmd.extend(list_of(&s.cmd(&[b"LRANGE", key, b"0", b"-1"]).frame));
        }
        // Random picks never touch streams.
        Kind::Str | Kind::Stream => return,
        Kind::None => {}
    }
    for c in [&mut *r, &mut *s] {
        c.cmd(&[b"DEL", key]);
        if cmd.len() > 2 {
            c.send(&cmd);
            c.reply();
        }
    }
}

/// Runs the SCAN-family command `args` to the end on both servers and
/// compares what each returned, as sets.
pub fn compare_full_scan(r: &mut Conn, s: &mut Conn, args: &[Vec<u8>]) -> Result<(), String> {
    let keyspace = args[0].eq_ignore_ascii_case(b"SCAN");
    let pairs = !keyspace && !args[0].eq_ignore_ascii_case(b"SSCAN");
    let at = if keyspace { 1 } else { 2 };
    let mut all = Vec::new();
    for c in [r, s] {
        let mut seen = std::collections::BTreeSet::new();
        let mut cursor = b"0".to_vec();
        for _ in 0..100_000 {
            let mut a = args.to_vec();
            a[at] = cursor.clone();
            c.send(&a);
            let rep = c.reply();
            let Frame::Array(parts) = &rep.frame else {
                seen.insert(text(&rep.frame));
                break;
            };
            let (Some(next), Some(items)) = (parts.first().and_then(bulk), parts.get(1)) else {
                return Err(format!("malformed scan reply {:?}", rep.frame));
            };
            let items = list_of(items);
            let show = |b: &[u8]| {
                let t = String::from_utf8_lossy(b);
                if t.len() > 24 {
                    format!(
                        "{}…({}B)",
                        &t[..t.char_indices().nth(16).map_or(0, |c| c.0)],
                        b.len()
                    )
                } else {
                    t.into_owned()
                }
            };
            if pairs {
                for p in items.chunks(2) {
                    let v = p.get(1).map(|x| show(x)).unwrap_or_default();
                    seen.insert(format!("{}={}", show(&p[0]), v));
                }
            } else {
                for i in items {
                    seen.insert(show(&i));
                }
            }
            cursor = next;
            if cursor == b"0" {
                break;
            }
        }
        all.push(seen);
    }
    if all[0] != all[1] {
        return Err(format!(
            "redis returned {:?}\nstrata returned {:?}",
            all[0], all[1]
        ));
    }
    Ok(())
}

/// RESTOREs each server's DUMP of `key` into the other (as a scratch key)
/// and compares the restored values.
pub fn cross_restore(r: &mut Conn, s: &mut Conn, key: &[u8]) -> Result<(), String> {
    let scratch: &[u8] = b"diff:restored";
    let pr = bulk(&r.cmd(&[b"DUMP", key]).frame);
    let ps = bulk(&s.cmd(&[b"DUMP", key]).frame);
    let (Some(pr), Some(ps)) = (pr, ps) else {
        return Ok(());
    };
    let a = s.cmd(&[b"RESTORE", scratch, b"0", &pr, b"REPLACE"]);
    let b = r.cmd(&[b"RESTORE", scratch, b"0", &ps, b"REPLACE"]);
    if a.bytes != b"+OK\r\n" || b.bytes != b"+OK\r\n" {
        return Err(format!(
            "RESTORE of redis's payload into strata: {:?}; of strata's into redis: {:?}\nredis's payload: {:02x?}",
            String::from_utf8_lossy(&a.bytes),
            String::from_utf8_lossy(&b.bytes),
            pr
        ));
    }
    let same = compare_key(r, s, scratch);
    r.cmd(&[b"DEL", scratch]);
    s.cmd(&[b"DEL", scratch]);
    same
}

/// Sets the integer after each field named in `names` to 0, at any depth
/// (RESP2 maps are flat arrays of name, value).
fn mask_fields(f: &mut Frame, names: &[&str]) {
    match f {
        Frame::Array(xs) => {
            for i in 0..xs.len() {
                let hit = matches!(&xs[i], Frame::Bulk(n) if names.iter().any(|m| n[..] == *m.as_bytes()));
                if hit && i + 1 < xs.len() && matches!(xs[i + 1], Frame::Integer(_)) {
                    xs[i + 1] = Frame::Integer(0);
                }
            }
            for x in xs {
                mask_fields(x, names);
            }
        }
        Frame::Map(kv) => {
            for (k, v) in kv {
                if matches!(k, Frame::Bulk(n) if names.iter().any(|m| n[..] == *m.as_bytes())) {
                    *v = Frame::Integer(0);
                }
                mask_fields(v, names);
            }
        }
        _ => {}
    }
}

/// Masks the delivery times of pending lists: the third element of
/// `[id, consumer, time, count]` entries and the second of `[id, time,
/// count]` ones (XPENDING's extended form, XINFO STREAM FULL).
fn mask_pending(f: &mut Frame) {
    if let Frame::Array(xs) = f {
        let is_id = |x: &Frame| matches!(x, Frame::Bulk(b) if b.contains(&b'-'));
        match xs.len() {
            4 if is_id(&xs[0]) && matches!(xs[2], Frame::Integer(_)) => xs[2] = Frame::Integer(0),
            3 if is_id(&xs[0])
                && matches!(xs[1], Frame::Integer(_))
                && matches!(xs[2], Frame::Integer(_)) =>
            {
                xs[1] = Frame::Integer(0)
            }
            _ => {}
        }
        for x in xs {
            mask_pending(x);
        }
    }
}

/// Blanks what depends on the clock in a stream reply: idle times,
/// seen times and delivery times (and `radix-tree-nodes`, Redis's rax
/// internals).
pub fn mask_clock(f: &mut Frame) {
    mask_fields(f, &["idle", "seen-time", "radix-tree-nodes"]);
    mask_pending(f);
}

/// Compares the whole value, type and encoding of `key`.
pub fn compare_key(r: &mut Conn, s: &mut Conn, key: &[u8]) -> Result<(), String> {
    let mut cmds: Vec<Vec<&[u8]>> = vec![
        vec![b"TYPE", key],
        vec![b"OBJECT", b"ENCODING", key],
        // Shared integers (0..9999) read INT_MAX.
        vec![b"OBJECT", b"REFCOUNT", key],
        // Redis's SHA1 digest of the whole value (and whether it has a TTL).
        vec![b"DEBUG", b"DIGEST-VALUE", key],
    ];
    match kind(r, key) {
        Kind::None => {}
        Kind::Hash => cmds.push(vec![b"HGETALL", key]),
        Kind::Set => cmds.push(vec![b"SMEMBERS", key]),
        Kind::List => cmds.push(vec![b"LRANGE", key, b"0", b"-1"]),
        Kind::ZSet => cmds.push(vec![b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]),
        Kind::Str => cmds.push(vec![b"GET", key]),
        Kind::Stream => {
            cmds.push(vec![b"XRANGE", key, b"-", b"+"]);
            cmds.push(vec![b"XREVRANGE", key, b"+", b"-"]);
            cmds.push(vec![b"XINFO", b"GROUPS", key]);
            cmds.push(vec![b"XINFO", b"STREAM", key, b"FULL", b"COUNT", b"0"]);
        }
    }
    for c in cmds {
        let (a, b) = (r.cmd(&c), s.cmd(&c));
        let same = match (c[0], kind) {
            (b"XINFO", _) if c.len() > 3 => {
                let (mut x, mut y) = (a.frame.clone(), b.frame.clone());
                mask_clock(&mut x);
                mask_clock(&mut y);
                x == y
            }
            (b"HGETALL", _) => sorted_pairs(&a.frame) == sorted_pairs(&b.frame),
            (b"SMEMBERS", _) => sorted_elements(&a.frame) == sorted_elements(&b.frame),
            _ => a.bytes == b.bytes,
        };
        if !same {
            return Err(format!(
                "{}: redis {:?} strata {:?}",
                String::from_utf8_lossy(c[0]),
                String::from_utf8_lossy(&a.bytes),
                String::from_utf8_lossy(&b.bytes)
            ));
        }
    }
    Ok(())
}

/// `INFO <section>` fields of a server.
pub fn info(c: &mut Conn, section: &str) -> HashMap<String, String> {
    let rep = c.cmd(&[b"INFO", section.as_bytes()]);
    let text = bulk(&rep.frame).unwrap_or_default();
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

//! The Memcached listener against the real binary: raw-socket tests of every
//! text command, flag and error case with memcached's exact replies, the
//! meta commands (with explicit CAS, stale items and refill rights), the
//! binary-protocol refusal, stats, a value read from
//! flash through `get` and `mg`, both protocols on one keyspace, and a real
//! memcached client library (the `memcache` crate, text protocol).

mod common;

use common::Server;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A raw memcached connection.
struct Mc {
    s: TcpStream,
}

impl Mc {
    fn new(srv: &Server) -> Mc {
        let s = TcpStream::connect(("127.0.0.1", srv.mc_port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Mc { s }
    }

    fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    /// Reads exactly `want.len()` bytes and compares.
    fn expect(&mut self, want: &str) {
        let mut got = vec![0u8; want.len()];
        let mut n = 0;
        while n < got.len() {
            match self.s.read(&mut got[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => panic!("read: {e}; so far {:?}", String::from_utf8_lossy(&got[..n])),
            }
        }
        assert_eq!(String::from_utf8_lossy(&got[..n]), want);
    }

    /// Sends `req` and expects exactly `want`.
    fn rt(&mut self, req: &str, want: &str) {
        self.send(req.as_bytes());
        self.expect(want);
    }

    /// Reads one line.
    fn line(&mut self) -> String {
        let mut out = Vec::new();
        let mut b = [0u8];
        while !out.ends_with(b"\r\n") {
            match self.s.read(&mut b) {
                Ok(1) => out.push(b[0]),
                _ => break,
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Reads one stats group up to END; every line must be `STAT name value`.
    fn stats_group(&mut self) -> HashMap<String, String> {
        let mut g = HashMap::new();
        loop {
            let l = self.line();
            if l == "END\r\n" {
                return g;
            }
            let t: Vec<&str> = l.trim_end().split(' ').collect();
            assert!(t.len() == 3 && t[0] == "STAT", "malformed stats line {l:?}");
            g.insert(t[1].to_string(), t[2].to_string());
        }
    }

    fn closed(&mut self) -> bool {
        let mut b = [0u8; 64];
        matches!(self.s.read(&mut b), Ok(0))
    }
}

fn srv() -> Server {
    Server::start(&[])
}

#[test]
fn storage_and_retrieval_commands_reply_like_memcached() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    m.rt("set k 5 0 3\r\nabc\r\n", "STORED\r\n");
    m.rt("get k\r\n", "VALUE k 5 3\r\nabc\r\nEND\r\n");
    m.rt("get nope k nope\r\n", "VALUE k 5 3\r\nabc\r\nEND\r\n");
    m.rt("add k 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    m.rt("add n 0 0 1\r\n7\r\n", "STORED\r\n");
    m.rt("replace missing 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    m.rt("replace k 9 0 3\r\nxyz\r\n", "STORED\r\n");
    m.rt("append k 0 0 2\r\n12\r\n", "STORED\r\n");
    m.rt("prepend k 0 0 2\r\n00\r\n", "STORED\r\n");
    m.rt("append missing 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    // append/prepend keep the item's flags.
    m.rt("get k\r\n", "VALUE k 9 7\r\n00xyz12\r\nEND\r\n");
    // gets returns the CAS; cas with it stores, with a stale one EXISTS.
    m.send(b"gets k\r\n");
    let head = m.line();
    let cas: u64 = head.trim_end().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(head.starts_with("VALUE k 9 7 "), "{head}");
    m.expect("00xyz12\r\nEND\r\n");
    m.rt(&format!("cas k 1 0 1 {cas}\r\nA\r\n"), "STORED\r\n");
    m.rt(&format!("cas k 1 0 1 {cas}\r\nB\r\n"), "EXISTS\r\n");
    m.rt("cas missing 1 0 1 5\r\nB\r\n", "NOT_FOUND\r\n");
    m.rt("get k\r\n", "VALUE k 1 1\r\nA\r\nEND\r\n");
    // incr / decr: wrap at 2^64, stop at 0, refuse non-numbers.
    m.rt("incr n 5\r\n", "12\r\n");
    m.rt("decr n 100\r\n", "0\r\n");
    m.rt("set big 0 0 20\r\n18446744073709551615\r\n", "STORED\r\n");
    m.rt("incr big 2\r\n", "1\r\n");
    m.rt(
        "incr k 1\r\n",
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
    );
    m.rt("incr missing 1\r\n", "NOT_FOUND\r\n");
    m.rt(
        "incr n abc\r\n",
        "CLIENT_ERROR invalid numeric delta argument\r\n",
    );
    // delete, touch
    m.rt("delete k\r\n", "DELETED\r\n");
    m.rt("delete k\r\n", "NOT_FOUND\r\n");
    m.rt("delete n 0\r\n", "DELETED\r\n");
    m.rt(
        "delete n 10\r\n",
        "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
    );
    m.rt("set t 0 0 1\r\nx\r\n", "STORED\r\n");
    m.rt("touch t 100\r\n", "TOUCHED\r\n");
    m.rt("touch missing 100\r\n", "NOT_FOUND\r\n");
    // gat / gats touch and return.
    m.rt("gat 0 t\r\n", "VALUE t 0 1\r\nx\r\nEND\r\n");
    m.send(b"gats 100 t\r\n");
    assert!(m.line().starts_with("VALUE t 0 1 "));
    m.expect("x\r\nEND\r\n");
    // version, verbosity, unknown commands, empty lines.
    m.send(b"version\r\n");
    assert!(m.line().starts_with("VERSION 1.6."));
    m.rt("verbosity 1\r\n", "OK\r\n");
    m.rt("verbosity 1 noreply\r\nversion\r\n", "");
    assert!(m.line().starts_with("VERSION"));
    m.rt("bogus\r\n", "ERROR\r\n");
    m.rt("GET t\r\n", "ERROR\r\n");
    m.rt("get\r\n", "ERROR\r\n");
    m.rt("quit\r\n", "");
    assert!(m.closed());
}

#[test]
fn noreply_everywhere_memcached_allows_it() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    m.send(
        b"set a 0 0 1 noreply\r\n1\r\nadd a 0 0 1 noreply\r\n2\r\nreplace a 0 0 1 noreply\r\n3\r\n\
          append a 0 0 1 noreply\r\n4\r\nprepend a 0 0 1 noreply\r\n5\r\nincr a 1 noreply\r\n\
          touch a 100 noreply\r\nset d 0 0 1 noreply\r\nx\r\ndelete d noreply\r\nget a d\r\n",
    );
    m.expect("VALUE a 0 3\r\n535\r\nEND\r\n");
    m.rt("flush_all noreply\r\nget a\r\n", "END\r\n");
}

#[test]
fn bad_input_gets_memcached_errors_and_the_connection_stays_in_sync() {
    let mut srv = srv();
    let mut m = Mc::new(&srv);
    let long = "k".repeat(251);
    m.rt(
        &format!("get {long}\r\n"),
        "CLIENT_ERROR bad command line format\r\n",
    );
    // Unlike memcached 1.6, a refused command line whose length reads has
    // its data block swallowed: a data block is never run as commands.
    m.rt(
        &format!("set {long} 0 0 9\r\nflush_all\r\nget k\r\n"),
        "CLIENT_ERROR bad command line format\r\nEND\r\n",
    );
    // A data block not ended by \r\n: its declared length plus 2 bytes go.
    m.rt(
        "set k 0 0 3\r\nabcde\r\n",
        "CLIENT_ERROR bad data chunk\r\nERROR\r\n",
    );
    m.rt(
        "set k abc 0 1\r\nx\r\n",
        "CLIENT_ERROR bad command line format\r\n",
    );
    m.rt(
        "touch k soon\r\n",
        "CLIENT_ERROR invalid exptime argument\r\n",
    );
    // A value over memcached-max-item-size (1mb) is refused and swallowed.
    let big = vec![b'z'; 1_200_000];
    m.send(format!("set big 0 0 {}\r\n", big.len()).as_bytes());
    m.send(&big);
    m.send(b"\r\nset ok 0 0 2\r\nhi\r\nget big ok\r\n");
    m.expect("SERVER_ERROR object too large for cache\r\nSTORED\r\nVALUE ok 0 2\r\nhi\r\nEND\r\n");
    // A length that does not read: the reply, then the connection closes
    // (what follows may be a block of unknown size).
    m.rt(
        "set k 0 0 -1\r\n",
        "CLIENT_ERROR bad command line format\r\n",
    );
    assert!(m.closed());
    assert!(srv.alive());
}

#[test]
fn the_binary_protocol_is_refused_on_its_first_byte() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    // A binary GET request header.
    m.send(&[
        0x80, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'k',
    ]);
    let l = m.line();
    assert!(
        l.starts_with("CLIENT_ERROR") && l.contains("binary protocol"),
        "{l}"
    );
    assert!(m.closed());
}

#[test]
fn exptime_follows_memcached_rules() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    let mut con = srv.client();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    m.rt("set rel 0 100 1\r\nx\r\n", "STORED\r\n");
    let ttl: i64 = redis::cmd("TTL").arg("rel").query(&mut con).unwrap();
    assert!((98..=100).contains(&ttl), "{ttl}");
    // Beyond 30 days: an absolute Unix time.
    m.rt(
        &format!("set abs 0 {} 1\r\nx\r\n", now + 1000),
        "STORED\r\n",
    );
    let ttl: i64 = redis::cmd("TTL").arg("abs").query(&mut con).unwrap();
    assert!((995..=1001).contains(&ttl), "{ttl}");
    // Negative: expired at once.
    m.rt("set neg 0 -1 1\r\nx\r\n", "STORED\r\n");
    m.rt("get neg\r\n", "END\r\n");
    m.rt("set gone 0 1 1\r\nx\r\n", "STORED\r\n");
    std::thread::sleep(Duration::from_millis(2100));
    m.rt("get gone\r\n", "END\r\n");
}

#[test]
fn meta_commands_with_their_flags() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    m.rt("ms foo 3 T100 F42\r\nbar\r\n", "HD\r\n");
    m.rt("mg foo v f\r\n", "VA 3 f42\r\nbar\r\n");
    m.rt("mg foo s k Oxyz\r\n", "HD s3 kfoo Oxyz\r\n");
    m.send(b"mg foo t c\r\n");
    let l = m.line();
    assert!(l.starts_with("HD t") && l.contains(" c"), "{l}");
    m.rt("mg missing v\r\n", "EN\r\n");
    // Quiet mode: misses and successes say nothing; mn ends the pipeline.
    m.rt("mg missing v q\r\nms q1 1 q\r\nx\r\nmn\r\n", "MN\r\n");
    m.rt("mg q1 v q\r\nmn\r\n", "VA 1\r\nx\r\nMN\r\n");
    // Base64 keys.
    m.rt("ms Zm9v 3 b\r\nbaz\r\n", "HD\r\n");
    m.rt("mg foo v\r\n", "VA 3\r\nbaz\r\n");
    m.rt("mg Zm9v b k v\r\n", "VA 3 kZm9v b\r\nbaz\r\n");
    // ms modes: E (add), R (replace), A (append), P (prepend), and CAS.
    m.rt("ms foo 1 ME\r\nx\r\n", "NS\r\n");
    m.rt("ms newkey 1 MR\r\nx\r\n", "NS\r\n");
    m.rt("ms foo 1 MA\r\n!\r\n", "HD\r\n");
    m.rt("ms foo 1 MP\r\n<\r\n", "HD\r\n");
    m.rt("mg foo v\r\n", "VA 5\r\n<baz!\r\n");
    m.send(b"mg foo c\r\n");
    let cas: u64 = m
        .line()
        .trim_end()
        .trim_start_matches("HD c")
        .parse()
        .unwrap();
    m.rt(&format!("ms foo 1 C{}\r\nz\r\n", cas + 1), "EX\r\n");
    m.rt(&format!("ms foo 1 C{cas}\r\nz\r\n"), "HD\r\n");
    // md, with CAS and quiet.
    m.rt("md foo C1\r\n", "EX\r\n");
    m.rt("md foo q\r\nmn\r\n", "MN\r\n");
    m.rt("md foo\r\n", "NF\r\n");
    // ma: increment, decrement (MD), delta, auto-create with N/J.
    m.rt("ma cnt\r\n", "NF\r\n");
    m.rt("ma cnt N0 J10 v\r\n", "VA 2\r\n10\r\n");
    m.rt("ma cnt D5 v\r\n", "VA 2\r\n15\r\n");
    m.rt("ma cnt MD D20 v\r\n", "VA 1\r\n0\r\n");
    m.rt("ma cnt\r\n", "HD\r\n");
    // mg with T touches; N vivifies a miss (W: this client won).
    // As memcached: a shorter result keeps the length, padded with spaces.
    m.rt("mg cnt T500 v\r\n", "VA 2\r\n1 \r\n");
    m.rt("mg viv N30 v\r\n", "VA 0 W\r\n\r\n");
    m.rt("mg viv v\r\n", "VA 0 Z\r\n\r\n");
    // me: debug info; mn: no-op.
    m.rt("me missing\r\n", "EN\r\n");
    m.send(b"me cnt\r\n");
    assert!(m.line().starts_with("ME cnt exp="));
    m.rt("mn\r\n", "MN\r\n");
    m.rt("mg foo 9\r\n", "CLIENT_ERROR invalid flag\r\n");
}

#[test]
fn meta_explicit_cas_stale_items_and_refill_rights() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    // E: the client chooses the CAS, on ms, ma and mg's auto-vivify.
    m.rt("ms a 2 E100 c\r\nhi\r\n", "HD c100\r\n");
    m.rt("gets a\r\n", "VALUE a 0 2 100\r\nhi\r\nEND\r\n");
    m.rt("ms a 2 C99 c\r\nho\r\n", "EX c0\r\n");
    m.rt("ms a 2 C100 E50 c\r\nho\r\n", "HD c50\r\n");
    m.rt("cas a 0 0 2 50\r\nhe\r\n", "STORED\r\n");
    m.rt("ma n N0 J5 E77 c v\r\n", "VA 1 c77\r\n5\r\n");
    m.rt(
        "ma n E18446744073709551615 c v\r\n",
        "VA 1 c18446744073709551615\r\n6\r\n",
    );
    m.rt("mg n c\r\n", "HD c18446744073709551615\r\n");
    m.rt("mg x N30 E99 c v\r\n", "VA 0 c99 W\r\n\r\n");
    m.rt("mg x c v\r\n", "VA 0 c99 Z\r\n\r\n");
    m.rt(
        "ms a 2 E-5\r\nhh\r\n",
        "CLIENT_ERROR bad command line format\r\n",
    );
    m.rt("md a Eabc\r\n", "CLIENT_ERROR bad command line format\r\n");
    // I on md: the item stays, stale, with a new CAS (E200 here) and TTL;
    // the first mg wins the refill right (W), later ones see Z; X = stale.
    m.rt("ms s 3\r\nold\r\n", "HD\r\n");
    m.rt("md s I E200 T30\r\n", "HD\r\n");
    // (The TTL left is 30 or 29 s, depending on the clock.)
    let ttl_is_30 = |l: String, before: &str, after: &str| {
        assert!(
            [30, 29]
                .iter()
                .any(|t| l == format!("{before} t{t} {after}\r\n")),
            "{l}"
        )
    };
    m.send(b"mg s c v t\r\n");
    ttl_is_30(m.line(), "VA 3 c200", "X W");
    m.expect("old\r\n");
    m.send(b"mg s c v t\r\n");
    ttl_is_30(m.line(), "VA 3 c200", "Z X");
    m.expect("old\r\n");
    // Text get serves it as it is.
    m.rt("get s\r\n", "VALUE s 0 3\r\nold\r\nEND\r\n");
    // ms I with an older CAS stores a stale value (keeping TTL and the
    // refill right); with the current CAS it stores a fresh one.
    m.rt("ms s 4 C150 I E201 c\r\nolds\r\n", "HD c201\r\n");
    m.send(b"mg s c v t\r\n");
    ttl_is_30(m.line(), "VA 4 c201", "Z X");
    m.expect("olds\r\n");
    m.rt("ms s 3 C300 I\r\nbad\r\n", "EX\r\n");
    m.rt("ms s 3 C201 I E202 c\r\nnew\r\n", "HD c202\r\n");
    m.rt("mg s c v t\r\n", "VA 3 c202 t-1\r\nnew\r\n");
    // md I without E gives a CAS of the server's own; C must match.
    m.rt("md s C1 I\r\n", "EX\r\n");
    m.rt("md s I q\r\nmn\r\n", "MN\r\n");
    m.send(b"mg s c\r\n");
    let l = m.line();
    assert!(
        l.starts_with("HD c") && l.ends_with(" X W\r\n") && !l.contains("c202"),
        "{l}"
    );
    m.rt("md nope I\r\n", "NF\r\n");
    // x: the item stays, empty, keeping its CAS; F and T give its flags and
    // TTL (none when not given); with I it is also stale.
    m.rt("ms x1 2 F9 T100 E70\r\nhi\r\n", "HD\r\n");
    m.rt("md x1 x\r\n", "HD\r\n");
    m.rt("mg x1 v f c t\r\n", "VA 0 f0 c70 t-1\r\n\r\n");
    m.rt("md x1 x F5 T50 E71\r\n", "HD\r\n");
    m.send(b"mg x1 f c t\r\n");
    let l = m.line();
    assert!(l == "HD f5 c71 t50\r\n" || l == "HD f5 c71 t49\r\n", "{l}");
    m.rt("md x1 x I E72\r\n", "HD\r\n");
    m.rt("mg x1 v c\r\n", "VA 0 c72 X W\r\n\r\n");
    m.rt("md nope x\r\n", "NF\r\n");
    // u: a get that leaves the item's access state alone (h stays 0).
    m.rt("ms u1 1\r\nx\r\n", "HD\r\n");
    m.rt("mg u1 u h v\r\n", "VA 1 h0\r\nx\r\n");
    m.rt("mg u1 h\r\n", "HD h0\r\n");
    m.rt("mg u1 h\r\n", "HD h1\r\n");
    // R: a client wins the right to recache an item about to expire.
    m.rt("ms r 1 T10\r\nx\r\n", "HD\r\n");
    m.rt("mg r R30 v\r\n", "VA 1 W\r\nx\r\n");
    m.rt("mg r R30 v\r\n", "VA 1 Z\r\nx\r\n");
    m.rt("ms p 1\r\nx\r\n", "HD\r\n");
    m.rt("mg p R30 v\r\n", "VA 1\r\nx\r\n");
    // ma: C compares, T sets the TTL, t and c report.
    m.rt("ma n C1 v\r\n", "EX\r\n");
    m.send(b"ma n T100 t v\r\n");
    let l = m.line();
    assert!(l == "VA 1 t100\r\n" || l == "VA 1 t99\r\n", "{l}");
    m.expect("7\r\n");
    m.rt("ma nope q\r\nma n q\r\nmn\r\n", "NF\r\nMN\r\n");
}

/// What the Prometheus memcached exporter (and similar tools) send: `stats`,
/// `stats slabs`, `stats items` in a row on one connection, then `stats
/// settings`; each must end with END and every line be `STAT name value`.
#[test]
fn monitoring_tools_get_well_formed_stats_groups() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    m.rt(
        "set a 0 0 1\r\nx\r\nget a\r\n",
        "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n",
    );
    m.send(b"stats\r\nstats slabs\r\nstats items\r\nstats settings\r\n");
    let groups: Vec<_> = (0..4).map(|_| m.stats_group()).collect();
    assert_eq!(groups[0]["get_hits"], "1");
    assert_eq!(groups[1]["active_slabs"], "0");
    assert!(groups[1]["total_malloced"].parse::<u64>().unwrap() > 0);
    assert!(groups[2].is_empty());
    assert!(groups[3].contains_key("maxbytes"));
    m.rt("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n");
    m.rt("stats reset\r\n", "RESET\r\n");
    m.send(b"stats\r\n");
    let after = m.stats_group();
    assert_eq!(after["get_hits"], "0");
    assert_eq!(after["cmd_set"], "0");
    assert_eq!(after["curr_items"], "1");
    assert_eq!(after["curr_connections"], "1");
    m.rt("stats conns\r\n", "ERROR\r\n");
}

/// `lru_crawler metadump` lists every item in memcached's format (what
/// memcached-tool's `dump` and `keys` read), values on flash included.
#[test]
fn metadump_lists_every_item() {
    let srv = Server::start(&["--maxmemory-ram", "4mb"]);
    let mut m = Mc::new(&srv);
    let value = "v".repeat(2048);
    for i in 0..3000 {
        m.send(format!("set k{i} {i} 0 2048 noreply\r\n{value}\r\n").as_bytes());
    }
    m.rt("set odd%key 7 100 2\r\nhi\r\n", "STORED\r\n");
    m.rt("get odd%key\r\n", "VALUE odd%key 7 2\r\nhi\r\nEND\r\n");
    let mut con = srv.client();
    let cold = (0..3000).any(|i| {
        let t: String = redis::cmd("DEBUG")
            .arg("TIER")
            .arg(format!("k{i}"))
            .query(&mut con)
            .unwrap();
        t.starts_with("tier:flash")
    });
    assert!(cold, "no value reached flash");
    // Item lines end with a bare \n (as memcached's), the dump with END\r\n.
    m.send(b"lru_crawler metadump all\r\n");
    let mut dump = Vec::new();
    while !dump.ends_with(b"END\r\n") {
        let mut buf = [0u8; 65536];
        let n = m.s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed mid-dump");
        dump.extend_from_slice(&buf[..n]);
    }
    let dump = String::from_utf8(dump).unwrap();
    let mut seen = std::collections::HashMap::new();
    for l in dump.trim_end_matches("END\r\n").lines() {
        assert!(!l.ends_with('\r'), "{l:?}");
        let f: std::collections::HashMap<&str, &str> =
            l.split(' ').map(|kv| kv.split_once('=').unwrap()).collect();
        assert_eq!(f.len(), 7, "{l:?}");
        assert!(f["la"].parse::<u64>().unwrap() > 1_700_000_000);
        assert!(f["cas"].parse::<u64>().unwrap() > 0);
        assert_eq!(f["cls"], "1");
        seen.insert(
            f["key"].to_string(),
            (
                f["exp"].to_string(),
                f["fetch"].to_string(),
                f["size"].to_string(),
            ),
        );
    }
    assert_eq!(seen.len(), 3001);
    assert_eq!(seen["k42"], ("-1".into(), "no".into(), "2048".into()));
    let (exp, fetch, size) = &seen["odd%25key"];
    assert!(exp.parse::<u64>().unwrap() > 1_700_000_000);
    assert_eq!((fetch.as_str(), size.as_str()), ("yes", "2"));
    m.rt(
        "lru_crawler metadump x\r\n",
        "BADCLASS invalid class id\r\n",
    );
    m.rt("mn\r\n", "MN\r\n");
}

#[test]
fn both_protocols_share_database_0() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    let mut con = srv.client();
    m.rt("set shared 3 0 5\r\nhello\r\n", "STORED\r\n");
    let v: String = redis::cmd("GET").arg("shared").query(&mut con).unwrap();
    assert_eq!(v, "hello");
    // RESP APPEND keeps the memcached flags; RESP SET resets them to 0.
    let _: i64 = redis::cmd("APPEND")
        .arg("shared")
        .arg("!")
        .query(&mut con)
        .unwrap();
    m.rt("get shared\r\n", "VALUE shared 3 6\r\nhello!\r\nEND\r\n");
    // RESP sees the memcached view in DEBUG TIER (flags and CAS, here an
    // explicit one).
    m.rt("ms shared 6 F3 E4242\r\nhello!\r\n", "HD\r\n");
    let t: String = redis::cmd("DEBUG")
        .arg("TIER")
        .arg("shared")
        .query(&mut con)
        .unwrap();
    assert!(t.ends_with(" client_flags:3 cas:4242"), "{t}");
    let _: () = redis::cmd("SET")
        .arg("shared")
        .arg("x")
        .query(&mut con)
        .unwrap();
    m.rt("get shared\r\n", "VALUE shared 0 1\r\nx\r\nEND\r\n");
    // flush_all empties database 0 only.
    let _: () = redis::cmd("SELECT").arg(1).query(&mut con).unwrap();
    let _: () = redis::cmd("SET")
        .arg("other")
        .arg("1")
        .query(&mut con)
        .unwrap();
    m.rt("flush_all\r\n", "OK\r\n");
    let n: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(n, 1);
    let _: () = redis::cmd("SELECT").arg(0).query(&mut con).unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(n, 0);
}

#[test]
fn flush_all_with_a_delay() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    m.rt("set a 0 0 1\r\n1\r\n", "STORED\r\n");
    m.rt("flush_all 1\r\n", "OK\r\n");
    m.rt("get a\r\n", "VALUE a 0 1\r\n1\r\nEND\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        m.send(b"get a\r\n");
        if m.line() == "END\r\n" {
            break;
        }
        m.line();
        m.line();
        assert!(Instant::now() < deadline, "flush_all 1 never flushed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn values_on_flash_are_read_through_get_and_mg() {
    let srv = Server::start(&["--maxmemory-ram", "4mb"]);
    let mut m = Mc::new(&srv);
    let value = |i: usize| format!("{i:08}").repeat(256); // 2 KiB
    for i in 0..8000 {
        m.send(format!("set v{i} {i} 0 2048 noreply\r\n{}\r\n", value(i)).as_bytes());
    }
    m.rt("mn\r\n", "MN\r\n");
    let mut con = srv.client();
    let cold: Vec<usize> = (0..8000)
        .filter(|i| {
            let t: String = redis::cmd("DEBUG")
                .arg("TIER")
                .arg(format!("v{i}"))
                .query(&mut con)
                .unwrap();
            t.contains("tier:flash")
        })
        .take(20)
        .collect();
    assert!(cold.len() == 20, "values did not move to flash");
    let fetches0 = srv.info_u64(&mut con, "tiered", "tiered_total_fetches");
    for &i in &cold[..10] {
        m.rt(
            &format!("get v{i}\r\n"),
            &format!("VALUE v{i} {i} 2048\r\n{}\r\nEND\r\n", value(i)),
        );
    }
    for &i in &cold[10..] {
        m.rt(
            &format!("mg v{i} v f\r\n"),
            &format!("VA 2048 f{i}\r\n{}\r\n", value(i)),
        );
    }
    assert!(srv.info_u64(&mut con, "tiered", "tiered_total_fetches") >= fetches0 + 20);
    // A value on flash invalidated with md I: served stale from flash.
    let c = cold[0];
    m.rt(&format!("md v{c} I E5\r\n"), "HD\r\n");
    m.rt(
        &format!("mg v{c} v c\r\n"),
        &format!("VA 2048 c5 X W\r\n{}\r\n", value(c)),
    );
    // Pipelined cold gets come back in order.
    let mut req = String::new();
    let mut want = String::new();
    for &i in &cold {
        req.push_str(&format!("get v{i}\r\n"));
        want.push_str(&format!("VALUE v{i} {i} 2048\r\n{}\r\nEND\r\n", value(i)));
    }
    m.rt(&req, &want);
    m.send(b"stats\r\n");
    let stats = m.stats_group();
    for f in [
        "pid",
        "uptime",
        "time",
        "version",
        "curr_connections",
        "total_connections",
        "cmd_get",
        "cmd_set",
        "get_hits",
        "get_misses",
        "get_expired",
        "delete_hits",
        "delete_misses",
        "incr_hits",
        "incr_misses",
        "decr_hits",
        "decr_misses",
        "cas_hits",
        "cas_misses",
        "cas_badval",
        "touch_hits",
        "touch_misses",
        "bytes",
        "curr_items",
        "total_items",
        "evictions",
        "limit_maxbytes",
        "threads",
        "rusage_user",
        "rusage_system",
        "extstore_objects_written",
        "extstore_objects_read",
        "get_extstore",
        "ram_hit_ratio",
    ] {
        assert!(stats.contains_key(f), "stats lacks {f}");
    }
    assert_eq!(stats["curr_items"], "8000");
    assert_eq!(stats["cmd_set"], "8000");
    assert!(stats["get_extstore"].parse::<u64>().unwrap() >= 20);
    assert!(stats["get_hits"].parse::<u64>().unwrap() >= 40);
    m.send(b"stats settings\r\n");
    let mut saw = false;
    loop {
        let l = m.line();
        saw |= l.starts_with("STAT item_size_max 1048576");
        if l == "END\r\n" || l.is_empty() {
            break;
        }
    }
    assert!(saw);
}

#[test]
fn flags_and_values_survive_a_restart() {
    let mut srv = srv();
    let mut m = Mc::new(&srv);
    m.rt("set f 4294967295 0 2\r\nhi\r\n", "STORED\r\n");
    m.rt("set z 0 0 2\r\nho\r\n", "STORED\r\n");
    // Meta item state is kept too: an explicit CAS and a stale mark.
    m.rt("ms e 2 E777\r\nhe\r\n", "HD\r\n");
    m.rt("ms s 2 F5\r\nst\r\n", "HD\r\n");
    m.rt("md s I E900\r\n", "HD\r\n");
    drop(m);
    let mut con = srv.client();
    let _: () = redis::cmd("SHUTDOWN").query(&mut con).unwrap_or(());
    srv.wait_exit(Duration::from_secs(10));
    srv.restart();
    let mut m = Mc::new(&srv);
    m.rt(
        "get f z\r\n",
        "VALUE f 4294967295 2\r\nhi\r\nVALUE z 0 2\r\nho\r\nEND\r\n",
    );
    m.rt("mg e c v\r\n", "VA 2 c777\r\nhe\r\n");
    m.rt("mg s c f v\r\n", "VA 2 c900 f5 X W\r\nst\r\n");
}

#[test]
fn a_memcached_client_library_works() {
    let srv = srv();
    let client = memcache::connect(format!(
        "memcache://127.0.0.1:{}?protocol=ascii&timeout=5",
        srv.mc_port
    ))
    .unwrap();
    client.set("lib", "value", 0).unwrap();
    let v: Option<String> = client.get("lib").unwrap();
    assert_eq!(v.as_deref(), Some("value"));
    client.set("n", 10u64, 100).unwrap();
    assert_eq!(client.increment("n", 5).unwrap(), 15);
    assert_eq!(client.decrement("n", 20).unwrap(), 0);
    // add of an existing key stores nothing.
    let _ = client.add("lib", "other", 0);
    client.append("lib", "!").unwrap();
    client.prepend("lib", "<").unwrap();
    let v: Option<String> = client.get("lib").unwrap();
    assert_eq!(v.as_deref(), Some("<value!"));
    assert!(client.touch("lib", 100).unwrap());
    let many: std::collections::HashMap<String, String> = client.gets(&["lib", "missing"]).unwrap();
    assert_eq!(many.len(), 1);
    assert!(client.delete("lib").unwrap());
    assert!(!client.delete("lib").unwrap());
    let version = client.version().unwrap();
    assert!(!version.is_empty());
    client.flush().unwrap();
    let v: Option<String> = client.get("n").unwrap();
    assert_eq!(v, None);
}

#[test]
fn a_get_of_ten_thousand_keys_is_answered_as_memcached_answers_it() {
    let srv = srv();
    let mut m = Mc::new(&srv);
    for i in 0..10 {
        m.rt(&format!("set hit{i} 0 0 1\r\n{i}\r\n"), "STORED\r\n");
    }
    // 10,000 keys of up to 250 bytes: a line of ~2.5 MB.
    let mut line = String::from("get");
    for i in 0..10_000 {
        if i % 1000 == 0 {
            line.push_str(&format!(" hit{}", i / 1000));
        } else {
            line.push_str(&format!(" {i:0>250}"));
        }
    }
    line.push_str("\r\n");
    assert!(line.len() > 2_000_000);
    m.send(line.as_bytes());
    let mut want = String::new();
    for i in 0..10 {
        want.push_str(&format!("VALUE hit{i} 0 1\r\n{i}\r\n"));
    }
    want.push_str("END\r\n");
    m.expect(&want);
    m.rt("get hit0\r\n", "VALUE hit0 0 1\r\n0\r\nEND\r\n");
}

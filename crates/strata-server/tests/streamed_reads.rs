//! Whole reads of chunked collections larger than the RAM budget stream:
//! HGETALL, SMEMBERS, LRANGE and ZRANGE of many elements build their reply
//! a batch of parts at a time, so the server never holds the reply and
//! every part at once (docs/collections.md, invariant 8).

mod common;

use common::*;

const N: usize = 200_000;

fn value(i: usize) -> String {
    format!("{i:0>150}")
}

/// A server with a RAM budget of 8 MB holding `fill`'s ~32 MB collection,
/// settled (its parts on flash). (At 4 MB, a fill under CI's load was
/// once refused with OOM: 4.24 MB of RAM that demotion could not move,
/// 1.5 KB of it index and none of it hot parts. What held it was not
/// measured; the server's own buffers (the collector's 1 MiB slice, the
/// writers' chunks, the connections') are what is left.)
fn server(fill: impl Fn(&mut redis::Pipeline, &[usize])) -> (Server, redis::Connection) {
    server_with("8mb", fill)
}

/// As `server`, with a RAM budget of `budget`.
fn server_with(
    budget: &str,
    fill: impl Fn(&mut redis::Pipeline, &[usize]),
) -> (Server, redis::Connection) {
    let srv = Server::start(&["--maxmemory-ram", budget, "--flash-segment-size", "1mb"]);
    let mut con = srv.client();
    for chunk in (0..N).collect::<Vec<_>>().chunks(100) {
        let mut p = redis::pipe();
        fill(&mut p, chunk);
        p.query::<()>(&mut con).unwrap();
    }
    wait_until("parts demoted", || {
        srv.info_u64(&mut con, "tiered", "ram_used_bytes")
            <= srv.info_u64(&mut con, "tiered", "maxmemory_ram")
    });
    (srv, con)
}

/// Runs a whole read; returns its reply and how much the allocator's peak
/// RAM (INFO memory `used_memory_peak`) grew meanwhile.
fn read_whole(srv: &Server, con: &mut redis::Connection, cmd: &redis::Cmd) -> (Vec<Vec<u8>>, u64) {
    let before = srv.info_u64(con, "memory", "used_memory_peak");
    let all: Vec<Vec<u8>> = cmd.query(con).unwrap();
    let grew = srv
        .info_u64(con, "memory", "used_memory_peak")
        .saturating_sub(before);
    (all, grew)
}

/// The reply is about the collection's size (~32 MB). Streamed, RAM grows
/// by the reply and a batch of parts (measured: 29-53 MB for HGETALL run
/// alone, 64 MB once with the whole suite on 2 cores, where the client
/// drains the reply slowly); loading every part first, it held the value
/// twice (88 MB, measured with one batch of all parts). The bound: two
/// and a half times the reply (78 MB).
fn assert_streamed(what: &str, all: &[Vec<u8>], grew: u64) {
    let reply: u64 = all.iter().map(|x| x.len() as u64).sum();
    eprintln!("{what} of {reply} B: peak RAM grew {grew} B");
    assert!(
        grew < reply * 5 / 2,
        "{what} of {reply} B: peak RAM grew {grew} B"
    );
}

#[test]
fn hgetall_of_a_hash_larger_than_ram_streams_its_parts() {
    let (srv, mut con) = server(|p, chunk| {
        p.cmd("HSET").arg("h");
        for &i in chunk {
            p.arg(format!("f{i}")).arg(value(i));
        }
        p.ignore();
    });
    let mut cmd = redis::cmd("HGETALL");
    cmd.arg("h");
    let (all, grew) = read_whole(&srv, &mut con, &cmd);
    assert_eq!(all.len(), 2 * N);
    for pair in all.chunks(2) {
        let f = String::from_utf8_lossy(&pair[0]);
        let i: usize = f[1..].parse().unwrap();
        assert_eq!(pair[1], value(i).into_bytes(), "HGETALL {f}");
    }
    assert_streamed("HGETALL", &all, grew);
}

#[test]
fn lrange_of_a_list_larger_than_ram_streams_its_parts() {
    let (srv, mut con) = server(|p, chunk| {
        p.cmd("RPUSH").arg("l");
        for &i in chunk {
            p.arg(value(i));
        }
        p.ignore();
    });
    let mut cmd = redis::cmd("LRANGE");
    cmd.arg("l").arg(0).arg(-1);
    let (all, grew) = read_whole(&srv, &mut con, &cmd);
    assert_eq!(all.len(), N);
    assert!(all
        .iter()
        .enumerate()
        .all(|(i, v)| *v == value(i).into_bytes()));
    assert_streamed("LRANGE 0 -1", &all, grew);
    // A window in the middle: the parts it covers, in order.
    let mid: Vec<Vec<u8>> = redis::cmd("LRANGE")
        .arg("l")
        .arg(1000)
        .arg(-1001)
        .query(&mut con)
        .unwrap();
    assert_eq!(mid.len(), N - 2000);
    assert!(mid
        .iter()
        .enumerate()
        .all(|(i, v)| *v == value(i + 1000).into_bytes()));
}

/// A stream entry as redis-rs reads it: id, then field-value pairs.
type Entry = (String, Vec<(String, Vec<u8>)>);

#[test]
fn xrange_of_a_stream_larger_than_ram_streams_its_parts() {
    let (srv, mut con) = server(|p, chunk| {
        for &i in chunk {
            p.cmd("XADD")
                .arg("s")
                .arg(format!("{}-0", i + 1))
                .arg("f")
                .arg(value(i))
                .ignore();
        }
    });
    let mut cmd = redis::cmd("XRANGE");
    cmd.arg("s").arg("-").arg("+");
    let before = srv.info_u64(&mut con, "memory", "used_memory_peak");
    let all: Vec<Entry> = cmd.query(&mut con).unwrap();
    let grew = srv
        .info_u64(&mut con, "memory", "used_memory_peak")
        .saturating_sub(before);
    assert_eq!(all.len(), N);
    for (i, (id, fields)) in all.iter().enumerate() {
        assert_eq!(id, &format!("{}-0", i + 1));
        assert_eq!(fields, &vec![("f".to_string(), value(i).into_bytes())]);
    }
    // The reply as sent (RESP: an entry's framing is a fifth of its
    // bytes). Measured: peak RAM grew 64 MB for the 37 MB reply; with every
    // part loaded first (a range with COUNT), 132 MB.
    let reply: Vec<Vec<u8>> = all
        .iter()
        .map(|(id, f)| {
            format!(
                "*2\r\n${}\r\n{id}\r\n*2\r\n$1\r\nf\r\n${}\r\n{}\r\n",
                id.len(),
                f[0].1.len(),
                String::from_utf8_lossy(&f[0].1)
            )
            .into_bytes()
        })
        .collect();
    assert_streamed("XRANGE - +", &reply, grew);
    // Descending, a window in the middle.
    let mid: Vec<Entry> = redis::cmd("XREVRANGE")
        .arg("s")
        .arg("150000")
        .arg("(1000")
        .query(&mut con)
        .unwrap();
    assert_eq!(mid.len(), 150_000 - 1000);
    assert_eq!(mid[0].0, "150000-0");
    assert_eq!(mid.last().unwrap().0, "1001-0");
}

/// SINTER, SUNION, SDIFF, SINTERCARD and SINTERSTORE of two sets larger
/// than RAM go by windows of the member hash (`Engine::stream_windows`):
/// RAM holds a window of each set's parts, never both sets: SINTERCARD
/// grew the peak by 13.8-18 MB (windows load faster than the demoter
/// frees them), and by 72 MB with one window of every part (the sets and
/// the window's copies), as a read of both sets whole does.
#[test]
fn set_operations_on_sets_larger_than_ram_stream_by_hash_windows() {
    // a: 0..100k, b: 50k..150k (~14 MB each).
    let (srv, mut con) = server(|p, chunk| {
        for &i in chunk.iter().filter(|&&i| i < 150_000) {
            if i < 100_000 {
                p.cmd("SADD").arg("a").arg(value(i)).ignore();
            }
            if i >= 50_000 {
                p.cmd("SADD").arg("b").arg(value(i)).ignore();
            }
        }
    });
    let set = |v: Vec<Vec<u8>>| -> std::collections::HashSet<Vec<u8>> {
        let n = v.len();
        let s: std::collections::HashSet<Vec<u8>> = v.into_iter().collect();
        assert_eq!(s.len(), n, "no member twice");
        s
    };
    let range = |r: std::ops::Range<usize>| -> std::collections::HashSet<Vec<u8>> {
        r.map(|i| value(i).into_bytes()).collect()
    };
    // A count: the reply is tiny, so the peak shows what the read held.
    let before = srv.info_u64(&mut con, "memory", "used_memory_peak");
    let n: i64 = redis::cmd("SINTERCARD")
        .arg(2)
        .arg("a")
        .arg("b")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 50_000);
    let grew = srv
        .info_u64(&mut con, "memory", "used_memory_peak")
        .saturating_sub(before);
    eprintln!("SINTERCARD: peak RAM grew {grew} B");
    assert!(grew < 28 << 20, "SINTERCARD: peak RAM grew {grew} B");
    let n: i64 = redis::cmd("SINTERCARD")
        .arg(2)
        .arg("a")
        .arg("b")
        .arg("LIMIT")
        .arg(7)
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 7);
    for (op, want) in [
        ("SUNION", range(0..150_000)),
        ("SINTER", range(50_000..100_000)),
        ("SDIFF", range(0..50_000)),
    ] {
        let mut cmd = redis::cmd(op);
        cmd.arg("a").arg("b");
        let (all, grew) = read_whole(&srv, &mut con, &cmd);
        assert_streamed(op, &all, grew);
        assert!(set(all) == want, "{op}");
    }
    // A missing key: an empty intersection, the whole difference.
    let inter: Vec<Vec<u8>> = redis::cmd("SINTER")
        .arg("a")
        .arg("nosuch")
        .query(&mut con)
        .unwrap();
    assert!(inter.is_empty());
    let diff: Vec<Vec<u8>> = redis::cmd("SDIFF")
        .arg("b")
        .arg("nosuch")
        .query(&mut con)
        .unwrap();
    assert!(set(diff) == range(50_000..150_000));
    // STORE into one of its inputs.
    let n: i64 = redis::cmd("SINTERSTORE")
        .arg("a")
        .arg("a")
        .arg("b")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 50_000);
    let card: i64 = redis::cmd("SCARD").arg("a").query(&mut con).unwrap();
    assert_eq!(card, 50_000);
    let members: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg("a").query(&mut con).unwrap();
    assert!(set(members) == range(50_000..100_000));
    // WRONGTYPE is checked on every key, as Redis does.
    let _: () = redis::cmd("SET")
        .arg("str")
        .arg("x")
        .query(&mut con)
        .unwrap();
    let e = redis::cmd("SUNION")
        .arg("b")
        .arg("str")
        .query::<Vec<Vec<u8>>>(&mut con)
        .unwrap_err();
    assert_eq!(e.code(), Some("WRONGTYPE"));
}

/// ZUNIONSTORE, ZINTERCARD and ZINTER of two sorted sets larger than RAM
/// go by windows of the member hash, as the set operations do: RAM holds a
/// window of each input's member parts, never both inputs (~19 MB each
/// over both families, under 8 MB): ZINTERCARD did not pass the fill's
/// peak; with one window of every part it grew the peak by 51 MB.
#[test]
fn sorted_set_operations_on_sets_larger_than_ram_stream_by_hash_windows() {
    // a: 0..60k scored i, b: 30k..90k scored 2i.
    let (srv, mut con) = server_with("8mb", |p, chunk| {
        for &i in chunk.iter().filter(|&&i| i < 90_000) {
            if i < 60_000 {
                p.cmd("ZADD").arg("a").arg(i).arg(value(i)).ignore();
            }
            if i >= 30_000 {
                p.cmd("ZADD").arg("b").arg(2 * i).arg(value(i)).ignore();
            }
        }
    });
    let before = srv.info_u64(&mut con, "memory", "used_memory_peak");
    let n: i64 = redis::cmd("ZINTERCARD")
        .arg(2)
        .arg("a")
        .arg("b")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 30_000);
    let grew = srv
        .info_u64(&mut con, "memory", "used_memory_peak")
        .saturating_sub(before);
    eprintln!("ZINTERCARD: peak RAM grew {grew} B");
    assert!(grew < 24 << 20, "ZINTERCARD: peak RAM grew {grew} B");
    // Scores aggregate across windows exactly: each member's copies meet.
    let inter: Vec<(Vec<u8>, f64)> = redis::cmd("ZINTER")
        .arg(2)
        .arg("a")
        .arg("b")
        .arg("WEIGHTS")
        .arg(1)
        .arg(10)
        .arg("WITHSCORES")
        .query(&mut con)
        .unwrap();
    assert_eq!(inter.len(), 30_000);
    for (j, (m, s)) in inter.iter().enumerate() {
        let i = 30_000 + j; // ascending score 21i: member order is i's
        assert_eq!((m, *s), (&value(i).into_bytes(), 21.0 * i as f64));
    }
    // A write right after a big result can meet RAM above the budget
    // (the result and reply buffers count) and get -OOM until demotion
    // catches up (a known weakness, not what this test is about): settle.
    let settle = |con: &mut redis::Connection| {
        wait_until("RAM under the budget", || {
            srv.info_u64(con, "tiered", "ram_used_bytes")
                <= srv.info_u64(con, "tiered", "maxmemory_ram")
        })
    };
    settle(&mut con);
    let n: i64 = redis::cmd("ZUNIONSTORE")
        .arg("u")
        .arg(2)
        .arg("a")
        .arg("b")
        .arg("AGGREGATE")
        .arg("MAX")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 90_000);
    for i in [0usize, 29_999, 30_000, 59_999, 60_000, 89_999] {
        let s: f64 = redis::cmd("ZSCORE")
            .arg("u")
            .arg(value(i))
            .query(&mut con)
            .unwrap();
        let want = if i < 30_000 { i } else { 2 * i };
        assert_eq!(s, want as f64, "ZSCORE u {i}");
    }
    let card: i64 = redis::cmd("ZCARD").arg("u").query(&mut con).unwrap();
    assert_eq!(card, 90_000);
    settle(&mut con);
    let diff: i64 = redis::cmd("ZDIFFSTORE")
        .arg("d")
        .arg(2)
        .arg("b")
        .arg("a")
        .query(&mut con)
        .unwrap();
    assert_eq!(diff, 30_000);
    let first: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg("d")
        .arg(0)
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(first, vec![value(60_000).into_bytes()]);
}

/// A 32 MB string under a 4 MB budget: BITCOUNT and GETRANGE of all of it
/// read a batch of parts at a time (loading every part first would hold
/// 32 MB of parts), and BITPOS stops at the batch holding its bit.
#[test]
fn bit_reads_of_a_string_larger_than_ram_stream_its_parts() {
    const PIECE: usize = 64 << 10;
    const PIECES: usize = 512;
    let srv = Server::start(&["--maxmemory-ram", "4mb", "--flash-segment-size", "1mb"]);
    let mut con = srv.client();
    for i in 0..PIECES {
        // Every byte 0x0F, but the last piece starts with a set high bit.
        let mut piece = vec![0x0Fu8; PIECE];
        if i == PIECES - 1 {
            piece[0] = 0x8F;
        }
        redis::cmd("SETRANGE")
            .arg("s")
            .arg(i * PIECE)
            .arg(piece)
            .query::<()>(&mut con)
            .unwrap();
    }
    wait_until("parts demoted", || {
        srv.info_u64(&mut con, "tiered", "ram_used_bytes")
            <= srv.info_u64(&mut con, "tiered", "maxmemory_ram")
    });
    let total = (PIECE * PIECES) as u64;
    let before = srv.info_u64(&mut con, "memory", "used_memory_peak");
    let n: u64 = redis::cmd("BITCOUNT").arg("s").query(&mut con).unwrap();
    let grew = srv
        .info_u64(&mut con, "memory", "used_memory_peak")
        .saturating_sub(before);
    eprintln!("BITCOUNT of a {total} B string: peak RAM grew {grew} B");
    assert_eq!(n, total * 4 + 1);
    // Streamed, the peak grows by the parts demotion has not moved back
    // yet: under 2 MB alone, up to 18.7 MB measured with six servers and
    // three busy loops on the 2 cores (the background thread starved; CI
    // saw 15 MB). Loading every part first holds all 32 MB at once.
    assert!(grew < total * 3 / 4, "BITCOUNT: peak RAM grew {grew} B");
    // The first set bit of the last piece: every part before it is read,
    // a batch at a time.
    let from = (PIECE * (PIECES - 1) - 10) as i64;
    let loads = srv.info_u64(&mut con, "tiered", "chunk_loads");
    let pos: i64 = redis::cmd("BITPOS")
        .arg("s")
        .arg(1)
        .arg(from)
        .query(&mut con)
        .unwrap();
    assert_eq!(pos, from * 8 + 4);
    // The first set bit is in the first byte: one batch (1 MiB: 64 parts
    // of 16 KiB) at most.
    let pos: i64 = redis::cmd("BITPOS")
        .arg("s")
        .arg(1)
        .query(&mut con)
        .unwrap();
    assert_eq!(pos, 4);
    let loads = srv.info_u64(&mut con, "tiered", "chunk_loads") - loads;
    assert!(loads <= 2 * 64, "BITPOS read {loads} parts");
    let before = srv.info_u64(&mut con, "memory", "used_memory_peak");
    let hits = srv.info_u64(&mut con, "stats", "keyspace_hits");
    let all: Vec<u8> = redis::cmd("GETRANGE")
        .arg("s")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    let grew = srv
        .info_u64(&mut con, "memory", "used_memory_peak")
        .saturating_sub(before);
    eprintln!("GETRANGE of a {total} B string: peak RAM grew {grew} B");
    assert_eq!(all.len() as u64, total);
    assert_eq!(all[PIECE * (PIECES - 1)], 0x8F);
    // One read, one keyspace hit (not one per batch of parts).
    assert_eq!(srv.info_u64(&mut con, "stats", "keyspace_hits") - hits, 1);
    assert!(grew < total * 2, "GETRANGE: peak RAM grew {grew} B");
}

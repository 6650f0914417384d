//! Cold keys in packed index cells (`index/cell.rs`): a key whose value
//! went to flash costs its 32-byte bucket, not a bucket plus a boxed
//! entry, and reads back exactly as before: its value, type,
//! length and idle time, through collector moves and a restart.

mod common;
use common::{q, value_for, wait_until, Server};
use redis::Commands;

const KEYS: usize = 60_000;

fn fill(con: &mut redis::Connection) {
    for chunk in 0..KEYS / 1000 {
        let mut pipe = redis::pipe();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            let key = format!("k:{i}");
            if i % 10 == 0 {
                // With a TTL: packed too, its expiry beside (`Ext`).
                pipe.set_ex(&key, value_for(&key, 0, 300), 1_000_000)
                    .ignore();
            } else {
                pipe.set(&key, value_for(&key, 0, 300)).ignore();
            }
        }
        pipe.query::<()>(con).unwrap();
    }
    // A hash and a set small enough to be one packed record each.
    let _: () = con.hset_multiple("h", &[("a", "1"), ("b", "2")]).unwrap();
    let _: () = con.sadd("s", &[3, 1, 2]).unwrap();
}

fn check_values(con: &mut redis::Connection, step: usize) {
    for i in (0..KEYS).step_by(step) {
        let key = format!("k:{i}");
        let v: Vec<u8> = con.get(&key).unwrap();
        assert_eq!(v, value_for(&key, 0, 300), "{key}");
        let len: usize = con.strlen(&key).unwrap();
        assert_eq!(len, 300, "{key}");
    }
    for i in (0..KEYS).step_by(10 * step) {
        let ttl: i64 = con.ttl(format!("k:{i}")).unwrap();
        assert!(ttl > 999_000, "k:{i} TTL {ttl}");
    }
    let h: Vec<(String, String)> = con.hgetall("h").unwrap();
    assert_eq!(h, vec![("a".into(), "1".into()), ("b".into(), "2".into())]);
    let mut s: Vec<i64> = con.smembers("s").unwrap();
    s.sort();
    assert_eq!(s, vec![1, 2, 3]);
}

fn settle(srv: &Server, con: &mut redis::Connection) {
    // Until demotion has brought RAM down to its budget: most values on
    // flash, and no more moving.
    let mut last = 0;
    wait_until("values moved to flash", || {
        let n = srv.info_u64(con, "tiered", "values_in_flash") as usize;
        let settled = n > KEYS * 2 / 3 && n == last;
        last = n;
        if !settled {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        settled
    });
    // The key metadata of a cold key is answered from RAM alone.
    let t: String = q(con, "TYPE h");
    assert_eq!(t, "hash");
}

#[test]
fn cold_keys_cost_their_packed_cell_and_read_back_whole() {
    let mut srv = Server::start(&[
        "--maxmemory-ram",
        "10mb",
        "--appendonly",
        "no",
        "--flash-gc-garbage-ratio",
        "0",
        "--flash-segment-size",
        "1mb",
        "--enable-debug-command",
        "yes",
    ]);
    let mut con = srv.client();
    fill(&mut con);
    settle(&srv, &mut con);
    // A bucket was 72 bytes when entries sat inline, 40 + 48 (now 80) boxed:
    // with the cold ones packed (a tenth with a 32-byte TTL box beside),
    // the index costs less than the old bucket alone.
    let per_key = srv.info_u64(&mut con, "tiered", "index_bytes_per_key");
    assert!(per_key < 72, "index bytes per key {per_key}");
    // Boxed: the values in RAM (and what demotion moved between the two
    // figures' reads); every cold key is packed.
    let info = srv.info(&mut con, "tiered");
    let n = |f: &str| info[f].parse::<i64>().unwrap();
    let (boxed, hot) = (n("index_boxed_keys"), n("values_in_ram"));
    assert!((boxed - hot).abs() < 200, "{boxed} boxed, {hot} in RAM");
    let cold = (0..KEYS)
        .filter(|i| i % 10 != 0)
        .map(|i| format!("k:{i}"))
        .find(|k| q::<String>(&mut con, &format!("DEBUG TIER {k}")).starts_with("tier:flash"))
        .expect("a key on flash");
    // A packed key's RAM: its 32-byte bucket (the name inside) and its
    // 4-byte table slot (3-byte position, control byte), no boxed entry.
    let usage: u64 = q(&mut con, &format!("MEMORY USAGE {cold}"));
    assert_eq!(usage, 32 + 4, "MEMORY USAGE {cold}");
    // A packed entry keeps no access time: its record's segment's age
    // stands for it, never the Unix epoch.
    let idle: u64 = q(&mut con, &format!("OBJECT IDLETIME {cold}"));
    assert!(idle < 600, "idle {idle}");
    // With a TTL: the box beside the cell too.
    let ttl_cold = (0..KEYS)
        .step_by(10)
        .map(|i| format!("k:{i}"))
        .find(|k| q::<String>(&mut con, &format!("DEBUG TIER {k}")).starts_with("tier:flash"))
        .expect("a key with a TTL on flash");
    let usage_ttl: u64 = q(&mut con, &format!("MEMORY USAGE {ttl_cold}"));
    assert_eq!(usage_ttl, usage + 32, "MEMORY USAGE {ttl_cold}");
    check_values(&mut con, 7);

    // Overwrite four keys of five: the collector moves the others'
    // records, and moved entries are packed again.
    for chunk in 0..KEYS / 3000 {
        let mut pipe = redis::pipe();
        for i in (chunk * 3000..(chunk + 1) * 3000).filter(|i| i % 5 != 0) {
            let key = format!("k:{i}");
            pipe.set(&key, value_for(&key, 0, 300)).ignore();
        }
        pipe.query::<()>(&mut con).unwrap();
    }
    wait_until("the collector moved records", || {
        srv.info_u64(&mut con, "tiered", "flash_gc_bytes_relocated") > 0
    });
    settle(&srv, &mut con);
    let per_key = srv.info_u64(&mut con, "tiered", "index_bytes_per_key");
    assert!(per_key < 72, "index bytes per key after moves {per_key}");
    check_values(&mut con, 5);

    // A restart rebuilds the index from the checkpoint the shutdown wrote
    // and the log: its cold entries are packed again.
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut con);
    srv.wait_exit(std::time::Duration::from_secs(30));
    srv.restart();
    let mut con = srv.client();
    let keys: usize = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(keys, KEYS + 2);
    let per_key = srv.info_u64(&mut con, "tiered", "index_bytes_per_key");
    assert!(
        per_key < 72,
        "index bytes per key after a restart {per_key}"
    );
    check_values(&mut con, 3);
}

/// With the journal (the default `appendonly yes`), the values reach flash
/// as journal records first, and demotion drops the RAM copies: the cold
/// keys are packed just the same, and again after a kill -9 and a restart
/// that replays the log.
#[test]
fn with_the_journal_cold_keys_are_packed_and_survive_a_crash() {
    let mut srv = Server::start(&["--maxmemory-ram", "10mb", "--appendonly", "yes"]);
    let mut con = srv.client();
    fill(&mut con);
    settle(&srv, &mut con);
    let info = srv.info(&mut con, "tiered");
    let n = |f: &str| info[f].parse::<i64>().unwrap();
    let (boxed, hot) = (n("index_boxed_keys"), n("values_in_ram"));
    assert!((boxed - hot).abs() < 200, "{boxed} boxed, {hot} in RAM");
    assert!(n("index_bytes_per_key") < 72, "{info:?}");
    check_values(&mut con, 11);
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    let keys: usize = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(keys, KEYS + 2);
    let per_key = srv.info_u64(&mut con, "tiered", "index_bytes_per_key");
    assert!(per_key < 72, "index bytes per key after a crash {per_key}");
    check_values(&mut con, 3);
}

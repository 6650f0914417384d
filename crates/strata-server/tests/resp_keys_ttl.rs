//! Keyspace commands and TTLs against the real server, with Redis 7 as the
//! reference: DEL/EXISTS/TOUCH/TYPE, KEYS and SCAN, RANDOMKEY, RENAME and
//! COPY, the EXPIRE family, lazy and active expiry, SELECT, FLUSHDB and
//! FLUSHALL, and the `INFO keyspace` line format.

mod common;
use common::raw::Raw;
use common::*;

use std::collections::{HashMap, HashSet};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

const NO_SUCH_KEY: &str = "-ERR no such key\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const DB_RANGE: &str = "-ERR DB index is out of range\r\n";

#[test]
fn del_exists_touch_count_duplicates() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("MSET a 1 b 2 c 3", "+OK\r\n");
    // EXISTS counts a key each time it is named.
    r.w("EXISTS a a a missing", ":3\r\n");
    r.w("EXISTS missing", ":0\r\n");
    // TOUCH counts existing keys the same way.
    r.w("TOUCH a b missing", ":2\r\n");
    // DEL counts keys actually removed: a duplicate is removed once.
    r.w("DEL a a missing", ":1\r\n");
    r.w("EXISTS a", ":0\r\n");
    // UNLINK behaves as DEL.
    r.w("UNLINK b c c", ":2\r\n");
    r.w("DBSIZE", ":0\r\n");
    r.w(
        "DEL",
        "-ERR wrong number of arguments for 'del' command\r\n",
    );
    r.w(
        "EXISTS",
        "-ERR wrong number of arguments for 'exists' command\r\n",
    );
}

#[test]
fn type_of_keys() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("SET s v", "+OK\r\n");
    // Strings are `string`, missing keys `none` (simple strings).
    r.w("TYPE s", "+string\r\n");
    r.w("TYPE missing", "+none\r\n");
    // An expired key is `none`.
    r.w("SET gone v PXAT 1", "+OK\r\n");
    r.w("TYPE gone", "+none\r\n");
}

#[test]
fn keys_glob_patterns() {
    let srv = start();
    let mut con = srv.client();
    let names = [
        "hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "other",
    ];
    for n in names {
        let _: () = redis::cmd("SET").arg(n).arg("v").query(&mut con).unwrap();
    }
    // An expired key (checked last).
    let _: () = redis::cmd("SET")
        .arg("hzllo")
        .arg("v")
        .arg("PXAT")
        .arg(1)
        .query(&mut con)
        .unwrap();
    let mut keys = |p: &str| -> Vec<String> {
        let mut k: Vec<String> = redis::cmd("KEYS").arg(p).query(&mut con).unwrap();
        k.sort();
        k
    };
    // (pattern, matching keys, sorted)
    let cases: &[(&str, &[&str])] = &[
        // `*` matches everything.
        (
            "*",
            &[
                "h*llo", "h?llo", "hallo", "heeeello", "hello", "hllo", "hxllo", "other",
            ],
        ),
        // `?` is exactly one byte.
        ("h?llo", &["h*llo", "h?llo", "hallo", "hello", "hxllo"]),
        // `*` is any run, including empty.
        (
            "h*llo",
            &[
                "h*llo", "h?llo", "hallo", "heeeello", "hello", "hllo", "hxllo",
            ],
        ),
        // Sets, negated sets and ranges.
        ("h[ae]llo", &["hallo", "hello"]),
        ("h[^e]llo", &["h*llo", "h?llo", "hallo", "hxllo"]),
        ("h[a-b]llo", &["hallo"]),
        // A backslash escapes a special character.
        ("h\\*llo", &["h*llo"]),
        ("h\\?llo", &["h?llo"]),
        // Exact names; no match gives an empty array.
        ("other", &["other"]),
        ("nomatch*", &[]),
    ];
    for (p, want) in cases {
        assert_eq!(keys(p), *want, "KEYS {p}");
    }
    // Expired keys are not listed.
    assert_eq!(keys("hz*").len(), 0);
}

#[test]
fn scan_visits_every_key_with_count_and_match() {
    let srv = start();
    let mut con = srv.client();
    // 5000 matching keys plus 1000 others, in MSET batches.
    for batch in 0..6 {
        let mut c = redis::cmd("MSET");
        for i in batch * 1000..(batch + 1) * 1000 {
            let name = if i < 5000 {
                format!("key:{i}")
            } else {
                format!("other:{i}")
            };
            c.arg(name).arg(i);
        }
        let _: () = c.query(&mut con).unwrap();
    }
    let scan_all = |con: &mut redis::Connection, extra: &[&str]| -> (HashSet<String>, usize) {
        let mut cursor = "0".to_string();
        let mut seen = HashSet::new();
        let mut calls = 0;
        loop {
            let mut c = redis::cmd("SCAN");
            c.arg(&cursor);
            for a in extra {
                c.arg(*a);
            }
            let (next, keys): (String, Vec<String>) = c.query(con).unwrap();
            seen.extend(keys);
            calls += 1;
            assert!(calls < 10_000, "SCAN does not terminate");
            if next == "0" {
                return (seen, calls);
            }
            cursor = next;
        }
    };
    // MATCH + COUNT: every matching key at least once, no other key.
    let (seen, calls) = scan_all(&mut con, &["MATCH", "key:*", "COUNT", "100"]);
    assert_eq!(seen.len(), 5000);
    assert!((0..5000).all(|i| seen.contains(&format!("key:{i}"))));
    assert!(calls >= 10, "COUNT 100 over 6000 keys took {calls} calls");
    // Without MATCH: every key.
    let (seen, _) = scan_all(&mut con, &["COUNT", "100"]);
    assert_eq!(seen.len(), 6000);
    // TYPE string keeps all keys; another type keeps none.
    let (seen, _) = scan_all(&mut con, &["TYPE", "string", "COUNT", "1000"]);
    assert_eq!(seen.len(), 6000);
    let (seen, _) = scan_all(&mut con, &["TYPE", "hash", "COUNT", "1000"]);
    assert!(seen.is_empty());
    // Argument errors (Redis wording).
    let mut r = Raw::new(&srv);
    r.w("SCAN abc", "-ERR invalid cursor\r\n");
    r.w("SCAN -1", "-ERR invalid cursor\r\n");
    r.w("SCAN 0 COUNT 0", "-ERR syntax error\r\n");
    r.w("SCAN 0 COUNT abc", NOT_INT);
    r.w("SCAN 0 MATCH", "-ERR syntax error\r\n");
    r.w("SCAN 0 FOO bar", "-ERR syntax error\r\n");
}

#[test]
fn randomkey() {
    let srv = start();
    let mut r = Raw::new(&srv);
    // An empty database: nil.
    r.w("RANDOMKEY", "$-1\r\n");
    let mut con = srv.client();
    let _: () = q(&mut con, "MSET a 1 b 2 c 3");
    for _ in 0..20 {
        let k: String = q(&mut con, "RANDOMKEY");
        assert!(["a", "b", "c"].contains(&k.as_str()), "{k}");
    }
}

#[test]
fn rename_and_renamenx() {
    let srv = start();
    let mut con = srv.client();
    let mut r = Raw::new(&srv);
    r.w("SET a 1 EX 100", "+OK\r\n");
    // RENAME moves the value and its TTL.
    r.w("RENAME a b", "+OK\r\n");
    r.w("EXISTS a", ":0\r\n");
    r.w("GET b", "$1\r\n1\r\n");
    let t: i64 = q(&mut con, "PTTL b");
    assert!(t > 90_000, "{t}");
    // RENAME over an existing key replaces it, TTL included.
    r.w("SET c 2 EX 500", "+OK\r\n");
    r.w("SET d 3", "+OK\r\n");
    r.w("RENAME d c", "+OK\r\n");
    r.w("GET c", "$1\r\n3\r\n");
    r.w("TTL c", ":-1\r\n");
    // A missing source is an error.
    r.w("RENAME missing x", NO_SUCH_KEY);
    r.w("RENAMENX missing x", NO_SUCH_KEY);
    // Renaming a key to itself is OK (and RENAMENX says 0).
    r.w("RENAME c c", "+OK\r\n");
    r.w("RENAMENX c c", ":0\r\n");
    r.w("GET c", "$1\r\n3\r\n");
    // RENAMENX: 0 if the target exists (nothing changes), else 1.
    r.w("RENAMENX b c", ":0\r\n");
    r.w("GET b", "$1\r\n1\r\n");
    r.w("RENAMENX b e", ":1\r\n");
    r.w("GET e", "$1\r\n1\r\n");
    r.w("EXISTS b", ":0\r\n");
    // An expired source is missing.
    r.w("SET gone v PXAT 1", "+OK\r\n");
    r.w("RENAME gone x", NO_SUCH_KEY);
}

#[test]
fn copy_semantics() {
    let srv = start();
    let mut con = srv.client();
    let mut r = Raw::new(&srv);
    r.w("SET a v EX 100", "+OK\r\n");
    // COPY creates the destination, keeps the source, carries the TTL.
    r.w("COPY a b", ":1\r\n");
    r.w("MGET a b", "*2\r\n$1\r\nv\r\n$1\r\nv\r\n");
    let t: i64 = q(&mut con, "PTTL b");
    assert!(t > 90_000, "{t}");
    // An existing destination: 0 unless REPLACE.
    r.w("SET c other", "+OK\r\n");
    r.w("COPY a c", ":0\r\n");
    r.w("GET c", "$5\r\nother\r\n");
    r.w("COPY a c REPLACE", ":1\r\n");
    r.w("GET c", "$1\r\nv\r\n");
    // A missing source: 0.
    r.w("COPY missing x", ":0\r\n");
    // The copy is independent of the source.
    r.w("APPEND c 2", ":2\r\n");
    r.w("GET a", "$1\r\nv\r\n");
    // COPY to another database.
    r.w("COPY a a DB 3", ":1\r\n");
    r.w("COPY a a DB 3", ":0\r\n");
    r.w("SELECT 3", "+OK\r\n");
    r.w("GET a", "$1\r\nv\r\n");
    r.w("SELECT 0", "+OK\r\n");
    let errors: &[(&str, &str)] = &[
        // Same key in the same db.
        (
            "COPY a a",
            "-ERR source and destination objects are the same\r\n",
        ),
        (
            "COPY a a DB 0",
            "-ERR source and destination objects are the same\r\n",
        ),
        // Database out of range (negative too), or not a number.
        ("COPY a b DB 16", DB_RANGE),
        ("COPY a b DB -1", DB_RANGE),
        ("COPY a b DB x", NOT_INT),
        // Unknown option, or DB without its value.
        ("COPY a b FOO", "-ERR syntax error\r\n"),
        ("COPY a b DB", "-ERR syntax error\r\n"),
    ];
    for (cmd, reply) in errors {
        r.w(cmd, reply);
    }
}

#[test]
fn expire_family_conditions() {
    let srv = start();
    let mut con = srv.client();
    let mut r = Raw::new(&srv);
    r.w("SET k v", "+OK\r\n");
    // (command, reply, TTL in seconds afterwards, -1 none, -2 missing)
    let steps: &[(&str, &str, i64)] = &[
        // A missing key: 0.
        ("EXPIRE missing 100", ":0\r\n", -1),
        // XX needs an existing TTL; GT treats none as infinite.
        ("EXPIRE k 100 XX", ":0\r\n", -1),
        ("EXPIRE k 100 GT", ":0\r\n", -1),
        // LT on a key without TTL sets it.
        ("EXPIRE k 100 LT", ":1\r\n", 100),
        // NX needs no TTL.
        ("EXPIRE k 200 NX", ":0\r\n", 100),
        // GT only lengthens, LT only shortens.
        ("EXPIRE k 50 GT", ":0\r\n", 100),
        ("EXPIRE k 200 GT", ":1\r\n", 200),
        ("EXPIRE k 300 LT", ":0\r\n", 200),
        ("EXPIRE k 150 LT", ":1\r\n", 150),
        // XX with an existing TTL.
        ("EXPIRE k 120 XX", ":1\r\n", 120),
        // XX combines with GT and LT (Redis 7 allows it).
        ("EXPIRE k 130 XX GT", ":1\r\n", 130),
        ("EXPIRE k 125 XX LT", ":1\r\n", 125),
        ("EXPIRE k 500 XX LT", ":0\r\n", 125),
        // Options are case-insensitive.
        ("EXPIRE k 400 gt", ":1\r\n", 400),
        ("PERSIST k", ":1\r\n", -1),
        ("PERSIST k", ":0\r\n", -1),
        ("EXPIRE k 100 XX LT", ":0\r\n", -1),
        ("EXPIRE k 90 NX", ":1\r\n", 90),
        // PEXPIRE in milliseconds.
        ("PEXPIRE k 80000", ":1\r\n", 80),
    ];
    for (cmd, reply, ttl) in steps {
        r.w(cmd, reply);
        let t: i64 = q(&mut con, "TTL k");
        assert_eq!(t, *ttl, "TTL after {cmd}");
    }
    let incompatible = "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n";
    let errors: &[(&str, &str)] = &[
        ("EXPIRE k 10 NX XX", incompatible),
        ("EXPIRE k 10 XX NX", incompatible),
        ("EXPIRE k 10 NX GT", incompatible),
        ("EXPIRE k 10 LT NX", incompatible),
        (
            "EXPIRE k 10 GT LT",
            "-ERR GT and LT options at the same time are not compatible\r\n",
        ),
        ("EXPIRE k 10 FOO", "-ERR Unsupported option FOO\r\n"),
        // Options are checked before the time (Redis order).
        ("EXPIRE k abc FOO", "-ERR Unsupported option FOO\r\n"),
        ("EXPIRE k abc", NOT_INT),
        ("PEXPIRE k 1.5", NOT_INT),
        // Seconds overflowing once in ms.
        (
            "EXPIRE k 9223372036854775807",
            "-ERR invalid expire time in 'expire' command\r\n",
        ),
        (
            "PEXPIRE k 9223372036854775807",
            "-ERR invalid expire time in 'pexpire' command\r\n",
        ),
        (
            "EXPIRE k",
            "-ERR wrong number of arguments for 'expire' command\r\n",
        ),
    ];
    for (cmd, reply) in errors {
        r.w(cmd, reply);
    }
    let t: i64 = q(&mut con, "TTL k");
    assert_eq!(t, 80, "errors changed nothing");
    // A time in the past deletes the key and replies 1.
    r.w("EXPIRE k -1", ":1\r\n");
    r.w("EXISTS k", ":0\r\n");
    r.w("SET k v", "+OK\r\n");
    r.w("PEXPIRE k 0", ":1\r\n");
    r.w("EXISTS k", ":0\r\n");
}

#[test]
fn expireat_ttl_expiretime_persist() {
    let srv = start();
    let mut con = srv.client();
    let mut r = Raw::new(&srv);
    // TTL family on a missing key: -2; on a key without TTL: -1.
    for cmd in ["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"] {
        r.w(&format!("{cmd} missing"), ":-2\r\n");
    }
    r.w("SET k v", "+OK\r\n");
    for cmd in ["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"] {
        r.w(&format!("{cmd} k"), ":-1\r\n");
    }
    // PERSIST without TTL or key: 0.
    r.w("PERSIST k", ":0\r\n");
    r.w("PERSIST missing", ":0\r\n");
    // PEXPIREAT: PEXPIRETIME returns the exact time, EXPIRETIME its seconds.
    let at = now_ms() + 100_000;
    r.w(&format!("PEXPIREAT k {at}"), ":1\r\n");
    r.w("PEXPIRETIME k", &format!(":{at}\r\n"));
    r.w("EXPIRETIME k", &format!(":{}\r\n", at / 1000));
    let pttl: i64 = q(&mut con, "PTTL k");
    assert!(pttl > 90_000 && pttl <= 100_000, "{pttl}");
    // TTL rounds to the nearest second.
    r.w("TTL k", ":100\r\n");
    // EXPIREAT in seconds.
    let at_s = now_ms() / 1000 + 200;
    r.w(&format!("EXPIREAT k {at_s}"), ":1\r\n");
    r.w("EXPIRETIME k", &format!(":{at_s}\r\n"));
    r.w("PEXPIRETIME k", &format!(":{}\r\n", at_s * 1000));
    // EXPIREAT with NX/GT like EXPIRE.
    r.w(&format!("EXPIREAT k {} NX", at_s + 10), ":0\r\n");
    r.w(&format!("EXPIREAT k {} GT", at_s + 10), ":1\r\n");
    // PERSIST removes the TTL.
    r.w("PERSIST k", ":1\r\n");
    r.w("TTL k", ":-1\r\n");
    // EXPIREAT / PEXPIREAT in the past delete the key.
    r.w("EXPIREAT k 1", ":1\r\n");
    r.w("EXISTS k", ":0\r\n");
    r.w("SET k v", "+OK\r\n");
    r.w("PEXPIREAT k 1000", ":1\r\n");
    r.w("TTL k", ":-2\r\n");
    r.w("EXPIREAT missing 99999999999", ":0\r\n");
}

#[test]
fn key_expires_lazily() {
    let srv = start();
    let mut con = srv.client();
    let _: () = q(&mut con, "SET k v PX 50");
    // PX 50, then GET until nil: the read itself notices the expiry.
    wait_until("k to expire", || {
        let v: Option<String> = q(&mut con, "GET k");
        v.is_none()
    });
    let t: i64 = q(&mut con, "PTTL k");
    assert_eq!(t, -2);
    let n: i64 = q(&mut con, "EXISTS k");
    assert_eq!(n, 0);
}

#[test]
fn keys_expire_via_active_sweep() {
    let srv = start();
    let mut con = srv.client();
    // 200 keys with PX 100 plus one key without TTL; never read them again.
    let mut p = redis::pipe();
    for i in 0..200 {
        p.cmd("SET")
            .arg(format!("t:{i}"))
            .arg(i)
            .arg("PX")
            .arg(100)
            .ignore();
    }
    p.cmd("SET").arg("keep").arg("v").ignore();
    let _: () = p.query(&mut con).unwrap();
    // DBSIZE counts unswept keys, so reaching 1 proves the active sweep.
    wait_until("active expiry of 200 keys", || {
        let n: i64 = q(&mut con, "DBSIZE");
        n == 1
    });
    let ks = srv.info(&mut con, "keyspace");
    assert_eq!(
        ks.get("db0").map(String::as_str),
        Some("keys=1,expires=0,avg_ttl=0")
    );
    let expired = srv.info_u64(&mut con, "stats", "expired_keys");
    assert!(expired >= 200, "expired_keys {expired}");
    // Once the last key goes, db0 disappears from INFO keyspace.
    let _: () = q(&mut con, "DEL keep");
    assert!(!srv.info(&mut con, "keyspace").contains_key("db0"));
}

#[test]
fn select_isolates_databases() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("SET k zero", "+OK\r\n");
    r.w("SELECT 1", "+OK\r\n");
    // db1 does not see db0's key.
    r.w("GET k", "$-1\r\n");
    r.w("EXISTS k", ":0\r\n");
    r.w("SET k one", "+OK\r\n");
    r.w("DBSIZE", ":1\r\n");
    r.w("SELECT 15", "+OK\r\n");
    r.w("KEYS *", "*0\r\n");
    r.w("SELECT 0", "+OK\r\n");
    r.w("GET k", "$4\r\nzero\r\n");
    // Another connection starts in db0.
    let mut r2 = Raw::new(&srv);
    r2.w("GET k", "$4\r\nzero\r\n");
    // Out-of-range and non-integer indexes.
    r.w("SELECT 16", DB_RANGE);
    r.w("SELECT -1", DB_RANGE);
    r.w("SELECT abc", NOT_INT);
    r.w("GET k", "$4\r\nzero\r\n");
}

#[test]
fn flushdb_vs_flushall() {
    let srv = start();
    let mut r = Raw::new(&srv);
    for db in [0, 1, 2] {
        r.w(&format!("SELECT {db}"), "+OK\r\n");
        r.w("MSET a 1 b 2", "+OK\r\n");
    }
    // FLUSHDB empties only the selected db.
    r.w("SELECT 1", "+OK\r\n");
    r.w("FLUSHDB", "+OK\r\n");
    r.w("DBSIZE", ":0\r\n");
    r.w("SELECT 0", "+OK\r\n");
    r.w("DBSIZE", ":2\r\n");
    // ASYNC / SYNC are accepted; anything else is a syntax error.
    r.w("FLUSHDB ASYNC", "+OK\r\n");
    r.w("DBSIZE", ":0\r\n");
    r.w("FLUSHDB FOO", "-ERR syntax error\r\n");
    r.w("FLUSHALL SYNC EXTRA", "-ERR syntax error\r\n");
    r.w("SELECT 2", "+OK\r\n");
    r.w("DBSIZE", ":2\r\n");
    // FLUSHALL empties every db.
    r.w("SELECT 0", "+OK\r\n");
    r.w("SET c 3", "+OK\r\n");
    r.w("FLUSHALL", "+OK\r\n");
    r.w("DBSIZE", ":0\r\n");
    r.w("SELECT 2", "+OK\r\n");
    r.w("DBSIZE", ":0\r\n");
    // Keys written after a flush are visible.
    r.w("SET d 4", "+OK\r\n");
    r.w("GET d", "$1\r\n4\r\n");
}

#[test]
fn info_keyspace_line_format() {
    let srv = start();
    let mut con = srv.client();
    // Empty: no db lines at all.
    let text: String = q(&mut con, "INFO keyspace");
    assert_eq!(text.trim_end(), "# Keyspace");
    let _: () = q(&mut con, "MSET a 1 b 2 c 3");
    let _: () = q(&mut con, "EXPIRE a 100");
    let _: () = q(&mut con, "SELECT 3");
    let _: () = q(&mut con, "MSET x 1 y 2");
    let text: String = q(&mut con, "INFO keyspace");
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "# Keyspace");
    assert_eq!(lines.len(), 3, "{text:?}");
    // db0:keys=N,expires=M,avg_ttl=T with T the average TTL in ms.
    let db0 = lines[1].strip_prefix("db0:").expect("db0 line");
    let fields: HashMap<&str, &str> = db0.split(',').filter_map(|f| f.split_once('=')).collect();
    assert_eq!(db0.split(',').count(), 3);
    assert_eq!(fields["keys"], "3");
    assert_eq!(fields["expires"], "1");
    let avg: u64 = fields["avg_ttl"].parse().unwrap();
    assert!(avg > 90_000 && avg <= 100_000, "avg_ttl {avg}");
    // Databases in order; one without TTLs has avg_ttl=0.
    assert_eq!(lines[2], "db3:keys=2,expires=0,avg_ttl=0");
}

/// A write whose expiry is already in the past leaves no key behind (as in
/// Redis), and EXPIRE XX LT is one atomic condition.
#[test]
fn past_expiry_on_write_removes_the_key_and_xx_lt_is_atomic() {
    let srv = start();
    let mut con = srv.client();
    let _: () = redis::cmd("SET")
        .arg("gone")
        .arg("v")
        .arg("PXAT")
        .arg(1)
        .query(&mut con)
        .unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(n, 0, "an already-expired SET must not leave a key");
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    // XX LT on a key without TTL: no TTL to lower, nothing set.
    let r: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(100)
        .arg("XX")
        .arg("LT")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, 0);
    let _: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(100)
        .query(&mut con)
        .unwrap();
    let r: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(50)
        .arg("XX")
        .arg("LT")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, 1);
    let r: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(80)
        .arg("XX")
        .arg("LT")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, 0);
}

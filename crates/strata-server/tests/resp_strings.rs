//! String commands against the real server: every option and edge case,
//! with Redis 7 as the reference. Normal flows use the `redis` crate; error
//! texts and wire-level details are checked byte for byte on raw sockets.

mod common;
use common::raw::Raw;
use common::*;

use redis::Value;

fn get(con: &mut redis::Connection, key: &[u8]) -> Option<Vec<u8>> {
    redis::cmd("GET").arg(key).query(con).unwrap()
}

fn pttl(con: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(con).unwrap()
}

#[test]
fn get_set_are_binary_safe() {
    let srv = start();
    let mut con = srv.client();
    // Keys and values may hold NUL, CR, LF and any byte; the empty value is
    // a value, and the empty key is a key.
    let cases: &[(&[u8], &[u8])] = &[
        (b"plain", b"value"),
        (b"k\0ey", b"v\0al\0"),
        (b"crlf\r\nkey", b"line1\r\nline2\r\n"),
        (b"\xff\xfe\x00", b"\x00\x01\x02\xff"),
        (b"empty-value", b""),
        (b"", b"empty key"),
    ];
    for (k, v) in cases {
        let _: () = redis::cmd("SET").arg(*k).arg(*v).query(&mut con).unwrap();
    }
    for (k, v) in cases {
        assert_eq!(get(&mut con, k).as_deref(), Some(*v), "key {k:?}");
        let n: i64 = redis::cmd("STRLEN").arg(*k).query(&mut con).unwrap();
        assert_eq!(n as usize, v.len());
    }
    // A missing key is a nil (RESP2 `$-1`).
    let mut raw = Raw::new(&srv);
    raw.expect(&[b"GET", b"missing"], b"$-1\r\n");
    raw.expect(&[b"GET", b"empty-value"], b"$0\r\n\r\n");
    raw.expect(&[b"GET", b"crlf\r\nkey"], b"$14\r\nline1\r\nline2\r\n\r\n");
    // A large value round-trips intact.
    let big = value_for("big", 1, 300_000);
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut con)
        .unwrap();
    assert_eq!(get(&mut con, b"big"), Some(big));
    // Command names are case-insensitive.
    raw.expect(&[b"gEt", b"plain"], b"$5\r\nvalue\r\n");
}

#[test]
fn set_nx_xx_get_combinations() {
    let srv = start();
    let mut raw = Raw::new(&srv);
    // (command, reply, value of k afterwards)
    let steps: &[(&str, &str, Option<&str>)] = &[
        // NX on a missing key sets it.
        ("SET k v1 NX", "+OK\r\n", Some("v1")),
        // NX on an existing key does nothing and replies nil.
        ("SET k v2 NX", "$-1\r\n", Some("v1")),
        // XX on an existing key sets it.
        ("SET k v3 XX", "+OK\r\n", Some("v3")),
        // GET returns the old value and sets.
        ("SET k v4 GET", "$2\r\nv3\r\n", Some("v4")),
        // NX GET on an existing key: old value, no write (Redis 7).
        ("SET k v5 NX GET", "$2\r\nv4\r\n", Some("v4")),
        // XX GET on an existing key: old value, write.
        ("SET k v6 XX GET", "$2\r\nv4\r\n", Some("v6")),
        // Options are case-insensitive and may repeat.
        ("SET k v7 xx Xx", "+OK\r\n", Some("v7")),
        ("DEL k", ":1\r\n", None),
        // XX on a missing key: nil, nothing created.
        ("SET k v8 XX", "$-1\r\n", None),
        // XX GET on a missing key: nil, nothing created.
        ("SET k v9 XX GET", "$-1\r\n", None),
        // NX GET on a missing key: nil, created.
        ("SET k v10 NX GET", "$-1\r\n", Some("v10")),
        // GET on a missing key with no condition: nil, created.
        ("SET k2 w GET", "$-1\r\n", Some("v10")),
        // NX and XX together are a syntax error.
        ("SET k x NX XX", "-ERR syntax error\r\n", Some("v10")),
        ("SET k x XX NX", "-ERR syntax error\r\n", Some("v10")),
        // Unknown options are a syntax error.
        ("SET k x FOO", "-ERR syntax error\r\n", Some("v10")),
    ];
    for (cmd, reply, after) in steps {
        raw.w(cmd, reply);
        let want = match after {
            Some(v) => format!("${}\r\n{}\r\n", v.len(), v),
            None => "$-1\r\n".to_string(),
        };
        raw.w("GET k", &want);
    }
    raw.w("GET k2", "$1\r\nw\r\n");
    // Wrong arity.
    raw.w(
        "SET k",
        "-ERR wrong number of arguments for 'set' command\r\n",
    );
}

#[test]
fn set_expire_options_and_errors() {
    let srv = start();
    let mut con = srv.client();
    let mut raw = Raw::new(&srv);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let in_100s = now_ms / 1000 + 100;
    // Each option sets a TTL of about the given amount.
    let cases: Vec<(String, i64)> = vec![
        ("EX 100".into(), 100_000),
        ("PX 100000".into(), 100_000),
        (format!("EXAT {in_100s}"), in_100s * 1000 - now_ms),
        (format!("PXAT {}", now_ms + 100_000), 100_000),
    ];
    for (opt, want) in &cases {
        raw.w(&format!("SET k v {opt}"), "+OK\r\n");
        let t = pttl(&mut con, "k");
        assert!(t > 0 && t <= *want && t > want - 5_000, "{opt}: pttl {t}");
    }
    // A plain SET clears the TTL.
    raw.w("SET k v", "+OK\r\n");
    assert_eq!(pttl(&mut con, "k"), -1);
    // KEEPTTL keeps it.
    raw.w("SET k v EX 100", "+OK\r\n");
    raw.w("SET k v2 KEEPTTL", "+OK\r\n");
    assert!(pttl(&mut con, "k") > 90_000);
    raw.w("GET k", "$2\r\nv2\r\n");
    // KEEPTTL on a missing key: no TTL.
    raw.w("SET fresh v KEEPTTL", "+OK\r\n");
    assert_eq!(pttl(&mut con, "fresh"), -1);
    // EXAT / PXAT in the past: the key is gone at once.
    raw.w("SET past v EXAT 1", "+OK\r\n");
    raw.w("GET past", "$-1\r\n");
    raw.w("SET past v PXAT 1000", "+OK\r\n");
    raw.w("EXISTS past", ":0\r\n");
    let invalid = "-ERR invalid expire time in 'set' command\r\n";
    let errors: &[(&str, &str)] = &[
        // Zero and negative times are invalid.
        ("SET k v EX 0", invalid),
        ("SET k v PX 0", invalid),
        ("SET k v EX -1", invalid),
        ("SET k v PXAT 0", invalid),
        ("SET k v EXAT -5", invalid),
        // Seconds that overflow once converted to ms are invalid.
        ("SET k v EX 9223372036854775807", invalid),
        // A non-integer time.
        (
            "SET k v EX abc",
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            "SET k v PX 1.5",
            "-ERR value is not an integer or out of range\r\n",
        ),
        // Two expiry options, or an expiry with KEEPTTL, are a syntax error.
        ("SET k v EX 10 PX 100", "-ERR syntax error\r\n"),
        ("SET k v EX 10 KEEPTTL", "-ERR syntax error\r\n"),
        ("SET k v KEEPTTL EX 10", "-ERR syntax error\r\n"),
        // An expiry option without its value.
        ("SET k v EX", "-ERR syntax error\r\n"),
        ("SET k v NX PX", "-ERR syntax error\r\n"),
    ];
    for (cmd, reply) in errors {
        raw.w(cmd, reply);
    }
    // None of the failed SETs changed the value.
    raw.w("GET k", "$2\r\nv2\r\n");
}

#[test]
fn set_with_ttl_expires_lazily() {
    let srv = start();
    let mut con = srv.client();
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(50)
        .query(&mut con)
        .unwrap();
    // PX 50 then poll GET until nil.
    wait_until("k expired", || get(&mut con, b"k").is_none());
    assert_eq!(pttl(&mut con, "k"), -2);
}

#[test]
fn setnx_setex_psetex_getset_getdel() {
    let srv = start();
    let mut con = srv.client();
    let mut raw = Raw::new(&srv);
    // SETNX: 1 when created, 0 when the key exists.
    raw.w("SETNX k a", ":1\r\n");
    raw.w("SETNX k b", ":0\r\n");
    raw.w("GET k", "$1\r\na\r\n");
    // SETEX / PSETEX set value and TTL.
    raw.w("SETEX s 100 v", "+OK\r\n");
    assert!(pttl(&mut con, "s") > 90_000);
    raw.w("PSETEX p 100000 v", "+OK\r\n");
    assert!(pttl(&mut con, "p") > 90_000);
    // Zero or negative times are invalid; the error names the command.
    raw.w(
        "SETEX s 0 v",
        "-ERR invalid expire time in 'setex' command\r\n",
    );
    raw.w(
        "PSETEX p -10 v",
        "-ERR invalid expire time in 'psetex' command\r\n",
    );
    raw.w(
        "SETEX s abc v",
        "-ERR value is not an integer or out of range\r\n",
    );
    raw.w(
        "SETEX s 10",
        "-ERR wrong number of arguments for 'setex' command\r\n",
    );
    // GETSET returns the old value, sets the new one and clears the TTL.
    raw.w("GETSET s new", "$1\r\nv\r\n");
    assert_eq!(pttl(&mut con, "s"), -1);
    raw.w("GETSET missing x", "$-1\r\n");
    raw.w("GET missing", "$1\r\nx\r\n");
    // GETDEL returns the value and deletes the key; nil when missing.
    raw.w("GETDEL k", "$1\r\na\r\n");
    raw.w("EXISTS k", ":0\r\n");
    raw.w("GETDEL k", "$-1\r\n");
}

#[test]
fn getex_options() {
    let srv = start();
    let mut con = srv.client();
    let mut raw = Raw::new(&srv);
    raw.w("SET k v", "+OK\r\n");
    // No option: a plain GET, TTL untouched.
    raw.w("GETEX k", "$1\r\nv\r\n");
    assert_eq!(pttl(&mut con, "k"), -1);
    // EX / PX / EXAT / PXAT set the TTL.
    raw.w("GETEX k EX 100", "$1\r\nv\r\n");
    assert!(pttl(&mut con, "k") > 90_000);
    raw.w("GETEX k PX 200000", "$1\r\nv\r\n");
    assert!(pttl(&mut con, "k") > 190_000);
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    raw.w(&format!("GETEX k EXAT {}", now_s + 300), "$1\r\nv\r\n");
    assert!(pttl(&mut con, "k") > 290_000);
    raw.w(
        &format!("GETEX k PXAT {}", (now_s + 400) * 1000),
        "$1\r\nv\r\n",
    );
    assert!(pttl(&mut con, "k") > 390_000);
    // PERSIST removes it.
    raw.w("GETEX k PERSIST", "$1\r\nv\r\n");
    assert_eq!(pttl(&mut con, "k"), -1);
    // A missing key is nil, whatever the option.
    raw.w("GETEX missing EX 10", "$-1\r\n");
    raw.w("EXISTS missing", ":0\r\n");
    let errors: &[(&str, &str)] = &[
        // Zero / negative times are invalid, naming getex.
        (
            "GETEX k EX 0",
            "-ERR invalid expire time in 'getex' command\r\n",
        ),
        (
            "GETEX k PX -1",
            "-ERR invalid expire time in 'getex' command\r\n",
        ),
        (
            "GETEX k EX x",
            "-ERR value is not an integer or out of range\r\n",
        ),
        // Two options, an unknown option, or a missing value: syntax error.
        ("GETEX k EX 10 PX 10", "-ERR syntax error\r\n"),
        ("GETEX k PERSIST EX 10", "-ERR syntax error\r\n"),
        ("GETEX k EX 10 PERSIST", "-ERR syntax error\r\n"),
        ("GETEX k FOO", "-ERR syntax error\r\n"),
        ("GETEX k EX", "-ERR syntax error\r\n"),
    ];
    for (cmd, reply) in errors {
        raw.w(cmd, reply);
    }
    assert_eq!(pttl(&mut con, "k"), -1);
    // EXAT in the past deletes the key after returning it.
    raw.w("GETEX k EXAT 1", "$1\r\nv\r\n");
    raw.w("GET k", "$-1\r\n");
}

#[test]
fn mget_mset_msetnx() {
    let srv = start();
    let mut raw = Raw::new(&srv);
    raw.w("MSET a 1 b 2 c 3", "+OK\r\n");
    // MGET: values in order, nil for missing keys.
    raw.w(
        "MGET a missing c b",
        "*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n$1\r\n2\r\n",
    );
    // MSET with a duplicated key: the last value wins.
    raw.w("MSET d x d y", "+OK\r\n");
    raw.w("GET d", "$1\r\ny\r\n");
    // MSET clears TTLs of overwritten keys.
    raw.w("SET t v EX 100", "+OK\r\n");
    raw.w("MSET t w", "+OK\r\n");
    raw.w("TTL t", ":-1\r\n");
    // MSETNX: all or nothing.
    raw.w("MSETNX n1 x n2 y", ":1\r\n");
    raw.w("MSETNX n3 x n1 z", ":0\r\n");
    raw.w("MGET n1 n2 n3", "*3\r\n$1\r\nx\r\n$1\r\ny\r\n$-1\r\n");
    // Odd argument counts are arity errors.
    raw.w(
        "MSET a 1 b",
        "-ERR wrong number of arguments for 'mset' command\r\n",
    );
    raw.w(
        "MSETNX a",
        "-ERR wrong number of arguments for 'msetnx' command\r\n",
    );
    raw.w(
        "MGET",
        "-ERR wrong number of arguments for 'mget' command\r\n",
    );
}

#[test]
fn append_and_strlen() {
    let srv = start();
    let mut con = srv.client();
    let mut raw = Raw::new(&srv);
    // APPEND creates a missing key and returns the new length.
    raw.w("APPEND k Hello", ":5\r\n");
    raw.expect(&[b"APPEND", b"k", b" W\0rld"], b":11\r\n");
    raw.expect(&[b"GET", b"k"], b"$11\r\nHello W\0rld\r\n");
    // Appending nothing returns the length unchanged.
    raw.expect(&[b"APPEND", b"k", b""], b":11\r\n");
    // APPEND keeps the TTL.
    raw.w("EXPIRE k 100", ":1\r\n");
    raw.w("APPEND k !", ":12\r\n");
    assert!(pttl(&mut con, "k") > 90_000);
    // APPEND to an integer makes a longer string.
    raw.w("SET n 12", "+OK\r\n");
    raw.w("APPEND n 34", ":4\r\n");
    raw.w("INCR n", ":1235\r\n");
    // STRLEN of a missing key is 0.
    raw.w("STRLEN missing", ":0\r\n");
    raw.w("STRLEN k", ":12\r\n");
}

#[test]
fn getrange_and_substr() {
    let srv = start();
    let mut raw = Raw::new(&srv);
    raw.w("SET s This_is_a_string", "+OK\r\n");
    // (start, end, result)
    let cases: &[(&str, &str, &str)] = &[
        ("0", "3", "This"),
        // Negative indices count from the end.
        ("-3", "-1", "ing"),
        ("0", "-1", "This_is_a_string"),
        // The end is clamped to the length.
        ("10", "100", "string"),
        // start > end is empty.
        ("5", "3", ""),
        // Both negative with start > end is empty.
        ("-1", "-5", ""),
        // A negative start before the beginning is clamped to 0.
        ("-100", "3", "This"),
        // A start past the end is empty.
        ("100", "200", ""),
        ("0", "0", "T"),
        ("-1", "-1", "g"),
    ];
    for (s, e, want) in cases {
        let reply = format!("${}\r\n{}\r\n", want.len(), want);
        raw.w(&format!("GETRANGE s {s} {e}"), &reply);
        // SUBSTR is an alias.
        raw.w(&format!("SUBSTR s {s} {e}"), &reply);
    }
    // A missing key is the empty string.
    raw.w("GETRANGE missing 0 -1", "$0\r\n\r\n");
    // Indices must be integers.
    raw.w(
        "GETRANGE s a 1",
        "-ERR value is not an integer or out of range\r\n",
    );
    raw.w(
        "GETRANGE s 0 1.5",
        "-ERR value is not an integer or out of range\r\n",
    );
}

#[test]
fn setrange_padding_and_errors() {
    let srv = start();
    let mut raw = Raw::new(&srv);
    // On a missing key, the gap before the offset is zero-padded.
    raw.w("SETRANGE k 5 Redis", ":10\r\n");
    raw.w("GET k", "$10\r\n\0\0\0\0\0Redis\r\n");
    // Overwrite in the middle.
    raw.w("SET h Hello_World", "+OK\r\n");
    raw.w("SETRANGE h 6 Redis", ":11\r\n");
    raw.w("GET h", "$11\r\nHello_Redis\r\n");
    // Extend past the end.
    raw.w("SETRANGE h 11 !!", ":13\r\n");
    raw.w("GET h", "$13\r\nHello_Redis!!\r\n");
    // An empty patch on a missing key creates nothing and returns 0.
    raw.expect(&[b"SETRANGE", b"none", b"3", b""], b":0\r\n");
    raw.w("EXISTS none", ":0\r\n");
    // An empty patch on an existing key returns its length.
    raw.expect(&[b"SETRANGE", b"h", b"100", b""], b":13\r\n");
    // SETRANGE keeps the TTL.
    raw.w("EXPIRE h 100", ":1\r\n");
    raw.w("SETRANGE h 0 J", ":13\r\n");
    raw.w("TTL h", ":100\r\n");
    // Negative offsets are out of range.
    raw.w("SETRANGE k -1 x", "-ERR offset is out of range\r\n");
    // Non-integer offsets.
    raw.w(
        "SETRANGE k abc x",
        "-ERR value is not an integer or out of range\r\n",
    );
    // Offsets making the string longer than proto-max-bulk-len (512mb).
    raw.w(
        "SETRANGE k 536870912 x",
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n",
    );
    raw.w("STRLEN k", ":10\r\n");
}

#[test]
fn incr_decr_family() {
    let srv = start();
    let mut raw = Raw::new(&srv);
    let nan = "-ERR value is not an integer or out of range\r\n";
    let overflow = "-ERR increment or decrement would overflow\r\n";
    let steps: &[(&str, &str)] = &[
        // A missing key counts as 0.
        ("INCR c", ":1\r\n"),
        ("INCRBY c 10", ":11\r\n"),
        ("DECR c", ":10\r\n"),
        ("DECRBY c 15", ":-5\r\n"),
        ("INCRBY c -5", ":-10\r\n"),
        ("DECRBY c -10", ":0\r\n"),
        ("GET c", "$1\r\n0\r\n"),
        // Non-integer values.
        ("SET s abc", "+OK\r\n"),
        ("INCR s", nan),
        ("SET s 1.5", "+OK\r\n"),
        ("INCR s", nan),
        ("SET s 007", "+OK\r\n"),
        ("INCR s", nan),
        ("SET s +1", "+OK\r\n"),
        ("DECR s", nan),
        ("SET s 99999999999999999999", "+OK\r\n"),
        ("INCR s", nan),
        // Non-integer increments.
        ("INCRBY c abc", nan),
        ("INCRBY c 1.0", nan),
        ("DECRBY c x", nan),
        // Overflow at i64::MAX / i64::MIN; the value is unchanged.
        ("SET m 9223372036854775807", "+OK\r\n"),
        ("INCR m", overflow),
        ("INCRBY m 1", overflow),
        ("GET m", "$19\r\n9223372036854775807\r\n"),
        ("SET m -9223372036854775808", "+OK\r\n"),
        ("DECR m", overflow),
        ("DECRBY m 1", overflow),
        ("INCRBY m -1", overflow),
        ("INCRBY m 9223372036854775807", ":-1\r\n"),
        // DECRBY of i64::MIN cannot be negated (Redis 7 wording).
        (
            "DECRBY c -9223372036854775808",
            "-ERR decrement would overflow\r\n",
        ),
        // Arity.
        (
            "INCR",
            "-ERR wrong number of arguments for 'incr' command\r\n",
        ),
        (
            "INCRBY c",
            "-ERR wrong number of arguments for 'incrby' command\r\n",
        ),
    ];
    for (cmd, reply) in steps {
        raw.w(cmd, reply);
    }
    // Spaces around the number make it a non-integer.
    raw.expect(&[b"SET", b"s", b" 1"], b"+OK\r\n");
    raw.w("INCR s", nan);
    // INCR keeps the TTL.
    raw.w("SET t 1 EX 100", "+OK\r\n");
    raw.w("INCR t", ":2\r\n");
    raw.w("TTL t", ":100\r\n");
}

#[test]
fn incrbyfloat_formatting() {
    let srv = start();
    let mut raw = Raw::new(&srv);
    let not_float = "-ERR value is not a valid float\r\n";
    let bulk = |s: &str| format!("${}\r\n{}\r\n", s.len(), s);
    let steps: Vec<(&str, String)> = vec![
        // The Redis docs example.
        ("SET f 10.50", "+OK\r\n".into()),
        ("INCRBYFLOAT f 0.1", bulk("10.6")),
        ("INCRBYFLOAT f -5", bulk("5.6")),
        // Exponent input; integral results print without a point.
        ("SET e 5.0e3", "+OK\r\n".into()),
        ("INCRBYFLOAT e 0", bulk("5000")),
        ("INCRBYFLOAT e 2.0e2", bulk("5200")),
        // A missing key counts as 0.
        ("INCRBYFLOAT n 3.0", bulk("3")),
        ("INCRBYFLOAT n 1.5", bulk("4.5")),
        ("GET n", bulk("4.5")),
        // Integers work as floats.
        ("SET i 10", "+OK\r\n".into()),
        ("INCRBYFLOAT i 0.5", bulk("10.5")),
        // Small values print without an exponent.
        ("INCRBYFLOAT z 0.0001", bulk("0.0001")),
        // Errors: bad increment, bad stored value, infinite result.
        ("INCRBYFLOAT f abc", not_float.into()),
        ("INCRBYFLOAT f nan", not_float.into()),
        ("SET s abc", "+OK\r\n".into()),
        ("INCRBYFLOAT s 1", not_float.into()),
        (
            "INCRBYFLOAT f inf",
            "-ERR increment would produce NaN or Infinity\r\n".into(),
        ),
        ("GET f", bulk("5.6")),
    ];
    for (cmd, reply) in steps {
        raw.w(cmd, &reply);
    }
    // INCRBYFLOAT keeps the TTL.
    raw.w("EXPIRE f 100", ":1\r\n");
    raw.w("INCRBYFLOAT f 1", &bulk("6.6"));
    raw.w("TTL f", ":100\r\n");
}

#[test]
fn resp3_null_for_missing_get() {
    let srv = start();
    let mut raw = Raw::new(&srv);
    // HELLO 3 answers with a map of 7 fields; read it whole first.
    raw.send(&[b"HELLO", b"3"]);
    match raw.frame() {
        strata_protocol::Frame::Map(m) => assert_eq!(m.len(), 7),
        other => panic!("HELLO 3 did not answer a map: {other:?}"),
    }
    // GET, MGET, GETDEL, SET NX misses: RESP3 null `_`.
    raw.w("GET missing", "_\r\n");
    raw.w("MGET missing", "*1\r\n_\r\n");
    raw.w("GETDEL missing", "_\r\n");
    raw.w("SET k v", "+OK\r\n");
    raw.w("SET k v NX", "_\r\n");
    raw.w("GET k", "$1\r\nv\r\n");
    // Back to RESP2: `$-1` again.
    raw.w("HELLO 2", "*14\r\n");
    let mut con = srv.client();
    let v: Value = redis::cmd("GET").arg("missing").query(&mut con).unwrap();
    assert_eq!(v, Value::Nil);
}

//! Sorted-set commands against the real server, with redis-server 7.0 as
//! the reference: every reply below was taken from redis-server 7.0.15
//! (exact bytes, RESP2 and RESP3: error texts, the order in which
//! arguments are checked, `%.17g` scores, nested WITHSCORES pairs).
//! Random replies (ZRANDMEMBER, ZSCAN of a big set) are checked by their
//! properties, and one test runs sorted sets that live on flash against a
//! model.

mod common;
use common::raw::Raw;
use common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap, HashSet};
use strata_protocol::Frame;

/// Switches a raw connection to RESP3 (HELLO 3; its map is skipped).
fn resp3(r: &mut Raw) {
    r.send(&[b"HELLO", b"3"]);
    let _ = r.frame();
}

/// Runs a command given as owned arguments and returns the reply frame.
fn call(r: &mut Raw, args: &[String]) -> Frame {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    r.send(&a);
    r.frame()
}

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_string).collect()
}

fn bulk(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8(b.to_vec()).unwrap(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

fn array(f: Frame) -> Vec<Frame> {
    match f {
        Frame::Array(v) => v,
        other => panic!("not an array: {other:?}"),
    }
}

/// ZADD replies the number of new members; CH adds the members whose score changed.
#[test]
fn zadd_counts_added_members_and_ch_counts_changed_ones() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c", ":3\r\n");
    r.w("ZADD z 1 a 5 b 4 d", ":1\r\n");
    r.w("ZADD z CH 1 a 6 b 7 e", ":2\r\n");
    r.w("ZADD z ch 6 b", ":0\r\n");
    r.w("ZADD z 1 x 2 x 3 x", ":1\r\n");
    r.w("ZSCORE z x", "$1\r\n3\r\n");
    r.w("ZRANGE z 0 -1 WITHSCORES", "*12\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nx\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\nb\r\n$1\r\n6\r\n$1\r\ne\r\n$1\r\n7\r\n");
}

/// NX only adds, XX only updates, GT/LT update only upward/downward and still add new members.
#[test]
fn zadd_nx_xx_gt_lt_update_rules() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 5 a 5 b", ":2\r\n");
    r.w("ZADD z NX 1 a 1 c", ":1\r\n");
    r.w("ZADD z XX CH 2 a 2 d", ":1\r\n");
    r.w("ZADD z GT CH 1 a 9 b 3 e", ":2\r\n");
    r.w("ZADD z LT CH 0 a 10 b 4 f", ":2\r\n");
    r.w("ZADD z XX GT CH 100 a 100 zz", ":1\r\n");
    r.w("ZADD z xx lt ch -1 b", ":1\r\n");
    r.w("ZRANGE z 0 -1 WITHSCORES", "*10\r\n$1\r\nb\r\n$2\r\n-1\r\n$1\r\nc\r\n$1\r\n1\r\n$1\r\ne\r\n$1\r\n3\r\n$1\r\nf\r\n$1\r\n4\r\n$1\r\na\r\n$3\r\n100\r\n");
}

/// Redis's texts, in Redis's order: pair count, NX+XX, GT/LT/NX, INCR pairs, then each score, then the key's type.
#[test]
fn zadd_option_conflicts_and_syntax_errors_change_nothing() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a", ":1\r\n");
    r.w(
        "ZADD z NX XX 1 b",
        "-ERR XX and NX options at the same time are not compatible\r\n",
    );
    r.w(
        "ZADD z XX NX 1 b",
        "-ERR XX and NX options at the same time are not compatible\r\n",
    );
    r.w(
        "ZADD z GT LT 1 b",
        "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n",
    );
    r.w(
        "ZADD z GT NX 1 b",
        "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n",
    );
    r.w(
        "ZADD z NX LT 1 b",
        "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n",
    );
    r.w(
        "ZADD z INCR 1 b 2 c",
        "-ERR INCR option supports a single increment-element pair\r\n",
    );
    r.w("ZADD z NX XX 1", "-ERR syntax error\r\n");
    r.w("ZADD z 1 b 2", "-ERR syntax error\r\n");
    r.w("ZADD z FOO 1 b", "-ERR syntax error\r\n");
    r.w(
        "ZADD z NX",
        "-ERR wrong number of arguments for 'zadd' command\r\n",
    );
    r.w("ZADD z 1 b abc c", "-ERR value is not a valid float\r\n");
    r.w("ZADD z nan b", "-ERR value is not a valid float\r\n");
    r.w("ZADD z 1e400 b", "-ERR value is not a valid float\r\n");
    r.w("ZADD z 1e-400 b", "-ERR value is not a valid float\r\n");
    r.w("ZADD z inc b", "-ERR value is not a valid float\r\n");
    r.w("ZADD z 1x b", "-ERR value is not a valid float\r\n");
    r.w("ZRANGE z 0 -1 WITHSCORES", "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
    r.w("SET s v", "+OK\r\n");
    r.w(
        "ZADD s 1 a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w("ZADD s abc a", "-ERR value is not a valid float\r\n");
    r.w(
        "ZADD s NX XX 1 a",
        "-ERR XX and NX options at the same time are not compatible\r\n",
    );
    r.w(
        "ZADD s 1",
        "-ERR wrong number of arguments for 'zadd' command\r\n",
    );
    r.w("GET s", "$1\r\nv\r\n");
}

/// XX (or XX INCR) on a missing key replies 0 (or nil) and leaves no key behind.
#[test]
fn zadd_xx_on_a_missing_key_creates_nothing() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z XX 1 a", ":0\r\n");
    r.w("ZADD z XX INCR 1 a", "$-1\r\n");
    r.w("ZADD z XX CH GT 1 a 2 b", ":0\r\n");
    r.w("EXISTS z", ":0\r\n");
    r.w("ZADD z GT 1 a", ":1\r\n");
    r.w("ZADD z LT CH 2 b", ":1\r\n");
    r.w(
        "ZRANGE z 0 -1 WITHSCORES",
        "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n",
    );
}

/// ZADD INCR and ZINCRBY reply the new score; an INCR that NX/XX/GT/LT skips replies nil.
#[test]
fn zadd_incr_replies_the_new_score_or_nil() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z INCR 1.5 a", "$3\r\n1.5\r\n");
    r.w("ZADD z INCR 1 a", "$3\r\n2.5\r\n");
    r.w("ZINCRBY z 10 a", "$4\r\n12.5\r\n");
    r.w("ZINCRBY z -0.1 a", "$4\r\n12.4\r\n");
    r.w("ZINCRBY z 1 new", "$1\r\n1\r\n");
    r.w("ZADD z NX INCR 1 a", "$-1\r\n");
    r.w("ZADD z XX INCR 1 missing", "$-1\r\n");
    r.w("ZADD z GT INCR -1 a", "$-1\r\n");
    r.w("ZADD z LT INCR 1 a", "$-1\r\n");
    r.w("ZADD z GT INCR 0 a", "$-1\r\n");
    r.w("ZADD z LT INCR -1 a", "$4\r\n11.4\r\n");
    r.w("ZADD z CH INCR 0 a", "$4\r\n11.4\r\n");
    r.w("ZINCRBY z abc a", "-ERR value is not a valid float\r\n");
    r.w("ZINCRBY z nan a", "-ERR value is not a valid float\r\n");
    r.w("EXISTS missing", ":0\r\n");
    r.w(
        "ZRANGE z 0 -1 WITHSCORES",
        "*4\r\n$3\r\nnew\r\n$1\r\n1\r\n$1\r\na\r\n$4\r\n11.4\r\n",
    );
    resp3(&mut r);
    r.w("ZADD z INCR 1 a", ",12.4\r\n");
    r.w("ZINCRBY z 0.5 a", ",12.9\r\n");
    r.w("ZADD z NX INCR 1 a", "_\r\n");
    r.w("ZINCRBY z inf a", ",inf\r\n");
}

/// inf + -inf is NaN: `ERR resulting score is not a number (NaN)`, the score stays.
#[test]
fn zadd_incr_to_nan_is_an_error_and_changes_nothing() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z inf a -inf b", ":2\r\n");
    r.w(
        "ZINCRBY z -inf a",
        "-ERR resulting score is not a number (NaN)\r\n",
    );
    r.w(
        "ZADD z INCR inf b",
        "-ERR resulting score is not a number (NaN)\r\n",
    );
    r.w("ZADD z INCR +inf a", "$3\r\ninf\r\n");
    r.w("ZSCORE z a", "$3\r\ninf\r\n");
    r.w("ZSCORE z b", "$4\r\n-inf\r\n");
    r.w("ZINCRBY z 0 a", "$3\r\ninf\r\n");
}

/// Redis 7.0 prints scores with %.17g: bulk strings in RESP2, doubles in RESP3.
#[test]
fn scores_print_as_percent_17g_in_resp2_and_resp3() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1.1 a 2 b inf c -inf d 0.1 e 1e17 f 123456789012345678 g 0.0001 h 0.00001 i 1.5e300 j -2.5 k 5e-324 l 3.0 m 1e16 n", ":14\r\n");
    r.w("ZSCORE z a", "$18\r\n1.1000000000000001\r\n");
    r.w("ZSCORE z b", "$1\r\n2\r\n");
    r.w("ZSCORE z c", "$3\r\ninf\r\n");
    r.w("ZSCORE z d", "$4\r\n-inf\r\n");
    r.w("ZSCORE z e", "$19\r\n0.10000000000000001\r\n");
    r.w("ZSCORE z f", "$5\r\n1e+17\r\n");
    r.w("ZSCORE z g", "$22\r\n1.2345678901234568e+17\r\n");
    r.w("ZSCORE z h", "$6\r\n0.0001\r\n");
    r.w("ZSCORE z i", "$22\r\n1.0000000000000001e-05\r\n");
    r.w("ZSCORE z j", "$23\r\n1.5000000000000001e+300\r\n");
    r.w("ZSCORE z k", "$4\r\n-2.5\r\n");
    r.w("ZSCORE z l", "$23\r\n4.9406564584124654e-324\r\n");
    r.w("ZSCORE z m", "$1\r\n3\r\n");
    r.w("ZSCORE z n", "$17\r\n10000000000000000\r\n");
    r.w(
        "ZMSCORE z a nope c",
        "*3\r\n$18\r\n1.1000000000000001\r\n$-1\r\n$3\r\ninf\r\n",
    );
    r.w("ZRANGE z 0 2 WITHSCORES", "*6\r\n$1\r\nd\r\n$4\r\n-inf\r\n$1\r\nk\r\n$4\r\n-2.5\r\n$1\r\nl\r\n$23\r\n4.9406564584124654e-324\r\n");
    r.w("ZSCAN z 0 MATCH [ace]", "*2\r\n$1\r\n0\r\n*6\r\n$1\r\ne\r\n$19\r\n0.10000000000000001\r\n$1\r\na\r\n$18\r\n1.1000000000000001\r\n$1\r\nc\r\n$3\r\ninf\r\n");
    resp3(&mut r);
    r.w("ZSCORE z a", ",1.1000000000000001\r\n");
    r.w("ZSCORE z c", ",inf\r\n");
    r.w("ZSCORE z d", ",-inf\r\n");
    r.w("ZSCORE z f", ",1e+17\r\n");
    r.w("ZSCORE z nope", "_\r\n");
    r.w(
        "ZMSCORE z a nope c",
        "*3\r\n,1.1000000000000001\r\n_\r\n,inf\r\n",
    );
    r.w("ZRANGE z 0 2 WITHSCORES", "*3\r\n*2\r\n$1\r\nd\r\n,-inf\r\n*2\r\n$1\r\nk\r\n,-2.5\r\n*2\r\n$1\r\nl\r\n,4.9406564584124654e-324\r\n");
    r.w("ZSCAN z 0 MATCH [ace]", "*2\r\n$1\r\n0\r\n*6\r\n$1\r\ne\r\n$19\r\n0.10000000000000001\r\n$1\r\na\r\n$18\r\n1.1000000000000001\r\n$1\r\nc\r\n$3\r\ninf\r\n");
}

/// Scores accept what strtod does (sign, exponent, .5, 5., inf, infinity) but no spaces, NaN, overflow or underflow.
#[test]
fn score_arguments_parse_as_redis_strtod() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w(
        "ZADD z +1 a .5 b 5. c -1.5E+3 d 2e-3 e Infinity f -INF g 0e10 h",
        ":8\r\n",
    );
    r.w("ZRANGE z 0 -1 WITHSCORES", "*16\r\n$1\r\ng\r\n$4\r\n-inf\r\n$1\r\nd\r\n$5\r\n-1500\r\n$1\r\nh\r\n$1\r\n0\r\n$1\r\ne\r\n$5\r\n0.002\r\n$1\r\nb\r\n$3\r\n0.5\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n5\r\n$1\r\nf\r\n$3\r\ninf\r\n");
    r.expect(
        &[b"ZADD", b"z", b" 1", b"x"],
        b"-ERR value is not a valid float\r\n",
    );
    r.expect(
        &[b"ZADD", b"z", b"1 ", b"x"],
        b"-ERR value is not a valid float\r\n",
    );
    r.expect(
        &[b"ZADD", b"z", b"", b"x"],
        b"-ERR value is not a valid float\r\n",
    );
    r.w("ZADD z - x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z 1e x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z infinit x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z -nan x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z --inf x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z -+1 x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z 0x x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z 0x1p x", "-ERR value is not a valid float\r\n");
    r.w("ZADD z 0x1p5000 x", "-ERR value is not a valid float\r\n");
    r.w("ZCARD z", ":8\r\n");
    // Hex floats are floats to strtod.
    r.w("ZADD z 0x10 h1 -0X1.8p1 h2 0x.8 h3 0x1P-2 h4", ":4\r\n");
    r.w("ZRANGE z 0 -1 WITHSCORES", "*24\r\n$1\r\ng\r\n$4\r\n-inf\r\n$1\r\nd\r\n$5\r\n-1500\r\n$2\r\nh2\r\n$2\r\n-3\r\n$1\r\nh\r\n$1\r\n0\r\n$1\r\ne\r\n$5\r\n0.002\r\n$2\r\nh4\r\n$4\r\n0.25\r\n$1\r\nb\r\n$3\r\n0.5\r\n$2\r\nh3\r\n$3\r\n0.5\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n5\r\n$2\r\nh1\r\n$2\r\n16\r\n$1\r\nf\r\n$3\r\ninf\r\n");
    r.w("ZINCRBY z 0x10 h1", "$2\r\n32\r\n");
    r.w("ZCOUNT z (0x1 0x20", ":2\r\n");
    r.w(
        "ZRANGEBYSCORE z -0x2 0x.8",
        "*5\r\n$1\r\nh\r\n$1\r\ne\r\n$2\r\nh4\r\n$1\r\nb\r\n$2\r\nh3\r\n",
    );
    r.w("ZUNION 1 z WEIGHTS 0x2 WITHSCORES", "*24\r\n$1\r\ng\r\n$4\r\n-inf\r\n$1\r\nd\r\n$5\r\n-3000\r\n$2\r\nh2\r\n$2\r\n-6\r\n$1\r\nh\r\n$1\r\n0\r\n$1\r\ne\r\n$21\r\n0.0040000000000000001\r\n$2\r\nh4\r\n$3\r\n0.5\r\n$1\r\nb\r\n$1\r\n1\r\n$2\r\nh3\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nc\r\n$2\r\n10\r\n$2\r\nh1\r\n$2\r\n64\r\n$1\r\nf\r\n$3\r\ninf\r\n");
}

/// A listpack stores -0 as 0 (the INCR reply still shows -0).
#[test]
fn negative_zero_is_stored_as_zero_in_a_small_sorted_set() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z -0 a", ":1\r\n");
    r.w("ZSCORE z a", "$1\r\n0\r\n");
    r.w("ZINCRBY z -0 b", "$2\r\n-0\r\n");
    r.w("ZSCORE z b", "$1\r\n0\r\n");
    r.w("ZADD z 0 a", ":0\r\n");
    r.w("ZADD z CH -0 a", ":0\r\n");
}

/// ZREM counts removed members; an emptied sorted set is deleted; missing keys read as empty.
#[test]
fn zrem_zcard_zscore_zmscore() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c", ":3\r\n");
    r.w("ZREM z a x a", ":1\r\n");
    r.w("ZREM z x y", ":0\r\n");
    r.w("ZCARD z", ":2\r\n");
    r.w("ZSCORE z b", "$1\r\n2\r\n");
    r.w("ZSCORE z a", "$-1\r\n");
    r.w("ZMSCORE z a b c", "*3\r\n$-1\r\n$1\r\n2\r\n$1\r\n3\r\n");
    r.w("ZREM z b c", ":2\r\n");
    r.w("EXISTS z", ":0\r\n");
    r.w("ZREM z b", ":0\r\n");
    r.w("ZCARD z", ":0\r\n");
    r.w("ZSCORE z a", "$-1\r\n");
    r.w("ZMSCORE z a b", "*2\r\n$-1\r\n$-1\r\n");
    resp3(&mut r);
    r.w("ZSCORE z a", "_\r\n");
    r.w("ZMSCORE z a b", "*2\r\n_\r\n_\r\n");
}

/// Ties break by member bytes; missing member or key is nil.
#[test]
fn zrank_and_zrevrank_order_by_score_then_member() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 3 c 1 a 3 b 2 z -1 y", ":5\r\n");
    r.w("ZRANK z y", ":0\r\n");
    r.w("ZRANK z a", ":1\r\n");
    r.w("ZRANK z b", ":3\r\n");
    r.w("ZRANK z c", ":4\r\n");
    r.w("ZREVRANK z c", ":0\r\n");
    r.w("ZREVRANK z y", ":4\r\n");
    r.w("ZRANK z nope", "$-1\r\n");
    r.w("ZREVRANK z nope", "$-1\r\n");
    r.w("ZRANK missing a", "$-1\r\n");
    resp3(&mut r);
    r.w("ZRANK z nope", "_\r\n");
    r.w("ZREVRANK missing a", "_\r\n");
}

/// Inclusive and `(` exclusive bounds, -inf/+inf, reversed ranges; strtod quirks (`(` alone is 0, leading spaces pass).
#[test]
fn zcount_score_bounds() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c 3 d 4 e inf f -inf g", ":7\r\n");
    r.w("ZCOUNT z -inf +inf", ":7\r\n");
    r.w("ZCOUNT z (1 3", ":3\r\n");
    r.w("ZCOUNT z 1 (3", ":2\r\n");
    r.w("ZCOUNT z (3 3", ":0\r\n");
    r.w("ZCOUNT z 3 3", ":2\r\n");
    r.w("ZCOUNT z 4 1", ":0\r\n");
    r.w("ZCOUNT z (-inf (inf", ":5\r\n");
    r.w("ZCOUNT z inf inf", ":1\r\n");
    r.w("ZCOUNT z -inf -inf", ":1\r\n");
    r.w("ZCOUNT z ( 2", ":2\r\n");
    r.expect(&[b"ZCOUNT", b"z", b" 1", b"2"], b":2\r\n");
    r.w("ZCOUNT z 1e400 1e500", ":1\r\n");
    r.w("ZCOUNT z abc 1", "-ERR min or max is not a float\r\n");
    r.w("ZCOUNT z 1 abc", "-ERR min or max is not a float\r\n");
    r.expect(
        &[b"ZCOUNT", b"z", b"1 ", b"2"],
        b"-ERR min or max is not a float\r\n",
    );
    r.w("ZCOUNT z ((1 2", "-ERR min or max is not a float\r\n");
    r.w("ZCOUNT z [1 2", "-ERR min or max is not a float\r\n");
    r.w("ZCOUNT z nan 2", "-ERR min or max is not a float\r\n");
    r.expect(
        &[b"ZCOUNT", b"z", b"  ", b"2"],
        b"-ERR min or max is not a float\r\n",
    );
    r.w("ZCOUNT z --1 2", "-ERR min or max is not a float\r\n");
    r.w("ZCOUNT z -infinity infinity", ":7\r\n");
    r.w("ZCOUNT missing 1 2", ":0\r\n");
    r.w("ZCOUNT missing a 2", "-ERR min or max is not a float\r\n");
}

/// `[a` `(a` `-` `+`; anything else is `ERR min or max not valid string range item`.
#[test]
fn zlexcount_and_lex_bounds() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 0 a 0 b 0 c 0 d 0 e 0 ee 0 f", ":7\r\n");
    r.w("ZLEXCOUNT z - +", ":7\r\n");
    r.w("ZLEXCOUNT z [b (e", ":3\r\n");
    r.w("ZLEXCOUNT z (b [e", ":3\r\n");
    r.w("ZLEXCOUNT z [e [e", ":1\r\n");
    r.w("ZLEXCOUNT z (e [e", ":0\r\n");
    r.w("ZLEXCOUNT z + -", ":0\r\n");
    r.w("ZLEXCOUNT z - -", ":0\r\n");
    r.w("ZLEXCOUNT z [ +", ":7\r\n");
    r.w("ZLEXCOUNT z ( +", ":7\r\n");
    r.w(
        "ZLEXCOUNT z a +",
        "-ERR min or max not valid string range item\r\n",
    );
    r.w(
        "ZLEXCOUNT z - b",
        "-ERR min or max not valid string range item\r\n",
    );
    r.w(
        "ZLEXCOUNT z -a +",
        "-ERR min or max not valid string range item\r\n",
    );
    r.w(
        "ZLEXCOUNT z - ++",
        "-ERR min or max not valid string range item\r\n",
    );
    r.expect(
        &[b"ZLEXCOUNT", b"z", b"", b"+"],
        b"-ERR min or max not valid string range item\r\n",
    );
    r.w("ZLEXCOUNT missing - +", ":0\r\n");
    r.w(
        "ZLEXCOUNT missing a +",
        "-ERR min or max not valid string range item\r\n",
    );
}

/// Indexes clamp as Redis's; empty ranges reply an empty array.
#[test]
fn zrange_by_rank_with_negative_and_out_of_range_indexes() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c 4 d 5 e", ":5\r\n");
    r.w(
        "ZRANGE z 0 -1",
        "*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n",
    );
    r.w(
        "ZRANGE z -2 -1 WITHSCORES",
        "*4\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n$1\r\n5\r\n",
    );
    r.w("ZRANGE z -100 1", "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    r.w("ZRANGE z 3 100", "*2\r\n$1\r\nd\r\n$1\r\ne\r\n");
    r.w("ZRANGE z 3 1", "*0\r\n");
    r.w("ZRANGE z 5 10", "*0\r\n");
    r.w("ZRANGE z -1 -2", "*0\r\n");
    r.w("ZRANGE z 0 -100", "*0\r\n");
    r.w(
        "ZRANGE z 0 9223372036854775807",
        "*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n",
    );
    r.w("ZRANGE z -9223372036854775808 0", "*1\r\n$1\r\na\r\n");
    r.w(
        "ZRANGE z 0 9223372036854775808",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w(
        "ZRANGE z a 1",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w("ZRANGE z 0 1 REV", "*2\r\n$1\r\ne\r\n$1\r\nd\r\n");
    r.w(
        "ZRANGE z 0 1 REV WITHSCORES",
        "*4\r\n$1\r\ne\r\n$1\r\n5\r\n$1\r\nd\r\n$1\r\n4\r\n",
    );
    r.w("ZREVRANGE z 0 1", "*2\r\n$1\r\ne\r\n$1\r\nd\r\n");
    r.w(
        "ZREVRANGE z -1 -1 WITHSCORES",
        "*2\r\n$1\r\na\r\n$1\r\n1\r\n",
    );
    r.w("ZRANGE missing 0 -1", "*0\r\n");
    resp3(&mut r);
    r.w(
        "ZRANGE z 0 1 WITHSCORES",
        "*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2\r\n",
    );
    r.w("ZRANGE z 5 10 WITHSCORES", "*0\r\n");
    r.w("ZRANGE missing 0 -1 WITHSCORES", "*0\r\n");
}

/// LIMIT only with BYSCORE/BYLEX (LIMIT x -1 is no limit), no WITHSCORES with BYLEX, repeated or unknown words are syntax errors.
#[test]
fn zrange_option_combinations_and_their_errors() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c", ":3\r\n");
    r.w("ZRANGE z 0 1 LIMIT 0 1", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n");
    r.w("ZRANGE z 0 1 LIMIT 5 -1", "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    r.w("ZRANGE z 0 1 LIMIT 0 -2", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n");
    r.w(
        "ZRANGE z 0 1 LIMIT a 1",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w("ZRANGE z 0 1 LIMIT 0", "-ERR syntax error\r\n");
    r.w("ZRANGE z 0 1 FOO", "-ERR syntax error\r\n");
    r.w(
        "ZRANGE z - + BYLEX WITHSCORES",
        "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n",
    );
    r.w("ZRANGE z 1 2 BYSCORE BYLEX", "-ERR syntax error\r\n");
    r.w("ZRANGE z 1 2 BYSCORE BYSCORE", "-ERR syntax error\r\n");
    r.w("ZRANGE z 1 2 REV REV", "-ERR syntax error\r\n");
    r.w(
        "ZRANGE z 1 2 WITHSCORES WITHSCORES",
        "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
    );
    r.w("ZRANGE z a b BYSCORE", "-ERR min or max is not a float\r\n");
    r.w(
        "ZRANGE z a b BYLEX",
        "-ERR min or max not valid string range item\r\n",
    );
    r.w(
        "ZRANGE z a b",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w(
        "ZRANGE missing a b BYSCORE",
        "-ERR min or max is not a float\r\n",
    );
    r.w("ZREVRANGE z 0 -1 REV", "-ERR syntax error\r\n");
    r.w("ZREVRANGE z 0 -1 BYSCORE", "-ERR syntax error\r\n");
    r.w("ZREVRANGE z 0 -1 LIMIT 0 1", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n");
    r.w("ZRANGEBYSCORE z 1 3 REV", "-ERR syntax error\r\n");
    r.w("ZRANGEBYSCORE z 1 3 BYSCORE", "-ERR syntax error\r\n");
    r.w("ZRANGEBYSCORE z 1 3 LIMIT 1", "-ERR syntax error\r\n");
    r.w(
        "ZRANGEBYLEX z - + WITHSCORES",
        "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n",
    );
    r.w("ZRANGEBYLEX z - + BYLEX", "-ERR syntax error\r\n");
}

/// REV takes max then min; LIMIT offset count (negative offset: nothing; negative count: no limit).
#[test]
fn zrange_byscore_and_bylex_with_rev_and_limit() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c 3 d 4 e 5 f", ":6\r\n");
    r.w(
        "ZRANGE z 2 4 BYSCORE",
        "*4\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n",
    );
    r.w("ZRANGE z (2 +inf BYSCORE WITHSCORES", "*8\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n3\r\n$1\r\ne\r\n$1\r\n4\r\n$1\r\nf\r\n$1\r\n5\r\n");
    r.w(
        "ZRANGE z 4 2 BYSCORE REV",
        "*4\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n",
    );
    r.w("ZRANGE z 2 4 BYSCORE REV", "*0\r\n");
    r.w(
        "ZRANGE z -inf +inf BYSCORE LIMIT 1 2",
        "*2\r\n$1\r\nb\r\n$1\r\nc\r\n",
    );
    r.w("ZRANGE z -inf +inf BYSCORE LIMIT -1 2", "*0\r\n");
    r.w(
        "ZRANGE z -inf +inf BYSCORE LIMIT 2 -5",
        "*4\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n",
    );
    r.w("ZRANGE z -inf +inf BYSCORE LIMIT 2 0", "*0\r\n");
    r.w("ZRANGE z -inf +inf BYSCORE LIMIT 6 1", "*0\r\n");
    r.w(
        "ZRANGE z +inf -inf BYSCORE REV LIMIT 1 2 WITHSCORES",
        "*4\r\n$1\r\ne\r\n$1\r\n4\r\n$1\r\nd\r\n$1\r\n3\r\n",
    );
    r.w(
        "ZRANGEBYSCORE z 2 4",
        "*4\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n",
    );
    r.w(
        "ZRANGEBYSCORE z (1 (4 WITHSCORES",
        "*6\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n3\r\n",
    );
    r.w(
        "ZRANGEBYSCORE z -inf +inf LIMIT 2 2",
        "*2\r\n$1\r\nc\r\n$1\r\nd\r\n",
    );
    r.w(
        "ZRANGEBYSCORE z -inf +inf WITHSCORES LIMIT 4 10",
        "*4\r\n$1\r\ne\r\n$1\r\n4\r\n$1\r\nf\r\n$1\r\n5\r\n",
    );
    r.w(
        "ZREVRANGEBYSCORE z 4 2",
        "*4\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n",
    );
    r.w("ZREVRANGEBYSCORE z 2 4", "*0\r\n");
    r.w(
        "ZREVRANGEBYSCORE z +inf (3 WITHSCORES LIMIT 0 1",
        "*2\r\n$1\r\nf\r\n$1\r\n5\r\n",
    );
    r.w("ZADD l 0 a 0 b 0 c 0 d 0 e", ":5\r\n");
    r.w(
        "ZRANGE l [b [d BYLEX",
        "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n",
    );
    r.w(
        "ZRANGE l [d [b BYLEX REV",
        "*3\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n",
    );
    r.w(
        "ZRANGE l - + BYLEX LIMIT 1 2",
        "*2\r\n$1\r\nb\r\n$1\r\nc\r\n",
    );
    r.w(
        "ZRANGE l + - BYLEX REV LIMIT 1 2",
        "*2\r\n$1\r\nd\r\n$1\r\nc\r\n",
    );
    r.w(
        "ZRANGEBYLEX l (a (e",
        "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n",
    );
    r.w(
        "ZRANGEBYLEX l - + LIMIT 3 10",
        "*2\r\n$1\r\nd\r\n$1\r\ne\r\n",
    );
    r.w("ZRANGEBYLEX l - + LIMIT -1 10", "*0\r\n");
    r.w(
        "ZREVRANGEBYLEX l + -",
        "*5\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n",
    );
    r.w("ZREVRANGEBYLEX l (e [b LIMIT 1 1", "*1\r\n$1\r\nc\r\n");
    r.w("ZREVRANGEBYLEX l - +", "*0\r\n");
    r.w("ZRANGEBYLEX l + -", "*0\r\n");
}

/// Replies the stored count; an empty result deletes the destination; WITHSCORES is a syntax error.
#[test]
fn zrangestore_stores_or_deletes_the_destination() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c 4 d", ":4\r\n");
    r.w("SET dst old", "+OK\r\n");
    r.w("ZRANGESTORE dst z 1 2", ":2\r\n");
    r.w(
        "ZRANGE dst 0 -1 WITHSCORES",
        "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
    );
    r.w("ZRANGESTORE dst z (1 3 BYSCORE", ":2\r\n");
    r.w(
        "ZRANGE dst 0 -1 WITHSCORES",
        "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
    );
    r.w("ZRANGESTORE dst z 4 1 BYSCORE REV LIMIT 1 2", ":2\r\n");
    r.w(
        "ZRANGE dst 0 -1 WITHSCORES",
        "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
    );
    r.w("ZRANGESTORE dst z 0 -1 WITHSCORES", "-ERR syntax error\r\n");
    r.w("ZRANGESTORE dst z 0 1 LIMIT 0 1", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n");
    r.w(
        "ZRANGESTORE dst z a b BYSCORE",
        "-ERR min or max is not a float\r\n",
    );
    r.w("ZRANGE dst 0 -1", "*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
    r.w("ZRANGESTORE dst z 10 20", ":0\r\n");
    r.w("EXISTS dst", ":0\r\n");
    r.w("ZRANGESTORE dst missing 0 -1", ":0\r\n");
    r.w("SET str v", "+OK\r\n");
    r.w(
        "ZRANGESTORE dst str 0 -1",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w("ZRANGESTORE z z 0 1", ":2\r\n");
    r.w(
        "ZRANGE z 0 -1 WITHSCORES",
        "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n",
    );
}

/// Reply the number removed; an emptied key is deleted; bad ranges change nothing.
#[test]
fn zremrange_by_rank_score_and_lex() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c 4 d 5 e 6 f", ":6\r\n");
    r.w("ZREMRANGEBYRANK z 0 0", ":1\r\n");
    r.w("ZREMRANGEBYRANK z -1 -1", ":1\r\n");
    r.w("ZREMRANGEBYRANK z 3 1", ":0\r\n");
    r.w("ZREMRANGEBYRANK z 10 20", ":0\r\n");
    r.w(
        "ZREMRANGEBYRANK z a 1",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w("ZREMRANGEBYSCORE z (2 3", ":1\r\n");
    r.w(
        "ZREMRANGEBYSCORE z a 3",
        "-ERR min or max is not a float\r\n",
    );
    r.w("ZREMRANGEBYSCORE z 10 20", ":0\r\n");
    r.w(
        "ZRANGE z 0 -1 WITHSCORES",
        "*6\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n$1\r\n5\r\n",
    );
    r.w("ZREMRANGEBYSCORE z -inf +inf", ":3\r\n");
    r.w("EXISTS z", ":0\r\n");
    r.w("ZREMRANGEBYRANK missing 0 1", ":0\r\n");
    r.w("ZREMRANGEBYSCORE missing 0 1", ":0\r\n");
    r.w("ZREMRANGEBYLEX missing - +", ":0\r\n");
    r.w("ZADD l 0 a 0 b 0 c 0 d", ":4\r\n");
    r.w("ZREMRANGEBYLEX l (a [c", ":2\r\n");
    r.w(
        "ZREMRANGEBYLEX l a c",
        "-ERR min or max not valid string range item\r\n",
    );
    r.w("ZRANGE l 0 -1", "*2\r\n$1\r\na\r\n$1\r\nd\r\n");
    r.w("ZREMRANGEBYLEX l - +", ":2\r\n");
    r.w("EXISTS l", ":0\r\n");
}

/// Flat [member, score] in RESP2 and without COUNT; nested pairs with COUNT in RESP3.
#[test]
fn zpopmin_and_zpopmax_with_and_without_count() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c 4 d 5 e 6 f", ":6\r\n");
    r.w("ZPOPMIN z", "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
    r.w("ZPOPMAX z", "*2\r\n$1\r\nf\r\n$1\r\n6\r\n");
    r.w(
        "ZPOPMIN z 2",
        "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
    );
    r.w("ZPOPMIN z 0", "*0\r\n");
    r.w(
        "ZPOPMIN z -1",
        "-ERR value is out of range, must be positive\r\n",
    );
    r.w(
        "ZPOPMIN z a",
        "-ERR value is out of range, must be positive\r\n",
    );
    r.w("ZPOPMIN z 1 2", "-ERR syntax error\r\n");
    r.w("ZPOPMIN missing", "*0\r\n");
    r.w("ZPOPMIN missing 3", "*0\r\n");
    resp3(&mut r);
    r.w("ZPOPMAX z", "*2\r\n$1\r\ne\r\n,5\r\n");
    r.w("ZPOPMIN z 1", "*1\r\n*2\r\n$1\r\nd\r\n,4\r\n");
    r.w("ZPOPMIN z 0", "*0\r\n");
    r.w("ZPOPMIN missing", "*0\r\n");
    r.w("ZPOPMAX z 10", "*0\r\n");
    r.w("EXISTS z", ":0\r\n");
}

/// ZMPOP numkeys key... MIN|MAX [COUNT n]: [key, [[member, score]...]], nil when all are empty.
#[test]
fn zmpop_pops_from_the_first_non_empty_key() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD a 1 x 2 y 3 z", ":3\r\n");
    r.w(
        "ZMPOP 2 missing a MIN",
        "*2\r\n$1\r\na\r\n*1\r\n*2\r\n$1\r\nx\r\n$1\r\n1\r\n",
    );
    r.w(
        "ZMPOP 2 missing a MAX COUNT 5",
        "*2\r\n$1\r\na\r\n*2\r\n*2\r\n$1\r\nz\r\n$1\r\n3\r\n*2\r\n$1\r\ny\r\n$1\r\n2\r\n",
    );
    r.w("EXISTS a", ":0\r\n");
    r.w("ZMPOP 1 a MIN", "*-1\r\n");
    r.w("ZMPOP 0 a MIN", "-ERR numkeys should be greater than 0\r\n");
    r.w(
        "ZMPOP -1 a MIN",
        "-ERR numkeys should be greater than 0\r\n",
    );
    r.w("ZMPOP x a MIN", "-ERR numkeys should be greater than 0\r\n");
    r.w("ZMPOP 5 a MIN", "-ERR syntax error\r\n");
    r.w("ZMPOP 1 a FOO", "-ERR syntax error\r\n");
    r.w("ZMPOP 1 a MIN COUNT", "-ERR syntax error\r\n");
    r.w(
        "ZMPOP 1 a MIN COUNT 0",
        "-ERR count should be greater than 0\r\n",
    );
    r.w(
        "ZMPOP 1 a MIN COUNT -1",
        "-ERR count should be greater than 0\r\n",
    );
    r.w(
        "ZMPOP 1 a MIN COUNT x",
        "-ERR count should be greater than 0\r\n",
    );
    r.w("ZMPOP 1 a MIN COUNT 1 COUNT 1", "-ERR syntax error\r\n");
    r.w("ZMPOP 1 a MIN BAR", "-ERR syntax error\r\n");
    r.w("SET s v", "+OK\r\n");
    r.w("ZADD b 1 q", ":1\r\n");
    r.w(
        "ZMPOP 2 s b MIN",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZMPOP 2 b s MIN",
        "*2\r\n$1\r\nb\r\n*1\r\n*2\r\n$1\r\nq\r\n$1\r\n1\r\n",
    );
    resp3(&mut r);
    r.w("ZMPOP 1 missing MAX", "_\r\n");
    r.w("ZADD a 1 x 2 y", ":2\r\n");
    r.w(
        "ZMPOP 1 a MAX COUNT 1",
        "*2\r\n$1\r\na\r\n*1\r\n*2\r\n$1\r\ny\r\n,2\r\n",
    );
}

/// Count is parsed first; WITHSCORES only as the last word; counts of 0 and missing keys reply empty;
/// a count of at least the size replies the whole set from the top.
#[test]
fn zrandmember_argument_errors_and_empty_cases() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 3 c", ":3\r\n");
    r.w("ZRANDMEMBER z 0", "*0\r\n");
    r.w("ZRANDMEMBER z 0 WITHSCORES", "*0\r\n");
    // A count of at least the size replies the whole set, highest score first.
    r.w("ZRANDMEMBER z 3", "*3\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n");
    r.w(
        "ZRANDMEMBER z 100 WITHSCORES",
        "*6\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n",
    );
    r.w(
        "ZRANDMEMBER z a",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w("ZRANDMEMBER z 1 FOO", "-ERR syntax error\r\n");
    r.w("ZRANDMEMBER z 1 WITHSCORES FOO", "-ERR syntax error\r\n");
    r.w("ZRANDMEMBER z -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n");
    r.w(
        "ZRANDMEMBER z 4611686018427387904 WITHSCORES",
        "-ERR value is out of range\r\n",
    );
    r.w(
        "ZRANDMEMBER z -4611686018427387904 WITHSCORES",
        "-ERR value is out of range\r\n",
    );
    r.w("ZRANDMEMBER missing", "$-1\r\n");
    r.w("ZRANDMEMBER missing 3", "*0\r\n");
    r.w("ZRANDMEMBER missing 3 WITHSCORES", "*0\r\n");
    r.w(
        "ZRANDMEMBER missing a",
        "-ERR value is not an integer or out of range\r\n",
    );
    resp3(&mut r);
    r.w("ZRANDMEMBER missing", "_\r\n");
    r.w("ZRANDMEMBER missing 2 WITHSCORES", "*0\r\n");
    r.w(
        "ZRANDMEMBER z 5 WITHSCORES",
        "*3\r\n*2\r\n$1\r\nc\r\n,3\r\n*2\r\n$1\r\nb\r\n,2\r\n*2\r\n$1\r\na\r\n,1\r\n",
    );
}

/// WEIGHTS multiply, AGGREGATE SUM|MIN|MAX combine; ZDIFF keeps the first set's scores.
#[test]
fn zunion_zinter_zdiff_weights_and_aggregate() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD a 1 x 2 y 3 z", ":3\r\n");
    r.w("ZADD b 10 y 20 z 30 w", ":3\r\n");
    r.w(
        "ZUNION 2 a b",
        "*4\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n$1\r\nw\r\n",
    );
    r.w("ZUNION 2 a b WITHSCORES", "*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n12\r\n$1\r\nz\r\n$2\r\n23\r\n$1\r\nw\r\n$2\r\n30\r\n");
    r.w("ZUNION 2 a b WEIGHTS 2 3 WITHSCORES", "*8\r\n$1\r\nx\r\n$1\r\n2\r\n$1\r\ny\r\n$2\r\n34\r\n$1\r\nz\r\n$2\r\n66\r\n$1\r\nw\r\n$2\r\n90\r\n");
    r.w("ZUNION 2 a b AGGREGATE MIN WITHSCORES", "*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n3\r\n$1\r\nw\r\n$2\r\n30\r\n");
    r.w("ZUNION 2 a b AGGREGATE MAX WITHSCORES", "*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n10\r\n$1\r\nz\r\n$2\r\n20\r\n$1\r\nw\r\n$2\r\n30\r\n");
    r.w("ZUNION 2 a b WEIGHTS 1 -1 AGGREGATE SUM WITHSCORES", "*8\r\n$1\r\nw\r\n$3\r\n-30\r\n$1\r\nz\r\n$3\r\n-17\r\n$1\r\ny\r\n$2\r\n-8\r\n$1\r\nx\r\n$1\r\n1\r\n");
    r.w(
        "ZUNION 2 a missing WITHSCORES",
        "*6\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n3\r\n",
    );
    r.w(
        "ZINTER 2 a b WITHSCORES",
        "*4\r\n$1\r\ny\r\n$2\r\n12\r\n$1\r\nz\r\n$2\r\n23\r\n",
    );
    r.w(
        "ZINTER 2 a b WEIGHTS 2 3 AGGREGATE MAX WITHSCORES",
        "*4\r\n$1\r\ny\r\n$2\r\n30\r\n$1\r\nz\r\n$2\r\n60\r\n",
    );
    r.w(
        "ZINTER 2 a a WITHSCORES",
        "*6\r\n$1\r\nx\r\n$1\r\n2\r\n$1\r\ny\r\n$1\r\n4\r\n$1\r\nz\r\n$1\r\n6\r\n",
    );
    r.w("ZINTER 2 a missing", "*0\r\n");
    r.w("ZDIFF 2 a b WITHSCORES", "*2\r\n$1\r\nx\r\n$1\r\n1\r\n");
    r.w("ZDIFF 2 b a", "*1\r\n$1\r\nw\r\n");
    r.w("ZDIFF 1 missing", "*0\r\n");
    resp3(&mut r);
    r.w("ZUNION 2 a b WITHSCORES", "*4\r\n*2\r\n$1\r\nx\r\n,1\r\n*2\r\n$1\r\ny\r\n,12\r\n*2\r\n$1\r\nz\r\n,23\r\n*2\r\n$1\r\nw\r\n,30\r\n");
    r.w("ZINTER 2 a b", "*2\r\n$1\r\ny\r\n$1\r\nz\r\n");
    r.w("ZDIFF 2 a b WITHSCORES", "*1\r\n*2\r\n$1\r\nx\r\n,1\r\n");
}

/// Plain set keys are valid inputs of ZUNION/ZINTER/ZDIFF and their STORE forms.
#[test]
fn set_keys_count_as_sorted_sets_with_score_1() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD a 5 x 2 y 3 z", ":3\r\n");
    r.w("SADD s x w", ":2\r\n");
    r.w("ZUNION 2 a s WITHSCORES", "*8\r\n$1\r\nw\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n3\r\n$1\r\nx\r\n$1\r\n6\r\n");
    r.w("ZINTER 2 a s WITHSCORES", "*2\r\n$1\r\nx\r\n$1\r\n6\r\n");
    r.w(
        "ZINTER 2 a s WEIGHTS 1 10 WITHSCORES",
        "*2\r\n$1\r\nx\r\n$2\r\n15\r\n",
    );
    r.w(
        "ZDIFF 2 a s WITHSCORES",
        "*4\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n3\r\n",
    );
    r.w("ZDIFF 2 s a WITHSCORES", "*2\r\n$1\r\nw\r\n$1\r\n1\r\n");
    r.w("ZUNIONSTORE d 2 s s", ":2\r\n");
    r.w(
        "ZRANGE d 0 -1 WITHSCORES",
        "*4\r\n$1\r\nw\r\n$1\r\n2\r\n$1\r\nx\r\n$1\r\n2\r\n",
    );
    r.w("ZINTERCARD 2 a s", ":1\r\n");
}

/// w*score that is NaN counts as 0, and inf + -inf sums to 0, as in Redis.
#[test]
fn infinite_weights_and_nan_sums_become_zero() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD a 0 x inf y -inf z 1 q", ":4\r\n");
    r.w("ZUNION 2 a a WEIGHTS 1 -1 WITHSCORES", "*8\r\n$1\r\nq\r\n$1\r\n0\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\ny\r\n$1\r\n0\r\n$1\r\nz\r\n$1\r\n0\r\n");
    r.w("ZUNION 1 a WEIGHTS inf WITHSCORES", "*8\r\n$1\r\nz\r\n$4\r\n-inf\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\nq\r\n$3\r\ninf\r\n$1\r\ny\r\n$3\r\ninf\r\n");
    r.w("ZINTER 2 a a WEIGHTS inf 1 AGGREGATE MIN WITHSCORES", "*8\r\n$1\r\nz\r\n$4\r\n-inf\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\nq\r\n$1\r\n1\r\n$1\r\ny\r\n$3\r\ninf\r\n");
    r.w("ZINTER 2 a a WEIGHTS 0 1 AGGREGATE MAX WITHSCORES", "*8\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\nz\r\n$1\r\n0\r\n$1\r\nq\r\n$1\r\n1\r\n$1\r\ny\r\n$3\r\ninf\r\n");
}

/// numkeys, then key types (before the options), then WEIGHTS/AGGREGATE/WITHSCORES.
#[test]
fn setop_argument_errors_in_redis_order() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD a 1 x", ":1\r\n");
    r.w("SET str v", "+OK\r\n");
    r.w(
        "ZUNION 0 a",
        "-ERR at least 1 input key is needed for 'zunion' command\r\n",
    );
    r.w(
        "ZUNION -1 a",
        "-ERR at least 1 input key is needed for 'zunion' command\r\n",
    );
    r.w(
        "ZUNION x a",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w("ZUNION 3 a a", "-ERR syntax error\r\n");
    r.w("ZUNION 9223372036854775807 a", "-ERR syntax error\r\n");
    r.w(
        "ZUNION 2 a str",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZUNION 2 a str BADOPT",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w("ZUNION 1 a BADOPT", "-ERR syntax error\r\n");
    r.w("ZUNION 1 a WEIGHTS", "-ERR syntax error\r\n");
    r.w("ZUNION 2 a a WEIGHTS 1", "-ERR syntax error\r\n");
    r.w(
        "ZUNION 2 a a WEIGHTS 1 x",
        "-ERR weight value is not a float\r\n",
    );
    r.w(
        "ZUNION 1 a WEIGHTS nan",
        "-ERR weight value is not a float\r\n",
    );
    r.w("ZUNION 1 a AGGREGATE", "-ERR syntax error\r\n");
    r.w("ZUNION 1 a AGGREGATE AVG", "-ERR syntax error\r\n");
    r.w("ZUNION 1 a LIMIT 1", "-ERR syntax error\r\n");
    r.w(
        "ZINTER 0 a",
        "-ERR at least 1 input key is needed for 'zinter' command\r\n",
    );
    r.w(
        "ZDIFF 0 a",
        "-ERR at least 1 input key is needed for 'zdiff' command\r\n",
    );
    r.w("ZDIFF 1 a WEIGHTS 1", "-ERR syntax error\r\n");
    r.w("ZDIFF 1 a AGGREGATE SUM", "-ERR syntax error\r\n");
    r.w(
        "ZDIFF 2 a str",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZUNIONSTORE d 0 a",
        "-ERR at least 1 input key is needed for 'zunionstore' command\r\n",
    );
    r.w("ZUNIONSTORE d 1 a WITHSCORES", "-ERR syntax error\r\n");
    r.w(
        "ZINTERSTORE d 2 a str",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w("ZDIFFSTORE d 1 a WITHSCORES", "-ERR syntax error\r\n");
    r.w("EXISTS d", ":0\r\n");
}

/// ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE reply the stored size; an empty result deletes the destination, of any type.
#[test]
fn store_forms_replace_or_delete_the_destination() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD a 1 x 2 y 3 z", ":3\r\n");
    r.w("ZADD b 10 y 20 z 30 w", ":3\r\n");
    r.w("SET d old", "+OK\r\n");
    r.w("ZUNIONSTORE d 2 a b WEIGHTS 1 2", ":4\r\n");
    r.w("ZRANGE d 0 -1 WITHSCORES", "*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n22\r\n$1\r\nz\r\n$2\r\n43\r\n$1\r\nw\r\n$2\r\n60\r\n");
    r.w("ZINTERSTORE d 2 a b AGGREGATE MIN", ":2\r\n");
    r.w(
        "ZRANGE d 0 -1 WITHSCORES",
        "*4\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n3\r\n",
    );
    r.w("ZDIFFSTORE d 2 b a", ":1\r\n");
    r.w("ZRANGE d 0 -1 WITHSCORES", "*2\r\n$1\r\nw\r\n$2\r\n30\r\n");
    r.w("ZINTERSTORE d 2 a missing", ":0\r\n");
    r.w("EXISTS d", ":0\r\n");
    r.w("ZUNIONSTORE a 2 a b", ":4\r\n");
    r.w("ZRANGE a 0 -1 WITHSCORES", "*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n12\r\n$1\r\nz\r\n$2\r\n23\r\n$1\r\nw\r\n$2\r\n30\r\n");
    r.w("ZDIFFSTORE a 2 a a", ":0\r\n");
    r.w("EXISTS a", ":0\r\n");
}

/// ZINTERCARD numkeys key... [LIMIT n], LIMIT 0 = no limit.
#[test]
fn zintercard_counts_up_to_the_limit() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD a 1 x 2 y 3 z", ":3\r\n");
    r.w("ZADD b 1 y 1 z 1 w", ":3\r\n");
    r.w("ZINTERCARD 2 a b", ":2\r\n");
    r.w("ZINTERCARD 2 a b LIMIT 1", ":1\r\n");
    r.w("ZINTERCARD 2 a b LIMIT 0", ":2\r\n");
    r.w("ZINTERCARD 2 a b LIMIT 5", ":2\r\n");
    r.w("ZINTERCARD 2 a missing", ":0\r\n");
    r.w(
        "ZINTERCARD 2 a b LIMIT -1",
        "-ERR LIMIT can't be negative\r\n",
    );
    r.w(
        "ZINTERCARD 2 a b LIMIT x",
        "-ERR LIMIT can't be negative\r\n",
    );
    r.w("ZINTERCARD 2 a b LIMIT", "-ERR syntax error\r\n");
    r.w("ZINTERCARD 2 a b WITHSCORES", "-ERR syntax error\r\n");
    r.w("ZINTERCARD 2 a b WEIGHTS 1 1", "-ERR syntax error\r\n");
    r.w(
        "ZINTERCARD 0 a",
        "-ERR at least 1 input key is needed for 'zintercard' command\r\n",
    );
    r.w(
        "ZINTERCARD -1 a",
        "-ERR at least 1 input key is needed for 'zintercard' command\r\n",
    );
    r.w(
        "ZINTERCARD x a",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w("ZINTERCARD 3 a b", "-ERR syntax error\r\n");
    r.w("SET s v", "+OK\r\n");
    r.w(
        "ZINTERCARD 2 a s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
}

/// A listpack is scanned in one call, in score order, whatever COUNT says; MATCH filters members.
#[test]
fn zscan_of_a_small_sorted_set_returns_everything_with_cursor_0() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("ZADD z 1 a 2 b 1.5 c 3 ab", ":4\r\n");
    r.w("ZSCAN z 0", "*2\r\n$1\r\n0\r\n*8\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nc\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n$2\r\nab\r\n$1\r\n3\r\n");
    r.w("ZSCAN z 0 COUNT 1", "*2\r\n$1\r\n0\r\n*8\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nc\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n$2\r\nab\r\n$1\r\n3\r\n");
    r.w(
        "ZSCAN z 0 MATCH a*",
        "*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$1\r\n3\r\n",
    );
    r.w("ZSCAN z 0 MATCH nothing*", "*2\r\n$1\r\n0\r\n*0\r\n");
    r.w("ZSCAN z 0 COUNT 0", "-ERR syntax error\r\n");
    r.w(
        "ZSCAN z 0 COUNT x",
        "-ERR value is not an integer or out of range\r\n",
    );
    r.w("ZSCAN z 0 FOO", "-ERR syntax error\r\n");
    r.w("ZSCAN z x", "-ERR invalid cursor\r\n");
    r.w("ZSCAN missing 0", "*2\r\n$1\r\n0\r\n*0\r\n");
    r.w("ZSCAN missing 0 FOO", "*2\r\n$1\r\n0\r\n*0\r\n");
}

/// WRONGTYPE after argument parsing, before anything changes.
#[test]
fn every_command_answers_wrongtype_for_another_type() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("SET s v", "+OK\r\n");
    r.w(
        "ZADD s 1 a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZINCRBY s 1 a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREM s a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZCARD s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZSCORE s a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZMSCORE s a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANK s a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREVRANK s a",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZCOUNT s 1 2",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZLEXCOUNT s - +",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANGE s 0 -1",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANGE s 0 -1 BYSCORE",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANGESTORE d s 0 -1",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREVRANGE s 0 -1",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANGEBYSCORE s 1 2",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREVRANGEBYSCORE s 2 1",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANGEBYLEX s - +",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREVRANGEBYLEX s + -",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREMRANGEBYRANK s 0 1",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREMRANGEBYSCORE s 1 2",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZREMRANGEBYLEX s - +",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZPOPMIN s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZPOPMAX s 2",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZMPOP 1 s MIN",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANDMEMBER s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZRANDMEMBER s 2",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZUNION 1 s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZINTER 1 s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZDIFF 1 s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZUNIONSTORE d 1 s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZINTERSTORE d 1 s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZDIFFSTORE d 1 s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZINTERCARD 1 s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZSCAN s 0",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w("GET s", "$1\r\nv\r\n");
    r.w("EXISTS d", ":0\r\n");
    r.w("RPUSH l x", ":1\r\n");
    r.w(
        "ZCARD l",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w(
        "ZUNION 1 l",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
}

/// Past 128 members, or with a member over 64 bytes, the encoding turns
/// skiplist and never back; a repeated member counts once; a skiplist
/// keeps a score of -0 (a listpack stores it as 0); stored results take
/// the small encoding when they fit.
#[test]
fn encoding_turns_skiplist_like_redis_and_never_back() {
    let srv = start();
    let mut r = Raw::new(&srv);
    let mut add = words("ZADD z");
    for i in 0..128 {
        add.push(i.to_string());
        add.push(format!("m{i:03}"));
    }
    assert_eq!(call(&mut r, &add), Frame::Integer(128));
    r.w("OBJECT ENCODING z", "$8\r\nlistpack\r\n");
    r.w("ZADD z 128 m128", ":1\r\n");
    r.w("OBJECT ENCODING z", "$8\r\nskiplist\r\n");
    r.w("ZREMRANGEBYRANK z 0 100", ":101\r\n");
    r.w("OBJECT ENCODING z", "$8\r\nskiplist\r\n");
    r.w("ZADD z -0 negzero", ":1\r\n");
    r.w("ZSCORE z negzero", "$2\r\n-0\r\n");
    let (x64, x65) = ("x".repeat(64), "x".repeat(65));
    r.w(&format!("ZADD y 1 {x64}"), ":1\r\n");
    r.w("OBJECT ENCODING y", "$8\r\nlistpack\r\n");
    r.w(&format!("ZADD y 2 {x65}"), ":1\r\n");
    r.w("OBJECT ENCODING y", "$8\r\nskiplist\r\n");
    r.w(&format!("ZREM y {x65}"), ":1\r\n");
    r.w("OBJECT ENCODING y", "$8\r\nskiplist\r\n");
    let mut dup = words("ZADD w");
    for i in 0..200 {
        dup.push("1".into());
        dup.push(format!("m{}", i % 3));
    }
    assert_eq!(call(&mut r, &dup), Frame::Integer(3));
    r.w("OBJECT ENCODING w", "$8\r\nlistpack\r\n");
    r.w("ZRANGESTORE d z 0 4", ":5\r\n");
    r.w("OBJECT ENCODING d", "$8\r\nlistpack\r\n");
    r.w("ZUNIONSTORE d 1 z", ":29\r\n");
    r.w("OBJECT ENCODING d", "$8\r\nlistpack\r\n");
    r.w("ZINTERSTORE d 2 z y", ":0\r\n");
    r.w("EXISTS d", ":0\r\n");
}

/// ZRANDMEMBER: a positive count gives distinct members (at most the
/// whole set), a negative one that many picks with repeats; WITHSCORES
/// pairs each member with its own score (flat in RESP2, nested pairs of
/// bulk and double in RESP3); nothing changes.
#[test]
fn zrandmember_picks_distinct_members_or_repeats_with_negative_count() {
    let srv = start();
    let mut r = Raw::new(&srv);
    for (key, n) in [("small", 5), ("big", 200)] {
        let mut add = vec!["ZADD".to_string(), key.to_string()];
        for i in 0..n {
            add.push(format!("{}.5", i));
            add.push(format!("m{i}"));
        }
        assert_eq!(call(&mut r, &add), Frame::Integer(n));
        let score_of = |m: &str| format!("{}.5", &m[1..]);
        let one = bulk(&call(&mut r, &words(&format!("ZRANDMEMBER {key}"))));
        assert!(one[1..].parse::<i64>().unwrap() < n, "{one}");
        for count in [1, 3, 150, 199, 200, 500] {
            let got = array(call(&mut r, &words(&format!("ZRANDMEMBER {key} {count}"))));
            let set: HashSet<String> = got.iter().map(bulk).collect();
            assert_eq!(got.len() as i64, count.min(n), "{key} {count}");
            assert_eq!(set.len(), got.len(), "{key} {count}: repeats");
            let got = array(call(
                &mut r,
                &words(&format!("ZRANDMEMBER {key} {count} WITHSCORES")),
            ));
            assert_eq!(got.len() as i64, 2 * count.min(n));
            for pair in got.chunks(2) {
                assert_eq!(bulk(&pair[1]), score_of(&bulk(&pair[0])));
            }
        }
        let got = array(call(&mut r, &words(&format!("ZRANDMEMBER {key} -20"))));
        assert_eq!(got.len(), 20);
        for m in &got {
            assert!(bulk(m)[1..].parse::<i64>().unwrap() < n);
        }
        assert_eq!(
            call(&mut r, &words(&format!("ZCARD {key}"))),
            Frame::Integer(n)
        );
    }
    resp3(&mut r);
    for count in ["2", "-7"] {
        let got = array(call(
            &mut r,
            &words(&format!("ZRANDMEMBER small {count} WITHSCORES")),
        ));
        assert_eq!(
            got.len(),
            count.parse::<i64>().unwrap().unsigned_abs() as usize
        );
        for pair in got {
            let pair = array(pair);
            let m = bulk(&pair[0]);
            let want: f64 = format!("{}.5", &m[1..]).parse().unwrap();
            assert_eq!(pair[1], Frame::Double(want));
        }
    }
}

/// ZSCAN of a big (skiplist) sorted set: following the cursor until 0
/// visits every member exactly with its score; MATCH filters members.
#[test]
fn zscan_of_a_big_sorted_set_visits_every_member() {
    let srv = start();
    let mut r = Raw::new(&srv);
    let mut add = words("ZADD z");
    for i in 0..300 {
        add.push(format!("{}", i as f64 / 4.0));
        add.push(format!("m{i}"));
    }
    assert_eq!(call(&mut r, &add), Frame::Integer(300));
    r.w("OBJECT ENCODING z", "$8\r\nskiplist\r\n");
    for pattern in [None, Some("m1*")] {
        let mut seen: HashMap<String, String> = HashMap::new();
        let mut cursor = "0".to_string();
        for _ in 0..10_000 {
            let mut cmd = words(&format!("ZSCAN z {cursor} COUNT 7"));
            if let Some(p) = pattern {
                cmd.extend(["MATCH".to_string(), p.to_string()]);
            }
            let reply = array(call(&mut r, &cmd));
            cursor = bulk(&reply[0]);
            let items = array(reply[1].clone());
            for pair in items.chunks(2) {
                seen.insert(bulk(&pair[0]), bulk(&pair[1]));
            }
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(cursor, "0", "the scan never ended");
        let want: HashMap<String, String> = (0..300)
            .map(|i| (format!("m{i}"), i as f64 / 4.0))
            .filter(|(m, _)| pattern.is_none() || m.starts_with("m1"))
            .map(|(m, s)| (m, format!("{s}")))
            .collect();
        assert_eq!(seen, want);
    }
}

/// Random and malformed arguments to every command of the family: each
/// gets one well-formed reply and the server stays up.
#[test]
fn malformed_arguments_never_break_the_server() {
    let srv = start();
    let mut r = Raw::new(&srv);
    let mut rng = StdRng::seed_from_u64(7);
    let cmds = [
        "ZADD",
        "ZINCRBY",
        "ZREM",
        "ZCARD",
        "ZSCORE",
        "ZMSCORE",
        "ZRANK",
        "ZREVRANK",
        "ZCOUNT",
        "ZLEXCOUNT",
        "ZRANGE",
        "ZRANGESTORE",
        "ZREVRANGE",
        "ZRANGEBYSCORE",
        "ZREVRANGEBYSCORE",
        "ZRANGEBYLEX",
        "ZREVRANGEBYLEX",
        "ZREMRANGEBYRANK",
        "ZREMRANGEBYSCORE",
        "ZREMRANGEBYLEX",
        "ZPOPMIN",
        "ZPOPMAX",
        "ZMPOP",
        "ZRANDMEMBER",
        "ZUNION",
        "ZINTER",
        "ZDIFF",
        "ZUNIONSTORE",
        "ZINTERSTORE",
        "ZDIFFSTORE",
        "ZINTERCARD",
        "ZSCAN",
    ];
    let tokens = [
        "z",
        "z2",
        "s",
        "str",
        "0",
        "1",
        "2",
        "-1",
        "3",
        "(1",
        "[a",
        "(a",
        "-",
        "+",
        "-inf",
        "+inf",
        "inf",
        "nan",
        "1.5",
        "",
        "(",
        "[",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551616",
        "LIMIT",
        "WITHSCORES",
        "REV",
        "BYSCORE",
        "BYLEX",
        "COUNT",
        "MIN",
        "MAX",
        "WEIGHTS",
        "AGGREGATE",
        "SUM",
        "NX",
        "XX",
        "GT",
        "LT",
        "CH",
        "INCR",
        "MATCH",
        "*",
        "a",
        "b",
        "\u{0}",
        "0x10",
        "1e400",
    ];
    r.w("ZADD z 1 a 2 b 3 c", ":3\r\n");
    r.w("ZADD z2 0 a 0 b 0 d", ":3\r\n");
    r.w("SADD s a x", ":2\r\n");
    r.w("SET str v", "+OK\r\n");
    for _ in 0..4000 {
        let mut args = vec![cmds[rng.gen_range(0..cmds.len())].to_string()];
        for _ in 0..rng.gen_range(0..8) {
            args.push(tokens[rng.gen_range(0..tokens.len())].to_string());
        }
        let _ = call(&mut r, &args);
        if rng.gen_bool(0.05) {
            r.send(&[b"ZADD", b"z", b"1", b"a", b"2", b"b", b"3", b"c"]);
            let _ = r.frame();
        }
    }
    r.w("PING", "+PONG\r\n");
}

/// A score as redis prints it, for the halves the model uses.
fn score_text(s: f64) -> String {
    format!("{s}")
}

/// Members of a model sorted set in Redis's order: score, then member.
fn ordered(m: &BTreeMap<String, f64>) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = m.iter().map(|(k, s)| (k.clone(), *s)).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    v
}

fn flat(v: &[(String, f64)]) -> Vec<String> {
    v.iter()
        .flat_map(|(m, s)| [m.clone(), score_text(*s)])
        .collect()
}

/// Sorted sets that live on flash (a 2 MB RAM budget) are read and changed
/// by every kind of command exactly as a model says, and flash reads
/// really happened.
#[test]
fn sorted_sets_on_flash_read_and_change_like_a_model() {
    let srv = Server::start(&["--maxmemory-ram", "2mb", "--tiering-min-value-size", "16"]);
    let mut con = srv.client();
    const KEYS: usize = 600;
    const MEMBERS: usize = 60;
    let member = |i: usize| format!("member:{i:03}:padding-padding");
    let mut model: HashMap<String, BTreeMap<String, f64>> = HashMap::new();
    for k in 0..KEYS {
        let key = format!("zf:{k}");
        let mut c = redis::cmd("ZADD");
        c.arg(&key);
        let mut m = BTreeMap::new();
        for i in 0..MEMBERS {
            let s = ((k * 7 + i * 13) % 50) as f64 / 2.0;
            c.arg(score_text(s)).arg(member(i));
            m.insert(member(i), s);
        }
        let n: i64 = c.query(&mut con).unwrap();
        assert_eq!(n, MEMBERS as i64);
        model.insert(key, m);
    }
    wait_until("sorted sets on flash", || {
        srv.info_u64(&mut con, "tiered", "values_in_flash") > (KEYS / 4) as u64
    });
    let mut cold = Vec::new();
    for k in 0..KEYS {
        let key = format!("zf:{k}");
        let tier: String = redis::cmd("DEBUG")
            .arg("TIER")
            .arg(&key)
            .query(&mut con)
            .unwrap();
        if tier.starts_with("tier:flash") {
            cold.push(key);
        }
    }
    assert!(
        cold.len() > KEYS / 4,
        "only {} cold sorted sets",
        cold.len()
    );
    let fetches = srv.info_u64(&mut con, "tiered", "tiered_total_fetches");
    let mut rng = StdRng::seed_from_u64(11);
    let mut stores = 0;
    for step in 0..3000 {
        let key = if step < cold.len() {
            cold[step].clone()
        } else {
            format!("zf:{}", rng.gen_range(0..KEYS))
        };
        let m = member(rng.gen_range(0..MEMBERS + 20));
        let z = model.entry(key.clone()).or_default();
        match rng.gen_range(0..11) {
            0 => {
                let s = rng.gen_range(-20..60) as f64 / 2.0;
                let n: i64 = redis::cmd("ZADD")
                    .arg(&key)
                    .arg(score_text(s))
                    .arg(&m)
                    .query(&mut con)
                    .unwrap();
                assert_eq!(n, z.insert(m, s).is_none() as i64, "{key}");
            }
            1 => {
                let d = rng.gen_range(-6..6) as f64 / 2.0;
                let got: String = redis::cmd("ZINCRBY")
                    .arg(&key)
                    .arg(score_text(d))
                    .arg(&m)
                    .query(&mut con)
                    .unwrap();
                let e = z.entry(m).or_insert(0.0);
                *e += d;
                assert_eq!(got, score_text(*e), "{key}");
            }
            2 => {
                let m2 = member(rng.gen_range(0..MEMBERS));
                let n: i64 = redis::cmd("ZREM")
                    .arg(&key)
                    .arg(&m)
                    .arg(&m2)
                    .query(&mut con)
                    .unwrap();
                let want = z.remove(&m).is_some() as i64 + z.remove(&m2).is_some() as i64;
                assert_eq!(n, want, "{key}");
            }
            3 => {
                let got: Option<String> = redis::cmd("ZSCORE")
                    .arg(&key)
                    .arg(&m)
                    .query(&mut con)
                    .unwrap();
                assert_eq!(got, z.get(&m).map(|s| score_text(*s)), "{key}");
            }
            4 => {
                let got: Option<i64> = redis::cmd("ZRANK")
                    .arg(&key)
                    .arg(&m)
                    .query(&mut con)
                    .unwrap();
                let want = ordered(z)
                    .iter()
                    .position(|(x, _)| *x == m)
                    .map(|p| p as i64);
                assert_eq!(got, want, "{key}");
            }
            5 => {
                let max = rng.gen_bool(0.5);
                let got: Vec<String> = redis::cmd(if max { "ZPOPMAX" } else { "ZPOPMIN" })
                    .arg(&key)
                    .arg(2)
                    .query(&mut con)
                    .unwrap();
                let mut o = ordered(z);
                if max {
                    o.reverse();
                }
                o.truncate(2);
                for (x, _) in &o {
                    z.remove(x);
                }
                assert_eq!(got, flat(&o), "{key}");
            }
            6 => {
                let (lo, hi) = (rng.gen_range(0..25), rng.gen_range(0..25));
                let n: i64 = redis::cmd("ZCOUNT")
                    .arg(&key)
                    .arg(format!("({lo}"))
                    .arg(hi)
                    .query(&mut con)
                    .unwrap();
                let want = z
                    .values()
                    .filter(|s| **s > lo as f64 && **s <= hi as f64)
                    .count() as i64;
                assert_eq!(n, want, "{key}");
            }
            7 => {
                let got: Vec<String> = redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(5)
                    .arg(-5)
                    .arg("WITHSCORES")
                    .query(&mut con)
                    .unwrap();
                let o = ordered(z);
                let want = if o.len() > 9 {
                    &o[5..o.len() - 4]
                } else {
                    &[][..]
                };
                assert_eq!(got, flat(want), "{key}");
            }
            8 => {
                let lo = rng.gen_range(0..25);
                let got: Vec<String> = redis::cmd("ZREVRANGEBYSCORE")
                    .arg(&key)
                    .arg("+inf")
                    .arg(format!("({lo}"))
                    .arg("WITHSCORES")
                    .arg("LIMIT")
                    .arg(1)
                    .arg(4)
                    .query(&mut con)
                    .unwrap();
                let mut o: Vec<_> = ordered(z)
                    .into_iter()
                    .filter(|(_, s)| *s > lo as f64)
                    .collect();
                o.reverse();
                let want: Vec<_> = o.into_iter().skip(1).take(4).collect();
                assert_eq!(got, flat(&want), "{key}");
            }
            9 => {
                let n: i64 = redis::cmd("ZREMRANGEBYRANK")
                    .arg(&key)
                    .arg(0)
                    .arg(2)
                    .query(&mut con)
                    .unwrap();
                let o = ordered(z);
                for (x, _) in o.iter().take(3) {
                    z.remove(x);
                }
                assert_eq!(n, o.len().min(3) as i64, "{key}");
            }
            _ => {
                let other = format!("zf:{}", rng.gen_range(0..KEYS));
                let dst = format!("zu:{}", stores % 20);
                stores += 1;
                let n: i64 = redis::cmd("ZUNIONSTORE")
                    .arg(&dst)
                    .arg(2)
                    .arg(&key)
                    .arg(&other)
                    .query(&mut con)
                    .unwrap();
                let mut u = model.get(&key).cloned().unwrap_or_default();
                for (x, s) in model.get(&other).cloned().unwrap_or_default() {
                    *u.entry(x).or_insert(0.0) += s;
                }
                assert_eq!(n, u.len() as i64, "{dst}");
                model.insert(dst, u);
            }
        }
    }
    model.retain(|_, z| !z.is_empty());
    for k in 0..KEYS {
        let key = format!("zf:{k}");
        let got: Vec<String> = redis::cmd("ZRANGE")
            .arg(&key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut con)
            .unwrap();
        let want = model.get(&key).map(ordered).unwrap_or_default();
        assert_eq!(got, flat(&want), "{key}");
        let exists: i64 = redis::cmd("EXISTS").arg(&key).query(&mut con).unwrap();
        assert_eq!(exists, model.contains_key(&key) as i64, "{key}");
    }
    for (key, z) in model.iter().filter(|(k, _)| k.starts_with("zu:")) {
        let got: Vec<String> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut con)
            .unwrap();
        assert_eq!(got, flat(&ordered(z)), "{key}");
    }
    let fetched = srv.info_u64(&mut con, "tiered", "tiered_total_fetches") - fetches;
    eprintln!(
        "{} of {KEYS} sorted sets were on flash; {fetched} flash reads",
        cold.len()
    );
    assert!(fetched > 0, "no sorted set was read from flash");
    assert_eq!(srv.info_u64(&mut con, "tiered", "flash_read_errors"), 0);
}

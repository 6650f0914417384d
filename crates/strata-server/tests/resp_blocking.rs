//! Blocking list and sorted-set pops against the real server: immediate pops, timeouts,
//! service in arrival order by the push that fills the key (before the
//! pusher's reply), BLMOVE chains, clients that hang up while blocked, and
//! Redis's errors.

mod common;
use common::raw::Raw;
use common::*;
use std::time::{Duration, Instant};

fn blocked(srv: &Server, con: &mut redis::Connection) -> u64 {
    srv.info_u64(con, "clients", "blocked_clients")
}

#[test]
fn blpop_pops_at_once_or_times_out_with_a_null_array() {
    let srv = start();
    let mut con = srv.client();
    let _: i64 = q(&mut con, "RPUSH l a b");
    let mut r = Raw::new(&srv);
    r.w("BLPOP none l 1", "*2\r\n$1\r\nl\r\n$1\r\na\r\n");
    r.w("BRPOP l 1", "*2\r\n$1\r\nl\r\n$1\r\nb\r\n");
    let t0 = Instant::now();
    r.w("BLPOP l 0.2", "*-1\r\n");
    assert!(
        t0.elapsed() >= Duration::from_millis(150),
        "{:?}",
        t0.elapsed()
    );
    r.w("HELLO 3", "");
    let _ = r.frame();
    r.w("BLPOP l 0.1", "_\r\n");
}

#[test]
fn blocked_clients_are_served_in_arrival_order_before_the_push_replies() {
    let srv = start();
    let mut con = srv.client();
    let mut a = Raw::new(&srv);
    let mut b = Raw::new(&srv);
    a.send(&[b"BLPOP", b"q", b"5"]);
    wait_until("a blocked", || blocked(&srv, &mut con) == 1);
    b.send(&[b"BLPOP", b"q", b"5"]);
    wait_until("b blocked", || blocked(&srv, &mut con) == 2);
    // One push of three: a gets the first, b the second, one stays.
    let n: i64 = q(&mut con, "RPUSH q x y z");
    assert_eq!(n, 3, "RPUSH replies the length it made");
    // Served before RPUSH's reply: the pusher already sees one left.
    let len: i64 = q(&mut con, "LLEN q");
    assert_eq!(len, 1);
    assert_eq!(
        format!("{:?}", a.frame()),
        format!("{:?}", b_frame(&["q", "x"]))
    );
    assert_eq!(
        format!("{:?}", b.frame()),
        format!("{:?}", b_frame(&["q", "y"]))
    );
    assert_eq!(blocked(&srv, &mut con), 0);
}

fn b_frame(items: &[&str]) -> strata_protocol::Frame {
    strata_protocol::Frame::Array(
        items
            .iter()
            .map(|s| strata_protocol::Frame::Bulk(bytes::Bytes::copy_from_slice(s.as_bytes())))
            .collect(),
    )
}

#[test]
fn blmove_serves_a_client_blocked_on_its_destination() {
    let srv = start();
    let mut con = srv.client();
    let mut a = Raw::new(&srv);
    let mut b = Raw::new(&srv);
    a.send(&[b"BLMOVE", b"src", b"dst", b"LEFT", b"RIGHT", b"5"]);
    wait_until("a blocked", || blocked(&srv, &mut con) == 1);
    b.send(&[b"BLPOP", b"dst", b"5"]);
    wait_until("b blocked", || blocked(&srv, &mut con) == 2);
    let _: i64 = q(&mut con, "LPUSH src v");
    assert_eq!(
        format!("{:?}", a.frame()),
        format!("{:?}", strata_protocol::Frame::Bulk("v".into()))
    );
    assert_eq!(
        format!("{:?}", b.frame()),
        format!("{:?}", b_frame(&["dst", "v"]))
    );
    let exists: i64 = q(&mut con, "EXISTS src dst");
    assert_eq!(exists, 0, "both lists emptied and deleted");
}

/// As Redis 7.0 (`serveClientBlockedOnList`): a blocked BLMOVE whose
/// destination is of another type when the source fills gets WRONGTYPE and
/// is unblocked; the element stays, and the next client is served.
#[test]
fn a_blocked_blmove_with_a_wrong_destination_gets_wrongtype() {
    let srv = start();
    let mut con = srv.client();
    let _: () = q(&mut con, "SET target nolist");
    let mut a = Raw::new(&srv);
    let mut b = Raw::new(&srv);
    a.send(&[b"BRPOPLPUSH", b"blist", b"target", b"0"]);
    wait_until("a blocked", || blocked(&srv, &mut con) == 1);
    b.send(&[b"BLPOP", b"blist", b"0"]);
    wait_until("b blocked", || blocked(&srv, &mut con) == 2);
    let _: i64 = q(&mut con, "RPUSH blist foo");
    assert_eq!(
        format!("{:?}", a.frame()),
        format!(
            "{:?}",
            strata_protocol::Frame::Error(
                "WRONGTYPE Operation against a key holding the wrong kind of value".into()
            )
        )
    );
    assert_eq!(
        format!("{:?}", b.frame()),
        format!("{:?}", b_frame(&["blist", "foo"]))
    );
    assert_eq!(blocked(&srv, &mut con), 0);
}

#[test]
fn a_client_that_hangs_up_while_blocked_leaves_and_loses_nothing() {
    let srv = start();
    let mut con = srv.client();
    {
        let mut gone = Raw::new(&srv);
        gone.send(&[b"BRPOP", b"k", b"0"]);
        wait_until("blocked", || blocked(&srv, &mut con) == 1);
    }
    wait_until("unblocked after hang-up", || blocked(&srv, &mut con) == 0);
    let _: i64 = q(&mut con, "RPUSH k kept");
    let v: Vec<String> = q(&mut con, "LRANGE k 0 -1");
    assert_eq!(v, vec!["kept".to_string()]);
}

#[test]
fn rename_into_a_watched_key_serves_the_blocked_client() {
    let srv = start();
    let mut con = srv.client();
    let mut a = Raw::new(&srv);
    a.send(&[b"BLPOP", b"target", b"5"]);
    wait_until("blocked", || blocked(&srv, &mut con) == 1);
    let _: i64 = q(&mut con, "RPUSH other e1 e2");
    let _: () = q(&mut con, "RENAME other target");
    assert_eq!(
        format!("{:?}", a.frame()),
        format!("{:?}", b_frame(&["target", "e1"]))
    );
    let left: Vec<String> = q(&mut con, "LRANGE target 0 -1");
    assert_eq!(left, vec!["e2".to_string()]);
}

#[test]
fn swapdb_that_brings_a_list_serves_the_client_blocked_on_it() {
    let srv = start();
    let mut con = srv.client();
    let mut a = Raw::new(&srv);
    a.send(&[b"BLPOP", b"q", b"5"]);
    wait_until("blocked", || blocked(&srv, &mut con) == 1);
    let _: () = q(&mut con, "SELECT 1");
    let _: i64 = q(&mut con, "RPUSH q x y");
    let _: () = q(&mut con, "SWAPDB 0 1");
    assert_eq!(
        format!("{:?}", a.frame()),
        format!("{:?}", b_frame(&["q", "x"]))
    );
    // The client was blocked in db 0, which now holds the list.
    let _: () = q(&mut con, "SELECT 0");
    let left: Vec<String> = q(&mut con, "LRANGE q 0 -1");
    assert_eq!(left, vec!["y".to_string()]);
}

#[test]
fn bad_input_gets_redis_errors_and_blocks_nothing() {
    let srv = start();
    let mut con = srv.client();
    let _: () = q(&mut con, "SET s v");
    let mut r = Raw::new(&srv);
    r.w(
        "BLPOP s 1",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    r.w("BLPOP k -1", "-ERR timeout is negative\r\n");
    r.w(
        "BLPOP k x",
        "-ERR timeout is not a float or out of range\r\n",
    );
    r.w("BLMOVE a b UP LEFT 1", "-ERR syntax error\r\n");
    r.w(
        "BLPOP k",
        "-ERR wrong number of arguments for 'blpop' command\r\n",
    );
    assert_eq!(blocked(&srv, &mut con), 0);
    // A pipelined command after a block runs once the block ends.
    let t0 = Instant::now();
    r.send(&[b"BLPOP", b"k", b"0.2"]);
    r.send(&[b"PING"]);
    assert!(matches!(r.frame(), strata_protocol::Frame::Null));
    assert!(matches!(r.frame(), strata_protocol::Frame::Simple(_)));
    assert!(t0.elapsed() >= Duration::from_millis(150));
}

/// CLIENT UNBLOCK as Redis 7.0: TIMEOUT (the default) answers the blocked
/// client as its timeout would, ERROR with Redis's UNBLOCKED error; 1 when
/// the client was blocked, 0 otherwise; the reason is checked first.
#[test]
fn client_unblock_ends_a_wait_as_a_timeout_or_an_error() {
    let srv = start();
    let mut con = srv.client();
    let mut a = Raw::new(&srv);
    let mut b = Raw::new(&srv);
    let a_id = match a.cmd("CLIENT ID") {
        strata_protocol::Frame::Integer(i) => i,
        f => panic!("{f:?}"),
    };
    let b_id = match b.cmd("CLIENT ID") {
        strata_protocol::Frame::Integer(i) => i,
        f => panic!("{f:?}"),
    };
    a.send(&[b"BLPOP", b"nolist", b"0"]);
    b.send(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"nostream", b"$"]);
    wait_until("both blocked", || blocked(&srv, &mut con) == 2);
    let one: i64 = q(&mut con, &format!("CLIENT UNBLOCK {a_id}"));
    assert_eq!(one, 1);
    assert_eq!(
        format!("{:?}", a.frame()),
        format!("{:?}", strata_protocol::Frame::Null)
    );
    let one: i64 = q(&mut con, &format!("CLIENT UNBLOCK {b_id} ERROR"));
    assert_eq!(one, 1);
    assert_eq!(
        format!("{:?}", b.frame()),
        format!(
            "{:?}",
            strata_protocol::Frame::Error("UNBLOCKED client unblocked via CLIENT UNBLOCK".into())
        )
    );
    let zero: i64 = q(&mut con, &format!("CLIENT UNBLOCK {a_id}"));
    assert_eq!(zero, 0, "no longer blocked");
    let mut r = Raw::new(&srv);
    r.w(
        "CLIENT UNBLOCK abc bad",
        "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n",
    );
    r.w(
        "CLIENT UNBLOCK abc",
        "-ERR value is not an integer or out of range\r\n",
    );
}

/// Clients blocked on a sorted set are served by every command that fills
/// it: ZADD, ZINCRBY and GEOADD (which load only the members' parts of a
/// chunked set) as well as the whole-key writes.
#[test]
fn zset_writes_serve_the_clients_blocked_on_the_key() {
    let srv = start();
    let mut con = srv.client();
    let mut a = Raw::new(&srv);
    a.send(&[b"BZPOPMIN", b"z", b"5"]);
    wait_until("a blocked", || blocked(&srv, &mut con) == 1);
    let _: i64 = q(&mut con, "ZADD z 1 m");
    assert_eq!(
        format!("{:?}", a.frame()),
        format!("{:?}", b_frame(&["z", "m", "1"]))
    );
    a.send(&[b"BZPOPMAX", b"z", b"5"]);
    wait_until("a blocked again", || blocked(&srv, &mut con) == 1);
    let _: String = q(&mut con, "ZINCRBY z 2 n");
    assert_eq!(
        format!("{:?}", a.frame()),
        format!("{:?}", b_frame(&["z", "n", "2"]))
    );
    a.send(&[b"BZMPOP", b"5", b"1", b"z", b"MIN"]);
    wait_until("a blocked on BZMPOP", || blocked(&srv, &mut con) == 1);
    let _: i64 = q(&mut con, "GEOADD z 13.361389 38.115556 p");
    match a.frame() {
        strata_protocol::Frame::Array(v) => assert_eq!(v.len(), 2, "{v:?}"),
        f => panic!("BZMPOP got {f:?}"),
    }
    assert_eq!(blocked(&srv, &mut con), 0);
}

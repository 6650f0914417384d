//! Memory limits cover collections: under `noeviction` a collection write
//! past `maxmemory` is refused with Redis's OOM error and every acknowledged
//! element stays readable; under `allkeys-lru` collections are evicted to
//! make room and the writes go on.

mod common;
use common::*;

fn push_until_refused(con: &mut redis::Connection, n: usize) -> (Vec<usize>, Option<String>) {
    let elem = vec![b'x'; 40_000];
    let mut acked = Vec::new();
    for i in 0..n {
        let r: redis::RedisResult<i64> = redis::cmd("RPUSH")
            .arg(format!("l{i}"))
            .arg(&elem)
            .query(con);
        match r {
            Ok(_) => acked.push(i),
            Err(e) => return (acked, Some(e.to_string())),
        }
    }
    (acked, None)
}

#[test]
fn noeviction_refuses_collection_writes_past_maxmemory_and_keeps_the_rest() {
    let srv = Server::start(&["--maxmemory", "2mb", "--maxmemory-policy", "noeviction"]);
    let mut con = srv.client();
    let (acked, refused) = push_until_refused(&mut con, 200);
    let refused = refused.expect("200 x 40 kB lists fit in 2 MB?");
    assert!(refused.contains("OOM"), "{refused}");
    assert!(!acked.is_empty());
    for i in &acked {
        let n: i64 = redis::cmd("LLEN")
            .arg(format!("l{i}"))
            .query(&mut con)
            .unwrap();
        assert_eq!(n, 1, "l{i} was acknowledged");
    }
    // Reads and deletes go on; a delete makes room again.
    let _: i64 = redis::cmd("DEL")
        .arg(format!("l{}", acked[0]))
        .query(&mut con)
        .unwrap();
    let t: String = redis::cmd("TYPE")
        .arg(format!("l{}", acked[1 % acked.len()]))
        .query(&mut con)
        .unwrap();
    assert!(t == "list" || acked.len() == 1);
}

#[test]
fn allkeys_lru_evicts_collections_to_make_room() {
    let srv = Server::start(&["--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut con = srv.client();
    let (acked, refused) = push_until_refused(&mut con, 150);
    assert_eq!(refused, None, "allkeys-lru should evict, not refuse");
    assert_eq!(acked.len(), 150);
    let evicted = srv.info_u64(&mut con, "stats", "evicted_keys");
    let keys: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert!(evicted > 0, "nothing evicted");
    assert!(
        (keys as u64) + evicted >= 150,
        "keys {keys} + evicted {evicted}"
    );
    assert_eq!(srv.info_u64(&mut con, "tiered", "keys_list"), keys as u64);
}

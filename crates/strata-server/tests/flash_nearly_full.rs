//! Flash well within `flash-max-size` but busy: uniform overwrites of more
//! data than RAM holds, with the collector freeing room while demotion
//! writes. No write may be refused while the log holds garbage the
//! collector can free.

mod common;

use common::*;
use std::time::{Duration, Instant};

/// Demotion used to write into the segment the collector opens past
/// `flash-max-size` to move records: the collector's job was left half
/// moved with no room to finish, nothing could be freed, and every write
/// was refused with `-OOM` (66k keys, 48 MB of flash, 4 MB segments: after
/// ~1 s, with the log ~55% live).
#[test]
fn uniform_overwrites_are_never_refused_while_the_collector_can_free_room() {
    const KEYS: u64 = 66_000;
    let srv = Server::start(&[
        "--maxmemory-ram",
        "16mb",
        "--flash-max-size",
        "48mb",
        "--flash-segment-size",
        "4mb",
        "--appendonly",
        "no",
    ]);
    let value = vec![b'v'; 512];
    let mut con = srv.client();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(500) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("SET").arg(format!("k:{i}")).arg(&value[..]).ignore();
        }
        p.query::<()>(&mut con).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let mut con = srv.client();
            let value = value.clone();
            std::thread::spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t;
                let mut sets = 0u64;
                while Instant::now() < deadline {
                    let mut p = redis::pipe();
                    for _ in 0..64 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        p.cmd("SET").arg(format!("k:{}", x % KEYS)).arg(&value[..]);
                    }
                    let replies: Vec<redis::Value> = p
                        .query(&mut con)
                        .unwrap_or_else(|e| panic!("after {sets} SETs: {e}"));
                    assert!(replies.iter().all(|r| *r == redis::Value::Okay));
                    sets += 64;
                }
                sets
            })
        })
        .collect();
    let sets: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let freed = srv.info_u64(&mut con, "tiered", "flash_segments_freed");
    eprintln!("{sets} SETs in 5 s, {freed} segments freed");
    assert!(freed > 0, "the collector freed no segment");
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(dbsize, KEYS);
}

//! Flash well within `flash-max-size` but busy: uniform overwrites of more
//! data than RAM holds, with the collector freeing room while demotion
//! writes. No write may be refused while the log holds garbage the
//! collector can free. And a log that fills: every write acknowledged
//! before the refusals began survives a crash.

mod common;

use common::raw::Raw;
use common::*;
use std::time::{Duration, Instant};
use strata_protocol::Frame;

/// SETs of 1 KiB values streamed from 4 connections (each sends its
/// 15,000 without waiting, as `redis-cli --pipe` does) into a 32 MB log
/// under noeviction (the default), most past its size refused; then, a
/// few seconds later (`everysec`), kill -9: every key whose SET was
/// answered OK is back after the restart. Writes admitted beyond the log's
/// room were acknowledged and never logged: 3,487 of 32,925 lost this way
/// (60,000 SETs through `redis-cli --pipe`), and all 6,657 when the
/// default 64 MiB segments did not fit the 32 MB log.
#[test]
fn acknowledged_writes_into_a_log_that_fills_survive_a_crash() {
    const PER_CONN: u32 = 15_000;
    let mut srv = Server::start(&["--maxmemory-ram", "16mb", "--flash-max-size", "32mb"]);
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let mut raw = Raw::new(&srv);
            let mut out = raw.s.try_clone().unwrap();
            let sender = std::thread::spawn(move || {
                let value = vec![b'v'; 1024];
                let mut buf = bytes::BytesMut::new();
                for i in 0..PER_CONN {
                    let k = format!("w{t}:{i}");
                    strata_protocol::write_request(&mut buf, &[b"SET", k.as_bytes(), &value]);
                    if buf.len() > 64 << 10 {
                        std::io::Write::write_all(&mut out, &buf).unwrap();
                        buf.clear();
                    }
                }
                std::io::Write::write_all(&mut out, &buf).unwrap();
            });
            std::thread::spawn(move || {
                let (mut acked, mut refused) = (Vec::new(), 0);
                for i in 0..PER_CONN {
                    match raw.frame() {
                        Frame::Simple(s) if &s[..] == b"OK" => acked.push(format!("w{t}:{i}")),
                        Frame::Error(e) if e.starts_with(b"OOM") => refused += 1,
                        other => panic!("SET w{t}:{i}: {other:?}"),
                    }
                }
                sender.join().unwrap();
                (acked, refused)
            })
        })
        .collect();
    let (mut acked, mut refused) = (Vec::new(), 0);
    for w in writers {
        let (a, r) = w.join().unwrap();
        acked.extend(a);
        refused += r;
    }
    assert!(refused > 0, "60 MB into a 32 MB log was never refused");
    std::thread::sleep(Duration::from_secs(3));
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    let mut lost = 0;
    for chunk in acked.chunks(500) {
        let n: usize = redis::cmd("EXISTS").arg(chunk).query(&mut con).unwrap();
        lost += chunk.len() - n;
    }
    assert_eq!(
        lost,
        0,
        "of {} acknowledged SETs ({refused} refused)",
        acked.len()
    );
}

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

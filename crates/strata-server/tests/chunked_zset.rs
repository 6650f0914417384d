//! Chunked sorted sets through the real server: a big sorted set is held
//! as member parts (member → score) and order parts ((score, member) in
//! order), which go to flash; ZSCORE reads one member part, a change
//! journals the parts it touched, and the set survives kill -9, a
//! checkpoint and restarts.

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

const MEMBERS: usize = 100_000;

fn member(i: usize) -> String {
    format!("member:{i:0>24}")
}

fn tiered(srv: &Server, con: &mut redis::Connection, field: &str) -> u64 {
    srv.info_u64(con, "tiered", field)
}

/// The model's members in Redis's order (score, then member bytes).
fn ordered(model: &BTreeMap<String, f64>) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// ZRANGE 0 -1 WITHSCORES, ZCARD and some ZSCOREs and ZRANKs against the
/// model.
fn check(con: &mut redis::Connection, model: &BTreeMap<String, f64>, what: &str) {
    assert_eq!(q::<usize>(con, "ZCARD z"), model.len(), "{what}: ZCARD");
    let all: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg("z")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(con)
        .unwrap();
    let want = ordered(model);
    let first = all.iter().zip(want.iter()).position(|(a, b)| a != b);
    assert!(
        all.len() == want.len() && first.is_none(),
        "{what}: ZRANGE differs ({} members, want {}, first difference at {first:?})",
        all.len(),
        want.len()
    );
    for (rank, (m, s)) in want.iter().enumerate().step_by(997) {
        let got: f64 = redis::cmd("ZSCORE").arg("z").arg(m).query(con).unwrap();
        assert_eq!(got, *s, "{what}: ZSCORE {m}");
        let r: usize = redis::cmd("ZRANK").arg("z").arg(m).query(con).unwrap();
        assert_eq!(r, rank, "{what}: ZRANK {m}");
    }
}

#[test]
fn a_big_sorted_set_is_chunked_read_by_part_and_survives_kill_9() {
    let mut srv = Server::start(&[
        "--appendfsync",
        "always",
        // (6 MB: a pipeline of ten ZADDs keeps up to a thousand changed
        // parts in RAM until the journal has them; at 4 MB a CI run whose
        // machine was busy got an OOM refusal there.)
        "--maxmemory-ram",
        "6mb",
        "--flash-segment-size",
        "1mb",
    ]);
    let mut con = srv.client();
    let mut model: BTreeMap<String, f64> = BTreeMap::new();
    // ZADDs of 50 members each (scattered over the order: each touches
    // up to 100 parts, which must fit in RAM with the others in flight).
    for batch in (0..MEMBERS).collect::<Vec<_>>().chunks(500) {
        let mut p = redis::pipe();
        for chunk in batch.chunks(50) {
            p.cmd("ZADD").arg("z");
            for &i in chunk {
                // Few distinct scores: ties are ordered by member.
                let s = ((i * 7919) % 1009) as f64 / 4.0;
                p.arg(s).arg(member(i));
                model.insert(member(i), s);
            }
            p.ignore();
        }
        p.query::<()>(&mut con).unwrap();
    }
    assert_eq!(q::<String>(&mut con, "OBJECT ENCODING z"), "skiplist");
    let tier: String = q(&mut con, "DEBUG TIER z");
    assert!(tier.contains("tier:chunked"), "{tier}");
    wait_until("parts demoted", || {
        tiered(&srv, &mut con, "chunks_in_flash") > 300
    });

    // ZSCORE and ZMSCORE of cold members read one member part each.
    let mut rng = StdRng::seed_from_u64(7);
    let loads0 = tiered(&srv, &mut con, "chunk_loads");
    let n = 200;
    for _ in 0..n {
        let m = member(rng.gen_range(0..MEMBERS));
        let got: f64 = redis::cmd("ZSCORE")
            .arg("z")
            .arg(&m)
            .query(&mut con)
            .unwrap();
        assert_eq!(got, model[&m], "ZSCORE {m}");
    }
    let missing: Option<f64> = redis::cmd("ZSCORE")
        .arg("z")
        .arg("nope")
        .query(&mut con)
        .unwrap();
    assert_eq!(missing, None);
    let loads = tiered(&srv, &mut con, "chunk_loads") - loads0;
    eprintln!("{loads} part loads for {n} ZSCOREs");
    assert!(loads <= n as u64 + 1, "{loads} part loads for {n} ZSCOREs");

    // ZRANK reads the member part, then one order part; a short ZRANGE by
    // rank or by score reads the order parts that hold it.
    let ord = ordered(&model);
    let loads0 = tiered(&srv, &mut con, "chunk_loads");
    let n = 100;
    for k in 0..n {
        let r = rng.gen_range(0..MEMBERS - 10);
        let got: usize = redis::cmd("ZRANK")
            .arg("z")
            .arg(&ord[r].0)
            .query(&mut con)
            .unwrap();
        assert_eq!(got, r, "ZRANK");
        let got: Vec<String> = redis::cmd(if k % 2 == 0 { "ZRANGE" } else { "ZREVRANGE" })
            .arg("z")
            .arg(r)
            .arg(r + 4)
            .query(&mut con)
            .unwrap();
        let want: Vec<String> = if k % 2 == 0 {
            ord[r..r + 5].iter().map(|(m, _)| m.clone()).collect()
        } else {
            ord.iter()
                .rev()
                .skip(r)
                .take(5)
                .map(|(m, _)| m.clone())
                .collect()
        };
        assert_eq!(got, want, "ZRANGE {r}");
        let s = ord[r].1;
        let got: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg("z")
            .arg(s)
            .arg(s)
            .arg("LIMIT")
            .arg(0)
            .arg(3)
            .query(&mut con)
            .unwrap();
        let first = ord.iter().position(|(_, t)| *t == s).unwrap();
        let want: Vec<String> = ord[first..first + 3]
            .iter()
            .map(|(m, _)| m.clone())
            .collect();
        assert_eq!(got, want, "ZRANGEBYSCORE {s} {s}");
    }
    let loads = tiered(&srv, &mut con, "chunk_loads") - loads0;
    eprintln!("{loads} part loads for {n} x (ZRANK, ZRANGE of 5, ZRANGEBYSCORE of one score)");
    // One score holds ~100 members (a part or two); ZRANK 2, ZRANGE 1-2.
    assert!(loads <= n as u64 * 7, "{loads} part loads");
    let card = tiered(&srv, &mut con, "chunks_in_flash");
    assert!(card > 300, "the set stayed on flash: {card} parts");

    // ZSCAN walks the member parts by hash (each read once) and returns
    // every member once; ZRANDMEMBER reads the part of its pick.
    let loads0 = tiered(&srv, &mut con, "chunk_loads");
    let (mut cursor, mut seen) = (0u64, BTreeMap::new());
    let mut calls = 0;
    loop {
        let (next, items): (u64, Vec<(String, f64)>) = redis::cmd("ZSCAN")
            .arg("z")
            .arg(cursor)
            .arg("COUNT")
            .arg(500)
            .query(&mut con)
            .unwrap();
        for (m, s) in items {
            assert!(seen.insert(m, s).is_none(), "ZSCAN gave a member twice");
        }
        calls += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert!(seen == model, "ZSCAN did not return the set");
    let loads = tiered(&srv, &mut con, "chunk_loads") - loads0;
    let parts = tiered(&srv, &mut con, "chunks_in_flash") + tiered(&srv, &mut con, "chunks_in_ram");
    eprintln!("ZSCAN: {calls} calls, {loads} part loads, {parts} parts");
    assert!(
        calls > 10 && loads < parts,
        "ZSCAN: {calls} calls, {loads} loads"
    );
    for _ in 0..20 {
        let m: String = q(&mut con, "ZRANDMEMBER z");
        assert!(model.contains_key(&m), "ZRANDMEMBER gave {m}");
    }

    // Changes of every kind, then the whole set against the model.
    for k in 0..2000 {
        let m = member(rng.gen_range(0..MEMBERS + 500));
        match k % 5 {
            0 | 1 => {
                let s = rng.gen_range(-100..2000) as f64 / 8.0;
                let _: i64 = redis::cmd("ZADD")
                    .arg("z")
                    .arg(s)
                    .arg(&m)
                    .query(&mut con)
                    .unwrap();
                model.insert(m, s);
            }
            2 => {
                let _: f64 = redis::cmd("ZINCRBY")
                    .arg("z")
                    .arg(1.5)
                    .arg(&m)
                    .query(&mut con)
                    .unwrap();
                *model.entry(m).or_insert(0.0) += 1.5;
            }
            3 => {
                let n: i64 = redis::cmd("ZREM").arg("z").arg(&m).query(&mut con).unwrap();
                assert_eq!(n == 1, model.remove(&m).is_some(), "ZREM {m}");
            }
            _ => {
                let got: Vec<(String, f64)> =
                    redis::cmd("ZPOPMIN").arg("z").query(&mut con).unwrap();
                let want = ordered(&model).into_iter().next().unwrap();
                assert_eq!(got, vec![want.clone()], "ZPOPMIN");
                model.remove(&want.0);
            }
        }
    }
    let by_score: Vec<String> = redis::cmd("ZRANGEBYSCORE")
        .arg("z")
        .arg("(10")
        .arg(12)
        .query(&mut con)
        .unwrap();
    let want: Vec<String> = ordered(&model)
        .into_iter()
        .filter(|(_, s)| *s > 10.0 && *s <= 12.0)
        .map(|(m, _)| m)
        .collect();
    assert_eq!(by_score, want, "ZRANGEBYSCORE (10 12");
    check(&mut con, &model, "after changes");

    // Acknowledged under `appendfsync always`: kill -9 loses nothing.
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    check(&mut con, &model, "after kill -9");

    // A checkpoint, more changes, kill -9 again.
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    for i in (0..MEMBERS).step_by(53) {
        let m = member(i);
        let s = -(i as f64);
        let _: i64 = redis::cmd("ZADD")
            .arg("z")
            .arg(s)
            .arg(&m)
            .query(&mut con)
            .unwrap();
        model.insert(m, s);
    }
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    check(&mut con, &model, "after a checkpoint and kill -9");
    let r: String = redis::cmd("INFO")
        .arg("persistence")
        .query(&mut con)
        .unwrap();
    for f in ["recovery_corrupt_records:0", "recovery_missing_keys:0"] {
        assert!(r.contains(f), "{f} not in {r}");
    }
    // Every segment counts exactly the records the index points at.
    let bad: String = q(&mut con, "DEBUG LIVE-BYTES");
    assert!(bad.is_empty(), "segment live bytes differ: {bad}");
}

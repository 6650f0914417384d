//! SWAPDB across kill -9 with `appendfsync always`: every acknowledged swap
//! and write is there after the restart, in the database it was made in,
//! from a full log scan and from a checkpoint and its tail, while values
//! live on flash (their records keep naming the database they were written
//! in; the mapping record says which logical database that is now).

mod common;
use common::*;
use std::collections::HashMap;

const DBS: usize = 3;

/// db -> key -> value
type Model = Vec<HashMap<String, Vec<u8>>>;

fn write(con: &mut redis::Connection, m: &mut Model, db: usize, round: u32, n: usize) {
    let _: () = q(con, &format!("SELECT {db}"));
    for i in 0..n {
        let k = format!("k{}", (i * 7 + round as usize) % 400);
        let v = value_for(&k, round * 1000 + i as u32, 1500);
        let _: () = redis::cmd("SET").arg(&k).arg(&v).query(con).unwrap();
        m[db].insert(k, v);
    }
}

fn swap(con: &mut redis::Connection, m: &mut Model, a: usize, b: usize) {
    let _: () = q(con, &format!("SWAPDB {a} {b}"));
    m.swap(a, b);
}

fn verify(srv: &Server, m: &Model, when: &str) {
    let mut con = srv.client();
    for (db, keys) in m.iter().enumerate() {
        let _: () = q(&mut con, &format!("SELECT {db}"));
        let n: usize = q(&mut con, "DBSIZE");
        assert_eq!(n, keys.len(), "{when}: DBSIZE of db {db}");
        for (k, v) in keys {
            let got: Option<Vec<u8>> = redis::cmd("GET").arg(k).query(&mut con).unwrap();
            assert_eq!(got.as_ref(), Some(v), "{when}: db {db} key {k}");
        }
    }
}

#[test]
fn acknowledged_swaps_survive_kill_9_from_a_scan_and_from_a_checkpoint() {
    let mut srv = Server::start(&[
        "--appendfsync",
        "always",
        // The server's own RAM after its first commands is ~1.8 MB (the
        // Lua VMs, each thread's command statistics ...): at 2 MB the
        // values and the index had ~0.1 MB, and under a busy machine a
        // SET met OOM now and then ("cannot move to flash"). 2.5 MB keeps
        // most of the ~1.4 MB of values on flash, as the test needs.
        "--maxmemory-ram",
        "2500kb",
        "--tiering-min-value-size",
        "16",
        "--flash-segment-size",
        "1mb",
        "--databases",
        "3",
    ]);
    let mut m: Model = vec![HashMap::new(); DBS];
    {
        let mut con = srv.client();
        write(&mut con, &mut m, 0, 1, 600);
        write(&mut con, &mut m, 1, 2, 300);
        swap(&mut con, &mut m, 0, 1);
        write(&mut con, &mut m, 0, 3, 200);
        swap(&mut con, &mut m, 1, 2);
        let _: i64 = q(&mut con, "DEL k3 k10");
        m[0].remove("k3");
        m[0].remove("k10");
        assert!(
            srv.info_u64(&mut con, "tiered", "values_in_flash") > 0,
            "no value reached flash"
        );
    }
    srv.kill9();
    srv.restart();
    verify(&srv, &m, "after kill -9 (full scan)");
    {
        let mut con = srv.client();
        let _: () = q(&mut con, "SAVE");
        swap(&mut con, &mut m, 0, 2);
        write(&mut con, &mut m, 2, 4, 150);
        swap(&mut con, &mut m, 2, 1);
    }
    srv.kill9();
    srv.restart();
    {
        let mut con = srv.client();
        let info = srv.info(&mut con, "persistence");
        assert_eq!(
            info.get("recovery_source").map(String::as_str),
            Some("checkpoint")
        );
    }
    verify(&srv, &m, "after kill -9 (checkpoint + tail)");
}

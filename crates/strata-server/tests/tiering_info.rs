//! Tiering end to end: the real binary with a small RAM budget, values far
//! beyond it, every byte read back, and the INFO tiered counters checked.

mod common;
use common::*;
use redis::Commands;

/// Sizes from 64 B to 64 KiB, spread log-uniformly by key index.
fn size_of(i: usize) -> usize {
    let steps = [64, 100, 300, 1000, 3000, 10_000, 30_000, 65_536];
    steps[i % steps.len()] + (i * 7919) % 64
}

/// 16 MB RAM budget, ~200 MB of values from 64 B to 64 KiB: every key reads
/// back intact, values really live on flash, RAM stays under the budget.
#[test]
fn writes_far_beyond_the_ram_budget_read_back_byte_exact() {
    let srv = Server::start(&["--maxmemory-ram", "16mb"]);
    let mut con = srv.client();
    let mut total = 0usize;
    let mut n = 0usize;
    while total < 200_000_000 {
        let mut pipe = redis::pipe();
        for _ in 0..32 {
            let key = format!("t:{n}");
            let v = value_for(&key, 0, size_of(n));
            total += v.len();
            pipe.set(&key, v).ignore();
            n += 1;
        }
        let _: () = pipe.query(&mut con).unwrap();
    }
    wait_until("demotion to settle", || {
        let info = srv.info(&mut con, "tiered");
        info["tiered_pending_stash_cnt"] == "0"
    });
    let t = srv.info(&mut con, "tiered");
    let get = |f: &str| t[f].parse::<u64>().unwrap();
    assert!(get("values_in_flash") > (n as u64) / 2, "{t:?}");
    assert_eq!(get("values_in_flash") + get("values_in_ram"), n as u64);
    assert!(get("tiered_entries_bytes") > 150_000_000);
    assert!(get("flash_bytes_written") >= get("tiered_entries_bytes"));
    assert!(get("tiered_allocated_bytes") >= get("flash_live_bytes"));
    assert_eq!(get("flash_read_errors"), 0);
    let used = srv.info_u64(&mut con, "memory", "used_memory");
    let peak = srv.info_u64(&mut con, "memory", "used_memory_peak");
    // The budget covers all but the clients' buffers (INFO
    // mem_clients_normal: services/clients/buffers.rs), as its admission does.
    let clients = srv.info_u64(&mut con, "memory", "mem_clients_normal");
    assert!(
        used.saturating_sub(clients) <= 16 << 20,
        "used_memory {used} less the clients' {clients} above the 16 MB budget"
    );
    // Backpressure bounds the peak: the budget plus what is in flight.
    assert!(
        peak <= 24 << 20,
        "used_memory_peak {peak} far above the budget"
    );
    // jemalloc's own figures (Redis's allocator_* fields): what it holds
    // covers what was asked of it, and the process holds what it holds.
    // (All three from one reply: each INFO reads a new snapshot, and
    // demotion frees memory between two.)
    let memory = srv.info(&mut con, "memory");
    let alloc = |f: &str| memory[f].parse::<u64>().expect(f);
    let (allocated, active, resident) = (
        alloc("allocator_allocated"),
        alloc("allocator_active"),
        alloc("allocator_resident"),
    );
    assert!(
        allocated > 0 && allocated <= active && active <= resident,
        "allocated {allocated}, active {active}, resident {resident}"
    );
    assert!(resident <= srv.info_u64(&mut con, "memory", "used_memory_rss"));
    let name = srv.info(&mut con, "memory")["mem_allocator"].clone();
    assert!(name.starts_with("jemalloc-"), "mem_allocator:{name}");

    // Read everything back, pipelined, checking every byte.
    let fetches_before = get("tiered_total_fetches");
    for start in (0..n).step_by(64) {
        let keys: Vec<String> = (start..(start + 64).min(n))
            .map(|i| format!("t:{i}"))
            .collect();
        let values: Vec<Vec<u8>> = con.mget(&keys).unwrap();
        for (i, v) in (start..).zip(values) {
            let key = format!("t:{i}");
            assert_eq!(v, value_for(&key, 0, size_of(i)), "{key}");
        }
    }
    let t = srv.info(&mut con, "tiered");
    let fetches = t["tiered_total_fetches"].parse::<u64>().unwrap() - fetches_before;
    assert!(
        fetches > (n as u64) / 2,
        "cold reads went to flash ({fetches})"
    );
    let misses: u64 = t["tiered_ram_misses"].parse().unwrap();
    let hits: u64 = t["tiered_ram_hits"].parse().unwrap();
    assert_eq!(hits + misses, n as u64, "every GET counted once");
    let ratio: f64 = t["ram_hit_ratio"].parse().unwrap();
    assert!((ratio - hits as f64 / n as f64).abs() < 0.001);
    assert!(srv.info_u64(&mut con, "memory", "used_memory") <= 16 << 20);
}

/// Fills until values are on flash; returns some keys whose value is cold.
fn cold_keys(srv: &Server, con: &mut redis::Connection, prefix: &str, want: usize) -> Vec<String> {
    for i in 0..3000 {
        let key = format!("{prefix}{i}");
        let _: () = con.set(&key, value_for(&key, 0, 8000)).unwrap();
    }
    wait_until("values on flash", || {
        srv.info_u64(con, "tiered", "values_in_flash") > 1000
    });
    let mut cold = Vec::new();
    for i in 0..3000 {
        let key = format!("{prefix}{i}");
        let tier: String = redis::cmd("DEBUG")
            .arg("TIER")
            .arg(&key)
            .query(con)
            .unwrap();
        if tier.starts_with("tier:flash") {
            cold.push(key);
            if cold.len() == want {
                break;
            }
        }
    }
    assert_eq!(cold.len(), want);
    cold
}

/// Overwrite, delete, expire and rename of cold values: right answers, and
/// the first three cost no flash read.
#[test]
fn overwrite_delete_expire_rename_of_cold_values() {
    let srv = Server::start(&["--maxmemory-ram", "8mb"]);
    let mut con = srv.client();
    let cold = cold_keys(&srv, &mut con, "c:", 40);
    let fetches = srv.info_u64(&mut con, "tiered", "tiered_total_fetches");
    for k in &cold[0..10] {
        let _: () = con.set(k, "fresh").unwrap();
    }
    for k in &cold[10..20] {
        let n: i64 = con.del(k).unwrap();
        assert_eq!(n, 1);
    }
    for k in &cold[20..30] {
        let ok: i64 = redis::cmd("PEXPIRE").arg(k).arg(1).query(&mut con).unwrap();
        assert_eq!(ok, 1);
    }
    assert_eq!(
        srv.info_u64(&mut con, "tiered", "tiered_total_fetches"),
        fetches,
        "overwrite/delete/expire of cold values read flash"
    );
    for k in &cold[0..10] {
        let v: String = con.get(k).unwrap();
        assert_eq!(v, "fresh");
    }
    for k in &cold[10..30] {
        wait_until("expiry", || !con.exists::<_, bool>(k).unwrap());
        let v: Option<Vec<u8>> = con.get(k).unwrap();
        assert_eq!(v, None);
    }
    // RENAME of a cold value keeps its bytes (and TTL).
    for (i, k) in cold[30..40].iter().enumerate() {
        let _: i64 = con.expire(k, 1000).unwrap();
        let dst = format!("renamed:{i}");
        let _: () = con.rename(k, &dst).unwrap();
        let v: Vec<u8> = con.get(&dst).unwrap();
        assert_eq!(v, value_for(k, 0, 8000));
        let ttl: i64 = con.ttl(&dst).unwrap();
        assert!(ttl > 990 && ttl <= 1000);
        assert!(!con.exists::<_, bool>(k).unwrap());
    }
    assert_eq!(srv.info_u64(&mut con, "tiered", "flash_read_errors"), 0);
}

/// Overwrite churn in a small flash budget: the collector frees segments,
/// flash use stays bounded and every key stays readable.
#[test]
fn gc_reclaims_space_under_overwrite_churn() {
    let srv = Server::start(&[
        "--maxmemory-ram",
        "4mb",
        "--flash-max-size",
        "64mb",
        "--flash-segment-size",
        "4mb",
    ]);
    let mut con = srv.client();
    let keys = 2000;
    for round in 0..20u32 {
        let mut pipe = redis::pipe();
        for i in 0..keys {
            let key = format!("g:{i}");
            pipe.set(&key, value_for(&key, round, 2000)).ignore();
        }
        let _: () = pipe.query(&mut con).unwrap();
    }
    // 20 rounds × 4 MB = 80 MB of values through a 64 MB flash budget.
    wait_until("segments freed", || {
        srv.info_u64(&mut con, "tiered", "flash_segments_freed") > 3
    });
    let t = srv.info(&mut con, "tiered");
    assert!(t["tiered_allocated_bytes"].parse::<u64>().unwrap() <= 64 << 20);
    for i in 0..keys {
        let key = format!("g:{i}");
        let v: Vec<u8> = con.get(&key).unwrap();
        assert_eq!(v, value_for(&key, 19, 2000), "{key}");
    }
}

/// A server whose RAM (4 MB) and flash (16 MB) fill up quickly.
fn full_server(policy: &str) -> Server {
    Server::start(&[
        "--maxmemory-ram",
        "4mb",
        "--flash-max-size",
        "16mb",
        "--flash-segment-size",
        "2mb",
        "--maxmemory-policy",
        policy,
    ])
}

/// noeviction: when RAM and flash are full, writes get -OOM and nothing
/// acknowledged is lost.
#[test]
fn noeviction_answers_oom_and_loses_nothing() {
    let srv = full_server("noeviction");
    let mut con = srv.client();
    let mut acked = Vec::new();
    let mut oom = None;
    for i in 0..20_000 {
        let key = format!("o:{i}");
        match con.set::<_, _, ()>(&key, value_for(&key, 0, 1024)) {
            Ok(()) => acked.push(key),
            Err(e) => {
                oom = Some(e.to_string());
                break;
            }
        }
    }
    let oom = oom.expect("20 MB into 4 MB RAM + 16 MB flash was never refused");
    assert!(oom.contains("OOM"), "{oom}");
    // The refusal names the limit it hit (issue #12).
    assert!(
        oom.contains("'flash-max-size'") || oom.contains("'maxmemory-ram'"),
        "{oom}"
    );
    // Reads still work and every acknowledged write is intact.
    for key in &acked {
        let v: Vec<u8> = con.get(key).unwrap();
        assert_eq!(v, value_for(key, 0, 1024), "{key}");
    }
    // Deletes are allowed (not denyoom) and make room again.
    for key in &acked[..acked.len() / 2] {
        let _: i64 = con.del(key).unwrap();
    }
    wait_until("room after deletes", || {
        con.set::<_, _, ()>("after", value_for("after", 0, 1024))
            .is_ok()
    });
}

/// allkeys-lru evicts (cold keys first) instead of refusing writes.
#[test]
fn allkeys_lru_evicts_instead_of_refusing() {
    let srv = full_server("allkeys-lru");
    let mut con = srv.client();
    for i in 0..40_000 {
        let key = format!("e:{i}");
        let _: () = con.set(&key, value_for(&key, 0, 1024)).unwrap();
    }
    let evicted = srv.info_u64(&mut con, "stats", "evicted_keys");
    assert!(evicted > 0);
    // The log stays within flash-max-size, give or take the one segment
    // the collector may open to move records before it frees their old one.
    let allocated = srv.info_u64(&mut con, "tiered", "tiered_allocated_bytes");
    assert!(allocated <= (16 + 2) << 20, "{allocated}");
    // What is left reads back intact.
    let mut present = 0;
    for i in (0..40_000).step_by(97) {
        let key = format!("e:{i}");
        if let Some(v) = con.get::<_, Option<Vec<u8>>>(&key).unwrap() {
            assert_eq!(v, value_for(&key, 0, 1024));
            present += 1;
        }
    }
    assert!(present > 0);
}

/// Pipelined GETs of cold values are served together (many reads in
/// flight), in order, each with the right value.
#[test]
fn pipelined_cold_reads_complete_in_order() {
    pipelined_cold_reads("per-core");
}

/// The same on the shared runtime (`server-runtime shared`): every
/// connection on one work-stealing runtime.
#[test]
fn pipelined_cold_reads_complete_in_order_on_the_shared_runtime() {
    pipelined_cold_reads("shared");
}

/// The same with a loop that sleeps at once while its reads are in flight
/// (`flash-poll-us 0`), then one that waits for them on the CPU for up to
/// 1 ms (set at runtime): every read completes, in order, either way.
#[test]
fn pipelined_cold_reads_complete_whatever_the_flash_poll() {
    let (_srv, mut con, cold) = pipelined_cold_reads_with("per-core", &["--flash-poll-us", "0"]);
    let get = |con: &mut redis::Connection| -> Vec<String> {
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("flash-poll-us")
            .query(con)
            .unwrap()
    };
    assert_eq!(get(&mut con), ["flash-poll-us", "0"]);
    let _: () = q(&mut con, "CONFIG SET flash-poll-us 1000");
    assert_eq!(get(&mut con), ["flash-poll-us", "1000"]);
    read_cold_in_order(&mut con, &cold);
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("flash-poll-us")
        .arg("-1")
        .query::<()>(&mut con)
        .expect_err("a negative flash-poll-us is refused")
        .to_string();
    assert!(e.contains("flash-poll-us"), "{e}");
    assert_eq!(get(&mut con), ["flash-poll-us", "1000"]);
}

fn pipelined_cold_reads(runtime: &str) {
    pipelined_cold_reads_with(runtime, &[]);
}

/// A server with `extra` options whose 200 cold values were read back in
/// one pipeline; with the cold keys.
fn pipelined_cold_reads_with(
    runtime: &str,
    extra: &[&str],
) -> (Server, redis::Connection, Vec<String>) {
    let mut args = vec![
        "--maxmemory-ram",
        "8mb",
        "--tiering-promote",
        "never",
        "--server-runtime",
        runtime,
    ];
    args.extend_from_slice(extra);
    let srv = Server::start(&args);
    let mut con = srv.client();
    assert_eq!(srv.info(&mut con, "server")["server_runtime"], runtime);
    let cold = cold_keys(&srv, &mut con, "p:", 200);
    read_cold_in_order(&mut con, &cold);
    (srv, con, cold)
}

/// Reads `cold` back in one pipeline, a write after each read; checks
/// every value and that they are still cold (promote never).
fn read_cold_in_order(con: &mut redis::Connection, cold: &[String]) {
    let mut pipe = redis::pipe();
    for k in cold {
        pipe.get(k);
        pipe.set(format!("marker:{k}"), 1).ignore();
    }
    let values: Vec<Vec<u8>> = pipe.query(con).unwrap();
    for (k, v) in cold.iter().zip(values) {
        assert_eq!(v, value_for(k, 0, 8000), "{k}");
    }
    let tier: String = redis::cmd("DEBUG")
        .arg("TIER")
        .arg(&cold[0])
        .query(con)
        .unwrap();
    assert!(tier.starts_with("tier:flash"), "{tier}");
}

/// INFO tiered, asked for by name, names the collection with the most
/// elements (over all databases, on flash or in RAM) and what finding it
/// cost; the default INFO does not scan for it.
#[test]
fn info_tiered_names_the_largest_collection() {
    let srv = Server::start(&["--maxmemory-ram", "4mb", "--tiering-min-value-size", "16"]);
    let mut con = srv.client();
    let t = srv.info(&mut con, "tiered");
    assert_eq!(t["largest_collection_elements"], "0", "{t:?}");
    for i in 0..40 {
        let fields: Vec<(String, String)> = (0..10)
            .map(|f| (format!("f{f}"), format!("{i}-{f}")))
            .collect();
        let _: () = con.hset_multiple(format!("h:{i}"), &fields).unwrap();
    }
    let _: () = q(&mut con, "SELECT 2");
    let members: Vec<String> = (0..300).map(|m| format!("m{m}")).collect();
    let _: i64 = con.sadd("big set:é", &members).unwrap();
    let _: () = q(&mut con, "SELECT 0");
    let _: i64 = con.rpush("l", &members[..50]).unwrap();
    // Ballast pushes the collections to flash: the count is kept in RAM.
    for i in 0..200 {
        let _: () = con.set(format!("ballast:{i}"), vec![b'x'; 40_000]).unwrap();
    }
    let t = srv.info(&mut con, "tiered");
    assert_eq!(
        t["largest_collection_key"], "big\\x20set\\x3a\\xc3\\xa9",
        "{t:?}"
    );
    assert_eq!(t["largest_collection_db"], "2");
    assert_eq!(t["largest_collection_type"], "set");
    assert_eq!(t["largest_collection_elements"], "300");
    assert!(t["largest_collection_bytes"].parse::<u64>().unwrap() > 300 * 4);
    assert!(t.contains_key("largest_collection_scan_us"));
    let _: i64 = con.del("l").unwrap();
    let _: () = q(&mut con, "SELECT 2");
    // 9 members left: below the hashes' 10 fields (a tie would go to
    // whichever shard the scan meets first, and shards are seeded).
    let _: i64 = con.srem("big set:é", &members[..291]).unwrap();
    let t = srv.info(&mut con, "tiered");
    assert_eq!(t["largest_collection_elements"], "10", "{t:?}");
    assert_eq!(t["largest_collection_type"], "hash");
    let all = srv.info(&mut con, "everything");
    assert!(!all.contains_key("largest_collection_elements"));
}

/// When the keys' index fills the RAM budget by itself (every value on
/// flash), a write is refused with an OOM that names `maxmemory-ram` and
/// what the index takes; INFO gives the index per key and no room left;
/// and, idle, the server does not keep scanning for values to demote
/// (it scanned every key each tick, burning ~7% of a core: issue #12).
#[test]
fn an_index_that_fills_the_ram_budget_is_named_in_the_refusal() {
    let srv = Server::start(&["--maxmemory-ram", "8mb", "--appendonly", "no"]);
    let mut con = srv.client();
    let mut oom = None;
    let mut n = 0;
    let t0 = std::time::Instant::now();
    'fill: for _ in 0..800 {
        let mut pipe = redis::pipe();
        for _ in 0..500 {
            let key = format!("k:{n}");
            pipe.set(&key, value_for(&key, 0, 512));
            n += 1;
        }
        if let Err(e) = pipe.query::<()>(&mut con) {
            oom = Some(e.to_string());
            break 'fill;
        }
    }
    let oom = oom.expect("400,000 keys fit an 8 MB RAM budget");
    eprintln!("refused after {n} SETs in {:?}", t0.elapsed());
    eprintln!("{oom}");
    assert!(oom.starts_with("OOM"), "{oom}");
    // The index is most of what cannot move to flash.
    let words: Vec<&str> = oom.split(' ').collect();
    let at = |w: &str| words.iter().position(|x| *x == w).unwrap();
    let pinned: u64 = words[at("in") - 2].parse().unwrap();
    let index: u64 = words[at("takes") + 1].parse().unwrap();
    assert!(2 * index > pinned, "{oom}");
    assert!(oom.contains("'maxmemory-ram'"), "{oom}");
    assert!(oom.contains("the keys' index takes"), "{oom}");
    let per_key = srv.info_u64(&mut con, "tiered", "index_bytes_per_key");
    let keys: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    let index = srv.info_u64(&mut con, "tiered", "index_bytes");
    assert_eq!(per_key, index / keys);
    // (SETs after the refused one may have added keys since.)
    let said: u64 = words[at("per") - 2]
        .trim_start_matches('(')
        .parse()
        .unwrap();
    assert!(said.abs_diff(per_key) <= 2, "{oom}: {per_key} per key now");
    // (What RAM holds besides moves by a few KB between two INFOs.)
    let room = srv.info_u64(&mut con, "tiered", "index_keys_room");
    assert!(room * 50 < keys, "room for {room} more keys beside {keys}");
    // The last values written go to flash; then RAM holds nothing that can.
    wait_until("every value on flash", || {
        srv.info_u64(&mut con, "tiered", "values_in_ram") == 0
    });
    // Idle: no demotion pass runs over the keys (ten ticks at hz 10).
    let scanned = srv.info_u64(&mut con, "tiered", "demotion_scanned");
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(
        srv.info_u64(&mut con, "tiered", "demotion_scanned"),
        scanned,
        "demotion kept scanning with nothing in RAM to move"
    );
    // Deleting keys makes room for new ones.
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    let _: () = con.set("after", "v").unwrap();
    assert!(srv.info_u64(&mut con, "tiered", "index_keys_room") > 1000);
}

/// Values freed all over the allocator's pages (demotion does it; here,
/// deleting three keys of every four) leave its slabs a quarter used;
/// active defragmentation moves the values left out of the sparse slabs, so
/// the free room in partly used pages falls under what starts a pass (4 MiB
/// or 5% of what is allocated), far below what the same deletes leave with
/// `activedefrag no` (where nothing moves), and every value left still
/// reads back byte for byte.
#[test]
fn active_defrag_gives_back_the_pages_deletes_left_sparse() {
    let mut free_room = Vec::new();
    let n = 200_000;
    for on in [true, false] {
        let srv = Server::start(&[
            "--maxmemory-ram",
            "1gb",
            "--appendonly",
            "no",
            "--activedefrag",
            if on { "yes" } else { "no" },
        ]);
        let mut con = srv.client();
        for start in (0..n).step_by(1000) {
            let mut pipe = redis::pipe();
            for i in start..start + 1000 {
                let key = format!("d:{i}");
                pipe.set(&key, value_for(&key, 0, 512)).ignore();
            }
            let _: () = pipe.query(&mut con).unwrap();
        }
        for start in (0..n).step_by(1000) {
            let mut pipe = redis::pipe();
            for i in (start..start + 1000).filter(|i| i % 4 != 0) {
                pipe.del(format!("d:{i}")).ignore();
            }
            let _: () = pipe.query(&mut con).unwrap();
        }
        let hits = |con: &mut redis::Connection| srv.info_u64(con, "stats", "active_defrag_hits");
        let room = |con: &mut redis::Connection| {
            (
                srv.info_u64(con, "memory", "allocator_frag_bytes"),
                srv.info_u64(con, "memory", "allocator_allocated"),
            )
        };
        let free = if on {
            wait_until("defragmentation to bring the free room under 5%", || {
                let (free, allocated) = room(&mut con);
                free < (4 << 20) || free * 20 < allocated * 11 / 10
            });
            assert!(hits(&mut con) > 0);
            room(&mut con).0
        } else {
            std::thread::sleep(std::time::Duration::from_secs(3));
            assert_eq!(hits(&mut con), 0);
            assert_eq!(srv.info(&mut con, "memory")["active_defrag_running"], "0");
            room(&mut con).0
        };
        free_room.push(free);
        for start in (0..n).step_by(1000) {
            let mut pipe = redis::pipe();
            for i in (start..start + 1000).step_by(4) {
                pipe.get(format!("d:{i}"));
            }
            let got: Vec<Vec<u8>> = pipe.query(&mut con).unwrap();
            for (k, v) in got.iter().enumerate() {
                let key = format!("d:{}", start + 4 * k);
                assert!(*v == value_for(&key, 0, 512), "{key} changed");
            }
        }
    }
    // The deletes left ~75 MB free in partly used pages.
    assert!(
        free_room[0] * 4 < free_room[1] && free_room[1] > 20 << 20,
        "free room in partly used pages with / without defragmentation: {free_room:?}"
    );
}

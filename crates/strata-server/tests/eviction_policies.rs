//! Redis's eight `maxmemory-policy` values, every reply compared with
//! redis-server 7.0: CONFIG SET / GET of each, the error for a bad one,
//! OBJECT FREQ and IDLETIME under LRU and LFU policies (a new key's
//! counter, the first read's certain increment, an overwrite that keeps
//! it), and a volatile policy over `maxmemory` that evicts the keys with
//! a TTL, then refuses writes with OOM when none is left. Which keys each
//! policy evicts is tested in the engine (`tests/eviction.rs`).

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;
#[allow(dead_code)]
#[path = "redis_diff/scenario.rs"]
mod scenario;

use oracle::RedisServer;
use scenario::{scenario, Step, Step::*};

#[test]
fn eviction_policies_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let (rp, sp) = (redis.port, strata.port);
    let run = |name: &str, steps: &[Step]| scenario(name, rp, sp, steps);

    let mut steps = Vec::new();
    for p in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "noeviction",
    ] {
        steps.push(Cmd(0, leak(format!("CONFIG SET maxmemory-policy {p}"))));
        steps.push(Cmd(0, "CONFIG GET maxmemory-policy"));
    }
    steps.extend([
        Cmd(0, "CONFIG SET maxmemory-policy volatile-lruu"),
        Cmd(0, "CONFIG SET maxmemory-policy ALLKEYS-LFU"),
        Cmd(0, "CONFIG GET maxmemory-policy"),
        Cmd(0, "CONFIG GET maxmemory-samples"),
        Cmd(0, "CONFIG GET lfu-log-factor"),
        Cmd(0, "CONFIG GET lfu-decay-time"),
    ]);
    run("CONFIG SET and GET of every policy", &steps);

    run(
        "OBJECT FREQ and IDLETIME under LRU and LFU",
        &[
            Cmd(0, "CONFIG SET maxmemory-policy allkeys-lru"),
            Cmd(0, "SET k v"),
            Cmd(0, "OBJECT FREQ k"),
            Cmd(0, "OBJECT IDLETIME k"),
            Cmd(0, "CONFIG SET maxmemory-policy allkeys-lfu"),
            Cmd(0, "SET n v"),
            Cmd(0, "OBJECT FREQ n"),
            Cmd(0, "OBJECT IDLETIME n"),
            // From the initial 5, the first access always counts.
            Cmd(0, "GET n"),
            Cmd(0, "OBJECT FREQ n"),
            Cmd(0, "SET o v"),
            Cmd(0, "SET o w"),
            Cmd(0, "OBJECT FREQ o"),
            Cmd(0, "OBJECT FREQ missing"),
            Cmd(0, "CONFIG SET maxmemory-policy volatile-lfu"),
            Cmd(0, "OBJECT FREQ n"),
            Cmd(0, "CONFIG SET maxmemory-policy volatile-ttl"),
            Cmd(0, "OBJECT FREQ n"),
            Cmd(0, "CONFIG SET maxmemory-policy noeviction"),
        ],
    );

    run(
        "volatile-lru over maxmemory: the keys with a TTL go, then OOM",
        &[
            Cmd(0, "CONFIG SET maxmemory-policy volatile-lru"),
            Cmd(0, "SET keep 1"),
            Cmd(0, "SET t1 1 EX 1000"),
            Cmd(0, "SET t2 1 EX 1000"),
            // Redis evicts at once when maxmemory is lowered below use.
            Cmd(0, "CONFIG SET maxmemory 1"),
            Cmd(0, "EXISTS t1 t2"),
            Cmd(0, "SET z 1"),
            Cmd(0, "SET t3 1 EX 100"),
            Cmd(0, "DBSIZE"),
            Cmd(0, "GET keep"),
            Cmd(0, "CONFIG SET maxmemory 0"),
            Cmd(0, "CONFIG SET maxmemory-policy noeviction"),
        ],
    );
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

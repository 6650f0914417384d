//! Backpressure, not refusal (issue 46, point 3): a pipelined load into a
//! RAM budget far smaller than the data waits while the journal and
//! demotion catch up, and is never refused while flash has room; INFO
//! says how long writes waited and for what.

mod common;
use common::*;

/// A hash of 400k fields (~46 MB) loaded into `--maxmemory-ram 8mb` by
/// pipelines of 5,000 HSETs (as redis-py's `pipeline()` sends them): every
/// field is acknowledged, none refused. (Before, every run met `-OOM ...
/// bytes in RAM cannot move to flash` 65k–345k fields in: demotion was
/// declared stuck while the journal still had the changed parts to write,
/// and each slow HSET's slow log entry kept the client's whole read buffer
/// alive, megabytes of RAM that could never move.)
#[test]
fn a_pipelined_load_into_a_small_ram_budget_waits_and_is_never_refused() {
    let srv = Server::start(&["--maxmemory-ram", "8mb", "--appendonly", "yes"]);
    let mut con = srv.client();
    let fields = 400_000;
    let value = vec![b'v'; 100];
    for start in (0..fields).step_by(5000) {
        let mut pipe = redis::pipe();
        for i in start..(start + 5000).min(fields) {
            pipe.hset("bighash", format!("field:{i}"), &value).ignore();
        }
        let r: redis::RedisResult<()> = pipe.query(&mut con);
        assert!(r.is_ok(), "refused {start} fields in: {r:?}");
    }
    let n: u64 = redis::cmd("HLEN").arg("bighash").query(&mut con).unwrap();
    assert_eq!(n, fields as u64);
    let stats = srv.info(&mut con, "stats");
    assert_eq!(stats["oom_rejections"], "0", "{stats:?}");
    // The wait is measured and told apart by what it waited for.
    let waits: u64 = ["ram", "journal", "flash"]
        .iter()
        .map(|w| {
            stats[&format!("write_backpressure_waits_{w}")]
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        waits,
        stats["write_backpressure_waits"].parse::<u64>().unwrap()
    );
    assert!(stats.contains_key("write_backpressure_wait_ms"));
    // The data is on flash, RAM within the budget.
    let t = srv.info(&mut con, "tiered");
    assert!(
        t["collections_in_flash_bytes"].parse::<u64>().unwrap() > 20_000_000,
        "{t:?}"
    );
}

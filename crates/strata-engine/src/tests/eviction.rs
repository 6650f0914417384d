//! The eviction policies' choice of victims (`tiering/evict.rs`), with
//! every value in RAM (small values stay there: the cold-first rule has
//! nothing to take).

use super::*;
use crate::clock::now_ms;
use crate::keyspace::strings::ExpireUpdate;

fn engine(dir: &std::path::Path, policy: EvictionPolicy) -> Engine {
    let mut c = config(dir, IoBackend::Psync);
    c.maxmemory_ram = 64 << 20;
    c.eviction = policy;
    // Sampling sees a whole small shard map at once.
    c.maxmemory_samples = 64;
    Engine::open(c).unwrap()
}

fn set(e: &Engine, key: &str, ttl_ms: Option<u64>) {
    let expire = match ttl_ms {
        Some(t) => ExpireUpdate::At(now_ms() + t),
        None => ExpireUpdate::Clear,
    };
    let opts = SetOptions {
        expire,
        ..SetOptions::default()
    };
    e.set(0, key.as_bytes(), b"sixteen bytes...", opts).unwrap();
}

fn exists(e: &Engine, key: &str) -> bool {
    e.exists(0, key.as_bytes())
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl_then_refuse() {
    for policy in [
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileLfu,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileTtl,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path(), policy);
        for i in 0..1000 {
            set(&e, &format!("keep:{i}"), None);
        }
        for i in 0..60 {
            set(&e, &format!("ttl:{i}"), Some(3_600_000 + i * 1000));
        }
        assert_eq!(e.inner.evict_some(policy, 50), 50, "{policy:?}");
        // Fewer left than asked for: what is left, then nothing.
        assert_eq!(e.inner.evict_some(policy, 50), 10, "{policy:?}");
        assert_eq!(e.inner.evict_some(policy, 50), 0, "{policy:?}");
        assert!(
            (0..1000).all(|i| exists(&e, &format!("keep:{i}"))),
            "{policy:?}"
        );
        assert!(
            (0..60).all(|i| !exists(&e, &format!("ttl:{i}"))),
            "{policy:?}"
        );
        // Over maxmemory with nothing the policy may evict: refused, as
        // Redis refuses, and nothing is lost.
        e.set_maxmemory(1);
        assert_eq!(e.admission(), Admission::OutOfMemory, "{policy:?}");
        assert_eq!(e.inner.key_count(), 1000);
    }
}

#[test]
fn allkeys_policies_evict_keys_without_a_ttl_and_refuse_only_when_empty() {
    for policy in [
        EvictionPolicy::AllkeysLru,
        EvictionPolicy::AllkeysLfu,
        EvictionPolicy::AllkeysRandom,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path(), policy);
        for i in 0..40 {
            set(&e, &format!("k:{i}"), None);
        }
        assert_eq!(e.inner.evict_some(policy, 30), 30, "{policy:?}");
        assert_eq!(e.inner.evict_some(policy, 30), 10, "{policy:?}");
        assert_eq!(e.inner.key_count(), 0);
        e.set_maxmemory(1);
        assert_eq!(e.admission(), Admission::OutOfMemory, "{policy:?}");
    }
}

#[test]
fn volatile_ttl_evicts_the_nearest_expiry_first() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), EvictionPolicy::VolatileTtl);
    for i in 0..100 {
        set(&e, &format!("soon:{i}"), Some(100_000));
        set(&e, &format!("late:{i}"), Some(10_000_000));
    }
    // Two per shard (8 shards, ~12 of each kind in each).
    assert_eq!(e.inner.evict_some(EvictionPolicy::VolatileTtl, 16), 16);
    assert!((0..100).all(|i| exists(&e, &format!("late:{i}"))));
    assert_eq!(
        (0..100)
            .filter(|i| !exists(&e, &format!("soon:{i}")))
            .count(),
        16
    );
}

#[test]
fn allkeys_lfu_keeps_the_keys_read_often() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), EvictionPolicy::AllkeysLfu);
    for i in 0..100 {
        set(&e, &format!("often:{i}"), None);
        set(&e, &format!("never:{i}"), None);
    }
    for _ in 0..10 {
        for i in 0..100 {
            e.get_in_ram(0, format!("often:{i}").as_bytes(), |v| assert!(v.is_some()));
        }
    }
    let freq = |k: &str| e.key_info(0, k.as_bytes()).unwrap().lfu_freq;
    // The first read after the initial 5 always counts (Redis's LFU_INIT_VAL).
    assert!((0..100).all(|i| freq(&format!("often:{i}")) >= 6));
    assert!((0..100).all(|i| freq(&format!("never:{i}")) == 5));
    // Two per shard (8 shards; each holds two of the "never" keys but with
    // a chance of 2e-4 per run), each the least used of its shard's map.
    assert_eq!(e.inner.evict_some(EvictionPolicy::AllkeysLfu, 16), 16);
    assert!((0..100).all(|i| exists(&e, &format!("often:{i}"))));
}

#[test]
fn allkeys_lru_keeps_the_keys_read_last() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), EvictionPolicy::AllkeysLru);
    for i in 0..100 {
        set(&e, &format!("old:{i}"), None);
    }
    // Access times are in seconds: the recent keys are a second younger.
    std::thread::sleep(Duration::from_millis(1100));
    for i in 0..100 {
        set(&e, &format!("new:{i}"), None);
    }
    // Two per shard, as above.
    assert_eq!(e.inner.evict_some(EvictionPolicy::AllkeysLru, 16), 16);
    assert!((0..100).all(|i| exists(&e, &format!("new:{i}"))));
}

#[test]
fn counters_move_only_under_an_lfu_policy() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), EvictionPolicy::AllkeysLru);
    set(&e, "k", None);
    for _ in 0..5 {
        e.get_in_ram(0, b"k", |_| ());
    }
    assert_eq!(e.key_info(0, b"k").unwrap().lfu_freq, 5);
    e.set_eviction(EvictionPolicy::VolatileLfu);
    e.get_in_ram(0, b"k", |_| ());
    assert_eq!(e.key_info(0, b"k").unwrap().lfu_freq, 6);
}

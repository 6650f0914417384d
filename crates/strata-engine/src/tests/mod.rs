//! Engine tests against a reference model, on both I/O backends, with and
//! without injected faults. Each test runs the real background thread with
//! a tiny RAM budget so values really move to flash.

mod big_strings;
mod blind_adds;
mod collections;
mod durability;
mod eviction;
mod part_changes;
mod string_changes;
mod swapdb;
mod torn_changes;

use crate::testing::FaultyIo;
use crate::{
    Admission, Engine, EngineConfig, EngineError, EvictionPolicy, IoBackend, Location,
    PromotePolicy, SetOptions,
};
use bytes::Bytes;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn backends() -> Vec<IoBackend> {
    let mut v = vec![IoBackend::Psync];
    if crate::flash::io::open_backend(IoBackend::IoUring, 8).is_ok() {
        v.push(IoBackend::IoUring);
    } else {
        eprintln!("io_uring unavailable here: testing psync only");
    }
    v
}

fn config(dir: &std::path::Path, backend: IoBackend) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = backend;
    c.maxmemory_ram = 256 << 10;
    c.segment_size = 1 << 20;
    c.write_chunk = 64 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.hz = 100;
    c
}

/// A value whose bytes are derived from its key and a generation.
pub(crate) fn value_for(key: &[u8], gen: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut x = crc32c::crc32c(key) ^ gen.wrapping_mul(0x9e37_79b9);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asserts that each segment's live bytes are the records the index
/// points at, once in-flight work settles (a mismatch that lasts is a
/// leaked or lost reference).
pub(crate) fn assert_live_bytes(e: &Engine, what: &str) {
    let mut bad = e.audit_live_bytes();
    for _ in 0..50 {
        if bad.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        bad = e.audit_live_bytes();
    }
    assert!(
        bad.is_empty(),
        "{what}: live bytes (segment, counted, pointed at): {bad:?}"
    );
}

/// Asserts that recovery found no damage and started from a checkpoint
/// or not, as expected.
pub(crate) fn assert_recovered(e: &Engine, from_checkpoint: bool, what: &str) {
    let r = e.recovery_report();
    assert_eq!(r.from_checkpoint, from_checkpoint, "{what}: {r:?}");
    assert_eq!(
        r.corrupt_records + r.missing_segment_entries,
        0,
        "{what}: {r:?}"
    );
}

async fn get(e: &Engine, db: usize, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
    e.get(db, key).wait().await
}

#[test]
fn values_demote_to_flash_and_read_back_on_every_backend() {
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(config(dir.path(), backend)).unwrap();
        let mut model = HashMap::new();
        for i in 0..2000u32 {
            let key = format!("key:{i}").into_bytes();
            let v = value_for(&key, 0, 16 + (i as usize * 37) % 3000);
            e.set(0, &key, &v, SetOptions::default()).unwrap();
            model.insert(key, v);
        }
        wait_until("demotion", || e.tiered_info().values_in_flash > 500);
        block_on(async {
            for (k, v) in &model {
                assert_eq!(
                    get(&e, 0, k).await.unwrap().as_deref(),
                    Some(&v[..]),
                    "{backend:?}"
                );
            }
        });
        let t = e.tiered_info();
        assert!(t.fetches > 0 && t.stashes + t.free_demotions > 0 && t.flash_bytes_written > 0);
        assert_eq!(t.read_errors, 0);
        // Values below the minimum size never left RAM.
        for (k, v) in &model {
            if v.len() < 64 {
                let l = e.key_info(0, k).unwrap().location;
                assert!(!matches!(l, Location::Flash(_)), "{l:?}");
            }
        }
    }
}

/// Random operations checked against a HashMap, with demotion, promotion,
/// GC and expiry all running underneath.
#[test]
fn random_operations_match_a_reference_model() {
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path(), backend);
        c.promote = PromotePolicy::FirstRead;
        let e = Engine::open(c).unwrap();
        let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut rng = StdRng::seed_from_u64(7);
        block_on(async {
            for step in 0..20_000u32 {
                let key = format!("k{}", rng.gen_range(0..800)).into_bytes();
                match rng.gen_range(0..10) {
                    0..=3 => {
                        let v = value_for(&key, step, rng.gen_range(0..4000));
                        e.set(0, &key, &v, SetOptions::default()).unwrap();
                        model.insert(key, v);
                    }
                    4 => {
                        assert_eq!(e.delete(0, &key), model.remove(&key).is_some());
                    }
                    5 => {
                        let suffix = value_for(&key, step, 10);
                        let s2 = suffix.clone();
                        let len = e
                            .update(0, &key, move |cur| {
                                let mut v = cur.map(|c| c.value.to_vec()).unwrap_or_default();
                                v.extend_from_slice(&s2);
                                let n = v.len();
                                (
                                    crate::Mutation::Set {
                                        value: v.into(),
                                        expire: crate::ExpireUpdate::Keep,
                                    },
                                    n,
                                )
                            })
                            .wait()
                            .await
                            .unwrap();
                        let m = model.entry(key).or_default();
                        m.extend_from_slice(&suffix);
                        assert_eq!(len, m.len());
                    }
                    _ => {
                        let got = get(&e, 0, &key).await.unwrap();
                        assert_eq!(got.as_deref(), model.get(&key).map(|v| &v[..]));
                    }
                }
                if step % 2000 == 0 {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            for (k, v) in &model {
                assert_eq!(get(&e, 0, k).await.unwrap().as_deref(), Some(&v[..]));
            }
        });
        // The hand demotes what the reads stopped referencing: under load
        // its passes may all have come while the keys were being read.
        wait_until("a demotion", || {
            let t = e.tiered_info();
            t.stashes + t.free_demotions > 0
        });
        let t = e.tiered_info();
        assert!(
            t.stashes + t.free_demotions > 0,
            "{backend:?}: nothing demoted: {t:?}"
        );
        assert_eq!(t.read_errors, 0);
        assert_eq!(t.keys as usize, model.len());
    }
}

/// Failed reads and flipped bits become errors, never wrong data, and are
/// counted.
#[test]
fn faults_become_errors_never_wrong_data() {
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path(), backend);
        let faulty = Arc::new(FaultyIo::new(
            crate::flash::io::open_backend(backend, 64).unwrap(),
        ));
        c.io_engine = Some(faulty.clone());
        c.promote = PromotePolicy::Never;
        let e = Engine::open(c).unwrap();
        let mut model = HashMap::new();
        for i in 0..1500u32 {
            let key = format!("f:{i}").into_bytes();
            let v = value_for(&key, 1, 100 + (i as usize * 13) % 2000);
            e.set(0, &key, &v, SetOptions::default()).unwrap();
            model.insert(key, v);
        }
        wait_until("demotion", || e.tiered_info().values_in_flash > 800);
        faulty.fail_every.store(7, Relaxed);
        faulty.flip_every.store(5, Relaxed);
        let (mut ok, mut errors) = (0, 0);
        block_on(async {
            for _ in 0..3 {
                for (k, v) in &model {
                    match get(&e, 0, k).await {
                        Ok(got) => {
                            assert_eq!(got.as_deref(), Some(&v[..]), "wrong data served");
                            ok += 1;
                        }
                        Err(_) => errors += 1,
                    }
                }
            }
        });
        assert!(ok > 0 && errors > 0);
        let t = e.tiered_info();
        assert_eq!(t.read_errors, errors, "every failed read is counted");
        assert!(faulty.failed.load(Relaxed) > 0 && faulty.flipped.load(Relaxed) > 0);
        // With the faults gone every value reads back intact.
        faulty.fail_every.store(0, Relaxed);
        faulty.flip_every.store(0, Relaxed);
        block_on(async {
            for (k, v) in &model {
                assert_eq!(get(&e, 0, k).await.unwrap().as_deref(), Some(&v[..]));
            }
        });
    }
}

#[test]
fn overwrite_delete_and_expire_of_cold_values_touch_only_ram() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path(), IoBackend::Psync)).unwrap();
    for i in 0..1000u32 {
        let key = format!("c:{i}").into_bytes();
        e.set(0, &key, &value_for(&key, 0, 1000), SetOptions::default())
            .unwrap();
    }
    wait_until("demotion", || e.tiered_info().values_in_flash > 500);
    let cold: Vec<Vec<u8>> = (0..1000u32)
        .map(|i| format!("c:{i}").into_bytes())
        .filter(|k| matches!(e.key_info(0, k).unwrap().location, Location::Flash(_)))
        .take(30)
        .collect();
    assert_eq!(cold.len(), 30);
    let fetches = e.tiered_info().fetches;
    for k in &cold[0..10] {
        e.set(0, k, b"new value", SetOptions::default()).unwrap();
    }
    for k in &cold[10..20] {
        assert!(e.delete(0, k));
    }
    for k in &cold[20..30] {
        assert!(e.expire(0, k, 1, crate::ExpireCond::Always)); // in the past: deleted
    }
    assert_eq!(
        e.tiered_info().fetches,
        fetches,
        "no flash read for overwrite/delete/expire"
    );
    block_on(async {
        for k in &cold[0..10] {
            assert_eq!(
                get(&e, 0, k).await.unwrap().as_deref(),
                Some(&b"new value"[..])
            );
        }
        for k in &cold[10..30] {
            assert_eq!(get(&e, 0, k).await.unwrap(), None);
        }
    });
}

#[test]
fn gc_reclaims_segments_under_overwrite_churn() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.flash_max_size = 24 << 20;
    let e = Engine::open(c).unwrap();
    let keys = 400u32;
    let mut last = HashMap::new();
    // 400 keys × 2 KiB rewritten 60 times: ~48 MiB of demotions into a
    // 24 MiB flash budget, which only fits if GC reclaims.
    for round in 0..60u32 {
        for i in 0..keys {
            let key = format!("g:{i}").into_bytes();
            let v = value_for(&key, round, 2048);
            loop {
                match e.admission() {
                    Admission::Admit => break,
                    Admission::Wait(_) => std::thread::sleep(Duration::from_millis(1)),
                    Admission::OutOfMemory => panic!("OOM at round {round}"),
                    Admission::LogUnavailable => panic!(
                        "log unavailable at round {round}: {:?} {:?}",
                        e.log_error(),
                        e.tiered_info()
                    ),
                }
            }
            e.set(0, &key, &v, SetOptions::default()).unwrap();
            last.insert(key, v);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    wait_until("segments freed", || e.tiered_info().segments_freed > 5);
    let t = e.tiered_info();
    assert!(t.allocated_bytes <= 24 << 20, "{t:?}");
    block_on(async {
        for (k, v) in &last {
            assert_eq!(get(&e, 0, k).await.unwrap().as_deref(), Some(&v[..]));
        }
    });
}

/// RAM just under the budget with nothing to demote admits writes; just
/// over it refuses them (noeviction) once a second look confirms it:
/// writers are never left waiting for long. The
/// background thread and admission used to compare RAM with limits 500
/// bytes apart here (admission's budget rounded down to a thousand bytes):
/// in between, demotion was not stuck (RAM within the budget) while
/// admission saw RAM over its limit, and writers waited 10 s for room.
#[test]
fn ram_at_the_budget_admits_or_refuses_never_waits() {
    use std::sync::atomic::AtomicU64;
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.maxmemory_ram = 1_000_500;
    c.eviction = EvictionPolicy::NoEviction;
    let ram = Arc::new(AtomicU64::new(1_000_400));
    let gauge = ram.clone();
    c.ram_gauge = Some(Arc::new(move || gauge.load(Relaxed)));
    let e = Engine::open(c).unwrap();
    // Some ticks of the background thread over its watermarks, with
    // nothing in RAM to move.
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..20 {
        assert_eq!(e.admission(), Admission::Admit);
        std::thread::sleep(Duration::from_millis(10));
    }
    ram.store(1_000_600, Relaxed);
    let over = Instant::now();
    let deadline = over + Duration::from_secs(3);
    loop {
        match e.admission() {
            // Not on one look (a command's flash reads in flight are RAM
            // that is not yet a value): two, `STUCK_CONFIRM` apart.
            Admission::OutOfMemory => {
                assert!(over.elapsed() >= crate::tiering::STUCK_CONFIRM);
                break;
            }
            Admission::Wait(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            other => panic!("over the budget with nothing to demote: {other:?}"),
        }
    }
}

#[test]
fn noeviction_refuses_writes_when_full_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.flash_max_size = 4 << 20;
    c.eviction = EvictionPolicy::NoEviction;
    let e = Engine::open(c.clone()).unwrap();
    let mut stored = HashMap::new();
    let mut refused = false;
    for i in 0..20_000u32 {
        let key = format!("o:{i}").into_bytes();
        let deadline = Instant::now() + Duration::from_secs(5);
        let admitted = loop {
            match e.admission() {
                Admission::Admit => break true,
                Admission::Wait(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                _ => break false,
            }
        };
        if !admitted {
            refused = true;
            break;
        }
        let v = value_for(&key, 0, 1024);
        e.set(0, &key, &v, SetOptions::default()).unwrap();
        stored.insert(key, v);
    }
    assert!(
        refused,
        "20 MB into 4 MiB flash + 256 KiB RAM was never refused"
    );
    // Full of live data and idle: the collector does not move segments
    // to win their page padding (its rule 9) ...
    let moved = e.tiered_info().gc_bytes_relocated;
    std::thread::sleep(Duration::from_secs(2));
    let moved = e.tiered_info().gc_bytes_relocated - moved;
    assert!(moved < 1 << 20, "{moved} bytes moved: {}", room_state(&e));
    // ... and what the journal wrote before the log filled is synced on
    // time (everysec), though its last batch waits for room.
    let written = e.inner.journal.written_ticket();
    let deadline = Instant::now() + Duration::from_secs(3);
    while e.inner.journal.synced_ticket() < written {
        assert!(
            Instant::now() < deadline,
            "never synced: {}",
            room_state(&e)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    block_on(async {
        for (k, v) in &stored {
            assert_eq!(get(&e, 0, k).await.unwrap().as_deref(), Some(&v[..]));
        }
    });
    // Every write admitted was logged: none is lost when the engine stops
    // with the log still full (a write admitted beyond the log's room was
    // acknowledged and then lost to a restart).
    let state = room_state(&e);
    drop(e);
    let e = Engine::open(c).unwrap();
    let lost = block_on(async {
        let mut lost = 0;
        for (k, v) in &stored {
            lost += (get(&e, 0, k).await.unwrap().as_deref() != Some(&v[..])) as usize;
        }
        lost
    });
    assert_eq!(
        lost,
        0,
        "of {} admitted; before the restart: {state}",
        stored.len()
    );
}

/// What decides whether a writer waits for room: the log's status, the
/// journal, RAM against its budget, and each segment's (id, live bytes,
/// tombstone bytes, written bytes), for a test that waited too long.
fn room_state(e: &Engine) -> String {
    let inner = &e.inner;
    let segs: Vec<_> = inner
        .flash
        .table
        .snapshot()
        .iter()
        .map(|s| {
            (
                s.id,
                s.live_bytes.load(Relaxed),
                s.tomb_bytes.load(Relaxed),
                s.written.load(Relaxed),
            )
        })
        .collect();
    format!(
        "log {:?}, {} notes queued, written {} synced {} of {}, RAM {} of {}, \
         demotion stuck {}, flash full {}, reclaimable {}, allocated {}, live {}, segments {segs:?}",
        e.log_error(),
        inner.journal.queued(),
        inner.journal.written_ticket(),
        inner.journal.synced_ticket(),
        inner.journal.last_ticket(),
        inner.ram_used(),
        inner.tun.maxmemory_ram.load(Relaxed),
        inner.tiering.demotion_stuck.load(Relaxed),
        inner.flash.full.load(Relaxed),
        inner.reclaimable(),
        inner.flash.table.allocated_bytes(),
        inner.flash.live_bytes.get(),
    )
}

#[test]
fn allkeys_lru_evicts_instead_of_refusing() {
    // The engine's warnings (a segment the collector gives up on) go with
    // the test's output, shown if it fails.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_max_level(tracing::Level::WARN)
        .try_init();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.flash_max_size = 4 << 20;
    c.eviction = EvictionPolicy::AllkeysLru;
    let e = Engine::open(c).unwrap();
    for i in 0..20_000u32 {
        let key = format!("l:{i}").into_bytes();
        // Room takes milliseconds to make; a wait this long is a livelock
        // (the collector's rule 9), not a slow machine.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match e.admission() {
                Admission::Admit => break,
                Admission::Wait(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                other => panic!("{other:?} at {i} under allkeys-lru: {}", room_state(&e)),
            }
        }
        e.set(0, &key, &value_for(&key, 0, 1024), SetOptions::default())
            .unwrap();
    }
    let t = e.tiered_info();
    assert!(t.evicted_keys > 0);
    assert!(t.allocated_bytes <= 4 << 20);
    // Room came from eviction, not from writing live segments again.
    assert!(
        t.gc_bytes_relocated < 4 << 20,
        "{} bytes moved: {}",
        t.gc_bytes_relocated,
        room_state(&e)
    );
}

/// The collector's rule 9, by itself: a full log whose segments are
/// nearly all live gets its room under allkeys-lru by evicting the oldest
/// segment. Moving them instead wins a few kilobytes of padding per
/// megabyte written, and did so for as long as the log stayed full.
#[test]
fn full_log_of_live_segments_evicts_the_oldest_rather_than_moving() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.eviction = EvictionPolicy::AllkeysLru;
    c.flash_max_size = 4 << 20;
    let e = Engine::open(c).unwrap();
    // ~3.5 MB of 4 MiB: not full yet (nothing evicted), but less than a
    // segment of room left. Written a hundred at a time, each logged
    // before the next: the journal never holds more than the log's room.
    for i in 0..3_400u32 {
        let key = format!("k:{i}").into_bytes();
        e.set(0, &key, &value_for(&key, 0, 1024), SetOptions::default())
            .unwrap();
        while i % 100 == 99 && e.inner.journal.queued_bytes() > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // Every record written and demotion done: the log is ~4 segments of
    // live records with page padding between batches.
    let deadline = Instant::now() + Duration::from_secs(30);
    while e.inner.journal.queued() > 0 || e.admission() != Admission::Admit {
        assert!(
            Instant::now() < deadline,
            "never settled: {}",
            room_state(&e)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(e.inner.flash.table.len() >= 4, "{}", room_state(&e));
    assert!(e.inner.log_nearly_full(), "{}", room_state(&e));
    let oldest = e.inner.flash.table.snapshot()[0].id;
    let before = e.tiered_info();
    assert_eq!(before.evicted_keys, 0, "{}", room_state(&e));
    // As the journal does each time it finds the log full (this one has
    // room; the collector's choice is the same).
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.inner.flash.table.get(oldest).is_some() {
        assert!(
            Instant::now() < deadline,
            "the oldest segment {oldest} was never evicted: {} bytes moved, {}",
            e.tiered_info().gc_bytes_relocated - before.gc_bytes_relocated,
            room_state(&e)
        );
        e.inner.flash.full.store(true, Relaxed);
        e.inner.wake_background();
        std::thread::sleep(Duration::from_millis(1));
    }
    e.inner.flash.full.store(false, Relaxed);
    let after = e.tiered_info();
    assert!(after.evicted_keys > before.evicted_keys);
    assert_eq!(after.gc_bytes_relocated, before.gc_bytes_relocated);
}

/// The full flag over a log with room to spare (it may outlive the
/// shortage that set it) evicts nothing: evicting while it stayed set
/// would empty the log.
#[test]
fn a_full_flag_over_a_log_with_room_evicts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.eviction = EvictionPolicy::AllkeysLru;
    let e = Engine::open(c).unwrap();
    for i in 0..4_000u32 {
        let key = format!("k:{i}").into_bytes();
        e.set(0, &key, &value_for(&key, 0, 1024), SetOptions::default())
            .unwrap();
    }
    assert!(!e.inner.log_nearly_full());
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        e.inner.flash.full.store(true, Relaxed);
        e.inner.wake_background();
        std::thread::sleep(Duration::from_millis(1));
    }
    e.inner.flash.full.store(false, Relaxed);
    let t = e.tiered_info();
    assert_eq!(t.evicted_keys, 0);
    assert_eq!(e.dbsize(0), 4_000);
}

/// A read of a cold key is an access, as in Redis: its idle time starts
/// again (a packed entry keeps no access time, so the read boxes it; the
/// demotion hand packs it again later).
#[test]
fn reading_a_cold_key_resets_its_idle_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.maxmemory_ram = 64 << 20;
    let e = Engine::open(c).unwrap();
    let v = value_for(b"k", 1, 1000);
    e.set(0, b"k", &v, SetOptions::default()).unwrap();
    // Logged and synced, then the RAM copy dropped: cold and packed.
    e.save().unwrap();
    assert_eq!(e.drop_ram_copies().0, 1);
    assert_eq!(e.tiered_info().index_boxed_keys, 0);
    std::thread::sleep(Duration::from_millis(2100));
    assert!(e.key_info(0, b"k").unwrap().idle_secs >= 2);
    assert_eq!(block_on(get(&e, 0, b"k")).unwrap().as_deref(), Some(&v[..]));
    assert!(matches!(
        e.key_info(0, b"k").unwrap().location,
        Location::Flash(_)
    ));
    assert_eq!(e.key_info(0, b"k").unwrap().idle_secs, 0);
}

/// A log smaller than a few segments gets smaller segments, so it can
/// take writes (32 MB of log and the default 64 MiB segments refused
/// every write but the first ~2,500 of 1 KiB).
#[test]
fn a_small_log_gets_segments_it_can_hold() {
    use crate::fit_segment_size;
    assert_eq!(fit_segment_size(64 << 20, 100 << 30), 64 << 20);
    assert_eq!(fit_segment_size(64 << 20, 256 << 20), 64 << 20);
    assert_eq!(fit_segment_size(64 << 20, 32 << 20), 8 << 20);
    assert_eq!(fit_segment_size(64 << 20, 3 << 20), 1 << 20);
    assert_eq!(fit_segment_size(1 << 20, 4 << 20), 1 << 20);
    assert_eq!(fit_segment_size(512 << 10, 1 << 20), 512 << 10);
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), IoBackend::Psync);
    c.segment_size = 64 << 20;
    c.flash_max_size = 32 << 20;
    let e = Engine::open(c).unwrap();
    assert_eq!(e.inner.flash.segment_size, 8 << 20);
}

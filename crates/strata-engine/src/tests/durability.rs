//! Restart tests: every mutation kind replayed against a reference model
//! (full log scan, checkpoint + tail, clean shutdown), torn tails, flipped
//! bits, appendonly no, the journal's reaction to failed fsyncs and a full
//! device, and memcached item state (explicit CAS, stale items) against a
//! model of memcached's rules. Each test reopens the real files of a temporary directory.

use crate::clock::now_ms;
use crate::testing::FaultyIo;
use crate::tests::{block_on, value_for, wait_until};
use crate::{
    Admission, Engine, EngineConfig, ExpireCond, IoBackend, Location, SetOptions, ShutdownSave,
    TtlState,
};
use crate::{ExpireUpdate, SetCond};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = IoBackend::Psync;
    c.maxmemory_ram = 256 << 10;
    c.segment_size = 256 << 10;
    c.write_chunk = 32 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.databases = 4;
    c.hz = 100;
    c
}

fn get(e: &Engine, db: usize, key: &[u8]) -> Option<Vec<u8>> {
    block_on(e.get(db, key).wait()).unwrap().map(|b| b.to_vec())
}

/// (db, key) -> (value, expire_at_ms)
type Model = HashMap<(usize, Vec<u8>), (Vec<u8>, u64)>;

/// Random mutations of every kind, applied to the engine and the model.
fn churn(e: &Engine, model: &mut Model, rng: &mut StdRng, steps: u32, gen0: u32) {
    let far = now_ms() + 3_600_000;
    for step in 0..steps {
        let db = rng.gen_range(0..3usize);
        let key = format!("k{}", rng.gen_range(0..300)).into_bytes();
        let gen = gen0 + step;
        match rng.gen_range(0..20) {
            0..=8 => {
                let v = value_for(&key, gen, rng.gen_range(0..3000));
                let ttl = if rng.gen_bool(0.2) {
                    far + step as u64
                } else {
                    0
                };
                let opts = SetOptions {
                    cond: SetCond::Always,
                    expire: if ttl == 0 {
                        ExpireUpdate::Clear
                    } else {
                        ExpireUpdate::At(ttl)
                    },
                };
                e.set(db, &key, &v, opts).unwrap();
                model.insert((db, key), (v, ttl));
            }
            9..=11 => {
                assert_eq!(e.delete(db, &key), model.remove(&(db, key)).is_some());
            }
            12..=13 => {
                let at = far + 1000 + step as u64;
                let had = e.expire(db, &key, at, ExpireCond::Always);
                if let Some(m) = model.get_mut(&(db, key)) {
                    assert!(had);
                    m.1 = at;
                }
            }
            14 => {
                e.persist(db, &key);
                if let Some(m) = model.get_mut(&(db, key)) {
                    m.1 = 0;
                }
            }
            15 => {
                // An expiry in the past deletes.
                e.expire(db, &key, 1, ExpireCond::Always);
                model.remove(&(db, key));
            }
            16 => {
                let dst = format!("k{}", rng.gen_range(0..300)).into_bytes();
                let r = block_on(e.rename(db, &key, &dst, false).wait()).unwrap();
                if let Some(m) = model.remove(&(db, key.clone())) {
                    assert_eq!(r, Some(true));
                    model.insert((db, dst), m);
                } else {
                    assert_eq!(r, None);
                }
            }
            17 if rng.gen_ratio(1, 20) => {
                e.flush_db(db);
                model.retain(|(d, _), _| *d != db);
            }
            _ => {
                // Reads promote values (and keep their flash copies).
                let got = get(e, db, &key);
                assert_eq!(got, model.get(&(db, key)).map(|m| m.0.clone()));
            }
        }
    }
}

fn check(e: &Engine, model: &Model, what: &str) {
    let mut keys = 0;
    for db in 0..3 {
        keys += e.dbsize(db);
    }
    assert_eq!(keys as usize, model.len(), "{what}: key count");
    for ((db, k), (v, ttl)) in model {
        let got = get(e, *db, k);
        assert_eq!(
            got.as_deref(),
            Some(&v[..]),
            "{what}: value of {:?}",
            String::from_utf8_lossy(k)
        );
        let t = e.ttl(*db, k);
        match *ttl {
            0 => assert_eq!(t, TtlState::NoTtl, "{what}: ttl"),
            at => assert_eq!(t, TtlState::At(at), "{what}: ttl"),
        }
    }
}

#[test]
fn restart_replays_every_mutation_kind() {
    for (name, checkpoint_midway, clean) in [
        ("full log scan", false, false),
        ("checkpoint + tail", true, false),
        ("clean shutdown", true, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut model = Model::new();
        let mut rng = StdRng::seed_from_u64(11);
        {
            let e = Engine::open(config(dir.path())).unwrap();
            churn(&e, &mut model, &mut rng, 6000, 0);
            if checkpoint_midway {
                e.save().unwrap();
            }
            churn(&e, &mut model, &mut rng, 6000, 100_000);
            check(&e, &model, "before restart");
            wait_until("demotion", || e.tiered_info().values_in_flash > 0);
            if clean {
                e.shutdown(ShutdownSave::Save).unwrap();
            }
        }
        let e = Engine::open(config(dir.path())).unwrap();
        let r = e.recovery_report();
        assert_eq!(r.from_checkpoint, checkpoint_midway, "{name}: {r:?}");
        assert_eq!(
            r.corrupt_records + r.missing_segment_entries,
            0,
            "{name}: {r:?}"
        );
        check(&e, &model, name);
        // And it goes on working: more churn, another restart.
        churn(&e, &mut model, &mut rng, 2000, 200_000);
        drop(e);
        let e = Engine::open(config(dir.path())).unwrap();
        check(&e, &model, &format!("{name}, second restart"));
    }
}

fn newest_segment(dir: &Path) -> PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("flash"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    v.sort();
    v.pop().unwrap()
}

/// Waits until the journal has given every key in `keys` a flash copy.
fn wait_for_flash_copies(e: &Engine, keys: impl Iterator<Item = String> + Clone) {
    wait_until("journal", || {
        keys.clone()
            .all(|k| !matches!(e.key_info(0, k.as_bytes()).unwrap().location, Location::Ram))
    });
}

fn flash_loc(e: &Engine, key: &[u8]) -> crate::base::FlashLoc {
    match e.key_info(0, key).unwrap().location {
        Location::Flash(l) | Location::RamAndFlash(l) => l,
        Location::Ram | Location::Chunked { .. } => panic!("no flash copy"),
    }
}

#[test]
fn a_torn_tail_keeps_every_complete_record() {
    let mut rng = StdRng::seed_from_u64(5);
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        c.segment_size = 8 << 20; // everything in one segment
        let mut locs = Vec::new();
        {
            let e = Engine::open(c.clone()).unwrap();
            for i in 0..200u32 {
                let k = format!("t{i}").into_bytes();
                e.set(0, &k, &value_for(&k, round, 700), SetOptions::default())
                    .unwrap();
            }
            wait_for_flash_copies(&e, (0..200u32).map(|i| format!("t{i}")));
            for i in 0..200u32 {
                let k = format!("t{i}").into_bytes();
                locs.push((k.clone(), flash_loc(&e, &k)));
            }
        }
        let seg = newest_segment(dir.path());
        let len = std::fs::metadata(&seg).unwrap().len();
        let cut = rng.gen_range(4096..len);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&seg)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let e = Engine::open(c).unwrap();
        let r = e.recovery_report();
        let mut kept = 0;
        for (k, l) in &locs {
            let complete = l.offset as u64 + l.len as u64 <= cut;
            let got = get(&e, 0, k);
            if complete {
                assert_eq!(got, Some(value_for(k, round, 700)), "cut at {cut}");
                kept += 1;
            } else {
                assert_eq!(got, None, "a record past the tear at {cut} came back");
            }
        }
        assert_eq!(r.keys, kept);
        let torn = locs
            .iter()
            .any(|(_, l)| (l.offset as u64) < cut && l.offset as u64 + l.len as u64 > cut);
        assert_eq!(r.torn_tail_bytes > 0, torn, "cut {cut}: {r:?}");
        // Writes go on in a new segment, and survive the next restart.
        e.set(0, b"after", b"tear", SetOptions::default()).unwrap();
        drop(e);
        let e = Engine::open(config(dir.path())).unwrap();
        assert_eq!(get(&e, 0, b"after"), Some(b"tear".to_vec()));
    }
}

fn flip_byte(path: &Path, at: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0x20;
    f.write_all_at(&b, at).unwrap();
}

#[test]
fn a_flipped_bit_costs_one_key_only() {
    for with_checkpoint in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        let victim = b"b77".to_vec();
        let loc;
        {
            let e = Engine::open(c.clone()).unwrap();
            for i in 0..400u32 {
                let k = format!("b{i}").into_bytes();
                e.set(0, &k, &value_for(&k, 1, 900), SetOptions::default())
                    .unwrap();
            }
            // The journal drains shards in its own order, so the last key
            // written is not necessarily the last one logged: wait for all.
            wait_for_flash_copies(&e, (0..400u32).map(|i| format!("b{i}")));
            loc = flash_loc(&e, &victim);
            if with_checkpoint {
                e.save().unwrap();
            }
        }
        let seg = dir
            .path()
            .join("flash")
            .join(format!("seg-{:010}.log", loc.segment));
        flip_byte(&seg, loc.offset as u64 + loc.len as u64 - 100);
        let e = Engine::open(c).unwrap();
        let r = e.recovery_report();
        for i in 0..400u32 {
            let k = format!("b{i}").into_bytes();
            if k == victim {
                continue;
            }
            assert_eq!(get(&e, 0, &k), Some(value_for(&k, 1, 900)));
        }
        if with_checkpoint {
            // Found by the first read: an error for that key only.
            assert_eq!(r.corrupt_records, 0);
            assert!(block_on(e.get(0, &victim).wait()).is_err());
            assert!(e.tiered_info().read_errors >= 1);
        } else {
            // Found by the scan: reported, the key is not served.
            assert_eq!(r.corrupt_records, 1, "{r:?}");
            assert_eq!(get(&e, 0, &victim), None);
        }
    }
}

#[test]
fn appendonly_no_keeps_data_across_a_clean_shutdown_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.appendonly = false;
    let mut model = Model::new();
    let mut rng = StdRng::seed_from_u64(3);
    {
        let e = Engine::open(c.clone()).unwrap();
        churn(&e, &mut model, &mut rng, 4000, 0);
        e.shutdown(ShutdownSave::Save).unwrap();
    }
    {
        let e = Engine::open(c.clone()).unwrap();
        check(&e, &model, "after a clean shutdown");
        churn(&e, &mut model, &mut rng, 500, 50_000);
        // Dropped without shutdown: as a crash, nothing is promised.
    }
    let e = Engine::open(c).unwrap();
    assert!(e.recovery_report().discarded_unclean);
    assert_eq!(e.dbsize(0) + e.dbsize(1) + e.dbsize(2), 0);
}

fn faulty(dir: &Path) -> (EngineConfig, Arc<FaultyIo>) {
    let mut c = config(dir);
    let io = Arc::new(FaultyIo::new(
        crate::flash::io::open_backend(IoBackend::Psync, 8).unwrap(),
    ));
    c.io_engine = Some(io.clone());
    (c, io)
}

#[test]
fn a_failed_fsync_poisons_writes_and_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let (c, io) = faulty(dir.path());
    let e = Engine::open(c).unwrap();
    e.set(0, b"before", b"v", SetOptions::default()).unwrap();
    io.fail_sync.store(true, Relaxed);
    e.set(0, b"during", b"v", SetOptions::default()).unwrap();
    wait_until("poison", || e.admission() == Admission::LogUnavailable);
    assert!(
        e.log_error().unwrap().contains("fsync"),
        "{:?}",
        e.log_error()
    );
    // Still refused after the device recovers: the state is unknowable.
    io.fail_sync.store(false, Relaxed);
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(e.admission(), Admission::LogUnavailable);
    assert_eq!(get(&e, 0, b"before"), Some(b"v".to_vec()));
    // A change after the failure is never acknowledged as durable.
    e.set(0, b"after", b"v", SetOptions::default()).unwrap();
    assert_eq!(
        block_on(e.wait_durable(e.journal_ticket())).map_err(|m| m.contains("fsync")),
        Err(true)
    );
}

#[test]
fn a_full_device_refuses_writes_then_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let (c, io) = faulty(dir.path());
    {
        let e = Engine::open(c.clone()).unwrap();
        e.set(0, b"acked", b"1", SetOptions::default()).unwrap();
        wait_until("journal", || e.persist_info().journal_records >= 1);
        io.write_errno.store(libc::ENOSPC, Relaxed);
        e.set(0, b"pending", b"2", SetOptions::default()).unwrap();
        wait_until("refusal", || e.admission() == Admission::LogUnavailable);
        assert!(e.log_error().unwrap().contains("no space"));
        assert_eq!(get(&e, 0, b"acked"), Some(b"1".to_vec()));
        io.write_errno.store(0, Relaxed);
        wait_until("resume", || e.admission() == Admission::Admit);
        e.set(0, b"later", b"3", SetOptions::default()).unwrap();
    }
    let e = Engine::open(c).unwrap();
    for (k, v) in [
        (&b"acked"[..], &b"1"[..]),
        (b"pending", b"2"),
        (b"later", b"3"),
    ] {
        assert_eq!(get(&e, 0, k).as_deref(), Some(v));
    }
}

#[test]
fn deletes_survive_the_collector_moving_their_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.segment_size = 64 << 10;
    {
        let e = Engine::open(c.clone()).unwrap();
        // The oldest segment keeps some live keys, so it is never freed and
        // the tombstones of its deleted keys must be kept.
        for i in 0..60u32 {
            let k = format!("old{i}").into_bytes();
            e.set(0, &k, &value_for(&k, 0, 1000), SetOptions::default())
                .unwrap();
        }
        wait_until("journal", || e.persist_info().journal_records >= 60);
        for i in 0..30u32 {
            e.delete(0, format!("old{i}").as_bytes());
        }
        // Churn, one journal batch per round (a batch logs each key once):
        // the segments holding the tombstones die and are collected.
        for round in 0..40u32 {
            for i in 0..40u32 {
                let k = format!("churn{i}").into_bytes();
                e.set(0, &k, &value_for(&k, round, 1500), SetOptions::default())
                    .unwrap();
            }
            let want = e.journal_ticket();
            wait_until("batch", || {
                block_on(e.wait_durable(want)).is_ok() && e.persist_info().journal_queued == 0
            });
        }
        wait_until("collection", || e.tiered_info().segments_freed > 10);
    }
    // No checkpoint: the restart scans the whole log.
    let e = Engine::open(c).unwrap();
    assert!(!e.recovery_report().from_checkpoint);
    for i in 0..60u32 {
        let k = format!("old{i}").into_bytes();
        let want = (i >= 30).then(|| value_for(&k, 0, 1000));
        assert_eq!(get(&e, 0, &k), want, "old{i}");
    }
}

#[test]
fn a_corrupt_or_older_checkpoint_falls_back_to_a_full_scan() {
    for damage in ["flip a byte", "older version"] {
        let dir = tempfile::tempdir().unwrap();
        let mut model = Model::new();
        let mut rng = StdRng::seed_from_u64(21);
        {
            let e = Engine::open(config(dir.path())).unwrap();
            churn(&e, &mut model, &mut rng, 3000, 0);
            e.shutdown(ShutdownSave::Save).unwrap();
        }
        let cp = dir.path().join("flash").join("checkpoint");
        match damage {
            "flip a byte" => {
                let len = std::fs::metadata(&cp).unwrap().len();
                flip_byte(&cp, len / 2);
            }
            _ => {
                // A version this build does not read (header CRC intact).
                let mut b = std::fs::read(&cp).unwrap();
                b[8..12].copy_from_slice(&99u32.to_le_bytes());
                std::fs::write(&cp, b).unwrap();
            }
        }
        let e = Engine::open(config(dir.path())).unwrap();
        let r = e.recovery_report();
        assert!(!r.from_checkpoint, "{damage}: {r:?}");
        assert!(r.checkpoint_error.is_some(), "{damage}: {r:?}");
        check(&e, &model, damage);
    }
}

/// A checkpoint written by the previous version (3: no memcached item
/// state) still loads: its entries read as version-4 entries without the
/// extension.
#[test]
fn a_version_3_checkpoint_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let mut rng = StdRng::seed_from_u64(23);
    {
        let e = Engine::open(config(dir.path())).unwrap();
        churn(&e, &mut model, &mut rng, 2000, 0);
        e.shutdown(ShutdownSave::Save).unwrap();
    }
    let cp = dir.path().join("flash").join("checkpoint");
    let mut b = std::fs::read(&cp).unwrap();
    b[8..12].copy_from_slice(&3u32.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..56]);
    b[56..60].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&cp, b).unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    let r = e.recovery_report();
    assert!(r.from_checkpoint, "{r:?}");
    check(&e, &model, "version 3 checkpoint");
}

#[test]
fn memcached_item_state_survives_replay_and_checkpoint() {
    use crate::{Invalidate, ItemCond, ItemGet, NewItem, StoreOutcome};
    // Every key has client flags; a third get an explicit CAS (meta E) when
    // stored, a third are invalidated (meta md I) after reaching flash, so
    // the journal rewrites cold records with the new state.
    let get = |e: &Engine, k: &[u8]| {
        block_on(e.get_item(0, k, ItemGet::default()).wait())
            .unwrap()
            .unwrap()
    };
    for checkpoint in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        {
            let e = Engine::open(config(dir.path())).unwrap();
            for i in 0..500u32 {
                let k = format!("f{i}").into_bytes();
                let item = NewItem {
                    value: &value_for(&k, 0, 700),
                    client_flags: i * 7919,
                    expire_at_ms: 0,
                    explicit_cas: (i % 3 == 1).then_some((1 << 40) + i as u64),
                };
                let r = e.store_item(0, &k, item, ItemCond::Always);
                assert!(matches!(r, StoreOutcome::Stored(_)));
            }
            // Values move to flash (kind-4 and kind-5 records).
            wait_until("demotion", || e.tiered_info().values_in_flash > 100);
            for i in (2..500u32).step_by(3) {
                let k = format!("f{i}").into_bytes();
                let inv = Invalidate {
                    expire_at_ms: None,
                    explicit_cas: (i % 2 == 0).then_some(7_000 + i as u64),
                };
                assert!(matches!(
                    e.delete_item(0, &k, None, None, Some(inv)),
                    StoreOutcome::Stored(_)
                ));
            }
            for i in 0..500u32 {
                let k = format!("f{i}").into_bytes();
                let it = get(&e, &k);
                assert_eq!(
                    (it.client_flags, &it.value[..], it.stale),
                    (i * 7919, &value_for(&k, 0, 700)[..], i % 3 == 2)
                );
                match i % 3 {
                    1 => assert_eq!(it.cas, (1 << 40) + i as u64),
                    2 if i % 2 == 0 => assert_eq!(it.cas, 7_000 + i as u64),
                    _ => {}
                }
                seen.push(it.cas);
            }
            if checkpoint {
                e.save().unwrap();
            }
        }
        let e = Engine::open(config(dir.path())).unwrap();
        assert_eq!(e.recovery_report().from_checkpoint, checkpoint);
        for i in 0..500u32 {
            let k = format!("f{i}").into_bytes();
            let it = get(&e, &k);
            assert_eq!(it.client_flags, i * 7919, "f{i}");
            assert_eq!(&it.value[..], &value_for(&k, 0, 700)[..], "f{i}");
            assert_eq!(it.stale, i % 3 == 2, "f{i} stale");
            assert_eq!(it.cas, seen[i as usize], "f{i} cas");
        }
    }
}

/// Memcached item operations in random order (conditional stores, explicit
/// CASes, stale stores, invalidations, gets that claim the refill right,
/// deletes) against a model of memcached's rules, with values moving to
/// flash underneath, then through a crash-free restart and a checkpointed
/// one: value, client flags, CAS and stale mark must match at every step.
#[test]
fn memcached_items_match_a_model_through_flash_and_restarts() {
    use crate::{Invalidate, ItemCond, ItemGet, NewItem, StoreOutcome};
    #[derive(Clone, Debug)]
    struct It {
        value: Vec<u8>,
        flags: u32,
        cas: u64,
        stale: bool,
        token: bool,
        expire_at_ms: u64,
    }
    let dir = tempfile::tempdir().unwrap();
    let mut model: HashMap<Vec<u8>, It> = HashMap::new();
    let mut rng = StdRng::seed_from_u64(11);
    let get_item = |e: &Engine, k: &[u8], claim: bool, touch: Option<u64>| {
        let opts = ItemGet {
            claim_stale: claim,
            touch,
            ..ItemGet::default()
        };
        block_on(e.get_item(0, k, opts).wait()).unwrap()
    };
    // TTLs far enough ahead never to expire during the test.
    let far = now_ms() + 3_600_000;
    for round in 0..3u32 {
        let e = Engine::open(config(dir.path())).unwrap();
        // After a restart the refill rights are gone (not persisted).
        for it in model.values_mut() {
            it.token = false;
        }
        for step in 0..3000u32 {
            if step % 500 == 0 {
                // Let the demoter move values to flash.
                std::thread::sleep(Duration::from_millis(30));
            }
            let key = format!("m{}", rng.gen_range(0..400)).into_bytes();
            let cur = model.get(&key).cloned();
            match rng.gen_range(0..10) {
                0..=4 => {
                    let value = value_for(&key, round * 10_000 + step, rng.gen_range(0..4000));
                    let flags = rng.gen::<u32>() >> rng.gen_range(0..32);
                    let explicit = rng.gen_bool(0.3).then(|| rng.gen::<u64>() >> 1);
                    let some_cas = |rng: &mut StdRng| match (&cur, rng.gen_range(0..3)) {
                        (Some(c), 0) => c.cas,
                        (Some(c), 1) => c.cas.wrapping_sub(1),
                        (Some(c), _) => c.cas.wrapping_add(1),
                        (None, _) => 5,
                    };
                    let cond = match rng.gen_range(0..5) {
                        0 => ItemCond::Always,
                        1 => ItemCond::Missing,
                        2 => ItemCond::Exists,
                        3 => ItemCond::Cas(some_cas(&mut rng)),
                        _ => ItemCond::CasOrStale(some_cas(&mut rng)),
                    };
                    let expire_at_ms = if rng.gen_bool(0.3) {
                        far + step as u64
                    } else {
                        0
                    };
                    let item = NewItem {
                        value: &value,
                        client_flags: flags,
                        expire_at_ms,
                        explicit_cas: explicit,
                    };
                    let got = e.store_item(0, &key, item, cond);
                    // memcached's rules, on the model.
                    let (want, stale_store) = match (cond, &cur) {
                        (ItemCond::Missing, Some(_)) | (ItemCond::Exists, None) => {
                            (StoreOutcome::NotStored, false)
                        }
                        (ItemCond::Cas(_) | ItemCond::CasOrStale(_), None) => {
                            (StoreOutcome::NotFound, false)
                        }
                        (ItemCond::CasOrStale(c), Some(it)) if c < it.cas => {
                            (StoreOutcome::Stored(0), true)
                        }
                        (ItemCond::Cas(c) | ItemCond::CasOrStale(c), Some(it)) if c != it.cas => {
                            (StoreOutcome::Exists, false)
                        }
                        _ => (StoreOutcome::Stored(0), false),
                    };
                    match (got, want) {
                        (StoreOutcome::Stored(cas), StoreOutcome::Stored(_)) => {
                            if let Some(x) = explicit {
                                assert_eq!(cas, x, "{step}: explicit CAS");
                            }
                            let token = stale_store && cur.as_ref().is_some_and(|c| c.token);
                            // A stale store keeps the item's TTL.
                            let expire_at_ms = match (&cur, stale_store) {
                                (Some(c), true) => c.expire_at_ms,
                                _ => expire_at_ms,
                            };
                            model.insert(
                                key,
                                It {
                                    value,
                                    flags,
                                    cas,
                                    stale: stale_store,
                                    token,
                                    expire_at_ms,
                                },
                            );
                        }
                        (g, w) => assert_eq!(g, w, "{step}: {cond:?} on {cur:?}"),
                    }
                }
                5..=7 => {
                    let claim = rng.gen_bool(0.7);
                    // Some gets set a new TTL (gat / mg T), which changes no
                    // CAS but must be logged.
                    let touch = rng.gen_bool(0.25).then(|| match rng.gen_range(0..3) {
                        0 => 0,
                        _ => far + 100_000 + step as u64,
                    });
                    let got = get_item(&e, &key, claim, touch);
                    match (got, model.get_mut(&key)) {
                        (None, None) => {}
                        (Some(g), Some(m)) => {
                            assert_eq!(g.value, m.value, "{step}: value");
                            if let Some(t) = touch {
                                m.expire_at_ms = t;
                            }
                            assert_eq!(
                                (g.client_flags, g.cas, g.stale, g.token_sent, g.expire_at_ms),
                                (m.flags, m.cas, m.stale, m.token, m.expire_at_ms),
                                "{step}: item state"
                            );
                            let won = claim && m.stale && !m.token;
                            assert_eq!(g.won, won, "{step}: won");
                            m.token |= won;
                        }
                        (g, m) => panic!("{step}: engine {g:?}, model {m:?}"),
                    }
                }
                _ => {
                    let cas = rng.gen_bool(0.3).then(|| match &cur {
                        Some(c) if rng.gen_bool(0.5) => c.cas,
                        _ => 3,
                    });
                    let inv = rng.gen_bool(0.6).then(|| Invalidate {
                        expire_at_ms: None,
                        explicit_cas: rng.gen_bool(0.5).then(|| rng.gen::<u64>() >> 1),
                    });
                    let got = e.delete_item(0, &key, cas, None, inv);
                    match (&cur, got) {
                        (None, g) => assert_eq!(g, StoreOutcome::NotFound, "{step}"),
                        (Some(c), g) if cas.is_some_and(|x| x != c.cas) => {
                            assert_eq!(g, StoreOutcome::Exists, "{step}")
                        }
                        (Some(c), StoreOutcome::Stored(new_cas)) => match inv {
                            Some(i) => {
                                if let Some(x) = i.explicit_cas {
                                    assert_eq!(new_cas, x, "{step}: md I E");
                                }
                                let it = It {
                                    cas: new_cas,
                                    stale: true,
                                    token: false,
                                    ..c.clone()
                                };
                                model.insert(key, it);
                            }
                            None => {
                                model.remove(&key);
                            }
                        },
                        (Some(_), g) => panic!("{step}: delete gave {g:?}"),
                    }
                }
            }
        }
        let t = e.tiered_info();
        assert!(
            t.stashes + t.free_demotions > 0,
            "round {round}: nothing reached flash"
        );
        assert!(t.fetches > 0, "round {round}: nothing was read from flash");
        if round == 1 {
            e.save().unwrap();
        }
        drop(e);
    }
    let e = Engine::open(config(dir.path())).unwrap();
    for (k, m) in &model {
        let g = get_item(&e, k, false, None).unwrap_or_else(|| panic!("{k:?} lost"));
        assert_eq!(
            (&g.value[..], g.client_flags, g.cas, g.stale, g.expire_at_ms),
            (&m.value[..], m.flags, m.cas, m.stale, m.expire_at_ms)
        );
    }
    assert_eq!(e.dbsize(0) as usize, model.len());
}

/// An engine whose values all fit in RAM (they reach flash through the
/// journal only), shared with a writer thread.
fn open_in_ram(dir: &Path) -> Arc<Engine> {
    let mut c = config(dir);
    c.maxmemory_ram = 64 << 20;
    Arc::new(Engine::open(c).unwrap())
}

/// The (database id, key) of every entry of the checkpoint in `dir`.
fn checkpoint_keys(dir: &Path) -> std::collections::HashSet<(u16, Vec<u8>)> {
    let cp = crate::log::checkpoint::load(&dir.join("flash"))
        .unwrap()
        .expect("a checkpoint");
    cp.iter().map(|x| (x.db, x.key.to_vec())).collect()
}

/// A checkpoint copies each map a few entries per hold of its shard's lock
/// (checkpoint invariant 3) while a writer removes and re-adds other keys
/// (a removal moves the map's last key into the hole, an add appends):
/// every key that stayed the whole time is in each file, once or more.
#[test]
fn a_checkpoint_misses_no_key_that_moved_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_in_ram(dir.path());
    let opts = SetOptions::default;
    let keep: Vec<String> = (0..3000).map(|i| format!("keep:{i}")).collect();
    for (i, k) in keep.iter().enumerate() {
        e.set(0, k.as_bytes(), &value_for(k.as_bytes(), 0, 20), opts())
            .unwrap();
        let g = format!("churn:{i}");
        e.set(0, g.as_bytes(), b"x", opts()).unwrap();
    }
    wait_for_flash_copies(&e, keep.iter().cloned());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let (e, stop) = (e.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(5);
            let mut moves = 0u64;
            while !stop.load(Relaxed) {
                let g = format!("churn:{}", rng.gen_range(0..3000));
                if e.delete(0, g.as_bytes()) {
                    moves += 1;
                }
                e.set(0, g.as_bytes(), b"x", opts()).unwrap();
            }
            moves
        })
    };
    for round in 0..8 {
        e.save().unwrap();
        let found = checkpoint_keys(dir.path());
        let missing: Vec<&String> = (keep.iter())
            .filter(|k| !found.contains(&(0, k.as_bytes().to_vec())))
            .collect();
        assert!(
            missing.is_empty(),
            "round {round}: {} missing, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        );
    }
    stop.store(true, Relaxed);
    assert!(
        churn.join().unwrap() > 100,
        "the writer moved keys meanwhile"
    );
    // A restart from the last checkpoint (duplicates in it included)
    // counts each key once.
    let keys = e.dbsize(0);
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert!(e.recovery_report().from_checkpoint);
    assert_eq!(e.dbsize(0), keys);
    for k in &keep {
        assert_eq!(
            get(&e, 0, k.as_bytes()),
            Some(value_for(k.as_bytes(), 0, 20))
        );
    }
}

/// SWAPDB between two steps of a checkpoint's copy swaps the maps under
/// it: the shard's copy starts again, and every key is in the file under
/// the id of the database it was written in.
#[test]
fn a_checkpoint_copies_every_key_across_swapdb() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_in_ram(dir.path());
    let opts = SetOptions::default();
    let keys = |db: usize| (0..1500).map(move |i| format!("db{db}:{i}"));
    for db in 0..2 {
        for k in keys(db) {
            e.set(db, k.as_bytes(), b"v", opts).unwrap();
        }
    }
    wait_until("journal", || {
        (0..2).all(|db| {
            keys(db).all(|k| {
                !matches!(
                    e.key_info(db, k.as_bytes()).unwrap().location,
                    Location::Ram
                )
            })
        })
    });
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (e, stop) = (e.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                e.swap_db(0, 1).unwrap();
                n += 1;
                std::thread::sleep(Duration::from_micros(50));
            }
            n
        })
    };
    for round in 0..20 {
        e.save().unwrap();
        let found = checkpoint_keys(dir.path());
        for db in 0..2 {
            for k in keys(db) {
                assert!(
                    found.contains(&(db as u16, k.as_bytes().to_vec())),
                    "round {round}: {k} missing"
                );
            }
        }
    }
    stop.store(true, Relaxed);
    assert!(swapper.join().unwrap() > 10, "SWAPDB ran meanwhile");
}

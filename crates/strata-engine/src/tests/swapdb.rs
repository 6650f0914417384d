//! SWAPDB through the whole engine: random writes, deletes, FLUSHDBs and
//! swaps across four databases, checked against a model while a small RAM
//! budget demotes values and the collector moves records, then after
//! restarts from a full log scan, from a checkpoint and its tail, and
//! after a clean shutdown (the mapping must survive each, and no record
//! may be attributed to the wrong database). The function libraries'
//! blob, the other record of which one is in force, changes among them
//! and must come back as last set.

use crate::tests::{block_on, value_for, wait_until};
use crate::{Engine, EngineConfig, IoBackend, ShutdownSave};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::path::Path;

const DBS: usize = 4;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = IoBackend::Psync;
    c.maxmemory_ram = 128 << 10;
    c.segment_size = 256 << 10;
    c.write_chunk = 32 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.databases = DBS;
    c.hz = 100;
    c.min_value_size = 16;
    c
}

/// db -> key -> value
type Model = Vec<HashMap<Vec<u8>, Vec<u8>>>;

/// The function libraries' blob last set.
type Blob = Option<Vec<u8>>;

fn churn(e: &Engine, m: &mut Model, f: &mut Blob, seed: u64, steps: u32) {
    let mut rng = StdRng::seed_from_u64(seed);
    for step in 0..steps {
        if step % 250 == 0 {
            // Let journal batches and demotion interleave with the writes.
            std::thread::sleep(std::time::Duration::from_millis(60));
        }
        let db = rng.gen_range(0..DBS);
        let key = format!("k{}", rng.gen_range(0..200)).into_bytes();
        match rng.gen_range(0..100) {
            0..=2 => {
                let (a, b) = (rng.gen_range(0..DBS), rng.gen_range(0..DBS));
                e.swap_db(a, b).unwrap();
                m.swap(a, b);
            }
            3 if rng.gen_bool(0.2) => {
                e.flush_db(db);
                m[db].clear();
            }
            4..=12 => {
                assert_eq!(e.delete(db, &key), m[db].remove(&key).is_some());
            }
            // Seeds from 10 on leave the functions alone.
            13 if seed < 10 => {
                let blob = value_for(b"functions", step ^ seed as u32, rng.gen_range(0..3000));
                e.set_functions(blob.clone().into());
                *f = Some(blob);
            }
            _ => {
                let v = value_for(&key, step ^ seed as u32, rng.gen_range(20..1200));
                e.set(db, &key, &v, Default::default()).unwrap();
                m[db].insert(key, v);
            }
        }
    }
}

fn check(e: &Engine, m: &Model, f: &Blob, what: &str) {
    assert_eq!(e.functions().as_deref(), f.as_deref(), "{what}: functions");
    for (db, keys) in m.iter().enumerate() {
        assert_eq!(e.dbsize(db), keys.len() as u64, "{what}: size of db {db}");
        for (k, v) in keys {
            let got = block_on(e.get(db, k).wait()).unwrap();
            assert_eq!(
                got.as_deref(),
                Some(&v[..]),
                "{what}: db {db} key {}",
                String::from_utf8_lossy(k)
            );
        }
    }
}

#[test]
fn swapped_databases_survive_demotion_collection_and_restarts() {
    for (name, checkpoint_midway, clean) in [
        ("full log scan", false, false),
        ("checkpoint + tail", true, false),
        ("clean shutdown", false, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut m: Model = vec![HashMap::new(); DBS];
        let mut f: Blob = None;
        {
            let e = Engine::open(config(dir.path())).unwrap();
            churn(&e, &mut m, &mut f, 1, 3000);
            if checkpoint_midway {
                e.save().unwrap();
            }
            churn(&e, &mut m, &mut f, 2, 3000);
            wait_until("demotion", || e.tiered_info().values_in_flash > 0);
            check(&e, &m, &f, &format!("{name}: before restart"));
            wait_until("the collector freeing a segment", || {
                e.tiered_info().segments_freed > 0
            });
            check(&e, &m, &f, &format!("{name}: after collection"));
            if clean {
                e.shutdown(ShutdownSave::Save).unwrap();
            }
        }
        let e = Engine::open(config(dir.path())).unwrap();
        let r = e.recovery_report();
        assert_eq!(
            r.corrupt_records + r.missing_segment_entries,
            0,
            "{name}: {r:?}"
        );
        check(&e, &m, &f, name);
        churn(&e, &mut m, &mut f, 3, 2000);
        drop(e);
        let e = Engine::open(config(dir.path())).unwrap();
        check(&e, &m, &f, &format!("{name}, second restart"));
    }
}

/// With `appendonly no` nothing is journaled: the mapping reaches the log
/// with the checkpoint of a clean shutdown, as the values do.
#[test]
fn swapped_databases_survive_a_clean_shutdown_without_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || {
        let mut c = config(dir.path());
        c.appendonly = false;
        c
    };
    let mut m: Model = vec![HashMap::new(); DBS];
    let mut f: Blob = None;
    {
        let e = Engine::open(cfg()).unwrap();
        churn(&e, &mut m, &mut f, 7, 1500);
        e.swap_db(0, 3).unwrap();
        m.swap(0, 3);
        e.set_functions(b"libraries".to_vec().into());
        f = Some(b"libraries".to_vec());
        check(&e, &m, &f, "before shutdown");
        e.shutdown(ShutdownSave::Save).unwrap();
    }
    let e = Engine::open(cfg()).unwrap();
    check(&e, &m, &f, "after a clean restart without the journal");
}

/// The record of the function libraries in force is moved, not dropped,
/// when the collector frees its segment.
#[test]
fn the_functions_record_survives_the_collector() {
    let dir = tempfile::tempdir().unwrap();
    let mut m: Model = vec![HashMap::new(); DBS];
    let f: Blob = Some(b"#!lua name=lib ...".to_vec());
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.set_functions(f.clone().unwrap().into());
        let segments = || -> Vec<std::path::PathBuf> {
            let mut v: Vec<_> = std::fs::read_dir(dir.path().join("flash"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect();
            v.sort();
            v
        };
        wait_until("the journal writing the record", || !segments().is_empty());
        let first = segments()[0].clone();
        // Overwrite (never setting the functions again) until the first
        // segment, which holds the record, is collected.
        let mut seed = 10;
        while first.exists() {
            churn(&e, &mut m, &mut None, seed, 1000);
            seed += 1;
            assert!(seed < 200, "the collector never freed the first segment");
        }
        check(&e, &m, &f, "after collection");
    }
    let e = Engine::open(config(dir.path())).unwrap();
    check(&e, &m, &f, "after a restart");
}

//! Chunked strings (`types::bigstr`) through the whole engine: random
//! writes of parts (as SETRANGE, SETBIT and APPEND make them), whole sets
//! and deletions, checked against a model while a small RAM budget demotes
//! parts, reads load them, the collector moves their records, and the
//! engine restarts from a full log scan, a checkpoint and its tail, and a
//! clean shutdown with and without the journal; and a change torn by a
//! crash comes back whole or not at all.

use super::torn_changes::{cut_copy, segment};
use crate::tests::{assert_live_bytes, block_on, wait_until};
use crate::{Engine, EngineConfig, IoBackend, Location, Need, ShutdownSave};
use bytes::Bytes;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::path::Path;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = IoBackend::Psync;
    c.maxmemory_ram = 512 << 10;
    c.segment_size = 512 << 10;
    c.write_chunk = 32 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.databases = 1;
    c.hz = 100;
    c.min_value_size = 16;
    c
}

type Model = HashMap<Vec<u8>, Vec<u8>>;

fn get(e: &Engine, key: &[u8]) -> Option<Vec<u8>> {
    block_on(e.get(0, key).wait()).unwrap().map(|b| b.to_vec())
}

/// Writes `data` at `off` of `key` (as SETRANGE), in the engine and the
/// model.
fn write(e: &Engine, model: &mut Model, key: &[u8], off: u64, data: Vec<u8>) {
    let m = model.entry(key.to_vec()).or_default();
    let end = off as usize + data.len();
    if m.len() < end {
        m.resize(end, 0);
    }
    m[off as usize..end].copy_from_slice(&data);
    let last = end as i64 - 1;
    let need = Need::indexes(&[(off as i64, last), (-1, -1)]);
    let r = block_on(
        e.write_str(0, Bytes::copy_from_slice(key), need, move |ed| {
            ed.write(off, &data)
        })
        .wait(),
    );
    r.unwrap();
}

fn churn(e: &Engine, model: &mut Model, seed: u64, steps: u32) {
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..steps {
        let key = format!("b{}", rng.gen_range(0..4)).into_bytes();
        let len = model.get(&key).map_or(0, |v| v.len()) as u64;
        match rng.gen_range(0..100) {
            0 => {
                model.remove(&key);
                e.delete(0, &key);
            }
            1..=2 => {
                let n = rng.gen_range(300_000..1_200_000);
                let v: Vec<u8> = (0..n).map(|i| (i % 251) as u8 | 1).collect();
                e.set(0, &key, &v, Default::default()).unwrap();
                model.insert(key, v);
            }
            3..=6 => {
                // Far past the end: holes between.
                let off = len + rng.gen_range(0..400_000);
                write(e, model, &key, off, vec![rng.gen(); rng.gen_range(1..100)]);
            }
            7..=11 => {
                let n = rng.gen_range(1..150_000);
                write(e, model, &key, len, vec![rng.gen(); n]);
            }
            _ => {
                let off = rng.gen_range(0..len.max(1));
                let n = if rng.gen_bool(0.1) {
                    rng.gen_range(1..200_000)
                } else {
                    rng.gen_range(1..20)
                };
                write(e, model, &key, off, vec![rng.gen(); n]);
            }
        }
    }
}

fn check(e: &Engine, model: &Model, what: &str) {
    assert_eq!(e.dbsize(0) as usize, model.len(), "{what}: key count");
    let mut rng = StdRng::seed_from_u64(1);
    for (k, v) in model {
        let name = String::from_utf8_lossy(k);
        // A few ranges, part by part, then the whole string.
        for _ in 0..4 {
            let a = rng.gen_range(0..v.len() as i64);
            let b = a + rng.gen_range(0..100_000);
            let key = Bytes::from(k.clone());
            let got = block_on(
                e.read_str(0, key, Need::indexes(&[(a, b)]), move |s| {
                    let s = s.expect("exists");
                    let mut out = vec![0u8; (b - a + 1) as usize];
                    s.read(a as u64, &mut out)?;
                    Ok(out)
                })
                .wait(),
            )
            .unwrap();
            let end = (b as usize + 1).min(v.len());
            assert_eq!(
                &got[..end - a as usize],
                &v[a as usize..end],
                "{what}: {name} {a}..={b}"
            );
        }
        let got = get(e, k).unwrap_or_else(|| panic!("{what}: {name} missing"));
        assert!(
            got == *v,
            "{what}: {name}: {} bytes, want {}",
            got.len(),
            v.len()
        );
        assert_eq!(e.strlen(0, k).unwrap(), v.len() as u64, "{what}: {name}");
        let info = e.key_info(0, k).unwrap();
        let chunked = matches!(info.location, Location::Chunked { .. });
        assert_eq!(chunked, v.len() > 256 << 10, "{what}: {name} chunked");
    }
    assert_live_bytes(e, what);
}

#[test]
fn big_strings_survive_demotion_collection_and_restarts() {
    for (name, checkpoint_midway, clean, journal) in [
        ("full log scan", false, false, true),
        ("checkpoint + tail", true, false, true),
        ("clean shutdown", true, true, true),
        ("no journal, clean shutdown", false, true, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = || {
            let mut c = config(dir.path());
            c.appendonly = journal;
            c
        };
        let mut model = Model::new();
        {
            let e = Engine::open(cfg()).unwrap();
            churn(&e, &mut model, 1, 300);
            if checkpoint_midway {
                e.save().unwrap();
            }
            churn(&e, &mut model, 2, 300);
            wait_until("demotion", || e.tiered_info().chunks_in_flash > 4);
            check(&e, &model, &format!("{name}: before restart"));
            let info = e.tiered_info();
            assert!(
                info.chunks_written > 0 && info.chunk_loads > 0,
                "{name}: parts did not go to flash and back: {info:?}"
            );
            churn(&e, &mut model, 3, 200);
            if clean {
                e.shutdown(ShutdownSave::Save).unwrap();
            }
        }
        let e = Engine::open(cfg()).unwrap();
        let r = e.recovery_report();
        assert_eq!(
            r.from_checkpoint,
            checkpoint_midway || clean,
            "{name}: {r:?}"
        );
        assert_eq!(
            r.corrupt_records + r.missing_segment_entries,
            0,
            "{name}: {r:?}"
        );
        check(&e, &model, name);
        churn(&e, &mut model, 4, 200);
        if !journal {
            e.shutdown(ShutdownSave::Save).unwrap();
        }
        drop(e);
        let e = Engine::open(cfg()).unwrap();
        check(&e, &model, &format!("{name}, second restart"));
    }
}

/// One write of part of a string that changes many parts and grows it
/// (the journal writes it over several writes): cut anywhere, the string
/// comes back as it was before or after, never a mix.
#[test]
fn a_string_change_torn_by_a_crash_comes_back_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let c = super::torn_changes::config(dir.path());
    let before: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8 | 1).collect();
    let mut after = before[..50_000].to_vec();
    after.resize(1_900_000, b'x');
    let (len0, len1) = {
        let e = Engine::open(c.clone()).unwrap();
        e.set(0, b"s", &before, Default::default()).unwrap();
        block_on(e.wait_durable(e.journal_ticket())).unwrap();
        let len0 = std::fs::metadata(segment(dir.path())).unwrap().len();
        // 1.85 MB written at 50,000 in one change: every part and new ones.
        let mut m = Model::new();
        m.insert(b"s".to_vec(), before.clone());
        write(&e, &mut m, b"s", 50_000, vec![b'x'; 1_850_000]);
        assert_eq!(m[&b"s"[..]], after);
        block_on(e.wait_durable(e.journal_ticket())).unwrap();
        (len0, std::fs::metadata(segment(dir.path())).unwrap().len())
    };
    assert!(
        len1 > len0 + (1 << 20),
        "the change wrote {} bytes",
        len1 - len0
    );
    let mut rng = StdRng::seed_from_u64(3);
    let mut cuts: Vec<u64> = (0..12).map(|i| len0 + (len1 - len0) * i / 12).collect();
    cuts.extend((0..6).map(|_| rng.gen_range(len0..len1)));
    cuts.push(len1);
    let (mut saw_before, mut saw_after) = (0, 0);
    for cut in cuts {
        let copy = cut_copy(dir.path(), cut);
        let e = Engine::open(super::torn_changes::config(copy.path())).unwrap();
        let r = e.recovery_report();
        assert_eq!(
            r.corrupt_records + r.missing_segment_entries,
            0,
            "cut {cut}: {r:?}"
        );
        let got = get(&e, b"s");
        if got.as_ref() == Some(&before) {
            saw_before += 1;
        } else if got.as_ref() == Some(&after) {
            saw_after += 1;
        } else {
            panic!(
                "cut at {cut} of {len0}..{len1}: neither before nor after ({:?} bytes)",
                got.map(|g| g.len())
            );
        }
        if cut == len1 {
            assert_eq!(got.as_ref(), Some(&after), "uncut");
        }
    }
    assert!(saw_before > 0 && saw_after > 0, "{saw_before} {saw_after}");
}

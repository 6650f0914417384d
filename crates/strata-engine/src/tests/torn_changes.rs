//! A change of chunked collections torn by a crash while the journal wrote
//! it: whatever prefix of the batch reached the log, each collection comes
//! back exactly as it was before the change or exactly as after it, never
//! a mix (a hash with half its fields rewritten, a sorted set whose member
//! parts disagree with its order parts, a list whose head and parts
//! disagree). Parts count only under a head at least as new as they are
//! (docs/format.md, "headed" chunks).
//!
//! The bug this guards against: before format 9 every chunk record counted
//! alone, so a batch cut between two of a collection's part records came
//! back half applied.

use crate::tests::block_on;
use crate::types::{Collection, ValueType};
use crate::{Engine, EngineConfig, IoBackend, Location, ValueRef};
use bytes::Bytes;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = IoBackend::Psync;
    // Nothing is demoted: every record of the change is the journal's.
    c.maxmemory_ram = 256 << 20;
    // One segment holds everything; a batch goes out in many writes.
    c.segment_size = 32 << 20;
    c.write_chunk = 32 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.databases = 1;
    c
}

const KEYS: [(&str, ValueType); 4] = [
    ("h", ValueType::Hash),
    ("z", ValueType::ZSet),
    ("s", ValueType::Set),
    ("l", ValueType::List),
];

/// Fills (`gen` 0) or changes (`gen` 1) collection `c` of type `t` so
/// that every part of it changes.
fn shape(c: &mut Collection, gen: u32) {
    match c {
        Collection::Hash(h) => {
            for i in 0..1200 {
                h.insert(format!("field-{i}").as_bytes(), &[b'a' + gen as u8; 60]);
            }
        }
        Collection::ZSet(z) => {
            for i in 0..1500 {
                let m = format!("member-{i:0>30}");
                z.insert(m.as_bytes(), (i as f64) * if gen == 0 { 1.0 } else { -1.0 });
            }
        }
        Collection::Set(s) => {
            for i in 0..2000 {
                let m = format!("set-member-{i:0>30}");
                if gen == 0 || i % 2 == 0 {
                    s.insert(m.as_bytes());
                } else {
                    s.remove(m.as_bytes());
                }
            }
        }
        Collection::List(l) => {
            let n = if gen == 0 { 1000 } else { 400 };
            for i in 0..n {
                if gen == 1 {
                    l.pop_front();
                }
                l.push_back(vec![b'a' + (i % 26) as u8 + gen as u8; 60].into());
            }
        }
        // Streams are never chunked.
        Collection::Stream(_) => {}
    }
}

/// Applies `shape(gen)` to every key in one command and waits until the
/// journal wrote it; returns the model after it.
fn apply(e: &Engine, model: &mut HashMap<&'static str, Collection>, gen: u32) {
    for (k, t) in KEYS {
        let c = model
            .entry(k)
            .or_insert_with(|| Collection::new(t).unwrap());
        shape(c, gen);
        c.update_encoding(&crate::types::EncodingLimits::default());
    }
    let keys: Vec<Bytes> = KEYS.iter().map(|(k, _)| Bytes::from(*k)).collect();
    block_on(
        e.with_keys(0, keys, move |v| {
            for (k, t) in KEYS {
                let c = v.coll_mut(k.as_bytes(), t, true).unwrap().unwrap();
                shape(c, gen);
            }
        })
        .wait(),
    )
    .unwrap();
    block_on(e.wait_durable(e.journal_ticket())).unwrap();
}

fn segment(dir: &Path) -> PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("flash"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(v.len(), 1, "one segment: {v:?}");
    v.pop().unwrap()
}

fn read(e: &Engine, key: &str) -> Option<Collection> {
    let k = Bytes::from(key.to_owned());
    block_on(
        e.with_keys(0, vec![k.clone()], move |v| match v.get(&k) {
            Some(ValueRef::Coll(c)) => Some(c.clone()),
            _ => None,
        })
        .wait(),
    )
    .unwrap()
}

#[test]
fn a_change_torn_before_its_head_comes_back_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut model = HashMap::new();
    let (len0, len1);
    let before = {
        let e = Engine::open(c.clone()).unwrap();
        apply(&e, &mut model, 0);
        for (k, _) in KEYS {
            let info = e.key_info(0, k.as_bytes()).unwrap();
            assert!(
                matches!(info.location, Location::Chunked { parts, .. } if parts > 2),
                "{k} is chunked: {:?}",
                info.location
            );
        }
        len0 = std::fs::metadata(segment(dir.path())).unwrap().len();
        let before = model.clone();
        apply(&e, &mut model, 1);
        len1 = std::fs::metadata(segment(dir.path())).unwrap().len();
        drop(e);
        before
    };
    let after = model;
    assert!(
        len1 > len0 + (64 << 10),
        "the change wrote {} bytes",
        len1 - len0
    );
    // Cuts spread over the change's records, plus random ones, plus none.
    let mut rng = StdRng::seed_from_u64(9);
    let mut cuts: Vec<u64> = (0..16).map(|i| len0 + (len1 - len0) * i / 16).collect();
    cuts.extend((0..8).map(|_| rng.gen_range(len0..len1)));
    cuts.push(len1);
    let (mut saw_before, mut saw_after) = (0, 0);
    for cut in cuts {
        let copy = tempfile::tempdir().unwrap();
        std::fs::create_dir(copy.path().join("flash")).unwrap();
        for f in std::fs::read_dir(dir.path().join("flash")).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, copy.path().join("flash").join(f.file_name().unwrap())).unwrap();
        }
        let seg = segment(copy.path());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&seg)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let e = Engine::open(config(copy.path())).unwrap();
        let r = e.recovery_report();
        assert_eq!(
            r.corrupt_records + r.missing_segment_entries,
            0,
            "cut {cut}: {r:?}"
        );
        for (k, _) in KEYS {
            let got = read(&e, k);
            if got.as_ref() == before.get(k) {
                saw_before += 1;
            } else if got.as_ref() == after.get(k) {
                saw_after += 1;
            } else {
                panic!(
                    "cut at {cut} of {len0}..{len1}: {k} came back neither as before nor as after \
                     the change ({:?} elements; before {}, after {})",
                    got.map(|c| c.len()),
                    before[k].len(),
                    after[k].len()
                );
            }
        }
        if cut == len1 {
            for (k, _) in KEYS {
                assert_eq!(read(&e, k).as_ref(), after.get(k), "uncut: {k}");
            }
        }
    }
    assert!(saw_before > 0 && saw_after > 0, "{saw_before} {saw_after}");
}

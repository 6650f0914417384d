//! Collections through the whole engine: random changes of hashes, lists,
//! sets and sorted sets (through `KeysView`, as the server makes them)
//! checked against a model while a small RAM budget demotes them, reads
//! fetch and promote them, the collector moves their records, and the
//! engine restarts from a full log scan, from a checkpoint and its tail,
//! and after a clean shutdown.

use crate::base::ValueType;
use crate::clock::now_ms;
use crate::tests::{assert_live_bytes, assert_recovered, block_on, wait_until};
use crate::types::Collection;
use crate::{
    Engine, EngineConfig, ExpireCond, IoBackend, Location, ShutdownSave, TtlState, Value, ValueRef,
};
use bytes::Bytes;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::path::Path;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = IoBackend::Psync;
    c.maxmemory_ram = 384 << 10;
    c.segment_size = 256 << 10;
    c.write_chunk = 32 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.databases = 2;
    c.hz = 100;
    c.min_value_size = 16;
    c
}

/// key -> (collection, expire_at_ms)
type Model = HashMap<Vec<u8>, (Collection, u64)>;

fn type_of(key: &[u8]) -> ValueType {
    match key.first() {
        Some(b'h') => ValueType::Hash,
        Some(b'l') => ValueType::List,
        Some(b's') => ValueType::Set,
        Some(b'x') => ValueType::Stream,
        _ => ValueType::ZSet,
    }
}

/// One random change of a collection (the same on the engine's and the
/// model's copy, since both run this with the same random numbers).
fn change(c: &mut Collection, r: &mut StdRng, step: u32, span: u32) {
    let n = r.gen_range(0..span);
    let member = format!("m{n}").into_bytes();
    let value = vec![b'a' + (step % 26) as u8; r.gen_range(0..200)];
    let add = r.gen_bool(0.7);
    match c {
        Collection::Hash(h) => {
            if add {
                h.insert(&member, &value);
            } else {
                h.remove(&member);
            }
        }
        // Not in the model: tests/big_strings.rs has strings.
        Collection::Str(_) => {}
        Collection::Stream(s) => {
            use crate::types::stream::{StreamId, Trim};
            if add {
                let id = s.last_id.incr().unwrap_or_default();
                s.append(id, &[&member, &value], Default::default());
            } else {
                // Deletes at the front, inside, and trims of each kind.
                let last = s.last_id;
                match r.gen_range(0..40) {
                    0..=29 => {
                        let first = s.first_id;
                        s.delete(&[first]);
                    }
                    30..=35 => {
                        let back = r.gen_range(0..span as u64);
                        s.delete(&[StreamId::new(last.ms, last.seq.saturating_sub(back))]);
                    }
                    36..=37 => {
                        let keep = s.len().saturating_sub(r.gen_range(0..20));
                        s.trim(Trim::MaxLen(keep), r.gen_bool(0.5), 0);
                    }
                    _ => {
                        let min = last.seq.saturating_sub(r.gen_range(0..2 * span as u64));
                        s.trim(Trim::MinId(StreamId::new(last.ms, min)), r.gen_bool(0.5), 0);
                    }
                }
            }
        }
        Collection::List(l) => match (add, r.gen_bool(0.5)) {
            (true, true) => l.push_back(value.into()),
            (true, false) => l.push_front(value.into()),
            (false, true) => drop(l.pop_back()),
            (false, false) => drop(l.pop_front()),
        },
        Collection::Set(s) => {
            let m = if r.gen_bool(0.5) {
                n.to_string().into_bytes()
            } else {
                format!("set-member-{n:0>40}").into_bytes()
            };
            if add {
                s.insert(&m);
            } else {
                s.remove(&m);
            }
        }
        Collection::ZSet(z) => {
            // Big sorted sets get longer members, to pass `CHUNKED_AT`.
            let member = if span > 1000 {
                format!("zset-member-{n:0>24}").into_bytes()
            } else {
                member
            };
            if add {
                z.insert(&member, r.gen_range(-100..100) as f64 / 4.0);
            } else {
                z.remove(&member);
            }
        }
    }
}

/// What a churn run changes: key prefixes (types), keys per prefix and
/// members per collection.
#[derive(Clone, Copy)]
struct Shape {
    prefixes: &'static [&'static str],
    keys: u32,
    span: u32,
    /// One step in `ops` deletes a key, one sets a TTL.
    ops: u32,
}

/// Many small collections of every type.
const SMALL: Shape = Shape {
    prefixes: &["h", "l", "s", "z", "x"],
    keys: 60,
    span: 40,
    ops: 20,
};

/// Few big hashes, sets, lists and sorted sets: chunked, their parts
/// demoted and loaded.
const CHUNKED: Shape = Shape {
    prefixes: &["h", "s", "l", "z", "x"],
    keys: 6,
    span: 1500,
    ops: 500,
};

fn churn_shaped(e: &Engine, model: &mut Model, seed: u64, steps: u32, shape: Shape) {
    let span = shape.span;
    let mut rng = StdRng::seed_from_u64(seed);
    let far = now_ms() + 3_600_000;
    for step in 0..steps {
        let p = shape.prefixes[rng.gen_range(0..shape.prefixes.len())];
        let key = format!("{p}{}", rng.gen_range(0..shape.keys)).into_bytes();
        let t = type_of(&key);
        match rng.gen_range(0..shape.ops) {
            0 => {
                let existed = model.remove(&key).is_some();
                let k = Bytes::from(key.clone());
                let r = block_on(
                    e.with_keys(0, vec![k.clone()], move |v| v.delete(&k))
                        .wait(),
                );
                assert_eq!(r.unwrap(), existed);
            }
            1 => {
                let at = far + step as u64;
                let had = e.expire(0, &key, at, ExpireCond::Always);
                assert_eq!(had, model.contains_key(&key));
                if let Some(m) = model.get_mut(&key) {
                    m.1 = at;
                }
            }
            _ => {
                // The same changes on a model copy and in the engine.
                let seed = rng.gen::<u64>();
                let times = if rng.gen_bool(0.02) {
                    300
                } else {
                    rng.gen_range(1..4)
                };
                let entry = model
                    .entry(key.clone())
                    .or_insert_with(|| (Collection::new(t).unwrap(), 0));
                let mut r = StdRng::seed_from_u64(seed);
                for i in 0..times {
                    change(&mut entry.0, &mut r, step + i, span);
                }
                entry
                    .0
                    .update_encoding(&crate::types::EncodingLimits::default());
                if entry.0.is_empty() {
                    model.remove(&key);
                }
                let k = Bytes::from(key.clone());
                let res = block_on(
                    e.with_keys(0, vec![k.clone()], move |v| {
                        let Some(c) = v.coll_mut(&k, t, true).unwrap() else {
                            return;
                        };
                        let mut r = StdRng::seed_from_u64(seed);
                        for i in 0..times {
                            change(c, &mut r, step + i, span);
                        }
                    })
                    .wait(),
                );
                res.unwrap();
            }
        }
    }
}

/// Where a collection read differs from the model's (a short message:
/// the values themselves can be megabytes).
fn describe_diff(got: Option<&Collection>, want: &Collection) -> String {
    let Some(got) = got else {
        return "missing".into();
    };
    if got.vtype() != want.vtype() || got.len() != want.len() {
        return format!(
            "{:?} of {} elements, want {:?} of {}",
            got.vtype(),
            got.len(),
            want.vtype(),
            want.len()
        );
    }
    match (got, want) {
        (Collection::List(a), Collection::List(b)) => {
            let i = a.iter().zip(b.iter()).position(|(x, y)| x != y);
            format!("lists of {} differ first at {i:?}", a.len())
        }
        _ => "same length, other elements".into(),
    }
}

/// The bytes the engine stores of collection `c`: its packed length, or
/// for a chunked sorted set both families' elements (each member is in a
/// member part and an order part).
fn stored_len(c: &Collection, chunked: bool) -> u64 {
    let n = c.encoded_len() as u64;
    match c {
        Collection::ZSet(_) if chunked => 2 * n - crate::types::PACKED_HEADER_LEN as u64,
        _ => n,
    }
}

fn check(e: &Engine, model: &Model, what: &str) {
    assert_eq!(e.dbsize(0) as usize, model.len(), "{what}: key count");
    // The counters INFO reports, against the model.
    let t = e.tiered_info();
    let mut by_type = [0u64; 6];
    for (c, _) in model.values() {
        by_type[c.vtype() as usize] += 1;
    }
    assert_eq!(t.keys_by_type, by_type, "{what}: keys per type");
    assert_eq!(
        t.collections_in_ram + t.collections_in_flash,
        model.len() as u64,
        "{what}"
    );
    let mut stored = 0;
    for (k, (c, ttl)) in model {
        let key = Bytes::from(k.clone());
        let got = block_on(
            e.with_keys(0, vec![key.clone()], move |v| match v.get(&key) {
                Some(ValueRef::Coll(c)) => Some(c.clone()),
                _ => None,
            })
            .wait(),
        )
        .unwrap();
        let name = String::from_utf8_lossy(k);
        if got.as_ref() != Some(c) {
            panic!(
                "{what}: value of {name}: {}",
                describe_diff(got.as_ref(), c)
            );
        }
        let info = e.key_info(0, k).unwrap();
        assert_eq!(info.vtype, c.vtype(), "{what}: type of {name}");
        assert_eq!(info.elements, c.len() as u64, "{what}: length of {name}");
        let chunked = matches!(info.location, Location::Chunked { .. });
        assert_eq!(
            info.value_len,
            stored_len(c, chunked),
            "{what}: bytes of {name}"
        );
        stored += stored_len(c, chunked);
        let t = e.ttl(0, k);
        match *ttl {
            0 => assert_eq!(t, TtlState::NoTtl, "{what}: ttl of {name}"),
            at => assert_eq!(t, TtlState::At(at), "{what}: ttl of {name}"),
        }
    }
    assert_live_bytes(e, what);
    let t = e.tiered_info();
    assert_eq!(
        t.collections_in_ram_bytes + t.collections_in_flash_bytes,
        stored,
        "{what}: bytes"
    );
}

#[test]
fn collections_survive_demotion_collection_and_restarts() {
    survive(&[
        ("full log scan", false, false),
        ("clean shutdown", true, true),
    ]);
}

/// A checkpoint midway and a crash: recovery loads the checkpoint and
/// replays its tail. Keys deleted after the checkpoint whose records the
/// collector freed must be cancelled by their (kept) tombstones, never
/// found pointing at a freed segment (collector rule 5). Before that rule
/// about one run in seven reported such an entry as damage.
#[test]
fn collections_survive_a_checkpoint_and_its_tail() {
    for _ in 0..6 {
        survive(&[("checkpoint + tail", true, false)]);
    }
}

/// Big hashes and sets are chunked: a change writes only the parts it
/// touched, parts are demoted and loaded one by one, the collector moves
/// chunk records, and every restart mode rebuilds their directories.
#[test]
fn chunked_collections_survive_demotion_collection_and_restarts() {
    survive_shaped(
        &[
            ("chunked, full log scan", false, false),
            ("chunked, clean shutdown", true, true),
            ("chunked, checkpoint + tail", true, false),
        ],
        CHUNKED,
        4000,
    );
}

/// Without the journal (`appendonly no`), demotion writes the changed
/// parts it picks, each time under a head, and a clean shutdown saves every
/// other changed part: big collections come back whole, restart after
/// restart (a crash would discard the files: nothing to check there).
#[test]
fn chunked_collections_survive_clean_shutdowns_without_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || {
        let mut c = config(dir.path());
        c.appendonly = false;
        c
    };
    let mut model = Model::new();
    {
        let e = Engine::open(cfg()).unwrap();
        churn_shaped(&e, &mut model, 1, 4000, CHUNKED);
        wait_until("demotion", || e.tiered_info().chunks_in_flash > 0);
        check(&e, &model, "no journal, before shutdown");
        churn_shaped(&e, &mut model, 2, 1000, CHUNKED);
        e.shutdown(ShutdownSave::Save).unwrap();
    }
    for round in 0..2u64 {
        let e = Engine::open(cfg()).unwrap();
        let r = e.recovery_report();
        assert_eq!(r.corrupt_records + r.missing_segment_entries, 0, "{r:?}");
        check(&e, &model, &format!("no journal, restart {round}"));
        churn_shaped(&e, &mut model, 3 + round, 1000, CHUNKED);
        e.shutdown(ShutdownSave::Save).unwrap();
    }
}

fn survive(modes: &[(&str, bool, bool)]) {
    survive_shaped(modes, SMALL, 4000)
}

fn survive_shaped(modes: &[(&str, bool, bool)], shape: Shape, steps: u32) {
    let churn = |e: &Engine, model: &mut Model, seed: u64, n: u32| {
        churn_shaped(e, model, seed, n * steps / 4000, shape)
    };
    for &(name, checkpoint_midway, clean) in modes {
        let dir = tempfile::tempdir().unwrap();
        let mut model = Model::new();
        {
            let e = Engine::open(config(dir.path())).unwrap();
            churn(&e, &mut model, 1, 4000);
            if checkpoint_midway {
                e.save().unwrap();
            }
            churn(&e, &mut model, 2, 4000);
            // (For big shapes, until parts are on flash: the reads below
            // are to load some back.)
            wait_until("demotion", || {
                let t = e.tiered_info();
                if shape.span > 1000 {
                    t.chunks_in_flash > 0
                } else {
                    t.values_in_flash + t.chunks_in_flash > 0
                }
            });
            // Reads of cold collections fetch them (and changes after that
            // go on from the fetched state).
            check(&e, &model, &format!("{name}: before restart"));
            churn(&e, &mut model, 3, 2000);
            let info = e.tiered_info();
            assert!(
                info.fetches > 0,
                "{name}: no collection was read from flash"
            );
            // Small collections changed in RAM are logged by their changes
            // (`types::changes`), and the restarts below apply them.
            if shape.span <= 1000 {
                let p = e.persist_info();
                assert!(
                    p.journal_change_records > 0,
                    "{name}: no change record: {p:?}"
                );
            }
            if shape.span > 1000 {
                assert!(
                    info.chunks_written > 0 && info.chunk_loads > 0,
                    "{name}: parts did not go to flash and back: {info:?}"
                );
                // Every type of the shape has chunked keys.
                for p in shape.prefixes {
                    let chunked = (0..shape.keys).any(|i| {
                        let k = format!("{p}{i}");
                        e.key_info(0, k.as_bytes())
                            .is_some_and(|i| matches!(i.location, Location::Chunked { .. }))
                    });
                    assert!(chunked, "{name}: no {p} key is chunked");
                }
            }
            if clean {
                e.shutdown(ShutdownSave::Save).unwrap();
            }
        }
        let e = Engine::open(config(dir.path())).unwrap();
        assert_recovered(&e, checkpoint_midway, name);
        check(&e, &model, name);
        churn(&e, &mut model, 4, 2000);
        drop(e);
        let e = Engine::open(config(dir.path())).unwrap();
        check(&e, &model, &format!("{name}, second restart"));
    }
}

#[test]
fn a_string_write_replaces_a_collection_and_string_reads_refuse_one() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    let k = Bytes::from_static(b"k");
    let k2 = k.clone();
    block_on(
        e.with_keys(0, vec![k.clone()], move |v| {
            if let Some(Collection::Set(s)) = v.coll_mut(&k2, ValueType::Set, true).unwrap() {
                s.insert(b"a");
            }
        })
        .wait(),
    )
    .unwrap();
    assert!(matches!(
        block_on(e.get(0, b"k").wait()),
        Err(crate::EngineError::WrongType)
    ));
    assert!(matches!(
        e.strlen(0, b"k"),
        Err(crate::EngineError::WrongType)
    ));
    let k2 = k.clone();
    let r = block_on(
        e.with_keys(0, vec![k.clone()], move |v| {
            v.coll_mut(&k2, ValueType::Hash, true).err()
        })
        .wait(),
    );
    assert!(matches!(r.unwrap(), Some(crate::EngineError::WrongType)));
    e.set(0, b"k", b"now a string", Default::default()).unwrap();
    assert_eq!(e.key_info(0, b"k").unwrap().vtype, ValueType::String);
    let k2 = k.clone();
    let r = block_on(
        e.with_keys(0, vec![k], move |v| {
            matches!(v.get(&k2), Some(ValueRef::Str(_)))
        })
        .wait(),
    );
    assert!(r.unwrap());
    // Storing an empty collection deletes the key.
    let k = Bytes::from_static(b"k");
    let k2 = k.clone();
    block_on(
        e.with_keys(0, vec![k], move |v| {
            v.put(
                &k2,
                Value::Coll(Box::new(Collection::new(ValueType::List).unwrap())),
            )
        })
        .wait(),
    )
    .unwrap();
    assert!(!e.exists(0, b"k"));
}

//! Chunked collections logged by their parts' changes (part change
//! records, kind 13: `types::parts::chains`), cut by a crash anywhere: a
//! hash, a set, a sorted set, a list and a stream, each changed a little
//! at a time (one journal batch per step), come back after a restart
//! exactly as they were after some step, never between, and as after the
//! last step when nothing is cut. Recovery applies each part's chain of
//! changes to its image (`log::recovery::part_changes`); a restart from
//! that state, changed further, recovers again.

use super::torn_changes::{config, cut_copy, live_copy, read, segment, step, KEYS};
use crate::types::Collection;
use crate::Engine;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;

/// Fills collection `c` past the chunking threshold.
fn fill(c: &mut Collection) {
    match c {
        Collection::Hash(h) => {
            for i in 0..1500 {
                h.insert(format!("field-{i}").as_bytes(), &[b'a'; 60]);
            }
        }
        Collection::ZSet(z) => {
            for i in 0..1500 {
                z.insert(format!("member-{i:0>30}").as_bytes(), i as f64);
            }
        }
        Collection::Set(s) => {
            for i in 0..2000 {
                s.insert(format!("set-member-{i:0>30}").as_bytes());
            }
        }
        Collection::List(l) => {
            for i in 0..1200 {
                l.push_back(vec![b'a' + (i % 26) as u8; 60].into());
            }
        }
        Collection::Stream(x) => {
            use crate::types::stream::StreamId;
            for i in 1..=800 {
                x.append(
                    StreamId::new(i, 0),
                    &[b"f", &[b'v'; 60]],
                    Default::default(),
                );
            }
        }
        Collection::Str(_) => {}
    }
}

/// One small random change of `c` (a few elements), drawn from `r`.
fn change(c: &mut Collection, r: &mut StdRng, step: u64) {
    match c {
        Collection::Hash(h) => {
            let f = format!("field-{}", r.gen_range(0..1700));
            match r.gen_range(0..4) {
                0 => {
                    h.remove(f.as_bytes());
                }
                _ => {
                    let n = r.gen_range(1..90);
                    h.insert(f.as_bytes(), &vec![b'a' + (step % 26) as u8; n]);
                }
            }
        }
        Collection::ZSet(z) => {
            let m = format!("member-{:0>30}", r.gen_range(0..1700));
            if r.gen_bool(0.2) {
                z.remove(m.as_bytes());
            } else {
                z.insert(m.as_bytes(), r.gen_range(-5000.0..5000.0));
            }
        }
        Collection::Set(s) => {
            let m = format!("set-member-{:0>30}", r.gen_range(0..2200));
            if r.gen_bool(0.5) {
                s.insert(m.as_bytes());
            } else {
                s.remove(m.as_bytes());
            }
        }
        Collection::List(l) => match r.gen_range(0..5) {
            0 => l.push_back(vec![b'A' + (step % 26) as u8; r.gen_range(1..80)].into()),
            1 => l.push_front(vec![b'B'; r.gen_range(1..80)].into()),
            2 => {
                l.pop_back();
            }
            3 => {
                l.pop_front();
            }
            _ => {
                let n = l.len();
                if n > 0 {
                    l.set(r.gen_range(0..n), &[b'C' + (step % 20) as u8; 40]);
                }
            }
        },
        Collection::Stream(x) => {
            use crate::types::stream::StreamId;
            if r.gen_bool(0.7) {
                let id = StreamId::new(x.last_id.ms + 1, 0);
                x.append(id, &[b"f", &[b'w'; 30]], Default::default());
            } else {
                let id = StreamId::new(r.gen_range(1..x.last_id.ms.max(2)), 0);
                x.delete(&[id]);
            }
        }
        Collection::Str(_) => {}
    }
}

/// Runs `steps` random changes of every key (seeded per key and step, so
/// the model and the engine draw alike); returns the segment's length and
/// the model after each.
fn run(
    e: &Engine,
    model: &mut HashMap<&'static str, Collection>,
    dir: &std::path::Path,
    seed: u64,
    steps: u64,
) -> Vec<(u64, HashMap<&'static str, Collection>)> {
    let mut states = Vec::new();
    for s in 0..steps {
        step(e, model, move |c, k| {
            let mut r = StdRng::seed_from_u64(seed ^ (s << 8) ^ k.as_bytes()[0] as u64);
            for _ in 0..r.gen_range(1..4) {
                change(c, &mut r, s);
            }
        });
        let len = std::fs::metadata(segment(dir)).unwrap().len();
        states.push((len, model.clone()));
    }
    states
}

#[test]
fn part_changes_cut_anywhere_come_back_as_after_some_step() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut model = HashMap::new();
    let (start, states, written) = {
        let e = Engine::open(c.clone()).unwrap();
        step(&e, &mut model, |c, _| fill(c));
        let start = (
            std::fs::metadata(segment(dir.path())).unwrap().len(),
            model.clone(),
        );
        let states = run(&e, &mut model, dir.path(), 11, 60);
        let written = e.tiered_info().part_changes_written;
        drop(e);
        (start, states, written)
    };
    assert!(written > 100, "part change records written: {written}");
    // A change costs about its size: 60 steps of 5 keys wrote far less
    // than their parts.
    let end = states.last().unwrap().0;
    assert!(
        end - start.0 < 60 * 5 * 2048,
        "60 steps wrote {} bytes",
        end - start.0
    );
    let mut rng = StdRng::seed_from_u64(3);
    let mut cuts: Vec<u64> = states.iter().step_by(7).map(|s| s.0).collect();
    cuts.extend((0..10).map(|_| rng.gen_range(start.0..end)));
    cuts.push(end);
    let all: Vec<&(u64, HashMap<&str, Collection>)> =
        std::iter::once(&start).chain(&states).collect();
    for cut in cuts {
        let copy = cut_copy(dir.path(), cut);
        let e = Engine::open(config(copy.path())).unwrap();
        let r = e.recovery_report();
        assert_eq!(
            r.corrupt_records + r.missing_segment_entries,
            0,
            "cut {cut}: {r:?}"
        );
        // The newest state wholly before the cut, or the one the cut is in.
        let i = all.iter().rposition(|s| s.0 <= cut).unwrap();
        for (k, _) in KEYS {
            let got = read(&e, k);
            let ok = all[i..(i + 2).min(all.len())]
                .iter()
                .any(|s| got.as_ref() == s.1.get(k));
            assert!(
                ok,
                "cut at {cut} (after step {i}): {k} came back as no state around the cut \
                 ({:?} elements; expected {})",
                got.map(|c| c.len()),
                all[i].1[k].len()
            );
        }
    }
}

#[test]
fn a_restart_from_part_changes_changed_again_recovers_again() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut model = HashMap::new();
    {
        let e = Engine::open(c.clone()).unwrap();
        step(&e, &mut model, |c, _| fill(c));
        run(&e, &mut model, dir.path(), 5, 30);
    }
    for round in 0..2u64 {
        let e = Engine::open(c.clone()).unwrap();
        for (k, _) in KEYS {
            same(&e, &model, k, &format!("round {round}"));
        }
        // Changed again after the restart: the chains start anew.
        for s in 0..20u64 {
            step(&e, &mut model, move |c, k| {
                let mut r = StdRng::seed_from_u64((77 + round) ^ (s << 8) ^ k.as_bytes()[0] as u64);
                change(c, &mut r, s);
            });
        }
    }
    let e = Engine::open(c).unwrap();
    for (k, _) in KEYS {
        same(&e, &model, k, "last");
    }
}

/// Asserts key `k` reads as the model has it (without printing both).
fn same(e: &Engine, model: &HashMap<&'static str, Collection>, k: &str, what: &str) {
    let got = read(e, k);
    assert!(
        got.as_ref() == model.get(k),
        "{what}: {k} differs from the model ({:?} elements, model {:?})",
        got.map(|c| c.len()),
        model.get(k).map(|c| c.len())
    );
}

/// Part chains while parts leave RAM (a small budget: demotion asks for
/// images), checkpoints are taken (they ask for images and name one record
/// per part) and the collector moves and frees records (small segments):
/// a crash at any of several points recovers the model.
#[test]
fn part_changes_survive_demotion_checkpoints_and_the_collector() {
    let dir = tempfile::tempdir().unwrap();
    let small = |c: &mut crate::EngineConfig| {
        c.maxmemory_ram = 256 << 10;
        c.segment_size = 256 << 10;
        c.write_chunk = 16 << 10;
        c.hz = 100;
        c.min_value_size = 16;
    };
    let mut c = config(dir.path());
    small(&mut c);
    let e = Engine::open(c).unwrap();
    e.set_gc_garbage_ratio(0);
    let mut model = HashMap::new();
    step(&e, &mut model, |c, _| fill(c));
    let mut crashes = 0;
    for s in 0..240u64 {
        step(&e, &mut model, move |c, k| {
            let mut r = StdRng::seed_from_u64(31 ^ (s << 8) ^ k.as_bytes()[0] as u64);
            for _ in 0..r.gen_range(1..4) {
                change(c, &mut r, s);
            }
        });
        if s % 60 == 20 {
            e.save().unwrap();
        }
        if s % 40 == 39 {
            let copy = live_copy(dir.path());
            let mut cc = config(copy.path());
            small(&mut cc);
            let r = Engine::open(cc).unwrap();
            for (k, _) in KEYS {
                same(&r, &model, k, &format!("crash after step {s}"));
            }
            crashes += 1;
        }
    }
    assert_eq!(crashes, 6);
    let t = e.tiered_info();
    assert!(
        t.part_changes_written > 200 && t.gc_bytes_relocated > 0,
        "part changes {}, collector moved {} bytes",
        t.part_changes_written,
        t.gc_bytes_relocated
    );
    // Parts left RAM as cold chains and came back with their steps
    // applied.
    assert!(t.part_chain_loads > 0, "no cold chain was read back");
}

//! Blind adds (`types::chunked::blind`): HSET / SADD of new elements into
//! a hash and a set larger than a small RAM budget, planned as
//! `Need::Adds`, add most elements to parts on flash without reading them;
//! every reply ("new or not") is the model's, every element reads back,
//! and crashes at several points (live copies of the files), before and
//! after a checkpoint that names spilled chains, recover the model.

use super::torn_changes::{config, live_copy, read};
use super::wait_until;
use crate::tests::block_on;
use crate::types::Collection;
use crate::{Engine, Need, ValueType};
use bytes::Bytes;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;

/// One add: HSET of `field` to a value of `len` bytes into "h", or SADD
/// of it into "s"; returns whether the element was new.
fn add(e: &Engine, set: bool, field: &str, len: usize) -> bool {
    let (key, t) = if set {
        ("s", ValueType::Set)
    } else {
        ("h", ValueType::Hash)
    };
    let k = Bytes::from(key);
    let f = Bytes::from(field.to_owned());
    let need = Need::Adds(vec![(f.clone(), if set { 0 } else { len })]);
    let k2 = k.clone();
    let r = e.with_keys_need(0, vec![k], need, move |v| {
        match v.coll_mut(&k2, t, true).unwrap().unwrap() {
            Collection::Hash(h) => h.insert(&f, &vec![b'v'; len]),
            Collection::Set(s) => s.insert(&f),
            _ => unreachable!(),
        }
    });
    block_on(r.wait()).unwrap()
}

/// HGET of `field` in "h" or SISMEMBER in "s", planned as `Need::Reads`:
/// its value's length, or None if absent.
fn lookup(e: &Engine, set: bool, field: &str) -> Option<usize> {
    let key = Bytes::from(if set { "s" } else { "h" });
    let f = Bytes::from(field.to_owned());
    let k2 = key.clone();
    let t = if set { ValueType::Set } else { ValueType::Hash };
    let r = e.with_keys_need(0, vec![key], Need::Reads(vec![f.clone()]), move |v| match v
        .coll(&k2, t)
        .unwrap()
    {
        Some(Collection::Hash(h)) => h.get(&f).map(|v| v.len()),
        Some(Collection::Set(s)) => s.contains(&f).then_some(0),
        _ => None,
    });
    block_on(r.wait()).unwrap()
}

/// Point reads of elements that are there and elements that are not, of
/// parts whose spilled chains only added other elements, answer from
/// the parts' images alone (`chunked::peek`).
fn lookups_answer_as_the_model(
    e: &Engine,
    hash: &HashMap<String, usize>,
    set: &std::collections::HashSet<String>,
    r: &mut StdRng,
) {
    for _ in 0..400 {
        let n = r.gen_range(0..(hash.len() + set.len()) * 2);
        let name = format!("element-{n:08}-{:-<40}", "");
        assert_eq!(
            lookup(e, false, &name),
            hash.get(&name).copied(),
            "HGET {name}"
        );
        let member = set.contains(&name).then_some(0);
        assert_eq!(lookup(e, true, &name), member, "SISMEMBER {name}");
    }
}

#[test]
fn blind_adds_answer_as_the_model_and_survive_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let small = |c: &mut crate::EngineConfig| {
        c.maxmemory_ram = 256 << 10;
        c.segment_size = 1 << 20;
        c.write_chunk = 16 << 10;
        c.hz = 100;
    };
    let mut c = config(dir.path());
    small(&mut c);
    let e = Engine::open(c).unwrap();
    let mut hash: HashMap<String, usize> = HashMap::new();
    let mut set: std::collections::HashSet<String> = Default::default();
    let mut r = StdRng::seed_from_u64(46);
    let mut crashes = 0;
    for round in 0..8 {
        for _ in 0..1500 {
            // Mostly new elements, some again (an update, or a member
            // already there: the part is read).
            let made = hash.len() + set.len();
            let n = if r.gen_bool(0.8) || made == 0 {
                made
            } else {
                r.gen_range(0..made)
            };
            let name = format!("element-{n:08}-{:-<40}", "");
            if r.gen_bool(0.5) {
                let len = r.gen_range(100..400);
                let new = add(&e, false, &name, len);
                assert_eq!(new, hash.insert(name.clone(), len).is_none(), "HSET {name}");
            } else {
                let new = add(&e, true, &name, 0);
                assert_eq!(new, set.insert(name.clone()), "SADD {name}");
            }
        }
        if round == 0 {
            wait_until("parts on flash", || e.tiered_info().chunks_in_flash > 4);
        }
        lookups_answer_as_the_model(&e, &hash, &set, &mut r);
        if round == 4 {
            // A checkpoint: it names the spilled chains' records, which
            // are before its position (`parts::chains`).
            e.save().unwrap();
        }
        if round % 3 == 2 {
            // A crash now: the acknowledged adds are on the device once
            // the journal synced.
            block_on(e.wait_durable(e.journal_ticket())).unwrap();
            let copy = live_copy(dir.path());
            let mut cc = config(copy.path());
            small(&mut cc);
            let r2 = Engine::open(cc).unwrap();
            let rep = r2.recovery_report();
            assert_eq!(rep.from_checkpoint, round > 4, "round {round}: {rep:?}");
            assert_eq!(
                rep.corrupt_records + rep.missing_segment_entries,
                0,
                "{rep:?}"
            );
            same(&r2, &hash, &set, &format!("crash after round {round}"));
            crashes += 1;
        }
    }
    assert_eq!(crashes, 2);
    same(&e, &hash, &set, "at the end");
    let t = e.tiered_info();
    assert!(
        t.part_blind_adds > 1000,
        "blind adds: {}",
        t.part_blind_adds
    );
    // Cold chains spilled their steps to their records, and parts were
    // read back with them.
    assert!(
        t.part_chain_spilled_reads > 0,
        "no spilled chain was read back: {t:?}"
    );
    assert!(t.part_peeks > 0, "no read answered from an image: {t:?}");
    drop(e);
    let mut c = config(dir.path());
    small(&mut c);
    let e = Engine::open(c).unwrap();
    same(&e, &hash, &set, "after a clean restart");
}

/// The hash and the set read back as the model has them.
fn same(
    e: &Engine,
    hash: &HashMap<String, usize>,
    set: &std::collections::HashSet<String>,
    what: &str,
) {
    let Some(Collection::Hash(h)) = read(e, "h") else {
        panic!("{what}: no hash");
    };
    assert_eq!(h.len(), hash.len(), "{what}: hash length");
    for (f, &len) in hash {
        assert_eq!(
            h.get(f.as_bytes()),
            Some(&vec![b'v'; len][..]),
            "{what}: field {f}"
        );
    }
    let Some(Collection::Set(s)) = read(e, "s") else {
        panic!("{what}: no set");
    };
    assert_eq!(s.len(), set.len(), "{what}: set length");
    assert!(
        set.iter().all(|m| s.contains(m.as_bytes())),
        "{what}: a member is missing"
    );
}

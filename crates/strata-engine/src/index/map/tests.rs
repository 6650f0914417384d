//! `KeyMap`'s tests: its invariants across random changes, defragmentation.

use super::*;
use crate::index::{Entry, Slot};
use std::collections::HashMap;

pub(super) fn entry(v: u64) -> Entry {
    Entry {
        slot: Slot::Cold(crate::base::FlashLoc {
            segment: 1,
            offset: v as u32,
            len: 8,
        }),
        expire_at_ms: 0,
        version: v,
        lru_secs: 0,
        lfu: 0,
        flags: 0,
        value_len: 1,
        client_flags: 0,
        vtype: 0,
    }
}

/// Defragmentation moves a boxed entry and the bytes of a hot string
/// held by it alone, and changes nothing else; a string someone else
/// holds stays where it is; a packed entry is not looked at.
#[test]
fn defrag_moves_boxes_and_unshared_strings_only() {
    let mut m = KeyMap::default();
    let value = bytes::Bytes::from(vec![7u8; 512]);
    let mut e = entry(3);
    e.slot = Slot::hot(value, None);
    m.insert(Key::from(&b"hot"[..]), e);
    m.insert(Key::from(&b"cold"[..]), entry(4));
    let hot = m.get_index_of(b"hot").unwrap();
    let cold = m.get_index_of(b"cold").unwrap();
    m.pack(cold);
    let where_ = |m: &KeyMap| {
        let e = m.boxed_at(hot).unwrap();
        let Slot::Hot(Hot {
            value: Value::Str(b),
            ..
        }) = &e.slot
        else {
            panic!()
        };
        (
            e as *const Entry as usize,
            b.as_ptr() as usize,
            b.clone(),
            e.version,
        )
    };
    let (box0, str0, _, _) = where_(&m);
    assert_eq!(m.defrag_at(hot, |_| true), Some(true));
    let (box1, str1, b1, v1) = where_(&m);
    assert_ne!(box0, box1);
    assert_ne!(str0, str1);
    assert_eq!((&b1[..], v1), (&[7u8; 512][..], 3));
    // A string referenced elsewhere stays; its box still moves.
    let held = b1.clone();
    assert_eq!(m.defrag_at(hot, |_| true), Some(true));
    let (box2, str2, ..) = where_(&m);
    assert_ne!(box1, box2);
    assert_eq!(str1, str2);
    drop(held);
    assert_eq!(m.defrag_at(hot, |_| false), Some(false));
    assert_eq!(m.defrag_at(cold, |_| true), None);
    assert_eq!(m.at(cold).version, 4);
}

/// Every position is found by its key, and only keys present are found
/// (invariant 1), across random inserts, replacements and removals.
#[test]
fn positions_follow_the_keys_through_random_changes() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut m = KeyMap::default();
    let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
    for step in 0..60_000u64 {
        // Keys of 2 to 5 bytes, 16 (the longest held in the bucket), 17
        // and 30 (on the heap).
        let n = rng.gen_range(0..5_000u32);
        let k = match n % 4 {
            0 => format!("k{n}"),
            1 => format!("k{n:015}"),
            2 => format!("k{n:016}"),
            _ => format!("k{n:029}"),
        }
        .into_bytes();
        match rng.gen_range(0..12) {
            0..=5 => {
                // Half of them packed (a record of exactly header +
                // key + value), half boxed.
                let mut e = entry(step);
                if step % 2 == 0 {
                    let len = crate::flash::format::RECORD_HEADER_LEN + k.len() + 1;
                    e.slot = Slot::Cold(crate::base::FlashLoc {
                        segment: 1,
                        offset: step as u32,
                        len: len as u32,
                    });
                }
                let old = m.insert(Key::from(&k[..]), e);
                assert_eq!(old.map(|e| e.version), model.insert(k, step));
            }
            10 if !m.is_empty() => {
                m.pack(rng.gen_range(0..m.len()));
            }
            11 if !m.is_empty() => {
                let i = rng.gen_range(0..m.len());
                m.mark_read(i, 1, None);
            }
            6..=7 => {
                let old = m.swap_remove(&k);
                assert_eq!(old.map(|e| e.version), model.remove(&k));
            }
            8 => {
                if !m.is_empty() {
                    let i = rng.gen_range(0..m.len());
                    let (key, e) = m.swap_remove_index(i).unwrap();
                    assert_eq!(model.remove(&key[..]), Some(e.version));
                }
            }
            _ => {
                if step % 1000 == 0 {
                    let keep = rng.gen_range(0..3u64);
                    m.retain(|_, e| e.version % 3 != keep);
                    model.retain(|_, v| *v % 3 != keep);
                }
            }
        }
        assert_eq!(m.len(), model.len());
        if step % 5_000 == 0 {
            // Invariant 4: the bits say which buckets are boxed.
            let boxed = (0..m.len()).filter(|&i| m.boxed_at(i).is_some()).count();
            assert!(
                m.len() < 100 || (boxed > 0 && boxed < m.len()),
                "{boxed} of {}",
                m.len()
            );
            assert_eq!(boxed, m.boxed());
            for i in 0..m.len() {
                assert_eq!(m.full.get(i), m.boxed_at(i).is_some(), "position {i}");
            }
            assert_eq!(m.full.next(m.len(), usize::MAX), None);
            for (i, (k, e)) in m.iter().enumerate() {
                assert_eq!(m.get_index_of(k), Some(i));
                assert_eq!(model.get(k), Some(&e.version));
            }
            assert!(m.get(b"absent").is_none());
        }
    }
    assert!(m.allocated_bytes() >= m.len() as u64 * KeyMap::packed_bytes_per_key());
}

/// Past `NARROW_MAX` keys the table widens (table invariant 1): every key
/// is still found at its position, through removals and a clone, and the
/// table stays wide when the map shrinks again.
#[test]
fn the_table_widens_past_three_byte_positions() {
    let n = super::table::NARROW_MAX + 300;
    let mut m = KeyMap::default();
    let key = |i: usize| format!("key:{i}").into_bytes();
    for i in 0..n {
        if i == super::table::NARROW_MAX - 5 {
            assert!(m.table.is_narrow());
            // A reservation across the limit widens first.
            m.reserve_exact(10);
            assert!(!m.table.is_narrow());
        }
        m.insert(Key::from(&key(i)[..]), entry(i as u64));
    }
    assert!(!m.table.is_narrow());
    for i in (0..n).step_by(3) {
        assert!(m.swap_remove(&key(i)).is_some());
    }
    let c = m.clone();
    for i in 0..n {
        let want = i % 3 != 0;
        for map in [&m, &c] {
            match map.get_index_of(&key(i)) {
                Some(p) => {
                    assert!(want, "key {i} removed but found");
                    assert_eq!(map.at(p).version, i as u64);
                }
                None => assert!(!want, "key {i} lost"),
            }
        }
    }
    let mut fresh = KeyMap::default();
    for i in 0..super::table::NARROW_MAX + 1 {
        fresh.insert(Key::from(&key(i)[..]), entry(i as u64));
    }
    assert!(
        !fresh.table.is_narrow(),
        "the first position past the limit widens"
    );
    assert_eq!(
        fresh.get_index_of(&key(super::table::NARROW_MAX)),
        Some(super::table::NARROW_MAX)
    );
}

/// A map emptied by deletion gives its table's room back, and every key
/// left is still found at its position; a map in use is not shrunk.
#[test]
fn a_sparse_map_shrinks_its_table() {
    let mut m = KeyMap::default();
    let key = |i: usize| format!("key:{i}").into_bytes();
    for i in 0..100_000 {
        m.insert(Key::from(&key(i)[..]), entry(i as u64));
    }
    assert!(!m.shrink_if_sparse(), "a full map was shrunk");
    let big = m.table.allocation_size();
    for i in 100..100_000 {
        assert!(m.swap_remove(&key(i)).is_some());
    }
    assert!(m.shrink_if_sparse());
    assert!(
        m.table.allocation_size() * 100 < big,
        "{} of {big} bytes kept",
        m.table.allocation_size()
    );
    // The buckets' segments and bits too: 100 keys' buckets and table in
    // well under 16 KiB (their boxed entries apart).
    let index = m.allocated_bytes() - m.boxed_bytes();
    assert!(index < 16 << 10, "{index}");
    assert!(!m.shrink_if_sparse(), "shrunk twice");
    for i in 0..100 {
        assert_eq!(m.get(&key(i)).unwrap().version, i as u64);
    }
    for i in 100..1000 {
        m.insert(Key::from(&key(i)[..]), entry(i as u64));
    }
    for i in 0..1000 {
        assert_eq!(m.get(&key(i)).unwrap().version, i as u64);
    }
    assert!(m.get(b"key:5000").is_none());
}

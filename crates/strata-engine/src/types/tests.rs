use super::*;
use proptest::prelude::*;

fn build(t: u8, elems: &[(Vec<u8>, Vec<u8>, f64)]) -> Option<Collection> {
    let vt = ValueType::from_u8(1 + t % 4)?;
    let mut c = Collection::new(vt)?;
    for (a, b, s) in elems {
        match &mut c {
            Collection::Hash(h) => {
                h.insert(a, b);
            }
            Collection::List(l) => l.push_back(a.clone().into()),
            Collection::Set(x) => {
                x.insert(a);
            }
            Collection::ZSet(z) => {
                z.insert(a, *s);
            }
            // Not built here: stream/tests.rs and bigstr/tests.rs cover them.
            Collection::Stream(_) | Collection::Str(_) => {}
        }
    }
    c.update_encoding(&EncodingLimits::default());
    Some(c)
}

proptest! {
    /// Invariants 2 and 3: the tracked length is the encoded length, and
    /// decoding gives back the same collection.
    #[test]
    fn packed_encoding_round_trips(
        t in 0u8..4,
        elems in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..80), proptest::collection::vec(any::<u8>(), 0..80), -1e6f64..1e6),
            1..200,
        ),
    ) {
        let c = build(t, &elems).unwrap();
        let mut out = Vec::new();
        c.encode(&mut out);
        prop_assert_eq!(out.len(), c.encoded_len());
        let d = Collection::decode(c.vtype(), &out).unwrap();
        prop_assert_eq!(&d, &c);
        prop_assert_eq!(d.encoding_name(), c.encoding_name());
    }

    /// Invariant 3: any bytes decode to a collection or an error, never a
    /// panic.
    #[test]
    fn any_bytes_never_panic(t in 1u8..6, b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = Collection::decode(ValueType::from_u8(t).unwrap(), &b);
    }
}

#[test]
fn mutations_keep_the_encoded_length_exact() {
    let mut h = Collection::new(ValueType::Hash).unwrap();
    if let Collection::Hash(h) = &mut h {
        h.insert(b"f", b"v1");
        h.insert(b"f", b"value2");
        h.insert(b"g", b"");
        h.remove(b"f");
    }
    assert_eq!(h.to_bytes().len(), h.encoded_len());
    let mut l = List::default();
    for i in 0..10u8 {
        l.push_back(vec![i; i as usize].into());
    }
    l.keep_range(2, 6);
    l.set(0, b"xyz");
    l.retain(|e| e.len() != 4);
    let c = Collection::List(l);
    assert_eq!(c.to_bytes().len(), c.encoded_len());
    assert_eq!(c.len(), 4);
}

#[test]
fn encodings_switch_one_way_at_redis_thresholds() {
    let lim = EncodingLimits::default();
    let mut s = Collection::new(ValueType::Set).unwrap();
    if let Collection::Set(x) = &mut s {
        x.insert(b"1");
        x.insert(b"-20");
    }
    s.update_encoding(&lim);
    assert_eq!(s.encoding_name(), "intset");
    if let Collection::Set(x) = &mut s {
        x.insert(b"a");
    }
    s.update_encoding(&lim);
    assert_eq!(s.encoding_name(), "hashtable");
    if let Collection::Set(x) = &mut s {
        x.remove(b"a");
    }
    s.update_encoding(&lim);
    assert_eq!(s.encoding_name(), "hashtable", "Redis never converts back");
    assert!(!is_int_member(b"01") && !is_int_member(b"+1") && !is_int_member(b"-0"));
    assert!(is_int_member(b"-9223372036854775808"));
}

#[test]
fn zset_orders_by_score_then_member_and_ranks() {
    let mut z = ZSet::default();
    z.insert(b"b", 1.0);
    z.insert(b"a", 1.0);
    z.insert(b"c", -0.0);
    z.insert(b"d", 0.0);
    let order: Vec<_> = z.iter().map(|(m, _)| m.to_vec()).collect();
    assert_eq!(
        order,
        vec![b"c".to_vec(), b"d".to_vec(), b"a".to_vec(), b"b".to_vec()]
    );
    assert_eq!(z.rank(b"a"), Some(2));
    assert_eq!(z.insert(b"a", 5.0), Some(1.0));
    assert_eq!(z.rank(b"a"), Some(3));
    let r: Vec<_> = z
        .range_by_score(
            std::ops::Bound::Excluded(0.0),
            std::ops::Bound::Included(5.0),
        )
        .map(|(m, _)| m.to_vec())
        .collect();
    assert_eq!(r, vec![b"b".to_vec(), b"a".to_vec()]);
    assert_eq!(z.pop(false).map(|(m, _)| m.to_vec()), Some(b"c".to_vec()));
}

/// The packed small form and the tree form answer alike: random changes
/// and reads against a model, through the conversion at 128 members.
#[test]
fn zset_forms_agree_with_a_model_through_conversion() {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use std::collections::BTreeMap;
    use std::ops::Bound;
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut z = ZSet::default();
        // member -> score
        let mut m: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let span = if seed % 2 == 0 { 100 } else { 400 };
        for _ in 0..1500 {
            let k = format!("m{}", rng.gen_range(0..span)).into_bytes();
            let s = [-0.0, 0.0, 1.5, -3.0, 7.0][rng.gen_range(0..5)] + rng.gen_range(0..3) as f64;
            match rng.gen_range(0..10) {
                0..=5 => assert_eq!(z.insert(&k, s), m.insert(k.clone(), s)),
                6..=7 => assert_eq!(z.remove(&k), m.remove(&k).is_some()),
                8 => {
                    let max = rng.gen_bool(0.5);
                    let popped = z.pop(max);
                    let want = {
                        let mut v: Vec<_> =
                            m.iter().map(|(k, s)| (ScoreKey(*s), k.clone())).collect();
                        v.sort();
                        if max {
                            v.pop()
                        } else if v.is_empty() {
                            None
                        } else {
                            Some(v.remove(0))
                        }
                    };
                    assert_eq!(
                        popped.as_ref().map(|(k, _)| k.to_vec()),
                        want.as_ref().map(|w| w.1.clone())
                    );
                    if let Some((k, _)) = popped {
                        m.remove(&*k);
                    }
                }
                _ => {}
            }
            assert_eq!(z.len(), m.len());
            let mut want: Vec<_> = m.iter().map(|(k, s)| (ScoreKey(*s), k.clone())).collect();
            want.sort();
            let got: Vec<_> = z.iter().map(|(k, s)| (ScoreKey(s), k.to_vec())).collect();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(
                    (g.0 .0.to_bits(), &g.1),
                    (w.0 .0.to_bits(), &w.1),
                    "seed {seed}"
                );
            }
            assert_eq!(z.score(&k), m.get(&k).copied());
            let rank = want.iter().position(|(_, w)| *w == k);
            assert_eq!(z.rank(&k), rank);
            if let Some(r) = rank {
                assert_eq!(z.get_rank(r).map(|(k, _)| k.to_vec()), Some(k.clone()));
            }
            let (lo, hi) = (Bound::Excluded(0.0), Bound::Included(3.0));
            let in_range: Vec<_> = z
                .range_by_score(lo, hi)
                .rev()
                .map(|(k, _)| k.to_vec())
                .collect();
            let want_range: Vec<_> = want
                .iter()
                .rev()
                .filter(|(s, _)| s.0 > 0.0 && s.0 <= 3.0)
                .map(|(_, k)| k.clone())
                .collect();
            assert_eq!(in_range, want_range, "seed {seed}");
        }
        let body: usize = m.keys().map(|k| 8 + packed_len(k.len())).sum();
        assert_eq!(z.body_len(), body);
    }
}

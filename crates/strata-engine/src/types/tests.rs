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
    fn any_bytes_never_panic(t in 1u8..5, b in proptest::collection::vec(any::<u8>(), 0..300)) {
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

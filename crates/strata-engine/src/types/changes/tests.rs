//! Change records' ops applied to their images (invariant 3), over random
//! changes of every type that records.

use super::*;
use crate::base::ValueType;
use crate::types::{EncodingLimits, Hash, List, Set, ZSet};

use rand::{rngs::StdRng, Rng as _, SeedableRng};

struct Rng(StdRng);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.gen_range(0..n.max(1))
    }
}

/// One random change of `c`, through the methods commands call.
fn mutate(c: &mut Collection, r: &mut Rng) {
    let k = format!("e{}", r.below(40)).into_bytes();
    let v = vec![b'a' + r.below(26) as u8; r.below(90) as usize];
    match c {
        Collection::Hash(h) => match r.below(4) {
            0 => {
                h.remove(&k);
            }
            1 if r.below(8) == 0 => h.big = true,
            _ => {
                h.insert(&k, &v);
            }
        },
        Collection::Set(s) => match r.below(4) {
            0 => {
                s.remove(&k);
            }
            1 if !s.is_empty() => {
                let i = r.below(s.len() as u64) as usize;
                s.remove_index(i);
            }
            _ => {
                s.insert(&k);
            }
        },
        Collection::ZSet(z) => match r.below(5) {
            0 => {
                z.remove(&k);
            }
            1 => {
                z.pop(r.below(2) == 0);
            }
            _ => {
                z.insert(&k, (r.below(1000) as f64) / 7.0);
            }
        },
        Collection::List(l) => {
            let n = l.len();
            match r.below(9) {
                0 => l.push_front(v.into()),
                1 => l.push_back(v.into()),
                2 => {
                    l.pop_front();
                }
                3 => {
                    l.pop_back();
                }
                4 if n > 0 => {
                    l.set(r.below(n as u64) as usize, &v);
                }
                5 => l.insert(r.below(n as u64 + 1) as usize, &v),
                6 if n > 0 => {
                    let (a, b) = (r.below(n as u64) as usize, r.below(n as u64 + 2) as usize);
                    l.keep_range(a, b);
                }
                7 => {
                    let drop = r.below(3) as usize;
                    l.retain(|e| e.len() % 3 != drop);
                }
                _ => l.push_back(k.into()),
            }
        }
        _ => unreachable!(),
    }
    c.update_encoding(&EncodingLimits::default());
}

fn filled(t: ValueType, r: &mut Rng) -> Collection {
    let mut c = match t {
        ValueType::Hash => Collection::Hash(Hash::default()),
        ValueType::Set => Collection::Set(Set::default()),
        ValueType::ZSet => Collection::ZSet(ZSet::default()),
        _ => Collection::List(List::default()),
    };
    for _ in 0..30 {
        mutate(&mut c, r);
    }
    c
}

/// Invariant 3 over random changes of every type that records: the
/// ops applied to the decoded image give the value byte for byte
/// (order and encoding included), through several records in a row.
#[test]
fn changes_applied_to_the_image_give_the_value() {
    let mut r = Rng(StdRng::seed_from_u64(0x9E37_79B9_7F4A_7C15));
    for t in [
        ValueType::Hash,
        ValueType::Set,
        ValueType::ZSet,
        ValueType::List,
    ] {
        for _ in 0..200 {
            let mut c = filled(t, &mut r);
            if c.is_empty() {
                continue;
            }
            let mut image = Collection::decode(t, &c.to_bytes()).unwrap();
            c.recorder_mut().unwrap().start(Chain::default());
            for _record in 0..4 {
                for _ in 0..r.below(12) {
                    mutate(&mut c, &mut r);
                }
                let ops = c.change_log_mut().unwrap().take_ops();
                image.apply_change(c.encoding_bits(), &ops).unwrap();
                assert_eq!(image.to_bytes(), c.to_bytes(), "{t:?}");
            }
        }
    }
}

/// A stream records by spans: the spans between its last record's
/// bytes and its encoding now, applied to the decoded image, give the
/// stream byte for byte (entries added, trimmed, deleted; groups and
/// their pending entries changed), several records in a row.
#[test]
fn a_streams_spans_applied_to_its_image_give_the_stream() {
    use crate::types::stream::{StreamId, Trim};
    let mut r = Rng(StdRng::seed_from_u64(7));
    for _ in 0..50 {
        let mut c = Collection::Stream(Box::default());
        let mut ms = 1;
        let mut change = |c: &mut Collection, r: &mut Rng| {
            let Collection::Stream(x) = c else {
                unreachable!()
            };
            ms += 1 + r.below(3);
            match r.below(6) {
                0 => {
                    x.trim(Trim::MaxLen(r.below(40)), false, 0);
                }
                1 => {
                    x.delete(&[StreamId::new(ms - 1 - r.below(ms), 0)]);
                }
                2 => {
                    x.create_group(format!("g{}", r.below(3)).as_bytes(), StreamId::MIN, 0);
                }
                3 => {
                    if let Some(g) = x.group_mut(b"g1") {
                        g.create_consumer(b"c", 1);
                        g.deliver(StreamId::new(ms - 1, 0), b"c", ms);
                    }
                }
                _ => {
                    let v = vec![b'a' + r.below(26) as u8; r.below(80) as usize];
                    x.append(StreamId::new(ms, 0), &[b"f", &v], Default::default());
                }
            }
        };
        for _ in 0..30 {
            change(&mut c, &mut r);
        }
        let mut base = c.to_bytes();
        let mut image = Collection::decode(ValueType::Stream, &base).unwrap();
        c.start_recording(Chain::default(), Collection::to_bytes);
        assert!(c.change_log().unwrap().base.is_some());
        for _record in 0..4 {
            for _ in 0..r.below(6) {
                change(&mut c, &mut r);
            }
            let now = c.to_bytes();
            let spans = crate::flash::format::part_change::diff(&base, &now).unwrap();
            let mut ops = Vec::new();
            Op::Spans(&spans).encode(&mut ops);
            image.apply_change(c.encoding_bits(), &ops).unwrap();
            assert_eq!(image.to_bytes(), now);
            base = now;
        }
    }
}

#[test]
fn a_clone_does_not_record_and_ops_that_do_not_fit_are_malformed() {
    let mut h = Collection::Hash(Hash::default());
    h.recorder_mut().unwrap().start(Chain::default());
    let Collection::Hash(x) = &mut h else {
        unreachable!()
    };
    x.insert(b"f", b"v");
    assert!(h.clone().change_log().is_none());
    let mut ops = Vec::new();
    Op::HDel(b"nope", false).encode(&mut ops);
    let mut img = Collection::Hash(Hash::default());
    assert_eq!(img.apply_change(0, &ops), Err(Malformed));
    let mut ops = Vec::new();
    Op::SAdd(b"m").encode(&mut ops);
    assert_eq!(img.apply_change(0, &ops), Err(Malformed));
    assert_eq!(img.apply_change(0, &[99]), Err(Malformed));
}

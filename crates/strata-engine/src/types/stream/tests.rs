use super::*;
use crate::types::Collection;
use rand::{Rng, SeedableRng};

fn id(ms: u64, seq: u64) -> StreamId {
    StreamId::new(ms, seq)
}

/// The packed form is exactly `encoded_len` long and decodes to the same
/// stream (types invariants 2 and 3).
fn check(s: &Stream) {
    let c = Collection::Stream(Box::new(s.clone()));
    let b = c.to_bytes();
    assert_eq!(b.len(), c.encoded_len());
    let d = Collection::decode(crate::types::ValueType::Stream, &b).expect("decodes");
    assert_eq!(d, c);
}

#[test]
fn random_operations_keep_the_encoding_exact() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let lim = NodeLimits {
        max_bytes: 300,
        max_entries: 5,
    };
    let mut s = Stream::default();
    let mut next = 1u64;
    for step in 0..3000 {
        match rng.gen_range(0..10) {
            0..=4 => {
                let v = vec![b'x'; rng.gen_range(0..40)];
                let f: &[u8] = if rng.gen_bool(0.5) { b"f" } else { b"g" };
                s.append(id(next, 0), &[f, &v, b"n", b"12"], lim);
                next += rng.gen_range(1..3);
            }
            5 => {
                let k = rng.gen_range(0..next);
                s.delete(&[id(k, 0)]);
            }
            6 => {
                let n = s.len().saturating_sub(rng.gen_range(0..3));
                s.trim(Trim::MaxLen(n), rng.gen_bool(0.5), 0);
            }
            7 => {
                s.trim(
                    Trim::MinId(id(next.saturating_sub(40), 0)),
                    rng.gen_bool(0.5),
                    0,
                );
            }
            8 => {
                let g = [b'a' + rng.gen_range(0..3)];
                s.create_group(&g, id(rng.gen_range(0..next), 0), -1);
                if let Some(gr) = s.group_mut(&g) {
                    let c = [b'c' + rng.gen_range(0..3)];
                    gr.get_or_create_consumer(&c, step);
                    gr.deliver(id(rng.gen_range(0..next), 0), &c, step);
                }
            }
            _ => {
                let g = [b'a' + rng.gen_range(0..3)];
                if let Some(gr) = s.group_mut(&g) {
                    gr.ack(id(rng.gen_range(0..next), 0));
                    if rng.gen_bool(0.2) {
                        gr.delete_consumer(b"c");
                    }
                }
            }
        }
        let live = s.range(StreamId::MIN, StreamId::MAX, false).count() as u64;
        assert_eq!(live, s.len());
        if step % 50 == 0 {
            check(&s);
        }
    }
    check(&s);
}

#[test]
fn nodes_cut_where_redis_cuts_them() {
    let mut s = Stream::default();
    for i in 1..=250 {
        s.append(id(i, 0), &[b"a", b"1"], NodeLimits::default());
    }
    // 100 entries a node.
    assert_eq!(s.node_count(), 3);
    // MAXLEN ~ 120 drops one whole node of 100.
    assert_eq!(s.trim(Trim::MaxLen(120), true, 10_000), 100);
    assert_eq!(s.len(), 150);
    assert_eq!(s.first_id, id(101, 0));
}

#[test]
fn deleting_a_nodes_last_entry_drops_the_node() {
    let mut s = Stream::default();
    let lim = NodeLimits {
        max_bytes: 4096,
        max_entries: 2,
    };
    for i in 1..=4 {
        s.append(id(i, 0), &[b"a", b"1"], lim);
    }
    assert_eq!(s.delete(&[id(1, 0)]), 1);
    assert_eq!(s.node_count(), 2);
    assert_eq!(s.delete(&[id(2, 0)]), 1);
    assert_eq!(s.node_count(), 1);
    assert_eq!(s.first_id, id(3, 0));
    assert_eq!(s.max_deleted, id(2, 0));
}

#[test]
fn malformed_input_is_refused() {
    let mut s = Stream::default();
    s.append(id(1, 0), &[b"a", b"1"], NodeLimits::default());
    let b = Collection::Stream(Box::new(s)).to_bytes();
    for cut in 0..b.len() {
        assert!(Collection::decode(crate::types::ValueType::Stream, &b[..cut]).is_err());
    }
}

/// Changed bytes of a real encoding (nodes with tombstones, groups with
/// pending entries) decode to an error or to a stream whose encoding is
/// exact and stable; never a panic (types invariant 3).
#[test]
fn changed_bytes_never_panic_and_decode_consistently() {
    let mut s = Stream::default();
    let lim = NodeLimits {
        max_bytes: 200,
        max_entries: 3,
    };
    for i in 1..=12 {
        s.append(id(i, 0), &[b"f", b"v", b"n", b"7"], lim);
    }
    s.delete(&[id(2, 0), id(5, 0)]);
    s.create_group(b"g", id(4, 0), 4);
    if let Some(g) = s.group_mut(b"g") {
        g.create_consumer(b"c", 9);
        g.deliver(id(3, 0), b"c", 10);
        g.deliver(id(4, 0), b"c", 11);
    }
    let b = Collection::Stream(Box::new(s)).to_bytes().to_vec();
    for i in 0..b.len() {
        for x in [0u8, 1, 2, 0x7f, 0xff] {
            let mut c = b.clone();
            c[i] = x;
            if let Ok(d) = Collection::decode(crate::types::ValueType::Stream, &c) {
                let again = d.to_bytes();
                assert_eq!(again.len(), d.encoded_len());
                assert_eq!(
                    Collection::decode(crate::types::ValueType::Stream, &again).ok(),
                    Some(d)
                );
            }
        }
    }
}

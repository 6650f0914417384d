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

/// A chunked stream whose parts go to "flash" and back at random runs the
/// same operations as a stream in RAM, loading only the parts its command
/// names (`need_parts`): every reply and the final stream agree. This is
/// what lets a command read a cold stream part by part.
#[test]
fn a_chunked_stream_needs_only_the_parts_it_plans() {
    let seeds: u64 = std::env::var("STREAM_PLAN_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    for seed in 0..seeds {
        needs_only_planned_parts(seed, 3);
        needs_only_planned_parts(seed, 40);
    }
}

/// One run of `a_chunked_stream_needs_only_the_parts_it_plans`; MAXLEN
/// trims cut up to `cut` entries.
fn needs_only_planned_parts(seed: u64, cut: u64) {
    use crate::index::FlashLoc;
    use crate::types::chunked::Dir;
    use std::collections::HashMap;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let lim = NodeLimits {
        max_bytes: 400,
        max_entries: 6,
    };
    let mut model = Stream::default();
    let mut s = Stream::default();
    s.make_chunked(1);
    let mut flash: HashMap<FlashLoc, Vec<u8>> = HashMap::new();
    let mut next_loc = 0u32;
    let mut next = 1u64;
    for step in 0..6000u64 {
        let op = rng.gen_range(0..20);
        let trim = |rng: &mut rand::rngs::StdRng, s: &Stream| {
            let how = if rng.gen_bool(0.5) {
                Trim::MaxLen(s.len().saturating_sub(rng.gen_range(0..cut)))
            } else {
                Trim::MinId(id(s.first_id.ms + rng.gen_range(0..12), 0))
            };
            let limit = if rng.gen_bool(0.2) {
                rng.gen_range(1..40)
            } else {
                0
            };
            (how, rng.gen_bool(0.5), limit)
        };
        // (Whether a trim is approximate does not change its plan: kept
        // beside it.)
        let mut approx = false;
        let need = match op {
            0..=9 => StreamNeed::Append(rng.gen_bool(0.1).then(|| {
                let (h, a, l) = trim(&mut rng, &s);
                approx = a;
                (h, l)
            })),
            10 => {
                let (h, a, l) = trim(&mut rng, &s);
                approx = a;
                StreamNeed::Trim(h, l)
            }
            11..=12 => {
                let mut ids: Vec<StreamId> = (0..rng.gen_range(1..4))
                    .map(|_| id(rng.gen_range(0..next), 0))
                    .collect();
                if rng.gen_bool(0.5) {
                    ids.push(s.first_id);
                }
                StreamNeed::Ids { ids, deletes: true }
            }
            13..=16 => {
                let a = id(rng.gen_range(0..next), 0);
                let b = id(rng.gen_range(a.ms..next + 2), 0);
                StreamNeed::Range {
                    start: a,
                    end: if rng.gen_bool(0.2) { StreamId::MAX } else { b },
                    rev: rng.gen_bool(0.5),
                    count: rng.gen_range(1..30),
                }
            }
            17 => StreamNeed::Ids {
                ids: vec![id(rng.gen_range(0..next), 0)],
                deletes: false,
            },
            _ => StreamNeed::Edges,
        };
        // Load what the plan names, planning again (as the engine does)
        // until it names no part on flash; then run on both.
        loop {
            let cold: Vec<usize> = s
                .need_parts(std::slice::from_ref(&need))
                .into_iter()
                .filter(|&i| !s.part(i).resident)
                .collect();
            if cold.is_empty() {
                break;
            }
            for i in cold {
                let p = s.part(i);
                let loc = p.loc.unwrap();
                assert!(s
                    .install(i, loc, &flash[&loc], (p.low, STREAM_DEPTH))
                    .unwrap());
            }
        }
        let what = format!("step {step}: {need:?}");
        match need {
            StreamNeed::Append(t) => {
                let v = vec![b'v'; rng.gen_range(0..60)];
                let pairs: [&[u8]; 4] = [b"f", &v, b"n", b"1"];
                model.append(id(next, 0), &pairs, lim);
                s.append(id(next, 0), &pairs, lim);
                next += rng.gen_range(1..3);
                if let Some((h, l)) = t {
                    assert_eq!(s.trim(h, approx, l), model.trim(h, approx, l), "{what}");
                }
            }
            StreamNeed::Trim(h, l) => {
                assert_eq!(s.trim(h, approx, l), model.trim(h, approx, l), "{what}")
            }
            StreamNeed::Ids { ids, deletes: true } => {
                assert_eq!(s.delete(&ids), model.delete(&ids), "{what}")
            }
            StreamNeed::Ids { ids, .. } => assert_eq!(
                s.get(ids[0]).map(|e| e.id),
                model.get(ids[0]).map(|e| e.id),
                "{what}"
            ),
            StreamNeed::Range {
                start,
                end,
                rev,
                count,
            } => {
                let a: Vec<StreamId> = s
                    .range(start, end, rev)
                    .take(count as usize)
                    .map(|e| e.id)
                    .collect();
                let b: Vec<StreamId> = model
                    .range(start, end, rev)
                    .take(count as usize)
                    .map(|e| e.id)
                    .collect();
                assert_eq!(a, b, "{what}");
            }
            _ => {
                assert_eq!(s.last_valid_id(), model.last_valid_id(), "{what}")
            }
        }
        assert_eq!(
            (s.len(), s.first_id, s.max_deleted, s.node_count()),
            (
                model.len(),
                model.first_id,
                model.max_deleted,
                model.node_count()
            ),
            "{what}"
        );
        assert_eq!(s.check(), Ok(()), "{what}");
        // Write the changed parts, and let some clean ones leave RAM.
        for i in s.dirty_parts() {
            let mut body = Vec::new();
            s.encode_part(i, &mut body);
            // The body measures to the part's bound, entries and bytes.
            let p = s.part(i);
            let (bound, live, bytes) = measure_stream_part(&body).unwrap();
            assert_eq!((live, bytes as usize + BOUND_LEN), (p.count, body.len()));
            assert_eq!(&bound[..], s.part_first(i).unwrap());
            next_loc += 1;
            let loc = FlashLoc {
                segment: next_loc,
                offset: 0,
                len: body.len() as u32,
            };
            flash.insert(loc, body);
            let ver = s.part(i).ver;
            s.published(i, ver, loc, step);
        }
        s.take_dropped_refs();
        for i in 0..s.part_count() {
            if rng.gen_bool(0.3) {
                s.evict(i);
            }
        }
    }
    for i in 0..s.part_count() {
        let p = s.part(i);
        if !p.resident {
            let loc = p.loc.unwrap();
            s.install(i, loc, &flash[&loc], (p.low, STREAM_DEPTH))
                .unwrap();
        }
    }
    if cut < 10 {
        assert!(
            s.part_count() > 3,
            "the stream was chunked into parts: {} parts",
            s.part_count()
        );
    }
    assert!(s == model);
}

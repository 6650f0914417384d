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
    use crate::base::FlashLoc;
    use crate::types::parts::Dir;
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

/// A chunked stream's pending lists in parts (`pel`): random deliveries,
/// claims, acks, consumer and group deletions against a stream that is not
/// chunked; after each step the parts cover the PEL exactly (`check`), each
/// changed part is written, and the last write of each, under the head's
/// fields, rebuilds the same groups (what recovery does). A change writes
/// the parts it touched, never the whole list.
#[test]
fn pending_lists_in_parts_rebuild_from_their_records() {
    use crate::base::FlashLoc;
    use crate::types::parts::Dir;
    use std::collections::HashMap;
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut model = Stream::default();
    let mut s = Stream::default();
    s.make_chunked(1);
    // Newest record of each name: (seq, loc), and the bodies.
    let mut newest: HashMap<u64, (u64, FlashLoc)> = HashMap::new();
    let mut flash: HashMap<FlashLoc, Vec<u8>> = HashMap::new();
    let mut next_loc = 0u32;
    let mut next = 1u64;
    let mut most_written = 0;
    for step in 1..8000u64 {
        let g = [b'a' + rng.gen_range(0..3)];
        let c = [b'p' + rng.gen_range(0..4)];
        for x in [&mut model, &mut s] {
            x.will_change();
        }
        match rng.gen_range(0..100) {
            0..=1 => {
                s.create_group(&g, StreamId::MIN, 0);
                model.create_group(&g, StreamId::MIN, 0);
            }
            2 if step % 7 == 0 => {
                s.destroy_group(&g);
                model.destroy_group(&g);
            }
            3..=54 => {
                // Deliveries mostly in id order, some far back.
                let at = if rng.gen_bool(0.9) {
                    next += 1;
                    next
                } else {
                    rng.gen_range(1..=next)
                };
                for x in [&mut model, &mut s] {
                    if let Some(gr) = x.group_mut(&g) {
                        gr.get_or_create_consumer(&c, step);
                        gr.deliver(id(at, 0), &c, step);
                    }
                }
            }
            55..=74 => {
                // Acks mostly of old ids.
                let hi = if rng.gen_bool(0.7) {
                    next / 2 + 1
                } else {
                    next + 1
                };
                let k = rng.gen_range(0..hi);
                for x in [&mut model, &mut s] {
                    if let Some(gr) = x.group_mut(&g) {
                        gr.ack(id(k, 0));
                    }
                }
            }
            75..=95 => {
                let k = rng.gen_range(0..next + 1);
                for x in [&mut model, &mut s] {
                    if let Some(gr) = x.group_mut(&g) {
                        if gr.consumer(&c).is_some() {
                            gr.assign(id(k, 0), &c, step, Some(3));
                        }
                    }
                }
            }
            96..=97 => {
                let k = rng.gen_range(0..next + 1);
                for x in [&mut model, &mut s] {
                    if let Some(gr) = x.group_mut(&g) {
                        gr.set_delivery(id(k, 0), step, 9);
                    }
                }
            }
            _ if step % 16 == 0 => {
                for x in [&mut model, &mut s] {
                    if let Some(gr) = x.group_mut(&g) {
                        gr.delete_consumer(&c);
                    }
                }
            }
            _ => {}
        }
        assert_eq!(s.check(), Ok(()), "step {step}");
        assert!(s.groups == model.groups, "step {step}");
        // Write the changed parts (the journal).
        let dirty = s.dirty_parts();
        let mut written = 0;
        for i in dirty {
            let p = s.part(i);
            assert_eq!(p.depth, PEL_DEPTH);
            let mut body = Vec::new();
            s.encode_part(i, &mut body);
            assert_eq!(
                measure_pel_part(&body).map(|(n, _)| n),
                Ok(p.count),
                "step {step}"
            );
            written += body.len();
            next_loc += 1;
            let loc = FlashLoc {
                segment: next_loc,
                offset: 0,
                len: body.len() as u32,
            };
            flash.insert(loc, body);
            newest.insert(p.low, (step, loc));
            assert!(s.published(i, p.ver, loc, step).is_some());
        }
        most_written = most_written.max(written);
        assert!(!s.any_dirty());
        s.take_dropped_refs();
        // Rebuild from the head's fields and the newest records.
        if step % 97 == 0 {
            let mut meta = Vec::new();
            s.head_meta(&mut meta);
            let mut r = Stream::from_infos(1, &[], &[], None, 0);
            r.set_meta(&meta, (0, 0)).expect("head fields");
            for (group, ordinal, num) in r.named_pel_parts() {
                let (seq, loc) = newest[&pel_record_low(ordinal, num)];
                r.install_pel_part(&group, num, &flash[&loc], loc, seq)
                    .expect("installs");
            }
            assert_eq!(r.finish_pel_parts(), 0, "step {step}");
            assert_eq!(r.check(), Ok(()), "step {step}");
            assert!(r.groups == s.groups, "step {step}: rebuilt");
            assert!(!r.any_dirty(), "step {step}: nothing to rewrite");
        }
    }
    let pending: usize = s.groups().map(|(_, g)| g.pel_len()).sum();
    eprintln!("{pending} pending; the largest write of one step: {most_written} bytes");
    assert!(pending > 1000, "{pending} pending");
    // One step changes at most two parts (a split, or a merge): each part
    // holds at most `PEL_PART_MAX` NACKs.
    assert!(most_written < 3 * 50 * pel::PEL_PART_MAX, "{most_written}");
}

#[test]
fn a_head_names_pel_parts_by_runs_and_reads_the_old_numbers() {
    use super::pel::PelParts;
    let mut p = PelParts::new(3);
    p.next = 12;
    for num in [6, 0, 1, 2, 9, 5] {
        p.parts.push(super::pel::PelPart {
            lo: StreamId::MIN,
            num,
            count: 1,
            dirty: false,
            ver: 0,
            loc: None,
            seq: 0,
        });
    }
    let mut out = Vec::new();
    p.encode_named(&mut out);
    // ordinal, next, 3 runs (0..3, 5..7, 9) of 12 bytes each.
    assert_eq!(out.len(), 4 + 8 + 4 + 3 * 12);
    let got = PelParts::decode_named(&mut Reader { b: &out }, true).unwrap();
    assert_eq!((got.ordinal, got.next), (3, 12));
    assert_eq!(got.named, vec![0, 1, 2, 5, 6, 9]);
    // Versions 15 to 19: one number after another.
    let mut old = Vec::new();
    old.extend_from_slice(&3u32.to_le_bytes());
    old.extend_from_slice(&12u64.to_le_bytes());
    old.extend_from_slice(&2u32.to_le_bytes());
    old.extend_from_slice(&7u64.to_le_bytes());
    old.extend_from_slice(&4u64.to_le_bytes());
    let got = PelParts::decode_named(&mut Reader { b: &old }, false).unwrap();
    assert_eq!(got.named, vec![7, 4]);
    // Malformed: a run past `next`, overlapping runs, an empty run, a
    // number named twice.
    let runs = |rs: &[(u64, u32)]| {
        let mut b = Vec::new();
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&10u64.to_le_bytes());
        b.extend_from_slice(&(rs.len() as u32).to_le_bytes());
        for (f, l) in rs {
            b.extend_from_slice(&f.to_le_bytes());
            b.extend_from_slice(&l.to_le_bytes());
        }
        b
    };
    for bad in [
        vec![(8, 3)],
        vec![(0, 3), (2, 1)],
        vec![(1, 0)],
        vec![(u64::MAX, 2)],
    ] {
        let b = runs(&bad);
        assert!(
            PelParts::decode_named(&mut Reader { b: &b }, true).is_err(),
            "{bad:?}"
        );
    }
    let n = old.len();
    old[n - 8..].copy_from_slice(&7u64.to_le_bytes());
    assert!(PelParts::decode_named(&mut Reader { b: &old }, false).is_err());
}

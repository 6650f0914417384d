use super::*;
use crate::types::chunked::CHUNK_MAX;
use crate::types::parts::elem_hash;
use crate::types::ZSet;
use std::collections::HashMap;

fn loc(n: u32) -> FlashLoc {
    FlashLoc {
        segment: 2,
        offset: n,
        len: 10,
    }
}

/// Records "on flash": loc offset -> (name, body).
type Flash = HashMap<u32, ((u64, u8), Vec<u8>)>;

fn load(c: &mut ChunkedZSet, flash: &Flash, i: usize) {
    let p = Dir::part(c, i);
    if let (false, Some(l)) = (p.resident, p.loc) {
        let (name, body) = &flash[&l.offset];
        assert!(Dir::install(c, i, l, body, *name).unwrap());
    }
}

fn load_all(c: &mut ChunkedZSet, flash: &Flash) {
    for i in 0..Dir::part_count(c) {
        load(c, flash, i);
    }
}

/// The parts a write of `m` (to score `to`) touches: its member part and
/// the order parts of its old and new zkeys, loaded in two steps as the
/// engine plans them.
fn load_for(c: &mut ChunkedZSet, flash: &Flash, m: &[u8], to: Option<f64>) {
    let i = Dir::part_of(c, elem_hash(m));
    load(c, flash, i);
    let mp = c.members.part_count();
    if let Some(s) = c.score(m) {
        let j = c.order.part_for(&zkey(s, m));
        load(c, flash, mp + j);
    }
    if let Some(s) = to {
        let j = c.order.part_for(&zkey(s, m));
        load(c, flash, mp + j);
    }
}

/// A chunked sorted set against the tree form: random adds, score changes,
/// removals and pops, with parts written, dropped from RAM and read back
/// (by their record bodies) between steps; ranks and score ranges checked
/// on the parts they need.
#[test]
fn chunked_zset_matches_the_tree_through_writes_and_evictions() {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n.max(1)
    };
    let mut model = ZSet::default();
    for i in 0..3000u32 {
        model.insert(format!("m{i}").as_bytes(), (i % 97) as f64);
    }
    let mut c = ChunkedZSet::build(5, model.iter());
    c.check().unwrap();
    assert!(c.order.part_count() > 5);
    let mut flash = Flash::new();
    let mut n = 0u32;
    for step in 0..4000u32 {
        let m = format!("m{}", next(4000)).into_bytes();
        let score = match next(20) {
            0 => -0.0,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            _ => next(200) as f64 - 50.0,
        };
        match next(8) {
            0..=3 => {
                load_for(&mut c, &flash, &m, Some(score));
                let want = model.insert(&m, score);
                assert_eq!(
                    c.insert(&m, score).map(f64::to_bits),
                    want.map(f64::to_bits)
                );
            }
            4 | 5 => {
                load_for(&mut c, &flash, &m, None);
                assert_eq!(c.remove(&m), model.remove(&m));
            }
            6 if !model.is_empty() => {
                // A pop: the first or last member, by rank.
                let r = if next(2) == 0 { 0 } else { model.len() - 1 };
                let pi = Dir::part_at(&c, r).unwrap();
                load(&mut c, &flash, pi);
                let (pm, ps) = c.get_rank(r).map(|(m, s)| (m.to_vec(), s)).unwrap();
                let (mm, ms) = model.get_rank(r).unwrap();
                assert_eq!((&pm[..], ps.to_bits()), (mm, ms.to_bits()));
                load_for(&mut c, &flash, &pm, None);
                assert!(c.remove(&pm));
                model.remove(&pm);
            }
            _ => {}
        }
        c.take_dropped_refs();
        c.take_new_refs();
        c.check().unwrap_or_else(|e| panic!("step {step}: {e}"));
        assert_eq!(c.len(), model.len());
        // Write every dirty part, then drop some from RAM.
        for i in 0..Dir::part_count(&c) {
            let p = Dir::part(&c, i);
            if p.dirty && p.resident {
                let mut body = Vec::new();
                Dir::encode_part(&c, i, &mut body);
                n += 1;
                flash.insert(n, ((p.low, p.depth), body));
                Dir::published(&mut c, i, p.ver, loc(n), step as u64).unwrap();
            }
        }
        for i in 0..Dir::part_count(&c) {
            if next(3) == 0 {
                Dir::evict(&mut c, i);
            }
        }
        c.check().unwrap();
        // Point reads load one part; a rank reads the member part, then
        // one order part.
        let probe = format!("m{}", next(4000)).into_bytes();
        let pi = Dir::part_of(&c, elem_hash(&probe));
        load(&mut c, &flash, pi);
        assert_eq!(
            c.score(&probe).map(f64::to_bits),
            model.score(&probe).map(f64::to_bits)
        );
        if let Some(s) = c.score(&probe) {
            let j = c.order.part_for(&zkey(s, &probe)) + c.members.part_count();
            load(&mut c, &flash, j);
            assert_eq!(c.rank(&probe), model.rank(&probe));
        }
        if step % 50 == 0 {
            load_all(&mut c, &flash);
            let lo = next(200) as f64 - 60.0;
            let (min, max) = (
                std::ops::Bound::Excluded(lo),
                std::ops::Bound::Included(lo + next(30) as f64),
            );
            let (a, b) = c.score_ranks(min, max);
            let got: Vec<(Vec<u8>, u64)> = c
                .range(a, b)
                .map(|(m, s)| (m.to_vec(), s.to_bits()))
                .collect();
            let want: Vec<(Vec<u8>, u64)> = model
                .range_by_score(min, max)
                .map(|(m, s)| (m.to_vec(), s.to_bits()))
                .collect();
            assert_eq!(got, want);
            assert!(c
                .iter()
                .rev()
                .map(|(m, s)| (m.to_vec(), s.to_bits()))
                .eq(model.iter().rev().map(|(m, s)| (m.to_vec(), s.to_bits()))));
        }
    }
    assert!(c.order.parts.iter().all(|p| p.body() as usize <= CHUNK_MAX));
    // Rebuilt from its records (as recovery does from a checkpoint), it
    // holds the same members.
    let members: Vec<PartInfo> = (0..c.members.part_count())
        .map(|i| Dir::part(&c.members, i))
        .collect();
    let order: Vec<OrderInfo> = c
        .order
        .parts
        .iter()
        .map(|p| OrderInfo {
            id: p.id(),
            first: p.first.clone(),
            count: p.count(),
            body: p.body(),
            loc: p.loc(),
            seq: p.seq(),
        })
        .collect();
    let mut r = ChunkedZSet::from_infos(5, &members, &order, None, 0);
    r.check().unwrap();
    load_all(&mut r, &flash);
    r.check().unwrap();
    assert!(r
        .iter()
        .map(|(m, s)| (m.to_vec(), s.to_bits()))
        .eq(model.iter().map(|(m, s)| (m.to_vec(), s.to_bits()))));
}

#[test]
fn order_records_decode_and_refuse_bad_bytes() {
    let z = ChunkedZSet::build(
        1,
        (0..2000u32)
            .map(|i| (&b"member-name"[..], i as f64))
            .take(1),
    );
    let mut body = Vec::new();
    Dir::encode_part(&z, z.members.part_count(), &mut body);
    let r = decode_order(&body).unwrap();
    assert_eq!((r.lo, r.hi, r.keys.len()), (&b""[..], None, 1));
    for cut in 0..body.len() {
        assert!(decode_order(&body[..cut]).is_err());
    }
    // A NaN score is refused.
    let mut bad = body.clone();
    let at = bad.len() - 11 - 8;
    bad[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    assert!(decode_order(&bad).is_err());
}

/// An order part's directory entry (docs/collections.md: ~72 B, beside
/// its lower bound on the heap).
const _: () = assert!(std::mem::size_of::<order::OPart>() <= 72);
